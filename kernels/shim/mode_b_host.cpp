// Host entry point for kernels/mode_b_bounds.cu compiled as C++ with the shim
// (tests/gpu_kernels.rs builds both into one shared library and calls this).
// Launches the kernel with the grid and block shape the GPU runtime uses.

extern "C" __global__ void factz_b_bound_ids(const float* u, const float* v, long long ny,
                                             long long nx, double xi, int chunk_of_larger,
                                             unsigned char* vertex_ids, unsigned char* tile_ids,
                                             unsigned int* forced_mask, unsigned int* exact_mask);

// os_threads = 0 runs each block's threads as fibers, 1 as std::threads (see
// cuda_host.hpp). Returns 0, or 1 when the launch failed.
extern "C" int factz_host_b_bound_ids(const float* u, const float* v, long long ny, long long nx,
                                      double xi, int chunk_of_larger, unsigned char* vertex_ids,
                                      unsigned char* tile_ids, unsigned int* forced_mask,
                                      unsigned int* exact_mask, int os_threads) {
    try {
        dim3 grid((unsigned int)((nx + 31) / 32), (unsigned int)((ny + 31) / 32));
        fzshim::Mode mode = os_threads ? fzshim::Mode::Threads : fzshim::Mode::Fibers;
        fzshim::launch(mode, grid, dim3(32, 8), factz_b_bound_ids, u, v, ny, nx, xi, chunk_of_larger,
                       vertex_ids, tile_ids, forced_mask, exact_mask);
        return 0;
    } catch (...) {
        return 1;
    }
}
