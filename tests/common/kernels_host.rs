//! `kernels/*.cu` compiled as host C++ with `kernels/shim/cuda_host.hpp`
//! force-included (a block's threads run as fibers or std::threads that meet
//! only at barriers), plus
//! the host entry points of `kernels/shim/*.cpp`, as one shared library loaded
//! with libloading. Include it with `#[path = "common/kernels_host.rs"] mod kernels_host;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")
}

/// Every `kernels/*.cu`, sorted.
pub fn kernel_sources() -> Vec<PathBuf> {
    files_with_ext(&kernels_dir(), "cu")
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

/// g++'s flags for the host build: C++20 for std::barrier; no FMA
/// contraction, as NVRTC's --fmad=false.
const FLAGS: [&str; 10] = [
    "-std=c++20",
    "-O2",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pthread",
    "-fPIC",
    "-shared",
];

/// Builds the host library (once for every test binary of a run: the result
/// is cached under a hash of the flags and every source, so only a changed
/// kernel rebuilds it) and loads it.
pub fn library() -> &'static libloading::Library {
    static LIB: OnceLock<libloading::Library> = OnceLock::new();
    LIB.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernels_host");
        std::fs::create_dir_all(&dir).expect("creating the host kernel build directory");
        let shim = kernels_dir().join("shim");
        let mut sources = kernel_sources();
        sources.extend(files_with_ext(&shim, "cpp"));
        let header = shim.join("cuda_host.hpp");
        // DefaultHasher::new() has fixed keys: the same inputs give the same name.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        FLAGS.hash(&mut h);
        for f in sources.iter().chain([&header]) {
            f.hash(&mut h);
            std::fs::read(f)
                .unwrap_or_else(|e| panic!("reading {}: {e}", f.display()))
                .hash(&mut h);
        }
        let so = dir.join(format!("libfactz_kernels_host-{:016x}.so", h.finish()));
        if !so.is_file() {
            // Built under a private name and renamed, so no test binary ever
            // loads a half-written library.
            let tmp = dir.join(format!("building-{}.so", std::process::id()));
            let out = Command::new("g++")
                .args(FLAGS)
                .arg("-include")
                .arg(&header)
                .arg("-x")
                .arg("c++")
                .args(&sources)
                .arg("-o")
                .arg(&tmp)
                .output()
                .expect("running g++ (the host build of kernels/*.cu needs a C++20 g++)");
            assert!(
                out.status.success(),
                "host build of kernels/*.cu failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::rename(&tmp, &so).expect("naming the host kernel library");
            // Older builds are stale (a loaded copy stays valid when unlinked).
            for old in files_with_ext(&dir, "so") {
                let name = old.file_name().unwrap_or_default().to_string_lossy();
                if old != so && name.starts_with("libfactz_kernels_host-") {
                    let _ = std::fs::remove_file(&old);
                }
            }
        }
        // SAFETY: our own library; its initialisers only set up the shim's globals.
        unsafe { libloading::Library::new(&so) }
            .unwrap_or_else(|e| panic!("loading {}: {e}", so.display()))
    })
}

/// How the shim runs a block's threads (kernels/shim/cuda_host.hpp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// ucontext fibers: deterministic, fast.
    Fibers,
    /// One std::thread per CUDA thread: truly concurrent, slow.
    Os,
}
