// Host-only entry points into kernels/common.cuh, for the shim tests that
// compare each shared formula with its Rust twin at its edge cases
// (tests/gpu_kernels.rs, `common_cuh_formulas_match_rust`). Compiled by
// tests/common/kernels_host.rs after the same prelude as every kernel file
// (factz::kernels::source); never handed to NVRTC.

extern "C" int fzk_probe_sign_of_sum(const double* terms, int n) { return fzk_sign_of_sum(terms, n); }
extern "C" int fzk_probe_within(float r, float x, double eb) { return fzk_within(r, x, eb) ? 1 : 0; }
extern "C" int fzk_probe_quantize(float x, double pred, double eb, int* q, float* r) {
    return fzk_quantize(x, pred, eb, q, r) ? 1 : 0;
}
extern "C" float fzk_probe_reconstruct(double pred, double eb, int q) { return fzk_reconstruct(pred, eb, q); }
extern "C" double fzk_probe_eb_of_id(double xi, int k) { return fzk_eb_of_id(xi, k); }
extern "C" int fzk_probe_id_for_bound(double xi, double e) { return fzk_id_for_bound(xi, e); }
extern "C" double fzk_probe_predictor_input(float x) { return fzk_predictor_input(x); }
extern "C" unsigned int fzk_probe_zigzag(int x) { return fzk_zigzag(x); }
extern "C" int fzk_probe_unzigzag(unsigned int x) { return fzk_unzigzag(x); }
// m_products then orientation_of (2 = None) and m_is_zero (1 = degenerate).
extern "C" int fzk_probe_orientation(const float* pu, const float* pv, int* zero) {
    double t1[3], t2[3], m[3];
    fzk_m_products(pu, pv, t1, t2);
    for (int k = 0; k < 3; k++) m[k] = t1[k] - t2[k];
    *zero = fzk_m_is_zero(t1, t2) ? 1 : 0;
    return fzk_orientation_of(m);
}
