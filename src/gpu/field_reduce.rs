//! Whole-field steps of the GPU field pipeline on an [`Exec`]
//! (`kernels/field_reduce.cu`), so the field stays where it is: the finite
//! range a relative bound needs, and the exact-vertex bitmap of mode S.

use super::exec::{launch_items, Arg, Buf, Exec, View};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/field_reduce.cu");
/// FZF_BLOCK.
const BLOCK: u32 = 256;
/// Most blocks of the range reduction (grid-stride).
const RANGE_BLOCKS: usize = 1024;

/// `field::finite_range` of the first `n` values of u and v: per-block min and
/// max on the executor, the blocks folded here by the same function.
pub fn finite_range<E: Exec>(e: &E, u: View<f32>, v: View<f32>, n: usize) -> Result<(f32, f32)> {
    super::check_views(u, v, n)?;
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, RANGE_BLOCKS);
    let part = Buf::<E, f32>::zeros(e, 2 * blocks)?;
    // SAFETY: (const float* u, const float* v, u64 n, float* part): u and v hold
    // n values, part two per block.
    unsafe {
        e.launch(
            "factz_f_range",
            blocks as u32,
            BLOCK,
            &[u.arg(), v.arg(), Arg::U64(n as u64), part.arg()],
        )?
    };
    Ok(crate::field::finite_range(&part.read(e, 0..2 * blocks)?))
}

/// The stream's exact-vertex bitmap (`planes::pack_bits`) of n flag bytes.
pub fn pack_flags<E: Exec>(e: &E, flags: View<u8>, n: usize) -> Result<Buf<E, u8>> {
    check_len(flags.len(), n)?;
    let bytes = Buf::<E, u8>::zeros(e, n.div_ceil(8))?;
    // SAFETY: (const u8* flags, u64 n, u8* bytes): flags holds n, bytes one per 8.
    unsafe {
        launch_items(
            e,
            "factz_f_pack_flags",
            n.div_ceil(8),
            BLOCK,
            &[flags.arg(), Arg::U64(n as u64), bytes.arg()],
        )?
    };
    Ok(bytes)
}

/// The inverse of [`pack_flags`]: n flag bytes (0 or 1).
pub fn unpack_flags<E: Exec>(e: &E, bytes: View<u8>, n: usize) -> Result<Buf<E, u8>> {
    check_len(bytes.len(), n.div_ceil(8))?;
    let flags = Buf::<E, u8>::zeros(e, n)?;
    // SAFETY: (const u8* bytes, u64 n, u8* flags): as in pack_flags.
    unsafe {
        launch_items(
            e,
            "factz_f_unpack_flags",
            n,
            BLOCK,
            &[bytes.arg(), Arg::U64(n as u64), flags.arg()],
        )?
    };
    Ok(flags)
}

fn check_len(len: usize, need: usize) -> Result<()> {
    if len < need {
        return Err(Error::internal(format!(
            "a device array of {len} where {need} are needed"
        )));
    }
    Ok(())
}

/// Launch a one-thread-per-item kernel of this file over `n` items.
///
/// # Safety
/// As [`Exec::launch`].
unsafe fn per_item<E: Exec>(e: &E, kernel: &str, n: usize, args: &[Arg]) -> Result<()> {
    // SAFETY: the caller's.
    unsafe { launch_items(e, kernel, n, BLOCK, args) }
}

/// Set bits among the first `n_bits` of a bitmap on the executor.
pub fn count_bits<E: Exec>(e: &E, bytes: View<u8>, n_bits: usize) -> Result<usize> {
    check_len(bytes.len(), n_bits.div_ceil(8))?;
    let blocks = n_bits
        .div_ceil(8)
        .div_ceil(BLOCK as usize)
        .clamp(1, RANGE_BLOCKS);
    let part = Buf::<E, u32>::zeros(e, blocks)?;
    // SAFETY: (const u8* bytes, u64 n_bits, u32* part): bytes holds the
    // bitmap, part one entry per block.
    unsafe {
        e.launch(
            "factz_f_count_bits",
            blocks as u32,
            BLOCK,
            &[bytes.arg(), Arg::U64(n_bits as u64), part.arg()],
        )?
    };
    Ok(part.read(e, 0..blocks)?.iter().map(|&c| c as usize).sum())
}

/// Bytes as u32 symbols (the Huffman kernels' input).
pub fn widen<E: Exec>(e: &E, bytes: View<u8>) -> Result<Buf<E, u32>> {
    let n = bytes.len();
    let out = Buf::<E, u32>::zeros(e, n)?;
    // SAFETY: (const u8* bytes, u64 n, u32* out): n each.
    unsafe {
        per_item(
            e,
            "factz_f_widen",
            n,
            &[bytes.arg(), Arg::U64(n as u64), out.arg()],
        )?
    };
    Ok(out)
}

/// The inverse of [`widen`] (symbols already checked to be bytes).
pub fn narrow<E: Exec>(e: &E, symbols: View<u32>) -> Result<Buf<E, u8>> {
    let n = symbols.len();
    let out = Buf::<E, u8>::zeros(e, n)?;
    // SAFETY: (const u32* symbols, u64 n, u8* out): n each.
    unsafe {
        per_item(
            e,
            "factz_f_narrow",
            n,
            &[symbols.arg(), Arg::U64(n as u64), out.arg()],
        )?
    };
    Ok(out)
}

/// `planes::to_planes` of words, as 4 u32 symbols per word.
pub fn to_planes<E: Exec>(e: &E, words: View<u32>) -> Result<Buf<E, u32>> {
    let n = words.len();
    let out = Buf::<E, u32>::zeros(e, 4 * n)?;
    // SAFETY: (const u32* words, u64 n, u32* out): n words, 4 n symbols.
    unsafe {
        per_item(
            e,
            "factz_f_to_planes",
            n,
            &[words.arg(), Arg::U64(n as u64), out.arg()],
        )?
    };
    Ok(out)
}

/// `planes::from_planes` of byte symbols (a multiple of 4) into words.
pub fn from_planes<E: Exec>(e: &E, planes: View<u32>) -> Result<Buf<E, u32>> {
    let n = planes.len() / 4;
    let out = Buf::<E, u32>::zeros(e, n)?;
    // SAFETY: (const u32* planes, u64 n, u32* words): 4 n symbols, n words.
    unsafe {
        per_item(
            e,
            "factz_f_from_planes",
            n,
            &[planes.arg(), Arg::U64(n as u64), out.arg()],
        )?
    };
    Ok(out)
}
