// The device formulas two or more kernels/*.cu files share, once.
//
// Not compiled on its own: src/kernels.rs (`factz::kernels::prelude`) puts the
// `#define FZK_*` block generated from the Rust constants, then this file, in
// front of every kernel file, for NVRTC (`gpu::exec::sources`) and for the
// shim's host build (tests/common/kernels_host.rs) alike. So the kernel files
// keep no #include, and no constant Rust defines is typed here by hand.
//
// Every function names the Rust item it mirrors (its kernel twin), and keeps
// the CPU's f64 operations in the same order (ARCHITECTURE.md, "Bit-identical
// rule"). Every name is `static` (each kernel file is its own translation unit
// and the host build links them all into one library) and `inline` (a file
// that does not call one gets no unused-function warning).

// ------------------------------------------------------------ bit helpers

// Every lane of a warp (__ballot_sync, __shfl_sync).
#define FZK_FULL_WARP 0xffffffffu

static __device__ __forceinline__ unsigned long long fzk_bits(double x) {
    return (unsigned long long)__double_as_longlong(x);
}
static __device__ __forceinline__ double fzk_from_bits(unsigned long long b) {
    return __longlong_as_double((long long)b);
}
// f32::is_finite / f64::is_finite from the exponent bits (no math library).
static __device__ __forceinline__ bool fzk_finite32(float x) {
    return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}
static __device__ __forceinline__ bool fzk_finite64(double x) {
    return (fzk_bits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
// f64::abs: the sign bit cleared (NaN stays NaN). Mode B's and the codec's
// copies called fabs, which gives the same bits for every input.
static __device__ __forceinline__ double fzk_fabs(double x) {
    return __longlong_as_double(__double_as_longlong(x) & 0x7fffffffffffffffll);
}

// ------------------------------------------------------------ exact.rs

// two_sum: s + err == a + b exactly.
static __device__ __forceinline__ double fzk_two_sum(double a, double b, double* err) {
    double s = a + b;
    double bb = s - a;
    *err = (a - (s - bb)) + (b - bb);
    return s;
}

// exact_sign: grow a nonoverlapping expansion with zero elimination, in place
// (entry c is read before any write at an index <= c); its last component has
// the sign. An expansion never exceeds the term count, and n <= 22 (mode S's
// discriminant; mode B's m_is_zero has 6). Mode B's copy grew the expansion
// into a second array of 8; the f64 operations and their order were the
// same, only where the components were kept differed.
static __device__ inline int fzk_exact_sign(const double* terms, int n) {
    double e[24];
    int ne = 0;
    for (int t = 0; t < n; t++) {
        double q = terms[t];
        int nn = 0;
        for (int c = 0; c < ne; c++) {
            double err;
            q = fzk_two_sum(q, e[c], &err);
            if (err != 0.0) e[nn++] = err;
        }
        if (q != 0.0) e[nn++] = q;
        ne = nn;
    }
    if (ne == 0) return 0;
    return e[ne - 1] > 0.0 ? 1 : (e[ne - 1] < 0.0 ? -1 : 0);
}

// sign_of_sum: the CPU's float filter (same sums, same bound), the exact
// expansion where the filter cannot decide: it only answers when it has
// proved the sign.
static __device__ inline int fzk_sign_of_sum(const double* terms, int n) {
    double s = 0.0, a = 0.0;
    for (int t = 0; t < n; t++) {
        s += terms[t];
        a += fzk_fabs(terms[t]);
    }
    double bound = (double)n * 4.0 * FZK_EPS * a;
    if (s > bound && s > 1e-300) return 1;
    if (s < -bound && s < -1e-300) return -1;
    if (a == 0.0) return 0;
    return fzk_exact_sign(terms, n);
}

// ------------------------------------------------------------ topology.rs

// m_products over (a, b) = (1,2), (2,0), (0,1): t1 = u_a v_b, t2 = u_b v_a;
// m_k = t1[k] - t2[k].
static __device__ __forceinline__ void fzk_m_products(const float* pu, const float* pv,
                                                      double* t1, double* t2) {
    const int pa[3] = {1, 2, 0}, pb[3] = {2, 0, 1};
    for (int k = 0; k < 3; k++) {
        t1[k] = (double)pu[pa[k]] * (double)pv[pb[k]];
        t2[k] = (double)pu[pb[k]] * (double)pv[pa[k]];
    }
}

// orientation_of: 2 for None (a non-finite triangle), else -1, 0, 1.
static __device__ __forceinline__ int fzk_orientation_of(const double* m) {
    if (!fzk_finite64(m[0] + m[1] + m[2])) return 2;
    bool pos = (m[0] > 0.0) | (m[1] > 0.0) | (m[2] > 0.0);
    bool neg = (m[0] < 0.0) | (m[1] < 0.0) | (m[2] < 0.0);
    if (pos && !neg) return 1;
    if (neg && !pos) return -1;
    return 0;
}

// m_is_zero: the six exact products sum to zero.
static __device__ __forceinline__ bool fzk_m_is_zero(const double* t1, const double* t2) {
    double terms[6] = {t1[0], -t2[0], t1[1], -t2[1], t1[2], -t2[2]};
    return fzk_sign_of_sum(terms, 6) == 0;
}

// ------------------------------------------------------------ quantize.rs

// eb_of_id: xi * 2^-k, the power of two built exactly from its bits. Mode B's
// codec passed k as unsigned int ((1023ull - k) << 52): the same bits for
// every k <= 1023, and ids are bytes.
static __device__ __forceinline__ double fzk_eb_of_id(double xi, int k) {
    return xi * fzk_from_bits((unsigned long long)(1023 - k) << 52);
}

// id_for_bound: the smallest id whose bound is <= e, or -1 (None). Exponent
// and mantissa bits decide where every id's bound is normal; else the search
// from the exponents' difference (see quantize.rs for both).
static __device__ inline int fzk_id_for_bound(double xi, double e) {
    if (e >= xi) return 0;
    if (e != e || e <= 0.0) return -1;
    const unsigned long long mantissa = (1ull << 52) - 1;
    unsigned long long bx = fzk_bits(xi), be = fzk_bits(e);
    long long px = (long long)(bx >> 52), pe = (long long)(be >> 52);
    if (pe > 0 && px > FZK_NUM_IDS && px < 0x7ff) {
        long long k = px - pe + ((bx & mantissa) > (be & mantissa) ? 1 : 0);
        return k < FZK_NUM_IDS ? (int)k : -1;
    }
    long long guess = px - pe;
    if (guess < 0) guess = 0;
    if (guess > FZK_NUM_IDS) guess = FZK_NUM_IDS;
    for (int k = (int)guess; k < FZK_NUM_IDS; k++)
        if (fzk_eb_of_id(xi, k) <= e) return k;
    return -1;
}

// pv: a neighbour as a predictor input; non-finite values predict as 0.
static __device__ __forceinline__ double fzk_predictor_input(float x) { return fzk_finite32(x) ? (double)x : 0.0; }

// reconstruct: one formula, one operation order, f64 then round to f32.
static __device__ __forceinline__ float fzk_reconstruct(double pred, double eb, int q) {
    return (float)(pred + (2.0 * eb) * (double)q);
}

// within: |r - x| <= eb decided exactly (two-sum of the f64 difference).
static __device__ __forceinline__ bool fzk_within(float r, float x, double eb) {
    double a = (double)r, b = (double)x;
    double s = a - b;
    double bb = s - a;
    double err = (a - (s - bb)) + (-b - bb);
    double abs = fzk_fabs(s);
    return abs < eb || (abs == eb && (err == 0.0 || (err < 0.0) == (s > 0.0)));
}

// quantize: false (None) when the code is out of range or the reconstruction
// is not finite and within eb; q_out and r_out are written only on success.
// Rust's f64::round (half away from zero) is computed exactly without the math
// library: for |y| < 2^21 the integer part fits a long long, y - trunc(y) is
// exact, and |y| >= 2^21 rounds past RADIUS = 2^20 anyway; NaN fails the range
// test as `q.is_nan()` does. (Mode S's copy also wrote q and r when within
// failed; its only caller reads them only after success.)
static __device__ inline bool fzk_quantize(float x, double pred, double eb, int* q_out,
                                           float* r_out) {
    if (eb != eb || eb <= 0.0 || !fzk_finite32(x)) return false;
    double y = ((double)x - pred) / (2.0 * eb);
    if (!(fzk_fabs(y) < 2.0 * (double)FZK_RADIUS)) return false;
    double t = (double)(long long)y;
    double frac = y - t;
    if (frac >= 0.5) t += 1.0;
    if (frac <= -0.5) t -= 1.0;
    if (fzk_fabs(t) > (double)FZK_RADIUS) return false;
    int q = (int)t;
    float r = fzk_reconstruct(pred, eb, q);
    if (!(fzk_finite32(r) && fzk_within(r, x, eb))) return false;
    *q_out = q;
    *r_out = r;
    return true;
}

// ------------------------------------------------------------ codec/mod.rs

// zigzag / unzigzag (an arithmetic shift of a negative int, as in CUDA and C++20).
static __device__ __forceinline__ unsigned int fzk_zigzag(int x) {
    return ((unsigned int)x << 1) ^ (unsigned int)(x >> 31);
}
static __device__ __forceinline__ int fzk_unzigzag(unsigned int x) {
    return (int)(x >> 1) ^ -(int)(x & 1u);
}
