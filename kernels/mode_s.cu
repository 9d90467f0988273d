// Mode S (speculative) on the GPU: the per-vertex decisions of
// src/field/speculative.rs (`encode`, plain path: no bound caps) and the
// replay of `decode`, bit for bit.
//
// The CPU reference is speculative.rs with forced.rs, topology.rs, exact.rs
// and quantize.rs; every device function names the Rust item it mirrors and
// keeps its f64 operations in the same order. NVRTC compiles this file with
// --fmad=false (a fused multiply-add would change u_a v_b - u_b v_a).
//
// The host drives the schedule (src/gpu/mode_s.rs):
//   factz_s_classify   one thread per triangle: signature and degeneracy;
//   factz_s_forced     one thread per vertex: the forced-exact mask;
//   factz_s_anchors    one thread: the stride-256 lattice in raster order (each
//                      anchor's Lorenzo predictor reads the anchors before it);
//   factz_s_phase      one thread per target of one (step, phase), reading the
//                      state before the phase and writing its decision aside;
//   factz_s_apply      one thread per target: the phase's reconstructions into
//                      the state, after every target has decided (as the CPU
//                      decides a phase from one state and commits after);
//   factz_s_decode_anchors / factz_s_decode_phase: the decoder's replay, each
//                      vertex finding its stream entries through a slot index
//                      the host derives from the exact mask in schedule order.
// Per-vertex outputs: exact flag, bound id and the two codes of coded vertices,
// the reconstructed state; the host writes the Parts in the CPU's order.
//
// No #include (NVRTC compiles it without headers; the shim runs it as host
// C++). Every name here is static or carries the fzs_/factz_s_ prefix: all
// kernels/*.cu link into one host library.

// FZK_STRIDE, FZK_NUM_IDS, FZK_RADIUS and FZK_EPS come from Rust through the
// prelude (src/kernels.rs), with exact.rs, quantize.rs and topology.rs's
// m_products / orientation_of / m_is_zero (kernels/common.cuh).

// Phases in schedule order (speculative.rs Phase).
#define FZS_HORIZONTAL 0
#define FZS_VERTICAL 1
#define FZS_CENTER 2

// ------------------------------------------------------------ bit helpers

static __device__ __forceinline__ long long fzs_thread() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
static __device__ __forceinline__ long long fzs_threads() {
    return (long long)gridDim.x * blockDim.x;
}

// ------------------------------------------------------------ topology.rs

// signature_of: the Sig byte of a triangle holding a critical point of
// orientation det; half 0 = T0, 1 = T1.
static __device__ unsigned char fzs_signature_of(const float* pu, const float* pv, int half,
                                                 int det) {
    double tr[4];
    if (half == 0) {
        tr[0] = (double)pu[1];
        tr[1] = -(double)pu[0];
        tr[2] = (double)pv[2];
        tr[3] = -(double)pv[1];
    } else {
        tr[0] = (double)pu[1];
        tr[1] = -(double)pu[2];
        tr[2] = (double)pv[2];
        tr[3] = -(double)pv[0];
    }
    int trs = fzk_sign_of_sum(tr, 4);
    double terms[22];
    int n = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) terms[n++] = tr[a] * tr[b];
    // t(a, b) = 4.0 * a * b, left to right as in Rust.
    terms[16] = -(4.0 * (double)pu[1] * (double)pv[2]);
    terms[17] = 4.0 * (double)pu[2] * (double)pv[1];
    terms[18] = -(4.0 * (double)pu[2] * (double)pv[0]);
    terms[19] = 4.0 * (double)pu[0] * (double)pv[2];
    terms[20] = -(4.0 * (double)pu[0] * (double)pv[1]);
    terms[21] = 4.0 * (double)pu[1] * (double)pv[0];
    int disc = fzk_sign_of_sum(terms, 22);
    return (unsigned char)(1 + ((det + 1) * 9 + (trs + 1) * 3 + (disc + 1)));
}

// signature: 0 (Sig::NONE) without a critical point.
static __device__ unsigned char fzs_signature(const float* pu, const float* pv, int half) {
    double t1[3], t2[3], m[3];
    fzk_m_products(pu, pv, t1, t2);
    for (int k = 0; k < 3; k++) m[k] = t1[k] - t2[k];
    int det = fzk_orientation_of(m);
    if (det == 2 || det == 0) return 0;
    return fzs_signature_of(pu, pv, half, det);
}

// classify: the signature, and whether the triangle is finite with m == 0.
static __device__ unsigned char fzs_classify(const float* pu, const float* pv, int half,
                                             bool* degenerate) {
    double t1[3], t2[3], m[3];
    fzk_m_products(pu, pv, t1, t2);
    for (int k = 0; k < 3; k++) m[k] = t1[k] - t2[k];
    int det = fzk_orientation_of(m);
    *degenerate = false;
    if (det == 2) return 0;
    if (det == 0) {
        double sum = m[0] + m[1] + m[2];
        double slack = 4.0 * FZK_EPS * (fzk_fabs(m[0]) + fzk_fabs(m[1]) + fzk_fabs(m[2]));
        if (fzk_fabs(sum) <= slack) {
            *degenerate = fzk_m_is_zero(t1, t2);
        }
        return 0;
    }
    return fzs_signature_of(pu, pv, half, det);
}

// tri_vertices
static __device__ __forceinline__ void fzs_tri_vertices(long long nx, long long i, long long j,
                                                        int half, long long* idx) {
    long long k = j * nx + i;
    idx[0] = k;
    idx[1] = half == 0 ? k + 1 : k + nx + 1;
    idx[2] = half == 0 ? k + nx + 1 : k + nx;
}

// incident: the (up to six) triangles around (i, j) in the CPU's order, as
// (triangle id, half); returns their count.
static __device__ int fzs_incident(long long ny, long long nx, long long i, long long j,
                                   long long* tri, int* half) {
    int n = 0;
    bool left = i > 0, down = j > 0, right = i + 1 < nx, up = j + 1 < ny;
#define FZS_PUSH(qi, qj, h)                                 \
    do {                                                    \
        tri[n] = 2 * ((qj) * (nx - 1) + (qi)) + (h);        \
        half[n] = (h);                                      \
        n++;                                                \
    } while (0)
    if (left && down) {
        FZS_PUSH(i - 1, j - 1, 0);
        FZS_PUSH(i - 1, j - 1, 1);
    }
    if (right && down) FZS_PUSH(i, j - 1, 1);
    if (left && up) FZS_PUSH(i - 1, j, 0);
    if (right && up) {
        FZS_PUSH(i, j, 0);
        FZS_PUSH(i, j, 1);
    }
#undef FZS_PUSH
    return n;
}

// ------------------------------------------------------------ speculative.rs

// Stencil: 0 Edge, 1 Linear, 2 Cubic; Stencil::at.
static __device__ __forceinline__ int fzs_stencil_at(long long pos, long long len, long long s) {
    if (pos + s >= len) return 0;
    if (pos >= 3 * s && pos + 3 * s < len) return 2;
    return 1;
}

// Stencil::apply at index k of a, neighbours `stride` apart.
static __device__ __forceinline__ double fzs_stencil_apply(int st, const float* a, long long k,
                                                           long long stride) {
    if (st == 0) return fzk_predictor_input(a[k - stride]);
    if (st == 1) return (fzk_predictor_input(a[k - stride]) + fzk_predictor_input(a[k + stride])) * 0.5;
    return (9.0 * (fzk_predictor_input(a[k - stride]) + fzk_predictor_input(a[k + stride])) -
            (fzk_predictor_input(a[k - 3 * stride]) + fzk_predictor_input(a[k + 3 * stride]))) *
           0.0625;
}

// Predictor: x/y stencils (-1 = axis unused) or the anchor Lorenzo.
struct FzsPred {
    long long k;
    int sx, sy;
    long long dx, dy;
    bool anchor, west, north;
    long long ns;
};

// Predictor::new for a target of (step s, phase).
static __device__ FzsPred fzs_pred_new(long long ny, long long nx, long long i, long long j,
                                       long long s, int phase) {
    FzsPred p;
    p.k = j * nx + i;
    p.sx = phase == FZS_VERTICAL ? -1 : fzs_stencil_at(i, nx, s);
    p.sy = phase == FZS_HORIZONTAL ? -1 : fzs_stencil_at(j, ny, s);
    p.dx = s;
    p.dy = s * nx;
    p.anchor = p.west = p.north = false;
    p.ns = 0;
    return p;
}

// Predictor::anchor
static __device__ FzsPred fzs_pred_anchor(long long nx, long long i, long long j) {
    FzsPred p;
    p.k = j * nx + i;
    p.sx = p.sy = -1;
    p.dx = p.dy = 0;
    p.anchor = true;
    p.west = i >= FZK_STRIDE;
    p.north = j >= FZK_STRIDE;
    p.ns = FZK_STRIDE * nx;
    return p;
}

// Predictor::apply (with apply_anchor)
static __device__ double fzs_pred_apply(const FzsPred* p, const float* a) {
    long long k = p->k;
    if (p->anchor) {
        if (p->west && p->north)
            return (fzk_predictor_input(a[k - FZK_STRIDE]) + fzk_predictor_input(a[k - p->ns])) -
                   fzk_predictor_input(a[k - FZK_STRIDE - p->ns]);
        if (p->west) return fzk_predictor_input(a[k - FZK_STRIDE]);
        if (p->north) return fzk_predictor_input(a[k - p->ns]);
        return 0.0;
    }
    if (p->sx >= 0 && p->sy < 0) return fzs_stencil_apply(p->sx, a, k, p->dx);
    if (p->sx < 0 && p->sy >= 0) return fzs_stencil_apply(p->sy, a, k, p->dy);
    if (p->sx >= 0 && p->sy >= 0)
        return (fzs_stencil_apply(p->sx, a, k, p->dx) + fzs_stencil_apply(p->sy, a, k, p->dy)) *
               0.5;
    return 0.0;
}

// keeps_topology: would (a, b) at (i, j) keep every incident signature?
static __device__ bool fzs_keeps_topology(const float* ru, const float* rv,
                                          const unsigned char* sigs, long long ny, long long nx,
                                          long long i, long long j, float a, float b) {
    long long k = j * nx + i;
    long long tri[6];
    int half[6];
    int n = fzs_incident(ny, nx, i, j, tri, half);
    for (int t = 0; t < n; t++) {
        long long q = tri[t] / 2;
        long long qi = q % (nx - 1), qj = q / (nx - 1);
        long long idx[3];
        fzs_tri_vertices(nx, qi, qj, half[t], idx);
        float pu[3], pv[3];
        for (int c = 0; c < 3; c++) {
            pu[c] = idx[c] == k ? a : ru[idx[c]];
            pv[c] = idx[c] == k ? b : rv[idx[c]];
        }
        if (fzs_signature(pu, pv, half[t]) != sigs[tri[t]]) return false;
    }
    return true;
}

// Ring: the fast path of an interior vertex whose six triangles hold no
// critical point (ring E, NE, N, W, SW, S counter-clockwise).
struct FzsRing {
    float u[6], v[6];
    double edge[6];
};

// Ring::new: false (None) on the border or next to a critical point.
static __device__ bool fzs_ring_new(const float* ru, const float* rv, const unsigned char* sigs,
                                    long long ny, long long nx, long long i, long long j,
                                    FzsRing* r) {
    if (i == 0 || j == 0 || i + 1 >= nx || j + 1 >= ny) return false;
    // incident_ids, interior pattern around quad q
    long long q = j * (nx - 1) + i;
    long long ids[6] = {2 * q, 2 * q + 1, 2 * (q - 1), 2 * (q - nx) + 1, 2 * (q - nx),
                        2 * (q - nx + 1) + 1};
    for (int t = 0; t < 6; t++)
        if (sigs[ids[t]] != 0) return false;
    long long k = j * nx + i;
    long long ring[6] = {k + 1, k + nx + 1, k + nx, k - 1, k - nx - 1, k - nx};
    for (int a = 0; a < 6; a++) {
        r->u[a] = ru[ring[a]];
        r->v[a] = rv[ring[a]];
    }
    for (int a = 0; a < 6; a++) {
        int b = (a + 1) % 6;
        r->edge[a] = (double)r->u[a] * (double)r->v[b] - (double)r->u[b] * (double)r->v[a];
    }
    return true;
}

// Ring::stays_free
static __device__ bool fzs_stays_free(const FzsRing* r, float xf, float yf) {
    double x = (double)xf, y = (double)yf;
    double d[6];
    for (int a = 0; a < 6; a++) d[a] = x * (double)r->v[a] - (double)r->u[a] * y;
    for (int a = 0; a < 6; a++) {
        double m[3] = {r->edge[a], -d[(a + 1) % 6], d[a]};
        if (!fzk_finite64(m[0] + m[1] + m[2])) continue;
        bool pos = (m[0] > 0.0) || (m[1] > 0.0) || (m[2] > 0.0);
        bool neg = (m[0] < 0.0) || (m[1] < 0.0) || (m[2] < 0.0);
        if (pos != neg) return false;
    }
    return true;
}

// decide (cap = +inf: ids from `from`, the level's first, LevelPlan::first_id):
// true with the id, codes and reconstruction of the first id that keeps the
// topology; false for Decision::Exact.
static __device__ bool fzs_decide(const float* u, const float* v, const float* ru,
                                  const float* rv, const unsigned char* sigs, double xi,
                                  int from, long long ny, long long nx, long long i, long long j,
                                  const FzsPred* pred, int* id_out, int* q, float* r) {
    long long k = j * nx + i;
    float x = u[k], y = v[k];
    double pu = fzs_pred_apply(pred, ru), pw = fzs_pred_apply(pred, rv);
    FzsRing ring;
    bool fast = fzs_ring_new(ru, rv, sigs, ny, nx, i, j, &ring);
    for (int id = from; id < FZK_NUM_IDS; id++) {
        double eb = fzk_eb_of_id(xi, id);
        if (!fzk_quantize(x, pu, eb, &q[0], &r[0]) || !fzk_quantize(y, pw, eb, &q[1], &r[1]))
            continue;
        bool keeps = fast ? fzs_stays_free(&ring, r[0], r[1])
                          : fzs_keeps_topology(ru, rv, sigs, ny, nx, i, j, r[0], r[1]);
        if (keeps) {
            *id_out = id;
            return true;
        }
    }
    return false;
}

static __device__ __forceinline__ long long fzs_count(long long start, long long len,
                                                      long long step) {
    return start < len ? (len - start + step - 1) / step : 0;
}

// The targets of (step, phase) in an ny x nx field (speculative::Targets):
// rows r0, r0 + step, ..., columns c0, c0 + step, ...; `count` of them.
struct FzsTargets {
    long long r0, c0, step, cols, count;
};
static __device__ __forceinline__ FzsTargets fzs_targets(long long s, int phase, long long ny,
                                                         long long nx) {
    FzsTargets t;
    t.r0 = phase == FZS_HORIZONTAL ? 0 : s;
    t.c0 = phase == FZS_VERTICAL ? 0 : s;
    t.step = 2 * s;
    t.cols = fzs_count(t.c0, nx, t.step);
    t.count = fzs_count(t.r0, ny, t.step) * t.cols;
    return t;
}
// Target k of `t` (row by row): its column i and row j.
static __device__ __forceinline__ void fzs_target(const FzsTargets* t, long long k, long long* i,
                                                  long long* j) {
    *j = t->r0 + (k / t->cols) * t->step;
    *i = t->c0 + (k % t->cols) * t->step;
}

// Decides one vertex and records it: exact flag, id, codes, and the
// reconstruction in (nu, nv) (the original value for an exact vertex).
static __device__ void fzs_decide_and_record(const float* u, const float* v, const float* ru,
                                             const float* rv, const unsigned char* sigs,
                                             unsigned char* exact, unsigned char* ids, int* codes,
                                             float* nu, float* nv, long long ny, long long nx,
                                             double xi, int from, long long i, long long j,
                                             const FzsPred* pred) {
    long long k = j * nx + i;
    int id = 0, q[2] = {0, 0};
    float r[2] = {u[k], v[k]};
    if (!exact[k] && fzs_decide(u, v, ru, rv, sigs, xi, from, ny, nx, i, j, pred, &id, q, r)) {
        ids[k] = (unsigned char)id;
        codes[2 * k] = q[0];
        codes[2 * k + 1] = q[1];
        nu[k] = r[0];
        nv[k] = r[1];
    } else {
        exact[k] = 1;
        nu[k] = u[k];
        nv[k] = v[k];
    }
}

// ------------------------------------------------------------ kernels

// Signature (Sig byte) and degeneracy of every triangle (forced.rs).
extern "C" __global__ void factz_s_classify(const float* u, const float* v, long long ny,
                                            long long nx, unsigned char* sigs,
                                            unsigned char* degenerate) {
    if (ny < 2 || nx < 2) return;
    long long n = 2 * (ny - 1) * (nx - 1);
    for (long long t = fzs_thread(); t < n; t += fzs_threads()) {
        long long q = t / 2;
        int half = (int)(t % 2);
        long long idx[3];
        fzs_tri_vertices(nx, q % (nx - 1), q / (nx - 1), half, idx);
        float pu[3] = {u[idx[0]], u[idx[1]], u[idx[2]]};
        float pv[3] = {v[idx[0]], v[idx[1]], v[idx[2]]};
        bool deg;
        sigs[t] = fzs_classify(pu, pv, half, &deg);
        degenerate[t] = deg ? 1 : 0;
    }
}

// forced_exact_and_signatures' mask: non-finite or zero vectors, the chunk
// perimeter, and vertices of degenerate triangles (read per vertex, no races).
extern "C" __global__ void factz_s_forced(const float* u, const float* v, long long ny,
                                          long long nx, int chunk_of_larger,
                                          const unsigned char* degenerate, unsigned char* exact) {
    for (long long k = fzs_thread(); k < ny * nx; k += fzs_threads()) {
        long long i = k % nx, j = k / nx;
        float a = u[k], b = v[k];
        bool e = !fzk_finite32(a) || !fzk_finite32(b) || (a == 0.0f && b == 0.0f);
        if (chunk_of_larger && (i == 0 || j == 0 || i == nx - 1 || j == ny - 1)) e = true;
        long long tri[6];
        int half[6];
        int n = fzs_incident(ny, nx, i, j, tri, half);
        for (int t = 0; t < n; t++)
            if (degenerate[tri[t]]) e = true;
        exact[k] = e ? 1 : 0;
    }
}

// The anchors, sequentially in raster order (each Lorenzo prediction reads the
// reconstructions of the anchors before it). One thread; the others return.
extern "C" __global__ void factz_s_anchors(const float* u, const float* v, float* ru, float* rv,
                                           const unsigned char* sigs, unsigned char* exact,
                                           unsigned char* ids, int* codes, long long ny,
                                           long long nx, double xi, int from) {
    if (fzs_thread() != 0) return;
    for (long long j = 0; j < ny; j += FZK_STRIDE)
        for (long long i = 0; i < nx; i += FZK_STRIDE) {
            FzsPred pred = fzs_pred_anchor(nx, i, j);
            // Anchors are 256 apart: no anchor's triangles or predictor read
            // another's pending value, so recording straight into ru/rv is the
            // CPU's decide-then-commit.
            fzs_decide_and_record(u, v, ru, rv, sigs, exact, ids, codes, ru, rv, ny, nx, xi, from,
                                  i, j, &pred);
        }
}

// One thread per target of (step, phase): decides from the state (ru, rv)
// before the phase and writes its reconstruction to (nu, nv).
extern "C" __global__ void factz_s_phase(const float* u, const float* v, const float* ru,
                                         const float* rv, const unsigned char* sigs,
                                         unsigned char* exact, unsigned char* ids, int* codes,
                                         float* nu, float* nv, long long ny, long long nx,
                                         double xi, int from, long long s, int phase) {
    FzsTargets tg = fzs_targets(s, phase, ny, nx);
    for (long long t = fzs_thread(); t < tg.count; t += fzs_threads()) {
        long long i, j;
        fzs_target(&tg, t, &i, &j);
        FzsPred pred = fzs_pred_new(ny, nx, i, j, s, phase);
        fzs_decide_and_record(u, v, ru, rv, sigs, exact, ids, codes, nu, nv, ny, nx, xi, from, i,
                              j, &pred);
    }
}

// Commits a phase: its targets' values from (nu, nv) into (ru, rv).
extern "C" __global__ void factz_s_apply(float* ru, float* rv, const float* nu, const float* nv,
                                         long long ny, long long nx, long long s, int phase) {
    FzsTargets tg = fzs_targets(s, phase, ny, nx);
    for (long long t = fzs_thread(); t < tg.count; t += fzs_threads()) {
        long long i, j;
        fzs_target(&tg, t, &i, &j);
        long long k = j * nx + i;
        ru[k] = nu[k];
        rv[k] = nv[k];
    }
}

// decode_one: vertex k's value from its stream slot (raw pair or coded entry).
// `raw` holds the stream's raw words as floats: a load and store copies the
// bits (NaN payloads included), so no bit-cast intrinsic is needed.
static __device__ void fzs_decode_one(const unsigned char* exact, const float* raw,
                                      const unsigned int* ids, const unsigned int* codes,
                                      const long long* slot, const float* u, const float* v,
                                      double xi, const FzsPred* pred, float* out) {
    long long k = pred->k, c = slot[k];
    if (exact[k]) {
        out[0] = raw[2 * c];
        out[1] = raw[2 * c + 1];
        return;
    }
    double eb = fzk_eb_of_id(xi, (int)ids[c]);
    double pu = fzs_pred_apply(pred, u), pw = fzs_pred_apply(pred, v);
    // unzigzag
    int qa = (int)(codes[2 * c] >> 1) ^ -(int)(codes[2 * c] & 1u);
    int qb = (int)(codes[2 * c + 1] >> 1) ^ -(int)(codes[2 * c + 1] & 1u);
    out[0] = fzk_reconstruct(pu, eb, qa);
    out[1] = fzk_reconstruct(pw, eb, qb);
}

// The decoder's anchors, sequentially in raster order. The host has checked
// the counts and ids (speculative::decode's checks) and built `slot`.
extern "C" __global__ void factz_s_decode_anchors(const unsigned char* exact,
                                                  const float* raw, const unsigned int* ids,
                                                  const unsigned int* codes, const long long* slot,
                                                  float* u, float* v, long long ny, long long nx,
                                                  double xi) {
    if (fzs_thread() != 0) return;
    for (long long j = 0; j < ny; j += FZK_STRIDE)
        for (long long i = 0; i < nx; i += FZK_STRIDE) {
            FzsPred pred = fzs_pred_anchor(nx, i, j);
            float val[2];
            fzs_decode_one(exact, raw, ids, codes, slot, u, v, xi, &pred, val);
            u[pred.k] = val[0];
            v[pred.k] = val[1];
        }
}

// One thread per target of (step, phase): its value into (nu, nv); the host
// commits with factz_s_apply.
extern "C" __global__ void factz_s_decode_phase(const unsigned char* exact,
                                                const float* raw, const unsigned int* ids,
                                                const unsigned int* codes, const long long* slot,
                                                const float* u, const float* v, float* nu,
                                                float* nv, long long ny, long long nx, double xi,
                                                long long s, int phase) {
    FzsTargets tg = fzs_targets(s, phase, ny, nx);
    for (long long t = fzs_thread(); t < tg.count; t += fzs_threads()) {
        long long i, j;
        fzs_target(&tg, t, &i, &j);
        FzsPred pred = fzs_pred_new(ny, nx, i, j, s, phase);
        float val[2];
        fzs_decode_one(exact, raw, ids, codes, slot, u, v, xi, &pred, val);
        nu[pred.k] = val[0];
        nv[pred.k] = val[1];
    }
}

// ------------------------------------------------------------ stream order

// The vertex at position p of speculative's processing order
// (speculative::schedule after the anchors): the anchors in raster order, then each (step,
// phase)'s targets row by row; -1 past the end.
static __device__ long long fzs_scheduled(long long p, long long ny, long long nx) {
    long long rows = fzs_count(0, ny, FZK_STRIDE), cols = fzs_count(0, nx, FZK_STRIDE);
    if (p < rows * cols) return (p / cols) * FZK_STRIDE * nx + (p % cols) * FZK_STRIDE;
    p -= rows * cols;
    for (long long s = FZK_STRIDE / 2; s >= 1; s /= 2)
        for (int phase = FZS_HORIZONTAL; phase <= FZS_CENTER; phase++) {
            FzsTargets tg = fzs_targets(s, phase, ny, nx);
            if (p < tg.count) {
                long long i, j;
                fzs_target(&tg, p, &i, &j);
                return j * nx + i;
            }
            p -= tg.count;
        }
    return -1;
}

// flags[p] = exact flag of the vertex at position p; their exclusive scan
// (kernels/scan.cu) is `before`: the exact vertices ahead of each position.
extern "C" __global__ void factz_s_order_exact(const unsigned char* exact, long long ny,
                                               long long nx, unsigned int* flags) {
    for (long long p = fzs_thread(); p < ny * nx; p += fzs_threads())
        flags[p] = exact[fzs_scheduled(p, ny, nx)];
}

// The Parts in stream order (speculative::encode's order): the vertex at position p is exact vertex before[p] (its (u, v) bits
// into raw) or coded vertex p - before[p] (bound id, zig-zag codes). u and v
// are read as 32-bit words: the bits go into the stream unchanged.
extern "C" __global__ void factz_s_assemble(const unsigned int* u, const unsigned int* v,
                                            const unsigned char* exact, const unsigned char* ids,
                                            const int* codes, const unsigned long long* before,
                                            long long ny, long long nx, unsigned int* raw,
                                            unsigned int* out_ids, unsigned int* out_codes) {
    for (long long p = fzs_thread(); p < ny * nx; p += fzs_threads()) {
        long long k = fzs_scheduled(p, ny, nx), r = (long long)before[p];
        if (exact[k]) {
            raw[2 * r] = u[k];
            raw[2 * r + 1] = v[k];
        } else {
            long long c = p - r;
            out_ids[c] = ids[k];
            out_codes[2 * c] = fzk_zigzag(codes[2 * k]);
            out_codes[2 * c + 1] = fzk_zigzag(codes[2 * k + 1]);
        }
    }
}

// The decoder's slots (speculative::decode's): vertex k's raw pair when
// exact, else its entry among the coded vertices.
extern "C" __global__ void factz_s_slots(const unsigned char* exact,
                                         const unsigned long long* before, long long ny,
                                         long long nx, long long* slot) {
    for (long long p = fzs_thread(); p < ny * nx; p += fzs_threads()) {
        long long k = fzs_scheduled(p, ny, nx), r = (long long)before[p];
        slot[k] = exact[k] ? r : p - r;
    }
}

// The host build's launch-by-name entry points (kernels/shim/cuda_host.hpp);
// nothing under NVRTC.
#ifndef FZSHIM_EXPORT
#define FZSHIM_EXPORT(kernel)
#endif
FZSHIM_EXPORT(factz_s_classify)
FZSHIM_EXPORT(factz_s_forced)
FZSHIM_EXPORT(factz_s_anchors)
FZSHIM_EXPORT(factz_s_phase)
FZSHIM_EXPORT(factz_s_apply)
FZSHIM_EXPORT(factz_s_decode_anchors)
FZSHIM_EXPORT(factz_s_decode_phase)
FZSHIM_EXPORT(factz_s_order_exact)
FZSHIM_EXPORT(factz_s_assemble)
FZSHIM_EXPORT(factz_s_slots)
