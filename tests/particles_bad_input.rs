//! Bad input for the particle API: corrupted, truncated and crafted streams, wrong
//! shapes, bad configurations. Corruption a checksum must catch (truncation, bit
//! flips) gives an error with a message; corruption made behind the checksums'
//! back (CRCs recomputed per the documented layout) reaches the decoders and must
//! give an error or a result of the right size — never a panic.

mod common;

use common::container::{fix_crcs, parse_layout};
use common::fields::Rng;
use common::particles::{fof_b, synth_particles};
use factz::codec::Coder;
use factz::particles::{
    self, apply_external, correct_external, Base, Bound, Linking, ParticleConfig,
};
use std::panic::{catch_unwind, AssertUnwindSafe};

struct Stream {
    name: String,
    bytes: Vec<u8>,
    /// What it decodes to: the positions, or (for a correction stream) the
    /// corrected external positions.
    reference: Vec<u32>,
    /// For correction streams: the positions it applies to.
    external: Option<Vec<f32>>,
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|c| c.to_bits()).collect()
}

/// f64 positions' bits as u32 words, low word first.
fn bits_f64(v: &[f64]) -> Vec<u32> {
    v.iter()
        .flat_map(|c| [c.to_bits() as u32, (c.to_bits() >> 32) as u32])
        .collect()
}

/// Decode a stream the way its kind requires (positions as f32 or f64,
/// whichever the stream holds: never both); Err carries the message.
fn decode(bytes: &[u8], external: Option<&Vec<f32>>) -> Result<Vec<u32>, String> {
    match external {
        None => match (
            particles::decompress(bytes),
            particles::decompress_as::<f64>(bytes),
        ) {
            (Ok(_), Ok(_)) => panic!("a stream decoded both as f32 and as f64"),
            (Ok(d), _) => Ok(bits(&d.pos)),
            (_, Ok(d)) => Ok(bits_f64(&d.pos)),
            (Err(e), _) => Err(e.to_string()),
        },
        Some(ext) => {
            let mut pos = ext.clone();
            apply_external(bytes, &mut pos)
                .map(|_| bits(&pos))
                .map_err(|e| e.to_string())
        }
    }
}

fn streams() -> Vec<Stream> {
    let pos = synth_particles(12, 21, 100.0, &[]);
    let b = fof_b(pos.len() / 3, 100.0);
    let mut out = Vec::new();
    let mut edits = 0;
    for (coder, zstd) in [(Coder::Rans, 0), (Coder::Huffman, 0), (Coder::Rans, 3)] {
        for rel in [1e-3, 1e-5] {
            let cfg = ParticleConfig {
                bound: Bound::Rel(rel),
                linking: Linking::Length(b),
                period: Some(100.0),
                coder,
                zstd_level: zstd,
                ..ParticleConfig::default()
            };
            let c = particles::compress(&pos, &cfg).unwrap();
            edits += c.report.correction.edited_coords;
            let reference = bits(&particles::decompress(&c.bytes).unwrap().pos);
            out.push(Stream {
                name: format!("{coder:?} zstd {zstd} rel {rel}"),
                bytes: c.bytes,
                reference,
                external: None,
            });
        }
    }
    assert!(
        edits > 0,
        "no stream carries edits: the mutations would test less"
    );
    // float64 positions (below f32's resolution), the builtin and ZFP bases.
    let pos64: Vec<f64> = pos
        .iter()
        .enumerate()
        .map(|(k, &x)| x as f64 * (1.0 + 1e-10 * ((k % 7) as f64 - 3.0)))
        .collect();
    for base in [Base::Builtin, Base::Zfp]
        .into_iter()
        .filter(|b| b.available())
    {
        let cfg = ParticleConfig {
            bound: Bound::Rel(1e-4),
            linking: Linking::Length(b),
            period: Some(100.0),
            base,
            ..ParticleConfig::default()
        };
        let c = particles::compress(&pos64, &cfg).unwrap();
        let reference = bits_f64(&particles::decompress_as::<f64>(&c.bytes).unwrap().pos);
        out.push(Stream {
            name: format!("f64 {} rel 1e-4", base.name()),
            bytes: c.bytes,
            reference,
            external: None,
        });
    }
    // A correction stream for positions from another compressor.
    let cfg = ParticleConfig {
        bound: Bound::Rel(1e-3),
        linking: Linking::Length(b),
        ..ParticleConfig::default()
    };
    let xi = particles::absolute_bound(&pos, cfg.bound);
    let ext: Vec<f32> = pos
        .iter()
        .map(|&x| ((x as f64 / (1.9 * xi)).round() * 1.9 * xi) as f32)
        .collect();
    let c = correct_external(&pos, &ext, &cfg).unwrap();
    let reference = decode(&c.bytes, Some(&ext)).unwrap();
    out.push(Stream {
        name: "external".into(),
        bytes: c.bytes,
        reference,
        external: Some(ext),
    });
    out
}

/// Decode under catch_unwind. A panic or an empty message always fails; `strict`
/// (the checksums must see it) also fails on any Ok; otherwise Ok must have the
/// stream's size.
fn judge(s: &Stream, what: &str, bytes: &[u8], strict: bool, failures: &mut Vec<String>) {
    match catch_unwind(AssertUnwindSafe(|| decode(bytes, s.external.as_ref()))) {
        Err(_) => failures.push(format!("{}: {what}: PANIC", s.name)),
        Ok(Err(m)) if m.is_empty() => failures.push(format!("{}: {what}: empty message", s.name)),
        Ok(Err(_)) => {}
        Ok(Ok(_)) if strict => failures.push(format!("{}: {what}: Ok, expected Err", s.name)),
        Ok(Ok(v)) if v.len() != s.reference.len() => {
            failures.push(format!("{}: {what}: Ok with {} values", s.name, v.len()))
        }
        Ok(Ok(_)) => {}
    }
}

#[test]
fn corrupted_streams_fail_cleanly() {
    let mut failures = Vec::new();
    let mut rng = Rng::new(5);
    for s in streams() {
        assert_eq!(decode(&s.bytes, s.external.as_ref()).unwrap(), s.reference);
        // Truncations.
        let step = (s.bytes.len() / 400).max(1);
        for len in (0..s.bytes.len()).step_by(step) {
            judge(
                &s,
                &format!("truncated to {len}"),
                &s.bytes[..len],
                true,
                &mut failures,
            );
        }
        // Random byte flips (caught by the checksums) ...
        for k in 0..200 {
            let mut b = s.bytes.clone();
            let at = rng.below(b.len());
            b[at] ^= 1 << (k % 8);
            judge(&s, &format!("flip at {at}"), &b, true, &mut failures);
        }
        // ... and the same with checksums re-sealed, so the decoders see the damage.
        let layout = parse_layout(&s.bytes).expect("stream follows the documented layout");
        for k in 0..600 {
            let mut b = s.bytes.clone();
            let at = rng.below(b.len());
            b[at] = match k % 3 {
                0 => b[at] ^ (1 << rng.below(8)),
                1 => rng.below(256) as u8,
                _ => 0xff,
            };
            fix_crcs(&mut b, &layout);
            judge(
                &s,
                &format!("re-sealed change at {at}"),
                &b,
                false,
                &mut failures,
            );
        }
        // Header fields set to extremes, re-sealed: shape, bound, b, box, edit bits, mode.
        for (at, len) in [
            (24usize, 8usize),
            (32, 8),
            (48, 8),
            (56, 1),
            (57, 1),
            (60, 8),
            (68, 8),
            (76, 8),
            (84, 4),
        ] {
            for fill in [0x00u8, 0x7f, 0xff] {
                let mut b = s.bytes.clone();
                b[at..at + len].fill(fill);
                fix_crcs(&mut b, &layout);
                judge(
                    &s,
                    &format!("header bytes {at}..{} = {fill:#x}", at + len),
                    &b,
                    false,
                    &mut failures,
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(30)].join("\n")
    );
}

#[test]
fn bad_arguments_are_clear_errors() {
    let pos = synth_particles(8, 22, 10.0, &[]);
    let ok = ParticleConfig {
        linking: Linking::Length(0.25),
        ..ParticleConfig::default()
    };
    let msg = |r: factz::Result<particles::Compressed>| {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(msg(particles::compress(&pos[..7], &ok)).contains("3 values per particle"));
    for bad in [
        ParticleConfig {
            bound: Bound::Abs(-1.0),
            ..ok
        },
        ParticleConfig {
            bound: Bound::Rel(f64::NAN),
            ..ok
        },
        ParticleConfig {
            linking: Linking::Length(0.0),
            ..ok
        },
        ParticleConfig {
            linking: Linking::Eta(f64::INFINITY),
            ..ok
        },
        ParticleConfig {
            period: Some(-3.0),
            ..ok
        },
        ParticleConfig {
            period: Some(0.4),
            ..ok
        },
        ParticleConfig {
            zstd_level: 40,
            ..ok
        },
        ParticleConfig {
            correction: particles::correct::Options {
                edit_bits: 30,
                ..ok.correction
            },
            ..ok
        },
    ] {
        let m = msg(particles::compress(&pos, &bad));
        assert!(!m.is_empty(), "{bad:?} accepted");
    }
    if !cfg!(feature = "sz3") {
        let m = msg(particles::compress(
            &pos,
            &ParticleConfig {
                base: Base::Sz3,
                ..ok
            },
        ));
        assert!(m.contains("not compiled in"), "{m}");
    }
    // Decoding into the wrong buffer, a field stream as particles, particles as a field.
    let c = particles::compress(&pos, &ok).unwrap();
    let mut small = vec![0f32; pos.len() - 3];
    assert!(particles::decompress_into(&c.bytes, &mut small).is_err());
    let field = factz::field::compress(&[1.0; 4], &[2.0; 4], 2, 2, &Default::default()).unwrap();
    assert!(particles::decompress(&field.bytes)
        .unwrap_err()
        .to_string()
        .contains("not particles"));
    assert!(factz::field::decompress(&c.bytes).is_err());
    // A complete stream is not a correction, and vice versa.
    let mut p2 = pos.clone();
    assert!(apply_external(&c.bytes, &mut p2).is_err());
    // Different lengths of originals and decoded positions.
    assert!(correct_external(&pos, &pos[..pos.len() - 3], &ok).is_err());
}

/// The fuzzer's guarantee failure (issue 18): in a periodic box of side 17 a
/// coordinate of -6.2e32 made the minimum image (a rounded multiple of the
/// side) and the grid cell (the exact residue) disagree, so a pair the rule
/// calls linked was never looked at and compression broke its link. Such
/// positions are now refused, by name, wherever particles are linked; within
/// a side of the box they are linked as the rule says (the adversarial sets).
#[test]
fn periodic_positions_far_outside_the_box_are_refused() {
    let a = [-0.0f32, 1e-40, 0.499_511_72];
    let far = [0.494_628_9f32, -6.235_846_3e32, 0.244_628_9];
    let pos: Vec<f32> = (0..47)
        .flat_map(|k| if k % 2 == 0 { a } else { far })
        .collect();
    let cfg = ParticleConfig {
        bound: Bound::Abs(0.1),
        linking: Linking::Length(0.55),
        period: Some(17.0),
        ..ParticleConfig::default()
    };
    let refused = |r: factz::Result<()>, who: &str| {
        let e = r.expect_err("positions more than a box side out were accepted");
        assert_eq!(e.kind, factz::ErrorKind::InvalidArgument);
        let m = e.to_string();
        assert!(
            m.contains(who) && m.contains("wrap positions into the box"),
            "{m}"
        );
    };
    let want = |r: factz::Result<()>| refused(r, "particle 1 has coordinate y");
    want(particles::compress(&pos, &cfg).map(drop));
    want(correct_external(&pos, &pos, &cfg).map(drop));
    let space = particles::Space::periodic(17.0);
    want(particles::fof::links(&pos, space, 0.55).map(drop));
    want(particles::metrics::changed_links(&pos, &pos, space, 0.55).map(drop));
    // One side out either way is a position like any other; just beyond is not.
    let mut edge = pos.clone();
    for p in edge.chunks_exact_mut(3) {
        p.copy_from_slice(&[-17.0, 34.0, 0.5]);
    }
    particles::compress(&edge, &cfg).expect("coordinates of -L and 2L are taken");
    edge[1] = f32::from_bits(34f32.to_bits() + 1);
    refused(
        particles::compress(&edge, &cfg).map(drop),
        "particle 0 has coordinate y",
    );
    // Open space has no box to be outside of.
    let open = ParticleConfig {
        period: None,
        ..cfg
    };
    particles::compress(&pos, &open).expect("open space takes any finite position");
}
