//! Shared test support: the independent critical-point oracle and the test fields.
//! Neither module uses the `factz` crate.
#![allow(dead_code)]

pub mod fields;
pub mod oracle;
