//! Where a compression runs, in every build: the CPU, or the CUDA backend
//! (`gpu`, cargo feature `cuda`) for host data. The stream is the same bytes
//! whichever runs it, so the choice only trades speed. The command line's
//! `--backend` and the C ABI's `config->backend` come here.

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

impl BackendUsed {
    fn cpu(fallback_reason: Option<String>) -> BackendUsed {
        BackendUsed {
            backend: Backend::Cpu,
            fallback_reason,
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda() -> BackendUsed {
        BackendUsed {
            backend: Backend::Cuda,
            fallback_reason: None,
        }
    }
}

/// The process's device with every kernel loaded (`gpu::exec::shared`).
#[cfg(feature = "cuda")]
type Device = &'static crate::gpu::exec::Cuda;
/// None in a build without CUDA.
#[cfg(not(feature = "cuda"))]
type Device = std::convert::Infallible;

#[cfg(feature = "cuda")]
fn device() -> Result<Device> {
    crate::gpu::exec::shared()
}

#[cfg(not(feature = "cuda"))]
fn device() -> Result<Device> {
    Err(crate::error::Error::unsupported(
        "this factz was built without the CUDA backend (cargo feature cuda)",
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
    match resolve(backend, device)? {
        Resolved::Cpu(reason) => Ok((
            field::compress(u, v, ny, nx, cfg)?,
            BackendUsed::cpu(reason),
        )),
        #[cfg(feature = "cuda")]
        Resolved::Gpu(exec) => Ok((
            crate::gpu::field::compress_host(exec, u, v, ny, nx, cfg)?,
            BackendUsed::cuda(),
        )),
        #[cfg(not(feature = "cuda"))]
        Resolved::Gpu(none) => match none {},
    }
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
    match resolve(backend, device)? {
        Resolved::Cpu(reason) => Ok((Box::new(correct::Cpu), BackendUsed::cpu(reason))),
        #[cfg(feature = "cuda")]
        Resolved::Gpu(exec) => Ok((
            Box::new(crate::gpu::particles::GpuCorrection { exec }),
            BackendUsed::cuda(),
        )),
        #[cfg(not(feature = "cuda"))]
        Resolved::Gpu(none) => match none {},
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
