//! Which correction runs on a set: the optimiser (`correct`), per-particle safe
//! radii (`safe`), or `auto`, which runs safe and, where the base output changed
//! few pairs (the optimiser's time grows with them far faster than safe's), the
//! optimiser too, on the same vulnerable pairs, and keeps the smaller stream;
//! where the window reaches distance 0, auto secures every particle at once
//! (`eager`) instead of following changed pairs.
//! The choice depends only on the data, never on timing or threads, so a stream
//! is reproducible; it is recorded in the stream ([`super::correct::Method::id`]).

use super::correct::{self, Corrector, Method, Options, Outcome};
use super::geometry::{halfwidth_of, Space};
use super::stream::Correction;
use super::{eager, safe};
use crate::codec::Coder;
use crate::error::Result;
use crate::real::Real;
use std::time::Instant;

/// Auto also runs the optimiser when the base changed at most this fraction of
/// the particles' worth of pairs. On 1M clustered particles (2 threads) the
/// optimiser took 0.07 s at 0.8% (rel 1e-6) and 2.2 s at 8% (rel 1e-5), where
/// safe took 0.05 s and 0.1 s.
pub const AUTO_OPTIMISER_MAX_VIOLATED: f64 = 0.01;

/// Auto keeps every vulnerable pair from the first search when the window's
/// half-width is at most this fraction of b (1M particles: 0.85M pairs at rel
/// 1e-5, half-width 0.017 b); wider windows hold tens of millions of pairs, and
/// the optimiser rarely runs there.
pub const AUTO_THIN_WINDOW: f64 = 0.05;

/// The correction of `recon` (the base output) by `opts.method`, and the method
/// that made it (never `Auto`).
#[allow(clippy::too_many_arguments)]
pub fn run<T: Real>(
    corrector: &dyn Corrector<T>,
    orig: &[T],
    recon: Vec<T>,
    exact: Vec<bool>,
    space: Space,
    b: f64,
    xi: f64,
    opts: &Options,
    coder: Coder,
) -> Result<(Outcome<T>, Method)> {
    match opts.method {
        Method::Correct => Ok((
            correct::correct(corrector, orig, recon, exact, space, b, xi, opts)?,
            Method::Correct,
        )),
        Method::Safe => Ok((
            safe::correct(corrector, orig, recon, exact, space, b, xi, opts)?,
            Method::Safe,
        )),
        // A window reaching distance 0: nearly every pair is vulnerable and
        // following the changed ones costs a dozen walks over tens of millions.
        Method::Auto if eager::wide(b, xi) => Ok((
            eager::correct(orig, recon, exact, space, b, xi, opts),
            Method::Safe,
        )),
        Method::Auto => {
            let t0 = Instant::now();
            let mut recon = recon;
            correct::reset_exact(orig, &mut recon, &exact);
            // Every vulnerable pair too where the window is thin (few pairs):
            // the optimiser, if it runs, moves particles anywhere within xi
            // and needs them all. Where it is wide, a second search if needed.
            let thin = halfwidth_of(orig, space, b, xi) <= AUTO_THIN_WINDOW * b;
            let (survey, all) = corrector.survey(orig, &recon, space, b, xi, thin)?;
            let found = t0.elapsed().as_secs_f64();
            let n = orig.len() / 3;
            let try_optimiser = survey.bad.len() as f64 <= AUTO_OPTIMISER_MAX_VIOLATED * n as f64;
            let all = match (try_optimiser, all) {
                (false, _) => None,
                (true, Some(all)) => Some(all),
                (true, None) => Some(corrector.pairs(orig, space, b, xi)?),
            };
            // The inputs are copied only for a second run.
            let (for_safe, for_optimiser) = match all {
                Some(all) => ((recon.clone(), exact.clone()), Some((all, recon, exact))),
                None => ((recon, exact), None),
            };
            let safe_out =
                safe::correct_on(survey, orig, for_safe.0, for_safe.1, space, b, xi, opts);
            let mut best = (safe_out, Method::Safe);
            if let Some((all, recon, exact)) = for_optimiser {
                let opt =
                    correct::correct_on(corrector, &all, orig, recon, exact, space, b, xi, opts)?;
                if stored(orig, &opt, coder) < stored(orig, &best.0, coder) {
                    best = (opt, Method::Correct);
                }
            }
            // The search(es) and the run not kept count as setup.
            let st = &mut best.0.stats;
            st.setup_s = (t0.elapsed().as_secs_f64() - st.optimise_s - st.check_s).max(found);
            Ok(best)
        }
    }
}

/// Bytes of the correction sections an outcome would store.
fn stored<T: Real>(orig: &[T], out: &Outcome<T>, coder: Coder) -> usize {
    Correction::new(orig, out.exact.clone(), out.edits.clone())
        .sections(orig.len() / 3, coder)
        .iter()
        .map(|s| s.1.len())
        .sum()
}
