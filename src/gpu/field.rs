//! The whole field compressor with the kernels on a GPU (issue 6): the input
//! stays on the device, the kernels produce `Parts`, and the CPU's own stream
//! writer codes them, so the stream is `field::compress`'s byte for byte.
//!
//! The pipeline around the kernels ([`compress_on`], [`decompress_on`]) is
//! generic over [`Kernels`]: the CUDA implementation here ([`Device`]) and the
//! host shim of tests/gpu_field.rs (the same `.cu` files as host C++) run the
//! same Rust code from "the kernels produced Parts" to the stream and back.
//!
//! What is still on the host (said where it happens):
//! - a relative bound's finite min/max is taken from a host copy of the field
//!   (no reduction kernel yet);
//! - entropy coding (`field::stream::write`) and decoding (`stream::read`);
//! - mode S's Parts are assembled from per-vertex decisions copied back, with
//!   the exact vertices' values read from a host copy of the field
//!   (`gpu_ref_s::assemble`; mode B compacts its raw words on the device);
//! - the verify pass and the lossless fallback read a host copy (only when
//!   they run); a lossless stream decodes on the host and is copied up.

use super::driver;
use super::exec::{Cuda, View};
use super::mode_b_codec::CodecKernels;
use super::mode_s::ModeSKernels;
use crate::error::{Error, ErrorKind, Result};
use crate::field::parts::Parts;
use crate::field::{
    self, blockwise, stream, Bound, Compressed, FieldConfig, FieldInfo, FieldReport, Mode,
};
use crate::format;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::sync::{Arc, OnceLock};

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
    /// `blockwise::encode` / `speculative::encode`'s Parts (no caps).
    #[allow(clippy::too_many_arguments)]
    fn encode(
        &self,
        mode: Mode,
        f: Self::Field<'_>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Parts>;
    /// `blockwise::decode` / `speculative::decode` into `out`, with their checks.
    fn decode(
        &self,
        mode: Mode,
        parts: &Parts,
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
    // One host copy at most, taken when something needs it.
    let mut host: Option<(Vec<f32>, Vec<f32>)> = None;
    let xi = match cfg.bound {
        Bound::Abs(x) => x,
        // The finite min/max from a host copy (no reduction kernel yet); the
        // formula is field::bound_for_range, as on the CPU.
        Bound::Rel(_) => {
            let (u, v) = host.insert(k.to_host(f, n)?);
            let (lo, hi) = field::finite_range(u.iter().chain(v.iter()));
            field::bound_for_range(cfg.bound, lo, hi)
        }
    };
    let parts = k.encode(cfg.mode, f, ny, nx, xi, cfg.chunk_of_larger)?;
    finish(&parts, ny, nx, xi, cfg, || match host.take() {
        Some(h) => Ok(h),
        None => k.to_host(f, n),
    })
}

/// From Parts to the stream: `field::compress_with`'s tail (header, stream
/// writer, the lossless fallback when coding does not pay, the verify pass),
/// with the field fetched from `host` only when the fallback or verify needs it.
pub fn finish(
    parts: &Parts,
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
        exact_vertices: parts.exact.iter().filter(|&&e| e).count(),
        lossless_fallback: false,
        verified: false,
        fallback_reason: None,
    };
    let mut bytes = stream::write(
        &field::header(ny, nx, xi, cfg.mode as u8, cfg, flags | verify_flag),
        parts,
        cfg.coder,
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
        Some(Mode::Blockwise) => {
            let tiles = ny.div_ceil(blockwise::TILE) * nx.div_ceil(blockwise::TILE);
            let parts = stream::read(&p, n, info.coder, |_| 2 * tiles)?;
            k.decode(Mode::Blockwise, &parts, ny, nx, xi, out)?;
        }
        Some(Mode::Speculative) => {
            let parts = stream::read(&p, n, info.coder, |coded| coded)?;
            k.decode(Mode::Speculative, &parts, ny, nx, xi, out)?;
        }
    }
    Ok(info)
}

/// Both modes' kernels on one device, launched on one stream.
pub struct Device {
    pub stream: Arc<CudaStream>,
    /// Every kernel of `kernels/*.cu`, loaded once; [`Cuda::on`] a stream runs them there.
    cuda: Cuda,
}

impl Device {
    /// Compiles the kernels (NVRTC) for `ctx`; work goes on `stream`, or on
    /// the context's default stream.
    pub fn new(ctx: Arc<CudaContext>, stream: Option<Arc<CudaStream>>) -> Result<Device> {
        Ok(Device {
            stream: stream.unwrap_or_else(|| ctx.default_stream()),
            cuda: Cuda::all(&ctx)?,
        })
    }

    /// The same kernels launched on another stream of the same context.
    pub fn on(&self, stream: Arc<CudaStream>) -> DeviceOn {
        DeviceOn {
            cuda: self.cuda.on(stream.clone()),
            stream,
        }
    }
}

/// A [`Device`] launching on a given stream (a caller's, through the C ABI).
pub struct DeviceOn {
    /// The kernels launching on `stream`.
    cuda: Cuda,
    stream: Arc<CudaStream>,
}

impl DeviceOn {
    /// A CudaSlice as a [`View`] for host code over [`Cuda`].
    ///
    /// # Safety
    /// The view must not outlive `s`.
    unsafe fn view(&self, s: &CudaSlice<f32>) -> View<f32> {
        let (ptr, _sync) = s.device_ptr(&self.stream);
        // SAFETY: s holds s.len() floats; the caller keeps it alive.
        unsafe { View::from_raw(ptr, s.len()) }
    }

    /// [`Self::view`] of an array the kernels write.
    ///
    /// # Safety
    /// As [`Self::view`].
    unsafe fn view_mut(&self, s: &mut CudaSlice<f32>) -> View<f32> {
        let len = s.len();
        let (ptr, _sync) = s.device_ptr_mut(&self.stream);
        // SAFETY: as in view.
        unsafe { View::from_raw(ptr, len) }
    }
}

impl Kernels for DeviceOn {
    type Field<'a> = [&'a CudaSlice<f32>; 2];
    type Out<'a> = [&'a mut CudaSlice<f32>; 2];

    fn field_len(&self, [u, v]: Self::Field<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn out_len(&self, [u, v]: &Self::Out<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn to_host(&self, [u, v]: Self::Field<'_>, n: usize) -> Result<(Vec<f32>, Vec<f32>)> {
        let mut hu = self.stream.clone_dtoh(&u.slice(..n)).map_err(driver)?;
        let mut hv = self.stream.clone_dtoh(&v.slice(..n)).map_err(driver)?;
        hu.truncate(n);
        hv.truncate(n);
        Ok((hu, hv))
    }

    fn encode(
        &self,
        mode: Mode,
        [u, v]: Self::Field<'_>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk: bool,
    ) -> Result<Parts> {
        match mode {
            Mode::Blockwise => {
                // SAFETY: the caller's device arrays, borrowed for the call.
                let (du, dv) = unsafe { (self.view(u), self.view(v)) };
                CodecKernels { exec: &self.cuda }.encode_device(du, dv, ny, nx, xi, chunk)
            }
            Mode::Speculative => {
                // SAFETY: as above.
                let (du, dv) = unsafe { (self.view(u), self.view(v)) };
                let d =
                    ModeSKernels { exec: &self.cuda }.encode_device(du, dv, ny, nx, xi, chunk)?;
                // The exact vertices' values come from a host copy (see the
                // module comment).
                let (hu, hv) = self.to_host([u, v], ny * nx)?;
                Ok(crate::field::gpu_ref_s::assemble(
                    &hu, &hv, ny, nx, &d.exact, &d.ids, &d.codes,
                ))
            }
        }
    }

    fn decode(
        &self,
        mode: Mode,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
        [u, v]: &mut Self::Out<'_>,
    ) -> Result<()> {
        match mode {
            Mode::Blockwise => {
                // SAFETY: the caller's device arrays, borrowed for the call.
                let (du, dv) = unsafe { (self.view_mut(u), self.view_mut(v)) };
                CodecKernels { exec: &self.cuda }.decode_device(parts, ny, nx, xi, du, dv)
            }
            Mode::Speculative => {
                // SAFETY: as above.
                let (du, dv) = unsafe { (self.view_mut(u), self.view_mut(v)) };
                ModeSKernels { exec: &self.cuda }.decode_device(parts, ny, nx, xi, du, dv)
            }
        }
    }

    fn put(&self, hu: &[f32], hv: &[f32], [u, v]: &mut Self::Out<'_>) -> Result<()> {
        let n = hu.len();
        self.stream
            .memcpy_htod(hu, &mut u.slice_mut(..n))
            .map_err(driver)?;
        self.stream
            .memcpy_htod(hv, &mut v.slice_mut(..n))
            .map_err(driver)?;
        Ok(())
    }
}

/// The process's device and its compiled kernels, set up once (NVRTC takes
/// seconds), or why there is none.
pub fn shared() -> std::result::Result<&'static Device, Error> {
    static DEVICE: OnceLock<std::result::Result<Device, Error>> = OnceLock::new();
    DEVICE
        .get_or_init(|| Device::new(super::device()?, None))
        .as_ref()
        .map_err(Clone::clone)
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
    let d = shared_for(ctx)?;
    compress_on(&d.on(stream.clone()), [u_dev, v_dev], ny, nx, cfg)
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
    let d = shared_for(ctx)?;
    let info = decompress_on(&d.on(stream.clone()), bytes, &mut [u_dev, v_dev])?;
    stream.synchronize().map_err(driver)?;
    Ok(info)
}

/// The shared device when `ctx` is its context (the kernels are loaded into
/// one context; device 0's primary context, which the CUDA runtime uses too).
fn shared_for(ctx: &Arc<CudaContext>) -> Result<&'static Device> {
    let d = shared()?;
    if d.stream.context().cu_ctx() != ctx.cu_ctx() {
        return Err(Error::unsupported(
            "gpu::field runs on device 0's primary context only",
        ));
    }
    Ok(d)
}

pub use crate::backend::{Backend, Ran};

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
) -> Result<(Compressed, Ran)> {
    let cpu = |reason: Option<String>| {
        field::compress(u, v, ny, nx, cfg).map(|c| {
            (
                c,
                Ran {
                    backend: Backend::Cpu,
                    fallback_reason: reason,
                },
            )
        })
    };
    let d = match (backend, shared()) {
        (Backend::Cpu, _) => return cpu(None),
        (Backend::Auto, Err(e)) if e.kind == ErrorKind::Unsupported => return cpu(Some(e.message)),
        (_, Err(e)) => return Err(e),
        (_, Ok(d)) => d,
    };
    let n = field::vertex_count(ny, nx)?;
    if u.len() != n || v.len() != n {
        return Err(Error::invalid(format!(
            "field shape {ny}x{nx} needs {n} values per component, got {} and {}",
            u.len(),
            v.len()
        )));
    }
    let du = d.stream.clone_htod(u).map_err(driver)?;
    let dv = d.stream.clone_htod(v).map_err(driver)?;
    let c = compress_on(&d.on(d.stream.clone()), [&du, &dv], ny, nx, cfg)?;
    Ok((
        c,
        Ran {
            backend: Backend::Cuda,
            fallback_reason: None,
        },
    ))
}
