//! The schedule of mode S on the GPU (`kernels/mode_s.cu`, driven by
//! `gpu::mode_s`): the steps and phases whose targets each launch decides, as
//! `speculative` walks them.
#![doc(hidden)]

use super::speculative::STRIDE;

/// The phases of one step, in order: horizontal, vertical, center (the kernels'
/// `phase` argument 0, 1, 2).
pub const PHASES: [u32; 3] = [0, 1, 2];

/// The steps STRIDE/2, ..., 2, 1.
pub fn steps() -> impl Iterator<Item = usize> {
    std::iter::successors(Some(STRIDE / 2), |&s| (s > 1).then_some(s / 2))
}

/// First row, row step, first column, column step of (step, phase)'s targets:
/// odd multiples of the step along the phase's axes, even ones across.
pub fn axes(step: usize, phase: u32) -> (usize, usize, usize, usize) {
    let r0 = if phase == 0 { 0 } else { step };
    let c0 = if phase == 1 { 0 } else { step };
    (r0, 2 * step, c0, 2 * step)
}
