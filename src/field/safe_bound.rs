//! Mode B's closed-form safe relative bound for a triangle without a critical point.
//!
//! A determinant `sum(t_i)` of products of two components keeps its sign under any
//! relative perturbation `|du| <= eps |u|` of every component when
//! `P+ (1 - eps)^2 > P- (1 + eps)^2` (P+/P- the sums of the positive/negative terms),
//! i.e. `eps < (sqrt P+ - sqrt P-) / (sqrt P+ + sqrt P-) = |P+ - P-| / (sqrt P+ + sqrt P-)^2`.
//! A triangle is free of critical points while two m_k of opposite signs keep their
//! signs (first-order small in the grid step, so this is the loose condition on
//! smooth data), or while m and one m_k of the opposite sign do; the bound is the
//! best such pair. The numerator uses a rigorous lower
//! bound of |det| and the result is shrunk by a relative margin that covers every
//! rounding in the formula, so the bound is safe, not just approximately so.

/// Relative slack that absorbs the rounding of sqrt, sums and the final division.
const MARGIN: f64 = 1.0 - 1e-6;

#[inline]
fn det_bound(terms: &[f64]) -> f64 {
    let (mut pos, mut neg, mut sum) = (0.0f64, 0.0f64, 0.0f64);
    for &t in terms {
        if t > 0.0 {
            pos += t;
        } else {
            neg -= t;
        }
        sum += t;
    }
    let slack = (terms.len() as f64 + 2.0) * 2.0 * f64::EPSILON * (pos + neg);
    let lower = sum.abs() - slack;
    if lower <= 0.0 {
        return 0.0;
    }
    let root = pos.sqrt() + neg.sqrt();
    lower / (root * root) * MARGIN
}

/// The safe relative bound of a finite, non-degenerate triangle without a critical
/// point (the caller checked those), vertices as [u, v].
#[inline]
pub fn safe_relative_bound(p: [[f32; 2]; 3]) -> f64 {
    let t = |a: f32, b: f32| (a as f64) * (b as f64);
    // m_k = u_a v_b - u_b v_a over the vertex pairs (1,2), (2,0), (0,1).
    let pairs = [(1, 2), (2, 0), (0, 1)];
    let mk: [[f64; 2]; 3] = pairs.map(|(a, b)| [t(p[a][0], p[b][1]), -t(p[b][0], p[a][1])]);
    let all = [mk[0][0], mk[0][1], mk[1][0], mk[1][1], mk[2][0], mk[2][1]];
    let m: f64 = all.iter().sum();
    let m_bound = det_bound(&all);
    let d = mk.map(|t| t[0] + t[1]); // signs exact: difference of two exact products
    let eps = mk.map(|t| det_bound(&t));
    let mut best = 0.0f64;
    for a in 0..3 {
        if (d[a] > 0.0 && m < 0.0) || (d[a] < 0.0 && m > 0.0) {
            best = best.max(m_bound.min(eps[a]));
        }
        for b in a + 1..3 {
            if (d[a] > 0.0 && d[b] < 0.0) || (d[a] < 0.0 && d[b] > 0.0) {
                best = best.max(eps[a].min(eps[b]));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::topology::cp_orientation;

    #[test]
    fn perturbations_inside_the_bound_create_no_critical_point() {
        let mut s = 99u64;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2001) as f32 / 1000.0 - 1.0
        };
        let mut tested = 0;
        for _ in 0..20000 {
            let p = [[rnd(), rnd()], [rnd(), rnd()], [rnd(), rnd()]];
            if cp_orientation(p) != 0 {
                continue;
            }
            let eps = safe_relative_bound(p);
            assert!((0.0..1.0).contains(&eps));
            // push every component to the edge of its bound, in every sign pattern
            for pattern in 0..64u32 {
                let mut q = p;
                for k in 0..6 {
                    let sgn = if pattern >> k & 1 == 1 { 1.0 } else { -1.0 };
                    let c = &mut q[k / 2][k % 2];
                    *c = (*c as f64 * (1.0 + sgn * eps)) as f32;
                    // rounding to f32 may step outside; pull back inside
                    if ((*c as f64) - p[k / 2][k % 2] as f64).abs() > eps * (p[k / 2][k % 2] as f64).abs() {
                        *c = p[k / 2][k % 2];
                    }
                }
                assert_eq!(cp_orientation(q), 0, "{p:?} eps {eps} -> {q:?}");
            }
            tested += 1;
        }
        assert!(tested > 1000);
    }
}
