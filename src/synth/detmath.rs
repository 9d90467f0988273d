//! Elementary functions from IEEE-754 `+ - * /` alone, so the generated test data
//! is the same bits on every platform: the system libm's `sin`, `exp` and `ln`
//! differ in the last bit between platforms and versions, and tests compare
//! streams of this data bit for bit. (`sqrt`, `floor` and `round` are exact in
//! IEEE-754 and safe as they are; nothing here uses `mul_add`.)
//!
//! Accuracy is a few ulp over the ranges the generators use; these are not
//! replacements for libm in numerical code.

use std::f64::consts::{FRAC_PI_2, LN_2};

// pi/2 in three parts (Cody-Waite): the first two have trailing zero bits, so
// k * part is exact for the |k| < 2^20 this module is used with.
const PIO2_1: f64 = 1.570_796_326_734_125_6; // 0x3FF921FB54400000
const PIO2_2: f64 = 6.077_100_506_303_966e-11; // 0x3DD0B4611A600000
const PIO2_3: f64 = 2.022_266_248_795_950_6e-21; // 0x3BA3198A2E037073

/// sin and cos of x (|x| < 1e6).
pub fn sin_cos(x: f64) -> (f64, f64) {
    if !x.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let k = (x / FRAC_PI_2).round();
    let r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
    let (s, c) = (sin_poly(r), cos_poly(r));
    match (k as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

pub fn sin(x: f64) -> f64 {
    sin_cos(x).0
}

pub fn cos(x: f64) -> f64 {
    sin_cos(x).1
}

/// Taylor series on |r| <= pi/4, Horner form r (1 - r^2/(2*3) (1 - r^2/(4*5) (...)))
/// (the first term left out is below 2^-60 of the sum).
fn sin_poly(r: f64) -> f64 {
    let r2 = r * r;
    let mut acc = 1.0;
    for k in (1..=9).rev() {
        acc = 1.0 - acc * r2 / ((2 * k) as f64 * (2 * k + 1) as f64);
    }
    r * acc
}

/// Taylor series on |r| <= pi/4.
fn cos_poly(r: f64) -> f64 {
    let r2 = r * r;
    let mut acc = 1.0;
    for k in (1..=9).rev() {
        acc = 1.0 - acc * r2 / ((2 * k - 1) as f64 * (2 * k) as f64);
    }
    acc
}

const LN2_HI: f64 = 0.693_147_180_369_123_8; // 0x3FE62E42FEE00000
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10; // 0x3DEA39EF35793C76

/// e^x; 0 below -745, +inf above 709.8.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.78 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    let k = (x / LN_2).round();
    let r = (x - k * LN2_HI) - k * LN2_LO; // |r| <= 0.35
    let mut acc = 1.0;
    for n in (1..=14).rev() {
        acc = 1.0 + acc * r / n as f64;
    }
    scale2(acc, k as i32)
}

/// x * 2^k for the k exp produces (k in [-1075, 1024]), in two steps so that
/// neither factor over- or underflows on its own.
fn scale2(x: f64, k: i32) -> f64 {
    let half = k / 2;
    x * pow2(half) * pow2(k - half)
}

fn pow2(k: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// Natural logarithm; NaN below 0, -inf at 0.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return x;
    }
    // x = m 2^e with m in [sqrt(1/2), sqrt(2)); subnormals first scaled up.
    let (mut x, mut e) = (x, 0i32);
    if x < f64::MIN_POSITIVE {
        x *= pow2(54);
        e -= 54;
    }
    let bits = x.to_bits();
    e += ((bits >> 52) as i32) - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut acc = 0.0;
    for k in (0..=11).rev() {
        acc = 1.0 / (2 * k + 1) as f64 + s2 * acc;
    }
    let e = e as f64;
    (e * LN2_HI + 2.0 * s * acc) + e * LN2_LO
}

/// x^k by repeated multiplication (`f64::powi`'s precision is unspecified and
/// may differ between builds).
pub fn powi(x: f64, k: u32) -> f64 {
    (0..k).fold(1.0, |acc, _| acc * x)
}

/// x^y for x > 0.
pub fn powf(x: f64, y: f64) -> f64 {
    exp(y * ln(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn close_to_libm() {
        // libm as the reference here only: within a few ulp, or 1e-16 absolute near 0.
        let mut x = -200.0f64;
        while x < 200.0 {
            let (s, c) = sin_cos(x);
            assert!((s - x.sin()).abs() <= 4e-16, "sin {x}: {s} vs {}", x.sin());
            assert!((c - x.cos()).abs() <= 4e-16, "cos {x}: {c} vs {}", x.cos());
            x += 0.013_7;
        }
        let mut x = -740.0f64;
        while x < 709.0 {
            let (a, b) = (exp(x), x.exp());
            assert!(ulps(a, b) <= 4, "exp {x}: {a} vs {b}");
            x += 0.377;
        }
        for &x in &[
            1e-310, 1e-300, 1e-10, 0.5, 0.999, 1.0, 1.001, 2.0, 10.0, 1e10, 1e300,
        ] {
            let (a, b) = (ln(x), x.ln());
            assert!(
                ulps(a, b) <= 4 || (a - b).abs() < 1e-16,
                "ln {x}: {a} vs {b}"
            );
        }
        let mut x = 0.01f64;
        while x < 1e4 {
            let (a, b) = (ln(x), x.ln());
            assert!(
                ulps(a, b) <= 4 || (a - b).abs() < 4e-16,
                "ln {x}: {a} vs {b}"
            );
            x *= 1.0731;
        }
    }

    #[test]
    fn split_constants_are_the_intended_bits() {
        assert_eq!(PIO2_1.to_bits(), 0x3FF9_21FB_5440_0000);
        assert_eq!(PIO2_2.to_bits(), 0x3DD0_B461_1A60_0000);
        assert_eq!(PIO2_3.to_bits(), 0x3BA3_198A_2E03_7073);
        assert_eq!(LN2_HI.to_bits(), 0x3FE6_2E42_FEE0_0000);
        assert_eq!(LN2_LO.to_bits(), 0x3DEA_39EF_3579_3C76);
    }

    #[test]
    fn edge_values() {
        assert_eq!(sin_cos(0.0), (0.0, 1.0));
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(exp(-800.0), 0.0);
        assert_eq!(exp(800.0), f64::INFINITY);
        assert!(ln(-1.0).is_nan() && sin(f64::INFINITY).is_nan());
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(exp(-744.0) > 0.0, "subnormal results survive");
    }
}
