//! A mixed-radix complex FFT (any length; radix 2 butterflies, other prime factors
//! by their small DFTs) along any axis of an n-dimensional array. Written here
//! rather than taken from a crate so that its twiddles come from [`detmath`] and
//! its operation order is fixed: the generated data is the same bits on every
//! platform and for every thread count.

use super::detmath;
use rayon::prelude::*;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct C {
    pub re: f64,
    pub im: f64,
}

impl C {
    pub const ZERO: C = C { re: 0.0, im: 0.0 };
    pub fn new(re: f64, im: f64) -> C {
        C { re, im }
    }
    pub fn conj(self) -> C {
        C::new(self.re, -self.im)
    }
    pub fn scale(self, s: f64) -> C {
        C::new(self.re * s, self.im * s)
    }
    /// self * i
    pub fn times_i(self) -> C {
        C::new(-self.im, self.re)
    }
}

impl std::ops::Add for C {
    type Output = C;
    fn add(self, o: C) -> C {
        C::new(self.re + o.re, self.im + o.im)
    }
}

impl std::ops::Sub for C {
    type Output = C;
    fn sub(self, o: C) -> C {
        C::new(self.re - o.re, self.im - o.im)
    }
}

impl std::ops::Mul for C {
    type Output = C;
    fn mul(self, o: C) -> C {
        C::new(
            self.re * o.re - self.im * o.im,
            self.re * o.im + self.im * o.re,
        )
    }
}

/// The factors and twiddles of one length.
struct Plan {
    n: usize,
    factors: Vec<usize>,
    /// exp(-2 pi i j / n), j < n
    tw: Vec<C>,
    /// For a power of two, each level's twiddles in order: the level joining
    /// blocks of `half` uses `tw[k * n / (2 half)]`, k < half, held from
    /// `half - 2` on (half >= 2).
    levels: Vec<C>,
}

impl Plan {
    fn new(n: usize) -> Plan {
        let mut factors = Vec::new();
        let mut m = n;
        let mut p = 2;
        while m > 1 {
            while m % p == 0 {
                factors.push(p);
                m /= p;
            }
            p += 1;
            if p * p > m && m > 1 {
                factors.push(m);
                break;
            }
        }
        let tw: Vec<C> = (0..n)
            .map(|j| {
                let (s, c) = detmath::sin_cos(-std::f64::consts::TAU * j as f64 / n as f64);
                C::new(c, s)
            })
            .collect();
        let mut levels = Vec::new();
        if n.is_power_of_two() {
            let mut half = 2;
            while half < n {
                levels.extend((0..half).map(|k| tw[k * (n / (2 * half))]));
                half *= 2;
            }
        }
        Plan {
            n,
            factors,
            tw,
            levels,
        }
    }

    /// Forward transform of `inp[0], inp[stride], ...` (n values) into `out`.
    fn forward(&self, inp: &[C], stride: usize, out: &mut [C]) {
        if self.n.is_power_of_two() {
            self.radix2(inp, stride, out);
        } else {
            self.rec(inp, stride, out, self.n, 0, 1);
        }
    }

    /// [`Plan::rec`] for a power of two, level by level instead of call by
    /// call: the same butterflies on the same values with the same twiddles,
    /// so the same bits. The recursion leaves sample s at the bit reversal of
    /// s; each level then joins blocks of `half` into blocks of `2 half`.
    fn radix2(&self, inp: &[C], stride: usize, out: &mut [C]) {
        let out = &mut out[..self.n];
        self.first_level(inp, stride, out);
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::has_avx2() {
            // SAFETY: the CPU has AVX2 (checked just above). Without FMA the
            // arithmetic is the plain build's, bit for bit.
            return unsafe { levels_avx2(out, &self.levels) };
        }
        levels(out, &self.levels);
    }

    /// The leaves of [`Plan::radix2`] and its first level (blocks of 2,
    /// twiddle `tw[0]`), in one pass.
    fn first_level(&self, inp: &[C], stride: usize, out: &mut [C]) {
        let n = self.n;
        if n == 1 {
            out[0] = inp[0];
            return;
        }
        let bits = n.trailing_zeros();
        let leaf = |r: usize| inp[(r.reverse_bits() >> (usize::BITS - bits)) * stride];
        for (r, pair) in out.chunks_exact_mut(2).enumerate() {
            let (x, t) = (leaf(2 * r), leaf(2 * r + 1) * self.tw[0]);
            pair[0] = x + t;
            pair[1] = x - t;
        }
    }

    /// Decimation in time: `out` (length n) = DFT of the n values of `inp` at
    /// `istride`; `tws` is the twiddle stride (N / n).
    fn rec(&self, inp: &[C], istride: usize, out: &mut [C], n: usize, fi: usize, tws: usize) {
        if n == 1 {
            out[0] = inp[0];
            return;
        }
        let p = self.factors[fi];
        let m = n / p;
        for r in 0..p {
            self.rec(
                &inp[r * istride..],
                istride * p,
                &mut out[r * m..(r + 1) * m],
                m,
                fi + 1,
                tws * p,
            );
        }
        if p == 2 {
            for k in 0..m {
                let b = out[k + m] * self.tw[k * tws];
                let a = out[k];
                out[k] = a + b;
                out[k + m] = a - b;
            }
            return;
        }
        let mut t = vec![C::ZERO; p];
        for k in 0..m {
            for (r, tr) in t.iter_mut().enumerate() {
                *tr = out[r * m + k] * self.tw[r * k * tws];
            }
            for q in 0..p {
                let mut s = C::ZERO;
                for (r, &tr) in t.iter().enumerate() {
                    s = s + tr * self.tw[(r * q * m * tws) % self.n];
                }
                out[q * m + k] = s;
            }
        }
    }
}

/// The levels of [`Plan::radix2`] from blocks of 2 on: each joins pairs of
/// blocks of `half` with the twiddles `tw[half - 2..2 half - 2]`.
#[inline(always)]
fn levels_body(out: &mut [C], tw: &[C]) {
    let n = out.len();
    let mut half = 2;
    while half < n {
        let w = &tw[half - 2..2 * half - 2];
        for block in out.chunks_exact_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            for ((a, b), &w) in lo.iter_mut().zip(hi.iter_mut()).zip(w) {
                let t = *b * w;
                let x = *a;
                *a = x + t;
                *b = x - t;
            }
        }
        half *= 2;
    }
}

#[inline(never)]
fn levels(out: &mut [C], tw: &[C]) {
    levels_body(out, tw)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn levels_avx2(out: &mut [C], tw: &[C]) {
    levels_body(out, tw)
}

/// Columns gathered per parallel task.
const COLS: usize = 16;

/// In-place FFT of `data` (row-major, `shape`) along `axis`: forward
/// (exp(-2 pi i k x / n)) or inverse, which divides by n as numpy's does.
pub fn fft_axis(data: &mut [C], shape: &[usize], axis: usize, inverse: bool) {
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    assert_eq!(data.len(), shape.iter().product::<usize>());
    if len <= 1 || data.is_empty() {
        return;
    }
    let plan = Plan::new(len);
    let norm = if inverse { 1.0 / len as f64 } else { 1.0 };
    // inverse(x) = conj(forward(conj(x))) / n
    let prep = |c: C| if inverse { c.conj() } else { c };
    let post = |c: C| if inverse { c.conj().scale(norm) } else { c };
    if inner == 1 {
        data.par_chunks_mut(len).for_each(|row| {
            let inp: Vec<C> = row.iter().map(|&c| prep(c)).collect();
            plan.forward(&inp, 1, row);
            for c in row.iter_mut() {
                *c = post(*c);
            }
        });
        return;
    }
    for block in data.chunks_mut(len * inner) {
        let done: Vec<(usize, Vec<C>)> = (0..inner.div_ceil(COLS))
            .into_par_iter()
            .map(|chunk| {
                let j0 = chunk * COLS;
                let w = COLS.min(inner - j0);
                let mut cols = vec![C::ZERO; w * len];
                for t in 0..len {
                    for c in 0..w {
                        cols[c * len + t] = prep(block[t * inner + j0 + c]);
                    }
                }
                let mut out = vec![C::ZERO; w * len];
                for c in 0..w {
                    plan.forward(
                        &cols[c * len..(c + 1) * len],
                        1,
                        &mut out[c * len..(c + 1) * len],
                    );
                }
                (j0, out)
            })
            .collect();
        for (j0, out) in done {
            let w = out.len() / len;
            for t in 0..len {
                for c in 0..w {
                    block[t * inner + j0 + c] = post(out[c * len + t]);
                }
            }
        }
    }
}

/// FFT over every axis of `data` (`shape` row-major).
pub fn fftn(data: &mut [C], shape: &[usize], inverse: bool) {
    for axis in (0..shape.len()).rev() {
        fft_axis(data, shape, axis, inverse);
    }
}

/// Index of -k for each axis: (n - k) mod n.
pub fn mirror(k: usize, n: usize) -> usize {
    (n - k) % n
}

/// numpy's fftfreq(n, 1/n): 0, 1, ..., -n/2, ..., -1 (as f64).
pub fn freq(k: usize, n: usize) -> f64 {
    if 2 * k < n {
        k as f64
    } else {
        k as f64 - n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dft(x: &[C]) -> Vec<C> {
        let n = x.len();
        (0..n)
            .map(|k| {
                x.iter().enumerate().fold(C::ZERO, |s, (j, &v)| {
                    let a = -std::f64::consts::TAU * ((j * k) % n) as f64 / n as f64;
                    s + v * C::new(a.cos(), a.sin())
                })
            })
            .collect()
    }

    #[test]
    fn matches_the_direct_dft_at_every_kind_of_length() {
        let mut r = super::super::rng::Rng::new(1, 0);
        for n in [1, 2, 3, 4, 5, 6, 7, 8, 12, 15, 16, 30, 49, 64, 96, 97, 100] {
            let x: Vec<C> = (0..n).map(|_| C::new(r.normal(), r.normal())).collect();
            let want = dft(&x);
            let mut got = x.clone();
            fft_axis(&mut got, &[n], 0, false);
            for (a, b) in got.iter().zip(&want) {
                assert!(
                    (a.re - b.re).abs() + (a.im - b.im).abs() < 1e-11 * n as f64,
                    "n {n}"
                );
            }
            fft_axis(&mut got, &[n], 0, true);
            for (a, b) in got.iter().zip(&x) {
                assert!(
                    (a.re - b.re).abs() + (a.im - b.im).abs() < 1e-12 * n as f64,
                    "n {n}"
                );
            }
        }
    }

    #[test]
    fn powers_of_two_give_the_recursions_bits() {
        // Level by level (AVX2 where the CPU has it, and plain) against the
        // recursion, strided input too: every bit.
        let mut r = super::super::rng::Rng::new(3, 0);
        let bits = |v: &[C]| {
            v.iter()
                .map(|c| (c.re.to_bits(), c.im.to_bits()))
                .collect::<Vec<_>>()
        };
        for n in [1, 2, 4, 8, 16, 64, 512] {
            let plan = Plan::new(n);
            for stride in [1, 3] {
                let x: Vec<C> = (0..n * stride)
                    .map(|_| C::new(r.normal(), r.normal()))
                    .collect();
                let mut want = vec![C::ZERO; n];
                plan.rec(&x, stride, &mut want, n, 0, 1);
                let mut got = vec![C::ZERO; n];
                plan.radix2(&x, stride, &mut got);
                assert_eq!(bits(&got), bits(&want), "n {n} stride {stride}");
                let mut plain = vec![C::ZERO; n];
                plan.first_level(&x, stride, &mut plain);
                levels(&mut plain, &plan.levels);
                assert_eq!(bits(&plain), bits(&want), "n {n} stride {stride}");
            }
        }
    }

    #[test]
    fn every_axis_of_a_3d_array() {
        let shape = [6, 5, 20];
        let mut r = super::super::rng::Rng::new(2, 0);
        let x: Vec<C> = (0..600).map(|_| C::new(r.normal(), r.normal())).collect();
        let mut got = x.clone();
        fftn(&mut got, &shape, false);
        // against the direct 3-D sum at a few frequencies
        for &(a, b, c) in &[(0, 0, 0), (1, 2, 3), (5, 4, 19), (3, 0, 7)] {
            let mut s = C::ZERO;
            for i in 0..6 {
                for j in 0..5 {
                    for k in 0..20 {
                        let ph = -std::f64::consts::TAU
                            * ((a * i) as f64 / 6.0 + (b * j) as f64 / 5.0 + (c * k) as f64 / 20.0);
                        s = s + x[(i * 5 + j) * 20 + k] * C::new(ph.cos(), ph.sin());
                    }
                }
            }
            let g = got[(a * 5 + b) * 20 + c];
            assert!(
                (g.re - s.re).abs() + (g.im - s.im).abs() < 1e-9,
                "{a} {b} {c}"
            );
        }
    }
}
