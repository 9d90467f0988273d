// A segment's zero-runs form (src/codec/zero_runs.rs) on the GPU, driven by
// src/gpu/zero_runs.rs. The body's layout and the rule for when to try it
// are the CPU's code on the host; these kernels move the symbols.
//
// Splitting n symbols into m + 1 zero runs and m nonzero values:
//   factz_z_flags   flags[i] = symbol i is not zero; the grid scan (scan.cu)
//                   gives each nonzero symbol its slot, and m
//   factz_z_split   values[slot] = the symbol, zeros[slot] = the zeros
//                   before it (its index less its slot)
//   factz_z_runs    run j = zeros[j] - zeros[j - 1] (zeros[-1] = 0,
//                   zeros[m] = n - m): the zeros between nonzero j - 1 and j
//   factz_z_tokens  each run's token and raw bit count (fzz_token); the grid
//                   scan of the counts places the bits
//   factz_z_pack    each run's raw bits ORed into the packed words
//
// Placing them back (the runs' sums by the grid scan, checked on the host to
// add up to the segment with the values):
//   factz_z_widths  each token's raw bit count (a flag where one is not a
//                   token); the grid scan of the counts, checked on the host
//                   against the raw bytes
//   factz_z_unpack  each run from its token and raw bits (fzz_run)
//   (rans.cu's factz_r_fill zeros the output first)
//   factz_z_place   out[sums[j + 1] + j] = values[j]: nonzero j follows the
//                   runs up to its own and the j values before it
//
// Names carry fzz_ / FZZ_: every kernels/*.cu links into one host library.

typedef unsigned long long fzz_u64;

#define FZZ_DIRECT_LOG2 (31 - __clz(FZK_ZR_DIRECT))

// Run r's token; *bits gets the count of its raw bits (the low bits of r).
// Rust twin: codec::zero_runs::token.
static __device__ __forceinline__ unsigned int fzz_token(unsigned int r, unsigned int* bits) {
    if (r < FZK_ZR_DIRECT) {
        *bits = 0;
        return r;
    }
    unsigned int k = 31 - __clz(r);
    *bits = k - 1;
    return FZK_ZR_DIRECT + 2 * (k - FZZ_DIRECT_LOG2) + ((r >> (k - 1)) & 1u);
}

// The raw bits of token t (t <= FZK_ZR_MAX_TOKEN). Rust twin: token_bits.
static __device__ __forceinline__ unsigned int fzz_token_bits(unsigned int t) {
    return t < FZK_ZR_DIRECT ? 0u : FZZ_DIRECT_LOG2 + (t - FZK_ZR_DIRECT) / 2 - 1;
}

// The run of token t with raw bits low. Rust twin: run_of.
static __device__ __forceinline__ unsigned int fzz_run(unsigned int t, unsigned int low) {
    if (t < FZK_ZR_DIRECT) return t;
    unsigned int k = FZZ_DIRECT_LOG2 + (t - FZK_ZR_DIRECT) / 2;
    return 1u << k | ((t - FZK_ZR_DIRECT) & 1u) << (k - 1) | low;
}

extern "C" __global__ void factz_z_flags(const unsigned int* symbols, fzz_u64 n, unsigned int* flags) {
    fzz_u64 i = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = symbols[i] != 0;
}

extern "C" __global__ void factz_z_split(const unsigned int* symbols, fzz_u64 n, const fzz_u64* slot,
                                         unsigned int* values, unsigned int* zeros) {
    fzz_u64 i = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || symbols[i] == 0) return;
    fzz_u64 s = slot[i];
    values[s] = symbols[i];
    zeros[s] = (unsigned int)(i - s);
}

// j = 0..=m; zeros holds m entries.
extern "C" __global__ void factz_z_runs(const unsigned int* zeros, fzz_u64 m, fzz_u64 n, unsigned int* runs) {
    fzz_u64 j = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j > m) return;
    unsigned int upto = j < m ? zeros[j] : (unsigned int)(n - m);
    unsigned int before = j > 0 ? zeros[j - 1] : 0u;
    runs[j] = upto - before;
}

// j = 0..count.
extern "C" __global__ void factz_z_tokens(const unsigned int* runs, fzz_u64 count, unsigned int* tokens,
                                          unsigned int* widths) {
    fzz_u64 j = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    unsigned int bits;
    tokens[j] = fzz_token(runs[j], &bits);
    widths[j] = bits;
}

// Run j's low widths[j] bits at bit offsets[j] of words (LSB first; words
// zeroed, one past the last bit). A run's bits (at most 30) span at most two
// words, which neighbouring runs share: atomicOr.
extern "C" __global__ void factz_z_pack(const unsigned int* runs, const unsigned int* widths,
                                        const fzz_u64* offsets, fzz_u64 count, unsigned int* words) {
    fzz_u64 j = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count || widths[j] == 0) return;
    unsigned int w = widths[j], low = runs[j] & ((1u << w) - 1u);
    fzz_u64 at = offsets[j];
    unsigned int sh = (unsigned int)(at % 32);
    atomicOr(&words[at / 32], low << sh);
    if (sh + w > 32) atomicOr(&words[at / 32 + 1], low >> (32 - sh));
}

// j = 0..count; *bad = 1 where a token is past FZK_ZR_MAX_TOKEN (width 0).
extern "C" __global__ void factz_z_widths(const unsigned int* tokens, fzz_u64 count, unsigned int* widths,
                                          unsigned int* bad) {
    fzz_u64 j = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    unsigned int t = tokens[j];
    if (t > FZK_ZR_MAX_TOKEN) {
        widths[j] = 0;
        *bad = 1;
        return;
    }
    widths[j] = fzz_token_bits(t);
}

// Run j from its token and the widths[j] bits at offsets[j] of words (one
// word past the last bit).
extern "C" __global__ void factz_z_unpack(const unsigned int* tokens, const unsigned int* widths,
                                          const fzz_u64* offsets, const unsigned int* words, fzz_u64 count,
                                          unsigned int* runs) {
    fzz_u64 j = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    unsigned int w = widths[j], low = 0;
    if (w > 0) {
        fzz_u64 at = offsets[j];
        unsigned int sh = (unsigned int)(at % 32);
        low = words[at / 32] >> sh;
        if (sh + w > 32) low |= words[at / 32 + 1] << (32 - sh);
        low &= (1u << w) - 1u;
    }
    runs[j] = fzz_run(tokens[j], low);
}

// j = 0..m; sums: the runs' exclusive sums (m + 2 entries).
extern "C" __global__ void factz_z_place(const unsigned int* values, const fzz_u64* sums, fzz_u64 m,
                                         unsigned int* out) {
    fzz_u64 j = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < m) out[sums[j + 1] + j] = values[j];
}

#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_z_flags)
FZSHIM_EXPORT(factz_z_split)
FZSHIM_EXPORT(factz_z_runs)
FZSHIM_EXPORT(factz_z_tokens)
FZSHIM_EXPORT(factz_z_pack)
FZSHIM_EXPORT(factz_z_widths)
FZSHIM_EXPORT(factz_z_unpack)
FZSHIM_EXPORT(factz_z_place)
