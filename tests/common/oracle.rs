//! Independent brute-force critical-point oracle for 2D piecewise-linear vector fields.
//!
//! Written from the conventions in ARCHITECTURE.md ("Field layout and
//! triangulation", "Critical-point rule") alone; it uses NOTHING from the `factz`
//! crate, so that the library is never checked against itself.
//!
//! * Field: `u`, `v` row-major `ny x nx`, x fastest: vertex (i, j) is `u[j * nx + i]`,
//!   i = column = x, j = row = y, at the integer position (x, y) = (i, j).
//! * The quad with lower-left vertex (i, j) splits along (i,j)-(i+1,j+1) into
//!   `T0 = (i,j),(i+1,j),(i+1,j+1)` and `T1 = (i,j),(i+1,j+1),(i,j+1)`;
//!   triangle id `2 * (j * (nx - 1) + i) + t`.
//! * Critical point: `m0 = u1 v2 - u2 v1`, `m1 = u2 v0 - u0 v2`, `m2 = u0 v1 - u1 v0`,
//!   `m = m0 + m1 + m2`; the triangle holds one iff `m != 0` and every `m_k` is 0 or
//!   has the sign of `m`. A triangle with a non-finite vertex component holds none.
//! * Type: sign triple (det J, tr J, tr^2 - 4 det J) of the Jacobian of the linear
//!   interpolant, obtained by solving `J E = DF` (E = edge vectors from the vertex
//!   positions, DF = value differences along them) with Cramer's rule.
//!
//! All arithmetic is exact: every finite f32 is an integer once multiplied by 2^149
//! (f64: 2^1074), and everything after that is done in `BigInt`. There is
//! deliberately no floating point filter.

use num_bigint::{BigInt, Sign};
use std::fmt;

/// Named critical-point type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpKind {
    Saddle,
    Source,
    Sink,
    RepellingFocus,
    AttractingFocus,
    Center,
    /// det J == 0: cannot happen for a triangle that holds a critical point (det J is
    /// m divided by the doubled signed area), kept so that the oracle never lies.
    Degenerate,
}

impl CpKind {
    /// Name from the sign triple (det, tr, disc).
    pub fn from_signs(s: [i8; 3]) -> CpKind {
        let [det, tr, disc] = s;
        if det < 0 {
            CpKind::Saddle
        } else if det == 0 {
            CpKind::Degenerate
        } else if disc >= 0 {
            if tr > 0 {
                CpKind::Source
            } else if tr < 0 {
                CpKind::Sink
            } else {
                // det > 0, tr == 0 gives disc = -4 det < 0: unreachable.
                CpKind::Degenerate
            }
        } else if tr > 0 {
            CpKind::RepellingFocus
        } else if tr < 0 {
            CpKind::AttractingFocus
        } else {
            CpKind::Center
        }
    }
}

/// One critical point as the oracle sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OracleCp {
    /// `2 * (j * (nx - 1) + i) + t`.
    pub tri: usize,
    /// Quad lower-left column (x).
    pub i: usize,
    /// Quad lower-left row (y).
    pub j: usize,
    /// 0 = T0, 1 = T1.
    pub t: u8,
    /// (sign det J, sign tr J, sign (tr^2 - 4 det J)), each -1, 0 or 1.
    pub signs: [i8; 3],
    pub kind: CpKind,
}

/// Critical points plus the degenerate triangles (all vertices finite, m == 0).
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    pub cps: Vec<OracleCp>,
    pub degenerate_tris: Vec<usize>,
}

/// Result of comparing two fields triangle by triangle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OracleDiff {
    /// P1: a critical point of the original is missing in the decoded field.
    pub lost: usize,
    /// P2: the decoded field has a critical point where the original has none.
    pub spurious: usize,
    /// P3: both have one but the sign triple differs.
    pub type_changed: usize,
    /// Critical points in the original / decoded field.
    pub orig_cps: usize,
    pub dec_cps: usize,
    /// A few human-readable examples of the differences.
    pub examples: Vec<String>,
}

impl OracleDiff {
    pub fn is_clean(&self) -> bool {
        self.lost == 0 && self.spurious == 0 && self.type_changed == 0
    }
}

impl fmt::Display for OracleDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "P1(lost)={} P2(spurious)={} P3(type)={} cps orig={} dec={}",
            self.lost, self.spurious, self.type_changed, self.orig_cps, self.dec_cps
        )?;
        if !self.examples.is_empty() {
            write!(f, " e.g. [{}]", self.examples.join("; "))?;
        }
        Ok(())
    }
}

/// The exact value `x * 2^149` of a finite f32, as an integer.
pub fn scaled_f32(x: f32) -> BigInt {
    assert!(x.is_finite(), "scaled_f32 of a non-finite value");
    let bits = x.to_bits();
    let negative = (bits >> 31) != 0;
    let biased = (bits >> 23) & 0xff;
    let frac = bits & 0x007f_ffff;
    // normal:    x = (2^23 + frac) * 2^(biased - 150)  ->  x 2^149 = mant << (biased - 1)
    // subnormal: x = frac * 2^-149                      ->  x 2^149 = frac
    let (mant, shift) = if biased == 0 {
        (frac, 0u32)
    } else {
        (frac | 0x0080_0000, biased - 1)
    };
    let mag = BigInt::from(mant) << (shift as usize);
    if negative {
        -mag
    } else {
        mag
    }
}

/// The exact value `x * 2^1074` of a finite f64, as an integer.
pub fn scaled_f64(x: f64) -> BigInt {
    assert!(x.is_finite(), "scaled_f64 of a non-finite value");
    let bits = x.to_bits();
    let biased = (bits >> 52) & 0x7ff;
    let frac = bits & ((1u64 << 52) - 1);
    // normal: x = (2^52 + frac) 2^(biased - 1075); subnormal: frac 2^-1074.
    let (mant, shift) = if biased == 0 {
        (frac, 0)
    } else {
        (frac | (1u64 << 52), biased - 1)
    };
    let mag = BigInt::from(mant) << (shift as usize);
    if bits >> 63 != 0 {
        -mag
    } else {
        mag
    }
}

/// A vertex value type the oracle reads exactly: every finite value times one
/// power of two per type is an integer, and every sign the rule takes is of a
/// homogeneous polynomial, so the common scale changes none of them.
pub trait Value: Copy + Send + Sync {
    fn exact(self) -> Option<BigInt>;
}

impl Value for f32 {
    fn exact(self) -> Option<BigInt> {
        self.is_finite().then(|| scaled_f32(self))
    }
}

impl Value for f64 {
    fn exact(self) -> Option<BigInt> {
        self.is_finite().then(|| scaled_f64(self))
    }
}

fn sgn(x: &BigInt) -> i8 {
    match x.sign() {
        Sign::Minus => -1,
        Sign::NoSign => 0,
        Sign::Plus => 1,
    }
}

/// The three vertices (i, j) of triangle `tri` of a grid `nx` columns wide.
pub fn triangle_vertices(tri: usize, nx: usize) -> [(usize, usize); 3] {
    assert!(nx >= 2);
    let quad = tri / 2;
    let t = tri % 2;
    let i = quad % (nx - 1);
    let j = quad / (nx - 1);
    if t == 0 {
        [(i, j), (i + 1, j), (i + 1, j + 1)]
    } else {
        [(i, j), (i + 1, j + 1), (i, j + 1)]
    }
}

/// Exact per-vertex values; `None` where u or v is non-finite.
fn exact_vertices<T: Value>(
    u: &[T],
    v: &[T],
    rows: std::ops::Range<usize>,
    nx: usize,
) -> Vec<Option<(BigInt, BigInt)>> {
    let mut out = Vec::with_capacity(rows.len() * nx);
    for j in rows {
        for i in 0..nx {
            let k = j * nx + i;
            out.push(u[k].exact().zip(v[k].exact()));
        }
    }
    out
}

/// What one triangle holds.
enum TriResult {
    Nothing,
    Degenerate,
    Cp([i8; 3]),
}

/// Classify one triangle given its vertex positions and exact values.
fn classify(pos: [(i64, i64); 3], val: [&(BigInt, BigInt); 3]) -> TriResult {
    let (u0, v0) = val[0];
    let (u1, v1) = val[1];
    let (u2, v2) = val[2];
    let m0 = u1 * v2 - u2 * v1;
    let m1 = u2 * v0 - u0 * v2;
    let m2 = u0 * v1 - u1 * v0;
    let m = &m0 + &m1 + &m2;
    let s = sgn(&m);
    if s == 0 {
        return TriResult::Degenerate;
    }
    for mk in [&m0, &m1, &m2] {
        let sk = sgn(mk);
        if sk != 0 && sk != s {
            return TriResult::Nothing;
        }
    }
    // Jacobian J of the linear interpolant: J * E = DF with
    //   E  = [e1 e2] (edge vectors p1 - p0, p2 - p0 as columns),
    //   DF = [[u1-u0, u2-u0], [v1-v0, v2-v0]].
    // Cramer: E^-1 = adj(E) / det(E), so J' := DF * adj(E) = det(E) * J, and
    //   det J' = det(E)^2 det J, tr J' = det(E) tr J, disc' = det(E)^2 disc.
    let (e1x, e1y) = (pos[1].0 - pos[0].0, pos[1].1 - pos[0].1);
    let (e2x, e2y) = (pos[2].0 - pos[0].0, pos[2].1 - pos[0].1);
    let det_e = e1x * e2y - e2x * e1y;
    assert!(det_e != 0, "degenerate triangle geometry");
    // adj(E) = [[e2y, -e2x], [-e1y, e1x]]
    let du1 = u1 - u0;
    let du2 = u2 - u0;
    let dv1 = v1 - v0;
    let dv2 = v2 - v0;
    let j11 = &du1 * e2y - &du2 * e1y;
    let j12 = &du2 * e1x - &du1 * e2x;
    let j21 = &dv1 * e2y - &dv2 * e1y;
    let j22 = &dv2 * e1x - &dv1 * e2x;
    let det_j = &j11 * &j22 - &j12 * &j21;
    let tr_j = &j11 + &j22;
    let disc = &tr_j * &tr_j - (&det_j << 2usize);
    let s_det = sgn(&det_j);
    let s_tr = sgn(&tr_j) * (det_e.signum() as i8);
    let s_disc = sgn(&disc);
    TriResult::Cp([s_det, s_tr, s_disc])
}

/// Scan the quads of rows `qrows` (quad row j spans vertex rows j, j+1).
fn scan_rows<T: Value>(u: &[T], v: &[T], nx: usize, qrows: std::ops::Range<usize>) -> Analysis {
    let mut out = Analysis::default();
    if qrows.is_empty() {
        return out;
    }
    let vrow0 = qrows.start;
    let ex = exact_vertices(u, v, qrows.start..qrows.end + 1, nx);
    let at = |i: usize, j: usize| &ex[(j - vrow0) * nx + i];
    for j in qrows {
        for i in 0..nx - 1 {
            for t in 0..2u8 {
                let verts: [(usize, usize); 3] = if t == 0 {
                    [(i, j), (i + 1, j), (i + 1, j + 1)]
                } else {
                    [(i, j), (i + 1, j + 1), (i, j + 1)]
                };
                let (a, b, c) = match (
                    at(verts[0].0, verts[0].1),
                    at(verts[1].0, verts[1].1),
                    at(verts[2].0, verts[2].1),
                ) {
                    (Some(a), Some(b), Some(c)) => (a, b, c),
                    _ => continue,
                };
                let pos = verts.map(|(x, y)| (x as i64, y as i64));
                let tri = 2 * (j * (nx - 1) + i) + t as usize;
                match classify(pos, [a, b, c]) {
                    TriResult::Nothing => {}
                    TriResult::Degenerate => out.degenerate_tris.push(tri),
                    TriResult::Cp(signs) => out.cps.push(OracleCp {
                        tri,
                        i,
                        j,
                        t,
                        signs,
                        kind: CpKind::from_signs(signs),
                    }),
                }
            }
        }
    }
    out
}

/// Full analysis: every critical point (sorted by triangle id) and every degenerate
/// triangle (finite vertices, m == 0).
pub fn analyze<T: Value>(u: &[T], v: &[T], ny: usize, nx: usize) -> Analysis {
    let n = ny.checked_mul(nx).expect("ny * nx overflows");
    assert_eq!(
        u.len(),
        n,
        "u has {} values, expected ny*nx = {}",
        u.len(),
        n
    );
    assert_eq!(
        v.len(),
        n,
        "v has {} values, expected ny*nx = {}",
        v.len(),
        n
    );
    if ny < 2 || nx < 2 {
        return Analysis::default();
    }
    let qrows = ny - 1;
    let tris = 2 * qrows * (nx - 1);
    let threads = if tris >= 20_000 { 2 } else { 1 };
    if threads == 1 {
        return scan_rows(u, v, nx, 0..qrows);
    }
    let per = qrows.div_ceil(threads);
    let parts: Vec<Analysis> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let r = (k * per).min(qrows)..((k + 1) * per).min(qrows);
                s.spawn(move || scan_rows(u, v, nx, r))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("oracle worker panicked"))
            .collect()
    });
    let mut out = Analysis::default();
    for p in parts {
        out.cps.extend(p.cps);
        out.degenerate_tris.extend(p.degenerate_tris);
    }
    out
}

/// Every critical point, sorted by triangle id.
pub fn extract<T: Value>(u: &[T], v: &[T], ny: usize, nx: usize) -> Vec<OracleCp> {
    analyze(u, v, ny, nx).cps
}

/// Compare two critical-point lists (each sorted by triangle id).
pub fn diff_cps(a: &[OracleCp], b: &[OracleCp]) -> OracleDiff {
    let mut d = OracleDiff {
        orig_cps: a.len(),
        dec_cps: b.len(),
        ..Default::default()
    };
    let (mut x, mut y) = (0, 0);
    let note = |d: &mut OracleDiff, s: String| {
        if d.examples.len() < 6 {
            d.examples.push(s);
        }
    };
    while x < a.len() || y < b.len() {
        let ta = a.get(x).map_or(usize::MAX, |c| c.tri);
        let tb = b.get(y).map_or(usize::MAX, |c| c.tri);
        if ta < tb {
            let c = &a[x];
            d.lost += 1;
            note(
                &mut d,
                format!(
                    "lost {:?} at tri {} (i={},j={},T{})",
                    c.kind, c.tri, c.i, c.j, c.t
                ),
            );
            x += 1;
        } else if tb < ta {
            let c = &b[y];
            d.spurious += 1;
            note(
                &mut d,
                format!(
                    "spurious {:?} at tri {} (i={},j={},T{})",
                    c.kind, c.tri, c.i, c.j, c.t
                ),
            );
            y += 1;
        } else {
            let (ca, cb) = (&a[x], &b[y]);
            if ca.signs != cb.signs {
                d.type_changed += 1;
                note(
                    &mut d,
                    format!(
                        "type {:?}{:?} -> {:?}{:?} at tri {} (i={},j={},T{})",
                        ca.kind, ca.signs, cb.kind, cb.signs, ca.tri, ca.i, ca.j, ca.t
                    ),
                );
            }
            x += 1;
            y += 1;
        }
    }
    d
}

/// Triangle-by-triangle comparison of an original and a decoded field.
pub fn diff<T: Value>(
    orig_u: &[T],
    orig_v: &[T],
    dec_u: &[T],
    dec_v: &[T],
    ny: usize,
    nx: usize,
) -> OracleDiff {
    let a = extract(orig_u, orig_v, ny, nx);
    let b = extract(dec_u, dec_v, ny, nx);
    diff_cps(&a, &b)
}

/// `true` iff the exact value of `a - b` (f32 inputs) satisfies `|a - b| <= bound`.
/// TwoSum in f64 gives the exact difference as `s + e`; rounding is monotone, so only
/// `|s| == bound` needs the error term.
pub fn within(a: f32, b: f32, bound: f64) -> bool {
    if bound.is_nan() || bound < 0.0 {
        return false;
    }
    let (x, y) = (a as f64, -(b as f64));
    let s = x + y;
    if !s.is_finite() {
        return false;
    }
    let bb = s - x;
    let e = (x - (s - bb)) + (y - bb);
    let abs = s.abs();
    if abs < bound {
        true
    } else if abs > bound {
        false
    } else if s > 0.0 {
        e <= 0.0
    } else if s < 0.0 {
        e >= 0.0
    } else {
        // s == 0 == bound: exact difference is e
        e == 0.0
    }
}

/// Every finite original value has `|dec - orig| <= abs_bound` (exactly), and every
/// non-finite original value is bit-identical in `dec`.
pub fn check_bound(orig: &[f32], dec: &[f32], abs_bound: f64) -> Result<(), String> {
    if orig.len() != dec.len() {
        return Err(format!(
            "length {} decoded vs {} original",
            dec.len(),
            orig.len()
        ));
    }
    let mut bad = 0usize;
    let mut first = Vec::new();
    let mut worst = 0.0f64;
    for (k, (&o, &d)) in orig.iter().zip(dec).enumerate() {
        let ok = if o.is_finite() {
            let ok = d.is_finite() && within(d, o, abs_bound);
            if d.is_finite() {
                worst = worst.max((d as f64 - o as f64).abs());
            }
            ok
        } else {
            o.to_bits() == d.to_bits()
        };
        if !ok {
            bad += 1;
            if first.len() < 5 {
                first.push(format!(
                    "[{k}] orig {o:e} ({:#010x}) dec {d:e} ({:#010x})",
                    o.to_bits(),
                    d.to_bits()
                ));
            }
        }
    }
    if bad == 0 {
        Ok(())
    } else {
        Err(format!(
            "{bad} values violate bound {abs_bound:e} (max finite err {worst:e}): {}",
            first.join(", ")
        ))
    }
}

/// Vertices that the design requires to be stored exactly: zero vectors, and every
/// vertex of a degenerate triangle (all vertices finite, m == 0).
pub fn must_be_exact(u: &[f32], v: &[f32], ny: usize, nx: usize, analysis: &Analysis) -> Vec<bool> {
    let mut mask: Vec<bool> = u
        .iter()
        .zip(v)
        .map(|(&a, &b)| a == 0.0 && b == 0.0)
        .collect();
    assert_eq!(mask.len(), ny * nx);
    if nx >= 2 {
        for &t in &analysis.degenerate_tris {
            for (i, j) in triangle_vertices(t, nx) {
                mask[j * nx + i] = true;
            }
        }
    }
    mask
}

/// Every masked vertex keeps its value (compared as values, so -0.0 == 0.0).
pub fn check_exact(
    orig_u: &[f32],
    orig_v: &[f32],
    dec_u: &[f32],
    dec_v: &[f32],
    mask: &[bool],
) -> Result<(), String> {
    let mut bad = 0usize;
    let mut first = Vec::new();
    for k in 0..mask.len() {
        if mask[k] && (orig_u[k] != dec_u[k] || orig_v[k] != dec_v[k]) {
            bad += 1;
            if first.len() < 5 {
                first.push(format!(
                    "[{k}] ({:e},{:e}) -> ({:e},{:e})",
                    orig_u[k], orig_v[k], dec_u[k], dec_v[k]
                ));
            }
        }
    }
    if bad == 0 {
        Ok(())
    } else {
        Err(format!(
            "{bad} of {} must-be-exact vertices (zero vectors / degenerate triangles) changed: {}",
            mask.iter().filter(|&&m| m).count(),
            first.join(", ")
        ))
    }
}

/// [`check_bound`] for f64 values, decided in exact integer arithmetic:
/// every finite value within `abs_bound`, every non-finite one bit-exact.
pub fn check_bound_f64(orig: &[f64], dec: &[f64], abs_bound: f64) -> Result<(), String> {
    if orig.len() != dec.len() {
        return Err(format!(
            "length {} decoded vs {} original",
            dec.len(),
            orig.len()
        ));
    }
    let limit = scaled_f64(abs_bound);
    let mut bad = Vec::new();
    for (k, (&o, &d)) in orig.iter().zip(dec).enumerate() {
        let ok = if o.is_finite() {
            d.is_finite() && (scaled_f64(d) - scaled_f64(o)).magnitude() <= limit.magnitude()
        } else {
            o.to_bits() == d.to_bits()
        };
        if !ok {
            bad.push(format!("[{k}] orig {o:e} dec {d:e}"));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} values violate bound {abs_bound:e}: {}",
            bad.len(),
            bad[..bad.len().min(5)].join(", ")
        ))
    }
}
