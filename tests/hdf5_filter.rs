//! The HDF5 filter end to end, with the real libraries and tools: the plugin and
//! libfactz_h5 are built and installed with CMake (`scripts/cmake-install`), the
//! programs of `tests/h5/` are built against the installed package the way a
//! user's code is, and Debian's HDF5 1.10 (C programs, h5dump, h5repack) and
//! h5py's HDF5 2.x write and read each other's files. Every decoded dataset is
//! checked over the whole dataset, across chunk edges, by the independent oracles
//! of `tests/common` (brute-force critical points, all-pairs FoF).
//!
//! Needs cmake, HDF5 (libhdf5-dev, hdf5-tools), gfortran and h5py: `scripts/setup`
//! installs them.

mod common;

use common::container::crc32;
use common::e2e::{
    self, bits, check_links, field_raw, finite_range, must_fail, read_f32, root, run_ok,
    sorted_by_x, split_raw, write_f32,
};
use common::fields::{self, Field};
use common::oracle;
use common::particles as po;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The installed package and the test programs built against it.
struct Built {
    prefix: PathBuf,
    tools: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("h5-e2e");
        let prefix = base.join("prefix");
        run_ok(
            Command::new(root().join("scripts/cmake-install"))
                .arg(&prefix)
                .env("FACTZ_CMAKE_BUILD", base.join("build")),
            "building and installing factz with CMake",
        );
        let tools = base.join("tests");
        // Fresh each run: the programs must see the headers just installed (CMake's
        // dependency scan does not always notice a changed imported header).
        let _ = std::fs::remove_dir_all(&tools);
        run_ok(
            Command::new("cmake")
                .arg("-S")
                .arg(root().join("tests/h5"))
                .arg("-B")
                .arg(&tools)
                .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())),
            "configuring tests/h5 against the installed package",
        );
        run_ok(
            Command::new("cmake")
                .arg("--build")
                .arg(&tools)
                .args(["--target", "h5tool"]),
            "building tests/h5/h5tool.c",
        );
        Built { prefix, tools }
    })
}

fn plugin_dir() -> PathBuf {
    built().prefix.join("lib/hdf5/plugin")
}

/// A command with the plugin on HDF5's search path.
fn with_plugin(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env("HDF5_PLUGIN_PATH", plugin_dir());
    c.env("FACTZ_H5_PLUGIN_DIR", plugin_dir());
    c
}

fn h5tool() -> Command {
    with_plugin(built().tools.join("h5tool"))
}

fn h5tool_py() -> Command {
    let mut c = with_plugin("python3");
    c.arg(root().join("tests/h5/python/h5tool.py"));
    c
}

fn scratch(name: &str) -> PathBuf {
    e2e::scratch("h5-scratch", name)
}

// ---- vector fields ---------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct FieldCase {
    aos: bool,
    cy: usize,
    cx: usize,
    mode: &'static str,
    kind: &'static str,
    bound: f64,
}

impl FieldCase {
    fn layout(&self) -> &'static str {
        if self.aos {
            "aos"
        } else {
            "soa"
        }
    }

    /// The absolute bound the guarantee promises over the whole dataset: a
    /// relative bound is applied per chunk, to the chunk's own (smaller) range,
    /// padding of partial edge chunks excluded (the filter makes it NaN).
    fn abs_bound(&self, f: &Field) -> f64 {
        if self.kind == "abs" {
            return self.bound;
        }
        self.bound * finite_range(f.u.iter().chain(&f.v))
    }
}

fn write_field(tool: Command, file: &Path, dset: &str, f: &Field, c: &FieldCase) {
    let raw = file.with_extension(format!("{}.in.f32", dset.trim_start_matches('/')));
    write_f32(&raw, &field_raw(f, c.aos));
    let mut tool = tool;
    run_ok(
        tool.arg("write-field")
            .arg(file)
            .arg(dset)
            .arg(&raw)
            .args([f.ny, f.nx].map(|x| x.to_string()))
            .arg(c.layout())
            // HDF5 wants chunks no larger than a fixed-size dataset.
            .args([c.cy.min(f.ny), c.cx.min(f.nx)].map(|x| x.to_string()))
            .args([c.mode, c.kind])
            .arg(c.bound.to_string()),
        &format!("writing {} {c:?}", f.name),
    );
}

fn read_dataset(tool: Command, file: &Path, dset: &str) -> Vec<f32> {
    let out = file.with_extension(format!("{}.out.f32", dset.trim_start_matches('/')));
    let mut tool = tool;
    run_ok(
        tool.arg("read").arg(file).arg(dset).arg(&out),
        &format!("reading {dset} of {}", file.display()),
    );
    read_f32(&out)
}

/// Zero critical-point changes over the whole field and every value in bound.
fn check_field(f: &Field, raw: &[f32], c: &FieldCase, what: &str) {
    e2e::check_field(f, raw, c.aos, c.abs_bound(f), &format!("{what} {c:?}"));
}

fn test_fields() -> Vec<Field> {
    let (u, v) = fields::synth_turbulence(256, 2, &["--k0", "48", "--t-end", "3"]);
    let turb = Field::new("turbulence-256", 256, 256, u, v);
    let adversarial = fields::nan_mask(
        &fields::zero_patches(&fields::window(&turb, 7, 3, 150, 230), 5),
        9,
    )
    .renamed("nan-and-zero-patches-150x230");
    // Away from 0: a zero in the padding of a partial edge chunk would widen that
    // chunk's range and break a relative bound.
    let w = fields::window(&turb, 40, 20, 150, 230);
    let offset = Field::new(
        "offset-10-150x230",
        w.ny,
        w.nx,
        w.u.iter().map(|x| x + 10.0).collect(),
        w.v.iter().map(|x| x + 10.0).collect(),
    );
    vec![turb, adversarial, offset]
}

const FIELD_CASES: [FieldCase; 6] = [
    FieldCase {
        aos: false,
        cy: 64,
        cx: 64,
        mode: "s",
        kind: "rel",
        bound: 1e-3,
    },
    FieldCase {
        aos: false,
        cy: 50,
        cx: 70,
        mode: "b",
        kind: "abs",
        bound: 1e-3,
    },
    FieldCase {
        aos: true,
        cy: 45,
        cx: 256,
        mode: "s",
        kind: "abs",
        bound: 1e-4,
    },
    FieldCase {
        aos: true,
        cy: 256,
        cx: 33,
        mode: "b",
        kind: "rel",
        bound: 1e-2,
    },
    FieldCase {
        aos: false,
        cy: 256,
        cx: 256,
        mode: "s",
        kind: "rel",
        bound: 1e-4,
    },
    FieldCase {
        aos: false,
        cy: 3,
        cx: 5,
        mode: "s",
        kind: "rel",
        bound: 1e-2,
    },
];

#[test]
fn c_program_writes_and_reads_fields_in_many_chunkings() {
    let dir = scratch("c-fields");
    for f in test_fields() {
        for (k, c) in FIELD_CASES.iter().enumerate() {
            let file = dir.join(format!("{}-{k}.h5", f.name));
            write_field(h5tool(), &file, "/uv", &f, c);
            let raw = read_dataset(h5tool(), &file, "/uv");
            check_field(&f, &raw, c, "C writes, C reads");
        }
    }
}

/// FACTZ_BACKEND picks where chunks compress: `auto` writes what the default
/// writes (the stream is the same on every backend), a bad value fails the
/// write with an HDF5 error naming it.
#[test]
fn backend_comes_from_the_environment() {
    let dir = scratch("backend");
    let f = &test_fields()[0];
    let c = &FIELD_CASES[0];
    let plain = dir.join("plain.h5");
    write_field(h5tool(), &plain, "/uv", f, c);
    let want = read_dataset(h5tool(), &plain, "/uv");
    let auto = dir.join("auto.h5");
    let mut tool = h5tool();
    tool.env("FACTZ_BACKEND", "auto");
    write_field(tool, &auto, "/uv", f, c);
    let got = read_dataset(h5tool(), &auto, "/uv");
    let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&got) == bits(&want),
        "FACTZ_BACKEND=auto decodes differently"
    );
    let raw = dir.join("bad.in.f32");
    write_f32(&raw, &field_raw(f, c.aos));
    must_fail(
        h5tool()
            .env("FACTZ_BACKEND", "tpu")
            .arg("write-field")
            .arg(dir.join("bad.h5"))
            .arg("/uv")
            .arg(&raw)
            .args([f.ny, f.nx].map(|x| x.to_string()))
            .arg(c.layout())
            .args([c.cy.min(f.ny), c.cx.min(f.nx)].map(|x| x.to_string()))
            .args([c.mode, c.kind])
            .arg(c.bound.to_string()),
        "FACTZ_BACKEND=tpu",
        "use cpu, cuda or auto",
    );
}

#[test]
fn statically_registered_filter_needs_no_plugin_path() {
    let dir = scratch("c-register");
    let f = &test_fields()[0];
    let c = FIELD_CASES[1];
    let file = dir.join("registered.h5");
    let mut w = Command::new(built().tools.join("h5tool"));
    w.arg("--register");
    write_field(w, &file, "/uv", f, &c);
    let mut r = Command::new(built().tools.join("h5tool"));
    r.arg("--register");
    check_field(f, &read_dataset(r, &file, "/uv"), &c, "registered filter");
    // And the plugin reads what the registered filter wrote.
    check_field(f, &read_dataset(h5tool(), &file, "/uv"), &c, "plugin reads");
}

// ---- particles -------------------------------------------------------------

struct ParticleSet {
    name: &'static str,
    pos: Vec<f32>,
    b: f64,
    period: f64,
}

fn particle_sets() -> Vec<ParticleSet> {
    let l = 50.0;
    let pos = po::synth_particles(16, 3, l, &[]);
    let n = pos.len() / 3;
    let open: Vec<f32> = pos.clone();
    vec![
        ParticleSet {
            name: "periodic",
            pos: sorted_by_x(&pos),
            b: po::fof_b(n, l),
            period: l,
        },
        ParticleSet {
            name: "open",
            pos: sorted_by_x(&open),
            b: 1.5 * po::fof_b(n, l),
            period: 0.0,
        },
    ]
}

fn write_particles(
    tool: Command,
    file: &Path,
    dset: &str,
    p: &ParticleSet,
    cn: usize,
    kind: &str,
    bound: f64,
) {
    let raw = file.with_extension(format!("{}.in.f32", dset.trim_start_matches('/')));
    write_f32(&raw, &p.pos);
    let mut tool = tool;
    run_ok(
        tool.arg("write-particles")
            .arg(file)
            .arg(dset)
            .arg(&raw)
            .arg((p.pos.len() / 3).to_string())
            .arg(cn.to_string())
            .arg(kind)
            .arg(bound.to_string())
            .arg(p.b.to_string())
            .arg(p.period.to_string()),
        &format!("writing particles {} chunk {cn}", p.name),
    );
}

fn check_particles(p: &ParticleSet, dec: &[f32], kind: &str, bound: f64, what: &str) {
    let period = (p.period > 0.0).then_some(p.period);
    let xi = if kind == "abs" {
        bound
    } else {
        bound * finite_range(&p.pos)
    };
    let what = format!("{what}: particles {} ({kind} {bound})", p.name);
    check_links(&p.pos, dec, period, p.b, xi, &what);
}

#[test]
fn c_program_writes_and_reads_particles_in_many_chunkings() {
    let dir = scratch("c-particles");
    for p in particle_sets() {
        let n = p.pos.len() / 3;
        for (cn, kind, bound) in [
            (1000, "abs", 1e-2),
            (n, "rel", 1e-4),
            (1500, "rel", 1e-3),
            (317, "abs", 1e-3),
        ] {
            let file = dir.join(format!("{}-{cn}.h5", p.name));
            write_particles(h5tool(), &file, "/pos", &p, cn, kind, bound);
            let dec = read_dataset(h5tool(), &file, "/pos");
            check_particles(&p, &dec, kind, bound, &format!("C, chunks of {cn}"));
        }
    }
}

/// A float64 `(n, 3)` particle dataset written through h5py in several
/// chunks (the last one partial), read back as float64: every coordinate
/// within the bound (decided exactly) and every link of the brute-force f64
/// oracle, on positions below float32's resolution; h5dump sees a 64-bit
/// dataset with a NaN fill value through the plugin.
#[test]
fn h5py_float64_particles_keep_every_link() {
    let dir = scratch("particles-f64");
    let p = &particle_sets()[0];
    let period = Some(p.period);
    // Values below float32's resolution: the f64 data is not an f32 set.
    let pos: Vec<f64> = p
        .pos
        .iter()
        .enumerate()
        .map(|(k, &x)| x as f64 * (1.0 + 1e-11 * ((k % 13) as f64 - 6.0)))
        .collect();
    let n = pos.len() / 3;
    let links = po::brute_links(&pos, period, p.b);
    assert!(links.len() > 100, "only {} links", links.len());
    let file = dir.join("f64.h5");
    let raw = dir.join("pos.in.f64");
    let bytes: Vec<u8> = pos.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(&raw, bytes).unwrap();
    for (cn, bound) in [(1000, 1e-2), (n, 1e-4)] {
        let dset = format!("/pos{cn}");
        run_ok(
            h5tool_py()
                .arg("write-particles64")
                .arg(&file)
                .arg(&dset)
                .arg(&raw)
                .args([n.to_string(), cn.to_string()])
                .args(["abs".to_string(), bound.to_string()])
                .args([p.b.to_string(), p.period.to_string()]),
            &format!("writing float64 particles, chunks of {cn}"),
        );
        let out = dir.join(format!("pos{cn}.out.f64"));
        run_ok(
            h5tool_py().arg("read").arg(&file).arg(&dset).arg(&out),
            "reading float64 particles",
        );
        let got: Vec<f64> = std::fs::read(&out)
            .unwrap()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let c = po::check(&pos, &got, period, p.b, bound, &links);
        assert!(c.clean(), "chunks of {cn}, abs {bound}: {c:?}");
    }
    let dump = run_ok(
        with_plugin("h5dump").args(["-H", "-p"]).arg(&file),
        "h5dump -H -p of the float64 particle file",
    );
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.contains("H5T_IEEE_F64LE") && text.contains("459"),
        "{text}"
    );
    // The edge chunk's padding is a double NaN (links nothing, outside every
    // bounding box), not a float's bits read as a double.
    let fills = text.matches("VALUE  nan").count();
    assert_eq!(fills, 2, "{text}");
}

// ---- h5py <-> C ------------------------------------------------------------

#[test]
fn h5py_and_c_read_each_others_files() {
    let dir = scratch("cross");
    let fields = test_fields();
    let f = &fields[0];
    let parts = particle_sets();
    let p = &parts[0];
    for (writer, reader, name) in [
        (
            h5tool_py as fn() -> Command,
            h5tool as fn() -> Command,
            "py-to-c",
        ),
        (
            h5tool as fn() -> Command,
            h5tool_py as fn() -> Command,
            "c-to-py",
        ),
    ] {
        let file = dir.join(format!("{name}.h5"));
        for (k, c) in FIELD_CASES[..4].iter().enumerate() {
            let dset = format!("/uv{k}");
            write_field(writer(), &file, &dset, f, c);
            check_field(f, &read_dataset(reader(), &file, &dset), c, name);
        }
        write_particles(writer(), &file, "/pos", p, 900, "abs", 1e-2);
        check_particles(p, &read_dataset(reader(), &file, "/pos"), "abs", 1e-2, name);
    }
}

// ---- HDF5's own tools ------------------------------------------------------

/// The cd_values of `h5repack -f UD=459,0,15,...` for mode B with an absolute
/// bound; `chunk_rule` is word 14: 0 = on (default), 2 = off.
fn ud_field(bound: f64, chunk_rule: u64) -> String {
    let bits = bound.to_bits();
    #[rustfmt::skip]
    let words: [u64; 15] = [1, 1, 1, 1, bits & 0xffff_ffff, bits >> 32, 2, 0, 0, 0, 0, 0, 0, 0, chunk_rule];
    let list: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    format!("UD=459,0,15,{}", list.join(","))
}

#[test]
fn h5dump_and_h5repack_use_the_plugin() {
    let dir = scratch("tools");
    let f = &test_fields()[0];
    let c = FIELD_CASES[0];
    let file = dir.join("written.h5");
    write_field(h5tool(), &file, "/uv", f, &c);
    let ours = read_dataset(h5tool(), &file, "/uv");

    // h5dump decodes through the plugin to the same bits.
    let dumped = dir.join("dumped.bin");
    run_ok(
        with_plugin("h5dump")
            .args(["-d", "/uv", "-b", "LE", "-o"])
            .arg(&dumped)
            .arg(&file),
        "h5dump -b",
    );
    assert_eq!(bits(&read_f32(&dumped)), bits(&ours));
    let header = run_ok(
        with_plugin("h5dump")
            .args(["-H", "-p", "-d", "/uv"])
            .arg(&file),
        "h5dump -H -p",
    );
    let text = String::from_utf8_lossy(&header.stdout);
    assert!(
        text.contains("FILTER_ID 459") && text.contains("factz"),
        "{text}"
    );

    // h5repack: decompress everything, then recompress with UD= parameters (mode B, abs).
    let plain = dir.join("plain.h5");
    run_ok(
        with_plugin("h5repack")
            .args(["-f", "NONE"])
            .arg(&file)
            .arg(&plain),
        "h5repack -f NONE",
    );
    let repacked = dir.join("repacked.h5");
    let bound = 2e-5;
    run_ok(
        with_plugin("h5repack")
            .args(["-l", "/uv:CHUNK=2x40x100", "-f"])
            .arg(format!("/uv:{}", ud_field(bound, 0)))
            .arg(&plain)
            .arg(&repacked),
        "h5repack -f UD=459,...",
    );
    let plain_raw = read_dataset(h5tool(), &plain, "/uv");
    assert_eq!(bits(&plain_raw), bits(&ours));
    // The repacked file keeps the critical points of what it was given.
    let given = Field::new(
        "repack-input",
        f.ny,
        f.nx,
        plain_raw[..f.ny * f.nx].to_vec(),
        plain_raw[f.ny * f.nx..].to_vec(),
    );
    let repack_case = FieldCase {
        aos: false,
        cy: 40,
        cx: 100,
        mode: "b",
        kind: "abs",
        bound,
    };
    check_field(
        &given,
        &read_dataset(h5tool(), &repacked, "/uv"),
        &repack_case,
        "h5repack",
    );
    // The oracle has teeth across chunk edges: with the chunk rule off (word 14 = 2,
    // allowed only for one-chunk datasets) small chunks lose critical points there.
    let rule_off = dir.join("rule-off.h5");
    let loose = FieldCase {
        kind: "rel",
        bound: 1e-2,
        ..repack_case
    }
    .abs_bound(&given);
    let ud_off = ud_field(loose, 2);
    run_ok(
        with_plugin("h5repack")
            .args(["-l", "/uv:CHUNK=2x16x16", "-f"])
            .arg(format!("/uv:{ud_off}"))
            .arg(&plain)
            .arg(&rule_off),
        "h5repack with the chunk rule off",
    );
    let (u, v) = split_raw(&read_dataset(h5tool(), &rule_off, "/uv"), false);
    let broken = oracle::diff(&given.u, &given.v, &u, &v, f.ny, f.nx);
    assert!(
        !broken.is_clean(),
        "without the chunk rule, 16x16 chunks should change critical points at their edges"
    );
    let listing = run_ok(
        with_plugin("h5ls")
            .arg("-v")
            .arg(format!("{}/uv", repacked.display())),
        "h5ls -v",
    );
    assert!(String::from_utf8_lossy(&listing.stdout).contains("459"));
}

#[test]
fn misuse_gives_hdf5_errors_never_a_crash() {
    let dir = scratch("misuse");
    let file = dir.join("misuse.h5");
    let ok_cd = "1,1,2,2,0,0"; // mode S, relative default bound
    let mut k = 0;
    let mut refused = |dims: &str, chunk: &str, ty: &str, cd: &str, needle: &str| {
        k += 1;
        must_fail(
            h5tool()
                .arg("create")
                .arg(&file)
                .arg(format!("/d{k}"))
                .args([dims, chunk, ty, cd]),
            &format!("{dims} chunk {chunk} {ty} cd {cd}"),
            needle,
        );
    };
    // Types, ranks, chunks that split the component axis, wrong kinds.
    // float64 particles take the built-in or ZFP base, not SZ3.
    refused(
        "1000x3",
        "100x3",
        "f64",
        "1,2,2,1,0,0,0,0,0,1,0,1072693248",
        "SZ3 (2) takes 32-bit floats",
    );
    refused("2x64x64", "2x32x32", "i32", ok_cd, "not a float");
    refused("2x64x64", "2x32x32", "f32be", ok_cd, "big-endian");
    refused("4096", "512", "f32", ok_cd, "rank 1");
    refused("2x8x8x8", "2x4x4x4", "f32", ok_cd, "rank 4");
    refused("2x64x64", "1x64x64", "f32", ok_cd, "component axis");
    refused("64x64x2", "64x64x1", "f32", ok_cd, "component axis");
    refused(
        "1000x3",
        "100x2",
        "f32",
        "1,2,1,1,0,0,0,0,0,1,0,1072693248",
        "(cn, 3)",
    );
    refused("1000x3", "100x3", "f32", "1,1", "rank 2");
    refused("2x64x64", "2x32x32", "f32", "1,2", "rank-2");
    refused("1000x3", "100x3", "f32", "-", "linking length b");
    // Absurd cd_values.
    refused("2x64x64", "2x32x32", "f32", "99", "version 99");
    refused("2x64x64", "2x32x32", "f32", "1,1,1,7", "bound kind 7");
    refused(
        "2x64x64",
        "2x32x32",
        "f32",
        "1,1,1,1,0,2146959360",
        "error bound",
    );
    refused(
        "2x64x64",
        "2x32x32",
        "f32",
        "1,1,1,1,0,0,2,99",
        "zstd level 99",
    );
    refused("2x64x64", "2x32x32", "f32", "1,1,9", "mode 9");
    refused("2x64x64", "2x32x32", "f32", "1,1,1,1,0,0,7", "coder 7");
    refused(
        "2x64x64",
        "2x32x32",
        "f32",
        &["1"; 21].join(","),
        "at most 20",
    );
    refused(
        "1000x3",
        "100x3",
        "f32",
        "1,2,1,1,0,0,0,0,0,1,0,1076101120,0,1072693248",
        "exceeds half the periodic box",
    );
    // h5repack does not fail on a refused filter: it warns and copies the dataset
    // as it was. The refusal shows as a dataset without the filter.
    let f = &test_fields()[0];
    let ok = dir.join("ok.h5");
    write_field(h5tool(), &ok, "/uv", f, &FIELD_CASES[0]);
    let plain = dir.join("plain.h5");
    run_ok(
        with_plugin("h5repack")
            .args(["-f", "NONE"])
            .arg(&ok)
            .arg(&plain),
        "h5repack -f NONE",
    );
    let out = dir.join("repacked.h5");
    let _ = std::fs::remove_file(&out);
    let repack = run_ok(
        with_plugin("h5repack")
            .args(["-v", "-l", "/uv:CHUNK=1x64x64", "-f"])
            .arg(format!("/uv:{}", ud_field(1e-3, 0)))
            .arg(&plain)
            .arg(&out),
        "h5repack with a chunk splitting the components",
    );
    assert!(String::from_utf8_lossy(&repack.stdout).contains("could not create dataset"));
    let header = run_ok(
        with_plugin("h5dump").args(["-H", "-p"]).arg(&out),
        "h5dump -H -p",
    );
    assert!(!String::from_utf8_lossy(&header.stdout).contains("FILTER_ID 459"));
    // h5py (HDF5 2.x): dtypes, ranks, chunks, cd_values, corrupted and truncated
    // chunks, each case in a forked interpreter so a crash counts as a failure.
    let report = run_ok(h5tool_py().arg("misuse").arg(&dir), "h5tool.py misuse");
    eprintln!("{}", String::from_utf8_lossy(&report.stdout));
}

#[test]
fn corrupted_chunk_fails_the_read_in_c() {
    let dir = scratch("corrupt");
    let f = &test_fields()[0];
    let c = FieldCase {
        aos: false,
        cy: 256,
        cx: 256,
        mode: "s",
        kind: "rel",
        bound: 1e-3,
    };
    let file = dir.join("one-chunk.h5");
    write_field(h5tool(), &file, "/uv", f, &c);
    // The one chunk is the factz stream: find its magic and flip bytes in its payload.
    let mut bytes = std::fs::read(&file).unwrap();
    let magic = b"FACTZ\0\r\n";
    let at = bytes
        .windows(magic.len())
        .position(|w| w == magic)
        .expect("the chunk's factz stream is in the file");
    let raw = read_dataset(h5tool(), &file, "/uv");
    check_field(f, &raw, &c, "before corruption");
    for b in &mut bytes[at + 300..at + 316] {
        *b ^= 0x5a;
    }
    let bad = dir.join("corrupted.h5");
    std::fs::write(&bad, &bytes).unwrap();
    must_fail(
        h5tool()
            .arg("read")
            .arg(&bad)
            .arg("/uv")
            .arg(dir.join("x.f32")),
        "corrupted chunk",
        "factz",
    );
}

// ---- C++ and Fortran programs built through the installed package -----------

#[test]
fn cxx_and_fortran_programs_round_trip_through_the_filter() {
    let dir = scratch("langs");
    // The programs write (2, 150, 230) in chunks (2, 64, 48): partial edge chunks.
    // C++: mode B, absolute bound 1e-3 x range; Fortran: mode S, relative 1e-3.
    let all = test_fields();
    let sets = [
        fields::window(&all[0], 11, 5, 150, 230).renamed("turbulence-window"),
        all[2].clone(),
    ];
    for target in ["cxx_roundtrip", "fortran_roundtrip"] {
        run_ok(
            Command::new("cmake")
                .arg("--build")
                .arg(&built().tools)
                .args(["--target", target]),
            &format!("building {target} (gfortran and HDF5's Fortran library for Fortran)"),
        );
    }
    for f in &sets {
        let input = dir.join(format!("{}.in.f32", f.name));
        write_f32(&input, &field_raw(f, false));
        for exe in ["cxx/cxx_roundtrip", "fortran/fortran_roundtrip"] {
            let tag = format!("{}-{}", f.name, exe.replace('/', "-"));
            let out = dir.join(format!("{tag}.out.f32"));
            run_ok(
                with_plugin(built().tools.join(exe))
                    .arg(dir.join(format!("{tag}.h5")))
                    .arg(&input)
                    .args(["150", "230", "64", "48"])
                    .arg(&out),
                &tag,
            );
            let c = FieldCase {
                aos: false,
                cy: 64,
                cx: 48,
                mode: "s",
                kind: "rel",
                bound: 1e-3,
            };
            check_field(f, &read_f32(&out), &c, exe);
        }
    }
}

// ---- files written by this version stay readable -----------------------------

/// `tests/golden/v1-h5.h5` holds datasets written by the first release of the
/// filter; `v1-h5-<dataset>.f32` what they decoded to then. Regenerate nothing:
/// add `v2-...` files when the format changes. `FACTZ_WRITE_GOLDEN_H5=1` writes
/// them (once, for a new version label).
#[test]
fn golden_files_decode_to_recorded_bits() {
    let golden = root().join("tests/golden");
    let dir = scratch("golden");
    let sets = ["field_s_soa", "field_b_aos", "particles"];
    if std::env::var("FACTZ_WRITE_GOLDEN_H5").as_deref() == Ok("1") {
        let file = dir.join("new.h5");
        let f =
            fields::nan_mask(&fields::window(&test_fields()[0], 0, 0, 40, 56), 3).renamed("golden");
        write_field(
            h5tool(),
            &file,
            "/field_s_soa",
            &f,
            &FieldCase {
                aos: false,
                cy: 16,
                cx: 24,
                mode: "s",
                kind: "rel",
                bound: 1e-3,
            },
        );
        write_field(
            h5tool(),
            &file,
            "/field_b_aos",
            &f,
            &FieldCase {
                aos: true,
                cy: 32,
                cx: 20,
                mode: "b",
                kind: "abs",
                bound: 1e-4,
            },
        );
        let p = &particle_sets()[0];
        let small = ParticleSet {
            name: "golden",
            pos: p.pos[..3 * 1200].to_vec(),
            b: p.b,
            period: p.period,
        };
        write_particles(h5tool(), &file, "/particles", &small, 500, "abs", 1e-3);
        std::fs::copy(&file, golden.join("v1-h5.h5")).unwrap();
        for d in sets {
            let dec = read_dataset(h5tool(), &file, &format!("/{d}"));
            write_f32(&golden.join(format!("v1-h5-{d}.f32")), &dec);
        }
    }
    let file = dir.join("v1-h5.h5");
    std::fs::copy(golden.join("v1-h5.h5"), &file).unwrap();
    for reader in [h5tool as fn() -> Command, h5tool_py] {
        for d in sets {
            let dec = read_dataset(reader(), &file, &format!("/{d}"));
            let want = read_f32(&golden.join(format!("v1-h5-{d}.f32")));
            let bits =
                |v: &[f32]| crc32(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
            assert_eq!(dec.len(), want.len(), "{d}");
            assert_eq!(
                bits(&dec),
                bits(&want),
                "{d} no longer decodes to its recorded bits"
            );
        }
    }
}

// ---- the installed layout -----------------------------------------------------

#[test]
fn installed_package_pkg_config_and_a_self_contained_plugin() {
    let prefix = &built().prefix;
    let pc = |args: &[&str]| {
        let out = run_ok(
            Command::new("pkg-config")
                .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
                .args(args)
                .arg("factz"),
            "pkg-config",
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let plugin = Path::new(&pc(&["--variable=hdf5_plugin_dir"])).join("libH5Zfactz.so");
    assert!(plugin.exists(), "{} missing", plugin.display());
    assert!(
        prefix.join("include/factz.mod").exists(),
        "the Fortran module is not installed"
    );

    // A C program built with nothing but pkg-config's flags, against libfactz.so.0.
    let dir = scratch("pkg-config");
    let exe = dir.join("field_roundtrip");
    let flags = pc(&["--cflags", "--libs"]);
    run_ok(
        Command::new("cc")
            .arg(root().join("tests/c/field_roundtrip.c"))
            .args(flags.split_whitespace())
            .arg("-lm") // the program's own sin/cos
            .arg("-o")
            .arg(&exe),
        "cc $(pkg-config --cflags --libs factz)",
    );
    run_ok(
        Command::new(&exe).env("LD_LIBRARY_PATH", prefix.join("lib")),
        "field_roundtrip against the installed libfactz.so.0",
    );
    let needed = run_ok(Command::new("readelf").arg("-d").arg(&exe), "readelf -d");
    assert!(String::from_utf8_lossy(&needed.stdout).contains("[libfactz.so.0]"));

    // The plugin: no libhdf5 dependency, and only HDF5's two entry points exported.
    let dynamic = run_ok(
        Command::new("readelf").arg("-d").arg(&plugin),
        "readelf -d plugin",
    );
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        !dynamic.contains("libhdf5") && !dynamic.contains("libfactz"),
        "{dynamic}"
    );
    // Never unloaded: libfactz's worker threads outlive a call, and HDF5 dlcloses
    // plugins at exit (without this, readers crashed at exit now and then).
    assert!(dynamic.contains("NODELETE"), "{dynamic}");
    let symbols = run_ok(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(&plugin),
        "nm -D plugin",
    );
    let mut exported: Vec<String> = String::from_utf8_lossy(&symbols.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    exported.sort();
    assert_eq!(exported, ["H5PLget_plugin_info", "H5PLget_plugin_type"]);
}

// ---- float64 ------------------------------------------------------------------

/// A float64 `(2, ny, nx)` / `(ny, nx, 2)` dataset written through h5py in
/// several chunks (chunk rule on), in modes S and B, read back as float64: every critical
/// point of the whole field and every value within the bound, by the
/// BigInt oracle; h5dump reads the file through the plugin.
#[test]
fn h5py_float64_fields_keep_every_critical_point() {
    let dir = scratch("f64");
    let f = &test_fields()[0];
    // Values below float32's resolution: the f64 data is not an f32 field.
    let nudge = |a: &[f32], s: f64| -> Vec<f64> {
        a.iter()
            .enumerate()
            .map(|(k, &x)| x as f64 * (1.0 + s * ((k % 13) as f64 - 6.0)))
            .collect()
    };
    let (u, v) = (nudge(&f.u, 1e-10), nudge(&f.v, -1e-10));
    let file = dir.join("f64.h5");
    let bound = 1e-3;
    for (aos, cy, cx, mode) in [
        (false, 40, 56, "s"),
        (true, 64, 33, "s"),
        (false, 48, 48, "b"),
    ] {
        let layout = if aos { "aos" } else { "soa" };
        let what = format!("{layout} mode {mode}");
        let values: Vec<f64> = if aos {
            u.iter().zip(&v).flat_map(|(&a, &b)| [a, b]).collect()
        } else {
            u.iter().chain(&v).copied().collect()
        };
        let raw = dir.join(format!("{layout}.in.f64"));
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(&raw, bytes).unwrap();
        let dset = format!("/uv64_{layout}_{mode}");
        run_ok(
            h5tool_py()
                .arg("write-field64")
                .arg(&file)
                .arg(&dset)
                .arg(&raw)
                .args([f.ny.to_string(), f.nx.to_string(), layout.to_string()])
                .args([cy, cx].map(|x| x.to_string()))
                .args([mode, "abs", &bound.to_string()]),
            &format!("writing float64 {what}"),
        );
        let out = dir.join(format!("{layout}{mode}.out.f64"));
        run_ok(
            h5tool_py().arg("read").arg(&file).arg(&dset).arg(&out),
            &format!("reading float64 {what}"),
        );
        let got: Vec<f64> = std::fs::read(&out)
            .unwrap()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got.len(), 2 * f.ny * f.nx, "{what}");
        let n = f.ny * f.nx;
        let (du, dv): (Vec<f64>, Vec<f64>) = if aos {
            got.chunks_exact(2).map(|p| (p[0], p[1])).unzip()
        } else {
            (got[..n].to_vec(), got[n..].to_vec())
        };
        oracle::check_bound_f64(&u, &du, bound).unwrap_or_else(|e| panic!("{what}: u {e}"));
        oracle::check_bound_f64(&v, &dv, bound).unwrap_or_else(|e| panic!("{what}: v {e}"));
        let d = oracle::diff(&u, &v, &du, &dv, f.ny, f.nx);
        assert!(d.is_clean(), "{what}: {d}");
        assert!(d.orig_cps > 0, "{what}: no critical points to keep");
    }
    let dump = run_ok(
        with_plugin("h5dump").args(["-H", "-p"]).arg(&file),
        "h5dump -H -p of the float64 file",
    );
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.contains("H5T_IEEE_F64LE") && text.contains("459"),
        "{text}"
    );
}
