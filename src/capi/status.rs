//! Status codes: `FACTZ_OK` is 0, every failure lies in factz's own range
//! (4001..=4007), apart from errno values and other libraries' codes.

use crate::error::ErrorKind;
use std::ffi::{c_char, c_int, CStr};

/// What a factz function did. `FACTZ_OK` (0) is success; every failure code lies
/// in factz's own range 4001..=4007. `factz_last_error()` says more.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum factz_status {
    /// Success.
    FACTZ_OK = 0,
    /// An argument is out of range or inconsistent: an empty or too large shape,
    /// a bad error bound, an unknown enum value, flag or struct_size, a buffer
    /// shape that does not match the stream, overlapping buffers.
    FACTZ_INVALID_ARGUMENT = 4001,
    /// A required pointer is NULL (NULL is accepted only with a zero length).
    FACTZ_NULL_POINTER = 4002,
    /// The input is truncated, corrupted or not a factz stream.
    FACTZ_CORRUPT_STREAM = 4003,
    /// Valid, but not supported by this build or version (format version, coder, kind).
    FACTZ_UNSUPPORTED = 4004,
    /// The output buffer is too small; the size it needs was written to the
    /// function's length/count output.
    FACTZ_BUFFER_TOO_SMALL = 4005,
    /// A bug in factz: an internal invariant did not hold.
    FACTZ_INTERNAL = 4006,
    /// A bug in factz: a panic was caught at the C boundary. The library stays
    /// usable; please report the message from factz_last_error().
    FACTZ_PANIC = 4007,
}

impl factz_status {
    /// Every status, in numeric order.
    pub const ALL: [factz_status; 8] = [
        factz_status::FACTZ_OK,
        factz_status::FACTZ_INVALID_ARGUMENT,
        factz_status::FACTZ_NULL_POINTER,
        factz_status::FACTZ_CORRUPT_STREAM,
        factz_status::FACTZ_UNSUPPORTED,
        factz_status::FACTZ_BUFFER_TOO_SMALL,
        factz_status::FACTZ_INTERNAL,
        factz_status::FACTZ_PANIC,
    ];

    /// The status a library error becomes.
    pub fn from_kind(kind: ErrorKind) -> factz_status {
        match kind {
            ErrorKind::InvalidArgument => factz_status::FACTZ_INVALID_ARGUMENT,
            ErrorKind::CorruptStream => factz_status::FACTZ_CORRUPT_STREAM,
            ErrorKind::Unsupported => factz_status::FACTZ_UNSUPPORTED,
            ErrorKind::BufferTooSmall => factz_status::FACTZ_BUFFER_TOO_SMALL,
            ErrorKind::Internal => factz_status::FACTZ_INTERNAL,
        }
    }

    /// The status with this numeric value, if any.
    pub fn from_int(x: c_int) -> Option<factz_status> {
        Self::ALL.into_iter().find(|&s| s as c_int == x)
    }

    /// A short, static description (what `factz_status_string` returns).
    pub fn description(self) -> &'static CStr {
        match self {
            factz_status::FACTZ_OK => c"FACTZ_OK: success",
            factz_status::FACTZ_INVALID_ARGUMENT => c"FACTZ_INVALID_ARGUMENT: invalid argument",
            factz_status::FACTZ_NULL_POINTER => c"FACTZ_NULL_POINTER: required pointer is NULL",
            factz_status::FACTZ_CORRUPT_STREAM => {
                c"FACTZ_CORRUPT_STREAM: truncated, corrupted or not a factz stream"
            }
            factz_status::FACTZ_UNSUPPORTED => {
                c"FACTZ_UNSUPPORTED: not supported by this build or version"
            }
            factz_status::FACTZ_BUFFER_TOO_SMALL => {
                c"FACTZ_BUFFER_TOO_SMALL: output buffer too small"
            }
            factz_status::FACTZ_INTERNAL => c"FACTZ_INTERNAL: internal error (a bug in factz)",
            factz_status::FACTZ_PANIC => {
                c"FACTZ_PANIC: panic caught at the C boundary (a bug in factz)"
            }
        }
    }
}

/// A static, NUL-terminated description of a status code (never NULL; unknown
/// codes give "unknown factz status"). The string lives as long as the program.
/// Does not change the thread's last error.
#[no_mangle]
pub extern "C" fn factz_status_string(status: c_int) -> *const c_char {
    ffi_boundary!("factz_status_string", c"panic".as_ptr(), {
        factz_status::from_int(status)
            .map_or(c"unknown factz status", factz_status::description)
            .as_ptr()
    })
}
