//! Mode B's encoding and decoding on an [`Exec`] (a device, or the host build
//! of the kernels in tests/gpu_mode_b_codec.rs): `kernels/mode_b_bounds.cu`
//! then `kernels/mode_b_codec.cu`, whose `Parts` and decoded values equal
//! `field::blockwise::encode` / `decode`'s bit for bit.

use super::exec::{launch_items, Arg, Buf, Exec, View};
use super::mode_b::{self, BoundKernels, BoundOut};
use super::parts::DevParts;
use crate::error::{Error, Result};
use crate::field::parts::Parts;
use crate::field::quantize::NUM_IDS;

pub const SOURCE: &str = include_str!("../../kernels/mode_b_codec.cu");
const TILE: usize = crate::field::blockwise::TILE;
/// Tiles (warps) per block of the per-tile kernels (FZC_WARPS in the source).
const TILES_PER_BLOCK: usize = 4;
/// One warp per tile, `TILES_PER_BLOCK` tiles per block.
const PER_TILE_BLOCK: [u32; 3] = [TILE as u32, TILES_PER_BLOCK as u32, 1];
/// Threads per block of the mask layout kernels (one thread per byte or word).
const SHAPE_THREADS: u32 = 256;

/// The tile grid of a field: (tiles across, tiles in all).
fn tiles(ny: usize, nx: usize) -> (usize, usize) {
    let (tx, ty) = mode_b::tiles(ny, nx);
    (tx, tx * ty)
}

/// The 1-D grid of the per-tile kernels.
fn per_tile(tiles: usize) -> Result<[u32; 3]> {
    let blocks = u32::try_from(tiles.div_ceil(TILES_PER_BLOCK))
        .ok()
        .filter(|&b| b < i32::MAX as u32)
        .ok_or_else(|| Error::unsupported("field too large for one launch"))?;
    Ok([blocks.max(1), 1, 1])
}

/// Mode B's bound, encode and decode kernels on one executor.
pub struct CodecKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> CodecKernels<'_, E> {
    /// Exclusive scan of the `nt` per-tile counts into nt + 1 offsets; returns
    /// them and the total.
    fn scan(&self, counts: &Buf<E, u32>, nt: usize) -> Result<(Buf<E, u64>, usize)> {
        let (offsets, total) = super::scan::exclusive(self.exec, counts.view(), nt)?;
        Ok((offsets, total as usize))
    }

    /// `blockwise::encode(u, v, ny, nx, xi, chunk_of_larger)` from host memory.
    pub fn encode(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Parts> {
        let (du, dv) = super::upload_field(self.exec, u, v, ny, nx)?;
        self.encode_device(du.view(), dv.view(), ny, nx, xi, chunk_of_larger)?
            .read(self.exec, ny * nx)
    }

    /// [`Self::encode`] from a field already on the executor (`u`, `v` hold
    /// at least ny * nx values); the Parts stay there.
    pub fn encode_device(
        &self,
        u: View<f32>,
        v: View<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<DevParts<E>> {
        let e = self.exec;
        let n = super::field_views(u, v, ny, nx)?;
        let (tx, nt) = tiles(ny, nx);
        let grid = per_tile(nt)?;
        let vertex_ids = Buf::<E, u8>::zeros(e, 2 * n)?;
        let tile_ids = Buf::<E, u8>::zeros(e, 2 * nt)?;
        let forced = Buf::<E, u32>::zeros(e, ny * tx)?;
        let bound_exact = Buf::<E, u32>::zeros(e, ny * tx)?;
        let bounds = BoundOut {
            vertex: vertex_ids.view(),
            tile: tile_ids.view(),
            forced_mask: forced.view(),
            exact_mask: bound_exact.view(),
        };
        BoundKernels { exec: e }.derive(u, v, ny, nx, xi, chunk_of_larger, &bounds)?;
        let ids = Buf::<E, u32>::zeros(e, 2 * nt)?;
        let mask = Buf::<E, u32>::zeros(e, ny * tx)?;
        let vertex_codes = Buf::<E, u32>::zeros(e, 2 * n)?;
        let tile_exact = Buf::<E, u32>::zeros(e, nt)?;
        let (ny64, nx64) = (Arg::U64(ny as u64), Arg::U64(nx as u64));
        // SAFETY (every launch here): the arguments match the kernel's
        // parameters in order and type (a long long as U64: the same 8
        // bytes), and every buffer has the length the kernel reads or writes
        // for this ny, nx.
        unsafe {
            e.launch_dims(
                "factz_b_encode",
                grid,
                PER_TILE_BLOCK,
                &[
                    u.arg(),
                    v.arg(),
                    ny64,
                    nx64,
                    Arg::F64(xi),
                    vertex_ids.arg(),
                    tile_ids.arg(),
                    ids.arg(),
                    mask.arg(),
                    vertex_codes.arg(),
                    tile_exact.arg(),
                ],
            )?
        };
        let (offsets, exact) = self.scan(&tile_exact, nt)?;
        let raw = Buf::<E, u32>::zeros(e, 2 * exact)?;
        let codes = Buf::<E, u32>::zeros(e, 2 * (n - exact))?;
        unsafe {
            e.launch_dims(
                "factz_b_compact",
                grid,
                PER_TILE_BLOCK,
                &[
                    u.arg(),
                    v.arg(),
                    ny64,
                    nx64,
                    mask.arg(),
                    vertex_codes.arg(),
                    offsets.arg(),
                    raw.arg(),
                    codes.arg(),
                ],
            )?
        };
        let bytes = Buf::<E, u8>::zeros(e, n.div_ceil(8))?;
        unsafe {
            launch_items(
                e,
                "factz_b_mask_bytes",
                n.div_ceil(8),
                SHAPE_THREADS,
                &[mask.arg(), ny64, nx64, bytes.arg()],
            )?
        };
        Ok(DevParts {
            mask: bytes,
            n_exact: exact,
            raw,
            ids,
            codes,
        })
    }

    /// `blockwise::decode` into host memory, with its checks (same errors).
    pub fn decode(
        &self,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
        u: &mut [f32],
        v: &mut [f32],
    ) -> Result<()> {
        let e = self.exec;
        let n = crate::field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(Error::invalid(
                "u, v and the exact mask must hold ny * nx values each",
            ));
        }
        if parts.exact.len() != n {
            return Err(Error::invalid("the exact mask must hold ny * nx values"));
        }
        let du = Buf::<E, f32>::zeros(e, n)?;
        let dv = Buf::<E, f32>::zeros(e, n)?;
        let parts = DevParts::upload(e, parts)?;
        self.decode_device(&parts, ny, nx, xi, du.view(), dv.view())?;
        u.copy_from_slice(&du.read(e, 0..n)?);
        v.copy_from_slice(&dv.read(e, 0..n)?);
        Ok(())
    }

    /// [`Self::decode`] of Parts on the executor into arrays there of at
    /// least ny * nx values, with `blockwise::decode`'s checks.
    pub fn decode_device(
        &self,
        parts: &DevParts<E>,
        ny: usize,
        nx: usize,
        xi: f64,
        u: View<f32>,
        v: View<f32>,
    ) -> Result<()> {
        let e = self.exec;
        let n = super::field_views(u, v, ny, nx)?;
        if parts.mask.len() != n.div_ceil(8) {
            return Err(Error::internal(
                "mode B: the exact-vertex bitmap has the wrong size",
            ));
        }
        let (tx, nt) = tiles(ny, nx);
        if parts.ids.len() != 2 * nt {
            return Err(Error::corrupt(
                "mode B stream has the wrong number of tile bound ids",
            ));
        }
        if parts.max_id(e)? >= NUM_IDS {
            return Err(Error::corrupt("mode B stream has an out-of-range bound id"));
        }
        let mask = Buf::<E, u32>::zeros(e, ny * tx)?;
        let tile_exact = Buf::<E, u32>::zeros(e, nt)?;
        let (ny64, nx64) = (Arg::U64(ny as u64), Arg::U64(nx as u64));
        // SAFETY (every launch here): as in `encode_device`; raw and codes
        // are read only at the positions the mask implies, checked against
        // their lengths before the decode launch.
        unsafe {
            launch_items(
                e,
                "factz_b_mask_words",
                ny * tx,
                SHAPE_THREADS,
                &[parts.mask.arg(), ny64, nx64, mask.arg()],
            )?
        };
        unsafe {
            launch_items(
                e,
                "factz_b_mask_counts",
                nt,
                (TILE * TILES_PER_BLOCK) as u32,
                &[mask.arg(), ny64, nx64, tile_exact.arg()],
            )?
        };
        let (offsets, exact) = self.scan(&tile_exact, nt)?;
        if 2 * exact != parts.raw.len() || 2 * (n - exact) != parts.codes.len() {
            return Err(Error::corrupt(
                "mode B stream: value counts do not match the exact-vertex mask",
            ));
        }
        let (raw, codes, ids) = (&parts.raw, &parts.codes, &parts.ids);
        unsafe {
            e.launch_dims(
                "factz_b_decode",
                per_tile(nt)?,
                PER_TILE_BLOCK,
                &[
                    ny64,
                    nx64,
                    Arg::F64(xi),
                    ids.arg(),
                    mask.arg(),
                    raw.arg(),
                    codes.arg(),
                    offsets.arg(),
                    u.arg(),
                    v.arg(),
                ],
            )?
        };
        Ok(())
    }
}
