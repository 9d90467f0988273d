//! The particle correction's data-parallel parts on the device:
//! `kernels/particles.cu` bins particles into the CPU grid's cells and finds
//! the vulnerable pairs, in the CPU's order and bit for bit
//! (`particles::vulnerable::pairs`), and compacts edits. The same source runs
//! on the host in CI through `kernels/shim` (kernels/shim/particles_host.cpp
//! runs the same launch sequence as this file).

use super::{driver, zeros};
use crate::error::{Error, Result};
use crate::particles::geometry::Space;
use crate::particles::gpu_ref::{self, Bins, GridGeometry};
use crate::particles::vulnerable::Pair;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../kernels/particles.cu");
/// Threads per block (FZP_BLOCK in the kernel: the shared arrays hold a block).
const BLOCK: u32 = 256;
/// Threads of the one-block scan.
const SCAN_BLOCK: u32 = 256;
/// Radix digits per pass (FZP_DIGITS).
const DIGITS: usize = 256;
/// Forward-neighbour slots per cell (FZP_MAX_NB).
const MAX_NB: usize = 26;

// SAFETY: GridGeometry is #[repr(C)], three u64 then seven f64, which is the
// kernel's `FzpGrid` field for field; every bit pattern is valid.
unsafe impl DeviceRepr for GridGeometry {}

/// PTX of the particle kernels ([`super::compile`]: `--fmad=false`, so the
/// distances round as the CPU's).
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::compile(SOURCE, "particles.cu", arch)
}

/// One thread per item, whole blocks.
fn cfg(threads: usize) -> Result<LaunchConfig> {
    let blocks = u32::try_from(threads.div_ceil(BLOCK as usize))
        .map_err(|_| Error::unsupported("too many items for one launch"))?;
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Compacted edits: (coordinate `3 * particle + axis`, zig-zag code) in
/// coordinate order, and the edit mask's bytes (`codec::planes::pack_bits`).
pub type CompactEdits = (Vec<(u64, u32)>, Vec<u8>);

/// The compiled kernels on one device.
pub struct ParticleKernels {
    ctx: Arc<CudaContext>,
    scan: CudaFunction,
    bbox: CudaFunction,
    cell_keys: CudaFunction,
    compact_finite: CudaFunction,
    radix_count: CudaFunction,
    radix_scatter: CudaFunction,
    cell_heads: CudaFunction,
    cells: CudaFunction,
    cell_units: CudaFunction,
    pair_count: CudaFunction,
    pair_fill: CudaFunction,
    edit_flags: CudaFunction,
    edit_scatter: CudaFunction,
}

/// The binning's device buffers: finite particles by cell, occupied cells.
struct DeviceBins {
    order: CudaSlice<u32>,
    m: usize,
    cell_key: CudaSlice<u64>,
    cell_start: CudaSlice<u64>,
    ncell: usize,
}

impl ParticleKernels {
    pub fn new(ctx: Arc<CudaContext>) -> Result<ParticleKernels> {
        let module = ctx.load_module(compile("compute_80")?).map_err(driver)?;
        let f = |name: &str| module.load_function(name).map_err(driver);
        Ok(ParticleKernels {
            scan: f("factz_p_scan")?,
            bbox: f("factz_p_bbox")?,
            cell_keys: f("factz_p_cell_keys")?,
            compact_finite: f("factz_p_compact_finite")?,
            radix_count: f("factz_p_radix_count")?,
            radix_scatter: f("factz_p_radix_scatter")?,
            cell_heads: f("factz_p_cell_heads")?,
            cells: f("factz_p_cells")?,
            cell_units: f("factz_p_cell_units")?,
            pair_count: f("factz_p_pair_count")?,
            pair_fill: f("factz_p_pair_fill")?,
            edit_flags: f("factz_p_edit_flags")?,
            edit_scatter: f("factz_p_edit_scatter")?,
            ctx,
        })
    }

    /// Exclusive scan of `input[0..n)` into a new buffer of n + 1; returns it and the total.
    fn scan(
        &self,
        stream: &Arc<CudaStream>,
        input: &CudaSlice<u64>,
        n: usize,
    ) -> Result<(CudaSlice<u64>, u64)> {
        let mut out = zeros::<u64>(stream, n + 1)?;
        let n64 = n as u64;
        let mut l = stream.launch_builder(&self.scan);
        l.arg(input).arg(&n64).arg(&mut out);
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (SCAN_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const u64* in, u64 n, u64* out) with in >= n and out >= n + 1 entries.
        unsafe { l.launch(one) }.map_err(driver)?;
        let total = stream.clone_dtoh(&out.slice(n..n + 1)).map_err(driver)?[0];
        Ok((out, total))
    }

    fn bin(
        &self,
        stream: &Arc<CudaStream>,
        pos: &CudaSlice<f32>,
        n: usize,
        g: &GridGeometry,
    ) -> Result<DeviceBins> {
        let n64 = n as u64;
        let mut key = zeros::<u64>(stream, n)?;
        let mut finite = zeros::<u64>(stream, n)?;
        if n > 0 {
            let mut l = stream.launch_builder(&self.cell_keys);
            l.arg(pos).arg(&n64).arg(g).arg(&mut key).arg(&mut finite);
            // SAFETY: pos holds 3n floats, key and finite n entries.
            unsafe { l.launch(cfg(n)?) }.map_err(driver)?;
        }
        let (slot, m) = self.scan(stream, &finite, n)?;
        let m = m as usize;
        let m64 = m as u64;
        let mut k0 = zeros::<u64>(stream, m)?;
        let mut i0 = zeros::<u32>(stream, m)?;
        if n > 0 {
            let mut l = stream.launch_builder(&self.compact_finite);
            l.arg(&key)
                .arg(&finite)
                .arg(&slot)
                .arg(&n64)
                .arg(&mut k0)
                .arg(&mut i0);
            // SAFETY: inputs of n (slot n + 1), outputs of m = the finite count.
            unsafe { l.launch(cfg(n)?) }.map_err(driver)?;
        }
        // Digit passes over the bits of the largest key, nx * ny * nz - 1 < 2^62.
        let top = g.dims[0] * g.dims[1] * g.dims[2] - 1;
        let bits = 64 - top.leading_zeros();
        let blocks = m.div_ceil(BLOCK as usize);
        let mut k1 = zeros::<u64>(stream, m)?;
        let mut i1 = zeros::<u32>(stream, m)?;
        let mut counts = zeros::<u64>(stream, blocks * DIGITS)?;
        let mut shift = 0u32;
        while shift < bits && m > 0 {
            let mut l = stream.launch_builder(&self.radix_count);
            l.arg(&k0).arg(&m64).arg(&shift).arg(&mut counts);
            // SAFETY: keys of m, counts of 256 per block.
            unsafe { l.launch(cfg(m)?) }.map_err(driver)?;
            let (offsets, _) = self.scan(stream, &counts, blocks * DIGITS)?;
            let mut l = stream.launch_builder(&self.radix_scatter);
            l.arg(&k0)
                .arg(&i0)
                .arg(&m64)
                .arg(&shift)
                .arg(&offsets)
                .arg(&mut k1)
                .arg(&mut i1);
            // SAFETY: same grid as the count; outputs of m.
            unsafe { l.launch(cfg(m)?) }.map_err(driver)?;
            std::mem::swap(&mut k0, &mut k1);
            std::mem::swap(&mut i0, &mut i1);
            shift += 8;
        }
        let mut head = zeros::<u64>(stream, m)?;
        if m > 0 {
            let mut l = stream.launch_builder(&self.cell_heads);
            l.arg(&k0).arg(&m64).arg(&mut head);
            // SAFETY: keys and heads of m.
            unsafe { l.launch(cfg(m)?) }.map_err(driver)?;
        }
        let (hslot, ncell) = self.scan(stream, &head, m)?;
        let ncell = ncell as usize;
        let mut cell_key = zeros::<u64>(stream, ncell)?;
        let mut cell_start = zeros::<u64>(stream, ncell + 1)?;
        if m > 0 {
            let mut l = stream.launch_builder(&self.cells);
            l.arg(&k0)
                .arg(&head)
                .arg(&hslot)
                .arg(&m64)
                .arg(&mut cell_key)
                .arg(&mut cell_start);
            // SAFETY: inputs of m (hslot m + 1), outputs of ncell and ncell + 1.
            unsafe { l.launch(cfg(m)?) }.map_err(driver)?;
        }
        Ok(DeviceBins {
            order: i0,
            m,
            cell_key,
            cell_start,
            ncell,
        })
    }

    /// The finite particles' bounding box (`geometry::bounding_box` as f32
    /// corners): per-block min / max on the device, the blocks folded here.
    fn bbox(
        &self,
        stream: &Arc<CudaStream>,
        pos: &CudaSlice<f32>,
        n: usize,
    ) -> Result<Option<([f32; 3], [f32; 3])>> {
        if n == 0 {
            return Ok(None);
        }
        let blocks = n.div_ceil(BLOCK as usize);
        let mut part = zeros::<f32>(stream, 6 * blocks)?;
        let n64 = n as u64;
        let mut l = stream.launch_builder(&self.bbox);
        l.arg(pos).arg(&n64).arg(&mut part);
        // SAFETY: pos holds 3n floats, part six per block.
        unsafe { l.launch(cfg(n)?) }.map_err(driver)?;
        let part = stream.clone_dtoh(&part).map_err(driver)?;
        let mut out: Option<([f32; 3], [f32; 3])> = None;
        // A block without a finite particle has lo = +inf > hi = -inf.
        for p in part.chunks_exact(6).filter(|p| p[0] <= p[3]) {
            let (lo, hi) = out.get_or_insert(([p[0], p[1], p[2]], [p[3], p[4], p[5]]));
            for a in 0..3 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[3 + a]);
            }
        }
        Ok(out)
    }

    /// The grid of `pos` on geometry `g` (see [`gpu_ref::bins`]), from host memory.
    pub fn bins(&self, pos: &[f32], g: &GridGeometry) -> Result<Bins> {
        let stream = self.ctx.default_stream();
        let n = pos.len() / 3;
        let dpos = stream.clone_htod(pos).map_err(driver)?;
        let b = self.bin(&stream, &dpos, n, g)?;
        let mut order = stream.clone_dtoh(&b.order).map_err(driver)?;
        let mut keys = stream.clone_dtoh(&b.cell_key).map_err(driver)?;
        let mut start = stream.clone_dtoh(&b.cell_start).map_err(driver)?;
        order.truncate(b.m);
        keys.truncate(b.ncell);
        start.truncate(b.ncell + 1);
        Ok(Bins { order, keys, start })
    }

    /// [`crate::particles::vulnerable::pairs`] on the device, from host memory.
    pub fn vulnerable_pairs(
        &self,
        pos: &[f32],
        space: Space,
        b: f64,
        xi: f64,
    ) -> Result<Vec<Pair>> {
        let stream = self.ctx.default_stream();
        let n = pos.len() / 3;
        let (r, lo2, hi2, b2) = gpu_ref::vulnerable_search(b, xi);
        let dpos = stream.clone_htod(pos).map_err(driver)?;
        let g = gpu_ref::grid_geometry(self.bbox(&stream, &dpos, n)?, space, r);
        let bins = self.bin(&stream, &dpos, n, &g)?;
        let ncell = bins.ncell;
        if ncell == 0 {
            return Ok(Vec::new());
        }
        let nc64 = ncell as u64;
        let mut nb = zeros::<u32>(&stream, ncell * MAX_NB)?;
        let mut nb_count = zeros::<u32>(&stream, ncell)?;
        let mut units = zeros::<u64>(&stream, ncell)?;
        let mut l = stream.launch_builder(&self.cell_units);
        l.arg(&bins.cell_key)
            .arg(&bins.cell_start)
            .arg(&nc64)
            .arg(&g)
            .arg(&mut nb)
            .arg(&mut nb_count)
            .arg(&mut units);
        // SAFETY: cells of ncell (starts ncell + 1), nb of 26 per cell.
        unsafe { l.launch(cfg(ncell)?) }.map_err(driver)?;
        let (unit_start, nunits) = self.scan(&stream, &units, ncell)?;
        let nunits_us =
            usize::try_from(nunits).map_err(|_| Error::unsupported("too many units"))?;
        let mut count = zeros::<u64>(&stream, nunits_us)?;
        let period = g.period;
        let mut l = stream.launch_builder(&self.pair_count);
        l.arg(&dpos)
            .arg(&bins.order)
            .arg(&bins.cell_start)
            .arg(&nc64)
            .arg(&nb)
            .arg(&nb_count)
            .arg(&unit_start)
            .arg(&nunits)
            .arg(&period)
            .arg(&lo2)
            .arg(&hi2)
            .arg(&mut count);
        // SAFETY: the signature of factz_p_pair_count; count of nunits.
        unsafe { l.launch(cfg(nunits_us)?) }.map_err(driver)?;
        let (pair_start, total) = self.scan(&stream, &count, nunits_us)?;
        let total = usize::try_from(total).map_err(|_| Error::unsupported("too many pairs"))?;
        let mut pi = zeros::<u32>(&stream, total)?;
        let mut pj = zeros::<u32>(&stream, total)?;
        let mut pl = zeros::<u8>(&stream, total)?;
        let mut l = stream.launch_builder(&self.pair_fill);
        l.arg(&dpos)
            .arg(&bins.order)
            .arg(&bins.cell_start)
            .arg(&nc64)
            .arg(&nb)
            .arg(&nb_count)
            .arg(&unit_start)
            .arg(&nunits)
            .arg(&period)
            .arg(&lo2)
            .arg(&hi2)
            .arg(&b2)
            .arg(&pair_start)
            .arg(&mut pi)
            .arg(&mut pj)
            .arg(&mut pl);
        // SAFETY: the signature of factz_p_pair_fill; outputs of `total`.
        unsafe { l.launch(cfg(nunits_us)?) }.map_err(driver)?;
        let (pi, pj, pl) = (
            stream.clone_dtoh(&pi).map_err(driver)?,
            stream.clone_dtoh(&pj).map_err(driver)?,
            stream.clone_dtoh(&pl).map_err(driver)?,
        );
        Ok((0..total)
            .map(|k| Pair {
                i: pi[k],
                j: pj[k],
                linked: pl[k] == 1,
            })
            .collect())
    }

    /// Edit compaction: the per-coordinate codes (`i32::MIN` = none) of n
    /// particles and their exact flags give the kept edits (coordinate, zig-zag
    /// code) in coordinate order and the edit mask's bytes (`pack_bits`).
    pub fn edits(&self, codes: &[i32], exact: &[bool]) -> Result<CompactEdits> {
        let n = exact.len();
        if codes.len() != 3 * n {
            return Err(Error::invalid("three codes per particle"));
        }
        let stream = self.ctx.default_stream();
        let nc = 3 * n;
        let nc64 = nc as u64;
        let words = nc.div_ceil(32);
        let ex: Vec<u8> = exact.iter().map(|&e| e as u8).collect();
        let dcodes = stream.clone_htod(codes).map_err(driver)?;
        let dex = stream.clone_htod(&ex).map_err(driver)?;
        let mut flag = zeros::<u64>(&stream, nc)?;
        let mut mask = zeros::<u32>(&stream, words)?;
        if nc > 0 {
            let mut l = stream.launch_builder(&self.edit_flags);
            l.arg(&dcodes)
                .arg(&dex)
                .arg(&nc64)
                .arg(&mut flag)
                .arg(&mut mask);
            // SAFETY: whole warps over every mask word; flags of 3n.
            unsafe { l.launch(cfg(words * 32)?) }.map_err(driver)?;
        }
        let (slot, kept) = self.scan(&stream, &flag, nc)?;
        let kept = kept as usize;
        let mut coord = zeros::<u64>(&stream, kept)?;
        let mut zz = zeros::<u32>(&stream, kept)?;
        if nc > 0 {
            let mut l = stream.launch_builder(&self.edit_scatter);
            l.arg(&dcodes)
                .arg(&flag)
                .arg(&slot)
                .arg(&nc64)
                .arg(&mut coord)
                .arg(&mut zz);
            // SAFETY: inputs of 3n (slot 3n + 1), outputs of `kept`.
            unsafe { l.launch(cfg(nc)?) }.map_err(driver)?;
        }
        let coord = stream.clone_dtoh(&coord).map_err(driver)?;
        let zz = stream.clone_dtoh(&zz).map_err(driver)?;
        let mut bytes: Vec<u8> = stream
            .clone_dtoh(&mask)
            .map_err(driver)?
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        bytes.truncate(nc.div_ceil(8));
        Ok(((0..kept).map(|k| (coord[k], zz[k])).collect(), bytes))
    }
}
