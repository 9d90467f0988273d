//! The correction's optimiser on the GPU (`gpu::descent`, kernels
//! `factz_p_descent_*` of kernels/particles.cu, issue 6) without a GPU: the
//! same host code, launch by launch, runs on the host build of the kernels
//! (`tests/common/shim_exec.rs`). The descent alone must equal the CPU's to
//! the bit (positions, active set and its order, iterations), and a whole
//! compression with the GPU's pair search and optimiser
//! (`gpu::particles::GpuCorrection`) must give the CPU's stream byte for byte.
//!
//! Inputs: clustered particles from factz synth, open and periodic, at bounds from
//! 1% to 40% of b (from a few violated pairs to an optimiser that grows its
//! active set for hundreds of iterations and stops on its work cap or stall
//! rule), and the shared adversarial sets (pairs at exactly b, duplicates, one
//! cell, NaN and Inf, periodic faces).
#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::Rng;
use common::particles::{adversarial, fof_b, synth_particles};
use factz::bound::within;
use factz::gpu::descent;
use factz::gpu::exec::Exec;
use factz::gpu::particles::GpuCorrection;
use factz::particles::correct::Problem;
use factz::particles::geometry::Space;
use factz::particles::vulnerable;
use factz::particles::{self, correct, Bound, Linking, ParticleConfig};
use kernels_host::Threads;
use shim_exec::Shim;

struct Case {
    name: String,
    pos: Vec<f32>,
    cfg: ParticleConfig,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let l = 1.0;
    // Small enough for the shim (a few ms per iteration), large enough for
    // hundreds of iterations and a growing active set.
    let clustered = synth_particles(10, 3, l, &[]);
    let b = fof_b(clustered.len() / 3, l);
    for period in [Some(l), None] {
        for frac in [0.01, 0.1, 0.4] {
            out.push(Case {
                name: format!("synth 10^3 {period:?} xi {frac} b"),
                pos: clustered.clone(),
                cfg: ParticleConfig {
                    bound: Bound::Abs(frac * b),
                    linking: Linking::Length(b),
                    period,
                    ..ParticleConfig::default()
                },
            });
        }
    }
    // Fewer iterations and coarser edits: the stall rule, the iteration cap
    // and the fallback rounds all take part.
    out.push(Case {
        name: "synth 10^3 periodic, 30 iterations, 6-bit edits".into(),
        pos: clustered,
        cfg: ParticleConfig {
            bound: Bound::Abs(0.2 * b),
            linking: Linking::Length(b),
            period: Some(l),
            correction: correct::Options {
                edit_bits: 6,
                max_iters: 30,
                ..correct::Options::default()
            },
            ..ParticleConfig::default()
        },
    });
    // At the larger bound, capped at 200 iterations (the cap's stop, and
    // time for the shim).
    for c in adversarial(5) {
        for (frac, max_iters) in [(1e-3, 1000), (0.2, 200)] {
            out.push(Case {
                name: format!("{} xi {frac} b", c.name),
                pos: c.pos.clone(),
                cfg: ParticleConfig {
                    bound: Bound::Abs(frac * c.b),
                    linking: Linking::Length(c.b),
                    period: c.period,
                    correction: correct::Options {
                        max_iters,
                        ..correct::Options::default()
                    },
                    ..ParticleConfig::default()
                },
            });
        }
    }
    out
}

/// Compress on the CPU and with the optimiser on `exec`; the same bytes and
/// the same optimiser statistics. Returns the CPU's statistics.
fn same_stream<E: Exec>(exec: &E, c: &Case) -> correct::Stats {
    // The optimiser forced (the descent is what this compares), then auto,
    // whose safe half runs on the GPU's pair list (Corrector::survey's default).
    let mut stats = None;
    for method in [correct::Method::Correct, correct::Method::Auto] {
        let mut cfg = c.cfg;
        cfg.correction.method = method;
        let want = particles::compress(&c.pos, &cfg).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let prepared = particles::prepare(&c.pos, &cfg).unwrap();
        let got = particles::finish_with(&c.pos, &cfg, prepared, None, &GpuCorrection { exec })
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let (w, g) = (&want.report.correction, &got.report.correction);
        assert_eq!(
            (
                w.iterations,
                w.active_particles,
                w.fallback_particles,
                w.edited_coords
            ),
            (
                g.iterations,
                g.active_particles,
                g.fallback_particles,
                g.edited_coords
            ),
            "{} {method:?}: iterations, active, fallback, edited",
            c.name
        );
        assert!(
            want.bytes == got.bytes,
            "{} {method:?}: the streams differ",
            c.name
        );
        stats.get_or_insert_with(|| w.clone());
    }
    stats.expect("two methods ran")
}

/// A base compressor's output: every coordinate moved by up to xi (uniform),
/// non-finite ones kept.
fn perturbed(pos: &[f32], xi: f64, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    pos.iter()
        .map(|&x| {
            let y = (x as f64 + rng.range(-xi, xi)) as f32;
            if x.is_finite() && within(y, x, xi) {
                y
            } else {
                x
            }
        })
        .collect()
}

/// The optimiser alone, on problems from perturbed positions: the same
/// active set in the same order, the same iterations and the same final
/// positions to the bit.
#[test]
fn shim_descent_equals_the_cpu_descent() {
    let shim = Shim {
        threads: Threads::Fibers,
    };
    let mut longest = 0;
    for c in cases() {
        let b = particles::linking_length(&c.pos, c.cfg.linking, c.cfg.period).unwrap();
        let xi = particles::absolute_bound(&c.pos, c.cfg.bound);
        let space = Space {
            period: c.cfg.period,
        };
        let recon = perturbed(&c.pos, xi, 7);
        let exact: Vec<bool> = (0..c.pos.len() / 3).map(|k| k % 13 == 0).collect();
        let pairs = vulnerable::pairs(&c.pos, space, b, xi);
        let opts = &c.cfg.correction;
        let p = Problem::new(&c.pos, &recon, &exact, &pairs, space, b, xi, opts.edit_bits);
        let t = std::time::Instant::now();
        let want = correct::descend(&p, opts);
        let t1 = t.elapsed();
        let got = descent::descend(&shim, &p, opts).unwrap();
        eprintln!(
            "{}: {} it, {} active, cpu {:?} shim {:?}",
            c.name,
            want.iterations,
            want.active.len(),
            t1,
            t.elapsed() - t1
        );
        assert_eq!(want.iterations, got.iterations, "{}: iterations", c.name);
        assert!(want.active == got.active, "{}: active sets differ", c.name);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&want.pos) == bits(&got.pos),
            "{}: positions differ",
            c.name
        );
        longest = longest.max(want.iterations);
    }
    assert!(longest >= 100, "longest descent {longest} iterations");
}

#[test]
fn shim_descent_gives_the_cpu_stream() {
    let shim = Shim {
        threads: Threads::Fibers,
    };
    let (mut iterations, mut grown) = (0, 0);
    for c in cases() {
        let s = same_stream(&shim, &c);
        iterations = iterations.max(s.iterations);
        grown += (s.active_particles > 0) as usize;
    }
    // The comparison covered real descents, not only empty ones.
    assert!(iterations >= 30, "longest descent {iterations} iterations");
    assert!(grown >= 5, "{grown} cases moved particles");
}

#[test]
fn os_threads_give_the_same_descent() {
    let shim = Shim {
        threads: Threads::Os,
    };
    let c = cases().swap_remove(1);
    assert!(same_stream(&shim, &c).iterations > 0, "{}", c.name);
}

#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu-check"]
fn device_descent_gives_the_cpu_stream() {
    let cuda = nvrtc::device();
    let mut cases = cases();
    // Sets at sizes the shim is too slow for.
    for frac in [0.1, 0.4] {
        let pos = synth_particles(16, 3, 1.0, &[]);
        let b = fof_b(pos.len() / 3, 1.0);
        cases.push(Case {
            name: format!("synth 16^3 periodic xi {frac} b"),
            pos,
            cfg: ParticleConfig {
                bound: Bound::Abs(frac * b),
                linking: Linking::Length(b),
                period: Some(1.0),
                ..ParticleConfig::default()
            },
        });
    }
    let big = synth_particles(64, 2, 1.0, &[]);
    let b = fof_b(big.len() / 3, 1.0);
    cases.push(Case {
        name: "synth 64^3 periodic xi 0.2 b".into(),
        pos: big,
        cfg: ParticleConfig {
            bound: Bound::Abs(0.2 * b),
            linking: Linking::Length(b),
            period: Some(1.0),
            ..ParticleConfig::default()
        },
    });
    for c in &cases {
        same_stream(&cuda, c);
    }
}
