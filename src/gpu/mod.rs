//! The CUDA backend (cargo feature `cuda`): kernels from `kernels/*.cu`
//! compiled at run time by NVRTC through cudarc, which loads the driver and
//! NVRTC dynamically, so a build with this feature still runs where neither is
//! installed: [`device`] says why no GPU is used and callers stay on the CPU.
//!
//! Every module drives its `kernels/*.cu` through [`exec::Exec`] (cudarc on a
//! device; in tests the same sources built as host C++): [`field`] is the
//! field pipeline over [`mode_b`] / [`mode_b_codec`], [`mode_s`],
//! [`field_reduce`], [`huffman`] and [`rans`], its parts held in
//! [`parts::DevParts`];
//! [`particles`] and [`descent`] are the particle correction's pair search and
//! optimiser; [`scan`] is the grid-wide prefix sum they all place output with;
//! [`profile`] times any of them per kernel.

pub mod descent;
pub mod exec;
pub mod field;
pub mod field_reduce;
pub mod huffman;
pub mod mode_b;
pub mod mode_b_codec;
pub mod mode_s;
pub mod particles;
pub mod parts;
pub mod profile;
pub mod rans;
pub mod scan;

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

/// PTX of one kernel source (`name` for NVRTC's messages) for a virtual
/// architecture, with `--fmad=false`: every f32/f64 add, sub and mul carries
/// `.rn`, so neither NVRTC nor the driver's JIT may fuse them (the CPU's
/// roundings, DESIGN.md "Backends"). PTX for compute_80 runs on every GPU from
/// the A100 on, newer ones included.
pub fn compile(source: &str, name: &str, arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    if !nvrtc_present() {
        return Err(Error::unsupported(
            "NVRTC (libnvrtc.so.12) not found on the library path",
        ));
    }
    let opts = cudarc::nvrtc::CompileOptions {
        fmad: Some(false),
        arch: Some(arch),
        name: Some(name.into()),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(source, opts)
        .map_err(|e| Error::internal(format!("NVRTC compiling {name}: {e}")))
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
