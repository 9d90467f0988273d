//! Mode B (block-wise, throughput): closed-form safe bounds per triangle, the
//! per-vertex minimum, one error-bound id per 32x32 tile and component, exact storage
//! of critical and degenerate cells, and Lorenzo prediction inside each tile.
//!
//! Tiles are independent (Lorenzo treats the outside of a tile as 0), so bands of 32
//! rows encode and decode in parallel, and a GPU block can own a tile.
//!
//! f32 fields take the vectorised bound passes (exact products in f64); f64
//! fields take [`triangle_constraint_rounded`] per triangle, whose bounds allow
//! for the products' rounding. The rest is one generic code path.

use super::diagonals::{DecodeTile, EncodeTile};
use super::forced::forced_vertices;
use super::parts::Parts;
use super::quantize::{eb_of_id, id_for_bound, NUM_IDS};
use super::safe_bound::{
    quad_row_constraints, triangle_constraint, triangle_constraint_rounded, EdgeRow,
};
use super::topology::{gather, quad_row, tri_vertices, Half};
use crate::codec::rans;
use crate::error::{Error, Result};
use crate::real::Real;
use rayon::prelude::*;

/// Tile side (the kernels' generated `FZK_TILE`; mode_b_*.cu map a tile row
/// onto one 32-lane warp).
pub const TILE: usize = 32;
/// Per-vertex id meaning "store exactly" (the kernels' `FZK_EXACT`, from
/// `kernels::prelude`).
pub const EXACT: u8 = u8::MAX;

/// The constraints (see `triangle_constraint`) of quad row `j`'s triangles,
/// T0 then T1 of each quad (`2 * (nx - 1)` values, triangle-id order). `h`
/// holds vertex row j's horizontal edges on entry and row j + 1's on return
/// (f32 only; f64 rows go one triangle at a time and leave it alone).
fn triangle_row<T: Real>(
    u: &[T],
    v: &[T],
    nx: usize,
    j: usize,
    row: &mut [f64],
    h: &mut [EdgeRow; 2],
) {
    let Some((u, v)) = T::as_f32(u).zip(T::as_f32(v)) else {
        for (t, e) in row.iter_mut().enumerate() {
            let half = if t % 2 == 0 { Half::T0 } else { Half::T1 };
            *e = triangle_constraint_rounded(gather(u, v, tri_vertices(nx, t / 2, j, half)), half);
        }
        return;
    };
    let rows = quad_row(u, v, nx, j);
    let [top, bottom] = h;
    bottom.horizontal(rows[2], rows[3]);
    quad_row_constraints(rows, [top, bottom], row);
    h.swap(0, 1);
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
pub fn vertex_ids<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    forced: &[bool],
) -> Vec<[u8; 2]> {
    let mut ids = vec![[EXACT; 2]; ny * nx];
    ids.par_chunks_mut(TILE * nx)
        .enumerate()
        .for_each(|(b, band)| band_ids(u, v, ny, nx, xi, forced, None, b * TILE, band));
    ids
}

/// [`vertex_ids`] of the rows from `j0` on (`out.len() / nx` of them), with a
/// cap on each vertex's relative bound (`halo::BlockWithRing::caps`). The quad
/// rows above and below the current vertex row are all it holds of the
/// constraints, so a band's work stays in cache.
#[allow(clippy::too_many_arguments)]
fn band_ids<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    forced: &[bool],
    caps: Option<&[f64]>,
    j0: usize,
    out: &mut [[u8; 2]],
) {
    out.fill([EXACT; 2]);
    // Quad rows j - 1 and j of vertex row j (2 (nx - 1) triangles each),
    // where they exist.
    let w = 2 * nx.saturating_sub(1);
    let (mut above, mut below) = (vec![0.0f64; w], vec![0.0f64; w]);
    // The horizontal edges of the first quad row's top.
    let mut h = [EdgeRow::default(), EdgeRow::default()];
    let first = j0.saturating_sub(1) * nx;
    if let Some((u, v)) = T::as_f32(u).zip(T::as_f32(v)) {
        h[0].horizontal(&u[first..first + nx], &v[first..first + nx]);
    }
    if j0 > 0 && nx > 1 {
        triangle_row(u, v, nx, j0 - 1, &mut below, &mut h);
    }
    let mut least = vec![f64::INFINITY; nx];
    for (jb, row) in out.chunks_mut(nx).enumerate() {
        let j = j0 + jb;
        std::mem::swap(&mut above, &mut below);
        if j + 1 < ny && nx > 1 {
            triangle_row(u, v, nx, j, &mut below, &mut h);
        }
        least.fill(f64::INFINITY);
        let (up, down) = (
            (j > 0).then_some(&above[..]),
            (j + 1 < ny).then_some(&below[..]),
        );
        incident_min(up, down, nx, &mut least);
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
            let id = |c: T| id_for_bound(xi, xi.min(e * c.to_f64().abs()));
            if let (Some(a), Some(b)) = (id(u[k]), id(v[k])) {
                *out = [a as u8, b as u8];
            }
        }
    }
}

/// `least[i]`: the smallest constraint of the triangles incident to vertex
/// (i, j) (`topology::incident_ids`: T0 of quads (i, j), (i-1, j), (i-1, j-1)
/// and T1 of quads (i, j), (i, j-1), (i-1, j-1); infinite with none), given
/// quad rows j - 1 (`above`) and j (`below`) where they exist. A pass per quad
/// row and triangle, so the loops vectorise. The minimum does not depend on
/// the order: constraints are never NaN nor -0.
fn incident_min(above: Option<&[f64]>, below: Option<&[f64]>, nx: usize, least: &mut [f64]) {
    if nx < 2 {
        return;
    }
    // A compare and select (f64::min's NaN handling would cost a blend each).
    let min = |a: f64, b: f64| if b < a { b } else { a };
    if let Some(r) = below {
        for (e, t) in least[..nx - 1].iter_mut().zip(r.chunks_exact(2)) {
            *e = min(min(*e, t[0]), t[1]); // quad (i, j): T0, T1
        }
        for (e, t) in least[1..].iter_mut().zip(r.chunks_exact(2)) {
            *e = min(*e, t[0]); // quad (i-1, j): T0
        }
    }
    if let Some(r) = above {
        for (e, t) in least[..nx - 1].iter_mut().zip(r.chunks_exact(2)) {
            *e = min(*e, t[1]); // quad (i, j-1): T1
        }
        for (e, t) in least[1..].iter_mut().zip(r.chunks_exact(2)) {
            *e = min(min(*e, t[0]), t[1]); // quad (i-1, j-1): T0, T1
        }
    }
}

/// The tile grid: (tiles across, tiles down).
fn tiles(ny: usize, nx: usize) -> (usize, usize) {
    (nx.div_ceil(TILE), ny.div_ceil(TILE))
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

pub fn encode<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
) -> Parts {
    encode_capped(u, v, ny, nx, xi, chunk_of_larger, None)
}

/// [`encode`] with a cap on each vertex's relative bound (`halo::BlockWithRing::caps`).
/// One pass per band of TILE rows: its vertex ids, then each tile's id,
/// quantization and exact values; nothing field-sized but the exact mask.
pub fn encode_capped<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
    caps: Option<&[f64]>,
) -> Parts {
    let forced = forced_vertices(u, v, ny, nx, chunk_of_larger);
    let (tx, _) = tiles(ny, nx);
    let mut exact = vec![false; ny * nx];
    let bands: Vec<BandOut> = exact
        .par_chunks_mut(TILE * nx)
        .enumerate()
        .map(|(b, exact_band)| {
            let j0 = b * TILE;
            let rows = exact_band.len() / nx;
            let mut vids = vec![[EXACT; 2]; rows * nx];
            band_ids(u, v, ny, nx, xi, &forced, caps, j0, &mut vids);
            let mut tile = EncodeTile::new();
            let mut out = BandOut {
                ids: Vec::with_capacity(2 * tx),
                raw: vec![],
                codes: Vec::with_capacity(2 * rows * nx),
            };
            for t in 0..tx {
                let ti = t * TILE;
                let te = (ti + TILE).min(nx);
                // The tile's id per component, from the histogram of what its vertices need.
                let mut hist = [[0u32; NUM_IDS as usize]; 2];
                for id in (0..rows).flat_map(|jb| &vids[jb * nx + ti..jb * nx + te]) {
                    if id[0] != EXACT {
                        hist[0][id[0] as usize] += 1;
                        hist[1][id[1] as usize] += 1;
                    }
                }
                let ids = [tile_id(&hist[0]), tile_id(&hist[1])];
                out.ids.extend([ids[0] as u32, ids[1] as u32]);
                for jb in 0..rows {
                    for ii in 0..te - ti {
                        let k = (j0 + jb) * nx + ti + ii;
                        let id = vids[jb * nx + ti + ii];
                        let allowed = id[0] != EXACT && id[0] <= ids[0] && id[1] <= ids[1];
                        tile.load(ii, jb, [u[k], v[k]], allowed);
                    }
                }
                let eb = ids.map(|id| eb_of_id(xi, id as u32));
                tile.quantize(te - ti, rows, eb);
                for jb in 0..rows {
                    for i in ti..te {
                        match tile.codes(i - ti, jb) {
                            Some(c) => out.codes.extend(c),
                            None => {
                                let k = (j0 + jb) * nx + i;
                                exact_band[jb * nx + i] = true;
                                u[k].push_words(&mut out.raw);
                                v[k].push_words(&mut out.raw);
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
pub fn decode<T: Real>(
    parts: &Parts,
    ny: usize,
    nx: usize,
    xi: f64,
    u: &mut [T],
    v: &mut [T],
) -> Result<()> {
    decode_from(parts, Codes::Decoded(&parts.codes), ny, nx, xi, u, v)
}

/// Where [`decode_from`] reads the quantization codes.
pub(crate) enum Codes<'a> {
    /// Every code, decoded.
    Decoded(&'a [u32]),
    /// A rANS section of this many codes, decoded a block at a time as the
    /// bands reach it (so the codes never all sit in memory at once).
    Rans(&'a rans::Blocks<'a, u32>, usize),
}

/// A band's source of (u, v) code pairs, in stream order.
trait CodePairs {
    fn pair(&mut self) -> Result<[u32; 2]>;
}

/// Pairs from decoded codes, from the band's offset.
struct SlicePairs<'a> {
    codes: &'a [u32],
    at: usize,
}

impl CodePairs for SlicePairs<'_> {
    #[inline(always)]
    fn pair(&mut self) -> Result<[u32; 2]> {
        // decode_from checked the bands' counts against the codes.
        let p = [self.codes[self.at], self.codes[self.at + 1]];
        self.at += 2;
        Ok(p)
    }
}

/// Pairs from a rANS section, one decoded block at a time, decoded when the
/// first pair in it is read. Blocks hold an even number of codes (2^k; the
/// last, 2 per coded vertex too), so a pair never spans two.
struct BlockPairs<'a> {
    blocks: &'a rans::Blocks<'a, u32>,
    count: usize,
    /// A decoded block and the index of its first code.
    buf: Vec<u32>,
    start: usize,
    /// The next code to read.
    pos: usize,
}

impl CodePairs for BlockPairs<'_> {
    #[inline(always)]
    fn pair(&mut self) -> Result<[u32; 2]> {
        if self.pos < self.start || self.pos + 2 > self.start + self.buf.len() {
            let len = self.blocks.block_len();
            let bi = self.pos / len;
            self.start = bi * len;
            self.buf
                .resize(self.count.saturating_sub(self.start).min(len), 0);
            self.blocks.decode_into(bi, &mut self.buf)?;
        }
        let at = self.pos - self.start;
        let p = self
            .buf
            .get(at..at + 2)
            .ok_or_else(|| Error::corrupt("mode B stream: codes end inside a pair"))?;
        self.pos += 2;
        Ok([p[0], p[1]])
    }
}

/// [`decode`] with the codes from `codes`. Decoded codes go band by band in
/// parallel; a rANS section goes in one run of consecutive bands per thread,
/// each decoding its blocks in order (a block two runs share is decoded by
/// both).
pub(crate) fn decode_from<T: Real>(
    parts: &Parts,
    codes: Codes,
    ny: usize,
    nx: usize,
    xi: f64,
    u: &mut [T],
    v: &mut [T],
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
        r += 2 * T::WORDS * n_exact;
        c += 2 * (band.len() - n_exact);
    }
    let n_codes = match codes {
        Codes::Decoded(all) => all.len(),
        Codes::Rans(_, n) => n,
    };
    if r != parts.raw.len() || c != n_codes {
        return Err(Error::corrupt(
            "mode B stream: value counts do not match the exact-vertex mask",
        ));
    }
    let band = TILE * nx;
    match codes {
        Codes::Decoded(all) => u
            .par_chunks_mut(band)
            .zip(v.par_chunks_mut(band))
            .enumerate()
            .try_for_each(|(b, (ub, vb))| {
                let mut pairs = SlicePairs {
                    codes: all,
                    at: offsets[b].1,
                };
                decode_band(parts, xi, nx, b, offsets[b].0, &mut pairs, ub, vb)
            }),
        Codes::Rans(blocks, count) => {
            let per_run = ty.div_ceil(rayon::current_num_threads().max(1)).max(1);
            u.par_chunks_mut(per_run * band)
                .zip(v.par_chunks_mut(per_run * band))
                .enumerate()
                .try_for_each(|(run, (ur, vr))| {
                    let first = run * per_run;
                    let mut pairs = BlockPairs {
                        blocks,
                        count,
                        buf: Vec::new(),
                        start: 0,
                        pos: offsets[first].1,
                    };
                    for (k, (ub, vb)) in ur.chunks_mut(band).zip(vr.chunks_mut(band)).enumerate() {
                        let b = first + k;
                        decode_band(parts, xi, nx, b, offsets[b].0, &mut pairs, ub, vb)?;
                    }
                    Ok(())
                })
        }
    }
}

/// Band `b` (rows `ub`, `vb`), its exact values from `parts.raw[r..]` and its
/// codes from `pairs`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn decode_band<T: Real>(
    parts: &Parts,
    xi: f64,
    nx: usize,
    b: usize,
    mut r: usize,
    pairs: &mut impl CodePairs,
    ub: &mut [T],
    vb: &mut [T],
) -> Result<()> {
    let tx = nx.div_ceil(TILE);
    let rows = ub.len() / nx;
    let exact = &parts.exact[b * TILE * nx..][..rows * nx];
    let mut tile = DecodeTile::new();
    let w = T::WORDS;
    for t in 0..tx {
        let ti = t * TILE;
        let te = (ti + TILE).min(nx);
        let at = (b * tx + t) * 2; // the tile's (u, v) ids
        let eb = [eb_of_id(xi, parts.ids[at]), eb_of_id(xi, parts.ids[at + 1])];
        // In stream order: exact values and codes by vertex.
        for jb in 0..rows {
            for ii in 0..te - ti {
                if exact[jb * nx + ti + ii] {
                    let u = T::from_words(&parts.raw[r..r + w]);
                    let v = T::from_words(&parts.raw[r + w..r + 2 * w]);
                    tile.load_exact(ii, jb, [u, v]);
                    r += 2 * w;
                } else {
                    tile.load_codes(ii, jb, pairs.pair()?);
                }
            }
        }
        tile.reconstruct(te - ti, rows, eb);
        for jb in 0..rows {
            let k = jb * nx + ti;
            tile.store_row(jb, &mut ub[k..k + te - ti], &mut vb[k..k + te - ti]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes taken from rANS blocks as the bands reach them decode to the
    /// decoded codes' field: small blocks (many per band and bands across
    /// them), runs on 1 to 3 threads, trailing and leading bands with no
    /// code at all (NaN rows are stored exactly).
    #[test]
    fn codes_from_rans_blocks_decode_as_decoded_ones() {
        for (ny, nx, nan_rows) in [
            (70, 50, 0..0),
            (130, 300, 100..130),
            (96, 64, 0..40),
            (33, 1, 0..0),
        ] {
            let mut u = Vec::new();
            let mut w = Vec::new();
            for j in 0..ny {
                for i in 0..nx {
                    let (x, y) = (i as f64 * 0.21, j as f64 * 0.17);
                    let nan = nan_rows.contains(&j);
                    u.push(if nan {
                        f32::NAN
                    } else {
                        ((x + 0.3).sin() * (1.1 * y).cos()) as f32
                    });
                    w.push(if nan {
                        f32::NAN
                    } else {
                        ((0.8 * x).cos() * (y - 0.2).sin()) as f32
                    });
                }
            }
            let xi = 1e-3;
            let parts = encode(&u, &w, ny, nx, xi, false);
            let (mut du, mut dw) = (vec![0f32; ny * nx], vec![0f32; ny * nx]);
            decode(&parts, ny, nx, xi, &mut du, &mut dw).unwrap();
            let n = parts.codes.len();
            for block_log2 in [10, 17] {
                let coded = rans::encode_as::<u32, { rans::LANES }>(&parts.codes, block_log2, true);
                let blocks = rans::Blocks::<u32>::new(&coded, n).unwrap();
                for threads in [1, 2, 3] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let (mut ru, mut rw) = (vec![0f32; ny * nx], vec![0f32; ny * nx]);
                    pool.install(|| {
                        decode_from(
                            &parts,
                            Codes::Rans(&blocks, n),
                            ny,
                            nx,
                            xi,
                            &mut ru,
                            &mut rw,
                        )
                    })
                    .unwrap();
                    let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(&ru),
                        bits(&du),
                        "{ny}x{nx} 2^{block_log2} {threads} threads"
                    );
                    assert_eq!(
                        bits(&rw),
                        bits(&dw),
                        "{ny}x{nx} 2^{block_log2} {threads} threads"
                    );
                }
            }
            // A count that does not match the mask is refused, not read past.
            if n >= 2 {
                let coded =
                    rans::encode_as::<u32, { rans::LANES }>(&parts.codes[..n - 2], 10, true);
                let blocks = rans::Blocks::<u32>::new(&coded, n - 2).unwrap();
                let (mut ru, mut rw) = (vec![0f32; ny * nx], vec![0f32; ny * nx]);
                assert!(decode_from(
                    &parts,
                    Codes::Rans(&blocks, n - 2),
                    ny,
                    nx,
                    xi,
                    &mut ru,
                    &mut rw
                )
                .is_err());
            }
        }
    }
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
            let w = 2 * nx.saturating_sub(1);
            let quad_row = |r: usize| &eps[r * w..(r + 1) * w];
            for j in 0..ny {
                let mut least = vec![f64::INFINITY; nx];
                let above = (j > 0).then(|| quad_row(j - 1));
                let below = (j + 1 < ny).then(|| quad_row(j));
                incident_min(above, below, nx, &mut least);
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
