//! The host side of the GPU coders: the CPU's own table builders, header
//! writers and readers around what the kernels count, pack and decode, so a
//! GPU stream is the CPU's byte for byte (`gpu::huffman`, `gpu::rans`), and
//! the constants and block statuses the kernels share with them (generated
//! into the kernels' prelude, `factz::kernels`). Production code for the
//! CUDA backend, public for its tests.
#![doc(hidden)]

pub mod huffman;

/// The rANS coder's side (`kernels/rans.cu`).
pub mod rans {
    pub use crate::codec::rans::{
        block_status, device_assemble, device_encoding, device_layout, encode_layout, encode_v1,
        sparse_body, status, DeviceEncoding, DeviceLayout, DevicePlane, FEW_LANES, LANES,
        PROB_BITS, RANS_L,
    };
}
