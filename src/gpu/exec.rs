//! Where kernels run, for host code written once: [`Cuda`] (a device, through
//! cudarc) or, in tests, the host build of the same `kernels/*.cu`
//! (`tests/common/shim_exec.rs`, through the `FZSHIM_EXPORT` entry points of
//! kernels/shim/cuda_host.hpp). So the launch sequence, buffer sizes and
//! read-backs of a GPU algorithm written against [`Exec`] run in CI, not only
//! the kernels.
//!
//! Kernel arguments follow cuLaunchKernel: one [`Arg`] per parameter, a
//! buffer as its address ([`Buf::arg`]).

use super::driver;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// One kernel parameter, by value. A pointer parameter takes [`Arg::U64`]
/// holding the buffer's address.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    U64(u64),
    U32(u32),
    F64(f64),
}

/// Memory and launches on one executor, in issue order (one stream).
pub trait Exec {
    /// An allocation.
    type Mem;
    /// `bytes` zeroed bytes (at least one: a kernel argument needs an address).
    fn alloc(&self, bytes: usize) -> Result<Self::Mem>;
    fn write(&self, mem: &mut Self::Mem, offset: usize, data: &[u8]) -> Result<()>;
    fn read(&self, mem: &Self::Mem, offset: usize, out: &mut [u8]) -> Result<()>;
    /// The address kernels see.
    fn addr(&self, mem: &Self::Mem) -> u64;
    /// Launch `kernel` over `blocks` x `threads`.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in number and type, and every
    /// buffer must be as large as the kernel reads and writes.
    unsafe fn launch(&self, kernel: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<()>;
}

/// Element types buffers hold: plain data, every bit pattern valid.
///
/// # Safety
/// Only for types without padding or invalid bit patterns.
pub unsafe trait Plain: Copy + Default + 'static {}
// SAFETY: primitive numbers.
unsafe impl Plain for u8 {}
unsafe impl Plain for u32 {}
unsafe impl Plain for i32 {}
unsafe impl Plain for f32 {}
unsafe impl Plain for u64 {}
unsafe impl Plain for f64 {}

fn as_bytes<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: Plain types have no padding; u8 has no alignment.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn as_bytes_mut<T: Plain>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every byte pattern is a valid T.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// A typed buffer of `len` elements on an executor.
pub struct Buf<E: Exec, T> {
    mem: E::Mem,
    len: usize,
    _t: PhantomData<T>,
}

impl<E: Exec, T: Plain> Buf<E, T> {
    pub fn zeros(e: &E, len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::unsupported("buffer too large"))?;
        Ok(Buf {
            mem: e.alloc(bytes)?,
            len,
            _t: PhantomData,
        })
    }

    pub fn from(e: &E, data: &[T]) -> Result<Self> {
        let mut b = Self::zeros(e, data.len())?;
        if !data.is_empty() {
            e.write(&mut b.mem, 0, as_bytes(data))?;
        }
        Ok(b)
    }

    /// Overwrite elements from `at` on.
    pub fn write(&mut self, e: &E, at: usize, data: &[T]) -> Result<()> {
        self.check(at..at + data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        e.write(&mut self.mem, at * std::mem::size_of::<T>(), as_bytes(data))
    }

    pub fn read(&self, e: &E, range: Range<usize>) -> Result<Vec<T>> {
        self.check(range.clone())?;
        let mut out = vec![T::default(); range.len()];
        if !out.is_empty() {
            e.read(
                &self.mem,
                range.start * std::mem::size_of::<T>(),
                as_bytes_mut(&mut out),
            )?;
        }
        Ok(out)
    }

    pub fn arg(&self, e: &E) -> Arg {
        Arg::U64(e.addr(&self.mem))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, r: Range<usize>) -> Result<()> {
        if r.start > r.end || r.end > self.len {
            return Err(Error::internal(format!(
                "elements {r:?} of a device buffer of {}",
                self.len
            )));
        }
        Ok(())
    }
}

/// Launch one thread per item in blocks of `threads`; nothing for no items
/// (a GPU rejects an empty grid).
///
/// # Safety
/// As [`Exec::launch`].
pub unsafe fn launch_items<E: Exec>(
    e: &E,
    kernel: &str,
    items: usize,
    threads: u32,
    args: &[Arg],
) -> Result<()> {
    if items == 0 {
        return Ok(());
    }
    let blocks = u32::try_from(items.div_ceil(threads as usize))
        .map_err(|_| Error::unsupported(format!("{items} items are too many for one launch")))?;
    // SAFETY: the caller's.
    unsafe { e.launch(kernel, blocks, threads, args) }
}

/// A CUDA device with the kernels of some `kernels/*.cu` sources, on one stream.
pub struct Cuda {
    stream: Arc<CudaStream>,
    modules: Vec<Arc<CudaModule>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
}

impl Cuda {
    /// Compile `sources` ((text, name) pairs) for compute_80 and load them on
    /// `ctx`'s default stream.
    pub fn new(ctx: &Arc<CudaContext>, sources: &[(&str, &str)]) -> Result<Cuda> {
        let modules = sources
            .iter()
            .map(|(text, name)| {
                ctx.load_module(super::compile(text, name, "compute_80")?)
                    .map_err(driver)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Cuda {
            stream: ctx.default_stream(),
            modules,
            functions: Mutex::new(HashMap::new()),
        })
    }

    fn function(&self, name: &str) -> Result<CudaFunction> {
        let mut f = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = f.get(name) {
            return Ok(k.clone());
        }
        let k = self
            .modules
            .iter()
            .find_map(|m| m.load_function(name).ok())
            .ok_or_else(|| Error::internal(format!("no kernel {name} in the loaded modules")))?;
        f.insert(name.to_string(), k.clone());
        Ok(k)
    }
}

impl Exec for Cuda {
    type Mem = CudaSlice<u8>;

    fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        self.stream.alloc_zeros::<u8>(bytes.max(1)).map_err(driver)
    }

    fn write(&self, mem: &mut CudaSlice<u8>, offset: usize, data: &[u8]) -> Result<()> {
        let mut view = mem.slice_mut(offset..offset + data.len());
        self.stream.memcpy_htod(data, &mut view).map_err(driver)
    }

    fn read(&self, mem: &CudaSlice<u8>, offset: usize, out: &mut [u8]) -> Result<()> {
        let view = mem.slice(offset..offset + out.len());
        self.stream.memcpy_dtoh(&view, out).map_err(driver)?;
        self.stream.synchronize().map_err(driver)
    }

    fn addr(&self, mem: &CudaSlice<u8>) -> u64 {
        let (ptr, _sync) = mem.device_ptr(&self.stream);
        ptr
    }

    unsafe fn launch(&self, kernel: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<()> {
        let f = self.function(kernel)?;
        let mut l = self.stream.launch_builder(&f);
        for a in args {
            match a {
                Arg::U64(x) => l.arg(x),
                Arg::U32(x) => l.arg(x),
                Arg::F64(x) => l.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's (arguments match the kernel).
        unsafe { l.launch(cfg) }.map(|_| ()).map_err(driver)
    }
}
