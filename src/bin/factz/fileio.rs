//! Reading and writing raw float32 / float64 fields, particle positions and streams (`-` = stdin/stdout), and the
//! progress display for long work.

use crate::json::Obj;
use crate::{CliError, CliResult};
use factz::field::Layout;
use factz::real::{le_bytes, le_bytes_of};
use factz::Real;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::time::Duration;

/// Inputs at least this large get a progress display (when stderr is a terminal).
pub const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// The name of a path in messages.
pub fn shown(path: &str) -> &str {
    if path == "-" {
        "<stdin>"
    } else {
        path
    }
}

fn io_error(what: &str, path: &str, e: io::Error) -> CliError {
    let why = match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    CliError::fail(format!("cannot {what} {}: {why}", shown(path)))
}

/// A spinner or byte bar on stderr, or nothing (not a terminal, or small input).
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A display for work on `bytes` bytes of input.
    pub fn for_input(bytes: u64) -> Progress {
        if bytes < PROGRESS_MIN_BYTES || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let pb = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} factz: {msg} [{elapsed}]") {
            pb.set_style(style);
        }
        pb.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(pb))
    }

    /// Show the name of the current phase.
    pub fn phase(&self, name: &str) {
        if let Some(pb) = &self.0 {
            pb.set_message(name.to_string());
        }
    }

    /// Clear the display (also done on drop, so an error line is not mixed with it).
    pub fn done(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = self.0.take() {
            pb.finish_and_clear();
        }
    }
}

/// The size of a file (None for stdin or when unknown).
pub fn input_len(path: &str) -> Option<u64> {
    if path == "-" {
        return None;
    }
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// All bytes of a file or of stdin.
pub fn read_all(path: &str) -> CliResult<Vec<u8>> {
    if path == "-" {
        let mut buf = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut buf)
            .map_err(|e| io_error("read", path, e))?;
        return Ok(buf);
    }
    let mut f = File::open(path).map_err(|e| io_error("read", path, e))?;
    let meta = f.metadata().map_err(|e| io_error("read", path, e))?;
    if meta.is_dir() {
        return Err(CliError::fail(format!(
            "cannot read {path}: it is a directory"
        )));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.read_to_end(&mut buf)
        .map_err(|e| io_error("read", path, e))?;
    Ok(buf)
}

/// Write `bytes` to a file or stdout.
pub fn write_all(path: &str, bytes: &[u8]) -> CliResult<()> {
    if path == "-" {
        let mut out = io::stdout().lock();
        return out
            .write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(stdout_error);
    }
    std::fs::write(path, bytes).map_err(|e| {
        // Leave no truncated output behind (a regular file we just wrote).
        if std::fs::metadata(path)
            .map(|m| m.is_file())
            .unwrap_or(false)
        {
            let _ = std::fs::remove_file(path);
        }
        io_error("write", path, e)
    })
}

/// Broken pipe on stdout ends the program quietly (exit 0, like `head` wants);
/// anything else is a one-line failure.
pub fn stdout_error(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError {
            code: 0,
            message: String::new(),
        }
    } else {
        CliError::fail(format!("cannot write to stdout: {e}"))
    }
}

/// Print text on stdout.
/// A report as `--json` asks: pretty JSON, else the text.
pub fn print_report(
    json: bool,
    as_json: impl FnOnce() -> Obj,
    as_text: impl FnOnce() -> String,
) -> CliResult<()> {
    if json {
        print_stdout(&as_json().build().pretty())
    } else {
        print_stdout(&as_text())
    }
}

pub fn print_stdout(text: &str) -> CliResult<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(stdout_error)
}

/// Check a raw field's size against its shape and split it into (u, v), of
/// element type `T` (little-endian float32 or float64).
pub fn field_from_bytes<T: Real>(
    bytes: &[u8],
    ny: usize,
    nx: usize,
    layout: Layout,
    path: &str,
) -> CliResult<(Vec<T>, Vec<T>)> {
    let n = factz::field::vertex_count(ny, nx)?;
    let want = n
        .checked_mul(2 * T::BYTES)
        .ok_or_else(|| CliError::usage(format!("shape {ny}x{nx} is too large")))?;
    if bytes.len() != want {
        return Err(CliError::fail(format!(
            "{} has {} bytes, but shape {ny}x{nx} needs {want} (2 x {n} {}){}",
            shown(path),
            bytes.len(),
            T::NAME,
            // The one size mismatch with an obvious cause.
            if bytes.len() * T::BYTES == want * (12 - T::BYTES) {
                other_dtype_hint::<T>()
            } else {
                String::new()
            }
        )));
    }
    let values = |b: &[u8]| -> Vec<T> { b.chunks_exact(T::BYTES).map(T::read_le).collect() };
    Ok(match layout {
        Layout::Soa => (values(&bytes[..want / 2]), values(&bytes[want / 2..])),
        Layout::Aos => factz::field::deinterleave(&values(bytes)),
    })
}

/// The raw bytes of a field in `layout`.
pub fn field_to_bytes<T: Real>(u: &[T], v: &[T], layout: Layout) -> Vec<u8> {
    let n = u.len() + v.len();
    match layout {
        Layout::Soa => le_bytes(&[u, v]),
        Layout::Aos => le_bytes_of(n, u.iter().zip(v).flat_map(|(a, b)| [a, b])),
    }
}

/// Whether `bytes` starts like a factz stream.
pub fn is_stream(bytes: &[u8]) -> bool {
    bytes.starts_with(&factz::format::MAGIC)
}

/// "float32" or "float64", as size messages name a raw file's values.
fn float_name<T: Real>() -> &'static str {
    if T::BYTES == 8 {
        "float64"
    } else {
        "float32"
    }
}

/// The hint for a raw file whose size fits the other element type.
fn other_dtype_hint<T: Real>() -> String {
    format!(
        "; is it {}? (--dtype)",
        if T::BYTES == 4 { "f64" } else { "f32" }
    )
}

/// Check raw particle positions' size (against a count when known, else a whole
/// number of particles of 3 `T` each) and return them AoS `[N][3]`, of element
/// type `T` (little-endian float32 or float64).
pub fn positions_from_bytes<T: Real>(
    bytes: &[u8],
    count: Option<usize>,
    layout: Layout,
    path: &str,
) -> CliResult<Vec<T>> {
    let per = 3 * T::BYTES;
    // The size 3 values of the other type per particle gives.
    let other = 3 * (12 - T::BYTES);
    let n = match count {
        Some(n) => {
            if n.checked_mul(per) != Some(bytes.len()) {
                let fits_other = n.checked_mul(other) == Some(bytes.len());
                return Err(CliError::fail(format!(
                    "{} has {} bytes, but {n} particles need {} (3 x {n} {}){}",
                    shown(path),
                    bytes.len(),
                    n as u128 * per as u128,
                    float_name::<T>(),
                    if fits_other {
                        other_dtype_hint::<T>()
                    } else {
                        String::new()
                    }
                )));
            }
            n
        }
        None => {
            if bytes.len() % per != 0 {
                return Err(CliError::fail(format!(
                    "{} has {} bytes, not a whole number of particles ({per} bytes = 3 {} each){}",
                    shown(path),
                    bytes.len(),
                    float_name::<T>(),
                    if bytes.len() % other == 0 {
                        other_dtype_hint::<T>()
                    } else {
                        String::new()
                    }
                )));
            }
            bytes.len() / per
        }
    };
    factz::particles::particle_count(3 * n)
        .map_err(|e| CliError::fail(format!("{}: {e}", shown(path))))?;
    let values: Vec<T> = bytes.chunks_exact(T::BYTES).map(T::read_le).collect();
    Ok(match layout {
        Layout::Aos => values,
        Layout::Soa => {
            factz::particles::interleave3(&values[..n], &values[n..2 * n], &values[2 * n..])
        }
    })
}

/// The raw bytes of AoS positions in `layout`.
pub fn positions_to_bytes<T: Real>(pos: &[T], layout: Layout) -> Vec<u8> {
    match layout {
        Layout::Aos => le_bytes(&[pos]),
        Layout::Soa => le_bytes_of(
            pos.len(),
            (0..3).flat_map(|axis| pos.chunks_exact(3).map(move |p| &p[axis])),
        ),
    }
}
