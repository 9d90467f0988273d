//! Field streams: `Parts` to container sections and back, entropy-coded with the
//! stream's coder. Section ids and the mode byte are format constants.
//!
//! | section | content |
//! |---|---|
//! | 1 MASK | exact-vertex bitmap, grid order, LSB first, coded as bytes |
//! | 2 RAW | bit patterns of exact vertices, (u, v) per vertex in processing order (an f64 as two u32 words, low first), split into 4 byte planes, coded as bytes |
//! | 3 IDS | bound ids, coded as u32 symbols; mode S from format version 5: as one segment with its form ([`ids_in_form`]) |
//! | 4 CODES | zig-zag quantization codes, (u, v) per coded vertex, coded as u32 symbols; mode S from format version 4: in segments ([`segmented`]) |
//!
//! A segmented CODES section (mode S from format version 4 on) is the codes
//! cut in runs, each coded on its own (its own frequency tables), back to
//! back: `varint k` (k >= 1), k x `varint symbols`, k x `varint bytes`,
//! then the k payloads. The symbols add up to the section's count and the
//! bytes to the rest of the section, exactly. Where the runs start is the
//! encoder's choice (`speculative::code_segments`: the schedule's phases);
//! the decoder needs only the lengths. From format version 5 on each payload
//! starts with its form (`codec::zero_runs`: the run as it is, or as zero
//! runs and nonzero values), chosen per run by size.
//!
//! Mode 0 (lossless) has only RAW, holding every vertex's (u, v) bit patterns in grid
//! order as plain little-endian words (not entropy-coded, so its size is exact:
//! the worst case of every stream).

use super::parts::Parts;
use super::{speculative, Mode};
use crate::codec::planes::{count_bits, from_planes, pack_bits, to_planes, unpack_bits};
use crate::codec::varint::{get_uvarint, put_uvarint};
use crate::codec::{
    decode_bytes, decode_u32, decode_u32_into, encode_bytes, encode_u32, zero_runs, Coder,
};
use crate::error::{Error, Result};
use crate::format::{self, Header, Kind, Parsed};
use rayon::prelude::*;
use std::borrow::Cow;

pub const SEC_MASK: u32 = 1;
pub const SEC_RAW: u32 = 2;
pub const SEC_IDS: u32 = 3;
pub const SEC_CODES: u32 = 4;

pub const MODE_LOSSLESS: u8 = 0;

/// The first format version whose mode S streams hold their codes in
/// segments.
pub const SEGMENTED_SINCE: u16 = 4;

/// The first format version whose segments start with their form
/// (`codec::zero_runs`): as they are, or as zero runs.
pub const FORMS_SINCE: u16 = 5;

/// Whether the stream's segments start with their form (version 5 on).
pub fn has_forms(header: &Header) -> bool {
    header.version >= FORMS_SINCE
}

/// Whether the stream's CODES section is segmented.
pub fn segmented(header: &Header) -> bool {
    header.mode == Mode::Speculative as u8 && header.version >= SEGMENTED_SINCE
}

/// Where the segments of the CODES section start, for `n_codes` codes of a
/// stream of this library's version in `mode` (None: not segmented).
pub fn segments_for(mode: Mode, ny: usize, nx: usize, n_codes: usize) -> Option<Vec<usize>> {
    (mode == Mode::Speculative).then(|| speculative::code_segments(ny, nx, n_codes))
}

/// Entropy-code the parts into a complete stream.
pub fn write(header: &Header, parts: &Parts, coder: Coder, zstd_level: i32) -> Result<Vec<u8>> {
    if header.mode == MODE_LOSSLESS {
        let plain = parts.raw.iter().flat_map(|w| w.to_le_bytes()).collect();
        return format::write(header, &[(SEC_RAW, plain)], zstd_level);
    }
    let [ny, nx, _] = header.dims.map(|d| d as usize);
    let segments = segmented(header).then(|| speculative::code_segments(ny, nx, parts.codes.len()));
    write_coded(header, code(parts, coder, segments.as_deref()), zstd_level)
}

/// Entropy-code a coded mode's parts into its four sections, the codes in
/// segments starting at `segments` where given ([`segments_for`]), and then
/// the ids as one segment in its form.
pub fn code(parts: &Parts, coder: Coder, segments: Option<&[usize]>) -> Coded {
    let codes = match segments {
        None => encode_u32(coder, &parts.codes),
        Some(starts) => {
            let runs: Vec<(usize, Vec<u8>)> = runs(starts, parts.codes.len())
                .into_par_iter()
                .map(|r| (r.len(), zero_runs::encode_segment(coder, &parts.codes[r])))
                .collect();
            join_segments(&runs)
        }
    };
    Coded {
        mask: encode_bytes(coder, &pack_bits(&parts.exact)),
        raw: encode_bytes(coder, &to_planes(&parts.raw)),
        // Mode S (segmented codes) from version 5: the ids are one segment.
        ids: match segments {
            Some(_) => zero_runs::encode_segment(coder, &parts.ids),
            None => encode_u32(coder, &parts.ids),
        },
        codes,
    }
}

/// The runs `starts` cuts `0..len` into (starts ascending from 0; those at
/// or past `len` give empty runs, which are dropped but for the first).
pub fn runs(starts: &[usize], len: usize) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for (k, &a) in starts.iter().enumerate() {
        let b = starts.get(k + 1).map_or(len, |&b| b.min(len));
        let a = a.min(len);
        if a < b || out.is_empty() {
            out.push(a..b.max(a));
        }
    }
    if out.is_empty() {
        out.push(0..len);
    }
    out
}

/// A segmented CODES section from its coded runs `(symbols, payload)`.
pub fn join_segments(runs: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.1.len() + 8).sum::<usize>() + 4);
    put_uvarint(&mut out, runs.len() as u64);
    for (symbols, _) in runs {
        put_uvarint(&mut out, *symbols as u64);
    }
    for (_, payload) in runs {
        put_uvarint(&mut out, payload.len() as u64);
    }
    for (_, payload) in runs {
        out.extend_from_slice(payload);
    }
    out
}

/// The runs `(symbols, payload)` of a segmented CODES section of `count`
/// symbols, every length checked against the section.
pub fn split_segments(data: &[u8], count: usize) -> Result<Vec<(usize, &[u8])>> {
    let bad = |why: &str| Error::corrupt(format!("segmented codes section: {why}"));
    let mut pos = 0;
    let k = get_uvarint(data, &mut pos)?;
    // Each segment takes at least two bytes of lengths.
    if k == 0 || k > data.len() as u64 {
        return Err(bad("bad segment count"));
    }
    let k = k as usize;
    // k running totals of varint lengths, each at most `limit`.
    let mut totals = |limit: usize, why: &str| -> Result<Vec<usize>> {
        let mut total = 0usize;
        (0..k)
            .map(|_| {
                let x = get_uvarint(data, &mut pos)?;
                total = usize::try_from(x)
                    .ok()
                    .and_then(|x| total.checked_add(x))
                    .filter(|&t| t <= limit)
                    .ok_or_else(|| bad(why))?;
                Ok(total)
            })
            .collect()
    };
    let symbols = totals(count, "more symbols than the stream holds")?;
    if symbols.last() != Some(&count) {
        return Err(bad("fewer symbols than the stream holds"));
    }
    let ends = totals(data.len(), "a segment runs past the section")?;
    let bytes = *ends.last().unwrap_or(&0);
    let body = &data[pos..];
    if bytes != body.len() {
        return Err(bad("segment lengths do not add up to the section"));
    }
    let mut out = Vec::with_capacity(k);
    let (mut s0, mut b0) = (0, 0);
    for (&s, &b) in symbols.iter().zip(&ends) {
        out.push((s - s0, &body[b0..b]));
        (s0, b0) = (s, b);
    }
    Ok(out)
}

/// The CODES section's `count` symbols, segmented or not as the stream says.
fn section_codes(p: &Parsed, coder: Coder, count: usize) -> Result<Vec<u32>> {
    if !segmented(&p.header) {
        return section_u32(p, SEC_CODES, coder, count);
    }
    let data = section(p, SEC_CODES, count)?;
    let runs = split_segments(&data, count)?;
    let mut out = vec![0u32; count];
    // Each run into its own part of `out`.
    let mut rest = &mut out[..];
    let mut parts = Vec::with_capacity(runs.len());
    for (symbols, payload) in runs {
        let (part, tail) = rest.split_at_mut(symbols);
        parts.push((part, payload));
        rest = tail;
    }
    let forms = has_forms(&p.header);
    parts.into_par_iter().try_for_each(|(part, payload)| {
        if forms {
            zero_runs::decode_segment_into(coder, payload, part)
        } else {
            decode_u32_into(coder, payload, part)
        }
    })?;
    Ok(out)
}

/// Whether the IDS section is one segment with a form (mode S from
/// version 5 on).
pub fn ids_in_form(header: &Header) -> bool {
    segmented(header) && has_forms(header)
}

/// The IDS section's `count` ids, in a form or not as the stream says.
fn section_ids(p: &Parsed, coder: Coder, count: usize) -> Result<Vec<u32>> {
    if !ids_in_form(&p.header) {
        return section_u32(p, SEC_IDS, coder, count);
    }
    let mut out = vec![0u32; count];
    zero_runs::decode_segment_into(coder, &section(p, SEC_IDS, count)?, &mut out)?;
    Ok(out)
}

/// A coded mode's four sections, entropy-coded: what [`write`] stores, for a
/// writer that codes some of them elsewhere (the GPU pipeline codes the ids
/// and codes where the kernels left them).
pub struct Coded {
    pub mask: Vec<u8>,
    pub raw: Vec<u8>,
    pub ids: Vec<u8>,
    pub codes: Vec<u8>,
}

/// A stream of a coded mode (B or S) from its coded sections.
pub fn write_coded(header: &Header, c: Coded, zstd_level: i32) -> Result<Vec<u8>> {
    let sections = [
        (SEC_MASK, c.mask),
        (SEC_RAW, c.raw),
        (SEC_IDS, c.ids),
        (SEC_CODES, c.codes),
    ];
    format::write(header, &sections, zstd_level)
}

/// Ceiling on any coded section of a field of n vertices: no coder expands a
/// symbol past a few bytes, plus tables.
fn ceiling(n: usize) -> usize {
    n.saturating_mul(24).saturating_add(1 << 20)
}

/// Section `id` as stored (zstd undone), bounded by the ceiling of `count`
/// coded symbols.
pub fn section<'a>(p: &'a Parsed, id: u32, count: usize) -> Result<Cow<'a, [u8]>> {
    p.section(id, ceiling(count))
}

fn section_bytes(p: &Parsed, id: u32, coder: Coder, count: usize) -> Result<Vec<u8>> {
    decode_bytes(coder, &section(p, id, count)?, count)
}

fn section_u32(p: &Parsed, id: u32, coder: Coder, count: usize) -> Result<Vec<u32>> {
    decode_u32(coder, &section(p, id, count)?, count)
}

/// The check [`read`] starts with: the stream holds a field.
pub fn check_kind(p: &Parsed) -> Result<()> {
    if p.header.kind != Kind::Field2d {
        return Err(Error::invalid("stream holds particles, not a vector field"));
    }
    Ok(())
}

/// u32 words per value in RAW: 1 for f32, 2 for f64 (low word first).
fn raw_words(p: &Parsed) -> Result<usize> {
    Ok(match format::dtype_name(p.header.dtype)? {
        "f64" => 2,
        _ => 1,
    })
}

/// Decode the sections of a checked stream into parts; `ids_len` maps the number
/// of coded vertices to the number of bound ids the mode stores.
pub fn read(p: &Parsed, n: usize, coder: Coder, ids_len: impl Fn(usize) -> usize) -> Result<Parts> {
    check_kind(p)?;
    let words = raw_words(p)?;
    if p.header.mode == MODE_LOSSLESS {
        let len = 8 * words * n;
        let plain = p.section(SEC_RAW, len)?;
        if plain.len() != len {
            return Err(Error::corrupt(
                "lossless stream has the wrong number of values",
            ));
        }
        let raw = plain
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        return Ok(Parts {
            exact: vec![true; n],
            raw,
            ..Parts::default()
        });
    }
    let (mut parts, n_codes) = read_but_codes(p, n, coder, ids_len)?;
    parts.codes = section_codes(p, coder, n_codes)?;
    Ok(parts)
}

/// [`read`] of a coded mode's stream without the codes: the parts with no
/// codes, and how many codes `SEC_CODES` holds (for a decoder that takes them
/// from the section as it goes).
pub fn read_but_codes(
    p: &Parsed,
    n: usize,
    coder: Coder,
    ids_len: impl Fn(usize) -> usize,
) -> Result<(Parts, usize)> {
    check_kind(p)?;
    let words = raw_words(p)?;
    let mask = section_bytes(p, SEC_MASK, coder, n.div_ceil(8))?;
    let n_exact = count_bits(&mask, n);
    let raw = from_planes(&section_bytes(p, SEC_RAW, coder, 8 * words * n_exact)?);
    let n_coded = n - n_exact;
    let ids = section_ids(p, coder, ids_len(n_coded))?;
    let parts = Parts {
        exact: unpack_bits(&mask, n),
        raw,
        ids,
        codes: Vec::new(),
    };
    Ok((parts, 2 * n_coded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// Codes whose statistics change along the sequence, as mode S's do.
    fn codes(n: usize) -> Vec<u32> {
        let mut s = 7u64;
        (0..n)
            .map(|k| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let spread = 1 + (k * 8 / n.max(1)) as u64 * 3;
                ((s >> 33) % spread) as u32
            })
            .collect()
    }

    #[test]
    fn segmented_codes_decode_as_written() {
        for coder in [Coder::Huffman, Coder::Rans] {
            for (n, starts) in [
                (100_000, vec![0, 30_000, 70_000, 200_000]),
                (5, vec![0]),
                (0, vec![0]),
                (40_000, vec![0, 40_000]),
            ] {
                let parts = Parts {
                    codes: codes(n),
                    ..Parts::default()
                };
                let coded = code(&parts, coder, Some(&starts)).codes;
                let runs = split_segments(&coded, n).unwrap();
                let lens: Vec<usize> = runs.iter().map(|r| r.0).collect();
                let want: Vec<usize> = super::runs(&starts, n).iter().map(|r| r.len()).collect();
                assert_eq!(lens, want, "{coder:?} {n}");
                let back: Vec<u32> = runs
                    .into_iter()
                    .flat_map(|(k, p)| {
                        let mut out = vec![0; k];
                        zero_runs::decode_segment_into(coder, p, &mut out).unwrap();
                        out
                    })
                    .collect();
                assert_eq!(back, parts.codes, "{coder:?} {n}");
            }
        }
        // The layout, byte for byte: count, symbols, bytes, payloads.
        let runs = [(3, vec![1, 2]), (0, vec![]), (300, vec![9])];
        assert_eq!(
            join_segments(&runs),
            [3, 3, 0, 0xac, 0x02, 2, 0, 1, 1, 2, 9]
        );
    }

    #[test]
    fn bad_segment_layouts_are_refused() {
        let good = join_segments(&[(3, vec![1, 2]), (2, vec![9])]);
        assert_eq!(split_segments(&good, 5).unwrap().len(), 2);
        let mut extra = good.clone();
        extra.push(0);
        let mut huge = good.clone();
        huge[0] = 0x7f;
        for (what, data, count) in [
            ("no segment", vec![0u8], 0),
            ("more segments than bytes", huge, 5),
            ("too few symbols", good.clone(), 6),
            ("too many symbols", good.clone(), 4),
            ("a byte too many", extra, 5),
            ("truncated payload", good[..good.len() - 1].to_vec(), 5),
            ("truncated lengths", good[..3].to_vec(), 5),
            ("empty", vec![], 0),
            (
                "overflowing symbols",
                vec![
                    2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 0, 0,
                ],
                3,
            ),
        ] {
            let e = split_segments(&data, count).expect_err(what);
            assert_eq!(e.kind, ErrorKind::CorruptStream, "{what}: {e}");
        }
    }

    #[test]
    fn mode_s_segments_follow_the_schedule() {
        use speculative::MIN_SEGMENT;
        // Too small to cut: one segment.
        assert_eq!(speculative::code_segments(37, 45, 2 * 37 * 45), vec![0]);
        for (ny, nx) in [(1024, 1024), (300, 517), (2, 70_000)] {
            let n = 2 * ny * nx;
            let starts = speculative::code_segments(ny, nx, n);
            assert_eq!(starts[0], 0);
            assert!(starts.len() > 1, "{ny}x{nx}: {starts:?}");
            let ends = starts.iter().skip(1).copied().chain([n]);
            for (a, b) in starts.iter().zip(ends) {
                assert!(b >= a + MIN_SEGMENT, "{ny}x{nx}: {starts:?}");
            }
        }
    }
}
