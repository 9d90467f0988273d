//! The particle C ABI: `tests/c/particles_roundtrip.c` compiled with the system C
//! compiler against `include/factz.h` and the static and shared libraries this
//! `cargo test` built (the approach of `tests/c_api.rs`), then edge cases C cannot
//! express portably (misaligned pointers, counts past one stream) and the
//! correction-size bound, through the exported functions called directly.

#[path = "common/cbuild.rs"]
mod cbuild;

use factz::capi::error::last_error;
use factz::capi::field::{factz_coder, FACTZ_CHUNK_OF_LARGER};
use factz::capi::particles::*;
use factz::capi::status::factz_status::{self, *};
use factz::particles::{self, MAX_PARTICLES};
use std::mem::{size_of, zeroed};
use std::process::Command;
use std::ptr::{null, null_mut};

const DIR: &str = "c_api_particles";

#[test]
fn c_particles_roundtrip_static() {
    let exe = cbuild::build_static(DIR, "particles_roundtrip.c", "particles_roundtrip_static");
    let stdout = cbuild::run(&mut Command::new(&exe), "particles_roundtrip (static)");
    cbuild::assert_summary(&stdout, "particles_roundtrip (static)");
}

#[test]
fn c_particles_roundtrip_shared() {
    let exe = cbuild::build_shared(DIR, "particles_roundtrip.c", "particles_roundtrip_shared");
    let stdout = cbuild::run(&mut Command::new(&exe), "particles_roundtrip (shared)");
    cbuild::assert_summary(&stdout, "particles_roundtrip (shared)");
}

/// Deterministic pseudo-random numbers (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Uniform particles in a box of side `l`, AoS.
fn uniform(n: usize, l: f64, seed: u64) -> Vec<f32> {
    let mut r = Rng(seed);
    (0..3 * n).map(|_| (r.uniform() * l) as f32).collect()
}

fn config() -> factz_particles_config {
    // SAFETY: the struct is plain integers and floats; all-zero bytes are a value.
    let mut c: factz_particles_config = unsafe { zeroed() };
    c.struct_size = size_of::<factz_particles_config>() as u32;
    // SAFETY: a valid, writable config with its struct_size.
    assert_eq!(unsafe { factz_particles_config_default(&mut c) }, FACTZ_OK);
    c
}

fn report() -> factz_particles_report {
    // SAFETY: plain integers and floats.
    let mut r: factz_particles_report = unsafe { zeroed() };
    r.struct_size = size_of::<factz_particles_report>() as u32;
    r
}

fn compress(pos: &[f32], cfg: &factz_particles_config) -> (factz_status, Vec<u8>) {
    let n = pos.len() / 3;
    let mut cap = 0;
    // SAFETY: valid pointers.
    assert_eq!(
        unsafe { factz_particles_max_compressed_size(n, &mut cap) },
        FACTZ_OK
    );
    let mut out = vec![0u8; cap];
    let mut len = 0;
    // SAFETY: pos holds 3n floats, out cap bytes.
    let s =
        unsafe { factz_particles_compress(pos.as_ptr(), n, cfg, out.as_mut_ptr(), cap, &mut len) };
    out.truncate(len);
    (s, out)
}

#[test]
fn misaligned_pointers_are_refused() {
    let pos = uniform(100, 10.0, 1);
    let cfg = config();
    let (s, stream) = compress(&pos, &cfg);
    assert_eq!(s, FACTZ_OK, "{}", last_error());
    // A float array one byte off its alignment, inside a buffer we own.
    let mut raw = vec![0u8; 12 * 100 + 8];
    let base = raw.as_mut_ptr();
    let off = (0..4).find(|k| (base as usize + k) % 4 == 1).unwrap();
    // SAFETY: in bounds of raw; never dereferenced by factz (it checks alignment first).
    let odd = unsafe { base.add(off) } as *mut f32;
    let mut len = 0;
    let mut out = vec![0u8; 100_000];
    // SAFETY: all pointers point into live buffers of the stated sizes.
    unsafe {
        let s = factz_particles_compress(odd, 100, &cfg, out.as_mut_ptr(), out.len(), &mut len);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        assert!(
            last_error().contains("xyz is not aligned"),
            "{}",
            last_error()
        );
        let s = factz_particles_decompress(stream.as_ptr(), stream.len(), odd, 100);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        assert!(last_error().contains("aligned"), "{}", last_error());
        let s = factz_particles_apply(stream.as_ptr(), stream.len(), odd, 100);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        let mut labels = vec![0u32; 101];
        let odd_labels = (labels.as_mut_ptr() as *mut u8).add(2) as *mut u32;
        let s = factz_fof_labels(pos.as_ptr(), 100, 0.5, 0.0, odd_labels);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        assert!(
            last_error().contains("labels is not aligned"),
            "{}",
            last_error()
        );
        let mut b = [0f64; 2];
        let odd_b = (b.as_mut_ptr() as *mut u8).add(4) as *mut f64;
        let s = factz_particles_linking_length(pos.as_ptr(), 100, FACTZ_LINK_ETA, 0.2, 0.0, odd_b);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        let mut c = [config(), config()];
        let odd_cfg = (c.as_mut_ptr() as *mut u8).add(4) as *mut factz_particles_config;
        odd_cfg
            .cast::<u32>()
            .write(size_of::<factz_particles_config>() as u32);
        let s = factz_particles_config_default(odd_cfg);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        assert!(
            last_error().contains("config is not aligned"),
            "{}",
            last_error()
        );
    }
}

#[test]
fn counts_past_one_stream_are_refused_before_any_access() {
    let cfg = config();
    let dangling = std::ptr::NonNull::<f32>::dangling().as_ptr();
    let mut len = 7;
    let mut size = 7;
    for n in [MAX_PARTICLES + 1, usize::MAX / 3 + 1, usize::MAX] {
        // SAFETY: factz refuses the count before touching any pointer.
        unsafe {
            assert_eq!(
                factz_particles_max_compressed_size(n, &mut size),
                FACTZ_INVALID_ARGUMENT
            );
            assert_eq!(size, 0);
            assert_eq!(
                factz_particles_max_correction_size(n, &mut size),
                FACTZ_INVALID_ARGUMENT
            );
            let s = factz_particles_compress(dangling, n, &cfg, null_mut(), 0, &mut len);
            assert_eq!((s, len), (FACTZ_INVALID_ARGUMENT, 0));
            assert!(last_error().contains("too large"), "{}", last_error());
            let s = factz_particles_compress_soa(
                dangling,
                dangling,
                dangling,
                n,
                &cfg,
                null_mut(),
                0,
                &mut len,
            );
            assert_eq!(s, FACTZ_INVALID_ARGUMENT);
            let s = factz_particles_correct(dangling, dangling, n, &cfg, null_mut(), 0, &mut len);
            assert_eq!(s, FACTZ_INVALID_ARGUMENT);
            let s = factz_fof_labels(dangling, n, 1.0, 0.0, null_mut());
            assert_eq!(s, FACTZ_INVALID_ARGUMENT);
            let mut count = 3;
            let s = factz_fof_halos(null(), n, 1, null_mut(), null_mut(), 0, &mut count);
            assert_eq!((s, count), (FACTZ_INVALID_ARGUMENT, 0));
            let mut b = 1.0;
            let s = factz_particles_linking_length(dangling, n, FACTZ_LINK_ETA, 0.2, 0.0, &mut b);
            assert_eq!((s, b), (FACTZ_INVALID_ARGUMENT, 0.0));
        }
    }
    // The largest count one stream holds still has sizes.
    // SAFETY: valid out pointers.
    unsafe {
        assert_eq!(
            factz_particles_max_compressed_size(MAX_PARTICLES, &mut size),
            FACTZ_OK
        );
        assert_eq!(size, particles::max_compressed_size(MAX_PARTICLES).unwrap());
        assert_eq!(
            factz_particles_max_correction_size(MAX_PARTICLES, &mut size),
            FACTZ_OK
        );
        assert!(size > 12 * MAX_PARTICLES);
    }
}

#[test]
fn struct_sizes_are_checked() {
    let pos = uniform(50, 10.0, 2);
    let (s, stream) = compress(&pos, &config());
    assert_eq!(s, FACTZ_OK);
    // SAFETY: plain data.
    let mut info: factz_particles_stream_info = unsafe { zeroed() };
    for bad in [0u32, 4, 64, 88, u32::MAX] {
        info.struct_size = bad;
        // SAFETY: valid pointers; struct_size is checked before anything is written.
        let s = unsafe { factz_particles_info(stream.as_ptr(), stream.len(), &mut info) };
        assert_eq!(s, FACTZ_INVALID_ARGUMENT, "info struct_size {bad}");
        assert!(
            last_error().contains("sizeof(factz_particles_stream_info)"),
            "{}",
            last_error()
        );
        let mut cfg = config();
        cfg.struct_size = bad.wrapping_add(8);
        let mut len = 0;
        let mut out = vec![0u8; 10_000];
        // SAFETY: valid pointers.
        let s = unsafe {
            factz_particles_compress(
                pos.as_ptr(),
                50,
                &cfg,
                out.as_mut_ptr(),
                out.len(),
                &mut len,
            )
        };
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        let mut rep = report();
        rep.struct_size = bad;
        // SAFETY: valid pointers.
        let s = unsafe {
            factz_particles_compress_ex(
                pos.as_ptr(),
                50,
                &config(),
                out.as_mut_ptr(),
                out.len(),
                &mut len,
                &mut rep,
            )
        };
        assert_eq!(s, FACTZ_INVALID_ARGUMENT);
        assert!(
            last_error().contains("report->struct_size"),
            "{}",
            last_error()
        );
    }
    info.struct_size = size_of::<factz_particles_stream_info>() as u32;
    // SAFETY: valid pointers.
    assert_eq!(
        unsafe { factz_particles_info(stream.as_ptr(), stream.len(), &mut info) },
        FACTZ_OK
    );
    assert_eq!((info.n, info.layout), (50, 1));
    assert!(info.source == FACTZ_BASE_BUILTIN || info.source == FACTZ_SOURCE_LOSSLESS);
}

#[test]
fn c_results_match_the_rust_api() {
    let pos = uniform(2000, 20.0, 3);
    let mut cfg = config();
    cfg.bound_kind = 1;
    cfg.bound = 0.01;
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = 0.4;
    cfg.box_side = 20.0;
    cfg.flags = FACTZ_CHUNK_OF_LARGER;
    cfg.coder = factz_coder::FACTZ_CODER_HUFFMAN as u32;
    let (s, stream) = compress(&pos, &cfg);
    assert_eq!(s, FACTZ_OK, "{}", last_error());
    let rust_cfg = particles::ParticleConfig {
        bound: particles::Bound::Abs(0.01),
        linking: particles::Linking::Length(0.4),
        period: Some(20.0),
        chunk_of_larger: true,
        coder: factz::codec::Coder::Huffman,
        ..particles::ParticleConfig::default()
    };
    let c = particles::compress(&pos, &rust_cfg).unwrap();
    assert_eq!(
        c.bytes, stream,
        "the C and Rust entry points write the same stream"
    );
    let mut out = vec![0f32; pos.len()];
    // SAFETY: valid pointers.
    let s = unsafe {
        factz_particles_decompress(stream.as_ptr(), stream.len(), out.as_mut_ptr(), 2000)
    };
    assert_eq!(s, FACTZ_OK);
    let d = particles::decompress(&stream).unwrap();
    assert!(out
        .iter()
        .zip(&d.pos)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // FoF labels equal the library's.
    let mut labels = vec![0u32; 2000];
    // SAFETY: valid pointers.
    let s = unsafe { factz_fof_labels(pos.as_ptr(), 2000, 0.4, 20.0, labels.as_mut_ptr()) };
    assert_eq!(s, FACTZ_OK);
    assert_eq!(
        labels,
        particles::fof::labels(&pos, particles::Space::periodic(20.0), 0.4).unwrap()
    );
}

/// The correction bound holds for the worst streams: every particle stored
/// exactly with full-entropy bits, and edits on every coordinate, each coder,
/// with and without zstd, across coder block boundaries.
#[test]
fn correction_size_bound_holds_in_the_worst_case() {
    for (n, seed) in [(1usize, 4u64), (20_000, 5)] {
        // Full-entropy bit patterns (finite): exact storage cannot compress them.
        let mut r = Rng(seed);
        let orig: Vec<f32> = (0..3 * n)
            .map(|_| {
                let x = f32::from_bits((r.next() as u32) & 0x7f7f_ffff);
                if x.is_finite() {
                    x
                } else {
                    1.0
                }
            })
            .collect();
        let decoded: Vec<f32> = orig.iter().map(|x| -x).collect();
        let mut bound = 0;
        // SAFETY: valid pointer.
        assert_eq!(
            unsafe { factz_particles_max_correction_size(n, &mut bound) },
            FACTZ_OK
        );
        for coder in [1u32, 2] {
            for zstd in [0, 3] {
                let mut cfg = config();
                cfg.bound_kind = 1;
                cfg.bound = 0.0;
                cfg.linking_kind = FACTZ_LINK_LENGTH;
                cfg.linking = 1.0;
                cfg.coder = coder;
                cfg.zstd_level = zstd;
                let mut out = vec![0u8; bound];
                let mut len = 0;
                let mut rep = report();
                // SAFETY: valid pointers and sizes.
                let s = unsafe {
                    factz_particles_correct_ex(
                        orig.as_ptr(),
                        decoded.as_ptr(),
                        n,
                        &cfg,
                        out.as_mut_ptr(),
                        bound,
                        &mut len,
                        &mut rep,
                    )
                };
                assert_eq!(
                    s,
                    FACTZ_OK,
                    "n {n} coder {coder} zstd {zstd}: {}",
                    last_error()
                );
                assert_eq!(rep.exact_particles, n as u64);
                assert!(len <= bound, "n {n} coder {coder}: {len} > {bound}");
                eprintln!("worst case n {n} coder {coder} zstd {zstd}: {len} of {bound} bytes");
            }
        }
    }
    // Many edits: a dense set whose decoded positions are all shifted by 0.9 xi.
    let n = 20_000;
    let orig = uniform(n, 10.0, 6);
    let xi = 0.01;
    let decoded: Vec<f32> = orig
        .iter()
        .enumerate()
        .map(|(k, &x)| x + if k % 2 == 0 { 0.9 } else { -0.9 } as f32 * xi as f32)
        .collect();
    let mut bound = 0;
    // SAFETY: valid pointer.
    assert_eq!(
        unsafe { factz_particles_max_correction_size(n, &mut bound) },
        FACTZ_OK
    );
    for coder in [1u32, 2] {
        let mut cfg = config();
        cfg.bound_kind = 1;
        cfg.bound = xi;
        cfg.linking_kind = FACTZ_LINK_LENGTH;
        cfg.linking = 0.2;
        cfg.coder = coder;
        cfg.edit_bits = 24;
        let mut out = vec![0u8; bound];
        let mut len = 0;
        let mut rep = report();
        // SAFETY: valid pointers and sizes.
        let s = unsafe {
            factz_particles_correct_ex(
                orig.as_ptr(),
                decoded.as_ptr(),
                n,
                &cfg,
                out.as_mut_ptr(),
                bound,
                &mut len,
                &mut rep,
            )
        };
        assert_eq!(s, FACTZ_OK, "{}", last_error());
        assert!(len <= bound);
        eprintln!(
            "edits coder {coder}: {} edits, {} exact, {len} of {bound} bytes",
            rep.edited_coords, rep.exact_particles
        );
    }
}

/// Random bytes after a valid header never decode, never panic.
#[test]
fn garbage_never_panics() {
    let pos = uniform(300, 10.0, 7);
    let (s, stream) = compress(&pos, &config());
    assert_eq!(s, FACTZ_OK);
    let mut r = Rng(8);
    let mut out = vec![0f32; 900];
    for round in 0..300 {
        let mut bad = stream.clone();
        let k = 1 + (r.next() % 6) as usize;
        for _ in 0..k {
            let at = (r.next() as usize) % bad.len();
            bad[at] = r.next() as u8;
        }
        if round % 3 == 0 {
            bad.truncate((r.next() as usize) % bad.len());
        }
        // SAFETY: valid pointers and sizes.
        let s =
            unsafe { factz_particles_decompress(bad.as_ptr(), bad.len(), out.as_mut_ptr(), 300) };
        assert_ne!(s, FACTZ_PANIC, "{}", last_error());
        if bad != stream {
            assert_ne!(s, FACTZ_OK, "round {round}: a damaged stream decoded");
        }
        // SAFETY: as above.
        let s = unsafe { factz_particles_apply(bad.as_ptr(), bad.len(), out.as_mut_ptr(), 300) };
        assert_ne!(s, FACTZ_PANIC, "{}", last_error());
    }
}
