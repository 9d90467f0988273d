//! The entropy coders' decoders on arbitrary input and symbol counts, and
//! their round trip on arbitrary symbols.
#![no_main]
use factz::codec::{decode_bytes, decode_u32, encode_bytes, encode_u32, Coder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (bool, u16, Vec<u8>)| {
    let (huffman, count, data) = input;
    let coder = if huffman { Coder::Huffman } else { Coder::Rans };
    let count = usize::from(count);
    let _ = decode_bytes(coder, &data, count);
    let _ = decode_u32(coder, &data, count);
    // Round trip: the data itself as symbols, bytes and (little-endian) words.
    let back = decode_bytes(coder, &encode_bytes(coder, &data), data.len()).unwrap();
    assert_eq!(back, data);
    let words: Vec<u32> = data
        .chunks(4)
        .map(|c| c.iter().rev().fold(0u32, |a, &b| a << 8 | u32::from(b)))
        .collect();
    let back = decode_u32(coder, &encode_u32(coder, &words), words.len()).unwrap();
    assert_eq!(back, words);
});
