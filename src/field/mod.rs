//! 2D vector fields: topology (critical points), the two compressors (mode B, mode S)
//! and the public entry points.

pub mod blockwise;
mod diagonals;
pub mod exact;
pub mod forced;
pub mod halo;
pub mod metrics;
pub mod parts;
pub mod pipeline;
pub mod quantize;
pub mod safe_bound;
pub mod speculative;
pub mod stream;
pub mod topology;

pub use crate::bound::{bound_for_range, finite_range, Bound};
use crate::error::{Error, Result};
use crate::format::{self, Header, Kind};
pub use crate::format::{Layout, DECODE_FLOOR, MAX_EXPANSION};
use crate::real::Real;
use parts::Parts;
use stream::MODE_LOSSLESS;

pub use crate::codec::Coder;

/// Which compressor frontend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Block-wise analytic bounds: throughput.
    Blockwise = 1,
    /// Speculative per-vertex verify-and-back-off: ratio.
    Speculative = 2,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldConfig {
    pub mode: Mode,
    pub bound: Bound,
    pub coder: Coder,
    /// 0 = no zstd stage; 1..=22 = zstd level on top of the entropy coder.
    pub zstd_level: i32,
    /// The field is one chunk of a larger one: store its perimeter exactly.
    pub chunk_of_larger: bool,
    /// Decode and re-check every triangle before returning; store losslessly on failure.
    pub verify: bool,
    /// Recorded in the stream so decompression can write the caller's layout back.
    pub layout: Layout,
}

impl Default for FieldConfig {
    fn default() -> Self {
        FieldConfig {
            mode: Mode::Speculative,
            bound: Bound::Rel(1e-3),
            coder: Coder::Rans,
            zstd_level: 0,
            chunk_of_larger: false,
            verify: false,
            layout: Layout::Soa,
        }
    }
}

/// What a compression did, beside the bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldReport {
    /// The absolute bound actually used (the stream records it too).
    pub abs_bound: f64,
    /// Vertices stored exactly (anchors, critical cells, non-finite, fallbacks).
    pub exact_vertices: usize,
    /// The verify pass found a violation and the chunk was stored losslessly.
    pub lossless_fallback: bool,
    /// The verify pass ran.
    pub verified: bool,
    /// What the verify pass found, when it forced the lossless fallback.
    pub fallback_reason: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Compressed {
    pub bytes: Vec<u8>,
    pub report: FieldReport,
}

/// A decoded field: SoA components plus the layout the data came in.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<T = f32> {
    pub ny: usize,
    pub nx: usize,
    pub u: Vec<T>,
    pub v: Vec<T>,
    pub layout: Layout,
}

/// Largest field one stream holds (vertices); larger data goes in chunks.
pub const MAX_VERTICES: usize = 1 << 34;

impl Mode {
    pub fn from_u8(x: u8) -> Option<Mode> {
        match x {
            1 => Some(Mode::Blockwise),
            2 => Some(Mode::Speculative),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Blockwise => "b",
            Mode::Speculative => "s",
        }
    }
}

/// Vertex count of a shape, refusing empty, overflowing and oversized shapes.
pub fn vertex_count(ny: usize, nx: usize) -> Result<usize> {
    if ny == 0 || nx == 0 {
        return Err(Error::invalid(format!("field shape {ny}x{nx} is empty")));
    }
    ny.checked_mul(nx)
        .filter(|&n| n <= MAX_VERTICES)
        .ok_or_else(|| Error::invalid(format!("field shape {ny}x{nx} is too large for one stream")))
}

/// Check a configuration on its own (also used by the C ABI and the CLI).
pub fn check_config(cfg: &FieldConfig) -> Result<()> {
    match cfg.bound {
        Bound::Abs(x) | Bound::Rel(x) if !(x.is_finite() && x > 0.0) => {
            return Err(Error::invalid(format!(
                "error bound must be finite and positive, got {x}"
            )))
        }
        _ => {}
    }
    if !(0..=22).contains(&cfg.zstd_level) {
        return Err(Error::invalid(format!(
            "zstd level must be 0 (off) to 22, got {}",
            cfg.zstd_level
        )));
    }
    Ok(())
}

/// The absolute bound a configuration means for this field: `Rel` over the
/// finite values of both components ([`crate::bound::absolute_bound`]).
pub fn absolute_bound<T: Real>(u: &[T], v: &[T], bound: Bound) -> f64 {
    crate::bound::absolute_bound(&[u, v], bound)
}

pub(crate) fn header(
    ny: usize,
    nx: usize,
    xi: f64,
    mode: u8,
    cfg: &FieldConfig,
    flags: u32,
    dtype: u8,
) -> Header {
    Header {
        version: format::VERSION,
        kind: Kind::Field2d,
        dtype,
        flags,
        dims: [ny as u64, nx as u64, 0],
        abs_bound: xi,
        mode,
        coder: cfg.coder as u8,
        zstd_level: cfg.zstd_level as i8,
        layout: cfg.layout as u8,
        params: [0.0; 4],
    }
}

pub(crate) fn lossless<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    cfg: &FieldConfig,
    flags: u32,
) -> Result<Vec<u8>> {
    let mut raw = Vec::with_capacity(2 * T::WORDS * u.len());
    for (a, b) in u.iter().zip(v) {
        a.push_words(&mut raw);
        b.push_words(&mut raw);
    }
    let parts = Parts {
        raw,
        ..Parts::default()
    };
    stream::write(
        &header(ny, nx, xi, MODE_LOSSLESS, cfg, flags, T::DTYPE),
        &parts,
        cfg.coder,
        cfg.zstd_level,
    )
}

/// The largest stream `compress` can return for a float32 field of this shape
/// (a stream that would be larger is stored losslessly, uncoded).
pub fn max_compressed_size(ny: usize, nx: usize) -> Result<usize> {
    max_compressed_size_of::<f32>(ny, nx)
}

/// [`max_compressed_size`] for element type `T`.
pub fn max_compressed_size_of<T: Real>(ny: usize, nx: usize) -> Result<usize> {
    let n = vertex_count(ny, nx)?;
    Ok(format::header_len(1) + 2 * T::BYTES * n)
}

/// Compress a field given as two component arrays (row-major `ny x nx`, x
/// fastest) of f32 or f64 (either mode; the GPU takes f32).
pub fn compress<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<Compressed> {
    compress_with(u, v, ny, nx, cfg, None)
}

/// [`compress`] with a cap on each vertex's relative bound (`caps[k]`, row-major;
/// `+inf` none, negative: store exactly): what a block of a larger field needs
/// so triangles crossing into its neighbours keep their critical points
/// (`halo::BlockWithRing::caps`, `crate::dist` with a halo).
pub fn compress_capped<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
    caps: &[f64],
) -> Result<Compressed> {
    if caps.len() != u.len() || caps.iter().any(|c| c.is_nan()) {
        return Err(Error::invalid(format!(
            "{} bound caps for {} vertices, or a NaN cap",
            caps.len(),
            u.len()
        )));
    }
    compress_with(u, v, ny, nx, cfg, Some(caps))
}

fn compress_with<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
    caps: Option<&[f64]>,
) -> Result<Compressed> {
    pipeline::compress_on(&pipeline::Cpu { caps }, [u, v], ny, nx, cfg)
}

/// Decode `bytes` and check every triangle's signature and every value's bound.
pub(crate) fn verify<T: Real>(
    u: &[T],
    v: &[T],
    xi: f64,
    bytes: &[u8],
) -> std::result::Result<(), String> {
    let d = decompress_as::<T>(bytes).map_err(|e| e.to_string())?;
    let diff = topology::diff((u, v), (&d.u, &d.v), d.ny, d.nx);
    if !diff.is_clean() {
        return Err(format!(
            "{} lost, {} spurious, {} changed critical points",
            diff.lost.len(),
            diff.spurious.len(),
            diff.type_changed.len()
        ));
    }
    for (orig, dec) in [(u, &d.u), (v, &d.v)] {
        for (&a, &b) in orig.iter().zip(dec.iter()) {
            let ok = if a.is_finite() {
                crate::bound::within(b, a, xi)
            } else {
                a.to_bits64() == b.to_bits64()
            };
            if !ok {
                return Err(format!(
                    "value {a:?} decoded as {b:?}, outside the bound {xi}"
                ));
            }
        }
    }
    Ok(())
}

/// What a field stream says about itself (no payload is decoded).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldInfo {
    pub ny: usize,
    pub nx: usize,
    pub layout: Layout,
    /// None for a losslessly stored chunk.
    pub mode: Option<Mode>,
    pub coder: Coder,
    pub zstd_level: i32,
    pub abs_bound: f64,
    pub chunk_of_larger: bool,
    pub verified: bool,
    pub lossless_fallback: bool,
    pub version: u16,
    /// The element type: "f32" or "f64".
    pub dtype: &'static str,
}

/// Read and check a field stream's header.
pub fn info(bytes: &[u8]) -> Result<FieldInfo> {
    let p = format::parse(bytes)?;
    info_of(&p.header)
}

pub(crate) fn info_of(h: &Header) -> Result<FieldInfo> {
    if h.kind != Kind::Field2d {
        return Err(Error::invalid(format!(
            "stream holds {}, not a 2D vector field",
            h.kind.name()
        )));
    }
    let ny = usize::try_from(h.dims[0]).map_err(|_| Error::corrupt("field shape overflows"))?;
    let nx = usize::try_from(h.dims[1]).map_err(|_| Error::corrupt("field shape overflows"))?;
    vertex_count(ny, nx).map_err(|e| Error::corrupt(format!("stream header: {e}")))?;
    if h.dims[2] != 0 {
        return Err(Error::corrupt("field stream header has a third dimension"));
    }
    if !(h.abs_bound.is_finite() && h.abs_bound >= 0.0) {
        return Err(Error::corrupt("stream header holds an invalid error bound"));
    }
    let layout = match h.layout {
        0 => Layout::Soa,
        1 => Layout::Aos,
        x => return Err(Error::corrupt(format!("unknown layout {x}"))),
    };
    let mode = match h.mode {
        MODE_LOSSLESS => None,
        m => Some(Mode::from_u8(m).ok_or_else(|| Error::corrupt(format!("unknown mode {m}")))?),
    };
    let coder = Coder::from_u8(h.coder)
        .ok_or_else(|| Error::unsupported(format!("unknown coder id {}", h.coder)))?;
    let dtype = format::dtype_name(h.dtype)?;
    Ok(FieldInfo {
        dtype,
        ny,
        nx,
        layout,
        mode,
        coder,
        zstd_level: h.zstd_level as i32,
        abs_bound: h.abs_bound,
        chunk_of_larger: h.flags & format::FLAG_CHUNK_OF_LARGER != 0,
        verified: h.flags & format::FLAG_VERIFIED != 0,
        lossless_fallback: h.flags & format::FLAG_LOSSLESS_FALLBACK != 0,
        version: h.version,
    })
}

/// Decompress a float32 field stream into new arrays.
pub fn decompress(bytes: &[u8]) -> Result<Decoded> {
    decompress_as::<f32>(bytes)
}

/// Decompress a field stream of element type `T` (the stream says which:
/// [`info`]'s `dtype`) into new arrays.
pub fn decompress_as<T: Real>(bytes: &[u8]) -> Result<Decoded<T>> {
    let p = format::parse(bytes)?;
    let info = info_of(&p.header)?;
    // The element type first: a mismatched read allocates nothing.
    pipeline::check_dtype::<T>(&info)?;
    let decoded = 2 * T::BYTES * info.ny * info.nx;
    if !format::may_allocate(decoded, bytes.len()) {
        return Err(Error::corrupt(format!(
            "stream claims a {}x{} field ({decoded} bytes) from only {} bytes; if that is \
             right, decode into caller-owned buffers (decompress_into)",
            info.ny,
            info.nx,
            bytes.len()
        )));
    }
    let n = info.ny * info.nx;
    let (mut u, mut v) = (vec![T::default(); n], vec![T::default(); n]);
    pipeline::decode_parsed(&pipeline::Cpu::default(), &p, &info, &mut [&mut u, &mut v])?;
    Ok(Decoded {
        ny: info.ny,
        nx: info.nx,
        u,
        v,
        layout: info.layout,
    })
}

/// Decompress a field stream into caller-owned component arrays, whose length must
/// be the stream's `ny * nx` (checked before anything is decoded).
pub fn decompress_into<T: Real>(bytes: &[u8], u: &mut [T], v: &mut [T]) -> Result<()> {
    pipeline::decompress_on(&pipeline::Cpu::default(), bytes, &mut [u, v]).map(|_| ())
}

/// Bound ids a stream of `mode` stores for an ny x nx field with `coded`
/// coded vertices (mode B: two per tile; mode S: one per coded vertex).
pub fn ids_len(mode: Mode, ny: usize, nx: usize, coded: usize) -> usize {
    match mode {
        Mode::Blockwise => 2 * ny.div_ceil(blockwise::TILE) * nx.div_ceil(blockwise::TILE),
        Mode::Speculative => coded,
    }
}

/// Split interleaved (u, v) pairs into two arrays.
pub fn deinterleave<T: Copy>(uv: &[T]) -> (Vec<T>, Vec<T>) {
    uv.chunks_exact(2).map(|p| (p[0], p[1])).unzip()
}

/// Interleave two arrays into (u, v) pairs.
pub fn interleave(u: &[f32], v: &[f32]) -> Vec<f32> {
    u.iter().zip(v).flat_map(|(&a, &b)| [a, b]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A smooth field with many critical points (sums of a few Fourier modes).
    pub(crate) fn waves(ny: usize, nx: usize) -> (Vec<f32>, Vec<f32>) {
        let mut u = Vec::with_capacity(ny * nx);
        let mut v = Vec::with_capacity(ny * nx);
        for j in 0..ny {
            for i in 0..nx {
                let (x, y) = (i as f64 * 0.21, j as f64 * 0.17);
                u.push(((x + 0.3).sin() * (1.3 * y).cos() + 0.2 * (2.1 * x - y).sin()) as f32);
                v.push(((1.1 * x).cos() * (y - 0.5).sin() - 0.3 * (x + 1.7 * y).cos()) as f32);
            }
        }
        (u, v)
    }

    #[test]
    fn round_trips_keep_topology_and_bound() {
        for (ny, nx) in [(67, 45), (1, 9), (2, 2), (33, 1), (64, 64)] {
            let (u, v) = waves(ny, nx);
            for mode in [Mode::Blockwise, Mode::Speculative] {
                for coder in [Coder::Huffman, Coder::Rans] {
                    for bound in [Bound::Rel(1e-1), Bound::Rel(1e-3), Bound::Abs(1e-5)] {
                        let cfg = FieldConfig {
                            mode,
                            coder,
                            bound,
                            verify: true,
                            ..FieldConfig::default()
                        };
                        let c = compress(&u, &v, ny, nx, &cfg).unwrap();
                        assert!(
                            !c.report.lossless_fallback,
                            "{ny}x{nx} {mode:?} {coder:?} {bound:?}"
                        );
                        let d = decompress(&c.bytes).unwrap();
                        assert!(topology::diff((&u, &v), (&d.u, &d.v), ny, nx).is_clean());
                    }
                }
            }
        }
    }
}
