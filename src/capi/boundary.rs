//! The panic boundary every exported function runs behind, and the failure type
//! its bodies return.

use super::error;
use super::status::factz_status;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Why an exported function failed: the status it returns and the message
/// `factz_last_error()` will give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub status: factz_status,
    pub message: String,
}

impl Failure {
    pub fn new(status: factz_status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(factz_status::FACTZ_INVALID_ARGUMENT, message)
    }
    pub fn null(what: &str) -> Failure {
        Failure::new(factz_status::FACTZ_NULL_POINTER, format!("{what} is NULL"))
    }
    pub fn too_small(message: impl Into<String>) -> Failure {
        Failure::new(factz_status::FACTZ_BUFFER_TOO_SMALL, message)
    }
}

impl From<crate::error::Error> for Failure {
    fn from(e: crate::error::Error) -> Failure {
        Failure::new(factz_status::from_kind(e.kind), e.message)
    }
}

/// The text of a panic payload (`panic!` gives a `&str` or a `String`).
fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// Runs a status-returning body: clears the thread's last error, catches any
/// panic, records the message of a failure or panic, prefixed with `name`.
pub(crate) fn run_status(name: &str, body: impl FnOnce() -> Result<(), Failure>) -> factz_status {
    error::clear();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => factz_status::FACTZ_OK,
        Ok(Err(failure)) => {
            error::set(&format!("{name}: {}", failure.message));
            failure.status
        }
        Err(payload) => {
            error::set(&format!(
                "{name}: panic (a bug in factz, please report): {}",
                panic_text(&*payload)
            ));
            // Dropping a payload could panic in turn; it must not unwind into C.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            factz_status::FACTZ_PANIC
        }
    }
}

/// Runs a value-returning body (an accessor): gives `on_panic` if it panics and
/// records the panic; otherwise leaves the thread's last error alone.
pub(crate) fn run_value<T>(name: &str, on_panic: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            error::set(&format!(
                "{name}: panic (a bug in factz, please report): {}",
                panic_text(&*payload)
            ));
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            on_panic
        }
    }
}
