//! Vulnerable pairs: the only pairs whose link status a perturbation within the
//! bound can change, `(b - w, b + w]` with `w = 2 sqrt(3) xi` (widened a hair, see
//! [`vulnerable_halfwidth`], and for f64 in a periodic box by
//! [`super::geometry::rounding_slack`]). Every other pair keeps its status whatever the base
//! compressor does, so correction and checks look at these pairs only.

use super::geometry::{halfwidth_of, linked, vulnerable_halfwidth, Space};
use super::grid::Grid;
use crate::real::Real;
use rayon::prelude::*;

/// A pair (i < j) and whether it is linked in the original positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub i: u32,
    pub j: u32,
    pub linked: bool,
}

/// Squared-distance window `[lo2, hi2]` of vulnerable pairs (`lo2 < 0` when the
/// window reaches distance 0).
pub fn window(b: f64, xi: f64) -> (f64, f64) {
    window_of(b, vulnerable_halfwidth(b, xi))
}

/// [`window`] of half-width `w` ([`super::geometry::halfwidth_of`]).
pub fn window_of(b: f64, w: f64) -> (f64, f64) {
    let lo = b - w;
    (if lo > 0.0 { lo * lo } else { -1.0 }, (b + w) * (b + w))
}

/// Every vulnerable pair of the original positions, found on a grid of cell side
/// `b + w` (forward-neighbour search), in an order that depends only on the input.
pub fn pairs<T: Real>(pos: &[T], space: Space, b: f64, xi: f64) -> Vec<Pair> {
    let (lo2, hi2) = window_of(b, halfwidth_of(pos, space, b, xi));
    let b2 = b * b;
    Grid::build(pos, space, hi2.sqrt()).pairs_beyond(pos, space, lo2, |i, j, d2| {
        (d2 >= lo2 && d2 <= hi2).then_some(Pair {
            i,
            j,
            linked: linked(d2, b2),
        })
    })
}

/// The pairs whose link status differs in `recon` (AoS, same order), in pair
/// order, found in parallel.
pub fn violated<T: Real>(pairs: &[Pair], recon: &[T], space: Space, b: f64) -> Vec<Pair> {
    let found: Vec<Vec<Pair>> = pairs
        .par_chunks(PART)
        .map(|part| changed_in(part, recon, space, b * b))
        .collect();
    found.concat()
}

/// [`violated`] of one run of pairs, a plain loop (an iterator chain per pair
/// cost a sixth more).
fn changed_in<T: Real>(part: &[Pair], recon: &[T], space: Space, b2: f64) -> Vec<Pair> {
    let mut out = Vec::new();
    for p in part {
        let (i, j) = (p.i as usize, p.j as usize);
        let d2 = space.dist2(&recon[3 * i..3 * i + 3], &recon[3 * j..3 * j + 3]);
        if linked(d2, b2) != p.linked {
            out.push(*p);
        }
    }
    out
}

/// Pairs in search order, kept as the parallel search's tasks left them, one
/// part each: at loose bounds there are tens of millions, and one array would
/// cost a copy (and its page faults) of hundreds of MB per list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairList {
    parts: Vec<Vec<Pair>>,
    /// Least and greatest particle index in each part (`(1, 0)` if empty).
    spans: Vec<(u32, u32)>,
}

/// Pairs per part when a [`PairList`] is made from one array.
const PART: usize = 1 << 16;

/// Pairs per part as a search pushes them ([`Parts`]).
const PUSHED_PART: usize = 1 << 13;

/// Pairs pushed one at a time into parts of a fixed capacity, never grown:
/// a growing array copied itself into fresh memory at each doubling, and
/// those copies and page faults were a third of a search's faults.
#[derive(Debug, Default)]
pub struct Parts {
    full: Vec<Vec<Pair>>,
    open: Vec<Pair>,
}

impl Parts {
    #[inline]
    pub fn push(&mut self, p: Pair) {
        if self.open.len() == self.open.capacity() {
            let next = Vec::with_capacity(PUSHED_PART);
            let done = std::mem::replace(&mut self.open, next);
            if !done.is_empty() {
                self.full.push(done);
            }
        }
        self.open.push(p);
    }

    /// The parts, in push order.
    pub fn into_parts(mut self) -> Vec<Vec<Pair>> {
        if !self.open.is_empty() {
            self.full.push(self.open);
        }
        self.full
    }
}

impl PairList {
    /// The parts' pairs in order.
    pub fn from_parts(parts: Vec<Vec<Pair>>) -> PairList {
        let spans = parts
            .par_iter()
            .map(|p| {
                p.iter().fold((u32::MAX, 0), |(lo, hi), q| {
                    (lo.min(q.i.min(q.j)), hi.max(q.i.max(q.j)))
                })
            })
            .map(|(lo, hi)| if lo > hi { (1, 0) } else { (lo, hi) })
            .collect();
        PairList { parts, spans }
    }
    pub fn len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(Vec::is_empty)
    }
    pub fn iter(&self) -> impl Iterator<Item = &Pair> + '_ {
        self.parts.iter().flatten()
    }
    /// In parallel, part by part; `collect` keeps the order.
    pub fn par_iter(&self) -> PairsPar<'_> {
        self.into_par_iter()
    }
    /// The parts whose index span `[lo, hi]` `hit(lo, hi)` accepts, in
    /// parallel: a pass that wants only pairs with a particle in a small set
    /// skips the parts that cannot hold one (pairs found by a spatial search
    /// in cell order have narrow spans), and loops over each part's pairs
    /// itself.
    pub fn par_parts_spanning<'a>(
        &'a self,
        hit: impl Fn(u32, u32) -> bool + Sync + Send + 'a,
    ) -> impl ParallelIterator<Item = &'a [Pair]> + 'a {
        self.parts
            .par_iter()
            .zip(&self.spans)
            .filter(move |(_, &(lo, hi))| lo <= hi && hit(lo, hi))
            .map(|(p, _)| &p[..])
    }
    /// [`violated`] part by part, in pair order.
    pub fn violated<T: Real>(&self, recon: &[T], space: Space, b: f64) -> Vec<Pair> {
        let found: Vec<Vec<Pair>> = self
            .parts
            .par_iter()
            .map(|part| changed_in(part, recon, space, b * b))
            .collect();
        found.concat()
    }
    pub fn to_vec(&self) -> Vec<Pair> {
        self.iter().copied().collect()
    }
}

impl From<&[Pair]> for PairList {
    fn from(pairs: &[Pair]) -> PairList {
        PairList::from_parts(pairs.chunks(PART).map(<[Pair]>::to_vec).collect())
    }
}

/// [`PairList::par_iter`]'s iterator.
pub type PairsPar<'a> = rayon::iter::FlatMapIter<
    rayon::slice::Iter<'a, Vec<Pair>>,
    fn(&Vec<Pair>) -> std::slice::Iter<'_, Pair>,
>;

impl<'a> IntoParallelIterator for &'a PairList {
    type Item = &'a Pair;
    type Iter = PairsPar<'a>;
    fn into_par_iter(self) -> PairsPar<'a> {
        let part: fn(&Vec<Pair>) -> std::slice::Iter<'_, Pair> = |p| p.iter();
        self.parts.par_iter().flat_map_iter(part)
    }
}
