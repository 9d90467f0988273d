//! The command line on particles, run as a real process on small generated sets:
//! round trips in both layouts, stdin/stdout, count inference, `verify`'s exit
//! status and JSON, `fof` on a hand-made set with a known answer, `correct` /
//! `apply`, `inspect`, a small `bench`, and one-line errors for bad input.
//! Links are judged by a brute-force O(N^2) check here, not by the library.

#[path = "common/cli.rs"]
mod cli;

use cli::*;

const BOX: f64 = 10.0;
const B: f64 = 0.2;

/// splitmix64 in [0, 1).
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// About 1500 particles in a periodic box of side 10: clumps of a few dozen to a
/// few hundred (some across the box's faces) and a uniform background; AoS.
fn particles() -> Vec<f32> {
    let mut rng = Rng(7);
    let mut pos = Vec::new();
    let centers = [
        (2.0, 2.0, 2.0, 300, 0.25),
        (7.0, 3.0, 5.0, 150, 0.2),
        (5.0, 8.0, 1.0, 60, 0.15),
        (9.95, 5.0, 5.0, 120, 0.2), // across the x face
        (3.0, 6.0, 8.0, 40, 0.1),
    ];
    for (cx, cy, cz, count, r) in centers {
        for _ in 0..count {
            for c in [cx, cy, cz] {
                let g = (rng.unit() + rng.unit() + rng.unit() - 1.5) * 2.0 * r;
                pos.push((c + g).rem_euclid(BOX) as f32);
            }
        }
    }
    for _ in 0..830 {
        for _ in 0..3 {
            pos.push((rng.unit() * BOX) as f32);
        }
    }
    pos
}

/// Every linked pair (i < j) under `b` with minimum-image distances in `period`,
/// by brute force, in f64 from the f32 coordinates.
fn brute_links(pos: &[f32], b: f64, period: Option<f64>) -> Vec<(usize, usize)> {
    let n = pos.len() / 3;
    let mut out = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let mut d2 = 0.0;
            for a in 0..3 {
                let mut d = pos[3 * i + a] as f64 - pos[3 * j + a] as f64;
                if let Some(l) = period {
                    d -= l * (d / l).round();
                }
                d2 += d * d;
            }
            if d2 <= b * b {
                out.push((i, j));
            }
        }
    }
    out
}

fn bytes_of(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn soa(pos: &[f32]) -> Vec<f32> {
    (0..3)
        .flat_map(|a| pos.chunks_exact(3).map(move |p| p[a]))
        .collect()
}

fn range(pos: &[f32]) -> f64 {
    let lo = pos.iter().fold(f32::INFINITY, |a, &b| a.min(b)) as f64;
    let hi = pos.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
    hi - lo
}

fn max_error(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 - y as f64).abs())
        .fold(0.0, f64::max)
}

// ------------------------------------------------------------ a small JSON reader

// ------------------------------------------------------------------------ tests

#[test]
fn round_trips_in_both_layouts_keep_every_link() {
    let s = Scratch::new("roundtrip");
    let pos = particles();
    let n = pos.len() / 3;
    let links = brute_links(&pos, B, Some(BOX));
    assert!(links.len() > 1000, "the test set should be clustered");
    for (layout, raw) in [("aos", pos.clone()), ("soa", soa(&pos))] {
        for (rel, coder, method) in [
            ("1e-3", "rans", "correct"),
            ("1e-4", "huffman", "correct"),
            ("1e-3", "rans", "safe"),
            ("1e-4", "rans", "auto"),
        ] {
            let input = s.path(&format!("in-{layout}.f32"));
            write(&input, &bytes_of(&raw));
            let fz = s.path(&format!("{layout}-{rel}-{method}.fz"));
            let back = s.path(&format!("{layout}-{rel}-{method}.f32"));
            let out = run_ok(&[
                "compress",
                "--kind",
                "particles",
                "--count",
                &n.to_string(),
                "--layout",
                layout,
                "--rel",
                rel,
                "--b",
                "0.2",
                "--box",
                "10",
                "--coder",
                coder,
                "--method",
                method,
                "-v",
                &input,
                &fz,
            ]);
            let summary = String::from_utf8_lossy(&out.stderr);
            // auto names what it chose; the stream records the same
            let ran = if method == "auto" {
                ["correct", "safe"]
                    .into_iter()
                    .find(|m| summary.contains(&format!("method {m},")))
                    .unwrap_or_else(|| panic!("auto names no method: {summary}"))
            } else {
                method
            };
            let shown = text(&run_ok(&["inspect", &fz]));
            assert!(shown.contains(&format!("method:       {ran}")), "{shown}");
            for want in [
                "ratio",
                &format!("method {ran}"),
                "bits/particle",
                "vulnerable pairs",
                "violated before",
                "iterations",
                "exact particles",
                "edited coordinates",
            ] {
                assert!(summary.contains(want), "summary lacks {want}: {summary}");
            }
            assert_eq!(summary.trim_end().lines().count(), 1, "{summary}");
            run_ok(&["decompress", &fz, &back]);
            let got = f32s(&read(&back));
            assert_eq!(got.len(), raw.len(), "{layout}: same layout, same size");
            // Same layout as the input: every coordinate within the bound in place.
            let eb: f64 = rel.parse::<f64>().unwrap() * range(&pos);
            assert!(max_error(&raw, &got) <= eb, "{layout} {rel}");
            let recon = if layout == "aos" {
                got
            } else {
                (0..n)
                    .flat_map(|k| [got[k], got[n + k], got[2 * n + k]])
                    .collect()
            };
            assert_eq!(
                brute_links(&recon, B, Some(BOX)),
                links,
                "{layout} {rel}: links"
            );
            // verify against the stream (everything from it) and against the raw output
            let t = text(&run_ok(&["verify", &input, &fz]));
            assert!(t.contains("0 broken, 0 false") && t.contains("OK"), "{t}");
            run_ok(&[
                "verify",
                "--kind",
                "particles",
                "--layout",
                layout,
                "--b",
                "0.2",
                "--box",
                "10",
                "--rel",
                rel,
                &input,
                &back,
            ]);
        }
    }
}

#[test]
fn stdin_stdout_count_inference_and_zstd() {
    let s = Scratch::new("pipes");
    let pos = particles();
    let out = run_stdin(
        &[
            "compress",
            "--kind",
            "particles",
            "--abs",
            "0.005",
            "--eta",
            "0.2",
            "--box",
            "10",
            "--zstd",
            "3",
            "--verify",
            "-",
            "-",
        ],
        bytes_of(&pos),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stream = out.stdout;
    assert!(stream.starts_with(b"FACTZ"));
    let fz = s.path("p.fz");
    write(&fz, &stream);
    let j = parse_json(&text(&run_ok(&["inspect", "--json", &fz])));
    assert_eq!(
        j.get("particles").num(),
        (pos.len() / 3) as f64,
        "count from the file size"
    );
    assert_eq!(j.get("abs_bound").num(), 0.005);
    assert_eq!(j.get("zstd_level").num(), 3.0);
    // eta 0.2 of the mean separation in the box: 0.2 * (1000 / N)^(1/3)
    let b = 0.2 * (BOX.powi(3) / (pos.len() / 3) as f64).cbrt();
    assert!((j.get("linking_length").num() - b).abs() < 1e-9 * b);
    let flags: Vec<&str> = j.get("flags").arr().iter().map(J::str).collect();
    assert!(flags.contains(&"verified"), "{flags:?}");

    let out = run_stdin(&["decompress", "-", "-"], stream);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = f32s(&out.stdout);
    assert_eq!(back.len(), pos.len());
    assert!(max_error(&pos, &back) <= 0.005);
    assert_eq!(
        brute_links(&back, b, Some(BOX)),
        brute_links(&pos, b, Some(BOX))
    );

    // verify with the original on stdin
    let out = run_stdin(&["verify", "-", &fz], bytes_of(&pos));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn verify_exit_status_and_json() {
    let s = Scratch::new("verify");
    let pos = particles();
    let input = s.path("in.f32");
    write(&input, &bytes_of(&pos));
    let fz = s.path("x.fz");
    let back = s.path("back.f32");
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--b",
        "0.2",
        "--box",
        "10",
        &input,
        &fz,
    ]);
    run_ok(&["decompress", &fz, &back]);
    let j = parse_json(&text(&run_ok(&["verify", "--json", &input, &fz])));
    for key in [
        "ok",
        "particles",
        "linking_length",
        "period",
        "original_links",
        "broken_links",
        "false_links",
        "vulnerable_pairs",
        "mcc",
        "identical_partition",
        "groups_original",
        "halos_original",
        "halos_reconstructed",
        "hmf_rel_error",
        "abs_bound",
        "max_abs_error",
        "bound_violations",
        "psnr_db",
        "ratio",
        "bits_per_particle",
    ] {
        j.get(key);
    }
    assert_eq!(j.get("ok"), &J::Bool(true));
    assert_eq!(j.get("identical_partition"), &J::Bool(true));
    assert_eq!(j.get("linking_length").num(), 0.2, "b from the stream");
    assert_eq!(j.get("period").num(), 10.0, "box from the stream");
    assert_eq!(j.get("mcc").num(), 1.0);
    assert_eq!(
        j.get("original_links").num(),
        brute_links(&pos, B, Some(BOX)).len() as f64
    );
    assert!(j.get("ratio").num() > 1.0);

    // A particle of the big clump moved far: links break, the bound is exceeded.
    let mut vals = f32s(&read(&back));
    vals[0] += 3.0;
    let bad = s.path("bad.f32");
    write(&bad, &bytes_of(&vals));
    let args = [
        "verify",
        "--kind",
        "particles",
        "--b",
        "0.2",
        "--box",
        "10",
        "--rel",
        "1e-3",
        &input,
        &bad,
    ];
    let out = run(factz().args(args));
    check_err(&out, &args, "verify failed");
    assert!(text(&out).contains("FAILED"));
    let mut args_json = args.to_vec();
    args_json.push("--json");
    let out = run(factz().args(&args_json));
    check_err(&out, &args_json, "links changed");
    let j = parse_json(&text(&out));
    assert_eq!(j.get("ok"), &J::Bool(false));
    assert!(j.get("broken_links").num() >= 1.0);
    assert!(j.get("bound_violations").num() >= 1.0);

    // A link broken within the bound: two particles 0.2 - 1e-4 apart end 0.2 + 1e-4 apart.
    let orig = [1.0f32, 1.0, 1.0, 1.1999, 1.0, 1.0, 5.0, 5.0, 5.0];
    let recon = [1.0f32, 1.0, 1.0, 1.2001, 1.0, 1.0, 5.0, 5.0, 5.0];
    let (o, r) = (s.path("o.f32"), s.path("r.f32"));
    write(&o, &bytes_of(&orig));
    write(&r, &bytes_of(&recon));
    let args = [
        "verify",
        "--kind",
        "particles",
        "--b",
        "0.2",
        "--abs",
        "0.001",
        &o,
        &r,
    ];
    let out = run(factz().args(args));
    check_err(&out, &args, "1 links changed (1 broken, 0 false)");
    // Without a bound only the links are judged; still failed.
    let args = ["verify", "--kind", "particles", "--b", "0.2", &o, &r];
    check_err(&run(factz().args(args)), &args, "links changed");
    // An identical copy passes with any b.
    run_ok(&["verify", "--kind", "particles", "--b", "0.2", &o, &o]);
}

#[test]
fn fof_on_a_hand_made_set() {
    let s = Scratch::new("fof");
    let mut pos: Vec<f32> = Vec::new();
    // group A: 25 particles on a line, 0.1 apart (b = 0.15)
    for k in 0..25 {
        pos.extend([1.0 + 0.1 * k as f32, 1.0, 1.0]);
    }
    // group B: 22 particles across the periodic x face of a box of 10
    for k in 0..22 {
        pos.extend([(9.0 + 0.1 * k as f32).rem_euclid(10.0), 5.0, 5.0]);
    }
    // group C: 3 particles
    pos.extend([5.0, 1.0, 8.0, 5.1, 1.0, 8.0, 5.2, 1.0, 8.0]);
    // 4 singletons
    pos.extend([8.0, 8.0, 8.0, 2.0, 8.0, 2.0, 7.0, 7.0, 1.0, 4.0, 4.0, 4.0]);
    let n = pos.len() / 3;
    assert_eq!(n, 54);
    let input = s.path("set.f32");
    write(&input, &bytes_of(&pos));
    let labels_path = s.path("labels.u32");
    let out = run_ok(&[
        "fof",
        &input,
        "--b",
        "0.15",
        "--box",
        "10",
        "--labels",
        &labels_path,
        "--json",
    ]);
    let j = parse_json(&text(&out));
    assert_eq!(j.get("particles").num(), 54.0);
    assert_eq!(j.get("groups").num(), 7.0);
    assert_eq!(j.get("singletons").num(), 4.0);
    assert_eq!(j.get("halos").num(), 2.0);
    assert_eq!(j.get("particles_in_halos").num(), 47.0);
    assert_eq!(j.get("links").num(), (24 + 21 + 2) as f64);
    let largest: Vec<(f64, f64)> = j
        .get("largest")
        .arr()
        .iter()
        .map(|h| (h.get("members").num(), h.get("label").num()))
        .collect();
    assert_eq!(largest, [(25.0, 0.0), (22.0, 25.0)]);
    let hmf = j.get("mass_function");
    assert_eq!(hmf.get("counts").arr().len(), 50);
    assert_eq!(hmf.get("edges").arr().len(), 51);
    let total: f64 = hmf.get("counts").arr().iter().map(J::num).sum();
    assert_eq!(total, 2.0);
    // Labels: the smallest index of each group, u32 LE.
    let labels: Vec<u32> = read(&labels_path)
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut want = vec![0u32; 25];
    want.extend([25u32; 22]);
    want.extend([47u32; 3]);
    want.extend([50u32, 51, 52, 53]);
    assert_eq!(labels, want);

    // Without the box, group B splits at the face; fewer halos with --min-members 23.
    let j = parse_json(&text(&run_ok(&["fof", &input, "--b", "0.15", "--json"])));
    assert_eq!(j.get("groups").num(), 8.0);
    let j = parse_json(&text(&run_ok(&[
        "fof",
        &input,
        "--b",
        "0.15",
        "--box",
        "10",
        "--min-members",
        "23",
        "--json",
    ])));
    assert_eq!(j.get("halos").num(), 1.0);

    // Text form, SoA input, labels to stdout (the summary then goes to stderr).
    let soa_path = s.path("soa.f32");
    write(&soa_path, &bytes_of(&soa(&pos)));
    let out = run_ok(&[
        "fof", &soa_path, "--layout", "soa", "--b", "0.15", "--box", "10",
    ]);
    let t = text(&out);
    for want in [
        "groups:          7",
        "halos (>= 20):   2",
        "25",
        "22",
        "mass function",
    ] {
        assert!(t.contains(want), "fof lacks {want}: {t}");
    }
    let out = run_ok(&[
        "fof", &soa_path, "--layout", "soa", "--b", "0.15", "--box", "10", "--labels", "-",
    ]);
    assert_eq!(out.stdout, read(&labels_path));
    assert!(String::from_utf8_lossy(&out.stderr).contains("groups:"));
}

#[test]
fn correct_and_apply_an_external_compressor() {
    let s = Scratch::new("external");
    let pos = particles();
    let xi = 0.005;
    // "Another compressor": snap to a grid of step 1.8 xi (error <= 0.9 xi),
    // which changes some vulnerable links.
    let step = 1.8 * xi;
    let decoded: Vec<f32> = pos
        .iter()
        .map(|&x| ((x as f64 / step).round() * step) as f32)
        .collect();
    assert!(max_error(&pos, &decoded) <= xi);
    let links = brute_links(&pos, B, Some(BOX));
    assert_ne!(
        brute_links(&decoded, B, Some(BOX)),
        links,
        "the snapped set should break links"
    );
    let (orig_p, dec_p, corr_p, fixed_p) = (
        s.path("orig.f32"),
        s.path("dec.f32"),
        s.path("corr.fz"),
        s.path("fixed.f32"),
    );
    write(&orig_p, &bytes_of(&pos));
    write(&dec_p, &bytes_of(&decoded));
    run_ok(&[
        "correct", &orig_p, &dec_p, &corr_p, "--abs", "0.005", "--b", "0.2", "--box", "10",
    ]);
    run_ok(&["apply", &corr_p, &dec_p, &fixed_p]);
    let fixed = f32s(&read(&fixed_p));
    assert!(max_error(&pos, &fixed) <= xi);
    assert_eq!(brute_links(&fixed, B, Some(BOX)), links);
    let t = text(&run_ok(&["inspect", &corr_p]));
    assert!(t.contains("correction only"), "{t}");
    run_ok(&[
        "verify",
        "--kind",
        "particles",
        "--b",
        "0.2",
        "--box",
        "10",
        "--abs",
        "0.005",
        &orig_p,
        &fixed_p,
    ]);

    // SoA, decoded on stdin, fixed to stdout.
    let (orig_s, corr_s) = (s.path("orig-soa.f32"), s.path("corr-soa.fz"));
    write(&orig_s, &bytes_of(&soa(&pos)));
    let out = run_stdin(
        &[
            "correct", "--layout", "soa", "--abs", "0.005", "--b", "0.2", "--box", "10", &orig_s,
            "-", &corr_s,
        ],
        bytes_of(&soa(&decoded)),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_stdin(&["apply", &corr_s, "-", "-"], bytes_of(&soa(&decoded)));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.stdout,
        bytes_of(&soa(&fixed)),
        "same correction in either layout"
    );

    // Misuse: other positions, a complete stream, decompressing a correction.
    let mut other = decoded.clone();
    other[5] += 1e-3;
    let other_p = s.path("other.f32");
    write(&other_p, &bytes_of(&other));
    run_err(&["apply", &corr_p, &other_p, &fixed_p], "checksum");
    let full = s.path("full.fz");
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--b",
        "0.2",
        &orig_p,
        &full,
    ]);
    run_err(&["apply", &full, &dec_p, &fixed_p], "decompress");
    run_err(&["decompress", &corr_p, &fixed_p], "factz apply");
    run_err(&["verify", &orig_p, &corr_p], "factz apply");
    run_err(
        &["correct", &orig_p, &s.path("nothing.f32"), &corr_p],
        "nothing.f32",
    );
}

#[test]
fn inspect_particle_streams() {
    let s = Scratch::new("inspect");
    let pos = particles();
    let input = s.path("in.f32");
    write(&input, &bytes_of(&soa(&pos)));
    let fz = s.path("x.fz");
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--layout",
        "soa",
        "--b",
        "0.2",
        "--box",
        "10",
        "--edit-bits",
        "12",
        "--max-iters",
        "500",
        "--chunk",
        &input,
        &fz,
    ]);
    let t = text(&run_ok(&["inspect", &fz]));
    for want in [
        "kind particles",
        "particles:    1500, layout soa",
        "builtin",
        "b = 0.2",
        "periodic box 10",
        "12 bits",
        "sections",
        "exact",
        "edit_codes",
        "chunk_of_larger",
    ] {
        assert!(t.contains(want), "inspect lacks {want}: {t}");
    }
    let j = parse_json(&text(&run_ok(&["inspect", "--json", &fz])));
    for key in [
        "version",
        "kind",
        "particles",
        "shape",
        "layout",
        "abs_bound",
        "source",
        "base",
        "linking_length",
        "period",
        "edit_bits",
        "coder",
        "zstd_level",
        "flags",
        "sections",
        "ratio",
        "bits_per_particle",
    ] {
        j.get(key);
    }
    assert_eq!(j.get("kind").str(), "particles");
    assert_eq!(j.get("layout").str(), "soa");
    assert_eq!(j.get("edit_bits").num(), 12.0);
    assert_eq!(j.get("base").str(), "builtin");
    assert_eq!(
        j.get("base_layout").str(),
        "prediction along the particle order"
    );
    let eb = j.get("abs_bound").num();
    assert!(
        (eb - 1e-3 * range(&pos)).abs() <= 1e-9,
        "default bound is rel 1e-3, got {eb}"
    );
    for sec in j.get("sections").arr() {
        assert_eq!(sec.get("crc_ok"), &J::Bool(true));
    }
    // Decompress gives SoA back; --layout overrides.
    let back = s.path("back.f32");
    run_ok(&["decompress", &fz, &back, "--layout", "aos"]);
    assert!(max_error(&pos, &f32s(&read(&back))) <= eb);

    // The same particles in no useful order: the base codes density cells.
    let mut shuffled: Vec<[f32; 3]> = pos.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
    let mut rng = Rng(11);
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, (rng.unit() * (i + 1) as f64) as usize);
    }
    write(&input, &bytes_of(&shuffled.concat()));
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--b",
        "0.2",
        "--box",
        "10",
        &input,
        &fz,
    ]);
    assert!(text(&run_ok(&["inspect", &fz])).contains("base layout:  density cells"));
    let j = parse_json(&text(&run_ok(&["inspect", "--json", &fz])));
    assert_eq!(j.get("base_layout").str(), "density cells");
}

#[test]
fn bench_runs_small_with_a_sidecar() {
    let s = Scratch::new("bench");
    let pos = particles();
    let input = s.path("p.f32");
    write(&input, &bytes_of(&pos));
    write(
        &s.path("p.json"),
        br#"{"shape": [1500, 3], "layout": "row-major [N][3] = x,y,z interleaved", "box": 10.0, "periodic": true, "fof_b": 0.2}"#,
    );
    let out = run_ok(&[
        "bench",
        "--kind",
        "particles",
        "--rel",
        "1e-3,1e-4",
        "--json",
        &input,
    ]);
    let j = parse_json(&text(&out));
    let inp = &j.get("inputs").arr()[0];
    assert_eq!(inp.get("particles").num(), 1500.0);
    assert_eq!(inp.get("linking_length").num(), 0.2, "b from the sidecar");
    assert_eq!(inp.get("period").num(), 10.0, "box from the sidecar");
    let results = j.get("results").arr();
    // per bound: builtin (+ other bases built in) + zstd (+ SZ3)
    assert!(results.len() >= 4, "{results:?}");
    for r in results {
        for key in [
            "method",
            "particles",
            "vulnerable_pairs",
            "violated_before",
            "iterations",
            "violated_after",
            "fallback_particles",
            "setup_s",
            "optimise_s",
            "check_s",
            "compress_s",
            "ratio_base",
            "ratio",
            "overhead_pct",
            "bits_per_particle",
            "broken_links",
            "false_links",
            "compress_mb_s",
            "decompress_mb_s",
        ] {
            r.get(key);
        }
        if r.get("method").str().starts_with("factz") {
            assert_eq!(
                r.get("broken_links").num() + r.get("false_links").num(),
                0.0
            );
            assert!(r.get("ratio").num() > 1.0);
        }
    }
    assert!(results.iter().any(|r| r.get("method").str() == "zstd-3"));
    // auto says what it chose
    assert!(results.iter().any(|r| {
        let m = r.get("method").str();
        m == "factz+builtin (auto: safe)" || m == "factz+builtin (auto: correct)"
    }));
    // Each base alone at every bound, and at its loosest link-keeping bound,
    // which the full FoF count confirms; factz rows compare their time with it.
    let alone = |r: &&J| r.get("method").str() == "builtin alone";
    assert_eq!(results.iter().filter(alone).count(), 2);
    let loosest: Vec<_> = results
        .iter()
        .filter(|r| r.get("method").str().starts_with("builtin alone, loosest"))
        .collect();
    assert_eq!(loosest.len(), 1, "{results:?}");
    let l = loosest[0];
    assert_eq!(
        l.get("broken_links").num() + l.get("false_links").num(),
        0.0
    );
    assert!(l.get("rel_bound").num() <= 1e-3 && l.get("ratio").num() > 1.0);
    for r in results
        .iter()
        .filter(|r| r.get("method").str().starts_with("factz"))
    {
        assert!(r.get("times_base_alone").num() > 0.0);
    }

    let out = run_ok(&[
        "bench",
        "--kind",
        "particles",
        "--rel",
        "1e-3",
        "--base",
        "builtin",
        &input,
    ]);
    let t = text(&out);
    for want in [
        "vuln",
        "viol",
        "iters",
        "ratio base",
        "overhead %",
        "factz+builtin",
        "zstd-3",
        "1500 particles",
    ] {
        assert!(t.contains(want), "bench lacks {want}: {t}");
    }
}

#[test]
fn bad_input_gives_one_line_errors() {
    let s = Scratch::new("errors");
    let pos = particles();
    let input = s.path("in.f32");
    write(&input, &bytes_of(&pos));
    let ragged = s.path("ragged.f32");
    write(&ragged, &bytes_of(&pos)[..100]);
    let out = s.path("out.fz");
    let fz = s.path("x.fz");
    run_ok(&["compress", "--kind", "particles", "--b", "0.2", &input, &fz]);
    let p = ["compress", "--kind", "particles"];
    let with =
        |extra: &[&str]| -> Vec<String> { p.iter().chain(extra).map(|x| x.to_string()).collect() };
    let err = |extra: &[&str], needle: &str| {
        let args = with(extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        run_err(&refs, needle);
    };
    // sizes
    err(&["--count", "1499", &input, &out], "bytes");
    err(&[&ragged, &out], "not a whole number of particles");
    err(&["--count", "abc", &input, &out], "--count");
    assert!(!std::path::Path::new(&out).exists(), "no output on failure");
    // flags
    err(&["--b", "0.2", "--eta", "0.2", &input, &out], "not both");
    err(&["--abs", "-1", &input, &out], "--abs");
    err(&["--rel", "-1e-3", &input, &out], "--rel");
    err(&["--abs", "1", "--rel", "1", &input, &out], "not both");
    err(&["--b", "0", &input, &out], "--b");
    err(&["--eta", "inf", &input, &out], "--eta");
    err(&["--box", "-10", &input, &out], "--box");
    err(&["--base", "lz4", &input, &out], "--base");
    err(&["--edit-bits", "30", &input, &out], "--edit-bits");
    err(&["--method", "fast", &input, &out], "--method");
    err(&["--layout", "xyz", &input, &out], "--layout");
    err(&["--shape", "10,10", &input, &out], "field2d");
    err(&["--mode", "s", &input, &out], "field2d");
    err(
        &["--b", "6", "--box", "10", &input, &out],
        "half the periodic box",
    );
    err(&[&input], "missing");
    err(&[&s.path("missing.f32"), &out], "missing.f32");
    if !cfg!(feature = "sz3") {
        err(&["--base", "sz3", &input, &out], "sz3");
    }
    run_err(
        &[
            "compress", "--kind", "field2d", "--shape", "10,10", "--b", "0.2", &input, &out,
        ],
        "--kind particles",
    );
    run_err(&["fof", &input, "--b", "0.2", "--eta", "0.2"], "not both");
    run_err(&["fof", &ragged], "not a whole number");
    run_err(&["verify", "--kind", "particles", &input, &ragged], "bytes");
    // The library's linking-length check, before any pair search (which at
    // b above half the box once ran out of memory).
    for flags in [["--b", "6", "--box", "10"], ["--b", "-1", "--box", "0"]] {
        let mut args = vec!["verify", "--kind", "particles", &input, &input];
        args.extend(flags);
        run_err(
            &args,
            if flags[1] == "6" {
                "half the periodic box"
            } else {
                "--b"
            },
        );
    }
    run_err(
        &["fof", &input, "--b", "6", "--box", "10"],
        "half the periodic box",
    );
    run_err(
        &["verify", "--kind", "field2d", &input, &fz],
        "does not match",
    );
    run_err(&["bench", "--kind", "particles"], "input");
    run_err(
        &["bench", "--kind", "particles", "--base", "nope", &input],
        "--base",
    );
    run_err(&["correct", &input, &ragged, &out], "bytes");
    // corrupt streams: flipped payload byte, flipped header byte, truncated
    let good = read(&fz);
    let bad = s.path("bad.fz");
    let mut flipped = good.clone();
    let k = good.len() - 10;
    flipped[k] ^= 0x5a;
    write(&bad, &flipped);
    run_err(&["decompress", &bad, &out], "checksum");
    run_err(&["inspect", &bad], "checksum");
    run_err(&["verify", &input, &bad], "checksum");
    let mut hdr = good.clone();
    hdr[20] ^= 1;
    write(&bad, &hdr);
    run_err(&["decompress", &bad, &out], "");
    run_err(&["inspect", &bad], "");
    write(&bad, &good[..good.len() / 2]);
    run_err(&["decompress", &bad, &out], "");
    run_err(&["apply", &bad, &input, &out], "");
}

#[test]
fn help_names_the_particle_commands() {
    let t = text(&run_ok(&["--help"]));
    for cmd in ["--kind particles", "correct", "apply", "fof"] {
        assert!(t.contains(cmd), "{t}");
    }
    for cmd in ["correct", "apply", "fof"] {
        let a = text(&run_ok(&["help", cmd]));
        let b = text(&run_ok(&[cmd, "--help"]));
        assert_eq!(a, b);
        assert!(a.contains(&format!("factz {cmd}")), "{a}");
    }
    let t = text(&run_ok(&["help", "compress"]));
    assert!(t.contains("file size / 12"), "{t}");
}
