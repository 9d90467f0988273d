//! NVRTC loaded at run time (libloading) from the `nvidia-cuda-nvrtc-cu12` wheel
//! that `scripts/setup` installs, or from `FACTZ_NVRTC` (a path to
//! `libnvrtc.so.12`). Compiles CUDA C source to PTX or CUBIN without a GPU.
//! Include it with `#[path = "common/nvrtc.rs"] mod nvrtc;`.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::process::Command;

type Program = *mut c_void;
type CreateFn = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(Program, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Program) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// Where libnvrtc is: `FACTZ_NVRTC`, else the wheel's `nvidia/cuda_nvrtc/lib`
/// found through python3. Err says why it was not found.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("FACTZ_NVRTC").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia.cuda_nvrtc as m; print(list(m.__path__)[0])",
        ])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "python3 cannot import nvidia.cuda_nvrtc (pip install nvidia-cuda-nvrtc-cu12, \
             see scripts/setup): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("lib");
    let so = dir.join("libnvrtc.so.12");
    if so.is_file() {
        Ok(so)
    } else {
        Err(format!("{} is missing", so.display()))
    }
}

pub struct Nvrtc {
    lib: libloading::Library,
}

/// A compilation's output: the log, and PTX (virtual arch) or CUBIN (real arch).
pub struct Compiled {
    pub log: String,
    pub ptx: Option<String>,
    pub cubin: Option<Vec<u8>>,
}

impl Nvrtc {
    pub fn load() -> Result<Nvrtc, String> {
        let path = locate()?;
        // SAFETY: loading NVRTC runs only its own initialisers.
        let lib = unsafe { libloading::Library::new(&path) }
            .map_err(|e| format!("loading {}: {e}", path.display()))?;
        Ok(Nvrtc { lib })
    }

    fn sym<T>(&self, name: &[u8]) -> libloading::Symbol<'_, T> {
        // SAFETY: each caller names a type matching NVRTC's C declaration.
        unsafe { self.lib.get(name) }.unwrap_or_else(|e| {
            panic!("NVRTC lacks {}: {e}", String::from_utf8_lossy(name));
        })
    }

    pub fn version(&self) -> (i32, i32) {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion(int*, int*).
        let rc = unsafe { self.sym::<VersionFn>(b"nvrtcVersion\0")(&mut major, &mut minor) };
        assert_eq!(rc, 0, "nvrtcVersion");
        (major, minor)
    }

    fn error(&self, rc: c_int) -> String {
        // SAFETY: nvrtcGetErrorString returns a static C string.
        unsafe { CStr::from_ptr(self.sym::<ErrorStringFn>(b"nvrtcGetErrorString\0")(rc)) }
            .to_string_lossy()
            .into_owned()
    }

    /// Compiles `source` (named `name` in messages) with `options`. Err holds the
    /// error and the log when compilation fails.
    pub fn compile(&self, source: &str, name: &str, options: &[&str]) -> Result<Compiled, String> {
        let src = CString::new(source).expect("source without NUL");
        let cname = CString::new(name).expect("name without NUL");
        let opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(*o).expect("option without NUL"))
            .collect();
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: the NVRTC C API as declared in nvrtc.h; every pointer outlives
        // the call it is passed to, and buffers have the sizes NVRTC reported.
        unsafe {
            let rc = self.sym::<CreateFn>(b"nvrtcCreateProgram\0")(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if rc != 0 {
                return Err(format!("nvrtcCreateProgram: {}", self.error(rc)));
            }
            let rc = self.sym::<CompileFn>(b"nvrtcCompileProgram\0")(
                prog,
                opt_ptrs.len() as c_int,
                opt_ptrs.as_ptr(),
            );
            let log = self
                .get_bytes(prog, b"nvrtcGetProgramLogSize\0", b"nvrtcGetProgramLog\0")
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .trim_end_matches('\0')
                        .to_string()
                })
                .unwrap_or_default();
            let result = if rc != 0 {
                Err(format!("{name}: {} {options:?}\n{log}", self.error(rc)))
            } else {
                let ptx = self
                    .get_bytes(prog, b"nvrtcGetPTXSize\0", b"nvrtcGetPTX\0")
                    .map(|b| {
                        String::from_utf8_lossy(&b)
                            .trim_end_matches('\0')
                            .to_string()
                    });
                let cubin = self.get_bytes(prog, b"nvrtcGetCUBINSize\0", b"nvrtcGetCUBIN\0");
                Ok(Compiled { log, ptx, cubin })
            };
            self.sym::<DestroyFn>(b"nvrtcDestroyProgram\0")(&mut prog);
            result
        }
    }

    /// Compiles the kernel file `file` (its text, named `name`) as the library
    /// hands it to NVRTC: `factz::kernels::source`, the prelude generated from
    /// the Rust constants and kernels/common.cuh, then the file.
    pub fn compile_kernel(
        &self,
        file: &str,
        name: &str,
        options: &[&str],
    ) -> Result<Compiled, String> {
        self.compile(&factz::kernels::source(file, name), name, options)
    }

    /// One of NVRTC's size-then-copy getters; None when it reports an error or
    /// nothing (e.g. no CUBIN for a virtual architecture).
    unsafe fn get_bytes(&self, prog: Program, size_fn: &[u8], get_fn: &[u8]) -> Option<Vec<u8>> {
        let mut n = 0usize;
        if self.sym::<SizeFn>(size_fn)(prog, &mut n) != 0 || n == 0 {
            return None;
        }
        let mut buf = vec![0u8; n];
        if self.sym::<GetFn>(get_fn)(prog, buf.as_mut_ptr().cast()) != 0 {
            return None;
        }
        Some(buf)
    }
}

/// Makes the wheel's NVRTC the one cudarc finds (feature `cuda` tests): loaded
/// by its path first, cudarc's dlopen of `libnvrtc.so.12` gets the same
/// library (same soname). Loaded once per test binary.
pub fn preload() -> Result<(), String> {
    static LIB: std::sync::OnceLock<Result<libloading::Library, String>> =
        std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let path = locate()?;
        // SAFETY: loading NVRTC runs only its own initialisers.
        unsafe { libloading::Library::new(&path) }.map_err(|e| e.to_string())
    })
    .as_ref()
    .map(|_| ())
    .map_err(Clone::clone)
}

/// [`preload`] for a test of cudarc's NVRTC path: false (after saying why)
/// when NVRTC is missing, which fails the test under `CI=true`.
pub fn preloaded_or_skip() -> bool {
    match preload() {
        Ok(()) => true,
        Err(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and NVRTC is missing: {why}"
            );
            eprintln!("skipping: {why}");
            false
        }
    }
}

/// The library's device executor with every kernel (NVRTC preloaded first),
/// for the `#[ignore]`d device tests, in check mode (a wait after every
/// launch: a fault names its kernel, and the tests after it say the context
/// was poisoned by it); panics saying why there is none.
#[cfg(feature = "cuda")]
pub fn device() -> factz::gpu::exec::Cuda {
    factz::gpu::exec::set_checked(true);
    let _ = preload();
    factz::gpu::exec::shared()
        .unwrap_or_else(|e| panic!("{e}"))
        .clone()
}
