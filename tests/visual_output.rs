//! What users look at: ParaView / VTK output, read back by VTK itself (its
//! Python package, as ParaView and TTK would): `factz cps --vtk` against the
//! library's extraction, `factz decompress --vtk` against the decompressed
//! float32, for a field (.vti) and particles (.vtp); and `factz verify
//! --plot`'s marks of lost, false and changed critical points and of broken
//! and false links; plus the CLI's errors around them.

#[path = "common/cli.rs"]
mod cli;

use cli::*;
use factz::field::topology::extract;
use factz::vtk::type_code;
use std::process::Command;

/// The sample field written SoA into `s` as f.f32: its path and components.
fn field_file(s: &Scratch) -> (String, Vec<f32>, Vec<f32>) {
    let (u, v) = field();
    let orig = s.path("f.f32");
    write(&orig, &bytes_of(u.iter().chain(&v).copied()));
    (orig, u, v)
}

/// What VTK's XML reader finds in `path` (tests/vtk/read_vtk.py).
fn read_vtk(path: &str) -> J {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vtk/read_vtk.py");
    let out = Command::new("python3")
        .args([script, path])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "VTK could not read {path} (VTK's Python package comes from scripts/setup: \
         pip install vtk): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_json(&String::from_utf8(out.stdout).unwrap())
}

fn nums(j: &J) -> Vec<f64> {
    j.arr().iter().map(J::num).collect()
}

/// The .vtp of `factz cps` lists exactly the library's critical points.
fn check_cps_vtp(path: &str, u: &[f32], v: &[f32]) -> usize {
    let want = extract(u, v, NY, NX);
    let got = read_vtk(path);
    assert_eq!(got.get("points").num() as usize, want.len());
    assert_eq!(got.get("verts").num() as usize, want.len());
    assert_eq!(got.get("coord_type").str(), "double");
    let xyz = nums(got.get("coords"));
    let types = nums(got.get("arrays").get("type").get("values"));
    let cells = nums(got.get("arrays").get("cell").get("values"));
    for (k, c) in want.iter().enumerate() {
        assert_eq!(
            [xyz[3 * k], xyz[3 * k + 1], xyz[3 * k + 2]],
            [c.x, c.y, 0.0]
        );
        assert_eq!(types[k] as i32, type_code(c.kind), "point {k}");
        assert_eq!(cells[k] as usize, c.tri, "point {k}");
    }
    want.len()
}

#[test]
fn field_and_critical_points_read_back_in_vtk() {
    let s = Scratch::new("vtk-field");
    let (orig, u, v) = field_file(&s);

    // The original's critical points.
    let cp = s.path("cp.vtp");
    run_ok(&["cps", &orig, "--shape", SHAPE, "--vtk", &cp]);
    let n_cps = check_cps_vtp(&cp, &u, &v);
    assert!(
        n_cps >= 10,
        "the test field should have critical points: {n_cps}"
    );

    // Decompressed field as ImageData: every value, grid in (x, y) order.
    let fz = s.path("f.fz");
    run_ok(&["compress", "--shape", SHAPE, "--rel", "1e-2", &orig, &fz]);
    let (out, vti) = (s.path("out.f32"), s.path("out.vti"));
    run_ok(&["decompress", &fz, &out, "--vtk", &vti]);
    let dec = f32s(&read(&out));
    let (du, dv) = dec.split_at(NY * NX);
    let img = read_vtk(&vti);
    assert_eq!(nums(img.get("dimensions")), [NX as f64, NY as f64, 1.0]);
    assert_eq!(nums(img.get("origin")), [0.0; 3]);
    assert_eq!(nums(img.get("spacing")), [1.0; 3]);
    let vec = img.get("arrays").get("vector");
    assert_eq!(vec.get("components").num(), 3.0);
    assert_eq!(vec.get("type").str(), "float");
    let vals = nums(vec.get("values"));
    assert_eq!(vals.len(), 3 * NY * NX);
    for k in 0..NY * NX {
        assert_eq!(
            [
                vals[3 * k] as f32,
                vals[3 * k + 1] as f32,
                vals[3 * k + 2] as f32
            ],
            [du[k], dv[k], 0.0],
            "vertex {k}"
        );
    }

    // The stream's critical points (cps reads it directly): the library's
    // extraction on the decoded field, with every original cell and type kept.
    let cpd = s.path("cpd.vtp");
    run_ok(&["cps", &fz, "--vtk", &cpd]);
    assert_eq!(check_cps_vtp(&cpd, du, dv), n_cps);
    let (a, b) = (extract(&u, &v, NY, NX), extract(du, dv, NY, NX));
    let key = |c: &factz::field::topology::CriticalPoint| (c.tri, c.kind);
    assert_eq!(
        a.iter().map(key).collect::<Vec<_>>(),
        b.iter().map(key).collect::<Vec<_>>()
    );
}

#[test]
fn a_field_without_critical_points_is_an_empty_polydata() {
    let s = Scratch::new("vtk-empty");
    let (u, v) = (vec![1.0f32; NY * NX], vec![0.5f32; NY * NX]);
    let orig = s.path("flat.f32");
    write(&orig, &bytes_of(u.iter().chain(&v).copied()));
    let cp = s.path("cp.vtp");
    let out = run_ok(&["cps", &orig, "--shape", SHAPE, "--json", "--vtk", &cp]);
    let j = parse_json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(j.get("critical_points").num(), 0.0);
    assert_eq!(check_cps_vtp(&cp, &u, &v), 0);
}

#[test]
fn particles_read_back_in_vtk() {
    let s = Scratch::new("vtk-particles");
    // Clumps on a jittered lattice: links to keep, in a 16^3 box.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let pos: Vec<f32> = (0..3 * 3000)
        .map(|k| ((k / 3 % 16) as f64 + 0.3 * rnd() + (k % 3) as f64 * 4.0) as f32)
        .collect();
    let orig = s.path("p.f32");
    write(&orig, &bytes_of(pos.iter().copied()));
    let fz = s.path("p.fz");
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--rel",
        "1e-4",
        &orig,
        &fz,
    ]);
    let (out, vtp) = (s.path("out.f32"), s.path("p.vtp"));
    run_ok(&["decompress", &fz, &out, "--vtk", &vtp]);
    let dec = f32s(&read(&out));
    let got = read_vtk(&vtp);
    assert_eq!(got.get("points").num(), 3000.0);
    assert_eq!(got.get("verts").num(), 3000.0);
    assert_eq!(got.get("coord_type").str(), "float");
    let xyz: Vec<f32> = nums(got.get("coords")).iter().map(|&c| c as f32).collect();
    assert_eq!(xyz, dec);
}

/// float64 particles: `decompress --vtk` writes Float64 points, which VTK
/// reads back as doubles equal to the decompressed float64 bit for bit.
#[test]
fn float64_particles_vtk_is_read_back_by_vtk() {
    let s = Scratch::new("vtk-particles-f64");
    let pos: Vec<f64> = (0..3 * 2000)
        .map(|k| (k / 3 % 16) as f64 + 1e6 + (k % 3) as f64 * 4.0 + 1e-9 * (k % 7) as f64)
        .collect();
    let orig = s.path("p.f64");
    write(
        &orig,
        &pos.iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let fz = s.path("p.fz");
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--dtype",
        "f64",
        "--abs",
        "1e-6",
        "--b",
        "0.5",
        &orig,
        &fz,
    ]);
    let (out, vtp) = (s.path("out.f64"), s.path("p.vtp"));
    run_ok(&["decompress", &fz, &out, "--vtk", &vtp]);
    let dec: Vec<f64> = read(&out)
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let got = read_vtk(&vtp);
    assert_eq!(got.get("points").num(), 2000.0);
    assert_eq!(got.get("coord_type").str(), "double");
    assert_eq!(nums(got.get("coords")), dec);
}

#[test]
fn vtk_flags_fail_cleanly() {
    let s = Scratch::new("vtk-errors");
    let (orig, _, _) = field_file(&s);
    let fz = s.path("f.fz");
    run_ok(&["compress", "--shape", SHAPE, &orig, &fz]);
    let out = s.path("out.f32");
    run_err(
        &["decompress", &fz, &out, "--vtk", "-"],
        "--vtk needs a file",
    );
    run_err(
        &["decompress", &fz, &out, "--vtk", &out],
        "--vtk needs a file",
    );
    run_err(&["cps", &orig], "--shape");
    run_err(&["cps", &orig, "--shape", "40,50"], "needs 16000");
    let p = s.path("p.f32");
    write(&p, &bytes_of((0..300).map(|k| k as f32 * 0.1)));
    let pfz = s.path("p.fz");
    run_ok(&["compress", "--kind", "particles", &p, &pfz]);
    run_err(&["cps", &pfz], "particles");
    // The VTK file lands in a folder that does not exist: an error, not a panic.
    let missing = s.path("no/such/dir/out.vti");
    run_err(
        &["decompress", &fz, &out, "--vtk", &missing],
        "cannot write",
    );
}

/// A PNG's RGB pixels, width and height.
fn read_png(path: &str) -> (Vec<u8>, usize, usize) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    (buf, info.width as usize, info.height as usize)
}

/// Pixels of exactly colour `c` in panel `panel` of `panels` side by side,
/// above the legend.
fn count_in_panel(
    png: &[u8],
    (w, h): (usize, usize),
    (panel, panels): (usize, usize),
    c: [u8; 3],
) -> usize {
    let part = w / panels;
    (0..h - 52)
        .flat_map(|y| (panel * part..(panel + 1) * part).map(move |x| (x, y)))
        .filter(|&(x, y)| png[3 * (y * w + x)..3 * (y * w + x) + 3] == c)
        .count()
}

#[test]
fn verify_plot_marks_what_each_reconstruction_changed() {
    let s = Scratch::new("plot");
    let (orig, u, v) = field_file(&s);
    let fz = s.path("f.fz");
    run_ok(&["compress", "--shape", SHAPE, "--rel", "1e-2", &orig, &fz]);
    // Another "compressor": the original plus noise of 3% of the range.
    let mut x = 7u64;
    let mut noisy = |a: f32| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        a + ((x >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 0.12
    };
    let (nu, nv): (Vec<f32>, Vec<f32>) = u
        .iter()
        .zip(&v)
        .map(|(&a, &b)| (noisy(a), noisy(b)))
        .unzip();
    let other = s.path("other.f32");
    write(&other, &bytes_of(nu.iter().chain(&nv).copied()));
    let d = factz::field::topology::diff((&u, &v), (&nu, &nv), NY, NX);
    assert!(
        !d.lost.is_empty() && !d.spurious.is_empty(),
        "the noise should move critical points"
    );

    let png_path = s.path("plot.png");
    run_ok(&[
        "verify",
        &orig,
        &fz,
        "--plot",
        &png_path,
        "--against",
        &other,
    ]);
    let (buf, w, h) = read_png(&png_path);
    assert!(w > 3 * NX && h > NY, "{w} x {h}");
    // factz kept every critical point: no marks on its panel; the noisy one has them.
    for c in [LOST, FALSE, CHANGED] {
        assert_eq!(
            count_in_panel(&buf, (w, h), (1, 3), c),
            0,
            "factz panel, colour {c:?}"
        );
    }
    assert!(count_in_panel(&buf, (w, h), (2, 3), LOST) > 0);
    assert!(count_in_panel(&buf, (w, h), (2, 3), FALSE) > 0);
    assert_eq!(
        count_in_panel(&buf, (w, h), (2, 3), CHANGED) > 0,
        !d.type_changed.is_empty()
    );

    // --against alone fails on one line.
    run_err(
        &["verify", &orig, &fz, "--against", &other],
        "only goes with --plot",
    );
}

/// Mark colours of `verify --plot`: lost / broken, false, changed type.
const LOST: [u8; 3] = [230, 20, 20];
const FALSE: [u8; 3] = [255, 0, 255];
const CHANGED: [u8; 3] = [255, 230, 0];

#[test]
fn verify_plot_marks_the_links_each_reconstruction_changed() {
    let s = Scratch::new("plot-particles");
    // Clumps of 8 within b of each other on a coarse lattice, in a 20^3 box.
    let mut x = 11u64;
    let mut rnd = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut pos = Vec::new();
    for c in 0..400 {
        let centre = [
            (c % 8) as f64 * 2.5,
            (c / 8 % 8) as f64 * 2.5,
            (c / 64) as f64 * 2.5,
        ];
        for _ in 0..8 {
            for c in centre {
                pos.push((c + 0.3 * rnd()) as f32);
            }
        }
    }
    let orig = s.path("p.f32");
    write(&orig, &bytes_of(pos.iter().copied()));
    let fz = s.path("p.fz");
    run_ok(&[
        "compress",
        "--kind",
        "particles",
        "--b",
        "0.2",
        "--rel",
        "1e-3",
        &orig,
        &fz,
    ]);
    let noisy: Vec<f32> = pos
        .iter()
        .map(|&p| p + (rnd() as f32 - 0.5) * 0.1)
        .collect();
    let other = s.path("other.f32");
    write(&other, &bytes_of(noisy.iter().copied()));

    let png_path = s.path("plot.png");
    let out = run_ok(&[
        "verify",
        &orig,
        &fz,
        "--plot",
        &png_path,
        "--against",
        &other,
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("OK"));
    // Panels: original, factz, the noisy copy, the mass functions.
    let (buf, w, h) = read_png(&png_path);
    for c in [LOST, FALSE] {
        assert_eq!(
            count_in_panel(&buf, (w, h), (1, 4), c),
            0,
            "factz panel, colour {c:?}"
        );
        assert!(
            count_in_panel(&buf, (w, h), (2, 4), c) > 0,
            "noisy panel, colour {c:?}"
        );
    }
}
