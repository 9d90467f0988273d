//! `factz verify --plot`: a picture of a field and its critical points, the
//! original beside each reconstruction, with every lost, false or changed
//! critical point marked; or of a particle set's projection with its halos,
//! every broken or false link marked, and the halo mass functions.
//!
//! Each panel shows the field's magnitude (one colour scale, the original's,
//! for all panels) shaded by a line-integral-convolution texture, so the flow
//! is visible, with y up (grid row 0 at the bottom). Critical points are discs
//! coloured by type; against the original, a lost one is a red cross where it
//! was, a false one a magenta square and one whose type changed a yellow
//! square. Text is font8x8's 8x8 glyphs; the PNG is written by the `png` crate.

use crate::{CliError, CliResult};
use factz::field::topology::{diff, extract, CpType, CriticalPoint};
use factz::particles::{fof, metrics, Space};
use factz::vtk::CP_TYPES;
use factz::Real;
use font8x8::UnicodeFonts;
use rayon::prelude::*;

type Rgb = [u8; 3];

/// One reconstruction to draw beside the original.
pub struct Panel<'a, T: Real> {
    pub title: String,
    pub u: &'a [T],
    pub v: &'a [T],
}

/// Default largest panel side in pixels; small fields are magnified up to it
/// (at most 16 pixels per grid unit).
pub const PANEL: usize = 520;
const MARGIN: usize = 12;
const TITLE_H: usize = 30;
const LEGEND_H: usize = 40;
/// Streamline steps each way of the LIC kernel, of half a pixel each.
const LIC_STEPS: usize = 14;

const BLACK: Rgb = [0, 0, 0];
const LOST: Rgb = [230, 20, 20];
const FALSE: Rgb = [255, 0, 255];
const CHANGED: Rgb = [255, 230, 0];

fn type_colour(t: CpType) -> Rgb {
    match t {
        CpType::Saddle => [255, 255, 255],
        CpType::Source => [255, 127, 0],
        CpType::Sink => [55, 126, 184],
        CpType::RepellingFocus => [250, 128, 114],
        CpType::AttractingFocus => [77, 175, 74],
        CpType::Center => [152, 78, 163],
    }
}

/// Viridis, from nine anchors, at `t` in [0, 1].
fn viridis(t: f64) -> [f64; 3] {
    const A: [[f64; 3]; 9] = [
        [68.0, 1.0, 84.0],
        [71.0, 44.0, 122.0],
        [59.0, 81.0, 139.0],
        [44.0, 113.0, 142.0],
        [33.0, 144.0, 141.0],
        [39.0, 173.0, 129.0],
        [92.0, 200.0, 99.0],
        [170.0, 220.0, 50.0],
        [253.0, 231.0, 37.0],
    ];
    let x = t.clamp(0.0, 1.0) * 8.0;
    let k = (x as usize).min(7);
    let f = x - k as f64;
    std::array::from_fn(|c| A[k][c] + f * (A[k + 1][c] - A[k][c]))
}

struct Canvas {
    w: usize,
    h: usize,
    px: Vec<Rgb>,
}

impl Canvas {
    fn put(&mut self, x: i64, y: i64, c: Rgb) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            self.px[y as usize * self.w + x as usize] = c;
        }
    }
    fn disc(&mut self, cx: f64, cy: f64, r: f64, fill: Rgb) {
        let ri = r.ceil() as i64 + 1;
        let (x0, y0) = (cx.round() as i64, cy.round() as i64);
        for dy in -ri..=ri {
            for dx in -ri..=ri {
                let d = (((x0 + dx) as f64 - cx).powi(2) + ((y0 + dy) as f64 - cy).powi(2)).sqrt();
                if d <= r + 1.0 {
                    self.put(x0 + dx, y0 + dy, if d <= r { fill } else { BLACK });
                }
            }
        }
    }
    fn square(&mut self, cx: f64, cy: f64, r: i64, c: Rgb) {
        let (x0, y0) = (cx.round() as i64, cy.round() as i64);
        for d in -r..=r {
            for t in [-r, -r + 1, r - 1, r] {
                self.put(x0 + d, y0 + t, c);
                self.put(x0 + t, y0 + d, c);
            }
        }
    }
    fn cross(&mut self, cx: f64, cy: f64, r: i64, c: Rgb) {
        let (x0, y0) = (cx.round() as i64, cy.round() as i64);
        for d in -r..=r {
            for w in [-1, 0, 1] {
                self.put(x0 + d + w, y0 + d, c);
                self.put(x0 + d + w, y0 - d, c);
            }
        }
    }
    /// `text` at (x, y) (top left) in 8x8 glyphs magnified `scale` times,
    /// cut at `max_w` pixels.
    fn text(&mut self, x: usize, y: usize, text: &str, scale: usize, max_w: usize, c: Rgb) {
        for (k, ch) in text.chars().take(max_w / (8 * scale)).enumerate() {
            let glyph = font8x8::BASIC_FONTS.get(ch).unwrap_or([0; 8]);
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits >> col & 1 == 1 {
                        for sy in 0..scale {
                            for sx in 0..scale {
                                let px = x + (8 * k + col) * scale + sx;
                                self.put(px as i64, (y + row * scale + sy) as i64, c);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Bilinear sample of a field at grid coordinates (x, y), clamped to the grid.
fn sample<T: Real>(f: &[T], ny: usize, nx: usize, x: f64, y: f64) -> f64 {
    let x = x.clamp(0.0, (nx - 1) as f64);
    let y = y.clamp(0.0, (ny - 1) as f64);
    let (i, j) = (
        (x as usize).min(nx.saturating_sub(2)),
        (y as usize).min(ny.saturating_sub(2)),
    );
    let (fx, fy) = (x - i as f64, y - j as f64);
    let at = |i: usize, j: usize| {
        let v = f[j.min(ny - 1) * nx + i.min(nx - 1)];
        if v.is_finite() {
            v.to_f64()
        } else {
            0.0
        }
    };
    let top = at(i, j) * (1.0 - fx) + at(i + 1, j) * fx;
    let bot = at(i, j + 1) * (1.0 - fx) + at(i + 1, j + 1) * fx;
    top * (1.0 - fy) + bot * fy
}

/// White noise in [0, 1] of a pixel, the same for every panel.
fn noise(x: i64, y: i64) -> f64 {
    let mut h = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (y as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Geometry of a panel: `s` pixels per grid unit.
#[derive(Clone, Copy)]
struct View {
    ny: usize,
    nx: usize,
    s: f64,
    w: usize,
    h: usize,
}

impl View {
    /// Pixel centre (px, py) in grid coordinates, y up.
    fn to_grid(self, px: f64, py: f64) -> (f64, f64) {
        (px / self.s - 0.5, (self.h as f64 - py) / self.s - 0.5)
    }
    fn to_pixel(self, x: f64, y: f64) -> (f64, f64) {
        ((x + 0.5) * self.s, self.h as f64 - (y + 0.5) * self.s)
    }
}

/// The field's pixels: magnitude colour shaded by its LIC texture.
fn render<T: Real>(view: View, u: &[T], v: &[T], mag_max: f64) -> Vec<Rgb> {
    let (ny, nx) = (view.ny, view.nx);
    let step = 0.5 / view.s;
    (0..view.h)
        .into_par_iter()
        .flat_map_iter(|py| {
            (0..view.w).map(move |px| {
                let (x0, y0) = view.to_grid(px as f64 + 0.5, py as f64 + 0.5);
                let (mut sum, mut n) = (noise(px as i64, py as i64), 1.0);
                for dir in [1.0, -1.0] {
                    let (mut x, mut y) = (x0, y0);
                    for _ in 0..LIC_STEPS {
                        let (a, b) = (sample(u, ny, nx, x, y), sample(v, ny, nx, x, y));
                        let len = a.hypot(b);
                        if len.is_nan() || len <= 0.0 {
                            break;
                        }
                        x += dir * step * a / len;
                        y += dir * step * b / len;
                        let (qx, qy) = view.to_pixel(x, y);
                        sum += noise(qx.floor() as i64, qy.floor() as i64);
                        n += 1.0;
                    }
                }
                // Averages of n uniforms have spread 0.29 / sqrt(n): stretch it.
                let lic = (0.5 + (sum / n - 0.5) * 3.0 * (n / 12.0).sqrt()).clamp(0.0, 1.0);
                let m = sample(u, ny, nx, x0, y0).hypot(sample(v, ny, nx, x0, y0));
                let shade = 0.45 + 0.75 * lic;
                let c = viridis(if mag_max > 0.0 { m / mag_max } else { 0.0 });
                c.map(|k| (k * shade).clamp(0.0, 255.0) as u8)
            })
        })
        .collect()
}

/// Draws the original and `panels` side by side into a PNG at `path`;
/// returns nothing but an error if the file cannot be written.
pub fn field_png<T: Real>(
    path: &str,
    ny: usize,
    nx: usize,
    orig: (&[T], &[T]),
    orig_title: &str,
    panels: &[Panel<T>],
    panel_px: usize,
) -> CliResult<()> {
    if ny < 2 || nx < 2 {
        return Err(CliError::fail("--plot needs a field of at least 2 x 2"));
    }
    let s = (panel_px as f64 / nx.max(ny) as f64).min(16.0);
    let view = View {
        ny,
        nx,
        s,
        w: ((nx as f64 * s).round() as usize).max(1),
        h: ((ny as f64 * s).round() as usize).max(1),
    };
    let n = 1 + panels.len();
    let width = MARGIN + n * (view.w + MARGIN);
    let height = TITLE_H + view.h + LEGEND_H + MARGIN;
    let mut cv = Canvas {
        w: width,
        h: height,
        px: vec![[255, 255, 255]; width * height],
    };
    let mag_max = orig
        .0
        .iter()
        .zip(orig.1)
        .map(|(&a, &b)| a.to_f64().hypot(b.to_f64()))
        .filter(|m| m.is_finite())
        .fold(0.0, f64::max);
    let orig_cps = extract(orig.0, orig.1, ny, nx);
    let fields: Vec<(&[T], &[T], String)> =
        std::iter::once((orig.0, orig.1, orig_title.to_string()))
            .chain(panels.iter().map(|p| (p.u, p.v, p.title.clone())))
            .collect();
    let mut titles = Vec::new();
    for (k, (u, v, title)) in fields.iter().enumerate() {
        let x0 = MARGIN + k * (view.w + MARGIN);
        let pixels = render(view, u, v, mag_max);
        for py in 0..view.h {
            let row = (TITLE_H + py) * width + x0;
            cv.px[row..row + view.w].copy_from_slice(&pixels[py * view.w..(py + 1) * view.w]);
        }
        let place = |c: &CriticalPoint| {
            let (px, py) = view.to_pixel(c.x, c.y);
            (x0 as f64 + px, TITLE_H as f64 + py)
        };
        let cps = if k == 0 {
            orig_cps.clone()
        } else {
            extract(u, v, ny, nx)
        };
        let r = (s * 0.35).clamp(2.5, 5.0);
        for c in &cps {
            let (px, py) = place(c);
            cv.disc(px, py, r, type_colour(c.kind));
        }
        let mut line = title.clone();
        if k > 0 {
            let d = diff(orig, (u, v), ny, nx);
            let by_tri = |t: usize| cps.iter().find(|c| c.tri == t);
            for &t in &d.spurious {
                if let Some(c) = by_tri(t) {
                    let (px, py) = place(c);
                    cv.square(px, py, r as i64 + 5, FALSE);
                }
            }
            for &t in &d.type_changed {
                if let Some(c) = by_tri(t) {
                    let (px, py) = place(c);
                    cv.square(px, py, r as i64 + 5, CHANGED);
                }
            }
            for &t in &d.lost {
                if let Some(c) = orig_cps.iter().find(|c| c.tri == t) {
                    let (px, py) = place(c);
                    cv.cross(px, py, r as i64 + 2, LOST);
                }
            }
            line = format!(
                "{line}: {} lost, {} false, {} changed",
                d.lost.len(),
                d.spurious.len(),
                d.type_changed.len()
            );
        } else {
            line = format!("{line}: {} critical points", cps.len());
        }
        titles.push((x0, line));
    }
    draw_titles(&mut cv, &titles, view.w);
    // Legend: types, then the marks.
    let mut x = MARGIN;
    let y = TITLE_H + view.h + 10;
    for t in CP_TYPES {
        cv.disc(x as f64 + 5.0, y as f64 + 4.0, 4.0, type_colour(t));
        cv.text(x + 14, y, t.name(), 1, width, BLACK);
        x += 14 + 8 * t.name().len() + 14;
    }
    let marks = [(LOST, "lost"), (FALSE, "false"), (CHANGED, "type changed")];
    legend_marks(&mut cv, MARGIN, y + 16, &marks);
    write_png(path, &cv)
}

/// A legend row of marks (a cross for [`LOST`], squares otherwise) from
/// (x, y); returns where it ends.
fn legend_marks(cv: &mut Canvas, mut x: usize, y: usize, marks: &[(Rgb, &str)]) -> usize {
    for &(mark, name) in marks {
        if mark == LOST {
            cv.cross(x as f64 + 5.0, y as f64 + 4.0, 4, mark);
        } else {
            cv.square(x as f64 + 5.0, y as f64 + 4.0, 5, mark);
        }
        cv.text(x + 16, y, name, 1, cv.w, BLACK);
        x += 16 + 8 * name.len() + 16;
    }
    x
}

/// Panel titles "name: counts" at their panels' left edges, one text size
/// for all: double where every one fits on one line, else name and counts on
/// two lines.
fn draw_titles(cv: &mut Canvas, titles: &[(usize, String)], w: usize) {
    if titles.iter().all(|(_, t)| 16 * t.chars().count() <= w) {
        for (x0, line) in titles {
            cv.text(*x0, (TITLE_H - 16) / 2, line, 2, w, BLACK);
        }
    } else {
        for (x0, line) in titles {
            let (name, counts) = line.split_once(": ").unwrap_or((line, ""));
            cv.text(*x0, 4, name, 1, w, BLACK);
            cv.text(*x0, 16, counts, 1, w, BLACK);
        }
    }
}

fn write_png(path: &str, cv: &Canvas) -> CliResult<()> {
    let fail = |e: &dyn std::fmt::Display| CliError::fail(format!("cannot write {path}: {e}"));
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), cv.w as u32, cv.h as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| fail(&e))?;
    let data: Vec<u8> = cv.px.iter().flatten().copied().collect();
    w.write_image_data(&data).map_err(|e| fail(&e))?;
    w.finish().map_err(|e| fail(&e))
}

/// One particle reconstruction to draw beside the original.
pub struct ParticlePanel<'a, T> {
    pub title: String,
    pub pos: &'a [T],
}

/// A set's FoF catalogue as the picture needs it.
struct Catalogue {
    /// Linked pairs (i < j).
    links: Vec<(u32, u32)>,
    /// Group label of each particle, or u32::MAX outside halos.
    halo: Vec<u32>,
    /// Member counts of the halos.
    sizes: Vec<usize>,
}

fn catalogue<T: Real>(pos: &[T], space: Space, b: f64, min: usize) -> CliResult<Catalogue> {
    let fail = |e: factz::Error| CliError::fail(format!("--plot: {e}"));
    let links = fof::links(pos, space, b).map_err(fail)?;
    let labels = fof::group_labels(pos.len() / 3, &links);
    let halos = fof::halos(&labels, min).map_err(fail)?;
    let mut halo = vec![u32::MAX; labels.len()];
    for h in &halos {
        for &m in &h.members {
            halo[m as usize] = h.label;
        }
    }
    let sizes = halos.iter().map(|h| h.members.len()).collect();
    Ok(Catalogue { links, halo, sizes })
}

/// A bright colour for a halo label, the same in every panel.
fn halo_colour(label: u32) -> Rgb {
    let h = (f64::from(label) * 0.618_033_988_75).fract() * 6.0;
    let x = 1.0 - (h % 2.0 - 1.0).abs();
    let (r, g, b) = match h as u32 {
        0 => (1.0, x, 0.0),
        1 => (x, 1.0, 0.0),
        2 => (0.0, 1.0, x),
        3 => (0.0, x, 1.0),
        4 => (x, 0.0, 1.0),
        _ => (1.0, 0.0, x),
    };
    [r, g, b].map(|c: f64| (40.0 + 190.0 * c) as u8)
}

/// Draws the original's and each reconstruction's x-y projection (every
/// particle as density, halo members coloured by their FoF group, each broken
/// link a red cross and each false one a magenta square at the pair's middle)
/// and the halo mass functions overlaid, into a PNG at `path`. Links and
/// halos come from the positions in their own type (f64 links at f64
/// precision); only pixel coordinates are rounded.
#[allow(clippy::too_many_arguments)]
pub fn particles_png<T: Real>(
    path: &str,
    orig: &[T],
    panels: &[ParticlePanel<T>],
    space: Space,
    b: f64,
    min: usize,
    panel_px: usize,
) -> CliResult<()> {
    let fin = |k: usize| orig[3 * (k / 2) + k % 2];
    let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
    for k in 0..orig.len() / 3 * 2 {
        let x = fin(k).to_f64();
        if x.is_finite() {
            lo[k % 2] = lo[k % 2].min(x);
            hi[k % 2] = hi[k % 2].max(x);
        }
    }
    if lo[0] > hi[0] {
        return Err(CliError::fail("--plot: no finite positions to draw"));
    }
    let extent = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f64::MIN_POSITIVE);
    let side = panel_px;
    let s = side as f64 / extent;
    let n_panels = 2 + panels.len();
    let width = MARGIN + n_panels * (side + MARGIN);
    let height = TITLE_H + side + LEGEND_H + MARGIN;
    let mut cv = Canvas {
        w: width,
        h: height,
        px: vec![[255, 255, 255]; width * height],
    };
    let to_px = |p: &[T], i: usize| -> Option<(f64, f64)> {
        let (x, y) = (p[3 * i].to_f64(), p[3 * i + 1].to_f64());
        (x.is_finite() && y.is_finite()).then(|| ((x - lo[0]) * s, side as f64 - (y - lo[1]) * s))
    };
    let base = catalogue(orig, space, b, min)?;
    let sets: Vec<(&[T], String)> = std::iter::once((orig, "original".to_string()))
        .chain(panels.iter().map(|p| (p.pos, p.title.clone())))
        .collect();
    let mut titles = Vec::new();
    let mut hmfs = Vec::new();
    for (k, (pos, title)) in sets.iter().enumerate() {
        let x0 = MARGIN + k * (side + MARGIN);
        let cat = if k == 0 {
            None
        } else {
            Some(catalogue(pos, space, b, min)?)
        };
        let cat_ref = cat.as_ref().unwrap_or(&base);
        // Density of every particle, then halo members in their group's colour.
        let mut count = vec![0u32; side * side];
        for i in 0..pos.len() / 3 {
            if let Some((px, py)) = to_px(pos, i) {
                let (px, py) = (px as usize, py as usize);
                if px < side && py < side {
                    count[py * side + px] += 1;
                }
            }
        }
        let cmax = f64::from(count.iter().copied().max().unwrap_or(0).max(1));
        for py in 0..side {
            for px in 0..side {
                let c = f64::from(count[py * side + px]);
                let g = (250.0 - 150.0 * (1.0 + c).ln() / (1.0 + cmax).ln()) as u8;
                cv.px[(TITLE_H + py) * width + x0 + px] = [g; 3];
            }
        }
        for i in 0..pos.len() / 3 {
            let l = cat_ref.halo[i];
            if l != u32::MAX {
                if let Some((px, py)) = to_px(pos, i) {
                    let (px, py) = (px as i64, py as i64);
                    if px >= 0 && py >= 0 && (px as usize) < side && (py as usize) < side {
                        cv.put(x0 as i64 + px, (TITLE_H as i64) + py, halo_colour(l));
                    }
                }
            }
        }
        let middle = |p: &[T], (i, j): (u32, u32)| -> Option<(f64, f64)> {
            let (a, c) = (to_px(p, i as usize)?, to_px(p, j as usize)?);
            Some((
                x0 as f64 + (a.0 + c.0) / 2.0,
                TITLE_H as f64 + (a.1 + c.1) / 2.0,
            ))
        };
        let line = if let Some(cat) = &cat {
            let (broken, made) = metrics::pair_difference(&base.links, &cat.links);
            // Marks shrink to dots where there are too many to tell apart.
            let few = broken.len() + made.len() <= 500;
            for &pair in &made {
                if let Some((px, py)) = middle(pos, pair) {
                    if few {
                        cv.square(px, py, 5, FALSE);
                    } else {
                        cv.put(px as i64, py as i64, FALSE);
                    }
                }
            }
            for &pair in &broken {
                if let Some((px, py)) = middle(orig, pair) {
                    if few {
                        cv.cross(px, py, 4, LOST);
                    } else {
                        cv.put(px as i64, py as i64, LOST);
                    }
                }
            }
            format!(
                "{title}: {} broken, {} false links; {} halos",
                broken.len(),
                made.len(),
                cat.sizes.len()
            )
        } else {
            format!(
                "{title}: {} links, {} halos >= {min}",
                base.links.len(),
                base.sizes.len()
            )
        };
        titles.push((x0, line));
        hmfs.push((
            title.clone(),
            cat.map_or_else(|| base.sizes.clone(), |c| c.sizes),
        ));
    }
    draw_titles(&mut cv, &titles, side);
    let x0 = MARGIN + (n_panels - 1) * (side + MARGIN);
    mass_functions(&mut cv, x0, TITLE_H, side, min, &hmfs);
    let y = TITLE_H + side + 10;
    let x = legend_marks(
        &mut cv,
        MARGIN,
        y,
        &[(LOST, "broken link"), (FALSE, "false link")],
    );
    cv.text(
        x,
        y,
        "x-y projection; halo members coloured by FoF group",
        1,
        width,
        BLACK,
    );
    write_png(path, &cv)
}

/// Set colours of the mass-function curves: the original, then each panel.
const CURVES: [Rgb; 3] = [[0, 0, 0], [55, 126, 184], [255, 127, 0]];

/// Cumulative halo mass functions, N(>= M) halos of at least M members, on
/// log-log axes in a `side`-pixel square at (x0, y0), one curve per set (no
/// binning: every halo is a step).
fn mass_functions(
    cv: &mut Canvas,
    x0: usize,
    y0: usize,
    side: usize,
    min: usize,
    sets: &[(String, Vec<usize>)],
) {
    let largest = sets
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .max()
        .unwrap_or(min)
        .max(min + 1);
    let nmax = sets.iter().map(|(_, s)| s.len()).max().unwrap_or(1).max(1) as f64;
    let (pad_l, pad_b, pad_t) = (44.0, 28.0, 22.0);
    let (w, h) = (side as f64 - pad_l - 8.0, side as f64 - pad_b - pad_t);
    let (lx0, lx1) = ((min.max(1) as f64).log10(), (largest as f64 * 1.2).log10());
    let ly1 = (nmax * 2.0).log10();
    let (fx0, fy0) = (x0 as f64 + pad_l, y0 as f64 + pad_t);
    let at = |m: f64, c: f64| -> (f64, f64) {
        (
            fx0 + w * (m.log10() - lx0) / (lx1 - lx0).max(1e-9),
            fy0 + h * (1.0 - c.max(1.0).log10() / ly1),
        )
    };
    for t in 0..=(w as i64) {
        cv.put(fx0 as i64 + t, (fy0 + h) as i64, BLACK);
        cv.put(fx0 as i64 + t, fy0 as i64, BLACK);
    }
    for t in 0..=(h as i64) {
        cv.put(fx0 as i64, fy0 as i64 + t, BLACK);
        cv.put((fx0 + w) as i64, fy0 as i64 + t, BLACK);
    }
    // Decade ticks and labels.
    let mut d = 1.0f64;
    while d <= largest as f64 * 1.2 {
        if d >= min as f64 {
            let (px, _) = at(d, 1.0);
            for t in 0..5 {
                cv.put(px as i64, (fy0 + h) as i64 - t, BLACK);
            }
            let label = format!("{d}");
            let lx = (px as usize).saturating_sub(4 * label.len());
            cv.text(lx, (fy0 + h) as usize + 4, &label, 1, 64, BLACK);
        }
        d *= 10.0;
    }
    let mut d = 1.0f64;
    while d <= nmax * 2.0 {
        let (_, py) = at(10f64.powf(lx0), d);
        for t in 0..5 {
            cv.put(fx0 as i64 + t, py as i64, BLACK);
        }
        cv.text(
            x0 + 2,
            (py as usize).saturating_sub(4),
            &format!("{d}"),
            1,
            40,
            BLACK,
        );
        d *= 10.0;
    }
    let xlabel = "members M";
    let lx = (fx0 + w / 2.0) as usize - 4 * xlabel.len();
    cv.text(lx, (fy0 + h) as usize + 16, xlabel, 1, 160, BLACK);
    cv.text(x0, y0 + 4, "halos with >= M members", 1, side, BLACK);
    // Steps: N drops by one at each halo's size. The original first and
    // thickest, so a reconstruction that matches it draws over its middle.
    for (k, (name, sizes)) in sets.iter().enumerate() {
        let colour = CURVES[k.min(CURVES.len() - 1)];
        let mut sorted = sizes.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let mut pts = Vec::with_capacity(2 * sorted.len());
        for (i, &m) in sorted.iter().enumerate() {
            pts.push(at(m as f64, i as f64));
            pts.push(at(m as f64, (i + 1) as f64));
        }
        let thick = if k == 0 { 1 } else { 0 };
        for seg in pts.windows(2) {
            let (a, b) = (seg[0], seg[1]);
            let steps = ((b.0 - a.0).abs().max((b.1 - a.1).abs()) as usize).max(1);
            for t in 0..=steps {
                let f = t as f64 / steps as f64;
                let (x, y) = (a.0 + f * (b.0 - a.0), a.1 + f * (b.1 - a.1));
                for dx in -thick..=thick {
                    for dy in -thick..=thick {
                        cv.put(x as i64 + dx, y as i64 + dy, colour);
                    }
                }
            }
        }
        let ty = (fy0 + 6.0 + 12.0 * k as f64) as usize;
        cv.text((fx0 + w - 8.0 * 20.0) as usize, ty, name, 1, 8 * 20, colour);
    }
}
