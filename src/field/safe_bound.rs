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

use super::topology::{edge_products, m_is_zero, m_products, quad_triangle_edges, Half, Sig};
use crate::real::Real;

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

/// [`det_bound`] for products rounded to f64 (f64 inputs): each of `t1`,
/// `t2` errs from the exact product by at most 2^-53 of itself plus 2^-1075
/// (round to nearest, subnormals included). The bound holds for every pair of
/// exact products those allow: the numerator is the least |t1 - t2| they
/// leave, the positive and negative sums the largest (the bound falls as
/// either sum grows at a fixed difference). 0 where the products' errors could
/// reach the difference (its sign is then not known from them) or a product
/// overflowed.
#[inline]
fn det_bound_rounded(t1: f64, t2: f64) -> f64 {
    // Twice the worst error of both products: the doubling covers the
    // rounding of this sum and of the subtraction below.
    let err = 4.0 * (f64::EPSILON / 2.0) * (t1.abs() + t2.abs()) + 4.0 * f64::from_bits(1);
    let lower = (t1 - t2).abs() * (1.0 - f64::EPSILON) - err;
    if !(lower > 0.0 && err.is_finite()) {
        return 0.0;
    }
    let (pos, neg) = (t1.max(0.0) + (-t2).max(0.0), (-t1).max(0.0) + t2.max(0.0));
    let root = (pos + err).sqrt() + (neg + err).sqrt();
    lower / (root * root) * MARGIN
}

/// [`triangle_constraint`] for any element type, exact for f64: critical
/// and degenerate triangles decided by the exact rule
/// (`Real::classify_triangle`), each m_k's bound from its rounded products
/// ([`det_bound_rounded`], whose nonzero bounds also fix each m_k's sign).
/// One triangle at a time: mode B's f64 path.
pub fn triangle_constraint_rounded<T: Real>(p: [[T; 2]; 3], half: Half) -> f64 {
    if !p.iter().flatten().all(|x| x.is_finite()) {
        return f64::INFINITY;
    }
    let (sig, degenerate) = T::classify_triangle(p, half);
    if sig != Sig::NONE || degenerate {
        return -1.0;
    }
    let q = p.map(|c| c.map(T::to_f64));
    let mut d = [0.0f64; 3];
    let mut eps = [0.0f64; 3];
    for (k, (a, b)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
        let (t1, t2) = (q[a][0] * q[b][1], q[b][0] * q[a][1]);
        d[k] = t1 - t2;
        eps[k] = det_bound_rounded(t1, t2);
    }
    // Where eps is 0 a wrong sign in d changes nothing: the pair's minimum is 0.
    best_opposite(d, eps)
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
    // One sign only: the closed-triangle rule holds.
    let critical = pos != neg;
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

/// Quads per batch of [`quad_row_constraints`] (stack arrays of this many lanes).
const BATCH: usize = 64;

/// The constraints of a row of quads between vertex rows 0 and 1 (`u0, v0`,
/// `u1, v1`, each `q + 1` vertices; `out` holds `2 q`): [`triangle_constraint`]
/// of T0 then T1 of each quad (`topology::tri_vertices`), the same bits,
/// except NaN where the exact sum must decide (call `triangle_constraint`
/// there). `h` holds the horizontal edges of rows 0 and 1
/// ([`EdgeRow::horizontal`]).
///
/// Each m_k is an edge's: `u_a v_b - u_b v_a` over the edge (a, b), and
/// [`det_bound`] is symmetric in its two products (the positive and negative
/// sums trade places, and two-term sums commute), so each edge's products and
/// bound are computed once for every triangle that shares it: the vertical
/// and diagonal edges here, the horizontal ones once per vertex row (a quad
/// row's bottom is the next one's top): three edges per quad instead of six
/// m_k. Each step runs across a batch of quads, so the compiler vectorises it
/// (AVX2 where the CPU has it, chosen at run time).
pub fn quad_row_constraints(rows: [&[f32]; 4], h: [&EdgeRow; 2], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { quad_row_avx2(rows, h, out) };
    }
    quad_row_columns(rows, h, out)
}

/// [`quad_row_columns`] compiled for AVX2. No FMA: Rust never fuses a
/// multiply and an add, so the arithmetic stays the scalar one's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quad_row_avx2(rows: [&[f32]; 4], h: [&EdgeRow; 2], out: &mut [f64]) {
    quad_row_columns(rows, h, out)
}

/// Edges `a -> b` given in columns: their products `(u_a v_b, u_b v_a)` and
/// [`det_bound`], into the three outputs (as long as the shortest).
#[inline(always)]
fn edges_into(
    [ua, va]: [&[f32]; 2],
    [ub, vb]: [&[f32]; 2],
    t1: &mut [f64],
    t2: &mut [f64],
    eps: &mut [f64],
) {
    let ends = ua.iter().zip(va).zip(ub.iter().zip(vb));
    for ((t1, t2), ((&ua, &va), (&ub, &vb))) in t1.iter_mut().zip(t2.iter_mut()).zip(ends) {
        (*t1, *t2) = edge_products([ua, va], [ub, vb]);
    }
    for ((e, &a), &b) in eps.iter_mut().zip(&*t1).zip(&*t2) {
        *e = det_bound(a, b);
    }
}

/// The horizontal edges `(i, r) -> (i + 1, r)` of one vertex row: products
/// and bounds, kept for the two quad rows that share them.
#[derive(Default)]
pub struct EdgeRow {
    t1: Vec<f64>,
    t2: Vec<f64>,
    eps: Vec<f64>,
}

impl EdgeRow {
    /// Row `(u, v)`'s edges (one fewer than its vertices), reusing the buffers.
    pub fn horizontal(&mut self, u: &[f32], v: &[f32]) {
        let q = u.len().min(v.len()).saturating_sub(1);
        for b in [&mut self.t1, &mut self.t2, &mut self.eps] {
            b.resize(q, 0.0);
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::has_avx2() {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { self.horizontal_avx2(u, v) };
        }
        self.horizontal_columns(u, v)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn horizontal_avx2(&mut self, u: &[f32], v: &[f32]) {
        self.horizontal_columns(u, v)
    }

    /// Its edges from `start` on.
    #[inline(always)]
    fn from(&self, start: usize) -> Edges<'_> {
        Edges {
            t1: &self.t1[start..],
            t2: &self.t2[start..],
            eps: &self.eps[start..],
        }
    }

    #[inline(always)]
    fn horizontal_columns(&mut self, u: &[f32], v: &[f32]) {
        let (t1, t2, eps) = (&mut self.t1, &mut self.t2, &mut self.eps);
        edges_into([u, v], [&u[1..], &v[1..]], t1, t2, eps);
    }
}

/// A batch of edges' products and bounds (see [`edges_into`]).
struct Edges<'a> {
    t1: &'a [f64],
    t2: &'a [f64],
    eps: &'a [f64],
}

#[inline(always)]
fn quad_row_columns([u0, v0, u1, v1]: [&[f32]; 4], h: [&EdgeRow; 2], out: &mut [f64]) {
    let q = out.len() / 2;
    assert!(
        out.len() % 2 == 0
            && [u0, v0, u1, v1].iter().all(|r| r.len() > q)
            && h.iter().all(|h| h.eps.len() >= q),
        "two rows of q + 1 vertices and their edges for 2 q triangles"
    );
    let mut up = [[0.0f64; BATCH + 1]; 3];
    let mut diag = [[0.0f64; BATCH + 1]; 3];
    for start in (0..q).step_by(BATCH) {
        let len = BATCH.min(q - start);
        // Quad i's corners: (i, 0), (i + 1, 0), (i, 1), (i + 1, 1).
        let (a0, a1) = ([&u0[start..], &v0[start..]], [&u1[start..], &v1[start..]]);
        let b1 = [&u1[start + 1..], &v1[start + 1..]];
        // The vertical edges of columns start ..= start + len, the diagonals.
        let [t1, t2, eps] = &mut up;
        edges_into(a0, a1, &mut t1[..=len], &mut t2[..=len], &mut eps[..=len]);
        let [t1, t2, eps] = &mut diag;
        edges_into(a0, b1, &mut t1[..len], &mut t2[..len], &mut eps[..len]);
        let (h0, h1) = (h[0].from(start), h[1].from(start));
        let up = Edges {
            t1: &up[0],
            t2: &up[1],
            eps: &up[2],
        };
        let diag = Edges {
            t1: &diag[0],
            t2: &diag[1],
            eps: &diag[2],
        };
        for (l, pair) in out[2 * start..2 * (start + len)]
            .chunks_exact_mut(2)
            .enumerate()
        {
            let edge = |e: &Edges, l: usize| (e.t1[l], e.t2[l], e.eps[l]);
            let (ups, diag) = ([edge(&up, l), edge(&up, l + 1)], edge(&diag, l));
            let tris = quad_triangle_edges(edge(&h0, l), edge(&h1, l), ups, diag);
            for (o, edges) in pair.iter_mut().zip(tris) {
                // Reversed, an edge's products trade places.
                let mk = edges.map(|((t1, t2, _), fwd)| if fwd { (t1, t2) } else { (t2, t1) });
                *o = filtered(mk, edges.map(|((_, _, eps), _)| eps));
            }
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

    /// The select form, one triangle at a time and in quad-row passes (with
    /// and without the run-time AVX2 choice, on lengths that leave partial
    /// batches), gives the branchy formula's bits on random, degenerate,
    /// tiny, huge and non-finite triangles, each edge's products and bound
    /// shared by its two triangles; the passes' NaN (the exact sum's cases)
    /// occur and are decided as the formula does.
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
        let mut value = |kind: u64| -> f32 {
            let r = next();
            match (kind, r % 8) {
                (0, _) | (_, 0) => specials[(r >> 8) as usize % specials.len()],
                (1, _) => ((r >> 8) % 5) as f32 - 2.0, // small integers: many m == 0
                _ => {
                    f32::from_bits((r >> 16) as u32 % 0x7f80_0000)
                        * if r & 8 == 0 { 1.0 } else { -1.0 }
                }
            }
        };
        for round in 0..200_000u64 {
            let p = [0, 1, 2].map(|_| [value(round % 4), value(round % 4)]);
            let (want, got) = (branchy(p), triangle_constraint(p));
            assert_eq!(got.to_bits(), want.to_bits(), "{p:?}: {got} != {want}");
        }
        let (mut open, mut tested) = (0, 0);
        for strip in 0..1500u64 {
            let q = 1 + (strip as usize * 37) % 150;
            let mut row = || (0..=q).map(|_| value(strip % 4)).collect::<Vec<f32>>();
            let (u0, v0, u1, v1) = (row(), row(), row(), row());
            let at = |i: usize, r: usize| {
                if r == 0 {
                    [u0[i], v0[i]]
                } else {
                    [u1[i], v1[i]]
                }
            };
            let (mut h0, mut h1) = (EdgeRow::default(), EdgeRow::default());
            h0.horizontal(&u0, &v0);
            h1.horizontal(&u1, &v1);
            for pass in [quad_row_constraints, quad_row_columns] {
                let mut got = vec![0.0; 2 * q];
                pass([&u0, &v0, &u1, &v1], [&h0, &h1], &mut got);
                for (t, &g) in got.iter().enumerate() {
                    let i = t / 2;
                    let p = if t % 2 == 0 {
                        [at(i, 0), at(i + 1, 0), at(i + 1, 1)]
                    } else {
                        [at(i, 0), at(i + 1, 1), at(i, 1)]
                    };
                    let g = if g.is_nan() {
                        open += 1;
                        triangle_constraint(p)
                    } else {
                        g
                    };
                    assert_eq!(g.to_bits(), branchy(p).to_bits(), "{p:?}");
                    tested += 1;
                }
            }
        }
        assert!(open > 0, "the exact sum was never needed");
        assert!(tested > 200_000);
    }

    /// f64 triangles (ordinary, huge, tiny and near-degenerate, where the
    /// products round): -1 exactly where the exact rule finds a critical
    /// point or m == 0; otherwise every component pushed to the edge of its
    /// bound, in every sign pattern, leaves the exact rule finding none. On
    /// f32 values (exact products) the bound is the f32 formula's or just
    /// under it.
    #[test]
    fn rounded_products_bound_f64_triangles_safely() {
        use crate::field::topology::classify_f64;
        let mut s = 41u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let (mut tested, mut critical, mut zero) = (0, 0, 0);
        for round in 0..40_000u32 {
            let scale = [1.0, 1e-150, 1e150, 2f64.powi(-1000)][round as usize % 4];
            let mut c = || ((next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale;
            let mut p = [[c(), c()], [c(), c()], [c(), c()]];
            if round % 5 == 0 {
                // Nearly parallel vectors: m_k near zero, rounding matters.
                let k = 1.0 + (next() % 1000) as f64 * f64::EPSILON;
                p[2] = [p[0][0] * k, p[0][1]];
            }
            let half = if round % 2 == 0 { Half::T0 } else { Half::T1 };
            let eps = triangle_constraint_rounded(p, half);
            let (sig, degenerate) = classify_f64(p, half);
            if sig != Sig::NONE || degenerate {
                assert_eq!(eps, -1.0, "{p:?}");
                critical += 1;
                continue;
            }
            assert!((0.0..1.0).contains(&eps), "{p:?}: {eps}");
            if eps == 0.0 {
                zero += 1;
                continue;
            }
            for pattern in 0..64u32 {
                let mut q = p;
                for k in 0..6 {
                    let sgn = if pattern >> k & 1 == 1 { 1.0 } else { -1.0 };
                    let x = p[k / 2][k % 2];
                    let mut y = x + sgn * eps * x.abs();
                    // Rounding may step outside: step back toward x.
                    while (y - x).abs() > eps * x.abs() {
                        y = f64::from_bits(if (y > x) == (y > 0.0) {
                            y.to_bits() - 1
                        } else {
                            y.to_bits() + 1
                        });
                    }
                    q[k / 2][k % 2] = y;
                }
                assert_eq!(
                    classify_f64(q, half).0,
                    Sig::NONE,
                    "{p:?} eps {eps} -> {q:?}"
                );
            }
            tested += 1;
        }
        assert!(
            tested > 10_000 && critical > 1000 && zero > 0,
            "{tested} {critical} {zero}"
        );
        // f32 values: the rounded form never exceeds the exact-product one.
        let mut r = 5u64;
        for _ in 0..20_000 {
            let mut c = || {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                (r % 2001) as f32 / 1000.0 - 1.0
            };
            let p = [[c(), c()], [c(), c()], [c(), c()]];
            let (exact, rounded) = (
                triangle_constraint(p),
                triangle_constraint_rounded(p, Half::T0),
            );
            assert!(rounded <= exact, "{p:?}: {rounded} > {exact}");
            if exact > 1e-3 {
                assert!(rounded >= exact * 0.999, "{p:?}: {rounded} << {exact}");
            }
        }
    }

    /// [`det_bound_rounded`] never exceeds the bound of the exact products
    /// (their rounding errors recovered with FMA), on pairs of products that
    /// nearly cancel, where the rounded difference can be far from the exact
    /// one or of the other sign (then the bound must be 0).
    #[test]
    fn rounded_bound_never_exceeds_the_exact_products_bound() {
        let mut s = 77u64;
        let mut unit = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut cancelling, mut flipped) = (0, 0);
        for round in 0..200_000u32 {
            let scale = [1.0, 1e-160, 1e160][round as usize % 3];
            let (a, b, c) = (0.5 + unit(), (0.5 + unit()) * scale, 0.5 + unit());
            // c d within an ulp or two of a b; signs mixed.
            let q = a * b / c;
            let d = f64::from_bits((q.to_bits() as i64 + (round % 3) as i64 - 1) as u64);
            let sgn = if round % 4 == 0 { -1.0 } else { 1.0 };
            let (c, d) = (c * sgn, d * sgn);
            let (t1, t2) = (a * b, c * d);
            let (e1, e2) = (a.mul_add(b, -t1), c.mul_add(d, -t2));
            let m = (t1 - t2) + (e1 - e2);
            let (p1, p2) = (t1 + e1, t2 + e2);
            let (pos, neg) = (p1.max(0.0) + (-p2).max(0.0), (-p1).max(0.0) + p2.max(0.0));
            let exact = m.abs() / (pos.sqrt() + neg.sqrt()).powi(2);
            let got = det_bound_rounded(t1, t2);
            assert!(
                got <= exact * (1.0 + 1e-9),
                "{a} {b} {c} {d}: {got} > {exact}"
            );
            if (t1 - t2).abs() < 64.0 * f64::EPSILON * t1.abs() {
                cancelling += 1;
            }
            // The rounded difference says the wrong sign (or 0 for a nonzero m).
            if (t1 - t2) * m < 0.0 || (t1 == t2 && m != 0.0) {
                flipped += 1;
                assert_eq!(got, 0.0);
            }
        }
        assert!(
            cancelling > 100_000 && flipped > 100,
            "{cancelling} {flipped}"
        );
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
