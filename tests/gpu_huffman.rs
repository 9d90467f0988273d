//! The GPU Huffman coder (`kernels/huffman.cu`, issue 6) against the CPU's
//! (`src/codec/huffman.rs`), bit for bit, without a GPU: the library's own host
//! code (`gpu::huffman`, around `factz::codec::gpu_host::huffman`: the CPU's table
//! builder and header code) drives the kernels as host C++ through
//! `kernels/shim` (tests/common/shim_exec.rs).
//!
//! - Counts: the kernels' per-symbol counts equal the CPU encoder's histogram
//!   (shared-memory per-block histograms for alphabets up to 4096, global
//!   atomics above).
//! - Encoding: the stream built from the kernels' counts and packed blocks is
//!   `codec::encode_u32(Huffman, ..)` byte for byte.
//! - Decoding: the block decoder gives what `codec::decode_u32` gives, on CPU
//!   streams and on corrupted ones (same symbols, or an error for both).
//!
//! Inputs: quantization codes of synth turbulence compressed with mode B and
//! mode S, and adversarial streams (empty, one symbol, two, equiprobable
//! alphabets on both histogram paths, geometric counts that hit the 24-bit code
//! length limit, lengths that are not multiples of 32, 64 or the block size).

#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::{self, Rng};
use factz::codec::gpu_host::huffman as host;
use factz::codec::{self, Coder};
use factz::error::ErrorKind;
use factz::field::{blockwise, speculative};
use factz::gpu::exec::View;
use factz::gpu::huffman::HuffmanKernels;
use kernels_host::Threads;
use shim_exec::Shim;

static FIBERS: Shim = Shim {
    threads: Threads::Fibers,
};
static OS: Shim = Shim {
    threads: Threads::Os,
};

/// The library's Huffman host code on the shim.
fn kernels(threads: Threads) -> HuffmanKernels<'static, Shim> {
    HuffmanKernels {
        exec: match threads {
            Threads::Fibers => &FIBERS,
            Threads::Os => &OS,
        },
    }
}

/// Host symbols as resident ones: the shim's memory is host memory.
fn view(symbols: &[u32]) -> View<u32> {
    // SAFETY: the slice outlives every use of the view in these helpers.
    unsafe { View::from_raw(symbols.as_ptr() as u64, symbols.len()) }
}

/// The kernels' dense counts (max symbol + 1 entries; empty for no symbols),
/// None past the dense limit.
fn gpu_counts(symbols: &[u32], threads: Threads) -> Option<Vec<u64>> {
    let k = kernels(threads);
    let max = k.max(view(symbols)).unwrap();
    assert_eq!(
        max,
        symbols.iter().copied().max().unwrap_or(0),
        "GPU max symbol"
    );
    k.histogram(view(symbols)).unwrap()
}

/// The kernels' stream (None when the alphabet is too wide for the dense lookup).
fn gpu_encode(symbols: &[u32], threads: Threads) -> Option<Vec<u8>> {
    match kernels(threads).encode(view(symbols)) {
        Ok(v) => Some(v),
        Err(e) if e.kind == ErrorKind::Unsupported => None,
        Err(e) => panic!("GPU encode: {e}"),
    }
}

/// The kernels' decode of a stream (header read on the host).
fn gpu_decode(data: &[u8], count: usize, threads: Threads) -> factz::Result<Vec<u32>> {
    kernels(threads).decode(data, count)
}

/// Counts, bytes and decode against the CPU; returns the longest code length.
fn check_with(what: &str, symbols: &[u32], threads: Threads) -> u32 {
    let what = format!("{what} ({} symbols, {threads:?})", symbols.len());
    let (syms, counts) = host::cpu_counts(symbols);
    let dense = gpu_counts(symbols, threads).unwrap_or_else(|| panic!("{what}: alphabet too wide"));
    let (gs, gc) = host::sparse_counts(&dense);
    assert_eq!(gs, syms, "{what}: GPU symbols");
    assert_eq!(gc, counts, "{what}: GPU counts");
    let cpu = codec::encode_u32(Coder::Huffman, symbols);
    let gpu = gpu_encode(symbols, threads).unwrap_or_else(|| panic!("{what}: alphabet too wide"));
    assert!(
        gpu == cpu,
        "{what}: GPU stream differs from the CPU's ({} vs {} bytes)",
        gpu.len(),
        cpu.len()
    );
    let back = gpu_decode(&cpu, symbols.len(), threads)
        .unwrap_or_else(|e| panic!("{what}: GPU decode of the CPU stream: {e}"));
    assert!(back == symbols, "{what}: GPU decode differs from the input");
    host::code(&syms, &counts)
        .lens
        .iter()
        .map(|&l| u32::from(l))
        .max()
        .unwrap_or(0)
}

fn check(what: &str, symbols: &[u32]) -> u32 {
    check_with(what, symbols, Threads::Fibers)
}

fn shuffle(v: &mut [u32], r: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, r.below(i + 1));
    }
}

#[test]
fn quantization_codes_of_turbulence() {
    // 256^2 vertices: several Huffman blocks, the last one partial.
    let turb = fields::turbulence(256, 5);
    let small = fields::window(&turb, 3, 7, 61, 93);
    let mut blocks_seen = 0;
    for f in [&turb, &small] {
        for rel in [1e-2, 1e-4, 1e-6] {
            let xi = rel * f.finite_span();
            let b = blockwise::encode(&f.u, &f.v, f.ny, f.nx, xi, false).codes;
            let s = speculative::encode(&f.u, &f.v, f.ny, f.nx, xi, false).codes;
            assert!(
                b.len() > 1000 && s.len() > 1000,
                "{}: too few codes",
                f.name
            );
            check(&format!("mode B codes of {} at {rel:e}", f.name), &b);
            check(&format!("mode S codes of {} at {rel:e}", f.name), &s);
            blocks_seen = blocks_seen.max(b.len().div_ceil(1 << host::BLOCK_LOG2));
        }
    }
    assert!(blocks_seen >= 2, "no multi-block stream");
}

#[test]
fn degenerate_streams() {
    check("empty", &[]);
    check("one symbol", &[7]);
    check("zero repeated", &[0; 70_001]);
    check("one symbol repeated", &[4095; 1000]);
    // Decoded by a fill kernel: more symbols than its grid has threads.
    check("one symbol past a grid", &vec![9; 300_000]);
    // Largest symbol 4095 vs 4096: the shared and the global histogram paths.
    check("two symbols, shared bins", &[0, 4095, 4095]);
    check("two symbols, global bins", &[0, 4096, 4096]);
    // Byte streams (masks) have the same format: the u32 kernels give encode_bytes' bytes.
    let mut r = Rng::new(10);
    let bytes: Vec<u8> = (0..70_000).map(|_| (r.next_u64() % 7) as u8).collect();
    let wide: Vec<u32> = bytes.iter().map(|&b| u32::from(b)).collect();
    check("bytes as u32", &wide);
    assert!(
        kernels(Threads::Fibers).encode_host(&wide).unwrap()
            == codec::encode_bytes(Coder::Huffman, &bytes)
    );
    let mut r = Rng::new(11);
    for n in [2usize, 31, 33, 65, 65_535, 65_536, 65_537] {
        let two: Vec<u32> = (0..n).map(|i| [3, 9][(i + r.below(2)) % 2]).collect();
        let two: Vec<u32> = if two.iter().all(|&s| s == two[0]) {
            vec![3, 9]
        } else {
            two
        };
        assert_eq!(check(&format!("two symbols, n {n}"), &two), 1);
    }
}

#[test]
fn equiprobable_alphabets() {
    let mut r = Rng::new(12);
    // 256 and 4096 symbols: shared-memory histograms, flat 8- and 12-bit codes;
    // 5000: global histogram, 12- and 13-bit codes.
    for (alphabet, reps, len) in [(256u32, 3, 8), (4096, 17, 12), (5000, 2, 13)] {
        let mut v: Vec<u32> = (0..alphabet * reps).map(|i| i % alphabet).collect();
        shuffle(&mut v, &mut r);
        assert_eq!(check(&format!("{alphabet} equiprobable"), &v), len);
    }
}

#[test]
fn skewed_counts_reach_the_length_limit() {
    // Fibonacci counts over k symbols make a code k - 1 bits deep: 25 symbols
    // reach the CPU's 24-bit limit exactly, 26 go past it and get folded.
    let mut r = Rng::new(13);
    for (k, longest) in [(25u32, 24), (26, 24)] {
        let (mut a, mut b) = (1usize, 1usize);
        let mut v = Vec::new();
        for s in 0..k {
            v.extend(std::iter::repeat(s * 3 + 1).take(a));
            (a, b) = (b, a + b);
        }
        shuffle(&mut v, &mut r);
        let got = check(&format!("Fibonacci counts, {k} symbols"), &v);
        if k == 25 {
            assert_eq!(got, longest, "{k} symbols");
        } else {
            assert!(got <= longest, "{k} symbols: {got}-bit codes");
        }
    }
    // Peaked around zero with a sparse tail, as quantization codes are.
    for n in [1usize, 63, 64, 100, 3 * 65_536 + 17] {
        let peaked: Vec<u32> = (0..n)
            .map(|_| {
                let x = r.next_u64();
                (x.trailing_zeros() / 2) + if x % 1000 == 0 { 70_000 } else { 0 }
            })
            .collect();
        check(&format!("peaked, n {n}"), &peaked);
    }
}

#[test]
fn os_threads_agree() {
    let turb = fields::turbulence(128, 3);
    let b = blockwise::encode(&turb.u, &turb.v, 128, 128, 1e-4 * turb.finite_span(), false).codes;
    check_with(
        "mode B codes of turb128",
        &b[..b.len().min(20_000)],
        Threads::Os,
    );
}

#[test]
fn wide_alphabets_stay_on_the_cpu() {
    // Past the dense lookup's 2^24 symbols the host keeps the CPU encoder.
    let v = [0u32, 1 << 24, 5, 1 << 24];
    let (syms, counts) = host::cpu_counts(&v);
    assert!(host::lookup(&host::code(&syms, &counts)).is_none());
    assert!(gpu_encode(&v, Threads::Fibers).is_none());
    assert!(gpu_encode(&[u32::MAX; 33], Threads::Fibers).is_none());
    check("largest dense symbol", &[0, host::MAX_DENSE_SYMBOL, 0]);
    // Decoding has no such limit: the table is the stream's.
    let wide: Vec<u32> = (0..70_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let cpu = codec::encode_u32(Coder::Huffman, &wide);
    assert!(gpu_decode(&cpu, wide.len(), Threads::Fibers).unwrap() == wide);
}

#[test]
fn corrupt_streams_decode_as_on_the_cpu() {
    let turb = fields::turbulence(128, 3);
    let mut codes =
        blockwise::encode(&turb.u, &turb.v, 128, 128, 1e-5 * turb.finite_span(), false).codes;
    codes.extend_from_within(..);
    codes.extend_from_within(..1000); // two blocks
    let n = codes.len();
    let good = codec::encode_u32(Coder::Huffman, &codes);
    let mut r = Rng::new(14);
    let mut errors = 0;
    let mut cases = common::corrupt::stream_cases(&good, n, 60, &mut r);
    let mut padded = good.clone();
    *padded.last_mut().unwrap() |= 0x80;
    cases.push(("padding bit set".into(), padded, n));
    for (what, data, count) in cases {
        let cpu = codec::decode_u32(Coder::Huffman, &data, count);
        let gpu = gpu_decode(&data, count, Threads::Fibers);
        match (&cpu, &gpu) {
            (Ok(c), Ok(g)) => assert!(c == g, "{what}: decodes differ"),
            (Err(_), Err(_)) => errors += 1,
            _ => panic!(
                "{what}: CPU {:?} but GPU {:?}",
                cpu.map(|v| v.len()),
                gpu.map(|v| v.len())
            ),
        }
    }
    assert!(errors >= 10, "only {errors} corruptions detected");
}

mod cuda {
    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU: scripts/gpu-check"]
    fn device_matches_the_cpu() {
        let cuda = nvrtc::device();
        let k = HuffmanKernels { exec: &cuda };
        let turb = fields::turbulence(512, 3);
        let mut r = Rng::new(21);
        let mut suite: Vec<(String, Vec<u32>)> = Vec::new();
        for rel in [1e-2, 1e-4, 1e-6] {
            let xi = rel * turb.finite_span();
            let b = blockwise::encode(&turb.u, &turb.v, 512, 512, xi, false).codes;
            let s = speculative::encode(&turb.u, &turb.v, 512, 512, xi, false).codes;
            suite.push((format!("mode B {rel:e}"), b));
            suite.push((format!("mode S {rel:e}"), s));
        }
        suite.push(("empty".into(), vec![]));
        suite.push(("constant".into(), vec![5; 100_003]));
        suite.push(("two".into(), (0..65_537).map(|i| i % 2).collect()));
        for alphabet in [256u32, 4096, 5000, 70_000] {
            let mut v: Vec<u32> = (0..alphabet * 7).map(|i| i % alphabet).collect();
            shuffle(&mut v, &mut r);
            suite.push((format!("{alphabet} equiprobable"), v));
        }
        let (mut a, mut b) = (1usize, 1usize);
        let mut fib = Vec::new();
        for s in 0..26u32 {
            fib.extend(std::iter::repeat(s).take(a));
            (a, b) = (b, a + b);
        }
        shuffle(&mut fib, &mut r);
        suite.push(("Fibonacci".into(), fib));
        for (what, v) in &suite {
            let cpu = codec::encode_u32(Coder::Huffman, v);
            let dev = k.encode_host(v).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(dev == cpu, "{what}: device stream differs");
            let back = k
                .decode(&cpu, v.len())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(&back == v, "{what}: device decode differs");
            let mut bad = cpu.clone();
            if let Some(x) = bad.last_mut() {
                *x ^= 0x80;
                let c = codec::decode_u32(Coder::Huffman, &bad, v.len());
                let g = k.decode(&bad, v.len());
                assert_eq!(c.is_ok(), g.is_ok(), "{what}: corrupt padding");
            }
        }
    }
}
