//! float64 fields against the independent oracle (tests/common/oracle.rs, exact
//! BigInt arithmetic on every f64): critical points (triangle and sign
//! triple) and degenerate triangles, on fields where f64 products overflow,
//! underflow, cancel, and where the f32 reading of the same values decides
//! signs differently.

mod common;

use common::fields::{self, Rng};
use common::oracle::{self, OracleCp};
use factz::field::topology::{self, Half};
use factz::Real;

struct F64Field {
    name: String,
    ny: usize,
    nx: usize,
    u: Vec<f64>,
    v: Vec<f64>,
}

/// A turbulence field read as f64 and nudged below f32's resolution: the
/// f32-rounded copy is the same field to f32, a different one to f64.
fn nudged(seed: u64, rel: f64) -> F64Field {
    let f = fields::turbulence(64, seed);
    let mut rng = Rng::new(seed ^ 0xf64);
    let mut nudge = |x: f32| x as f64 * (1.0 + rel * rng.range(-1.0, 1.0));
    F64Field {
        name: format!("turbulence64 seed {seed} nudged {rel:e}"),
        ny: f.ny,
        nx: f.nx,
        u: f.u.iter().map(|&x| nudge(x)).collect(),
        v: f.v.iter().map(|&x| nudge(x)).collect(),
    }
}

/// Small integers times 2^scale: many exact zeros and cancellations (m == 0,
/// tr == 0, disc == 0); products overflow for scale > 511 and underflow far
/// below -537.
fn integers(seed: u64, scale: i32) -> F64Field {
    let (ny, nx) = (23, 31);
    let mut rng = Rng::new(seed);
    let mut draw = || (rng.below(5) as f64 - 2.0) * 2f64.powi(scale);
    let u = (0..ny * nx).map(|_| draw()).collect();
    let v = (0..ny * nx).map(|_| draw()).collect();
    F64Field {
        name: format!("integers seed {seed} x 2^{scale}"),
        ny,
        nx,
        u,
        v,
    }
}

/// Nonzero small integers plus perturbations of 2^-40: the f32 reading
/// rounds every perturbation away (so its m_k, tr and disc often cancel
/// exactly), the f64 values decide those signs by the perturbations.
fn perturbed_integers(seed: u64) -> F64Field {
    let (ny, nx) = (27, 33);
    let mut rng = Rng::new(seed);
    let mut draw = || {
        let k = [-2.0, -1.0, 1.0, 2.0][rng.below(4)];
        k + (rng.below(7) as f64 - 3.0) * 2f64.powi(-40)
    };
    let u = (0..ny * nx).map(|_| draw()).collect();
    let v = (0..ny * nx).map(|_| draw()).collect();
    F64Field {
        name: format!("perturbed integers seed {seed}"),
        ny,
        nx,
        u,
        v,
    }
}

/// Values spread over f64's whole range, each component its own scale, with
/// zeros, subnormals, the largest finite value and non-finite vertices.
fn wild(seed: u64) -> F64Field {
    let (ny, nx) = (29, 37);
    let mut rng = Rng::new(seed);
    let mut draw = || {
        let x = match rng.below(12) {
            0 => 0.0,
            1 => f64::from_bits(rng.below(1 << 20) as u64 + 1), // subnormal
            2 => f64::MAX,
            3 => -f64::MAX,
            4 => f64::NAN,
            5 => f64::INFINITY,
            _ => rng.range(-1.0, 1.0) * 2f64.powi(rng.below(2000) as i32 - 1000),
        };
        if rng.below(2) == 0 {
            x
        } else {
            -x
        }
    };
    let u = (0..ny * nx).map(|_| draw()).collect();
    let v = (0..ny * nx).map(|_| draw()).collect();
    F64Field {
        name: format!("wild seed {seed}"),
        ny,
        nx,
        u,
        v,
    }
}

/// u and v of different, extreme magnitudes: every product overflows (or
/// underflows) while the signs stay decidable.
fn lopsided(seed: u64, su: i32, sv: i32) -> F64Field {
    let f = fields::turbulence(64, seed);
    let (ku, kv) = (2f64.powi(su), 2f64.powi(sv));
    F64Field {
        name: format!("turbulence64 seed {seed} u x 2^{su}, v x 2^{sv}"),
        ny: f.ny,
        nx: f.nx,
        u: f.u.iter().map(|&x| x as f64 * ku).collect(),
        v: f.v.iter().map(|&x| x as f64 * kv).collect(),
    }
}

fn library_cps(f: &F64Field) -> Vec<(usize, [i8; 3])> {
    topology::extract(&f.u, &f.v, f.ny, f.nx)
        .iter()
        .map(|c| {
            let (a, b, d) = c.sig.signs().expect("a critical point has signs");
            (c.tri, [a, b, d])
        })
        .collect()
}

fn library_degenerate(f: &F64Field) -> Vec<usize> {
    let mut out = Vec::new();
    for j in 0..f.ny - 1 {
        for i in 0..f.nx - 1 {
            for half in [Half::T0, Half::T1] {
                let p = topology::gather(&f.u, &f.v, topology::tri_vertices(f.nx, i, j, half));
                if f64::classify_triangle(p, half).1 {
                    out.push(2 * (j * (f.nx - 1) + i) + half as usize);
                }
            }
        }
    }
    out
}

fn oracle_cps(cps: &[OracleCp]) -> Vec<(usize, [i8; 3])> {
    cps.iter().map(|c| (c.tri, c.signs)).collect()
}

fn check(f: &F64Field) -> usize {
    let an = oracle::analyze(&f.u, &f.v, f.ny, f.nx);
    let want = oracle_cps(&an.cps);
    let got = library_cps(f);
    assert_eq!(
        got, want,
        "{}: critical points differ from the oracle",
        f.name
    );
    assert_eq!(
        library_degenerate(f),
        an.degenerate_tris,
        "{}: degenerate triangles differ from the oracle",
        f.name
    );
    // The positions lie in their triangle's quad.
    for c in topology::extract(&f.u, &f.v, f.ny, f.nx) {
        let inside = |p: f64, lo: usize| p >= lo as f64 - 1e-9 && p <= lo as f64 + 1.0 + 1e-9;
        assert!(
            inside(c.x, c.i) && inside(c.y, c.j),
            "{}: {c:?} outside its quad",
            f.name
        );
    }
    want.len()
}

#[test]
fn f64_critical_points_match_the_oracle() {
    let mut fields = Vec::new();
    for seed in [1, 2, 3] {
        fields.push(nudged(seed, 1e-9));
        fields.push(nudged(seed, 1e-15));
        fields.push(wild(seed));
        fields.push(perturbed_integers(seed));
        for scale in [0, 600, 1000, -600, -1070] {
            fields.push(integers(seed * 31 + scale as u64, scale));
        }
    }
    fields.push(lopsided(4, 900, -900));
    fields.push(lopsided(5, 1020, 1020));
    fields.push(lopsided(6, -1060, -1040));
    let mut total = 0;
    for f in &fields {
        let n = check(f);
        eprintln!("{}: {n} critical points", f.name);
        total += n;
    }
    assert!(total > 1000, "only {total} critical points in the suite");
}

/// The perturbed-integer fields hold triangles whose signature differs
/// between the f64 values and their f32 rounding (by the oracle), so the
/// suite above covers signs an f32 reading would decide wrongly.
#[test]
fn f32_reading_decides_some_signs_differently() {
    let mut differ = 0;
    for seed in [1, 2, 3] {
        let f = perturbed_integers(seed);
        let r32 = |a: &[f64]| a.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let (u32s, v32s) = (r32(&f.u), r32(&f.v));
        let a = oracle::extract(&f.u, &f.v, f.ny, f.nx);
        let b = oracle::extract(&u32s, &v32s, f.ny, f.nx);
        let d = oracle::diff_cps(&a, &b);
        differ += d.lost + d.spurious + d.type_changed;
    }
    assert!(
        differ > 100,
        "only {differ} triangles where the f32 reading differs"
    );
    eprintln!("{differ} triangles decided differently by the f32 reading");
}
