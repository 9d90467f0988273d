//! Vector fields in GPU memory through the C ABI (issue 6): compress from and
//! decompress into device pointers on the caller's CUDA stream, with the
//! kernels of `gpu::field`. The entry points exist in every build, so the
//! header is the same with and without the `cuda` feature; without it, or
//! without a usable GPU (driver, device, NVRTC), they return
//! FACTZ_UNSUPPORTED with the reason, after the usual argument checks.

use super::boundary::Failure;
use super::buffers::check_scalar_out;
use super::field::{
    compress_into_with, factz_field_config, factz_field_report, read_config, vertices,
};
use super::status::factz_status;
use std::ffi::c_void;

/// A device pointer: not NULL (FACTZ_NULL_POINTER) and float-aligned.
fn check_device<T>(ptr: *const T, what: &str) -> Result<(), Failure> {
    check_not_null!(ptr, what);
    if ptr.align_offset(std::mem::align_of::<f32>()) != 0 {
        return Err(Failure::invalid(format!("{what} is not aligned for float")));
    }
    Ok(())
}

/// factz_field_compress_ex for a field in GPU memory: `u_dev`, `v_dev` are
/// device pointers (CUDA device 0, the primary context the CUDA runtime uses)
/// of `ny * nx` floats each; the kernels run on `stream` (a cudaStream_t /
/// CUstream, NULL for the default stream), the stream comes back to host
/// memory `out`. The stream bytes are factz_field_compress's for the same
/// values. Returns when the stream is written.
///
/// FACTZ_UNSUPPORTED (with the reason in factz_last_error) when the library
/// was built without CUDA or no GPU, driver or NVRTC is usable. A relative
/// bound and mode S still copy the field to the host once (see README, GPU).
///
/// FACTZ_INVALID_ARGUMENT, before any kernel runs, unless the driver
/// (cuPointerGetAttribute) knows `u_dev` and `v_dev` as device or managed
/// memory of device 0 with `ny * nx` floats of their allocation from there:
/// a host pointer (malloc, or cudaMallocHost), a freed or foreign pointer
/// would otherwise fault inside the caller's CUDA context.
///
/// # Safety
/// `cfg`: NULL or a factz_field_config of its struct_size; `u_dev`, `v_dev`:
/// NULL or device pointers to `ny * nx` floats each; `out`: NULL or
/// `out_capacity` writable host bytes; `out_len`: NULL or a writable size_t;
/// `report`: NULL or a writable factz_field_report of its struct_size;
/// `stream`: NULL or a live stream of device 0's primary context.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_device(
    cfg: *const factz_field_config,
    u_dev: *const f32,
    v_dev: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
    report: *mut factz_field_report,
    stream: *mut c_void,
) -> factz_status {
    ffi_boundary!("factz_field_compress_device", {
        check_scalar_out(out_len, "out_len")?;
        // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
        unsafe { out_len.write(0) };
        // SAFETY: the caller's contract on cfg.
        let cfg = unsafe { read_config(cfg) }?;
        let n = vertices(ny, nx)?;
        check_device(u_dev, "u_dev")?;
        check_device(v_dev, "v_dev")?;
        let run = |_: &[f32], _: &[f32], ny, nx, cfg: &_| {
            // SAFETY: the caller's contract on u_dev, v_dev and stream.
            unsafe { device::compress(u_dev, v_dev, n, ny, nx, cfg, stream) }
                .map(|c| (c, super::backend::FACTZ_RAN_ON_GPU))
        };
        // Device memory is not host memory: no host-span checks on the inputs.
        // SAFETY: the caller's contract on out, out_len and report.
        unsafe {
            compress_into_with(
                cfg,
                &[],
                &[],
                &[],
                ny,
                nx,
                out,
                out_capacity,
                out_len,
                report,
                run,
            )
        }
    })
}

/// factz_field_decompress for GPU memory: decodes the stream `data` (`len`
/// host bytes) into the device arrays `u_dev`, `v_dev` of `ny * nx` floats
/// each (the stream's shape, else FACTZ_INVALID_ARGUMENT), on `stream` (NULL:
/// the default stream). Returns when the field is written. Modes B and S
/// decode with GPU kernels; a losslessly stored chunk decodes on the host and
/// is copied up. FACTZ_UNSUPPORTED, and FACTZ_INVALID_ARGUMENT for pointers
/// that are not device memory of that size, as factz_field_compress_device.
///
/// # Safety
/// `data`: NULL or `len` readable host bytes; `u_dev`, `v_dev`: NULL or
/// device pointers to `ny * nx` writable floats each; `stream`: as
/// factz_field_compress_device.
#[no_mangle]
pub unsafe extern "C" fn factz_field_decompress_device(
    data: *const u8,
    len: usize,
    u_dev: *mut f32,
    v_dev: *mut f32,
    ny: usize,
    nx: usize,
    stream: *mut c_void,
) -> factz_status {
    ffi_boundary!("factz_field_decompress_device", {
        check_not_null!(data, "data");
        let n = vertices(ny, nx)?;
        check_device(u_dev.cast_const(), "u_dev")?;
        check_device(v_dev.cast_const(), "v_dev")?;
        // SAFETY: data holds len readable bytes (the caller's contract).
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        // SAFETY: the caller's contract on u_dev, v_dev and stream.
        unsafe { device::decompress(bytes, u_dev, v_dev, n, stream) }?;
        Ok(())
    })
}

#[cfg(not(feature = "cuda"))]
mod device {
    use crate::error::{Error, Result};
    use crate::field::{Compressed, FieldConfig};
    use std::ffi::c_void;

    const WHY: &str = "this factz was built without CUDA (the `cuda` feature): device pointers \
                       are not supported (use factz_field_compress with host memory)";

    pub unsafe fn compress(
        _u: *const f32,
        _v: *const f32,
        _n: usize,
        _ny: usize,
        _nx: usize,
        _cfg: &FieldConfig,
        _stream: *mut c_void,
    ) -> Result<Compressed> {
        Err(Error::unsupported(WHY))
    }

    pub unsafe fn decompress(
        _bytes: &[u8],
        _u: *mut f32,
        _v: *mut f32,
        _n: usize,
        _stream: *mut c_void,
    ) -> Result<()> {
        Err(Error::unsupported(WHY))
    }
}

#[cfg(feature = "cuda")]
mod device {
    use crate::error::{Error, Result};
    use crate::field::pipeline::{compress_on, decompress_on};
    use crate::field::{Compressed, FieldConfig};
    use crate::gpu::exec::{self, Cuda, View};
    use crate::gpu::field::OnExec;
    use cudarc::driver::sys::{self, CUmemorytype, CUpointer_attribute, CUresult};
    use std::ffi::c_void;

    /// The shared device launching on the caller's stream.
    ///
    /// # Safety
    /// `stream` is NULL or a live CUstream of device 0's primary context.
    unsafe fn setup(stream: *mut c_void) -> Result<Cuda> {
        let d = exec::shared()?;
        let ctx = d.stream.context();
        ctx.bind_to_thread()
            .map_err(|e| crate::Error::internal(format!("CUDA: {e}")))?;
        // SAFETY: the caller's stream outlives this call; NULL is the legacy
        // default stream.
        let s = unsafe { ctx.wrap_borrowed_stream(stream as cudarc::driver::sys::CUstream) };
        Ok(d.on(s))
    }

    /// What the driver says of a pointer (`cuPointerGetAttribute`): its
    /// memory type (or the error asking), device, and the allocation holding it.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Memory {
        pub kind: std::result::Result<u32, CUresult>,
        pub device: i32,
        pub start: u64,
        pub size: usize,
    }

    /// Refuses what is not `bytes` of device memory of `device` at `ptr`:
    /// the kernels would fault inside the caller's context, poisoning it.
    pub(super) fn judge(
        what: &str,
        ptr: u64,
        bytes: usize,
        device: usize,
        m: Memory,
    ) -> std::result::Result<(), String> {
        const HOST: u32 = CUmemorytype::CU_MEMORYTYPE_HOST as u32;
        const DEVICE: u32 = CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
        const ARRAY: u32 = CUmemorytype::CU_MEMORYTYPE_ARRAY as u32;
        const UNIFIED: u32 = CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
        let host = "for host data use factz_field_compress / factz_field_decompress";
        match m.kind {
            Err(CUresult::CUDA_ERROR_INVALID_VALUE) => {
                return Err(format!(
                    "{what} ({ptr:#x}) is not memory CUDA knows (a host pointer from malloc or \
                     new, or freed): it must be device memory (cudaMalloc); {host}"
                ))
            }
            Err(code) => {
                return Err(format!(
                    "{what} ({ptr:#x}): CUDA cannot tell what it points to ({code:?})"
                ))
            }
            Ok(HOST) => {
                return Err(format!(
                    "{what} ({ptr:#x}) is host memory (cudaMallocHost or registered), not \
                     device memory; {host}"
                ))
            }
            Ok(ARRAY) => {
                return Err(format!(
                    "{what} ({ptr:#x}) is a CUDA array, not linear device memory"
                ))
            }
            Ok(DEVICE | UNIFIED) => {}
            Ok(t) => return Err(format!("{what} ({ptr:#x}): unknown CUDA memory type {t}")),
        }
        if usize::try_from(m.device).ok() != Some(device) {
            return Err(format!(
                "{what} ({ptr:#x}) is memory of CUDA device {}; factz runs on device {device}",
                m.device
            ));
        }
        let end = m.start.saturating_add(m.size as u64);
        if ptr < m.start || ptr.saturating_add(bytes as u64) > end {
            return Err(format!(
                "{what} ({ptr:#x}) has {} bytes of its allocation from there; the field needs \
                 {bytes}",
                end.saturating_sub(ptr)
            ));
        }
        Ok(())
    }

    /// One pointer attribute of `ptr`, or the driver's error.
    unsafe fn attribute<T: Default>(
        a: CUpointer_attribute,
        ptr: u64,
    ) -> std::result::Result<T, CUresult> {
        let mut v = T::default();
        // SAFETY: T is the attribute's C type (the callers'); the driver
        // writes one of it.
        let r = unsafe { sys::cuPointerGetAttribute((&mut v as *mut T).cast(), a, ptr) };
        match r {
            CUresult::CUDA_SUCCESS => Ok(v),
            e => Err(e),
        }
    }

    /// `n` floats of device memory at `ptr` on `exec`'s device (see [`judge`]).
    fn check_memory(exec: &Cuda, ptr: u64, n: usize, what: &str) -> Result<()> {
        use CUpointer_attribute::*;
        // SAFETY: each attribute with its C type: the memory type an unsigned
        // int, the ordinal an int, the range a CUdeviceptr and a size_t.
        let m = unsafe {
            let kind = attribute::<u32>(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
            Memory {
                kind,
                device: attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr).unwrap_or(-1),
                start: attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr).unwrap_or(0),
                size: attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr).unwrap_or(0),
            }
        };
        let bytes = n.saturating_mul(std::mem::size_of::<f32>());
        judge(what, ptr, bytes, exec.stream.context().ordinal(), m).map_err(Error::invalid)
    }

    #[allow(clippy::too_many_arguments)]
    pub unsafe fn compress(
        u: *const f32,
        v: *const f32,
        n: usize,
        ny: usize,
        nx: usize,
        cfg: &FieldConfig,
        stream: *mut c_void,
    ) -> Result<Compressed> {
        // SAFETY: the caller's contract (factz_field_compress_device): n floats
        // each of device memory on that context, live for the call.
        let exec = unsafe { setup(stream)? };
        check_memory(&exec, u as u64, n, "u_dev")?;
        check_memory(&exec, v as u64, n, "v_dev")?;
        // SAFETY: as above; both are device memory of n floats (checked).
        let f = unsafe { [View::from_raw(u as u64, n), View::from_raw(v as u64, n)] };
        compress_on(&OnExec { exec: &exec }, f, ny, nx, cfg)
    }

    pub unsafe fn decompress(
        bytes: &[u8],
        u: *mut f32,
        v: *mut f32,
        n: usize,
        stream: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract (factz_field_decompress_device).
        let exec = unsafe { setup(stream)? };
        check_memory(&exec, u as u64, n, "u_dev")?;
        check_memory(&exec, v as u64, n, "v_dev")?;
        // SAFETY: as above; both are device memory of n floats (checked).
        let mut out = unsafe { [View::from_raw(u as u64, n), View::from_raw(v as u64, n)] };
        decompress_on(&OnExec { exec: &exec }, bytes, &mut out)?;
        exec.stream
            .synchronize()
            .map_err(|e| crate::Error::internal(format!("CUDA: {e}")))?;
        Ok(())
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::device::{judge, Memory};
    use cudarc::driver::sys::{CUmemorytype, CUresult};

    fn mem(kind: Result<CUmemorytype, CUresult>, device: i32, start: u64, size: usize) -> Memory {
        Memory {
            kind: kind.map(|k| k as u32),
            device,
            start,
            size,
        }
    }

    #[test]
    fn only_enough_device_memory_of_the_device_passes() {
        use CUmemorytype::*;
        let ok = |m| judge("u_dev", 0x7f00_0000_1000, 4096, 0, m);
        let dev = Ok(CU_MEMORYTYPE_DEVICE);
        assert_eq!(ok(mem(dev, 0, 0x7f00_0000_0000, 1 << 20)), Ok(()));
        assert_eq!(
            ok(mem(Ok(CU_MEMORYTYPE_UNIFIED), 0, 0x7f00_0000_1000, 4096)),
            Ok(())
        );
        let refused = [
            (
                mem(Err(CUresult::CUDA_ERROR_INVALID_VALUE), -1, 0, 0),
                "a host pointer",
            ),
            (
                mem(Ok(CU_MEMORYTYPE_HOST), 0, 0x7f00_0000_0000, 1 << 20),
                "is host memory",
            ),
            (mem(Ok(CU_MEMORYTYPE_ARRAY), 0, 0, 0), "CUDA array"),
            (
                mem(Err(CUresult::CUDA_ERROR_INVALID_CONTEXT), -1, 0, 0),
                "CUDA_ERROR_INVALID_CONTEXT",
            ),
            (mem(dev, 1, 0x7f00_0000_0000, 1 << 20), "device 1"),
            // The allocation ends 4095 bytes short of the field.
            (mem(dev, 0, 0x7f00_0000_0000, 4097), "has 1 bytes"),
        ];
        for (m, why) in refused {
            let e = ok(m).unwrap_err();
            assert!(
                e.starts_with("u_dev (0x7f0000001000)") && e.contains(why),
                "{m:?}: {e}"
            );
        }
    }
}
