//! The GPU kernels without a GPU (issue 6, CI side):
//!
//! - every `kernels/*.cu` compiles under NVRTC (from the `nvidia-cuda-nvrtc-cu12`
//!   wheel) at explicit architectures with `--fmad=false`, and the PTX leaves
//!   nothing for ptxas to fuse into an fma (ARCHITECTURE.md, "Bit-identical
//!   rule");
//! - the kernels' logic, compiled as host C++ through `kernels/shim` (every
//!   block's threads really concurrent) and driven by the library's own host
//!   code (`gpu::mode_b` over tests/common/shim_exec.rs), gives the CPU
//!   reference's outputs bit for bit: mode B's per-vertex bound ids, its
//!   per-tile ids as written by `blockwise::encode`, and the forced / exact
//!   vertex masks (feature `cuda`, which holds that host code).
//!
//! Under `CI=true` a missing NVRTC fails the NVRTC test; elsewhere it skips
//! with the reason.

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[cfg(feature = "cuda")]
#[path = "common/shim_exec.rs"]
mod shim_exec;

#[cfg(feature = "cuda")]
use common::fields::{self, Field};
#[cfg(feature = "cuda")]
use factz::field::{forced::forced_vertices, gpu_ref};
#[cfg(feature = "cuda")]
use factz::gpu::mode_b::{BoundKernels, BoundOut, ModeBIds};
#[cfg(feature = "cuda")]
use kernels_host::Threads;
#[cfg(feature = "cuda")]
use shim_exec::Shim;
use std::collections::BTreeSet;

/// Every kernel file and the entry points it must export (unmangled).
const KERNELS: &[(&str, &[&str])] = &[
    (
        "field_reduce.cu",
        &[
            "factz_f_range",
            "factz_f_pack_flags",
            "factz_f_unpack_flags",
            "factz_f_count_bits",
            "factz_f_widen",
            "factz_f_narrow",
            "factz_f_to_planes",
            "factz_f_from_planes",
        ],
    ),
    (
        "huffman.cu",
        &[
            "factz_h_max",
            "factz_h_histogram",
            "factz_h_merge",
            "factz_h_histogram_global",
            "factz_h_block_bits",
            "factz_h_offsets",
            "factz_h_pack",
            "factz_h_gather",
            "factz_h_decode",
            "factz_h_fill",
        ],
    ),
    ("mode_b_bounds.cu", &["factz_b_bound_ids"]),
    (
        "mode_b_codec.cu",
        &[
            "factz_b_encode",
            "factz_b_mask_counts",
            "factz_b_compact",
            "factz_b_decode",
            "factz_b_mask_bytes",
            "factz_b_mask_words",
        ],
    ),
    (
        "mode_s.cu",
        &[
            "factz_s_classify",
            "factz_s_forced",
            "factz_s_anchors",
            "factz_s_phase",
            "factz_s_apply",
            "factz_s_decode_anchors",
            "factz_s_decode_phase",
            "factz_s_order_exact",
            "factz_s_assemble",
            "factz_s_slots",
        ],
    ),
    (
        "particles.cu",
        &[
            "factz_p_bbox",
            "factz_p_cell_keys",
            "factz_p_compact_finite",
            "factz_p_radix_count",
            "factz_p_radix_scatter",
            "factz_p_cell_heads",
            "factz_p_cells",
            "factz_p_cell_units",
            "factz_p_pair_count",
            "factz_p_pair_fill",
            "factz_p_edit_flags",
            "factz_p_edit_scatter",
        ],
    ),
    (
        "rans.cu",
        &["factz_r_fill", "factz_r_decode", "factz_r_sparse"],
    ),
    (
        "scan.cu",
        &[
            "factz_scan_sums_u32",
            "factz_scan_apply_u32",
            "factz_scan_sums_u64",
            "factz_scan_apply_u64",
            "factz_scan_carry",
        ],
    ),
];

/// Virtual architecture (PTX) and a real one (CUBIN, the H200's sm_90).
const ARCHES: &[&str] = &["compute_80", "sm_90"];

#[test]
fn every_kernel_compiles_under_nvrtc_without_fma() {
    let nv = match nvrtc::Nvrtc::load() {
        Ok(nv) => nv,
        Err(why) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping the NVRTC compile test: {why}");
            return;
        }
        Err(why) => panic!("CI=true and NVRTC is missing: {why}"),
    };
    eprintln!("NVRTC {:?}", nv.version());
    let files: BTreeSet<String> = kernels_host::kernel_sources()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = KERNELS.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(files, listed, "kernels/*.cu and this test's KERNELS table");
    for &(file, entries) in KERNELS {
        let source = std::fs::read_to_string(kernels_host::kernels_dir().join(file)).unwrap();
        assert!(
            !source
                .lines()
                .any(|l| l.trim_start().starts_with("#include")),
            "{file} must stay #include-free"
        );
        for arch in ARCHES {
            let opts = [
                &format!("--gpu-architecture={arch}") as &str,
                "--fmad=false",
            ];
            let out = nv
                .compile_kernel(&source, file, &opts)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                !out.log.contains("warning"),
                "{file} {arch} warns:\n{}",
                out.log
            );
            let ptx = out.ptx.unwrap_or_else(|| panic!("{file} {arch}: no PTX"));
            for entry in entries {
                assert!(
                    ptx.contains(&format!(".entry {entry}(")),
                    "{file} {arch}: no entry point {entry}"
                );
            }
            let loose = contractible(&ptx);
            assert!(loose.is_empty(), "{file} {arch}: contractible: {loose:?}");
            if arch.starts_with("sm_") {
                let cubin = out
                    .cubin
                    .unwrap_or_else(|| panic!("{file} {arch}: no CUBIN"));
                assert_eq!(&cubin[..4], b"\x7fELF", "{file} {arch}: CUBIN is not ELF");
            }
        }
    }
    // The check can fail: without --fmad=false a product feeding a difference
    // (the pattern of m_k = u_a v_b - u_b v_a) is left for ptxas to fuse.
    let probe = "extern \"C\" __global__ void probe(double* x) { x[0] = x[1] * x[2] - x[3]; }";
    let ptx = |opts: &[&str]| nv.compile(probe, "probe.cu", opts).unwrap().ptx.unwrap();
    assert!(!contractible(&ptx(&["--gpu-architecture=compute_80"])).is_empty());
    assert!(contractible(&ptx(&["--gpu-architecture=compute_80", "--fmad=false"])).is_empty());
}

/// Floating-point instructions of a PTX listing that ptxas may fuse into an
/// fma: add/sub/mul without an explicit rounding mode, and fma/mad themselves.
/// `--fmad=false` makes NVRTC write `.rn` on every one, which forbids fusing.
fn contractible(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| op.ends_with(".f32") || op.ends_with(".f64"))
        .filter(|op| {
            let base = op.split('.').next().unwrap_or("");
            matches!(base, "fma" | "mad")
                || (matches!(base, "add" | "sub" | "mul") && !op.contains(".rn"))
        })
        .map(str::to_string)
        .collect()
}

/// The first difference between two id arrays, for the failure message.
#[cfg(feature = "cuda")]
fn first_diff<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T]) -> Option<String> {
    assert_eq!(a.len(), b.len());
    let k = a.iter().zip(b).position(|(x, y)| x != y)?;
    let n = a.iter().zip(b).filter(|(x, y)| x != y).count();
    Some(format!(
        "{n} differ; first at {k}: kernel {:?}, CPU {:?}",
        a[k], b[k]
    ))
}

/// The forced / exact masks the CPU reference implies, in the kernel's layout.
#[cfg(feature = "cuda")]
fn masks(f: &Field, forced: &[bool], ids: &[[u8; 2]]) -> (Vec<u32>, Vec<u32>) {
    let tiles_x = f.nx.div_ceil(32);
    let mut fm = vec![0u32; f.ny * tiles_x];
    let mut em = vec![0u32; f.ny * tiles_x];
    for j in 0..f.ny {
        for i in 0..f.nx {
            let (w, bit) = (j * tiles_x + i / 32, 1u32 << (i % 32));
            if forced[j * f.nx + i] {
                fm[w] |= bit;
            }
            if ids[j * f.nx + i][0] == u8::MAX {
                em[w] |= bit;
            }
        }
    }
    (fm, em)
}

/// Runs the shimmed kernel and the CPU on one field and bound; returns how many
/// vertices were coded (not exact), so callers can check the inputs exercise both.
#[cfg(feature = "cuda")]
fn check(f: &Field, xi: f64, chunk: bool) -> usize {
    check_with(f, xi, chunk, Threads::Fibers)
}

#[cfg(feature = "cuda")]
fn check_with(f: &Field, xi: f64, chunk: bool, threads: Threads) -> usize {
    compare(f, xi, chunk, &format!("{threads:?}"), |f, xi, chunk| {
        shim_ids(f, xi, chunk, threads)
    })
}

/// The library's host code (`gpu::mode_b::BoundKernels`) over the shim, into
/// outputs filled with a value the kernel never writes, so a vertex it skips
/// shows.
#[cfg(feature = "cuda")]
fn shim_ids(f: &Field, xi: f64, chunk: bool, threads: Threads) -> ModeBIds {
    let (ny, nx) = (f.ny, f.nx);
    let tiles_x = nx.div_ceil(32);
    let tiles = tiles_x * ny.div_ceil(32);
    let mut vertex = vec![[0xAAu8; 2]; ny * nx];
    let mut tile = vec![[0xAAu8; 2]; tiles];
    let mut forced_mask = vec![0xDEAD_BEEFu32; ny * tiles_x];
    let mut exact_mask = vec![0xDEAD_BEEFu32; ny * tiles_x];
    // SAFETY: the views are used only in this call, and the vectors are not
    // touched until it returns.
    let (u, v, out) = unsafe {
        (
            shim_exec::view(&f.u),
            shim_exec::view(&f.v),
            BoundOut {
                vertex: shim_exec::view_mut(vertex.as_flattened_mut()),
                tile: shim_exec::view_mut(tile.as_flattened_mut()),
                forced_mask: shim_exec::view_mut(&mut forced_mask),
                exact_mask: shim_exec::view_mut(&mut exact_mask),
            },
        )
    };
    BoundKernels {
        exec: &Shim { threads },
    }
    .derive(u, v, ny, nx, xi, chunk, &out)
    .unwrap_or_else(|e| panic!("{e}"));
    ModeBIds {
        vertex,
        tile,
        forced_mask,
        exact_mask,
    }
}

/// Compares what `run` (a kernel, on the host or a device) computes with the
/// CPU reference, byte for byte.
#[cfg(feature = "cuda")]
fn compare(
    f: &Field,
    xi: f64,
    chunk: bool,
    how: &str,
    run: impl Fn(&Field, f64, bool) -> ModeBIds,
) -> usize {
    let (ids, tiles) = gpu_ref::mode_b_ids(&f.u, &f.v, f.ny, f.nx, xi, chunk);
    let forced = forced_vertices(&f.u, &f.v, f.ny, f.nx, chunk);
    let (fm, em) = masks(f, &forced, &ids);
    let k = run(f, xi, chunk);
    let what = format!(
        "{} ({}x{}) xi {xi:e} chunk {chunk} {how}",
        f.name, f.ny, f.nx
    );
    if let Some(d) = first_diff(&k.vertex, &ids) {
        panic!("{what}: vertex ids: {d}");
    }
    if let Some(d) = first_diff(&k.tile, &tiles) {
        panic!("{what}: tile ids: {d}");
    }
    if let Some(d) = first_diff(&k.forced_mask, &fm) {
        panic!("{what}: forced mask: {d}");
    }
    if let Some(d) = first_diff(&k.exact_mask, &em) {
        panic!("{what}: exact mask: {d}");
    }
    ids.iter().filter(|id| id[0] != u8::MAX).count()
}

/// Relative bounds from loose to far below f32 resolution, plus absolute ones
/// at the extremes (tiny, huge, subnormal, and 0 as a relative bound gives for
/// a field without finite values).
#[cfg(feature = "cuda")]
fn bounds(f: &Field) -> Vec<f64> {
    let r = f.finite_span();
    let mut out: Vec<f64> = [1e-1, 1e-3, 1e-6, 1e-12]
        .iter()
        .map(|t| t * r)
        .filter(|&x| x > 0.0)
        .collect();
    out.extend([1e-30, 1e30, 5e-324, 1e300, 0.0]);
    out
}

/// The grid scan (kernels/scan.cu) against a host prefix sum: sizes around
/// its 1024-item blocks and its 256-block carry chunks, u32 and u64 inputs
/// (u64 also in place), with fibers and OS threads.
#[cfg(feature = "cuda")]
#[test]
fn the_grid_scan_is_the_prefix_sum() {
    use factz::gpu::scan;
    let mut rng = common::fields::Rng::new(11);
    let sizes = [
        0,
        1,
        2,
        255,
        1023,
        1024,
        1025,
        4097,
        256 * 1024 + 3,
        300_001,
    ];
    for (k, &n) in sizes.iter().enumerate() {
        let threads = if k % 3 == 1 && n < 5000 {
            Threads::Os
        } else {
            Threads::Fibers
        };
        let e = Shim { threads };
        // Large counts in the u64 case so sums pass 2^32.
        let small: Vec<u32> = (0..n).map(|_| rng.below(3) as u32).collect();
        let big: Vec<u64> = (0..n).map(|_| rng.next_u64() >> 20).collect();
        let want = |x: &[u64]| -> Vec<u64> {
            let mut acc = 0u64;
            let mut out: Vec<u64> = x
                .iter()
                .map(|&c| {
                    acc += c;
                    acc - c
                })
                .collect();
            out.push(acc);
            out
        };
        let small64: Vec<u64> = small.iter().map(|&c| c.into()).collect();
        let mut out = vec![u64::MAX; n + 1];
        // SAFETY: the views are used during the call only.
        let total = unsafe {
            scan::exclusive_into(
                &e,
                shim_exec::view(&small),
                n,
                shim_exec::view_mut(&mut out),
            )
        }
        .unwrap();
        assert_eq!(out, want(&small64), "u32, n {n}");
        assert_eq!(total, out[n]);
        let mut inplace = big.clone();
        inplace.push(u64::MAX);
        // SAFETY: as above; in place is allowed for u64.
        let v = unsafe { shim_exec::view_mut(&mut inplace) };
        scan::exclusive_into(&e, v, n, v).unwrap();
        assert_eq!(inplace, want(&big), "u64 in place, n {n}");
    }
    // Arrays too short are an error, not a wild write.
    let e = Shim {
        threads: Threads::Fibers,
    };
    let (a, mut b) = (vec![1u32; 4], vec![0u64; 4]);
    // SAFETY: as above.
    let r =
        unsafe { scan::exclusive_into(&e, shim_exec::view(&a), 4, shim_exec::view_mut(&mut b)) };
    assert!(r.is_err());
}

#[cfg(feature = "cuda")]
#[test]
fn os_threads_agree_with_fibers_and_the_cpu() {
    // The same kernel with every CUDA thread on its own std::thread (true
    // concurrency between barriers) on fields with special values.
    let base = fields::smooth(45, 70, 5);
    for f in [fields::nan_mask(&base, 6), fields::zero_patches(&base, 7)] {
        let xi = 1e-3 * f.finite_span();
        assert!(check_with(&f, xi, false, Threads::Os) > 1000);
        assert!(check_with(&f, xi, true, Threads::Os) > 1000);
    }
}

#[cfg(feature = "cuda")]
#[test]
fn smooth_fields_of_awkward_shapes_match_the_cpu() {
    let mut coded = 0;
    let mut shapes = fields::ODD_SHAPES.to_vec();
    shapes.extend([(64, 64), (32, 32), (33, 33), (65, 31)]);
    for (n, &(ny, nx)) in shapes.iter().enumerate() {
        let f = fields::smooth(ny, nx, 40 + n as u64);
        for xi in bounds(&f) {
            for chunk in [false, true] {
                coded += check(&f, xi, chunk);
            }
        }
    }
    assert!(coded > 10_000, "the inputs code too few vertices: {coded}");
}

#[cfg(feature = "cuda")]
#[test]
fn turbulence_matches_the_cpu() {
    let turb = fields::turbulence(128, 3);
    let mut coded = 0;
    for f in [
        turb.clone(),
        fields::window(&turb, 5, 70, 77, 45),
        fields::window(&turb, 100, 9, 1, 128),
        fields::window(&turb, 9, 100, 128, 1),
    ] {
        for xi in bounds(&f) {
            for chunk in [false, true] {
                coded += check(&f, xi, chunk);
            }
        }
    }
    assert!(coded > 50_000, "the inputs code too few vertices: {coded}");
}

#[cfg(feature = "cuda")]
#[test]
fn adversarial_fields_match_the_cpu() {
    let base = fields::smooth(40, 37, 7);
    let mut suite = fields::adversarial_suite(&base);
    // Patterns that stress the tile histogram and masks: a field whose exact
    // vertices sit on tile edges, and one where a tile is entirely NaN.
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
    let (mut coded, mut exact) = (0, 0);
    for f in &suite {
        for xi in bounds(f) {
            for chunk in [false, true] {
                let c = check(f, xi, chunk);
                coded += c;
                exact += f.ny * f.nx - c;
            }
        }
    }
    assert!(
        coded > 10_000 && exact > 10_000,
        "coded {coded}, exact {exact}"
    );
}

/// The CUDA runtime side (feature `cuda`): detection, cudarc's NVRTC path, and
/// (on a GPU machine, `scripts/gpu-check`) the device against the CPU.
#[cfg(feature = "cuda")]
mod cuda {
    use super::*;
    use factz::gpu;

    /// No driver: an Unsupported error that says so (which `Auto` reports as
    /// why the CPU ran, and `Cuda` returns).
    #[test]
    fn no_driver_is_a_clear_unsupported_error() {
        // SAFETY: only tries to dlopen libcuda.
        let driver = unsafe { cudarc::driver::sys::is_culib_present() };
        match gpu::device() {
            Ok(_) => assert!(driver),
            Err(e) => {
                assert_eq!(e.kind, factz::ErrorKind::Unsupported);
                if !driver {
                    assert!(e.to_string().contains("no CUDA driver"), "{e}");
                }
            }
        }
    }

    /// The library's own compile path (`gpu::compile`, as every module and
    /// `exec::Cuda::all` use it) on every source `exec::sources()` loads, for
    /// the fallback PTX and for the real architectures of an A100 and an
    /// H200 (what `exec::Cuda::new` picks on them): every kernel of the
    /// KERNELS table in the PTX, nothing contractible, and for `sm_XY` a
    /// CUBIN whose ELF header names that SM (so the driver runs no JIT).
    #[test]
    fn cudarc_compiles_every_source_the_library_loads() {
        if !nvrtc::preloaded_or_skip() {
            return;
        }
        let sources = gpu::exec::sources();
        let names: BTreeSet<String> = sources.iter().map(|(_, n)| n.to_string()).collect();
        let listed: BTreeSet<String> = KERNELS.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(names, listed, "exec::sources() and the KERNELS table");
        for arch in [gpu::FALLBACK_ARCH, "sm_80", "sm_90"] {
            for (text, name) in &sources {
                let (text, name) = (text.as_str(), *name);
                let c = gpu::compile(text, name, arch).unwrap();
                let entries = KERNELS.iter().find(|(f, _)| *f == name).unwrap().1;
                for entry in entries {
                    assert!(
                        c.ptx.contains(&format!(".entry {entry}(")),
                        "{name}: {entry}"
                    );
                }
                let loose = contractible(&c.ptx);
                assert!(loose.is_empty(), "{name} {arch}: contractible: {loose:?}");
                match arch.strip_prefix("sm_") {
                    Some(sm) => {
                        let cubin = c.cubin.unwrap_or_else(|| panic!("{name} {arch}: no CUBIN"));
                        assert_eq!(&cubin[..4], b"\x7fELF", "{name} {arch}: not ELF");
                        // ELF64 e_flags (offset 48): the SM in its low byte.
                        let flags = u32::from_le_bytes(cubin[48..52].try_into().unwrap());
                        assert_eq!(
                            (flags & 0xff).to_string(),
                            sm,
                            "{name} {arch}: e_flags {flags:#x}"
                        );
                    }
                    None => assert!(c.cubin.is_none(), "{name}: CUBIN for a virtual arch"),
                }
            }
        }
        // A compile error is an error, not a panic (Auto falls back on it).
        let e = gpu::compile("this is not CUDA", "bad.cu", "sm_90").unwrap_err();
        assert!(
            e.message.contains("bad.cu") && e.message.contains("sm_90"),
            "{e}"
        );
    }

    /// This NVRTC (12.4) knows the A100's and H200's architectures, so
    /// `exec::Cuda::new` compiles CUBINs for them.
    #[test]
    fn nvrtc_knows_sm_80_and_sm_90() {
        if !nvrtc::preloaded_or_skip() {
            return;
        }
        let archs = gpu::nvrtc_archs().unwrap();
        assert!(archs.contains(&80) && archs.contains(&90), "{archs:?}");
        assert_eq!(gpu::target_arch((9, 0), &archs), "sm_90");
        eprintln!("NVRTC {:?}: {archs:?}", gpu::nvrtc_version().unwrap());
    }

    /// cudarc dlopens `libnvrtc.so` before `libnvrtc.so.12`: the NVRTC it
    /// uses is the one `FACTZ_NVRTC` / the wheel names, and no other is
    /// mapped (scripts/gpu-check links `libnvrtc.so` to the pack's).
    #[test]
    fn the_preloaded_nvrtc_is_the_only_one_loaded() {
        if !nvrtc::preloaded_or_skip() {
            return;
        }
        gpu::nvrtc_version().unwrap();
        let want = std::fs::canonicalize(nvrtc::locate().unwrap()).unwrap();
        let loaded: Vec<_> = gpu::nvrtc_loaded()
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap())
            .collect();
        assert_eq!(loaded, [want], "NVRTC mapped into the process");
    }

    /// A `libnvrtc.so` that is not NVRTC (cudarc dlopens that name first)
    /// is an NVRTC failure: `gpu::compile` returns an error (cudarc panics
    /// on the missing symbols) and `Auto` takes the CPU with it as the
    /// reason, `Cuda` fails with it. Runs in a child process whose library
    /// path starts with such a library, built here with the C compiler.
    #[test]
    fn a_library_that_is_not_nvrtc_is_an_error_auto_falls_back_on() {
        use factz::backend::{resolve, Backend, Resolved};
        const CHILD: &str = "FACTZ_TEST_NOT_NVRTC_CHILD";
        if std::env::var_os(CHILD).is_some() {
            assert!(
                gpu::nvrtc_present(),
                "the fake libnvrtc.so is not on the path"
            );
            let setup = || gpu::compile("extern \"C\" __global__ void k() {}", "k.cu", "sm_90");
            let e = setup().unwrap_err();
            assert!(e.message.contains("NVRTC"), "{e}");
            match resolve(Backend::Auto, setup).unwrap() {
                Resolved::Cpu(Some(why)) => assert!(why.contains("NVRTC"), "{why}"),
                r => panic!("Auto: {r:?}"),
            }
            assert!(resolve(Backend::Cuda, setup).is_err());
            println!("child checks passed");
            return;
        }
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("not_nvrtc");
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("not_nvrtc.c");
        std::fs::write(&src, "int not_nvrtc(void) { return 0; }\n").unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = std::process::Command::new(&cc)
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join("libnvrtc.so"))
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
        assert!(built.success(), "{cc} failed");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "cuda::a_library_that_is_not_nvrtc_is_an_error_auto_falls_back_on",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("LD_LIBRARY_PATH", &dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("child checks passed"),
            "child: {}\n{text}",
            out.status
        );
    }

    #[test]
    #[ignore = "needs a CUDA GPU: scripts/gpu-check"]
    fn device_ids_match_the_cpu() {
        let cuda = nvrtc::device();
        let kernel = BoundKernels { exec: &cuda };
        let run = |f: &Field, xi: f64, chunk: bool| {
            kernel.run(&f.u, &f.v, f.ny, f.nx, xi, chunk).unwrap()
        };
        let turb = fields::turbulence(512, 3);
        let mut suite = fields::adversarial_suite(&fields::window(&turb, 0, 0, 40, 37));
        suite.push(turb.clone());
        suite.push(fields::window(&turb, 7, 300, 1000, 333));
        for &(ny, nx) in fields::ODD_SHAPES {
            suite.push(fields::smooth(ny, nx, 1));
        }
        let mut coded = 0;
        for f in &suite {
            for xi in bounds(f) {
                for chunk in [false, true] {
                    coded += compare(f, xi, chunk, "device", run);
                }
            }
        }
        assert!(coded > 100_000, "coded {coded}");
    }
}
