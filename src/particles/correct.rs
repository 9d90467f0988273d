//! Link-preserving correction of a base compressor's output.
//!
//! 1. Vulnerable pairs of the original (see `vulnerable.rs`); every other pair is
//!    safe whatever the base did, as long as every coordinate is within the bound.
//! 2. If some vulnerable pair changed status, projected gradient descent with Adam
//!    moves the editable particles (in a vulnerable pair, not stored exactly) to
//!    minimise the tightened loss: a linked pair pays `relu(d - (b - 2 sqrt3 eps_q))^2`,
//!    an unlinked one `relu((b + 2 sqrt3 eps_q) - d)^2`, so quantizing the edits
//!    (error <= eps_q per coordinate) cannot undo the fix. Each particle stays in the
//!    box of half-width `xi (1 - 2^-m)` around its original. Work is confined to an
//!    active set that starts at the particles of violated pairs and grows along
//!    pairs the moves disturb.
//! 3. Edits are quantized to m bits over `[-2 xi, 2 xi]` (a base value is within xi
//!    of the original, the target too), each decoded value checked against the bound.
//! 4. Every vulnerable pair is re-checked on the decoded positions; both particles
//!    of a pair still violated are stored exactly, repeated until none is: the
//!    guarantee never rests on the optimiser converging.
//!
//! Determinism: each particle's gradient sums its pairs in a fixed order and every
//! reduction runs in index order, so the bytes never depend on the thread count.
//! The optimiser works in units of xi (gradients O(1) whatever the data's scale, so
//! Adam's eps and the learning rate mean the same thing on every data set).

use super::geometry::{linked, Space};
use super::vulnerable::{self, Pair};
use crate::field::quantize::within;
use rayon::prelude::*;
use std::time::Instant;

/// Optimiser settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Edit quantization bits m (2..=24).
    pub edit_bits: u32,
    /// Adam step size, in units of the absolute bound xi.
    pub learning_rate: f64,
    /// Iteration cap; particles still violated afterwards are stored exactly.
    pub max_iters: u32,
    /// Stop once the tightened loss (in xi^2 units) is at or below this.
    pub tolerance: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            edit_bits: 16,
            learning_rate: LEARNING_RATE,
            max_iters: 1000,
            tolerance: 0.0,
        }
    }
}

/// Default Adam step, in units of xi (the paper's 1e-3 is in the data's units, which
/// makes convergence depend on the data's scale; 0.1 xi measured best on datagen sets).
pub const LEARNING_RATE: f64 = 0.1;
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const ADAM_EPS: f64 = 1e-8;
/// The optimiser stops when the loss has not dropped below 99.9% of its best for
/// this many iterations: past that point the fallback is cheaper than waiting.
const STALL_ITERS: u32 = 100;
/// Work cap in pair-term evaluations per vulnerable pair (at least `MIN_WORK`):
/// bounds run time where the bound is comparable to b and nearly every pair is
/// vulnerable; what is left then is stored exactly.
const WORK_PER_PAIR: u64 = 300;
const MIN_WORK: u64 = 50_000_000;

/// Spacing of the m-bit edit lattice over [-2 xi, 2 xi].
pub fn edit_step(xi: f64, m: u32) -> f64 {
    4.0 * xi / ((1u64 << m) - 1) as f64
}

/// Smallest and largest edit code.
pub fn code_range(m: u32) -> (i32, i32) {
    (-(1i32 << (m - 1)), (1i32 << (m - 1)) - 1)
}

/// The decoded value of a coordinate edited by `code`. One formula for encoder and decoder.
#[inline]
pub fn apply_edit(base: f32, code: i32, step: f64) -> f32 {
    (base as f64 + (code as f64 + 0.5) * step) as f32
}

/// What a correction did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub vulnerable_pairs: usize,
    /// Vulnerable pairs whose status the base output changed.
    pub violated_before: usize,
    pub iterations: u32,
    /// Particles the optimiser moved.
    pub active_particles: usize,
    /// Pairs still violated after optimisation and edit quantization.
    pub violated_after: usize,
    /// Particles stored exactly by the deterministic fallback loop.
    pub fallback_particles: usize,
    pub edited_coords: usize,
    /// Seconds: vulnerable-pair search, optimisation, quantization and checks.
    pub setup_s: f64,
    pub optimise_s: f64,
    pub check_s: f64,
}

/// The corrected output.
pub struct Outcome {
    /// Decoded positions (AoS) exactly as the decoder will rebuild them.
    pub recon: Vec<f32>,
    /// Particles stored exactly.
    pub exact: Vec<bool>,
    /// Coordinate edits `(3 * particle + axis, code)`, ascending, never on exact particles.
    pub edits: Vec<(u64, i32)>,
    pub stats: Stats,
}

/// Optimise-and-fix rounds before the plain fallback loop: after the first, each
/// round stores the particles of still-violated pairs exactly and lets the optimiser
/// repair what that disturbed, instead of cascading exact storage.
const ROUNDS: u32 = 4;
/// Marks a coordinate without an edit in the per-coordinate code table.
const NO_EDIT: i32 = i32::MIN;

/// Correct `recon` (the base output, AoS) so every link of `orig` keeps its status.
/// Particles marked in `exact` are reset to their original values and never moved.
pub fn correct(
    orig: &[f32],
    mut recon: Vec<f32>,
    mut exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> Outcome {
    let t0 = Instant::now();
    let n = orig.len() / 3;
    for k in (0..n).filter(|&k| exact[k]) {
        recon[3 * k..3 * k + 3].copy_from_slice(&orig[3 * k..3 * k + 3]);
    }
    let base = recon.clone();
    let pairs = vulnerable::pairs(orig, space, b, xi);
    let adj = adjacency(n, &pairs);
    let mut stats = Stats {
        vulnerable_pairs: pairs.len(),
        ..Stats::default()
    };
    stats.setup_s = t0.elapsed().as_secs_f64();
    let mut codes = vec![NO_EDIT; 3 * n];
    let mut round = 0;
    loop {
        let t = Instant::now();
        let bad: Vec<Pair> = vulnerable::violated(&pairs, &recon, space, b)
            .copied()
            .collect();
        stats.check_s += t.elapsed().as_secs_f64();
        match round {
            0 => stats.violated_before = bad.len(),
            1 => stats.violated_after = bad.len(),
            _ => {}
        }
        if bad.is_empty() {
            break;
        }
        if round > 0 {
            for p in &bad {
                for k in [p.i as usize, p.j as usize] {
                    if !exact[k] {
                        exact[k] = true;
                        stats.fallback_particles += 1;
                        recon[3 * k..3 * k + 3].copy_from_slice(&orig[3 * k..3 * k + 3]);
                        codes[3 * k..3 * k + 3].fill(NO_EDIT);
                    }
                }
            }
        }
        if round < ROUNDS {
            let t = Instant::now();
            let moved = optimise(orig, &recon, &exact, &pairs, space, b, xi, opts, &mut stats);
            stats.optimise_s += t.elapsed().as_secs_f64();
            let t = Instant::now();
            quantize_edits(
                orig,
                &base,
                &mut recon,
                &mut exact,
                &mut codes,
                &moved,
                xi,
                opts.edit_bits,
            );
            prune(&base, &mut recon, &mut codes, &moved, &adj, space, b);
            stats.check_s += t.elapsed().as_secs_f64();
        }
        round += 1;
    }
    let edits: Vec<(u64, i32)> = codes
        .iter()
        .enumerate()
        .filter(|&(c, &q)| q != NO_EDIT && !exact[c / 3])
        .map(|(c, &q)| (c as u64, q))
        .collect();
    stats.edited_coords = edits.len();
    Outcome {
        recon,
        exact,
        edits,
        stats,
    }
}

/// Per-particle adjacency over the vulnerable pairs, in pair order.
struct Adjacency {
    start: Vec<usize>,
    /// (other particle, originally linked)
    nb: Vec<(u32, bool)>,
}

fn adjacency(n: usize, pairs: &[Pair]) -> Adjacency {
    adjacency_mapped(n, pairs, |k| k)
}

/// Adjacency over renumbered particles: `map` gives each particle's index in 0..n.
fn adjacency_mapped(n: usize, pairs: &[Pair], map: impl Fn(u32) -> u32) -> Adjacency {
    let mut start = vec![0usize; n + 1];
    for p in pairs {
        start[map(p.i) as usize + 1] += 1;
        start[map(p.j) as usize + 1] += 1;
    }
    for k in 0..n {
        start[k + 1] += start[k];
    }
    let mut fill = start.clone();
    let mut nb = vec![(0u32, false); start[n]];
    for p in pairs {
        let (i, j) = (map(p.i), map(p.j));
        nb[fill[i as usize]] = (j, p.linked);
        fill[i as usize] += 1;
        nb[fill[j as usize]] = (i, p.linked);
        fill[j as usize] += 1;
    }
    Adjacency { start, nb }
}

/// Adam moment state of one active particle.
#[derive(Clone, Copy, Default)]
struct Adam {
    m: [f64; 3],
    v: [f64; 3],
    t: i32,
}

/// Run the optimiser; returns the active particles with their target coordinates
/// (f64; NaN where a coordinate did not move).
#[allow(clippy::too_many_arguments)]
fn optimise(
    orig: &[f32],
    recon: &[f32],
    exact: &[bool],
    pairs: &[Pair],
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
    stats: &mut Stats,
) -> Vec<(u32, [f64; 3])> {
    let n = orig.len() / 3;
    let m = opts.edit_bits;
    // Work on the vulnerable particles renumbered in order of first appearance in
    // the pair list (grid order), so neighbours sit close in memory: the loop is
    // bound by fetching neighbours' positions.
    let mut loc = vec![u32::MAX; n];
    let mut glob: Vec<u32> = Vec::new();
    for p in pairs {
        for k in [p.i, p.j] {
            if loc[k as usize] == u32::MAX {
                loc[k as usize] = glob.len() as u32;
                glob.push(k);
            }
        }
    }
    let nl = glob.len();
    let adj = adjacency_mapped(nl, pairs, |k| loc[k as usize]);
    // A decoded coordinate lands within eps_q (edit quantization) plus half an f32
    // ulp (the final rounding) of the optimiser's target; both in units of xi.
    let max_abs = orig
        .iter()
        .filter(|c| c.is_finite())
        .fold(0f32, |a, &c| a.max(c.abs()));
    let half_ulp = (f32::from_bits(max_abs.to_bits() + 1) - max_abs) as f64 / 2.0;
    let eps_q = 2.0 / ((1u64 << m) - 1) as f64 + half_ulp / xi;
    let margin = 2.0 * 3f64.sqrt() * eps_q;
    // Targets stay this far inside the bound, so their quantized values stay within it
    // (the 2^-m of the paper's box is smaller than eps_q; this keeps the bound).
    let half = 1.0 - 2.0 * eps_q;
    let (t_link, t_free) = ((b / xi - margin).max(0.0), b / xi + margin);
    // Working positions in units of xi, local numbering.
    let mut pos: Vec<f64> = glob
        .iter()
        .flat_map(|&g| {
            recon[3 * g as usize..3 * g as usize + 3]
                .iter()
                .map(|&c| c as f64 / xi)
        })
        .collect();
    // The optimiser only steers; the exact link rule decides afterwards. Positions
    // stay within the box +- 2 xi, so one conditional wrap is the minimum image.
    let period = space.period.map(|l| l / xi);
    let delta = |a: f64, b: f64| -> f64 {
        let d = a - b;
        match period {
            Some(l) if d > 0.5 * l => d - l,
            Some(l) if d < -0.5 * l => d + l,
            _ => d,
        }
    };
    // Loss term of pair (k, q) and its gradient with respect to k.
    let term = |pos: &[f64], k: usize, q: usize, linked: bool| -> (f64, [f64; 3]) {
        let d3 = [0, 1, 2].map(|a| delta(pos[3 * k + a], pos[3 * q + a]));
        let d = (d3[0] * d3[0] + d3[1] * d3[1] + d3[2] * d3[2]).sqrt();
        let r = if linked { d - t_link } else { t_free - d };
        if r <= 0.0 || d == 0.0 || !d.is_finite() {
            return (0.0, [0.0; 3]);
        }
        let s = if linked { 2.0 * r / d } else { -2.0 * r / d };
        (r * r, d3.map(|c| s * c))
    };
    let editable = |k: usize| !exact[glob[k] as usize];
    let mut slot = vec![u32::MAX; nl];
    let mut active: Vec<u32> = Vec::new();
    let add = |k: u32, active: &mut Vec<u32>, slot: &mut Vec<u32>| {
        if slot[k as usize] == u32::MAX && editable(k as usize) {
            slot[k as usize] = active.len() as u32;
            active.push(k);
        }
    };
    for p in vulnerable::violated(pairs, recon, space, b) {
        add(loc[p.i as usize], &mut active, &mut slot);
        add(loc[p.j as usize], &mut active, &mut slot);
    }
    let mut adam: Vec<Adam> = vec![Adam::default(); active.len()];
    let lr = opts.learning_rate;
    let (mut best, mut best_at) = (f64::INFINITY, 0);
    let budget = WORK_PER_PAIR
        .saturating_mul(pairs.len() as u64)
        .max(MIN_WORK);
    let mut work = 0u64;
    for it in 0..opts.max_iters {
        work += active
            .iter()
            .map(|&k| (adj.start[k as usize + 1] - adj.start[k as usize]) as u64)
            .sum::<u64>();
        // Gradients, losses, and disturbed neighbours, per active particle in order.
        let per: Vec<(f64, [f64; 3], Vec<u32>)> = active
            .par_iter()
            .map(|&k| {
                let k = k as usize;
                let (mut loss, mut g) = (0.0, [0.0; 3]);
                let mut grow = Vec::new();
                for &(q, linked) in &adj.nb[adj.start[k]..adj.start[k + 1]] {
                    let (l, gk) = term(&pos, k, q as usize, linked);
                    if l > 0.0 {
                        loss += l;
                        g = [g[0] + gk[0], g[1] + gk[1], g[2] + gk[2]];
                        if slot[q as usize] == u32::MAX {
                            grow.push(q);
                        }
                    }
                }
                (loss, g, grow)
            })
            .collect();
        let loss: f64 = per.iter().map(|p| p.0).sum::<f64>() / 2.0;
        if loss <= opts.tolerance {
            break;
        }
        if loss < 0.999 * best {
            (best, best_at) = (loss, it);
        } else if it - best_at >= STALL_ITERS {
            break;
        }
        if work > budget {
            break;
        }
        stats.iterations += 1;
        let steps: Vec<[f64; 3]> = per
            .par_iter()
            .zip(adam.par_iter_mut())
            .zip(active.par_iter())
            .map(|((p, st), &k)| {
                let k = k as usize;
                st.t += 1;
                let (c1, c2) = (1.0 - BETA1.powi(st.t), 1.0 - BETA2.powi(st.t));
                [0, 1, 2].map(|a| {
                    let g = p.1[a];
                    st.m[a] = BETA1 * st.m[a] + (1.0 - BETA1) * g;
                    st.v[a] = BETA2 * st.v[a] + (1.0 - BETA2) * g * g;
                    let step = lr * (st.m[a] / c1) / ((st.v[a] / c2).sqrt() + ADAM_EPS);
                    let o = orig[3 * glob[k] as usize + a] as f64 / xi;
                    (pos[3 * k + a] - step).clamp(o - half, o + half)
                })
            })
            .collect();
        for (&k, s) in active.iter().zip(&steps) {
            pos[3 * k as usize..3 * k as usize + 3].copy_from_slice(s);
        }
        let mut grown: Vec<u32> = per.into_iter().flat_map(|p| p.2).collect();
        grown.sort_unstable();
        grown.dedup();
        for q in grown {
            add(q, &mut active, &mut slot);
        }
        adam.resize(active.len(), Adam::default());
    }
    stats.active_particles += active.len();
    active
        .iter()
        .map(|&k| {
            let k = k as usize;
            // NaN marks a coordinate the optimiser left where it started.
            let g = glob[k] as usize;
            let start = |a: usize| recon[3 * g + a] as f64 / xi;
            (
                g as u32,
                [0, 1, 2].map(|a| {
                    if pos[3 * k + a] == start(a) {
                        f64::NAN
                    } else {
                        pos[3 * k + a] * xi
                    }
                }),
            )
        })
        .collect()
}

/// Quantize the optimiser's moves into m-bit edits of the base values, recorded in
/// `codes` and applied to `recon`; a coordinate whose edit cannot land within the
/// bound puts its particle in `exact`.
#[allow(clippy::too_many_arguments)]
fn quantize_edits(
    orig: &[f32],
    base: &[f32],
    recon: &mut [f32],
    exact: &mut [bool],
    codes: &mut [i32],
    moved: &[(u32, [f64; 3])],
    xi: f64,
    m: u32,
) {
    let step = edit_step(xi, m);
    let (lo, hi) = code_range(m);
    let code_for = |from: f32, target: f64| -> i32 {
        let c = ((target - from as f64) / step - 0.5).round();
        c.clamp(lo as f64, hi as f64) as i32
    };
    for &(k, target) in moved {
        let k = k as usize;
        let mut mine = [(NO_EDIT, 0f32); 3];
        let mut ok = true;
        for a in 0..3 {
            let (x, from) = (orig[3 * k + a], base[3 * k + a]);
            if target[a].is_nan() {
                mine[a] = (codes[3 * k + a], recon[3 * k + a]);
                continue;
            }
            let mut code = code_for(from, target[a]);
            let mut v = apply_edit(from, code, step);
            // Out of bound only by rounding at the box's edge: step back toward x.
            let toward = if (x as f64) < v as f64 { -1 } else { 1 };
            for _ in 0..2 {
                if v.is_finite() && within(v, x, xi) {
                    break;
                }
                code = (code + toward).clamp(lo, hi);
                v = apply_edit(from, code, step);
            }
            if !(v.is_finite() && within(v, x, xi)) {
                ok = false;
                break;
            }
            mine[a] = if v.to_bits() == from.to_bits() {
                (NO_EDIT, from)
            } else {
                (code, v)
            };
        }
        if !ok {
            exact[k] = true;
            recon[3 * k..3 * k + 3].copy_from_slice(&orig[3 * k..3 * k + 3]);
            codes[3 * k..3 * k + 3].fill(NO_EDIT);
            continue;
        }
        for (a, (code, v)) in mine.into_iter().enumerate() {
            recon[3 * k + a] = v;
            codes[3 * k + a] = code;
        }
    }
}

/// Undo edits that no pair needs: each edited particle in turn goes back to its base
/// position (or, failing that, single coordinates do) when every vulnerable pair it
/// is in keeps its original status there. The optimiser moves whole neighbourhoods;
/// this keeps only the moves that matter, which halves the edit stream. (Shrinking
/// the kept edits toward the base was tried: it leaves pairs at the threshold,
/// blocks later reverts, and grows the stream.)
fn prune(
    base: &[f32],
    recon: &mut [f32],
    codes: &mut [i32],
    moved: &[(u32, [f64; 3])],
    adj: &Adjacency,
    space: Space,
    b: f64,
) {
    let b2 = b * b;
    let keeps = |recon: &[f32], k: usize, at: &[f32; 3]| {
        adj.nb[adj.start[k]..adj.start[k + 1]]
            .iter()
            .all(|&(q, was)| {
                let q = q as usize;
                linked(space.dist2(at, &recon[3 * q..3 * q + 3]), b2) == was
            })
    };
    for &(k, _) in moved {
        let k = k as usize;
        if codes[3 * k..3 * k + 3].iter().all(|&c| c == NO_EDIT) {
            continue;
        }
        let home = [base[3 * k], base[3 * k + 1], base[3 * k + 2]];
        if keeps(recon, k, &home) {
            recon[3 * k..3 * k + 3].copy_from_slice(&home);
            codes[3 * k..3 * k + 3].fill(NO_EDIT);
            continue;
        }
        for a in 0..3 {
            let c = 3 * k + a;
            if codes[c] == NO_EDIT {
                continue;
            }
            let mut at = [recon[3 * k], recon[3 * k + 1], recon[3 * k + 2]];
            at[a] = base[c];
            if keeps(recon, k, &at) {
                recon[c] = base[c];
                codes[c] = NO_EDIT;
                continue;
            }
        }
    }
}
