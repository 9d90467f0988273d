//! ZFP base (cargo feature `zfp`): x, y and z each compressed as a 1D float
//! array in ZFP's fixed-accuracy mode.
//!
//! ZFP's accuracy mode bounds the error by the tolerance only approximately (it
//! cuts bit planes below the largest power of two <= tolerance); the tolerance is
//! `xi * TOLERANCE_FACTOR` = xi: on generated clustered particles at relative bounds
//! 1e-2..1e-7 the largest error was 0.31..0.76 xi, no violation (the decoder
//! refuses a tolerance above xi). Non-finite coordinates are replaced
//! by the axis's previous finite value (0 before the first) before ZFP sees them;
//! the caller stores those particles exactly, and any coordinate ZFP leaves out of
//! bound as well.
//!
//! Section [`FIRST_SECTION`](super::FIRST_SECTION) holds (empty for n = 0):
//!
//! ```text
//! u8      format      1
//! f64     tolerance   ZFP accuracy tolerance (LE), finite and > 0
//! varint  len x3      byte length of each axis's ZFP stream
//! bytes   x, y, z     raw ZFP streams (no ZFP header; parameters come from here),
//!                     flushed to whole 64-bit words, native (little-endian) words
//! ```
//!
//! Decoding never trusts the payload: each stream is copied into a zeroed,
//! word-aligned buffer at least as large as ZFP's own worst-case size for n values
//! at that tolerance (so the decoder cannot read outside it), and a stream whose
//! decoding consumed more than its stored length is corrupt.

use rayon::prelude::*;
use zfp_sys as zs;

use super::Sections;
use crate::codec::varint::{get_u8, get_uvarint_max, put_uvarint};
use crate::error::{Error, Result};
use crate::format::Parsed;

const SECTION: u32 = super::FIRST_SECTION;
const FORMAT: u8 = 1;
/// ZFP tolerance as a fraction of xi (module doc).
const TOLERANCE_FACTOR: f64 = 1.0;
/// Extra zeroed words after every decode buffer.
const PAD_WORDS: usize = 64;

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("zfp base: {what}"))
}

/// Owns the ZFP objects of one (de)compression and frees them on drop.
struct Zfp {
    field: *mut zs::zfp_field,
    stream: *mut zs::zfp_stream,
    bits: *mut zs::bitstream,
}

impl Drop for Zfp {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or was returned by the matching ZFP
        // constructor in `Zfp::new` and is freed exactly once, here.
        unsafe {
            if !self.bits.is_null() {
                zs::stream_close(self.bits);
            }
            if !self.stream.is_null() {
                zs::zfp_stream_close(self.stream);
            }
            if !self.field.is_null() {
                zs::zfp_field_free(self.field);
            }
        }
    }
}

impl Zfp {
    /// A 1D float field over `values` and an accuracy-mode stream over `buf`.
    /// `values` and `buf` must outlive the returned object and not move.
    fn new(values: &mut [f32], tolerance: f64, buf: &mut [u64]) -> Result<Zfp> {
        let fail = || Error::internal("zfp: cannot allocate its objects");
        // SAFETY: ZFP only records the pointers and sizes here; `values` holds
        // `values.len()` floats and `buf` `8 * buf.len()` bytes, both borrowed for
        // as long as the caller keeps the returned object (see the callers).
        let z = unsafe {
            Zfp {
                field: zs::zfp_field_1d(
                    values.as_mut_ptr().cast(),
                    zs::zfp_type_zfp_type_float,
                    values.len(),
                ),
                stream: zs::zfp_stream_open(std::ptr::null_mut()),
                bits: zs::stream_open(buf.as_mut_ptr().cast(), 8 * buf.len()),
            }
        };
        if z.field.is_null() || z.stream.is_null() || z.bits.is_null() {
            return Err(fail());
        }
        // SAFETY: both pointers were just checked non-null and are owned by `z`.
        unsafe {
            zs::zfp_stream_set_accuracy(z.stream, tolerance);
            zs::zfp_stream_set_bit_stream(z.stream, z.bits);
            zs::zfp_stream_rewind(z.stream);
        }
        Ok(z)
    }

    /// Worst-case compressed bytes of `n` floats at `tolerance`.
    fn max_size(n: usize, tolerance: f64) -> Result<usize> {
        let mut dummy = [0u64; 1];
        let mut none: [f32; 0] = [];
        let z = Zfp::new(&mut none, tolerance, &mut dummy)?;
        // SAFETY: `z.field` is valid; only its size is changed (its pointer is
        // never dereferenced by `zfp_stream_maximum_size`).
        Ok(unsafe {
            zs::zfp_field_set_size_1d(z.field, n);
            zs::zfp_stream_maximum_size(z.stream, z.field)
        })
    }
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

fn compress_axis(mut values: Vec<f32>, tolerance: f64) -> Result<Vec<u8>> {
    let max = Zfp::max_size(values.len(), tolerance)?;
    let mut buf = vec![0u64; max.div_ceil(8) + PAD_WORDS];
    let size = {
        let z = Zfp::new(&mut values, tolerance, &mut buf)?;
        // SAFETY: `z` refers to `values` and `buf`, alive and unmoved in this
        // block; `buf` holds at least ZFP's maximum size for this field and mode.
        unsafe {
            let size = zs::zfp_compress(z.stream, z.field);
            if size == 0 {
                return Err(Error::internal("zfp: compression failed"));
            }
            size
        }
    };
    if size > 8 * buf.len() {
        return Err(Error::internal("zfp: compressed size exceeds its buffer"));
    }
    Ok(buf
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take(size)
        .collect())
}

fn decompress_axis(data: &[u8], n: usize, tolerance: f64) -> Result<Vec<f32>> {
    let max = Zfp::max_size(n, tolerance)?;
    if data.len() > max {
        return Err(corrupt("stream longer than ZFP's maximum"));
    }
    let mut buf = vec![0u64; max.div_ceil(8) + PAD_WORDS];
    for (w, c) in buf.iter_mut().zip(data.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(b);
    }
    let mut out = vec![0f32; n];
    let used = {
        let z = Zfp::new(&mut out, tolerance, &mut buf)?;
        // SAFETY: `z` refers to `out` (n floats) and `buf`, alive and unmoved in
        // this block. `buf` is zero-padded beyond ZFP's worst-case size for n
        // values at this tolerance (the parameters ZFP decodes with come from the
        // caller, not the payload), so decoding cannot read outside it.
        unsafe {
            if zs::zfp_decompress(z.stream, z.field) == 0 {
                return Err(corrupt("ZFP could not decode a stream"));
            }
            zs::zfp_stream_compressed_size(z.stream)
        }
    };
    if used > data.len().next_multiple_of(8) {
        return Err(corrupt("ZFP stream is truncated"));
    }
    Ok(out)
}

fn tolerance_for(xi: f64) -> f64 {
    xi.min(1e39) * TOLERANCE_FACTOR
}

pub fn encode(pos: &[f32], xi: f64) -> Result<(Sections, Vec<f32>)> {
    let n = pos.len() / 3;
    if n == 0 {
        return Ok((vec![(SECTION, Vec::new())], Vec::new()));
    }
    let tol = tolerance_for(xi);
    let streams: Vec<Vec<u8>> = (0..3)
        .into_par_iter()
        .map(|j| compress_axis(axis(pos, j), tol))
        .collect::<Result<_>>()?;
    let mut sec = vec![FORMAT];
    sec.extend_from_slice(&tol.to_le_bytes());
    for s in &streams {
        put_uvarint(&mut sec, s.len() as u64);
    }
    for s in &streams {
        sec.extend_from_slice(s);
    }
    // What decode gives back, by running it (ZFP is deterministic).
    let refs: Vec<&[u8]> = streams.iter().map(|s| s.as_slice()).collect();
    let out = from_axes(&refs, n, tol)?;
    Ok((vec![(SECTION, sec)], out))
}

fn from_axes(streams: &[&[u8]], n: usize, tol: f64) -> Result<Vec<f32>> {
    let axes: Vec<Vec<f32>> = streams
        .par_iter()
        .map(|s| decompress_axis(s, n, tol))
        .collect::<Result<_>>()?;
    let mut out = vec![0f32; 3 * n];
    for (j, v) in axes.into_iter().enumerate() {
        for (o, x) in out.iter_mut().skip(j).step_by(3).zip(v) {
            *o = x;
        }
    }
    Ok(out)
}

pub fn decode(p: &Parsed, n: usize, xi: f64) -> Result<Vec<f32>> {
    // ZFP's worst case is about 36 bits per float; allow a generous ceiling.
    let max = n.saturating_mul(24).saturating_add(4096);
    let sec = p.section(SECTION, max)?;
    if n == 0 {
        if !sec.is_empty() {
            return Err(corrupt("stream of no particles has data"));
        }
        return Ok(Vec::new());
    }
    let mut at = 0;
    if get_u8(&sec, &mut at, "zfp base format")? != FORMAT {
        return Err(corrupt("unknown format"));
    }
    let tol = sec
        .get(at..at + 8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(|| corrupt("truncated header"))?;
    at += 8;
    if !(tol.is_finite() && tol > 0.0 && tol <= xi.min(1e39)) {
        return Err(corrupt("tolerance does not fit the bound"));
    }
    let mut lens = [0usize; 3];
    for l in &mut lens {
        *l = get_uvarint_max(&sec, &mut at, sec.len() as u64, "zfp base stream length")?;
    }
    let mut streams: Vec<&[u8]> = Vec::with_capacity(3);
    for l in lens {
        let s = sec
            .get(at..at + l)
            .ok_or_else(|| corrupt("section is truncated"))?;
        streams.push(s);
        at += l;
    }
    if at != sec.len() {
        return Err(corrupt("trailing bytes"));
    }
    from_axes(&streams, n, tol)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_base, mutations};
    use super::super::Base;

    #[test]
    fn round_trips_and_bounds() {
        check_base(Base::Zfp, 0);
    }

    #[test]
    fn corrupt_sections_are_errors() {
        mutations(Base::Zfp, <[u8]>::len);
    }
}
