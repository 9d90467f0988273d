//! Validates the independent oracle (tests/common/oracle.rs) on hand-made cases with
//! known answers. Uses nothing from the `factz` crate but its data generators.

mod common;

use common::fields::{self, linear, tri_id, Field, Rng, LINEAR_TYPES};
use common::oracle::{self, check_bound, diff, extract, scaled_f32, within, CpKind, OracleCp};
use num_bigint::BigInt;

fn kind_of(name: &str) -> CpKind {
    match name {
        n if n.starts_with("saddle") => CpKind::Saddle,
        "source" | "star_source" => CpKind::Source,
        "sink" => CpKind::Sink,
        "repelling_focus" => CpKind::RepellingFocus,
        "attracting_focus" => CpKind::AttractingFocus,
        "center" => CpKind::Center,
        _ => unreachable!(),
    }
}

fn tris(cps: &[OracleCp]) -> Vec<usize> {
    cps.iter().map(|c| c.tri).collect()
}

fn ex(f: &Field) -> Vec<OracleCp> {
    extract(&f.u, &f.v, f.ny, f.nx)
}

#[test]
fn scaled_f32_is_exact() {
    let two149 = BigInt::from(1) << 149usize;
    assert_eq!(scaled_f32(1.0), two149);
    assert_eq!(scaled_f32(-1.0), -two149.clone());
    assert_eq!(scaled_f32(0.0), BigInt::from(0));
    assert_eq!(scaled_f32(-0.0), BigInt::from(0));
    assert_eq!(scaled_f32(f32::from_bits(1)), BigInt::from(1)); // smallest subnormal
    assert_eq!(
        scaled_f32(f32::from_bits(0x007f_ffff)),
        BigInt::from(0x007f_ffff)
    ); // largest subnormal
    assert_eq!(scaled_f32(f32::MIN_POSITIVE), BigInt::from(1) << 23usize);
    assert_eq!(scaled_f32(-2.5), -(BigInt::from(5) << 148usize));
    assert_eq!(
        scaled_f32(f32::MAX),
        BigInt::from((1u32 << 24) - 1) << 253usize
    );
    assert_eq!(scaled_f32(0.75), BigInt::from(3) << 147usize);
    // monotone and consistent with f64 on random values
    let mut r = Rng::new(5);
    for _ in 0..2000 {
        let x = f32::from_bits(r.next_u64() as u32);
        if !x.is_finite() {
            continue;
        }
        let y = f32::from_bits(r.next_u64() as u32);
        if !y.is_finite() {
            continue;
        }
        assert_eq!(x < y, scaled_f32(x) < scaled_f32(y), "{x:e} vs {y:e}");
        assert_eq!(x == y, scaled_f32(x) == scaled_f32(y), "{x:e} vs {y:e}");
    }
}

#[test]
fn linear_types_strictly_inside_a_triangle() {
    for &(name, a, signs) in LINEAR_TYPES {
        for (cx, cy, want) in [
            (5.75, 4.25, tri_id(5, 4, 0, 14)),
            (3.25, 6.5, tri_id(3, 6, 1, 14)),
        ] {
            let f = linear(name, a, 12, 14, cx, cy);
            let cps = ex(&f);
            assert_eq!(tris(&cps), vec![want], "{}", f.name);
            assert_eq!(cps[0].signs, signs, "{}", f.name);
            assert_eq!(cps[0].kind, kind_of(name), "{}", f.name);
            assert_eq!(CpKind::from_signs(signs), kind_of(name));
            // power-of-two scalings (huge and subnormal) are exact: same answer
            for s in [2f64.powi(100), 2f64.powi(-140), 2f64.powi(20)] {
                let g = fields::Field::new(
                    "scaled",
                    f.ny,
                    f.nx,
                    f.u.iter().map(|&x| (x as f64 * s) as f32).collect(),
                    f.v.iter().map(|&x| (x as f64 * s) as f32).collect(),
                );
                for (x, y) in g.u.iter().zip(&f.u) {
                    assert_eq!(*x as f64, *y as f64 * s, "scaling not exact");
                }
                let c2 = ex(&g);
                assert_eq!(c2, cps, "{} scaled by {s:e}", f.name);
            }
        }
    }
}

#[test]
fn critical_points_on_edges_and_vertices_belong_to_every_closed_triangle() {
    let nx = 14;
    for &(name, a, signs) in LINEAR_TYPES {
        // on the diagonal of quad (6, 6)
        let cps = ex(&linear(name, a, 12, nx, 6.5, 6.5));
        assert_eq!(
            tris(&cps),
            vec![tri_id(6, 6, 0, nx), tri_id(6, 6, 1, nx)],
            "{name} diag"
        );
        // on the bottom edge of quad (4, 3): T0 of (4,3), T1 of (4,2)
        let cps = ex(&linear(name, a, 12, nx, 4.5, 3.0));
        assert_eq!(
            tris(&cps),
            vec![tri_id(4, 2, 1, nx), tri_id(4, 3, 0, nx)],
            "{name} bottom"
        );
        // on the vertical edge (4,7)-(4,8): T0 of (3,7), T1 of (4,7)
        let cps = ex(&linear(name, a, 12, nx, 4.0, 7.5));
        assert_eq!(
            tris(&cps),
            vec![tri_id(3, 7, 0, nx), tri_id(4, 7, 1, nx)],
            "{name} vertical"
        );
        // on the interior vertex (7, 5): its 6 triangles
        let cps = ex(&linear(name, a, 12, nx, 7.0, 5.0));
        let mut want = vec![
            tri_id(6, 4, 0, nx),
            tri_id(6, 4, 1, nx),
            tri_id(7, 4, 1, nx),
            tri_id(6, 5, 0, nx),
            tri_id(7, 5, 0, nx),
            tri_id(7, 5, 1, nx),
        ];
        want.sort();
        assert_eq!(tris(&cps), want, "{name} vertex");
        // on the corner (0, 0): both triangles of quad (0, 0)
        let cps = ex(&linear(name, a, 12, nx, 0.0, 0.0));
        assert_eq!(tris(&cps), vec![0, 1], "{name} corner");
        // on the far corner (nx-1, ny-1): T0 and T1 of the last quad
        let cps = ex(&linear(name, a, 12, nx, 13.0, 11.0));
        assert_eq!(
            tris(&cps),
            vec![tri_id(12, 10, 0, nx), tri_id(12, 10, 1, nx)],
            "{name} far corner"
        );
        // the type is the same wherever the zero lies (the interpolant is linear)
        for c in &cps {
            assert_eq!(c.signs, signs, "{name}");
        }
    }
}

#[test]
fn fields_without_zeros_have_no_critical_points() {
    assert!(
        ex(&fields::zeros(8, 9)).is_empty(),
        "all-zero field: every triangle degenerate"
    );
    assert!(ex(&fields::constant(8, 9, 1.5, -2.0)).is_empty());
    let mut f = fields::smooth(40, 33, 3);
    for x in f.u.iter_mut() {
        *x += 3.0; // |smooth| < 3, so u > 0 everywhere
    }
    assert!(f.u.iter().all(|&x| x > 0.0));
    assert!(ex(&f).is_empty());
    // degenerate shapes
    assert!(extract(&[1.0], &[2.0], 1, 1).is_empty());
    assert!(extract::<f32>(&[], &[], 0, 0).is_empty());
    assert!(extract(&[0.0; 5], &[0.0; 5], 1, 5).is_empty());
    assert!(extract(&[0.0; 5], &[0.0; 5], 5, 1).is_empty());
    // all-zero: every triangle degenerate
    let z = fields::zeros(4, 5);
    let an = oracle::analyze(&z.u, &z.v, 4, 5);
    assert_eq!(an.degenerate_tris.len(), 2 * 3 * 4);
    // u = 2v everywhere: every triangle degenerate
    let s = fields::smooth(10, 10, 1);
    let u: Vec<f32> = s.v.iter().map(|&x| 2.0 * x).collect();
    let an = oracle::analyze(&u, &s.v, 10, 10);
    assert!(an.cps.is_empty());
    assert_eq!(an.degenerate_tris.len(), 2 * 9 * 9);
}

#[test]
fn non_finite_vertices_remove_their_triangles() {
    let nx = 14;
    let a = LINEAR_TYPES[0].1;
    let base = linear("saddle", a, 12, nx, 5.75, 4.25);
    assert_eq!(tris(&ex(&base)), vec![tri_id(5, 4, 0, nx)]);
    for bad in [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(0x7f80_0001),
    ] {
        for comp in 0..2 {
            // a vertex of the critical triangle
            let mut f = base.clone();
            let k = f.idx(6, 5);
            if comp == 0 {
                f.u[k] = bad;
            } else {
                f.v[k] = bad;
            }
            assert!(ex(&f).is_empty(), "{bad:?} comp {comp}");
            // a far vertex leaves it alone
            let mut f = base.clone();
            let k = f.idx(0, 11);
            if comp == 0 {
                f.u[k] = bad;
            } else {
                f.v[k] = bad;
            }
            assert_eq!(tris(&ex(&f)), vec![tri_id(5, 4, 0, nx)]);
        }
    }
    // a NaN next to a zero vertex: of the 6 triangles around (7,5), the two that share
    // the ring vertex (8,6) -- (7,5)T0 and (7,5)T1 -- lose their critical point.
    let mut f = linear("saddle", a, 12, nx, 7.0, 5.0);
    let k = f.idx(8, 6);
    f.v[k] = f32::NAN;
    let got = tris(&ex(&f));
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(!got.contains(&tri_id(7, 5, 0, nx)) && !got.contains(&tri_id(7, 5, 1, nx)));
}

/// Second, independent computation for small-integer fields: exact i64, closed-form
/// Jacobians of the two unit triangles.
fn brute_i64(u: &[f32], v: &[f32], ny: usize, nx: usize) -> Vec<(usize, [i8; 3])> {
    let g = |a: &[f32], i: usize, j: usize| a[j * nx + i] as i64;
    let mut out = Vec::new();
    for j in 0..ny - 1 {
        for i in 0..nx - 1 {
            for t in 0..2 {
                let p = if t == 0 {
                    [(i, j), (i + 1, j), (i + 1, j + 1)]
                } else {
                    [(i, j), (i + 1, j + 1), (i, j + 1)]
                };
                let uu: Vec<i64> = p.iter().map(|&(x, y)| g(u, x, y)).collect();
                let vv: Vec<i64> = p.iter().map(|&(x, y)| g(v, x, y)).collect();
                let m0 = uu[1] * vv[2] - uu[2] * vv[1];
                let m1 = uu[2] * vv[0] - uu[0] * vv[2];
                let m2 = uu[0] * vv[1] - uu[1] * vv[0];
                let m = m0 + m1 + m2;
                if m == 0
                    || [m0, m1, m2]
                        .iter()
                        .any(|&x| x != 0 && x.signum() != m.signum())
                {
                    continue;
                }
                // T0: p0=(0,0) p1=(1,0) p2=(1,1): d/dx = f1-f0, d/dy = f2-f1
                // T1: p0=(0,0) p1=(1,1) p2=(0,1): d/dx = f1-f2, d/dy = f2-f0
                let (a, b, c, d) = if t == 0 {
                    (uu[1] - uu[0], uu[2] - uu[1], vv[1] - vv[0], vv[2] - vv[1])
                } else {
                    (uu[1] - uu[2], uu[2] - uu[0], vv[1] - vv[2], vv[2] - vv[0])
                };
                let det = a * d - b * c;
                let tr = a + d;
                let disc = tr * tr - 4 * det;
                out.push((
                    2 * (j * (nx - 1) + i) + t,
                    [det.signum() as i8, tr.signum() as i8, disc.signum() as i8],
                ));
            }
        }
    }
    out
}

#[test]
fn integer_fields_agree_with_a_second_exact_computation() {
    for (k, seed, ny, nx) in [
        (1, 1, 30, 31),
        (2, 2, 25, 40),
        (3, 3, 41, 17),
        (50, 4, 20, 20),
    ] {
        let f = fields::integer_field(ny, nx, k, seed);
        let cps = ex(&f);
        let got: Vec<(usize, [i8; 3])> = cps.iter().map(|c| (c.tri, c.signs)).collect();
        let want = brute_i64(&f.u, &f.v, ny, nx);
        assert_eq!(got, want, "{}", f.name);
        assert!(!got.is_empty());
        // det J has the sign of m (unit triangles are counter-clockwise)
        for c in &cps {
            assert_ne!(c.signs[0], 0);
        }
        // scaling by a power of two changes nothing (huge and subnormal)
        for s in [2f32.powi(90), 2f32.powi(-120)] {
            let u: Vec<f32> = f.u.iter().map(|&x| x * s).collect();
            let v: Vec<f32> = f.v.iter().map(|&x| x * s).collect();
            assert_eq!(extract(&u, &v, ny, nx), cps, "{} scaled {s:e}", f.name);
        }
    }
}

#[test]
fn exact_signs_where_floating_point_cancels() {
    // One triangle (2x2 grid, T0) whose m is +1 ulp-level tiny compared with its terms:
    // values 2^60 and 2^60 + 2^37 (adjacent f32) make m0, m1, m2 ~ 2^120 while m = 2^74.
    let big = 2f32.powi(60);
    let next = f32::from_bits(big.to_bits() + 1);
    assert_eq!(next as f64 - big as f64, 2f64.powi(37));
    // vertex order in the 2x2 grid: (0,0),(1,0),(0,1),(1,1)
    // T0 = (0,0),(1,0),(1,1); set f0=(big,big), f1=(next,big), f2=(big,next)
    let u = vec![big, next, 0.0, big];
    let v = vec![big, big, 0.0, next];
    let cps = extract(&u, &v, 2, 2);
    // m = (u1-u0)(v2-v0) - (u2-u0)(v1-v0) = 2^37 * 2^37 - 0 = 2^74 > 0 ... but is the zero
    // inside? f(x) = f0 + J (p - p0): never zero near here since f0 ~ 2^60 >> J ~ 2^37.
    assert!(cps.iter().all(|c| c.tri != 0));
    let an = oracle::analyze(&u, &v, 2, 2);
    assert!(!an.degenerate_tris.contains(&0), "m = 2^74 must not be 0");
    // Exactly collinear with huge offsets: m == 0 exactly.
    let u = vec![big, next, 0.0, f32::from_bits(big.to_bits() + 2)];
    let v = vec![big, next, 0.0, f32::from_bits(big.to_bits() + 2)];
    let an = oracle::analyze(&u, &v, 2, 2);
    assert!(an.degenerate_tris.contains(&0));
}

#[test]
fn diff_counts_injected_changes() {
    let nx = 14;
    let (name, a, _) = LINEAR_TYPES[2]; // source
    let orig = linear(name, a, 12, nx, 5.75, 4.25);
    // identical
    let d = diff(&orig.u, &orig.v, &orig.u, &orig.v, 12, nx);
    assert!(d.is_clean() && d.orig_cps == 1 && d.dec_cps == 1, "{d}");
    // move the critical point to another triangle: 1 lost + 1 spurious
    let moved = linear(name, a, 12, nx, 3.25, 6.5);
    let d = diff(&orig.u, &orig.v, &moved.u, &moved.v, 12, nx);
    assert_eq!((d.lost, d.spurious, d.type_changed), (1, 1, 0), "{d}");
    // flip the type (source -> sink) at the same place
    let sink = linear("sink", LINEAR_TYPES[3].1, 12, nx, 5.75, 4.25);
    let d = diff(&orig.u, &orig.v, &sink.u, &sink.v, 12, nx);
    assert_eq!((d.lost, d.spurious, d.type_changed), (0, 0, 1), "{d}");
    // source -> star source flips only the discriminant sign (+ to 0)
    let star = linear("star", LINEAR_TYPES[4].1, 12, nx, 5.75, 4.25);
    let d = diff(&orig.u, &orig.v, &star.u, &star.v, 12, nx);
    assert_eq!((d.lost, d.spurious, d.type_changed), (0, 0, 1), "{d}");
    // perturb one vertex of the critical triangle so the zero leaves it
    let mut dec = orig.clone();
    let k = dec.idx(5, 4); // f = A (p - c) at (5,4) = (-0.75, 0.5)
    dec.u[k] = 0.5; // now u > 0 on all of T0 (5,4)
    let d = diff(&orig.u, &orig.v, &dec.u, &dec.v, 12, nx);
    assert_eq!(d.lost, 1, "{d}");
    // a NaN removes it (lost), and a new zero vertex adds them (spurious)
    let mut dec = orig.clone();
    let k = dec.idx(6, 5);
    dec.v[k] = f32::NAN;
    let d = diff(&orig.u, &orig.v, &dec.u, &dec.v, 12, nx);
    assert_eq!((d.lost, d.spurious, d.type_changed), (1, 0, 0), "{d}");
    let mut dec = orig.clone();
    let k = dec.idx(1, 9);
    dec.u[k] = 0.0;
    dec.v[k] = 0.0;
    let d = diff(&orig.u, &orig.v, &dec.u, &dec.v, 12, nx);
    assert_eq!(d.lost, 0, "{d}");
    assert!(d.spurious >= 1, "{d}");
    // two independent changes are counted independently
    let d = diff(&moved.u, &moved.v, &sink.u, &sink.v, 12, nx);
    assert_eq!((d.lost, d.spurious, d.type_changed), (1, 1, 0), "{d}");
}

#[test]
fn diff_on_turbulence_with_noise() {
    let f = fields::turbulence(64, 1);
    let cps = ex(&f);
    assert!(
        cps.len() >= 5,
        "turbulence 64 seed 1 has {} critical points",
        cps.len()
    );
    let d = diff(&f.u, &f.v, &f.u, &f.v, 64, 64);
    assert!(d.is_clean());
    // zeroing a vertex's neighbourhood perturbs things; the oracle must see some change
    let mut g = f.clone();
    let c = cps[cps.len() / 2];
    for (i, j) in oracle::triangle_vertices(c.tri, 64) {
        let k = g.idx(i, j);
        g.u[k] = -g.u[k] * 3.0 + 0.25;
        g.v[k] = g.v[k] * 2.0 + 0.125;
    }
    let d = diff(&f.u, &f.v, &g.u, &g.v, 64, 64);
    assert!(!d.is_clean(), "{d}");
    eprintln!("turb64s1: {} critical points; perturbed: {d}", cps.len());
    let mut count = std::collections::HashMap::new();
    for c in &cps {
        *count.entry(c.kind).or_insert(0) += 1;
    }
    eprintln!("types: {count:?}");
}

#[test]
fn within_and_check_bound_are_exact() {
    assert!(within(1.0, 0.5, 0.5));
    assert!(!within(1.0, 0.5, 0.499_999_999_999));
    assert!(within(-1.0, 1.0, 2.0));
    assert!(within(3.0, 3.0, 0.0));
    assert!(!within(3.0, 3.0, -1.0));
    assert!(!within(3.0, 3.0, f64::NAN));
    // f64 subtraction rounds here; the exact difference 1e30 + 1e-30 exceeds 1e30
    let (a, b) = (1e30f32, -1e-30f32);
    assert_eq!(a as f64 - b as f64, a as f64);
    assert!(!within(a, b, a as f64));
    assert!(within(a, -b, a as f64));
    assert!(within(f32::MAX, -f32::MAX, 2.0 * f32::MAX as f64));
    assert!(!within(f32::MAX, -f32::MAX, f32::MAX as f64));

    let o = [
        1.0,
        f32::NAN,
        f32::INFINITY,
        -2.0,
        f32::from_bits(0x7fc0_1234),
    ];
    let ok = [
        1.25,
        f32::NAN,
        f32::INFINITY,
        -2.25,
        f32::from_bits(0x7fc0_1234),
    ];
    assert!(check_bound(&o, &ok, 0.25).is_ok());
    assert!(check_bound(&o, &ok, 0.2).is_err());
    let mut bad = ok;
    bad[4] = f32::NAN; // different payload
    assert!(check_bound(&o, &bad, 1.0).is_err());
    let mut bad = ok;
    bad[0] = f32::NAN; // finite -> NaN
    assert!(check_bound(&o, &bad, 1.0).is_err());
    let mut bad = ok;
    bad[2] = f32::MAX; // Inf -> finite
    assert!(check_bound(&o, &bad, f64::INFINITY).is_err());
    assert!(check_bound(&o, &ok[..4], 1.0).is_err());
}

#[test]
fn must_be_exact_mask() {
    let f = fields::proportional_regions(&fields::smooth(20, 20, 7));
    let an = oracle::analyze(&f.u, &f.v, 20, 20);
    let mask = oracle::must_be_exact(&f.u, &f.v, 20, 20, &an);
    // the u = 2v quadrant (rows/cols 0..10) is all degenerate
    for j in 0..10 {
        for i in 0..10 {
            assert!(mask[j * 20 + i], "({i},{j})");
        }
    }
    assert!(oracle::check_exact(&f.u, &f.v, &f.u, &f.v, &mask).is_ok());
    let mut g = f.clone();
    g.u[0] += 1e-3;
    assert!(oracle::check_exact(&f.u, &f.v, &g.u, &g.v, &mask).is_err());
}

#[test]
fn oracle_speed_300() {
    // Not a timing assertion: prints how long the oracle takes on a 300 x 300 field.
    let f = fields::window(&fields::turbulence(256, 1), 0, 0, 300, 300);
    let t = std::time::Instant::now();
    let cps = ex(&f);
    eprintln!(
        "oracle on 300x300: {} critical points in {:?}",
        cps.len(),
        t.elapsed()
    );
}

#[test]
fn adversarial_suite_builds() {
    let base = fields::window(&fields::smooth(64, 64, 9), 3, 5, 40, 36);
    for f in fields::adversarial_suite(&base) {
        let an = oracle::analyze(&f.u, &f.v, f.ny, f.nx);
        eprintln!(
            "{:40} {:4}x{:<4} cps {:5} degenerate {:5}",
            f.name,
            f.ny,
            f.nx,
            an.cps.len(),
            an.degenerate_tris.len()
        );
    }
}

#[test]
fn naive_quantization_is_caught() {
    // A plain error-bounded quantizer that ignores topology must show P1/P2/P3 > 0 on
    // dense turbulence: the guarantee tests would notice a compressor that does this.
    let (u, v) = fields::synth_turbulence(64, 1, &["--k0", "8", "--t-end", "3"]);
    let lo = u.iter().chain(&v).fold(f32::INFINITY, |a, &b| a.min(b)) as f64;
    let hi = u.iter().chain(&v).fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
    for tau in [1e-2, 1e-3] {
        let eb = tau * (hi - lo);
        let q = |x: &f32| ((*x as f64 / (2.0 * eb)).round() * 2.0 * eb) as f32;
        let (qu, qv): (Vec<f32>, Vec<f32>) = (u.iter().map(q).collect(), v.iter().map(q).collect());
        assert!(check_bound(&u, &qu, eb * 1.000_001).is_ok());
        let d = diff(&u, &v, &qu, &qv, 64, 64);
        eprintln!("naive quantizer rel {tau:e}: {d}");
        assert!(!d.is_clean(), "rel {tau:e}: {d}");
    }
}
