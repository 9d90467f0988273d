//! rANS coding on an [`Exec`] (`kernels/rans.cu`) in the CPU's format, the
//! headers on the host by the CPU's code (`codec::gpu_host::rans`), the
//! symbols never crossing to the host:
//! - `encode`: plane histograms, sparse planes' entries and every block's
//!   payload on the executor; only the histograms (8 KiB), sparse entries
//!   (a plane is sparse only when they are few) and the payload come back,
//!   and the bytes are `codec::encode_u32(Coder::Rans, ..)`'s.
//! - `decode_into`: every block decoded on the executor, with
//!   `codec::decode_u32`'s symbols and errors.

use super::exec::{Buf, Exec, View};
use super::huffman::H_MERGE;
use super::launch::kernels;
use super::scan;
use crate::codec::gpu_host::rans::{
    block_status, device_assemble, device_encoding, device_layout, sparse_body, DeviceEncoding,
};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/rans.cu");
const THREADS: u32 = 256;
/// Threads per block of the decoder and the encoder: four warps, one per rANS
/// block (the decoder's warps share the block's table in shared memory).
const WARP_THREADS: u32 = 128;
/// A warp's threads: one per state of a rANS block.
const WARP: usize = 32;
/// Most blocks of the fill and the histogram (grid-stride).
const FILL_BLOCKS: usize = 1024;
/// Counts per histogram block: FZR_PLANES x 256.
const HIST_BINS: usize = 4 * 256;
/// FZR_NO_CODE: a block met a symbol without a frequency.
const NO_CODE: u64 = u64::MAX;

kernels! {
    R_HISTOGRAM = factz_r_histogram(symbols: View<u32>, n: u64, partial: View<u32>);
    R_NONZERO = factz_r_nonzero(symbols: View<u32>, n: u64, shift: u32, flags: View<u32>);
    R_ENTRIES = factz_r_entries(
        symbols: View<u32>, n: u64, shift: u32, slot: View<u64>, entries: View<u64>,
    );
    R_ENCODE = factz_r_encode(
        symbols: View<u32>, n: u64, block_log2: u32, lanes: u32, table: View<u64>, shift: u32,
        scratch: View<u8>, region: u64, n_blocks: u64, lens: View<u64>,
    );
    R_GATHER = factz_r_gather(
        scratch: View<u8>, region: u64, lens: View<u64>, dst: View<u64>, out: View<u8>,
    );
    R_FILL = factz_r_fill(out: View<u32>, n: u64, base: u32);
    R_DECODE = factz_r_decode(
        data: View<u8>, blocks: View<u64>, n_blocks: u64, count: u64, block_log2: u32,
        lanes: u32, packed: View<u32>, shift: u32, out: View<u32>, status: View<u32>,
    );
    R_SPARSE = factz_r_sparse(entries: View<u64>, n: u64, shift: u32, out: View<u32>);
}

/// Every word of `out` set to `value` (`factz_r_fill`, grid-stride).
pub fn fill<E: Exec>(e: &E, out: View<u32>, value: u32) -> Result<()> {
    let n = out.len();
    // SAFETY: out holds n words.
    unsafe {
        R_FILL.launch_items(
            e,
            n.min(FILL_BLOCKS * THREADS as usize),
            THREADS,
            (out, n as u64, value),
        )
    }
}

/// The rANS kernels on one executor.
pub struct RansKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> RansKernels<'_, E> {
    /// `codec::encode_u32(Coder::Rans, symbols)`.
    pub fn encode(&self, symbols: View<u32>) -> Result<Vec<u8>> {
        self.encode_planes(symbols, 4)
    }

    /// `codec::encode_bytes(Coder::Rans, bytes)` of bytes held one per u32
    /// (a value past 255 is an error).
    pub fn encode_bytes(&self, bytes: View<u32>) -> Result<Vec<u8>> {
        self.encode_planes(bytes, 1)
    }

    fn encode_planes(&self, symbols: View<u32>, planes: u32) -> Result<Vec<u8>> {
        let n = symbols.len();
        let hists = self.histograms(symbols)?;
        if hists[planes as usize..].iter().any(|h| h[0] as usize != n) {
            return Err(Error::internal(
                "rans: a byte stream holds a value past 255",
            ));
        }
        let plan = device_encoding(&hists, n, planes, |shift, nnz, budget| {
            self.sparse(symbols, shift, nnz, budget)
        })?;
        let payloads = self.encode_rans_planes(symbols, &plan)?;
        device_assemble(&plan, &payloads)
    }

    /// Counts of each byte value in each of the four planes.
    fn histograms(&self, symbols: View<u32>) -> Result<Vec<[u64; 256]>> {
        let e = self.exec;
        let n = symbols.len();
        let mut out = vec![[0u64; 256]; 4];
        if n == 0 {
            return Ok(out);
        }
        let blocks = n.div_ceil(THREADS as usize).min(FILL_BLOCKS);
        let partial = Buf::<E, u32>::zeros(e, blocks * HIST_BINS)?;
        let counts = Buf::<E, u64>::zeros(e, HIST_BINS)?;
        // SAFETY: partial holds blocks x HIST_BINS; then huffman.cu's merge,
        // counts holding bins.
        unsafe {
            R_HISTOGRAM.launch(
                e,
                blocks as u32,
                THREADS,
                (symbols, n as u64, partial.view()),
            )?;
            H_MERGE.launch_items(
                e,
                HIST_BINS,
                THREADS,
                (
                    partial.view(),
                    blocks as u32,
                    HIST_BINS as u32,
                    counts.view(),
                ),
            )?;
        }
        let counts = counts.read(e, 0..HIST_BINS)?;
        for (h, c) in out.iter_mut().zip(counts.chunks_exact(256)) {
            h.copy_from_slice(c);
            // The kernel skips zero bytes: the rest of the symbols.
            let nonzero: u64 = h[1..].iter().sum();
            h[0] = (n as u64)
                .checked_sub(nonzero)
                .ok_or_else(|| Error::internal("rans kernels: more plane bytes than symbols"))?;
        }
        Ok(out)
    }

    /// The body of the sparse plane at `shift` (`nnz` entries), or None past
    /// `budget` bytes: the entries compacted here, the body written by the
    /// CPU's `sparse_body`.
    fn sparse(
        &self,
        symbols: View<u32>,
        shift: u32,
        nnz: u64,
        budget: usize,
    ) -> Result<Option<Vec<u8>>> {
        let e = self.exec;
        let n = symbols.len();
        let flags = Buf::<E, u32>::zeros(e, n)?;
        let n64 = n as u64;
        // SAFETY: flags holds n.
        unsafe { R_NONZERO.launch_items(e, n, THREADS, (symbols, n64, shift, flags.view()))? };
        let (slot, total) = scan::exclusive(e, flags.view(), n)?;
        if total != nnz {
            return Err(Error::internal(format!(
                "rans kernels: {total} entries in a plane the histogram gives {nnz}"
            )));
        }
        let entries = Buf::<E, u64>::zeros(e, nnz as usize)?;
        // SAFETY: the slots of the nonzero symbols are below their count, nnz.
        unsafe {
            R_ENTRIES.launch_items(
                e,
                n,
                THREADS,
                (symbols, n64, shift, slot.view(), entries.view()),
            )?
        };
        let entries = entries.read(e, 0..nnz as usize)?;
        Ok(sparse_body(
            entries.iter().map(|&x| (x >> 8, x as u8)),
            nnz,
            budget,
        ))
    }

    /// The plan's rANS planes, each as its blocks' payload lengths and the
    /// payloads back to back.
    /// Every plane's blocks are coded before the lengths come back, and
    /// gathered in one pass: two waits on the executor, whatever the planes.
    fn encode_rans_planes(
        &self,
        symbols: View<u32>,
        plan: &DeviceEncoding,
    ) -> Result<Vec<(Vec<u64>, Vec<u8>)>> {
        let e = self.exec;
        let n = symbols.len();
        let (planes, log2, lanes) = (&plan.rans, plan.block_log2, plan.lanes);
        let n_blocks = n.div_ceil(1 << log2);
        if planes.is_empty() || n_blocks == 0 {
            return Ok(vec![(Vec::new(), Vec::new()); planes.len()]);
        }
        let all = planes.len() * n_blocks;
        // A block's states and at most one word per symbol; plane p's region
        // of block b is region p n_blocks + b.
        let region = 4 * lanes as usize + 2 * n.min(1 << log2);
        let scratch = Buf::<E, u8>::zeros(e, all * region)?;
        let tables: Vec<u64> = planes.iter().flat_map(|(_, t)| t.iter().copied()).collect();
        let table_len = tables.len() / planes.len();
        let tables = Buf::from(e, &tables)?;
        let lens = Buf::<E, u64>::zeros(e, all)?;
        for (p, &(shift, _)) in planes.iter().enumerate() {
            // SAFETY: plane p's table holds 3 x 256 from p x table_len, its
            // regions of scratch and its lens start at its first block.
            unsafe {
                R_ENCODE.launch_items(
                    e,
                    n_blocks * WARP,
                    WARP_THREADS,
                    (
                        symbols,
                        n as u64,
                        log2,
                        lanes,
                        tables.view().offset(p * table_len),
                        shift,
                        scratch.view().offset(p * n_blocks * region),
                        region as u64,
                        n_blocks as u64,
                        lens.view().offset(p * n_blocks),
                    ),
                )?
            };
        }
        let lens_host = lens.read(e, 0..all)?;
        if lens_host
            .iter()
            .any(|&l| l == NO_CODE || l as usize > region)
        {
            return Err(Error::internal(
                "rans kernels: a symbol without a frequency",
            ));
        }
        let mut dst = Vec::with_capacity(all);
        let mut total = 0u64;
        for &l in &lens_host {
            dst.push(total);
            total += l;
        }
        let dst = Buf::from(e, &dst)?;
        let out = Buf::<E, u8>::zeros(e, total as usize)?;
        let longest = lens_host.iter().copied().max().unwrap_or(0) as usize;
        // SAFETY: seen from region `first`, each payload lies within its
        // region and, at dst, within out (the lengths' sum).
        unsafe {
            R_GATHER.launch_rows(e, all, longest, THREADS, |first| {
                (
                    scratch.view().offset(first * region),
                    region as u64,
                    lens.view().offset(first),
                    dst.view().offset(first),
                    out.view(),
                )
            })?
        };
        let out = out.read(e, 0..total as usize)?;
        let mut at = 0usize;
        Ok(lens_host
            .chunks_exact(n_blocks)
            .map(|l| {
                let len = l.iter().sum::<u64>() as usize;
                at += len;
                (l.to_vec(), out[at - len..at].to_vec())
            })
            .collect())
    }

    /// `codec::decode_u32(Coder::Rans, data, out.len())` into `out`.
    pub fn decode_into(&self, data: &[u8], out: View<u32>) -> Result<()> {
        self.decode_planes(data, out, 4)
    }

    /// `codec::decode_bytes(Coder::Rans, data, out.len())` into `out`, one
    /// byte per u32 (a stream of more than one plane is refused as the byte
    /// decoder refuses it).
    pub fn decode_bytes_into(&self, data: &[u8], out: View<u32>) -> Result<()> {
        self.decode_planes(data, out, 1)
    }

    fn decode_planes(&self, data: &[u8], out: View<u32>, max_planes: u32) -> Result<()> {
        let e = self.exec;
        let count = out.len();
        let layout = device_layout(data, count, max_planes)?;
        let n64 = count as u64;
        fill(e, out, layout.base)?;
        if let Some(first) = layout.rans.first() {
            // Every plane's blocks are decoded before the statuses come back:
            // one wait on the executor, whatever the planes.
            let n_blocks = first.blocks.len();
            let planes = layout.rans.len();
            let stream = Buf::from(e, data)?;
            let blocks: Vec<u64> = layout
                .rans
                .iter()
                .flat_map(|p| p.blocks.iter().flatten().copied())
                .collect();
            let blocks = Buf::from(e, &blocks)?;
            let tables: Vec<u32> = layout
                .rans
                .iter()
                .flat_map(|p| p.packed.iter().copied())
                .collect();
            let table_len = first.packed.len();
            let tables = Buf::from(e, &tables)?;
            // A value no block ends with, so a block the kernel skipped shows.
            let status = Buf::from(e, &vec![u32::MAX; planes * n_blocks])?;
            for (p, plane) in layout.rans.iter().enumerate() {
                if plane.blocks.len() != n_blocks || plane.packed.len() != table_len {
                    return Err(Error::internal("rans: planes of different shapes"));
                }
                // SAFETY: out holds count symbols, the blocks' ranges lie in
                // data (the host parsed them from it), plane p's blocks,
                // table (4096 slots) and statuses start at its offsets.
                unsafe {
                    R_DECODE.launch_items(
                        e,
                        n_blocks * WARP,
                        WARP_THREADS,
                        (
                            stream.view(),
                            blocks.view().offset(2 * p * n_blocks),
                            n_blocks as u64,
                            n64,
                            layout.block_log2,
                            layout.lanes,
                            tables.view().offset(p * table_len),
                            plane.shift,
                            out,
                            status.view().offset(p * n_blocks),
                        ),
                    )?
                };
            }
            for s in status.read(e, 0..planes * n_blocks)? {
                block_status(s)?;
            }
        }
        for (shift, entries) in &layout.sparse {
            let flat: Vec<u64> = entries
                .iter()
                .flat_map(|&(i, b)| [i, u64::from(b)])
                .collect();
            let flat = Buf::from(e, &flat)?;
            // SAFETY: the entries' indices are below count (device_layout checked).
            unsafe {
                R_SPARSE.launch_items(
                    e,
                    entries.len(),
                    THREADS,
                    (flat.view(), entries.len() as u64, *shift, out),
                )?
            };
        }
        Ok(())
    }

    /// `codec::decode_u32(Coder::Rans, data, count)` through [`Self::decode_into`].
    pub fn decode(&self, data: &[u8], count: usize) -> Result<Vec<u32>> {
        let out = Buf::<E, u32>::zeros(self.exec, count)?;
        self.decode_into(data, out.view())?;
        out.read(self.exec, 0..count)
    }
}
