//! Exclusive prefix sums over the whole grid (`kernels/scan.cu`): the one
//! scan every GPU stage that compacts or places variable-length output uses
//! (mode B's exact values, mode S's stream order, the particle passes).

use super::exec::{Buf, Exec, Plain, View};
use super::launch::{kernels, Kernel};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/scan.cu");
use crate::kernels::{SCAN_BLOCK as THREADS, SCAN_PER_THREAD};
/// Inputs one block scans (FZSCAN_ITEMS in the source).
const ITEMS: usize = (THREADS * SCAN_PER_THREAD) as usize;

kernels! {
    SCAN_SUMS_U32 = factz_scan_sums_u32(input: View<u32>, n: u64, sums: View<u64>);
    SCAN_APPLY_U32 = factz_scan_apply_u32(input: View<u32>, n: u64, sums: View<u64>, out: View<u64>);
    SCAN_SUMS_U64 = factz_scan_sums_u64(input: View<u64>, n: u64, sums: View<u64>);
    SCAN_APPLY_U64 = factz_scan_apply_u64(input: View<u64>, n: u64, sums: View<u64>, out: View<u64>);
    SCAN_CARRY = factz_scan_carry(sums: View<u64>, blocks: u64);
}

/// A scan's block sums kernel for T inputs.
type Sums<T> = Kernel<(View<T>, u64, View<u64>)>;
/// A scan's kernel for T inputs from the blocks' offsets.
type Apply<T> = Kernel<(View<T>, u64, View<u64>, View<u64>)>;

/// An input element type of the scan kernels: the kernels for it.
pub trait Counts: Plain {
    const SUMS: Sums<Self>;
    const APPLY: Apply<Self>;
}

impl Counts for u32 {
    const SUMS: Sums<u32> = SCAN_SUMS_U32;
    const APPLY: Apply<u32> = SCAN_APPLY_U32;
}

impl Counts for u64 {
    const SUMS: Sums<u64> = SCAN_SUMS_U64;
    const APPLY: Apply<u64> = SCAN_APPLY_U64;
}

/// `out[k] = input[0] + .. + input[k-1]` for k in 0..=n (`out[n]` the total);
/// returns the total. `input` holds at least n, `out` at least n + 1 (a u64
/// `input` may be `out` itself).
pub fn exclusive_into<E: Exec, T: Counts>(
    e: &E,
    input: View<T>,
    n: usize,
    out: View<u64>,
) -> Result<u64> {
    if input.len() < n || out.len() <= n {
        return Err(Error::internal(format!(
            "scan of {n} items over arrays of {} and {}",
            input.len(),
            out.len()
        )));
    }
    if n == 0 {
        out.write(e, 0, &[0])?;
        return Ok(0);
    }
    let blocks = n.div_ceil(ITEMS);
    let grid = u32::try_from(blocks)
        .ok()
        .filter(|&b| b < i32::MAX as u32)
        .ok_or_else(|| Error::unsupported(format!("{n} items are too many to scan")))?;
    let sums = Buf::<E, u64>::zeros(e, blocks)?;
    let n64 = n as u64;
    // SAFETY (every launch): types by the declarations; input holds n, sums
    // one entry per block, out n + 1 (checked above).
    unsafe {
        T::SUMS.launch(e, grid, THREADS, (input, n64, sums.view()))?;
        SCAN_CARRY.launch(e, 1, THREADS, (sums.view(), blocks as u64))?;
        T::APPLY.launch(e, grid, THREADS, (input, n64, sums.view(), out))?;
    }
    Ok(out.read(e, n..n + 1)?[0])
}

/// [`exclusive_into`] a new array of n + 1; returns it and the total.
pub fn exclusive<E: Exec, T: Counts>(
    e: &E,
    input: View<T>,
    n: usize,
) -> Result<(Buf<E, u64>, u64)> {
    let out = Buf::<E, u64>::zeros(e, n + 1)?;
    let total = exclusive_into(e, input, n, out.view())?;
    Ok((out, total))
}
