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
use crate::bound::within;
use crate::real::Real;
use rayon::prelude::*;
use std::time::Instant;

/// How the particles of vulnerable pairs are fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Per set (chunk): safe, and also the optimiser where the base changed few
    /// pairs, keeping the smaller stream (`super::method`).
    #[default]
    Auto,
    /// The optimiser: edits only where the base changed a link.
    Correct,
    /// Per-particle safe radii, a few passes, no optimiser (`super::safe`).
    Safe,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Correct => "correct",
            Method::Safe => "safe",
        }
    }
    pub fn parse(s: &str) -> Option<Method> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Some(Method::Auto),
            "correct" => Some(Method::Correct),
            "safe" => Some(Method::Safe),
            _ => None,
        }
    }
    /// The id a stream records for the method that made it (header `params[3]`
    /// of base-mode streams; never renumber). Auto records what it chose.
    pub fn id(self) -> u32 {
        match self {
            Method::Auto | Method::Correct => 0,
            Method::Safe => 1,
        }
    }
    /// Inverse of [`Method::id`].
    pub fn from_id(id: u32) -> Option<Method> {
        match id {
            0 => Some(Method::Correct),
            1 => Some(Method::Safe),
            _ => None,
        }
    }
}

/// Correction settings (the optimiser's, and which method runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub method: Method,
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
            method: Method::Auto,
            edit_bits: 16,
            learning_rate: LEARNING_RATE,
            max_iters: 1000,
            tolerance: 0.0,
        }
    }
}

/// Default Adam step, in units of xi (the paper's 1e-3 is in the data's units, which
/// makes convergence depend on the data's scale; 0.1 xi measured best on generated clustered sets).
pub const LEARNING_RATE: f64 = 0.1;
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

/// The decoded value of a coordinate edited by `code`. One formula for encoder
/// and decoder: the sum in f64, rounded once to the coordinate's type.
#[inline]
pub fn apply_edit<T: Real>(base: T, code: i32, step: f64) -> T {
    T::from_f64(base.to_f64() + (code as f64 + 0.5) * step)
}

/// What a correction did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Pairs the method looked at: every vulnerable pair (correct), or those
    /// the base's errors can change (safe).
    pub vulnerable_pairs: usize,
    /// Vulnerable pairs whose status the base output changed.
    pub violated_before: usize,
    /// Optimiser iterations (correct), rounds of securing (safe).
    pub iterations: u32,
    /// Particles the optimiser moved, or safe secured.
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
pub struct Outcome<T = f32> {
    /// Decoded positions (AoS) exactly as the decoder will rebuild them.
    pub recon: Vec<T>,
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
/// `corrector` runs the pair search and the optimiser ([`Cpu`], or the GPU's);
/// only it can fail.
#[allow(clippy::too_many_arguments)]
pub fn correct<T: Real>(
    corrector: &dyn Corrector<T>,
    orig: &[T],
    recon: Vec<T>,
    exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> crate::error::Result<Outcome<T>> {
    let t0 = Instant::now();
    let pairs = corrector.pairs(orig, space, b, xi)?;
    let found = t0.elapsed().as_secs_f64();
    let mut out = correct_on(corrector, &pairs, orig, recon, exact, space, b, xi, opts)?;
    out.stats.setup_s += found;
    Ok(out)
}

/// [`correct`] on the vulnerable pairs already found.
#[allow(clippy::too_many_arguments)]
pub fn correct_on<T: Real>(
    corrector: &dyn Corrector<T>,
    pairs: &[Pair],
    orig: &[T],
    mut recon: Vec<T>,
    mut exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> crate::error::Result<Outcome<T>> {
    let t0 = Instant::now();
    let n = orig.len() / 3;
    reset_exact(orig, &mut recon, &exact);
    let base = recon.clone();
    let adj = adjacency(n, pairs);
    let mut stats = Stats {
        vulnerable_pairs: pairs.len(),
        ..Stats::default()
    };
    stats.setup_s = t0.elapsed().as_secs_f64();
    let mut codes = vec![NO_EDIT; 3 * n];
    let mut round = 0;
    loop {
        let t = Instant::now();
        let bad = vulnerable::violated(pairs, &recon, space, b);
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
                    if store_exact(k, orig, &mut recon, &mut exact) {
                        stats.fallback_particles += 1;
                        codes[3 * k..3 * k + 3].fill(NO_EDIT);
                    }
                }
            }
        }
        if round < ROUNDS {
            let t = Instant::now();
            let moved = optimise(
                corrector, orig, &recon, &exact, pairs, space, b, xi, opts, &mut stats,
            )?;
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
    Ok(Outcome {
        recon,
        exact,
        edits,
        stats,
    })
}

/// Decoded positions of the particles already stored exactly: their originals.
pub(crate) fn reset_exact<T: Real>(orig: &[T], recon: &mut [T], exact: &[bool]) {
    recon
        .par_chunks_mut(3)
        .zip(orig.par_chunks(3))
        .zip(exact)
        .filter(|(_, &e)| e)
        .for_each(|((r, o), _)| r.copy_from_slice(o));
}

/// Store particle k exactly (its decoded position becomes its original);
/// whether it was not stored exactly before.
pub(crate) fn store_exact<T: Real>(
    k: usize,
    orig: &[T],
    recon: &mut [T],
    exact: &mut [bool],
) -> bool {
    recon[3 * k..3 * k + 3].copy_from_slice(&orig[3 * k..3 * k + 3]);
    !std::mem::replace(&mut exact[k], true)
}

/// Per-particle adjacency over the vulnerable pairs, in pair order (CSR).
pub struct Adjacency {
    /// Particle k's pairs are `start[k] .. start[k + 1]`.
    pub start: Vec<usize>,
    /// The other particle of each pair.
    pub nb: Vec<u32>,
    /// Whether that pair is linked in the original.
    pub linked: Vec<bool>,
}

impl Adjacency {
    pub fn of(&self, k: usize) -> impl Iterator<Item = (u32, bool)> + '_ {
        let r = self.start[k]..self.start[k + 1];
        self.nb[r.clone()]
            .iter()
            .copied()
            .zip(self.linked[r].iter().copied())
    }

    pub fn degree(&self, k: usize) -> u64 {
        (self.start[k + 1] - self.start[k]) as u64
    }
}

pub fn adjacency(n: usize, pairs: &[Pair]) -> Adjacency {
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
    let mut nb = vec![0u32; start[n]];
    let mut linked = vec![false; start[n]];
    for p in pairs {
        let (i, j) = (map(p.i), map(p.j));
        for (a, b) in [(i, j), (j, i)] {
            nb[fill[a as usize]] = b;
            linked[fill[a as usize]] = p.linked;
            fill[a as usize] += 1;
        }
    }
    Adjacency { start, nb, linked }
}

/// The optimiser's input, in units of xi over the vulnerable particles
/// renumbered in order of first appearance in the pair list (grid order, so
/// neighbours sit close in memory: the loop is bound by fetching their
/// positions). The CPU's [`descend`] and the GPU's (`gpu::descent`) start here.
pub struct Problem {
    /// Local particle k is particle `glob[k]`.
    pub glob: Vec<u32>,
    pub adj: Adjacency,
    /// Starting positions (the current decoded ones), 3 per local particle.
    pub pos: Vec<f64>,
    /// Original positions, 3 per local particle: each target stays within
    /// `half` of them.
    pub orig: Vec<f64>,
    pub half: f64,
    /// Loss thresholds: a linked pair pays beyond `t_link`, an unlinked one below `t_free`.
    pub t_link: f64,
    pub t_free: f64,
    /// Box period, in units of xi.
    pub period: Option<f64>,
    /// Not stored exactly: the optimiser may move it.
    pub editable: Vec<bool>,
    /// The first active set: editable particles of violated pairs, in pair order.
    pub active: Vec<u32>,
    /// Work cap in pair-term evaluations.
    pub budget: u64,
}

impl Problem {
    /// The problem `correct` hands its descent: `recon` the current decoded
    /// positions, `pairs` the vulnerable pairs of `orig` (`vulnerable::pairs`),
    /// `m` the edit bits.
    #[allow(clippy::too_many_arguments)]
    pub fn new<T: Real>(
        orig: &[T],
        recon: &[T],
        exact: &[bool],
        pairs: &[Pair],
        space: Space,
        b: f64,
        xi: f64,
        m: u32,
    ) -> Problem {
        let n = orig.len() / 3;
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
        let adj = adjacency_mapped(glob.len(), pairs, |k| loc[k as usize]);
        // A decoded coordinate lands within eps_q (edit quantization) plus half an
        // ulp of T (the final rounding: 2^-24 or 2^-53 of the largest magnitude)
        // of the optimiser's target; both in units of xi. These margins only
        // steer the optimiser: every vulnerable pair is re-checked with the
        // link rule on the decoded values afterwards (`correct_on`).
        let max_abs = orig
            .iter()
            .filter(|c| c.is_finite())
            .fold(0f64, |a, &c| a.max(c.to_f64().abs()));
        // (The largest |coordinate| is a T itself, so this is exact.)
        let top = T::from_f64(max_abs);
        let half_ulp = (top.next_toward(1.0).to_f64() - max_abs) / 2.0;
        let eps_q = 2.0 / ((1u64 << m) - 1) as f64 + half_ulp / xi;
        let margin = 2.0 * 3f64.sqrt() * eps_q;
        let scaled = |v: &[T]| -> Vec<f64> {
            glob.iter()
                .flat_map(|&g| {
                    v[3 * g as usize..3 * g as usize + 3]
                        .iter()
                        .map(|&c| c.to_f64() / xi)
                })
                .collect()
        };
        let editable: Vec<bool> = glob.iter().map(|&g| !exact[g as usize]).collect();
        let mut active = Vec::new();
        let mut seen = vec![false; glob.len()];
        for p in &vulnerable::violated(pairs, recon, space, b) {
            for k in [loc[p.i as usize], loc[p.j as usize]] {
                if !seen[k as usize] && editable[k as usize] {
                    seen[k as usize] = true;
                    active.push(k);
                }
            }
        }
        Problem {
            pos: scaled(recon),
            orig: scaled(orig),
            // Targets stay this far inside the bound, so their quantized values stay
            // within it (the 2^-m of the paper's box is smaller than eps_q). At 2 edit
            // bits eps_q is 2/3: no room, targets stay on the originals.
            half: (1.0 - 2.0 * eps_q).max(0.0),
            t_link: (b / xi - margin).max(0.0),
            t_free: b / xi + margin,
            period: space.period.map(|l| l / xi),
            editable,
            active,
            budget: WORK_PER_PAIR
                .saturating_mul(pairs.len() as u64)
                .max(MIN_WORK),
            glob,
            adj,
        }
    }

    /// Coordinate difference a - b; positions stay within the box +- 2 xi, so
    /// one conditional wrap is the minimum image. (The optimiser only steers;
    /// the exact link rule decides afterwards.)
    #[inline]
    fn delta(&self, a: f64, b: f64) -> f64 {
        let d = a - b;
        match self.period {
            Some(l) if d > 0.5 * l => d - l,
            Some(l) if d < -0.5 * l => d + l,
            _ => d,
        }
    }

    /// Loss of pair (k, q) and its gradient with respect to k.
    #[inline]
    fn term(&self, pos: &[f64], k: usize, q: usize, linked: bool) -> (f64, [f64; 3]) {
        let d3 = [0, 1, 2].map(|a| self.delta(pos[3 * k + a], pos[3 * q + a]));
        let d = (d3[0] * d3[0] + d3[1] * d3[1] + d3[2] * d3[2]).sqrt();
        let r = if linked {
            d - self.t_link
        } else {
            self.t_free - d
        };
        if r <= 0.0 || d == 0.0 || !d.is_finite() {
            return (0.0, [0.0; 3]);
        }
        let s = if linked { 2.0 * r / d } else { -2.0 * r / d };
        (r * r, d3.map(|c| s * c))
    }
}

/// The summation order of the optimiser's loss, shared with the GPU's
/// `factz_p_loss_sum` (kernels/particles.cu): blocks of `LOSS_BLOCK`
/// per-particle losses, each summed by a halving tree (`s[t] += s[t + h]`,
/// h = 128, 64, .., 1, missing entries 0), then the block sums in order
/// ([`sum_blocks`]). The loss decides when the optimiser stops, so its bits
/// decide the stream's.
pub const LOSS_BLOCK: usize = 256;

pub fn block_sum(v: &[f64]) -> f64 {
    let mut s = [0.0; LOSS_BLOCK];
    s[..v.len()].copy_from_slice(v);
    let mut h = LOSS_BLOCK / 2;
    while h > 0 {
        for t in 0..h {
            s[t] += s[t + h];
        }
        h /= 2;
    }
    s[0]
}

pub fn sum_blocks(sums: impl IntoIterator<Item = f64>) -> f64 {
    sums.into_iter().fold(0.0, |a, x| a + x)
}

/// When the optimiser stops: the loss at or below the tolerance, no 0.1% gain
/// on the best loss for `STALL_ITERS` iterations, or the work cap passed. One
/// rule for the CPU's and the GPU's loops.
pub struct Stopping {
    best: f64,
    best_at: u32,
    work: u64,
    budget: u64,
    tolerance: f64,
}

impl Stopping {
    pub fn new(p: &Problem, opts: &Options) -> Stopping {
        Stopping {
            best: f64::INFINITY,
            best_at: 0,
            work: 0,
            budget: p.budget,
            tolerance: opts.tolerance,
        }
    }

    /// Iteration `it` costs `work` pair terms and measured `loss`: stop before its step?
    pub fn stop(&mut self, it: u32, loss: f64, work: u64) -> bool {
        self.work += work;
        if loss <= self.tolerance {
            return true;
        }
        if loss < 0.999 * self.best {
            (self.best, self.best_at) = (loss, it);
        } else if it - self.best_at >= STALL_ITERS {
            return true;
        }
        self.work > self.budget
    }
}

/// Adam's constants, shared with the GPU (FZP_BETA1 .. in kernels/particles.cu).
pub const BETA1: f64 = 0.9;
pub const BETA2: f64 = 0.999;
pub const ADAM_EPS: f64 = 1e-8;

/// One Adam step of one coordinate: moments `m`, `v` and the bias corrections
/// `c1 = 1 - beta1^t`, `c2 = 1 - beta2^t`; returns the clamped new position.
#[inline]
#[allow(clippy::too_many_arguments)]
fn adam_step(
    m: &mut f64,
    v: &mut f64,
    g: f64,
    c1: f64,
    c2: f64,
    lr: f64,
    x: f64,
    o: f64,
    half: f64,
) -> f64 {
    *m = BETA1 * *m + (1.0 - BETA1) * g;
    *v = BETA2 * *v + (1.0 - BETA2) * g * g;
    let step = lr * (*m / c1) / ((*v / c2).sqrt() + ADAM_EPS);
    (x - step).clamp(o - half, o + half)
}

/// Adam moment state of one active particle; `p` holds beta1^t and beta2^t,
/// kept as running products (the GPU's too: `powi` has no fixed rounding).
#[derive(Clone, Copy)]
struct Adam {
    m: [f64; 3],
    v: [f64; 3],
    p: [f64; 2],
}

impl Default for Adam {
    fn default() -> Self {
        Adam {
            m: [0.0; 3],
            v: [0.0; 3],
            p: [1.0; 2],
        }
    }
}

/// What a descent leaves: the active set (local numbering, in activation
/// order), the final positions (units of xi, 3 per local particle) and the
/// iterations run.
pub struct Descended {
    pub active: Vec<u32>,
    pub pos: Vec<f64>,
    pub iterations: u32,
}

/// Who runs the correction's two heavy parts: the vulnerable-pair search and
/// the optimiser. [`Cpu`] here; the GPU's is `gpu::particles::GpuCorrection`.
/// Both must give the CPU's results exactly (the stream depends on them).
pub trait Corrector<T: Real = f32> {
    /// `vulnerable::pairs`, in its order.
    fn pairs(&self, orig: &[T], space: Space, b: f64, xi: f64) -> crate::error::Result<Vec<Pair>>;
    /// [`descend`].
    fn descend(&self, p: &Problem, opts: &Options) -> crate::error::Result<Descended>;
    /// What the safe method needs of the pairs ([`super::safe::Survey`]), and
    /// with `full` every vulnerable pair too ([`Corrector::pairs`]); by
    /// default from [`Corrector::pairs`].
    fn survey(
        &self,
        orig: &[T],
        recon: &[T],
        space: Space,
        b: f64,
        xi: f64,
        full: bool,
    ) -> crate::error::Result<(super::safe::Survey<T>, Option<Vec<Pair>>)> {
        let pairs = self.pairs(orig, space, b, xi)?;
        let s = super::safe::Survey::of(&pairs, orig, recon, space, b, xi);
        Ok((s, full.then_some(pairs)))
    }
}

/// The reference (rayon).
pub struct Cpu;

/// Any element type: the reference runs the one generic code path.
impl<T: Real> Corrector<T> for Cpu {
    fn pairs(&self, orig: &[T], space: Space, b: f64, xi: f64) -> crate::error::Result<Vec<Pair>> {
        Ok(vulnerable::pairs(orig, space, b, xi))
    }

    fn descend(&self, p: &Problem, opts: &Options) -> crate::error::Result<Descended> {
        Ok(descend(p, opts))
    }

    fn survey(
        &self,
        orig: &[T],
        recon: &[T],
        space: Space,
        b: f64,
        xi: f64,
        full: bool,
    ) -> crate::error::Result<(super::safe::Survey<T>, Option<Vec<Pair>>)> {
        Ok(super::safe::Survey::search(orig, recon, space, b, xi, full))
    }
}

/// Projected gradient descent with Adam. Each iteration: per active particle,
/// its loss and gradient over its pairs in adjacency order, and the neighbours
/// its violated pairs disturb; the loss ([`block_sum`] order) decides whether
/// to stop ([`Stopping`]); then every active particle steps; then the disturbed
/// editable neighbours join the active set in ascending local index.
pub fn descend(p: &Problem, opts: &Options) -> Descended {
    let nl = p.glob.len();
    let mut pos = p.pos.clone();
    let mut slot = vec![u32::MAX; nl];
    let mut active: Vec<u32> = Vec::new();
    for &k in &p.active {
        slot[k as usize] = active.len() as u32;
        active.push(k);
    }
    let mut adam: Vec<Adam> = vec![Adam::default(); active.len()];
    let mut stopping = Stopping::new(p, opts);
    let mut iterations = 0;
    for it in 0..opts.max_iters {
        let work = active.iter().map(|&k| p.adj.degree(k as usize)).sum();
        let per: Vec<(f64, [f64; 3], Vec<u32>)> = active
            .par_iter()
            .map(|&k| {
                let k = k as usize;
                let (mut loss, mut g) = (0.0, [0.0; 3]);
                let mut grow = Vec::new();
                for (q, linked) in p.adj.of(k) {
                    let (l, gk) = p.term(&pos, k, q as usize, linked);
                    if l > 0.0 {
                        loss += l;
                        g = [g[0] + gk[0], g[1] + gk[1], g[2] + gk[2]];
                        if slot[q as usize] == u32::MAX && p.editable[q as usize] {
                            grow.push(q);
                        }
                    }
                }
                (loss, g, grow)
            })
            .collect();
        let losses: Vec<f64> = per.iter().map(|e| e.0).collect();
        let loss = sum_blocks(losses.chunks(LOSS_BLOCK).map(block_sum)) / 2.0;
        if stopping.stop(it, loss, work) {
            break;
        }
        iterations += 1;
        let steps: Vec<[f64; 3]> = per
            .par_iter()
            .zip(adam.par_iter_mut())
            .zip(active.par_iter())
            .map(|((e, st), &k)| {
                let k = k as usize;
                st.p = [st.p[0] * BETA1, st.p[1] * BETA2];
                let (c1, c2) = (1.0 - st.p[0], 1.0 - st.p[1]);
                [0, 1, 2].map(|a| {
                    let (m, v) = (&mut st.m[a], &mut st.v[a]);
                    adam_step(
                        m,
                        v,
                        e.1[a],
                        c1,
                        c2,
                        opts.learning_rate,
                        pos[3 * k + a],
                        p.orig[3 * k + a],
                        p.half,
                    )
                })
            })
            .collect();
        for (&k, s) in active.iter().zip(&steps) {
            pos[3 * k as usize..3 * k as usize + 3].copy_from_slice(s);
        }
        let mut grown: Vec<u32> = per.into_iter().flat_map(|e| e.2).collect();
        grown.sort_unstable();
        grown.dedup();
        for q in grown {
            slot[q as usize] = active.len() as u32;
            active.push(q);
        }
        adam.resize(active.len(), Adam::default());
    }
    Descended {
        active,
        pos,
        iterations,
    }
}

/// Run the optimiser; returns the active particles with their target coordinates
/// (f64; NaN where a coordinate did not move).
#[allow(clippy::too_many_arguments)]
fn optimise<T: Real>(
    corrector: &dyn Corrector<T>,
    orig: &[T],
    recon: &[T],
    exact: &[bool],
    pairs: &[Pair],
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
    stats: &mut Stats,
) -> crate::error::Result<Vec<(u32, [f64; 3])>> {
    let p = Problem::new(orig, recon, exact, pairs, space, b, xi, opts.edit_bits);
    let d = corrector.descend(&p, opts)?;
    stats.iterations += d.iterations;
    stats.active_particles += d.active.len();
    Ok(d.active
        .iter()
        .map(|&k| {
            let k = k as usize;
            // NaN marks a coordinate the optimiser left where it started.
            [0, 1, 2].map(|a| {
                if d.pos[3 * k + a] == p.pos[3 * k + a] {
                    f64::NAN
                } else {
                    d.pos[3 * k + a] * xi
                }
            })
        })
        .zip(&d.active)
        .map(|(t, &k)| (p.glob[k as usize], t))
        .collect())
}

/// Quantize the optimiser's moves into m-bit edits of the base values, recorded in
/// `codes` and applied to `recon`; a coordinate whose edit cannot land within the
/// bound puts its particle in `exact`.
#[allow(clippy::too_many_arguments)]
fn quantize_edits<T: Real>(
    orig: &[T],
    base: &[T],
    recon: &mut [T],
    exact: &mut [bool],
    codes: &mut [i32],
    moved: &[(u32, [f64; 3])],
    xi: f64,
    m: u32,
) {
    let step = edit_step(xi, m);
    let (lo, hi) = code_range(m);
    let code_for = |from: T, target: f64| -> i32 {
        let c = ((target - from.to_f64()) / step - 0.5).round();
        c.clamp(lo as f64, hi as f64) as i32
    };
    for &(k, target) in moved {
        let k = k as usize;
        let mut mine = [(NO_EDIT, T::default()); 3];
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
            let toward = if x.to_f64() < v.to_f64() { -1 } else { 1 };
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
            mine[a] = if v.to_bits64() == from.to_bits64() {
                (NO_EDIT, from)
            } else {
                (code, v)
            };
        }
        if !ok {
            store_exact(k, orig, recon, exact);
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
fn prune<T: Real>(
    base: &[T],
    recon: &mut [T],
    codes: &mut [i32],
    moved: &[(u32, [f64; 3])],
    adj: &Adjacency,
    space: Space,
    b: f64,
) {
    let b2 = b * b;
    let keeps = |recon: &[T], k: usize, at: &[T; 3]| {
        adj.of(k).all(|(q, was)| {
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
