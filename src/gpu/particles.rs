//! The particle correction's data-parallel parts on an [`Exec`] (a device,
//! or the host build of the kernels in tests): `kernels/particles.cu` bins
//! particles into the CPU grid's cells and finds the vulnerable pairs, in the
//! CPU's order and bit for bit (`particles::vulnerable::pairs`), and compacts
//! edits. [`GpuCorrection`] puts these and the optimiser (`super::descent`)
//! into `particles::compress`.

use super::descent;
use super::exec::{Buf, Exec, Plain, View};
use super::launch::{kernels, Elem};
use crate::error::{Error, Result};
use crate::kernels::{MAX_NEIGHBOURS, RADIX_BITS};
use crate::particles::correct::{Corrector, Descended, Options, Problem};
use crate::particles::geometry::Space;
use crate::particles::gpu_host::{self, Bins, GridGeometry};
use crate::particles::vulnerable::Pair;

pub const SOURCE: &str = include_str!("../../kernels/particles.cu");
/// Threads per block (the kernels take any multiple of 32 up to 1024).
const BLOCK: u32 = 256;
/// Radix digits per pass (FZK_RADIX_DIGITS).
const DIGITS: usize = 1 << RADIX_BITS;
/// Forward-neighbour slots per cell (FZK_MAX_NEIGHBOURS).
const MAX_NB: usize = MAX_NEIGHBOURS as usize;

// SAFETY: GridGeometry is #[repr(C)], three u64 then seven f64 (no padding),
// the kernel's `FzpGrid` field for field; every bit pattern is valid.
unsafe impl Plain for GridGeometry {
    const ELEM: Elem = Elem::Struct(std::mem::size_of::<GridGeometry>());
}

kernels! {
    P_BBOX = factz_p_bbox(pos: View<f32>, n: u64, part: View<f32>);
    P_CELL_KEYS = factz_p_cell_keys(
        pos: View<f32>, n: u64, grid: View<GridGeometry>, key: View<u64>, finite: View<u64>,
    );
    P_COMPACT_FINITE = factz_p_compact_finite(
        key: View<u64>, finite: View<u64>, slot: View<u64>, n: u64, key_out: View<u64>,
        idx_out: View<u32>,
    );
    P_RADIX_COUNT = factz_p_radix_count(key: View<u64>, m: u64, shift: u32, counts: View<u64>);
    P_RADIX_SCATTER = factz_p_radix_scatter(
        key: View<u64>, idx: View<u32>, m: u64, shift: u32, offsets: View<u64>,
        key_out: View<u64>, idx_out: View<u32>,
    );
    P_CELL_HEADS = factz_p_cell_heads(key: View<u64>, m: u64, head: View<u64>);
    P_CELLS = factz_p_cells(
        key: View<u64>, head: View<u64>, slot: View<u64>, m: u64, cell_key: View<u64>,
        cell_start: View<u64>,
    );
    P_CELL_UNITS = factz_p_cell_units(
        cell_key: View<u64>, cell_start: View<u64>, ncell: u64, grid: View<GridGeometry>,
        nb: View<u32>, nb_count: View<u32>, units: View<u64>,
    );
    P_PAIR_COUNT = factz_p_pair_count(
        pos: View<f32>, order: View<u32>, cell_start: View<u64>, ncell: u64, nb: View<u32>,
        nb_count: View<u32>, unit_start: View<u64>, nunits: u64, period: f64, lo2: f64,
        hi2: f64, count: View<u64>,
    );
    P_PAIR_FILL = factz_p_pair_fill(
        pos: View<f32>, order: View<u32>, cell_start: View<u64>, ncell: u64, nb: View<u32>,
        nb_count: View<u32>, unit_start: View<u64>, nunits: u64, period: f64, lo2: f64,
        hi2: f64, b2: f64, pair_start: View<u64>, pi: View<u32>, pj: View<u32>,
        plinked: View<u8>,
    );
    P_EDIT_FLAGS = factz_p_edit_flags(
        codes: View<i32>, exact: View<u8>, ncoord: u64, flag: View<u64>, mask: View<u32>,
    );
    P_EDIT_SCATTER = factz_p_edit_scatter(
        codes: View<i32>, flag: View<u64>, slot: View<u64>, ncoord: u64, coord_out: View<u64>,
        zz_out: View<u32>,
    );
}

/// Compacted edits: (coordinate `3 * particle + axis`, zig-zag code) in
/// coordinate order, and the edit mask's bytes (`codec::planes::pack_bits`).
pub type CompactEdits = (Vec<(u64, u32)>, Vec<u8>);

/// The binning's buffers: finite particles by cell, occupied cells.
struct DeviceBins<E: Exec> {
    order: Buf<E, u32>,
    m: usize,
    cell_key: Buf<E, u64>,
    cell_start: Buf<E, u64>,
    ncell: usize,
}

/// The particle kernels on one executor.
pub struct ParticleKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<'e, E: Exec> ParticleKernels<'e, E> {
    /// Exclusive scan of `input[0..n)` into a new buffer of n + 1; returns it and the total.
    fn scan(&self, input: &Buf<E, u64>, n: usize) -> Result<(Buf<E, u64>, u64)> {
        super::scan::exclusive(self.exec, input.view(), n)
    }

    fn bin(&self, pos: &Buf<E, f32>, n: usize, g: &Buf<E, GridGeometry>) -> Result<DeviceBins<E>> {
        let e = self.exec;
        let n64 = n as u64;
        let key = Buf::<E, u64>::zeros(e, n)?;
        let finite = Buf::<E, u64>::zeros(e, n)?;
        // SAFETY: pos holds 3n floats, key and finite n entries, g one grid.
        unsafe {
            P_CELL_KEYS.launch_items(
                e,
                n,
                BLOCK,
                (pos.view(), n64, g.view(), key.view(), finite.view()),
            )?
        };
        let (slot, m) = self.scan(&finite, n)?;
        let m = m as usize;
        let m64 = m as u64;
        let mut k0 = Buf::<E, u64>::zeros(e, m)?;
        let mut i0 = Buf::<E, u32>::zeros(e, m)?;
        // SAFETY: inputs of n (slot n + 1), outputs of m = the finite count.
        unsafe {
            P_COMPACT_FINITE.launch_items(
                e,
                n,
                BLOCK,
                (
                    key.view(),
                    finite.view(),
                    slot.view(),
                    n64,
                    k0.view(),
                    i0.view(),
                ),
            )?
        };
        // Digit passes over the bits of the largest key, nx * ny * nz - 1 < 2^62.
        let dims = g.read(e, 0..1)?[0].dims;
        let top = dims[0] * dims[1] * dims[2] - 1;
        let bits = 64 - top.leading_zeros();
        let blocks = m.div_ceil(BLOCK as usize);
        let mut k1 = Buf::<E, u64>::zeros(e, m)?;
        let mut i1 = Buf::<E, u32>::zeros(e, m)?;
        let counts = Buf::<E, u64>::zeros(e, blocks * DIGITS)?;
        let mut shift = 0u32;
        while shift < bits && m > 0 {
            // SAFETY: keys of m, counts of 256 per block.
            unsafe {
                P_RADIX_COUNT.launch_items(e, m, BLOCK, (k0.view(), m64, shift, counts.view()))?
            };
            let (offsets, _) = self.scan(&counts, blocks * DIGITS)?;
            // SAFETY: same grid as the count; outputs of m.
            unsafe {
                P_RADIX_SCATTER.launch_items(
                    e,
                    m,
                    BLOCK,
                    (
                        k0.view(),
                        i0.view(),
                        m64,
                        shift,
                        offsets.view(),
                        k1.view(),
                        i1.view(),
                    ),
                )?
            };
            std::mem::swap(&mut k0, &mut k1);
            std::mem::swap(&mut i0, &mut i1);
            shift += RADIX_BITS;
        }
        let head = Buf::<E, u64>::zeros(e, m)?;
        // SAFETY: keys and heads of m.
        unsafe { P_CELL_HEADS.launch_items(e, m, BLOCK, (k0.view(), m64, head.view()))? };
        let (hslot, ncell) = self.scan(&head, m)?;
        let ncell = ncell as usize;
        let cell_key = Buf::<E, u64>::zeros(e, ncell)?;
        let cell_start = Buf::<E, u64>::zeros(e, ncell + 1)?;
        // SAFETY: inputs of m (hslot m + 1), outputs of ncell and ncell + 1.
        unsafe {
            P_CELLS.launch_items(
                e,
                m,
                BLOCK,
                (
                    k0.view(),
                    head.view(),
                    hslot.view(),
                    m64,
                    cell_key.view(),
                    cell_start.view(),
                ),
            )?
        };
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
    fn bbox(&self, pos: &Buf<E, f32>, n: usize) -> Result<Option<([f32; 3], [f32; 3])>> {
        let e = self.exec;
        if n == 0 {
            return Ok(None);
        }
        let blocks = n.div_ceil(BLOCK as usize);
        let part = Buf::<E, f32>::zeros(e, 6 * blocks)?;
        // SAFETY: pos holds 3n floats, part six per block.
        unsafe { P_BBOX.launch_items(e, n, BLOCK, (pos.view(), n as u64, part.view()))? };
        let part = part.read(e, 0..6 * blocks)?;
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

    /// The finite particles' bounding box of host positions.
    pub fn bounding_box(&self, pos: &[f32]) -> Result<Option<([f32; 3], [f32; 3])>> {
        self.bbox(&Buf::from(self.exec, pos)?, pos.len() / 3)
    }

    /// The grid of `pos` on geometry `g` (see [`gpu_host::bins`]), from host memory.
    pub fn bins(&self, pos: &[f32], g: &GridGeometry) -> Result<Bins> {
        let e = self.exec;
        let dpos = Buf::from(e, pos)?;
        let b = self.bin(&dpos, pos.len() / 3, &Buf::from(e, &[*g])?)?;
        Ok(Bins {
            order: b.order.read(e, 0..b.m)?,
            keys: b.cell_key.read(e, 0..b.ncell)?,
            start: b.cell_start.read(e, 0..b.ncell + 1)?,
        })
    }

    /// [`crate::particles::vulnerable::pairs`] from host memory.
    pub fn vulnerable_pairs(
        &self,
        pos: &[f32],
        space: Space,
        b: f64,
        xi: f64,
    ) -> Result<Vec<Pair>> {
        let e = self.exec;
        let n = pos.len() / 3;
        let (r, lo2, hi2, b2) = gpu_host::vulnerable_search(b, xi);
        let dpos = Buf::from(e, pos)?;
        let g = gpu_host::grid_geometry(self.bbox(&dpos, n)?, space, r);
        let dg = Buf::from(e, &[g])?;
        let bins = self.bin(&dpos, n, &dg)?;
        let ncell = bins.ncell;
        if ncell == 0 {
            return Ok(Vec::new());
        }
        let nc64 = ncell as u64;
        let nb = Buf::<E, u32>::zeros(e, ncell * MAX_NB)?;
        let nb_count = Buf::<E, u32>::zeros(e, ncell)?;
        let units = Buf::<E, u64>::zeros(e, ncell)?;
        // SAFETY: cells of ncell (starts ncell + 1), nb of 26 per cell.
        unsafe {
            P_CELL_UNITS.launch_items(
                e,
                ncell,
                BLOCK,
                (
                    bins.cell_key.view(),
                    bins.cell_start.view(),
                    nc64,
                    dg.view(),
                    nb.view(),
                    nb_count.view(),
                    units.view(),
                ),
            )?
        };
        let (unit_start, nunits) = self.scan(&units, ncell)?;
        let nunits_us =
            usize::try_from(nunits).map_err(|_| Error::unsupported("too many units"))?;
        let count = Buf::<E, u64>::zeros(e, nunits_us)?;
        // The search's inputs, the first parameters of both pair kernels.
        let (pos, order, cell_start) = (dpos.view(), bins.order.view(), bins.cell_start.view());
        let (nb_d, nb_count_d, unit_start_d) = (nb.view(), nb_count.view(), unit_start.view());
        // SAFETY: the cells' and units' arrays as built above; count of nunits.
        unsafe {
            P_PAIR_COUNT.launch_items(
                e,
                nunits_us,
                BLOCK,
                (
                    pos,
                    order,
                    cell_start,
                    nc64,
                    nb_d,
                    nb_count_d,
                    unit_start_d,
                    nunits,
                    g.period,
                    lo2,
                    hi2,
                    count.view(),
                ),
            )?
        };
        let (pair_start, total) = self.scan(&count, nunits_us)?;
        let total = usize::try_from(total).map_err(|_| Error::unsupported("too many pairs"))?;
        let pi = Buf::<E, u32>::zeros(e, total)?;
        let pj = Buf::<E, u32>::zeros(e, total)?;
        let pl = Buf::<E, u8>::zeros(e, total)?;
        // SAFETY: as the count; pair_start holds nunits + 1, the outputs `total`.
        unsafe {
            P_PAIR_FILL.launch_items(
                e,
                nunits_us,
                BLOCK,
                (
                    pos,
                    order,
                    cell_start,
                    nc64,
                    nb_d,
                    nb_count_d,
                    unit_start_d,
                    nunits,
                    g.period,
                    lo2,
                    hi2,
                    b2,
                    pair_start.view(),
                    pi.view(),
                    pj.view(),
                    pl.view(),
                ),
            )?
        };
        let (pi, pj, pl) = (
            pi.read(e, 0..total)?,
            pj.read(e, 0..total)?,
            pl.read(e, 0..total)?,
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
        let e = self.exec;
        let n = exact.len();
        if codes.len() != 3 * n {
            return Err(Error::invalid("three codes per particle"));
        }
        let nc = 3 * n;
        let nc64 = nc as u64;
        let words = nc.div_ceil(32);
        let ex: Vec<u8> = exact.iter().map(|&x| x as u8).collect();
        let dcodes = Buf::from(e, codes)?;
        let dex = Buf::from(e, &ex)?;
        let flag = Buf::<E, u64>::zeros(e, nc)?;
        let mask = Buf::<E, u32>::zeros(e, words)?;
        // SAFETY: whole warps over every mask word; flags of 3n.
        unsafe {
            P_EDIT_FLAGS.launch_items(
                e,
                words * 32,
                BLOCK,
                (dcodes.view(), dex.view(), nc64, flag.view(), mask.view()),
            )?
        };
        let (slot, kept) = self.scan(&flag, nc)?;
        let kept = kept as usize;
        let coord = Buf::<E, u64>::zeros(e, kept)?;
        let zz = Buf::<E, u32>::zeros(e, kept)?;
        // SAFETY: inputs of 3n (slot 3n + 1), outputs of `kept`.
        unsafe {
            P_EDIT_SCATTER.launch_items(
                e,
                nc,
                BLOCK,
                (
                    dcodes.view(),
                    flag.view(),
                    slot.view(),
                    nc64,
                    coord.view(),
                    zz.view(),
                ),
            )?
        };
        let (coord, zz) = (coord.read(e, 0..kept)?, zz.read(e, 0..kept)?);
        let mut bytes: Vec<u8> = mask
            .read(e, 0..words)?
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        bytes.truncate(nc.div_ceil(8));
        Ok(((0..kept).map(|k| (coord[k], zz[k])).collect(), bytes))
    }
}

/// The correction with its two heavy parts on an executor: the vulnerable-pair
/// search and the optimiser. Pass it to `particles::finish_with`; the stream is
/// the CPU's.
pub struct GpuCorrection<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> Corrector for GpuCorrection<'_, E> {
    fn pairs(&self, orig: &[f32], space: Space, b: f64, xi: f64) -> Result<Vec<Pair>> {
        ParticleKernels { exec: self.exec }.vulnerable_pairs(orig, space, b, xi)
    }

    fn descend(&self, p: &Problem, opts: &Options) -> Result<Descended> {
        descent::descend(self.exec, p, opts)
    }
}
