// Huffman coding on the GPU in the CPU's stream format (src/codec/huffman.rs):
// symbol counts, block bit-packing and block decoding. The code table is built
// on the host with the CPU's own builder (src/codec/gpu_host/huffman.rs: tiny, and the
// codes must be the CPU's), which also writes the stream's header.
//
// The CPU format already cuts the symbols into independent blocks of
// 1 << block_log2 symbols (12 when encoding), each its own byte-padded
// LSB-first bit stream of bit-reversed canonical codes, with the blocks' byte
// lengths in the header. So:
// - encoding: one thread block per Huffman block; each thread owns a run of
//   consecutive symbols, an exclusive scan of the threads' bit counts gives each
//   run's first bit, and the codes are OR-ed into zeroed 32-bit words (bit k of
//   a block is bit k % 32 of word k / 32, i.e. the bytes in little-endian
//   order). OR is commutative, so the words do not depend on the order threads
//   run in: deterministic. Words are then gathered into the blocks' bytes.
// - decoding: one thread per Huffman block (the only boundaries a decoder can
//   start at without speculation), canonical decoding by the per-length limits
//   of DecodeTable::slow, with BitReader::finish's checks at the end.
//
// Counting: factz_h_max -> factz_h_histogram (alphabets up to FZK_HUFFMAN_SHARED_BINS,
// per-block shared histograms) -> factz_h_merge (sums in block order), or
// factz_h_histogram_global for wider alphabets (global integer atomics: the
// sums do not depend on the order).
// Encoding: factz_h_block_bits -> factz_h_sizes -> (scans) -> factz_h_pack -> factz_h_gather.
// Decoding: factz_h_decode (factz_h_fill for a single-symbol stream).
//
// No #include: NVRTC compiles it without headers, and the host build runs it
// through kernels/shim/cuda_host.hpp (see kernels/mode_b_bounds.cu).


typedef unsigned long long fzh_u64;

// ------------------------------------------------------------ counting

// max over all symbols into *max (which the caller zeroes).
extern "C" __global__ void factz_h_max(const unsigned int* symbols, fzh_u64 n, unsigned int* max) {
    __shared__ unsigned int part[FZK_HUFFMAN_BLOCK];
    unsigned int t = threadIdx.x, m = 0;
    for (fzh_u64 i = (fzh_u64)blockIdx.x * blockDim.x + t; i < n; i += (fzh_u64)gridDim.x * blockDim.x)
        m = symbols[i] > m ? symbols[i] : m;
    part[t] = m;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s && part[t + s] > part[t]) part[t] = part[t + s];
        __syncthreads();
    }
    if (t == 0) atomicMax(max, part[0]);
}

// Per-block counts of symbols < bins <= FZK_HUFFMAN_SHARED_BINS: partial[b * bins + s].
// Symbols >= bins set *bad.
extern "C" __global__ void factz_h_histogram(const unsigned int* symbols, fzh_u64 n, unsigned int bins,
                                             unsigned int* partial, unsigned int* bad) {
    __shared__ unsigned int hist[FZK_HUFFMAN_SHARED_BINS];
    unsigned int t = threadIdx.x;
    for (unsigned int k = t; k < bins; k += blockDim.x) hist[k] = 0;
    __syncthreads();
    for (fzh_u64 i = (fzh_u64)blockIdx.x * blockDim.x + t; i < n; i += (fzh_u64)gridDim.x * blockDim.x) {
        unsigned int s = symbols[i];
        if (s < bins)
            atomicAdd(&hist[s], 1u);
        else
            atomicOr(bad, 1u);
    }
    __syncthreads();
    for (unsigned int k = t; k < bins; k += blockDim.x) partial[(fzh_u64)blockIdx.x * bins + k] = hist[k];
}

// counts[s] = sum over the blocks of partial[b * bins + s], in block order.
extern "C" __global__ void factz_h_merge(const unsigned int* partial, unsigned int blocks, unsigned int bins,
                                         fzh_u64* counts) {
    unsigned int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= bins) return;
    fzh_u64 c = 0;
    for (unsigned int b = 0; b < blocks; b++) c += partial[(fzh_u64)b * bins + s];
    counts[s] = c;
}

// counts[s] += occurrences for any bins (counts zeroed by the caller; n < 2^32).
extern "C" __global__ void factz_h_histogram_global(const unsigned int* symbols, fzh_u64 n,
                                                    unsigned int bins, unsigned int* counts,
                                                    unsigned int* bad) {
    for (fzh_u64 i = (fzh_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (fzh_u64)gridDim.x * blockDim.x) {
        unsigned int s = symbols[i];
        if (s < bins)
            atomicAdd(&counts[s], 1u);
        else
            atomicOr(bad, 1u);
    }
}

// ------------------------------------------------------------ encoding

// The symbols [lo, hi) thread t of Huffman block b owns: consecutive runs of
// ceil(block / blockDim.x), so the block's bits are the runs' bits in order.
__device__ void fzh_run(fzh_u64 n, unsigned int block_log2, fzh_u64* lo, fzh_u64* hi) {
    fzh_u64 block = (fzh_u64)1 << block_log2;
    fzh_u64 start = (fzh_u64)blockIdx.x * block;
    fzh_u64 end = start + block < n ? start + block : n;
    fzh_u64 per = (block + blockDim.x - 1) / blockDim.x;
    fzh_u64 a = start + per * threadIdx.x, z = a + per;
    *lo = a < end ? a : end;
    *hi = z < end ? z : end;
}

// The packed (reversed code | length << 32) of s, as huffman.rs's Lookup::Dense;
// a symbol outside the table sets *bad and codes as nothing.
__device__ fzh_u64 fzh_lookup(const fzh_u64* lut, fzh_u64 lut_size, unsigned int s, unsigned int* bad) {
    fzh_u64 e = s < lut_size ? lut[s] : 0;
    if ((e >> 32) == 0) atomicOr(bad, 1u);
    return e;
}

// Bits of the run [lo, hi).
__device__ fzh_u64 fzh_run_bits(const unsigned int* symbols, fzh_u64 lo, fzh_u64 hi, const fzh_u64* lut,
                                fzh_u64 lut_size, unsigned int* bad) {
    fzh_u64 bits = 0;
    for (fzh_u64 i = lo; i < hi; i++) bits += fzh_lookup(lut, lut_size, symbols[i], bad) >> 32;
    return bits;
}

// bits[b] = the bit length of Huffman block b (grid: one block per Huffman block).
extern "C" __global__ void factz_h_block_bits(const unsigned int* symbols, fzh_u64 n, unsigned int block_log2,
                                              const fzh_u64* lut, fzh_u64 lut_size, fzh_u64* bits,
                                              unsigned int* bad) {
    __shared__ fzh_u64 part[FZK_HUFFMAN_BLOCK];
    fzh_u64 lo, hi;
    fzh_run(n, block_log2, &lo, &hi);
    unsigned int t = threadIdx.x;
    part[t] = fzh_run_bits(symbols, lo, hi, lut, lut_size, bad);
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) bits[blockIdx.x] = part[0];
}

// Each block's 32-bit words and bytes, in place of its bit count and into
// `bytes` (one thread per Huffman block); kernels/scan.cu's grid-wide scan then
// turns both into offsets (thousands of blocks at 2^12 symbols each: a serial
// scan on one thread would cost milliseconds).
extern "C" __global__ void factz_h_sizes(fzh_u64* bits_words, fzh_u64 blocks, fzh_u64* bytes) {
    fzh_u64 b = (fzh_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= blocks) return;
    fzh_u64 bits = bits_words[b];
    bits_words[b] = (bits + 31) / 32;
    bytes[b] = (bits + 7) / 8;
}

// ORs the low len bits of code into the block's words at bit `at`.
__device__ void fzh_put(unsigned int* words, fzh_u64 at, unsigned int code, unsigned int len) {
    unsigned int sh = (unsigned int)(at & 31);
    unsigned int* w = words + (at >> 5);
    atomicOr(w, code << sh);
    if (sh + len > 32) atomicOr(w + 1, code >> (32 - sh));  // sh > 0 here: len <= 32
}

// Packs Huffman block blockIdx.x into words[word_off[b]..word_off[b + 1]]
// (zeroed by the caller): threads' bit counts, an exclusive scan over the
// block, then each thread ORs its run's codes in.
extern "C" __global__ void factz_h_pack(const unsigned int* symbols, fzh_u64 n, unsigned int block_log2,
                                        const fzh_u64* lut, fzh_u64 lut_size, const fzh_u64* word_off,
                                        unsigned int* words, unsigned int* bad) {
    __shared__ fzh_u64 scan[2][FZK_HUFFMAN_BLOCK];
    fzh_u64 lo, hi;
    fzh_run(n, block_log2, &lo, &hi);
    unsigned int t = threadIdx.x;
    fzh_u64 own = fzh_run_bits(symbols, lo, hi, lut, lut_size, bad);
    // Inclusive Hillis-Steele scan, double-buffered.
    unsigned int cur = 0;
    scan[0][t] = own;
    __syncthreads();
    for (unsigned int d = 1; d < blockDim.x; d *= 2) {
        scan[cur ^ 1][t] = scan[cur][t] + (t >= d ? scan[cur][t - d] : 0);
        cur ^= 1;
        __syncthreads();
    }
    fzh_u64 at = scan[cur][t] - own;
    unsigned int* base = words + word_off[blockIdx.x];
    for (fzh_u64 i = lo; i < hi; i++) {
        fzh_u64 e = fzh_lookup(lut, lut_size, symbols[i], bad);
        unsigned int len = (unsigned int)(e >> 32);
        if (len == 0) continue;
        fzh_put(base, at, (unsigned int)e, len);
        at += len;
    }
}

// out[byte_off[b] + i] = byte i of block b's words (little-endian), for the
// blocks' whole bytes. Grid: (any, blocks).
extern "C" __global__ void factz_h_gather(const unsigned int* words, const fzh_u64* word_off,
                                          const fzh_u64* byte_off, unsigned char* out) {
    fzh_u64 b = blockIdx.y;
    fzh_u64 len = byte_off[b + 1] - byte_off[b];
    const unsigned int* w = words + word_off[b];
    unsigned char* o = out + byte_off[b];
    for (fzh_u64 i = (fzh_u64)blockIdx.x * blockDim.x + threadIdx.x; i < len;
         i += (fzh_u64)gridDim.x * blockDim.x)
        o[i] = (unsigned char)(w[i >> 2] >> (8 * (i & 3)));
}

// ------------------------------------------------------------ decoding

// Status per block (FZK_HUFF_*, from Rust), as BitReader::finish and
// DecodeTable::slow fail.

__device__ unsigned int fzh_reverse32(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

// The 32 bits from bit `at` of data[0..len), LSB-first, zero bits past the end
// (as BitReader::refill supplies them).
__device__ unsigned int fzh_window(const unsigned char* data, fzh_u64 len, fzh_u64 at) {
    fzh_u64 byte = at >> 3, w = 0;
    for (unsigned int k = 0; k < 5; k++) {
        fzh_u64 i = byte + k;
        w |= (fzh_u64)(i < len ? data[i] : 0) << (8 * k);
    }
    return (unsigned int)(w >> (at & 7));
}

// Decodes Huffman block b: count - (b << block_log2) symbols up to a block
// from payload[byte_off[b]..byte_off[b + 1]] into out. limit, first and offset
// are DecodeTable's (FZK_HUFF_MAX_LEN + 1 entries), sorted its canonical symbols.
// One thread per block.
extern "C" __global__ void factz_h_decode(const unsigned char* payload, const fzh_u64* byte_off,
                                          fzh_u64 blocks, fzh_u64 count, unsigned int block_log2,
                                          const fzh_u64* limit, const fzh_u64* first,
                                          const fzh_u64* offset, const unsigned int* sorted,
                                          fzh_u64 n_sorted, unsigned int max_len, unsigned int* out,
                                          unsigned int* status) {
    fzh_u64 b = (fzh_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= blocks) return;
    const unsigned char* data = payload + byte_off[b];
    fzh_u64 len = byte_off[b + 1] - byte_off[b];
    fzh_u64 start = b << block_log2;
    fzh_u64 end = start + ((fzh_u64)1 << block_log2);
    if (end > count) end = count;
    fzh_u64 at = 0;
    for (fzh_u64 i = start; i < end; i++) {
        fzh_u64 v = fzh_reverse32(fzh_window(data, len, at));
        unsigned int l = 1;
        for (; l <= max_len; l++)
            if (v < limit[l]) break;
        fzh_u64 idx = l <= max_len ? (v >> (32 - l)) : 0;
        if (l > max_len || idx < first[l] || idx - first[l] + offset[l] >= n_sorted) {
            status[b] = FZK_HUFF_INVALID;
            return;
        }
        out[i] = sorted[idx - first[l] + offset[l]];
        at += l;
    }
    fzh_u64 total = len * 8;
    if (at > total) {
        status[b] = FZK_HUFF_OVERRUN;
        return;
    }
    fzh_u64 rem = total - at;
    if (rem >= 8) {
        status[b] = FZK_HUFF_TRAILING;
        return;
    }
    status[b] = (rem > 0 && (fzh_window(data, len, at) & ((1u << rem) - 1)) != 0) ? FZK_HUFF_PADDING : FZK_HUFF_OK;
}

// A single-symbol stream: out[0..n) = symbol (grid-stride).
extern "C" __global__ void factz_h_fill(unsigned int* out, fzh_u64 n, unsigned int symbol) {
    for (fzh_u64 i = (fzh_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (fzh_u64)gridDim.x * blockDim.x)
        out[i] = symbol;
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_h_max)
FZSHIM_EXPORT(factz_h_histogram)
FZSHIM_EXPORT(factz_h_merge)
FZSHIM_EXPORT(factz_h_histogram_global)
FZSHIM_EXPORT(factz_h_block_bits)
FZSHIM_EXPORT(factz_h_sizes)
FZSHIM_EXPORT(factz_h_pack)
FZSHIM_EXPORT(factz_h_gather)
FZSHIM_EXPORT(factz_h_decode)
FZSHIM_EXPORT(factz_h_fill)
