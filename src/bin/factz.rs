//! `factz`: the command-line tool (ARCHITECTURE.md, "Command line").
//!
//! Every failure ends in one line `factz: ...` on stderr and a non-zero exit status:
//! 2 for a usage error (bad or missing flags and arguments), 1 for everything else
//! (unreadable input, corrupted stream, a failed `verify`). A panic, which would be a
//! bug, is reported on one line too, without a backtrace.

#[path = "factz/args.rs"]
mod args;
#[path = "factz/backend.rs"]
mod backend;
#[path = "factz/bench.rs"]
mod bench;
#[path = "factz/commands.rs"]
mod commands;
#[path = "factz/cps.rs"]
mod cps;
#[path = "factz/fileio.rs"]
mod fileio;
#[path = "factz/fof.rs"]
mod fof;
#[path = "factz/help.rs"]
mod help;
#[path = "factz/json.rs"]
mod json;
#[path = "factz/particle_baselines.rs"]
mod particle_baselines;
#[path = "factz/particle_bench.rs"]
mod particle_bench;
#[path = "factz/particle_commands.rs"]
mod particle_commands;
#[path = "factz/plot.rs"]
mod plot;
#[path = "factz/sidecar.rs"]
mod sidecar;
#[path = "factz/stats.rs"]
mod stats;
#[path = "factz/synth.rs"]
mod synth;
#[path = "factz/table.rs"]
mod table;

use std::fmt;
use std::process::ExitCode;

/// A failure the tool reports on one line.
#[derive(Debug)]
pub struct CliError {
    /// 2: usage; 1: anything else.
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// A usage error: bad, missing or unknown flags and arguments.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: 2,
            message: message.into(),
        }
    }
    /// A run-time failure: I/O, corrupt input, a failed check.
    pub fn fail(message: impl Into<String>) -> CliError {
        CliError {
            code: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<factz::Error> for CliError {
    fn from(e: factz::Error) -> CliError {
        match e.kind {
            factz::ErrorKind::InvalidArgument => CliError::usage(e.message),
            _ => CliError::fail(e.message),
        }
    }
}

pub type CliResult<T> = Result<T, CliError>;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let what = what.replace('\n', " ");
        eprintln!("factz: internal error (a bug, please report it): {what}{at}");
    }));
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match run(argv) {
        Ok(code) => ExitCode::from(code),
        Err(e) if e.code == 0 => ExitCode::SUCCESS,
        Err(e) => {
            let msg = e.message.replace('\n', " ");
            eprintln!("factz: {msg}");
            ExitCode::from(e.code)
        }
    }
}

fn run(argv: Vec<std::ffi::OsString>) -> CliResult<u8> {
    let mut it = argv.into_iter();
    let Some(first) = it.next() else {
        return Err(CliError::usage("no command given (try `factz --help`)"));
    };
    let cmd = first
        .into_string()
        .map_err(|_| CliError::usage("the command is not valid UTF-8"))?;
    let rest: Vec<std::ffi::OsString> = it.collect();
    match cmd.as_str() {
        "-h" | "--help" => {
            fileio::print_stdout(help::MAIN)?;
            Ok(0)
        }
        "-V" | "--version" => {
            fileio::print_stdout(&format!("factz {}\n", env!("CARGO_PKG_VERSION")))?;
            Ok(0)
        }
        "help" => {
            let topic = rest.first().and_then(|s| s.to_str()).unwrap_or("");
            match help::for_command(topic) {
                Some(text) => {
                    fileio::print_stdout(text)?;
                    Ok(0)
                }
                None if topic.is_empty() => {
                    fileio::print_stdout(help::MAIN)?;
                    Ok(0)
                }
                None => Err(CliError::usage(format!(
                    "no help for unknown command '{topic}'"
                ))),
            }
        }
        "compress" => commands::compress(rest),
        "decompress" => commands::decompress(rest),
        "verify" => commands::verify(rest),
        "inspect" => commands::inspect(rest),
        "bench" => bench::bench(rest),
        "correct" => particle_commands::correct(rest),
        "apply" => particle_commands::apply(rest),
        "fof" => fof::fof(rest),
        "cps" => cps::cps(rest),
        "synth" => synth::synth(rest),
        other if other.starts_with('-') => Err(CliError::usage(format!(
            "unknown option '{other}' before the command (try `factz --help`)"
        ))),
        other => Err(CliError::usage(format!(
            "unknown command '{other}' (try `factz --help`)"
        ))),
    }
}
