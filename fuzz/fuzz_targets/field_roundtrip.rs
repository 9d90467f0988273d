//! Arbitrary small fields (NaN, infinities, subnormals, zeros, repeats) in
//! float32 or float64 under arbitrary bounds, modes and coders: compression
//! must succeed or refuse cleanly, and what decodes must hold the guarantee,
//! checked here by brute force: every finite value within the bound, every
//! non-finite one kept, and every triangle's critical point (existence and
//! sign triple) unchanged.
#![no_main]
use arbitrary::Arbitrary;
use factz::field::{self, topology, Bound, Coder, FieldConfig, Layout, Mode};
use factz::Real;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Case {
    ny: u8,
    nx: u8,
    /// Each value: a palette entry or raw bits.
    values: Vec<(u8, u64)>,
    /// float64 values (both modes take them).
    wide: bool,
    speculative: bool,
    huffman: bool,
    zstd: bool,
    chunk: bool,
    bound: (bool, u8),
}

const PALETTE: [f64; 15] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e-40,
    -1e-45,
    3.4e38,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e-3,
    // float64 only (as f32 they round to 0, infinity, or 1): subnormal,
    // huge, and 1 plus one f64 ulp, where an f32 reading would tie.
    4.9e-324,
    1e300,
    1.0000000000000002,
];

fuzz_target!(|c: Case| {
    if c.values.is_empty() {
        return;
    }
    if c.wide {
        run::<f64>(&c, |bits| f64::from_bits(bits));
    } else {
        run::<f32>(&c, |bits| f32::from_bits(bits as u32));
    }
});

fn run<T: Real>(c: &Case, raw: impl Fn(u64) -> T) {
    let (ny, nx) = (2 + usize::from(c.ny % 9), 2 + usize::from(c.nx % 9));
    let n = ny * nx;
    let val = |k: usize| {
        let (sel, bits) = c.values[k % c.values.len()];
        match sel % 4 {
            0 => T::from_f64(PALETTE[usize::from(sel / 4) % PALETTE.len()]),
            1 => raw(bits),
            _ => T::from_f64((bits % 2001) as f64 / 1000.0 - 1.0),
        }
    };
    let u: Vec<T> = (0..n).map(val).collect();
    let v: Vec<T> = (n..2 * n).map(val).collect();
    let (rel, e) = c.bound;
    let x = 10f64.powi(-i32::from(e % 8));
    let cfg = FieldConfig {
        mode: if c.speculative {
            Mode::Speculative
        } else {
            Mode::Blockwise
        },
        bound: if rel { Bound::Rel(x) } else { Bound::Abs(x) },
        coder: if c.huffman {
            Coder::Huffman
        } else {
            Coder::Rans
        },
        zstd_level: if c.zstd { 3 } else { 0 },
        chunk_of_larger: c.chunk,
        verify: false,
        layout: Layout::Soa,
    };
    let Ok(comp) = field::compress(&u, &v, ny, nx, &cfg) else {
        return;
    };
    let d = field::decompress_as::<T>(&comp.bytes).expect("a stream factz wrote decodes");
    assert_eq!((d.ny, d.nx), (ny, nx));
    let eb = comp.report.abs_bound;
    for (orig, got) in [(&u, &d.u), (&v, &d.v)] {
        for (k, (&a, &r)) in orig.iter().zip(got.iter()).enumerate() {
            if a.is_finite() {
                assert!(
                    factz::bound::within(r, a, eb),
                    "vertex {k}: {a:?} -> {r:?}, bound {eb}"
                );
            } else {
                let (a, r) = (a.to_f64(), r.to_f64());
                assert!(
                    a.to_bits() == r.to_bits() || (a.is_nan() && r.is_nan()),
                    "vertex {k}: {a} -> {r}"
                );
            }
        }
    }
    // Brute force over every triangle (topology's exact signature).
    let diff = topology::diff((&u, &v), (&d.u, &d.v), ny, nx);
    assert!(diff.is_clean(), "{diff:?}");
}
