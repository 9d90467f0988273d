//! The JSON sidecar `factz synth` writes beside its data (`IN.json` next to
//! `IN.f32`): what `bench` takes from it (shape, layout, periodic box, fof_b).
//! One reader for fields and particles; a missing or unreadable sidecar, or a
//! key it lacks, is simply absent (the flags or defaults decide).

use factz::field::Layout;
use std::path::Path;

#[derive(Debug, Default)]
pub struct Sidecar {
    shape: Option<Vec<usize>>,
    layout: Option<Layout>,
    /// Some(None): says open boundaries; Some(Some(l)): a periodic box.
    pub period: Option<Option<f64>>,
    pub fof_b: Option<f64>,
}

/// The text right after `"key":` in a flat JSON document.
fn after_key<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = text.find(&format!("\"{key}\""))?;
    let rest = text[at + key.len() + 2..].trim_start();
    Some(rest.strip_prefix(':')?.trim_start())
}

fn json_number(text: &str, key: &str) -> Option<f64> {
    let rest = after_key(text, key)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn json_bool(text: &str, key: &str) -> Option<bool> {
    let rest = after_key(text, key)?;
    if rest.starts_with("true") {
        Some(true)
    } else if rest.starts_with("false") {
        Some(false)
    } else {
        None
    }
}

impl Sidecar {
    /// The sidecar of data file `path`, as far as it can be read.
    pub fn beside(path: &str) -> Sidecar {
        let Ok(text) = std::fs::read_to_string(Path::new(path).with_extension("json")) else {
            return Sidecar::default();
        };
        let shape = after_key(&text, "shape").and_then(|rest| {
            rest.strip_prefix('[')?
                .split(']')
                .next()?
                .split(',')
                .map(|s| s.trim().parse().ok())
                .collect::<Option<Vec<usize>>>()
        });
        let layout = after_key(&text, "layout").and_then(|rest| {
            let s = rest
                .strip_prefix('"')?
                .split('"')
                .next()?
                .to_ascii_lowercase();
            if s.contains("interleaved") || s.starts_with("aos") {
                Some(Layout::Aos)
            } else if s.starts_with("soa") {
                Some(Layout::Soa)
            } else {
                None
            }
        });
        let period = match (json_bool(&text, "periodic"), json_number(&text, "box")) {
            (Some(true), Some(l)) if l.is_finite() && l > 0.0 => Some(Some(l)),
            (Some(false), _) => Some(None),
            _ => None,
        };
        let fof_b = json_number(&text, "fof_b").filter(|b| b.is_finite() && *b > 0.0);
        Sidecar {
            shape,
            layout,
            period,
            fof_b,
        }
    }

    /// A field's `(ny, nx)` and layout: shape `[2, ny, nx]` is SoA, `[ny, nx, 2]` AoS.
    pub fn field_shape(&self) -> Option<(usize, usize, Layout)> {
        match *self.shape.as_deref()? {
            [2, ny, nx] => Some((ny, nx, Layout::Soa)),
            [ny, nx, 2] => Some((ny, nx, Layout::Aos)),
            _ => None,
        }
    }

    /// A raw field's `(ny, nx)` and layout from the flags, else from the
    /// sidecar of `path` (flags win; SoA when neither says); None when
    /// neither gives a shape.
    pub fn field_geometry(
        path: &str,
        shape: Option<(usize, usize)>,
        layout: Option<Layout>,
    ) -> Option<(usize, usize, Layout)> {
        match (shape, Sidecar::beside(path).field_shape()) {
            (Some((ny, nx)), _) => Some((ny, nx, layout.unwrap_or(Layout::Soa))),
            (None, Some((ny, nx, l))) => Some((ny, nx, layout.unwrap_or(l))),
            (None, None) => None,
        }
    }

    /// A particle set's count: shape `[n, 3]`.
    pub fn particle_count(&self) -> Option<usize> {
        match *self.shape.as_deref()? {
            [n, 3] => Some(n),
            _ => None,
        }
    }

    /// The particles' layout, where it says.
    pub fn layout(&self) -> Option<Layout> {
        self.layout
    }
}
