//! Friends-of-friends: links from the cell grid, groups by union-find, and the
//! halo catalogue and mass function users analyse afterwards.

use super::geometry::{check_linking, check_positions, linked, Space};
use super::grid::Grid;
use crate::error::{Error, Result};
use crate::real::Real;

/// Union-find over particle indices; the root of a set is its smallest index, so
/// labels are canonical (the same partition always gives the same labels).
pub struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    pub fn new(n: usize) -> UnionFind {
        UnionFind {
            parent: (0..n as u32).collect(),
        }
    }

    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize]; // path halving
            x = p;
        }
        x
    }

    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }

    /// Every element's root (its group's smallest index).
    pub fn labels(mut self) -> Vec<u32> {
        (0..self.parent.len() as u32)
            .map(|k| self.find(k))
            .collect()
    }
}

/// Every linked pair (i < j) of AoS positions under linking length `b`
/// ([`check_linking`]'s rule).
pub fn links<T: Real>(pos: &[T], space: Space, b: f64) -> Result<Vec<(u32, u32)>> {
    check_linking(b, space)?;
    check_positions(pos, space)?;
    let b2 = b * b;
    Ok(Grid::build(pos, space, b).pairs(pos, space, |i, j, d2| linked(d2, b2).then_some((i, j))))
}

/// FoF group label of every particle: the smallest particle index in its group.
/// Particles with a non-finite coordinate are singletons.
pub fn labels<T: Real>(pos: &[T], space: Space, b: f64) -> Result<Vec<u32>> {
    Ok(group_labels(pos.len() / 3, &links(pos, space, b)?))
}

/// Group labels of n particles joined by `links`.
pub fn group_labels(n: usize, links: &[(u32, u32)]) -> Vec<u32> {
    let mut uf = UnionFind::new(n);
    for &(i, j) in links {
        uf.union(i, j);
    }
    uf.labels()
}

/// One FoF group of at least the catalogue's minimum size.
#[derive(Debug, Clone, PartialEq)]
pub struct Halo {
    /// Smallest member index (the group's label).
    pub label: u32,
    /// Member indices, ascending.
    pub members: Vec<u32>,
}

/// Groups with at least `min_members` members, largest first (ties by label).
/// Labels are particle indices (as [`labels`] gives); one out of range is an
/// error (it names no particle: the labelling is not one of this set).
pub fn halos(labels: &[u32], min_members: usize) -> Result<Vec<Halo>> {
    let n = labels.len();
    if let Some(k) = labels.iter().position(|&l| l as usize >= n) {
        return Err(Error::invalid(format!(
            "labels[{k}] is {}; every label must be a particle index below n = {n}",
            labels[k]
        )));
    }
    let mut size = vec![0u32; n];
    for &l in labels {
        size[l as usize] += 1;
    }
    let mut slot = vec![u32::MAX; n];
    let mut out: Vec<Halo> = Vec::new();
    for (k, &l) in labels.iter().enumerate() {
        if (size[l as usize] as usize) < min_members.max(1) {
            continue;
        }
        if slot[l as usize] == u32::MAX {
            slot[l as usize] = out.len() as u32;
            out.push(Halo {
                label: l,
                members: Vec::with_capacity(size[l as usize] as usize),
            });
        }
        out[slot[l as usize] as usize].members.push(k as u32);
    }
    out.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then(a.label.cmp(&b.label))
    });
    Ok(out)
}

/// Halo mass function: counts of halos per logarithmic bin of member count.
#[derive(Debug, Clone, PartialEq)]
pub struct MassFunction {
    /// Bin edges in member count, `bins + 1` values, log-spaced.
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
}

/// Default number of mass-function bins.
pub const HMF_BINS: usize = 50;

/// Mass function of the halos' sizes over `bins` log bins from `min_members` to
/// `max_members` (both inclusive; the last bin is closed).
pub fn mass_function(
    sizes: impl Iterator<Item = usize>,
    min_members: usize,
    max_members: usize,
    bins: usize,
) -> MassFunction {
    let bins = bins.max(1);
    let (lo, hi) = (
        min_members.max(1) as f64,
        max_members.max(min_members.max(1)) as f64,
    );
    let (llo, lhi) = (lo.ln(), (hi.ln()).max(lo.ln() + 1e-12));
    let edges: Vec<f64> = (0..=bins)
        .map(|k| (llo + (lhi - llo) * k as f64 / bins as f64).exp())
        .collect();
    let mut counts = vec![0u64; bins];
    for s in sizes {
        let s = s as f64;
        if s < lo || s > hi {
            continue;
        }
        let t = ((s.ln() - llo) / (lhi - llo) * bins as f64).floor();
        counts[(t.max(0.0) as usize).min(bins - 1)] += 1;
    }
    MassFunction { edges, counts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_links_into_one_group() {
        // 0-1-2 chained at exactly b, 3 apart, 4 non-finite.
        let pos = [
            0.0f32,
            0.0,
            0.0,
            0.5,
            0.0,
            0.0,
            1.0,
            0.0,
            0.0,
            5.0,
            5.0,
            5.0,
            f32::NAN,
            0.0,
            0.0,
        ];
        let l = labels(&pos, Space::open(), 0.5).unwrap();
        assert_eq!(l, vec![0, 0, 0, 3, 4]);
        let h = halos(&l, 2).unwrap();
        assert_eq!(
            h,
            vec![Halo {
                label: 0,
                members: vec![0, 1, 2]
            }]
        );
        let l = labels(&pos, Space::open(), 0.4999).unwrap();
        assert_eq!(l, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn invalid_linking_lengths_and_labels_are_errors() {
        use crate::error::ErrorKind;
        let pos = [0.0f32, 0.0, 0.0, 0.1, 0.0, 0.0];
        for (b, space) in [
            (0.0, Space::open()),
            (-1.0, Space::open()),
            (f64::NAN, Space::open()),
            (f64::INFINITY, Space::open()),
            (2.6, Space::periodic(5.0)),
            (0.2, Space::periodic(f64::NAN)),
            (0.2, Space::periodic(0.0)),
        ] {
            let e = labels(&pos, space, b).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "b {b} {space:?}");
            assert!(links(&pos, space, b).is_err());
        }
        // Half the box exactly is allowed.
        assert_eq!(labels(&pos, Space::periodic(5.0), 2.5).unwrap(), vec![0, 0]);
        let e = halos(&[0, 0, 3], 1).unwrap_err();
        assert!(e.message.contains("labels[2] is 3"), "{}", e.message);
        assert_eq!(halos(&[0, 0, 1], 1).unwrap().len(), 2);
    }

    #[test]
    fn mass_function_bins_every_halo() {
        let m = mass_function([20usize, 20, 40, 1000, 5000].into_iter(), 20, 5000, 10);
        assert_eq!(m.counts.iter().sum::<u64>(), 5);
        assert_eq!(m.counts[0], 2);
        assert_eq!(m.counts[9], 1);
    }
}
