//! `compress`, `decompress`, `verify` and `inspect`.

use crate::args::{self, switch, val, Args, FlagSpec};
use crate::backend;
use crate::fileio::{self, shown, Progress};
use crate::json::{Json, Obj};
use crate::particle_commands::{self, PARTICLE_ONLY};
use crate::plot;
use crate::stats::{self, short};
use crate::{help, CliError, CliResult};
use factz::field::metrics;
use factz::field::{self, stream, Bound, Coder, FieldConfig, Layout, Mode};
use factz::format::{self, Kind};
use factz::{backend::Backend, Real};
use std::ffi::OsString;
use std::fmt::Write as _;

pub fn print_help_if(a: &Args, text: &str) -> CliResult<bool> {
    if a.help {
        fileio::print_stdout(text)?;
    }
    Ok(a.help)
}

pub fn compress(argv: Vec<OsString>) -> CliResult<u8> {
    const SPECS: &[FlagSpec] = &[
        val("kind"),
        val("shape"),
        val("layout"),
        val("mode"),
        val("abs"),
        val("rel"),
        val("coder"),
        val("zstd"),
        switch("chunk"),
        switch("verify"),
        switch("verbose"),
        val("count"),
        val("b"),
        val("eta"),
        val("box"),
        val("base"),
        val("method"),
        val("edit-bits"),
        val("max-iters"),
        val("backend"),
        val("dtype"),
    ];
    let a = args::parse("compress", argv, SPECS)?;
    if print_help_if(&a, help::COMPRESS)? {
        return Ok(0);
    }
    if a.kind()? == Some(Kind::Particles) {
        return particle_commands::compress(&a);
    }
    a.refuse(&PARTICLE_ONLY, "--kind particles")?;
    let (ny, nx) = a
        .shape()?
        .ok_or_else(|| a.usage_err("--shape NY,NX is required"))?;
    let layout = a.layout()?.unwrap_or(Layout::Soa);
    let mode = match a.value("mode") {
        None => Mode::Speculative,
        Some(m) => args::parse_mode(m)
            .ok_or_else(|| a.usage_err(format!("bad --mode '{m}': expected b or s")))?,
    };
    let bound = a.bound()?.unwrap_or(Bound::Rel(1e-3));
    let coder = a.coder()?.unwrap_or(Coder::Rans);
    let zstd_level = a.int_in("zstd", 0, 22)?.unwrap_or(0) as i32;
    let cfg = FieldConfig {
        mode,
        bound,
        coder,
        zstd_level,
        chunk_of_larger: a.has("chunk"),
        verify: a.has("verify"),
        layout,
    };
    field::check_config(&cfg)?;
    let backend = backend::choice(&a)?;
    a.positionals_exact(&["IN.f32", "OUT.fz"])?;
    if a.dtype_f64()? != Some(true) {
        return compress_field_as::<f32>(&a, &cfg, (ny, nx), backend);
    }
    if matches!(backend, Backend::Cuda) {
        return Err(a.usage_err("--backend cuda takes float32 fields only"));
    }
    compress_field_as::<f64>(&a, &cfg, (ny, nx), Backend::Cpu)
}

/// The field part of `compress` for element type `T`.
fn compress_field_as<T: Real>(
    a: &Args,
    cfg: &FieldConfig,
    (ny, nx): (usize, usize),
    backend: Backend,
) -> CliResult<u8> {
    let (inp, out) = (&a.positionals[0], &a.positionals[1]);
    let (layout, mode, coder) = (cfg.layout, cfg.mode, cfg.coder);
    let progress = Progress::for_input(2 * T::BYTES as u64 * ny as u64 * nx as u64);
    progress.phase("reading");
    let bytes = fileio::read_all(inp)?;
    let (u, v) = fileio::field_from_bytes::<T>(&bytes, ny, nx, layout, inp)?;
    drop(bytes);
    progress.phase(if cfg.verify {
        "compressing and verifying"
    } else {
        "compressing"
    });
    let (c, ran) = match (T::as_f32(&u), T::as_f32(&v)) {
        (Some(u), Some(v)) => backend::compress_field(backend, u, v, ny, nx, cfg)?,
        _ => (
            field::compress(&u, &v, ny, nx, cfg)
                .map_err(|e| CliError::fail(format!("compress: {e}")))?,
            "cpu".to_string(),
        ),
    };
    progress.phase("writing");
    fileio::write_all(out, &c.bytes)?;
    progress.done();
    if a.has("verbose") {
        let raw = 2 * T::BYTES * u.len();
        let r = &c.report;
        eprintln!(
            "factz: {} -> {}: {ny}x{nx} {} {} mode {} {}, abs bound {}, {} -> {} bytes (ratio {}, {} bits/value), {} exact vertices{}{}; backend {ran}",
            shown(inp),
            if out == "-" { "<stdout>" } else { out },
            T::NAME,
            layout.name(),
            mode.name(),
            coder.name(),
            short(r.abs_bound),
            raw,
            c.bytes.len(),
            short(raw as f64 / c.bytes.len() as f64),
            short(8.0 * c.bytes.len() as f64 / (2 * u.len()) as f64),
            r.exact_vertices,
            if r.verified { ", verified" } else { "" },
            if r.lossless_fallback { ", LOSSLESS FALLBACK" } else { "" },
        );
    }
    Ok(0)
}

/// The kind of data a stream holds (its header checked).
fn stream_kind(bytes: &[u8], path: &str) -> CliResult<Kind> {
    let p = format::parse(bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))?;
    Ok(p.header.kind)
}

pub fn decode<T: Real>(bytes: &[u8], path: &str) -> CliResult<field::Decoded<T>> {
    field::decompress_as::<T>(bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))
}

/// Whether a field input holds f64: a stream says so itself (and `--dtype`,
/// if given, must agree), a raw file is what `--dtype` says (f32 by default).
pub fn field_is_f64(a: &Args, bytes: &[u8], path: &str, is_stream: bool) -> CliResult<bool> {
    let flag = a.dtype_f64()?;
    if !is_stream {
        return Ok(flag == Some(true));
    }
    let info = field::info(bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))?;
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

pub fn decompress(argv: Vec<OsString>) -> CliResult<u8> {
    let a = args::parse("decompress", argv, &[val("layout"), val("vtk")])?;
    if print_help_if(&a, help::DECOMPRESS)? {
        return Ok(0);
    }
    let layout = a.layout()?;
    let vtk_out = a.value("vtk");
    a.positionals_exact(&["IN.fz", "OUT.f32"])?;
    let (inp, out) = (&a.positionals[0], &a.positionals[1]);
    if vtk_out.is_some_and(|v| v == "-" || v == out) {
        return Err(a.usage_err("--vtk needs a file of its own (not - and not OUT.f32)"));
    }
    let bytes = fileio::read_all(inp)?;
    if stream_kind(&bytes, inp)? == Kind::Particles {
        return particle_commands::decompress(bytes, inp, out, layout, vtk_out);
    }
    // The stream says its element type; OUT gets the same.
    let info = field::info(&bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(inp))))?;
    match info.dtype {
        "f64" => decompress_field_as::<f64>(bytes, (inp, out), layout, vtk_out, &info),
        _ => decompress_field_as::<f32>(bytes, (inp, out), layout, vtk_out, &info),
    }
}

/// The field part of `decompress` for element type `T`.
fn decompress_field_as<T: Real>(
    bytes: Vec<u8>,
    (inp, out): (&str, &str),
    layout: Option<Layout>,
    vtk_out: Option<&str>,
    info: &field::FieldInfo,
) -> CliResult<u8> {
    let progress = Progress::for_input(2 * T::BYTES as u64 * info.ny as u64 * info.nx as u64);
    progress.phase("decompressing");
    let d = field::decompress_as::<T>(&bytes)
        .map_err(|e| CliError::fail(format!("{}: {e}", shown(inp))))?;
    drop(bytes);
    progress.phase("writing");
    let raw = fileio::field_to_bytes(&d.u, &d.v, layout.unwrap_or(d.layout));
    fileio::write_all(out, &raw)?;
    if let Some(path) = vtk_out {
        progress.phase("writing VTK");
        fileio::write_all(path, &factz::vtk::field_vti(&d.u, &d.v, d.ny, d.nx))?;
    }
    progress.done();
    Ok(0)
}

pub fn verify(argv: Vec<OsString>) -> CliResult<u8> {
    const SPECS: &[FlagSpec] = &[
        val("kind"),
        val("shape"),
        val("layout"),
        val("abs"),
        val("rel"),
        switch("json"),
        val("count"),
        val("b"),
        val("eta"),
        val("box"),
        val("min-members"),
        val("plot"),
        val("against"),
        val("plot-size"),
        val("dtype"),
    ];
    let a = args::parse("verify", argv, SPECS)?;
    if print_help_if(&a, help::VERIFY)? {
        return Ok(0);
    }
    let kind_flag = a.kind()?;
    let shape = a.shape()?;
    let layout_flag = a.layout()?;
    let bound_flag = a.bound()?;
    a.positionals_exact(&["ORIG.f32", "IN.fz|RECON.f32"])?;
    let (orig_path, second_path) = (&a.positionals[0], &a.positionals[1]);
    if orig_path == "-" && second_path == "-" {
        return Err(a.usage_err("only one of the two inputs can be - (stdin)"));
    }
    let progress = Progress::for_input(fileio::input_len(orig_path).unwrap_or(0));
    progress.phase("reading");
    let second = fileio::read_all(second_path)?;
    let is_stream = fileio::is_stream(&second);
    let kind = if is_stream {
        let k = stream_kind(&second, second_path)?;
        if let Some(f) = kind_flag.filter(|&f| f != k) {
            return Err(a.usage_err(format!(
                "--kind {} does not match {}, which holds {}",
                f.name(),
                shown(second_path),
                k.name()
            )));
        }
        k
    } else {
        kind_flag.unwrap_or(Kind::Field2d)
    };
    let plot = a.value("plot");
    if plot.is_none() {
        if let Some(f) = a.given(&["against", "plot-size"]).first() {
            return Err(a.usage_err(format!("--{f} only goes with --plot OUT.png")));
        }
    }
    let plot_px = a
        .int_in("plot-size", 64, 8192)?
        .map_or(plot::PANEL, |p| p as usize);
    if kind == Kind::Particles {
        let plot = plot.map(|p| (p, a.value("against"), plot_px));
        let second = (second, second_path.as_str(), is_stream);
        return particle_commands::verify(&a, orig_path, second, plot, progress);
    }
    a.refuse(&PARTICLE_ONLY, "--kind particles")?;
    if field_is_f64(&a, &second, second_path, is_stream)? {
        let read = (second, second_path.as_str(), is_stream);
        let inputs =
            FieldInputs::<f64>::load(&a, orig_path, read, (shape, layout_flag), &progress)?;
        verify_field(&a, inputs, bound_flag, plot, plot_px, progress)
    } else {
        let read = (second, second_path.as_str(), is_stream);
        let inputs =
            FieldInputs::<f32>::load(&a, orig_path, read, (shape, layout_flag), &progress)?;
        verify_field(&a, inputs, bound_flag, plot, plot_px, progress)
    }
}

/// The field part of `verify` once both inputs are read.
fn verify_field<T: Real>(
    a: &Args,
    inputs: FieldInputs<T>,
    bound_flag: Option<Bound>,
    plot: Option<&str>,
    plot_px: usize,
    progress: Progress,
) -> CliResult<u8> {
    let second_path = &a.positionals[1];
    progress.phase("comparing");
    let report = inputs.compare(bound_flag);
    if let Some(path) = plot {
        progress.phase("plotting");
        inputs.plot(
            path,
            second_path,
            a.value("against"),
            report.ratio(),
            plot_px,
        )?;
    }
    progress.done();
    fileio::print_report(a.has("json"), || report.json(), || report.text())?;
    report.outcome()
}

/// The two fields a `verify` compares, read and decoded.
struct FieldInputs<T: Real> {
    ny: usize,
    nx: usize,
    layout: Layout,
    orig: (Vec<T>, Vec<T>),
    recon: (Vec<T>, Vec<T>),
    /// The stream's absolute bound and length, for a stream.
    stream_bound: Option<f64>,
    stream_len: Option<usize>,
}

impl<T: Real> FieldInputs<T> {
    /// `second` is a stream (shape and layout from it, checked against the
    /// flags) or a raw reconstruction (`--shape` required).
    fn load(
        a: &Args,
        orig_path: &str,
        (second, second_path, is_stream): (Vec<u8>, &str, bool),
        (shape, layout_flag): (Option<(usize, usize)>, Option<Layout>),
        progress: &Progress,
    ) -> CliResult<FieldInputs<T>> {
        if is_stream {
            progress.phase("decompressing");
        }
        let (ny, nx, layout, recon, stream_bound, stream_len) = if is_stream {
            let d = decode(&second, second_path)?;
            if let Some((sy, sx)) = shape {
                if (sy, sx) != (d.ny, d.nx) {
                    return Err(CliError::fail(format!(
                        "--shape {sy},{sx} does not match the stream's shape {},{}",
                        d.ny, d.nx
                    )));
                }
            }
            let info = field::info(&second)?;
            (
                d.ny,
                d.nx,
                layout_flag.unwrap_or(d.layout),
                (d.u, d.v),
                Some(info.abs_bound),
                Some(second.len()),
            )
        } else {
            let (ny, nx) = shape.ok_or_else(|| {
                a.usage_err(format!(
                    "{} is not a factz stream, so --shape NY,NX is required for a raw {} reconstruction (or --kind particles for positions)",
                    shown(second_path),
                    T::NAME
                ))
            })?;
            let layout = layout_flag.unwrap_or(Layout::Soa);
            let recon = fileio::field_from_bytes(&second, ny, nx, layout, second_path)?;
            (ny, nx, layout, recon, None, None)
        };
        drop(second);
        let orig_bytes = fileio::read_all(orig_path)?;
        let orig = fileio::field_from_bytes(&orig_bytes, ny, nx, layout, orig_path)?;
        Ok(FieldInputs {
            ny,
            nx,
            layout,
            orig,
            recon,
            stream_bound,
            stream_len,
        })
    }

    /// `verify --plot`: the original, the reconstruction and `against` (raw
    /// float32 in the same shape and layout, or a field stream) side by side.
    fn plot(
        &self,
        path: &str,
        second_path: &str,
        against: Option<&str>,
        ratio: Option<f64>,
        plot_px: usize,
    ) -> CliResult<()> {
        let other = match against {
            None => None,
            Some(p) => {
                let bytes = fileio::read_all(p)?;
                Some(if fileio::is_stream(&bytes) {
                    let d = decode(&bytes, p)?;
                    if (d.ny, d.nx) != (self.ny, self.nx) {
                        return Err(CliError::fail(format!(
                            "{} has shape {},{}, not {},{}",
                            shown(p),
                            d.ny,
                            d.nx,
                            self.ny,
                            self.nx
                        )));
                    }
                    (d.u, d.v)
                } else {
                    fileio::field_from_bytes(&bytes, self.ny, self.nx, self.layout, p)?
                })
            }
        };
        let title = match ratio {
            Some(r) => format!("factz, ratio {r:.1}"),
            None => shown(second_path).to_string(),
        };
        let mut panels = vec![plot::Panel {
            title,
            u: &self.recon.0,
            v: &self.recon.1,
        }];
        if let (Some((u, v)), Some(p)) = (&other, against) {
            panels.push(plot::Panel {
                title: shown(p).to_string(),
                u,
                v,
            });
        }
        let orig = (&self.orig.0[..], &self.orig.1[..]);
        plot::field_png(path, self.ny, self.nx, orig, "original", &panels, plot_px)
    }

    /// The library's metrics under the given bound, else the stream's.
    fn compare(&self, bound_flag: Option<field::Bound>) -> FieldVerify {
        let (u, v) = (&self.orig.0, &self.orig.1);
        let (bound, bound_from) = match bound_flag {
            Some(b) => (Some(field::absolute_bound(u, v, b)), "given"),
            None => (
                self.stream_bound,
                if self.stream_bound.is_some() {
                    "stream"
                } else {
                    "none"
                },
            ),
        };
        let recon = (&self.recon.0[..], &self.recon.1[..]);
        FieldVerify {
            ny: self.ny,
            nx: self.nx,
            dtype: T::NAME,
            value_bytes: T::BYTES,
            layout: self.layout,
            values: 2 * u.len(),
            bound,
            bound_from,
            bound_flag,
            err: metrics::errors((u, v), recon, bound),
            topo: metrics::topo((u, v), recon, self.ny, self.nx),
            stream_len: self.stream_len,
        }
    }
}

/// What a field `verify` found, and how it reports it.
struct FieldVerify {
    ny: usize,
    nx: usize,
    dtype: &'static str,
    value_bytes: usize,
    layout: Layout,
    values: usize,
    bound: Option<f64>,
    bound_from: &'static str,
    bound_flag: Option<field::Bound>,
    err: metrics::Errors,
    topo: metrics::Topo,
    stream_len: Option<usize>,
}

impl FieldVerify {
    fn ok(&self) -> bool {
        self.topo.total() == 0 && self.err.ok()
    }
    fn raw(&self) -> usize {
        self.value_bytes * self.values
    }
    fn ratio(&self) -> Option<f64> {
        self.stream_len.map(|s| self.raw() as f64 / s as f64)
    }
    fn bits(&self) -> Option<f64> {
        self.stream_len.map(|s| 8.0 * s as f64 / self.values as f64)
    }
    fn max_over_bound(&self) -> Option<f64> {
        self.bound
            .filter(|&b| b > 0.0)
            .map(|b| self.err.max_abs / b)
    }
    fn max_rel(&self) -> Option<f64> {
        (self.err.range > 0.0).then(|| self.err.max_abs / self.err.range)
    }

    fn json(&self) -> Obj {
        let (err, topo) = (&self.err, &self.topo);
        Obj::new()
            .put("ok", self.ok())
            .put("shape", vec![self.ny, self.nx])
            .put("dtype", self.dtype)
            .put("layout", self.layout.name())
            .put("critical_points", topo.original)
            .put("p1_lost", topo.p1)
            .put("p2_spurious", topo.p2)
            .put("p3_type_changed", topo.p3)
            .put("abs_bound", self.bound)
            .put("bound_from", self.bound_from)
            .put("max_abs_error", err.max_abs)
            .put("max_error_over_bound", self.max_over_bound())
            .put("max_rel_error", self.max_rel())
            .put("values_compared", err.finite)
            .put("values_outside_bound", err.outside)
            .put("nonfinite_values", err.nonfinite)
            .put("nonfinite_changed", err.nonfinite_changed)
            .put("value_range", err.range)
            .put("mse", err.mse)
            .put("psnr_db", err.psnr())
            .put("stream_bytes", self.stream_len)
            .put("raw_bytes", self.raw())
            .put("ratio", self.ratio())
            .put("bits_per_value", self.bits())
    }

    fn text(&self) -> String {
        let (err, topo) = (&self.err, &self.topo);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "shape:            {} x {} (ny x nx) {}, layout {}",
            self.ny,
            self.nx,
            self.dtype,
            self.layout.name()
        );
        let _ = writeln!(s, "critical points:  {} in the original", topo.original);
        let _ = writeln!(s, "P1 lost:          {}", topo.p1);
        let _ = writeln!(s, "P2 spurious:      {}", topo.p2);
        let _ = writeln!(s, "P3 type changed:  {}", topo.p3);
        match self.bound {
            Some(b) => {
                let _ = writeln!(
                    s,
                    "bound:            {} ({}), {} values outside",
                    short(b),
                    stats::bound_origin(self.bound_flag),
                    err.outside
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "bound:            none known (give --abs or --rel to check one)"
                );
            }
        }
        let _ = write!(s, "max abs error:    {}", short(err.max_abs));
        if let Some(r) = self.max_over_bound() {
            let _ = write!(s, " ({} of the bound)", short(r));
        }
        s.push('\n');
        if let Some(r) = self.max_rel() {
            let _ = writeln!(
                s,
                "max rel error:    {} of the value range {}",
                short(r),
                short(err.range)
            );
        }
        let _ = writeln!(s, "PSNR:             {} dB", short(err.psnr()));
        if err.nonfinite > 0 || err.nonfinite_changed > 0 {
            let _ = writeln!(
                s,
                "non-finite:       {} values, {} changed",
                err.nonfinite, err.nonfinite_changed
            );
        }
        if let (Some(r), Some(b), Some(len)) = (self.ratio(), self.bits(), self.stream_len) {
            let _ = writeln!(
                s,
                "ratio:            {} ({} -> {len} bytes), {} bits/value",
                short(r),
                self.raw(),
                short(b)
            );
        }
        let ok = if self.ok() { "OK" } else { "FAILED" };
        let _ = writeln!(s, "result:           {ok}");
        s
    }

    /// Exit status 0, or the failure naming what differs.
    fn outcome(&self) -> CliResult<u8> {
        if self.ok() {
            return Ok(0);
        }
        let (err, topo) = (&self.err, &self.topo);
        let mut why = Vec::new();
        if topo.total() > 0 {
            why.push(format!(
                "{} critical points differ (P1 {}, P2 {}, P3 {})",
                topo.total(),
                topo.p1,
                topo.p2,
                topo.p3
            ));
        }
        if err.outside > 0 {
            why.push(format!(
                "{} values exceed the bound {} (max error {})",
                err.outside,
                short(self.bound.unwrap_or(0.0)),
                short(err.max_abs)
            ));
        }
        if err.nonfinite_changed > 0 {
            why.push(format!(
                "{} non-finite values changed",
                err.nonfinite_changed
            ));
        }
        Err(CliError::fail(format!("verify failed: {}", why.join("; "))))
    }
}

fn section_name(id: u32) -> &'static str {
    match id {
        stream::SEC_MASK => "mask",
        stream::SEC_RAW => "raw",
        stream::SEC_IDS => "ids",
        stream::SEC_CODES => "codes",
        _ => "?",
    }
}

pub fn flag_names(flags: u32) -> Vec<&'static str> {
    let mut out = Vec::new();
    if flags & format::FLAG_CHUNK_OF_LARGER != 0 {
        out.push("chunk_of_larger");
    }
    if flags & format::FLAG_VERIFIED != 0 {
        out.push("verified");
    }
    if flags & format::FLAG_LOSSLESS_FALLBACK != 0 {
        out.push("lossless_fallback");
    }
    out
}

fn mode_name(m: u8) -> String {
    match m {
        stream::MODE_LOSSLESS => "lossless".into(),
        m => match Mode::from_u8(m) {
            Some(Mode::Blockwise) => "b (block-wise)".into(),
            Some(Mode::Speculative) => "s (speculative)".into(),
            None => format!("unknown ({m})"),
        },
    }
}

pub fn inspect(argv: Vec<OsString>) -> CliResult<u8> {
    let a = args::parse("inspect", argv, &[switch("json")])?;
    if print_help_if(&a, help::INSPECT)? {
        return Ok(0);
    }
    a.positionals_exact(&["IN.fz"])?;
    let path = &a.positionals[0];
    let bytes = fileio::read_all(path)?;
    let p = format::parse(&bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))?;
    let h = &p.header;
    if h.kind == Kind::Particles {
        return particle_commands::inspect(&a, path, &bytes, &p);
    }
    // The field-level reading checks the header's values too.
    let info = field::info(&bytes).map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))?;
    let crc_ok = section_crcs(&bytes, &p);
    let raw_bytes = if info.dtype == "f64" { 16 } else { 8 } * info.ny * info.nx;
    let ratio = raw_bytes as f64 / bytes.len() as f64;
    let bits = 8.0 * bytes.len() as f64 / (2 * info.ny * info.nx) as f64;
    let coder_name = Coder::from_u8(h.coder)
        .map(|c| c.name().to_string())
        .unwrap_or(format!("unknown ({})", h.coder));
    let layout_name = match h.layout {
        0 => "soa".to_string(),
        1 => "aos".to_string(),
        x => format!("unknown ({x})"),
    };

    if a.has("json") {
        let sections = section_json(&p, &crc_ok, section_name);
        let mode = match h.mode {
            stream::MODE_LOSSLESS => "lossless".to_string(),
            m => Mode::from_u8(m)
                .map(|m| m.name().to_string())
                .unwrap_or(format!("unknown ({m})")),
        };
        let j = Obj::new()
            .put("file", path.as_str())
            .put("stream_bytes", bytes.len())
            .put("version", h.version as u32)
            .put("kind", h.kind.name())
            .put("dtype", info.dtype)
            .put("flags", flag_names(h.flags))
            .put("dims", h.dims.to_vec())
            .put("shape", vec![info.ny, info.nx])
            .put("layout", layout_name.as_str())
            .put("abs_bound", h.abs_bound)
            .put("mode", mode)
            .put("coder", coder_name.as_str())
            .put("zstd_level", h.zstd_level as i32)
            .put("params", h.params.to_vec())
            .put("raw_bytes", raw_bytes)
            .put("ratio", ratio)
            .put("bits_per_value", bits)
            .put("sections", Json::Arr(sections));
        fileio::print_stdout(&j.build().pretty())?;
    } else {
        let mut s = String::new();
        let _ = writeln!(s, "file:         {} ({} bytes)", shown(path), bytes.len());
        let _ = writeln!(
            s,
            "format:       version {}, kind {}, element {}",
            h.version,
            h.kind.name(),
            info.dtype
        );
        let _ = writeln!(
            s,
            "shape:        {} x {} (ny x nx), layout {}",
            info.ny, info.nx, layout_name
        );
        let _ = writeln!(s, "bound:        {} (absolute)", h.abs_bound);
        let _ = writeln!(s, "mode:         {}", mode_name(h.mode));
        let zstd = if h.zstd_level == 0 {
            "off".to_string()
        } else {
            format!("level {}", h.zstd_level)
        };
        let _ = writeln!(s, "coder:        {coder_name}, zstd {zstd}");
        let flags = flag_names(h.flags);
        let _ = writeln!(
            s,
            "flags:        {}",
            if flags.is_empty() {
                "none".to_string()
            } else {
                flags.join(", ")
            }
        );
        // Version 1 field streams leave the header's four parameters at 0
        // (particles keep b and the box there); show them only when set.
        if h.params.iter().any(|&x| x != 0.0) {
            let _ = writeln!(
                s,
                "header params: {:?} (not used by field streams)",
                h.params
            );
        }
        let _ = writeln!(
            s,
            "ratio:        {} ({raw_bytes} -> {} bytes), {} bits/value",
            short(ratio),
            bytes.len(),
            short(bits)
        );
        section_table(&mut s, &p, &crc_ok, section_name, 6);
        fileio::print_stdout(&s)?;
    }
    crc_failure(path, &p, &crc_ok)?;
    Ok(0)
}

/// `inspect --json`'s sections, their names from `name`.
pub fn section_json(
    p: &format::Parsed,
    crc_ok: &[bool],
    name: fn(u32) -> &'static str,
) -> Vec<Json> {
    p.sections
        .iter()
        .zip(crc_ok)
        .map(|(s, &ok)| {
            Obj::new()
                .put("id", s.id)
                .put("name", name(s.id))
                .put("offset", s.offset)
                .put("stored_len", s.stored_len)
                .put("raw_len", s.raw_len)
                .put("zstd", s.zstd)
                .put("crc32", format!("{:08x}", s.crc))
                .put("crc_ok", ok)
                .build()
        })
        .collect()
}

/// `inspect`'s section table: a row per section, its name from `name` in a
/// column `w` wide.
pub fn section_table(
    s: &mut String,
    p: &format::Parsed,
    crc_ok: &[bool],
    name: fn(u32) -> &'static str,
    w: usize,
) {
    let _ = writeln!(s, "sections:     {}", p.sections.len());
    let _ = writeln!(
        s,
        "  {:>3}  {:<w$} {:>10} {:>12} {:>12}  {:<4}  crc32",
        "id", "name", "offset", "stored", "raw", "zstd"
    );
    for (sec, ok) in p.sections.iter().zip(crc_ok) {
        let _ = writeln!(
            s,
            "  {:>3}  {:<w$} {:>10} {:>12} {:>12}  {:<4}  {:08x}{}",
            sec.id,
            name(sec.id),
            sec.offset,
            sec.stored_len,
            sec.raw_len,
            if sec.zstd { "yes" } else { "no" },
            sec.crc,
            if *ok { "" } else { " MISMATCH" }
        );
    }
}

/// Whether each section's stored bytes match its checksum.
pub fn section_crcs(bytes: &[u8], p: &format::Parsed) -> Vec<bool> {
    p.sections
        .iter()
        .map(|s| crc32fast::hash(&bytes[s.offset..s.offset + s.stored_len]) == s.crc)
        .collect()
}

/// The failure of `inspect` on a section whose checksum does not match.
pub fn crc_failure(path: &str, p: &format::Parsed, crc_ok: &[bool]) -> CliResult<()> {
    match crc_ok.iter().position(|ok| !ok) {
        Some(k) => Err(CliError::fail(format!(
            "{}: section {} checksum mismatch (corrupted data)",
            shown(path),
            p.sections[k].id
        ))),
        None => Ok(()),
    }
}
