//! The survey's pair test: which pairs of a block of the pair walk are live
//! (in the vulnerable window, and [`can_change`] under the base's errors),
//! with the radii they allow. In AVX2 lanes where the CPU has them: distance,
//! window, square root and margin for four candidates at a time, the live
//! pairs written from tables, no branch per candidate, a whole block of rows
//! per call. The scalar loop is the reference, and the lanes give its bits:
//! the same f64 operations in the same order (no fused multiply-add), the
//! same ordered comparisons.
//!
//! It took the place of a window test per row of the walk followed by this
//! test on the window's hits: two passes over each row, the second branching
//! on every hit, and two calls per row, which on a dense set (5 M rows of 14
//! candidates on average) cost as much as the rows' own work.

use super::{can_change, lower, pair_radius, MARGIN_B, MARGIN_REL};
use crate::particles::geometry::{at, Space};
use crate::particles::grid::{Block, Wide, PAD};
use crate::real::Real;
use std::sync::atomic::AtomicU64;

/// What makes a pair of the walk live: squared distance in `window`, and
/// `can_change(d, b, ..., slack)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveTest {
    pub window: (f64, f64),
    pub b: f64,
    pub slack: f64,
}

/// The live pairs of one block: `rows` holds, per row with any, its fixed
/// position and where its pairs end in `other` and `d2` (the partner's
/// position and the pair's squared distance), in the walk's order. Reused
/// block after block.
pub(crate) struct LiveHits {
    rows: Vec<(u32, u32)>,
    other: Vec<u32>,
    d2: Vec<f64>,
    lanes: bool,
}

impl Default for LiveHits {
    fn default() -> LiveHits {
        LiveHits {
            rows: Vec::new(),
            other: Vec::new(),
            d2: Vec::new(),
            lanes: crate::cpu::has_avx2(),
        }
    }
}

impl LiveHits {
    /// The live pairs of `block` (grid positions: `sorted`, AoS, and `wide`
    /// hold them), under the base's error norms `e` (grid order, [`PAD`]
    /// values longer than the particles), as `(fixed, other, d2)` in the
    /// walk's order. `radius` is lowered over them: each partner per pair,
    /// each fixed position once per row (its least).
    #[allow(clippy::too_many_arguments)]
    pub fn of<T: Real>(
        &mut self,
        wide: &Wide,
        sorted: &[T],
        space: Space,
        e: &[f64],
        block: &Block,
        test: &LiveTest,
        radius: &[AtomicU64],
    ) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        self.find(wide, sorted, space, e, block, test, true);
        let mut from = 0;
        for &(f, end) in &self.rows {
            let mut least = f64::INFINITY;
            for q in from..end as usize {
                let g = pair_radius(self.d2[q].sqrt(), test.b);
                least = if g < least { g } else { least };
                lower(radius, self.other[q] as usize, g.to_bits());
            }
            lower(radius, f as usize, least.to_bits());
            from = end as usize;
        }
        self.found()
    }

    /// The pairs of `block` in the window, live or not (`e` unused but for
    /// its length), in the walk's order; no radius lowered. For a caller
    /// that wants every vulnerable pair too: the live ones among them are
    /// those [`can_change`] passes.
    #[allow(clippy::too_many_arguments)]
    pub fn in_window<T: Real>(
        &mut self,
        wide: &Wide,
        sorted: &[T],
        space: Space,
        e: &[f64],
        block: &Block,
        test: &LiveTest,
    ) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        self.find(wide, sorted, space, e, block, test, false);
        self.found()
    }

    /// The block's pairs into `rows`, `other` and `d2`: those in the window,
    /// and (`live_only`) that can change.
    #[allow(clippy::too_many_arguments)]
    fn find<T: Real>(
        &mut self,
        wide: &Wide,
        sorted: &[T],
        space: Space,
        e: &[f64],
        block: &Block,
        test: &LiveTest,
        live_only: bool,
    ) {
        self.rows.clear();
        self.other.clear();
        self.d2.clear();
        match (block.plain, self.lanes) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 (`self.lanes`).
            (true, true) => unsafe { avx2::live(wide, e, block, test, live_only, self) },
            (plain, _) => self.scalar(wide, sorted, space, e, block, plain, test, live_only),
        }
    }

    /// What [`LiveHits::find`] found, as `(fixed, other, d2)`.
    fn found(&self) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        let mut row = 0;
        (0..self.other.len()).map(move |q| {
            while q as u32 >= self.rows[row].1 {
                row += 1;
            }
            (
                self.rows[row].0 as usize,
                self.other[q] as usize,
                self.d2[q],
            )
        })
    }

    /// The reference: each row's distances (plain differences, or
    /// [`Space::dist2`]), then the test pair by pair.
    #[allow(clippy::too_many_arguments)]
    fn scalar<T: Real>(
        &mut self,
        wide: &Wide,
        sorted: &[T],
        space: Space,
        e: &[f64],
        block: &Block,
        plain: bool,
        test: &LiveTest,
        live_only: bool,
    ) {
        let (lo2, hi2) = test.window;
        let mut row = Vec::new();
        for (f, others) in block.rows() {
            if plain {
                wide.dist2s(f, others.clone(), &mut row);
            } else {
                row.clear();
                row.extend(
                    others
                        .clone()
                        .map(|c| space.dist2(at(sorted, f), at(sorted, c))),
                );
            }
            for (c, &d2) in others.zip(&row) {
                let live = || can_change(d2.sqrt(), test.b, e[f], e[c], test.slack);
                if d2 >= lo2 && d2 <= hi2 && (!live_only || live()) {
                    self.other.push(c as u32);
                    self.d2.push(d2);
                }
            }
            if self.rows.last().map_or(0, |r| r.1) < self.other.len() as u32 {
                self.rows.push((f as u32, self.other.len() as u32));
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Block, LiveHits, LiveTest, Wide, MARGIN_B, MARGIN_REL, PAD};
    use crate::particles::grid::PACK;
    use std::arch::x86_64::*;

    /// [`LiveHits::find`]'s pairs of a plain block, into `out` (empty).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn live(
        w: &Wide,
        e: &[f64],
        block: &Block,
        test: &LiveTest,
        live_only: bool,
        out: &mut LiveHits,
    ) {
        let [x, y, z] = w.axes();
        assert!(y.len() == x.len() && z.len() == x.len() && e.len() + PAD >= x.len());
        // The padding keeps each row's last group of loads inside the arrays.
        assert!(block.fixed.end <= e.len() && block.others.end + PAD <= x.len().min(e.len()));
        let (lo, hi) = (_mm256_set1_pd(test.window.0), _mm256_set1_pd(test.window.1));
        let b = _mm256_set1_pd(test.b);
        let (rel, tiny, slack) = (
            _mm256_set1_pd(MARGIN_REL),
            _mm256_set1_pd(test.b * MARGIN_B),
            _mm256_set1_pd(test.slack),
        );
        let sign = _mm256_set1_pd(-0.0);
        // All lanes set where the window alone decides.
        let any = _mm256_castsi256_pd(_mm256_set1_epi64x(if live_only { 0 } else { -1 }));
        let mut m = 0;
        for f in block.fixed.clone() {
            let from = if block.triangular {
                f + 1
            } else {
                block.others.start
            };
            let n = block.others.end.saturating_sub(from);
            let lanes = n.div_ceil(4) * 4;
            // Room for the row's whole groups: each store writes four.
            out.other.reserve(m + lanes - out.other.len());
            out.d2.reserve(m + lanes - out.d2.len());
            let (px, py, pz) = (
                _mm256_set1_pd(x[f]),
                _mm256_set1_pd(y[f]),
                _mm256_set1_pd(z[f]),
            );
            let ef = _mm256_set1_pd(e[f]);
            let (xs, ys, zs, es) = (
                x.as_ptr().add(from),
                y.as_ptr().add(from),
                z.as_ptr().add(from),
                e.as_ptr().add(from),
            );
            let (other, d2) = (out.other.as_mut_ptr(), out.d2.as_mut_ptr());
            let begin = m;
            let mut k = 0;
            while k < lanes {
                // SAFETY (loads): from + k + 4 <= others.end + PAD, asserted
                // within the arrays.
                let dx = _mm256_sub_pd(_mm256_loadu_pd(xs.add(k)), px);
                let dy = _mm256_sub_pd(_mm256_loadu_pd(ys.add(k)), py);
                let dz = _mm256_sub_pd(_mm256_loadu_pd(zs.add(k)), pz);
                let d = _mm256_add_pd(
                    _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                    _mm256_mul_pd(dz, dz),
                );
                // can_change: |sqrt(d2) - b| <= (ef + eo) * rel + b * tiny + slack.
                let margin = _mm256_andnot_pd(sign, _mm256_sub_pd(_mm256_sqrt_pd(d), b));
                let allowed = _mm256_add_pd(
                    _mm256_add_pd(
                        _mm256_mul_pd(_mm256_add_pd(ef, _mm256_loadu_pd(es.add(k))), rel),
                        tiny,
                    ),
                    slack,
                );
                let window = _mm256_and_pd(
                    _mm256_cmp_pd::<_CMP_GE_OQ>(d, lo),
                    _mm256_cmp_pd::<_CMP_LE_OQ>(d, hi),
                );
                let can = _mm256_or_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(margin, allowed), any);
                let live = _mm256_and_pd(window, can);
                let tail = (1 << (n - k).min(4)) - 1;
                let pack = &PACK[_mm256_movemask_pd(live) as usize & tail];
                let at = _mm_add_epi32(
                    _mm_loadu_si128(pack.lanes.as_ptr().cast()),
                    _mm_set1_epi32((from + k) as i32),
                );
                let kept = _mm256_permutevar8x32_epi32(
                    _mm256_castpd_si256(d),
                    _mm256_loadu_si256(pack.halves.as_ptr().cast()),
                );
                // SAFETY: m - begin <= k, so m + 4 <= begin + lanes, reserved.
                _mm_storeu_si128(other.add(m).cast(), at);
                _mm256_storeu_si256(d2.add(m).cast(), kept);
                m += pack.count;
                k += 4;
            }
            // SAFETY: the first m of each were written.
            out.other.set_len(m);
            out.d2.set_len(m);
            if m > begin {
                out.rows.push((f as u32, m as u32));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::particles::safe::no_radii;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn the_lanes_find_the_scalar_blocks_live_pairs_and_radii() {
        // Blocks of every shape to 24 by 24, both kinds, windows from none
        // to all, error norms from 0 to past the margins (infinite too), NaN
        // and repeated positions: the same live pairs, distances and radii
        // from the lanes as from the scalar loop.
        let mut s = 5u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let n = 200;
        let mut pos: Vec<f32> = (0..3 * n).map(|_| next() as f32).collect();
        for k in (0..n - 1).step_by(11) {
            let (a, b) = pos.split_at_mut(3 * k + 3);
            b[..3].copy_from_slice(&a[3 * k..]);
        }
        pos[3 * 40] = f32::NAN;
        let mut e: Vec<f64> = (0..n).map(|_| 0.05 * next()).collect();
        e[7] = f64::INFINITY;
        e[8] = 0.0;
        e.extend([0.0; PAD]);
        let w = Wide::of(&pos);
        let (mut lanes, mut reference) = (LiveHits::default(), LiveHits::default());
        reference.lanes = false;
        let space = Space::open();
        let (mut live, mut windowed) = (0, 0);
        let tests = [
            (0.04, 0.25, 0.3, 0.0),
            (-1.0, 0.5, 0.5, 1e-3),
            (0.0, 0.0, 0.1, 0.0),
        ];
        for (lo2, hi2, b, slack) in tests {
            let test = LiveTest {
                window: (lo2, hi2),
                b,
                slack,
            };
            for start in (0..n - 24).step_by(7) {
                for (nf, no) in (0..24).flat_map(|f| (0..24).map(move |o| (f, o))) {
                    for triangular in [false, true] {
                        let block = Block {
                            fixed: start..start + nf,
                            others: if triangular {
                                start..start + nf
                            } else {
                                n - 1 - no..n - 1
                            },
                            triangular,
                            plain: true,
                        };
                        let (ra, rb) = (no_radii(n), no_radii(n));
                        let a: Vec<_> = lanes.of(&w, &pos, space, &e, &block, &test, &ra).collect();
                        let b: Vec<_> = reference
                            .of(&w, &pos, space, &e, &block, &test, &rb)
                            .collect();
                        let bits = |v: &[(usize, usize, f64)]| {
                            v.iter()
                                .map(|&(f, c, d)| (f, c, d.to_bits()))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(bits(&a), bits(&b), "{block:?} {test:?}");
                        let radii =
                            |v: &[AtomicU64]| v.iter().map(|a| a.load(Relaxed)).collect::<Vec<_>>();
                        assert_eq!(radii(&ra), radii(&rb));
                        live += a.len();
                        // Every pair in the window, too.
                        let a: Vec<_> = lanes
                            .in_window(&w, &pos, space, &e, &block, &test)
                            .collect();
                        let b: Vec<_> = reference
                            .in_window(&w, &pos, space, &e, &block, &test)
                            .collect();
                        assert_eq!(bits(&a), bits(&b), "{block:?} {test:?}");
                        windowed += a.len();
                    }
                }
            }
        }
        assert!(live > 20_000 && windowed > live, "{live} {windowed}");
    }
}
