//! The thread-local last-error message behind `factz_last_error()`.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

thread_local! {
    /// The message of the last failed factz call on this thread ("" after a success).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error (interior NULs become spaces).
pub(crate) fn set(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // try_with: during thread teardown the slot may be gone; then there is no one to tell.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = text);
}

/// Clears this thread's last error (no allocation when it is already empty).
pub(crate) fn clear() {
    let _ = LAST_ERROR.try_with(|slot| {
        let mut slot = slot.borrow_mut();
        if !slot.as_bytes().is_empty() {
            *slot = CString::default();
        }
    });
}

/// This thread's last error message, as a Rust string (for tests and the CLI).
pub fn last_error() -> String {
    LAST_ERROR
        .try_with(|slot| slot.borrow().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The message of the last failed factz call on this thread: a NUL-terminated
/// string, "" when that call succeeded (every factz function except the
/// error, status-string and version accessors clears it on entry). Never NULL.
///
/// The pointer is owned by factz and stays valid until the next factz call on
/// the same thread (or the thread's exit); copy it (factz_last_error_copy) to
/// keep it. Each thread has its own message.
#[no_mangle]
pub extern "C" fn factz_last_error() -> *const c_char {
    ffi_boundary!("factz_last_error", c"".as_ptr(), {
        LAST_ERROR
            .try_with(|slot| slot.borrow().as_ptr())
            .unwrap_or(c"".as_ptr())
    })
}

/// Copies this thread's last error message into `buf` (capacity `len` bytes,
/// always NUL-terminated when `len > 0`, truncated to `len - 1` bytes if needed)
/// and returns the message's full length in bytes, without the NUL, like
/// snprintf: a return value `>= len` means it was truncated.
/// `buf` may be NULL when `len` is 0 (to ask for the length).
///
/// # Safety
/// `buf` is NULL or points to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn factz_last_error_copy(buf: *mut c_char, len: usize) -> usize {
    ffi_boundary!("factz_last_error_copy", 0, {
        LAST_ERROR
            .try_with(|slot| {
                let slot = slot.borrow();
                let msg = slot.as_bytes();
                if !buf.is_null() && len > 0 {
                    let n = msg.len().min(len - 1);
                    // SAFETY: buf points to len >= n + 1 writable bytes (the caller's
                    // contract); msg is our own allocation, so they cannot overlap.
                    unsafe {
                        std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
                        *buf.add(n) = 0;
                    }
                }
                msg.len()
            })
            .unwrap_or(0)
    })
}
