//! Exact signs of sums of exactly-representable f64 terms.
//!
//! Every topology decision is a sign of a polynomial in the f32 vertex values whose
//! monomials (products of two f32) are exact in f64. Their sum is not: a float filter
//! decides when the rounded sum is far enough from zero, and an error-free expansion
//! (Shewchuk's grow-expansion built on two-sum) decides the rest exactly.

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
}
