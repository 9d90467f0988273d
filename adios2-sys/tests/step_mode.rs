//! The raw declarations used the streaming way (`adios2_mode_read`, begin_step /
//! end_step, deferred gets): they see the same values as `adios2_sys::read`. A test
//! program of its own: it calls ADIOS2 outside the reader's lock.

mod common;

use adios2_sys::*;
use common::{expected, sample};
use std::ffi::CString;

#[test]
fn step_by_step_read_matches_the_random_access_reader() {
    let file = sample("step-mode");
    let path = CString::new(file.to_str().unwrap()).unwrap();
    let mut seen = Vec::new();
    // SAFETY: each handle is checked before use and released once; buffers are
    // sized from the shape ADIOS2 reports.
    unsafe {
        let adios = adios2_init_serial();
        assert!(!adios.is_null());
        let io = adios2_declare_io(adios, c"stream".as_ptr());
        assert!(!io.is_null());
        assert_eq!(adios2_set_engine(io, c"BP5".as_ptr()), adios2_error_none);
        let engine = adios2_open(io, path.as_ptr(), adios2_mode_read);
        assert!(!engine.is_null());
        loop {
            let mut status = adios2_step_status_other_error;
            let err = adios2_begin_step(engine, adios2_step_mode_read, -1.0, &mut status);
            assert_eq!(err, adios2_error_none);
            if status == adios2_step_status_end_of_stream {
                break;
            }
            assert_eq!(status, adios2_step_status_ok);
            let var = adios2_inquire_variable(io, c"field".as_ptr());
            assert!(!var.is_null());
            let mut ndims = 0;
            assert_eq!(adios2_variable_ndims(&mut ndims, var), adios2_error_none);
            let mut shape = vec![0; ndims];
            let err = adios2_variable_shape(shape.as_mut_ptr(), var);
            assert_eq!(err, adios2_error_none);
            let start = vec![0; ndims];
            let err = adios2_set_selection(var, ndims, start.as_ptr(), shape.as_ptr());
            assert_eq!(err, adios2_error_none);
            let mut data = vec![0f32; shape.iter().product()];
            let err = adios2_get(engine, var, data.as_mut_ptr().cast(), adios2_mode_deferred);
            assert_eq!(err, adios2_error_none);
            // end_step performs the deferred get.
            assert_eq!(adios2_end_step(engine), adios2_error_none);
            seen.push((shape, data));
        }
        assert_eq!(adios2_close(engine), adios2_error_none);
        assert_eq!(adios2_finalize(adios), adios2_error_none);
    }
    assert_eq!(seen.len(), 2, "steps seen");
    for (step, (shape, data)) in seen.into_iter().enumerate() {
        assert_eq!(shape, [3, 4, 5]);
        assert_eq!(data, expected(step), "step {step}");
        let (_, again) = adios2_sys::read::read_f32(file, "field", step).unwrap();
        assert_eq!(data, again, "step {step}");
    }
}
