// Host entry points for kernels/huffman.cu compiled as C++ with the shim
// (tests/gpu_huffman.rs calls them): the launch sequences a GPU runtime uses,
// host buffers standing in for device memory.

#include <vector>

typedef unsigned long long fzh_u64;

extern "C" __global__ void factz_h_max(const unsigned int* symbols, fzh_u64 n, unsigned int* max);
extern "C" __global__ void factz_h_histogram(const unsigned int* symbols, fzh_u64 n, unsigned int bins,
                                             unsigned int* partial, unsigned int* bad);
extern "C" __global__ void factz_h_merge(const unsigned int* partial, unsigned int blocks, unsigned int bins,
                                         fzh_u64* counts);
extern "C" __global__ void factz_h_histogram_global(const unsigned int* symbols, fzh_u64 n,
                                                    unsigned int bins, unsigned int* counts,
                                                    unsigned int* bad);
extern "C" __global__ void factz_h_block_bits(const unsigned int* symbols, fzh_u64 n, unsigned int block_log2,
                                              const fzh_u64* lut, fzh_u64 lut_size, fzh_u64* bits,
                                              unsigned int* bad);
extern "C" __global__ void factz_h_offsets(const fzh_u64* bits, fzh_u64 blocks, fzh_u64* word_off,
                                           fzh_u64* byte_off);
extern "C" __global__ void factz_h_pack(const unsigned int* symbols, fzh_u64 n, unsigned int block_log2,
                                        const fzh_u64* lut, fzh_u64 lut_size, const fzh_u64* word_off,
                                        unsigned int* words, unsigned int* bad);
extern "C" __global__ void factz_h_gather(const unsigned int* words, const fzh_u64* word_off,
                                          const fzh_u64* byte_off, unsigned char* out);
extern "C" __global__ void factz_h_decode(const unsigned char* payload, const fzh_u64* byte_off,
                                          fzh_u64 blocks, fzh_u64 count, unsigned int block_log2,
                                          const fzh_u64* limit, const fzh_u64* first,
                                          const fzh_u64* offset, const unsigned int* sorted,
                                          fzh_u64 n_sorted, unsigned int max_len, unsigned int* out,
                                          unsigned int* status);

namespace {

constexpr unsigned int kThreads = 256;      // FZH_THREADS
constexpr unsigned int kSharedBins = 4096;  // FZH_SHARED_BINS

fzshim::Mode mode_of(int os_threads) { return os_threads ? fzshim::Mode::Threads : fzshim::Mode::Fibers; }

// Enough blocks that several take part, few enough for the host.
unsigned int count_grid(fzh_u64 n) {
    fzh_u64 g = (n + 16 * kThreads - 1) / (16 * kThreads);
    return (unsigned int)(g < 1 ? 1 : g > 64 ? 64 : g);
}

}  // namespace

// *max = the largest symbol (0 for none). Returns 0, or 1 when a launch failed.
extern "C" int factz_host_h_max(const unsigned int* symbols, fzh_u64 n, unsigned int* max, int os_threads) {
    try {
        *max = 0;
        fzshim::launch(mode_of(os_threads), dim3(count_grid(n)), dim3(kThreads), factz_h_max, symbols, n, max);
        return 0;
    } catch (...) {
        return 1;
    }
}

// counts[0..bins) = occurrences of each symbol < bins (bins = max + 1 from
// factz_host_h_max): shared histograms per block and a merge for bins up to
// 4096, global atomics above. Returns 0, 1 when a launch failed, 2 when a
// symbol was >= bins or n >= 2^32 with wide bins.
extern "C" int factz_host_h_count(const unsigned int* symbols, fzh_u64 n, unsigned int bins, fzh_u64* counts,
                                  int os_threads) {
    try {
        fzshim::Mode m = mode_of(os_threads);
        unsigned int bad = 0, grid = count_grid(n);
        if (bins <= kSharedBins) {
            std::vector<unsigned int> partial((size_t)grid * bins);
            fzshim::launch(m, dim3(grid), dim3(kThreads), factz_h_histogram, symbols, n, bins, partial.data(),
                           &bad);
            fzshim::launch(m, dim3((bins + kThreads - 1) / kThreads), dim3(kThreads), factz_h_merge,
                           (const unsigned int*)partial.data(), grid, bins, counts);
        } else {
            if (n >> 32) return 2;
            std::vector<unsigned int> c(bins, 0);
            fzshim::launch(m, dim3(grid), dim3(kThreads), factz_h_histogram_global, symbols, n, bins, c.data(),
                           &bad);
            for (unsigned int s = 0; s < bins; s++) counts[s] = c[s];
        }
        return bad ? 2 : 0;
    } catch (...) {
        return 1;
    }
}

// Packs n symbols in blocks of 1 << block_log2 with lut (symbol -> reversed
// code | length << 32, lut_size entries): block_bytes[b] for each of the
// ceil(n / block) blocks, payload (room for n * 4 + 4 bytes) the blocks'
// bytes concatenated, *payload_len their total. Returns 0, 1 when a launch
// failed, 2 when a symbol had no code.
extern "C" int factz_host_h_encode(const unsigned int* symbols, fzh_u64 n, unsigned int block_log2,
                                   const fzh_u64* lut, fzh_u64 lut_size, fzh_u64* block_bytes,
                                   unsigned char* payload, fzh_u64* payload_len, int os_threads) {
    try {
        fzshim::Mode m = mode_of(os_threads);
        fzh_u64 blocks = (n + ((fzh_u64)1 << block_log2) - 1) >> block_log2;
        *payload_len = 0;
        if (blocks == 0) return 0;
        unsigned int bad = 0;
        std::vector<fzh_u64> bits(blocks), word_off(blocks + 1), byte_off(blocks + 1);
        fzshim::launch(m, dim3((unsigned int)blocks), dim3(kThreads), factz_h_block_bits, symbols, n, block_log2,
                       lut, lut_size, bits.data(), &bad);
        fzshim::launch(m, dim3(1), dim3(32), factz_h_offsets, (const fzh_u64*)bits.data(), blocks,
                       word_off.data(), byte_off.data());
        std::vector<unsigned int> words(word_off[blocks], 0);
        fzshim::launch(m, dim3((unsigned int)blocks), dim3(kThreads), factz_h_pack, symbols, n, block_log2, lut,
                       lut_size, (const fzh_u64*)word_off.data(), words.data(), &bad);
        fzshim::launch(m, dim3(4, (unsigned int)blocks), dim3(kThreads), factz_h_gather,
                       (const unsigned int*)words.data(), (const fzh_u64*)word_off.data(),
                       (const fzh_u64*)byte_off.data(), payload);
        for (fzh_u64 b = 0; b < blocks; b++) block_bytes[b] = byte_off[b + 1] - byte_off[b];
        *payload_len = byte_off[blocks];
        return bad ? 2 : 0;
    } catch (...) {
        return 1;
    }
}

// Decodes count symbols from blocks whose bytes are payload[byte_off[b] ..
// byte_off[b + 1]] (blocks + 1 offsets) with DecodeTable's arrays; status[b]
// gets each block's FZH_* status. Returns 0, or 1 when a launch failed.
extern "C" int factz_host_h_decode(const unsigned char* payload, const fzh_u64* byte_off, fzh_u64 blocks,
                                   fzh_u64 count, unsigned int block_log2, const fzh_u64* limit,
                                   const fzh_u64* first, const fzh_u64* offset, const unsigned int* sorted,
                                   fzh_u64 n_sorted, unsigned int max_len, unsigned int* out,
                                   unsigned int* status, int os_threads) {
    try {
        if (blocks == 0) return 0;
        fzshim::launch(mode_of(os_threads), dim3((unsigned int)((blocks + 31) / 32)), dim3(32), factz_h_decode,
                       payload, byte_off, blocks, count, block_log2, limit, first, offset, sorted, n_sorted,
                       max_len, out, status);
        return 0;
    } catch (...) {
        return 1;
    }
}
