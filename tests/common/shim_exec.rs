//! `factz::gpu::exec::Exec` on the host build of `kernels/*.cu`
//! (tests/common/kernels_host.rs): memory is host memory (an address is a
//! host pointer, so `View::from_raw` of a host slice works too), a launch calls the
//! kernel's `fzshim_k_<name>` entry point (kernels/shim/cuda_host.hpp), so host
//! code written for the GPU runs here unchanged; first it checks the launch's
//! declaration (factz::gpu::launch) against the kernel's real parameter types
//! (`fzshim_sig_<name>`). Include it after `kernels_host` with
//! `#[path = "common/shim_exec.rs"] mod shim_exec;`.
#![allow(dead_code)]

use crate::kernels_host::{library, Threads};
use factz::error::{Error, Result};
use factz::gpu::exec::{Arg, Exec, Plain, View};
use factz::gpu::launch::Sig;
use std::ffi::{c_char, c_void, CStr};

type LaunchDimsFn = unsafe extern "C" fn(i32, *const u32, *const u32, *const *const c_void) -> i32;
type SigFn = unsafe extern "C" fn() -> *const c_char;

/// cuLaunchKernel's convention: a pointer to each parameter's value.
fn params(args: &[Arg]) -> Vec<*const c_void> {
    args.iter()
        .map(|a| match a {
            Arg::U64(x) => x as *const u64 as *const c_void,
            Arg::I64(x) => x as *const i64 as *const c_void,
            Arg::U32(x) => x as *const u32 as *const c_void,
            Arg::I32(x) => x as *const i32 as *const c_void,
            Arg::F64(x) => x as *const f64 as *const c_void,
            Arg::F32(x) => x as *const f32 as *const c_void,
        })
        .collect()
}

/// # Safety
/// T must be the signature of the entry points named `prefix`.
unsafe fn entry<T>(prefix: &str, kernel: &str) -> Result<libloading::Symbol<'static, T>> {
    let name = format!("{prefix}{kernel}\0");
    // SAFETY: the caller's.
    unsafe { library().get(name.as_bytes()) }
        .map_err(|e| Error::internal(format!("{kernel} in the host kernel library: {e}")))
}

/// The parameter types of `kernel` as the host build compiled them
/// ([`Sig::text`]'s format).
pub fn kernel_signature(kernel: &str) -> Result<String> {
    // SAFETY: every fzshim_sig_ entry point has this signature.
    let f = unsafe { entry::<SigFn>("fzshim_sig_", kernel)? };
    // SAFETY: it returns a NUL-terminated string that lives as long as the library.
    Ok(unsafe { CStr::from_ptr(f()) }
        .to_string_lossy()
        .into_owned())
}

/// Err unless `kernel`'s declaration has the kernel's parameter types.
pub fn check_signature(kernel: &Sig) -> Result<()> {
    let (declared, real) = (kernel.text(), kernel_signature(kernel.name)?);
    if declared != real {
        return Err(Error::internal(format!(
            "{} is declared ({declared}) but the kernel takes ({real})",
            kernel.name
        )));
    }
    Ok(())
}

/// A host array as the shim's memory, for the kernels to read.
///
/// # Safety
/// The view must not be used after `a` is dropped or while it is mutated.
pub unsafe fn view<T: Plain>(a: &[T]) -> View<T> {
    // SAFETY: the caller's; the shim's addresses are host pointers.
    unsafe { View::from_raw(a.as_ptr() as u64, a.len()) }
}

/// A host array as the shim's memory, for the kernels to write.
///
/// # Safety
/// The view must not be used after `a` is dropped or while `a` is otherwise
/// borrowed.
pub unsafe fn view_mut<T: Plain>(a: &mut [T]) -> View<T> {
    // SAFETY: as in `view`.
    unsafe { View::from_raw(a.as_mut_ptr() as u64, a.len()) }
}

thread_local! {
    static READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Bytes this thread has read back from any shim executor (the host copies a
/// pipeline makes: on a GPU, device-to-host transfers).
pub fn bytes_read() -> usize {
    READ.with(|r| r.get())
}

/// The shim as an executor; `threads` picks fibers or OS threads per block.
pub struct Shim {
    pub threads: Threads,
}

impl Exec for Shim {
    /// u64 words: every element type's alignment.
    type Mem = Vec<u64>;

    fn alloc(&self, bytes: usize) -> Result<Vec<u64>> {
        Ok(vec![0u64; bytes.div_ceil(8).max(1)])
    }

    fn addr(&self, mem: &Vec<u64>) -> u64 {
        mem.as_ptr() as u64
    }

    unsafe fn write_at(&self, addr: u64, data: &[u8]) -> Result<()> {
        // SAFETY: the caller's: addr holds data.len() bytes of host memory.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
        Ok(())
    }

    unsafe fn read_at(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        READ.with(|r| r.set(r.get() + out.len()));
        // SAFETY: the caller's: addr holds out.len() bytes of host memory.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// One memcpy, as a device-to-device copy: not a read back.
    unsafe fn copy_at(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: the caller's: both hold `bytes` bytes of host memory.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn launch_raw(
        &self,
        kernel: &Sig,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<()> {
        check_signature(kernel)?;
        kernel.check(args)?;
        let kernel = kernel.name;
        // SAFETY: every fzshim_k_ entry point has this signature.
        let f = unsafe { entry::<LaunchDimsFn>("fzshim_k_", kernel)? };
        let params = params(args);
        // SAFETY: the declaration matches the kernel (checked above) and the
        // caller's arguments match it; params outlive the call; grid and
        // block are three values each.
        let rc = unsafe {
            f(
                (self.threads == Threads::Os) as i32,
                grid.as_ptr(),
                block.as_ptr(),
                params.as_ptr(),
            )
        };
        launched(kernel, rc)
    }
}

fn launched(kernel: &str, rc: i32) -> Result<()> {
    if rc != 0 {
        return Err(Error::internal(format!(
            "the shim could not launch {kernel}"
        )));
    }
    Ok(())
}
