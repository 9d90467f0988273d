//! Canonical, length-limited Huffman coding of `u32` (or byte) symbols in
//! independent blocks that share one code table.
//!
//! Stream layout (all varints are unsigned LEB128, see `varint`):
//!
//! ```text
//! varint  n              number of distinct symbols (0 only for an empty input)
//! runs    while fewer than n symbols are listed:
//!           varint gap   first symbol of the run minus one past the previous run's last (0 at start)
//!           varint len-1 the run holds len consecutive symbol values
//! -- n == 1: end of stream (every symbol is that one value) --
//! lengths n x 5 bits (code length - 1, LSB-first, symbols in ascending order),
//!           zero-padded to a byte; lengths are 1..=32 and the code is complete (Kraft sum 1)
//! u8      block_log2     symbols per block = 1 << block_log2 (10..=24; the encoder uses 12)
//! varint  block_bytes    one per block, ceil(count / block size) blocks (count comes from the caller)
//! bytes   payloads       the blocks' bit streams, concatenated; each is LSB-first (see `bits`),
//!                        codes bit-reversed so the decoder indexes its table with the next bits,
//!                        zero-padded to a whole byte
//! ```
//!
//! Codes are canonical: ordered by (length, symbol); the code lengths come from
//! Moffat-Katajainen's in-place Huffman, limited by raising the smallest weights.
//! Decoding uses a primary table (12 bits, up to 16 for long streams with long
//! codes: [`primary_bits`]) and a per-length limit search for longer codes,
//! and runs two blocks' bit streams interleaved (independent dependency
//! chains); blocks are decoded in parallel with rayon. A single-symbol stream
//! (n == 1) cannot check the symbol count.

use rayon::prelude::*;

use super::bits::{BitReader, BitWriter};
use super::varint::{get_u8, get_uvarint, get_uvarint_max, put_uvarint};
use crate::error::{Error, Result};

/// log2 of the symbols per block written by the encoder.
pub(super) const BLOCK_LOG2: u8 = 12;
const MIN_BLOCK_LOG2: u8 = 10;
const MAX_BLOCK_LOG2: u8 = 24;
/// Codes are limited to this length unless more distinct symbols need longer codes.
const SOFT_MAX_LEN: u32 = 24;
/// Longest code length the format allows.
/// Longest code. Kernel twin: generated `FZK_HUFF_MAX_LEN`.
pub const MAX_LEN: u32 = 32;
/// Bits of the primary decoding table: 12 (16 KiB, built in microseconds)
/// unless the stream is long enough to pay for a bigger one and has codes that
/// overflow 12 bits, then up to 16 (256 KiB). The particle base's cell indices
/// (alphabets up to 2^21, codes of 13-24 bits) otherwise took the limit
/// search for most symbols. Decoding only: the stream does not change.
fn primary_bits(count: usize, max_len: u32) -> u32 {
    const SMALL: u32 = 12;
    const LARGE: u32 = 16;
    if count >= 1 << 18 {
        max_len.clamp(SMALL, LARGE)
    } else {
        SMALL
    }
}

/// A symbol type the Huffman coder handles (`u32` codes, `u8` bytes).
pub(crate) trait Symbol: Copy + Send + Sync + Default + 'static {
    /// Largest value of the type.
    const MAX: u32;
    fn to_u32(self) -> u32;
    /// Only called with values `<= MAX`.
    fn from_u32(x: u32) -> Self;
}

impl Symbol for u32 {
    const MAX: u32 = u32::MAX;
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_u32(x: u32) -> Self {
        x
    }
}

impl Symbol for u8 {
    const MAX: u32 = u8::MAX as u32;
    #[inline(always)]
    fn to_u32(self) -> u32 {
        u32::from(self)
    }
    #[inline(always)]
    fn from_u32(x: u32) -> Self {
        x as u8
    }
}

// ---------------------------------------------------------------- encoder

/// Symbols below this bound are always counted and looked up in dense arrays.
const DENSE_MIN: usize = 1 << 20;
/// Dense arrays never grow past this many entries.
const DENSE_MAX: usize = 1 << 24;

fn use_dense(max_sym: u32, n: usize) -> bool {
    (max_sym as usize) < DENSE_MIN.max(n.min(DENSE_MAX))
}

/// Distinct symbols, ascending, with their counts.
pub(super) fn histogram<T: Symbol>(symbols: &[T]) -> (Vec<u32>, Vec<u64>) {
    let max_sym = symbols
        .par_chunks(1 << 16)
        .map(|c| c.iter().map(|s| s.to_u32()).max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    if use_dense(max_sym, symbols.len()) {
        let size = max_sym as usize + 1;
        let chunk = (1usize << 18).max(size);
        let counts = symbols
            .par_chunks(chunk)
            .map(|c| {
                // Four small tables for the common small symbols (avoids store-forwarding
                // stalls on peaked data), one wide table for the rest.
                let mut small = [[0u32; 256]; 4];
                let mut wide = vec![0u32; if size > 256 { size } else { 0 }];
                let mut it = c.chunks_exact(4);
                for q in &mut it {
                    for (j, s) in q.iter().enumerate() {
                        let s = s.to_u32() as usize;
                        if s < 256 {
                            small[j][s] += 1;
                        } else {
                            wide[s] += 1;
                        }
                    }
                }
                for s in it.remainder() {
                    let s = s.to_u32() as usize;
                    if s < 256 {
                        small[0][s] += 1;
                    } else {
                        wide[s] += 1;
                    }
                }
                let mut h = vec![0u64; size];
                for (i, hv) in h.iter_mut().enumerate().take(256) {
                    *hv = small.iter().map(|t| u64::from(t[i])).sum();
                }
                for (hv, &w) in h.iter_mut().zip(wide.iter()).skip(256) {
                    *hv = u64::from(w);
                }
                h
            })
            .reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            })
            .unwrap_or_default();
        let mut syms = Vec::new();
        let mut cnts = Vec::new();
        for (s, &c) in counts.iter().enumerate() {
            if c > 0 {
                syms.push(s as u32);
                cnts.push(c);
            }
        }
        (syms, cnts)
    } else {
        let mut v: Vec<u32> = symbols.par_iter().map(|s| s.to_u32()).collect();
        v.par_sort_unstable();
        let mut syms = Vec::new();
        let mut cnts: Vec<u64> = Vec::new();
        for &s in &v {
            if syms.last() == Some(&s) {
                if let Some(c) = cnts.last_mut() {
                    *c += 1;
                }
            } else {
                syms.push(s);
                cnts.push(1);
            }
        }
        (syms, cnts)
    }
}

/// ceil(log2(n)) for n >= 1.
fn ceil_log2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// In-place minimum-redundancy code lengths (Moffat & Katajainen, 1995).
/// `a` holds weights sorted ascending (len >= 2); on return it holds the code
/// lengths of those weights (non-increasing).
fn moffat_katajainen(a: &mut [u64]) {
    let n = a.len();
    debug_assert!(n >= 2);
    // Phase 1: combine, leaving parent pointers.
    a[0] += a[1];
    let mut root = 0usize;
    let mut leaf = 2usize;
    for next in 1..n - 1 {
        if leaf >= n || a[root] < a[leaf] {
            a[next] = a[root];
            a[root] = next as u64;
            root += 1;
        } else {
            a[next] = a[leaf];
            leaf += 1;
        }
        if leaf >= n || (root < next && a[root] < a[leaf]) {
            a[next] += a[root];
            a[root] = next as u64;
            root += 1;
        } else {
            a[next] += a[leaf];
            leaf += 1;
        }
    }
    // Phase 2: depths of internal nodes.
    a[n - 2] = 0;
    for next in (0..n.saturating_sub(2)).rev() {
        a[next] = a[a[next] as usize] + 1;
    }
    // Phase 3: depths of leaves.
    let mut avail: u64 = 1;
    let mut used: u64 = 0;
    let mut depth: u64 = 0;
    let mut root = n as isize - 2;
    let mut next = n as isize - 1;
    while avail > 0 {
        while root >= 0 && a[root as usize] == depth {
            used += 1;
            root -= 1;
        }
        while avail > used {
            a[next as usize] = depth;
            next -= 1;
            avail -= 1;
        }
        avail = 2 * used;
        depth += 1;
        used = 0;
    }
}

/// Code lengths (1..=32) for `counts` (n >= 2), limited to
/// `max(SOFT_MAX_LEN, ceil(log2 n))`, always a complete code.
pub(super) fn code_lengths(counts: &[u64]) -> Vec<u8> {
    let n = counts.len();
    debug_assert!(n >= 2);
    let limit = u64::from(SOFT_MAX_LEN.max(ceil_log2(n as u64)));
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (counts[i as usize], i));
    let mut lens = vec![0u8; n];
    // Raise small weights to a floor until the tree fits the limit (equal weights give a
    // balanced tree of depth ceil(log2 n), so this ends).
    let mut floor = 1u64;
    let mut a = vec![0u64; n];
    for _ in 0..70 {
        for (w, &i) in a.iter_mut().zip(&order) {
            *w = counts[i as usize].max(floor);
        }
        moffat_katajainen(&mut a);
        if a[0] <= limit {
            for (&l, &i) in a.iter().zip(&order) {
                lens[i as usize] = l as u8;
            }
            return lens;
        }
        floor = floor.saturating_mul(2);
    }
    // Unreachable in practice: a flat complete code (short codes to the most frequent).
    let k = ceil_log2(n as u64);
    let short = (1u64 << k) - n as u64;
    for (rank, &i) in order.iter().rev().enumerate() {
        lens[i as usize] = if (rank as u64) < short { k - 1 } else { k } as u8;
    }
    lens
}

/// Bit-reversed canonical codes for symbols in ascending order with lengths `lens`.
pub(super) fn canonical_codes(lens: &[u8]) -> Vec<u32> {
    let mut bl_count = [0u64; MAX_LEN as usize + 1];
    for &l in lens {
        bl_count[l as usize] += 1;
    }
    let mut next = [0u64; MAX_LEN as usize + 2];
    for l in 1..=MAX_LEN as usize {
        next[l] = (next[l - 1] + bl_count[l - 1]) << 1;
    }
    lens.iter()
        .map(|&l| {
            let code = next[l as usize] as u32;
            next[l as usize] += 1;
            code.reverse_bits() >> (32 - u32::from(l))
        })
        .collect()
}

/// Symbol -> packed (reversed code | length << 32).
enum Lookup {
    Dense(Vec<u64>),
    Sparse(Vec<u32>, Vec<u64>),
}

impl Lookup {
    #[inline(always)]
    fn get(&self, s: u32) -> u64 {
        match self {
            Lookup::Dense(t) => t.get(s as usize).copied().unwrap_or(0),
            Lookup::Sparse(syms, codes) => match syms.binary_search(&s) {
                Ok(i) => codes[i],
                Err(_) => 0,
            },
        }
    }
}

fn encode_block<T: Symbol>(block: &[T], lookup: &Lookup, max_len: u32) -> Vec<u8> {
    let mut w = BitWriter::with_capacity((block.len() * max_len as usize) / 8 + 8);
    match lookup {
        Lookup::Dense(t) => {
            for s in block {
                let e = t[s.to_u32() as usize];
                w.put(e & 0xffff_ffff, (e >> 32) as u32);
            }
        }
        Lookup::Sparse(..) => {
            for s in block {
                let e = lookup.get(s.to_u32());
                w.put(e & 0xffff_ffff, (e >> 32) as u32);
            }
        }
    }
    w.finish()
}

/// Writes the header up to the block lengths: the distinct symbols `syms`
/// (ascending) as runs and, when there are two or more, their code lengths
/// `lens` and the block size. See the module doc for the layout.
pub(super) fn write_header(out: &mut Vec<u8>, syms: &[u32], lens: &[u8]) {
    let n = syms.len();
    put_uvarint(out, n as u64);
    // Runs of consecutive symbol values.
    let mut prev_end = 0u64;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && u64::from(syms[j]) == u64::from(syms[j - 1]) + 1 {
            j += 1;
        }
        put_uvarint(out, u64::from(syms[i]) - prev_end);
        put_uvarint(out, (j - i - 1) as u64);
        prev_end = u64::from(syms[j - 1]) + 1;
        i = j;
    }
    if n <= 1 {
        return;
    }
    let mut w = BitWriter::with_capacity(n * 5 / 8 + 8);
    for &l in lens {
        w.put(u64::from(l - 1), 5);
    }
    out.extend_from_slice(&w.finish());
    out.push(BLOCK_LOG2);
}

/// Encodes `symbols`; see the module doc for the layout.
pub(crate) fn encode<T: Symbol>(symbols: &[T]) -> Vec<u8> {
    let (syms, counts) = histogram(symbols);
    let n = syms.len();
    let lens = if n <= 1 {
        Vec::new()
    } else {
        code_lengths(&counts)
    };
    let mut out = Vec::new();
    write_header(&mut out, &syms, &lens);
    if n <= 1 {
        return out;
    }

    let codes = canonical_codes(&lens);
    let max_len = lens.iter().copied().max().map_or(1, u32::from);
    let packed: Vec<u64> = codes
        .iter()
        .zip(&lens)
        .map(|(&c, &l)| u64::from(c) | (u64::from(l) << 32))
        .collect();
    let max_sym = syms.last().copied().unwrap_or(0);
    let lookup = if use_dense(max_sym, symbols.len()) {
        let mut t = vec![0u64; max_sym as usize + 1];
        for (&s, &p) in syms.iter().zip(&packed) {
            t[s as usize] = p;
        }
        Lookup::Dense(t)
    } else {
        Lookup::Sparse(syms, packed)
    };
    let blocks: Vec<Vec<u8>> = symbols
        .par_chunks(1 << BLOCK_LOG2)
        .map(|b| encode_block(b, &lookup, max_len))
        .collect();
    for b in &blocks {
        put_uvarint(&mut out, b.len() as u64);
    }
    out.reserve(blocks.iter().map(Vec::len).sum());
    for b in &blocks {
        out.extend_from_slice(b);
    }
    out
}

// ---------------------------------------------------------------- decoder

/// Decoding tables built from (and validating) a code-length table.
pub(super) struct DecodeTable {
    /// Indexed by the next `bits` bits: symbol << 8 | length, or 0 when the code is
    /// longer or its symbol does not fit in 24 bits (then `slow` decodes it).
    primary: Vec<u32>,
    /// [`primary_bits`].
    bits: u32,
    /// Shortest code length `slow` may meet.
    slow_start: u32,
    pub(super) max_len: u32,
    /// For each length L: left-justified (32-bit) limit of codes of length <= L.
    pub(super) limit: [u64; MAX_LEN as usize + 1],
    /// First canonical code of each length.
    pub(super) first: [u64; MAX_LEN as usize + 1],
    /// Index in `sorted` of the first symbol of each length.
    pub(super) offset: [u64; MAX_LEN as usize + 1],
    /// Symbols in canonical order (length, then value).
    pub(super) sorted: Vec<u32>,
}

impl DecodeTable {
    /// The tables for these symbols and code lengths, with a primary table
    /// sized for a stream of `count` symbols.
    fn new(syms: &[u32], lens: &[u8], count: usize) -> Result<Self> {
        let mut bl_count = [0u64; MAX_LEN as usize + 1];
        for &l in lens {
            if l == 0 || u32::from(l) > MAX_LEN {
                return Err(Error::corrupt("huffman: code length out of range"));
            }
            bl_count[l as usize] += 1;
        }
        let mut left: i64 = 1;
        for &c in &bl_count[1..] {
            left = left * 2 - c as i64;
            if left < 0 {
                return Err(Error::corrupt("huffman: over-subscribed code lengths"));
            }
        }
        if left != 0 {
            return Err(Error::corrupt("huffman: incomplete code lengths"));
        }
        let max_len = (1..=MAX_LEN)
            .rev()
            .find(|&l| bl_count[l as usize] > 0)
            .unwrap_or(1);
        let mut first = [0u64; MAX_LEN as usize + 1];
        let mut offset = [0u64; MAX_LEN as usize + 1];
        let mut limit = [0u64; MAX_LEN as usize + 1];
        for l in 1..=MAX_LEN as usize {
            first[l] = (first[l - 1] + bl_count[l - 1]) << 1;
            offset[l] = offset[l - 1] + bl_count[l - 1];
            limit[l] = (first[l] + bl_count[l]) << (MAX_LEN as usize - l);
        }
        let mut fill = offset;
        let mut sorted = vec![0u32; syms.len()];
        for (&s, &l) in syms.iter().zip(lens) {
            let slot = sorted
                .get_mut(fill[l as usize] as usize)
                .ok_or_else(|| Error::internal("huffman: canonical sort out of range"))?;
            *slot = s;
            fill[l as usize] += 1;
        }
        let bits = primary_bits(count, max_len);
        let size = 1usize << bits;
        let mut primary = vec![0u32; size];
        let mut slow_start = bits + 1;
        for l in 1..=max_len.min(bits) {
            let lu = l as usize;
            for k in 0..bl_count[lu] {
                let code = (first[lu] + k) as u32;
                let rev = (code.reverse_bits() >> (32 - l)) as usize;
                let sym = sorted[(offset[lu] + k) as usize];
                if sym >= 1 << 24 {
                    slow_start = slow_start.min(l);
                    continue;
                }
                let entry = (sym << 8) | l;
                let mut j = rev;
                while j < size {
                    primary[j] = entry;
                    j += 1 << l;
                }
            }
        }
        Ok(DecodeTable {
            primary,
            bits,
            slow_start,
            max_len,
            limit,
            first,
            offset,
            sorted,
        })
    }

    /// Decodes a code the primary table does not resolve from the next 32 bits (LSB-first).
    #[inline]
    fn slow(&self, window: u32) -> Result<(u32, u32)> {
        let v = u64::from(window.reverse_bits());
        for l in self.slow_start..=self.max_len {
            let lu = l as usize;
            if v < self.limit[lu] {
                let idx = (v >> (32 - l))
                    .checked_sub(self.first[lu])
                    .and_then(|d| d.checked_add(self.offset[lu]))
                    .and_then(|i| self.sorted.get(i as usize));
                return match idx {
                    Some(&s) => Ok((s, l)),
                    None => Err(Error::corrupt("huffman: invalid code")),
                };
            }
        }
        Err(Error::corrupt("huffman: invalid code"))
    }

    /// Decodes one symbol from `br`.
    #[inline(always)]
    fn decode_sym<T: Symbol>(&self, br: &mut BitReader) -> Result<T> {
        br.refill();
        let bits = br.peek();
        let e = self.primary[(bits as usize) & ((1 << self.bits) - 1)];
        let len = e & 0xff;
        if len != 0 {
            br.consume(len);
            Ok(T::from_u32(e >> 8))
        } else {
            let (s, l) = self.slow(bits as u32)?;
            br.consume(l);
            Ok(T::from_u32(s))
        }
    }

    /// Decodes up to two blocks, interleaving their independent bit streams
    /// (two dependency chains keep the core busier than one).
    fn decode_blocks<T: Symbol>(
        &self,
        blocks: &[&[u8]],
        out: &mut [T],
        block: usize,
    ) -> Result<()> {
        let (oa, ob) = out.split_at_mut(block.min(out.len()));
        let (da, db) = match blocks {
            [a] => (*a, None),
            [a, b] => (*a, Some(*b)),
            _ => return Err(Error::internal("huffman: block pairing")),
        };
        let mut ra = BitReader::new(da);
        let Some(db) = db else {
            for o in oa.iter_mut() {
                *o = self.decode_sym(&mut ra)?;
            }
            return ra.finish();
        };
        let mut rb = BitReader::new(db);
        let common = ob.len().min(oa.len());
        let (oa_head, oa_tail) = oa.split_at_mut(common);
        let (ob_head, ob_tail) = ob.split_at_mut(common);
        for (a, b) in oa_head.iter_mut().zip(ob_head.iter_mut()) {
            *a = self.decode_sym(&mut ra)?;
            *b = self.decode_sym(&mut rb)?;
        }
        for a in oa_tail.iter_mut() {
            *a = self.decode_sym(&mut ra)?;
        }
        for b in ob_tail.iter_mut() {
            *b = self.decode_sym(&mut rb)?;
        }
        ra.finish()?;
        rb.finish()
    }
}

/// A stream's header, read with every check the decoder makes: what `decode`
/// and the GPU decoder (`gpu_host::huffman::parse`) start from.
pub(super) enum Header<'a> {
    /// No symbols.
    Empty,
    /// Every symbol is this one.
    Constant(u32),
    /// Independent blocks of `1 << block_log2` symbols, `sizes` bytes each,
    /// one after the other in `payload`.
    Blocks {
        dec: Box<DecodeTable>,
        block_log2: u8,
        sizes: Vec<usize>,
        payload: &'a [u8],
    },
}

/// Reads the header of a stream of `count` symbols no larger than `max`; see
/// the module doc for the layout.
pub(super) fn read_header(data: &[u8], count: usize, max: u32) -> Result<Header<'_>> {
    let mut pos = 0usize;
    let n = get_uvarint_max(
        data,
        &mut pos,
        u64::from(max) + 1,
        "huffman: distinct symbols",
    )?;
    if n == 0 {
        if count != 0 {
            return Err(Error::corrupt("huffman: no symbols in a non-empty stream"));
        }
        if pos != data.len() {
            return Err(Error::corrupt("huffman: trailing bytes"));
        }
        return Ok(Header::Empty);
    }
    // Each distinct symbol costs at least 5 bits of code-length table when n >= 2.
    if n >= 2 && n > data.len().saturating_sub(pos).saturating_mul(8) / 5 {
        return Err(Error::corrupt(
            "huffman: distinct symbol count exceeds stream size",
        ));
    }
    let mut syms: Vec<u32> = Vec::with_capacity(n);
    let mut prev_end = 0u64;
    while syms.len() < n {
        let gap = get_uvarint(data, &mut pos)?;
        let run = get_uvarint_max(data, &mut pos, (n - syms.len() - 1) as u64, "huffman: run")? + 1;
        let start = prev_end
            .checked_add(gap)
            .filter(|&s| s <= u64::from(max))
            .ok_or_else(|| Error::corrupt("huffman: symbol value out of range"))?;
        let end = start + run as u64;
        if end - 1 > u64::from(max) {
            return Err(Error::corrupt("huffman: symbol value out of range"));
        }
        syms.extend((start..end).map(|s| s as u32));
        prev_end = end;
    }
    if n == 1 {
        if pos != data.len() {
            return Err(Error::corrupt("huffman: trailing bytes"));
        }
        return Ok(Header::Constant(syms[0]));
    }
    let table_bytes = (n * 5).div_ceil(8);
    let table = data
        .get(pos..pos.saturating_add(table_bytes))
        .ok_or_else(|| Error::corrupt("huffman: truncated code-length table"))?;
    pos += table_bytes;
    let mut br = BitReader::new(table);
    let lens: Vec<u8> = (0..n).map(|_| br.get(5) as u8 + 1).collect();
    br.finish()?;
    let block_log2 = get_u8(data, &mut pos, "huffman: block size")?;
    if !(MIN_BLOCK_LOG2..=MAX_BLOCK_LOG2).contains(&block_log2) {
        return Err(Error::corrupt("huffman: block size out of range"));
    }
    let dec = Box::new(DecodeTable::new(&syms, &lens, count)?);
    drop(syms);
    let n_blocks = count.div_ceil(1usize << block_log2);
    if n_blocks > data.len() - pos {
        return Err(Error::corrupt("huffman: block count exceeds stream size"));
    }
    let mut sizes = Vec::with_capacity(n_blocks);
    let mut total = 0usize;
    for _ in 0..n_blocks {
        let len = get_uvarint_max(data, &mut pos, data.len() as u64, "huffman: block length")?;
        total = total
            .checked_add(len)
            .ok_or_else(|| Error::corrupt("huffman: block lengths overflow"))?;
        sizes.push(len);
    }
    if total != data.len() - pos {
        return Err(Error::corrupt(
            "huffman: block lengths do not match stream size",
        ));
    }
    // Every symbol costs at least one bit.
    if count / 8 > total {
        return Err(Error::corrupt("huffman: symbol count exceeds stream size"));
    }
    Ok(Header::Blocks {
        dec,
        block_log2,
        sizes,
        payload: &data[pos..],
    })
}

/// Decodes `count` symbols; see the module doc for the layout.
pub(crate) fn decode<T: Symbol>(data: &[u8], count: usize) -> Result<Vec<T>> {
    let (dec, block_log2, sizes, payload) = match read_header(data, count, T::MAX)? {
        Header::Empty => return Ok(Vec::new()),
        Header::Constant(s) => return Ok(vec![T::from_u32(s); count]),
        Header::Blocks {
            dec,
            block_log2,
            sizes,
            payload,
        } => (dec, block_log2, sizes, payload),
    };
    let block = 1usize << block_log2;
    let mut slices = Vec::with_capacity(sizes.len());
    let mut pos = 0usize;
    for len in sizes {
        slices.push(&payload[pos..pos + len]);
        pos += len;
    }
    let mut out = vec![T::default(); count];
    out.par_chunks_mut(2 * block)
        .zip(slices.par_chunks(2))
        .try_for_each(|(o, s)| dec.decode_blocks(s, o, block))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn rt32(v: &[u32]) -> Vec<u8> {
        let e = encode(v);
        let d: Vec<u32> = decode(&e, v.len()).unwrap();
        assert_eq!(d, v);
        e
    }

    #[test]
    fn mk_matches_known_lengths() {
        let mut a = vec![1, 1, 2, 3, 5, 8, 13, 21];
        moffat_katajainen(&mut a);
        assert_eq!(a, vec![7, 7, 6, 5, 4, 3, 2, 1]);
        let mut b = vec![5, 5, 5, 5];
        moffat_katajainen(&mut b);
        assert_eq!(b, vec![2, 2, 2, 2]);
        let mut c = vec![1, 1];
        moffat_katajainen(&mut c);
        assert_eq!(c, vec![1, 1]);
    }

    #[test]
    fn lengths_are_limited_and_complete() {
        // Fibonacci weights would need ~60-bit codes.
        let mut w = vec![1u64, 1];
        while w.len() < 70 {
            let k = w.len();
            w.push(w[k - 1].saturating_add(w[k - 2]));
        }
        let lens = code_lengths(&w);
        assert!(lens.iter().all(|&l| (1..=SOFT_MAX_LEN as u8).contains(&l)));
        let kraft: f64 = lens.iter().map(|&l| 0.5f64.powi(l as i32)).sum();
        assert!((kraft - 1.0).abs() < 1e-12);
        let syms: Vec<u32> = (0..w.len() as u32).collect();
        for count in [1, 1 << 20] {
            DecodeTable::new(&syms, &lens, count).unwrap();
        }
    }

    #[test]
    fn round_trips() {
        assert_eq!(rt32(&[]), vec![0]);
        rt32(&[7]);
        rt32(&[u32::MAX; 1000]);
        rt32(&[0, u32::MAX]);
        rt32(&[u32::MAX, 0, 1, u32::MAX - 1, 5]);
        let mut r = Rng(0x1234_5678);
        for &n in &[1usize, 2, 3, 100, 65535, 65536, 65537, 3 * 65536 + 17] {
            let peaked: Vec<u32> = (0..n)
                .map(|_| {
                    let x = r.next();
                    (x.trailing_zeros() / 2) + if x % 1000 == 0 { 70000 } else { 0 }
                })
                .collect();
            rt32(&peaked);
            let uniform: Vec<u32> = (0..n).map(|_| r.next() as u32 % 200_000).collect();
            rt32(&uniform);
            let wide: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
            rt32(&wide);
        }
        let bytes: Vec<u8> = (0..100_000).map(|_| (r.next() % 7) as u8).collect();
        let e = encode(&bytes);
        assert_eq!(decode::<u8>(&e, bytes.len()).unwrap(), bytes);
        let all: Vec<u8> = (0..=255u8).collect();
        let e = encode(&all);
        assert_eq!(decode::<u8>(&e, all.len()).unwrap(), all);
    }

    #[test]
    fn long_codes_decode() {
        // Geometric weights force codes longer than the primary table.
        let mut v = Vec::new();
        for s in 0..30u32 {
            let reps = 1usize << (20 - s.min(20));
            v.extend(std::iter::repeat(s).take(reps));
        }
        let mut r = Rng(99);
        for i in (1..v.len()).rev() {
            let j = (r.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        // Long enough for the 16-bit primary table, with codes past it; the
        // first 2^18 - 1 symbols alone take the 12-bit one.
        assert_eq!(primary_bits(v.len(), SOFT_MAX_LEN), 16);
        rt32(&v);
        assert_eq!(primary_bits((1 << 18) - 1, SOFT_MAX_LEN), 12);
        rt32(&v[..(1 << 18) - 1]);
    }

    /// Corrupted payloads of a stream long enough for the 16-bit primary
    /// table (the fuzz targets' inputs are too small to reach it): an error
    /// or the right number of symbols, never a panic.
    #[test]
    fn corrupt_payloads_through_the_large_table() {
        let mut r = Rng(7);
        let v: Vec<u32> = (0..300_000)
            .map(|_| match r.next() % 2 {
                0 => (r.next() % 16) as u32,
                _ => (r.next() % (1 << 20)) as u32,
            })
            .collect();
        let e = encode(&v);
        let Header::Blocks { dec, .. } = read_header(&e, v.len(), u32::MAX).unwrap() else {
            panic!("a blocked stream");
        };
        assert_eq!(dec.bits, 16);
        assert!(dec.max_len > 16, "codes past the table");
        for _ in 0..300 {
            let mut c = e.clone();
            for _ in 0..1 + r.next() % 8 {
                let at = (r.next() as usize) % c.len();
                c[at] ^= 1 << (r.next() % 8);
            }
            if let Ok(d) = decode::<u32>(&c, v.len()) {
                assert_eq!(d.len(), v.len());
            }
        }
    }

    #[test]
    fn rejects_bad_tables() {
        // n = 2 symbols {0,1}, lengths 1 and 2 (incomplete): 5-bit fields 0 and 1.
        let mut s = vec![2u8, 0, 1];
        s.push(0b0010_0000);
        s.push(0);
        s.push(16);
        s.push(1);
        s.push(0);
        assert!(decode::<u32>(&s, 1).is_err());
        // Bytes stream with a symbol > 255.
        let e = encode(&[300u32, 1]);
        assert!(decode::<u8>(&e, 2).is_err());
        assert!(decode::<u32>(&e, 2).is_ok());
        // Wrong count.
        assert!(decode::<u32>(&e, 100).is_err());
    }

    #[test]
    fn more_distinct_than_soft_limit_allows() {
        // 2^17 distinct symbols, fine with 24-bit codes; checks the sparse lookup path too.
        let v: Vec<u32> = (0..(1u32 << 17))
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        rt32(&v);
    }
}
