//! The C ABI: the only place in the crate with `extern "C"`.
//!
//! Every exported function runs its body behind one panic boundary
//! ([`ffi_boundary!`]), checks its pointers with one macro ([`check_not_null!`]),
//! returns a [`status::factz_status`] and leaves a thread-local message for
//! `factz_last_error()` when it fails. Structs that cross the boundary begin with
//! a `struct_size` the caller sets, so later versions can grow them.
//!
//! The C header `include/factz.h` is generated from this module by `build.rs`
//! (cbindgen); the names here are the C names.
//!
//! Memory space: host pointers everywhere except the `_device` entry points
//! of [`gpu`] (CUDA device pointers; FACTZ_UNSUPPORTED without a GPU).

#![deny(unsafe_op_in_unsafe_fn)]

/// Runs an exported function's body behind the panic boundary.
///
/// `ffi_boundary!("name", { ... Ok(()) })` runs a body returning
/// `Result<(), Failure>` and yields a `factz_status`: `FACTZ_OK`, the failure's
/// status (its message recorded for `factz_last_error`), or `FACTZ_PANIC`.
/// It clears the thread's last error first.
///
/// `ffi_boundary!("name", panic_value, { ... })` runs a body returning a plain
/// value, yields `panic_value` if it panics, and leaves the last error alone
/// (used by the error and version accessors).
macro_rules! ffi_boundary {
    ($name:literal, $body:block) => {
        $crate::capi::boundary::run_status(
            $name,
            move || -> ::std::result::Result<(), $crate::capi::boundary::Failure> { $body },
        )
    };
    ($name:literal, $panic_value:expr, $body:block) => {
        $crate::capi::boundary::run_value($name, $panic_value, move || $body)
    };
}

/// Early-returns a `FACTZ_NULL_POINTER` failure naming `$what` when `$ptr` is NULL.
macro_rules! check_not_null {
    ($ptr:expr, $what:expr) => {
        if $ptr.is_null() {
            return Err($crate::capi::boundary::Failure::null($what));
        }
    };
}

pub mod backend;
mod boundary;
mod buffers;
// The MPI entry points (feature `mpi`); declared in the hand-written
// include/factz_mpi.h, not in the generated factz.h (they take MPI types).
#[cfg(feature = "mpi")]
pub mod dist;
pub mod error;
pub mod field;
// Device-pointer entry points: in every build (FACTZ_UNSUPPORTED without `cuda`).
pub mod gpu;
pub mod particles;
pub mod status;
pub mod version;

#[cfg(test)]
mod tests;
