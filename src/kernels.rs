//! What the CUDA kernels (`kernels/*.cu`) share with Rust, in every build (the
//! tests compile the kernels without the `cuda` feature too).
//!
//! Every kernel source is [`prelude`] followed by the file ([`source`]): a
//! `#define FZK_*` block generated from the Rust constants ([`constants`]),
//! then `kernels/common.cuh`, the one copy of the device formulas two or more
//! kernel files share. NVRTC (`gpu::exec::sources`) and the shim's host build
//! (tests/common/kernels_host.rs) compile exactly this text, so no kernel file
//! retypes a constant Rust defines (tests/gpu_kernels.rs checks that none
//! reappears).

use crate::codec::gpu_host::huffman::status as huff;
use crate::codec::{huffman, rans, zero_runs};
use crate::field::{blockwise, quantize, safe_bound, speculative};
use crate::particles::correct;

/// Threads of a `field_reduce.cu` block (its shared reductions hold one block).
pub const FIELD_REDUCE_BLOCK: u32 = 256;
/// Threads of the `huffman.cu` blocks whose shared arrays hold one block.
pub const HUFFMAN_BLOCK: u32 = 256;
/// `huffman.cu`: the largest alphabet counted in shared memory.
pub const HUFFMAN_SHARED_BINS: u32 = 4096;
/// Threads of a `scan.cu` block, and the inputs each thread scans: a block
/// scans `SCAN_BLOCK * SCAN_PER_THREAD` values.
pub const SCAN_BLOCK: u32 = 256;
pub const SCAN_PER_THREAD: u32 = 4;
/// `mode_b_bounds.cu`: one block of 32 x 8 threads per tile (a warp per tile
/// row, at most this many threads: its launch bound).
pub const MODE_B_BOUNDS_BLOCK: [u32; 2] = [32, 8];
/// `mode_b_codec.cu`: tiles per block, one warp each.
pub const MODE_B_CODEC_TILES: u32 = 4;
/// `particles.cu`: radix sort digit width (bits per pass).
pub const RADIX_BITS: u32 = 8;
/// `particles.cu`: forward-neighbour slots per cell (a cell's 26 neighbours,
/// each once).
pub const MAX_NEIGHBOURS: u32 = 26;

/// `kernels/common.cuh`: the shared device formulas (`fzk_*`).
pub const COMMON: &str = include_str!("../kernels/common.cuh");

/// One generated constant: its C name, its value as C source, and the Rust
/// item it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub name: &'static str,
    pub value: String,
    pub from: &'static str,
}

/// A C `double` literal holding `x` exactly (hexadecimal, as `0x1p-52`).
pub fn c_double(x: f64) -> String {
    assert!(x.is_finite(), "a kernel constant must be finite: {x}");
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let bits = x.to_bits();
    let sign = if x < 0.0 { "-" } else { "" };
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1u64 << 52) - 1);
    let (lead, exp) = if biased == 0 {
        (0, -1022)
    } else {
        (1, biased - 1023)
    };
    let digits = format!("{frac:013x}");
    let digits = digits.trim_end_matches('0');
    if digits.is_empty() {
        format!("{sign}0x{lead}p{exp}")
    } else {
        format!("{sign}0x{lead}.{digits}p{exp}")
    }
}

/// Every constant the kernels take from Rust.
pub fn constants() -> Vec<Constant> {
    let c = |name, value: String, from| Constant { name, value, from };
    let mut out = vec![
        c(
            "FZK_TILE",
            blockwise::TILE.to_string(),
            "field::blockwise::TILE",
        ),
        c(
            "FZK_NUM_IDS",
            quantize::NUM_IDS.to_string(),
            "field::quantize::NUM_IDS",
        ),
        c(
            "FZK_EXACT",
            blockwise::EXACT.to_string(),
            "field::blockwise::EXACT",
        ),
        c(
            "FZK_RADIUS",
            format!("{}LL", quantize::RADIUS),
            "field::quantize::RADIUS",
        ),
        c(
            "FZK_STRIDE",
            speculative::STRIDE.to_string(),
            "field::speculative::STRIDE",
        ),
        c("FZK_EPS", c_double(f64::EPSILON), "f64::EPSILON"),
        c(
            "FZK_MARGIN",
            c_double(safe_bound::MARGIN),
            "field::safe_bound::MARGIN",
        ),
        c(
            "FZK_CODED_BITS",
            format!("{}ull", blockwise::CODED_BITS),
            "field::blockwise::CODED_BITS",
        ),
        c(
            "FZK_EXACT_BITS",
            format!("{}ull", blockwise::EXACT_BITS),
            "field::blockwise::EXACT_BITS",
        ),
        c(
            "FZK_RANS_PROB_BITS",
            rans::PROB_BITS.to_string(),
            "codec::rans::PROB_BITS",
        ),
        c(
            "FZK_RANS_L",
            format!("{}u", rans::RANS_L),
            "codec::rans::RANS_L",
        ),
        c(
            "FZK_ZR_DIRECT",
            format!("{}u", zero_runs::DIRECT),
            "codec::zero_runs::DIRECT",
        ),
        c(
            "FZK_ZR_MAX_TOKEN",
            format!("{}u", zero_runs::MAX_TOKEN),
            "codec::zero_runs::MAX_TOKEN",
        ),
        c(
            "FZK_HUFF_MAX_LEN",
            huffman::MAX_LEN.to_string(),
            "codec::huffman::MAX_LEN",
        ),
    ];
    let sizes = [
        (
            "FZK_FIELD_REDUCE_BLOCK",
            FIELD_REDUCE_BLOCK,
            "kernels::FIELD_REDUCE_BLOCK",
        ),
        ("FZK_HUFFMAN_BLOCK", HUFFMAN_BLOCK, "kernels::HUFFMAN_BLOCK"),
        (
            "FZK_HUFFMAN_SHARED_BINS",
            HUFFMAN_SHARED_BINS,
            "kernels::HUFFMAN_SHARED_BINS",
        ),
        ("FZK_SCAN_BLOCK", SCAN_BLOCK, "kernels::SCAN_BLOCK"),
        (
            "FZK_SCAN_PER_THREAD",
            SCAN_PER_THREAD,
            "kernels::SCAN_PER_THREAD",
        ),
        (
            "FZK_MODE_B_BOUNDS_THREADS",
            MODE_B_BOUNDS_BLOCK[0] * MODE_B_BOUNDS_BLOCK[1],
            "kernels::MODE_B_BOUNDS_BLOCK",
        ),
        (
            "FZK_MODE_B_CODEC_TILES",
            MODE_B_CODEC_TILES,
            "kernels::MODE_B_CODEC_TILES",
        ),
        ("FZK_RADIX_DIGITS", 1 << RADIX_BITS, "kernels::RADIX_BITS"),
        (
            "FZK_MAX_NEIGHBOURS",
            MAX_NEIGHBOURS,
            "kernels::MAX_NEIGHBOURS",
        ),
        (
            "FZK_LOSS_BLOCK",
            correct::LOSS_BLOCK as u32,
            "particles::correct::LOSS_BLOCK",
        ),
    ];
    out.extend(sizes.map(|(name, v, from)| c(name, v.to_string(), from)));
    out.push(c(
        "FZK_ADAM_BETA1",
        c_double(correct::BETA1),
        "particles::correct::BETA1",
    ));
    out.push(c(
        "FZK_ADAM_BETA2",
        c_double(correct::BETA2),
        "particles::correct::BETA2",
    ));
    out.push(c(
        "FZK_ADAM_EPS",
        c_double(correct::ADAM_EPS),
        "particles::correct::ADAM_EPS",
    ));
    let statuses = [
        ("FZK_RANS_OK", rans::status::OK, "codec::rans::status::OK"),
        (
            "FZK_RANS_HEADER",
            rans::status::HEADER,
            "codec::rans::status::HEADER",
        ),
        (
            "FZK_RANS_INITIAL",
            rans::status::INITIAL,
            "codec::rans::status::INITIAL",
        ),
        (
            "FZK_RANS_TRUNCATED",
            rans::status::TRUNCATED,
            "codec::rans::status::TRUNCATED",
        ),
        (
            "FZK_RANS_TRAILING",
            rans::status::TRAILING,
            "codec::rans::status::TRAILING",
        ),
        (
            "FZK_RANS_FINAL",
            rans::status::FINAL,
            "codec::rans::status::FINAL",
        ),
        (
            "FZK_HUFF_OK",
            huff::OK,
            "codec::gpu_host::huffman::status::OK",
        ),
        (
            "FZK_HUFF_OVERRUN",
            huff::OVERRUN,
            "codec::gpu_host::huffman::status::OVERRUN",
        ),
        (
            "FZK_HUFF_TRAILING",
            huff::TRAILING,
            "codec::gpu_host::huffman::status::TRAILING",
        ),
        (
            "FZK_HUFF_PADDING",
            huff::PADDING,
            "codec::gpu_host::huffman::status::PADDING",
        ),
        (
            "FZK_HUFF_INVALID",
            huff::INVALID,
            "codec::gpu_host::huffman::status::INVALID",
        ),
    ];
    out.extend(statuses.map(|(name, v, from)| c(name, v.to_string(), from)));
    out
}

/// The `#define` block of [`constants`], then `kernels/common.cuh`.
pub fn prelude() -> String {
    let mut out =
        String::from("// Generated by factz::kernels::prelude from the Rust constants.\n");
    for k in constants() {
        out.push_str(&format!("#define {} {}  // {}\n", k.name, k.value, k.from));
    }
    out.push_str("#line 1 \"common.cuh\"\n");
    out.push_str(COMMON);
    out
}

/// A kernel file (`name`, for the compiler's messages) as compiled: the
/// [`prelude`], then the file.
pub fn source(file: &str, name: &str) -> String {
    format!("{}\n#line 1 \"{name}\"\n{file}", prelude())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_are_exact_c_literals() {
        assert_eq!(c_double(f64::EPSILON), "0x1p-52");
        assert_eq!(c_double(1.5), "0x1.8p0");
        assert_eq!(c_double(-0.75), "-0x1.8p-1");
        assert_eq!(c_double(1.0 - 1e-6), "0x1.ffffde7210be9p-1");
        assert_eq!(c_double(f64::MIN_POSITIVE / 2.0), "0x0.8p-1022");
    }

    #[test]
    fn the_prelude_defines_every_constant_once() {
        let p = prelude();
        for k in constants() {
            let line = format!("#define {} {}", k.name, k.value);
            assert_eq!(p.matches(&format!("#define {} ", k.name)).count(), 1);
            assert!(p.contains(&line), "{line}");
        }
        assert!(p.ends_with(COMMON));
        assert!(!p.lines().any(|l| l.trim_start().starts_with("#include")));
    }
}
