use factz::codec::{encode_u32, zero_runs, Coder};
use factz::field::{speculative, stream};
fn tok(r: u32, direct: u32) -> (u32, u32) {
    // returns (token, extra bits)
    if r < direct {
        return (r, 0);
    }
    let k = 31 - r.leading_zeros(); // floor log2, >= log2(direct)
    let kd = 31 - direct.leading_zeros();
    let next = (r >> (k - 1)) & 1;
    (direct + 2 * (k - kd) + next, k - 1)
}
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a[2].parse().unwrap();
    let bytes = std::fs::read(&a[1]).unwrap();
    let f: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let (u, v) = f.split_at(n * n);
    let (mut lo, mut hi) = (f32::MAX, f32::MIN);
    for &x in f.iter() {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    let rel: f64 = a[3].parse().unwrap();
    let xi = rel * (hi - lo) as f64;
    let p = speculative::encode(u, v, n, n, xi, false);
    let starts = speculative::code_segments(n, n, p.codes.len());
    for direct in [4u32, 8, 16, 32] {
        let (mut tcur, mut tnew) = (0, 0);
        for r in stream::runs(&starts, p.codes.len()) {
            let s = &p.codes[r.clone()];
            let cur = zero_runs::encode_segment(Coder::Rans, s).len();
            let plain = encode_u32(Coder::Rans, s).len() + 1;
            let (runs, vals) = zero_runs::split(s);
            let mut toks = Vec::new();
            let mut bits = 0u64;
            for &r in &runs {
                let (t, b) = tok(r, direct);
                toks.push(t);
                bits += b as u64;
            }
            let new = encode_u32(Coder::Rans, &toks).len()
                + (bits as usize).div_ceil(8)
                + encode_u32(Coder::Rans, &vals).len()
                + 8;
            tcur += cur;
            tnew += plain.min(new);
        }
        println!(
            "direct {direct}: current {tcur} tokens {tnew} ({:.3})",
            tnew as f64 / tcur as f64
        );
    }
}
