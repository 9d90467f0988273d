// Host entry points for kernels/mode_b_codec.cu compiled as C++ with the shim
// (tests/gpu_mode_b_codec.rs calls them): the whole mode B pipeline, bound
// derivation (kernels/mode_b_bounds.cu) included, launched with the grid and
// block shapes a GPU runtime uses, buffers standing in for device memory.

#include <vector>

extern "C" __global__ void factz_b_bound_ids(const float* u, const float* v, long long ny,
                                             long long nx, double xi, int chunk_of_larger,
                                             unsigned char* vertex_ids, unsigned char* tile_ids,
                                             unsigned int* forced_mask, unsigned int* exact_mask);
extern "C" __global__ void factz_b_encode(const float* u, const float* v, long long ny, long long nx,
                                          double xi, const unsigned char* vertex_ids,
                                          const unsigned char* tile_ids, unsigned int* ids,
                                          unsigned int* exact_mask, unsigned int* vertex_codes,
                                          unsigned int* tile_exact);
extern "C" __global__ void factz_b_mask_counts(const unsigned int* exact_mask, long long ny,
                                               long long nx, unsigned int* tile_exact);
extern "C" __global__ void factz_b_scan(const unsigned int* counts, long long n,
                                        unsigned long long* offsets);
extern "C" __global__ void factz_b_compact(const float* u, const float* v, long long ny, long long nx,
                                           const unsigned int* exact_mask,
                                           const unsigned int* vertex_codes,
                                           const unsigned long long* tile_offsets, unsigned int* raw,
                                           unsigned int* codes);
extern "C" __global__ void factz_b_decode(long long ny, long long nx, double xi,
                                          const unsigned int* ids, const unsigned int* exact_mask,
                                          const unsigned int* raw, const unsigned int* codes,
                                          const unsigned long long* tile_offsets, float* u, float* v);

namespace {

// The codec kernels' shapes: 4 tiles (warps) per block, one block for the scan.
constexpr unsigned int kTilesPerBlock = 4;
constexpr unsigned int kScanThreads = 256;

long long tiles_across(long long n) { return (n + 31) / 32; }

dim3 tile_grid(long long tiles) {
    return dim3((unsigned int)((tiles + kTilesPerBlock - 1) / kTilesPerBlock));
}

fzshim::Mode mode_of(int os_threads) {
    return os_threads ? fzshim::Mode::Threads : fzshim::Mode::Fibers;
}

}  // namespace

// blockwise::encode through the kernels. ids: 2 per tile; exact_mask: ny *
// tiles_x words; raw and codes: room for 2 ny nx words each; *n_raw and
// *n_codes get the words written. Returns 0, or 1 when a launch failed.
extern "C" int factz_host_b_encode(const float* u, const float* v, long long ny, long long nx,
                                   double xi, int chunk_of_larger, unsigned int* ids,
                                   unsigned int* exact_mask, unsigned int* raw, unsigned int* codes,
                                   long long* n_raw, long long* n_codes, int os_threads) {
    try {
        long long tx = tiles_across(nx), ty = tiles_across(ny), tiles = tx * ty, n = ny * nx;
        std::vector<unsigned char> vertex_ids(2 * n), tile_ids(2 * tiles);
        std::vector<unsigned int> forced_mask(ny * tx), bound_exact(ny * tx), vertex_codes(2 * n),
            tile_exact(tiles);
        std::vector<unsigned long long> offsets(tiles + 1);
        fzshim::Mode mode = mode_of(os_threads);
        fzshim::launch(mode, dim3((unsigned int)tx, (unsigned int)ty), dim3(32, 8), factz_b_bound_ids,
                       u, v, ny, nx, xi, chunk_of_larger, vertex_ids.data(), tile_ids.data(),
                       forced_mask.data(), bound_exact.data());
        fzshim::launch(mode, tile_grid(tiles), dim3(32, kTilesPerBlock), factz_b_encode, u, v, ny, nx,
                       xi, (const unsigned char*)vertex_ids.data(),
                       (const unsigned char*)tile_ids.data(), ids, exact_mask, vertex_codes.data(),
                       tile_exact.data());
        fzshim::launch(mode, dim3(1), dim3(kScanThreads), factz_b_scan,
                       (const unsigned int*)tile_exact.data(), tiles, offsets.data());
        fzshim::launch(mode, tile_grid(tiles), dim3(32, kTilesPerBlock), factz_b_compact, u, v, ny, nx,
                       (const unsigned int*)exact_mask, (const unsigned int*)vertex_codes.data(),
                       (const unsigned long long*)offsets.data(), raw, codes);
        *n_raw = 2 * (long long)offsets[tiles];
        *n_codes = 2 * (n - (long long)offsets[tiles]);
        return 0;
    } catch (...) {
        return 1;
    }
}

// blockwise::decode through the kernels, with its checks first: returns 2
// (corrupt) when an id is out of range or raw / codes do not hold exactly
// what the mask implies, 1 when a launch failed, else 0 with u and v written.
extern "C" int factz_host_b_decode(long long ny, long long nx, double xi, const unsigned int* ids,
                                   const unsigned int* exact_mask, const unsigned int* raw,
                                   long long n_raw, const unsigned int* codes, long long n_codes,
                                   float* u, float* v, int os_threads) {
    try {
        long long tx = tiles_across(nx), ty = tiles_across(ny), tiles = tx * ty, n = ny * nx;
        for (long long k = 0; k < 2 * tiles; k++)
            if (ids[k] >= 24) return 2;
        std::vector<unsigned int> tile_exact(tiles);
        std::vector<unsigned long long> offsets(tiles + 1);
        fzshim::Mode mode = mode_of(os_threads);
        fzshim::launch(mode, dim3((unsigned int)((tiles + 127) / 128)), dim3(128), factz_b_mask_counts,
                       exact_mask, ny, nx, tile_exact.data());
        fzshim::launch(mode, dim3(1), dim3(kScanThreads), factz_b_scan,
                       (const unsigned int*)tile_exact.data(), tiles, offsets.data());
        long long exact = (long long)offsets[tiles];
        if (2 * exact != n_raw || 2 * (n - exact) != n_codes) return 2;
        fzshim::launch(mode, tile_grid(tiles), dim3(32, kTilesPerBlock), factz_b_decode, ny, nx, xi,
                       ids, exact_mask, raw, codes, (const unsigned long long*)offsets.data(), u, v);
        return 0;
    } catch (...) {
        return 1;
    }
}
