//! Cosmology-like clustered particles in a periodic box: a lattice of nside^3
//! particles displaced by a Gaussian random field, with halos on its density
//! peaks. What friends-of-friends finds in N-body snapshots: dense halos (NFW
//! profiles at mean density contrast 200) in a smooth, mildly clustered
//! background, so links and near-links at every distance around b.
//!
//! 1. delta: white noise times sqrt(P(k)), P ~ k^ns, scaled so that its rms
//!    top-hat smoothed on the 20-particle Lagrangian scale is `sigma20`.
//! 2. Halos ("peak patches"): for top-hat radii R from large to small, lattice
//!    sites where delta smoothed at R is a local maximum above delta_c = 1.686
//!    claim the unclaimed particles within R (kept if they claim at least half
//!    of the sphere). Each halo is placed at its displaced centre with an NFW
//!    profile truncated at r_200, concentration ~ 10 (members / 100)^-0.1.
//! 3. Every other particle moves by the Zel'dovich displacement of delta
//!    smoothed at the non-linear scale (where its rms is 1).
//!
//! Order: lattice (particle id) order as many snapshots keep it, or shuffled.

use super::detmath;
use super::fft::{fftn, freq, C};
use super::rng::Rng;

const DELTA_C: f64 = 1.686;
/// Halo overdensity relative to the mean.
const CONTRAST: f64 = 200.0;
/// A halo is kept when it claims at least this fraction of its sphere.
const MIN_FILL: f64 = 0.5;
/// Top-hat radii tried for halos.
const RADII: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Lattice (id) order: x slowest, z fastest.
    Lattice,
    /// A seeded permutation.
    Shuffle,
}

/// What to generate; [`Particles::new`] gives the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Particles {
    /// Particles per side: nside^3 in all.
    pub nside: usize,
    pub seed: u64,
    /// Side of the periodic box.
    pub box_side: f64,
    /// Power-law index of P(k).
    pub ns: f64,
    /// rms of delta top-hat smoothed on the 20-particle scale: the clustering strength.
    pub sigma20: f64,
    pub order: Order,
}

/// Generated positions and what the generator knows of them.
#[derive(Debug, Clone)]
pub struct ParticleSet {
    /// `[N][3]` (x, y, z), every coordinate in [0, box_side).
    pub pos: Vec<f32>,
    pub halos: usize,
    pub frac_in_halos: f64,
    pub largest_halo: usize,
    /// The non-linear scale in lattice cells.
    pub r_nl_cells: f64,
}

impl Particles {
    pub fn new(nside: usize, seed: u64, box_side: f64) -> Particles {
        Particles {
            nside,
            seed,
            box_side,
            ns: -2.0,
            sigma20: 2.5,
            order: Order::Lattice,
        }
    }

    /// Mean separation of the particles.
    pub fn mean_separation(&self) -> f64 {
        self.box_side / self.nside as f64
    }

    /// FoF's usual linking length, 0.2 times the mean separation.
    pub fn fof_b(&self) -> f64 {
        0.2 * self.mean_separation()
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(2..=1024).contains(&self.nside) {
            return Err(format!("nside {} must be in 2..=1024", self.nside));
        }
        if !(self.box_side.is_finite() && self.box_side > 0.0 && self.box_side < 1e30) {
            return Err(format!("box {} must be positive and finite", self.box_side));
        }
        if !(self.ns > -4.0 && self.ns < 4.0) {
            return Err(format!("ns {} must be in (-4, 4)", self.ns));
        }
        if !(self.sigma20 > 0.0 && self.sigma20 <= 100.0) {
            return Err(format!("sigma20 {} must be in (0, 100]", self.sigma20));
        }
        Ok(())
    }

    /// Generates the set; `progress` hears each stage as it starts.
    pub fn generate(&self, progress: &mut dyn FnMut(&str)) -> Result<ParticleSet, String> {
        self.validate()?;
        let n = self.nside;
        let l = self.box_side;
        let cell = l / n as f64;
        let kf = std::f64::consts::TAU / l;
        let grid = Grid { n, kf, cell };
        let shape = [n, n, n];

        progress("Gaussian random field");
        let mut rng = Rng::new(self.seed, 0x7061_7274); // "part"
        let mut dk: Vec<C> = (0..n * n * n).map(|_| C::new(rng.normal(), 0.0)).collect();
        fftn(&mut dk, &shape, false);
        for (at, c) in dk.iter_mut().enumerate() {
            let k2 = grid.k2(at);
            *c = if k2 > 0.0 {
                c.scale(detmath::powf(k2, self.ns / 4.0)) // sqrt(P) = k^(ns/2)
            } else {
                C::ZERO
            };
        }
        let r20 = detmath::powf(20.0 * 3.0 / (4.0 * std::f64::consts::PI), 1.0 / 3.0);
        let s20 = std_dev(&grid.smoothed(&dk, r20 * cell));
        let norm = self.sigma20 / s20.max(f64::MIN_POSITIVE);
        for c in dk.iter_mut() {
            *c = c.scale(norm);
        }

        progress("halos on density peaks");
        let lo = r20.max(1.0);
        let hi = r20.max(16f64.min(n as f64 / 8.0));
        let radii: Vec<f64> = (0..RADII)
            .rev()
            .map(|t| lo * detmath::powf(hi / lo, t as f64 / (RADII - 1) as f64))
            .collect();
        let halos = find_halos(&grid, &dk, &radii);

        progress("Zel'dovich displacement");
        let r_nl = nonlinear_scale(&halos.sigma);
        let mut pos = vec![0f64; 3 * n * n * n];
        for d in 0..3 {
            let mut psi: Vec<C> = (0..dk.len())
                .map(|at| {
                    let k2 = grid.k2(at);
                    if k2 == 0.0 {
                        return C::ZERO;
                    }
                    let damp = detmath::exp(-0.5 * k2 * (r_nl * cell) * (r_nl * cell));
                    dk[at].scale(grid.k(at, d) * damp / k2).times_i()
                })
                .collect();
            fftn(&mut psi, &shape, true);
            for (at, p) in psi.iter().enumerate() {
                pos[3 * at + d] = grid.lattice(at, d) + p.re;
            }
        }
        drop(dk);

        progress("NFW halo profiles");
        let stats = place_halos(&mut pos, &halos, &grid, l, self.seed);

        let mut out: Vec<f32> = pos
            .iter()
            .map(|&x| {
                let w = x - l * (x / l).floor();
                let f = w as f32;
                if f >= l as f32 || f < 0.0 {
                    0.0 // f32 rounding can reach L exactly
                } else {
                    f
                }
            })
            .collect();
        if self.order == Order::Shuffle {
            let mut rng = Rng::new(self.seed, 0x7368_7566); // "shuf"
            let count = out.len() / 3;
            for i in (1..count).rev() {
                let j = rng.below(i + 1);
                for d in 0..3 {
                    out.swap(3 * i + d, 3 * j + d);
                }
            }
        }
        Ok(ParticleSet {
            pos: out,
            halos: halos.peaks.len(),
            frac_in_halos: stats.0,
            largest_halo: stats.1,
            r_nl_cells: r_nl,
        })
    }
}

/// An n^3 lattice of spacing `cell` and its wavenumbers (fundamental kf).
struct Grid {
    n: usize,
    kf: f64,
    cell: f64,
}

impl Grid {
    /// Lattice index along axis d of flat index `at` (axis 0 slowest).
    fn index(&self, at: usize, d: usize) -> usize {
        let n = self.n;
        match d {
            0 => at / (n * n),
            1 => (at / n) % n,
            _ => at % n,
        }
    }
    /// Coordinate d of lattice site `at` (cell centres).
    fn lattice(&self, at: usize, d: usize) -> f64 {
        (self.index(at, d) as f64 + 0.5) * self.cell
    }
    fn k(&self, at: usize, d: usize) -> f64 {
        freq(self.index(at, d), self.n) * self.kf
    }
    fn k2(&self, at: usize) -> f64 {
        (0..3).map(|d| self.k(at, d) * self.k(at, d)).sum()
    }
    /// delta top-hat smoothed at physical radius r, in real space.
    fn smoothed(&self, dk: &[C], r: f64) -> Vec<f64> {
        let mut s: Vec<C> = dk
            .iter()
            .enumerate()
            .map(|(at, &c)| c.scale(tophat(self.k2(at).sqrt() * r)))
            .collect();
        fftn(&mut s, &[self.n; 3], true);
        s.iter().map(|c| c.re).collect()
    }
}

/// Fourier transform of the unit top-hat, 3 (sin x - x cos x) / x^3.
fn tophat(x: f64) -> f64 {
    let x = x.max(1e-6);
    let (s, c) = detmath::sin_cos(x);
    3.0 * (s - x * c) / (x * x * x)
}

fn std_dev(a: &[f64]) -> f64 {
    let mean = a.iter().sum::<f64>() / a.len() as f64;
    (a.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / a.len() as f64).sqrt()
}

struct Halos {
    /// Halo id of each lattice site, or -1.
    owner: Vec<i64>,
    /// Peak site of each halo.
    peaks: Vec<usize>,
    /// (R, rms of delta smoothed at R) for each radius tried.
    sigma: Vec<(f64, f64)>,
}

fn find_halos(grid: &Grid, dk: &[C], radii: &[f64]) -> Halos {
    let n = grid.n;
    let total = n * n * n;
    let mut owner = vec![-1i64; total];
    let mut peaks = Vec::new();
    let mut sigma = Vec::new();
    let mut claim = vec![-1i64; total];
    for &r in radii {
        let d = grid.smoothed(dk, r * grid.cell);
        sigma.push((r, std_dev(&d)));
        let m = neighbourhood_max(&d, n);
        let mut cand: Vec<usize> = (0..total)
            .filter(|&at| d[at] > DELTA_C && d[at] >= m[at] && owner[at] < 0)
            .collect();
        if cand.is_empty() {
            continue;
        }
        // highest first; sort_by is stable, so ties stay in index order
        cand.sort_by(|&a, &b| d[b].total_cmp(&d[a]));
        let off = sphere_offsets(r);
        let mut count = vec![0usize; cand.len()];
        let mut touched = Vec::new();
        for (rank, &c) in cand.iter().enumerate() {
            let [ci, cj, ck] = [0, 1, 2].map(|d| grid.index(c, d));
            for &(dx, dy, dz) in &off {
                let w = |a: usize, o: i64| (a as i64 + o).rem_euclid(n as i64) as usize;
                let site = (w(ci, dx) * n + w(cj, dy)) * n + w(ck, dz);
                if owner[site] < 0 && claim[site] < 0 {
                    claim[site] = rank as i64;
                    count[rank] += 1;
                    touched.push(site);
                }
            }
        }
        let mut id = vec![-1i64; cand.len()];
        for (rank, &c) in cand.iter().enumerate() {
            let own_site = claim[c] == rank as i64;
            if own_site && count[rank] as f64 >= MIN_FILL * off.len() as f64 {
                id[rank] = peaks.len() as i64;
                peaks.push(c);
            }
        }
        for site in touched {
            let rank = claim[site] as usize;
            if id[rank] >= 0 {
                owner[site] = id[rank];
            }
            claim[site] = -1;
        }
    }
    Halos {
        owner,
        peaks,
        sigma,
    }
}

/// The maximum over each site's 3 x 3 x 3 periodic neighbourhood.
fn neighbourhood_max(a: &[f64], n: usize) -> Vec<f64> {
    let mut m = a.to_vec();
    for stride in [n * n, n, 1] {
        let prev = m.clone();
        for (at, v) in m.iter_mut().enumerate() {
            let k = (at / stride) % n;
            let base = at - k * stride;
            let up = base + ((k + 1) % n) * stride;
            let down = base + ((k + n - 1) % n) * stride;
            *v = v.max(prev[up]).max(prev[down]);
        }
    }
    m
}

/// Lattice offsets within radius r (cells), x slowest.
fn sphere_offsets(r: f64) -> Vec<(i64, i64, i64)> {
    let k = r.ceil() as i64;
    let mut out = Vec::new();
    for dx in -k..=k {
        for dy in -k..=k {
            for dz in -k..=k {
                if ((dx * dx + dy * dy + dz * dz) as f64) <= r * r {
                    out.push((dx, dy, dz));
                }
            }
        }
    }
    out
}

/// The radius (cells) where the smoothed rms crosses 1, interpolated in
/// -ln(sigma); the nearest end when it never does.
fn nonlinear_scale(sigma: &[(f64, f64)]) -> f64 {
    let mut s: Vec<(f64, f64)> = sigma.to_vec();
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    s.dedup_by(|a, b| a.0 == b.0);
    let min = s.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let max = s.iter().map(|p| p.1).fold(0.0, f64::max);
    if min >= 1.0 {
        return s[s.len() - 1].0;
    }
    if max <= 1.0 {
        return s[0].0;
    }
    for w in s.windows(2) {
        let (x0, x1) = (-detmath::ln(w[0].1), -detmath::ln(w[1].1));
        if x0 <= 0.0 && 0.0 <= x1 && x1 > x0 {
            return w[0].0 + (w[1].0 - w[0].0) * (0.0 - x0) / (x1 - x0);
        }
    }
    s[0].0
}

/// Moves every halo member onto its halo's NFW profile; returns the fraction of
/// particles in halos and the largest halo's size.
fn place_halos(pos: &mut [f64], halos: &Halos, grid: &Grid, l: f64, seed: u64) -> (f64, usize) {
    let nh = halos.peaks.len();
    if nh == 0 {
        return (0.0, 0);
    }
    let members: Vec<usize> = (0..halos.owner.len())
        .filter(|&s| halos.owner[s] >= 0)
        .collect();
    let mut count = vec![0usize; nh];
    let mut shift = vec![[0f64; 3]; nh];
    for &s in &members {
        let h = halos.owner[s] as usize;
        count[h] += 1;
        for d in 0..3 {
            let mut rel = pos[3 * s + d] - grid.lattice(halos.peaks[h], d);
            rel -= l * (rel / l).round();
            shift[h][d] += rel;
        }
    }
    let centre: Vec<[f64; 3]> = (0..nh)
        .map(|h| {
            std::array::from_fn(|d| grid.lattice(halos.peaks[h], d) + shift[h][d] / count[h] as f64)
        })
        .collect();
    let mut rng = Rng::new(seed, 0x6861_6c6f); // "halo"
    let table = NfwTable::new();
    for &s in &members {
        let h = halos.owner[s] as usize;
        let m = count[h] as f64;
        let r_vir =
            grid.cell * detmath::powf(3.0 * m / (4.0 * std::f64::consts::PI * CONTRAST), 1.0 / 3.0);
        let conc = (10.0 * detmath::powf(m / 100.0, -0.1)).clamp(3.0, 15.0);
        let r = table.radius(rng.unit(), conc) * r_vir;
        let dir: [f64; 3] = std::array::from_fn(|_| rng.normal());
        let norm = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2])
            .sqrt()
            .max(1e-300);
        for d in 0..3 {
            pos[3 * s + d] = centre[h][d] + dir[d] / norm * r;
        }
    }
    (
        members.len() as f64 / halos.owner.len() as f64,
        count.iter().copied().max().unwrap_or(0),
    )
}

/// The NFW enclosed-mass profile mu(x) = ln(1 + x) - x / (1 + x) on x in [0, 40],
/// inverted by interpolation.
struct NfwTable {
    mu: Vec<f64>,
}

const NFW_POINTS: usize = 20001;
const NFW_XMAX: f64 = 40.0;

impl NfwTable {
    fn new() -> NfwTable {
        NfwTable {
            mu: (0..NFW_POINTS).map(|i| nfw_mu(Self::x(i))).collect(),
        }
    }
    fn x(i: usize) -> f64 {
        NFW_XMAX * i as f64 / (NFW_POINTS - 1) as f64
    }
    /// r / r_vir holding a fraction u of the mass within r_vir, concentration c.
    fn radius(&self, u: f64, c: f64) -> f64 {
        let target = u * nfw_mu(c);
        let i = self
            .mu
            .partition_point(|&m| m < target)
            .clamp(1, NFW_POINTS - 1);
        let (m0, m1) = (self.mu[i - 1], self.mu[i]);
        let t = if m1 > m0 {
            (target - m0) / (m1 - m0)
        } else {
            0.0
        };
        (Self::x(i - 1) + t * (Self::x(i) - Self::x(i - 1))) / c
    }
}

fn nfw_mu(x: f64) -> f64 {
    detmath::ln(1.0 + x) - x / (1.0 + x)
}
