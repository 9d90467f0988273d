//! Little-endian (LSB-first) bit writer and reader used by the Huffman coder.
//!
//! Layout: bits are packed from the least significant bit of each byte
//! upward; a field of `n` bits written with `put` occupies the next `n` bit
//! positions, its least significant bit first. The final partial byte is
//! zero-padded. The reader serves up to 32 bits at a time from a 64-bit
//! buffer and, past the end of its input, supplies zero bits while tracking
//! how many it consumed so the caller can detect overruns (`finish`).

use crate::error::{Error, Result};

/// Accumulates bit fields of up to 32 bits into bytes.
pub(crate) struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(bytes),
            acc: 0,
            nbits: 0,
        }
    }

    /// Writes the low `len` bits of `value` (`len <= 32`, higher bits of `value` zero).
    #[inline(always)]
    pub(crate) fn put(&mut self, value: u64, len: u32) {
        debug_assert!(len <= 32 && (len == 32 || value >> len == 0));
        self.acc |= value << self.nbits;
        self.nbits += len;
        if self.nbits >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.nbits -= 32;
        }
    }

    /// Flushes the pending bits (zero-padded to a byte) and returns the bytes.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        while self.nbits > 0 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.nbits = self.nbits.saturating_sub(8);
        }
        self.out
    }
}

/// Reads bit fields from a byte slice; see the module doc.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// Bytes loaded into `buf` so far (may pass `data.len()` by the zero bytes supplied past the end).
    pos: usize,
    buf: u64,
    nbits: u32,
}

/// Byte-wise refill near the end of the input (zero bytes past it). Takes and
/// returns the reader's fields by value so the hot loop keeps them in registers.
#[cold]
#[inline(never)]
fn refill_slow(data: &[u8], mut pos: usize, mut buf: u64, mut nbits: u32) -> (usize, u64, u32) {
    while nbits <= 56 {
        let b = data.get(pos).copied().unwrap_or(0);
        buf |= u64::from(b) << nbits;
        pos += 1;
        nbits += 8;
    }
    (pos, buf, nbits)
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            buf: 0,
            nbits: 0,
        }
    }

    /// A reader positioned at bit `bit` of `data`, as if that many bits had
    /// been read. Past the end it reads zero bits and `finish` reports an
    /// overrun (the position is clamped there, so nothing overflows).
    pub(crate) fn at(data: &'a [u8], bit: u64) -> Self {
        let mut r = BitReader {
            data,
            pos: usize::try_from(bit / 8).map_or(data.len() + 1, |p| p.min(data.len() + 1)),
            buf: 0,
            nbits: 0,
        };
        r.get((bit % 8) as u32);
        r
    }

    /// Ensures at least 32 valid bits are buffered (zero bits past the end of input).
    #[inline(always)]
    pub(crate) fn refill(&mut self) {
        if self.nbits < 32 {
            if let Some(w) = self.data.get(self.pos..self.pos + 8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(w);
                self.buf |= u64::from_le_bytes(b) << self.nbits;
                let take = (63 - self.nbits) >> 3;
                self.pos += take as usize;
                self.nbits += take * 8;
            } else {
                (self.pos, self.buf, self.nbits) =
                    refill_slow(self.data, self.pos, self.buf, self.nbits);
            }
        }
    }

    /// The buffered bits, next bit in the least significant position (call `refill` first).
    #[inline(always)]
    pub(crate) fn peek(&self) -> u64 {
        self.buf
    }

    /// Drops `len <= 32` bits; only valid right after `refill`.
    #[inline(always)]
    pub(crate) fn consume(&mut self, len: u32) {
        debug_assert!(len <= self.nbits && len <= 32);
        self.buf >>= len;
        self.nbits -= len;
    }

    /// Reads `len <= 32` bits.
    #[inline(always)]
    pub(crate) fn get(&mut self, len: u32) -> u32 {
        self.refill();
        let v = if len == 0 {
            0
        } else {
            (self.buf & (u64::MAX >> (64 - len))) as u32
        };
        self.consume(len);
        v
    }

    /// Bits consumed so far (including any zero bits supplied past the end).
    pub(crate) fn consumed_bits(&self) -> u64 {
        (self.pos as u64) * 8 - u64::from(self.nbits)
    }

    /// Checks that exactly the input's bytes were used: no bits read past the
    /// end, no whole unused byte left, and the padding bits of the last byte zero.
    pub(crate) fn finish(mut self) -> Result<()> {
        let used = self.consumed_bits();
        let total = (self.data.len() as u64) * 8;
        if used > total {
            return Err(Error::corrupt("bit stream overrun"));
        }
        let rem = total - used;
        if rem >= 8 {
            return Err(Error::corrupt("bit stream has trailing bytes"));
        }
        if rem > 0 {
            let pad = self.get(rem as u32);
            if pad != 0 {
                return Err(Error::corrupt("bit stream padding is not zero"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        let fields: Vec<(u64, u32)> = (0..1000u64)
            .map(|i| {
                let len = (i % 33) as u32;
                let v = if len == 0 {
                    0
                } else {
                    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) & (u64::MAX >> (64 - len))
                };
                (v, len)
            })
            .collect();
        let mut w = BitWriter::with_capacity(16);
        for &(v, l) in &fields {
            w.put(v, l);
        }
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        for &(v, l) in &fields {
            assert_eq!(u64::from(r.get(l)), v);
        }
        r.finish().unwrap();
    }

    /// `at` reads from any bit what a reader that got there reads, and past
    /// the end reports an overrun.
    #[test]
    fn reader_at_any_bit() {
        let bytes: Vec<u8> = (0..40u32).map(|i| (i * 73 + 11) as u8).collect();
        for bit in 0..8 * bytes.len() as u64 {
            let mut walked = BitReader::new(&bytes);
            walked.get((bit % 32) as u32);
            for _ in 0..bit / 32 {
                walked.get(32);
            }
            let mut placed = BitReader::at(&bytes, bit);
            assert_eq!(placed.consumed_bits(), bit);
            let left = (8 * bytes.len() as u64 - bit).min(29) as u32;
            assert_eq!(placed.get(left), walked.get(left), "bit {bit}");
        }
        BitReader::at(&bytes, 8 * bytes.len() as u64)
            .finish()
            .unwrap();
        for past in [8 * bytes.len() as u64 + 1, 1 << 40, u64::MAX] {
            assert!(BitReader::at(&bytes, past).finish().is_err(), "{past}");
        }
    }

    #[test]
    fn reader_detects_overrun_and_trailing() {
        let mut w = BitWriter::with_capacity(4);
        w.put(0b101, 3);
        let bytes = w.finish();
        assert_eq!(bytes, vec![0b101]);
        let mut r = BitReader::new(&bytes);
        r.get(3);
        r.finish().unwrap();
        let mut r = BitReader::new(&bytes);
        r.get(9);
        assert!(r.finish().is_err());
        let two = [0b101u8, 0];
        let mut r = BitReader::new(&two);
        r.get(3);
        assert!(r.finish().is_err());
        let dirty = [0b1101u8];
        let mut r = BitReader::new(&dirty);
        r.get(3);
        assert!(r.finish().is_err());
    }
}
