//! The GPU rANS coder (`kernels/rans.cu`, issue 6) against the CPU's
//! (`src/codec/rans.rs`), without a GPU: the library's host code
//! (`gpu::rans`, around the CPU's header code `codec::gpu_host::rans`)
//! drives the kernels as host C++ through `kernels/shim`.
//!
//! - Encoding gives the CPU's bytes, for words and bytes, on every plane kind
//!   (constant, sparse, rANS, several rANS planes, a sparse candidate that
//!   loses to rANS), empty and single-symbol streams, partial groups, block
//!   edges and a partial last block; under fibers and OS threads.
//! - CPU streams decode to the same symbols: quantization codes of turbulence
//!   (modes B and S), constant, sparse and rANS planes mixed, random words
//!   (four rANS planes), byte streams, several blocks with a partial last one.
//! - Corrupted streams (truncation, extra bytes, wrong counts, bit flips in
//!   the header and the blocks): the same symbols, or an error for both, of
//!   the same kind; a byte stream holding a second plane is refused.
//! - Format v1 streams (4 lanes per block) decode as on the CPU, corrupted
//!   ones too.
//! - On a GPU (`#[ignore]`d, scripts/gpu-check): the device, the same.

#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::{self, Rng};
use factz::codec::{self, gpu_host::rans as rans_host, Coder};
use factz::field::{blockwise, speculative};
use factz::gpu::exec::{Buf, Exec};
use factz::gpu::rans::RansKernels;
use kernels_host::Threads;
use shim_exec::Shim;

/// The kernels' decode of a u32 stream (`bytes`: a byte stream, one per u32).
fn decode<E: Exec>(e: &E, data: &[u8], count: usize, bytes: bool) -> factz::Result<Vec<u32>> {
    let k = RansKernels { exec: e };
    let out = Buf::<E, u32>::zeros(e, count)?;
    // Poison: a symbol the kernels skip shows.
    out.view().write(e, 0, &vec![0xdead_beef; count])?;
    if bytes {
        k.decode_bytes_into(data, out.view())?;
    } else {
        k.decode_into(data, out.view())?;
    }
    out.read(e, 0..count)
}

/// The suite of symbol streams: what the field pipeline codes, and planes of
/// every kind.
fn suite(turb_n: usize) -> Vec<(String, Vec<u32>)> {
    let turb = fields::turbulence(turb_n, 5);
    let mut r = Rng::new(31);
    let mut out = Vec::new();
    for rel in [1e-2, 1e-5] {
        let xi = rel * turb.finite_span();
        let b = blockwise::encode(&turb.u, &turb.v, turb_n, turb_n, xi, false);
        let s = speculative::encode(&turb.u, &turb.v, turb_n, turb_n, xi, false);
        out.push((format!("mode B codes {rel:e}"), b.codes));
        out.push((format!("mode S codes {rel:e}"), s.codes));
        out.push((format!("mode S ids {rel:e}"), s.ids));
    }
    out.push(("empty".into(), vec![]));
    out.push(("one symbol".into(), vec![7]));
    out.push(("constant".into(), vec![0x0102_0304; 70_001]));
    // Small values with rare large outliers: a rANS low plane, sparse high ones.
    let outliers: Vec<u32> = (0..150_000)
        .map(|i| {
            if i % 5000 == 17 {
                0x00ab_0000 | (i as u32 & 0xff)
            } else {
                r.below(9) as u32
            }
        })
        .collect();
    out.push(("outliers".into(), outliers));
    let words: Vec<u32> = (0..70_003).map(|_| r.next_u64() as u32).collect();
    out.push(("random words".into(), words));
    let geometric: Vec<u32> = (0..200_000)
        .map(|_| r.next_u64().trailing_zeros())
        .collect();
    out.push(("geometric".into(), geometric));
    out
}

#[test]
fn cpu_streams_decode_to_the_same_symbols() {
    let fibers = Shim {
        threads: Threads::Fibers,
    };
    // Plane kinds the suite reaches: constant, sparse, rANS, and several
    // rANS planes in one stream.
    let (mut constant, mut sparse, mut multi) = (false, false, false);
    for (what, symbols) in suite(256) {
        let data = codec::encode_u32(Coder::Rans, &symbols);
        let layout = rans_host::device_layout(&data, symbols.len(), 4).unwrap();
        constant |= layout.base != 0;
        sparse |= !layout.sparse.is_empty();
        multi |= layout.rans.len() > 1;
        let got =
            decode(&fibers, &data, symbols.len(), false).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(got == symbols, "{what}: GPU decode differs");
    }
    assert!(
        constant && sparse && multi,
        "plane kinds: {constant} {sparse} {multi}"
    );
    // Byte streams (the mask and raw sections).
    for (what, bytes) in byte_suite() {
        let data = codec::encode_bytes(Coder::Rans, &bytes);
        let got = decode(&fibers, &data, bytes.len(), true).unwrap();
        let want: Vec<u32> = bytes.iter().map(|&b| b.into()).collect();
        assert!(got == want, "{what}: GPU byte decode differs");
    }
}

/// The kernels' encode of `symbols` (`bytes`: a byte stream, one per u32).
fn encode<E: Exec>(e: &E, symbols: &[u32], bytes: bool) -> factz::Result<Vec<u8>> {
    let k = RansKernels { exec: e };
    let d = Buf::from(e, symbols)?;
    if bytes {
        k.encode_bytes(d.view())
    } else {
        k.encode(d.view())
    }
}

/// Byte streams: the mask and raw sections' kinds.
fn byte_suite() -> Vec<(&'static str, Vec<u8>)> {
    let mut r = Rng::new(5);
    vec![
        ("random bytes", r.bytes(100_000)),
        (
            "mostly zero",
            (0..130_000).map(|i| (i % 977 == 0) as u8).collect(),
        ),
        // Rare enough to try a sparse plane (2 bytes an entry under the
        // rANS estimate), gaps long enough (2-byte varints) that its body
        // passes the estimate: rANS after all.
        (
            "sparse loses",
            (0..200_000)
                .map(|i| {
                    if i % 129 == 0 {
                        1 + (i / 129 % 100) as u8
                    } else {
                        0
                    }
                })
                .collect(),
        ),
        ("constant bytes", vec![9u8; 5000]),
        ("zero bytes", vec![0u8; 3000]),
        ("empty bytes", vec![]),
    ]
}

#[test]
fn encoding_gives_the_cpu_bytes() {
    let fibers = Shim {
        threads: Threads::Fibers,
    };
    for (what, symbols) in suite(256) {
        let want = codec::encode_u32(Coder::Rans, &symbols);
        let got = encode(&fibers, &symbols, false).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(got == want, "{what}: GPU stream differs");
    }
    for (what, bytes) in byte_suite() {
        let want = codec::encode_bytes(Coder::Rans, &bytes);
        let wide: Vec<u32> = bytes.iter().map(|&b| b.into()).collect();
        let got = encode(&fibers, &wide, true).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(got == want, "{what}: GPU byte stream differs");
    }
    // Block edges: partial quads (n % 4), one symbol past a block, a block exactly.
    let mut r = Rng::new(3);
    for n in [2, 3, 5, 6, 7, 4097, 65_535, 65_536, 65_537, 65_538, 131_075] {
        let symbols: Vec<u32> = (0..n).map(|_| 1 + r.below(5) as u32).collect();
        let want = codec::encode_u32(Coder::Rans, &symbols);
        // (A few symbols are cheaper as a sparse plane.)
        assert!(n < 100 || want[2] == 1, "{n} symbols: a rANS plane");
        let got = encode(&fibers, &symbols, false).unwrap();
        assert!(got == want, "{n} symbols: GPU stream differs");
        // Both layouts: 4 lanes up to 2^16 symbols, 32 past that.
        let (_, lanes) = rans_host::encode_layout(n);
        assert_eq!(4usize << (want[0] >> 5), lanes, "{n} symbols");
    }
    // OS threads (truly concurrent atomics and blocks; slow, so small
    // streams): words over four planes, rare outliers, a 32-lane stream.
    let os = Shim {
        threads: Threads::Os,
    };
    let mut r = Rng::new(21);
    let words: Vec<u32> = (0..3000)
        .map(|_| r.next_u64() as u32 >> (r.below(32)))
        .collect();
    let outliers: Vec<u32> = (0..9000)
        .map(|i| if i % 700 == 3 { 0x3300 } else { i % 5 })
        .collect();
    // Past 2^16 symbols: 32 lanes to a warp.
    let wide: Vec<u32> = (0..(1 << 16) + 40).map(|i| i % 3).collect();
    for symbols in [words, outliers, wide] {
        let want = codec::encode_u32(Coder::Rans, &symbols);
        assert!(
            encode(&os, &symbols, false).unwrap() == want,
            "OS threads differ"
        );
    }
    // The suite reaches a sparse candidate that rANS beats, and a stream
    // with a sparse plane (checked on the CPU's streams, whose bytes the
    // kernels match).
    let loses = codec::encode_bytes(Coder::Rans, &byte_suite()[2].1);
    // (kind 1, or 3: its values as a map)
    assert!(
        [1, 3].contains(&loses[2]),
        "the 'sparse loses' stream is rANS-coded"
    );
    // A byte stream holding a value past 255 is an error, not a wrong stream.
    assert!(encode(&fibers, &[1, 2, 256], true).is_err());
}

#[test]
fn os_threads_agree() {
    let os = Shim {
        threads: Threads::Os,
    };
    let mut r = Rng::new(8);
    let symbols: Vec<u32> = (0..5000).map(|_| r.below(300) as u32).collect();
    let data = codec::encode_u32(Coder::Rans, &symbols);
    assert!(decode(&os, &data, symbols.len(), false).unwrap() == symbols);
}

/// The CPU and the kernels decode a damaged stream alike: to the same
/// symbols, or both refuse it with errors of the same kind (true then).
fn refused_alike(fibers: &Shim, what: &str, data: &[u8], count: usize) -> bool {
    let cpu = codec::decode_u32(Coder::Rans, data, count);
    let gpu = decode(fibers, data, count, false);
    match (&cpu, &gpu) {
        (Ok(c), Ok(g)) => {
            assert!(c == g, "{what}: decodes differ");
            false
        }
        (Err(c), Err(g)) => {
            assert_eq!(c.kind, g.kind, "{what}: {c} vs {g}");
            true
        }
        _ => panic!(
            "{what}: CPU {:?} but GPU {:?}",
            cpu.map(|v| v.len()),
            gpu.map(|v| v.len())
        ),
    }
}

#[test]
fn corrupt_streams_decode_as_on_the_cpu() {
    let fibers = Shim {
        threads: Threads::Fibers,
    };
    let mut r = Rng::new(14);
    let mut errors = 0;
    for (what, symbols) in suite(128) {
        if symbols.len() < 1000 {
            continue;
        }
        let n = symbols.len();
        let good = codec::encode_u32(Coder::Rans, &symbols);
        let cases = common::corrupt::stream_cases(&good, n, 30, &mut r);
        for (case, data, count) in cases {
            errors += usize::from(refused_alike(
                &fibers,
                &format!("{what}, {case}"),
                &data,
                count,
            ));
        }
    }
    assert!(errors >= 50, "only {errors} corruptions detected");
    // A word stream read as bytes: more than one plane, refused by both.
    let words = codec::encode_u32(Coder::Rans, &[0x0100, 0x0203, 7]);
    assert!(codec::decode_bytes(Coder::Rans, &words, 3).is_err());
    assert!(decode(&fibers, &words, 3, true).is_err());
}

/// Format v1 streams (4 lanes, 2^16-symbol blocks): the warp decoder runs
/// them with four lanes of its warp, to the CPU's symbols or errors.
#[test]
fn v1_streams_decode_as_on_the_cpu() {
    let fibers = Shim {
        threads: Threads::Fibers,
    };
    let mut r = Rng::new(41);
    let mut errors = 0;
    let mut long: Vec<u32> = (0..(1 << 16) + 999)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761) >> 27)
        .collect();
    long[77] = 1 << 20;
    let mut all = suite(128);
    all.push(("two v1 blocks".into(), long));
    for (what, symbols) in all {
        let n = symbols.len();
        let good = rans_host::encode_v1(&symbols);
        assert_eq!(good[0] >> 5, 0, "{what}: a v1 layout byte");
        assert_eq!(decode(&fibers, &good, n, false).unwrap(), symbols, "{what}");
        if n < 1000 {
            continue;
        }
        for (case, data, count) in common::corrupt::stream_cases(&good, n, 10, &mut r) {
            errors += usize::from(refused_alike(
                &fibers,
                &format!("{what}, {case}"),
                &data,
                count,
            ));
        }
    }
    assert!(errors >= 20, "only {errors} corruptions detected");
}

mod cuda {
    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU: scripts/gpu-check"]
    fn device_matches_the_cpu() {
        let cuda = nvrtc::device();
        for (what, symbols) in suite(512) {
            let data = codec::encode_u32(Coder::Rans, &symbols);
            let got = decode(&cuda, &data, symbols.len(), false)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(got == symbols, "{what}: device decode differs");
            let coded = encode(&cuda, &symbols, false).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(coded == data, "{what}: device stream differs");
        }
        for (what, bytes) in byte_suite() {
            let wide: Vec<u32> = bytes.iter().map(|&b| b.into()).collect();
            let coded = encode(&cuda, &wide, true).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                coded == codec::encode_bytes(Coder::Rans, &bytes),
                "{what}: device byte stream differs"
            );
        }
    }
}
