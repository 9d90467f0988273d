//! The error bound, as fields and particles alike take it: the user's
//! [`Bound`], what it means for some data ([`absolute_bound`]), and the one
//! test of a decoded value against it ([`within`]).

/// The user's error bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Absolute: every finite value within this distance (strict `<=`).
    Abs(f64),
    /// Value-range relative: `tau * (max - min)` over the finite values (both
    /// components of a field, every coordinate of a particle set).
    Rel(f64),
}

use crate::real::Real;
use rayon::prelude::*;

/// Is `r` within `eb` of `x`, decided exactly (the f64 difference of two f32
/// or f64 may round; two-sum recovers its error, and a difference that
/// overflows is beyond any finite `eb`). Branch-free (`&`, `|`), so that loops
/// over lanes vectorise.
///
/// Kernel twin: kernels/common.cuh `fzk_within`.
#[inline(always)]
pub fn within<T: Real>(r: T, x: T, eb: f64) -> bool {
    let (a, b) = (r.to_f64(), x.to_f64());
    let s = a - b;
    let bb = s - a;
    let err = (a - (s - bb)) + (-b - bb); // two-sum: a - b == s + err exactly
    let abs = s.abs();
    (abs < eb) | ((abs == eb) & ((err == 0.0) | ((err < 0.0) == (s > 0.0))))
}

/// The smallest and largest finite value of all `parts`, `(INF, -INF)` when
/// there is none. In parallel pieces, each taken eight running extremes at a
/// time so the loop vectorises (AVX2 where the CPU has it); where an end is a
/// zero, its sign is whichever a lane met first, which [`bound_for_range`]
/// does not see.
pub fn finite_range<T: Real>(parts: &[&[T]]) -> (T, T) {
    /// Values per parallel piece.
    const PIECE: usize = 1 << 16;
    parts
        .par_iter()
        .flat_map(|part| part.par_chunks(PIECE))
        .map(range_of)
        .reduce(
            || (T::INFINITY, T::NEG_INFINITY),
            |(a, b), (c, d)| (if c < a { c } else { a }, if d > b { d } else { b }),
        )
}

/// [`finite_range`] of one piece.
fn range_of<T: Real>(part: &[T]) -> (T, T) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { range_avx2(part) };
    }
    range_lanes(part)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn range_avx2<T: Real>(part: &[T]) -> (T, T) {
    range_lanes(part)
}

#[inline(always)]
fn range_lanes<T: Real>(part: &[T]) -> (T, T) {
    const LANES: usize = 8;
    let mut lo = [T::INFINITY; LANES];
    let mut hi = [T::NEG_INFINITY; LANES];
    let mut take = |l: usize, x: T| {
        let finite = x.is_finite();
        lo[l] = if finite && x < lo[l] { x } else { lo[l] };
        hi[l] = if finite && x > hi[l] { x } else { hi[l] };
    };
    let mut chunks = part.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, &x) in c.iter().enumerate() {
            take(l, x);
        }
    }
    for &x in chunks.remainder() {
        take(0, x);
    }
    let lo = lo
        .into_iter()
        .fold(T::INFINITY, |a, x| if x < a { x } else { a });
    let hi = hi
        .into_iter()
        .fold(T::NEG_INFINITY, |a, x| if x > a { x } else { a });
    (lo, hi)
}

/// The absolute bound `bound` means for data whose finite values span
/// `[lo, hi]` (from [`finite_range`]; 0 for a relative bound when `lo > hi`).
/// The one formula of relative bounds, for fields, particles, ranks and the GPU
/// (which reduces the range on the device).
pub fn bound_for_range<T: Real>(bound: Bound, lo: T, hi: T) -> f64 {
    match bound {
        Bound::Abs(x) => x,
        Bound::Rel(_) if lo > hi => 0.0,
        // + 0.0: a range of zeros is +0 whichever signed zero min and max
        // picked (f32::min leaves that open, and a GPU reduces in another order).
        // For f64 the difference rounds (or overflows, capped below): the
        // bound is what this computes, and the stream records it.
        Bound::Rel(t) => (t * (hi.to_f64() - lo.to_f64() + 0.0)).min(f64::MAX),
    }
}

/// The absolute bound `bound` means for these values: `Abs(x)` is x, `Rel(t)`
/// is `t * (max - min)` over the finite ones (0 if none).
pub fn absolute_bound<T: Real>(parts: &[&[T]], bound: Bound) -> f64 {
    match bound {
        Bound::Abs(x) => x,
        Bound::Rel(_) => {
            let (lo, hi) = finite_range(parts);
            bound_for_range(bound, lo, hi)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range of zeros gives +0 whichever signed zeros min and max kept (the
    /// GPU's reduction order differs from the CPU's).
    #[test]
    fn within_is_exact_at_the_edge() {
        // 1 - 1e-30 and 1 + 1e-30 both round to 1.0 in f64; only one is within 1.
        assert_eq!(1.0f64 - 1e-30f32 as f64, 1.0);
        assert!(within(1.0, 1e-30, 1.0));
        assert!(!within(1.0, -1e-30, 1.0));
        assert!(!within(-1.0, 1e-30, 1.0));
        assert!(within(-1.0, -1e-30, 1.0));
        assert!(within(0.5, 0.25, 0.25) && !within(0.5, 0.25, 0.2499));
    }

    /// The lanes find the sequential scan's extremes (up to a zero's sign),
    /// with NaN and infinities skipped and any remainder length.
    #[test]
    fn finite_range_is_the_extremes_of_the_finite_values() {
        let mut s = 5u64;
        for n in [0usize, 1, 7, 8, 9, 100, 1001] {
            let v: Vec<f32> = (0..n)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    match s % 9 {
                        0 => f32::NAN,
                        1 => f32::INFINITY,
                        2 => f32::NEG_INFINITY,
                        3 => -0.0,
                        _ => (s >> 20) as f32 / 1e9 - 4000.0,
                    }
                })
                .collect();
            let (a, b) = v.split_at(n / 3);
            let want = v
                .iter()
                .filter(|x| x.is_finite())
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            let got = finite_range(&[a, b]);
            assert!(got.0 == want.0 && got.1 == want.1, "{n}: {got:?} {want:?}");
        }
        assert_eq!(finite_range(&[]), (f32::INFINITY, f32::NEG_INFINITY));
    }

    #[test]
    fn zero_range_is_positive_zero_whatever_the_signs() {
        for (lo, hi) in [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0)] {
            let xi = bound_for_range(Bound::Rel(1e-3), lo, hi);
            assert_eq!(xi.to_bits(), 0.0f64.to_bits(), "{lo:?} {hi:?}");
        }
    }
}
