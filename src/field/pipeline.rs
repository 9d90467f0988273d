//! The field compressor's one pipeline: the checks, the bound, the header,
//! the lossless fallback when coding does not pay, the verify pass and the
//! decoder's dispatch, written once. Where the stages run is the [`Stages`]
//! seam (as particles have their `Corrector`): [`Cpu`] here, and the CUDA
//! kernels (`gpu::field::OnExec`, on a device or on the host shim in tests).
//! Both produce the same sections, so the stream is the same bytes.

use super::blockwise::Codes;
use super::parts::Parts;
use super::stream::{self, Coded};
use super::{
    blockwise, check_config, header, ids_len, info_of, lossless, max_compressed_size, speculative,
    verify, vertex_count, Compressed, FieldConfig, FieldInfo, FieldReport, Mode,
};
use crate::bound::{bound_for_range, finite_range, Bound};
use crate::codec::{rans, Coder};
use crate::error::{Error, Result};
use crate::format::{self, Parsed};
use crate::real::Real;
use std::borrow::Cow;

/// What the pipeline needs from a backend: the modes' two directions and the
/// few host copies the pipeline makes, for element type `T` (the GPU's
/// stages take f32).
pub trait Stages<T: Real = f32> {
    /// A read-only field (u, v) in the backend's memory.
    type Field<'a>: Copy;
    /// A writable field (u, v) in the backend's memory.
    type Out<'a>;
    /// Values held by each component.
    fn field_len(&self, f: Self::Field<'_>) -> [usize; 2];
    fn out_len(&self, out: &Self::Out<'_>) -> [usize; 2];
    /// The first `n` values of each component on the host (for the lossless
    /// fallback and the verify pass only).
    fn to_host<'a>(&self, f: Self::Field<'a>, n: usize) -> Result<[Cow<'a, [T]>; 2]>;
    /// [`finite_range`] of the first `n` values of both components.
    fn finite_range(&self, f: Self::Field<'_>, n: usize) -> Result<(T, T)>;
    /// `blockwise::encode` / `speculative::encode`, coded as [`stream::code`]
    /// codes them; also returns the exact vertices' count.
    #[allow(clippy::too_many_arguments)]
    fn encode(
        &self,
        mode: Mode,
        f: Self::Field<'_>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
        coder: Coder,
    ) -> Result<(Coded, usize)>;
    /// `stream::read` then `blockwise::decode` / `speculative::decode` of a
    /// checked stream of that mode into `out`, with their checks.
    #[allow(clippy::too_many_arguments)]
    fn decode(
        &self,
        mode: Mode,
        p: &Parsed,
        coder: Coder,
        ny: usize,
        nx: usize,
        xi: f64,
        out: &mut Self::Out<'_>,
    ) -> Result<()>;
    /// Copy host values into `out` (a lossless stream, decoded on the host).
    fn put(&self, u: &[T], v: &[T], out: &mut Self::Out<'_>) -> Result<()>;
}

/// `field::compress` with the stages of `s`.
pub fn compress_on<T: Real, S: Stages<T>>(
    s: &S,
    f: S::Field<'_>,
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<Compressed> {
    let n = vertex_count(ny, nx)?;
    let [lu, lv] = s.field_len(f);
    if lu != n || lv != n {
        return Err(Error::invalid(format!(
            "field shape {ny}x{nx} needs {n} values per component, got {lu} and {lv}"
        )));
    }
    check_config(cfg)?;
    let xi = match cfg.bound {
        Bound::Abs(x) => x,
        Bound::Rel(_) => {
            let (lo, hi) = s.finite_range(f, n)?;
            bound_for_range(cfg.bound, lo, hi)
        }
    };
    let (coded, exact) = s.encode(cfg.mode, f, ny, nx, xi, cfg.chunk_of_larger, cfg.coder)?;
    finish(coded, exact, ny, nx, xi, cfg, || s.to_host(f, n))
}

/// From coded sections to the stream: the header, the container, the
/// lossless fallback when coding does not pay, the verify pass; the field is
/// fetched from `host` only when the fallback or verify needs it.
pub fn finish<'a, T: Real>(
    coded: Coded,
    exact_vertices: usize,
    ny: usize,
    nx: usize,
    xi: f64,
    cfg: &FieldConfig,
    host: impl FnOnce() -> Result<[Cow<'a, [T]>; 2]>,
) -> Result<Compressed> {
    let n = vertex_count(ny, nx)?;
    let mut flags = if cfg.chunk_of_larger {
        format::FLAG_CHUNK_OF_LARGER
    } else {
        0
    };
    if cfg.verify {
        flags |= format::FLAG_VERIFIED;
    }
    let mut report = FieldReport {
        abs_bound: xi,
        exact_vertices,
        lossless_fallback: false,
        verified: false,
        fallback_reason: None,
    };
    let mut bytes = stream::write_coded(
        &header(ny, nx, xi, cfg.mode as u8, cfg, flags, T::DTYPE),
        coded,
        cfg.zstd_level,
    )?;
    let oversize = bytes.len() > max_compressed_size(ny, nx)?;
    if !(oversize || cfg.verify) {
        return Ok(Compressed { bytes, report });
    }
    // The fallback and the verify pass read the field on the host: fetched once.
    let [u, v] = host()?;
    if oversize {
        bytes = lossless(&u, &v, ny, nx, xi, cfg, flags)?;
        report.exact_vertices = n;
    }
    if cfg.verify {
        report.verified = true;
        if let Err(why) = verify(&u, &v, xi, &bytes) {
            // Never expected: the guarantee is built in. Keep the data anyway and say why.
            let all = flags | format::FLAG_LOSSLESS_FALLBACK;
            bytes = lossless(&u, &v, ny, nx, xi, cfg, all)?;
            report.lossless_fallback = true;
            report.fallback_reason = Some(why);
            report.exact_vertices = n;
        }
    }
    Ok(Compressed { bytes, report })
}

/// `field::decompress_into` with the stages of `s`, into `out` (each
/// component of the stream's ny * nx values); returns what the stream says.
pub fn decompress_on<T: Real, S: Stages<T>>(
    s: &S,
    bytes: &[u8],
    out: &mut S::Out<'_>,
) -> Result<FieldInfo> {
    let p = format::parse(bytes)?;
    let info = info_of(&p.header)?;
    decode_parsed(s, &p, &info, out)?;
    Ok(info)
}

/// The stream's element type is T, or the error that names both.
pub fn check_dtype<T: Real>(info: &FieldInfo) -> Result<()> {
    if info.dtype != T::NAME {
        return Err(Error::invalid(format!(
            "stream holds {} values; they decode as {}, not {}",
            info.dtype,
            info.dtype,
            T::NAME
        )));
    }
    Ok(())
}

/// Decode a parsed stream whose header said `info` into `out`, which must
/// hold the stream's shape (checked before anything is decoded).
pub fn decode_parsed<T: Real, S: Stages<T>>(
    s: &S,
    p: &Parsed,
    info: &FieldInfo,
    out: &mut S::Out<'_>,
) -> Result<()> {
    let (ny, nx, xi) = (info.ny, info.nx, info.abs_bound);
    check_dtype::<T>(info)?;
    let n = ny * nx;
    let [lu, lv] = s.out_len(out);
    if lu != n || lv != n {
        return Err(Error::invalid(format!(
            "stream holds a {ny}x{nx} field ({n} values per component); buffers hold {lu} and {lv}"
        )));
    }
    match info.mode {
        None => {
            // Plain words, decoded on the host.
            let parts = stream::read(p, n, info.coder, |_| 0)?;
            let w = T::WORDS;
            let (u, v): (Vec<T>, Vec<T>) = parts
                .raw
                .chunks_exact(2 * w)
                .map(|p| (T::from_words(&p[..w]), T::from_words(&p[w..])))
                .unzip();
            s.put(&u, &v, out)
        }
        Some(mode) => s.decode(mode, p, info.coder, ny, nx, xi, out),
    }
}

/// The stages on the CPU, with an optional cap on each vertex's relative
/// bound (`field::compress_capped`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu<'c> {
    pub caps: Option<&'c [f64]>,
}

impl<T: Real> Stages<T> for Cpu<'_> {
    type Field<'a> = [&'a [T]; 2];
    type Out<'a> = [&'a mut [T]; 2];

    fn field_len(&self, [u, v]: Self::Field<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn out_len(&self, [u, v]: &Self::Out<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn to_host<'a>(&self, [u, v]: Self::Field<'a>, n: usize) -> Result<[Cow<'a, [T]>; 2]> {
        Ok([Cow::Borrowed(&u[..n]), Cow::Borrowed(&v[..n])])
    }

    fn finite_range(&self, [u, v]: Self::Field<'_>, n: usize) -> Result<(T, T)> {
        Ok(finite_range(&[&u[..n], &v[..n]]))
    }

    fn encode(
        &self,
        mode: Mode,
        [u, v]: Self::Field<'_>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk: bool,
        coder: Coder,
    ) -> Result<(Coded, usize)> {
        let parts: Parts = match mode {
            Mode::Blockwise => blockwise::encode_capped(u, v, ny, nx, xi, chunk, self.caps),
            Mode::Speculative => speculative::encode_capped(u, v, ny, nx, xi, chunk, self.caps),
        };
        let exact = parts.exact.iter().filter(|&&e| e).count();
        let segments = stream::segments_for(mode, ny, nx, parts.codes.len());
        Ok((stream::code(&parts, coder, segments.as_deref()), exact))
    }

    fn decode(
        &self,
        mode: Mode,
        p: &Parsed,
        coder: Coder,
        ny: usize,
        nx: usize,
        xi: f64,
        [u, v]: &mut Self::Out<'_>,
    ) -> Result<()> {
        let ids = |coded| ids_len(mode, ny, nx, coded);
        if mode == Mode::Speculative {
            let parts = stream::read(p, ny * nx, coder, ids)?;
            return speculative::decode(&parts, ny, nx, xi, u, v);
        }
        if coder == Coder::Rans {
            // The codes decode a rANS block at a time as the bands reach
            // them, never all at once (8 bytes per vertex through memory).
            let (parts, n_codes) = stream::read_but_codes(p, ny * nx, coder, ids)?;
            let section = stream::section(p, stream::SEC_CODES, n_codes)?;
            let blocks = rans::Blocks::new(&section, n_codes)?;
            return blockwise::decode_from(&parts, Codes::Rans(&blocks, n_codes), ny, nx, xi, u, v);
        }
        let parts = stream::read(p, ny * nx, coder, ids)?;
        blockwise::decode(&parts, ny, nx, xi, u, v)
    }

    fn put(&self, hu: &[T], hv: &[T], [u, v]: &mut Self::Out<'_>) -> Result<()> {
        u.copy_from_slice(hu);
        v.copy_from_slice(hv);
        Ok(())
    }
}
