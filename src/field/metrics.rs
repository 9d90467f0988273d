//! What `factz verify` and the benchmark report for fields: value errors, the
//! bound check (exact), PSNR, and the critical-point diff (P1/P2/P3). Computed
//! from both fields alone (no stream internals), so any reconstruction can be
//! judged; the particles' twin is `particles::metrics`.

use super::topology;
use crate::bound::within;
use crate::real::Real;
use rayon::prelude::*;

/// Value errors of a reconstruction (both components together).
#[derive(Debug, Clone, Default)]
pub struct Errors {
    /// Finite values compared.
    pub finite: usize,
    /// Non-finite values in the original.
    pub nonfinite: usize,
    /// Non-finite originals whose bits changed, or finite originals decoded as non-finite.
    pub nonfinite_changed: usize,
    /// Finite values outside the bound (0 when no bound is given).
    pub outside: usize,
    pub max_abs: f64,
    pub mse: f64,
    /// max - min over the finite values of the original (both components).
    pub range: f64,
}

impl Errors {
    /// PSNR in dB over the original's value range; +inf for a perfect match.
    pub fn psnr(&self) -> f64 {
        if self.mse == 0.0 {
            f64::INFINITY
        } else if self.range == 0.0 {
            f64::NEG_INFINITY
        } else {
            20.0 * self.range.log10() - 10.0 * self.mse.log10()
        }
    }

    /// Every value within the bound and every non-finite value kept.
    pub fn ok(&self) -> bool {
        self.outside == 0 && self.nonfinite_changed == 0
    }
}

#[derive(Clone, Copy)]
struct Acc {
    finite: usize,
    nonfinite: usize,
    changed: usize,
    outside: usize,
    max_abs: f64,
    sum_sq: f64,
    /// The original's extremes, exact in f64 for either element type.
    lo: f64,
    hi: f64,
}

impl Acc {
    const ZERO: Acc = Acc {
        finite: 0,
        nonfinite: 0,
        changed: 0,
        outside: 0,
        max_abs: 0.0,
        sum_sq: 0.0,
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };
    fn merge(self, o: Acc) -> Acc {
        Acc {
            finite: self.finite + o.finite,
            nonfinite: self.nonfinite + o.nonfinite,
            changed: self.changed + o.changed,
            outside: self.outside + o.outside,
            max_abs: self.max_abs.max(o.max_abs),
            sum_sq: self.sum_sq + o.sum_sq,
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
        }
    }
}

/// Compare `recon` with `orig` (same length); `bound` is the absolute bound to
/// check (exactly, [`within`]).
pub fn errors<T: Real>(orig: (&[T], &[T]), recon: (&[T], &[T]), bound: Option<f64>) -> Errors {
    let one = |o: &[T], r: &[T]| -> Acc {
        o.par_chunks(1 << 16)
            .zip(r.par_chunks(1 << 16))
            .map(|(o, r)| {
                let mut a = Acc::ZERO;
                for (&x, &y) in o.iter().zip(r) {
                    if !x.is_finite() {
                        a.nonfinite += 1;
                        a.changed += (x.to_bits64() != y.to_bits64()) as usize;
                        continue;
                    }
                    a.finite += 1;
                    a.lo = a.lo.min(x.to_f64());
                    a.hi = a.hi.max(x.to_f64());
                    if !y.is_finite() {
                        a.changed += 1;
                        continue;
                    }
                    let d = (y.to_f64() - x.to_f64()).abs();
                    a.max_abs = a.max_abs.max(d);
                    a.sum_sq += d * d;
                    if let Some(eb) = bound {
                        a.outside += !within(y, x, eb) as usize;
                    }
                }
                a
            })
            .reduce(|| Acc::ZERO, Acc::merge)
    };
    let a = one(orig.0, recon.0).merge(one(orig.1, recon.1));
    Errors {
        finite: a.finite,
        nonfinite: a.nonfinite,
        nonfinite_changed: a.changed,
        outside: a.outside,
        max_abs: a.max_abs,
        mse: if a.finite > 0 {
            a.sum_sq / a.finite as f64
        } else {
            0.0
        },
        range: if a.lo <= a.hi { a.hi - a.lo } else { 0.0 },
    }
}

/// Critical-point counts of a comparison.
#[derive(Debug, Clone, Copy, Default)]
pub struct Topo {
    pub original: usize,
    pub p1: usize,
    pub p2: usize,
    pub p3: usize,
}

impl Topo {
    pub fn total(&self) -> usize {
        self.p1 + self.p2 + self.p3
    }
}

/// Critical points of `orig`, and those lost (P1), spurious (P2) and of a changed
/// type (P3) in `recon` (both `ny * nx` per component, SoA).
pub fn topo<T: Real>(orig: (&[T], &[T]), recon: (&[T], &[T]), ny: usize, nx: usize) -> Topo {
    let d = topology::diff(orig, recon, ny, nx);
    Topo {
        original: d.original,
        p1: d.lost.len(),
        p2: d.spurious.len(),
        p3: d.type_changed.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_count_the_bound_and_non_finite_values_exactly() {
        let u = [0.0f32, 1.0, f32::NAN, 4.0];
        let v = [2.0f32, 2.0, 2.0, f32::INFINITY];
        let ru = [0.1f32, 1.0, f32::NAN, 4.5];
        let rv = [2.0f32, 2.0, 2.0, f32::INFINITY];
        let e = errors((&u, &v), (&ru, &rv), Some(0.1));
        assert_eq!((e.finite, e.nonfinite, e.nonfinite_changed), (6, 2, 0));
        // 0.1f32 - 0 exceeds 0.1 (f64) by its rounding: outside, as is 0.5.
        assert_eq!(e.outside, 2);
        assert_eq!(e.max_abs, 0.5);
        assert_eq!(e.range, 4.0);
        assert!(!e.ok() && e.psnr().is_finite());
        let same = errors((&u, &v), (&u, &v), Some(0.0));
        assert!(same.ok() && same.psnr() == f64::INFINITY);
        let lost = errors((&u, &v), (&ru, &[2.0, 2.0, 2.0, 1.0]), None);
        assert_eq!((lost.nonfinite_changed, lost.outside), (1, 0));
    }
}
