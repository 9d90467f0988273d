//! Entropy coders and the lossless stage shared by every compressor.
//!
//! - [`encode_u32`] / [`decode_u32`], [`encode_bytes`] / [`decode_bytes`]: entropy
//!   coding with the [`Coder`] recorded in the stream header (`huffman.rs`:
//!   canonical length-limited Huffman in 2^16-symbol blocks; `rans.rs`: byte-plane
//!   rANS in 2^17-symbol blocks of 32 interleaved states (a GPU warp per block;
//!   `rans_simd.rs` codes them with AVX2), with constant and sparse plane shortcuts; each
//!   file's doc gives its byte layout). Their output does not record the symbol
//!   count: the caller stores it and passes it back to the decoder (a wrong count
//!   is usually, not always, detected). Decoders consume their input exactly
//!   (trailing bytes are an error), return `ErrorKind::CorruptStream` on bad
//!   input and never panic. Output is deterministic whatever the thread count.
//! - [`zstd_compress`] / [`zstd_decompress`]: optional lossless stage (a plain
//!   zstd frame; decompression is bounded by the caller's `max_len`).
//! - [`zigzag`] / [`unzigzag`]: the crate's one signed <-> unsigned mapping.
//! - [`varint`]: LEB128 helpers, also used by the stream container.
//! - [`zero_runs`]: a segment's form (format version 5 on): as it is, or as
//!   its zero runs and nonzero values where most symbols are zero.

pub(crate) mod bits;
pub mod gpu_host;
pub(crate) mod huffman;
pub mod planes;
pub(crate) mod rans;
#[cfg(target_arch = "x86_64")]
mod rans_simd;
pub mod varint;
pub mod zero_runs;

use crate::error::{Error, Result};

/// Entropy coder id, recorded in streams as this u8 (never renumber).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Coder {
    Huffman = 1,
    Rans = 2,
}

impl Coder {
    /// The coder with stream id `x`, if any.
    pub fn from_u8(x: u8) -> Option<Coder> {
        match x {
            1 => Some(Coder::Huffman),
            2 => Some(Coder::Rans),
            _ => None,
        }
    }

    /// Name used on the command line and in `inspect`: "huffman" or "rans".
    pub fn name(self) -> &'static str {
        match self {
            Coder::Huffman => "huffman",
            Coder::Rans => "rans",
        }
    }

    /// Parses a name as written by [`Coder::name`] (ASCII case-insensitive).
    pub fn parse(s: &str) -> Option<Coder> {
        [Coder::Huffman, Coder::Rans]
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// Entropy-codes a sequence of u32 symbols. The output is self-contained except for
/// the symbol count, which the caller passes to [`decode_u32`].
pub fn encode_u32(coder: Coder, symbols: &[u32]) -> Vec<u8> {
    match coder {
        Coder::Huffman => huffman::encode(symbols),
        Coder::Rans => rans::encode(symbols),
    }
}

/// Inverse of [`encode_u32`]. Corrupt input gives `ErrorKind::CorruptStream`, never a panic;
/// allocation is O(count + data.len()).
pub fn decode_u32(coder: Coder, data: &[u8], count: usize) -> Result<Vec<u32>> {
    match coder {
        Coder::Huffman => huffman::decode(data, count),
        Coder::Rans => rans::decode(data, count),
    }
}

/// [`decode_u32`] into `out`, whose length is the symbol count (no
/// allocation of its own for rANS; `out` is unspecified on error).
pub fn decode_u32_into(coder: Coder, data: &[u8], out: &mut [u32]) -> Result<()> {
    match coder {
        Coder::Huffman => {
            out.copy_from_slice(&huffman::decode(data, out.len())?);
            Ok(())
        }
        Coder::Rans => rans::decode_to(data, out, true),
    }
}

/// Entropy-codes a byte sequence (masks, raw bytes); same contract as [`encode_u32`].
pub fn encode_bytes(coder: Coder, bytes: &[u8]) -> Vec<u8> {
    match coder {
        Coder::Huffman => huffman::encode(bytes),
        Coder::Rans => rans::encode(bytes),
    }
}

/// Inverse of [`encode_bytes`]; same contract as [`decode_u32`].
pub fn decode_bytes(coder: Coder, data: &[u8], count: usize) -> Result<Vec<u8>> {
    match coder {
        Coder::Huffman => huffman::decode(data, count),
        Coder::Rans => rans::decode(data, count),
    }
}

/// Compresses `data` into one zstd frame (content size recorded). `level` is 1..=22.
pub fn zstd_compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
    if !(1..=22).contains(&level) {
        return Err(Error::invalid(format!(
            "zstd level {level} is not in 1..=22"
        )));
    }
    zstd::bulk::compress(data, level)
        .map_err(|e| Error::internal(format!("zstd compression failed: {e}")))
}

/// Decompresses zstd data whose decompressed size must not exceed `max_len`
/// (error otherwise, without producing more than `max_len + 1` bytes).
pub fn zstd_decompress(data: &[u8], max_len: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    if data.is_empty() {
        return Err(Error::corrupt("zstd: empty input"));
    }
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(data) {
        if size > max_len as u64 {
            return Err(Error::corrupt(format!(
                "zstd: decompressed size {size} exceeds the limit {max_len}"
            )));
        }
        // One frame with a recorded size (what zstd_compress writes): bulk decode.
        if let Ok(v) = zstd::bulk::decompress(data, size as usize) {
            return Ok(v);
        }
    }
    // No recorded size, or more than one frame: bounded streaming decode.
    let dec = zstd::stream::read::Decoder::with_buffer(data)
        .map_err(|e| Error::internal(format!("zstd: cannot create decoder: {e}")))?;
    let mut out = Vec::new();
    dec.take(max_len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::corrupt(format!("zstd: {e}")))?;
    if out.len() > max_len {
        return Err(Error::corrupt(format!(
            "zstd: decompressed data exceeds the limit {max_len}"
        )));
    }
    Ok(out)
}

/// Zig-zag maps i32 to u32: 0, -1, 1, -2, 2, .. -> 0, 1, 2, 3, 4, ..
///
/// Kernel twin: kernels/common.cuh `fzk_zigzag`.
#[inline(always)]
pub fn zigzag(x: i32) -> u32 {
    ((x << 1) ^ (x >> 31)) as u32
}

/// Inverse of [`zigzag`].
///
/// Kernel twin: kernels/common.cuh `fzk_unzigzag`.
#[inline(always)]
pub fn unzigzag(x: u32) -> i32 {
    ((x >> 1) as i32) ^ -((x & 1) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const CODERS: [Coder; 2] = [Coder::Huffman, Coder::Rans];

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn peaked(r: &mut Rng, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let x = r.next();
                let z = (x.trailing_zeros() / 2) as i32;
                let v = if x >> 63 == 1 { -z } else { z };
                zigzag(if x % 997 == 0 { v * 5000 } else { v })
            })
            .collect()
    }

    #[test]
    fn coder_ids_and_names() {
        for c in CODERS {
            assert_eq!(Coder::from_u8(c as u8), Some(c));
            assert_eq!(Coder::parse(c.name()), Some(c));
        }
        assert_eq!(Coder::Huffman as u8, 1);
        assert_eq!(Coder::Rans as u8, 2);
        assert_eq!(Coder::from_u8(0), None);
        assert_eq!(Coder::from_u8(3), None);
        assert_eq!(Coder::parse("RANS"), Some(Coder::Rans));
        assert_eq!(Coder::parse("zstd"), None);
    }

    #[test]
    fn zigzag_maps() {
        let pairs = [
            (0, 0u32),
            (-1, 1),
            (1, 2),
            (-2, 3),
            (2, 4),
            (i32::MAX, u32::MAX - 1),
            (i32::MIN, u32::MAX),
        ];
        for (s, u) in pairs {
            assert_eq!(zigzag(s), u);
            assert_eq!(unzigzag(u), s);
        }
        let mut r = Rng(5);
        for _ in 0..10_000 {
            let u = r.next() as u32;
            assert_eq!(zigzag(unzigzag(u)), u);
        }
    }

    #[test]
    fn public_round_trips() {
        let mut r = Rng(0xabcdef);
        let sets: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![u32::MAX],
            vec![3; 70_000],
            peaked(&mut r, 1),
            peaked(&mut r, 65_535),
            peaked(&mut r, 65_536),
            peaked(&mut r, 200_001),
            (0..50_000).map(|_| r.next() as u32 % 64).collect(),
            (0..50_000).map(|_| r.next() as u32).collect(),
        ];
        for c in CODERS {
            for v in &sets {
                let e = encode_u32(c, v);
                assert_eq!(
                    &decode_u32(c, &e, v.len()).unwrap(),
                    v,
                    "{c:?} n={}",
                    v.len()
                );
                let b: Vec<u8> = v.iter().map(|&x| (x % 5) as u8).collect();
                let e = encode_bytes(c, &b);
                assert_eq!(decode_bytes(c, &e, b.len()).unwrap(), b);
            }
            let all_bytes: Vec<u8> = (0..100_000).map(|_| r.next() as u8).collect();
            let e = encode_bytes(c, &all_bytes);
            assert_eq!(decode_bytes(c, &e, all_bytes.len()).unwrap(), all_bytes);
        }
    }

    #[test]
    fn deterministic_across_thread_counts() {
        let mut r = Rng(0xd00d);
        let v = peaked(&mut r, 5 * 65536 + 123);
        let b: Vec<u8> = v.iter().map(|&x| (x % 3) as u8).collect();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                CODERS
                    .iter()
                    .map(|&c| (encode_u32(c, &v), encode_bytes(c, &b)))
                    .collect::<Vec<_>>()
            })
        };
        let one = run(1);
        assert_eq!(one, run(3));
        for (&c, (eu, eb)) in CODERS.iter().zip(&one) {
            assert_eq!(decode_u32(c, eu, v.len()).unwrap(), v);
            assert_eq!(decode_bytes(c, eb, b.len()).unwrap(), b);
        }
    }

    #[test]
    fn peaked_data_compresses() {
        let mut r = Rng(11);
        let v = peaked(&mut r, 1 << 18);
        for c in CODERS {
            let e = encode_u32(c, &v);
            let bits = e.len() as f64 * 8.0 / v.len() as f64;
            assert!(bits < 3.0, "{c:?}: {bits} bits/symbol");
        }
    }

    /// Decoding must return Ok or Err on any damage, never panic or hang.
    fn mutate_all(c: Coder, e: &[u8], n: usize, is_bytes: bool) {
        let dec = |d: &[u8], n: usize| -> bool {
            let r = if is_bytes {
                decode_bytes(c, d, n).map(|v| v.len())
            } else {
                decode_u32(c, d, n).map(|v| v.len())
            };
            match r {
                Ok(len) => {
                    assert_eq!(len, n);
                    true
                }
                Err(err) => {
                    assert_eq!(err.kind, ErrorKind::CorruptStream, "{}", err.message);
                    false
                }
            }
        };
        assert!(dec(e, n));
        for cut in 0..e.len() {
            dec(&e[..cut], n);
        }
        let mut m = e.to_vec();
        for i in 0..m.len() * 8 {
            m[i / 8] ^= 1 << (i % 8);
            dec(&m, n);
            m[i / 8] ^= 1 << (i % 8);
        }
        for &k in &[
            0usize,
            1,
            7,
            n.saturating_sub(1),
            n + 1,
            2 * n + 100,
            1 << 20,
        ] {
            dec(e, k);
        }
    }

    #[test]
    fn mutations_never_panic() {
        let mut r = Rng(0x5eed);
        let small = peaked(&mut r, 300);
        let mut wide: Vec<u32> = (0..40).map(|_| r.next() as u32).collect();
        wide.extend_from_slice(&small[..60]);
        let bytes: Vec<u8> = (0..200).map(|_| (r.next() % 4) as u8).collect();
        for c in CODERS {
            for v in [&small, &wide, &vec![9u32; 50], &vec![0u32, 1]] {
                mutate_all(c, &encode_u32(c, v), v.len(), false);
            }
            mutate_all(c, &encode_bytes(c, &bytes), bytes.len(), true);
            mutate_all(c, &encode_bytes(c, &[]), 0, true);
        }
    }

    #[test]
    fn random_input_never_panics() {
        let mut r = Rng(0x7777);
        for trial in 0..4000 {
            let len = (r.next() % 64) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            // Make some streams look plausible in their first bytes.
            if trial % 2 == 0 && len > 2 {
                d[0] = if trial % 4 == 0 { 16 } else { (d[0] % 4) + 1 };
                d[1] %= 16;
            }
            let n = (r.next() % 300) as usize;
            for c in CODERS {
                let _ = decode_u32(c, &d, n);
                let _ = decode_bytes(c, &d, n);
            }
        }
    }

    #[test]
    fn zstd_stage() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let z = zstd_compress(&data, 3).unwrap();
        assert!(z.len() < data.len() / 10);
        assert_eq!(zstd_decompress(&z, data.len()).unwrap(), data);
        assert_eq!(zstd_decompress(&z, usize::MAX).unwrap(), data);
        assert_eq!(
            zstd_decompress(&z, data.len() - 1).unwrap_err().kind,
            ErrorKind::CorruptStream
        );
        assert!(zstd_compress(&data, 0).is_err());
        assert!(zstd_compress(&data, 23).is_err());
        // A frame without a recorded size still honours the limit.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        let z2 = enc.finish().unwrap();
        assert_eq!(zstd_decompress(&z2, data.len()).unwrap(), data);
        assert!(zstd_decompress(&z2, 1000).is_err());
        for cut in [0, 1, 5, z.len() / 2, z.len() - 1] {
            assert!(zstd_decompress(&z[..cut], data.len()).is_err());
        }
        assert!(zstd_decompress(b"not zstd at all", 100).is_err());
        let empty = zstd_compress(&[], 1).unwrap();
        assert_eq!(zstd_decompress(&empty, 0).unwrap(), Vec::<u8>::new());
    }

    /// CPU time of the calling thread in seconds (Linux; None elsewhere).
    fn thread_cpu_s() -> Option<f64> {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
        Some(ns * 1e-9)
    }

    /// Best of three times of `f`. With a (one-thread) `pool`, `f` runs on the
    /// pool's thread and that thread's CPU time is measured (robust to a busy
    /// machine); otherwise wall-clock time.
    fn best_time<F: FnMut() + Send>(pool: Option<&rayon::ThreadPool>, mut f: F) -> f64 {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let cpu = match pool {
                Some(p) => p.install(|| {
                    let c0 = thread_cpu_s();
                    f();
                    c0.zip(thread_cpu_s()).map(|(a, b)| b - a)
                }),
                None => {
                    f();
                    None
                }
            };
            best = best.min(cpu.unwrap_or_else(|| t.elapsed().as_secs_f64()));
        }
        best
    }

    /// Throughput in a release build:
    /// `cargo test --release --lib codec::tests::throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn throughput() {
        let n = 1 << 24;
        let mut r = Rng(42);
        let peaked_u32 = peaked(&mut r, n);
        let uniform: Vec<u32> = (0..n).map(|_| r.next() as u32 % 4096).collect();
        let bytes: Vec<u8> = (0..n)
            .map(|_| (r.next().trailing_zeros() % 3) as u8)
            .collect();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let t = best_time(Some(&one), || {
            let mut v = vec![0u32; n];
            v.iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
            assert_eq!(std::hint::black_box(v).len(), n);
        });
        println!(
            "memory floor: allocate + write a u32 output: {:.1} M sym/s (load {:?})",
            n as f64 / t / 1e6,
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
        for (pool, label) in [(Some(&one), "1 thr (cpu)"), (None, "all (wall)")] {
            for c in CODERS {
                for (name, v) in [("u32 peaked", &peaked_u32), ("u32 unif4096", &uniform)] {
                    let mut e = Vec::new();
                    let te = best_time(pool, || e = encode_u32(c, v));
                    let td = best_time(pool, || {
                        assert_eq!(decode_u32(c, &e, n).unwrap().len(), n);
                    });
                    println!(
                        "{label:>11} {:>7} {name:>13}: {:6.3} bits/sym, encode {:7.1} M sym/s, decode {:7.1} M sym/s",
                        c.name(),
                        e.len() as f64 * 8.0 / n as f64,
                        n as f64 / te / 1e6,
                        n as f64 / td / 1e6
                    );
                }
                let mut e = Vec::new();
                let te = best_time(pool, || e = encode_bytes(c, &bytes));
                let td = best_time(pool, || {
                    assert_eq!(decode_bytes(c, &e, n).unwrap().len(), n);
                });
                println!(
                    "{label:>11} {:>7} {:>13}: {:6.3} bits/sym, encode {:7.1} M sym/s, decode {:7.1} M sym/s",
                    c.name(),
                    "bytes 3-val",
                    e.len() as f64 * 8.0 / n as f64,
                    n as f64 / te / 1e6,
                    n as f64 / td / 1e6
                );
            }
        }
    }

    /// Profiling aid: `FACTZ_CODER=huffman|rans cargo test --release --lib profile_codec -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn profile_codec() {
        let c = Coder::parse(&std::env::var("FACTZ_CODER").unwrap_or_default())
            .unwrap_or(Coder::Huffman);
        let n = 1 << 24;
        let mut r = Rng(42);
        let v = peaked(&mut r, n);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let mut e = Vec::new();
        let te = best_time(Some(&one), || e = encode_u32(c, &v));
        let td = best_time(Some(&one), || {
            assert_eq!(decode_u32(c, &e, n).unwrap().len(), n)
        });
        let ta = best_time(Some(&one), || {
            let mut a = vec![0u32; n];
            a.iter_mut().for_each(|x| *x = 1);
            assert_eq!(std::hint::black_box(a).len(), n);
        });
        println!(
            "{}: encode {:.1} M/s, decode {:.1} M/s, alloc+fill {:.1} M/s, decode minus alloc {:.1} M/s (thread cpu time)",
            c.name(),
            n as f64 / te / 1e6,
            n as f64 / td / 1e6,
            n as f64 / ta / 1e6,
            n as f64 / (td - ta) / 1e6
        );
    }
}
