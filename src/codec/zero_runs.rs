//! Segment forms (format version 5 on): a segment of u32 symbols is coded
//! either as it is ([`PLAIN`]) or, where most symbols are zero, as its zero
//! runs and nonzero values ([`ZERO_RUNS`]). The first byte of a segment's
//! payload says which.
//!
//! Why: mode S's finest phases are 99% zeros at loose bounds. The byte-plane
//! rANS coder pays a floor per symbol there (32 lane states per 2^17
//! symbols, and 12-bit frequencies that cannot go below 1/4096), so coding
//! 8 M symbols of which 60 k are not zero costs far more than their entropy.
//! As runs, the same segment is 120 k symbols, much less skewed.
//!
//! A zero-runs body, for a segment of n symbols of which m are not zero:
//!
//! | field | content |
//! |---|---|
//! | varint m | the nonzero count |
//! | varint r | the length of the runs' payload |
//! | r bytes | the m + 1 runs, coded as u32 symbols: run j is the zeros before nonzero j, run m the zeros after the last |
//! | rest | the m nonzero values in order, coded as u32 symbols |
//!
//! The runs and m add up to n exactly (checked). The GPU (`gpu::zero_runs`)
//! splits and places the symbols with kernels; the body's layout and the
//! rule below are this file's.

use super::varint::{get_uvarint, put_uvarint};
use super::{decode_u32_into, encode_u32, Coder};
use crate::error::{Error, Result};

/// A segment's form: its payload's first byte.
pub const PLAIN: u8 = 0;
pub const ZERO_RUNS: u8 = 1;

/// Whether the encoder tries the zero-runs form for a segment of n symbols,
/// m of them not zero: only where at most half are not zero (there the runs
/// and values are no more symbols than the segment, so trying costs at most
/// one more coding of it), and whose runs fit a u32. The CPU and GPU apply
/// the same rule, then keep the smaller body (the plain one on a tie), so
/// they write the same bytes.
pub fn worth_trying(n: usize, m: usize) -> bool {
    n > 0 && m <= n / 2 && n <= u32::MAX as usize
}

/// The check before placing: m values and runs adding up to `total` fill a
/// segment of n symbols exactly.
pub fn check_total(total: u64, m: usize, n: usize) -> Result<()> {
    if total.checked_add(m as u64) != Some(n as u64) {
        return Err(Error::corrupt(
            "zero-runs segment: the runs do not add up to the segment",
        ));
    }
    Ok(())
}

/// The zero runs (m + 1) and the nonzero values (m) of `symbols`.
pub fn split(symbols: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut runs = Vec::new();
    let mut values = Vec::new();
    let mut run = 0u32;
    for &s in symbols {
        if s == 0 {
            run += 1;
        } else {
            runs.push(run);
            values.push(s);
            run = 0;
        }
    }
    runs.push(run);
    (runs, values)
}

/// A zero-runs body from its coded parts (the layout above).
pub fn body(m: usize, runs: &[u8], values: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(runs.len() + values.len() + 20);
    out.push(ZERO_RUNS);
    put_uvarint(&mut out, m as u64);
    put_uvarint(&mut out, runs.len() as u64);
    out.extend_from_slice(runs);
    out.extend_from_slice(values);
    out
}

/// A zero-runs body (after the form byte) of a segment of n symbols: the
/// nonzero count m, the runs' payload and the values' payload.
pub fn parse(data: &[u8], n: usize) -> Result<(usize, &[u8], &[u8])> {
    let bad = |why: &str| Error::corrupt(format!("zero-runs segment: {why}"));
    let mut pos = 0;
    let m = get_uvarint(data, &mut pos)?;
    if m > n as u64 {
        return Err(bad("more nonzero symbols than the segment holds"));
    }
    let r = get_uvarint(data, &mut pos)?;
    if r > (data.len() - pos) as u64 {
        return Err(bad("the runs run past the segment"));
    }
    let (runs, values) = data[pos..].split_at(r as usize);
    Ok((m as usize, runs, values))
}

/// Zeros in `out`, then each value after its run of zeros; the runs and
/// values must add up to `out.len()` exactly.
pub fn place(runs: &[u32], values: &[u32], out: &mut [u32]) -> Result<()> {
    if runs.len() != values.len() + 1 {
        return Err(Error::internal(
            "zero runs: one run more than values needed",
        ));
    }
    check_total(
        runs.iter().map(|&r| r as u64).sum(),
        values.len(),
        out.len(),
    )?;
    out.fill(0);
    let mut at = 0usize;
    for (&r, &v) in runs.iter().zip(values) {
        at += r as usize;
        out[at] = v;
        at += 1;
    }
    Ok(())
}

/// A segment's payload, form byte first: the zero-runs form where
/// [`worth_trying`] and strictly smaller, else the plain one.
pub fn encode_segment(coder: Coder, symbols: &[u32]) -> Vec<u8> {
    let m = symbols.iter().filter(|&&s| s != 0).count();
    let plain = || {
        let mut out = vec![PLAIN];
        out.extend_from_slice(&encode_u32(coder, symbols));
        out
    };
    if !worth_trying(symbols.len(), m) {
        return plain();
    }
    let (runs, values) = split(symbols);
    let (runs, values) = rayon::join(|| encode_u32(coder, &runs), || encode_u32(coder, &values));
    let zr = body(m, &runs, &values);
    let p = plain();
    if zr.len() < p.len() {
        zr
    } else {
        p
    }
}

/// Inverse of [`encode_segment`]: the segment's `out.len()` symbols into
/// `out` (unspecified on error).
pub fn decode_segment_into(coder: Coder, data: &[u8], out: &mut [u32]) -> Result<()> {
    let Some((&form, rest)) = data.split_first() else {
        return Err(no_form());
    };
    match form {
        PLAIN => decode_u32_into(coder, rest, out),
        ZERO_RUNS => {
            let (m, runs, values) = parse(rest, out.len())?;
            let mut r = vec![0u32; m + 1];
            let mut v = vec![0u32; m];
            let (a, b) = rayon::join(
                || decode_u32_into(coder, runs, &mut r),
                || decode_u32_into(coder, values, &mut v),
            );
            a?;
            b?;
            place(&r, &v, out)
        }
        _ => Err(unknown_form(form)),
    }
}

/// The error for an empty segment (no form byte).
pub fn no_form() -> Error {
    Error::corrupt("segment without a form byte")
}

/// The error for a form byte this library does not know.
pub fn unknown_form(form: u8) -> Error {
    Error::corrupt(format!("segment form {form} is unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// Nonzero symbols (1..=9) about one in `every`, in bursts of 8 (as
    /// mode S's near features): short runs within a burst, long between.
    fn sparse(n: usize, every: u64, seed: u64) -> Vec<u32> {
        let mut s = seed;
        let mut burst = 0;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if burst == 0 && (s >> 40) % every == 0 {
                    burst = 8;
                }
                if burst > 0 && (s >> 30) % 2 == 0 {
                    burst -= 1;
                    1 + ((s >> 20) % 9) as u32
                } else {
                    0
                }
            })
            .collect()
    }

    #[test]
    fn split_and_place_are_inverse() {
        for v in [
            vec![],
            vec![0],
            vec![5],
            vec![0, 0, 3, 0, 4, 4, 0],
            vec![1, 0, 0],
            sparse(10_000, 50, 3),
        ] {
            let (runs, values) = split(&v);
            assert_eq!(runs.len(), values.len() + 1);
            let mut out = vec![7u32; v.len()];
            place(&runs, &values, &mut out).unwrap();
            assert_eq!(out, v);
        }
    }

    #[test]
    fn segments_decode_as_written_in_the_smaller_form() {
        for coder in [Coder::Huffman, Coder::Rans] {
            for (n, every, want) in [
                (1_000_000, 3000, ZERO_RUNS),
                (200_000, 1, PLAIN),
                (0, 1, PLAIN),
                (1, 1, PLAIN),
                (300_000, 500, ZERO_RUNS),
            ] {
                let v = sparse(n, every, n as u64);
                let coded = encode_segment(coder, &v);
                assert_eq!(coded[0], want, "{coder:?} n {n} every {every}");
                let mut out = vec![u32::MAX; n];
                decode_segment_into(coder, &coded, &mut out).unwrap();
                assert_eq!(out, v, "{coder:?} n {n} every {every}");
            }
        }
        // All zeros as runs: m = 0, one run (plain is smaller: a constant
        // plane).
        let none = encode_u32(Coder::Rans, &[]);
        let coded = body(0, &encode_u32(Coder::Rans, &[50_000]), &none);
        let mut out = vec![1u32; 50_000];
        decode_segment_into(Coder::Rans, &coded, &mut out).unwrap();
        assert!(out.iter().all(|&x| x == 0));
    }

    #[test]
    fn bad_segments_are_refused() {
        let coder = Coder::Rans;
        let (runs, values) = split(&sparse(5000, 40, 9));
        let m = values.len();
        let good = body(m, &encode_u32(coder, &runs), &encode_u32(coder, &values));
        let (_, runs, _) = parse(&good[1..], 5000).unwrap();
        let runs_vec = |k: usize| {
            let mut r = vec![0u32; m + 1];
            r[0] = k as u32;
            encode_u32(coder, &r)
        };
        let values = encode_u32(coder, &vec![1u32; m]);
        for (what, data, n) in [
            ("empty", vec![], 5000),
            ("unknown form", vec![9, 0], 1),
            ("a count past the segment", body(6000, runs, &values), 5000),
            (
                "runs past the segment",
                {
                    let mut d = vec![ZERO_RUNS, 1, 200];
                    d.extend_from_slice(&[0; 10]);
                    d
                },
                5000,
            ),
            (
                "runs short of the segment",
                body(m, &runs_vec(5), &values),
                5000,
            ),
            ("runs past the end", body(m, &runs_vec(6000), &values), 5000),
            (
                "runs wrapping u32",
                body(m, &runs_vec(u32::MAX as usize), &values),
                5000,
            ),
            ("truncated", good[..good.len() - 1].to_vec(), 5000),
        ] {
            let mut out = vec![0u32; n];
            let e = decode_segment_into(coder, &data, &mut out).expect_err(what);
            assert_eq!(e.kind, ErrorKind::CorruptStream, "{what}: {e}");
        }
    }
}
