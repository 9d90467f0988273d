//! Cell-linked grid: every pair of finite particles closer than the cell side
//! lies in the same or adjacent cells, so a pair search visits each cell and its
//! forward neighbours (13 of the 26 in 3D, fewer at open faces; in a periodic box
//! with fewer than 3 cells along an axis the wrapped neighbours coincide and are
//! visited once) and sees every close pair exactly once.
//!
//! Cells have side >= the search radius. Only occupied cells are stored (sorted
//! cell keys; at most one per finite particle), so memory stays O(N) however fine
//! the grid; the grid coarsens only when cell keys would overflow 62 bits.

use super::geometry::{at, bounding_box, Space};
use crate::real::Real;
use rayon::prelude::*;

mod lanes;

#[cfg(target_arch = "x86_64")]
pub(super) use lanes::PACK;

/// Cells are this much wider than the radius, so rounding in the cell index can
/// never put two particles within the radius two cells apart.
const SIDE_MARGIN: f64 = 1.0 + 1e-6;
/// Occupied cells per parallel work item.
const CELLS_PER_TASK: usize = 1024;
/// Fewest cells per axis for the interior fast path: two neighbouring cells
/// then span under half the box, so no periodic image is nearer.
const MIN_INTERIOR: usize = 5;
/// Most cells a grid may have (keys are u64).
const MAX_CELLS: usize = 1 << 62;

pub struct Grid {
    pub(super) dims: [usize; 3],
    periodic: bool,
    pub(super) lo: [f64; 3],
    /// Cells per unit length along each axis.
    pub(super) scale: [f64; 3],
    /// Square of the cell side: `pairs` hands `keep` only pairs this close.
    reach2: f64,
    /// Finite particles sorted by cell key (ascending index within a cell).
    pub(super) order: Vec<u32>,
    /// Keys of the occupied cells, ascending.
    pub(super) keys: Vec<u64>,
    /// `order[start[c]..start[c + 1]]` are the particles of occupied cell `keys[c]`.
    pub(super) start: Vec<usize>,
}

impl Grid {
    /// A grid over AoS positions for pair searches up to radius `r` (> 0).
    pub fn build<T: Real>(pos: &[T], space: Space, r: f64) -> Grid {
        let n = pos.len() / 3;
        let finite: Vec<u32> = (0..n as u32)
            .into_par_iter()
            .filter(|&k| {
                pos[3 * k as usize..3 * k as usize + 3]
                    .iter()
                    .all(|c| c.is_finite())
            })
            .collect();
        let (lo, extent) = match space.period {
            Some(l) => ([0.0; 3], [l; 3]),
            None => match bounding_box(pos) {
                Some((lo, hi)) => (lo, [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]]),
                None => ([0.0; 3], [0.0; 3]),
            },
        };
        let side = r * SIDE_MARGIN;
        let mut dims = extent.map(|e| {
            let c = (e / side).floor();
            if c >= 1.0 {
                c.min(u32::MAX as f64) as usize
            } else {
                1
            }
        });
        coarsen(&mut dims, MAX_CELLS);
        let scale = [0, 1, 2].map(|k| {
            if extent[k] > 0.0 {
                dims[k] as f64 / extent[k]
            } else {
                0.0
            }
        });
        let mut grid = Grid {
            dims,
            periodic: space.period.is_some(),
            lo,
            scale,
            reach2: side * side,
            order: Vec::new(),
            keys: Vec::new(),
            start: Vec::new(),
        };
        let key = |k: u32| grid.cell_of(&pos[3 * k as usize..3 * k as usize + 3], space);
        let (sorted_keys, order) = sort_by_key(&finite, key);
        // Where each cell's run of keys starts, found in parallel.
        let mut start: Vec<usize> = (0..sorted_keys.len())
            .into_par_iter()
            .filter(|&at| at == 0 || sorted_keys[at] != sorted_keys[at - 1])
            .collect();
        let keys = start.par_iter().map(|&at| sorted_keys[at]).collect();
        start.push(sorted_keys.len());
        grid.order = order;
        grid.keys = keys;
        grid.start = start;
        grid
    }

    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }

    /// The cell along axis k of a coordinate (a NaN's is 0). Without a libm
    /// call where it can: a coordinate in `[0, L)` is its own `rem_euclid`,
    /// and for a non-negative product the conversion truncates as `floor`
    /// would (a negative one or NaN converts to 0, as `floor` then gave).
    #[inline]
    fn axis_cell<T: Real>(&self, k: usize, x: T, space: Space) -> usize {
        let x = x.to_f64();
        let t = match space.period {
            Some(l) if (0.0..l).contains(&x) => x,
            Some(l) => x.rem_euclid(l),
            None => x - self.lo[k],
        };
        ((t * self.scale[k]) as usize).min(self.dims[k] - 1)
    }

    fn cell_of<T: Real>(&self, p: &[T], space: Space) -> u64 {
        let c = [0, 1, 2].map(|k| self.axis_cell(k, p[k], space) as u64);
        let [nx, ny, _] = self.dims.map(|d| d as u64);
        (c[2] * ny + c[1]) * nx + c[0]
    }

    /// Index of the occupied cell with this key, if any.
    fn occupied(&self, key: u64) -> Option<usize> {
        self.keys.binary_search(&key).ok()
    }

    /// Cell keys after `c` among its 26 neighbours, each once, ascending.
    fn forward_neighbours(&self, c: u64, out: &mut Vec<u64>) {
        out.clear();
        let [nx, ny, nz] = self.dims.map(|d| d as u64);
        let (cx, cy, cz) = (c % nx, (c / nx) % ny, c / (nx * ny));
        let step = |x: u64, d: i64, n: u64| -> Option<u64> {
            let y = x as i64 + d;
            if (0..n as i64).contains(&y) {
                Some(y as u64)
            } else if self.periodic {
                Some(y.rem_euclid(n as i64) as u64)
            } else {
                None
            }
        };
        for dz in -1..=1 {
            let Some(z) = step(cz, dz, nz) else { continue };
            for dy in -1..=1 {
                let Some(y) = step(cy, dy, ny) else { continue };
                for dx in -1..=1 {
                    let Some(x) = step(cx, dx, nx) else { continue };
                    let d = (z * ny + y) * nx + x;
                    if d > c {
                        out.push(d);
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Visit every unordered pair of finite particles in the same or adjacent cells
    /// and within the cell side (>= the radius) once, as `(i, j, dist2)` with
    /// i < j, and collect what `keep` returns. The
    /// output order depends only on the input (never on the thread count): cells
    /// in key order; within a cell its own pairs, then each forward neighbour in
    /// key order, its particles outer and the cell's inner.
    pub fn pairs<R: Real, T: Send>(
        &self,
        pos: &[R],
        space: Space,
        keep: impl Fn(u32, u32, f64) -> Option<T> + Sync,
    ) -> Vec<T> {
        self.pairs_via(pos, space, f64::NEG_INFINITY, keep, true)
    }

    /// [`Grid::pairs`] of the pairs with `dist2 >= min2` only (a thin shell:
    /// the rest are dropped before their indices are looked up).
    pub fn pairs_beyond<R: Real, T: Send>(
        &self,
        pos: &[R],
        space: Space,
        min2: f64,
        keep: impl Fn(u32, u32, f64) -> Option<T> + Sync,
    ) -> Vec<T> {
        self.pairs_via(pos, space, min2, keep, true)
    }

    /// [`Grid::pairs`], with the interior fast path on or off (tests compare).
    fn pairs_via<R: Real, T: Send>(
        &self,
        pos: &[R],
        space: Space,
        min2: f64,
        keep: impl Fn(u32, u32, f64) -> Option<T> + Sync,
        fast: bool,
    ) -> Vec<T> {
        let order = &self.order;
        let tasks = self.fold_via(
            &self.gather(pos),
            space,
            min2,
            Vec::new,
            |out: &mut Vec<T>, a, b, dist| {
                let (i, j) = (order[a as usize], order[b as usize]);
                let (i, j) = if i < j { (i, j) } else { (j, i) };
                if let Some(x) = keep(i, j, dist) {
                    out.push(x);
                }
            },
            fast,
        );
        let mut all = Vec::with_capacity(tasks.iter().map(Vec::len).sum());
        for t in tasks {
            all.extend(t);
        }
        all
    }

    fn check_sorted<T: Real>(&self, sorted: &[T]) {
        debug_assert_eq!(
            sorted.len(),
            3 * self.order.len(),
            "positions in grid order"
        );
    }

    /// AoS positions in grid order ([`gather`] into [`Grid::order`]).
    pub fn gather<T: Real>(&self, pos: &[T]) -> Vec<T> {
        gather(pos, &self.order)
    }

    /// Finite particles in grid order: `order()[a]` is the particle at
    /// position `a` of the walk.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    fn fold_via<T: Real, S: Send>(
        &self,
        sorted: &[T],
        space: Space,
        min2: f64,
        sink: impl Fn() -> S + Sync,
        visit: impl Fn(&mut S, u32, u32, f64) + Sync,
        fast: bool,
    ) -> Vec<S> {
        self.rows_via(
            sorted,
            space,
            min2,
            sink,
            |s, row| {
                let f = row.fixed as u32;
                for &h in row.hits {
                    let other = (row.others.start + h as usize) as u32;
                    let (a, b) = if row.fixed_first {
                        (f, other)
                    } else {
                        (other, f)
                    };
                    visit(s, a, b, row.d2[h as usize]);
                }
            },
            fast,
        )
    }

    /// The pair walk of [`Grid::pairs_beyond`] a row at a time: each [`Row`]
    /// holds one particle's distances to a run of consecutive positions, so
    /// a pass can work on whole rows (vectorised) instead of a call per pair.
    /// Same pairs, same sequence.
    fn rows_via<T: Real, S: Send>(
        &self,
        sorted: &[T],
        space: Space,
        min2: f64,
        sink: impl Fn() -> S + Sync,
        visit: impl Fn(&mut S, &Row) + Sync,
        fast: bool,
    ) -> Vec<S> {
        let wide = Wide::of(sorted);
        let plain_row = lanes::row_fn();
        // Per task: the caller's sink, a row's distances and its hits.
        let spans = self.spans_via(
            sorted,
            space,
            || (sink(), Vec::new(), Vec::new()),
            |(out, d2, hits): &mut (S, Vec<f64>, Vec<u32>), fixed, others, fixed_first, plain| {
                let m = if plain {
                    plain_row(&wide, fixed, others.clone(), min2, self.reach2, d2, hits)
                } else {
                    d2.clear();
                    d2.extend(
                        others
                            .clone()
                            .map(|q| space.dist2(at(sorted, fixed), at(sorted, q))),
                    );
                    near(d2, min2, self.reach2, hits)
                };
                if m > 0 {
                    let row = Row {
                        fixed,
                        d2: &d2[..others.len()],
                        others,
                        hits: &hits[..m],
                        fixed_first,
                    };
                    visit(out, &row);
                }
            },
            fast,
        );
        spans.into_iter().map(|s| s.0).collect()
    }

    /// The walk of [`Grid::pairs_beyond`] before any distance is taken, on
    /// positions already gathered into grid order (`sorted`: AoS, particle
    /// `order()[a]` at position a; [`Grid::gather`]): `span(sink,
    /// fixed, others, fixed_first, plain)` for each of its rows, in its
    /// sequence (positions as there; an empty row is skipped). `plain`: the plain
    /// differences of the row are the minimum image ([`Wide::dist2s`] gives
    /// its distances); else [`Space::dist2`] (or [`Wide::dist2s_in`]) does.
    /// For passes that fuse the distances with their own work; a row holds
    /// every pair within the reach, and farther ones.
    pub fn fold_spans<T: Real, S: Send>(
        &self,
        sorted: &[T],
        space: Space,
        sink: impl Fn() -> S + Sync,
        span: impl Fn(&mut S, usize, std::ops::Range<usize>, bool, bool) + Sync,
    ) -> Vec<S> {
        self.check_sorted(sorted);
        self.spans_via(sorted, space, sink, span, true)
    }

    fn spans_via<T: Real, S: Send>(
        &self,
        sorted: &[T],
        space: Space,
        sink: impl Fn() -> S + Sync,
        span: impl Fn(&mut S, usize, std::ops::Range<usize>, bool, bool) + Sync,
        fast: bool,
    ) -> Vec<S> {
        let rows = |s: &mut S, block: &Block| {
            for (a, others) in block.rows() {
                span(s, a, others, block.triangular, block.plain);
            }
        };
        self.blocks_via(sorted, space, sink, rows, fast)
    }

    /// The walk of [`Grid::fold_spans`] a block of rows at a time: `block(sink,
    /// b)` for each [`Block`], in the walk's sequence (its rows are the walk's
    /// rows in order). For passes that take a block in one call (whose per-row
    /// overhead was as much as a short row's work).
    pub fn fold_blocks<T: Real, S: Send>(
        &self,
        sorted: &[T],
        space: Space,
        sink: impl Fn() -> S + Sync,
        block: impl Fn(&mut S, &Block) + Sync,
    ) -> Vec<S> {
        self.check_sorted(sorted);
        self.blocks_via(sorted, space, sink, block, true)
    }

    fn blocks_via<T: Real, S: Send>(
        &self,
        sorted: &[T],
        space: Space,
        sink: impl Fn() -> S + Sync,
        block: impl Fn(&mut S, &Block) + Sync,
        fast: bool,
    ) -> Vec<S> {
        let ncell = self.keys.len();
        let rows = self.interior_rows().filter(|_| fast);
        // `dirty[c + 1] - dirty[c]`: whether cell c holds a particle outside the
        // periodic box [0, L), whose plain differences are not the minimum image.
        let mut dirty = vec![0u32; ncell + 1];
        if let Some(l) = space.period {
            let outside = |p: &[T]| p.iter().any(|&x| !(0.0..l).contains(&x.to_f64()));
            for c in 0..ncell {
                let out = sorted[3 * self.start[c]..3 * self.start[c + 1]]
                    .chunks_exact(3)
                    .any(outside);
                dirty[c + 1] = dirty[c] + out as u32;
            }
        }
        let clean = |cells: std::ops::Range<usize>| dirty[cells.end] == dirty[cells.start];
        (0..ncell.div_ceil(CELLS_PER_TASK))
            .into_par_iter()
            .map(|t| {
                let mut out = sink();
                let mut nb = Vec::with_capacity(26);
                let cells = t * CELLS_PER_TASK..((t + 1) * CELLS_PER_TASK).min(ncell);
                let mut cursor = rows.unwrap_or_default().map(|(lo, _)| {
                    self.keys
                        .partition_point(|&k| k < self.keys[cells.start] + lo)
                });
                let mut emit = |b: Block| {
                    if b.has_rows() {
                        block(&mut out, &b);
                    }
                };
                for c in cells {
                    let here = self.start[c]..self.start[c + 1];
                    let key = self.keys[c];
                    let interior = rows.filter(|_| self.is_interior(key) && clean(c..c + 1));
                    if let Some(rows) = interior {
                        let runs = rows.map(|(lo, hi)| (key + lo, key + hi));
                        // No neighbour wraps and every particle is in the box:
                        // the plain difference is the minimum image, bit for
                        // bit (the wrap term is 0), where the runs are clean.
                        let mut found = [(0, 0); 5];
                        for (r, &(lo, hi)) in runs.iter().enumerate() {
                            let first = &mut cursor[r];
                            while *first < ncell && self.keys[*first] < lo {
                                *first += 1;
                            }
                            let mut last = *first;
                            while last < ncell && self.keys[last] <= hi {
                                last += 1;
                            }
                            found[r] = (*first, last);
                        }
                        if found.iter().all(|&(f, l)| clean(f..l)) {
                            // The same rows in the same order as below.
                            emit(Block::within(here.clone(), true));
                            for &(first, last) in &found {
                                let fixed = self.start[first]..self.start[last];
                                emit(Block::across(fixed, here.clone(), true));
                            }
                            continue;
                        }
                    }
                    emit(Block::within(here.clone(), false));
                    self.forward_neighbours(key, &mut nb);
                    for d in nb.iter().filter_map(|&key| self.occupied(key)) {
                        let fixed = self.start[d]..self.start[d + 1];
                        emit(Block::across(fixed, here.clone(), false));
                    }
                }
                out
            })
            .collect()
    }

    /// The forward neighbours of an interior cell as five rows of consecutive
    /// keys, key offsets `(first, last)` ascending: (+1, 0, 0); dy +1; dz +1
    /// with dy -1, 0, +1. None unless every axis has at least [`MIN_INTERIOR`]
    /// cells (no cell is interior then).
    fn interior_rows(&self) -> Option<[(u64, u64); 5]> {
        if self.dims.iter().any(|&d| d < MIN_INTERIOR) {
            return None;
        }
        let [nx, ny, _] = self.dims.map(|d| d as u64);
        let plane = nx * ny;
        Some([
            (1, 1),
            (nx - 1, nx + 1),
            (plane - nx - 1, plane - nx + 1),
            (plane - 1, plane + 1),
            (plane + nx - 1, plane + nx + 1),
        ])
    }

    /// Whether no neighbour of the cell is off the grid or wraps: then its forward
    /// neighbours are [`Grid::interior_rows`] and two particles in neighbouring cells
    /// are less than two cells, under half the box, apart on each axis.
    fn is_interior(&self, c: u64) -> bool {
        let [nx, ny, nz] = self.dims.map(|d| d as u64);
        if self.dims.iter().any(|&d| d < MIN_INTERIOR) {
            return false;
        }
        let (cx, cy, cz) = (c % nx, (c / nx) % ny, c / (nx * ny));
        // In a periodic box the bottom plane's dz -1 neighbours wrap to the top,
        // whose keys are larger: forward, but not in the rows.
        let z_from = if self.periodic { 1 } else { 0 };
        (1..nx - 1).contains(&cx) && (1..ny - 1).contains(&cy) && (z_from..nz - 1).contains(&cz)
    }
}

/// A block of rows of the pair walk ([`Grid::fold_blocks`]): each position
/// of `fixed` paired with each of `others`, or (`triangular`: one cell's
/// own pairs, `fixed` and `others` the cell) with each of `others` after it.
/// `plain` as [`Grid::fold_spans`]'s. Every block's `others` are the cell the
/// walk is at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub fixed: std::ops::Range<usize>,
    pub others: std::ops::Range<usize>,
    pub triangular: bool,
    pub plain: bool,
}

impl Block {
    /// A cell's own pairs.
    fn within(cell: std::ops::Range<usize>, plain: bool) -> Block {
        Block {
            fixed: cell.clone(),
            others: cell,
            triangular: true,
            plain,
        }
    }

    /// Each of `fixed` (a neighbour's) with each of `cell`.
    fn across(fixed: std::ops::Range<usize>, cell: std::ops::Range<usize>, plain: bool) -> Block {
        Block {
            fixed,
            others: cell,
            triangular: false,
            plain,
        }
    }

    fn has_rows(&self) -> bool {
        if self.triangular {
            self.fixed.len() >= 2
        } else {
            !self.fixed.is_empty() && !self.others.is_empty()
        }
    }

    /// Its rows in the walk's sequence, none empty: each fixed position and
    /// its others.
    pub fn rows(&self) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
        self.fixed
            .clone()
            .map(move |a| {
                let from = if self.triangular {
                    a + 1
                } else {
                    self.others.start
                };
                (a, from..self.others.end)
            })
            .filter(|(_, r)| !r.is_empty())
    }
}

/// One row of the pair walk ([`Grid::rows_via`]): `fixed` paired with each
/// of `others` (grid positions), `d2[o]` the squared distance (minimum image)
/// to `others.start + o`, and `hits` the offsets within the walk's reach,
/// ascending (never empty). `fixed_first`: in [`Grid::pairs`]' convention
/// the pairs are `(fixed, other)`, else `(other, fixed)`. Every row's
/// `others` lie in the cell the walk is at.
pub struct Row<'r> {
    pub fixed: usize,
    pub others: std::ops::Range<usize>,
    pub d2: &'r [f64],
    pub hits: &'r [u32],
    pub fixed_first: bool,
}

/// Values past the last that [`Wide`] pads each axis with (and a per-particle
/// array read in lanes beside it), so that a row's last group of four lanes
/// loads in bounds.
pub const PAD: usize = 3;

/// Positions in f64, one array per axis, for rows of plain distances that
/// the compiler vectorises.
pub struct Wide {
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
}

impl Wide {
    /// Each axis padded with [`PAD`] zeros past the last position.
    pub fn of<T: Real>(sorted: &[T]) -> Wide {
        let axis = |k: usize| {
            let mut v: Vec<f64> = sorted.par_chunks_exact(3).map(|p| p[k].to_f64()).collect();
            v.extend([0.0; PAD]);
            v
        };
        Wide {
            x: axis(0),
            y: axis(1),
            z: axis(2),
        }
    }

    /// The x, y and z axes (each [`PAD`] longer than the positions).
    pub fn axes(&self) -> [&[f64]; 3] {
        [&self.x, &self.y, &self.z]
    }

    /// `out[o]`: the squared plain distance between `p` and `range.start + o`,
    /// bit for bit `Space::open().dist2` (each difference of two coordinates taken
    /// in f64, summed x, y, z; the order of a difference only flips its sign).
    #[inline]
    pub fn dist2s(&self, p: usize, range: std::ops::Range<usize>, out: &mut Vec<f64>) {
        let (px, py, pz) = (self.x[p], self.y[p], self.z[p]);
        let (x, y, z) = (
            &self.x[range.clone()],
            &self.y[range.clone()],
            &self.z[range],
        );
        out.clear();
        out.extend(x.iter().zip(y).zip(z).map(|((&x, &y), &z)| {
            let (dx, dy, dz) = (x - px, y - py, z - pz);
            dx * dx + dy * dy + dz * dz
        }));
    }
}

impl Wide {
    /// Whether `p` and some position of `range` may be linked (`d2 <= b2`)
    /// differently in these positions and in `other` (same indexing), each
    /// taken as [`Wide::dist2s`] takes it: one fused pass over the row, which
    /// vectorises, for a check whose answer is nearly always no. Also true
    /// where a difference on either side reaches a quarter of the periodic
    /// box (`quarter`, infinite in open space), where the plain difference
    /// may not be the minimum image: a true answer is settled pair by pair
    /// with [`Space::dist2`].
    #[inline]
    pub fn may_flip(
        &self,
        other: &Wide,
        p: usize,
        range: std::ops::Range<usize>,
        b2: f64,
        quarter: f64,
    ) -> bool {
        let n = range.len();
        let (ax, ay, az) = (
            &self.x[range.clone()],
            &self.y[range.clone()],
            &self.z[range.clone()],
        );
        let (bx, by, bz) = (
            &other.x[range.clone()],
            &other.y[range.clone()],
            &other.z[range],
        );
        let (ax, ay, az, bx, by, bz) = (&ax[..n], &ay[..n], &az[..n], &bx[..n], &by[..n], &bz[..n]);
        let (px, py, pz) = (self.x[p], self.y[p], self.z[p]);
        let (qx, qy, qz) = (other.x[p], other.y[p], other.z[p]);
        let mut any = false;
        for o in 0..n {
            let (dx, dy, dz) = (ax[o] - px, ay[o] - py, az[o] - pz);
            let (ex, ey, ez) = (bx[o] - qx, by[o] - qy, bz[o] - qz);
            let far = (dx.abs() >= quarter)
                | (dy.abs() >= quarter)
                | (dz.abs() >= quarter)
                | (ex.abs() >= quarter)
                | (ey.abs() >= quarter)
                | (ez.abs() >= quarter);
            let was = dx * dx + dy * dy + dz * dz;
            let now = ex * ex + ey * ey + ez * ez;
            any |= ((was <= b2) != (now <= b2)) | far;
        }
        any
    }
}

/// The offsets in `row` of the distances the pair walk keeps (not beyond
/// `reach2`, not short of `min2`; as the scalar test, NaN is kept), ascending:
/// `hits[..m]`, m returned. `hits` is grown, never cleared: a fill per row
/// cost as much as the test.
#[inline]
fn near(row: &[f64], min2: f64, reach2: f64, hits: &mut Vec<u32>) -> usize {
    if hits.len() < row.len() {
        hits.resize(row.len(), 0);
    }
    let mut m = 0;
    for (o, &d) in row.iter().enumerate() {
        hits[m] = o as u32;
        m += !(d > reach2 || d < min2) as usize;
    }
    m
}

impl Wide {
    /// [`Wide::dist2s`] in `space`, bit for bit `space.dist2` on `sorted`
    /// (these positions, AoS): the plain differences where each is under a
    /// quarter box (which [`Space::delta`] takes as they are), else the row
    /// pair by pair.
    pub fn dist2s_in<T: Real>(
        &self,
        space: Space,
        sorted: &[T],
        p: usize,
        range: std::ops::Range<usize>,
        out: &mut Vec<f64>,
    ) {
        let Some(l) = space.period else {
            return self.dist2s(p, range, out);
        };
        let (px, py, pz) = (self.x[p], self.y[p], self.z[p]);
        let (x, y, z) = (
            &self.x[range.clone()],
            &self.y[range.clone()],
            &self.z[range.clone()],
        );
        out.clear();
        out.resize(x.len(), 0.0);
        let q = 0.25 * l;
        // (An OR of flags, not a running maximum: it vectorises.)
        let mut far = false;
        for o in 0..x.len() {
            let (dx, dy, dz) = (x[o] - px, y[o] - py, z[o] - pz);
            far |= (dx.abs() >= q) | (dy.abs() >= q) | (dz.abs() >= q);
            out[o] = dx * dx + dy * dy + dz * dz;
        }
        // (NaN differences give NaN either way.)
        if far {
            out.clear();
            out.extend(range.map(|q| space.dist2(at(sorted, p), at(sorted, q))));
        }
    }
}

/// The particles `ks` (ascending) with their keys, sorted by key, ties kept
/// in index order: the order of sorting the pairs. Sorted as one u64 each
/// where key and index fit (always but for grids of over 2^32 / n cells):
/// half the bytes to move and fault in, and one comparison.
fn sort_by_key(ks: &[u32], key: impl Fn(u32) -> u64 + Sync) -> (Vec<u64>, Vec<u32>) {
    let index_bits = 64 - (ks.last().copied().unwrap_or(0) as u64).leading_zeros();
    let mut packed: Vec<u64> = ks.par_iter().map(|&k| key(k)).collect();
    let top = packed.par_iter().copied().max().unwrap_or(0);
    if (64 - top.leading_zeros()) + index_bits > 64 {
        let mut keyed: Vec<(u64, u32)> = packed.into_iter().zip(ks.iter().copied()).collect();
        keyed.par_sort_unstable();
        return keyed.into_iter().unzip();
    }
    packed
        .par_iter_mut()
        .zip(ks)
        .for_each(|(p, &k)| *p = (*p << index_bits) | k as u64);
    packed.par_sort_unstable();
    let mask = (1u64 << index_bits) - 1;
    let order = packed.par_iter().map(|&p| (p & mask) as u32).collect();
    packed.par_iter_mut().for_each(|p| *p >>= index_bits);
    (packed, order)
}

/// AoS `pos` gathered into `order` (`out[a]`: particle `order[a]`), in
/// parallel: one cache miss per particle of a shuffled set, then every pass
/// reads in order.
pub fn gather<T: Real>(pos: &[T], order: &[u32]) -> Vec<T> {
    let mut out = vec![T::default(); 3 * order.len()];
    out.par_chunks_exact_mut(3)
        .zip(order.par_iter())
        .for_each(|(o, &k)| o.copy_from_slice(at(pos, k as usize)));
    out
}

/// Shrink the cell counts until there are at most `max_cells` cells.
fn coarsen(dims: &mut [usize; 3], max_cells: usize) {
    loop {
        let total = dims.iter().fold(1u128, |a, &d| a * d as u128);
        if total <= max_cells as u128 {
            return;
        }
        let f = (total as f64 / max_cells as f64).cbrt();
        for d in dims.iter_mut() {
            if *d > 1 {
                *d = ((*d as f64 / f).floor() as usize).clamp(1, *d - 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(pos: &[f32], space: Space, r: f64) -> Vec<(u32, u32)> {
        let n = pos.len() / 3;
        let mut v = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                if space.dist2(&pos[3 * i..3 * i + 3], &pos[3 * j..3 * j + 3]) <= r * r {
                    v.push((i as u32, j as u32));
                }
            }
        }
        v
    }

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 40) as f32 / (1u64 << 24) as f32
    }

    #[test]
    fn finds_every_close_pair_once() {
        let mut s = 7u64;
        for &(n, l, r) in &[
            (300usize, 10.0f32, 0.9),
            (200, 10.0, 4.0),
            (50, 3.0, 1.4),
            (400, 10.0, 0.3),
        ] {
            let pos: Vec<f32> = (0..3 * n).map(|_| lcg(&mut s) * l).collect();
            for space in [Space::open(), Space::periodic(l as f64)] {
                let g = Grid::build(&pos, space, r);
                let mut got = g.pairs(&pos, space, |i, j, d2| (d2 <= r * r).then_some((i, j)));
                got.sort_unstable();
                assert_eq!(
                    got,
                    brute(&pos, space, r),
                    "n {n} r {r} {space:?} dims {:?}",
                    g.dims()
                );
            }
        }
    }

    #[test]
    fn empty_and_tiny_grids_have_no_interior() {
        // dims of 1 or 2 cells: the interior rows would underflow
        for pos in [
            vec![],
            vec![1.0f32, 2.0, 3.0],
            vec![0.0, 0.0, 0.0, 0.1, 0.0, 0.0],
        ] {
            for space in [Space::open(), Space::periodic(10.0)] {
                let g = Grid::build(&pos, space, 0.5);
                let got = g.pairs(&pos, space, |i, j, d2| (d2 <= 0.25).then_some((i, j)));
                assert_eq!(got.len(), usize::from(pos.len() == 6), "{pos:?} {space:?}");
            }
        }
    }

    #[test]
    fn the_interior_fast_path_gives_the_same_pairs_in_the_same_order() {
        // Clustered (many particles per cell) and sparse, fine and coarse grids,
        // particles on the periodic faces: every (i, j, dist2), in order.
        let mut s = 11u64;
        for &(n, l, r, clump) in &[
            (3000usize, 10.0f32, 0.3, 0.0f32),
            (3000, 10.0, 0.5, 0.3),
            (2000, 6.0, 1.1, 0.0),
            (500, 10.0, 2.6, 0.0),
        ] {
            let mut pos: Vec<f32> = Vec::with_capacity(3 * n);
            for k in 0..n {
                if clump > 0.0 && k % 2 == 1 {
                    // next to the previous particle
                    let p = pos.len() - 3;
                    for a in 0..3 {
                        let v = pos[p + a] + clump * (lcg(&mut s) - 0.5);
                        pos.push(v.rem_euclid(l));
                    }
                } else {
                    pos.extend((0..3).map(|_| lcg(&mut s) * l));
                }
            }
            pos[0] = 0.0;
            pos[3] = l - 1e-4;
            // Periodic images outside the box: the same points to the slow path,
            // not to the plain difference.
            let mut imaged = pos.clone();
            for (k, x) in imaged.iter_mut().enumerate() {
                match k % 7 {
                    0 => *x += l,
                    3 => *x -= l,
                    _ => {}
                }
            }
            for (pos, space) in [
                (&pos, Space::open()),
                (&pos, Space::periodic(l as f64)),
                (&imaged, Space::periodic(l as f64)),
            ] {
                let g = Grid::build(pos, space, r);
                let f = |i, j, d2: f64| (d2 <= r * r).then_some((i, j, d2.to_bits()));
                let fast = g.pairs_via(pos, space, f64::NEG_INFINITY, f, true);
                assert_eq!(
                    fast,
                    g.pairs_via(pos, space, f64::NEG_INFINITY, f, false),
                    "n {n} r {r} {space:?}"
                );
                assert!(!fast.is_empty());
            }
        }
    }

    #[test]
    fn a_fused_row_check_misses_no_changed_pair() {
        // Two position sets of which every pair's status may differ, in open
        // and periodic space, with images outside the box and pairs across
        // the seam: `may_flip` is true wherever a pair of the row changes by
        // `space.dist2`, and false for a set against itself inside the box.
        let mut s = 9u64;
        let (n, l, b2) = (600usize, 6.0f32, 0.3f64 * 0.3);
        let a: Vec<f32> = (0..3 * n).map(|_| lcg(&mut s) * l).collect();
        let mut moved: Vec<f32> = a.iter().map(|&x| x + 0.05 * (lcg(&mut s) - 0.5)).collect();
        for (k, x) in moved.iter_mut().enumerate().filter(|(k, _)| k % 97 == 0) {
            *x += if k % 2 == 0 { l } else { -l };
        }
        let (wa, wm) = (Wide::of(&a), Wide::of(&moved));
        let (mut changed_rows, mut flagged) = (0, 0);
        for space in [Space::open(), Space::periodic(l as f64)] {
            let quarter = space.period.map_or(f64::INFINITY, |l| 0.25 * l);
            for p in 0..n {
                for range in [0..n, p..(p + 40).min(n)] {
                    let changed = range.clone().any(|q| {
                        let was = space.dist2(at(&a, p), at(&a, q));
                        let now = space.dist2(at(&moved, p), at(&moved, q));
                        (was <= b2) != (now <= b2)
                    });
                    let flag = wa.may_flip(&wm, p, range.clone(), b2, quarter);
                    assert!(flag || !changed, "{space:?} row {p} {range:?}");
                    changed_rows += usize::from(changed);
                    flagged += usize::from(flag);
                    if space.period.is_none() {
                        assert!(!wa.may_flip(&wa, p, range, b2, quarter));
                    }
                }
            }
        }
        assert!(
            changed_rows > 50 && flagged < 4 * n,
            "{changed_rows} {flagged}"
        );
    }

    #[test]
    fn distance_rows_are_space_dist2_bit_for_bit() {
        // Rows with every difference under a quarter box (the plain path),
        // rows crossing it, rows across the periodic seam, images outside the
        // box and a NaN: each distance's bits, or NaN where it is NaN.
        let mut s = 5u64;
        let l = 8.0f32;
        let mut pos: Vec<f32> = (0..3 * 400)
            .map(|k| {
                let x = lcg(&mut s);
                match k / 300 {
                    0 => 3.0 + 0.5 * x,
                    1 => x * l,
                    2 => l - 0.01 * x,
                    _ => x * l + if k % 2 == 0 { l } else { -l },
                }
            })
            .collect();
        pos[7] = f32::NAN;
        let wide = Wide::of(&pos);
        let (mut got, mut plain) = (Vec::new(), 0);
        for space in [Space::open(), Space::periodic(l as f64)] {
            for p in (0..400).step_by(7) {
                for range in [0..400, p..(p + 9).min(400), 3..5] {
                    wide.dist2s_in(space, &pos, p, range.clone(), &mut got);
                    let want: Vec<f64> = range
                        .map(|q| space.dist2(at(&pos, p), at(&pos, q)))
                        .collect();
                    let bits = |v: &[f64]| {
                        v.iter()
                            .map(|d| if d.is_nan() { u64::MAX } else { d.to_bits() })
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(bits(&got), bits(&want), "{space:?} row {p}");
                    plain += usize::from(got.iter().all(|d| *d < (l * l / 16.0) as f64));
                }
            }
        }
        assert!(plain > 10, "rows on the plain path too");
    }
}
