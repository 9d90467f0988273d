//! The quantizer both modes share: a logarithmic grid of error-bound ids, linear
//! quantization of a prediction residual, and the one reconstruction formula the
//! encoder and decoder (and every backend) must evaluate identically.

use crate::bound::within;

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
/// Kernel twin: kernels/common.cuh `fzk_id_for_bound`.
#[inline]
pub fn id_for_bound(xi: f64, e: f64) -> Option<u32> {
    if e >= xi {
        return Some(0);
    }
    if e.is_nan() || e <= 0.0 {
        return None;
    }
    // The exponents' difference is at most the id (xi = a 2^p, e = c 2^q with
    // a, c in [1, 2) need k >= p - q + log2(a / c) > p - q - 1; a subnormal e's
    // exponent field only lowers the guess): no division, and the exact
    // comparison decides, usually at the first or second k.
    let exponent = |x: f64| (x.to_bits() >> 52) as i64;
    let guess = (exponent(xi) - exponent(e)).clamp(0, NUM_IDS as i64) as u32;
    (guess..NUM_IDS).find(|&k| eb_of_id(xi, k) <= e)
}

/// A neighbour's value as a predictor input: non-finite values predict as 0.
///
/// Kernel twin: kernels/common.cuh `fzk_predictor_input`.
#[inline]
pub fn predictor_input(x: f32) -> f64 {
    if x.is_finite() {
        x as f64
    } else {
        0.0
    }
}

/// Reconstruction from prediction, bound and code. One formula, one operation order.
///
/// Kernel twin: kernels/common.cuh `fzk_reconstruct`.
#[inline]
pub fn reconstruct(pred: f64, eb: f64, q: i32) -> f32 {
    (pred + (2.0 * eb) * q as f64) as f32
}

/// Quantize `x` against `pred` under bound `eb`; None when the code would be out of
/// range or the reconstruction would not be finite and within the bound.
///
/// Kernel twin: kernels/common.cuh `fzk_quantize`.
#[inline]
pub fn quantize(x: f32, pred: f64, eb: f64) -> Option<(i32, f32)> {
    if eb.is_nan() || eb <= 0.0 || !x.is_finite() {
        return None;
    }
    let q = ((x as f64 - pred) / (2.0 * eb)).round();
    if q.is_nan() || q.abs() > RADIUS as f64 {
        return None;
    }
    let q = q as i32;
    let r = reconstruct(pred, eb, q);
    (r.is_finite() && within(r, x, eb)).then_some((q, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_for_bound_is_the_largest_bound_that_fits() {
        for xi in [1.0, 3.7e-5, 1e30] {
            for e in [
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
                assert_eq!(reconstruct(pred, eb, q), r);
            }
        }
        assert!(quantize(1e30, 0.0, 1e-10).is_none());
        assert!(quantize(f32::NAN, 0.0, 1.0).is_none());
        assert!(quantize(1.0, 0.0, 0.0).is_none());
    }
}
