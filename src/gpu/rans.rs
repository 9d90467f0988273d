//! rANS decoding on an [`Exec`] (`kernels/rans.cu`): the header parsed and
//! checked on the host by the CPU's code (`codec::rans_gpu_ref`), every
//! block decoded on the executor, so `decode_into` gives
//! `codec::decode_u32(Coder::Rans, ..)`'s symbols (and its errors) without
//! the symbols crossing to the host. Encoding stays on the host.

use super::exec::{launch_items, Arg, Buf, Exec, View};
use crate::codec::rans_gpu_ref::{block_status, device_layout};
use crate::error::Result;

pub const SOURCE: &str = include_str!("../../kernels/rans.cu");
const THREADS: u32 = 256;
/// Threads per block of the decoder (one thread per rANS block and plane).
const DECODE_THREADS: u32 = 32;
/// Most blocks of the fill (grid-stride).
const FILL_BLOCKS: usize = 1024;

/// The rANS kernels on one executor.
pub struct RansKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> RansKernels<'_, E> {
    /// `codec::decode_u32(Coder::Rans, data, out.len())` into `out`.
    pub fn decode_into(&self, data: &[u8], out: View<u32>) -> Result<()> {
        self.decode_planes(data, out, 4)
    }

    /// `codec::decode_bytes(Coder::Rans, data, out.len())` into `out`, one
    /// byte per u32 (a stream of more than one plane is refused as the byte
    /// decoder refuses it).
    pub fn decode_bytes_into(&self, data: &[u8], out: View<u32>) -> Result<()> {
        self.decode_planes(data, out, 1)
    }

    fn decode_planes(&self, data: &[u8], out: View<u32>, max_planes: u32) -> Result<()> {
        let e = self.exec;
        let count = out.len();
        let layout = device_layout(data, count, max_planes)?;
        let n64 = count as u64;
        // SAFETY (every launch): the kernels' parameter lists in order; out
        // holds count symbols, the blocks' ranges lie in data (the host
        // parsed them from it), tables hold 4096 slots, status one per block.
        unsafe {
            launch_items(
                e,
                "factz_r_fill",
                count.min(FILL_BLOCKS * THREADS as usize),
                THREADS,
                &[out.arg(), Arg::U64(n64), Arg::U32(layout.base)],
            )?
        };
        if !layout.rans.is_empty() {
            let stream = Buf::from(e, data)?;
            for plane in &layout.rans {
                let n_blocks = plane.blocks.len();
                let blocks: Vec<u64> = plane.blocks.iter().flatten().copied().collect();
                let blocks = Buf::from(e, &blocks)?;
                let slots = Buf::from(e, &plane.slots)?;
                let syms = Buf::from(e, &plane.syms)?;
                // A value no block ends with, so a block the kernel skipped shows.
                let status = Buf::from(e, &vec![u32::MAX; n_blocks])?;
                unsafe {
                    launch_items(
                        e,
                        "factz_r_decode",
                        n_blocks,
                        DECODE_THREADS,
                        &[
                            stream.arg(),
                            blocks.arg(),
                            Arg::U64(n_blocks as u64),
                            Arg::U64(n64),
                            Arg::U32(layout.block_log2),
                            slots.arg(),
                            syms.arg(),
                            Arg::U32(plane.shift),
                            out.arg(),
                            status.arg(),
                        ],
                    )?
                };
                for s in status.read(e, 0..n_blocks)? {
                    block_status(s)?;
                }
            }
        }
        for (shift, entries) in &layout.sparse {
            let flat: Vec<u64> = entries
                .iter()
                .flat_map(|&(i, b)| [i, u64::from(b)])
                .collect();
            let flat = Buf::from(e, &flat)?;
            unsafe {
                launch_items(
                    e,
                    "factz_r_sparse",
                    entries.len(),
                    THREADS,
                    &[
                        flat.arg(),
                        Arg::U64(entries.len() as u64),
                        Arg::U32(*shift),
                        out.arg(),
                    ],
                )?
            };
        }
        Ok(())
    }

    /// `codec::decode_u32(Coder::Rans, data, count)` through [`Self::decode_into`].
    pub fn decode(&self, data: &[u8], count: usize) -> Result<Vec<u32>> {
        let out = Buf::<E, u32>::zeros(self.exec, count)?;
        self.decode_into(data, out.view())?;
        out.read(self.exec, 0..count)
    }
}
