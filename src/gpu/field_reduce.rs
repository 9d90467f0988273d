//! Whole-field steps of the GPU field pipeline on an [`Exec`]
//! (`kernels/field_reduce.cu`), so the field stays where it is: the finite
//! range a relative bound needs, and the exact-vertex bitmap of mode S.

use super::exec::{Buf, Exec, Plain, View};
use super::launch::{kernels, Kernel};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/field_reduce.cu");
use crate::kernels::FIELD_REDUCE_BLOCK as BLOCK;
/// Most blocks of the range reduction (grid-stride).
const RANGE_BLOCKS: usize = 1024;

kernels! {
    F_RANGE = factz_f_range(u: View<f32>, v: View<f32>, n: u64, part: View<f32>);
    F_PACK_FLAGS = factz_f_pack_flags(flags: View<u8>, n: u64, bytes: View<u8>);
    F_UNPACK_FLAGS = factz_f_unpack_flags(bytes: View<u8>, n: u64, flags: View<u8>);
    F_COUNT_BITS = factz_f_count_bits(bytes: View<u8>, n_bits: u64, part: View<u32>);
    F_WIDEN = factz_f_widen(bytes: View<u8>, n: u64, out: View<u32>);
    F_NARROW = factz_f_narrow(symbols: View<u32>, n: u64, out: View<u8>);
    F_TO_PLANES = factz_f_to_planes(words: View<u32>, n: u64, out: View<u32>);
    F_FROM_PLANES = factz_f_from_planes(planes: View<u32>, n: u64, words: View<u32>);
}

/// `field::finite_range` of the first `n` values of u and v: per-block min and
/// max on the executor, the blocks folded here by the same function.
pub fn finite_range<E: Exec>(e: &E, u: View<f32>, v: View<f32>, n: usize) -> Result<(f32, f32)> {
    super::check_views(u, v, n)?;
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, RANGE_BLOCKS);
    let part = Buf::<E, f32>::zeros(e, 2 * blocks)?;
    // SAFETY: u and v hold n values, part two per block.
    unsafe { F_RANGE.launch(e, blocks as u32, BLOCK, (u, v, n as u64, part.view()))? };
    Ok(crate::field::finite_range(&[&part.read(e, 0..2 * blocks)?]))
}

/// `kernel(const A* input, u64 n, B* out)`, one thread per item, into a new
/// array of `out_len`: every kernel of this file but the two reductions.
///
/// # Safety
/// For this `n`, the kernel reads at most `input`'s elements and writes at
/// most `out_len`, with `items` threads.
unsafe fn map<E: Exec, A: Plain, B: Plain>(
    e: &E,
    kernel: Kernel<(View<A>, u64, View<B>)>,
    input: View<A>,
    n: usize,
    items: usize,
    out_len: usize,
) -> Result<Buf<E, B>> {
    let out = Buf::<E, B>::zeros(e, out_len)?;
    // SAFETY: the caller's.
    unsafe { kernel.launch_items(e, items, BLOCK, (input, n as u64, out.view()))? };
    Ok(out)
}

fn check_len(len: usize, need: usize) -> Result<()> {
    if len < need {
        return Err(Error::internal(format!(
            "a device array of {len} where {need} are needed"
        )));
    }
    Ok(())
}

/// The stream's exact-vertex bitmap (`planes::pack_bits`) of n flag bytes.
pub fn pack_flags<E: Exec>(e: &E, flags: View<u8>, n: usize) -> Result<Buf<E, u8>> {
    check_len(flags.len(), n)?;
    // SAFETY: one thread per output byte, reading its 8 flags.
    unsafe { map(e, F_PACK_FLAGS, flags, n, n.div_ceil(8), n.div_ceil(8)) }
}

/// The inverse of [`pack_flags`]: n flag bytes (0 or 1).
pub fn unpack_flags<E: Exec>(e: &E, bytes: View<u8>, n: usize) -> Result<Buf<E, u8>> {
    check_len(bytes.len(), n.div_ceil(8))?;
    // SAFETY: one thread per flag, reading its byte.
    unsafe { map(e, F_UNPACK_FLAGS, bytes, n, n, n) }
}

/// Set bits among the first `n_bits` of a bitmap on the executor.
pub fn count_bits<E: Exec>(e: &E, bytes: View<u8>, n_bits: usize) -> Result<usize> {
    check_len(bytes.len(), n_bits.div_ceil(8))?;
    let blocks = n_bits
        .div_ceil(8)
        .div_ceil(BLOCK as usize)
        .clamp(1, RANGE_BLOCKS);
    let part = Buf::<E, u32>::zeros(e, blocks)?;
    // SAFETY: bytes holds the bitmap, part one entry per block.
    unsafe { F_COUNT_BITS.launch(e, blocks as u32, BLOCK, (bytes, n_bits as u64, part.view()))? };
    Ok(part.read(e, 0..blocks)?.iter().map(|&c| c as usize).sum())
}

/// Bytes as u32 symbols (the Huffman kernels' input).
pub fn widen<E: Exec>(e: &E, bytes: View<u8>) -> Result<Buf<E, u32>> {
    let n = bytes.len();
    // SAFETY: n in, n out.
    unsafe { map(e, F_WIDEN, bytes, n, n, n) }
}

/// The inverse of [`widen`] (symbols already checked to be bytes).
pub fn narrow<E: Exec>(e: &E, symbols: View<u32>) -> Result<Buf<E, u8>> {
    let n = symbols.len();
    // SAFETY: n in, n out.
    unsafe { map(e, F_NARROW, symbols, n, n, n) }
}

/// `planes::to_planes` of words, as 4 u32 symbols per word.
pub fn to_planes<E: Exec>(e: &E, words: View<u32>) -> Result<Buf<E, u32>> {
    let n = words.len();
    // SAFETY: n words in, 4 n symbols out.
    unsafe { map(e, F_TO_PLANES, words, n, n, 4 * n) }
}

/// `planes::from_planes` of byte symbols (a multiple of 4) into words.
pub fn from_planes<E: Exec>(e: &E, planes: View<u32>) -> Result<Buf<E, u32>> {
    let n = planes.len() / 4;
    // SAFETY: 4 n symbols in, n words out.
    unsafe { map(e, F_FROM_PLANES, planes, n, n, n) }
}
