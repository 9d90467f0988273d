//! Streams written by earlier versions keep decoding to the same bits.
//!
//! `tests/golden/*.fz` are committed streams; next to each, `*.f32` (or `*.f64`
//! for a float64 stream) holds its decoded data (fields: u then v; particles,
//! `*-particles-*`: x, y, z per particle; little-endian). A format change must
//! keep these decoding; add new golden files, never regenerate old ones to paper
//! over a change: `FACTZ_WRITE_GOLDEN=LABEL cargo test --test golden_streams`
//! writes the current encoder's streams as `LABEL-*` (`v1-*`: the first released
//! streams), skipping every name that already exists.

use factz::field::{self, compress, decompress, Bound, Coder, FieldConfig, Layout, Mode};
use factz::particles::{self, Linking, ParticleConfig};
use factz::Real;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// A small field with critical points, a NaN, an Inf and a zero vector (in
/// f64, every value keeps digits an f32 reading would round away).
fn sample<T: Real>() -> (Vec<T>, Vec<T>, usize, usize) {
    sized_sample(37, 45)
}

/// [`sample`]'s field on an ny x nx grid (at least 37 x 45).
fn sized_sample<T: Real>(ny: usize, nx: usize) -> (Vec<T>, Vec<T>, usize, usize) {
    let mut u = Vec::new();
    let mut v = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = (i as f64 * 0.23, j as f64 * 0.19);
            u.push(T::from_f64(
                (x + 0.4).sin() * (1.2 * y).cos() + 0.1 * (3.1 * x - y).sin(),
            ));
            v.push(T::from_f64(
                (0.9 * x).cos() * (y - 0.3).sin() - 0.2 * (x + 1.9 * y).cos(),
            ));
        }
    }
    u[5] = T::from_f64(f64::NAN);
    v[77] = T::INFINITY;
    u[400] = T::from_f64(0.0);
    v[400] = T::from_f64(0.0);
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
fn particle_sample<T: Real>() -> Vec<T> {
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
                pos.push(T::from_f64((x + (unit() - 0.5) * 0.6).rem_euclid(10.0)));
            }
        }
    }
    pos
}

/// [`particle_sample`] in a shuffled order (the builtin base then codes density cells).
fn shuffled_sample() -> Vec<f32> {
    let mut pos = particle_sample::<f32>();
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

type Named<C> = (String, C);

/// The float64 cases: both modes and the builtin particle base, with both
/// coders, as `f64-` + the f32 case's name.
fn f64_cases() -> (Vec<Named<FieldConfig>>, Vec<Named<ParticleConfig>>) {
    let fields = cases()
        .into_iter()
        .filter(|(name, _)| ["s-rans", "s-huffman-zstd", "b-rans"].contains(&name.as_str()))
        .map(|(name, cfg)| (format!("f64-{name}"), cfg))
        .collect();
    let parts = particle_cases()
        .into_iter()
        .filter(|(name, _, shuffled)| !shuffled && !name.ends_with("chunk"))
        .map(|(name, cfg, _)| (format!("f64-{name}"), cfg))
        .collect();
    (fields, parts)
}

fn le_bytes<T: Real>(v: &[T]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| x.to_bits64().to_le_bytes()[..T::BYTES].to_vec())
        .collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    le_bytes(v)
}

fn to_bytes<T: Real>(u: &[T], v: &[T]) -> Vec<u8> {
    [le_bytes(u), le_bytes(v)].concat()
}

/// Writes `LABEL-NAME.fz` and its decoded data as `.f32` / `.f64`, unless the
/// stream exists already (golden streams are never regenerated).
fn write_golden(label: &str, name: &str, stream: &[u8], decoded: &[u8], ext: &str) {
    let base = golden_dir().join(format!("{label}-{name}"));
    if base.with_extension("fz").exists() {
        return;
    }
    std::fs::write(base.with_extension("fz"), stream).unwrap();
    std::fs::write(base.with_extension(ext), decoded).unwrap();
}

#[test]
fn golden_streams_decode_to_their_recorded_bits() {
    let dir = golden_dir();
    if let Ok(label) = std::env::var("FACTZ_WRITE_GOLDEN") {
        let (u, v, ny, nx) = sample::<f32>();
        for (name, cfg) in cases() {
            let c = compress(&u, &v, ny, nx, &cfg).unwrap();
            let d = decompress(&c.bytes).unwrap();
            write_golden(&label, &name, &c.bytes, &to_bytes(&d.u, &d.v), "f32");
        }
        // Mode S codes in several segments, some kept as zero runs (v5 on).
        let (u, v, ny, nx) = sized_sample::<f32>(144, 160);
        let cfg = FieldConfig {
            mode: Mode::Speculative,
            coder: Coder::Rans,
            bound: Bound::Rel(1e-2),
            ..FieldConfig::default()
        };
        let c = compress(&u, &v, ny, nx, &cfg).unwrap();
        let d = decompress(&c.bytes).unwrap();
        write_golden(
            &label,
            "s-rans-segments",
            &c.bytes,
            &to_bytes(&d.u, &d.v),
            "f32",
        );
        let (pos, mixed) = (particle_sample::<f32>(), shuffled_sample());
        for (name, cfg, shuffled) in particle_cases() {
            let pos = if shuffled { &mixed } else { &pos };
            let c = particles::compress(pos, &cfg).unwrap();
            assert!(c.report.correction.edited_coords > 0 || c.report.exact_particles > 0);
            let d = particles::decompress(&c.bytes).unwrap();
            write_golden(&label, &name, &c.bytes, &f32_bytes(&d.pos), "f32");
        }
        let (u, v, ny, nx) = sample::<f64>();
        let pos = particle_sample::<f64>();
        let (fields, parts) = f64_cases();
        for (name, cfg) in fields {
            let c = compress(&u, &v, ny, nx, &cfg).unwrap();
            let d = field::decompress_as::<f64>(&c.bytes).unwrap();
            write_golden(&label, &name, &c.bytes, &to_bytes(&d.u, &d.v), "f64");
        }
        for (name, cfg) in parts {
            let c = particles::compress(&pos, &cfg).unwrap();
            let d = particles::decompress_as::<f64>(&c.bytes).unwrap();
            write_golden(&label, &name, &c.bytes, &le_bytes(&d.pos), "f64");
        }
    }
    let (mut checked, mut particle_streams, mut f64_streams) = (0, 0, 0);
    for entry in std::fs::read_dir(&dir).expect("tests/golden exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("fz") {
            continue;
        }
        let stream = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let wide = path.with_extension("f64").exists();
        let expected =
            std::fs::read(path.with_extension(if wide { "f64" } else { "f32" })).unwrap();
        let got = if wide {
            f64_streams += 1;
            if name.contains("-particles-") {
                let d = particles::decompress_as::<f64>(&stream);
                le_bytes(&d.unwrap_or_else(|e| panic!("{name}: {e}")).pos)
            } else {
                let d =
                    field::decompress_as::<f64>(&stream).unwrap_or_else(|e| panic!("{name}: {e}"));
                to_bytes(&d.u, &d.v)
            }
        } else if name.contains("-particles-") {
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
        checked >= 8 && particle_streams >= 3 && f64_streams >= 5,
        "expected the golden streams in {}",
        dir.display()
    );
}
