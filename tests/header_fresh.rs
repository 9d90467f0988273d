//! The committed `include/factz.h` must be what build.rs generates from src/capi.

#[test]
fn committed_header_is_fresh() {
    let generated = std::fs::read_to_string(env!("FACTZ_GENERATED_HEADER")).unwrap_or_else(|e| {
        panic!(
            "reading the generated header {}: {e}",
            env!("FACTZ_GENERATED_HEADER")
        )
    });
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/factz.h");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "the ends differ".to_string(),
                |k| format!("first difference at line {}", k + 1),
            );
        panic!(
            "include/factz.h is stale ({line}): run FACTZ_UPDATE_HEADER=1 cargo build to refresh include/factz.h"
        );
    }
}
