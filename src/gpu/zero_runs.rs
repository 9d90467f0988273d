//! A segment's zero-runs form (`codec::zero_runs`) on an [`Exec`]
//! (`kernels/zero_runs.cu`): the symbols split into runs and values, and
//! placed back, on the executor; only the nonzero count and the runs' total
//! come to the host. `gpu::field` codes and decodes the parts with the
//! stream's coder, as the CPU does.

use super::exec::{Buf, Exec, View};
use super::launch::kernels;
use super::scan;
use crate::codec::zero_runs;
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/zero_runs.cu");
const THREADS: u32 = 256;
/// Most blocks of the fill (grid-stride).
const FILL_BLOCKS: usize = 1024;

kernels! {
    Z_FLAGS = factz_z_flags(symbols: View<u32>, n: u64, flags: View<u32>);
    Z_SPLIT = factz_z_split(
        symbols: View<u32>, n: u64, slot: View<u64>, values: View<u32>, zeros: View<u32>,
    );
    Z_RUNS = factz_z_runs(zeros: View<u32>, m: u64, n: u64, runs: View<u32>);
    Z_FILL = factz_z_fill(out: View<u32>, n: u64);
    Z_PLACE = factz_z_place(values: View<u32>, sums: View<u64>, m: u64, out: View<u32>);
}

/// A segment split for the zero-runs form: its m + 1 runs and m values.
pub struct Split<E: Exec> {
    pub runs: Buf<E, u32>,
    pub values: Buf<E, u32>,
}

/// The zero-runs kernels on one executor.
pub struct ZeroRunKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> ZeroRunKernels<'_, E> {
    /// `codec::zero_runs::split` of `symbols` where `worth_trying` says to
    /// try the form (None elsewhere).
    pub fn split(&self, symbols: View<u32>) -> Result<Option<Split<E>>> {
        let e = self.exec;
        let n = symbols.len();
        if n == 0 {
            return Ok(None);
        }
        let n64 = n as u64;
        let flags = Buf::<E, u32>::zeros(e, n)?;
        // SAFETY: flags holds n.
        unsafe { Z_FLAGS.launch_items(e, n, THREADS, (symbols, n64, flags.view()))? };
        let (slot, m) = scan::exclusive(e, flags.view(), n)?;
        let m = m as usize;
        if !zero_runs::worth_trying(n, m) {
            return Ok(None);
        }
        let values = Buf::<E, u32>::zeros(e, m)?;
        let zeros = Buf::<E, u32>::zeros(e, m)?;
        let runs = Buf::<E, u32>::zeros(e, m + 1)?;
        // SAFETY: the nonzero symbols' slots are below m, the scan's total;
        // runs holds m + 1 (worth_trying: n fits a u32, so do the counts).
        unsafe {
            Z_SPLIT.launch_items(
                e,
                n,
                THREADS,
                (symbols, n64, slot.view(), values.view(), zeros.view()),
            )?;
            Z_RUNS.launch_items(
                e,
                m + 1,
                THREADS,
                (zeros.view(), m as u64, n64, runs.view()),
            )?;
        }
        Ok(Some(Split { runs, values }))
    }

    /// `codec::zero_runs::place`: zeros in `out`, then each value after its
    /// run, once the runs are checked to add up to `out` with the values.
    pub fn place(&self, runs: View<u32>, values: View<u32>, out: View<u32>) -> Result<()> {
        let e = self.exec;
        let m = values.len();
        if runs.len() != m + 1 {
            return Err(Error::internal(format!(
                "zero runs: {} runs for {m} values",
                runs.len()
            )));
        }
        let (sums, total) = scan::exclusive(e, runs, m + 1)?;
        zero_runs::check_total(total, m, out.len())?;
        let n = out.len();
        // SAFETY: out holds n; nonzero j lands at sums[j + 1] + j, strictly
        // increasing in j and at most total + m - 1 = n - 1 (checked).
        unsafe {
            Z_FILL.launch_items(
                e,
                n.min(FILL_BLOCKS * THREADS as usize),
                THREADS,
                (out, n as u64),
            )?;
            Z_PLACE.launch_items(e, m, THREADS, (values, sums.view(), m as u64, out))?;
        }
        Ok(())
    }
}
