//! The Python package as a user gets it: a fresh virtual environment (no system
//! site packages; pip fetches numpy and h5py), `pip install ./python` (which
//! builds libfactz with cargo, compiles the HDF5 filter plugin with cc and ships
//! both inside the package), then `tests/python/package_check.py` with a clean
//! environment (no HDF5_PLUGIN_PATH, no LD_LIBRARY_PATH, no PYTHONPATH) and its
//! working directory outside the repository: h5py writes and reads factz datasets
//! through the bundled plugin, h5dump reads them with HDF5_PLUGIN_PATH =
//! factz.PLUGIN_PATH, and the numpy API is checked against brute-force critical
//! points and FoF links, with misuse raising exceptions, never crashing.
//!
//! Needs python3 with venv (python3-venv on Debian), cargo, cc, h5dump and access
//! to PyPI (or a pip cache): `scripts/setup`. The release build of libfactz is
//! the one `scripts/cmake-install` (tests/hdf5_filter.rs) makes in target/, so
//! in the full suite it is built once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command that must succeed; returns its stdout and stderr.
fn run(cmd: &mut Command, what: &str) -> String {
    let start = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e} (scripts/setup installs it)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n{text}",
        out.status
    );
    eprintln!("{what}: {:.1} s", start.elapsed().as_secs_f64());
    text
}

/// An empty directory outside the repository, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn pip_install_then_h5py_and_numpy_with_nothing_set() {
    let tmp = TempDir::new("factz-python-package");
    assert!(
        !tmp.0.starts_with(root()),
        "the scratch directory {} must lie outside the repository",
        tmp.0.display()
    );
    let venv = tmp.0.join("venv");
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv (Debian: apt-get install python3-venv)",
    );
    let python = venv.join("bin/python");

    // pip keeps the caller's environment (proxies, pip configuration, cargo's
    // CARGO_TARGET_DIR) but nothing that points Python or HDF5 at other files.
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
    ])
    .arg(root().join("python"))
    .current_dir(&tmp.0);
    for var in [
        "HDF5_PLUGIN_PATH",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
        "FACTZ_H5_PLUGIN_DIR",
        "FACTZ_LIBRARY",
    ] {
        pip.env_remove(var);
    }
    let log = run(&mut pip, "pip install ./python");
    assert!(
        log.contains("Successfully installed") && log.contains("factz-0.1.0"),
        "pip did not install factz:\n{log}"
    );
    let site = run(
        Command::new(&python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['platlib'])",
            ])
            .env_clear(),
        "asking the venv for its site-packages",
    );
    let pkg = PathBuf::from(site.trim()).join("factz");
    for f in [
        "libfactz.so",
        "plugin/libH5Zfactz.so",
        "__init__.py",
        "h5.py",
    ] {
        assert!(pkg.join(f).is_file(), "the installed package lacks {f}");
    }

    // The user's script: nothing set but PATH (for h5dump) and HOME.
    let work = tmp.0.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = run(
        Command::new(&python)
            .arg(root().join("tests/python/package_check.py"))
            .arg(&work)
            .current_dir(&work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &work),
        "tests/python/package_check.py in the fresh venv",
    );
    assert!(out.contains("checks passed"), "{out}");
    eprint!("{out}");
}
