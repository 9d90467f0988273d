//! The safe-bound method: each particle gets its own bound, under which none of
//! its pairs can change link status, and is moved (by the correction's edit
//! codes) to within it; no optimiser, one pass over the vulnerable pairs.
//!
//! A pair at original distance d keeps its status when each coordinate of each
//! of its particles moves by less than `|d - b| / (2 sqrt 3)`: the distance then
//! changes by less than `sqrt(3) (s_i + s_j) <= |d - b|`. Particle k's bound s_k
//! is the minimum of that over its vulnerable pairs and xi (pairs outside the
//! window are safe under xi already).
//!
//! Only particles that need it are moved ("secured"): first those of the pairs
//! the base output changed, then, round by round, the unsecured partners of
//! pairs a move changed (a pair of two unmoved particles keeps the base's
//! status, a pair of two secured ones is safe by construction), and after
//! `LAZY_ROUNDS` every particle with a bound below xi at once. Securing keeps a
//! coordinate whose base value is within s_k, else takes the coarsest edit code
//! that lands within s_k (few significant bits where the bound is loose), or
//! stores the particle exactly when no code can. Then, as in the correction,
//! every vulnerable pair is checked with the exact link rule and both particles
//! of any pair still changed are stored exactly until none is: the guarantee
//! rests on that check, not on the margins.
//!
//! The stream is the correction's (edits and exact particles on top of the
//! base), so every decoder reads it unchanged.

use super::correct::{
    adjacency, apply_edit, code_range, edit_step, reset_exact, store_exact, Corrector, Options,
    Outcome, Stats,
};
use super::geometry::{linked, Space};
use super::vulnerable::{self, Pair};
use crate::field::quantize::within;
use rayon::prelude::*;
use std::time::Instant;

/// Shrinks each pair's share of `|d - b|`, so that a bound met exactly still
/// leaves the f64 distance on the right side of b (the exact check decides).
const SHARE: f64 = (1.0 - 1e-9) / (2.0 * 1.732_050_807_568_877_2);

/// Rounds of lazy securing before the rest of the bounded particles are
/// secured at once (a cascade that long is cheaper to end than to follow).
const LAZY_ROUNDS: u32 = 8;

/// Each particle's safe bound (<= xi; 0 for a particle of a pair at exactly b).
pub fn bounds(orig: &[f32], pairs: &[Pair], space: Space, b: f64, xi: f64) -> Vec<f64> {
    let n = orig.len() / 3;
    let mut s = vec![xi; n];
    for p in pairs {
        let (i, j) = (p.i as usize, p.j as usize);
        let d = space
            .dist2(&orig[3 * i..3 * i + 3], &orig[3 * j..3 * j + 3])
            .sqrt();
        let g = if d.is_finite() {
            (d - b).abs() * SHARE
        } else {
            0.0
        };
        s[i] = s[i].min(g);
        s[j] = s[j].min(g);
    }
    s
}

/// The edit code whose decoded value is within `s` of `x` and moves `from` the
/// least; None when no code lands within `s`.
fn smallest_edit(from: f32, x: f32, s: f64, step: f64, m: u32) -> Option<(i32, f32)> {
    let t = x as f64 - from as f64;
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
/// (toward x). The search starts from the f32 value nearest `from + want`, moved
/// toward x until within `s`: where the edit lattice is finer than the f32
/// spacing (large coordinates, tight xi), many codes decode to one f32 and a
/// walk over codes would never cross to the next one.
fn edge_code(
    from: f32,
    x: f32,
    s: f64,
    step: f64,
    m: u32,
    want: f64,
    dir: f64,
) -> Option<(i32, f32)> {
    let (lo, hi) = code_range(m);
    let mut y = (from as f64 + want) as f32;
    for _ in 0..2 {
        if within(y, x, s) || !y.is_finite() {
            break;
        }
        y = next_toward(y, dir);
    }
    let c = (y as f64 - from as f64) / step - 0.5;
    let mut code = c.round().clamp(lo as f64, hi as f64) as i32;
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

/// The f32 after `y` upward (`dir > 0`) or downward (f32::next_up / next_down
/// need Rust 1.86; the MSRV is older). `y` is finite.
fn next_toward(y: f32, dir: f64) -> f32 {
    let up = dir > 0.0;
    if y == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    // Away from zero adds one to the magnitude's bits, toward zero subtracts.
    let away = (y > 0.0) == up;
    let bits = y.to_bits();
    f32::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// Of the codes that land within `s` of `x`, the one with the most trailing
/// zero bits (unique: two multiples of 2^k enclose one of 2^(k+1)): a tight bound needs a precise edit, a loose
/// one only a few high bits, and the byte-plane coder then finds the low planes
/// constant. None when no code lands within `s`.
fn coarsest_edit(from: f32, x: f32, s: f64, step: f64, m: u32) -> Option<(i32, f32)> {
    let near = smallest_edit(from, x, s, step, m)?;
    let t = x as f64 - from as f64;
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
    let pick = (0..31)
        .rev()
        .map(|k| (hi >> k) << k)
        .find(|&c| c >= lo)
        .unwrap_or(lo);
    let code = if neg { -pick } else { pick } as i32;
    let v = apply_edit(from, code, step);
    if v.is_finite() && within(v, x, s) {
        Some((code, v))
    } else {
        Some(near)
    }
}

/// `correct::correct`'s contract with per-particle safe bounds instead of the
/// optimiser: `recon` the base output, `exact` the particles already stored
/// exactly.
#[allow(clippy::too_many_arguments)]
pub fn correct(
    corrector: &dyn Corrector,
    orig: &[f32],
    mut recon: Vec<f32>,
    mut exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
) -> crate::error::Result<Outcome> {
    let t0 = Instant::now();
    let n = orig.len() / 3;
    reset_exact(orig, &mut recon, &exact);
    let pairs = corrector.pairs(orig, space, b, xi)?;
    // Lazily: only particles of pairs the base (or an earlier move) changed are
    // moved within their bounds; a move can only change the pairs it touches.
    let mut frontier: Vec<usize> = vulnerable::violated(&pairs, &recon, space, b)
        .flat_map(|p| [p.i as usize, p.j as usize])
        .collect();
    let mut stats = Stats {
        vulnerable_pairs: pairs.len(),
        violated_before: frontier.len() / 2,
        setup_s: t0.elapsed().as_secs_f64(),
        ..Stats::default()
    };

    let t = Instant::now();
    let s = bounds(orig, &pairs, space, b, xi);
    let step = edit_step(xi, opts.edit_bits);
    let adj = adjacency(n, &pairs);
    let b2 = b * b;
    let mut codes: Vec<Option<i32>> = vec![None; 3 * n];
    let mut secured = vec![false; n];
    let mut rounds = 0;
    loop {
        frontier.sort_unstable();
        frontier.dedup();
        frontier.retain(|&k| !secured[k] && !exact[k]);
        if frontier.is_empty() {
            break;
        }
        if rounds == LAZY_ROUNDS {
            // A long cascade: secure every particle with a bound below xi at once.
            frontier = (0..n)
                .filter(|&k| !secured[k] && !exact[k] && s[k] < xi)
                .collect();
        }
        let moves: Vec<Option<[Option<i32>; 3]>> = frontier
            .par_iter()
            .map(|&k| {
                let mut c = [None; 3];
                for (a, code) in c.iter_mut().enumerate() {
                    let (x, from) = (orig[3 * k + a], recon[3 * k + a]);
                    if !within(from, x, s[k]) {
                        *code = Some(coarsest_edit(from, x, s[k], step, opts.edit_bits)?.0);
                    }
                }
                Some(c)
            })
            .collect();
        for (&k, m) in frontier.iter().zip(&moves) {
            secured[k] = true;
            stats.active_particles += 1;
            match m {
                None => {
                    store_exact(k, orig, &mut recon, &mut exact);
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
        rounds += 1;
        let mut next = Vec::new();
        for &k in &frontier {
            for (q, was_linked) in adj.of(k) {
                let q = q as usize;
                let d2 = space.dist2(&recon[3 * k..3 * k + 3], &recon[3 * q..3 * q + 3]);
                if linked(d2, b2) != was_linked {
                    next.push(q);
                }
            }
        }
        frontier = next;
    }
    stats.iterations = rounds;
    stats.optimise_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut first = true;
    loop {
        let bad: Vec<Pair> = vulnerable::violated(&pairs, &recon, space, b)
            .copied()
            .collect();
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
    let edits: Vec<(u64, i32)> = codes
        .iter()
        .enumerate()
        .filter_map(|(c, &q)| q.filter(|_| !exact[c / 3]).map(|q| (c as u64, q)))
        .collect();
    stats.edited_coords = edits.len();
    stats.check_s = t.elapsed().as_secs_f64();
    Ok(Outcome {
        recon,
        exact,
        edits,
        stats,
    })
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
    fn bounds_split_each_pairs_margin() {
        let orig = [0.0f32, 0.0, 0.0, 1.1, 0.0, 0.0, 5.0, 5.0, 5.0];
        let pairs = [Pair {
            i: 0,
            j: 1,
            linked: false,
        }];
        let s = bounds(&orig, &pairs, Space::open(), 1.0, 0.5);
        let want = (1.1f32 as f64 - 1.0) / (2.0 * 3f64.sqrt());
        assert!((s[0] - want).abs() < 1e-9 && s[0] < want && s[0] == s[1]);
        assert_eq!(s[2], 0.5, "a particle without vulnerable pairs keeps xi");
    }
}
