//! A field's [`Parts`] with the arrays in executor memory: what the GPU
//! encoders leave and the GPU decoders read, so the field pipeline
//! (`gpu::field`) moves only the coded sections between host and device.

use super::exec::{Buf, Exec};
use super::huffman::HuffmanKernels;
use crate::codec::planes::{pack_bits, unpack_bits};
use crate::error::Result;
use crate::field::parts::Parts;

/// [`Parts`] on an executor.
pub struct DevParts<E: Exec> {
    /// The exact-vertex bitmap as the stream stores it (`planes::pack_bits`:
    /// grid order, LSB first).
    pub mask: Buf<E, u8>,
    /// Vertices stored exactly (set bits of the mask).
    pub n_exact: usize,
    /// As in [`Parts`].
    pub raw: Buf<E, u32>,
    pub ids: Buf<E, u32>,
    pub codes: Buf<E, u32>,
}

impl<E: Exec> DevParts<E> {
    /// The Parts of an n-vertex field on the host.
    pub fn read(&self, e: &E, n: usize) -> Result<Parts> {
        Ok(Parts {
            exact: unpack_bits(&self.mask.read(e, 0..n.div_ceil(8))?, n),
            raw: self.raw.read(e, 0..self.raw.len())?,
            ids: self.ids.read(e, 0..self.ids.len())?,
            codes: self.codes.read(e, 0..self.codes.len())?,
        })
    }

    /// The largest bound id (0 for none), for the decoders' range check.
    pub fn max_id(&self, e: &E) -> Result<u32> {
        HuffmanKernels { exec: e }.max(self.ids.view())
    }

    /// Host Parts copied to the executor.
    pub fn upload(e: &E, parts: &Parts) -> Result<DevParts<E>> {
        Ok(DevParts {
            mask: Buf::from(e, &pack_bits(&parts.exact))?,
            n_exact: parts.exact.iter().filter(|&&x| x).count(),
            raw: Buf::from(e, &parts.raw)?,
            ids: Buf::from(e, &parts.ids)?,
            codes: Buf::from(e, &parts.codes)?,
        })
    }
}
