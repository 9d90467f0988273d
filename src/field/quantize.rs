//! The quantizer both modes share: a logarithmic grid of error-bound ids, linear
//! quantization of a prediction residual, and the one reconstruction formula the
//! encoder and decoder (and every backend) must evaluate identically.

use crate::bound::within;
use crate::real::Real;

/// Bound id k means `xi * 2^-k`; ids run 0..NUM_IDS. Below the last, a vertex is stored exactly.
///
/// Kernel twin: generated `FZK_NUM_IDS` (`factz::kernels::prelude`).
pub const NUM_IDS: u32 = 24;
/// Largest |quantization code|; a residual beyond it is stored exactly.
///
/// Kernel twin: generated `FZK_RADIUS` (`factz::kernels::prelude`).
pub const RADIUS: i64 = 1 << 20;

/// The error bound of id `k` under the user's absolute bound `xi`.
///
/// Kernel twin: kernels/common.cuh `fzk_eb_of_id`.
#[inline]
pub fn eb_of_id(xi: f64, k: u32) -> f64 {
    debug_assert!(k < NUM_IDS);
    xi * f64::from_bits((1023 - k as u64) << 52) // exact 2^-k
}

/// The smallest id whose bound fits under `e` (the largest bound <= e), or None
/// when even the last id's bound is larger.
///
/// With xi = a 2^p and e = c 2^q (a, c in [1, 2), both normal), `xi 2^-k <= e`
/// first holds at k = p - q when a <= c, else at p - q + 1: the exponent and
/// mantissa bits decide, with no division and no search, where every id's
/// bound is normal (exact). Elsewhere (subnormal e, tiny xi) the search does.
///
/// Kernel twin: kernels/common.cuh `fzk_id_for_bound` (the same two paths).
#[inline]
pub fn id_for_bound(xi: f64, e: f64) -> Option<u32> {
    if e >= xi {
        return Some(0);
    }
    if e.is_nan() || e <= 0.0 {
        return None;
    }
    // Both positive from here, so the bits above the mantissa are the exponent.
    const MANTISSA: u64 = (1 << 52) - 1;
    let (bx, be) = (xi.to_bits(), e.to_bits());
    let (px, pe) = (bx >> 52, be >> 52);
    if pe > 0 && px > NUM_IDS as u64 && px < 0x7ff {
        let k = px - pe + ((bx & MANTISSA) > (be & MANTISSA)) as u64;
        return (k < NUM_IDS as u64).then_some(k as u32);
    }
    // The exponents' difference is at most the id (a subnormal e's exponent
    // field only lowers the guess); the exact comparison decides.
    let guess = (px as i64 - pe as i64).clamp(0, NUM_IDS as i64) as u32;
    (guess..NUM_IDS).find(|&k| eb_of_id(xi, k) <= e)
}

/// A neighbour's value as a predictor input: non-finite values predict as 0.
///
/// Kernel twin: kernels/common.cuh `fzk_predictor_input`.
#[inline]
pub fn predictor_input<T: Real>(x: T) -> f64 {
    if x.is_finite() {
        x.to_f64()
    } else {
        0.0
    }
}

/// [`predictor_input`] for a caller that knows (`FINITE`) every value it
/// reads is finite: the same value, without the test per read.
#[inline(always)]
pub fn predictor_input_of<const FINITE: bool, T: Real>(x: T) -> f64 {
    if FINITE {
        x.to_f64()
    } else {
        predictor_input(x)
    }
}

/// Reconstruction from prediction, bound and code. One formula, one operation
/// order, in f64, rounded to the element type (a no-op for f64).
///
/// Kernel twin: kernels/common.cuh `fzk_reconstruct`.
#[inline]
pub fn reconstruct<T: Real>(pred: f64, eb: f64, q: i32) -> T {
    T::from_f64(pred + (2.0 * eb) * q as f64)
}

/// `y.round()` (half away from zero) as a code, or None when that is NaN or
/// beyond `RADIUS`: [`code_lanes`]'s answer (the tests' reference form).
#[cfg(test)]
fn code_of(y: f64) -> Option<i32> {
    let (ok, q) = code_lanes(y);
    ok.then_some(q)
}

/// [`code_of`] without a branch, so that a loop over lanes vectorises:
/// (whether the code exists, the code; 0 when it does not). From the
/// truncation, as the kernel twin does: exact (the fraction `y - trunc(y)` is
/// exact below 2^52), and no libm call per value. NaN, infinities and
/// whatever cannot round into range fail the first test; the rest truncate
/// exactly in an i32.
#[inline(always)]
fn code_lanes(y: f64) -> (bool, i32) {
    let in_range = y.abs() < 2.0 * RADIUS as f64;
    let y = if in_range { y } else { 0.0 };
    let t = y as i32;
    let frac = y - f64::from(t);
    let q = t + i32::from(frac >= 0.5) - i32::from(frac <= -0.5);
    (in_range & (q.abs() <= RADIUS as i32), q)
}

/// Quantize `x` against `pred` under bound `eb`; None when the code would be out of
/// range or the reconstruction would not be finite and within the bound.
///
/// Kernel twin: kernels/common.cuh `fzk_quantize`.
#[inline]
pub fn quantize<T: Real>(x: T, pred: f64, eb: f64) -> Option<(i32, T)> {
    if eb.is_nan() || eb <= 0.0 || !x.is_finite() {
        return None;
    }
    let (ok, q, r) = quantize_lanes(x, pred, eb);
    ok.then_some((q, r))
}

/// [`quantize`] without a branch, for a finite `x` and a positive `eb`
/// (the caller's to check): (whether it quantizes, code, reconstruction),
/// the same answer.
#[inline(always)]
pub fn quantize_lanes<T: Real>(x: T, pred: f64, eb: f64) -> (bool, i32, T) {
    let (ok, q) = code_lanes((x.to_f64() - pred) / (2.0 * eb));
    let r: T = reconstruct(pred, eb, q);
    (ok & r.is_finite() & within(r, x, eb), q, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_for_bound_is_the_largest_bound_that_fits() {
        for xi in [
            1.0,
            3.7e-5,
            1e30,
            1.5,
            1.9999999999999998,
            3e-300,
            1e-310,
            f64::INFINITY,
        ] {
            for e in [
                xi * 0.75 * 0.5f64.powi(22),
                xi * 0.5f64.powi(23),
                xi * 0.5f64.powi(24),
                xi * 1.0000000000000002 * 0.5f64.powi(3),
                xi * 0.9999999999999999 * 0.5f64.powi(3),
                1e-310,
                f64::MIN_POSITIVE,
                f64::NAN,
                xi * 2.0,
                xi,
                xi * 0.75,
                xi * 0.5,
                xi * 0.4999,
                xi * 1e-5,
                xi * 1e-9,
                0.0,
            ] {
                let slow = (0..NUM_IDS).find(|&k| eb_of_id(xi, k) <= e);
                assert_eq!(id_for_bound(xi, e), slow, "xi {xi} e {e}");
            }
        }
        // Random bit patterns: every exponent, mantissas on either side.
        let mut s = 11u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let xi = f64::from_bits(s >> 1);
            let e = f64::from_bits((s >> 1).wrapping_sub((s >> 20) % (30 << 52)));
            let slow = (0..NUM_IDS).find(|&k| eb_of_id(xi, k) <= e);
            let slow = if e >= xi { Some(0) } else { slow };
            assert_eq!(id_for_bound(xi, e), slow, "xi {xi:e} e {e:e}");
        }
    }

    #[test]
    fn codes_round_half_away_from_zero() {
        let r = RADIUS as f64;
        let mut ys = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            r,
            r + 0.49999999999999,
            r + 0.5,
            -r - 0.5,
            2.0 * r,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            5e-324,
        ];
        let mut s = 5u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ys.push(f64::from_bits(s));
            // Halves and their neighbours across the range.
            let h = (s % (1 << 22)) as f64 * 0.5 - r;
            ys.extend([
                h,
                f64::from_bits(h.to_bits().wrapping_add(1)),
                f64::from_bits(h.to_bits().wrapping_sub(1)),
            ]);
        }
        for y in ys {
            let q = y.round();
            let want = (!q.is_nan() && q.abs() <= r).then_some(q as i32);
            assert_eq!(code_of(y), want, "y = {y:e}");
        }
    }

    #[test]
    fn quantize_respects_bound_and_radius() {
        for &(x, pred, eb) in &[
            (1.0f32, 0.0, 0.1),
            (-3.5, 2.0, 1e-3),
            (1e30, 0.0, 1e-10),
            (0.0, 0.0, 1e-40),
        ] {
            if let Some((q, r)) = quantize(x, pred, eb) {
                assert!(((r as f64) - (x as f64)).abs() <= eb);
                assert_eq!(reconstruct::<f32>(pred, eb, q), r);
            }
        }
        assert!(quantize(1e30, 0.0, 1e-10).is_none());
        assert!(quantize(f32::NAN, 0.0, 1.0).is_none());
        assert!(quantize(1.0, 0.0, 0.0).is_none());
    }
}
