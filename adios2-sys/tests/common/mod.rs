//! The sample BP5 file the tests read, written by ADIOS2's Python API.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A (3, 4, 5) float32 global array over 2 steps, put as two blocks along the
/// middle axis (so reading assembles blocks), a float64 array and an integer single
/// value; no operator.
const WRITER: &str = r#"
import sys
import numpy as np
from adios2 import Adios, Stream

adios = Adios()
io = adios.declare_io("writer")
io.set_engine("BP5")
with Stream(io, sys.argv[1], "w") as s:
    for step in range(2):
        s.begin_step()
        field = (step * 100 + np.arange(60, dtype=np.float32) * 0.25).reshape(3, 4, 5)
        for y0 in (0, 2):
            block = np.ascontiguousarray(field[:, y0:y0 + 2, :])
            s.write("field", block, [3, 4, 5], [0, y0, 0], [3, 2, 5])
        if step == 0:
            s.write("f64", np.arange(4, dtype=np.float64), [4], [0], [4])
        s.write("count", int(step))
        s.end_step()
"#;

/// What the writer put in "field" at `step`, in row-major order.
pub fn expected(step: usize) -> Vec<f32> {
    (0..60)
        .map(|i| (step * 100) as f32 + i as f32 * 0.25)
        .collect()
}

/// The sample file in a directory of its own for each test program (`name`),
/// written once per run.
pub fn sample(name: &str) -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("adios2-sys-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sample.bp");
        let out = Command::new("python3")
            .args(["-c", WRITER])
            .arg(&file)
            .output()
            .expect("cannot run python3");
        assert!(
            out.status.success(),
            "writing {} with the adios2 wheel (scripts/setup installs it) failed:\n{}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        file
    })
}
