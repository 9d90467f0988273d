//! The GPU kernels without a GPU (issue 6, CI side):
//!
//! - every `kernels/*.cu` compiles under NVRTC (from the `nvidia-cuda-nvrtc-cu12`
//!   wheel) at explicit architectures with `--fmad=false`, and the PTX leaves
//!   nothing for ptxas to fuse into an fma (ARCHITECTURE.md, "Bit-identical
//!   rule");
//! - the kernels' logic, compiled as host C++ through `kernels/shim` (every
//!   block's threads really concurrent) and driven by the library's own host
//!   code (`gpu::mode_b_bounds` over tests/common/shim_exec.rs), gives the CPU
//!   reference's outputs bit for bit: mode B's per-vertex bound ids, its
//!   per-tile ids as written by `blockwise::encode`, and the forced / exact
//!   vertex masks (feature `cuda`, which holds that host code);
//! - every kernel is declared once in Rust (`factz::gpu::launch`) with the
//!   parameter types of its C++ definition, as the host build reads them.
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
use factz::field::{blockwise, forced::forced_vertices};
#[cfg(feature = "cuda")]
use factz::gpu::mode_b_bounds::{BoundKernels, BoundOut, ModeBIds};
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
            "factz_h_sizes",
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
    (
        "zero_runs.cu",
        &[
            "factz_z_flags",
            "factz_z_split",
            "factz_z_runs",
            "factz_z_tokens",
            "factz_z_pack",
            "factz_z_widths",
            "factz_z_unpack",
            "factz_z_place",
        ],
    ),
];

/// Virtual architecture (PTX) and a real one (CUBIN, the H200's sm_90).
const ARCHES: &[&str] = &["compute_80", "sm_90"];

#[cfg(feature = "cuda")]
/// The oracle of the GPU's mode B bound derivation: the per-vertex bound ids
/// (`[u, v]`, 255 = stored exactly) as `blockwise::vertex_ids` computes them,
/// and the per-tile ids (`[u, v]` per 32x32 tile, tiles in row-major order)
/// exactly as `blockwise::encode` writes them into the stream.
fn mode_b_ids(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    xi: f64,
    chunk_of_larger: bool,
) -> (Vec<[u8; 2]>, Vec<[u8; 2]>) {
    let forced = forced_vertices(u, v, ny, nx, chunk_of_larger);
    let vertex = blockwise::vertex_ids(u, v, ny, nx, xi, &forced);
    let parts = blockwise::encode(u, v, ny, nx, xi, chunk_of_larger);
    let tile = parts
        .ids
        .chunks_exact(2)
        .map(|c| {
            let id = |x: u32| u8::try_from(x).expect("tile ids are below NUM_IDS");
            [id(c[0]), id(c[1])]
        })
        .collect();
    (vertex, tile)
}

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

/// The `#define NAME value` lines of a C text.
fn defines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("#define "))
        .filter_map(|d| {
            let mut w = d.split_whitespace();
            Some((w.next()?.to_string(), w.next().unwrap_or("").to_string()))
        })
        .collect()
}

/// Issue 19: the constants Rust defines reach the kernels only through the
/// generated prelude. Its defines carry the Rust values, and no kernel file
/// (nor common.cuh) retypes one: neither the prelude's name nor a per-file
/// copy of it (`FZ_TILE`, `FZC_EXACT`, `FZS_RADIUS`, `FZR_L` for
/// `FZK_RANS_L`, ...: any `#define FZ<x>_<NAME>` whose NAME is a prelude
/// name's suffix).
#[test]
fn kernel_constants_come_from_rust_only() {
    use factz::field::{blockwise, quantize, safe_bound, speculative};
    // The generated block: the prelude less common.cuh (whose own defines,
    // such as FZK_FULL_WARP, are CUDA's, not Rust's).
    let prelude = factz::kernels::prelude();
    let generated = prelude.strip_suffix(factz::kernels::COMMON).unwrap();
    let emitted: std::collections::BTreeMap<String, String> =
        defines(generated).into_iter().collect();
    let num = |name: &str| -> f64 {
        let v = emitted
            .get(name)
            .unwrap_or_else(|| panic!("the prelude lacks {name}"));
        let v = v.trim_end_matches(['u', 'l', 'L']);
        match v.strip_prefix("0x") {
            // C hexadecimal floats: 0x1p-52, 0x1.8p0.
            Some(h) => {
                let (m, e) = h.split_once('p').unwrap();
                let (int, frac) = m.split_once('.').unwrap_or((m, ""));
                let mut x = u64::from_str_radix(int, 16).unwrap() as f64;
                for (k, d) in frac.chars().enumerate() {
                    x += d.to_digit(16).unwrap() as f64 * 16f64.powi(-(k as i32) - 1);
                }
                x * 2f64.powi(e.parse().unwrap())
            }
            None => v.parse().unwrap_or_else(|e| panic!("{name} = {v}: {e}")),
        }
    };
    use factz::codec::gpu_host::{huffman as huff, rans};
    use factz::codec::zero_runs;
    use factz::kernels as k;
    use factz::particles::correct;
    let want: [(&str, f64); 38] = [
        ("FZK_TILE", blockwise::TILE as f64),
        ("FZK_NUM_IDS", quantize::NUM_IDS as f64),
        ("FZK_EXACT", blockwise::EXACT as f64),
        ("FZK_RADIUS", quantize::RADIUS as f64),
        ("FZK_STRIDE", speculative::STRIDE as f64),
        ("FZK_EPS", f64::EPSILON),
        ("FZK_MARGIN", safe_bound::MARGIN),
        ("FZK_CODED_BITS", blockwise::CODED_BITS as f64),
        ("FZK_EXACT_BITS", blockwise::EXACT_BITS as f64),
        ("FZK_RANS_PROB_BITS", rans::PROB_BITS as f64),
        ("FZK_RANS_L", rans::RANS_L as f64),
        ("FZK_HUFF_MAX_LEN", huff::MAX_LEN as f64),
        ("FZK_ZR_DIRECT", zero_runs::DIRECT as f64),
        ("FZK_ZR_MAX_TOKEN", zero_runs::MAX_TOKEN as f64),
        ("FZK_RANS_OK", rans::status::OK as f64),
        ("FZK_RANS_HEADER", rans::status::HEADER as f64),
        ("FZK_RANS_INITIAL", rans::status::INITIAL as f64),
        ("FZK_RANS_TRUNCATED", rans::status::TRUNCATED as f64),
        ("FZK_RANS_TRAILING", rans::status::TRAILING as f64),
        ("FZK_RANS_FINAL", rans::status::FINAL as f64),
        ("FZK_HUFF_OK", huff::status::OK as f64),
        ("FZK_HUFF_OVERRUN", huff::status::OVERRUN as f64),
        ("FZK_HUFF_TRAILING", huff::status::TRAILING as f64),
        ("FZK_HUFF_PADDING", huff::status::PADDING as f64),
        ("FZK_HUFF_INVALID", huff::status::INVALID as f64),
        ("FZK_FIELD_REDUCE_BLOCK", k::FIELD_REDUCE_BLOCK as f64),
        ("FZK_HUFFMAN_BLOCK", k::HUFFMAN_BLOCK as f64),
        ("FZK_HUFFMAN_SHARED_BINS", k::HUFFMAN_SHARED_BINS as f64),
        ("FZK_SCAN_BLOCK", k::SCAN_BLOCK as f64),
        ("FZK_SCAN_PER_THREAD", k::SCAN_PER_THREAD as f64),
        (
            "FZK_MODE_B_BOUNDS_THREADS",
            (k::MODE_B_BOUNDS_BLOCK[0] * k::MODE_B_BOUNDS_BLOCK[1]) as f64,
        ),
        ("FZK_MODE_B_CODEC_TILES", k::MODE_B_CODEC_TILES as f64),
        ("FZK_RADIX_DIGITS", (1u32 << k::RADIX_BITS) as f64),
        ("FZK_MAX_NEIGHBOURS", k::MAX_NEIGHBOURS as f64),
        ("FZK_LOSS_BLOCK", correct::LOSS_BLOCK as f64),
        ("FZK_ADAM_BETA1", correct::BETA1),
        ("FZK_ADAM_BETA2", correct::BETA2),
        ("FZK_ADAM_EPS", correct::ADAM_EPS),
    ];
    for (name, value) in want {
        assert_eq!(num(name), value, "{name}: the prelude and Rust");
    }
    assert_eq!(
        emitted.len(),
        want.len(),
        "a new constant wants a line here"
    );
    // What the kernels assume of those values.
    assert_eq!(
        blockwise::TILE,
        32,
        "mode_b_*.cu map a tile row onto one warp (32 lanes, 32-bit ballots)"
    );
    assert!(
        (blockwise::EXACT as u32) >= quantize::NUM_IDS,
        "FZK_EXACT must not be a bound id"
    );
    assert_eq!(
        k::MODE_B_BOUNDS_BLOCK[0],
        32,
        "mode_b_bounds.cu: a warp per tile row"
    );
    for (what, b) in [
        (
            "field_reduce.cu's tree reductions",
            k::FIELD_REDUCE_BLOCK as usize,
        ),
        ("particles.cu's loss tree", correct::LOSS_BLOCK),
        ("scan.cu's block scan", k::SCAN_BLOCK as usize),
    ] {
        assert!(b.is_power_of_two() && b <= 1024, "{what}: {b} threads");
    }
    assert!(
        zero_runs::DIRECT.is_power_of_two() && zero_runs::DIRECT >= 4,
        "zero_runs.cu takes DIRECT's log2 from its leading zeros"
    );
    // Codes are ints, and |y| < 2 RADIUS fits a long long (checked at compile time).
    const _: () = assert!(quantize::RADIUS < 1 << 30);
    // No retyped copy in any kernel file or in common.cuh.
    let suffixes: Vec<&str> = want.iter().map(|(n, _)| &n["FZK_".len()..]).collect();
    let mut files = kernels_host::kernel_sources();
    files.push(kernels_host::kernels_dir().join("common.cuh"));
    let mut retyped = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (name, value) in defines(&text) {
            let rest = name
                .strip_prefix("FZ")
                .and_then(|r| r.split_once('_'))
                .map(|(_, r)| r);
            // FZR_L retypes FZK_RANS_L as surely as FZR_RANS_L would.
            let retypes = |r: &str| {
                suffixes
                    .iter()
                    .any(|s| *s == r || s.ends_with(&format!("_{r}")))
            };
            if rest.is_some_and(retypes) {
                retyped.push(format!(
                    "{}: #define {name} {value}",
                    f.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(
        retyped.is_empty(),
        "constants Rust defines, retyped in kernels/ (they come from \
         factz::kernels::prelude):\n{}",
        retyped.join("\n")
    );
}

/// Issue 19: each formula of kernels/common.cuh, through the host build's
/// probes (kernels/shim/common_probe.cpp), against its Rust twin at its edge
/// cases: exact signs under cancellation, within at the exact bound and one
/// ulp past it, quantize at the radius edge.
#[test]
fn common_cuh_formulas_match_rust() {
    use factz::field::{exact, quantize, topology};
    let lib = kernels_host::library();
    // SAFETY: the probes' C signatures, as declared in common_probe.cpp.
    unsafe {
        let sign: libloading::Symbol<unsafe extern "C" fn(*const f64, i32) -> i32> =
            lib.get(b"fzk_probe_sign_of_sum\0").unwrap();
        let within: libloading::Symbol<unsafe extern "C" fn(f32, f32, f64) -> i32> =
            lib.get(b"fzk_probe_within\0").unwrap();
        let quant: libloading::Symbol<
            unsafe extern "C" fn(f32, f64, f64, *mut i32, *mut f32) -> i32,
        > = lib.get(b"fzk_probe_quantize\0").unwrap();
        let recon: libloading::Symbol<unsafe extern "C" fn(f64, f64, i32) -> f32> =
            lib.get(b"fzk_probe_reconstruct\0").unwrap();
        let eb_of_id: libloading::Symbol<unsafe extern "C" fn(f64, i32) -> f64> =
            lib.get(b"fzk_probe_eb_of_id\0").unwrap();
        let id_for: libloading::Symbol<unsafe extern "C" fn(f64, f64) -> i32> =
            lib.get(b"fzk_probe_id_for_bound\0").unwrap();
        let predictor_input: libloading::Symbol<unsafe extern "C" fn(f32) -> f64> =
            lib.get(b"fzk_probe_predictor_input\0").unwrap();
        let zz: libloading::Symbol<unsafe extern "C" fn(i32) -> u32> =
            lib.get(b"fzk_probe_zigzag\0").unwrap();
        let unzz: libloading::Symbol<unsafe extern "C" fn(u32) -> i32> =
            lib.get(b"fzk_probe_unzigzag\0").unwrap();
        let orient: libloading::Symbol<
            unsafe extern "C" fn(*const f32, *const f32, *mut i32) -> i32,
        > = lib.get(b"fzk_probe_orientation\0").unwrap();

        // Exact sign: sums the float filter cannot decide (cancellation down to
        // one ulp of a huge term, ties, all zeros), up to mode S's 22 terms.
        let big = 2f64.powi(60);
        let tiny = f64::from_bits(1);
        let mut cases: Vec<Vec<f64>> = vec![
            vec![],
            vec![0.0, -0.0],
            vec![big, 1.0, -big],
            vec![big, -1.0, -big],
            vec![big, -big, tiny],
            vec![1.0, 1e-30, -1.0, -1e-30],
            vec![1.0, 1e-30, -1.0, -2e-30],
            vec![0.1, 0.2, -0.3],
            vec![3.0, -1.0, -1.0, -1.0],
            vec![1e300, -1e300, -1e-300, 1e-300, tiny],
        ];
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for n in 1..=22 {
            for _ in 0..40 {
                let mut t: Vec<f64> = (0..n)
                    .map(|_| ((next() % 2001) as f64 - 1000.0) * 2f64.powi((next() % 9) as i32 - 4))
                    .collect();
                // Cancel the sum down to (nearly) zero.
                let sum: f64 = t.iter().sum();
                t.push(-sum);
                if next() % 2 == 0 {
                    t.push(tiny * ((next() % 3) as f64 - 1.0));
                }
                t.truncate(22);
                cases.push(t);
            }
        }
        for t in &cases {
            assert_eq!(
                sign(t.as_ptr(), t.len() as i32),
                exact::sign_of_sum(t) as i32,
                "sign_of_sum {t:?}"
            );
        }

        // within: |r - x| exactly eb, and eb one ulp either side.
        for (r, x) in [
            (1.0f32, 0.75f32),
            (0.1, 0.3),
            (-1e-3, 2e-3),
            (16777216.0, 16777215.0),
        ] {
            let d = (r as f64 - x as f64).abs();
            for eb in [
                d,
                f64::from_bits(d.to_bits() - 1),
                f64::from_bits(d.to_bits() + 1),
            ] {
                for (a, b) in [(r, x), (x, r)] {
                    assert_eq!(
                        within(a, b, eb) != 0,
                        factz::bound::within(a, b, eb),
                        "within({a}, {b}, {eb:e})"
                    );
                }
            }
        }

        // quantize at the radius edge: codes RADIUS - 1 .. RADIUS + 1 and
        // halfway points, both signs; NaN and non-positive bounds.
        let radius = quantize::RADIUS as f64;
        for eb in [0.5, 1e-3, 0.375] {
            for y in [
                radius - 1.0,
                radius - 0.5,
                radius,
                radius + 0.49,
                radius + 0.5,
                radius + 1.0,
            ] {
                for sgn in [1.0, -1.0] {
                    let x = (sgn * y * 2.0 * eb) as f32;
                    for pred in [0.0, 0.25] {
                        let (mut q, mut r) = (0i32, 0f32);
                        let ok = quant(x + pred as f32, pred, eb, &mut q, &mut r) != 0;
                        let cpu = quantize::quantize(x + pred as f32, pred, eb);
                        assert_eq!(
                            ok.then_some((q, r.to_bits())),
                            cpu.map(|(q, r)| (q, r.to_bits())),
                            "quantize({x}, {pred}, {eb})"
                        );
                    }
                }
            }
        }
        for (x, eb) in [
            (1.0f32, f64::NAN),
            (1.0, 0.0),
            (1.0, -1.0),
            (f32::NAN, 1.0),
            (f32::INFINITY, 1.0),
        ] {
            let (mut q, mut r) = (0i32, 0f32);
            assert_eq!(
                quant(x, 0.0, eb, &mut q, &mut r) != 0,
                quantize::quantize(x, 0.0, eb).is_some()
            );
        }
        for (pred, eb, q) in [
            (0.1, 1e-3, 7),
            (-3.0, 0.25, -(quantize::RADIUS as i32)),
            (1e30, 1e20, 3),
        ] {
            assert_eq!(
                recon(pred, eb, q).to_bits(),
                quantize::reconstruct::<f32>(pred, eb, q).to_bits()
            );
        }
        for k in 0..quantize::NUM_IDS {
            assert_eq!(
                eb_of_id(0.3, k as i32).to_bits(),
                quantize::eb_of_id(0.3, k).to_bits()
            );
        }
        for e in [
            0.3,
            0.29,
            0.15,
            0.3 / 2f64.powi(23),
            0.3 / 2f64.powi(24),
            0.0,
            -1.0,
            f64::NAN,
            1.0,
        ] {
            assert_eq!(
                id_for(0.3, e),
                quantize::id_for_bound(0.3, e).map_or(-1, |k| k as i32),
                "id_for_bound {e}"
            );
        }
        for x in [1.5f32, f32::NAN, f32::INFINITY, -0.0] {
            assert_eq!(
                predictor_input(x).to_bits(),
                quantize::predictor_input(x).to_bits()
            );
        }
        for x in [0, 1, -1, i32::MAX, i32::MIN, quantize::RADIUS as i32] {
            assert_eq!(zz(x), factz::codec::zigzag(x));
            assert_eq!(unzz(zz(x)), x);
        }

        // m_products, orientation_of, m_is_zero on critical, degenerate and
        // non-finite triangles.
        for p in [
            [[1.0f32, 0.0], [0.0, 1.0], [-1.0, -1.0]],
            [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]],
            [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
            [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
            [[f32::MAX, 1.0], [1.0, f32::MAX], [-f32::MAX, -f32::MAX]],
            [[0.1, 0.7], [0.3, 0.2], [0.5, 0.9]],
        ] {
            let pu = [p[0][0], p[1][0], p[2][0]];
            let pvv = [p[0][1], p[1][1], p[2][1]];
            let mut zero = 0;
            let o = orient(pu.as_ptr(), pvv.as_ptr(), &mut zero);
            let mk = topology::m_products(p);
            let m = [mk[0].0 - mk[0].1, mk[1].0 - mk[1].1, mk[2].0 - mk[2].1];
            assert_eq!(o, topology::orientation_of(m).map_or(2, i32::from), "{p:?}");
            assert_eq!(zero != 0, topology::m_is_zero(&mk), "{p:?}");
        }
    }
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

/// The library's host code (`gpu::mode_b_bounds::BoundKernels`) over the shim, into
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
    let (ids, tiles) = mode_b_ids(&f.u, &f.v, f.ny, f.nx, xi, chunk);
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

/// The `__global__` kernels of every kernels/*.cu, read from the text the
/// host build compiles after the preprocessor (scan.cu defines its kernels
/// through a macro).
#[cfg(feature = "cuda")]
fn global_kernels() -> BTreeSet<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut out = BTreeSet::new();
    for f in kernels_host::kernel_sources() {
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = factz::kernels::source(&std::fs::read_to_string(&f).unwrap(), &file);
        let mut cpp = Command::new("g++")
            .args(["-E", "-P", "-x", "c++", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("running g++ -E");
        cpp.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let pre = cpp.wait_with_output().unwrap();
        assert!(pre.status.success(), "g++ -E {file} failed");
        let pre = String::from_utf8(pre.stdout).unwrap();
        for decl in pre.split("__global__").skip(1) {
            let rest = decl
                .trim_start()
                .strip_prefix("void")
                .unwrap_or_else(|| panic!("{file}: a __global__ that is not `void`: {:.60}", decl));
            let rest = rest.trim_start();
            let rest = match rest.strip_prefix("__launch_bounds__") {
                Some(bounds) => &bounds[bounds.find(')').unwrap() + 1..],
                None => rest,
            }
            .trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let after = rest[name.len()..].trim_start();
            assert!(
                !name.is_empty() && after.starts_with('('),
                "{file}: cannot read the kernel name in `__global__{:.60}`",
                decl
            );
            assert!(out.insert(name.clone()), "{file}: {name} defined twice");
        }
    }
    out
}

/// Every kernel's Rust declaration (factz::gpu::launch, the drivers'
/// `kernels!` blocks) against the kernel's C++ parameter types in the host
/// build (`fzshim_sig_<kernel>`), and every `__global__` kernel of
/// kernels/*.cu declared, once.
#[cfg(feature = "cuda")]
#[test]
fn every_kernel_is_declared_once_with_its_cuda_parameter_types() {
    let declared = factz::gpu::launch::all();
    let names: BTreeSet<String> = declared.iter().map(|k| k.name.to_string()).collect();
    assert_eq!(names.len(), declared.len(), "a kernel is declared twice");
    let sources = global_kernels();
    let undeclared: Vec<&String> = sources.difference(&names).collect();
    let unknown: Vec<&String> = names.difference(&sources).collect();
    assert!(
        undeclared.is_empty() && unknown.is_empty(),
        "kernels in kernels/*.cu without a declaration: {undeclared:?}; declarations \
         without a kernel: {unknown:?}"
    );
    let drifted: Vec<String> = declared
        .iter()
        .filter_map(|k| shim_exec::check_signature(k).err())
        .map(|e| e.to_string())
        .collect();
    assert!(
        drifted.is_empty(),
        "declarations that differ from their kernel:\n{}",
        drifted.join("\n")
    );
}

/// The shim refuses a launch whose declaration is not the kernel's, before
/// the kernel runs (here f32 where the kernel takes an unsigned char*).
#[cfg(feature = "cuda")]
#[test]
fn a_launch_through_a_drifted_declaration_is_an_error() {
    use factz::gpu::exec::{Buf, View};
    use factz::gpu::launch::Kernel;
    let e = Shim {
        threads: Threads::Fibers,
    };
    let wrong: Kernel<(View<f32>, u64, View<u8>)> = Kernel::new("factz_f_pack_flags");
    let (flags, bytes) = (
        Buf::from(&e, &[1f32; 8]).unwrap(),
        Buf::<_, u8>::zeros(&e, 1).unwrap(),
    );
    // SAFETY: the shim checks the declaration before it runs anything.
    let r = unsafe { wrong.launch(&e, 1, 32, (flags.view(), 8, bytes.view())) };
    let err = r.unwrap_err().to_string();
    assert!(
        err.contains(
            "factz_f_pack_flags is declared (*f32,u64,*u8) but the kernel takes (*u8,u64,*u8)"
        ),
        "{err}"
    );
    assert_eq!(
        bytes.read(&e, 0..1).unwrap(),
        [0],
        "the refused launch wrote"
    );
    // The library's own declaration runs.
    let flags = Buf::from(&e, &[1u8; 8]).unwrap();
    // SAFETY: 8 flags, one byte.
    unsafe {
        factz::gpu::field_reduce::F_PACK_FLAGS
            .launch(&e, 1, 32, (flags.view(), 8, bytes.view()))
            .unwrap()
    };
    assert_eq!(bytes.read(&e, 0..1).unwrap(), [0xff]);
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
