//! 2D decaying turbulence: a pseudo-spectral vorticity-streamfunction solver on
//! the periodic square [0, 2 pi)^2,
//!
//! ```text
//! d(omega)/dt + u . grad(omega) = -nu (-Laplacian)^p omega,   Laplacian(psi) = -omega,
//! u = d(psi)/dy,  v = -d(psi)/dx,
//! ```
//!
//! with 2/3-rule dealiasing, hyperviscosity (order p, damping `HYPER_RATE` at the
//! dealiasing cut-off) integrated exactly, classical RK4 for advection and a CFL
//! time step. The start is random-phase vorticity with energy spectrum
//! E(k) ~ k^4 exp(-2 (k / k0)^2), omega_rms = 1; evolving it for a few eddy
//! turnover times gives coherent vortices, strain between them and the density
//! of saddles, centres and foci of real 2D flow. (The same algorithm as the
//! project's first, numpy-based generator, so the fields have the same
//! statistics; not the same bits.)

use super::detmath;
use super::fft::{fftn, freq, mirror, C};
use super::rng::Rng;
use rayon::prelude::*;

/// Hyperviscous damping rate at the dealiasing cut-off.
const HYPER_RATE: f64 = 20.0;

/// What to generate; [`Turbulence::new`] gives the defaults for a size.
#[derive(Debug, Clone, PartialEq)]
pub struct Turbulence {
    /// Output grid n x n.
    pub n: usize,
    pub seed: u64,
    /// Grid of the main run (divides n); larger outputs are refined from it.
    pub nsim: usize,
    /// Peak wavenumber of the initial spectrum (default nsim / 32).
    pub k0: f64,
    /// Evolution time at nsim, in 1 / omega_rms.
    pub t_end: f64,
    /// Extra time at n when n > nsim, so the cascade fills the added wavenumbers.
    pub t_refine: f64,
    pub cfl: f64,
    /// Order p of the hyperviscosity.
    pub hyper_order: u32,
}

impl Turbulence {
    pub fn new(n: usize, seed: u64) -> Turbulence {
        let nsim = n.min(512);
        Turbulence {
            n,
            seed,
            nsim,
            k0: nsim as f64 / 32.0,
            t_end: 10.0,
            t_refine: 0.5,
            cfl: 1.0,
            hyper_order: 4,
        }
    }

    /// Checks the parameters: a clear message for each bad one.
    pub fn validate(&self) -> Result<(), String> {
        if self.n < 4 {
            return Err(format!("the grid must be at least 4 x 4 (got {})", self.n));
        }
        if self.nsim < 4 || self.nsim > self.n || self.n % self.nsim != 0 {
            return Err(format!(
                "nsim {} must divide n {} and be between 4 and n",
                self.nsim, self.n
            ));
        }
        if !(self.k0 > 0.0 && self.k0 <= self.nsim as f64 / 3.0) {
            return Err(format!(
                "k0 {} must be positive and at most nsim / 3 = {}",
                self.k0,
                self.nsim as f64 / 3.0
            ));
        }
        for (name, t) in [("t-end", self.t_end), ("t-refine", self.t_refine)] {
            if !(0.0..=1e4).contains(&t) {
                return Err(format!("{name} {t} must be in [0, 1e4]"));
            }
        }
        if !(self.cfl > 0.0 && self.cfl <= 2.0) {
            return Err(format!("cfl {} must be in (0, 2]", self.cfl));
        }
        if !(1..=16).contains(&self.hyper_order) {
            return Err(format!("hyper-order {} must be 1..16", self.hyper_order));
        }
        Ok(())
    }

    /// The velocity (u, v), each n x n row-major (row = y, x fastest).
    /// `progress` hears the simulated time reached and the total to run.
    pub fn generate(
        &self,
        progress: &mut dyn FnMut(f64, f64),
    ) -> Result<(Vec<f32>, Vec<f32>), String> {
        self.validate()?;
        let total = self.t_end
            + if self.n > self.nsim {
                self.t_refine
            } else {
                0.0
            };
        let mut wh = initial_vorticity(self.nsim, self.k0, self.seed);
        let coarse = Solver::new(self.nsim, self.hyper_order);
        wh = coarse.run(wh, self.t_end, self.cfl, &mut |t| progress(t, total));
        let solver = if self.n > self.nsim {
            let fine = Solver::new(self.n, self.hyper_order);
            let t0 = self.t_end;
            let padded = pad_spectrum(&wh, self.nsim, self.n);
            wh = fine.run(padded, self.t_refine, self.cfl, &mut |t| {
                progress(t0 + t, total)
            });
            fine
        } else {
            coarse
        };
        let (u, v) = solver.velocity(&wh);
        Ok((
            u.iter().map(|&x| x as f32).collect(),
            v.iter().map(|&x| x as f32).collect(),
        ))
    }
}

/// Spectral state and operators on one grid (full complex spectra, ky rows).
struct Solver {
    n: usize,
    kx: Vec<f64>,
    /// 1/|k|^2 per mode (0 at k = 0), the dealiasing mask and the damping rate.
    inv_k2: Vec<f64>,
    keep: Vec<bool>,
    damp: Vec<f64>,
    dx: f64,
}

impl Solver {
    fn new(n: usize, hyper_order: u32) -> Solver {
        let kx: Vec<f64> = (0..n).map(|k| freq(k, n)).collect();
        let kmax = n as f64 / 3.0;
        let mut inv_k2 = vec![0.0; n * n];
        let mut keep = vec![false; n * n];
        let mut damp = vec![0.0; n * n];
        for j in 0..n {
            for i in 0..n {
                let q = kx[i] * kx[i] + kx[j] * kx[j];
                let at = j * n + i;
                inv_k2[at] = if q > 0.0 { 1.0 / q } else { 0.0 };
                keep[at] = kx[i].abs() < kmax && kx[j].abs() < kmax;
                damp[at] = HYPER_RATE * detmath::powi(q / (kmax * kmax), hyper_order);
            }
        }
        Solver {
            n,
            kx,
            inv_k2,
            keep,
            damp,
            dx: std::f64::consts::TAU / n as f64,
        }
    }

    fn shape(&self) -> [usize; 2] {
        [self.n, self.n]
    }

    /// u + i v in physical space: the inverse transform of (kx + i ky) psi_hat,
    /// both real fields in one complex transform, into `p`.
    fn packed_velocity(&self, wh: &[C], p: &mut Vec<C>) {
        let n = self.n;
        p.resize(wh.len(), C::ZERO);
        p.par_iter_mut()
            .zip(wh)
            .enumerate()
            .for_each(|(at, (p, &w))| {
                let (kx, ky) = (self.kx[at % n], self.kx[at / n]);
                *p = (w.scale(self.inv_k2[at])) * C::new(kx, ky);
            });
        fftn(p, &self.shape(), true);
    }

    fn velocity(&self, wh: &[C]) -> (Vec<f64>, Vec<f64>) {
        let mut p = Vec::new();
        self.packed_velocity(wh, &mut p);
        (
            p.iter().map(|c| c.re).collect(),
            p.iter().map(|c| c.im).collect(),
        )
    }

    /// The dealiased advection term -(d(u w)/dx + d(v w)/dy) into `out`, and
    /// max |u|, |v|; `work`'s buffers reused.
    fn rhs(&self, wh: &[C], work: &mut Work, out: &mut Vec<C>) -> f64 {
        let n = self.n;
        let Work { uv, w } = work;
        self.packed_velocity(wh, uv);
        w.clear();
        w.extend_from_slice(wh);
        fftn(w, &self.shape(), true);
        let umax = uv
            .par_iter()
            .map(|c| c.re.abs().max(c.im.abs()))
            .reduce(|| 0.0, f64::max);
        // u w + i v w, one forward transform (in place of w); then split the
        // two real fields' spectra by Hermitian symmetry.
        w.par_iter_mut()
            .zip(uv.par_iter())
            .for_each(|(w, c)| *w = C::new(c.re * w.re, c.im * w.re));
        fftn(w, &self.shape(), false);
        let z = &*w;
        out.resize(n * n, C::ZERO);
        out.par_iter_mut().enumerate().for_each(|(at, o)| {
            *o = if !self.keep[at] {
                C::ZERO
            } else {
                let zm = conj_mirror(z, at, n);
                let a = (z[at] + zm).scale(0.5); // spectrum of u w
                let b = (z[at] - zm).scale(0.5).times_i().scale(-1.0); // of v w
                let (kx, ky) = (self.kx[at % n], self.kx[at / n]);
                (a.scale(kx) + b.scale(ky)).times_i().scale(-1.0)
            }
        });
        umax
    }

    /// Evolves `wh` for `t_end` (RK4 with the integrating factor exp(-damp t)).
    fn run(&self, mut wh: Vec<C>, t_end: f64, cfl: f64, progress: &mut dyn FnMut(f64)) -> Vec<C> {
        let mut t = 0.0;
        // Every n^2 buffer allocated once: a fresh one per stage cost a page
        // fault per page (268 MB each at 4096^2).
        let mut work = Work::default();
        let [mut k1, mut k2, mut k3, mut k4, mut stage] = [(); 5].map(|_| Vec::new());
        let mut e2 = Vec::new();
        let mut umax = self.rhs(&wh, &mut work, &mut k1);
        while t < t_end - 1e-12 {
            let dt = (cfl * self.dx / umax.max(1e-12)).min(t_end - t);
            e2.resize(self.damp.len(), 0.0);
            e2.par_iter_mut()
                .zip(&self.damp)
                .for_each(|(e, &d)| *e = detmath::exp(-d * dt / 2.0));
            combine(&mut stage, wh.len(), |at| {
                (wh[at] + k1[at].scale(0.5 * dt)).scale(e2[at])
            });
            self.rhs(&stage, &mut work, &mut k2);
            combine(&mut stage, wh.len(), |at| {
                wh[at].scale(e2[at]) + k2[at].scale(0.5 * dt)
            });
            self.rhs(&stage, &mut work, &mut k3);
            combine(&mut stage, wh.len(), |at| {
                let e = e2[at] * e2[at];
                wh[at].scale(e) + k3[at].scale(dt * e2[at])
            });
            self.rhs(&stage, &mut work, &mut k4);
            combine(&mut stage, wh.len(), |at| {
                let (h, e) = (e2[at], e2[at] * e2[at]);
                wh[at].scale(e)
                    + (k1[at].scale(e) + (k2[at] + k3[at]).scale(2.0 * h) + k4[at]).scale(dt / 6.0)
            });
            std::mem::swap(&mut wh, &mut stage);
            t += dt;
            umax = self.rhs(&wh, &mut work, &mut k1);
            progress(t);
        }
        wh
    }
}

/// [`Solver::rhs`]'s scratch: the packed velocity and the transformed
/// vorticity (then the products' spectrum).
#[derive(Default)]
struct Work {
    uv: Vec<C>,
    w: Vec<C>,
}

/// `f` at every mode, in parallel, into `out` (`len` values).
fn combine(out: &mut Vec<C>, len: usize, f: impl Fn(usize) -> C + Sync + Send) {
    out.resize(len, C::ZERO);
    out.par_iter_mut()
        .enumerate()
        .for_each(|(at, o)| *o = f(at));
}

/// Random-phase vorticity with E(k) ~ k^4 exp(-2 (k/k0)^2), mean 0, rms 1, as
/// an exactly Hermitian spectrum.
fn initial_vorticity(n: usize, k0: f64, seed: u64) -> Vec<C> {
    let mut rng = Rng::new(seed, 0x7475_7262); // "turb"
    let mut wh = vec![C::ZERO; n * n];
    for j in 0..n {
        for i in 0..n {
            let (kx, ky) = (freq(i, n), freq(j, n));
            let k = (kx * kx + ky * ky).sqrt();
            let phase = std::f64::consts::TAU * rng.unit();
            if k == 0.0 {
                continue;
            }
            let e = k * k * k * k * detmath::exp(-2.0 * (k / k0) * (k / k0));
            let amp = (k * e).sqrt();
            let (s, c) = detmath::sin_cos(phase);
            wh[j * n + i] = C::new(amp * c, amp * s);
        }
    }
    let shape = [n, n];
    fftn(&mut wh, &shape, true);
    let mut w: Vec<f64> = wh.iter().map(|c| c.re).collect();
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let var = w.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / w.len() as f64;
    let sd = var.sqrt().max(f64::MIN_POSITIVE);
    for x in w.iter_mut() {
        *x = (*x - mean) / sd;
    }
    let mut z: Vec<C> = w.iter().map(|&x| C::new(x, 0.0)).collect();
    fftn(&mut z, &shape, false);
    hermitian(&z, n)
}

/// (Z(k) + conj Z(-k)) / 2: the spectrum of the real part, exactly symmetric.
fn hermitian(z: &[C], n: usize) -> Vec<C> {
    (0..n * n)
        .map(|at| (z[at] + conj_mirror(z, at, n)).scale(0.5))
        .collect()
}

/// conj(Z(-k)) for mode `at` of an n x n spectrum: with Z(k), it splits the
/// transform of a + i b (a, b real) into theirs.
fn conj_mirror(z: &[C], at: usize, n: usize) -> C {
    z[mirror(at / n, n) * n + mirror(at % n, n)].conj()
}

/// Zero-pads a spectrum from n_old^2 to n_new^2, keeping physical values; the old
/// Nyquist row and column are dropped (ambiguous once padded).
fn pad_spectrum(wh: &[C], n_old: usize, n_new: usize) -> Vec<C> {
    let h = (n_old / 2) as f64;
    let r = n_new as f64 / n_old as f64;
    let s = r * r;
    let mut out = vec![C::ZERO; n_new * n_new];
    for j in 0..n_old {
        for i in 0..n_old {
            let (kx, ky) = (freq(i, n_old), freq(j, n_old));
            if kx.abs() >= h || ky.abs() >= h {
                continue;
            }
            let at = |k: f64| {
                if k < 0.0 {
                    (k + n_new as f64) as usize
                } else {
                    k as usize
                }
            };
            out[at(ky) * n_new + at(kx)] = wh[j * n_old + i].scale(s);
        }
    }
    out
}
