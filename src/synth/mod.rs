//! Deterministic synthetic data for tests, the demo, benchmarks and users who want
//! a sample: 2D turbulence ([`Turbulence`]) and clustered particles
//! ([`Particles`]). The same parameters give the same bits on every platform and
//! for every thread count: the elementary functions ([`detmath`]) and the FFT
//! ([`fft`]) are written here from IEEE-754 arithmetic, not taken from the
//! system libm. `factz synth` writes either to a file with a JSON sidecar.

/// Changes whenever a generator's output changes (caches of generated data
/// are keyed by it).
pub const VERSION: u32 = 1;

pub mod detmath;
pub mod fft;
mod particles;
pub mod rng;
mod turbulence;

pub use particles::{Order, ParticleSet, Particles};
pub use turbulence::Turbulence;
