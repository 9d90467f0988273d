//! Mode B's Lorenzo quantization of one tile, an anti-diagonal at a time.
//!
//! Lorenzo predicts a vertex from its west, north and north-west neighbours'
//! reconstructions, so the vertices of one anti-diagonal (`ii + jb = d`) need
//! only diagonals `d - 1` and `d - 2`. Held skewed (each diagonal contiguous),
//! a diagonal is one loop without a branch that the compiler vectorises
//! (AVX2 where the CPU has it, chosen at run time), prediction, quantization
//! and reconstruction included. Every vertex gets the same code and value, bit
//! for bit, as one at a time: the formulas are `quantize`'s, and a vertex
//! still reads its neighbours' final values.
//!
//! Slot `(d + 2) * SLOTS + jb + 1` holds vertex `(d - jb, jb)`. A diagonal's
//! loop runs over whole groups of [`LANES`] slots, so it never ends in a
//! scalar remainder: it also computes slots of no vertex of the tile, which no
//! vertex of the tile reads. What the tile's vertices do read outside it is the
//! zero border: slot 0 of each diagonal (row -1, never computed), slot
//! `d + 1` of diagonal d (column -1: computed, but from a zero original that
//! may not be coded, so it stays 0) and the two diagonals before diagonal 0.
//! So one zeroed buffer serves tile after tile, whatever their widths.

use super::blockwise::TILE;
use super::quantize::{predictor_input, quantize_lanes, reconstruct};
use crate::codec::{unzigzag, zigzag};
use crate::cpu::has_avx2;
use crate::real::Real;

/// Slots per diagonal: the zero of row -1, then one per tile row.
const SLOTS: usize = TILE + 1;
/// Two zero diagonals, then a tile's `2 TILE - 1`.
const LEN: usize = (2 * TILE + 1) * SLOTS;
/// A diagonal's loop covers whole groups of this many rows (AVX2's f64
/// lanes; TILE is a multiple).
const LANES: usize = 4;

#[inline(always)]
fn slot(ii: usize, jb: usize) -> usize {
    (ii + jb + 2) * SLOTS + jb + 1
}

/// The slots diagonal `d`'s loop covers in a tile `w` wide and `rows` high:
/// its vertices' rows, widened to whole groups of [`LANES`] (within rows
/// 0..TILE): the first slot and the count.
#[inline(always)]
fn diagonal(d: usize, w: usize, rows: usize) -> (usize, usize) {
    let lo = d.saturating_sub(w - 1) / LANES * LANES;
    let hi = (d.min(rows - 1) + 1).div_ceil(LANES) * LANES;
    ((d + 2) * SLOTS + lo + 1, hi - lo)
}

/// Lorenzo's inputs for the `n` slots of a diagonal from slot `at` (west,
/// north, north-west), and those slots, to write.
#[inline(always)]
fn split(inputs: &mut [f64], at: usize, n: usize) -> ([&[f64]; 3], &mut [f64]) {
    let (past, now) = inputs.split_at_mut(at);
    let past = &*past;
    (
        [
            &past[at - SLOTS..][..n],
            &past[at - SLOTS - 1..][..n],
            &past[at - 2 * SLOTS - 1..][..n],
        ],
        &mut now[..n],
    )
}

/// Lorenzo's prediction from (west, north, north-west). Where a neighbour is
/// outside the tile, adding its zero can only turn a -0 prediction into +0,
/// which neither the code nor the reconstruction can tell (x - (-0) == x - 0
/// and -0 + 2 eb q == +0 + 2 eb q for every q).
#[inline(always)]
fn lorenzo(w: f64, n: f64, nw: f64) -> f64 {
    (w + n) - nw
}

/// A diagonal kernel, `#[inline(always)]`, and two callers of it that are
/// not inlined: `$avx2` compiled for AVX2 (no FMA: Rust never fuses, so the
/// arithmetic is the scalar one's) and `$plain` for any CPU. Each slice is
/// its own argument of a call that is not inlined: only so does the compiler
/// know they do not overlap and vectorise the loop without run-time checks
/// (inlined, or with the slices in arrays, the loops stayed scalar).
macro_rules! kernel {
    ($(#[$doc:meta])* fn $name:ident, $avx2:ident, $plain:ident
        <$t:ident>($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$doc])*
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        fn $name<$t: Real>($($arg: $ty),*) $body

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        #[inline(never)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $avx2<$t: Real>($($arg: $ty),*) {
            $name($($arg),*)
        }

        #[inline(never)]
        #[allow(clippy::too_many_arguments)]
        fn $plain<$t: Real>($($arg: $ty),*) {
            $name($($arg),*)
        }
    };
}

/// The encoder's tile: originals in, codes out.
pub(super) struct EncodeTile<T> {
    /// Predictor inputs of the reconstructions (u, v).
    inputs: [Vec<f64>; 2],
    x: [Vec<T>; 2],
    /// Whether the vertex's ids let it be coded at the tile's bounds.
    allowed: Vec<bool>,
    /// Whether it was coded (else it is stored exactly), and its codes.
    coded: Vec<bool>,
    code: [Vec<u32>; 2],
}

impl<T: Real> EncodeTile<T> {
    pub fn new() -> Self {
        EncodeTile {
            inputs: [vec![0.0; LEN], vec![0.0; LEN]],
            x: [vec![T::default(); LEN], vec![T::default(); LEN]],
            allowed: vec![false; LEN],
            coded: vec![false; LEN],
            code: [vec![0; LEN], vec![0; LEN]],
        }
    }

    /// Vertex (ii, jb)'s values, and whether its ids allow coding it.
    #[inline(always)]
    pub fn load(&mut self, ii: usize, jb: usize, [u, v]: [T; 2], allowed: bool) {
        let s = slot(ii, jb);
        (self.x[0][s], self.x[1][s], self.allowed[s]) = (u, v, allowed);
    }

    /// Vertex (ii, jb)'s codes, None where it is stored exactly.
    #[inline(always)]
    pub fn codes(&self, ii: usize, jb: usize) -> Option<[u32; 2]> {
        let s = slot(ii, jb);
        self.coded[s].then(|| [self.code[0][s], self.code[1][s]])
    }

    /// Quantize the loaded `w` x `rows` tile under bounds `eb` (u, v): a
    /// vertex is coded where its ids allow and both components quantize,
    /// else stored exactly (and predicts from its own values).
    pub fn quantize(&mut self, w: usize, rows: usize, eb: [f64; 2]) {
        self.quantize_with(w, rows, eb, has_avx2())
    }

    /// [`EncodeTile::quantize`], in the AVX2 form or not.
    fn quantize_with(&mut self, w: usize, rows: usize, [eu, ev]: [f64; 2], avx2: bool) {
        let [iu, iv] = &mut self.inputs;
        let [cu, cv] = &mut self.code;
        for d in 0..w + rows - 1 {
            let (at, n) = diagonal(d, w, rows);
            let ([wu, nu, nwu], ou) = split(iu, at, n);
            let ([wv, nv, nwv], ov) = split(iv, at, n);
            let (xu, xv) = (&self.x[0][at..][..n], &self.x[1][at..][..n]);
            let (allowed, coded) = (&self.allowed[at..][..n], &mut self.coded[at..][..n]);
            let (cu, cv) = (&mut cu[at..][..n], &mut cv[at..][..n]);
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: the CPU has AVX2 (`has_avx2`).
                unsafe {
                    quantize_avx2(
                        wu, nu, nwu, wv, nv, nwv, xu, xv, allowed, eu, ev, ou, ov, coded, cu, cv,
                    )
                };
                continue;
            }
            quantize_plain(
                wu, nu, nwu, wv, nv, nwv, xu, xv, allowed, eu, ev, ou, ov, coded, cu, cv,
            );
        }
    }
}

kernel! {
/// One diagonal of [`EncodeTile::quantize`]: Lorenzo inputs and originals
/// (u, v), whether ids allow coding, bounds; out: predictor inputs, whether
/// coded, codes.
fn quantize_diagonal, quantize_avx2, quantize_plain <T>(
    wu: &[f64],
    nu: &[f64],
    nwu: &[f64],
    wv: &[f64],
    nv: &[f64],
    nwv: &[f64],
    xu: &[T],
    xv: &[T],
    allowed: &[bool],
    eu: f64,
    ev: f64,
    ou: &mut [f64],
    ov: &mut [f64],
    coded: &mut [bool],
    cu: &mut [u32],
    cv: &mut [u32],
) {
    let n = coded.len();
    let (wu, nu, nwu, wv, nv, nwv) = (&wu[..n], &nu[..n], &nwu[..n], &wv[..n], &nv[..n], &nwv[..n]);
    let (xu, xv, allowed, ou, ov) = (
        &xu[..n],
        &xv[..n],
        &allowed[..n],
        &mut ou[..n],
        &mut ov[..n],
    );
    let (cu, cv) = (&mut cu[..n], &mut cv[..n]);
    // (`quantize` refuses a bound that is not positive; ids give one.)
    let positive = eu > 0.0 && ev > 0.0;
    for t in 0..n {
        let (oku, qu, ru) = quantize_lanes(xu[t], lorenzo(wu[t], nu[t], nwu[t]), eu);
        let (okv, qv, rv) = quantize_lanes(xv[t], lorenzo(wv[t], nv[t], nwv[t]), ev);
        let ok = allowed[t] & positive & oku & okv;
        ou[t] = predictor_input(if ok { ru } else { xu[t] });
        ov[t] = predictor_input(if ok { rv } else { xv[t] });
        (coded[t], cu[t], cv[t]) = (ok, zigzag(qu), zigzag(qv));
    }
}
}

/// The decoder's tile: exact values and codes in, reconstructions out.
pub(super) struct DecodeTile<T> {
    inputs: [Vec<f64>; 2],
    value: [Vec<T>; 2],
    coded: Vec<bool>,
    code: [Vec<u32>; 2],
}

impl<T: Real> DecodeTile<T> {
    pub fn new() -> Self {
        DecodeTile {
            inputs: [vec![0.0; LEN], vec![0.0; LEN]],
            value: [vec![T::default(); LEN], vec![T::default(); LEN]],
            coded: vec![false; LEN],
            code: [vec![0; LEN], vec![0; LEN]],
        }
    }

    /// Vertex (ii, jb) stored exactly as `[u, v]`.
    #[inline(always)]
    pub fn load_exact(&mut self, ii: usize, jb: usize, [u, v]: [T; 2]) {
        let s = slot(ii, jb);
        (self.value[0][s], self.value[1][s]) = (u, v);
        self.inputs[0][s] = predictor_input(u);
        self.inputs[1][s] = predictor_input(v);
        self.coded[s] = false;
    }

    /// Vertex (ii, jb) coded as `[cu, cv]` (zigzagged).
    #[inline(always)]
    pub fn load_codes(&mut self, ii: usize, jb: usize, [cu, cv]: [u32; 2]) {
        let s = slot(ii, jb);
        (self.code[0][s], self.code[1][s], self.coded[s]) = (cu, cv, true);
    }

    /// Row jb's values, once reconstructed, into `u` and `v` (from column 0).
    #[inline(always)]
    pub fn store_row(&self, jb: usize, u: &mut [T], v: &mut [T]) {
        let s = slot(0, jb);
        let slots = self.value[0][s..]
            .iter()
            .step_by(SLOTS)
            .zip(self.value[1][s..].iter().step_by(SLOTS));
        for ((u, v), (&ru, &rv)) in u.iter_mut().zip(v.iter_mut()).zip(slots) {
            (*u, *v) = (ru, rv);
        }
    }

    /// Reconstruct every coded vertex of the loaded `w` x `rows` tile under
    /// bounds `eb` (u, v).
    pub fn reconstruct(&mut self, w: usize, rows: usize, eb: [f64; 2]) {
        self.reconstruct_with(w, rows, eb, has_avx2())
    }

    /// [`DecodeTile::reconstruct`], in the AVX2 form or not.
    fn reconstruct_with(&mut self, w: usize, rows: usize, [eu, ev]: [f64; 2], avx2: bool) {
        let [iu, iv] = &mut self.inputs;
        let [vu, vv] = &mut self.value;
        for d in 0..w + rows - 1 {
            let (at, n) = diagonal(d, w, rows);
            let ([wu, nu, nwu], ou) = split(iu, at, n);
            let ([wv, nv, nwv], ov) = split(iv, at, n);
            let coded = &self.coded[at..][..n];
            let (cu, cv) = (&self.code[0][at..][..n], &self.code[1][at..][..n]);
            let (vu, vv) = (&mut vu[at..][..n], &mut vv[at..][..n]);
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: the CPU has AVX2 (`has_avx2`).
                unsafe {
                    reconstruct_avx2(
                        wu, nu, nwu, wv, nv, nwv, coded, cu, cv, eu, ev, ou, ov, vu, vv,
                    )
                };
                continue;
            }
            reconstruct_plain(
                wu, nu, nwu, wv, nv, nwv, coded, cu, cv, eu, ev, ou, ov, vu, vv,
            );
        }
    }
}

kernel! {
/// One diagonal of [`DecodeTile::reconstruct`]: coded slots get their
/// reconstruction, exact ones keep what was loaded.
fn reconstruct_diagonal, reconstruct_avx2, reconstruct_plain <T>(
    wu: &[f64],
    nu: &[f64],
    nwu: &[f64],
    wv: &[f64],
    nv: &[f64],
    nwv: &[f64],
    coded: &[bool],
    cu: &[u32],
    cv: &[u32],
    eu: f64,
    ev: f64,
    ou: &mut [f64],
    ov: &mut [f64],
    vu: &mut [T],
    vv: &mut [T],
) {
    let n = coded.len();
    let (wu, nu, nwu, wv, nv, nwv) = (&wu[..n], &nu[..n], &nwu[..n], &wv[..n], &nv[..n], &nwv[..n]);
    let (cu, cv, ou, ov, vu, vv) = (
        &cu[..n],
        &cv[..n],
        &mut ou[..n],
        &mut ov[..n],
        &mut vu[..n],
        &mut vv[..n],
    );
    for t in 0..n {
        let c = coded[t];
        let ru: T = reconstruct(lorenzo(wu[t], nu[t], nwu[t]), eu, unzigzag(cu[t]));
        let rv: T = reconstruct(lorenzo(wv[t], nv[t], nwv[t]), ev, unzigzag(cv[t]));
        vu[t] = if c { ru } else { vu[t] };
        vv[t] = if c { rv } else { vv[t] };
        ou[t] = if c { predictor_input(ru) } else { ou[t] };
        ov[t] = if c { predictor_input(rv) } else { ov[t] };
    }
}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::quantize::quantize;

    /// One vertex at a time in row order, the outside of the tile 0: codes
    /// (None: exact) and the values a decoder ends with.
    #[allow(clippy::type_complexity)]
    fn reference<T: Real>(
        x: &[[T; 2]],
        allowed: &[bool],
        w: usize,
        eb: [f64; 2],
    ) -> (Vec<Option<[u32; 2]>>, Vec<[T; 2]>) {
        let mut p = vec![[0.0f64; 2]; x.len()];
        let (mut codes, mut values) = (vec![], vec![]);
        for k in 0..x.len() {
            let (ii, jb) = (k % w, k / w);
            let at = |i: usize, j: usize, c: usize| p[j * w + i][c];
            let pred = [0, 1].map(|c| {
                let west = if ii > 0 { at(ii - 1, jb, c) } else { 0.0 };
                let north = if jb > 0 { at(ii, jb - 1, c) } else { 0.0 };
                let nw = if ii > 0 && jb > 0 {
                    at(ii - 1, jb - 1, c)
                } else {
                    0.0
                };
                (west + north) - nw
            });
            let q = if allowed[k] {
                quantize(x[k][0], pred[0], eb[0]).zip(quantize(x[k][1], pred[1], eb[1]))
            } else {
                None
            };
            let r = q.map_or(x[k], |((_, ru), (_, rv))| [ru, rv]);
            p[k] = r.map(predictor_input);
            codes.push(q.map(|((cu, _), (cv, _))| [zigzag(cu), zigzag(cv)]));
            values.push(r);
        }
        (codes, values)
    }

    fn lcg(s: &mut u64) -> f64 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Tiles of every shape in turn through one encoder and one decoder (so
    /// a narrow tile after a wide one finds the wide one's slots), values
    /// with NaN, infinities and jumps, ids that forbid coding, bounds too
    /// tight to code: codes and decoded values bit for bit the reference's,
    /// in both compiled forms.
    fn matches_the_reference<T: Real>() {
        let shapes = [
            (32, 32),
            (7, 32),
            (32, 32),
            (1, 5),
            (32, 3),
            (13, 17),
            (1, 1),
            (32, 32),
            (5, 1),
        ];
        for avx2 in [false, has_avx2()] {
            let (mut enc, mut dec) = (EncodeTile::<T>::new(), DecodeTile::<T>::new());
            let mut seed = 7u64;
            for (round, &(w, rows)) in shapes.iter().cycle().take(27).enumerate() {
                let n = w * rows;
                let x: Vec<[T; 2]> = (0..n)
                    .map(|k| {
                        [0, 1].map(|c| {
                            let r = lcg(&mut seed);
                            let smooth =
                                ((k % w) as f64 * 0.3 + (k / w) as f64 * 0.2 + c as f64).sin();
                            T::from_f64(match (r * 200.0) as u32 {
                                0 => f64::NAN,
                                1 => f64::INFINITY,
                                2 => 1e30,
                                _ => smooth * 10.0 + r * 1e-3,
                            })
                        })
                    })
                    .collect();
                let allowed: Vec<bool> = (0..n).map(|_| lcg(&mut seed) > 0.05).collect();
                let eb = match round % 3 {
                    0 => [1e-3, 4e-4],
                    1 => [1e-2, 1e-9],
                    _ => [2.0f64.powi(-30), 0.5],
                };
                let (codes, values) = reference(&x, &allowed, w, eb);
                for k in 0..n {
                    enc.load(k % w, k / w, x[k], allowed[k]);
                }
                enc.quantize_with(w, rows, eb, avx2);
                for k in 0..n {
                    let (ii, jb) = (k % w, k / w);
                    let got = enc.codes(ii, jb);
                    assert_eq!(got, codes[k], "round {round} ({w} x {rows}) vertex {k}");
                    match codes[k] {
                        Some(c) => dec.load_codes(ii, jb, c),
                        None => dec.load_exact(ii, jb, x[k]),
                    }
                }
                dec.reconstruct_with(w, rows, eb, avx2);
                let (mut ru, mut rv) = (vec![T::default(); w], vec![T::default(); w]);
                for jb in 0..rows {
                    dec.store_row(jb, &mut ru, &mut rv);
                    for ii in 0..w {
                        let k = jb * w + ii;
                        let got = [ru[ii], rv[ii]].map(|v| v.to_bits64());
                        assert_eq!(
                            got,
                            values[k].map(|v| v.to_bits64()),
                            "round {round} vertex {k}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn diagonals_match_one_vertex_at_a_time_f32() {
        matches_the_reference::<f32>();
    }

    #[test]
    fn diagonals_match_one_vertex_at_a_time_f64() {
        matches_the_reference::<f64>();
    }
}
