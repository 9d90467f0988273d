//! How the CLI words numbers and bounds (the field and particle metrics
//! themselves are the library's: `field::metrics`, `particles::metrics`).

/// Where the absolute bound of a `verify` report came from, for its "bound:" line.
pub fn bound_origin(flag: Option<factz::field::Bound>) -> String {
    match flag {
        Some(factz::field::Bound::Abs(_)) => "absolute, given".into(),
        Some(factz::field::Bound::Rel(r)) => {
            format!("absolute, from --rel {r:e} of the value range")
        }
        None => "absolute, from the stream".into(),
    }
}

/// A short human form of a number: 3 significant digits.
pub fn short(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x.is_nan() {
        return "nan".into();
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e5).contains(&a) {
        let digits = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.digits$}")
    } else {
        format!("{x:.2e}")
    }
}
