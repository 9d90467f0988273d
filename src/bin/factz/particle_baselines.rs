//! The particle benchmark's baselines: each base compressor alone (what a user
//! of SZ3 or ZFP stores today), at the requested bound and at the loosest bound
//! at which it changes no friends-of-friends link, found by search.

use crate::bench::best_of;
use crate::{CliError, CliResult};
use factz::field::Coder;
use factz::format;
use factz::particles::{self, base, metrics, Base, Bound, Space};
use factz::Real;
use std::time::Duration;

/// A base compressor's own output.
pub struct Alone<T> {
    /// Its sections in a factz container (a few hundred bytes of header; SZ3's
    /// and ZFP's own headers are inside their sections).
    pub bytes: usize,
    pub compress: Duration,
    pub decompress: Duration,
    pub recon: Vec<T>,
}

/// `base` alone on AoS positions under absolute bound `abs`: encode, container,
/// parse and decode, each timed as best of `repeat`.
pub fn alone<T: Real>(
    pos: &[T],
    b: Base,
    abs: f64,
    coder: Coder,
    repeat: usize,
) -> CliResult<Alone<T>> {
    let fail = |e: factz::Error| CliError::fail(format!("bench: {} alone: {e}", b.name()));
    let n = pos.len() / 3;
    let (compress, bytes) = best_of(repeat, || {
        let (sections, _) = base::encode(b, pos, abs, coder).map_err(fail)?;
        base::container::<T>(b, &sections, n, abs, coder).map_err(fail)
    })?;
    let (decompress, recon) = best_of(repeat, || {
        let p = format::parse(&bytes).map_err(fail)?;
        base::decode(b, &p, n, abs, coder).map_err(fail)
    })?;
    Ok(Alone {
        bytes: bytes.len(),
        compress,
        decompress,
        recon,
    })
}

/// The loosest bound found at which a base alone changes no link.
pub struct Loosest<T> {
    pub rel: f64,
    pub abs: f64,
    pub alone: Alone<T>,
    /// Bounds tried.
    pub probes: usize,
}

/// Tightest relative bound the search goes to before giving up (a base that
/// still changes links there is as good as lossless for a user).
const TIGHTEST_REL: f64 = 1e-10;
/// Bisection steps in log(bound) once a changing and a keeping bound are known:
/// five halve a decade to a factor of about 1.07.
const BISECTIONS: usize = 5;

/// From `loosest_rel` down by decades until the base changes no link (counted by
/// `metrics::changed_links`), then bisection in log(bound) between the last
/// changing and the first keeping bound. Link changes need not be monotone in
/// the bound; the answer is the bisection's, and the caller checks it with the
/// full FoF oracle. None when even [`TIGHTEST_REL`] changes links.
pub fn loosest<T: Real>(
    pos: &[T],
    space: Space,
    b: f64,
    base: Base,
    coder: Coder,
    loosest_rel: f64,
    mut progress: impl FnMut(f64),
) -> CliResult<Option<Loosest<T>>> {
    let mut probes = 0;
    let mut probe = |rel: f64| -> CliResult<(bool, f64, Alone<T>)> {
        progress(rel);
        probes += 1;
        let abs = particles::absolute_bound(pos, Bound::Rel(rel));
        let a = alone(pos, base, abs, coder, 1)?;
        let keeps = metrics::changed_links(pos, &a.recon, space, b)? == 0;
        Ok((keeps, abs, a))
    };
    let mut rel = loosest_rel;
    let mut changing = None;
    let (mut keep_rel, mut keep) = loop {
        let (keeps, abs, a) = probe(rel)?;
        if keeps {
            break (rel, (abs, a));
        }
        changing = Some(rel);
        rel /= 10.0;
        if rel < TIGHTEST_REL {
            return Ok(None);
        }
    };
    if let Some(mut hi) = changing {
        for _ in 0..BISECTIONS {
            let mid = (hi * keep_rel).sqrt();
            let (keeps, abs, a) = probe(mid)?;
            if keeps {
                keep_rel = mid;
                keep = (abs, a);
            } else {
                hi = mid;
            }
        }
    }
    Ok(Some(Loosest {
        rel: keep_rel,
        abs: keep.0,
        alone: keep.1,
        probes,
    }))
}
