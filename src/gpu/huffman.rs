//! Huffman coding on the device in the CPU's stream format: `kernels/huffman.cu`
//! counts the symbols and packs / decodes the 2^16-symbol blocks, the host
//! builds the code and the header with the CPU's code (`codec::gpu_ref`), so
//! the bytes equal `codec::encode_u32(Coder::Huffman, ..)`'s. The same source
//! runs on the host in CI through `kernels/shim` (tests/gpu_huffman.rs).

use super::{driver, zeros};
use crate::codec::gpu_ref::{self, Parsed};
use crate::error::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../kernels/huffman.cu");
/// FZH_THREADS and FZH_SHARED_BINS in the source.
const THREADS: u32 = 256;
const SHARED_BINS: u32 = 4096;
/// Blocks of the counting kernels (grid-stride loops).
const COUNT_BLOCKS: u32 = 1024;

/// PTX of the Huffman kernels (integer only; `--fmad=false` as every kernel).
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::compile(SOURCE, "huffman.cu", arch)
}

/// The Huffman kernels on one device.
pub struct HuffmanKernels {
    ctx: Arc<CudaContext>,
    max: CudaFunction,
    histogram: CudaFunction,
    merge: CudaFunction,
    histogram_global: CudaFunction,
    block_bits: CudaFunction,
    offsets: CudaFunction,
    pack: CudaFunction,
    gather: CudaFunction,
    decode: CudaFunction,
}

fn grid(blocks: u64, threads: u32) -> Result<LaunchConfig> {
    let b = u32::try_from(blocks)
        .ok()
        .filter(|&b| b < i32::MAX as u32)
        .ok_or_else(|| Error::unsupported("too many symbols for one launch"))?;
    Ok(LaunchConfig {
        grid_dim: (b.max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}

impl HuffmanKernels {
    pub fn new(ctx: Arc<CudaContext>) -> Result<HuffmanKernels> {
        let module = ctx.load_module(compile("compute_80")?).map_err(driver)?;
        let f = |name: &str| module.load_function(name).map_err(driver);
        Ok(HuffmanKernels {
            max: f("factz_h_max")?,
            histogram: f("factz_h_histogram")?,
            merge: f("factz_h_merge")?,
            histogram_global: f("factz_h_histogram_global")?,
            block_bits: f("factz_h_block_bits")?,
            offsets: f("factz_h_offsets")?,
            pack: f("factz_h_pack")?,
            gather: f("factz_h_gather")?,
            decode: f("factz_h_decode")?,
            ctx,
        })
    }

    /// Per-symbol counts (max symbol + 1 entries) of resident symbols; None
    /// past `gpu_ref::MAX_DENSE_SYMBOL`.
    fn counts(
        &self,
        stream: &Arc<CudaStream>,
        d: &CudaSlice<u32>,
        n: u64,
    ) -> Result<Option<Vec<u64>>> {
        let count_grid = grid(
            n.div_ceil(u64::from(THREADS)).min(u64::from(COUNT_BLOCKS)),
            THREADS,
        )?;
        let mut dmax = zeros::<u32>(stream, 1)?;
        let mut l = stream.launch_builder(&self.max);
        l.arg(d).arg(&n).arg(&mut dmax);
        // SAFETY: arguments match factz_h_max; dmax holds one word.
        unsafe { l.launch(count_grid) }.map_err(driver)?;
        let max = stream.clone_dtoh(&dmax).map_err(driver)?[0];
        if max > gpu_ref::MAX_DENSE_SYMBOL {
            return Ok(None);
        }
        let bins = max + 1;
        let mut bad = zeros::<u32>(stream, 1)?;
        let counts = if bins <= SHARED_BINS {
            let blocks = count_grid.grid_dim.0;
            let mut partial = zeros::<u32>(stream, blocks as usize * bins as usize)?;
            let mut counts = zeros::<u64>(stream, bins as usize)?;
            let mut l = stream.launch_builder(&self.histogram);
            l.arg(d).arg(&n).arg(&bins).arg(&mut partial).arg(&mut bad);
            // SAFETY: arguments match factz_h_histogram; partial holds blocks * bins.
            unsafe { l.launch(count_grid) }.map_err(driver)?;
            let mut l = stream.launch_builder(&self.merge);
            l.arg(&partial).arg(&blocks).arg(&bins).arg(&mut counts);
            // SAFETY: arguments match factz_h_merge; counts holds bins.
            unsafe { l.launch(grid(u64::from(bins.div_ceil(THREADS)), THREADS)?) }
                .map_err(driver)?;
            stream.clone_dtoh(&counts).map_err(driver)?
        } else {
            if n >> 32 != 0 {
                return Err(Error::unsupported(
                    "2^32 or more symbols with a wide alphabet",
                ));
            }
            let mut counts = zeros::<u32>(stream, bins as usize)?;
            let mut l = stream.launch_builder(&self.histogram_global);
            l.arg(d).arg(&n).arg(&bins).arg(&mut counts).arg(&mut bad);
            // SAFETY: arguments match factz_h_histogram_global; counts holds bins.
            unsafe { l.launch(count_grid) }.map_err(driver)?;
            stream
                .clone_dtoh(&counts)
                .map_err(driver)?
                .into_iter()
                .map(u64::from)
                .collect()
        };
        if stream.clone_dtoh(&bad).map_err(driver)?[0] != 0 {
            return Err(Error::internal(
                "huffman kernels: a symbol past the maximum",
            ));
        }
        Ok(Some(counts[..bins as usize].to_vec()))
    }

    /// `codec::encode_u32(Coder::Huffman, symbols)` computed on the device;
    /// `Unsupported` for symbols past `gpu_ref::MAX_DENSE_SYMBOL` (use the CPU).
    pub fn encode(&self, symbols: &[u32]) -> Result<Vec<u8>> {
        let n = symbols.len() as u64;
        if n == 0 {
            return Ok(gpu_ref::assemble(&gpu_ref::code(&[], &[]), &[], &[]));
        }
        let stream = self.ctx.default_stream();
        let d = stream.clone_htod(symbols).map_err(driver)?;
        let dense = self
            .counts(&stream, &d, n)?
            .ok_or_else(|| Error::unsupported("huffman on the GPU: symbols past 2^24"))?;
        let (syms, counts) = gpu_ref::sparse_counts(&dense);
        let code = gpu_ref::code(&syms, &counts);
        let Some(lut) = gpu_ref::lookup(&code) else {
            return Ok(gpu_ref::assemble(&code, &[], &[])); // one distinct symbol
        };
        let log2 = gpu_ref::BLOCK_LOG2;
        let blocks = n.div_ceil(1 << log2);
        let lut_size = lut.len() as u64;
        let dlut = stream.clone_htod(&lut).map_err(driver)?;
        let mut bad = zeros::<u32>(&stream, 1)?;
        let mut bits = zeros::<u64>(&stream, blocks as usize)?;
        let per_block = grid(blocks, THREADS)?;
        let mut l = stream.launch_builder(&self.block_bits);
        l.arg(&d)
            .arg(&n)
            .arg(&log2)
            .arg(&dlut)
            .arg(&lut_size)
            .arg(&mut bits)
            .arg(&mut bad);
        // SAFETY: arguments match factz_h_block_bits; bits holds one entry per block.
        unsafe { l.launch(per_block) }.map_err(driver)?;
        let mut word_off = zeros::<u64>(&stream, blocks as usize + 1)?;
        let mut byte_off = zeros::<u64>(&stream, blocks as usize + 1)?;
        let mut l = stream.launch_builder(&self.offsets);
        l.arg(&bits)
            .arg(&blocks)
            .arg(&mut word_off)
            .arg(&mut byte_off);
        // SAFETY: arguments match factz_h_offsets; both hold blocks + 1 entries.
        unsafe { l.launch(grid(1, 32)?) }.map_err(driver)?;
        let offs = stream.clone_dtoh(&byte_off).map_err(driver)?;
        let total_words = stream.clone_dtoh(&word_off).map_err(driver)?[blocks as usize];
        let mut words = zeros::<u32>(&stream, total_words as usize)?;
        let mut l = stream.launch_builder(&self.pack);
        l.arg(&d)
            .arg(&n)
            .arg(&log2)
            .arg(&dlut)
            .arg(&lut_size)
            .arg(&word_off)
            .arg(&mut words)
            .arg(&mut bad);
        // SAFETY: arguments match factz_h_pack; words holds the scanned word total.
        unsafe { l.launch(per_block) }.map_err(driver)?;
        let total = offs[blocks as usize] as usize;
        let mut out = zeros::<u8>(&stream, total)?;
        let gy = u32::try_from(blocks)
            .ok()
            .filter(|&b| b <= 65535)
            .ok_or_else(|| Error::unsupported("too many Huffman blocks for one gather launch"))?;
        let mut l = stream.launch_builder(&self.gather);
        l.arg(&words).arg(&word_off).arg(&byte_off).arg(&mut out);
        let cfg = LaunchConfig {
            grid_dim: (64, gy, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments match factz_h_gather; out holds the scanned byte total.
        unsafe { l.launch(cfg) }.map_err(driver)?;
        if stream.clone_dtoh(&bad).map_err(driver)?[0] != 0 {
            return Err(Error::internal("huffman kernels: a symbol without a code"));
        }
        let mut payload = stream.clone_dtoh(&out).map_err(driver)?;
        payload.truncate(total);
        let block_bytes: Vec<u64> = offs.windows(2).map(|w| w[1] - w[0]).collect();
        Ok(gpu_ref::assemble(&code, &block_bytes, &payload))
    }

    /// `codec::decode_u32(Coder::Huffman, data, count)` with the blocks decoded
    /// on the device (one thread per 2^16-symbol block; the header on the host).
    pub fn decode(&self, data: &[u8], count: usize) -> Result<Vec<u32>> {
        let b = match gpu_ref::parse(data, count)? {
            Parsed::Empty => return Ok(Vec::new()),
            Parsed::Constant(s) => return Ok(vec![s; count]),
            Parsed::Blocks(b) => b,
        };
        let blocks = (b.byte_off.len() - 1) as u64;
        let stream = self.ctx.default_stream();
        // One byte more: never an empty allocation (the kernel reads within byte_off).
        let payload = stream
            .clone_htod(&[&b.payload[..], &[0]].concat())
            .map_err(driver)?;
        let byte_off = stream.clone_htod(&b.byte_off).map_err(driver)?;
        let limit = stream.clone_htod(&b.limit).map_err(driver)?;
        let first = stream.clone_htod(&b.first).map_err(driver)?;
        let offset = stream.clone_htod(&b.offset).map_err(driver)?;
        let sorted = stream.clone_htod(&b.sorted).map_err(driver)?;
        let mut out = zeros::<u32>(&stream, count)?;
        let mut status = zeros::<u32>(&stream, blocks as usize)?;
        let (count64, n_sorted) = (count as u64, b.sorted.len() as u64);
        let mut l = stream.launch_builder(&self.decode);
        l.arg(&payload)
            .arg(&byte_off)
            .arg(&blocks)
            .arg(&count64)
            .arg(&b.block_log2)
            .arg(&limit)
            .arg(&first)
            .arg(&offset)
            .arg(&sorted)
            .arg(&n_sorted)
            .arg(&b.max_len)
            .arg(&mut out)
            .arg(&mut status);
        // SAFETY: arguments match factz_h_decode; out holds count symbols, status one per block.
        unsafe { l.launch(grid(blocks.div_ceil(32), 32)?) }.map_err(driver)?;
        for s in stream.clone_dtoh(&status).map_err(driver)? {
            gpu_ref::block_status(s)?;
        }
        let mut v = stream.clone_dtoh(&out).map_err(driver)?;
        v.truncate(count);
        Ok(v)
    }
}
