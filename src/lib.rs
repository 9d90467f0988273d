//! factz: error-bounded compression that preserves the features scientists analyse:
//! every critical point of a 2D vector field (position cell and type) and every
//! friends-of-friends link (and so every FoF group) of a particle snapshot.
//!
//! The CPU path in this crate is the reference; `ARCHITECTURE.md` ("2.
//! Conventions") gives the exact conventions every backend follows.

pub mod backend;
pub mod bound;
pub mod capi;
pub mod codec;
pub mod cpu;
#[cfg(feature = "mpi")]
pub mod dist;
pub mod error;
pub mod field;
pub mod format;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod kernels;
pub mod particles;
pub mod real;
pub mod synth;
pub mod vtk;
#[cfg(feature = "zfp")]
pub mod zfp;

pub use error::{Error, ErrorKind, Result};
pub use real::Real;
