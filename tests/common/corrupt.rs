//! Corrupted copies of a coded stream of `n` symbols, for the decoders'
//! bad-input tests: truncation, an extra byte, wrong counts, and bit flips
//! (a third in the first 64 bytes, where the headers are, the rest in the
//! stream's second half).

use super::fields::Rng;

/// (what, bytes, count) cases from `good`, `flips` of them bit flips.
pub fn stream_cases(
    good: &[u8],
    n: usize,
    flips: usize,
    r: &mut Rng,
) -> Vec<(String, Vec<u8>, usize)> {
    let mut cases: Vec<(String, Vec<u8>, usize)> = vec![
        ("truncated".into(), good[..good.len() - 1].to_vec(), n),
        ("one byte more".into(), [good, &[0]].concat(), n),
        ("count - 1".into(), good.to_vec(), n - 1),
        ("count + 1".into(), good.to_vec(), n + 1),
        ("count + 2^16".into(), good.to_vec(), n + 65_536),
    ];
    for k in 0..flips {
        let mut bad = good.to_vec();
        let at = if k < flips / 3 {
            r.below(good.len().min(64))
        } else {
            good.len() - 1 - r.below(good.len() / 2)
        };
        bad[at] ^= 1 << r.below(8);
        cases.push((format!("bit flip at byte {at}"), bad, n));
    }
    cases
}
