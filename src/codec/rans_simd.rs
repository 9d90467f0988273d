//! The rANS decoder's 32-lane groups with AVX2 (`rans.rs` calls it where the
//! CPU has AVX2; the scalar quads decode the same bytes elsewhere).
//!
//! Four vectors of eight states: each vector steps its eight states with one
//! gather from the packed slot table, then renormalizes them as a warp does:
//! the lanes that need a word take the next words in lane order, each lane
//! picking its word by the count of needy lanes below it (`EXPAND`). The read
//! position is the only thing carried from vector to vector.

use std::arch::x86_64::*;

/// `EXPAND[m][j]`: the word that lane j reads when the lanes in mask `m`
/// need one (the count of lanes of `m` below j).
static EXPAND: [[u32; 8]; 256] = expand_table();

const fn expand_table() -> [[u32; 8]; 256] {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut j, mut k) = (0, 0u32);
        while j < 8 {
            t[m][j] = k;
            k += ((m >> j) & 1) as u32;
            j += 1;
        }
        m += 1;
    }
    t
}

/// Decodes whole groups of 32 symbols, one per lane, from states `x` and the
/// words of `data` from `*pos`, writing each symbol's byte to `syms` (one
/// group per 32 entries). `packed[slot]` = (freq - 1) | bias << 12 | symbol
/// << 24. Stops before a group whose 32 words might run past `data` (the
/// scalar decoder takes it, with its checks); returns the symbols decoded.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn decode_groups(
    x: &mut [u32; 32],
    packed: &[u32; 4096],
    data: &[u8],
    pos: &mut usize,
    syms: &mut [u32],
) -> usize {
    // SAFETY: AVX2 is present (the caller's contract). The loads and stores
    // of x and syms stay within them (8 lanes at 0, 8, 16, 24 of 32); every
    // gather index is masked to 12 bits, within packed's 4096; a group starts
    // only with 64 bytes left from p, and its four vectors read 16 bytes each
    // at p + at most 2 x 24 (the words taken by the vectors before).
    unsafe {
        let xp = x.as_mut_ptr() as *mut __m256i;
        let mut v = [
            _mm256_loadu_si256(xp),
            _mm256_loadu_si256(xp.add(1)),
            _mm256_loadu_si256(xp.add(2)),
            _mm256_loadu_si256(xp.add(3)),
        ];
        let mask12 = _mm256_set1_epi32(0xfff);
        let one = _mm256_set1_epi32(1);
        let zero = _mm256_setzero_si256();
        let table = packed.as_ptr() as *const i32;
        let mut p = *pos;
        let mut done = 0;
        for g in syms.chunks_exact_mut(32) {
            if data.len().saturating_sub(p) < 64 {
                break;
            }
            for (k, vk) in v.iter_mut().enumerate() {
                let xv = *vk;
                let e = _mm256_i32gather_epi32::<4>(table, _mm256_and_si256(xv, mask12));
                let f = _mm256_add_epi32(_mm256_and_si256(e, mask12), one);
                let bias = _mm256_and_si256(_mm256_srli_epi32::<12>(e), mask12);
                // dec_core: freq * (x >> 12) + bias, below 2^32.
                let xn = _mm256_add_epi32(_mm256_mullo_epi32(f, _mm256_srli_epi32::<12>(xv)), bias);
                _mm256_storeu_si256(
                    g.as_mut_ptr().add(8 * k) as *mut __m256i,
                    _mm256_srli_epi32::<24>(e),
                );
                let need = _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>(xn), zero);
                let m = _mm256_movemask_ps(_mm256_castsi256_ps(need)) as usize;
                let words =
                    _mm256_cvtepu16_epi32(_mm_loadu_si128(data.as_ptr().add(p) as *const __m128i));
                let idx = _mm256_loadu_si256(EXPAND[m].as_ptr() as *const __m256i);
                let w = _mm256_permutevar8x32_epi32(words, idx);
                let renormed = _mm256_or_si256(_mm256_slli_epi32::<16>(xn), w);
                *vk = _mm256_blendv_epi8(xn, renormed, need);
                p += 2 * (m as u32).count_ones() as usize;
            }
            done += 32;
        }
        for (k, vk) in v.iter().enumerate() {
            _mm256_storeu_si256(xp.add(k), *vk);
        }
        *pos = p;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_counts_the_lanes_below() {
        for (m, row) in EXPAND.iter().enumerate() {
            for (j, &k) in row.iter().enumerate() {
                assert_eq!(k, (m & ((1 << j) - 1)).count_ones());
            }
        }
    }
}
