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
use crate::codec::planes::{from_planes, pack_bits, set_bits, to_planes, unpack_bits};
use crate::codec::{decode_bytes, encode_bytes, Coder};
use crate::error::{Error, Result};
use crate::format::Parsed;
use crate::real::Real;

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

    /// Apply to base positions (AoS): edits, then exact values.
    pub fn apply<T: Real>(&self, pos: &mut [T], step: f64) {
        for &(c, code) in &self.edits {
            pos[c as usize] = apply_edit(pos[c as usize], code, step);
        }
        // `read` checked that the words hold 3 values per exact particle.
        let mut vals = self.exact_values.chunks_exact(T::WORDS);
        for (k, _) in self.exact.iter().enumerate().filter(|(_, &e)| e) {
            for c in &mut pos[3 * k..3 * k + 3] {
                *c = T::from_words(vals.next().expect("3 values per exact particle"));
            }
        }
    }

    pub fn exact_count(&self) -> usize {
        self.exact.iter().filter(|&&e| e).count()
    }

    pub fn sections(&self, n: usize, coder: Coder) -> Vec<(u32, Vec<u8>)> {
        let mut mask = vec![false; 3 * n];
        for &(c, _) in &self.edits {
            mask[c as usize] = true;
        }
        let codes: Vec<i32> = self.edits.iter().map(|&(_, q)| q).collect();
        vec![
            (SEC_EXACT, encode_bytes(coder, &pack_bits(&self.exact))),
            (
                SEC_EXACT_VALUES,
                encode_bytes(coder, &to_planes(&self.exact_values)),
            ),
            (SEC_EDIT_MASK, encode_bytes(coder, &pack_bits(&mask))),
            (SEC_EDIT_CODES, edit_codes::encode(coder, &codes)),
        ]
    }

    /// Decode and check the correction sections of a stream of n particles
    /// of element type T.
    pub fn read<T: Real>(p: &Parsed, n: usize, coder: Coder, edit_bits: u32) -> Result<Correction> {
        let exact = unpack_bits(&section_bytes(p, SEC_EXACT, coder, n.div_ceil(8))?, n);
        let n_exact = exact.iter().filter(|&&e| e).count();
        let words = 3 * T::WORDS * n_exact;
        let exact_values = from_planes(&section_bytes(p, SEC_EXACT_VALUES, coder, 4 * words)?);
        if exact_values.len() != words {
            return Err(Error::corrupt(
                "exact values do not match the exact particles",
            ));
        }
        let mask = section_bytes(p, SEC_EDIT_MASK, coder, (3 * n).div_ceil(8))?;
        let idx: Vec<u64> = set_bits(&mask, 3 * n).map(|c| c as u64).collect();
        let coded = p.section(SEC_EDIT_CODES, ceiling(idx.len()))?;
        let codes: Vec<i32> = if p.header.version >= edit_codes::VERSION {
            edit_codes::decode(coder, &coded, idx.len())?
        } else {
            edit_codes::decode_zigzag(coder, &coded, idx.len())?
        };
        if codes.len() != idx.len() {
            return Err(Error::corrupt("edit code count does not match the mask"));
        }
        let (lo, hi) = code_range(edit_bits);
        let mut edits = Vec::with_capacity(idx.len());
        for (c, q) in idx.into_iter().zip(codes) {
            if q < lo || q > hi {
                return Err(Error::corrupt("edit code out of range"));
            }
            if exact[(c / 3) as usize] {
                return Err(Error::corrupt("edit on an exactly stored particle"));
            }
            edits.push((c, q));
        }
        Ok(Correction {
            exact,
            exact_values,
            edits,
        })
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
    let mut bytes = Vec::with_capacity(T::BYTES * pos.len());
    pos.iter().for_each(|c| c.write_le(&mut bytes));
    vec![(SEC_EXACT_VALUES, bytes)]
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
