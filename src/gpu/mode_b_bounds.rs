//! Mode B's bound derivation on an [`Exec`] (a device, or the host build of
//! the kernels in tests): `kernels/mode_b_bounds.cu`, whose outputs equal the
//! CPU's (`field::blockwise::vertex_ids` and the tile ids of `blockwise::encode`) bit for bit.

use super::exec::{Buf, Exec, View};
use super::launch::kernels;
use crate::error::{Error, Result};
use crate::kernels::MODE_B_BOUNDS_BLOCK;

pub const SOURCE: &str = include_str!("../../kernels/mode_b_bounds.cu");
const TILE: usize = crate::field::blockwise::TILE;
/// One block per tile: a warp per tile row, 8 rows at a time (the kernel's
/// intended shape).
const BLOCK: [u32; 3] = [MODE_B_BOUNDS_BLOCK[0], MODE_B_BOUNDS_BLOCK[1], 1];

kernels! {
    B_BOUND_IDS = factz_b_bound_ids(
        u: View<f32>, v: View<f32>, ny: i64, nx: i64, xi: f64, chunk_of_larger: i32,
        vertex_ids: View<u8>, tile_ids: View<u8>, forced_mask: View<u32>,
        exact_mask: View<u32>,
    );
}

/// What the kernel computes for one field (see the kernel's comments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeBIds {
    /// `[u, v]` per vertex, 255 = stored exactly.
    pub vertex: Vec<[u8; 2]>,
    /// `[u, v]` per 32x32 tile, tiles in row-major order.
    pub tile: Vec<[u8; 2]>,
    /// One word per row and tile column (`j * tiles_x + t`), bit x = vertex `32 t + x`.
    pub forced_mask: Vec<u32>,
    pub exact_mask: Vec<u32>,
}

/// Where the kernel writes, on the executor: `vertex` 2 bytes per vertex,
/// `tile` 2 per tile, the masks one word per row and tile column.
#[derive(Debug, Clone, Copy)]
pub struct BoundOut {
    pub vertex: View<u8>,
    pub tile: View<u8>,
    pub forced_mask: View<u32>,
    pub exact_mask: View<u32>,
}

/// The tile grid of a field: (tiles across, tiles down).
pub(crate) fn tiles(ny: usize, nx: usize) -> (usize, usize) {
    (nx.div_ceil(TILE), ny.div_ceil(TILE))
}

/// The bound kernel on one executor.
pub struct BoundKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> BoundKernels<'_, E> {
    /// The bound derivation of `u`, `v` (row-major `ny x nx`, already on the
    /// executor) under the absolute bound `xi`, into `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn derive(
        &self,
        u: View<f32>,
        v: View<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
        out: &BoundOut,
    ) -> Result<()> {
        let n = super::field_views(u, v, ny, nx)?;
        let (tx, ty) = tiles(ny, nx);
        if out.vertex.len() < 2 * n
            || out.tile.len() < 2 * tx * ty
            || out.forced_mask.len() < ny * tx
            || out.exact_mask.len() < ny * tx
        {
            return Err(Error::internal("mode B bound outputs are too small"));
        }
        let grid = [
            u32::try_from(tx).map_err(|_| Error::unsupported("field too wide for one launch"))?,
            u32::try_from(ty)
                .ok()
                .filter(|&y| y <= 65535)
                .ok_or_else(|| Error::unsupported("field too tall for one launch"))?,
            1,
        ];
        let e = self.exec;
        // SAFETY: every array has the length the kernel reads or writes for
        // this ny, nx (checked above).
        unsafe {
            B_BOUND_IDS.launch_dims(
                e,
                grid,
                BLOCK,
                (
                    u,
                    v,
                    ny as i64,
                    nx as i64,
                    xi,
                    chunk_of_larger as i32,
                    out.vertex,
                    out.tile,
                    out.forced_mask,
                    out.exact_mask,
                ),
            )
        }
    }

    /// [`Self::derive`] from and to host memory (one upload, one download).
    pub fn run(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<ModeBIds> {
        let e = self.exec;
        let (du, dv) = super::upload_field(e, u, v, ny, nx)?;
        let n = ny * nx;
        let (tx, ty) = tiles(ny, nx);
        let vertex = Buf::<E, u8>::zeros(e, 2 * n)?;
        let tile = Buf::<E, u8>::zeros(e, 2 * tx * ty)?;
        let forced = Buf::<E, u32>::zeros(e, ny * tx)?;
        let exact = Buf::<E, u32>::zeros(e, ny * tx)?;
        let out = BoundOut {
            vertex: vertex.view(),
            tile: tile.view(),
            forced_mask: forced.view(),
            exact_mask: exact.view(),
        };
        self.derive(du.view(), dv.view(), ny, nx, xi, chunk_of_larger, &out)?;
        let pairs = |b: Vec<u8>| b.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
        Ok(ModeBIds {
            vertex: pairs(vertex.read(e, 0..2 * n)?),
            tile: pairs(tile.read(e, 0..2 * tx * ty)?),
            forced_mask: forced.read(e, 0..ny * tx)?,
            exact_mask: exact.read(e, 0..ny * tx)?,
        })
    }
}
