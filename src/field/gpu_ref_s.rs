//! The host half of mode S on the GPU (`kernels/mode_s.cu`): the kernels leave
//! one decision per vertex (exact flag, bound id, two codes); this writes them
//! into [`Parts`] in the order `speculative::encode` appends them, and gives the
//! decoder kernels each vertex's stream slot. Tests compare the result with
//! `speculative::encode` / `decode` bit for bit.
#![doc(hidden)]

use super::parts::Parts;
use super::quantize::NUM_IDS;
use super::speculative::STRIDE;
use crate::codec::zigzag;
use crate::error::{Error, Result};

/// The phases of one step, in order: horizontal, vertical, center (the kernels'
/// `phase` argument 0, 1, 2).
pub const PHASES: [u32; 3] = [0, 1, 2];

/// The steps STRIDE/2, ..., 2, 1.
pub fn steps() -> impl Iterator<Item = usize> {
    std::iter::successors(Some(STRIDE / 2), |&s| (s > 1).then_some(s / 2))
}

/// First row, row step, first column, column step of (step, phase)'s targets:
/// odd multiples of the step along the phase's axes, even ones across.
pub fn axes(step: usize, phase: u32) -> (usize, usize, usize, usize) {
    let r0 = if phase == 0 { 0 } else { step };
    let c0 = if phase == 1 { 0 } else { step };
    (r0, 2 * step, c0, 2 * step)
}

/// Every vertex in `speculative`'s processing order: anchors in raster order,
/// then each (step, phase)'s targets row by row.
pub fn schedule_order(ny: usize, nx: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(ny * nx);
    for j in (0..ny).step_by(STRIDE) {
        out.extend((0..nx).step_by(STRIDE).map(|i| j * nx + i));
    }
    for s in steps() {
        for phase in PHASES {
            let (r0, rs, c0, cs) = axes(s, phase);
            for j in (r0..ny).step_by(rs) {
                out.extend((c0..nx).step_by(cs).map(|i| j * nx + i));
            }
        }
    }
    out
}

/// The stream parts from the kernels' per-vertex decisions: `exact[k]` (0/1),
/// and for a coded vertex its bound id `ids[k]` and codes `codes[2k..2k+2]`;
/// exact vertices store the original `u`, `v`.
pub fn assemble(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    exact: &[u8],
    ids: &[u8],
    codes: &[i32],
) -> Parts {
    let raw: Vec<u32> = (0..ny * nx)
        .filter(|&k| exact[k] != 0)
        .flat_map(|k| [u[k].to_bits(), v[k].to_bits()])
        .collect();
    assemble_raw(&raw, ny, nx, exact, ids, codes)
}

/// [`assemble`] with the exact vertices' (u, v) bits given in index order
/// (`raw`, two words each, as the GPU gathers them), not the whole field.
pub fn assemble_raw(
    raw: &[u32],
    ny: usize,
    nx: usize,
    exact: &[u8],
    ids: &[u8],
    codes: &[i32],
) -> Parts {
    let mut parts = Parts {
        exact: exact.iter().map(|&e| e != 0).collect(),
        ..Parts::default()
    };
    // Each exact vertex's rank in index order, to read its pair from `raw`.
    let mut rank = vec![0u32; ny * nx];
    let mut next = 0u32;
    for (k, r) in rank.iter_mut().enumerate() {
        *r = next;
        next += parts.exact[k] as u32;
    }
    for k in schedule_order(ny, nx) {
        if parts.exact[k] {
            let r = 2 * rank[k] as usize;
            parts.raw.extend_from_slice(&raw[r..r + 2]);
        } else {
            parts.ids.push(ids[k] as u32);
            parts
                .codes
                .extend([zigzag(codes[2 * k]), zigzag(codes[2 * k + 1])]);
        }
    }
    parts
}

/// Each vertex's slot for the decoder kernels: its raw pair's index when exact,
/// else its index among the coded vertices; after `speculative::decode`'s checks
/// of the stream against the mask.
pub fn decode_slots(parts: &Parts, ny: usize, nx: usize) -> Result<Vec<i64>> {
    let n_exact = parts.exact.iter().filter(|&&e| e).count();
    let n_coded = ny * nx - n_exact;
    if parts.exact.len() != ny * nx
        || parts.raw.len() != 2 * n_exact
        || parts.codes.len() != 2 * n_coded
        || parts.ids.len() != n_coded
    {
        return Err(Error::corrupt(
            "mode S stream: value counts do not match the exact-vertex mask",
        ));
    }
    if parts.ids.iter().any(|&id| id >= NUM_IDS) {
        return Err(Error::corrupt("mode S stream has an out-of-range bound id"));
    }
    let mut slot = vec![0i64; ny * nx];
    let (mut r, mut c) = (0i64, 0i64);
    for k in schedule_order(ny, nx) {
        let at = if parts.exact[k] { &mut r } else { &mut c };
        slot[k] = *at;
        *at += 1;
    }
    Ok(slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_visits_every_vertex_once() {
        for (ny, nx) in [(1, 1), (1, 300), (300, 1), (2, 2), (257, 129), (513, 3)] {
            let mut seen = schedule_order(ny, nx);
            assert_eq!(seen.len(), ny * nx);
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), ny * nx, "{ny}x{nx}");
        }
    }
}
