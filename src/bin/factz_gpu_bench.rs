//! Field compression throughput on a GPU machine (issue 6): modes B and S,
//! input resident on the device, against the CPU path on the same machine.
//!
//! `factz-gpu-bench [--sizes 4096,16384] [--reps 3] [--cpu-max 4096]
//! [--cpu-reps 1] [--rel 1e-3] [--particles 4000000] [--prel 1e-3]`
//!
//! The field is synthetic and smooth (a few Fourier modes, many critical
//! points), n x n. GB/s counts the field's 8 bytes per vertex. GPU compress
//! time runs from device-resident u, v to the stream on the host (the kernels
//! and the coding of every section on the device, with either coder); GPU
//! decompress from host bytes to the field in device
//! memory (both coders decode on the device). Up to `--cpu-max` the GPU's
//! stream and decoded field are checked against the CPU's (timed over
//! `--cpu-reps`); above it the GPU rows say `unchecked`. After each case one
//! more compression and decompression is profiled (`gpu::profile::Timed`):
//! the kernels and copies that took longest.
//!
//! Then the particle correction (`--particles N`, 0 to skip): a clustered
//! snapshot in a periodic unit box, b from eta 0.2, compressed on the CPU and
//! with the pair search and optimiser on the GPU (`gpu::particles::GpuCorrection`);
//! the table gives the correction's seconds (pair search, optimiser, checks)
//! and the whole compression's, and whether the streams are the same.
//!
//! Every case prints (and flushes) its rows and profile as soon as it ends,
//! so a time-out keeps what finished. A failing case (an error, a panic, a
//! stream or field that differs from the CPU's) prints `FAILED` with the
//! reason and the rest still run; the exit status is then 1. `FACTZ_NVRTC`
//! names the NVRTC to load first (as the tests do).

use cudarc::driver::CudaSlice;
use factz::field::pipeline::{compress_on, decompress_on};
use factz::field::{self, Bound, Coder, FieldConfig, Mode};
use factz::gpu::field as gf;
use factz::gpu::profile::Timed;
use std::io::Write;
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

/// The particle case; Err says what differed or failed.
fn particles(n: usize, rel: f64, reps: usize, exec: &factz::gpu::exec::Cuda) -> Result<(), String> {
    use factz::particles::{self, Bound, Linking, ParticleConfig};
    let pos = clustered(n);
    let cfg = ParticleConfig {
        bound: Bound::Rel(rel),
        linking: Linking::Eta(particles::DEFAULT_ETA),
        period: Some(1.0),
        ..ParticleConfig::default()
    };
    say(
        "particles backend compress_s correction_s pair_search_s optimise_s iterations same_stream",
    );
    let (tc, cpu) = best(reps, || particles::compress(&pos, &cfg));
    let cpu = cpu.map_err(|e| format!("CPU: {e}"))?;
    let (tg, gpu) = best(reps, || {
        let prepared = particles::prepare(&pos, &cfg)?;
        particles::finish_with(
            &pos,
            &cfg,
            prepared,
            None,
            &factz::gpu::particles::GpuCorrection { exec },
        )
    });
    let gpu = gpu.map_err(|e| format!("GPU correction: {e}"))?;
    let same = if cpu.bytes == gpu.bytes { "yes" } else { "NO" };
    for (name, t, c) in [("cpu", tc, &cpu), ("cuda", tg, &gpu)] {
        let st = &c.report.correction;
        say(&format!(
            "{n} {name} {t:.3} {:.3} {:.3} {:.3} {} {same}",
            st.setup_s + st.optimise_s + st.check_s,
            st.setup_s,
            st.optimise_s,
            st.iterations
        ));
    }
    if same == "NO" {
        return Err(format!(
            "the GPU's particle stream differs from the CPU's ({})",
            first_diff(&cpu.bytes, &gpu.bytes)
        ));
    }
    Ok(())
}

/// Prints a line and flushes it: a time-out or a later crash keeps it.
fn say(line: &str) {
    println!("{line}");
    let _ = std::io::stdout().flush();
}

/// Where two byte streams first differ.
fn first_diff(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(k) => format!("first at byte {k} of {} and {}", a.len(), b.len()),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

/// `f`, with a panic as an error (a case must not stop the others).
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into()))
    })
}

/// One field size's data on the host and the device.
struct Field {
    n: usize,
    u: Vec<f32>,
    v: Vec<f32>,
    du: CudaSlice<f32>,
    dv: CudaSlice<f32>,
    ou: CudaSlice<f32>,
    ov: CudaSlice<f32>,
}

impl Field {
    fn new(n: usize, s: &std::sync::Arc<cudarc::driver::CudaStream>) -> Result<Field, String> {
        let (u, v) = smooth(n);
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA setting up {n}^2: {e:?}");
        Ok(Field {
            du: s.clone_htod(&u).map_err(cuda)?,
            dv: s.clone_htod(&v).map_err(cuda)?,
            ou: s.alloc_zeros(n * n).map_err(cuda)?,
            ov: s.alloc_zeros(n * n).map_err(cuda)?,
            n,
            u,
            v,
        })
    }
}

struct Opts {
    reps: usize,
    cpu_max: usize,
    cpu_reps: usize,
    rel: f64,
}

/// One (size, mode, coder) case: its table rows, then its profile.
fn field_case(
    d: &factz::gpu::exec::Cuda,
    f: &mut Field,
    mode: Mode,
    coder: Coder,
    o: &Opts,
) -> Result<(), String> {
    let s = d.stream.clone();
    let ctx = s.context().clone();
    let n = f.n;
    let gb = (8 * n * n) as f64 / 1e9;
    let cfg = FieldConfig {
        mode,
        coder,
        bound: Bound::Rel(o.rel),
        ..FieldConfig::default()
    };
    let case = format!("{n} {} {}", mode.name(), coder.name());
    let (tc, c) = best(o.reps, || gf::compress(&ctx, &f.du, &f.dv, n, n, &cfg, &s));
    let c = c.map_err(|e| format!("GPU compress: {e}"))?;
    let (td, dec) = best(o.reps, || {
        gf::decompress(&ctx, &c.bytes, &mut f.ou, &mut f.ov, &s)
    });
    dec.map_err(|e| format!("GPU decompress: {e}"))?;
    let ratio = gb * 1e9 / c.bytes.len() as f64;
    let mut problems = Vec::new();
    let same = if n <= o.cpu_max {
        let (cc, cpu) = best(o.cpu_reps, || field::compress(&f.u, &f.v, n, n, &cfg));
        let cpu = cpu.map_err(|e| format!("CPU compress: {e}"))?;
        let (hu, hv) = (&mut vec![0f32; n * n], &mut vec![0f32; n * n]);
        let (cd, r) = best(o.cpu_reps, || field::decompress_into(&cpu.bytes, hu, hv));
        r.map_err(|e| format!("CPU decompress: {e}"))?;
        say(&format!(
            "{case} cpu {:.3} {:.3} {ratio:.2} -",
            gb / cc,
            gb / cd
        ));
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA reading back: {e:?}");
        let back = (
            s.clone_dtoh(&f.ou).map_err(cuda)?,
            s.clone_dtoh(&f.ov).map_err(cuda)?,
        );
        let differ = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count()
        };
        let bad = differ(&back.0, hu) + differ(&back.1, hv);
        if bad > 0 {
            problems.push(format!(
                "the GPU decodes {bad} values differently from the CPU"
            ));
        }
        if cpu.bytes == c.bytes {
            "yes"
        } else {
            problems.push(format!(
                "the GPU stream differs from the CPU's ({})",
                first_diff(&cpu.bytes, &c.bytes)
            ));
            "NO"
        }
    } else {
        "unchecked"
    };
    say(&format!(
        "{case} cuda {:.3} {:.3} {ratio:.2} {same}",
        gb / tc,
        gb / td
    ));
    // One more of each, every launch and copy waited for and timed.
    let timed = Timed::new(d);
    let k = gf::OnExec { exec: &timed };
    // SAFETY: the slices outlive the views, on the shared device's context.
    let views = unsafe { [gf::view(&f.du, &s), gf::view(&f.dv, &s)] };
    compress_on(&k, views, n, n, &cfg).map_err(|e| format!("profiled compress: {e}"))?;
    let encode = timed.take();
    // SAFETY: as above.
    let mut out = unsafe { [gf::view_mut(&mut f.ou, &s), gf::view_mut(&mut f.ov, &s)] };
    decompress_on(&k, &c.bytes, &mut out).map_err(|e| format!("profiled decompress: {e}"))?;
    for (dir, stages) in [("compress", encode), ("decompress", timed.take())] {
        let total: f64 = stages.iter().map(|st| st.seconds).sum();
        for st in stages.iter().take(PROFILE_ROWS) {
            say(&format!(
                "profile {case} {dir} {} {:.3} {} {:.1}",
                st.name.replace(' ', "_"),
                st.seconds * 1e3,
                st.calls,
                100.0 * st.seconds / total.max(f64::MIN_POSITIVE)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--sizes", "4096,16384".to_string())
        .split(',')
        .map(|s| s.parse().expect("--sizes: n,n,..."))
        .collect();
    let o = Opts {
        reps: arg(&args, "--reps", 3),
        cpu_max: arg(&args, "--cpu-max", 4096),
        cpu_reps: arg(&args, "--cpu-reps", 1),
        rel: arg(&args, "--rel", 1e-3),
    };
    let np: usize = arg(&args, "--particles", 4_000_000);
    let prel: f64 = arg(&args, "--prel", 1e-3);
    if let Some(p) = std::env::var_os("FACTZ_NVRTC").filter(|p| !p.is_empty()) {
        if let Err(e) = factz::gpu::preload_nvrtc(std::path::Path::new(&p)) {
            eprintln!("factz-gpu-bench: {e}");
            return std::process::ExitCode::from(2);
        }
    }
    let d = match factz::gpu::exec::shared() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("factz-gpu-bench: no GPU backend: {}", e.message);
            return std::process::ExitCode::from(2);
        }
    };
    let ctx = d.stream.context().clone();
    let loaded = factz::gpu::nvrtc_loaded();
    say(&format!(
        "device {} (compute capability {:?}); kernels built for {}; NVRTC {:?} from {loaded:?}; \
         check mode {}",
        ctx.name().unwrap_or_else(|e| format!("? ({e:?})")),
        ctx.compute_capability().ok(),
        d.arch(),
        factz::gpu::nvrtc_version().ok(),
        factz::gpu::exec::checked()
    ));
    if loaded.len() != 1 {
        say(&format!(
            "WARNING: {} NVRTC libraries mapped (expected one)",
            loaded.len()
        ));
    }
    let mut failed = Vec::new();
    let mut record = |what: String, r: Result<(), String>| {
        if let Err(why) = r {
            say(&format!("{what} FAILED: {why}"));
            failed.push(what);
        }
    };
    say("size mode coder backend compress_GBps decompress_GBps ratio same_stream");
    say("(profile rows: profile size mode coder direction stage ms calls percent; top 8 each)");
    for &n in &sizes {
        let mut f = match guarded(|| Field::new(n, &d.stream)) {
            Ok(f) => f,
            Err(why) => {
                record(format!("{n}"), Err(why));
                continue;
            }
        };
        for mode in [Mode::Blockwise, Mode::Speculative] {
            for coder in [Coder::Huffman, Coder::Rans] {
                let r = guarded(|| field_case(d, &mut f, mode, coder, &o));
                record(format!("{n} {} {}", mode.name(), coder.name()), r);
            }
        }
    }
    if np > 0 {
        let r = guarded(|| particles(np, prel, o.reps, d));
        record(format!("particles {np}"), r);
    }
    if failed.is_empty() {
        say("factz-gpu-bench: every case matched the CPU");
        std::process::ExitCode::SUCCESS
    } else {
        say(&format!("factz-gpu-bench: FAILED: {}", failed.join(", ")));
        std::process::ExitCode::FAILURE
    }
}
