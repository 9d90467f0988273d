//! Any bytes as a factz stream, as given and with their checksums re-sealed:
//! the container parser, every section decoder behind it, both kinds.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    factz_fuzz::decode_all(data);
    factz_fuzz::decode_all(&factz_fuzz::reseal(data));
});
