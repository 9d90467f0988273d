//! Where kernels run, for host code written once: [`Cuda`] (a device, through
//! cudarc) or, in tests, the host build of the same `kernels/*.cu`
//! (`tests/common/shim_exec.rs`, through the `FZSHIM_EXPORT` entry points of
//! kernels/shim/cuda_host.hpp). So the launch sequence, buffer sizes and
//! read-backs of a GPU algorithm written against [`Exec`] run in CI, not only
//! the kernels.
//!
//! Kernels are launched through their typed declarations
//! ([`super::launch::Kernel`]), which turn the arguments into
//! [`Exec::launch_raw`]'s: one [`Arg`] per parameter, as cuLaunchKernel takes
//! them, a buffer as its address.

use super::driver;
use super::launch::{Elem, Sig};
use crate::error::{Error, Result};
use cudarc::driver::{result, LaunchConfig, PushKernelArg};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// One kernel parameter, by value. A pointer parameter takes [`Arg::U64`]
/// holding the address.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    U64(u64),
    I64(i64),
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
    /// Launch `kernel` over a `grid` of `block`s, each given as x, y, z: the
    /// primitive under [`super::launch::Kernel`]'s typed launches, which
    /// drivers use instead.
    ///
    /// # Safety
    /// `args` must match `kernel.params` (which must be the kernel's), and
    /// every buffer must be as large as the kernel reads and writes.
    unsafe fn launch_raw(
        &self,
        kernel: &Sig,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<()>;
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
pub unsafe trait Plain: Copy + Default + 'static {
    /// What a kernel's pointer to it points to (its C++ type, for the shim's
    /// signature check).
    const ELEM: Elem;
}

macro_rules! plain_numbers {
    ($($t:ty => $elem:ident;)*) => {
        // SAFETY: primitive numbers.
        $(unsafe impl Plain for $t {
            const ELEM: Elem = Elem::$elem;
        })*
    };
}

plain_numbers! {
    u8 => U8;
    u16 => U16;
    u32 => U32;
    i32 => I32;
    i64 => I64;
    u64 => U64;
    f32 => F32;
    f64 => F64;
}

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

    /// The address kernels see.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The same elements as U, of T's size and alignment (a bit copy: e.g.
    /// f32 values a kernel moves as 32-bit words).
    pub fn cast<U: Plain>(self) -> View<U> {
        const {
            assert!(std::mem::size_of::<T>() == std::mem::size_of::<U>());
            assert!(std::mem::align_of::<T>() == std::mem::align_of::<U>());
        }
        View {
            addr: self.addr,
            len: self.len,
            _t: PhantomData,
        }
    }

    /// Elements `range` (clamped to the view).
    pub fn range(&self, range: Range<usize>) -> View<T> {
        let mut v = self.offset(range.start);
        v.len = v.len.min(range.end.saturating_sub(range.start));
        v
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

/// Every `kernels/*.cu` source as NVRTC compiles it ([`crate::kernels::source`]:
/// the prelude generated from the Rust constants and `kernels/common.cuh`,
/// then the file), with its name for NVRTC's messages.
pub fn sources() -> Vec<(String, &'static str)> {
    [
        (super::field_reduce::SOURCE, "field_reduce.cu"),
        (super::mode_b_bounds::SOURCE, "mode_b_bounds.cu"),
        (super::mode_b_codec::SOURCE, "mode_b_codec.cu"),
        (super::mode_s::SOURCE, "mode_s.cu"),
        (super::huffman::SOURCE, "huffman.cu"),
        (super::particles::SOURCE, "particles.cu"),
        (super::scan::SOURCE, "scan.cu"),
        (super::rans::SOURCE, "rans.cu"),
        (super::zero_runs::SOURCE, "zero_runs.cu"),
    ]
    .into_iter()
    .map(|(file, name)| (crate::kernels::source(file, name), name))
    .collect()
}

/// Compiled modules and their functions, looked up by name once.
struct Loaded {
    modules: Vec<Arc<CudaModule>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    arch: String,
    /// The last launch, "kernel K grid [..] block [..]": what a fault found
    /// later (at a copy or a sync) most likely comes from.
    last: Mutex<String>,
}

/// Errors after which a CUDA context is unusable: every later call of the
/// process fails with the same code (CUDA's "sticky" errors).
pub fn is_sticky(code: cudarc::driver::sys::CUresult) -> bool {
    use cudarc::driver::sys::CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
    )
}

/// The first sticky fault of a context, kept so that every later operation
/// reports it (by kernel) instead of its own unrelated-looking failure.
#[derive(Default)]
pub struct Poison(std::sync::OnceLock<String>);

impl Poison {
    /// `code`, raised by `op` (a launch is "kernel ..."), as an error; a
    /// sticky one is remembered as the fault (the first one only), described
    /// with `last`, the last launch, and whether `checked` mode was on. The
    /// code goes by name: cuGetErrorString needs the driver, which a test
    /// of this may not have.
    pub fn record(
        &self,
        op: &str,
        code: cudarc::driver::sys::CUresult,
        last: &str,
        checked: bool,
    ) -> Error {
        let e = format!("{code:?}");
        if !is_sticky(code) {
            return Error::internal(format!("CUDA {op}: {e}"));
        }
        let fault = if op.starts_with("kernel ") {
            format!("{op}: {e}")
        } else if last.is_empty() {
            format!("{e} at {op}, before any launch")
        } else if checked {
            format!("{e} at {op}, after {last} had finished cleanly")
        } else {
            format!(
                "{e} at {op}; the last launch was {last} (FACTZ_CUDA_CHECK=1 waits after \
                 every launch to name the faulting kernel)"
            )
        };
        let first = self.0.get_or_init(|| fault.clone());
        if *first == fault {
            Error::internal(format!("CUDA fault: {fault}"))
        } else {
            self.poisoned(first)
        }
    }

    /// Err once a fault has been recorded.
    pub fn check(&self) -> Result<()> {
        match self.0.get() {
            Some(first) => Err(self.poisoned(first)),
            None => Ok(()),
        }
    }

    fn poisoned(&self, first: &str) -> Error {
        Error::internal(format!(
            "CUDA context poisoned by an earlier fault ({first}); nothing more runs on this \
             device in this process"
        ))
    }
}

/// The process's CUDA context is one (the primary context of device 0).
static POISON: std::sync::OnceLock<Poison> = std::sync::OnceLock::new();

fn poison() -> &'static Poison {
    POISON.get_or_init(Poison::default)
}

/// 0: not yet read from FACTZ_CUDA_CHECK; 1: off; 2: on.
static CHECKED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Check mode: wait for each kernel after its launch, so a fault is reported
/// with the kernel's name and launch shape (slow; for tests and first runs).
/// On when FACTZ_CUDA_CHECK is set to anything but 0 or empty, or after
/// [`set_checked`]`(true)`.
pub fn checked() -> bool {
    use std::sync::atomic::Ordering;
    match CHECKED.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var("FACTZ_CUDA_CHECK").is_ok_and(|v| !v.is_empty() && v != "0");
            CHECKED.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        c => c == 2,
    }
}

/// Turns check mode on or off for the process (see [`checked`]).
pub fn set_checked(on: bool) {
    CHECKED.store(if on { 2 } else { 1 }, std::sync::atomic::Ordering::Relaxed);
}

/// A CUDA device with the kernels of some `kernels/*.cu` sources, launching
/// on one stream ([`Cuda::on`] gives the same kernels on another).
#[derive(Clone)]
pub struct Cuda {
    pub stream: Arc<CudaStream>,
    loaded: Arc<Loaded>,
}

impl Cuda {
    /// Compile `sources` ((text, name) pairs) for the device's own
    /// architecture (CUBIN; [`super::FALLBACK_ARCH`] PTX, JIT-compiled by the
    /// driver, when NVRTC does not know it) and load them on `ctx`; launches
    /// go on its default stream.
    pub fn new(ctx: &Arc<CudaContext>, sources: &[(&str, &str)]) -> Result<Cuda> {
        let cc = ctx.compute_capability().map_err(driver)?;
        let arch = super::target_arch(cc, &super::nvrtc_archs()?);
        let modules = sources
            .iter()
            .map(|(text, name)| {
                let image = super::compile(text, name, &arch)?.image();
                ctx.load_module(image).map_err(|e| {
                    Error::internal(format!(
                        "CUDA loading {name} ({arch}) on a compute capability {}.{} device: {e}",
                        cc.0, cc.1
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Cuda {
            stream: ctx.default_stream(),
            loaded: Arc::new(Loaded {
                modules,
                functions: Mutex::new(HashMap::new()),
                arch,
                last: Mutex::new(String::new()),
            }),
        })
    }

    /// Every kernel of [`sources`].
    pub fn all(ctx: &Arc<CudaContext>) -> Result<Cuda> {
        let sources = sources();
        let texts: Vec<(&str, &str)> = sources.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        Cuda::new(ctx, &texts)
    }

    /// What the kernels were compiled for: `sm_XY` (CUBIN) or the fallback PTX.
    pub fn arch(&self) -> &str {
        &self.loaded.arch
    }

    /// The same kernels launching on `stream` (of the same context).
    pub fn on(&self, stream: Arc<CudaStream>) -> Cuda {
        Cuda {
            stream,
            loaded: self.loaded.clone(),
        }
    }

    /// A driver error of `op` as the library's, remembering a sticky fault.
    fn fail(&self, op: &str, e: cudarc::driver::DriverError) -> Error {
        let last = self.loaded.last.lock().unwrap_or_else(|p| p.into_inner());
        poison().record(op, e.0, &last, checked())
    }

    /// Before any operation: Err once an earlier one faulted; then makes the
    /// context current on the calling thread (cudarc's own calls do, the raw
    /// copies below do not, and a test harness or a caller's thread pool may
    /// call from any thread).
    fn ready(&self) -> Result<()> {
        poison().check()?;
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|e| self.fail("binding the context", e))
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
        self.ready()?;
        self.stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(|e| self.fail(&format!("allocating {bytes} bytes"), e))
    }

    fn addr(&self, mem: &CudaSlice<u8>) -> u64 {
        let (ptr, _sync) = mem.device_ptr(&self.stream);
        ptr
    }

    unsafe fn write_at(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.ready()?;
        // SAFETY: the caller's; pageable host memory is staged before this
        // returns, so `data` may go right after.
        unsafe { result::memcpy_htod_async(addr, data, self.stream.cu_stream()) }
            .map_err(|e| self.fail("a copy to the device", e))
    }

    unsafe fn read_at(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        self.ready()?;
        // SAFETY: the caller's; the synchronize keeps `out` borrowed until written.
        unsafe { result::memcpy_dtoh_async(out, addr, self.stream.cu_stream()) }
            .map_err(|e| self.fail("a copy to the host", e))?;
        self.stream
            .synchronize()
            .map_err(|e| self.fail("a copy to the host", e))
    }

    fn sync(&self) -> Result<()> {
        poison().check()?;
        self.stream
            .synchronize()
            .map_err(|e| self.fail("a stream synchronize", e))
    }

    unsafe fn copy_at(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.ready()?;
        // SAFETY: the caller's.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }
            .map_err(|e| self.fail("a copy on the device", e))
    }

    unsafe fn launch_raw(
        &self,
        kernel: &Sig,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<()> {
        self.ready()?;
        kernel.check(args)?;
        let kernel = kernel.name;
        let f = self.function(kernel)?;
        let what = format!("kernel {kernel} grid {grid:?} block {block:?}");
        let mut l = self.stream.launch_builder(&f);
        for a in args {
            match a {
                Arg::U64(x) => l.arg(x),
                Arg::I64(x) => l.arg(x),
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
        unsafe { l.launch(cfg) }.map_err(|e| self.fail(&what, e))?;
        if checked() {
            self.stream.synchronize().map_err(|e| self.fail(&what, e))?;
        }
        *self.loaded.last.lock().unwrap_or_else(|p| p.into_inner()) = what;
        Ok(())
    }
}

/// The process's device with every kernel compiled, set up once (NVRTC takes
/// seconds), or why there is none: Unsupported when there is no driver,
/// device or NVRTC, Internal when NVRTC or the driver fails to compile or
/// load a kernel (`Auto` takes the CPU on either, `crate::backend`).
pub fn shared() -> std::result::Result<&'static Cuda, Error> {
    static CUDA: std::sync::OnceLock<std::result::Result<Cuda, Error>> = std::sync::OnceLock::new();
    CUDA.get_or_init(|| Cuda::all(&super::device()?))
        .as_ref()
        .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;

    #[test]
    fn the_first_sticky_fault_names_its_kernel_and_every_later_call_reports_it() {
        let p = Poison::default();
        let launch = "kernel mode_s_phase grid [64, 12, 1] block [256, 1, 1]";
        // Not sticky: an error of its own, nothing remembered.
        let e = p.record(
            "a copy to the host",
            CUresult::CUDA_ERROR_INVALID_VALUE,
            launch,
            false,
        );
        assert!(e.message.contains("CUDA_ERROR_INVALID_VALUE"), "{e}");
        assert!(p.check().is_ok());
        // Checked mode: the launch's own wait faults, the kernel is named.
        let e = p.record(launch, CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, "", true);
        assert!(
            e.message
                .contains("CUDA fault: kernel mode_s_phase grid [64, 12, 1]"),
            "{e}"
        );
        assert!(e.message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{e}");
        // Later: every operation, and any later fault, reports the first.
        for e in [
            p.check().unwrap_err(),
            p.record(
                "a copy to the device",
                CUresult::CUDA_ERROR_LAUNCH_FAILED,
                launch,
                true,
            ),
        ] {
            assert!(
                e.message
                    .starts_with("CUDA context poisoned by an earlier fault"),
                "{e}"
            );
            assert!(e.message.contains("kernel mode_s_phase"), "{e}");
            assert!(!e.message.contains("LAUNCH_FAILED"), "{e}");
        }
    }

    #[test]
    fn unchecked_a_fault_seen_later_names_the_last_launch() {
        let p = Poison::default();
        let e = p.record(
            "a copy to the host",
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
            "kernel rans_encode grid [9, 1, 1] block [128, 1, 1]",
            false,
        );
        assert!(e.message.contains("at a copy to the host"), "{e}");
        assert!(
            e.message.contains("the last launch was kernel rans_encode"),
            "{e}"
        );
        assert!(e.message.contains("FACTZ_CUDA_CHECK=1"), "{e}");
        assert!(p.check().is_err());
    }

    #[test]
    fn only_context_destroying_errors_are_sticky() {
        assert!(is_sticky(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_sticky(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_sticky(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(!is_sticky(CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU));
    }
}
