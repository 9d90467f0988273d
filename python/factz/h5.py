"""factz's HDF5 filter (id 459) for h5py, in the style of hdf5plugin.

factz is lossy compression with a guarantee beyond the error bound: every
value comes back within the bound, and

* a 2D vector field keeps every critical point (same cell, same type);
* particle positions keep every friends-of-friends link at linking length b
  (so every FoF halo keeps its members).

Writing::

    import h5py, factz
    with h5py.File("out.h5", "w") as f:
        f.create_dataset("uv", data=uv, chunks=(2, 256, 256),
                         compression=factz.Field2D(rel=1e-3, mode="S"))
        f.create_dataset("pos", data=pos, chunks=(65536, 3),
                         **factz.Particles(b=0.2, rel=1e-4, box=100.0))

Reading needs no parameters: every chunk is a self-describing factz stream;
``f["uv"][...]`` only needs the plugin to be found. Importing factz (or the
older name factz_h5) does that: it puts :data:`PLUGIN_PATH` (the plugin the
package ships) on h5py's plugin search path, so no ``HDF5_PLUGIN_PATH`` is
needed. C tools (h5dump, h5repack) find it with
``HDF5_PLUGIN_PATH=$(python -c 'import factz; print(factz.PLUGIN_PATH)')``.

What the dataset must look like:

* vector field: float32 (little-endian), shape (2, ny, nx) chunked
  (2, cy, cx), or (ny, nx, 2) chunked (cy, cx, 2): a chunk keeps the
  component axis whole;
* particles: float32, shape (n, 3) chunked (cn, 3). Each chunk is compressed
  alone, with the particles near its bounding box's faces stored exactly, so
  links across chunks hold only when chunks are spatially disjoint: sort (or
  domain-decompose) the particles by space before writing.

A relative bound (``rel=``) is relative to the value range of each chunk, not
of the whole dataset; give ``abs=`` for one bound everywhere.

Caveats:

* h5py adds every filter as *optional* (H5Z_FLAG_OPTIONAL): if compressing a
  chunk fails (e.g. ``base="sz3"`` with a libfactz built without SZ3), HDF5
  stores that chunk uncompressed, with no error. Nothing is lost, but check
  ``dset.id.get_chunk_info(i).filter_mask`` (non-zero: stored raw) if it
  matters.
* Reading a dataset back in the session that wrote it may return the data
  as written, not as decoded: HDF5's chunk cache (8 MiB by default in HDF5
  2.0) still holds the chunks. Reopen the file to see the decoded values.
* One process holds one filter per id. factz's id (459, from HDF5's range
  for unregistered filters) is not used by PyTables or hdf5plugin (they use
  305 and 307 there); should another filter hold it, the helper classes raise
  RuntimeError rather than let it compress the dataset.
"""

import math
import os
import struct
import warnings

import h5py

from ._plugin import BUNDLED_PLUGIN_DIR, FILTER_ID, PLUGIN_PATH  # noqa: F401

__all__ = [
    "FILTER_ID",
    "PLUGIN_PATH",
    "Field2D",
    "Particles",
    "register",
    "is_available",
]

# cd_values layout, version 1 (h5filter/factz_h5_cd.h, h5filter/factz_h5.h).
CD_VERSION = 1
USER_NELMTS = 15
_KIND_FIELD2D, _KIND_PARTICLES = 1, 2
_BOUND_ABS, _BOUND_REL = 1, 2
_CODERS = {"huffman": 1, "rans": 2}
_FIELD_MODES = {"b": 1, "s": 2}
_BASES = {"builtin": 1, "sz3": 2, "zfp": 3}
_LINK_LENGTH, _LINK_ETA = 1, 2
_CHUNK_RULE_ON, _CHUNK_RULE_OFF = 1, 2
_FLAG_VERIFY = 1


def register(force=False):
    """Makes h5py's HDF5 find the factz filter: adds :data:`PLUGIN_PATH` to
    its plugin search path (once) and loads the plugin.

    Called on import (``force=False``). If another filter already holds
    :data:`FILTER_ID` in this process, this warns; ``force=True``
    unregisters that filter and loads factz in its place (the other filter
    is then unusable in this process). Does nothing when no
    plugin directory was found. Returns :func:`is_available`.
    """
    if PLUGIN_PATH and os.path.isdir(PLUGIN_PATH):
        want = os.fsencode(PLUGIN_PATH)
        known = [h5py.h5pl.get(i) for i in range(h5py.h5pl.size())]
        if want not in known:
            # First, so that the plugin of this package serves it even when
            # HDF5_PLUGIN_PATH names another (older) libH5Zfactz.so.
            h5py.h5pl.prepend(want)
    other = _other_filter()
    if other is not None and force:
        h5py.h5z.unregister_filter(FILTER_ID)
        other = _other_filter()
    if other is not None:
        warnings.warn(_collision_message(other), RuntimeWarning, stacklevel=2)
    return is_available()


def _registered_name():
    """The name of the filter HDF5 holds under FILTER_ID (loading plugins if
    needed), or None when there is none."""
    try:
        if not h5py.h5z.filter_avail(FILTER_ID):
            return None
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1,))
        dcpl.set_filter(FILTER_ID, h5py.h5z.FLAG_OPTIONAL, ())
        name = dcpl.get_filter(0)[3]
    except Exception:  # an HDF5 that cannot search plugins at all
        return None
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)


def _other_filter():
    """The name of a filter other than factz holding FILTER_ID, else None."""
    name = _registered_name()
    return name if name is not None and not name.startswith("factz") else None


def _collision_message(other):
    return (f"HDF5 filter id {FILTER_ID} is held by {other!r}, not factz, in this process: "
            f"datasets created with factz would be compressed by {other!r}, and factz "
            f"datasets cannot be read. Import factz before the package that registers "
            f"{other!r}, or call factz.register(force=True) (which drops {other!r} from "
            f"this process)")


def is_available():
    """Whether h5py's HDF5 has the factz filter under FILTER_ID (loads the
    plugin if needed); False when the id is missing or held by another filter."""
    name = _registered_name()
    return name is not None and name.startswith("factz")


# ---- argument checks ------------------------------------------------------


def _double_words(x):
    """A double as two uint32 words: low 32 bits of the IEEE-754 bits first."""
    lo, hi = struct.unpack("<II", struct.pack("<d", float(x)))
    return lo, hi


def _positive(name, x):
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {x!r}") from None
    if not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name} must be finite and > 0, not {x!r}")
    return x


def _bound(abs, rel):
    if abs is not None and rel is not None:
        raise ValueError("give one error bound: abs= or rel=, not both")
    if abs is not None:
        return _BOUND_ABS, _positive("abs (absolute error bound)", abs)
    if rel is None:
        rel = 1e-3
    return _BOUND_REL, _positive("rel (error bound relative to each chunk's value range)", rel)


def _choice(name, value, table):
    key = value.lower() if isinstance(value, str) else value
    if key not in table:
        raise ValueError(f"{name} must be one of {', '.join(repr(k) for k in table)}, not {value!r}")
    return table[key]


def _zstd(level):
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 22:
        raise ValueError(f"zstd must be an integer level 0 (off) to 22, not {level!r}")
    return level


def _cd_words(kind, sub, bound, coder, zstd, verify):
    """cd_values words 0-8, the part both kinds share (version, kind, mode or
    base, bound kind and value, coder, zstd level, flags); words 9-14 are
    the caller's to fill."""
    bound_kind, value = bound
    cd = [0] * USER_NELMTS
    cd[0], cd[1], cd[2], cd[3] = CD_VERSION, kind, sub, bound_kind
    cd[4], cd[5] = _double_words(value)
    cd[6], cd[7] = coder, zstd
    cd[8] = _FLAG_VERIFY if verify else 0
    return cd


class _FactzFilter(h5py.filters.FilterRefBase):
    filter_id = FILTER_ID

    @staticmethod
    def _check_id():
        # Another filter under our id would silently compress with it.
        other = _other_filter()
        if other is not None:
            raise RuntimeError(_collision_message(other))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"{type(self).__name__}({args})"


class Field2D(_FactzFilter):
    """factz filter for a 2D vector field: float32 (2, ny, nx) chunked
    (2, cy, cx), or (ny, nx, 2) chunked (cy, cx, 2).

    Every value comes back within the bound and every critical point keeps
    its cell and type, across chunk borders too (chunk borders are stored
    exactly). The filter sets the dataset's fill value to NaN unless it has
    one, so the padding of partial edge chunks never widens a chunk's value
    range (unwritten parts then read as NaN). Reading needs no parameters.

    :param abs: absolute error bound (finite, > 0).
    :param rel: error bound relative to the value range of each chunk (both
        components); the default when neither is given is ``rel=1e-3``.
    :param mode: ``"S"`` speculative (best ratio, default) or ``"B"``
        block-wise (faster); case-insensitive.
    :param coder: ``"rans"`` (default) or ``"huffman"``.
    :param zstd: zstd level on top of the entropy coder, 0 (off) to 22.
    :param verify: decode and re-check every chunk after compressing it
        (a chunk failing the check is stored losslessly).
    """

    def __init__(self, abs=None, rel=None, mode="S", coder="rans", zstd=0, verify=False):
        self._check_id()
        bound_kind, bound = _bound(abs, rel)
        m = _choice("mode", mode, _FIELD_MODES)
        c = _choice("coder", coder, _CODERS)
        z = _zstd(zstd)
        cd = _cd_words(_KIND_FIELD2D, m, (bound_kind, bound), c, z, verify)
        cd[14] = _CHUNK_RULE_ON
        self.filter_options = tuple(cd)
        self.config = {
            ("abs" if bound_kind == _BOUND_ABS else "rel"): bound,
            "mode": "B" if m == 1 else "S",
            "coder": coder.lower(),
            "zstd": z,
            "verify": bool(verify),
        }


class Particles(_FactzFilter):
    """factz filter for particle positions: float32 (n, 3) chunked (cn, 3).

    Every coordinate comes back within the bound and every friends-of-friends
    link at linking length ``b`` keeps its status (linked or not). Each chunk
    is compressed alone with the particles near its bounding box's faces
    stored exactly, so links between chunks hold only when the chunks are
    spatially disjoint: sort the particles by space (e.g. by x, or by a
    domain decomposition) before writing. A partial last chunk is padded with
    NaN (the filter sets that fill value unless the dataset has one).
    Reading needs no parameters.

    :param b: the linking length (same units as the positions), needed so
        that every chunk keeps the links of the same b.
    :param abs: absolute error bound per coordinate (finite, > 0).
    :param rel: error bound relative to each chunk's coordinate range (all
        three axes); default ``rel=1e-3`` when neither is given.
    :param box: side of the periodic box (minimum-image distances); 0 (the
        default) for open boundaries.
    :param base: base compressor ``"builtin"`` (default), ``"sz3"`` or
        ``"zfp"`` (the last two only if libfactz was built with them).
    :param coder: ``"rans"`` (default) or ``"huffman"``.
    :param zstd: zstd level on top of the entropy coder, 0 (off) to 22.
    :param verify: decode and re-check every chunk after compressing it.
    :param single_chunk: turn the chunk rule off (cd word 14 = 2): better
        ratio, but only right for a dataset stored as one chunk (cn = n);
        then ``eta=`` (linking length as a fraction of the mean separation,
        default 0.2) may replace ``b``.
    :param eta: see ``single_chunk``.
    """

    def __init__(self, b=None, abs=None, rel=None, box=0.0, base="builtin", coder="rans",
                 zstd=0, verify=False, *, single_chunk=False, eta=None):
        self._check_id()
        bound_kind, bound = _bound(abs, rel)
        if b is not None and eta is not None:
            raise ValueError("give the linking length b= or eta=, not both")
        if eta is not None and not single_chunk:
            raise ValueError(
                "eta= needs single_chunk=True: each chunk is compressed alone and eta would "
                "give each chunk its own linking length; give b= (e.g. 0.2 x mean separation)")
        if b is None and eta is None:
            if not single_chunk:
                raise ValueError(
                    "Particles needs the linking length b= (e.g. 0.2 x mean interparticle "
                    "separation), so that every chunk keeps the links of the same b")
            eta = 0.2
        if b is not None:
            link_kind, link = _LINK_LENGTH, _positive("b (linking length)", b)
        else:
            link_kind, link = _LINK_ETA, _positive("eta", eta)
        try:
            box = float(box)
        except (TypeError, ValueError):
            raise ValueError(f"box must be a number, not {box!r}") from None
        if not (math.isfinite(box) and box >= 0.0):
            raise ValueError(f"box must be the periodic box side (> 0) or 0 for open "
                             f"boundaries, not {box!r}")
        if box > 0.0 and link_kind == _LINK_LENGTH and link > box / 2.0:
            raise ValueError(f"b = {link} exceeds half the periodic box ({box})")
        bs = _choice("base", base, _BASES)
        c = _choice("coder", coder, _CODERS)
        z = _zstd(zstd)
        cd = _cd_words(_KIND_PARTICLES, bs, (bound_kind, bound), c, z, verify)
        cd[9] = link_kind
        cd[10], cd[11] = _double_words(link)
        cd[12], cd[13] = _double_words(box)
        cd[14] = _CHUNK_RULE_OFF if single_chunk else _CHUNK_RULE_ON
        self.filter_options = tuple(cd)
        self.config = {
            ("b" if link_kind == _LINK_LENGTH else "eta"): link,
            ("abs" if bound_kind == _BOUND_ABS else "rel"): bound,
            "box": box,
            "base": base.lower(),
            "coder": coder.lower(),
            "zstd": z,
            "verify": bool(verify),
            "single_chunk": bool(single_chunk),
        }


register()
