//! `compress --backend cpu|cuda|auto`: where the work runs. The stream is the
//! same whichever runs it. Without the library's `cuda` feature only the CPU
//! exists: `cuda` is refused with the reason and `auto` runs the CPU.

use crate::args::Args;
use crate::{CliError, CliResult};
use factz::{field, particles};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Cpu,
    Cuda,
    Auto,
}

/// `--backend` (default cpu: the GPU path has not yet been validated on a
/// device, so it is opt-in).
pub fn choice(a: &Args) -> CliResult<Choice> {
    match a.value("backend") {
        None | Some("cpu") => Ok(Choice::Cpu),
        Some("cuda") => Ok(Choice::Cuda),
        Some("auto") => Ok(Choice::Auto),
        Some(x) => Err(a.usage_err(format!("bad --backend '{x}': expected cpu, cuda or auto"))),
    }
}

fn fail(e: factz::Error) -> CliError {
    CliError::fail(format!("compress: {e}"))
}

#[cfg(feature = "cuda")]
mod run {
    use super::Choice;
    use factz::gpu::field::{Backend, Ran};

    pub fn backend(c: Choice) -> Backend {
        match c {
            Choice::Cpu => Backend::Cpu,
            Choice::Cuda => Backend::Cuda,
            Choice::Auto => Backend::Auto,
        }
    }

    /// "cpu", "cuda", or "cpu (auto: why not cuda)".
    pub fn describe(r: Ran) -> String {
        match (r.backend, r.fallback_reason) {
            (Backend::Cuda, _) => "cuda".into(),
            (_, Some(why)) => format!("cpu (auto: {why})"),
            _ => "cpu".into(),
        }
    }
}

/// Without the CUDA backend: the CPU, or why `cuda` cannot run.
#[cfg(not(feature = "cuda"))]
fn cpu_only(c: Choice) -> CliResult<String> {
    const WHY: &str = "this factz was built without the CUDA backend (cargo feature cuda)";
    match c {
        Choice::Cpu => Ok("cpu".into()),
        Choice::Auto => Ok(format!("cpu (auto: {WHY})")),
        Choice::Cuda => Err(CliError::fail(format!("--backend cuda: {WHY}"))),
    }
}

/// `field::compress` on the chosen backend; also says which ran.
pub fn compress_field(
    c: Choice,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &field::FieldConfig,
) -> CliResult<(field::Compressed, String)> {
    #[cfg(feature = "cuda")]
    {
        let (out, ran) =
            factz::gpu::field::compress_host(run::backend(c), u, v, ny, nx, cfg).map_err(fail)?;
        Ok((out, run::describe(ran)))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let ran = cpu_only(c)?;
        Ok((field::compress(u, v, ny, nx, cfg).map_err(fail)?, ran))
    }
}

/// `particles::compress` on the chosen backend; also says which ran.
pub fn compress_particles(
    c: Choice,
    pos: &[f32],
    cfg: &particles::ParticleConfig,
) -> CliResult<(particles::Compressed, String)> {
    #[cfg(feature = "cuda")]
    {
        let (out, ran) =
            factz::gpu::particles::compress_host(run::backend(c), pos, cfg).map_err(fail)?;
        Ok((out, run::describe(ran)))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let ran = cpu_only(c)?;
        Ok((particles::compress(pos, cfg).map_err(fail)?, ran))
    }
}
