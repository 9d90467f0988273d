//! The C ABI of the distributed particle path (cargo feature `mpi`):
//! `factz_particles_compress_mpi` takes the caller's `MPI_Comm`,
//! `factz_particles_compress_mpi_f` a Fortran `MPI_Fint` handle. Declared in
//! `include/factz_mpi.h` (which includes `mpi.h`), not in the generated
//! `factz.h`.
//!
//! The caller's communicator is duplicated for the call (MPI_Comm_dup, freed
//! before returning), so factz's messages never mix with the caller's.

use super::boundary::Failure;
use super::buffers::{self, check_disjoint, check_output, check_scalar_out, Span};
use super::particles::{compress_into_with, factz_particles_config, read_config, values};
use super::status::factz_status;
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
/// rank's stream decodes alone with factz_particles_decompress. If any rank
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
            let cfg = unsafe { read_config(cfg) }?;
            let len = values(n)?;
            // SAFETY: xyz holds 3n readable floats (the caller's contract).
            let pos = unsafe { buffers::input(xyz, len, "xyz") }?;
            // The output checks compress_into_with makes before compressing, made
            // here too: no rank may leave before the collectives.
            check_output(out, out_capacity, "out")?;
            let out_span = Span::of(out.cast_const(), out_capacity);
            check_disjoint(out_span, "out", Span::of(xyz, len), "xyz")?;
            Ok::<_, Failure>((cfg, pos, len))
        })();
        let comm = duplicate(comm)?;
        let (cfg, pos, len) = match prepared {
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
                |pos, cfg| crate::dist::compress_particles(&comm, pos, cfg).map(|(c, _)| c),
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
