// The byte-plane rANS decoder (src/codec/rans.rs `decode`) on the GPU, driven
// by src/gpu/rans.rs: the host parses and checks the header with the CPU's
// code (`rans_gpu_ref::device_layout`), these kernels decode the blocks.
//
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
// kernels/shim/cuda_host.hpp). Names carry fzr_ / FZR_.

#define FZR_PROB_BITS 12
#define FZR_RANS_L 65536u
#define FZR_STATES 4

// Block statuses (rans_gpu_ref::block_status).
#define FZR_OK 0
#define FZR_HEADER 1
#define FZR_INITIAL 2
#define FZR_TRUNCATED 3
#define FZR_TRAILING 4
#define FZR_FINAL 5

typedef unsigned long long fzr_u64;

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
    unsigned int x[FZR_STATES];
    for (int j = 0; j < FZR_STATES; j++) {
        if (len < 4 * (fzr_u64)j + 4) {
            status[b] = FZR_HEADER;
            return;
        }
        x[j] = (unsigned int)p[4 * j] | (unsigned int)p[4 * j + 1] << 8 |
               (unsigned int)p[4 * j + 2] << 16 | (unsigned int)p[4 * j + 3] << 24;
        if (x[j] < FZR_RANS_L) {
            status[b] = FZR_INITIAL;
            return;
        }
    }
    fzr_u64 pos = 4 * FZR_STATES;
    fzr_u64 first = b << block_log2, end = first + ((fzr_u64)1 << block_log2);
    if (end > count) end = count;
    for (fzr_u64 i = first; i < end; i++) {
        unsigned int j = (unsigned int)((i - first) % FZR_STATES);
        // dec_core
        unsigned int slot = x[j] & ((1u << FZR_PROB_BITS) - 1);
        unsigned int d = slots[slot];
        x[j] = (d & 0xffffu) * (x[j] >> FZR_PROB_BITS) + (d >> 16);
        out[i] |= (unsigned int)syms[slot] << shift;
        // renorm_checked
        if (x[j] < FZR_RANS_L) {
            if (pos + 2 > len) {
                status[b] = FZR_TRUNCATED;
                return;
            }
            x[j] = x[j] << 16 | (unsigned int)p[pos] | (unsigned int)p[pos + 1] << 8;
            pos += 2;
        }
    }
    if (pos != len) {
        status[b] = FZR_TRAILING;
        return;
    }
    for (int j = 0; j < FZR_STATES; j++)
        if (x[j] != FZR_RANS_L) {
            status[b] = FZR_FINAL;
            return;
        }
    status[b] = FZR_OK;
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
FZSHIM_EXPORT(factz_r_fill)
FZSHIM_EXPORT(factz_r_decode)
FZSHIM_EXPORT(factz_r_sparse)
