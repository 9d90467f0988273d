//! The CUDA backend (cargo feature `cuda`): kernels from `kernels/*.cu`
//! compiled at run time by NVRTC through cudarc, which loads the driver and
//! NVRTC dynamically, so a build with this feature still runs where neither is
//! installed: [`device`] says why no GPU is used and callers stay on the CPU.
//!
//! Every module drives its `kernels/*.cu` through [`exec::Exec`] (cudarc on a
//! device; in tests the same sources built as host C++): [`field`] is the
//! field pipeline over [`mode_b`] / [`mode_b_codec`], [`mode_s`],
//! [`field_reduce`], [`huffman`], [`rans`] and [`zero_runs`], its parts held in
//! [`parts::DevParts`];
//! [`particles`] and [`descent`] are the particle correction's pair search and
//! optimiser; [`scan`] is the grid-wide prefix sum they all place output with;
//! [`profile`] times any of them per kernel.

pub mod descent;
pub mod exec;
pub mod field;
pub mod field_reduce;
pub mod huffman;
pub mod launch;
pub mod mode_b_bounds;
pub mod mode_b_codec;
pub mod mode_s;
pub mod particles;
pub mod parts;
pub mod profile;
pub mod rans;
pub mod scan;
pub mod zero_runs;

pub use crate::kernels::prelude;

use crate::error::{Error, Result};
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// The first CUDA device, or why there is none (a message fit for the user:
/// `Auto` reports it as why the CPU ran, `Cuda` fails with it). Never panics: cudarc panics when a
/// library it needs is missing, so the driver is looked for first and the
/// device count is taken under `catch_unwind`.
pub fn device() -> Result<Arc<CudaContext>> {
    // SAFETY: only tries to dlopen libcuda; nothing is called.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::unsupported("no CUDA driver (libcuda.so) found"));
    }
    let count = std::panic::catch_unwind(CudaContext::device_count)
        .map_err(|_| Error::unsupported("the CUDA driver failed to load"))?
        .map_err(|e| Error::unsupported(format!("CUDA: {e}")))?;
    if count < 1 {
        return Err(Error::unsupported("the CUDA driver sees no device"));
    }
    CudaContext::new(0).map_err(|e| Error::unsupported(format!("CUDA device 0: {e}")))
}

/// The fallback target when NVRTC does not know the device's own
/// architecture (a GPU newer than NVRTC 12.4): PTX for compute_80, which the
/// driver JIT-compiles for any GPU from the A100 on.
pub const FALLBACK_ARCH: &str = "compute_80";

/// One kernel source compiled by NVRTC: the PTX, and for a real architecture
/// (`sm_XY`) the CUBIN the driver loads without a JIT.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub arch: String,
    pub ptx: String,
    pub cubin: Option<Vec<u8>>,
}

impl Compiled {
    /// What the driver loads: the CUBIN when there is one, else the PTX.
    pub fn image(self) -> cudarc::nvrtc::Ptx {
        match self.cubin {
            Some(c) => cudarc::nvrtc::Ptx::from_binary(c),
            None => cudarc::nvrtc::Ptx::from_src(self.ptx),
        }
    }
}

/// Every NVRTC call: Unsupported when no NVRTC loads; cudarc's panics where
/// NVRTC lacks a symbol (a library that is not NVRTC, or too old) or cannot
/// give a log become errors, so `Auto` can fall back.
fn nvrtc_call<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !nvrtc_present() {
        return Err(Error::unsupported(
            "NVRTC (libnvrtc.so or libnvrtc.so.12) not found on the library path",
        ));
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("panic");
        Err(Error::internal(format!("NVRTC {what}: {why}")))
    })
}

/// One kernel source (`name` for NVRTC's messages) for `arch`, a virtual
/// (`compute_XY`: PTX only) or real (`sm_XY`: PTX and CUBIN) architecture,
/// with `--fmad=false`: every f32/f64 add, sub and mul carries `.rn`, so
/// neither ptxas nor the driver's JIT may fuse them (the CPU's roundings,
/// ARCHITECTURE.md, "Bit-identical rule").
pub fn compile(source: &str, name: &str, arch: &str) -> Result<Compiled> {
    use cudarc::nvrtc::{result, sys};
    let src = std::ffi::CString::new(source)
        .map_err(|_| Error::internal(format!("{name} holds a NUL byte")))?;
    let cname = std::ffi::CString::new(name)
        .map_err(|_| Error::internal(format!("kernel source name {name:?} holds a NUL byte")))?;
    let fail = |step: &str, e: result::NvrtcError| {
        Error::internal(format!("NVRTC {step} {name} for {arch}: {e:?}"))
    };
    nvrtc_call(&format!("compiling {name} for {arch}"), || {
        let prog = result::create_program(&src, Some(&cname)).map_err(|e| fail("creating", e))?;
        let opts = [format!("--gpu-architecture={arch}"), "--fmad=false".into()];
        // SAFETY: prog is live until the destroy below; every buffer has the
        // size NVRTC reported.
        let out = unsafe {
            let out = match result::compile_program(prog, &opts) {
                Err(e) => {
                    let log = result::get_program_log(prog)
                        .map(|l| c_text(&l))
                        .unwrap_or_default();
                    Err(Error::internal(format!(
                        "NVRTC compiling {name} for {arch}: {e:?}\n{log}"
                    )))
                }
                Ok(()) => result::get_ptx(prog)
                    .map_err(|e| fail("getting the PTX of", e))
                    .and_then(|p| {
                        let ptx = c_text(&p);
                        let cubin = if arch.starts_with("sm_") {
                            let mut n = 0usize;
                            sys::nvrtcGetCUBINSize(prog, &mut n)
                                .result()
                                .map_err(|e| fail("sizing the CUBIN of", e))?;
                            let mut c = vec![0u8; n];
                            sys::nvrtcGetCUBIN(prog, c.as_mut_ptr().cast())
                                .result()
                                .map_err(|e| fail("getting the CUBIN of", e))?;
                            Some(c)
                        } else {
                            None
                        };
                        Ok(Compiled {
                            arch: arch.to_string(),
                            ptx,
                            cubin,
                        })
                    }),
            };
            let _ = result::destroy_program(prog);
            out
        };
        out
    })
}

/// NVRTC's NUL-terminated text (log, PTX) as a string.
fn c_text(chars: &[std::ffi::c_char]) -> String {
    let b: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&b)
        .trim_end_matches('\0')
        .to_string()
}

/// The real architectures (`sm_XY` as XY) this NVRTC compiles for.
pub fn nvrtc_archs() -> Result<Vec<i32>> {
    use cudarc::nvrtc::sys;
    nvrtc_call("listing its architectures", || {
        let mut n = 0;
        // SAFETY: NVRTC writes n, then n ints.
        unsafe {
            sys::nvrtcGetNumSupportedArchs(&mut n)
                .result()
                .map_err(|e| Error::internal(format!("nvrtcGetNumSupportedArchs: {e:?}")))?;
            let mut archs = vec![0; n.max(0) as usize];
            sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
                .result()
                .map_err(|e| Error::internal(format!("nvrtcGetSupportedArchs: {e:?}")))?;
            Ok(archs)
        }
    })
}

/// NVRTC's version (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    nvrtc_call("version", || {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion(int*, int*).
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| Error::internal(format!("nvrtcVersion: {e:?}")))?;
        Ok((major, minor))
    })
}

/// The target for a device of compute capability `cc`: its own `sm_XY`
/// (CUBIN: no JIT per process) when NVRTC knows it (`archs`, from
/// [`nvrtc_archs`]), else [`FALLBACK_ARCH`].
pub fn target_arch(cc: (i32, i32), archs: &[i32]) -> String {
    let sm = cc.0 * 10 + cc.1;
    if cc.0 > 0 && (0..10).contains(&cc.1) && archs.contains(&sm) {
        format!("sm_{sm}")
    } else {
        FALLBACK_ARCH.to_string()
    }
}

/// Loads the NVRTC at `path` (e.g. `FACTZ_NVRTC`, the pack's) before cudarc
/// looks for one by name, and keeps it loaded: cudarc's dlopen of
/// `libnvrtc.so.12` then finds it by its soname. cudarc tries `libnvrtc.so`
/// first, which matches no soname: that name must also lead to it on the
/// library path (scripts/gpu-check links it); [`nvrtc_loaded`] tells.
pub fn preload_nvrtc(path: &std::path::Path) -> Result<()> {
    static LIB: std::sync::OnceLock<std::result::Result<libloading::Library, String>> =
        std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: loading NVRTC runs only its own initialisers.
        unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("loading NVRTC {}: {e}", path.display()))
    })
    .as_ref()
    .map(|_| ())
    .map_err(|e| Error::unsupported(e.clone()))
}

/// The NVRTC libraries mapped into this process (`/proc/self/maps`; empty
/// elsewhere), to tell which one cudarc's dlopen by name found: a second
/// one, or another than the pack's, is a wrong NVRTC on the library path.
pub fn nvrtc_loaded() -> Vec<std::path::PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut out: Vec<std::path::PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| {
            std::path::Path::new(p)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("libnvrtc.so"))
        })
        .map(std::path::PathBuf::from)
        .collect();
    out.dedup();
    out.sort();
    out.dedup();
    out
}

/// A CUDA driver error as the library's error.
pub(crate) fn driver(e: cudarc::driver::DriverError) -> Error {
    Error::internal(format!("CUDA: {e}"))
}

/// u and v of an ny x nx field copied to `e`, after checking their lengths.
pub(crate) fn upload_field<E: exec::Exec>(
    e: &E,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
) -> Result<(exec::Buf<E, f32>, exec::Buf<E, f32>)> {
    let n = crate::field::vertex_count(ny, nx)?;
    if u.len() != n || v.len() != n {
        return Err(Error::invalid(format!(
            "field shape {ny}x{nx} needs {n} values per component, got {} and {}",
            u.len(),
            v.len()
        )));
    }
    Ok((exec::Buf::from(e, u)?, exec::Buf::from(e, v)?))
}

/// The vertex count of an ny x nx field whose components `u`, `v` (arrays on
/// an executor) hold at least that many values each.
pub(crate) fn field_views(
    u: exec::View<f32>,
    v: exec::View<f32>,
    ny: usize,
    nx: usize,
) -> Result<usize> {
    let n = crate::field::vertex_count(ny, nx)?;
    check_views(u, v, n)?;
    Ok(n)
}

/// `u` and `v` hold at least `n` values each.
pub(crate) fn check_views(u: exec::View<f32>, v: exec::View<f32>, n: usize) -> Result<()> {
    if u.len() < n || v.len() < n {
        return Err(Error::invalid(format!(
            "the field needs {n} values per component; the arrays hold {} and {}",
            u.len(),
            v.len()
        )));
    }
    Ok(())
}

/// Is NVRTC loadable (the kernels are compiled at run time)?
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen libnvrtc; nothing is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_arch_when_nvrtc_knows_it_else_compute_80_ptx() {
        // NVRTC 12.4's list.
        let archs = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
        assert_eq!(target_arch((9, 0), &archs), "sm_90");
        assert_eq!(target_arch((8, 0), &archs), "sm_80");
        assert_eq!(target_arch((8, 6), &archs), "sm_86");
        // Blackwell (10.0, 12.0) is newer than 12.4: PTX, JIT by the driver.
        assert_eq!(target_arch((10, 0), &archs), FALLBACK_ARCH);
        assert_eq!(target_arch((12, 0), &archs), FALLBACK_ARCH);
        assert_eq!(target_arch((0, 0), &archs), FALLBACK_ARCH);
    }
}
