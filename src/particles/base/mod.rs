//! Base compressors of particle positions: error-bounded, order-preserving lossy
//! coders whose output the correction layer (`particles::correct`) then checks
//! coordinate by coordinate and repairs.
//!
//! Positions are AoS `[N][3]` f32 or f64 (the built-in and ZFP bases take
//! either; SZ3 here f32 only); the bound `xi` is absolute per coordinate.
//! A base aims at `|decoded - original| <= xi` (decided by `bound::within`) for
//! every finite coordinate but need not guarantee it: the caller stores exactly
//! every particle with a coordinate that is non-finite or out of bound. What a base
//! must guarantee is that `encode` returns the positions `decode` reproduces, bit
//! for bit, on every machine and thread count.
//!
//! - [`Base::Builtin`] (`builtin.rs`, the default): lattice quantization, predictors
//!   along the particle order (Lorenzo on a detected Lagrangian lattice, chosen per
//!   particle from its neighbours' errors), context-split entropy coding.
//! - [`Base::Sz3`] (`sz3.rs`, cargo feature `sz3`): SZ3 on x, y, z as 1D arrays.
//! - [`Base::Zfp`] (`zfp.rs`, cargo feature `zfp`): ZFP fixed-accuracy, 1D per axis.
//!
//! Each base owns the section ids from [`FIRST_SECTION`] up; its file documents
//! their layout.

mod builtin;
#[cfg(feature = "sz3")]
mod sz3;
#[cfg(feature = "zfp")]
mod zfp;

use crate::codec::Coder;
use crate::error::{Error, Result};
use crate::format::Parsed;
use crate::real::Real;

/// Base compressor id, recorded in the stream's mode byte (never renumber).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Base {
    Builtin = 1,
    Sz3 = 2,
    Zfp = 3,
}

impl Base {
    /// The base with stream id `x`, if any.
    pub fn from_u8(x: u8) -> Option<Base> {
        match x {
            1 => Some(Base::Builtin),
            2 => Some(Base::Sz3),
            3 => Some(Base::Zfp),
            _ => None,
        }
    }

    /// Name used on the command line and in `inspect`: "builtin", "sz3" or "zfp".
    pub fn name(self) -> &'static str {
        match self {
            Base::Builtin => "builtin",
            Base::Sz3 => "sz3",
            Base::Zfp => "zfp",
        }
    }

    /// Parses a name as written by [`Base::name`] (ASCII case-insensitive).
    pub fn parse(s: &str) -> Option<Base> {
        [Base::Builtin, Base::Sz3, Base::Zfp]
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s.trim()))
    }

    /// Whether this build can encode and decode with this base (cargo features).
    pub fn available(self) -> bool {
        match self {
            Base::Builtin => true,
            Base::Sz3 => cfg!(feature = "sz3"),
            Base::Zfp => cfg!(feature = "zfp"),
        }
    }

    /// The error for a base this build lacks, naming the cargo feature to enable.
    fn unavailable(self) -> Error {
        Error::unsupported(format!(
            "base compressor \"{0}\" is not built in; rebuild factz with `--features {0}`",
            self.name()
        ))
    }
}

/// Container sections as (id, raw payload), ready for `format::write`.
pub type Sections = Vec<(u32, Vec<u8>)>;

/// Section ids at or above this belong to the base; below are the correction's.
pub const FIRST_SECTION: u32 = 16;

/// Compress AoS positions under absolute bound xi; returns the container sections
/// (ids >= FIRST_SECTION) and the positions exactly as `decode` will reproduce them
/// (bit for bit).
pub fn encode<T: Real>(base: Base, pos: &[T], xi: f64, coder: Coder) -> Result<(Sections, Vec<T>)> {
    check_args(pos.len(), xi)?;
    match base {
        Base::Builtin => builtin::encode(pos, xi, coder),
        #[cfg(feature = "sz3")]
        Base::Sz3 => sz3::encode(f32_only(base, pos)?, xi).map(|(s, v)| (s, from_f32(v))),
        #[cfg(feature = "zfp")]
        Base::Zfp => zfp::encode(pos, xi),
        #[allow(unreachable_patterns)]
        b => Err(b.unavailable()),
    }
}

/// The positions as f32, for the base that takes only f32 (SZ3 is wired here
/// through its f32 entry points); f64 is refused by name.
#[cfg(feature = "sz3")]
fn f32_only<T: Real>(base: Base, pos: &[T]) -> Result<&[f32]> {
    T::as_f32(pos).ok_or_else(|| f64_refused::<T>(base))
}

/// The refusal of T for a base that takes only f32.
fn f64_refused<T: Real>(base: Base) -> Error {
    Error::unsupported(format!(
        "base compressor \"{}\" takes f32 positions only, not {}; {} positions work \
         with the builtin or zfp base",
        base.name(),
        T::NAME,
        T::NAME
    ))
}

/// f32 values as T, where T is f32 (the bits, so NaN payloads survive).
#[cfg(feature = "sz3")]
fn from_f32<T: Real>(v: Vec<f32>) -> Vec<T> {
    v.into_iter()
        .map(|x| T::from_bits64(x.to_bits() as u64))
        .collect()
}

/// How the base laid out its section, for `inspect`: the built-in base's
/// section format; `None` for the other bases or an unreadable section.
pub fn layout(base: Base, p: &Parsed, n: usize) -> Option<&'static str> {
    match base {
        Base::Builtin => builtin::layout(p, n),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// Decode n particles from a parsed stream. Never panics on corrupt input; returns
/// `ErrorKind::CorruptStream`.
pub fn decode<T: Real>(base: Base, p: &Parsed, n: usize, xi: f64, coder: Coder) -> Result<Vec<T>> {
    if p.header.dtype != T::DTYPE {
        return Err(Error::invalid(format!(
            "particle stream holds {}, not {}",
            crate::format::dtype_name(p.header.dtype)?,
            T::NAME
        )));
    }
    if base == Base::Sz3 && T::BYTES != 4 {
        return Err(f64_refused::<T>(base));
    }
    if !(xi.is_finite() && xi > 0.0) {
        return Err(Error::corrupt(format!(
            "particle bound {xi} is not finite and positive"
        )));
    }
    if n > isize::MAX as usize / 12 {
        return Err(Error::corrupt(format!("particle count {n} is implausible")));
    }
    match base {
        Base::Builtin => builtin::decode(p, n, xi, coder),
        #[cfg(feature = "sz3")]
        Base::Sz3 => sz3::decode(p, n, xi).map(from_f32),
        #[cfg(feature = "zfp")]
        Base::Zfp => zfp::decode(p, n, xi),
        #[allow(unreachable_patterns)]
        b => Err(b.unavailable()),
    }
}

/// A base's sections alone in a container, as a user of that compressor
/// would store them: no correction (it keeps the bound, not the links). For
/// benchmarks and tests; [`decode`] reads it back (as T) after `format::parse`.
pub fn container<T: Real>(
    base: Base,
    sections: &[(u32, Vec<u8>)],
    n: usize,
    xi: f64,
    coder: Coder,
) -> Result<Vec<u8>> {
    let header = crate::format::Header {
        version: crate::format::VERSION,
        kind: crate::format::Kind::Particles,
        dtype: T::DTYPE,
        flags: 0,
        dims: [n as u64, 3, 0],
        abs_bound: xi,
        mode: base as u8,
        coder: coder as u8,
        zstd_level: 0,
        layout: 0,
        params: [0.0; 4],
    };
    crate::format::write(&header, sections, 0)
}

fn check_args(len: usize, xi: f64) -> Result<()> {
    if len % 3 != 0 {
        return Err(Error::invalid(format!(
            "positions hold {len} values, not a multiple of 3"
        )));
    }
    if !(xi.is_finite() && xi > 0.0) {
        return Err(Error::invalid(format!(
            "particle bound {xi} is not finite and positive"
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    //! Checks every base runs through: round trips bit-exact with what `encode`
    //! returned, bounds on random, clustered and lattice-ordered data, odd sizes,
    //! non-finite input, and damaged sections.

    use super::*;
    use crate::bound::within;
    use crate::error::ErrorKind;
    use crate::format;

    pub(crate) struct Rng(pub u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Uniform in [0, 1).
        pub(crate) fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        pub(crate) fn normal(&mut self) -> f64 {
            let (a, b) = (self.unit().max(1e-300), self.unit());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        }
    }

    pub(crate) fn uniform(n: usize, seed: u64) -> Vec<f32> {
        let mut r = Rng(seed);
        (0..3 * n).map(|_| (r.unit() * 100.0) as f32).collect()
    }

    /// `pos`'s particles in a random order (Fisher-Yates).
    pub(crate) fn shuffled(pos: &[f32], seed: u64) -> Vec<f32> {
        let mut r = Rng(seed);
        let mut out = pos.to_vec();
        for i in (1..out.len() / 3).rev() {
            let j = (r.next() % (i as u64 + 1)) as usize;
            for d in 0..3 {
                out.swap(3 * i + d, 3 * j + d);
            }
        }
        out
    }

    /// Gaussian blobs of random size, particles grouped by blob.
    pub(crate) fn clustered(n: usize, seed: u64) -> Vec<f32> {
        let mut r = Rng(seed);
        let mut out = Vec::with_capacity(3 * n);
        while out.len() < 3 * n {
            let c: Vec<f64> = (0..3).map(|_| r.unit() * 100.0).collect();
            let (m, s) = (1 + (r.next() % 200) as usize, 0.05 + r.unit());
            for _ in 0..m.min(n - out.len() / 3) {
                for cj in &c {
                    out.push((cj + s * r.normal()).rem_euclid(100.0) as f32);
                }
            }
        }
        out
    }

    /// A side^3 lattice in lattice order with a smooth periodic displacement and
    /// a few halos (random positions around a centre), like `factz synth`'s sets.
    pub(crate) fn lattice(side: usize, seed: u64) -> Vec<f32> {
        let mut r = Rng(seed);
        let cell = 100.0 / side as f64;
        let ph: Vec<f64> = (0..9).map(|_| r.unit() * std::f64::consts::TAU).collect();
        let w = std::f64::consts::TAU / 100.0;
        let mut out = Vec::with_capacity(3 * side * side * side);
        for i in 0..side {
            for j in 0..side {
                for k in 0..side {
                    let q = [i, j, k].map(|v| (v as f64 + 0.5) * cell);
                    let halo = (i / 4 + j / 4 + k / 4) % 7 == 0;
                    for d in 0..3 {
                        let s = (w * q[(d + 1) % 3] + ph[3 * d]).sin()
                            + (2.0 * w * q[(d + 2) % 3] + ph[3 * d + 1]).sin()
                            + (w * q[d] + ph[3 * d + 2]).cos();
                        let mut x = q[d] + 3.0 * cell * s;
                        if halo {
                            x = (q[d] / (4.0 * cell)).floor() * 4.0 * cell
                                + 0.3 * cell * r.normal();
                        }
                        out.push(x.rem_euclid(100.0) as f32);
                    }
                }
            }
        }
        out
    }

    pub(crate) fn range_of(pos: &[f32]) -> f64 {
        let f = pos.iter().filter(|x| x.is_finite());
        let (mn, mx) = f.fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        if mn > mx {
            1.0
        } else {
            f64::from(mx) - f64::from(mn)
        }
    }

    /// Encodes, decodes through a container, checks the decode equals what encode
    /// returned bit for bit, and returns the number of finite coordinates out of bound.
    pub(crate) fn round_trip(base: Base, pos: &[f32], xi: f64, coder: Coder) -> usize {
        let n = pos.len() / 3;
        let (secs, back) = encode(base, pos, xi, coder).unwrap();
        assert!(secs.iter().all(|s| s.0 >= FIRST_SECTION));
        assert_eq!(back.len(), pos.len());
        let bytes = container::<f32>(base, &secs, n, xi, coder).unwrap();
        let p = format::parse(&bytes).unwrap();
        let dec = decode::<f32>(base, &p, n, xi, coder).unwrap();
        assert_eq!(dec.len(), back.len());
        for (i, (a, b)) in dec.iter().zip(&back).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "{base:?} xi {xi}: coordinate {i} differs"
            );
        }
        pos.iter()
            .zip(&dec)
            .filter(|(x, r)| x.is_finite() && !within(**r, **x, xi))
            .count()
    }

    /// Round trips on several data sets and bounds; at most `slack` coordinates per
    /// 10^5 may miss the bound (0 for the built-in base).
    pub(crate) fn check_base(base: Base, slack: usize) {
        let sets = [
            ("uniform", uniform(3000, 1)),
            ("clustered", clustered(3000, 2)),
            ("lattice", lattice(12, 3)),
        ];
        for (name, pos) in &sets {
            let range = range_of(pos);
            for rel in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
                let bad = round_trip(base, pos, rel * range, Coder::Rans);
                let allowed = slack * pos.len() / 100_000;
                assert!(
                    bad <= allowed,
                    "{base:?} {name} rel {rel}: {bad} coordinates out of bound"
                );
            }
        }
        for coder in [Coder::Huffman, Coder::Rans] {
            for n in [0, 1, 2, 3, 5] {
                let pos = clustered(n.max(1), 7)[..3 * n].to_vec();
                assert_eq!(round_trip(base, &pos, 0.01, coder), 0, "{base:?} n {n}");
            }
        }
        // Non-finite input: finite coordinates stay in bound (most of them for the
        // external bases, whose predictors see the substitutes), all round-trip.
        let mut pos = clustered(2000, 9);
        for (i, x) in pos.iter_mut().enumerate() {
            match i % 97 {
                0 => *x = f32::NAN,
                1 => *x = f32::INFINITY,
                2 => *x = f32::NEG_INFINITY,
                _ => {}
            }
        }
        let bad = round_trip(base, &pos, 1e-3, Coder::Rans);
        assert!(
            bad <= slack * pos.len() / 100_000,
            "{base:?}: {bad} out of bound with NaN/Inf"
        );
        let all_nan = vec![f32::NAN; 30];
        round_trip(base, &all_nan, 1e-3, Coder::Huffman);
    }

    /// Decoding damaged base sections (rebuilt into a valid container, so the base
    /// itself must notice) returns errors, never panics: every truncation, and
    /// every bit flip within the first `flip_bytes(section)` bytes.
    pub(crate) fn mutations(base: Base, flip_bytes: fn(&[u8]) -> usize) {
        mutations_of(base, &lattice(6, 11), flip_bytes);
    }

    /// [`mutations`] of the streams of `pos`.
    pub(crate) fn mutations_of(base: Base, pos: &[f32], flip_bytes: fn(&[u8]) -> usize) {
        let n = pos.len() / 3;
        let xi = 0.01;
        for coder in [Coder::Rans, Coder::Huffman] {
            let (secs, _) = encode(base, pos, xi, coder).unwrap();
            let try_decode = |secs: &[(u32, Vec<u8>)], n: usize| {
                let bytes = container::<f32>(base, secs, n, xi, coder).unwrap();
                let p = format::parse(&bytes).unwrap();
                match decode::<f32>(base, &p, n, xi, coder) {
                    Ok(v) => assert_eq!(v.len(), 3 * n),
                    Err(e) => assert_eq!(e.kind, ErrorKind::CorruptStream, "{}", e.message),
                }
            };
            for (k, (_, sec)) in secs.iter().enumerate() {
                for cut in 0..sec.len() {
                    let mut m = secs.clone();
                    m[k].1.truncate(cut);
                    try_decode(&m, n);
                }
                let flips = 8 * flip_bytes(sec).min(sec.len());
                for bit in 0..flips {
                    let mut m = secs.clone();
                    m[k].1[bit / 8] ^= 1 << (bit % 8);
                    try_decode(&m, n);
                }
                let mut m = secs.clone();
                m[k].1.push(0);
                try_decode(&m, n);
            }
            for wrong_n in [0, 1, n - 1, n + 1, 2 * n] {
                try_decode(&secs, wrong_n);
            }
            let bytes = container::<f32>(base, &[], n, xi, coder).unwrap();
            let p = format::parse(&bytes).unwrap();
            assert_eq!(
                decode::<f32>(base, &p, n, xi, coder).unwrap_err().kind,
                ErrorKind::CorruptStream
            );
        }
    }

    #[test]
    fn ids_and_names() {
        for b in [Base::Builtin, Base::Sz3, Base::Zfp] {
            assert_eq!(Base::from_u8(b as u8), Some(b));
            assert_eq!(Base::parse(b.name()), Some(b));
        }
        assert_eq!(
            (Base::Builtin as u8, Base::Sz3 as u8, Base::Zfp as u8),
            (1, 2, 3)
        );
        assert_eq!(Base::from_u8(0), None);
        assert_eq!(Base::from_u8(4), None);
        assert_eq!(Base::parse(" ZFP "), Some(Base::Zfp));
        assert_eq!(Base::parse("zstd"), None);
        assert!(Base::Builtin.available());
        assert_eq!(Base::Sz3.available(), cfg!(feature = "sz3"));
        assert_eq!(Base::Zfp.available(), cfg!(feature = "zfp"));
    }

    #[test]
    fn unavailable_bases_name_their_feature() {
        for b in [Base::Sz3, Base::Zfp] {
            if b.available() {
                continue;
            }
            let e = encode(b, &[1.0, 2.0, 3.0], 0.1, Coder::Rans).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported);
            assert!(
                e.message.contains(&format!("--features {}", b.name())),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn bad_arguments() {
        for xi in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = encode(Base::Builtin, &[1.0, 2.0, 3.0], xi, Coder::Rans).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
        }
        let e = encode(Base::Builtin, &[1.0, 2.0], 0.1, Coder::Rans).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
    }
}
