//! Mode S (speculative) on an [`Exec`] (a device, or the host build of the
//! kernels in tests): `kernels/mode_s.cu` decides every vertex as
//! `speculative::encode` does (plain path, no bound caps) and replays
//! `speculative::decode`, bit for bit. The host drives the schedule: one
//! launch per kernel and per (step, phase); then the per-vertex decisions go
//! into Parts in the CPU's order on the executor too (`factz_s_order_exact`,
//! the grid scan, `factz_s_assemble`), and the decoder finds each vertex's
//! stream entries the same way (`factz_s_slots`).

use super::exec::{Buf, Exec, View};
use super::field_reduce::{pack_flags, unpack_flags};
use super::launch::{kernels, Kernel, Params};
use super::parts::DevParts;
use super::scan;
use crate::error::{Error, Result};
use crate::field::parts::Parts;
use crate::field::quantize::NUM_IDS;
use crate::field::speculative::{plan, schedule, LevelPlan, Targets, STRIDE};

pub const SOURCE: &str = include_str!("../../kernels/mode_s.cu");
const BLOCK: u32 = 128;
/// Grid cap: the kernels loop over their items with a grid stride.
const MAX_BLOCKS: usize = 1 << 20;

kernels! {
    S_CLASSIFY = factz_s_classify(
        u: View<f32>, v: View<f32>, ny: i64, nx: i64, sigs: View<u8>, degenerate: View<u8>,
    );
    S_FORCED = factz_s_forced(
        u: View<f32>, v: View<f32>, ny: i64, nx: i64, chunk_of_larger: i32,
        degenerate: View<u8>, exact: View<u8>,
    );
    S_ANCHORS = factz_s_anchors(
        u: View<f32>, v: View<f32>, ru: View<f32>, rv: View<f32>, sigs: View<u8>,
        exact: View<u8>, ids: View<u8>, codes: View<i32>, ny: i64, nx: i64, xi: f64, from: i32,
    );
    S_PHASE = factz_s_phase(
        u: View<f32>, v: View<f32>, ru: View<f32>, rv: View<f32>, sigs: View<u8>,
        exact: View<u8>, ids: View<u8>, codes: View<i32>, nu: View<f32>, nv: View<f32>,
        ny: i64, nx: i64, xi: f64, from: i32, s: i64, phase: i32,
    );
    S_APPLY = factz_s_apply(
        ru: View<f32>, rv: View<f32>, nu: View<f32>, nv: View<f32>, ny: i64, nx: i64, s: i64,
        phase: i32,
    );
    S_DECODE_ANCHORS = factz_s_decode_anchors(
        exact: View<u8>, raw: View<f32>, ids: View<u32>, codes: View<u32>, slot: View<i64>,
        u: View<f32>, v: View<f32>, ny: i64, nx: i64, xi: f64,
    );
    S_DECODE_PHASE = factz_s_decode_phase(
        exact: View<u8>, raw: View<f32>, ids: View<u32>, codes: View<u32>, slot: View<i64>,
        u: View<f32>, v: View<f32>, nu: View<f32>, nv: View<f32>, ny: i64, nx: i64, xi: f64,
        s: i64, phase: i32,
    );
    S_ORDER_EXACT = factz_s_order_exact(exact: View<u8>, ny: i64, nx: i64, flags: View<u32>);
    S_ASSEMBLE = factz_s_assemble(
        u: View<u32>, v: View<u32>, exact: View<u8>, ids: View<u8>, codes: View<i32>,
        before: View<u64>, ny: i64, nx: i64, raw: View<u32>, out_ids: View<u32>,
        out_codes: View<u32>,
    );
    S_SLOTS = factz_s_slots(exact: View<u8>, before: View<u64>, ny: i64, nx: i64, slot: View<i64>);
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
/// (0/1), bound `ids` and `codes` (2 per vertex) as `factz_s_assemble`
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
    /// As [`Kernel::launch`].
    unsafe fn grid<P: Params>(&self, kernel: Kernel<P>, items: usize, args: P) -> Result<()> {
        if items == 0 {
            return Ok(());
        }
        let blocks = items.div_ceil(BLOCK as usize).min(MAX_BLOCKS) as u32;
        // SAFETY: the caller's.
        unsafe { kernel.launch(self.exec, blocks, BLOCK, args) }
    }

    /// One warp whose first thread does the work (the anchor passes are sequential).
    ///
    /// # Safety
    /// As [`Kernel::launch`].
    unsafe fn one<P: Params>(&self, kernel: Kernel<P>, args: P) -> Result<()> {
        // SAFETY: the caller's.
        unsafe { kernel.launch(self.exec, 1, 32, args) }
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
        let plan = plan::choose(u, v, ny, nx, xi);
        self.encode_planned(u, v, ny, nx, xi, chunk_of_larger, plan)
    }

    /// `speculative::encode_planned(u, v, ny, nx, xi, chunk_of_larger, None,
    /// plan)` from host memory.
    #[allow(clippy::too_many_arguments)]
    pub fn encode_planned(
        &self,
        u: &[f32],
        v: &[f32],
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
        plan: LevelPlan,
    ) -> Result<Encoded> {
        let e = self.exec;
        let (du, dv) = super::upload_field(e, u, v, ny, nx)?;
        let d = self.decide(du.view(), dv.view(), ny, nx, xi, chunk_of_larger, plan)?;
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
        let plan = level_plan(self.exec, u, v, ny, nx, xi)?;
        let d = self.decide(u, v, ny, nx, xi, chunk_of_larger, plan)?;
        self.assemble(u, v, &d, ny, nx)
    }

    /// Each position's exact vertices ahead of it in the stream order, n + 1
    /// entries (the last: how many are exact), from the per-vertex flags.
    fn before(&self, exact: &Buf<E, u8>, ny: usize, nx: usize) -> Result<(Buf<E, u64>, usize)> {
        let e = self.exec;
        let n = ny * nx;
        let flags = Buf::<E, u32>::zeros(e, n)?;
        // SAFETY: n each.
        unsafe {
            self.grid(
                S_ORDER_EXACT,
                n,
                (exact.view(), ny as i64, nx as i64, flags.view()),
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
        // SAFETY: u, v (read as 32-bit words) hold n; before n + 1, raw two
        // words per exact vertex, ids and codes one and two per coded vertex,
        // as the scan counted.
        unsafe {
            self.grid(
                S_ASSEMBLE,
                n,
                (
                    u.cast(),
                    v.cast(),
                    d.exact.view(),
                    d.ids.view(),
                    d.codes.view(),
                    before.view(),
                    ny as i64,
                    nx as i64,
                    raw.view(),
                    ids.view(),
                    codes.view(),
                ),
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

    /// The kernels of [`Self::encode_planned`] on a field already on the
    /// executor (`u`, `v` of at least ny * nx values): the per-vertex
    /// decisions, left there.
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        &self,
        u: View<f32>,
        v: View<f32>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk_of_larger: bool,
        plan: LevelPlan,
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
        let (ny_a, nx_a) = (ny as i64, nx as i64);
        let (ru_d, rv_d, nu_d, nv_d) = (ru.view(), rv.view(), nu.view(), nv.view());
        let (sigs_d, exact_d, ids_d, codes_d) =
            (sigs.view(), exact.view(), ids.view(), codes.view());
        // SAFETY: fields of n, outputs of ntri.
        unsafe {
            self.grid(
                S_CLASSIFY,
                ntri,
                (u, v, ny_a, nx_a, sigs_d, degenerate.view()),
            )?
        };
        // SAFETY: ntri flags, n outputs.
        unsafe {
            self.grid(
                S_FORCED,
                n,
                (
                    u,
                    v,
                    ny_a,
                    nx_a,
                    chunk_of_larger as i32,
                    degenerate.view(),
                    exact_d,
                ),
            )?
        };
        // SAFETY: per-vertex buffers of n (codes 2n).
        unsafe {
            self.one(
                S_ANCHORS,
                (
                    u,
                    v,
                    ru_d,
                    rv_d,
                    sigs_d,
                    exact_d,
                    ids_d,
                    codes_d,
                    ny_a,
                    nx_a,
                    xi,
                    plan.first_id(STRIDE) as i32,
                ),
            )?
        };
        for (s, phase) in schedule() {
            {
                let t = Targets::of(s, phase).count(ny, nx);
                let (s_a, ph_a) = (s as i64, phase as i32);
                // SAFETY: as the anchors, plus the staging buffers nu, nv of n.
                unsafe {
                    self.grid(
                        S_PHASE,
                        t,
                        (
                            u,
                            v,
                            ru_d,
                            rv_d,
                            sigs_d,
                            exact_d,
                            ids_d,
                            codes_d,
                            nu_d,
                            nv_d,
                            ny_a,
                            nx_a,
                            xi,
                            plan.first_id(s) as i32,
                            s_a,
                            ph_a,
                        ),
                    )?
                };
                // SAFETY: buffers of n.
                unsafe { self.grid(S_APPLY, t, (ru_d, rv_d, nu_d, nv_d, ny_a, nx_a, s_a, ph_a))? };
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
        // SAFETY: n each (before n + 1).
        unsafe {
            self.grid(
                S_SLOTS,
                n,
                (
                    dexact.view(),
                    before.view(),
                    ny as i64,
                    nx as i64,
                    dslot.view(),
                ),
            )?
        };
        let nu = Buf::<E, f32>::zeros(e, n)?;
        let nv = Buf::<E, f32>::zeros(e, n)?;
        // The kernels write every vertex; zeroing first (from the fresh
        // staging buffers) keeps the output defined even if one were skipped.
        u.copy_from(e, nu.view(), n)?;
        v.copy_from(e, nv.view(), n)?;
        let (ny_a, nx_a) = (ny as i64, nx as i64);
        // Raw words are u32; the kernel reads them as floats (a bit copy).
        let (exact_d, raw, ids, codes, slot) = (
            dexact.view(),
            parts.raw.view().cast(),
            parts.ids.view(),
            parts.codes.view(),
            dslot.view(),
        );
        let (nu_d, nv_d) = (nu.view(), nv.view());
        // SAFETY: slot indexes raw pairs and coded entries in range (checked).
        unsafe {
            self.one(
                S_DECODE_ANCHORS,
                (exact_d, raw, ids, codes, slot, u, v, ny_a, nx_a, xi),
            )?
        };
        for (s, phase) in schedule() {
            {
                let t = Targets::of(s, phase).count(ny, nx);
                let (s_a, ph_a) = (s as i64, phase as i32);
                // SAFETY: as the anchors, plus the staging buffers nu, nv of n.
                unsafe {
                    self.grid(
                        S_DECODE_PHASE,
                        t,
                        (
                            exact_d, raw, ids, codes, slot, u, v, nu_d, nv_d, ny_a, nx_a, xi, s_a,
                            ph_a,
                        ),
                    )?
                };
                // SAFETY: arrays of n.
                unsafe { self.grid(S_APPLY, t, (u, v, nu_d, nv_d, ny_a, nx_a, s_a, ph_a))? };
            }
        }
        Ok(())
    }
}

/// The CPU's level plan (`speculative::plan::choose_by`) from the sample
/// tiles of a field on the executor, read row by row (at most 4 x 257 rows of
/// 257, none for fields below 16 tiles).
pub fn level_plan<E: Exec>(
    e: &E,
    u: View<f32>,
    v: View<f32>,
    ny: usize,
    nx: usize,
    xi: f64,
) -> Result<LevelPlan> {
    plan::choose_by(ny, nx, xi, |r| Ok((u.read(e, r.clone())?, v.read(e, r)?)))
}
