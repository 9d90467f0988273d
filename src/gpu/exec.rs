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
use cudarc::driver::{result, LaunchConfig, PushKernelArg};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// One kernel parameter, by value. A pointer parameter takes [`Arg::U64`]
/// holding the address ([`Buf::arg`], [`View::arg`]).
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    U64(u64),
    U32(u32),
    I32(i32),
    F64(f64),
    F32(f32),
}

/// Memory and launches on one executor, in issue order (one stream).
pub trait Exec {
    /// An allocation.
    type Mem;
    /// `bytes` zeroed bytes (at least one: a kernel argument needs an address).
    fn alloc(&self, bytes: usize) -> Result<Self::Mem>;
    /// The address kernels see.
    fn addr(&self, mem: &Self::Mem) -> u64;
    /// Copy host bytes to executor memory at `addr`.
    ///
    /// # Safety
    /// `addr .. addr + data.len()` must be live executor memory.
    unsafe fn write_at(&self, addr: u64, data: &[u8]) -> Result<()>;
    /// Copy executor memory at `addr` to the host, once the work issued
    /// before has finished.
    ///
    /// # Safety
    /// `addr .. addr + out.len()` must be live executor memory.
    unsafe fn read_at(&self, addr: u64, out: &mut [u8]) -> Result<()>;
    /// Launch `kernel` over a `grid` of `block`s, each given as x, y, z.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in number and type, and every
    /// buffer must be as large as the kernel reads and writes.
    unsafe fn launch_dims(
        &self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<()>;
    /// Launch `kernel` over `blocks` x `threads` (a 1-D grid).
    ///
    /// # Safety
    /// As [`Exec::launch_dims`].
    unsafe fn launch(&self, kernel: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<()> {
        // SAFETY: the caller's.
        unsafe { self.launch_dims(kernel, [blocks, 1, 1], [threads, 1, 1], args) }
    }
    /// Wait until the work issued so far has finished (the host shim runs
    /// each operation to completion: nothing to wait for).
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    /// Copy `bytes` bytes of executor memory from `src` to `dst`, in issue
    /// order. By default through the host; [`Cuda`] copies on the device.
    ///
    /// # Safety
    /// Both ranges must be live executor memory and not overlap.
    unsafe fn copy_at(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        let mut tmp = vec![0u8; bytes];
        // SAFETY: the caller's.
        unsafe {
            self.read_at(src, &mut tmp)?;
            self.write_at(dst, &tmp)
        }
    }
}

/// Element types buffers hold: plain data, every bit pattern valid.
///
/// # Safety
/// Only for types without padding or invalid bit patterns.
pub unsafe trait Plain: Copy + Default + 'static {}
// SAFETY: primitive numbers.
unsafe impl Plain for u8 {}
unsafe impl Plain for u16 {}
unsafe impl Plain for u32 {}
unsafe impl Plain for i32 {}
unsafe impl Plain for i64 {}
unsafe impl Plain for u64 {}
unsafe impl Plain for f32 {}
unsafe impl Plain for f64 {}

fn as_bytes<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: Plain types have no padding; u8 has no alignment.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn as_bytes_mut<T: Plain>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every byte pattern is a valid T.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

fn check(r: &Range<usize>, len: usize) -> Result<()> {
    if r.start > r.end || r.end > len {
        return Err(Error::internal(format!(
            "elements {r:?} of a device array of {len}"
        )));
    }
    Ok(())
}

/// An array on an executor that something else owns: a [`Buf`]'s elements
/// ([`Buf::view`]) or a caller's device pointer ([`View::from_raw`]).
#[derive(Debug)]
pub struct View<T> {
    addr: u64,
    len: usize,
    _t: PhantomData<T>,
}

impl<T> Clone for View<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for View<T> {}

impl<T: Plain> View<T> {
    /// # Safety
    /// `addr` must hold `len` elements of T on the executor it is used with,
    /// live for as long as the view is used.
    pub unsafe fn from_raw(addr: u64, len: usize) -> View<T> {
        View {
            addr,
            len,
            _t: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn arg(&self) -> Arg {
        Arg::U64(self.addr)
    }

    /// Elements from `at` on (`at <= len`).
    pub fn offset(&self, at: usize) -> View<T> {
        let at = at.min(self.len);
        View {
            addr: self.addr + (at * std::mem::size_of::<T>()) as u64,
            len: self.len - at,
            _t: PhantomData,
        }
    }

    pub fn read<E: Exec>(&self, e: &E, range: Range<usize>) -> Result<Vec<T>> {
        check(&range, self.len)?;
        let mut out = vec![T::default(); range.len()];
        if !out.is_empty() {
            let at = self.addr + (range.start * std::mem::size_of::<T>()) as u64;
            // SAFETY: within the view, which from_raw / Buf::view vouch for.
            unsafe { e.read_at(at, as_bytes_mut(&mut out))? };
        }
        Ok(out)
    }

    pub fn write<E: Exec>(&self, e: &E, at: usize, data: &[T]) -> Result<()> {
        check(&(at..at + data.len()), self.len)?;
        if data.is_empty() {
            return Ok(());
        }
        let addr = self.addr + (at * std::mem::size_of::<T>()) as u64;
        // SAFETY: within the view.
        unsafe { e.write_at(addr, as_bytes(data)) }
    }

    /// Copy the first `len` elements of `src` over this view's first `len`
    /// (on the executor: nothing passes through the host on a device).
    pub fn copy_from<E: Exec>(&self, e: &E, src: View<T>, len: usize) -> Result<()> {
        check(&(0..len), self.len)?;
        check(&(0..len), src.len)?;
        if len == 0 {
            return Ok(());
        }
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        if self.addr < src.addr + bytes && src.addr < self.addr + bytes {
            return Err(Error::internal("copy between overlapping device arrays"));
        }
        // SAFETY: within both views (live, as from_raw / Buf::view vouch), apart.
        unsafe { e.copy_at(self.addr, src.addr, bytes as usize) }
    }
}

/// A typed buffer of `len` elements that owns its executor memory.
pub struct Buf<E: Exec, T> {
    mem: E::Mem,
    view: View<T>,
}

impl<E: Exec, T: Plain> Buf<E, T> {
    pub fn zeros(e: &E, len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::unsupported("buffer too large"))?;
        let mem = e.alloc(bytes)?;
        let view = View {
            addr: e.addr(&mem),
            len,
            _t: PhantomData,
        };
        Ok(Buf { mem, view })
    }

    pub fn from(e: &E, data: &[T]) -> Result<Self> {
        let b = Self::zeros(e, data.len())?;
        b.view.write(e, 0, data)?;
        Ok(b)
    }

    /// Overwrite elements from `at` on.
    pub fn write(&mut self, e: &E, at: usize, data: &[T]) -> Result<()> {
        self.view.write(e, at, data)
    }

    pub fn read(&self, e: &E, range: Range<usize>) -> Result<Vec<T>> {
        self.view.read(e, range)
    }

    /// The elements, borrowed (valid while the buffer lives).
    pub fn view(&self) -> View<T> {
        self.view
    }

    pub fn arg(&self) -> Arg {
        self.view.arg()
    }

    pub fn len(&self) -> usize {
        self.view.len
    }

    pub fn is_empty(&self) -> bool {
        self.view.len == 0
    }

    /// The executor's allocation (to hand it back to a caller).
    pub fn into_mem(self) -> E::Mem {
        self.mem
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

/// Most thread blocks along a row of [`launch_rows`] (grid-stride), and most
/// rows of a grid (CUDA's gridDim.y limit).
const ROW_BLOCKS: usize = 64;
const MAX_GRID_Y: usize = 65_535;

/// Launch a grid row per item (blockIdx.y) for `items` items of up to
/// `longest` elements each, the row's blocks striding along them. More than
/// a grid's rows go in several launches: `args(first)` gives a launch's
/// arguments seen from item `first` (blockIdx.y is then relative to it).
///
/// # Safety
/// As [`Exec::launch_dims`] for each launch.
pub unsafe fn launch_rows<E: Exec>(
    e: &E,
    kernel: &str,
    items: usize,
    longest: usize,
    threads: u32,
    args: impl Fn(usize) -> Vec<Arg>,
) -> Result<()> {
    let across = longest.div_ceil(threads as usize).clamp(1, ROW_BLOCKS) as u32;
    for first in (0..items).step_by(MAX_GRID_Y) {
        let rows = (items - first).min(MAX_GRID_Y) as u32;
        // SAFETY: the caller's.
        unsafe { e.launch_dims(kernel, [across, rows, 1], [threads, 1, 1], &args(first))? };
    }
    Ok(())
}

/// Every `kernels/*.cu` source, with its name for NVRTC's messages.
pub fn sources() -> [(&'static str, &'static str); 8] {
    [
        (super::field_reduce::SOURCE, "field_reduce.cu"),
        (super::mode_b::SOURCE, "mode_b_bounds.cu"),
        (super::mode_b_codec::SOURCE, "mode_b_codec.cu"),
        (super::mode_s::SOURCE, "mode_s.cu"),
        (super::huffman::SOURCE, "huffman.cu"),
        (super::particles::SOURCE, "particles.cu"),
        (super::scan::SOURCE, "scan.cu"),
        (super::rans::SOURCE, "rans.cu"),
    ]
}

/// Compiled modules and their functions, looked up by name once.
struct Loaded {
    modules: Vec<Arc<CudaModule>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
}

/// A CUDA device with the kernels of some `kernels/*.cu` sources, launching
/// on one stream ([`Cuda::on`] gives the same kernels on another).
#[derive(Clone)]
pub struct Cuda {
    pub stream: Arc<CudaStream>,
    loaded: Arc<Loaded>,
}

impl Cuda {
    /// Compile `sources` ((text, name) pairs) for compute_80 and load them on
    /// `ctx`; launches go on its default stream.
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
            loaded: Arc::new(Loaded {
                modules,
                functions: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Every kernel of [`sources`].
    pub fn all(ctx: &Arc<CudaContext>) -> Result<Cuda> {
        Cuda::new(ctx, &sources())
    }

    /// The same kernels launching on `stream` (of the same context).
    pub fn on(&self, stream: Arc<CudaStream>) -> Cuda {
        Cuda {
            stream,
            loaded: self.loaded.clone(),
        }
    }

    /// Makes the context current on the calling thread: cudarc's own calls
    /// do, the raw copies above do not, and a test harness or a caller's
    /// thread pool may call from any thread.
    fn bind(&self) -> Result<()> {
        self.stream.context().bind_to_thread().map_err(driver)
    }

    fn function(&self, name: &str) -> Result<CudaFunction> {
        let mut f = self
            .loaded
            .functions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(k) = f.get(name) {
            return Ok(k.clone());
        }
        let k = self
            .loaded
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

    fn addr(&self, mem: &CudaSlice<u8>) -> u64 {
        let (ptr, _sync) = mem.device_ptr(&self.stream);
        ptr
    }

    unsafe fn write_at(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's; pageable host memory is staged before this
        // returns, so `data` may go right after.
        unsafe { result::memcpy_htod_async(addr, data, self.stream.cu_stream()) }.map_err(driver)
    }

    unsafe fn read_at(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's; the synchronize keeps `out` borrowed until written.
        unsafe { result::memcpy_dtoh_async(out, addr, self.stream.cu_stream()) }.map_err(driver)?;
        self.stream.synchronize().map_err(driver)
    }

    fn sync(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver)
    }

    unsafe fn copy_at(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }
            .map_err(driver)
    }

    unsafe fn launch_dims(
        &self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<()> {
        let f = self.function(kernel)?;
        let mut l = self.stream.launch_builder(&f);
        for a in args {
            match a {
                Arg::U64(x) => l.arg(x),
                Arg::U32(x) => l.arg(x),
                Arg::I32(x) => l.arg(x),
                Arg::F64(x) => l.arg(x),
                Arg::F32(x) => l.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            block_dim: (block[0], block[1], block[2]),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's (arguments match the kernel).
        unsafe { l.launch(cfg) }.map(|_| ()).map_err(driver)
    }
}

/// The process's device with every kernel compiled, set up once (NVRTC takes
/// seconds), or why there is none (Unsupported when there is no driver,
/// device or NVRTC).
pub fn shared() -> std::result::Result<&'static Cuda, Error> {
    static CUDA: std::sync::OnceLock<std::result::Result<Cuda, Error>> = std::sync::OnceLock::new();
    CUDA.get_or_init(|| Cuda::all(&super::device()?))
        .as_ref()
        .map_err(Clone::clone)
}
