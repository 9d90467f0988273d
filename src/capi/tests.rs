//! Unit tests of the boundary: panics become FACTZ_PANIC, NULLs FACTZ_NULL_POINTER,
//! messages land in the calling thread's last error. The exported functions are
//! called directly, as C would.

use super::error::{factz_last_error, factz_last_error_copy, last_error};
use super::field::*;
use super::status::{factz_status, factz_status_string};
use super::version::*;
use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

use factz_status::*;

/// An exported-style function whose body panics, behind the same boundary.
extern "C" fn panicking_status() -> factz_status {
    ffi_boundary!("panicking_status", {
        let v: Vec<u32> = Vec::new();
        if v.is_empty() {
            panic!("deliberate test panic {}", 42);
        }
        Ok(())
    })
}

extern "C" fn panicking_value() -> usize {
    ffi_boundary!("panicking_value", 7usize, {
        let v: Vec<usize> = Vec::new();
        v[3] // out of bounds: panics with a String payload
    })
}

fn last() -> String {
    // SAFETY: factz_last_error never returns NULL and the string is NUL-terminated.
    unsafe { CStr::from_ptr(factz_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn config() -> factz_field_config {
    let mut c = factz_field_config {
        struct_size: std::mem::size_of::<factz_field_config>() as u32,
        mode: 0,
        bound_kind: 0,
        coder: 0,
        bound: 0.0,
        zstd_level: 0,
        flags: 0,
        layout: 0,
        backend: 0,
    };
    // SAFETY: a valid, writable config with its struct_size.
    assert_eq!(unsafe { factz_field_config_default(&mut c) }, FACTZ_OK);
    c
}

/// A smooth field with a few critical points.
fn field(ny: usize, nx: usize) -> (Vec<f32>, Vec<f32>) {
    let mut u = Vec::with_capacity(ny * nx);
    let mut v = Vec::with_capacity(ny * nx);
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = (i as f32 * 0.21, j as f32 * 0.17);
            u.push(x.sin() * y.cos() + 0.1);
            v.push((0.7 * x).cos() * (1.3 * y).sin() - 0.05);
        }
    }
    (u, v)
}

#[test]
fn panic_becomes_status_and_message() {
    assert_eq!(panicking_status(), FACTZ_PANIC);
    let msg = last();
    assert!(msg.contains("panicking_status"), "{msg}");
    assert!(msg.contains("deliberate test panic 42"), "{msg}");
    // The library stays usable and a successful call clears the message.
    let mut n = 0usize;
    // SAFETY: a valid out pointer.
    assert_eq!(
        unsafe { factz_field_max_compressed_size(4, 4, &mut n) },
        FACTZ_OK
    );
    assert!(n > 0);
    assert_eq!(last(), "");
}

#[test]
fn panic_in_value_accessor_gives_default() {
    assert_eq!(panicking_value(), 7);
    assert!(
        last_error().contains("index out of bounds"),
        "{}",
        last_error()
    );
}

#[test]
fn null_pointers_are_reported() {
    let cfg = config();
    let (u, v) = field(8, 9);
    let mut out = vec![0u8; 4096];
    let mut len = 0usize;
    // SAFETY: in all calls below, every non-NULL pointer is valid for the sizes passed.
    unsafe {
        assert_eq!(
            factz_field_compress(
                null(),
                u.as_ptr(),
                v.as_ptr(),
                8,
                9,
                out.as_mut_ptr(),
                out.len(),
                &mut len
            ),
            FACTZ_NULL_POINTER
        );
        assert!(last().contains("config is NULL"), "{}", last());
        assert_eq!(
            factz_field_compress(
                &cfg,
                null(),
                v.as_ptr(),
                8,
                9,
                out.as_mut_ptr(),
                out.len(),
                &mut len
            ),
            FACTZ_NULL_POINTER
        );
        assert!(last().contains("u is NULL"), "{}", last());
        assert_eq!(
            factz_field_compress(
                &cfg,
                u.as_ptr(),
                v.as_ptr(),
                8,
                9,
                out.as_mut_ptr(),
                out.len(),
                null_mut()
            ),
            FACTZ_NULL_POINTER
        );
        assert!(last().contains("out_len is NULL"), "{}", last());
        assert_eq!(
            factz_field_compress(
                &cfg,
                u.as_ptr(),
                v.as_ptr(),
                8,
                9,
                null_mut(),
                100,
                &mut len
            ),
            FACTZ_NULL_POINTER
        );
        // out NULL with capacity 0: the size query.
        assert_eq!(
            factz_field_compress(&cfg, u.as_ptr(), v.as_ptr(), 8, 9, null_mut(), 0, &mut len),
            FACTZ_BUFFER_TOO_SMALL
        );
        assert!(len > 0);
        assert_eq!(
            factz_field_max_compressed_size(8, 9, null_mut()),
            FACTZ_NULL_POINTER
        );
        assert_eq!(factz_field_config_default(null_mut()), FACTZ_NULL_POINTER);
        assert_eq!(factz_field_info(null(), 10, null_mut()), FACTZ_NULL_POINTER);
        let mut info: factz_field_stream_info = std::mem::zeroed();
        info.struct_size = std::mem::size_of::<factz_field_stream_info>() as u32;
        assert_eq!(factz_field_info(null(), 10, &mut info), FACTZ_NULL_POINTER);
        assert!(last().contains("stream is NULL"), "{}", last());
        assert_eq!(
            factz_field_decompress(null(), 10, null_mut(), null_mut(), 8, 9),
            FACTZ_NULL_POINTER
        );
        // NULL with length 0 is an empty stream: refused as such.
        assert_eq!(
            factz_field_decompress_interleaved(null(), 0, null_mut(), 8, 9),
            FACTZ_CORRUPT_STREAM
        );
        let mut count = 0usize;
        assert_eq!(
            factz_field_critical_points(u.as_ptr(), null(), 8, 9, &mut count, null_mut(), 0),
            FACTZ_NULL_POINTER
        );
        assert_eq!(
            factz_field_critical_points(u.as_ptr(), v.as_ptr(), 8, 9, null_mut(), null_mut(), 0),
            FACTZ_NULL_POINTER
        );
        assert_eq!(
            factz_field_critical_points(u.as_ptr(), v.as_ptr(), 8, 9, &mut count, null_mut(), 5),
            FACTZ_NULL_POINTER
        );
    }
}

#[test]
fn round_trip_and_errors() {
    let (ny, nx) = (20, 23);
    let (u, v) = field(ny, nx);
    let mut cfg = config();
    cfg.bound_kind = factz_bound_kind::FACTZ_BOUND_ABS as u32;
    cfg.bound = 1e-2;
    let mut cap = 0usize;
    let mut len = 0usize;
    let mut report: factz_field_report = factz_field_report {
        struct_size: 24,
        flags: 0,
        abs_bound: 0.0,
        exact_vertices: 0,
    };
    // SAFETY: in all calls below, every pointer is valid for the sizes passed.
    unsafe {
        assert_eq!(factz_field_max_compressed_size(ny, nx, &mut cap), FACTZ_OK);
        let mut out = vec![0u8; cap];
        assert_eq!(
            factz_field_compress_ex(
                &cfg,
                u.as_ptr(),
                v.as_ptr(),
                ny,
                nx,
                out.as_mut_ptr(),
                cap,
                &mut len,
                &mut report
            ),
            FACTZ_OK,
            "{}",
            last()
        );
        assert_eq!(report.abs_bound, 1e-2);
        let s = out[..len].to_vec();
        let slen = len;
        let (mut u2, mut v2) = (vec![0f32; ny * nx], vec![0f32; ny * nx]);
        assert_eq!(
            factz_field_decompress(s.as_ptr(), slen, u2.as_mut_ptr(), v2.as_mut_ptr(), ny, nx),
            FACTZ_OK
        );
        for k in 0..ny * nx {
            assert!((u2[k] as f64 - u[k] as f64).abs() <= 1e-2);
            assert!((v2[k] as f64 - v[k] as f64).abs() <= 1e-2);
        }
        // Shape mismatch.
        assert_eq!(
            factz_field_decompress(s.as_ptr(), slen, u2.as_mut_ptr(), v2.as_mut_ptr(), nx, ny),
            FACTZ_INVALID_ARGUMENT
        );
        assert!(last().contains("20x23"), "{}", last());
        // Aliased outputs.
        assert_eq!(
            factz_field_decompress(s.as_ptr(), slen, u2.as_mut_ptr(), u2.as_mut_ptr(), ny, nx),
            FACTZ_INVALID_ARGUMENT
        );
        assert!(last().contains("overlap"), "{}", last());
        // Zero and overflowing shapes.
        assert_eq!(
            factz_field_max_compressed_size(0, 5, &mut cap),
            FACTZ_INVALID_ARGUMENT
        );
        assert_eq!(
            factz_field_max_compressed_size(usize::MAX, 3, &mut cap),
            FACTZ_INVALID_ARGUMENT
        );
        assert_eq!(cap, 0);
        // NaN bound, unknown enum values and sizes.
        let mut bad = cfg;
        bad.bound = f64::NAN;
        assert_eq!(
            factz_field_compress(
                &bad,
                u.as_ptr(),
                v.as_ptr(),
                ny,
                nx,
                out.as_mut_ptr(),
                out.len(),
                &mut len
            ),
            FACTZ_INVALID_ARGUMENT
        );
        assert!(last().contains("NaN"), "{}", last());
        for tweak in [
            |c: &mut factz_field_config| c.mode = 9,
            |c: &mut factz_field_config| c.bound_kind = 0,
            |c: &mut factz_field_config| c.coder = 3,
            |c: &mut factz_field_config| c.layout = 2,
            |c: &mut factz_field_config| c.flags = 8,
            |c: &mut factz_field_config| c.zstd_level = 23,
            |c: &mut factz_field_config| c.backend = 3,
            |c: &mut factz_field_config| c.struct_size = 12,
        ] {
            let mut bad = cfg;
            tweak(&mut bad);
            assert_eq!(
                factz_field_compress(
                    &bad,
                    u.as_ptr(),
                    v.as_ptr(),
                    ny,
                    nx,
                    out.as_mut_ptr(),
                    out.len(),
                    &mut len
                ),
                FACTZ_INVALID_ARGUMENT
            );
            assert_eq!(len, 0);
        }
        // Truncated stream.
        assert_eq!(
            factz_field_decompress(
                s.as_ptr(),
                slen / 2,
                u2.as_mut_ptr(),
                v2.as_mut_ptr(),
                ny,
                nx
            ),
            FACTZ_CORRUPT_STREAM
        );
    }
}

#[test]
fn accessors() {
    assert_eq!(factz_abi_version(), FACTZ_ABI_VERSION);
    assert_eq!(factz_version(), 0x00_01_00);
    // SAFETY: static NUL-terminated strings.
    unsafe {
        assert_eq!(
            CStr::from_ptr(factz_version_string()).to_str().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
        assert!(
            CStr::from_ptr(factz_status_string(FACTZ_BUFFER_TOO_SMALL as i32))
                .to_str()
                .unwrap()
                .starts_with("FACTZ_BUFFER_TOO_SMALL")
        );
        assert_eq!(
            CStr::from_ptr(factz_status_string(-3)).to_str().unwrap(),
            "unknown factz status"
        );
    }
    // last_error_copy: snprintf semantics.
    let mut n = 0usize;
    // SAFETY: valid pointer.
    assert_eq!(
        unsafe { factz_field_max_compressed_size(0, 0, &mut n) },
        FACTZ_INVALID_ARGUMENT
    );
    let full = last();
    let mut buf = [1 as c_char; 8];
    // SAFETY: buf holds 8 bytes; NULL with 0 is allowed.
    unsafe {
        assert_eq!(factz_last_error_copy(null_mut(), 0), full.len());
        assert_eq!(
            factz_last_error_copy(buf.as_mut_ptr(), buf.len()),
            full.len()
        );
        assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str().unwrap(), &full[..7]);
    }
}

#[test]
fn last_error_is_per_thread() {
    let mut n = 0usize;
    // SAFETY: valid pointer.
    assert_eq!(
        unsafe { factz_field_max_compressed_size(0, 1, &mut n) },
        FACTZ_INVALID_ARGUMENT
    );
    let mine = last();
    std::thread::spawn(|| {
        assert_eq!(last(), "");
        let mut n = 0usize;
        // SAFETY: valid pointer.
        assert_eq!(
            unsafe { factz_field_max_compressed_size(1, 1, &mut n) },
            FACTZ_OK
        );
        assert_eq!(panicking_status(), FACTZ_PANIC);
    })
    .join()
    .unwrap();
    assert_eq!(last(), mine);
}

/// Tiny shapes and incompressible data: a buffer of factz_field_max_compressed_size
/// bytes always suffices, and every finite value comes back within the bound.
#[test]
fn max_size_always_suffices() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        f32::from_bits(((seed >> 41) as u32) | 0x3F80_0000)
            * if seed & 1 == 0 { 1.0 } else { -3.0e7 }
    };
    for (ny, nx) in [(1, 1), (1, 7), (7, 1), (2, 2), (3, 5), (33, 40)] {
        let n = ny * nx;
        let u: Vec<f32> = (0..n).map(|_| noise()).collect();
        let v: Vec<f32> = (0..n).map(|_| noise()).collect();
        for (mode, coder, zstd, bound) in [
            (1, 1, 0, 1e-30),
            (2, 2, 0, 1e-30),
            (2, 1, 19, 1e-30),
            (1, 2, 3, 1e-3),
            (2, 2, 0, 0.5),
        ] {
            let mut cfg = config();
            cfg.mode = mode;
            cfg.coder = coder;
            cfg.zstd_level = zstd;
            cfg.bound_kind = factz_bound_kind::FACTZ_BOUND_ABS as u32;
            cfg.bound = bound;
            let mut cap = 0usize;
            let mut len = 0usize;
            // SAFETY: in all calls below, every pointer is valid for the sizes passed.
            unsafe {
                assert_eq!(factz_field_max_compressed_size(ny, nx, &mut cap), FACTZ_OK);
                let mut out = vec![0u8; cap];
                let s = factz_field_compress(
                    &cfg,
                    u.as_ptr(),
                    v.as_ptr(),
                    ny,
                    nx,
                    out.as_mut_ptr(),
                    cap,
                    &mut len,
                );
                assert_eq!(
                    s,
                    FACTZ_OK,
                    "{ny}x{nx} mode {mode} coder {coder} zstd {zstd}: {}",
                    last()
                );
                assert!(len <= cap);
                let (mut u2, mut v2) = (vec![0f32; n], vec![0f32; n]);
                let s = factz_field_decompress(
                    out.as_ptr(),
                    len,
                    u2.as_mut_ptr(),
                    v2.as_mut_ptr(),
                    ny,
                    nx,
                );
                assert_eq!(s, FACTZ_OK, "{}", last());
                for k in 0..n {
                    assert!((u2[k] as f64 - u[k] as f64).abs() <= bound);
                    assert!((v2[k] as f64 - v[k] as f64).abs() <= bound);
                }
            }
        }
    }
}

/// `config->backend`: CPU and AUTO give the CPU's bytes, and the report says
/// whether the GPU ran; CUDA runs on a GPU (same bytes) or is
/// FACTZ_UNSUPPORTED with the reason; anything else is FACTZ_INVALID_ARGUMENT.
#[test]
fn backend_choice_keeps_the_stream() {
    use super::backend::FACTZ_RAN_ON_GPU;
    use super::particles::*;
    let (ny, nx) = (30, 41);
    let (u, v) = field(ny, nx);
    let compress_field = |backend: u32| {
        let mut cfg = config();
        cfg.backend = backend;
        let mut out = vec![0u8; 1 << 16];
        let mut len = 0usize;
        let mut report = factz_field_report {
            struct_size: std::mem::size_of::<factz_field_report>() as u32,
            flags: 0,
            abs_bound: 0.0,
            exact_vertices: 0,
        };
        // SAFETY: valid arrays of ny * nx floats, out of its capacity, a report.
        let st = unsafe {
            factz_field_compress_ex(
                &cfg,
                u.as_ptr(),
                v.as_ptr(),
                ny,
                nx,
                out.as_mut_ptr(),
                out.len(),
                &mut len,
                &mut report,
            )
        };
        out.truncate(len);
        (st, out, report.flags & FACTZ_RAN_ON_GPU != 0)
    };
    let pos: Vec<f32> = (0..3 * 400)
        .map(|k| ((k as u64 * 2_654_435_761) % 10_007) as f32 / 10_007.0)
        .collect();
    let compress_particles = |backend: u32| {
        // SAFETY: zeroed plain data; struct_size set before the defaults call.
        let mut cfg: factz_particles_config = unsafe { std::mem::zeroed() };
        cfg.struct_size = std::mem::size_of::<factz_particles_config>() as u32;
        // SAFETY: a writable config with its struct_size.
        assert_eq!(
            unsafe { factz_particles_config_default(&mut cfg) },
            FACTZ_OK
        );
        cfg.backend = backend;
        let mut out = vec![0u8; 1 << 16];
        let mut len = 0usize;
        // SAFETY: zeroed plain data with its struct_size.
        let mut report: factz_particles_report = unsafe { std::mem::zeroed() };
        report.struct_size = std::mem::size_of::<factz_particles_report>() as u32;
        // SAFETY: 400 particles, out of its capacity, a report.
        let st = unsafe {
            factz_particles_compress_ex(
                pos.as_ptr(),
                400,
                &cfg,
                out.as_mut_ptr(),
                out.len(),
                &mut len,
                &mut report,
            )
        };
        out.truncate(len);
        (st, out, report.flags & FACTZ_RAN_ON_GPU != 0)
    };
    for (kind, run) in [
        (
            "field",
            &compress_field as &dyn Fn(u32) -> (factz_status, Vec<u8>, bool),
        ),
        ("particles", &compress_particles),
    ] {
        let (st, want, gpu) = run(0);
        assert_eq!(st, FACTZ_OK, "{kind}: {}", last());
        assert!(!gpu, "{kind}: the CPU backend ran on the GPU");
        let (st, got, _) = run(2);
        assert_eq!(st, FACTZ_OK, "{kind} AUTO: {}", last());
        assert!(got == want, "{kind} AUTO: other bytes");
        match run(1) {
            (FACTZ_OK, got, gpu) => {
                assert!(gpu, "{kind} CUDA: the report does not say the GPU ran");
                assert!(got == want, "{kind} CUDA: other bytes");
            }
            (FACTZ_UNSUPPORTED, _, _) => {
                assert!(last().to_lowercase().contains("cuda"), "{}", last())
            }
            (st, _, _) => panic!("{kind} CUDA: {st:?}: {}", last()),
        }
        let (st, _, _) = run(7);
        assert_eq!(st, FACTZ_INVALID_ARGUMENT, "{kind}: backend 7");
        assert!(last().contains("backend"), "{}", last());
    }
}
