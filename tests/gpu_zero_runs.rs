//! The zero-runs form's kernels (`kernels/zero_runs.cu`) against the CPU's
//! (`codec::zero_runs`), without a GPU: `gpu::zero_runs` drives them as host
//! C++ through `kernels/shim`.
//!
//! - Splitting gives the CPU's run tokens, raw bits and values wherever the
//!   form is tried, and nothing where it is not (dense, empty), under fibers
//!   and OS threads; runs of every bit length tokenize as on the CPU.
//! - Back: the runs from tokens and raw bits, and the symbols placed over a
//!   poisoned output, are the CPU's; tokens out of range, raw bits too long
//!   or short, and runs that do not add up to the segment (short, long, past
//!   u32) are refused as the CPU refuses them. The whole segment path (`gpu::field`) is checked stream by
//!   stream in tests/gpu_field.rs.

#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/nvrtc.rs"]
mod nvrtc;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::Rng;
use factz::codec::zero_runs;
use factz::error::ErrorKind;
use factz::gpu::exec::Buf;
use factz::gpu::zero_runs::ZeroRunKernels;
use kernels_host::Threads;
use shim_exec::Shim;

/// Symbols about one in `every` not zero.
fn sparse(r: &mut Rng, n: usize, every: usize) -> Vec<u32> {
    (0..n)
        .map(|_| match r.below(every) {
            0 => 1 + r.below(300) as u32,
            _ => 0,
        })
        .collect()
}

/// The cases up to `largest` symbols (an OS thread per CUDA thread is slow).
fn suite(largest: usize) -> Vec<(String, Vec<u32>)> {
    let mut r = Rng::new(17);
    let mut out = vec![
        ("empty".to_string(), vec![]),
        ("one zero".into(), vec![0]),
        ("one nonzero".into(), vec![5]),
        ("all zeros".into(), vec![0; 3000]),
        ("edges".into(), vec![9, 0, 0, 0, 4, 0, 0, 7]),
        ("half".into(), (0..1001).map(|i| i % 2).collect()),
        ("dense".into(), (1..5000).collect()),
    ];
    for (n, every) in [(9_000, 30), (70_000, 50), (300_001, 700), (1 << 17, 3)] {
        out.push((format!("{n} one in {every}"), sparse(&mut r, n, every)));
    }
    out.retain(|(_, v)| v.len() <= largest);
    out
}

fn split_matches(threads: Threads, largest: usize) {
    let e = Shim { threads };
    let k = ZeroRunKernels { exec: &e };
    for (name, v) in suite(largest) {
        let m = v.iter().filter(|&&x| x != 0).count();
        let dev = Buf::from(&e, &v).unwrap();
        let got = k.split(dev.view()).unwrap();
        if !zero_runs::worth_trying(v.len(), m) {
            assert!(got.is_none(), "{name}: split where the form is not tried");
            continue;
        }
        let got = got.unwrap_or_else(|| panic!("{name}: no split"));
        let (runs, values) = zero_runs::split(&v);
        let (tokens, raw) = zero_runs::tokens(&runs);
        assert_eq!(
            got.tokens.read(&e, 0..m + 1).unwrap(),
            tokens,
            "{name}: tokens"
        );
        assert_eq!(got.raw, raw, "{name}: raw bits");
        assert_eq!(got.values.read(&e, 0..m).unwrap(), values, "{name}: values");
        // And back, over a poisoned output.
        let back = k.runs(got.tokens.view(), &got.raw).unwrap();
        assert_eq!(back.read(&e, 0..m + 1).unwrap(), runs, "{name}: runs");
        let out = Buf::from(&e, &vec![0xdead_beef; v.len()]).unwrap();
        k.place(back.view(), got.values.view(), out.view()).unwrap();
        assert_eq!(out.read(&e, 0..v.len()).unwrap(), v, "{name}: placed");
    }
}

#[test]
fn split_and_place_are_the_cpus() {
    split_matches(Threads::Fibers, usize::MAX);
}

#[test]
fn os_threads_agree() {
    split_matches(Threads::Os, 10_000);
}

/// Runs of every bit length, at every bit offset of the packed words.
#[test]
fn tokens_of_every_length_are_the_cpus() {
    let e = Shim {
        threads: Threads::Fibers,
    };
    let k = ZeroRunKernels { exec: &e };
    let mut runs: Vec<u32> = (0..300).collect();
    for b in 3..32 {
        let p = 1u32 << b;
        runs.extend([p - 1, p, p + 1, p | p >> 1, p | (p - 1)]);
    }
    runs.push(u32::MAX);
    let (tokens, raw) = zero_runs::tokens(&runs);
    let t = Buf::from(&e, &tokens).unwrap();
    assert_eq!(
        k.runs(t.view(), &raw)
            .unwrap()
            .read(&e, 0..runs.len())
            .unwrap(),
        runs
    );
    // Bad tokens and raw bits: the CPU's errors.
    let mut past = tokens.clone();
    past[200] = zero_runs::MAX_TOKEN + 1;
    let mut longer = raw.clone();
    longer.push(0);
    for (what, tokens, raw) in [
        ("a token out of range", past, raw.clone()),
        ("raw bits too long", tokens.clone(), longer),
        (
            "raw bits too short",
            tokens.clone(),
            raw[..raw.len() - 1].to_vec(),
        ),
    ] {
        let cpu = zero_runs::untokens(&tokens, &raw).unwrap_err();
        let t = Buf::from(&e, &tokens).unwrap();
        let gpu = k.runs(t.view(), &raw).map(|_| ()).unwrap_err();
        assert_eq!(cpu.kind, ErrorKind::CorruptStream, "{what}: {cpu}");
        assert_eq!((gpu.kind, gpu.message), (cpu.kind, cpu.message), "{what}");
    }
}

#[test]
fn runs_that_do_not_fill_the_segment_are_refused() {
    let e = Shim {
        threads: Threads::Fibers,
    };
    let k = ZeroRunKernels { exec: &e };
    let values = vec![3u32, 1, 2];
    for (what, runs, n) in [
        ("short", vec![1u32, 0, 2, 0], 7),
        ("long", vec![1, 0, 2, 5], 7),
        ("past u32", vec![u32::MAX, u32::MAX, 2, 3], 9),
        ("right", vec![1, 0, 2, 1], 7),
    ] {
        let mut cpu_out = vec![0u32; n];
        let cpu = zero_runs::place(&runs, &values, &mut cpu_out);
        let out = Buf::<Shim, u32>::zeros(&e, n).unwrap();
        let r = Buf::from(&e, &runs).unwrap();
        let v = Buf::from(&e, &values).unwrap();
        let gpu = k.place(r.view(), v.view(), out.view());
        match (cpu, gpu) {
            (Ok(()), Ok(())) => {
                assert_eq!(what, "right");
                assert_eq!(out.read(&e, 0..n).unwrap(), cpu_out);
            }
            (Err(c), Err(g)) => {
                assert_eq!(c.kind, ErrorKind::CorruptStream, "{what}: {c}");
                assert_eq!((g.kind, g.message), (c.kind, c.message), "{what}");
            }
            (c, g) => panic!("{what}: CPU {c:?}, GPU {g:?}"),
        }
    }
}
