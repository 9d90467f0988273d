//! Running the `factz` binary in tests: scratch folders, runs that must
//! succeed or fail on one clean line, raw float32 files, and a small strict
//! JSON reader for `--json` output. Include it with
//! `#[path = "common/cli.rs"] mod cli;`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub fn factz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_factz"))
}

/// A per-test scratch folder under target/, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("factz-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    pub fn path(&self, file: &str) -> String {
        self.0.join(file).to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The sample field's shape (`NY,NX` for --shape): non-square, so a transposed
/// grid shows.
pub const NY: usize = 40;
pub const NX: usize = 52;
pub const SHAPE: &str = "40,52";

/// A smooth field with a few dozen critical points of several types, SoA.
pub fn field() -> (Vec<f32>, Vec<f32>) {
    let (mut u, mut v) = (Vec::new(), Vec::new());
    for j in 0..NY {
        for i in 0..NX {
            let (x, y) = (i as f64 * 0.31, j as f64 * 0.27);
            u.push((x.sin() * y.cos() + 0.3 * (0.7 * y + 0.2).sin() + 0.05 * x) as f32);
            v.push((-(x.cos()) * y.sin() + 0.2 * (1.3 * x).cos() - 0.04 * y) as f32);
        }
    }
    (u, v)
}

/// Little-endian float32 bytes.
pub fn bytes_of(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run factz")
}

pub fn run_ok(args: &[&str]) -> Output {
    let out = run(factz().args(args));
    assert!(
        out.status.success(),
        "factz {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Non-zero exit, a single `factz: ...` line on stderr containing `needle`, no panic.
pub fn run_err(args: &[&str], needle: &str) -> Output {
    let out = run(factz().args(args));
    check_err(&out, args, needle);
    out
}

pub fn check_err(out: &Output, args: &[&str], needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "factz {args:?} should fail");
    assert!(
        out.status.code().is_some(),
        "factz {args:?} was killed by a signal"
    );
    assert_ne!(
        out.status.code(),
        Some(101),
        "factz {args:?} panicked: {err}"
    );
    assert!(!err.contains("panicked"), "factz {args:?}: {err}");
    assert!(!err.contains("RUST_BACKTRACE"), "factz {args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "factz {args:?}: not one line: {err:?}"
    );
    assert!(err.starts_with("factz: "), "factz {args:?}: {err}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "factz {args:?}: expected '{needle}' in: {err}"
    );
}

pub fn write(path: &str, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

pub fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn get(&self, key: &str) -> &J {
        match self {
            J::Obj(f) => {
                &f.iter()
                    .find(|(k, _)| k == key)
                    .unwrap_or_else(|| panic!("no key {key} in {self:?}"))
                    .1
            }
            _ => panic!("not an object: {self:?}"),
        }
    }
    pub fn num(&self) -> f64 {
        match self {
            J::Num(x) => *x,
            _ => panic!("not a number: {self:?}"),
        }
    }
    pub fn arr(&self) -> &[J] {
        match self {
            J::Arr(a) => a,
            _ => panic!("not an array: {self:?}"),
        }
    }
    pub fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            _ => panic!("not a string: {self:?}"),
        }
    }
}

/// Parse a whole JSON document strictly (panics on anything malformed).
pub fn parse_json(text: &str) -> J {
    let b = text.as_bytes();
    let mut pos = 0;
    let v = value(b, &mut pos);
    skip_ws(b, &mut pos);
    assert_eq!(pos, b.len(), "trailing text after JSON: {text}");
    v
}

fn skip_ws(b: &[u8], pos: &mut usize) {
    while *pos < b.len() && b" \t\r\n".contains(&b[*pos]) {
        *pos += 1;
    }
}

fn expect(b: &[u8], pos: &mut usize, lit: &str) {
    assert!(
        b[*pos..].starts_with(lit.as_bytes()),
        "expected {lit} at {pos}"
    );
    *pos += lit.len();
}

fn value(b: &[u8], pos: &mut usize) -> J {
    skip_ws(b, pos);
    match b[*pos] {
        b'n' => {
            expect(b, pos, "null");
            J::Null
        }
        b't' => {
            expect(b, pos, "true");
            J::Bool(true)
        }
        b'f' => {
            expect(b, pos, "false");
            J::Bool(false)
        }
        b'"' => J::Str(string(b, pos)),
        b'[' => {
            *pos += 1;
            let mut items = Vec::new();
            skip_ws(b, pos);
            if b[*pos] == b']' {
                *pos += 1;
                return J::Arr(items);
            }
            loop {
                items.push(value(b, pos));
                skip_ws(b, pos);
                *pos += 1;
                match b[*pos - 1] {
                    b',' => continue,
                    b']' => return J::Arr(items),
                    c => panic!("bad array separator {:?}", c as char),
                }
            }
        }
        b'{' => {
            *pos += 1;
            let mut fields = Vec::new();
            skip_ws(b, pos);
            if b[*pos] == b'}' {
                *pos += 1;
                return J::Obj(fields);
            }
            loop {
                skip_ws(b, pos);
                let k = string(b, pos);
                skip_ws(b, pos);
                expect(b, pos, ":");
                fields.push((k, value(b, pos)));
                skip_ws(b, pos);
                *pos += 1;
                match b[*pos - 1] {
                    b',' => continue,
                    b'}' => return J::Obj(fields),
                    c => panic!("bad object separator {:?}", c as char),
                }
            }
        }
        _ => {
            let start = *pos;
            while *pos < b.len() && b"+-0123456789.eE".contains(&b[*pos]) {
                *pos += 1;
            }
            let s = std::str::from_utf8(&b[start..*pos]).unwrap();
            assert!(
                !s.starts_with('+') && !s.starts_with('.'),
                "bad JSON number {s}"
            );
            J::Num(
                s.parse()
                    .unwrap_or_else(|_| panic!("bad JSON number {s:?}")),
            )
        }
    }
}

fn string(b: &[u8], pos: &mut usize) -> String {
    expect(b, pos, "\"");
    let mut out = String::new();
    loop {
        let c = b[*pos];
        *pos += 1;
        match c {
            b'"' => return out,
            b'\\' => {
                let e = b[*pos];
                *pos += 1;
                match e {
                    b'"' => out.push('"'),
                    b'\\' => out.push('\\'),
                    b'/' => out.push('/'),
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'u' => {
                        let h = std::str::from_utf8(&b[*pos..*pos + 4]).unwrap();
                        out.push(char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap());
                        *pos += 4;
                    }
                    _ => panic!("bad escape"),
                }
            }
            c if c < 0x20 => panic!("control character in JSON string"),
            _ => {
                // Copy the whole UTF-8 sequence.
                let start = *pos - 1;
                let mut end = *pos;
                while end < b.len() && (b[end] & 0xc0) == 0x80 {
                    end += 1;
                }
                out.push_str(std::str::from_utf8(&b[start..end]).unwrap());
                *pos = end;
            }
        }
    }
}

/// Run with `input` on stdin; returns the output (whatever the status).
pub fn run_stdin(args: &[&str], input: Vec<u8>) -> Output {
    let mut child = factz()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut stdin, &input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn text(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}
