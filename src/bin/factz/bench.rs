//! `factz bench`: ratio, accuracy, topology and speed of both modes and both coders
//! at several bounds, against baselines at the same absolute bound (zstd lossless;
//! SZ3 and ZFP when built with the `sz3` and `zfp` features).

use crate::args::{self, switch, val, Args, FlagSpec};
use crate::fileio::{self, Progress};
use crate::json::{Json, Obj};
use crate::particle_commands::PARTICLE_ONLY;
use crate::sidecar::Sidecar;
use crate::stats::short;
use crate::{help, particle_bench, synth, table, CliError, CliResult};
use factz::field::metrics::{self, Topo};
use factz::field::{self, topology, Bound, Coder, FieldConfig, Layout, Mode};
use factz::format::Kind;
use factz::Real;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

struct Input<T: Real> {
    name: String,
    ny: usize,
    nx: usize,
    u: Vec<T>,
    v: Vec<T>,
}

/// One line of the table.
struct Row {
    field: String,
    rel: f64,
    abs: f64,
    method: &'static str,
    mode: &'static str,
    coder: &'static str,
    bytes: usize,
    raw: usize,
    values: usize,
    psnr: f64,
    max_over_bound: f64,
    outside: usize,
    topo: Topo,
    compress: Duration,
    decompress: Duration,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.raw as f64 / self.bytes as f64
    }
    fn bits(&self) -> f64 {
        8.0 * self.bytes as f64 / self.values as f64
    }
    fn mbs(&self, d: Duration) -> f64 {
        self.raw as f64 / 1e6 / d.as_secs_f64().max(1e-9)
    }
}

/// Best (shortest) time of `repeat` runs of `f`, and the last result.
pub fn best_of<T>(repeat: usize, mut f: impl FnMut() -> CliResult<T>) -> CliResult<(Duration, T)> {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let r = f()?;
        best = best.min(t.elapsed());
        last = Some(r);
    }
    Ok((best, last.expect("at least one run")))
}

fn load<T: Real>(
    path: &str,
    shape: Option<(usize, usize)>,
    layout: Option<Layout>,
) -> CliResult<Input<T>> {
    let (ny, nx, lay) = Sidecar::field_geometry(path, shape, layout).ok_or_else(|| {
        CliError::usage(format!(
            "bench: give --shape NY,NX for {path} (no sidecar {} beside it)",
            Path::new(path).with_extension("json").display()
        ))
    })?;
    let bytes = fileio::read_all(path)?;
    let (u, v) = fileio::field_from_bytes(&bytes, ny, nx, lay, path)?;
    let name = Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    Ok(Input { name, ny, nx, u, v })
}

#[allow(clippy::too_many_arguments)]
fn measure<T: Real>(
    inp: &Input<T>,
    rel: f64,
    abs: f64,
    method: &'static str,
    mode: &'static str,
    coder: &'static str,
    bytes: usize,
    recon: (&[T], &[T]),
    compress: Duration,
    decompress: Duration,
) -> Row {
    let err = metrics::errors((&inp.u, &inp.v), recon, Some(abs));
    let topo = metrics::topo((&inp.u, &inp.v), recon, inp.ny, inp.nx);
    Row {
        field: inp.name.clone(),
        rel,
        abs,
        method,
        mode,
        coder,
        bytes,
        raw: 2 * T::BYTES * inp.u.len(),
        values: 2 * inp.u.len(),
        psnr: err.psnr(),
        max_over_bound: if abs > 0.0 { err.max_abs / abs } else { 0.0 },
        outside: err.outside + err.nonfinite_changed,
        topo,
        compress,
        decompress,
    }
}

fn raw_bytes<T: Real>(inp: &Input<T>) -> Vec<u8> {
    fileio::field_to_bytes(&inp.u, &inp.v, Layout::Soa)
}

/// zstd level 3 on `raw` (the input's bytes as stored): lossless. Bytes,
/// compress and decompress times (best of `repeat`).
pub fn zstd_baseline(raw: &[u8], repeat: usize) -> CliResult<(usize, Duration, Duration)> {
    let fail = |e: std::io::Error| CliError::fail(format!("bench: zstd baseline: {e}"));
    let (tc, c) = best_of(repeat, || zstd::bulk::compress(raw, 3).map_err(fail))?;
    let (td, d) = best_of(repeat, || {
        zstd::bulk::decompress(&c, raw.len()).map_err(fail)
    })?;
    if d != raw {
        return Err(CliError::fail("bench: zstd baseline did not round-trip"));
    }
    Ok((c.len(), tc, td))
}

/// ZFP (fixed-accuracy mode, tolerance = the absolute bound; `factz::zfp`) on
/// u and v apart (concurrently with two threads), each as a 2D array: the
/// throughput baseline topology-agnostic users pick. Its accuracy mode bounds
/// the error only approximately; the table shows what it kept.
#[cfg(feature = "zfp")]
mod zfp_baseline {
    use super::*;
    use factz::zfp::{compress, decompress};

    pub fn run<T: Real>(inp: &Input<T>, rel: f64, abs: f64, repeat: usize) -> CliResult<Row> {
        let dims = [inp.ny, inp.nx];
        let fail = |e: factz::Error| CliError::fail(format!("bench: ZFP: {e}"));
        let (tc, (cu, cv)) = best_of(repeat, || {
            let (a, b) = rayon::join(
                || compress(&inp.u, &dims, abs),
                || compress(&inp.v, &dims, abs),
            );
            Ok((a.map_err(fail)?, b.map_err(fail)?))
        })?;
        let (td, (u, v)) = best_of(repeat, || {
            let (a, b) = rayon::join(
                || decompress::<T>(&cu, &dims, abs),
                || decompress::<T>(&cv, &dims, abs),
            );
            Ok((a.map_err(fail)?, b.map_err(fail)?))
        })?;
        Ok(measure(
            inp,
            rel,
            abs,
            "zfp",
            "-",
            "-",
            cu.len() + cv.len(),
            (&u, &v),
            tc,
            td,
        ))
    }
}

#[cfg(feature = "sz3")]
mod sz3_baseline {
    use super::*;

    fn one<S: sz3::SZ3Compressible>(
        data: &[S],
        ny: usize,
        nx: usize,
        abs: f64,
    ) -> CliResult<Vec<u8>> {
        let fail = |e: sz3::SZ3Error| CliError::fail(format!("bench: SZ3: {e}"));
        let b = sz3::DimensionedData::build(&data);
        let d = if ny > 1 && nx > 1 {
            b.dim(ny).and_then(|b| b.dim(nx))
        } else {
            b.dim(ny * nx)
        };
        let d = d.and_then(|b| b.finish()).map_err(fail)?;
        let cfg = sz3::Config::new(sz3::ErrorBound::Absolute(abs));
        sz3::compress_with_config(&d, &cfg).map_err(fail)
    }

    fn back<S: sz3::SZ3Compressible>(bytes: &[u8]) -> CliResult<Vec<S>> {
        let (_, d) = sz3::decompress::<S, _>(bytes)
            .map_err(|e| CliError::fail(format!("bench: SZ3: {e}")))?;
        Ok(d.into_data())
    }

    /// SZ3 on the input's own element type (f32 or f64).
    pub fn run<T: Real>(inp: &Input<T>, rel: f64, abs: f64, repeat: usize) -> CliResult<Row> {
        let any: &dyn std::any::Any = inp;
        match (
            any.downcast_ref::<Input<f32>>(),
            any.downcast_ref::<Input<f64>>(),
        ) {
            (Some(i), _) => run_typed(i, rel, abs, repeat),
            (_, Some(i)) => run_typed(i, rel, abs, repeat),
            _ => unreachable!("Real is f32 or f64"),
        }
    }

    /// SZ3 (default interpolation predictor) in absolute-bound mode, u and v apart
    /// (concurrently when the pool has two threads, as factz's components are).
    fn run_typed<S: Real + sz3::SZ3Compressible>(
        inp: &Input<S>,
        rel: f64,
        abs: f64,
        repeat: usize,
    ) -> CliResult<Row> {
        let (tc, (cu, cv)) = best_of(repeat, || {
            let (a, b) = rayon::join(
                || one(&inp.u, inp.ny, inp.nx, abs),
                || one(&inp.v, inp.ny, inp.nx, abs),
            );
            Ok((a?, b?))
        })?;
        let (td, (u, v)) = best_of(repeat, || {
            let (a, b) = rayon::join(|| back::<S>(&cu), || back::<S>(&cv));
            Ok((a?, b?))
        })?;
        if u.len() != inp.u.len() || v.len() != inp.v.len() {
            return Err(CliError::fail(
                "bench: SZ3 decoded the wrong number of values",
            ));
        }
        Ok(measure(
            inp,
            rel,
            abs,
            "sz3",
            "-",
            "-",
            cu.len() + cv.len(),
            (&u, &v),
            tc,
            td,
        ))
    }
}

pub fn bench(argv: Vec<OsString>) -> CliResult<u8> {
    const SPECS: &[FlagSpec] = &[
        val("kind"),
        val("shape"),
        val("layout"),
        val("rel"),
        val("mode"),
        val("coder"),
        val("zstd"),
        val("repeat"),
        val("threads"),
        val("seed"),
        switch("json"),
        val("base"),
        val("count"),
        val("b"),
        val("eta"),
        val("box"),
        val("method"),
        val("edit-bits"),
        val("max-iters"),
        val("min-members"),
        val("dtype"),
    ];
    let a = args::parse("bench", argv, SPECS)?;
    if a.help {
        fileio::print_stdout(help::BENCH)?;
        return Ok(0);
    }
    if a.kind()? == Some(Kind::Particles) {
        return particle_bench::bench(&a);
    }
    let plan = Plan::from_args(&a)?;
    if plan.f64 {
        bench_as::<f64>(&a, &plan)
    } else {
        bench_as::<f32>(&a, &plan)
    }
}

/// The field bench on inputs of element type `T`.
fn bench_as<T: Real>(a: &Args, plan: &Plan) -> CliResult<u8> {
    let progress = Progress::for_input(u64::MAX);
    let inputs = plan.inputs::<T>(a, &progress)?;
    let mut preamble = String::new();
    let _ = writeln!(
        preamble,
        "factz {} bench: {} threads (rayon), best of {}, MB = 1e6 bytes of {} input",
        env!("CARGO_PKG_VERSION"),
        plan.threads,
        plan.repeat,
        T::NAME
    );
    let mut rows = Vec::new();
    let mut fields_json = Vec::new();
    for inp in &inputs {
        progress.phase(&format!("{}: critical points", inp.name));
        let (line, json) = describe(inp);
        preamble.push_str(&line);
        fields_json.push(json);
        rows.extend(plan.run(inp, &progress)?);
    }
    progress.done();
    if a.has("json") {
        fileio::print_stdout(&plan.json(fields_json, &rows))?;
    } else {
        fileio::print_stdout(&text(preamble, &rows))?;
    }
    Ok(0)
}

/// What `bench` runs on fields: read from the flags, every one checked
/// before any work.
struct Plan {
    shape: Option<(usize, usize)>,
    layout: Option<Layout>,
    rels: Vec<f64>,
    modes: Vec<Mode>,
    coders: Vec<Coder>,
    zstd_level: i32,
    repeat: usize,
    seed: u64,
    threads: usize,
    /// `--dtype f64`: the files (or the synthetic field) as float64.
    f64: bool,
}

impl Plan {
    fn from_args(a: &Args) -> CliResult<Plan> {
        a.refuse(&PARTICLE_ONLY, "--kind particles")?;
        let f64 = a.dtype_f64()? == Some(true);
        let modes = match a.value("mode") {
            None => vec![Mode::Blockwise, Mode::Speculative],
            Some(s) => args::parse_list(s, args::parse_mode)
                .ok_or_else(|| a.usage_err(format!("bad --mode '{s}': expected b, s or b,s")))?,
        };
        let coders = a.coders(&[Coder::Huffman, Coder::Rans])?;
        if a.positionals.iter().any(|p| p == "-") {
            return Err(a.usage_err("bench reads files, not stdin"));
        }
        Ok(Plan {
            shape: a.shape()?,
            layout: a.layout()?,
            rels: a.rels(&[1e-2, 1e-3, 1e-4])?,
            modes,
            coders,
            zstd_level: a.int_in("zstd", 0, 22)?.unwrap_or(0) as i32,
            repeat: a.int_in("repeat", 1, 1000)?.unwrap_or(3) as usize,
            seed: a.int_in("seed", 0, u64::MAX)?.unwrap_or(1),
            threads: a.threads()?,
            f64,
        })
    }

    /// The files given, or the synthetic field when none is.
    fn inputs<T: Real>(&self, a: &Args, progress: &Progress) -> CliResult<Vec<Input<T>>> {
        if a.positionals.is_empty() {
            let (ny, nx) = self.shape.unwrap_or((1024, 1024));
            progress.phase("generating the synthetic field");
            let (u, v) = synth::field(ny, nx, self.seed);
            // As float64: the same values, widened.
            let widen = |a: Vec<f32>| a.into_iter().map(|x| T::from_f64(x as f64)).collect();
            let (u, v) = (widen(u), widen(v));
            let name = format!("synthetic{ny}x{nx}");
            return Ok(vec![Input { name, ny, nx, u, v }]);
        }
        a.positionals
            .iter()
            .map(|p| {
                progress.phase(&format!("reading {p}"));
                load(p, self.shape, self.layout)
            })
            .collect()
    }

    /// Every row of one field: per bound, factz per mode and coder, zstd, SZ3.
    fn run<T: Real>(&self, inp: &Input<T>, progress: &Progress) -> CliResult<Vec<Row>> {
        let mut rows = Vec::new();
        progress.phase(&format!("{}: zstd baseline", inp.name));
        let (zbytes, ztc, ztd) = zstd_baseline(&raw_bytes(inp), self.repeat)?;
        for &rel in &self.rels {
            let abs = field::absolute_bound(&inp.u, &inp.v, Bound::Rel(rel));
            for &mode in &self.modes {
                for &coder in &self.coders {
                    progress.phase(&format!(
                        "{}: rel {rel:e}, mode {}, {}",
                        inp.name,
                        mode.name(),
                        coder.name()
                    ));
                    rows.push(self.factz_row(inp, rel, abs, mode, coder)?);
                }
            }
            rows.push(Row {
                field: inp.name.clone(),
                rel,
                abs,
                method: "zstd-3",
                mode: "-",
                coder: "-",
                bytes: zbytes,
                raw: 2 * T::BYTES * inp.u.len(),
                values: 2 * inp.u.len(),
                psnr: f64::INFINITY,
                max_over_bound: 0.0,
                outside: 0,
                topo: Topo::default(),
                compress: ztc,
                decompress: ztd,
            });
            #[cfg(feature = "sz3")]
            {
                progress.phase(&format!("{}: rel {rel:e}, SZ3", inp.name));
                rows.push(sz3_baseline::run(inp, rel, abs, self.repeat)?);
            }
            #[cfg(feature = "zfp")]
            {
                progress.phase(&format!("{}: rel {rel:e}, ZFP", inp.name));
                rows.push(zfp_baseline::run(inp, rel, abs, self.repeat)?);
            }
        }
        Ok(rows)
    }

    fn factz_row<T: Real>(
        &self,
        inp: &Input<T>,
        rel: f64,
        abs: f64,
        mode: Mode,
        coder: Coder,
    ) -> CliResult<Row> {
        let cfg = FieldConfig {
            mode,
            bound: Bound::Abs(abs),
            coder,
            zstd_level: self.zstd_level,
            chunk_of_larger: false,
            verify: false,
            layout: Layout::Soa,
        };
        let (tc, c) = best_of(self.repeat, || {
            field::compress(&inp.u, &inp.v, inp.ny, inp.nx, &cfg)
                .map_err(|e| CliError::fail(format!("bench: compress: {e}")))
        })?;
        let (td, d) = best_of(self.repeat, || {
            field::decompress_as::<T>(&c.bytes)
                .map_err(|e| CliError::fail(format!("bench: decompress: {e}")))
        })?;
        Ok(measure(
            inp,
            rel,
            abs,
            "factz",
            mode.name(),
            coder.name(),
            c.bytes.len(),
            (&d.u, &d.v),
            tc,
            td,
        ))
    }

    fn json(&self, fields: Vec<Json>, rows: &[Row]) -> String {
        let results: Vec<Json> = rows.iter().map(row_json).collect();
        Obj::new()
            .put("version", env!("CARGO_PKG_VERSION"))
            .put("threads", self.threads)
            .put("repeat", self.repeat)
            .put("zstd_level", self.zstd_level)
            .put("sz3", cfg!(feature = "sz3"))
            .put("zfp", cfg!(feature = "zfp"))
            .put("fields", Json::Arr(fields))
            .put("results", Json::Arr(results))
            .build()
            .pretty()
    }
}

/// The preamble line and JSON of one field: its shape and critical points by type.
fn describe<T: Real>(inp: &Input<T>) -> (String, Json) {
    let cps = topology::extract(&inp.u, &inp.v, inp.ny, inp.nx);
    let count = |t: topology::CpType| cps.iter().filter(|c| c.kind == t).count();
    let kinds = [
        topology::CpType::Saddle,
        topology::CpType::Source,
        topology::CpType::Sink,
        topology::CpType::RepellingFocus,
        topology::CpType::AttractingFocus,
        topology::CpType::Center,
    ];
    let by_type: Vec<String> = kinds
        .iter()
        .filter(|&&k| count(k) > 0)
        .map(|&k| format!("{} {}", count(k), k.name()))
        .collect();
    let line = format!(
        "field {}: {} x {} (ny x nx), {} critical points in the original ({})\n",
        inp.name,
        inp.ny,
        inp.nx,
        cps.len(),
        by_type.join(", ")
    );
    let json = Obj::new()
        .put("name", inp.name.as_str())
        .put("shape", vec![inp.ny, inp.nx])
        .put("critical_points", cps.len())
        .build();
    (line, json)
}

fn row_json(r: &Row) -> Json {
    Obj::new()
        .put("field", r.field.as_str())
        .put("rel_bound", r.rel)
        .put("abs_bound", r.abs)
        .put("method", r.method)
        .put("mode", if r.mode == "-" { None } else { Some(r.mode) })
        .put("coder", if r.coder == "-" { None } else { Some(r.coder) })
        .put("bytes", r.bytes)
        .put("ratio", r.ratio())
        .put("bits_per_value", r.bits())
        .put("psnr_db", r.psnr)
        .put("max_error_over_bound", r.max_over_bound)
        .put("values_outside_bound", r.outside)
        .put("p1_lost", r.topo.p1)
        .put("p2_spurious", r.topo.p2)
        .put("p3_type_changed", r.topo.p3)
        .put("compress_s", r.compress.as_secs_f64())
        .put("decompress_s", r.decompress.as_secs_f64())
        .put("compress_mb_s", r.mbs(r.compress))
        .put("decompress_mb_s", r.mbs(r.decompress))
        .build()
}

fn text(preamble: String, rows: &[Row]) -> String {
    let mut s = preamble;
    if !cfg!(feature = "sz3") {
        s.push_str("SZ3 baseline: not built (rebuild with `--features sz3`)\n");
    }
    if !cfg!(feature = "zfp") {
        s.push_str("ZFP baseline: not built (rebuild with `--features zfp`)\n");
    }
    s.push('\n');
    let header = [
        "field",
        "rel",
        "abs",
        "method",
        "mode",
        "coder",
        "ratio",
        "bits/val",
        "PSNR dB",
        "maxerr/eb",
        "P1",
        "P2",
        "P3",
        "comp MB/s",
        "dec MB/s",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut eb = short(r.max_over_bound);
            if r.outside > 0 {
                eb.push_str(&format!(" ({} over)", r.outside));
            }
            vec![
                r.field.clone(),
                format!("{:.0e}", r.rel),
                short(r.abs),
                r.method.to_string(),
                r.mode.to_string(),
                r.coder.to_string(),
                format!("{:.2}", r.ratio()),
                format!("{:.3}", r.bits()),
                if r.psnr.is_finite() {
                    format!("{:.2}", r.psnr)
                } else {
                    short(r.psnr)
                },
                eb,
                r.topo.p1.to_string(),
                r.topo.p2.to_string(),
                r.topo.p3.to_string(),
                format!("{:.1}", r.mbs(r.compress)),
                format!("{:.1}", r.mbs(r.decompress)),
            ]
        })
        .collect();
    // Text columns left-aligned, numbers right-aligned.
    s.push_str(&table::aligned(&header, &cells, |k| {
        k < 6 && k != 1 && k != 2
    }));
    s.push_str(&against_baselines(rows));
    s
}

/// factz's rows as multiples of SZ3's and ZFP's at the same field and bound
/// (ratio, compress and decompress speed): how the targets read.
/// Empty when neither baseline is built.
fn against_baselines(rows: &[Row]) -> String {
    let base = |r: &Row, method: &str| {
        rows.iter()
            .find(|b| b.method == method && b.field == r.field && b.rel == r.rel)
    };
    let x = |a: f64, b: Option<f64>| b.map_or("-".to_string(), |b| format!("{:.2}", a / b));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| r.method == "factz")
        .filter(|r| base(r, "sz3").is_some() || base(r, "zfp").is_some())
        .map(|r| {
            let (sz3, zfp) = (base(r, "sz3"), base(r, "zfp"));
            let mut row = vec![
                r.field.clone(),
                format!("{:.0e}", r.rel),
                r.mode.to_string(),
                r.coder.to_string(),
            ];
            for b in [sz3, zfp] {
                row.push(x(r.ratio(), b.map(Row::ratio)));
                row.push(x(r.mbs(r.compress), b.map(|b| b.mbs(b.compress))));
                row.push(x(r.mbs(r.decompress), b.map(|b| b.mbs(b.decompress))));
            }
            row
        })
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    let header = [
        "field",
        "rel",
        "mode",
        "coder",
        "ratio/SZ3",
        "comp/SZ3",
        "dec/SZ3",
        "ratio/ZFP",
        "comp/ZFP",
        "dec/ZFP",
    ];
    format!(
        "\nfactz as a multiple of each baseline (same field, bound and threads):\n{}",
        table::aligned(&header, &cells, |k| k == 0 || k == 2 || k == 3)
    )
}
