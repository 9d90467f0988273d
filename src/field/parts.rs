//! What a field compressor produces before entropy coding: the modes differ in how
//! they fill these, the stream layer codes them the same way.

/// The decomposed form of a compressed field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parts {
    /// Per vertex (grid order): stored exactly.
    pub exact: Vec<bool>,
    /// Bit patterns of the exact vertices, (u, v) per vertex, in the mode's processing order.
    pub raw: Vec<u32>,
    /// Error-bound ids (mode B: per tile, u then v; mode S: per coded vertex).
    pub ids: Vec<u32>,
    /// Zig-zag quantization codes, (u, v) per coded vertex, in processing order.
    pub codes: Vec<u32>,
}
