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
//! A zero-runs body, for a segment of n symbols of which m are not zero,
//! has m + 1 runs (run j: the zeros before nonzero j; run m: the zeros after
//! the last). Each run is a token ([`token`]: the run itself below 8, else
//! its bit length and the bit after its leading one) and the bits below
//! those, raw: run lengths are near uniform in their low bits, which a
//! byte-plane table would spend 256 entries on.
//!
//! | field | content |
//! |---|---|
//! | varint m | the nonzero count |
//! | varint t | the length of the tokens' payload |
//! | varint b | the length of the raw bits |
//! | t bytes | the m + 1 tokens, coded as u32 symbols |
//! | b bytes | each run's bits below its token's, in run order, LSB first ([`super::bits`]); b = ceil(bits / 8) exactly |
//! | rest | the m nonzero values in order, coded as u32 symbols |
//!
//! The runs and m add up to n exactly (checked). The GPU (`gpu::zero_runs`)
//! splits, tokenizes, packs and places with kernels (`kernels/zero_runs.cu`,
//! the token formulas' twins); the body's layout and the rule below are
//! this file's.

use super::bits::{BitReader, BitWriter};
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

/// Runs below this are their own token (kernel twin: `FZK_ZR_DIRECT`).
pub const DIRECT: u32 = 8;
const DIRECT_LOG2: u32 = DIRECT.trailing_zeros();
/// The largest token: a run of 31 bits whose second bit is set.
pub const MAX_TOKEN: u32 = DIRECT + 2 * (31 - DIRECT_LOG2) + 1;

/// Run `r`'s token and the count of its raw bits (the low bits of `r`).
///
/// Kernel twin: kernels/zero_runs.cu `fzz_token`.
#[inline]
pub fn token(r: u32) -> (u32, u32) {
    if r < DIRECT {
        return (r, 0);
    }
    let k = 31 - r.leading_zeros();
    (DIRECT + 2 * (k - DIRECT_LOG2) + (r >> (k - 1) & 1), k - 1)
}

/// The raw bits of token `t` (None: not a token).
///
/// Kernel twin: kernels/zero_runs.cu `fzz_token_bits`.
#[inline]
pub fn token_bits(t: u32) -> Option<u32> {
    match t {
        _ if t < DIRECT => Some(0),
        _ if t <= MAX_TOKEN => Some(DIRECT_LOG2 + (t - DIRECT) / 2 - 1),
        _ => None,
    }
}

/// The run of token `t` (a token) with raw bits `low`.
///
/// Kernel twin: kernels/zero_runs.cu `fzz_run`.
#[inline]
pub fn run_of(t: u32, low: u32) -> u32 {
    if t < DIRECT {
        return t;
    }
    let k = DIRECT_LOG2 + (t - DIRECT) / 2;
    1 << k | ((t - DIRECT) & 1) << (k - 1) | low
}

/// The runs' tokens and their raw bits, packed.
pub fn tokens(runs: &[u32]) -> (Vec<u32>, Vec<u8>) {
    let mut bits = BitWriter::with_capacity(runs.len());
    let tokens = runs
        .iter()
        .map(|&r| {
            let (t, n) = token(r);
            bits.put(u64::from(r) & ((1 << n) - 1), n);
            t
        })
        .collect();
    (tokens, bits.finish())
}

/// The raw bits' total for `tokens`, checked against `raw`'s length (and
/// the tokens checked to be tokens).
pub fn raw_len_check(total_bits: u64, raw: usize) -> Result<()> {
    if total_bits.div_ceil(8) != raw as u64 {
        return Err(Error::corrupt(
            "zero-runs segment: the raw bits do not fit the tokens",
        ));
    }
    Ok(())
}

/// The error for a token past [`MAX_TOKEN`].
pub fn bad_token() -> Error {
    Error::corrupt("zero-runs segment: a run token out of range")
}

/// The runs from their tokens and raw bits (inverse of [`tokens`]).
pub fn untokens(tokens: &[u32], raw: &[u8]) -> Result<Vec<u32>> {
    let mut total = 0u64;
    for &t in tokens {
        total += u64::from(token_bits(t).ok_or_else(bad_token)?);
    }
    raw_len_check(total, raw.len())?;
    let mut bits = BitReader::new(raw);
    Ok(tokens
        .iter()
        .map(|&t| {
            let n = token_bits(t).unwrap_or(0);
            run_of(t, bits.get(n))
        })
        .collect())
}

/// The zero runs (m + 1) and the nonzero values (m) of `symbols`.
pub fn split(symbols: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut runs = Vec::new();
    let mut values = Vec::new();
    let mut run = 0u32;
    let mut step = |s: u32| {
        if s == 0 {
            run += 1;
        } else {
            runs.push(run);
            values.push(s);
            run = 0;
        }
    };
    // Mostly zeros: all-zero chunks go whole (an OR the compiler vectorizes).
    let mut chunks = symbols.chunks_exact(16);
    for c in &mut chunks {
        if c.iter().fold(0, |a, &s| a | s) == 0 {
            c.iter().for_each(|_| step(0));
        } else {
            c.iter().for_each(|&s| step(s));
        }
    }
    chunks.remainder().iter().for_each(|&s| step(s));
    runs.push(run);
    (runs, values)
}

/// How many of `symbols` are not zero.
pub fn nonzero(symbols: &[u32]) -> usize {
    symbols.iter().map(|&s| usize::from(s != 0)).sum()
}

/// A zero-runs body's parts after the form byte: the nonzero count m, the
/// tokens' payload, the raw bits and the values' payload.
pub struct Body<'a> {
    pub m: usize,
    pub tokens: &'a [u8],
    pub raw: &'a [u8],
    pub values: &'a [u8],
}

/// A zero-runs body, form byte first, from its coded parts (the layout
/// above).
pub fn body(b: &Body) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.tokens.len() + b.raw.len() + b.values.len() + 20);
    out.push(ZERO_RUNS);
    put_uvarint(&mut out, b.m as u64);
    put_uvarint(&mut out, b.tokens.len() as u64);
    put_uvarint(&mut out, b.raw.len() as u64);
    out.extend_from_slice(b.tokens);
    out.extend_from_slice(b.raw);
    out.extend_from_slice(b.values);
    out
}

/// A zero-runs body (after the form byte) of a segment of n symbols.
pub fn parse(data: &[u8], n: usize) -> Result<Body<'_>> {
    let bad = |why: &str| Error::corrupt(format!("zero-runs segment: {why}"));
    let mut pos = 0;
    let m = get_uvarint(data, &mut pos)?;
    if m > n as u64 {
        return Err(bad("more nonzero symbols than the segment holds"));
    }
    let t = get_uvarint(data, &mut pos)?;
    let b = get_uvarint(data, &mut pos)?;
    let rest = (data.len() - pos) as u64;
    if t > rest || b > rest - t {
        return Err(bad("the runs run past the segment"));
    }
    let (tokens, rest) = data[pos..].split_at(t as usize);
    let (raw, values) = rest.split_at(b as usize);
    Ok(Body {
        m: m as usize,
        tokens,
        raw,
        values,
    })
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
    let as_is = || plain(&encode_u32(coder, symbols));
    if !worth_trying(symbols.len(), nonzero(symbols)) {
        return as_is();
    }
    smaller(as_is(), encode_zero_runs(coder, symbols))
}

/// The plain form's payload: its coded symbols after the form byte.
pub fn plain(coded: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(coded.len() + 1);
    out.push(PLAIN);
    out.extend_from_slice(coded);
    out
}

/// The form a segment keeps of its two: the zero runs only when strictly
/// smaller (CPU and GPU alike, so they write the same bytes).
pub fn smaller(plain: Vec<u8>, zero_runs: Vec<u8>) -> Vec<u8> {
    if zero_runs.len() < plain.len() {
        zero_runs
    } else {
        plain
    }
}

/// The zero-runs form of `symbols`, form byte first, whatever its size.
pub fn encode_zero_runs(coder: Coder, symbols: &[u32]) -> Vec<u8> {
    let (runs, values) = split(symbols);
    let (tokens, raw) = tokens(&runs);
    let (tokens, coded) = rayon::join(|| encode_u32(coder, &tokens), || encode_u32(coder, &values));
    body(&Body {
        m: values.len(),
        tokens: &tokens,
        raw: &raw,
        values: &coded,
    })
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
            let b = parse(rest, out.len())?;
            let mut t = vec![0u32; b.m + 1];
            let mut v = vec![0u32; b.m];
            let (x, y) = rayon::join(
                || decode_u32_into(coder, b.tokens, &mut t),
                || decode_u32_into(coder, b.values, &mut v),
            );
            x?;
            y?;
            place(&untokens(&t, b.raw)?, &v, out)
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
        let coded = zr_body(Coder::Rans, &[50_000], &[]);
        let mut out = vec![1u32; 50_000];
        decode_segment_into(Coder::Rans, &coded, &mut out).unwrap();
        assert!(out.iter().all(|&x| x == 0));
    }

    #[test]
    fn tokens_round_trip() {
        let mut runs: Vec<u32> = (0..2000).collect();
        for k in 3..32 {
            let p = 1u32 << k;
            runs.extend([p - 1, p, p + 1, p | p >> 1, (p - 1) | p]);
        }
        runs.push(u32::MAX);
        let (tokens, raw) = tokens(&runs);
        assert!(tokens.iter().all(|&t| t <= MAX_TOKEN));
        assert_eq!(token(u32::MAX).0, MAX_TOKEN);
        assert_eq!(untokens(&tokens, &raw).unwrap(), runs);
        for r in [0, 7, 8, 15, 16, 1000, u32::MAX] {
            let (t, n) = token(r);
            assert_eq!(token_bits(t), Some(n), "{r}");
            assert_eq!(run_of(t, r & ((1u64 << n) - 1) as u32), r);
        }
        assert_eq!(token_bits(MAX_TOKEN + 1), None);
    }

    /// A zero-runs body of these runs and values, whether they fit or not.
    fn zr_body(coder: Coder, runs: &[u32], values: &[u32]) -> Vec<u8> {
        let (t, raw) = tokens(runs);
        body(&Body {
            m: values.len(),
            tokens: &encode_u32(coder, &t),
            raw: &raw,
            values: &encode_u32(coder, values),
        })
    }

    #[test]
    fn bad_segments_are_refused() {
        let coder = Coder::Rans;
        let n = 5000;
        let (runs, values) = split(&sparse(n, 40, 9));
        let m = values.len();
        let good = zr_body(coder, &runs, &values);
        let mut out = vec![0u32; n];
        decode_segment_into(coder, &good, &mut out).unwrap();
        // Run j set to k.
        let with_run = |j: usize, k: u32| {
            let mut r = runs.clone();
            r[j] = k;
            zr_body(coder, &r, &values)
        };
        let long = (0..=m).max_by_key(|&j| runs[j]).unwrap();
        let with_parts = |m: usize, tokens: &[u32], raw: &[u8]| {
            body(&Body {
                m,
                tokens: &encode_u32(coder, tokens),
                raw,
                values: &encode_u32(coder, &values),
            })
        };
        let (toks, raw) = tokens(&runs);
        let mut past = toks.clone();
        past[3] = MAX_TOKEN + 1;
        let mut longer = raw.clone();
        longer.push(0);
        for (what, data) in [
            ("empty", vec![]),
            ("unknown form", vec![9, 0]),
            ("a count past the segment", with_parts(n + 1, &toks, &raw)),
            ("runs past the segment", {
                let mut d = vec![ZERO_RUNS, 1, 200, 0];
                d.extend_from_slice(&[0; 10]);
                d
            }),
            ("raw bits past the segment", {
                let mut d = vec![ZERO_RUNS, 1, 0, 200];
                d.extend_from_slice(&[0; 10]);
                d
            }),
            ("runs short of the segment", with_run(long, runs[long] - 1)),
            ("runs past the end", with_run(0, runs[0] + 6000)),
            ("runs wrapping u32", with_run(0, u32::MAX)),
            ("a token out of range", with_parts(m, &past, &raw)),
            ("raw bits too long", with_parts(m, &toks, &longer)),
            (
                "raw bits too short",
                with_parts(m, &toks, &raw[..raw.len() - 1]),
            ),
            ("truncated", good[..good.len() - 1].to_vec()),
        ] {
            let e = decode_segment_into(coder, &data, &mut out).expect_err(what);
            assert_eq!(e.kind, ErrorKind::CorruptStream, "{what}: {e}");
        }
    }
}
