//! A segment's zero-runs form (`codec::zero_runs`) on an [`Exec`]
//! (`kernels/zero_runs.cu`): the symbols split into run tokens, raw bits
//! and values, and placed back, on the executor. Only counts, totals and
//! the raw bits (which the stream stores) cross to the host. `gpu::field`
//! codes and decodes the tokens and values with the stream's coder, as the
//! CPU does.

use super::exec::{Buf, Exec, View};
use super::launch::kernels;
use super::scan;
use crate::codec::zero_runs;
use crate::error::{Error, Result};

pub const SOURCE: &str = include_str!("../../kernels/zero_runs.cu");
const THREADS: u32 = 256;

kernels! {
    Z_FLAGS = factz_z_flags(symbols: View<u32>, n: u64, flags: View<u32>);
    Z_SPLIT = factz_z_split(
        symbols: View<u32>, n: u64, slot: View<u64>, values: View<u32>, zeros: View<u32>,
    );
    Z_RUNS = factz_z_runs(zeros: View<u32>, m: u64, n: u64, runs: View<u32>);
    Z_TOKENS = factz_z_tokens(runs: View<u32>, count: u64, tokens: View<u32>, widths: View<u32>);
    Z_PACK = factz_z_pack(
        runs: View<u32>, widths: View<u32>, offsets: View<u64>, count: u64, words: View<u32>,
    );
    Z_WIDTHS = factz_z_widths(tokens: View<u32>, count: u64, widths: View<u32>, bad: View<u32>);
    Z_UNPACK = factz_z_unpack(
        tokens: View<u32>, widths: View<u32>, offsets: View<u64>, words: View<u32>, count: u64,
        runs: View<u32>,
    );
    Z_PLACE = factz_z_place(values: View<u32>, sums: View<u64>, m: u64, out: View<u32>);
}

/// A segment split for the zero-runs form: its m + 1 run tokens, their raw
/// bits (as `codec::zero_runs::tokens` packs them) and its m values.
pub struct Split<E: Exec> {
    pub tokens: Buf<E, u32>,
    pub raw: Vec<u8>,
    pub values: Buf<E, u32>,
}

/// The zero-runs kernels on one executor.
pub struct ZeroRunKernels<'e, E: Exec> {
    pub exec: &'e E,
}

impl<E: Exec> ZeroRunKernels<'_, E> {
    /// `codec::zero_runs::split` then `tokens` of `symbols`, where
    /// `worth_trying` says to try the form (None elsewhere).
    pub fn split(&self, symbols: View<u32>) -> Result<Option<Split<E>>> {
        let e = self.exec;
        let n = symbols.len();
        if n == 0 {
            return Ok(None);
        }
        let n64 = n as u64;
        let flags = Buf::<E, u32>::zeros(e, n)?;
        // SAFETY: flags holds n.
        unsafe { Z_FLAGS.launch_items(e, n, THREADS, (symbols, n64, flags.view()))? };
        let (slot, m) = scan::exclusive(e, flags.view(), n)?;
        let m = m as usize;
        if !zero_runs::worth_trying(n, m) {
            return Ok(None);
        }
        let values = Buf::<E, u32>::zeros(e, m)?;
        let zeros = Buf::<E, u32>::zeros(e, m)?;
        let runs = Buf::<E, u32>::zeros(e, m + 1)?;
        // SAFETY: the nonzero symbols' slots are below m, the scan's total;
        // runs holds m + 1 (worth_trying: n fits a u32, so do the counts).
        unsafe {
            Z_SPLIT.launch_items(
                e,
                n,
                THREADS,
                (symbols, n64, slot.view(), values.view(), zeros.view()),
            )?;
            Z_RUNS.launch_items(
                e,
                m + 1,
                THREADS,
                (zeros.view(), m as u64, n64, runs.view()),
            )?;
        }
        let (tokens, raw) = self.tokens(runs.view())?;
        Ok(Some(Split {
            tokens,
            raw,
            values,
        }))
    }

    /// `codec::zero_runs::tokens`: the runs' tokens, and their raw bits
    /// packed on the executor.
    fn tokens(&self, runs: View<u32>) -> Result<(Buf<E, u32>, Vec<u8>)> {
        let e = self.exec;
        let count = runs.len();
        let c64 = count as u64;
        let tokens = Buf::<E, u32>::zeros(e, count)?;
        let widths = Buf::<E, u32>::zeros(e, count)?;
        // SAFETY: tokens and widths hold count.
        unsafe {
            Z_TOKENS.launch_items(e, count, THREADS, (runs, c64, tokens.view(), widths.view()))?
        };
        let (offsets, bits) = scan::exclusive(e, widths.view(), count)?;
        let words = Buf::<E, u32>::zeros(e, bits.div_ceil(32) as usize + 1)?;
        // SAFETY: a run's bits end by `bits`, within the words.
        unsafe {
            Z_PACK.launch_items(
                e,
                count,
                THREADS,
                (runs, widths.view(), offsets.view(), c64, words.view()),
            )?
        };
        let mut raw: Vec<u8> = words
            .read(e, 0..words.len())?
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        raw.truncate(bits.div_ceil(8) as usize);
        Ok((tokens, raw))
    }

    /// `codec::zero_runs::untokens`: the runs from their tokens and raw
    /// bits, with its checks.
    pub fn runs(&self, tokens: View<u32>, raw: &[u8]) -> Result<Buf<E, u32>> {
        let e = self.exec;
        let count = tokens.len();
        let c64 = count as u64;
        let widths = Buf::<E, u32>::zeros(e, count)?;
        let bad = Buf::<E, u32>::zeros(e, 1)?;
        // SAFETY: widths holds count, bad one.
        unsafe {
            Z_WIDTHS.launch_items(e, count, THREADS, (tokens, c64, widths.view(), bad.view()))?
        };
        if bad.read(e, 0..1)?[0] != 0 {
            return Err(zero_runs::bad_token());
        }
        let (offsets, bits) = scan::exclusive(e, widths.view(), count)?;
        zero_runs::raw_len_check(bits, raw.len())?;
        // The raw bytes as words, and one more: a run's bits may reach into
        // the word after the last bit's.
        let mut words: Vec<u32> = raw
            .chunks(4)
            .map(|c| {
                let mut w = [0u8; 4];
                w[..c.len()].copy_from_slice(c);
                u32::from_le_bytes(w)
            })
            .collect();
        words.push(0);
        let words = Buf::from(e, &words)?;
        let runs = Buf::<E, u32>::zeros(e, count)?;
        // SAFETY: every run's bits lie below `bits` <= 8 raw.len() (checked),
        // within the words; runs holds count.
        unsafe {
            Z_UNPACK.launch_items(
                e,
                count,
                THREADS,
                (
                    tokens,
                    widths.view(),
                    offsets.view(),
                    words.view(),
                    c64,
                    runs.view(),
                ),
            )?
        };
        Ok(runs)
    }

    /// `codec::zero_runs::place`: zeros in `out`, then each value after its
    /// run, once the runs are checked to add up to `out` with the values.
    pub fn place(&self, runs: View<u32>, values: View<u32>, out: View<u32>) -> Result<()> {
        let e = self.exec;
        let m = values.len();
        if runs.len() != m + 1 {
            return Err(Error::internal(format!(
                "zero runs: {} runs for {m} values",
                runs.len()
            )));
        }
        let (sums, total) = scan::exclusive(e, runs, m + 1)?;
        zero_runs::check_total(total, m, out.len())?;
        super::rans::fill(e, out, 0)?;
        // SAFETY: nonzero j lands at sums[j + 1] + j, strictly increasing in
        // j and at most total + m - 1 = out.len() - 1 (checked).
        unsafe { Z_PLACE.launch_items(e, m, THREADS, (values, sums.view(), m as u64, out)) }
    }
}
