// The particle correction's data-parallel parts on the GPU: the cell grid
// (binning), the vulnerable-pair search, and the edit compaction.
//
// The CPU reference is src/particles/: geometry.rs (the link rule), grid.rs
// (`Grid::build`, `Grid::pairs`), vulnerable.rs (`pairs`) and correct.rs /
// stream.rs (the edits). Every output equals the CPU's bit for bit and in the
// CPU's order, so a GPU correction can build on it:
//
// - Binning. Each finite particle gets grid.rs's cell key (same f64 arithmetic
//   as `Grid::axis_cell` / `cell_of`). The finite particles are compacted in
//   index order (flag + exclusive scan + scatter), then sorted by key with a
//   least-significant-digit radix sort: per pass, per-block digit counts by
//   shared atomics, an exclusive scan of the (digit, block) counts, and a
//   scatter where each thread's rank among its block's equal digits is counted,
//   not taken from an atomic, so the sort is stable and the result never
//   depends on timing: within a cell, ascending particle index, exactly the
//   CPU's `order`. Only occupied cells exist (keys can reach 2^62), as on the
//   CPU: cell starts come from a flag + scan over the sorted keys.
// - Pairs. The CPU visits, per occupied cell c in key order, the pairs inside c
//   (row by row) and then, per occupied forward neighbour d in key order, for
//   each j in d every i in c. Cut into "units" whose pairs are contiguous in
//   that order (a row inside c, or one particle j of a neighbour against all of
//   c), the search is two passes over units: count, exclusive scan, fill; each
//   unit writes its own range in the CPU's order, buffered in registers.
// - Edits: flag (code present and particle not exact) + scan + scatter of
//   (coordinate, zig-zag code), and the coordinate mask packed LSB first by
//   warp ballots (one 32-bit word per warp = four bytes of `pack_bits`).
//
// Distances: f64 differences of f32 coordinates, minimum image
// `d - L * round(d / L)`, summed x, y, z with no contraction (--fmad=false).
//
// No #include (NVRTC compiles it headerless; the host build force-includes
// kernels/shim/cuda_host.hpp).

typedef unsigned long long fzp_u64;
typedef unsigned int fzp_u32;

// Any block of a multiple of 32 threads up to 1024 works here (the driver
// picks one); scans: kernels/scan.cu. Radix digits (FZK_RADIX_DIGITS), the
// forward-neighbour slots (FZK_MAX_NEIGHBOURS), Adam's constants and the
// loss block come from Rust, in the prelude.
// Pairs a fill thread holds before writing them out.
#define FZP_BUF 8
#define FZP_NONE 0xffffffffu

__device__ __forceinline__ fzp_u64 fzp_tid() {
    return (fzp_u64)blockIdx.x * blockDim.x + threadIdx.x;
}

// The grid's geometry as grid.rs computed it (`Grid::dims`, `lo`, `scale`);
// `period` > 0 for a periodic box, 0 for an open one. Kernels take it by
// pointer (a one-element buffer), as every argument of src/gpu/exec.rs.
struct FzpGrid {
    fzp_u64 nx, ny, nz;
    double lox, loy, loz;
    double sx, sy, sz;
    double period;
};

// f64::rem_euclid: `r = a % b; if r < 0 { r + |b| } else { r }` (fmod is exact).
__device__ __forceinline__ double fzp_rem_euclid(double a, double b) {
    double r = fmod(a, b);
    return r < 0.0 ? r + fabs(b) : r;
}

// Grid::axis_cell: `floor(t * scale)`, clamped to 0 .. dims - 1 (Rust's
// saturating float-to-int cast; NaN goes to 0).
__device__ fzp_u64 fzp_axis_cell(float x, double lo, double scale, fzp_u64 dims, double period) {
    double t = period > 0.0 ? fzp_rem_euclid((double)x, period) : (double)x - lo;
    double c = floor(t * scale);
    if (!(c >= 0.0)) return 0;
    // dims <= u32::MAX, so dims - 1 is exact in f64.
    double top = (double)(dims - 1);
    return c >= top ? dims - 1 : (fzp_u64)c;
}

// Grid::cell_of.
__device__ fzp_u64 fzp_cell_of(const float* p, const FzpGrid& g) {
    fzp_u64 cx = fzp_axis_cell(p[0], g.lox, g.sx, g.nx, g.period);
    fzp_u64 cy = fzp_axis_cell(p[1], g.loy, g.sy, g.ny, g.period);
    fzp_u64 cz = fzp_axis_cell(p[2], g.loz, g.sz, g.nz, g.period);
    return (cz * g.ny + cy) * g.nx + cx;
}

// f64::round (half away from zero). CUDA's round() uses a round-toward-zero
// add inside; this keeps every add and mul round-to-nearest: x - trunc(x) is
// exact (the fraction of a double is a double), and so is t +- 1 wherever x
// has a fraction (|x| < 2^52). NaN and infinities come back unchanged.
__device__ __forceinline__ double fzp_round(double x) {
    double t = trunc(x);
    if (fabs(x - t) >= 0.5) t = x < 0.0 ? t - 1.0 : t + 1.0;
    return t;
}

// Space::delta.
__device__ __forceinline__ double fzp_delta(float a, float b, double period) {
    double d = (double)a - (double)b;
    if (period > 0.0) d = d - period * fzp_round(d / period);
    return d;
}

// Space::dist2: x, then y, then z.
__device__ double fzp_dist2(const float* a, const float* b, double period) {
    double dx = fzp_delta(a[0], b[0], period);
    double dy = fzp_delta(a[1], b[1], period);
    double dz = fzp_delta(a[2], b[2], period);
    return dx * dx + dy * dy + dz * dz;
}

// ------------------------------------------------------------ binning

// The finite particles' bounding box (geometry.rs `bounding_box`), per block:
// part[6 * block ..] = lo x, y, z, hi x, y, z, or +inf / -inf where the block
// has no finite particle. Min and max are exact, so any reduction order gives
// the CPU's box; the host folds the blocks' boxes. blockDim: a power of two.
extern "C" __global__ void factz_p_bbox(const float* pos, fzp_u64 n, float* part) {
    __shared__ float box[6][1024];
    fzp_u64 k = fzp_tid();
    fzp_u32 t = threadIdx.x;
    const float inf = __uint_as_float(0x7f800000u);
    bool f = false;
    if (k < n) {
        const float* p = pos + 3 * k;
        f = fzk_finite32(p[0]) && fzk_finite32(p[1]) && fzk_finite32(p[2]);
    }
    for (int a = 0; a < 3; a++) {
        box[a][t] = f ? pos[3 * k + a] : inf;
        box[3 + a][t] = f ? pos[3 * k + a] : -inf;
    }
    __syncthreads();
    for (fzp_u32 s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s)
            for (int a = 0; a < 3; a++) {
                float lo = box[a][t + s], hi = box[3 + a][t + s];
                if (lo < box[a][t]) box[a][t] = lo;
                if (hi > box[3 + a][t]) box[3 + a][t] = hi;
            }
        __syncthreads();
    }
    if (t < 6) part[6 * (fzp_u64)blockIdx.x + t] = box[t][0];
}

// Per particle: its cell key and whether it is finite (the CPU grids finite
// particles only).
extern "C" __global__ void factz_p_cell_keys(const float* pos, fzp_u64 n, const FzpGrid* grid,
                                             fzp_u64* key, fzp_u64* finite) {
    fzp_u64 k = fzp_tid();
    if (k >= n) return;
    FzpGrid g = *grid;
    const float* p = pos + 3 * k;
    bool f = fzk_finite32(p[0]) && fzk_finite32(p[1]) && fzk_finite32(p[2]);
    finite[k] = f ? 1 : 0;
    key[k] = f ? fzp_cell_of(p, g) : 0;
}

// The finite particles in index order: (key, index) at their scanned slot.
extern "C" __global__ void factz_p_compact_finite(const fzp_u64* key, const fzp_u64* finite,
                                                  const fzp_u64* slot, fzp_u64 n, fzp_u64* key_out,
                                                  fzp_u32* idx_out) {
    fzp_u64 k = fzp_tid();
    if (k >= n || !finite[k]) return;
    key_out[slot[k]] = key[k];
    idx_out[slot[k]] = (fzp_u32)k;
}

// One radix pass, counting: counts[digit * gridDim.x + block] for the digit at
// `shift` of this block's keys (one key per thread).
extern "C" __global__ void factz_p_radix_count(const fzp_u64* key, fzp_u64 m, fzp_u32 shift,
                                               fzp_u64* counts) {
    __shared__ fzp_u32 hist[FZK_RADIX_DIGITS];
    for (fzp_u32 d = threadIdx.x; d < FZK_RADIX_DIGITS; d += blockDim.x) hist[d] = 0;
    __syncthreads();
    fzp_u64 k = fzp_tid();
    if (k < m) atomicAdd(&hist[(key[k] >> shift) & (FZK_RADIX_DIGITS - 1)], 1u);
    __syncthreads();
    for (fzp_u32 d = threadIdx.x; d < FZK_RADIX_DIGITS; d += blockDim.x)
        counts[(fzp_u64)d * gridDim.x + blockIdx.x] = hist[d];
}

// One radix pass, scattering: `offsets` is the exclusive scan of the counts.
// A key's rank is the number of keys before it in its block with the same
// digit, counted, so the pass is stable whatever the timing.
extern "C" __global__ void factz_p_radix_scatter(const fzp_u64* key, const fzp_u32* idx, fzp_u64 m,
                                                 fzp_u32 shift, const fzp_u64* offsets,
                                                 fzp_u64* key_out, fzp_u32* idx_out) {
    __shared__ fzp_u32 digit[1024];
    fzp_u64 k = fzp_tid();
    fzp_u32 t = threadIdx.x;
    digit[t] = k < m ? (fzp_u32)((key[k] >> shift) & (FZK_RADIX_DIGITS - 1)) : FZP_NONE;
    __syncthreads();
    if (k >= m) return;
    fzp_u32 mine = digit[t], rank = 0;
    for (fzp_u32 s = 0; s < t; s++) rank += digit[s] == mine ? 1u : 0u;
    fzp_u64 at = offsets[(fzp_u64)mine * gridDim.x + blockIdx.x] + rank;
    key_out[at] = key[k];
    idx_out[at] = idx[k];
}

// 1 where a new cell starts in the sorted keys.
extern "C" __global__ void factz_p_cell_heads(const fzp_u64* key, fzp_u64 m, fzp_u64* head) {
    fzp_u64 k = fzp_tid();
    if (k >= m) return;
    head[k] = (k == 0 || key[k] != key[k - 1]) ? 1 : 0;
}

// Occupied cell c: `cell_key[c]` and `cell_start[c]` (Grid::keys, Grid::start);
// `slot` is the exclusive scan of the heads, cell_start[ncell] = m.
extern "C" __global__ void factz_p_cells(const fzp_u64* key, const fzp_u64* head,
                                        const fzp_u64* slot, fzp_u64 m, fzp_u64* cell_key,
                                        fzp_u64* cell_start) {
    fzp_u64 k = fzp_tid();
    if (k >= m) return;
    if (head[k]) {
        cell_key[slot[k]] = key[k];
        cell_start[slot[k]] = k;
    }
    if (k == m - 1) cell_start[slot[m]] = m;
}

// ------------------------------------------------------------ pairs

// Index of the occupied cell with this key, or FZP_NONE (Grid::occupied).
__device__ fzp_u32 fzp_occupied(const fzp_u64* cell_key, fzp_u64 ncell, fzp_u64 key) {
    fzp_u64 lo = 0, hi = ncell;
    while (lo < hi) {
        fzp_u64 mid = lo + (hi - lo) / 2;
        if (cell_key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ncell && cell_key[lo] == key ? (fzp_u32)lo : FZP_NONE;
}

// Grid::forward_neighbours's `step`: false where an open face cuts it off.
__device__ __forceinline__ bool fzp_step(fzp_u64 x, int d, fzp_u64 n, bool periodic, fzp_u64* out) {
    long long y = (long long)x + d, nn = (long long)n;
    if (y >= 0 && y < nn) {
        *out = (fzp_u64)y;
        return true;
    }
    if (!periodic) return false;
    long long r = y % nn;
    *out = (fzp_u64)(r < 0 ? r + nn : r);
    return true;
}

// Per occupied cell: its occupied forward neighbours (Grid::forward_neighbours:
// neighbour keys above its own, each once, ascending) as cell indices in
// nb[c * 26 ..], their number, and its units: one per particle of the cell
// (its row of pairs inside the cell) plus one per particle of each neighbour.
extern "C" __global__ void factz_p_cell_units(const fzp_u64* cell_key, const fzp_u64* cell_start,
                                              fzp_u64 ncell, const FzpGrid* grid, fzp_u32* nb,
                                              fzp_u32* nb_count, fzp_u64* units) {
    fzp_u64 c = fzp_tid();
    if (c >= ncell) return;
    FzpGrid g = *grid;
    fzp_u64 key = cell_key[c];
    fzp_u64 cx = key % g.nx, cy = (key / g.nx) % g.ny, cz = key / (g.nx * g.ny);
    bool periodic = g.period > 0.0;
    fzp_u64 found[FZK_MAX_NEIGHBOURS];
    int nf = 0;
    for (int dz = -1; dz <= 1; dz++) {
        fzp_u64 z, y, x;
        if (!fzp_step(cz, dz, g.nz, periodic, &z)) continue;
        for (int dy = -1; dy <= 1; dy++) {
            if (!fzp_step(cy, dy, g.ny, periodic, &y)) continue;
            for (int dx = -1; dx <= 1; dx++) {
                if (!fzp_step(cx, dx, g.nx, periodic, &x)) continue;
                fzp_u64 d = (z * g.ny + y) * g.nx + x;
                if (d <= key) continue;
                // Insert in ascending order, once (coinciding wrapped neighbours).
                int at = 0;
                while (at < nf && found[at] < d) at++;
                if (at < nf && found[at] == d) continue;
                for (int s = nf; s > at; s--) found[s] = found[s - 1];
                found[at] = d;
                nf++;
            }
        }
    }
    fzp_u64 u = cell_start[c + 1] - cell_start[c];
    fzp_u32 count = 0;
    for (int s = 0; s < nf; s++) {
        fzp_u32 d = fzp_occupied(cell_key, ncell, found[s]);
        if (d == FZP_NONE) continue;
        nb[c * FZK_MAX_NEIGHBOURS + count++] = d;
        u += cell_start[d + 1] - cell_start[d];
    }
    nb_count[c] = count;
    units[c] = u;
}

// The pairs of one unit, in the CPU's order, that fall in the vulnerable window
// [lo2, hi2]: counted, or (fill) written from `at` on as (i < j, linked).
__device__ fzp_u64 fzp_unit_pairs(fzp_u64 u, const float* pos, const fzp_u32* order,
                                  const fzp_u64* cell_start, fzp_u64 ncell, const fzp_u32* nb,
                                  const fzp_u32* nb_count, const fzp_u64* unit_start,
                                  double period, double lo2, double hi2, double b2, bool fill,
                                  fzp_u64 at, fzp_u32* pi, fzp_u32* pj, unsigned char* plinked) {
    // The cell owning unit u: the last c with unit_start[c] <= u.
    fzp_u64 lo = 0, hi = ncell;
    while (hi - lo > 1) {
        fzp_u64 mid = lo + (hi - lo) / 2;
        if (unit_start[mid] <= u)
            lo = mid;
        else
            hi = mid;
    }
    fzp_u64 c = lo, r = u - unit_start[c];
    fzp_u64 c0 = cell_start[c], len = cell_start[c + 1] - c0;
    // The unit as "particle a against the cell's particles from b0 to b1", a
    // fixed and the others in cell order: a row inside the cell (a = here[r],
    // others after it), or a neighbour's particle j against all of the cell.
    fzp_u32 fixed;
    fzp_u64 b0, b1;
    if (r < len) {
        fixed = order[c0 + r];
        b0 = c0 + r + 1;
        b1 = c0 + len;
    } else {
        r -= len;
        fzp_u32 s = 0;
        for (;;) {
            fzp_u32 d = nb[c * FZK_MAX_NEIGHBOURS + s];
            fzp_u64 dl = cell_start[d + 1] - cell_start[d];
            if (r < dl) {
                fixed = order[cell_start[d] + r];
                break;
            }
            r -= dl;
            s++;
            if (s >= nb_count[c]) return 0;  // unreachable: units were counted so
        }
        b0 = c0;
        b1 = c0 + len;
    }
    fzp_u32 bi[FZP_BUF], bj[FZP_BUF];
    unsigned char bl[FZP_BUF];
    fzp_u32 nbuf = 0;
    fzp_u64 count = 0;
    for (fzp_u64 s = b0; s < b1; s++) {
        fzp_u32 other = order[s];
        fzp_u32 i = fixed < other ? fixed : other, j = fixed < other ? other : fixed;
        double d2 = fzp_dist2(pos + 3 * (fzp_u64)i, pos + 3 * (fzp_u64)j, period);
        if (!(d2 >= lo2 && d2 <= hi2)) continue;
        count++;
        if (!fill) continue;
        bi[nbuf] = i;
        bj[nbuf] = j;
        bl[nbuf] = d2 <= b2 ? 1 : 0;
        if (++nbuf == FZP_BUF) {
            for (fzp_u32 q = 0; q < nbuf; q++) {
                pi[at + q] = bi[q];
                pj[at + q] = bj[q];
                plinked[at + q] = bl[q];
            }
            at += nbuf;
            nbuf = 0;
        }
    }
    for (fzp_u32 q = 0; q < nbuf; q++) {
        pi[at + q] = bi[q];
        pj[at + q] = bj[q];
        plinked[at + q] = bl[q];
    }
    return count;
}

// Pass 1: vulnerable pairs per unit.
extern "C" __global__ void factz_p_pair_count(const float* pos, const fzp_u32* order,
                                              const fzp_u64* cell_start, fzp_u64 ncell,
                                              const fzp_u32* nb, const fzp_u32* nb_count,
                                              const fzp_u64* unit_start, fzp_u64 nunits,
                                              double period, double lo2, double hi2,
                                              fzp_u64* count) {
    fzp_u64 u = fzp_tid();
    if (u >= nunits) return;
    count[u] = fzp_unit_pairs(u, pos, order, cell_start, ncell, nb, nb_count, unit_start, period,
                              lo2, hi2, 0.0, false, 0, 0, 0, 0);
}

// Pass 2: each unit writes its pairs from pair_start[u] (exclusive scan of the
// counts), so the whole list is in the CPU's order.
extern "C" __global__ void factz_p_pair_fill(const float* pos, const fzp_u32* order,
                                             const fzp_u64* cell_start, fzp_u64 ncell,
                                             const fzp_u32* nb, const fzp_u32* nb_count,
                                             const fzp_u64* unit_start, fzp_u64 nunits,
                                             double period, double lo2, double hi2, double b2,
                                             const fzp_u64* pair_start, fzp_u32* pi, fzp_u32* pj,
                                             unsigned char* plinked) {
    fzp_u64 u = fzp_tid();
    if (u >= nunits) return;
    fzp_unit_pairs(u, pos, order, cell_start, ncell, nb, nb_count, unit_start, period, lo2, hi2, b2,
                   true, pair_start[u], pi, pj, plinked);
}

// ------------------------------------------------------------ edits

// Marks a coordinate without an edit (correct.rs NO_EDIT).
#define FZP_NO_EDIT ((int)0x80000000u)

// Per coordinate c (3 * particle + axis): 1 when it carries an edit that the
// stream keeps (correct.rs: code present, particle not exact), and the edit
// mask bit by bit: one 32-bit word per warp, bit l = coordinate 32 w + l (the
// bytes of `pack_bits`, little-endian). Launch with whole warps covering
// ceil(3n / 32) words.
extern "C" __global__ void factz_p_edit_flags(const int* codes, const unsigned char* exact,
                                              fzp_u64 ncoord, fzp_u64* flag, fzp_u32* mask) {
    fzp_u64 c = fzp_tid();
    bool e = c < ncoord && codes[c] != FZP_NO_EDIT && !exact[c / 3];
    if (c < ncoord) flag[c] = e ? 1 : 0;
    fzp_u32 word = __ballot_sync(0xffffffffu, e);
    if ((threadIdx.x & 31) == 0 && c < ncoord) mask[c / 32] = word;
}

// The kept edits in coordinate order: coordinate index and zig-zag code
// (codec::zigzag, `(q << 1) ^ (q >> 31)`), at their scanned slot.
extern "C" __global__ void factz_p_edit_scatter(const int* codes, const fzp_u64* flag,
                                                const fzp_u64* slot, fzp_u64 ncoord,
                                                fzp_u64* coord_out, fzp_u32* zz_out) {
    fzp_u64 c = fzp_tid();
    if (c >= ncoord || !flag[c]) return;
    int q = codes[c];
    coord_out[slot[c]] = c;
    zz_out[slot[c]] = ((fzp_u32)q << 1) ^ (fzp_u32)(q >> 31);
}

// ------------------------------------------------------------ descent

// The correction's optimiser, PGD with Adam (correct.rs `descend`), in units
// of xi over the vulnerable particles in local numbering (correct.rs
// `Problem`). Per iteration the host (src/gpu/descent.rs) launches
// factz_p_descent_grad, factz_p_loss_sum (reading the block sums back: the
// stopping rule is the host's, correct.rs `Stopping`), factz_p_descent_step,
// then grows the active set with the grid scan (kernels/scan.cu) over `grow` and
// factz_p_descent_grow. Each particle's arithmetic is correct.rs's in its
// order; the loss's order is the fixed tree of correct.rs `block_sum`, not
// float atomics, so the stopping point never varies from run to run.

// Adam's constants: correct.rs BETA1, BETA2, ADAM_EPS (FZK_ADAM_*, generated).

// correct.rs `Problem::delta`: one conditional wrap (`period` 0: open box).
__device__ __forceinline__ double fzp_wrap(double a, double b, double period) {
    double d = a - b;
    if (period > 0.0) {
        if (d > 0.5 * period) return d - period;
        if (d < -0.5 * period) return d + period;
    }
    return d;
}

// Per active slot s (particle k = active[s]): its loss and gradient over its
// pairs in adjacency order (correct.rs `Problem::term`), and grow[q] = 1 for
// each editable neighbour q outside the active set that a violated pair
// disturbs (every writer writes 1).
extern "C" __global__ void factz_p_descent_grad(const double* pos, const fzp_u64* adj_start,
                                                const fzp_u32* adj_nb,
                                                const unsigned char* adj_linked,
                                                const fzp_u32* active, fzp_u64 na,
                                                const fzp_u32* slot, const unsigned char* editable,
                                                double t_link, double t_free, double period,
                                                double* loss, double* grad, fzp_u64* grow) {
    fzp_u64 s = fzp_tid();
    if (s >= na) return;
    fzp_u64 k = active[s];
    double sum = 0.0, g0 = 0.0, g1 = 0.0, g2 = 0.0;
    for (fzp_u64 e = adj_start[k]; e < adj_start[k + 1]; e++) {
        fzp_u64 q = adj_nb[e];
        bool linked = adj_linked[e] != 0;
        double d0 = fzp_wrap(pos[3 * k], pos[3 * q], period);
        double d1 = fzp_wrap(pos[3 * k + 1], pos[3 * q + 1], period);
        double d2 = fzp_wrap(pos[3 * k + 2], pos[3 * q + 2], period);
        double d = sqrt(d0 * d0 + d1 * d1 + d2 * d2);
        double r = linked ? d - t_link : t_free - d;
        if (r <= 0.0 || d == 0.0 || !fzk_finite64(d)) continue;
        double l = r * r;
        if (!(l > 0.0)) continue;
        double sc = linked ? 2.0 * r / d : -2.0 * r / d;
        sum += l;
        g0 = g0 + sc * d0;
        g1 = g1 + sc * d1;
        g2 = g2 + sc * d2;
        if (slot[q] == FZP_NONE && editable[q]) grow[q] = 1;
    }
    loss[s] = sum;
    grad[3 * s] = g0;
    grad[3 * s + 1] = g1;
    grad[3 * s + 2] = g2;
}

// correct.rs `block_sum`: block b sums loss[256 b ..] by a halving tree into
// sums[b]. blockDim must be FZK_LOSS_BLOCK.
extern "C" __global__ void factz_p_loss_sum(const double* loss, fzp_u64 n, double* sums) {
    __shared__ double s[FZK_LOSS_BLOCK];
    fzp_u64 i = fzp_tid();
    s[threadIdx.x] = i < n ? loss[i] : 0.0;
    __syncthreads();
    for (fzp_u32 h = FZK_LOSS_BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = s[0];
}

// One Adam step per active slot (correct.rs `adam_step`): pw holds beta1^t,
// beta2^t per slot as running products; each coordinate ends clamped to
// within `half` of the original (f64::clamp: below min gives min, then above
// max gives max).
extern "C" __global__ void factz_p_descent_step(double* pos, const double* orig,
                                                const fzp_u32* active, fzp_u64 na,
                                                const double* grad, double* m, double* v,
                                                double* pw, double lr, double half) {
    fzp_u64 s = fzp_tid();
    if (s >= na) return;
    fzp_u64 k = active[s];
    double p1 = pw[2 * s] * FZK_ADAM_BETA1, p2 = pw[2 * s + 1] * FZK_ADAM_BETA2;
    pw[2 * s] = p1;
    pw[2 * s + 1] = p2;
    double c1 = 1.0 - p1, c2 = 1.0 - p2;
    for (int a = 0; a < 3; a++) {
        double g = grad[3 * s + a];
        double mm = FZK_ADAM_BETA1 * m[3 * s + a] + (1.0 - FZK_ADAM_BETA1) * g;
        double vv = FZK_ADAM_BETA2 * v[3 * s + a] + (1.0 - FZK_ADAM_BETA2) * g * g;
        m[3 * s + a] = mm;
        v[3 * s + a] = vv;
        double step = lr * (mm / c1) / (sqrt(vv / c2) + FZK_ADAM_EPS);
        double o = orig[3 * k + a];
        double lo = o - half, hi = o + half;
        double x = pos[3 * k + a] - step;
        if (x < lo) x = lo;
        if (x > hi) x = hi;
        pos[3 * k + a] = x;
    }
}

// The grown particles join the active set in ascending local index (correct.rs
// sorts and dedups them): slot na + rank[q], rank the exclusive scan of grow.
extern "C" __global__ void factz_p_descent_grow(fzp_u64* grow, const fzp_u64* rank, fzp_u64 nl,
                                                fzp_u64 na, fzp_u32* active, fzp_u32* slot) {
    fzp_u64 q = fzp_tid();
    if (q >= nl || !grow[q]) return;
    fzp_u64 s = na + rank[q];
    active[s] = (fzp_u32)q;
    slot[q] = (fzp_u32)s;
    grow[q] = 0;
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_p_bbox)
FZSHIM_EXPORT(factz_p_cell_keys)
FZSHIM_EXPORT(factz_p_compact_finite)
FZSHIM_EXPORT(factz_p_radix_count)
FZSHIM_EXPORT(factz_p_radix_scatter)
FZSHIM_EXPORT(factz_p_cell_heads)
FZSHIM_EXPORT(factz_p_cells)
FZSHIM_EXPORT(factz_p_cell_units)
FZSHIM_EXPORT(factz_p_pair_count)
FZSHIM_EXPORT(factz_p_pair_fill)
FZSHIM_EXPORT(factz_p_edit_flags)
FZSHIM_EXPORT(factz_p_edit_scatter)
FZSHIM_EXPORT(factz_p_descent_grad)
FZSHIM_EXPORT(factz_p_loss_sum)
FZSHIM_EXPORT(factz_p_descent_step)
FZSHIM_EXPORT(factz_p_descent_grow)
