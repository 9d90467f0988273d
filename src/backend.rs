//! Where a compression runs, in every build: the CPU, or the CUDA backend
//! (`gpu`, cargo feature `cuda`) for host data. The stream is the same bytes
//! whichever runs it, so the choice only trades speed. The command line's
//! `--backend` and the C ABI's `config->backend` come here.

#[cfg(not(feature = "cuda"))]
use crate::error::Error;
use crate::error::Result;
use crate::particles::correct::{self, Corrector};
use crate::{field, particles};

/// Which backend compresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Cpu,
    /// The GPU, or an Unsupported error saying why there is none.
    Cuda,
    /// CUDA when a device, its driver and NVRTC are there; the CPU otherwise.
    Auto,
}

/// Which backend ran (`Cpu` or `Cuda`), and why not CUDA when Auto fell back.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    pub backend: Backend,
    pub fallback_reason: Option<String>,
}

impl Ran {
    /// "cpu", "cuda", or "cpu (auto: why not cuda)".
    pub fn describe(&self) -> String {
        match (self.backend, &self.fallback_reason) {
            (Backend::Cuda, _) => "cuda".into(),
            (_, Some(why)) => format!("cpu (auto: {why})"),
            _ => "cpu".into(),
        }
    }
}

/// Why there is no CUDA backend in this build.
#[cfg(not(feature = "cuda"))]
const NO_CUDA: &str = "this factz was built without the CUDA backend (cargo feature cuda)";

/// The CPU for `Cpu` and `Auto` in a build without CUDA; `Cuda` is Unsupported.
#[cfg(not(feature = "cuda"))]
fn cpu_only<T>(backend: Backend, run: impl FnOnce() -> Result<T>) -> Result<(T, Ran)> {
    let fallback_reason = match backend {
        Backend::Cpu => None,
        Backend::Auto => Some(NO_CUDA.to_string()),
        Backend::Cuda => return Err(Error::unsupported(NO_CUDA)),
    };
    Ok((
        run()?,
        Ran {
            backend: Backend::Cpu,
            fallback_reason,
        },
    ))
}

/// `field::compress` on `backend` (both modes' kernels on the GPU).
pub fn compress_field(
    backend: Backend,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &field::FieldConfig,
) -> Result<(field::Compressed, Ran)> {
    #[cfg(feature = "cuda")]
    return crate::gpu::field::compress_host(backend, u, v, ny, nx, cfg);
    #[cfg(not(feature = "cuda"))]
    cpu_only(backend, || field::compress(u, v, ny, nx, cfg))
}

/// `particles::compress` on `backend` (the vulnerable-pair search and the
/// optimiser on the GPU).
pub fn compress_particles(
    backend: Backend,
    pos: &[f32],
    cfg: &particles::ParticleConfig,
) -> Result<(particles::Compressed, Ran)> {
    let (corrector, ran) = corrector(backend)?;
    let prepared = particles::prepare(pos, cfg)?;
    let c = particles::finish_with(pos, cfg, prepared, None, corrector.as_ref())?;
    Ok((c, ran))
}

/// The correction's pair search and optimiser on `backend`, for
/// `particles::finish_with` (the distributed path takes it too): the GPU's
/// when chosen and usable; `Cuda` fails (Unsupported, with the reason) without
/// a usable device, `Auto` then takes the CPU's and says why.
pub fn corrector(backend: Backend) -> Result<(Box<dyn Corrector>, Ran)> {
    let cpu = |fallback_reason| -> Result<(Box<dyn Corrector>, Ran)> {
        let ran = Ran {
            backend: Backend::Cpu,
            fallback_reason,
        };
        Ok((Box::new(correct::Cpu), ran))
    };
    #[cfg(feature = "cuda")]
    return match (backend, crate::gpu::exec::shared()) {
        (Backend::Cpu, _) => cpu(None),
        (Backend::Auto, Err(e)) if e.kind == crate::error::ErrorKind::Unsupported => {
            cpu(Some(e.message))
        }
        (_, Err(e)) => Err(e),
        (_, Ok(exec)) => {
            let ran = Ran {
                backend: Backend::Cuda,
                fallback_reason: None,
            };
            Ok((Box::new(crate::gpu::particles::GpuCorrection { exec }), ran))
        }
    };
    #[cfg(not(feature = "cuda"))]
    match backend {
        Backend::Cpu => cpu(None),
        Backend::Auto => cpu(Some(NO_CUDA.to_string())),
        Backend::Cuda => Err(Error::unsupported(NO_CUDA)),
    }
}
