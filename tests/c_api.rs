//! The C ABI from real C programs: `tests/c/*.c` compiled with the system C
//! compiler against `include/factz.h` and the static library this `cargo test`
//! built (and once against the shared library).

#[path = "common/cbuild.rs"]
mod cbuild;
mod common;

use common::oracle;

use cbuild::{assert_summary, build_shared, build_static, run};
use std::process::Command;

#[test]
fn c_field_roundtrip_static() {
    let exe = build_static("c_api", "field_roundtrip.c", "field_roundtrip_static");
    let stdout = run(&mut Command::new(&exe), "field_roundtrip (static)");
    assert_summary(&stdout, "field_roundtrip (static)");
}

#[test]
fn c_field_roundtrip_shared() {
    let exe = build_shared("c_api", "field_roundtrip.c", "field_roundtrip_shared");
    let stdout = run(&mut Command::new(&exe), "field_roundtrip (shared)");
    assert_summary(&stdout, "field_roundtrip (shared)");
}

#[test]
fn c_field_threads() {
    let exe = build_static("c_api", "field_threads.c", "field_threads");
    let stdout = run(&mut Command::new(&exe), "field_threads");
    assert_summary(&stdout, "field_threads");
}

/// float64 from C (`tests/c/field_f64.c`): the program checks the bound,
/// the dtype and the refusals; here the BigInt oracle checks that its
/// decoded fields keep every critical point and the bound.
/// float64 particles through the C ABI (tests/c/particles_f64.c): both
/// reconstructions keep every coordinate within the bound (exactly) and every
/// link of the independent brute-force oracle, on clusters at 1e6 with pairs
/// within ulps of b; factz_fof_labels_f64 gives the oracle's groups.
#[test]
fn c_particles_f64() {
    use common::particles::{brute_links, check, groups};
    let exe = build_static("c_api", "particles_f64.c", "particles_f64");
    let dir = cbuild::work_dir("c_api").join("particles_f64_out");
    std::fs::create_dir_all(&dir).unwrap();
    let stdout = run(Command::new(&exe).arg(&dir), "particles_f64");
    assert_summary(&stdout, "particles_f64");
    let load = |name: &str| -> Vec<f64> {
        std::fs::read(dir.join(name))
            .unwrap()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (b, xi) = (0.01, 2e-4);
    let orig = load("orig.f64");
    let n = orig.len() / 3;
    assert_eq!(n, 3000);
    let links = brute_links(&orig, None, b);
    assert!(links.len() > n, "only {} links", links.len());
    for name in ["aos.f64", "soa.f64"] {
        let c = check(&orig, &load(name), None, b, xi, &links);
        assert!(c.clean(), "{name}: {c:?}");
    }
    let labels: Vec<usize> = std::fs::read(dir.join("labels.u32"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize)
        .collect();
    assert_eq!(labels, groups(n, &links));
}

#[test]
fn c_field_f64() {
    let exe = build_static("c_api", "field_f64.c", "field_f64");
    let dir = cbuild::work_dir("c_api").join("field_f64_out");
    std::fs::create_dir_all(&dir).unwrap();
    let stdout = run(Command::new(&exe).arg(&dir), "field_f64");
    assert_summary(&stdout, "field_f64");
    let load = |name: &str| -> (Vec<f64>, Vec<f64>) {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let all: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let n = all.len() / 2;
        (all[..n].to_vec(), all[n..].to_vec())
    };
    let (ny, nx) = (47, 59);
    let (u, v) = load("orig.f64");
    assert_eq!(u.len(), ny * nx);
    let want: Vec<String> = oracle::extract(&u, &v, ny, nx)
        .iter()
        .map(|c| format!("{} {}", c.tri, c.kind as u8 + 1))
        .collect();
    assert!(!want.is_empty(), "the C field has no critical point");
    // factz_field_critical_points_f64: cell and type (1 saddle .. 6 center).
    let listed = std::fs::read_to_string(dir.join("cps.txt")).unwrap();
    assert_eq!(listed.lines().collect::<Vec<_>>(), want);
    for name in ["soa_huffman.f64", "soa_rans.f64", "soa_rans_b.f64"] {
        let (du, dv) = load(name);
        let d = oracle::diff(&u, &v, &du, &dv, ny, nx);
        assert!(d.is_clean(), "{name}: {d}");
        oracle::check_bound_f64(&u, &du, 1e-3).unwrap_or_else(|e| panic!("{name}: u {e}"));
        oracle::check_bound_f64(&v, &dv, 1e-3).unwrap_or_else(|e| panic!("{name}: v {e}"));
    }
}
