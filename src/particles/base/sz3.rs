//! SZ3 base (cargo feature `sz3`): x, y and z each compressed as a 1D array of
//! n values with SZ3's default predictor (interpolation + Lorenzo) under the
//! absolute bound xi. Per axis, SZ3 sees far smoother data than the interleaved
//! AoS array (measured: 2-3x smaller output).
//!
//! Non-finite coordinates are replaced by the axis's previous finite value (0
//! before the first) before SZ3 sees them, since SZ3's predictors would spread a
//! NaN; the caller stores those particles exactly. SZ3 checks its bound in f32
//! arithmetic, so a coordinate can rarely miss `xi` by an ulp; the caller stores
//! those too.
//!
//! Section [`FIRST_SECTION`](super::FIRST_SECTION) holds, for n > 0 (empty for
//! n = 0): per axis x, y, z a varint byte length, then the three SZ3 streams.
//!
//! SZ3's decoder is C++ that trusts its input. Before calling it, the frame header
//! and configuration are checked (magic, version, one dimension of n floats,
//! absolute bound, known algorithm, lengths consistent with the section), which
//! catches truncation and mismatched streams; the container's crc32 catches
//! accidental damage. A deliberately crafted payload can still reach SZ3's
//! unchecked decoding, so SZ3 streams from untrusted sources are not safe to
//! decode (the built-in base has no such limitation).

use std::sync::OnceLock;

use super::Sections;
use crate::codec::varint::{get_uvarint_max, put_uvarint};
use crate::error::{Error, Result};
use crate::format::Parsed;

const SECTION: u32 = super::FIRST_SECTION;
const MAGIC: u32 = 0xF342_F310;
/// SZ3's ids for float data, absolute bounds and the largest algorithm id.
const SZ_FLOAT: u8 = 0;
const EB_ABS: u8 = 0;
const MAX_ALGO: u8 = 6;

fn sz3_error(e: sz3::SZ3Error) -> Error {
    Error::internal(format!("SZ3: {e}"))
}

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("sz3 base: {what}"))
}

fn compress_axis(v: &[f32], xi: f64) -> Result<Vec<u8>> {
    let d = sz3::DimensionedData::build(&v)
        .dim(v.len())
        .and_then(|b| b.finish())
        .map_err(sz3_error)?;
    let cfg = sz3::Config::new(sz3::ErrorBound::Absolute(xi));
    sz3::compress_with_config(&d, &cfg).map_err(sz3_error)
}

/// The data version SZ3 writes (read from a tiny stream once), to refuse streams
/// its decoder would throw on: a C++ exception must not cross into Rust.
fn sz3_version() -> Option<u32> {
    static VERSION: OnceLock<Option<u32>> = OnceLock::new();
    *VERSION.get_or_init(|| {
        let probe = compress_axis(&[0.0, 1.0, 2.0, 3.0], 0.5).ok()?;
        Some(u32::from_le_bytes(probe.get(4..8)?.try_into().ok()?))
    })
}

/// Checks an SZ3 frame holding `n` floats (see the module doc) before SZ3 decodes it.
fn check_frame(d: &[u8], n: usize) -> Result<()> {
    let u32_at = |at: usize| {
        d.get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |at: usize| {
        d.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    if u32_at(0) != Some(MAGIC) {
        return Err(corrupt("not an SZ3 stream"));
    }
    if u32_at(4).is_none() || u32_at(4) != sz3_version() {
        return Err(corrupt("SZ3 data version differs from this build's"));
    }
    let body = u64_at(8).ok_or_else(|| corrupt("truncated SZ3 header"))?;
    let conf = usize::try_from(body)
        .ok()
        .and_then(|b| b.checked_add(16))
        .filter(|&c| c < d.len())
        .ok_or_else(|| corrupt("SZ3 body length exceeds the stream"))?;
    let c = &d[conf..];
    // Configuration: size u8, N, dims bit width, dims, num u64, algo, eb mode, bound...
    if c[0] as usize != c.len() || c.len() < 3 {
        return Err(corrupt("SZ3 configuration length mismatch"));
    }
    let (dims_n, width) = (c[1], c[2] as usize);
    if dims_n != 1 || width > 64 {
        return Err(corrupt("SZ3 stream is not one-dimensional"));
    }
    let dim_bytes = width.div_ceil(8);
    let at = 3 + dim_bytes;
    // Fixed fields after the dims: num (8), algo, eb mode, abs bound (8), flags, data type.
    if c.len() < at + 8 + 2 + 8 + 2 {
        return Err(corrupt("truncated SZ3 configuration"));
    }
    let mut dim = 0u64;
    for (k, &b) in c[3..at].iter().enumerate() {
        dim |= u64::from(b) << (8 * k);
    }
    if width < 64 {
        dim &= (1u64 << width) - 1;
    }
    let num = u64::from_le_bytes(c[at..at + 8].try_into().unwrap());
    let (algo, eb_mode, dtype) = (c[at + 8], c[at + 9], c[at + 19]);
    if dim != n as u64 || num != n as u64 {
        return Err(corrupt("SZ3 stream holds a different number of values"));
    }
    if algo > MAX_ALGO || eb_mode != EB_ABS || dtype != SZ_FLOAT {
        return Err(corrupt("unexpected SZ3 configuration"));
    }
    Ok(())
}

fn decompress_axis(d: &[u8], n: usize) -> Result<Vec<f32>> {
    check_frame(d, n)?;
    let (_, data) = sz3::decompress::<f32, _>(d).map_err(|e| corrupt(&e.to_string()))?;
    let v = data.into_data();
    if v.len() != n {
        return Err(corrupt("SZ3 decoded the wrong number of values"));
    }
    Ok(v)
}

/// The axis `j` of AoS `pos`, non-finite values replaced (module doc).
fn axis(pos: &[f32], j: usize) -> Vec<f32> {
    let mut last = 0.0f32;
    pos.iter()
        .skip(j)
        .step_by(3)
        .map(|&x| {
            if x.is_finite() {
                last = x;
            }
            last
        })
        .collect()
}

pub fn encode(pos: &[f32], xi: f64) -> Result<(Sections, Vec<f32>)> {
    let n = pos.len() / 3;
    if n == 0 {
        return Ok((vec![(SECTION, Vec::new())], Vec::new()));
    }
    let mut streams = Vec::with_capacity(3);
    for j in 0..3 {
        streams.push(compress_axis(&axis(pos, j), xi)?);
    }
    let mut sec = Vec::new();
    for s in &streams {
        put_uvarint(&mut sec, s.len() as u64);
    }
    for s in &streams {
        sec.extend_from_slice(s);
    }
    // What decode gives back, by running it (SZ3 is deterministic).
    let out = from_axes(&streams, n)?;
    Ok((vec![(SECTION, sec)], out))
}

fn from_axes(streams: &[Vec<u8>], n: usize) -> Result<Vec<f32>> {
    let mut out = vec![0f32; 3 * n];
    for (j, s) in streams.iter().enumerate() {
        let v = decompress_axis(s, n)?;
        for (o, x) in out.iter_mut().skip(j).step_by(3).zip(v) {
            *o = x;
        }
    }
    Ok(out)
}

pub fn decode(p: &Parsed, n: usize, _xi: f64) -> Result<Vec<f32>> {
    // SZ3 output is rarely larger than the input; allow twice plus headers.
    let max = n.saturating_mul(24).saturating_add(4096);
    let sec = p.section(SECTION, max)?;
    if n == 0 {
        if !sec.is_empty() {
            return Err(corrupt("stream of no particles has data"));
        }
        return Ok(Vec::new());
    }
    let mut at = 0;
    let mut lens = [0usize; 3];
    for l in &mut lens {
        *l = get_uvarint_max(&sec, &mut at, sec.len() as u64, "sz3 base stream length")?;
    }
    let mut streams = Vec::with_capacity(3);
    for l in lens {
        let s = sec
            .get(at..at + l)
            .ok_or_else(|| corrupt("section is truncated"))?;
        streams.push(s.to_vec());
        at += l;
    }
    if at != sec.len() {
        return Err(corrupt("trailing bytes"));
    }
    from_axes(&streams, n)
}

/// Bytes of a section before the first SZ3 body: the length varints and the
/// first stream's 16-byte frame header (what decoding checks before SZ3 runs).
#[cfg(test)]
fn framing_len(sec: &[u8]) -> usize {
    let mut at = 0;
    for _ in 0..3 {
        crate::codec::varint::get_uvarint(sec, &mut at).unwrap();
    }
    at + 16
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_base, mutations};
    use super::super::Base;

    #[test]
    fn round_trips_and_bounds() {
        check_base(Base::Sz3, 8);
    }

    #[test]
    fn corrupt_sections_are_errors() {
        mutations(Base::Sz3, super::framing_len);
    }
}
