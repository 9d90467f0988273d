//! Mode B's encoding and decoding on an [`Exec`] (a device, or the host build
//! of the kernels in tests/gpu_mode_b_codec.rs): `kernels/mode_b_bounds.cu`
//! then `kernels/mode_b_codec.cu`, whose `Parts` and decoded values equal
//! `field::blockwise::encode` / `decode`'s bit for bit.

use super::exec::{Buf, Exec, View};
use super::launch::kernels;
use super::mode_b_bounds::{self, BoundKernels, BoundOut};
use super::parts::DevParts;
use crate::error::{Error, Result};
use crate::field::parts::Parts;
use crate::field::quantize::NUM_IDS;

pub const SOURCE: &str = include_str!("../../kernels/mode_b_codec.cu");
const TILE: usize = crate::field::blockwise::TILE;
/// Tiles (warps) per block of the per-tile kernels (FZC_WARPS in the source).
const TILES_PER_BLOCK: usize = crate::kernels::MODE_B_CODEC_TILES as usize;
/// One warp per tile, `TILES_PER_BLOCK` tiles per block.
const PER_TILE_BLOCK: [u32; 3] = [TILE as u32, TILES_PER_BLOCK as u32, 1];
/// Threads per block of the mask layout kernels (one thread per byte or word).
const SHAPE_THREADS: u32 = 256;

kernels! {
    B_ENCODE = factz_b_encode(
        u: View<f32>, v: View<f32>, ny: i64, nx: i64, xi: f64, vertex_ids: View<u8>,
        tile_ids: View<u8>, ids: View<u32>, exact_mask: View<u32>, vertex_codes: View<u32>,
        tile_exact: View<u32>,
    );
    B_MASK_COUNTS = factz_b_mask_counts(
        exact_mask: View<u32>, ny: i64, nx: i64, tile_exact: View<u32>,
    );
    B_COMPACT = factz_b_compact(
        u: View<f32>, v: View<f32>, ny: i64, nx: i64, exact_mask: View<u32>,
        vertex_codes: View<u32>, tile_offsets: View<u64>, raw: View<u32>, codes: View<u32>,
    );
    B_DECODE = factz_b_decode(
        ny: i64, nx: i64, xi: f64, ids: View<u32>, exact_mask: View<u32>, raw: View<u32>,
        codes: View<u32>, tile_offsets: View<u64>, u: View<f32>, v: View<f32>,
    );
    B_MASK_BYTES = factz_b_mask_bytes(exact_mask: View<u32>, ny: i64, nx: i64, bytes: View<u8>);
    B_MASK_WORDS = factz_b_mask_words(bytes: View<u8>, ny: i64, nx: i64, exact_mask: View<u32>);
}

/// The tile grid of a field: (tiles across, tiles in all).
fn tiles(ny: usize, nx: usize) -> (usize, usize) {
    let (tx, ty) = mode_b_bounds::tiles(ny, nx);
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
        let (ny64, nx64) = (ny as i64, nx as i64);
        // SAFETY: every buffer has the length the kernel reads or writes for
        // this ny, nx.
        unsafe {
            B_ENCODE.launch_dims(
                e,
                grid,
                PER_TILE_BLOCK,
                (
                    u,
                    v,
                    ny64,
                    nx64,
                    xi,
                    vertex_ids.view(),
                    tile_ids.view(),
                    ids.view(),
                    mask.view(),
                    vertex_codes.view(),
                    tile_exact.view(),
                ),
            )?
        };
        let (offsets, exact) = self.scan(&tile_exact, nt)?;
        let raw = Buf::<E, u32>::zeros(e, 2 * exact)?;
        let codes = Buf::<E, u32>::zeros(e, 2 * (n - exact))?;
        // SAFETY: as above; raw and codes hold the counts the scan found.
        unsafe {
            B_COMPACT.launch_dims(
                e,
                grid,
                PER_TILE_BLOCK,
                (
                    u,
                    v,
                    ny64,
                    nx64,
                    mask.view(),
                    vertex_codes.view(),
                    offsets.view(),
                    raw.view(),
                    codes.view(),
                ),
            )?
        };
        let bytes = Buf::<E, u8>::zeros(e, n.div_ceil(8))?;
        // SAFETY: as above; bytes holds one bit per vertex.
        unsafe {
            B_MASK_BYTES.launch_items(
                e,
                n.div_ceil(8),
                SHAPE_THREADS,
                (mask.view(), ny64, nx64, bytes.view()),
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
        let (ny64, nx64) = (ny as i64, nx as i64);
        // SAFETY: the bitmap holds a bit per vertex (checked), mask a word
        // per row and tile column.
        unsafe {
            B_MASK_WORDS.launch_items(
                e,
                ny * tx,
                SHAPE_THREADS,
                (parts.mask.view(), ny64, nx64, mask.view()),
            )?
        };
        // SAFETY: as above, tile_exact one count per tile.
        unsafe {
            B_MASK_COUNTS.launch_items(
                e,
                nt,
                (TILE * TILES_PER_BLOCK) as u32,
                (mask.view(), ny64, nx64, tile_exact.view()),
            )?
        };
        let (offsets, exact) = self.scan(&tile_exact, nt)?;
        if 2 * exact != parts.raw.len() || 2 * (n - exact) != parts.codes.len() {
            return Err(Error::corrupt(
                "mode B stream: value counts do not match the exact-vertex mask",
            ));
        }
        let (raw, codes, ids) = (&parts.raw, &parts.codes, &parts.ids);
        // SAFETY: raw and codes are read only at the positions the mask
        // implies, checked against their lengths above; ids hold two per
        // tile, u and v the field.
        unsafe {
            B_DECODE.launch_dims(
                e,
                per_tile(nt)?,
                PER_TILE_BLOCK,
                (
                    ny64,
                    nx64,
                    xi,
                    ids.view(),
                    mask.view(),
                    raw.view(),
                    codes.view(),
                    offsets.view(),
                    u,
                    v,
                ),
            )?
        };
        Ok(())
    }
}
