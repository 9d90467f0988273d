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
pub struct BackendUsed {
    pub backend: Backend,
    pub fallback_reason: Option<String>,
}

impl BackendUsed {
    /// "cpu", "cuda", or "cpu (auto: why not cuda)".
    pub fn describe(&self) -> String {
        match (self.backend, &self.fallback_reason) {
            (Backend::Cuda, _) => "cuda".into(),
            (_, Some(why)) => format!("cpu (auto: {why})"),
            _ => "cpu".into(),
        }
    }
}

/// Where a compression runs once the GPU's setup (`gpu`, called only for
/// `Cuda` and `Auto`) is known.
#[derive(Debug)]
pub enum Resolved<T> {
    Gpu(T),
    /// The CPU; for `Auto`, why not the GPU.
    Cpu(Option<String>),
}

/// `backend` resolved against the GPU's setup: `Cuda` fails with the
/// setup's error; `Auto` takes the CPU on any setup error, with its text as
/// the reason: no driver or device (Unsupported), and equally an NVRTC
/// failure, a driver that cannot load (JIT) the kernels, or a context an
/// earlier fault poisoned, so that a write never fails where the CPU can
/// still do it.
pub fn resolve<T>(backend: Backend, gpu: impl FnOnce() -> Result<T>) -> Result<Resolved<T>> {
    match backend {
        Backend::Cpu => Ok(Resolved::Cpu(None)),
        Backend::Cuda => gpu().map(Resolved::Gpu),
        Backend::Auto => Ok(match gpu() {
            Ok(g) => Resolved::Gpu(g),
            Err(e) => Resolved::Cpu(Some(e.message)),
        }),
    }
}

/// Why there is no CUDA backend in this build.
#[cfg(not(feature = "cuda"))]
const NO_CUDA: &str = "this factz was built without the CUDA backend (cargo feature cuda)";

/// The CPU for `Cpu` and `Auto` in a build without CUDA; `Cuda` is Unsupported.
#[cfg(not(feature = "cuda"))]
fn cpu_only<T>(backend: Backend, run: impl FnOnce() -> Result<T>) -> Result<(T, BackendUsed)> {
    let fallback_reason = match backend {
        Backend::Cpu => None,
        Backend::Auto => Some(NO_CUDA.to_string()),
        Backend::Cuda => return Err(Error::unsupported(NO_CUDA)),
    };
    Ok((
        run()?,
        BackendUsed {
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
) -> Result<(field::Compressed, BackendUsed)> {
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
) -> Result<(particles::Compressed, BackendUsed)> {
    let (corrector, ran) = corrector(backend)?;
    let prepared = particles::prepare(pos, cfg)?;
    let c = particles::finish_with(pos, cfg, prepared, None, corrector.as_ref())?;
    Ok((c, ran))
}

/// The correction's pair search and optimiser on `backend`, for
/// `particles::finish_with` (the distributed path takes it too): the GPU's
/// when chosen and usable; `Cuda` fails (Unsupported, with the reason) without
/// a usable device, `Auto` then takes the CPU's and says why.
pub fn corrector(backend: Backend) -> Result<(Box<dyn Corrector>, BackendUsed)> {
    let cpu = |fallback_reason| -> Result<(Box<dyn Corrector>, BackendUsed)> {
        let ran = BackendUsed {
            backend: Backend::Cpu,
            fallback_reason,
        };
        Ok((Box::new(correct::Cpu), ran))
    };
    #[cfg(feature = "cuda")]
    return match resolve(backend, crate::gpu::exec::shared)? {
        Resolved::Cpu(reason) => cpu(reason),
        Resolved::Gpu(exec) => {
            let ran = BackendUsed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn auto_falls_back_on_any_setup_error_and_cuda_fails_with_it() {
        let nvrtc = || -> Result<()> { Err(Error::internal("NVRTC compiling mode_s.cu: boom")) };
        let none = || -> Result<()> { Err(Error::unsupported("no CUDA driver")) };
        for (setup, why) in [
            (&nvrtc as &dyn Fn() -> Result<()>, "NVRTC"),
            (&none, "driver"),
        ] {
            match resolve(Backend::Auto, setup).unwrap() {
                Resolved::Cpu(Some(r)) => assert!(r.contains(why), "{r}"),
                r => panic!("Auto with a failed setup: {r:?}"),
            }
            let e = resolve(Backend::Cuda, setup).unwrap_err();
            assert!(e.message.contains(why), "{e}");
        }
        assert!(matches!(
            resolve(Backend::Auto, || Ok(7)).unwrap(),
            Resolved::Gpu(7)
        ));
        let untouched = || -> Result<()> { panic!("Cpu must not set up the GPU") };
        assert!(matches!(
            resolve(Backend::Cpu, untouched).unwrap(),
            Resolved::Cpu(None)
        ));
    }
}
