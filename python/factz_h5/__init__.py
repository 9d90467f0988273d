"""The earlier name of factz's h5py helpers, kept so that existing code runs.

``import factz_h5`` is ``import factz`` (which registers the HDF5 filter)
plus the names of :mod:`factz.h5`: ``factz_h5.Field2D``, ``factz_h5.Particles``,
``FILTER_ID``, ``PLUGIN_PATH``, ``register``, ``is_available``. New code can
import factz and use ``factz.Field2D`` etc.
"""

from factz.h5 import (  # noqa: F401
    CD_VERSION,
    FILTER_ID,
    PLUGIN_PATH,
    USER_NELMTS,
    Field2D,
    Particles,
    is_available,
    register,
)

__all__ = ["FILTER_ID", "PLUGIN_PATH", "Field2D", "Particles", "register", "is_available"]
