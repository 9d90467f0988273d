//! Support shared by the end-to-end tests that drive real programs (HDF5, ADIOS2,
//! MPI): running commands, raw float32 files, field layouts, and the oracle
//! checks over whole fields and particle sets. Uses no factz code.

use super::fields::Field;
use super::oracle;
use super::particles as po;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command that must succeed; panics with its output otherwise.
pub fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e} (scripts/setup installs it)"));
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A command that must fail cleanly: a non-zero exit status (not a signal) and a
/// message that names the problem.
pub fn must_fail(cmd: &mut Command, what: &str, needle: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "{what}: expected a clean failure, got {:?}:\n{text}",
        out.status
    );
    assert!(
        text.contains(needle),
        "{what}: the message does not say {needle:?}:\n{text}"
    );
}

/// An empty directory `<CARGO_TARGET_TMPDIR>/<group>/<name>`.
pub fn scratch(group: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(group)
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn write_f32(path: &Path, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

pub fn read_f32(path: &Path) -> Vec<f32> {
    super::fields::f32s(
        &std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display())),
    )
}

pub fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|x| x.to_bits()).collect()
}

/// max - min over the finite values (the range a relative bound is relative to).
pub fn finite_range<'a>(values: impl IntoIterator<Item = &'a f32>) -> f64 {
    let (lo, hi) = values
        .into_iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x as f64), hi.max(x as f64))
        });
    hi - lo
}

/// A field as one array: u then v (SoA), or (u, v) per vertex (AoS).
pub fn field_raw(f: &Field, aos: bool) -> Vec<f32> {
    if aos {
        f.u.iter().zip(&f.v).flat_map(|(&a, &b)| [a, b]).collect()
    } else {
        f.u.iter().chain(&f.v).copied().collect()
    }
}

/// The inverse of [`field_raw`].
pub fn split_raw(raw: &[f32], aos: bool) -> (Vec<f32>, Vec<f32>) {
    if aos {
        (
            raw.iter().step_by(2).copied().collect(),
            raw.iter().skip(1).step_by(2).copied().collect(),
        )
    } else {
        let n = raw.len() / 2;
        (raw[..n].to_vec(), raw[n..].to_vec())
    }
}

/// Zero critical points lost, made or changed over the whole field, and every
/// value within `abs_bound` (non-finite ones bit-exact).
pub fn check_field(f: &Field, raw: &[f32], aos: bool, abs_bound: f64, what: &str) {
    let (u, v) = split_raw(raw, aos);
    let diff = oracle::diff(&f.u, &f.v, &u, &v, f.ny, f.nx);
    assert!(
        diff.is_clean(),
        "{what}: {}: critical points changed: {diff:?}",
        f.name
    );
    for (o, d) in [(&f.u, &u), (&f.v, &v)] {
        if let Err(e) = oracle::check_bound(o, d, abs_bound) {
            panic!("{what}: {}: {e}", f.name);
        }
    }
}

/// Sorted by x so that consecutive chunks or blocks are spatially disjoint
/// slabs, the way a domain-decomposed simulation holds particles.
pub fn sorted_by_x(pos: &[f32]) -> Vec<f32> {
    let mut p: Vec<[f32; 3]> = pos.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    p.sort_by(|a, b| a[0].total_cmp(&b[0]));
    p.concat()
}

/// Every FoF link at `b` kept, none made, every coordinate within `xi`; the
/// set must have links for the check to mean something.
pub fn check_links(orig: &[f32], dec: &[f32], period: Option<f64>, b: f64, xi: f64, what: &str) {
    let links = po::brute_links(orig, period, b);
    let check = po::check(orig, dec, period, b, xi, &links);
    assert!(
        check.clean() && check.links > 100,
        "{what}: particles (b {b}, xi {xi}): {check:?}"
    );
}
