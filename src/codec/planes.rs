//! Layout helpers shared by the stream writers: bitmaps (LSB first) and 32-bit
//! words split into byte planes (all low bytes first), which code far better than
//! interleaved bytes for float bit patterns.

/// Bits to bytes, LSB first. `unpack_bits` needs at least `n.div_ceil(8)` bytes.
pub fn pack_bits(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (k, _) in bits.iter().enumerate().filter(|(_, &b)| b) {
        out[k / 8] |= 1 << (k % 8);
    }
    out
}

pub fn unpack_bits(bytes: &[u8], n: usize) -> Vec<bool> {
    (0..n).map(|k| bytes[k / 8] >> (k % 8) & 1 == 1).collect()
}

/// Set bits among the first n of a bitmap ([`unpack_bits`]'s count of true).
pub fn count_bits(bytes: &[u8], n: usize) -> usize {
    let full = &bytes[..n / 8];
    let mut count: usize = full.iter().map(|b| b.count_ones() as usize).sum();
    if n % 8 != 0 {
        count += (bytes[n / 8] & ((1u8 << (n % 8)) - 1)).count_ones() as usize;
    }
    count
}

pub fn to_planes(words: &[u32]) -> Vec<u8> {
    let n = words.len();
    let mut out = vec![0u8; 4 * n];
    for (k, w) in words.iter().enumerate() {
        for (b, byte) in w.to_le_bytes().into_iter().enumerate() {
            out[b * n + k] = byte;
        }
    }
    out
}

pub fn from_planes(bytes: &[u8]) -> Vec<u32> {
    let n = bytes.len() / 4;
    (0..n)
        .map(|k| u32::from_le_bytes([bytes[k], bytes[n + k], bytes[2 * n + k], bytes[3 * n + k]]))
        .collect()
}
