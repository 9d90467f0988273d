//! Shared test support: the independent critical-point and FoF oracles and the test data.
//! The oracles use nothing of the `factz` crate; the test data comes from its
//! generators (`factz::synth`).
#![allow(dead_code)]

pub mod container;
pub mod corrupt;
pub mod e2e;
pub mod fields;
pub mod oracle;
pub mod particles;
