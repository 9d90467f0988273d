//! 3D particle positions: error-bounded compression that keeps every
//! friends-of-friends link (pair at distance <= b) and so every FoF group.
//!
//! A base compressor (built-in, SZ3, ZFP, or the caller's own) gives positions
//! within the bound xi; a correction edits the few particles in vulnerable pairs
//! whose link changed, and stores exactly whatever it cannot fix: per-particle
//! safe radii (`safe.rs`, or `eager.rs` where nearly every pair is vulnerable)
//! or the optimiser (`correct.rs`), chosen per set by `method.rs`. The stream (`stream.rs`) holds the base output beside the
//! correction.
//!
//! Positions are AoS `[N][3]` f32 or f64 (`T: Real`, one code path; the
//! stream's element type says which, and a stream decodes only as its own
//! type); `Layout` only records how the caller holds them so decompression
//! can give the same layout back.

pub mod base;
pub mod correct;
pub mod eager;
pub mod fof;
pub mod geometry;
pub mod gpu_host;
pub mod grid;
pub mod method;
pub mod metrics;
pub mod safe;
pub mod stream;
pub mod vulnerable;

pub use self::base::Base;
pub use self::geometry::Space;
pub use self::stream::Source;
pub use crate::bound::Bound;
pub use crate::format::Layout;

use self::correct::{edit_step, Options};
use self::stream::{Correction, Stored};
use crate::bound::within;
use crate::codec::Coder;
use crate::error::{Error, Result};
use crate::format::{self, Header, Kind, Parsed};
use crate::real::Real;
use rayon::prelude::*;

/// How the linking length is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Linking {
    /// b itself.
    Length(f64),
    /// `b = eta * (V / N)^(1/3)`, V the periodic box's or the bounding box's volume.
    Eta(f64),
}

/// Default eta (FoF's customary 0.2 of the mean separation).
pub const DEFAULT_ETA: f64 = 0.2;
/// Default minimum halo size of catalogues and mass functions.
pub const DEFAULT_MIN_MEMBERS: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParticleConfig {
    pub bound: Bound,
    pub linking: Linking,
    /// Side of the periodic box; None for open boundaries.
    pub period: Option<f64>,
    pub base: Base,
    pub coder: Coder,
    /// 0 = no zstd stage; 1..=22 = zstd level on top of the entropy coder.
    pub zstd_level: i32,
    /// The particles are one spatial chunk of many: store exactly those within
    /// `b + 2 sqrt(3) xi` of the bounding box's faces, so links across chunks hold.
    pub chunk_of_larger: bool,
    /// Decode the stream and compare with what the encoder meant before returning.
    pub verify: bool,
    pub layout: Layout,
    pub correction: Options,
}

impl Default for ParticleConfig {
    fn default() -> Self {
        ParticleConfig {
            bound: Bound::Rel(1e-3),
            linking: Linking::Eta(DEFAULT_ETA),
            period: None,
            base: Base::Builtin,
            coder: Coder::Rans,
            zstd_level: 0,
            chunk_of_larger: false,
            verify: false,
            layout: Layout::Aos,
            correction: Options::default(),
        }
    }
}

/// What a compression did, beside the bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ParticleReport {
    pub abs_bound: f64,
    pub linking_length: f64,
    pub source: Source,
    /// Particles stored exactly (non-finite, base out of bound, chunk faces, fallback).
    pub exact_particles: usize,
    pub correction: correct::Stats,
    /// The correction method that ran (auto resolved); None for a lossless stream.
    pub method: Option<correct::Method>,
    /// Stored bytes of the base sections and of the correction sections.
    pub base_bytes: usize,
    pub correction_bytes: usize,
    pub verified: bool,
    /// Stored losslessly because the verify pass failed (reason given).
    pub lossless_fallback: bool,
    pub fallback_reason: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Compressed {
    pub bytes: Vec<u8>,
    pub report: ParticleReport,
}

/// Decoded positions (AoS) and the layout the caller gave them in.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<T = f32> {
    pub n: usize,
    pub pos: Vec<T>,
    pub layout: Layout,
}

/// Particles one stream may hold (indices are u32).
pub const MAX_PARTICLES: usize = u32::MAX as usize - 1;

/// Particle count of an AoS array, refusing ragged and oversized input.
pub fn particle_count(values: usize) -> Result<usize> {
    if values % 3 != 0 {
        return Err(Error::invalid(format!(
            "positions need 3 values per particle, got {values} values"
        )));
    }
    let n = values / 3;
    if n > MAX_PARTICLES {
        return Err(Error::invalid(format!(
            "{n} particles exceed one stream's {MAX_PARTICLES}; compress in chunks"
        )));
    }
    Ok(n)
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

pub fn check_config(cfg: &ParticleConfig) -> Result<()> {
    match cfg.bound {
        Bound::Abs(x) | Bound::Rel(x) if !(x.is_finite() && x >= 0.0) => {
            return Err(Error::invalid(format!(
                "error bound must be finite and >= 0, got {x}"
            )))
        }
        _ => {}
    }
    match cfg.linking {
        Linking::Length(b) if !positive(b) => {
            return Err(Error::invalid(format!(
                "linking length b must be finite and > 0, got {b}"
            )))
        }
        Linking::Eta(e) if !positive(e) => {
            return Err(Error::invalid(format!(
                "eta must be finite and > 0, got {e}"
            )))
        }
        _ => {}
    }
    if let Some(l) = cfg.period {
        if !positive(l) {
            return Err(Error::invalid(format!(
                "periodic box side must be finite and > 0, got {l}"
            )));
        }
    }
    if !(0..=22).contains(&cfg.zstd_level) {
        return Err(Error::invalid(format!(
            "zstd level must be 0 (off) to 22, got {}",
            cfg.zstd_level
        )));
    }
    let o = &cfg.correction;
    if !(2..=24).contains(&o.edit_bits) {
        return Err(Error::invalid(format!(
            "edit bits must be 2 to 24, got {}",
            o.edit_bits
        )));
    }
    if !positive(o.learning_rate) {
        return Err(Error::invalid("learning rate must be finite and > 0"));
    }
    if !(o.tolerance.is_finite() && o.tolerance >= 0.0) {
        return Err(Error::invalid("tolerance must be finite and >= 0"));
    }
    Ok(())
}

/// The absolute bound a configuration means for these positions: `Abs(x)` is x,
/// `Rel(t)` is `t * (max - min)` over every finite coordinate (0 if none).
pub fn absolute_bound<T: Real>(pos: &[T], bound: Bound) -> f64 {
    crate::bound::absolute_bound(&[pos], bound)
}

/// The linking length for these positions. With eta, V is the periodic box's
/// volume or the finite particles' bounding-box volume, N the particle count.
pub fn linking_length<T: Real>(pos: &[T], linking: Linking, period: Option<f64>) -> Result<f64> {
    let eta = match linking {
        Linking::Length(b) => return Ok(b),
        Linking::Eta(e) => e,
    };
    let n = pos.len() / 3;
    if n < 2 {
        // Nothing can link; any positive b describes the data.
        return Ok(eta);
    }
    let volume = match period {
        Some(l) => l * l * l,
        None => match geometry::bounding_box(pos) {
            Some((lo, hi)) => (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]),
            None => 0.0,
        },
    };
    let b = eta * (volume / n as f64).cbrt();
    if !positive(b) {
        return Err(Error::invalid(
            "eta needs particles spread in all three dimensions (zero bounding-box volume); \
             give the linking length b instead",
        ));
    }
    Ok(b)
}

fn space_of(cfg: &ParticleConfig) -> Space {
    Space { period: cfg.period }
}

/// Particles whose base output is unusable (non-finite or out of bound) or, for a
/// chunk of a larger set, that lie within `b + 2 sqrt(3) xi` of the chunk's faces.
fn initial_exact<T: Real>(
    orig: &[T],
    base: &[T],
    space: Space,
    xi: f64,
    b: f64,
    chunk: bool,
) -> Vec<bool> {
    let faces = if chunk {
        geometry::bounding_box(orig)
    } else {
        None
    };
    let reach = b + geometry::halfwidth_of(orig, space, b, xi);
    orig.par_chunks_exact(3)
        .zip(base.par_chunks_exact(3))
        .map(|(x, r)| {
            let bad = x
                .iter()
                .zip(r)
                .any(|(&a, &c)| !(a.is_finite() && c.is_finite() && within(c, a, xi)));
            let near_face = faces.is_some_and(|(lo, hi)| {
                (0..3).any(|k| x[k].to_f64() - lo[k] <= reach || hi[k] - x[k].to_f64() <= reach)
            });
            bad || near_face
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn header(
    dtype: u8,
    n: usize,
    xi: f64,
    b: f64,
    source: Source,
    cfg: &ParticleConfig,
    flags: u32,
    tag: u32,
) -> Header {
    Header {
        version: format::VERSION,
        kind: Kind::Particles,
        dtype,
        flags,
        dims: [n as u64, 3, 0],
        abs_bound: xi,
        mode: source.mode(),
        coder: cfg.coder as u8,
        zstd_level: cfg.zstd_level as i8,
        layout: cfg.layout as u8,
        params: [
            b,
            cfg.period.unwrap_or(0.0),
            cfg.correction.edit_bits as f64,
            tag as f64,
        ],
    }
}

/// The largest stream `compress` can return for n f32 particles.
pub fn max_compressed_size(n: usize) -> Result<usize> {
    max_compressed_size_of::<f32>(n)
}

/// The largest stream `compress` can return for n particles of type T (the
/// lossless stream: every coordinate as a plain value).
pub fn max_compressed_size_of<T: Real>(n: usize) -> Result<usize> {
    if n > MAX_PARTICLES {
        return Err(Error::invalid(format!(
            "{n} particles exceed one stream's {MAX_PARTICLES}; compress in chunks"
        )));
    }
    Ok(format::header_len(1) + 3 * T::BYTES * n)
}

fn stored_len(sections: &[(u32, Vec<u8>)]) -> usize {
    sections.iter().map(|s| s.1.len()).sum()
}

/// Compress AoS positions `[N][3]` of f32 or f64; the stream records which.
pub fn compress<T: Real>(pos: &[T], cfg: &ParticleConfig) -> Result<Compressed> {
    finish(pos, cfg, prepare(pos, cfg)?, None)
}

/// The part of compression that needs nothing but the particles themselves:
/// the resolved bound and linking length, and the base's encoding. The
/// distributed path runs it while ghosts are in flight.
pub struct Prepared<T = f32> {
    xi: f64,
    b: f64,
    /// The base's sections and decoded positions; None for a lossless stream.
    base: Option<(base::Sections, Vec<T>)>,
}

/// First half of [`compress`]: checks, bound and b, and the base encoding.
pub fn prepare<T: Real>(pos: &[T], cfg: &ParticleConfig) -> Result<Prepared<T>> {
    let n = particle_count(pos.len())?;
    check_config(cfg)?;
    if !cfg.base.available() {
        return Err(Error::unsupported(format!(
            "base compressor {} is not compiled in (cargo feature \"{}\")",
            cfg.base.name(),
            cfg.base.name()
        )));
    }
    let xi = absolute_bound(pos, cfg.bound);
    let b = linking_length(pos, cfg.linking, cfg.period)?;
    geometry::check_linking(b, space_of(cfg))?;
    geometry::check_positions(pos, space_of(cfg))?;
    let base = if xi == 0.0 || n == 0 {
        None
    } else {
        Some(base::encode(cfg.base, pos, xi, cfg.coder)?)
    };
    Ok(Prepared { xi, b, base })
}

/// Second half of [`compress`]: correction and the stream. `prepared` must
/// come from `prepare(pos, cfg)`. `forced[k]` holds particle k exact on top of
/// those the chunk rule and the correction choose: the distributed path
/// (`crate::dist`) forces the particles of vulnerable pairs that span ranks.
pub fn finish<T: Real>(
    pos: &[T],
    cfg: &ParticleConfig,
    prepared: Prepared<T>,
    forced: Option<&[bool]>,
) -> Result<Compressed> {
    finish_with(pos, cfg, prepared, forced, &correct::Cpu)
}

/// [`finish`] with the correction's pair search and optimiser run by
/// `corrector` (the GPU's: `gpu::particles::GpuCorrection`); the stream is the
/// same whichever runs them.
pub fn finish_with<T: Real>(
    pos: &[T],
    cfg: &ParticleConfig,
    prepared: Prepared<T>,
    forced: Option<&[bool]>,
    corrector: &dyn correct::Corrector<T>,
) -> Result<Compressed> {
    let n = particle_count(pos.len())?;
    if forced.is_some_and(|f| f.len() != n) {
        return Err(Error::invalid(format!(
            "{} forced-exact flags for {n} particles",
            forced.map_or(0, |f| f.len())
        )));
    }
    let Prepared { xi, b, base } = prepared;
    let space = space_of(cfg);
    let mut flags = if cfg.chunk_of_larger {
        format::FLAG_CHUNK_OF_LARGER
    } else {
        0
    };
    if cfg.verify {
        flags |= format::FLAG_VERIFIED;
    }
    let mut report = ParticleReport {
        abs_bound: xi,
        linking_length: b,
        source: Source::Lossless,
        exact_particles: n,
        correction: correct::Stats::default(),
        method: None,
        base_bytes: 0,
        correction_bytes: 0,
        verified: cfg.verify,
        lossless_fallback: false,
        fallback_reason: None,
    };
    let lossless = |flags: u32| {
        format::write(
            &header(T::DTYPE, n, xi, b, Source::Lossless, cfg, flags, 0),
            &stream::lossless_sections(pos),
            0,
        )
    };
    let Some((base_sections, base_pos)) = base else {
        let bytes = lossless(flags)?;
        report.base_bytes = 3 * T::BYTES * n;
        return Ok(Compressed { bytes, report });
    };
    let mut exact = initial_exact(pos, &base_pos, space, xi, b, cfg.chunk_of_larger);
    if let Some(forced) = forced {
        exact.iter_mut().zip(forced).for_each(|(e, &f)| *e |= f);
    }
    let (out, method) = method::run(
        corrector,
        pos,
        base_pos,
        exact,
        space,
        b,
        xi,
        &cfg.correction,
        cfg.coder,
    )?;
    let corr = Correction::new(pos, out.exact, out.edits);
    let corr_sections = corr.sections(n, cfg.coder);
    report.source = Source::Base(cfg.base);
    report.method = Some(method);
    report.exact_particles = corr.exact_count();
    report.correction = out.stats;
    report.base_bytes = stored_len(&base_sections);
    report.correction_bytes = stored_len(&corr_sections);
    let mut sections = corr_sections;
    sections.extend(base_sections);
    let mut bytes = format::write(
        &header(T::DTYPE, n, xi, b, report.source, cfg, flags, method.id()),
        &sections,
        cfg.zstd_level,
    )?;
    if bytes.len() > max_compressed_size_of::<T>(n)? {
        bytes = lossless(flags)?;
        report.source = Source::Lossless;
        report.method = None;
        report.exact_particles = n;
    }
    if cfg.verify {
        if let Err(why) = verify(&bytes, &out.recon, report.source) {
            bytes = lossless(flags | format::FLAG_LOSSLESS_FALLBACK)?;
            report.source = Source::Lossless;
            report.method = None;
            report.lossless_fallback = true;
            report.fallback_reason = Some(why);
            report.exact_particles = n;
        }
    }
    Ok(Compressed { bytes, report })
}

/// Decode and compare bit for bit with the positions the encoder checked every
/// vulnerable pair on.
fn verify<T: Real>(bytes: &[u8], meant: &[T], source: Source) -> std::result::Result<(), String> {
    if source == Source::Lossless {
        return Ok(());
    }
    let d = decompress_as::<T>(bytes).map_err(|e| e.to_string())?;
    match d
        .pos
        .iter()
        .zip(meant)
        .position(|(a, b)| a.to_bits64() != b.to_bits64())
    {
        None => Ok(()),
        Some(c) => Err(format!(
            "coordinate {c} decodes as {:?} where the encoder checked {:?}",
            d.pos[c], meant[c]
        )),
    }
}

/// Bring your own compressor: given the original positions and what another
/// compressor decoded for them (same order, AoS), return a correction stream that
/// [`apply_external`] turns into positions keeping every link. Decoded coordinates
/// outside the bound (or non-finite) are corrected by exact storage.
pub fn correct_external<T: Real>(
    orig: &[T],
    decoded: &[T],
    cfg: &ParticleConfig,
) -> Result<Compressed> {
    let n = particle_count(orig.len())?;
    if decoded.len() != orig.len() {
        return Err(Error::invalid(format!(
            "decoded positions hold {} values, the originals {}",
            decoded.len(),
            orig.len()
        )));
    }
    check_config(cfg)?;
    let xi = absolute_bound(orig, cfg.bound);
    let b = linking_length(orig, cfg.linking, cfg.period)?;
    geometry::check_linking(b, space_of(cfg))?;
    geometry::check_positions(orig, space_of(cfg))?;
    let mut flags = if cfg.chunk_of_larger {
        format::FLAG_CHUNK_OF_LARGER
    } else {
        0
    };
    let tag = crc32fast::hash(&crate::real::le_bytes(&[decoded]));
    let mut report = ParticleReport {
        abs_bound: xi,
        linking_length: b,
        source: Source::External,
        exact_particles: n,
        correction: correct::Stats::default(),
        method: None,
        base_bytes: 0,
        correction_bytes: 0,
        verified: false,
        lossless_fallback: false,
        fallback_reason: None,
    };
    let mut sections = Vec::new();
    if xi > 0.0 && n > 0 {
        let exact = initial_exact(orig, decoded, space_of(cfg), xi, b, cfg.chunk_of_larger);
        let (out, method) = method::run(
            &correct::Cpu,
            orig,
            decoded.to_vec(),
            exact,
            space_of(cfg),
            b,
            xi,
            &cfg.correction,
            cfg.coder,
        )?;
        let corr = Correction::new(orig, out.exact, out.edits);
        sections = corr.sections(n, cfg.coder);
        report.exact_particles = corr.exact_count();
        report.correction = out.stats;
        report.method = Some(method);
    }
    let header_of = |flags| header(T::DTYPE, n, xi, b, Source::External, cfg, flags, tag);
    let mut bytes = format::write(&header_of(flags), &sections, cfg.zstd_level)?;
    if xi == 0.0 || n == 0 || bytes.len() > max_compressed_size_of::<T>(n)? {
        // Every particle exact, as plain words: the worst case is the same as compress's.
        flags |= format::FLAG_LOSSLESS_FALLBACK;
        sections = stream::lossless_sections(orig);
        bytes = format::write(&header_of(flags), &sections, 0)?;
        report.exact_particles = n;
    }
    report.correction_bytes = stored_len(&sections);
    Ok(Compressed { bytes, report })
}

/// Apply a correction stream from [`correct_external`] to the same decoded
/// positions it was made for (checked by checksum), in place.
pub fn apply_external<T: Real>(stream_bytes: &[u8], decoded: &mut [T]) -> Result<()> {
    let p = format::parse(stream_bytes)?;
    let info = info_of(&p.header)?;
    same_type::<T>(&info)?;
    if info.source != Source::External {
        return Err(Error::invalid(format!(
            "stream is a complete {} stream, not a correction for external positions; decompress it",
            info.source.name()
        )));
    }
    if decoded.len() != 3 * info.n {
        return Err(Error::invalid(format!(
            "correction is for {} particles, got {} values",
            info.n,
            decoded.len()
        )));
    }
    if crc32fast::hash(&crate::real::le_bytes(&[decoded])) != info.tag {
        return Err(Error::invalid(
            "these decoded positions are not the ones the correction was made for (checksum differs)",
        ));
    }
    if info.lossless_fallback {
        decoded.copy_from_slice(&stream::read_lossless(&p, info.n)?);
    } else {
        let corr = Stored::read::<T>(&p, info.n, info.coder, info.edit_bits)?;
        corr.apply(decoded, edit_step(info.abs_bound, info.edit_bits));
    }
    Ok(())
}

/// What a particle stream says about itself (no payload is decoded).
#[derive(Debug, Clone, PartialEq)]
pub struct ParticleInfo {
    pub n: usize,
    /// The element type: "f32" or "f64".
    pub dtype: &'static str,
    pub layout: Layout,
    pub source: Source,
    pub coder: Coder,
    pub zstd_level: i32,
    pub abs_bound: f64,
    pub linking_length: f64,
    pub period: Option<f64>,
    pub edit_bits: u32,
    pub chunk_of_larger: bool,
    pub verified: bool,
    pub lossless_fallback: bool,
    pub version: u16,
    /// The correction method a base-mode stream records (None: lossless or
    /// external, or an id this version does not know). Streams written before
    /// the record existed read as `Correct`.
    pub method: Option<correct::Method>,
    /// Header `params[3]`: for a correction stream (external mode), the checksum
    /// of the positions it applies to; for a base mode, the method id.
    pub tag: u32,
}

/// Read and check a particle stream's header.
pub fn info(bytes: &[u8]) -> Result<ParticleInfo> {
    info_of(&format::parse(bytes)?.header)
}

fn info_of(h: &Header) -> Result<ParticleInfo> {
    if h.kind != Kind::Particles {
        return Err(Error::invalid(format!(
            "stream holds {}, not particles",
            h.kind.name()
        )));
    }
    // f32 or f64; `dtype_name` refuses any other byte.
    let dtype = format::dtype_name(h.dtype)?;
    let n = usize::try_from(h.dims[0]).map_err(|_| Error::corrupt("particle count overflows"))?;
    if n > MAX_PARTICLES || h.dims[1] != 3 || h.dims[2] != 0 {
        return Err(Error::corrupt("particle stream header has a bad shape"));
    }
    let [b, period, bits, tag] = h.params;
    if !(h.abs_bound.is_finite() && h.abs_bound >= 0.0 && positive(b)) {
        return Err(Error::corrupt(
            "stream header holds an invalid bound or linking length",
        ));
    }
    if !(period == 0.0 || positive(period)) {
        return Err(Error::corrupt("stream header holds an invalid box side"));
    }
    if !(2.0..=24.0).contains(&bits) || bits.fract() != 0.0 {
        return Err(Error::corrupt("stream header holds an invalid edit width"));
    }
    if !(0.0..=u32::MAX as f64).contains(&tag) || tag.fract() != 0.0 {
        return Err(Error::corrupt("stream header holds an invalid checksum"));
    }
    let layout = match h.layout {
        0 => Layout::Soa,
        1 => Layout::Aos,
        x => return Err(Error::corrupt(format!("unknown layout {x}"))),
    };
    let source = Source::from_mode(h.mode)
        .ok_or_else(|| Error::corrupt(format!("unknown particle mode {}", h.mode)))?;
    let coder = Coder::from_u8(h.coder)
        .ok_or_else(|| Error::unsupported(format!("unknown coder id {}", h.coder)))?;
    Ok(ParticleInfo {
        n,
        dtype,
        layout,
        source,
        coder,
        zstd_level: h.zstd_level as i32,
        abs_bound: h.abs_bound,
        linking_length: b,
        period: (period > 0.0).then_some(period),
        edit_bits: bits as u32,
        chunk_of_larger: h.flags & format::FLAG_CHUNK_OF_LARGER != 0,
        verified: h.flags & format::FLAG_VERIFIED != 0,
        lossless_fallback: h.flags & format::FLAG_LOSSLESS_FALLBACK != 0,
        version: h.version,
        method: match source {
            Source::Base(_) => correct::Method::from_id(tag as u32),
            _ => None,
        },
        tag: tag as u32,
    })
}

/// `decompress` allocates at most this many decoded bytes per stream byte (or
/// `DECODE_FLOOR` bytes); larger claims decode only into caller-owned buffers.
pub use crate::format::{DECODE_FLOOR, MAX_EXPANSION};

/// Decompress an f32 particle stream into a new AoS array.
pub fn decompress(bytes: &[u8]) -> Result<Decoded> {
    decompress_as::<f32>(bytes)
}

/// A stream decodes only as the element type it holds.
fn same_type<T: Real>(info: &ParticleInfo) -> Result<()> {
    if info.dtype != T::NAME {
        return Err(Error::invalid(format!(
            "particle stream holds {} positions, not {}; decode it as {}",
            info.dtype,
            T::NAME,
            info.dtype
        )));
    }
    Ok(())
}

/// Decompress a particle stream of element type T (f32 or f64, as
/// [`info`]'s `dtype` says) into a new AoS array.
pub fn decompress_as<T: Real>(bytes: &[u8]) -> Result<Decoded<T>> {
    let p = format::parse(bytes)?;
    let info = info_of(&p.header)?;
    same_type::<T>(&info)?;
    let need = 3 * T::BYTES * info.n;
    if !format::may_allocate(need, bytes.len()) {
        return Err(Error::corrupt(format!(
            "stream claims {} particles from only {} bytes; if that is right, decode into a \
             caller-owned buffer (decompress_into)",
            info.n,
            bytes.len()
        )));
    }
    let pos = decode(&p, &info)?;
    Ok(Decoded {
        n: info.n,
        pos,
        layout: info.layout,
    })
}

/// Decompress into a caller-owned AoS buffer of exactly `3 N` values of the
/// stream's element type.
pub fn decompress_into<T: Real>(bytes: &[u8], out: &mut [T]) -> Result<()> {
    let p = format::parse(bytes)?;
    let info = info_of(&p.header)?;
    same_type::<T>(&info)?;
    if out.len() != 3 * info.n {
        return Err(Error::invalid(format!(
            "stream holds {} particles ({} values), buffer holds {}",
            info.n,
            3 * info.n,
            out.len()
        )));
    }
    out.copy_from_slice(&decode(&p, &info)?);
    Ok(())
}

fn decode<T: Real>(p: &Parsed, info: &ParticleInfo) -> Result<Vec<T>> {
    match info.source {
        Source::Lossless => stream::read_lossless(p, info.n),
        Source::External => Err(Error::invalid(
            "stream is a correction for positions another compressor decoded: decode those, \
             then apply it (apply_external)",
        )),
        Source::Base(base) => {
            // The two halves decode independently (and each has serial stages).
            let (pos, corr) = rayon::join(
                || base::decode(base, p, info.n, info.abs_bound, info.coder),
                || Stored::read::<T>(p, info.n, info.coder, info.edit_bits),
            );
            let (mut pos, corr) = (pos?, corr?);
            if pos.len() != 3 * info.n {
                return Err(Error::corrupt(
                    "base section decodes to the wrong particle count",
                ));
            }
            corr.apply(&mut pos, edit_step(info.abs_bound, info.edit_bits));
            Ok(pos)
        }
    }
}

/// Interleave SoA coordinates into AoS.
pub fn interleave3<T: Real>(x: &[T], y: &[T], z: &[T]) -> Vec<T> {
    x.iter()
        .zip(y)
        .zip(z)
        .flat_map(|((&a, &b), &c)| [a, b, c])
        .collect()
}

/// Split AoS into SoA (x, y, z).
pub fn deinterleave3<T: Real>(pos: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let n = pos.len() / 3;
    let (mut x, mut y, mut z) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for p in pos.chunks_exact(3) {
        x.push(p[0]);
        y.push(p[1]);
        z.push(p[2]);
    }
    (x, y, z)
}
