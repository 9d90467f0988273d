//! `adios2_sys::read` on a BP5 file written by
//! ADIOS2's Python API: the values written come back, and misuse is an `Err`.

mod common;

use adios2_sys::read::{read_f32, variables};
use common::{expected, sample};

#[test]
fn reads_a_float32_global_array_at_each_step() {
    for step in 0..2 {
        let (shape, data) = read_f32(sample("read"), "field", step).unwrap();
        assert_eq!(shape, [3, 4, 5]);
        assert_eq!(data, expected(step), "step {step}");
    }
}

#[test]
fn lists_variables_with_shapes_and_steps() {
    let vars = variables(sample("read")).unwrap();
    let want = [
        ("count".to_string(), vec![], 2),
        ("f64".to_string(), vec![4], 1),
        ("field".to_string(), vec![3, 4, 5], 2),
    ];
    assert_eq!(vars, want);
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let file = sample("read");
    let dir = file.parent().unwrap();
    let cases = [
        (
            read_f32(&dir.join("missing.bp"), "field", 0).map(|_| ()),
            "no such file",
        ),
        (
            variables(&dir.join("missing.bp")).map(|_| ()),
            "no such file",
        ),
        (
            read_f32(file, "nope", 0).map(|_| ()),
            "no variable \"nope\"",
        ),
        (
            read_f32(file, "field", 2).map(|_| ()),
            "2 step(s), no step 2",
        ),
        (read_f32(file, "f64", 0).map(|_| ()), "float64, not float32"),
        (read_f32(file, "count", 0).map(|_| ()), "int64, not float32"),
        (read_f32(file, "a\0b", 0).map(|_| ()), "NUL"),
    ];
    for (k, (result, needle)) in cases.into_iter().enumerate() {
        let err = result.expect_err(&format!("case {k} should fail"));
        assert!(err.contains(needle), "case {k}: {err:?} lacks {needle:?}");
    }
    // A directory that exists but is no BP5 file: ADIOS2 itself refuses it.
    let not_bp = dir.join("not-bp");
    std::fs::create_dir_all(&not_bp).unwrap();
    let err = read_f32(&not_bp, "field", 0).expect_err("an empty directory is no BP5 file");
    assert!(err.contains("adios2_open"), "{err}");
}
