//! Huffman coding on an [`Exec`] (a device, or the host build of the kernels in
//! tests) in the CPU's stream format: `kernels/huffman.cu` counts the symbols
//! and packs / decodes the 2^12-symbol blocks, the host builds the code and the
//! header with the CPU's code (`codec::gpu_host::huffman`), so the bytes equal
//! `codec::encode_u32(Coder::Huffman, ..)`'s.

use super::exec::{Buf, Exec, View};
use super::launch::kernels;
use super::scan;
use crate::codec::gpu_host::huffman::{self as host, Parsed};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/huffman.cu");
use crate::kernels::{HUFFMAN_BLOCK as THREADS, HUFFMAN_SHARED_BINS as SHARED_BINS};
/// Most blocks of the counting kernels (grid-stride loops).
const COUNT_BLOCKS: usize = 1024;
/// Threads per block of the decoder (one thread per Huffman block).
const DECODE_THREADS: u32 = 32;

kernels! {
    H_MAX = factz_h_max(symbols: View<u32>, n: u64, max: View<u32>);
    H_HISTOGRAM = factz_h_histogram(
        symbols: View<u32>, n: u64, bins: u32, partial: View<u32>, bad: View<u32>,
    );
    /// Also rans.rs's (per-block plane histograms).
    H_MERGE = factz_h_merge(partial: View<u32>, blocks: u32, bins: u32, counts: View<u64>);
    H_HISTOGRAM_GLOBAL = factz_h_histogram_global(
        symbols: View<u32>, n: u64, bins: u32, counts: View<u32>, bad: View<u32>,
    );
    H_BLOCK_BITS = factz_h_block_bits(
        symbols: View<u32>, n: u64, block_log2: u32, lut: View<u64>, lut_size: u64,
        bits: View<u64>, bad: View<u32>,
    );
    H_SIZES = factz_h_sizes(bits_words: View<u64>, blocks: u64, bytes: View<u64>);
    H_PACK = factz_h_pack(
        symbols: View<u32>, n: u64, block_log2: u32, lut: View<u64>, lut_size: u64,
        word_off: View<u64>, words: View<u32>, bad: View<u32>,
    );
    H_GATHER = factz_h_gather(
        words: View<u32>, word_off: View<u64>, byte_off: View<u64>, out: View<u8>,
    );
    H_DECODE = factz_h_decode(
        payload: View<u8>, byte_off: View<u64>, blocks: u64, count: u64, block_log2: u32,
        limit: View<u64>, first: View<u64>, offset: View<u64>, sorted: View<u32>,
        n_sorted: u64, max_len: u32, out: View<u32>, status: View<u32>,
    );
    H_FILL = factz_h_fill(out: View<u32>, n: u64, symbol: u32);
}

/// A grid dimension, or why it is too large.
fn dim(blocks: u64) -> Result<u32> {
    u32::try_from(blocks)
        .ok()
        .filter(|&b| b < i32::MAX as u32)
        .ok_or_else(|| Error::unsupported("too many symbols for one launch"))
}

/// The Huffman kernels on one executor.
pub struct HuffmanKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<'e, E: Exec> HuffmanKernels<'e, E> {
    /// Blocks of the counting kernels for n symbols.
    fn count_blocks(n: usize) -> usize {
        n.div_ceil(THREADS as usize).min(COUNT_BLOCKS)
    }

    /// The largest symbol (0 for none).
    pub fn max(&self, symbols: View<u32>) -> Result<u32> {
        let e = self.exec;
        let n = symbols.len();
        let max = Buf::<E, u32>::zeros(e, 1)?;
        // SAFETY: n symbols, one word.
        unsafe {
            H_MAX.launch_items(
                e,
                n.min(COUNT_BLOCKS * THREADS as usize),
                THREADS,
                (symbols, n as u64, max.view()),
            )?
        };
        Ok(max.read(e, 0..1)?[0])
    }

    /// Per-symbol counts (largest symbol + 1 entries; none for no symbols);
    /// None past `host::MAX_DENSE_SYMBOL`.
    pub fn histogram(&self, symbols: View<u32>) -> Result<Option<Vec<u64>>> {
        let e = self.exec;
        let n = symbols.len();
        if n == 0 {
            return Ok(Some(Vec::new()));
        }
        let max = self.max(symbols)?;
        if max > host::MAX_DENSE_SYMBOL {
            return Ok(None);
        }
        let (n64, bins) = (n as u64, max + 1);
        let blocks = Self::count_blocks(n);
        let bad = Buf::<E, u32>::zeros(e, 1)?;
        let counts = if bins <= SHARED_BINS {
            let partial = Buf::<E, u32>::zeros(e, blocks * bins as usize)?;
            let counts = Buf::<E, u64>::zeros(e, bins as usize)?;
            // SAFETY: partial holds blocks * bins.
            unsafe {
                H_HISTOGRAM.launch(
                    e,
                    blocks as u32,
                    THREADS,
                    (symbols, n64, bins, partial.view(), bad.view()),
                )?
            };
            // SAFETY: counts holds bins.
            unsafe {
                H_MERGE.launch_items(
                    e,
                    bins as usize,
                    THREADS,
                    (partial.view(), blocks as u32, bins, counts.view()),
                )?
            };
            counts.read(e, 0..bins as usize)?
        } else {
            // 32-bit atomic counters.
            if n64 >> 32 != 0 {
                return Err(Error::unsupported(
                    "2^32 or more symbols with a wide alphabet",
                ));
            }
            let counts = Buf::<E, u32>::zeros(e, bins as usize)?;
            // SAFETY: counts holds bins.
            unsafe {
                H_HISTOGRAM_GLOBAL.launch(
                    e,
                    blocks as u32,
                    THREADS,
                    (symbols, n64, bins, counts.view(), bad.view()),
                )?
            };
            counts
                .read(e, 0..bins as usize)?
                .into_iter()
                .map(u64::from)
                .collect()
        };
        if bad.read(e, 0..1)?[0] != 0 {
            return Err(Error::internal(
                "huffman kernels: a symbol past the maximum",
            ));
        }
        Ok(Some(counts))
    }

    /// [`Self::histogram`] of host symbols.
    pub fn histogram_host(&self, symbols: &[u32]) -> Result<Option<Vec<u64>>> {
        let d = Buf::from(self.exec, symbols)?;
        self.histogram(d.view())
    }

    /// `codec::encode_u32(Coder::Huffman, symbols)` computed on the executor;
    /// `Unsupported` for symbols past `host::MAX_DENSE_SYMBOL` (use the CPU).
    pub fn encode(&self, symbols: View<u32>) -> Result<Vec<u8>> {
        let e = self.exec;
        let n = symbols.len();
        let dense = self
            .histogram(symbols)?
            .ok_or_else(|| Error::unsupported("huffman on the GPU: symbols past 2^24"))?;
        let (syms, counts) = host::sparse_counts(&dense);
        let code = host::code(&syms, &counts);
        let Some(lut) = host::lookup(&code) else {
            return Ok(host::assemble(&code, &[], &[])); // none or one distinct symbol
        };
        let (n64, log2) = (n as u64, host::BLOCK_LOG2);
        let blocks = n.div_ceil(1 << log2);
        let grid = dim(blocks as u64)?;
        let lut_size = lut.len() as u64;
        let lut = Buf::from(e, &lut)?;
        let bad = Buf::<E, u32>::zeros(e, 1)?;
        // blocks + 1: it becomes the word offsets, the total last.
        let bits = Buf::<E, u64>::zeros(e, blocks + 1)?;
        // SAFETY: one thread block and one bits entry per Huffman block.
        unsafe {
            H_BLOCK_BITS.launch(
                e,
                grid,
                THREADS,
                (
                    symbols,
                    n64,
                    log2,
                    lut.view(),
                    lut_size,
                    bits.view(),
                    bad.view(),
                ),
            )?
        };
        // Each block's words (in place of its bits) and bytes, then their
        // offsets by the grid-wide scan, in place.
        let byte_off = Buf::<E, u64>::zeros(e, blocks + 1)?;
        // SAFETY: bits and byte_off hold at least `blocks` entries.
        unsafe {
            H_SIZES.launch_items(
                e,
                blocks,
                THREADS,
                (bits.view(), blocks as u64, byte_off.view()),
            )?
        };
        let word_off = bits;
        let total_words =
            scan::exclusive_into(e, word_off.view(), blocks, word_off.view())? as usize;
        scan::exclusive_into(e, byte_off.view(), blocks, byte_off.view())?;
        let offs = byte_off.read(e, 0..blocks + 1)?;
        let words = Buf::<E, u32>::zeros(e, total_words)?;
        // SAFETY: words holds the scanned total.
        unsafe {
            H_PACK.launch(
                e,
                grid,
                THREADS,
                (
                    symbols,
                    n64,
                    log2,
                    lut.view(),
                    lut_size,
                    word_off.view(),
                    words.view(),
                    bad.view(),
                ),
            )?
        };
        let total = offs[blocks] as usize;
        let out = Buf::<E, u8>::zeros(e, total)?;
        let longest = offs.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0) as usize;
        // SAFETY: Huffman block b = blockIdx.y seen from block `first`: the
        // offsets index words and out within their totals.
        unsafe {
            H_GATHER.launch_rows(e, blocks, longest, THREADS, |first| {
                (
                    words.view(),
                    word_off.view().offset(first),
                    byte_off.view().offset(first),
                    out.view(),
                )
            })?
        };
        if bad.read(e, 0..1)?[0] != 0 {
            return Err(Error::internal("huffman kernels: a symbol without a code"));
        }
        let payload = out.read(e, 0..total)?;
        let block_bytes: Vec<u64> = offs.windows(2).map(|w| w[1] - w[0]).collect();
        Ok(host::assemble(&code, &block_bytes, &payload))
    }

    /// [`Self::encode`] of host symbols (copied to the executor first).
    pub fn encode_host(&self, symbols: &[u32]) -> Result<Vec<u8>> {
        let d = Buf::from(self.exec, symbols)?;
        self.encode(d.view())
    }

    /// `codec::decode_u32(Coder::Huffman, data, out.len())` into `out` on the
    /// executor, the blocks decoded there (one thread per 2^12-symbol block;
    /// the header on the host).
    pub fn decode_into(&self, data: &[u8], out: View<u32>) -> Result<()> {
        self.decode_limited(data, out, u32::MAX)
    }

    /// `codec::decode_bytes(Coder::Huffman, data, out.len())` into `out`, one
    /// byte per u32 (the format is the same; a symbol past 255 is refused as
    /// the byte decoder refuses it).
    pub fn decode_bytes_into(&self, data: &[u8], out: View<u32>) -> Result<()> {
        self.decode_limited(data, out, u8::MAX.into())
    }

    fn decode_limited(&self, data: &[u8], out: View<u32>, max_symbol: u32) -> Result<()> {
        let e = self.exec;
        let count = out.len();
        let b = match host::parse(data, count, max_symbol)? {
            Parsed::Empty => return Ok(()),
            Parsed::Constant(s) => {
                // SAFETY: out holds count.
                return unsafe {
                    H_FILL.launch_items(
                        e,
                        count.min(COUNT_BLOCKS * THREADS as usize),
                        THREADS,
                        (out, count as u64, s),
                    )
                };
            }
            Parsed::Blocks(b) => b,
        };
        let blocks = b.byte_off.len() - 1;
        let payload = Buf::from(e, &b.payload)?;
        let byte_off = Buf::from(e, &b.byte_off)?;
        let limit = Buf::from(e, &b.limit)?;
        let first = Buf::from(e, &b.first)?;
        let offset = Buf::from(e, &b.offset)?;
        let sorted = Buf::from(e, &b.sorted)?;
        // A value no block ends with, so a block the kernel skipped shows.
        let status = Buf::from(e, &vec![u32::MAX; blocks])?;
        // SAFETY: byte_off has blocks + 1 entries within payload, the tables
        // host::LENGTHS, out count symbols, status one per block.
        unsafe {
            H_DECODE.launch_items(
                e,
                blocks,
                DECODE_THREADS,
                (
                    payload.view(),
                    byte_off.view(),
                    blocks as u64,
                    count as u64,
                    b.block_log2,
                    limit.view(),
                    first.view(),
                    offset.view(),
                    sorted.view(),
                    b.sorted.len() as u64,
                    b.max_len,
                    out,
                    status.view(),
                ),
            )?
        };
        for s in status.read(e, 0..blocks)? {
            host::block_status(s)?;
        }
        Ok(())
    }

    /// `codec::decode_u32(Coder::Huffman, data, count)` through [`Self::decode_into`].
    pub fn decode(&self, data: &[u8], count: usize) -> Result<Vec<u32>> {
        let out = Buf::<E, u32>::zeros(self.exec, count)?;
        self.decode_into(data, out.view())?;
        out.read(self.exec, 0..count)
    }
}
