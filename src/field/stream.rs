//! Field streams: `Parts` to container sections and back, entropy-coded with the
//! stream's coder. Section ids and the mode byte are format constants.
//!
//! | section | content |
//! |---|---|
//! | 1 MASK | exact-vertex bitmap, grid order, LSB first, coded as bytes |
//! | 2 RAW | bit patterns of exact vertices, (u, v) per vertex in processing order (an f64 as two u32 words, low first), split into 4 byte planes, coded as bytes |
//! | 3 IDS | bound ids, coded as u32 symbols |
//! | 4 CODES | zig-zag quantization codes, (u, v) per coded vertex, coded as u32 symbols |
//!
//! Mode 0 (lossless) has only RAW, holding every vertex's (u, v) bit patterns in grid
//! order as plain little-endian words (not entropy-coded, so its size is exact:
//! the worst case of every stream).

use super::parts::Parts;
use crate::codec::planes::{count_bits, from_planes, pack_bits, to_planes, unpack_bits};
use crate::codec::{decode_bytes, decode_u32, encode_bytes, encode_u32, Coder};
use crate::error::{Error, Result};
use crate::format::{self, Header, Kind, Parsed};
use std::borrow::Cow;

pub const SEC_MASK: u32 = 1;
pub const SEC_RAW: u32 = 2;
pub const SEC_IDS: u32 = 3;
pub const SEC_CODES: u32 = 4;

pub const MODE_LOSSLESS: u8 = 0;

/// Entropy-code the parts into a complete stream.
pub fn write(header: &Header, parts: &Parts, coder: Coder, zstd_level: i32) -> Result<Vec<u8>> {
    if header.mode == MODE_LOSSLESS {
        let plain = parts.raw.iter().flat_map(|w| w.to_le_bytes()).collect();
        return format::write(header, &[(SEC_RAW, plain)], zstd_level);
    }
    write_coded(header, code(parts, coder), zstd_level)
}

/// Entropy-code a coded mode's parts into its four sections.
pub fn code(parts: &Parts, coder: Coder) -> Coded {
    Coded {
        mask: encode_bytes(coder, &pack_bits(&parts.exact)),
        raw: encode_bytes(coder, &to_planes(&parts.raw)),
        ids: encode_u32(coder, &parts.ids),
        codes: encode_u32(coder, &parts.codes),
    }
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
    parts.codes = section_u32(p, SEC_CODES, coder, n_codes)?;
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
    let ids = section_u32(p, SEC_IDS, coder, ids_len(n_coded))?;
    let parts = Parts {
        exact: unpack_bits(&mask, n),
        raw,
        ids,
        codes: Vec::new(),
    };
    Ok((parts, 2 * n_coded))
}
