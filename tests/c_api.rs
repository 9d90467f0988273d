//! The C ABI from real C programs: `tests/c/*.c` compiled with the system C
//! compiler against `include/factz.h` and the static library this `cargo test`
//! built (and once against the shared library).

#[path = "common/cbuild.rs"]
mod cbuild;
#[path = "common/oracle.rs"]
#[allow(dead_code)]
mod oracle;

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
    for name in ["soa_huffman.f64", "soa_rans.f64"] {
        let (du, dv) = load(name);
        let d = oracle::diff(&u, &v, &du, &dv, ny, nx);
        assert!(d.is_clean(), "{name}: {d}");
        oracle::check_bound_f64(&u, &du, 1e-3).unwrap_or_else(|e| panic!("{name}: u {e}"));
        oracle::check_bound_f64(&v, &dv, 1e-3).unwrap_or_else(|e| panic!("{name}: v {e}"));
    }
}
