//! The vector-field guarantee, checked with the independent oracle (tests/common):
//! for every triangle, existence and type of its critical point are identical before
//! and after (P1 = P2 = P3 = 0); every finite value is within the absolute bound; NaN and
//! Inf are bit-exact; zero vectors and degenerate triangles keep their vertices exact;
//! the report's bound is the one the conventions define.
//!
//! Each case prints one line (ratio, P1/P2/P3) to stderr; a failing test prints them all.

mod common;

use common::fields::{self, Field};
use common::oracle::{self, OracleCp};
use factz::field::{compress, decompress, Bound, Coder, FieldConfig, Layout, Mode};
use std::panic::{catch_unwind, AssertUnwindSafe};

const MODES: [Mode; 2] = [Mode::Blockwise, Mode::Speculative];
const CODERS: [Coder; 2] = [Coder::Huffman, Coder::Rans];

fn combos() -> Vec<(Mode, Coder)> {
    let mut v = Vec::new();
    for m in MODES {
        for c in CODERS {
            v.push((m, c));
        }
    }
    v
}

fn cfg(mode: Mode, coder: Coder, bound: Bound, zstd_level: i32) -> FieldConfig {
    FieldConfig {
        mode,
        bound,
        coder,
        zstd_level,
        ..FieldConfig::default()
    }
}

fn cfg_name(c: &FieldConfig) -> String {
    let m = match c.mode {
        Mode::Blockwise => "B",
        Mode::Speculative => "S",
    };
    let k = match c.coder {
        Coder::Huffman => "huf",
        Coder::Rans => "rans",
        #[allow(unreachable_patterns)]
        _ => "other",
    };
    let b = match c.bound {
        Bound::Abs(x) => format!("abs{x:e}"),
        Bound::Rel(x) => format!("rel{x:e}"),
    };
    let mut s = format!("{m}/{k}/z{}/{b}", c.zstd_level);
    if c.chunk_of_larger {
        s.push_str("/chunk");
    }
    if c.verify {
        s.push_str("/verify");
    }
    if c.layout == Layout::Aos {
        s.push_str("/aos");
    }
    s
}

/// The original field with its oracle analysis, computed once for all configurations.
struct Prepared {
    f: Field,
    cps: Vec<OracleCp>,
    must_exact: Vec<bool>,
    /// (min, max) over the finite values of both components, if any.
    range: Option<(f64, f64)>,
}

fn prepare(f: Field) -> Prepared {
    let an = oracle::analyze(&f.u, &f.v, f.ny, f.nx);
    let must_exact = oracle::must_be_exact(&f.u, &f.v, f.ny, f.nx, &an);
    let mut range: Option<(f64, f64)> = None;
    for &x in f.u.iter().chain(&f.v) {
        if x.is_finite() {
            let x = x as f64;
            range = Some(match range {
                None => (x, x),
                Some((lo, hi)) => (lo.min(x), hi.max(x)),
            });
        }
    }
    Prepared {
        f,
        cps: an.cps,
        must_exact,
        range,
    }
}

/// The absolute bound the conventions define; `None` when undefined (no finite value).
fn expected_abs(p: &Prepared, b: Bound) -> Option<f64> {
    match b {
        Bound::Abs(x) => Some(x),
        Bound::Rel(t) => p.range.map(|(lo, hi)| t * (hi - lo)),
    }
}

fn within_one_ulp(a: f64, b: f64) -> bool {
    if a == b {
        return true;
    }
    if !a.is_finite() || !b.is_finite() || (a < 0.0) != (b < 0.0) {
        return false;
    }
    a.to_bits().abs_diff(b.to_bits()) <= 1
}

/// Compress, decompress and check everything; `Err` describes every violation.
fn run_case(p: &Prepared, c: &FieldConfig) -> Result<(), String> {
    let f = &p.f;
    let n = f.ny * f.nx;
    let comp = compress(&f.u, &f.v, f.ny, f.nx, c)
        .map_err(|e| format!("compress: {:?}: {}", e.kind, e.message))?;
    let dec =
        decompress(&comp.bytes).map_err(|e| format!("decompress: {:?}: {}", e.kind, e.message))?;
    let mut errs = Vec::new();
    let rep = &comp.report;
    match expected_abs(p, c.bound) {
        Some(want) => {
            if !within_one_ulp(rep.abs_bound, want) {
                errs.push(format!(
                    "report.abs_bound {:e} != expected {want:e}",
                    rep.abs_bound
                ));
            }
        }
        None => {
            if rep.abs_bound.is_nan() || rep.abs_bound < 0.0 {
                errs.push(format!(
                    "report.abs_bound {:e} (no finite values)",
                    rep.abs_bound
                ));
            }
        }
    }
    if rep.verified != c.verify {
        errs.push(format!(
            "report.verified = {} with cfg.verify = {}",
            rep.verified, c.verify
        ));
    }
    if (dec.ny, dec.nx) != (f.ny, f.nx) || dec.u.len() != n || dec.v.len() != n {
        errs.push(format!(
            "decoded shape {}x{} (u {} v {}) != {}x{}",
            dec.ny,
            dec.nx,
            dec.u.len(),
            dec.v.len(),
            f.ny,
            f.nx
        ));
        return Err(errs.join("; "));
    }
    if dec.layout != c.layout {
        errs.push(format!("decoded layout {:?} != {:?}", dec.layout, c.layout));
    }
    let bound = rep.abs_bound;
    if let Err(e) = oracle::check_bound(&f.u, &dec.u, bound) {
        errs.push(format!("u: {e}"));
    }
    if let Err(e) = oracle::check_bound(&f.v, &dec.v, bound) {
        errs.push(format!("v: {e}"));
    }
    let dcps = oracle::extract(&dec.u, &dec.v, f.ny, f.nx);
    let d = oracle::diff_cps(&p.cps, &dcps);
    if !d.is_clean() {
        errs.push(format!("topology: {d}"));
    }
    if let Err(e) = oracle::check_exact(&f.u, &f.v, &dec.u, &dec.v, &p.must_exact) {
        errs.push(e);
    }
    if rep.lossless_fallback {
        let same =
            f.u.iter()
                .zip(&dec.u)
                .chain(f.v.iter().zip(&dec.v))
                .all(|(a, b)| a.to_bits() == b.to_bits());
        if !same {
            errs.push("lossless_fallback but decoded bits differ".into());
        }
    }
    let ratio = (8 * n) as f64 / comp.bytes.len().max(1) as f64;
    eprintln!(
        "{:<46} {:<28} ratio {:>8.2} P1/P2/P3 {}/{}/{} cps {:>5} exact {:>6} {}",
        f.name,
        cfg_name(c),
        ratio,
        d.lost,
        d.spurious,
        d.type_changed,
        p.cps.len(),
        rep.exact_vertices,
        if errs.is_empty() { "ok" } else { "FAIL" }
    );
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// Runs cases, catching panics, and fails once at the end with every failure listed.
#[derive(Default)]
struct Matrix {
    runs: usize,
    failures: Vec<String>,
}

impl Matrix {
    fn run(&mut self, p: &Prepared, c: &FieldConfig) {
        self.runs += 1;
        let r = catch_unwind(AssertUnwindSafe(|| run_case(p, c)));
        let msg = match r {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(panic) => format!("PANIC: {}", panic_text(&panic)),
        };
        eprintln!("FAIL {} {}: {msg}", p.f.name, cfg_name(c));
        self.failures
            .push(format!("{} {}: {msg}", p.f.name, cfg_name(c)));
    }
    fn fail(&mut self, what: String) {
        eprintln!("FAIL {what}");
        self.failures.push(what);
    }
    fn finish(self, what: &str) {
        eprintln!(
            "{what}: {} cases, {} failed",
            self.runs,
            self.failures.len()
        );
        if !self.failures.is_empty() {
            let shown: Vec<&String> = self.failures.iter().take(30).collect();
            panic!(
                "{what}: {} of {} cases failed:\n{}",
                self.failures.len(),
                self.runs,
                shown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic)".into()
    }
}

const REL_BOUNDS: [f64; 5] = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5];

fn dense64() -> Field {
    let (u, v) = fields::synth_turbulence(64, 1, &["--k0", "8", "--t-end", "3"]);
    Field::new("dense64s1", 64, 64, u, v)
}

fn dense128() -> Field {
    let (u, v) = fields::synth_turbulence(128, 2, &["--k0", "12", "--t-end", "3"]);
    Field::new("dense128s2", 128, 128, u, v)
}

#[test]
fn turbulence_64_full_matrix() {
    let mut m = Matrix::default();
    let fields = [
        fields::turbulence(64, 1),
        fields::turbulence(64, 2),
        fields::turbulence(64, 3),
        dense64(),
    ];
    for f in fields {
        let p = prepare(f);
        for (mode, coder) in combos() {
            for &t in &REL_BOUNDS {
                m.run(&p, &cfg(mode, coder, Bound::Rel(t), 0));
            }
            for a in [1e-2, 1e-4] {
                m.run(&p, &cfg(mode, coder, Bound::Abs(a), 0));
            }
            m.run(&p, &cfg(mode, coder, Bound::Rel(1e-3), 3));
        }
    }
    m.finish("turbulence_64_full_matrix");
}

#[test]
fn turbulence_128() {
    let mut m = Matrix::default();
    let fields = [
        fields::turbulence(128, 1),
        fields::turbulence(128, 2),
        fields::turbulence(128, 3),
        dense128(),
    ];
    for (fi, f) in fields.into_iter().enumerate() {
        let p = prepare(f);
        for (ci, (mode, coder)) in combos().into_iter().enumerate() {
            for (bi, t) in [1e-2, 1e-3, 1e-4].into_iter().enumerate() {
                // zstd on for one bound per combination, rotating
                let z = if (fi + ci + bi) % 3 == 0 { 3 } else { 0 };
                m.run(&p, &cfg(mode, coder, Bound::Rel(t), z));
            }
        }
        m.run(
            &p,
            &cfg(Mode::Speculative, Coder::Rans, Bound::Abs(1e-3), 0),
        );
        m.run(
            &p,
            &cfg(Mode::Blockwise, Coder::Huffman, Bound::Abs(1e-3), 3),
        );
    }
    m.finish("turbulence_128");
}

#[test]
fn turbulence_256_few() {
    let mut m = Matrix::default();
    let p = prepare(fields::turbulence(256, 1));
    m.run(
        &p,
        &cfg(Mode::Blockwise, Coder::Huffman, Bound::Rel(1e-3), 0),
    );
    m.run(
        &p,
        &cfg(Mode::Speculative, Coder::Rans, Bound::Rel(1e-3), 3),
    );
    m.run(
        &p,
        &cfg(Mode::Speculative, Coder::Huffman, Bound::Rel(1e-2), 0),
    );
    m.run(&p, &cfg(Mode::Blockwise, Coder::Rans, Bound::Rel(1e-4), 3));
    let p = prepare(fields::turbulence(256, 3));
    m.run(
        &p,
        &cfg(Mode::Speculative, Coder::Rans, Bound::Rel(1e-5), 0),
    );
    m.run(&p, &cfg(Mode::Blockwise, Coder::Rans, Bound::Rel(1e-1), 0));
    m.finish("turbulence_256_few");
}

/// Fields of 16 anchor tiles and more get a level plan (mode S's coarse levels
/// from half the bound, `speculative::plan`): a smooth field that takes one,
/// and a turbulence mosaic, at loose to tight bounds.
#[test]
fn mode_s_level_plans() {
    let mut m = Matrix::default();
    let smooth = fields::smooth(1040, 1040, 7);
    let xi = 1e-2 * smooth.finite_span();
    let plan = factz::field::speculative::plan::choose(&smooth.u, &smooth.v, 1040, 1040, xi);
    assert!(plan.tight_from.is_some(), "a field that takes a plan");
    let t = fields::turbulence(256, 4);
    let (ny, nx) = (5 * 256, 4 * 256);
    let at = |a: &[f32], k: usize| a[(k / nx % 256) * 256 + k % nx % 256];
    let (u, v) = (0..ny * nx).map(|k| (at(&t.u, k), at(&t.v, k))).unzip();
    let tiled = Field::new("turbulence256 x 5x4", ny, nx, u, v);
    for f in [smooth, tiled] {
        let p = prepare(f);
        for rel in [1e-2, 1e-3, 1e-4] {
            m.run(&p, &cfg(Mode::Speculative, Coder::Rans, Bound::Rel(rel), 0));
        }
    }
    m.finish("mode_s_level_plans");
}

#[test]
fn odd_shapes_and_crops() {
    let mut m = Matrix::default();
    let src = fields::turbulence(256, 2);
    for (k, &(ny, nx)) in fields::ODD_SHAPES.iter().enumerate() {
        let p = prepare(fields::window(&src, 37 + 11 * k, 101 + 7 * k, ny, nx));
        for (ci, (mode, coder)) in combos().into_iter().enumerate() {
            m.run(&p, &cfg(mode, coder, Bound::Rel(1e-3), 0));
            let z = if ci % 2 == 0 { 3 } else { 0 };
            m.run(&p, &cfg(mode, coder, Bound::Rel(1e-2), z));
        }
    }
    // a dense crop with an odd size
    let p = prepare(fields::window(&dense128(), 5, 9, 77, 51));
    for (mode, coder) in combos() {
        m.run(&p, &cfg(mode, coder, Bound::Rel(1e-4), 0));
    }
    m.finish("odd_shapes_and_crops");
}

fn adversarial(which: &str) {
    let base = fields::window(&dense64(), 3, 5, 40, 36);
    let mut m = Matrix::default();
    let suite = fields::adversarial_suite(&base);
    let chosen: Vec<Field> = suite
        .into_iter()
        .filter(|f| match which {
            "linear" => f.name.starts_with("linear_"),
            _ => !f.name.starts_with("linear_"),
        })
        .collect();
    assert!(!chosen.is_empty());
    for f in chosen {
        let p = prepare(f);
        for (ci, (mode, coder)) in combos().into_iter().enumerate() {
            m.run(&p, &cfg(mode, coder, Bound::Rel(1e-2), 0));
            m.run(
                &p,
                &cfg(
                    mode,
                    coder,
                    Bound::Rel(1e-4),
                    if ci % 2 == 1 { 3 } else { 0 },
                ),
            );
            m.run(&p, &cfg(mode, coder, Bound::Abs(0.05), 0));
        }
    }
    m.finish(&format!("adversarial_{which}"));
}

#[test]
fn adversarial_fields() {
    adversarial("other");
}

#[test]
fn adversarial_linear_single_critical_points() {
    adversarial("linear");
}

#[test]
fn chunk_of_larger_keeps_perimeter_exact() {
    let mut m = Matrix::default();
    let sources = [
        fields::window(&dense64(), 7, 3, 40, 33),
        fields::window(&fields::turbulence(128, 1), 0, 0, 64, 48),
        fields::nan_mask(&fields::window(&dense64(), 0, 0, 30, 29), 3),
        fields::window(&dense64(), 1, 1, 2, 9),
    ];
    for f in sources {
        let p = prepare(f);
        let f = &p.f;
        for (mode, coder) in combos() {
            for bound in [Bound::Rel(1e-2), Bound::Rel(1e-4)] {
                let mut c = cfg(mode, coder, bound, 0);
                c.chunk_of_larger = true;
                m.run(&p, &c);
                // perimeter bit-exact
                let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
                    let comp = compress(&f.u, &f.v, f.ny, f.nx, &c)
                        .map_err(|e| format!("compress: {e}"))?;
                    let d = decompress(&comp.bytes).map_err(|e| format!("decompress: {e}"))?;
                    if d.u.len() != f.u.len() || d.v.len() != f.v.len() {
                        return Err("shape".into());
                    }
                    let mut bad = Vec::new();
                    for j in 0..f.ny {
                        for i in 0..f.nx {
                            if j != 0 && j != f.ny - 1 && i != 0 && i != f.nx - 1 {
                                continue;
                            }
                            let k = f.idx(i, j);
                            if f.u[k].to_bits() != d.u[k].to_bits()
                                || f.v[k].to_bits() != d.v[k].to_bits()
                            {
                                bad.push(format!(
                                    "({i},{j}) ({:e},{:e})->({:e},{:e})",
                                    f.u[k], f.v[k], d.u[k], d.v[k]
                                ));
                            }
                        }
                    }
                    if bad.is_empty() {
                        Ok(())
                    } else {
                        Err(format!(
                            "{} perimeter vertices not bit-exact: {}",
                            bad.len(),
                            bad.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
                        ))
                    }
                }));
                match r {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => m.fail(format!("{} {} perimeter: {e}", f.name, cfg_name(&c))),
                    Err(pn) => m.fail(format!(
                        "{} {} perimeter: PANIC {}",
                        f.name,
                        cfg_name(&c),
                        panic_text(&pn)
                    )),
                }
            }
        }
    }
    m.finish("chunk_of_larger_keeps_perimeter_exact");
}

#[test]
fn verify_reports_verified() {
    let mut m = Matrix::default();
    let sources = [
        fields::turbulence(64, 2),
        fields::nan_mask(&fields::window(&dense64(), 0, 0, 33, 40), 5),
        fields::integer_field(20, 21, 2, 9),
    ];
    for f in sources {
        let p = prepare(f);
        for (mode, coder) in combos() {
            for z in [0, 3] {
                let mut c = cfg(mode, coder, Bound::Rel(1e-3), z);
                c.verify = true;
                m.run(&p, &c); // run_case checks report.verified == cfg.verify
            }
        }
    }
    m.finish("verify_reports_verified");
}

#[test]
fn determinism_and_layout() {
    let mut m = Matrix::default();
    let f = dense128();
    let g = f.clone(); // a different allocation with the same values
    for (mode, coder) in combos() {
        for z in [0, 3] {
            let c = cfg(mode, coder, Bound::Rel(1e-3), z);
            let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
                let a =
                    compress(&f.u, &f.v, f.ny, f.nx, &c).map_err(|e| format!("compress: {e}"))?;
                let b =
                    compress(&g.u, &g.v, g.ny, g.nx, &c).map_err(|e| format!("compress: {e}"))?;
                if a.bytes != b.bytes {
                    return Err(format!(
                        "two compressions differ ({} vs {} bytes)",
                        a.bytes.len(),
                        b.bytes.len()
                    ));
                }
                if a.report != b.report {
                    return Err(format!("reports differ: {:?} vs {:?}", a.report, b.report));
                }
                let d1 = decompress(&a.bytes).map_err(|e| format!("decompress: {e}"))?;
                let d2 = decompress(&a.bytes).map_err(|e| format!("decompress: {e}"))?;
                let bits = |d: &factz::field::Decoded| -> Vec<u32> {
                    d.u.iter().chain(&d.v).map(|x| x.to_bits()).collect()
                };
                if bits(&d1) != bits(&d2) {
                    return Err("two decompressions differ".into());
                }
                Ok(())
            }));
            match r {
                Ok(Ok(())) => eprintln!("determinism {} ok", cfg_name(&c)),
                Ok(Err(e)) => m.fail(format!("determinism {}: {e}", cfg_name(&c))),
                Err(pn) => m.fail(format!(
                    "determinism {}: PANIC {}",
                    cfg_name(&c),
                    panic_text(&pn)
                )),
            }
        }
    }
    // the layout is recorded and given back
    let p = prepare(fields::turbulence(64, 1));
    for (mode, coder) in combos() {
        let mut c = cfg(mode, coder, Bound::Rel(1e-3), 0);
        c.layout = Layout::Aos;
        m.run(&p, &c);
    }
    m.finish("determinism_and_layout");
}

#[test]
fn constant_zero_tiny_and_empty() {
    let mut m = Matrix::default();
    let cases = [
        fields::zeros(16, 16),
        fields::zeros(1, 1),
        fields::zeros(1, 9),
        fields::constant(10, 13, 0.3, -7.25),
        fields::constant(1, 1, 1.5, -2.0),
        fields::constant(9, 1, -1e-40, 1e30),
        Field::new("1x1(nan,1)", 1, 1, vec![f32::NAN], vec![1.0]),
        Field::new(
            "1x1(inf,-inf)",
            1,
            1,
            vec![f32::INFINITY],
            vec![f32::NEG_INFINITY],
        ),
        Field::new("2x2 all nan", 2, 2, vec![f32::NAN; 4], vec![f32::NAN; 4]),
    ];
    for f in cases {
        let p = prepare(f);
        for (mode, coder) in combos() {
            for bound in [Bound::Rel(1e-3), Bound::Abs(0.5)] {
                let c = cfg(mode, coder, bound, 0);
                m.run(&p, &c);
                // zero and constant fields round-trip exactly (every triangle is degenerate
                // or every vertex a zero vector); 1 x N fields only need the bound.
                let f = &p.f;
                let constant = f.u.iter().all(|&x| x == f.u[0]) && f.v.iter().all(|&x| x == f.v[0]);
                if constant && f.ny >= 2 && f.nx >= 2 && f.u[0].is_finite() && f.v[0].is_finite() {
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        let comp = compress(&f.u, &f.v, f.ny, f.nx, &c).ok()?;
                        let d = decompress(&comp.bytes).ok()?;
                        Some(d.u == f.u && d.v == f.v)
                    }));
                    match r {
                        Ok(Some(true)) | Ok(None) => {} // None: already reported by run()
                        Ok(Some(false)) => {
                            m.fail(format!("{} {}: not exact", f.name, cfg_name(&c)))
                        }
                        Err(pn) => m.fail(format!(
                            "{} {}: PANIC {}",
                            f.name,
                            cfg_name(&c),
                            panic_text(&pn)
                        )),
                    }
                }
            }
        }
    }
    // 0-size inputs: Err, never a panic
    for (ny, nx) in [(0usize, 0usize), (0, 5), (5, 0)] {
        for (mode, coder) in combos() {
            let c = cfg(mode, coder, Bound::Rel(1e-3), 0);
            let r = catch_unwind(AssertUnwindSafe(|| {
                compress::<f32>(&[], &[], ny, nx, &c).map(|_| ())
            }));
            match r {
                Ok(Err(e)) if !e.message.is_empty() => {
                    eprintln!("{ny}x{nx} {}: Err({:?}: {})", cfg_name(&c), e.kind, e)
                }
                Ok(Err(_)) => m.fail(format!(
                    "{ny}x{nx} {}: Err with an empty message",
                    cfg_name(&c)
                )),
                Ok(Ok(())) => m.fail(format!(
                    "{ny}x{nx} {}: compress returned Ok for an empty field",
                    cfg_name(&c)
                )),
                Err(pn) => m.fail(format!(
                    "{ny}x{nx} {}: PANIC {}",
                    cfg_name(&c),
                    panic_text(&pn)
                )),
            }
        }
    }
    m.finish("constant_zero_tiny_and_empty");
}
