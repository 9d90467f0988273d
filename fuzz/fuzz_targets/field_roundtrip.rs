//! Arbitrary small fields (NaN, infinities, subnormals, zeros, repeats) under
//! arbitrary bounds, modes and coders: compression must succeed or refuse
//! cleanly, and what decodes must hold the guarantee, checked here by brute
//! force: every finite value within the bound, every non-finite one kept, and
//! every triangle's critical point (existence and sign triple) unchanged.
#![no_main]
use arbitrary::Arbitrary;
use factz::field::{self, topology, Bound, Coder, FieldConfig, Layout, Mode};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Case {
    ny: u8,
    nx: u8,
    /// Each value: a palette entry or raw bits.
    values: Vec<(u8, u32)>,
    speculative: bool,
    huffman: bool,
    zstd: bool,
    chunk: bool,
    bound: (bool, u8),
}

const PALETTE: [f32; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e-40,
    -1e-45,
    3.4e38,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e-3,
];

fuzz_target!(|c: Case| {
    let (ny, nx) = (2 + usize::from(c.ny % 9), 2 + usize::from(c.nx % 9));
    let n = ny * nx;
    if c.values.is_empty() {
        return;
    }
    let val = |k: usize| {
        let (sel, bits) = c.values[k % c.values.len()];
        match sel % 4 {
            0 => PALETTE[usize::from(sel / 4) % PALETTE.len()],
            1 => f32::from_bits(bits),
            _ => (bits % 2001) as f32 / 1000.0 - 1.0,
        }
    };
    let u: Vec<f32> = (0..n).map(val).collect();
    let v: Vec<f32> = (n..2 * n).map(val).collect();
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
    let d = field::decompress(&comp.bytes).expect("a stream factz wrote decodes");
    assert_eq!((d.ny, d.nx), (ny, nx));
    let eb = comp.report.abs_bound;
    for (orig, got) in [(&u, &d.u), (&v, &d.v)] {
        for (k, (&a, &r)) in orig.iter().zip(got.iter()).enumerate() {
            if a.is_finite() {
                assert!(
                    factz::bound::within(r, a, eb),
                    "vertex {k}: {a} -> {r}, bound {eb}"
                );
            } else {
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
});
