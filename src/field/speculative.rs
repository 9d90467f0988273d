//! Mode S (speculative, ratio): anchors on a stride-256 lattice first (Lorenzo over
//! the lattice, checked like every other vertex), then levels of step 128, ..., 2,
//! 1, each in three ordered phases (horizontal: along x
//! between left/right; vertical: along y between top/bottom; center: the mean of
//! both axes). Interpolation is cubic where the +-3 step neighbours exist and the
//! mean of the +-step neighbours elsewhere (the paper's linear mean and Lorenzo
//! center gave 25-45% lower ratios on generated turbulence, `factz synth`).
//! Each target tries bound ids from its level's first (the full bound, or half of it
//! on the coarse levels where the level plan says so, `plan`) downwards and commits
//! the first whose reconstruction keeps the signature of every incident triangle;
//! otherwise it is stored exactly.
//!
//! Why this is exact: unprocessed vertices still hold their original values, so the
//! invariant "every triangle has its original signature in the current state" holds
//! at the start and every commit re-establishes it for the triangles it touches.
//! Targets of one phase are never adjacent, so they can be decided in parallel from
//! the same state. The decoder replays the same schedule.

use super::forced::forced_exact_and_signatures;
use super::parts::Parts;
use super::quantize::{
    eb_of_id, id_for_bound, predictor_input, predictor_input_of, quantize, quantize_lanes,
    reconstruct, NUM_IDS,
};
use super::topology::{incident, incident_ids, Sig};
use crate::codec::{unzigzag, zigzag};
use crate::error::{Error, Result};
use crate::real::Real;
use rayon::prelude::*;

pub mod plan;
pub use plan::LevelPlan;

/// Anchor lattice stride. The paper stores a stride-16 lattice exactly; here the
/// lattice is 256 apart and the levels 128..16 interpolate down to it like the
/// finer ones, so anchors cost 1/65536 of the field instead of 1/256 (at 4096^2
/// and rel 1e-2 exact stride-16 anchors were two thirds of the stream).
/// The kernels' generated `FZK_STRIDE`.
pub const STRIDE: usize = 256;

/// A step's three phases, in order; the value is the kernels' `phase` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Phase {
    /// Odd multiples of the step along rows (between known columns).
    Horizontal = 0,
    /// Odd multiples of the step along columns.
    Vertical = 1,
    /// Odd along both: the centers of the known squares.
    Center = 2,
}

/// The phases in order, (step, phase) for steps STRIDE/2, ..., 2, 1: the
/// schedule of the CPU's walk and of the GPU's launches alike.
pub fn schedule() -> impl Iterator<Item = (usize, Phase)> {
    std::iter::successors(Some(STRIDE / 2), |&s| (s > 1).then_some(s / 2))
        .flat_map(|s| [Phase::Horizontal, Phase::Vertical, Phase::Center].map(move |p| (s, p)))
}

/// Fewest symbols a segment of the codes section holds ([`code_segments`]):
/// each segment stores its own frequency tables (about 100-300 bytes), which
/// a shorter one would not repay (1024^2 turbulence, rANS: 2^12 gains 0.5%
/// at rel 1e-2 and loses 0.3% at 1e-3 and 1e-4 against 2^14; 2^15 is within
/// 0.5% of it, 2^17 1-6% worse).
pub const MIN_SEGMENT: usize = 1 << 14;

/// Where the codes section's segments start (symbol indices, the first 0),
/// for `n_codes` codes of an ny x nx field: a segment per phase of the
/// schedule (the anchors with the first), phases merged until a segment
/// holds [`MIN_SEGMENT`] symbols and so does the rest. The residuals'
/// statistics change from level to level and phase to phase, which one
/// table for the whole section averages away: on `factz synth` turbulence
/// (1024^2, rANS) segments make mode S streams 33% smaller at rel 1e-2, 32%
/// at 1e-3 and 15% at 1e-4. The boundaries count every target as coded
/// (exact vertices shift them a little); only the encoder uses them, the
/// stream records each segment's length.
pub fn code_segments(ny: usize, nx: usize, n_codes: usize) -> Vec<usize> {
    let anchors = (0..ny).step_by(STRIDE).len() * (0..nx).step_by(STRIDE).len();
    let mut starts = vec![0];
    let mut at = 2 * anchors;
    for (s, phase) in schedule() {
        let start = *starts.last().unwrap();
        if at >= start + MIN_SEGMENT && at + MIN_SEGMENT <= n_codes {
            starts.push(at);
        }
        at += 2 * Targets::of(s, phase).count(ny, nx);
    }
    starts
}

/// The vertices one phase decides: rows `row0, row0 + row_step, ...` and, in
/// each, columns `col0, col0 + col_step, ...`: odd multiples of the step along
/// the phase's direction(s), multiples of twice the step across.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    pub row0: usize,
    pub row_step: usize,
    pub col0: usize,
    pub col_step: usize,
}

impl Targets {
    pub fn of(step: usize, phase: Phase) -> Targets {
        let (odd, even) = ((step, 2 * step), (0, 2 * step));
        let ((row0, row_step), (col0, col_step)) = match phase {
            Phase::Horizontal => (even, odd),
            Phase::Vertical => (odd, even),
            Phase::Center => (odd, odd),
        };
        Targets {
            row0,
            row_step,
            col0,
            col_step,
        }
    }

    /// The target rows of a field of `ny` rows.
    pub fn rows(&self, ny: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        (self.row0..ny).step_by(self.row_step)
    }

    /// The target columns of a field of `nx` columns.
    pub fn cols(&self, nx: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        (self.col0..nx).step_by(self.col_step)
    }

    /// How many targets an ny x nx field has.
    pub fn count(&self, ny: usize, nx: usize) -> usize {
        self.rows(ny).len() * self.cols(nx).len()
    }
}

/// Interpolation along one axis through the known neighbours at -s and +s: cubic
/// when -3s and +3s exist too, linear inside, the one neighbour at the far edge.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stencil {
    Edge,
    Linear,
    Cubic,
}

impl Stencil {
    #[inline]
    fn at(pos: usize, len: usize, s: usize) -> Stencil {
        if pos + s >= len {
            Stencil::Edge
        } else if pos >= 3 * s && pos + 3 * s < len {
            Stencil::Cubic
        } else {
            Stencil::Linear
        }
    }

    /// The interpolated value at index k of `a`, neighbours `stride` apart
    /// (`FINITE`: every value of `a` is).
    #[inline(always)]
    fn apply<const FINITE: bool, T: Real>(self, a: &[T], k: usize, stride: usize) -> f64 {
        let at = |q: usize| predictor_input_of::<FINITE, T>(a[q]);
        match self {
            Stencil::Edge => at(k - stride),
            Stencil::Linear => (at(k - stride) + at(k + stride)) * 0.5,
            Stencil::Cubic => {
                (9.0 * (at(k - stride) + at(k + stride))
                    - (at(k - 3 * stride) + at(k + 3 * stride)))
                    * 0.0625
            }
        }
    }
}

/// How a target is predicted: worked out once, applied to u and to v.
#[derive(Clone, Copy)]
struct Predictor {
    k: usize,
    x: Option<(Stencil, usize)>,
    y: Option<(Stencil, usize)>,
    /// Anchors: Lorenzo on the `STRIDE` lattice (west and north neighbours exist;
    /// the north stride in elements).
    anchor: Option<(bool, bool, usize)>,
}

impl Predictor {
    #[inline]
    fn new(ny: usize, nx: usize, i: usize, j: usize, s: usize, phase: Phase) -> Predictor {
        let x = Some((Stencil::at(i, nx, s), s));
        let y = Some((Stencil::at(j, ny, s), s * nx));
        let (x, y) = match phase {
            Phase::Horizontal => (x, None),
            Phase::Vertical => (None, y),
            Phase::Center => (x, y),
        };
        Predictor {
            k: j * nx + i,
            x,
            y,
            anchor: None,
        }
    }

    /// An anchor at (i, j): Lorenzo over the anchors already decided (raster order).
    #[inline]
    fn anchor(nx: usize, i: usize, j: usize) -> Predictor {
        Predictor {
            k: j * nx + i,
            x: None,
            y: None,
            anchor: Some((i >= STRIDE, j >= STRIDE, STRIDE * nx)),
        }
    }

    /// The prediction from `a` (`FINITE`: every value of `a` is, so no read
    /// needs `predictor_input`'s test).
    #[inline(always)]
    fn apply<const FINITE: bool, T: Real>(&self, a: &[T]) -> f64 {
        if let Some(lorenzo) = self.anchor {
            return self.apply_anchor(a, lorenzo);
        }
        match (self.x, self.y) {
            (Some((sx, dx)), None) => sx.apply::<FINITE, _>(a, self.k, dx),
            (None, Some((sy, dy))) => sy.apply::<FINITE, _>(a, self.k, dy),
            // Both axes are known at the center: their mean beats Lorenzo on smooth data.
            (Some((sx, dx)), Some((sy, dy))) => {
                (sx.apply::<FINITE, _>(a, self.k, dx) + sy.apply::<FINITE, _>(a, self.k, dy)) * 0.5
            }
            (None, None) => 0.0,
        }
    }

    #[inline]
    fn apply_anchor<T: Real>(&self, a: &[T], (west, north, ns): (bool, bool, usize)) -> f64 {
        let k = self.k;
        match (west, north) {
            (true, true) => {
                (predictor_input(a[k - STRIDE]) + predictor_input(a[k - ns]))
                    - predictor_input(a[k - STRIDE - ns])
            }
            (true, false) => predictor_input(a[k - STRIDE]),
            (false, true) => predictor_input(a[k - ns]),
            (false, false) => 0.0,
        }
    }
}

/// [`Predictor::apply`] of every target of one row (row `j` of step `s`'s
/// `phase`) from `a`, in column order, into `out`: the same values, bit for
/// bit, with each stencil chosen once per row (across it) or once for all
/// but the few targets at the row's ends (along it), then applied in one
/// loop. `across` is scratch (center phase). `FINITE` as for
/// [`Predictor::apply`].
fn predict_row<const FINITE: bool, T: Real>(
    a: &[T],
    (ny, nx): (usize, usize),
    (j, s, phase): (usize, usize, Phase),
    out: &mut Vec<f64>,
    across: &mut Vec<f64>,
) {
    let tg = Targets::of(s, phase);
    let n = tg.cols(nx).len();
    let (col0, step) = (tg.col0, tg.col_step);
    let k0 = j * nx + col0;
    let along = |out: &mut [f64]| {
        let stencil = |t: usize| Stencil::at(col0 + t * step, nx, s);
        // Cubic but for a few targets at each end: those one by one.
        let mut lo = 0;
        while lo < n && stencil(lo) != Stencil::Cubic {
            lo += 1;
        }
        let mut hi = n;
        while hi > lo && stencil(hi - 1) != Stencil::Cubic {
            hi -= 1;
        }
        for t in (0..lo).chain(hi..n) {
            out[t] = stencil(t).apply::<FINITE, T>(a, k0 + t * step, s);
        }
        let first = k0 + lo * step;
        for (t, o) in out[lo..hi].iter_mut().enumerate() {
            *o = Stencil::Cubic.apply::<FINITE, T>(a, first + t * step, s);
        }
    };
    let across_row = |out: &mut [f64]| {
        let st = Stencil::at(j, ny, s);
        for (t, o) in out.iter_mut().enumerate() {
            *o = st.apply::<FINITE, T>(a, k0 + t * step, s * nx);
        }
    };
    out.clear();
    out.resize(n, 0.0);
    match phase {
        Phase::Horizontal => along(out),
        Phase::Vertical => across_row(out),
        Phase::Center => {
            along(out);
            across.clear();
            across.resize(n, 0.0);
            across_row(across);
            for (x, &y) in out.iter_mut().zip(across.iter()) {
                *x = (*x + y) * 0.5;
            }
        }
    }
}

struct Field<'a, T = f32> {
    u: &'a [T],
    v: &'a [T],
    ny: usize,
    nx: usize,
}

/// The field as f32 when it is: the f32-only fast paths' view.
#[inline(always)]
fn as_f32_field<'a, T: Real>(f: &Field<'a, T>) -> Option<Field<'a, f32>> {
    Some(Field {
        u: T::as_f32(f.u)?,
        v: T::as_f32(f.v)?,
        ny: f.ny,
        nx: f.nx,
    })
}

/// Would setting vertex (i, j) to (a, b) keep every incident triangle's signature?
/// The general path: any vertex, any signature.
#[inline]
fn keeps_topology<T: Real>(f: &Field<T>, sigs: &[Sig], i: usize, j: usize, a: T, b: T) -> bool {
    let k = j * f.nx + i;
    let (tris, n) = incident(f.ny, f.nx, i, j);
    tris[..n].iter().all(|&(t, idx, half)| {
        let p = idx.map(|q| if q == k { [a, b] } else { [f.u[q], f.v[q]] });
        T::classify_triangle(p, half).0 == sigs[t]
    })
}

/// The fast path for an interior vertex whose six incident triangles hold no
/// critical point (nearly every vertex). The triangles are (k, r[a], r[a+1]) over
/// the counter-clockwise ring E, NE, N, W, SW, S; their m values are the ring edge's
/// cross product (fixed while k moves) and the crosses of k with the two ring
/// vertices, so a candidate costs 12 products instead of six full signatures.
struct Ring {
    u: [f32; 6],
    v: [f32; 6],
    edge: [f64; 6],
}

impl Ring {
    /// None when the vertex is on the border or a triangle around it holds a critical point.
    #[inline]
    fn new(f: &Field, sigs: &[Sig], i: usize, j: usize) -> Option<Ring> {
        if !Ring::fits(f, sigs, i, j) {
            return None;
        }
        let k = j * f.nx + i;
        let (u, v) = (ring_of(f.u, k, f.nx), ring_of(f.v, k, f.nx));
        Some(Ring {
            u,
            v,
            edge: ring_edges(&u, &v),
        })
    }

    /// Whether (i, j) has the fast path: an interior vertex whose six
    /// triangles hold no critical point.
    #[inline(always)]
    fn fits<T>(f: &Field<T>, sigs: &[Sig], i: usize, j: usize) -> bool {
        let nx = f.nx;
        if i == 0 || j == 0 || i + 1 >= nx || j + 1 >= f.ny {
            return false;
        }
        let (tris, _) = incident_ids(f.ny, nx, i, j);
        !tris.iter().fold(false, |cp, &t| cp | sigs[t].is_cp())
    }

    /// True when no triangle of the ring holds a critical point with k at (x, y).
    #[inline]
    fn stays_free(&self, x: f32, y: f32) -> bool {
        ring_free(&self.u, &self.v, &self.edge, x, y)
    }
}

/// The ring E, NE, N, W, SW, S of interior vertex k in one component `a` of
/// a row-major field `nx` wide, read as three row slices (three bounds
/// checks, not six).
#[inline(always)]
fn ring_of(a: &[f32], k: usize, nx: usize) -> [f32; 6] {
    let [w, _, e]: [f32; 3] = a[k - 1..k + 2].try_into().unwrap();
    let [n, ne]: [f32; 2] = a[k + nx..k + nx + 2].try_into().unwrap();
    let [sw, s]: [f32; 2] = a[k - nx - 1..k - nx + 1].try_into().unwrap();
    [e, ne, n, w, sw, s]
}

/// The ring edges' cross products `u_a v_b - u_b v_a`, b the next vertex.
#[inline(always)]
fn ring_edges(u: &[f32; 6], v: &[f32; 6]) -> [f64; 6] {
    std::array::from_fn(|a| {
        let b = (a + 1) % 6;
        (u[a] as f64) * (v[b] as f64) - (u[b] as f64) * (v[a] as f64)
    })
}

/// [`Ring::stays_free`] of the ring `u, v` with edge products `edge`: every
/// triangle tested, without a branch each (the answer is one AND), so that a
/// loop over lanes vectorises.
#[inline(always)]
fn ring_free(u: &[f32; 6], v: &[f32; 6], edge: &[f64; 6], x: f32, y: f32) -> bool {
    let (x, y) = (x as f64, y as f64);
    let d: [f64; 6] = std::array::from_fn(|a| x * (v[a] as f64) - (u[a] as f64) * y);
    let mut free = true;
    for a in 0..6 {
        // Triangle (k, r[a], r[b]): m = (edge_ab, -d_b, d_a), the closed-triangle rule.
        let b = if a == 5 { 0 } else { a + 1 };
        let m = [edge[a], -d[b], d[a]];
        let finite = (m[0] + m[1] + m[2]).is_finite();
        let pos = (m[0] > 0.0) | (m[1] > 0.0) | (m[2] > 0.0);
        let neg = (m[0] < 0.0) | (m[1] < 0.0) | (m[2] < 0.0);
        free &= !finite | (pos == neg);
    }
    free
}

/// Targets per batch of [`first_tries`] (stack arrays of this many lanes).
const BATCH: usize = 16;

/// Up to `BATCH` targets with a ring, gathered for their first try: originals,
/// predictions and ring vertices, a lane each (a lane not gathered keeps what
/// an earlier batch left there, finite values: tried, never read).
#[derive(Default)]
struct Lanes {
    x: [f32; BATCH],
    y: [f32; BATCH],
    pu: [f64; BATCH],
    pw: [f64; BATCH],
    u: [[f32; BATCH]; 6],
    v: [[f32; BATCH]; 6],
}

/// Each lane's try of one bound: whether both components quantize and the
/// ring stays free ([`decide`]'s test), and the codes and reconstructions.
#[derive(Default)]
struct Tries {
    ok: [bool; BATCH],
    q: [[i32; BATCH]; 2],
    r: [[f32; BATCH]; 2],
}

/// Every lane's try of bound `eb` (positive; the originals finite): the
/// scalar formulas across lanes, so the compiler vectorises them (AVX2 where
/// the CPU has it, chosen at run time; no FMA, so the same bits).
fn first_tries(l: &Lanes, eb: f64, t: &mut Tries) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { tries_avx2(l, eb, t) };
    }
    tries_lanes(l, eb, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tries_avx2(l: &Lanes, eb: f64, t: &mut Tries) {
    tries_lanes(l, eb, t)
}

#[inline(always)]
fn tries_lanes(l: &Lanes, eb: f64, t: &mut Tries) {
    for k in 0..BATCH {
        let (oka, qa, ra) = quantize_lanes(l.x[k], l.pu[k], eb);
        let (okb, qb, rb) = quantize_lanes(l.y[k], l.pw[k], eb);
        let u = std::array::from_fn(|a| l.u[a][k]);
        let v = std::array::from_fn(|a| l.v[a][k]);
        let free = ring_free(&u, &v, &ring_edges(&u, &v), ra, rb);
        t.ok[k] = oka & okb & free;
        (t.q[0][k], t.q[1][k]) = (qa, qb);
        (t.r[0][k], t.r[1][k]) = (ra, rb);
    }
}

enum Decision<T> {
    Exact,
    Coded { id: u8, q: [i32; 2], r: [T; 2] },
}

/// The first bound id that keeps every incident triangle's signature, tried
/// from id `from` (the level's, [`LevelPlan::first_id`]) down, and not above
/// `cap` (a relative bound on both components; `+inf` for none). `FINITE`:
/// every value of `f` is.
#[allow(clippy::too_many_arguments)]
fn decide<const FINITE: bool, T: Real>(
    f: &Field<T>,
    orig: (&[T], &[T]),
    sigs: &[Sig],
    xi: f64,
    (i, j): (usize, usize),
    pred: Predictor,
    cap: f64,
    from: u32,
) -> Decision<T> {
    let k = j * f.nx + i;
    let (x, y) = (orig.0[k], orig.1[k]);
    // The first id whose bound fits under the cap for both components.
    let first = if cap == f64::INFINITY {
        Some(0)
    } else {
        let id = |c: T| id_for_bound(xi, xi.min(cap * c.to_f64().abs()));
        id(x).zip(id(y)).map(|(a, b)| a.max(b))
    };
    let Some(first) = first.map(|id| id.max(from)) else {
        return Decision::Exact;
    };
    let (pu, pw) = (pred.apply::<FINITE, T>(f.u), pred.apply::<FINITE, T>(f.v));
    // The ring's products are exact for f32 only; f64 checks each triangle.
    let ring = as_f32_field(f).and_then(|f| Ring::new(&f, sigs, i, j));
    for id in first..NUM_IDS {
        let eb = eb_of_id(xi, id);
        let (Some((qa, ra)), Some((qb, rb))) = (quantize(x, pu, eb), quantize(y, pw, eb)) else {
            continue;
        };
        let keeps = match &ring {
            Some(ring) => ring.stays_free(ra.to_f64() as f32, rb.to_f64() as f32),
            None => keeps_topology(f, sigs, i, j, ra, rb),
        };
        if keeps {
            return Decision::Coded {
                id: id as u8,
                q: [qa, qb],
                r: [ra, rb],
            };
        }
    }
    Decision::Exact
}

/// One target row's decisions (row `j` of step `s`'s `phase`) when every
/// value is finite, no vertex is capped and `xi` is positive: [`decide`]'s,
/// in the same order. The first try (id `from`, the level's first) of every
/// target with a ring runs in lanes ([`first_tries`]); it settles nearly all
/// of them, and [`decide`] takes the rest from the start.
#[allow(clippy::too_many_arguments)]
fn decide_row<T: Real>(
    f: &Field<T>,
    orig: (&[T], &[T]),
    sigs: &[Sig],
    (xi, from): (f64, u32),
    (j, s, phase): (usize, usize, Phase),
    exact: &[bool],
    out: &mut RowOut<T>,
) {
    let (ny, nx) = (f.ny, f.nx);
    let cols = Targets::of(s, phase).cols(nx);
    // The lanes are f32 kernels; f64 decides target by target.
    let (Some(f32s), Some(o0), Some(o1)) = (as_f32_field(f), T::as_f32(orig.0), T::as_f32(orig.1))
    else {
        let how = (true, |_| f64::INFINITY);
        return decide_row_each(
            f,
            orig,
            sigs,
            (xi, from),
            (j, s, phase),
            cols,
            exact,
            how,
            out,
        );
    };
    let mut cols = cols.peekable();
    let (mut lanes, mut tries) = (Lanes::default(), Tries::default());
    while cols.peek().is_some() {
        // Per lane: the column, and whether it was gathered (not exact, a ring).
        let mut at = [(0usize, false); BATCH];
        let mut n = 0;
        for (lane, i) in cols.by_ref().take(BATCH).enumerate() {
            let k = j * nx + i;
            let ring = !exact[k] && Ring::fits(f, sigs, i, j);
            at[lane] = (i, ring);
            n += 1;
            if !ring {
                continue;
            }
            let pred = Predictor::new(ny, nx, i, j, s, phase);
            (lanes.x[lane], lanes.y[lane]) = (o0[k], o1[k]);
            lanes.pu[lane] = pred.apply::<true, f32>(f32s.u);
            lanes.pw[lane] = pred.apply::<true, f32>(f32s.v);
            for (lane_of, a) in [(&mut lanes.u, f32s.u), (&mut lanes.v, f32s.v)] {
                for (side, x) in lane_of.iter_mut().zip(ring_of(a, k, nx)) {
                    side[lane] = x;
                }
            }
        }
        first_tries(&lanes, eb_of_id(xi, from), &mut tries);
        for (lane, &(i, gathered)) in at[..n].iter().enumerate() {
            let k = j * nx + i;
            let d = if exact[k] {
                Decision::Exact
            } else if gathered && tries.ok[lane] {
                Decision::Coded {
                    id: from as u8,
                    q: [tries.q[0][lane], tries.q[1][lane]],
                    r: [tries.r[0][lane], tries.r[1][lane]].map(|r| T::from_f64(r as f64)),
                }
            } else {
                let pred = Predictor::new(ny, nx, i, j, s, phase);
                decide::<true, _>(f, orig, sigs, xi, (i, j), pred, f64::INFINITY, from)
            };
            out.push(d, [orig.0[k], orig.1[k]]);
        }
    }
}

/// One target row's decisions target by target, [`decide`] each: the path
/// of fields with a non-finite value (`finite` false) or capped vertices
/// (`cap`, see [`decide`]), and the reference [`decide_row`] equals.
#[allow(clippy::too_many_arguments)]
fn decide_row_each<T: Real>(
    f: &Field<T>,
    orig: (&[T], &[T]),
    sigs: &[Sig],
    (xi, from): (f64, u32),
    (j, s, phase): (usize, usize, Phase),
    cols: impl Iterator<Item = usize>,
    exact: &[bool],
    (finite, cap): (bool, impl Fn(usize) -> f64),
    out: &mut RowOut<T>,
) {
    let (ny, nx) = (f.ny, f.nx);
    for i in cols {
        let k = j * nx + i;
        let d = if exact[k] {
            Decision::Exact
        } else {
            let pred = Predictor::new(ny, nx, i, j, s, phase);
            let (at, cap) = ((i, j), cap(k));
            if finite {
                decide::<true, _>(f, orig, sigs, xi, at, pred, cap, from)
            } else {
                decide::<false, _>(f, orig, sigs, xi, at, pred, cap, from)
            }
        };
        out.push(d, [orig.0[k], orig.1[k]]);
    }
}

/// The target rows of `t` in a row-major field `a` of width `nx`, in
/// parallel (target row m is the first `nx` values of chunk m).
fn target_rows<'a, T: Send>(
    a: &'a mut [T],
    t: &Targets,
    nx: usize,
) -> impl IndexedParallelIterator<Item = &'a mut [T]> {
    let from = (t.row0 * nx).min(a.len());
    a[from..]
        .par_chunks_mut((t.row_step * nx).max(1))
        .map(move |c| &mut c[..nx])
}

/// One row of a phase's decisions: its stream entries, and per target its
/// reconstruction (None: stored exactly).
#[derive(Default)]
struct RowOut<T> {
    ids: Vec<u32>,
    codes: Vec<u32>,
    raw: Vec<u32>,
    recon: Vec<Option<[T; 2]>>,
}

impl<T: Real> RowOut<T> {
    /// Room for `n` targets' entries, all coded (a row's pushes then never
    /// reallocate but for its exact ones' raw words).
    fn with_capacity(n: usize) -> RowOut<T> {
        RowOut {
            ids: Vec::with_capacity(n),
            codes: Vec::with_capacity(2 * n),
            raw: Vec::new(),
            recon: Vec::with_capacity(n),
        }
    }

    /// Record a decision on a target whose original is `orig`.
    #[inline(always)]
    fn push(&mut self, d: Decision<T>, orig: [T; 2]) {
        match d {
            Decision::Exact => {
                orig.iter().for_each(|x| x.push_words(&mut self.raw));
                self.recon.push(None);
            }
            Decision::Coded { id, q, r } => {
                self.ids.push(id as u32);
                self.codes.extend([zigzag(q[0]), zigzag(q[1])]);
                self.recon.push(Some(r));
            }
        }
    }

    /// Its reconstructions into `ru, rv` and its exact flags into `exact`,
    /// target by target at the indices `at`.
    fn write_back(
        &self,
        at: impl Iterator<Item = usize>,
        (ru, rv): (&mut [T], &mut [T]),
        exact: &mut [bool],
    ) {
        for (k, r) in at.zip(&self.recon) {
            match r {
                Some([a, b]) => (ru[k], rv[k]) = (*a, *b),
                None => exact[k] = true,
            }
        }
    }

    /// Its stream entries, after those in `parts`.
    fn append_to(&self, parts: &mut Parts) {
        parts.ids.extend_from_slice(&self.ids);
        parts.codes.extend_from_slice(&self.codes);
        parts.raw.extend_from_slice(&self.raw);
    }
}

pub fn encode<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
) -> Parts {
    encode_capped(u, v, ny, nx, xi, chunk_of_larger, None)
}

/// [`encode`] with a cap on each vertex's relative bound (`halo::BlockWithRing::caps`).
pub fn encode_capped<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
    caps: Option<&[f64]>,
) -> Parts {
    let plan = plan::choose(u, v, ny, nx, xi);
    encode_planned(u, v, ny, nx, xi, chunk_of_larger, caps, plan)
}

/// [`encode_capped`] under a given level plan (the GPU's twin takes the same).
#[allow(clippy::too_many_arguments)]
pub fn encode_planned<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
    caps: Option<&[f64]>,
    plan: LevelPlan,
) -> Parts {
    let cap = |k: usize| caps.map_or(f64::INFINITY, |c| c[k]);
    let (mut exact, sigs) = forced_exact_and_signatures(u, v, ny, nx, chunk_of_larger);
    let (mut ru, mut rv) = (u.to_vec(), v.to_vec());
    // Reconstructions are finite (quantize checks), so with finite originals
    // every value a prediction reads is.
    let finite = u.iter().chain(v).all(|x| x.is_finite());
    let mut parts = Parts::default();
    // Anchors, in raster order, each predicted from the anchors before it.
    let from = plan.first_id(STRIDE);
    for j in (0..ny).step_by(STRIDE) {
        for i in (0..nx).step_by(STRIDE) {
            let k = j * nx + i;
            let d = if exact[k] {
                Decision::Exact
            } else {
                let f = Field {
                    u: &ru,
                    v: &rv,
                    ny,
                    nx,
                };
                let pred = Predictor::anchor(nx, i, j);
                decide::<false, _>(&f, (u, v), &sigs, xi, (i, j), pred, cap(k), from)
            };
            let mut one = RowOut::default();
            one.push(d, [u[k], v[k]]);
            one.append_to(&mut parts);
            one.write_back(std::iter::once(k), (&mut ru, &mut rv), &mut exact);
        }
    }
    for (s, phase) in schedule() {
        let t = Targets::of(s, phase);
        let rows: Vec<usize> = t.rows(ny).collect();
        let from = plan.first_id(s);
        // Each row decided in parallel from the same state (targets read
        // only vertices no target of this phase writes), with its stream
        // entries; then the entries in row order, and the reconstructions
        // written back row by row in parallel.
        let decided: Vec<RowOut<T>> = {
            let f = Field {
                u: &ru,
                v: &rv,
                ny,
                nx,
            };
            let exact = &exact;
            rows.par_iter()
                .map(|&j| {
                    let mut out = RowOut::with_capacity(t.cols(nx).len());
                    let at = (j, s, phase);
                    if finite && caps.is_none() && xi > 0.0 {
                        decide_row(&f, (u, v), &sigs, (xi, from), at, exact, &mut out);
                    } else {
                        let how = (finite, &cap);
                        decide_row_each(
                            &f,
                            (u, v),
                            &sigs,
                            (xi, from),
                            at,
                            t.cols(nx),
                            exact,
                            how,
                            &mut out,
                        );
                    }
                    out
                })
                .collect()
        };
        for row in &decided {
            row.append_to(&mut parts);
        }
        target_rows(&mut ru, &t, nx)
            .zip(target_rows(&mut rv, &t, nx))
            .zip(target_rows(&mut exact, &t, nx))
            .zip(&decided)
            .for_each(|(((ru, rv), ex), row)| row.write_back(t.cols(nx), (ru, rv), ex));
    }
    parts.exact = exact;
    parts
}

/// One vertex from the streams: its exact value or its reconstruction from
/// the predictions `(pu, pw)`. `r` counts raw words, `c` coded vertices
/// (ranges were checked against the mask).
#[inline]
fn decode_one<T: Real>(
    parts: &Parts,
    xi: f64,
    k: usize,
    (pu, pw): (f64, f64),
    (r, c): (&mut usize, &mut usize),
) -> [T; 2] {
    if parts.exact[k] {
        let w = T::WORDS;
        *r += 2 * w;
        let at = *r - 2 * w;
        [
            T::from_words(&parts.raw[at..at + w]),
            T::from_words(&parts.raw[at + w..at + 2 * w]),
        ]
    } else {
        let eb = eb_of_id(xi, parts.ids[*c]);
        *c += 1;
        [
            reconstruct(pu, eb, unzigzag(parts.codes[2 * *c - 2])),
            reconstruct(pw, eb, unzigzag(parts.codes[2 * *c - 1])),
        ]
    }
}

pub fn decode<T: Real>(
    parts: &Parts,
    ny: usize,
    nx: usize,
    xi: f64,
    u: &mut [T],
    v: &mut [T],
) -> Result<()> {
    decode_reads(parts, ny, nx, xi, u, v, true)
}

/// [`decode`]; `untested`: let phases whose inputs are all finite skip
/// `predictor_input`'s test (false: test every read, the reference).
fn decode_reads<T: Real>(
    parts: &Parts,
    ny: usize,
    nx: usize,
    xi: f64,
    u: &mut [T],
    v: &mut [T],
    untested: bool,
) -> Result<()> {
    let n_exact = parts.exact.iter().filter(|&&e| e).count();
    let n_coded = ny * nx - n_exact;
    if parts.raw.len() != 2 * T::WORDS * n_exact
        || parts.codes.len() != 2 * n_coded
        || parts.ids.len() != n_coded
    {
        return Err(Error::corrupt(
            "mode S stream: value counts do not match the exact-vertex mask",
        ));
    }
    if parts.ids.iter().any(|&id| id >= NUM_IDS) {
        return Err(Error::corrupt("mode S stream has an out-of-range bound id"));
    }
    let (mut r_at, mut c_at) = (0usize, 0usize);
    for j in (0..ny).step_by(STRIDE) {
        for i in (0..nx).step_by(STRIDE) {
            let k = j * nx + i;
            let pred = Predictor::anchor(nx, i, j);
            let p = (pred.apply::<false, T>(u), pred.apply::<false, T>(v));
            let val = decode_one(parts, xi, k, p, (&mut r_at, &mut c_at));
            u[k] = val[0];
            v[k] = val[1];
        }
    }
    // Whether every vertex decided so far is finite: a phase reads only
    // vertices decided before it, so while this holds its predictions can
    // skip `predictor_input`'s test (a crafted stream may still decode an
    // infinity; from then on every read is tested, as the encoder's were).
    let mut finite = untested
        && (0..ny)
            .step_by(STRIDE)
            .flat_map(|j| (0..nx).step_by(STRIDE).map(move |i| j * nx + i))
            .all(|k| u[k].is_finite() && v[k].is_finite());
    for (s, phase) in schedule() {
        let t = Targets::of(s, phase);
        // Each row's start in the raw and code streams, from the mask (its
        // exact targets counted in parallel).
        let target_rows_j: Vec<usize> = t.rows(ny).collect();
        let n_exact: Vec<usize> = target_rows_j
            .par_iter()
            .map(|&j| t.cols(nx).filter(|&i| parts.exact[j * nx + i]).count())
            .collect();
        let n_tg = t.cols(nx).len();
        let rows: Vec<(usize, usize, usize)> = target_rows_j
            .iter()
            .zip(&n_exact)
            .map(|(&j, &n_ex)| {
                let start = (j, r_at, c_at);
                r_at += 2 * T::WORDS * n_ex;
                c_at += n_tg - n_ex;
                start
            })
            .collect();
        let values: Vec<Vec<[T; 2]>> = {
            let (u, v) = (&*u, &*v);
            rows.par_iter()
                .map_init(
                    <(Vec<f64>, Vec<f64>, Vec<f64>)>::default,
                    |(pu, pw, across), &(j, mut r, mut c)| {
                        let at = (j, s, phase);
                        if finite {
                            predict_row::<true, T>(u, (ny, nx), at, pu, across);
                            predict_row::<true, T>(v, (ny, nx), at, pw, across);
                        } else {
                            predict_row::<false, T>(u, (ny, nx), at, pu, across);
                            predict_row::<false, T>(v, (ny, nx), at, pw, across);
                        }
                        t.cols(nx)
                            .zip(pu.iter().zip(pw.iter()))
                            .map(|(i, (&a, &b))| {
                                decode_one(parts, xi, j * nx + i, (a, b), (&mut r, &mut c))
                            })
                            .collect()
                    },
                )
                .collect()
        };
        // Written back row by row in parallel; whether all were finite.
        finite &= target_rows(u, &t, nx)
            .zip(target_rows(v, &t, nx))
            .zip(&values)
            .map(|((u, v), row)| {
                let mut all = true;
                for (i, val) in t.cols(nx).zip(row) {
                    (u[i], v[i]) = (val[0], val[1]);
                    all &= val[0].is_finite() & val[1].is_finite();
                }
                all
            })
            .reduce(|| true, |a, b| a & b);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes' first try decides every target as [`decide_row_each`] does:
    /// same stream entries and reconstructions, on bounds where the first
    /// try nearly always holds and where it often fails (border, critical
    /// points and exact vertices included).
    #[test]
    fn row_in_lanes_decides_as_decide() {
        let (ny, nx) = (41, 67);
        let mut s = 7u64;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 20_000) as f32 / 1000.0 - 10.0
        };
        let u: Vec<f32> = (0..ny * nx).map(|_| rnd()).collect();
        let v: Vec<f32> = (0..ny * nx).map(|_| rnd()).collect();
        let (exact, sigs) = forced_exact_and_signatures(&u, &v, ny, nx, true);
        assert!(exact.iter().any(|&e| e) && sigs.iter().any(|s| s.is_cp()));
        let f = Field {
            u: &u,
            v: &v,
            ny,
            nx,
        };
        let (mut first_ok, mut first_failed) = (0, 0);
        for xi in [1e-4, 1e-2, 0.3, 3.0, 100.0] {
            for (step, phase) in schedule() {
                let t = Targets::of(step, phase);
                for j in t.rows(ny) {
                    let mut lanes = RowOut::default();
                    decide_row(
                        &f,
                        (&u, &v),
                        &sigs,
                        (xi, 0),
                        (j, step, phase),
                        &exact,
                        &mut lanes,
                    );
                    let mut one = RowOut::default();
                    let at = (j, step, phase);
                    let how = (true, |_| f64::INFINITY);
                    decide_row_each(
                        &f,
                        (&u, &v),
                        &sigs,
                        (xi, 0),
                        at,
                        t.cols(nx),
                        &exact,
                        how,
                        &mut one,
                    );
                    // Targets the first try settled, and the others decide took.
                    let decided = t.cols(nx).filter(|&i| !exact[j * nx + i]).count();
                    let settled = one.ids.iter().filter(|&&id| id == 0).count();
                    (first_ok, first_failed) =
                        (first_ok + settled, first_failed + decided - settled);
                    assert_eq!(
                        (lanes.ids, lanes.codes, lanes.raw),
                        (one.ids, one.codes, one.raw)
                    );
                    let bits = |r: &[Option<[f32; 2]>]| -> Vec<_> {
                        r.iter().map(|r| r.map(|r| r.map(f32::to_bits))).collect()
                    };
                    assert_eq!(bits(&lanes.recon), bits(&one.recon));
                }
            }
        }
        assert!(
            first_ok > 1000 && first_failed > 1000,
            "{first_ok} {first_failed}"
        );
    }

    /// Decoding with untested reads gives the reference's bits: on fields
    /// with NaN and infinities (stored exactly, decided mid-schedule), and on
    /// a crafted stream whose reconstructions overflow to infinity.
    #[test]
    fn row_predictions_are_each_targets_bit_for_bit() {
        // The decoder's row at a time against the encoder's target at a
        // time, every phase and row, on shapes where rows end in every
        // stencil (and fields too small for cubic ones), with and without
        // non-finite reads.
        for (ny, nx) in [(1, 1), (2, 3), (7, 5), (37, 45), (64, 70), (300, 9)] {
            let wave = |k: usize| ((k * 7919) % 1000) as f32 / 100.0 - 5.0;
            let mut a: Vec<f32> = (0..ny * nx).map(wave).collect();
            let bits = |x: &[f64]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let (mut got, mut across) = (Vec::new(), Vec::new());
            for finite in [true, false] {
                if !finite && a.len() > 20 {
                    a[ny * nx / 2] = f32::NAN;
                    a[7] = f32::INFINITY;
                }
                for (s, phase) in schedule() {
                    let t = Targets::of(s, phase);
                    for j in t.rows(ny) {
                        let at = (j, s, phase);
                        let want: Vec<f64> = t
                            .cols(nx)
                            .map(|i| Predictor::new(ny, nx, i, j, s, phase).apply::<false, _>(&a))
                            .collect();
                        if finite {
                            predict_row::<true, f32>(&a, (ny, nx), at, &mut got, &mut across);
                        } else {
                            predict_row::<false, f32>(&a, (ny, nx), at, &mut got, &mut across);
                        }
                        assert_eq!(bits(&got), bits(&want), "{ny}x{nx} {s} {phase:?} row {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn untested_reads_decode_as_tested_ones() {
        let (ny, nx) = (37, 45);
        let wave = |k: usize| ((k * 7919) % 1000) as f32 / 100.0 - 5.0;
        let mut u: Vec<f32> = (0..ny * nx).map(wave).collect();
        let v: Vec<f32> = (0..ny * nx).map(|k| wave(k + 13) * 3e37).collect();
        u[300] = f32::NAN;
        u[901] = f32::INFINITY;
        let xi = 1e33;
        let mut parts = encode(&u, &v, ny, nx, xi, false);
        let decoded = |parts: &Parts, untested: bool| {
            let (mut a, mut b) = (vec![0.0f32; ny * nx], vec![0.0f32; ny * nx]);
            decode_reads(parts, ny, nx, xi, &mut a, &mut b, untested).unwrap();
            let bits = |x: &[f32]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            (bits(&a), bits(&b))
        };
        assert_eq!(decoded(&parts, true), decoded(&parts, false));
        // Codes that push v past f32's range: infinities mid-schedule.
        let mut crafted = 0;
        for c in parts.codes.iter_mut().skip(1).step_by(2).step_by(5) {
            *c = zigzag(1 << 20);
            crafted += 1;
        }
        assert!(crafted > 10);
        let (_, b) = decoded(&parts, false);
        assert!(
            b.iter().any(|&x| f32::from_bits(x).is_infinite()),
            "a test that overflows"
        );
        assert_eq!(decoded(&parts, true), decoded(&parts, false));
    }
}
