//! The stream container's documented byte layout (src/format/mod.rs), written
//! independently for tests that corrupt streams and re-seal their checksums.

/// CRC-32 (IEEE 802.3, reflected, as crc32fast), written here to stay independent.
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (n, e) in t.iter_mut().enumerate() {
            let mut c = n as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut c = !0u32;
    for &b in data {
        c = t[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// The container layout as src/format/mod.rs documents it: 88 fixed bytes (section
/// count last), 28-byte table entries (id, stored u64, raw u64, flags, crc32), a crc32
/// of everything before it, then the payloads back to back.
pub struct Layout2 {
    pub header_crc_at: usize,
    /// (table entry offset, payload offset, stored length)
    pub sections: Vec<(usize, usize, usize)>,
}

pub fn rd_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub fn rd_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `None` when the stream does not match the documented layout exactly.
pub fn parse_layout(b: &[u8]) -> Option<Layout2> {
    if b.len() < 92 || &b[..8] != b"FACTZ\0\r\n" {
        return None;
    }
    let count = rd_u32(b, 84) as usize;
    if count > 64 {
        return None;
    }
    let crc_at = 88 + 28 * count;
    if b.len() < crc_at + 4 || crc32(&b[..crc_at]) != rd_u32(b, crc_at) {
        return None;
    }
    let mut off = crc_at + 4;
    let mut sections = Vec::new();
    for k in 0..count {
        let e = 88 + 28 * k;
        let stored = usize::try_from(rd_u64(b, e + 4)).ok()?;
        let end = off.checked_add(stored).filter(|&x| x <= b.len())?;
        if crc32(&b[off..end]) != rd_u32(b, e + 24) {
            return None;
        }
        sections.push((e, off, stored));
        off = end;
    }
    if off != b.len() {
        return None;
    }
    Some(Layout2 {
        header_crc_at: crc_at,
        sections,
    })
}

/// Recompute the section CRCs and then the header CRC (as a writer would).
pub fn fix_crcs(b: &mut [u8], l: &Layout2) {
    for &(e, off, len) in &l.sections {
        if off + len <= b.len() {
            let c = crc32(&b[off..off + len]);
            b[e + 24..e + 28].copy_from_slice(&c.to_le_bytes());
        }
    }
    let c = crc32(&b[..l.header_crc_at]);
    b[l.header_crc_at..l.header_crc_at + 4].copy_from_slice(&c.to_le_bytes());
}
