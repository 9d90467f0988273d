//! Generates the C header from `src/capi` with cbindgen.
//!
//! The header always goes to `$OUT_DIR/factz.h` (its path is exported as
//! `FACTZ_GENERATED_HEADER` for `tests/header_fresh.rs`); the committed
//! `include/factz.h` is rewritten only when `FACTZ_UPDATE_HEADER=1`, so a
//! normal build never dirties the tree.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/capi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=FACTZ_UPDATE_HEADER");
    // A versioned soname, as C libraries have (cargo-c's convention): programs
    // record libfactz.so.0 and keep working across compatible updates.
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfactz.so.0");
    }

    let crate_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("reading cbindgen.toml: {e}"));
    // Parse only src/capi (with_src follows its `mod` items): no `cargo metadata`
    // run, and no constant from elsewhere in the crate leaks into the header.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/capi/mod.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("generating the C header from src/capi: {e}"));

    let mut text = Vec::new();
    bindings.write(&mut text);
    let generated = out_dir.join("factz.h");
    write_if_changed(&generated, &text);
    println!(
        "cargo:rustc-env=FACTZ_GENERATED_HEADER={}",
        generated.display()
    );

    if env::var("FACTZ_UPDATE_HEADER").as_deref() == Ok("1") {
        let committed = crate_dir.join("include").join("factz.h");
        fs::create_dir_all(committed.parent().unwrap()).expect("creating include/");
        write_if_changed(&committed, &text);
    }
}

/// Writes `text` unless the file already holds it (keeps mtimes stable).
fn write_if_changed(path: &std::path::Path, text: &[u8]) {
    if fs::read(path).ok().as_deref() != Some(text) {
        fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}
