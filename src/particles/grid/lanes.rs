//! The pair walk's innermost loop, one row's squared distances and window
//! test, in AVX2 lanes where the CPU has them (asked once per walk).
//!
//! The scalar loop (`Wide::dist2s`, then `near`) stays the reference, and
//! the lanes give the same bits: each distance is the same f64 differences,
//! products and two sums in the same order (no fused multiply-add), and the
//! test is the same (NaN kept). The lanes win by testing four candidates in
//! one compare and writing their hit offsets with one store from a table,
//! without the scalar loop's carried dependency on the hit count: the test
//! was as costly as the distances, and most rows are short (14 candidates on
//! average on a dense set at rel 1e-4).

use super::{near, Wide};
use std::ops::Range;

/// Writes row `others` of the walk from `fixed` into `d2` (`d2[o]` for
/// `others.start + o`; `d2` may be left longer than the row) and its hit
/// offsets, ascending, into `hits[..m]`; returns m.
pub(super) type RowFn =
    fn(&Wide, usize, Range<usize>, f64, f64, &mut Vec<f64>, &mut Vec<u32>) -> usize;

/// The fastest [`RowFn`] this CPU runs.
pub(super) fn row_fn() -> RowFn {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx2() {
        // SAFETY: the CPU has AVX2.
        return |w, p, r, lo, hi, d2, hits| unsafe { avx2::row(w, p, r, lo, hi, d2, hits) };
    }
    scalar
}

/// The reference: [`Wide::dist2s`], then [`near`].
pub(super) fn scalar(
    w: &Wide,
    fixed: usize,
    others: Range<usize>,
    min2: f64,
    reach2: f64,
    d2: &mut Vec<f64>,
    hits: &mut Vec<u32>,
) -> usize {
    w.dist2s(fixed, others, d2);
    near(d2, min2, reach2, hits)
}

/// Per 4-bit lane mask (a `movemask` of four f64 lanes): the lanes set in
/// it, first, as 32-bit lane indices and as pairs of them (a 64-bit lane's
/// halves, for a permute of 32-bit lanes), and how many. The lane kernels
/// (here and `safe::live`) write what a mask keeps with one store from it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub struct Pack {
    pub lanes: [u32; 4],
    pub halves: [u32; 8],
    pub count: usize,
}

/// [`Pack`] of each 4-bit mask.
#[cfg(target_arch = "x86_64")]
pub const PACK: [Pack; 16] = {
    let mut t = [Pack {
        lanes: [0; 4],
        halves: [0; 8],
        count: 0,
    }; 16];
    let mut mask = 0;
    while mask < 16 {
        let mut n = 0;
        let mut lane = 0;
        while lane < 4 {
            if mask >> lane & 1 == 1 {
                t[mask].lanes[n] = lane as u32;
                t[mask].halves[2 * n] = 2 * lane as u32;
                t[mask].halves[2 * n + 1] = 2 * lane as u32 + 1;
                n += 1;
            }
            lane += 1;
        }
        t[mask].count = n;
        mask += 1;
    }
    t
};

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Range, Wide, PACK};
    use std::arch::x86_64::*;

    /// [`super::RowFn`] in 4-lane f64 AVX2.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn row(
        w: &Wide,
        fixed: usize,
        others: Range<usize>,
        min2: f64,
        reach2: f64,
        d2: &mut Vec<f64>,
        hits: &mut Vec<u32>,
    ) -> usize {
        let n = others.len();
        let lanes = n.div_ceil(4) * 4;
        // The padding keeps the last group's loads inside each axis.
        assert!(others.start + lanes <= w.x.len());
        assert!(w.y.len() == w.x.len() && w.z.len() == w.x.len());
        if d2.len() < lanes {
            d2.resize(lanes, 0.0);
        }
        if hits.len() < lanes {
            hits.resize(lanes, 0);
        }
        let (x, y, z) = (
            w.x.as_ptr().add(others.start),
            w.y.as_ptr().add(others.start),
            w.z.as_ptr().add(others.start),
        );
        let (px, py, pz) = (
            _mm256_set1_pd(w.x[fixed]),
            _mm256_set1_pd(w.y[fixed]),
            _mm256_set1_pd(w.z[fixed]),
        );
        let (lo, hi) = (_mm256_set1_pd(min2), _mm256_set1_pd(reach2));
        let mut m = 0;
        for k in (0..lanes).step_by(4) {
            // SAFETY (loads): k + 4 <= lanes, asserted within the axes.
            let dx = _mm256_sub_pd(_mm256_loadu_pd(x.add(k)), px);
            let dy = _mm256_sub_pd(_mm256_loadu_pd(y.add(k)), py);
            let dz = _mm256_sub_pd(_mm256_loadu_pd(z.add(k)), pz);
            let d = _mm256_add_pd(
                _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                _mm256_mul_pd(dz, dz),
            );
            _mm256_storeu_pd(d2.as_mut_ptr().add(k), d);
            // Kept unless beyond the reach or short of the minimum (NaN kept).
            let keep = _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_NGT_UQ>(d, hi),
                _mm256_cmp_pd::<_CMP_NLT_UQ>(d, lo),
            );
            let live = (1 << (n - k).min(4)) - 1;
            let pack = &PACK[_mm256_movemask_pd(keep) as usize & live];
            let at = _mm_add_epi32(
                _mm_loadu_si128(pack.lanes.as_ptr().cast()),
                _mm_set1_epi32(k as i32),
            );
            // SAFETY: m <= k, so m + 4 <= lanes <= hits.len().
            _mm_storeu_si128(hits.as_mut_ptr().add(m).cast(), at);
            m += pack.count;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::particles::grid::Wide;

    #[test]
    fn the_lanes_give_the_scalar_rows_bits_and_hits() {
        // Rows of every length to 40 from every start, distances on the
        // window's edges (repeated positions), NaN and infinite positions.
        let mut s = 11u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        let n = 300;
        let mut pos: Vec<f32> = (0..3 * n).map(|_| next() * 2.0).collect();
        for k in (0..n - 1).step_by(13) {
            let (a, b) = pos.split_at_mut(3 * k + 3);
            b[..3].copy_from_slice(&a[3 * k..]);
        }
        pos[3 * 50] = f32::NAN;
        pos[3 * 80 + 1] = f32::INFINITY;
        let w = Wide::of(&pos);
        let d01 = {
            let d: Vec<f64> = (0..3).map(|a| pos[3 + a] as f64 - pos[a] as f64).collect();
            d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
        };
        let fast = row_fn();
        let (mut d2a, mut d2b, mut ha, mut hb) = (vec![], vec![], vec![], vec![]);
        let mut hit = 0;
        for (lo, hi) in [(0.1, 0.5), (-1.0, d01), (d01, 9.0), (0.0, 0.0)] {
            for p in (0..n).step_by(7) {
                for start in (0..n).step_by(17) {
                    for len in 0..40.min(n - start) {
                        let r = start..start + len;
                        let ma = scalar(&w, p, r.clone(), lo, hi, &mut d2a, &mut ha);
                        let mb = fast(&w, p, r.clone(), lo, hi, &mut d2b, &mut hb);
                        let bits = |v: &[f64]| v.iter().map(|d| d.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&d2a[..len]), bits(&d2b[..len]), "{p} {r:?}");
                        assert_eq!(ha[..ma], hb[..mb], "{p} {r:?} ({lo}, {hi})");
                        hit += ma;
                    }
                }
            }
        }
        assert!(hit > 10_000, "{hit}");
    }
}
