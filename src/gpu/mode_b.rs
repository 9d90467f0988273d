//! Mode B's bound derivation on the device: `kernels/mode_b_bounds.cu`, whose
//! outputs equal the CPU's (`field::gpu_ref::mode_b_ids`) bit for bit; the
//! same source runs on the host in CI through `kernels/shim`.

use super::driver;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, LaunchConfig, PushKernelArg};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../kernels/mode_b_bounds.cu");
const ENTRY: &str = "factz_b_bound_ids";
const TILE: usize = 32;

/// PTX of the bound kernel ([`super::compile`]: `--fmad=false`, a virtual architecture).
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::compile(SOURCE, "mode_b_bounds.cu", arch)
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

/// The compiled kernel on one device.
pub struct BoundKernel {
    ctx: Arc<CudaContext>,
    func: CudaFunction,
}

impl BoundKernel {
    pub fn new(ctx: Arc<CudaContext>) -> Result<BoundKernel> {
        let module = ctx.load_module(compile("compute_80")?).map_err(driver)?;
        let func = module.load_function(ENTRY).map_err(driver)?;
        Ok(BoundKernel { ctx, func })
    }

    /// Runs the bound derivation on `u`, `v` (row-major `ny x nx`) under the
    /// absolute bound `xi`, from host memory (one upload, one download).
    pub fn run(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<ModeBIds> {
        let n = crate::field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(Error::invalid("u and v must hold ny * nx values each"));
        }
        let (tx, ty) = (nx.div_ceil(TILE), ny.div_ceil(TILE));
        let grid_dim = (
            u32::try_from(tx).map_err(|_| Error::unsupported("field too wide for one launch"))?,
            u32::try_from(ty)
                .ok()
                .filter(|&y| y <= 65535)
                .ok_or_else(|| Error::unsupported("field too tall for one launch"))?,
            1,
        );
        let stream = self.ctx.default_stream();
        let du = stream.clone_htod(u).map_err(driver)?;
        let dv = stream.clone_htod(v).map_err(driver)?;
        let mut ids = stream.alloc_zeros::<u8>(2 * n).map_err(driver)?;
        let mut tiles = stream.alloc_zeros::<u8>(2 * tx * ty).map_err(driver)?;
        let mut forced = stream.alloc_zeros::<u32>(ny * tx).map_err(driver)?;
        let mut exact = stream.alloc_zeros::<u32>(ny * tx).map_err(driver)?;
        let (ny64, nx64, chunk) = (ny as i64, nx as i64, chunk_of_larger as i32);
        let cfg = LaunchConfig {
            grid_dim,
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.func);
        launch
            .arg(&du)
            .arg(&dv)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&xi)
            .arg(&chunk)
            .arg(&mut ids)
            .arg(&mut tiles)
            .arg(&mut forced)
            .arg(&mut exact);
        // SAFETY: the arguments match the kernel's signature in order and type,
        // and every output buffer has the length the kernel writes.
        unsafe { launch.launch(cfg) }.map_err(driver)?;
        let pairs = |b: Vec<u8>| b.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
        Ok(ModeBIds {
            vertex: pairs(stream.clone_dtoh(&ids).map_err(driver)?),
            tile: pairs(stream.clone_dtoh(&tiles).map_err(driver)?),
            forced_mask: stream.clone_dtoh(&forced).map_err(driver)?,
            exact_mask: stream.clone_dtoh(&exact).map_err(driver)?,
        })
    }
}
