//! Mode B (block-wise, throughput): closed-form safe bounds per triangle, the
//! per-vertex minimum, one error-bound id per 32x32 tile and component, exact storage
//! of critical and degenerate cells, and Lorenzo prediction inside each tile.
//!
//! Tiles are independent (Lorenzo treats the outside of a tile as 0), so bands of 32
//! rows encode and decode in parallel, and a GPU block can own a tile.

use super::forced::forced_vertices;
use super::parts::Parts;
use super::quantize::{eb_of_id, id_for_bound, predictor_input, quantize, reconstruct, NUM_IDS};
use super::safe_bound::{constraints_into, triangle_constraint};
use super::topology::{gather, tri_vertices, Half};
use crate::codec::{unzigzag, zigzag};
use crate::error::{Error, Result};
use rayon::prelude::*;

/// Tile side (the kernels' generated `FZK_TILE`; mode_b_*.cu map a tile row
/// onto one 32-lane warp).
pub const TILE: usize = 32;
/// Per-vertex id meaning "store exactly" (the kernels' `FZK_EXACT`, from
/// `kernels::prelude`).
pub const EXACT: u8 = u8::MAX;

/// The constraints (see `triangle_constraint`) of quad row `j`'s triangles,
/// T0 then T1 of each quad (`2 * (nx - 1)` values, triangle-id order).
fn triangle_row(u: &[f32], v: &[f32], nx: usize, j: usize, row: &mut [f64]) {
    // Rows j and j + 1; T0 = (i,j),(i+1,j),(i+1,j+1), T1 = (i,j),(i+1,j+1),(i,j+1)
    // (topology::tri_vertices), as columns so the passes vectorise.
    let (lo, hi) = (j * nx, (j + 1) * nx);
    let (u0, u1) = (&u[lo..lo + nx], &u[hi..hi + nx]);
    let (v0, v1) = (&v[lo..lo + nx], &v[hi..hi + nx]);
    let q = nx - 1;
    let (mut t0, mut t1) = (vec![0.0f64; q], vec![0.0f64; q]);
    let (a, c) = ([&u0[..q], &v0[..q]], [&u1[1..], &v1[1..]]);
    constraints_into([a[0], a[1], &u0[1..], &v0[1..], c[0], c[1]], &mut t0);
    constraints_into([a[0], a[1], c[0], c[1], &u1[..q], &v1[..q]], &mut t1);
    for ((pair, &e0), &e1) in row.chunks_exact_mut(2).zip(&t0).zip(&t1) {
        pair[0] = e0;
        pair[1] = e1;
    }
    // The few the float filter left open: the exact sum decides.
    for (t, e) in row.iter_mut().enumerate() {
        if e.is_nan() {
            let half = if t % 2 == 0 { Half::T0 } else { Half::T1 };
            *e = triangle_constraint(gather(u, v, tri_vertices(nx, t / 2, j, half)));
        }
    }
}

/// Per-vertex bound ids for u and v (EXACT when the vertex must be stored
/// exactly), before the tiles take theirs; what the GPU's bound kernel
/// (`kernels/mode_b_bounds.cu`) must reproduce.
pub fn vertex_ids(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    xi: f64,
    forced: &[bool],
) -> Vec<[u8; 2]> {
    vertex_ids_capped(u, v, ny, nx, xi, forced, None)
}

/// [`vertex_ids`] with a cap on each vertex's relative bound (`halo::BlockWithRing::caps`).
fn vertex_ids_capped(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    xi: f64,
    forced: &[bool],
    caps: Option<&[f64]>,
) -> Vec<[u8; 2]> {
    let mut ids = vec![[EXACT; 2]; ny * nx];
    let w = 2 * nx.saturating_sub(1); // triangles per quad row
                                      // A band of TILE rows at a time, with the quad rows its vertices touch
                                      // (one above the band, which the band above computes too): no full-field
                                      // array of constraints.
    ids.par_chunks_mut(TILE * nx)
        .enumerate()
        .for_each(|(b, band)| {
            let j0 = b * TILE;
            let first = j0.saturating_sub(1);
            let end = (j0 + band.len() / nx).min(ny.saturating_sub(1));
            let mut eps = vec![0.0f64; end.saturating_sub(first) * w];
            for (r, row) in eps.chunks_exact_mut(w.max(1)).enumerate() {
                triangle_row(u, v, nx, first + r, row);
            }
            let mut least = vec![f64::INFINITY; nx];
            for (jb, row) in band.chunks_mut(nx).enumerate() {
                let j = j0 + jb;
                least.fill(f64::INFINITY);
                incident_min(&eps, first, ny, nx, j, &mut least);
                for (i, out) in row.iter_mut().enumerate() {
                    let k = j * nx + i;
                    if forced[k] {
                        continue;
                    }
                    let cap = caps.map_or(f64::INFINITY, |c| c[k]);
                    let e = cap.min(least[i]);
                    if e < 0.0 {
                        continue;
                    }
                    let id = |c: f32| id_for_bound(xi, xi.min(e * (c as f64).abs()));
                    if let (Some(a), Some(b)) = (id(u[k]), id(v[k])) {
                        *out = [a as u8, b as u8];
                    }
                }
            }
        });
    ids
}

/// `least[i]`: the smallest constraint of the triangles incident to vertex
/// (i, j) (`topology::incident_ids`: T0 of quads (i, j), (i-1, j), (i-1, j-1)
/// and T1 of quads (i, j), (i, j-1), (i-1, j-1); infinite with none). A pass
/// per quad row and triangle, so the loops vectorise. The minimum does not
/// depend on the order: constraints are never NaN nor -0. `eps` holds the
/// quad rows from `first` on (rows j - 1 and j, those that exist).
fn incident_min(eps: &[f64], first: usize, ny: usize, nx: usize, j: usize, least: &mut [f64]) {
    let w = 2 * nx.saturating_sub(1); // triangles per quad row
    if nx < 2 {
        return;
    }
    let quad_row = |r: usize| &eps[(r - first) * w..(r - first + 1) * w];
    if j + 1 < ny {
        let r = quad_row(j);
        for (e, t) in least[..nx - 1].iter_mut().zip(r.chunks_exact(2)) {
            *e = e.min(t[0]).min(t[1]); // quad (i, j): T0, T1
        }
        for (e, t) in least[1..].iter_mut().zip(r.chunks_exact(2)) {
            *e = e.min(t[0]); // quad (i-1, j): T0
        }
    }
    if j > 0 {
        let r = quad_row(j - 1);
        for (e, t) in least[..nx - 1].iter_mut().zip(r.chunks_exact(2)) {
            *e = e.min(t[1]); // quad (i, j-1): T1
        }
        for (e, t) in least[1..].iter_mut().zip(r.chunks_exact(2)) {
            *e = e.min(t[0]).min(t[1]); // quad (i-1, j-1): T0, T1
        }
    }
}

/// The tile grid: (tiles across, tiles down).
fn tiles(ny: usize, nx: usize) -> (usize, usize) {
    (nx.div_ceil(TILE), ny.div_ceil(TILE))
}

/// In-tile Lorenzo prediction of vertex (i, j) of a band whose rows start at `j0`.
#[inline]
fn lorenzo(rec: &[f32], nx: usize, i: usize, jb: usize, ti: usize) -> f64 {
    let at = |i: usize, jb: usize| predictor_input(rec[jb * nx + i]);
    let (west, north) = (i > ti, jb > 0);
    match (west, north) {
        (true, true) => (at(i - 1, jb) + at(i, jb - 1)) - at(i - 1, jb - 1),
        (true, false) => at(i - 1, jb),
        (false, true) => at(i, jb - 1),
        (false, false) => 0.0,
    }
}

/// Approximate cost in bits of a vertex component coded at a bound id (each halving
/// of the bound adds about a bit) and of an exactly stored vertex (the kernels'
/// `FZK_CODED_BITS`, `FZK_EXACT_BITS`).
pub const CODED_BITS: u32 = 2;
pub const EXACT_BITS: u32 = 64;

/// One id per tile: the bound that minimises the tile's estimated size, given how
/// many vertices need each id. Vertices that need a finer bound than the tile's are
/// stored exactly, so one near-degenerate cell no longer drags its whole tile down.
fn tile_id(hist: &[u32; NUM_IDS as usize]) -> u8 {
    let total: u32 = hist.iter().sum();
    let mut best = (u64::MAX, 0u8);
    let mut covered = 0u32;
    for (t, &h) in hist.iter().enumerate() {
        covered += h;
        let cost = covered as u64 * (t as u64 + CODED_BITS as u64)
            + (total - covered) as u64 * EXACT_BITS as u64;
        if cost < best.0 {
            best = (cost, t as u8);
        }
    }
    best.1
}

struct BandOut {
    ids: Vec<u32>,
    raw: Vec<u32>,
    codes: Vec<u32>,
}

pub fn encode(u: &[f32], v: &[f32], ny: usize, nx: usize, xi: f64, chunk_of_larger: bool) -> Parts {
    encode_capped(u, v, ny, nx, xi, chunk_of_larger, None)
}

/// [`encode`] with a cap on each vertex's relative bound (`halo::BlockWithRing::caps`).
pub fn encode_capped(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
    caps: Option<&[f64]>,
) -> Parts {
    let forced = forced_vertices(u, v, ny, nx, chunk_of_larger);
    let vids = vertex_ids_capped(u, v, ny, nx, xi, &forced, caps);
    let (tx, _) = tiles(ny, nx);
    let mut exact = vec![false; ny * nx];
    let bands: Vec<BandOut> = exact
        .par_chunks_mut(TILE * nx)
        .enumerate()
        .map(|(b, exact_band)| {
            let j0 = b * TILE;
            let rows = exact_band.len() / nx;
            let mut rec_u = vec![0.0f32; rows * nx];
            let mut rec_v = vec![0.0f32; rows * nx];
            let mut out = BandOut {
                ids: Vec::with_capacity(2 * tx),
                raw: vec![],
                codes: vec![],
            };
            for t in 0..tx {
                let ti = t * TILE;
                let te = (ti + TILE).min(nx);
                // The tile's id per component, from the histogram of what its vertices need.
                let mut hist = [[0u32; NUM_IDS as usize]; 2];
                for jb in 0..rows {
                    for i in ti..te {
                        let id = vids[(j0 + jb) * nx + i];
                        if id[0] != EXACT {
                            hist[0][id[0] as usize] += 1;
                            hist[1][id[1] as usize] += 1;
                        }
                    }
                }
                let tile = [tile_id(&hist[0]), tile_id(&hist[1])];
                out.ids.extend([tile[0] as u32, tile[1] as u32]);
                let (eu, ev) = (eb_of_id(xi, tile[0] as u32), eb_of_id(xi, tile[1] as u32));
                for jb in 0..rows {
                    for i in ti..te {
                        let (k, kb) = ((j0 + jb) * nx + i, jb * nx + i);
                        let id = vids[k];
                        let coded = if id[0] == EXACT || id[0] > tile[0] || id[1] > tile[1] {
                            None
                        } else {
                            let qu = quantize(u[k], lorenzo(&rec_u, nx, i, jb, ti), eu);
                            let qv = quantize(v[k], lorenzo(&rec_v, nx, i, jb, ti), ev);
                            qu.zip(qv)
                        };
                        match coded {
                            Some(((qu, ru), (qv, rv))) => {
                                out.codes.extend([zigzag(qu), zigzag(qv)]);
                                rec_u[kb] = ru;
                                rec_v[kb] = rv;
                            }
                            None => {
                                exact_band[kb] = true;
                                out.raw.extend([u[k].to_bits(), v[k].to_bits()]);
                                rec_u[kb] = u[k];
                                rec_v[kb] = v[k];
                            }
                        }
                    }
                }
            }
            out
        })
        .collect();
    let mut parts = Parts {
        exact,
        ..Parts::default()
    };
    for b in bands {
        parts.ids.extend(b.ids);
        parts.raw.extend(b.raw);
        parts.codes.extend(b.codes);
    }
    parts
}

/// Rebuild u and v from the parts; every count was checked by the caller against
/// `exact`, and each band re-checks its own slices.
pub fn decode(
    parts: &Parts,
    ny: usize,
    nx: usize,
    xi: f64,
    u: &mut [f32],
    v: &mut [f32],
) -> Result<()> {
    let (tx, ty) = tiles(ny, nx);
    if parts.ids.len() != 2 * tx * ty {
        return Err(Error::corrupt(
            "mode B stream has the wrong number of tile bound ids",
        ));
    }
    if parts.ids.iter().any(|&id| id >= NUM_IDS) {
        return Err(Error::corrupt("mode B stream has an out-of-range bound id"));
    }
    // Where each band's raw values and codes start.
    let mut offsets = Vec::with_capacity(ty + 1);
    let (mut r, mut c) = (0usize, 0usize);
    for band in parts.exact.chunks(TILE * nx) {
        offsets.push((r, c));
        let n_exact = band.iter().filter(|&&e| e).count();
        r += 2 * n_exact;
        c += 2 * (band.len() - n_exact);
    }
    if r != parts.raw.len() || c != parts.codes.len() {
        return Err(Error::corrupt(
            "mode B stream: value counts do not match the exact-vertex mask",
        ));
    }
    u.par_chunks_mut(TILE * nx)
        .zip(v.par_chunks_mut(TILE * nx))
        .enumerate()
        .for_each(|(b, (ub, vb))| {
            let rows = ub.len() / nx;
            let (mut r, mut c) = offsets[b];
            for t in 0..tx {
                let ti = t * TILE;
                let te = (ti + TILE).min(nx);
                let at = (b * tx + t) * 2; // the tile's (u, v) ids
                let (eu, ev) = (eb_of_id(xi, parts.ids[at]), eb_of_id(xi, parts.ids[at + 1]));
                for jb in 0..rows {
                    for i in ti..te {
                        let kb = jb * nx + i;
                        if parts.exact[b * TILE * nx + kb] {
                            ub[kb] = f32::from_bits(parts.raw[r]);
                            vb[kb] = f32::from_bits(parts.raw[r + 1]);
                            r += 2;
                        } else {
                            let pred_u = lorenzo(ub, nx, i, jb, ti);
                            let pred_v = lorenzo(vb, nx, i, jb, ti);
                            ub[kb] = reconstruct(pred_u, eu, unzigzag(parts.codes[c]));
                            vb[kb] = reconstruct(pred_v, ev, unzigzag(parts.codes[c + 1]));
                            c += 2;
                        }
                    }
                }
            }
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::topology::{incident_ids, triangle_count};

    /// The row passes give, per vertex, the minimum over exactly the triangles
    /// `incident_ids` lists, at every edge and corner and on degenerate shapes.
    #[test]
    fn incident_min_is_the_minimum_over_the_incident_triangles() {
        let mut s = 3u64;
        for (ny, nx) in [(1, 1), (1, 7), (6, 1), (2, 2), (5, 9), (33, 40)] {
            let eps: Vec<f64> = (0..triangle_count(ny, nx))
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    match s % 7 {
                        0 => f64::INFINITY,
                        1 => -1.0,
                        2 => 0.0,
                        _ => (s >> 11) as f64 / (1u64 << 53) as f64,
                    }
                })
                .collect();
            for j in 0..ny {
                let mut least = vec![f64::INFINITY; nx];
                incident_min(&eps, 0, ny, nx, j, &mut least);
                for (i, &got) in least.iter().enumerate() {
                    let (tris, n) = incident_ids(ny, nx, i, j);
                    let want = tris[..n]
                        .iter()
                        .map(|&t| eps[t])
                        .fold(f64::INFINITY, f64::min);
                    assert_eq!(got.to_bits(), want.to_bits(), "{ny}x{nx} vertex ({i}, {j})");
                }
            }
        }
    }
}
