//! ZFP base (cargo feature `zfp`): x, y and z each compressed as a 1D float or
//! double array (the positions' own type; the stream header says which) in
//! ZFP's fixed-accuracy mode.
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
//! The streams are `crate::zfp`'s (which never trusts a payload: see there).

use rayon::prelude::*;

use super::Sections;
use crate::codec::varint::{get_u8, get_uvarint_max, put_uvarint};
use crate::error::{Error, Result};
use crate::format::Parsed;
use crate::real::Real;

const SECTION: u32 = super::FIRST_SECTION;
const FORMAT: u8 = 1;
/// ZFP tolerance as a fraction of xi (module doc).
const TOLERANCE_FACTOR: f64 = 1.0;

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("zfp base: {what}"))
}

/// The axis `j` of AoS `pos`, non-finite values replaced (module doc).
fn axis<T: Real>(pos: &[T], j: usize) -> Vec<T> {
    let mut last = T::default();
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

fn tolerance_for(xi: f64) -> f64 {
    xi.min(1e39) * TOLERANCE_FACTOR
}

pub fn encode<T: Real>(pos: &[T], xi: f64) -> Result<(Sections, Vec<T>)> {
    let n = pos.len() / 3;
    if n == 0 {
        return Ok((vec![(SECTION, Vec::new())], Vec::new()));
    }
    let tol = tolerance_for(xi);
    let streams: Vec<Vec<u8>> = (0..3)
        .into_par_iter()
        .map(|j| crate::zfp::compress(&axis(pos, j), &[n], tol))
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

fn from_axes<T: Real>(streams: &[&[u8]], n: usize, tol: f64) -> Result<Vec<T>> {
    let axes: Vec<Vec<T>> = streams
        .par_iter()
        .map(|s| crate::zfp::decompress(s, &[n], tol))
        .collect::<Result<_>>()?;
    let mut out = vec![T::default(); 3 * n];
    for (j, v) in axes.into_iter().enumerate() {
        for (o, x) in out.iter_mut().skip(j).step_by(3).zip(v) {
            *o = x;
        }
    }
    Ok(out)
}

pub fn decode<T: Real>(p: &Parsed, n: usize, xi: f64) -> Result<Vec<T>> {
    // ZFP's worst case is about 9 bits per value above the type's width; allow
    // a generous ceiling (2x the raw positions).
    let max = n.saturating_mul(6 * T::BYTES).saturating_add(4096);
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
