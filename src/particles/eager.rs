//! The safe method where the vulnerable window reaches distance 0 (bound above
//! about b / (2 sqrt 3)): nearly every close pair is one the base output can
//! change, a fifth of them are changed, and following changed pairs round by
//! round (`safe.rs`) means holding tens of millions of pairs and walking them
//! again each round. Here every particle outside its ball is secured at once,
//! as `safe.rs`'s last round does, from radii found in one pass over the pairs
//! with nothing stored; a second pass checks every pair whose status the
//! base's errors could change with the exact link rule (securing only shrinks
//! an error), and both particles of any pair still changed are stored exactly
//! until none is. It moves more particles than following the changed pairs
//! (a few % of ratio) for one pass instead of a dozen. Same stream as
//! `safe.rs` (edits and exact particles on the base; method `Safe`).

use super::correct::{edit_step, reset_exact, store_exact, Options, Outcome, Stats};
use super::geometry::{self, linked, Space};
use super::grid::{self, Grid, Wide};
use super::safe::{
    apply_secured, grid_order, in_particle_order, kept_edits, no_radii, padded_norms, radii_of,
    secure, LiveHits, LiveTest, Move,
};
use super::vulnerable;
use crate::real::Real;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// Whether `correct` is the one to run: the window `(b - w, b + w]` reaches
/// distance 0.
pub fn wide(b: f64, xi: f64) -> bool {
    geometry::vulnerable_halfwidth(b, xi) >= b
}

/// `safe::correct`'s contract (`recon` the base output, `exact` the particles
/// already stored exactly), every particle outside its ball secured at once.
#[allow(clippy::too_many_arguments)]
pub fn correct<T: Real>(
    orig: &[T],
    mut recon: Vec<T>,
    exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> Outcome<T> {
    let t0 = Instant::now();
    let n = orig.len() / 3;
    reset_exact(orig, &mut recon, &exact);
    let slack = geometry::rounding_slack(orig, space, b, xi);
    let (lo2, hi2) = vulnerable::window_of(b, geometry::halfwidth_with(b, xi, slack));
    // Everything in the grid's cell order (see `safe::Survey`), mapped back
    // at the end.
    let grid = Grid::build(orig, space, hi2.sqrt());
    let order = grid_order(&grid, n);
    let os = grid::gather(orig, &order);
    let mut rs = grid::gather(&recon, &order);
    let mut es: Vec<bool> = order.par_iter().map(|&k| exact[k as usize]).collect();
    drop(exact);
    let at = |v: &[T], a: usize| [v[3 * a], v[3 * a + 1], v[3 * a + 2]];
    // The base's error of each particle: every final error is at most it.
    let e = padded_norms(&os, &rs);
    // The grid's particles lead `order`.
    let held = &os[..3 * grid.order().len()];
    let live = Live {
        grid: &grid,
        held,
        wide: Wide::of(held),
        space,
        window: (lo2, hi2),
        b,
        slack,
        e: &e,
    };

    // Pass 1: radii; and, for the report, the live pairs and those the base
    // changed (counted, no pairs kept).
    let radius = no_radii(n);
    let (live_pairs, changed) = live.radii(&rs[..live.held.len()], &radius);
    let radius = radii_of(radius);
    let mut stats = Stats {
        vulnerable_pairs: live_pairs,
        violated_before: changed,
        iterations: 1,
        setup_s: t0.elapsed().as_secs_f64(),
        ..Stats::default()
    };

    // Every particle with a radius, secured.
    let t = Instant::now();
    let step = edit_step(xi, opts.edit_bits);
    let moves: Vec<Option<Move>> = (0..n)
        .into_par_iter()
        .map(|a| {
            (!es[a] && radius[a].is_finite()).then(|| {
                secure(
                    &at(&os, a),
                    &at(&rs, a),
                    radius[a],
                    xi,
                    step,
                    opts.edit_bits,
                )
            })
        })
        .collect();
    let mut codes: Vec<Option<i32>> = vec![None; 3 * n];
    for (a, m) in moves.iter().enumerate() {
        let Some(m) = m else { continue };
        stats.active_particles += 1;
        apply_secured(a, *m, step, &os, &mut rs, &mut es, &mut codes);
    }
    stats.optimise_s = t.elapsed().as_secs_f64();

    // Pass 2: the exact check, and exact storage until it passes.
    let t = Instant::now();
    let mut first = true;
    loop {
        let bad = live.changed(&rs[..live.held.len()]);
        if first {
            stats.violated_after = bad.len();
            first = false;
        }
        if bad.is_empty() {
            break;
        }
        for &(a, c) in &bad {
            for a in [a, c] {
                if store_exact(a, &os, &mut rs, &mut es) {
                    stats.fallback_particles += 1;
                }
            }
        }
    }
    let edits = kept_edits(&codes, &es);
    stats.edited_coords = edits.len();
    stats.check_s = t.elapsed().as_secs_f64();
    let out = Outcome {
        recon: rs,
        exact: es,
        edits,
        stats,
    };
    in_particle_order(out, &order, orig, recon, step)
}

/// The pairs the base's errors `e` can change (`safe::Survey::live`), found
/// afresh on each walk instead of stored, a row of the walk at a time.
struct Live<'a, T> {
    grid: &'a Grid,
    /// The grid's particles' originals, in grid order (AoS), and as
    /// [`Wide`] rows for the check (built once: the check may run again).
    held: &'a [T],
    wide: Wide,
    space: Space,
    window: (f64, f64),
    b: f64,
    /// [`geometry::rounding_slack`] of the originals.
    slack: f64,
    /// The base's error norms ([`padded_norms`]).
    e: &'a [f64],
}

impl<T: Real> Live<'_, T> {
    /// Lower `radius` over every live pair; the live pairs, and those whose
    /// status `recon` (the grid's particles, in grid order) changed.
    fn radii(&self, recon: &[T], radius: &[AtomicU64]) -> (usize, usize) {
        let b2 = self.b * self.b;
        // Per task: live and changed counts; a block's live hits. The changed
        // count (a report figure) takes the reconstruction's distance of the
        // live pairs only: a third of the walk's.
        type Sink = (usize, usize, LiveHits);
        let test = LiveTest {
            window: self.window,
            b: self.b,
            slack: self.slack,
        };
        let sinks = self
            .grid
            .fold_blocks(self.held, self.space, Sink::default, |s, block| {
                let (live, changed, scratch) = s;
                let hits = scratch.of(
                    &self.wide, self.held, self.space, self.e, block, &test, radius,
                );
                for (f, c, d2) in hits {
                    *live += 1;
                    let now = self
                        .space
                        .dist2(geometry::at(recon, f), geometry::at(recon, c));
                    *changed += usize::from(linked(now, b2) != linked(d2, b2));
                }
            });
        sinks.iter().fold((0, 0), |(l, c), s| (l + s.0, c + s.1))
    }

    /// The pairs of the walk (grid positions) whose status `recon` changed:
    /// every live pair, and the rest of the walk's, which cannot change but
    /// cost less to check than to tell apart. A row is looked at pair by pair
    /// only where its fused pass ([`Wide::may_flip`]) finds one that may have.
    fn changed(&self, recon: &[T]) -> Vec<(usize, usize)> {
        let b2 = self.b * self.b;
        let (wo, wr) = (&self.wide, Wide::of(recon));
        let quarter = self.space.period.map_or(f64::INFINITY, |l| 0.25 * l);
        let sinks = self.grid.fold_spans(
            self.held,
            self.space,
            Vec::new,
            |out: &mut Vec<(usize, usize)>, f, others, _, plain| {
                if plain && !wo.may_flip(&wr, f, others.clone(), b2, quarter) {
                    return;
                }
                let (o, r) = (geometry::at(self.held, f), geometry::at(recon, f));
                for c in others {
                    let was = self.space.dist2(o, geometry::at(self.held, c));
                    let now = self.space.dist2(r, geometry::at(recon, c));
                    if linked(was, b2) != linked(now, b2) {
                        out.push((f, c));
                    }
                }
            },
        );
        sinks.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::correct::apply_edit;
    use super::*;

    #[test]
    fn every_pair_keeps_its_status_by_brute_force() {
        let mut seed = 17u64;
        let mut unit = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        // Half the particles in two tight clumps: most pairs are vulnerable.
        let (n, l, b) = (1500usize, 5.0f32, 0.4);
        let mut orig: Vec<f32> = (0..3 * n)
            .map(|k| match k / 3 % 3 {
                0 => 1.0 + 0.8 * unit(),
                1 => 4.5 + 0.8 * unit() - 0.4,
                _ => unit() * l,
            })
            .collect();
        orig[12] = f32::NAN;
        for xi in [0.15, 0.4] {
            assert!(wide(b, xi));
            let mut recon: Vec<f32> = orig
                .iter()
                .map(|&x| x + xi as f32 * 0.999 * (2.0 * unit() - 1.0))
                .collect();
            // Particle 4 (NaN) exact, as `initial_exact` makes it; 5 as well.
            let mut exact = vec![false; n];
            exact[4] = true;
            exact[5] = true;
            recon[12] = orig[12];
            let opts = Options::default();
            for space in [Space::open(), Space::periodic(l as f64)] {
                let out = correct(&orig, recon.clone(), exact.clone(), space, b, xi, &opts);
                assert!(out.stats.violated_before > 0, "a test that corrects");
                assert!(out.exact[4] && out.exact[5]);
                // The edits rebuild what was checked.
                let step = edit_step(xi, opts.edit_bits);
                let mut rebuilt = recon.clone();
                for &(c, q) in &out.edits {
                    rebuilt[c as usize] = apply_edit(rebuilt[c as usize], q, step);
                }
                for k in (0..n).filter(|&k| out.exact[k]) {
                    rebuilt[3 * k..3 * k + 3].copy_from_slice(&orig[3 * k..3 * k + 3]);
                }
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&rebuilt), bits(&out.recon));
                for (k, (&o, &r)) in orig.iter().zip(&out.recon).enumerate() {
                    let (o, r) = (o as f64, r as f64);
                    assert!(o.is_nan() || (r - o).abs() <= xi, "coordinate {k}");
                }
                for i in 0..n {
                    for j in i + 1..n {
                        let at = |v: &[f32], k: usize| [v[3 * k], v[3 * k + 1], v[3 * k + 2]];
                        let was = linked(space.dist2(&at(&orig, i), &at(&orig, j)), b * b);
                        let now =
                            linked(space.dist2(&at(&out.recon, i), &at(&out.recon, j)), b * b);
                        assert_eq!(was, now, "pair {i} {j}, xi {xi}, {space:?}");
                    }
                }
            }
        }
    }
}
