//! The command-line tool, run as a real process on a small synthetic field:
//! round trips in both modes and layouts, stdin/stdout, `inspect`, `--json`,
//! `verify`'s exit status, and one-line errors for bad input (never a panic).

#[path = "common/cli.rs"]
mod cli;

use cli::*;
use std::path::Path;

/// The field's bytes in a layout.
fn raw(layout: &str) -> Vec<u8> {
    let (u, v) = field();
    match layout {
        "soa" => bytes_of(u.iter().chain(&v).copied()),
        "aos" => bytes_of(u.iter().zip(&v).flat_map(|(&a, &b)| [a, b])),
        _ => unreachable!(),
    }
}

fn range() -> f64 {
    let (u, v) = field();
    let lo = u.iter().chain(&v).fold(f32::INFINITY, |a, &b| a.min(b)) as f64;
    let hi = u.iter().chain(&v).fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
    hi - lo
}

// ------------------------------------------------------------ a small JSON reader

// ------------------------------------------------------------------------ tests

#[test]
fn round_trips_in_both_modes_and_layouts() {
    let s = Scratch::new("roundtrip");
    let rel = 1e-3;
    let eb = rel * range();
    for layout in ["soa", "aos"] {
        let input = s.path(&format!("in-{layout}.f32"));
        write(&input, &raw(layout));
        for mode in ["b", "s"] {
            for coder in ["huffman", "rans"] {
                let fz = s.path(&format!("{layout}-{mode}-{coder}.fz"));
                let back = s.path(&format!("{layout}-{mode}-{coder}.f32"));
                run_ok(&[
                    "compress", "--kind", "field2d", "--shape", SHAPE, "--layout", layout,
                    "--mode", mode, "--rel", "1e-3", "--coder", coder, &input, &fz,
                ]);
                run_ok(&["decompress", &fz, &back]);
                // Same layout as the input: every value within the bound in place.
                let (a, b) = (f32s(&read(&input)), f32s(&read(&back)));
                assert_eq!(a.len(), b.len(), "{layout} {mode} {coder}");
                for (k, (x, y)) in a.iter().zip(&b).enumerate() {
                    assert!(
                        ((x - y) as f64).abs() <= eb * (1.0 + 1e-6),
                        "{layout} {mode} {coder}: value {k}: {x} vs {y}"
                    );
                }
                // verify against the stream (shape and layout from it) and against raw.
                let out = run_ok(&["verify", &input, &fz]);
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(text.contains("P1 lost:          0"), "{text}");
                assert!(text.contains("OK"), "{text}");
                run_ok(&[
                    "verify", &input, &back, "--shape", SHAPE, "--layout", layout, "--rel", "1e-3",
                ]);
            }
        }
    }
}

/// `--backend`: cpu and auto give the default's bytes and say which backend
/// ran; cuda either runs on a GPU (same bytes) or fails on one line with the
/// reason (no GPU, driver or NVRTC, or a build without CUDA); anything else
/// is a usage error.
#[test]
fn backend_choice_keeps_the_stream() {
    let s = Scratch::new("backend");
    let field_in = s.path("field.f32");
    write(&field_in, &raw("soa"));
    // A small particle set: a jittered lattice, spacing 0.1, b 0.11.
    let mut pos = Vec::new();
    for k in 0..512u32 {
        let (x, y, z) = (k % 8, k / 8 % 8, k / 64);
        let j = (k.wrapping_mul(2_654_435_761) % 1000) as f32 * 1e-5;
        pos.extend([
            x as f32 * 0.1 + j,
            y as f32 * 0.1 - j,
            z as f32 * 0.1 + 0.5 * j,
        ]);
    }
    let part_in = s.path("particles.f32");
    write(&part_in, &bytes_of(pos));
    let field_args = [
        "compress", "--kind", "field2d", "--shape", SHAPE, "--rel", "1e-3",
    ];
    let part_args = [
        "compress",
        "--kind",
        "particles",
        "--b",
        "0.11",
        "--rel",
        "1e-3",
    ];
    for (name, args, input) in [
        (
            "field b",
            [&field_args[..], &["--mode", "b"]].concat(),
            &field_in,
        ),
        (
            "field s",
            [&field_args[..], &["--mode", "s"]].concat(),
            &field_in,
        ),
        ("particles", part_args.to_vec(), &part_in),
    ] {
        let with = |extra: &[&str], out: &str| -> Vec<String> {
            let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            v.extend(extra.iter().map(|a| a.to_string()));
            v.push(input.clone());
            v.push(out.to_string());
            v
        };
        let call = |v: &[String]| run(factz().args(v));
        let want_path = s.path(&format!("{name}-default.fz"));
        let out = call(&with(&[], &want_path));
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = read(&want_path);
        for choice in ["cpu", "auto", "cuda"] {
            let path = s.path(&format!("{name}-{choice}.fz"));
            let argv = with(&["--backend", choice, "-v"], &path);
            let out = call(&argv);
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            if choice == "cuda" && !out.status.success() {
                let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                check_err(&out, &argv, "cuda");
                continue;
            }
            assert!(out.status.success(), "{name} --backend {choice}: {err}");
            assert!(
                read(&path) == want,
                "{name} --backend {choice}: other bytes"
            );
            let ran = err.rsplit("; backend ").next().unwrap_or("").trim();
            match choice {
                "cpu" => assert_eq!(ran, "cpu", "{name}: {err}"),
                "cuda" => assert_eq!(ran, "cuda", "{name}: {err}"),
                _ => assert!(
                    ran == "cuda" || ran.starts_with("cpu (auto: "),
                    "{name}: {err}"
                ),
            }
        }
        let bad = with(&["--backend", "gpu"], &s.path("bad.fz"));
        let out = call(&bad);
        assert_eq!(out.status.code(), Some(2), "{name}: --backend gpu");
        let argv: Vec<&str> = bad.iter().map(String::as_str).collect();
        check_err(&out, &argv, "--backend");
    }
}

#[test]
fn zstd_chunk_verify_and_abs_bound() {
    let s = Scratch::new("options");
    let input = s.path("in.f32");
    write(&input, &raw("soa"));
    let fz = s.path("x.fz");
    run_ok(&[
        "compress", "--kind", "field2d", "--shape", SHAPE, "--abs", "0.01", "--zstd", "3",
        "--chunk", "--verify", &input, &fz,
    ]);
    let j = parse_json(&String::from_utf8(run_ok(&["inspect", "--json", &fz]).stdout).unwrap());
    assert_eq!(j.get("abs_bound").num(), 0.01);
    assert_eq!(j.get("zstd_level").num(), 3.0);
    let flags: Vec<&str> = j.get("flags").arr().iter().map(J::str).collect();
    assert!(
        flags.contains(&"verified") && flags.contains(&"chunk_of_larger"),
        "{flags:?}"
    );
    let j =
        parse_json(&String::from_utf8(run_ok(&["verify", "--json", &input, &fz]).stdout).unwrap());
    assert_eq!(j.get("ok"), &J::Bool(true));
    assert_eq!(j.get("abs_bound").num(), 0.01);
    assert!(j.get("max_abs_error").num() <= 0.01);
}

#[test]
fn stdin_and_stdout() {
    let s = Scratch::new("pipes");
    let input = raw("aos");
    let out = run_stdin(
        &[
            "compress", "--kind", "field2d", "--shape", SHAPE, "--layout", "aos", "-", "-",
        ],
        input.clone(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stream = out.stdout;
    assert!(stream.starts_with(b"FACTZ"));

    let out = run_stdin(&["decompress", "-", "-"], stream.clone());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), input.len());

    // verify with the original on stdin and the stream from a file
    let fz = s.path("p.fz");
    write(&fz, &stream);
    let out = run_stdin(&["verify", "-", &fz], input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn inspect_and_json_output() {
    let s = Scratch::new("inspect");
    let input = s.path("in.f32");
    write(&input, &raw("soa"));
    let fz = s.path("x.fz");
    run_ok(&[
        "compress", "--kind", "field2d", "--shape", SHAPE, "--mode", "b", "--coder", "huffman",
        &input, &fz,
    ]);

    let text = String::from_utf8(run_ok(&["inspect", &fz]).stdout).unwrap();
    let version = format!("version {}", factz::format::VERSION);
    for want in [
        version.as_str(),
        "field2d",
        "40 x 52",
        "soa",
        "huffman",
        "sections",
    ] {
        assert!(text.contains(want), "inspect lacks {want}: {text}");
    }

    let j = parse_json(&String::from_utf8(run_ok(&["inspect", &fz, "--json"]).stdout).unwrap());
    for key in [
        "version",
        "kind",
        "dtype",
        "flags",
        "shape",
        "layout",
        "abs_bound",
        "mode",
        "coder",
        "zstd_level",
        "params",
        "sections",
        "ratio",
    ] {
        j.get(key);
    }
    assert_eq!(j.get("kind").str(), "field2d");
    assert_eq!(j.get("mode").str(), "b");
    assert_eq!(j.get("coder").str(), "huffman");
    assert_eq!(j.get("layout").str(), "soa");
    let shape: Vec<f64> = j.get("shape").arr().iter().map(J::num).collect();
    assert_eq!(shape, [NY as f64, NX as f64]);
    let eb = j.get("abs_bound").num();
    assert!(
        (eb - 1e-3 * range()).abs() <= 1e-9,
        "default bound is rel 1e-3, got {eb}"
    );
    let sections = j.get("sections").arr();
    assert!(!sections.is_empty());
    let total: f64 = sections.iter().map(|s| s.get("stored_len").num()).sum();
    assert!(total < read(&fz).len() as f64);
    for s in sections {
        for key in ["id", "offset", "stored_len", "raw_len", "zstd", "crc32"] {
            s.get(key);
        }
        assert_eq!(s.get("crc_ok"), &J::Bool(true));
    }

    let j =
        parse_json(&String::from_utf8(run_ok(&["verify", &input, &fz, "--json"]).stdout).unwrap());
    for key in [
        "critical_points",
        "p1_lost",
        "p2_spurious",
        "p3_type_changed",
        "max_abs_error",
        "psnr_db",
        "ratio",
        "bits_per_value",
        "abs_bound",
    ] {
        j.get(key);
    }
    assert_eq!(j.get("ok"), &J::Bool(true));
    assert!(
        j.get("critical_points").num() > 0.0,
        "the test field should have critical points"
    );
    assert_eq!(
        j.get("p1_lost").num() + j.get("p2_spurious").num() + j.get("p3_type_changed").num(),
        0.0
    );
    assert!(j.get("ratio").num() > 0.0);
}

#[test]
fn bench_runs_small_and_prints_json() {
    let out = run_ok(&[
        "bench", "--shape", "24,32", "--repeat", "1", "--rel", "1e-2", "--json",
    ]);
    let j = parse_json(&String::from_utf8(out.stdout).unwrap());
    assert!(j.get("threads").num() >= 1.0);
    assert!(j.get("fields").arr()[0].get("critical_points").num() >= 0.0);
    let results = j.get("results").arr();
    // 2 modes x 2 coders + zstd (+ SZ3 when built)
    assert!(results.len() >= 5, "{results:?}");
    for r in results {
        for key in [
            "method",
            "ratio",
            "bits_per_value",
            "psnr_db",
            "max_error_over_bound",
            "p1_lost",
            "p2_spurious",
            "p3_type_changed",
            "compress_mb_s",
            "decompress_mb_s",
        ] {
            r.get(key);
        }
    }
    assert!(results.iter().any(|r| r.get("method").str() == "zstd-3"));

    // float64: both modes, every factz row keeps every critical point and
    // the ratio counts 8-byte values (zstd's ratio is about half the f32 one).
    let out = run_ok(&[
        "bench", "--shape", "24,32", "--repeat", "1", "--rel", "1e-2", "--dtype", "f64", "--json",
    ]);
    let j = parse_json(&String::from_utf8(out.stdout).unwrap());
    let rows = j.get("results").arr();
    let factz_rows: Vec<&J> = rows
        .iter()
        .filter(|r| r.get("method").str() == "factz")
        .collect();
    assert_eq!(factz_rows.len(), 4, "modes B and S, two coders: {rows:?}");
    for r in factz_rows {
        let lost = r.get("p1_lost").num() + r.get("p2_spurious").num();
        assert_eq!(lost + r.get("p3_type_changed").num(), 0.0);
    }

    // The table form, and a raw input file with --shape.
    let s = Scratch::new("bench");
    let input = s.path("in.f32");
    write(&input, &raw("soa"));
    let out = run_ok(&[
        "bench", "--shape", SHAPE, "--repeat", "1", "--rel", "1e-2", "--mode", "s", "--coder",
        "rans", &input,
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("critical points") && text.contains("zstd-3") && text.contains("in "),
        "{text}"
    );
}

#[test]
fn verify_fails_on_a_tampered_reconstruction() {
    let s = Scratch::new("tamper");
    let input = s.path("in.f32");
    write(&input, &raw("soa"));
    let fz = s.path("x.fz");
    let back = s.path("back.f32");
    run_ok(&[
        "compress", "--kind", "field2d", "--shape", SHAPE, "--rel", "1e-3", &input, &fz,
    ]);
    run_ok(&["decompress", &fz, &back]);
    run_ok(&["verify", &input, &back, "--shape", SHAPE, "--rel", "1e-3"]);

    // One value moved far beyond the bound.
    let mut vals = f32s(&read(&back));
    vals[NX * 7 + 11] += (0.05 * range()) as f32;
    write(&back, &bytes_of(vals));
    let out = run(factz().args(["verify", &input, &back, "--shape", SHAPE, "--rel", "1e-3"]));
    check_err(&out, &[], "verify failed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAILED"));
    let out = run(factz().args([
        "verify", &input, &back, "--shape", SHAPE, "--rel", "1e-3", "--json",
    ]));
    check_err(&out, &[], "exceed the bound");
    let j = parse_json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(j.get("ok"), &J::Bool(false));
    assert!(j.get("values_outside_bound").num() >= 1.0);

    // A different original against the stream fails too.
    let (u, v) = field();
    let other: Vec<f32> = u.iter().chain(&v).map(|x| -x).collect();
    let other_path = s.path("other.f32");
    write(&other_path, &bytes_of(other));
    let out = run(factz().args(["verify", &other_path, &fz]));
    check_err(&out, &[], "verify failed");
}

#[test]
fn bad_input_gives_one_line_errors() {
    let s = Scratch::new("errors");
    let input = s.path("in.f32");
    write(&input, &raw("soa"));
    let short = s.path("short.f32");
    write(&short, &raw("soa")[..100]);
    let fz = s.path("x.fz");
    let out = s.path("out.fz");
    let nowhere = s.path("missing.f32");
    run_ok(&[
        "compress", "--kind", "field2d", "--shape", SHAPE, &input, &fz,
    ]);

    // wrong size for the shape, both ways
    run_err(
        &[
            "compress", "--kind", "field2d", "--shape", SHAPE, &short, &out,
        ],
        "bytes",
    );
    run_err(
        &[
            "compress", "--kind", "field2d", "--shape", "40,53", &input, &out,
        ],
        "bytes",
    );
    run_err(&["verify", &short, &fz], "bytes");
    assert!(!Path::new(&out).exists(), "no output on failure");
    // unreadable file
    run_err(
        &[
            "compress", "--kind", "field2d", "--shape", SHAPE, &nowhere, &out,
        ],
        "missing.f32",
    );
    run_err(&["inspect", &nowhere], "missing.f32");
    // missing arguments and flags
    run_err(&[], "no command");
    run_err(
        &["compress", "--kind", "field2d", "--shape", SHAPE, &input],
        "missing",
    );
    run_err(&["compress", "--kind", "field2d", &input, &out], "--shape");
    run_err(&["decompress", &fz], "missing");
    run_err(&["verify", &input, &input], "--shape");
    run_err(&["compress", "--shape"], "needs a value");
    // bad values
    for shape in [
        "40",
        "40,",
        "a,b",
        "0,52",
        "40,52,3",
        "-4,52",
        "99999999999,99999999999",
    ] {
        run_err(
            &[
                "compress", "--kind", "field2d", "--shape", shape, &input, &out,
            ],
            "shape",
        );
    }
    run_err(
        &["compress", "--shape", SHAPE, "--mode", "q", &input, &out],
        "--mode",
    );
    run_err(
        &[
            "compress", "--shape", SHAPE, "--layout", "xyz", &input, &out,
        ],
        "--layout",
    );
    run_err(
        &["compress", "--shape", SHAPE, "--coder", "lz4", &input, &out],
        "--coder",
    );
    run_err(
        &["compress", "--shape", SHAPE, "--abs", "-1", &input, &out],
        "--abs",
    );
    run_err(
        &["compress", "--shape", SHAPE, "--rel", "nan", &input, &out],
        "--rel",
    );
    run_err(
        &[
            "compress", "--shape", SHAPE, "--abs", "1", "--rel", "1", &input, &out,
        ],
        "not both",
    );
    run_err(
        &["compress", "--shape", SHAPE, "--zstd", "23", &input, &out],
        "--zstd",
    );
    run_err(
        &["compress", "--kind", "mesh", "--shape", SHAPE, &input, &out],
        "--kind",
    );
    // unknown flags and commands
    run_err(
        &["compress", "--shape", SHAPE, "--frobnicate", &input, &out],
        "unknown option",
    );
    run_err(&["inspect", "-x", &fz], "unknown option");
    run_err(&["squash", &input], "unknown command");
    run_err(&["inspect", &fz, "extra"], "extra argument");
    // corrupt streams: not a stream, flipped payload byte, truncated
    run_err(&["decompress", &input, &out], "not a factz stream");
    let good = read(&fz);
    let mut flipped = good.clone();
    let k = good.len() - 10;
    flipped[k] ^= 0x5a;
    let bad = s.path("bad.fz");
    write(&bad, &flipped);
    run_err(&["decompress", &bad, &out], "checksum");
    run_err(&["inspect", &bad], "checksum");
    run_err(&["verify", &input, &bad], "checksum");
    let mut hdr = good.clone();
    hdr[20] ^= 1;
    write(&bad, &hdr);
    run_err(&["decompress", &bad, &out], "");
    write(&bad, &good[..good.len() / 2]);
    run_err(&["decompress", &bad, &out], "truncated");
    write(&bad, &good[..5]);
    run_err(&["inspect", &bad], "");
    // particle commands on field data: clear one-line errors
    run_err(
        &[
            "compress",
            "--kind",
            "particles",
            "--count",
            "10",
            "--b",
            "0.1",
            &input,
            &out,
        ],
        "10 particles need",
    );
    run_err(&["compress", "--kind", "particles", &input, &out], "");
    run_err(&["verify", "--kind", "particles", &input, &fz], "");
    run_err(
        &[
            "compress", "--kind", "field2d", "--shape", SHAPE, "--count", "10", &input, &out,
        ],
        "particles",
    );
}

#[test]
fn help_and_version() {
    for args in [vec!["--help"], vec!["-h"], vec!["help"]] {
        let out = run_ok(&args);
        let text = String::from_utf8(out.stdout).unwrap();
        for cmd in ["compress", "decompress", "verify", "inspect", "bench"] {
            assert!(text.contains(cmd), "{text}");
        }
    }
    for cmd in ["compress", "decompress", "verify", "inspect", "bench"] {
        let a = String::from_utf8(run_ok(&["help", cmd]).stdout).unwrap();
        let b = String::from_utf8(run_ok(&[cmd, "--help"]).stdout).unwrap();
        assert_eq!(a, b);
        assert!(a.contains(&format!("factz {cmd}")), "{a}");
    }
    run_err(&["help", "nothing"], "unknown command");
    let v = String::from_utf8(run_ok(&["--version"]).stdout).unwrap();
    assert!(v.starts_with("factz "));
}
