//! Mode B's encoding and decoding on the device: `kernels/mode_b_bounds.cu`
//! then `kernels/mode_b_codec.cu`, whose `Parts` and decoded values equal
//! `field::blockwise::encode` / `decode`'s bit for bit; the same sources run
//! on the host in CI through `kernels/shim` (tests/gpu_mode_b_codec.rs).

use super::mode_b;
use super::{driver, upload, zeros};
use crate::error::{Error, Result};
use crate::field::parts::Parts;
use crate::field::quantize::NUM_IDS;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../kernels/mode_b_codec.cu");
const TILE: usize = 32;
/// Tiles (warps) per block of the per-tile kernels (FZC_WARPS in the source).
const TILES_PER_BLOCK: usize = 4;
/// Threads of the one-block scan (FZC_SCAN_THREADS).
const SCAN_THREADS: u32 = 256;

/// PTX of the codec kernels ([`super::compile`]: `--fmad=false`, a virtual architecture).
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::compile(SOURCE, "mode_b_codec.cu", arch)
}

/// Mode B's bound, encode and decode kernels on one device.
pub struct CodecKernels {
    ctx: Arc<CudaContext>,
    bound_ids: CudaFunction,
    encode: CudaFunction,
    mask_counts: CudaFunction,
    scan: CudaFunction,
    compact: CudaFunction,
    decode: CudaFunction,
}

/// The tile grid of a field: (tiles across, tiles in all).
fn tiles(ny: usize, nx: usize) -> (usize, usize) {
    let tx = nx.div_ceil(TILE);
    (tx, tx * ny.div_ceil(TILE))
}

/// One warp per tile, `TILES_PER_BLOCK` tiles per block, a 1-D grid.
fn per_tile(tiles: usize) -> Result<LaunchConfig> {
    let blocks = u32::try_from(tiles.div_ceil(TILES_PER_BLOCK))
        .ok()
        .filter(|&b| b < i32::MAX as u32)
        .ok_or_else(|| Error::unsupported("field too large for one launch"))?;
    Ok(LaunchConfig {
        grid_dim: (blocks.max(1), 1, 1),
        block_dim: (TILE as u32, TILES_PER_BLOCK as u32, 1),
        shared_mem_bytes: 0,
    })
}

const SCAN: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (SCAN_THREADS, 1, 1),
    shared_mem_bytes: 0,
};

/// The exact-vertex mask in the kernels' layout: word `j * tiles_x + t`, bit x
/// = vertex `32 t + x` of row j.
pub fn pack_mask(exact: &[bool], ny: usize, nx: usize) -> Vec<u32> {
    let tiles_x = nx.div_ceil(TILE);
    let mut words = vec![0u32; ny * tiles_x];
    for (k, _) in exact.iter().enumerate().filter(|(_, &e)| e) {
        let (j, i) = (k / nx, k % nx);
        words[j * tiles_x + i / TILE] |= 1 << (i % TILE);
    }
    words
}

/// The inverse of [`pack_mask`].
pub fn unpack_mask(words: &[u32], ny: usize, nx: usize) -> Vec<bool> {
    let tiles_x = nx.div_ceil(TILE);
    (0..ny * nx)
        .map(|k| {
            let (j, i) = (k / nx, k % nx);
            words[j * tiles_x + i / TILE] >> (i % TILE) & 1 == 1
        })
        .collect()
}

impl CodecKernels {
    pub fn new(ctx: Arc<CudaContext>) -> Result<CodecKernels> {
        let bounds: Arc<CudaModule> = ctx
            .load_module(mode_b::compile("compute_80")?)
            .map_err(driver)?;
        let codec = ctx.load_module(compile("compute_80")?).map_err(driver)?;
        let f = |m: &Arc<CudaModule>, name: &str| m.load_function(name).map_err(driver);
        Ok(CodecKernels {
            bound_ids: f(&bounds, "factz_b_bound_ids")?,
            encode: f(&codec, "factz_b_encode")?,
            mask_counts: f(&codec, "factz_b_mask_counts")?,
            scan: f(&codec, "factz_b_scan")?,
            compact: f(&codec, "factz_b_compact")?,
            decode: f(&codec, "factz_b_decode")?,
            ctx,
        })
    }

    /// `blockwise::encode(u, v, ny, nx, xi, chunk_of_larger)` on the device.
    pub fn encode(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Parts> {
        let n = crate::field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(Error::invalid("u and v must hold ny * nx values each"));
        }
        let stream = self.ctx.default_stream();
        let du = upload(&stream, u)?;
        let dv = upload(&stream, v)?;
        self.encode_device(&stream, &du, &dv, ny, nx, xi, chunk_of_larger)
    }

    /// [`Self::encode`] from a field already on the device (`du`, `dv` hold at
    /// least ny * nx values), launched on `stream`; only the Parts come back.
    #[allow(clippy::too_many_arguments)]
    pub fn encode_device(
        &self,
        stream: &Arc<CudaStream>,
        du: &CudaSlice<f32>,
        dv: &CudaSlice<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Parts> {
        let n = crate::field::vertex_count(ny, nx)?;
        if du.len() < n || dv.len() < n {
            return Err(Error::invalid("u and v must hold ny * nx values each"));
        }
        let (tx, nt) = tiles(ny, nx);
        let ty = ny.div_ceil(TILE);
        let bound_grid = (
            u32::try_from(tx).map_err(|_| Error::unsupported("field too wide for one launch"))?,
            u32::try_from(ty)
                .ok()
                .filter(|&y| y <= 65535)
                .ok_or_else(|| Error::unsupported("field too tall for one launch"))?,
            1,
        );
        let mut vertex_ids = zeros::<u8>(stream, 2 * n)?;
        let mut tile_ids = zeros::<u8>(stream, 2 * nt)?;
        let mut forced = zeros::<u32>(stream, ny * tx)?;
        let mut bound_exact = zeros::<u32>(stream, ny * tx)?;
        let mut ids = zeros::<u32>(stream, 2 * nt)?;
        let mut mask = zeros::<u32>(stream, ny * tx)?;
        let mut vertex_codes = zeros::<u32>(stream, 2 * n)?;
        let mut tile_exact = zeros::<u32>(stream, nt)?;
        let mut offsets = zeros::<u64>(stream, nt + 1)?;
        let (ny64, nx64, nt64, chunk) = (ny as i64, nx as i64, nt as i64, chunk_of_larger as i32);
        let mut b = stream.launch_builder(&self.bound_ids);
        b.arg(du)
            .arg(dv)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&xi)
            .arg(&chunk)
            .arg(&mut vertex_ids)
            .arg(&mut tile_ids)
            .arg(&mut forced)
            .arg(&mut bound_exact);
        let bound_cfg = LaunchConfig {
            grid_dim: bound_grid,
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY (every launch below): the arguments match the kernel's
        // signature in order and type, and every buffer has the length the
        // kernel reads or writes for this ny, nx.
        unsafe { b.launch(bound_cfg) }.map_err(driver)?;
        let mut e = stream.launch_builder(&self.encode);
        e.arg(du)
            .arg(dv)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&xi)
            .arg(&vertex_ids)
            .arg(&tile_ids)
            .arg(&mut ids)
            .arg(&mut mask)
            .arg(&mut vertex_codes)
            .arg(&mut tile_exact);
        unsafe { e.launch(per_tile(nt)?) }.map_err(driver)?;
        let mut s = stream.launch_builder(&self.scan);
        s.arg(&tile_exact).arg(&nt64).arg(&mut offsets);
        unsafe { s.launch(SCAN) }.map_err(driver)?;
        let exact = stream.clone_dtoh(&offsets.slice(nt..)).map_err(driver)?[0] as usize;
        let mut raw = zeros::<u32>(stream, 2 * exact)?;
        let mut codes = zeros::<u32>(stream, 2 * (n - exact))?;
        let mut c = stream.launch_builder(&self.compact);
        c.arg(du)
            .arg(dv)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&mask)
            .arg(&vertex_codes)
            .arg(&offsets)
            .arg(&mut raw)
            .arg(&mut codes);
        unsafe { c.launch(per_tile(nt)?) }.map_err(driver)?;
        let mut raw = stream.clone_dtoh(&raw).map_err(driver)?;
        let mut codes = stream.clone_dtoh(&codes).map_err(driver)?;
        raw.truncate(2 * exact);
        codes.truncate(2 * (n - exact));
        Ok(Parts {
            exact: unpack_mask(&stream.clone_dtoh(&mask).map_err(driver)?, ny, nx),
            raw,
            ids: stream.clone_dtoh(&ids).map_err(driver)?,
            codes,
        })
    }

    /// `blockwise::decode` on the device, with its checks (same errors).
    pub fn decode(
        &self,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
        u: &mut [f32],
        v: &mut [f32],
    ) -> Result<()> {
        let n = crate::field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n || parts.exact.len() != n {
            return Err(Error::invalid(
                "u, v and the exact mask must hold ny * nx values each",
            ));
        }
        let (_, nt) = tiles(ny, nx);
        if parts.ids.len() != 2 * nt {
            return Err(Error::corrupt(
                "mode B stream has the wrong number of tile bound ids",
            ));
        }
        if parts.ids.iter().any(|&id| id >= NUM_IDS) {
            return Err(Error::corrupt("mode B stream has an out-of-range bound id"));
        }
        let stream = self.ctx.default_stream();
        let mut du = zeros::<f32>(&stream, n)?;
        let mut dv = zeros::<f32>(&stream, n)?;
        self.decode_device(&stream, parts, ny, nx, xi, &mut du, &mut dv)?;
        stream.memcpy_dtoh(&du, u).map_err(driver)?;
        stream.memcpy_dtoh(&dv, v).map_err(driver)?;
        Ok(())
    }

    /// [`Self::decode`] into device buffers of at least ny * nx values, on
    /// `stream` (the parts go up; the field stays on the device).
    #[allow(clippy::too_many_arguments)]
    pub fn decode_device(
        &self,
        stream: &Arc<CudaStream>,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
        du: &mut CudaSlice<f32>,
        dv: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let n = crate::field::vertex_count(ny, nx)?;
        if du.len() < n || dv.len() < n || parts.exact.len() != n {
            return Err(Error::invalid(
                "u, v and the exact mask must hold ny * nx values each",
            ));
        }
        let (_, nt) = tiles(ny, nx);
        if parts.ids.len() != 2 * nt {
            return Err(Error::corrupt(
                "mode B stream has the wrong number of tile bound ids",
            ));
        }
        if parts.ids.iter().any(|&id| id >= NUM_IDS) {
            return Err(Error::corrupt("mode B stream has an out-of-range bound id"));
        }
        let ids = upload(stream, &parts.ids)?;
        let mask = upload(stream, &pack_mask(&parts.exact, ny, nx))?;
        let mut tile_exact = zeros::<u32>(stream, nt)?;
        let mut offsets = zeros::<u64>(stream, nt + 1)?;
        let (ny64, nx64, nt64) = (ny as i64, nx as i64, nt as i64);
        let threads = (TILE * TILES_PER_BLOCK) as u32;
        let counts_cfg = LaunchConfig {
            grid_dim: (nt.div_ceil(threads as usize) as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut m = stream.launch_builder(&self.mask_counts);
        m.arg(&mask).arg(&ny64).arg(&nx64).arg(&mut tile_exact);
        // SAFETY (every launch here): as in `encode`; raw and codes are read
        // only at the positions the mask implies, checked against their
        // lengths before the decode launch.
        unsafe { m.launch(counts_cfg) }.map_err(driver)?;
        let mut s = stream.launch_builder(&self.scan);
        s.arg(&tile_exact).arg(&nt64).arg(&mut offsets);
        unsafe { s.launch(SCAN) }.map_err(driver)?;
        let exact = stream.clone_dtoh(&offsets.slice(nt..)).map_err(driver)?[0] as usize;
        if 2 * exact != parts.raw.len() || 2 * (n - exact) != parts.codes.len() {
            return Err(Error::corrupt(
                "mode B stream: value counts do not match the exact-vertex mask",
            ));
        }
        let raw = upload(stream, &parts.raw)?;
        let codes = upload(stream, &parts.codes)?;
        let mut d = stream.launch_builder(&self.decode);
        d.arg(&ny64)
            .arg(&nx64)
            .arg(&xi)
            .arg(&ids)
            .arg(&mask)
            .arg(&raw)
            .arg(&codes)
            .arg(&offsets)
            .arg(du)
            .arg(dv);
        unsafe { d.launch(per_tile(nt)?) }.map_err(driver)?;
        Ok(())
    }
}
