//! Mode B's closed-form safe relative bound for a triangle without a critical point.

//!
//! A 2x2 determinant `t1 - t2` (two products of components) keeps its sign under any
//! relative perturbation `|du| <= eps |u|` of every component when
//! `P+ (1 - eps)^2 > P- (1 + eps)^2` (P+/P- the positive/negative terms), i.e.
//! `eps < (sqrt P+ - sqrt P-) / (sqrt P+ + sqrt P-) = |P+ - P-| / (sqrt P+ + sqrt P-)^2`.
//! A triangle without a critical point that is not degenerate always has two m_k of
//! opposite signs (one against the sign of m, one with it); while both keep their
//! signs the closed-triangle rule cannot hold, whatever m does. The bound is the best
//! such pair. (Conditions through m itself are second order in the grid step, far
//! tighter on smooth data, and never needed.) The numerator is a rigorous lower
//! bound of |m_k| and the result is shrunk by a relative margin that covers every
//! rounding in the formula, so the bound is safe, not just approximately so.

use super::topology::{m_is_zero, m_products};

/// Relative slack that absorbs the rounding of sqrt, sums and the final division.
/// The kernels' generated `FZK_MARGIN` (`factz::kernels::prelude`).
pub const MARGIN: f64 = 1.0 - 1e-6;

/// Safe relative bound of `t1 - t2`, both exact f64 products: the positive
/// and the negative terms summed apart (selects, not branches, so batches
/// vectorise).
///
/// Kernel twin: kernels/mode_b_bounds.cu `fz_det_bound`.
#[inline(always)]
fn det_bound(t1: f64, t2: f64) -> f64 {
    let n2 = -t2;
    let pos = (0.0 + if t1 > 0.0 { t1 } else { 0.0 }) + if n2 > 0.0 { n2 } else { 0.0 };
    let neg = (0.0 - if t1 > 0.0 { 0.0 } else { t1 }) - if n2 > 0.0 { 0.0 } else { n2 };
    // t1 - t2 is correctly rounded: |t1 - t2| >= |rounded| (1 - 2^-53).
    let lower = (t1 - t2).abs() * (1.0 - f64::EPSILON);
    let root = pos.sqrt() + neg.sqrt();
    lower / (root * root) * MARGIN
}

/// The constraint a triangle puts on its vertices' relative bounds, from one set of
/// products: `+inf` when a vertex is non-finite (such a triangle holds no critical
/// point before or after, whatever the others do), `-1` when it holds a critical
/// point or is degenerate (m == 0; its vertices are stored exactly), else the safe
/// relative bound of the best pair of opposite m_k (0 if none is safe).
///
/// Kernel twin: kernels/mode_b_bounds.cu `fz_triangle_constraint`.
#[inline]
pub fn triangle_constraint(p: [[f32; 2]; 3]) -> f64 {
    let mk = m_products(p);
    let eps = mk.map(|(t1, t2)| det_bound(t1, t2));
    let value = filtered(mk, eps);
    if !value.is_nan() {
        return value;
    }
    // The float filter left m == 0 open: the exact sum decides.
    if m_is_zero(&mk) {
        -1.0
    } else {
        best_opposite(mk.map(|(t1, t2)| t1 - t2), eps)
    }
}

/// The safe bound of the best pair of opposite m_k (0 if none is).
#[inline(always)]
fn best_opposite(d: [f64; 3], eps: [f64; 3]) -> f64 {
    let mut best = 0.0f64;
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        let opposite = (d[a] > 0.0 && d[b] < 0.0) || (d[a] < 0.0 && d[b] > 0.0);
        best = best.max(if opposite { eps[a].min(eps[b]) } else { 0.0 });
    }
    best
}

/// [`triangle_constraint`] from the products and their [`det_bound`]s, with
/// selects instead of branches, and NaN where `sign_of_sum`'s float filter
/// cannot decide whether m == 0 (the exact sum decides those).
#[inline(always)]
fn filtered(mk: [(f64, f64); 3], eps: [f64; 3]) -> f64 {
    let d = mk.map(|(t1, t2)| t1 - t2); // correctly rounded: exact signs
    let finite = (d[0] + d[1] + d[2]).is_finite(); // else a component is NaN or Inf
    let pos = (d[0] > 0.0) | (d[1] > 0.0) | (d[2] > 0.0);
    let neg = (d[0] < 0.0) | (d[1] < 0.0) | (d[2] < 0.0);
    let critical = pos != neg; // one sign only: the closed-triangle rule holds
                               // m == m0 + m1 + m2 from the six exact products: sign_of_sum's float filter.
    let terms = [mk[0].0, -mk[0].1, mk[1].0, -mk[1].1, mk[2].0, -mk[2].1];
    let (mut sum, mut abs) = (0.0f64, 0.0f64);
    for t in terms {
        sum += t;
        abs += t.abs();
    }
    let bound = 6.0 * 4.0 * f64::EPSILON * abs;
    let nonzero = (sum > bound && sum > 1e-300) || (sum < -bound && sum < -1e-300);
    let degenerate = !nonzero && abs == 0.0;
    let best = best_opposite(d, eps);
    let open = if nonzero { best } else { f64::NAN };
    let tail = if degenerate { -1.0 } else { open };
    let value = if critical { -1.0 } else { tail };
    if finite {
        value
    } else {
        f64::INFINITY
    }
}

/// Triangles per batch of [`constraints_into`] (stack arrays of this many lanes).
const BATCH: usize = 64;

/// [`triangle_constraint`] of `out.len()` triangles given in columns:
/// triangle l has vertices `(au[l], av[l]), (bu[l], bv[l]), (cu[l], cv[l])`.
/// Each step runs across a batch of triangles, so the compiler vectorises
/// it (AVX2 where the CPU has it, chosen at run time); the same bits, except
/// NaN where the exact sum must decide (call `triangle_constraint` there).
pub fn constraints_into(vertices: [&[f32]; 6], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { constraints_avx2(vertices, out) };
    }
    constraints_columns(vertices, out)
}

/// [`constraints_columns`] compiled for AVX2. No FMA: Rust never fuses a
/// multiply and an add, so the arithmetic stays the scalar one's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn constraints_avx2(vertices: [&[f32]; 6], out: &mut [f64]) {
    constraints_columns(vertices, out)
}

#[inline(always)]
fn constraints_columns(vertices: [&[f32]; 6], out: &mut [f64]) {
    let n = out.len();
    assert!(
        vertices.iter().all(|c| c.len() >= n),
        "a column per vertex component"
    );
    for start in (0..n).step_by(BATCH) {
        let len = BATCH.min(n - start);
        let col = |c: usize, l: usize| vertices[c][start + l] as f64;
        // m_products: pairs (1, 2), (2, 0), (0, 1) of vertices (a, b, c), as
        // t1 = p[a].u p[b].v and t2 = p[b].u p[a].v (columns 2a, 2a + 1).
        let mut t1 = [[0.0f64; BATCH]; 3];
        let mut t2 = [[0.0f64; BATCH]; 3];
        for (k, (a, b)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
            for l in 0..len {
                t1[k][l] = col(2 * a, l) * col(2 * b + 1, l);
                t2[k][l] = col(2 * b, l) * col(2 * a + 1, l);
            }
        }
        let mut eps = [[0.0f64; BATCH]; 3];
        for k in 0..3 {
            for l in 0..len {
                eps[k][l] = det_bound(t1[k][l], t2[k][l]);
            }
        }
        for (l, o) in out[start..start + len].iter_mut().enumerate() {
            let mk = [0, 1, 2].map(|k| (t1[k][l], t2[k][l]));
            *o = filtered(mk, [eps[0][l], eps[1][l], eps[2][l]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::topology::{cp_orientation, is_degenerate};

    /// The formula as first written, with branches and the exact m == 0
    /// test up front (and as the kernel still writes it): the oracle of the
    /// select form.
    fn branchy(p: [[f32; 2]; 3]) -> f64 {
        use crate::field::topology::orientation_of;
        let mk = m_products(p);
        let d = mk.map(|(t1, t2)| t1 - t2);
        match orientation_of(d) {
            None => return f64::INFINITY,
            Some(0) if !m_is_zero(&mk) => {}
            Some(_) => return -1.0,
        }
        let eps = mk.map(|(t1, t2)| {
            let (mut pos, mut neg) = (0.0f64, 0.0f64);
            for t in [t1, -t2] {
                if t > 0.0 {
                    pos += t;
                } else {
                    neg -= t;
                }
            }
            let lower = (t1 - t2).abs() * (1.0 - f64::EPSILON);
            let root = pos.sqrt() + neg.sqrt();
            lower / (root * root) * MARGIN
        });
        let mut best = 0.0f64;
        for (a, b) in [(0, 1), (0, 2), (1, 2)] {
            if (d[a] > 0.0 && d[b] < 0.0) || (d[a] < 0.0 && d[b] > 0.0) {
                best = best.max(eps[a].min(eps[b]));
            }
        }
        best
    }

    /// The select form, one triangle at a time and in column passes (with
    /// and without the run-time AVX2 choice, on a length that leaves a
    /// partial batch), gives the branchy formula's bits on random,
    /// degenerate, tiny, huge and non-finite triangles; the passes' NaN
    /// (the exact sum's cases) occur and are decided as the formula does.
    #[test]
    fn the_select_form_is_the_branchy_formula_bit_for_bit() {
        let mut s = 7u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.5,
            3.0,
            1e-30,
            -1e-30,
            1e30,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            f32::NAN,
            f32::INFINITY,
        ];
        let mut columns: [Vec<f32>; 6] = Default::default();
        let mut triangles = vec![];
        for round in 0..200_000 {
            let mut c = |_: usize| -> f32 {
                let r = next();
                match (round % 4, r % 8) {
                    (0, _) | (_, 0) => specials[(r >> 8) as usize % specials.len()],
                    (1, _) => ((r >> 8) % 5) as f32 - 2.0, // small integers: many m == 0
                    _ => {
                        f32::from_bits((r >> 16) as u32 % 0x7f80_0000)
                            * if r & 8 == 0 { 1.0 } else { -1.0 }
                    }
                }
            };
            let p = [[c(0), c(1)], [c(2), c(3)], [c(4), c(5)]];
            let (want, got) = (branchy(p), triangle_constraint(p));
            assert_eq!(got.to_bits(), want.to_bits(), "{p:?}: {got} != {want}");
            for (k, col) in columns.iter_mut().enumerate() {
                col.push(p[k / 2][k % 2]);
            }
            triangles.push(p);
        }
        let n = triangles.len() - 5;
        let cols = [0, 1, 2, 3, 4, 5].map(|k| &columns[k][..n]);
        for pass in [constraints_into, constraints_columns] {
            let mut got = vec![0.0; n];
            pass(cols, &mut got);
            let mut open = 0;
            for (g, p) in got.iter().zip(&triangles) {
                let g = if g.is_nan() {
                    open += 1;
                    triangle_constraint(*p)
                } else {
                    *g
                };
                assert_eq!(g.to_bits(), branchy(*p).to_bits(), "{p:?}");
            }
            assert!(open > 0, "the exact sum was never needed");
        }
    }

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
            let eps = triangle_constraint(p);
            if cp_orientation(p) != 0 || is_degenerate(p) {
                assert_eq!(eps, -1.0);
                continue;
            }
            assert!((0.0..1.0).contains(&eps));
            // push every component to the edge of its bound, in every sign pattern
            for pattern in 0..64u32 {
                let mut q = p;
                for k in 0..6 {
                    let sgn = if pattern >> k & 1 == 1 { 1.0 } else { -1.0 };
                    let c = &mut q[k / 2][k % 2];
                    *c = (*c as f64 * (1.0 + sgn * eps)) as f32;
                    // rounding to f32 may step outside; pull back inside
                    if ((*c as f64) - p[k / 2][k % 2] as f64).abs()
                        > eps * (p[k / 2][k % 2] as f64).abs()
                    {
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
