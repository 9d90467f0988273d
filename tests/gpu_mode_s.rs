//! Mode S (speculative) on the GPU without a GPU (issue 6): the library's own
//! host code (`gpu::mode_s`) drives `kernels/mode_s.cu` run as host C++ through
//! `kernels/shim` (tests/common/shim_exec.rs; each CUDA thread a fiber, or an
//! OS thread), and gives `speculative::encode`'s Parts (exact mask, raw words, ids,
//! codes) and `speculative::decode`'s values bit for bit, and the triangle
//! signatures of `forced_exact_and_signatures`, on smooth fields of awkward
//! shapes, synth turbulence windows, noise dense in critical points, the
//! adversarial suite, and bounds from loose to far below f32 resolution.

#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::{self, Field};
use factz::field::forced::forced_exact_and_signatures;
use factz::field::parts::Parts;
use factz::field::speculative;
use factz::field::speculative::LevelPlan;
use factz::gpu::mode_s::{level_plan, Encoded, ModeSKernels};
use kernels_host::Threads;
use shim_exec::Shim;

/// The library's host code over the shim (gpu::field drives the same
/// `encode_device` / `decode_device` on device arrays; tests/gpu_field.rs).
fn encode(f: &Field, xi: f64, chunk: bool, threads: Threads) -> Encoded {
    ModeSKernels {
        exec: &Shim { threads },
    }
    .encode(&f.u, &f.v, f.ny, f.nx, xi, chunk)
    .expect("mode S's kernels on the shim")
}

fn decode(parts: &Parts, ny: usize, nx: usize, xi: f64, threads: Threads) -> (Vec<f32>, Vec<f32>) {
    ModeSKernels {
        exec: &Shim { threads },
    }
    .decode(parts, ny, nx, xi)
    .expect("mode S's decoder on the shim")
}

fn bits(a: &[f32]) -> Vec<u32> {
    a.iter().map(|x| x.to_bits()).collect()
}

/// The first difference between two arrays, for the failure message.
fn first_diff<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!(
            "lengths {} (kernel) and {} (CPU)",
            a.len(),
            b.len()
        ));
    }
    let k = a.iter().zip(b).position(|(x, y)| x != y)?;
    let n = a.iter().zip(b).filter(|(x, y)| x != y).count();
    Some(format!(
        "{n} differ; first at {k}: kernel {:?}, CPU {:?}",
        a[k], b[k]
    ))
}

/// What one comparison exercised.
#[derive(Default, Debug, Clone, Copy)]
struct Tally {
    coded: usize,
    exact: usize,
    cp_triangles: usize,
}

/// Kernels against the CPU on one field, bound and chunk flag: signatures,
/// Parts, the decoder on the CPU's Parts, and the encoder's reconstruction
/// against the CPU decoder's output.
fn check_with(f: &Field, xi: f64, chunk: bool, threads: Threads) -> Tally {
    check_planned(f, xi, chunk, threads, None)
}

/// [`check_with`] under a given level plan (None: each side chooses its own).
fn check_planned(
    f: &Field,
    xi: f64,
    chunk: bool,
    threads: Threads,
    plan: Option<LevelPlan>,
) -> Tally {
    let what = format!(
        "{} ({}x{}) xi {xi:e} chunk {chunk} {threads:?} {plan:?}",
        f.name, f.ny, f.nx
    );
    let (_, sigs) = forced_exact_and_signatures(&f.u, &f.v, f.ny, f.nx, chunk);
    let (cpu, gpu) = match plan {
        None => (
            speculative::encode(&f.u, &f.v, f.ny, f.nx, xi, chunk),
            encode(f, xi, chunk, threads),
        ),
        Some(p) => (
            speculative::encode_planned(&f.u, &f.v, f.ny, f.nx, xi, chunk, None, p),
            ModeSKernels {
                exec: &Shim { threads },
            }
            .encode_planned(&f.u, &f.v, f.ny, f.nx, xi, chunk, p)
            .expect("mode S's kernels on the shim"),
        ),
    };
    let sig_bytes: Vec<u8> = sigs.iter().map(|s| s.0).collect();
    if let Some(d) = first_diff(&gpu.sigs, &sig_bytes) {
        panic!("{what}: signatures: {d}");
    }
    for (name, a, b) in [
        ("raw", &gpu.parts.raw, &cpu.raw),
        ("ids", &gpu.parts.ids, &cpu.ids),
        ("codes", &gpu.parts.codes, &cpu.codes),
    ] {
        if let Some(d) = first_diff(a, b) {
            panic!("{what}: {name}: {d}");
        }
    }
    if let Some(d) = first_diff(&gpu.parts.exact, &cpu.exact) {
        panic!("{what}: exact mask: {d}");
    }
    let (mut du, mut dv) = (vec![0f32; f.ny * f.nx], vec![0f32; f.ny * f.nx]);
    speculative::decode(&cpu, f.ny, f.nx, xi, &mut du, &mut dv).expect("CPU decode");
    let (gu, gv) = decode(&cpu, f.ny, f.nx, xi, threads);
    for (name, a, b) in [
        ("decoded u", &gu, &du),
        ("decoded v", &gv, &dv),
        ("reconstructed u", &gpu.u, &du),
        ("reconstructed v", &gpu.v, &dv),
    ] {
        if let Some(d) = first_diff(&bits(a), &bits(b)) {
            panic!("{what}: {name}: {d}");
        }
    }
    let exact = cpu.exact.iter().filter(|&&e| e).count();
    Tally {
        coded: f.ny * f.nx - exact,
        exact,
        cp_triangles: sigs.iter().filter(|s| s.is_cp()).count(),
    }
}

fn check(f: &Field, xi: f64, chunk: bool) -> Tally {
    check_with(f, xi, chunk, Threads::Fibers)
}

/// Relative bounds from loose to below f32 resolution, and absolute ones at
/// the extremes (tiny, huge, subnormal, and 0).
fn bounds(f: &Field) -> Vec<f64> {
    let r = f.finite_span();
    let mut out: Vec<f64> = [3e-1, 1e-2, 1e-4, 1e-9]
        .iter()
        .map(|t| t * r)
        .filter(|&x| x > 0.0)
        .collect();
    out.extend([1e-30, 1e30, 5e-324, 1e300, 0.0]);
    out
}

fn sum(into: &mut Tally, t: Tally) {
    into.coded += t.coded;
    into.exact += t.exact;
    into.cp_triangles += t.cp_triangles;
}

/// Independent uniform noise: a critical point in a large share of triangles,
/// so most targets take the general (`keeps_topology`) path.
fn noise(ny: usize, nx: usize, seed: u64) -> Field {
    let mut r = fields::Rng::new(seed);
    let mut gen = || (0..ny * nx).map(|_| r.range(-1.0, 1.0) as f32).collect();
    let (u, v) = (gen(), gen());
    Field::new(format!("noise{ny}x{nx}s{seed}"), ny, nx, u, v)
}

#[test]
fn smooth_fields_of_awkward_shapes_match_the_cpu() {
    let mut shapes = fields::ODD_SHAPES.to_vec();
    shapes.extend([(300, 300), (2, 300), (300, 2), (260, 3), (4, 513)]);
    let mut t = Tally::default();
    for (n, &(ny, nx)) in shapes.iter().enumerate() {
        let f = fields::smooth(ny, nx, 60 + n as u64);
        for xi in bounds(&f) {
            for chunk in [false, true] {
                sum(&mut t, check(&f, xi, chunk));
            }
        }
    }
    assert!(t.coded > 500_000 && t.exact > 50_000, "{t:?}");
}

#[test]
fn turbulence_windows_match_the_cpu() {
    let turb = fields::turbulence(256, 5);
    let mut t = Tally::default();
    for f in [
        turb.clone(),
        fields::window(&turb, 3, 17, 257, 129),
        fields::window(&turb, 100, 9, 1, 256),
        fields::window(&turb, 9, 100, 256, 1),
        fields::window(&turb, 40, 200, 100, 61),
    ] {
        for xi in bounds(&f) {
            sum(&mut t, check(&f, xi, false));
        }
        sum(&mut t, check(&f, 1e-3 * f.finite_span(), true));
    }
    assert!(t.coded > 300_000 && t.cp_triangles > 1_000, "{t:?}");
}

/// Level plans (coarse levels from half the bound): the same ids, codes and
/// reconstructions as the CPU's, and some targets really start at id 1.
#[test]
fn level_plans_match_the_cpu() {
    let turb = fields::turbulence(256, 5);
    let mut t = Tally::default();
    for f in [turb.clone(), fields::window(&turb, 3, 17, 200, 129)] {
        for tight_from in [4, 16, 128] {
            let plan = LevelPlan {
                tight_from: Some(tight_from),
            };
            for rel in [1e-2, 1e-4] {
                let xi = rel * f.finite_span();
                sum(
                    &mut t,
                    check_planned(&f, xi, false, Threads::Fibers, Some(plan)),
                );
            }
            let cpu = speculative::encode_planned(
                &f.u,
                &f.v,
                f.ny,
                f.nx,
                1e-2 * f.finite_span(),
                false,
                None,
                plan,
            );
            assert!(
                cpu.ids.iter().any(|&id| id >= 1),
                "{tight_from}: a plan that tightens"
            );
        }
    }
    assert!(t.coded > 100_000, "{t:?}");
}

/// The plan the device path reads from its sample tiles is the CPU's.
#[test]
fn the_device_plan_is_the_cpus() {
    let f = fields::smooth(1040, 1040, 7);
    let e = Shim {
        threads: Threads::Fibers,
    };
    let (du, dv) = (
        factz::gpu::exec::Buf::from(&e, &f.u).unwrap(),
        factz::gpu::exec::Buf::from(&e, &f.v).unwrap(),
    );
    let mut chosen = Vec::new();
    for rel in [1e-2, 1e-3, 1e-4] {
        let xi = rel * f.finite_span();
        let cpu = speculative::plan::choose(&f.u, &f.v, f.ny, f.nx, xi);
        let gpu = level_plan(&e, du.view(), dv.view(), f.ny, f.nx, xi).unwrap();
        assert_eq!(gpu, cpu, "rel {rel}");
        chosen.push(cpu);
    }
    assert!(!speculative::plan::sample_tiles(f.ny, f.nx).is_empty());
    // Fields under 16 tiles sample nothing and get no plan.
    assert!(speculative::plan::sample_tiles(1024, 1024).is_empty());
    assert!(chosen.iter().any(|p| p.tight_from.is_some()), "{chosen:?}");
}

#[test]
fn noise_dense_in_critical_points_matches_the_cpu() {
    let mut t = Tally::default();
    for (ny, nx) in [(64, 64), (37, 300), (300, 37)] {
        let f = noise(ny, nx, (ny * nx) as u64);
        for xi in bounds(&f) {
            sum(&mut t, check(&f, xi, false));
        }
    }
    assert!(t.coded > 50_000 && t.cp_triangles > 20_000, "{t:?}");
}

#[test]
fn adversarial_fields_match_the_cpu() {
    let base = fields::smooth(40, 37, 7);
    let mut suite = fields::adversarial_suite(&base);
    suite.push(fields::integer_field(2, 2, 1, 3));
    suite.push(fields::constant(1, 1, 1.0, 0.0));
    // NaN payloads (quiet and signalling, both signs) and infinities: exact
    // vertices whose raw words the decoder must copy bit for bit.
    let mut odd = fields::smooth(33, 41, 10);
    for (n, bits) in [
        0x7fa0_0001u32,
        0xffc1_2345,
        0x7f80_0000,
        0xff80_0000,
        0x7fff_ffff,
    ]
    .into_iter()
    .enumerate()
    {
        for k in (n * 7..odd.u.len()).step_by(37) {
            odd.u[k] = f32::from_bits(bits);
            odd.v[(k * 3) % (33 * 41)] = f32::from_bits(bits ^ 0x8000_0000);
        }
    }
    suite.push(odd.renamed("NaN payloads and infinities"));
    let mut t = Tally::default();
    for f in &suite {
        for xi in bounds(f) {
            for chunk in [false, true] {
                sum(&mut t, check(f, xi, chunk));
            }
        }
    }
    assert!(t.coded > 20_000 && t.exact > 20_000, "{t:?}");
}

#[test]
fn os_threads_agree_with_the_cpu() {
    // Every CUDA thread on its own std::thread: the phase's decisions really
    // run concurrently against one state.
    let base = fields::smooth(45, 70, 5);
    for f in [fields::nan_mask(&base, 6), noise(40, 33, 9)] {
        let t = check_with(&f, 1e-2 * f.finite_span(), false, Threads::Os);
        assert!(t.coded > 1000, "{t:?}");
    }
}

/// The CUDA runtime side (feature `cuda`): cudarc's NVRTC path in CI, and (on
/// a GPU machine, `scripts/gpu-check`) the device against the CPU.
mod cuda {
    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU: scripts/gpu-check"]
    fn device_matches_the_cpu() {
        let cuda = nvrtc::device();
        let k = ModeSKernels { exec: &cuda };
        let turb = fields::turbulence(512, 3);
        let mut suite = fields::adversarial_suite(&fields::window(&turb, 0, 0, 40, 37));
        suite.push(turb.clone());
        suite.push(fields::window(&turb, 7, 300, 1000, 333));
        suite.push(noise(300, 517, 4));
        for &(ny, nx) in fields::ODD_SHAPES {
            suite.push(fields::smooth(ny, nx, 1));
        }
        let mut coded = 0;
        for f in &suite {
            for xi in bounds(f) {
                for chunk in [false, true] {
                    let what = format!("{} ({}x{}) xi {xi:e} chunk {chunk}", f.name, f.ny, f.nx);
                    let cpu = speculative::encode(&f.u, &f.v, f.ny, f.nx, xi, chunk);
                    let (_, sigs) = forced_exact_and_signatures(&f.u, &f.v, f.ny, f.nx, chunk);
                    let dev = k.encode(&f.u, &f.v, f.ny, f.nx, xi, chunk).unwrap();
                    let sig_bytes: Vec<u8> = sigs.iter().map(|s| s.0).collect();
                    assert!(dev.sigs == sig_bytes, "{what}: signatures");
                    assert!(dev.parts == cpu, "{what}: parts");
                    let (mut du, mut dv) = (vec![0f32; f.ny * f.nx], vec![0f32; f.ny * f.nx]);
                    speculative::decode(&cpu, f.ny, f.nx, xi, &mut du, &mut dv).unwrap();
                    let (gu, gv) = k.decode(&cpu, f.ny, f.nx, xi).unwrap();
                    for (a, b) in [(&gu, &du), (&gv, &dv), (&dev.u, &du), (&dev.v, &dv)] {
                        assert!(bits(a) == bits(b), "{what}: decoded values");
                    }
                    coded += cpu.ids.len();
                }
            }
        }
        assert!(coded > 1_000_000, "coded {coded}");
    }
}
