// Whole-field steps of the GPU field pipeline (src/gpu/field_reduce.rs), so
// the field never has to come back to the host:
//
// - factz_f_range: the finite values' min and max over u and v, per block
//   (field::finite_range; min and max are exact, so any order gives the same
//   values, up to the sign of a zero, which field::bound_for_range ignores);
// - factz_f_pack_flags / factz_f_unpack_flags: one flag byte per vertex to
//   and from the stream's exact-vertex bitmap (mode S's mask);
// - factz_f_count_bits, widen / narrow, to_planes / from_planes: the mask and
//   raw sections as u32 symbols for the Huffman kernels, and back.
//
// No #include: NVRTC compiles it headerless; the host build force-includes
// kernels/shim/cuda_host.hpp.

typedef unsigned long long fzf_u64;

// Threads per block of factz_f_range (its shared arrays hold a block).

// part[2 b] = min, part[2 b + 1] = max of block b's finite values (grid-stride
// over vertices, both components); +inf / -inf where it has none. blockDim
// must be FZK_FIELD_REDUCE_BLOCK.
extern "C" __global__ void factz_f_range(const float* u, const float* v, fzf_u64 n, float* part) {
    __shared__ float lo[FZK_FIELD_REDUCE_BLOCK], hi[FZK_FIELD_REDUCE_BLOCK];
    float l = __uint_as_float(0x7f800000u), h = __uint_as_float(0xff800000u);
    for (fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (fzf_u64)gridDim.x * blockDim.x) {
        float a = u[k], b = v[k];
        if (fzk_finite32(a)) {
            l = a < l ? a : l;
            h = a > h ? a : h;
        }
        if (fzk_finite32(b)) {
            l = b < l ? b : l;
            h = b > h ? b : h;
        }
    }
    unsigned int t = threadIdx.x;
    lo[t] = l;
    hi[t] = h;
    __syncthreads();
    for (unsigned int s = FZK_FIELD_REDUCE_BLOCK / 2; s > 0; s /= 2) {
        if (t < s) {
            lo[t] = lo[t + s] < lo[t] ? lo[t + s] : lo[t];
            hi[t] = hi[t + s] > hi[t] ? hi[t + s] : hi[t];
        }
        __syncthreads();
    }
    if (t == 0) {
        part[2 * blockIdx.x] = lo[0];
        part[2 * blockIdx.x + 1] = hi[0];
    }
}

// bytes[b] = flags[8 b .. 8 b + 8) as bits, LSB first (planes::pack_bits:
// the stream's exact-vertex bitmap); one thread per byte.
extern "C" __global__ void factz_f_pack_flags(const unsigned char* flags, fzf_u64 n,
                                              unsigned char* bytes) {
    fzf_u64 b = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= (n + 7) / 8) return;
    unsigned int byte = 0;
    for (unsigned int t = 0; t < 8 && 8 * b + t < n; t++)
        byte |= (flags[8 * b + t] ? 1u : 0u) << t;
    bytes[b] = (unsigned char)byte;
}

// The inverse (planes::unpack_bits): flags[k] = bit k of the bitmap.
extern "C" __global__ void factz_f_unpack_flags(const unsigned char* bytes, fzf_u64 n,
                                                unsigned char* flags) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) flags[k] = (bytes[k / 8] >> (k % 8)) & 1u;
}

// Set bits among the first n_bits of a bitmap, per block (grid-stride over
// bytes; integer sums, any order): the exact vertices a mask holds.
extern "C" __global__ void factz_f_count_bits(const unsigned char* bytes, fzf_u64 n_bits,
                                              unsigned int* part) {
    __shared__ unsigned int sum[FZK_FIELD_REDUCE_BLOCK];
    unsigned int t = threadIdx.x, own = 0;
    for (fzf_u64 b = (fzf_u64)blockIdx.x * blockDim.x + t; b < (n_bits + 7) / 8;
         b += (fzf_u64)gridDim.x * blockDim.x) {
        unsigned int byte = bytes[b];
        if (8 * b + 8 > n_bits) byte &= (1u << (n_bits - 8 * b)) - 1u;
        own += (unsigned int)__popc(byte);
    }
    sum[t] = own;
    __syncthreads();
    for (unsigned int s = FZK_FIELD_REDUCE_BLOCK / 2; s > 0; s /= 2) {
        if (t < s) sum[t] += sum[t + s];
        __syncthreads();
    }
    if (t == 0) part[blockIdx.x] = sum[0];
}

// Byte sections as u32 symbols for the Huffman kernels (whose format is the
// same for bytes and words) and back.
extern "C" __global__ void factz_f_widen(const unsigned char* bytes, fzf_u64 n,
                                         unsigned int* out) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = bytes[k];
}
extern "C" __global__ void factz_f_narrow(const unsigned int* symbols, fzf_u64 n,
                                          unsigned char* out) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = (unsigned char)symbols[k];
}

// planes::to_planes as symbols: out[b n + k] = byte b of words[k].
extern "C" __global__ void factz_f_to_planes(const unsigned int* words, fzf_u64 n,
                                             unsigned int* out) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    unsigned int w = words[k];
    for (unsigned int b = 0; b < 4; b++) out[b * n + k] = (w >> (8 * b)) & 0xffu;
}

// planes::from_planes of 4 n byte symbols into n words.
extern "C" __global__ void factz_f_from_planes(const unsigned int* planes, fzf_u64 n,
                                               unsigned int* words) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    unsigned int w = 0;
    for (unsigned int b = 0; b < 4; b++) w |= (planes[b * n + k] & 0xffu) << (8 * b);
    words[k] = w;
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_f_range)
FZSHIM_EXPORT(factz_f_pack_flags)
FZSHIM_EXPORT(factz_f_unpack_flags)
FZSHIM_EXPORT(factz_f_count_bits)
FZSHIM_EXPORT(factz_f_widen)
FZSHIM_EXPORT(factz_f_narrow)
FZSHIM_EXPORT(factz_f_to_planes)
FZSHIM_EXPORT(factz_f_from_planes)
