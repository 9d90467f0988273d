// Mode B bound derivation on the GPU: per-vertex error-bound ids, the
// special-value masks and one bound id per 32x32 tile and component.
//
// The CPU reference is src/field/blockwise.rs (`vertex_ids`, `tile_id`) with
// safe_bound.rs, topology.rs, exact.rs, forced.rs and quantize.rs; every
// function below names the Rust function it mirrors. The outputs must equal the
// CPU's bit for bit, so the arithmetic keeps the CPU's f64 operations in the
// same order, and NVRTC compiles this file with --fmad=false (a fused
// multiply-add would change the rounding of u_a v_b - u_b v_a).
//
// No #include: NVRTC compiles it without headers, and the same file compiles as
// host C++ with kernels/shim/cuda_host.hpp force-included, so its logic runs in
// CI without a GPU.
//
// One block owns one tile; blockDim.x must be 32 (a warp is one tile row) and
// any blockDim.y works (each thread walks the tile's rows with stride
// blockDim.y); 32x8 is the intended shape.

// FZK_TILE, FZK_NUM_IDS, FZK_EXACT and the tile cost model (FZK_CODED_BITS,
// FZK_EXACT_BITS) come from Rust through the prelude (src/kernels.rs).

// Quads whose triangles touch the tile's vertices: local -1 .. 31 each way.
#define FZ_QUADS (FZK_TILE + 1)
// Vertices of those quads: the tile plus a one-vertex halo on every side. A
// vertex's bound depends only on its six incident triangles, whose vertices
// are at most one step away, so a one-vertex halo suffices here.
#define FZ_PATCH (FZK_TILE + 2)

// ------------------------------------------------------------ bit helpers

__device__ __forceinline__ double fz_inf() { return fzk_from_bits(0x7ff0000000000000ull); }
// Rust's f64::min / f64::max: a NaN operand yields the other operand.
__device__ __forceinline__ double fz_min(double a, double b) {
    if (a != a) return b;
    if (b != b) return a;
    return a < b ? a : b;
}
__device__ __forceinline__ double fz_max(double a, double b) {
    if (a != a) return b;
    if (b != b) return a;
    return a > b ? a : b;
}

// ------------------------------------------------------------ safe_bound.rs

// det_bound: safe relative bound of t1 - t2 (both exact f64 products).
__device__ double fz_det_bound(double t1, double t2) {
    double pos = 0.0, neg = 0.0;
    double ts[2] = {t1, -t2};
    for (int k = 0; k < 2; k++) {
        if (ts[k] > 0.0)
            pos += ts[k];
        else
            neg -= ts[k];
    }
    double lower = fabs(t1 - t2) * (1.0 - FZK_EPS);
    double root = sqrt(pos) + sqrt(neg);
    return lower / (root * root) * FZK_MARGIN;
}

// triangle_constraint: +inf for a non-finite triangle, -1 for a critical or
// degenerate one, else the safe relative bound of the best opposite pair.
// pu/pv hold the triangle's vertices in T0/T1 order.
__device__ double fz_triangle_constraint(const float* pu, const float* pv) {
    // m_products, orientation_of, m_is_zero (common.cuh).
    double t1[3], t2[3], d[3];
    fzk_m_products(pu, pv, t1, t2);
    for (int k = 0; k < 3; k++) d[k] = t1[k] - t2[k];
    int det = fzk_orientation_of(d);
    if (det == 2) return fz_inf();              // not finite
    if (det != 0) return -1.0;                  // holds a critical point
    if (fzk_m_is_zero(t1, t2)) return -1.0;     // degenerate
    double eps[3];
    for (int k = 0; k < 3; k++) eps[k] = fz_det_bound(t1[k], t2[k]);
    const int qa[3] = {0, 0, 1}, qb[3] = {1, 2, 2};
    double best = 0.0;
    for (int p = 0; p < 3; p++) {
        double da = d[qa[p]], db = d[qb[p]];
        if ((da > 0.0 && db < 0.0) || (da < 0.0 && db > 0.0))
            best = fz_max(best, fz_min(eps[qa[p]], eps[qb[p]]));
    }
    return best;
}

// ------------------------------------------------------------ the tile pass

struct FzBTile {
    float u[FZ_PATCH][FZ_PATCH];  // [local y + 1][local x + 1]
    float v[FZ_PATCH][FZ_PATCH];
    double eps[FZ_QUADS][FZ_QUADS][2];  // [quad y + 1][quad x + 1][T0/T1]
    unsigned int hist[2][FZK_NUM_IDS];
};

__device__ __forceinline__ int fz_thread_rank() { return threadIdx.y * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int fz_block_threads() { return blockDim.x * blockDim.y; }

// Stage 1: the patch (tile and halo) into shared memory, histograms cleared.
// Vertices outside the field are never read as triangle vertices.
__device__ void fz_b_load_patch(FzBTile* sh, const float* u, const float* v, long long ny,
                                long long nx, long long ti, long long tj) {
    for (int k = fz_thread_rank(); k < FZ_PATCH * FZ_PATCH; k += fz_block_threads()) {
        int py = k / FZ_PATCH, px = k % FZ_PATCH;
        long long i = ti + px - 1, j = tj + py - 1;
        bool in = i >= 0 && i < nx && j >= 0 && j < ny;
        sh->u[py][px] = in ? u[j * nx + i] : 0.0f;
        sh->v[py][px] = in ? v[j * nx + i] : 0.0f;
    }
    for (int k = fz_thread_rank(); k < 2 * FZK_NUM_IDS; k += fz_block_threads())
        sh->hist[k / FZK_NUM_IDS][k % FZK_NUM_IDS] = 0;
}

// Stage 2: triangle_bounds for every triangle touching the tile (tri_vertices).
__device__ void fz_b_triangle_bounds(FzBTile* sh, long long ny, long long nx, long long ti,
                                     long long tj) {
    for (int k = fz_thread_rank(); k < 2 * FZ_QUADS * FZ_QUADS; k += fz_block_threads()) {
        int half = k & 1, q = k >> 1;
        int qy = q / FZ_QUADS - 1, qx = q % FZ_QUADS - 1;
        long long gi = ti + qx, gj = tj + qy;
        if (gi < 0 || gj < 0 || gi >= nx - 1 || gj >= ny - 1) continue;
        int x = qx + 1, y = qy + 1;  // patch coordinates of the quad's lower-left vertex
        // T0 = (i,j),(i+1,j),(i+1,j+1); T1 = (i,j),(i+1,j+1),(i,j+1)
        int vx[3] = {x, x + 1, half ? x : x + 1};
        int vy[3] = {y, half ? y + 1 : y, y + 1};
        float pu[3], pv[3];
        for (int c = 0; c < 3; c++) {
            pu[c] = sh->u[vy[c]][vx[c]];
            pv[c] = sh->v[vy[c]][vx[c]];
        }
        sh->eps[y][x][half] = fz_triangle_constraint(pu, pv);
    }
}

// vertex_ids for one vertex (i, j) at patch position (x, y): writes its two ids
// (FZK_EXACT = store exactly) and says whether the per-vertex rules force it.
__device__ bool fz_b_vertex(const FzBTile* sh, long long ny, long long nx, long long i,
                            long long j, int x, int y, double xi, int chunk_of_larger,
                            unsigned char* id) {
    float cu = sh->u[y][x], cv = sh->v[y][x];
    id[0] = FZK_EXACT;
    id[1] = FZK_EXACT;
    // forced_vertices: non-finite, zero vector, chunk perimeter.
    bool forced = !fzk_finite32(cu) || !fzk_finite32(cv) || (cu == 0.0f && cv == 0.0f) ||
                  (chunk_of_larger && (i == 0 || j == 0 || i == nx - 1 || j == ny - 1));
    if (forced) return true;
    // The minimum over the incident triangles (topology.rs `incident`); the
    // triangle bounds are never NaN, so the order of the minimum does not matter.
    bool left = i > 0, down = j > 0, right = i + 1 < nx, up = j + 1 < ny;
    double e = fz_inf();
    if (left && down) {
        e = fz_min(e, sh->eps[y - 1][x - 1][0]);
        e = fz_min(e, sh->eps[y - 1][x - 1][1]);
    }
    if (right && down) e = fz_min(e, sh->eps[y - 1][x][1]);
    if (left && up) e = fz_min(e, sh->eps[y][x - 1][0]);
    if (right && up) {
        e = fz_min(e, sh->eps[y][x][0]);
        e = fz_min(e, sh->eps[y][x][1]);
    }
    if (e < 0.0) return false;
    int a = fzk_id_for_bound(xi, fz_min(xi, e * fabs((double)cu)));
    int b = fzk_id_for_bound(xi, fz_min(xi, e * fabs((double)cv)));
    if (a >= 0 && b >= 0) {
        id[0] = (unsigned char)a;
        id[1] = (unsigned char)b;
    }
    return false;
}

// Stage 3: every vertex of the tile: ids out, histogram in shared memory, and
// one 32-bit word per tile row for each mask (bit x = vertex ti + x), built by
// a warp ballot: forced (per-vertex rules) and exact (id FZK_EXACT).
// Mask word of row j and tile column t: j * tiles_x + t.
__device__ void fz_b_vertices(FzBTile* sh, long long ny, long long nx, long long ti, long long tj,
                              double xi, int chunk_of_larger, unsigned char* vertex_ids,
                              unsigned int* forced_mask, unsigned int* exact_mask,
                              long long tiles_x) {
    int x = threadIdx.x;
    for (int y = threadIdx.y; y < FZK_TILE; y += blockDim.y) {
        long long i = ti + x, j = tj + y;
        bool in = i < nx && j < ny;
        bool forced = false, exact = false;
        if (in) {
            unsigned char id[2];
            forced = fz_b_vertex(sh, ny, nx, i, j, x + 1, y + 1, xi, chunk_of_larger, id);
            exact = id[0] == FZK_EXACT;
            vertex_ids[2 * (j * nx + i)] = id[0];
            vertex_ids[2 * (j * nx + i) + 1] = id[1];
            if (!exact) {
                atomicAdd(&sh->hist[0][id[0]], 1u);
                atomicAdd(&sh->hist[1][id[1]], 1u);
            }
        }
        // Every lane of the warp is here (the loop is uniform across a warp).
        unsigned int forced_bits = __ballot_sync(FZK_FULL_WARP, forced);
        unsigned int exact_bits = __ballot_sync(FZK_FULL_WARP, exact);
        if (x == 0 && j < ny) {
            forced_mask[j * tiles_x + ti / FZK_TILE] = forced_bits;
            exact_mask[j * tiles_x + ti / FZK_TILE] = exact_bits;
        }
    }
}

// tile_id: the id that minimises the tile's estimated size (first minimum).
__device__ unsigned char fz_tile_id(const unsigned int* hist) {
    unsigned int total = 0;
    for (int t = 0; t < FZK_NUM_IDS; t++) total += hist[t];
    unsigned long long best_cost = ~0ull;
    unsigned char best = 0;
    unsigned int covered = 0;
    for (int t = 0; t < FZK_NUM_IDS; t++) {
        covered += hist[t];
        unsigned long long cost = (unsigned long long)covered * ((unsigned long long)t + FZK_CODED_BITS) +
                                  (unsigned long long)(total - covered) * FZK_EXACT_BITS;
        if (cost < best_cost) {
            best_cost = cost;
            best = (unsigned char)t;
        }
    }
    return best;
}

// Grid: (tiles across, tiles down); tile (bx, by) writes tile_ids[2 * (by *
// tiles_x + bx) + c], the order of the mode B stream's tile ids.
// vertex_ids: 2 per vertex; masks: ny * tiles_x words each.
extern "C" __global__ void __launch_bounds__(FZK_MODE_B_BOUNDS_THREADS)
factz_b_bound_ids(const float* __restrict__ u, const float* __restrict__ v, long long ny,
                  long long nx, double xi, int chunk_of_larger,
                  unsigned char* __restrict__ vertex_ids, unsigned char* __restrict__ tile_ids,
                  unsigned int* __restrict__ forced_mask, unsigned int* __restrict__ exact_mask) {
    __shared__ FzBTile sh;
    long long tiles_x = (nx + FZK_TILE - 1) / FZK_TILE, tiles_y = (ny + FZK_TILE - 1) / FZK_TILE;
    if ((long long)blockIdx.x >= tiles_x || (long long)blockIdx.y >= tiles_y) return;  // whole block
    long long ti = (long long)blockIdx.x * FZK_TILE, tj = (long long)blockIdx.y * FZK_TILE;
    fz_b_load_patch(&sh, u, v, ny, nx, ti, tj);
    __syncthreads();
    fz_b_triangle_bounds(&sh, ny, nx, ti, tj);
    __syncthreads();
    fz_b_vertices(&sh, ny, nx, ti, tj, xi, chunk_of_larger, vertex_ids, forced_mask, exact_mask,
                  tiles_x);
    __syncthreads();
    int r = fz_thread_rank();
    if (r < 2) tile_ids[2 * (blockIdx.y * tiles_x + blockIdx.x) + r] = fz_tile_id(sh.hist[r]);
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_b_bound_ids)
