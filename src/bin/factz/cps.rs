//! `factz cps`: the critical points of a 2D vector field (from raw float32 /
//! float64 or a field stream), as a summary, JSON, or VTK PolyData for ParaView / TTK.

use crate::args::{self, switch, val, Args, FlagSpec};
use crate::commands::{decode, field_is_f64, print_help_if};
use crate::fileio::{self, shown, Progress};
use crate::json::{Json, Obj};
use crate::sidecar::Sidecar;
use crate::{help, CliError, CliResult};
use factz::field::topology::{self, CriticalPoint};
use factz::vtk::{type_code, CP_TYPES};
use factz::Real;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

pub fn cps(argv: Vec<OsString>) -> CliResult<u8> {
    const SPECS: &[FlagSpec] = &[
        val("shape"),
        val("layout"),
        val("vtk"),
        val("dtype"),
        switch("json"),
    ];
    let a = args::parse("cps", argv, SPECS)?;
    if print_help_if(&a, help::CPS)? {
        return Ok(0);
    }
    a.positionals_exact(&["FIELD.f32|IN.fz"])?;
    let inp = &a.positionals[0];
    let progress = Progress::for_input(fileio::input_len(inp).unwrap_or(0));
    progress.phase("reading");
    let bytes = fileio::read_all(inp)?;
    let is_stream = fileio::is_stream(&bytes);
    let (ny, nx, cps) = if field_is_f64(&a, &bytes, inp, is_stream)? {
        extract_from::<f64>(&a, bytes, is_stream, &progress)?
    } else {
        extract_from::<f32>(&a, bytes, is_stream, &progress)?
    };
    let vtk_out = a.value("vtk");
    if let Some(path) = vtk_out {
        progress.phase("writing VTK");
        fileio::write_all(path, &factz::vtk::critical_points_vtp(&cps))?;
    }
    progress.done();

    let counts: Vec<(&str, usize)> = CP_TYPES
        .iter()
        .map(|&t| (t.name(), cps.iter().filter(|c| c.kind == t).count()))
        .collect();
    let text = if a.has("json") {
        let points: Vec<Json> = cps
            .iter()
            .map(|c| {
                Obj::new()
                    .put("cell", c.tri)
                    .put("x", c.x)
                    .put("y", c.y)
                    .put("type", c.kind.name())
                    .put("type_code", type_code(c.kind))
                    .build()
            })
            .collect();
        let mut by_type = Obj::new();
        for &(name, k) in &counts {
            by_type = by_type.put(name, k);
        }
        Obj::new()
            .put("ny", ny)
            .put("nx", nx)
            .put("critical_points", cps.len())
            .put("by_type", by_type)
            .put("points", Json::Arr(points))
            .build()
            .pretty()
    } else {
        let mut s = String::new();
        let _ = writeln!(s, "field:           {ny} x {nx} ({})", shown(inp));
        let _ = writeln!(s, "critical points: {}", cps.len());
        for &(name, k) in &counts {
            let _ = writeln!(s, "  {name:<17}{k}");
        }
        if let Some(path) = vtk_out {
            let _ = writeln!(s, "VTK PolyData:    {}", shown(path));
        }
        s
    };
    // With the VTK file on stdout, the summary goes to stderr (as `fof --labels -`).
    if vtk_out == Some("-") {
        eprint!("{text}");
    } else {
        fileio::print_stdout(&text)?;
    }
    Ok(0)
}

/// The field in `bytes` (a stream, or raw values of type `T` in the shape and
/// layout the flags or a sidecar give) and its critical points.
fn extract_from<T: Real>(
    a: &Args,
    bytes: Vec<u8>,
    is_stream: bool,
    progress: &Progress,
) -> CliResult<(usize, usize, Vec<CriticalPoint>)> {
    let inp = &a.positionals[0];
    let shape = a.shape()?;
    let (ny, nx, u, v) = if is_stream {
        progress.phase("decompressing");
        let d = decode::<T>(&bytes, inp)?;
        if let Some((sy, sx)) = shape.filter(|&s| s != (d.ny, d.nx)) {
            return Err(CliError::fail(format!(
                "--shape {sy},{sx} does not match the stream's shape {},{}",
                d.ny, d.nx
            )));
        }
        (d.ny, d.nx, d.u, d.v)
    } else {
        let (ny, nx, lay) = Sidecar::field_geometry(inp, shape, a.layout()?).ok_or_else(|| {
            a.usage_err(format!(
                "{} is not a factz stream: give --shape NY,NX (or a sidecar {})",
                shown(inp),
                Path::new(inp).with_extension("json").display()
            ))
        })?;
        let (u, v) = fileio::field_from_bytes::<T>(&bytes, ny, nx, lay, inp)?;
        (ny, nx, u, v)
    };
    drop(bytes);
    progress.phase("extracting");
    Ok((ny, nx, topology::extract(&u, &v, ny, nx)))
}
