//! The hand-written declarations against the installed headers, by a C compiler.
//!
//! From the Rust declarations themselves this writes a C file of `_Static_assert`s
//! that `cc` must accept with `adios2_c.h` included: each constant equals the C
//! enumerator of the same name, each enum type has the size of its Rust alias, and
//! each function has exactly the type the Rust signature spells in C. The Rust
//! side of each signature is checked by rustc (the function must coerce to that
//! pointer type). The enumerator lists of the header's enums are parsed, so an
//! enumerator this crate does not declare is caught too.

use adios2_sys::*;
use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each function: rustc checks the declaration has this Rust type; the C check
/// gets the same tokens spelled in C.
macro_rules! signatures {
    ($($name:ident($($arg:ty),*) -> $ret:ty;)*) => {
        vec![$({
            let _: unsafe extern "C" fn($($arg),*) -> $ret = $name;
            (stringify!($name), stringify!($ret), vec![$(stringify!($arg)),*])
        }),*]
    };
}

fn functions() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    signatures! {
        adios2_init_serial() -> *mut adios2_adios;
        adios2_declare_io(*mut adios2_adios, *const c_char) -> *mut adios2_io;
        adios2_finalize(*mut adios2_adios) -> adios2_error;
        adios2_set_engine(*mut adios2_io, *const c_char) -> adios2_error;
        adios2_open(*mut adios2_io, *const c_char, adios2_mode) -> *mut adios2_engine;
        adios2_inquire_variable(*mut adios2_io, *const c_char) -> *mut adios2_variable;
        adios2_available_variables(*mut adios2_io, *mut usize) -> *mut *mut c_char;
        adios2_begin_step(*mut adios2_engine, adios2_step_mode, f32, *mut adios2_step_status)
            -> adios2_error;
        adios2_end_step(*mut adios2_engine) -> adios2_error;
        adios2_get(*mut adios2_engine, *mut adios2_variable, *mut c_void, adios2_mode)
            -> adios2_error;
        adios2_close(*mut adios2_engine) -> adios2_error;
        adios2_set_selection(*mut adios2_variable, usize, *const usize, *const usize)
            -> adios2_error;
        adios2_set_step_selection(*mut adios2_variable, usize, usize) -> adios2_error;
        adios2_variable_type(*mut adios2_type, *const adios2_variable) -> adios2_error;
        adios2_variable_shapeid(*mut adios2_shapeid, *const adios2_variable) -> adios2_error;
        adios2_variable_ndims(*mut usize, *const adios2_variable) -> adios2_error;
        adios2_variable_shape(*mut usize, *const adios2_variable) -> adios2_error;
        adios2_variable_steps(*mut usize, *const adios2_variable) -> adios2_error;
        adios2_selection_size(*mut usize, *const adios2_variable) -> adios2_error;
    }
}

/// Each enum type with its size in Rust and its constants.
macro_rules! enums {
    ($($ty:ident: [$($c:ident),* $(,)?])*) => {
        vec![$((
            stringify!($ty),
            std::mem::size_of::<$ty>(),
            vec![$((stringify!($c), i64::from($c))),*],
        )),*]
    };
}

type EnumDecl = (&'static str, usize, Vec<(&'static str, i64)>);

fn enums() -> Vec<EnumDecl> {
    enums! {
        adios2_error: [
            adios2_error_none, adios2_error_invalid_argument, adios2_error_system_error,
            adios2_error_runtime_error, adios2_error_exception,
        ]
        adios2_type: [
            adios2_type_unknown, adios2_type_string, adios2_type_float, adios2_type_double,
            adios2_type_float_complex, adios2_type_double_complex, adios2_type_int8_t,
            adios2_type_int16_t, adios2_type_int32_t, adios2_type_int64_t, adios2_type_uint8_t,
            adios2_type_uint16_t, adios2_type_uint32_t, adios2_type_uint64_t,
            adios2_type_long_double,
        ]
        adios2_mode: [
            adios2_mode_undefined, adios2_mode_write, adios2_mode_read, adios2_mode_append,
            adios2_mode_readRandomAccess, adios2_mode_deferred, adios2_mode_sync,
        ]
        adios2_step_mode: [adios2_step_mode_append, adios2_step_mode_update, adios2_step_mode_read]
        adios2_step_status: [
            adios2_step_status_other_error, adios2_step_status_ok, adios2_step_status_not_ready,
            adios2_step_status_end_of_stream,
        ]
        adios2_shapeid: [
            adios2_shapeid_unknown, adios2_shapeid_global_value, adios2_shapeid_global_array,
            adios2_shapeid_joined_array, adios2_shapeid_local_value, adios2_shapeid_local_array,
        ]
    }
}

/// A Rust type, as `stringify!` writes it, in C (postfix `const` so that pointers
/// to pointers read the same way).
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(inner) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(inner));
    }
    if let Some(inner) = t.strip_prefix("*const ") {
        return format!("{} const *", c_type(inner));
    }
    match t {
        "usize" => "size_t".into(),
        "f32" => "float".into(),
        "c_char" => "char".into(),
        "c_void" => "void".into(),
        // The handle and enum types keep their C names.
        name if name.starts_with("adios2_") => name.into(),
        other => panic!("no C spelling for the Rust type {other:?}"),
    }
}

fn c_checks() -> String {
    let mut c = String::from("#include <adios2_c.h>\n");
    c += &format!(
        "_Static_assert(sizeof(size_t) == {}, \"size_t is usize\");\n",
        std::mem::size_of::<usize>()
    );
    for (ty, size, constants) in enums() {
        c += &format!("_Static_assert(sizeof({ty}) == {size}, \"sizeof({ty})\");\n");
        for (name, value) in constants {
            c += &format!("_Static_assert({name} == {value}, \"{name} == {value}\");\n");
        }
    }
    for (name, ret, args) in functions() {
        let args: Vec<String> = args.iter().map(|a| c_type(a)).collect();
        let args = if args.is_empty() {
            "void".to_string()
        } else {
            args.join(", ")
        };
        c += &format!(
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {} (*)({args})), \
             \"signature of {name}\");\n",
            c_type(ret)
        );
    }
    c
}

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adios2-sys-declarations");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `cc -fsyntax-only` on `source`: Ok, or Err with the compiler's messages.
fn compile(source: &str, name: &str) -> Result<(), String> {
    let include = Path::new(INCLUDE_DIR);
    assert!(
        include.join("adios2_c.h").is_file(),
        "no adios2_c.h in {INCLUDE_DIR}"
    );
    let file = scratch().join(name);
    std::fs::write(&file, source).unwrap();
    let out = Command::new("cc")
        .args(["-std=gnu11", "-fsyntax-only", "-Werror", "-I"])
        .arg(include)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run cc (build-essential): {e}"));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn constants_and_signatures_match_the_installed_headers() {
    let source = c_checks();
    if let Err(e) = compile(&source, "checks.c") {
        panic!("the declarations differ from {INCLUDE_DIR}:\n{e}\n--- checks:\n{source}");
    }
}

#[test]
fn the_c_check_catches_a_wrong_value_or_signature() {
    let good = c_checks();
    let wrong_value = good.replace("adios2_mode_sync == 5", "adios2_mode_sync == 4");
    let wrong_const = good.replace(
        "adios2_variable_shape), adios2_error (*)(size_t *, adios2_variable const *)",
        "adios2_variable_shape), adios2_error (*)(size_t *, adios2_variable *)",
    );
    let wrong_arity = good.replace(
        "adios2_set_step_selection), adios2_error (*)(adios2_variable *, size_t, size_t)",
        "adios2_set_step_selection), adios2_error (*)(adios2_variable *, size_t)",
    );
    for (k, (what, bad)) in [
        ("value", wrong_value),
        ("const", wrong_const),
        ("arity", wrong_arity),
    ]
    .into_iter()
    .enumerate()
    {
        assert_ne!(bad, good, "the {what} mutation did not apply");
        let err = compile(&bad, &format!("mutant{k}.c"))
            .expect_err(&format!("cc accepted a wrong {what}"));
        assert!(err.contains("static assertion failed"), "{what}: {err}");
    }
}

/// The enumerators of `typedef enum { ... } NAME;` in `adios2_c_types.h`.
fn header_enums() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(Path::new(INCLUDE_DIR).join("adios2/c/adios2_c_types.h"))
        .expect("adios2/c/adios2_c_types.h");
    // Comments out: they hold commas and `=`.
    let mut code = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("/*") {
        code += &rest[..at];
        rest = rest[at..].split_once("*/").map_or("", |(_, r)| r);
    }
    code += rest;
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for block in code.split("typedef enum").skip(1) {
        let (Some(open), Some(close)) = (block.find('{'), block.find('}')) else {
            continue;
        };
        let name = block[close + 1..].split(';').next().unwrap().trim();
        let enumerators = block[open + 1..close]
            .split(',')
            .map(|e| e.split('=').next().unwrap().trim().to_string())
            .filter(|e| !e.is_empty() && !e.starts_with('#'))
            .collect();
        found.push((name.to_string(), enumerators));
    }
    found
}

#[test]
fn every_enumerator_of_the_declared_enums_is_declared() {
    let header = header_enums();
    assert!(
        header.iter().any(|(n, _)| n == "adios2_mode"),
        "parsed no enums from the header: {header:?}"
    );
    for (ty, _, constants) in enums() {
        let (_, in_header) = header
            .iter()
            .find(|(n, _)| n == ty)
            .unwrap_or_else(|| panic!("{ty} is not an enum of adios2_c_types.h"));
        let mut ours: Vec<&str> = constants.iter().map(|(n, _)| *n).collect();
        let mut theirs: Vec<&str> = in_header.iter().map(String::as_str).collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "enumerators of {ty}");
    }
}
