//! ZFP's fixed-accuracy mode on a 1D or 2D float or double array (cargo feature `zfp`):
//! what the ZFP particle base and the ZFP field baseline of `factz bench` both
//! run. Streams carry no ZFP header (the caller keeps the shape and the
//! tolerance) and are flushed to whole 64-bit words, little-endian.
//!
//! Decoding never trusts the payload: it is copied into a zeroed, word-aligned
//! buffer at least as large as ZFP's own worst case for that shape and
//! tolerance (so the decoder cannot read outside it), and a stream whose
//! decoding consumed more than its stored length is corrupt.
#![doc(hidden)]

use zfp_sys as zs;

use crate::error::{Error, Result};
use crate::real::Real;

/// Extra zeroed words after every decode buffer.
const PAD_WORDS: usize = 64;

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("zfp: {what}"))
}

/// Owns the ZFP objects of one (de)compression and frees them on drop.
struct Zfp {
    field: *mut zs::zfp_field,
    stream: *mut zs::zfp_stream,
    bits: *mut zs::bitstream,
}

impl Drop for Zfp {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or was returned by the matching ZFP
        // constructor in `Zfp::new` and is freed exactly once, here.
        unsafe {
            if !self.bits.is_null() {
                zs::stream_close(self.bits);
            }
            if !self.stream.is_null() {
                zs::zfp_stream_close(self.stream);
            }
            if !self.field.is_null() {
                zs::zfp_field_free(self.field);
            }
        }
    }
}

impl Zfp {
    /// A float field over `values` of shape `dims` (`[n]`, or `[ny, nx]` with
    /// x fastest) and an accuracy-mode stream over `buf`. `values` and `buf`
    /// must outlive the returned object and not move; `values` must hold the
    /// shape's count unless only sizes are asked.
    fn new<T: Real>(
        values: &mut [T],
        dims: &[usize],
        tolerance: f64,
        buf: &mut [u64],
    ) -> Result<Zfp> {
        let fail = || Error::internal("zfp: cannot allocate its objects");
        let ptr = values.as_mut_ptr().cast();
        let float = if T::BYTES == 8 {
            zs::zfp_type_zfp_type_double
        } else {
            zs::zfp_type_zfp_type_float
        };
        // SAFETY: ZFP only records the pointers and sizes here; `values` and
        // `buf` (`8 * buf.len()` bytes) are borrowed for as long as the caller
        // keeps the returned object (see the callers).
        let z = unsafe {
            Zfp {
                field: match *dims {
                    [n] => zs::zfp_field_1d(ptr, float, n),
                    [ny, nx] => zs::zfp_field_2d(ptr, float, nx, ny),
                    _ => std::ptr::null_mut(),
                },
                stream: zs::zfp_stream_open(std::ptr::null_mut()),
                bits: zs::stream_open(buf.as_mut_ptr().cast(), 8 * buf.len()),
            }
        };
        if z.field.is_null() || z.stream.is_null() || z.bits.is_null() {
            return Err(fail());
        }
        // SAFETY: both pointers were just checked non-null and are owned by `z`.
        unsafe {
            zs::zfp_stream_set_accuracy(z.stream, tolerance);
            zs::zfp_stream_set_bit_stream(z.stream, z.bits);
            zs::zfp_stream_rewind(z.stream);
        }
        Ok(z)
    }

    /// Worst-case compressed bytes of a field of shape `dims` at `tolerance`.
    fn max_size<T: Real>(dims: &[usize], tolerance: f64) -> Result<usize> {
        let mut dummy = [0u64; 1];
        let mut none: [T; 0] = [];
        let z = Zfp::new(&mut none, dims, tolerance, &mut dummy)?;
        // SAFETY: `z.field` is valid; its pointer is never dereferenced by
        // `zfp_stream_maximum_size`, which reads only the sizes.
        Ok(unsafe { zs::zfp_stream_maximum_size(z.stream, z.field) })
    }
}

/// The values a shape holds.
fn count(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// `values` (shape `dims`, `[n]` or `[ny, nx]`) compressed at `tolerance`.
pub fn compress<T: Real>(values: &[T], dims: &[usize], tolerance: f64) -> Result<Vec<u8>> {
    let mut values = values.to_vec();
    if values.len() != count(dims) {
        return Err(Error::internal("zfp: values do not fill the shape"));
    }
    let max = Zfp::max_size::<T>(dims, tolerance)?;
    let mut buf = vec![0u64; max.div_ceil(8) + PAD_WORDS];
    let size = {
        let z = Zfp::new(&mut values, dims, tolerance, &mut buf)?;
        // SAFETY: `z` refers to `values` and `buf`, alive and unmoved in this
        // block; `buf` holds at least ZFP's maximum size for this field and mode.
        unsafe {
            let size = zs::zfp_compress(z.stream, z.field);
            if size == 0 {
                return Err(Error::internal("zfp: compression failed"));
            }
            size
        }
    };
    if size > 8 * buf.len() {
        return Err(Error::internal("zfp: compressed size exceeds its buffer"));
    }
    Ok(buf
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take(size)
        .collect())
}

/// The values of shape `dims` that `data` (from [`compress`] with this shape
/// and tolerance) decodes to.
pub fn decompress<T: Real>(data: &[u8], dims: &[usize], tolerance: f64) -> Result<Vec<T>> {
    let max = Zfp::max_size::<T>(dims, tolerance)?;
    if data.len() > max {
        return Err(corrupt("stream longer than ZFP's maximum"));
    }
    let mut buf = vec![0u64; max.div_ceil(8) + PAD_WORDS];
    for (w, c) in buf.iter_mut().zip(data.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(b);
    }
    let mut out = vec![T::default(); count(dims)];
    let used = {
        let z = Zfp::new(&mut out, dims, tolerance, &mut buf)?;
        // SAFETY: `z` refers to `out` (the shape's values) and `buf`, alive and
        // unmoved in this block. `buf` is zero-padded beyond ZFP's worst-case
        // size for this shape and tolerance (the parameters ZFP decodes with
        // come from the caller, not the payload), so decoding cannot read
        // outside it.
        unsafe {
            if zs::zfp_decompress(z.stream, z.field) == 0 {
                return Err(corrupt("could not decode a stream"));
            }
            zs::zfp_stream_compressed_size(z.stream)
        }
    };
    if used > data.len().next_multiple_of(8) {
        return Err(corrupt("stream is truncated"));
    }
    Ok(out)
}
