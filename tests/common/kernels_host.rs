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
/// is cached under a hash of the flags and of every text compiled, so only a
/// changed kernel or prelude rebuilds it) and loads it. Each `kernels/*.cu`
/// is compiled as NVRTC gets it: `factz::kernels::source`, the prelude
/// generated from the Rust constants and `kernels/common.cuh`, then the file.
pub fn library() -> &'static libloading::Library {
    static LIB: OnceLock<libloading::Library> = OnceLock::new();
    LIB.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernels_host");
        std::fs::create_dir_all(&dir).expect("creating the host kernel build directory");
        let shim = kernels_dir().join("shim");
        let read = |f: &PathBuf| {
            std::fs::read_to_string(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()))
        };
        // (file name, text compiled): the kernels and the shim's host-only
        // probes (kernels/shim/*.cpp), each after the prelude.
        let mut files = kernel_sources();
        files.extend(files_with_ext(&shim, "cpp"));
        let texts: Vec<(String, String)> = files
            .iter()
            .map(|f| {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                let text = factz::kernels::source(&read(f), &name);
                (name, text)
            })
            .collect();
        let header = shim.join("cuda_host.hpp");
        // DefaultHasher::new() has fixed keys: the same inputs give the same name.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        FLAGS.hash(&mut h);
        texts.hash(&mut h);
        read(&header).hash(&mut h);
        let so = dir.join(format!("libfactz_kernels_host-{:016x}.so", h.finish()));
        if !so.is_file() {
            // Sources written and built under private names and the library
            // renamed, so no test binary ever loads a half-written library.
            let gen = dir.join(format!("src-{}", std::process::id()));
            std::fs::create_dir_all(&gen).expect("creating the generated source directory");
            let sources: Vec<PathBuf> = texts
                .iter()
                .map(|(name, text)| {
                    let p = gen.join(name);
                    std::fs::write(&p, text)
                        .unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
                    p
                })
                .collect();
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
            let _ = std::fs::remove_dir_all(&gen);
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
