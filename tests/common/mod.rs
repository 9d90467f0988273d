//! Shared test support: the independent critical-point and FoF oracles and the test data.
//! Neither module uses the `factz` crate.
#![allow(dead_code)]

pub mod container;
pub mod corrupt;
pub mod e2e;
pub mod fields;
pub mod oracle;
pub mod particles;
