//! The halo alternative to the chunk rule (`factz::field::halo`), in one
//! process: a field cut into blocks, each block compressed alone with the caps
//! its one-vertex ring gives (`compress_capped`, no perimeter stored exactly),
//! decoded alone, and the assembled field checked by the brute-force
//! critical-point oracle: zero critical points lost, made or changed, across
//! block borders too, and every value within the bound. On turbulence and on
//! the adversarial suite, for both modes and several bounds and cuts. A control
//! shows the same blocks without caps do break critical points at borders.

mod common;

use common::fields::{self, Field};
use common::oracle;
use factz::field::halo::BlockWithRing;
use factz::field::{compress, compress_capped, decompress, Bound, FieldConfig, Mode};

/// Cuts of an ny x nx grid into blocks (y0, x0, h, w).
fn cuts(ny: usize, nx: usize) -> Vec<(&'static str, Vec<[usize; 4]>)> {
    let split = |n: usize, parts: usize| -> Vec<(usize, usize)> {
        (0..parts)
            .map(|k| (k * n / parts, (k + 1) * n / parts - k * n / parts))
            .filter(|&(_, len)| len > 0)
            .collect()
    };
    let grid = |py: usize, px: usize| -> Vec<[usize; 4]> {
        let mut out = vec![];
        for &(y0, h) in &split(ny, py) {
            for &(x0, w) in &split(nx, px) {
                out.push([y0, x0, h, w]);
            }
        }
        out
    };
    let mut uneven = vec![[0, 0, 1.min(ny), nx]];
    if ny > 1 {
        uneven.push([1, 0, ny - 1, 1.min(nx)]);
        if nx > 1 {
            uneven.push([1, 1, ny - 1, nx - 1]);
        }
    }
    vec![
        ("rows", grid(4, 1)),
        ("columns", grid(1, 3)),
        ("3x3", grid(3, 3)),
        ("one-row-one-column", uneven),
    ]
}

/// The block with its ring taken from the whole field.
fn ringed(f: &Field, [y0, x0, h, w]: [usize; 4]) -> BlockWithRing {
    let own = fields::window(f, y0, x0, h, w);
    let mut r = BlockWithRing::new(&own.u, &own.v, h, w).unwrap();
    for gj in 0..h + 2 {
        for gi in 0..w + 2 {
            let inside = (1..=w).contains(&gi) && (1..=h).contains(&gj);
            let (y, x) = ((y0 + gj) as isize - 1, (x0 + gi) as isize - 1);
            if inside || y < 0 || x < 0 || y as usize >= f.ny || x as usize >= f.nx {
                continue;
            }
            let k = y as usize * f.nx + x as usize;
            r.set_ring(gi, gj, f.u[k], f.v[k]);
        }
    }
    r
}

/// Compresses every block alone (with caps, or plainly), decodes and assembles.
/// Returns the decoded field and the total stream bytes.
fn blocks(
    f: &Field,
    cut: &[[usize; 4]],
    cfg: &FieldConfig,
    capped: bool,
) -> (Vec<f32>, Vec<f32>, usize) {
    let (mut u, mut v) = (vec![f32::NAN; f.u.len()], vec![f32::NAN; f.v.len()]);
    let mut bytes = 0;
    for &b in cut {
        let [y0, x0, h, w] = b;
        let own = fields::window(f, y0, x0, h, w);
        let c = if capped {
            compress_capped(&own.u, &own.v, h, w, cfg, &ringed(f, b).caps())
        } else {
            compress(&own.u, &own.v, h, w, cfg)
        }
        .unwrap_or_else(|e| panic!("{}: block {b:?}: {e}", f.name));
        bytes += c.bytes.len();
        let d = decompress(&c.bytes).unwrap();
        for j in 0..h {
            for i in 0..w {
                u[(y0 + j) * f.nx + x0 + i] = d.u[j * w + i];
                v[(y0 + j) * f.nx + x0 + i] = d.v[j * w + i];
            }
        }
    }
    (u, v, bytes)
}

fn config(mode: Mode, xi: f64) -> FieldConfig {
    FieldConfig {
        mode,
        bound: Bound::Abs(xi),
        ..FieldConfig::default()
    }
}

fn abs_bound(f: &Field, rel: f64) -> f64 {
    let (lo, hi) =
        f.u.iter()
            .chain(&f.v)
            .filter(|x| x.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x as f64), hi.max(x as f64))
            });
    if hi > lo {
        rel * (hi - lo)
    } else {
        rel
    }
}

#[test]
fn blocks_with_halo_caps_keep_every_critical_point() {
    let base = fields::turbulence(64, 5);
    let mut suite = vec![
        fields::turbulence(96, 7),
        fields::window(&base, 3, 9, 37, 53),
    ];
    suite.extend(fields::adversarial_suite(&base));
    let mut checked = 0;
    for f in &suite {
        for rel in [1e-1, 1e-3] {
            let xi = abs_bound(f, rel);
            for mode in [Mode::Blockwise, Mode::Speculative] {
                for (how, cut) in cuts(f.ny, f.nx) {
                    let (u, v, _) = blocks(f, &cut, &config(mode, xi), true);
                    let what = format!("{} {mode:?} rel {rel} {how}", f.name);
                    let d = oracle::diff(&f.u, &f.v, &u, &v, f.ny, f.nx);
                    assert!(d.is_clean(), "{what}: {d:?}");
                    oracle::check_bound(&f.u, &u, xi).unwrap_or_else(|e| panic!("{what}: u {e}"));
                    oracle::check_bound(&f.v, &v, xi).unwrap_or_else(|e| panic!("{what}: v {e}"));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 100, "{checked}");
}

#[test]
fn blocks_without_caps_break_critical_points_at_borders() {
    // The control: the oracle sees what the caps prevent.
    let f = fields::turbulence(96, 7);
    let xi = abs_bound(&f, 1e-1);
    let mut broken = 0;
    for mode in [Mode::Blockwise, Mode::Speculative] {
        for (_, cut) in cuts(f.ny, f.nx) {
            let (u, v, _) = blocks(&f, &cut, &config(mode, xi), false);
            broken += usize::from(!oracle::diff(&f.u, &f.v, &u, &v, f.ny, f.nx).is_clean());
        }
    }
    assert!(broken > 0, "no cut broke a critical point without caps");
}

#[test]
fn halo_caps_cost_less_than_the_chunk_rule() {
    // Both keep every critical point; the halo stores no perimeter exactly.
    let f = fields::turbulence(128, 3);
    for mode in [Mode::Blockwise, Mode::Speculative] {
        let cfg = config(mode, abs_bound(&f, 1e-3));
        let whole = compress(&f.u, &f.v, f.ny, f.nx, &cfg).unwrap().bytes.len();
        for (how, cut) in cuts(f.ny, f.nx) {
            let (_, _, halo) = blocks(&f, &cut, &cfg, true);
            let chunk = FieldConfig {
                chunk_of_larger: true,
                ..cfg
            };
            let (_, _, rule) = blocks(&f, &cut, &chunk, false);
            println!("{mode:?} {how}: whole {whole} B, halo {halo} B, chunk rule {rule} B");
            assert!(
                halo < rule,
                "{mode:?} {how}: halo {halo} >= chunk rule {rule}"
            );
        }
    }
}
