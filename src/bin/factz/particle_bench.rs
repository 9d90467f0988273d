//! `factz bench --kind particles`: the link-preserving correction on each base
//! compressor at several bounds, in the manner of Table II of the
//! cluster-preserving correction paper (vulnerable pairs, violations before and
//! after, iterations, phase times, ratio before and after the correction), against
//! zstd (lossless) and each base compressor alone (SZ3 and ZFP where built in)
//! at the same absolute bound, with the FoF links it breaks and makes, and at the
//! loosest bound at which it changes none (`particle_baselines`).

use crate::args::{self, parse_base, Args, BASES};
use crate::bench::{best_of, zstd_baseline};
use crate::fileio::{self, Progress};
use crate::json::{Json, Obj};
use crate::particle_baselines;
use crate::particle_commands::{min_members, space_text, FIELD_ONLY};
use crate::sidecar::Sidecar;
use crate::stats::short;
use crate::{table, CliError, CliResult};
use factz::field::Coder;
use factz::particles::{
    self, correct, fof, metrics::ParticleMetrics, Base, Bound, Layout, Linking, ParticleConfig,
    Space, DEFAULT_ETA,
};
use factz::Real;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

struct Input<T> {
    name: String,
    pos: Vec<T>,
    period: Option<f64>,
    period_from: &'static str,
    b: f64,
    b_from: String,
}

impl<T> Input<T> {
    fn n(&self) -> usize {
        self.pos.len() / 3
    }
    fn space(&self) -> Space {
        Space {
            period: self.period,
        }
    }
}

fn load<T: Real>(a: &Args, path: &str) -> CliResult<Input<T>> {
    let side = Sidecar::beside(path);
    let count = a.count()?.or(side.particle_count());
    let layout = a.layout()?.or(side.layout()).unwrap_or(Layout::Aos);
    let bytes = fileio::read_all(path)?;
    let pos = fileio::positions_from_bytes::<T>(&bytes, count, layout, path)?;
    drop(bytes);
    let (period, period_from) = match (a.period()?, side.period) {
        (Some(l), _) => (Some(l), "given"),
        (None, Some(p)) => (p, "sidecar"),
        (None, None) => (None, "default"),
    };
    let (linking, b_from) = match (a.linking()?, side.fof_b) {
        (Some(l @ Linking::Length(_)), _) => (l, "given".to_string()),
        (Some(l @ Linking::Eta(e)), _) => (l, format!("eta {e}")),
        (None, Some(b)) => (Linking::Length(b), "sidecar fof_b".to_string()),
        (None, None) => (
            Linking::Eta(DEFAULT_ETA),
            format!("default eta {DEFAULT_ETA}"),
        ),
    };
    let b = particles::linking_length(&pos, linking, period)?;
    particles::geometry::check_linking(b, Space { period })
        .map_err(|e| CliError::usage(format!("bench: {path}: {}", e.message)))?;
    let name = Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    Ok(Input {
        name,
        pos,
        period,
        period_from,
        b,
        b_from,
    })
}

/// One line of the table.
struct Row {
    input: String,
    n: usize,
    /// Bytes per coordinate of the input (4 for f32, 8 for f64).
    value_bytes: usize,
    rel: f64,
    abs: f64,
    method: String,
    base: Option<&'static str>,
    coder: Option<&'static str>,
    /// The correction's numbers (factz rows).
    stats: Option<correct::Stats>,
    exact_particles: Option<usize>,
    lossless_fallback: bool,
    base_bytes: Option<usize>,
    bytes: usize,
    compress: Duration,
    decompress: Duration,
    /// Compress time over the base compressor's alone at the same bound.
    x_base: Option<f64>,
    /// Links and errors from scratch on the decoded positions (None: lossless).
    metrics: Option<ParticleMetrics>,
}

impl Row {
    fn raw(&self) -> usize {
        3 * self.value_bytes * self.n
    }
    fn ratio(&self) -> f64 {
        self.raw() as f64 / self.bytes as f64
    }
    fn ratio_base(&self) -> Option<f64> {
        self.base_bytes
            .filter(|&b| b > 0)
            .map(|b| self.raw() as f64 / b as f64)
    }
    /// How much the correction costs in ratio, percent.
    fn overhead(&self) -> Option<f64> {
        self.ratio_base()
            .map(|rb| 100.0 * (rb / self.ratio() - 1.0))
    }
    fn bits(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            8.0 * self.bytes as f64 / self.n as f64
        }
    }
    fn mbs(&self, d: Duration) -> f64 {
        self.raw() as f64 / 1e6 / d.as_secs_f64().max(1e-9)
    }
    fn broken(&self) -> usize {
        self.metrics.as_ref().map_or(0, |m| m.broken_links)
    }
    fn false_links(&self) -> usize {
        self.metrics.as_ref().map_or(0, |m| m.false_links)
    }
    /// Compression time outside the three correction phases (base compressor,
    /// entropy coding, container).
    fn other_s(&self) -> Option<f64> {
        self.stats
            .as_ref()
            .map(|s| (self.compress.as_secs_f64() - s.setup_s - s.optimise_s - s.check_s).max(0.0))
    }
}

/// A base compressor alone, with the links it changes from the full FoF oracle.
fn alone_row<T: Real>(
    inp: &Input<T>,
    rel: f64,
    abs: f64,
    method: String,
    al: particle_baselines::Alone<T>,
    min: usize,
) -> CliResult<Row> {
    let m = particles::metrics::compare(&inp.pos, &al.recon, inp.space(), inp.b, abs, min)?;
    Ok(Row {
        input: inp.name.clone(),
        n: inp.n(),
        value_bytes: T::BYTES,
        rel,
        abs,
        method,
        base: None,
        coder: None,
        stats: None,
        exact_particles: None,
        lossless_fallback: false,
        base_bytes: None,
        bytes: al.bytes,
        compress: al.compress,
        decompress: al.decompress,
        x_base: None,
        metrics: Some(m),
    })
}

fn raw_bytes<T: Real>(pos: &[T]) -> Vec<u8> {
    fileio::positions_to_bytes(pos, Layout::Aos)
}

pub fn bench(a: &Args) -> CliResult<u8> {
    let plan = Plan::from_args(a)?;
    if plan.f64 {
        bench_as::<f64>(a, &plan)
    } else {
        bench_as::<f32>(a, &plan)
    }
}

/// [`bench`] on inputs of element type `T` (`--dtype`).
fn bench_as<T: Real>(a: &Args, plan: &Plan) -> CliResult<u8> {
    let progress = Progress::for_input(u64::MAX);
    let mut preamble = String::new();
    let _ = writeln!(
        preamble,
        "factz {} bench --kind particles: {} threads (rayon), best of {}, MB = 1e6 bytes of {} input",
        env!("CARGO_PKG_VERSION"),
        plan.threads,
        plan.repeat,
        T::NAME
    );
    let mut rows: Vec<Row> = Vec::new();
    let mut inputs_json = Vec::new();
    for path in &a.positionals {
        if path == "-" {
            return Err(a.usage_err("bench reads files, not stdin"));
        }
        progress.phase(&format!("reading {path}"));
        let inp = load::<T>(a, path)?;
        progress.phase(&format!("{}: friends-of-friends of the original", inp.name));
        let (line, json) = describe(&inp, plan.min)?;
        preamble.push_str(&line);
        inputs_json.push(json);
        rows.extend(plan.run(&inp, &progress, &mut preamble)?);
    }
    progress.done();
    if a.has("json") {
        fileio::print_stdout(&plan.json(inputs_json, &rows))?;
    } else {
        fileio::print_stdout(&plan.text(preamble, &rows))?;
    }
    Ok(0)
}

/// What `bench --kind particles` runs: read from the flags, every one checked
/// before any work.
struct Plan {
    rels: Vec<f64>,
    bases: Vec<Base>,
    coders: Vec<Coder>,
    methods: Vec<correct::Method>,
    correction: correct::Options,
    zstd_level: i32,
    repeat: usize,
    min: usize,
    threads: usize,
    /// `--dtype f64`: the inputs as float64 (the SZ3 base takes float32).
    f64: bool,
}

impl Plan {
    fn from_args(a: &Args) -> CliResult<Plan> {
        a.refuse(&FIELD_ONLY, "--kind field2d")?;
        a.refuse(&["seed"], "--kind field2d (the synthetic field)")?;
        let rels = a.rels(&[1e-3, 1e-4, 1e-5, 1e-6])?;
        let f64 = a.dtype_f64()? == Some(true);
        let bases: Vec<Base> = match a.value("base") {
            None => BASES
                .into_iter()
                .filter(|&b| b.available() && !(f64 && b == Base::Sz3))
                .collect(),
            Some(s) => args::parse_list(s, parse_base).ok_or_else(|| {
                a.usage_err(format!(
                    "bad --base '{s}': expected a comma-separated list of {}",
                    BASES.map(Base::name).join(", ")
                ))
            })?,
        };
        if f64 && bases.contains(&Base::Sz3) {
            return Err(a.usage_err(
                "--base sz3 takes float32 positions only; float64 benches the builtin and zfp bases",
            ));
        }
        if let Some(b) = bases.iter().find(|b| !b.available()) {
            return Err(CliError::fail(format!(
                "bench: base compressor {} is not compiled in (rebuild with `--features {}`)",
                b.name(),
                b.name()
            )));
        }
        let coders = a.coders(&[Coder::Rans])?;
        let zstd_level = a.int_in("zstd", 0, 22)?.unwrap_or(0) as i32;
        let repeat = a.int_in("repeat", 1, 1000)?.unwrap_or(1) as usize;
        let min = min_members(a)?;
        let methods = match a.value("method") {
            None => vec![correct::Method::Auto],
            Some(s) => args::parse_list(s, correct::Method::parse).ok_or_else(|| {
                a.usage_err(format!(
                    "bad --method '{s}': expected a comma-separated list of auto, correct, safe"
                ))
            })?,
        };
        let mut correction = correct::Options::default();
        if let Some(m) = a.int_in("edit-bits", 2, 24)? {
            correction.edit_bits = m as u32;
        }
        if let Some(k) = a.int_in("max-iters", 0, u32::MAX as u64)? {
            correction.max_iters = k as u32;
        }
        // Checked now, on every other setting, so a bad combination fails before the work.
        a.count()?;
        a.layout()?;
        a.period()?;
        a.linking()?;
        let threads = a.threads()?;
        if a.positionals.is_empty() {
            return Err(a.usage_err(
                "--kind particles needs input files (raw float32 positions, e.g. from `factz synth --kind particles`)",
            ));
        }
        Ok(Plan {
            rels,
            bases,
            coders,
            methods,
            correction,
            zstd_level,
            repeat,
            min,
            threads,
            f64,
        })
    }

    /// Every row of one input: per bound, each base alone, factz on it (per
    /// coder and method), zstd; then each base at its loosest link-keeping
    /// bound (a base that has none gets a line in `notes`).
    fn run<T: Real>(
        &self,
        inp: &Input<T>,
        progress: &Progress,
        notes: &mut String,
    ) -> CliResult<Vec<Row>> {
        let (repeat, min, coders) = (self.repeat, self.min, &self.coders);
        let mut rows = Vec::new();
        progress.phase(&format!("{}: zstd baseline", inp.name));
        let (zbytes, ztc, ztd) = zstd_baseline(&raw_bytes(&inp.pos), repeat)?;
        for &rel in &self.rels {
            let abs = particles::absolute_bound(&inp.pos, Bound::Rel(rel));
            for &base in &self.bases {
                progress.phase(&format!("{}: rel {rel:e}, {} alone", inp.name, base.name()));
                let al = particle_baselines::alone(&inp.pos, base, abs, coders[0], repeat)?;
                let base_s = al.compress.as_secs_f64();
                let what = format!("{} alone", base.name());
                rows.push(alone_row(inp, rel, abs, what, al, min)?);
                for (&coder, &how) in coders
                    .iter()
                    .flat_map(|c| self.methods.iter().map(move |m| (c, m)))
                {
                    let row = self.factz_row(inp, progress, (rel, abs), (base, coder, how))?;
                    let x_base = row.compress.as_secs_f64() / base_s.max(1e-9);
                    rows.push(Row {
                        x_base: Some(x_base),
                        ..row
                    });
                }
            }
            rows.push(Row {
                input: inp.name.clone(),
                n: inp.n(),
                value_bytes: T::BYTES,
                rel,
                abs,
                method: "zstd-3".into(),
                base: None,
                coder: None,
                stats: None,
                exact_particles: None,
                lossless_fallback: false,
                base_bytes: None,
                bytes: zbytes,
                compress: ztc,
                decompress: ztd,
                x_base: None,
                metrics: None,
            });
        }
        // What a user of each base gets today: its loosest link-keeping bound.
        let loosest_rel = self.rels.iter().copied().fold(0.0, f64::max);
        for &base in &self.bases {
            let found = particle_baselines::loosest(
                &inp.pos,
                inp.space(),
                inp.b,
                base,
                coders[0],
                loosest_rel,
                |r| {
                    progress.phase(&format!(
                        "{}: {} alone, looking for its loosest link-keeping bound: rel {r:.2e}",
                        inp.name,
                        base.name()
                    ))
                },
            )?;
            match found {
                Some(l) => {
                    let what = format!("{} alone, loosest ({} tried)", base.name(), l.probes);
                    rows.push(alone_row(inp, l.rel, l.abs, what, l.alone, min)?);
                }
                None => {
                    let _ = writeln!(
                        notes,
                        "{}: {} alone changes links at every bound down to rel 1e-10",
                        inp.name,
                        base.name()
                    );
                }
            }
        }
        Ok(rows)
    }

    /// factz on one base, coder and method at one bound: compressed,
    /// decompressed and checked by the full FoF count (x base left to the caller).
    fn factz_row<T: Real>(
        &self,
        inp: &Input<T>,
        progress: &Progress,
        (rel, abs): (f64, f64),
        (base, coder, how): (Base, Coder, correct::Method),
    ) -> CliResult<Row> {
        let what = format!(
            "{}: rel {rel:e}, {}, {}, {}",
            inp.name,
            base.name(),
            coder.name(),
            how.name()
        );
        let cfg = ParticleConfig {
            bound: Bound::Abs(abs),
            linking: Linking::Length(inp.b),
            period: inp.period,
            base,
            coder,
            zstd_level: self.zstd_level,
            chunk_of_larger: false,
            verify: false,
            layout: Layout::Aos,
            correction: correct::Options {
                method: how,
                ..self.correction
            },
        };
        progress.phase(&format!("{what}: compressing"));
        let (tc, c) = best_of(self.repeat, || {
            particles::compress(&inp.pos, &cfg)
                .map_err(|e| CliError::fail(format!("bench: compress: {e}")))
        })?;
        progress.phase(&format!("{what}: decompressing"));
        let (td, d) = best_of(self.repeat, || {
            particles::decompress_as::<T>(&c.bytes)
                .map_err(|e| CliError::fail(format!("bench: decompress: {e}")))
        })?;
        progress.phase(&format!("{what}: checking links"));
        let m = particles::metrics::compare(&inp.pos, &d.pos, inp.space(), inp.b, abs, self.min)?;
        let r = c.report;
        let mut method = format!("factz+{}", base.name());
        if self.coders.len() > 1 {
            method += &format!("/{}", coder.name());
        }
        if how != correct::Method::Auto {
            method += &format!("/{}", how.name());
        } else if let Some(m) = r.method {
            method += &format!(" (auto: {})", m.name());
        }
        Ok(Row {
            input: inp.name.clone(),
            n: inp.n(),
            value_bytes: T::BYTES,
            rel,
            abs,
            method,
            base: Some(r.source.name()),
            coder: Some(coder.name()),
            stats: Some(r.correction),
            exact_particles: Some(r.exact_particles),
            lossless_fallback: r.lossless_fallback,
            base_bytes: Some(r.base_bytes),
            bytes: c.bytes.len(),
            compress: tc,
            decompress: td,
            x_base: None,
            metrics: Some(m),
        })
    }

    fn json(&self, inputs: Vec<Json>, rows: &[Row]) -> String {
        let results: Vec<Json> = rows.iter().map(row_json).collect();
        Obj::new()
            .put("version", env!("CARGO_PKG_VERSION"))
            .put("kind", "particles")
            .put("threads", self.threads)
            .put("repeat", self.repeat)
            .put("zstd_level", self.zstd_level)
            .put("edit_bits", self.correction.edit_bits)
            .put("max_iters", self.correction.max_iters)
            .put("sz3", cfg!(feature = "sz3"))
            .put("inputs", Json::Arr(inputs))
            .put("results", Json::Arr(results))
            .build()
            .pretty()
    }

    fn text(&self, preamble: String, rows: &[Row]) -> String {
        let mut s = preamble;
        for (b, on) in [
            ("sz3", cfg!(feature = "sz3")),
            ("zfp", cfg!(feature = "zfp")),
        ] {
            if !on {
                let _ = writeln!(
                    s,
                    "{} baseline: not built (rebuild with `--features {b}`)",
                    b.to_uppercase()
                );
            }
        }
        s.push('\n');
        s.push_str(&table(rows));
        s.push('\n');
        s.push_str(
            "vuln: vulnerable pairs; viol: pairs whose link the base output changed (for a base \
             alone: links broken + made); after: still violated after optimisation and edit \
             quantization; fallback: particles then stored exactly; times in seconds (other: base \
             compressor, coding); x base: compress time over the base alone's at that bound; ratio \
             base: raw bytes (12N, 24N for f64) / base bytes; overhead: ratio lost to the correction. \"alone, loosest\": the \
             loosest bound (rel column) at which that base alone changes no link, found by decades \
             then bisection from the loosest requested bound and checked by the full FoF count\n",
        );
        let factz_kept_all = rows
            .iter()
            .filter(|r| r.stats.is_some())
            .all(|r| r.broken() + r.false_links() == 0);
        if !factz_kept_all {
            s.push_str("WARNING: a factz row changed links (see broken / false): a library bug\n");
        }
        s
    }
}

/// The preamble line and JSON of an input: its FoF groups and halos.
fn describe<T: Real>(inp: &Input<T>, min: usize) -> CliResult<(String, Json)> {
    let n = inp.n();
    let links = fof::links(&inp.pos, inp.space(), inp.b)?;
    let labels = fof::group_labels(n, &links);
    let groups = labels
        .iter()
        .enumerate()
        .filter(|(k, &l)| l as usize == *k)
        .count();
    let halos = fof::halos(&labels, min)?;
    let largest = halos.first().map_or(0, |h| h.members.len());
    let line = format!(
        "input {}: {n} particles, b {} ({}), {} ({}); {} links, {groups} FoF groups, {} halos >= {min} (largest {largest})\n",
        inp.name,
        short(inp.b),
        inp.b_from,
        space_text(inp.period),
        inp.period_from,
        links.len(),
        halos.len(),
    );
    let json = Obj::new()
        .put("name", inp.name.as_str())
        .put("particles", n)
        .put("linking_length", inp.b)
        .put("period", inp.period)
        .put("links", links.len())
        .put("groups", groups)
        .put("min_members", min)
        .put("halos", halos.len())
        .put("largest_halo", largest)
        .build();
    Ok((line, json))
}

fn row_json(r: &Row) -> Json {
    let st = r.stats.as_ref();
    let m = r.metrics.as_ref();
    Obj::new()
        .put("input", r.input.as_str())
        .put("particles", r.n)
        .put("rel_bound", r.rel)
        .put("abs_bound", r.abs)
        .put("method", r.method.as_str())
        .put("base", r.base)
        .put("coder", r.coder)
        .put("vulnerable_pairs", m.map(|m| m.vulnerable_pairs))
        .put("violated_before", st.map(|s| s.violated_before))
        .put("iterations", st.map(|s| s.iterations))
        .put("active_particles", st.map(|s| s.active_particles))
        .put("violated_after", st.map(|s| s.violated_after))
        .put("fallback_particles", st.map(|s| s.fallback_particles))
        .put("exact_particles", r.exact_particles)
        .put("edited_coords", st.map(|s| s.edited_coords))
        .put("lossless_fallback", r.lossless_fallback)
        .put("setup_s", st.map(|s| s.setup_s))
        .put("optimise_s", st.map(|s| s.optimise_s))
        .put("check_s", st.map(|s| s.check_s))
        .put("other_s", r.other_s())
        .put("compress_s", r.compress.as_secs_f64())
        .put("times_base_alone", r.x_base)
        .put("decompress_s", r.decompress.as_secs_f64())
        .put("base_bytes", r.base_bytes)
        .put("bytes", r.bytes)
        .put("ratio_base", r.ratio_base())
        .put("ratio", r.ratio())
        .put("overhead_pct", r.overhead())
        .put("bits_per_particle", r.bits())
        .put("broken_links", r.broken())
        .put("false_links", r.false_links())
        .put(
            "identical_partition",
            m.map_or(true, |m| m.identical_partition),
        )
        .put("hmf_rel_error", m.map_or(0.0, |m| m.hmf_rel_error))
        .put(
            "max_error_over_bound",
            m.map_or(0.0, |m| {
                if r.abs > 0.0 {
                    m.max_error / r.abs
                } else {
                    0.0
                }
            }),
        )
        .put("bound_violations", m.map_or(0, |m| m.bound_violations))
        .put("psnr_db", m.map_or(f64::INFINITY, |m| m.psnr_db))
        .put("compress_mb_s", r.mbs(r.compress))
        .put("decompress_mb_s", r.mbs(r.decompress))
        .build()
}

fn secs(x: f64) -> String {
    if x < 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2}")
    }
}

fn table(rows: &[Row]) -> String {
    let header = [
        "input",
        "rel",
        "abs",
        "method",
        "vuln",
        "viol",
        "iters",
        "after",
        "fallback",
        "setup",
        "opt",
        "check",
        "other",
        "total",
        "x base",
        "ratio base",
        "ratio",
        "overhead %",
        "bits/p",
        "broken",
        "false",
        "comp MB/s",
        "dec MB/s",
    ];
    let dash = || "-".to_string();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let st = r.stats.as_ref();
            let m = r.metrics.as_ref();
            let viol = match (st, m) {
                (Some(s), _) => s.violated_before.to_string(),
                (None, Some(m)) => (m.broken_links + m.false_links).to_string(),
                _ => dash(),
            };
            let mut ratio = format!("{:.2}", r.ratio());
            if r.lossless_fallback {
                ratio.push_str(" (lossless)");
            }
            vec![
                r.input.clone(),
                format!("{:.0e}", r.rel),
                short(r.abs),
                r.method.clone(),
                m.map_or_else(dash, |m| m.vulnerable_pairs.to_string()),
                viol,
                st.map_or_else(dash, |s| s.iterations.to_string()),
                st.map_or_else(dash, |s| s.violated_after.to_string()),
                st.map_or_else(dash, |s| s.fallback_particles.to_string()),
                st.map_or_else(dash, |s| secs(s.setup_s)),
                st.map_or_else(dash, |s| secs(s.optimise_s)),
                st.map_or_else(dash, |s| secs(s.check_s)),
                r.other_s().map_or_else(dash, secs),
                secs(r.compress.as_secs_f64()),
                r.x_base.map_or_else(dash, |x| format!("{x:.1}")),
                r.ratio_base().map_or_else(dash, |x| format!("{x:.2}")),
                ratio,
                r.overhead().map_or_else(dash, |x| format!("{x:.2}")),
                format!("{:.2}", r.bits()),
                r.broken().to_string(),
                r.false_links().to_string(),
                short(r.mbs(r.compress)),
                short(r.mbs(r.decompress)),
            ]
        })
        .collect();
    // Text columns left-aligned, numbers right-aligned.
    table::aligned(&header, &cells, |k| k == 0 || k == 3)
}
