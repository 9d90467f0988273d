"""ctypes bindings of include/factz.h (the part the Python API uses).

The structs mirror the header's field for field (natural C alignment, as
cbindgen's repr(C) structs have); tests/python/package_check.py checks the
layouts through round trips whose settings come back from factz_*_info.
"""

import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int32, c_size_t,
                    c_uint8, c_uint32, c_uint64, c_void_p)

# ---- constants (include/factz.h) --------------------------------------------

OK = 0
INVALID_ARGUMENT = 4001
NULL_POINTER = 4002
CORRUPT_STREAM = 4003
UNSUPPORTED = 4004
BUFFER_TOO_SMALL = 4005

CHUNK_OF_LARGER = 1
VERIFY = 2
LOSSLESS_FALLBACK = 4
RAN_ON_GPU = 8

LINK_LENGTH = 1
LINK_ETA = 2

BASE_BUILTIN = 1
BASE_SZ3 = 2
BASE_ZFP = 3
SOURCE_LOSSLESS = 0
SOURCE_EXTERNAL = 4
METHOD_CORRECT = 0
METHOD_SAFE = 1

BACKEND_CPU = 0
BACKEND_CUDA = 1
BACKEND_AUTO = 2

BOUND_ABS = 1
BOUND_REL = 2

CODER_HUFFMAN = 1
CODER_RANS = 2

LAYOUT_SOA = 0
LAYOUT_AOS = 1

MODE_LOSSLESS = 0
MODE_BLOCKWISE = 1
MODE_SPECULATIVE = 2

CP_TYPES = {
    1: "saddle",
    2: "source",
    3: "sink",
    4: "repelling_focus",
    5: "attracting_focus",
    6: "center",
}

DTYPE_F32 = 1
DTYPE_F64 = 2

ABI_VERSION = 1


# ---- structs -----------------------------------------------------------------


class FieldConfig(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("mode", c_uint32),
        ("bound_kind", c_uint32),
        ("coder", c_uint32),
        ("bound", c_double),
        ("zstd_level", c_int32),
        ("flags", c_uint32),
        ("layout", c_uint32),
        ("backend", c_uint32),
    ]


class FieldReport(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("abs_bound", c_double),
        ("exact_vertices", c_uint64),
    ]


class FieldStreamInfo(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("format_version", c_uint32),
        ("ny", c_uint64),
        ("nx", c_uint64),
        ("layout", c_uint32),
        ("mode", c_uint32),
        ("coder", c_uint32),
        ("zstd_level", c_int32),
        ("abs_bound", c_double),
        ("flags", c_uint32),
        ("dtype", c_uint32),
    ]


class CriticalPoint(Structure):
    _fields_ = [
        ("triangle", c_uint64),
        ("i", c_uint64),
        ("j", c_uint64),
        ("x", c_double),
        ("y", c_double),
        ("kind", c_uint32),
        ("half", c_uint32),
        ("det_sign", c_int32),
        ("trace_sign", c_int32),
        ("disc_sign", c_int32),
        ("reserved", c_uint32),
    ]


class ParticlesConfig(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("bound_kind", c_uint32),
        ("bound", c_double),
        ("linking_kind", c_uint32),
        ("base", c_uint32),
        ("linking", c_double),
        ("box_side", c_double),
        ("coder", c_uint32),
        ("zstd_level", c_int32),
        ("flags", c_uint32),
        ("edit_bits", c_uint32),
        ("learning_rate", c_double),
        ("max_iters", c_uint32),
        ("backend", c_uint32),
        ("tolerance", c_double),
    ]


class ParticlesReport(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("abs_bound", c_double),
        ("linking_length", c_double),
        ("source", c_uint32),
        ("iterations", c_uint32),
        ("exact_particles", c_uint64),
        ("vulnerable_pairs", c_uint64),
        ("violated_before", c_uint64),
        ("active_particles", c_uint64),
        ("violated_after", c_uint64),
        ("fallback_particles", c_uint64),
        ("edited_coords", c_uint64),
        ("base_bytes", c_uint64),
        ("correction_bytes", c_uint64),
    ]


class ParticlesStreamInfo(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("format_version", c_uint32),
        ("n", c_uint64),
        ("layout", c_uint32),
        ("source", c_uint32),
        ("coder", c_uint32),
        ("zstd_level", c_int32),
        ("abs_bound", c_double),
        ("linking_length", c_double),
        ("box_side", c_double),
        ("edit_bits", c_uint32),
        ("flags", c_uint32),
        ("external_checksum", c_uint32),
        ("method", c_uint32),
        ("dtype", c_uint32),
        ("reserved", c_uint32),
    ]


def new(struct_type):
    """A zeroed struct with struct_size set (the header's versioning rule)."""
    s = struct_type()
    s.struct_size = ctypes.sizeof(struct_type)
    return s


# ---- the library ---------------------------------------------------------------

_F = POINTER(c_float)
_D = POINTER(c_double)
_B = POINTER(c_uint8)
_Z = POINTER(c_size_t)
_U32 = POINTER(c_uint32)

_SIGNATURES = {
    "factz_last_error": (c_char_p, []),
    "factz_status_string": (c_char_p, [c_int]),
    "factz_version_string": (c_char_p, []),
    "factz_abi_version": (c_uint32, []),
    "factz_field_config_default": (c_int, [POINTER(FieldConfig)]),
    "factz_field_max_compressed_size": (c_int, [c_size_t, c_size_t, _Z]),
    "factz_field_compress_ex": (c_int, [POINTER(FieldConfig), _F, _F, c_size_t, c_size_t, _B,
                                        c_size_t, _Z, POINTER(FieldReport)]),
    "factz_field_decompress": (c_int, [c_void_p, c_size_t, _F, _F, c_size_t, c_size_t]),
    "factz_field_max_compressed_size_f64": (c_int, [c_size_t, c_size_t, _Z]),
    "factz_field_compress_f64": (c_int, [POINTER(FieldConfig), _D, _D, c_size_t, c_size_t, _B,
                                         c_size_t, _Z, POINTER(FieldReport)]),
    "factz_field_decompress_f64": (c_int, [c_void_p, c_size_t, _D, _D, c_size_t, c_size_t]),
    "factz_field_info": (c_int, [c_void_p, c_size_t, POINTER(FieldStreamInfo)]),
    "factz_field_critical_points": (c_int, [_F, _F, c_size_t, c_size_t, _Z,
                                            POINTER(CriticalPoint), c_size_t]),
    "factz_field_critical_points_f64": (c_int, [_D, _D, c_size_t, c_size_t, _Z,
                                                POINTER(CriticalPoint), c_size_t]),
    "factz_particles_config_default": (c_int, [POINTER(ParticlesConfig)]),
    "factz_particles_max_compressed_size": (c_int, [c_size_t, _Z]),
    "factz_particles_compress_ex": (c_int, [_F, c_size_t, POINTER(ParticlesConfig), _B,
                                            c_size_t, _Z, POINTER(ParticlesReport)]),
    "factz_particles_decompress": (c_int, [c_void_p, c_size_t, _F, c_size_t]),
    "factz_particles_max_compressed_size_f64": (c_int, [c_size_t, _Z]),
    "factz_particles_compress_f64": (c_int, [_D, c_size_t, POINTER(ParticlesConfig), _B,
                                             c_size_t, _Z, POINTER(ParticlesReport)]),
    "factz_particles_decompress_f64": (c_int, [c_void_p, c_size_t, _D, c_size_t]),
    "factz_particles_info": (c_int, [c_void_p, c_size_t, POINTER(ParticlesStreamInfo)]),
    "factz_fof_labels": (c_int, [_F, c_size_t, c_double, c_double, _U32]),
    "factz_fof_labels_f64": (c_int, [_D, c_size_t, c_double, c_double, _U32]),
    "factz_fof_halos": (c_int, [_U32, c_size_t, c_size_t, _U32, _Z, c_size_t, _Z]),
    "factz_particles_linking_length": (c_int, [_F, c_size_t, c_uint32, c_double, c_double,
                                               POINTER(c_double)]),
}

_here = os.path.dirname(os.path.abspath(__file__))

#: Where the bundled libfactz.so lies (pip install puts it there).
BUNDLED_LIBRARY = os.path.join(_here, "libfactz.so")

_lib = None


def library_path():
    """$FACTZ_LIBRARY when set, else the libfactz.so inside the package."""
    return os.environ.get("FACTZ_LIBRARY") or BUNDLED_LIBRARY


def lib():
    """The loaded libfactz (loaded on first use), with argtypes set."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not os.path.isfile(path):
        raise ImportError(
            f"libfactz not found at {path}: install the package (pip install ./python from the "
            f"factz repository builds it and ships it inside), or point FACTZ_LIBRARY at a "
            f"libfactz.so")
    handle = ctypes.CDLL(path)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(handle, name)
        fn.restype = restype
        fn.argtypes = argtypes
    abi = handle.factz_abi_version()
    if abi != ABI_VERSION:
        raise ImportError(f"{path} has C ABI version {abi}; this package speaks version "
                          f"{ABI_VERSION}")
    _lib = handle
    return handle


def fptr(a):
    """A float* to a C-contiguous float32 numpy array (None for an empty one)."""
    return a.ctypes.data_as(_F) if a.size else None


def dptr(a):
    """A double* to a C-contiguous float64 numpy array (None for an empty one)."""
    return a.ctypes.data_as(_D) if a.size else None
