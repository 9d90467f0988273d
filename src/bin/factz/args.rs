//! A small argument parser: `--flag VALUE`, `--flag=VALUE`, boolean `--flag`,
//! positionals (`-` is one), `--` ends the flags. Unknown flags are errors.

use crate::{CliError, CliResult};
use factz::field::{Bound, Coder, Layout, Mode};
use factz::format::Kind;
use factz::particles::{self, Base, Linking};
use std::ffi::OsString;

/// One flag a command accepts.
pub struct FlagSpec {
    pub name: &'static str,
    pub takes_value: bool,
}

pub const fn val(name: &'static str) -> FlagSpec {
    FlagSpec {
        name,
        takes_value: true,
    }
}

pub const fn switch(name: &'static str) -> FlagSpec {
    FlagSpec {
        name,
        takes_value: false,
    }
}

/// What a command line held, checked against the command's flags.
#[derive(Debug)]
pub struct Args {
    cmd: &'static str,
    flags: Vec<(&'static str, Option<String>)>,
    pub positionals: Vec<String>,
    /// `-h` / `--help` was given.
    pub help: bool,
}

/// Parse `argv` for command `cmd` accepting `specs` (`--help` is always accepted).
pub fn parse(cmd: &'static str, argv: Vec<OsString>, specs: &[FlagSpec]) -> CliResult<Args> {
    let mut out = Args {
        cmd,
        flags: Vec::new(),
        positionals: Vec::new(),
        help: false,
    };
    let mut it = argv.into_iter();
    let mut only_positionals = false;
    while let Some(raw) = it.next() {
        let arg = raw
            .into_string()
            .map_err(|a| CliError::usage(format!("{cmd}: argument {a:?} is not valid UTF-8")))?;
        if only_positionals || arg == "-" || !arg.starts_with('-') {
            out.positionals.push(arg);
            continue;
        }
        if arg == "--" {
            only_positionals = true;
            continue;
        }
        if arg == "-h" || arg == "--help" {
            out.help = true;
            continue;
        }
        if arg == "-v" && specs.iter().any(|s| s.name == "verbose") {
            out.push("verbose", None)?;
            continue;
        }
        let Some(body) = arg.strip_prefix("--") else {
            return Err(CliError::usage(format!(
                "{cmd}: unknown option '{arg}' (try `factz help {cmd}`)"
            )));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let spec = specs.iter().find(|s| s.name == name).ok_or_else(|| {
            CliError::usage(format!(
                "{cmd}: unknown option '--{name}' (try `factz help {cmd}`)"
            ))
        })?;
        let value =
            if spec.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None => Some(it.next().and_then(|v| v.into_string().ok()).ok_or_else(
                        || CliError::usage(format!("{cmd}: option --{name} needs a value")),
                    )?),
                }
            } else {
                if inline.is_some() {
                    return Err(CliError::usage(format!(
                        "{cmd}: option --{name} takes no value"
                    )));
                }
                None
            };
        out.push(spec.name, value)?;
    }
    Ok(out)
}

impl Args {
    fn push(&mut self, name: &'static str, value: Option<String>) -> CliResult<()> {
        if self.flags.iter().any(|(n, _)| *n == name) {
            return Err(CliError::usage(format!(
                "{}: option --{name} is given twice",
                self.cmd
            )));
        }
        self.flags.push((name, value));
        Ok(())
    }

    /// The value of a flag that takes one, if given.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether a flag was given.
    pub fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| *n == name)
    }

    /// The names of the given flags among `names`.
    pub fn given<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        names.iter().copied().filter(|n| self.has(n)).collect()
    }

    /// Exactly `n` positionals, named in `what` for the message.
    pub fn positionals_exact(&self, what: &[&str]) -> CliResult<()> {
        let got = self.positionals.len();
        if got < what.len() {
            return Err(CliError::usage(format!(
                "{}: missing {} (usage: factz {} {} ...; try `factz help {}`)",
                self.cmd,
                what[got..].join(" and "),
                self.cmd,
                what.join(" "),
                self.cmd
            )));
        }
        if got > what.len() {
            return Err(CliError::usage(format!(
                "{}: unexpected extra argument '{}'",
                self.cmd,
                self.positionals[what.len()]
            )));
        }
        Ok(())
    }

    pub fn usage_err(&self, msg: impl std::fmt::Display) -> CliError {
        CliError::usage(format!("{}: {msg}", self.cmd))
    }

    /// `--shape NY,NX` (also `NYxNX`), if given.
    pub fn shape(&self) -> CliResult<Option<(usize, usize)>> {
        let Some(s) = self.value("shape") else {
            return Ok(None);
        };
        parse_shape(s).map(Some).map_err(|m| self.usage_err(m))
    }

    /// `--layout soa|aos`, if given.
    pub fn layout(&self) -> CliResult<Option<Layout>> {
        let Some(s) = self.value("layout") else {
            return Ok(None);
        };
        match s.to_ascii_lowercase().as_str() {
            "soa" => Ok(Some(Layout::Soa)),
            "aos" => Ok(Some(Layout::Aos)),
            _ => Err(self.usage_err(format!("bad --layout '{s}': expected soa or aos"))),
        }
    }

    /// `--dtype f32|f64` (the element type of raw field files), if given:
    /// `Some(true)` for f64.
    pub fn dtype_f64(&self) -> CliResult<Option<bool>> {
        match self.value("dtype") {
            None => Ok(None),
            Some("f32") => Ok(Some(false)),
            Some("f64") => Ok(Some(true)),
            Some(x) => Err(self.usage_err(format!("bad --dtype '{x}': expected f32 or f64"))),
        }
    }

    /// `--abs X` or `--rel X` (not both), if given.
    pub fn bound(&self) -> CliResult<Option<Bound>> {
        match (self.value("abs"), self.value("rel")) {
            (Some(_), Some(_)) => Err(self.usage_err("give --abs or --rel, not both")),
            (Some(a), None) => Ok(Some(Bound::Abs(self.positive("abs", a)?))),
            (None, Some(r)) => Ok(Some(Bound::Rel(self.positive("rel", r)?))),
            (None, None) => Ok(None),
        }
    }

    /// A finite, positive float.
    pub fn positive(&self, name: &str, s: &str) -> CliResult<f64> {
        match s.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
            _ => Err(self.usage_err(format!(
                "bad --{name} '{s}': expected a finite positive number"
            ))),
        }
    }

    /// `--rel LIST`: positive finite numbers separated by commas, else `default`.
    pub fn rels(&self, default: &[f64]) -> CliResult<Vec<f64>> {
        match self.value("rel") {
            None => Ok(default.to_vec()),
            Some(s) => parse_list(s, |x| {
                x.parse::<f64>().ok().filter(|t| t.is_finite() && *t > 0.0)
            })
            .ok_or_else(|| {
                self.usage_err(format!(
                    "bad --rel '{s}': expected positive numbers separated by commas"
                ))
            }),
        }
    }

    /// An unsigned integer flag in `lo..=hi`, if given.
    pub fn int_in(&self, name: &str, lo: u64, hi: u64) -> CliResult<Option<u64>> {
        let Some(s) = self.value(name) else {
            return Ok(None);
        };
        match s.trim().parse::<u64>() {
            Ok(x) if (lo..=hi).contains(&x) => Ok(Some(x)),
            _ => Err(self.usage_err(format!(
                "bad --{name} '{s}': expected an integer from {lo} to {hi}"
            ))),
        }
    }

    /// `--threads N` sizes the global rayon pool (once per process); returns
    /// the pool's size either way.
    pub fn threads(&self) -> CliResult<usize> {
        if let Some(t) = self.int_in("threads", 1, 4096)? {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t as usize)
                .build_global()
                .map_err(|e| {
                    CliError::fail(format!("{}: cannot start {t} threads: {e}", self.cmd))
                })?;
        }
        Ok(rayon::current_num_threads())
    }

    /// `--kind field2d|particles`, if given.
    pub fn kind(&self) -> CliResult<Option<Kind>> {
        match self.value("kind").map(|k| k.trim().to_ascii_lowercase()) {
            None => Ok(None),
            Some(k) if k == "field2d" => Ok(Some(Kind::Field2d)),
            Some(k) if k == "particles" => Ok(Some(Kind::Particles)),
            Some(k) => {
                Err(self.usage_err(format!("bad --kind '{k}': expected field2d or particles")))
            }
        }
    }

    /// Refuse the flags of `names` that were given, saying which kind they belong to.
    pub fn refuse(&self, names: &[&str], belongs_to: &str) -> CliResult<()> {
        match self.given(names).first() {
            Some(f) => Err(self.usage_err(format!("--{f} applies to {belongs_to} only"))),
            None => Ok(()),
        }
    }

    /// `--b B` or `--eta E` (not both), if given.
    pub fn linking(&self) -> CliResult<Option<Linking>> {
        match (self.value("b"), self.value("eta")) {
            (Some(_), Some(_)) => Err(self.usage_err("give --b or --eta, not both")),
            (Some(b), None) => Ok(Some(Linking::Length(self.positive("b", b)?))),
            (None, Some(e)) => Ok(Some(Linking::Eta(self.positive("eta", e)?))),
            (None, None) => Ok(None),
        }
    }

    /// `--box L` (side of the periodic box), if given.
    pub fn period(&self) -> CliResult<Option<f64>> {
        self.value("box")
            .map(|l| self.positive("box", l))
            .transpose()
    }

    /// `--count N`, if given.
    pub fn count(&self) -> CliResult<Option<usize>> {
        Ok(self
            .int_in("count", 0, particles::MAX_PARTICLES as u64)?
            .map(|n| n as usize))
    }

    /// `--base builtin|sz3|zfp`, if given (an unknown name is a usage error; a
    /// known one not compiled in is refused later by the library, with the feature).
    pub fn base(&self) -> CliResult<Option<Base>> {
        let Some(s) = self.value("base") else {
            return Ok(None);
        };
        parse_base(s).map(Some).ok_or_else(|| {
            self.usage_err(format!(
                "bad --base '{s}': expected {}",
                BASES.map(Base::name).join(", ")
            ))
        })
    }

    /// `--coder huffman|rans`, if given.
    pub fn coder(&self) -> CliResult<Option<Coder>> {
        let Some(c) = self.value("coder") else {
            return Ok(None);
        };
        Coder::parse(c)
            .map(Some)
            .ok_or_else(|| self.usage_err(format!("bad --coder '{c}': expected huffman or rans")))
    }

    /// `--coder LIST` (the benches): comma-separated coders, else `default`.
    pub fn coders(&self, default: &[Coder]) -> CliResult<Vec<Coder>> {
        match self.value("coder") {
            None => Ok(default.to_vec()),
            Some(s) => parse_list(s, Coder::parse).ok_or_else(|| {
                self.usage_err(format!(
                    "bad --coder '{s}': expected huffman, rans or huffman,rans"
                ))
            }),
        }
    }
}

/// Every base compressor a stream can name, compiled in or not.
pub const BASES: [Base; 3] = [Base::Builtin, Base::Sz3, Base::Zfp];

/// A base compressor by name.
pub fn parse_base(s: &str) -> Option<Base> {
    Base::parse(s)
}

/// "NY,NX" or "NYxNX": two positive integers.
pub fn parse_shape(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("bad --shape '{s}': expected NY,NX (two positive integers)");
    let parts: Vec<&str> = s.split([',', 'x', 'X']).collect();
    if parts.len() != 2 {
        return Err(bad());
    }
    let ny: usize = parts[0].trim().parse().map_err(|_| bad())?;
    let nx: usize = parts[1].trim().parse().map_err(|_| bad())?;
    if ny == 0 || nx == 0 {
        return Err(bad());
    }
    factz::field::vertex_count(ny, nx).map_err(|e| format!("bad --shape '{s}': {e}"))?;
    Ok((ny, nx))
}

/// `b|s` (also the long names).
pub fn parse_mode(s: &str) -> Option<Mode> {
    match s.trim().to_ascii_lowercase().as_str() {
        "b" | "blockwise" | "block" => Some(Mode::Blockwise),
        "s" | "speculative" => Some(Mode::Speculative),
        _ => None,
    }
}

/// A comma-separated list, each item parsed by `f`.
pub fn parse_list<T>(s: &str, f: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let items: Option<Vec<T>> = s
        .split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| f(x.trim()))
        .collect();
    items.filter(|v| !v.is_empty())
}
