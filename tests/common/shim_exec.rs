//! `factz::gpu::exec::Exec` on the host build of `kernels/*.cu`
//! (tests/common/kernels_host.rs): memory is host memory, a launch calls the
//! kernel's `fzshim_k_<name>` entry point (kernels/shim/cuda_host.hpp), so host
//! code written for the GPU runs here unchanged. Include it after
//! `kernels_host` with `#[path = "common/shim_exec.rs"] mod shim_exec;`.
#![allow(dead_code)]

use crate::kernels_host::{library, Threads};
use factz::error::{Error, Result};
use factz::gpu::exec::{Arg, Exec};
use std::ffi::c_void;

type LaunchFn = unsafe extern "C" fn(i32, u32, u32, *const *const c_void) -> i32;

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

    fn write(&self, mem: &mut Vec<u64>, offset: usize, data: &[u8]) -> Result<()> {
        let bytes = as_bytes_mut(mem);
        bytes[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, mem: &Vec<u64>, offset: usize, out: &mut [u8]) -> Result<()> {
        // SAFETY: u64 words viewed as bytes.
        let bytes = unsafe { std::slice::from_raw_parts(mem.as_ptr().cast::<u8>(), mem.len() * 8) };
        out.copy_from_slice(&bytes[offset..offset + out.len()]);
        Ok(())
    }

    fn addr(&self, mem: &Vec<u64>) -> u64 {
        mem.as_ptr() as u64
    }

    unsafe fn launch(&self, kernel: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<()> {
        let name = format!("fzshim_k_{kernel}\0");
        // SAFETY: every FZSHIM_EXPORT entry point has this signature.
        let f: libloading::Symbol<LaunchFn> = unsafe { library().get(name.as_bytes()) }
            .map_err(|e| Error::internal(format!("{kernel} in the host kernel library: {e}")))?;
        // cuLaunchKernel's convention: a pointer to each parameter's value.
        let params: Vec<*const c_void> = args
            .iter()
            .map(|a| match a {
                Arg::U64(x) => x as *const u64 as *const c_void,
                Arg::U32(x) => x as *const u32 as *const c_void,
                Arg::F64(x) => x as *const f64 as *const c_void,
            })
            .collect();
        // SAFETY: the caller's (arguments match the kernel); params outlive the call.
        let rc = unsafe {
            f(
                (self.threads == Threads::Os) as i32,
                blocks,
                threads,
                params.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(Error::internal(format!(
                "the shim could not launch {kernel}"
            )));
        }
        Ok(())
    }
}

fn as_bytes_mut(mem: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 words viewed as bytes; every byte pattern is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(mem.as_mut_ptr().cast::<u8>(), mem.len() * 8) }
}
