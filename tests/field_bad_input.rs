//! Bad input never panics, aborts or hangs; bad arguments are refused with a message.
//!
//! Real streams (both modes, both coders, zstd off/on) are truncated, bit-flipped,
//! overwritten and replaced by random bytes. Every corruption a checksum must catch
//! (truncation, any single bit flip, random bytes) must give `Err`; corruptions made
//! behind the checksums' back (recomputed CRCs, the layout documented in
//! src/format/mod.rs) reach the entropy decoders and must give `Ok` or `Err`, never a
//! panic or a hang. A watchdog turns a hang into a failure naming the input.

mod common;

use common::container::{fix_crcs, parse_layout};
use common::fields::{self, Rng};
use factz::field::{compress, decompress, Bound, Coder, FieldConfig, Layout, Mode};
use factz::ErrorKind;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex, Once};
use std::time::{Duration, Instant};

// ------------------------------------------------------------ quiet panics, watchdog

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}
static HOOK: Once = Once::new();

/// Panics raised while `QUIET` is set on this thread are not printed (they are caught
/// and reported by the test itself); all other panics print as usual.
fn install_quiet_hook() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                prev(info);
            }
        }));
    });
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic)".into()
    }
}

/// Run `body` on its own thread; if it does not finish within `limit`, fail naming the
/// input being decoded at that moment (a hang), instead of blocking the test run.
fn with_watchdog(
    name: &str,
    limit: Duration,
    body: impl FnOnce(Arc<Mutex<String>>) + Send + 'static,
) {
    install_quiet_hook();
    let progress = Arc::new(Mutex::new(String::from("(start)")));
    let p2 = progress.clone();
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| body(p2)));
            let _ = tx.send(r.err().map(|p| panic_text(&p)));
        })
        .expect("spawn");
    match rx.recv_timeout(limit) {
        Ok(None) => {
            let _ = h.join();
        }
        Ok(Some(msg)) => panic!("{name}: {msg}"),
        Err(_) => panic!(
            "{name}: no progress for {limit:?} -- a decode hangs (or is pathologically slow) on: {}",
            progress.lock().map(|s| s.clone()).unwrap_or_default()
        ),
    }
}

// ------------------------------------------------------------ allocation guard

/// Forwards to the system allocator and records the largest single request made by a
/// thread while it decodes fuzz input. A decoder must check lengths against its input
/// before allocating (ARCHITECTURE.md, "Stream rules"), so a request above `ALLOC_CAP` for a small input is a
/// failure; one the system refuses aborts the process, so the input is printed first.
struct GuardAlloc;

/// No decode of these (at most 1 MiB) inputs needs a single allocation above this.
const ALLOC_CAP: usize = 256 << 20;

thread_local! {
    static FUZZING: Cell<bool> = const { Cell::new(false) };
    static THREAD_MAX: Cell<usize> = const { Cell::new(0) };
    static DESC: Cell<[u8; 200]> = const { Cell::new([0u8; 200]) };
    static DESC_LEN: Cell<usize> = const { Cell::new(0) };
}

impl GuardAlloc {
    fn note(size: usize) {
        let fuzzing = FUZZING.try_with(|f| f.get()).unwrap_or(false);
        if !fuzzing {
            return;
        }
        let _ = THREAD_MAX.try_with(|m| m.set(m.get().max(size)));
        if size > (8usize << 30) {
            // likely to fail and abort: say which input it was (no allocation here)
            use std::io::Write;
            let d = DESC.try_with(|d| d.get()).unwrap_or([0; 200]);
            let n = DESC_LEN.try_with(|l| l.get()).unwrap_or(0).min(200);
            let mut e = std::io::stderr();
            let _ =
                e.write_all(b"\nfield_bad_input: decoder requests a huge allocation on input: ");
            let _ = e.write_all(&d[..n]);
            let _ = e.write_all(b"\n");
        }
    }
}

unsafe impl std::alloc::GlobalAlloc for GuardAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        Self::note(l.size());
        std::alloc::System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        Self::note(l.size());
        std::alloc::System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        Self::note(new);
        std::alloc::System.realloc(p, l, new)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        std::alloc::System.dealloc(p, l)
    }
}

#[global_allocator]
static GLOBAL: GuardAlloc = GuardAlloc;

/// Mark this thread as decoding `what` (the description is kept for the abort message).
fn begin_guard(what: &str) {
    let mut d = [0u8; 200];
    let b = what.as_bytes();
    let n = b.len().min(200);
    d[..n].copy_from_slice(&b[..n]);
    DESC.with(|x| x.set(d));
    DESC_LEN.with(|x| x.set(n));
    THREAD_MAX.with(|m| m.set(0));
    FUZZING.with(|f| f.set(true));
}

/// End the guard; the largest single allocation request made meanwhile.
fn end_guard() -> usize {
    FUZZING.with(|f| f.set(false));
    THREAD_MAX.with(|m| m.get())
}

// ------------------------------------------------------------ streams

struct Stream {
    name: String,
    bytes: Vec<u8>,
    /// Bits of the reference decode (u then v).
    reference: Vec<u32>,
    ny: usize,
    nx: usize,
}

const NY: usize = 37;
const NX: usize = 53;

fn source_field() -> fields::Field {
    fields::window(&fields::turbulence(64, 1), 5, 3, NY, NX)
}

fn config(mode: Mode, coder: Coder, zstd_level: i32) -> FieldConfig {
    FieldConfig {
        mode,
        coder,
        zstd_level,
        bound: Bound::Rel(1e-3),
        ..FieldConfig::default()
    }
}

fn bits_of(u: &[f32], v: &[f32]) -> Vec<u32> {
    u.iter().chain(v).map(|x| x.to_bits()).collect()
}

/// An f64 field's bits as u32 words, low word first.
fn bits_of_f64(u: &[f64], v: &[f64]) -> Vec<u32> {
    u.iter()
        .chain(v)
        .flat_map(|x| [x.to_bits() as u32, (x.to_bits() >> 32) as u32])
        .collect()
}

/// The stream decoded as f32 or as f64, whichever its header says (never
/// both: the other reading must be an error).
fn decode_either(bytes: &[u8]) -> factz::Result<(Vec<u32>, usize, usize)> {
    let narrow = decompress(bytes);
    let wide = factz::field::decompress_as::<f64>(bytes);
    match (narrow, wide) {
        (Ok(_), Ok(_)) => panic!("a stream decoded both as f32 and as f64"),
        (Ok(d), Err(_)) => Ok((bits_of(&d.u, &d.v), d.ny, d.nx)),
        (Err(_), Ok(d)) => Ok((bits_of_f64(&d.u, &d.v), d.ny, d.nx)),
        (Err(e), Err(_)) => Err(e),
    }
}

/// One stream per mode x coder x zstd {off, 3} of a 37 x 53 window of synth
/// turbulence, and four of it in f64 (values nudged below f32's resolution).
fn streams() -> Vec<Stream> {
    let f = source_field();
    let mut out = Vec::new();
    let nudge = |a: &[f32], s: f64| -> Vec<f64> {
        a.iter()
            .enumerate()
            .map(|(k, &x)| x as f64 * (1.0 + s * ((k % 11) as f64 - 5.0)))
            .collect()
    };
    let (u64s, v64s) = (nudge(&f.u, 1e-11), nudge(&f.v, -1e-11));
    for mode in [Mode::Blockwise, Mode::Speculative] {
        for (coder, z) in [(Coder::Huffman, 0), (Coder::Rans, 3)] {
            let name = format!("f64 {mode:?}/{coder:?}/z{z}");
            let comp = compress(&u64s, &v64s, f.ny, f.nx, &config(mode, coder, z))
                .unwrap_or_else(|e| panic!("cannot make the test stream {name}: {e}"));
            let (reference, ny, nx) = decode_either(&comp.bytes)
                .unwrap_or_else(|e| panic!("cannot decode the test stream {name}: {e}"));
            assert_eq!((ny, nx), (NY, NX), "{name}: reference decode shape");
            out.push(Stream {
                name,
                reference,
                bytes: comp.bytes,
                ny: NY,
                nx: NX,
            });
        }
    }
    for mode in [Mode::Blockwise, Mode::Speculative] {
        for coder in [Coder::Huffman, Coder::Rans] {
            for z in [0, 3] {
                let c = config(mode, coder, z);
                let name = format!("{mode:?}/{coder:?}/z{z}");
                let comp = compress(&f.u, &f.v, f.ny, f.nx, &c).unwrap_or_else(|e| {
                    panic!(
                        "cannot make the test stream {name}: compress: {:?}: {e}",
                        e.kind
                    )
                });
                let d = decompress(&comp.bytes).unwrap_or_else(|e| {
                    panic!("cannot decode the test stream {name}: {:?}: {e}", e.kind)
                });
                assert_eq!((d.ny, d.nx), (NY, NX), "{name}: reference decode shape");
                eprintln!("stream {name}: {} bytes", comp.bytes.len());
                out.push(Stream {
                    name,
                    reference: bits_of(&d.u, &d.v),
                    bytes: comp.bytes,
                    ny: NY,
                    nx: NX,
                });
            }
        }
    }
    out
}

// ------------------------------------------------------------ decoding harness

enum Outcome {
    Ok(Vec<u32>, usize, usize),
    Err(ErrorKind, String),
    Panic(#[allow(dead_code)] String),
}

/// Decodes inputs, classifies outcomes and collects failures.
struct Fuzz {
    name: String,
    progress: Arc<Mutex<String>>,
    decodes: usize,
    oks: usize,
    errs: usize,
    failures: Vec<String>,
    failure_count: usize,
    slowest: (Duration, String),
}

impl Fuzz {
    fn new(name: &str, progress: Arc<Mutex<String>>) -> Fuzz {
        Fuzz {
            name: name.into(),
            progress,
            decodes: 0,
            oks: 0,
            errs: 0,
            failures: Vec::new(),
            failure_count: 0,
            slowest: (Duration::ZERO, String::new()),
        }
    }

    fn decode(&mut self, what: &str, bytes: &[u8]) -> Outcome {
        if let Ok(mut p) = self.progress.lock() {
            p.clear();
            p.push_str(what);
        }
        self.decodes += 1;
        QUIET.with(|q| q.set(true));
        begin_guard(what);
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| decode_either(bytes)));
        let dt = t.elapsed();
        let biggest = end_guard();
        QUIET.with(|q| q.set(false));
        if biggest > ALLOC_CAP {
            self.fail(format!(
                "{what}: the decoder made a single allocation of {biggest} bytes for a {}-byte input",
                bytes.len()
            ));
        }
        if dt > self.slowest.0 {
            self.slowest = (dt, what.to_string());
        }
        match r {
            Ok(Ok((bits, ny, nx))) => {
                self.oks += 1;
                // (u, v) per vertex: 2 words for f32, 4 for f64.
                let n = ny.saturating_mul(nx);
                if bits.len() != 2 * n && bits.len() != 4 * n {
                    self.fail(format!(
                        "{what}: Ok with inconsistent shape {ny}x{nx} and {} words",
                        bits.len()
                    ));
                }
                Outcome::Ok(bits, ny, nx)
            }
            Ok(Err(e)) => {
                self.errs += 1;
                if e.message.is_empty() {
                    self.fail(format!("{what}: Err({:?}) with an empty message", e.kind));
                }
                Outcome::Err(e.kind, e.message)
            }
            Err(p) => {
                let msg = panic_text(&p);
                self.fail(format!("{what}: PANIC: {msg}"));
                Outcome::Panic(msg)
            }
        }
    }

    fn fail(&mut self, msg: String) {
        self.failure_count += 1;
        if self.failures.len() < 40 {
            self.failures.push(msg);
        }
    }

    /// Decode and require `Err`.
    fn expect_err(&mut self, what: &str, bytes: &[u8]) {
        if let Outcome::Ok(..) = self.decode(what, bytes) {
            self.fail(format!("{what}: Ok, expected Err"));
        }
    }

    /// Decode and require `Err` or a result bit-identical to the reference.
    fn expect_err_or_same(&mut self, what: &str, bytes: &[u8], s: &Stream) {
        if let Outcome::Ok(bits, ny, nx) = self.decode(what, bytes) {
            if (ny, nx) != (s.ny, s.nx) || bits != s.reference {
                self.fail(format!(
                    "{what}: Ok with a DIFFERENT field ({ny}x{nx}): corruption went unnoticed"
                ));
            }
        }
    }

    fn finish(self) {
        eprintln!(
            "{}: {} decodes, {} Ok, {} Err, {} failures; slowest decode {:?} on {}",
            self.name,
            self.decodes,
            self.oks,
            self.errs,
            self.failure_count,
            self.slowest.0,
            self.slowest.1
        );
        if self.failure_count > 0 {
            panic!(
                "{}: {} failures (first {}):\n{}",
                self.name,
                self.failure_count,
                self.failures.len(),
                self.failures.join("\n")
            );
        }
    }
}

// ------------------------------------------------------------ documented container layout

fn header_len_of(s: &Stream) -> usize {
    // From the documented layout when it parses; else a conservative 16 bytes (magic,
    // version, kind, element type, flags) that any container has.
    parse_layout(&s.bytes).map_or(16, |l| l.header_crc_at + 4)
}

// ------------------------------------------------------------ tests

const LIMIT: Duration = Duration::from_secs(240);

#[test]
fn empty_and_random_bytes() {
    with_watchdog("empty_and_random_bytes", LIMIT, |progress| {
        let mut fz = Fuzz::new("empty_and_random_bytes", progress);
        fz.expect_err("empty", &[]);
        let mut r = Rng::new(77);
        for len in (1..=64).chain([65, 91, 92, 93, 100, 255, 256, 1000, 4096, 65_536, 1 << 20]) {
            for rep in 0..if len <= 64 { 4 } else { 2 } {
                let b = r.bytes(len);
                fz.expect_err(&format!("random {len} bytes #{rep}"), &b);
            }
        }
        // constant bytes
        for &v in &[0u8, 0xff, b'F'] {
            for len in [1usize, 8, 92, 200, 5000] {
                fz.expect_err(&format!("{len} x {v:#x}"), &vec![v; len]);
            }
        }
        // real prefixes followed by random bytes: magic, fixed header, whole header+table
        let ss = streams();
        for s in &ss {
            let hl = header_len_of(s);
            for keep in [
                8usize,
                10,
                12,
                16,
                40,
                88,
                hl,
                hl + 1,
                s.bytes.len() / 2,
                s.bytes.len() - 1,
            ] {
                let keep = keep.min(s.bytes.len());
                for rep in 0..3 {
                    let mut b = s.bytes[..keep].to_vec();
                    let extra = s.bytes.len() - keep;
                    b.extend(r.bytes(extra.max(1)));
                    if b == s.bytes {
                        // The random tail drew the stream's own (one byte
                        // kept back: 1 in 256): make it differ.
                        b[keep] ^= 1;
                    }
                    fz.expect_err(
                        &format!("{} first {keep} bytes + random #{rep}", s.name),
                        &b,
                    );
                }
            }
            // trailing garbage, and the stream twice: Err (documented) -- at least no panic
            let mut b = s.bytes.clone();
            b.push(0);
            fz.expect_err_or_same(&format!("{} + 1 trailing byte", s.name), &b, s);
            let mut b = s.bytes.clone();
            b.extend_from_slice(&s.bytes);
            fz.expect_err_or_same(&format!("{} twice", s.name), &b, s);
        }
        fz.finish();
    });
}

#[test]
fn every_truncation_is_an_error() {
    with_watchdog("every_truncation_is_an_error", LIMIT, |progress| {
        let mut fz = Fuzz::new("every_truncation_is_an_error", progress);
        for s in &streams() {
            let n = s.bytes.len();
            let lens: Vec<usize> = if n <= 8192 {
                (0..n).collect()
            } else {
                let step = (n - 3072) / 2048 + 1;
                (0..2048)
                    .chain((2048..n - 1024).step_by(step))
                    .chain(n - 1024..n)
                    .collect()
            };
            for len in lens {
                fz.expect_err(
                    &format!("{} truncated to {len} of {n}", s.name),
                    &s.bytes[..len],
                );
            }
        }
        fz.finish();
    });
}

#[test]
fn every_bit_flip_is_caught() {
    with_watchdog("every_bit_flip_is_caught", LIMIT, |progress| {
        let mut fz = Fuzz::new("every_bit_flip_is_caught", progress);
        for s in &streams() {
            let n = s.bytes.len();
            let hl = header_len_of(s);
            let mut b = s.bytes.clone();
            let mut bits: Vec<usize> = (0..8 * n.min(512)).collect();
            bits.extend((8 * 512..8 * n).step_by(7));
            for bit in bits {
                let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
                b[byte] ^= mask;
                let what = format!("{} bit {bit} (byte {byte} of {n}, header {hl})", s.name);
                if byte < hl {
                    fz.expect_err(&what, &b);
                } else {
                    // a checksummed payload: Err; Ok only if nothing changed
                    fz.expect_err_or_same(&what, &b, s);
                }
                b[byte] ^= mask;
            }
            // whole bytes overwritten in the first 256 bytes
            for byte in 0..n.min(256) {
                for val in [0u8, 0xff] {
                    if s.bytes[byte] == val {
                        continue;
                    }
                    b[byte] = val;
                    let what = format!("{} byte {byte} := {val:#x}", s.name);
                    if byte < hl {
                        fz.expect_err(&what, &b);
                    } else {
                        fz.expect_err_or_same(&what, &b, s);
                    }
                    b[byte] = s.bytes[byte];
                }
            }
        }
        fz.finish();
    });
}

/// dims[0], dims[1] as u64 at their documented place, found by value so that a layout
/// change does not silently test nothing.
fn find_shape(b: &[u8], ny: usize, nx: usize) -> Option<usize> {
    let want: Vec<u8> = [ny as u64, nx as u64]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    (0..b.len().min(256).saturating_sub(16)).find(|&k| b[k..k + 16] == want[..])
}

#[test]
fn changed_shape_fields() {
    with_watchdog("changed_shape_fields", LIMIT, |progress| {
        let mut fz = Fuzz::new("changed_shape_fields", progress);
        let big = 1u64 << 32;
        let variants: [(u64, u64); 16] = [
            (0, 0),
            (0, NX as u64),
            (NY as u64, 0),
            (1, 1),
            (NY as u64 + 1, NX as u64),
            (NY as u64, NX as u64 - 1),
            (NX as u64, NY as u64),
            (1, (NY * NX) as u64),
            (2 * NY as u64, NX as u64),
            (u64::MAX, u64::MAX),
            (u64::MAX, 2),
            (big, big),
            (big + 1, 1),
            (1 << 62, 4),
            (1 << 20, 1 << 20),
            (NY as u64 * 1000, NX as u64 * 1000),
        ];
        let mut located = 0;
        for s in &streams() {
            let at = match find_shape(&s.bytes, s.ny, s.nx) {
                Some(at) => at,
                None => {
                    fz.fail(format!(
                        "{}: shape ({}, {}) not found as two u64 in the header",
                        s.name, s.ny, s.nx
                    ));
                    continue;
                }
            };
            located += 1;
            let layout = parse_layout(&s.bytes);
            for &(a, b) in &variants {
                let mut m = s.bytes.clone();
                m[at..at + 8].copy_from_slice(&a.to_le_bytes());
                m[at + 8..at + 16].copy_from_slice(&b.to_le_bytes());
                // header checksum now wrong: Err
                fz.expect_err(&format!("{} shape {a}x{b} (stale crc)", s.name), &m);
                // checksum recomputed: reaches the decoder; Ok or Err, no panic
                if let Some(l) = &layout {
                    fix_crcs(&mut m, l);
                    let what = format!("{} shape {a}x{b} (crc fixed)", s.name);
                    match fz.decode(&what, &m) {
                        Outcome::Ok(_, ny, nx) => {
                            eprintln!("{what}: Ok {ny}x{nx}");
                            if (ny as u64, nx as u64) != (a, b) {
                                fz.fail(format!("{what}: Ok but decoded shape {ny}x{nx}"));
                            }
                        }
                        Outcome::Err(k, msg) => eprintln!("{what}: Err({k:?}: {msg})"),
                        Outcome::Panic(_) => {}
                    }
                }
            }
            // the third dim must be 0 for field2d
            if let Some(l) = &layout {
                let mut m = s.bytes.clone();
                m[at + 16..at + 24].copy_from_slice(&5u64.to_le_bytes());
                fix_crcs(&mut m, l);
                let _ = fz.decode(&format!("{} dims[2] = 5 (crc fixed)", s.name), &m);
            }
        }
        assert!(located > 0, "the shape was not found in any stream");
        fz.finish();
    });
}

#[test]
fn mutations_behind_the_checksums() {
    with_watchdog("mutations_behind_the_checksums", LIMIT, |progress| {
        let mut fz = Fuzz::new("mutations_behind_the_checksums", progress);
        let mut r = Rng::new(99);
        let mut parsed = 0;
        for s in &streams() {
            let l = match parse_layout(&s.bytes) {
                Some(l) => l,
                None => {
                    eprintln!(
                        "WARNING {}: stream does not follow the layout documented in src/format/mod.rs; \
                         checksum-fixed mutations skipped",
                        s.name
                    );
                    continue;
                }
            };
            parsed += 1;
            let n = s.bytes.len();
            let mut b = s.bytes.clone();
            // every bit of the header and section table (not the header crc itself)
            for bit in 0..8 * l.header_crc_at {
                let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
                b[byte] ^= mask;
                fix_crcs(&mut b, &l);
                let _ = fz.decode(&format!("{} header bit {bit} (crc fixed)", s.name), &b);
                b.copy_from_slice(&s.bytes);
            }
            // header fields set to extremes
            for (at, width) in [
                (8usize, 2usize),
                (10, 1),
                (11, 1),
                (12, 4),
                (40, 8),
                (48, 1),
                (49, 1),
                (50, 1),
                (51, 1),
            ] {
                for fill in [0u8, 0xff, 0x7f, 0x80] {
                    b[at..at + width].iter_mut().for_each(|x| *x = fill);
                    fix_crcs(&mut b, &l);
                    let _ = fz.decode(
                        &format!("{} header[{at}..+{width}] := {fill:#x} (crc fixed)", s.name),
                        &b,
                    );
                    b.copy_from_slice(&s.bytes);
                }
            }
            for f in [f64::NAN, -1.0, 0.0, f64::INFINITY, 1e300, f64::MIN_POSITIVE] {
                b[40..48].copy_from_slice(&f.to_le_bytes());
                fix_crcs(&mut b, &l);
                let _ = fz.decode(&format!("{} abs_bound := {f:e} (crc fixed)", s.name), &b);
                b.copy_from_slice(&s.bytes);
            }
            // raw lengths of zstd sections set to extremes (allocation guards)
            for &(e, _, _) in &l.sections {
                for raw in [0u64, 1, 1 << 20, 1 << 40, u64::MAX] {
                    b[e + 12..e + 20].copy_from_slice(&raw.to_le_bytes());
                    fix_crcs(&mut b, &l);
                    let _ = fz.decode(
                        &format!("{} entry@{e} raw_len := {raw} (crc fixed)", s.name),
                        &b,
                    );
                    b.copy_from_slice(&s.bytes);
                }
            }
            // payload bits: all of the first 128 bytes of each section, a stride after
            for &(_, off, len) in &l.sections {
                let mut bits: Vec<usize> = (0..8 * len.min(128)).collect();
                bits.extend((8 * 128..8 * len).step_by(5));
                for bit in bits {
                    let (byte, mask) = (off + bit / 8, 1u8 << (bit % 8));
                    b[byte] ^= mask;
                    fix_crcs(&mut b, &l);
                    let _ = fz.decode(
                        &format!("{} payload bit {bit} of section @{off} (crc fixed)", s.name),
                        &b,
                    );
                    b.copy_from_slice(&s.bytes);
                }
                // runs of bytes overwritten with 0, 0xff, random
                for rep in 0..60 {
                    let start = off + r.below(len.max(1)).min(len.saturating_sub(1));
                    let run = 1 + r.below(16);
                    let end = (start + run).min(off + len);
                    for x in &mut b[start..end] {
                        *x = match rep % 3 {
                            0 => 0,
                            1 => 0xff,
                            _ => r.next_u64() as u8,
                        };
                    }
                    fix_crcs(&mut b, &l);
                    let _ = fz.decode(
                        &format!(
                            "{} payload [{start}..{end}) overwritten #{rep} (crc fixed)",
                            s.name
                        ),
                        &b,
                    );
                    b.copy_from_slice(&s.bytes);
                }
                // whole section random
                for rep in 0..10 {
                    for x in &mut b[off..off + len] {
                        *x = r.next_u64() as u8;
                    }
                    fix_crcs(&mut b, &l);
                    let _ = fz.decode(
                        &format!("{} section @{off} random #{rep} (crc fixed)", s.name),
                        &b,
                    );
                    b.copy_from_slice(&s.bytes);
                }
            }
            assert_eq!(b.len(), n);
        }
        eprintln!("{parsed} streams followed the documented layout");
        fz.finish();
    });
}

#[test]
fn compress_rejects_bad_arguments() {
    install_quiet_hook();
    let f = source_field();
    let mut failures = Vec::new();
    let check =
        |failures: &mut Vec<String>,
         what: String,
         r: std::thread::Result<factz::Result<factz::field::Compressed>>| match r {
            Ok(Err(e)) if !e.message.is_empty() && e.kind == ErrorKind::InvalidArgument => {
                eprintln!("{what}: Err({:?}: {})", e.kind, e.message)
            }
            Ok(Err(e)) if e.message.is_empty() => {
                failures.push(format!("{what}: Err({:?}) with an empty message", e.kind))
            }
            Ok(Err(e)) => failures.push(format!(
                "{what}: Err kind {:?} (expected InvalidArgument): {}",
                e.kind, e.message
            )),
            Ok(Ok(c)) => failures.push(format!(
                "{what}: Ok ({} bytes), expected Err",
                c.bytes.len()
            )),
            Err(p) => failures.push(format!("{what}: PANIC: {}", panic_text(&p))),
        };
    let run = |u: &[f32], v: &[f32], ny: usize, nx: usize, c: &FieldConfig| {
        QUIET.with(|q| q.set(true));
        let r = catch_unwind(AssertUnwindSafe(|| compress(u, v, ny, nx, c)));
        QUIET.with(|q| q.set(false));
        r
    };
    for mode in [Mode::Blockwise, Mode::Speculative] {
        for coder in [Coder::Huffman, Coder::Rans] {
            let base = config(mode, coder, 0);
            let tag = format!("{mode:?}/{coder:?}");
            let (u, v) = (&f.u[..], &f.v[..]);
            // shapes inconsistent with the slices
            check(
                &mut failures,
                format!("{tag} u short"),
                run(&u[1..], v, NY, NX, &base),
            );
            check(
                &mut failures,
                format!("{tag} v short"),
                run(u, &v[1..], NY, NX, &base),
            );
            check(
                &mut failures,
                format!("{tag} both long"),
                run(u, v, NY - 1, NX, &base),
            );
            check(
                &mut failures,
                format!("{tag} ny*nx overflows (MAX x 2)"),
                run(u, v, usize::MAX, 2, &base),
            );
            check(
                &mut failures,
                format!("{tag} ny*nx overflows (2^33 x 2^33)"),
                run(u, v, 1 << 33, 1 << 33, &base),
            );
            check(
                &mut failures,
                format!("{tag} ny*nx = MAX x 1"),
                run(u, v, usize::MAX, 1, &base),
            );
            check(
                &mut failures,
                format!("{tag} empty slices, 3x3"),
                run(&[], &[], 3, 3, &base),
            );
            // bounds
            for b in [
                Bound::Abs(f64::NAN),
                Bound::Abs(-1e-3),
                Bound::Abs(0.0),
                Bound::Abs(-0.0),
                Bound::Abs(f64::INFINITY),
                Bound::Abs(f64::NEG_INFINITY),
                Bound::Rel(f64::NAN),
                Bound::Rel(-1e-3),
                Bound::Rel(0.0),
                Bound::Rel(f64::INFINITY),
            ] {
                let c = FieldConfig { bound: b, ..base };
                check(
                    &mut failures,
                    format!("{tag} bound {b:?}"),
                    run(u, v, NY, NX, &c),
                );
            }
            // zstd level out of range
            for z in [-1, 23, 100, i32::MIN, i32::MAX] {
                let c = FieldConfig {
                    zstd_level: z,
                    ..base
                };
                check(
                    &mut failures,
                    format!("{tag} zstd level {z}"),
                    run(u, v, NY, NX, &c),
                );
            }
            // sanity: the valid config works, Aos included
            let c = FieldConfig {
                layout: Layout::Aos,
                ..base
            };
            if let Err(e) = compress(u, v, NY, NX, &c) {
                failures.push(format!("{tag} valid config refused: {:?}: {e}", e.kind));
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} bad-argument cases failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
