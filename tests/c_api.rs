//! The C ABI from real C programs: `tests/c/*.c` compiled with the system C
//! compiler against `include/factz.h` and the static library this `cargo test`
//! built (and once against the shared library).

#[path = "common/cbuild.rs"]
mod cbuild;

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
