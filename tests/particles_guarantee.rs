//! The particle guarantee, checked by the independent brute-force FoF oracle
//! (tests/common/particles.rs): every link keeps its status, so the FoF partition
//! is identical, and every coordinate is within the bound — for each base
//! compressor, relative bounds 1e-2..1e-6, open and periodic boxes, generated
//! seeds and densities, and adversarial sets.

mod common;

use common::particles::{adversarial, brute_links, check, fof_b, synth_particles, Case};
use factz::particles::correct::Method;
use factz::particles::{
    self, apply_external, correct_external, Base, Bound, Linking, ParticleConfig,
};

fn bases() -> Vec<Base> {
    let mut v = vec![Base::Builtin];
    if cfg!(feature = "sz3") {
        v.push(Base::Sz3);
    }
    if cfg!(feature = "zfp") {
        v.push(Base::Zfp);
    }
    v
}

fn config(base: Base, bound: Bound, b: f64, period: Option<f64>) -> ParticleConfig {
    ParticleConfig {
        bound,
        linking: Linking::Length(b),
        period,
        base,
        verify: true,
        ..ParticleConfig::default()
    }
}

/// Compress, decompress, and let the oracle judge; returns the report for context.
fn roundtrip(
    case: &Case,
    cfg: &ParticleConfig,
    orig_links: &[(u32, u32)],
) -> particles::ParticleReport {
    let c = particles::compress(&case.pos, cfg)
        .unwrap_or_else(|e| panic!("{}: compress failed: {e}", case.name));
    assert!(
        !c.report.lossless_fallback,
        "{}: verify failed: {:?}",
        case.name, c.report.fallback_reason
    );
    let d = particles::decompress(&c.bytes)
        .unwrap_or_else(|e| panic!("{}: decompress: {e}", case.name));
    // The stream records the method that ran: the forced one, or auto's choice.
    let info = particles::info(&c.bytes).unwrap();
    assert_eq!(info.method, c.report.method, "{}", case.name);
    if let Some(m) = c.report.method {
        assert!(cfg.correction.method == Method::Auto || cfg.correction.method == m);
    }
    let xi = c.report.abs_bound;
    let r = check(&case.pos, &d.pos, case.period, cfg_b(cfg), xi, orig_links);
    assert!(
        r.clean(),
        "{} base {:?} bound {:?}: {r:?} (report {:?})",
        case.name,
        cfg.base,
        cfg.bound,
        c.report
    );
    c.report
}

fn cfg_b(cfg: &ParticleConfig) -> f64 {
    match cfg.linking {
        Linking::Length(b) => b,
        Linking::Eta(_) => unreachable!("tests give b"),
    }
}

#[test]
fn clustered_sets_keep_every_link() {
    // Two seeds, two densities (same particle count in a smaller box is denser in
    // absolute terms; b follows the mean separation, a larger sigma20 clusters harder).
    let sets = [
        ("seed 1", synth_particles(16, 1, 100.0, &[]), 100.0),
        (
            "seed 2 clustered",
            synth_particles(16, 2, 50.0, &["--sigma20", "4"]),
            50.0,
        ),
        (
            "seed 3 shuffled",
            synth_particles(14, 3, 100.0, &["--order", "shuffle"]),
            100.0,
        ),
    ];
    let (mut corrected, mut auto_chose_correct, mut auto_ran_eager) = (0, false, false);
    for (name, pos, l) in sets {
        let n = pos.len() / 3;
        let b = fof_b(n, l);
        for period in [None, Some(l)] {
            let links = brute_links(&pos, period, b);
            let case = Case {
                name: format!("{name} period {period:?}"),
                pos: pos.clone(),
                b,
                period,
            };
            for base in bases() {
                for rel in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6] {
                    for method in [Method::Auto, Method::Correct] {
                        let mut cfg = config(base, Bound::Rel(rel), b, period);
                        cfg.correction.method = method;
                        let rep = roundtrip(&case, &cfg, &links);
                        corrected += rep.correction.violated_before;
                        auto_chose_correct |=
                            method == Method::Auto && rep.method == Some(Method::Correct);
                        // A window reaching 0: auto secures every particle at once.
                        if method == Method::Auto && particles::eager::wide(b, rep.abs_bound) {
                            assert_eq!(rep.method, Some(Method::Safe), "{name}");
                            auto_ran_eager |= rep.correction.violated_before > 0;
                        }
                    }
                }
            }
        }
    }
    // The cases are only meaningful if the base output broke links the correction fixed.
    assert!(
        corrected > 0,
        "no base output needed correction: the test proves nothing"
    );
    assert!(auto_chose_correct, "auto never ran the optimiser here");
    assert!(auto_ran_eager, "no wide window with changed pairs here");
}

#[test]
fn adversarial_sets_keep_every_link() {
    for case in adversarial(11) {
        let links = brute_links(&case.pos, case.period, case.b);
        for base in bases() {
            for bound in [
                Bound::Rel(1e-2),
                Bound::Rel(1e-4),
                Bound::Rel(1e-6),
                Bound::Abs(case.b),
                Bound::Abs(0.0),
                Bound::Abs(1e-30),
            ] {
                for method in [Method::Auto, Method::Correct] {
                    let mut cfg = config(base, bound, case.b, case.period);
                    cfg.correction.method = method;
                    roundtrip(&case, &cfg, &links);
                }
            }
        }
    }
}

/// The safe-bound method (`--method safe`): per-particle bounds instead of the
/// optimiser, on the clustered sets (shuffled, dense, periodic and open) and the
/// adversarial ones, every base, bounds from loose (2 sqrt3 xi > b: nearly every
/// neighbour pair is vulnerable) to tight.
#[test]
fn safe_method_keeps_every_link() {
    let safe = |mut cfg: ParticleConfig| {
        cfg.correction.method = Method::Safe;
        cfg
    };
    let sets = [
        ("seed 4", synth_particles(16, 4, 100.0, &[]), 100.0),
        (
            "seed 5 dense shuffled",
            synth_particles(15, 5, 30.0, &["--sigma20", "4", "--order", "shuffle"]),
            30.0,
        ),
    ];
    let (mut broken_by_base, mut edited) = (0, 0);
    for (name, pos, l) in sets {
        let b = fof_b(pos.len() / 3, l);
        for period in [None, Some(l)] {
            let links = brute_links(&pos, period, b);
            let case = Case {
                name: format!("safe {name} period {period:?}"),
                pos: pos.clone(),
                b,
                period,
            };
            for base in bases() {
                for bound in [
                    Bound::Abs(0.3 * b),
                    Bound::Rel(1e-3),
                    Bound::Rel(1e-4),
                    Bound::Rel(1e-5),
                    Bound::Rel(1e-6),
                ] {
                    let rep = roundtrip(&case, &safe(config(base, bound, b, period)), &links);
                    broken_by_base += rep.correction.violated_before;
                    edited += rep.correction.edited_coords;
                    // rounds of lazy securing, not optimiser iterations
                    assert!(
                        rep.correction.iterations <= 9,
                        "{}: {:?}",
                        case.name,
                        rep.correction
                    );
                }
            }
        }
    }
    assert!(
        broken_by_base > 0 && edited > 0,
        "nothing to keep: the test proves nothing"
    );
    for case in adversarial(12) {
        let links = brute_links(&case.pos, case.period, case.b);
        for base in bases() {
            for bound in [
                Bound::Rel(1e-2),
                Bound::Rel(1e-5),
                Bound::Abs(case.b),
                Bound::Abs(1e-30),
            ] {
                roundtrip(
                    &case,
                    &safe(config(base, bound, case.b, case.period)),
                    &links,
                );
            }
        }
    }
}

/// The narrowest and widest edit lattices (2 and 24 bits): at 2 bits an edit
/// can barely move a particle, so the fallback stores most fixes exactly; the
/// guarantee holds either way.
#[test]
fn extreme_edit_widths_keep_every_link() {
    let pos = synth_particles(12, 4, 10.0, &[]);
    let b = fof_b(pos.len() / 3, 10.0);
    for period in [None, Some(10.0)] {
        let links = brute_links(&pos, period, b);
        let case = Case {
            name: format!("synth 12^3 period {period:?}"),
            pos: pos.clone(),
            b,
            period,
        };
        for bits in [2, 3, 24] {
            for xi in [0.05 * b, 0.3 * b] {
                let mut cfg = config(Base::Builtin, Bound::Abs(xi), b, period);
                cfg.correction.edit_bits = bits;
                let rep = roundtrip(&case, &cfg, &links);
                assert!(
                    rep.correction.violated_before > 0,
                    "{}: nothing to fix",
                    case.name
                );
            }
        }
    }
}

#[test]
fn empty_set_round_trips() {
    let c = particles::compress::<f32>(&[], &ParticleConfig::default()).unwrap();
    assert_eq!(
        particles::decompress(&c.bytes).unwrap().pos,
        Vec::<f32>::new()
    );
}

#[test]
fn eta_sets_b_from_the_box_or_the_bounding_box() {
    let pos = synth_particles(12, 4, 100.0, &[]);
    let n = pos.len() / 3;
    let cfg = ParticleConfig {
        linking: Linking::Eta(0.2),
        period: Some(100.0),
        ..ParticleConfig::default()
    };
    let c = particles::compress(&pos, &cfg).unwrap();
    assert!((c.report.linking_length - fof_b(n, 100.0)).abs() < 1e-9 * c.report.linking_length);
    let d = particles::decompress(&c.bytes).unwrap();
    let links = brute_links(&pos, Some(100.0), c.report.linking_length);
    let r = check(
        &pos,
        &d.pos,
        Some(100.0),
        c.report.linking_length,
        c.report.abs_bound,
        &links,
    );
    assert!(r.clean(), "{r:?}");
    // Flat data has no volume: eta cannot define b.
    let flat: Vec<f32> = (0..30)
        .map(|k| if k % 3 == 2 { 0.0 } else { k as f32 })
        .collect();
    let e = particles::compress(&flat, &ParticleConfig::default()).unwrap_err();
    assert!(e.to_string().contains("linking length b"), "{e}");
}

/// A crude stand-in for any other lossy compressor: snap to a coarse lattice, and
/// add a deterministic wobble, staying within xi.
fn foreign_compressor(pos: &[f32], xi: f64) -> Vec<f32> {
    pos.iter()
        .enumerate()
        .map(|(k, &x)| {
            let snapped = (x as f64 / (1.5 * xi)).round() * (1.5 * xi);
            let wobble = (((k * 2654435761) % 1000) as f64 / 1000.0 - 0.5) * 0.4 * xi;
            let v = (snapped + wobble) as f32;
            if (v as f64 - x as f64).abs() <= xi {
                v
            } else {
                x
            }
        })
        .collect()
}

#[test]
fn bring_your_own_compressor() {
    let pos = synth_particles(16, 5, 100.0, &[]);
    let n = pos.len() / 3;
    let b = fof_b(n, 100.0);
    for period in [None, Some(100.0)] {
        let links = brute_links(&pos, period, b);
        for rel in [1e-3, 1e-4, 1e-5] {
            let cfg = config(Base::Builtin, Bound::Rel(rel), b, period);
            let xi = particles::absolute_bound(&pos, cfg.bound);
            let mut theirs = foreign_compressor(&pos, xi);
            let before = check(&pos, &theirs, period, b, xi, &links);
            let c = correct_external(&pos, &theirs, &cfg).unwrap();
            // Decompress refuses a correction-only stream; apply is the way.
            assert!(particles::decompress(&c.bytes).is_err());
            apply_external(&c.bytes, &mut theirs).unwrap();
            let r = check(&pos, &theirs, period, b, xi, &links);
            assert!(
                r.clean(),
                "rel {rel} {period:?}: before {before:?}, after {r:?}"
            );
            // Applying to other positions is refused (checksum).
            let mut other = foreign_compressor(&pos, xi);
            other[0] += 1.0;
            assert!(apply_external(&c.bytes, &mut other).is_err());
        }
    }
}

#[test]
fn chunk_rule_keeps_links_across_chunks() {
    // Split a snapshot into two slabs along x, compress each as a chunk of many, and
    // check the links of the whole set after reassembly.
    let pos = synth_particles(16, 6, 100.0, &[]);
    let n = pos.len() / 3;
    let b = fof_b(n, 100.0);
    let links = brute_links(&pos, None, b);
    let xi = 2e-3 * 100.0;
    let mut idx: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    for k in 0..n {
        idx[(pos[3 * k] >= 50.0) as usize].push(k);
    }
    let mut recon = pos.clone();
    for part in &idx {
        let chunk: Vec<f32> = part
            .iter()
            .flat_map(|&k| pos[3 * k..3 * k + 3].to_vec())
            .collect();
        let cfg = ParticleConfig {
            chunk_of_larger: true,
            ..config(Base::Builtin, Bound::Abs(xi), b, None)
        };
        let c = particles::compress(&chunk, &cfg).unwrap();
        let d = particles::decompress(&c.bytes).unwrap();
        for (slot, &k) in part.iter().enumerate() {
            recon[3 * k..3 * k + 3].copy_from_slice(&d.pos[3 * slot..3 * slot + 3]);
        }
    }
    let r = check(&pos, &recon, None, b, xi, &links);
    assert!(r.clean(), "{r:?}");
}

#[test]
fn same_bytes_whatever_the_thread_count() {
    let pos = synth_particles(16, 7, 100.0, &[]);
    let b = fof_b(pos.len() / 3, 100.0);
    for method in [Method::Auto, Method::Correct, Method::Safe] {
        let mut cfg = config(Base::Builtin, Bound::Rel(1e-3), b, Some(100.0));
        cfg.correction.method = method;
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| particles::compress(&pos, &cfg).unwrap().bytes)
        };
        let one = run(1);
        assert_eq!(one, run(2), "{method:?}");
        assert_eq!(one, run(5), "{method:?}");
    }
}
