//! `config->backend` of factz_field_config and factz_particles_config: where
//! factz_field_compress* and factz_particles_compress* run (`crate::backend`),
//! and the report flag that says the GPU ran.

use super::boundary::Failure;
use crate::backend::{Backend, BackendUsed};

/// Where a compression of host data runs. The stream is the same bytes on
/// either; only the speed differs.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_backend {
    /// The CPU (default).
    FACTZ_BACKEND_CPU = 0,
    /// The GPU (a factz built with CUDA, a device, its driver and NVRTC), or
    /// FACTZ_UNSUPPORTED with the reason in factz_last_error.
    FACTZ_BACKEND_CUDA = 1,
    /// The GPU when usable, otherwise the CPU.
    FACTZ_BACKEND_AUTO = 2,
}

/// Report flag: the compression ran on the GPU.
pub const FACTZ_RAN_ON_GPU: u32 = 8;

/// The backend a config's field names, or why it names none.
pub(crate) fn from_c(x: u32) -> Result<Backend, Failure> {
    match x {
        0 => Ok(Backend::Cpu),
        1 => Ok(Backend::Cuda),
        2 => Ok(Backend::Auto),
        b => Err(Failure::invalid(format!(
            "config->backend is {b}; expected FACTZ_BACKEND_CPU (0), FACTZ_BACKEND_CUDA (1) or FACTZ_BACKEND_AUTO (2)"
        ))),
    }
}

/// The report flags of where a compression ran.
pub(crate) fn ran_flags(r: &BackendUsed) -> u32 {
    if r.backend == Backend::Cuda {
        FACTZ_RAN_ON_GPU
    } else {
        0
    }
}
