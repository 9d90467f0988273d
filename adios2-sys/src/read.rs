//! A small safe reader: the variables of a BP5 file, and one float32 global array
//! whole at one step (BP5 engine, random-access read mode).
//!
//! Every failure is an `Err`, never a panic. ADIOS2's C API reports a failure as an
//! `adios2_error` code or a NULL handle only: the message of the exception behind
//! it is printed by ADIOS2 on stderr and cannot be retrieved, so the errors here
//! say what was being done and the code's meaning, and point to stderr.

use crate::*;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::{Mutex, MutexGuard};

/// ADIOS2 does not promise that separate ADIOS objects may be used from several
/// threads at once (Rust runs tests in parallel threads): one use at a time.
static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    // A panic elsewhere while holding the lock leaves no ADIOS2 state behind.
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The meaning of a non-zero `adios2_error`.
fn error_name(code: adios2_error) -> String {
    match code {
        adios2_error_invalid_argument => "invalid argument".into(),
        adios2_error_system_error => "system error".into(),
        adios2_error_runtime_error => "runtime error".into(),
        adios2_error_exception => "exception".into(),
        other => format!("error code {other}"),
    }
}

fn type_name(t: adios2_type) -> String {
    let name = match t {
        adios2_type_string => "string",
        adios2_type_float => "float32",
        adios2_type_double => "float64",
        adios2_type_float_complex => "complex64",
        adios2_type_double_complex => "complex128",
        adios2_type_int8_t => "int8",
        adios2_type_int16_t => "int16",
        adios2_type_int32_t => "int32",
        adios2_type_int64_t => "int64",
        adios2_type_uint8_t => "uint8",
        adios2_type_uint16_t => "uint16",
        adios2_type_uint32_t => "uint32",
        adios2_type_uint64_t => "uint64",
        adios2_type_long_double => "long double",
        other => return format!("type {other}"),
    };
    name.into()
}

fn c_string(s: &[u8], what: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte"))
}

/// An open file; closed and its ADIOS object finalized on drop.
struct File {
    adios: *mut adios2_adios,
    io: *mut adios2_io,
    engine: *mut adios2_engine,
    path: String,
}

impl File {
    /// Call with the lock held, for the whole life of the `File`.
    fn open(path: &Path) -> Result<File, String> {
        let shown = path.display().to_string();
        // ADIOS2 would only print the reason on stderr.
        if !path.exists() {
            return Err(format!("{shown}: no such file or directory"));
        }
        let c_path = c_string(path.as_os_str().as_bytes(), "the path")?;
        // SAFETY: no arguments; the result is checked before use.
        let adios = unsafe { adios2_init_serial() };
        if adios.is_null() {
            return Err("adios2_init_serial failed (ADIOS2's message is on stderr)".into());
        }
        // From here `drop` finalizes the ADIOS object on every return.
        let mut file = File {
            adios,
            io: ptr::null_mut(),
            engine: ptr::null_mut(),
            path: shown,
        };
        // SAFETY: a live ADIOS object and a NUL-terminated name.
        file.io = unsafe { adios2_declare_io(adios, c"factz-adios2-sys-read".as_ptr()) };
        if file.io.is_null() {
            return Err(file.failed("adios2_declare_io", None));
        }
        // SAFETY: a live io and a NUL-terminated engine name.
        file.check("adios2_set_engine(BP5)", unsafe {
            adios2_set_engine(file.io, c"BP5".as_ptr())
        })?;
        // SAFETY: a live io and a NUL-terminated path.
        file.engine =
            unsafe { adios2_open(file.io, c_path.as_ptr(), adios2_mode_readRandomAccess) };
        if file.engine.is_null() {
            return Err(file.failed("adios2_open (not a BP5 file?)", None));
        }
        Ok(file)
    }

    fn failed(&self, what: &str, code: Option<adios2_error>) -> String {
        let code = code
            .map(|c| format!(": {}", error_name(c)))
            .unwrap_or_default();
        format!(
            "{}: {what} failed{code} (ADIOS2's message is on stderr)",
            self.path
        )
    }

    fn check(&self, what: &str, code: adios2_error) -> Result<(), String> {
        if code == adios2_error_none {
            Ok(())
        } else {
            Err(self.failed(what, Some(code)))
        }
    }

    fn variable(&self, name: &str) -> Result<*mut adios2_variable, String> {
        let c_name = c_string(name.as_bytes(), "the variable name")?;
        // SAFETY: a live io and a NUL-terminated name.
        let var = unsafe { adios2_inquire_variable(self.io, c_name.as_ptr()) };
        if var.is_null() {
            Err(format!("{}: no variable {name:?}", self.path))
        } else {
            Ok(var)
        }
    }

    /// The variable's global shape at the current step selection.
    fn shape(&self, var: *mut adios2_variable) -> Result<Vec<usize>, String> {
        let mut ndims = 0usize;
        // SAFETY: a live variable of this file's io; `ndims` is writable.
        self.check("adios2_variable_ndims", unsafe {
            adios2_variable_ndims(&mut ndims, var)
        })?;
        let mut shape = vec![0usize; ndims];
        // SAFETY: `shape` holds the `ndims` elements the function writes.
        self.check("adios2_variable_shape", unsafe {
            adios2_variable_shape(shape.as_mut_ptr(), var)
        })?;
        Ok(shape)
    }

    fn steps(&self, var: *mut adios2_variable) -> Result<usize, String> {
        let mut steps = 0usize;
        // SAFETY: a live variable; `steps` is writable.
        self.check("adios2_variable_steps", unsafe {
            adios2_variable_steps(&mut steps, var)
        })?;
        Ok(steps)
    }

    fn names(&self) -> Result<Vec<String>, String> {
        let mut n = 0usize;
        // SAFETY: a live io; `n` is writable.
        let list = unsafe { adios2_available_variables(self.io, &mut n) };
        if list.is_null() {
            // malloc(0) may return NULL: an empty file is not a failure.
            return if n == 0 {
                Ok(Vec::new())
            } else {
                Err(self.failed("adios2_available_variables", None))
            };
        }
        let mut names = Vec::with_capacity(n);
        for k in 0..n {
            // SAFETY: `list` holds `n` malloc'ed NUL-terminated strings, which this
            // loop frees once each, and then the array itself.
            unsafe {
                let s = *list.add(k);
                names.push(CStr::from_ptr(s).to_string_lossy().into_owned());
                free(s.cast());
            }
        }
        // SAFETY: the array from adios2_available_variables, freed once.
        unsafe { free(list.cast()) };
        Ok(names)
    }

    fn read_f32(&self, name: &str, step: usize) -> Result<(Vec<usize>, Vec<f32>), String> {
        let var = self.variable(name)?;
        let mut ty = adios2_type_unknown;
        // SAFETY: a live variable; `ty` is writable.
        self.check("adios2_variable_type", unsafe {
            adios2_variable_type(&mut ty, var)
        })?;
        if ty != adios2_type_float {
            return Err(format!(
                "{}: {name:?} is {}, not float32",
                self.path,
                type_name(ty)
            ));
        }
        let mut shape_id = adios2_shapeid_unknown;
        // SAFETY: a live variable; `shape_id` is writable.
        self.check("adios2_variable_shapeid", unsafe {
            adios2_variable_shapeid(&mut shape_id, var)
        })?;
        if shape_id != adios2_shapeid_global_array {
            return Err(format!(
                "{}: {name:?} is not a global array (adios2_shapeid {shape_id})",
                self.path
            ));
        }
        let steps = self.steps(var)?;
        if step >= steps {
            return Err(format!(
                "{}: {name:?} has {steps} step(s), no step {step}",
                self.path
            ));
        }
        // SAFETY: a live variable.
        self.check("adios2_set_step_selection", unsafe {
            adios2_set_step_selection(var, step, 1)
        })?;
        // After the step selection: the shape may change from step to step.
        let shape = self.shape(var)?;
        let len = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("{}: {name:?} has shape {shape:?}", self.path))?;
        let start = vec![0usize; shape.len()];
        // SAFETY: `start` and `shape` hold `shape.len()` elements each.
        self.check("adios2_set_selection", unsafe {
            adios2_set_selection(var, shape.len(), start.as_ptr(), shape.as_ptr())
        })?;
        let mut want = 0usize;
        // SAFETY: a live variable; `want` is writable.
        self.check("adios2_selection_size", unsafe {
            adios2_selection_size(&mut want, var)
        })?;
        if want != len {
            return Err(format!(
                "{}: {name:?}: ADIOS2 wants {want} elements for shape {shape:?}",
                self.path
            ));
        }
        let mut data = vec![0f32; len];
        if len > 0 {
            // SAFETY: `data` holds the `len` float32 elements the selection needs, and
            // a sync get has written them when it returns.
            self.check("adios2_get", unsafe {
                adios2_get(self.engine, var, data.as_mut_ptr().cast(), adios2_mode_sync)
            })?;
        }
        Ok((shape, data))
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: handles from `open`, each released once; finalize frees the io.
        unsafe {
            if !self.engine.is_null() {
                adios2_close(self.engine);
            }
            adios2_finalize(self.adios);
        }
    }
}

extern "C" {
    /// The C library's `free`, for what `adios2_available_variables` `malloc`s.
    fn free(p: *mut std::ffi::c_void);
}

/// The whole float32 global array `var` at `step` (0 = the variable's first step)
/// of the BP5 file `path`: its shape and its values in row-major order.
pub fn read_f32(path: &Path, var: &str, step: usize) -> Result<(Vec<usize>, Vec<f32>), String> {
    let _guard = lock();
    File::open(path)?.read_f32(var, step)
}

/// Every variable of the BP5 file `path`, sorted by name: its name, its shape at
/// its first step (empty for a single value) and its number of steps.
pub fn variables(path: &Path) -> Result<Vec<(String, Vec<usize>, usize)>, String> {
    let _guard = lock();
    let file = File::open(path)?;
    let mut out = Vec::new();
    for name in file.names()? {
        let var = file.variable(&name)?;
        out.push((name, file.shape(var)?, file.steps(var)?));
    }
    out.sort();
    Ok(out)
}
