//! `factz synth`: the library's generators ([`factz::synth`]) to a file with a
//! JSON sidecar; and the quick field `bench` uses without inputs: each component
//! a sum of random Fourier modes on the periodic square (integer wavenumbers up
//! to `KMAX`, amplitude ~ |k|^-1/2), a turbulence-like mix of saddles, nodes and
//! foci in milliseconds. Same seed and shape, same bits on every platform.

use crate::args::{self, val};
use crate::fileio::{self, Progress};
use crate::json::{Json, Obj};
use crate::{help, CliError, CliResult};
use factz::synth::detmath::{powf, sin_cos};
use factz::synth::{Order, Particles, Turbulence};
use rayon::prelude::*;
use std::f64::consts::TAU;
use std::ffi::OsString;
use std::path::Path;

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
        let amp = (0.5 + rng.unit()) / powf(k2 as f64, 0.25);
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
                    let (s, c) = sin_cos(m.kx * TAU * i as f64 / nx as f64);
                    (c, s)
                })
                .unzip()
        })
        .collect();
    let mut out = vec![0.0f32; ny * nx];
    out.par_chunks_mut(nx).enumerate().for_each(|(j, row)| {
        let mut acc = vec![0.0f64; nx];
        for (m, (cx, sx)) in modes.iter().zip(&cols) {
            let (s, c) = sin_cos(m.ky * TAU * j as f64 / ny as f64 + m.phase);
            let (cy, sy) = (m.amp * c, m.amp * s);
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

/// `factz synth --kind field2d|particles [options] OUT.f32`
pub fn synth(argv: Vec<OsString>) -> CliResult<u8> {
    let a = args::parse(
        "synth",
        argv,
        &[
            val("kind"),
            val("n"),
            val("seed"),
            val("k0"),
            val("t-end"),
            val("nsim"),
            val("nside"),
            val("box"),
            val("sigma20"),
            val("order"),
        ],
    )?;
    if a.help {
        fileio::print_stdout(help::SYNTH)?;
        return Ok(0);
    }
    a.positionals_exact(&["OUT.f32"])?;
    let out = a.positionals[0].clone();
    if out == "-" {
        return Err(a.usage_err("write to a file (the JSON sidecar goes beside it), not stdout"));
    }
    let seed = a.int_in("seed", 0, u64::MAX)?.unwrap_or(1);
    let number = |name: &str| -> CliResult<Option<f64>> {
        a.value(name).map(|s| a.positive(name, s)).transpose()
    };
    let progress = Progress::for_input(u64::MAX);
    let (bytes, meta) = match a.kind()?.unwrap_or(factz::format::Kind::Field2d) {
        factz::format::Kind::Field2d => {
            a.refuse(&["nside", "box", "sigma20", "order"], "--kind particles")?;
            let n = a.int_in("n", 4, 1 << 15)?.unwrap_or(512) as usize;
            let mut t = Turbulence::new(n, seed);
            if let Some(ns) = a.int_in("nsim", 4, 1 << 15)? {
                t.nsim = ns as usize;
                t.k0 = t.nsim as f64 / 32.0;
            }
            if let Some(k0) = number("k0")? {
                t.k0 = k0;
            }
            if let Some(te) = a.value("t-end") {
                t.t_end = te
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| a.usage_err(format!("bad --t-end '{te}': expected a number")))?;
            }
            t.validate().map_err(|m| a.usage_err(m))?;
            let started = std::time::Instant::now();
            let (u, v) = t
                .generate(&mut |now, total| {
                    progress.phase(&format!("turbulence {n}x{n}: t = {now:.2} of {total}"))
                })
                .map_err(CliError::fail)?;
            let bytes = fileio::field_to_bytes(&u, &v, factz::field::Layout::Soa);
            let meta = Obj::new()
                .put("shape", vec![2usize, n, n])
                .put("dtype", "<f4")
                .put(
                    "layout",
                    "component-major: u[ny][nx] then v[ny][nx]; row index = y, x fastest",
                )
                .put("domain", "periodic [0, 2pi)^2")
                .put(
                    "generator",
                    "factz synth --kind field2d (2D decaying turbulence)",
                )
                .put("seed", seed)
                .put("n", n)
                .put("nsim", t.nsim)
                .put("k0", t.k0)
                .put("t_end", t.t_end)
                .put("elapsed_s", started.elapsed().as_secs_f64());
            (bytes, meta)
        }
        factz::format::Kind::Particles => {
            a.refuse(&["n", "k0", "t-end", "nsim"], "--kind field2d")?;
            let nside = a.int_in("nside", 2, 1024)?.unwrap_or(64) as usize;
            let mut p = Particles::new(nside, seed, number("box")?.unwrap_or(100.0));
            if let Some(s) = number("sigma20")? {
                p.sigma20 = s;
            }
            p.order = match a.value("order").map(str::to_ascii_lowercase).as_deref() {
                None | Some("lattice") => Order::Lattice,
                Some("shuffle") => Order::Shuffle,
                Some(o) => {
                    return Err(
                        a.usage_err(format!("bad --order '{o}': expected lattice or shuffle"))
                    )
                }
            };
            p.validate().map_err(|m| a.usage_err(m))?;
            let started = std::time::Instant::now();
            let set = p
                .generate(&mut |stage| progress.phase(&format!("particles {nside}^3: {stage}")))
                .map_err(CliError::fail)?;
            let count = set.pos.len() / 3;
            let bytes = fileio::positions_to_bytes(&set.pos, factz::particles::Layout::Aos);
            let meta = Obj::new()
                .put("shape", vec![count, 3])
                .put("dtype", "<f4")
                .put("layout", "row-major [N][3] = x,y,z interleaved")
                .put("box", p.box_side)
                .put("periodic", true)
                .put("mean_separation", p.mean_separation())
                .put("fof_b", p.fof_b())
                .put(
                    "generator",
                    "factz synth --kind particles (peak-patch NFW halos + Zel'dovich field)",
                )
                .put("seed", seed)
                .put("nside", nside)
                .put("ns", p.ns)
                .put("sigma20", p.sigma20)
                .put(
                    "order",
                    if p.order == Order::Shuffle {
                        "shuffle"
                    } else {
                        "lattice"
                    },
                )
                .put("n_halos_placed", set.halos)
                .put("frac_in_placed_halos", set.frac_in_halos)
                .put("largest_placed_halo", set.largest_halo)
                .put("elapsed_s", started.elapsed().as_secs_f64());
            (bytes, meta)
        }
    };
    progress.done();
    fileio::write_all(&out, &bytes)?;
    let sidecar = Path::new(&out).with_extension("json");
    let text = Json::from(meta).pretty() + "\n";
    std::fs::write(&sidecar, text)
        .map_err(|e| CliError::fail(format!("cannot write {}: {e}", sidecar.display())))?;
    eprintln!(
        "factz: wrote {out} ({} bytes) and {}",
        bytes.len(),
        sidecar.display()
    );
    Ok(0)
}
