//! Mode S (speculative) on the device: `kernels/mode_s.cu` decides every
//! vertex as `speculative::encode` does (plain path, no bound caps) and
//! replays `speculative::decode`, bit for bit. The host drives the schedule:
//! one launch per kernel and per (step, phase), the same sequence as
//! kernels/shim/mode_s_host.cpp runs in CI; `field::gpu_ref_s` writes the
//! per-vertex decisions into Parts in the CPU's order.

use super::{driver, upload, zeros};
use crate::error::{Error, Result};
use crate::field::gpu_ref_s::{self, PHASES};
use crate::field::parts::Parts;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../kernels/mode_s.cu");
const BLOCK: u32 = 128;
/// Grid cap: the kernels loop over their items with a grid stride.
const MAX_BLOCKS: usize = 1 << 20;

/// PTX of the mode S kernels ([`super::compile`]: `--fmad=false`, a virtual architecture).
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::compile(SOURCE, "mode_s.cu", arch)
}

/// Enough whole blocks for `items` (at least one; grid-stride beyond the cap).
fn cfg(items: usize) -> LaunchConfig {
    let blocks = items.div_ceil(BLOCK as usize).clamp(1, MAX_BLOCKS) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One thread (the anchor passes are sequential).
const ONE: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (32, 1, 1),
    shared_mem_bytes: 0,
};

/// Targets of (step, phase) in an ny x nx field.
fn targets(ny: usize, nx: usize, s: usize, phase: u32) -> usize {
    let (r0, rs, c0, cs) = gpu_ref_s::axes(s, phase);
    (r0..ny).step_by(rs).len() * (c0..nx).step_by(cs).len()
}

/// What the encoder leaves: the stream parts, every triangle's signature byte
/// (`topology::Sig`), and the reconstructed field (what the decoder returns).
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub parts: Parts,
    pub sigs: Vec<u8>,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
}

/// The per-vertex decisions of the encode kernels, on the host: `exact` (0/1),
/// bound `ids` and `codes` (2 per vertex) as `gpu_ref_s::assemble` takes them,
/// the triangle signatures and the reconstructed field.
#[derive(Debug, Clone, PartialEq)]
pub struct Decisions {
    pub exact: Vec<u8>,
    pub ids: Vec<u8>,
    pub codes: Vec<i32>,
    pub sigs: Vec<u8>,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
}

/// The compiled kernels on one device.
pub struct ModeSKernels {
    ctx: Arc<CudaContext>,
    classify: CudaFunction,
    forced: CudaFunction,
    anchors: CudaFunction,
    phase: CudaFunction,
    apply: CudaFunction,
    decode_anchors: CudaFunction,
    decode_phase: CudaFunction,
}

impl ModeSKernels {
    pub fn new(ctx: Arc<CudaContext>) -> Result<ModeSKernels> {
        let module = ctx.load_module(compile("compute_80")?).map_err(driver)?;
        let f = |name: &str| module.load_function(name).map_err(driver);
        Ok(ModeSKernels {
            classify: f("factz_s_classify")?,
            forced: f("factz_s_forced")?,
            anchors: f("factz_s_anchors")?,
            phase: f("factz_s_phase")?,
            apply: f("factz_s_apply")?,
            decode_anchors: f("factz_s_decode_anchors")?,
            decode_phase: f("factz_s_decode_phase")?,
            ctx,
        })
    }

    /// `speculative::encode(u, v, ny, nx, xi, chunk_of_larger)` on the device.
    pub fn encode(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Encoded> {
        let n = crate::field::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(Error::invalid("u and v must hold ny * nx values each"));
        }
        let stream = self.ctx.default_stream();
        let du = upload(&stream, u)?;
        let dv = upload(&stream, v)?;
        let d = self.encode_device(&stream, &du, &dv, ny, nx, xi, chunk_of_larger)?;
        Ok(Encoded {
            parts: gpu_ref_s::assemble(u, v, ny, nx, &d.exact, &d.ids, &d.codes),
            sigs: d.sigs,
            u: d.u,
            v: d.v,
        })
    }

    /// The kernels of [`Self::encode`] on a field already on the device (`du`,
    /// `dv` of at least ny * nx values), launched on `stream`: the per-vertex
    /// decisions come back (`gpu_ref_s::assemble` turns them into Parts).
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
    ) -> Result<Decisions> {
        let n = crate::field::vertex_count(ny, nx)?;
        if du.len() < n || dv.len() < n {
            return Err(Error::invalid("u and v must hold ny * nx values each"));
        }
        let ntri = 2 * ny.saturating_sub(1) * nx.saturating_sub(1);
        let mut ru = stream.clone_dtod(du).map_err(driver)?;
        let mut rv = stream.clone_dtod(dv).map_err(driver)?;
        let mut nu = stream.clone_dtod(du).map_err(driver)?;
        let mut nv = stream.clone_dtod(dv).map_err(driver)?;
        let mut sigs = zeros::<u8>(stream, ntri)?;
        let mut degenerate = zeros::<u8>(stream, ntri)?;
        let mut exact = zeros::<u8>(stream, n)?;
        let mut ids = zeros::<u8>(stream, n)?;
        let mut codes = zeros::<i32>(stream, 2 * n)?;
        let (ny64, nx64, chunk) = (ny as i64, nx as i64, chunk_of_larger as i32);
        if ntri > 0 {
            let mut l = stream.launch_builder(&self.classify);
            l.arg(du)
                .arg(dv)
                .arg(&ny64)
                .arg(&nx64)
                .arg(&mut sigs)
                .arg(&mut degenerate);
            // SAFETY: (u, v, ny, nx, sigs, degenerate): fields of n, outputs of ntri.
            unsafe { l.launch(cfg(ntri)) }.map_err(driver)?;
        }
        let mut l = stream.launch_builder(&self.forced);
        l.arg(du)
            .arg(dv)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&chunk)
            .arg(&degenerate)
            .arg(&mut exact);
        // SAFETY: (u, v, ny, nx, chunk, degenerate, exact): ntri flags, n outputs.
        unsafe { l.launch(cfg(n)) }.map_err(driver)?;
        let mut l = stream.launch_builder(&self.anchors);
        l.arg(du)
            .arg(dv)
            .arg(&mut ru)
            .arg(&mut rv)
            .arg(&sigs)
            .arg(&mut exact)
            .arg(&mut ids)
            .arg(&mut codes)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&xi);
        // SAFETY: the kernel's signature in order; per-vertex buffers of n (codes 2n).
        unsafe { l.launch(ONE) }.map_err(driver)?;
        for s in gpu_ref_s::steps() {
            let s64 = s as i64;
            for phase in PHASES {
                let t = targets(ny, nx, s, phase);
                if t == 0 {
                    continue;
                }
                let ph = phase as i32;
                let mut l = stream.launch_builder(&self.phase);
                l.arg(du)
                    .arg(dv)
                    .arg(&ru)
                    .arg(&rv)
                    .arg(&sigs)
                    .arg(&mut exact)
                    .arg(&mut ids)
                    .arg(&mut codes)
                    .arg(&mut nu)
                    .arg(&mut nv)
                    .arg(&ny64)
                    .arg(&nx64)
                    .arg(&xi)
                    .arg(&s64)
                    .arg(&ph);
                // SAFETY: as the anchors, plus the staging buffers nu, nv of n.
                unsafe { l.launch(cfg(t)) }.map_err(driver)?;
                let mut l = stream.launch_builder(&self.apply);
                l.arg(&mut ru)
                    .arg(&mut rv)
                    .arg(&nu)
                    .arg(&nv)
                    .arg(&ny64)
                    .arg(&nx64)
                    .arg(&s64)
                    .arg(&ph);
                // SAFETY: (ru, rv, nu, nv, ny, nx, s, phase), buffers of n.
                unsafe { l.launch(cfg(t)) }.map_err(driver)?;
            }
        }
        let back = |b: &CudaSlice<u8>, len: usize| -> Result<Vec<u8>> {
            let mut h = stream.clone_dtoh(b).map_err(driver)?;
            h.truncate(len);
            Ok(h)
        };
        let exact = back(&exact, n)?;
        let ids = back(&ids, n)?;
        let sigs = back(&sigs, ntri)?;
        let mut codes = stream.clone_dtoh(&codes).map_err(driver)?;
        codes.truncate(2 * n);
        let mut ru = stream.clone_dtoh(&ru).map_err(driver)?;
        let mut rv = stream.clone_dtoh(&rv).map_err(driver)?;
        ru.truncate(n);
        rv.truncate(n);
        Ok(Decisions {
            exact,
            ids,
            codes,
            sigs,
            u: ru,
            v: rv,
        })
    }

    /// `speculative::decode(parts, ny, nx, xi, ..)` on the device: (u, v).
    pub fn decode(
        &self,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let n = crate::field::vertex_count(ny, nx)?;
        let stream = self.ctx.default_stream();
        let mut du = zeros::<f32>(&stream, n)?;
        let mut dv = zeros::<f32>(&stream, n)?;
        self.decode_device(&stream, parts, ny, nx, xi, &mut du, &mut dv)?;
        let mut u = stream.clone_dtoh(&du).map_err(driver)?;
        let mut v = stream.clone_dtoh(&dv).map_err(driver)?;
        u.truncate(n);
        v.truncate(n);
        Ok((u, v))
    }

    /// [`Self::decode`] into device buffers of at least ny * nx values, on
    /// `stream`: the parts go up, the field stays on the device.
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
        if du.len() < n || dv.len() < n {
            return Err(Error::invalid("u and v must hold ny * nx values each"));
        }
        let slot = gpu_ref_s::decode_slots(parts, ny, nx)?;
        // The kernels write every vertex; zeroing first keeps a caller's
        // buffer defined even if one were skipped (the host path's zeros).
        stream.memset_zeros(du).map_err(driver)?;
        stream.memset_zeros(dv).map_err(driver)?;
        let exact: Vec<u8> = parts.exact.iter().map(|&e| e as u8).collect();
        let dexact = upload(stream, &exact)?;
        // Raw words go up as u32; the kernel reads them as floats (a bit copy).
        let draw = upload(stream, &parts.raw)?;
        let dids = upload(stream, &parts.ids)?;
        let dcodes = upload(stream, &parts.codes)?;
        let dslot = upload(stream, &slot)?;
        let mut nu = zeros::<f32>(stream, n)?;
        let mut nv = zeros::<f32>(stream, n)?;
        let (ny64, nx64) = (ny as i64, nx as i64);
        let mut l = stream.launch_builder(&self.decode_anchors);
        l.arg(&dexact)
            .arg(&draw)
            .arg(&dids)
            .arg(&dcodes)
            .arg(&dslot)
            .arg(&mut *du)
            .arg(&mut *dv)
            .arg(&ny64)
            .arg(&nx64)
            .arg(&xi);
        // SAFETY: the kernel's signature in order (raw: 32-bit words read as
        // float); slot indexes raw pairs and coded entries in range (checked).
        unsafe { l.launch(ONE) }.map_err(driver)?;
        for s in gpu_ref_s::steps() {
            let s64 = s as i64;
            for phase in PHASES {
                let t = targets(ny, nx, s, phase);
                if t == 0 {
                    continue;
                }
                let ph = phase as i32;
                let mut l = stream.launch_builder(&self.decode_phase);
                l.arg(&dexact)
                    .arg(&draw)
                    .arg(&dids)
                    .arg(&dcodes)
                    .arg(&dslot)
                    .arg(&*du)
                    .arg(&*dv)
                    .arg(&mut nu)
                    .arg(&mut nv)
                    .arg(&ny64)
                    .arg(&nx64)
                    .arg(&xi)
                    .arg(&s64)
                    .arg(&ph);
                // SAFETY: as the anchors, plus the staging buffers nu, nv of n.
                unsafe { l.launch(cfg(t)) }.map_err(driver)?;
                let mut l = stream.launch_builder(&self.apply);
                l.arg(&mut *du)
                    .arg(&mut *dv)
                    .arg(&nu)
                    .arg(&nv)
                    .arg(&ny64)
                    .arg(&nx64)
                    .arg(&s64)
                    .arg(&ph);
                // SAFETY: (u, v, nu, nv, ny, nx, s, phase), buffers of n.
                unsafe { l.launch(cfg(t)) }.map_err(driver)?;
            }
        }
        Ok(())
    }
}
