//! Hand-written declarations of the part of ADIOS2's C API (`adios2_c.h`, ADIOS2
//! 2.12) that opens a BP5 file and reads float32 global arrays, and a small safe
//! reader on top of them ([`read`]). Used by factz's tests to read what the factz
//! ADIOS2 operator wrote; Linux only (build.rs finds the PyPI wheel `adios2`).
//!
//! Names, values and signatures are copied from the headers of the wheel;
//! `tests/declarations.rs` has a C compiler check every one of them against the
//! installed headers.
//!
//! Enums are plain `c_int` aliases with constants rather than Rust enums: a value
//! the library returns that is not declared here is then a number to report, not
//! undefined behaviour. C compilers give these enums the size of `int` (checked by
//! the same test).

#![allow(non_camel_case_types, non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_void};
use std::marker::{PhantomData, PhantomPinned};

pub mod read;

/// The directory build.rs linked `libadios2_c.so` from.
pub const LIB_DIR: &str = env!("ADIOS2_SYS_LIB_DIR");
/// The directory holding `adios2_c.h` for that library.
pub const INCLUDE_DIR: &str = env!("ADIOS2_SYS_INCLUDE_DIR");

macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            // Only ever behind a pointer owned by ADIOS2: neither Send, Sync nor Unpin.
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// `adios2_adios`: the ADIOS2 object from `adios2_init_serial`.
    adios2_adios;
    /// `adios2_io`: a group of variables and the engine settings.
    adios2_io;
    /// `adios2_variable`: a variable of an io.
    adios2_variable;
    /// `adios2_engine`: an open file or stream.
    adios2_engine;
}

/// `adios2_error`: what every C function returns; non-zero is the kind of C++
/// exception ADIOS2 caught (it prints the exception's message on stderr).
pub type adios2_error = c_int;
pub const adios2_error_none: adios2_error = 0;
pub const adios2_error_invalid_argument: adios2_error = 1;
pub const adios2_error_system_error: adios2_error = 2;
pub const adios2_error_runtime_error: adios2_error = 3;
pub const adios2_error_exception: adios2_error = 4;

/// `adios2_type`: a variable's element type.
pub type adios2_type = c_int;
pub const adios2_type_unknown: adios2_type = -1;
pub const adios2_type_string: adios2_type = 0;
pub const adios2_type_float: adios2_type = 1;
pub const adios2_type_double: adios2_type = 2;
pub const adios2_type_float_complex: adios2_type = 3;
pub const adios2_type_double_complex: adios2_type = 4;
pub const adios2_type_int8_t: adios2_type = 5;
pub const adios2_type_int16_t: adios2_type = 6;
pub const adios2_type_int32_t: adios2_type = 7;
pub const adios2_type_int64_t: adios2_type = 8;
pub const adios2_type_uint8_t: adios2_type = 9;
pub const adios2_type_uint16_t: adios2_type = 10;
pub const adios2_type_uint32_t: adios2_type = 11;
pub const adios2_type_uint64_t: adios2_type = 12;
pub const adios2_type_long_double: adios2_type = 13;

/// `adios2_mode`: open modes (`adios2_open`) and launch modes (`adios2_get`).
pub type adios2_mode = c_int;
pub const adios2_mode_undefined: adios2_mode = 0;
pub const adios2_mode_write: adios2_mode = 1;
pub const adios2_mode_read: adios2_mode = 2;
pub const adios2_mode_append: adios2_mode = 3;
pub const adios2_mode_readRandomAccess: adios2_mode = 6;
pub const adios2_mode_deferred: adios2_mode = 4;
pub const adios2_mode_sync: adios2_mode = 5;

/// `adios2_step_mode`: what `adios2_begin_step` begins.
pub type adios2_step_mode = c_int;
pub const adios2_step_mode_append: adios2_step_mode = 0;
pub const adios2_step_mode_update: adios2_step_mode = 1;
pub const adios2_step_mode_read: adios2_step_mode = 2;

/// `adios2_step_status`: what `adios2_begin_step` found.
pub type adios2_step_status = c_int;
pub const adios2_step_status_other_error: adios2_step_status = -1;
pub const adios2_step_status_ok: adios2_step_status = 0;
pub const adios2_step_status_not_ready: adios2_step_status = 1;
pub const adios2_step_status_end_of_stream: adios2_step_status = 2;

/// `adios2_shapeid`: global or local, array or single value.
pub type adios2_shapeid = c_int;
pub const adios2_shapeid_unknown: adios2_shapeid = -1;
pub const adios2_shapeid_global_value: adios2_shapeid = 0;
pub const adios2_shapeid_global_array: adios2_shapeid = 1;
pub const adios2_shapeid_joined_array: adios2_shapeid = 2;
pub const adios2_shapeid_local_value: adios2_shapeid = 3;
pub const adios2_shapeid_local_array: adios2_shapeid = 4;

extern "C" {
    // adios2_c_adios.h
    /// NULL on failure.
    pub fn adios2_init_serial() -> *mut adios2_adios;
    /// NULL on failure.
    pub fn adios2_declare_io(adios: *mut adios2_adios, name: *const c_char) -> *mut adios2_io;
    /// Frees the adios object and everything it owns.
    pub fn adios2_finalize(adios: *mut adios2_adios) -> adios2_error;

    // adios2_c_io.h
    pub fn adios2_set_engine(io: *mut adios2_io, engine_type: *const c_char) -> adios2_error;
    /// NULL on failure (a missing or unreadable file, for one).
    pub fn adios2_open(
        io: *mut adios2_io,
        name: *const c_char,
        mode: adios2_mode,
    ) -> *mut adios2_engine;
    /// NULL when the io has no such variable.
    pub fn adios2_inquire_variable(io: *mut adios2_io, name: *const c_char)
        -> *mut adios2_variable;
    /// `*size` names, each and the array `malloc`ed: the caller frees them. NULL on
    /// failure.
    pub fn adios2_available_variables(io: *mut adios2_io, size: *mut usize) -> *mut *mut c_char;

    // adios2_c_engine.h
    pub fn adios2_begin_step(
        engine: *mut adios2_engine,
        mode: adios2_step_mode,
        timeout_seconds: f32,
        status: *mut adios2_step_status,
    ) -> adios2_error;
    pub fn adios2_end_step(engine: *mut adios2_engine) -> adios2_error;
    /// `data` must hold `adios2_selection_size` elements of the variable's type.
    pub fn adios2_get(
        engine: *mut adios2_engine,
        variable: *mut adios2_variable,
        data: *mut c_void,
        launch: adios2_mode,
    ) -> adios2_error;
    pub fn adios2_close(engine: *mut adios2_engine) -> adios2_error;

    // adios2_c_variable.h
    pub fn adios2_set_selection(
        variable: *mut adios2_variable,
        ndims: usize,
        start: *const usize,
        count: *const usize,
    ) -> adios2_error;
    /// Steps relative to the variable's first step.
    pub fn adios2_set_step_selection(
        variable: *mut adios2_variable,
        step_start: usize,
        step_count: usize,
    ) -> adios2_error;
    pub fn adios2_variable_type(
        type_: *mut adios2_type,
        variable: *const adios2_variable,
    ) -> adios2_error;
    pub fn adios2_variable_shapeid(
        shapeid: *mut adios2_shapeid,
        variable: *const adios2_variable,
    ) -> adios2_error;
    pub fn adios2_variable_ndims(
        ndims: *mut usize,
        variable: *const adios2_variable,
    ) -> adios2_error;
    /// `shape` must hold `adios2_variable_ndims` elements.
    pub fn adios2_variable_shape(
        shape: *mut usize,
        variable: *const adios2_variable,
    ) -> adios2_error;
    pub fn adios2_variable_steps(
        steps: *mut usize,
        variable: *const adios2_variable,
    ) -> adios2_error;
    /// Elements (not bytes) the current selection needs.
    pub fn adios2_selection_size(
        size: *mut usize,
        variable: *const adios2_variable,
    ) -> adios2_error;
}
