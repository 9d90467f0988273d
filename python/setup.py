"""Builds the factz Python package with its native parts inside.

``pip install ./python`` (from the factz repository) and ``scripts/wheel``
run this. Beside the Python modules, the package gets

* ``factz/libfactz.so``: ``cargo build --release --lib`` of the repository's
  Cargo.toml (the numpy API loads it with ctypes);
* ``factz/plugin/libH5Zfactz.so``: the HDF5 filter plugin, compiled with
  ``cc`` from h5filter/plugin.c and h5filter/filter.c against the static
  libfactz.a with the flags CMakeLists.txt uses (static libfactz inside, only
  the two H5PL entry points exported, no libhdf5 linked: it binds the HDF5
  that loads it at run time).

Environment: CARGO (default: cargo on PATH), CARGO_TARGET_DIR (default: the
repository's target/, so builds are shared with cargo and scripts/cmake-install),
FACTZ_CARGO_FEATURES (e.g. "zfp"), CC (default cc).
"""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class BuildError(Exception):
    pass


def _run(cmd, cwd, what):
    print(f"factz setup: {what}: {' '.join(shlex.quote(c) for c in cmd)}", file=sys.stderr,
          flush=True)
    try:
        subprocess.run(cmd, cwd=cwd, check=True)
    except FileNotFoundError:
        raise BuildError(f"{what}: {cmd[0]} not found") from None
    except subprocess.CalledProcessError as e:
        raise BuildError(f"{what} failed (exit status {e.returncode}); see the output above") \
            from None


def _tool(env, default, purpose, install_hint):
    name = os.environ.get(env) or default
    argv = shlex.split(name)
    if not argv or shutil.which(argv[0]) is None:
        raise BuildError(f"{purpose} needs {argv[0] if argv else default!r} (set {env} or "
                         f"install it: {install_hint})")
    return argv


def build_native(dest):
    """Builds libfactz.so and libH5Zfactz.so and copies them under `dest`
    (the package directory in the build tree)."""
    manifest = os.path.join(ROOT, "Cargo.toml")
    if not os.path.isfile(manifest) or not os.path.isfile(os.path.join(ROOT, "h5filter",
                                                                       "plugin.c")):
        raise BuildError(f"the factz package builds libfactz from the factz repository around "
                         f"python/, but {manifest} (or h5filter/) is missing: install with "
                         f"`pip install ./python` from a checkout of the repository")
    cargo = _tool("CARGO", "cargo", "building libfactz", "https://rustup.rs")
    cc = _tool("CC", "cc", "building the HDF5 filter plugin",
               "apt-get install build-essential")
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    target = os.path.abspath(target)
    cmd = cargo + ["build", "--release", "--lib", "--manifest-path", manifest,
                   "--target-dir", target]
    features = os.environ.get("FACTZ_CARGO_FEATURES", "").strip()
    if features:
        cmd += ["--features", features]
    _run(cmd, ROOT, "building libfactz with cargo")
    libdir = os.path.join(target, "release")
    shared = os.path.join(libdir, "libfactz.so")
    static = os.path.join(libdir, "libfactz.a")
    for f in (shared, static):
        if not os.path.isfile(f):
            raise BuildError(f"cargo finished but {f} is missing")

    os.makedirs(os.path.join(dest, "plugin"), exist_ok=True)
    plugin = os.path.join(dest, "plugin", "libH5Zfactz.so")
    h5 = os.path.join(ROOT, "h5filter")
    # CMakeLists.txt's factz_plugin(): hidden visibility, only plugin.map's
    # symbols exported, nothing undefined, unused sections dropped, never
    # unloaded (libfactz's worker threads outlive a call); -S leaves the
    # debug info of libfactz.a out.
    _run(cc + ["-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra",
               "-I", os.path.join(ROOT, "include"), "-I", h5,
               os.path.join(h5, "plugin.c"), os.path.join(h5, "filter.c"), static,
               f"-Wl,--version-script={os.path.join(h5, 'plugin.map')}",
               "-Wl,--no-undefined", "-Wl,--gc-sections", "-Wl,-z,nodelete", "-Wl,-S",
               "-lpthread", "-ldl", "-lm", "-o", plugin],
         ROOT, "building the HDF5 filter plugin")

    lib = os.path.join(dest, "libfactz.so")
    if os.path.exists(lib):
        os.remove(lib)
    strip = shutil.which("strip")
    if strip:  # the release profile keeps debug info (tens of MB); the package need not
        _run([strip, "--strip-debug", "-o", lib, shared], ROOT, "copying libfactz.so")
    else:
        shutil.copy2(shared, lib)


class BuildPyWithNative(build_py):
    def run(self):
        super().run()
        try:
            build_native(os.path.join(os.path.abspath(self.build_lib), "factz"))
        except BuildError as e:
            sys.exit(f"error: factz: {e}")


class NativeDistribution(Distribution):
    """The package holds native libraries: build and install it as platform
    specific (platlib, a platform-tagged wheel)."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """The libraries are loaded with ctypes, not imported as extension
    modules, so any Python 3 of this platform can use the wheel: tag it
    py3-none-<platform>."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=NativeDistribution,
      cmdclass={"build_py": BuildPyWithNative, "bdist_wheel": PlatformWheel})
