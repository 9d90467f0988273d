//! The built-in base: lattice quantization, a per-particle choice among four
//! predictors along the particle order, and context-split entropy coding.
//!
//! **Quantization.** Every coordinate x becomes an integer `q = round(x / step)`
//! and decodes as `(q as f64 * step)` rounded to the positions' type, f32 or
//! f64 (one formula, encoder and decoder). `step` is `2 xi` shrunk by that
//! type's rounding at the largest coordinate (half an ulp: 2^-24 or 2^-53 of
//! it), so a finite coordinate's reconstruction is within `xi` unless the type
//! cannot resolve
//! `xi / 2` at its magnitude (see [`lattice_step`]). Coordinates that are not
//! finite or whose `|x / step|` exceeds 2^40 ("unrepresentable") get residual 0
//! under the chosen predictor: their decoded value is whatever that prediction
//! reconstructs to, usually out of bound, and the caller stores them exactly.
//! Lattice values are kept as `u = q - qmin` in `[0, R)` and every residual is
//! taken modulo `R`, centered: a particle crossing a periodic box edge costs a
//! small residual instead of a box-sized one.
//!
//! **Prediction.** Cosmology snapshots usually list particles in Lagrangian
//! (lattice) order, so particle i-1, i-K1 and i-K2 are spatial neighbours for
//! the lattice's row and plane strides K1, K2. The encoder detects K1 and K2 from
//! a sample (0 when no stride helps). The predictors are: previous particle,
//! 2D Lorenzo (i-1, i-K1), 3D Lorenzo (adds i-K2) and the median of i-1, i-K1,
//! i-K2 (robust inside halos, where positions are random around a centre).
//! Each particle uses the predictor with the smallest error on particles i-1
//! and i-K1 (known to the decoder: no side information).
//!
//! **Coding.** A residual's zig-zag value becomes a token (values below 8 as
//! themselves, larger ones as bit length and two leading bits, 168 tokens) plus
//! raw low bits. Tokens are split into streams by context: the predictor used
//! and the bit length of the neighbours' and this particle's earlier residual
//! magnitudes, which separates smooth field particles from halo particles. Rare
//! contexts are merged so that each stream carries its table. Each stream is
//! entropy-coded with the stream's coder (`codec::encode_bytes`).
//!
//! **Chunks.** Particles are processed in chunks of `chunk_len` (at least 2^18
//! and 16 K2) that reference only themselves, so both directions run in parallel
//! with output identical for any thread count.
//!
//! **Unordered sets.** Where no stride is found and the previous particle is
//! no closer than far ones (shuffled snapshots), prediction along the order
//! gains nothing; such sets are coded by density cells instead (section format
//! 2, `cells.rs`): the same lattice, each particle's cell Huffman-coded with the
//! set's cell histogram and its offset in the cell as raw bits.
//!
//! Section [`FIRST_SECTION`](super::FIRST_SECTION) (the only one) holds
//! (varints are unsigned LEB128):
//!
//! ```text
//! u8      format         1 (format 2: step, qmin and R as below, then `cells.rs`'s layout)
//! f64     step           lattice step (LE), finite and > 0
//! varint  zigzag(qmin)   lattice value of u = 0, |qmin| <= 2^41
//! varint  R              lattice range, 1..=2^42
//! varint  K1, K2         strides (0 = none), <= 2^40; K2 > 0 needs K1 > 0
//! varint  chunk_len      particles per chunk, 1..=2^40
//! [u8;24] starts         bit (sel * 48 + ctx), LSB first: context (sel, ctx) starts a
//!                        new stream (bit ctx 0 of every sel is set); streams are
//!                        numbered in bit order, a context uses the last started one
//! per chunk, per stream: varint count of the chunk's tokens in that stream
//! per chunk:             varint bytes of the chunk's raw bits
//! per stream:            varint bytes of the coded stream
//! coded streams (codec::encode_bytes, count = sum over chunks), stream order
//! raw bits of each chunk, chunk order: LSB first, zero-padded to a byte
//! ```

use rayon::prelude::*;

use super::Sections;
use crate::codec::varint::{get_u8, get_uvarint, get_uvarint_max, put_uvarint};
use crate::codec::{self, Coder};
use crate::error::{Error, Result};
use crate::format::Parsed;
use crate::real::Real;

mod cells;

const SECTION: u32 = super::FIRST_SECTION;
/// Section formats: prediction along the particle order, or density cells.
const FORMAT: u8 = 1;
const FORMAT_CELLS: u8 = 2;
/// Fewest particles for which the encoder considers density cells.
const MIN_CELLS: usize = 64;
/// Largest |q| coded; beyond it a coordinate is unrepresentable.
const MAX_Q: f64 = (1u64 << 40) as f64;
const MAX_QMIN: u64 = 1 << 41;
const MAX_RANGE: u64 = 1 << 42;
const MAX_STRIDE: u64 = 1 << 40;
const MAX_ZZ_BITS: u32 = 43;
/// Tokens below this are the zig-zag value itself.
const DIRECT: u32 = 8;
const NUM_TOKENS: u32 = DIRECT + (MAX_ZZ_BITS - 3) * 4;
const NPRED: usize = 4;
const NCTX: usize = 48;
const NIDS: usize = NPRED * NCTX;
/// A context with fewer tokens than this is merged into the next one up.
const MIN_STREAM: usize = 4096;
const MIN_CHUNK: usize = 1 << 18;
/// Particles sampled by the stride detection's coarse pass (half for K2; the
/// fine pass takes 16 times more), and the largest K1 and K2 / K1 tried.
const SAMPLE: usize = 128;
const MAX_LAG: usize = 4096;
const MAX_PLANE: usize = 1024;

/// The integer lattice of one stream.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Lattice {
    step: f64,
    qmin: i64,
    range: i64,
}

impl Lattice {
    /// The one reconstruction formula.
    #[inline(always)]
    fn value<T: Real>(&self, u: i64) -> T {
        T::from_f64((self.qmin + u) as f64 * self.step)
    }

    /// A section's start, shared by both formats: the format byte, then
    /// step (f64 LE), zig-zag qmin and range as varints.
    fn header(&self, format: u8) -> Vec<u8> {
        let mut sec = vec![format];
        sec.extend_from_slice(&self.step.to_le_bytes());
        put_uvarint(&mut sec, zigzag64(self.qmin));
        put_uvarint(&mut sec, self.range as u64);
        sec
    }
}

/// Half the spacing of T at magnitude `x >= 0` ([`Real::half_ulp`]): for f32
/// `2^(floor(log2 x) - 24)`, and `2^-150` among f32 subnormals.
#[inline]
fn half_ulp<T: Real>(x: f64) -> f64 {
    T::half_ulp(x)
}

/// The largest bound that means anything for T: beyond it every finite value
/// is within the bound of every other (f32: 1e39 > 2 f32::MAX; f64: 1e300,
/// where `2 xi` is still finite).
fn bound_cap<T: Real>() -> f64 {
    if T::BYTES == 4 {
        1e39
    } else {
        1e300
    }
}

/// Whether T resolves bound `xi` at `|x|`: half its spacing at `|x| + xi` (the
/// largest reconstruction) is at most `xi / 2`. Only such coordinates set the step.
#[inline]
fn resolved<T: Real>(x: f64, xi: f64) -> bool {
    half_ulp::<T>(x.abs() + xi) <= xi / 2.0
}

/// Lattice step for bound `xi` when the largest resolved coordinate is `max_abs`:
/// `2 (xi - h) - (max_abs + xi) 2^-49` with h the half-ulp of T at `max_abs + xi`,
/// so that rounding to the lattice (<= step/2 plus f64 rounding, covered by the
/// last term) plus rounding the reconstruction to T (<= h; for f64 that is the
/// rounding of `q * step` itself, counted in both terms) stays within xi.
/// (f64 rounding: `x / step` and `q * step` each err by <= 2^-53 of
/// `|x| + xi`, so the lattice error is <= step/2 + 2^-51 (max_abs + xi),
/// well inside the 2^-49 term; `within` decides in the end anyway.)
/// As h <= xi/2 the step is at least about xi. Larger coordinates, which f32
/// cannot hold to within xi/2, use the same lattice and may miss the bound.
/// Below f32's resolution altogether (xi < 2^-149) the step is `2 xi`: only zeros
/// are then representable.
fn lattice_step<T: Real>(xi: f64, max_abs: f64) -> f64 {
    let top = max_abs + xi;
    let h = half_ulp::<T>(top);
    if h > xi / 2.0 {
        return 2.0 * xi;
    }
    2.0 * (xi - h) - top * (2.0f64).powi(-49)
}

#[inline(always)]
fn zigzag64(r: i64) -> u64 {
    ((r << 1) ^ (r >> 63)) as u64
}

#[inline(always)]
fn unzigzag64(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// `x` modulo `range`, in `[0, range)`.
#[inline(always)]
fn wrap(x: i64, range: i64) -> i64 {
    if (0..range).contains(&x) {
        x
    } else {
        x.rem_euclid(range)
    }
}

#[inline(always)]
fn bit_len(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Token and raw-bit count of a zig-zag value (module doc).
#[inline(always)]
fn token_of(zz: u64) -> (u8, u32) {
    if zz < u64::from(DIRECT) {
        return (zz as u8, 0);
    }
    let nb = bit_len(zz);
    let shift = nb - 3;
    let tok = DIRECT + (nb - 4) * 4 + ((zz >> shift) & 3) as u32;
    (tok as u8, shift)
}

/// Raw-bit count and high part of the zig-zag value of token `tok < NUM_TOKENS`.
#[inline(always)]
fn token_parts(tok: u32) -> (u32, u64) {
    if tok < DIRECT {
        return (0, u64::from(tok));
    }
    let k = tok - DIRECT;
    let shift = k / 4 + 1;
    (shift, u64::from(4 | (k % 4)) << shift)
}

struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    fn new() -> Self {
        BitWriter {
            out: Vec::new(),
            acc: 0,
            nbits: 0,
        }
    }
    /// Appends the low `len <= 56` bits of `v` (higher bits zero).
    #[inline(always)]
    fn put(&mut self, v: u64, len: u32) {
        self.acc |= v << self.nbits;
        self.nbits += len;
        while self.nbits >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.nbits -= 8;
        }
    }
    fn finish(mut self) -> Vec<u8> {
        if self.nbits > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u64,
    nbits: u32,
}

impl<'a> BitReader<'a> {
    fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            acc: 0,
            nbits: 0,
        }
    }
    /// Reads `len <= 56` bits.
    #[inline(always)]
    fn get(&mut self, len: u32) -> Result<u64> {
        while self.nbits < len {
            let b = *self
                .data
                .get(self.pos)
                .ok_or_else(|| Error::corrupt("builtin base: raw bits are truncated"))?;
            self.acc |= u64::from(b) << self.nbits;
            self.pos += 1;
            self.nbits += 8;
        }
        let v = self.acc & ((1u64 << len) - 1);
        self.acc >>= len;
        self.nbits -= len;
        Ok(v)
    }
    /// The input must be used up, its padding bits zero.
    fn finish(&self) -> Result<()> {
        if self.pos != self.data.len() || self.nbits >= 8 || self.acc != 0 {
            return Err(Error::corrupt("builtin base: raw bits have trailing data"));
        }
        Ok(())
    }
}

/// Index of the smallest of `v` (the first on ties).
#[inline(always)]
fn argmin(v: [u64; NPRED]) -> usize {
    let mut best = 0;
    for p in 1..NPRED {
        if v[p] < v[best] {
            best = p;
        }
    }
    best
}

#[inline(always)]
fn median3(a: i64, b: i64, c: i64) -> i64 {
    a.max(b).min(a.min(b).max(c))
}

/// `d` in `(-range, range)` modulo `range`, in `[-(range / 2), range - range / 2)`
/// (branch-free).
#[inline(always)]
fn centered_near(d: i64, range: i64) -> i64 {
    let half = range / 2;
    let d = if d >= range - half { d - range } else { d };
    if d < -half {
        d + range
    } else {
        d
    }
}

/// Periodic distance of two lattice values in `[0, range)`: `|centered_near(a - b)|`.
#[inline(always)]
fn lattice_dist(a: i64, b: i64, range: i64) -> u64 {
    let d = (a - b).unsigned_abs();
    d.min(range as u64 - d)
}

/// Per-particle state of [`walk`], kept between chunks to spare allocations.
#[derive(Default)]
struct Scratch {
    err: Vec<[u32; NPRED]>,
    mag: Vec<u64>,
}

impl Scratch {
    /// State for `len` particles. Not cleared: [`walk`] writes each entry
    /// before it reads it.
    fn take(&mut self, len: usize) -> (&mut [[u32; NPRED]], &mut [u64]) {
        self.err.resize(len, [0; NPRED]);
        self.mag.resize(len, 0);
        (&mut self.err[..len], &mut self.mag[..len])
    }
}

/// Runs the predictor over one chunk of particles, calling
/// [`Coordinates::code`] for each coordinate in order (the walk overwrites `u`
/// in order with what it returns). `id = sel * NCTX + ctx` names the context.
/// Encoder and decoder share this function, so they cannot disagree on
/// predictions or contexts.
///
/// Particle `t` sees particle `t - 1` when `t >= 1`, adds `t - K1` when
/// `K1 > 0` and `t > K1`, and `t - K2` when also `K2 > 0` and `t > K1 + K2`.
/// The walk runs each of those four ranges of `t` as its own loop
/// ([`Walk::range_of`]), so the per-particle step has no branch on them.
fn walk<C: Coordinates>(
    u: &mut [[i64; 3]],
    k1: usize,
    k2: usize,
    range: i64,
    scratch: &mut Scratch,
    code: &mut C,
) -> Result<()> {
    let len = u.len();
    let (err, mag) = scratch.take(len);
    let end1 = if k1 == 0 { len } else { len.min(k1 + 1) };
    let end2 = if k1 == 0 || k2 == 0 {
        len
    } else {
        len.min(k1 + k2 + 1)
    };
    let mut w = Walk {
        u,
        err,
        mag,
        k1,
        k2,
        range,
    };
    w.range_of::<0, C>(0..len.min(1), code)?;
    w.range_of::<1, C>(len.min(1)..end1, code)?;
    w.range_of::<2, C>(end1..end2, code)?;
    w.range_of::<3, C>(end2..len, code)
}

/// What [`walk`] does with each coordinate: the encoder codes it, the
/// decoder decodes it. A trait rather than a closure so that the step is
/// inlined into the walk's loop (a closure of this size was not).
trait Coordinates {
    /// Given the context id, the prediction in `[0, range)` and the value `u`
    /// held there before, returns the coordinate's lattice value in
    /// `[0, range)` (encoder: the true one, or the prediction for an
    /// unrepresentable coordinate; decoder: prediction plus the decoded residual).
    fn code(&mut self, id: usize, pred: i64, old: i64) -> Result<i64>;
}

/// One chunk's token and raw-bit writer.
struct Encoder<'a> {
    out: &'a mut ChunkOut,
    bits: BitWriter,
    range: i64,
}

impl Coordinates for Encoder<'_> {
    #[inline(always)]
    fn code(&mut self, id: usize, pred: i64, old: i64) -> Result<i64> {
        let (v, r) = if old >= 0 {
            (old, centered_near(old - pred, self.range))
        } else {
            (pred, 0)
        };
        let (tok, shift) = token_of(zigzag64(r));
        self.out.coded.push((id as u16) << 8 | u16::from(tok));
        self.out.counts[id] += 1;
        if shift > 0 {
            self.bits.put(zigzag64(r) & ((1u64 << shift) - 1), shift);
        }
        Ok(v)
    }
}

/// One chunk's token and raw-bit reader.
struct Decoder<'a> {
    /// The chunk's tokens in each stream.
    toks: Vec<std::slice::Iter<'a, u8>>,
    /// Stream of each context id.
    map: &'a [usize; NIDS],
    bits: BitReader<'a>,
    range: i64,
}

impl Coordinates for Decoder<'_> {
    #[inline(always)]
    fn code(&mut self, id: usize, pred: i64, _old: i64) -> Result<i64> {
        let tok = *self.toks[self.map[id]]
            .next()
            .ok_or_else(|| corrupt("a context stream is exhausted"))?;
        let tok = u32::from(tok);
        if tok >= NUM_TOKENS {
            return Err(corrupt("invalid token"));
        }
        let (shift, high) = token_parts(tok);
        let zz = high | self.bits.get(shift)?;
        Ok(wrap(pred + unzigzag64(zz), self.range))
    }
}

/// One chunk's walk state.
struct Walk<'a> {
    u: &'a mut [[i64; 3]],
    err: &'a mut [[u32; NPRED]],
    mag: &'a mut [u64],
    k1: usize,
    k2: usize,
    range: i64,
}

impl Walk<'_> {
    /// Particles `ts`, all of which see the same neighbours: none (`L = 0`),
    /// `t - 1` (1), and `t - K1` (2), and `t - K2` (3).
    #[inline(always)]
    fn range_of<const L: u8, C: Coordinates>(
        &mut self,
        ts: std::ops::Range<usize>,
        code: &mut C,
    ) -> Result<()> {
        let (k1, k2, range) = (self.k1, self.k2, self.range);
        let Some(t0) = ts.clone().next() else {
            return Ok(());
        };
        // Neighbours t - 1, t - K1 - 1, t - K2 - 1 and t - K2 - K1 - 1 are the
        // previous step's t, t - K1, t - K2 and t - K2 - K1: carried, not reloaded.
        let at =
            |t: usize, lag: usize, level: u8| if L >= level { self.u[t - lag] } else { [0; 3] };
        let mut a = if L >= 1 {
            self.u[t0 - 1]
        } else {
            [range / 2; 3]
        };
        let mut c = at(t0, k1 + 1, 2);
        let mut e = at(t0, k2 + 1, 3);
        let mut g = at(t0, k2 + k1 + 1, 3);
        for t in ts {
            let (sel, m_prev) = if L >= 1 {
                let e1 = self.err[t - 1];
                let (e2, m2) = if L >= 2 {
                    (self.err[t - k1], self.mag[t - k1])
                } else {
                    (e1, self.mag[t - 1])
                };
                let score = std::array::from_fn(|p| u64::from(e1[p]) + u64::from(e2[p]));
                (argmin(score), self.mag[t - 1].saturating_add(m2))
            } else {
                (0, 0)
            };
            let b = if L >= 2 { self.u[t - k1] } else { [0; 3] };
            let (d, f) = if L >= 3 {
                (self.u[t - k2], self.u[t - k2 - k1])
            } else {
                ([0; 3], [0; 3])
            };
            let old = self.u[t];
            let mut m_cur = 0u64;
            let mut miss = [0u64; NPRED];
            let mut out = [0i64; 3];
            for j in 0..3 {
                let preds = predictions::<L>([a[j], b[j], c[j], d[j], e[j], f[j], g[j]], range);
                let m = m_prev.saturating_add(m_cur.saturating_mul(4));
                let ctx = (bit_len(m) as usize).min(NCTX - 1);
                let v = code.code(sel * NCTX + ctx, preds[sel], old[j])?;
                out[j] = v;
                for (x, &p) in miss.iter_mut().zip(&preds) {
                    *x += lattice_dist(v, p, range);
                }
                m_cur += lattice_dist(v, preds[sel], range);
            }
            self.u[t] = out;
            self.err[t] = miss.map(|x| x.min(u64::from(u32::MAX)) as u32);
            self.mag[t] = m_cur;
            (a, c, e, g) = (out, b, d, f);
        }
        Ok(())
    }
}

/// The four predictions, in `[0, range)`, of one coordinate from its values
/// `[a, b, c, d, e, f, g]` at particles t - 1, t - K1, t - K1 - 1, t - K2,
/// t - K2 - 1, t - K2 - K1, t - K2 - K1 - 1, of which level `L` (see
/// [`Walk::range_of`]) sees the first 0, 1, 3 or all 7: previous particle,
/// 2D Lorenzo, 3D Lorenzo, median (or at level 2, half way to t - K1).
#[inline(always)]
fn predictions<const L: u8>(x: [i64; 7], range: i64) -> [i64; NPRED] {
    let [a, b, c, d, e, f, g] = x;
    if L < 2 {
        return [a; NPRED];
    }
    let l2 = a + b - c;
    let ab = centered_near(b - a, range);
    let p1 = wrap(l2, range);
    if L < 3 {
        return [a, p1, p1, wrap(a + ab / 2, range)];
    }
    let ad = centered_near(d - a, range);
    [
        a,
        p1,
        wrap(l2 + d - e - f + g, range),
        wrap(a + median3(0, ab, ad), range),
    ]
}

/// Bit length of the periodic lattice distance between particles i and j (both
/// representable: values in `[0, range)`, so no division is needed).
#[inline(always)]
fn distance_bits(u: &[i64], i: usize, j: usize, range: i64) -> u64 {
    let d: u64 = (0..3)
        .map(|c| {
            let d = (u[3 * i + c] - u[3 * j + c]).unsigned_abs();
            d.min(range as u64 - d)
        })
        .sum();
    u64::from(bit_len(d))
}

/// Mean of per-lag sums over counts (infinite without samples).
fn means(sums: &[u64], counts: &[u64]) -> Vec<f64> {
    sums.iter()
        .zip(counts)
        .map(|(&s, &c)| {
            if c == 0 {
                f64::INFINITY
            } else {
                s as f64 / c as f64
            }
        })
        .collect()
}

/// Per-lag sums and counts of [`distance_bits`] over `sample` (sample-major, so
/// each sample scans memory near it; integer sums keep it deterministic).
fn lag_costs(u: &[i64], ok: &[bool], sample: &[usize], lags: &[usize], range: i64) -> Vec<f64> {
    let zero = || (vec![0u64; lags.len()], vec![0u64; lags.len()]);
    let (sums, counts) = sample
        .par_chunks(16)
        .fold(zero, |(mut sums, mut counts), part| {
            for &i in part {
                if !ok[i] {
                    continue;
                }
                for (l, &k) in lags.iter().enumerate() {
                    if k <= i && ok[i - k] {
                        sums[l] += distance_bits(u, i, i - k, range);
                        counts[l] += 1;
                    }
                }
            }
            (sums, counts)
        })
        .reduce(zero, |(mut s1, mut c1), (s2, c2)| {
            s1.iter_mut().zip(s2).for_each(|(a, b)| *a += b);
            c1.iter_mut().zip(c2).for_each(|(a, b)| *a += b);
            (s1, c1)
        });
    means(&sums, &counts)
}

/// Evenly spread sample of `s` particle indices out of `n`.
fn spread(n: usize, s: usize) -> Vec<usize> {
    let s = s.min(n);
    (0..s).map(|i| ((2 * i + 1) * n) / (2 * s)).collect()
}

/// The lag (from `lags`, ascending) whose particles are closest in lattice
/// distance, or 0 when none stands out. A coarse pass over all lags with a small
/// sample keeps 16 candidates, which a larger sample then ranks; the smallest lag
/// within 1/4 bit of the best wins, if it beats the median lag by a bit or more.
fn pick_lag(u: &[i64], ok: &[bool], lags: &[usize], range: i64, coarse: usize) -> usize {
    if lags.len() < 4 {
        return 0;
    }
    let n = ok.len();
    let costs = lag_costs(u, ok, &spread(n, coarse), lags, range);
    let mut order: Vec<usize> = (0..lags.len()).collect();
    order.sort_by(|&a, &b| costs[a].total_cmp(&costs[b]).then(a.cmp(&b)));
    let median = costs[order[order.len() / 2]];
    let mut cand: Vec<usize> = order[..16.min(order.len())]
        .iter()
        .map(|&i| lags[i])
        .collect();
    cand.sort_unstable();
    let fine = lag_costs(u, ok, &spread(n, 16 * coarse), &cand, range);
    let min = fine.iter().copied().fold(f64::INFINITY, f64::min);
    if !min.is_finite() || min + 1.0 > median {
        return 0;
    }
    cand.iter()
        .zip(&fine)
        .find(|(_, &c)| c <= min + 0.25)
        .map_or(0, |(&k, _)| k)
}

/// Whether the particle order says nothing of position: with no lattice
/// strides, the previous particle is no closer (by a bit) than far ones. Such
/// sets are coded by density cells ([`cells`]).
fn unordered(u: &[i64], ok: &[bool], range: i64) -> bool {
    let n = ok.len();
    if n < MIN_CELLS {
        return false;
    }
    let lags = [1, n / 7, n / 5, n / 3, n / 2];
    let mut c = lag_costs(u, ok, &spread(n, 16 * SAMPLE), &lags, range);
    let near = c[0];
    c[1..].sort_by(f64::total_cmp);
    near.is_finite() && near + 1.0 > c[3]
}

/// Detects the row and plane strides (K1, K2) of a lattice order; 0 = none.
fn detect_strides(u: &[i64], ok: &[bool], range: i64) -> (usize, usize) {
    let n = ok.len();
    let lags: Vec<usize> = (2..=MAX_LAG.min(n / 4)).collect();
    let k1 = pick_lag(u, ok, &lags, range, SAMPLE);
    if k1 == 0 {
        return (0, 0);
    }
    let lags: Vec<usize> = (2..=MAX_PLANE.min(n / (4 * k1))).map(|m| m * k1).collect();
    (k1, pick_lag(u, ok, &lags, range, SAMPLE / 2))
}

/// One chunk's encoder output.
struct ChunkOut {
    /// Context id (high byte) and token (low byte) of each coordinate.
    coded: Vec<u16>,
    /// Tokens per context id.
    counts: [usize; NIDS],
    raw: Vec<u8>,
}

/// `pos` as AoS positions; see the module doc.
pub fn encode<T: Real>(pos: &[T], xi: f64, coder: Coder) -> Result<(Sections, Vec<T>)> {
    // A bound beyond T's range is as good as `bound_cap`.
    let xi = xi.min(bound_cap::<T>());
    let nominal = 2.0 * xi;
    let fits = |x: T| {
        x.is_finite() && (x.to_f64() / nominal).abs() <= MAX_Q && resolved::<T>(x.to_f64(), xi)
    };
    let max_abs = pos
        .par_chunks(1 << 16)
        .map(|c| {
            c.iter()
                .filter(|&&x| fits(x))
                .fold(0.0f64, |m, &x| m.max(x.to_f64().abs()))
        })
        .reduce(|| 0.0, f64::max);
    let step = lattice_step::<T>(xi, max_abs);
    // Lattice values q (i64::MIN: unrepresentable), then u = q - qmin in place (-1).
    let lattice_q = |x: T| {
        let v = x.to_f64() / step;
        if x.is_finite() && v.abs() <= MAX_Q {
            v.round() as i64
        } else {
            i64::MIN
        }
    };
    let mut u3: Vec<[i64; 3]> = pos
        .par_chunks_exact(3)
        .map(|p| [lattice_q(p[0]), lattice_q(p[1]), lattice_q(p[2])])
        .collect();
    let u = u3.as_flattened_mut();
    let (qmin, qmax) = u
        .par_chunks(1 << 16)
        .map(|c| {
            c.iter()
                .filter(|&&v| v != i64::MIN)
                .fold((i64::MAX, i64::MIN), |(a, b), &v| (a.min(v), b.max(v)))
        })
        .reduce(|| (i64::MAX, i64::MIN), |x, y| (x.0.min(y.0), x.1.max(y.1)));
    let (qmin, range) = if qmin > qmax {
        (0, 1)
    } else {
        (qmin, qmax - qmin + 1)
    };
    let lat = Lattice { step, qmin, range };
    u.par_iter_mut()
        .for_each(|v| *v = if *v == i64::MIN { -1 } else { *v - qmin });
    let ok: Vec<bool> = u
        .chunks_exact(3)
        .map(|c| c.iter().all(|&v| v >= 0))
        .collect();
    let (k1, k2) = detect_strides(u, &ok, range);
    if k1 == 0 && unordered(u, &ok, range) {
        // Unrepresentable coordinates decode as lattice value 0.
        u.par_iter_mut().for_each(|v| *v = (*v).max(0));
        let mut sec = lat.header(FORMAT_CELLS);
        cells::encode(u, range, &mut sec);
        let out: Vec<T> = u.par_iter().map(|&v| lat.value(v)).collect();
        return Ok((vec![(SECTION, sec)], out));
    }
    let chunk_len = MIN_CHUNK.max(16 * k2);

    // Each chunk is walked in place: u ends up holding what the decoder will.
    let chunks: Vec<ChunkOut> = u3
        .par_chunks_mut(chunk_len)
        .map_init(Scratch::default, |scratch, u| {
            let mut out = ChunkOut {
                coded: Vec::with_capacity(u.len()),
                counts: [0; NIDS],
                raw: Vec::new(),
            };
            let mut enc = Encoder {
                out: &mut out,
                bits: BitWriter::new(),
                range,
            };
            walk(u, k1, k2, range, scratch, &mut enc)?;
            let bits = enc.bits;
            out.raw = bits.finish();
            Ok(out)
        })
        .collect::<Result<_>>()?;

    // Merge rare contexts (ascending ctx within each predictor) into streams.
    let mut counts = [0usize; NIDS];
    for c in &chunks {
        counts.iter_mut().zip(&c.counts).for_each(|(a, b)| *a += b);
    }
    let mut starts = [0u8; NIDS / 8];
    for sel in 0..NPRED {
        let mut acc = 0;
        let mut last = sel * NCTX;
        for ctx in 0..NCTX {
            let id = sel * NCTX + ctx;
            if ctx == 0 || acc >= MIN_STREAM {
                starts[id / 8] |= 1 << (id % 8);
                acc = 0;
                last = id;
            }
            acc += counts[id];
        }
        if acc < MIN_STREAM && last != sel * NCTX {
            starts[last / 8] &= !(1 << (last % 8));
        }
    }
    let (map, nstreams) = stream_map(&starts)?;
    let mut chunk_counts = vec![0usize; chunks.len() * nstreams];
    for (ci, c) in chunks.iter().enumerate() {
        for (id, &k) in c.counts.iter().enumerate() {
            chunk_counts[ci * nstreams + map[id]] += k;
        }
    }
    // Each chunk's tokens by stream (in parallel), then each stream's chunks in order.
    let parts: Vec<Vec<Vec<u8>>> = chunks
        .par_iter()
        .enumerate()
        .map(|(ci, c)| {
            let mut part: Vec<Vec<u8>> = (0..nstreams)
                .map(|s| Vec::with_capacity(chunk_counts[ci * nstreams + s]))
                .collect();
            for &x in &c.coded {
                part[map[usize::from(x >> 8)]].push(x as u8);
            }
            part
        })
        .collect();
    let streams: Vec<Vec<u8>> = (0..nstreams)
        .into_par_iter()
        .map(|s| parts.iter().flat_map(|p| p[s].iter().copied()).collect())
        .collect();
    let coded: Vec<Vec<u8>> = streams
        .par_iter()
        .map(|s| codec::encode_bytes(coder, s))
        .collect();

    let mut sec = lat.header(FORMAT);
    for v in [k1 as u64, k2 as u64, chunk_len as u64] {
        put_uvarint(&mut sec, v);
    }
    sec.extend_from_slice(&starts);
    for &c in &chunk_counts {
        put_uvarint(&mut sec, c as u64);
    }
    for c in &chunks {
        put_uvarint(&mut sec, c.raw.len() as u64);
    }
    for s in &coded {
        put_uvarint(&mut sec, s.len() as u64);
    }
    for s in &coded {
        sec.extend_from_slice(s);
    }
    for c in &chunks {
        sec.extend_from_slice(&c.raw);
    }
    let out: Vec<T> = u3
        .as_flattened()
        .par_iter()
        .map(|&v| lat.value(v))
        .collect();
    Ok((vec![(SECTION, sec)], out))
}

/// Stream number of every context id from the start bitmap, and the stream count.
fn stream_map(starts: &[u8; NIDS / 8]) -> Result<([usize; NIDS], usize)> {
    let mut map = [0usize; NIDS];
    let mut next = 0;
    for (id, m) in map.iter_mut().enumerate() {
        if starts[id / 8] >> (id % 8) & 1 == 1 {
            next += 1;
        } else if id % NCTX == 0 {
            return Err(Error::corrupt(
                "builtin base: a predictor has no first stream",
            ));
        }
        *m = next - 1;
    }
    Ok((map, next))
}

/// Upper bound on the section's size for `n` particles (a sane ceiling, not tight).
fn max_section_len(n: usize) -> usize {
    n.saturating_mul(32).saturating_add(1 << 20)
}

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("builtin base: {what}"))
}

/// What the section's format byte says (`inspect`); `None` when the section
/// cannot be read or the byte is unknown.
pub fn layout(p: &Parsed, n: usize) -> Option<&'static str> {
    match *p.section(SECTION, max_section_len(n)).ok()?.first()? {
        FORMAT => Some("prediction along the particle order"),
        FORMAT_CELLS => Some("density cells"),
        _ => None,
    }
}

/// Decodes `n` particles; see the module doc.
pub fn decode<T: Real>(p: &Parsed, n: usize, xi: f64, coder: Coder) -> Result<Vec<T>> {
    let sec = p.section(SECTION, max_section_len(n))?;
    let d: &[u8] = &sec;
    let mut at = 0;
    let format = get_u8(d, &mut at, "builtin base format")?;
    if format != FORMAT && format != FORMAT_CELLS {
        return Err(corrupt("unknown format"));
    }
    let step = d
        .get(at..at + 8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(|| corrupt("truncated header"))?;
    at += 8;
    if !(step.is_finite() && step > 0.0 && step <= 2.0 * xi.min(bound_cap::<T>())) {
        return Err(corrupt("lattice step does not fit the bound"));
    }
    let qmin = unzigzag64(get_uvarint(d, &mut at)?);
    if qmin.unsigned_abs() > MAX_QMIN {
        return Err(corrupt("lattice origin out of range"));
    }
    let range = get_uvarint_max(d, &mut at, MAX_RANGE, "builtin base lattice range")? as i64;
    if range < 1 {
        return Err(corrupt("invalid lattice range"));
    }
    if format == FORMAT_CELLS {
        return cells::decode(d, at, &Lattice { step, qmin, range }, n);
    }
    let k1 = get_uvarint_max(d, &mut at, MAX_STRIDE, "builtin base stride")?;
    let k2 = get_uvarint_max(d, &mut at, MAX_STRIDE, "builtin base stride")?;
    let chunk_len = get_uvarint_max(d, &mut at, MAX_STRIDE, "builtin base chunk length")?;
    if chunk_len < 1 || (k2 > 0 && k1 == 0) {
        return Err(corrupt("invalid lattice parameters"));
    }
    let lat = Lattice { step, qmin, range };
    let starts: [u8; NIDS / 8] = d
        .get(at..at + NIDS / 8)
        .ok_or_else(|| corrupt("truncated header"))?
        .try_into()
        .unwrap();
    at += NIDS / 8;
    let (map, nstreams) = stream_map(&starts)?;
    let nchunks = n.div_ceil(chunk_len);
    let total = 3 * n;
    let mut chunk_counts = Vec::with_capacity(nchunks.min(d.len()) * nstreams);
    let mut stream_total = vec![0usize; nstreams];
    for c in 0..nchunks {
        let coords = 3 * (chunk_len.min(n - c * chunk_len));
        let mut sum = 0usize;
        for st in stream_total.iter_mut() {
            let k = get_uvarint_max(d, &mut at, coords as u64, "builtin base token count")?;
            sum += k;
            *st += k;
            chunk_counts.push(k);
        }
        if sum != coords {
            return Err(corrupt("token counts do not match the chunk"));
        }
    }
    let mut raw_lens = Vec::with_capacity(nchunks.min(d.len()));
    for _ in 0..nchunks {
        raw_lens.push(get_uvarint_max(
            d,
            &mut at,
            d.len() as u64,
            "builtin base raw length",
        )?);
    }
    let mut coded_lens = Vec::with_capacity(nstreams);
    for _ in 0..nstreams {
        coded_lens.push(get_uvarint_max(
            d,
            &mut at,
            d.len() as u64,
            "builtin base stream length",
        )?);
    }
    let mut take = |len: usize| -> Result<&[u8]> {
        let s = d
            .get(
                at..at
                    .checked_add(len)
                    .ok_or_else(|| corrupt("lengths overflow"))?,
            )
            .ok_or_else(|| corrupt("section is truncated"))?;
        at += len;
        Ok(s)
    };
    let coded: Vec<&[u8]> = coded_lens.iter().map(|&l| take(l)).collect::<Result<_>>()?;
    let raws: Vec<&[u8]> = raw_lens.iter().map(|&l| take(l)).collect::<Result<_>>()?;
    if at != d.len() {
        return Err(corrupt("trailing bytes"));
    }
    let streams: Vec<Vec<u8>> = coded
        .par_iter()
        .zip(&stream_total)
        .map(|(c, &k)| {
            let v = codec::decode_bytes(coder, c, k)?;
            if v.len() != k {
                return Err(corrupt("a context stream decoded to the wrong length"));
            }
            Ok(v)
        })
        .collect::<Result<_>>()?;
    // Where each chunk's tokens start in each stream.
    let mut begin = vec![0usize; nchunks * nstreams];
    let mut acc = vec![0usize; nstreams];
    for c in 0..nchunks {
        for s in 0..nstreams {
            begin[c * nstreams + s] = acc[s];
            acc[s] += chunk_counts[c * nstreams + s];
        }
    }

    let mut out = vec![T::default(); total];
    out.par_chunks_mut(3 * chunk_len)
        .enumerate()
        .try_for_each_init(
            || (Vec::new(), Scratch::default()),
            |(u, scratch), (c, o)| -> Result<()> {
                let toks: Vec<std::slice::Iter<u8>> = (0..nstreams)
                    .map(|s| {
                        let b = begin[c * nstreams + s];
                        streams[s][b..b + chunk_counts[c * nstreams + s]].iter()
                    })
                    .collect();
                let mut dec = Decoder {
                    toks,
                    map: &map,
                    bits: BitReader::new(raws[c]),
                    range,
                };
                // Not cleared: the walk writes each particle before reading it.
                u.resize(o.len() / 3, [0; 3]);
                let u = &mut u[..o.len() / 3];
                walk(u, k1, k2, range, scratch, &mut dec)?;
                if dec.toks.iter().any(|t| t.len() != 0) {
                    return Err(corrupt("token counts do not match the chunk"));
                }
                dec.bits.finish()?;
                for (x, &v) in o.iter_mut().zip(u.as_flattened()) {
                    *x = lat.value(v);
                }
                Ok(())
            },
        )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{
        check_base, clustered, lattice, mutations, mutations_of, round_trip, shuffled, uniform,
    };
    use super::super::{encode as base_encode, Base};
    use super::*;
    use crate::bound::within;

    #[test]
    fn round_trips_and_bounds() {
        check_base(Base::Builtin, 0);
    }

    #[test]
    fn corrupt_sections_are_errors() {
        mutations(Base::Builtin, <[u8]>::len);
    }

    #[test]
    fn tokens_round_trip() {
        let mut zs: Vec<u64> = (0..5000).collect();
        zs.extend((3..43).flat_map(|b| [(1u64 << b) - 1, 1 << b, (1 << b) + 12345 % (1 << b)]));
        zs.push((1u64 << 43) - 1);
        for zz in zs {
            let (tok, shift) = token_of(zz);
            assert!(u32::from(tok) < NUM_TOKENS, "{zz}");
            let (s2, high) = token_parts(u32::from(tok));
            assert_eq!(s2, shift);
            assert_eq!(high | (zz & ((1u64 << shift) - 1)), zz, "{zz}");
        }
        for r in [0i64, 1, -1, 1 << 41, -(1 << 41), 12345, -12345] {
            assert_eq!(unzigzag64(zigzag64(r)), r);
        }
    }

    #[test]
    fn half_ulp_is_half_the_f32_spacing() {
        for x in [
            1e-45f32,
            1e-40,
            1.1754944e-38,
            1e-30,
            0.1,
            1.0,
            1.5,
            2.0,
            100.0,
            3e38,
        ] {
            let up = f32::from_bits(x.to_bits() + 1);
            assert_eq!(
                half_ulp::<f32>(f64::from(x)),
                (f64::from(up) - f64::from(x)) / 2.0,
                "{x}"
            );
        }
        assert_eq!(half_ulp::<f32>(0.0), (2.0f64).powi(-150));
    }

    #[test]
    fn half_ulp_is_half_the_f64_spacing_down_to_subnormals() {
        // Half the spacing is itself subnormal below 2^-970.
        for x in [
            1e-300f64,
            2f64.powi(-1000),
            3e-308,
            f64::MIN_POSITIVE,
            1e-320,
            5e-324,
            1e-200,
            1.0,
            1e300,
        ] {
            // Opaque, so that the call is not folded at compile time.
            let x = std::hint::black_box(x);
            let up = f64::from_bits(x.to_bits() + 1);
            assert_eq!(half_ulp::<f64>(x), (up - x) / 2.0, "{x:e}");
        }
        assert_eq!(half_ulp::<f64>(2f64.powi(-1000)), f64::from_bits(1 << 21));
        assert_eq!(half_ulp::<f64>(0.0), 0.0);
    }

    #[test]
    fn centered_and_wrap() {
        for range in [1i64, 2, 3, 10, 501] {
            for d in 1 - range..range {
                let c = centered_near(d, range);
                assert!(c >= -(range / 2) && c < range - range / 2);
                assert_eq!((d - c).rem_euclid(range), 0);
            }
            for a in 0..range {
                for b in 0..range {
                    assert_eq!(
                        lattice_dist(a, b, range),
                        centered_near(a - b, range).unsigned_abs()
                    );
                }
            }
            for x in -4 * range..4 * range {
                assert_eq!(wrap(x, range), x.rem_euclid(range));
            }
        }
    }

    /// Every finite coordinate is in bound where f32 resolves the bound (half its
    /// spacing at |x| + xi is at most xi/2) and |x / step| <= 2^40.
    #[test]
    fn bound_near_f32_resolution() {
        let mut pos = uniform(2000, 5);
        for (i, x) in pos.iter_mut().enumerate() {
            *x = match i % 5 {
                0 => *x * 1e6,
                1 => *x * 1e-30,
                2 => -*x,
                _ => *x,
            };
        }
        for xi in [
            1e-1, 1e-3, 4e-3, 3e-2, 1e-5, 1e-8, 1e-12, 1e-20, 1e-30, 1e-40, 1e3, 1e30, 1e300,
        ] {
            let (_, back) = base_encode(Base::Builtin, &pos, xi, Coder::Rans).unwrap();
            let bad = pos
                .iter()
                .zip(&back)
                .filter(|(&x, &r)| {
                    let x64 = f64::from(x);
                    let xi = xi.min(1e39);
                    resolved::<f32>(x64, xi) && x64.abs() / xi < MAX_Q && !within(r, x, xi)
                })
                .count();
            assert_eq!(bad, 0, "xi {xi}");
            round_trip(Base::Builtin, &pos, xi, Coder::Rans);
        }
    }

    #[test]
    fn huge_and_extreme_values() {
        let mut pos = clustered(500, 3);
        pos[0] = 3.0e38;
        pos[4] = -3.0e38;
        pos[8] = 1e30;
        pos[100] = f32::MIN_POSITIVE / 4.0;
        for xi in [1e-3, 1.0, 1e35] {
            let bad = round_trip(Base::Builtin, &pos, xi, Coder::Huffman);
            assert!(bad <= 3, "xi {xi}: {bad}");
        }
        let (_, back) = base_encode(Base::Builtin, &pos, 1e-3, Coder::Rans).unwrap();
        for (i, (&x, &r)) in pos.iter().zip(&back).enumerate() {
            if x.abs() < 1e6 {
                assert!(within(r, x, 1e-3), "coordinate {i}: {x} -> {r}");
            }
        }
    }

    #[test]
    fn strides_of_a_lattice_order() {
        let pos = lattice(20, 1);
        let q: Vec<i64> = pos
            .iter()
            .map(|&x| (f64::from(x) / 0.02).round() as i64)
            .collect();
        let range = q.iter().max().unwrap() + 1;
        let ok = vec![true; pos.len() / 3];
        assert_eq!(detect_strides(&q, &ok, range), (20, 400));
        let pos = uniform(8000, 2);
        let q: Vec<i64> = pos
            .iter()
            .map(|&x| (f64::from(x) / 0.02).round() as i64)
            .collect();
        let range = q.iter().max().unwrap() + 1;
        assert_eq!(detect_strides(&q, &ok, range).0, 0);
    }

    /// Lattice order compresses far better than the same particles shuffled, and
    /// chunking (several chunks) still round-trips.
    #[test]
    fn lattice_order_pays_off_and_chunks_round_trip() {
        let pos = lattice(24, 4);
        let shuffled = shuffled(&pos, 9);
        let size = |p: &[f32]| -> usize {
            let (s, _) = base_encode(Base::Builtin, p, 1e-3, Coder::Rans).unwrap();
            s.iter().map(|x| x.1.len()).sum()
        };
        let (a, b) = (size(&pos), size(&shuffled));
        assert!(2 * a < b, "lattice order {a} bytes, shuffled {b}");
        let big = lattice(70, 5); // 343000 particles: two chunks
        assert!(big.len() / 3 > MIN_CHUNK);
        assert_eq!(round_trip(Base::Builtin, &big, 1e-3, Coder::Rans), 0);
    }

    /// Lattice values of `pos` on the lattice of step `2 xi` (what `encode` sees,
    /// near enough for order detection).
    fn lattice_values(pos: &[f32], xi: f64) -> (Vec<i64>, Vec<bool>, i64) {
        let q: Vec<i64> = pos
            .iter()
            .map(|&x| (f64::from(x) / (2.0 * xi)).round() as i64)
            .collect();
        let range = q.iter().max().unwrap() + 1;
        (q, vec![true; pos.len() / 3], range)
    }

    fn format_of(pos: &[f32], xi: f64, coder: Coder) -> (u8, usize) {
        let (secs, _) = base_encode(Base::Builtin, pos, xi, coder).unwrap();
        (secs[0].1[0], secs[0].1.len())
    }

    /// Sets in no useful order are coded by density cells, ordered ones along
    /// their order; cells beat fixed-width lattice values on clustered sets
    /// and round-trip, also with unrepresentable coordinates.
    #[test]
    fn unordered_sets_use_density_cells() {
        let blobs = clustered(20_000, 4);
        let mixed = shuffled(&blobs, 5);
        for (pos, cells) in [
            (&blobs, false),
            (&lattice(20, 2), false),
            (&mixed, true),
            (&uniform(5000, 3), true),
            (&shuffled(&lattice(20, 2), 6), true),
        ] {
            let (q, ok, range) = lattice_values(pos, 1e-3);
            assert_eq!(unordered(&q, &ok, range), cells);
            let (format, _) = format_of(pos, 1e-3, Coder::Rans);
            assert_eq!(format == FORMAT_CELLS, cells);
        }
        for xi in [1e-1, 1e-3, 1e-5] {
            let (format, bytes) = format_of(&mixed, xi, Coder::Huffman);
            assert_eq!(format, FORMAT_CELLS);
            let (_, _, range) = lattice_values(&mixed, xi);
            // At least 2 bits per particle below fixed-width lattice values.
            let fixed = 3.0 * (range as f64).log2() * 20_000.0;
            let bits = 8.0 * bytes as f64;
            assert!(
                bits < fixed - 40_000.0,
                "xi {xi}: {bits} bits, fixed {fixed}"
            );
            assert_eq!(round_trip(Base::Builtin, &mixed, xi, Coder::Rans), 0);
        }
        let mut odd = mixed.clone();
        odd[7] = f32::NAN;
        odd[30] = 1e30;
        odd[31] = f32::NEG_INFINITY;
        assert_eq!(format_of(&odd, 1e-3, Coder::Rans).0, FORMAT_CELLS);
        // Only the finite 1e30 (beyond the lattice) counts as out of bound.
        assert_eq!(round_trip(Base::Builtin, &odd, 1e-3, Coder::Rans), 1);
    }

    #[test]
    fn corrupt_cell_sections_are_errors() {
        let pos = shuffled(&clustered(300, 8), 2);
        assert_eq!(format_of(&pos, 0.01, Coder::Rans).0, FORMAT_CELLS);
        mutations_of(Base::Builtin, &pos, <[u8]>::len);
    }

    #[test]
    fn deterministic_across_thread_counts() {
        // Several chunks along the order; several offset pieces in cells.
        let cells = shuffled(&clustered(150_000, 7), 1);
        for pos in [lattice(70, 6), cells] {
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| base_encode(Base::Builtin, &pos, 1e-4, Coder::Huffman).unwrap())
            };
            let one = run(1);
            let three = run(3);
            assert_eq!(one.0, three.0);
            assert!(one
                .1
                .iter()
                .zip(&three.1)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}
