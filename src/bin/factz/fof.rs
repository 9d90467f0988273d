//! `factz fof`: the friends-of-friends halo catalogue of a particle set, raw
//! float32 / float64 positions or a particle stream (decoded in its own type).

use crate::args::{self, switch, val, Args, FlagSpec};
use crate::commands::print_help_if;
use crate::fileio::{self, shown, Progress};
use crate::json::{Json, Obj};
use crate::particle_commands::{self, min_members, space_text};
use crate::stats::short;
use crate::{help, CliError, CliResult};
use factz::particles::{
    fof::{self, HMF_BINS},
    geometry::check_linking,
    Layout, Linking, Space, DEFAULT_ETA,
};
use factz::Real;
use std::ffi::OsString;
use std::fmt::Write as _;

pub fn fof(argv: Vec<OsString>) -> CliResult<u8> {
    const SPECS: &[FlagSpec] = &[
        val("count"),
        val("layout"),
        val("b"),
        val("eta"),
        val("box"),
        val("min-members"),
        val("top"),
        val("labels"),
        switch("json"),
        val("dtype"),
    ];
    let a = args::parse("fof", argv, SPECS)?;
    if print_help_if(&a, help::FOF)? {
        return Ok(0);
    }
    // Every flag checked before reading the input.
    a.count()?;
    a.layout()?;
    a.linking()?;
    a.period()?;
    a.dtype_f64()?;
    min_members(&a)?;
    a.int_in("top", 0, u32::MAX as u64)?;
    a.positionals_exact(&["IN.f32|IN.f64|IN.fz"])?;
    let inp = &a.positionals[0];
    let progress = Progress::for_input(fileio::input_len(inp).unwrap_or(0));
    progress.phase("reading");
    let bytes = fileio::read_all(inp)?;
    let is_stream = fileio::is_stream(&bytes);
    if particle_commands::is_f64(&a, &bytes, inp, is_stream)? {
        let set = Input::<f64>::load(&a, bytes, is_stream)?;
        fof_as(&a, set, progress)
    } else {
        let set = Input::<f32>::load(&a, bytes, is_stream)?;
        fof_as(&a, set, progress)
    }
}

/// The positions `fof` groups, and what a stream says of them.
struct Input<T> {
    pos: Vec<T>,
    layout: Layout,
    linking: Linking,
    period: Option<f64>,
}

impl<T: Real> Input<T> {
    /// Raw positions (`--count`, `--layout`, default eta 0.2, open unless
    /// `--box`), or a stream decoded as `T`, whose linking length and box are
    /// the defaults (the links it was made to keep).
    fn load(a: &Args, bytes: Vec<u8>, is_stream: bool) -> CliResult<Input<T>> {
        let inp = &a.positionals[0];
        let (count, linking, period) = (a.count()?, a.linking()?, a.period()?);
        if !is_stream {
            let layout = a.layout()?.unwrap_or(Layout::Aos);
            return Ok(Input {
                pos: fileio::positions_from_bytes::<T>(&bytes, count, layout, inp)?,
                layout,
                linking: linking.unwrap_or(Linking::Eta(DEFAULT_ETA)),
                period,
            });
        }
        let (info, d) = particle_commands::decode::<T>(&bytes, inp)?;
        if let Some(c) = count.filter(|&c| c != d.n) {
            return Err(CliError::fail(format!(
                "--count {c} does not match the stream's {} particles",
                d.n
            )));
        }
        Ok(Input {
            pos: d.pos,
            layout: d.layout,
            linking: linking.unwrap_or(Linking::Length(info.linking_length)),
            period: period.or(info.period),
        })
    }
}

/// The catalogue of `set`, positions of type `T`.
fn fof_as<T: Real>(a: &Args, set: Input<T>, progress: Progress) -> CliResult<u8> {
    let inp = &a.positionals[0];
    let (pos, layout, period) = (&set.pos, set.layout, set.period);
    let min = min_members(a)?;
    let top = a.int_in("top", 0, u32::MAX as u64)?.unwrap_or(10) as usize;
    let labels_out = a.value("labels");
    let n = pos.len() / 3;
    let b = factz::particles::linking_length(pos, set.linking, period)?;
    let space = Space { period };
    check_linking(b, space).map_err(|e| a.usage_err(e.message))?;
    progress.phase("linking");
    let links = fof::links(pos, space, b)?;
    progress.phase("grouping");
    let labels = fof::group_labels(n, &links);
    let mut size = vec![0u32; n];
    for &l in &labels {
        size[l as usize] += 1;
    }
    let groups = size.iter().filter(|&&s| s > 0).count();
    let singletons = size.iter().filter(|&&s| s == 1).count();
    let halos = fof::halos(&labels, min)?;
    let in_halos: usize = halos.iter().map(|h| h.members.len()).sum();
    let largest = halos.first().map_or(0, |h| h.members.len());
    let hmf = fof::mass_function(
        halos.iter().map(|h| h.members.len()),
        min,
        largest.max(min),
        HMF_BINS,
    );
    if let Some(path) = labels_out {
        progress.phase("writing labels");
        let bytes: Vec<u8> = labels.iter().flat_map(|l| l.to_le_bytes()).collect();
        fileio::write_all(path, &bytes)?;
    }
    progress.done();

    let frac = if n > 0 {
        in_halos as f64 / n as f64
    } else {
        0.0
    };
    let text = if a.has("json") {
        let largest_json: Vec<Json> = halos
            .iter()
            .take(top)
            .map(|h| {
                Obj::new()
                    .put("label", h.label)
                    .put("members", h.members.len())
                    .build()
            })
            .collect();
        Obj::new()
            .put("particles", n)
            .put("dtype", T::NAME)
            .put("layout", layout.name())
            .put("linking_length", b)
            .put("period", period)
            .put("links", links.len())
            .put("groups", groups)
            .put("singletons", singletons)
            .put("min_members", min)
            .put("halos", halos.len())
            .put("particles_in_halos", in_halos)
            .put("largest", Json::Arr(largest_json))
            .put(
                "mass_function",
                Obj::new()
                    .put("bins", HMF_BINS)
                    .put("edges", hmf.edges.clone())
                    .put("counts", hmf.counts.clone()),
            )
            .build()
            .pretty()
    } else {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "particles:       {n} {} ({}, layout {})",
            T::NAME,
            shown(inp),
            layout.name()
        );
        let _ = writeln!(s, "linking length:  {}, {}", short(b), space_text(period));
        let _ = writeln!(s, "links:           {}", links.len());
        let _ = writeln!(
            s,
            "groups:          {groups} ({singletons} single particles)"
        );
        let _ = writeln!(
            s,
            "halos (>= {min}):{:pad$}{} holding {in_halos} particles ({}%)",
            "",
            halos.len(),
            short(100.0 * frac),
            pad = 5usize.saturating_sub(min.to_string().len())
        );
        if !halos.is_empty() && top > 0 {
            let _ = writeln!(s, "largest halos:   rank  members  label");
            for (k, h) in halos.iter().take(top).enumerate() {
                let _ = writeln!(
                    s,
                    "                 {:>4}  {:>7}  {}",
                    k + 1,
                    h.members.len(),
                    h.label
                );
            }
        }
        if !halos.is_empty() {
            let _ = writeln!(
                s,
                "mass function:   {HMF_BINS} log bins of member count from {min} to {largest} (empty bins not shown)"
            );
            let _ = writeln!(
                s,
                "                 {:>10}  {:>10}  {:>6}",
                "from", "to", "halos"
            );
            for (k, &c) in hmf.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
                let _ = writeln!(
                    s,
                    "                 {:>10}  {:>10}  {c:>6}",
                    short(hmf.edges[k]),
                    short(hmf.edges[k + 1])
                );
            }
        }
        s
    };
    if labels_out == Some("-") {
        eprint!("{text}");
    } else {
        fileio::print_stdout(&text)?;
    }
    Ok(0)
}
