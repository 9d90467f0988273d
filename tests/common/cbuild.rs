//! Building and running the C programs of `tests/c/` against the library this
//! `cargo test` built (the approach of `tests/c_api.rs`): the system C compiler,
//! `include/factz.h`, and `libfactz.a` or `libfactz.so` from the target directory.
//! Include it with `#[path = "common/cbuild.rs"] mod cbuild;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding the `libfactz.a` / `libfactz.so` this test run built.
///
/// The test executable lives in `<target>/<profile>/deps/`. `cargo test` writes the
/// library's static and shared artifacts to `deps/` (without a hash in their
/// names) and does not always copy them up to `<profile>/` as `cargo build`
/// does, so both places are candidates and the newest `libfactz.a` wins.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe
        .parent()
        .expect("test executable has a directory")
        .to_path_buf();
    let profile_dir = deps
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| deps.clone());
    let profile = profile_dir
        .file_name()
        .map_or_else(|| "debug".into(), |n| n.to_string_lossy().into_owned());
    let fallback = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(profile);
    let candidates = [deps, profile_dir, fallback.join("deps"), fallback];
    candidates
        .iter()
        .filter_map(|dir| {
            let modified = std::fs::metadata(dir.join("libfactz.a"))
                .ok()?
                .modified()
                .ok()?;
            Some((modified, dir))
        })
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, dir)| dir.clone())
        .unwrap_or_else(|| {
            panic!(
                "libfactz.a not found in {candidates:?}; `cargo test` builds it with the library \
                 (crate-type staticlib); run `cargo build` for this profile first"
            )
        })
}

/// A build directory of its own for each test binary (`name`), so test binaries
/// running at once never write the same files.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("creating the C build directory");
    dir
}

pub fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// Runs a command, failing the test with its output if it fails.
pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        out.status.success(),
        "{what} failed ({}): {cmd:?}\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

const CFLAGS: [&str; 6] = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"];

/// Compiles `source` against the static library into `<work_dir(dir)>/exe`.
pub fn build_static(dir: &str, source: &str, exe: &str) -> PathBuf {
    let out = work_dir(dir).join(exe);
    eprintln!(
        "linking {source} against {}",
        lib_dir().join("libfactz.a").display()
    );
    run(
        Command::new("cc")
            .args(CFLAGS)
            .arg(include_dir())
            .arg(c_source(source))
            .arg(lib_dir().join("libfactz.a"))
            .args(mpi_link_args())
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&out),
        &format!("compiling {source}"),
    );
    out
}

/// With the `mpi` feature, libfactz.a holds the MPI entry points and needs the
/// MPI library at link time, as any static library needs its dependencies
/// (Open MPI's `mpicc --showme:link` says which).
fn mpi_link_args() -> Vec<String> {
    if !cfg!(feature = "mpi") {
        return Vec::new();
    }
    let out = Command::new("mpicc")
        .arg("--showme:link")
        .output()
        .expect("mpicc (Open MPI) for the link flags of an MPI-enabled libfactz.a");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Compiles `source` against the shared library (with an rpath to it) into
/// `<work_dir(dir)>/exe`, and checks the program really loads `libfactz.so`.
///
/// The library's soname is `libfactz.so.0` (what an installed copy is called,
/// see CMakeLists.txt), which cargo does not create: a `lib/` beside the
/// program links both names to the library this test run built.
pub fn build_shared(dir: &str, source: &str, exe: &str) -> PathBuf {
    build_shared_with("cc", dir, source, exe)
}

/// [`build_shared`] with another compiler driver (`mpicc` for MPI programs).
pub fn build_shared_with(compiler: &str, dir: &str, source: &str, exe: &str) -> PathBuf {
    let so = lib_dir().join("libfactz.so");
    assert!(
        so.is_file(),
        "{} not found (crate-type cdylib)",
        so.display()
    );
    let libs = work_dir(dir).join("lib");
    std::fs::create_dir_all(&libs).expect("creating the library directory");
    for name in ["libfactz.so", "libfactz.so.0"] {
        let link = libs.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&so, &link).expect("linking libfactz.so");
    }
    let out = work_dir(dir).join(exe);
    run(
        Command::new(compiler)
            .args(CFLAGS)
            .arg(include_dir())
            .arg(c_source(source))
            .arg("-L")
            .arg(&libs)
            .arg(format!("-Wl,-rpath,{}", libs.display()))
            .args(["-Wl,-Bdynamic", "-lfactz", "-lm", "-o"])
            .arg(&out),
        &format!("compiling {source} against libfactz.so"),
    );
    if let Ok(o) = Command::new("readelf").arg("-d").arg(&out).output() {
        let dynamic = String::from_utf8_lossy(&o.stdout);
        assert!(
            dynamic.contains("[libfactz.so.0]"),
            "not linked against libfactz.so.0:\n{dynamic}"
        );
    }
    out
}

/// Checks the program's last "N passed, M failed" line says 0 failed.
pub fn assert_summary(stdout: &str, what: &str) {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or_else(|| {
            panic!("{what}: no summary line in its output:\n{stdout}");
        });
    assert!(line.ends_with(" 0 failed"), "{what}: {line}");
}
