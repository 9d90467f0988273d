//! The C entry points for device pointers (issue 6) in any build:
//! `factz_field_compress_device` / `factz_field_decompress_device` check their
//! arguments as the host functions do (NULL, bad shapes, bad config: the usual
//! statuses, never a panic), then return FACTZ_UNSUPPORTED with the reason in
//! a build without the `cuda` feature or on a machine without a GPU. On a GPU
//! the device test of tests/gpu_field.rs runs them against the CPU.

use factz::capi::error::factz_last_error;
use factz::capi::field::{factz_field_config, factz_field_config_default};
use factz::capi::gpu::{factz_field_compress_device, factz_field_decompress_device};
use factz::capi::status::factz_status::{self, *};
use std::ffi::CStr;
use std::ptr::{null, null_mut};

#[cfg(feature = "cuda")]
#[path = "common/nvrtc.rs"]
mod nvrtc;

fn last_error() -> String {
    // SAFETY: factz_last_error gives a NUL-terminated string or NULL.
    unsafe { CStr::from_ptr(factz_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn config() -> factz_field_config {
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut c: factz_field_config = unsafe { std::mem::zeroed() };
    c.struct_size = std::mem::size_of::<factz_field_config>() as u32;
    // SAFETY: c is a factz_field_config of its struct_size.
    assert_eq!(unsafe { factz_field_config_default(&mut c) }, FACTZ_OK);
    c
}

/// Compress through the device entry point with these arguments.
#[allow(clippy::too_many_arguments)]
fn compress(
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    out: &mut [u8],
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the pointers are NULL or (here, never dereferenced as device
    // memory without a GPU) point to ny * nx floats.
    unsafe {
        factz_field_compress_device(
            cfg,
            u,
            v,
            ny,
            nx,
            out.as_mut_ptr(),
            out.len(),
            out_len,
            null_mut(),
            null_mut(),
        )
    }
}

#[test]
fn device_entry_points_check_arguments_then_say_unsupported() {
    #[cfg(feature = "cuda")]
    if factz::gpu::exec::shared().is_ok() {
        eprintln!("a GPU is present: the device test of tests/gpu_field.rs checks these");
        return;
    }
    let cfg = config();
    // Stand-ins for device pointers: never dereferenced without a GPU.
    let (u, v) = (vec![0f32; 12], vec![0f32; 12]);
    let mut out = vec![0u8; 1024];
    let mut len = 77usize;
    let s = compress(&cfg, u.as_ptr(), v.as_ptr(), 3, 4, &mut out, null_mut());
    assert_eq!(s, FACTZ_NULL_POINTER, "{}", last_error());
    assert!(last_error().contains("out_len"));
    let s = compress(null(), u.as_ptr(), v.as_ptr(), 3, 4, &mut out, &mut len);
    assert_eq!(s, FACTZ_NULL_POINTER, "{}", last_error());
    assert_eq!(len, 0);
    let s = compress(&cfg, null(), v.as_ptr(), 3, 4, &mut out, &mut len);
    assert_eq!(s, FACTZ_NULL_POINTER);
    assert!(last_error().contains("u_dev"), "{}", last_error());
    let s = compress(&cfg, u.as_ptr(), null(), 3, 4, &mut out, &mut len);
    assert_eq!(s, FACTZ_NULL_POINTER);
    assert!(last_error().contains("v_dev"), "{}", last_error());
    for (ny, nx) in [(0, 4), (3, 0), (usize::MAX, 2)] {
        let s = compress(&cfg, u.as_ptr(), v.as_ptr(), ny, nx, &mut out, &mut len);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT, "{ny}x{nx}: {}", last_error());
    }
    let misaligned = u.as_ptr().cast::<u8>().wrapping_add(1).cast::<f32>();
    let s = compress(&cfg, misaligned, v.as_ptr(), 3, 4, &mut out, &mut len);
    assert_eq!(s, FACTZ_INVALID_ARGUMENT, "{}", last_error());
    let mut bad = cfg;
    bad.mode = 9;
    let s = compress(&bad, u.as_ptr(), v.as_ptr(), 3, 4, &mut out, &mut len);
    assert_eq!(s, FACTZ_INVALID_ARGUMENT);
    // Well-formed: unsupported, with the reason.
    let s = compress(&cfg, u.as_ptr(), v.as_ptr(), 3, 4, &mut out, &mut len);
    assert_eq!(s, FACTZ_UNSUPPORTED, "{}", last_error());
    assert!(last_error().contains("CUDA"), "{}", last_error());
    assert_eq!(len, 0);

    let stream = [0u8; 16];
    let (mut du, mut dv) = (vec![0f32; 12], vec![0f32; 12]);
    let dec = |data: *const u8, u: *mut f32, v: *mut f32, ny: usize, nx: usize| {
        // SAFETY: as above.
        unsafe { factz_field_decompress_device(data, 16, u, v, ny, nx, null_mut()) }
    };
    let (pu, pv) = (du.as_mut_ptr(), dv.as_mut_ptr());
    assert_eq!(dec(null(), pu, pv, 3, 4), FACTZ_NULL_POINTER);
    assert_eq!(
        dec(stream.as_ptr(), null_mut(), pv, 3, 4),
        FACTZ_NULL_POINTER
    );
    assert_eq!(
        dec(stream.as_ptr(), pu, null_mut(), 3, 4),
        FACTZ_NULL_POINTER
    );
    assert_eq!(dec(stream.as_ptr(), pu, pv, 0, 4), FACTZ_INVALID_ARGUMENT);
    assert_eq!(dec(stream.as_ptr(), pu, pv, 3, 4), FACTZ_UNSUPPORTED);
    assert!(last_error().contains("CUDA"), "{}", last_error());
}

/// On a GPU: host memory and too short an allocation are refused with
/// FACTZ_INVALID_ARGUMENT naming the pointer, before any kernel runs (they
/// would fault in the shared context and fail every later device test).
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu-check"]
fn device_entry_points_refuse_host_and_short_memory() {
    let d = nvrtc::device();
    let (ny, nx) = (64, 48);
    let cfg = config();
    let host = vec![0.5f32; ny * nx];
    let dev = d.stream.clone_htod(&host).unwrap();
    let short = d.stream.clone_htod(&host[..ny * nx - 1]).unwrap();
    let (pdev, _r1) = cudarc::driver::DevicePtr::device_ptr(&dev, &d.stream);
    let (pshort, _r2) = cudarc::driver::DevicePtr::device_ptr(&short, &d.stream);
    let (pdev, pshort) = (pdev as *const f32, pshort as *const f32);
    let mut out = vec![0u8; 1 << 20];
    let mut len = 0usize;
    for (u, v, who, why) in [
        (host.as_ptr(), pdev, "u_dev", "not memory CUDA knows"),
        (pdev, host.as_ptr(), "v_dev", "not memory CUDA knows"),
        (pdev, pshort, "v_dev", "the field needs"),
    ] {
        let s = compress(&cfg, u, v, ny, nx, &mut out, &mut len);
        assert_eq!(s, FACTZ_INVALID_ARGUMENT, "{}", last_error());
        assert!(
            last_error().starts_with(who) || last_error().contains(who),
            "{}",
            last_error()
        );
        assert!(last_error().contains(why), "{}", last_error());
    }
    let s = compress(&cfg, pdev, pdev, ny, nx, &mut out, &mut len);
    assert_eq!(s, FACTZ_OK, "{}", last_error());
    let mut back = vec![0f32; ny * nx];
    // SAFETY: a host buffer of ny * nx floats, refused before any write.
    let s = unsafe {
        factz_field_decompress_device(
            out.as_ptr(),
            len,
            back.as_mut_ptr(),
            pdev.cast_mut(),
            ny,
            nx,
            null_mut(),
        )
    };
    assert_eq!(s, FACTZ_INVALID_ARGUMENT, "{}", last_error());
    assert!(last_error().contains("u_dev"), "{}", last_error());
}
