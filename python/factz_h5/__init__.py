"""The earlier name of factz's h5py helpers, kept so that existing code runs.

``import factz_h5`` imports factz (which registers the HDF5 filter) and gives
the module :mod:`factz.h5` itself under this name: ``factz_h5.Field2D``,
``factz_h5.Particles``, ``FILTER_ID``, ``PLUGIN_PATH``, ``register``,
``is_available`` and the rest are the very objects of factz.h5. New code can
import factz and use ``factz.Field2D`` etc.
"""

import sys

from factz import h5 as _h5

sys.modules[__name__] = _h5
