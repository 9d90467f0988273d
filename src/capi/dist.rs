//! The C ABI over MPI (cargo feature `mpi`): `factz_particles_compress_mpi`
//! and `factz_field_compress_mpi` take the caller's `MPI_Comm`, their `_f`
//! forms a Fortran `MPI_Fint` handle. Declared in
//! `include/factz_mpi.h` (which includes `mpi.h`), not in the generated
//! `factz.h`.
//!
//! The caller's communicator is duplicated for the call (MPI_Comm_dup, freed
//! before returning), so factz's messages never mix with the caller's.

use super::boundary::Failure;
use super::buffers::{self, check_disjoint, check_output, check_scalar_out, Span};
use super::field::{self as cfield, factz_field_config};
use super::particles::{compress_into_with, factz_particles_config, read_config_backend, values};
use super::status::factz_status;
use crate::backend::Backend;
use crate::dist::mpi::ffi;
use crate::dist::mpi::raw::FromRaw;
use crate::dist::mpi::topology::SimpleCommunicator;
use crate::field::Layout;

/// Compresses this rank's `n` particles (`xyz`, AoS) with every other rank of
/// `comm` doing the same on theirs: the union keeps every link of the whole set,
/// links between ranks included (see factz_particles_compress for the link rule
/// and the output contract). Collective: every rank of `comm` must call it. The
/// bound and the linking length are resolved over all ranks (a relative bound is
/// relative to the whole set's range; eta uses the whole count and the periodic
/// box or the whole set's bounding box). Particles should be spatially
/// decomposed (each rank a region), as simulation codes hold them; any
/// distribution is correct, a spatial one stores fewer particles exactly. Each
/// rank's stream decodes alone with factz_particles_decompress.
/// `cfg->backend` picks where each rank's correction runs, as for
/// factz_particles_compress (FACTZ_BACKEND_CUDA without a usable GPU on some
/// rank: an error on every rank, FACTZ_UNSUPPORTED on that one). If any rank
/// fails (bad input on one rank), every rank returns an error (no hang).
///
/// # Safety
/// `comm` is a valid intra-communicator of an initialized MPI; otherwise as
/// factz_particles_compress.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_mpi(
    comm: ffi::MPI_Comm,
    xyz: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    ffi_boundary!("factz_particles_compress_mpi", {
        // Every rank must reach the collectives, so a bad argument on one rank
        // becomes that rank's input error inside them, not an early return.
        let prepared = (|| {
            check_scalar_out(out_len, "out_len")?;
            // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
            unsafe { out_len.write(0) };
            // SAFETY: the caller's contract on cfg.
            let (cfg, backend) = unsafe { read_config_backend(cfg) }?;
            let len = values(n)?;
            // SAFETY: xyz holds 3n readable floats (the caller's contract).
            let pos = unsafe { buffers::input(xyz, len, "xyz") }?;
            // The output checks compress_into_with makes before compressing, made
            // here too: no rank may leave before the collectives.
            check_output(out, out_capacity, "out")?;
            let out_span = Span::of(out.cast_const(), out_capacity);
            check_disjoint(out_span, "out", Span::of(xyz, len), "xyz")?;
            Ok::<_, Failure>(((cfg, backend), pos, len))
        })();
        let comm = duplicate(comm)?;
        let ((cfg, backend), pos, len) = match prepared {
            Ok(p) => p,
            Err(f) => {
                // Take part in the agreement with an input the checks refuse,
                // so every rank learns that this one failed.
                let bad = crate::particles::ParticleConfig {
                    bound: crate::field::Bound::Abs(f64::NAN),
                    ..Default::default()
                };
                let _ = crate::dist::compress_particles(&comm, &[], &bad);
                return Err(f);
            }
        };
        let inputs = [(Span::of(xyz, len), "xyz")];
        // SAFETY: the caller's contract on out and out_len.
        unsafe {
            compress_into_with(
                cfg,
                Layout::Aos,
                pos,
                &inputs,
                out,
                out_capacity,
                out_len,
                std::ptr::null_mut(),
                |pos, cfg| {
                    let (c, r) = crate::dist::compress_particles_on(&comm, backend, pos, cfg)?;
                    Ok((c, super::backend::ran_flags(&r.ran)))
                },
            )
        }
    })
}

/// factz_particles_compress_mpi for Fortran: `comm` is the Fortran handle
/// (`integer` / `MPI_Fint`, as `MPI_COMM_WORLD` is in `use mpi`).
///
/// # Safety
/// As factz_particles_compress_mpi.
#[no_mangle]
pub unsafe extern "C" fn factz_particles_compress_mpi_f(
    comm: ffi::RSMPI_Fint,
    xyz: *const f32,
    n: usize,
    cfg: *const factz_particles_config,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: MPI_Comm_f2c on a Fortran handle; then the same contract.
    unsafe {
        let c = ffi::RSMPI_Comm_f2c(comm);
        factz_particles_compress_mpi(c, xyz, n, cfg, out, out_capacity, out_len)
    }
}

/// Compresses this rank's block of a vector field (`u`, `v`: `ny * nx` floats
/// each, row-major) with every other rank of `comm` doing the same on theirs:
/// the whole field keeps every critical point, across rank borders too (each
/// block's perimeter is stored exactly), and every value is within one bound (a
/// relative bound is relative to the whole field's range). Collective; each
/// rank's stream decodes alone with factz_field_decompress. `cfg->backend`
/// picks where each rank's block is compressed, as for factz_field_compress.
/// If any rank fails, every rank returns an error. Otherwise as
/// factz_field_compress.
///
/// # Safety
/// `comm` is a valid intra-communicator of an initialized MPI; otherwise as
/// factz_field_compress.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_mpi(
    comm: ffi::MPI_Comm,
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        field_mpi(
            comm,
            cfg,
            (u, v, ny, nx),
            None,
            (out, out_capacity, out_len),
        )
    }
}

/// factz_field_compress_mpi for a block whose first vertex is (`y0`, `x0`) of
/// the whole grid (blocks must not overlap): ranks whose blocks touch exchange
/// the one-vertex ring around each other's block, and the border is coded under
/// the bounds of the triangles that cross it instead of being stored exactly
/// (a better ratio: see README's MPI section). Collective; each rank's stream
/// decodes alone with factz_field_decompress. It runs on the CPU only (the
/// border's bound caps have no GPU kernels): FACTZ_BACKEND_CUDA is
/// FACTZ_UNSUPPORTED, FACTZ_BACKEND_AUTO runs the CPU.
///
/// # Safety
/// As factz_field_compress_mpi.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_mpi_at(
    comm: ffi::MPI_Comm,
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    y0: usize,
    x0: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        field_mpi(
            comm,
            cfg,
            (u, v, ny, nx),
            Some((y0, x0)),
            (out, out_capacity, out_len),
        )
    }
}

/// factz_field_compress_mpi_at with a Fortran communicator handle.
///
/// # Safety
/// As factz_field_compress_mpi_at.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_mpi_at_f(
    comm: ffi::RSMPI_Fint,
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    y0: usize,
    x0: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: MPI_Comm_f2c on a Fortran handle; then the same contract.
    unsafe {
        let c = ffi::RSMPI_Comm_f2c(comm);
        factz_field_compress_mpi_at(c, cfg, u, v, ny, nx, y0, x0, out, out_capacity, out_len)
    }
}

/// The field entry points: the block at `at` (compress_field_at) or anywhere
/// (compress_field, the chunk rule).
///
/// # Safety
/// As factz_field_compress_mpi.
unsafe fn field_mpi(
    comm: ffi::MPI_Comm,
    cfg: *const factz_field_config,
    (u, v, ny, nx): (*const f32, *const f32, usize, usize),
    at: Option<(usize, usize)>,
    (out, out_capacity, out_len): (*mut u8, usize, *mut usize),
) -> factz_status {
    let name = if at.is_some() {
        "factz_field_compress_mpi_at"
    } else {
        "factz_field_compress_mpi"
    };
    // ffi_boundary! with a name chosen at run time.
    super::boundary::run_status(name, move || {
        let prepared = (|| {
            check_scalar_out(out_len, "out_len")?;
            // SAFETY: non-NULL and aligned (checked); writable by the caller's contract.
            unsafe { out_len.write(0) };
            // SAFETY: the caller's contract on cfg.
            let (cfg, backend) = unsafe { cfield::read_config_backend(cfg) }?;
            let n = cfield::vertices(ny, nx)?;
            // SAFETY: u and v hold n readable floats each (the caller's contract).
            let (us, vs) = unsafe { (buffers::input(u, n, "u")?, buffers::input(v, n, "v")?) };
            check_output(out, out_capacity, "out")?;
            let out_span = Span::of(out.cast_const(), out_capacity);
            check_disjoint(out_span, "out", Span::of(u, n), "u")?;
            check_disjoint(out_span, "out", Span::of(v, n), "v")?;
            Ok::<_, Failure>(((cfg, backend), us, vs, n))
        })();
        let comm = duplicate(comm)?;
        let run = |backend, u: &[f32], v: &[f32], ny, nx, cfg: &crate::field::FieldConfig| match at
        {
            Some(yx) => crate::dist::compress_field_at_on(&comm, backend, u, v, ny, nx, yx, cfg),
            None => crate::dist::compress_field_on(&comm, backend, u, v, ny, nx, cfg),
        };
        let ((cfg, backend), us, vs, n) = match prepared {
            Ok(p) => p,
            Err(f) => {
                // Take part in the agreement with an input the checks refuse.
                let _ = run(Backend::Cpu, &[], &[], 0, 0, &Default::default());
                return Err(f);
            }
        };
        let inputs = [(Span::of(u, n), "u"), (Span::of(v, n), "v")];
        // SAFETY: the caller's contract on out and out_len.
        unsafe {
            cfield::compress_into_with(
                cfg,
                us,
                vs,
                &inputs,
                ny,
                nx,
                out,
                out_capacity,
                out_len,
                std::ptr::null_mut(),
                |u, v, ny, nx, cfg| {
                    let (c, ran) = run(backend, u, v, ny, nx, cfg)?;
                    Ok((c, super::backend::ran_flags(&ran)))
                },
            )
        }
    })
}

/// factz_field_compress_mpi with a Fortran communicator handle.
///
/// # Safety
/// As factz_field_compress_mpi.
#[no_mangle]
pub unsafe extern "C" fn factz_field_compress_mpi_f(
    comm: ffi::RSMPI_Fint,
    cfg: *const factz_field_config,
    u: *const f32,
    v: *const f32,
    ny: usize,
    nx: usize,
    out: *mut u8,
    out_capacity: usize,
    out_len: *mut usize,
) -> factz_status {
    // SAFETY: MPI_Comm_f2c on a Fortran handle; then the same contract.
    unsafe {
        let c = ffi::RSMPI_Comm_f2c(comm);
        factz_field_compress_mpi(c, cfg, u, v, ny, nx, out, out_capacity, out_len)
    }
}

/// A private copy of the caller's communicator, freed when dropped.
fn duplicate(comm: ffi::MPI_Comm) -> Result<SimpleCommunicator, Failure> {
    let mut dup = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    // SAFETY: MPI_Comm_dup writes the new handle; collective on `comm`.
    let rc = unsafe { ffi::MPI_Comm_dup(comm, dup.as_mut_ptr()) };
    if rc != 0 {
        return Err(Failure::invalid(format!(
            "MPI_Comm_dup failed (MPI error {rc}): is comm a valid communicator of an \
             initialized MPI?"
        )));
    }
    // SAFETY: a live intra-communicator we own from here (freed on drop).
    Ok(unsafe { SimpleCommunicator::from_raw(dup.assume_init()) })
}
