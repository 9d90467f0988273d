//! Mode S (speculative) on an [`Exec`] (a device, or the host build of the
//! kernels in tests): `kernels/mode_s.cu` decides every vertex as
//! `speculative::encode` does (plain path, no bound caps) and replays
//! `speculative::decode`, bit for bit. The host drives the schedule: one
//! launch per kernel and per (step, phase); then the per-vertex decisions go
//! into Parts in the CPU's order on the executor too (`factz_s_order_exact`,
//! the grid scan, `factz_s_assemble`), and the decoder finds each vertex's
//! stream entries the same way (`factz_s_slots`).

use super::exec::{Arg, Buf, Exec, View};
use super::field_reduce::{pack_flags, unpack_flags};
use super::parts::DevParts;
use super::scan;
use crate::error::{Error, Result};
use crate::field::gpu_ref_s::{self, PHASES};
use crate::field::parts::Parts;
use crate::field::quantize::NUM_IDS;

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

/// The per-vertex decisions of the encode kernels, on the executor: `exact`
/// (0/1), bound `ids` and `codes` (2 per vertex) as `gpu_ref_s::assemble`
/// takes them, the triangle signatures and the reconstructed field.
pub struct Decisions<E: Exec> {
    pub exact: Buf<E, u8>,
    pub ids: Buf<E, u8>,
    pub codes: Buf<E, i32>,
    pub sigs: Buf<E, u8>,
    pub u: Buf<E, f32>,
    pub v: Buf<E, f32>,
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
        let d = self.decide(du.view(), dv.view(), ny, nx, xi, chunk_of_larger)?;
        let n = ny * nx;
        let parts = self.assemble(du.view(), dv.view(), &d, ny, nx)?;
        Ok(Encoded {
            parts: parts.read(e, n)?,
            sigs: d.sigs.read(e, 0..d.sigs.len())?,
            u: d.u.read(e, 0..n)?,
            v: d.v.read(e, 0..n)?,
        })
    }

    /// [`Self::encode`]'s Parts from a field already on the executor (`u`,
    /// `v` of at least ny * nx values), left there.
    pub fn encode_device(
        &self,
        u: View<f32>,
        v: View<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<DevParts<E>> {
        let d = self.decide(u, v, ny, nx, xi, chunk_of_larger)?;
        self.assemble(u, v, &d, ny, nx)
    }

    /// Each position's exact vertices ahead of it in the stream order, n + 1
    /// entries (the last: how many are exact), from the per-vertex flags.
    fn before(&self, exact: &Buf<E, u8>, ny: usize, nx: usize) -> Result<(Buf<E, u64>, usize)> {
        let e = self.exec;
        let n = ny * nx;
        let flags = Buf::<E, u32>::zeros(e, n)?;
        // SAFETY: (const u8* exact, ny, nx, u32* flags): n each.
        unsafe {
            self.grid(
                "factz_s_order_exact",
                n,
                &[
                    exact.arg(),
                    Arg::U64(ny as u64),
                    Arg::U64(nx as u64),
                    flags.arg(),
                ],
            )?
        };
        let (before, n_exact) = scan::exclusive(e, flags.view(), n)?;
        Ok((before, n_exact as usize))
    }

    /// The decisions as Parts in the CPU's order, on the executor (`u`, `v`:
    /// the original field, whose bits the exact vertices store).
    pub fn assemble(
        &self,
        u: View<f32>,
        v: View<f32>,
        d: &Decisions<E>,
        ny: usize,
        nx: usize,
    ) -> Result<DevParts<E>> {
        let e = self.exec;
        let n = super::field_views(u, v, ny, nx)?;
        let (before, n_exact) = self.before(&d.exact, ny, nx)?;
        let raw = Buf::<E, u32>::zeros(e, 2 * n_exact)?;
        let ids = Buf::<E, u32>::zeros(e, n - n_exact)?;
        let codes = Buf::<E, u32>::zeros(e, 2 * (n - n_exact))?;
        // SAFETY: the kernel's parameters in order (u, v read as 32-bit
        // words); before holds n + 1, raw two words per exact vertex, ids and
        // codes one and two per coded vertex, as the scan counted.
        unsafe {
            self.grid(
                "factz_s_assemble",
                n,
                &[
                    u.arg(),
                    v.arg(),
                    d.exact.arg(),
                    d.ids.arg(),
                    d.codes.arg(),
                    before.arg(),
                    Arg::U64(ny as u64),
                    Arg::U64(nx as u64),
                    raw.arg(),
                    ids.arg(),
                    codes.arg(),
                ],
            )?
        };
        Ok(DevParts {
            mask: pack_flags(e, d.exact.view(), n)?,
            n_exact,
            raw,
            ids,
            codes,
        })
    }

    /// The kernels of [`Self::encode`] on a field already on the executor
    /// (`u`, `v` of at least ny * nx values): the per-vertex decisions, left
    /// there.
    pub fn decide(
        &self,
        u: View<f32>,
        v: View<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
    ) -> Result<Decisions<E>> {
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
            exact,
            ids,
            codes,
            sigs,
            u: ru,
            v: rv,
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
        self.decode_device(
            &DevParts::upload(e, parts)?,
            ny,
            nx,
            xi,
            du.view(),
            dv.view(),
        )?;
        Ok((du.read(e, 0..n)?, dv.read(e, 0..n)?))
    }

    /// [`Self::decode`] of Parts on the executor into arrays there (`u`, `v`
    /// of at least ny * nx values), with `speculative::decode`'s checks.
    pub fn decode_device(
        &self,
        parts: &DevParts<E>,
        ny: usize,
        nx: usize,
        xi: f64,
        u: View<f32>,
        v: View<f32>,
    ) -> Result<()> {
        let e = self.exec;
        let n = super::field_views(u, v, ny, nx)?;
        if parts.mask.len() != n.div_ceil(8) {
            return Err(Error::internal(
                "mode S: the exact-vertex bitmap has the wrong size",
            ));
        }
        let dexact = unpack_flags(e, parts.mask.view(), n)?;
        // The slots index raw and the coded entries: the counts the scan
        // finds must match their lengths (speculative::decode's check).
        let (before, n_exact) = self.before(&dexact, ny, nx)?;
        let n_coded = n - n_exact;
        if parts.n_exact != n_exact
            || parts.raw.len() != 2 * n_exact
            || parts.codes.len() != 2 * n_coded
            || parts.ids.len() != n_coded
        {
            return Err(Error::corrupt(
                "mode S stream: value counts do not match the exact-vertex mask",
            ));
        }
        if parts.max_id(e)? >= NUM_IDS {
            return Err(Error::corrupt("mode S stream has an out-of-range bound id"));
        }
        let dslot = Buf::<E, i64>::zeros(e, n)?;
        // SAFETY: (const u8* exact, const u64* before, ny, nx, i64* slot): n
        // each (before n + 1).
        unsafe {
            self.grid(
                "factz_s_slots",
                n,
                &[
                    dexact.arg(),
                    before.arg(),
                    Arg::U64(ny as u64),
                    Arg::U64(nx as u64),
                    dslot.arg(),
                ],
            )?
        };
        let nu = Buf::<E, f32>::zeros(e, n)?;
        let nv = Buf::<E, f32>::zeros(e, n)?;
        // The kernels write every vertex; zeroing first (from the fresh
        // staging buffers) keeps the output defined even if one were skipped.
        u.copy_from(e, nu.view(), n)?;
        v.copy_from(e, nv.view(), n)?;
        let (ny_a, nx_a) = (Arg::U64(ny as u64), Arg::U64(nx as u64));
        // Raw words are u32; the kernel reads them as floats (a bit copy).
        let stream = [
            dexact.arg(),
            parts.raw.arg(),
            parts.ids.arg(),
            parts.codes.arg(),
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
