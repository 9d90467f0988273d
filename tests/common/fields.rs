//! Test fields: 2D turbulence from `factz::synth` (cached), windows of it with odd
//! sizes, and adversarial generators. Nothing here uses the `factz` crate beyond
//! its data generators: the checks are independent of the code they check.

use factz::synth::detmath;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A field with a name for diagnostics.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ny: usize,
    pub nx: usize,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
}

impl Field {
    /// The finite values' span over both components (max - min; 0 when there
    /// is none): what a relative bound scales.
    pub fn finite_span(&self) -> f64 {
        let (lo, hi) = self
            .u
            .iter()
            .chain(&self.v)
            .filter(|x| x.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        if lo > hi {
            0.0
        } else {
            hi as f64 - lo as f64
        }
    }

    pub fn new(name: impl Into<String>, ny: usize, nx: usize, u: Vec<f32>, v: Vec<f32>) -> Field {
        assert_eq!(u.len(), ny * nx);
        assert_eq!(v.len(), ny * nx);
        Field {
            name: name.into(),
            ny,
            nx,
            u,
            v,
        }
    }
    pub fn idx(&self, i: usize, j: usize) -> usize {
        j * self.nx + i
    }
    pub fn renamed(mut self, name: impl Into<String>) -> Field {
        self.name = name.into();
        self
    }
}

// ---------------------------------------------------------------- RNG

/// xorshift64* — small, deterministic, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed so that small seeds give unrelated streams; never 0.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x1234_5678_9ABC_DEF1 } else { z })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0);
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

// ---------------------------------------------------------------- generated data

/// Where generated test data is cached between test binaries:
/// `FACTZ_TESTDATA_DIR`, else `target/testdata` of this checkout when it exists
/// on this machine, else the system's temporary folder (a test binary run from
/// a copy on another machine, as scripts/gpu-check does).
pub fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("FACTZ_TESTDATA_DIR").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    if target.is_dir() {
        return target.join("testdata");
    }
    std::env::temp_dir().join("factz-testdata")
}

fn read_complete(path: &Path, expect_bytes: usize) -> Option<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) if b.len() == expect_bytes => Some(b),
        _ => None,
    }
}

static GEN_LOCK: Mutex<()> = Mutex::new(());
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// `make()`'s bytes, cached under [`cache_dir`] as `key` (which names the
/// generator's version and every parameter). Generation is deterministic, so the
/// cache only saves time; an unwritable cache folder is not an error.
pub fn cached(key: &str, expect: usize, make: impl FnOnce() -> Vec<u8>) -> Vec<u8> {
    let key = format!("v{}_{key}", factz::synth::VERSION);
    let dir = cache_dir();
    let path = dir.join(format!("{key}.f32"));
    if let Some(b) = read_complete(&path, expect) {
        return b;
    }
    // One generator at a time in this process (2 cores); other processes may race:
    // each writes its own temporary name and renames it into place (atomic).
    let _g = GEN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = read_complete(&path, expect) {
        return b;
    }
    let bytes = make();
    assert_eq!(
        bytes.len(),
        expect,
        "generator for {key} made the wrong size"
    );
    if std::fs::create_dir_all(&dir).is_ok() {
        let tmp = dir.join(format!(
            "{key}.tmp-{}-{}",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::write(&tmp, &bytes).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    bytes
}

/// Little-endian float32 words.
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// 2D decaying turbulence `n x n` from `factz::synth::Turbulence`, cached.
/// `options` are `factz synth`'s: `--k0 K`, `--t-end T`, `--nsim M`.
pub fn synth_turbulence(n: usize, seed: u64, options: &[&str]) -> (Vec<f32>, Vec<f32>) {
    let mut spec = factz::synth::Turbulence::new(n, seed);
    for pair in options.chunks(2) {
        let value = pair
            .get(1)
            .unwrap_or_else(|| panic!("{options:?}: no value"));
        let num: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{options:?}: bad number"));
        match pair[0] {
            "--k0" => spec.k0 = num,
            "--t-end" => spec.t_end = num,
            "--nsim" => spec.nsim = num as usize,
            o => panic!("unknown turbulence option {o}"),
        }
    }
    let key = format!(
        "turb_n{n}_s{seed}_nsim{}_k{}_t{}_r{}",
        spec.nsim, spec.k0, spec.t_end, spec.t_refine
    );
    let bytes = cached(&key, 8 * n * n, || {
        let (u, v) = spec
            .generate(&mut |_, _| {})
            .unwrap_or_else(|e| panic!("turbulence {n} seed {seed}: {e}"));
        u.iter().chain(&v).flat_map(|x| x.to_le_bytes()).collect()
    });
    let mut u = f32s(&bytes);
    let v = u.split_off(n * n);
    (u, v)
}

/// Turbulence as a named [`Field`].
pub fn turbulence(n: usize, seed: u64) -> Field {
    let (u, v) = synth_turbulence(n, seed, &[]);
    Field::new(format!("turb{n}s{seed}"), n, n, u, v)
}

/// An `h x w` window of `src` starting at row `y0`, column `x0`, wrapping around
/// (the turbulence is periodic, so a wrapped window is still a smooth field, and
/// windows larger than the source are possible).
pub fn window(src: &Field, y0: usize, x0: usize, h: usize, w: usize) -> Field {
    let mut u = Vec::with_capacity(h * w);
    let mut v = Vec::with_capacity(h * w);
    for j in 0..h {
        for i in 0..w {
            let k = ((y0 + j) % src.ny) * src.nx + (x0 + i) % src.nx;
            u.push(src.u[k]);
            v.push(src.v[k]);
        }
    }
    Field::new(format!("{}[{y0}+{h},{x0}+{w}]", src.name), h, w, u, v)
}

/// The odd and awkward sizes the guarantee tests use: (ny, nx).
pub const ODD_SHAPES: &[(usize, usize)] = &[
    (257, 129),
    (129, 257),
    (65, 47),
    (33, 17),
    (17, 33),
    (31, 63),
    (1, 97),
    (97, 1),
    (1, 2),
    (2, 1),
    (2, 2),
    (3, 3),
    (1, 1),
];

/// A smooth field: a few random Fourier modes (values ~ [-1, 1]); libm-free
/// trigonometry, so the same bits everywhere.
pub fn smooth(ny: usize, nx: usize, seed: u64) -> Field {
    let mut r = Rng::new(seed);
    let modes: Vec<[f64; 6]> = (0..6)
        .map(|_| {
            [
                r.range(0.5, 3.5) * std::f64::consts::TAU / nx.max(2) as f64,
                r.range(0.5, 3.5) * std::f64::consts::TAU / ny.max(2) as f64,
                r.range(0.0, std::f64::consts::TAU),
                r.range(0.0, std::f64::consts::TAU),
                r.range(-0.5, 0.5),
                r.range(-0.5, 0.5),
            ]
        })
        .collect();
    let mut u = Vec::with_capacity(ny * nx);
    let mut v = Vec::with_capacity(ny * nx);
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = (i as f64, j as f64);
            let (mut a, mut b) = (0.0, 0.0);
            for m in &modes {
                a += m[4] * detmath::sin(m[0] * x + m[1] * y + m[2]);
                b += m[5] * detmath::cos(m[0] * x - m[1] * y + m[3]);
            }
            u.push(a as f32);
            v.push(b as f32);
        }
    }
    Field::new(format!("smooth{ny}x{nx}s{seed}"), ny, nx, u, v)
}

// ---------------------------------------------------------------- adversarial

pub fn zeros(ny: usize, nx: usize) -> Field {
    Field::new(
        format!("zeros{ny}x{nx}"),
        ny,
        nx,
        vec![0.0; ny * nx],
        vec![0.0; ny * nx],
    )
}

pub fn constant(ny: usize, nx: usize, cu: f32, cv: f32) -> Field {
    Field::new(
        format!("const({cu},{cv}){ny}x{nx}"),
        ny,
        nx,
        vec![cu; ny * nx],
        vec![cv; ny * nx],
    )
}

/// `base` with rectangular patches of exact zero vectors, isolated zero vertices,
/// and rows/columns where only one component is zero.
pub fn zero_patches(base: &Field, seed: u64) -> Field {
    let mut f = base.clone();
    let mut r = Rng::new(seed);
    let (ny, nx) = (f.ny, f.nx);
    for _ in 0..4 {
        let (h, w) = (1 + r.below(ny.min(8)), 1 + r.below(nx.min(8)));
        let (y0, x0) = (r.below(ny), r.below(nx));
        for j in y0..(y0 + h).min(ny) {
            for i in x0..(x0 + w).min(nx) {
                let k = f.idx(i, j);
                f.u[k] = 0.0;
                f.v[k] = 0.0;
            }
        }
    }
    for _ in 0..(ny * nx / 50).max(1) {
        let k = r.below(ny * nx);
        f.u[k] = 0.0;
        f.v[k] = 0.0;
    }
    // negative zeros and single-component zeros
    for _ in 0..(ny * nx / 100).max(1) {
        let k = r.below(ny * nx);
        f.u[k] = -0.0;
        f.v[k] = 0.0;
        let k = r.below(ny * nx);
        f.u[k] = 0.0;
        let k = r.below(ny * nx);
        f.v[k] = -0.0;
    }
    f.renamed(format!("{}+zeropatches", base.name))
}

/// `base` with a land mask: a NaN disc (both components), scattered NaN in one or both
/// components (several payloads, both signs, a signalling NaN), and scattered +-Inf.
pub fn nan_mask(base: &Field, seed: u64) -> Field {
    let mut f = base.clone();
    let mut r = Rng::new(seed);
    let (ny, nx) = (f.ny, f.nx);
    let (cy, cx) = (ny as f64 * 0.4, nx as f64 * 0.6);
    let rad = (ny.min(nx) as f64 * 0.2).max(0.8);
    for j in 0..ny {
        for i in 0..nx {
            let (dy, dx) = (j as f64 - cy, i as f64 - cx);
            if dx * dx + dy * dy <= rad * rad {
                let k = f.idx(i, j);
                f.u[k] = f32::NAN;
                f.v[k] = f32::NAN;
            }
        }
    }
    let nans = [
        f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffc0_0000),
        f32::from_bits(0x7f80_0001), // signalling NaN
        f32::from_bits(0xffff_ffff),
    ];
    let specials = [f32::INFINITY, f32::NEG_INFINITY];
    for _ in 0..(ny * nx / 40).max(2) {
        let k = r.below(ny * nx);
        let val = if r.below(3) == 0 {
            specials[r.below(2)]
        } else {
            nans[r.below(nans.len())]
        };
        match r.below(3) {
            0 => f.u[k] = val,
            1 => f.v[k] = val,
            _ => {
                f.u[k] = val;
                f.v[k] = nans[r.below(nans.len())];
            }
        }
    }
    f.renamed(format!("{}+nanmask", base.name))
}

/// `base` with exact degeneracies: a region where u = 2 v (so every m_k and m are
/// exactly 0 there), one where u = -v/2, one where u = v, and one with v = 0.
pub fn proportional_regions(base: &Field) -> Field {
    let mut f = base.clone();
    let (ny, nx) = (f.ny, f.nx);
    for j in 0..ny {
        for i in 0..nx {
            let k = f.idx(i, j);
            let (qy, qx) = (2 * j / ny.max(1), 2 * i / nx.max(1));
            match (qy, qx) {
                (0, 0) => f.u[k] = 2.0 * f.v[k],
                (0, _) => f.u[k] = -0.5 * f.v[k],
                (_, 0) => f.u[k] = f.v[k],
                _ => {
                    if i % 3 == 0 {
                        f.v[k] = 0.0
                    }
                }
            }
        }
    }
    f.renamed(format!("{}+proportional", base.name))
}

/// Small integers in [-k, k]: many exactly-zero m_k, critical points on edges and
/// vertices, many degenerate triangles.
pub fn integer_field(ny: usize, nx: usize, k: i32, seed: u64) -> Field {
    let mut r = Rng::new(seed);
    let span = (2 * k + 1) as usize;
    let mut g = || (r.below(span) as i32 - k) as f32;
    let u: Vec<f32> = (0..ny * nx).map(|_| g()).collect();
    let v: Vec<f32> = (0..ny * nx).map(|_| g()).collect();
    Field::new(format!("int[-{k},{k}]{ny}x{nx}s{seed}"), ny, nx, u, v)
}

/// `base` scaled so its largest magnitude is `target` (computed in f64, rounded once).
pub fn scaled_to(base: &Field, target: f64, tag: &str) -> Field {
    let maxabs = base
        .u
        .iter()
        .chain(&base.v)
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, &x| m.max((x as f64).abs()));
    let s = if maxabs > 0.0 { target / maxabs } else { 1.0 };
    let mut f = base.clone();
    for x in f.u.iter_mut().chain(f.v.iter_mut()) {
        *x = (*x as f64 * s) as f32;
    }
    f.renamed(format!("{}*{tag}", base.name))
}

/// Mixed magnitudes: the left half of `base` scaled into the subnormal range, the right
/// half unchanged.
pub fn mixed_subnormal(base: &Field) -> Field {
    let mut f = base.clone();
    for j in 0..f.ny {
        for i in 0..f.nx / 2 {
            let k = f.idx(i, j);
            f.u[k] = (f.u[k] as f64 * 1e-40) as f32;
            f.v[k] = (f.v[k] as f64 * 1e-40) as f32;
        }
    }
    f.renamed(format!("{}+halfsubnormal", base.name))
}

/// A named linear type: name, Jacobian A, expected sign triple.
pub type LinearType = (&'static str, [[f64; 2]; 2], [i8; 3]);

/// The linear critical-point types with their Jacobians A and expected sign triple.
pub const LINEAR_TYPES: &[LinearType] = &[
    ("saddle", [[1.0, 0.0], [0.0, -1.0]], [-1, 0, 1]),
    ("saddle_rot", [[1.0, 2.0], [2.0, -1.0]], [-1, 0, 1]),
    ("source", [[1.0, 0.0], [0.0, 2.0]], [1, 1, 1]),
    ("sink", [[-1.0, 0.0], [0.0, -2.0]], [1, -1, 1]),
    ("star_source", [[1.0, 0.0], [0.0, 1.0]], [1, 1, 0]),
    ("repelling_focus", [[1.0, -2.0], [2.0, 1.0]], [1, 1, -1]),
    ("attracting_focus", [[-1.0, -2.0], [2.0, -1.0]], [1, -1, -1]),
    ("center", [[0.0, -1.0], [1.0, 0.0]], [1, 0, -1]),
];

/// The linear field `A (p - c)` sampled at the grid vertices (x = i, y = j). With small
/// integer A and c a multiple of 1/4 every value is exact in f32, so the piecewise
/// linear interpolant equals the linear field and its only zero is c.
pub fn linear(name: &str, a: [[f64; 2]; 2], ny: usize, nx: usize, cx: f64, cy: f64) -> Field {
    let mut u = Vec::with_capacity(ny * nx);
    let mut v = Vec::with_capacity(ny * nx);
    for j in 0..ny {
        for i in 0..nx {
            let (dx, dy) = (i as f64 - cx, j as f64 - cy);
            let (fu, fv) = (a[0][0] * dx + a[0][1] * dy, a[1][0] * dx + a[1][1] * dy);
            assert!(
                (fu as f32) as f64 == fu && (fv as f32) as f64 == fv,
                "linear field not exact in f32"
            );
            u.push(fu as f32);
            v.push(fv as f32);
        }
    }
    Field::new(format!("linear_{name}@({cx},{cy}){ny}x{nx}"), ny, nx, u, v)
}

/// The triangles expected to hold the zero c of a linear field, for c strictly inside
/// T0 / T1, on the diagonal, on a bottom edge or on an interior vertex of quad (i, j).
pub fn tri_id(i: usize, j: usize, t: usize, nx: usize) -> usize {
    2 * (j * (nx - 1) + i) + t
}

/// Every adversarial field the guarantee tests run (small sizes).
pub fn adversarial_suite(base: &Field) -> Vec<Field> {
    let mut out = vec![
        zeros(16, 16),
        zeros(5, 7),
        constant(9, 11, 0.75, -1.5),
        constant(8, 8, 3.0e30, 0.0),
        zero_patches(base, 11),
        nan_mask(base, 12),
        proportional_regions(base),
        integer_field(24, 20, 1, 13),
        integer_field(19, 23, 3, 14),
        scaled_to(base, 1e30, "1e30"),
        scaled_to(base, (f32::MAX / 4.0) as f64, "MAX/4"),
        scaled_to(base, 1e-40, "1e-40"),
        scaled_to(base, 3e-45, "3e-45"),
        mixed_subnormal(base),
    ];
    let (ny, nx) = (12usize, 14usize);
    for &(name, a, _) in LINEAR_TYPES {
        out.push(linear(name, a, ny, nx, 5.75, 4.25)); // strictly inside T0 of quad (5,4)
        out.push(linear(name, a, ny, nx, 3.25, 6.5)); // strictly inside T1 of quad (3,6)
    }
    let saddle = LINEAR_TYPES[0].1;
    let focus = LINEAR_TYPES[5].1;
    out.push(linear("saddle_diag", saddle, ny, nx, 6.5, 6.5)); // on a diagonal edge
    out.push(linear("focus_bottom_edge", focus, ny, nx, 4.5, 3.0)); // on a horizontal edge
    out.push(linear("focus_left_edge", focus, ny, nx, 4.0, 7.5)); // on a vertical edge
    out.push(linear("saddle_vertex", saddle, ny, nx, 7.0, 5.0)); // on a vertex
    out.push(linear("center_vertex", LINEAR_TYPES[7].1, ny, nx, 0.0, 0.0)); // on a corner
    out
}
