// Whole-field steps of the GPU field pipeline (src/gpu/field_reduce.rs), so
// the field never has to come back to the host:
//
// - factz_f_range: the finite values' min and max over u and v, per block
//   (field::finite_range; min and max are exact, so any order gives the same
//   values, up to the sign of a zero, which field::bound_for_range ignores);
// - factz_f_exact_flags + factz_p_scan (kernels/particles.cu) +
//   factz_f_exact_gather: the (u, v) bits of the exact vertices in index
//   order, for mode S's Parts (field::gpu_ref_s::assemble_raw).
//
// No #include: NVRTC compiles it headerless; the host build force-includes
// kernels/shim/cuda_host.hpp.

typedef unsigned long long fzf_u64;

// Threads per block of factz_f_range (its shared arrays hold a block).
#define FZF_BLOCK 256

__device__ __forceinline__ bool fzf_finite(float x) {
    return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

// part[2 b] = min, part[2 b + 1] = max of block b's finite values (grid-stride
// over vertices, both components); +inf / -inf where it has none. blockDim
// must be FZF_BLOCK.
extern "C" __global__ void factz_f_range(const float* u, const float* v, fzf_u64 n, float* part) {
    __shared__ float lo[FZF_BLOCK], hi[FZF_BLOCK];
    float l = __uint_as_float(0x7f800000u), h = __uint_as_float(0xff800000u);
    for (fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (fzf_u64)gridDim.x * blockDim.x) {
        float a = u[k], b = v[k];
        if (fzf_finite(a)) {
            l = a < l ? a : l;
            h = a > h ? a : h;
        }
        if (fzf_finite(b)) {
            l = b < l ? b : l;
            h = b > h ? b : h;
        }
    }
    unsigned int t = threadIdx.x;
    lo[t] = l;
    hi[t] = h;
    __syncthreads();
    for (unsigned int s = FZF_BLOCK / 2; s > 0; s /= 2) {
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

// flag[k] = 1 where vertex k is stored exactly.
extern "C" __global__ void factz_f_exact_flags(const unsigned char* exact, fzf_u64 n, fzf_u64* flag) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) flag[k] = exact[k] ? 1 : 0;
}

// raw[2 slot[k]], raw[2 slot[k] + 1] = the bits of u[k], v[k] for each exact
// vertex k (slot: the exclusive scan of the flags).
extern "C" __global__ void factz_f_exact_gather(const float* u, const float* v,
                                                const unsigned char* exact, const fzf_u64* slot,
                                                fzf_u64 n, unsigned int* raw) {
    fzf_u64 k = (fzf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n || !exact[k]) return;
    raw[2 * slot[k]] = __float_as_uint(u[k]);
    raw[2 * slot[k] + 1] = __float_as_uint(v[k]);
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_f_range)
FZSHIM_EXPORT(factz_f_exact_flags)
FZSHIM_EXPORT(factz_f_exact_gather)
