//! Nothing in the repository reads outside it: a user's clone has nothing beside
//! it (CI's does, which is how a dependency on a sibling folder once went
//! unnoticed). Fails on any tracked text file that names the old sibling data
//! generators, or holds a relative path (`../...`) that climbs out of the
//! repository from the file's folder and from the root (where the scripts run).

use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Tracked files (git), else every file under the root but target/ and .git/.
fn files() -> Vec<PathBuf> {
    if let Ok(out) = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "-z"])
        .output()
    {
        if out.status.success() && !out.stdout.is_empty() {
            return out
                .stdout
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| PathBuf::from(String::from_utf8_lossy(s).into_owned()))
                .collect();
        }
    }
    fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            let (p, r) = (e.path(), rel.join(&name));
            if p.is_dir() {
                walk(&p, &r, out);
            } else {
                out.push(r);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), Path::new(""), &mut out);
    out
}

/// `base/rel` without touching the disk; None when it climbs above `base`'s root.
fn climbs_out(base: &Path, rel: &str) -> bool {
    let mut depth = base.components().count() as i64;
    for c in Path::new(rel).components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

const PATH_CHARS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/";

/// Relative paths in `text` that start a token (after a quote, bracket, space,
/// `=` or the line's start) and begin with `..`.
fn relative_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let b = line.as_bytes();
        let mut i = 0;
        while let Some(at) = line[i..].find("../").map(|k| k + i) {
            let mut s = at;
            while s > 0 && PATH_CHARS.contains(b[s - 1] as char) {
                s -= 1;
            }
            let starts_token = s == 0 || "\"'`( =<[:".contains(b[s - 1] as char);
            let mut e = at;
            while e < b.len() && PATH_CHARS.contains(b[e] as char) {
                e += 1;
            }
            if starts_token && line[s..].starts_with("..") {
                out.push((ln + 1, line[s..e].to_string()));
            }
            i = e.max(at + 3);
        }
    }
    out
}

#[test]
fn no_path_leaves_the_repository() {
    // Built from pieces so this file does not match itself.
    let named = [
        ["../", "shared"].concat(),
        ["shared/", "datagen"].concat(),
        ["FACTZ_", "DATAGEN"].concat(),
        ["gen_", "turbulence.py"].concat(),
        ["gen_", "particles.py"].concat(),
    ];
    let mut bad = Vec::new();
    let files = files();
    assert!(files.len() > 50, "found only {} files", files.len());
    for rel in files {
        if rel == Path::new("tests/self_contained.rs") {
            continue; // its own examples of what to catch
        }
        let Ok(text) = std::fs::read_to_string(root().join(&rel)) else {
            continue; // binary
        };
        for (ln, line) in text.lines().enumerate() {
            for n in &named {
                if line.contains(n.as_str()) {
                    bad.push(format!("{}:{}: names {n}", rel.display(), ln + 1));
                }
            }
        }
        let dir = rel.parent().unwrap_or(Path::new(""));
        for (ln, p) in relative_paths(&text) {
            if climbs_out(dir, &p) && climbs_out(Path::new(""), &p) {
                bad.push(format!("{}:{ln}: {p} leaves the repository", rel.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "outside the repository:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_path_check_sees_what_it_must() {
    let found = relative_paths("x = \"../../kernels/a.cu\"; see `../up/b` and $X/../c ok/../d");
    let paths: Vec<&str> = found.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths, ["../../kernels/a.cu", "../up/b"]);
    assert!(!climbs_out(Path::new("src/gpu"), "../../kernels/a.cu"));
    assert!(climbs_out(Path::new("src/gpu"), "../../../x"));
    assert!(climbs_out(Path::new(""), "../up/b"));
}
