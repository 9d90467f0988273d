//! Whole-field steps of the GPU field pipeline on an [`Exec`]
//! (`kernels/field_reduce.cu`), so the field stays where it is: the finite
//! range a relative bound needs, and mode S's exact values.

use super::exec::{launch_items, Arg, Buf, Exec, View};
use crate::error::Result;

pub const SOURCE: &str = include_str!("../../kernels/field_reduce.cu");
/// FZF_BLOCK, and the particle kernels' scan block.
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

/// The (u, v) bits of the vertices with `exact[k] != 0`, in index order (two
/// words each): what `gpu_ref_s::assemble_raw` takes.
pub fn exact_values<E: Exec>(e: &E, u: View<f32>, v: View<f32>, exact: &[u8]) -> Result<Vec<u32>> {
    let n = exact.len();
    super::check_views(u, v, n)?;
    let n64 = n as u64;
    let dexact = Buf::from(e, exact)?;
    let flag = Buf::<E, u64>::zeros(e, n)?;
    let slot = Buf::<E, u64>::zeros(e, n + 1)?;
    // SAFETY: the kernels' parameter lists; flag and exact hold n, slot n + 1.
    unsafe {
        launch_items(
            e,
            "factz_f_exact_flags",
            n,
            BLOCK,
            &[dexact.arg(), Arg::U64(n64), flag.arg()],
        )?;
        e.launch(
            "factz_p_scan",
            1,
            BLOCK,
            &[flag.arg(), Arg::U64(n64), slot.arg()],
        )?;
    }
    let count = slot.read(e, n..n + 1)?[0] as usize;
    let raw = Buf::<E, u32>::zeros(e, 2 * count)?;
    // SAFETY: raw holds two words per exact vertex.
    unsafe {
        launch_items(
            e,
            "factz_f_exact_gather",
            n,
            BLOCK,
            &[
                u.arg(),
                v.arg(),
                dexact.arg(),
                slot.arg(),
                Arg::U64(n64),
                raw.arg(),
            ],
        )?
    };
    raw.read(e, 0..2 * count)
}
