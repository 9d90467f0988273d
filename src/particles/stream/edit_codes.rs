//! The EDIT_CODES section since format version 3: each edit code as a token
//! (its magnitude's bit length and trailing zeros) entropy-coded with the
//! stream's coder, and raw bits for the sign and the bits between.
//!
//! The safe method picks, of the codes that land in a particle's ball, the one
//! with the most trailing zeros (`safe::coarsest_edit`): a loose ball takes a
//! code with a few high bits. Its magnitude m is then fixed by the bit length
//! `len`, the trailing zeros `k` (bits `len - 1` and `k` are set) and the
//! `len - k - 2` bits between, which are near uniform. The tokens carry all the
//! skew: on 1M clustered particles they cost 7.7-9.6 bits per edit where the
//! zig-zag codes' byte planes cost 8.4-10.0.
//!
//! The optimiser's codes (`correct`) have no such structure, and their byte
//! planes can code smaller: the encoder writes both layouts and keeps the
//! smaller one.
//!
//! ```text
//! u8      layout         0: zig-zag codes, codec::encode_u32 (the version 2 section
//!                        follows); 1: tokens, as below
//! varint  token bytes    length of the coded tokens
//! bytes   tokens         one per edit (codec::encode_u32 with the stream's coder):
//!                        0 for code 0, else 1 + len (len - 1) / 2 + k (k < len <= 32)
//! bytes   raw bits       per nonzero code, LSB first: the sign (1 = negative), then
//!                        bits k + 1 ..= len - 2 of m; zero-padded to a byte
//! ```

use crate::codec::bits::{BitReader, BitWriter};
use crate::codec::varint::{get_u8, get_uvarint_max, put_uvarint};
use crate::codec::{decode_u32, encode_u32, unzigzag, zigzag, Coder};
use crate::error::{Error, Result};
use rayon::prelude::*;

/// The first format version whose EDIT_CODES section has this layout.
pub const VERSION: u16 = 3;

/// Section layouts.
const ZIGZAG: u8 = 0;
const TOKENS: u8 = 1;

/// Codes per piece of the parallel decode.
const PIECE: usize = 1 << 16;

/// Largest token (len = 32, k = 31).
const MAX_TOKEN: u32 = 1 + 32 * 31 / 2 + 31;

/// Token of magnitude `m`, and its bit length and trailing zeros.
#[inline]
fn token_of(m: u32) -> (u32, u32, u32) {
    if m == 0 {
        return (0, 0, 0);
    }
    let (len, k) = (32 - m.leading_zeros(), m.trailing_zeros());
    (1 + len * (len - 1) / 2 + k, len, k)
}

/// Bit length and trailing zeros of every token (index 0, code 0, unused).
const SHAPES: [(u8, u8); MAX_TOKEN as usize + 1] = shapes();

const fn shapes() -> [(u8, u8); MAX_TOKEN as usize + 1] {
    let mut t = [(0, 0); MAX_TOKEN as usize + 1];
    let mut len = 1;
    while len <= 32 {
        let mut k = 0;
        while k < len {
            t[(1 + len * (len - 1) / 2 + k) as usize] = (len as u8, k as u8);
            k += 1;
        }
        len += 1;
    }
    t
}

/// Bit length and trailing zeros of a nonzero token (`1..=MAX_TOKEN`).
#[inline]
fn shape_of(t: u32) -> (u32, u32) {
    let (len, k) = SHAPES[t as usize];
    (u32::from(len), u32::from(k))
}

/// Raw bits a valid token carries: the sign and the bits between (none for 0).
#[inline]
fn raw_bits(t: u32) -> u32 {
    if t == 0 {
        return 0;
    }
    let (len, k) = shape_of(t);
    1 + between(len, k)
}

/// Bits strictly between the top bit and bit k.
#[inline]
fn between(len: u32, k: u32) -> u32 {
    len.saturating_sub(k + 2)
}

pub fn encode(coder: Coder, codes: &[i32]) -> Vec<u8> {
    let mut tokens = Vec::with_capacity(codes.len());
    let mut raw = BitWriter::with_capacity(codes.len());
    for &q in codes {
        let m = q.unsigned_abs();
        let (t, len, k) = token_of(m);
        tokens.push(t);
        if m != 0 {
            let mid = between(len, k);
            raw.put(u64::from(q < 0), 1);
            raw.put((u64::from(m) >> (k + 1)) & ((1u64 << mid) - 1), mid);
        }
    }
    let coded = encode_u32(coder, &tokens);
    let raw = raw.finish();
    let zigzags: Vec<u32> = codes.iter().map(|&q| zigzag(q)).collect();
    let plain = encode_u32(coder, &zigzags);
    if plain.len() <= coded.len() + raw.len() + 4 {
        let mut out = vec![ZIGZAG];
        out.extend_from_slice(&plain);
        return out;
    }
    let mut out = Vec::with_capacity(coded.len() + raw.len() + 8);
    out.push(TOKENS);
    put_uvarint(&mut out, coded.len() as u64);
    out.extend_from_slice(&coded);
    out.extend_from_slice(&raw);
    out
}

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("edit codes: {what}"))
}

/// Zig-zag codes as `codec::encode_u32` coded them: layout 0, and the whole
/// section before format version 3.
pub fn decode_zigzag(coder: Coder, data: &[u8], count: usize) -> Result<Vec<i32>> {
    Ok(decode_u32(coder, data, count)?
        .into_iter()
        .map(unzigzag)
        .collect())
}

/// Decodes `count` codes; a magnitude past i32 is an error, the caller checks
/// the edit range.
pub fn decode(coder: Coder, data: &[u8], count: usize) -> Result<Vec<i32>> {
    let mut at = 0;
    match get_u8(data, &mut at, "edit codes layout")? {
        ZIGZAG => return decode_zigzag(coder, &data[at..], count),
        TOKENS => {}
        _ => return Err(corrupt("unknown layout")),
    }
    let len = get_uvarint_max(data, &mut at, data.len() as u64, "edit token bytes")? as usize;
    let coded = data
        .get(at..at + len)
        .ok_or_else(|| corrupt("tokens are truncated"))?;
    let tokens = decode_u32(coder, coded, count)?;
    if tokens.len() != count {
        return Err(corrupt("token count does not match"));
    }
    // Each piece's raw bits start where the pieces before it end: the pieces
    // decode in parallel from offsets summed first.
    let piece_bits = tokens
        .par_chunks(PIECE)
        .map(|c| {
            c.iter().try_fold(0u64, |acc, &t| match t {
                0..=MAX_TOKEN => Ok(acc + u64::from(raw_bits(t))),
                _ => Err(corrupt("invalid token")),
            })
        })
        .collect::<Result<Vec<u64>>>()?;
    let raw = &data[at + len..];
    let mut starts = Vec::with_capacity(piece_bits.len());
    let mut total = 0u64;
    for b in piece_bits {
        starts.push(total);
        total += b;
    }
    // The end of the last piece: exactly the section's bits, zero-padded.
    BitReader::at(raw, total).finish()?;
    let mut out = vec![0i32; count];
    out.par_chunks_mut(PIECE)
        .zip(tokens.par_chunks(PIECE))
        .zip(starts.par_iter())
        .try_for_each(|((out, tokens), &start)| {
            let mut r = BitReader::at(raw, start);
            for (o, &t) in out.iter_mut().zip(tokens) {
                if t == 0 {
                    continue;
                }
                let (len, k) = shape_of(t);
                // The sign, then the bits between: one read.
                let v = u64::from(r.get(1 + between(len, k)));
                let m = (1u64 << (len - 1)) | (v >> 1) << (k + 1) | 1u64 << k;
                let q = if v & 1 == 1 { -(m as i64) } else { m as i64 };
                *o = i32::try_from(q).map_err(|_| corrupt("code beyond 32 bits"))?;
            }
            Ok(())
        })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn tokens_name_each_shape_once() {
        let mut seen = std::collections::HashSet::new();
        for len in 1..=32u32 {
            for k in 0..len {
                let m = (1u64 << (len - 1) | 1u64 << k) as u32;
                let (t, l2, k2) = token_of(m);
                assert_eq!((l2, k2), (len, k));
                assert!((1..=MAX_TOKEN).contains(&t));
                assert_eq!(shape_of(t), (len, k), "token {t}");
                assert!(seen.insert(t));
            }
        }
        assert_eq!(seen.len() as u32, MAX_TOKEN);
    }

    #[test]
    fn codes_round_trip() {
        let mut codes: Vec<i32> = (-600..600).collect();
        codes.extend([i32::MIN, i32::MAX, i32::MIN + 1, -(1 << 23), (1 << 23) - 1]);
        codes.extend((0..31).flat_map(|b| [1 << b, -(1 << b), (1 << b) | 1, 3 << b.min(29)]));
        for coder in [Coder::Huffman, Coder::Rans] {
            let e = encode(coder, &codes);
            assert_eq!(decode(coder, &e, codes.len()).unwrap(), codes);
            assert!(decode(coder, &encode(coder, &[]), 0).unwrap().is_empty());
        }
    }

    /// Several parallel pieces, each starting mid-byte in the raw bits.
    #[test]
    fn pieces_round_trip() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let codes: Vec<i32> = (0..3 * PIECE + 17)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let m = (x >> 40) as i32 >> (x % 23);
                if x & 1 == 0 {
                    -m
                } else {
                    m
                }
            })
            .collect();
        for coder in [Coder::Huffman, Coder::Rans] {
            let e = encode(coder, &codes);
            assert_eq!(e[0], TOKENS);
            assert_eq!(decode(coder, &e, codes.len()).unwrap(), codes);
            assert!(decode(coder, &e[..e.len() - 1], codes.len()).is_err());
            let mut longer = e.clone();
            longer.push(0);
            assert!(decode(coder, &longer, codes.len()).is_err());
        }
    }

    /// Coarse codes (few bits between) cost far less than 16 bits each.
    #[test]
    fn coarse_codes_are_cheap() {
        let codes: Vec<i32> = (0..4000)
            .map(|i| ((i % 7) - 3) * (1 << (4 + i % 5)))
            .collect();
        let e = encode(Coder::Rans, &codes);
        assert!(e.len() * 8 < 5 * codes.len(), "{} bytes", e.len());
    }

    /// Codes with no trailing-zero structure keep the zig-zag layout when it
    /// is smaller; structured ones take tokens.
    #[test]
    fn the_smaller_layout_is_kept() {
        // A few odd values: their middle bits are not uniform, byte planes see it.
        let noisy: Vec<i32> = (0..4000).map(|i| [-77, 91, 123, 45][i % 4]).collect();
        let coarse: Vec<i32> = (0..4000).map(|i| ((i % 7) - 3) << 10).collect();
        for (codes, layout) in [(&noisy, ZIGZAG), (&coarse, TOKENS)] {
            let e = encode(Coder::Rans, codes);
            assert_eq!(e[0], layout);
            assert_eq!(&decode(Coder::Rans, &e, codes.len()).unwrap(), codes);
        }
    }

    #[test]
    fn damaged_sections_are_errors() {
        let codes: Vec<i32> = (0..300).map(|i| (i * 37 % 91 - 45) << (i % 6)).collect();
        for coder in [Coder::Huffman, Coder::Rans] {
            let e = encode(coder, &codes);
            for cut in 0..e.len() {
                if let Err(err) = decode(coder, &e[..cut], codes.len()) {
                    assert_eq!(err.kind, ErrorKind::CorruptStream);
                }
            }
            for bit in 0..8 * e.len() {
                let mut m = e.clone();
                m[bit / 8] ^= 1 << (bit % 8);
                if let Err(err) = decode(coder, &m, codes.len()) {
                    assert_eq!(err.kind, ErrorKind::CorruptStream);
                }
            }
            let mut longer = e.clone();
            longer.push(0);
            assert!(decode(coder, &longer, codes.len()).is_err());
            assert!(decode(coder, &e, codes.len() + 1).is_err());
        }
    }
}
