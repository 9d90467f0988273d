"""factz: error-bounded lossy compression that keeps features.

Every value comes back within the error bound, and

* a 2D vector field keeps every critical point (same cell, same type);
* particle positions keep every friends-of-friends link at linking length b
  (so every FoF halo keeps its members).

numpy API (float32 arrays, or float64: fields in either mode, particles
with the built-in or ZFP base, both on the CPU; the stream is the same bytes the C
library, the command-line tool and the HDF5/ADIOS2 plugins write and read)::

    import numpy as np, factz
    stream = factz.compress_field(u, v, rel=1e-3)          # bytes
    u2, v2 = factz.decompress(stream)
    pstream = factz.compress_particles(xyz, b=0.2, abs=1e-3, box=100.0)
    xyz2 = factz.decompress(pstream)                        # (n, 3), xyz's dtype
    factz.critical_points(u, v)                             # structured array
    labels = factz.fof(xyz, b=0.2, box=100.0)
    factz.verify((u, v), stream)                            # dict of metrics

h5py: importing factz registers the HDF5 filter the package ships, so
``create_dataset(..., compression=factz.Field2D(rel=1e-3))`` /
``factz.Particles(b=...)`` write factz datasets and any factz dataset reads
with nothing set (see :mod:`factz.h5`; ``factz.PLUGIN_PATH`` is the plugin
directory for C tools' HDF5_PLUGIN_PATH).
"""

import math

import numpy as np

from . import _capi
from ._capi import CP_TYPES

__version__ = "0.1.0"

__all__ = [
    "Error",
    "compress_field",
    "compress_particles",
    "decompress",
    "info",
    "critical_points",
    "fof",
    "halos",
    "linking_length",
    "verify",
    "library_version",
    "CP_TYPES",
    "FILTER_ID",
    "PLUGIN_PATH",
]

try:
    from .h5 import (FILTER_ID, PLUGIN_PATH, Field2D, Particles,  # noqa: F401
                     is_available, register)
    __all__ += ["Field2D", "Particles", "register", "is_available"]
except ModuleNotFoundError as _e:  # the numpy API works without h5py (a dependency, though)
    if _e.name != "h5py":
        raise
    from ._plugin import FILTER_ID, PLUGIN_PATH  # noqa: F401


class Error(Exception):
    """A failure reported by libfactz: ``status`` is the factz_status code
    (4001..4007), ``status_name`` its description, the message is
    factz_last_error's."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = _capi.lib().factz_status_string(status).decode("utf-8", "replace")
        super().__init__(f"{message} ({self.status_name}, status {status})" if message
                         else f"{self.status_name} (status {status})")


def _check(status, also_ok=()):
    if status != _capi.OK and status not in also_ok:
        msg = _capi.lib().factz_last_error().decode("utf-8", "replace")
        raise Error(status, msg)


def library_version():
    """libfactz's version string, e.g. ``"0.1.0"``."""
    return _capi.lib().factz_version_string().decode()


# ---- argument checks ------------------------------------------------------------


def _f32(name, a):
    """A C-contiguous native float32 array of `a`; TypeError for other dtypes
    (no silent conversion)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy float32 array, not {type(a).__name__}")
    if a.dtype.kind != "f" or a.dtype.itemsize != 4:
        raise TypeError(f"{name} must be a float32 array, not {a.dtype}; convert it explicitly "
                        f"(e.g. {name}.astype(np.float32)) if that loss of precision is meant")
    return np.ascontiguousarray(a, dtype=np.dtype("=f4"))


def _stream(stream):
    """A uint8 view of a bytes-like stream."""
    if isinstance(stream, str):
        raise TypeError("a factz stream is bytes, not str")
    try:
        a = np.frombuffer(stream, dtype=np.uint8)
    except (TypeError, ValueError, BufferError) as e:
        raise TypeError(f"a factz stream must be bytes-like (bytes, bytearray, memoryview, "
                        f"uint8 array), not {type(stream).__name__}: {e}") from None
    return a


def _positive(name, x, allow_zero=False):
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, not {x!r}") from None
    if not math.isfinite(x) or x < 0.0 or (x == 0.0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, not {x!r}")
    return x


def _choice(name, value, table):
    key = value.lower() if isinstance(value, str) else value
    if key not in table:
        raise ValueError(f"{name} must be one of {', '.join(repr(k) for k in table)}, "
                         f"not {value!r}")
    return table[key]


def _zstd(level):
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) \
            or not 0 <= level <= 22:
        raise ValueError(f"zstd must be an integer level 0 (off) to 22, not {level!r}")
    return int(level)


def _bound(abs, rel, allow_zero=False):
    if abs is not None and rel is not None:
        raise ValueError("give one error bound: abs= or rel=, not both")
    if abs is not None:
        return _capi.BOUND_ABS, _positive("abs", abs, allow_zero)
    return _capi.BOUND_REL, _positive("rel", 1e-3 if rel is None else rel, allow_zero)


def _box(box):
    if box is None:
        return 0.0
    return _positive("box (periodic box side; None or 0 for open boundaries)", box,
                     allow_zero=True)


_CODERS = {"huffman": _capi.CODER_HUFFMAN, "rans": _capi.CODER_RANS}
_MODES = {"b": _capi.MODE_BLOCKWISE, "s": _capi.MODE_SPECULATIVE}
_BASES = {"builtin": _capi.BASE_BUILTIN, "sz3": _capi.BASE_SZ3, "zfp": _capi.BASE_ZFP}
_BACKENDS = {"cpu": _capi.BACKEND_CPU, "cuda": _capi.BACKEND_CUDA, "auto": _capi.BACKEND_AUTO}
_NAMES = {
    "mode": {0: "lossless", 1: "b", 2: "s"},
    "coder": {1: "huffman", 2: "rans"},
    "layout": {0: "soa", 1: "aos"},
    "source": {0: "lossless", 1: "builtin", 2: "sz3", 3: "zfp", 4: "external"},
    "method": {0: "correct", 1: "safe"},
}


def _field_arrays(u, v, f64=False):
    """u, v as C-contiguous native arrays of one float type: float32, or
    float64 where the caller takes it (`f64`)."""
    if f64 and all(isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.dtype.itemsize == 8
                   for a in (u, v)):
        u = np.ascontiguousarray(u, dtype=np.dtype("=f8"))
        v = np.ascontiguousarray(v, dtype=np.dtype("=f8"))
    else:
        u = _f32("u", u)
        v = _f32("v", v)
    if u.ndim != 2 or v.shape != u.shape:
        raise ValueError(f"u and v must be 2-D arrays of one shape (ny, nx), not {u.shape} "
                         f"and {v.shape}")
    return u, v


def _particle_array(xyz, name="xyz"):
    """xyz as a C-contiguous native (n, 3) array of float32 or float64; a
    TypeError for other dtypes (no silent conversion)."""
    if not isinstance(xyz, np.ndarray):
        raise TypeError(f"{name} must be a numpy float32 or float64 array, not "
                        f"{type(xyz).__name__}")
    if xyz.dtype.kind != "f" or xyz.dtype.itemsize not in (4, 8):
        raise TypeError(f"{name} must be a float32 or float64 array, not {xyz.dtype}; convert "
                        f"it explicitly (e.g. {name}.astype(np.float64)) if that is meant")
    xyz = np.ascontiguousarray(xyz, dtype=np.dtype("=f8" if xyz.dtype.itemsize == 8 else "=f4"))
    if xyz.ndim != 2 or xyz.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3) (x, y, z per particle), not "
                         f"{xyz.shape}")
    return xyz


# ---- vector fields ----------------------------------------------------------------


def compress_field(u, v, *, abs=None, rel=None, mode="s", coder="rans", zstd=0, chunk=False,
                   verify=False, backend="cpu", report=False):
    """Compresses a 2D vector field (two float32 arrays of shape (ny, nx),
    row-major, x fastest; or two float64 arrays, on the CPU)
    into a factz stream (bytes).

    Every finite value comes back within the bound (NaN and Inf bit-exact)
    and every critical point keeps its triangle and type.

    :param abs: absolute error bound (finite, > 0).
    :param rel: bound relative to the value range of both components
        (default 1e-3 when neither is given).
    :param mode: ``"s"`` speculative (default, best ratio) or ``"b"``
        block-wise (faster).
    :param coder: ``"rans"`` (default) or ``"huffman"``.
    :param zstd: zstd stage on top, 1..22; 0 off (default).
    :param chunk: the field is one chunk of a larger one (border kept exact).
    :param verify: decode and re-check before returning (fallback: lossless).
    :param backend: ``"cpu"`` (default), ``"cuda"`` or ``"auto"``.
    :param report: also return what the compression did, as ``(stream,
        report)``: ``abs_bound`` used, ``exact_vertices``, ``verified``,
        ``lossless_fallback``, ``ran_on_gpu``.
    """
    u, v = _field_arrays(u, v, f64=True)
    lib = _capi.lib()
    cfg = _capi.new(_capi.FieldConfig)
    _check(lib.factz_field_config_default(cfg))
    cfg.bound_kind, cfg.bound = _bound(abs, rel)
    cfg.mode = _choice("mode", mode, _MODES)
    cfg.coder = _choice("coder", coder, _CODERS)
    cfg.zstd_level = _zstd(zstd)
    cfg.flags = (_capi.CHUNK_OF_LARGER if chunk else 0) | (_capi.VERIFY if verify else 0)
    cfg.backend = _choice("backend", backend, _BACKENDS)
    ny, nx = u.shape
    f64 = u.dtype.itemsize == 8
    cap = _capi.c_size_t(0)
    size = lib.factz_field_max_compressed_size_f64 if f64 else lib.factz_field_max_compressed_size
    _check(size(ny, nx, cap))
    out = np.empty(cap.value, dtype=np.uint8)
    n = _capi.c_size_t(0)
    rep = _capi.new(_capi.FieldReport)
    outp = out.ctypes.data_as(_capi.POINTER(_capi.c_uint8))
    if f64:
        _check(lib.factz_field_compress_f64(cfg, _capi.dptr(u), _capi.dptr(v), ny, nx, outp,
                                            out.size, n, rep))
    else:
        _check(lib.factz_field_compress_ex(cfg, _capi.fptr(u), _capi.fptr(v), ny, nx, outp,
                                           out.size, n, rep))
    stream = out[:n.value].tobytes()
    if not report:
        return stream
    return stream, {"abs_bound": rep.abs_bound, "exact_vertices": int(rep.exact_vertices),
                    **_report_flags(rep.flags)}


def _report_flags(flags):
    return {"verified": bool(flags & _capi.VERIFY),
            "lossless_fallback": bool(flags & _capi.LOSSLESS_FALLBACK),
            "ran_on_gpu": bool(flags & _capi.RAN_ON_GPU)}


def _field_info(buf):
    lib = _capi.lib()
    inf = _capi.new(_capi.FieldStreamInfo)
    st = lib.factz_field_info(buf.ctypes.data, buf.size, inf)
    return st, inf


def _particles_info(buf):
    lib = _capi.lib()
    inf = _capi.new(_capi.ParticlesStreamInfo)
    st = lib.factz_particles_info(buf.ctypes.data, buf.size, inf)
    return st, inf


def _kind(buf):
    """("field2d", info) or ("particles", info); factz.Error when neither
    header reads."""
    lib = _capi.lib()
    pst, pinf = _particles_info(buf)
    if pst == _capi.OK:
        return "particles", pinf
    pmsg = lib.factz_last_error().decode("utf-8", "replace")
    fst, finf = _field_info(buf)
    if fst == _capi.OK:
        return "field2d", finf
    fmsg = lib.factz_last_error().decode("utf-8", "replace")
    # A reader refusing a stream of the other kind says INVALID_ARGUMENT: the
    # other reader's error is then the one that tells.
    if fst == _capi.INVALID_ARGUMENT and pst != _capi.INVALID_ARGUMENT:
        raise Error(pst, pmsg)
    raise Error(fst, fmsg)


def info(stream):
    """What a stream's header says (nothing is decoded), as a dict: ``kind``
    (``"field2d"`` or ``"particles"``), the shape / count, the absolute bound
    it was written with, mode / base, coder, zstd level, flags, and for
    particles the linking length and box; ``dtype`` (``"float32"`` or
    ``"float64"``) for both kinds."""
    buf = _stream(stream)
    kind, i = _kind(buf)
    flags = {
        "chunk": bool(i.flags & _capi.CHUNK_OF_LARGER),
        "verified": bool(i.flags & _capi.VERIFY),
        "lossless_fallback": bool(i.flags & _capi.LOSSLESS_FALLBACK),
    }
    d = {"kind": kind, "format_version": i.format_version, "bytes": buf.size,
         "layout": _NAMES["layout"].get(i.layout, i.layout),
         "coder": _NAMES["coder"].get(i.coder, i.coder), "zstd": i.zstd_level,
         "abs_bound": i.abs_bound, **flags}
    if kind == "field2d":
        d.update(shape=(int(i.ny), int(i.nx)), mode=_NAMES["mode"].get(i.mode, i.mode),
                 dtype="float64" if i.dtype == _capi.DTYPE_F64 else "float32")
    else:
        d.update(n=int(i.n), dtype="float64" if i.dtype == _capi.DTYPE_F64 else "float32",
                 linking_length=i.linking_length,
                 box=i.box_side if i.box_side > 0 else None,
                 source=_NAMES["source"].get(i.source, i.source), edit_bits=i.edit_bits,
                 method=(_NAMES["method"].get(i.method, i.method)
                         if i.source in (_capi.BASE_BUILTIN, _capi.BASE_SZ3, _capi.BASE_ZFP)
                         else None))
    return d


def decompress(stream):
    """Decodes a factz stream (bytes-like): a field stream gives ``(u, v)``,
    two float32 arrays (ny, nx); a particle stream gives an (n, 3) float32
    array; float64 arrays for a float64 stream (``info(stream)["dtype"]``).
    The header says which. Raises :class:`Error` for a stream that is
    truncated, corrupt or not factz's."""
    buf = _stream(stream)
    lib = _capi.lib()
    kind, i = _kind(buf)
    if kind == "field2d":
        ny, nx = int(i.ny), int(i.nx)
        if i.dtype == _capi.DTYPE_F64:
            u = np.empty((ny, nx), dtype=np.float64)
            v = np.empty((ny, nx), dtype=np.float64)
            _check(lib.factz_field_decompress_f64(buf.ctypes.data, buf.size, _capi.dptr(u),
                                                  _capi.dptr(v), ny, nx))
            return u, v
        u = np.empty((ny, nx), dtype=np.float32)
        v = np.empty((ny, nx), dtype=np.float32)
        _check(lib.factz_field_decompress(buf.ctypes.data, buf.size, _capi.fptr(u),
                                          _capi.fptr(v), ny, nx))
        return u, v
    n = int(i.n)
    if i.dtype == _capi.DTYPE_F64:
        xyz = np.empty((n, 3), dtype=np.float64)
        _check(lib.factz_particles_decompress_f64(buf.ctypes.data, buf.size, _capi.dptr(xyz), n))
        return xyz
    xyz = np.empty((n, 3), dtype=np.float32)
    _check(lib.factz_particles_decompress(buf.ctypes.data, buf.size, _capi.fptr(xyz), n))
    return xyz


# factz_critical_point as numpy sees it (checked against ctypes below)
_CP_C_DTYPE = np.dtype([("triangle", "<u8"), ("i", "<u8"), ("j", "<u8"), ("x", "<f8"),
                        ("y", "<f8"), ("kind", "<u4"), ("half", "<u4"), ("det_sign", "<i4"),
                        ("trace_sign", "<i4"), ("disc_sign", "<i4"), ("reserved", "<u4")])
if _CP_C_DTYPE.itemsize != _capi.ctypes.sizeof(_capi.CriticalPoint) or any(
        _CP_C_DTYPE.fields[n][1] != getattr(_capi.CriticalPoint, n).offset
        for n in _CP_C_DTYPE.names):
    raise ImportError("factz: the numpy and ctypes layouts of factz_critical_point differ")

_CP_DTYPE = np.dtype([("cell", np.uint64), ("i", np.uint64), ("j", np.uint64),
                      ("x", np.float64), ("y", np.float64), ("type", "U16")])


def critical_points(u, v):
    """Every critical point of the piecewise-linear field (u, v) (float32 or
    float64, shape (ny, nx); float64 decided exactly on the doubles), in cell
    order, with the exact existence and type test compression preserves, as
    a numpy structured array with fields ``cell`` (triangle id
    ``2 * (j * (nx - 1) + i) + half``), ``i`` (column) and ``j`` (row) of the
    cell's lower-left vertex, position ``x``, ``y`` in grid units and
    ``type`` (a name of :data:`CP_TYPES`)."""
    u, v = _field_arrays(u, v, f64=True)
    lib = _capi.lib()
    ny, nx = u.shape
    if u.dtype.itemsize == 8:
        fn, ptr = lib.factz_field_critical_points_f64, _capi.dptr
    else:
        fn, ptr = lib.factz_field_critical_points, _capi.fptr
    count = _capi.c_size_t(0)
    # asking for the count: FACTZ_BUFFER_TOO_SMALL when there are points
    _check(fn(ptr(u), ptr(v), ny, nx, count, None, 0), also_ok=(_capi.BUFFER_TOO_SMALL,))
    buf = (_capi.CriticalPoint * count.value)()
    got = _capi.c_size_t(0)
    if count.value:
        _check(fn(ptr(u), ptr(v), ny, nx, got, buf, count.value))
    raw = np.frombuffer(buf, dtype=_CP_C_DTYPE, count=count.value)
    out = np.empty(count.value, dtype=_CP_DTYPE)
    for name in ("cell", "i", "j", "x", "y"):
        out[name] = raw["triangle" if name == "cell" else name]
    names = np.array([CP_TYPES.get(k, str(k)) for k in range(7)])
    kind = raw["kind"].astype(np.intp)
    out["type"] = names[np.where((kind >= 1) & (kind <= 6), kind, 0)]
    return out


# ---- particles -----------------------------------------------------------------------


def _linking(b, eta):
    if b is not None and eta is not None:
        raise ValueError("give the linking length b= or eta=, not both")
    if b is not None:
        return _capi.LINK_LENGTH, _positive("b (linking length)", b)
    return _capi.LINK_ETA, _positive("eta", 0.2 if eta is None else eta)


def compress_particles(xyz, *, b=None, eta=None, abs=None, rel=None, box=None, base="builtin",
                       coder="rans", zstd=0, chunk=False, verify=False, edit_bits=16,
                       max_iters=1000, backend="cpu", report=False):
    """Compresses particle positions (float32 or float64, shape (n, 3), x,
    y, z per particle) into a factz stream (bytes; a float64 array gives a
    float64 stream, which :func:`decompress` returns as float64).

    Every coordinate comes back within the bound and every pair keeps its
    friends-of-friends link status at linking length b (distance <= b,
    decided on the input's values in double), so every halo survives.

    float64 positions take the built-in or ZFP base on the CPU only:
    ``base="sz3"`` is a ValueError, ``backend="cuda"`` a :class:`Error`
    (FACTZ_UNSUPPORTED); ``"auto"`` runs on the CPU.

    :param b: linking length; or ``eta``: b = eta x (V / n)^(1/3), V the
        box's or the bounding box's volume (default eta 0.2).
    :param abs: absolute bound per coordinate (>= 0; 0 is lossless).
    :param rel: bound relative to the coordinate range of all three axes
        (default 1e-3 when neither is given).
    :param box: side of a periodic box (minimum-image distances); None or 0
        (default) for open boundaries.
    :param base: base compressor ``"builtin"`` (default), ``"sz3"``,
        ``"zfp"`` (the last two only if libfactz was built with them; SZ3
        takes float32 only).
    :param coder, zstd, chunk, verify, backend: as for :func:`compress_field`.
    :param edit_bits: bits per correction edit, 2..24 (default 16).
    :param max_iters: optimiser iterations before the exact-storage fallback
        (default 1000).
    :param report: also return what the compression did, as ``(stream,
        report)``: ``abs_bound``, ``linking_length``, ``source`` (base
        compressor, or ``"lossless"``), ``iterations``, ``exact_particles``,
        ``vulnerable_pairs``, ``violated_before``, ``active_particles``,
        ``violated_after``, ``fallback_particles``, ``edited_coords``,
        ``base_bytes``, ``correction_bytes`` and the flags.
    """
    xyz = _particle_array(xyz)
    lib = _capi.lib()
    cfg = _capi.new(_capi.ParticlesConfig)
    _check(lib.factz_particles_config_default(cfg))
    cfg.bound_kind, cfg.bound = _bound(abs, rel, allow_zero=True)
    cfg.linking_kind, cfg.linking = _linking(b, eta)
    cfg.box_side = _box(box)
    cfg.base = _choice("base", base, _BASES)
    f64 = xyz.dtype.itemsize == 8
    if f64 and cfg.base == _capi.BASE_SZ3:
        raise ValueError(f"float64 particles take the built-in or ZFP base, not base={base!r} "
                         f"(the SZ3 base is float32 only; convert explicitly with "
                         f"xyz.astype(np.float32) if that loss of precision is meant)")
    cfg.coder = _choice("coder", coder, _CODERS)
    cfg.zstd_level = _zstd(zstd)
    cfg.flags = (_capi.CHUNK_OF_LARGER if chunk else 0) | (_capi.VERIFY if verify else 0)
    for name, val in (("edit_bits", edit_bits), ("max_iters", max_iters)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 0 \
                or val >= 2**32:
            raise ValueError(f"{name} must be a non-negative integer, not {val!r}")
    cfg.edit_bits = int(edit_bits)
    cfg.max_iters = int(max_iters)
    cfg.backend = _choice("backend", backend, _BACKENDS)
    n = xyz.shape[0]
    cap = _capi.c_size_t(0)
    if f64:
        size, compress, ptr = (lib.factz_particles_max_compressed_size_f64,
                               lib.factz_particles_compress_f64, _capi.dptr)
    else:
        size, compress, ptr = (lib.factz_particles_max_compressed_size,
                               lib.factz_particles_compress_ex, _capi.fptr)
    _check(size(n, cap))
    out = np.empty(cap.value, dtype=np.uint8)
    got = _capi.c_size_t(0)
    rep = _capi.new(_capi.ParticlesReport)
    _check(compress(ptr(xyz), n, cfg, out.ctypes.data_as(_capi.POINTER(_capi.c_uint8)),
                    out.size, got, rep))
    stream = out[:got.value].tobytes()
    if not report:
        return stream
    d = {"abs_bound": rep.abs_bound, "linking_length": rep.linking_length,
         "source": _NAMES["source"].get(rep.source, rep.source), "iterations": rep.iterations}
    for name in ("exact_particles", "vulnerable_pairs", "violated_before", "active_particles",
                 "violated_after", "fallback_particles", "edited_coords", "base_bytes",
                 "correction_bytes"):
        d[name] = int(getattr(rep, name))
    d.update(_report_flags(rep.flags))
    return stream, d


def linking_length(xyz, *, b=None, eta=None, box=None):
    """The linking length the compressor uses: ``b`` itself, or
    eta x (V / n)^(1/3) (default eta 0.2), V the periodic box's volume or the
    bounding-box volume of the particles whose coordinates are all finite.
    ``xyz`` float32 or float64 (n, 3)."""
    xyz = _particle_array(xyz)
    kind, value = _linking(b, eta)
    if xyz.dtype.itemsize == 8:
        return _linking_length_f64(xyz, kind, value, _box(box))
    out = _capi.c_double(0.0)
    _check(_capi.lib().factz_particles_linking_length(_capi.fptr(xyz), xyz.shape[0], kind,
                                                      value, _box(box), out))
    return out.value


def _linking_length_f64(xyz, kind, value, box):
    """factz_particles_linking_length's formula (the library's, in the same
    double operations) for float64 positions, which that function does not
    take."""
    if kind == _capi.LINK_LENGTH:
        return value
    n = xyz.shape[0]
    if n < 2:
        return value  # nothing can link
    if box > 0.0:
        volume = box * box * box
    else:
        fin = xyz[np.isfinite(xyz).all(axis=1)]
        if fin.shape[0] == 0:
            volume = 0.0
        else:
            lo, hi = fin.min(axis=0), fin.max(axis=0)
            volume = ((float(hi[0]) - float(lo[0])) * (float(hi[1]) - float(lo[1]))
                      * (float(hi[2]) - float(lo[2])))
    b = value * float(np.cbrt(volume / float(n)))
    if not (math.isfinite(b) and b > 0.0):
        raise Error(_capi.INVALID_ARGUMENT,
                    "eta needs particles spread in all three dimensions (zero bounding-box "
                    "volume); give the linking length b instead")
    return b


def fof(xyz, b=None, *, eta=None, box=None):
    """Friends-of-friends group labels (uint32, one per particle): the
    smallest particle index of its group, so two particles share a label iff
    they are in one group. Linked iff distance <= b (the compressor's exact
    rule, on the values of ``xyz``, float32 or float64 (n, 3)); ``eta``
    instead of ``b`` as for :func:`compress_particles`; ``box`` the periodic
    box side (None: open). Non-finite particles are singletons."""
    xyz = _particle_array(xyz)
    blen = linking_length(xyz, b=b, eta=eta, box=box)
    labels = np.empty(xyz.shape[0], dtype=np.uint32)
    lib = _capi.lib()
    if xyz.dtype.itemsize == 8:
        fn, ptr = lib.factz_fof_labels_f64, _capi.dptr
    else:
        fn, ptr = lib.factz_fof_labels, _capi.fptr
    _check(fn(ptr(xyz), xyz.shape[0], blen, _box(box),
              labels.ctypes.data_as(_capi._U32) if labels.size else None))
    return labels


def halos(labels, min_members=20):
    """The halo catalogue of a labelling (from :func:`fof`): the groups with
    at least ``min_members`` members (default 20, as ``factz fof``; 0 or 1:
    every group), largest first, ties by label, as ``(labels, sizes)``, two
    arrays. The members of halo k are ``np.nonzero(fof_labels == labels[k])``."""
    if not isinstance(labels, np.ndarray) or labels.ndim != 1:
        raise TypeError("labels must be a 1-D numpy array (from factz.fof)")
    if labels.dtype.kind not in "ui":
        raise TypeError(f"labels must be an integer array (from factz.fof), not {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() >= labels.size):
        raise ValueError("labels must lie in 0..n-1 (particle indices, as factz.fof gives)")
    lab = np.ascontiguousarray(labels, dtype=np.uint32)
    if isinstance(min_members, bool) or not isinstance(min_members, (int, np.integer)) \
            or min_members < 0:
        raise ValueError(f"min_members must be a non-negative integer, not {min_members!r}")
    lib = _capi.lib()
    lp = lab.ctypes.data_as(_capi._U32) if lab.size else None
    count = _capi.c_size_t(0)
    _check(lib.factz_fof_halos(lp, lab.size, int(min_members), None, None, 0, count),
           also_ok=(_capi.BUFFER_TOO_SMALL,))
    hl = np.empty(count.value, dtype=np.uint32)
    hs = np.empty(count.value, dtype=np.uintp)
    if count.value:
        _check(lib.factz_fof_halos(lp, lab.size, int(min_members),
                                   hl.ctypes.data_as(_capi._U32),
                                   hs.ctypes.data_as(_capi._Z), count.value, count))
    return hl, hs.astype(np.int64)


# ---- verify ------------------------------------------------------------------------------


def _errors(orig, rec):
    """Error metrics over the finite original values (as `factz verify`)."""
    o = orig.astype(np.float64).ravel()
    r = rec.astype(np.float64).ravel()
    fin = np.isfinite(o)
    # non-finite values must come back bit-exact
    bits = np.uint64 if orig.dtype.itemsize == 8 else np.uint32
    ob = orig.ravel().view(bits)
    rb = rec.ravel().view(bits)
    nonfinite_changed = int(np.count_nonzero((ob != rb) & ~fin))
    if fin.any():
        err = np.abs(o[fin] - r[fin])
        err = np.where(np.isfinite(err), err, np.inf)
        max_err = float(err.max())
        mse = float(np.mean(err * err))
        rng = float(o[fin].max() - o[fin].min())
    else:
        max_err, mse, rng = 0.0, 0.0, 0.0
    if mse == 0.0:
        psnr = math.inf
    elif rng == 0.0:
        psnr = -math.inf
    else:
        psnr = 20.0 * math.log10(rng) - 10.0 * math.log10(mse)
    return max_err, psnr, rng, nonfinite_changed


def _within(orig, rec, bound):
    """Is every finite original value's reconstruction within `bound`,
    exactly? In double, r - x may round (float64 values): two-sum recovers
    the rounding error e of s = fl(r - x), and |s + e| <= bound is
    |s| < bound, or |s| == bound with e zero or of the other sign than s."""
    x = orig.astype(np.float64).ravel()
    r = rec.astype(np.float64).ravel()
    fin = np.isfinite(x)
    x, r = x[fin], r[fin]
    with np.errstate(invalid="ignore", over="ignore"):
        s = r - x
        bb = s - r
        e = (r - (s - bb)) + (-x - bb)
    a = np.abs(s)
    ok = (a < bound) | ((a == bound) & ((e == 0.0) | ((e < 0.0) == (s > 0.0))))
    return bool(ok.all())


def _abs_bound(abs, rel, rng, recorded):
    if abs is not None and rel is not None:
        raise ValueError("give one error bound: abs= or rel=, not both")
    if abs is not None:
        return _positive("abs", abs, allow_zero=True)
    if rel is not None:
        return _positive("rel", rel, allow_zero=True) * rng
    return recorded


def _round_half_away(x):
    """f64::round (half away from zero), exactly: |x| - floor(|x|) is exact,
    where floor(|x| + 0.5) would round 0.49999999999999994 up."""
    a = np.abs(x)
    f = np.floor(a)
    return np.copysign(f + (a - f >= 0.5), x)


def _link_pairs(xyz, b, box, batch=1 << 22):
    """Every linked pair (distance <= b, the compressor's rule, in double on
    the values of xyz, float32 or float64: float64 is used as it is) as
    sorted codes i * n + j (i < j): a cell list of cell side >= b in numpy."""
    n = xyz.shape[0]
    p64 = xyz.astype(np.float64, copy=False)
    idx = np.nonzero(np.isfinite(p64).all(axis=1))[0]
    if idx.size < 2:
        return np.empty(0, dtype=np.int64)
    p = p64[idx]
    # The cell side exceeds b by more than the rounding of the cell
    # coordinates (a few ulps of the largest coordinate or of the box), so
    # pairs within b lie in neighbouring cells even far from the origin.
    scale = max(float(np.abs(p).max()), box)
    side = b * (1.0 + 1e-9) + 64.0 * np.finfo(np.float64).eps * scale
    if box > 0.0:
        ncell = int(box // side)
        ncell = ncell if ncell >= 3 else 1
        dims = np.array([ncell] * 3, dtype=np.int64)
        c = np.minimum(np.floor(np.mod(p, box) / (box / ncell)).astype(np.int64), ncell - 1)
    else:
        c = np.floor((p - p.min(axis=0)) / side).astype(np.int64)
        dims = c.max(axis=0) + 1
    if float(dims[0]) * float(dims[1]) * float(dims[2]) > 2.0**62:
        raise ValueError("the particles span too many linking lengths for the cell list")
    key = (c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]
    order = np.argsort(key, kind="stable")
    sk = key[order]
    cells, start, count = np.unique(sk, return_index=True, return_counts=True)
    cc = np.stack([cells // (dims[1] * dims[2]), (cells // dims[2]) % dims[1],
                   cells % dims[2]], axis=1)
    offsets = [(0, 0, 0)] + [(dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
                             for dz in (-1, 0, 1) if (dx, dy, dz) > (0, 0, 0)]
    if box > 0.0 and dims[0] == 1:
        offsets = [(0, 0, 0)]
    out = []
    bb = b * b
    for off in offsets:
        nc = cc + np.array(off, dtype=np.int64)
        if box > 0.0:
            nc = np.mod(nc, dims)
            ok = np.ones(len(cells), dtype=bool)
        else:
            ok = ((nc >= 0) & (nc < dims)).all(axis=1)
        nkey = (nc[:, 0] * dims[1] + nc[:, 1]) * dims[2] + nc[:, 2]
        pos = np.searchsorted(cells, nkey)
        pos = np.minimum(pos, len(cells) - 1)
        ok &= cells[pos] == nkey
        a = np.nonzero(ok)[0]
        bcell = pos[a]
        na, nb = count[a], count[bcell]
        tot = na * nb
        # batches of cell pairs whose candidate pairs fit `batch`
        ends = np.cumsum(tot)
        s = 0
        while s < len(a):
            base_total = ends[s - 1] if s else 0
            e = int(np.searchsorted(ends, base_total + batch, side="right"))
            e = max(e, s + 1)
            t = tot[s:e]
            k = np.arange(int(t.sum()), dtype=np.int64)
            pid = np.repeat(np.arange(e - s), t)
            within = k - np.repeat(np.cumsum(t) - t, t)
            ia = start[a[s:e]][pid] + within // nb[s:e][pid]
            ib = start[bcell[s:e]][pid] + within % nb[s:e][pid]
            if off == (0, 0, 0):
                keep = ia < ib
                ia, ib = ia[keep], ib[keep]
            i = idx[order[ia]]
            j = idx[order[ib]]
            d = p64[i] - p64[j]
            if box > 0.0:
                d = d - box * _round_half_away(d / box)
            linked = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2] <= bb
            i, j = i[linked], j[linked]
            out.append(np.minimum(i, j) * n + np.maximum(i, j))
            s = e
    if not out:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(out))


def verify(original, data, *, abs=None, rel=None, b=None, eta=None, box=None, min_members=20):
    """Checks a reconstruction against its original, as ``factz verify``:
    a dict of metrics.

    ``original``: a field as ``(u, v)`` (two float32 (ny, nx) arrays, or
    float64) or one (2, ny, nx) array, or particles as a float32 or float64
    (n, 3) array. ``data``: a factz stream (bytes-like: then ``ratio`` and
    the bound it records are reported) or the reconstruction in the
    original's form and dtype (another dtype is a TypeError).

    Both kinds: ``max_abs_error`` (over finite values), ``bound`` (``abs=``,
    ``rel=`` x the original's value range, else the stream's; None without
    any), ``within_bound`` (None without a bound; decided exactly, also
    where a float64 difference rounds), ``nonfinite_changed`` (bits compared
    at the values' width), ``psnr`` (dB), ``ratio`` (the original's bytes,
    4 or 8 per value, over the stream's) and ``bits_per_value`` for a
    stream, and ``ok``.

    Fields: ``critical_points`` (of the original), ``lost`` (P1), ``false``
    (P2), ``changed`` (P3: same cell, other type).

    Particles: ``linking_length`` and ``box`` (``b=``/``eta=``/``box=``, else
    the stream's, else eta 0.2 and open), ``links`` (of the original),
    ``broken_links``, ``false_links`` (links decided in double on the
    arrays' own values), ``halos_identical`` (the FoF
    partitions are equal), ``groups``, ``halos`` (groups of at least
    ``min_members``, default 20) of original and reconstruction.
    """
    stream = None
    if isinstance(data, (bytes, bytearray, memoryview)) or (
            isinstance(data, np.ndarray) and data.dtype == np.uint8):
        stream = _stream(data)
    if isinstance(original, (tuple, list)):
        if len(original) != 2:
            raise ValueError("a field original is (u, v)")
        kind = "field2d"
        u, v = _field_arrays(*original, f64=True)
    elif isinstance(original, np.ndarray) and original.ndim == 3:
        if original.shape[0] != 2:
            raise ValueError(f"a field original as one array has shape (2, ny, nx), not "
                             f"{original.shape}")
        kind = "field2d"
        u, v = _field_arrays(original[0], original[1], f64=True)
    else:
        kind = "particles"
        xyz = _particle_array(original, "original")

    recorded = None
    if stream is not None:
        skind, sinfo = _kind(stream)
        if skind != kind:
            raise ValueError(f"the original is a {kind} but the stream holds a {skind}")
        recorded = sinfo.abs_bound
        rec = decompress(stream)
    else:
        rec = data
    result = {"kind": kind}

    if kind == "field2d":
        if isinstance(rec, (tuple, list)):
            if len(rec) != 2:
                raise ValueError("a field reconstruction is (u, v)")
            ru, rv = _field_arrays(*rec, f64=True)
        else:
            if not isinstance(rec, np.ndarray) or rec.ndim != 3 or rec.shape[0] != 2:
                raise ValueError("a field reconstruction is (u, v) or one (2, ny, nx) array")
            ru, rv = _field_arrays(rec[0], rec[1], f64=True)
        if ru.dtype != u.dtype:
            raise TypeError(f"the reconstruction is {ru.dtype} but the original is {u.dtype}")
        if ru.shape != u.shape:
            raise ValueError(f"reconstruction shape {ru.shape} differs from the original's "
                             f"{u.shape}")
        orig_all = np.stack([u, v])
        rec_all = np.stack([ru, rv])
        nvalues = orig_all.size
        cp_o = critical_points(u, v)
        cp_r = critical_points(ru, rv)
        to = dict(zip(cp_o["cell"].tolist(), cp_o["type"].tolist()))
        tr = dict(zip(cp_r["cell"].tolist(), cp_r["type"].tolist()))
        lost = sum(1 for c in to if c not in tr)
        false = sum(1 for c in tr if c not in to)
        changed = sum(1 for c, t in to.items() if c in tr and tr[c] != t)
        result.update(critical_points=len(to), lost=lost, false=false, changed=changed)
        features_ok = lost == 0 and false == 0 and changed == 0
    else:
        r = _particle_array(rec, "reconstruction")
        if r.dtype != xyz.dtype:
            raise TypeError(f"the reconstruction is {r.dtype} but the original is {xyz.dtype}")
        if r.shape != xyz.shape:
            raise ValueError(f"reconstruction shape {r.shape} differs from the original's "
                             f"{xyz.shape}")
        orig_all, rec_all = xyz, r
        nvalues = xyz.size
        # each of b / eta and box defaults to what the stream records
        boxv = sinfo.box_side if box is None and stream is not None else _box(box)
        if b is None and eta is None and stream is not None:
            blen = sinfo.linking_length
        else:
            blen = linking_length(xyz, b=b, eta=eta, box=boxv)
        lo = _link_pairs(xyz, blen, boxv)
        lr = _link_pairs(r, blen, boxv)
        broken = int(np.setdiff1d(lo, lr, assume_unique=True).size)
        false_links = int(np.setdiff1d(lr, lo, assume_unique=True).size)
        lab_o = fof(xyz, b=blen, box=boxv)
        lab_r = fof(r, b=blen, box=boxv)
        result.update(linking_length=blen, box=boxv if boxv > 0 else None, links=int(lo.size),
                      broken_links=broken, false_links=false_links,
                      halos_identical=bool(np.array_equal(lab_o, lab_r)),
                      groups=int(np.unique(lab_o).size),
                      halos=int(halos(lab_o, min_members)[0].size),
                      halos_reconstruction=int(halos(lab_r, min_members)[0].size))
        features_ok = broken == 0 and false_links == 0

    max_err, psnr, rng, nonfinite_changed = _errors(orig_all, rec_all)
    bound = _abs_bound(abs, rel, rng, recorded)
    within = None if bound is None else _within(orig_all, rec_all, bound)
    result.update(max_abs_error=max_err, bound=bound, within_bound=within,
                  nonfinite_changed=nonfinite_changed, psnr=psnr)
    if stream is not None:
        itemsize = orig_all.dtype.itemsize
        result.update(ratio=itemsize * nvalues / stream.size if stream.size else math.inf,
                      bits_per_value=8.0 * stream.size / nvalues if nvalues else 0.0)
    result["ok"] = bool(features_ok and within is not False and nonfinite_changed == 0)
    return result
