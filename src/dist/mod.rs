//! Beyond one node (vector fields: [`compress_field_at`] and [`compress_field`],
//! in `field.rs`).
//!
//! Particles: every MPI rank compresses the particles it owns,
//! and every friends-of-friends link of the whole set keeps its status, links
//! between ranks included (cargo feature `mpi`, on MPI itself through the `mpi`
//! crate).
//!
//! How the ranks agree:
//! 1. One absolute bound xi and one linking length b for everyone (all-reduce of
//!    coordinate ranges, counts and boxes), so "vulnerable" means the same thing
//!    on every rank.
//! 2. Each rank's bounding box is all-gathered. Ranks whose boxes come within
//!    `b + 2 sqrt(3) xi` of each other are neighbours; each rank sends each
//!    neighbour its particles inside that neighbour's padded box (periodic
//!    boxes wrap): its ghosts. A pair closer than `b + w` always has each
//!    particle inside the other's padded box, so each rank sees every
//!    vulnerable pair it is part of, from both sides. The exchange is
//!    point-to-point and non-blocking, and the base compression of the rank's
//!    own particles (which needs no ghost) runs while it is in flight.
//! 3. A vulnerable pair spanning two ranks is fixed consistently on both: both
//!    ranks compute it from the same original coordinates with the same
//!    arithmetic (the distance is symmetric), and each stores its own end
//!    exactly. Its distance is then exactly the original one.
//! 4. Pairs inside a rank go through the usual correction (Adam, then exact
//!    storage until zero violations), with those particles held exact.
//!
//! This is the correction's own fallback (exact storage) applied to the pairs a
//! rank cannot move alone, instead of iterating Adam across ranks: no rank waits
//! on another during the optimisation, the result does not depend on message
//! timing, and the pairs that span ranks are a thin shell (measured in the
//! report). Every rank returns an error if any rank fails, never a hang.

mod field;
pub use self::field::{compress_field, compress_field_at, compress_field_at_on, compress_field_on};

use crate::backend::{self, Backend, BackendUsed};
use crate::bound::{bound_for_range, finite_range};
use crate::error::ErrorKind;
use crate::particles::{
    self, check_config, geometry, particle_count, vulnerable, Bound, Compressed, Linking,
    ParticleConfig, Space,
};
use crate::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::traits::*;

/// The `mpi` crate this module is built on, so callers use the same version.
pub use mpi;

/// What the distributed compression did on this rank, beside its stream.
#[derive(Debug, Clone, PartialEq)]
pub struct DistReport {
    /// The absolute bound every rank used.
    pub abs_bound: f64,
    /// The linking length every rank used.
    pub linking_length: f64,
    /// Ranks this rank exchanged ghosts with (their boxes come within reach).
    pub neighbours: usize,
    /// Particles this rank sent to others (counted once per receiver).
    pub ghosts_sent: usize,
    /// Particles this rank received from others.
    pub ghosts_received: usize,
    /// Vulnerable pairs between this rank's particles and other ranks'.
    pub cross_pairs: usize,
    /// This rank's particles stored exactly because of those pairs.
    pub cross_exact: usize,
    /// Bytes of particle data this rank sent.
    pub bytes_sent: usize,
    /// Seconds in the global reductions and the ghost exchange, not counting
    /// the base encoding that overlaps it.
    pub exchange_s: f64,
    /// Seconds of base encoding run while the ghosts were in flight.
    pub setup_s: f64,
    /// Seconds finding the pairs that span ranks.
    pub cross_s: f64,
    /// Seconds compressing this rank's particles (base and correction, so
    /// `setup_s` included).
    pub compress_s: f64,
    /// Where this rank's correction ran (`backend::corrector`).
    pub ran: BackendUsed,
}

/// Compresses this rank's particles `pos` (AoS) so that, with every rank of
/// `comm` calling it on its own particles, the union keeps every link. Each
/// rank gets its own stream, which `particles::decompress` decodes alone.
///
/// `cfg.bound` and `cfg.linking` are resolved over all ranks: `Rel` is relative
/// to the coordinate range of the whole set, eta to the whole count and the
/// periodic box (or the whole set's bounding box). `cfg.chunk_of_larger` is
/// ignored: the ghost exchange does its work.
pub fn compress_particles<C: Communicator>(
    comm: &C,
    pos: &[f32],
    cfg: &ParticleConfig,
) -> Result<(Compressed, DistReport)> {
    compress_particles_on(comm, Backend::Cpu, pos, cfg)
}

/// [`compress_particles`] with each rank's correction (pair search and
/// optimiser) on `backend` (`backend::corrector`: `Cuda` without a usable
/// device fails on every rank, `Auto` falls back per rank); the streams are
/// the same whichever runs it. `DistReport::ran` says where it ran.
pub fn compress_particles_on<C: Communicator>(
    comm: &C,
    backend: Backend,
    pos: &[f32],
    cfg: &ParticleConfig,
) -> Result<(Compressed, DistReport)> {
    let t0 = std::time::Instant::now();
    let (summary, (corrector, ran)) = agree(
        comm,
        guarded("checking the input", || {
            Ok((local_summary(pos, cfg)?, backend::corrector(backend)?))
        }),
    )?;
    let global = reduce(comm, &summary);
    let setup = resolve(cfg, &global);
    let (xi, b) = agree(comm, setup)?;

    // Every rank's window ([`geometry::halfwidth_of`]) is at most this wide.
    let far = if global.empty {
        0.0
    } else {
        f64::from(global.lo.abs().max(global.hi.abs()))
    };
    let pad = b
        + geometry::vulnerable_halfwidth(b, xi)
        + cfg.period.map_or(0.0, |l| geometry::wrap_slack(far, l, xi));
    let boxes = gather_boxes(comm, &summary);
    let space = Space { period: cfg.period };
    let mut local_cfg = *cfg;
    local_cfg.bound = Bound::Abs(xi);
    local_cfg.linking = Linking::Length(b);
    local_cfg.chunk_of_larger = false;
    // The base encoding needs no ghost: it runs while they travel.
    let (ex, (prepared, setup_s)) =
        exchange_ghosts_while(comm, pos, &boxes, pad, cfg.period, || {
            let t = std::time::Instant::now();
            (
                particles::prepare(pos, &local_cfg),
                t.elapsed().as_secs_f64(),
            )
        });
    let exchange_s = t0.elapsed().as_secs_f64() - setup_s;
    let prepared = agree(comm, prepared)?;

    // Vulnerable pairs between an owned particle and a ghost. Such a particle is
    // inside the other rank's padded box, so it is one this rank sent: search
    // those and the ghosts only, not the whole slab.
    let t1 = std::time::Instant::now();
    let cross = guarded("the cross-rank pair search", || {
        let mut forced = vec![false; pos.len() / 3];
        let mut cross_pairs = 0;
        if !ex.ghosts.is_empty() {
            let mut near: Vec<f32> = ex
                .boundary
                .iter()
                .flat_map(|&k| pos[3 * k..3 * k + 3].to_vec())
                .collect();
            let nb = ex.boundary.len();
            near.extend_from_slice(&ex.ghosts);
            for p in vulnerable::pairs(&near, space, b, xi) {
                let (i, j) = (p.i as usize, p.j as usize);
                if (i < nb) != (j < nb) {
                    cross_pairs += 1;
                    forced[ex.boundary[i.min(j)]] = true;
                }
            }
        }
        Ok((forced, cross_pairs))
    });
    let (forced, cross_pairs) = agree(comm, cross)?;
    let cross_s = t1.elapsed().as_secs_f64();

    let t2 = std::time::Instant::now();
    let compressed = guarded("the correction", || {
        particles::finish_with(pos, &local_cfg, prepared, Some(&forced), corrector.as_ref())
    });
    let compress_s = setup_s + t2.elapsed().as_secs_f64();
    let compressed = agree(comm, compressed)?;
    let report = DistReport {
        abs_bound: xi,
        linking_length: b,
        neighbours: ex.neighbours,
        ghosts_sent: ex.sent,
        ghosts_received: ex.ghosts.len() / 3,
        cross_pairs,
        cross_exact: forced.iter().filter(|&&f| f).count(),
        bytes_sent: ex.bytes_sent,
        exchange_s,
        setup_s,
        cross_s,
        compress_s,
        ran,
    };
    Ok((compressed, report))
}

/// What each rank contributes to the global bound, b and boxes.
#[derive(Debug, Clone, Copy)]
struct Summary {
    count: u64,
    /// Finite coordinate range over all axes (f32, as `absolute_bound` takes it).
    lo: f32,
    hi: f32,
    /// Bounding box of the finite particles; `empty` when there are none.
    box_lo: [f64; 3],
    box_hi: [f64; 3],
    empty: bool,
}

fn local_summary(pos: &[f32], cfg: &ParticleConfig) -> Result<Summary> {
    let n = particle_count(pos.len())?;
    check_config(cfg)?;
    if !cfg.base.available() {
        return Err(Error::unsupported(format!(
            "base compressor {} is not compiled in",
            cfg.base.name()
        )));
    }
    geometry::check_positions(pos, Space { period: cfg.period })?;
    let (lo, hi) = finite_range(&[pos]);
    let bbox = geometry::bounding_box(pos);
    Ok(Summary {
        count: n as u64,
        lo,
        hi,
        box_lo: bbox.map_or([f64::INFINITY; 3], |b| b.0),
        box_hi: bbox.map_or([f64::NEG_INFINITY; 3], |b| b.1),
        empty: bbox.is_none(),
    })
}

/// The whole set's count, coordinate range and bounding box.
fn reduce<C: Communicator>(comm: &C, s: &Summary) -> Summary {
    let mut count = 0u64;
    comm.all_reduce_into(&s.count, &mut count, SystemOperation::sum());
    let mut lo = 0f32;
    let mut hi = 0f32;
    comm.all_reduce_into(&s.lo, &mut lo, SystemOperation::min());
    comm.all_reduce_into(&s.hi, &mut hi, SystemOperation::max());
    let mut box_lo = [0f64; 3];
    let mut box_hi = [0f64; 3];
    comm.all_reduce_into(&s.box_lo[..], &mut box_lo[..], SystemOperation::min());
    comm.all_reduce_into(&s.box_hi[..], &mut box_hi[..], SystemOperation::max());
    Summary {
        count,
        lo,
        hi,
        box_lo,
        box_hi,
        empty: box_lo[0] > box_hi[0],
    }
}

/// The absolute bound and linking length of the whole set, as
/// `particles::compress` would compute them on all the particles at once.
fn resolve(cfg: &ParticleConfig, g: &Summary) -> Result<(f64, f64)> {
    // The formula absolute_bound uses, on the global range.
    let xi = bound_for_range(cfg.bound, g.lo, g.hi);
    let b = match cfg.linking {
        Linking::Length(b) => b,
        Linking::Eta(eta) if g.count < 2 => eta,
        Linking::Eta(eta) => {
            let volume = match cfg.period {
                Some(l) => l * l * l,
                None if g.empty => 0.0,
                None => (0..3).map(|k| g.box_hi[k] - g.box_lo[k]).product(),
            };
            let b = eta * (volume / g.count as f64).cbrt();
            if !(b > 0.0 && b.is_finite()) {
                return Err(Error::invalid(
                    "eta needs particles spread in all three dimensions (zero bounding-box \
                     volume over all ranks); give the linking length b instead",
                ));
            }
            b
        }
    };
    particles::geometry::check_linking(b, particles::Space { period: cfg.period })?;
    Ok((xi, b))
}

/// Every rank's bounding box: [lo0, lo1, lo2, hi0, hi1, hi2, empty].
fn gather_boxes<C: Communicator>(comm: &C, s: &Summary) -> Vec<[f64; 7]> {
    let mine = [
        s.box_lo[0],
        s.box_lo[1],
        s.box_lo[2],
        s.box_hi[0],
        s.box_hi[1],
        s.box_hi[2],
        if s.empty { 1.0 } else { 0.0 },
    ];
    let mut all = vec![0f64; 7 * comm.size() as usize];
    comm.all_gather_into(&mine[..], &mut all[..]);
    all.chunks_exact(7)
        .map(|c| {
            let mut b = [0f64; 7];
            b.copy_from_slice(c);
            b
        })
        .collect()
}

/// Whether `p` lies within `pad` of the box on every axis (minimum image in a
/// periodic box): a superset of the points within distance `pad` of it.
fn near_box(p: &[f32], bx: &[f64; 7], pad: f64, period: Option<f64>) -> bool {
    (0..3).all(|k| {
        let (lo, hi, x) = (bx[k], bx[k + 3], p[k] as f64);
        let gap = match period {
            None => (lo - x).max(x - hi).max(0.0),
            Some(l) => {
                // Distance from x to the arc [lo, hi] on a circle of length l.
                let t = (x - lo).rem_euclid(l);
                let len = hi - lo;
                if t <= len {
                    0.0
                } else {
                    (t - len).min(l - t)
                }
            }
        };
        gap <= pad
    })
}

/// How far apart boxes `a` and `b` are on axis `k` (0 when they overlap; in a
/// periodic box, between the nearest periodic images).
fn axis_gap(a: &[f64; 7], b: &[f64; 7], k: usize, period: Option<f64>) -> f64 {
    let gap = |shift: f64| {
        (a[k] - (b[k + 3] + shift))
            .max(b[k] + shift - a[k + 3])
            .max(0.0)
    };
    match period {
        None => gap(0.0),
        Some(l) => {
            // The image of b whose centre is nearest a's, and its two neighbours.
            let s = l * ((a[k] + a[k + 3] - b[k] - b[k + 3]) / (2.0 * l)).round();
            gap(s - l).min(gap(s)).min(gap(s + l))
        }
    }
}

/// The ranks this one exchanges ghosts with: non-empty boxes within `pad` of
/// its own on every axis. Decided by an expression symmetric in the two boxes
/// (so both ends agree) and with slack (so it is a superset of the ranks that
/// have particles for each other; an extra neighbour costs an empty message).
fn neighbours(me: usize, boxes: &[[f64; 7]], pad: f64, period: Option<f64>) -> Vec<usize> {
    let (a, reach) = (&boxes[me], pad * (1.0 + 1e-6));
    if a[6] != 0.0 {
        return vec![];
    }
    (0..boxes.len())
        .filter(|&r| {
            let b = &boxes[r];
            r != me
                && b[6] == 0.0
                && (0..3).all(|k| axis_gap(a, b, k, period).min(axis_gap(b, a, k, period)) <= reach)
        })
        .collect()
}

/// What the ghost exchange gave this rank.
struct Exchange {
    /// Ghosts received (AoS, in rank order).
    ghosts: Vec<f32>,
    /// This rank's particles sent anywhere (ascending indices).
    boundary: Vec<usize>,
    neighbours: usize,
    /// Particles sent (once per receiver) and their bytes.
    sent: usize,
    bytes_sent: usize,
}

const TAG_COUNT: mpi::Tag = 0x6663;
const TAG_GHOSTS: mpi::Tag = 0x6667;

/// Sends each neighbour this rank's particles near its padded box and receives
/// theirs, point to point and non-blocking, running `local` while the ghosts
/// are in flight (the sizes go first, so every receive is posted with its size).
fn exchange_ghosts_while<C: Communicator, T>(
    comm: &C,
    pos: &[f32],
    boxes: &[[f64; 7]],
    pad: f64,
    period: Option<f64>,
    local: impl FnOnce() -> T,
) -> (Exchange, T) {
    let nbrs = neighbours(comm.rank() as usize, boxes, pad, period);
    let mut sent_any = vec![false; pos.len() / 3];
    let sends: Vec<Vec<f32>> = nbrs
        .iter()
        .map(|&r| {
            let mut out = Vec::new();
            for (k, p) in pos.chunks_exact(3).enumerate() {
                if p.iter().all(|c| c.is_finite()) && near_box(p, &boxes[r], pad, period) {
                    out.extend_from_slice(p);
                    sent_any[k] = true;
                }
            }
            out
        })
        .collect();
    let peer = |r: usize| comm.process_at_rank(r as mpi::Rank);
    let counts_out: Vec<u64> = sends.iter().map(|s| s.len() as u64).collect();
    let mut counts_in = vec![0u64; nbrs.len()];
    mpi::request::scope(|scope| {
        let mut reqs = Vec::with_capacity(2 * nbrs.len());
        for (c, &r) in counts_in.iter_mut().zip(&nbrs) {
            reqs.push(peer(r).immediate_receive_into_with_tag(scope, c, TAG_COUNT));
        }
        for (c, &r) in counts_out.iter().zip(&nbrs) {
            reqs.push(peer(r).immediate_send_with_tag(scope, c, TAG_COUNT));
        }
        reqs.into_iter().for_each(|q| {
            q.wait();
        });
    });
    let mut recv: Vec<Vec<f32>> = counts_in.iter().map(|&c| vec![0f32; c as usize]).collect();
    let out = mpi::request::scope(|scope| {
        let mut reqs = Vec::with_capacity(2 * nbrs.len());
        for (buf, &r) in recv.iter_mut().zip(&nbrs) {
            reqs.push(peer(r).immediate_receive_into_with_tag(scope, &mut buf[..], TAG_GHOSTS));
        }
        for (buf, &r) in sends.iter().zip(&nbrs) {
            reqs.push(peer(r).immediate_send_with_tag(scope, &buf[..], TAG_GHOSTS));
        }
        let out = local();
        reqs.into_iter().for_each(|q| {
            q.wait();
        });
        out
    });
    let sent: usize = sends.iter().map(|s| s.len() / 3).sum();
    let ex = Exchange {
        ghosts: recv.concat(),
        boundary: (0..sent_any.len()).filter(|&k| sent_any[k]).collect(),
        neighbours: nbrs.len(),
        sent,
        bytes_sent: 12 * sent,
    };
    (ex, out)
}

/// Runs this rank's local work so that a panic (a bug) becomes an error that
/// [`agree`] shares, instead of a rank that leaves the others waiting forever
/// in the next collective.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::internal(format!("{what} panicked: {why}")))
    })
}

/// Turns one rank's failure into every rank's: each rank contributes whether
/// it failed, and all return an error if any did (never a hang waiting for a
/// rank that gave up).
pub(crate) fn agree<C: Communicator, T>(comm: &C, local: Result<T>) -> Result<T> {
    let failed = local.is_err() as i32;
    let mut flags = vec![0i32; comm.size() as usize];
    comm.all_gather_into(&failed, &mut flags[..]);
    if let Err(e) = local {
        // An unsupported request (no GPU for `Cuda`) stays one; anything
        // else is this rank's bad input.
        let kind = match e.kind {
            ErrorKind::Unsupported => ErrorKind::Unsupported,
            _ => ErrorKind::InvalidArgument,
        };
        return Err(Error::new(kind, format!("rank {}: {e}", comm.rank())));
    }
    match flags.iter().position(|&f| f != 0) {
        Some(r) => Err(Error::invalid(format!(
            "rank {r} failed (its own error says why); every rank stops"
        ))),
        None => local,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_local_work_is_an_error_every_rank_can_agree_on() {
        let e = guarded("the work", || -> Result<()> { panic!("a bug") }).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Internal);
        assert!(e.to_string().contains("the work panicked: a bug"), "{e}");
        assert_eq!(guarded("fine", || Ok(3)).unwrap(), 3);
    }
}
