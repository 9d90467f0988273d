//! Independent friends-of-friends oracle and particle test sets. The oracle uses
//! nothing of the `factz` crate: all pairs by brute force, its own distance code
//! written from the link rule (f64 squared distance summed x, y, z, minimum image
//! `d - L * round(d / L)` in a periodic box, linked iff `d2 <= b * b`), and its own
//! union-find. The clustered sets come from `factz::synth`.

use super::fields::{cached, Rng};

/// A coordinate type the oracle reads: f32 or f64, widened to f64 exactly.
pub trait Coord: Copy + Into<f64> {
    fn bits(self) -> u64;
}
impl Coord for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Coord for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Squared distance per the link rule: each difference is the f64 `a - b` of
/// the coordinates widened to f64 (exact for f32, rounded for f64), wrapped to
/// the minimum image `d - L * round(d / L)`, then summed x, y, z.
pub fn dist2<T: Coord>(a: &[T], b: &[T], period: Option<f64>) -> f64 {
    let mut s = 0.0f64;
    for k in 0..3 {
        let mut d = a[k].into() - b[k].into();
        if let Some(l) = period {
            d -= l * (d / l).round();
        }
        s += d * d;
    }
    s
}

/// Every linked pair (i < j), by checking all pairs.
pub fn brute_links<T: Coord>(pos: &[T], period: Option<f64>, b: f64) -> Vec<(u32, u32)> {
    let n = pos.len() / 3;
    let b2 = b * b;
    let mut out = Vec::new();
    for i in 0..n {
        let pi = &pos[3 * i..3 * i + 3];
        for j in i + 1..n {
            if dist2(pi, &pos[3 * j..3 * j + 3], period) <= b2 {
                out.push((i as u32, j as u32));
            }
        }
    }
    out
}

/// Group of each particle: the smallest index reachable through links.
pub fn groups(n: usize, links: &[(u32, u32)]) -> Vec<usize> {
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            x = p[x];
        }
        x
    }
    let mut parent: Vec<usize> = (0..n).collect();
    for &(i, j) in links {
        let (a, b) = (root(&mut parent, i as usize), root(&mut parent, j as usize));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    (0..n).map(|k| root(&mut parent, k)).collect()
}

/// What the oracle says about a reconstruction.
#[derive(Debug)]
pub struct LinkCheck {
    pub links: usize,
    pub broken: usize,
    pub spurious: usize,
    pub same_groups: bool,
    pub bound_violations: usize,
}

impl LinkCheck {
    pub fn clean(&self) -> bool {
        self.broken == 0 && self.spurious == 0 && self.same_groups && self.bound_violations == 0
    }
}

/// Compare links, groups and the per-coordinate bound: `|r - a| <= xi` decided
/// exactly ([`within_exact`]; the rounded f64 difference could pass a value
/// just beyond the bound), non-finite values bit for bit.
pub fn check<T: Coord>(
    orig: &[T],
    recon: &[T],
    period: Option<f64>,
    b: f64,
    xi: f64,
    orig_links: &[(u32, u32)],
) -> LinkCheck {
    assert_eq!(
        orig.len(),
        recon.len(),
        "reconstruction has the wrong length"
    );
    let n = orig.len() / 3;
    let got = brute_links(recon, period, b);
    let want: std::collections::HashSet<_> = orig_links.iter().copied().collect();
    let have: std::collections::HashSet<_> = got.iter().copied().collect();
    let bound_violations = orig
        .iter()
        .zip(recon)
        .filter(|(&a, &r)| {
            let (a64, r64) = (a.into(), r.into());
            if a64.is_finite() {
                !(r64.is_finite() && within_exact(r64, a64, xi))
            } else {
                a.bits() != r.bits()
            }
        })
        .count();
    LinkCheck {
        links: want.len(),
        broken: want.difference(&have).count(),
        spurious: have.difference(&want).count(),
        same_groups: groups(n, orig_links) == groups(n, &got),
        bound_violations,
    }
}

/// Clustered particles from `factz::synth::Particles` (AoS, periodic box of
/// side `box_side`), cached. `options` are `factz synth`'s: `--sigma20 X`,
/// `--order lattice|shuffle`.
pub fn synth_particles(nside: usize, seed: u64, box_side: f64, options: &[&str]) -> Vec<f32> {
    let mut spec = factz::synth::Particles::new(nside, seed, box_side);
    for pair in options.chunks(2) {
        let value = *pair
            .get(1)
            .unwrap_or_else(|| panic!("{options:?}: no value"));
        match (pair[0], value) {
            ("--sigma20", x) => spec.sigma20 = x.parse().expect("--sigma20 number"),
            ("--order", "shuffle") => spec.order = factz::synth::Order::Shuffle,
            ("--order", "lattice") => spec.order = factz::synth::Order::Lattice,
            (o, _) => panic!("unknown particle option {o} {value}"),
        }
    }
    let key = format!(
        "part_n{nside}_s{seed}_L{box_side}_ns{}_sig{}_{:?}",
        spec.ns, spec.sigma20, spec.order
    );
    let bytes = cached(&key, 12 * nside * nside * nside, || {
        let set = spec
            .generate(&mut |_| {})
            .unwrap_or_else(|e| panic!("particles {nside}^3 seed {seed}: {e}"));
        set.pos.iter().flat_map(|x| x.to_le_bytes()).collect()
    });
    super::fields::f32s(&bytes)
}

/// Mean separation of n particles in a box of side l: FoF's b is 0.2 of it.
pub fn fof_b(n: usize, l: f64) -> f64 {
    0.2 * l / (n as f64).cbrt()
}

/// A named adversarial set with its linking length and box.
pub struct Case {
    pub name: String,
    pub pos: Vec<f32>,
    pub b: f64,
    pub period: Option<f64>,
}

/// Sets built to break a FoF-preserving compressor: pairs at exactly b,
/// duplicates, everything in one cell, a dense lattice of ties, non-finite values,
/// particles straddling the periodic boundary.
pub fn adversarial(seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    // Chains and a cubic lattice at spacing exactly b (0.25 is a power of two, so
    // every distance along an axis is exactly b).
    let b = 0.25f64;
    let mut lattice = Vec::new();
    for z in 0..6 {
        for y in 0..6 {
            for x in 0..6 {
                lattice.extend([x as f32 * 0.25, y as f32 * 0.25, z as f32 * 0.25]);
            }
        }
    }
    out.push(Case {
        name: "lattice at exactly b".into(),
        pos: lattice.clone(),
        b,
        period: None,
    });
    out.push(Case {
        name: "lattice at exactly b, periodic".into(),
        pos: lattice,
        b,
        period: Some(1.5),
    });
    // Pairs straddling b by one ulp either way, randomly oriented along axes.
    let mut ties = Vec::new();
    for k in 0..200 {
        let base = [
            rng.range(0.0, 20.0) as f32,
            rng.range(0.0, 20.0) as f32,
            rng.range(0.0, 20.0) as f32,
        ];
        let axis = k % 3;
        let mut other = base;
        let d = match k % 3 {
            0 => 0.25f32,
            1 => f32::from_bits(0.25f32.to_bits() + 1),
            _ => f32::from_bits(0.25f32.to_bits() - 1),
        };
        other[axis] = base[axis] + d;
        ties.extend(base);
        ties.extend(other);
    }
    out.push(Case {
        name: "pairs at b and b +- 1 ulp".into(),
        pos: ties,
        b,
        period: None,
    });
    // Duplicates and near-duplicates.
    let mut dup = Vec::new();
    for _ in 0..150 {
        let p = [
            rng.range(0.0, 5.0) as f32,
            rng.range(0.0, 5.0) as f32,
            rng.range(0.0, 5.0) as f32,
        ];
        dup.extend(p);
        dup.extend(p);
        dup.extend([p[0] + 1e-6, p[1], p[2]]);
    }
    out.push(Case {
        name: "duplicates".into(),
        pos: dup,
        b: 0.3,
        period: None,
    });
    // Everything within one linking length: one cell, one group.
    let one: Vec<f32> = (0..3 * 300).map(|_| rng.range(0.0, 0.1) as f32).collect();
    out.push(Case {
        name: "all in one cell".into(),
        pos: one,
        b: 0.2,
        period: None,
    });
    // Dense random cloud near the percolation threshold.
    let cloud: Vec<f32> = (0..3 * 1500).map(|_| rng.range(0.0, 10.0) as f32).collect();
    out.push(Case {
        name: "random cloud".into(),
        pos: cloud.clone(),
        b: 0.9,
        period: None,
    });
    out.push(Case {
        name: "random cloud, periodic".into(),
        pos: cloud.clone(),
        b: 0.9,
        period: Some(10.0),
    });
    // Non-finite coordinates sprinkled into the cloud.
    let mut bad = cloud;
    for k in 0..bad.len() / 3 {
        match rng.below(40) {
            0 => bad[3 * k] = f32::NAN,
            1 => bad[3 * k + 1] = f32::INFINITY,
            2 => bad[3 * k + 2] = f32::NEG_INFINITY,
            3 => bad[3 * k] = f32::from_bits(0x7fc0_1234), // NaN with a payload
            _ => {}
        }
    }
    out.push(Case {
        name: "NaN and Inf".into(),
        pos: bad,
        b: 0.9,
        period: None,
    });
    // Particles at both faces of a periodic box (links through the boundary).
    let mut faces = Vec::new();
    for _ in 0..400 {
        let x = if rng.below(2) == 0 {
            rng.range(0.0, 0.3)
        } else {
            rng.range(9.7, 10.0)
        };
        faces.extend([
            x as f32,
            rng.range(0.0, 2.0) as f32,
            rng.range(0.0, 2.0) as f32,
        ]);
    }
    out.push(Case {
        name: "periodic faces".into(),
        pos: faces.clone(),
        b: 0.3,
        period: Some(10.0),
    });
    // A periodic set written outside the box, up to one side beyond either
    // face (unwrapped positions): images of the face particles shifted by
    // -L, 0, +L per coordinate, so links go through every wrap multiple.
    let shifted: Vec<f32> = faces
        .iter()
        .map(|&x| x + 10.0 * (rng.below(3) as f32 - 1.0))
        .collect();
    out.push(Case {
        name: "periodic, positions up to a side outside the box".into(),
        pos: shifted,
        b: 0.3,
        period: Some(10.0),
    });
    // A box thousands of b wide with coordinates far under 2^-29 of their
    // partners' across the face: the f64 difference of two f32 rounds there.
    let mut wide = Vec::new();
    for k in 0..300 {
        let near0 = match k % 3 {
            0 => 1e-30f32,
            1 => f32::from_bits(1),
            _ => rng.range(0.0, 1e-9) as f32,
        };
        let x = if rng.below(2) == 0 {
            near0
        } else {
            4000.0 - rng.range(0.0, 0.5) as f32
        };
        wide.extend([x, rng.range(0.0, 1.0) as f32, rng.range(0.0, 1.0) as f32]);
    }
    out.push(Case {
        name: "periodic box 10^4 b wide, tiny coordinates at a face".into(),
        pos: wide,
        b: 0.4,
        period: Some(4000.0),
    });
    // Tiny sets.
    out.push(Case {
        name: "N = 1".into(),
        pos: vec![1.0, 2.0, 3.0],
        b: 0.5,
        period: None,
    });
    out.push(Case {
        name: "N = 2 linked".into(),
        pos: vec![0.0, 0.0, 0.0, 0.5, 0.0, 0.0],
        b: 0.5,
        period: None,
    });
    out.push(Case {
        name: "N = 2 unlinked".into(),
        pos: vec![0.0, 0.0, 0.0, 0.5, 0.0, 0.0],
        b: 0.4999,
        period: None,
    });
    out
}

/// Whether `|r - a| <= xi` exactly (f64 differences round, so the rounded
/// difference alone could pass a value just beyond the bound): two-sum gives
/// `r - a = s + e` exactly; at `|s| == xi` the sign of `e` decides.
pub fn within_exact(r: f64, a: f64, xi: f64) -> bool {
    let s = r - a;
    let bb = s - r;
    let e = (r - (s - bb)) + (-a - bb);
    s.abs() < xi || (s.abs() == xi && (e == 0.0 || (e < 0.0) == (s > 0.0)))
}
