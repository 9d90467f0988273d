//! The ADIOS2 operator end to end (adios-operator/README.md), with the real
//! libraries: the plugin is built and installed with CMake (`scripts/cmake-install`),
//! programs using ADIOS2 (the PyPI wheel `adios2`) write BP5 files through it, and
//! ADIOS2's C library reads them back in this process through `adios2-sys`. Every
//! decoded array is checked whole, across block edges, by the independent oracles
//! of `tests/common` (brute-force critical points, all-pairs FoF).
//!
//! Needs cmake, numpy and the `adios2` wheel: `scripts/setup` installs them.

mod common;

use common::e2e::{
    self, bits, check_field, check_links, field_raw, finite_range, must_fail, read_f32, root,
    run_ok, sorted_by_x, write_f32,
};
use common::fields::{self, Field};
use common::particles as po;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The installed package and the programs of `tests/adios/` built against ADIOS2.
struct Built {
    prefix: PathBuf,
    tools: PathBuf,
}

/// Held around every use of ADIOS2 in this process, and while the plugin path is
/// put in its environment: ADIOS2 reads it with getenv, which must not race setenv.
fn adios_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adios-e2e");
        let prefix = base.join("prefix");
        run_ok(
            Command::new(root().join("scripts/cmake-install"))
                .arg(&prefix)
                .env("FACTZ_CMAKE_BUILD", base.join("build")),
            "building and installing factz with CMake",
        );
        let plugins = prefix.join("lib/adios2-plugins");
        assert!(
            plugins.join("libfactz_adios2.so").is_file(),
            "the ADIOS2 operator was not installed in {} (was ADIOS2 found by CMake?)",
            plugins.display()
        );
        let tools = base.join("tests");
        let _ = std::fs::remove_dir_all(&tools);
        run_ok(
            Command::new("cmake")
                .arg("-S")
                .arg(root().join("tests/adios"))
                .arg("-B")
                .arg(&tools),
            "configuring tests/adios",
        );
        run_ok(
            Command::new("cmake").arg("--build").arg(&tools),
            "building tests/adios",
        );
        // The reads of this process find the plugin there too.
        let _guard = adios_lock();
        std::env::set_var("ADIOS2_PLUGIN_PATH", &plugins);
        Built { prefix, tools }
    })
}

fn plugin_dir() -> PathBuf {
    built().prefix.join("lib/adios2-plugins")
}

fn scratch(name: &str) -> PathBuf {
    e2e::scratch("adios-scratch", name)
}

// ---- writing with ADIOS2's Python API, reading with its C library -------------

/// One variable of a file to write without any operator: its global shape, the
/// whole global array at each step (row-major) and the blocks it is put as, one
/// Put each.
struct Var<'a> {
    name: &'a str,
    shape: Vec<usize>,
    steps: Vec<&'a [f32]>,
    /// (start, count) of each block.
    blocks: Vec<(Vec<usize>, Vec<usize>)>,
}

/// Reads the spec `py_write` writes; a variable with fewer steps than the file is
/// put in the first ones only.
const WRITE_PY: &str = r#"
import json, sys
import numpy as np
from adios2 import Adios, Stream

spec = json.load(open(sys.argv[1]))
adios = Adios()
io = adios.declare_io("factz-test-writer")
io.set_engine("BP5")
nsteps = max(len(v["steps"]) for v in spec["vars"])
with Stream(io, spec["path"], "w") as s:
    for step in range(nsteps):
        s.begin_step()
        for v in spec["vars"]:
            if step >= len(v["steps"]):
                continue
            whole = np.fromfile(v["steps"][step], dtype="<f4").reshape(v["shape"])
            for start, count in v["blocks"]:
                sel = tuple(slice(a, a + c) for a, c in zip(start, count))
                block = np.ascontiguousarray(whole[sel])
                s.write(v["name"], block, v["shape"], start, count)
        s.end_step()
"#;

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out + "\""
}

/// Writes the BP5 file `file` (a directory, replaced) with ADIOS2's Python API, no
/// operator.
fn py_write(file: &Path, vars: &[Var]) {
    let dir = file.parent().unwrap();
    let stem = file.file_name().unwrap().to_string_lossy();
    let mut specs = Vec::new();
    for v in vars {
        let elements: usize = v.shape.iter().product();
        let steps: Vec<String> = v
            .steps
            .iter()
            .enumerate()
            .map(|(s, data)| {
                assert_eq!(data.len(), elements, "{} step {s}", v.name);
                let raw = dir.join(format!("{stem}.{}.{s}.f32", v.name));
                write_f32(&raw, data);
                json_str(&raw.to_string_lossy())
            })
            .collect();
        let blocks: Vec<String> = v
            .blocks
            .iter()
            .map(|(start, count)| format!("[{start:?}, {count:?}]"))
            .collect();
        specs.push(format!(
            r#"{{"name": {}, "shape": {:?}, "steps": [{}], "blocks": [{}]}}"#,
            json_str(v.name),
            v.shape,
            steps.join(", "),
            blocks.join(", ")
        ));
    }
    let spec = dir.join(format!("{stem}.json"));
    std::fs::write(
        &spec,
        format!(
            r#"{{"path": {}, "vars": [{}]}}"#,
            json_str(&file.to_string_lossy()),
            specs.join(", ")
        ),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(file);
    run_ok(
        Command::new("python3").args(["-c", WRITE_PY]).arg(&spec),
        &format!("writing {} with ADIOS2's Python API", file.display()),
    );
}

/// The whole global array `var` at `step`, read by ADIOS2's C library (through
/// the plugin when the variable was written with it).
fn read_whole(path: &Path, var: &str, step: usize) -> Vec<f32> {
    let _guard = adios_lock();
    adios2_sys::read::read_f32(path, var, step)
        .unwrap_or_else(|e| panic!("reading {var} step {step}: {e}"))
        .1
}

/// (name, shape, steps) of every variable of the file, sorted by name.
fn variables(path: &Path) -> Vec<(String, Vec<usize>, usize)> {
    let _guard = adios_lock();
    adios2_sys::read::variables(path).unwrap_or_else(|e| panic!("listing variables: {e}"))
}

/// Blocks of at most `by` x `bx` points tiling an (ny, nx) plane, the component
/// axis whole: of shape (2, ny, nx), or (ny, nx, 2) when `aos`.
fn field_blocks(
    ny: usize,
    nx: usize,
    by: usize,
    bx: usize,
    aos: bool,
) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut blocks = Vec::new();
    for y in (0..ny).step_by(by) {
        for x in (0..nx).step_by(bx) {
            let (cy, cx) = (by.min(ny - y), bx.min(nx - x));
            blocks.push(if aos {
                (vec![y, x, 0], vec![cy, cx, 2])
            } else {
                (vec![0, y, x], vec![2, cy, cx])
            });
        }
    }
    blocks
}

/// Blocks of at most `bn` consecutive particles of an (n, 3) array.
fn particle_blocks(n: usize, bn: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    (0..n)
        .step_by(bn)
        .map(|i| (vec![i, 0], vec![bn.min(n - i), 3]))
        .collect()
}

// ---- vector fields ---------------------------------------------------------

// ---- particles -------------------------------------------------------------

struct ParticleSet {
    pos: Vec<f32>,
    b: f64,
    period: f64,
}

/// Clustered particles in a periodic box, with FoF's usual linking length.
fn periodic_particles() -> ParticleSet {
    let l = 50.0;
    let pos = po::synth_particles(16, 3, l, &[]);
    ParticleSet {
        b: po::fof_b(pos.len() / 3, l),
        pos: sorted_by_x(&pos),
        period: l,
    }
}

/// Every FoF link kept, none made, and every coordinate within `xi`.
fn check_particles(p: &ParticleSet, dec: &[f32], xi: f64, what: &str) {
    check_links(
        &p.pos,
        dec,
        (p.period > 0.0).then_some(p.period),
        p.b,
        xi,
        what,
    );
}

// ---- the reader itself -------------------------------------------------------

/// Without any operator, what ADIOS2's Python API wrote in blocks comes back bit
/// for bit, whole, at each step: the reading side of the plugin tests is sound.
#[test]
fn adios2_sys_reads_uncompressed_bp5() {
    let dir = scratch("uncompressed");
    let file = dir.join("raw.bp");
    let (ny, nx) = (48, 80);
    let fields = [
        fields::smooth(ny, nx, 1),
        fields::nan_mask(&fields::smooth(ny, nx, 2), 3),
    ];
    let raws: Vec<Vec<f32>> = fields.iter().map(|f| field_raw(f, false)).collect();
    let p = periodic_particles();
    let n = p.pos.len() / 3;
    py_write(
        &file,
        &[
            Var {
                name: "uv",
                shape: vec![2, ny, nx],
                steps: raws.iter().map(Vec::as_slice).collect(),
                blocks: field_blocks(ny, nx, 29, 50, false),
            },
            Var {
                name: "pos",
                shape: vec![n, 3],
                steps: vec![&p.pos],
                blocks: particle_blocks(n, 1000),
            },
        ],
    );

    assert_eq!(
        variables(&file),
        [
            ("pos".to_string(), vec![n, 3], 1),
            ("uv".to_string(), vec![2, ny, nx], 2),
        ]
    );
    for (step, (f, raw)) in fields.iter().zip(&raws).enumerate() {
        let got = read_whole(&file, "uv", step);
        assert!(bits(&got) == bits(raw), "uv step {step} differs");
        // The checks the plugin tests make pass on an exact copy.
        check_field(f, &got, false, 0.0, "uncompressed");
    }
    let got = read_whole(&file, "pos", 0);
    assert!(bits(&got) == bits(&p.pos), "pos differs");
    check_particles(&p, &got, 0.0, "uncompressed");

    let _guard = adios_lock();
    let err = adios2_sys::read::read_f32(&file, "pos", 1).unwrap_err();
    assert!(err.contains("no step 1"), "{err}");
}

// ---- through the operator --------------------------------------------------

/// A command with the operator on ADIOS2's plugin path.
fn with_plugin(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env("ADIOS2_PLUGIN_PATH", plugin_dir());
    c
}

fn cxx_tool() -> Command {
    with_plugin(built().tools.join("adios_tool"))
}

fn py_tool() -> Command {
    let mut c = with_plugin("python3");
    c.arg(root().join("tests/adios/adios_tool.py"));
    c
}

/// The decoded variable at `step` from all three readers (C++, Python, Rust),
/// which must agree bit for bit.
fn read_everywhere(file: &Path, var: &str, step: usize) -> Vec<f32> {
    let dir = file.parent().unwrap();
    let mut decoded = Vec::new();
    for (name, mut tool) in [("C++", cxx_tool()), ("Python", py_tool())] {
        let out = dir.join(format!("{var}-{step}-{name}.f32"));
        run_ok(
            tool.arg("read")
                .arg(file)
                .arg(var)
                .arg(step.to_string())
                .arg(&out),
            &format!("{name} reads {var} step {step}"),
        );
        decoded.push((name, read_f32(&out)));
    }
    let rust = read_whole(file, var, step);
    for (name, d) in &decoded {
        assert!(
            bits(d) == bits(&rust),
            "{name} and Rust decode {var} step {step} differently"
        );
    }
    rust
}

/// Two steps of different fields: synth turbulence, then a NaN-masked window
/// of it moved into [9.9, 10.1] (away from 0, which partial blocks must not see).
fn field_steps() -> [Field; 2] {
    let (u, v) = fields::synth_turbulence(256, 2, &["--k0", "48", "--t-end", "3"]);
    let turb = Field::new("turbulence-256", 256, 256, u, v);
    let w = fields::nan_mask(&turb, 4);
    let moved = Field::new(
        "nan-masked-offset",
        256,
        256,
        w.u.iter().map(|x| x + 10.0).collect(),
        w.v.iter().map(|x| x + 10.0).collect(),
    );
    [turb, moved]
}

#[test]
fn cxx_writes_fields_in_blocks_and_steps_every_reader_keeps_every_critical_point() {
    let dir = scratch("fields");
    let steps = field_steps();
    // (layout, block rows, block columns, parameters, relative?, bound)
    let cases: [(&str, usize, usize, &str, bool, f64); 3] = [
        (
            "soa",
            64,
            100,
            "accuracy=1e-3,mode=REL,cpmode=S",
            true,
            1e-3,
        ),
        (
            "aos",
            100,
            64,
            "ACCURACY=1e-4,Mode=abs,CPMODE=b,coder=huffman",
            false,
            1e-4,
        ),
        (
            "soa",
            256,
            37,
            "accuracy=1e-2,mode=REL,zstd=3,verify=true,backend=auto",
            true,
            1e-2,
        ),
    ];
    for (k, &(layout, by, bx, params, rel, bound)) in cases.iter().enumerate() {
        let aos = layout == "aos";
        let raws: Vec<PathBuf> = steps
            .iter()
            .enumerate()
            .map(|(s, f)| {
                let p = dir.join(format!("case{k}-step{s}.f32"));
                write_f32(&p, &field_raw(f, aos));
                p
            })
            .collect();
        let file = dir.join(format!("case{k}.bp"));
        run_ok(
            cxx_tool()
                .arg("write-field")
                .arg(&file)
                .arg("uv")
                .args(["256", "256", layout])
                .args([by.to_string(), bx.to_string()])
                .arg(params)
                .args(&raws),
            &format!("C++ writes case {k}"),
        );
        let shape = if aos {
            vec![256, 256, 2]
        } else {
            vec![2, 256, 256]
        };
        assert_eq!(variables(&file), [("uv".to_string(), shape, 2)]);
        let stored: u64 = std::fs::read_dir(&file)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(
            stored < 2 * 2 * 256 * 256 * 4 / 2,
            "case {k}: {stored} bytes stored: was the operator applied?"
        );
        for (s, f) in steps.iter().enumerate() {
            let dec = read_everywhere(&file, "uv", s);
            let xi = if rel {
                bound * finite_range(&field_raw(f, aos))
            } else {
                bound
            };
            check_field(f, &dec, aos, xi, &format!("case {k} ({params}) step {s}"));
        }
    }
}

#[test]
fn python_writes_particles_in_blocks_and_steps_every_reader_keeps_every_link() {
    let dir = scratch("particles");
    let first = periodic_particles();
    let second = ParticleSet {
        pos: sorted_by_x(&po::synth_particles(16, 5, first.period, &[])),
        b: first.b,
        period: first.period,
    };
    let n = first.pos.len() / 3;
    for (k, (bn, params, xi)) in [
        (
            1000,
            format!(
                "accuracy=1e-2,mode=ABS,linking_length={},box={}",
                first.b, first.period
            ),
            1e-2,
        ),
        (
            317,
            format!(
                "accuracy=1e-3,mode=ABS,b={},box={},coder=huffman,backend=auto",
                first.b, first.period
            ),
            1e-3,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let raws: Vec<PathBuf> = [&first, &second]
            .iter()
            .enumerate()
            .map(|(s, p)| {
                let path = dir.join(format!("case{k}-step{s}.f32"));
                write_f32(&path, &p.pos);
                path
            })
            .collect();
        let file = dir.join(format!("case{k}.bp"));
        run_ok(
            py_tool()
                .arg("write-particles")
                .arg(&file)
                .arg("pos")
                .args([n.to_string(), bn.to_string()])
                .arg(&params)
                .args(&raws),
            &format!("Python writes particles case {k}"),
        );
        for (s, p) in [&first, &second].into_iter().enumerate() {
            let dec = read_everywhere(&file, "pos", s);
            check_particles(p, &dec, xi, &format!("case {k} ({params}) step {s}"));
        }
    }
}

/// float64 variables through the operator (Python writes in blocks, Python
/// reads back float64): a turbulence field nudged below float32's resolution
/// keeps every critical point of the whole field (BigInt oracle) and the
/// bound, a particle set every link (all-pairs f64 oracle) and the bound.
#[test]
fn python_writes_float64_fields_and_particles_every_feature_kept() {
    let dir = scratch("f64");
    let read64 = |file: &Path, var: &str| -> Vec<f64> {
        let out = file.with_extension(format!("{var}.out.f64"));
        run_ok(
            py_tool().arg("read").arg(file).arg(var).arg("0").arg(&out),
            &format!("Python reads {var} of {}", file.display()),
        );
        std::fs::read(&out)
            .unwrap()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let write_raw = |path: &Path, values: &[f64]| {
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(path, bytes).unwrap();
    };
    let nudge = |k: usize, x: f32| x as f64 * (1.0 + 1e-11 * ((k % 13) as f64 - 6.0));

    let f = &field_steps()[0];
    let (ny, nx) = (f.ny, f.nx);
    let u: Vec<f64> = f.u.iter().enumerate().map(|(k, &x)| nudge(k, x)).collect();
    let v: Vec<f64> =
        f.v.iter()
            .enumerate()
            .map(|(k, &x)| nudge(k + 7, x))
            .collect();
    let raw = dir.join("uv.f64");
    write_raw(&raw, &[u.clone(), v.clone()].concat());
    let file = dir.join("field.bp");
    let xi = 1e-3;
    run_ok(
        py_tool()
            .arg("write-field")
            .arg(&file)
            .arg("uv")
            .args([ny.to_string(), nx.to_string()])
            .args(["soa", "100", "90", "accuracy=1e-3,mode=ABS"])
            .arg(&raw),
        "Python writes a float64 field",
    );
    let got = read64(&file, "uv");
    assert_eq!(got.len(), 2 * ny * nx);
    let (du, dv) = got.split_at(ny * nx);
    common::oracle::check_bound_f64(&u, du, xi).unwrap();
    common::oracle::check_bound_f64(&v, dv, xi).unwrap();
    let d = common::oracle::diff(&u, &v, du, dv, ny, nx);
    assert!(d.is_clean() && d.orig_cps > 0, "float64 field: {d}");

    let p = periodic_particles();
    let pos: Vec<f64> = p
        .pos
        .iter()
        .enumerate()
        .map(|(k, &x)| nudge(k, x))
        .collect();
    let n = pos.len() / 3;
    let period = Some(p.period);
    let links = po::brute_links(&pos, period, p.b);
    let raw = dir.join("pos.f64");
    write_raw(&raw, &pos);
    let file = dir.join("particles.bp");
    let xi = 1e-2;
    run_ok(
        py_tool()
            .arg("write-particles")
            .arg(&file)
            .arg("pos")
            .args([n.to_string(), "1000".to_string()])
            .arg(format!(
                "accuracy={xi},mode=ABS,linking_length={},box={}",
                p.b, p.period
            ))
            .arg(&raw),
        "Python writes float64 particles",
    );
    let c = po::check(&pos, &read64(&file, "pos"), period, p.b, xi, &links);
    assert!(c.clean() && c.links > 100, "float64 particles: {c:?}");
}

#[test]
fn c_and_fortran_codes_configured_by_xml_only() {
    let dir = scratch("xml");
    let xml = root().join("tests/adios/factz.xml");
    let f = &field_steps()[0];
    let raw = dir.join("uv.f32");
    write_f32(&raw, &field_raw(f, false));
    let file = dir.join("fields.bp");
    run_ok(
        with_plugin(built().tools.join("c_xml_writer"))
            .arg(&xml)
            .arg(&file)
            .arg("field")
            .arg(&raw)
            .args(["256", "256"]),
        "C writes a field configured by XML",
    );
    let xi = 1e-3 * finite_range(&field_raw(f, false));
    check_field(f, &read_everywhere(&file, "uv", 0), false, xi, "XML field");
    // The same from Fortran (through ADIOS2's C API: the wheel has no Fortran bindings).
    let file = dir.join("fortran.bp");
    run_ok(
        with_plugin(built().tools.join("fortran_xml_writer"))
            .arg(&xml)
            .arg(&file)
            .arg(&raw)
            .args(["256", "256"]),
        "Fortran writes a field configured by XML",
    );
    check_field(
        f,
        &read_everywhere(&file, "uv", 0),
        false,
        xi,
        "XML field from Fortran",
    );

    // factz.xml: accuracy 1e-5 relative, linking_length 0.5, box 50.
    let p = ParticleSet {
        b: 0.5,
        ..periodic_particles()
    };
    let raw = dir.join("pos.f32");
    write_f32(&raw, &p.pos);
    let file = dir.join("particles.bp");
    run_ok(
        with_plugin(built().tools.join("c_xml_writer"))
            .arg(&xml)
            .arg(&file)
            .arg("particles")
            .arg(&raw)
            .arg((p.pos.len() / 3).to_string()),
        "C writes particles configured by XML",
    );
    let xi = 1e-5 * finite_range(&p.pos);
    check_particles(&p, &read_everywhere(&file, "pos", 0), xi, "XML particles");
}

/// Writes with the Python bindings directly: `kind` picks a shape or type the
/// operator must refuse.
const MISUSE_PY: &str = r#"
import sys
import numpy as np
from adios2 import bindings as ab
kind, out, params = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
data = {
    "particles64": np.random.default_rng(1).random((100, 3)) * 10,
    "int32": np.zeros((2, 8, 8), np.int32),
    "rank1": np.zeros(64, np.float32),
    "rank4": np.zeros((2, 4, 4, 4), np.float32),
    "split": np.zeros((3, 8, 8), np.float32),
    "field": np.random.default_rng(1).random((2, 8, 8)).astype(np.float32),
    "particles": np.random.default_rng(1).random((100, 3)).astype(np.float32),
}[kind]
adios = ab.ADIOS()
io = adios.DeclareIO("w")
io.SetEngine("BP5")
shape = list(data.shape)
var = io.DefineVariable("x", data, shape, [0] * len(shape), shape, False)
op = adios.DefineOperator("factz", "plugin",
                          {"PluginName": "factz", "PluginLibrary": "factz_adios2", **params})
var.AddOperation(op, {})
engine = io.Open(out, ab.Mode.Write)
engine.BeginStep()
engine.Put(var, data, ab.Mode.Sync)
engine.EndStep()
engine.Close()
"#;

#[test]
fn bad_parameters_types_and_shapes_are_exceptions_with_clear_messages() {
    let dir = scratch("misuse");
    let script = dir.join("misuse.py");
    std::fs::write(&script, MISUSE_PY).unwrap();
    let out = dir.join("out.bp");
    let case = |kind: &str, params: &[&str], needle: &str| {
        must_fail(
            with_plugin("python3")
                .arg(&script)
                .arg(kind)
                .arg(&out)
                .args(params),
            &format!("{kind} {params:?}"),
            needle,
        );
    };
    // float64 particles with the SZ3 base (float32 only, or not built in).
    case("particles64", &["b=0.3", "base=sz3"], "sz3");
    case("int32", &[], "only float32 and float64");
    case("rank1", &[], "neither a vector field block");
    case("rank4", &[], "neither a vector field block");
    case("split", &[], "neither a vector field block");
    case("particles", &[], "particles need the linking length");
    case("field", &["accuracy=-1"], "accuracy=-1");
    case("field", &["accuracy=abc"], "not a finite number");
    case("field", &["mode=percent"], "use ABS");
    case("field", &["cpmode=x"], "use B");
    case("field", &["coder=lz4"], "use huffman or rans");
    case("field", &["zstd=99"], "zstd=99");
    case("field", &["verify=maybe"], "use true or false");
    case("field", &["colour=red"], "unknown parameter colour");
    case("field", &["backend=tpu"], "use cpu, cuda or auto");
    case("particles", &["eta=0.2"], "eta needs box and count");
    case("particles", &["b=0.3", "eta=0.2"], "not both");
    case(
        "particles",
        &["b=30", "box=50"],
        "exceeds half the periodic box",
    );
    case("particles", &["b=0.1", "base=sz9"], "use builtin");
    // The same through the C++ API.
    let f = &field_steps()[0];
    let raw = dir.join("uv.f32");
    write_f32(&raw, &field_raw(f, false));
    must_fail(
        cxx_tool()
            .arg("write-field")
            .arg(dir.join("cxx.bp"))
            .arg("uv")
            .args(["256", "256", "soa", "64", "64", "accuracy=0"])
            .arg(&raw),
        "C++ accuracy=0",
        "the error bound must be > 0",
    );
}

#[test]
fn a_block_factz_cannot_shrink_is_stored_and_read_exactly() {
    // 1x1-vertex blocks: 8 bytes each, less than any stream's header.
    let dir = scratch("tiny");
    let f = fields::smooth(4, 4, 3);
    let raw = dir.join("uv.f32");
    write_f32(&raw, &field_raw(&f, false));
    let file = dir.join("tiny.bp");
    run_ok(
        cxx_tool()
            .arg("write-field")
            .arg(&file)
            .arg("uv")
            .args(["4", "4", "soa", "1", "1", "accuracy=1e-3"])
            .arg(&raw),
        "C++ writes 1x1 blocks",
    );
    let dec = read_everywhere(&file, "uv", 0);
    assert!(bits(&dec) == bits(&field_raw(&f, false)));
}

#[test]
fn a_corrupted_block_fails_the_read_in_every_reader() {
    let dir = scratch("corrupt");
    let f = &field_steps()[0];
    let raw = dir.join("uv.f32");
    write_f32(&raw, &field_raw(f, false));
    let file = dir.join("one-block.bp");
    run_ok(
        cxx_tool()
            .arg("write-field")
            .arg(&file)
            .arg("uv")
            .args(["256", "256", "soa", "256", "256", "accuracy=1e-3"])
            .arg(&raw),
        "C++ writes one block",
    );
    // The block is one factz stream in data.0: flip bytes inside its payload.
    let data = file.join("data.0");
    let mut bytes = std::fs::read(&data).unwrap();
    let magic = b"FACTZ\0\r\n";
    let at = bytes
        .windows(magic.len())
        .position(|w| w == magic)
        .expect("the block's factz stream is in data.0");
    for b in &mut bytes[at + 300..at + 316] {
        *b ^= 0x5a;
    }
    std::fs::write(&data, &bytes).unwrap();
    for (name, mut tool) in [("C++", cxx_tool()), ("Python", py_tool())] {
        must_fail(
            tool.arg("read")
                .arg(&file)
                .arg("uv")
                .arg("0")
                .arg(dir.join("x.f32")),
            &format!("{name} reads a corrupted block"),
            "factz operator",
        );
    }
    let _guard = adios_lock();
    assert!(adios2_sys::read::read_f32(&file, "uv", 0).is_err());
}

/// The README's Python example runs as pasted: written as a script into an empty
/// folder and run there, it writes, reads back and checks its own bound.
#[test]
fn the_readme_python_example_runs_as_written() {
    let readme = std::fs::read_to_string(root().join("adios-operator/README.md")).unwrap();
    let start = readme
        .find("```python\n")
        .expect("adios-operator/README.md has a Python example")
        + "```python\n".len();
    let code = &readme[start..start + readme[start..].find("```").unwrap()];
    assert!(code.contains("engine.Get"), "the example reads back too");
    let dir = scratch("readme-python");
    std::fs::write(dir.join("example.py"), code).unwrap();
    let out = with_plugin("python3")
        .arg("example.py")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "README example failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("within the bound"), "{said}");
    assert!(dir.join("uv.bp").exists());
}
