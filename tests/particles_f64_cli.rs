//! float64 particle positions through the `factz` binary, judged by the
//! independent brute-force FoF oracle (tests/common/particles.rs, its own f64
//! distance code), on sets where f64 matters: coordinates around 1e6 with
//! 53 significant bits, pairs within a few f64 ulps of b, bounds below f32's
//! resolution there. compress / decompress in both layouts, inspect, verify
//! (passing, and failing on a link broken by a few ulps), fof, correct /
//! apply, and the one-line refusals.

#[path = "common/cli.rs"]
mod cli;
mod common;

use cli::*;
use common::fields::Rng;
use common::particles::{brute_links, check, dist2, fof_b, groups, synth_particles};

struct Set {
    name: &'static str,
    pos: Vec<f64>,
    b: f64,
    period: Option<f64>,
    /// An absolute bound below f32's spacing at these coordinates.
    abs: f64,
}

fn ulps(x: f64, k: i64) -> f64 {
    f64::from_bits((x.to_bits() as i64 + k) as u64)
}

/// Pairs at b + -3..3 ulps (along an axis, at offsets 1e6 and -2e6) and a few
/// clumps of 40 that FoF groups, every coordinate with 53 significant bits.
fn ties() -> Set {
    let mut r = Rng::new(11);
    let b = 0.1;
    let mut pos = Vec::new();
    for k in 0..200 {
        let base = [
            1e6 + r.range(0.0, 40.0),
            -2e6 + r.range(0.0, 40.0),
            3.7e5 + r.range(0.0, 40.0),
        ];
        let mut other = base;
        other[k % 3] = base[k % 3] + ulps(b, (k % 7) as i64 - 3);
        pos.extend(base);
        pos.extend(other);
    }
    for c in 0..6 {
        let centre = [1e6 + 7.0 * c as f64, -2e6 + 50.0, 3.7e5 + 50.0];
        for _ in 0..40 {
            for x in centre {
                pos.push(x + r.range(-0.15, 0.15));
            }
        }
    }
    Set {
        name: "ties at 1e6",
        pos,
        b,
        period: None,
        abs: 1e-5,
    }
}

/// The clustered generator's particles in a periodic box of 10, each
/// coordinate given low bits f32 cannot hold.
fn clustered() -> Set {
    let l = 10.0;
    let mut r = Rng::new(5);
    let pos = synth_particles(12, 3, l, &[])
        .iter()
        .map(|&x| (x as f64 * (1.0 + 1e-9 * r.range(-1.0, 1.0))).clamp(0.0, ulps(l, -1)))
        .collect();
    Set {
        name: "clustered, periodic",
        pos,
        b: fof_b(12 * 12 * 12, l),
        period: Some(l),
        abs: 1e-9,
    }
}

fn f64_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn soa(pos: &[f64]) -> Vec<f64> {
    (0..3)
        .flat_map(|a| pos.chunks_exact(3).map(move |p| p[a]))
        .collect()
}

fn aos(v: &[f64]) -> Vec<f64> {
    let n = v.len() / 3;
    (0..n)
        .flat_map(|k| [v[k], v[n + k], v[2 * n + k]])
        .collect()
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `--b B [--box L]` (shortest round-trip decimals: the same f64 b).
fn link_flags(set: &Set) -> Vec<String> {
    let mut f = vec!["--b".to_string(), set.b.to_string()];
    if let Some(l) = set.period {
        f.extend(["--box".to_string(), l.to_string()]);
    }
    f
}

fn run_strs(args: &[String]) -> std::process::Output {
    let v: Vec<&str> = args.iter().map(String::as_str).collect();
    run_ok(&v)
}

/// Writes `set` as AoS f64 and compresses it; returns (input, stream) paths.
fn compress_aos(s: &Scratch, set: &Set, tag: &str) -> (String, String) {
    let input = s.path(&format!("{tag}.f64"));
    write(&input, &f64_bytes(&set.pos));
    let fz = s.path(&format!("{tag}.fz"));
    let mut args: Vec<String> = ["compress", "--kind", "particles", "--dtype", "f64", "--abs"]
        .map(String::from)
        .to_vec();
    args.push(set.abs.to_string());
    args.extend(link_flags(set));
    args.extend([input.clone(), fz.clone()]);
    run_strs(&args);
    (input, fz)
}

#[test]
fn sets_depend_on_f64() {
    // The sets are only a test of f64 if rounding them to f32 changes links or
    // exceeds the bound.
    for set in [ties(), clustered()] {
        let rounded: Vec<f64> = set.pos.iter().map(|&x| x as f32 as f64).collect();
        let err = set
            .pos
            .iter()
            .zip(&rounded)
            .map(|(a, r)| (a - r).abs())
            .fold(0.0, f64::max);
        assert!(err > set.abs, "{}: f32 would meet the bound", set.name);
    }
    let t = ties();
    let rounded: Vec<f64> = t.pos.iter().map(|&x| x as f32 as f64).collect();
    assert_ne!(
        brute_links(&t.pos, None, t.b),
        brute_links(&rounded, None, t.b),
        "f32 rounding should change the ties' links"
    );
}

#[test]
fn round_trips_in_both_layouts_keep_links_and_the_bound() {
    let s = Scratch::new("f64-roundtrip");
    for set in [ties(), clustered()] {
        let n = set.pos.len() / 3;
        let links = brute_links(&set.pos, set.period, set.b);
        assert!(links.len() > 100, "{}: too few links", set.name);
        for layout in ["aos", "soa"] {
            let raw = if layout == "aos" {
                set.pos.clone()
            } else {
                soa(&set.pos)
            };
            let input = s.path(&format!("{layout}.f64"));
            write(&input, &f64_bytes(&raw));
            let fz = s.path(&format!("{layout}.fz"));
            let back = s.path(&format!("{layout}-back.f64"));
            let mut args: Vec<String> = [
                "compress",
                "--kind",
                "particles",
                "--dtype",
                "f64",
                "--layout",
                layout,
                "-v",
                "--abs",
            ]
            .map(String::from)
            .to_vec();
            args.push(set.abs.to_string());
            args.extend(link_flags(&set));
            args.extend([input.clone(), fz.clone()]);
            let out = run_strs(&args);
            let summary = String::from_utf8_lossy(&out.stderr);
            assert!(
                summary.contains(&format!("{n} particles f64 {layout}")),
                "{summary}"
            );
            assert!(summary.contains(&format!("{} -> ", 24 * n)), "{summary}");

            run_ok(&["decompress", &fz, &back]);
            let got = f64s(&read(&back));
            assert_eq!(read(&back).len(), 24 * n, "{} {layout}: f64 out", set.name);
            let recon = if layout == "aos" { got } else { aos(&got) };
            let chk = check(&set.pos, &recon, set.period, set.b, set.abs, &links);
            assert!(chk.clean(), "{} {layout}: {chk:?}", set.name);

            // --layout on decompress writes the other layout, same values.
            let other = s.path(&format!("{layout}-other.f64"));
            let flip = if layout == "aos" { "soa" } else { "aos" };
            run_ok(&["decompress", &fz, &other, "--layout", flip]);
            let o = f64s(&read(&other));
            let o = if flip == "aos" { o } else { aos(&o) };
            assert!(o
                .iter()
                .zip(&recon)
                .all(|(a, b)| a.to_bits() == b.to_bits()));

            let shown = text(&run_ok(&["inspect", &fz]));
            assert!(shown.contains("element f64"), "{shown}");
            let j = parse_json(&text(&run_ok(&["inspect", &fz, "--json"])));
            assert_eq!(j.get("dtype").str(), "f64");
            assert_eq!(j.get("raw_bytes").num(), (24 * n) as f64);

            // verify against the stream: everything from it.
            let j = parse_json(&text(&run_ok(&["verify", &input, &fz, "--json"])));
            assert_eq!(j.get("ok"), &J::Bool(true), "{} {layout}", set.name);
            assert_eq!(j.get("dtype").str(), "f64");
            assert_eq!(j.get("layout").str(), layout);
            assert_eq!(j.get("original_links").num(), links.len() as f64);
            assert_eq!(j.get("broken_links").num(), 0.0);
            assert_eq!(j.get("false_links").num(), 0.0);
            assert_eq!(j.get("raw_bytes").num(), (24 * n) as f64);
            let len = read(&fz).len() as f64;
            assert!((j.get("ratio").num() - 24.0 * n as f64 / len).abs() < 1e-9);
            let t = text(&run_ok(&["verify", &input, &fz]));
            assert!(t.contains(&format!("{n} f64, layout {layout}")), "{t}");

            // and against the raw reconstruction.
            let mut args: Vec<String> = [
                "verify",
                "--kind",
                "particles",
                "--dtype",
                "f64",
                "--layout",
                layout,
                "--json",
                "--abs",
            ]
            .map(String::from)
            .to_vec();
            args.push(set.abs.to_string());
            args.extend(link_flags(&set));
            args.extend([input.clone(), back.clone()]);
            let j = parse_json(&text(&run_strs(&args)));
            assert_eq!(j.get("ok"), &J::Bool(true), "{} {layout} raw", set.name);
            assert_eq!(j.get("original_links").num(), links.len() as f64);
        }
    }
}

/// A reconstruction with exactly one link broken (by the oracle): the pair
/// nearest b whose ends have no other link, both ends put back to their
/// originals and one moved apart by as few f64 ulps as break it.
fn break_one_link(set: &Set, recon: &[f64], links: &[(u32, u32)]) -> Vec<f64> {
    let n = set.pos.len() / 3;
    let mut degree = vec![0; n];
    for &(i, j) in links {
        degree[i as usize] += 1;
        degree[j as usize] += 1;
    }
    let at = |p: &[f64], k: usize| p[3 * k..3 * k + 3].to_vec();
    let &(i, j) = links
        .iter()
        .filter(|&&(i, j)| degree[i as usize] == 1 && degree[j as usize] == 1)
        .max_by(|a, b| {
            let d = |&(i, j): &(u32, u32)| {
                dist2(&at(&set.pos, i as usize), &at(&set.pos, j as usize), None)
            };
            d(a).total_cmp(&d(b))
        })
        .expect("an isolated linked pair");
    let (i, j) = (i as usize, j as usize);
    let mut out = recon.to_vec();
    out[3 * i..3 * i + 3].copy_from_slice(&set.pos[3 * i..3 * i + 3]);
    out[3 * j..3 * j + 3].copy_from_slice(&set.pos[3 * j..3 * j + 3]);
    // The axis they are furthest apart on, away from i.
    let axis = (0..3)
        .max_by(|&a, &c| {
            let d = |a: usize| (set.pos[3 * j + a] - set.pos[3 * i + a]).abs();
            d(a).total_cmp(&d(c))
        })
        .unwrap();
    let away = if out[3 * j + axis] >= out[3 * i + axis] {
        1
    } else {
        -1
    };
    let mut steps = 0;
    while dist2(&at(&out, i), &at(&out, j), set.period) <= set.b * set.b {
        let x = out[3 * j + axis];
        // One ulp away from i (up for positive x moving up, and so on).
        out[3 * j + axis] = ulps(x, if (x >= 0.0) == (away > 0) { 1 } else { -1 });
        steps += 1;
        assert!(steps < 100, "the pair should be within a few ulps of b");
    }
    out
}

#[test]
fn verify_fails_on_a_link_broken_by_a_few_ulps() {
    let s = Scratch::new("f64-broken");
    let set = ties();
    let n = set.pos.len() / 3;
    let links = brute_links(&set.pos, None, set.b);
    let (input, fz) = compress_aos(&s, &set, "ties");
    let back = s.path("back.f64");
    run_ok(&["decompress", &fz, &back]);
    let bad = break_one_link(&set, &f64s(&read(&back)), &links);
    let got = brute_links(&bad, None, set.b);
    let have: std::collections::HashSet<_> = got.iter().collect();
    let want: std::collections::HashSet<_> = links.iter().collect();
    let (broken, made) = (
        want.difference(&have).count(),
        have.difference(&want).count(),
    );
    assert_eq!((broken, made), (1, 0), "the oracle's count of the edit");
    // f32 could not see the edit: the values agree once rounded.
    let recon = f64s(&read(&back));
    assert!(bad
        .iter()
        .zip(&recon)
        .zip(&set.pos)
        .all(|((b, r), o)| b == r || b == o || *b as f32 == *o as f32));
    let bad_path = s.path("bad.f64");
    write(&bad_path, &f64_bytes(&bad));
    let abs = set.abs.to_string();
    let args = [
        "verify",
        "--kind",
        "particles",
        "--dtype",
        "f64",
        "--b",
        "0.1",
        "--abs",
        &abs,
        "--json",
        &input,
        &bad_path,
    ];
    let out = run(factz().args(args));
    assert_eq!(out.status.code(), Some(1), "verify must fail");
    check_err(&out, &args, "1 links changed (1 broken, 0 false)");
    let j = parse_json(&text(&out));
    assert_eq!(j.get("ok"), &J::Bool(false));
    assert_eq!(j.get("dtype").str(), "f64");
    assert_eq!(j.get("particles").num(), n as f64);
    assert_eq!(j.get("original_links").num(), links.len() as f64);
    assert_eq!(j.get("broken_links").num(), broken as f64);
    assert_eq!(j.get("false_links").num(), made as f64);
    assert_eq!(j.get("bound_violations").num(), 0.0);
    // The unedited reconstruction passes the same check.
    let mut ok = args;
    ok[11] = &back;
    run_ok(&ok);
    // --plot on f64 (links drawn from the f64 values; here only that it draws).
    let png = s.path("v.png");
    let out = run(factz()
        .args(["verify", &input, &bad_path, "--kind", "particles"])
        .args([
            "--dtype", "f64", "--b", "0.1", "--abs", &abs, "--plot", &png,
        ]));
    assert_eq!(out.status.code(), Some(1));
    assert!(read(&png).starts_with(b"\x89PNG"));
    run_ok(&["verify", &input, &fz, "--plot", &png, "--against", &back]);
}

#[test]
fn fof_on_f64_positions_and_streams_matches_brute_force() {
    let s = Scratch::new("f64-fof");
    for set in [ties(), clustered()] {
        let n = set.pos.len() / 3;
        let links = brute_links(&set.pos, set.period, set.b);
        let want: Vec<u32> = groups(n, &links).into_iter().map(|g| g as u32).collect();
        let (input, fz) = compress_aos(&s, &set, "fof");
        let labels = s.path("labels.u32");
        let mut args: Vec<String> = ["fof", "--dtype", "f64", "--json", "--min-members", "5"]
            .map(String::from)
            .to_vec();
        args.extend(link_flags(&set));
        args.extend([input.clone(), "--labels".into(), labels.clone()]);
        let j = parse_json(&text(&run_strs(&args)));
        assert_eq!(j.get("dtype").str(), "f64");
        assert_eq!(j.get("particles").num(), n as f64);
        assert_eq!(j.get("links").num(), links.len() as f64, "{}", set.name);
        let got: Vec<u32> = read(&labels)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "{}: groups", set.name);
        // The stream: its own b and box, the same groups.
        let j = parse_json(&text(&run_ok(&[
            "fof",
            &fz,
            "--json",
            "--labels",
            &labels,
            "--min-members",
            "5",
        ])));
        assert_eq!(j.get("dtype").str(), "f64");
        assert_eq!(j.get("linking_length").num(), set.b);
        assert_eq!(j.get("period"), &set.period.map_or(J::Null, J::Num));
        let got: Vec<u32> = read(&labels)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "{}: groups of the stream", set.name);
        let t = text(&run_strs(&[
            "fof".into(),
            "--dtype".into(),
            "f64".into(),
            "--b".into(),
            set.b.to_string(),
            input.clone(),
        ]));
        assert!(t.contains(&format!("{n} f64")), "{t}");
    }
}

#[test]
fn correct_and_apply_f64_positions() {
    let s = Scratch::new("f64-external");
    let set = ties();
    let links = brute_links(&set.pos, None, set.b);
    // "Another compressor": noise of up to 0.8 of the bound, which breaks and
    // makes links among the ties.
    let mut r = Rng::new(3);
    let decoded: Vec<f64> = set
        .pos
        .iter()
        .map(|&x| x + 0.8 * set.abs * r.range(-1.0, 1.0))
        .collect();
    assert_ne!(brute_links(&decoded, None, set.b), links);
    let (orig_p, dec_p) = (s.path("orig.f64"), s.path("dec.f64"));
    write(&orig_p, &f64_bytes(&set.pos));
    write(&dec_p, &f64_bytes(&decoded));
    let (corr, fixed) = (s.path("corr.fz"), s.path("fixed.f64"));
    let abs = set.abs.to_string();
    run_ok(&[
        "correct", "--dtype", "f64", "--abs", &abs, "--b", "0.1", &orig_p, &dec_p, &corr,
    ]);
    assert!(text(&run_ok(&["inspect", &corr])).contains("element f64"));
    run_ok(&["apply", &corr, &dec_p, &fixed]);
    let got = f64s(&read(&fixed));
    let chk = check(&set.pos, &got, None, set.b, set.abs, &links);
    assert!(chk.clean(), "{chk:?}");
    // As f32, the correction refuses (one line, exit 2).
    run_err(
        &["apply", &corr, &dec_p, &fixed, "--dtype", "f32"],
        "does not match",
    );
}

#[test]
fn zfp_base_takes_f64() {
    // ZFP codes the doubles as doubles: the bound is below f32's spacing at
    // these coordinates, so a float32 detour would break it.
    if !factz::particles::Base::Zfp.available() {
        return;
    }
    let s = Scratch::new("f64-zfp");
    for set in [ties(), clustered()] {
        let links = brute_links(&set.pos, set.period, set.b);
        let input = s.path("in.f64");
        write(&input, &f64_bytes(&set.pos));
        let (fz, back) = (s.path("z.fz"), s.path("back.f64"));
        let mut args: Vec<String> = ["compress", "--kind", "particles", "--dtype", "f64"]
            .map(String::from)
            .to_vec();
        args.extend(["--base", "zfp", "--abs"].map(String::from));
        args.push(set.abs.to_string());
        args.extend(link_flags(&set));
        args.extend([input.clone(), fz.clone()]);
        run_strs(&args);
        let j = parse_json(&text(&run_ok(&["inspect", &fz, "--json"])));
        assert_eq!(j.get("dtype").str(), "f64");
        assert_eq!(j.get("source").str(), "zfp", "{}", set.name);
        run_ok(&["decompress", &fz, &back]);
        let chk = check(
            &set.pos,
            &f64s(&read(&back)),
            set.period,
            set.b,
            set.abs,
            &links,
        );
        assert!(chk.clean(), "{}: {chk:?}", set.name);
        let j = parse_json(&text(&run_ok(&["verify", &input, &fz, "--json"])));
        assert_eq!(j.get("ok"), &J::Bool(true), "{}", set.name);
        assert!(read(&fz).len() < 24 * set.pos.len() / 3, "{}", set.name);
    }
}

#[test]
fn bench_reads_f64() {
    // The ties: an f32 reading changes their links, so the input's link
    // count says whether the bench read doubles.
    let s = Scratch::new("f64-bench");
    let set = ties();
    let n = set.pos.len() / 3;
    let input = s.path("t.f64");
    write(&input, &f64_bytes(&set.pos));
    let links = brute_links(&set.pos, None, set.b);
    let b = set.b.to_string();
    let args = [
        "bench",
        "--kind",
        "particles",
        "--dtype",
        "f64",
        "--rel",
        "1e-6",
        "--b",
        &b,
        "--json",
        &input,
    ];
    let j = parse_json(&text(&run_ok(&args)));
    let inp = &j.get("inputs").arr()[0];
    assert_eq!(inp.get("particles").num(), n as f64);
    assert_eq!(inp.get("links").num(), links.len() as f64);
    let results = j.get("results").arr();
    let factz: Vec<_> = results
        .iter()
        .filter(|r| r.get("method").str().starts_with("factz"))
        .collect();
    assert!(!factz.is_empty(), "{results:?}");
    for r in results {
        let ratio = (24 * n) as f64 / r.get("bytes").num();
        assert!((r.get("ratio").num() - ratio).abs() < 1e-9 * ratio, "{r:?}");
    }
    for r in factz {
        assert_eq!(
            r.get("broken_links").num() + r.get("false_links").num(),
            0.0
        );
        assert_eq!(r.get("bound_violations").num(), 0.0, "{r:?}");
    }
    run_err(
        &[
            "bench",
            "--kind",
            "particles",
            "--dtype",
            "f64",
            "--base",
            "sz3",
            &input,
        ],
        "float32",
    );
}

#[test]
fn refusals_are_one_line() {
    let s = Scratch::new("f64-errors");
    let set = ties();
    let n = set.pos.len() / 3;
    let (input, fz) = compress_aos(&s, &set, "e");
    let out = s.path("out.fz");
    let p = ["compress", "--kind", "particles", "--dtype", "f64"];
    let args = [&p[..], &["--base", "sz3", &input, &out]].concat();
    let o = run(factz().args(&args));
    assert_eq!(o.status.code(), Some(2));
    check_err(&o, &args, "--base builtin or zfp");
    let args = [&p[..], &["--backend", "cuda", &input, &out]].concat();
    let o = run(factz().args(&args));
    assert_eq!(o.status.code(), Some(2));
    check_err(&o, &args, "--backend cuda takes float32 positions only");
    run_err(
        &[
            "compress",
            "--kind",
            "particles",
            "--dtype",
            "f16",
            &input,
            &out,
        ],
        "bad --dtype",
    );
    // A raw file whose size fits the other element type.
    let c = n.to_string();
    run_err(
        &[
            "compress",
            "--kind",
            "particles",
            "--count",
            &c,
            &input,
            &out,
        ],
        "is it f64? (--dtype)",
    );
    let f32_in = s.path("e.f32");
    write(
        &f32_in,
        &set.pos
            .iter()
            .flat_map(|&x| (x as f32).to_le_bytes())
            .collect::<Vec<_>>(),
    );
    run_err(
        &[&p[..], &["--count", &c, &f32_in, &out]].concat(),
        "is it f32? (--dtype)",
    );
    run_err(
        &["fof", "--dtype", "f64", "--count", &c, &f32_in],
        "is it f32? (--dtype)",
    );
    // --dtype against what a stream says.
    for args in [
        vec!["verify", &input, &fz, "--dtype", "f32"],
        vec!["fof", &fz, "--dtype", "f32"],
    ] {
        let o = run(factz().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        check_err(&o, &args, "--dtype f32 does not match");
    }
}
