//! The C ABI from real C programs: `tests/c/*.c` compiled with the system C
//! compiler against `include/factz.h` and the static library this `cargo test`
//! built (and once against the shared library).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding the `libfactz.a` / `libfactz.so` this test run built.
///
/// The test executable lives in `<target>/<profile>/deps/` (debug, release,
/// custom profiles, target triples, nextest alike). `cargo test` writes the
/// library's static and shared artifacts to `deps/` (without a hash in their
/// names) and does not always copy them up to `<profile>/` as `cargo build`
/// does, so both places are candidates and the newest `libfactz.a` wins.
fn lib_dir() -> PathBuf {
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

fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_api");
    std::fs::create_dir_all(&dir).expect("creating the C build directory");
    dir
}

fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// Runs a command, failing the test with its output if it fails.
fn run(cmd: &mut Command, what: &str) -> String {
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

/// Compiles `source` against the static library into `exe`.
fn build_static(source: &str, exe: &str) -> PathBuf {
    let out = work_dir().join(exe);
    eprintln!(
        "linking {source} against {}",
        lib_dir().join("libfactz.a").display()
    );
    run(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
            .arg(include_dir())
            .arg(c_source(source))
            .arg(lib_dir().join("libfactz.a"))
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&out),
        &format!("compiling {source}"),
    );
    out
}

fn assert_summary(stdout: &str, what: &str) {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or_else(|| {
            panic!("{what}: no summary line in its output:\n{stdout}");
        });
    assert!(line.ends_with(" 0 failed"), "{what}: {line}");
}

#[test]
fn c_field_roundtrip_static() {
    let exe = build_static("field_roundtrip.c", "field_roundtrip_static");
    let stdout = run(&mut Command::new(&exe), "field_roundtrip (static)");
    assert_summary(&stdout, "field_roundtrip (static)");
}

#[test]
fn c_field_roundtrip_shared() {
    let dir = lib_dir();
    let so = dir.join("libfactz.so");
    assert!(
        so.is_file(),
        "{} not found (crate-type cdylib)",
        so.display()
    );
    let exe = work_dir().join("field_roundtrip_shared");
    run(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
            .arg(include_dir())
            .arg(c_source("field_roundtrip.c"))
            .arg("-L")
            .arg(&dir)
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .args(["-Wl,-Bdynamic", "-lfactz", "-lm", "-o"])
            .arg(&exe),
        "compiling field_roundtrip.c against libfactz.so",
    );
    // The program must really load the shared library, not a static copy.
    if let Ok(out) = Command::new("readelf").arg("-d").arg(&exe).output() {
        let dynamic = String::from_utf8_lossy(&out.stdout);
        assert!(
            dynamic.contains("libfactz.so"),
            "not linked against libfactz.so:\n{dynamic}"
        );
    }
    let stdout = run(&mut Command::new(&exe), "field_roundtrip (shared)");
    assert_summary(&stdout, "field_roundtrip (shared)");
}

#[test]
fn c_field_threads() {
    let exe = build_static("field_threads.c", "field_threads");
    let stdout = run(&mut Command::new(&exe), "field_threads");
    assert_summary(&stdout, "field_threads");
}
