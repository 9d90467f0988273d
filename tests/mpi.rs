//! factz over real MPI (`mpirun --oversubscribe -np N`, N = 1..4). Particles:
//! every rank compresses its own slab with `factz::dist`, decodes its own
//! stream, and rank 0 gathers the decoded union and checks it against the
//! original with the independent all-pairs FoF oracle of `tests/common`: zero
//! changed links over the whole domain, every coordinate in bound. Vector
//! fields: every rank compresses its block of the grid (rows, columns or 2x2
//! blocks), and the brute-force critical-point oracle checks the assembled
//! field: zero critical points lost, made or changed, across rank borders too.
//!
//! A `harness = false` test (Cargo.toml): run by `cargo test`, it starts itself
//! under mpirun once per case with FACTZ_MPI_CASE set. Needs Open MPI
//! (`scripts/setup` installs it) and the cargo feature `mpi`.

#[path = "common/cbuild.rs"]
mod cbuild;
mod common;

use common::e2e::{finite_range, read_f32, sorted_by_x, write_f32};
use common::fields::{self, Field};
use common::oracle;
use common::particles as po;
use factz::dist::mpi::{self, datatype::PartitionMut, traits::*, Count};
use factz::dist::{compress_field, compress_field_at, compress_particles};
use factz::field::FieldConfig;
use factz::particles::{decompress, Bound, Linking, ParticleConfig};
use std::process::Command;

const CASES: [&str; 18] = [
    "field-rows",
    "field-blocks",
    "field-uneven",
    "field-without-rule-breaks",
    "field-halo-rows",
    "field-halo-blocks",
    "field-halo-uneven",
    "field-halo-b-blocks",
    "field-halo-overlap-fails",
    "periodic-even",
    "periodic-zero-first",
    "periodic-all-last",
    "open-even",
    "open-uneven",
    "eta-rel-even",
    "one-rank-fails",
    "without-ghosts-breaks-links",
    "periodic-backend",
];

/// mpirun's options before `-np N`: a job that hangs (a rank that panicked
/// leaves the others waiting in a collective) is aborted and fails, instead of
/// holding CI until its own limit.
const MPIRUN: [&str; 5] = [
    "--allow-run-as-root",
    "--oversubscribe",
    "--timeout",
    "300",
    "-np",
];

fn main() {
    match std::env::var("FACTZ_MPI_CASE") {
        Ok(case) => child(&case),
        Err(_) => parent(),
    }
}

/// Runs every case under mpirun with 1 to 4 ranks.
fn parent() {
    // Generate (and cache) the data once, before several ranks want it.
    let _ = data();
    let _ = field();
    let exe = std::env::current_exe().expect("current_exe");
    let mut failed = Vec::new();
    for n in 1..=4 {
        for case in CASES {
            // The controls need borders to break: with one border (2 ranks) the
            // field happens to keep its critical points even without the rule.
            if (case == "without-ghosts-breaks-links" && n == 1)
                || (case == "field-without-rule-breaks" && n < 3)
                || (case == "field-halo-overlap-fails" && n == 1)
            {
                continue;
            }
            let out = Command::new("mpirun")
                .args(MPIRUN)
                .arg(n.to_string())
                .arg(&exe)
                .env("FACTZ_MPI_CASE", case)
                .output()
                .expect("running mpirun (scripts/setup installs Open MPI)");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let ok = out.status.success();
            println!(
                "{} -np {n} {case}: {}",
                if ok { "ok  " } else { "FAIL" },
                text.trim()
            );
            if !ok {
                failed.push(format!("-np {n} {case}"));
            }
        }
    }
    failed.extend(c_program());
    failed.extend(c_field_program());
    failed.extend(fortran_program());
    failed.extend(parallel_hdf5());
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// Runs a C MPI program of tests/c/ under mpirun for 1, 3 and 4 ranks and each
/// variant (c: MPI_Comm, f: the Fortran handle, bad: one rank passes bad input
/// and every rank must fail), with `args` then the output path. `check` judges
/// what rank 0 wrote; "bad" runs pass on their exit status alone. Returns the
/// failed runs.
fn run_c_program(
    name: &str,
    exe: &std::path::Path,
    args: &[String],
    check: impl Fn(&[f32]) -> bool,
) -> Vec<String> {
    run_program(
        &format!("C-{name}"),
        Command::new(exe),
        &["c", "f", "bad"],
        args,
        check,
    )
}

/// `mpirun -np N <program> VARIANT ARGS... OUT` for N = 1, 3, 4 and each
/// variant, as [`run_c_program`] describes (variants ending in "bad" pass on
/// their exit status alone).
fn run_program(
    name: &str,
    program: Command,
    variants: &[&str],
    args: &[String],
    check: impl Fn(&[f32]) -> bool,
) -> Vec<String> {
    let dir = cbuild::work_dir("mpi_particles");
    let mut failed = Vec::new();
    for np in [1, 3, 4] {
        for &how in variants {
            let out = dir.join(format!("{name}-{np}-{how}.f32"));
            let _ = std::fs::remove_file(&out);
            let mut run = Command::new("mpirun");
            run.args(MPIRUN)
                .arg(np.to_string())
                .arg(program.get_program())
                .arg(how)
                .args(args)
                .arg(&out);
            for (k, v) in program.get_envs() {
                if let Some(v) = v {
                    run.env(k, v);
                }
            }
            let run = run.output().expect("running mpirun");
            let text = String::from_utf8_lossy(&run.stdout).trim().to_string()
                + String::from_utf8_lossy(&run.stderr).trim();
            let ok = run.status.success()
                && (how.ends_with("bad") || (out.exists() && check(&read_f32(&out))));
            println!(
                "{} {name} -np {np} {how}: {text}",
                if ok { "ok  " } else { "FAIL" }
            );
            if !ok {
                failed.push(format!("{name} -np {np} {how}"));
            }
        }
    }
    failed
}

/// factz installed by CMake with `-DFACTZ_MPI=ON` (libfactz with the MPI entry
/// points, factz_mpi.h, the Fortran module, the HDF5 plugin), once per run.
fn installed() -> &'static std::path::Path {
    static PREFIX: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let base = cbuild::work_dir("mpi-install");
        let prefix = base.join("prefix");
        cbuild::run(
            Command::new(common::e2e::root().join("scripts/cmake-install"))
                .arg(&prefix)
                .arg("-DFACTZ_MPI=ON")
                .env("FACTZ_CMAKE_BUILD", base.join("build")),
            "installing factz with CMake -DFACTZ_MPI=ON",
        );
        for header in ["factz_mpi.h", "factz.mod"] {
            assert!(
                prefix.join("include").join(header).is_file(),
                "{header} not installed"
            );
        }
        prefix
    })
}

/// tests/fortran/mpi_roundtrip.f90 (`use mpi`, module factz, MPI_COMM_WORLD
/// passed as a Fortran handle) built with mpifort against the installed
/// package: particles checked by the FoF oracle, the field by the
/// critical-point oracle.
fn fortran_program() -> Vec<String> {
    let prefix = installed();
    let lib = prefix.join("lib");
    let exe = cbuild::work_dir("mpi_particles").join("mpi_roundtrip_f");
    cbuild::run(
        Command::new("mpifort")
            .arg("-Wall")
            .arg("-I")
            .arg(prefix.join("include"))
            .arg(common::e2e::root().join("tests/fortran/mpi_roundtrip.f90"))
            .arg("-L")
            .arg(&lib)
            .args(["-lfactz_fortran", "-lfactz"])
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-o")
            .arg(&exe),
        "compiling tests/fortran/mpi_roundtrip.f90 with mpifort",
    );
    let (args, check) = particle_program_case();
    let mut failed = run_program("fortran", Command::new(&exe), &["particles"], &args, check);
    let (args, check) = field_program_case();
    failed.extend(run_program(
        "fortran",
        Command::new(&exe),
        &["field", "field-at"],
        &args,
        check,
    ));
    failed
}

/// The particle case of the C and Fortran programs: their arguments after the
/// variant (RAW N B BOX XI; the output path follows) and the all-pairs FoF
/// oracle on the union rank 0 writes.
fn particle_program_case() -> (Vec<String>, impl Fn(&[f32]) -> bool) {
    let (all, l) = data();
    let raw = cbuild::work_dir("mpi_particles").join("sorted.f32");
    write_f32(&raw, &all);
    let n = all.len() / 3;
    let (b, xi) = (po::fof_b(n, l), 1e-2);
    let links = po::brute_links(&all, Some(l), b);
    let args = vec![
        raw.display().to_string(),
        n.to_string(),
        b.to_string(),
        l.to_string(),
        xi.to_string(),
    ];
    let check = move |union: &[f32]| {
        union.len() == all.len() && po::check(&all, union, Some(l), b, xi, &links).clean()
    };
    (args, check)
}

/// The field case of the C and Fortran programs: their arguments after the
/// variant (RAW NY NX REL; the output path follows) and the critical-point
/// oracle on the field rank 0 assembles.
fn field_program_case() -> (Vec<String>, impl Fn(&[f32]) -> bool) {
    let f = field();
    let raw = cbuild::work_dir("mpi_particles").join("field.f32");
    write_f32(&raw, &[f.u.as_slice(), &f.v].concat());
    let rel = 1e-2;
    let args = vec![
        raw.display().to_string(),
        f.ny.to_string(),
        f.nx.to_string(),
        rel.to_string(),
    ];
    (args, move |dec: &[f32]| field_is_clean(&f, dec, rel))
}

/// Whether `dec` (u then v) keeps every critical point of `f` and every value
/// within `rel` of the range.
fn field_is_clean(f: &Field, dec: &[f32], rel: f64) -> bool {
    let xi = rel * finite_range(f.u.iter().chain(&f.v));
    dec.len() == 2 * f.u.len() && {
        let (u, v) = dec.split_at(f.u.len());
        oracle::diff(&f.u, &f.v, u, v, f.ny, f.nx).is_clean()
            && oracle::check_bound(&f.u, u, xi).is_ok()
            && oracle::check_bound(&f.v, v, xi).is_ok()
    }
}

/// Parallel HDF5 (Debian's libhdf5-openmpi): tests/c/h5_parallel.c writes one
/// chunked, factz-filtered dataset from every rank in a collective H5Dwrite
/// (chunks not aligned with the ranks' shares), through the installed plugin.
/// What rank 0 reads back passes the oracles, and is the same bits whatever
/// the number of writers (each chunk is filtered alone).
fn parallel_hdf5() -> Vec<String> {
    let prefix = installed();
    let dir = cbuild::work_dir("mpi_particles");
    let exe = dir.join("h5_parallel");
    // -shlib: h5pcc links HDF5 statically by default, and a static HDF5 does not
    // export the symbols the plugin binds to (see h5filter/README.md).
    cbuild::run(
        Command::new("h5pcc")
            .current_dir(&dir)
            .args(["-shlib", "-Wall", "-Wextra", "-Werror"])
            .arg("-I")
            .arg(prefix.join("include"))
            .arg(cbuild::c_source("h5_parallel.c"))
            .arg("-o")
            .arg(&exe),
        "compiling tests/c/h5_parallel.c with h5pcc (libhdf5-openmpi-dev)",
    );
    let mut program = Command::new(&exe);
    program.env("HDF5_PLUGIN_PATH", prefix.join("lib/hdf5/plugin"));
    let same_bits = |seen: &std::cell::RefCell<Option<Vec<u32>>>, dec: &[f32]| {
        let b = common::e2e::bits(dec);
        seen.borrow_mut().get_or_insert_with(|| b.clone()) == &b
    };

    let f = field();
    let raw = dir.join("h5-field.f32");
    write_f32(&raw, &[f.u.as_slice(), &f.v].concat());
    let rel = 1e-3;
    let args = [
        dir.join("parallel-field.h5").display().to_string(),
        raw.display().to_string(),
        f.ny.to_string(),
        f.nx.to_string(),
        "40".into(),
        "64".into(),
        rel.to_string(),
    ];
    let seen = std::cell::RefCell::new(None);
    let mut failed = run_program("parallel-hdf5", program, &["field"], &args, |dec| {
        field_is_clean(&f, dec, rel) && same_bits(&seen, dec)
    });

    let (all, l) = data();
    let raw = dir.join("h5-particles.f32");
    write_f32(&raw, &all);
    let n = all.len() / 3;
    let b = po::fof_b(n, l);
    let xi = rel * finite_range(&all);
    let links = po::brute_links(&all, Some(l), b);
    let args = [
        dir.join("parallel-particles.h5").display().to_string(),
        raw.display().to_string(),
        n.to_string(),
        "1000".into(),
        rel.to_string(),
        b.to_string(),
        l.to_string(),
    ];
    let mut program = Command::new(&exe);
    program.env("HDF5_PLUGIN_PATH", prefix.join("lib/hdf5/plugin"));
    let seen = std::cell::RefCell::new(None);
    failed.extend(run_program(
        "parallel-hdf5",
        program,
        &["particles"],
        &args,
        |dec| {
            dec.len() == all.len()
                && po::check(&all, dec, Some(l), b, xi, &links).clean()
                && same_bits(&seen, dec)
        },
    ));
    failed
}

/// tests/c/field_mpi.c through include/factz_mpi.h (factz_field_compress_mpi
/// and _at, each with MPI_Comm, a Fortran handle and a failing rank; and
/// config->backend AUTO and CUDA, which without a GPU, or on the ring path,
/// fails on every rank as FACTZ_UNSUPPORTED before the program reruns on the
/// CPU), the assembled field checked by the brute-force critical-point oracle.
fn c_field_program() -> Vec<String> {
    let exe = cbuild::build_shared_with("mpicc", "mpi_particles", "field_mpi.c", "field_mpi");
    let (args, check) = field_program_case();
    run_program(
        "C-field",
        Command::new(&exe),
        &[
            "c", "f", "bad", "at", "at-f", "at-bad", "auto", "cuda", "at-cuda",
        ],
        &args,
        check,
    )
}

/// tests/c/particles_mpi.c through include/factz_mpi.h, the union rank 0
/// gathered checked by the all-pairs FoF oracle.
fn c_program() -> Vec<String> {
    let exe =
        cbuild::build_shared_with("mpicc", "mpi_particles", "particles_mpi.c", "particles_mpi");
    let (args, check) = particle_program_case();
    let mut failed = run_c_program("particles", &exe, &args, &check);
    // config->backend: AUTO, and CUDA (which, without a GPU, fails on every
    // rank as FACTZ_UNSUPPORTED before the program reruns on the CPU); the
    // decoded union must keep every link either way.
    failed.extend(run_program(
        "C-particles",
        Command::new(&exe),
        &["auto", "cuda"],
        &args,
        check,
    ));
    failed
}

/// The particle set (sorted by x so that consecutive slabs are spatially
/// disjoint) and its box side.
fn data() -> (Vec<f32>, f64) {
    let l = 50.0;
    (sorted_by_x(&po::synth_particles(16, 3, l, &[])), l)
}

/// This rank's slab [lo, hi) of n particles for a decomposition.
fn slab(n: usize, ranks: usize, rank: usize, how: &str) -> (usize, usize) {
    let cut = |k: usize| -> usize {
        match how {
            // Rank 0 gets nothing, the rest share evenly.
            "zero-first" if ranks > 1 => {
                if k == 0 {
                    0
                } else {
                    (k - 1) * n / (ranks - 1)
                }
            }
            // The last rank gets everything.
            "all-last" => {
                if k < ranks {
                    0
                } else {
                    n
                }
            }
            // Quadratic cuts: slabs of very different sizes.
            "uneven" => k * k * n / (ranks * ranks),
            _ => k * n / ranks,
        }
    };
    (cut(rank), if rank + 1 == ranks { n } else { cut(rank + 1) })
}

/// The test field: synth turbulence, many critical points.
fn field() -> Field {
    let (u, v) = fields::synth_turbulence(128, 2, &["--k0", "32", "--t-end", "3"]);
    Field::new("turbulence-128", 128, 128, u, v)
}

/// This rank's block (y0, x0, h, w) of an ny x nx grid.
fn block(ny: usize, nx: usize, ranks: usize, rank: usize, how: &str) -> [usize; 4] {
    let split =
        |n: usize, parts: usize, k: usize| (k * n / parts, (k + 1) * n / parts - k * n / parts);
    match how {
        // 2x2 blocks with 4 ranks, columns with 2, rows otherwise.
        "blocks" if ranks == 4 => {
            let (y0, h) = split(ny, 2, rank / 2);
            let (x0, w) = split(nx, 2, rank % 2);
            [y0, x0, h, w]
        }
        "blocks" if ranks == 2 => {
            let (x0, w) = split(nx, 2, rank);
            [0, x0, ny, w]
        }
        // Rank 0 gets one row, the others share the rest.
        "uneven" if ranks > 1 => {
            if rank == 0 {
                [0, 0, 1, nx]
            } else {
                let (y0, h) = split(ny - 1, ranks - 1, rank - 1);
                [1 + y0, 0, h, nx]
            }
        }
        _ => {
            let (y0, h) = split(ny, ranks, rank);
            [y0, 0, h, nx]
        }
    }
}

fn field_child<C: Communicator>(world: &C, rank: usize, size: usize, how: &str) {
    let f = field();
    // halo-*: compress_field_at (ring exchange, no exact perimeter); halo-b-*
    // the same in mode B; otherwise compress_field (the chunk rule).
    let (halo, how) = match how.strip_prefix("halo-") {
        Some(rest) => (true, rest),
        None => (false, how),
    };
    let (mode, how) = match how.strip_prefix("b-") {
        Some(rest) => (factz::field::Mode::Blockwise, rest),
        None => (factz::field::Mode::Speculative, how),
    };
    if how == "overlap-fails" {
        // Rank 1 claims rank 0's block: every rank must get an error.
        let [y0, x0, h, w] = block(f.ny, f.nx, size, rank.min(size - 2), "rows");
        let own = fields::window(&f, y0, x0, h, w);
        let cfg = FieldConfig::default();
        let err = compress_field_at(world, &own.u, &own.v, h, w, (y0, x0), &cfg)
            .expect_err("overlapping blocks must fail");
        assert!(err.to_string().contains("overlap"), "{err}");
        let failed = 1i32;
        let mut all = 0i32;
        world.all_reduce_into(&failed, &mut all, mpi::collective::SystemOperation::sum());
        assert_eq!(all as usize, size);
        if rank == 0 {
            println!("every rank returned an error: {err}");
        }
        return;
    }
    let [y0, x0, h, w] = block(f.ny, f.nx, size, rank, how);
    let own = fields::window(&f, y0, x0, h, w);
    let cfg = FieldConfig {
        mode,
        bound: factz::field::Bound::Rel(1e-2),
        ..FieldConfig::default()
    };
    let xi = 1e-2 * finite_range(f.u.iter().chain(&f.v));
    let c = if how == "without-rule-breaks" {
        // Control: blocks compressed alone without the chunk rule, at the same
        // bound; triangles across rank borders are then unprotected.
        let alone = FieldConfig {
            bound: factz::field::Bound::Abs(xi),
            ..cfg
        };
        factz::field::compress(&own.u, &own.v, h, w, &alone).expect("compress")
    } else if halo {
        compress_field_at(world, &own.u, &own.v, h, w, (y0, x0), &cfg).expect("compress_field_at")
    } else {
        compress_field(world, &own.u, &own.v, h, w, &cfg).expect("compress_field")
    };
    let d = factz::field::decompress(&c.bytes).expect("decompress");
    let mut mine: Vec<f32> = vec![y0 as f32, x0 as f32, h as f32, w as f32];
    mine.extend(d.u.iter().chain(&d.v));
    let root = world.process_at_rank(0);
    let count = mine.len() as Count;
    if rank == 0 {
        let mut counts = vec![0 as Count; size];
        root.gather_into_root(&count, &mut counts[..]);
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |a, &c| {
                let d = *a;
                *a += c;
                Some(d)
            })
            .collect();
        let mut all = vec![0f32; counts.iter().map(|&c| c as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(&mine[..], &mut part);
        }
        let (mut u, mut v) = (vec![f32::NAN; f.u.len()], vec![f32::NAN; f.v.len()]);
        for r in 0..size {
            let b = &all[displs[r] as usize..(displs[r] + counts[r]) as usize];
            let [by, bx, bh, bw] = [b[0], b[1], b[2], b[3]].map(|x| x as usize);
            let (bu, bv) = b[4..].split_at(bh * bw);
            for j in 0..bh {
                for i in 0..bw {
                    u[(by + j) * f.nx + bx + i] = bu[j * bw + i];
                    v[(by + j) * f.nx + bx + i] = bv[j * bw + i];
                }
            }
        }
        let diff = oracle::diff(&f.u, &f.v, &u, &v, f.ny, f.nx);
        if how == "without-rule-breaks" {
            assert!(
                !diff.is_clean(),
                "blocks alone kept every critical point: the control shows nothing"
            );
            println!("blocks alone change critical points at rank borders, as expected: {} lost, {} spurious, {} changed", diff.lost, diff.spurious, diff.type_changed);
            return;
        }
        assert!(diff.is_clean(), "field-{how}: {diff:?}");
        for (o, d) in [(&f.u, &u), (&f.v, &v)] {
            oracle::check_bound(o, d, xi).unwrap_or_else(|e| panic!("field-{how}: {e}"));
        }
        let cps = oracle::extract(&f.u, &f.v, f.ny, f.nx).len();
        println!(
            "{cps} critical points, 0 changed; rank 0 block {h}x{w}, stream {} bytes",
            c.bytes.len()
        );
    } else {
        root.gather_into(&count);
        root.gather_varcount_into(&mine[..]);
    }
}

/// The backend choice over MPI (`config->backend` of the MPI entry points):
/// where a backend runs, its streams are the CPU's and it says where it ran;
/// `Auto` without a usable GPU runs the CPU and says why; `Cuda` without one,
/// and the ring path (CPU only) with `Cuda`, fail on every rank as
/// Unsupported, with no hang.
fn backend_choice<C: Communicator>(
    world: &C,
    rank: usize,
    size: usize,
    mine: &[f32],
    cfg: &ParticleConfig,
) {
    use factz::backend::{Backend, BackendUsed};
    use factz::error::ErrorKind;
    let check = |what: &str,
                 backend: Backend,
                 got: factz::Result<(Vec<u8>, BackendUsed)>,
                 cpu: &[u8]| match got {
        Ok((bytes, ran)) => {
            assert!(
                bytes == cpu,
                "rank {rank}: {what} {backend:?}: stream differs"
            );
            assert!(
                ran.backend == Backend::Cuda
                    || (backend == Backend::Auto && ran.fallback_reason.is_some()),
                "rank {rank}: {what} {backend:?}: {ran:?}"
            );
        }
        Err(e) => {
            assert_eq!(backend, Backend::Cuda, "rank {rank}: {what}: {e}");
            assert_eq!(e.kind, ErrorKind::Unsupported, "rank {rank}: {what}: {e}");
        }
    };
    let (cpu, _) = compress_particles(world, mine, cfg).expect("CPU particles");
    for backend in [Backend::Auto, Backend::Cuda] {
        let got = factz::dist::compress_particles_on(world, backend, mine, cfg)
            .map(|(c, r)| (c.bytes, r.ran));
        check("particles", backend, got, &cpu.bytes);
    }
    let f = field();
    let [y0, x0, h, w] = block(f.ny, f.nx, size, rank, "rows");
    let own = fields::window(&f, y0, x0, h, w);
    let fcfg = FieldConfig::default();
    let cpu = compress_field(world, &own.u, &own.v, h, w, &fcfg).expect("CPU field");
    let ring = compress_field_at(world, &own.u, &own.v, h, w, (y0, x0), &fcfg).expect("CPU ring");
    for backend in [Backend::Auto, Backend::Cuda] {
        let got = factz::dist::compress_field_on(world, backend, &own.u, &own.v, h, w, &fcfg)
            .map(|(c, ran)| (c.bytes, ran));
        check("field", backend, got, &cpu.bytes);
        let got = factz::dist::compress_field_at_on(
            world,
            backend,
            &own.u,
            &own.v,
            h,
            w,
            (y0, x0),
            &fcfg,
        )
        .map(|(c, ran)| (c.bytes, ran));
        if backend == Backend::Cuda {
            let e = got.expect_err("the ring path has no GPU kernels");
            assert_eq!(e.kind, ErrorKind::Unsupported, "rank {rank}: {e}");
        } else {
            check("ring", backend, got, &ring.bytes);
        }
    }
    if rank == 0 {
        println!("backends agree with the CPU over {size} ranks");
    }
}

fn child(case: &str) {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if let Some(how) = case.strip_prefix("field-") {
        return field_child(&world, rank, size, how);
    }
    let (family, how) = case.split_once('-').unwrap();
    let periodic = family != "open";
    let (all, l) = data();
    let n = all.len() / 3;
    let period = periodic.then_some(l);
    let b = if periodic {
        po::fof_b(n, l)
    } else {
        1.5 * po::fof_b(n, l)
    };
    let mut cfg = ParticleConfig {
        bound: Bound::Abs(1e-2),
        linking: Linking::Length(b),
        period,
        ..ParticleConfig::default()
    };
    let (lo, hi) = slab(n, size, rank, how);
    let mine = &all[3 * lo..3 * hi];

    match case {
        "periodic-backend" => return backend_choice(&world, rank, size, mine, &cfg),
        "one-rank-fails" => {
            // The last rank passes a bad bound; every rank must get an error.
            if rank + 1 == size {
                cfg.bound = Bound::Abs(-1.0);
            }
            let got = compress_particles(&world, mine, &cfg);
            assert!(got.is_err(), "rank {rank}: expected an error");
            let msg = got.unwrap_err().to_string();
            assert!(msg.contains("rank"), "rank {rank}: {msg}");
            if rank == 0 {
                println!("every rank returned an error: {msg}");
            }
            return;
        }
        "eta-rel-even" => {
            cfg.bound = Bound::Rel(1e-4);
            cfg.linking = Linking::Eta(0.2);
        }
        _ => {}
    }

    let (decoded, b_used, xi_used, stats) = if case == "without-ghosts-breaks-links" {
        // Each rank alone, no ghosts and no chunk rule: links across ranks are
        // at the mercy of the base compressor (the oracle must see that). A
        // bound of 0.3 b (2 sqrt3 xi > b: every pair closer than 2b can flip)
        // makes some of the links across a slab border change whatever the data.
        let xi = 0.3 * b;
        let alone = ParticleConfig {
            bound: Bound::Abs(xi),
            ..cfg
        };
        let c = factz::particles::compress(mine, &alone).expect("compress");
        let d = decompress(&c.bytes).expect("decompress").pos;
        (d, b, xi, String::new())
    } else {
        let (c, r) = compress_particles(&world, mine, &cfg).expect("compress_particles");
        let d = decompress(&c.bytes).expect("decompress").pos;
        let stats = format!(
            "rank {rank}: {} particles, {} ghosts in, {} out, {} cross pairs, {} exact for them",
            hi - lo,
            r.ghosts_received,
            r.ghosts_sent,
            r.cross_pairs,
            r.cross_exact
        );
        (d, r.linking_length, r.abs_bound, stats)
    };

    // Gather the decoded slabs (in rank order: the original order) and the stats.
    let root = world.process_at_rank(0);
    let count = decoded.len() as Count;
    if rank == 0 {
        let mut counts = vec![0 as Count; size];
        root.gather_into_root(&count, &mut counts[..]);
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |a, &c| {
                let d = *a;
                *a += c;
                Some(d)
            })
            .collect();
        let mut union = vec![0f32; all.len()];
        {
            let mut part = PartitionMut::new(&mut union[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(&decoded[..], &mut part);
        }
        let links = po::brute_links(&all, period, b_used);
        let check = po::check(&all, &union, period, b_used, xi_used, &links);
        if case == "without-ghosts-breaks-links" {
            assert!(
                check.broken + check.spurious > 0,
                "independent ranks kept every link: the case shows nothing ({check:?})"
            );
            println!("independent ranks change links, as expected: {check:?}");
        } else {
            assert!(check.clean() && check.links > 100, "{case}: {check:?}");
            println!("{} links, 0 changed; {stats}", check.links);
        }
    } else {
        root.gather_into(&count);
        root.gather_varcount_into(&decoded[..]);
        if !stats.is_empty() {
            eprintln!("{stats}");
        }
    }
}
