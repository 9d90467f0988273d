// The byte-plane rANS coder (src/codec/rans.rs) on the GPU, driven by
// src/gpu/rans.rs. The headers (plane kinds, frequencies) are the CPU's code
// on the host (`codec::gpu_host::rans`); these kernels do the per-symbol work.
//
// Encoding (`gpu_host::rans::device_encoding` plans it from the histograms):
//   factz_r_histogram per-block counts of each byte plane (merged in block
//                     order by huffman.cu's factz_h_merge)
//   factz_r_nonzero   a sparse plane's entries: flags, the grid scan, then
//   factz_r_entries   each entry (index << 8 | byte) at its scanned slot
//   factz_r_encode    one warp per block of one rANS plane, a lane per state:
//                     encode_block, the payload at the end of the block's
//                     scratch region
//   factz_r_gather    the payloads packed back to back
//
// Decoding (`gpu_host::rans::device_layout` parses and checks the header):
//   factz_r_fill      out = the constant planes' bytes (`base`)
//   factz_r_decode    one warp per (block, rANS plane), a lane per state:
//                     the plane's symbols ORed into out, with decode_block's
//                     checks (a status per block and plane, FZK_RANS_*)
//   factz_r_sparse    one thread per sparse entry: its byte ORed in
//
// One plane per launch, so two planes never write one word at once. A warp
// reads a group's words as the stream lays them out (src/codec/rans.rs):
// the lanes that need one take the next words in lane order, found by a
// vote (__ballot_sync) and a count of the voting lanes below.
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

// The rANS block of a warp: every CUDA block is whole warps, warp w of the
// grid codes block w.
static __device__ __forceinline__ fzr_u64 fzr_warp() {
    return ((fzr_u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
}

// Block b of the plane at `shift`: symbols b << block_log2 .. (up to n) coded
// as encode_block codes them with the table (per byte value s: table[3 s] =
// x_max, table[3 s + 1] = rcp, table[3 s + 2] = rcp_shift | cmpl_freq << 8 |
// start << 24), by one warp: lane j < lanes holds state j (lanes: 32, or 4
// for short streams, `codec::rans::encode_layout`; the other lanes idle). The
// renormalization words are written backwards from the end of the block's
// region of scratch (region bytes each), then the states before them, so the
// payload is the region's last lens[b] bytes.
extern "C" __global__ void factz_r_encode(const unsigned int* symbols, fzr_u64 n, unsigned int block_log2,
                                          unsigned int lanes, const fzr_u64* table, unsigned int shift,
                                          unsigned char* scratch, fzr_u64 region, fzr_u64 n_blocks,
                                          fzr_u64* lens) {
    fzr_u64 b = fzr_warp();
    if (b >= n_blocks) return;  // the whole warp
    unsigned int lane = threadIdx.x % 32;
    fzr_u64 first = b << block_log2, end = first + ((fzr_u64)1 << block_log2);
    if (end > n) end = n;
    fzr_u64 len = end - first;
    unsigned char* top = scratch + (b + 1) * region;
    unsigned int x = FZK_RANS_L;
    fzr_u64 nw = 0;
    // Groups of `lanes` symbols last to first, symbol k of the block in lane
    // k % lanes. encode_block steps a group's lanes from the highest, so
    // among the lanes that emit a word, the higher ones come first from the top.
    for (fzr_u64 g = (len + lanes - 1) / lanes; g-- > 0;) {
        fzr_u64 k = g * lanes + lane;
        bool active = lane < lanes && k < len;
        unsigned int sym = active ? (symbols[first + k] >> shift) & 255u : 0;
        fzr_u64 x_max = table[3 * sym], rcp = table[3 * sym + 1], packed = table[3 * sym + 2];
        if (__ballot_sync(FZK_FULL_WARP, active && x_max == 0) != 0) {
            if (lane == 0) lens[b] = FZR_NO_CODE;
            return;
        }
        bool need = active && (fzr_u64)x >= x_max;
        unsigned int mask = __ballot_sync(FZK_FULL_WARP, need);
        if (need) {
            // The needy lanes above this one wrote before it.
            fzr_u64 at = nw + (fzr_u64)__popc(mask >> lane >> 1) + 1;
            unsigned char* w = top - 2 * at;
            w[0] = (unsigned char)x;
            w[1] = (unsigned char)(x >> 8);
            x >>= 16;
        }
        nw += (fzr_u64)__popc(mask);
        if (active) {
            unsigned int q = (unsigned int)(((fzr_u64)x * rcp) >> 32) >> (unsigned int)(packed & 255u);
            x = x + q * (unsigned int)((packed >> 8) & 0xffffu) + (unsigned int)(packed >> 24);
        }
    }
    unsigned char* p = top - 2 * nw - 4 * lanes;
    if (lane < lanes)
        for (int k = 0; k < 4; k++) p[4 * lane + k] = (unsigned char)(x >> (8 * k));
    if (lane == 0) lens[b] = 2 * nw + 4 * lanes;
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
// b << block_log2 .. (b + 1) << block_log2 (the last block: up to count), with
// `lanes` states (32, or 4 in short and v1 streams), by one warp: lane j < lanes holds
// state j and decodes the group's symbol j; the needy lanes of a group read
// the next words in lane order (a vote and a count of the lanes below).
// packed[s] = (freq - 1) | bias << 12 | symbol << 24 for slot s of the 4096
// (`rans_simd`'s table), staged in shared memory for the block's warps.
#define FZR_SLOTS (1u << FZK_RANS_PROB_BITS)
extern "C" __global__ void factz_r_decode(const unsigned char* data, const fzr_u64* blocks,
                                          fzr_u64 n_blocks, fzr_u64 count,
                                          unsigned int block_log2, unsigned int lanes,
                                          const unsigned int* packed, unsigned int shift,
                                          unsigned int* out, unsigned int* status) {
    __shared__ unsigned int table[FZR_SLOTS];
    for (unsigned int k = threadIdx.x; k < FZR_SLOTS; k += blockDim.x) table[k] = packed[k];
    __syncthreads();
    fzr_u64 b = fzr_warp();
    if (b >= n_blocks) return;  // the whole warp
    unsigned int lane = threadIdx.x % 32;
    bool mine = lane < lanes;
    const unsigned char* p = data + blocks[2 * b];
    fzr_u64 len = blocks[2 * b + 1];
    // decode_block's header checks, the lowest failing state first.
    unsigned int x = 0;
    bool short_ = 4 * (fzr_u64)lane + 4 > len;
    if (mine && !short_)
        x = (unsigned int)p[4 * lane] | (unsigned int)p[4 * lane + 1] << 8 |
            (unsigned int)p[4 * lane + 2] << 16 | (unsigned int)p[4 * lane + 3] << 24;
    unsigned int bad = __ballot_sync(FZK_FULL_WARP, mine && (short_ || x < FZK_RANS_L));
    if (bad != 0) {
        unsigned int j = (unsigned int)__popc((bad & (0u - bad)) - 1);  // the lowest
        if (lane == 0) status[b] = 4 * (fzr_u64)j + 4 > len ? FZK_RANS_HEADER : FZK_RANS_INITIAL;
        return;
    }
    fzr_u64 pos = 4 * (fzr_u64)lanes;
    fzr_u64 first = b << block_log2, end = first + ((fzr_u64)1 << block_log2);
    if (end > count) end = count;
    for (fzr_u64 g = first; g < end; g += lanes) {
        fzr_u64 i = g + lane;
        bool active = mine && i < end;
        bool need = false;
        if (active) {
            // dec_core
            unsigned int e = table[x & (FZR_SLOTS - 1)];
            x = ((e & 0xfffu) + 1) * (x >> FZK_RANS_PROB_BITS) + ((e >> 12) & 0xfffu);
            out[i] |= (e >> 24) << shift;
            need = x < FZK_RANS_L;
        }
        unsigned int mask = __ballot_sync(FZK_FULL_WARP, need);
        fzr_u64 words = (fzr_u64)__popc(mask);
        if (pos + 2 * words > len) {
            if (lane == 0) status[b] = FZK_RANS_TRUNCATED;
            return;
        }
        if (need) {
            fzr_u64 at = pos + 2 * (fzr_u64)__popc(mask & ((1u << lane) - 1));
            x = x << 16 | (unsigned int)p[at] | (unsigned int)p[at + 1] << 8;
        }
        pos += 2 * words;
    }
    bool final_bad = __ballot_sync(FZK_FULL_WARP, mine && x != FZK_RANS_L) != 0;
    if (lane == 0) status[b] = pos != len ? FZK_RANS_TRAILING : final_bad ? FZK_RANS_FINAL : FZK_RANS_OK;
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
