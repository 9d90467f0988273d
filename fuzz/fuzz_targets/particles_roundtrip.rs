//! Arbitrary small particle sets in float32 or float64 (duplicates, NaN,
//! infinities, subnormals, pairs at exactly b, periodic faces) under arbitrary
//! bounds, bases and coders: what decodes must keep every coordinate within the bound (or
//! exact, if not finite) and every friends-of-friends link, checked against
//! all pairs by brute force with the link rule written out here.
#![no_main]
use arbitrary::Arbitrary;
use factz::codec::Coder;
use factz::field::Bound;
use factz::particles::{self, base::Base, Linking, ParticleConfig};
use factz::Real;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Case {
    coords: Vec<(u8, u64)>,
    /// float64 coordinates (the ZFP base refuses them, cleanly).
    wide: bool,
    n: u8,
    b: u8,
    period: Option<u8>,
    zfp: bool,
    huffman: bool,
    chunk: bool,
    bound: (bool, u8),
}

const PALETTE: [f64; 12] = [
    0.0,
    -0.0,
    0.2,
    0.4,
    1e-40,
    f64::NAN,
    f64::INFINITY,
    9.9,
    10.0,
    5.0,
    // float64 only: a pair at 0.2 and 0.4000000000000001 is just over b = 0.2.
    0.4000000000000001,
    1e300,
];

fn dist2<T: Real>(a: &[T], b: &[T], period: Option<f64>) -> f64 {
    let mut s = 0.0f64;
    for k in 0..3 {
        let mut d = a[k].to_f64() - b[k].to_f64();
        if let Some(l) = period {
            d -= l * (d / l).round();
        }
        s += d * d;
    }
    s
}

fn links<T: Real>(pos: &[T], period: Option<f64>, b: f64) -> Vec<(usize, usize)> {
    let n = pos.len() / 3;
    let mut out = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if dist2(&pos[3 * i..3 * i + 3], &pos[3 * j..3 * j + 3], period) <= b * b {
                out.push((i, j));
            }
        }
    }
    out
}

fuzz_target!(|c: Case| {
    if c.coords.is_empty() {
        return;
    }
    if c.wide {
        run::<f64>(&c, |bits| f64::from_bits(bits));
    } else {
        run::<f32>(&c, |bits| f32::from_bits(bits as u32));
    }
});

fn run<T: Real>(c: &Case, raw: impl Fn(u64) -> T) {
    let n = 1 + usize::from(c.n % 48);
    let pos: Vec<T> = (0..3 * n)
        .map(|k| {
            let (sel, bits) = c.coords[k % c.coords.len()];
            match sel % 4 {
                0 => T::from_f64(PALETTE[usize::from(sel / 4) % PALETTE.len()]),
                1 => raw(bits),
                // Clumps: a coarse cell plus a small offset, so pairs sit near b,
                // plus a part below f32's precision (rounded away for f32).
                _ => T::from_f64(
                    (bits % 5) as f64 * 2.0
                        + (bits >> 8 & 1023) as f64 / 2048.0
                        + (bits >> 20 & 0xffff) as f64 * 2f64.powi(-44),
                ),
            }
        })
        .collect();
    let b = 0.05 + f64::from(c.b % 20) * 0.05;
    let period = c.period.map(|p| 10.0 + f64::from(p % 10));
    let (rel, e) = c.bound;
    let x = 10f64.powi(-i32::from(e % 7));
    let cfg = ParticleConfig {
        bound: if rel { Bound::Rel(x) } else { Bound::Abs(x) },
        linking: Linking::Length(b),
        period,
        base: if c.zfp { Base::Zfp } else { Base::Builtin },
        coder: if c.huffman {
            Coder::Huffman
        } else {
            Coder::Rans
        },
        chunk_of_larger: c.chunk,
        ..ParticleConfig::default()
    };
    let Ok(comp) = particles::compress(&pos, &cfg) else {
        return;
    };
    let d = particles::decompress_as::<T>(&comp.bytes).expect("a stream factz wrote decodes");
    assert_eq!(d.pos.len(), pos.len());
    let eb = comp.report.abs_bound;
    for (k, (&a, &r)) in pos.iter().zip(&d.pos).enumerate() {
        if a.is_finite() {
            assert!(
                factz::bound::within(r, a, eb),
                "coordinate {k}: {a:?} -> {r:?}, bound {eb}"
            );
        } else {
            let (a, r) = (a.to_f64(), r.to_f64());
            assert!(
                a.to_bits() == r.to_bits() || (a.is_nan() && r.is_nan()),
                "coordinate {k}"
            );
        }
    }
    assert_eq!(
        links(&pos, period, b),
        links(&d.pos, period, b),
        "links changed"
    );
}
