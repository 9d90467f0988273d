//! Library and ABI versions.

use std::ffi::c_char;

/// The C ABI version this header describes. It changes only when an existing
/// function, struct or constant changes incompatibly; additions (new functions,
/// larger struct versions selected by struct_size) keep it. Compare it with
/// factz_abi_version() at run time to detect a mismatched library.
pub const FACTZ_ABI_VERSION: u32 = 1;

const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut x = 0u32;
    while i < b.len() {
        x = x * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    x
}

const VERSION: u32 = (parse_u32(env!("CARGO_PKG_VERSION_MAJOR")) << 16)
    | (parse_u32(env!("CARGO_PKG_VERSION_MINOR")) << 8)
    | parse_u32(env!("CARGO_PKG_VERSION_PATCH"));

/// The library version as `(major << 16) | (minor << 8) | patch`.
#[no_mangle]
pub extern "C" fn factz_version() -> u32 {
    ffi_boundary!("factz_version", 0, { VERSION })
}

/// The library version as a static NUL-terminated string, e.g. "0.1.0".
#[no_mangle]
pub extern "C" fn factz_version_string() -> *const c_char {
    ffi_boundary!("factz_version_string", c"".as_ptr(), {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    })
}

/// The ABI version of the loaded library (FACTZ_ABI_VERSION it was built with).
#[no_mangle]
pub extern "C" fn factz_abi_version() -> u32 {
    ffi_boundary!("factz_abi_version", 0, { FACTZ_ABI_VERSION })
}
