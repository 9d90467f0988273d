//! 3D particle positions through the C ABI: configuration, compression that
//! keeps every friends-of-friends link, decompression, stream info, the
//! "bring your own compressor" correction, and FoF groups on their own.
//!
//! Positions are f32. AoS functions take one array `xyz` of `3 * n` floats,
//! (x, y, z) per particle; `_soa` functions three arrays `x`, `y`, `z` of `n`
//! floats each. Particle order is preserved. All pointers are host memory.
//!
//! Link rule (the one the guarantee and the FoF functions use): particles i and
//! j are linked iff `dx*dx + dy*dy + dz*dz <= b*b`, evaluated in double, each
//! `d` the double difference of the two floats (rounded to double for float64
//! positions), wrapped to the minimum image `d - L * round(d / L)` in a
//! periodic box of side L.

use super::backend::factz_backend;
use super::boundary::Failure;
use super::buffers::{self, check_disjoint, check_output, check_scalar_out, Span};
use super::field::{
    factz_bound_kind, FACTZ_CHUNK_OF_LARGER, FACTZ_LOSSLESS_FALLBACK, FACTZ_VERIFY,
};
use super::status::factz_status;
use crate::backend::Backend;
use crate::codec::Coder;
use crate::field::{Bound, Layout};
use crate::particles::{
    self, correct, fof, geometry, Base, Linking, ParticleConfig, ParticleInfo, ParticleReport,
    Source, Space, MAX_PARTICLES,
};
use crate::real::Real;
use std::mem::size_of;

/// Config `linking_kind`: `linking` is the linking length b itself.
pub const FACTZ_LINK_LENGTH: u32 = 1;
/// Config `linking_kind`: `linking` is eta, and `b = eta * (V / n)^(1/3)` with V
/// the periodic box's volume or the particles' bounding-box volume (default,
/// eta 0.2).
pub const FACTZ_LINK_ETA: u32 = 2;

/// Config `base`: factz's built-in base compressor (default; always available).
pub const FACTZ_BASE_BUILTIN: u32 = 1;
/// Config `base`: SZ3 as the base compressor (only in builds with the "sz3"
/// feature; FACTZ_UNSUPPORTED otherwise).
pub const FACTZ_BASE_SZ3: u32 = 2;
/// Config `base`: ZFP as the base compressor (only in builds with the "zfp"
/// feature; FACTZ_UNSUPPORTED otherwise).
pub const FACTZ_BASE_ZFP: u32 = 3;

/// Report/info `source`: the particles are stored losslessly (zero bound, no
/// particles, or the lossy stream would not have been smaller). Sources 1..=3
/// are the FACTZ_BASE_* values: that base compressor plus the correction.
pub const FACTZ_SOURCE_LOSSLESS: u32 = 0;
/// Report/info `source`: a correction stream for positions another compressor
/// decoded (factz_particles_correct); factz_particles_apply uses it,
/// factz_particles_decompress refuses it.
pub const FACTZ_SOURCE_EXTERNAL: u32 = 4;

/// Info `method` of a base-compressor stream: the link-preserving optimiser
/// made the correction (also what streams written before the record say).
pub const FACTZ_METHOD_CORRECT: u32 = 0;
/// Info `method`: per-particle safe radii made the correction. The
/// compressor's automatic choice (the default) records the one it kept.
pub const FACTZ_METHOD_SAFE: u32 = 1;

/// Particle compression settings. Set `struct_size = sizeof(factz_particles_config)`,
/// then call factz_particles_config_default and change what you need:
///
/// ```c
/// factz_particles_config cfg = { .struct_size = sizeof cfg };
/// factz_particles_config_default(&cfg);
/// cfg.bound_kind = FACTZ_BOUND_ABS; cfg.bound = 1e-3;
/// cfg.linking_kind = FACTZ_LINK_LENGTH; cfg.linking = 0.2;
/// cfg.box_side = 100.0; // periodic box of side 100
/// ```
///
/// Fields documented as holding constants accept only those values
/// (FACTZ_INVALID_ARGUMENT otherwise).
///
/// Guarantee: every coordinate comes back within the absolute bound and every
/// pair of particles keeps its link status, so every friends-of-friends group
/// survives. Link rule (also that of factz_fof_labels): particles i and j are
/// linked iff `dx*dx + dy*dy + dz*dz <= b*b`, evaluated in double, summed in
/// that order, each `d` the double difference of the two floats, wrapped to the
/// minimum image `d - L * round(d / L)` in a periodic box of side L. A particle
/// with a NaN or Inf coordinate links nothing.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_particles_config {
    /// sizeof(factz_particles_config) as the caller compiled it (version of this struct).
    pub struct_size: u32,
    /// A factz_bound_kind: FACTZ_BOUND_ABS (every coordinate within `bound`) or
    /// FACTZ_BOUND_REL (`bound * (max - min)` over every finite coordinate of all
    /// three axes; default, with bound 1e-3).
    pub bound_kind: u32,
    /// The error bound: absolute value or relative factor; finite and >= 0
    /// (0 stores the particles losslessly).
    pub bound: f64,
    /// FACTZ_LINK_LENGTH or FACTZ_LINK_ETA: how `linking` is read.
    pub linking_kind: u32,
    /// FACTZ_BASE_BUILTIN, FACTZ_BASE_SZ3 or FACTZ_BASE_ZFP: the base compressor
    /// whose output the correction fixes. A base not compiled into this build
    /// gives FACTZ_UNSUPPORTED. factz_particles_correct ignores it.
    pub base: u32,
    /// The linking length b (FACTZ_LINK_LENGTH) or eta (FACTZ_LINK_ETA, default
    /// 0.2); finite and > 0.
    pub linking: f64,
    /// 0 = open boundaries; > 0 = side L of a periodic box (minimum-image
    /// distances; b must not exceed L / 2).
    pub box_side: f64,
    /// A factz_coder (default FACTZ_CODER_RANS).
    pub coder: u32,
    /// 0 = no zstd stage; 1..=22 = zstd level on top of the entropy coder.
    pub zstd_level: i32,
    /// FACTZ_CHUNK_OF_LARGER (the particles are one spatial chunk of a larger
    /// set: those within `b + 2 sqrt(3) xi` of the chunk's bounding-box faces are
    /// stored exactly, so links across chunks hold) | FACTZ_VERIFY (decode and
    /// compare before returning; store losslessly if anything differs), or 0.
    /// factz_particles_correct ignores FACTZ_VERIFY.
    pub flags: u32,
    /// Bits m of each quantized coordinate edit, 2..=24 (default 16).
    pub edit_bits: u32,
    /// Adam step of the correction, in units of the absolute bound; finite and > 0
    /// (default 0.1).
    pub learning_rate: f64,
    /// Optimiser iteration cap (default 1000); particles still in violated pairs
    /// afterwards are stored exactly, so the guarantee never depends on it.
    pub max_iters: u32,
    /// A factz_backend: where factz_particles_compress* run (default
    /// FACTZ_BACKEND_CPU; the stream is the same on every backend: the GPU runs
    /// the vulnerable-pair search and the optimiser). factz_particles_correct
    /// and the MPI functions run on the CPU; the report's FACTZ_RAN_ON_GPU flag
    /// says where a compression ran.
    pub backend: u32,
    /// Stop once the optimiser's loss (in units of the bound squared) is at or
    /// below this; finite and >= 0 (default 0).
    pub tolerance: f64,
}

/// What a particle compression or correction did, beside the bytes. Set
/// `struct_size` before the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_particles_report {
    /// sizeof(factz_particles_report) as the caller compiled it.
    pub struct_size: u32,
    /// FACTZ_VERIFY (the verify pass ran) | FACTZ_LOSSLESS_FALLBACK (it found a
    /// difference and the particles were stored losslessly; never expected, a
    /// bug report is welcome), or 0.
    pub flags: u32,
    /// The absolute bound used: every coordinate is within it (`<=`).
    pub abs_bound: f64,
    /// The linking length b whose links are kept.
    pub linking_length: f64,
    /// What the stream holds: FACTZ_SOURCE_LOSSLESS, a FACTZ_BASE_* value, or
    /// FACTZ_SOURCE_EXTERNAL (a correction stream).
    pub source: u32,
    /// Optimiser iterations run.
    pub iterations: u32,
    /// Particles stored exactly (non-finite, out of bound in the base output,
    /// near chunk faces, fallback; all of them when stored losslessly).
    pub exact_particles: u64,
    /// Pairs whose link status a perturbation within the bound could change.
    pub vulnerable_pairs: u64,
    /// Vulnerable pairs whose status the base output changed.
    pub violated_before: u64,
    /// Particles the optimiser moved.
    pub active_particles: u64,
    /// Pairs still violated after optimisation and edit quantization (their
    /// particles were then stored exactly).
    pub violated_after: u64,
    /// Particles stored exactly by that fallback.
    pub fallback_particles: u64,
    /// Coordinates carrying a quantized edit.
    pub edited_coords: u64,
    /// Stored bytes of the base compressor's sections.
    pub base_bytes: u64,
    /// Stored bytes of the correction's sections (exact particles and edits).
    pub correction_bytes: u64,
}

/// What a particle stream says about itself. Set `struct_size` before the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct factz_particles_stream_info {
    /// sizeof(factz_particles_stream_info) as the caller compiled it.
    pub struct_size: u32,
    /// The stream format version.
    pub format_version: u32,
    /// Particle count.
    pub n: u64,
    /// A factz_layout: FACTZ_LAYOUT_AOS (compressed from one xyz array) or
    /// FACTZ_LAYOUT_SOA (from three arrays). Either decompress function reads it.
    pub layout: u32,
    /// FACTZ_SOURCE_LOSSLESS, a FACTZ_BASE_* value, or FACTZ_SOURCE_EXTERNAL.
    pub source: u32,
    /// A factz_coder.
    pub coder: u32,
    /// 0 = no zstd stage, else its level.
    pub zstd_level: i32,
    /// The absolute error bound the stream was written with.
    pub abs_bound: f64,
    /// The linking length b whose links the stream keeps.
    pub linking_length: f64,
    /// 0 = open boundaries, else the periodic box side.
    pub box_side: f64,
    /// Bits of each coordinate edit.
    pub edit_bits: u32,
    /// FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY | FACTZ_LOSSLESS_FALLBACK, or 0.
    pub flags: u32,
    /// FACTZ_SOURCE_EXTERNAL: CRC-32 of the decoded positions (little-endian
    /// float bytes, AoS) the correction applies to; 0 otherwise.
    pub external_checksum: u32,
    /// Sources 1..=3: FACTZ_METHOD_CORRECT or FACTZ_METHOD_SAFE; 0 otherwise.
    pub method: u32,
    /// Element type of the positions: 1 float32, 2 float64 (decode with the
    /// _f64 functions). Written only for callers whose struct_size has it.
    pub dtype: u32,
    /// 0.
    pub reserved: u32,
}

// The v1 layouts are frozen: sizes the C header's users compiled against.
const _: () = assert!(size_of::<factz_particles_config>() == 80);
const _: () = assert!(size_of::<factz_particles_report>() == 104);
const _: () = assert!(size_of::<factz_particles_stream_info>() == 80);
/// factz_particles_stream_info before `dtype` (ABI 1.x callers).
const INFO_V1_SIZE: usize = 72;

/// struct_size values each versioned struct accepts (oldest first).
const CONFIG_SIZES: &[usize] = &[size_of::<factz_particles_config>()];
const REPORT_SIZES: &[usize] = &[size_of::<factz_particles_report>()];
const INFO_SIZES: &[usize] = &[INFO_V1_SIZE, size_of::<factz_particles_stream_info>()];

fn flag(on: bool, bit: u32) -> u32 {
    if on {
        bit
    } else {
        0
    }
}

fn source_id(s: Source) -> u32 {
    u32::from(s.mode())
}

fn base_from(x: u32) -> Result<Base, Failure> {
    match x {
        FACTZ_BASE_BUILTIN => Ok(Base::Builtin),
        FACTZ_BASE_SZ3 => Ok(Base::Sz3),
        FACTZ_BASE_ZFP => Ok(Base::Zfp),
        b => Err(Failure::invalid(format!(
            "config->base is {b}; expected FACTZ_BASE_BUILTIN (1), FACTZ_BASE_SZ3 (2) or FACTZ_BASE_ZFP (3)"
        ))),
    }
}

fn base_id(b: Base) -> u32 {
    match b {
        Base::Builtin => FACTZ_BASE_BUILTIN,
        Base::Sz3 => FACTZ_BASE_SZ3,
        Base::Zfp => FACTZ_BASE_ZFP,
    }
}

impl factz_particles_config {
    fn defaults() -> factz_particles_config {
        let d = ParticleConfig::default();
        let (bound_kind, bound) = match d.bound {
            Bound::Abs(x) => (factz_bound_kind::FACTZ_BOUND_ABS, x),
            Bound::Rel(x) => (factz_bound_kind::FACTZ_BOUND_REL, x),
        };
        let (linking_kind, linking) = match d.linking {
            Linking::Length(b) => (FACTZ_LINK_LENGTH, b),
            Linking::Eta(e) => (FACTZ_LINK_ETA, e),
        };
        factz_particles_config {
            struct_size: size_of::<factz_particles_config>() as u32,
            bound_kind: bound_kind as u32,
            bound,
            linking_kind,
            base: base_id(d.base),
            linking,
            box_side: d.period.unwrap_or(0.0),
            coder: d.coder as u32,
            zstd_level: d.zstd_level,
            flags: flag(d.chunk_of_larger, FACTZ_CHUNK_OF_LARGER) | flag(d.verify, FACTZ_VERIFY),
            edit_bits: d.correction.edit_bits,
            learning_rate: d.correction.learning_rate,
            max_iters: d.correction.max_iters,
            backend: factz_backend::FACTZ_BACKEND_CPU as u32,
            tolerance: d.correction.tolerance,
        }
    }

    /// The library configuration this C struct means (layout AoS), or why it
    /// means none. A base that is not compiled in is FACTZ_UNSUPPORTED.
    fn to_config(self) -> Result<ParticleConfig, Failure> {
        let bound = match self.bound_kind {
            1 => Bound::Abs(self.bound),
            2 => Bound::Rel(self.bound),
            k => {
                return Err(Failure::invalid(format!(
                    "config->bound_kind is {k}; expected FACTZ_BOUND_ABS (1) or FACTZ_BOUND_REL (2)"
                )))
            }
        };
        let linking = match self.linking_kind {
            FACTZ_LINK_LENGTH => Linking::Length(self.linking),
            FACTZ_LINK_ETA => Linking::Eta(self.linking),
            k => return Err(bad_linking_kind("config->linking_kind", k)),
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
        let base = base_from(self.base)?;
        let known = FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY;
        if self.flags & !known != 0 {
            return Err(Failure::invalid(format!(
                "config->flags has unknown bits {:#x}; known: FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY",
                self.flags & !known
            )));
        }
        super::backend::from_c(self.backend)?;
        let period = period_from(self.box_side, "config->box_side")?;
        let cfg = ParticleConfig {
            bound,
            linking,
            period,
            base,
            coder,
            zstd_level: self.zstd_level,
            chunk_of_larger: self.flags & FACTZ_CHUNK_OF_LARGER != 0,
            verify: self.flags & FACTZ_VERIFY != 0,
            layout: Layout::Aos,
            correction: correct::Options {
                edit_bits: self.edit_bits,
                learning_rate: self.learning_rate,
                max_iters: self.max_iters,
                tolerance: self.tolerance,
                ..correct::Options::default()
            },
        };
        particles::check_config(&cfg).map_err(|e| {
            Failure::new(
                factz_status::from_kind(e.kind),
                format!("config: {}", e.message),
            )
        })?;
        if let Linking::Length(b) = cfg.linking {
            geometry::check_linking(b, Space { period: cfg.period })?;
        }
        Ok(cfg)
    }
}

fn bad_linking_kind(what: &str, k: u32) -> Failure {
    Failure::invalid(format!(
        "{what} is {k}; expected FACTZ_LINK_LENGTH (1) or FACTZ_LINK_ETA (2)"
    ))
}

/// The periodic box a C `box_side` means: 0 is open, finite > 0 a box side.
fn period_from(box_side: f64, what: &str) -> Result<Option<f64>, Failure> {
    if box_side == 0.0 {
        Ok(None)
    } else if box_side.is_finite() && box_side > 0.0 {
        Ok(Some(box_side))
    } else {
        Err(Failure::invalid(format!(
            "{what} is {box_side}; expected 0 (open boundaries) or a finite periodic box side > 0"
        )))
    }
}

/// Reads and checks a caller's config, and the backend it names.
///
/// # Safety
/// `cfg` is NULL or points to a factz_particles_config of at least its struct_size bytes.
pub(crate) unsafe fn read_config_backend(
    cfg: *const factz_particles_config,
) -> Result<(ParticleConfig, Backend), Failure> {
    // SAFETY: the caller's contract: at least the 4 bytes of struct_size.
    let size =
        unsafe { buffers::struct_size(cfg, CONFIG_SIZES, "config", "factz_particles_config") }?;
    // SAFETY: struct_size bytes are readable; the struct is integers and floats.
    let c = unsafe { buffers::read_versioned(cfg, size, factz_particles_config::defaults()) };
    Ok((c.to_config()?, super::backend::from_c(c.backend)?))
}

/// Checks a caller's particle count and returns the number of floats of an AoS
/// array (`3 * n`), refusing counts one stream cannot hold before any multiplication.
pub(crate) fn values(n: usize) -> Result<usize, Failure> {
    if n > MAX_PARTICLES {
        return Err(Failure::invalid(format!(
            "n = {n} particles is too large: one stream holds at most {MAX_PARTICLES}; compress in chunks"
        )));
    }
    n.checked_mul(3).ok_or_else(|| {
        Failure::invalid(format!(
            "n = {n} particles is too large for this platform's size_t"
        ))
    })
}

/// Checks a caller's versioned report struct; 0 when `report` is NULL.
///
/// # Safety
/// `report` is NULL or points to at least 4 readable bytes.
unsafe fn report_size(report: *mut factz_particles_report) -> Result<usize, Failure> {
    if report.is_null() {
        return Ok(0);
    }
    // SAFETY: the caller's contract: struct_size is readable.
    unsafe {
        buffers::struct_size(
            report.cast_const(),
            REPORT_SIZES,
            "report",
            "factz_particles_report",
        )
    }
}

/// The C report of `r`, with `extra` flags (FACTZ_RAN_ON_GPU).
fn report_struct(size: usize, r: &ParticleReport, extra: u32) -> factz_particles_report {
    let s = &r.correction;
    factz_particles_report {
        struct_size: size as u32,
        flags: flag(r.verified, FACTZ_VERIFY)
            | flag(r.lossless_fallback, FACTZ_LOSSLESS_FALLBACK)
            | extra,
        abs_bound: r.abs_bound,
        linking_length: r.linking_length,
        source: source_id(r.source),
        iterations: s.iterations,
        exact_particles: r.exact_particles as u64,
        vulnerable_pairs: s.vulnerable_pairs as u64,
        violated_before: s.violated_before as u64,
        active_particles: s.active_particles as u64,
        violated_after: s.violated_after as u64,
        fallback_particles: s.fallback_particles as u64,
        edited_coords: s.edited_coords as u64,
        base_bytes: r.base_bytes as u64,
        correction_bytes: r.correction_bytes as u64,
    }
}

/// Writes a finished stream: its length to `*out_len`, the report, then the
/// bytes if they fit (FACTZ_BUFFER_TOO_SMALL otherwise).
///
/// # Safety
/// `out_len` checked non-NULL and aligned; `out` checked for `out_capacity`
/// writable bytes disjoint from the inputs; `report` checked by [`report_size`]
/// (`report_size` is its result).
unsafe fn deliver(
    (c, extra_flags): (&particles::Compressed, u32),
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
    report_size: usize,
    max_hint: &str,
) -> Result<(), Failure> {
    let len = c.bytes.len();
    // SAFETY: out_len was checked non-NULL and aligned by the caller of this function.
    unsafe { out_len.write(len) };
    if report_size > 0 {
        // SAFETY: report points to report_size (a known size) writable bytes; no padding.
        unsafe {
            buffers::write_versioned(
                report,
                report_size,
                &report_struct(report_size, &c.report, extra_flags),
            )
        };
    }
    if len > out_capacity {
        return Err(Failure::too_small(format!(
            "the stream needs {len} bytes, out_capacity is {out_capacity} (*out_len holds the size; \
             {max_hint} gives a size that always suffices)"
        )));
    }
    // SAFETY: out holds out_capacity >= len writable bytes (checked), disjoint from
    // our own c.bytes.
    unsafe { buffers::copy_out(out, &c.bytes) };
    Ok(())
}

/// Fills `*cfg` with the defaults: relative bound 1e-3, eta 0.2, open
/// boundaries, built-in base, rANS, no zstd, no flags, 16 edit bits, learning
/// rate 0.1, 1000 iterations, tolerance 0. The caller sets
/// `cfg->struct_size = sizeof(factz_particles_config)` first; the other fields
/// may hold anything.
///
/// # Safety
/// `cfg` is NULL or points to a writable factz_particles_config of its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_config_default(
    cfg: *mut factz_particles_config,
) -> factz_status {
    ffi_boundary!("factz_particles_config_default", {
        // SAFETY: the caller's contract: struct_size is readable.
        let size = unsafe {
            buffers::struct_size(
                cfg.cast_const(),
                CONFIG_SIZES,
                "config",
                "factz_particles_config",
            )
        }?;
        let mut d = factz_particles_config::defaults();
        d.struct_size = size as u32;
        // SAFETY: struct_size (a known size) bytes are writable; no padding in the struct.
        unsafe { buffers::write_versioned(cfg, size, &d) };
        Ok(())
    })
}

/// The largest stream factz_particles_compress (AoS or SoA) can write for `n`
/// particles, in `*out` (12 bytes per particle plus a header: the stream falls
/// back to plain storage rather than exceed it). Size the output buffer with it
/// and compression never fails with FACTZ_BUFFER_TOO_SMALL. It does not bound
/// correction streams (see factz_particles_max_correction_size). `n` may be 0.
///
/// # Safety
/// `out` is NULL or points to a writable size_t.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_max_compressed_size(
    n: usize,
    out: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_particles_max_compressed_size", {
        check_scalar_out(out, "out")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out.write(0) };
        values(n)?;
        let size = particles::max_compressed_size(n)?;
        // SAFETY: as above.
        unsafe { out.write(size) };
        Ok(())
    })
}

/// The largest correction stream factz_particles_correct can write for `n`
/// particles, in `*out`: the same as factz_particles_max_compressed_size (a
/// correction that would be larger stores every particle as plain words instead).
/// `n` may be 0.
///
/// # Safety
/// `out` is NULL or points to a writable size_t.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_max_correction_size(
    n: usize,
    out: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_particles_max_correction_size", {
        check_scalar_out(out, "out")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out.write(0) };
        values(n)?;
        let size = particles::max_compressed_size(n)?;
        // SAFETY: as above.
        unsafe { out.write(size) };
        Ok(())
    })
}

/// The shared body of the compress entry points, once the input is AoS.
///
/// # Safety
/// The pointer contracts of factz_particles_compress_ex (`inputs` names the
/// caller's input buffers for the overlap check).
#[allow(clippy::too_many_arguments)]
unsafe fn compress_into<T: Real>(
    (cfg, backend): (ParticleConfig, Backend),
    layout: Layout,
    pos: &[T],
    inputs: &[(Span, &str)],
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
) -> Result<(), Failure> {
    // SAFETY: the same contract.
    unsafe {
        compress_into_with(
            cfg,
            layout,
            pos,
            inputs,
            out,
            out_capacity,
            out_len,
            report,
            |pos, cfg| match T::as_f32(pos) {
                Some(pos) => {
                    let (c, ran) = crate::backend::compress_particles(backend, pos, cfg)?;
                    Ok((c, super::backend::ran_flags(&ran)))
                }
                // float64 positions: the CPU (the GPU corrector takes float32).
                None if matches!(backend, Backend::Cuda) => Err(crate::Error::unsupported(
                    "the CUDA backend takes float32 particles only; float64 runs on the CPU \
                     (FACTZ_BACKEND_CPU or FACTZ_BACKEND_AUTO)",
                )),
                None => Ok((particles::compress(pos, cfg)?, 0)),
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
    mut cfg: ParticleConfig,
    layout: Layout,
    pos: &[T],
    inputs: &[(Span, &str)],
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
    // Returns the stream and report flags of its own (FACTZ_RAN_ON_GPU).
    compressor: impl FnOnce(&[T], &ParticleConfig) -> crate::Result<(particles::Compressed, u32)>,
) -> Result<(), Failure> {
    check_output(out, out_capacity, "out")?;
    for &(span, name) in inputs {
        check_disjoint(Span::of(out.cast_const(), out_capacity), "out", span, name)?;
    }
    // SAFETY: the caller's contract on report.
    let report_size = unsafe { report_size(report) }?;
    cfg.layout = layout;
    let (c, flags) = compressor(pos, &cfg)?;
    // SAFETY: out_len, out and report checked above and by the caller.
    unsafe {
        deliver(
            (&c, flags),
            out,
            out_capacity,
            out_len,
            report,
            report_size,
            "factz_particles_max_compressed_size",
        )
    }
}

/// Compresses `n` particles given as one array `xyz` of `3 * n` floats, (x, y, z)
/// per particle, into `out` (capacity `out_capacity` bytes) and writes the
/// stream's length to `*out_len`. Every coordinate comes back within the bound
/// (NaN and Inf bit-exact) and every pair's link status under the linking length
/// (see factz_particles_config) is unchanged, so every FoF group survives. The
/// stream records FACTZ_LAYOUT_AOS. `n` may be 0 (`xyz` may then be NULL).
///
/// FACTZ_BUFFER_TOO_SMALL when the stream does not fit: `*out_len` then holds
/// the size it needs (`out` may be NULL with `out_capacity` 0 to ask, at the
/// cost of one compression; factz_particles_max_compressed_size avoids that).
/// On other failures `*out_len` is 0. FACTZ_UNSUPPORTED when the configured
/// base compressor is not compiled in.
///
/// # Safety
/// `xyz`: NULL or `3 * n` readable floats; `cfg`: NULL or a
/// factz_particles_config of its struct_size; `out`: NULL or `out_capacity`
/// writable bytes, not overlapping `xyz`; `out_len`: NULL or a writable size_t.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress(
    xyz: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the same contract, with no report.
    unsafe {
        factz_particles_compress_ex(
            xyz,
            n,
            cfg,
            out,
            out_capacity,
            out_len,
            std::ptr::null_mut(),
        )
    }
}

/// factz_particles_compress with a report: when `report` is not NULL (and its
/// struct_size set), it receives the bound and linking length used, the
/// correction's statistics and the stored sizes, on success and on
/// FACTZ_BUFFER_TOO_SMALL.
///
/// # Safety
/// As factz_particles_compress; `report`: NULL or a writable
/// factz_particles_report of its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_ex(
    xyz: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
) -> factz_status {
    ffi_boundary!("factz_particles_compress", {
        // SAFETY: the same contract.
        unsafe { compress_aos(xyz, n, cfg, (out, out_capacity, out_len), report) }
    })
}

/// The body of factz_particles_compress_ex and its _f64 twin.
///
/// # Safety
/// The contract of factz_particles_compress_ex, for elements of type `T`.
unsafe fn compress_aos<T: Real>(
    xyz: *const T,
    n: usize,
    cfg: *const factz_particles_config,
    (out, out_capacity, out_len): (*mut u8, usize, *mut usize),
    report: *mut factz_particles_report,
) -> Result<(), Failure> {
    check_scalar_out(out_len, "out_len")?;
    // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
    unsafe { out_len.write(0) };
    // SAFETY: the caller's contract on cfg.
    let cfg = unsafe { read_config_backend(cfg) }?;
    let len = values(n)?;
    // SAFETY: xyz holds 3n readable values (the caller's contract).
    let pos = unsafe { buffers::input(xyz, len, "xyz") }?;
    let inputs = [(Span::of(xyz, len), "xyz")];
    // SAFETY: the caller's contract on out, out_len and report.
    unsafe {
        compress_into(
            cfg,
            Layout::Aos,
            pos,
            &inputs,
            out,
            out_capacity,
            out_len,
            report,
        )
    }
}

/// Compresses `n` particles given as three arrays `x`, `y`, `z` of `n` floats
/// each. The stream records FACTZ_LAYOUT_SOA. Otherwise as
/// factz_particles_compress (the same particles give the same guarantee).
///
/// # Safety
/// As factz_particles_compress, with `x`, `y`, `z`: NULL or `n` readable floats each.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_soa(
    x: *const f32,
    y: *const f32,
    z: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the same contract, with no report.
    unsafe {
        factz_particles_compress_soa_ex(
            x,
            y,
            z,
            n,
            cfg,
            out,
            out_capacity,
            out_len,
            std::ptr::null_mut(),
        )
    }
}

/// factz_particles_compress_soa with a report (see factz_particles_compress_ex).
///
/// # Safety
/// As factz_particles_compress_soa; `report`: NULL or a writable
/// factz_particles_report of its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_soa_ex(
    x: *const f32,
    y: *const f32,
    z: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
) -> factz_status {
    ffi_boundary!("factz_particles_compress_soa", {
        // SAFETY: the same contract.
        unsafe { compress_soa([x, y, z], n, cfg, (out, out_capacity, out_len), report) }
    })
}

/// The body of factz_particles_compress_soa_ex and its _f64 twin.
///
/// # Safety
/// The contract of factz_particles_compress_soa_ex, for elements of type `T`.
unsafe fn compress_soa<T: Real>(
    [x, y, z]: [*const T; 3],
    n: usize,
    cfg: *const factz_particles_config,
    (out, out_capacity, out_len): (*mut u8, usize, *mut usize),
    report: *mut factz_particles_report,
) -> Result<(), Failure> {
    check_scalar_out(out_len, "out_len")?;
    // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
    unsafe { out_len.write(0) };
    // SAFETY: the caller's contract on cfg.
    let cfg = unsafe { read_config_backend(cfg) }?;
    values(n)?;
    // SAFETY: x, y and z hold n readable values each (the caller's contract).
    let (xs, ys, zs) = unsafe {
        (
            buffers::input(x, n, "x")?,
            buffers::input(y, n, "y")?,
            buffers::input(z, n, "z")?,
        )
    };
    let pos = particles::interleave3(xs, ys, zs);
    let inputs = [
        (Span::of(x, n), "x"),
        (Span::of(y, n), "y"),
        (Span::of(z, n), "z"),
    ];
    // SAFETY: the caller's contract on out, out_len and report.
    unsafe {
        compress_into(
            cfg,
            Layout::Soa,
            &pos,
            &inputs,
            out,
            out_capacity,
            out_len,
            report,
        )
    }
}

/// Checks that a stream holds `n` particles (header only) and returns its info.
fn check_count(stream: &[u8], n: usize) -> Result<ParticleInfo, Failure> {
    let info = particles::info(stream)?;
    if info.n != n {
        return Err(Failure::invalid(format!(
            "the output buffers hold {n} particles but the stream holds {} \
             (factz_particles_info reads the count)",
            info.n
        )));
    }
    Ok(info)
}

/// Decodes a stream already checked by [`check_count`] into a new AoS array. The
/// caller's buffers vouch for the count, so this uses `decompress_into` (no
/// expansion cap).
fn decode<T: Real>(stream: &[u8], len: usize) -> Result<Vec<T>, Failure> {
    let mut pos = vec![T::default(); len];
    particles::decompress_into(stream, &mut pos)?;
    Ok(pos)
}

/// Decompresses a particle stream of `len` bytes into one array `xyz` of
/// `3 * n` floats, (x, y, z) per particle, whatever layout the stream records.
/// `n` is the caller's buffer size in particles and must match the stream's
/// count (FACTZ_INVALID_ARGUMENT otherwise; factz_particles_info reads it).
/// A correction stream (FACTZ_SOURCE_EXTERNAL) is FACTZ_INVALID_ARGUMENT: apply
/// it with factz_particles_apply. On failure the buffer's contents are
/// unspecified.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `xyz`: NULL or `3 * n` writable
/// floats, not overlapping the stream. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_decompress(
    stream: *const u8,
    len: usize,
    xyz: *mut f32,
    n: usize,
) -> factz_status {
    ffi_boundary!("factz_particles_decompress", {
        // SAFETY: the same contract.
        unsafe { decompress_aos(stream, len, xyz, n) }
    })
}

/// The body of factz_particles_decompress and its _f64 twin.
///
/// # Safety
/// The contract of factz_particles_decompress, for elements of type `T`.
unsafe fn decompress_aos<T: Real>(
    stream: *const u8,
    len: usize,
    xyz: *mut T,
    n: usize,
) -> Result<(), Failure> {
    // SAFETY: stream holds len readable bytes (the caller's contract).
    let bytes = unsafe { buffers::input(stream, len, "stream") }?;
    let count = values(n)?;
    check_count(bytes, n)?;
    check_output(xyz, count, "xyz")?;
    check_disjoint(
        Span::of(xyz.cast_const(), count),
        "xyz",
        Span::of(stream, len),
        "stream",
    )?;
    let pos = decode::<T>(bytes, count)?;
    // SAFETY: xyz holds 3n writable values (checked non-NULL, aligned; sized by
    // the caller's contract) and overlaps nothing we read.
    unsafe { buffers::copy_out(xyz, &pos) };
    Ok(())
}

/// Decompresses a particle stream into three arrays `x`, `y`, `z` of `n` floats
/// each. Otherwise as factz_particles_decompress.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `x`, `y`, `z`: NULL or `n` writable
/// floats each, not overlapping each other or the stream. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_decompress_soa(
    stream: *const u8,
    len: usize,
    x: *mut f32,
    y: *mut f32,
    z: *mut f32,
    n: usize,
) -> factz_status {
    ffi_boundary!("factz_particles_decompress_soa", {
        // SAFETY: the same contract.
        unsafe { decompress_soa(stream, len, [x, y, z], n) }
    })
}

/// The body of factz_particles_decompress_soa and its _f64 twin.
///
/// # Safety
/// The contract of factz_particles_decompress_soa, for elements of type `T`.
unsafe fn decompress_soa<T: Real>(
    stream: *const u8,
    len: usize,
    [x, y, z]: [*mut T; 3],
    n: usize,
) -> Result<(), Failure> {
    // SAFETY: stream holds len readable bytes (the caller's contract).
    let bytes = unsafe { buffers::input(stream, len, "stream") }?;
    let count = values(n)?;
    check_count(bytes, n)?;
    check_output(x, n, "x")?;
    check_output(y, n, "y")?;
    check_output(z, n, "z")?;
    let spans = [
        (Span::of(x.cast_const(), n), "x"),
        (Span::of(y.cast_const(), n), "y"),
        (Span::of(z.cast_const(), n), "z"),
        (Span::of(stream, len), "stream"),
    ];
    for (a, &(sa, na)) in spans.iter().enumerate() {
        for &(sb, nb) in &spans[a + 1..] {
            check_disjoint(sa, na, sb, nb)?;
        }
    }
    let pos = decode::<T>(bytes, count)?;
    let (dx, dy, dz) = particles::deinterleave3(&pos);
    // SAFETY: x, y and z hold n writable values each (checked non-NULL, aligned;
    // sized by the caller's contract) and overlap nothing we read.
    unsafe {
        buffers::copy_out(x, &dx);
        buffers::copy_out(y, &dy);
        buffers::copy_out(z, &dz);
    }
    Ok(())
}

/// factz_particles_max_compressed_size for float64 positions: the largest
/// stream factz_particles_compress_f64 (or _soa_f64) writes for `n` particles.
///
/// # Safety
/// `out` is NULL or points to a writable size_t.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_max_compressed_size_f64(
    n: usize,
    out: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_particles_max_compressed_size_f64", {
        check_scalar_out(out, "out")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out.write(0) };
        values(n)?;
        let size = particles::max_compressed_size_of::<f64>(n)?;
        // SAFETY: as above.
        unsafe { out.write(size) };
        Ok(())
    })
}

/// factz_particles_compress_ex for float64 positions (`3 * n` doubles, AoS):
/// the same guarantee, the link rule on the doubles, a float64 stream
/// (factz_particles_info's `dtype` 2). The built-in or ZFP base
/// (FACTZ_BASE_SZ3 gives FACTZ_UNSUPPORTED), on the CPU (FACTZ_BACKEND_CUDA
/// gives FACTZ_UNSUPPORTED; AUTO runs on the CPU). `report` may be NULL.
///
/// # Safety
/// As factz_particles_compress_ex, with `xyz`: NULL or `3 * n` readable doubles.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_f64(
    xyz: *const f64,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
) -> factz_status {
    ffi_boundary!("factz_particles_compress_f64", {
        // SAFETY: the same contract.
        unsafe { compress_aos(xyz, n, cfg, (out, out_capacity, out_len), report) }
    })
}

/// factz_particles_compress_f64 from three arrays `x`, `y`, `z` of `n`
/// doubles each (the stream records FACTZ_LAYOUT_SOA). `report` may be NULL.
///
/// # Safety
/// As factz_particles_compress_soa_ex, with `x`, `y`, `z`: NULL or `n`
/// readable doubles each.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_soa_f64(
    x: *const f64,
    y: *const f64,
    z: *const f64,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
) -> factz_status {
    ffi_boundary!("factz_particles_compress_soa_f64", {
        // SAFETY: the same contract.
        unsafe { compress_soa([x, y, z], n, cfg, (out, out_capacity, out_len), report) }
    })
}

/// factz_particles_decompress for a float64 stream (factz_particles_info's
/// `dtype` 2): `xyz` receives `3 * n` doubles. A float32 stream gives
/// FACTZ_INVALID_ARGUMENT (decode it with factz_particles_decompress), and the
/// reverse likewise.
///
/// # Safety
/// As factz_particles_decompress, with `xyz`: NULL or `3 * n` writable doubles.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_decompress_f64(
    stream: *const u8,
    len: usize,
    xyz: *mut f64,
    n: usize,
) -> factz_status {
    ffi_boundary!("factz_particles_decompress_f64", {
        // SAFETY: the same contract.
        unsafe { decompress_aos(stream, len, xyz, n) }
    })
}

/// factz_particles_decompress_soa for a float64 stream: `x`, `y`, `z`
/// receive `n` doubles each.
///
/// # Safety
/// As factz_particles_decompress_soa, with `x`, `y`, `z`: NULL or `n`
/// writable doubles each.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_decompress_soa_f64(
    stream: *const u8,
    len: usize,
    x: *mut f64,
    y: *mut f64,
    z: *mut f64,
    n: usize,
) -> factz_status {
    ffi_boundary!("factz_particles_decompress_soa_f64", {
        // SAFETY: the same contract.
        unsafe { decompress_soa(stream, len, [x, y, z], n) }
    })
}

fn info_struct(size: usize, i: &ParticleInfo) -> factz_particles_stream_info {
    factz_particles_stream_info {
        struct_size: size as u32,
        format_version: u32::from(i.version),
        n: i.n as u64,
        layout: i.layout as u32,
        source: source_id(i.source),
        coder: i.coder as u32,
        zstd_level: i.zstd_level,
        abs_bound: i.abs_bound,
        linking_length: i.linking_length,
        box_side: i.period.unwrap_or(0.0),
        edit_bits: i.edit_bits,
        flags: flag(i.chunk_of_larger, FACTZ_CHUNK_OF_LARGER)
            | flag(i.verified, FACTZ_VERIFY)
            | flag(i.lossless_fallback, FACTZ_LOSSLESS_FALLBACK),
        external_checksum: if i.source == Source::External {
            i.tag
        } else {
            0
        },
        method: i.method.map_or(0, |m| m.id()),
        dtype: if i.dtype == "f64" { 2 } else { 1 },
        reserved: 0,
    }
}

/// Reads a particle stream's header (no payload is decoded) into `*out`, whose
/// struct_size the caller sets: count, layout, source, coder, zstd level,
/// bound, linking length, box, edit bits, flags and format version. A stream of
/// another kind (a vector field) is FACTZ_INVALID_ARGUMENT.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `out`: NULL or a writable
/// factz_particles_stream_info of its struct_size. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_info(
    stream: *const u8,
    len: usize,
    out: *mut factz_particles_stream_info,
) -> factz_status {
    ffi_boundary!("factz_particles_info", {
        // SAFETY: the caller's contract: struct_size is readable.
        let size = unsafe {
            buffers::struct_size(
                out.cast_const(),
                INFO_SIZES,
                "out",
                "factz_particles_stream_info",
            )
        }?;
        // SAFETY: stream holds len readable bytes (the caller's contract).
        let bytes = unsafe { buffers::input(stream, len, "stream") }?;
        let info = particles::info(bytes)?;
        // SAFETY: out holds size (a known size) writable bytes; no padding.
        unsafe { buffers::write_versioned(out, size, &info_struct(size, &info)) };
        Ok(())
    })
}

/// Bring your own compressor: given the original positions `orig` and what
/// another compressor decoded for them, `decoded` (both `3 * n` floats, AoS,
/// same particle order), writes a correction stream to `out` (capacity
/// `out_capacity` bytes) and its length to `*out_len`. factz_particles_apply
/// turns those same decoded positions into positions within the bound that keep
/// every link (decoded coordinates outside the bound or non-finite are fixed by
/// exact storage). The config's bound, linking, box, coder, zstd level,
/// FACTZ_CHUNK_OF_LARGER and optimiser fields apply; base and FACTZ_VERIFY are
/// ignored.
///
/// FACTZ_BUFFER_TOO_SMALL when the stream does not fit: `*out_len` then holds
/// the size it needs (`out` may be NULL with `out_capacity` 0 to ask, at the
/// cost of one correction). factz_particles_max_correction_size gives a size
/// that always suffices; factz_particles_max_compressed_size does NOT bound
/// correction streams. On other failures `*out_len` is 0.
///
/// # Safety
/// `orig`, `decoded`: NULL or `3 * n` readable floats each; `cfg`: NULL or a
/// factz_particles_config of its struct_size; `out`: NULL or `out_capacity`
/// writable bytes, not overlapping `orig` or `decoded`; `out_len`: NULL or a
/// writable size_t. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_correct(
    orig: *const f32,
    decoded: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the same contract, with no report.
    unsafe {
        factz_particles_correct_ex(
            orig,
            decoded,
            n,
            cfg,
            out,
            out_capacity,
            out_len,
            std::ptr::null_mut(),
        )
    }
}

/// factz_particles_correct with a report (source FACTZ_SOURCE_EXTERNAL,
/// base_bytes 0), written on success and on FACTZ_BUFFER_TOO_SMALL.
///
/// # Safety
/// As factz_particles_correct; `report`: NULL or a writable
/// factz_particles_report of its struct_size.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_correct_ex(
    orig: *const f32,
    decoded: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_particles_report,
) -> factz_status {
    ffi_boundary!("factz_particles_correct", {
        check_scalar_out(out_len, "out_len")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out_len.write(0) };
        // SAFETY: the caller's contract on cfg: struct_size is readable.
        let size =
            unsafe { buffers::struct_size(cfg, CONFIG_SIZES, "config", "factz_particles_config") }?;
        // SAFETY: struct_size bytes are readable; the struct is integers and floats.
        let mut c =
            unsafe { buffers::read_versioned(cfg, size, factz_particles_config::defaults()) };
        // The base is not used: check the value, then take one that is always built.
        base_from(c.base)?;
        c.base = FACTZ_BASE_BUILTIN;
        c.flags &= !FACTZ_VERIFY;
        let cfg = c.to_config()?;
        let len = values(n)?;
        // SAFETY: orig and decoded hold 3n readable floats each (the caller's contract).
        let (o, d) = unsafe {
            (
                buffers::input(orig, len, "orig")?,
                buffers::input(decoded, len, "decoded")?,
            )
        };
        check_output(out, out_capacity, "out")?;
        let so = Span::of(out.cast_const(), out_capacity);
        check_disjoint(so, "out", Span::of(orig, len), "orig")?;
        check_disjoint(so, "out", Span::of(decoded, len), "decoded")?;
        // SAFETY: the caller's contract on report.
        let report_size = unsafe { report_size(report) }?;
        let c = particles::correct_external(o, d, &cfg)?;
        // SAFETY: out_len, out and report checked above.
        unsafe {
            deliver(
                (&c, 0),
                out,
                out_capacity,
                out_len,
                report,
                report_size,
                "factz_particles_max_correction_size",
            )
        }
    })
}

/// Applies a correction stream from factz_particles_correct to `decoded`
/// (`3 * n` floats, AoS), in place. `decoded` must hold exactly the positions
/// the correction was made for (checked by checksum: FACTZ_INVALID_ARGUMENT
/// otherwise) and `n` the stream's count. A complete stream (not
/// FACTZ_SOURCE_EXTERNAL) is FACTZ_INVALID_ARGUMENT: decompress it. On any
/// failure `decoded` is left unchanged.
///
/// # Safety
/// `stream`: NULL or `len` readable bytes; `decoded`: NULL or `3 * n` readable
/// and writable floats, not overlapping the stream. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_apply(
    stream: *const u8,
    len: usize,
    decoded: *mut f32,
    n: usize,
) -> factz_status {
    ffi_boundary!("factz_particles_apply", {
        // SAFETY: stream holds len readable bytes (the caller's contract).
        let bytes = unsafe { buffers::input(stream, len, "stream") }?;
        let count = values(n)?;
        check_count(bytes, n)?;
        check_disjoint(
            Span::of(decoded.cast_const(), count),
            "decoded",
            Span::of(stream, len),
            "stream",
        )?;
        // SAFETY: decoded holds 3n initialised floats (the caller's contract); the
        // slice lives only for the copy.
        let mut pos = unsafe { buffers::input(decoded.cast_const(), count, "decoded") }?.to_vec();
        particles::apply_external(bytes, &mut pos)?;
        // SAFETY: decoded holds 3n writable floats (checked non-NULL and aligned by
        // input above) and overlaps nothing we read.
        unsafe { buffers::copy_out(decoded, &pos) };
        Ok(())
    })
}

/// Checks an FoF call's linking length and box; returns the space.
fn fof_space(b: f64, box_side: f64) -> Result<Space, Failure> {
    let space = Space {
        period: period_from(box_side, "box_side")?,
    };
    geometry::check_linking(b, space)?;
    Ok(space)
}

/// Friends-of-friends groups of `n` particles (`xyz`: `3 * n` floats, AoS)
/// under linking length `b` (finite, > 0) with `box_side` 0 (open) or the side
/// L of a periodic box (b <= L / 2): writes each particle's group label to
/// `labels` (`n` values), the smallest particle index in its group, so two
/// particles share a label iff they are in the same group, and a particle is
/// its group's representative iff `labels[i] == i`. Particles with a NaN or
/// Inf coordinate are singletons. The link rule is the compressor's (see
/// factz_particles_config). `n` may be 0.
///
/// # Safety
/// `xyz`: NULL or `3 * n` readable floats; `labels`: NULL or `n` writable
/// uint32_t, not overlapping `xyz`. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_fof_labels(
    xyz: *const f32,
    n: usize,
    b: f64,
    box_side: f64,
    labels: *mut u32,
) -> factz_status {
    ffi_boundary!("factz_fof_labels", {
        // SAFETY: the same contract.
        unsafe { fof_labels(xyz, n, b, box_side, labels) }
    })
}

/// factz_fof_labels for float64 positions (`3 * n` doubles), linked by the
/// same rule on the doubles.
///
/// # Safety
/// As factz_fof_labels, with `xyz`: NULL or `3 * n` readable doubles.
#[no_mangle]
pub unsafe extern "C" fn factz_fof_labels_f64(
    xyz: *const f64,
    n: usize,
    b: f64,
    box_side: f64,
    labels: *mut u32,
) -> factz_status {
    ffi_boundary!("factz_fof_labels_f64", {
        // SAFETY: the same contract.
        unsafe { fof_labels(xyz, n, b, box_side, labels) }
    })
}

/// The body of factz_fof_labels and its _f64 twin.
///
/// # Safety
/// The contract of factz_fof_labels, for elements of type `T`.
unsafe fn fof_labels<T: Real>(
    xyz: *const T,
    n: usize,
    b: f64,
    box_side: f64,
    labels: *mut u32,
) -> Result<(), Failure> {
    let len = values(n)?;
    let space = fof_space(b, box_side)?;
    // SAFETY: xyz holds 3n readable values (the caller's contract).
    let pos = unsafe { buffers::input(xyz, len, "xyz") }?;
    check_output(labels, n, "labels")?;
    check_disjoint(
        Span::of(labels.cast_const(), n),
        "labels",
        Span::of(xyz, len),
        "xyz",
    )?;
    let l = fof::labels(pos, space, b)?;
    // SAFETY: labels holds n writable values (checked non-NULL, aligned; sized by
    // the caller's contract), disjoint from xyz.
    unsafe { buffers::copy_out(labels, &l) };
    Ok(())
}

/// The halo catalogue of a labelling (`labels`: `n` values, each `< n`, e.g.
/// from factz_fof_labels): the groups with at least `min_members` members (0 or
/// 1: every group, singletons included), largest first, ties by label. Two-call
/// pattern: `*count` receives the number of such groups; when `capacity` holds
/// them all, `halo_labels[k]` gets the k-th group's label and `halo_sizes[k]`
/// its member count, else nothing is written and the result is
/// FACTZ_BUFFER_TOO_SMALL (`halo_labels` and `halo_sizes` may be NULL with
/// `capacity` 0 to ask for the count; no groups then gives FACTZ_OK). The
/// members of group k are the particles i with `labels[i] == halo_labels[k]`.
///
/// # Safety
/// `labels`: NULL or `n` readable uint32_t; `halo_labels`, `halo_sizes`: NULL
/// or `capacity` writable values each, not overlapping each other or `labels`;
/// `count`: NULL or a writable size_t. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_fof_halos(
    labels: *const u32,
    n: usize,
    min_members: usize,
    halo_labels: *mut u32,
    halo_sizes: *mut usize,
    capacity: usize,
    count: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_fof_halos", {
        check_scalar_out(count, "count")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { count.write(0) };
        values(n)?;
        // SAFETY: labels holds n readable values (the caller's contract).
        let l = unsafe { buffers::input(labels, n, "labels") }?;
        // (Refuses a label out of range first, as it always did.)
        let halos = fof::halos(l, min_members)?;
        check_output(halo_labels, capacity, "halo_labels")?;
        check_output(halo_sizes, capacity, "halo_sizes")?;
        let (sl, ss, sin) = (
            Span::of(halo_labels.cast_const(), capacity),
            Span::of(halo_sizes.cast_const(), capacity),
            Span::of(labels, n),
        );
        check_disjoint(sl, "halo_labels", ss, "halo_sizes")?;
        check_disjoint(sl, "halo_labels", sin, "labels")?;
        check_disjoint(ss, "halo_sizes", sin, "labels")?;
        // SAFETY: as above.
        unsafe { count.write(halos.len()) };
        if halos.len() > capacity {
            return Err(Failure::too_small(format!(
                "there are {} groups of at least {min_members} members, capacity is {capacity} \
                 (*count holds the count)",
                halos.len()
            )));
        }
        for (k, h) in halos.iter().enumerate() {
            // SAFETY: both outputs hold capacity > k writable values (checked non-NULL,
            // aligned; sized by the caller's contract), disjoint from labels.
            unsafe {
                halo_labels.add(k).write(h.label);
                halo_sizes.add(k).write(h.members.len());
            }
        }
        Ok(())
    })
}

/// The linking length the compressor would use, in `*b`: with `linking_kind`
/// FACTZ_LINK_LENGTH it is `value`; with FACTZ_LINK_ETA it is
/// `value * (V / n)^(1/3)`, V the periodic box's volume (`box_side` > 0) or the
/// bounding-box volume of the finite particles (`box_side` 0). `value` is
/// finite and > 0. With eta, fewer than 2 particles give `value` itself
/// (nothing can link), and particles that do not span all three dimensions are
/// FACTZ_INVALID_ARGUMENT (give b instead).
///
/// # Safety
/// `xyz`: NULL or `3 * n` readable floats; `b`: NULL or a writable double. Host memory.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_linking_length(
    xyz: *const f32,
    n: usize,
    linking_kind: u32,
    value: f64,
    box_side: f64,
    b: *mut f64,
) -> factz_status {
    ffi_boundary!("factz_particles_linking_length", {
        check_scalar_out(b, "b")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { b.write(0.0) };
        let len = values(n)?;
        let linking = match linking_kind {
            FACTZ_LINK_LENGTH => Linking::Length(value),
            FACTZ_LINK_ETA => Linking::Eta(value),
            k => return Err(bad_linking_kind("linking_kind", k)),
        };
        if !(value.is_finite() && value > 0.0) {
            return Err(Failure::invalid(format!(
                "value must be finite and > 0, got {value}"
            )));
        }
        let period = period_from(box_side, "box_side")?;
        // SAFETY: xyz holds 3n readable floats (the caller's contract).
        let pos = unsafe { buffers::input(xyz, len, "xyz") }?;
        let v = particles::linking_length(pos, linking, period)?;
        // SAFETY: as above.
        unsafe { b.write(v) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::field::{factz_coder, factz_layout};
    use super::*;

    #[test]
    fn constants_match_the_library() {
        assert_eq!(source_id(Source::Lossless), FACTZ_SOURCE_LOSSLESS);
        assert_eq!(source_id(Source::External), FACTZ_SOURCE_EXTERNAL);
        for b in [Base::Builtin, Base::Sz3, Base::Zfp] {
            assert_eq!(source_id(Source::Base(b)), base_id(b));
            assert_eq!(base_from(base_id(b)), Ok(b));
        }
        assert_eq!(Layout::Aos as u32, factz_layout::FACTZ_LAYOUT_AOS as u32);
        assert_eq!(Layout::Soa as u32, factz_layout::FACTZ_LAYOUT_SOA as u32);
        assert_eq!(Coder::Rans as u32, factz_coder::FACTZ_CODER_RANS as u32);
        assert_eq!(
            Coder::Huffman as u32,
            factz_coder::FACTZ_CODER_HUFFMAN as u32
        );
        let d = factz_particles_config::defaults();
        assert_eq!(d.to_config(), Ok(ParticleConfig::default()));
    }
}
