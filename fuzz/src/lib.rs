//! Helpers shared by the fuzz targets.

/// `data` with every checksum of the stream container recomputed, as far as
/// its section table can be followed (the layout in `src/format/mod.rs`):
/// mutations then reach the payload decoders instead of stopping at a crc32.
/// Bytes that do not look like a container come back unchanged.
pub fn reseal(data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    if b.len() < 92 || b[..8] != *b"FACTZ\0\r\n" {
        return b;
    }
    let count = (u32::from_le_bytes(b[84..88].try_into().unwrap()) as usize).min(64);
    let crc_at = 88 + 28 * count;
    if b.len() < crc_at + 4 {
        return b;
    }
    let mut off = crc_at + 4;
    for k in 0..count {
        let e = 88 + 28 * k;
        let stored = u64::from_le_bytes(b[e + 4..e + 12].try_into().unwrap());
        let end = usize::try_from(stored)
            .ok()
            .and_then(|s| off.checked_add(s))
            .unwrap_or(usize::MAX)
            .min(b.len());
        let c = crc32fast::hash(&b[off..end]);
        b[e + 24..e + 28].copy_from_slice(&c.to_le_bytes());
        off = end;
    }
    let c = crc32fast::hash(&b[..crc_at]);
    b[crc_at..crc_at + 4].copy_from_slice(&c.to_le_bytes());
    b
}

/// Decodes `b` every way a user can: info, inspect and full decompression of
/// both kinds, read as float32 and as float64 (a stream of the other element
/// type must be refused, not misread). Results may be errors; a panic, hang or
/// huge allocation is the finding. A success must be self-consistent.
pub fn decode_all(b: &[u8]) {
    let _ = factz::field::info(b);
    let _ = factz::particles::info(b);
    let f32_field = factz::field::decompress(b);
    let f64_field = factz::field::decompress_as::<f64>(b);
    if let Ok(d) = &f32_field {
        assert_eq!((d.u.len(), d.v.len()), (d.ny * d.nx, d.ny * d.nx));
    }
    if let Ok(d) = &f64_field {
        assert_eq!((d.u.len(), d.v.len()), (d.ny * d.nx, d.ny * d.nx));
    }
    // One element type per stream: the same bytes never decode both ways.
    assert!(!(f32_field.is_ok() && f64_field.is_ok()));
    let f32_particles = factz::particles::decompress(b);
    let f64_particles = factz::particles::decompress_as::<f64>(b);
    if let Ok(d) = &f32_particles {
        assert_eq!(d.pos.len(), 3 * d.n);
    }
    if let Ok(d) = &f64_particles {
        assert_eq!(d.pos.len(), 3 * d.n);
    }
    assert!(!(f32_particles.is_ok() && f64_particles.is_ok()));
}
