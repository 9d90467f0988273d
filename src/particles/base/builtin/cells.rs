//! The built-in base's density coding (section format 2), for particles in no
//! useful order (shuffled snapshots, hash-ordered outputs).
//!
//! Along such an order the previous particle predicts nothing: the difference of
//! two independent positions costs as much as a position or more. What is left to
//! model is where particles are dense. The lattice is cut into cubic cells of
//! `2^s` lattice units, `G = ceil(R / 2^s)` per axis; a particle's cell index
//! `(cz G + cy) G + cx` is Huffman-coded with the set's own cell histogram (a
//! halo's cells are frequent, voids' rare), and its offset inside the cell is
//! `3 s` raw bits. The encoder picks `s` from the histograms' entropy plus table
//! cost; `s` large enough for one cell is plain fixed-width coding, the fallback.
//!
//! Cells are Huffman-coded whatever the stream's coder: their alphabet is up to
//! 2^21 symbols, which the byte-plane rANS would split into independent bytes.
//!
//! Layout after the lattice header (`step`, `qmin`, `R`; see `builtin.rs`):
//!
//! ```text
//! u8      s              cell side log2, 0..=42; G = ceil(R / 2^s) <= 2^10
//! varint  cell bytes     length of the Huffman stream
//! bytes   cells          n cell indices (codec::huffman, count n)
//! bytes   offsets        per particle, x, y, z: the low s bits of u, LSB first;
//!                        8 particles take 3 s whole bytes, the end is zero-padded
//! ```

use rayon::prelude::*;

use super::{BitReader, BitWriter, Lattice};
use crate::codec::varint::{get_u8, get_uvarint_max, put_uvarint};
use crate::codec::{self, Coder};
use crate::error::{Error, Result};
use crate::real::Real;

/// Most cells per axis the format allows (G^3 fits a u32 symbol).
const MAX_G: u64 = 1 << 10;
/// Most cells the encoder's finest histogram takes: twice the particles (with
/// more, nearly every present cell holds one particle and its table entry
/// costs more than it saves), within [2^12, 2^21] (8 MiB of counts per thread).
fn max_cells(n: usize) -> u64 {
    (2 * n as u64).clamp(1 << 12, 1 << 21)
}
/// Largest cell side log2 (the lattice range is at most 2^42).
const MAX_S: u32 = 42;
/// Estimated table cost of a present cell, in bits (Huffman's 5-bit length
/// plus a share of the symbol runs).
const TABLE_BITS: f64 = 6.0;
/// Particles per parallel piece of the offsets (a multiple of 8: whole bytes).
const PIECE: usize = 1 << 16;

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("builtin base cells: {what}"))
}

/// Cells per axis for side `2^s` over `range` lattice values.
fn cells_per_axis(range: i64, s: u32) -> u64 {
    (range as u64).div_ceil(1u64 << s)
}

/// Estimated bits to code `n` particles with these cell counts at side `2^s`.
fn cost(counts: &[u32], n: usize, s: u32) -> f64 {
    let nf = n as f64;
    let (mut h, mut present) = (0.0, 0usize);
    for &c in counts.iter().filter(|&&c| c > 0) {
        let c = f64::from(c);
        h += c * (nf / c).log2();
        present += 1;
    }
    h + TABLE_BITS * present as f64 + 3.0 * f64::from(s) * nf
}

/// Histogram at side `2^(s+1)` from the one at `2^s` (G cells per axis).
fn coarsen(counts: &[u32], g: usize) -> Vec<u32> {
    let h = g.div_ceil(2);
    let mut out = vec![0u32; h * h * h];
    for z in 0..g {
        for y in 0..g {
            let row = &counts[(z * g + y) * g..][..g];
            let o = &mut out[((z / 2) * h + y / 2) * h..][..h];
            for (x, &c) in row.iter().enumerate() {
                o[x / 2] += c;
            }
        }
    }
    out
}

/// The cell side log2 with the smallest estimated size. `u` holds lattice
/// values in `[0, range)` (unrepresentable ones already 0).
fn pick_side(u: &[i64], range: i64) -> u32 {
    let mut s = 0;
    let n = u.len() / 3;
    if n == 0 {
        return s;
    }
    while cells_per_axis(range, s).saturating_pow(3) > max_cells(n) {
        s += 1;
    }
    let g = cells_per_axis(range, s) as usize;
    // One histogram per thread (integer counts: the sum is the same for any split).
    let per_thread = n.div_ceil(rayon::current_num_threads());
    let mut counts = u
        .par_chunks(3 * per_thread)
        .fold(
            || vec![0u32; g * g * g],
            |mut h, part| {
                for p in part.chunks_exact(3) {
                    h[cell_of(p, s, g as u64) as usize] += 1;
                }
                h
            },
        )
        .reduce_with(|mut a, b| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            a
        })
        .unwrap_or_default();
    let (mut best, mut best_cost) = (s, f64::INFINITY);
    let mut g = g;
    loop {
        let c = cost(&counts, n, s);
        if c < best_cost {
            (best, best_cost) = (s, c);
        }
        if g == 1 || s == MAX_S {
            return best;
        }
        counts = coarsen(&counts, g);
        g = g.div_ceil(2);
        s += 1;
    }
}

#[inline(always)]
fn cell_of(p: &[i64], s: u32, g: u64) -> u32 {
    let c = |v: i64| (v as u64) >> s;
    ((c(p[2]) * g + c(p[1])) * g + c(p[0])) as u32
}

/// Encodes lattice values `u` (`[0, range)`, unrepresentable coordinates 0) into
/// the bytes after the lattice header.
pub(super) fn encode(u: &[i64], range: i64, sec: &mut Vec<u8>) {
    let s = pick_side(u, range);
    let g = cells_per_axis(range, s);
    let cells: Vec<u32> = u.par_chunks_exact(3).map(|p| cell_of(p, s, g)).collect();
    let coded = codec::encode_u32(Coder::Huffman, &cells);
    let mask = (1u64 << s) - 1;
    let offsets: Vec<Vec<u8>> = u
        .par_chunks(3 * PIECE)
        .map(|part| {
            let mut w = BitWriter::new();
            for &v in part {
                w.put(v as u64 & mask, s);
            }
            w.finish()
        })
        .collect();
    sec.push(s as u8);
    put_uvarint(sec, coded.len() as u64);
    sec.extend_from_slice(&coded);
    for o in &offsets {
        sec.extend_from_slice(o);
    }
}

/// Decodes `n` particles from `d[at..]` (the rest of the section) into `out`.
pub(super) fn decode<T: Real>(d: &[u8], mut at: usize, lat: &Lattice, n: usize) -> Result<Vec<T>> {
    let s = u32::from(get_u8(d, &mut at, "builtin base cell side")?);
    let g = cells_per_axis(lat.range, s.min(MAX_S));
    if s > MAX_S || g > MAX_G {
        return Err(corrupt("cell side out of range"));
    }
    let len = get_uvarint_max(d, &mut at, d.len() as u64, "builtin base cell bytes")?;
    let coded = d
        .get(at..at + len)
        .ok_or_else(|| corrupt("cells are truncated"))?;
    let cells = codec::decode_u32(Coder::Huffman, coded, n)?;
    at += len;
    if cells.len() != n {
        return Err(corrupt("cell count does not match"));
    }
    let raw = &d[at..];
    if raw.len() != (3 * s as usize).saturating_mul(n).div_ceil(8) {
        return Err(corrupt("offset bytes do not match"));
    }
    let piece_bytes = 3 * s as usize * PIECE / 8;
    let mut out = vec![T::default(); 3 * n];
    out.par_chunks_mut(3 * PIECE)
        .zip(cells.par_chunks(PIECE))
        .enumerate()
        .try_for_each(|(k, (o, cells))| -> Result<()> {
            let end = (piece_bytes * (k + 1)).min(raw.len());
            let mut bits = BitReader::new(&raw[piece_bytes * k..end]);
            for (p, &c) in o.chunks_exact_mut(3).zip(cells) {
                let c = u64::from(c);
                let cell = [c % g, c / g % g, c / (g * g)];
                if cell[2] >= g {
                    return Err(corrupt("cell index out of range"));
                }
                for (x, cj) in p.iter_mut().zip(cell) {
                    let v = (cj << s | bits.get(s)?) as i64;
                    if v >= lat.range {
                        return Err(corrupt("position beyond the lattice range"));
                    }
                    *x = lat.value(v);
                }
            }
            bits.finish()
        })?;
    Ok(out)
}
