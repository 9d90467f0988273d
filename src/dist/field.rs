//! Vector fields beyond one node: each rank compresses its block of the grid
//! (any decomposition into rectangular blocks) under the chunk rule, so every
//! critical point of the whole field survives, in triangles that cross rank
//! borders too. The only communication is agreeing on one absolute bound (a
//! relative bound is relative to the whole field) and on failure.
//!
//! A one-vertex halo exchange could let one side of each border skip exact
//! storage (the other side's exact row then fixes the crossing triangles), at
//! the price of the encoder checking triangles against a neighbour's row it does
//! not store; not built yet (see the closing note of issue 7).

use super::agree;
use crate::field::{self, bound_for_range, finite_range, Bound, Compressed, FieldConfig};
use crate::Result;
use mpi::collective::SystemOperation;
use mpi::traits::*;

/// Compresses this rank's block (`u`, `v`: `ny * nx` each, row-major) so that,
/// with every rank of `comm` calling it on its own block, the whole field keeps
/// every critical point and every value is within one bound. Each rank's stream
/// decodes alone (`field::decompress`).
pub fn compress_field<C: Communicator>(
    comm: &C,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<Compressed> {
    let local = (|| {
        let n = field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(crate::Error::invalid(format!(
                "block {ny}x{nx} needs {n} values per component, got {} and {}",
                u.len(),
                v.len()
            )));
        }
        field::check_config(cfg)?;
        Ok(finite_range(u.iter().chain(v)))
    })();
    let (lo, hi) = agree(comm, local)?;
    let (mut glo, mut ghi) = (0f32, 0f32);
    comm.all_reduce_into(&lo, &mut glo, SystemOperation::min());
    comm.all_reduce_into(&hi, &mut ghi, SystemOperation::max());
    // The formula field::absolute_bound uses, on the whole field's range.
    let xi = bound_for_range(cfg.bound, glo, ghi);
    let mut local_cfg = *cfg;
    local_cfg.bound = Bound::Abs(xi);
    local_cfg.chunk_of_larger |= comm.size() > 1;
    agree(comm, field::compress(u, v, ny, nx, &local_cfg))
}
