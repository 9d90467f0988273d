//! Critical points of a piecewise-linear 2D vector field: the triangle signature
//! (existence and type, exact), extraction over a grid, and the diff of two fields.
//!
//! Conventions (ARCHITECTURE.md, "Field layout and triangulation"): vertex (i, j) is `u[j * nx + i]`, i = x. The quad with
//! lower-left vertex (i, j) splits along (i,j)-(i+1,j+1) into
//! `T0 = (i,j),(i+1,j),(i+1,j+1)` and `T1 = (i,j),(i+1,j+1),(i,j+1)`; triangle id
//! `2 * (j * (nx - 1) + i) + t`. Both triangles are counter-clockwise with unit area
//! 1/2, so det J of the linear interpolant equals `m = m0 + m1 + m2`.

use super::exact::{sign_of_products, sign_of_sum};
use crate::real::Real;
use rayon::prelude::*;

/// Which of the two triangles of a quad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    T0 = 0,
    T1 = 1,
}

/// Named critical-point types, derived from the sign triple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpType {
    Saddle,
    /// Repelling node (real eigenvalues, both positive).
    Source,
    /// Attracting node (real eigenvalues, both negative).
    Sink,
    RepellingFocus,
    AttractingFocus,
    Center,
}

impl CpType {
    pub fn name(self) -> &'static str {
        match self {
            CpType::Saddle => "saddle",
            CpType::Source => "source",
            CpType::Sink => "sink",
            CpType::RepellingFocus => "repelling focus",
            CpType::AttractingFocus => "attracting focus",
            CpType::Center => "center",
        }
    }
}

/// The signature of a triangle: no critical point, or the exact sign triple
/// (det J, tr J, tr^2 - 4 det J). Packed in a byte: 0 = none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sig(pub u8);

impl Sig {
    pub const NONE: Sig = Sig(0);

    fn from_signs(det: i8, tr: i8, disc: i8) -> Sig {
        Sig(1 + ((det + 1) * 9 + (tr + 1) * 3 + (disc + 1)) as u8)
    }
    pub fn is_cp(self) -> bool {
        self.0 != 0
    }
    /// (sign det J, sign tr J, sign disc), or None without a critical point.
    pub fn signs(self) -> Option<(i8, i8, i8)> {
        if self.0 == 0 {
            return None;
        }
        let c = (self.0 - 1) as i8;
        Some((c / 9 - 1, (c / 3) % 3 - 1, c % 3 - 1))
    }
    pub fn cp_type(self) -> Option<CpType> {
        let (det, tr, disc) = self.signs()?;
        Some(if det < 0 {
            CpType::Saddle
        } else if disc >= 0 {
            if tr > 0 {
                CpType::Source
            } else {
                CpType::Sink
            }
        } else if tr > 0 {
            CpType::RepellingFocus
        } else if tr < 0 {
            CpType::AttractingFocus
        } else {
            CpType::Center
        })
    }
}

/// The two exact products (t1, t2) of each m_k = t1 - t2 = u_a v_b - u_b v_a, over
/// the vertex pairs (1,2), (2,0), (0,1): the one place these formulas live.
///
/// Kernel twin: kernels/common.cuh `fzk_m_products`.
#[inline]
pub fn m_products(p: [[f32; 2]; 3]) -> [(f64, f64); 3] {
    [(1, 2), (2, 0), (0, 1)].map(|(a, b)| edge_products(p[a], p[b]))
}

/// The exact products `(u_a v_b, u_b v_a)` of the edge from vertex a to b:
/// an m_k of every triangle that has the edge (reversed, the two trade places).
#[inline(always)]
pub fn edge_products(a: [f32; 2], b: [f32; 2]) -> (f64, f64) {
    ((a[0] as f64) * (b[1] as f64), (b[0] as f64) * (a[1] as f64))
}

/// Vertex rows j and j + 1 of a row-major field, as `[u0, v0, u1, v1]`: the
/// two rows of quad row j.
#[inline]
pub fn quad_row<'a, T>(u: &'a [T], v: &'a [T], nx: usize, j: usize) -> [&'a [T]; 4] {
    let (a, b, c) = (j * nx, (j + 1) * nx, (j + 2) * nx);
    [&u[a..b], &v[a..b], &u[b..c], &v[b..c]]
}

/// Quad i's triangles T0 = (k, k+1, k+nx+1) and T1 = (k, k+nx+1, k+nx) as
/// their m_products pairs (1, 2), (2, 0), (0, 1), each an edge of the quad
/// row and whether the triangle runs it forward: the edges are the
/// horizontal ones of rows 0 and 1 (`h0`, `h1`: i -> i + 1), the vertical
/// ones of columns i and i + 1 (`up`: row 0 -> row 1) and the diagonal
/// (`diag`: (i, 0) -> (i + 1, 1)). The one statement of that correspondence,
/// for the passes that compute each edge once for both its triangles.
#[inline(always)]
pub fn quad_triangle_edges<E: Copy>(h0: E, h1: E, up: [E; 2], diag: E) -> [[(E, bool); 3]; 2] {
    [
        [(up[1], true), (diag, false), (h0, true)],
        [(h1, false), (up[0], false), (diag, true)],
    ]
}

/// m0, m1, m2 of a triangle, each a correctly rounded difference of two exact
/// products of f32 (so each sign is exact).
#[inline]
fn m_values(p: [[f32; 2]; 3]) -> [f64; 3] {
    m_products(p).map(|(t1, t2)| t1 - t2)
}

/// m == m0 + m1 + m2 == 0 exactly, from the six exact products.
///
/// Kernel twin: kernels/common.cuh `fzk_m_is_zero`.
#[inline]
pub fn m_is_zero(mk: &[(f64, f64); 3]) -> bool {
    sign_of_sum(&[mk[0].0, -mk[0].1, mk[1].0, -mk[1].1, mk[2].0, -mk[2].1]) == 0
}

/// The closed-triangle rule on the m_k: the sign of m when the triangle holds a
/// critical point, else 0; None for a triangle with a non-finite vertex.
///
/// Kernel twin: kernels/common.cuh `fzk_orientation_of` (2 for None).
#[inline]
pub fn orientation_of(m: [f64; 3]) -> Option<i8> {
    if !(m[0] + m[1] + m[2]).is_finite() {
        return None;
    }
    let pos = (m[0] > 0.0) | (m[1] > 0.0) | (m[2] > 0.0);
    let neg = (m[0] < 0.0) | (m[1] < 0.0) | (m[2] < 0.0);
    Some(match (pos, neg) {
        (true, false) => 1,
        (false, true) => -1,
        _ => 0,
    })
}

/// Orientation of the critical point in a triangle: the sign of m when it holds
/// one (closed-triangle rule), else 0 (also for a triangle with a non-finite vertex).
/// Each m_k is a difference of two exact products, so its sign is exact, and the
/// signs of the m_k alone decide: m is their exact sum. A NaN or infinite component
/// makes some m_k non-finite (f32 products never overflow f64), which is how
/// non-finite triangles are recognised here without a separate pass.
#[inline]
pub fn cp_orientation(p: [[f32; 2]; 3]) -> i8 {
    orientation_of(m_values(p)).unwrap_or(0)
}

/// True when m == 0 exactly for three finite vertices (the closed-form bounds of
/// mode B cannot protect such a triangle, so its vertices are stored exactly).
#[inline]
pub fn is_degenerate(p: [[f32; 2]; 3]) -> bool {
    m_is_zero(&m_products(p))
}

/// Signature and degeneracy (finite, m == 0) of a triangle from one set of
/// products: the rounded m_k decide unless their sum is within its error bound
/// (each m_k carries at most half an ulp, the two additions one ulp each) of zero.
///
/// Kernel twin: kernels/mode_s.cu `fzs_classify`.
#[inline]
pub fn classify(p: [[f32; 2]; 3], half: Half) -> (Sig, bool) {
    let mk = m_products(p);
    let m = mk.map(|(t1, t2)| t1 - t2);
    match orientation_of(m) {
        None => (Sig::NONE, false),
        Some(0) => {
            let sum = m[0] + m[1] + m[2];
            let slack = 4.0 * f64::EPSILON * (m[0].abs() + m[1].abs() + m[2].abs());
            (Sig::NONE, sum.abs() <= slack && m_is_zero(&mk))
        }
        Some(det) => (signature_of(p, half, det), false),
    }
}

/// Which triangles of a row of quads (between vertex rows 0 and 1, `u0, v0,
/// u1, v1` of `q + 1` vertices; `out` holds `2 q`, T0 then T1 of each quad)
/// are plainly free: [`classify`] would give `(Sig::NONE, false)` because a
/// vertex is not finite, or because the m_k have both signs and their sum is
/// clear of zero. The rest (critical points, sums near zero) need
/// [`classify`]. Each m_k is an edge's `u_a v_b - u_b v_a` (negated when the
/// triangle runs the edge backwards, which rounding keeps exact), so each
/// edge is computed once for its two triangles, in passes that vectorise.
pub fn plain_triangles([u0, v0, u1, v1]: [&[f32]; 4], out: &mut [bool]) {
    let q = out.len() / 2;
    assert!(
        out.len() % 2 == 0 && [u0, v0, u1, v1].iter().all(|r| r.len() > q),
        "two rows of q + 1 vertices for 2 q triangles"
    );
    // Edge a -> b's m_k, over columns.
    let edge = |ua: &[f32], va: &[f32], ub: &[f32], vb: &[f32], n: usize| -> Vec<f64> {
        (0..n)
            .map(|l| {
                let (t1, t2) = edge_products([ua[l], va[l]], [ub[l], vb[l]]);
                t1 - t2
            })
            .collect()
    };
    let h0 = edge(u0, v0, &u0[1..], &v0[1..], q);
    let h1 = edge(u1, v1, &u1[1..], &v1[1..], q);
    let up = edge(u0, v0, u1, v1, q + 1);
    let diag = edge(u0, v0, &u1[1..], &v1[1..], q);
    // classify's tests on m.
    let plain = |m: [f64; 3]| {
        let sum = m[0] + m[1] + m[2];
        let slack = 4.0 * f64::EPSILON * (m[0].abs() + m[1].abs() + m[2].abs());
        let pos = (m[0] > 0.0) | (m[1] > 0.0) | (m[2] > 0.0);
        let neg = (m[0] < 0.0) | (m[1] < 0.0) | (m[2] < 0.0);
        !sum.is_finite() | (pos & neg & (sum.abs() > slack))
    };
    for (i, pair) in out.chunks_exact_mut(2).enumerate() {
        let tris = quad_triangle_edges(h0[i], h1[i], [up[i], up[i + 1]], diag[i]);
        for (o, edges) in pair.iter_mut().zip(tris) {
            *o = plain(edges.map(|(m, forward)| if forward { m } else { -m }));
        }
    }
}

/// The signature of a triangle given its vertices in T0/T1 order.
///
/// Kernel twin: kernels/mode_s.cu `fzs_signature`.
#[inline]
pub fn signature(p: [[f32; 2]; 3], half: Half) -> Sig {
    match cp_orientation(p) {
        0 => Sig::NONE,
        det => signature_of(p, half, det),
    }
}

/// The type part of a signature, for a triangle holding a critical point of
/// orientation `det`.
fn signature_of(p: [[f32; 2]; 3], half: Half, det: i8) -> Sig {
    // tr J as four f32 terms: T0: (u1 - u0) + (v2 - v1); T1: (u1 - u2) + (v2 - v0).
    let tr_terms: [f64; 4] = match half {
        Half::T0 => [
            p[1][0] as f64,
            -(p[0][0] as f64),
            p[2][1] as f64,
            -(p[1][1] as f64),
        ],
        Half::T1 => [
            p[1][0] as f64,
            -(p[2][0] as f64),
            p[2][1] as f64,
            -(p[0][1] as f64),
        ],
    };
    let tr = sign_of_sum(&tr_terms);
    // tr^2 - 4 det: 16 exact products from tr^2, six exact products (times 4, exact) from det.
    let mut terms = [0.0f64; 22];
    let mut n = 0;
    for a in tr_terms {
        for b in tr_terms {
            terms[n] = a * b;
            n += 1;
        }
    }
    let t = |a: f32, b: f32| 4.0 * (a as f64) * (b as f64);
    let dets = [
        -t(p[1][0], p[2][1]),
        t(p[2][0], p[1][1]),
        -t(p[2][0], p[0][1]),
        t(p[0][0], p[2][1]),
        -t(p[0][0], p[1][1]),
        t(p[1][0], p[0][1]),
    ];
    terms[16..].copy_from_slice(&dets);
    let disc = sign_of_sum(&terms);
    Sig::from_signs(det, tr, disc)
}

/// The float filter in front of [`classify_f64`]: true when the rounded m_k
/// prove the triangle free and not degenerate (some m_k positive, some
/// negative, their sum clearly nonzero), as `plain_triangles` proves it for
/// f32. A rounded m_k = fl(fl(x) - fl(y)) never has the wrong sign: rounding
/// is monotone, so fl(x) > fl(y) only where x > y (it may give 0 where x != y,
/// which only sends the triangle to the exact path). Their sum needs a bound:
/// each m_k is within 2u(|x| + |y|) of x - y (u = EPS / 2), plus 2^-1074 per
/// underflowing product, which the 1e-300 floor covers; the sum adds 2u of the
/// |m_k|.
#[inline]
fn plainly_free_f64(p: [[f64; 2]; 3]) -> bool {
    let mut m = [0.0f64; 3];
    let mut slack = 0.0f64;
    for (k, (a, b)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
        let (x, y) = (p[a][0] * p[b][1], p[b][0] * p[a][1]);
        m[k] = x - y;
        slack += 2.0 * f64::EPSILON * (x.abs() + y.abs()) + 1e-300;
    }
    let pos = m.iter().any(|&x| x > 0.0);
    let neg = m.iter().any(|&x| x < 0.0);
    let sum = m[0] + m[1] + m[2];
    slack += 2.0 * f64::EPSILON * m.iter().map(|x| x.abs()).sum::<f64>();
    // Any overflow makes sum or slack non-finite, and the comparison false.
    pos && neg && sum.abs() > slack && slack.is_finite()
}

/// m_k = u_a v_b - u_b v_a over (1,2), (2,0), (0,1), as product pairs.
#[inline]
fn m_terms_f64(p: [[f64; 2]; 3]) -> [[(f64, f64); 2]; 3] {
    [(1, 2), (2, 0), (0, 1)].map(|(a, b)| [(p[a][0], p[b][1]), (-p[b][0], p[a][1])])
}

/// The exact signs of m0, m1, m2 of a triangle of finite f64 values.
pub fn m_signs_f64(p: [[f64; 2]; 3]) -> [i8; 3] {
    m_terms_f64(p).map(|t| sign_of_products(&t))
}

/// [`classify`] for f64 vertex values, whose products are not exact in f64:
/// every sign comes from [`sign_of_products`] (a float filter, then exact
/// integer sums), so the answer is exact for all finite values, overflow and
/// subnormals included. The same rule, term for term: m_k = u_a v_b - u_b v_a
/// over (1,2), (2,0), (0,1); tr and tr^2 - 4 det as in `signature_of`.
pub fn classify_f64(p: [[f64; 2]; 3], half: Half) -> (Sig, bool) {
    if !p.iter().flatten().all(|x| x.is_finite()) {
        return (Sig::NONE, false);
    }
    if plainly_free_f64(p) {
        return (Sig::NONE, false);
    }
    let mk = m_terms_f64(p);
    let signs = mk.map(|t| sign_of_products(&t));
    let pos = signs.iter().any(|&s| s > 0);
    let neg = signs.iter().any(|&s| s < 0);
    let det = match (pos, neg) {
        (true, false) => 1,
        (false, true) => -1,
        (false, false) => return (Sig::NONE, true),
        (true, true) => {
            let zero = sign_of_products(mk.as_flattened()) == 0;
            return (Sig::NONE, zero);
        }
    };
    let tr_terms: [f64; 4] = match half {
        Half::T0 => [p[1][0], -p[0][0], p[2][1], -p[1][1]],
        Half::T1 => [p[1][0], -p[2][0], p[2][1], -p[0][1]],
    };
    let tr = sign_of_products(&tr_terms.map(|t| (t, 1.0)));
    // tr^2 - 4 det: 16 products from tr^2; 4 det as four copies of det's six
    // products (4 a b itself could overflow where a b does not).
    let mut terms = [(0.0f64, 0.0f64); 40];
    let mut n = 0;
    for a in tr_terms {
        for b in tr_terms {
            terms[n] = (a, b);
            n += 1;
        }
    }
    let dets = [
        (-p[1][0], p[2][1]),
        (p[2][0], p[1][1]),
        (-p[2][0], p[0][1]),
        (p[0][0], p[2][1]),
        (-p[0][0], p[1][1]),
        (p[1][0], p[0][1]),
    ];
    for d in dets {
        terms[n..n + 4].fill(d);
        n += 4;
    }
    let disc = sign_of_products(&terms);
    (Sig::from_signs(det, tr, disc), false)
}

/// Vertex indices of a triangle of the quad with lower-left vertex (i, j).
///
/// Kernel twin: kernels/mode_s.cu `fzs_tri_vertices`.
#[inline]
pub fn tri_vertices(nx: usize, i: usize, j: usize, half: Half) -> [usize; 3] {
    let k = j * nx + i;
    match half {
        Half::T0 => [k, k + 1, k + nx + 1],
        Half::T1 => [k, k + nx + 1, k + nx],
    }
}

/// The (up to six) triangles incident to vertex (i, j): ids and vertex indices.
#[inline]
pub fn incident(
    ny: usize,
    nx: usize,
    i: usize,
    j: usize,
) -> ([(usize, [usize; 3], Half); 6], usize) {
    let mut out = [(0usize, [0usize; 3], Half::T0); 6];
    let mut n = 0;
    let mut push = |qi: usize, qj: usize, half: Half| {
        out[n] = (
            2 * (qj * (nx - 1) + qi) + half as usize,
            tri_vertices(nx, qi, qj, half),
            half,
        );
        n += 1;
    };
    let (left, down, right, up) = (i > 0, j > 0, i + 1 < nx, j + 1 < ny);
    if left && down {
        push(i - 1, j - 1, Half::T0);
        push(i - 1, j - 1, Half::T1);
    }
    if right && down {
        push(i, j - 1, Half::T1);
    }
    if left && up {
        push(i - 1, j, Half::T0);
    }
    if right && up {
        push(i, j, Half::T0);
        push(i, j, Half::T1);
    }
    (out, n)
}

/// Ids of the triangles incident to vertex (i, j); the interior case is a fixed
/// pattern around quad index q = j * (nx - 1) + i.
#[inline]
pub fn incident_ids(ny: usize, nx: usize, i: usize, j: usize) -> ([usize; 6], usize) {
    if i > 0 && j > 0 && i + 1 < nx && j + 1 < ny {
        let q = j * (nx - 1) + i;
        let ids = [
            2 * q,
            2 * q + 1,
            2 * (q - 1),
            2 * (q - nx) + 1,
            2 * (q - nx),
            2 * (q - nx + 1) + 1,
        ];
        return (ids, 6);
    }
    let (tris, n) = incident(ny, nx, i, j);
    (tris.map(|t| t.0), n)
}

#[inline]
pub fn gather<T: Copy>(u: &[T], v: &[T], idx: [usize; 3]) -> [[T; 2]; 3] {
    [
        [u[idx[0]], v[idx[0]]],
        [u[idx[1]], v[idx[1]]],
        [u[idx[2]], v[idx[2]]],
    ]
}

/// Number of triangles of an ny x nx grid.
pub fn triangle_count(ny: usize, nx: usize) -> usize {
    2 * ny.saturating_sub(1) * nx.saturating_sub(1)
}

/// Signatures of every triangle, indexed by triangle id.
pub fn signatures<T: Real>(u: &[T], v: &[T], ny: usize, nx: usize) -> Vec<Sig> {
    let mut out = vec![Sig::NONE; triangle_count(ny, nx)];
    if out.is_empty() {
        return out;
    }
    out.par_chunks_mut(2 * (nx - 1))
        .enumerate()
        .for_each(|(j, row)| {
            let mut plain = vec![false; row.len()];
            T::plain_triangles(quad_row(u, v, nx, j), &mut plain);
            for i in 0..nx - 1 {
                for half in [Half::T0, Half::T1] {
                    let t = 2 * i + half as usize;
                    if !plain[t] {
                        let p = gather(u, v, tri_vertices(nx, i, j, half));
                        row[t] = T::classify_triangle(p, half).0;
                    }
                }
            }
        });
    out
}

/// One critical point: its triangle, where it sits, and its type.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticalPoint {
    /// Triangle id `2 * (j * (nx - 1) + i) + t`.
    pub tri: usize,
    pub i: usize,
    pub j: usize,
    pub half: Half,
    /// Barycentric coordinates `m_k / m` on the triangle's vertices.
    pub bary: [f64; 3],
    /// Position in grid units (x = column, y = row).
    pub x: f64,
    pub y: f64,
    pub sig: Sig,
    pub kind: CpType,
}

/// Every critical point of the field, in triangle-id order.
pub fn extract<T: Real>(u: &[T], v: &[T], ny: usize, nx: usize) -> Vec<CriticalPoint> {
    let sigs = signatures(u, v, ny, nx);
    sigs.iter()
        .enumerate()
        .filter(|(_, s)| s.is_cp())
        .map(|(tri, &sig)| {
            let q = tri / 2;
            let (i, j) = (q % (nx - 1), q / (nx - 1));
            let half = if tri % 2 == 0 { Half::T0 } else { Half::T1 };
            let p = gather(u, v, tri_vertices(nx, i, j, half));
            let m = T::m_values(p);
            let sum = m[0] + m[1] + m[2];
            // Rounded f64 m_k may disagree in sign with the exact ones (the
            // point sits in the triangle by the exact test): clamp to it.
            let m = m.map(|x| if x * sum > 0.0 { x } else { 0.0 });
            let sum = m[0] + m[1] + m[2];
            let bary = if sum != 0.0 && sum.is_finite() {
                [m[0] / sum, m[1] / sum, m[2] / sum]
            } else {
                // Rounding lost every m_k (f64 values far apart in
                // magnitude): the vertices with m_k != 0, equally weighted,
                // still place the point in its triangle.
                let w = T::m_signs(p).map(|s| f64::from(s != 0));
                let n = w.iter().sum::<f64>();
                w.map(|x| x / n)
            };
            let corners: [(f64, f64); 3] = match half {
                Half::T0 => [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0)],
                Half::T1 => [(0.0, 0.0), (1.0, 1.0), (0.0, 1.0)],
            };
            let x = i as f64 + (0..3).map(|k| bary[k] * corners[k].0).sum::<f64>();
            let y = j as f64 + (0..3).map(|k| bary[k] * corners[k].1).sum::<f64>();
            CriticalPoint {
                tri,
                i,
                j,
                half,
                bary,
                x,
                y,
                sig,
                kind: sig.cp_type().expect("critical point has a type"),
            }
        })
        .collect()
}

/// How two fields' critical points differ, triangle by triangle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyDiff {
    /// P1: triangles with a critical point in the original and none after.
    pub lost: Vec<usize>,
    /// P2: triangles with a critical point after and none in the original.
    pub spurious: Vec<usize>,
    /// P3: triangles whose critical point changed its sign triple.
    pub type_changed: Vec<usize>,
    /// Critical points in the original.
    pub original: usize,
}

impl TopologyDiff {
    pub fn is_clean(&self) -> bool {
        self.lost.is_empty() && self.spurious.is_empty() && self.type_changed.is_empty()
    }
}

/// Compare the critical points of two fields of the same shape.
pub fn diff<T: Real>(
    orig: (&[T], &[T]),
    other: (&[T], &[T]),
    ny: usize,
    nx: usize,
) -> TopologyDiff {
    let a = signatures(orig.0, orig.1, ny, nx);
    let b = signatures(other.0, other.1, ny, nx);
    let mut d = TopologyDiff::default();
    for (t, (&sa, &sb)) in a.iter().zip(&b).enumerate() {
        d.original += sa.is_cp() as usize;
        match (sa.is_cp(), sb.is_cp()) {
            (true, false) => d.lost.push(t),
            (false, true) => d.spurious.push(t),
            (true, true) if sa != sb => d.type_changed.push(t),
            _ => {}
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A triangle `plain_triangles` calls plainly free classifies as free and
    /// not degenerate, on random, small-integer (many m == 0), special and
    /// non-finite strips with partial lengths; and most random ones are plain.
    #[test]
    fn plain_triangles_classify_as_free() {
        let mut s = 5u64;
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
            -2.0,
            1e-30,
            1e30,
            f32::NAN,
            f32::INFINITY,
        ];
        let (mut plain_count, mut total) = (0, 0);
        for strip in 0..3000u64 {
            let q = 1 + (strip as usize * 13) % 70;
            let mut value = || {
                let r = next();
                match (strip % 3, r % 16) {
                    (_, 0) => specials[(r >> 8) as usize % specials.len()],
                    (0, _) => ((r >> 8) % 5) as f32 - 2.0,
                    _ => ((r >> 11) as f64 / (1u64 << 53) as f64 - 0.5) as f32,
                }
            };
            let rows: Vec<Vec<f32>> = (0..4).map(|_| (0..=q).map(|_| value()).collect()).collect();
            let mut plain = vec![false; 2 * q];
            plain_triangles([&rows[0], &rows[1], &rows[2], &rows[3]], &mut plain);
            let at = |i: usize, r: usize| [rows[2 * r][i], rows[2 * r + 1][i]];
            for (t, &p) in plain.iter().enumerate() {
                let i = t / 2;
                let (tri, half) = if t % 2 == 0 {
                    ([at(i, 0), at(i + 1, 0), at(i + 1, 1)], Half::T0)
                } else {
                    ([at(i, 0), at(i + 1, 1), at(i, 1)], Half::T1)
                };
                if p {
                    assert_eq!(classify(tri, half), (Sig::NONE, false), "{tri:?}");
                    plain_count += 1;
                }
                total += 1;
            }
        }
        assert!(plain_count * 2 > total, "{plain_count} of {total}");
    }

    /// `plainly_free_f64` only calls a triangle free when the exact signs say
    /// so: with the origin within a few ulps of edge (2, 0) (p2 nearly -c p0)
    /// m1 rounds to 0 often, and with p1 on that edge the triangle is
    /// degenerate while its rounded sum of m_k is not zero: a filter whose
    /// slack were too small would call it plainly free.
    #[test]
    fn plainly_free_f64_agrees_with_exact_signs() {
        let mut s = 11u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let (mut free, mut held, mut near_zero) = (0, 0, 0);
        for trial in 0..200_000u32 {
            // Values are integers below 2^50 times a power of two, so sums of
            // two of them halved are exact; their products are not.
            let sc = 2f64.powi([0, -500, 500, -530][trial as usize % 4] - 50);
            let mut int = || ((next() >> 14) as i64 - (1 << 49)) as f64;
            let (a0, a1) = ((int(), int()), (int(), int()));
            let c = 0.25 + (next() >> 11) as f64 / (1u64 << 53) as f64 * 4.0;
            let mut a2 = (-(c * a0.0).round(), -(c * a0.1).round());
            a2.0 += (next() % 7) as f64 - 3.0;
            a2.1 += (next() % 7) as f64 - 3.0;
            let p0 = [a0.0 * sc, a0.1 * sc];
            let p2 = [a2.0 * sc, a2.1 * sc];
            // Every third triangle degenerate: p1 the exact midpoint of p0 and
            // p2 (exact sum of m_k zero, the rounded one seldom).
            let p1 = if trial % 3 == 0 {
                [(a0.0 + a2.0) * 0.5 * sc, (a0.1 + a2.1) * 0.5 * sc]
            } else {
                [a1.0 * sc, a1.1 * sc]
            };
            let p = [p0, p1, p2];
            let signs = m_signs_f64(p);
            // m1 of the unscaled integers: within a few ulps of zero?
            let (x, y) = (a2.0 * a0.1, a0.0 * a2.1);
            if (x - y).abs() <= 1e-12 * (x.abs() + y.abs()) {
                near_zero += 1;
            }
            if plainly_free_f64(p) {
                free += 1;
                let both = signs.contains(&1) && signs.contains(&-1);
                let sum = sign_of_products(m_terms_f64(p).as_flattened());
                assert!(both && sum != 0, "{p:?}: signs {signs:?}, sum {sum}");
            } else if classify_f64(p, Half::T0).0 != Sig::NONE {
                held += 1;
            }
        }
        assert!(
            free > 1000 && held > 1000 && near_zero > 100_000,
            "{free} {held} {near_zero}"
        );
    }

    /// Linear field V(x, y) = A (x - x0, y - y0) sampled on a 3x3 grid.
    fn linear(a: [[f32; 2]; 2], x0: f32, y0: f32) -> (Vec<f32>, Vec<f32>) {
        let (mut u, mut v) = (vec![], vec![]);
        for j in 0..3 {
            for i in 0..3 {
                let (dx, dy) = (i as f32 - x0, j as f32 - y0);
                u.push(a[0][0] * dx + a[0][1] * dy);
                v.push(a[1][0] * dx + a[1][1] * dy);
            }
        }
        (u, v)
    }

    #[test]
    fn linear_fields_have_one_point_of_the_right_type() {
        let cases = [
            ([[1.0, 0.0], [0.0, -1.0]], CpType::Saddle),
            ([[1.0, 0.0], [0.0, 2.0]], CpType::Source),
            ([[-1.0, 0.0], [0.0, -2.0]], CpType::Sink),
            ([[1.0, -2.0], [2.0, 1.0]], CpType::RepellingFocus),
            ([[-1.0, -2.0], [2.0, -1.0]], CpType::AttractingFocus),
            ([[0.0, -2.0], [2.0, 0.0]], CpType::Center),
        ];
        for (a, kind) in cases {
            let (u, v) = linear(a, 1.3, 0.6);
            let cps = extract(&u, &v, 3, 3);
            assert_eq!(cps.len(), 1, "{kind:?}");
            assert_eq!(cps[0].kind, kind);
            assert!((cps[0].x - 1.3).abs() < 1e-5 && (cps[0].y - 0.6).abs() < 1e-5);
        }
    }

    #[test]
    fn non_finite_and_degenerate_triangles_hold_none() {
        let (mut u, v) = linear([[1.0, 0.0], [0.0, -1.0]], 1.3, 0.6);
        u[4] = f32::NAN;
        assert!(extract(&u, &v, 3, 3).is_empty());
        let z = vec![0.0f32; 9];
        assert!(extract(&z, &z, 3, 3).is_empty());
        assert!(is_degenerate([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]));
    }

    #[test]
    fn incident_triangles_contain_the_vertex() {
        let (ny, nx) = (4, 5);
        let mut seen = vec![0usize; triangle_count(ny, nx)];
        for j in 0..ny {
            for i in 0..nx {
                let (tris, n) = incident(ny, nx, i, j);
                let (ids, m) = incident_ids(ny, nx, i, j);
                let mut a: Vec<usize> = tris[..n].iter().map(|t| t.0).collect();
                let mut b = ids[..m].to_vec();
                a.sort();
                b.sort();
                assert_eq!(a, b, "vertex ({i}, {j})");
                for &(t, verts, _) in &tris[..n] {
                    assert!(verts.contains(&(j * nx + i)));
                    seen[t] += 1;
                }
            }
        }
        assert!(
            seen.iter().all(|&c| c == 3),
            "each triangle has three vertices"
        );
    }

    #[test]
    fn classify_agrees_with_signature_and_exact_degeneracy() {
        let mut st = 7u64;
        let mut rnd = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            // small integers times a power of two: many exact zeros and exact m == 0
            ((st % 7) as f32 - 3.0) * 2f32.powi((st >> 8) as i32 % 5)
        };
        let (mut degenerate, mut cps) = (0, 0);
        for n in 0..50_000 {
            let mut p = [[rnd(), rnd()], [rnd(), rnd()], [rnd(), rnd()]];
            if n % 97 == 0 {
                p[n % 3][n % 2] = f32::NAN;
            }
            for half in [Half::T0, Half::T1] {
                let (sig, deg) = classify(p, half);
                assert_eq!(sig, signature(p, half));
                let finite = p.iter().flatten().all(|x| x.is_finite());
                assert_eq!(deg, finite && !sig.is_cp() && is_degenerate(p), "{p:?}");
                degenerate += deg as usize;
                cps += sig.is_cp() as usize;
            }
        }
        assert!(degenerate > 1000 && cps > 1000, "{degenerate} {cps}");
    }

    #[test]
    fn sig_packing_round_trips() {
        for det in [-1i8, 0, 1] {
            for tr in [-1i8, 0, 1] {
                for disc in [-1i8, 0, 1] {
                    assert_eq!(
                        Sig::from_signs(det, tr, disc).signs(),
                        Some((det, tr, disc))
                    );
                }
            }
        }
    }
}
