//! The correction's optimiser (PGD with Adam) on an [`Exec`]: the kernels
//! `factz_p_descent_*` of kernels/particles.cu, driven iteration by iteration
//! as `particles::correct::descend` runs on the CPU, with the same stopping
//! rule on the same loss bits, so the result (and the stream) is the CPU's.
//!
//! Per iteration the host reads back one f64 per 256 active particles (the
//! loss's block sums) and the particles that joined the active set (it keeps
//! the active list, to count the work cap in pair terms as the CPU does).

use super::exec::{Buf, Exec, View};
use super::launch::kernels;
use crate::error::{Error, Result};
use crate::particles::correct::{self, Descended, Options, Problem, Stopping, LOSS_BLOCK};

/// Threads per block (any multiple of 32 up to 1024; the loss sum's is fixed).
const BLOCK: u32 = 256;
/// FZP_NONE: a local particle not (yet) active.
const NONE: u32 = u32::MAX;

kernels! {
    P_DESCENT_GRAD = factz_p_descent_grad(
        pos: View<f64>, adj_start: View<u64>, adj_nb: View<u32>, adj_linked: View<u8>,
        active: View<u32>, na: u64, slot: View<u32>, editable: View<u8>, t_link: f64,
        t_free: f64, period: f64, loss: View<f64>, grad: View<f64>, grow: View<u64>,
    );
    P_LOSS_SUM = factz_p_loss_sum(loss: View<f64>, n: u64, sums: View<f64>);
    P_DESCENT_STEP = factz_p_descent_step(
        pos: View<f64>, orig: View<f64>, active: View<u32>, na: u64, grad: View<f64>,
        m: View<f64>, v: View<f64>, pw: View<f64>, lr: f64, half: f64,
    );
    P_DESCENT_GROW = factz_p_descent_grow(
        grow: View<u64>, rank: View<u64>, nl: u64, na: u64, active: View<u32>, slot: View<u32>,
    );
}

fn flags(v: &[bool]) -> Vec<u8> {
    v.iter().map(|&b| b as u8).collect()
}

/// `correct::descend` on `e`.
pub fn descend<E: Exec>(e: &E, p: &Problem, opts: &Options) -> Result<Descended> {
    let nl = p.glob.len();
    if nl >= NONE as usize {
        return Err(Error::unsupported(format!(
            "{nl} vulnerable particles: the GPU optimiser numbers them in 32 bits"
        )));
    }
    let start: Vec<u64> = p.adj.start.iter().map(|&s| s as u64).collect();
    let adj_start = Buf::from(e, &start)?;
    let adj_nb = Buf::from(e, &p.adj.nb)?;
    let adj_linked = Buf::from(e, &flags(&p.adj.linked))?;
    let editable = Buf::from(e, &flags(&p.editable))?;
    let orig = Buf::from(e, &p.orig)?;
    let pos = Buf::from(e, &p.pos)?;
    let mut active_d = Buf::<E, u32>::zeros(e, nl)?;
    active_d.write(e, 0, &p.active)?;
    let mut slot_h = vec![NONE; nl];
    for (s, &k) in p.active.iter().enumerate() {
        slot_h[k as usize] = s as u32;
    }
    let slot = Buf::from(e, &slot_h)?;
    drop(slot_h);
    let m = Buf::<E, f64>::zeros(e, 3 * nl)?;
    let v = Buf::<E, f64>::zeros(e, 3 * nl)?;
    let pw = Buf::from(e, &vec![1.0f64; 2 * nl])?;
    let grad = Buf::<E, f64>::zeros(e, 3 * nl)?;
    let loss = Buf::<E, f64>::zeros(e, nl)?;
    let sums = Buf::<E, f64>::zeros(e, nl.div_ceil(LOSS_BLOCK))?;
    let grow = Buf::<E, u64>::zeros(e, nl)?;
    let rank = Buf::<E, u64>::zeros(e, nl + 1)?;

    let mut active = p.active.clone();
    // Pair terms per iteration (the work cap counts them as the CPU does).
    let mut degree: u64 = active.iter().map(|&k| p.adj.degree(k as usize)).sum();
    let mut stopping = Stopping::new(p, opts);
    let mut iterations = 0;
    let (period, nl64) = (p.period.unwrap_or(0.0), nl as u64);
    for it in 0..opts.max_iters {
        let na = active.len();
        let na64 = na as u64;
        // SAFETY (every launch below): buffers hold nl particles (3 nl
        // coordinates, nl + 1 adjacency starts, one sum per 256).
        unsafe {
            P_DESCENT_GRAD.launch_items(
                e,
                na,
                BLOCK,
                (
                    pos.view(),
                    adj_start.view(),
                    adj_nb.view(),
                    adj_linked.view(),
                    active_d.view(),
                    na64,
                    slot.view(),
                    editable.view(),
                    p.t_link,
                    p.t_free,
                    period,
                    loss.view(),
                    grad.view(),
                    grow.view(),
                ),
            )?;
            P_LOSS_SUM.launch_items(e, na, LOSS_BLOCK as u32, (loss.view(), na64, sums.view()))?;
        }
        let block_sums = sums.read(e, 0..na.div_ceil(LOSS_BLOCK))?;
        let total = correct::sum_blocks(block_sums) / 2.0;
        if stopping.stop(it, total, degree) {
            break;
        }
        iterations += 1;
        // SAFETY: as above; rank holds nl + 1 entries, active nl.
        let grown = unsafe {
            P_DESCENT_STEP.launch_items(
                e,
                na,
                BLOCK,
                (
                    pos.view(),
                    orig.view(),
                    active_d.view(),
                    na64,
                    grad.view(),
                    m.view(),
                    v.view(),
                    pw.view(),
                    opts.learning_rate,
                    p.half,
                ),
            )?;
            let grown = super::scan::exclusive_into(e, grow.view(), nl, rank.view())? as usize;
            if grown > 0 {
                P_DESCENT_GROW.launch_items(
                    e,
                    nl,
                    BLOCK,
                    (
                        grow.view(),
                        rank.view(),
                        nl64,
                        na64,
                        active_d.view(),
                        slot.view(),
                    ),
                )?;
            }
            grown
        };
        if grown > 0 {
            let joined = active_d.read(e, na..na + grown)?;
            degree += joined
                .iter()
                .map(|&k| p.adj.degree(k as usize))
                .sum::<u64>();
            active.extend(joined);
        }
    }
    Ok(Descended {
        active,
        pos: pos.read(e, 0..3 * nl)?,
        iterations,
    })
}
