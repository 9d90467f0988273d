//! The element types factz compresses: f32 and f64, behind one trait so each
//! algorithm is written once. What differs between them is arithmetic only:
//! products of two f32 are exact in f64, products of two f64 are not (nor
//! always finite), so each type brings its own exact-sign kernel for the
//! critical-point rule (`classify_triangle`) and its own stream encoding.

use crate::field::topology::{self, Half, Sig};
use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// f32 or f64.
pub trait Real:
    Copy + Default + PartialOrd + Debug + Send + Sync + 'static + sealed::Sealed
{
    /// The stream header's element-type byte.
    const DTYPE: u8;
    /// "f32" or "f64", as the CLI and errors name it.
    const NAME: &'static str;
    /// Bytes per value.
    const BYTES: usize;
    /// u32 words per value in a stream's raw (exact-value) words, low word first.
    const WORDS: usize;
    const INFINITY: Self;
    const NEG_INFINITY: Self;
    /// Significand bits (24, 53): round to nearest errs by at most
    /// `2^-MANTISSA_DIGITS` of the value (the unit roundoff).
    const MANTISSA_DIGITS: i32;
    /// floor(log2) of the smallest normal value (-126, -1022).
    const MIN_NORMAL_EXP: i32;

    fn to_f64(self) -> f64;
    /// Rounded to nearest.
    fn from_f64(x: f64) -> Self;
    fn is_finite(self) -> bool;
    /// The value's bits, zero-extended.
    fn to_bits64(self) -> u64;
    /// The inverse of `to_bits64` (the high bits are ignored for f32).
    fn from_bits64(bits: u64) -> Self;

    /// The value's bits as `WORDS` u32 words, low word first.
    #[inline(always)]
    fn push_words(self, out: &mut Vec<u32>) {
        let b = self.to_bits64();
        out.push(b as u32);
        if Self::WORDS == 2 {
            out.push((b >> 32) as u32);
        }
    }
    /// The value from `WORDS` words, low word first (the inverse of `push_words`).
    #[inline(always)]
    fn from_words(w: &[u32]) -> Self {
        let hi = if Self::WORDS == 2 {
            (w[1] as u64) << 32
        } else {
            0
        };
        Self::from_bits64(w[0] as u64 | hi)
    }

    /// Appends the value's `BYTES` little-endian bytes (VTK; many values:
    /// [`le_bytes`]).
    #[inline(always)]
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits64().to_le_bytes()[..Self::BYTES]);
    }
    /// Writes the value's `BYTES` little-endian bytes into `out` (that long).
    #[inline(always)]
    fn put_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_bits64().to_le_bytes()[..Self::BYTES]);
    }
    /// The value from its `BYTES` little-endian bytes.
    #[inline(always)]
    fn read_le(b: &[u8]) -> Self {
        let mut w = [0u8; 8];
        w[..Self::BYTES].copy_from_slice(&b[..Self::BYTES]);
        Self::from_bits64(u64::from_le_bytes(w))
    }

    /// Half the spacing of this type's values at magnitude `x >= 0` (the
    /// round-to-nearest error bound): `2^(floor(log2 x) - MANTISSA_DIGITS)`,
    /// and its value at the smallest normal among subnormals. Exact (a power
    /// of two); 0 where that is below f64's range.
    #[inline]
    fn half_ulp(x: f64) -> f64 {
        // 2^MIN_NORMAL_EXP built from its bits (a normal f64 for both
        // types): `powi` here stayed a libm call per coordinate.
        let min_normal = f64::from_bits(((Self::MIN_NORMAL_EXP + 1023) as u64) << 52);
        let e = if x >= min_normal {
            ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023 // floor(log2(x))
        } else {
            Self::MIN_NORMAL_EXP
        };
        let biased = e - Self::MANTISSA_DIGITS + 1023;
        if biased >= 1 {
            f64::from_bits((biased as u64) << 52)
        } else {
            // Only f64, below 2^-970: a subnormal power of two, from its
            // bits; 2^-1075 and below round to 0. Not `powi`: LLVM hoisted
            // that call out of this branch (once per coordinate), and libm's
            // gave 0 below 2^-1023 (it inverts 2^1024 = inf).
            let k = e - Self::MANTISSA_DIGITS + 1074;
            if k >= 0 {
                f64::from_bits(1u64 << k)
            } else {
                0.0
            }
        }
    }

    /// The next value of this type from `self` toward +infinity (`dir > 0`) or
    /// -infinity; non-finite values are returned as they are.
    #[inline]
    fn next_toward(self, dir: f64) -> Self {
        if !self.is_finite() {
            return self;
        }
        let x = self.to_f64();
        if x == 0.0 {
            let tiny = Self::from_bits64(1);
            return if dir > 0.0 {
                tiny
            } else {
                Self::from_f64(-tiny.to_f64())
            };
        }
        // Away from zero is one more in the magnitude's bits, toward it one less;
        // the sign bit is the top bit, which +-1 on a nonzero magnitude never reaches.
        let bits = self.to_bits64();
        let away = (dir > 0.0) == (x > 0.0);
        Self::from_bits64(if away { bits + 1 } else { bits - 1 })
    }

    /// The same slice as f32 when this is f32: the f32-only fast paths (vector
    /// lanes, ring products exact in f64, the GPU) take it, f64 takes the
    /// general path.
    fn as_f32(a: &[Self]) -> Option<&[f32]>;
    /// `as_f32` of a writable slice.
    fn as_f32_mut(a: &mut [Self]) -> Option<&mut [f32]>;

    /// A triangle's signature and whether it is degenerate (finite, m == 0),
    /// decided exactly (ARCHITECTURE.md, "Critical-point rule").
    fn classify_triangle(p: [[Self; 2]; 3], half: Half) -> (Sig, bool);

    /// Marks the triangles of a quad row that a cheap filter proves hold no
    /// critical point (`topology::plain_triangles`'s contract); the others are
    /// left false for `classify_triangle`.
    fn plain_triangles(rows: [&[Self]; 4], out: &mut [bool]);

    /// m0, m1, m2 of a triangle, rounded, on a common scale (for the critical
    /// point's barycentric position only; f64 values far apart in magnitude
    /// may round them all to 0).
    fn m_values(p: [[Self; 2]; 3]) -> [f64; 3];

    /// The exact signs of m0, m1, m2 of a triangle of finite values.
    fn m_signs(p: [[Self; 2]; 3]) -> [i8; 3];
}

/// The little-endian bytes of `parts`' values, one part after another, into
/// a buffer of the known size (raw files, streams' plain sections): a push
/// per value checked the capacity each time, about 16 instructions a value.
pub fn le_bytes<T: Real>(parts: &[&[T]]) -> Vec<u8> {
    let n: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = vec![0u8; n * T::BYTES];
    let mut rest = &mut out[..];
    for part in parts {
        let (head, tail) = rest.split_at_mut(part.len() * T::BYTES);
        for (x, c) in part.iter().zip(head.chunks_exact_mut(T::BYTES)) {
            x.put_le(c);
        }
        rest = tail;
    }
    out
}

/// [`le_bytes`] of `n` values in any order (interleaved layouts).
pub fn le_bytes_of<'a, T: Real + 'a>(n: usize, values: impl IntoIterator<Item = &'a T>) -> Vec<u8> {
    let mut out = vec![0u8; n * T::BYTES];
    for (x, c) in values.into_iter().zip(out.chunks_exact_mut(T::BYTES)) {
        x.put_le(c);
    }
    out
}

impl Real for f32 {
    const DTYPE: u8 = crate::format::DTYPE_F32;
    const NAME: &'static str = "f32";
    const BYTES: usize = 4;
    const WORDS: usize = 1;
    const INFINITY: Self = f32::INFINITY;
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    const MANTISSA_DIGITS: i32 = 24;
    const MIN_NORMAL_EXP: i32 = -126;

    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        self.to_bits() as u64
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    #[inline(always)]
    fn as_f32(a: &[f32]) -> Option<&[f32]> {
        Some(a)
    }
    #[inline(always)]
    fn as_f32_mut(a: &mut [f32]) -> Option<&mut [f32]> {
        Some(a)
    }
    #[inline]
    fn classify_triangle(p: [[f32; 2]; 3], half: Half) -> (Sig, bool) {
        topology::classify(p, half)
    }
    fn plain_triangles(rows: [&[f32]; 4], out: &mut [bool]) {
        topology::plain_triangles(rows, out)
    }
    fn m_values(p: [[f32; 2]; 3]) -> [f64; 3] {
        topology::m_products(p).map(|(t1, t2)| t1 - t2)
    }
    fn m_signs(p: [[f32; 2]; 3]) -> [i8; 3] {
        // Each m_k is a correctly rounded difference of exact products.
        Self::m_values(p).map(|m| (m > 0.0) as i8 - (m < 0.0) as i8)
    }
}

impl Real for f64 {
    const DTYPE: u8 = crate::format::DTYPE_F64;
    const NAME: &'static str = "f64";
    const BYTES: usize = 8;
    const WORDS: usize = 2;
    const INFINITY: Self = f64::INFINITY;
    const NEG_INFINITY: Self = f64::NEG_INFINITY;
    const MANTISSA_DIGITS: i32 = 53;
    const MIN_NORMAL_EXP: i32 = -1022;

    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    #[inline(always)]
    fn as_f32(_: &[f64]) -> Option<&[f32]> {
        None
    }
    #[inline(always)]
    fn as_f32_mut(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
    #[inline]
    fn classify_triangle(p: [[f64; 2]; 3], half: Half) -> (Sig, bool) {
        topology::classify_f64(p, half)
    }
    fn plain_triangles(_rows: [&[f64]; 4], out: &mut [bool]) {
        // No filter yet: classify_f64 decides every triangle (its own float
        // filter makes that cheap where the signs are clear).
        out.fill(false);
    }
    fn m_values(p: [[f64; 2]; 3]) -> [f64; 3] {
        // m_k is bilinear in (u, v): scaling u and v each by a power of two
        // scales every m_k alike, so the ratios m_k / m the caller takes do
        // not change, and no product overflows.
        let scale = |c: usize| {
            let big = p.iter().fold(0.0f64, |a, x| a.max(x[c].abs()));
            if big > 0.0 {
                2f64.powi((-(big.log2().floor() as i32)).clamp(-1000, 1000))
            } else {
                1.0
            }
        };
        let (su, sv) = (scale(0), scale(1));
        let q = p.map(|[a, b]| [a * su, b * sv]);
        [(1, 2), (2, 0), (0, 1)].map(|(a, b)| q[a][0].mul_add(q[b][1], -(q[b][0] * q[a][1])))
    }
    fn m_signs(p: [[f64; 2]; 3]) -> [i8; 3] {
        topology::m_signs_f64(p)
    }
}
