//! The particle kernels (`kernels/particles.cu`, issue 6) without a GPU: the
//! library's own host code (`gpu::particles`) drives them as host C++ through
//! `kernels/shim` (tests/common/shim_exec.rs; a block's threads as fibers, or
//! as real std::threads), and they must give the CPU reference's results bit
//! for bit and in the CPU's order:
//!
//! - binning: the finite particles' bounding box (`geometry::bounding_box`),
//!   the finite particles by cell (ascending index within a cell), the
//!   occupied cells' keys and starts, exactly `Grid::build`'s internals;
//! - vulnerable pairs: exactly `vulnerable::pairs`'s list (i, j, linked), in
//!   its order;
//! - edit compaction: the kept edits (coordinate, zig-zag code) and the packed
//!   edit mask of `stream::Correction`, from a real correction's codes.
//!
//! Inputs: clustered particles from factz synth (open and periodic), the shared
//! adversarial sets (pairs at exactly b and b +- 1 ulp, duplicates, one cell,
//! NaN and Inf, periodic faces, N = 1 and 2), empty and all-NaN input, tiny b
//! (sparse grids with keys near 2^62, and grids the CPU coarsens), b near half
//! the periodic box (fewer than 3 cells per axis), b far beyond the box (one
//! cell), and xi from tiny to larger than b (a window reaching distance 0).

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
use factz::codec::planes::pack_bits;
use factz::codec::zigzag;
use factz::gpu::particles::ParticleKernels;
use factz::particles::correct::{self, Options};
use factz::particles::geometry::Space;
use factz::particles::gpu_host::{self, Bins, GridGeometry};
use factz::particles::vulnerable::{self, Pair};
use kernels_host::Threads;
use shim_exec::Shim;

/// The kernels' bounding box of the finite particles.
fn gpu_bbox(pos: &[f32], threads: Threads) -> Option<([f32; 3], [f32; 3])> {
    ParticleKernels {
        exec: &Shim { threads },
    }
    .bounding_box(pos)
    .unwrap()
}

/// The kernels' grid for `pos` on geometry `g`.
fn gpu_bins(pos: &[f32], g: &GridGeometry, threads: Threads) -> Bins {
    ParticleKernels {
        exec: &Shim { threads },
    }
    .bins(pos, g)
    .unwrap()
}

/// The kernels' vulnerable pairs.
fn gpu_pairs(pos: &[f32], space: Space, b: f64, xi: f64, threads: Threads) -> Vec<Pair> {
    ParticleKernels {
        exec: &Shim { threads },
    }
    .vulnerable_pairs(pos, space, b, xi)
    .unwrap()
}

/// The kernels' edit compaction: kept (coordinate, zig-zag code) and the mask bytes.
fn gpu_edits(codes: &[i32], exact: &[bool], threads: Threads) -> (Vec<(u64, u32)>, Vec<u8>) {
    ParticleKernels {
        exec: &Shim { threads },
    }
    .edits(codes, exact)
    .unwrap()
}

struct Set {
    name: String,
    pos: Vec<f32>,
    space: Space,
    b: f64,
    /// Absolute bounds to try.
    xis: Vec<f64>,
}

fn space(period: Option<f64>) -> Space {
    Space { period }
}

fn sets() -> Vec<Set> {
    let mut out = Vec::new();
    // Clustered (halos: dense cells beside empty ones), open and periodic.
    let l = 1.0;
    let clustered = synth_particles(16, 3, l, &[]);
    let b = fof_b(clustered.len() / 3, l);
    for period in [Some(l), None] {
        out.push(Set {
            name: format!("synth 16^3 {period:?}"),
            pos: clustered.clone(),
            space: space(period),
            b,
            xis: vec![1e-3 * b, 0.05 * b, 0.5 * b],
        });
    }
    let shuffled = synth_particles(22, 5, 10.0, &["--order", "shuffle"]);
    out.push(Set {
        name: "synth 22^3 shuffled periodic".into(),
        pos: shuffled.clone(),
        space: Space::periodic(10.0),
        b: fof_b(shuffled.len() / 3, 10.0),
        xis: vec![0.02 * fof_b(shuffled.len() / 3, 10.0)],
    });
    // Tiny b: sparse grids with keys near 2^62 (several radix passes), and
    // grids past 2^62 cells that the CPU coarsens.
    for (b, xi) in [(3e-6, 1e-7), (1e-9, 1e-10), (1e-30, 1e-31)] {
        for period in [Some(l), None] {
            out.push(Set {
                name: format!("synth 16^3 b {b:e} {period:?}"),
                pos: clustered.clone(),
                space: space(period),
                b,
                xis: vec![xi],
            });
        }
    }
    // b near half the periodic box: 2 cells per axis, wrapped neighbours
    // coincide; and b far beyond an open box: one cell.
    let few: Vec<f32> = clustered[..3 * 1500].to_vec();
    out.push(Set {
        name: "b = 0.45 L periodic".into(),
        pos: few.clone(),
        space: Space::periodic(l),
        b: 0.45,
        xis: vec![1e-3, 0.02],
    });
    out.push(Set {
        name: "b = 0.3 L periodic (3 cells per axis)".into(),
        pos: few.clone(),
        space: Space::periodic(l),
        b: 0.3,
        xis: vec![1e-3],
    });
    out.push(Set {
        name: "b huge, open".into(),
        pos: few.clone(),
        space: Space::open(),
        b: 1e30,
        xis: vec![1e20, 1e29],
    });
    out.push(Set {
        name: "xi above b (window reaches 0)".into(),
        pos: few,
        space: Space::open(),
        b: 0.05,
        xis: vec![0.1],
    });
    for c in adversarial(11) {
        out.push(Set {
            name: c.name,
            pos: c.pos,
            space: space(c.period),
            b: c.b,
            xis: vec![1e-4 * c.b, 0.05 * c.b],
        });
    }
    // A slab: one cell thick along z, many along x and y.
    let mut rng = Rng::new(17);
    let slab: Vec<f32> = (0..2000)
        .flat_map(|_| [rng.range(0.0, 8.0) as f32, rng.range(0.0, 8.0) as f32, 0.5])
        .collect();
    out.push(Set {
        name: "flat slab".into(),
        pos: slab,
        space: Space::open(),
        b: 0.3,
        xis: vec![0.01],
    });
    for (name, pos) in [
        ("empty", vec![]),
        ("all NaN", vec![f32::NAN; 3 * 40]),
        ("one finite among NaN", {
            let mut p = vec![f32::NAN; 3 * 40];
            p[60..63].copy_from_slice(&[0.5, 0.5, 0.5]);
            p
        }),
    ] {
        for period in [None, Some(1.0)] {
            out.push(Set {
                name: format!("{name} {period:?}"),
                pos: pos.clone(),
                space: space(period),
                b: 0.1,
                xis: vec![0.01],
            });
        }
    }
    out
}

#[test]
fn binning_equals_the_cpu_grid() {
    for s in sets() {
        let bbox = gpu_bbox(&s.pos, Threads::Fibers);
        assert_eq!(bbox, gpu_host::bbox_f32(&s.pos), "{}: bounding box", s.name);
        for &xi in &s.xis {
            let (r, ..) = gpu_host::vulnerable_search(s.b, xi);
            let (geometry, want) = gpu_host::bins(&s.pos, s.space, r);
            // The geometry from the bounding box alone is the full build's.
            assert_eq!(
                gpu_host::grid_geometry(bbox, s.space, r),
                geometry,
                "{} xi {xi}",
                s.name
            );
            let got = gpu_bins(&s.pos, &geometry, Threads::Fibers);
            assert_eq!(
                got, want,
                "{} xi {xi}: GPU binning differs (dims {:?})",
                s.name, geometry.dims
            );
        }
    }
}

#[test]
fn vulnerable_pairs_equal_the_cpu_list_in_order() {
    let mut total = 0;
    for s in sets() {
        for &xi in &s.xis {
            let want = vulnerable::pairs(&s.pos, s.space, s.b, xi);
            let got = gpu_pairs(&s.pos, s.space, s.b, xi, Threads::Fibers);
            assert_eq!(got.len(), want.len(), "{} xi {xi}: pair count", s.name);
            if let Some(k) = (0..got.len()).find(|&k| got[k] != want[k]) {
                panic!(
                    "{} xi {xi}: pair {k}: GPU {:?}, CPU {:?}",
                    s.name, got[k], want[k]
                );
            }
            total += got.len();
        }
    }
    // The sets exercise the search: many pairs, linked and not.
    assert!(
        total > 100_000,
        "only {total} vulnerable pairs over all sets"
    );
}

/// A pair at exactly b is linked, one ulp further is not, and NaN links nothing.
#[test]
fn pairs_at_the_edge_and_non_finite() {
    let b = 0.25f64;
    let far = f32::from_bits(0.25f32.to_bits() + 1);
    let pos = vec![
        0.0,
        0.0,
        0.0,
        0.25,
        0.0,
        0.0, //
        5.0,
        0.0,
        0.0,
        5.0,
        far,
        0.0, //
        f32::NAN,
        0.0,
        0.0, //
    ];
    for period in [None, Some(20.0)] {
        let got = gpu_pairs(&pos, space(period), b, 1e-3, Threads::Fibers);
        assert_eq!(
            got,
            vec![
                Pair {
                    i: 0,
                    j: 1,
                    linked: true
                },
                Pair {
                    i: 2,
                    j: 3,
                    linked: false
                }
            ],
            "{period:?}"
        );
    }
}

/// Pairs whose link the summation order decides: b * b falls between
/// dx² + dy² + dz² and dz² + dy² + dx², so only the CPU's order (x, y, z, no
/// fused multiply-add) links them as the CPU does.
#[test]
fn links_decided_by_the_summation_order() {
    let mut rng = Rng::new(23);
    let (mut linked, mut unlinked) = (0, 0);
    while linked + unlinked < 40 {
        let pos: Vec<f32> = (0..6).map(|_| rng.range(0.0, 1.0) as f32).collect();
        let d = [0, 1, 2].map(|k| pos[k] as f64 - pos[3 + k] as f64);
        let xyz = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let zyx = d[2] * d[2] + d[1] * d[1] + d[0] * d[0];
        let b = xyz.sqrt();
        let b2 = b * b;
        if (xyz <= b2) == (zyx <= b2) {
            continue;
        }
        let space = Space::open();
        let want = vulnerable::pairs(&pos, space, b, 1e-3 * b);
        assert_eq!(want.len(), 1);
        assert_eq!(want[0].linked, xyz <= b2);
        assert_eq!(gpu_pairs(&pos, space, b, 1e-3 * b, Threads::Fibers), want);
        if want[0].linked {
            linked += 1;
        } else {
            unlinked += 1;
        }
    }
    assert!(
        linked > 0 && unlinked > 0,
        "{linked} linked, {unlinked} not"
    );
}

/// Real concurrency (one std::thread per CUDA thread): a missing barrier or a
/// timing-dependent scatter would show here.
#[test]
fn os_threads_give_the_same_bins_and_pairs() {
    let pos = synth_particles(10, 7, 1.0, &["--order", "shuffle"]);
    let b = fof_b(pos.len() / 3, 1.0);
    for period in [Some(1.0), None] {
        let sp = space(period);
        let xi = 0.05 * b;
        let want = vulnerable::pairs(&pos, sp, b, xi);
        assert_eq!(gpu_pairs(&pos, sp, b, xi, Threads::Os), want, "{period:?}");
        assert_eq!(gpu_bbox(&pos, Threads::Os), gpu_host::bbox_f32(&pos));
        // A tiny b: four radix passes.
        let (r, ..) = gpu_host::vulnerable_search(1e-7, 1e-9);
        let (g, bins) = gpu_host::bins(&pos, sp, r);
        assert_eq!(gpu_bins(&pos, &g, Threads::Os), bins, "{period:?} tiny b");
    }
}

/// The kept edits and the mask, as correct.rs filters them and stream.rs
/// stores them: codes present on non-exact particles, in coordinate order.
fn cpu_edits(codes: &[i32], exact: &[bool]) -> (Vec<(u64, u32)>, Vec<u8>) {
    let edits: Vec<(u64, u32)> = codes
        .iter()
        .enumerate()
        .filter(|&(c, &q)| q != i32::MIN && !exact[c / 3])
        .map(|(c, &q)| (c as u64, zigzag(q)))
        .collect();
    let mut mask = vec![false; codes.len()];
    for &(c, _) in &edits {
        mask[c as usize] = true;
    }
    (edits, pack_bits(&mask))
}

#[test]
fn edit_compaction_equals_the_correction() {
    // A real correction: synth particles, a base output pushed to the bound
    // so links break, corrected by correct.rs.
    let orig = synth_particles(12, 9, 1.0, &[]);
    let n = orig.len() / 3;
    let b = fof_b(n, 1.0);
    let xi = 0.05 * b;
    let mut rng = Rng::new(5);
    let recon: Vec<f32> = orig
        .iter()
        .map(|&x| (x as f64 + rng.range(-0.999, 0.999) * xi) as f32)
        .collect();
    let out = correct::correct(
        &correct::Cpu,
        &orig,
        recon,
        vec![false; n],
        Space::periodic(1.0),
        b,
        xi,
        &Options::default(),
    )
    .unwrap();
    assert!(!out.edits.is_empty(), "the correction edited nothing");
    // The per-coordinate code table the correction compacts, with stray codes
    // on exact particles (dropped) as the correction's table can hold.
    let mut codes = vec![i32::MIN; 3 * n];
    for &(c, q) in &out.edits {
        codes[c as usize] = q;
    }
    let mut stray = 0;
    for k in (0..n).filter(|&k| out.exact[k]) {
        codes[3 * k] = 7;
        stray += 1;
    }
    let want: Vec<(u64, u32)> = out.edits.iter().map(|&(c, q)| (c, zigzag(q))).collect();
    let (got, mask) = gpu_edits(&codes, &out.exact, Threads::Fibers);
    assert_eq!(got, want, "edits ({stray} stray codes on exact particles)");
    assert_eq!(mask, cpu_edits(&codes, &out.exact).1, "edit mask");

    // Adversarial tables: extreme codes, sizes off multiples of 32 and 8.
    for n in [0usize, 1, 2, 10, 11, 33, 1000] {
        let codes: Vec<i32> = (0..3 * n)
            .map(|_| match rng.below(6) {
                0 => i32::MIN,
                1 => i32::MIN + 1,
                2 => i32::MAX,
                3 => -1,
                4 => 0,
                _ => rng.next_u64() as i32,
            })
            .collect();
        let exact: Vec<bool> = (0..n).map(|_| rng.below(5) == 0).collect();
        for threads in [Threads::Fibers, Threads::Os] {
            assert_eq!(
                gpu_edits(&codes, &exact, threads),
                cpu_edits(&codes, &exact),
                "n {n} {threads:?}"
            );
        }
    }
}

/// The CUDA runtime side (feature `cuda`): cudarc's NVRTC path, and (on a GPU
/// machine, `scripts/gpu-check`) the device against the CPU.
mod cuda {
    use super::nvrtc;
    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU: scripts/gpu-check"]
    fn device_bins_pairs_and_edits_match_the_cpu() {
        let cuda = nvrtc::device();
        let k = ParticleKernels { exec: &cuda };
        let mut sets = sets();
        // One set at a size the shim is too slow for.
        let big = synth_particles(64, 2, 1.0, &[]);
        let bb = fof_b(big.len() / 3, 1.0);
        sets.push(Set {
            name: "synth 64^3 periodic".into(),
            pos: big,
            space: Space::periodic(1.0),
            b: bb,
            xis: vec![0.05 * bb],
        });
        let mut total = 0;
        for s in &sets {
            for &xi in &s.xis {
                let (r, ..) = gpu_host::vulnerable_search(s.b, xi);
                let (g, want) = gpu_host::bins(&s.pos, s.space, r);
                assert_eq!(k.bins(&s.pos, &g).unwrap(), want, "{} xi {xi}", s.name);
                let want = vulnerable::pairs(&s.pos, s.space, s.b, xi);
                let got = k.vulnerable_pairs(&s.pos, s.space, s.b, xi).unwrap();
                assert!(got == want, "{} xi {xi}: device pairs differ", s.name);
                total += got.len();
            }
        }
        assert!(total > 100_000, "{total}");
        let mut rng = Rng::new(3);
        for n in [0usize, 1, 11, 1000, 100_003] {
            let codes: Vec<i32> = (0..3 * n)
                .map(|_| match rng.below(3) {
                    0 => i32::MIN,
                    _ => rng.next_u64() as i32,
                })
                .collect();
            let exact: Vec<bool> = (0..n).map(|_| rng.below(5) == 0).collect();
            assert_eq!(
                k.edits(&codes, &exact).unwrap(),
                cpu_edits(&codes, &exact),
                "n {n}"
            );
        }
    }
}
