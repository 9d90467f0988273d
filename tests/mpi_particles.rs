//! Distributed particle compression under real MPI (`mpirun --oversubscribe -np N`,
//! N = 1..4): every rank compresses its own slab with `factz::dist`, decodes its
//! own stream, and rank 0 gathers the decoded union and checks it against the
//! original with the independent all-pairs FoF oracle of `tests/common`: zero
//! changed links over the whole domain, every coordinate in bound.
//!
//! A `harness = false` test (Cargo.toml): run by `cargo test`, it starts itself
//! under mpirun once per case with FACTZ_MPI_CASE set. Needs Open MPI
//! (`scripts/setup` installs it) and the cargo feature `mpi`.

#[path = "common/cbuild.rs"]
mod cbuild;
mod common;

use common::particles as po;
use factz::dist::compress_particles;
use factz::dist::mpi::{self, datatype::PartitionMut, traits::*, Count};
use factz::particles::{decompress, Bound, Linking, ParticleConfig};
use std::process::Command;

const CASES: [&str; 8] = [
    "periodic-even",
    "periodic-zero-first",
    "periodic-all-last",
    "open-even",
    "open-uneven",
    "eta-rel-even",
    "one-rank-fails",
    "without-ghosts-breaks-links",
];

fn main() {
    match std::env::var("FACTZ_MPI_CASE") {
        Ok(case) => child(&case),
        Err(_) => parent(),
    }
}

/// Runs every case under mpirun with 1 to 4 ranks.
fn parent() {
    // Generate (and cache) the data once, before several ranks want it.
    let _ = data();
    let exe = std::env::current_exe().expect("current_exe");
    let mut failed = Vec::new();
    for n in 1..=4 {
        for case in CASES {
            if case == "without-ghosts-breaks-links" && n == 1 {
                continue; // one rank has no cross-rank links to break
            }
            let out = Command::new("mpirun")
                .args(["--allow-run-as-root", "--oversubscribe", "-np"])
                .arg(n.to_string())
                .arg(&exe)
                .env("FACTZ_MPI_CASE", case)
                .output()
                .expect("running mpirun (scripts/setup installs Open MPI)");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let ok = out.status.success();
            println!(
                "{} -np {n} {case}: {}",
                if ok { "ok  " } else { "FAIL" },
                text.trim()
            );
            if !ok {
                failed.push(format!("-np {n} {case}"));
            }
        }
    }
    failed.extend(c_program());
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// tests/c/particles_mpi.c through include/factz_mpi.h (MPI_Comm and the
/// Fortran handle), checked by the oracle here on the union rank 0 gathered.
fn c_program() -> Vec<String> {
    let exe =
        cbuild::build_shared_with("mpicc", "mpi_particles", "particles_mpi.c", "particles_mpi");
    let dir = cbuild::work_dir("mpi_particles");
    let (all, l) = data();
    let raw = dir.join("sorted.f32");
    std::fs::write(
        &raw,
        all.iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let n = all.len() / 3;
    let (b, xi) = (po::fof_b(n, l), 1e-2);
    let links = po::brute_links(&all, Some(l), b);
    let mut failed = Vec::new();
    for np in [1, 3, 4] {
        for how in ["c", "f", "bad"] {
            let out = dir.join(format!("union-{np}-{how}.f32"));
            let run = Command::new("mpirun")
                .args(["--allow-run-as-root", "--oversubscribe", "-np"])
                .arg(np.to_string())
                .arg(&exe)
                .arg(how)
                .arg(&raw)
                .arg(n.to_string())
                .args([b.to_string(), l.to_string(), xi.to_string()])
                .arg(&out)
                .output()
                .expect("running mpirun");
            let text = String::from_utf8_lossy(&run.stdout).trim().to_string()
                + String::from_utf8_lossy(&run.stderr).trim();
            let ok = run.status.success()
                && (how == "bad" || {
                    let union: Vec<f32> = std::fs::read(&out)
                        .unwrap_or_default()
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    union.len() == all.len()
                        && po::check(&all, &union, Some(l), b, xi, &links).clean()
                });
            println!(
                "{} C -np {np} {how}: {text}",
                if ok { "ok  " } else { "FAIL" }
            );
            if !ok {
                failed.push(format!("C program -np {np} {how}"));
            }
        }
    }
    failed
}

/// The particle set (sorted by x so that consecutive slabs are spatially
/// disjoint) and its box side.
fn data() -> (Vec<f32>, f64) {
    let l = 50.0;
    let pos = po::datagen_particles(16, 3, l, &[]);
    let mut p: Vec<[f32; 3]> = pos.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    p.sort_by(|a, b| a[0].total_cmp(&b[0]));
    (p.concat(), l)
}

/// This rank's slab [lo, hi) of n particles for a decomposition.
fn slab(n: usize, ranks: usize, rank: usize, how: &str) -> (usize, usize) {
    let cut = |k: usize| -> usize {
        match how {
            // Rank 0 gets nothing, the rest share evenly.
            "zero-first" if ranks > 1 => {
                if k == 0 {
                    0
                } else {
                    (k - 1) * n / (ranks - 1)
                }
            }
            // The last rank gets everything.
            "all-last" => {
                if k < ranks {
                    0
                } else {
                    n
                }
            }
            // Quadratic cuts: slabs of very different sizes.
            "uneven" => k * k * n / (ranks * ranks),
            _ => k * n / ranks,
        }
    };
    (cut(rank), if rank + 1 == ranks { n } else { cut(rank + 1) })
}

fn child(case: &str) {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let (family, how) = case.split_once('-').unwrap();
    let periodic = family != "open";
    let (all, l) = data();
    let n = all.len() / 3;
    let period = periodic.then_some(l);
    let b = if periodic {
        po::fof_b(n, l)
    } else {
        1.5 * po::fof_b(n, l)
    };
    let mut cfg = ParticleConfig {
        bound: Bound::Abs(1e-2),
        linking: Linking::Length(b),
        period,
        ..ParticleConfig::default()
    };
    let (lo, hi) = slab(n, size, rank, how);
    let mine = &all[3 * lo..3 * hi];

    match case {
        "one-rank-fails" => {
            // The last rank passes a bad bound; every rank must get an error.
            if rank + 1 == size {
                cfg.bound = Bound::Abs(-1.0);
            }
            let got = compress_particles(&world, mine, &cfg);
            assert!(got.is_err(), "rank {rank}: expected an error");
            let msg = got.unwrap_err().to_string();
            assert!(msg.contains("rank"), "rank {rank}: {msg}");
            if rank == 0 {
                println!("every rank returned an error: {msg}");
            }
            return;
        }
        "eta-rel-even" => {
            cfg.bound = Bound::Rel(1e-4);
            cfg.linking = Linking::Eta(0.2);
        }
        _ => {}
    }

    let (decoded, b_used, xi_used, stats) = if case == "without-ghosts-breaks-links" {
        // Each rank alone, no ghosts and no chunk rule: links across ranks are
        // at the mercy of the base compressor (the oracle must see that).
        let c = factz::particles::compress(mine, &cfg).expect("compress");
        let d = decompress(&c.bytes).expect("decompress").pos;
        (d, b, 1e-2, String::new())
    } else {
        let (c, r) = compress_particles(&world, mine, &cfg).expect("compress_particles");
        let d = decompress(&c.bytes).expect("decompress").pos;
        let stats = format!(
            "rank {rank}: {} particles, {} ghosts in, {} out, {} cross pairs, {} exact for them",
            hi - lo,
            r.ghosts_received,
            r.ghosts_sent,
            r.cross_pairs,
            r.cross_exact
        );
        (d, r.linking_length, r.abs_bound, stats)
    };

    // Gather the decoded slabs (in rank order: the original order) and the stats.
    let root = world.process_at_rank(0);
    let count = decoded.len() as Count;
    if rank == 0 {
        let mut counts = vec![0 as Count; size];
        root.gather_into_root(&count, &mut counts[..]);
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |a, &c| {
                let d = *a;
                *a += c;
                Some(d)
            })
            .collect();
        let mut union = vec![0f32; all.len()];
        {
            let mut part = PartitionMut::new(&mut union[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(&decoded[..], &mut part);
        }
        let links = po::brute_links(&all, period, b_used);
        let check = po::check(&all, &union, period, b_used, xi_used, &links);
        if case == "without-ghosts-breaks-links" {
            assert!(
                check.broken + check.spurious > 0,
                "independent ranks kept every link: the case shows nothing ({check:?})"
            );
            println!("independent ranks change links, as expected: {check:?}");
        } else {
            assert!(check.clean() && check.links > 100, "{case}: {check:?}");
            println!("{} links, 0 changed; {stats}", check.links);
        }
    } else {
        root.gather_into(&count);
        root.gather_varcount_into(&decoded[..]);
        if !stats.is_empty() {
            eprintln!("{stats}");
        }
    }
}
