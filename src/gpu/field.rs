//! The whole field compressor with the kernels on a GPU (issue 6): the input
//! stays on the device, the kernels produce `Parts`, and the CPU's own stream
//! writer codes them, so the stream is `field::compress`'s byte for byte.
//!
//! The pipeline ([`compress_on`], [`decompress_on`]) is generic over
//! [`Kernels`]; [`OnExec`] gives it the kernels on any executor (`gpu::exec`):
//! a device through cudarc, or in tests the host build of the same `.cu`
//! files, so CI runs this whole file's logic.
//!
//! The kernels leave [`DevParts`] on the device. The four sections are coded
//! and decoded there with either coder (`gpu::huffman`, `gpu::rans`; bytes
//! as u32 symbols): only the coded bytes, code tables, histograms and a few
//! counts cross to the host. On the host still: the verify pass and the
//! lossless fallback read a host copy (only when they run); a lossless
//! stream decodes on the host and is copied up.

use super::exec::{self, Buf, Cuda, Exec, View};
use super::field_reduce;
use super::huffman::HuffmanKernels;
use super::mode_b_codec::CodecKernels;
use super::mode_s::ModeSKernels;
use super::parts::DevParts;
use super::rans::RansKernels;
use crate::backend::Resolved;
use crate::codec::Coder;
use crate::error::{Error, Result};
use crate::field::stream::{self, Coded};
use crate::field::{self, Bound, Compressed, FieldConfig, FieldInfo, FieldReport, Mode};
use crate::format::{self, Parsed};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::sync::Arc;

/// What the pipeline needs from a backend: the kernels' two directions and
/// the few host copies the pipeline still makes.
pub trait Kernels {
    /// A read-only field (u, v) in the backend's memory.
    type Field<'a>: Copy;
    /// A writable field (u, v) in the backend's memory.
    type Out<'a>;
    /// Values held by each component.
    fn field_len(&self, f: Self::Field<'_>) -> [usize; 2];
    fn out_len(&self, out: &Self::Out<'_>) -> [usize; 2];
    /// The first `n` values of each component on the host.
    fn to_host(&self, f: Self::Field<'_>, n: usize) -> Result<(Vec<f32>, Vec<f32>)>;
    /// `field::finite_range` of the first `n` values of both components.
    fn finite_range(&self, f: Self::Field<'_>, n: usize) -> Result<(f32, f32)>;
    /// `blockwise::encode` / `speculative::encode` (no caps), coded as
    /// `stream::write` codes them; also returns the exact vertices' count.
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
    fn put(&self, u: &[f32], v: &[f32], out: &mut Self::Out<'_>) -> Result<()>;
}

/// `field::compress` with the kernels of `k`: the same checks, bound, Parts,
/// stream, fallback and report (bound caps are not supported).
pub fn compress_on<K: Kernels>(
    k: &K,
    f: K::Field<'_>,
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<Compressed> {
    let n = field::vertex_count(ny, nx)?;
    let [lu, lv] = k.field_len(f);
    if lu != n || lv != n {
        return Err(Error::invalid(format!(
            "field shape {ny}x{nx} needs {n} values per component, got {lu} and {lv}"
        )));
    }
    field::check_config(cfg)?;
    let xi = match cfg.bound {
        Bound::Abs(x) => x,
        // The formula is field::bound_for_range, as on the CPU.
        Bound::Rel(_) => {
            let (lo, hi) = k.finite_range(f, n)?;
            field::bound_for_range(cfg.bound, lo, hi)
        }
    };
    let (coded, exact) = k.encode(cfg.mode, f, ny, nx, xi, cfg.chunk_of_larger, cfg.coder)?;
    finish(coded, exact, ny, nx, xi, cfg, || k.to_host(f, n))
}

/// From coded sections to the stream: `field::compress_with`'s tail (header,
/// stream writer, the lossless fallback when coding does not pay, the verify
/// pass), with the field fetched from `host` only when the fallback or verify
/// needs it.
pub fn finish(
    coded: Coded,
    exact_vertices: usize,
    ny: usize,
    nx: usize,
    xi: f64,
    cfg: &FieldConfig,
    host: impl FnOnce() -> Result<(Vec<f32>, Vec<f32>)>,
) -> Result<Compressed> {
    let n = field::vertex_count(ny, nx)?;
    let flags = if cfg.chunk_of_larger {
        format::FLAG_CHUNK_OF_LARGER
    } else {
        0
    };
    let verify_flag = if cfg.verify { format::FLAG_VERIFIED } else { 0 };
    let mut report = FieldReport {
        abs_bound: xi,
        exact_vertices,
        lossless_fallback: false,
        verified: false,
        fallback_reason: None,
    };
    let mut bytes = stream::write_coded(
        &field::header(ny, nx, xi, cfg.mode as u8, cfg, flags | verify_flag),
        coded,
        cfg.zstd_level,
    )?;
    let mut host = Some(host);
    let mut field = None;
    let mut fetch = || -> Result<(Vec<f32>, Vec<f32>)> {
        if field.is_none() {
            field = Some(host.take().expect("fetched once")()?);
        }
        Ok(field.clone().expect("fetched"))
    };
    if bytes.len() > field::max_compressed_size(ny, nx)? {
        let (u, v) = fetch()?;
        bytes = field::lossless(&u, &v, ny, nx, xi, cfg, flags | verify_flag)?;
        report.exact_vertices = n;
    }
    if cfg.verify {
        report.verified = true;
        let (u, v) = fetch()?;
        if let Err(why) = field::verify(&u, &v, xi, &bytes) {
            let all = flags | verify_flag | format::FLAG_LOSSLESS_FALLBACK;
            bytes = field::lossless(&u, &v, ny, nx, xi, cfg, all)?;
            report.lossless_fallback = true;
            report.fallback_reason = Some(why);
            report.exact_vertices = n;
        }
    }
    Ok(Compressed { bytes, report })
}

/// `field::decompress_into` with the kernels of `k`, into `out` (each
/// component of the stream's ny * nx values); returns what the stream says.
pub fn decompress_on<K: Kernels>(k: &K, bytes: &[u8], out: &mut K::Out<'_>) -> Result<FieldInfo> {
    let p = format::parse(bytes)?;
    let info = field::info_of(&p.header)?;
    let (ny, nx, xi) = (info.ny, info.nx, info.abs_bound);
    let n = ny * nx;
    let [lu, lv] = k.out_len(out);
    if lu != n || lv != n {
        return Err(Error::invalid(format!(
            "stream holds a {ny}x{nx} field ({n} values per component); buffers hold {lu} and {lv}"
        )));
    }
    match info.mode {
        None => {
            // Plain words: decoded on the host and copied up.
            let parts = stream::read(&p, n, info.coder, |_| 0)?;
            let (u, v): (Vec<f32>, Vec<f32>) = parts
                .raw
                .chunks_exact(2)
                .map(|w| (f32::from_bits(w[0]), f32::from_bits(w[1])))
                .unzip();
            k.put(&u, &v, out)?;
        }
        Some(mode) => k.decode(mode, &p, info.coder, ny, nx, xi, out)?,
    }
    Ok(info)
}

/// The pipeline's kernels on an executor, the field as views of its memory.
pub struct OnExec<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> OnExec<'_, E> {
    fn huffman(&self) -> HuffmanKernels<'_, E> {
        HuffmanKernels { exec: self.exec }
    }

    fn rans(&self) -> RansKernels<'_, E> {
        RansKernels { exec: self.exec }
    }

    /// `codec::encode_u32(coder, symbols)` on the executor.
    fn code(&self, symbols: View<u32>, coder: Coder) -> Result<Vec<u8>> {
        match coder {
            Coder::Huffman => self.huffman().encode(symbols),
            Coder::Rans => self.rans().encode(symbols),
        }
    }

    /// `codec::encode_bytes(coder, ..)` of bytes held one per u32 (Huffman
    /// codes bytes and words alike).
    fn code_bytes(&self, bytes: View<u32>, coder: Coder) -> Result<Vec<u8>> {
        match coder {
            Coder::Huffman => self.huffman().encode(bytes),
            Coder::Rans => self.rans().encode_bytes(bytes),
        }
    }

    /// Section `id` of `count` symbols decoded into a new executor array
    /// (both coders decode there). A byte section (`bytes`: the mask, the
    /// raw planes) comes one byte per u32, its symbols checked to be bytes.
    fn decode_section(
        &self,
        p: &Parsed,
        id: u32,
        coder: Coder,
        count: usize,
        bytes: bool,
    ) -> Result<Buf<E, u32>> {
        let e = self.exec;
        let coded = stream::section(p, id, count)?;
        let out = Buf::<E, u32>::zeros(e, count)?;
        let rans = self.rans();
        match (coder, bytes) {
            (Coder::Huffman, false) => self.huffman().decode_into(&coded, out.view())?,
            (Coder::Huffman, true) => self.huffman().decode_bytes_into(&coded, out.view())?,
            (Coder::Rans, false) => rans.decode_into(&coded, out.view())?,
            (Coder::Rans, true) => rans.decode_bytes_into(&coded, out.view())?,
        }
        Ok(out)
    }
}

impl<E: Exec> Kernels for OnExec<'_, E> {
    type Field<'a> = [View<f32>; 2];
    type Out<'a> = [View<f32>; 2];

    fn field_len(&self, [u, v]: Self::Field<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn out_len(&self, [u, v]: &Self::Out<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn to_host(&self, [u, v]: Self::Field<'_>, n: usize) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok((u.read(self.exec, 0..n)?, v.read(self.exec, 0..n)?))
    }

    fn finite_range(&self, [u, v]: Self::Field<'_>, n: usize) -> Result<(f32, f32)> {
        field_reduce::finite_range(self.exec, u, v, n)
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
        let exec = self.exec;
        let parts = match mode {
            Mode::Blockwise => CodecKernels { exec }.encode_device(u, v, ny, nx, xi, chunk)?,
            Mode::Speculative => ModeSKernels { exec }.encode_device(u, v, ny, nx, xi, chunk)?,
        };
        let coded = Coded {
            mask: self.code_bytes(field_reduce::widen(exec, parts.mask.view())?.view(), coder)?,
            // The RAW section as `stream::write` codes it: the words' byte planes.
            raw: self.code_bytes(
                field_reduce::to_planes(exec, parts.raw.view())?.view(),
                coder,
            )?,
            ids: self.code(parts.ids.view(), coder)?,
            codes: self.code(parts.codes.view(), coder)?,
        };
        Ok((coded, parts.n_exact))
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
        let exec = self.exec;
        let n = ny * nx;
        // stream::read's order: kind, mask, raw, ids, codes.
        stream::check_kind(p)?;
        let wide = self.decode_section(p, stream::SEC_MASK, coder, n.div_ceil(8), true)?;
        let mask = field_reduce::narrow(exec, wide.view())?;
        let n_exact = field_reduce::count_bits(exec, mask.view(), n)?;
        let planes = self.decode_section(p, stream::SEC_RAW, coder, 8 * n_exact, true)?;
        let raw = field_reduce::from_planes(exec, planes.view())?;
        let n_coded = n - n_exact;
        let n_ids = field::ids_len(mode, ny, nx, n_coded);
        let ids = self.decode_section(p, stream::SEC_IDS, coder, n_ids, false)?;
        let codes = self.decode_section(p, stream::SEC_CODES, coder, 2 * n_coded, false)?;
        let parts = DevParts {
            mask,
            n_exact,
            raw,
            ids,
            codes,
        };
        match mode {
            Mode::Blockwise => CodecKernels { exec }.decode_device(&parts, ny, nx, xi, *u, *v),
            Mode::Speculative => ModeSKernels { exec }.decode_device(&parts, ny, nx, xi, *u, *v),
        }
    }

    fn put(&self, hu: &[f32], hv: &[f32], [u, v]: &mut Self::Out<'_>) -> Result<()> {
        u.write(self.exec, 0, hu)?;
        v.write(self.exec, 0, hv)
    }
}

/// The shared device ([`exec::shared`]) launching on `stream`, when `ctx` is
/// its context (the kernels are loaded into one context: device 0's primary
/// context, which the CUDA runtime uses too).
pub fn on_stream(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Result<Cuda> {
    let d = exec::shared()?;
    if d.stream.context().cu_ctx() != ctx.cu_ctx() {
        return Err(Error::unsupported(
            "gpu::field runs on device 0's primary context only",
        ));
    }
    Ok(d.on(stream.clone()))
}

/// A cudarc slice as a [`View`].
///
/// # Safety
/// The view must not outlive `a`, nor be used on another context.
pub unsafe fn view(a: &CudaSlice<f32>, stream: &CudaStream) -> View<f32> {
    let (ptr, _sync) = a.device_ptr(stream);
    // SAFETY: a holds a.len() floats; the caller keeps it alive.
    unsafe { View::from_raw(ptr, a.len()) }
}

/// [`view`] of an array the kernels write.
///
/// # Safety
/// As [`view`].
pub unsafe fn view_mut(a: &mut CudaSlice<f32>, stream: &CudaStream) -> View<f32> {
    let len = a.len();
    let (ptr, _sync) = a.device_ptr_mut(stream);
    // SAFETY: as in view.
    unsafe { View::from_raw(ptr, len) }
}

/// `field::compress` of a field resident on the device (`u_dev`, `v_dev`: ny *
/// nx values each), with the kernels launched on `stream`. Returns when the
/// stream is on the host.
pub fn compress(
    ctx: &Arc<CudaContext>,
    u_dev: &CudaSlice<f32>,
    v_dev: &CudaSlice<f32>,
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
    stream: &Arc<CudaStream>,
) -> Result<Compressed> {
    let exec = &on_stream(ctx, stream)?;
    // SAFETY: the slices outlive the call, on ctx.
    let f = unsafe { [view(u_dev, stream), view(v_dev, stream)] };
    compress_on(&OnExec { exec }, f, ny, nx, cfg)
}

/// `field::decompress_into` into device memory (`u_dev`, `v_dev`: the stream's
/// ny * nx values each), on `stream`; returns once the field is written.
pub fn decompress(
    ctx: &Arc<CudaContext>,
    bytes: &[u8],
    u_dev: &mut CudaSlice<f32>,
    v_dev: &mut CudaSlice<f32>,
    stream: &Arc<CudaStream>,
) -> Result<FieldInfo> {
    let exec = &on_stream(ctx, stream)?;
    // SAFETY: as in compress.
    let mut out = unsafe { [view_mut(u_dev, stream), view_mut(v_dev, stream)] };
    let info = decompress_on(&OnExec { exec }, bytes, &mut out)?;
    stream.synchronize().map_err(super::driver)?;
    Ok(info)
}

pub use crate::backend::{Backend, BackendUsed};

/// `field::compress` of host data on the chosen backend. `Cuda` fails
/// (Unsupported, with the reason) without a usable device; `Auto` then runs
/// the CPU and says why. Both give the same bytes.
pub fn compress_host(
    backend: Backend,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<(Compressed, BackendUsed)> {
    let cpu = |reason: Option<String>| {
        field::compress(u, v, ny, nx, cfg).map(|c| {
            (
                c,
                BackendUsed {
                    backend: Backend::Cpu,
                    fallback_reason: reason,
                },
            )
        })
    };
    let exec = match crate::backend::resolve(backend, exec::shared)? {
        Resolved::Cpu(reason) => return cpu(reason),
        Resolved::Gpu(d) => d,
    };
    let (du, dv) = super::upload_field(exec, u, v, ny, nx)?;
    let c = compress_on(&OnExec { exec }, [du.view(), dv.view()], ny, nx, cfg)?;
    Ok((
        c,
        BackendUsed {
            backend: Backend::Cuda,
            fallback_reason: None,
        },
    ))
}
