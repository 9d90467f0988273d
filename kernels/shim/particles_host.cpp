// Host entry points for kernels/particles.cu compiled as C++ with the shim
// (tests/gpu_particles.rs calls them). Each runs the kernels in the sequence
// and with the launch shapes a GPU host runs them, reading back only what a GPU
// host reads back (scan totals, to size the next buffers).

#include <algorithm>
#include <cstdint>
#include <vector>

struct FzpGrid {
    unsigned long long nx, ny, nz;
    double lox, loy, loz;
    double sx, sy, sz;
    double period;
};

typedef unsigned long long u64;
typedef unsigned int u32;

extern "C" __global__ void factz_p_scan(const u64* in, u64 n, u64* out);
extern "C" __global__ void factz_p_bbox(const float* pos, u64 n, float* part);
extern "C" __global__ void factz_p_cell_keys(const float* pos, u64 n, FzpGrid g, u64* key, u64* finite);
extern "C" __global__ void factz_p_compact_finite(const u64* key, const u64* finite, const u64* slot,
                                                  u64 n, u64* key_out, u32* idx_out);
extern "C" __global__ void factz_p_radix_count(const u64* key, u64 m, u32 shift, u64* counts);
extern "C" __global__ void factz_p_radix_scatter(const u64* key, const u32* idx, u64 m, u32 shift,
                                                 const u64* offsets, u64* key_out, u32* idx_out);
extern "C" __global__ void factz_p_cell_heads(const u64* key, u64 m, u64* head);
extern "C" __global__ void factz_p_cells(const u64* key, const u64* head, const u64* slot, u64 m,
                                        u64* cell_key, u64* cell_start);
extern "C" __global__ void factz_p_cell_units(const u64* cell_key, const u64* cell_start, u64 ncell,
                                              FzpGrid g, u32* nb, u32* nb_count, u64* units);
extern "C" __global__ void factz_p_pair_count(const float* pos, const u32* order,
                                              const u64* cell_start, u64 ncell, const u32* nb,
                                              const u32* nb_count, const u64* unit_start,
                                              u64 nunits, double period, double lo2, double hi2,
                                              u64* count);
extern "C" __global__ void factz_p_pair_fill(const float* pos, const u32* order,
                                             const u64* cell_start, u64 ncell, const u32* nb,
                                             const u32* nb_count, const u64* unit_start,
                                             u64 nunits, double period, double lo2, double hi2,
                                             double b2, const u64* pair_start, u32* pi, u32* pj,
                                             unsigned char* plinked);
extern "C" __global__ void factz_p_edit_flags(const int* codes, const unsigned char* exact,
                                              u64 ncoord, u64* flag, u32* mask);
extern "C" __global__ void factz_p_edit_scatter(const int* codes, const u64* flag, const u64* slot,
                                                u64 ncoord, u64* coord_out, u32* zz_out);

namespace {

constexpr unsigned int kBlock = 256;
constexpr unsigned int kScanBlock = 256;

struct Launcher {
    fzshim::Mode mode;
    template <class... P, class... A>
    void operator()(u64 threads, void (*kernel)(P...), A... args) const {
        if (threads == 0) return;  // a GPU rejects an empty grid
        fzshim::launch(mode, dim3((unsigned int)((threads + kBlock - 1) / kBlock)), dim3(kBlock), kernel,
                       args...);
    }
    // Exclusive scan of in[0..n) into out[0..n]; returns the total.
    u64 scan(const u64* in, u64 n, u64* out) const {
        fzshim::launch(mode, dim3(1), dim3(kScanBlock), factz_p_scan, in, n, out);
        return out[n];
    }
};

// The grid: order (finite particles by cell, then index), occupied cell keys
// and starts, as Grid::build.
struct Bins {
    std::vector<u32> order;
    std::vector<u64> cell_key, cell_start;
};

Bins bin(const Launcher& run, const float* pos, u64 n, const FzpGrid& g) {
    std::vector<u64> key(n), finite(n), slot(n + 1);
    run(n, factz_p_cell_keys, pos, n, g, key.data(), finite.data());
    u64 m = run.scan(finite.data(), n, slot.data());
    std::vector<u64> k0(m), k1(m);
    std::vector<u32> i0(m), i1(m);
    run(n, factz_p_compact_finite, (const u64*)key.data(), (const u64*)finite.data(),
        (const u64*)slot.data(), n, k0.data(), i0.data());
    // Digits needed for the largest key, nx * ny * nz - 1 (< 2^62).
    u64 top = g.nx * g.ny * g.nz - 1;
    u32 bits = 0;
    while (bits < 64 && (top >> bits) != 0) bits++;
    u64 blocks = (m + kBlock - 1) / kBlock;
    std::vector<u64> counts(blocks * 256 + 1);
    for (u32 shift = 0; shift < bits && m > 0; shift += 8) {
        run(m, factz_p_radix_count, (const u64*)k0.data(), m, shift, counts.data());
        run.scan(counts.data(), blocks * 256, counts.data());
        run(m, factz_p_radix_scatter, (const u64*)k0.data(), (const u32*)i0.data(), m, shift,
            (const u64*)counts.data(), k1.data(), i1.data());
        k0.swap(k1);
        i0.swap(i1);
    }
    std::vector<u64> head(m), hslot(m + 1);
    run(m, factz_p_cell_heads, (const u64*)k0.data(), m, head.data());
    u64 ncell = run.scan(head.data(), m, hslot.data());
    Bins out;
    out.cell_key.assign(ncell, 0);
    out.cell_start.assign(ncell + 1, 0);
    run(m, factz_p_cells, (const u64*)k0.data(), (const u64*)head.data(), (const u64*)hslot.data(), m,
        out.cell_key.data(), out.cell_start.data());
    out.order = std::move(i0);
    return out;
}

Launcher launcher(int os_threads) {
    return Launcher{os_threads ? fzshim::Mode::Threads : fzshim::Mode::Fibers};
}

}  // namespace

// os_threads = 0 runs each block's threads as fibers, 1 as std::threads (see
// cuda_host.hpp). Returns the number of finite particles m (order[0..m]) and
// sets *ncell (cell_key[0..ncell], cell_start[0..=ncell]); the caller's
// buffers hold n, n and n + 1 entries. -1 when a launch failed.
extern "C" long long factz_host_p_bin(const float* pos, u64 n, const FzpGrid* g, u32* order,
                                      u64* cell_key, u64* cell_start, u64* ncell, int os_threads) {
    try {
        Bins b = bin(launcher(os_threads), pos, n, *g);
        std::copy(b.order.begin(), b.order.end(), order);
        std::copy(b.cell_key.begin(), b.cell_key.end(), cell_key);
        std::copy(b.cell_start.begin(), b.cell_start.end(), cell_start);
        *ncell = b.cell_key.size();
        return (long long)b.order.size();
    } catch (...) {
        return -1;
    }
}

// The vulnerable pairs (window [lo2, hi2], linked iff d2 <= b2) of the grid
// `g`: returns their number and, when it is at most `cap`, writes them in the
// CPU's order. -1 when a launch failed.
extern "C" long long factz_host_p_vulnerable(const float* pos, u64 n, const FzpGrid* g, double lo2,
                                             double hi2, double b2, u32* pi, u32* pj,
                                             unsigned char* plinked, u64 cap, int os_threads) {
    try {
        Launcher run = launcher(os_threads);
        Bins b = bin(run, pos, n, *g);
        u64 ncell = b.cell_key.size();
        std::vector<u32> nb(ncell * 26), nb_count(ncell);
        std::vector<u64> unit_start(ncell + 1);
        run(ncell, factz_p_cell_units, (const u64*)b.cell_key.data(), (const u64*)b.cell_start.data(),
            ncell, *g, nb.data(), nb_count.data(), unit_start.data());
        u64 nunits = run.scan(unit_start.data(), ncell, unit_start.data());
        std::vector<u64> pair_start(nunits + 1);
        run(nunits, factz_p_pair_count, pos, (const u32*)b.order.data(), (const u64*)b.cell_start.data(),
            ncell, (const u32*)nb.data(), (const u32*)nb_count.data(), (const u64*)unit_start.data(),
            nunits, g->period, lo2, hi2, pair_start.data());
        u64 total = run.scan(pair_start.data(), nunits, pair_start.data());
        if (total <= cap)
            run(nunits, factz_p_pair_fill, pos, (const u32*)b.order.data(),
                (const u64*)b.cell_start.data(), ncell, (const u32*)nb.data(),
                (const u32*)nb_count.data(), (const u64*)unit_start.data(), nunits, g->period, lo2, hi2,
                b2, (const u64*)pair_start.data(), pi, pj, plinked);
        return (long long)total;
    } catch (...) {
        return -1;
    }
}

// Edit compaction over n particles' per-coordinate codes (INT32_MIN = none)
// and exact flags: writes the kept edits (coordinate, zig-zag code) in
// coordinate order (buffers of 3n) and the mask words (ceil(3n / 32)); returns
// their number, -1 when a launch failed.
extern "C" long long factz_host_p_edits(const int* codes, const unsigned char* exact, u64 n,
                                        u64* coord_out, u32* zz_out, u32* mask, int os_threads) {
    try {
        Launcher run = launcher(os_threads);
        u64 ncoord = 3 * n;
        std::vector<u64> flag(ncoord), slot(ncoord + 1);
        // Whole warps over every mask word.
        run((ncoord + 31) / 32 * 32, factz_p_edit_flags, codes, exact, ncoord, flag.data(), mask);
        u64 kept = run.scan(flag.data(), ncoord, slot.data());
        run(ncoord, factz_p_edit_scatter, codes, (const u64*)flag.data(), (const u64*)slot.data(), ncoord,
            coord_out, zz_out);
        return (long long)kept;
    } catch (...) {
        return -1;
    }
}

// The finite particles' bounding box: box = lo x, y, z, hi x, y, z. Returns 1,
// 0 when no particle is finite (box untouched), -1 when a launch failed.
extern "C" int factz_host_p_bbox(const float* pos, u64 n, float* box, int os_threads) {
    try {
        Launcher run = launcher(os_threads);
        u64 blocks = (n + kBlock - 1) / kBlock;
        std::vector<float> part(6 * blocks);
        run(n, factz_p_bbox, pos, n, part.data());
        bool any = false;
        for (u64 b = 0; b < blocks; b++) {
            const float* p = &part[6 * b];
            if (!(p[0] <= p[3])) continue;  // no finite particle in this block
            for (int a = 0; a < 3; a++) {
                if (!any || p[a] < box[a]) box[a] = p[a];
                if (!any || p[3 + a] > box[3 + a]) box[3 + a] = p[3 + a];
            }
            any = true;
        }
        return any ? 1 : 0;
    } catch (...) {
        return -1;
    }
}
