//! The safe-bound method: each particle gets its own radius, within which it
//! can move without changing any of its pairs' link status, and is moved (by the
//! correction's edit codes) to within it; no optimiser.
//!
//! A pair at original distance d keeps its status when its particles' errors
//! (as 3-vectors) satisfy `|e_i| + |e_j| < |d - b|`: by the triangle inequality
//! the distance changes by at most `|e_i - e_j|`. Particle k's radius r_k is the
//! least `|d - b| / 2` over its vulnerable pairs (pairs outside the window are
//! safe under xi already); every coordinate also stays within xi. A ball, not the
//! box of side `|d - b| / (2 sqrt 3)` inside it: a base error long on one axis
//! and short on the others often fits the ball unedited, or after an edit of one
//! coordinate, and a looser target takes a coarser (cheaper) edit code.
//!
//! Only particles that need it are moved ("secured"): first one particle of each
//! pair the base output changed, then, round by round, the unsecured particle of
//! each pair a move changed (a pair of two unmoved particles keeps the base's
//! status, a pair of two secured ones is safe by construction), and after
//! `LAZY_ROUNDS`, while the cascade is still broad (or after `MAX_ROUNDS` in
//! any case), every particle with a radius at once. Securing keeps a particle
//! already within its ball; else edits its largest-error coordinate, then the two
//! largest, then all three, each to the coarsest edit code that lands within its
//! share of the ball; or stores the particle exactly when no code can. Then, as
//! in the correction, every vulnerable pair is checked with the exact link rule
//! and both particles of any pair still changed are stored exactly until none
//! is: the guarantee rests on that check, not on the margins.
//!
//! The stream is the correction's (edits and exact particles on top of the
//! base), so every decoder reads it unchanged.

use super::correct::{
    apply_edit, code_range, edit_step, reset_exact, store_exact, Corrector, Options, Outcome, Stats,
};
use super::geometry::{self, linked, Space};
use super::grid::{self, Grid, Wide};
use super::vulnerable::{self, Pair, PairList, Parts};
use crate::bound::within;
use crate::real::Real;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

mod live;
pub(super) use live::{LiveHits, LiveTest};

/// Each particle's share of a pair's `|d - b|`, shrunk so that a radius met
/// exactly still leaves the f64 distance on the right side of b (the exact
/// check decides).
const SHARE: f64 = (1.0 - 1e-9) / 2.0;

/// Rounds of lazy securing before the rest of the bounded particles are
/// secured at once if the cascade is still broad (one that long and wide is
/// cheaper to end than to follow).
const LAZY_ROUNDS: u32 = 8;

/// A cascade is broad while its frontier holds more than one particle in this
/// many. A thin tail (4M particles at rel 1e-4: one particle a round from round
/// 6 on) is followed instead: its rounds walk only the pair parts spanning
/// their particles, where ending it would secure half a million particles.
const THIN_TAIL: usize = 4096;

/// Rounds after which the rest is secured at once however thin the cascade
/// (a chain of one particle a round, adversarial, would otherwise take as many
/// rounds as particles).
const MAX_ROUNDS: u32 = 64;

/// What the safe method needs of the vulnerable pairs, for a base output whose
/// particle k errs by `reach[k] = |recon_k - orig_k|` (0 if exact):
/// - `live`: the pairs whose status some final position could change. Every
///   final error is at most the base's (securing only edits a particle whose
///   error exceeds its radius, into the radius; exact is 0), so a pair with
///   `|d - b| > reach_i + reach_j` (less a margin for f64 rounding) keeps its
///   status whatever happens, and is left out of everything below, the final
///   check included.
/// - `bad`: the live pairs the base output changed, in pair order.
/// - `radius`: each particle's least `|d - b| / 2` over its live pairs
///   (infinite if none).
///
/// Pairs and radii index the survey's own particle order, `order` (`order[a]`
/// is the particle at survey index a; None: the particles' own order). The
/// CPU's search surveys in its grid's cell order, so every later pass over the
/// pairs reads neighbouring memory whatever order the particles came in. A
/// pair's `i` is still the one of lower particle index: the securing order
/// breaks ties by it, so the stream does not depend on the survey's order.
pub struct Survey<T = f32> {
    pub order: Option<Vec<u32>>,
    pub live: PairList,
    pub bad: Vec<Pair>,
    pub radius: Vec<f64>,
    /// The originals and the base output (AoS) in `order`, where the survey
    /// gathered them already.
    pub gathered: Option<(Vec<T>, Vec<T>)>,
}

/// Each particle's error norm in `recon`: infinite where a coordinate of one
/// of the two is not finite (such a particle is stored exactly anyway).
fn reach<T: Real>(orig: &[T], recon: &[T]) -> Vec<f64> {
    orig.par_chunks_exact(3)
        .zip(recon.par_chunks_exact(3))
        .map(|(o, r)| error_norm(o, r))
        .collect()
}

#[inline]
pub(super) fn error_norm<T: Real>(o: &[T], r: &[T]) -> f64 {
    let e2: f64 = (0..3)
        .map(|a| {
            // (A product, not powi(2): that stayed a libm call per
            // coordinate; the bits are the same.)
            let d = r[a].to_f64() - o[a].to_f64();
            d * d
        })
        .sum();
    if e2.is_finite() {
        e2.sqrt()
    } else {
        f64::INFINITY
    }
}

/// [`error_norm`] of each particle of `orig` and `recon` (AoS, same order),
/// with [`grid::PAD`] zeros past the last for [`LiveHits`]' lanes.
pub(super) fn padded_norms<T: Real>(orig: &[T], recon: &[T]) -> Vec<f64> {
    let mut e: Vec<f64> = orig
        .par_chunks_exact(3)
        .zip(recon.par_chunks_exact(3))
        .map(|(o, r)| error_norm(o, r))
        .collect();
    e.extend([0.0; grid::PAD]);
    e
}

/// Whether errors of norms `ei`, `ej` can change the status of a pair at
/// original distance `d` (widened as [`super::geometry::vulnerable_halfwidth`],
/// and by `slack`, [`geometry::rounding_slack`]: 0 for f32 in ordinary boxes,
/// which leaves the sum's bits as they were).
#[inline]
pub(super) fn can_change(d: f64, b: f64, ei: f64, ej: f64, slack: f64) -> bool {
    (d - b).abs() <= (ei + ej) * MARGIN_REL + b * MARGIN_B + slack
}

/// [`can_change`]'s relative widening of the errors' sum, and its widening
/// relative to b.
const MARGIN_REL: f64 = 1.0 + 1e-6;
const MARGIN_B: f64 = 1e-12;

/// Every particle in `grid`'s cell order: the grid holds the finite ones,
/// and the rest, pairless, follow.
pub(super) fn grid_order(grid: &Grid, n: usize) -> Vec<u32> {
    let mut o = grid.order().to_vec();
    if o.len() == n {
        return o;
    }
    let mut held = vec![false; n];
    o.iter().for_each(|&k| held[k as usize] = true);
    o.extend((0..n as u32).filter(|&k| !held[k as usize]));
    o
}

impl<T: Real> Survey<T> {
    /// From the vulnerable pairs of any [`Corrector`] (the GPU's).
    pub fn of(pairs: &[Pair], orig: &[T], recon: &[T], space: Space, b: f64, xi: f64) -> Self {
        let e = reach(orig, recon);
        let slack = geometry::rounding_slack(orig, space, b, xi);
        let live: Vec<Pair> = pairs
            .par_iter()
            .filter(|p| {
                let (i, j) = (p.i as usize, p.j as usize);
                let d = space
                    .dist2(geometry::at(orig, i), geometry::at(orig, j))
                    .sqrt();
                can_change(d, b, e[i], e[j], slack)
            })
            .copied()
            .collect();
        let radius = radii(orig, &live, space, b);
        let bad = vulnerable::violated(&live, recon, space, b);
        Survey {
            order: None,
            live: PairList::from(&live[..]),
            bad,
            radius,
            gathered: None,
        }
    }

    /// The CPU's: one pair search that also filters, finds the changed pairs
    /// and lowers the radii, so the pair list is walked once, in the grid's
    /// cell order. Same result as [`Survey::of`] on `vulnerable::pairs` (in
    /// its own order); with `full`, those pairs too (particle indices).
    pub fn search(
        orig: &[T],
        recon: &[T],
        space: Space,
        b: f64,
        xi: f64,
        full: bool,
    ) -> (Self, Option<Vec<Pair>>) {
        let n = orig.len() / 3;
        let slack = geometry::rounding_slack(orig, space, b, xi);
        let (lo2, hi2) = vulnerable::window_of(b, geometry::halfwidth_with(b, xi, slack));
        let b2 = b * b;
        let grid = Grid::build(orig, space, hi2.sqrt());
        let order = grid_order(&grid, n);
        // Each array gathered once, then read in order.
        let (os, rs) = rayon::join(
            || grid::gather(orig, &order),
            || grid::gather(recon, &order),
        );
        let e = padded_norms(&os, &rs);
        let radius = no_radii(n);
        let held = &os[..3 * grid.order().len()];
        let wide = Wide::of(held);
        let test = LiveTest {
            window: (lo2, hi2),
            b,
            slack,
        };
        // Per task: live pairs, changed pairs, all pairs (with `full`); a
        // block's live hits.
        type Sink = (Parts, Vec<Pair>, Vec<Pair>, LiveHits);
        // Oriented by particle index (see `Survey`); selects, not a branch:
        // which of the two comes first is a coin toss in a shuffled set.
        let oriented = |a: usize, c: usize| {
            let swap = order[c] < order[a];
            let (x, y) = (if swap { c } else { a }, if swap { a } else { c });
            (x as u32, y as u32)
        };
        let visit = |live: &mut Parts, bad: &mut Vec<Pair>, f: usize, c: usize, d2: f64| {
            let (x, y) = oriented(f, c);
            let pair = Pair {
                i: x,
                j: y,
                linked: geometry::linked(d2, b2),
            };
            live.push(pair);
            let now = space.dist2(geometry::at(&rs, f), geometry::at(&rs, c));
            if geometry::linked(now, b2) != pair.linked {
                bad.push(pair);
            }
        };
        let block = |s: &mut Sink, block: &grid::Block| {
            let (live, bad, all, scratch) = s;
            if !full {
                for (f, c, d2) in scratch.of(&wide, held, space, &e, block, &test, &radius) {
                    visit(live, bad, f, c, d2);
                }
                return;
            }
            // Every pair in the window, and the live ones among them (with
            // their radii: least over a particle's pairs in any order).
            for (f, c, d2) in scratch.in_window(&wide, held, space, &e, block, &test) {
                let (x, y) = oriented(f, c);
                let (i, j) = (order[x as usize], order[y as usize]);
                all.push(Pair {
                    i,
                    j,
                    linked: geometry::linked(d2, b2),
                });
                let d = d2.sqrt();
                if can_change(d, b, e[f], e[c], slack) {
                    let g = pair_radius(d, b).to_bits();
                    lower(&radius, f, g);
                    lower(&radius, c, g);
                    visit(live, bad, f, c, d2);
                }
            }
        };
        let sinks: Vec<Sink> = grid.fold_blocks(held, space, Sink::default, block);
        let mut live = Vec::with_capacity(sinks.len());
        let mut bad = Vec::with_capacity(sinks.iter().map(|s| s.1.len()).sum());
        let mut all = full.then(|| Vec::with_capacity(sinks.iter().map(|s| s.2.len()).sum()));
        for (l, c, f, _) in sinks {
            live.extend(l.into_parts());
            bad.extend(c);
            if let Some(all) = &mut all {
                all.extend(f);
            }
        }
        let survey = Survey {
            order: Some(order),
            live: PairList::from_parts(live),
            bad,
            radius: radii_of(radius),
            gathered: Some((os, rs)),
        };
        (survey, all)
    }
}

/// A particle's share of its pair's margin `|d - b|`: the radius that pair
/// allows it.
#[inline]
pub(super) fn pair_radius(d: f64, b: f64) -> f64 {
    (d - b).abs() * SHARE
}

/// Atomic radii, all infinite (no pair yet), for [`lower`].
pub(super) fn no_radii(n: usize) -> Vec<AtomicU64> {
    (0..n)
        .map(|_| AtomicU64::new(f64::INFINITY.to_bits()))
        .collect()
}

/// The radii [`lower`] left.
pub(super) fn radii_of(r: Vec<AtomicU64>) -> Vec<f64> {
    r.into_iter()
        .map(|a| f64::from_bits(a.into_inner()))
        .collect()
}

/// Lower an atomic radius to `g` (bits of a non-negative f64: their order is
/// the values', so the minimum is the same in any order, on any thread).
#[inline]
pub(super) fn lower(r: &[AtomicU64], k: usize, g: u64) {
    if g < r[k].load(Relaxed) {
        r[k].fetch_min(g, Relaxed);
    }
}

/// Each particle's radius over `pairs` (infinite for one without pairs; 0 for
/// a pair whose distance is not finite).
pub fn radii<T: Real>(orig: &[T], pairs: &[Pair], space: Space, b: f64) -> Vec<f64> {
    let s = no_radii(orig.len() / 3);
    pairs.par_iter().for_each(|p| {
        let (i, j) = (p.i as usize, p.j as usize);
        let d = space
            .dist2(&orig[3 * i..3 * i + 3], &orig[3 * j..3 * j + 3])
            .sqrt();
        let g = if d.is_finite() {
            pair_radius(d, b)
        } else {
            0.0
        };
        lower(&s, i, g.to_bits());
        lower(&s, j, g.to_bits());
    });
    radii_of(s)
}

/// The particles to secure first: one of each pair the base changed (a greedy
/// vertex cover in pair order). Of a pair's two particles, the one whose
/// securing alone restores the pair (its partner left at the base's position)
/// is taken, else the one of more changed pairs. Where the pair stays changed,
/// its other particle follows in the next round. `moved(k)`: particle k's
/// position once secured.
fn first_frontier<T: Real>(
    n: usize,
    bad: &[Pair],
    recon: &[T],
    space: Space,
    b: f64,
    moved: impl Fn(usize) -> [T; 3] + Sync,
) -> Vec<usize> {
    let mut degree = vec![0u32; n];
    for p in bad {
        degree[p.i as usize] += 1;
        degree[p.j as usize] += 1;
    }
    // Whether securing i alone, or j alone, restores each pair.
    let restores: Vec<(bool, bool)> = bad
        .par_iter()
        .map(|p| {
            let (i, j) = (p.i as usize, p.j as usize);
            let keeps = |a: &[T], c: &[T]| linked(space.dist2(a, c), b * b) == p.linked;
            (
                keeps(&moved(i), &recon[3 * j..3 * j + 3]),
                keeps(&recon[3 * i..3 * i + 3], &moved(j)),
            )
        })
        .collect();
    let mut chosen = vec![false; n];
    let mut out = Vec::new();
    for (p, &(by_i, by_j)) in bad.iter().zip(&restores) {
        let (i, j) = (p.i as usize, p.j as usize);
        if chosen[i] || chosen[j] {
            continue;
        }
        let k = match (by_i, by_j) {
            (true, false) => i,
            (false, true) => j,
            _ if degree[j] > degree[i] => j,
            _ => i,
        };
        chosen[k] = true;
        out.push(k);
    }
    out
}

/// The distinct particles of `ks`, ascending (a mark each: the lists run to
/// millions with many repeats, where a sort is the slowest step). Marked and
/// read in parallel (relaxed atomic stores, plain stores on common hardware).
fn distinct<I>(n: usize, ks: I) -> Vec<usize>
where
    I: IntoParallelIterator<Item = usize>,
{
    use std::sync::atomic::AtomicBool;
    let mark: Vec<AtomicBool> = (0..n)
        .into_par_iter()
        .map(|_| AtomicBool::new(false))
        .collect();
    ks.into_par_iter()
        .for_each(|k| mark[k].store(true, Relaxed));
    (0..n)
        .into_par_iter()
        .filter(|&k| mark[k].load(Relaxed))
        .collect()
}

/// [`distinct`] of a list that may be short (a late round's), sorted where a
/// mark would cost O(n).
fn distinct_of(n: usize, mut ks: Vec<usize>) -> Vec<usize> {
    if ks.len() >= n / 64 {
        return distinct(n, ks);
    }
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// The edit code whose decoded value is within `s` of `x` and moves `from` the
/// least; None when no code lands within `s`.
fn smallest_edit<T: Real>(from: T, x: T, s: f64, step: f64, m: u32) -> Option<(i32, T)> {
    let t = x.to_f64() - from.to_f64();
    // The offset nearest 0 that is within s of t, then the code at or past it.
    edge_code(
        from,
        x,
        s,
        step,
        m,
        t - s.min(t.abs()) * t.signum(),
        t.signum(),
    )
}

/// The valid code nearest the offset `want`, searching in direction `dir`
/// (toward x). The search starts from the T value nearest `from + want`, moved
/// toward x until within `s`: where the edit lattice is finer than T's
/// spacing (large coordinates, tight xi), many codes decode to one value and a
/// walk over codes would never cross to the next one.
fn edge_code<T: Real>(
    from: T,
    x: T,
    s: f64,
    step: f64,
    m: u32,
    want: f64,
    dir: f64,
) -> Option<(i32, T)> {
    let (lo, hi) = code_range(m);
    let mut y = T::from_f64(from.to_f64() + want);
    for _ in 0..2 {
        if within(y, x, s) || !y.is_finite() {
            break;
        }
        y = next_toward(y, dir);
    }
    let c = (y.to_f64() - from.to_f64()) / step - 0.5;
    // (Not `f64::round`: a libm call on baseline x86-64, same bits.)
    let mut code = geometry::round_half_away(c).clamp(lo as f64, hi as f64) as i32;
    let toward = if dir > 0.0 { 1 } else { -1 };
    // One code back first: rounding may have stepped past the edge.
    let back = (code - toward).clamp(lo, hi);
    if within(apply_edit(from, back, step), x, s) {
        code = back;
    }
    for _ in 0..4 {
        let v = apply_edit(from, code, step);
        if v.is_finite() && within(v, x, s) {
            return Some((code, v));
        }
        code = (code + toward).clamp(lo, hi);
    }
    None
}

/// The value of T after `y` upward (`dir > 0`) or downward ([`Real::next_toward`];
/// f32::next_up / next_down need Rust 1.86, the MSRV is older). `y` is finite.
fn next_toward<T: Real>(y: T, dir: f64) -> T {
    y.next_toward(dir)
}

/// Of the codes that land within `s` of `x`, the one with the most trailing
/// zero bits (unique: two multiples of 2^k enclose one of 2^(k+1)): a tight bound needs a precise edit, a loose
/// one only a few high bits, and the byte-plane coder then finds the low planes
/// constant. None when no code lands within `s`.
fn coarsest_edit<T: Real>(from: T, x: T, s: f64, step: f64, m: u32) -> Option<(i32, T)> {
    coarsest_known(from, x, s, step, m).or_else(|| coarsest_searched(from, x, s, step, m))
}

/// [`coarsest_edit`] from the ends of the valid codes as two searches find
/// them.
fn coarsest_searched<T: Real>(from: T, x: T, s: f64, step: f64, m: u32) -> Option<(i32, T)> {
    let near = smallest_edit(from, x, s, step, m)?;
    let t = x.to_f64() - from.to_f64();
    // The far end of the valid codes, searched back toward x.
    let far = edge_code(from, x, s, step, m, t + s * t.signum(), -t.signum()).unwrap_or(near);
    let (a, b) = (near.0.min(far.0), near.0.max(far.0));
    // On magnitudes: the valid codes lie on one side of 0 unless they straddle
    // codes -1 and 0 (offsets -step/2, +step/2), where the nearest is as cheap.
    let (neg, lo, hi) = if a >= 0 {
        (false, a as i64, b as i64)
    } else if b <= 0 {
        (true, -(b as i64), -(a as i64))
    } else {
        return Some(near);
    };
    let pick = most_trailing_zeros(lo, hi);
    let code = if neg { -pick } else { pick } as i32;
    let v = apply_edit(from, code, step);
    if v.is_finite() && within(v, x, s) {
        Some((code, v))
    } else {
        Some(near)
    }
}

/// [`coarsest_searched`]'s answer without its two searches (each a division
/// and several exact tests, a tenth of the safe method's time), where the valid
/// codes' ends are known well enough to settle it: None where not.
///
/// Before rounding to T, the codes within `s` of `x` are those between
/// `(t -+ s) / step - 1/2` (t = x - from). Rounding moves a value by half an
/// ulp `u` (in codes), so every valid code lies within `u` (plus the f64
/// rounding here) outside those ends: `outer`. The searches stop at most
/// about `5u + 1` inside them (they start from a value of T moved up to two
/// ulps into the interval): `inner` lies within their ends. The code with the
/// most trailing zeros is unique in any interval, so where `outer` and
/// `inner` give the same one, the searches' ends, between them, give it too.
/// It is tested exactly before it is taken. Intervals straddling 0, which
/// take the nearest code, are left to the searches.
fn coarsest_known<T: Real>(from: T, x: T, s: f64, step: f64, m: u32) -> Option<(i32, T)> {
    let (f, xf) = (from.to_f64(), x.to_f64());
    let t = xf - f;
    // (A product, not a division: the margins dwarf its rounding.)
    let per_code = 1.0 / step;
    let u = T::half_ulp(f.abs().max(xf.abs()) + s) * per_code;
    let (lo, hi) = ((t - s) * per_code - 0.5, (t + s) * per_code - 0.5);
    let (cl, ch) = code_range(m);
    // A code at most v and one at least v, each within 2 of it, clamped:
    // truncations, not floor and ceil (libm calls on baseline x86-64).
    let below = |v: f64| (v - 1.0).clamp(cl as f64, ch as f64) as i64;
    let above = |v: f64| (v + 1.0).clamp(cl as f64, ch as f64) as i64;
    let outer = (below(lo - u - 2.0), above(hi + u + 2.0));
    let inner = (above(lo + 5.0 * u + 4.0), below(hi - 5.0 * u - 4.0));
    if inner.0 > inner.1 {
        return None;
    }
    let (neg, outer, inner) = if outer.0 >= 0 {
        (false, outer, inner)
    } else if outer.1 <= 0 {
        (true, (-outer.1, -outer.0), (-inner.1, -inner.0))
    } else {
        return None;
    };
    let pick = most_trailing_zeros(outer.0, outer.1);
    if pick != most_trailing_zeros(inner.0, inner.1) {
        return None;
    }
    let code = if neg { -pick } else { pick } as i32;
    let v = apply_edit(from, code, step);
    (v.is_finite() && within(v, x, s)).then_some((code, v))
}

/// Of the magnitudes in `[lo, hi]` (`0 <= lo <= hi < 2^31`), the one with the
/// most trailing zero bits, capped at 2^30: `hi` cut below the highest bit
/// where it differs from `lo - 1` (that multiple is >= lo, the next coarser
/// one is not).
#[inline]
fn most_trailing_zeros(lo: i64, hi: i64) -> i64 {
    let k = if lo == 0 {
        30
    } else {
        (63 - ((lo - 1) ^ hi).leading_zeros() as i64).min(30)
    };
    (hi >> k) << k
}

/// How securing moves a particle: its edit codes per axis (None: kept), or
/// None: stored exactly.
pub(super) type Move = Option<[Option<i32>; 3]>;

/// The edit codes (per axis, None: kept) that bring particle k's error within
/// radius `r` and every coordinate within `xi`, editing as few coordinates as
/// will do, largest error first; None when no code lands (store it exactly).
pub(super) fn secure<T: Real>(orig: &[T], from: &[T], r: f64, xi: f64, step: f64, m: u32) -> Move {
    let err = |v: &[T; 3]| -> [f64; 3] { [0, 1, 2].map(|a| v[a].to_f64() - orig[a].to_f64()) };
    let norm2 = |e: &[f64; 3]| e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
    let start = [from[0], from[1], from[2]];
    let e = err(&start);
    let r2 = r * r;
    if norm2(&e) <= r2 {
        return Some([None; 3]);
    }
    let mut axes = [0usize, 1, 2];
    axes.sort_by(|&a, &b| e[b].abs().total_cmp(&e[a].abs()));
    for edited in 1..=3 {
        let kept: f64 = axes[edited..].iter().map(|&a| e[a] * e[a]).sum();
        if kept >= r2 {
            continue;
        }
        // Each edited axis gets an equal share of what the ball leaves, and
        // passes on what its coarsest code did not use.
        let mut left = r2 - kept;
        let mut v = start;
        let mut codes = [None; 3];
        for (done, &a) in axes[..edited].iter().enumerate() {
            let share = (left.max(0.0) / (edited - done) as f64).sqrt().min(xi);
            let (code, w) = coarsest_edit(from[a], orig[a], share, step, m)?;
            v[a] = w;
            codes[a] = Some(code);
            let d = w.to_f64() - orig[a].to_f64();
            left -= d * d;
        }
        if norm2(&err(&v)) <= r2 {
            return Some(codes);
        }
    }
    None
}

/// `correct::correct`'s contract with per-particle safe bounds instead of the
/// optimiser: `recon` the base output, `exact` the particles already stored
/// exactly.
#[allow(clippy::too_many_arguments)]
pub fn correct<T: Real>(
    corrector: &dyn Corrector<T>,
    orig: &[T],
    mut recon: Vec<T>,
    exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> crate::error::Result<Outcome<T>> {
    let t0 = Instant::now();
    reset_exact(orig, &mut recon, &exact);
    let (survey, _) = corrector.survey(orig, &recon, space, b, xi, false)?;
    let found = t0.elapsed().as_secs_f64();
    let mut out = correct_on(survey, orig, recon, exact, space, b, xi, opts);
    out.stats.setup_s += found;
    Ok(out)
}

/// [`correct`] on a survey of `recon` (the base output).
#[allow(clippy::too_many_arguments)]
pub fn correct_on<T: Real>(
    survey: Survey<T>,
    orig: &[T],
    mut recon: Vec<T>,
    exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> Outcome<T> {
    reset_exact(orig, &mut recon, &exact);
    let Survey {
        order,
        live,
        bad,
        radius,
        gathered,
    } = survey;
    let Some(order) = order else {
        return secure_pairs(&live, bad, &radius, orig, recon, exact, space, b, xi, opts);
    };
    // In the survey's order, and back.
    let t = Instant::now();
    let es: Vec<bool> = order.par_iter().map(|&k| exact[k as usize]).collect();
    let (os, mut rs) =
        gathered.unwrap_or_else(|| (grid::gather(orig, &order), grid::gather(&recon, &order)));
    // Exact particles at their originals, as in `recon`.
    for a in (0..es.len()).filter(|&a| es[a]) {
        rs[3 * a..3 * a + 3].copy_from_slice(&os[3 * a..3 * a + 3]);
    }
    drop(exact);
    let moved = t.elapsed().as_secs_f64();
    let mut out = secure_pairs(&live, bad, &radius, &os, rs, es, space, b, xi, opts);
    let t = Instant::now();
    out = in_particle_order(out, &order, orig, recon, edit_step(xi, opts.edit_bits));
    out.stats.setup_s += moved + t.elapsed().as_secs_f64();
    out
}

/// An outcome computed in `order` (`order[a]`: the particle at index a), in
/// the particles' own order. `base` is the base output in particle order
/// (exact particles at their originals, as the outcome started from): the
/// positions are rebuilt from it as the decoder does (exact particles from
/// `orig`, the rest edited by `step`), in order, instead of gathered from
/// the outcome's at random. Each array is filled in parallel at its final
/// size; the edits are taken particle by particle (already ascending, no
/// sort).
pub(super) fn in_particle_order<T: Real>(
    out: Outcome<T>,
    order: &[u32],
    orig: &[T],
    base: Vec<T>,
    step: f64,
) -> Outcome<T> {
    let n = order.len();
    let at = inverse(order);
    // `out.edits[first[a]..first[a + 1]]`: those of the particle at index a.
    debug_assert!(out.edits.windows(2).all(|w| w[0].0 < w[1].0));
    let mut first = vec![0usize; n + 1];
    for e in &out.edits {
        first[(e.0 / 3) as usize + 1] += 1;
    }
    for a in 0..n {
        first[a + 1] += first[a];
    }
    let exact: Vec<bool> = at.par_iter().map(|&a| out.exact[a as usize]).collect();
    // Where particle k's edits start in the output, and the outputs cut into
    // pieces of PIECE particles each, filled in parallel.
    let mut start: Vec<usize> = at
        .par_iter()
        .map(|&a| first[a as usize + 1] - first[a as usize])
        .collect();
    let mut sum = 0;
    for s in start.iter_mut() {
        (*s, sum) = (sum, sum + *s);
    }
    start.push(sum);
    let mut edits = vec![(0u64, 0i32); out.edits.len()];
    let mut recon = base;
    let mut pieces = Vec::with_capacity(n.div_ceil(PIECE));
    let (mut rest, mut left) = (&mut edits[..], &mut recon[..]);
    for k0 in (0..n).step_by(PIECE) {
        let k1 = (k0 + PIECE).min(n);
        let (piece, tail) = rest.split_at_mut(start[k1] - start[k0]);
        let (pos, more) = left.split_at_mut(3 * (k1 - k0));
        pieces.push((k0..k1, piece, pos));
        (rest, left) = (tail, more);
    }
    pieces.into_par_iter().for_each(|(ks, piece, pos)| {
        let mut w = 0;
        let k0 = ks.start;
        for k in ks {
            let a = at[k] as usize;
            let p = &mut pos[3 * (k - k0)..3 * (k - k0) + 3];
            if exact[k] {
                p.copy_from_slice(&orig[3 * k..3 * k + 3]);
            }
            for &(c, code) in &out.edits[first[a]..first[a + 1]] {
                let axis = (c % 3) as usize;
                piece[w] = (3 * k as u64 + axis as u64, code);
                p[axis] = apply_edit(p[axis], code, step);
                w += 1;
            }
        }
    });
    Outcome {
        recon,
        exact,
        edits,
        stats: out.stats,
    }
}

/// Particles per parallel piece of [`in_particle_order`]'s edits.
const PIECE: usize = 1 << 14;

/// The inverse of the permutation `order` (`at[order[a]] == a`), scattered
/// in parallel (relaxed atomic stores: plain stores on common hardware).
fn inverse(order: &[u32]) -> Vec<u32> {
    use std::sync::atomic::AtomicU32;
    let at: Vec<AtomicU32> = (0..order.len())
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    order
        .par_iter()
        .enumerate()
        .for_each(|(a, &k)| at[k as usize].store(a as u32, Relaxed));
    at.into_par_iter().map(AtomicU32::into_inner).collect()
}

/// Particle k moved as securing decided (`m`: its edit codes, or None:
/// stored exactly), the codes kept in `codes` (per coordinate).
pub(super) fn apply_secured<T: Real>(
    k: usize,
    m: Move,
    step: f64,
    orig: &[T],
    recon: &mut [T],
    exact: &mut [bool],
    codes: &mut [Option<i32>],
) {
    match m {
        None => {
            store_exact(k, orig, recon, exact);
        }
        Some(c) => {
            for (a, &code) in c.iter().enumerate() {
                if let Some(code) = code {
                    let at = 3 * k + a;
                    recon[at] = apply_edit(recon[at], code, step);
                    codes[at] = Some(code);
                }
            }
        }
    }
}

/// The edits a stream keeps: every coded coordinate of a particle not
/// stored exactly, ascending.
pub(super) fn kept_edits(codes: &[Option<i32>], exact: &[bool]) -> Vec<(u64, i32)> {
    let pieces: Vec<Vec<(u64, i32)>> = codes
        .par_chunks(3 * PIECE)
        .enumerate()
        .map(|(p, piece)| {
            let c0 = 3 * PIECE * p;
            piece
                .iter()
                .enumerate()
                .filter_map(|(c, &q)| {
                    let c = c0 + c;
                    q.filter(|_| !exact[c / 3]).map(|q| (c as u64, q))
                })
                .collect()
        })
        .collect();
    pieces.concat()
}

/// [`correct_on`] in the pairs' own particle order.
#[allow(clippy::too_many_arguments)]
fn secure_pairs<T: Real>(
    pairs: &PairList,
    bad: Vec<Pair>,
    radius: &[f64],
    orig: &[T],
    mut recon: Vec<T>,
    mut exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> Outcome<T> {
    let t0 = Instant::now();
    let n = orig.len() / 3;
    let step = edit_step(xi, opts.edit_bits);
    let secured_at = |k: usize, recon: &[T]| -> Move {
        let at = 3 * k..3 * k + 3;
        secure(
            &orig[at.clone()],
            &recon[at],
            radius[k],
            xi,
            step,
            opts.edit_bits,
        )
    };
    // How each particle of a changed pair would move if secured now, and the
    // position it would take: the cover asks for that twice per pair, and
    // round 0 moves them there.
    let ends = distinct(
        n,
        bad.par_iter()
            .flat_map_iter(|p| [p.i as usize, p.j as usize]),
    );
    let ahead: Vec<(Move, [T; 3])> = ends
        .par_iter()
        .map(|&k| {
            let m = secured_at(k, &recon);
            let at = |a: usize| match m {
                Some(c) => match c[a] {
                    Some(code) => apply_edit(recon[3 * k + a], code, step),
                    None => recon[3 * k + a],
                },
                None => orig[3 * k + a],
            };
            (m, [at(0), at(1), at(2)])
        })
        .collect();
    let mut slot = vec![u32::MAX; n];
    for (at, &k) in ends.iter().enumerate() {
        slot[k] = at as u32;
    }
    let planned = |k: usize| ahead[slot[k] as usize].0;
    let mut frontier = first_frontier(n, &bad, &recon, space, b, |k| ahead[slot[k] as usize].1);
    let mut stats = Stats {
        vulnerable_pairs: pairs.len(),
        violated_before: bad.len(),
        setup_s: t0.elapsed().as_secs_f64(),
        ..Stats::default()
    };
    drop(bad);

    let t = Instant::now();
    let b2 = b * b;
    let mut codes: Vec<Option<i32>> = vec![None; 3 * n];
    // Per particle: UNSECURED, SECURED (in an earlier round) or JUST (this
    // round; JUST ^ UNSECURED is the only pair of states that xors to JUST).
    const UNSECURED: u8 = 0;
    const SECURED: u8 = 1;
    const JUST: u8 = 3;
    let mut state = vec![UNSECURED; n];
    let mut rounds = 0;
    loop {
        frontier.retain(|&k| state[k] == UNSECURED && !exact[k]);
        frontier = distinct_of(n, frontier);
        if frontier.is_empty() {
            break;
        }
        let broad = frontier.len() * THIN_TAIL > n;
        if rounds == MAX_ROUNDS || (rounds >= LAZY_ROUNDS && broad) {
            // A long cascade: secure every particle with a radius at once.
            frontier = (0..n)
                .filter(|&k| state[k] == UNSECURED && !exact[k] && radius[k].is_finite())
                .collect();
        }
        // A particle of a changed pair has its codes from the cover, in any
        // round: they depend on its own position only, which stays the base's
        // until it is secured.
        let moves: Vec<Move> = frontier
            .par_iter()
            .map(|&k| {
                if slot[k] != u32::MAX {
                    planned(k)
                } else {
                    secured_at(k, &recon)
                }
            })
            .collect();
        for (&k, m) in frontier.iter().zip(&moves) {
            state[k] = JUST;
            stats.active_particles += 1;
            apply_secured(k, *m, step, orig, &mut recon, &mut exact, &mut codes);
        }
        rounds += 1;
        // The unsecured particle of each pair this round's moves changed (one
        // parallel pass over the pairs beats an adjacency built for it; parts
        // whose particles span no one secured this round are skipped, which
        // in the later, small rounds is nearly all). `frontier` ascends.
        let this = std::mem::take(&mut frontier);
        let holds = |lo: u32, hi: u32| {
            let at = this.partition_point(|&k| k < lo as usize);
            at < this.len() && this[at] <= hi as usize
        };
        // (A plain loop per part: the pass visits every pair of the early
        // rounds, and an iterator chain per pair cost twice the loop.)
        let found: Vec<Vec<usize>> = pairs
            .par_parts_spanning(holds)
            .map(|part| {
                let mut out = Vec::new();
                for p in part {
                    let (i, j) = (p.i as usize, p.j as usize);
                    // One test: one end secured this round, the other never.
                    if state[i] ^ state[j] != JUST {
                        continue;
                    }
                    let other = if state[i] == UNSECURED { i } else { j };
                    let d2 = space.dist2(&recon[3 * i..3 * i + 3], &recon[3 * j..3 * j + 3]);
                    if linked(d2, b2) != p.linked {
                        out.push(other);
                    }
                }
                out
            })
            .collect();
        frontier = found.concat();
        this.iter().for_each(|&k| state[k] = SECURED);
    }
    stats.iterations = rounds;
    stats.optimise_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut first = true;
    loop {
        let bad = pairs.violated(&recon, space, b);
        if first {
            stats.violated_after = bad.len();
            first = false;
        }
        if bad.is_empty() {
            break;
        }
        for p in &bad {
            for k in [p.i as usize, p.j as usize] {
                if store_exact(k, orig, &mut recon, &mut exact) {
                    stats.fallback_particles += 1;
                }
            }
        }
    }
    let edits = kept_edits(&codes, &exact);
    stats.edited_coords = edits.len();
    stats.check_s = t.elapsed().as_secs_f64();
    Outcome {
        recon,
        exact,
        edits,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_edit_lands_within_the_bound() {
        let (xi, m) = (1e-2, 16);
        let step = edit_step(xi, m);
        for &(from, x, s) in &[
            (10.0f32, 10.009f32, 1e-3),
            (10.0, 9.991, 1e-3),
            (10.0, 10.0004, 1e-3),
            (-3.5, -3.4901, 2e-6),
            (0.0, 0.0099, 5e-4),
        ] {
            match smallest_edit(from, x, s, step, m) {
                Some((code, v)) => {
                    assert!(within(v, x, s), "{from} -> {v}, x {x}, s {s}");
                    assert_eq!(apply_edit(from, code, step), v);
                    // one code less far would not do
                    let back = if x > from { code - 1 } else { code + 1 };
                    let w = apply_edit(from, back, step);
                    assert!(
                        !within(w, x, s)
                            || (w as f64 - from as f64).abs() >= (v as f64 - from as f64).abs(),
                        "{from} -> {v}: {w} moves less and is within"
                    );
                }
                None => panic!("{from} -> {x} within {s}: no edit"),
            }
        }
        for &(from, x, s) in &[
            (10.0f32, 10.009f32, 1e-3),
            (-3.5, -3.4901, 2e-6),
            (5.0, 4.991, 4e-3),
        ] {
            let (code, v) = coarsest_edit(from, x, s, step, m).unwrap();
            assert!(within(v, x, s) && apply_edit(from, code, step) == v);
            let (near, _) = smallest_edit(from, x, s, step, m).unwrap();
            assert!(
                code.trailing_zeros() >= near.trailing_zeros(),
                "{code} vs {near}"
            );
        }
        // Far below the edit lattice's resolution nothing lands (f32 spacing
        // near 0.0099 is 1e-9, the lattice's 6e-7: no code rounds onto x).
        assert!(smallest_edit(0.0, 0.0099, 1e-13, step, m).is_none());
    }

    #[test]
    fn the_known_coarsest_code_is_the_searched_one() {
        // Coordinates from 1e-3 to 1e6 (f32 spacing from far below to far
        // above the edit lattice's), shares from a hundredth of a code to
        // the bound, errors inside and beyond the bound, both types, both
        // lattices: where `coarsest_known` answers it gives the searches'
        // code, and it answers often (narrow intervals are left to them).
        fn case<T: Real>(from: f64, err: f64, s: f64, xi: f64, m: u32) -> (bool, bool) {
            let (x, from) = (T::from_f64(from - err), T::from_f64(from));
            let step = edit_step(xi, m);
            let known = coarsest_known(from, x, s, step, m);
            let searched = coarsest_searched(from, x, s, step, m);
            if let Some((code, v)) = known {
                assert_eq!(
                    Some((code, v.to_bits64())),
                    searched.map(|(c, w)| (c, w.to_bits64())),
                    "{} from {} to {} within {s}, m {m}",
                    T::NAME,
                    from.to_f64(),
                    x.to_f64()
                );
            }
            (known.is_some(), searched.is_some())
        }
        let mut seed = 3u64;
        let mut unit = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut answered, mut landed) = (0, 0);
        for _ in 0..200_000 {
            let (xi, m) = if unit() < 0.5 { (1e-2, 16) } else { (1e-4, 12) };
            let from = (unit() - 0.5) * 10f64.powf(unit() * 9.0 - 3.0);
            let err = (unit() - 0.5) * 4.0 * xi;
            let s = xi * 10f64.powf(-unit() * 6.0);
            let (k, l) = if unit() < 0.5 {
                case::<f32>(from, err, s, xi, m)
            } else {
                case::<f64>(from, err, s, xi, m)
            };
            answered += usize::from(k);
            landed += usize::from(l);
        }
        assert!(
            answered > 50_000 && landed > 100_000,
            "{answered} of {landed}"
        );
    }

    #[test]
    fn the_coarsest_magnitude_is_the_loops() {
        // The search it replaces: from 2^30 down, the first multiple >= lo.
        let by_loop = |lo: i64, hi: i64| {
            (0..31)
                .rev()
                .map(|k| (hi >> k) << k)
                .find(|&c| c >= lo)
                .unwrap_or(lo)
        };
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut cases: Vec<(i64, i64)> = (0..64)
            .flat_map(|lo| (lo..64).map(move |hi| (lo, hi)))
            .collect();
        for _ in 0..100_000 {
            let lo = next(1 << 31) as i64 >> next(31);
            let hi = (lo + (next(1 << 31) as i64 >> next(31))).min((1 << 31) - 1);
            cases.push((lo, hi));
        }
        cases.push((0, (1 << 31) - 1));
        cases.push(((1 << 30) + 1, (1 << 31) - 1));
        for (lo, hi) in cases {
            assert_eq!(most_trailing_zeros(lo, hi), by_loop(lo, hi), "[{lo}, {hi}]");
        }
    }

    #[test]
    fn edits_finer_than_the_f32_spacing_still_land() {
        // Near 98 the f32 spacing (7.6e-6) is 125 edit steps at xi 1e-3: the
        // code must be found from the target value, not by walking codes.
        let (xi, m) = (1e-3, 16);
        let step = edit_step(xi, m);
        for &(from, x, s) in &[
            (98.787704f32, 98.78789f32, 1.27e-4),
            (98.28762, 98.286674, 1.77e-6),
            (98.28762, 98.286674, 1e-9),
            (-70.0, -70.00091, 3e-6),
        ] {
            for edit in [smallest_edit, coarsest_edit] {
                let (code, v) = edit(from, x, s, step, m).expect("an edit lands");
                assert!(within(v, x, s), "{from} -> {v}, x {x}, s {s}");
                assert_eq!(apply_edit(from, code, step), v);
            }
        }
    }

    #[test]
    fn the_fused_search_surveys_as_the_pair_list_does() {
        let mut seed = 3u64;
        let mut unit = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        let (n, l, b, xi) = (4000usize, 8.0f32, 0.3, 0.02);
        let orig: Vec<f32> = (0..3 * n).map(|_| unit() * l).collect();
        let mut recon: Vec<f32> = orig
            .iter()
            .map(|&x| x + xi as f32 * (2.0 * unit() - 1.0))
            .collect();
        // an exact particle errs by 0; one far off the box
        recon[30..33].copy_from_slice(&orig[30..33]);
        recon[60] = orig[60] + 3.0 * l;
        for space in [Space::open(), Space::periodic(l as f64)] {
            let pairs = vulnerable::pairs(&orig, space, b, xi);
            let of = Survey::of(&pairs, &orig, &recon, space, b, xi);
            let (got, all) = Survey::search(&orig, &recon, space, b, xi, true);
            let order = got.order.clone().expect("the search surveys in grid order");
            assert_ne!(
                order,
                (0..n as u32).collect::<Vec<_>>(),
                "a test that reorders"
            );
            // In particle order: the same pairs, in the same order, oriented
            // i < j, and bit-identical radii.
            let to_particles = |p: &Pair| {
                let (i, j) = (order[p.i as usize], order[p.j as usize]);
                assert!(i < j, "oriented by particle index");
                Pair { i, j, ..*p }
            };
            assert_eq!(
                got.live.iter().map(to_particles).collect::<Vec<_>>(),
                of.live.to_vec(),
                "{space:?}"
            );
            assert_eq!(got.bad.iter().map(to_particles).collect::<Vec<_>>(), of.bad);
            let mut radius = vec![0.0; n];
            for (a, &k) in order.iter().enumerate() {
                radius[k as usize] = got.radius[a];
            }
            assert!(radius
                .iter()
                .zip(&of.radius)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            assert_eq!(all.unwrap(), pairs);
            assert!(
                !got.bad.is_empty() && got.live.len() < pairs.len(),
                "a test that filters"
            );
            assert!(Survey::search(&orig, &recon, space, b, xi, false)
                .1
                .is_none());
        }
    }

    #[test]
    fn securing_in_grid_order_gives_the_particle_order_outcome() {
        // Clustered enough that securing cascades; one exact particle, one
        // non-finite one (outside the grid: last in the survey's order).
        let mut seed = 9u64;
        let mut unit = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        let (n, l, b, xi) = (6000usize, 6.0f32, 0.3, 0.03);
        let mut orig: Vec<f32> = (0..3 * n).map(|_| unit() * l).collect();
        orig[9] = f32::NAN;
        let mut recon: Vec<f32> = orig
            .iter()
            .map(|&x| x + xi as f32 * (2.0 * unit() - 1.0))
            .collect();
        let mut exact = vec![false; n];
        exact[7] = true;
        recon[21..24].copy_from_slice(&orig[21..24]);
        recon[9] = orig[9];
        let opts = Options::default();
        for space in [Space::open(), Space::periodic(l as f64)] {
            let pairs = vulnerable::pairs(&orig, space, b, xi);
            let of = Survey::of(&pairs, &orig, &recon, space, b, xi);
            let (got, _) = Survey::search(&orig, &recon, space, b, xi, false);
            assert!(got.order.is_some());
            let a = correct_on(of, &orig, recon.clone(), exact.clone(), space, b, xi, &opts);
            let g = correct_on(
                got,
                &orig,
                recon.clone(),
                exact.clone(),
                space,
                b,
                xi,
                &opts,
            );
            assert!(
                a.stats.iterations > 1 && !a.edits.is_empty(),
                "a test that secures"
            );
            assert_eq!(g.edits, a.edits, "{space:?}");
            assert_eq!(g.exact, a.exact);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&g.recon), bits(&a.recon));
            assert_eq!(
                (
                    g.stats.vulnerable_pairs,
                    g.stats.violated_before,
                    g.stats.iterations
                ),
                (
                    a.stats.vulnerable_pairs,
                    a.stats.violated_before,
                    a.stats.iterations
                )
            );
        }
    }

    #[test]
    fn next_toward_steps_one_f32() {
        for &y in &[1.0f32, -1.0, 98.787704, -3.5e-30, f32::MIN_POSITIVE] {
            for dir in [1.0, -1.0] {
                let z = next_toward(y, dir);
                assert!((z > y) == (dir > 0.0) && z != y, "{y} {dir}");
                assert_eq!(z.to_bits().abs_diff(y.to_bits()), 1, "{y} {dir}");
            }
        }
        assert_eq!(next_toward(0.0, 1.0), f32::from_bits(1));
        assert_eq!(next_toward(-0.0, -1.0), -f32::from_bits(1));
    }

    #[test]
    fn radii_split_each_pairs_margin() {
        let orig = [
            0.0f32, 0.0, 0.0, 1.1, 0.0, 0.0, 5.0, 5.0, 5.0, 2.05, 0.0, 0.0,
        ];
        let pairs = [
            Pair {
                i: 0,
                j: 1,
                linked: false,
            },
            Pair {
                i: 1,
                j: 3,
                linked: true,
            },
        ];
        let r = radii(&orig, &pairs, Space::open(), 1.0);
        let near = |x: f64, want: f64| x < want && (x - want).abs() < 1e-9;
        assert!(near(r[0], (1.1f32 as f64 - 1.0) / 2.0));
        // particle 1's nearer pair to b sets its radius
        let d13 = 2.05f32 as f64 - 1.1f32 as f64;
        assert!(near(r[1], (1.0 - d13) / 2.0) && r[3] == r[1], "{r:?}");
        assert_eq!(r[2], f64::INFINITY, "no vulnerable pairs: no radius");
    }

    #[test]
    fn securing_lands_in_the_ball_editing_few_axes() {
        let (xi, m) = (1e-2, 16);
        let step = edit_step(xi, m);
        let orig = [10.0f32, 20.0, 30.0];
        let norm = |v: &[f32]| {
            (0..3)
                .map(|a| (v[a] as f64 - orig[a] as f64).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        // within the ball already: no edit
        let from = [10.004f32, 20.0, 30.0];
        assert_eq!(secure(&orig, &from, 5e-3, xi, step, m), Some([None; 3]));
        // long on x only: one edit, on x
        let from = [10.009f32, 20.001, 29.999];
        let c = secure(&orig, &from, 3e-3, xi, step, m).unwrap();
        assert!(c[0].is_some() && c[1].is_none() && c[2].is_none(), "{c:?}");
        // long on every axis: all three edited, into the ball
        let from = [10.009f32, 20.009, 29.991];
        for r in [3e-3, 1e-4, 1e-6] {
            let c = secure(&orig, &from, r, xi, step, m).unwrap();
            let mut v = from;
            for a in 0..3 {
                if let Some(code) = c[a] {
                    v[a] = apply_edit(from[a], code, step);
                }
            }
            assert!(norm(&v) <= r, "r {r}: {v:?}");
            assert!(v.iter().zip(&orig).all(|(&v, &o)| within(v, o, xi)));
        }
        // a 4-bit edit lattice (steps of 2.7e-3) has no code within 1e-9: exact
        assert_eq!(secure(&orig, &from, 1e-9, xi, edit_step(xi, 4), 4), None);
    }
}
