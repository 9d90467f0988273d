//! Streams written by earlier versions keep decoding to the same bits.
//!
//! `tests/golden/*.fz` are committed streams; next to each, `*.f32` holds its
//! decoded data (fields: u then v; particles, `*-particles-*`: x, y, z per particle;
//! little-endian). A format change must keep these
//! decoding; add new golden files, never regenerate old ones to paper over a change:
//! `FACTZ_WRITE_GOLDEN=LABEL cargo test --test golden_streams` writes the current
//! encoder's streams as `LABEL-*` (`v1-*`: the first released streams).

use factz::field::{compress, decompress, Bound, Coder, FieldConfig, Layout, Mode};
use factz::particles::{self, Linking, ParticleConfig};
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// A small field with critical points, a NaN, an Inf and a zero vector.
fn sample() -> (Vec<f32>, Vec<f32>, usize, usize) {
    let (ny, nx) = (37, 45);
    let mut u = Vec::new();
    let mut v = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = (i as f64 * 0.23, j as f64 * 0.19);
            u.push(((x + 0.4).sin() * (1.2 * y).cos() + 0.1 * (3.1 * x - y).sin()) as f32);
            v.push(((0.9 * x).cos() * (y - 0.3).sin() - 0.2 * (x + 1.9 * y).cos()) as f32);
        }
    }
    u[5] = f32::NAN;
    v[77] = f32::INFINITY;
    u[400] = 0.0;
    v[400] = 0.0;
    (u, v, ny, nx)
}

fn cases() -> Vec<(String, FieldConfig)> {
    let mut out = vec![];
    for (mode, m) in [(Mode::Blockwise, "b"), (Mode::Speculative, "s")] {
        for (coder, c) in [(Coder::Huffman, "huffman"), (Coder::Rans, "rans")] {
            for (zstd, z) in [(0, ""), (3, "-zstd")] {
                let cfg = FieldConfig {
                    mode,
                    coder,
                    zstd_level: zstd,
                    bound: Bound::Rel(1e-3),
                    layout: if zstd == 0 { Layout::Soa } else { Layout::Aos },
                    ..FieldConfig::default()
                };
                out.push((format!("{m}-{c}{z}"), cfg));
            }
        }
    }
    out
}

/// A small clustered particle set (deterministic LCG), periodic box 10.
fn particle_sample() -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut unit = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut pos = Vec::new();
    for _ in 0..40 {
        let c = [unit() * 10.0, unit() * 10.0, unit() * 10.0];
        for _ in 0..50 {
            for x in c {
                pos.push(((x + (unit() - 0.5) * 0.6).rem_euclid(10.0)) as f32);
            }
        }
    }
    pos
}

/// [`particle_sample`] in a shuffled order (the builtin base then codes density cells).
fn shuffled_sample() -> Vec<f32> {
    let mut pos = particle_sample();
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..pos.len() / 3).rev() {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = ((s >> 33) % (i as u64 + 1)) as usize;
        for d in 0..3 {
            pos.swap(3 * i + d, 3 * j + d);
        }
    }
    pos
}

/// Each case's name, config, and whether it takes the shuffled sample.
fn particle_cases() -> Vec<(String, ParticleConfig, bool)> {
    let base = ParticleConfig {
        linking: Linking::Length(0.1),
        period: Some(10.0),
        ..ParticleConfig::default()
    };
    vec![
        (
            "particles-builtin-rans".into(),
            ParticleConfig {
                bound: Bound::Rel(1e-3),
                ..base
            },
            false,
        ),
        (
            "particles-builtin-huffman-zstd".into(),
            ParticleConfig {
                bound: Bound::Rel(1e-4),
                coder: Coder::Huffman,
                zstd_level: 3,
                period: None,
                ..base
            },
            false,
        ),
        (
            "particles-builtin-chunk".into(),
            ParticleConfig {
                bound: Bound::Abs(2e-3),
                chunk_of_larger: true,
                ..base
            },
            false,
        ),
        (
            "particles-builtin-cells".into(),
            ParticleConfig {
                bound: Bound::Rel(1e-3),
                ..base
            },
            true,
        ),
    ]
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn to_bytes(u: &[f32], v: &[f32]) -> Vec<u8> {
    u.iter().chain(v).flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn golden_streams_decode_to_their_recorded_bits() {
    let dir = golden_dir();
    if let Ok(label) = std::env::var("FACTZ_WRITE_GOLDEN") {
        let (u, v, ny, nx) = sample();
        for (name, cfg) in cases() {
            let c = compress(&u, &v, ny, nx, &cfg).unwrap();
            let d = decompress(&c.bytes).unwrap();
            let base = dir.join(format!("{label}-{name}"));
            std::fs::write(base.with_extension("fz"), &c.bytes).unwrap();
            std::fs::write(base.with_extension("f32"), to_bytes(&d.u, &d.v)).unwrap();
        }
        let (pos, mixed) = (particle_sample(), shuffled_sample());
        for (name, cfg, shuffled) in particle_cases() {
            let pos = if shuffled { &mixed } else { &pos };
            let c = particles::compress(pos, &cfg).unwrap();
            assert!(c.report.correction.edited_coords > 0 || c.report.exact_particles > 0);
            let d = particles::decompress(&c.bytes).unwrap();
            let base = dir.join(format!("{label}-{name}"));
            std::fs::write(base.with_extension("fz"), &c.bytes).unwrap();
            std::fs::write(base.with_extension("f32"), f32_bytes(&d.pos)).unwrap();
        }
    }
    let (mut checked, mut particle_streams) = (0, 0);
    for entry in std::fs::read_dir(&dir).expect("tests/golden exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("fz") {
            continue;
        }
        let stream = std::fs::read(&path).unwrap();
        let expected = std::fs::read(path.with_extension("f32")).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let got = if name.contains("-particles-") {
            let d = particles::decompress(&stream).unwrap_or_else(|e| panic!("{name}: {e}"));
            particle_streams += 1;
            f32_bytes(&d.pos)
        } else {
            let d = decompress(&stream).unwrap_or_else(|e| panic!("{name}: {e}"));
            to_bytes(&d.u, &d.v)
        };
        assert!(got == expected, "{} decodes differently", path.display());
        checked += 1;
    }
    assert!(
        checked >= 8 && particle_streams >= 3,
        "expected the golden streams in {}",
        dir.display()
    );
}
