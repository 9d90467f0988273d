//! Field compression throughput on a GPU machine (issue 6): modes B and S,
//! input resident on the device, against the CPU path on the same machine.
//!
//! `factz-gpu-bench [--sizes 4096,16384] [--reps 3] [--cpu-max 16384] [--rel 1e-3]
//! [--particles 4000000] [--prel 1e-3]`
//!
//! The field is synthetic and smooth (a few Fourier modes, many critical
//! points), n x n. GB/s counts the field's 8 bytes per vertex. GPU compress
//! time runs from device-resident u, v to the stream on the host (the kernels
//! and the coding of every section on the device, with either coder); GPU
//! decompress from host bytes to the field in device
//! memory (both coders decode on the device). Every GPU stream is checked against the CPU's.
//! A second table profiles one more compression and decompression of each
//! case (`gpu::profile::Timed`): the kernels and copies that took longest.
//!
//! Then the particle correction (`--particles N`, 0 to skip): a clustered
//! snapshot in a periodic unit box, b from eta 0.2, compressed on the CPU and
//! with the pair search and optimiser on the GPU (`gpu::particles::GpuCorrection`);
//! the table gives the correction's seconds (pair search, optimiser, checks)
//! and the whole compression's, and whether the streams are the same.

use cudarc::driver::CudaSlice;
use factz::field::{self, Bound, Coder, FieldConfig, Mode};
use factz::gpu::field as gf;
use factz::gpu::profile::Timed;
use std::time::Instant;

/// Profile rows per (size, mode, coder, direction).
const PROFILE_ROWS: usize = 8;

fn smooth(n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut u = Vec::with_capacity(n * n);
    let mut v = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            let (x, y) = (i as f64 * 0.013, j as f64 * 0.011);
            u.push(((x + 0.3).sin() * (1.3 * y).cos() + 0.2 * (2.1 * x - y).sin()) as f32);
            v.push(((1.1 * x).cos() * (y - 0.5).sin() - 0.3 * (x + 1.7 * y).cos()) as f32);
        }
    }
    (u, v)
}

/// Best of `reps` wall times of `f`, in seconds, and its last result.
fn best<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut t = f64::INFINITY;
    let mut out = None;
    for _ in 0..reps.max(1) {
        let s = Instant::now();
        out = Some(f());
        t = t.min(s.elapsed().as_secs_f64());
    }
    (t, out.expect("ran"))
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|k| args.get(k + 1))
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{name}: cannot parse {s}"))
        })
        .unwrap_or(default)
}

/// `n` particles in a periodic unit box: 60% in Gaussian clumps, the rest uniform.
fn clustered(n: usize) -> Vec<f32> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut unit = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let centres: Vec<[f64; 3]> = (0..(n / 2000).max(1))
        .map(|_| [unit(), unit(), unit()])
        .collect();
    let mut out = Vec::with_capacity(3 * n);
    for k in 0..n {
        let p = if k % 5 < 3 {
            let c = centres[(unit() * centres.len() as f64) as usize % centres.len()];
            // Box-Muller, sigma 0.004.
            c.map(|x| {
                let g = (-2.0 * unit().ln()).sqrt() * (std::f64::consts::TAU * unit()).cos();
                (x + 0.004 * g).rem_euclid(1.0)
            })
        } else {
            [unit(), unit(), unit()]
        };
        out.extend(p.map(|x| x as f32));
    }
    out
}

fn particles(n: usize, rel: f64, reps: usize, exec: &factz::gpu::exec::Cuda) {
    use factz::particles::{self, Bound, Linking, ParticleConfig};
    let pos = clustered(n);
    let cfg = ParticleConfig {
        bound: Bound::Rel(rel),
        linking: Linking::Eta(particles::DEFAULT_ETA),
        period: Some(1.0),
        ..ParticleConfig::default()
    };
    println!(
        "particles backend compress_s correction_s pair_search_s optimise_s iterations same_stream"
    );
    let (tc, cpu) = best(reps, || particles::compress(&pos, &cfg).expect("CPU"));
    let (tg, gpu) = best(reps, || {
        let prepared = particles::prepare(&pos, &cfg).expect("prepare");
        particles::finish_with(
            &pos,
            &cfg,
            prepared,
            None,
            &factz::gpu::particles::GpuCorrection { exec },
        )
        .expect("GPU correction")
    });
    let same = if cpu.bytes == gpu.bytes { "yes" } else { "NO" };
    for (name, t, c) in [("cpu", tc, &cpu), ("cuda", tg, &gpu)] {
        let st = &c.report.correction;
        println!(
            "{n} {name} {t:.3} {:.3} {:.3} {:.3} {} {same}",
            st.setup_s + st.optimise_s + st.check_s,
            st.setup_s,
            st.optimise_s,
            st.iterations
        );
    }
    assert_eq!(same, "yes", "GPU particle stream differs from the CPU's");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--sizes", "4096,16384".to_string())
        .split(',')
        .map(|s| s.parse().expect("--sizes: n,n,..."))
        .collect();
    let reps: usize = arg(&args, "--reps", 3);
    let cpu_max: usize = arg(&args, "--cpu-max", usize::MAX);
    let rel: f64 = arg(&args, "--rel", 1e-3);
    let np: usize = arg(&args, "--particles", 4_000_000);
    let prel: f64 = arg(&args, "--prel", 1e-3);
    let d = match factz::gpu::exec::shared() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("factz-gpu-bench: no GPU backend: {}", e.message);
            std::process::exit(2);
        }
    };
    let s = d.stream.clone();
    let ctx = s.context().clone();
    println!("size mode coder backend compress_GBps decompress_GBps ratio same_stream");
    let mut profile = Vec::new();
    for &n in &sizes {
        let (u, v) = smooth(n);
        let gb = (8 * n * n) as f64 / 1e9;
        let du = s.clone_htod(&u).expect("upload u");
        let dv = s.clone_htod(&v).expect("upload v");
        let mut ou: CudaSlice<f32> = s.alloc_zeros(n * n).expect("alloc");
        let mut ov: CudaSlice<f32> = s.alloc_zeros(n * n).expect("alloc");
        let cases = [Mode::Blockwise, Mode::Speculative]
            .into_iter()
            .flat_map(|m| [Coder::Huffman, Coder::Rans].map(|c| (m, c)));
        for (mode, coder) in cases {
            let cfg = FieldConfig {
                mode,
                coder,
                bound: Bound::Rel(rel),
                ..FieldConfig::default()
            };
            let (tc, c) = best(reps, || {
                gf::compress(&ctx, &du, &dv, n, n, &cfg, &s).expect("GPU compress")
            });
            let (td, _) = best(reps, || {
                gf::decompress(&ctx, &c.bytes, &mut ou, &mut ov, &s).expect("GPU decompress")
            });
            let ratio = gb * 1e9 / c.bytes.len() as f64;
            let same = if n <= cpu_max {
                let (cc, cpu) = best(reps, || field::compress(&u, &v, n, n, &cfg).expect("CPU"));
                let (hu, hv) = (&mut vec![0f32; n * n], &mut vec![0f32; n * n]);
                let (cd, _) = best(reps, || {
                    field::decompress_into(&cpu.bytes, hu, hv).expect("CPU")
                });
                println!(
                    "{n} {} {} cpu {:.3} {:.3} {ratio:.2} -",
                    mode.name(),
                    coder.name(),
                    gb / cc,
                    gb / cd
                );
                let back = (s.clone_dtoh(&ou).expect("u"), s.clone_dtoh(&ov).expect("v"));
                let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&back.0) == bits(hu) && bits(&back.1) == bits(hv),
                    "GPU decode differs from the CPU's"
                );
                if cpu.bytes == c.bytes {
                    "yes"
                } else {
                    "NO"
                }
            } else {
                "unchecked"
            };
            println!(
                "{n} {} {} cuda {:.3} {:.3} {ratio:.2} {same}",
                mode.name(),
                coder.name(),
                gb / tc,
                gb / td
            );
            assert_ne!(same, "NO", "GPU stream differs from the CPU's");
            // One more of each, every launch and copy waited for and timed.
            let timed = Timed::new(d);
            let k = gf::OnExec { exec: &timed };
            // SAFETY: the slices outlive the views, on the shared device's context.
            let f = unsafe { [gf::view(&du, &s), gf::view(&dv, &s)] };
            gf::compress_on(&k, f, n, n, &cfg).expect("GPU compress");
            let encode = timed.take();
            // SAFETY: as above.
            let mut out = unsafe { [gf::view_mut(&mut ou, &s), gf::view_mut(&mut ov, &s)] };
            gf::decompress_on(&k, &c.bytes, &mut out).expect("GPU decompress");
            for (dir, stages) in [("compress", encode), ("decompress", timed.take())] {
                let total: f64 = stages.iter().map(|st| st.seconds).sum();
                for st in stages.iter().take(PROFILE_ROWS) {
                    profile.push(format!(
                        "{n} {} {} {dir} {} {:.3} {} {:.1}",
                        mode.name(),
                        coder.name(),
                        st.name.replace(' ', "_"),
                        st.seconds * 1e3,
                        st.calls,
                        100.0 * st.seconds / total.max(f64::MIN_POSITIVE)
                    ));
                }
            }
        }
    }
    println!(
        "\nWhere the time goes (each launch and copy waited for; top {PROFILE_ROWS} per row):"
    );
    println!("size mode coder direction stage ms calls percent");
    for row in &profile {
        println!("{row}");
    }
    if np > 0 {
        particles(np, prel, reps, d);
    }
}
