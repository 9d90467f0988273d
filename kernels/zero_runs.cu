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
//
// Placing them back (the runs' sums by the grid scan, checked on the host to
// add up to the segment with the values):
//   factz_z_fill    out = 0
//   factz_z_place   out[sums[j + 1] + j] = values[j]: nonzero j follows the
//                   runs up to its own and the j values before it
//
// Names carry fzz_ / FZZ_: every kernels/*.cu links into one host library.

typedef unsigned long long fzz_u64;

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

extern "C" __global__ void factz_z_fill(unsigned int* out, fzz_u64 n) {
    for (fzz_u64 i = (fzz_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (fzz_u64)gridDim.x * blockDim.x)
        out[i] = 0;
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
FZSHIM_EXPORT(factz_z_fill)
FZSHIM_EXPORT(factz_z_place)
