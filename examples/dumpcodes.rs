use factz::codec::{encode_u32, zero_runs, Coder};
use factz::field::{speculative, stream};
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
    let (mut tp, mut tz) = (0, 0);
    for r in stream::runs(&starts, p.codes.len()) {
        let s = &p.codes[r.clone()];
        let plain = encode_u32(Coder::Rans, s).len();
        let (runs, vals) = zero_runs::split(s);
        let er = encode_u32(Coder::Rans, &runs).len();
        let ev = encode_u32(Coder::Rans, &vals).len();
        // entropies
        let ent = |x: &[u32]| {
            let mut h = std::collections::HashMap::new();
            for &k in x {
                *h.entry(k).or_insert(0usize) += 1;
            }
            let n = x.len() as f64;
            h.values()
                .map(|&c| {
                    let p = c as f64 / n;
                    -(c as f64) * p.log2()
                })
                .sum::<f64>()
                / 8.0
        };
        println!("{:>9}..{:>9} n {:>8} m {:>7} plain {:>7} (H {:>8.0}) runs {:>6} (H {:>7.0}) vals {:>6} (H {:>7.0})", r.start, r.end, s.len(), vals.len(), plain, ent(s), er, ent(&runs), ev, ent(&vals));
        tp += plain;
        tz += plain.min(er + ev + 4);
    }
    println!("total plain {tp} best {tz}");
}
