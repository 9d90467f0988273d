//! `--kind particles` for `compress`, `decompress`, `verify` and `inspect`, and the
//! bring-your-own-compressor pair `correct` / `apply`. Positions are float32 or
//! float64 (`--dtype` for raw files; a stream says its own): each command is
//! written once over `T: Real` and the dtype picks the instance.

use crate::args::{self, switch, val, Args, FlagSpec};
use crate::backend;
use crate::commands::{
    crc_failure, flag_names, print_help_if, section_crcs, section_json, section_table,
};
use crate::fileio::{self, shown, Progress};
use crate::json::{Json, Obj};
use crate::plot;
use crate::stats::short;
use crate::{help, CliError, CliResult};
use factz::backend::Backend;
use factz::format::{self, Parsed};
use factz::particles::{
    self, metrics, stream as pstream, Base, Bound, Compressed, Layout, Linking, ParticleConfig,
    ParticleInfo, Source, Space, DEFAULT_ETA, DEFAULT_MIN_MEMBERS,
};
use factz::Real;
use std::ffi::OsString;
use std::fmt::Write as _;

/// Flags only particle commands take (refused for `--kind field2d`).
pub const PARTICLE_ONLY: [&str; 9] = [
    "count",
    "method",
    "b",
    "eta",
    "box",
    "base",
    "edit-bits",
    "max-iters",
    "min-members",
];

/// Flags only field commands take (refused for `--kind particles`).
pub const FIELD_ONLY: [&str; 2] = ["shape", "mode"];

/// Whether a particle input holds f64: a stream says so itself (and `--dtype`,
/// if given, must agree), a raw file is what `--dtype` says (f32 by default).
pub fn is_f64(a: &Args, bytes: &[u8], path: &str, is_stream: bool) -> CliResult<bool> {
    let flag = a.dtype_f64()?;
    if !is_stream {
        return Ok(flag == Some(true));
    }
    let info = stream_info(bytes, path)?;
    let f64 = info.dtype == "f64";
    match flag {
        Some(x) if x != f64 => Err(a.usage_err(format!(
            "--dtype {} does not match {}, which holds {}",
            if x { "f64" } else { "f32" },
            shown(path),
            info.dtype
        ))),
        _ => Ok(f64),
    }
}

/// The particle configuration the flags describe (defaults: rel 1e-3, eta 0.2,
/// builtin, rans, AoS), checked by the library.
pub fn config(a: &Args) -> CliResult<ParticleConfig> {
    let d = ParticleConfig::default();
    let mut correction = d.correction;
    if let Some(m) = method(a)? {
        correction.method = m;
    }
    if let Some(m) = a.int_in("edit-bits", 2, 24)? {
        correction.edit_bits = m as u32;
    }
    if let Some(k) = a.int_in("max-iters", 0, u32::MAX as u64)? {
        correction.max_iters = k as u32;
    }
    let cfg = ParticleConfig {
        bound: a.bound()?.unwrap_or(d.bound),
        linking: a.linking()?.unwrap_or(d.linking),
        period: a.period()?,
        base: a.base()?.unwrap_or(d.base),
        coder: a.coder()?.unwrap_or(d.coder),
        zstd_level: a.int_in("zstd", 0, 22)?.unwrap_or(0) as i32,
        chunk_of_larger: a.has("chunk"),
        verify: a.has("verify"),
        layout: a.layout()?.unwrap_or(Layout::Aos),
        correction,
    };
    particles::check_config(&cfg)?;
    Ok(cfg)
}

/// `--method auto|correct|safe`, if given.
pub fn method(a: &Args) -> CliResult<Option<factz::particles::correct::Method>> {
    a.value("method")
        .map(|s| {
            factz::particles::correct::Method::parse(s).ok_or_else(|| {
                a.usage_err(format!(
                    "bad --method '{s}': expected auto, correct or safe"
                ))
            })
        })
        .transpose()
}

/// `--min-members M` (default 20).
pub fn min_members(a: &Args) -> CliResult<usize> {
    Ok(a.int_in("min-members", 1, u32::MAX as u64)?
        .map_or(DEFAULT_MIN_MEMBERS, |m| m as usize))
}

/// "box 100 (periodic)" or "open boundaries".
pub fn space_text(period: Option<f64>) -> String {
    match period {
        Some(l) => format!("periodic box {}", short(l)),
        None => "open boundaries".into(),
    }
}

fn out_name(path: &str) -> &str {
    if path == "-" {
        "<stdout>"
    } else {
        path
    }
}

/// The `-v` line of `compress` and `correct`, for positions of type `T`.
fn summary<T: Real>(
    inp: &str,
    out: &str,
    n: usize,
    cfg: &ParticleConfig,
    c: &Compressed,
) -> String {
    let r = &c.report;
    let s = &r.correction;
    let raw = 3 * T::BYTES * n;
    let len = c.bytes.len();
    let bits = short(if n > 0 {
        8.0 * len as f64 / n as f64
    } else {
        0.0
    });
    let size = if r.source == Source::External {
        format!("a {len}-byte correction ({bits} bits/particle)")
    } else {
        format!(
            "{raw} -> {len} bytes (ratio {}, {bits} bits/particle)",
            short(raw as f64 / len as f64)
        )
    };
    format!(
        "factz: {} -> {}: {n} particles {} {}, {} {}, abs bound {}, b {}, {}; {size}; method {}, {} vulnerable pairs, {} violated before correction, {} iterations, {} violated after, {} exact particles, {} edited coordinates{}{}",
        shown(inp),
        out_name(out),
        T::NAME,
        cfg.layout.name(),
        r.source.name(),
        cfg.coder.name(),
        short(r.abs_bound),
        short(r.linking_length),
        space_text(cfg.period),
        r.method.map_or("none (lossless)", |m| m.name()),
        s.vulnerable_pairs,
        s.violated_before,
        s.iterations,
        s.violated_after,
        r.exact_particles,
        s.edited_coords,
        if r.verified { ", verified" } else { "" },
        match &r.fallback_reason {
            Some(why) if r.lossless_fallback => format!(", LOSSLESS FALLBACK ({why})"),
            _ => String::new(),
        },
    )
}

/// `compress --kind particles` (arguments already parsed by `commands::compress`).
pub fn compress(a: &Args) -> CliResult<u8> {
    a.refuse(&FIELD_ONLY, "--kind field2d")?;
    let f64 = a.dtype_f64()? == Some(true);
    // Before `config`, whose check would otherwise report a base missing from
    // this build rather than the one that works.
    if let Some(b) = a.base()?.filter(|&b| f64 && b == Base::Sz3) {
        return Err(a.usage_err(format!(
            "--base {} takes float32 positions only; float64 compresses with --base builtin \
             or zfp",
            b.name()
        )));
    }
    let cfg = config(a)?;
    let count = a.count()?;
    let backend = backend::choice(a)?;
    a.positionals_exact(&["IN.f32|IN.f64", "OUT.fz"])?;
    if !f64 {
        return compress_as::<f32>(a, &cfg, count, backend);
    }
    if matches!(backend, Backend::Cuda) {
        return Err(a.usage_err("--backend cuda takes float32 positions only"));
    }
    compress_as::<f64>(a, &cfg, count, Backend::Cpu)
}

/// The particle part of `compress` for element type `T`.
fn compress_as<T: Real>(
    a: &Args,
    cfg: &ParticleConfig,
    count: Option<usize>,
    backend: Backend,
) -> CliResult<u8> {
    let (inp, out) = (&a.positionals[0], &a.positionals[1]);
    let progress = Progress::for_input(fileio::input_len(inp).unwrap_or(0));
    progress.phase("reading");
    let bytes = fileio::read_all(inp)?;
    let pos = fileio::positions_from_bytes::<T>(&bytes, count, cfg.layout, inp)?;
    drop(bytes);
    progress.phase(if cfg.verify {
        "compressing and verifying"
    } else {
        "compressing"
    });
    // The GPU takes f32 only; f64 runs the library's CPU path.
    let (c, ran) = match T::as_f32(&pos) {
        Some(p) => backend::compress_particles(backend, p, cfg)?,
        None => (
            particles::compress(&pos, cfg).map_err(|e| CliError::fail(format!("compress: {e}")))?,
            "cpu".to_string(),
        ),
    };
    progress.phase("writing");
    fileio::write_all(out, &c.bytes)?;
    progress.done();
    if a.has("verbose") {
        eprintln!(
            "{}; backend {ran}",
            summary::<T>(inp, out, pos.len() / 3, cfg, &c)
        );
    }
    Ok(0)
}

fn external_message(path: &str) -> CliError {
    CliError::fail(format!(
        "{} is a correction for positions another compressor decoded, not a complete stream: \
         apply it to those positions (`factz apply`)",
        shown(path)
    ))
}

/// The header of a particle stream, checked.
fn stream_info(bytes: &[u8], path: &str) -> CliResult<ParticleInfo> {
    particles::info(bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))
}

/// Decode a complete particle stream (not a correction-only one) of element
/// type `T`.
pub fn decode<T: Real>(
    bytes: &[u8],
    path: &str,
) -> CliResult<(ParticleInfo, particles::Decoded<T>)> {
    let info = stream_info(bytes, path)?;
    if info.source == Source::External {
        return Err(external_message(path));
    }
    if info.dtype != T::NAME {
        return Err(CliError::fail(format!(
            "{} holds {} positions, not {}",
            shown(path),
            info.dtype,
            T::NAME
        )));
    }
    let d = particles::decompress_as::<T>(bytes)
        .map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))?;
    Ok((info, d))
}

/// `decompress` of a particle stream: the positions in the layout they came in
/// (or `layout` when given), of the stream's element type.
pub fn decompress(
    bytes: Vec<u8>,
    inp: &str,
    out: &str,
    layout: Option<Layout>,
    vtk_out: Option<&str>,
) -> CliResult<u8> {
    if stream_info(&bytes, inp)?.dtype == "f64" {
        decompress_as::<f64>(bytes, inp, out, layout, vtk_out)
    } else {
        decompress_as::<f32>(bytes, inp, out, layout, vtk_out)
    }
}

fn decompress_as<T: Real>(
    bytes: Vec<u8>,
    inp: &str,
    out: &str,
    layout: Option<Layout>,
    vtk_out: Option<&str>,
) -> CliResult<u8> {
    let n = stream_info(&bytes, inp)?.n;
    let progress = Progress::for_input(3 * T::BYTES as u64 * n as u64);
    progress.phase("decompressing");
    let (_, d) = decode::<T>(&bytes, inp)?;
    drop(bytes);
    progress.phase("writing");
    fileio::write_all(
        out,
        &fileio::positions_to_bytes(&d.pos, layout.unwrap_or(d.layout)),
    )?;
    if let Some(path) = vtk_out {
        progress.phase("writing VTK");
        fileio::write_all(path, &factz::vtk::particles_vtp(&d.pos))?;
    }
    progress.done();
    Ok(0)
}

/// Largest finite coordinate error (where both values are finite).
fn max_finite_error<T: Real>(orig: &[T], recon: &[T]) -> f64 {
    orig.iter()
        .zip(recon)
        .filter(|(a, r)| a.is_finite() && r.is_finite())
        .map(|(&a, &r)| (r.to_f64() - a.to_f64()).abs())
        .fold(0.0, f64::max)
}

/// `verify` of particles: ORIG against a particle stream or raw positions.
/// `plot`: `--plot`'s path, `--against`'s and the panel size.
pub fn verify(
    a: &Args,
    orig_path: &str,
    (second, second_path, is_stream): (Vec<u8>, &str, bool),
    plot: Option<(&str, Option<&str>, usize)>,
    progress: Progress,
) -> CliResult<u8> {
    a.refuse(&FIELD_ONLY, "--kind field2d")?;
    let layout_flag = a.layout()?;
    let bound_flag = a.bound()?;
    let linking_flag = a.linking()?;
    let period_flag = a.period()?;
    let count = a.count()?;
    let min_members = min_members(a)?;

    let flags = (linking_flag, period_flag, bound_flag);
    let read = (second, second_path, is_stream);
    if is_f64(a, &read.0, second_path, is_stream)? {
        let inputs = ParticleInputs::<f64>::load(orig_path, read, (layout_flag, count), &progress)?;
        verify_as(a, inputs, second_path, flags, min_members, plot, progress)
    } else {
        let inputs = ParticleInputs::<f32>::load(orig_path, read, (layout_flag, count), &progress)?;
        verify_as(a, inputs, second_path, flags, min_members, plot, progress)
    }
}

/// The rest of a particle `verify`, for element type `T`.
fn verify_as<T: Real>(
    a: &Args,
    inputs: ParticleInputs<T>,
    second_path: &str,
    flags: (Option<Linking>, Option<f64>, Option<Bound>),
    min_members: usize,
    plot: Option<(&str, Option<&str>, usize)>,
    progress: Progress,
) -> CliResult<u8> {
    progress.phase("comparing links and halos");
    let report = inputs.compare(flags, min_members)?;
    if let Some((path, against, px)) = plot {
        progress.phase("plotting");
        inputs.plot(&report, second_path, (path, against, px))?;
    }
    progress.done();
    fileio::print_report(a.has("json"), || report.json(), || report.text())?;
    report.outcome()
}

/// The two position sets a `verify` compares, read and decoded, of type `T`.
struct ParticleInputs<T> {
    orig: Vec<T>,
    recon: Vec<T>,
    layout: Layout,
    /// The stream's header and length, for a stream.
    info: Option<ParticleInfo>,
    stream_len: Option<usize>,
}

impl<T: Real> ParticleInputs<T> {
    /// `second` is a stream (count and layout from it, checked against the
    /// flags) or raw positions.
    fn load(
        orig_path: &str,
        (second, second_path, is_stream): (Vec<u8>, &str, bool),
        (layout_flag, count): (Option<Layout>, Option<usize>),
        progress: &Progress,
    ) -> CliResult<ParticleInputs<T>> {
        let (recon, layout, info, stream_len) = if is_stream {
            progress.phase("decompressing");
            let (info, d) = decode::<T>(&second, second_path)?;
            if let Some(n) = count.filter(|&n| n != d.n) {
                return Err(CliError::fail(format!(
                    "--count {n} does not match the stream's {} particles",
                    d.n
                )));
            }
            (
                d.pos,
                layout_flag.unwrap_or(d.layout),
                Some(info),
                Some(second.len()),
            )
        } else {
            let layout = layout_flag.unwrap_or(Layout::Aos);
            let recon = fileio::positions_from_bytes::<T>(&second, count, layout, second_path)?;
            (recon, layout, None, None)
        };
        drop(second);
        let n = recon.len() / 3;
        progress.phase("reading");
        let orig_bytes = fileio::read_all(orig_path)?;
        let orig = fileio::positions_from_bytes::<T>(&orig_bytes, Some(n), layout, orig_path)?;
        Ok(ParticleInputs {
            orig,
            recon,
            layout,
            info,
            stream_len,
        })
    }

    /// `verify --plot`: the original, the reconstruction and `against` (raw
    /// positions in the same count and layout, or a particle stream).
    fn plot(
        &self,
        report: &ParticleVerify,
        second_path: &str,
        (path, against, px): (&str, Option<&str>, usize),
    ) -> CliResult<()> {
        let n = self.orig.len() / 3;
        let other = match against {
            None => None,
            Some(p) => {
                let bytes = fileio::read_all(p)?;
                Some(if fileio::is_stream(&bytes) {
                    let (_, d) = decode::<T>(&bytes, p)?;
                    if d.n != n {
                        return Err(CliError::fail(format!(
                            "{} holds {} particles, not {n}",
                            shown(p),
                            d.n
                        )));
                    }
                    d.pos
                } else {
                    fileio::positions_from_bytes::<T>(&bytes, Some(n), self.layout, p)?
                })
            }
        };
        let title = match self.stream_len {
            Some(len) => format!("factz, ratio {:.2}", (3 * T::BYTES * n) as f64 / len as f64),
            None => shown(second_path).to_string(),
        };
        let mut panels = vec![plot::ParticlePanel {
            title,
            pos: &self.recon,
        }];
        if let (Some(pos), Some(p)) = (&other, against) {
            panels.push(plot::ParticlePanel {
                title: shown(p).to_string(),
                pos,
            });
        }
        let space = Space {
            period: report.period,
        };
        plot::particles_png(
            path,
            &self.orig,
            &panels,
            space,
            report.b,
            report.min_members,
            px,
        )
    }

    /// The library's metrics under the given linking length, box and bound,
    /// else the stream's (else eta 0.2, and the window of the largest error).
    fn compare(
        &self,
        (linking_flag, period_flag, bound_flag): (Option<Linking>, Option<f64>, Option<Bound>),
        min_members: usize,
    ) -> CliResult<ParticleVerify> {
        let (orig, info) = (&self.orig, &self.info);
        let period = period_flag.or(info.as_ref().and_then(|i| i.period));
        let (b, b_from) = match (linking_flag, info) {
            (Some(l), _) => (particles::linking_length(orig, l, period)?, "given"),
            (None, Some(i)) => (i.linking_length, "stream"),
            (None, None) => (
                particles::linking_length(orig, Linking::Eta(DEFAULT_ETA), period)?,
                "default eta 0.2",
            ),
        };
        let (bound, bound_from) = match (bound_flag, info) {
            (Some(bd), _) => (Some(particles::absolute_bound(orig, bd)), "given"),
            (None, Some(i)) => (Some(i.abs_bound), "stream"),
            (None, None) => (None, "none"),
        };
        // Without a bound, the vulnerable window is the one of the observed error.
        let xi = bound.unwrap_or_else(|| max_finite_error(orig, &self.recon));
        let m = metrics::compare(orig, &self.recon, Space { period }, b, xi, min_members)?;
        Ok(ParticleVerify {
            n: orig.len() / 3,
            dtype: T::NAME,
            value_bytes: T::BYTES,
            layout: self.layout,
            b,
            b_from,
            period,
            bound,
            bound_from,
            bound_flag,
            min_members,
            m,
            stream_len: self.stream_len,
        })
    }
}

/// What a particle `verify` found, and how it reports it.
struct ParticleVerify {
    n: usize,
    /// The element type and its size in bytes (the raw size the ratio uses).
    dtype: &'static str,
    value_bytes: usize,
    layout: Layout,
    b: f64,
    b_from: &'static str,
    period: Option<f64>,
    bound: Option<f64>,
    bound_from: &'static str,
    bound_flag: Option<Bound>,
    min_members: usize,
    m: metrics::ParticleMetrics,
    stream_len: Option<usize>,
}

impl ParticleVerify {
    fn changed(&self) -> usize {
        self.m.broken_links + self.m.false_links
    }
    fn ok(&self) -> bool {
        self.changed() == 0 && self.m.bound_violations == 0
    }
    fn raw(&self) -> usize {
        3 * self.value_bytes * self.n
    }
    fn ratio(&self) -> Option<f64> {
        self.stream_len.map(|s| self.raw() as f64 / s as f64)
    }
    fn bits(&self) -> Option<f64> {
        let n = self.n;
        self.stream_len.map(|s| {
            if n > 0 {
                8.0 * s as f64 / n as f64
            } else {
                0.0
            }
        })
    }
    fn max_over_bound(&self) -> Option<f64> {
        self.bound
            .filter(|&b| b > 0.0)
            .map(|b| self.m.max_error / b)
    }

    fn json(&self) -> Obj {
        let m = &self.m;
        Obj::new()
            .put("ok", self.ok())
            .put("kind", "particles")
            .put("particles", self.n)
            .put("dtype", self.dtype)
            .put("layout", self.layout.name())
            .put("linking_length", self.b)
            .put("linking_from", self.b_from)
            .put("period", self.period)
            .put("original_links", m.original_links)
            .put("broken_links", m.broken_links)
            .put("false_links", m.false_links)
            .put("vulnerable_pairs", m.vulnerable_pairs)
            .put("mcc", m.mcc)
            .put("identical_partition", m.identical_partition)
            .put("groups_original", m.groups_original)
            .put("min_members", self.min_members)
            .put("halos_original", m.halos_original)
            .put("halos_reconstructed", m.halos_reconstructed)
            .put("hmf_rel_error", m.hmf_rel_error)
            .put("abs_bound", self.bound)
            .put("bound_from", self.bound_from)
            .put("max_abs_error", m.max_error)
            .put("max_error_over_bound", self.max_over_bound())
            .put("bound_violations", m.bound_violations)
            .put("psnr_db", m.psnr_db)
            .put("stream_bytes", self.stream_len)
            .put("raw_bytes", self.raw())
            .put("ratio", self.ratio())
            .put("bits_per_particle", self.bits())
    }

    fn text(&self) -> String {
        let (m, min_members) = (&self.m, self.min_members);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "particles:          {} {}, layout {}",
            self.n,
            self.dtype,
            self.layout.name()
        );
        let _ = writeln!(
            s,
            "linking length:     {} ({}), {}",
            short(self.b),
            self.b_from,
            space_text(self.period)
        );
        let _ = writeln!(
            s,
            "links:              {} in the original; {} broken, {} false",
            m.original_links, m.broken_links, m.false_links
        );
        let _ = writeln!(
            s,
            "vulnerable pairs:   {} (window of {}), MCC {}",
            m.vulnerable_pairs,
            if self.bound.is_some() {
                "the bound"
            } else {
                "the largest error"
            },
            short(m.mcc)
        );
        let _ = writeln!(
            s,
            "FoF partition:      {} groups in the original, identical: {}",
            m.groups_original,
            if m.identical_partition { "yes" } else { "no" }
        );
        let _ = writeln!(
            s,
            "halos (>= {min_members}):{:pad$}{} original, {} reconstructed, HMF rel. error {}",
            "",
            m.halos_original,
            m.halos_reconstructed,
            short(m.hmf_rel_error),
            pad = 8usize.saturating_sub(min_members.to_string().len())
        );
        match self.bound {
            Some(bd) => {
                let _ = writeln!(
                    s,
                    "bound:              {} ({}), {} coordinates outside",
                    short(bd),
                    crate::stats::bound_origin(self.bound_flag),
                    m.bound_violations
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "bound:              none known (give --abs or --rel to check one)"
                );
                if m.bound_violations > 0 {
                    let _ = writeln!(
                        s,
                        "non-finite:         {} coordinates changed",
                        m.bound_violations
                    );
                }
            }
        }
        let _ = write!(s, "max abs error:      {}", short(m.max_error));
        if let Some(r) = self.max_over_bound() {
            let _ = write!(s, " ({} of the bound)", short(r));
        }
        s.push('\n');
        let _ = writeln!(s, "PSNR:               {} dB", short(m.psnr_db));
        if let (Some(r), Some(bp), Some(len)) = (self.ratio(), self.bits(), self.stream_len) {
            let _ = writeln!(
                s,
                "ratio:              {} ({} -> {len} bytes), {} bits/particle",
                short(r),
                self.raw(),
                short(bp)
            );
        }
        let ok = if self.ok() { "OK" } else { "FAILED" };
        let _ = writeln!(s, "result:             {ok}");
        s
    }

    /// Exit status 0, or the failure naming what differs.
    fn outcome(&self) -> CliResult<u8> {
        if self.ok() {
            return Ok(0);
        }
        let (m, changed) = (&self.m, self.changed());
        let mut why = Vec::new();
        if changed > 0 {
            why.push(format!(
                "{changed} links changed ({} broken, {} false)",
                m.broken_links, m.false_links
            ));
        }
        if m.bound_violations > 0 {
            why.push(match self.bound {
                Some(bd) => format!(
                    "{} coordinates exceed the bound {} (max error {})",
                    m.bound_violations,
                    short(bd),
                    short(m.max_error)
                ),
                None => format!(
                    "{} non-finite coordinates changed or finite ones became non-finite",
                    m.bound_violations
                ),
            });
        }
        Err(CliError::fail(format!("verify failed: {}", why.join("; "))))
    }
}

fn section_name(id: u32) -> &'static str {
    match id {
        pstream::SEC_EXACT => "exact",
        pstream::SEC_EXACT_VALUES => "exact_values",
        pstream::SEC_EDIT_MASK => "edit_mask",
        pstream::SEC_EDIT_CODES => "edit_codes",
        _ => "base",
    }
}

fn source_text(info: &ParticleInfo) -> String {
    match info.source {
        Source::Lossless => "lossless (every coordinate stored)".into(),
        Source::Base(b) => format!("{} base compressor + link correction", b.name()),
        Source::External => format!(
            "correction only, for positions another compressor decoded (crc32 {:08x})",
            info.tag
        ),
    }
}

/// `inspect` of a particle stream.
pub fn inspect(a: &Args, path: &str, bytes: &[u8], p: &Parsed) -> CliResult<u8> {
    let info = stream_info(bytes, path)?;
    let h = &p.header;
    let crc_ok = section_crcs(bytes, p);
    let raw = if info.dtype == "f64" { 24 } else { 12 } * info.n;
    let ratio = raw as f64 / bytes.len() as f64;
    let bits = if info.n > 0 {
        Some(8.0 * bytes.len() as f64 / info.n as f64)
    } else {
        None
    };
    let flags = flag_names(h.flags);
    let layout = match info.source {
        Source::Base(b) => factz::particles::base::layout(b, p, info.n),
        _ => None,
    };
    if a.has("json") {
        let sections = section_json(p, &crc_ok, section_name);
        let j = Obj::new()
            .put("file", path)
            .put("stream_bytes", bytes.len())
            .put("version", h.version as u32)
            .put("kind", h.kind.name())
            .put("dtype", info.dtype)
            .put("flags", flags)
            .put("dims", h.dims.to_vec())
            .put("particles", info.n)
            .put("shape", vec![info.n, 3])
            .put("layout", info.layout.name())
            .put("abs_bound", info.abs_bound)
            .put("mode", info.source.name())
            .put("source", info.source.name())
            .put(
                "base",
                match info.source {
                    Source::Base(b) => Some(b.name()),
                    _ => None,
                },
            )
            .put("base_layout", layout)
            .put("linking_length", info.linking_length)
            .put("period", info.period)
            .put("edit_bits", info.edit_bits)
            .put("method", info.method.map(|m| m.name()))
            .put(
                "external_crc32",
                (info.source == Source::External).then(|| format!("{:08x}", info.tag)),
            )
            .put("coder", info.coder.name())
            .put("zstd_level", info.zstd_level)
            .put("params", h.params.to_vec())
            .put("raw_bytes", raw)
            .put("ratio", ratio)
            .put("bits_per_particle", bits)
            .put("sections", Json::Arr(sections));
        fileio::print_stdout(&j.build().pretty())?;
    } else {
        let mut s = String::new();
        let _ = writeln!(s, "file:         {} ({} bytes)", shown(path), bytes.len());
        let _ = writeln!(
            s,
            "format:       version {}, kind particles, element {}",
            h.version, info.dtype
        );
        let _ = writeln!(s, "particles:    {}, layout {}", info.n, info.layout.name());
        let _ = writeln!(s, "source:       {}", source_text(&info));
        if let Some(l) = layout {
            let _ = writeln!(s, "base layout:  {l}");
        }
        let _ = writeln!(s, "bound:        {} (absolute)", info.abs_bound);
        let _ = writeln!(
            s,
            "linking:      b = {}, {}",
            info.linking_length,
            space_text(info.period)
        );
        let _ = writeln!(s, "edits:        {} bits", info.edit_bits);
        if let Some(m) = info.method {
            let _ = writeln!(s, "method:       {}", m.name());
        }
        let zstd = if info.zstd_level == 0 {
            "off".to_string()
        } else {
            format!("level {}", info.zstd_level)
        };
        let _ = writeln!(s, "coder:        {}, zstd {zstd}", info.coder.name());
        let _ = writeln!(
            s,
            "flags:        {}",
            if flags.is_empty() {
                "none".to_string()
            } else {
                flags.join(", ")
            }
        );
        if let Some(bp) = bits {
            let _ = writeln!(
                s,
                "ratio:        {} ({raw} -> {} bytes), {} bits/particle",
                short(ratio),
                bytes.len(),
                short(bp)
            );
        }
        section_table(&mut s, p, &crc_ok, section_name, 12);
        fileio::print_stdout(&s)?;
    }
    crc_failure(path, p, &crc_ok)?;
    Ok(0)
}

/// `factz correct ORIG.f32 DECODED.f32 OUT.fz`: a correction stream for positions
/// another compressor decoded (both float32, or float64 with `--dtype f64`).
pub fn correct(argv: Vec<OsString>) -> CliResult<u8> {
    const SPECS: &[FlagSpec] = &[
        val("kind"),
        val("count"),
        val("layout"),
        val("abs"),
        val("rel"),
        val("b"),
        val("eta"),
        val("box"),
        val("coder"),
        val("zstd"),
        switch("chunk"),
        val("method"),
        val("edit-bits"),
        val("max-iters"),
        switch("verbose"),
        val("dtype"),
    ];
    let a = args::parse("correct", argv, SPECS)?;
    if print_help_if(&a, help::CORRECT)? {
        return Ok(0);
    }
    if a.kind()? == Some(format::Kind::Field2d) {
        return Err(a.usage_err("corrections are for --kind particles only"));
    }
    let cfg = config(&a)?;
    let count = a.count()?;
    let f64 = a.dtype_f64()? == Some(true);
    a.positionals_exact(&["ORIG.f32", "DECODED.f32", "OUT.fz"])?;
    let (orig_path, dec_path) = (&a.positionals[0], &a.positionals[1]);
    if orig_path == "-" && dec_path == "-" {
        return Err(a.usage_err("only one of the two inputs can be - (stdin)"));
    }
    if f64 {
        correct_as::<f64>(&a, &cfg, count)
    } else {
        correct_as::<f32>(&a, &cfg, count)
    }
}

/// The rest of `correct`, for element type `T`.
fn correct_as<T: Real>(a: &Args, cfg: &ParticleConfig, count: Option<usize>) -> CliResult<u8> {
    let (orig_path, dec_path, out) = (&a.positionals[0], &a.positionals[1], &a.positionals[2]);
    let progress = Progress::for_input(fileio::input_len(orig_path).unwrap_or(0));
    progress.phase("reading");
    let orig = fileio::positions_from_bytes::<T>(
        &fileio::read_all(orig_path)?,
        count,
        cfg.layout,
        orig_path,
    )?;
    let n = orig.len() / 3;
    let decoded = fileio::positions_from_bytes::<T>(
        &fileio::read_all(dec_path)?,
        Some(n),
        cfg.layout,
        dec_path,
    )?;
    progress.phase("correcting");
    let c = particles::correct_external(&orig, &decoded, cfg)
        .map_err(|e| CliError::fail(format!("correct: {e}")))?;
    progress.phase("writing");
    fileio::write_all(out, &c.bytes)?;
    progress.done();
    if a.has("verbose") {
        eprintln!("{}", summary::<T>(orig_path, out, n, cfg, &c));
    }
    Ok(0)
}

/// `factz apply CORR.fz DECODED.f32 FIXED.f32`: apply a correction stream (to
/// positions of the element type it was made for).
pub fn apply(argv: Vec<OsString>) -> CliResult<u8> {
    let a = args::parse("apply", argv, &[val("layout"), val("dtype")])?;
    if print_help_if(&a, help::APPLY)? {
        return Ok(0);
    }
    let layout_flag = a.layout()?;
    a.positionals_exact(&["CORR.fz", "DECODED.f32", "FIXED.f32"])?;
    let (fz, dec_path, out) = (&a.positionals[0], &a.positionals[1], &a.positionals[2]);
    if fz == "-" && dec_path == "-" {
        return Err(a.usage_err("only one of the two inputs can be - (stdin)"));
    }
    let bytes = fileio::read_all(fz)?;
    let info = stream_info(&bytes, fz)?;
    if info.source != Source::External {
        return Err(CliError::fail(format!(
            "{} is a complete {} stream, not a correction: decompress it (`factz decompress`)",
            shown(fz),
            info.source.name()
        )));
    }
    let layout = layout_flag.unwrap_or(info.layout);
    if is_f64(&a, &bytes, fz, true)? {
        apply_as::<f64>(&bytes, info.n, (fz, dec_path, out), layout)
    } else {
        apply_as::<f32>(&bytes, info.n, (fz, dec_path, out), layout)
    }
}

/// The rest of `apply`, for element type `T`.
fn apply_as<T: Real>(
    bytes: &[u8],
    n: usize,
    (fz, dec_path, out): (&str, &str, &str),
    layout: Layout,
) -> CliResult<u8> {
    let progress = Progress::for_input(3 * T::BYTES as u64 * n as u64);
    progress.phase("reading");
    let mut pos =
        fileio::positions_from_bytes::<T>(&fileio::read_all(dec_path)?, Some(n), layout, dec_path)?;
    progress.phase("applying");
    particles::apply_external(bytes, &mut pos)
        .map_err(|e| CliError::fail(format!("{}: {e}", shown(fz))))?;
    progress.phase("writing");
    fileio::write_all(out, &fileio::positions_to_bytes(&pos, layout))?;
    progress.done();
    Ok(0)
}
