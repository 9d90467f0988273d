//! What `factz verify` and the benchmark report for particles: links kept, FoF
//! partition, halo mass function, errors. Computed from scratch on both position
//! sets (no stream internals), so any reconstruction can be judged.

use super::fof::{self, halos, mass_function, HMF_BINS};
use super::geometry::{linked, Space};
use super::vulnerable;
use crate::bound::within;
use crate::error::Result;
use crate::real::Real;

#[derive(Debug, Clone, PartialEq)]
pub struct ParticleMetrics {
    pub particles: usize,
    pub original_links: usize,
    /// Linked in the original, not in the reconstruction.
    pub broken_links: usize,
    /// Linked in the reconstruction, not in the original.
    pub false_links: usize,
    /// Vulnerable pairs of the original (window of the bound `xi`).
    pub vulnerable_pairs: usize,
    /// Matthews correlation of link status over the vulnerable pairs (1 = all kept).
    pub mcc: f64,
    pub identical_partition: bool,
    pub groups_original: usize,
    pub halos_original: usize,
    pub halos_reconstructed: usize,
    /// Sum over mass-function bins of |reconstructed - original| / total original halos.
    pub hmf_rel_error: f64,
    pub max_error: f64,
    pub psnr_db: f64,
    /// Finite coordinates beyond `xi`, and non-finite coordinates not kept bit for bit.
    pub bound_violations: usize,
}

/// Compare a reconstruction with the original under linking length `b` and
/// bound `xi`; an invalid `b` ([`super::geometry::check_linking`]) is an error.
pub fn compare<T: Real>(
    orig: &[T],
    recon: &[T],
    space: Space,
    b: f64,
    xi: f64,
    min_members: usize,
) -> Result<ParticleMetrics> {
    let n = orig.len() / 3;
    let lo = fof::links(orig, space, b)?;
    let lr = fof::links(recon, space, b)?;
    let (broken, false_links) = set_difference(&lo, &lr);
    let b2 = b * b;
    let (mut tp, mut tn, mut fp, mut fneg) = (0f64, 0f64, 0f64, 0f64);
    let pairs = vulnerable::pairs(orig, space, b, xi);
    for p in &pairs {
        let (i, j) = (p.i as usize, p.j as usize);
        let now = linked(
            space.dist2(&recon[3 * i..3 * i + 3], &recon[3 * j..3 * j + 3]),
            b2,
        );
        match (p.linked, now) {
            (true, true) => tp += 1.0,
            (false, false) => tn += 1.0,
            (false, true) => fp += 1.0,
            (true, false) => fneg += 1.0,
        }
    }
    let den = ((tp + fp) * (tp + fneg) * (tn + fp) * (tn + fneg)).sqrt();
    let mcc = if den > 0.0 {
        (tp * tn - fp * fneg) / den
    } else if fp + fneg == 0.0 {
        1.0
    } else {
        0.0
    };
    let label_o = fof::group_labels(n, &lo);
    let label_r = fof::group_labels(n, &lr);
    let ho = halos(&label_o, min_members)?;
    let hr = halos(&label_r, min_members)?;
    let top = ho.first().map_or(min_members, |h| h.members.len());
    let top = top.max(hr.first().map_or(0, |h| h.members.len()));
    let mo = mass_function(
        ho.iter().map(|h| h.members.len()),
        min_members,
        top,
        HMF_BINS,
    );
    let mr = mass_function(
        hr.iter().map(|h| h.members.len()),
        min_members,
        top,
        HMF_BINS,
    );
    let diff: u64 = mo
        .counts
        .iter()
        .zip(&mr.counts)
        .map(|(a, b)| a.abs_diff(*b))
        .sum();
    let hmf_rel_error = if ho.is_empty() {
        if hr.is_empty() {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        diff as f64 / ho.len() as f64
    };
    let (mut max_error, mut se, mut count, mut violations) = (0f64, 0f64, 0usize, 0usize);
    let (mut vmin, mut vmax) = (f64::INFINITY, f64::NEG_INFINITY);
    for (&a, &r) in orig.iter().zip(recon) {
        if a.is_finite() {
            vmin = vmin.min(a.to_f64());
            vmax = vmax.max(a.to_f64());
            let e = (r.to_f64() - a.to_f64()).abs();
            if !(r.is_finite() && within(r, a, xi)) {
                violations += 1;
            }
            if e.is_finite() {
                max_error = max_error.max(e);
                se += e * e;
                count += 1;
            }
        } else if a.to_bits64() != r.to_bits64() {
            violations += 1;
        }
    }
    let mse = if count > 0 { se / count as f64 } else { 0.0 };
    let range = if vmax > vmin { vmax - vmin } else { 0.0 };
    let psnr_db = if mse == 0.0 {
        f64::INFINITY
    } else {
        20.0 * range.log10() - 10.0 * mse.log10()
    };
    Ok(ParticleMetrics {
        particles: n,
        original_links: lo.len(),
        broken_links: broken,
        false_links,
        vulnerable_pairs: pairs.len(),
        mcc,
        identical_partition: label_o == label_r,
        groups_original: label_o
            .iter()
            .enumerate()
            .filter(|(k, &l)| l as usize == *k)
            .count(),
        halos_original: ho.len(),
        halos_reconstructed: hr.len(),
        hmf_rel_error,
        max_error,
        psnr_db,
        bound_violations: violations,
    })
}

/// How many pairs are linked in one of `orig` and `recon` and not the other,
/// found without a full friends-of-friends pass: only pairs the largest
/// coordinate error can change are looked at (the vulnerable window of that
/// error), so this costs one thin pair search. A reconstruction that is not
/// finite where the original is, or errs by more than b, is counted in full.
/// The benchmark's bound search calls this at every probe.
pub fn changed_links<T: Real>(orig: &[T], recon: &[T], space: Space, b: f64) -> Result<usize> {
    super::geometry::check_linking(b, space)?;
    super::geometry::check_positions(orig, space)?;
    let mut err = 0f64;
    for (&a, &r) in orig.iter().zip(recon) {
        if a.is_finite() != r.is_finite() {
            err = f64::INFINITY;
            break;
        }
        if a.is_finite() {
            err = err.max((r.to_f64() - a.to_f64()).abs());
        }
    }
    if err == 0.0 {
        return Ok(0);
    }
    if err > b {
        let (broken, made) =
            set_difference(&fof::links(orig, space, b)?, &fof::links(recon, space, b)?);
        return Ok(broken + made);
    }
    Ok(vulnerable::violated(&vulnerable::pairs(orig, space, b, err), recon, space, b).len())
}

/// A pair of particle indices (i < j).
pub type Pair = (u32, u32);

/// The pairs in `a` and not in `b`, and in `b` and not in `a` (any order in;
/// sorted out): links broken and made, as `verify` counts them and
/// `verify --plot` marks them.
pub fn pair_difference(a: &[Pair], b: &[Pair]) -> (Vec<Pair>, Vec<Pair>) {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    let (mut i, mut j) = (0, 0);
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                only_a.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                only_b.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    only_a.extend_from_slice(&a[i..]);
    only_b.extend_from_slice(&b[j..]);
    (only_a, only_b)
}

/// Counts of [`pair_difference`]'s two lists.
fn set_difference(a: &[(u32, u32)], b: &[(u32, u32)]) -> (usize, usize) {
    let (only_a, only_b) = pair_difference(a, b);
    (only_a.len(), only_b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(s: &mut u64) -> f32 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*s >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Pairs linked in exactly one of the two sets, by brute force.
    fn brute(orig: &[f32], recon: &[f32], space: Space, b: f64) -> usize {
        let n = orig.len() / 3;
        let l = |p: &[f32], i: usize, j: usize| {
            linked(
                space.dist2(&p[3 * i..3 * i + 3], &p[3 * j..3 * j + 3]),
                b * b,
            )
        };
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| l(orig, i, j) != l(recon, i, j))
            .count()
    }

    #[test]
    fn changed_links_matches_brute_force() {
        let mut s = 5u64;
        let (n, l, b) = (600usize, 4.0f32, 0.3);
        let orig: Vec<f32> = (0..3 * n).map(|_| lcg(&mut s) * l).collect();
        for space in [Space::open(), Space::periodic(l as f64)] {
            for &e in &[0.0f32, 1e-4, 1e-2, 0.1, 0.5] {
                let mut recon: Vec<f32> = orig
                    .iter()
                    .map(|&x| x + e * (2.0 * lcg(&mut s) - 1.0))
                    .collect();
                let want = brute(&orig, &recon, space, b);
                assert_eq!(
                    changed_links(&orig, &recon, space, b).unwrap(),
                    want,
                    "e {e}"
                );
                if e == 0.01 {
                    assert!(want > 0, "the test should change some links");
                    recon[7] = f32::NAN;
                    let want = brute(&orig, &recon, space, b);
                    assert_eq!(changed_links(&orig, &recon, space, b).unwrap(), want, "NaN");
                }
            }
        }
    }
}
