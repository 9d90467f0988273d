//! Unsigned LEB128 varints, shared by the codecs and the stream container.
//!
//! Layout: 7 value bits per byte, least significant group first; the high bit
//! of a byte says "another byte follows". A `u64` takes 1 to 10 bytes; the
//! decoder rejects truncated input, an 11th byte, and a 10th byte that would
//! overflow 64 bits.

use crate::error::{Error, Result};

/// Appends `x` as an unsigned LEB128 varint.
pub fn put_uvarint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Reads an unsigned LEB128 varint at `*pos`, advancing `*pos` past it.
/// `*pos` is left unchanged on error.
pub fn get_uvarint(data: &[u8], pos: &mut usize) -> Result<u64> {
    let mut x: u64 = 0;
    let mut p = *pos;
    for i in 0..10u32 {
        let b = match data.get(p) {
            Some(&b) => b,
            None => return Err(Error::corrupt("truncated varint")),
        };
        p += 1;
        if i == 9 && b > 1 {
            return Err(Error::corrupt("varint overflows 64 bits"));
        }
        x |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *pos = p;
            return Ok(x);
        }
    }
    Err(Error::corrupt("varint longer than 10 bytes"))
}

/// Reads a varint that must be `<= max` (as a `usize`); `what` names it in the error.
pub(crate) fn get_uvarint_max(data: &[u8], pos: &mut usize, max: u64, what: &str) -> Result<usize> {
    let x = get_uvarint(data, pos)?;
    if x > max {
        return Err(Error::corrupt(format!("{what} {x} exceeds limit {max}")));
    }
    usize::try_from(x).map_err(|_| Error::corrupt(format!("{what} {x} does not fit in memory")))
}

/// Reads one byte at `*pos`, advancing it.
pub(crate) fn get_u8(data: &[u8], pos: &mut usize, what: &str) -> Result<u8> {
    match data.get(*pos) {
        Some(&b) => {
            *pos += 1;
            Ok(b)
        }
        None => Err(Error::corrupt(format!("truncated stream reading {what}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip() {
        let vals = [
            0u64,
            1,
            127,
            128,
            255,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX >> 1,
            u64::MAX,
        ];
        let mut buf = Vec::new();
        for &v in &vals {
            put_uvarint(&mut buf, v);
        }
        let mut pos = 0;
        for &v in &vals {
            assert_eq!(get_uvarint(&buf, &mut pos).unwrap(), v);
        }
        assert_eq!(pos, buf.len());
        assert!(get_uvarint(&buf, &mut pos).is_err());
    }

    #[test]
    fn varint_rejects_bad() {
        let mut pos = 0;
        assert!(get_uvarint(&[0x80, 0x80], &mut pos).is_err());
        assert_eq!(pos, 0);
        let over = [0xff; 9].iter().copied().chain([0x02]).collect::<Vec<u8>>();
        assert!(get_uvarint(&over, &mut pos).is_err());
        let long = [0x80u8; 11];
        assert!(get_uvarint(&long, &mut pos).is_err());
        let max = [0xff; 9].iter().copied().chain([0x01]).collect::<Vec<u8>>();
        assert_eq!(get_uvarint(&max, &mut pos).unwrap(), u64::MAX);
    }
}
