//! A block of a larger field without its perimeter stored exactly: the halo
//! alternative to the chunk rule.
//!
//! Triangles that cross from a block into its neighbours (the cells between the
//! block's border vertices and the one-vertex ring around it) have vertices on
//! two to four blocks, each encoded on its own. Every block computes, from the
//! *original* values of the block and of its ring, mode B's closed-form safe
//! relative bound of each crossing triangle (`triangle_constraint`), and caps
//! its own vertices of that triangle by it. The neighbour computes the same
//! number from the same values, so every vertex of a crossing triangle ends
//! within that triangle's bound, whichever block encodes it: no critical point
//! can appear there, and one that is there (bound -1) is kept by storing the
//! triangle's vertices exactly on every side. Triangles inside the block are the
//! encoder's own business, as usual.
//!
//! Only the ring's values travel (one vertex deep, original values), the
//! streams stay independent, and the border costs a few bits per vertex instead
//! of an exact value.

use super::safe_bound::triangle_constraint;
use super::topology::{tri_vertices, Half};
use crate::error::{Error, Result};

/// A block and the ring of vertices around it, as one `(ny + 2) x (nx + 2)`
/// grid: row 0 and column 0 are the ring above and to the left, and block
/// vertex (i, j) is at (i + 1, j + 1).
pub struct BlockWithRing {
    pub ny: usize,
    pub nx: usize,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
    /// Whether each grid vertex is known: the block always, the ring where a
    /// neighbour holds it (not beyond the edge of the whole field).
    pub known: Vec<bool>,
}

impl BlockWithRing {
    /// The block `u`, `v` (`ny x nx`) with an empty ring.
    pub fn new(u: &[f32], v: &[f32], ny: usize, nx: usize) -> Result<BlockWithRing> {
        let n = super::vertex_count(ny, nx)?;
        if u.len() != n || v.len() != n {
            return Err(Error::invalid(format!(
                "block {ny}x{nx} needs {n} values per component, got {} and {}",
                u.len(),
                v.len()
            )));
        }
        let w = nx + 2;
        let mut r = BlockWithRing {
            ny,
            nx,
            u: vec![f32::NAN; (ny + 2) * w],
            v: vec![f32::NAN; (ny + 2) * w],
            known: vec![false; (ny + 2) * w],
        };
        for j in 0..ny {
            let (dst, src) = ((j + 1) * w + 1, j * nx);
            r.u[dst..dst + nx].copy_from_slice(&u[src..src + nx]);
            r.v[dst..dst + nx].copy_from_slice(&v[src..src + nx]);
            r.known[dst..dst + nx].fill(true);
        }
        Ok(r)
    }

    /// Sets ring vertex (gi, gj) in grid coordinates (0..=nx+1, 0..=ny+1).
    pub fn set_ring(&mut self, gi: usize, gj: usize, u: f32, v: f32) {
        let k = gj * (self.nx + 2) + gi;
        self.u[k] = u;
        self.v[k] = v;
        self.known[k] = true;
    }

    fn in_block(&self, gi: usize, gj: usize) -> bool {
        (1..=self.nx).contains(&gi) && (1..=self.ny).contains(&gj)
    }

    /// The relative bound cap of every block vertex (row-major `ny x nx`):
    /// `+inf` when no crossing triangle constrains it, `-1` when one holds a
    /// critical point or is degenerate (store it exactly), else the smallest
    /// safe bound of its crossing triangles.
    pub fn caps(&self) -> Vec<f64> {
        let (ny, nx, w) = (self.ny, self.nx, self.nx + 2);
        let mut caps = vec![f64::INFINITY; ny * nx];
        // Cells of the grid with a block vertex and a ring vertex: the ring of
        // cells around the block (quads with lower-left corner (gi, gj)).
        for gj in 0..=ny {
            for gi in 0..=nx {
                let inner = (1..nx).contains(&gi) && (1..ny).contains(&gj);
                if inner {
                    continue; // all four corners in the block
                }
                for half in [Half::T0, Half::T1] {
                    let idx = tri_vertices(w, gi, gj, half);
                    if !idx.iter().all(|&k| self.known[k]) {
                        continue;
                    }
                    let own: Vec<usize> = idx
                        .iter()
                        .filter(|&&k| self.in_block(k % w, k / w))
                        .map(|&k| (k / w - 1) * nx + (k % w - 1))
                        .collect();
                    if own.is_empty() || own.len() == 3 {
                        continue;
                    }
                    let p = idx.map(|k| [self.u[k], self.v[k]]);
                    let e = triangle_constraint(p);
                    for k in own {
                        caps[k] = caps[k].min(e);
                    }
                }
            }
        }
        caps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_alone_has_no_caps_and_a_ring_caps_only_its_border() {
        let (ny, nx) = (4, 5);
        let u: Vec<f32> = (0..ny * nx).map(|k| 1.0 + k as f32 * 0.1).collect();
        let v: Vec<f32> = (0..ny * nx).map(|k| 2.0 - k as f32 * 0.05).collect();
        let mut r = BlockWithRing::new(&u, &v, ny, nx).unwrap();
        assert!(r.caps().iter().all(|c| c.is_infinite()));
        // A ring row above (grid row 0): only block row 0 gets caps.
        for gi in 0..nx + 2 {
            r.set_ring(gi, 0, 1.0, 2.0 + gi as f32 * 0.01);
        }
        let caps = r.caps();
        for j in 0..ny {
            for i in 0..nx {
                assert_eq!(caps[j * nx + i].is_finite(), j == 0, "({i}, {j})");
            }
        }
    }
}
