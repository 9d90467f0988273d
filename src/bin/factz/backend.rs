//! `compress --backend cpu|cuda|auto`: where the work runs (`factz::backend`).
//! The stream is the same whichever runs it.

use crate::args::Args;
use crate::{CliError, CliResult};
use factz::backend::Backend;
use factz::{backend, field, particles};

/// `--backend` (default cpu: the GPU path has not yet been validated on a
/// device, so it is opt-in).
pub fn choice(a: &Args) -> CliResult<Backend> {
    match a.value("backend") {
        None | Some("cpu") => Ok(Backend::Cpu),
        Some("cuda") => Ok(Backend::Cuda),
        Some("auto") => Ok(Backend::Auto),
        Some(x) => Err(a.usage_err(format!("bad --backend '{x}': expected cpu, cuda or auto"))),
    }
}

fn fail(e: factz::Error) -> CliError {
    CliError::fail(format!("compress: {e}"))
}

/// `field::compress` on the chosen backend; also says which ran.
pub fn compress_field(
    b: Backend,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &field::FieldConfig,
) -> CliResult<(field::Compressed, String)> {
    let (c, ran) = backend::compress_field(b, u, v, ny, nx, cfg).map_err(fail)?;
    Ok((c, ran.describe()))
}

/// `particles::compress` on the chosen backend; also says which ran.
pub fn compress_particles(
    b: Backend,
    pos: &[f32],
    cfg: &particles::ParticleConfig,
) -> CliResult<(particles::Compressed, String)> {
    let (c, ran) = backend::compress_particles(b, pos, cfg).map_err(fail)?;
    Ok((c, ran.describe()))
}
