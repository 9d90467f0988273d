//! Vertices every mode stores exactly (DESIGN.md's guarantee): non-finite values
//! (kept bit-exact), zero vectors, vertices of degenerate triangles (m == 0), and the
//! chunk perimeter when the field is one chunk of a larger one.

use super::topology::{gather, is_degenerate, tri_vertices, Half};
use rayon::prelude::*;

/// Every forced vertex: the per-vertex rules plus vertices of degenerate triangles.
pub fn forced_exact(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    chunk_of_larger: bool,
) -> Vec<bool> {
    let mut exact = forced_vertices(u, v, ny, nx, chunk_of_larger);
    if ny >= 2 && nx >= 2 {
        // Degenerate triangles are rare: find them row by row in parallel, mark after.
        let degenerate: Vec<Vec<[usize; 3]>> = (0..ny - 1)
            .into_par_iter()
            .map(|j| {
                let mut found = Vec::new();
                for i in 0..nx - 1 {
                    for half in [Half::T0, Half::T1] {
                        let idx = tri_vertices(nx, i, j, half);
                        let p = gather(u, v, idx);
                        let finite = p.iter().all(|q| q[0].is_finite() && q[1].is_finite());
                        if finite && is_degenerate(p) {
                            found.push(idx);
                        }
                    }
                }
                found
            })
            .collect();
        for idx in degenerate.into_iter().flatten() {
            for k in idx {
                exact[k] = true;
            }
        }
    }
    exact
}

/// The per-vertex rules only: non-finite values, zero vectors, the chunk perimeter
/// (mode B folds the degenerate-triangle rule into its per-triangle pass).
pub fn forced_vertices(
    u: &[f32],
    v: &[f32],
    ny: usize,
    nx: usize,
    chunk_of_larger: bool,
) -> Vec<bool> {
    let mut exact: Vec<bool> = u
        .par_iter()
        .zip(v)
        .map(|(&a, &b)| !a.is_finite() || !b.is_finite() || (a == 0.0 && b == 0.0))
        .collect();
    if chunk_of_larger {
        for i in 0..nx {
            exact[i] = true;
            exact[(ny - 1) * nx + i] = true;
        }
        for j in 0..ny {
            exact[j * nx] = true;
            exact[j * nx + nx - 1] = true;
        }
    }
    exact
}
