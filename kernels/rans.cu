// The byte-plane rANS coder (src/codec/rans.rs) on the GPU, driven by
// src/gpu/rans.rs. The headers (plane kinds, frequencies) are the CPU's code
// on the host (`codec::gpu_host::rans`); these kernels do the per-symbol work.
//
// Encoding (`gpu_host::rans::device_encoding` plans it from the histograms):
//   factz_r_histogram per-block counts of each byte plane (merged in block
//                     order by huffman.cu's factz_h_merge)
//   factz_r_nonzero   a sparse plane's entries: flags, the grid scan, then
//   factz_r_entries   each entry (index << 8 | byte) at its scanned slot
//   factz_r_encode    one thread per block of one rANS plane: encode_block,
//                     the payload at the end of the block's scratch region
//   factz_r_gather    the payloads packed back to back
//
// Decoding (`gpu_host::rans::device_layout` parses and checks the header):
//   factz_r_fill      out = the constant planes' bytes (`base`)
//   factz_r_decode    one thread per (block, rANS plane): the plane's symbols
//                     ORed into out, with decode_block's checks (a status per
//                     block and plane, FZR_* below)
//   factz_r_sparse    one thread per sparse entry: its byte ORed in
//
// One plane per launch, so two planes never write one word at once. Decoding
// a plane alone gives decode_block's words in its order: within a quad the
// CPU decodes four states and then renormalizes them in state order; each
// renormalization touches only its own state and the shared read position,
// so renormalizing each state right after its own step reads the same words.
//
// No #include (NVRTC compiles it headerless; the host build force-includes
// kernels/shim/cuda_host.hpp). Names carry fzr_ / FZR_; the coder's constants
// and block statuses (FZK_RANS_*) come from Rust, in the prelude.

typedef unsigned long long fzr_u64;

// ------------------------------------------------------------ encoding

#define FZR_PLANES 4
// A block length no payload has: a symbol without a frequency was met.
#define FZR_NO_CODE 0xffffffffffffffffull

// partial[b * 1024 + k * 256 + byte] = the count of `byte` in plane k among
// the symbols thread block b visits (grid-stride), for byte != 0: zero bytes
// are most of a high plane, and counting them would make every thread of the
// block wait on one shared counter (the host takes them as n minus the rest).
extern "C" __global__ void factz_r_histogram(const unsigned int* symbols, fzr_u64 n,
                                             unsigned int* partial) {
    __shared__ unsigned int hist[FZR_PLANES * 256];
    unsigned int t = threadIdx.x;
    for (unsigned int k = t; k < FZR_PLANES * 256; k += blockDim.x) hist[k] = 0;
    __syncthreads();
    for (fzr_u64 i = (fzr_u64)blockIdx.x * blockDim.x + t; i < n;
         i += (fzr_u64)gridDim.x * blockDim.x) {
        unsigned int s = symbols[i];
        for (unsigned int k = 0; k < FZR_PLANES; k++) {
            unsigned int b = (s >> (8 * k)) & 255u;
            if (b != 0) atomicAdd(&hist[k * 256 + b], 1u);
        }
    }
    __syncthreads();
    for (unsigned int k = t; k < FZR_PLANES * 256; k += blockDim.x)
        partial[(fzr_u64)blockIdx.x * FZR_PLANES * 256 + k] = hist[k];
}

// flags[i] = 1 where symbol i's byte at `shift` is not zero.
extern "C" __global__ void factz_r_nonzero(const unsigned int* symbols, fzr_u64 n, unsigned int shift,
                                           unsigned int* flags) {
    fzr_u64 i = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = ((symbols[i] >> shift) & 255u) != 0;
}

// entries[slot[i]] = i << 8 | byte for those symbols (slot: the flags' scan).
extern "C" __global__ void factz_r_entries(const unsigned int* symbols, fzr_u64 n, unsigned int shift,
                                           const fzr_u64* slot, fzr_u64* entries) {
    fzr_u64 i = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int b = (symbols[i] >> shift) & 255u;
    if (b != 0) entries[slot[i]] = i << 8 | b;
}

// Block b of the plane at `shift`: symbols b << block_log2 .. (up to n) coded
// as encode_block codes them with the table (per byte value s: table[3 s] =
// x_max, table[3 s + 1] = rcp, table[3 s + 2] = rcp_shift | cmpl_freq << 8 |
// start << 24). The renormalization words are written backwards from the end
// of the block's region of scratch (region bytes each), then the four states
// before them, so the payload is the region's last lens[b] bytes.
extern "C" __global__ void factz_r_encode(const unsigned int* symbols, fzr_u64 n, unsigned int block_log2,
                                          const fzr_u64* table, unsigned int shift, unsigned char* scratch,
                                          fzr_u64 region, fzr_u64 n_blocks, fzr_u64* lens) {
    fzr_u64 b = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n_blocks) return;
    fzr_u64 first = b << block_log2, end = first + ((fzr_u64)1 << block_log2);
    if (end > n) end = n;
    fzr_u64 len = end - first;
    unsigned char* top = scratch + (b + 1) * region;
    unsigned int x[FZK_RANS_STATES];
    for (int j = 0; j < FZK_RANS_STATES; j++) x[j] = FZK_RANS_L;
    fzr_u64 nw = 0;
    // Symbols last to first, symbol k in state k % 4: encode_block's order
    // (the partial quad's states high to low, then the quads from the last).
    for (fzr_u64 k = len; k-- > 0;) {
        unsigned int j = (unsigned int)(k % FZK_RANS_STATES);
        unsigned int sym = (symbols[first + k] >> shift) & 255u;
        fzr_u64 x_max = table[3 * sym], rcp = table[3 * sym + 1], packed = table[3 * sym + 2];
        if (x_max == 0) {
            lens[b] = FZR_NO_CODE;
            return;
        }
        unsigned int v = x[j];
        if ((fzr_u64)v >= x_max) {
            nw++;
            unsigned char* w = top - 2 * nw;
            w[0] = (unsigned char)v;
            w[1] = (unsigned char)(v >> 8);
            v >>= 16;
        }
        unsigned int q = (unsigned int)(((fzr_u64)v * rcp) >> 32) >> (unsigned int)(packed & 255u);
        x[j] = v + q * (unsigned int)((packed >> 8) & 0xffffu) + (unsigned int)(packed >> 24);
    }
    unsigned char* p = top - 2 * nw - 4 * FZK_RANS_STATES;
    for (int j = 0; j < FZK_RANS_STATES; j++)
        for (int k = 0; k < 4; k++) p[4 * j + k] = (unsigned char)(x[j] >> (8 * k));
    lens[b] = 2 * nw + 4 * FZK_RANS_STATES;
}

// out[dst[b] ..] = the last lens[b] bytes of region b of scratch. Grid: (any, blocks).
extern "C" __global__ void factz_r_gather(const unsigned char* scratch, fzr_u64 region, const fzr_u64* lens,
                                          const fzr_u64* dst, unsigned char* out) {
    fzr_u64 b = blockIdx.y, len = lens[b];
    const unsigned char* src = scratch + (b + 1) * region - len;
    for (fzr_u64 i = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x; i < len;
         i += (fzr_u64)gridDim.x * blockDim.x)
        out[dst[b] + i] = src[i];
}

// ------------------------------------------------------------ decoding

extern "C" __global__ void factz_r_fill(unsigned int* out, fzr_u64 n, unsigned int base) {
    for (fzr_u64 i = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (fzr_u64)gridDim.x * blockDim.x)
        out[i] = base;
}

// Block b of one plane: data[blocks[2 b] ..][.. blocks[2 b + 1]] codes symbols
// b << block_log2 .. (b + 1) << block_log2 (the last block: up to count).
// slots[s] = freq | bias << 16 and syms[s] for slot s of the 4096.
extern "C" __global__ void factz_r_decode(const unsigned char* data, const fzr_u64* blocks,
                                          fzr_u64 n_blocks, fzr_u64 count,
                                          unsigned int block_log2, const unsigned int* slots,
                                          const unsigned char* syms, unsigned int shift,
                                          unsigned int* out, unsigned int* status) {
    fzr_u64 b = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n_blocks) return;
    const unsigned char* p = data + blocks[2 * b];
    fzr_u64 len = blocks[2 * b + 1];
    unsigned int x[FZK_RANS_STATES];
    for (int j = 0; j < FZK_RANS_STATES; j++) {
        if (len < 4 * (fzr_u64)j + 4) {
            status[b] = FZK_RANS_HEADER;
            return;
        }
        x[j] = (unsigned int)p[4 * j] | (unsigned int)p[4 * j + 1] << 8 |
               (unsigned int)p[4 * j + 2] << 16 | (unsigned int)p[4 * j + 3] << 24;
        if (x[j] < FZK_RANS_L) {
            status[b] = FZK_RANS_INITIAL;
            return;
        }
    }
    fzr_u64 pos = 4 * FZK_RANS_STATES;
    fzr_u64 first = b << block_log2, end = first + ((fzr_u64)1 << block_log2);
    if (end > count) end = count;
    for (fzr_u64 i = first; i < end; i++) {
        unsigned int j = (unsigned int)((i - first) % FZK_RANS_STATES);
        // dec_core
        unsigned int slot = x[j] & ((1u << FZK_RANS_PROB_BITS) - 1);
        unsigned int d = slots[slot];
        x[j] = (d & 0xffffu) * (x[j] >> FZK_RANS_PROB_BITS) + (d >> 16);
        out[i] |= (unsigned int)syms[slot] << shift;
        // renorm_checked
        if (x[j] < FZK_RANS_L) {
            if (pos + 2 > len) {
                status[b] = FZK_RANS_TRUNCATED;
                return;
            }
            x[j] = x[j] << 16 | (unsigned int)p[pos] | (unsigned int)p[pos + 1] << 8;
            pos += 2;
        }
    }
    if (pos != len) {
        status[b] = FZK_RANS_TRAILING;
        return;
    }
    for (int j = 0; j < FZK_RANS_STATES; j++)
        if (x[j] != FZK_RANS_L) {
            status[b] = FZK_RANS_FINAL;
            return;
        }
    status[b] = FZK_RANS_OK;
}

// entries[2 k] = index, entries[2 k + 1] = byte: out[index] |= byte << shift.
extern "C" __global__ void factz_r_sparse(const fzr_u64* entries, fzr_u64 n, unsigned int shift,
                                          unsigned int* out) {
    fzr_u64 k = (fzr_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[entries[2 * k]] |= (unsigned int)entries[2 * k + 1] << shift;
}

#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_r_histogram)
FZSHIM_EXPORT(factz_r_nonzero)
FZSHIM_EXPORT(factz_r_entries)
FZSHIM_EXPORT(factz_r_encode)
FZSHIM_EXPORT(factz_r_gather)
FZSHIM_EXPORT(factz_r_fill)
FZSHIM_EXPORT(factz_r_decode)
FZSHIM_EXPORT(factz_r_sparse)
