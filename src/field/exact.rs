//! Exact signs of sums of exactly-representable f64 terms.
//!
//! Every topology decision is a sign of a polynomial in the f32 vertex values whose
//! monomials (products of two f32) are exact in f64. Their sum is not: a float filter
//! decides when the rounded sum is far enough from zero, and an error-free expansion
//! (Shewchuk's grow-expansion built on two-sum) decides the rest exactly.
//!
//! For f64 vertex values the products are not exact in f64 (and may overflow or
//! underflow it): [`sign_of_products`] filters the rounded products and decides
//! the rest with [`Wide`], an exact fixed-point sum of the products' integer
//! mantissas that no exponent can overflow.

/// Sign (-1, 0, 1) of `terms.iter().sum()` computed exactly. Every term must be finite
/// and exact; the caller guarantees no overflow (products of f32 are far below f64::MAX).
///
/// Kernel twin: kernels/common.cuh `fzk_sign_of_sum`.
#[inline]
pub fn sign_of_sum(terms: &[f64]) -> i8 {
    let mut s = 0.0f64;
    let mut a = 0.0f64;
    for &t in terms {
        s += t;
        a += t.abs();
    }
    // Recursive summation error <= (n-1) u sum|t_i| (1 + O(u)); 4x margin, and a
    // tiny absolute floor keeps subnormal partial sums on the exact path.
    let bound = (terms.len() as f64) * 4.0 * f64::EPSILON * a;
    if s > bound && s > 1e-300 {
        1
    } else if s < -bound && s < -1e-300 {
        -1
    } else if a == 0.0 {
        0
    } else {
        exact_sign(terms)
    }
}

/// Kernel twin: kernels/common.cuh `fzk_two_sum`.
#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    (s, err)
}

/// Sign of the exact sum via a nonoverlapping expansion; its largest-magnitude
/// (last nonzero) component carries the sign.
///
/// Kernel twin: kernels/common.cuh `fzk_exact_sign`.
fn exact_sign(terms: &[f64]) -> i8 {
    // 22 terms at most in this crate; an expansion never exceeds the term count.
    let mut e: Vec<f64> = Vec::with_capacity(terms.len() + 1);
    for &t in terms {
        let mut q = t;
        let mut next = Vec::with_capacity(e.len() + 1);
        for &c in &e {
            let (s, err) = two_sum(q, c);
            if err != 0.0 {
                next.push(err);
            }
            q = s;
        }
        if q != 0.0 {
            next.push(q);
        }
        e = next;
    }
    match e.last() {
        Some(&x) if x > 0.0 => 1,
        Some(&x) if x < 0.0 => -1,
        _ => 0,
    }
}

/// Sign (-1, 0, 1) of `sum a_i * b_i` over finite f64 pairs, exactly.
///
/// The rounded products decide when their sum is far from zero: each product
/// carries at most half an ulp (plus 2^-1075 when it underflows), the
/// recursive sum at most (n-1) ulps of sum|p_i|; a 4x margin and a floor well
/// above the underflow range cover both. Otherwise (near zero, overflow,
/// tiny values) [`Wide`] sums the exact products.
pub fn sign_of_products(terms: &[(f64, f64)]) -> i8 {
    let mut s = 0.0f64;
    let mut a = 0.0f64;
    for &(x, y) in terms {
        let p = x * y;
        s += p;
        a += p.abs();
    }
    let bound = (terms.len() as f64 + 2.0) * 4.0 * f64::EPSILON * a;
    if a.is_finite() && a > 1e-250 {
        if s > bound {
            return 1;
        }
        if s < -bound {
            return -1;
        }
    }
    let mut w = Wide::default();
    for &(x, y) in terms {
        w.add_product(x, y);
    }
    w.sign()
}

/// An exact signed sum of products of finite f64, as two unsigned fixed-point
/// magnitudes (positive and negative terms) with the least significant bit
/// at 2^-2148 (the smallest product of two subnormals): a product's 106-bit
/// mantissa lands at bit `ea + eb + 2148 <= 4090`, and 4224 bits leave room
/// for the carries of 2^100 terms. Slow (a few hundred ns) and only reached
/// where the float filter cannot decide.
#[derive(Clone)]
pub struct Wide {
    pos: [u64; WIDE_LIMBS],
    neg: [u64; WIDE_LIMBS],
}

const WIDE_LIMBS: usize = 66;
/// Exponent of a Wide's least significant bit, negated.
const WIDE_FLOOR: i32 = 2148;

impl Default for Wide {
    fn default() -> Self {
        Wide {
            pos: [0; WIDE_LIMBS],
            neg: [0; WIDE_LIMBS],
        }
    }
}

/// A finite f64 as (negative, integer mantissa, exponent): |x| = m 2^e, e >= -1074.
fn split_f64(x: f64) -> (bool, u64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), biased - 1075)
    };
    (bits >> 63 != 0, m, e)
}

impl Wide {
    /// Adds the exact product `x * y` of two finite f64.
    pub fn add_product(&mut self, x: f64, y: f64) {
        debug_assert!(x.is_finite() && y.is_finite());
        let (sx, mx, ex) = split_f64(x);
        let (sy, my, ey) = split_f64(y);
        let m = mx as u128 * my as u128;
        if m == 0 {
            return;
        }
        let shift = (ex + ey + WIDE_FLOOR) as usize;
        let acc = if sx != sy {
            &mut self.neg
        } else {
            &mut self.pos
        };
        // m < 2^106 spans at most three limbs from limb shift / 64.
        let (limb, bit) = (shift / 64, shift % 64);
        let lo = (m << bit) as u64;
        let mid = ((m << bit) >> 64) as u64;
        let hi = if bit == 0 {
            0
        } else {
            (m >> (128 - bit)) as u64
        };
        let mut carry = 0u64;
        for (k, part) in [lo, mid, hi].into_iter().enumerate() {
            let (s1, c1) = acc[limb + k].overflowing_add(part);
            let (s2, c2) = s1.overflowing_add(carry);
            acc[limb + k] = s2;
            carry = (c1 | c2) as u64;
        }
        let mut k = limb + 3;
        while carry != 0 && k < WIDE_LIMBS {
            let (s, c) = acc[k].overflowing_add(1);
            acc[k] = s;
            carry = c as u64;
            k += 1;
        }
    }

    /// Sign of the sum.
    pub fn sign(&self) -> i8 {
        for k in (0..WIDE_LIMBS).rev() {
            if self.pos[k] != self.neg[k] {
                return if self.pos[k] > self.neg[k] { 1 } else { -1 };
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancellation_is_exact() {
        let big = 1e200;
        assert_eq!(sign_of_sum(&[big, 1e-200, -big]), 1);
        assert_eq!(sign_of_sum(&[big, -1e-200, -big]), -1);
        assert_eq!(sign_of_sum(&[big, -big]), 0);
        assert_eq!(
            sign_of_sum(&[1.0, 2f64.powi(-60), -1.0, 2f64.powi(-61), -2f64.powi(-60)]),
            1
        );
        assert_eq!(sign_of_sum(&[]), 0);
        assert_eq!(sign_of_sum(&[1e-310, -1e-310, 1e-320]), 1);
    }

    #[test]
    fn matches_integer_sums_on_cancelling_sets() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5000 {
            // integers below 2^45 times a power of two are exact in f64, and their
            // sum is exact in i128: an independent answer.
            let n = (rnd() % 7 + 1) as usize;
            let scale = 2f64.powi((rnd() % 80) as i32 - 40);
            let mut ints: Vec<i64> = (0..n)
                .map(|_| (rnd() % (1 << 45)) as i64 - (1 << 44))
                .collect();
            let partial: i64 = ints.iter().sum();
            ints.push(-partial + (rnd() % 3) as i64 - 1); // nearly cancel
            let terms: Vec<f64> = ints.iter().map(|&k| k as f64 * scale).collect();
            let exact = ints.iter().map(|&k| k as i128).sum::<i128>().signum() as i8;
            assert_eq!(sign_of_sum(&terms), exact, "{ints:?}");
        }
    }

    /// sign_of_products against i128 sums of scaled integer products, at
    /// every scale f64 has (overflowing and underflowing products included).
    #[test]
    fn products_match_integer_sums_at_every_scale() {
        let mut state = 0x0ddc_0ffe_e123_4567u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut checked = 0;
        for round in 0..20_000 {
            // a_i = k_i 2^s, b_i = l_i 2^t with |k|, |l| < 2^30: the products'
            // integer sum is exact in i128 (n <= 8 terms of < 2^60).
            let n = (rnd() % 7 + 2) as usize;
            let (s, t) = match round % 4 {
                0 => (0, 0),
                1 => ((rnd() % 1000) as i32 + 100, (rnd() % 100) as i32),
                2 => (-((rnd() % 1000) as i32) - 70, -((rnd() % 40) as i32)),
                _ => ((rnd() % 1900) as i32 - 1000, (rnd() % 1900) as i32 - 1000),
            };
            let mut k: Vec<i64> = (0..n)
                .map(|_| (rnd() % (1 << 30)) as i64 - (1 << 29))
                .collect();
            let l: Vec<i64> = (0..n)
                .map(|_| (rnd() % (1 << 30)) as i64 - (1 << 29))
                .collect();
            // Make the last product nearly cancel the rest when it can.
            let partial: i128 = (0..n - 1).map(|i| k[i] as i128 * l[i] as i128).sum();
            if l[n - 1] != 0 {
                let want = -partial / l[n - 1] as i128 + (rnd() % 3) as i128 - 1;
                if want.abs() < 1 << 52 {
                    k[n - 1] = want as i64;
                }
            }
            let exact = (0..n)
                .map(|i| k[i] as i128 * l[i] as i128)
                .sum::<i128>()
                .signum() as i8;
            let scaled = |m: i64, e: i32| m as f64 * 2f64.powi(e);
            let terms: Vec<(f64, f64)> =
                (0..n).map(|i| (scaled(k[i], s), scaled(l[i], t))).collect();
            // Skip the draws whose operands are not exactly representable.
            let representable = (0..n).all(|i| {
                let (a, b) = terms[i];
                a.is_finite()
                    && b.is_finite()
                    && (a / 2f64.powi(s)) as i64 == k[i]
                    && (b / 2f64.powi(t)) as i64 == l[i]
            });
            if !representable || !2f64.powi(s).is_normal() || !2f64.powi(t).is_normal() {
                continue;
            }
            assert_eq!(sign_of_products(&terms), exact, "{terms:?}");
            checked += 1;
        }
        assert!(checked > 15_000, "only {checked} draws were representable");
    }

    #[test]
    fn wide_handles_the_extremes() {
        let max = f64::MAX;
        let tiny = f64::from_bits(1); // 2^-1074
        assert_eq!(sign_of_products(&[(max, max), (-max, max)]), 0);
        assert_eq!(
            sign_of_products(&[(max, max), (-max, max), (tiny, tiny)]),
            1
        );
        assert_eq!(
            sign_of_products(&[(max, max), (-max, max), (-tiny, tiny)]),
            -1
        );
        assert_eq!(sign_of_products(&[(tiny, tiny), (-tiny, 2.0 * tiny)]), -1);
        assert_eq!(sign_of_products(&[(max, 2.0), (-max, 1.0), (-max, 1.0)]), 0);
        assert_eq!(sign_of_products(&[]), 0);
        // 1 + 2^-60 - 1 in products of non-trivial mantissas.
        let a = 1.0 + f64::EPSILON;
        assert_eq!(
            sign_of_products(&[(a, a), (-1.0, 1.0), (-2.0 * f64::EPSILON, 1.0)]),
            1
        );
    }
}
