//! Particle streams: the correction's sections (ids below
//! [`base::FIRST_SECTION`]) beside the base compressor's, entropy-coded with the
//! stream's coder. Section ids and mode bytes are format constants.
//!
//! | section | content |
//! |---|---|
//! | 1 EXACT | bitmap of particles stored exactly, LSB first, coded as bytes |
//! | 2 EXACT_VALUES | their (x, y, z) bit patterns in particle order as u32 words (an f64 is two, low first), 4 byte planes, coded as bytes |
//! | 3 EDIT_MASK | bitmap of edited coordinates (3 per particle), coded as bytes |
//! | 4 EDIT_CODES | m-bit edit codes of the edited coordinates in order: tokens and raw bits ([`edit_codes`]; before format version 3, zig-zag codes coded as u32) |
//!
//! Mode 0 (lossless) has only EXACT_VALUES, every coordinate as a plain
//! little-endian word (its size is the worst case of every stream). Mode
//! [`MODE_EXTERNAL`] holds only the correction, applied to positions some other
//! compressor decoded. Other modes are the [`Base`] ids.
//!
//! Decoding order: base positions, then edits, then exact particles.

mod edit_codes;

use super::base::{self, Base};
use super::correct::{apply_edit, code_range};
use crate::codec::planes::{count_bits, from_planes, pack_bits, set_bits, to_planes, unpack_bits};
use crate::codec::{decode_bytes, encode_bytes, Coder};
use crate::error::{Error, Result};
use crate::format::Parsed;
use crate::real::Real;
use rayon::prelude::*;

pub const SEC_EXACT: u32 = 1;
pub const SEC_EXACT_VALUES: u32 = 2;
pub const SEC_EDIT_MASK: u32 = 3;
pub const SEC_EDIT_CODES: u32 = 4;

pub const MODE_LOSSLESS: u8 = 0;
/// Correction only, for positions another compressor decoded ("bring your own").
pub const MODE_EXTERNAL: u8 = 4;

/// What a stream's mode byte says produced the base positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Lossless,
    Base(Base),
    External,
}

impl Source {
    pub fn from_mode(mode: u8) -> Option<Source> {
        match mode {
            MODE_LOSSLESS => Some(Source::Lossless),
            MODE_EXTERNAL => Some(Source::External),
            m => Base::from_u8(m).map(Source::Base),
        }
    }
    pub fn mode(self) -> u8 {
        match self {
            Source::Lossless => MODE_LOSSLESS,
            Source::External => MODE_EXTERNAL,
            Source::Base(b) => b as u8,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Source::Lossless => "lossless",
            Source::External => "external",
            Source::Base(b) => b.name(),
        }
    }
}

/// The correction as stored: exact particles and coordinate edits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Correction {
    pub exact: Vec<bool>,
    /// Bit patterns of the exact particles' coordinates, in particle order,
    /// `Real::WORDS` words each (`Real::push_words`).
    pub exact_values: Vec<u32>,
    /// Edited coordinates (index 3 * particle + axis), ascending, with their codes.
    pub edits: Vec<(u64, i32)>,
}

impl Correction {
    /// Build from the original positions, the exact set and the edits.
    pub fn new<T: Real>(orig: &[T], exact: Vec<bool>, edits: Vec<(u64, i32)>) -> Correction {
        let exact_values =
            exact
                .iter()
                .enumerate()
                .filter(|(_, &e)| e)
                .fold(Vec::new(), |mut w, (k, _)| {
                    orig[3 * k..3 * k + 3]
                        .iter()
                        .for_each(|c| c.push_words(&mut w));
                    w
                });
        Correction {
            exact,
            exact_values,
            edits,
        }
    }

    pub fn exact_count(&self) -> usize {
        self.exact.iter().filter(|&&e| e).count()
    }

    /// The four sections, coded side by side (each coder is serial).
    pub fn sections(&self, n: usize, coder: Coder) -> Vec<(u32, Vec<u8>)> {
        let ((exact, values), (mask, codes)) = rayon::join(
            || {
                rayon::join(
                    || encode_bytes(coder, &pack_bits(&self.exact)),
                    || encode_bytes(coder, &to_planes(&self.exact_values)),
                )
            },
            || {
                rayon::join(
                    || {
                        let mut mask = vec![false; 3 * n];
                        for &(c, _) in &self.edits {
                            mask[c as usize] = true;
                        }
                        encode_bytes(coder, &pack_bits(&mask))
                    },
                    || {
                        let codes: Vec<i32> = self.edits.iter().map(|&(_, q)| q).collect();
                        edit_codes::encode(coder, &codes)
                    },
                )
            },
        );
        vec![
            (SEC_EXACT, exact),
            (SEC_EXACT_VALUES, values),
            (SEC_EDIT_MASK, mask),
            (SEC_EDIT_CODES, codes),
        ]
    }
}

/// Particles per piece of [`Stored::apply`]: a multiple of 8, so that each
/// piece's edit-mask bits start on a byte.
const PIECE: usize = 1 << 15;

/// A stream's correction as read and checked: the sections decoded, the
/// edits left as mask and codes, which [`Stored::apply`] applies in parallel
/// pieces. Expanding them into a list first was most of the decode's extra
/// time on large sets (4.7M edits: a 75 MB list built in a serial pass).
pub struct Stored {
    exact: Vec<bool>,
    /// As [`Correction::exact_values`].
    exact_values: Vec<u32>,
    /// One bit per coordinate (3 per particle), LSB first, padded to a byte.
    mask: Vec<u8>,
    /// The edited coordinates' codes, in coordinate order.
    codes: Vec<i32>,
    /// Where each piece's codes and exact particles start among all.
    starts: Vec<(usize, usize)>,
}

impl Stored {
    /// Decode and check the correction sections of a stream of n particles
    /// of element type T.
    pub fn read<T: Real>(p: &Parsed, n: usize, coder: Coder, edit_bits: u32) -> Result<Stored> {
        let bitmap = section_bytes(p, SEC_EXACT, coder, n.div_ceil(8))?;
        let mask = section_bytes(p, SEC_EDIT_MASK, coder, (3 * n).div_ceil(8))?;
        if bitmap.len() != n.div_ceil(8) || mask.len() != (3 * n).div_ceil(8) {
            return Err(Error::corrupt("a correction bitmap has the wrong length"));
        }
        let exact = unpack_bits(&bitmap, n);
        // Each piece's edits and exact particles, then where each starts:
        // the totals size the other two sections.
        let counts: Vec<(usize, usize)> = (0..n.div_ceil(PIECE))
            .into_par_iter()
            .map(|k| {
                let (a, b) = (k * PIECE, ((k + 1) * PIECE).min(n));
                let edits = count_bits(&mask[3 * a / 8..], 3 * (b - a));
                (edits, exact[a..b].iter().filter(|&&e| e).count())
            })
            .collect();
        let mut at = (0, 0);
        let starts = counts
            .iter()
            .map(|&(e, x)| {
                let start = at;
                at = (at.0 + e, at.1 + x);
                start
            })
            .collect();
        let (count, n_exact) = at;
        let words = 3 * T::WORDS * n_exact;
        let exact_values = from_planes(&section_bytes(p, SEC_EXACT_VALUES, coder, 4 * words)?);
        if exact_values.len() != words {
            return Err(Error::corrupt(
                "exact values do not match the exact particles",
            ));
        }
        let coded = p.section(SEC_EDIT_CODES, ceiling(count))?;
        let codes: Vec<i32> = if p.header.version >= edit_codes::VERSION {
            edit_codes::decode(coder, &coded, count)?
        } else {
            edit_codes::decode_zigzag(coder, &coded, count)?
        };
        if codes.len() != count {
            return Err(Error::corrupt("edit code count does not match the mask"));
        }
        let stored = Stored {
            exact,
            exact_values,
            mask,
            codes,
            starts,
        };
        let (lo, hi) = code_range(edit_bits);
        (0..stored.starts.len()).into_par_iter().try_for_each(|k| {
            let (exact, edits) = stored.piece(k);
            for (c, &q) in edits {
                if q < lo || q > hi {
                    return Err(Error::corrupt("edit code out of range"));
                }
                if exact[c / 3] {
                    return Err(Error::corrupt("edit on an exactly stored particle"));
                }
            }
            Ok(())
        })?;
        Ok(stored)
    }

    /// Piece k's exact flags, and its edits: coordinate (within the piece)
    /// and code.
    fn piece(&self, k: usize) -> (&[bool], impl Iterator<Item = (usize, &i32)>) {
        let a = k * PIECE;
        let exact = &self.exact[a..self.exact.len().min(a + PIECE)];
        let bits = set_bits(&self.mask[3 * a / 8..], 3 * exact.len());
        // `read` matched the codes to the mask's bits.
        (exact, bits.zip(&self.codes[self.starts[k].0..]))
    }

    /// Apply to base positions (AoS, 3 values per particle, as many as the
    /// stream holds): edits, then exact values.
    pub fn apply<T: Real>(&self, pos: &mut [T], step: f64) {
        assert_eq!(
            pos.len(),
            3 * self.exact.len(),
            "the stream's particle count"
        );
        pos.par_chunks_mut(3 * PIECE)
            .enumerate()
            .for_each(|(k, piece)| {
                let (exact, edits) = self.piece(k);
                for (c, &q) in edits {
                    piece[c] = apply_edit(piece[c], q, step);
                }
                // `read` checked that the words hold 3 values per exact particle.
                let words = 3 * T::WORDS;
                let from = words * self.starts[k].1;
                let mut vals = self.exact_values[from..].chunks_exact(T::WORDS);
                for (j, _) in exact.iter().enumerate().filter(|(_, &e)| e) {
                    for c in &mut piece[3 * j..3 * j + 3] {
                        *c = T::from_words(vals.next().expect("3 values per exact particle"));
                    }
                }
            });
    }
}

/// Ceiling on a coded section holding `count` symbols: no coder expands a symbol
/// past a few bytes, plus tables.
fn ceiling(count: usize) -> usize {
    count.saturating_mul(24).saturating_add(1 << 20)
}

fn section_bytes(p: &Parsed, id: u32, coder: Coder, count: usize) -> Result<Vec<u8>> {
    let coded = p.section(id, ceiling(count))?;
    decode_bytes(coder, &coded, count)
}

/// Every coordinate as plain little-endian values of T (mode 0).
pub fn lossless_sections<T: Real>(pos: &[T]) -> Vec<(u32, Vec<u8>)> {
    vec![(SEC_EXACT_VALUES, crate::real::le_bytes(&[pos]))]
}

pub fn read_lossless<T: Real>(p: &Parsed, n: usize) -> Result<Vec<T>> {
    let len = 3 * T::BYTES * n;
    let plain = p.section(SEC_EXACT_VALUES, len)?;
    if plain.len() != len {
        return Err(Error::corrupt(
            "lossless stream has the wrong number of values",
        ));
    }
    Ok(plain.chunks_exact(T::BYTES).map(T::read_le).collect())
}

/// The base sections are at or above [`base::FIRST_SECTION`]; a stream whose
/// correction sections collide with them is malformed.
const _: () = assert!(SEC_EDIT_CODES < base::FIRST_SECTION);

#[cfg(test)]
mod tests {
    use super::super::{edit_step, header, ParticleConfig};
    use super::*;
    use crate::format;

    /// A stream holding only `corr`'s sections, as `compress` writes them.
    fn stream_of<T: Real>(corr: &Correction, n: usize, cfg: &ParticleConfig) -> Vec<u8> {
        let h = header(
            T::DTYPE,
            n,
            0.01,
            0.2,
            Source::Base(Base::Builtin),
            cfg,
            0,
            0,
        );
        format::write(&h, &corr.sections(n, cfg.coder), 0).unwrap()
    }

    /// Pieces are applied apart: edits and exact particles in every piece,
    /// at both ends of each, and in a short last piece, land as a serial pass
    /// over the list would put them.
    fn pieces_apply_as_the_list<T: Real>() {
        let cfg = ParticleConfig::default();
        let n = 2 * PIECE + 1234;
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pos: Vec<T> = (0..3 * n)
            .map(|_| T::from_f64((next() % 100_000) as f64 * 1e-3))
            .collect();
        let (lo, hi) = code_range(cfg.correction.edit_bits);
        let mut exact: Vec<bool> = (0..n).map(|_| next() % 50 == 0).collect();
        for k in [0, PIECE - 1, PIECE, n - 1] {
            exact[k] = true;
        }
        exact[2 * PIECE] = false;
        let mut edits = Vec::new();
        for c in 0..3 * n as u64 {
            let k = (c / 3) as usize;
            if !exact[k] && (next() % 3 == 0 || k == 2 * PIECE || k == PIECE + 1) {
                edits.push((c, lo + (next() % (hi - lo + 1) as u64) as i32));
            }
        }
        let corr = Correction::new(&pos, exact.clone(), edits.clone());
        let bytes = stream_of::<T>(&corr, n, &cfg);
        let p = format::parse(&bytes).unwrap();
        let step = edit_step(0.01, cfg.correction.edit_bits);
        let stored = Stored::read::<T>(&p, n, cfg.coder, cfg.correction.edit_bits).unwrap();
        let base: Vec<T> = pos.iter().map(|&x| T::from_f64(x.to_f64() + 0.5)).collect();
        let mut got = base.clone();
        stored.apply(&mut got, step);
        let mut want = base;
        for &(c, q) in &edits {
            want[c as usize] = apply_edit(want[c as usize], q, step);
        }
        for (k, _) in exact.iter().enumerate().filter(|(_, &e)| e) {
            want[3 * k..3 * k + 3].copy_from_slice(&pos[3 * k..3 * k + 3]);
        }
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));

        // An edit on an exact particle, or a code out of range, in the last
        // piece is an error.
        let mut on_exact = edits.clone();
        on_exact.push((3 * (n as u64 - 1) + 1, 0));
        on_exact.sort();
        let mut out_of_range = edits;
        let last = out_of_range.len() - 1;
        out_of_range[last].1 = hi + 1;
        let edit_bits = cfg.correction.edit_bits;
        for (bad, why) in [(on_exact, "exactly stored"), (out_of_range, "out of range")] {
            let corr = Correction::new(&pos, exact.clone(), bad);
            let bytes = stream_of::<T>(&corr, n, &cfg);
            let p = format::parse(&bytes).unwrap();
            let err = Stored::read::<T>(&p, n, cfg.coder, edit_bits)
                .err()
                .unwrap();
            assert!(err.to_string().contains(why), "{err}");
        }
    }

    #[test]
    fn pieces_apply_as_the_list_f32() {
        pieces_apply_as_the_list::<f32>();
    }

    #[test]
    fn pieces_apply_as_the_list_f64() {
        pieces_apply_as_the_list::<f64>();
    }
}
