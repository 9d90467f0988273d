//! Mode S's level plan: which levels start their search at half the bound.
//!
//! A coded vertex's error is its residual when that is below the bound, else
//! anywhere in [-eb, eb]. On the coarse levels most residuals are large, so
//! their reconstructions carry errors near the bound, and every finer level
//! interpolates them: on smooth fields most of the fine levels' nonzero codes
//! are those inherited errors. Coding the coarse levels under half the bound
//! costs about a bit per code there and can remove most of the fine levels'
//! nonzero codes (`factz synth` turbulence 4096^2 at rel 1e-2: 84.6 KB ->
//! 55.5 KB with steps >= 16 at half the bound), or cost more than it saves
//! (1024^2 at rel 1e-4, most datagen fields). Which depends on the field and
//! the bound, so the encoder tries: it codes a few sample tiles under each
//! plan without the topology checks (prediction and quantization only, the
//! cheap part of mode S), estimates each plan's bits from the codes'
//! per-phase entropies, and keeps the smallest plan, or none unless it
//! saves [`MARGIN`].
//!
//! The plan only raises the first bound id each vertex tries; ids are stored
//! per vertex, so the decoder needs nothing, and the topology guarantee is the
//! search's as before. The GPU encoder takes the same plan (`gpu::mode_s`).

use super::{schedule, Predictor, Targets, STRIDE};
use crate::codec::zigzag;
use crate::field::quantize::{eb_of_id, quantize};
use crate::real::Real;
use rayon::prelude::*;
use std::convert::Infallible;
use std::ops::Range;

/// Levels of step `tight_from` and coarser (the anchors count as step
/// [`STRIDE`]) try bound ids from 1 (half the bound); `None`: every level
/// from id 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LevelPlan {
    pub tight_from: Option<usize>,
}

impl LevelPlan {
    /// The first bound id the targets of step `s` try.
    pub fn first_id(&self, s: usize) -> u32 {
        match self.tight_from {
            Some(t) if s >= t => 1,
            _ => 0,
        }
    }
}

/// The plans tried: none, then half the bound from step 32, 16 or 8 up. On
/// the fields measured the best was 16 or 8; 128, 64 and 4 never won (the
/// finest levels hold most of the vertices), and each candidate costs a pass
/// over the sample.
const CANDIDATES: [Option<usize>; 4] = [None, Some(32), Some(16), Some(8)];

/// A plan is kept only where its estimate is this much below no plan's: the
/// estimate comes from samples and ignores the topology checks.
pub const MARGIN: f64 = 0.03;

/// What a vertex's id costs when its level is tightened (ids are stored
/// per vertex; an id of 1 where most are 0).
const ID_BITS: f64 = 1.0;

/// The finest level is estimated from one in this many of its rows.
const FINEST_ROWS: usize = 4;

/// Side of a sample tile: one anchor cell with its four corners.
const TILE: usize = STRIDE + 1;
/// Fields of fewer tiles than this get no plan: the sample, tried once per
/// candidate, would cost a sizeable part of the encoding. (At 8, 1024^2
/// fields, sampling 1/16 of themselves, took 6-9% more instructions to
/// compress, for 3.5% at rel 1e-2 and nothing at 1e-3 and 1e-4.)
const MIN_FIELD: usize = 16;
/// At most this many sample tiles, and one per 24 anchor cells of the field.
const MAX_TILES: usize = 4;

/// A sample tile: its u and v (row-major), height and width.
pub type Tile<T> = (Vec<T>, Vec<T>, usize, usize);

/// The plan for an ny x nx field in memory.
pub fn choose<T: Real>(u: &[T], v: &[T], ny: usize, nx: usize, xi: f64) -> LevelPlan {
    let rows = |r: Range<usize>| Ok::<_, Infallible>((u[r.clone()].to_vec(), v[r].to_vec()));
    let Ok(plan) = choose_by(ny, nx, xi, rows);
    plan
}

/// The plan for an ny x nx field wherever it is: its [`sample_tiles`] read
/// row by row, `row(range)` giving u and v at the field's elements `range`
/// (row-major), then [`choose_from`] them. The CPU and the GPU (which reads
/// the rows back from the device) both choose through here.
pub fn choose_by<T: Real, E>(
    ny: usize,
    nx: usize,
    xi: f64,
    mut row: impl FnMut(Range<usize>) -> Result<(Vec<T>, Vec<T>), E>,
) -> Result<LevelPlan, E> {
    let mut tiles: Vec<Tile<T>> = Vec::new();
    for (y0, x0, h, w) in sample_tiles(ny, nx) {
        let (mut tu, mut tv) = (Vec::with_capacity(h * w), Vec::with_capacity(h * w));
        for j in y0..y0 + h {
            let (a, b) = row(j * nx + x0..j * nx + x0 + w)?;
            tu.extend(a);
            tv.extend(b);
        }
        tiles.push((tu, tv, h, w));
    }
    Ok(choose_from(&tiles, xi))
}

/// The plan whose estimate over `tiles` is smallest, if it saves [`MARGIN`]
/// against none; none where a tile holds a value that is not finite (the
/// estimate predicts as the finite path does) or `xi` is not positive. Only
/// the tiles decide, so the GPU, reading the same tiles, chooses the same.
fn choose_from<T: Real>(tiles: &[Tile<T>], xi: f64) -> LevelPlan {
    let finite = tiles
        .iter()
        .all(|(u, v, _, _)| u.iter().chain(v).all(|x| x.is_finite()));
    if !finite || xi.is_nan() || xi <= 0.0 || tiles.is_empty() {
        return LevelPlan::default();
    }
    let bits: Vec<f64> = CANDIDATES
        .par_iter()
        .map(|&c| {
            let plan = LevelPlan { tight_from: c };
            tiles
                .iter()
                .map(|(u, v, h, w)| estimate_bits(u, v, *h, *w, xi, plan))
                .sum()
        })
        .collect();
    let (best, &least) = bits
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .expect("candidates");
    if least < bits[0] * (1.0 - MARGIN) {
        LevelPlan {
            tight_from: CANDIDATES[best],
        }
    } else {
        LevelPlan::default()
    }
}

/// Up to [`MAX_TILES`] tiles (y0, x0, height, width) spread over the field,
/// each on the anchor lattice; one for fields of fewer than 48 anchor cells;
/// none for fields of fewer than [`MIN_FIELD`] tiles (the sample would cost
/// a sizeable part of the encoding: no plan).
pub fn sample_tiles(ny: usize, nx: usize) -> Vec<(usize, usize, usize, usize)> {
    if ny < TILE || nx < TILE || ny * nx < MIN_FIELD * TILE * TILE {
        return Vec::new();
    }
    let (cy, cx) = ((ny - 1) / STRIDE, (nx - 1) / STRIDE);
    let want = (cy * cx / 24).clamp(1, MAX_TILES);
    // Cells at the centres of a near-square grid of `want` parts.
    let gy = if want >= 4 { 2 } else { 1 };
    let gx = want / gy;
    let mut out = Vec::new();
    for a in 0..gy {
        for b in 0..gx {
            let y0 = ((2 * a + 1) * cy / (2 * gy)) * STRIDE;
            let x0 = ((2 * b + 1) * cx / (2 * gx)) * STRIDE;
            out.push((y0, x0, TILE.min(ny - y0), TILE.min(nx - x0)));
        }
    }
    out
}

/// Estimated bits of an ny x nx field coded under `plan` without topology
/// checks: each phase's codes at their order-0 entropy (the stream codes
/// segments of phases with their own tables), 64 bits per vertex that does
/// not quantize.
fn estimate_bits<T: Real>(u: &[T], v: &[T], ny: usize, nx: usize, xi: f64, plan: LevelPlan) -> f64 {
    let (mut ru, mut rv) = (u.to_vec(), v.to_vec());
    let mut hist = Histogram::default();
    let mut bits = 0.0;
    // Anchors: Lorenzo over the lattice, raster order.
    let eb = eb_of_id(xi, plan.first_id(STRIDE));
    for j in (0..ny).step_by(STRIDE) {
        for i in (0..nx).step_by(STRIDE) {
            let k = j * nx + i;
            let p = Predictor::anchor(nx, i, j);
            let (pu, pv) = (p.apply::<true, T>(&ru), p.apply::<true, T>(&rv));
            hist.code(&mut ru[k], u[k], pu, eb);
            hist.extra += ID_BITS * plan.first_id(STRIDE) as f64;
            hist.code(&mut rv[k], v[k], pv, eb);
        }
    }
    bits += hist.take_bits();
    let (mut pu, mut pv, mut across) = (Vec::new(), Vec::new(), Vec::new());
    for (s, phase) in schedule() {
        let eb = eb_of_id(xi, plan.first_id(s));
        let t = Targets::of(s, phase);
        // The finest level feeds no prediction: every `FINEST_ROWS`-th of
        // its rows estimates it (it holds 3/4 of the vertices).
        let every = if s == 1 { FINEST_ROWS } else { 1 };
        let (all, sampled) = (t.rows(ny).len(), t.rows(ny).step_by(every).len());
        for j in t.rows(ny).step_by(every) {
            super::predict_row::<true, T>(&ru, (ny, nx), (j, s, phase), &mut pu, &mut across);
            super::predict_row::<true, T>(&rv, (ny, nx), (j, s, phase), &mut pv, &mut across);
            for ((i, &a), &b) in t.cols(nx).zip(&pu).zip(&pv) {
                let k = j * nx + i;
                hist.code(&mut ru[k], u[k], a, eb);
                hist.extra += ID_BITS * plan.first_id(s) as f64;
                hist.code(&mut rv[k], v[k], b, eb);
            }
        }
        bits += hist.take_bits() * all as f64 / sampled.max(1) as f64;
    }
    bits
}

/// Codes seen in one phase: counts of zig-zag codes below `WIDE`, and the
/// bits of the rest and of the vertices that do not quantize.
struct Histogram {
    counts: Vec<u32>,
    n: u64,
    extra: f64,
}

const WIDE: usize = 1024;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; WIDE + 1],
            n: 0,
            extra: 0.0,
        }
    }
}

impl Histogram {
    /// Quantizes `x` against `pred` under `eb` as mode S does, counts its
    /// code and writes its reconstruction to `r` (the value itself when it
    /// does not quantize: stored exactly).
    #[inline]
    fn code<T: Real>(&mut self, r: &mut T, x: T, pred: f64, eb: f64) {
        match quantize(x, pred, eb) {
            Some((q, rec)) => {
                let z = zigzag(q) as usize;
                self.counts[z.min(WIDE)] += 1;
                self.n += 1;
                if z >= WIDE {
                    // Escaped: about its width twice (an Elias-gamma-like cost).
                    self.extra += 2.0 * (z as f64).log2();
                }
                *r = rec;
            }
            None => {
                self.extra += 8.0 * T::BYTES as f64;
                *r = x;
            }
        }
    }

    /// The phase's bits (order-0 entropy plus the extras), and a fresh count.
    fn take_bits(&mut self) -> f64 {
        let n = self.n as f64;
        let entropy: f64 = self
            .counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| f64::from(c) * (n / f64::from(c)).log2())
            .sum();
        let bits = entropy + self.extra;
        *self = Histogram::default();
        bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_ids_follow_the_plan() {
        let none = LevelPlan::default();
        let p = LevelPlan {
            tight_from: Some(16),
        };
        for s in [1, 2, 8, 16, 32, STRIDE] {
            assert_eq!(none.first_id(s), 0);
            assert_eq!(p.first_id(s), u32::from(s >= 16));
        }
    }

    #[test]
    fn tiles_lie_on_the_lattice_inside_the_field() {
        assert!(sample_tiles(0, 0).is_empty());
        assert!(sample_tiles(700, 700).is_empty());
        assert!(sample_tiles(1024, 1024).is_empty());
        assert!(sample_tiles(256, 1 << 20).is_empty());
        for (ny, nx, want) in [
            (1040, 1040, 1),
            (2048, 2048, 2),
            (4096, 4096, 4),
            (800, 5000, 2),
        ] {
            let t = sample_tiles(ny, nx);
            assert_eq!(t.len(), want, "{ny}x{nx}");
            for &(y0, x0, h, w) in &t {
                assert_eq!((y0 % STRIDE, x0 % STRIDE, h, w), (0, 0, TILE, TILE));
                assert!(y0 + h <= ny && x0 + w <= nx);
            }
        }
    }

    #[test]
    fn no_plan_without_finite_tiles_or_a_bound() {
        let n = TILE;
        let smooth = |k: usize| ((k % n) as f32 * 0.02).sin() + ((k / n) as f32 * 0.03).cos();
        let u: Vec<f32> = (0..n * n).map(smooth).collect();
        let v: Vec<f32> = (0..n * n).map(|k| smooth(k + 7)).collect();
        let mut bad = u.clone();
        bad[n + 3] = f32::NAN;
        assert_eq!(
            choose_from(&[(bad, v.clone(), n, n)], 1e-3),
            LevelPlan::default()
        );
        assert_eq!(
            choose_from(&[(u.clone(), v.clone(), n, n)], 0.0),
            LevelPlan::default()
        );
        assert_eq!(choose_from::<f32>(&[], 1e-3), LevelPlan::default());
        // Deterministic, whatever the threads.
        let tiles = [(u, v, n, n)];
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let a = one.install(|| choose_from(&tiles, 2e-2));
        assert_eq!(a, choose_from(&tiles, 2e-2));
    }
}
