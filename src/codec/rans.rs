//! Byte-plane rANS: the CPU counterpart of nvCOMP's ANS coder (not stream-compatible with it).
//!
//! A `u32` symbol is split into four byte planes (plane k = byte k); planes
//! that are zero for every symbol are not stored. Each stored plane is coded
//! with a byte-alphabet rANS (32-bit state in [2^16, 2^32), 12-bit normalized
//! frequencies, 16-bit renormalization, 4 interleaved states) in independent
//! blocks sharing the plane's frequency table. Byte streams are one plane.
//!
//! Stream layout (varints are unsigned LEB128, see `varint`):
//!
//! ```text
//! u8  block_log2            symbols per block = 1 << block_log2 (10..=24; the encoder uses 16)
//! u8  plane_mask            bit k set = plane k stored (u32: bits 0..=3, bytes: bit 0 only)
//! per stored plane, k ascending:
//!   u8 kind                 0 = constant plane, 1 = rANS-coded plane
//!   kind 0:  u8 value       every symbol has this byte in plane k
//!   kind 1:  u8 m-1         m distinct byte values in the plane (m >= 1)
//!            m x (u8 value strictly ascending, varint freq-1)   frequencies sum to 4096
//!            varint block_bytes, one per block: ceil(count / block size) blocks
//!            block payloads, concatenated. A payload is: the four final encoder
//!            states (u32 LE each, state j codes symbols i with i % 4 == j),
//!            then the renormalization words (u16 LE) in the order the decoder
//!            reads them: symbols in order, each decoded state below 2^16 reads
//!            one word. Decoding a block must consume it exactly and end with
//!            every state = 2^16 (the encoder's initial state).
//! ```

use rayon::prelude::*;

use super::varint::{get_u8, get_uvarint_max, put_uvarint};
use crate::error::{Error, Result};

const PROB_BITS: u32 = 12;
const PROB_SCALE: u32 = 1 << PROB_BITS;
const RANS_L: u32 = 1 << 16;
const STATES: usize = 4;
const BLOCK_LOG2: u8 = 16;
const MIN_BLOCK_LOG2: u8 = 10;
const MAX_BLOCK_LOG2: u8 = 24;
const KIND_CONST: u8 = 0;
const KIND_RANS: u8 = 1;

/// A symbol type split into byte planes (`u32` codes: 4 planes, `u8` bytes: 1).
pub(crate) trait PlaneSym: Copy + Send + Sync + Default + 'static {
    const PLANES: u32;
    /// Byte `shift / 8` of the symbol.
    fn plane(self, shift: u32) -> u8;
    /// Adds byte `b` as plane `shift / 8` of a symbol whose plane is still zero.
    fn merge(&mut self, b: u8, shift: u32);
    fn or_all(s: &[Self]) -> u32;
}

impl PlaneSym for u32 {
    const PLANES: u32 = 4;
    #[inline(always)]
    fn plane(self, shift: u32) -> u8 {
        (self >> shift) as u8
    }
    #[inline(always)]
    fn merge(&mut self, b: u8, shift: u32) {
        *self |= u32::from(b) << shift;
    }
    fn or_all(s: &[Self]) -> u32 {
        s.par_chunks(1 << 16)
            .map(|c| c.iter().fold(0u32, |a, &x| a | x))
            .reduce(|| 0, |a, b| a | b)
    }
}

impl PlaneSym for u8 {
    const PLANES: u32 = 1;
    #[inline(always)]
    fn plane(self, _shift: u32) -> u8 {
        self
    }
    #[inline(always)]
    fn merge(&mut self, b: u8, _shift: u32) {
        *self = b;
    }
    fn or_all(s: &[Self]) -> u32 {
        u32::from(
            s.par_chunks(1 << 16)
                .map(|c| c.iter().fold(0u8, |a, &x| a | x))
                .reduce(|| 0, |a, b| a | b),
        )
    }
}

// ---------------------------------------------------------------- encoder

/// Histograms of the planes at `shifts`, in one pass over `src`.
fn plane_histograms<T: PlaneSym>(src: &[T], shifts: &[u32]) -> Vec<[u64; 256]> {
    let np = shifts.len();
    src.par_chunks(1 << 18)
        .map(|c| {
            // Two sub-tables per plane so repeated symbols do not serialize on one counter.
            let mut h = vec![[0u32; 256]; 2 * np];
            let mut it = c.chunks_exact(2);
            for q in &mut it {
                for (p, &sh) in shifts.iter().enumerate() {
                    h[2 * p][q[0].plane(sh) as usize] += 1;
                    h[2 * p + 1][q[1].plane(sh) as usize] += 1;
                }
            }
            for x in it.remainder() {
                for (p, &sh) in shifts.iter().enumerate() {
                    h[2 * p][x.plane(sh) as usize] += 1;
                }
            }
            (0..np)
                .map(|p| {
                    let mut o = [0u64; 256];
                    for (i, v) in o.iter_mut().enumerate() {
                        *v = u64::from(h[2 * p][i]) + u64::from(h[2 * p + 1][i]);
                    }
                    o
                })
                .collect::<Vec<_>>()
        })
        .reduce(
            || vec![[0u64; 256]; np],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    for (u, v) in x.iter_mut().zip(y) {
                        *u += v;
                    }
                }
                a
            },
        )
}

/// Frequencies summing to PROB_SCALE, >= 1 for every present symbol (at least two present).
fn normalize(hist: &[u64; 256]) -> [u32; 256] {
    let total: u64 = hist.iter().sum();
    let mut f = [0u32; 256];
    let mut best = 0usize;
    for (s, &c) in hist.iter().enumerate() {
        if c > 0 {
            let scaled = (u128::from(c) * u128::from(PROB_SCALE) + u128::from(total / 2))
                / u128::from(total.max(1));
            f[s] = (scaled as u32).clamp(1, PROB_SCALE);
            if c > hist[best] {
                best = s;
            }
        }
    }
    let mut sum: u32 = f.iter().sum();
    if sum < PROB_SCALE {
        f[best] += PROB_SCALE - sum;
        sum = PROB_SCALE;
    }
    while sum > PROB_SCALE {
        // Take from the largest frequency (cheapest in code length); each pass either
        // finishes or brings that symbol to 1, so this runs at most 256 times.
        let (k, &fk) = f
            .iter()
            .enumerate()
            .max_by_key(|&(i, &v)| (v, std::cmp::Reverse(i)))
            .unwrap_or((0, &1));
        if fk <= 1 {
            break;
        }
        let take = (sum - PROB_SCALE).min(fk - 1);
        f[k] -= take;
        sum -= take;
    }
    debug_assert_eq!(f.iter().sum::<u32>(), PROB_SCALE);
    f
}

#[derive(Clone, Copy, Default)]
struct EncSym {
    /// Reciprocal of freq: x / freq == (x * rcp) >> 44 for every state x < 2^32.
    rcp: u64,
    freq: u32,
    start: u32,
    /// Renormalize (emit one 16-bit word) when the state is >= x_max.
    x_max: u64,
}

fn enc_table(freq: &[u32; 256]) -> [EncSym; 256] {
    let mut t = [EncSym::default(); 256];
    let mut start = 0u32;
    for (s, &f) in freq.iter().enumerate() {
        if f > 0 {
            t[s] = EncSym {
                rcp: (1u64 << 44) / u64::from(f) + 1,
                freq: f,
                start,
                x_max: u64::from((RANS_L >> PROB_BITS) << 16) * u64::from(f),
            };
            start += f;
        }
    }
    t
}

#[inline(always)]
fn enc_step(x: &mut u32, e: &EncSym, out: &mut Vec<u16>) {
    let mut y = *x;
    // States live in [2^16, 2^32); one word brings y below x_max = 2^20 * freq.
    if u64::from(y) >= e.x_max {
        out.push(y as u16);
        y >>= 16;
    }
    let q = ((u128::from(y) * u128::from(e.rcp)) >> 44) as u32;
    *x = (q << PROB_BITS) + (y - q * e.freq) + e.start;
}

fn encode_block<T: PlaneSym>(src: &[T], shift: u32, t: &[EncSym; 256]) -> Vec<u8> {
    let mut words: Vec<u16> = Vec::with_capacity(src.len() / 2 + 16);
    let mut x = [RANS_L; STATES];
    let n = src.len();
    let full = n - n % STATES;
    for i in (full..n).rev() {
        enc_step(
            &mut x[i % STATES],
            &t[src[i].plane(shift) as usize],
            &mut words,
        );
    }
    for q in src[..full].rchunks_exact(STATES) {
        enc_step(&mut x[3], &t[q[3].plane(shift) as usize], &mut words);
        enc_step(&mut x[2], &t[q[2].plane(shift) as usize], &mut words);
        enc_step(&mut x[1], &t[q[1].plane(shift) as usize], &mut words);
        enc_step(&mut x[0], &t[q[0].plane(shift) as usize], &mut words);
    }
    let mut out = Vec::with_capacity(4 * STATES + 2 * words.len());
    for s in x {
        out.extend_from_slice(&s.to_le_bytes());
    }
    for w in words.iter().rev() {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

/// How the encoder codes one stored plane.
enum EncPlane {
    Const(u8),
    Rans(Box<[EncSym; 256]>),
}

/// Encodes `src`; see the module doc for the layout.
pub(crate) fn encode<T: PlaneSym>(src: &[T]) -> Vec<u8> {
    let or = T::or_all(src);
    let shifts: Vec<u32> = (0..T::PLANES)
        .filter(|k| (or >> (8 * k)) & 0xff != 0)
        .map(|k| 8 * k)
        .collect();
    let mask = shifts.iter().fold(0u8, |m, &sh| m | (1 << (sh / 8)));
    let mut headers: Vec<Vec<u8>> = Vec::with_capacity(shifts.len());
    let mut planes: Vec<EncPlane> = Vec::with_capacity(shifts.len());
    for hist in plane_histograms(src, &shifts) {
        let present: Vec<usize> = (0..256).filter(|&s| hist[s] > 0).collect();
        let mut h = Vec::new();
        if present.len() == 1 {
            h.push(KIND_CONST);
            h.push(present[0] as u8);
            planes.push(EncPlane::Const(present[0] as u8));
        } else {
            let freq = normalize(&hist);
            h.push(KIND_RANS);
            h.push((present.len() - 1) as u8);
            for &s in &present {
                h.push(s as u8);
                put_uvarint(&mut h, u64::from(freq[s] - 1));
            }
            planes.push(EncPlane::Rans(Box::new(enc_table(&freq))));
        }
        headers.push(h);
    }
    // Block-major: each block's planes are coded while the block is in cache.
    let blocks: Vec<Vec<Vec<u8>>> = src
        .par_chunks(1 << BLOCK_LOG2)
        .map(|b| {
            planes
                .iter()
                .zip(&shifts)
                .map(|(p, &sh)| match p {
                    EncPlane::Const(_) => Vec::new(),
                    EncPlane::Rans(t) => encode_block(b, sh, t),
                })
                .collect()
        })
        .collect();
    let mut out = vec![BLOCK_LOG2, mask];
    out.reserve(blocks.iter().flatten().map(|b| b.len() + 3).sum());
    for (p, (plane, header)) in planes.iter().zip(&headers).enumerate() {
        out.extend_from_slice(header);
        if let EncPlane::Rans(_) = plane {
            for b in &blocks {
                put_uvarint(&mut out, b[p].len() as u64);
            }
            for b in &blocks {
                out.extend_from_slice(&b[p]);
            }
        }
    }
    out
}

// ---------------------------------------------------------------- decoder

/// Slot -> symbol | (freq - 1) << 8 | (slot - start) << 20.
type DecTable = Box<[u32; PROB_SCALE as usize]>;

enum Plane<'a> {
    Const(u8),
    Rans(DecTable, Vec<&'a [u8]>),
}

/// One decoding step without renormalization; returns the symbol.
#[inline(always)]
fn dec_core(x: &mut u32, t: &[u32; PROB_SCALE as usize]) -> u8 {
    let e = t[(*x & (PROB_SCALE - 1)) as usize];
    // No overflow: freq * (x >> 12) + bias <= 4096 * (2^20 - 1) + 4095 < 2^32.
    *x = (((e >> 8) & 0xfff) + 1) * (*x >> PROB_BITS) + (e >> 20);
    e as u8
}

/// Renormalization with bounds checks (block tails).
#[inline(always)]
fn renorm_checked(x: &mut u32, data: &[u8], pos: &mut usize) -> Result<()> {
    if *x < RANS_L {
        let w = data
            .get(*pos..*pos + 2)
            .ok_or_else(|| Error::corrupt("rans: truncated block"))?;
        *x = (*x << 16) | u32::from(u16::from_le_bytes([w[0], w[1]]));
        *pos += 2;
    }
    Ok(())
}

/// Branch-free renormalization; the caller guarantees `pos + 2 <= data.len()`.
#[inline(always)]
fn renorm_fast(x: &mut u32, w: &[u8; 8], off: &mut usize) {
    let need = *x < RANS_L;
    let o = *off & 7;
    let word = u32::from(w[o]) | (u32::from(w[(o + 1) & 7]) << 8);
    *x = if need { (*x << 16) | word } else { *x };
    *off += 2 * usize::from(need);
}

fn decode_block<T: PlaneSym>(
    t: &[u32; PROB_SCALE as usize],
    data: &[u8],
    out: &mut [T],
    shift: u32,
) -> Result<()> {
    let mut x = [0u32; STATES];
    for (j, s) in x.iter_mut().enumerate() {
        let b = data
            .get(4 * j..4 * j + 4)
            .ok_or_else(|| Error::corrupt("rans: truncated block header"))?;
        *s = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if *s < RANS_L {
            return Err(Error::corrupt("rans: invalid initial state"));
        }
    }
    let mut pos = 4 * STATES;
    let mut quads = out.chunks_exact_mut(STATES);
    for q in &mut quads {
        let s0 = dec_core(&mut x[0], t);
        let s1 = dec_core(&mut x[1], t);
        let s2 = dec_core(&mut x[2], t);
        let s3 = dec_core(&mut x[3], t);
        q[0].merge(s0, shift);
        q[1].merge(s1, shift);
        q[2].merge(s2, shift);
        q[3].merge(s3, shift);
        // The four states need at most 8 bytes.
        if let Some(w) = data.get(pos..pos + 8) {
            let mut w8 = [0u8; 8];
            w8.copy_from_slice(w);
            let mut off = 0usize;
            renorm_fast(&mut x[0], &w8, &mut off);
            renorm_fast(&mut x[1], &w8, &mut off);
            renorm_fast(&mut x[2], &w8, &mut off);
            renorm_fast(&mut x[3], &w8, &mut off);
            pos += off;
        } else {
            for s in x.iter_mut() {
                renorm_checked(s, data, &mut pos)?;
            }
        }
    }
    for (j, o) in quads.into_remainder().iter_mut().enumerate() {
        let s = dec_core(&mut x[j], t);
        renorm_checked(&mut x[j], data, &mut pos)?;
        o.merge(s, shift);
    }
    if pos != data.len() {
        return Err(Error::corrupt("rans: block has trailing bytes"));
    }
    if x.iter().any(|&s| s != RANS_L) {
        return Err(Error::corrupt("rans: final state mismatch"));
    }
    Ok(())
}

fn parse_plane<'a>(data: &'a [u8], pos: &mut usize, n_blocks: usize) -> Result<Plane<'a>> {
    let kind = get_u8(data, pos, "rans: plane kind")?;
    match kind {
        KIND_CONST => Ok(Plane::Const(get_u8(data, pos, "rans: constant plane")?)),
        KIND_RANS => {
            let m = usize::from(get_u8(data, pos, "rans: symbol count")?) + 1;
            let mut t: DecTable = vec![0u32; PROB_SCALE as usize]
                .into_boxed_slice()
                .try_into()
                .map_err(|_| Error::internal("rans: table size"))?;
            let mut start = 0u32;
            let mut prev: Option<u8> = None;
            for _ in 0..m {
                let s = get_u8(data, pos, "rans: symbol")?;
                if prev.is_some_and(|p| s <= p) {
                    return Err(Error::corrupt("rans: symbols not ascending"));
                }
                prev = Some(s);
                let f = get_uvarint_max(data, pos, u64::from(PROB_SCALE - 1), "rans: frequency")?
                    as u32
                    + 1;
                if start + f > PROB_SCALE {
                    return Err(Error::corrupt("rans: frequencies exceed the scale"));
                }
                for k in 0..f {
                    t[(start + k) as usize] = u32::from(s) | ((f - 1) << 8) | (k << 20);
                }
                start += f;
            }
            if start != PROB_SCALE {
                return Err(Error::corrupt("rans: frequencies do not sum to the scale"));
            }
            // Each block is at least the 16 bytes of its states.
            if n_blocks > data.len().saturating_sub(*pos) / (4 * STATES) {
                return Err(Error::corrupt("rans: block count exceeds stream size"));
            }
            let mut sizes = Vec::with_capacity(n_blocks);
            for _ in 0..n_blocks {
                sizes.push(get_uvarint_max(
                    data,
                    pos,
                    data.len() as u64,
                    "rans: block length",
                )?);
            }
            let mut blocks = Vec::with_capacity(n_blocks);
            for len in sizes {
                let b = data
                    .get(*pos..pos.saturating_add(len))
                    .ok_or_else(|| Error::corrupt("rans: truncated block"))?;
                *pos += len;
                blocks.push(b);
            }
            Ok(Plane::Rans(t, blocks))
        }
        _ => Err(Error::corrupt(format!("rans: unknown plane kind {kind}"))),
    }
}

/// Decodes `count` symbols; see the module doc for the layout.
pub(crate) fn decode<T: PlaneSym>(data: &[u8], count: usize) -> Result<Vec<T>> {
    let mut pos = 0usize;
    let block_log2 = get_u8(data, &mut pos, "rans: block size")?;
    if !(MIN_BLOCK_LOG2..=MAX_BLOCK_LOG2).contains(&block_log2) {
        return Err(Error::corrupt("rans: block size out of range"));
    }
    let mask = get_u8(data, &mut pos, "rans: plane mask")?;
    if u32::from(mask) >> T::PLANES != 0 {
        return Err(Error::corrupt("rans: invalid plane mask"));
    }
    let block = 1usize << block_log2;
    let n_blocks = count.div_ceil(block);
    let mut planes = Vec::new();
    for k in 0..T::PLANES {
        if mask & (1 << k) != 0 {
            planes.push((8 * k, parse_plane(data, &mut pos, n_blocks)?));
        }
    }
    if pos != data.len() {
        return Err(Error::corrupt("rans: trailing bytes"));
    }
    let mut out = vec![T::default(); count];
    // Block-major: a block's output stays in cache while every plane is merged in.
    out.par_chunks_mut(block)
        .enumerate()
        .try_for_each(|(bi, o)| -> Result<()> {
            for (shift, plane) in &planes {
                match plane {
                    Plane::Const(v) => o.iter_mut().for_each(|x| x.merge(*v, *shift)),
                    Plane::Rans(t, blocks) => {
                        let b = blocks
                            .get(bi)
                            .ok_or_else(|| Error::internal("rans: block index out of range"))?;
                        decode_block(t, b, o, *shift)?;
                    }
                }
            }
            Ok(())
        })?;
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
    fn reciprocal_is_exact() {
        let mut r = Rng(7);
        for f in 1..=PROB_SCALE {
            let e = enc_table(&{
                let mut fr = [0u32; 256];
                fr[0] = f;
                fr
            })[0];
            let x_max = e.x_max.min(1 << 32);
            let mut xs = vec![0, 1, f - 1, f, x_max - 1, x_max / 2, u64::from(u32::MAX)];
            xs.extend((0..50).map(|_| r.next() % x_max));
            for x in xs {
                let x = x as u32;
                assert_eq!(
                    ((u128::from(x) * u128::from(e.rcp)) >> 44) as u32,
                    x / f,
                    "x={x} f={f}"
                );
            }
        }
    }

    #[test]
    fn normalize_sums_to_scale() {
        let mut r = Rng(3);
        for trial in 0..200 {
            let mut h = [0u64; 256];
            let m = 2 + trial % 255;
            for (s, hs) in h.iter_mut().enumerate().take(m) {
                *hs = if s == 0 {
                    1 << (trial % 40)
                } else {
                    1 + r.next() % 3
                };
            }
            let f = normalize(&h);
            assert_eq!(f.iter().sum::<u32>(), PROB_SCALE);
            for s in 0..256 {
                assert_eq!(f[s] > 0, h[s] > 0);
            }
        }
    }

    #[test]
    fn round_trips() {
        assert_eq!(rt32(&[]), vec![BLOCK_LOG2, 0]);
        rt32(&[0; 10]);
        rt32(&[7]);
        rt32(&[u32::MAX; 1000]);
        rt32(&[0, u32::MAX]);
        let mut r = Rng(0xfeed);
        for &n in &[1usize, 2, 3, 4, 5, 100, 65535, 65536, 65537, 3 * 65536 + 17] {
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
            let bytes: Vec<u8> = (0..n).map(|_| (r.next() % 3) as u8).collect();
            let e = encode(&bytes);
            assert_eq!(decode::<u8>(&e, n).unwrap(), bytes);
        }
    }

    #[test]
    fn rejects_bad_streams() {
        let e = encode(&[1u32, 2, 3, 1000]);
        assert!(decode::<u8>(&e, 4).is_err());
        assert!(decode::<u32>(&e, 5).is_err());
        assert!(decode::<u32>(&e, 3).is_err());
        let mut bad = e.clone();
        bad.push(0);
        assert!(decode::<u32>(&bad, 4).is_err());
    }
}
