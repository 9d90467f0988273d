//! float64 particle positions through the Rust API, checked by the independent
//! brute-force FoF oracle (tests/common/particles.rs, its own f64 distance
//! code): every link of the f64 originals keeps its status, every coordinate
//! is within the bound (decided exactly), the stream round-trips through its
//! bytes as f64 and only as f64, on sets where f64 matters: more than 24
//! significant bits, pairs at exactly b and a few f64 ulps either side, large
//! offsets with small separations, periodic boxes with pairs across the faces,
//! duplicates, and non-finite values.

mod common;

use common::fields::Rng;
use common::particles::{adversarial, brute_links, check, fof_b, synth_particles};
use factz::error::ErrorKind;
use factz::particles::correct::Method;
use factz::particles::{self, Base, Bound, Linking, ParticleConfig};

struct Set {
    name: &'static str,
    pos: Vec<f64>,
    b: f64,
    period: Option<f64>,
}

fn ulps(x: f64, k: i64) -> f64 {
    f64::from_bits((x.to_bits() as i64 + k) as u64)
}

/// Clustered particles from the generator in f64, each coordinate given low
/// bits f32 cannot hold (a relative 1e-9 jiggle).
fn synth_f64(seed: u64, period: Option<f64>) -> Set {
    let l = 10.0;
    let mut r = Rng::new(seed ^ 0x64);
    let pos = synth_particles(12, seed, l, &[])
        .iter()
        .map(|&x| {
            let v = x as f64 * (1.0 + 1e-9 * r.range(-1.0, 1.0));
            // Inside the box: the generator's values lie in [0, L).
            v.clamp(0.0, ulps(l, -1))
        })
        .collect();
    Set {
        name: "clustered, 53-bit coordinates",
        pos,
        b: fof_b(12 * 12 * 12, l),
        period,
    }
}

/// Pairs at distance b exactly and a few ulps either side, along an axis and
/// diagonally, around large offsets (1e6 + small separations), with
/// duplicates, in a periodic box across its faces, and non-finite values.
fn edge_sets(seed: u64) -> Vec<Set> {
    let mut r = Rng::new(seed);
    let mut out = Vec::new();
    // b = 0.1 is not a power of two: the rounded f64 differences decide.
    let b = 0.1;
    let mut ties = Vec::new();
    for k in 0..300 {
        let base = [
            1e6 + r.range(0.0, 30.0),
            -2e6 + r.range(0.0, 30.0),
            r.range(0.0, 30.0),
        ];
        let mut other = base;
        let d = ulps(b, (k % 7) as i64 - 3);
        other[k % 3] = base[k % 3] + d;
        ties.extend(base);
        ties.extend(other);
        if k % 10 == 0 {
            // A duplicate of each end.
            ties.extend(base);
            ties.extend(other);
        }
    }
    out.push(Set {
        name: "pairs at b +- 3 ulps, offsets 1e6",
        pos: ties,
        b,
        period: None,
    });
    // Exactly b along a diagonal in f64: a lattice of spacing b / sqrt(3) per
    // axis, whose computed distance falls on either side of b by rounding.
    let mut lattice = Vec::new();
    let s = b / 3f64.sqrt();
    for z in 0..8 {
        for y in 0..8 {
            for x in 0..8 {
                lattice.extend([
                    12345.678 + x as f64 * s,
                    0.5 + y as f64 * s,
                    z as f64 * s + 1e-7 * r.unit(),
                ]);
            }
        }
    }
    out.push(Set {
        name: "diagonal lattice at about b",
        pos: lattice,
        b,
        period: None,
    });
    // Periodic box: pairs straddling the faces at b +- ulps, the rest random.
    let l = 3.0;
    let mut wrap = Vec::new();
    for k in 0..250 {
        let a = [r.range(0.0, l), r.range(0.0, l), r.range(0.0, l)];
        let mut c = a;
        // a near 0 and c near L: the minimum image is the short way round.
        let axis = k % 3;
        let near0 = 0.03 * r.unit();
        c[axis] = l - (ulps(b, (k % 5) as i64 - 2) - near0);
        let mut a = a;
        a[axis] = near0;
        wrap.extend(a);
        wrap.extend(c);
    }
    out.push(Set {
        name: "periodic, pairs across the faces",
        pos: wrap,
        b,
        period: Some(l),
    });
    // Non-finite values among ordinary particles.
    let mut odd: Vec<f64> = (0..3 * 600).map(|_| r.range(0.0, 4.0)).collect();
    odd[4] = f64::NAN;
    odd[30] = f64::INFINITY;
    odd[61] = f64::NEG_INFINITY;
    out.push(Set {
        name: "non-finite values",
        pos: odd,
        b: 0.2,
        period: None,
    });
    // The f32 adversarial sets, widened to f64.
    for c in adversarial(seed).into_iter().take(3) {
        out.push(Set {
            name: "adversarial (f32 set as f64)",
            pos: c.pos.iter().map(|&x| x as f64).collect(),
            b: c.b,
            period: c.period,
        });
    }
    out
}

fn config(bound: Bound, b: f64, period: Option<f64>, method: Method) -> ParticleConfig {
    let mut cfg = ParticleConfig {
        bound,
        linking: Linking::Length(b),
        period,
        verify: true,
        ..ParticleConfig::default()
    };
    cfg.correction.method = method;
    cfg
}

/// Compress (builtin base), decode through the bytes, and check with the oracle.
fn check_set(set: &Set, rel: f64, method: Method) {
    check_set_on(set, rel, method, Base::Builtin);
}

fn check_set_on(set: &Set, rel: f64, method: Method, base: Base) {
    let links = brute_links(&set.pos, set.period, set.b);
    let cfg = ParticleConfig {
        base,
        ..config(Bound::Rel(rel), set.b, set.period, method)
    };
    let c = particles::compress(&set.pos, &cfg)
        .unwrap_or_else(|e| panic!("{} rel {rel} {method:?}: {e}", set.name));
    assert!(
        !c.report.lossless_fallback,
        "{} rel {rel} {method:?}: verify failed: {:?}",
        set.name, c.report.fallback_reason
    );
    let info = particles::info(&c.bytes).unwrap();
    assert_eq!(info.dtype, "f64");
    let d = particles::decompress_as::<f64>(&c.bytes).unwrap();
    assert_eq!(d.n, set.pos.len() / 3);
    let mut into = vec![0.0f64; set.pos.len()];
    particles::decompress_into(&c.bytes, &mut into).unwrap();
    assert!(
        into.iter()
            .zip(&d.pos)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "decompress_into differs from decompress_as"
    );
    let xi = c.report.abs_bound;
    let chk = check(&set.pos, &d.pos, set.period, set.b, xi, &links);
    assert!(
        chk.clean(),
        "{} rel {rel} {method:?} ({:?}): {chk:?}",
        set.name,
        c.report.source
    );
    assert!(
        matches!(c.report.source, particles::Source::Base(b) if b == base)
            || c.report.source == particles::Source::Lossless,
        "{}: source {:?}",
        set.name,
        c.report.source
    );
}

#[test]
fn every_link_kept_and_every_coordinate_in_bound() {
    let mut sets = vec![synth_f64(1, Some(10.0)), synth_f64(2, None)];
    sets.extend(edge_sets(3));
    sets.extend(edge_sets(4).into_iter().take(3));
    for set in &sets {
        for rel in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6] {
            for method in [Method::Auto, Method::Correct, Method::Safe] {
                check_set(set, rel, method);
            }
        }
    }
}

#[test]
fn tight_absolute_bounds_below_f32_resolution() {
    // xi far below an f32 ulp of the coordinates (2e6: f32 spacing 0.125),
    // within f64's: only f64 can compress this without storing everything.
    // (The built-in lattice codes |x / 2 xi| up to 2^40: 2e6 at xi 1e-6.)
    for set in edge_sets(5).iter().take(2) {
        let links = brute_links(&set.pos, set.period, set.b);
        for xi in [1e-5, 1e-6] {
            let cfg = config(Bound::Abs(xi), set.b, set.period, Method::Auto);
            let c = particles::compress(&set.pos, &cfg).unwrap();
            let d = particles::decompress_as::<f64>(&c.bytes).unwrap();
            let chk = check(&set.pos, &d.pos, set.period, set.b, xi, &links);
            assert!(chk.clean(), "{} xi {xi}: {chk:?}", set.name);
            assert!(
                d.pos
                    .iter()
                    .zip(&set.pos)
                    .any(|(a, b)| a.to_bits() != b.to_bits()),
                "{} xi {xi}: a lossy stream changes some coordinate",
                set.name
            );
        }
    }
}

#[test]
fn external_correction_of_f64_positions() {
    let set = synth_f64(6, Some(10.0));
    let links = brute_links(&set.pos, set.period, set.b);
    let cfg = config(Bound::Rel(1e-4), set.b, set.period, Method::Auto);
    let xi = particles::absolute_bound(&set.pos, cfg.bound);
    // Another compressor's output: within 0.9 xi, sometimes beyond.
    let mut r = Rng::new(9);
    let decoded: Vec<f64> = set
        .pos
        .iter()
        .enumerate()
        .map(|(k, &x)| {
            x + xi
                * if k % 97 == 0 {
                    3.0
                } else {
                    0.9 * r.range(-1.0, 1.0)
                }
        })
        .collect();
    let c = particles::correct_external(&set.pos, &decoded, &cfg).unwrap();
    assert_eq!(particles::info(&c.bytes).unwrap().dtype, "f64");
    let mut fixed = decoded.clone();
    particles::apply_external(&c.bytes, &mut fixed).unwrap();
    let chk = check(&set.pos, &fixed, set.period, set.b, xi, &links);
    assert!(chk.clean(), "{chk:?}");
    // The same correction cannot be applied to f32 positions.
    let mut as32: Vec<f32> = decoded.iter().map(|&x| x as f32).collect();
    let e = particles::apply_external(&c.bytes, &mut as32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message.contains("f64") && e.message.contains("f32"),
        "{e}"
    );
}

#[test]
fn a_stream_decodes_only_as_its_own_type() {
    let set = synth_f64(7, None);
    let cfg = config(Bound::Rel(1e-3), set.b, None, Method::Auto);
    let s64 = particles::compress(&set.pos, &cfg).unwrap().bytes;
    let pos32: Vec<f32> = set.pos.iter().map(|&x| x as f32).collect();
    let s32 = particles::compress(&pos32, &cfg).unwrap().bytes;
    let both = |e: factz::Error| {
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
        assert!(
            e.message.contains("f64") && e.message.contains("f32"),
            "{e}"
        );
    };
    both(particles::decompress(&s64).unwrap_err());
    both(particles::decompress_as::<f32>(&s64).unwrap_err());
    both(particles::decompress_as::<f64>(&s32).unwrap_err());
    let mut b32 = vec![0f32; pos32.len()];
    both(particles::decompress_into(&s64, &mut b32).unwrap_err());
    let mut b64 = vec![0f64; pos32.len()];
    both(particles::decompress_into(&s32, &mut b64).unwrap_err());
    // Lossless streams too (bound 0).
    let lossless = config(Bound::Abs(0.0), set.b, None, Method::Auto);
    let l64 = particles::compress(&set.pos, &lossless).unwrap().bytes;
    both(particles::decompress(&l64).unwrap_err());
    let d = particles::decompress_as::<f64>(&l64).unwrap();
    assert!(d
        .pos
        .iter()
        .zip(&set.pos)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // f32 is as before: f32 header, decodes as f32, holds 4-byte values.
    assert_eq!(particles::info(&s32).unwrap().dtype, "f32");
    assert_eq!(particles::decompress(&s32).unwrap().pos.len(), pos32.len());
    let l32 = particles::compress(&pos32, &lossless).unwrap().bytes;
    assert_eq!(l64.len() - l32.len(), 4 * pos32.len());
}

#[test]
fn f64_matches_f32_where_the_values_are_f32() {
    // f32 values held in f64: f64's differences of them are exact, so both
    // types see the same links; both streams keep them.
    let pos32 = synth_particles(10, 11, 5.0, &[]);
    let pos64: Vec<f64> = pos32.iter().map(|&x| x as f64).collect();
    let b = fof_b(1000, 5.0);
    let links = brute_links(&pos64, Some(5.0), b);
    for rel in [1e-3, 1e-5] {
        let cfg = config(Bound::Rel(rel), b, Some(5.0), Method::Auto);
        let d32 = particles::decompress(&particles::compress(&pos32, &cfg).unwrap().bytes).unwrap();
        let d64 =
            particles::decompress_as::<f64>(&particles::compress(&pos64, &cfg).unwrap().bytes)
                .unwrap();
        let xi = particles::absolute_bound(&pos64, cfg.bound);
        let r32: Vec<f64> = d32.pos.iter().map(|&x| x as f64).collect();
        for r in [&r32, &d64.pos] {
            let chk = check(&pos64, r, Some(5.0), b, xi, &links);
            assert!(chk.clean(), "rel {rel}: {chk:?}");
        }
    }
}

#[test]
fn zfp_base_keeps_every_f64_link() {
    // ZFP codes doubles as doubles: at a bound below f32's resolution of the
    // coordinates (the offsets-1e6 sets) a float32 round trip would miss it.
    if !Base::Zfp.available() {
        return;
    }
    let mut sets = vec![synth_f64(11, Some(10.0)), synth_f64(12, None)];
    sets.extend(edge_sets(13).into_iter().take(3));
    for set in &sets {
        for rel in [1e-3, 1e-5, 1e-7] {
            for method in [Method::Auto, Method::Correct] {
                check_set_on(set, rel, method, Base::Zfp);
            }
        }
    }
    let set = &edge_sets(14)[0];
    let cfg = ParticleConfig {
        base: Base::Zfp,
        ..config(Bound::Abs(1e-6), set.b, set.period, Method::Auto)
    };
    let c = particles::compress(&set.pos, &cfg).unwrap();
    assert_eq!(c.report.source, particles::Source::Base(Base::Zfp));
    assert!(c.bytes.len() < 8 * set.pos.len(), "{} bytes", c.bytes.len());
}

#[test]
fn sz3_base_refuses_f64_by_name() {
    let set = synth_f64(8, None);
    let cfg = ParticleConfig {
        base: Base::Sz3,
        ..config(Bound::Rel(1e-3), set.b, None, Method::Auto)
    };
    let e = particles::compress(&set.pos, &cfg).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("sz3"), "{e}");
    if Base::Sz3.available() {
        assert!(
            e.message.contains("f64") && e.message.contains("builtin or zfp"),
            "{e}"
        );
    }
}

#[test]
fn bad_f64_input_is_an_error() {
    let cfg = ParticleConfig::default();
    let e = particles::compress(&[1.0f64, 2.0], &cfg).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    // All non-finite: stored exactly, kept bit for bit.
    let pos = [f64::NAN, f64::INFINITY, 1.0, -0.0, f64::NEG_INFINITY, 2.0];
    let cfg = config(Bound::Rel(1e-3), 0.5, None, Method::Auto);
    let c = particles::compress(&pos, &cfg).unwrap();
    let d = particles::decompress_as::<f64>(&c.bytes).unwrap();
    assert!(d
        .pos
        .iter()
        .zip(&pos)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // A truncated f64 stream is an error, never a panic.
    let set = synth_f64(9, None);
    let c = particles::compress(
        &set.pos,
        &config(Bound::Rel(1e-3), set.b, None, Method::Auto),
    )
    .unwrap();
    for cut in [10, c.bytes.len() / 2, c.bytes.len() - 1] {
        assert!(particles::decompress_as::<f64>(&c.bytes[..cut]).is_err());
    }
}
