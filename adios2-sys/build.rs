//! Finds ADIOS2's C library (2.12, from the PyPI wheel `adios2` or an install prefix)
//! and links it.
//!
//! Where: `ADIOS2_DIR` if set (the wheel's package directory, or a prefix with `lib/`
//! and `include/`), else the directory of the `adios2` package of `python3`.
//!
//! Emits `-L`, `-l adios2_c`, an rpath for this crate's own tests, and exports the
//! directories to the crate (`ADIOS2_SYS_LIB_DIR`, `ADIOS2_SYS_INCLUDE_DIR`) and to
//! dependents' build scripts (`DEP_ADIOS2_C_LIB_DIR`).
//!
//! Cargo applies `rustc-link-arg` (the rpath) only to this package's own targets,
//! never to a dependent's test. So the search path given to rustc is a symlink to
//! the library directory inside `OUT_DIR`: Cargo puts search paths that lie inside
//! the target directory on the loader path (`LD_LIBRARY_PATH`) when it runs any
//! test or binary of the workspace, so factz's tests load libadios2_c too. A
//! symlink to the directory (not to the files) keeps the library's own
//! `$ORIGIN`-relative rpath (`$ORIGIN/../adios2.libs`) working.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{self, Command};

const LIB: &str = "libadios2_c.so";

fn fail(msg: &str) -> ! {
    eprintln!(
        "error: adios2-sys: {msg}\n\
         ADIOS2 2.12's C library is needed (factz's ADIOS2 tests use it): scripts/setup \
         installs it (the PyPI wheel `adios2`). Or set ADIOS2_DIR to the wheel's package \
         directory (python3 -c \"import adios2,os;print(os.path.dirname(adios2.__file__))\")."
    );
    process::exit(1);
}

/// The wheel keeps the libraries beside `include/`; an install prefix has them in
/// `lib/` or `lib64/`.
fn lib_dir_in(dir: &Path) -> Option<PathBuf> {
    [dir.to_path_buf(), dir.join("lib"), dir.join("lib64")]
        .into_iter()
        .find(|d| d.join(LIB).is_file())
}

fn python_package_dir() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import adios2, os; print(os.path.dirname(adios2.__file__))",
        ])
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run python3 to find ADIOS2: {e}")));
    if !out.status.success() {
        fail(&format!(
            "python3 cannot import adios2 and ADIOS2_DIR is not set:\n{}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=ADIOS2_DIR");

    let (dir, from) = match env::var_os("ADIOS2_DIR").filter(|d| !d.is_empty()) {
        Some(d) => (PathBuf::from(d), "ADIOS2_DIR"),
        None => (python_package_dir(), "python3's adios2 package"),
    };
    let lib_dir = lib_dir_in(&dir).unwrap_or_else(|| {
        fail(&format!(
            "no {LIB} in {} (from {from}), nor in its lib/ or lib64/",
            dir.display()
        ))
    });
    let lib_dir = lib_dir.canonicalize().unwrap_or(lib_dir);
    // The headers sit in `include/` beside the libraries (wheel) or the prefix.
    let include_dir = [dir.join("include"), lib_dir.join("../include")]
        .into_iter()
        .find(|d| d.join("adios2_c.h").is_file())
        .unwrap_or_else(|| dir.join("include"));
    println!("cargo:rerun-if-changed={}", lib_dir.join(LIB).display());

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let link = out_dir.join("adios2-lib");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&lib_dir, &link).unwrap_or_else(|e| {
        fail(&format!(
            "cannot link {} to {}: {e}",
            link.display(),
            lib_dir.display()
        ))
    });

    println!("cargo:rustc-link-search=native={}", link.display());
    println!("cargo:rustc-link-lib=dylib=adios2_c");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    println!("cargo:rustc-env=ADIOS2_SYS_LIB_DIR={}", lib_dir.display());
    println!(
        "cargo:rustc-env=ADIOS2_SYS_INCLUDE_DIR={}",
        include_dir.display()
    );
    println!("cargo:lib_dir={}", lib_dir.display());
}
