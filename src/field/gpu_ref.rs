//! The CPU reference outputs the GPU backend's mode B bound derivation
//! (`kernels/mode_b_bounds.cu`) must reproduce bit for bit; tests compare the
//! kernels (run on a device, or on the host through `kernels/shim`) with these.
#![doc(hidden)]

use super::blockwise;
use super::forced::forced_vertices;

/// Mode B's per-vertex bound ids (`[u, v]`, 255 = stored exactly) as
/// `blockwise::vertex_ids` computes them, and the per-tile ids (`[u, v]` per
/// 32x32 tile, tiles in row-major order) exactly as `blockwise::encode` writes
/// them into the stream.
pub fn mode_b_ids(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
) -> (Vec<[u8; 2]>, Vec<[u8; 2]>) {
    let forced = forced_vertices(u, v, ny, nx, chunk_of_larger);
    let vertex = blockwise::vertex_ids(u, v, ny, nx, xi, &forced);
    let parts = blockwise::encode(u, v, ny, nx, xi, chunk_of_larger);
    let tile = parts
        .ids
        .chunks_exact(2)
        .map(|c| {
            let id = |x: u32| u8::try_from(x).expect("tile ids are below NUM_IDS");
            [id(c[0]), id(c[1])]
        })
        .collect();
    (vertex, tile)
}
