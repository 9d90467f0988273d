//! The field pipeline's stages on the GPU (issue 6): [`OnExec`] gives
//! `field::pipeline` the kernels on any executor (`gpu::exec`): a device
//! through cudarc, or in tests the host build of the same `.cu` files, so CI
//! runs this whole file's logic. The pipeline around them (checks, bound,
//! header, fallback, verify) is the CPU's own, so the stream is
//! `field::compress`'s byte for byte.
//!
//! The kernels leave [`DevParts`] on the device. The four sections are coded
//! and decoded there with either coder (`gpu::huffman`, `gpu::rans`; bytes
//! as u32 symbols; mode S's segments in their form, `gpu::zero_runs`): only the coded bytes, code tables, histograms and a few
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
use super::zero_runs::ZeroRunKernels;
use crate::codec::{zero_runs, Coder};
use crate::error::{Error, Result};
use crate::field::pipeline::{compress_on, decompress_on, Stages};
use crate::field::stream::{self, Coded};
use crate::field::{self, Compressed, FieldConfig, FieldInfo, Mode};
use crate::format::Parsed;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::borrow::Cow;
use std::sync::Arc;

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

    /// The CODES section as `stream::code` writes it: segmented where the
    /// mode is (each segment coded from its part of the device array).
    fn code_codes(
        &self,
        codes: View<u32>,
        coder: Coder,
        mode: Mode,
        ny: usize,
        nx: usize,
    ) -> Result<Vec<u8>> {
        let Some(starts) = stream::segments_for(mode, ny, nx, codes.len()) else {
            return self.code(codes, coder);
        };
        let runs = stream::runs(&starts, codes.len())
            .into_iter()
            .map(|r| Ok((r.len(), self.code_segment(codes.range(r), coder)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(stream::join_segments(&runs))
    }

    /// The CODES section's `count` symbols decoded into a new executor
    /// array, segmented or not as the stream says.
    fn decode_codes(&self, p: &Parsed, coder: Coder, count: usize) -> Result<Buf<E, u32>> {
        if !stream::segmented(&p.header) {
            return self.decode_section(p, stream::SEC_CODES, coder, count, false);
        }
        let coded = stream::section(p, stream::SEC_CODES, count)?;
        let out = Buf::<E, u32>::zeros(self.exec, count)?;
        let mut at = 0;
        let forms = stream::has_forms(&p.header);
        for (symbols, payload) in stream::split_segments(&coded, count)? {
            let part = out.view().range(at..at + symbols);
            if forms {
                self.decode_segment(payload, coder, part)?;
            } else {
                self.decode_into(payload, coder, part, false)?;
            }
            at += symbols;
        }
        Ok(out)
    }

    /// `codec::zero_runs::encode_segment` of a segment on the executor.
    fn code_segment(&self, symbols: View<u32>, coder: Coder) -> Result<Vec<u8>> {
        let plain = zero_runs::plain(&self.code(symbols, coder)?);
        let Some(split) = (ZeroRunKernels { exec: self.exec }).split(symbols)? else {
            return Ok(plain);
        };
        let body = zero_runs::body(&zero_runs::Body {
            m: split.values.len(),
            tokens: &self.code(split.tokens.view(), coder)?,
            raw: &split.raw,
            values: &self.code(split.values.view(), coder)?,
        });
        Ok(zero_runs::smaller(plain, body))
    }

    /// `codec::zero_runs::decode_segment_into` on the executor.
    fn decode_segment(&self, data: &[u8], coder: Coder, out: View<u32>) -> Result<()> {
        let Some((&form, rest)) = data.split_first() else {
            return Err(zero_runs::no_form());
        };
        match form {
            zero_runs::PLAIN => self.decode_into(rest, coder, out, false),
            zero_runs::ZERO_RUNS => {
                let b = zero_runs::parse(rest, out.len())?;
                let t = Buf::<E, u32>::zeros(self.exec, b.m + 1)?;
                let v = Buf::<E, u32>::zeros(self.exec, b.m)?;
                self.decode_into(b.tokens, coder, t.view(), false)?;
                self.decode_into(b.values, coder, v.view(), false)?;
                let k = ZeroRunKernels { exec: self.exec };
                k.place(k.runs(t.view(), b.raw)?.view(), v.view(), out)
            }
            _ => Err(zero_runs::unknown_form(form)),
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
        self.decode_into(&coded, coder, out.view(), bytes)?;
        Ok(out)
    }

    /// `coded` (of `out.len()` symbols) decoded into `out`; `bytes` as for
    /// [`Self::decode_section`].
    fn decode_into(&self, coded: &[u8], coder: Coder, out: View<u32>, bytes: bool) -> Result<()> {
        let rans = self.rans();
        match (coder, bytes) {
            (Coder::Huffman, false) => self.huffman().decode_into(coded, out),
            (Coder::Huffman, true) => self.huffman().decode_bytes_into(coded, out),
            (Coder::Rans, false) => rans.decode_into(coded, out),
            (Coder::Rans, true) => rans.decode_bytes_into(coded, out),
        }
    }
}

impl<E: Exec> Stages for OnExec<'_, E> {
    type Field<'a> = [View<f32>; 2];
    type Out<'a> = [View<f32>; 2];

    fn field_len(&self, [u, v]: Self::Field<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn out_len(&self, [u, v]: &Self::Out<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn to_host<'a>(&self, [u, v]: Self::Field<'a>, n: usize) -> Result<[Cow<'a, [f32]>; 2]> {
        let host = |f: View<f32>| f.read(self.exec, 0..n).map(Cow::Owned);
        Ok([host(u)?, host(v)?])
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
            ids: match mode {
                Mode::Speculative => self.code_segment(parts.ids.view(), coder)?,
                Mode::Blockwise => self.code(parts.ids.view(), coder)?,
            },
            codes: self.code_codes(parts.codes.view(), coder, mode, ny, nx)?,
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
        let ids = if stream::ids_in_form(&p.header) {
            let coded = stream::section(p, stream::SEC_IDS, n_ids)?;
            let ids = Buf::<E, u32>::zeros(exec, n_ids)?;
            self.decode_segment(&coded, coder, ids.view())?;
            ids
        } else {
            self.decode_section(p, stream::SEC_IDS, coder, n_ids, false)?
        };
        let codes = self.decode_codes(p, coder, 2 * n_coded)?;
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

/// `field::compress` of host data with the kernels on `exec` (the field is
/// uploaded first): what `backend::compress_field` runs for CUDA.
pub fn compress_host(
    exec: &Cuda,
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    cfg: &FieldConfig,
) -> Result<Compressed> {
    let (du, dv) = super::upload_field(exec, u, v, ny, nx)?;
    compress_on(&OnExec { exec }, [du.view(), dv.view()], ny, nx, cfg)
}
