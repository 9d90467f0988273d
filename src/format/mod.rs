//! The self-describing stream container: one per chunk.
//!
//! Layout (all little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `FACTZ\0\r\n` |
//! | 2 | format version (u16) |
//! | 1 | kind (1 = field2d, 2 = particles) |
//! | 1 | element type (1 = f32, 2 = f64: field streams of mode S and lossless) |
//! | 4 | flags (u32, `FLAG_*`) |
//! | 24 | dims, 3 x u64 (field2d: ny, nx, 0) |
//! | 8 | absolute bound used (f64) |
//! | 4 | mode, coder, zstd level (i8), layout |
//! | 32 | kind-specific parameters, 4 x f64 |
//! | 4 | section count (u32) |
//! | 28 each | section table: id u32, stored length u64, raw length u64, flags u32, crc32 u32 |
//! | 4 | crc32 of everything above |
//! | ... | section payloads, back to back in table order |
//!
//! The reader trusts nothing: every length is checked against the input and a
//! caller-given ceiling before anything is allocated, and every payload's crc32 is
//! checked before it is decoded.

use crate::error::{Error, Result};
use std::borrow::Cow;

pub const MAGIC: [u8; 8] = *b"FACTZ\0\r\n";
/// Current format version; readers accept every version up to this one.
pub const VERSION: u16 = 5;

pub const FLAG_CHUNK_OF_LARGER: u32 = 1;
pub const FLAG_VERIFIED: u32 = 2;
pub const FLAG_LOSSLESS_FALLBACK: u32 = 4;
const KNOWN_FLAGS: u32 = 7;

const SECTION_ZSTD: u32 = 1;
const FIXED_LEN: usize = 8 + 2 + 1 + 1 + 4 + 24 + 8 + 4 + 32 + 4;
const ENTRY_LEN: usize = 28;
/// No stream has more sections than this; a larger count is corruption.
const MAX_SECTIONS: u32 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Field2d = 1,
    Particles = 2,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Field2d => "field2d",
            Kind::Particles => "particles",
        }
    }
}

pub const DTYPE_F32: u8 = 1;
pub const DTYPE_F64: u8 = 2;

/// The element type a header byte names, or the error for one no reader knows.
pub fn dtype_name(dtype: u8) -> Result<&'static str> {
    match dtype {
        DTYPE_F32 => Ok("f32"),
        DTYPE_F64 => Ok("f64"),
        x => Err(Error::unsupported(format!(
            "element type {x} is not supported"
        ))),
    }
}

/// How a stream's components lie in the caller's memory (header byte
/// `layout`): decompression writes the caller's layout back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Layout {
    /// All of the first component, then all of the next (u then v; x, y, z).
    Soa = 0,
    /// The components interleaved per vertex or particle.
    Aos = 1,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Soa => "soa",
            Layout::Aos => "aos",
        }
    }
}

/// Decoding allocates what a stream claims only up to this many decoded bytes
/// per stream byte (or up to `DECODE_FLOOR` bytes), so a crafted header cannot
/// make it reserve gigabytes for a few bytes of input. Legitimate streams beyond
/// it (huge constant fields, say) decode into caller-owned buffers, where the
/// caller vouches for the size.
pub const MAX_EXPANSION: usize = 1 << 16;
pub const DECODE_FLOOR: usize = 1 << 28;

/// Whether decoding may allocate `decoded` bytes for a stream of `stream_len` bytes.
pub fn may_allocate(decoded: usize, stream_len: usize) -> bool {
    decoded <= DECODE_FLOOR.max(stream_len.saturating_mul(MAX_EXPANSION))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub version: u16,
    pub kind: Kind,
    pub dtype: u8,
    pub flags: u32,
    pub dims: [u64; 3],
    pub abs_bound: f64,
    pub mode: u8,
    pub coder: u8,
    pub zstd_level: i8,
    pub layout: u8,
    pub params: [f64; 4],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionInfo {
    pub id: u32,
    /// Offset of the stored payload from the start of the stream.
    pub offset: usize,
    pub stored_len: usize,
    pub raw_len: usize,
    pub zstd: bool,
    pub crc: u32,
}

/// Bytes before the first payload of a stream with `sections` sections.
pub fn header_len(sections: usize) -> usize {
    FIXED_LEN + sections * ENTRY_LEN + 4
}

/// Serialize a header and its sections; each section is zstd-compressed when
/// `zstd_level > 0` and that makes it smaller.
pub fn write(header: &Header, sections: &[(u32, Vec<u8>)], zstd_level: i32) -> Result<Vec<u8>> {
    let mut stored: Vec<(u32, Cow<[u8]>, usize, u32)> = Vec::with_capacity(sections.len());
    for (id, raw) in sections {
        let mut payload = Cow::Borrowed(raw.as_slice());
        let mut flags = 0;
        if zstd_level > 0 && !raw.is_empty() {
            let z = crate::codec::zstd_compress(raw, zstd_level)?;
            if z.len() < raw.len() {
                payload = Cow::Owned(z);
                flags |= SECTION_ZSTD;
            }
        }
        stored.push((*id, payload, raw.len(), flags));
    }
    let total: usize =
        FIXED_LEN + stored.len() * ENTRY_LEN + 4 + stored.iter().map(|s| s.1.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&header.version.to_le_bytes());
    out.push(header.kind as u8);
    out.push(header.dtype);
    out.extend_from_slice(&header.flags.to_le_bytes());
    for d in header.dims {
        out.extend_from_slice(&d.to_le_bytes());
    }
    out.extend_from_slice(&header.abs_bound.to_le_bytes());
    out.extend_from_slice(&[
        header.mode,
        header.coder,
        header.zstd_level as u8,
        header.layout,
    ]);
    for p in header.params {
        out.extend_from_slice(&p.to_le_bytes());
    }
    out.extend_from_slice(&(stored.len() as u32).to_le_bytes());
    for (id, payload, raw_len, flags) in &stored {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&(*raw_len as u64).to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    for (_, payload, _, _) in &stored {
        out.extend_from_slice(payload);
    }
    debug_assert_eq!(out.len(), total);
    Ok(out)
}

/// A checked view of a stream: header and section table parsed, payloads not yet.
#[derive(Debug)]
pub struct Parsed<'a> {
    pub header: Header,
    pub sections: Vec<SectionInfo>,
    data: &'a [u8],
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| Error::corrupt("stream is truncated (header)"))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
}

/// Parse and check the header and section table of a stream.
pub fn parse(data: &[u8]) -> Result<Parsed<'_>> {
    if data.len() < MAGIC.len() || data[..MAGIC.len()] != MAGIC {
        return Err(Error::corrupt("not a factz stream (bad magic)"));
    }
    let mut c = Cursor { data, pos: 8 };
    let version = c.u16()?;
    if version == 0 || version > VERSION {
        return Err(Error::unsupported(format!(
            "stream format version {version} is newer than this library's ({VERSION}); upgrade factz"
        )));
    }
    let kind = match c.u8()? {
        1 => Kind::Field2d,
        2 => Kind::Particles,
        k => return Err(Error::corrupt(format!("unknown stream kind {k}"))),
    };
    let dtype = c.u8()?;
    let flags = c.u32()?;
    let dims = [c.u64()?, c.u64()?, c.u64()?];
    let abs_bound = c.f64()?;
    let (mode, coder, zstd_level, layout) = (c.u8()?, c.u8()?, c.u8()? as i8, c.u8()?);
    let params = [c.f64()?, c.f64()?, c.f64()?, c.f64()?];
    let count = c.u32()?;
    if count > MAX_SECTIONS {
        return Err(Error::corrupt(format!(
            "section count {count} is implausible"
        )));
    }
    let mut raw_entries = Vec::with_capacity(count as usize);
    for _ in 0..count {
        raw_entries.push((c.u32()?, c.u64()?, c.u64()?, c.u32()?, c.u32()?));
    }
    let crc_pos = c.pos;
    let crc = c.u32()?;
    if crc32fast::hash(&data[..crc_pos]) != crc {
        return Err(Error::corrupt(
            "stream header checksum mismatch (corrupted header)",
        ));
    }
    dtype_name(dtype)?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::corrupt(format!("unknown header flags {flags:#x}")));
    }
    let mut offset = c.pos;
    let mut sections = Vec::with_capacity(raw_entries.len());
    for (id, stored, raw, sflags, scrc) in raw_entries {
        let stored =
            usize::try_from(stored).map_err(|_| Error::corrupt("section length overflows"))?;
        let raw_len =
            usize::try_from(raw).map_err(|_| Error::corrupt("section length overflows"))?;
        let end = offset
            .checked_add(stored)
            .filter(|&e| e <= data.len())
            .ok_or_else(|| Error::corrupt(format!("stream is truncated (section {id})")))?;
        if sflags & !SECTION_ZSTD != 0 {
            return Err(Error::corrupt(format!("unknown flags on section {id}")));
        }
        let zstd = sflags & SECTION_ZSTD != 0;
        if !zstd && raw_len != stored {
            return Err(Error::corrupt(format!("section {id} length mismatch")));
        }
        sections.push(SectionInfo {
            id,
            offset,
            stored_len: stored,
            raw_len,
            zstd,
            crc: scrc,
        });
        offset = end;
    }
    if offset != data.len() {
        return Err(Error::corrupt(format!(
            "{} trailing bytes after the last section",
            data.len() - offset
        )));
    }
    let header = Header {
        version,
        kind,
        dtype,
        flags,
        dims,
        abs_bound,
        mode,
        coder,
        zstd_level,
        layout,
        params,
    };
    Ok(Parsed {
        header,
        sections,
        data,
    })
}

impl Parsed<'_> {
    /// The checked, decompressed payload of section `id`, refused if its raw length
    /// exceeds `max_raw_len` (the caller's ceiling from the shape).
    pub fn section(&self, id: u32, max_raw_len: usize) -> Result<Cow<'_, [u8]>> {
        let s = self
            .sections
            .iter()
            .find(|s| s.id == id)
            .ok_or_else(|| Error::corrupt(format!("stream lacks section {id}")))?;
        if s.raw_len > max_raw_len {
            return Err(Error::corrupt(format!(
                "section {id} claims {} bytes, more than the shape allows ({max_raw_len})",
                s.raw_len
            )));
        }
        let stored = &self.data[s.offset..s.offset + s.stored_len];
        if crc32fast::hash(stored) != s.crc {
            return Err(Error::corrupt(format!(
                "section {id} checksum mismatch (corrupted data)"
            )));
        }
        if !s.zstd {
            return Ok(Cow::Borrowed(stored));
        }
        let raw = crate::codec::zstd_decompress(stored, s.raw_len)?;
        if raw.len() != s.raw_len {
            return Err(Error::corrupt(format!(
                "section {id} decompressed to the wrong length"
            )));
        }
        Ok(Cow::Owned(raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            version: VERSION,
            kind: Kind::Field2d,
            dtype: DTYPE_F32,
            flags: FLAG_VERIFIED,
            dims: [3, 4, 0],
            abs_bound: 0.5,
            mode: 2,
            coder: 1,
            zstd_level: 3,
            layout: 0,
            params: [0.0; 4],
        }
    }

    #[test]
    fn round_trip_with_and_without_zstd() {
        let sections = vec![(1, vec![0u8; 1000]), (2, vec![1, 2, 3]), (3, vec![])];
        for level in [0, 3] {
            let bytes = write(&header(), &sections, level).unwrap();
            let p = parse(&bytes).unwrap();
            assert_eq!(p.header, header());
            for (id, raw) in &sections {
                assert_eq!(&*p.section(*id, 1 << 20).unwrap(), raw.as_slice());
            }
            assert!(p.section(9, 10).is_err());
            assert!(p.section(1, 999).is_err());
        }
    }

    #[test]
    fn every_truncation_and_header_flip_is_an_error() {
        let bytes = write(&header(), &[(1, vec![7u8; 40])], 0).unwrap();
        for n in 0..bytes.len() {
            assert!(parse(&bytes[..n]).is_err(), "prefix {n}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let ok = parse(&b).and_then(|p| p.section(1, 1 << 20).map(|s| s.into_owned()));
            assert!(ok.is_err(), "bit {bit}");
        }
    }
}
