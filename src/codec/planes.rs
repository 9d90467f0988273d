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

/// The bits of every byte value as 8 bools, LSB first.
const BYTE_BITS: [[bool; 8]; 256] = {
    let mut t = [[false; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b][k] = (b >> k) & 1 == 1;
            k += 1;
        }
        b += 1;
    }
    t
};

/// The first `n` bits of a bitmap, LSB first: a table row per byte (a stream
/// may claim tens of millions of vertices; a loop per bit costs 8x the time).
pub fn unpack_bits(bytes: &[u8], n: usize) -> Vec<bool> {
    let mut out = Vec::with_capacity(n.next_multiple_of(8));
    for &b in &bytes[..n.div_ceil(8)] {
        out.extend_from_slice(&BYTE_BITS[b as usize]);
    }
    out.truncate(n);
    out
}

/// Indices of the set bits among the first `n` of a bitmap, ascending:
/// [`unpack_bits`]'s true positions, a word at a time, without the `Vec<bool>`.
pub fn set_bits(bytes: &[u8], n: usize) -> impl Iterator<Item = usize> + '_ {
    bytes[..n.div_ceil(8)]
        .chunks(8)
        .enumerate()
        .flat_map(move |(w, c)| {
            let mut word = [0u8; 8];
            word[..c.len()].copy_from_slice(c);
            let base = 64 * w;
            let mut x = u64::from_le_bytes(word);
            if n - base < 64 {
                x &= (1u64 << (n - base)) - 1;
            }
            std::iter::from_fn(move || {
                (x != 0).then(|| {
                    let i = x.trailing_zeros() as usize;
                    x &= x - 1;
                    base + i
                })
            })
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_bits_are_unpack_bits_true_positions() {
        // Padding bits past n set on purpose: both must ignore them.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in [0usize, 1, 7, 8, 9, 63, 64, 65, 127, 128, 200, 1000] {
            let bytes: Vec<u8> = (0..n.div_ceil(8))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8 | 0x80
                })
                .collect();
            let bits = unpack_bits(&bytes, n);
            let one_by_one: Vec<bool> = (0..n).map(|k| bytes[k / 8] >> (k % 8) & 1 == 1).collect();
            assert_eq!(bits, one_by_one, "n = {n}");
            let want: Vec<usize> = (0..n).filter(|&k| bits[k]).collect();
            assert_eq!(set_bits(&bytes, n).collect::<Vec<_>>(), want, "n = {n}");
            assert_eq!(unpack_bits(&pack_bits(&bits), n), bits, "n = {n}");
        }
    }
}
