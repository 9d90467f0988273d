//! Checked views of caller memory: NULL, alignment, size and overlap checks
//! before any slice is made, and writes that never form a reference to the
//! caller's (possibly uninitialised) output memory.

use super::boundary::Failure;
use std::mem::{align_of, size_of};

/// A caller buffer's address range, for overlap checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    start: usize,
    end: usize,
}

impl Span {
    pub fn of<T>(ptr: *const T, len: usize) -> Span {
        let start = ptr as usize;
        Span {
            start,
            end: start.saturating_add(len.saturating_mul(size_of::<T>())),
        }
    }
    fn overlaps(self, other: Span) -> bool {
        self.start < self.end
            && other.start < other.end
            && self.start < other.end
            && other.start < self.end
    }
}

/// Fails when two buffers share memory.
pub(crate) fn check_disjoint(a: Span, a_name: &str, b: Span, b_name: &str) -> Result<(), Failure> {
    if a.overlaps(b) {
        return Err(Failure::invalid(format!(
            "{a_name} and {b_name} overlap; they must be separate buffers"
        )));
    }
    Ok(())
}

/// Checks what `slice::from_raw_parts` needs beside validity: a non-NULL,
/// aligned pointer and a byte size that fits `isize` without wrapping.
fn check_region<T>(ptr: *const T, len: usize, what: &str) -> Result<(), Failure> {
    check_not_null!(ptr, what);
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(Failure::invalid(format!(
            "{what} is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    let fits = len
        .checked_mul(size_of::<T>())
        .filter(|&bytes| bytes <= isize::MAX as usize)
        .and_then(|bytes| (ptr as usize).checked_add(bytes))
        .is_some();
    if !fits {
        return Err(Failure::invalid(format!(
            "{what}: {len} elements exceed the address space"
        )));
    }
    Ok(())
}

/// Borrows `len` elements at `ptr`; NULL is accepted when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` (if not NULL) points to `len` initialised values of `T`
/// that nothing writes while the returned slice lives.
pub(crate) unsafe fn input<'a, T>(
    ptr: *const T,
    len: usize,
    what: &str,
) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    check_region(ptr, len, what)?;
    // SAFETY: non-NULL, aligned, size within isize (checked above); validity for
    // reads of len initialised values is the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Checks an output buffer of `len` elements; NULL is accepted when `len` is 0.
pub(crate) fn check_output<T>(ptr: *mut T, len: usize, what: &str) -> Result<(), Failure> {
    if len == 0 {
        return Ok(());
    }
    check_region(ptr.cast_const(), len, what)
}

/// Copies `src` to `dst` (checked by [`check_output`] for at least `src.len()`
/// elements) without forming a reference to the destination.
///
/// # Safety
/// `dst` points to at least `src.len()` writable elements that do not overlap `src`.
pub(crate) unsafe fn copy_out<T: Copy>(dst: *mut T, src: &[T]) {
    if !src.is_empty() {
        // SAFETY: the caller's contract; both regions are valid and disjoint.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    }
}

/// Checks a pointer to one output value: non-NULL and aligned.
pub(crate) fn check_scalar_out<T>(ptr: *mut T, what: &str) -> Result<(), Failure> {
    check_region(ptr.cast_const(), 1, what)
}

/// Reads the leading `uint32_t struct_size` of a versioned struct and checks it
/// against the sizes this library knows.
///
/// # Safety
/// `ptr`, if not NULL, points to at least 4 readable bytes.
pub(crate) unsafe fn struct_size<T>(
    ptr: *const T,
    known: &[usize],
    what: &str,
    c_type: &str,
) -> Result<usize, Failure> {
    check_region(ptr.cast::<u8>(), 4, what)?;
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(Failure::invalid(format!(
            "{what} is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    // SAFETY: non-NULL, aligned for T (so for u32); the first 4 bytes are
    // readable by the caller's contract.
    let size = unsafe { ptr.cast::<u32>().read() } as usize;
    if !known.contains(&size) {
        let known: Vec<String> = known.iter().map(|s| s.to_string()).collect();
        return Err(Failure::invalid(format!(
            "{what}->struct_size is {size}, but this library (factz {}) knows {} (set it to sizeof({c_type}))",
            env!("CARGO_PKG_VERSION"),
            known.join(", ")
        )));
    }
    Ok(size)
}

/// Reads a versioned struct of `size` bytes (checked by [`struct_size`]) over
/// `base`, which holds the defaults of fields that version lacks.
///
/// # Safety
/// `ptr` points to `size <= size_of::<T>()` readable bytes; `T` is plain data
/// (integers and floats) for which any bytes are a valid value.
pub(crate) unsafe fn read_versioned<T: Copy>(ptr: *const T, size: usize, base: T) -> T {
    let mut value = base;
    debug_assert!(size <= size_of::<T>());
    // SAFETY: `size` readable bytes at ptr (caller's contract), `size` writable
    // bytes in our own `value`; distinct allocations.
    unsafe {
        std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), (&mut value as *mut T).cast::<u8>(), size)
    };
    value
}

/// Writes the first `size` bytes of `value` (the caller's struct version) to `ptr`.
///
/// # Safety
/// `ptr` points to `size <= size_of::<T>()` writable bytes; `T` has no padding.
pub(crate) unsafe fn write_versioned<T: Copy>(ptr: *mut T, size: usize, value: &T) {
    debug_assert!(size <= size_of::<T>());
    // SAFETY: `size` writable bytes at ptr (caller's contract); `value` is ours.
    unsafe {
        std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), ptr.cast::<u8>(), size)
    };
}
