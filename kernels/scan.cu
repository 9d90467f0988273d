// Exclusive prefix sums across the whole grid (src/gpu/scan.rs drives them):
// `out[k] = in[0] + .. + in[k-1]` for k = 0..=n, so out[n] is the total, for
// any n, with every block busy (the one-block scans they replace ran on one
// SM). Three launches of FZK_SCAN_BLOCK threads:
//
//   factz_scan_sums_*   block b sums its FZSCAN_ITEMS inputs into sums[b]
//   factz_scan_carry    one block turns sums[0..blocks) into the blocks'
//                       exclusive offsets, in place
//   factz_scan_apply_*  block b scans its inputs from offset sums[b]
//
// Integer sums, so the result does not depend on the order. Inputs are u32
// (per-tile counts, flags) or u64 (the particle scans, which may scan in
// place: each input is read and written by one thread, after the sums).
// Names carry fzscan_ / FZSCAN_: every kernels/*.cu links into one host library.

#define FZSCAN_ITEMS (FZK_SCAN_BLOCK * FZK_SCAN_PER_THREAD)

typedef unsigned long long fzscan_u64;

// Exclusive scan of one value per thread over the block; *total gets the sum.
__device__ fzscan_u64 fzscan_block_exclusive(fzscan_u64 x, fzscan_u64* total) {
    __shared__ fzscan_u64 buf[FZK_SCAN_BLOCK];
    unsigned int t = threadIdx.x;
    buf[t] = x;
    __syncthreads();
    for (unsigned int off = 1; off < FZK_SCAN_BLOCK; off <<= 1) {
        fzscan_u64 add = t >= off ? buf[t - off] : 0;
        __syncthreads();
        buf[t] += add;
        __syncthreads();
    }
    fzscan_u64 inclusive = buf[t];
    *total = buf[FZK_SCAN_BLOCK - 1];
    __syncthreads();  // every thread has read buf before the next call
    return inclusive - x;
}

// Thread t of block b holds items FZSCAN_ITEMS b + FZK_SCAN_PER_THREAD t .. + FZK_SCAN_PER_THREAD.
#define FZSCAN_KERNELS(SUFFIX, T)                                                     \
    extern "C" __global__ void factz_scan_sums_##SUFFIX(const T* in, fzscan_u64 n,    \
                                                        fzscan_u64* sums) {          \
        fzscan_u64 a = (fzscan_u64)blockIdx.x * FZSCAN_ITEMS + FZK_SCAN_PER_THREAD * threadIdx.x;       \
        fzscan_u64 own = 0;                                                           \
        for (fzscan_u64 k = a; k < a + FZK_SCAN_PER_THREAD && k < n; k++) own += in[k];           \
        fzscan_u64 total;                                                             \
        fzscan_block_exclusive(own, &total);                                          \
        if (threadIdx.x == 0) sums[blockIdx.x] = total;                            \
    }                                                                              \
    extern "C" __global__ void factz_scan_apply_##SUFFIX(                          \
        const T* in, fzscan_u64 n, const fzscan_u64* sums, fzscan_u64* out) {               \
        fzscan_u64 a = (fzscan_u64)blockIdx.x * FZSCAN_ITEMS + FZK_SCAN_PER_THREAD * threadIdx.x;       \
        T x[FZK_SCAN_PER_THREAD];                                                              \
        fzscan_u64 own = 0;                                                           \
        for (unsigned int i = 0; i < FZK_SCAN_PER_THREAD; i++) {                               \
            x[i] = a + i < n ? in[a + i] : 0;                                      \
            own += x[i];                                                           \
        }                                                                          \
        fzscan_u64 total;                                                             \
        fzscan_u64 run = sums[blockIdx.x] + fzscan_block_exclusive(own, &total);         \
        for (unsigned int i = 0; i < FZK_SCAN_PER_THREAD && a + i < n; i++) {                  \
            out[a + i] = run;                                                      \
            run += x[i];                                                           \
        }                                                                          \
        if (a < n && n <= a + FZK_SCAN_PER_THREAD) out[n] = run;                               \
    }

FZSCAN_KERNELS(u32, unsigned int)
FZSCAN_KERNELS(u64, fzscan_u64)

// One block: sums[0..blocks) -> their exclusive scan, in place.
extern "C" __global__ void factz_scan_carry(fzscan_u64* sums, fzscan_u64 blocks) {
    if (blockIdx.x != 0) return;
    fzscan_u64 base = 0;
    for (fzscan_u64 c0 = 0; c0 < blocks; c0 += FZK_SCAN_BLOCK) {
        fzscan_u64 k = c0 + threadIdx.x;
        fzscan_u64 own = k < blocks ? sums[k] : 0;
        fzscan_u64 total;
        fzscan_u64 before = fzscan_block_exclusive(own, &total);
        if (k < blocks) sums[k] = base + before;
        base += total;
    }
}

#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_scan_sums_u32)
FZSHIM_EXPORT(factz_scan_apply_u32)
FZSHIM_EXPORT(factz_scan_sums_u64)
FZSHIM_EXPORT(factz_scan_apply_u64)
FZSHIM_EXPORT(factz_scan_carry)
