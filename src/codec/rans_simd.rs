//! The rANS coder's 32-lane groups with AVX2 (`rans.rs` calls them where the
//! CPU has AVX2; its scalar code gives the same bytes and symbols elsewhere).
//!
//! Four vectors of eight states. Decoding, each vector steps its eight states
//! with one gather from the packed slot table, then renormalizes them as a
//! warp does: the lanes that need a word take the next words in lane order,
//! each lane picking its word by the count of needy lanes below it
//! (`EXPAND`). Encoding runs the other way: the needy lanes' words are packed
//! to the top of a vector in lane order (`PACK_HIGH`) and stored below the
//! words already written. The read or write position is the only thing
//! carried from vector to vector.

use std::arch::x86_64::*;

/// `EXPAND[m][j]`: the word that lane j reads when the lanes in mask `m`
/// need one (the count of lanes of `m` below j).
static EXPAND: [[u32; 8]; 256] = expand_table();

/// `PACK_HIGH[m]`: the lanes of mask `m` in ascending order, in the top
/// `popcount(m)` slots of a vector (the others: lane 0).
static PACK_HIGH: [[u32; 8]; 256] = pack_high_table();

const fn pack_high_table() -> [[u32; 8]; 256] {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let n = (m as u32).count_ones() as usize;
        let (mut j, mut k) = (0, 8 - n);
        while j < 8 {
            if (m >> j) & 1 == 1 {
                t[m][k] = j as u32;
                k += 1;
            }
            j += 1;
        }
        m += 1;
    }
    t
}

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

/// The 32 states as four vectors of eight.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load_states(x: &[u32; 32]) -> [__m256i; 4] {
    // SAFETY: four 32-byte loads within x's 128 bytes.
    unsafe {
        let p = x.as_ptr() as *const __m256i;
        [
            _mm256_loadu_si256(p),
            _mm256_loadu_si256(p.add(1)),
            _mm256_loadu_si256(p.add(2)),
            _mm256_loadu_si256(p.add(3)),
        ]
    }
}

/// [`load_states`]' inverse.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store_states(x: &mut [u32; 32], v: [__m256i; 4]) {
    // SAFETY: four 32-byte stores within x's 128 bytes.
    unsafe {
        let p = x.as_mut_ptr() as *mut __m256i;
        for (k, vk) in v.iter().enumerate() {
            _mm256_storeu_si256(p.add(k), *vk);
        }
    }
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
        let mut v = load_states(x);
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
        store_states(x, v);
        *pos = p;
        done
    }
}

/// floor(x / f) of four lanes, x given as x - 2^31 (i32) and `two31` = 2^31:
/// both exact in f64, the quotient non-negative, so truncation is the floor.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn quotient(x_signed: __m128i, f: __m128i, two31: __m256d) -> __m128i {
    let x = _mm256_add_pd(_mm256_cvtepi32_pd(x_signed), two31);
    _mm256_cvttpd_epi32(_mm256_div_pd(x, _mm256_cvtepi32_pd(f)))
}

/// The encoder's table of one plane for [`encode_groups`], per byte value:
/// `x_max` (renormalize at or above it), the frequency, and the complement
/// and start packed as `4096 - freq | start << 16`.
pub(super) struct EncTable {
    pub x_max: [u32; 256],
    pub freq: [u32; 256],
    pub cmpl_start: [u32; 256],
}

/// Encodes whole groups of 32 symbols as `encode_block` does, the last group
/// first: `syms` holds the plane's bytes (one per u32, every one with a
/// frequency), the states `x` start as the state before the first group
/// coded. Words are written backwards below `top` of `buf`, `*nw` of them
/// so far (`buf[top - 2 *nw..top]`); up to 16 bytes below the last word are
/// scratch. Each q = floor(x / freq) comes from an f64 quotient: x < 2^32 and
/// freq < 2^13, so a quotient that is not an integer is at least 2^-12 from
/// one and its rounding (at most 2^-21) never reaches it.
///
/// # Safety
/// The CPU must have AVX2; `buf` must hold `top`, and 2 (`*nw` + the
/// symbols) + 16 bytes below it.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn encode_groups(
    x: &mut [u32; 32],
    syms: &[u32],
    t: &EncTable,
    buf: &mut [u8],
    top: usize,
    nw: &mut usize,
) {
    // SAFETY: AVX2 is present (the caller's contract). Loads and stores of x
    // and syms stay within them (whole groups of 32); gather indices are
    // bytes, within the 256-entry tables; each vector's 16-byte store ends at
    // top - 2 nw, at least 16 bytes above buf's start (the caller's slack).
    unsafe {
        let mut v = load_states(x);
        let (x_max, freq, cs) = (
            t.x_max.as_ptr() as *const i32,
            t.freq.as_ptr() as *const i32,
            t.cmpl_start.as_ptr() as *const i32,
        );
        let low16 = _mm256_set1_epi32(0xffff);
        let sign = _mm256_set1_epi32(i32::MIN);
        let two31 = _mm256_set1_pd(2147483648.0);
        // The low two bytes of each 32-bit lane, per 128-bit half.
        let words16 = _mm256_setr_epi8(
            0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9, 12, 13, -1,
            -1, -1, -1, -1, -1, -1, -1,
        );
        let mut n = *nw;
        let base = buf.as_mut_ptr().add(top);
        for g in syms.chunks_exact(32).rev() {
            for k in (0..4).rev() {
                let xv = v[k];
                let s = _mm256_loadu_si256(g.as_ptr().add(8 * k) as *const __m256i);
                let xm = _mm256_i32gather_epi32::<4>(x_max, s);
                // x >= x_max, unsigned.
                let need = _mm256_cmpeq_epi32(_mm256_max_epu32(xv, xm), xv);
                let m = _mm256_movemask_ps(_mm256_castsi256_ps(need)) as usize;
                let cnt = (m as u32).count_ones() as usize;
                // The needy lanes' low halves, ascending, at the vector's top.
                let idx = _mm256_loadu_si256(PACK_HIGH[m].as_ptr() as *const __m256i);
                let w = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(xv, idx), words16);
                let w = _mm256_permute4x64_epi64::<0b1000>(w);
                _mm_storeu_si128(
                    base.sub(2 * n + 16) as *mut __m128i,
                    _mm256_castsi256_si128(w),
                );
                n += cnt;
                let xr = _mm256_blendv_epi8(xv, _mm256_srli_epi32::<16>(xv), need);
                // q = floor(x / freq) in f64, four lanes at a time.
                let f = _mm256_i32gather_epi32::<4>(freq, s);
                // x as f64: the sign-flipped word as i32, plus 2^31.
                let xs = _mm256_xor_si256(xr, sign);
                let q = _mm256_set_m128i(
                    quotient(
                        _mm256_extracti128_si256::<1>(xs),
                        _mm256_extracti128_si256::<1>(f),
                        two31,
                    ),
                    quotient(_mm256_castsi256_si128(xs), _mm256_castsi256_si128(f), two31),
                );
                let c = _mm256_i32gather_epi32::<4>(cs, s);
                let cmpl = _mm256_and_si256(c, low16);
                let start = _mm256_srli_epi32::<16>(c);
                v[k] = _mm256_add_epi32(_mm256_add_epi32(xr, _mm256_mullo_epi32(q, cmpl)), start);
            }
        }
        store_states(x, v);
        *nw = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_high_puts_the_mask_lanes_on_top() {
        for (m, row) in PACK_HIGH.iter().enumerate() {
            let n = m.count_ones() as usize;
            let lanes: Vec<u32> = (0..8).filter(|j| m >> j & 1 == 1).collect();
            assert_eq!(&row[8 - n..], &lanes[..]);
        }
    }

    #[test]
    fn expand_counts_the_lanes_below() {
        for (m, row) in EXPAND.iter().enumerate() {
            for (j, &k) in row.iter().enumerate() {
                assert_eq!(k, (m & ((1 << j) - 1)).count_ones());
            }
        }
    }
}
