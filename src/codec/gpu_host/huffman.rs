//! The host side of the GPU Huffman coder (`kernels/huffman.cu`): the CPU's
//! own table builder, header writer and header reader around the kernels'
//! counts, packed blocks and decoded blocks, so a GPU stream is the CPU's
//! stream byte for byte. Tests compare the kernels (on a device, or on the host
//! through `kernels/shim`) with `huffman.rs` through these.

use crate::codec::huffman::{
    canonical_codes, code_lengths, histogram, read_header, write_header, Header,
    BLOCK_LOG2 as BLOCK_LOG2_U8,
};
use crate::codec::varint::put_uvarint;
use crate::error::{Error, Result};

pub use crate::codec::huffman::MAX_LEN;

/// log2 of the symbols per block the CPU encoder writes.
pub const BLOCK_LOG2: u32 = BLOCK_LOG2_U8 as u32;
/// Entries of the kernels' per-length decode arrays (lengths 0..=32).
pub const LENGTHS: usize = MAX_LEN as usize + 1;
/// Largest symbol the GPU encoder's dense lookup handles (the CPU's dense limit).
pub const MAX_DENSE_SYMBOL: u32 = (1 << 24) - 1;

/// The CPU encoder's distinct symbols (ascending) and their counts.
pub fn cpu_counts(symbols: &[u32]) -> (Vec<u32>, Vec<u64>) {
    histogram(symbols)
}

/// The distinct symbols and counts of dense per-symbol counts (as the kernels give them).
pub fn sparse_counts(dense: &[u64]) -> (Vec<u32>, Vec<u64>) {
    dense
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(s, &c)| (s as u32, c))
        .unzip()
}

/// A code as `huffman::encode` builds it: symbols ascending, their code lengths
/// and bit-reversed canonical codes (both empty when fewer than two symbols).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    pub syms: Vec<u32>,
    pub lens: Vec<u8>,
    pub codes: Vec<u32>,
}

/// The CPU's code for these counts.
pub fn code(syms: &[u32], counts: &[u64]) -> Code {
    let (lens, codes) = if syms.len() >= 2 {
        let lens = code_lengths(counts);
        let codes = canonical_codes(&lens);
        (lens, codes)
    } else {
        (Vec::new(), Vec::new())
    };
    Code {
        syms: syms.to_vec(),
        lens,
        codes,
    }
}

/// The kernels' dense lookup: entry s = reversed code | length << 32 (0 for
/// symbols without a code), `max symbol + 1` entries; None past `MAX_DENSE_SYMBOL`.
pub fn lookup(code: &Code) -> Option<Vec<u64>> {
    let max = *code.syms.last()?;
    if max > MAX_DENSE_SYMBOL || code.lens.is_empty() {
        return None;
    }
    let mut t = vec![0u64; max as usize + 1];
    for ((&s, &c), &l) in code.syms.iter().zip(&code.codes).zip(&code.lens) {
        t[s as usize] = u64::from(c) | (u64::from(l) << 32);
    }
    Some(t)
}

/// The stream from a code, the blocks' byte lengths and their concatenated
/// bytes, laid out as `huffman::encode` does (see its module doc).
pub fn assemble(code: &Code, block_bytes: &[u64], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_header(&mut out, &code.syms, &code.lens);
    if code.syms.len() <= 1 {
        return out;
    }
    for &b in block_bytes {
        put_uvarint(&mut out, b);
    }
    out.extend_from_slice(payload);
    out
}

/// What the GPU decoder needs from a stream's header.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// No symbols.
    Empty,
    /// Every symbol is this one.
    Constant(u32),
    /// Blocks to decode.
    Blocks(Box<Blocks>),
}

/// A stream's blocks and `DecodeTable`'s arrays.
#[derive(Debug, Clone)]
pub struct Blocks {
    pub block_log2: u32,
    /// Byte offsets of the blocks in `payload` (blocks + 1 entries).
    pub byte_off: Vec<u64>,
    pub payload: Vec<u8>,
    pub limit: [u64; LENGTHS],
    pub first: [u64; LENGTHS],
    pub offset: [u64; LENGTHS],
    pub sorted: Vec<u32>,
    pub max_len: u32,
}

/// Reads a `huffman::encode` stream's header for `count` symbols of at most
/// `max_symbol` (u32::MAX for u32 symbols, 255 for bytes) with the checks of
/// `huffman::decode` (`huffman::read_header`; the per-block bit streams are
/// the kernel's).
pub fn parse(data: &[u8], count: usize, max_symbol: u32) -> Result<Parsed> {
    Ok(match read_header(data, count, max_symbol)? {
        Header::Empty => Parsed::Empty,
        Header::Constant(s) => Parsed::Constant(s),
        Header::Blocks {
            dec,
            block_log2,
            sizes,
            payload,
        } => {
            let mut byte_off = Vec::with_capacity(sizes.len() + 1);
            byte_off.push(0u64);
            for len in sizes {
                byte_off.push(byte_off[byte_off.len() - 1] + len as u64);
            }
            Parsed::Blocks(Box::new(Blocks {
                block_log2: u32::from(block_log2),
                byte_off,
                payload: payload.to_vec(),
                limit: dec.limit,
                first: dec.first,
                offset: dec.offset,
                sorted: dec.sorted,
                max_len: dec.max_len,
            }))
        }
    })
}

/// The status the GPU decoder (kernels/huffman.cu) leaves per block, as
/// `BitReader::finish` and the slow table fail; kernel twins: generated
/// `FZK_HUFF_<NAME>`.
pub mod status {
    pub const OK: u32 = 0;
    pub const OVERRUN: u32 = 1;
    pub const TRAILING: u32 = 2;
    pub const PADDING: u32 = 3;
    pub const INVALID: u32 = 4;
}

/// The error a kernel's per-block status stands for (`kernels/huffman.cu`'s FZH_*), as
/// `BitReader::finish` and `DecodeTable::slow` report it.
pub fn block_status(status: u32) -> Result<()> {
    match status {
        status::OK => Ok(()),
        status::OVERRUN => Err(Error::corrupt("bit stream overrun")),
        status::TRAILING => Err(Error::corrupt("bit stream has trailing bytes")),
        status::PADDING => Err(Error::corrupt("bit stream padding is not zero")),
        _ => Err(Error::corrupt("huffman: invalid code")),
    }
}
