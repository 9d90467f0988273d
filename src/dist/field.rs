//! Vector fields beyond one node: each rank compresses its block of the grid
//! (any decomposition into rectangular blocks), and every critical point of the
//! whole field survives, in triangles that cross rank borders too. Two ways:
//!
//! - [`compress_field_at`] (the rank says where its block lies): ranks whose
//!   blocks touch exchange the one-vertex ring around each other's block
//!   (original values, point to point, non-blocking), and each caps its border
//!   vertices by the safe bounds of the triangles crossing the border
//!   (`field::halo`), which both sides compute alike. Nothing is stored
//!   exactly for the border; this is the better ratio (measured in
//!   `tests/field_halo.rs` and the closing note of issue 7).
//! - [`compress_field`] (position unknown): each block under the chunk rule,
//!   its perimeter stored exactly; no communication but the bound.
//!
//! Either way one absolute bound holds for everyone (a relative bound is
//! relative to the whole field), and one rank's failure is every rank's.

use super::{agree, guarded};
use crate::backend::{self, Backend, BackendUsed};
use crate::bound::{bound_for_range, finite_range, Bound};
use crate::field::halo::BlockWithRing;
use crate::field::{self, Compressed, FieldConfig};
use crate::{Error, Result};
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
    compress_field_on(comm, Backend::Cpu, u, v, ny, nx, cfg).map(|(c, _)| c)
}

/// [`compress_field`] with each rank's block compressed on `backend`
/// (`backend::compress_field`: `Cuda` without a usable device fails on every
/// rank, `Auto` falls back per rank); the streams are the same whichever runs
/// it. Also returns where this rank's ran.
pub fn compress_field_on<C: Communicator>(
    comm: &C,
    backend: Backend,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<(Compressed, BackendUsed)> {
    let local = guarded("checking the block", || {
        let n = field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(Error::invalid(format!(
                "block {ny}x{nx} needs {n} values per component, got {} and {}",
                u.len(),
                v.len()
            )));
        }
        field::check_config(cfg)?;
        Ok(finite_range(&[u, v]))
    });
    let range = agree(comm, local)?;
    let mut local_cfg = *cfg;
    local_cfg.bound = Bound::Abs(global_bound(comm, range, cfg.bound));
    local_cfg.chunk_of_larger |= comm.size() > 1;
    let compressed = guarded("compressing the block", || {
        backend::compress_field(backend, u, v, ny, nx, &local_cfg)
    });
    agree(comm, compressed)
}

/// The absolute bound of the whole field from every rank's finite range (the
/// formula `field::absolute_bound` uses, on the whole field's range).
fn global_bound<C: Communicator>(comm: &C, (lo, hi): (f32, f32), bound: Bound) -> f64 {
    let (mut glo, mut ghi) = (0f32, 0f32);
    comm.all_reduce_into(&lo, &mut glo, SystemOperation::min());
    comm.all_reduce_into(&hi, &mut ghi, SystemOperation::max());
    bound_for_range(bound, glo, ghi)
}

/// A rank's block: first row, first column, rows, columns (in the whole grid).
type Rect = [usize; 4];

/// The part of block `a` inside `b` grown by one vertex on every side (its
/// ring), as a rectangle (empty when they do not touch).
fn in_ring_of(a: &Rect, b: &Rect) -> Option<Rect> {
    let lo = |k: usize| a[k].max(b[k].saturating_sub(1));
    let hi = |k: usize| (a[k] + a[k + 2]).min(b[k] + b[k + 2] + 1);
    let (y0, x0, y1, x1) = (lo(0), lo(1), hi(0), hi(1));
    (y1 > y0 && x1 > x0).then(|| [y0, x0, y1 - y0, x1 - x0])
}

fn overlap(a: &Rect, b: &Rect) -> bool {
    let apart = |k: usize| a[k] + a[k + 2] <= b[k] || b[k] + b[k + 2] <= a[k];
    !(apart(0) || apart(1))
}

/// Compresses this rank's block (`u`, `v`: `ny * nx` each, row-major), whose
/// first vertex is (`y0`, `x0`) of the whole grid, so that with every rank of
/// `comm` calling it on its own block (blocks must not overlap) the whole field
/// keeps every critical point and every value is within one bound. The block's
/// border is not stored exactly: see the module's notes. Each rank's stream
/// decodes alone (`field::decompress`).
pub fn compress_field_at<C: Communicator>(
    comm: &C,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    at: (usize, usize),
    cfg: &FieldConfig,
) -> Result<Compressed> {
    compress_field_at_on(comm, Backend::Cpu, u, v, ny, nx, at, cfg).map(|(c, _)| c)
}

/// [`compress_field_at`] for a chosen backend: the CPU only so far (the
/// border's bound caps have no kernels), so `Cuda` fails on every rank with
/// that reason and `Auto` runs the CPU and says why.
#[allow(clippy::too_many_arguments)]
pub fn compress_field_at_on<C: Communicator>(
    comm: &C,
    backend: Backend,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    (y0, x0): (usize, usize),
    cfg: &FieldConfig,
) -> Result<(Compressed, BackendUsed)> {
    const CPU_ONLY: &str = "the ring exchange (compress_field_at) runs on the CPU only: its border caps have no GPU kernels";
    let ran = BackendUsed {
        backend: Backend::Cpu,
        fallback_reason: (backend == Backend::Auto).then(|| CPU_ONLY.to_string()),
    };
    let local = guarded("checking the block", || {
        if backend == Backend::Cuda {
            return Err(Error::unsupported(CPU_ONLY));
        }
        field::check_config(cfg)?;
        let ringed = BlockWithRing::new(u, v, ny, nx)?;
        y0.checked_add(ny)
            .zip(x0.checked_add(nx))
            .ok_or_else(|| Error::invalid("block position overflows"))?;
        Ok((ringed, finite_range(&[u, v])))
    });
    let (mut ringed, range) = agree(comm, local)?;
    let xi = global_bound(comm, range, cfg.bound);

    let mine: Rect = [y0, x0, ny, nx];
    let mut all = vec![0u64; 4 * comm.size() as usize];
    comm.all_gather_into(&mine.map(|x| x as u64)[..], &mut all[..]);
    let rects: Vec<Rect> = all
        .chunks_exact(4)
        .map(|c| [0, 1, 2, 3].map(|k| c[k] as usize))
        .collect();
    let me = comm.rank() as usize;
    let clash = (0..rects.len())
        .flat_map(|a| (a + 1..rects.len()).map(move |b| (a, b)))
        .find(|&(a, b)| overlap(&rects[a], &rects[b]));
    if let Some((a, b)) = clash {
        return Err(Error::invalid(format!(
            "the blocks of ranks {a} {:?} and {b} {:?} overlap (y0, x0, ny, nx)",
            rects[a], rects[b]
        )));
    }

    // What each neighbour needs of this block, and what this rank needs of
    // theirs: known from the rectangles alone, so every receive has its size.
    let nbrs: Vec<(usize, Rect, Rect)> = (0..rects.len())
        .filter(|&r| r != me)
        .filter_map(|r| {
            Some((
                r,
                in_ring_of(&mine, &rects[r])?,
                in_ring_of(&rects[r], &mine)?,
            ))
        })
        .collect();
    let pack = |[ry, rx, h, w]: Rect| -> Vec<f32> {
        let rows = |c: &[f32]| -> Vec<f32> {
            (ry..ry + h)
                .flat_map(|y| {
                    let k = (y - y0) * nx + (rx - x0);
                    c[k..k + w].to_vec()
                })
                .collect()
        };
        [rows(u), rows(v)].concat()
    };
    let sends: Vec<Vec<f32>> = nbrs.iter().map(|&(_, out, _)| pack(out)).collect();
    let mut recvs: Vec<Vec<f32>> = nbrs
        .iter()
        .map(|&(_, _, inn)| vec![0f32; 2 * inn[2] * inn[3]])
        .collect();
    mpi::request::scope(|scope| {
        let peer = |r: usize| comm.process_at_rank(r as mpi::Rank);
        let mut reqs = Vec::with_capacity(2 * nbrs.len());
        for (buf, &(r, _, _)) in recvs.iter_mut().zip(&nbrs) {
            reqs.push(peer(r).immediate_receive_into_with_tag(scope, &mut buf[..], TAG_RING));
        }
        for (buf, &(r, _, _)) in sends.iter().zip(&nbrs) {
            reqs.push(peer(r).immediate_send_with_tag(scope, &buf[..], TAG_RING));
        }
        reqs.into_iter().for_each(|q| {
            q.wait();
        });
    });
    for (buf, &(_, _, [ry, rx, h, w])) in recvs.iter().zip(&nbrs) {
        let (bu, bv) = buf.split_at(h * w);
        for (k, (&a, &b)) in bu.iter().zip(bv).enumerate() {
            // Grid coordinates of the ringed block: the block starts at (1, 1).
            let (gy, gx) = (ry + k / w + 1 - y0, rx + k % w + 1 - x0);
            ringed.set_ring(gx, gy, a, b);
        }
    }
    let mut local_cfg = *cfg;
    local_cfg.bound = Bound::Abs(xi);
    local_cfg.chunk_of_larger = false;
    let c = agree(
        comm,
        field::compress_capped(u, v, ny, nx, &local_cfg, &ringed.caps()),
    )?;
    Ok((c, ran))
}

const TAG_RING: mpi::Tag = 0x6672;
