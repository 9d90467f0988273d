//! The one definition of distance and link every particle module, backend and
//! checker uses.
//!
//! A pair is linked when its squared distance, evaluated in f64 in exactly the
//! order of [`Space::dist2`], is `<= b*b` (f64). Each difference is the f64
//! difference `a - b` of the two coordinates taken as f64: exact for f32
//! coordinates (the difference of two f32 fits f64's significand at the scales
//! positions have), correctly rounded (relative error <= 2^-53) for f64
//! coordinates. With a periodic box each difference is then wrapped to the
//! minimum image. One rule, the same code, for encoder, decoder checks and
//! oracle alike; for f64 it is no longer the exact distance of the inputs, but
//! it is deterministic, and the margins that bound how far rounding can move
//! it are in [`vulnerable_halfwidth`] and [`rounding_slack`]. A particle with a
//! non-finite coordinate gets a NaN or infinite distance to everyone and so
//! links nothing.

use crate::error::{Error, Result};
use crate::real::Real;

/// The space particles live in: open (bounding box) or a periodic cube of side L.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Space {
    /// Side of the periodic box; None for open boundaries.
    pub period: Option<f64>,
}

impl Space {
    pub fn open() -> Space {
        Space { period: None }
    }
    pub fn periodic(l: f64) -> Space {
        Space { period: Some(l) }
    }

    /// Minimum-image difference along one axis.
    #[inline(always)]
    pub fn delta<T: Real>(&self, a: T, b: T) -> f64 {
        self.delta_f64(a.to_f64(), b.to_f64())
    }

    /// [`Space::delta`] for positions held in f64 (the optimiser's working copy).
    #[inline(always)]
    pub fn delta_f64(&self, a: f64, b: f64) -> f64 {
        let d = a - b;
        match self.period {
            // Under a quarter box `d / l` rounds to 0 and `d - l * 0` is d,
            // bit for bit: the division skipped on nearly every pair.
            Some(l) if d.abs() < 0.25 * l => d,
            Some(l) => d - l * round_half_away(d / l),
            None => d,
        }
    }

    /// Squared distance, summed x then y then z (one order everywhere). Always
    /// inlined: every pass over the pairs spends its time here.
    /// One branch where every difference is under a quarter box (nearly
    /// every pair looked at), not one per axis: [`Space::delta`] takes
    /// those as they are, so the bits are the same.
    #[inline(always)]
    pub fn dist2<T: Real>(&self, a: &[T], b: &[T]) -> f64 {
        let (dx, dy, dz) = (
            a[0].to_f64() - b[0].to_f64(),
            a[1].to_f64() - b[1].to_f64(),
            a[2].to_f64() - b[2].to_f64(),
        );
        if let Some(l) = self.period {
            let q = 0.25 * l;
            if !((dx.abs() < q) & (dy.abs() < q) & (dz.abs() < q)) {
                let dx = self.delta(a[0], b[0]);
                let dy = self.delta(a[1], b[1]);
                let dz = self.delta(a[2], b[2]);
                return dx * dx + dy * dy + dz * dz;
            }
        }
        dx * dx + dy * dy + dz * dz
    }
}

/// `f64::round` (half away from zero), bit for bit on every finite input and
/// NaN or infinite where it is, without the libm call baseline x86-64 makes for
/// it (the minimum image runs once per coordinate of every pair looked at).
/// The one difference, +0 for -0 on (-0.5, 0], vanishes in [`Space::delta_f64`]:
/// `d - l * 0` is `d` either way but for d = -0, whose square is +0 too.
#[inline(always)]
pub fn round_half_away(x: f64) -> f64 {
    if x.abs() < 4503599627370496.0 {
        // |x| < 2^52: the cast truncates exactly, and x - t is exact.
        let t = x as i64 as f64;
        if (x - t).abs() >= 0.5 {
            t + if x > 0.0 { 1.0 } else { -1.0 }
        } else {
            t
        }
    } else {
        x.round()
    }
}

/// The one check of a linking length in its space, which every edge (library
/// entry points, C ABI, CLI) calls: `b` finite and > 0, and with a periodic box
/// at most half its side (a longer link would reach two images of one particle,
/// which the minimum image cannot tell apart).
pub fn check_linking(b: f64, space: Space) -> Result<()> {
    if !(b.is_finite() && b > 0.0) {
        return Err(Error::invalid(format!(
            "linking length b must be finite and > 0, got {b}"
        )));
    }
    match space.period {
        Some(l) if !(l.is_finite() && l > 0.0) => Err(Error::invalid(format!(
            "the periodic box side must be finite and > 0, got {l}"
        ))),
        Some(l) if b > l / 2.0 => Err(Error::invalid(format!(
            "linking length {b} exceeds half the periodic box {l}"
        ))),
        _ => Ok(()),
    }
}

/// The link rule: `dist2 <= b2` where `b2 = b * b`.
#[inline]
pub fn linked(d2: f64, b2: f64) -> bool {
    d2 <= b2
}

/// Particle k's coordinates in an AoS array.
#[inline]
pub fn at<T>(pos: &[T], k: usize) -> &[T] {
    &pos[3 * k..3 * k + 3]
}

/// Are all three coordinates of particle k finite?
#[inline]
pub fn finite<T: Real>(pos: &[T], k: usize) -> bool {
    at(pos, k).iter().all(|c| c.is_finite())
}

/// Half-width of the window of pairs whose link status a perturbation of at most
/// `xi` per coordinate can change: each particle moves at most sqrt(3) xi, a pair
/// at most 2 sqrt(3) xi. Widened by a relative 1e-6 (plus a hair of b) so f64
/// rounding in [`Space::dist2`] can never put a changeable pair outside it:
/// each difference errs by at most 2^-53 of itself (none for f32 inputs), the
/// sum of squares by a few 2^-53 of itself, so a distance by under 4 2^-53 of
/// itself, 1e-15 b near b, far below 1e-12 b. The one error that is not
/// relative, f64 minimum-image wrapping, is [`rounding_slack`]'s.
pub fn vulnerable_halfwidth(b: f64, xi: f64) -> f64 {
    2.0 * 3f64.sqrt() * xi * (1.0 + 1e-6) + b * 1e-12
}

/// How far, beyond the relative margins of [`vulnerable_halfwidth`], rounding
/// in [`Space::dist2`] can move a distance between positions of this type
/// (the originals `pos`, or any within `xi` of them).
///
/// Each difference `a - b` is taken in f64 and rounded, by at most 2^-53 of
/// its magnitude: relative, and so covered by the relative widening, in open
/// space. The minimum image is not: `(a - b) - l * k` is the rounded
/// difference less a rounded multiple of l, whose errors (<= 2^-53 of
/// `|a - b|` and of `|l k|`) are absolute while the wrapped result can be
/// small (two particles near opposite faces). With M the largest finite
/// |coordinate| (plus xi), `|a - b| <= 2 M` and `|l k| <= 2 M + l / 2`, so an
/// axis errs by at most `2^-53 (4 M + l) (1 + 2^-52)`, a distance by sqrt(3)
/// times that. Each of the two distances a status decision compares (original
/// and reconstruction) may err so: the slack is twice that, widened by 1% for
/// the rounding of this bound itself.
///
/// f32 coordinates in the box [0, L) need less. With `xi < L / 4` every
/// difference, of originals or of reconstructions within xi, is under 1.5 L,
/// so the wrap multiple is 0 or ±l and the subtraction exact (Sterbenz).
/// The f64 difference of two f32 is exact too unless one is under 2^-29 of
/// the other; then it errs by at most 2^-53 of `|a - b| <= L + 2 xi`. Where
/// twice that (both distances, sqrt(3) per distance) is under half the
/// widening's fixed hair `b * 1e-12` it is absorbed there, and the slack is 0:
/// every box under about a thousand b wide, so f32 streams of ordinary sets
/// keep their bits. Anything else (positions outside [0, L), wider boxes) gets
/// the general slack.
pub fn rounding_slack<T: Real>(pos: &[T], space: Space, b: f64, xi: f64) -> f64 {
    let Some(l) = space.period else {
        return 0.0;
    };
    // From the finite range (parallel, in vector lanes: a compress asks this
    // three times, and a fold per value cost 110 M instructions each on 1M
    // particles): the largest finite |coordinate| is one of its ends, and
    // every finite coordinate is in [0, L) when both ends are.
    let (lo, hi) = crate::bound::finite_range(&[pos]);
    let (lo, hi) = (lo.to_f64(), hi.to_f64());
    let (m, in_box) = if lo <= hi {
        (lo.abs().max(hi.abs()), lo >= 0.0 && hi < l)
    } else {
        (0.0, true)
    };
    if T::MANTISSA_DIGITS <= 24
        && in_box
        && xi < 0.25 * l
        && distance_slack(l + 2.0 * xi) <= 0.5 * b * 1e-12
    {
        return 0.0;
    }
    wrap_slack(m, l, xi)
}

/// The general slack of [`rounding_slack`] for positions whose largest finite
/// |coordinate| is `m`, in a periodic box of side `l`, at bound `xi`.
pub fn wrap_slack(m: f64, l: f64, xi: f64) -> f64 {
    distance_slack(4.0 * (m + xi) + l)
}

/// Twice (original and reconstruction) sqrt(3) times an axis error of 2^-53
/// of `scale`, widened by 1% for the rounding of this bound itself.
fn distance_slack(scale: f64) -> f64 {
    2.0 * 3f64.sqrt() * 2f64.powi(-53) * scale * 1.01
}

/// Positions a periodic box of side L can hold: every finite coordinate
/// within one side of the box, in [-L, 2L]. Beyond that the minimum image of
/// [`Space::delta_f64`] (a rounded multiple of L) and the cell a particle's
/// residue puts it in ([`super::grid::Grid`]) can disagree by more than the
/// grid's margin, so a linked pair could go unseen; no simulation writes
/// positions so far out, so they are refused rather than searched by brute
/// force. Every entry point that takes positions to link calls this.
pub fn check_positions<T: Real>(pos: &[T], space: Space) -> Result<()> {
    let Some(l) = space.period else {
        return Ok(());
    };
    let far = |x: f64| x.is_finite() && !(-l..=2.0 * l).contains(&x);
    match pos.iter().position(|c| far(c.to_f64())) {
        None => Ok(()),
        Some(c) => Err(Error::invalid(format!(
            "particle {} has coordinate {} = {}, more than one box side outside the \
             periodic box [0, {l}): wrap positions into the box",
            c / 3,
            ["x", "y", "z"][c % 3],
            pos[c].to_f64()
        ))),
    }
}

/// [`vulnerable_halfwidth`] widened by [`rounding_slack`] for positions `pos`:
/// the half-width every window of changeable pairs uses.
pub fn halfwidth_of<T: Real>(pos: &[T], space: Space, b: f64, xi: f64) -> f64 {
    halfwidth_with(b, xi, rounding_slack(pos, space, b, xi))
}

/// [`halfwidth_of`] for a `slack` the caller already has (the scan for it
/// reads every coordinate).
pub fn halfwidth_with(b: f64, xi: f64, slack: f64) -> f64 {
    if slack == 0.0 {
        vulnerable_halfwidth(b, xi)
    } else {
        vulnerable_halfwidth(b, xi) + slack
    }
}

/// Axis-aligned bounding box of the finite particles: (lo, hi), or None if none.
pub fn bounding_box<T: Real>(pos: &[T]) -> Option<([f64; 3], [f64; 3])> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    let mut any = false;
    for p in pos.chunks_exact(3) {
        if p.iter().all(|c| c.is_finite()) {
            any = true;
            for k in 0..3 {
                lo[k] = lo[k].min(p[k].to_f64());
                hi[k] = hi[k].max(p[k].to_f64());
            }
        }
    }
    any.then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_half_away_is_f64_round() {
        let mut xs = vec![
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1e300,
            f64::MIN_POSITIVE,
            f64::INFINITY,
        ];
        let mut s = 1u64;
        for _ in 0..100_000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            xs.push((u - 0.5) * 10f64.powi((s % 17) as i32 - 8));
        }
        for x in xs {
            for x in [x, -x] {
                let (a, b) = (round_half_away(x), x.round());
                assert!(a == b, "{x}: {a} vs {b}");
                assert!(a.to_bits() == b.to_bits() || a == 0.0, "{x}");
            }
        }
        assert!(round_half_away(f64::NAN).is_nan());
    }

    #[test]
    fn the_quarter_box_shortcut_is_the_full_minimum_image() {
        // Differences on both sides of l / 4 and l / 2, signed zeros, far images.
        let mut s = 5u64;
        for l in [10.0f64, 1.0, 0.3, 159.0, 1e-3] {
            let sp = Space::periodic(l);
            let mut ds = vec![0.0, -0.0, 0.25 * l, -0.25 * l, 0.5 * l, -0.5 * l, 3.7 * l];
            for _ in 0..20_000 {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                ds.push((u - 0.5) * l * [0.5, 1.0, 1.01, 4.0][(s % 4) as usize]);
            }
            for d in ds {
                for d in [d, -d, d * (1.0 + f64::EPSILON), d * (1.0 - f64::EPSILON)] {
                    let full = d - l * round_half_away(d / l);
                    let got = sp.delta_f64(d, 0.0);
                    assert_eq!(got.to_bits(), full.to_bits(), "l {l} d {d}");
                }
            }
        }
    }

    #[test]
    fn minimum_image_and_exact_edge() {
        let s = Space::periodic(10.0);
        assert_eq!(s.delta(9.5, 0.5), -1.0);
        assert_eq!(s.delta(0.5, 9.5), 1.0);
        let a = [0.0f32, 0.0, 0.0];
        let b = [0.25f32, 0.0, 0.0];
        assert!(linked(Space::open().dist2(&a, &b), 0.25 * 0.25));
        assert!(!linked(Space::open().dist2(&a, &b), 0.2499 * 0.2499));
        let nan = [f32::NAN, 0.0, 0.0];
        let inf = [f32::INFINITY, 0.0, 0.0];
        for s in [Space::open(), Space::periodic(10.0)] {
            assert!(!linked(s.dist2(&a, &nan), f64::MAX));
            assert!(!linked(s.dist2(&inf, &inf), f64::MAX));
        }
    }
}
