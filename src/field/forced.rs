//! Vertices every mode stores exactly (ARCHITECTURE.md, "Field guarantee and
//! exact vertices"): non-finite values (kept bit-exact), zero vectors, vertices
//! of degenerate triangles (m == 0), and the chunk perimeter when the field is
//! one chunk of a larger one.

use super::topology::{gather, quad_row, tri_vertices, triangle_count, Half, Sig};
use crate::real::Real;
use rayon::prelude::*;

/// Every forced vertex (the per-vertex rules plus vertices of degenerate triangles),
/// and every triangle's signature, found in the same pass over the triangles.
pub fn forced_exact_and_signatures<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    chunk_of_larger: bool,
) -> (Vec<bool>, Vec<Sig>) {
    let mut exact = forced_vertices(u, v, ny, nx, chunk_of_larger);
    let mut sigs = vec![Sig::NONE; triangle_count(ny, nx)];
    if sigs.is_empty() {
        return (exact, sigs);
    }
    // Degenerate triangles are rare: collect them per row in parallel, mark after.
    let degenerate: Vec<Vec<[usize; 3]>> = sigs
        .par_chunks_mut(2 * (nx - 1))
        .enumerate()
        .map(|(j, row)| {
            let mut found = Vec::new();
            let mut plain = vec![false; row.len()];
            T::plain_triangles(quad_row(u, v, nx, j), &mut plain);
            for i in 0..nx - 1 {
                for half in [Half::T0, Half::T1] {
                    if plain[2 * i + half as usize] {
                        continue; // Sig::NONE, not degenerate
                    }
                    let idx = tri_vertices(nx, i, j, half);
                    let (sig, degenerate) = T::classify_triangle(gather(u, v, idx), half);
                    row[2 * i + half as usize] = sig;
                    if degenerate {
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
    (exact, sigs)
}

/// The per-vertex rules only: non-finite values, zero vectors, the chunk perimeter
/// (mode B folds the degenerate-triangle rule into its per-triangle pass).
pub fn forced_vertices<T: Real>(
    u: &[T],
    v: &[T],
    ny: usize,
    nx: usize,
    chunk_of_larger: bool,
) -> Vec<bool> {
    let mut exact: Vec<bool> = u
        .par_iter()
        .zip(v)
        .map(|(&a, &b)| {
            !a.is_finite() || !b.is_finite() || (a.to_f64() == 0.0 && b.to_f64() == 0.0)
        })
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
