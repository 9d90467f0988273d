//! Scaling study of `factz::dist` (cargo feature `mpi`):
//!
//!     mpirun -np N target/release/factz-dist-bench DATA.f32 --b B [--box L] [--rel X | --abs X]
//!
//! Every rank reads the snapshot (AoS float32), sorts it by x and keeps its slab
//! of N equal slabs (a domain decomposition), compresses it with
//! `dist::compress_particles`, and rank 0 prints one markdown row: ranks, ghosts,
//! cross-rank pairs and the particles stored exactly for them, bytes exchanged,
//! correction iterations, the slowest and mean rank times (imbalance), and the
//! ratio of the union of the streams. Timings on an oversubscribed machine say
//! more about volume and imbalance than about speed.
//!
//!     mpirun -np N target/release/factz-dist-bench FIELD.f32 --field NY NX [--rel X] [--mode b|s]
//!
//! Vector fields (u then v, NY x NX): each rank takes N equal bands of rows and
//! compresses them twice, with `dist::compress_field` (the chunk rule: block
//! perimeters stored exactly) and with `dist::compress_field_at` (the ring
//! exchange: border vertices capped, nothing stored exactly for the border);
//! rank 0 prints both ratios.

use factz::dist::mpi::{self, traits::*};
use factz::dist::{compress_field, compress_field_at, compress_particles, DistReport};
use factz::field::{FieldConfig, Mode};
use factz::particles::{Bound, Linking, ParticleConfig};

fn usage() -> ! {
    eprintln!(
        "usage: factz-dist-bench DATA.f32 --b B [--box L] [--rel X | --abs X] [--header]\n       \
         factz-dist-bench FIELD.f32 --field NY NX [--rel X] [--mode b|s] [--header]"
    );
    std::process::exit(2)
}

fn main() {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);

    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = ParticleConfig {
        bound: Bound::Rel(1e-5),
        ..ParticleConfig::default()
    };
    let (mut path, mut header, mut grid, mut mode) = (None, false, None, Mode::Speculative);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = || -> f64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "--b" => cfg.linking = Linking::Length(num()),
            "--box" => cfg.period = Some(num()),
            "--rel" => cfg.bound = Bound::Rel(num()),
            "--abs" => cfg.bound = Bound::Abs(num()),
            "--header" => header = true,
            "--field" => grid = Some((num() as usize, num() as usize)),
            "--mode" => {
                mode = match it.next().map(String::as_str) {
                    Some("b") => Mode::Blockwise,
                    Some("s") => Mode::Speculative,
                    _ => usage(),
                }
            }
            p if !p.starts_with("--") && path.is_none() => path = Some(p.to_string()),
            _ => usage(),
        }
    }
    let path = path.unwrap_or_else(|| usage());
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("factz-dist-bench: {path}: {e}");
        std::process::exit(1)
    });
    if let Some((ny, nx)) = grid {
        let rel = match cfg.bound {
            Bound::Rel(r) => r,
            _ => usage(),
        };
        return field_bench(&world, &bytes, ny, nx, rel, mode, header);
    }
    let mut all: Vec<[f32; 3]> = bytes
        .chunks_exact(12)
        .map(|c| {
            let f = |k: usize| f32::from_le_bytes([c[k], c[k + 1], c[k + 2], c[k + 3]]);
            [f(0), f(4), f(8)]
        })
        .collect();
    all.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let n = all.len();
    let (lo, hi) = (rank * n / size, (rank + 1) * n / size);
    let mine: Vec<f32> = all[lo..hi].concat();
    drop(all);

    world.barrier();
    let t = std::time::Instant::now();
    let (c, r) = compress_particles(&world, &mine, &cfg).unwrap_or_else(|e| {
        eprintln!("factz-dist-bench: rank {rank}: {e}");
        std::process::exit(1)
    });
    let total_s = t.elapsed().as_secs_f64();

    // One vector of W numbers per rank, gathered on rank 0.
    const W: usize = 13;
    let row = |r: &DistReport| -> [f64; W] {
        [
            (hi - lo) as f64,
            r.ghosts_received as f64,
            r.cross_pairs as f64,
            r.cross_exact as f64,
            r.bytes_sent as f64,
            c.report.correction.iterations as f64,
            c.bytes.len() as f64,
            r.exchange_s,
            r.cross_s,
            r.compress_s,
            total_s,
            r.neighbours as f64,
            r.setup_s,
        ]
    };
    let mine_row = row(&r);
    let root = world.process_at_rank(0);
    if rank == 0 {
        let mut rows = vec![0f64; W * size];
        root.gather_into_root(&mine_row[..], &mut rows[..]);
        let col = |k: usize| {
            rows.iter()
                .skip(k)
                .step_by(W)
                .copied()
                .collect::<Vec<f64>>()
        };
        let sum = |k: usize| col(k).iter().sum::<f64>();
        let max = |k: usize| col(k).iter().cloned().fold(0.0, f64::max);
        let mean = |k: usize| sum(k) / size as f64;
        if header {
            println!(
                "| ranks | neighbours (max) | ghosts (all ranks) | cross pairs | exact for them | \
                 MB exchanged | max iters | exchange s (max) | overlapped base s (max) | \
                 cross s (max) | compress s (max / mean) | imbalance | total s (max) | ratio |"
            );
            println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        }
        println!(
            "| {size} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} / {:.2} | {:.2} | {:.2} | {:.2} |",
            max(11),
            sum(1),
            sum(2) / 2.0, // each cross pair is counted by both its ranks
            sum(3),
            sum(4) / 1e6,
            max(5),
            max(7),
            max(12),
            max(8),
            max(9),
            mean(9),
            max(9) / mean(9).max(1e-9),
            max(10),
            12.0 * n as f64 / sum(6)
        );
    } else {
        root.gather_into(&mine_row[..]);
    }
}

/// The vector-field study: rows split in `size` bands, one stream per rank.
fn field_bench<C: Communicator>(
    world: &C,
    bytes: &[u8],
    ny: usize,
    nx: usize,
    rel: f64,
    mode: Mode,
    header: bool,
) {
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if values.len() != 2 * ny * nx {
        eprintln!(
            "factz-dist-bench: the file holds {} floats, not 2 x {ny} x {nx}",
            values.len()
        );
        std::process::exit(1)
    }
    let (j0, j1) = (rank * ny / size, (rank + 1) * ny / size);
    let u = &values[j0 * nx..j1 * nx];
    let v = &values[ny * nx + j0 * nx..ny * nx + j1 * nx];
    let cfg = FieldConfig {
        mode,
        bound: Bound::Rel(rel),
        ..FieldConfig::default()
    };
    let mut mine = [0f64; 4];
    for (k, halo) in [false, true].into_iter().enumerate() {
        world.barrier();
        let t = std::time::Instant::now();
        let c = if halo {
            compress_field_at(world, u, v, j1 - j0, nx, (j0, 0), &cfg)
        } else {
            compress_field(world, u, v, j1 - j0, nx, &cfg)
        }
        .unwrap_or_else(|e| {
            eprintln!("factz-dist-bench: rank {rank}: {e}");
            std::process::exit(1)
        });
        mine[2 * k] = c.bytes.len() as f64;
        mine[2 * k + 1] = t.elapsed().as_secs_f64();
    }
    let root = world.process_at_rank(0);
    if rank != 0 {
        root.gather_into(&mine[..]);
        return;
    }
    let mut rows = vec![0f64; 4 * size];
    root.gather_into_root(&mine[..], &mut rows[..]);
    let total = |k: usize| -> f64 { rows.iter().skip(k).step_by(4).sum() };
    let slowest = |k: usize| rows.iter().skip(k).step_by(4).cloned().fold(0.0, f64::max);
    // Vertices on the bands' perimeters, which the chunk rule stores exactly
    // (none with one rank: the whole field is one block).
    let perimeter: usize = if size == 1 {
        0
    } else {
        (0..size)
            .map(|r| {
                let h = (r + 1) * ny / size - r * ny / size;
                if h <= 2 {
                    h * nx
                } else {
                    2 * nx + 2 * (h - 2)
                }
            })
            .sum()
    };
    if header {
        println!(
            "| ranks | chunk rule: ratio | exact perimeter vertices | s (max) | ring exchange: ratio | s (max) |"
        );
        println!("|---:|---:|---:|---:|---:|---:|");
    }
    let raw = 8.0 * (ny * nx) as f64;
    println!(
        "| {size} | {:.2} | {perimeter} ({:.2}%) | {:.2} | {:.2} | {:.2} |",
        raw / total(0),
        100.0 * perimeter as f64 / (ny * nx) as f64,
        slowest(1),
        raw / total(2),
        slowest(3)
    );
}
