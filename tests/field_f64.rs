//! float64 fields against the independent oracle (tests/common/oracle.rs, exact
//! BigInt arithmetic on every f64): critical points (triangle and sign
//! triple) and degenerate triangles, on fields where f64 products overflow,
//! underflow, cancel, and where the f32 reading of the same values decides
//! signs differently.

#[path = "common/cli.rs"]
mod cli;
mod common;

use common::fields::{self, Rng};
use common::oracle::{self, OracleCp};
use factz::field::topology::{self, Half};
use factz::field::{self as fz, Bound, Coder, FieldConfig, Mode};
use factz::{ErrorKind, Real};

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

/// Vectors nearly parallel to one line through zero, one ulp apart from exactly
/// scaled copies: every m_k is far below the rounding error of its
/// products, so rounded arithmetic decides its sign at random and only the
/// exact path is right (with a few exact zeros from unperturbed pairs).
fn near_parallel(seed: u64) -> F64Field {
    let (ny, nx) = (25, 29);
    let mut rng = Rng::new(seed);
    let (c, d) = (rng.range(0.3, 1.7), rng.range(-1.7, -0.3));
    let mut u = Vec::with_capacity(ny * nx);
    let mut v = Vec::with_capacity(ny * nx);
    let ulp = |x: f64, k: i64| f64::from_bits((x.to_bits() as i64 + k) as u64);
    for _ in 0..ny * nx {
        // Both signs: the zero vector lies on the line, and the ulps decide
        // whether a thin triangle of vectors holds it.
        let s = [0.5, -1.0, 1.5, -2.0, 0.75, -0.5][rng.below(6)] * rng.range(0.999, 1.001);
        let (a, b) = (s * c, s * d);
        u.push(ulp(a, rng.below(3) as i64 - 1));
        v.push(ulp(b, rng.below(3) as i64 - 1));
    }
    F64Field {
        name: format!("near-parallel seed {seed}"),
        ny,
        nx,
        u,
        v,
    }
}

/// Every vertex on one line a + t e (t = i + 3 j) with 24-bit mantissas:
/// every triangle is degenerate (m == 0 exactly) while its m_k are nonzero
/// and their products inexact, so a rounded sum of the m_k can miss zero.
fn collinear(seed: u64) -> F64Field {
    let (ny, nx) = (13, 17);
    let mut rng = Rng::new(seed);
    let mut dyadic = || (rng.below(1 << 24) as f64 - (1 << 23) as f64) / (1 << 22) as f64 + 0.1;
    let (a, b, e, f) = (dyadic(), dyadic(), dyadic() / 1024.0, dyadic() / 1024.0);
    let t = |k: usize| ((k % nx) + 3 * (k / nx)) as f64;
    F64Field {
        name: format!("collinear seed {seed}"),
        ny,
        nx,
        u: (0..ny * nx).map(|k| a + e * t(k)).collect(),
        v: (0..ny * nx).map(|k| b + f * t(k)).collect(),
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
        fields.push(near_parallel(seed));
        fields.push(collinear(seed));
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

/// Every vertex the conventions store exactly: zero vectors and the vertices
/// of degenerate triangles (from the oracle's analysis).
fn must_be_exact(f: &F64Field, degenerate: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = (0..f.u.len())
        .filter(|&k| f.u[k] == 0.0 && f.v[k] == 0.0)
        .collect();
    for &t in degenerate {
        for (i, j) in oracle::triangle_vertices(t, f.nx) {
            out.push(j * f.nx + i);
        }
    }
    out
}

/// Modes S and B on f64 fields: every critical point kept (oracle), every
/// value within the bound (exact integer check), non-finite values and forced
/// vertices bit-exact, the stream says f64, and it decodes only as f64.
#[test]
fn f64_modes_keep_every_critical_point_and_the_bound() {
    let mut fields = Vec::new();
    for seed in [1, 2] {
        fields.push(nudged(seed, 1e-9));
        fields.push(perturbed_integers(seed));
        fields.push(near_parallel(seed));
        fields.push(wild(seed));
        fields.push(integers(seed, 0));
        fields.push(integers(seed + 10, 700));
    }
    fields.push(lopsided(4, 900, -900));
    fields.push(lopsided(6, -1060, -1040));
    let mut cases = 0;
    for f in &fields {
        let an = oracle::analyze(&f.u, &f.v, f.ny, f.nx);
        let forced = must_be_exact(f, &an.degenerate_tris);
        let modes = [Mode::Speculative, Mode::Blockwise];
        // Rel 0.2: the per-vertex safe bounds, not the user's, limit mode B.
        let bounds = [
            Bound::Rel(0.2),
            Bound::Rel(1e-2),
            Bound::Rel(1e-5),
            Bound::Abs(1e-12),
        ];
        for ((mode, bound), coder) in modes
            .into_iter()
            .flat_map(|m| bounds.map(|b| (m, b)))
            .flat_map(|mb| [Coder::Rans, Coder::Huffman].map(|c| (mb, c)))
        {
            {
                let cfg = FieldConfig {
                    mode,
                    bound,
                    coder,
                    verify: true,
                    ..FieldConfig::default()
                };
                let what = format!("{} {mode:?} {bound:?} {coder:?}", f.name);
                let c = fz::compress(&f.u, &f.v, f.ny, f.nx, &cfg)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(!c.report.lossless_fallback, "{what}: {:?}", c.report);
                let info = fz::info(&c.bytes).unwrap();
                assert_eq!(info.dtype, "f64", "{what}");
                let d =
                    fz::decompress_as::<f64>(&c.bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
                let xi = c.report.abs_bound;
                oracle::check_bound_f64(&f.u, &d.u, xi).unwrap_or_else(|e| panic!("{what}: u {e}"));
                oracle::check_bound_f64(&f.v, &d.v, xi).unwrap_or_else(|e| panic!("{what}: v {e}"));
                let diff = oracle::diff_cps(&an.cps, &oracle::extract(&d.u, &d.v, f.ny, f.nx));
                assert!(diff.is_clean(), "{what}: {diff}");
                for &k in &forced {
                    assert_eq!(
                        (f.u[k].to_bits(), f.v[k].to_bits()),
                        (d.u[k].to_bits(), d.v[k].to_bits()),
                        "{what}: forced vertex {k} not exact"
                    );
                }
                let as_f32 = fz::decompress(&c.bytes).expect_err("an f64 stream decoded as f32");
                assert_eq!(as_f32.kind, ErrorKind::InvalidArgument, "{what}: {as_f32}");
                eprintln!(
                    "{what}: ratio {:.2}",
                    (16 * f.u.len()) as f64 / c.bytes.len() as f64
                );
                cases += 1;
            }
        }
    }
    assert_eq!(cases, fields.len() * 16);
}

/// A float32 stream read as f64 is refused; a field of all non-finite values
/// and a 1 x n field round-trip in both modes.
#[test]
fn f64_refusals_and_edges() {
    let f = nudged(3, 1e-9);

    let u32s: Vec<f32> = f.u.iter().map(|&x| x as f32).collect();
    let v32s: Vec<f32> = f.v.iter().map(|&x| x as f32).collect();
    let c32 = fz::compress(&u32s, &v32s, f.ny, f.nx, &FieldConfig::default()).unwrap();
    assert_eq!(fz::info(&c32.bytes).unwrap().dtype, "f32");
    let e = fz::decompress_as::<f64>(&c32.bytes).expect_err("an f32 stream decoded as f64");
    assert_eq!(e.kind, ErrorKind::InvalidArgument);

    for mode in [Mode::Speculative, Mode::Blockwise] {
        let cfg = FieldConfig {
            mode,
            ..FieldConfig::default()
        };
        let nan = vec![f64::NAN; 12];
        let inf = vec![f64::NEG_INFINITY; 12];
        let c = fz::compress(&nan, &inf, 3, 4, &cfg).unwrap();
        let d = fz::decompress_as::<f64>(&c.bytes).unwrap();
        assert!(d.u.iter().all(|x| x.is_nan()) && d.v.iter().all(|&x| x == f64::NEG_INFINITY));

        let u: Vec<f64> = (0..9).map(|k| k as f64 * 0.1 + 1e-12).collect();
        let c = fz::compress(&u, &u, 1, 9, &cfg).unwrap();
        let d = fz::decompress_as::<f64>(&c.bytes).unwrap();
        oracle::check_bound_f64(&u, &d.u, c.report.abs_bound).unwrap();
    }
}

/// `factz compress --dtype f64` and `decompress` as a user runs them: both
/// layouts, values within the bound and critical points kept (oracle), the
/// stream says f64; and one-line errors for an f64 file read as f32, an
/// unknown dtype and mode B.
#[test]
fn f64_through_the_cli() {
    use std::process::Command;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("field_f64_cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_factz"))
            .args(args)
            .output()
            .expect("factz runs")
    };
    let f = perturbed_integers(7);
    let shape = format!("{},{}", f.ny, f.nx);
    let xi = 1e-3;
    for (layout, mode) in [("soa", "s"), ("aos", "s"), ("soa", "b")] {
        let values: Vec<f64> = match layout {
            "soa" => f.u.iter().chain(&f.v).copied().collect(),
            _ => f.u.iter().zip(&f.v).flat_map(|(&a, &b)| [a, b]).collect(),
        };
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (inp, fz, back) = (path("in.f64"), path("out.fz"), path("back.f64"));
        std::fs::write(&inp, &bytes).unwrap();
        let out = run(&[
            "compress", "--dtype", "f64", "--shape", &shape, "--layout", layout, "--mode", mode,
            "--abs", "1e-3", &inp, &fz,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = run(&["inspect", &fz]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("element f64"));
        let out = run(&["decompress", &fz, &back]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<f64> = std::fs::read(&back)
            .unwrap()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got.len(), values.len(), "{layout}");
        let n = f.u.len();
        let (du, dv): (Vec<f64>, Vec<f64>) = match layout {
            "soa" => (got[..n].to_vec(), got[n..].to_vec()),
            _ => got.chunks_exact(2).map(|p| (p[0], p[1])).unzip(),
        };
        oracle::check_bound_f64(&f.u, &du, xi).unwrap();
        oracle::check_bound_f64(&f.v, &dv, xi).unwrap();
        let d = oracle::diff(&f.u, &f.v, &du, &dv, f.ny, f.nx);
        assert!(d.is_clean(), "{layout}: {d}");
    }
    let inp = path("in.f64");
    for (args, needle) in [
        (vec!["compress", "--shape", &shape, &inp, "x.fz"], "--dtype"),
        (
            vec![
                "compress", "--dtype", "f16", "--shape", &shape, &inp, "x.fz",
            ],
            "f16",
        ),
        (
            vec![
                "compress",
                "--dtype",
                "f64",
                "--backend",
                "cuda",
                "--shape",
                &shape,
                &inp,
                "x.fz",
            ],
            "cuda",
        ),
    ] {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// `factz cps --dtype f64` and `factz verify` on f64 as a user runs them:
/// cps on the raw field and on its stream lists the oracle's critical points
/// (cell and type), on a field where the f32 reading differs; verify passes
/// the stream, reports f64 and its ratio of 16-byte pairs, fails a
/// reconstruction with one broken critical point (the oracle's count), draws
/// --plot, and refuses a --dtype that contradicts the stream.
#[test]
fn f64_cps_and_verify_through_the_cli() {
    use cli::parse_json;
    use std::process::Command;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("field_f64_cps");
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_factz"))
            .args(args)
            .output()
            .expect("factz runs")
    };
    let f = perturbed_integers(11);
    let shape = format!("{},{}", f.ny, f.nx);
    let raw = |u: &[f64], v: &[f64]| -> Vec<u8> {
        u.iter().chain(v).flat_map(|x| x.to_le_bytes()).collect()
    };
    let (inp, fz) = (path("in.f64"), path("in.fz"));
    std::fs::write(&inp, raw(&f.u, &f.v)).unwrap();
    let out = run(&[
        "compress", "--dtype", "f64", "--shape", &shape, "--rel", "1e-2", &inp, &fz,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let want: Vec<(usize, u8)> = oracle::extract(&f.u, &f.v, f.ny, f.nx)
        .iter()
        .map(|c| (c.tri, c.kind as u8))
        .collect();
    let r32 = |a: &[f64]| a.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let want32: Vec<(usize, u8)> = oracle::extract(&r32(&f.u), &r32(&f.v), f.ny, f.nx)
        .iter()
        .map(|c| (c.tri, c.kind as u8))
        .collect();
    assert_ne!(want, want32, "the f32 reading should differ here");
    let listed = |out: &std::process::Output| -> Vec<(usize, u8)> {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j = parse_json(&String::from_utf8_lossy(&out.stdout));
        j.get("points")
            .arr()
            .iter()
            .map(|p| (p.get("cell").num() as usize, p.get("type_code").num() as u8))
            .collect()
    };
    let from_raw = run(&["cps", "--dtype", "f64", "--shape", &shape, "--json", &inp]);
    assert_eq!(listed(&from_raw), want);
    // The stream keeps them, and says f64 itself.
    assert_eq!(listed(&run(&["cps", "--json", &fz])), want);

    let out = run(&["verify", &inp, &fz, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = parse_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(j.get("dtype").str(), "f64");
    assert_eq!(j.get("critical_points").num() as usize, want.len());
    let len = std::fs::metadata(&fz).unwrap().len() as f64;
    let n = (f.ny * f.nx) as f64;
    assert!((j.get("raw_bytes").num() - 16.0 * n).abs() < 0.5);
    assert!((j.get("ratio").num() - 16.0 * n / len).abs() < 1e-9 * len);

    // Zero one vertex of a critical point's triangle: verify fails on the
    // raw reconstruction with the oracle's count of differences.
    let tri = oracle::triangle_vertices(want[0].0, f.nx);
    let (mut u2, mut v2) = (f.u.clone(), f.v.clone());
    let k = tri[0].1 * f.nx + tri[0].0;
    u2[k] = -f.u[k] * 3.0 - 1.0;
    v2[k] = -f.v[k] * 3.0 - 1.0;
    let d = oracle::diff(&f.u, &f.v, &u2, &v2, f.ny, f.nx);
    assert!(!d.is_clean());
    let recon = path("recon.f64");
    std::fs::write(&recon, raw(&u2, &v2)).unwrap();
    let out = run(&[
        "verify", "--dtype", "f64", "--shape", &shape, "--json", &inp, &recon,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = parse_json(&String::from_utf8_lossy(&out.stdout));
    let got = |k: &str| j.get(k).num() as usize;
    assert_eq!(
        (got("p1_lost"), got("p2_spurious"), got("p3_type_changed")),
        (d.lost, d.spurious, d.type_changed)
    );
    // Read as f32, the same bytes are another shape's worth: a one-line error.
    let out = run(&["verify", "--shape", &shape, &inp, &recon]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--dtype"), "{err}");

    let png = path("f64.png");
    let out = run(&["verify", &inp, &fz, "--plot", &png, "--plot-size", "96"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));

    let out = run(&["verify", "--dtype", "f32", &inp, &fz]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("holds f64"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
