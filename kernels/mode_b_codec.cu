// Mode B encoding and decoding on the GPU: in-tile Lorenzo prediction and
// linear quantization of every 32x32 tile, compaction into the stream's order,
// and the inverse. Runs after kernels/mode_b_bounds.cu (its per-vertex and
// per-tile bound ids are this file's inputs).
//
// The CPU reference is src/field/blockwise.rs (`encode`, `decode`, `lorenzo`)
// with src/field/quantize.rs (`quantize`, `reconstruct`, `within`, `eb_of_id`,
// `pv`); the outputs equal its `Parts` bit for bit. Each function names the
// Rust function it mirrors and keeps its f64 operations in the same order;
// NVRTC compiles this file with --fmad=false (reconstruct's `pred + (2 eb) q`
// must not become an fma).
//
// No #include: NVRTC compiles it without headers, and the host build runs it
// through kernels/shim/cuda_host.hpp (see kernels/mode_b_bounds.cu).
//
// The in-tile Lorenzo predictor reads the reconstructed west, north and
// north-west neighbours, so a vertex depends on the anti-diagonal before it:
// one warp owns one tile and sweeps its 63 anti-diagonals (lane x holds column
// x), tiles are independent. blockDim must be (32, n) with n <= FZK_MODE_B_CODEC_TILES
// tiles per block; the grid is 1-D over tiles in stream order (tile t = band
// t / tiles_x, column t % tiles_x).
//
// Stream order (blockwise.rs): bands of 32 rows in order; in a band, tiles
// left to right; in a tile, rows then columns. Every band but the last has 32
// rows, so tile (bx, by) starts at vertex 32 by nx + 32 bx rows(by) of that
// order; its exact vertices' offset comes from an exclusive scan of per-tile
// counts (the grid scan of kernels/scan.cu), coded ones follow by subtraction.
//
// Encoding: factz_b_encode -> scan -> factz_b_compact.
// Decoding: factz_b_mask_counts -> scan -> factz_b_decode.
// Exact masks: one 32-bit word per row and tile column, word j * tiles_x + bx,
// bit x = vertex 32 bx + x (the layout of mode_b_bounds.cu's masks).

// FZK_TILE and FZK_EXACT come from Rust through the prelude (src/kernels.rs),
// with the quantizer and zigzag (kernels/common.cuh).

// ------------------------------------------------------------ blockwise.rs

// A tile's working values. Row stride 32 keeps the anti-diagonal access
// (row d - x, column x) free of bank conflicts.
struct FzcPlane {
    float u[FZK_TILE][FZK_TILE];
    float v[FZK_TILE][FZK_TILE];
};

// lorenzo: in-tile prediction from reconstructed neighbours (x, y local).
__device__ __forceinline__ double fzc_lorenzo(const float (*rec)[FZK_TILE], int x, int y) {
    bool west = x > 0, north = y > 0;
    if (west && north) return (fzk_predictor_input(rec[y][x - 1]) + fzk_predictor_input(rec[y - 1][x])) - fzk_predictor_input(rec[y - 1][x - 1]);
    if (west) return fzk_predictor_input(rec[y][x - 1]);
    if (north) return fzk_predictor_input(rec[y - 1][x]);
    return 0.0;
}

// The tile this warp owns, in stream order; false when past the last tile.
struct FzcTileAt {
    long long t, bx, ti, tj, tiles_x;
    int w, rows;
};

__device__ bool fzc_tile(long long ny, long long nx, FzcTileAt* at) {
    long long tiles_x = (nx + FZK_TILE - 1) / FZK_TILE, tiles_y = (ny + FZK_TILE - 1) / FZK_TILE;
    long long t = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (t >= tiles_x * tiles_y) return false;
    at->t = t;
    at->tiles_x = tiles_x;
    at->bx = t % tiles_x;
    at->ti = at->bx * FZK_TILE;
    at->tj = t / tiles_x * FZK_TILE;
    long long w = nx - at->ti, rows = ny - at->tj;
    at->w = w < FZK_TILE ? (int)w : FZK_TILE;
    at->rows = rows < FZK_TILE ? (int)rows : FZK_TILE;
    return true;
}

// Where the tile's vertices start in stream order (see the top of the file).
__device__ __forceinline__ unsigned long long fzc_tile_start(const FzcTileAt* at, long long nx) {
    return (unsigned long long)at->tj * (unsigned long long)nx +
           (unsigned long long)at->ti * (unsigned long long)at->rows;
}

// encode, per tile: the sweep decides every vertex (exact, or coded with its
// reconstruction feeding later predictions), writes each coded vertex's two
// zigzag codes at its grid position in vertex_codes (2 words per vertex), the
// tile's exact mask words, its exact-vertex count, and its ids as the
// stream's u32 words.
extern "C" __global__ void __launch_bounds__(FZK_TILE * FZK_MODE_B_CODEC_TILES)
factz_b_encode(const float* __restrict__ u, const float* __restrict__ v, long long ny, long long nx,
               double xi, const unsigned char* __restrict__ vertex_ids,
               const unsigned char* __restrict__ tile_ids, unsigned int* __restrict__ ids,
               unsigned int* __restrict__ exact_mask, unsigned int* __restrict__ vertex_codes,
               unsigned int* __restrict__ tile_exact) {
    __shared__ FzcPlane planes[FZK_MODE_B_CODEC_TILES];
    __shared__ unsigned char exact[FZK_MODE_B_CODEC_TILES][FZK_TILE][FZK_TILE];
    FzcTileAt at;
    if (!fzc_tile(ny, nx, &at)) return;  // the whole warp
    FzcPlane* s = &planes[threadIdx.y];
    unsigned char (*ex)[FZK_TILE] = exact[threadIdx.y];
    int x = threadIdx.x;
    unsigned int tid_u = tile_ids[2 * at.t], tid_v = tile_ids[2 * at.t + 1];
    if (x < 2) ids[2 * at.t + x] = tile_ids[2 * at.t + x];
    double eu = fzk_eb_of_id(xi, tid_u), ev = fzk_eb_of_id(xi, tid_v);
    for (int y = 0; y < at.rows; y++) {
        if (x < at.w) {
            long long k = (at.tj + y) * nx + at.ti + x;
            s->u[y][x] = u[k];
            s->v[y][x] = v[k];
        }
    }
    __syncwarp();
    // Each value is overwritten by its reconstruction once decided, so the
    // neighbours a prediction reads (earlier diagonals) are reconstructions.
    for (int d = 0; d < at.w + at.rows - 1; d++) {
        int y = d - x;
        if (x < at.w && y >= 0 && y < at.rows) {
            long long k = (at.tj + y) * nx + at.ti + x;
            unsigned int id_u = vertex_ids[2 * k], id_v = vertex_ids[2 * k + 1];
            bool coded = !(id_u == FZK_EXACT || id_u > tid_u || id_v > tid_v);
            int qu = 0, qv = 0;
            float ru = 0.0f, rv = 0.0f;
            if (coded) {
                double pu = fzc_lorenzo(s->u, x, y), pvv = fzc_lorenzo(s->v, x, y);
                coded = fzk_quantize(s->u[y][x], pu, eu, &qu, &ru) &
                        fzk_quantize(s->v[y][x], pvv, ev, &qv, &rv);
            }
            if (coded) {
                s->u[y][x] = ru;
                s->v[y][x] = rv;
                vertex_codes[2 * k] = fzk_zigzag(qu);
                vertex_codes[2 * k + 1] = fzk_zigzag(qv);
            }
            ex[y][x] = coded ? 0 : 1;  // an exact vertex keeps its value
        }
        __syncwarp();
    }
    unsigned int count = 0;
    for (int y = 0; y < at.rows; y++) {
        unsigned int word = __ballot_sync(FZK_FULL_WARP, x < at.w && ex[y][x] != 0);
        if (x == 0) exact_mask[(at.tj + y) * at.tiles_x + at.bx] = word;
        count += (unsigned int)__popc(word);
    }
    if (x == 0) tile_exact[at.t] = count;
}

// Exact-vertex count of every tile from its mask words (decoding); one thread
// per tile, any 1-D block shape.
extern "C" __global__ void __launch_bounds__(FZK_TILE * FZK_MODE_B_CODEC_TILES)
factz_b_mask_counts(const unsigned int* __restrict__ exact_mask, long long ny, long long nx,
                    unsigned int* __restrict__ tile_exact) {
    long long tiles_x = (nx + FZK_TILE - 1) / FZK_TILE, tiles_y = (ny + FZK_TILE - 1) / FZK_TILE;
    long long t = (long long)blockIdx.x * (blockDim.x * blockDim.y) + threadIdx.y * blockDim.x + threadIdx.x;
    if (t >= tiles_x * tiles_y) return;
    long long bx = t % tiles_x, tj = t / tiles_x * FZK_TILE;
    long long w = nx - bx * FZK_TILE;
    unsigned int keep = w >= FZK_TILE ? FZK_FULL_WARP : (1u << w) - 1u;  // columns in the field
    unsigned int count = 0;
    for (long long j = tj; j < tj + FZK_TILE && j < ny; j++)
        count += (unsigned int)__popc(exact_mask[j * tiles_x + bx] & keep);
    tile_exact[t] = count;
}

// Compaction, per tile: each vertex's position among the tile's exact (or
// coded) vertices is the count in earlier rows plus the popcount of the mask
// bits left of it in its row; raw takes the exact values' bits, codes the
// coded vertices' codes, both at the tile's offsets in stream order.
extern "C" __global__ void __launch_bounds__(FZK_TILE * FZK_MODE_B_CODEC_TILES)
factz_b_compact(const float* __restrict__ u, const float* __restrict__ v, long long ny,
                long long nx, const unsigned int* __restrict__ exact_mask,
                const unsigned int* __restrict__ vertex_codes,
                const unsigned long long* __restrict__ tile_offsets, unsigned int* __restrict__ raw,
                unsigned int* __restrict__ codes) {
    FzcTileAt at;
    if (!fzc_tile(ny, nx, &at)) return;
    int x = threadIdx.x;
    unsigned long long e_off = tile_offsets[at.t];
    unsigned long long c_off = fzc_tile_start(&at, nx) - e_off;
    unsigned long long before = 0;  // exact vertices in the tile's earlier rows
    for (int y = 0; y < at.rows; y++) {
        unsigned int word = exact_mask[(at.tj + y) * at.tiles_x + at.bx];
        if (x < at.w) {
            unsigned long long left = (unsigned long long)__popc(word & ((1u << x) - 1u));
            long long k = (at.tj + y) * nx + at.ti + x;
            if ((word >> x) & 1u) {
                unsigned long long p = e_off + before + left;
                raw[2 * p] = __float_as_uint(u[k]);
                raw[2 * p + 1] = __float_as_uint(v[k]);
            } else {
                unsigned long long p = c_off + ((unsigned long long)y * at.w - before) + (x - left);
                codes[2 * p] = vertex_codes[2 * k];
                codes[2 * p + 1] = vertex_codes[2 * k + 1];
            }
        }
        before += (unsigned long long)__popc(word);
    }
}

// decode, per tile: the same sweep; an exact vertex takes its raw bits, a
// coded one its reconstruction from the decoded neighbours. The caller has
// checked every id < NUM_IDS and that raw / codes hold exactly what the mask
// implies (blockwise::decode's checks), and tile_offsets is the scan of
// factz_b_mask_counts.
extern "C" __global__ void __launch_bounds__(FZK_TILE * FZK_MODE_B_CODEC_TILES)
factz_b_decode(long long ny, long long nx, double xi, const unsigned int* __restrict__ ids,
               const unsigned int* __restrict__ exact_mask, const unsigned int* __restrict__ raw,
               const unsigned int* __restrict__ codes,
               const unsigned long long* __restrict__ tile_offsets, float* __restrict__ u,
               float* __restrict__ v) {
    __shared__ FzcPlane planes[FZK_MODE_B_CODEC_TILES];
    __shared__ unsigned int mask[FZK_MODE_B_CODEC_TILES][FZK_TILE];
    __shared__ unsigned int before[FZK_MODE_B_CODEC_TILES][FZK_TILE];
    FzcTileAt at;
    if (!fzc_tile(ny, nx, &at)) return;
    FzcPlane* s = &planes[threadIdx.y];
    unsigned int* m = mask[threadIdx.y];
    unsigned int* b = before[threadIdx.y];
    int x = threadIdx.x;
    unsigned int keep = at.w == FZK_TILE ? FZK_FULL_WARP : (1u << at.w) - 1u;
    m[x] = x < at.rows ? exact_mask[(at.tj + x) * at.tiles_x + at.bx] & keep : 0u;
    __syncwarp();
    unsigned int acc = 0;
    for (int y = 0; y < x; y++) acc += (unsigned int)__popc(m[y]);
    b[x] = acc;
    __syncwarp();
    double eu = fzk_eb_of_id(xi, ids[2 * at.t]), ev = fzk_eb_of_id(xi, ids[2 * at.t + 1]);
    unsigned long long e_off = tile_offsets[at.t];
    unsigned long long c_off = fzc_tile_start(&at, nx) - e_off;
    for (int d = 0; d < at.w + at.rows - 1; d++) {
        int y = d - x;
        if (x < at.w && y >= 0 && y < at.rows) {
            unsigned int word = m[y];
            unsigned int left = (unsigned int)__popc(word & ((1u << x) - 1u));
            float ru, rv;
            if ((word >> x) & 1u) {
                unsigned long long p = e_off + b[y] + left;
                ru = __uint_as_float(raw[2 * p]);
                rv = __uint_as_float(raw[2 * p + 1]);
            } else {
                unsigned long long p = c_off + ((unsigned long long)y * at.w - b[y]) + (x - left);
                double pu = fzc_lorenzo(s->u, x, y), pvv = fzc_lorenzo(s->v, x, y);
                ru = fzk_reconstruct(pu, eu, fzk_unzigzag(codes[2 * p]));
                rv = fzk_reconstruct(pvv, ev, fzk_unzigzag(codes[2 * p + 1]));
            }
            s->u[y][x] = ru;
            s->v[y][x] = rv;
        }
        __syncwarp();
    }
    for (int y = 0; y < at.rows; y++) {
        if (x < at.w) {
            long long k = (at.tj + y) * nx + at.ti + x;
            u[k] = s->u[y][x];
            v[k] = s->v[y][x];
        }
    }
}

// The stream's exact-vertex bitmap (planes::pack_bits: grid order, LSB
// first) from the tile-layout mask words; one thread per byte.
extern "C" __global__ void factz_b_mask_bytes(const unsigned int* __restrict__ exact_mask,
                                              long long ny, long long nx,
                                              unsigned char* __restrict__ bytes) {
    long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x, n = ny * nx;
    if (b >= (n + 7) / 8) return;
    long long tiles_x = (nx + FZK_TILE - 1) / FZK_TILE;
    unsigned int byte = 0;
    for (long long k = 8 * b; k < 8 * b + 8 && k < n; k++) {
        long long j = k / nx, i = k % nx;
        byte |= ((exact_mask[j * tiles_x + i / FZK_TILE] >> (i % FZK_TILE)) & 1u) << (k - 8 * b);
    }
    bytes[b] = (unsigned char)byte;
}

// The inverse: mask word (j, tile column) from the bitmap; one thread per word.
extern "C" __global__ void factz_b_mask_words(const unsigned char* __restrict__ bytes,
                                              long long ny, long long nx,
                                              unsigned int* __restrict__ exact_mask) {
    long long tiles_x = (nx + FZK_TILE - 1) / FZK_TILE;
    long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= ny * tiles_x) return;
    long long j = w / tiles_x, i0 = (w % tiles_x) * FZK_TILE;
    unsigned int word = 0;
    for (long long i = i0; i < i0 + FZK_TILE && i < nx; i++) {
        long long k = j * nx + i;
        word |= ((unsigned int)(bytes[k / 8] >> (k % 8)) & 1u) << (i - i0);
    }
    exact_mask[w] = word;
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_b_encode)
FZSHIM_EXPORT(factz_b_mask_counts)
FZSHIM_EXPORT(factz_b_compact)
FZSHIM_EXPORT(factz_b_decode)
FZSHIM_EXPORT(factz_b_mask_bytes)
FZSHIM_EXPORT(factz_b_mask_words)
