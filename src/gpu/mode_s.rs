//! Mode S (speculative) on an [`Exec`] (a device, or the host build of the
//! kernels in tests): `kernels/mode_s.cu` decides every vertex as
//! `speculative::encode` does (plain path, no bound caps) and replays
//! `speculative::decode`, bit for bit. The host drives the schedule: one
//! launch per kernel and per (step, phase); `field::gpu_ref_s` writes the
//! per-vertex decisions into Parts in the CPU's order.

use super::exec::{Arg, Buf, Exec, View};
use crate::error::Result;
use crate::field::gpu_ref_s::{self, PHASES};
use crate::field::parts::Parts;

pub const SOURCE: &str = include_str!("../../kernels/mode_s.cu");
const BLOCK: u32 = 128;
/// Grid cap: the kernels loop over their items with a grid stride.
const MAX_BLOCKS: usize = 1 << 20;

/// Targets of (step, phase) in an ny x nx field.
fn targets(ny: usize, nx: usize, s: usize, phase: u32) -> usize {
    let (r0, rs, c0, cs) = gpu_ref_s::axes(s, phase);
    (r0..ny).step_by(rs).len() * (c0..nx).step_by(cs).len()
}

/// What the encoder leaves: the stream parts, every triangle's signature byte
/// (`topology::Sig`), and the reconstructed field (what the decoder returns).
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub parts: Parts,
    pub sigs: Vec<u8>,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
}

/// The per-vertex decisions of the encode kernels, on the host: `exact` (0/1),
/// bound `ids` and `codes` (2 per vertex) as `gpu_ref_s::assemble` takes them,
/// the triangle signatures and the reconstructed field.
#[derive(Debug, Clone, PartialEq)]
pub struct Decisions {
    pub exact: Vec<u8>,
    pub ids: Vec<u8>,
    pub codes: Vec<i32>,
    pub sigs: Vec<u8>,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
}

/// The mode S kernels on one executor.
pub struct ModeSKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<'e, E: Exec> ModeSKernels<'e, E> {
    /// Launch `kernel` over `items` in blocks of BLOCK (none for no items,
    /// grid-stride beyond MAX_BLOCKS).
    ///
    /// # Safety
    /// As [`Exec::launch`].
    unsafe fn grid(&self, kernel: &str, items: usize, args: &[Arg]) -> Result<()> {
        if items == 0 {
            return Ok(());
        }
        let blocks = items.div_ceil(BLOCK as usize).min(MAX_BLOCKS) as u32;
        // SAFETY: the caller's.
        unsafe { self.exec.launch(kernel, blocks, BLOCK, args) }
    }

    /// One warp whose first thread does the work (the anchor passes are sequential).
    ///
    /// # Safety
    /// As [`Exec::launch`].
    unsafe fn one(&self, kernel: &str, args: &[Arg]) -> Result<()> {
        // SAFETY: the caller's.
        unsafe { self.exec.launch(kernel, 1, 32, args) }
    }

    /// `speculative::encode(u, v, ny, nx, xi, chunk_of_larger)` from host memory.
    pub fn encode(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Encoded> {
        let e = self.exec;
        let (du, dv) = super::upload_field(e, u, v, ny, nx)?;
        let d = self.encode_device(du.view(), dv.view(), ny, nx, xi, chunk_of_larger)?;
        Ok(Encoded {
            parts: gpu_ref_s::assemble(u, v, ny, nx, &d.exact, &d.ids, &d.codes),
            sigs: d.sigs,
            u: d.u,
            v: d.v,
        })
    }

    /// The kernels of [`Self::encode`] on a field already on the executor
    /// (`u`, `v` of at least ny * nx values): the per-vertex decisions come
    /// back (`gpu_ref_s::assemble` turns them into Parts).
    pub fn encode_device(
        &self,
        u: View<f32>,
        v: View<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Decisions> {
        let e = self.exec;
        let n = super::field_views(u, v, ny, nx)?;
        let ntri = 2 * ny.saturating_sub(1) * nx.saturating_sub(1);
        // The reconstructed state starts as the field: a target's topology
        // check reads its neighbours not yet decided.
        let ru = Buf::<E, f32>::zeros(e, n)?;
        let rv = Buf::<E, f32>::zeros(e, n)?;
        ru.view().copy_from(e, u, n)?;
        rv.view().copy_from(e, v, n)?;
        // A phase's staging: read only at its targets, which it writes first.
        let nu = Buf::<E, f32>::zeros(e, n)?;
        let nv = Buf::<E, f32>::zeros(e, n)?;
        let sigs = Buf::<E, u8>::zeros(e, ntri)?;
        let degenerate = Buf::<E, u8>::zeros(e, ntri)?;
        let exact = Buf::<E, u8>::zeros(e, n)?;
        let ids = Buf::<E, u8>::zeros(e, n)?;
        let codes = Buf::<E, i32>::zeros(e, 2 * n)?;
        let (ny_a, nx_a) = (Arg::U64(ny as u64), Arg::U64(nx as u64));
        // SAFETY: (u, v, ny, nx, sigs, degenerate): fields of n, outputs of ntri.
        unsafe {
            self.grid(
                "factz_s_classify",
                ntri,
                &[u.arg(), v.arg(), ny_a, nx_a, sigs.arg(), degenerate.arg()],
            )?
        };
        // SAFETY: (u, v, ny, nx, chunk, degenerate, exact): ntri flags, n outputs.
        unsafe {
            self.grid(
                "factz_s_forced",
                n,
                &[
                    u.arg(),
                    v.arg(),
                    ny_a,
                    nx_a,
                    Arg::I32(chunk_of_larger as i32),
                    degenerate.arg(),
                    exact.arg(),
                ],
            )?
        };
        // SAFETY: the kernel's signature in order; per-vertex buffers of n (codes 2n).
        unsafe {
            self.one(
                "factz_s_anchors",
                &[
                    u.arg(),
                    v.arg(),
                    ru.arg(),
                    rv.arg(),
                    sigs.arg(),
                    exact.arg(),
                    ids.arg(),
                    codes.arg(),
                    ny_a,
                    nx_a,
                    Arg::F64(xi),
                ],
            )?
        };
        for s in gpu_ref_s::steps() {
            for phase in PHASES {
                let t = targets(ny, nx, s, phase);
                let (s_a, ph_a) = (Arg::U64(s as u64), Arg::I32(phase as i32));
                // SAFETY: as the anchors, plus the staging buffers nu, nv of n.
                unsafe {
                    self.grid(
                        "factz_s_phase",
                        t,
                        &[
                            u.arg(),
                            v.arg(),
                            ru.arg(),
                            rv.arg(),
                            sigs.arg(),
                            exact.arg(),
                            ids.arg(),
                            codes.arg(),
                            nu.arg(),
                            nv.arg(),
                            ny_a,
                            nx_a,
                            Arg::F64(xi),
                            s_a,
                            ph_a,
                        ],
                    )?
                };
                // SAFETY: (ru, rv, nu, nv, ny, nx, s, phase), buffers of n.
                unsafe {
                    self.grid(
                        "factz_s_apply",
                        t,
                        &[
                            ru.arg(),
                            rv.arg(),
                            nu.arg(),
                            nv.arg(),
                            ny_a,
                            nx_a,
                            s_a,
                            ph_a,
                        ],
                    )?
                };
            }
        }
        Ok(Decisions {
            exact: exact.read(e, 0..n)?,
            ids: ids.read(e, 0..n)?,
            codes: codes.read(e, 0..2 * n)?,
            sigs: sigs.read(e, 0..ntri)?,
            u: ru.read(e, 0..n)?,
            v: rv.read(e, 0..n)?,
        })
    }

    /// `speculative::decode(parts, ny, nx, xi, ..)` into host memory: (u, v).
    pub fn decode(
        &self,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let e = self.exec;
        let n = crate::field::vertex_count(ny, nx)?;
        let du = Buf::<E, f32>::zeros(e, n)?;
        let dv = Buf::<E, f32>::zeros(e, n)?;
        self.decode_device(parts, ny, nx, xi, du.view(), dv.view())?;
        Ok((du.read(e, 0..n)?, dv.read(e, 0..n)?))
    }

    /// [`Self::decode`] into arrays on the executor (`u`, `v` of at least
    /// ny * nx values): the parts go up, the field stays there.
    pub fn decode_device(
        &self,
        parts: &Parts,
        ny: usize,
        nx: usize,
        xi: f64,
        u: View<f32>,
        v: View<f32>,
    ) -> Result<()> {
        let e = self.exec;
        let n = super::field_views(u, v, ny, nx)?;
        let slot = gpu_ref_s::decode_slots(parts, ny, nx)?;
        let nu = Buf::<E, f32>::zeros(e, n)?;
        let nv = Buf::<E, f32>::zeros(e, n)?;
        // The kernels write every vertex; zeroing first (from the fresh
        // staging buffers) keeps the output defined even if one were skipped.
        u.copy_from(e, nu.view(), n)?;
        v.copy_from(e, nv.view(), n)?;
        let exact: Vec<u8> = parts.exact.iter().map(|&x| x as u8).collect();
        let dexact = Buf::from(e, &exact)?;
        // Raw words go up as u32; the kernel reads them as floats (a bit copy).
        let draw = Buf::from(e, &parts.raw)?;
        let dids = Buf::from(e, &parts.ids)?;
        let dcodes = Buf::from(e, &parts.codes)?;
        let dslot = Buf::from(e, &slot)?;
        let (ny_a, nx_a) = (Arg::U64(ny as u64), Arg::U64(nx as u64));
        let stream = [
            dexact.arg(),
            draw.arg(),
            dids.arg(),
            dcodes.arg(),
            dslot.arg(),
        ];
        let mut args = stream.to_vec();
        args.extend([u.arg(), v.arg(), ny_a, nx_a, Arg::F64(xi)]);
        // SAFETY: the kernel's signature in order (raw: 32-bit words read as
        // float); slot indexes raw pairs and coded entries in range (checked).
        unsafe { self.one("factz_s_decode_anchors", &args)? };
        for s in gpu_ref_s::steps() {
            for phase in PHASES {
                let t = targets(ny, nx, s, phase);
                let (s_a, ph_a) = (Arg::U64(s as u64), Arg::I32(phase as i32));
                let mut args = stream.to_vec();
                args.extend([
                    u.arg(),
                    v.arg(),
                    nu.arg(),
                    nv.arg(),
                    ny_a,
                    nx_a,
                    Arg::F64(xi),
                    s_a,
                    ph_a,
                ]);
                // SAFETY: as the anchors, plus the staging buffers nu, nv of n.
                unsafe { self.grid("factz_s_decode_phase", t, &args)? };
                // SAFETY: (u, v, nu, nv, ny, nx, s, phase), arrays of n.
                unsafe {
                    self.grid(
                        "factz_s_apply",
                        t,
                        &[u.arg(), v.arg(), nu.arg(), nv.arg(), ny_a, nx_a, s_a, ph_a],
                    )?
                };
            }
        }
        Ok(())
    }
}
