//! Byte-plane rANS: the CPU counterpart of nvCOMP's ANS coder (not stream-compatible with it).
//!
//! A `u32` symbol is split into four byte planes (plane k = byte k); planes
//! that are zero for every symbol are not stored. Each stored plane is coded
//! with a byte-alphabet rANS (32-bit state in [2^16, 2^32), 12-bit normalized
//! frequencies, 16-bit renormalization) in independent blocks sharing the
//! plane's frequency table, each block with `lanes` interleaved states: 32
//! since format v2 (one GPU warp per block, a lane per state; eight
//! independent quads of states for the CPU), 4 in v1 streams and in the
//! streams of at most 2^16 symbols that the encoder writes since 780a203
//! (`encode_layout`; every v2+ reader decodes both, so the version did not
//! change). Byte streams are one plane.
//!
//! Stream layout (varints are unsigned LEB128, see `varint`):
//!
//! ```text
//! u8  layout                bits 0..=4: block_log2, symbols per block = 1 << block_log2
//!                           (10..=24; the encoder uses 17, or 14 for 4 lanes); bits 5..=7:
//!                           lanes_log2 - 2 (lanes = 4 or 32: 0 or 3)
//! u8  plane_mask            bit k set = plane k stored (u32: bits 0..=3, bytes: bit 0 only)
//! per stored plane, k ascending:
//!   u8 kind                 0 = constant, 1 = rANS-coded, 2 = sparse plane,
//!                           3 = rANS-coded with a value map (format v5 on)
//!   kind 0:  u8 value       every symbol has this byte in plane k
//!   kind 1:  u8 m-1         m distinct byte values in the plane (m >= 1)
//!            m x (u8 value strictly ascending, varint freq-1)   frequencies sum to 4096
//!            varint block_bytes, one per block: ceil(count / block size) blocks
//!            block payloads, concatenated. A payload is: the `lanes` final encoder
//!            states (u32 LE each, state j codes symbols i with i % lanes == j),
//!            then the renormalization words (u16 LE) in the order the decoder
//!            reads them: symbols in order, each decoded state below 2^16 reads
//!            one word. Decoding a block must consume it exactly and end with
//!            every state = 2^16 (the encoder's initial state).
//!   kind 2:  varint nnz, then nnz x (varint gap, u8 value): the symbols whose byte
//!            in plane k is not zero; index = previous index + 1 + gap (first: gap)
//!   kind 3:  32 bytes: bit v (byte v / 8, LSB first) set = value v present (m >= 1),
//!            m x varint freq-1, values ascending; then as kind 1 from block_bytes
//! ```
//!
//! The read order is the one a warp gets with a vote: the lanes of a group of
//! `lanes` symbols that need a word take consecutive words, in lane order.
//! The encoder picks kind 0 for a single-valued plane, kind 2 when it is smaller
//! than the estimated rANS size (planes that only rare outliers reach), else kind 1,
//! or kind 3 for more than 32 values (a map of 32 bytes instead of m; the low
//! plane of run lengths and wide codes has 100-256 values).
//! Only rANS planes pin the symbol count; a stream of constant/sparse planes decodes
//! for any count larger than its last sparse index.

use rayon::prelude::*;
use std::convert::Infallible;

use super::varint::{get_u8, get_uvarint_max, put_uvarint};
use crate::error::{Error, Result};

/// Kernel twin: generated `FZK_RANS_PROB_BITS` (`factz::kernels::prelude`),
/// as is `RANS_L` (`FZK_RANS_L`). The lanes are a kernel argument.
pub const PROB_BITS: u32 = 12;
const PROB_SCALE: u32 = 1 << PROB_BITS;
pub const RANS_L: u32 = 1 << 16;
/// Interleaved states per block that the encoder writes (format v2).
pub const LANES: usize = 32;
/// Interleaved states per block of format v1 streams, and of the short
/// streams the encoder writes ([`encode_layout`]).
pub const FEW_LANES: usize = 4;
/// The lane counts a stream may have; the decoder holds the largest.
const MAX_LANES: usize = LANES;

/// The status the GPU decoder (kernels/rans.cu) leaves per block; kernel
/// twins: generated `FZK_RANS_<NAME>`.
pub mod status {
    pub const OK: u32 = 0;
    pub const HEADER: u32 = 1;
    pub const INITIAL: u32 = 2;
    pub const TRUNCATED: u32 = 3;
    pub const TRAILING: u32 = 4;
    pub const FINAL: u32 = 5;
}
/// Symbols per block the encoder writes with 32 lanes: a GPU thread per 4096
/// symbols, 128 bytes of states per block (0.1-0.5% of most streams).
const BLOCK_LOG2: u8 = 17;
/// Streams of at most `FEW_UP_TO` symbols are coded in blocks of 2^14 symbols
/// with 4 lanes: still a GPU thread per 4096 symbols, 16 bytes of states per
/// block where one 32-lane block costs 128 however short the stream. Mode S's
/// zero-run tokens and values are such streams, 17 to 60 per field, at a few
/// hundred to a few thousand symbols each. (2^14 and 2^17 as the limit were
/// measured too: 2^16 is as small or smaller on every mode S stream tried.)
const FEW_BLOCK_LOG2: u8 = 14;
const FEW_UP_TO: usize = 1 << 16;
const MIN_BLOCK_LOG2: u8 = 10;
const MAX_BLOCK_LOG2: u8 = 24;
/// The layout byte's block_log2 bits; the rest hold lanes_log2 - 2.
const BLOCK_BITS: u8 = 0x1f;
const LANES_SHIFT: u32 = 5;
const KIND_CONST: u8 = 0;
const KIND_RANS: u8 = 1;
const KIND_SPARSE: u8 = 2;
const KIND_RANS_MAP: u8 = 3;
/// A plane of more distinct bytes than this lists them as a 256-bit map
/// (kind 3) rather than one byte each (kind 1).
const MAP_FROM: usize = 32;

/// The bytes of a rANS plane's table of m distinct values (about: a
/// frequency takes one or two bytes).
fn table_bytes(m: usize) -> usize {
    if m > MAP_FROM {
        1 + MAP_FROM + 2 * m
    } else {
        2 + 3 * m
    }
}

/// A symbol type split into byte planes (`u32` codes: 4 planes, `u8` bytes: 1).
pub(crate) trait PlaneSym: Copy + Send + Sync + Default + 'static {
    const PLANES: u32;
    /// Byte `shift / 8` of the symbol.
    fn plane(self, shift: u32) -> u8;
    /// The symbol with byte `b` added as plane `shift / 8` (that plane still zero in `self`).
    fn with_plane(self, b: u8, shift: u32) -> Self;
    fn or_all(s: &[Self]) -> u32;
}

impl PlaneSym for u32 {
    const PLANES: u32 = 4;
    #[inline(always)]
    fn plane(self, shift: u32) -> u8 {
        (self >> shift) as u8
    }
    #[inline(always)]
    fn with_plane(self, b: u8, shift: u32) -> Self {
        self | (u32::from(b) << shift)
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
    fn with_plane(self, b: u8, _shift: u32) -> Self {
        b
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
            // Four sub-tables per plane so repeated symbols do not serialize on one counter.
            let mut h = vec![[0u32; 256]; 4 * np];
            let mut it = c.chunks_exact(4);
            for q in &mut it {
                for (p, &sh) in shifts.iter().enumerate() {
                    if let Some(hp) = h.get_mut(4 * p..4 * p + 4) {
                        hp[0][q[0].plane(sh) as usize] += 1;
                        hp[1][q[1].plane(sh) as usize] += 1;
                        hp[2][q[2].plane(sh) as usize] += 1;
                        hp[3][q[3].plane(sh) as usize] += 1;
                    }
                }
            }
            for x in it.remainder() {
                for (p, &sh) in shifts.iter().enumerate() {
                    h[4 * p][x.plane(sh) as usize] += 1;
                }
            }
            (0..np)
                .map(|p| {
                    let mut o = [0u64; 256];
                    for (i, v) in o.iter_mut().enumerate() {
                        *v = (0..4).map(|k| u64::from(h[4 * p + k][i])).sum();
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
pub(crate) struct EncSym {
    /// Renormalize (emit one 16-bit word) when the state is >= x_max.
    x_max: u64,
    /// Reciprocal of freq: x / freq == ((x * rcp) >> 32) >> rcp_shift for x < 2^20 * freq.
    rcp: u64,
    rcp_shift: u32,
    /// 4096 - freq.
    cmpl_freq: u32,
    start: u32,
}

/// (rcp, rcp_shift) with x / f == ((x * rcp) >> 32) >> rcp_shift for all x < 2^20 * f
/// (f in 1..=4096): shift = ceil(log2 f), rcp = floor(2^(32 + shift) / f) + 1 (< 2^33).
fn reciprocal(f: u32) -> (u64, u32) {
    let shift = 32 - (f - 1).leading_zeros().min(32);
    let shift = if f == 1 { 0 } else { shift };
    ((1u64 << (32 + shift)) / u64::from(f) + 1, shift)
}

fn enc_table(freq: &[u32; 256]) -> [EncSym; 256] {
    let mut t = [EncSym::default(); 256];
    let mut start = 0u32;
    for (s, &f) in freq.iter().enumerate() {
        if f > 0 {
            let (rcp, rcp_shift) = reciprocal(f);
            t[s] = EncSym {
                x_max: u64::from((RANS_L >> PROB_BITS) << 16) * u64::from(f),
                rcp,
                rcp_shift,
                cmpl_freq: PROB_SCALE - f,
                start,
            };
            start += f;
        }
    }
    t
}

/// One encoding step of state `x`. Renormalization words are written backwards
/// from the end of `buf` (word k at `buf.len() - 2 (k + 1)`), so they end up in
/// the order the decoder reads them; `*nw` counts them. Branch-free: the slot is
/// always written, `*nw` advances only when the word is needed.
#[inline(always)]
fn enc_step(x: u32, e: &EncSym, buf: &mut [u8], nw: &mut usize) -> u32 {
    // States live in [2^16, 2^32); one word brings x below x_max = 2^20 * freq.
    let need = u64::from(x) >= e.x_max;
    let p = buf.len().wrapping_sub(2 * (*nw + 1));
    if let Some(w) = buf.get_mut(p..p.wrapping_add(2)) {
        w.copy_from_slice(&(x as u16).to_le_bytes());
    }
    *nw += usize::from(need);
    let x = if need { x >> 16 } else { x };
    // q = x / freq; x' = q * 4096 + x % freq + start = x + q * (4096 - freq) + start.
    let q = ((u64::from(x) * e.rcp) >> 32) as u32 >> e.rcp_shift;
    x + q * e.cmpl_freq + e.start
}

/// Symbols of a block whose plane bytes the vector encoder takes at a time.
const ENC_RUN: usize = 1024;

/// Codes plane `shift` of one block with `L` lanes; returns the payload (see
/// the module doc). `simd`: the 32-lane groups with `rans_simd` (AVX2).
fn encode_block<T: PlaneSym, const L: usize>(
    src: &[T],
    shift: u32,
    t: &[EncSym; 256],
    simd: bool,
) -> Vec<u8> {
    // States, at most one word per symbol, and a spare slot for the branch-free store.
    let mut buf = vec![0u8; 4 * L + 2 * (src.len() + 1)];
    let mut nw = 0usize;
    let mut x = [RANS_L; L];
    // Symbols last to first, symbol i in state i % L: the words come out in
    // the reverse of the decoder's read order, written backwards.
    let full = src.len() - src.len() % L;
    for (j, s) in src[full..].iter().enumerate().rev() {
        x[j] = enc_step(x[j], &t[s.plane(shift) as usize], &mut buf, &mut nw);
    }
    let scalar = if simd {
        encode_groups_simd(&src[..full], shift, t, &mut x, &mut buf, &mut nw)
    } else {
        full
    };
    for g in src[..scalar].rchunks_exact(L) {
        for (xj, s) in x.iter_mut().zip(g).rev() {
            *xj = enc_step(*xj, &t[s.plane(shift) as usize], &mut buf, &mut nw);
        }
    }
    // Payload = the states, then the words; move it to the front.
    let start = buf.len() - 2 * nw - 4 * L;
    for (j, s) in x.into_iter().enumerate() {
        buf[start + 4 * j..start + 4 * j + 4].copy_from_slice(&s.to_le_bytes());
    }
    buf.copy_within(start.., 0);
    buf.truncate(buf.len() - start);
    buf
}

/// `encode_block`'s whole groups with the vector encoder, for 32 lanes and a
/// table whose thresholds fit 32 bits (every rANS plane the encoder plans:
/// two or more symbols, so no frequency is 4096); returns how many symbols
/// from the start are left to the scalar code (all of them where it does
/// not apply).
fn encode_groups_simd<T: PlaneSym>(
    src: &[T],
    shift: u32,
    t: &[EncSym; 256],
    x: &mut [u32],
    buf: &mut [u8],
    nw: &mut usize,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if let Ok(x32) = <&mut [u32; 32]>::try_from(x) {
        if t.iter().any(|e| e.x_max > u64::from(u32::MAX)) {
            return src.len();
        }
        let table = super::rans_simd::EncTable {
            x_max: std::array::from_fn(|s| t[s].x_max as u32),
            freq: std::array::from_fn(|s| PROB_SCALE - t[s].cmpl_freq),
            cmpl_start: std::array::from_fn(|s| t[s].cmpl_freq | t[s].start << 16),
        };
        let top = buf.len();
        let mut syms = [0u32; ENC_RUN];
        // From the end, in runs of whole groups (src.len() is a multiple of 32).
        for run in src.rchunks(ENC_RUN) {
            for (b, s) in syms.iter_mut().zip(run) {
                *b = u32::from(s.plane(shift));
            }
            // SAFETY: `simd` is only set where the CPU has AVX2; buf holds 2
            // words per symbol above its 4 x 32 state bytes, more than the
            // 16 bytes of scratch below the words.
            unsafe {
                super::rans_simd::encode_groups(x32, &syms[..run.len()], &table, buf, top, nw)
            };
        }
        return 0;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (shift, t, x, buf, nw);
    src.len()
}

/// Estimated size in bytes of a plane coded with rANS in `n_blocks` blocks of `lanes` states.
fn rans_size(hist: &[u64; 256], freq: &[u32; 256], n_blocks: usize, lanes: usize) -> usize {
    let bits: f64 = hist
        .iter()
        .zip(freq)
        .filter(|(&c, _)| c > 0)
        .map(|(&c, &f)| c as f64 * (f64::from(PROB_BITS) - f64::from(f).log2()))
        .sum();
    let m = hist.iter().filter(|&&c| c > 0).count();
    (bits / 8.0) as usize + n_blocks * (4 * lanes + 3) + table_bytes(m)
}

/// The body of a sparse plane (see the module doc) from its `nnz` (index,
/// byte) entries, indices ascending, or None if it would not be shorter than
/// `budget` bytes.
pub fn sparse_body(
    entries: impl IntoIterator<Item = (u64, u8)>,
    nnz: u64,
    budget: usize,
) -> Option<Vec<u8>> {
    let mut body = Vec::with_capacity((2 * nnz as usize).min(budget));
    put_uvarint(&mut body, nnz);
    let mut next = 0u64;
    for (i, b) in entries {
        put_uvarint(&mut body, i - next);
        body.push(b);
        next = i + 1;
        if body.len() >= budget {
            return None;
        }
    }
    Some(body)
}

/// [`sparse_body`] of plane `shift` of `src`.
fn sparse_plane<T: PlaneSym>(src: &[T], shift: u32, nnz: u64, budget: usize) -> Option<Vec<u8>> {
    let chunks: Vec<Vec<(u64, u8)>> = src
        .par_chunks(1 << 16)
        .enumerate()
        .map(|(c, chunk)| {
            let base = c << 16;
            chunk
                .iter()
                .enumerate()
                .filter(|(_, s)| s.plane(shift) != 0)
                .map(|(i, s)| ((base + i) as u64, s.plane(shift)))
                .collect()
        })
        .collect();
    sparse_body(chunks.into_iter().flatten(), nnz, budget)
}

/// How one stored plane is written.
pub(crate) enum PlaneCode {
    /// Constant or sparse: the plane is its header.
    Whole(Vec<u8>),
    /// rANS: the header (kind and frequencies), and the encoder table its
    /// blocks are coded with.
    Rans(Vec<u8>, Box<[EncSym; 256]>),
}

/// The plane of `n` symbols (in blocks of 2^`block_log2` with `lanes` states)
/// with histogram `hist`: constant for one value; sparse when it is likely
/// smaller than rANS and `sparse(nnz, budget)` gives a body under the rANS
/// estimate; else rANS.
pub(crate) fn plan_plane<E>(
    hist: &[u64; 256],
    n: usize,
    (block_log2, lanes): (u8, usize),
    sparse: impl FnOnce(u64, usize) -> std::result::Result<Option<Vec<u8>>, E>,
) -> std::result::Result<PlaneCode, E> {
    let present: Vec<usize> = (0..256).filter(|&s| hist[s] > 0).collect();
    if present.len() == 1 {
        return Ok(PlaneCode::Whole(vec![KIND_CONST, present[0] as u8]));
    }
    let freq = normalize(hist);
    let rans_bytes = rans_size(hist, &freq, blocks_of(n, block_log2), lanes);
    let nnz = n as u64 - hist[0];
    if nnz.saturating_mul(2) < rans_bytes as u64 {
        if let Some(body) = sparse(nnz, rans_bytes)? {
            let mut h = vec![KIND_SPARSE];
            h.extend_from_slice(&body);
            return Ok(PlaneCode::Whole(h));
        }
    }
    let mapped = present.len() > MAP_FROM;
    let mut h = Vec::with_capacity(table_bytes(present.len()));
    if mapped {
        let mut map = [0u8; MAP_FROM];
        for &s in &present {
            map[s / 8] |= 1 << (s % 8);
        }
        h.push(KIND_RANS_MAP);
        h.extend_from_slice(&map);
    } else {
        h.extend_from_slice(&[KIND_RANS, (present.len() - 1) as u8]);
    }
    // Each value's frequency, after the value itself where there is no map.
    for &s in &present {
        if !mapped {
            h.push(s as u8);
        }
        put_uvarint(&mut h, u64::from(freq[s] - 1));
    }
    Ok(PlaneCode::Rans(h, Box::new(enc_table(&freq))))
}

/// The stream's first byte for blocks of 2^`block_log2` symbols with `lanes` states.
fn layout_byte(block_log2: u8, lanes: usize) -> u8 {
    block_log2 | ((lanes.trailing_zeros() as u8 - 2) << LANES_SHIFT)
}

/// Blocks of n symbols (2^`block_log2` each).
fn blocks_of(n: usize, block_log2: u8) -> usize {
    n.div_ceil(1 << block_log2)
}

/// The stream: the stored planes (`mask`) in order, each rANS plane followed
/// by its blocks' lengths and payloads (`payloads`: one list per rANS plane).
fn assemble(
    (block_log2, lanes): (u8, usize),
    mask: u8,
    planes: &[PlaneCode],
    payloads: &[Vec<&[u8]>],
) -> Vec<u8> {
    let mut out = vec![layout_byte(block_log2, lanes), mask];
    out.reserve(payloads.iter().flatten().map(|b| b.len() + 3).sum());
    let mut rans = payloads.iter();
    for plane in planes {
        match plane {
            PlaneCode::Whole(h) => out.extend_from_slice(h),
            PlaneCode::Rans(h, _) => {
                out.extend_from_slice(h);
                let blocks = rans.next().map_or(&[][..], |b| &b[..]);
                for b in blocks {
                    put_uvarint(&mut out, b.len() as u64);
                }
                for b in blocks {
                    out.extend_from_slice(b);
                }
            }
        }
    }
    out
}

/// The blocks the encoder writes `n` symbols in: (block_log2, lanes).
pub fn encode_layout(n: usize) -> (u8, usize) {
    if n <= FEW_UP_TO {
        (FEW_BLOCK_LOG2, FEW_LANES)
    } else {
        (BLOCK_LOG2, LANES)
    }
}

/// Encodes `src`; see the module doc for the layout.
pub(crate) fn encode<T: PlaneSym>(src: &[T]) -> Vec<u8> {
    match encode_layout(src.len()) {
        (log2, FEW_LANES) => encode_as::<T, FEW_LANES>(src, log2, false),
        (log2, _) => encode_as::<T, LANES>(src, log2, crate::cpu::has_avx2()),
    }
}

/// Format v1's encoder (4 lanes, 2^16-symbol blocks), kept so that tests make
/// v1 streams of any size.
pub fn encode_v1(src: &[u32]) -> Vec<u8> {
    encode_as::<u32, FEW_LANES>(src, 16, false)
}

/// [`encode`] with `L` lanes per block of 2^`block_log2` symbols, with the
/// vector encoder where `simd` (only set where the CPU has it).
pub(crate) fn encode_as<T: PlaneSym, const L: usize>(
    src: &[T],
    block_log2: u8,
    simd: bool,
) -> Vec<u8> {
    let or = T::or_all(src);
    let shifts: Vec<u32> = (0..T::PLANES)
        .filter(|k| (or >> (8 * k)) & 0xff != 0)
        .map(|k| 8 * k)
        .collect();
    let mask = shifts.iter().fold(0u8, |m, &sh| m | (1 << (sh / 8)));
    let planes: Vec<PlaneCode> = plane_histograms(src, &shifts)
        .iter()
        .zip(&shifts)
        .map(|(hist, &shift)| {
            let sparse = |nnz, budget| Ok::<_, Infallible>(sparse_plane(src, shift, nnz, budget));
            let Ok(plane) = plan_plane(hist, src.len(), (block_log2, L), sparse);
            plane
        })
        .collect();
    // Block-major: a block's rANS planes are coded one after the other while it is in cache.
    let rans: Vec<(u32, &[EncSym; 256])> = shifts
        .iter()
        .zip(&planes)
        .filter_map(|(&sh, p)| match p {
            PlaneCode::Whole(_) => None,
            PlaneCode::Rans(_, t) => Some((sh, &**t)),
        })
        .collect();
    let blocks: Vec<Vec<Vec<u8>>> = if rans.is_empty() {
        Vec::new()
    } else {
        src.par_chunks(1 << block_log2)
            .map(|b| {
                rans.iter()
                    .map(|&(sh, t)| encode_block::<T, L>(b, sh, t, simd))
                    .collect()
            })
            .collect()
    };
    let payloads: Vec<Vec<&[u8]>> = (0..rans.len())
        .map(|r| blocks.iter().map(|b| &b[r][..]).collect())
        .collect();
    assemble((block_log2, L), mask, &planes, &payloads)
}

// ------------------------------------------------- encoder, GPU host side

/// The encoder's plan for a device (`kernels/rans.cu` factz_r_encode): the
/// stored planes from their histograms, each rANS plane's table in the
/// kernel's layout.
pub struct DeviceEncoding {
    /// Stored planes (bit k: plane k).
    pub mask: u8,
    /// Per rANS plane, in plane order: its shift and table, three words per
    /// byte value: x_max, rcp, rcp_shift | cmpl_freq << 8 | start << 24.
    pub rans: Vec<(u32, Vec<u64>)>,
    /// Symbols per block, log2 ([`encode_layout`]).
    pub block_log2: u32,
    /// Interleaved states per block ([`encode_layout`]).
    pub lanes: u32,
    planes: Vec<PlaneCode>,
}

/// `encode`'s plan for `n` symbols of `planes` bytes (4: u32, 1: bytes) with
/// plane histograms `hists` (plane k at k); `sparse(shift, nnz, budget)`
/// gives a sparse plane's body as [`sparse_body`] does (the device compacts
/// the entries).
pub fn device_encoding<E>(
    hists: &[[u64; 256]],
    n: usize,
    planes: u32,
    mut sparse: impl FnMut(u32, u64, usize) -> std::result::Result<Option<Vec<u8>>, E>,
) -> std::result::Result<DeviceEncoding, E> {
    let layout = encode_layout(n);
    let mut out = DeviceEncoding {
        mask: 0,
        rans: Vec::new(),
        block_log2: u32::from(layout.0),
        lanes: layout.1 as u32,
        planes: Vec::new(),
    };
    // A plane is stored when some symbol's byte there is not zero.
    for (k, hist) in hists.iter().enumerate().take(planes as usize) {
        if hist[0] as usize == n {
            continue;
        }
        let shift = 8 * k as u32;
        out.mask |= 1 << k;
        let plane = plan_plane(hist, n, layout, |nnz, budget| sparse(shift, nnz, budget))?;
        if let PlaneCode::Rans(_, t) = &plane {
            let table = t
                .iter()
                .flat_map(|e| {
                    [
                        e.x_max,
                        e.rcp,
                        u64::from(e.rcp_shift)
                            | u64::from(e.cmpl_freq) << 8
                            | u64::from(e.start) << 24,
                    ]
                })
                .collect();
            out.rans.push((shift, table));
        }
        out.planes.push(plane);
    }
    Ok(out)
}

/// The stream of a [`DeviceEncoding`], given each rANS plane's block
/// payloads concatenated and their lengths.
pub fn device_assemble(plan: &DeviceEncoding, payloads: &[(Vec<u64>, Vec<u8>)]) -> Result<Vec<u8>> {
    let mut split: Vec<Vec<&[u8]>> = Vec::with_capacity(payloads.len());
    for (lens, data) in payloads {
        let mut at = 0usize;
        let mut blocks = Vec::with_capacity(lens.len());
        for &l in lens {
            let end = at.saturating_add(l as usize);
            blocks.push(
                data.get(at..end).ok_or_else(|| {
                    Error::internal("rans kernels: block lengths past the payload")
                })?,
            );
            at = end;
        }
        if at != data.len() {
            return Err(Error::internal("rans kernels: payload past the blocks"));
        }
        split.push(blocks);
    }
    if split.len() != plan.rans.len() {
        return Err(Error::internal("rans kernels: a payload per rANS plane"));
    }
    Ok(assemble(
        (plan.block_log2 as u8, plan.lanes as usize),
        plan.mask,
        &plan.planes,
        &split,
    ))
}

// ---------------------------------------------------------------- decoder

/// Decoding table of one plane: per slot, the symbol and its (freq, slot - start),
/// and the three packed for the vector decoder: (freq - 1) | bias << 12 | symbol << 24.
struct DecTable {
    slots: [DecSlot; PROB_SCALE as usize],
    syms: [u8; PROB_SCALE as usize],
    packed: [u32; PROB_SCALE as usize],
}

#[derive(Clone, Copy, Default)]
struct DecSlot {
    freq: u16,
    bias: u16,
}

static EMPTY_TABLE: DecTable = DecTable {
    slots: [DecSlot { freq: 0, bias: 0 }; PROB_SCALE as usize],
    syms: [0; PROB_SCALE as usize],
    packed: [0; PROB_SCALE as usize],
};

enum Plane<'a> {
    Const(u8),
    /// (index, byte) of the symbols whose plane byte is not zero, indices ascending.
    Sparse(Vec<(usize, u8)>),
    Rans(Box<DecTable>, Vec<&'a [u8]>),
}

/// One decoding step without renormalization; returns the symbol.
#[inline(always)]
fn dec_core(x: &mut u32, t: &DecTable) -> u8 {
    let slot = (*x & (PROB_SCALE - 1)) as usize;
    let d = t.slots[slot];
    // No overflow: freq * (x >> 12) + bias <= 4096 * (2^20 - 1) + 4095 < 2^32.
    *x = u32::from(d.freq) * (*x >> PROB_BITS) + u32::from(d.bias);
    t.syms[slot]
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

/// Renormalizes the four states of a quad, branch-free when 8 input bytes remain.
#[inline(always)]
fn renorm_quad(x: &mut [u32; 4], data: &[u8], pos: &mut usize) -> Result<()> {
    if let Some(w) = data.get(*pos..*pos + 8) {
        let mut w8 = [0u8; 8];
        w8.copy_from_slice(w);
        let w = u64::from_le_bytes(w8);
        let mut off = 0u32;
        for s in x.iter_mut() {
            let need = *s < RANS_L;
            // off <= 48: at most three earlier states took a word.
            let word = ((w >> off) & 0xffff) as u32;
            *s = if need { (*s << 16) | word } else { *s };
            off += 16 * u32::from(need);
        }
        *pos += (off / 8) as usize;
    } else {
        for s in x.iter_mut() {
            renorm_checked(s, data, pos)?;
        }
    }
    Ok(())
}

/// Symbols decoded per plane before moving to the next plane (keeps the output
/// in L1); a multiple of every lane count, so each run starts at lane 0.
const RUN: usize = 512;
const _: () = assert!(RUN % MAX_LANES == 0);

/// The whole groups of `run` in one plane (table, shift, payload; `FIRST`:
/// the first plane, which starts each symbol from `base`), with the vector
/// decoder where `simd` and the block has 32 lanes; returns the partial
/// group left.
#[inline(always)]
fn decode_groups<'r, T: PlaneSym, const Q: usize, const FIRST: bool>(
    run: &'r mut [T],
    x: &mut [[u32; 4]; Q],
    (t, shift, data): (&DecTable, u32, &[u8]),
    base: T,
    pos: &mut usize,
    simd: bool,
) -> Result<&'r mut [T]> {
    let done = if simd {
        decode_groups_simd::<T, FIRST>(run, x.as_flattened_mut(), (t, shift, data), base, pos)
    } else {
        0
    };
    let mut groups = run[done..].chunks_exact_mut(4 * Q);
    for g in &mut groups {
        for (q, xs) in g.chunks_exact_mut(4).zip(x.iter_mut()) {
            for (o, s) in q.iter_mut().zip(xs.iter_mut()) {
                let prev = if FIRST { base } else { *o };
                *o = prev.with_plane(dec_core(s, t), shift);
            }
            renorm_quad(xs, data, pos)?;
        }
    }
    Ok(groups.into_remainder())
}

/// `decode_groups`' vector part: the whole groups `rans_simd` decodes (it
/// leaves the ones near the payload's end to the checked scalar code), for 32
/// lanes; returns the symbols done.
#[inline(always)]
fn decode_groups_simd<T: PlaneSym, const FIRST: bool>(
    run: &mut [T],
    x: &mut [u32],
    (t, shift, data): (&DecTable, u32, &[u8]),
    base: T,
    pos: &mut usize,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if let Ok(x32) = <&mut [u32; 32]>::try_from(x) {
        let mut syms = [0u32; RUN];
        let whole = run.len() - run.len() % 32;
        // SAFETY: `simd` is only set where the CPU has AVX2 (`cpu::has_avx2`).
        let done = unsafe {
            super::rans_simd::decode_groups(x32, &t.packed, data, pos, &mut syms[..whole])
        };
        for (o, &s) in run.iter_mut().zip(&syms[..done]) {
            let prev = if FIRST { base } else { *o };
            *o = prev.with_plane(s as u8, shift);
        }
        return done;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (run, x, t, shift, data, base, pos);
    0
}

/// Decodes one block of the rANS planes (table, shift, payload) into `out`,
/// every symbol starting from `base` (the constant planes); `Q` quads of
/// states, lanes = 4 `Q`. Symbols go four at a time, a quad of states each;
/// with 32 lanes, the eight quads of a group do not depend on each other.
/// Renormalizing a quad right after its four steps reads the module doc's
/// order: a renormalization touches only its own state and the read position.
fn decode_block<T: PlaneSym, const Q: usize>(
    planes: &[(&DecTable, u32, &[u8])],
    base: T,
    out: &mut [T],
    simd: bool,
) -> Result<()> {
    let lanes = 4 * Q;
    let mut x = [[[0u32; 4]; Q]; 4];
    let mut pos = [4 * lanes; 4];
    if planes.len() > 4 {
        return Err(Error::internal("rans: more than four planes"));
    }
    for (xp, (_, _, data)) in x.iter_mut().zip(planes) {
        for (j, s) in xp.as_flattened_mut().iter_mut().enumerate() {
            let b = data
                .get(4 * j..4 * j + 4)
                .ok_or_else(|| Error::corrupt("rans: truncated block header"))?;
            *s = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if *s < RANS_L {
                return Err(Error::corrupt("rans: invalid initial state"));
            }
        }
    }
    if planes.is_empty() {
        out.fill(base);
    }
    for run in out.chunks_mut(RUN) {
        for (p, &(t, shift, data)) in planes.iter().enumerate() {
            let (xp, pp) = (&mut x[p], &mut pos[p]);
            let tail = if p == 0 {
                decode_groups::<T, Q, true>(run, xp, (t, shift, data), base, pp, simd)?
            } else {
                decode_groups::<T, Q, false>(run, xp, (t, shift, data), base, pp, simd)?
            };
            // Only the block's last run has a partial group.
            for (o, s) in tail.iter_mut().zip(xp.as_flattened_mut()) {
                let prev = if p == 0 { base } else { *o };
                *o = prev.with_plane(dec_core(s, t), shift);
                renorm_checked(s, data, pp)?;
            }
        }
    }
    for (p, (_, _, data)) in planes.iter().enumerate() {
        if pos[p] != data.len() {
            return Err(Error::corrupt("rans: block has trailing bytes"));
        }
        if x[p].as_flattened().iter().any(|&s| s != RANS_L) {
            return Err(Error::corrupt("rans: final state mismatch"));
        }
    }
    Ok(())
}

fn parse_plane<'a>(
    data: &'a [u8],
    pos: &mut usize,
    count: usize,
    n_blocks: usize,
    lanes: usize,
) -> Result<Plane<'a>> {
    let kind = get_u8(data, pos, "rans: plane kind")?;
    match kind {
        KIND_SPARSE => {
            let nnz = get_uvarint_max(data, pos, count as u64, "rans: sparse count")?;
            // Each entry takes at least two bytes.
            if nnz > data.len().saturating_sub(*pos) / 2 {
                return Err(Error::corrupt("rans: sparse count exceeds stream size"));
            }
            let mut entries = Vec::with_capacity(nnz);
            let mut next = 0usize;
            for _ in 0..nnz {
                let gap = get_uvarint_max(data, pos, count as u64, "rans: sparse gap")?;
                let idx = next
                    .checked_add(gap)
                    .filter(|&i| i < count)
                    .ok_or_else(|| Error::corrupt("rans: sparse index out of range"))?;
                entries.push((idx, get_u8(data, pos, "rans: sparse value")?));
                next = idx + 1;
            }
            Ok(Plane::Sparse(entries))
        }
        KIND_CONST => Ok(Plane::Const(get_u8(data, pos, "rans: constant plane")?)),
        KIND_RANS | KIND_RANS_MAP => {
            // Kind 3 lists the plane's values as a map, kind 1 one by one.
            let mapped: Option<Vec<u8>> = if kind == KIND_RANS_MAP {
                let map = data
                    .get(*pos..*pos + MAP_FROM)
                    .ok_or_else(|| Error::corrupt("truncated stream reading rans: symbol map"))?;
                *pos += MAP_FROM;
                Some(
                    (0..=255u8)
                        .filter(|&s| map[usize::from(s / 8)] >> (s % 8) & 1 == 1)
                        .collect(),
                )
            } else {
                None
            };
            let m = match &mapped {
                Some(v) if v.is_empty() => return Err(Error::corrupt("rans: empty symbol map")),
                Some(v) => v.len(),
                None => usize::from(get_u8(data, pos, "rans: symbol count")?) + 1,
            };
            let mut t = Box::new(DecTable {
                slots: [DecSlot::default(); PROB_SCALE as usize],
                syms: [0; PROB_SCALE as usize],
                packed: [0; PROB_SCALE as usize],
            });
            let mut start = 0u32;
            let mut prev: Option<u8> = None;
            for k in 0..m {
                let s = match &mapped {
                    Some(v) => v[k],
                    None => get_u8(data, pos, "rans: symbol")?,
                };
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
                let range = start as usize..(start + f) as usize;
                t.syms[range.clone()].fill(s);
                for (k, d) in t.slots[range.clone()].iter_mut().enumerate() {
                    *d = DecSlot {
                        freq: f as u16,
                        bias: k as u16,
                    };
                }
                for (k, d) in t.packed[range].iter_mut().enumerate() {
                    *d = (f - 1) | (k as u32) << 12 | u32::from(s) << 24;
                }
                start += f;
            }
            if start != PROB_SCALE {
                return Err(Error::corrupt("rans: frequencies do not sum to the scale"));
            }
            // Each block is at least the 4 bytes of each of its states.
            if n_blocks > data.len().saturating_sub(*pos) / (4 * lanes) {
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

/// A parsed stream: its block size, lanes and stored planes (shift, plane).
struct Parsed<'a> {
    block_log2: u8,
    lanes: usize,
    planes: Vec<(u32, Plane<'a>)>,
}

/// A stream with every check of the header; `max_planes`: 4 for u32
/// symbols, 1 for bytes.
fn parse(data: &[u8], count: usize, max_planes: u32) -> Result<Parsed<'_>> {
    let mut pos = 0usize;
    let layout = get_u8(data, &mut pos, "rans: block size")?;
    let block_log2 = layout & BLOCK_BITS;
    if !(MIN_BLOCK_LOG2..=MAX_BLOCK_LOG2).contains(&block_log2) {
        return Err(Error::corrupt("rans: block size out of range"));
    }
    let lanes = 4usize << (layout >> LANES_SHIFT);
    if lanes != FEW_LANES && lanes != LANES {
        return Err(Error::corrupt(format!("rans: {lanes} lanes per block")));
    }
    let mask = get_u8(data, &mut pos, "rans: plane mask")?;
    if u32::from(mask) >> max_planes != 0 {
        return Err(Error::corrupt("rans: invalid plane mask"));
    }
    let n_blocks = count.div_ceil(1usize << block_log2);
    let mut planes = Vec::new();
    for k in 0..max_planes {
        if mask & (1 << k) != 0 {
            planes.push((8 * k, parse_plane(data, &mut pos, count, n_blocks, lanes)?));
        }
    }
    if pos != data.len() {
        return Err(Error::corrupt("rans: trailing bytes"));
    }
    Ok(Parsed {
        block_log2,
        lanes,
        planes,
    })
}

/// A stream laid out for the GPU decoder (`kernels/rans.cu`): the header
/// parsed and checked here, the blocks decoded there.
#[derive(Debug, Clone, Default)]
pub struct DeviceLayout {
    pub block_log2: u32,
    /// Interleaved states per block (`LANES`, or `FEW_LANES` in v1 and short streams).
    pub lanes: u32,
    /// The constant planes' bytes, in place: every symbol starts from it.
    pub base: u32,
    /// Per rANS plane: its shift, its decoding table, and each block's
    /// (offset, length) in the stream.
    pub rans: Vec<DevicePlane>,
    /// Per sparse plane: its shift and (index, byte) entries, indices ascending.
    pub sparse: Vec<(u32, Vec<(u64, u8)>)>,
}

#[derive(Debug, Clone)]
pub struct DevicePlane {
    pub shift: u32,
    /// The decoding table, 4096 slots: (freq - 1) | bias << 12 | symbol << 24.
    pub packed: Vec<u32>,
    pub blocks: Vec<[u64; 2]>,
}

/// The block statuses the GPU decoder reports (kernels/rans.cu FZR_*), in
/// the errors `decode_block` gives for them.
pub fn block_status(status: u32) -> Result<()> {
    Err(Error::corrupt(match status {
        status::OK => return Ok(()),
        status::HEADER => "rans: truncated block header",
        status::INITIAL => "rans: invalid initial state",
        status::TRUNCATED => "rans: truncated block",
        status::TRAILING => "rans: block has trailing bytes",
        status::FINAL => "rans: final state mismatch",
        _ => {
            return Err(Error::internal(format!(
                "rans kernel: block status {status}"
            )))
        }
    }))
}

/// [`decode`]'s header checks for `count` symbols of `max_planes` bytes
/// each (4: u32 symbols, 1: bytes), and the stream as the GPU decodes it.
pub fn device_layout(data: &[u8], count: usize, max_planes: u32) -> Result<DeviceLayout> {
    let Parsed {
        block_log2,
        lanes,
        planes,
    } = parse(data, count, max_planes)?;
    let mut out = DeviceLayout {
        block_log2: u32::from(block_log2),
        lanes: lanes as u32,
        ..DeviceLayout::default()
    };
    for (shift, plane) in planes {
        match plane {
            Plane::Const(v) => out.base |= u32::from(v) << shift,
            Plane::Sparse(entries) => out.sparse.push((
                shift,
                entries.into_iter().map(|(i, b)| (i as u64, b)).collect(),
            )),
            Plane::Rans(t, blocks) => out.rans.push(DevicePlane {
                shift,
                packed: t.packed.to_vec(),
                blocks: blocks
                    .iter()
                    .map(|b| {
                        [
                            (b.as_ptr() as usize - data.as_ptr() as usize) as u64,
                            b.len() as u64,
                        ]
                    })
                    .collect(),
            }),
        }
    }
    Ok(out)
}

/// Decodes `count` symbols; see the module doc for the layout.
pub(crate) fn decode<T: PlaneSym>(data: &[u8], count: usize) -> Result<Vec<T>> {
    // Blocks::parse takes the vector decoder only where the CPU has it.
    decode_with(data, count, true)
}

/// [`decode`], with the vector decoder where `simd` (and the CPU has it).
fn decode_with<T: PlaneSym>(data: &[u8], count: usize, simd: bool) -> Result<Vec<T>> {
    let mut out = vec![T::default(); count];
    decode_to(data, &mut out, simd)?;
    Ok(out)
}

/// [`decode`] into `out`, whose length is the symbol count.
pub(crate) fn decode_to<T: PlaneSym>(data: &[u8], out: &mut [T], simd: bool) -> Result<()> {
    let blocks = Blocks::<T>::parse(data, out.len(), simd)?;
    out.par_chunks_mut(blocks.block_len())
        .enumerate()
        .try_for_each(|(bi, o)| blocks.decode_into(bi, o))
}

/// A checked stream whose blocks decode one at a time, each on its own:
/// [`decode`] runs them all in parallel; a consumer that takes the symbols
/// in order can decode each block as it reaches it, while the block is in
/// cache, instead of holding every symbol at once.
pub(crate) struct Blocks<'a, T: PlaneSym> {
    parsed: Parsed<'a>,
    /// The constant planes' bytes.
    base: T,
    count: usize,
    simd: bool,
}

impl<'a, T: PlaneSym> Blocks<'a, T> {
    /// The stream `data` of `count` symbols, with every check of the header.
    pub(crate) fn new(data: &'a [u8], count: usize) -> Result<Self> {
        Self::parse(data, count, true)
    }

    fn parse(data: &'a [u8], count: usize, simd: bool) -> Result<Self> {
        let parsed = parse(data, count, T::PLANES)?;
        let mut base = T::default();
        for (shift, plane) in &parsed.planes {
            if let Plane::Const(v) = plane {
                base = base.with_plane(*v, *shift);
            }
        }
        Ok(Blocks {
            parsed,
            base,
            count,
            simd: simd && crate::cpu::has_avx2(),
        })
    }

    /// Symbols per block (the last may hold fewer).
    pub(crate) fn block_len(&self) -> usize {
        1 << self.parsed.block_log2
    }

    /// Decodes block `bi`: `out` receives its symbols, from `bi` x
    /// `block_len()` (as many as the block holds; more is an error).
    pub(crate) fn decode_into(&self, bi: usize, out: &mut [T]) -> Result<()> {
        let first = bi.saturating_mul(self.block_len());
        if first.saturating_add(out.len()) > self.count || out.len() > self.block_len() {
            return Err(Error::internal("rans: a block past the stream's symbols"));
        }
        let mut rans: [(&DecTable, u32, &[u8]); 4] = [(&EMPTY_TABLE, 0, &[]); 4];
        let mut np = 0;
        for (shift, plane) in &self.parsed.planes {
            if let Plane::Rans(t, blocks) = plane {
                // parse_plane gave every rANS plane one payload per block; a missing
                // one fails the block header check as an empty slice.
                let b = blocks.get(bi).copied().unwrap_or(&[]);
                if let Some(slot) = rans.get_mut(np) {
                    *slot = (&**t, *shift, b);
                    np += 1;
                }
            }
        }
        if self.parsed.lanes == FEW_LANES {
            decode_block::<T, { FEW_LANES / 4 }>(&rans[..np], self.base, out, false)?;
        } else {
            decode_block::<T, { LANES / 4 }>(&rans[..np], self.base, out, self.simd)?;
        }
        // The sparse planes' entries in this block (indices ascending).
        let end = first + out.len();
        for (shift, plane) in &self.parsed.planes {
            if let Plane::Sparse(entries) = plane {
                let from = entries.partition_point(|&(i, _)| i < first);
                for &(i, b) in entries[from..].iter().take_while(|&&(i, _)| i < end) {
                    out[i - first] = out[i - first].with_plane(b, *shift);
                }
            }
        }
        Ok(())
    }
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
            let fu = u64::from(f);
            let mut xs = vec![0, 1, fu - 1, fu, x_max - 1, x_max / 2, x_max - fu];
            xs.extend((0..200).map(|_| r.next() % x_max));
            for x in xs {
                let x = x as u32;
                let q = ((u64::from(x) * e.rcp) >> 32) as u32 >> e.rcp_shift;
                assert_eq!(q, x / f, "x={x} f={f}");
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
        assert_eq!(rt32(&[]), vec![FEW_BLOCK_LOG2, 0]);
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
        assert!(decode::<u32>(&e, 3).is_err());
        let mut bad = e.clone();
        bad.push(0);
        assert!(decode::<u32>(&bad, 4).is_err());
        // With a rANS plane the block structure pins the count.
        let v: Vec<u32> = (0..1000).map(|i| i % 7).collect();
        let e = encode(&v);
        assert_eq!(e[2], KIND_RANS);
        for n in [999, 1001, 0] {
            assert!(decode::<u32>(&e, n).is_err());
        }
        // A sparse index beyond the count.
        let e = encode(&[0u32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(e[2], KIND_SPARSE);
        assert!(decode::<u32>(&e, 10).is_err());
    }

    /// The module doc's decoder, word for word: symbol i in state i % lanes,
    /// one step, then a word if the state fell below 2^16. A test of the read
    /// order the GPU's warps rely on, independent of `decode_block`'s quads.
    fn doc_decode(data: &[u8], count: usize) -> Vec<u32> {
        let p = parse(data, count, 4).unwrap();
        let mut out = vec![0u32; count];
        for (shift, plane) in &p.planes {
            match plane {
                Plane::Const(v) => out.iter_mut().for_each(|o| *o |= u32::from(*v) << shift),
                Plane::Sparse(e) => e.iter().for_each(|&(i, b)| out[i] |= u32::from(b) << shift),
                Plane::Rans(t, blocks) => {
                    let block = 1usize << p.block_log2;
                    for (bi, b) in blocks.iter().enumerate() {
                        let word = |k: usize| u32::from(u16::from_le_bytes([b[k], b[k + 1]]));
                        let mut x: Vec<u32> = (0..p.lanes)
                            .map(|j| word(4 * j) | word(4 * j + 2) << 16)
                            .collect();
                        let mut pos = 4 * p.lanes;
                        let end = count.min((bi + 1) * block);
                        for (i, o) in out[bi * block..end].iter_mut().enumerate() {
                            let s = &mut x[i % p.lanes];
                            *o |= u32::from(dec_core(s, t)) << shift;
                            if *s < RANS_L {
                                *s = *s << 16 | word(pos);
                                pos += 2;
                            }
                        }
                        assert_eq!(pos, b.len());
                        assert!(x.iter().all(|&s| s == RANS_L));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn lanes_follow_the_documented_order() {
        let mut r = Rng(0xabc);
        for &n in &[1usize, 31, 32, 33, 100, 4097, 65536, 65536 + 45, 3 * 65536] {
            let v: Vec<u32> = (0..n)
                .map(|_| {
                    let x = r.next();
                    (x.trailing_zeros() * 3) % 40 + (x as u32 & 0x300)
                })
                .collect();
            for (e, lanes) in [(encode(&v), encode_layout(n).1), (encode_v1(&v), FEW_LANES)] {
                assert_eq!(
                    usize::from(e[0] >> LANES_SHIFT),
                    lanes.trailing_zeros() as usize - 2
                );
                assert_eq!(doc_decode(&e, n), v, "n={n} lanes={lanes}");
                assert_eq!(decode::<u32>(&e, n).unwrap(), v, "n={n} lanes={lanes}");
            }
        }
    }

    #[test]
    fn vector_decoder_matches_the_scalar_one() {
        let mut r = Rng(0x5eed);
        for &n in &[33usize, 1000, 65536 + 7, 3 * (1 << 17) + 100] {
            let v: Vec<u32> = (0..n)
                .map(|_| {
                    let x = r.next();
                    (x.trailing_zeros() * 5) % 300 + if x % 97 == 0 { 1 << 20 } else { 0 }
                })
                .collect();
            let bytes: Vec<u8> = v.iter().map(|&x| (x % 13) as u8).collect();
            let (e, eb) = (encode(&v), encode(&bytes));
            assert_eq!(decode_with::<u32>(&e, n, true).unwrap(), v);
            assert_eq!(decode_with::<u8>(&eb, n, true).unwrap(), bytes);
            // Damaged streams: the same symbols or the same error either way.
            for k in 0..40 {
                let mut bad = e.clone();
                let at = (r.next() as usize) % bad.len();
                bad[at] ^= 1 << (k % 8);
                let a = decode_with::<u32>(&bad, n, true).map_err(|e| e.to_string());
                let b = decode_with::<u32>(&bad, n, false).map_err(|e| e.to_string());
                assert_eq!(a, b, "n={n} byte {at}");
            }
        }
    }

    #[test]
    fn vector_encoder_matches_the_scalar_one() {
        let mut r = Rng(0xe2c);
        for &n in &[
            31usize,
            32,
            64,
            1000,
            1024,
            1056,
            65536 + 7,
            (1 << 17) + 100,
            3 << 17,
        ] {
            let v: Vec<u32> = (0..n)
                .map(|_| {
                    let x = r.next();
                    (x.trailing_zeros() * 7) % 500 + if x % 89 == 0 { 1 << 21 } else { 0 }
                })
                .collect();
            let bytes: Vec<u8> = v.iter().map(|&x| (x % 251) as u8).collect();
            let e = encode_as::<u32, LANES>(&v, BLOCK_LOG2, true);
            assert_eq!(e, encode_as::<u32, LANES>(&v, BLOCK_LOG2, false), "n={n}");
            assert_eq!(decode::<u32>(&e, n).unwrap(), v);
            let eb = encode_as::<u8, LANES>(&bytes, BLOCK_LOG2, true);
            assert_eq!(
                eb,
                encode_as::<u8, LANES>(&bytes, BLOCK_LOG2, false),
                "n={n}"
            );
            // Skewed: nearly every symbol one value, so most steps need no word.
            let skew: Vec<u32> = (0..n).map(|i| u32::from(i % 97 == 0)).collect();
            assert_eq!(
                encode_as::<u32, LANES>(&skew, BLOCK_LOG2, true),
                encode_as::<u32, LANES>(&skew, BLOCK_LOG2, false)
            );
        }
    }

    #[test]
    fn lane_count_is_checked() {
        // Short streams have 4 lanes (bits 0), longer ones 32 (bits 3).
        for (n, good) in [(5000u32, 0u8), (FEW_UP_TO as u32 + 1, 3)] {
            let v: Vec<u32> = (0..n).map(|i| i % 7).collect();
            let e = encode(&v);
            for bits in [0u8, 1, 2, 3, 4, 7] {
                let mut bad = e.clone();
                bad[0] = (bad[0] & BLOCK_BITS) | bits << LANES_SHIFT;
                // Read with the other lane count, the states and words
                // misalign and the block's checks fail; 8 and 16 lanes are
                // no lane count of the format.
                let ok = decode::<u32>(&bad, v.len()).is_ok();
                assert_eq!(ok, bits == good, "n={n} bits={bits}");
            }
        }
    }

    #[test]
    fn plane_kinds() {
        // Plane 0 rANS, plane 1 sparse (rare outliers), plane 2 constant-free: absent.
        let mut r = Rng(17);
        let v: Vec<u32> = (0..200_000)
            .map(|_| {
                let x = r.next();
                (x % 5) as u32
                    + if x % 5000 == 0 {
                        300 + (x >> 40) as u32 % 1000
                    } else {
                        0
                    }
            })
            .collect();
        let e = rt32(&v);
        assert_eq!(e[1], 0b11);
        // The outliers' low bytes make plane 0 many-valued: a map.
        assert_eq!(e[2], KIND_RANS_MAP);
        // All symbols share a high byte: constant plane 3.
        let w: Vec<u32> = v.iter().map(|&x| x | 0x7f00_0000).collect();
        let e = rt32(&w);
        assert_eq!(e[1], 0b1011);
        assert_eq!(e[e.len() - 2], KIND_CONST);
        assert_eq!(e[e.len() - 1], 0x7f);
        // The sparse plane 1 beats rANS on size here.
        let sparse = encode(&v).len();
        let only_low: Vec<u32> = v.iter().map(|&x| x & 0xff).collect();
        assert!(sparse < encode(&only_low).len() + 3 * 200_000 / 5000 + 64);
        // Sparse bytes.
        let mut b = vec![0u8; 100_000];
        b[5] = 1;
        b[99_999] = 200;
        let e = encode(&b);
        assert_eq!(e[2], KIND_SPARSE);
        assert_eq!(decode::<u8>(&e, b.len()).unwrap(), b);
    }

    #[test]
    fn many_values_are_listed_as_a_map() {
        let mut r = Rng(23);
        // 33 values: the map (kind 3); 32: one by one (kind 1).
        for (values, kind) in [
            (33u64, KIND_RANS_MAP),
            (32, KIND_RANS),
            (256, KIND_RANS_MAP),
        ] {
            let b: Vec<u8> = (0..50_000).map(|_| (r.next() % values) as u8).collect();
            let e = encode(&b);
            assert_eq!(e[2], kind, "{values} values");
            assert_eq!(decode::<u8>(&e, b.len()).unwrap(), b);
            if kind == KIND_RANS_MAP {
                let map = &e[3..3 + MAP_FROM];
                let set: u32 = map.iter().map(|x| x.count_ones()).sum();
                assert_eq!(set as u64, values);
            }
        }
        // Bad maps: truncated, empty, and one value too many for the
        // frequencies that follow.
        let b: Vec<u8> = (0..5000).map(|_| (r.next() % 100) as u8).collect();
        let good = encode(&b);
        let mut empty = good.clone();
        empty[3..3 + MAP_FROM].fill(0);
        let mut extra = good.clone();
        extra[3 + 31] |= 0x80;
        for (what, data) in [
            ("truncated map", good[..3 + 20].to_vec()),
            ("empty map", empty),
            ("a value too many", extra),
        ] {
            let err = decode::<u8>(&data, b.len()).expect_err(what);
            assert_eq!(err.kind, crate::error::ErrorKind::CorruptStream, "{what}");
        }
    }
}
