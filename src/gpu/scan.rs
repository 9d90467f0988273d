//! Exclusive prefix sums over the whole grid (`kernels/scan.cu`): the one
//! scan every GPU stage that compacts or places variable-length output uses
//! (mode B's exact values, mode S's stream order, the particle passes).

use super::exec::{Arg, Buf, Exec, Plain, View};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/scan.cu");
/// FZSCAN_THREADS and FZSCAN_ITEMS in the source.
const THREADS: u32 = 256;
const ITEMS: usize = 1024;

/// An input element type of the scan kernels.
pub trait Counts: Plain {
    /// The kernels' name suffix.
    const SUFFIX: &'static str;
}

impl Counts for u32 {
    const SUFFIX: &'static str = "u32";
}

impl Counts for u64 {
    const SUFFIX: &'static str = "u64";
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
    let n64 = Arg::U64(n as u64);
    // SAFETY (every launch): the kernels' parameter lists in order; input
    // holds n, sums one entry per block, out n + 1 (checked above).
    unsafe {
        e.launch(
            &format!("factz_scan_sums_{}", T::SUFFIX),
            grid,
            THREADS,
            &[input.arg(), n64, sums.arg()],
        )?;
        e.launch(
            "factz_scan_carry",
            1,
            THREADS,
            &[sums.arg(), Arg::U64(blocks as u64)],
        )?;
        e.launch(
            &format!("factz_scan_apply_{}", T::SUFFIX),
            grid,
            THREADS,
            &[input.arg(), n64, sums.arg(), out.arg()],
        )?;
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
