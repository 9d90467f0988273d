"""Where the HDF5 filter plugin is (no h5py needed to ask)."""

import os
import sys

#: HDF5 filter id, from the range HDF5 sets aside for unregistered filters
#: (256..511); h5filter/factz_h5_cd.h is the source of truth.
FILTER_ID = 459

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The plugin directory inside the installed package (pip install puts
#: libH5Zfactz.so there, alone: HDF5 tries every file of a plugin directory).
BUNDLED_PLUGIN_DIR = os.path.join(_HERE, "plugin")


def _find_plugin_dir():
    env = os.environ.get("FACTZ_H5_PLUGIN_DIR")
    if env:
        return env
    for d in (
        BUNDLED_PLUGIN_DIR,
        os.path.join(sys.prefix, "lib", "hdf5", "plugin"),
        os.path.normpath(os.path.join(_HERE, "..", "..", "target", "prefix", "lib", "hdf5",
                                      "plugin")),
    ):
        if os.path.isfile(os.path.join(d, "libH5Zfactz.so")):
            return d
    return None


#: The directory holding libH5Zfactz.so: $FACTZ_H5_PLUGIN_DIR if set, else
#: the first of these that holds the plugin: the package's own (pip install),
#: <sys.prefix>/lib/hdf5/plugin and the repository's target/prefix/lib/hdf5/plugin
#: (scripts/cmake-install's default prefix; for a source checkout on
#: sys.path); None when none does. Give it to C tools as HDF5_PLUGIN_PATH.
PLUGIN_PATH = _find_plugin_dir()
