//! Mode B's encoding and decoding kernels (`kernels/mode_b_codec.cu`, issue 6)
//! against the CPU reference, bit for bit, without a GPU: the library's own
//! host code (`gpu::mode_b_codec::CodecKernels`) drives the kernels as host
//! C++ through `kernels/shim` (tests/common/shim_exec.rs; see also
//! tests/gpu_kernels.rs).
//!
//! - The whole pipeline (bound derivation, encode sweep, scan, compaction)
//!   gives `blockwise::encode`'s `Parts` exactly: tile ids, exact mask, raw
//!   words and codes in stream order.
//! - The decode kernels rebuild u and v from CPU parts with the bits of
//!   `blockwise::decode`, also from arbitrary codes, and refuse what it refuses.
//! - A stream written from the kernels' parts is the CPU's stream, byte for
//!   byte, and `field::decompress` reads it.
#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::{self, Field, Rng};
use factz::error::{Error, ErrorKind};
use factz::field::parts::Parts;
use factz::field::{blockwise, Bound, FieldConfig, Mode};
use factz::gpu::mode_b_codec::CodecKernels;
use factz::gpu::parts::DevParts;
use kernels_host::Threads;
use shim_exec::Shim;

/// `blockwise::encode` through the kernels, from the field in place (the
/// device-resident entry point, on host memory).
fn gpu_encode(f: &Field, xi: f64, chunk: bool, threads: Threads) -> Parts {
    // SAFETY: the views are read during this call only.
    let (u, v) = unsafe { (shim_exec::view(&f.u), shim_exec::view(&f.v)) };
    let exec = &Shim { threads };
    CodecKernels { exec }
        .encode_device(u, v, f.ny, f.nx, xi, chunk)
        .and_then(|p| p.read(exec, f.ny * f.nx))
        .unwrap_or_else(|e| panic!("the shim encode failed: {e}"))
}

/// `blockwise::decode` through the kernels, into u and v filled with a
/// pattern so a vertex the kernels skip shows.
fn gpu_decode(
    parts: &Parts,
    ny: usize,
    nx: usize,
    xi: f64,
    threads: Threads,
) -> Result<(Vec<f32>, Vec<f32>), Error> {
    let mut u = vec![f32::from_bits(0x7fc0_dead); ny * nx];
    let mut v = u.clone();
    // SAFETY: the views are used during this call only, while u and v are
    // not otherwise borrowed.
    let (du, dv) = unsafe { (shim_exec::view_mut(&mut u), shim_exec::view_mut(&mut v)) };
    let exec = &Shim { threads };
    let parts = DevParts::upload(exec, parts)?;
    CodecKernels { exec }.decode_device(&parts, ny, nx, xi, du, dv)?;
    Ok((u, v))
}

fn cpu_decode(parts: &Parts, ny: usize, nx: usize, xi: f64) -> (Vec<f32>, Vec<f32>) {
    let (mut u, mut v) = (vec![0.0f32; ny * nx], vec![0.0f32; ny * nx]);
    blockwise::decode(parts, ny, nx, xi, &mut u, &mut v).unwrap();
    (u, v)
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|a| a.to_bits()).collect()
}

/// The first difference between two arrays, for the failure message.
fn first_diff<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("lengths: kernel {}, CPU {}", a.len(), b.len()));
    }
    let k = a.iter().zip(b).position(|(x, y)| x != y)?;
    let n = a.iter().zip(b).filter(|(x, y)| x != y).count();
    Some(format!(
        "{n} differ; first at {k}: kernel {:?}, CPU {:?}",
        a[k], b[k]
    ))
}

fn assert_parts_eq(gpu: &Parts, cpu: &Parts, what: &str) {
    for (name, d) in [
        ("tile ids", first_diff(&gpu.ids, &cpu.ids)),
        ("exact mask", first_diff(&gpu.exact, &cpu.exact)),
        ("raw", first_diff(&gpu.raw, &cpu.raw)),
        ("codes", first_diff(&gpu.codes, &cpu.codes)),
    ] {
        if let Some(d) = d {
            panic!("{what}: {name}: {d}");
        }
    }
}

/// Encode and decode on both sides; returns (coded, exact) vertex counts so
/// callers can check their inputs exercise both.
fn check_with(f: &Field, xi: f64, chunk: bool, threads: Threads) -> (usize, usize) {
    let (ny, nx) = (f.ny, f.nx);
    let what = format!("{} ({ny}x{nx}) xi {xi:e} chunk {chunk} {threads:?}", f.name);
    let cpu = blockwise::encode(&f.u, &f.v, ny, nx, xi, chunk);
    let gpu = gpu_encode(f, xi, chunk, threads);
    assert_parts_eq(&gpu, &cpu, &what);
    let (cu, cv) = cpu_decode(&cpu, ny, nx, xi);
    let (gu, gv) = gpu_decode(&cpu, ny, nx, xi, threads)
        .unwrap_or_else(|e| panic!("{what}: GPU decode of CPU parts failed: {e}"));
    if let Some(d) = first_diff(&bits(&gu), &bits(&cu)) {
        panic!("{what}: decoded u: {d}");
    }
    if let Some(d) = first_diff(&bits(&gv), &bits(&cv)) {
        panic!("{what}: decoded v: {d}");
    }
    // And the other way round (the parts are equal, so this holds by the
    // first assert; kept so a future partial comparison still covers it).
    let (xu, xv) = cpu_decode(&gpu, ny, nx, xi);
    assert!(bits(&xu) == bits(&cu) && bits(&xv) == bits(&cv), "{what}");
    let exact = cpu.exact.iter().filter(|&&e| e).count();
    (ny * nx - exact, exact)
}

fn check(f: &Field, xi: f64, chunk: bool) -> (usize, usize) {
    check_with(f, xi, chunk, Threads::Fibers)
}

/// Relative bounds from loose to far below f32 resolution, plus absolute ones
/// at the extremes (tiny, huge, subnormal, near f64::MAX where 2 eb
/// overflows, and 0).
fn bounds(f: &Field) -> Vec<f64> {
    let r = f.finite_span();
    let mut out: Vec<f64> = [1e-1, 1e-2, 1e-3, 1e-6, 1e-9, 1e-12]
        .iter()
        .map(|t| t * r)
        .filter(|&x| x > 0.0)
        .collect();
    out.extend([1e-30, 1e30, 5e-324, 1e300, f64::MAX, 0.0]);
    out
}

fn sweep(suite: &[Field]) -> (usize, usize) {
    let (mut coded, mut exact) = (0, 0);
    for f in suite {
        for xi in bounds(f) {
            for chunk in [false, true] {
                let (c, e) = check(f, xi, chunk);
                coded += c;
                exact += e;
            }
        }
    }
    (coded, exact)
}

#[test]
fn smooth_fields_of_awkward_shapes_match_the_cpu() {
    let mut shapes = fields::ODD_SHAPES.to_vec();
    shapes.extend([(64, 64), (32, 32), (33, 33), (65, 31), (1, 70), (70, 1)]);
    let suite: Vec<Field> = shapes
        .iter()
        .enumerate()
        .map(|(n, &(ny, nx))| fields::smooth(ny, nx, 60 + n as u64))
        .collect();
    let (coded, exact) = sweep(&suite);
    assert!(
        coded > 10_000 && exact > 1_000,
        "coded {coded}, exact {exact}"
    );
}

#[test]
fn turbulence_matches_the_cpu() {
    let turb = fields::turbulence(128, 3);
    let suite = [
        fields::window(&turb, 5, 70, 77, 45),
        fields::window(&turb, 100, 9, 1, 128),
        fields::window(&turb, 9, 100, 128, 1),
        turb,
    ];
    let (coded, exact) = sweep(&suite);
    assert!(
        coded > 50_000 && exact > 10_000,
        "coded {coded}, exact {exact}"
    );
}

#[test]
fn adversarial_fields_match_the_cpu() {
    let mut suite = fields::adversarial_suite(&fields::smooth(40, 37, 7));
    // Exact vertices on tile edges, and a NaN tile.
    let mut edges = fields::smooth(70, 70, 8);
    for k in 0..70 {
        for (i, j) in [(31, k), (32, k), (k, 63), (k, 64)] {
            edges.u[j * 70 + i] = 0.0;
            edges.v[j * 70 + i] = 0.0;
        }
    }
    suite.push(edges.renamed("zero lines on tile edges"));
    let mut hole = fields::smooth(64, 96, 9);
    for j in 32..64 {
        for i in 32..64 {
            hole.u[j * 96 + i] = f32::NAN;
        }
    }
    suite.push(hole.renamed("a NaN tile"));
    suite.push(fields::integer_field(2, 2, 1, 3));
    suite.push(fields::constant(1, 1, 1.0, 0.0));
    let (coded, exact) = sweep(&suite);
    assert!(
        coded > 10_000 && exact > 10_000,
        "coded {coded}, exact {exact}"
    );
}

#[test]
fn rounding_ties_match_the_cpu() {
    // Values on a grid of 2^-6 around (4, 3): no zero vectors, so most
    // vertices are coded, and Lorenzo residuals are exact multiples of 2^-6.
    // Under xi = 2^-6 (tile id 0) or 2^-4 (id 2) a residual of an odd multiple
    // is exactly half a quantization step (2 eb) from two codes: Rust's
    // f64::round takes the one away from zero, on both signs.
    let mut rng = Rng::new(11);
    let (ny, nx) = (70, 75);
    let mut grid = |base: f32| -> Vec<f32> {
        (0..ny * nx)
            .map(|_| base + rng.below(64) as f32 / 64.0)
            .collect()
    };
    let (u, v) = (grid(4.0), grid(3.0));
    let f = Field::new("2^-6 grid", ny, nx, u, v);
    let mut coded = 0;
    for xi in [1.0 / 64.0, 1.0 / 32.0, 1.0 / 16.0, 1.0 / 8.0] {
        for chunk in [false, true] {
            coded += check(&f, xi, chunk).0;
        }
    }
    assert!(coded > 10_000, "coded {coded}");
}

#[test]
fn os_threads_agree_with_fibers_and_the_cpu() {
    // Every CUDA thread on its own std::thread: true concurrency between the
    // warp barriers of the sweep, and between the scan's block barriers.
    let base = fields::smooth(45, 70, 5);
    let f = fields::nan_mask(&base, 6);
    let (coded, exact) = check_with(&f, 1e-3 * f.finite_span(), false, Threads::Os);
    assert!(coded > 1000 && exact > 10, "coded {coded}, exact {exact}");
}

#[test]
fn decoding_arbitrary_codes_matches_the_cpu() {
    // A decoder sees codes no encoder of this field wrote: any u32 (huge
    // codes overflow to infinities), and non-finite raw values, which predict
    // as 0 for their neighbours.
    let f = fields::turbulence(128, 4);
    let f = fields::window(&f, 3, 5, 90, 77);
    let mut rng = Rng::new(12);
    for xi in [1e-3 * f.finite_span(), 1e-30, 1e300] {
        let mut parts = blockwise::encode(&f.u, &f.v, f.ny, f.nx, xi, false);
        for (n, c) in parts.codes.iter_mut().enumerate() {
            *c = match n % 3 {
                0 => rng.next_u64() as u32,
                1 => (rng.next_u64() % 64) as u32,
                _ => *c,
            };
        }
        for (n, r) in parts.raw.iter_mut().enumerate() {
            if n % 5 == 0 {
                *r = [0x7fc0_0001, 0xff80_0000, 0x0000_0001, 0x8000_0000][n % 4];
            }
        }
        for (n, id) in parts.ids.iter_mut().enumerate() {
            *id = (rng.next_u64() % 24) as u32 * (n % 2) as u32 + *id * ((n + 1) % 2) as u32;
        }
        let (cu, cv) = cpu_decode(&parts, f.ny, f.nx, xi);
        let (gu, gv) = gpu_decode(&parts, f.ny, f.nx, xi, Threads::Fibers).unwrap();
        assert_eq!(first_diff(&bits(&gu), &bits(&cu)), None, "xi {xi:e} u");
        assert_eq!(first_diff(&bits(&gv), &bits(&cv)), None, "xi {xi:e} v");
    }
}

#[test]
fn decode_refuses_what_the_cpu_refuses() {
    let f = fields::smooth(50, 40, 13);
    let xi = 1e-3 * f.finite_span();
    let good = blockwise::encode(&f.u, &f.v, f.ny, f.nx, xi, false);
    assert!(gpu_decode(&good, f.ny, f.nx, xi, Threads::Fibers).is_ok());
    let mut bad_id = good.clone();
    bad_id.ids[3] = 24;
    let mut short_raw = good.clone();
    short_raw.raw.truncate(short_raw.raw.len() - 2);
    let mut long_codes = good.clone();
    long_codes.codes.extend([0, 0]);
    let mut flipped = good.clone();
    let k = flipped.exact.iter().position(|&e| !e).unwrap();
    flipped.exact[k] = true;
    for (name, p) in [
        ("id 24", bad_id),
        ("short raw", short_raw),
        ("long codes", long_codes),
        ("a flipped mask bit", flipped),
    ] {
        let (mut u, mut v) = (vec![0.0; f.ny * f.nx], vec![0.0; f.ny * f.nx]);
        assert!(
            blockwise::decode(&p, f.ny, f.nx, xi, &mut u, &mut v).is_err(),
            "{name}: CPU"
        );
        let err = gpu_decode(&p, f.ny, f.nx, xi, Threads::Fibers).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CorruptStream, "{name}: GPU: {err}");
        // The host-memory entry point, the same.
        let err = CodecKernels {
            exec: &Shim {
                threads: Threads::Fibers,
            },
        }
        .decode(&p, f.ny, f.nx, xi, &mut u, &mut v)
        .unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::CorruptStream,
            "{name}: GPU host: {err}"
        );
    }
}

#[test]
fn streams_from_kernel_parts_are_the_cpus() {
    // The stream layer codes Parts alone, so a stream written from the
    // kernels' parts under the CPU stream's header is that stream, and
    // field::decompress reads it back to the CPU decoder's values.
    let turb = fields::turbulence(128, 3);
    let nan = fields::nan_mask(&fields::smooth(45, 70, 5), 6);
    for f in [fields::window(&turb, 5, 7, 100, 67), nan] {
        for rel in [1e-2, 1e-4] {
            for chunk in [false, true] {
                let cfg = FieldConfig {
                    mode: Mode::Blockwise,
                    bound: Bound::Rel(rel),
                    chunk_of_larger: chunk,
                    ..FieldConfig::default()
                };
                let c = factz::field::compress(&f.u, &f.v, f.ny, f.nx, &cfg).unwrap();
                assert!(!c.report.lossless_fallback);
                let header = factz::format::parse(&c.bytes).unwrap().header;
                let xi = header.abs_bound;
                // The host-memory entry points (upload, encode, download).
                let k = CodecKernels {
                    exec: &Shim {
                        threads: Threads::Fibers,
                    },
                };
                let parts = k.encode(&f.u, &f.v, f.ny, f.nx, xi, chunk).unwrap();
                let bytes = factz::field::stream::write(&header, &parts, cfg.coder, cfg.zstd_level)
                    .unwrap();
                assert!(bytes == c.bytes, "{} rel {rel} chunk {chunk}", f.name);
                let d = factz::field::decompress(&bytes).unwrap();
                let (cu, cv) = cpu_decode(&parts, f.ny, f.nx, xi);
                assert_eq!(bits(&d.u), bits(&cu));
                assert_eq!(bits(&d.v), bits(&cv));
                let (mut gu, mut gv) = (vec![0f32; f.ny * f.nx], vec![0f32; f.ny * f.nx]);
                k.decode(&parts, f.ny, f.nx, xi, &mut gu, &mut gv).unwrap();
                assert_eq!(bits(&gu), bits(&cu));
                assert_eq!(bits(&gv), bits(&cv));
            }
        }
    }
}

/// The CUDA runtime side (feature `cuda`): cudarc's NVRTC path in CI, and (on
/// a GPU machine, `scripts/gpu-check`) the device against the CPU.
mod cuda {
    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU: scripts/gpu-check"]
    fn device_codec_matches_the_cpu() {
        let cuda = nvrtc::device();
        let k = CodecKernels { exec: &cuda };
        let turb = fields::turbulence(512, 3);
        let mut suite = fields::adversarial_suite(&fields::window(&turb, 0, 0, 40, 37));
        suite.push(turb.clone());
        suite.push(fields::window(&turb, 7, 300, 1000, 333));
        suite.push(fields::window(&turb, 100, 9, 1, 500));
        suite.push(fields::window(&turb, 9, 100, 500, 1));
        for &(ny, nx) in fields::ODD_SHAPES {
            suite.push(fields::smooth(ny, nx, 1));
        }
        let (mut coded, mut exact) = (0, 0);
        for f in &suite {
            let (ny, nx) = (f.ny, f.nx);
            for xi in bounds(f) {
                for chunk in [false, true] {
                    let what = format!("{} ({ny}x{nx}) xi {xi:e} chunk {chunk}", f.name);
                    let cpu = blockwise::encode(&f.u, &f.v, ny, nx, xi, chunk);
                    let dev = k.encode(&f.u, &f.v, ny, nx, xi, chunk).unwrap();
                    assert_parts_eq(&dev, &cpu, &what);
                    let (cu, cv) = cpu_decode(&cpu, ny, nx, xi);
                    let (mut du, mut dv) = (vec![0.0; ny * nx], vec![0.0; ny * nx]);
                    k.decode(&cpu, ny, nx, xi, &mut du, &mut dv).unwrap();
                    assert_eq!(first_diff(&bits(&du), &bits(&cu)), None, "{what}: u");
                    assert_eq!(first_diff(&bits(&dv), &bits(&cv)), None, "{what}: v");
                    let e = cpu.exact.iter().filter(|&&e| e).count();
                    coded += ny * nx - e;
                    exact += e;
                }
            }
        }
        assert!(
            coded > 100_000 && exact > 10_000,
            "coded {coded}, exact {exact}"
        );
        // The device decoder refuses what the CPU refuses.
        let f = fields::smooth(50, 40, 13);
        let mut p = blockwise::encode(&f.u, &f.v, f.ny, f.nx, 1e-3, false);
        p.codes.extend([0, 0]);
        let (mut u, mut v) = (vec![0.0; 2000], vec![0.0; 2000]);
        let err = k.decode(&p, 50, 40, 1e-3, &mut u, &mut v).unwrap_err();
        assert_eq!(err.kind, factz::ErrorKind::CorruptStream);
    }
}
