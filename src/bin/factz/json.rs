//! A hand-written JSON value and printer (no serde): enough for `--json` output.

use std::fmt::Write;

#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    /// Non-finite numbers print as `null` (JSON has no inf or NaN).
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl From<bool> for Json {
    fn from(x: bool) -> Json {
        Json::Bool(x)
    }
}
impl From<usize> for Json {
    fn from(x: usize) -> Json {
        Json::UInt(x as u64)
    }
}
impl From<u64> for Json {
    fn from(x: u64) -> Json {
        Json::UInt(x)
    }
}
impl From<u32> for Json {
    fn from(x: u32) -> Json {
        Json::UInt(x as u64)
    }
}
impl From<i32> for Json {
    fn from(x: i32) -> Json {
        Json::Int(x as i64)
    }
}
impl From<f64> for Json {
    fn from(x: f64) -> Json {
        Json::Num(x)
    }
}
impl From<&str> for Json {
    fn from(x: &str) -> Json {
        Json::Str(x.to_string())
    }
}
impl From<String> for Json {
    fn from(x: String) -> Json {
        Json::Str(x)
    }
}
impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(x: Option<T>) -> Json {
        x.map_or(Json::Null, Into::into)
    }
}
impl<T: Into<Json>> From<Vec<T>> for Json {
    fn from(x: Vec<T>) -> Json {
        Json::Arr(x.into_iter().map(Into::into).collect())
    }
}

/// An object under construction, keys in insertion order.
#[derive(Debug, Clone, Default)]
pub struct Obj(Vec<(String, Json)>);

impl Obj {
    pub fn new() -> Obj {
        Obj(Vec::new())
    }
    pub fn put(mut self, key: &str, value: impl Into<Json>) -> Obj {
        self.0.push((key.to_string(), value.into()));
        self
    }
    pub fn build(self) -> Json {
        Json::Obj(self.0)
    }
}

impl From<Obj> for Json {
    fn from(o: Obj) -> Json {
        o.build()
    }
}

/// A number in a compact, round-trip form that JSON accepts.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return "null".into();
    }
    let a = x.abs();
    if a == 0.0 || (1e-4..1e15).contains(&a) {
        let s = format!("{x}");
        if s == "-0" {
            "0".into()
        } else {
            s
        }
    } else {
        format!("{x:e}")
    }
}

fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Json {
    /// Pretty-printed with two-space indentation and a final newline.
    pub fn pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }

    fn write(&self, out: &mut String, indent: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(x) => {
                let _ = write!(out, "{x}");
            }
            Json::UInt(x) => {
                let _ = write!(out, "{x}");
            }
            Json::Num(x) => out.push_str(&number(*x)),
            Json::Str(s) => escape(s, out),
            Json::Arr(items) => {
                let scalar = items
                    .iter()
                    .all(|i| !matches!(i, Json::Arr(_) | Json::Obj(_)));
                if items.is_empty() {
                    out.push_str("[]");
                } else if scalar {
                    out.push('[');
                    for (k, i) in items.iter().enumerate() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        i.write(out, indent);
                    }
                    out.push(']');
                } else {
                    out.push_str("[\n");
                    for (k, i) in items.iter().enumerate() {
                        pad(out, indent + 1);
                        i.write(out, indent + 1);
                        out.push_str(if k + 1 < items.len() { ",\n" } else { "\n" });
                    }
                    pad(out, indent);
                    out.push(']');
                }
            }
            Json::Obj(fields) => {
                if fields.is_empty() {
                    out.push_str("{}");
                    return;
                }
                out.push_str("{\n");
                for (k, (key, value)) in fields.iter().enumerate() {
                    pad(out, indent + 1);
                    escape(key, out);
                    out.push_str(": ");
                    value.write(out, indent + 1);
                    out.push_str(if k + 1 < fields.len() { ",\n" } else { "\n" });
                }
                pad(out, indent);
                out.push('}');
            }
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    for _ in 0..indent {
        out.push_str("  ");
    }
}
