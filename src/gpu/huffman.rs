//! Huffman coding on an [`Exec`] (a device, or the host build of the kernels in
//! tests) in the CPU's stream format: `kernels/huffman.cu` counts the symbols
//! and packs / decodes the 2^16-symbol blocks, the host builds the code and the
//! header with the CPU's code (`codec::gpu_ref`), so the bytes equal
//! `codec::encode_u32(Coder::Huffman, ..)`'s.

use super::exec::{launch_items, launch_rows, Arg, Buf, Exec, View};
use crate::codec::gpu_ref::{self, Parsed};
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/huffman.cu");
/// FZH_THREADS and FZH_SHARED_BINS in the source.
const THREADS: u32 = 256;
const SHARED_BINS: u32 = 4096;
/// Most blocks of the counting kernels (grid-stride loops).
const COUNT_BLOCKS: usize = 1024;
/// Threads per block of the decoder (one thread per Huffman block).
const DECODE_THREADS: u32 = 32;

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
        // SAFETY: (const u32* symbols, u64 n, u32* max): n symbols, one word.
        unsafe {
            launch_items(
                e,
                "factz_h_max",
                n.min(COUNT_BLOCKS * THREADS as usize),
                THREADS,
                &[symbols.arg(), Arg::U64(n as u64), max.arg()],
            )?
        };
        Ok(max.read(e, 0..1)?[0])
    }

    /// Per-symbol counts (largest symbol + 1 entries; none for no symbols);
    /// None past `gpu_ref::MAX_DENSE_SYMBOL`.
    pub fn histogram(&self, symbols: View<u32>) -> Result<Option<Vec<u64>>> {
        let e = self.exec;
        let n = symbols.len();
        if n == 0 {
            return Ok(Some(Vec::new()));
        }
        let max = self.max(symbols)?;
        if max > gpu_ref::MAX_DENSE_SYMBOL {
            return Ok(None);
        }
        let (n64, bins) = (n as u64, max + 1);
        let blocks = Self::count_blocks(n);
        let bad = Buf::<E, u32>::zeros(e, 1)?;
        let counts = if bins <= SHARED_BINS {
            let partial = Buf::<E, u32>::zeros(e, blocks * bins as usize)?;
            let counts = Buf::<E, u64>::zeros(e, bins as usize)?;
            // SAFETY: (symbols, u64 n, u32 bins, u32* partial, u32* bad):
            // partial holds blocks * bins.
            unsafe {
                e.launch(
                    "factz_h_histogram",
                    blocks as u32,
                    THREADS,
                    &[
                        symbols.arg(),
                        Arg::U64(n64),
                        Arg::U32(bins),
                        partial.arg(),
                        bad.arg(),
                    ],
                )?
            };
            // SAFETY: (const u32* partial, u32 blocks, u32 bins, u64* counts): counts holds bins.
            unsafe {
                launch_items(
                    e,
                    "factz_h_merge",
                    bins as usize,
                    THREADS,
                    &[
                        partial.arg(),
                        Arg::U32(blocks as u32),
                        Arg::U32(bins),
                        counts.arg(),
                    ],
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
            // SAFETY: (symbols, u64 n, u32 bins, u32* counts, u32* bad): counts holds bins.
            unsafe {
                e.launch(
                    "factz_h_histogram_global",
                    blocks as u32,
                    THREADS,
                    &[
                        symbols.arg(),
                        Arg::U64(n64),
                        Arg::U32(bins),
                        counts.arg(),
                        bad.arg(),
                    ],
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
    /// `Unsupported` for symbols past `gpu_ref::MAX_DENSE_SYMBOL` (use the CPU).
    pub fn encode(&self, symbols: View<u32>) -> Result<Vec<u8>> {
        let e = self.exec;
        let n = symbols.len();
        let dense = self
            .histogram(symbols)?
            .ok_or_else(|| Error::unsupported("huffman on the GPU: symbols past 2^24"))?;
        let (syms, counts) = gpu_ref::sparse_counts(&dense);
        let code = gpu_ref::code(&syms, &counts);
        let Some(lut) = gpu_ref::lookup(&code) else {
            return Ok(gpu_ref::assemble(&code, &[], &[])); // none or one distinct symbol
        };
        let (n64, log2) = (n as u64, gpu_ref::BLOCK_LOG2);
        let blocks = n.div_ceil(1 << log2);
        let grid = dim(blocks as u64)?;
        let lut_size = lut.len() as u64;
        let lut = Buf::from(e, &lut)?;
        let bad = Buf::<E, u32>::zeros(e, 1)?;
        let bits = Buf::<E, u64>::zeros(e, blocks)?;
        // SAFETY: (symbols, u64 n, u32 block_log2, const u64* lut, u64 lut_size,
        // u64* bits, u32* bad): one thread block and one bits entry per Huffman block.
        unsafe {
            e.launch(
                "factz_h_block_bits",
                grid,
                THREADS,
                &[
                    symbols.arg(),
                    Arg::U64(n64),
                    Arg::U32(log2),
                    lut.arg(),
                    Arg::U64(lut_size),
                    bits.arg(),
                    bad.arg(),
                ],
            )?
        };
        let word_off = Buf::<E, u64>::zeros(e, blocks + 1)?;
        let byte_off = Buf::<E, u64>::zeros(e, blocks + 1)?;
        // SAFETY: (const u64* bits, u64 blocks, u64* word_off, u64* byte_off):
        // both offsets hold blocks + 1 entries.
        unsafe {
            e.launch(
                "factz_h_offsets",
                1,
                32,
                &[
                    bits.arg(),
                    Arg::U64(blocks as u64),
                    word_off.arg(),
                    byte_off.arg(),
                ],
            )?
        };
        let offs = byte_off.read(e, 0..blocks + 1)?;
        let total_words = word_off.read(e, blocks..blocks + 1)?[0] as usize;
        let words = Buf::<E, u32>::zeros(e, total_words)?;
        // SAFETY: (symbols, u64 n, u32 block_log2, lut, u64 lut_size,
        // const u64* word_off, u32* words, u32* bad): words holds the scanned total.
        unsafe {
            e.launch(
                "factz_h_pack",
                grid,
                THREADS,
                &[
                    symbols.arg(),
                    Arg::U64(n64),
                    Arg::U32(log2),
                    lut.arg(),
                    Arg::U64(lut_size),
                    word_off.arg(),
                    words.arg(),
                    bad.arg(),
                ],
            )?
        };
        let total = offs[blocks] as usize;
        let out = Buf::<E, u8>::zeros(e, total)?;
        let longest = offs.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0) as usize;
        // SAFETY: (const u32* words, const u64* word_off, const u64* byte_off,
        // u8* out), Huffman block b = blockIdx.y seen from block `first`:
        // the offsets index words and out within their totals.
        unsafe {
            launch_rows(e, "factz_h_gather", blocks, longest, THREADS, |first| {
                vec![
                    words.arg(),
                    word_off.view().offset(first).arg(),
                    byte_off.view().offset(first).arg(),
                    out.arg(),
                ]
            })?
        };
        if bad.read(e, 0..1)?[0] != 0 {
            return Err(Error::internal("huffman kernels: a symbol without a code"));
        }
        let payload = out.read(e, 0..total)?;
        let block_bytes: Vec<u64> = offs.windows(2).map(|w| w[1] - w[0]).collect();
        Ok(gpu_ref::assemble(&code, &block_bytes, &payload))
    }

    /// [`Self::encode`] of host symbols (copied to the executor first).
    pub fn encode_host(&self, symbols: &[u32]) -> Result<Vec<u8>> {
        let d = Buf::from(self.exec, symbols)?;
        self.encode(d.view())
    }

    /// `codec::decode_u32(Coder::Huffman, data, out.len())` into `out` on the
    /// executor, the blocks decoded there (one thread per 2^16-symbol block;
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
        let b = match gpu_ref::parse(data, count, max_symbol)? {
            Parsed::Empty => return Ok(()),
            Parsed::Constant(s) => {
                // SAFETY: (u32* out, u64 n, u32 symbol): out holds count.
                return unsafe {
                    launch_items(
                        e,
                        "factz_h_fill",
                        count.min(COUNT_BLOCKS * THREADS as usize),
                        THREADS,
                        &[out.arg(), Arg::U64(count as u64), Arg::U32(s)],
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
        // SAFETY: (const u8* payload, const u64* byte_off, u64 blocks, u64 count,
        // u32 block_log2, const u64* limit, first, offset, const u32* sorted,
        // u64 n_sorted, u32 max_len, u32* out, u32* status): byte_off has
        // blocks + 1 entries within payload, the tables gpu_ref::LENGTHS, out
        // count symbols, status one per block.
        unsafe {
            launch_items(
                e,
                "factz_h_decode",
                blocks,
                DECODE_THREADS,
                &[
                    payload.arg(),
                    byte_off.arg(),
                    Arg::U64(blocks as u64),
                    Arg::U64(count as u64),
                    Arg::U32(b.block_log2),
                    limit.arg(),
                    first.arg(),
                    offset.arg(),
                    sorted.arg(),
                    Arg::U64(b.sorted.len() as u64),
                    Arg::U32(b.max_len),
                    out.arg(),
                    status.arg(),
                ],
            )?
        };
        for s in status.read(e, 0..blocks)? {
            gpu_ref::block_status(s)?;
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
