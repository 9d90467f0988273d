//! Where a GPU pipeline's time goes: [`Timed`] wraps an executor, waits for
//! each launch and copy to finish and adds its wall time to its kernel's (or
//! the copy's) total. For `factz-gpu-bench`'s breakdown: waiting serializes
//! the stream, so the totals are a profile, not the pipeline's throughput.

use super::exec::{Arg, Exec};
use super::launch::Sig;
use crate::error::Result;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One profile entry: a kernel, or a copy or allocation ("alloc", "copy to
/// device", "copy to host", "copy on device").
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: String,
    pub seconds: f64,
    pub calls: u64,
}

/// `inner` with every operation timed.
pub struct Timed<'e, E: Exec> {
    pub inner: &'e E,
    totals: Mutex<HashMap<String, (Duration, u64)>>,
}

impl<'e, E: Exec> Timed<'e, E> {
    pub fn new(inner: &'e E) -> Self {
        Timed {
            inner,
            totals: Mutex::new(HashMap::new()),
        }
    }

    /// The totals so far, longest first (ties by name), and a fresh start.
    pub fn take(&self) -> Vec<Stage> {
        let mut t = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<Stage> = t
            .drain()
            .map(|(name, (d, calls))| Stage {
                name,
                seconds: d.as_secs_f64(),
                calls,
            })
            .collect();
        out.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.name.cmp(&b.name)));
        out
    }

    /// Runs `op`, waits for the executor, and charges the time to `name`.
    fn time<T>(&self, name: &str, op: impl FnOnce() -> Result<T>) -> Result<T> {
        let t = Instant::now();
        let out = op()?;
        self.inner.sync()?;
        let d = t.elapsed();
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let e = totals.entry(name.to_string()).or_default();
        e.0 += d;
        e.1 += 1;
        Ok(out)
    }
}

impl<E: Exec> Exec for Timed<'_, E> {
    type Mem = E::Mem;

    fn alloc(&self, bytes: usize) -> Result<E::Mem> {
        self.time("alloc", || self.inner.alloc(bytes))
    }

    fn addr(&self, mem: &E::Mem) -> u64 {
        self.inner.addr(mem)
    }

    unsafe fn write_at(&self, addr: u64, data: &[u8]) -> Result<()> {
        // SAFETY: the caller's.
        self.time("copy to device", || unsafe {
            self.inner.write_at(addr, data)
        })
    }

    unsafe fn read_at(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        // SAFETY: the caller's.
        self.time("copy to host", || unsafe { self.inner.read_at(addr, out) })
    }

    unsafe fn copy_at(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: the caller's.
        self.time("copy on device", || unsafe {
            self.inner.copy_at(dst, src, bytes)
        })
    }

    unsafe fn launch_raw(
        &self,
        kernel: &Sig,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<()> {
        // SAFETY: the caller's.
        self.time(kernel.name, || unsafe {
            self.inner.launch_raw(kernel, grid, block, args)
        })
    }

    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
}
