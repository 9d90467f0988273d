//! A deterministic synthetic 2D vector field for `bench` without inputs: each
//! component a sum of random Fourier modes on the periodic square (integer
//! wavenumbers up to `KMAX`, amplitude ~ |k|^-1/2), so it has a turbulence-like mix
//! of saddles, nodes and foci. Same seed and
//! shape, same field (bit for bit on one platform: it uses the system `sin`/`cos`).

use rayon::prelude::*;
use std::f64::consts::TAU;

const MODES: usize = 48;
const KMAX: i64 = 40;

/// splitmix64: small, fast, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
}

struct Mode {
    kx: f64,
    ky: f64,
    amp: f64,
    phase: f64,
}

fn modes(rng: &mut Rng) -> Vec<Mode> {
    let mut out = Vec::with_capacity(MODES);
    while out.len() < MODES {
        let (kx, ky) = (rng.int(-KMAX, KMAX), rng.int(-KMAX, KMAX));
        let k2 = kx * kx + ky * ky;
        if k2 == 0 || k2 > KMAX * KMAX {
            continue;
        }
        let amp = (0.5 + rng.unit()) / (k2 as f64).powf(0.25);
        out.push(Mode {
            kx: kx as f64,
            ky: ky as f64,
            amp,
            phase: TAU * rng.unit(),
        });
    }
    out
}

/// One component: sum of `modes` sampled on the ny x nx grid over [0, 2pi)^2.
fn component(modes: &[Mode], ny: usize, nx: usize) -> Vec<f32> {
    // cos(a x + b y + p) = cos(a x) cos(b y + p) - sin(a x) sin(b y + p)
    let cols: Vec<(Vec<f64>, Vec<f64>)> = modes
        .iter()
        .map(|m| {
            (0..nx)
                .map(|i| {
                    let t = m.kx * TAU * i as f64 / nx as f64;
                    (t.cos(), t.sin())
                })
                .unzip()
        })
        .collect();
    let mut out = vec![0.0f32; ny * nx];
    out.par_chunks_mut(nx).enumerate().for_each(|(j, row)| {
        let mut acc = vec![0.0f64; nx];
        for (m, (cx, sx)) in modes.iter().zip(&cols) {
            let t = m.ky * TAU * j as f64 / ny as f64 + m.phase;
            let (cy, sy) = (m.amp * t.cos(), m.amp * t.sin());
            for ((a, &c), &s) in acc.iter_mut().zip(cx).zip(sx) {
                *a += c * cy - s * sy;
            }
        }
        for (o, a) in row.iter_mut().zip(&acc) {
            *o = *a as f32;
        }
    });
    out
}

/// The synthetic field (u, v) of shape ny x nx for `seed`.
pub fn field(ny: usize, nx: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rng = Rng::new(seed);
    let mu = modes(&mut rng);
    let mv = modes(&mut rng);
    (component(&mu, ny, nx), component(&mv, ny, nx))
}
