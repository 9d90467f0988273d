//! The one error type of the library; the C ABI maps `ErrorKind` to status codes.

use std::fmt;

/// What went wrong, coarse enough to become a C status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A caller-supplied argument is out of range or inconsistent (shape, bound, flag).
    InvalidArgument,
    /// The input stream is truncated, corrupted or not a factz stream.
    CorruptStream,
    /// Valid but not supported by this build or version (format version, coder, kind).
    Unsupported,
    /// The caller's output buffer is too small.
    BufferTooSmall,
    /// A bug: an internal invariant did not hold.
    Internal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::CorruptStream, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Early-return a corrupt-stream error unless `cond` holds.
#[macro_export]
macro_rules! ensure_stream {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err($crate::error::Error::corrupt(format!($($arg)*)));
        }
    };
}
