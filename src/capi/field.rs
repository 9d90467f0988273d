//! 2D vector fields through the C ABI: configuration, compression,
//! decompression, stream info and critical points.
//!
//! Shapes are row-major `ny x nx`, x fastest; SoA functions take two arrays u
//! and v of `ny * nx` floats, `_interleaved` functions one array of `2 * ny * nx`
//! floats holding (u, v) per vertex. All pointers are host memory.

use super::backend::factz_backend;
use super::boundary::Failure;
use super::buffers::{self, check_disjoint, check_output, check_scalar_out, Span};
use super::status::factz_status;
use crate::backend::Backend;
use crate::field::topology::{self, CpType, Half};
use crate::field::{self, Bound, Coder, FieldConfig, FieldInfo, Layout, Mode};
use crate::real::Real;
use std::mem::size_of;

/// Config flag: the field is one chunk of a larger one, so its perimeter
/// vertices are stored exactly (critical points in triangles that cross chunk
/// edges survive). Info flag: the stream was written so.
pub const FACTZ_CHUNK_OF_LARGER: u32 = 1;
/// Config flag: decode and re-check every triangle and value before returning,
/// storing the chunk losslessly if anything fails. Info/report flag: the verify
/// pass ran.
pub const FACTZ_VERIFY: u32 = 2;
/// Info/report flag: the verify pass found a violation and the chunk was stored
/// losslessly (never expected; a bug report is welcome).
pub const FACTZ_LOSSLESS_FALLBACK: u32 = 4;

/// Which compressor frontend runs (config), or how a stream was made (info).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_mode {
    /// Only reported by factz_field_info: the chunk is stored losslessly.
    FACTZ_MODE_LOSSLESS = 0,
    /// Mode B: block-wise analytic bounds, for throughput.
    FACTZ_MODE_BLOCKWISE = 1,
    /// Mode S: speculative per-vertex verify-and-back-off, for ratio (default).
    FACTZ_MODE_SPECULATIVE = 2,
}

/// How the `bound` of a factz_field_config is read.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_bound_kind {
    /// Absolute: every finite value within `bound` (strict `<=`).
    FACTZ_BOUND_ABS = 1,
    /// Value-range relative: `bound * (max - min)` over the finite values of
    /// both components (default, with bound 1e-3).
    FACTZ_BOUND_REL = 2,
}

/// The entropy coder of the stream.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_coder {
    /// Canonical Huffman.
    FACTZ_CODER_HUFFMAN = 1,
    /// rANS (default).
    FACTZ_CODER_RANS = 2,
}

/// How the two components lie in memory.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_layout {
    /// Structure of arrays: all of u, then all of v (default).
    FACTZ_LAYOUT_SOA = 0,
    /// Array of structures: (u, v) interleaved per vertex.
    FACTZ_LAYOUT_AOS = 1,
}

/// The type of a critical point, from the exact signs of the triangle's
/// Jacobian (det J, tr J, tr^2 - 4 det J).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_cp_type {
    /// det J < 0.
    FACTZ_CP_SADDLE = 1,
    /// Repelling node: real eigenvalues, both positive.
    FACTZ_CP_SOURCE = 2,
    /// Attracting node: real eigenvalues, both negative.
    FACTZ_CP_SINK = 3,
    /// Complex eigenvalues, positive real part.
    FACTZ_CP_REPELLING_FOCUS = 4,
    /// Complex eigenvalues, negative real part.
    FACTZ_CP_ATTRACTING_FOCUS = 5,
    /// Complex eigenvalues, zero real part.
    FACTZ_CP_CENTER = 6,
}

/// Compression settings. Set `struct_size = sizeof(factz_field_config)`, then
/// call factz_field_config_default and change what you need:
///
/// ```c
/// factz_field_config cfg = { .struct_size = sizeof cfg };
/// factz_field_config_default(&cfg);
/// cfg.bound_kind = FACTZ_BOUND_ABS; cfg.bound = 0.01;
/// ```
///
/// Enum fields hold the values of the enum named in their comment; anything
/// else is FACTZ_INVALID_ARGUMENT.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_field_config {
    /// sizeof(factz_field_config) as the caller compiled it (version of this struct).
    pub struct_size: u32,
    /// A factz_mode: FACTZ_MODE_BLOCKWISE or FACTZ_MODE_SPECULATIVE.
    pub mode: u32,
    /// A factz_bound_kind.
    pub bound_kind: u32,
    /// A factz_coder.
    pub coder: u32,
    /// The error bound: absolute value or relative factor; finite and > 0.
    pub bound: f64,
    /// 0 = no zstd stage; 1..=22 = zstd level on top of the entropy coder.
    pub zstd_level: i32,
    /// FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY, or 0.
    pub flags: u32,
    /// A factz_layout: the layout the stream records, which decompressors that
    /// write data back (the command-line tool, the plugins) use.
    /// factz_field_compress records this value (leave SOA, or say AOS if your data
    /// came interleaved and you split it); factz_field_compress_interleaved always
    /// records FACTZ_LAYOUT_AOS. The C decompress functions write the layout their
    /// name says, whatever the stream records.
    pub layout: u32,
    /// A factz_backend: where factz_field_compress* run (default
    /// FACTZ_BACKEND_CPU; the stream is the same on every backend). The
    /// _device functions always run on the GPU; the MPI ones follow it on
    /// every rank, except factz_field_compress_mpi_at (CPU only, see
    /// factz_mpi.h); the report's FACTZ_RAN_ON_GPU flag says where a
    /// compression ran.
    pub backend: u32,
}

/// What a compression did, beside the bytes. Set `struct_size` before the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_field_report {
    /// sizeof(factz_field_report) as the caller compiled it.
    pub struct_size: u32,
    /// FACTZ_VERIFY (the verify pass ran) | FACTZ_LOSSLESS_FALLBACK |
    /// FACTZ_RAN_ON_GPU, or 0.
    pub flags: u32,
    /// The absolute bound used: every finite value is within it (strict `<=`).
    pub abs_bound: f64,
    /// Vertices stored exactly (anchors, critical cells, non-finite values, fallbacks).
    pub exact_vertices: u64,
}

/// What a field stream says about itself. Set `struct_size` before the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_field_stream_info {
    /// sizeof(factz_field_stream_info) as the caller compiled it.
    pub struct_size: u32,
    /// The stream format version.
    pub format_version: u32,
    /// Rows of the field.
    pub ny: u64,
    /// Columns of the field (x, fastest).
    pub nx: u64,
    /// A factz_layout: the layout the data came in.
    pub layout: u32,
    /// A factz_mode; FACTZ_MODE_LOSSLESS for a chunk stored losslessly.
    pub mode: u32,
    /// A factz_coder.
    pub coder: u32,
    /// 0 = no zstd stage, else its level.
    pub zstd_level: i32,
    /// The absolute error bound the stream was written with.
    pub abs_bound: f64,
    /// FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY | FACTZ_LOSSLESS_FALLBACK, or 0.
    pub flags: u32,
    /// Element type: 1 float32, 2 float64 (decode with the `_f64` functions).
    /// Libraries before float64 wrote 0 here (their streams are all float32).
    pub dtype: u32,
}

/// One critical point. An array element of fixed layout (a later version that
/// needs more fields adds a new function rather than changing this struct).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_critical_point {
    /// Triangle id `2 * (j * (nx - 1) + i) + half`.
    pub triangle: u64,
    /// Column of the cell's lower-left vertex.
    pub i: u64,
    /// Row of the cell's lower-left vertex.
    pub j: u64,
    /// Position in grid units (x = column).
    pub x: f64,
    /// Position in grid units (y = row).
    pub y: f64,
    /// A factz_cp_type.
    pub kind: u32,
    /// 0: triangle (i,j),(i+1,j),(i+1,j+1); 1: triangle (i,j),(i+1,j+1),(i,j+1).
    pub half: u32,
    /// Sign of det J: -1, 0 or 1.
    pub det_sign: i32,
    /// Sign of tr J.
    pub trace_sign: i32,
    /// Sign of tr^2 - 4 det J.
    pub disc_sign: i32,
    /// 0.
    pub reserved: u32,
}

// The v1 layouts are frozen: sizes the C header's users compiled against.
const _: () = assert!(size_of::<factz_field_config>() == 40);
const _: () = assert!(size_of::<factz_field_report>() == 24);
const _: () = assert!(size_of::<factz_field_stream_info>() == 56);
const _: () = assert!(size_of::<factz_critical_point>() == 64);

/// struct_size values each versioned struct accepts (oldest first).
const CONFIG_SIZES: &[usize] = &[size_of::<factz_field_config>()];
const REPORT_SIZES: &[usize] = &[size_of::<factz_field_report>()];
const INFO_SIZES: &[usize] = &[size_of::<factz_field_stream_info>()];

impl factz_field_config {
    fn defaults() -> factz_field_config {
        let d = FieldConfig::default();
        let (bound_kind, bound) = match d.bound {
            Bound::Abs(x) => (factz_bound_kind::FACTZ_BOUND_ABS, x),
            Bound::Rel(x) => (factz_bound_kind::FACTZ_BOUND_REL, x),
        };
        factz_field_config {
            struct_size: size_of::<factz_field_config>() as u32,
            mode: d.mode as u32,
            bound_kind: bound_kind as u32,
            coder: d.coder as u32,
            bound,
            zstd_level: d.zstd_level,
            flags: (if d.chunk_of_larger {
                FACTZ_CHUNK_OF_LARGER
            } else {
                0
            }) | (if d.verify { FACTZ_VERIFY } else { 0 }),
            layout: d.layout as u32,
            backend: factz_backend::FACTZ_BACKEND_CPU as u32,
        }
    }

    /// The library configuration this C struct means, or why it means none.
    fn to_config(self) -> Result<FieldConfig, Failure> {
        let mode = match self.mode {
            1 => Mode::Blockwise,
            2 => Mode::Speculative,
            m => {
                return Err(Failure::invalid(format!(
                    "config->mode is {m}; expected FACTZ_MODE_BLOCKWISE (1) or FACTZ_MODE_SPECULATIVE (2)"
                )))
            }
        };
        let bound = match self.bound_kind {
            1 => Bound::Abs(self.bound),
            2 => Bound::Rel(self.bound),
            k => {
                return Err(Failure::invalid(format!(
                    "config->bound_kind is {k}; expected FACTZ_BOUND_ABS (1) or FACTZ_BOUND_REL (2)"
                )))
            }
        };
        let coder = match self.coder {
            1 => Coder::Huffman,
            2 => Coder::Rans,
            c => {
                return Err(Failure::invalid(format!(
                    "config->coder is {c}; expected FACTZ_CODER_HUFFMAN (1) or FACTZ_CODER_RANS (2)"
                )))
            }
        };
        let layout = layout_from(self.layout)?;
        let known = FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY;
        if self.flags & !known != 0 {
            return Err(Failure::invalid(format!(
                "config->flags has unknown bits {:#x}; known: FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY",
                self.flags & !known
            )));
        }
        super::backend::from_c(self.backend)?;
        let cfg = FieldConfig {
            mode,
            bound,
            coder,
            zstd_level: self.zstd_level,
            chunk_of_larger: self.flags & FACTZ_CHUNK_OF_LARGER != 0,
            verify: self.flags & FACTZ_VERIFY != 0,
            layout,
        };
        field::check_config(&cfg)
            .map_err(|e| Failure::invalid(format!("config: {}", e.message)))?;
        Ok(cfg)
    }
}

fn layout_from(x: u32) -> Result<Layout, Failure> {
    match x {
        0 => Ok(Layout::Soa),
        1 => Ok(Layout::Aos),
        l => Err(Failure::invalid(format!(
            "config->layout is {l}; expected FACTZ_LAYOUT_SOA (0) or FACTZ_LAYOUT_AOS (1)"
        ))),
    }
}

/// Reads and checks a caller's config.
///
/// # Safety
/// `cfg` is NULL or points to a factz_field_config of at least its struct_size bytes.
pub(crate) unsafe fn read_config(cfg: *const factz_field_config) -> Result<FieldConfig, Failure> {
    // SAFETY: the same contract.
    unsafe { read_config_backend(cfg) }.map(|(c, _)| c)
}

/// [`read_config`] and the backend it names.
///
/// # Safety
/// As [`read_config`].
pub(crate) unsafe fn read_config_backend(
    cfg: *const factz_field_config,
) -> Result<(FieldConfig, Backend), Failure> {
    // SAFETY: the caller's contract: at least the 4 bytes of struct_size.
    let size = unsafe { buffers::struct_size(cfg, CONFIG_SIZES, "config", "factz_field_config") }?;
    // SAFETY: struct_size bytes are readable; the struct is integers and floats.
    let c = unsafe { buffers::read_versioned(cfg, size, factz_field_config::defaults()) };
    Ok((c.to_config()?, super::backend::from_c(c.backend)?))
}

/// Vertex count of a caller's shape.
pub(crate) fn vertices(ny: usize, nx: usize) -> Result<usize, Failure> {
    Ok(field::vertex_count(ny, nx)?)
}

/// Fills `*cfg` with the defaults: mode S, relative bound 1e-3, rANS, no zstd,
/// no flags, SOA. The caller sets `cfg->struct_size = sizeof(factz_field_config)`
/// first; the other fields may hold anything.
///
/// # Safety
/// `cfg` is NULL or points to a writable factz_field_config of its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_field_config_default(cfg: *mut factz_field_config) -> factz_status {
    ffi_boundary!("factz_field_config_default", {
        // SAFETY: the caller's contract: struct_size is readable.
        let size = unsafe {
            buffers::struct_size(
                cfg.cast_const(),
                CONFIG_SIZES,
                "config",
                "factz_field_config",
            )
        }?;
        let mut d = factz_field_config::defaults();
        d.struct_size = size as u32;
        // SAFETY: struct_size (a known size) bytes are writable; no padding in the struct.
        unsafe { buffers::write_versioned(cfg, size, &d) };
        Ok(())
    })
}

/// The largest stream factz_field_compress can write for an `ny x nx` field,
/// in `*out`: size the output buffer with it once and compression never fails
/// with FACTZ_BUFFER_TOO_SMALL.
///
/// # Safety
/// `out` is NULL or points to a writable size_t.
#[no_mangle]
pub unsafe extern "C" fn factz_field_max_compressed_size(
    ny: usize,
    nx: usize,
    out: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_field_max_compressed_size", {
        check_scalar_out(out, "out")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out.write(0) };
        let n = field::max_compressed_size(ny, nx)?;
        // SAFETY: as above.
        unsafe { out.write(n) };
        Ok(())
    })
}

/// The shared body of the compress entry points, once the input is two arrays.
///
/// # Safety
/// The pointer contracts of factz_field_compress_ex.
#[allow(clippy::too_many_arguments)]
unsafe fn compress_into(
    (cfg, backend): (FieldConfig, Backend),
    u: &[f32],
    v: &[f32],
    inputs: &[(Span, &str)],
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
) -> Result<(), Failure> {
    // SAFETY: the same contract.
    unsafe {
        compress_into_with(
            cfg,
            u,
            v,
            inputs,
            ny,
            nx,
            out,
            out_capacity,
            out_len,
            report,
            |u, v, ny, nx, cfg| {
                let (c, ran) = crate::backend::compress_field(backend, u, v, ny, nx, cfg)?;
                Ok((c, super::backend::ran_flags(&ran)))
            },
        )
    }
}

/// [`compress_into`] with the compressor given (the MPI entry points pass the
/// distributed one).
///
/// # Safety
/// As [`compress_into`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn compress_into_with<T: Real>(
    cfg: FieldConfig,
    u: &[T],
    v: &[T],
    inputs: &[(Span, &str)],
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
    // Returns the stream and report flags of its own (FACTZ_RAN_ON_GPU).
    compressor: impl FnOnce(
        &[T],
        &[T],
        usize,
        usize,
        &FieldConfig,
    ) -> crate::Result<(field::Compressed, u32)>,
) -> Result<(), Failure> {
    check_output(out, out_capacity, "out")?;
    for &(span, name) in inputs {
        check_disjoint(Span::of(out.cast_const(), out_capacity), "out", span, name)?;
    }
    let report_size = if report.is_null() {
        0
    } else {
        // SAFETY: the caller's contract: struct_size is readable.
        unsafe {
            buffers::struct_size(
                report.cast_const(),
                REPORT_SIZES,
                "report",
                "factz_field_report",
            )
        }?
    };
    let (c, ran_flags) = compressor(u, v, ny, nx, &cfg)?;
    let len = c.bytes.len();
    // SAFETY: out_len was checked non-NULL and aligned by the caller of this function.
    unsafe { out_len.write(len) };
    if report_size > 0 {
        let r = factz_field_report {
            struct_size: report_size as u32,
            flags: (if c.report.verified { FACTZ_VERIFY } else { 0 })
                | (if c.report.lossless_fallback {
                    FACTZ_LOSSLESS_FALLBACK
                } else {
                    0
                })
                | ran_flags,
            abs_bound: c.report.abs_bound,
            exact_vertices: c.report.exact_vertices as u64,
        };
        // SAFETY: report points to report_size (a known size) writable bytes.
        unsafe { buffers::write_versioned(report, report_size, &r) };
    }
    if len > out_capacity {
        return Err(Failure::too_small(format!(
            "the stream needs {len} bytes, out_capacity is {out_capacity} (*out_len holds the size; \
             factz_field_max_compressed_size gives a size that always suffices)"
        )));
    }
    // SAFETY: out holds out_capacity >= len writable bytes (checked), disjoint from
    // our own c.bytes.
    unsafe { buffers::copy_out(out, &c.bytes) };
    Ok(())
}

/// Compresses a field given as two arrays (SoA) `u` and `v` of `ny * nx` floats
/// (row-major, x fastest) into `out` (capacity `out_capacity` bytes) and writes
/// the stream's length to `*out_len`. Every finite value comes back within the
/// bound, NaN and Inf bit-exact, and every critical point keeps its triangle
/// and type.
///
/// FACTZ_BUFFER_TOO_SMALL when the stream does not fit: `*out_len` then holds
/// the size it needs (`out` may be NULL with `out_capacity` 0 to ask, at the
/// cost of one compression; factz_field_max_compressed_size avoids that).
/// On other failures `*out_len` is 0.
///
/// # Safety
/// `cfg`: NULL or a factz_field_config of its struct_size; `u`, `v`: NULL or
/// `ny * nx` readable floats each; `out`: NULL or `out_capacity` writable bytes,
/// not overlapping `u` or `v`; `out_len`: NULL or a writable size_t. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress(
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the same contract, with no report.
    unsafe {
        factz_field_compress_ex(
            cfg,
            u,
            v,
            ny,
            nx,
            out,
            out_capacity,
            out_len,
            std::ptr::null_mut(),
        )
    }
}

/// factz_field_compress with a report: when `report` is not NULL (and its
/// struct_size set), it receives the absolute bound used, the number of
/// vertices stored exactly and the verify flags, on success and on
/// FACTZ_BUFFER_TOO_SMALL.
///
/// # Safety
/// As factz_field_compress; `report`: NULL or a writable factz_field_report of
/// its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_ex(
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
) -> factz_status {
    ffi_boundary!("factz_field_compress", {
        check_scalar_out(out_len, "out_len")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out_len.write(0) };
        // SAFETY: the caller's contract on cfg.
        let cfg = unsafe { read_config_backend(cfg) }?;
        let n = vertices(ny, nx)?;
        // SAFETY: u and v hold n readable floats each (the caller's contract).
        let (us, vs) = unsafe { (buffers::input(u, n, "u")?, buffers::input(v, n, "v")?) };
        let inputs = [(Span::of(u, n), "u"), (Span::of(v, n), "v")];
        // SAFETY: the caller's contract on out, out_len and report.
        unsafe {
            compress_into(
                cfg,
                us,
                vs,
                &inputs,
                ny,
                nx,
                out,
                out_capacity,
                out_len,
                report,
            )
        }
    })
}

/// Compresses a field given interleaved (AoS): `uv` holds `2 * ny * nx` floats,
/// (u, v) per vertex. The stream records FACTZ_LAYOUT_AOS. Otherwise as
/// factz_field_compress.
///
/// # Safety
/// As factz_field_compress, with `uv`: NULL or `2 * ny * nx` readable floats.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_interleaved(
    cfg: *const factz_field_config,
    uv: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the same contract, with no report.
    unsafe {
        factz_field_compress_interleaved_ex(
            cfg,
            uv,
            ny,
            nx,
            out,
            out_capacity,
            out_len,
            std::ptr::null_mut(),
        )
    }
}

/// factz_field_compress_interleaved with a report (see factz_field_compress_ex).
///
/// # Safety
/// As factz_field_compress_interleaved; `report`: NULL or a writable
/// factz_field_report of its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_interleaved_ex(
    cfg: *const factz_field_config,
    uv: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
) -> factz_status {
    ffi_boundary!("factz_field_compress_interleaved", {
        check_scalar_out(out_len, "out_len")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out_len.write(0) };
        // SAFETY: the caller's contract on cfg.
        let mut cfg = unsafe { read_config_backend(cfg) }?;
        cfg.0.layout = Layout::Aos;
        let n = vertices(ny, nx)?;
        // SAFETY: uv holds 2n readable floats (the caller's contract); 2n cannot
        // overflow as n <= field::MAX_VERTICES.
        let uvs = unsafe { buffers::input(uv, 2 * n, "uv") }?;
        let (us, vs) = field::deinterleave(uvs);
        let inputs = [(Span::of(uv, 2 * n), "uv")];
        // SAFETY: the caller's contract on out, out_len and report.
        unsafe {
            compress_into(
                cfg,
                &us,
                &vs,
                &inputs,
                ny,
                nx,
                out,
                out_capacity,
                out_len,
                report,
            )
        }
    })
}

/// Checks that a stream holds a field of the caller's buffer shape (header only).
fn check_shape(stream: &[u8], ny: usize, nx: usize) -> Result<(), Failure> {
    let info = field::info(stream)?;
    if (info.ny, info.nx) != (ny, nx) {
        return Err(Failure::invalid(format!(
            "the output buffers are {ny}x{nx} (ny x nx) but the stream holds a {}x{} field \
             (factz_field_info reads the shape)",
            info.ny, info.nx
        )));
    }
    Ok(())
}

/// Decodes a stream already checked by [`check_shape`]. The caller's buffers vouch
/// for the shape, so this uses `decompress_into` (no expansion cap).
fn decode<T: Real>(stream: &[u8], ny: usize, nx: usize) -> Result<(Vec<T>, Vec<T>), Failure> {
    let (mut u, mut v) = (vec![T::default(); ny * nx], vec![T::default(); ny * nx]);
    field::decompress_into(stream, &mut u, &mut v)?;
    Ok((u, v))
}

/// Decompresses a field stream of `len` bytes into two arrays `u` and `v` of
/// `ny * nx` floats each, whatever layout the stream records. `ny` and `nx`
/// are the shape of the caller's buffers and must match the stream's
/// (FACTZ_INVALID_ARGUMENT otherwise; factz_field_info reads it). On failure
/// the buffers' contents are unspecified.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `u`, `v`: NULL or `ny * nx`
/// writable floats each, not overlapping each other or the stream. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_field_decompress(
    stream: *const u8,
    len: usize,
    u: *mut f32,
    v: *mut f32,
    ny: usize,
    nx: usize,
) -> factz_status {
    ffi_boundary!("factz_field_decompress", {
        // SAFETY: the same contract.
        unsafe { decompress_soa(stream, len, u, v, ny, nx) }
    })
}

/// The body of factz_field_decompress(_f64).
///
/// # Safety
/// factz_field_decompress's contract, for elements of type T.
unsafe fn decompress_soa<T: Real>(
    stream: *const u8,
    len: usize,
    u: *mut T,
    v: *mut T,
    ny: usize,
    nx: usize,
) -> Result<(), Failure> {
    // SAFETY: stream holds len readable bytes (the caller's contract).
    let bytes = unsafe { buffers::input(stream, len, "stream") }?;
    let n = vertices(ny, nx)?;
    check_shape(bytes, ny, nx)?;
    check_output(u, n, "u")?;
    check_output(v, n, "v")?;
    let (su, sv, ss) = (
        Span::of(u.cast_const(), n),
        Span::of(v.cast_const(), n),
        Span::of(stream, len),
    );
    check_disjoint(su, "u", sv, "v")?;
    check_disjoint(su, "u", ss, "stream")?;
    check_disjoint(sv, "v", ss, "stream")?;
    let (du, dv) = decode::<T>(bytes, ny, nx)?;
    // SAFETY: u and v hold n writable values each (checked non-NULL, aligned;
    // sized by the caller's contract) and overlap nothing we read.
    unsafe {
        buffers::copy_out(u, &du);
        buffers::copy_out(v, &dv);
    }
    Ok(())
}

/// Decompresses a field stream into one interleaved array `uv` of
/// `2 * ny * nx` floats, (u, v) per vertex. Otherwise as factz_field_decompress.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `uv`: NULL or `2 * ny * nx` writable
/// floats, not overlapping the stream. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_field_decompress_interleaved(
    stream: *const u8,
    len: usize,
    uv: *mut f32,
    ny: usize,
    nx: usize,
) -> factz_status {
    ffi_boundary!("factz_field_decompress_interleaved", {
        // SAFETY: the same contract.
        unsafe { decompress_aos(stream, len, uv, ny, nx) }
    })
}

/// The body of factz_field_decompress_interleaved(_f64).
///
/// # Safety
/// factz_field_decompress_interleaved's contract, for elements of type T.
unsafe fn decompress_aos<T: Real>(
    stream: *const u8,
    len: usize,
    uv: *mut T,
    ny: usize,
    nx: usize,
) -> Result<(), Failure> {
    // SAFETY: stream holds len readable bytes (the caller's contract).
    let bytes = unsafe { buffers::input(stream, len, "stream") }?;
    let n = vertices(ny, nx)?;
    check_shape(bytes, ny, nx)?;
    check_output(uv, 2 * n, "uv")?;
    check_disjoint(
        Span::of(uv.cast_const(), 2 * n),
        "uv",
        Span::of(stream, len),
        "stream",
    )?;
    let (du, dv) = decode::<T>(bytes, ny, nx)?;
    for (k, (&a, &b)) in du.iter().zip(&dv).enumerate() {
        // SAFETY: uv holds 2n writable values (checked non-NULL, aligned; sized by
        // the caller's contract), k < n, and it overlaps nothing we read.
        unsafe {
            uv.add(2 * k).write(a);
            uv.add(2 * k + 1).write(b);
        }
    }
    Ok(())
}

/// The largest stream factz_field_compress_f64 can write for an `ny x nx`
/// float64 field (as factz_field_max_compressed_size).
///
/// # Safety
/// `out` is NULL or points to a writable size_t.
#[no_mangle]
pub unsafe extern "C" fn factz_field_max_compressed_size_f64(
    ny: usize,
    nx: usize,
    out: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_field_max_compressed_size_f64", {
        check_scalar_out(out, "out")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out.write(0) };
        let n = field::max_compressed_size_of::<f64>(ny, nx)?;
        // SAFETY: as above.
        unsafe { out.write(n) };
        Ok(())
    })
}

/// The compressor of the float64 entry points: modes B and S on the CPU (the
/// GPU takes float32; FACTZ_UNSUPPORTED says so).
type Compressor<'a, T> = dyn FnOnce(&[T], &[T], usize, usize, &FieldConfig) -> crate::Result<(field::Compressed, u32)>
    + 'a;

fn compress_f64(backend: Backend) -> Box<Compressor<'static, f64>> {
    Box::new(move |u, v, ny, nx, cfg| {
        if backend == Backend::Cuda {
            return Err(crate::Error::unsupported(
                "float64 fields compress on the CPU only (FACTZ_BACKEND_CUDA takes float32)",
            ));
        }
        Ok((field::compress(u, v, ny, nx, cfg)?, 0))
    })
}

/// factz_field_compress_ex for a float64 field: `u` and `v` hold `ny * nx`
/// doubles each. Either mode, on the CPU (FACTZ_BACKEND_AUTO runs there;
/// FACTZ_BACKEND_CUDA gives FACTZ_UNSUPPORTED). The critical-point test uses
/// error-free double products, so the guarantee is the float32 one. `report`
/// may be NULL. Decode with factz_field_decompress_f64.
///
/// # Safety
/// As factz_field_compress_ex, with `u`, `v`: NULL or `ny * nx` readable doubles each.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_f64(
    cfg: *const factz_field_config,
    u: *const f64,
    v: *const f64,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
) -> factz_status {
    ffi_boundary!("factz_field_compress_f64", {
        check_scalar_out(out_len, "out_len")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out_len.write(0) };
        // SAFETY: the caller's contract on cfg.
        let (cfg, backend) = unsafe { read_config_backend(cfg) }?;
        let n = vertices(ny, nx)?;
        // SAFETY: u and v hold n readable doubles each (the caller's contract).
        let (us, vs) = unsafe { (buffers::input(u, n, "u")?, buffers::input(v, n, "v")?) };
        let inputs = [(Span::of(u, n), "u"), (Span::of(v, n), "v")];
        // SAFETY: the caller's contract on out, out_len and report.
        unsafe {
            compress_into_with(
                cfg,
                us,
                vs,
                &inputs,
                ny,
                nx,
                out,
                out_capacity,
                out_len,
                report,
                compress_f64(backend),
            )
        }
    })
}

/// factz_field_compress_f64 for interleaved doubles: `uv` holds `2 * ny * nx`,
/// (u, v) per vertex; the stream records FACTZ_LAYOUT_AOS.
///
/// # Safety
/// As factz_field_compress_f64, with `uv`: NULL or `2 * ny * nx` readable doubles.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_interleaved_f64(
    cfg: *const factz_field_config,
    uv: *const f64,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
) -> factz_status {
    ffi_boundary!("factz_field_compress_interleaved_f64", {
        check_scalar_out(out_len, "out_len")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out_len.write(0) };
        // SAFETY: the caller's contract on cfg.
        let (mut cfg, backend) = unsafe { read_config_backend(cfg) }?;
        cfg.layout = Layout::Aos;
        let n = vertices(ny, nx)?;
        // SAFETY: uv holds 2n readable doubles (the caller's contract); 2n cannot
        // overflow as n <= field::MAX_VERTICES.
        let uvs = unsafe { buffers::input(uv, 2 * n, "uv") }?;
        let (us, vs) = field::deinterleave(uvs);
        let inputs = [(Span::of(uv, 2 * n), "uv")];
        // SAFETY: the caller's contract on out, out_len and report.
        unsafe {
            compress_into_with(
                cfg,
                &us,
                &vs,
                &inputs,
                ny,
                nx,
                out,
                out_capacity,
                out_len,
                report,
                compress_f64(backend),
            )
        }
    })
}

/// factz_field_decompress for a float64 stream (factz_field_info's `dtype`
/// 2): `u` and `v` receive `ny * nx` doubles each. A float32 stream gives
/// FACTZ_INVALID_ARGUMENT (decode it with factz_field_decompress), and the
/// reverse likewise.
///
/// # Safety
/// As factz_field_decompress, with `u`, `v`: NULL or `ny * nx` writable doubles each.
#[no_mangle]
pub unsafe extern "C" fn factz_field_decompress_f64(
    stream: *const u8,
    len: usize,
    u: *mut f64,
    v: *mut f64,
    ny: usize,
    nx: usize,
) -> factz_status {
    ffi_boundary!("factz_field_decompress_f64", {
        // SAFETY: the same contract.
        unsafe { decompress_soa(stream, len, u, v, ny, nx) }
    })
}

/// factz_field_decompress_interleaved for a float64 stream: `uv` receives
/// `2 * ny * nx` doubles, (u, v) per vertex.
///
/// # Safety
/// As factz_field_decompress_interleaved, with `uv`: NULL or `2 * ny * nx`
/// writable doubles.
#[no_mangle]
pub unsafe extern "C" fn factz_field_decompress_interleaved_f64(
    stream: *const u8,
    len: usize,
    uv: *mut f64,
    ny: usize,
    nx: usize,
) -> factz_status {
    ffi_boundary!("factz_field_decompress_interleaved_f64", {
        // SAFETY: the same contract.
        unsafe { decompress_aos(stream, len, uv, ny, nx) }
    })
}

fn info_struct(size: usize, i: &FieldInfo) -> factz_field_stream_info {
    factz_field_stream_info {
        struct_size: size as u32,
        format_version: i.version as u32,
        ny: i.ny as u64,
        nx: i.nx as u64,
        layout: i.layout as u32,
        mode: i
            .mode
            .map_or(factz_mode::FACTZ_MODE_LOSSLESS as u32, |m| m as u32),
        coder: i.coder as u32,
        zstd_level: i.zstd_level,
        abs_bound: i.abs_bound,
        flags: (if i.chunk_of_larger {
            FACTZ_CHUNK_OF_LARGER
        } else {
            0
        }) | (if i.verified { FACTZ_VERIFY } else { 0 })
            | (if i.lossless_fallback {
                FACTZ_LOSSLESS_FALLBACK
            } else {
                0
            }),
        dtype: if i.dtype == "f64" { 2 } else { 1 },
    }
}

/// Reads a field stream's header (no payload is decoded) into `*out`, whose
/// struct_size the caller sets: shape, layout, mode, coder, zstd level, bound,
/// flags and format version.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `out`: NULL or a writable
/// factz_field_stream_info of its struct_size. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_field_info(
    stream: *const u8,
    len: usize,
    out: *mut factz_field_stream_info,
) -> factz_status {
    ffi_boundary!("factz_field_info", {
        // SAFETY: the caller's contract: struct_size is readable.
        let size = unsafe {
            buffers::struct_size(
                out.cast_const(),
                INFO_SIZES,
                "out",
                "factz_field_stream_info",
            )
        }?;
        // SAFETY: stream holds len readable bytes (the caller's contract).
        let bytes = unsafe { buffers::input(stream, len, "stream") }?;
        let info = field::info(bytes)?;
        // SAFETY: out holds size (a known size) writable bytes; no padding.
        unsafe { buffers::write_versioned(out, size, &info_struct(size, &info)) };
        Ok(())
    })
}

fn cp_type(t: CpType) -> factz_cp_type {
    match t {
        CpType::Saddle => factz_cp_type::FACTZ_CP_SADDLE,
        CpType::Source => factz_cp_type::FACTZ_CP_SOURCE,
        CpType::Sink => factz_cp_type::FACTZ_CP_SINK,
        CpType::RepellingFocus => factz_cp_type::FACTZ_CP_REPELLING_FOCUS,
        CpType::AttractingFocus => factz_cp_type::FACTZ_CP_ATTRACTING_FOCUS,
        CpType::Center => factz_cp_type::FACTZ_CP_CENTER,
    }
}

/// Finds every critical point of the field `u`, `v` (`ny * nx` floats each),
/// in triangle-id order, with exact existence and type (the same test the
/// compressor preserves). Two-call pattern: `*count_out` receives the number
/// of critical points; they are written to `out` when `capacity` holds them
/// all, else nothing is written and the result is FACTZ_BUFFER_TOO_SMALL
/// (`out` may be NULL with `capacity` 0 to ask for the count; a field without
/// critical points then gives FACTZ_OK). Triangles with a NaN or Inf vertex
/// hold none.
///
/// # Safety
/// `u`, `v`: NULL or `ny * nx` readable floats each; `count_out`: NULL or a
/// writable size_t; `out`: NULL or `capacity` writable factz_critical_point,
/// not overlapping `u` or `v`. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_field_critical_points(
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    count_out: *mut usize,
    out: *mut factz_critical_point,
    capacity: usize,
) -> factz_status {
    ffi_boundary!("factz_field_critical_points", {
        // SAFETY: the same contract.
        unsafe { critical_points(u, v, ny, nx, count_out, out, capacity) }
    })
}

/// factz_field_critical_points for a float64 field (`ny * nx` doubles each),
/// with the exact test on the doubles themselves (not their float rounding).
///
/// # Safety
/// As factz_field_critical_points, with `u`, `v`: NULL or `ny * nx` readable
/// doubles each.
#[no_mangle]
pub unsafe extern "C" fn factz_field_critical_points_f64(
    u: *const f64,
    v: *const f64,
    ny: usize,
    nx: usize,
    count_out: *mut usize,
    out: *mut factz_critical_point,
    capacity: usize,
) -> factz_status {
    ffi_boundary!("factz_field_critical_points_f64", {
        // SAFETY: the same contract.
        unsafe { critical_points(u, v, ny, nx, count_out, out, capacity) }
    })
}

/// The body of both critical-point entry points.
///
/// # Safety
/// The contract of factz_field_critical_points, for elements of type `T`.
unsafe fn critical_points<T: Real>(
    u: *const T,
    v: *const T,
    ny: usize,
    nx: usize,
    count_out: *mut usize,
    out: *mut factz_critical_point,
    capacity: usize,
) -> Result<(), Failure> {
    check_scalar_out(count_out, "count_out")?;
    // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
    unsafe { count_out.write(0) };
    let n = vertices(ny, nx)?;
    // SAFETY: u and v hold n readable floats each (the caller's contract).
    let (us, vs) = unsafe { (buffers::input(u, n, "u")?, buffers::input(v, n, "v")?) };
    check_output(out, capacity, "out")?;
    let so = Span::of(out.cast_const(), capacity);
    check_disjoint(so, "out", Span::of(u, n), "u")?;
    check_disjoint(so, "out", Span::of(v, n), "v")?;
    let cps = topology::extract(us, vs, ny, nx);
    // SAFETY: as above.
    unsafe { count_out.write(cps.len()) };
    if cps.len() > capacity {
        return Err(Failure::too_small(format!(
            "the field has {} critical points, capacity is {capacity} (*count_out holds the count)",
            cps.len()
        )));
    }
    for (k, cp) in cps.iter().enumerate() {
        let (det, tr, disc) = cp.sig.signs().unwrap_or((0, 0, 0));
        let c = factz_critical_point {
            triangle: cp.tri as u64,
            i: cp.i as u64,
            j: cp.j as u64,
            x: cp.x,
            y: cp.y,
            kind: cp_type(cp.kind) as u32,
            half: match cp.half {
                Half::T0 => 0,
                Half::T1 => 1,
            },
            det_sign: det as i32,
            trace_sign: tr as i32,
            disc_sign: disc as i32,
            reserved: 0,
        };
        // SAFETY: out holds capacity > k writable elements (checked non-NULL,
        // aligned; sized by the caller's contract), disjoint from u and v.
        unsafe { out.add(k).write(c) };
    }
    Ok(())
}
