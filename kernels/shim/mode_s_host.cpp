// Host entry points for kernels/mode_s.cu compiled as C++ with the shim
// (tests/gpu_mode_s.rs): the same launch sequence src/gpu/mode_s.rs runs on a
// device, one launch per kernel and per (step, phase), in schedule order.

#include <vector>

extern "C" __global__ void factz_s_classify(const float* u, const float* v, long long ny,
                                            long long nx, unsigned char* sigs,
                                            unsigned char* degenerate);
extern "C" __global__ void factz_s_forced(const float* u, const float* v, long long ny,
                                          long long nx, int chunk_of_larger,
                                          const unsigned char* degenerate, unsigned char* exact);
extern "C" __global__ void factz_s_anchors(const float* u, const float* v, float* ru, float* rv,
                                           const unsigned char* sigs, unsigned char* exact,
                                           unsigned char* ids, int* codes, long long ny,
                                           long long nx, double xi);
extern "C" __global__ void factz_s_phase(const float* u, const float* v, const float* ru,
                                         const float* rv, const unsigned char* sigs,
                                         unsigned char* exact, unsigned char* ids, int* codes,
                                         float* nu, float* nv, long long ny, long long nx,
                                         double xi, long long s, int phase);
extern "C" __global__ void factz_s_apply(float* ru, float* rv, const float* nu, const float* nv,
                                         long long ny, long long nx, long long s, int phase);
extern "C" __global__ void factz_s_decode_anchors(const unsigned char* exact,
                                                  const float* raw, const unsigned int* ids,
                                                  const unsigned int* codes, const long long* slot,
                                                  float* u, float* v, long long ny, long long nx,
                                                  double xi);
extern "C" __global__ void factz_s_decode_phase(const unsigned char* exact,
                                                const float* raw, const unsigned int* ids,
                                                const unsigned int* codes, const long long* slot,
                                                const float* u, const float* v, float* nu,
                                                float* nv, long long ny, long long nx, double xi,
                                                long long s, int phase);

namespace {

constexpr unsigned int kBlock = 128;

// Blocks of kBlock threads covering n items (at least one block).
dim3 blocks_for(long long n) {
    long long b = (n + kBlock - 1) / kBlock;
    return dim3((unsigned int)(b < 1 ? 1 : b));
}

long long targets(long long ny, long long nx, long long s, int phase) {
    long long r0 = phase == 0 ? 0 : s, c0 = phase == 1 ? 0 : s;
    long long rows = r0 < ny ? (ny - r0 + 2 * s - 1) / (2 * s) : 0;
    long long cols = c0 < nx ? (nx - c0 + 2 * s - 1) / (2 * s) : 0;
    return rows * cols;
}

}  // namespace

// Mode S's decisions for one field (plain path): per vertex the exact flag,
// the bound id and two codes of a coded vertex, and the reconstruction.
// os_threads = 0 runs blocks as fibers, 1 as std::threads. Returns 0, or 1
// when a launch failed.
extern "C" int factz_host_s_encode(const float* u, const float* v, long long ny, long long nx,
                                   double xi, int chunk_of_larger, unsigned char* sigs,
                                   unsigned char* exact, unsigned char* ids, int* codes,
                                   float* ru, float* rv, int os_threads) {
    try {
        fzshim::Mode mode = os_threads ? fzshim::Mode::Threads : fzshim::Mode::Fibers;
        long long n = ny * nx, ntri = ny > 1 && nx > 1 ? 2 * (ny - 1) * (nx - 1) : 0;
        std::vector<unsigned char> degenerate(ntri > 0 ? ntri : 1);
        std::vector<float> nu(u, u + n), nv(v, v + n);
        for (long long k = 0; k < n; k++) {
            ru[k] = u[k];
            rv[k] = v[k];
        }
        fzshim::launch(mode, blocks_for(ntri), dim3(kBlock), factz_s_classify, u, v, ny, nx, sigs,
                       degenerate.data());
        fzshim::launch(mode, blocks_for(n), dim3(kBlock), factz_s_forced, u, v, ny, nx,
                       chunk_of_larger, (const unsigned char*)degenerate.data(), exact);
        fzshim::launch(mode, dim3(1), dim3(32), factz_s_anchors, u, v, ru, rv,
                       (const unsigned char*)sigs, exact, ids, codes, ny, nx, xi);
        for (long long s = 128; s >= 1; s /= 2)
            for (int phase = 0; phase < 3; phase++) {
                long long t = targets(ny, nx, s, phase);
                if (t == 0) continue;
                fzshim::launch(mode, blocks_for(t), dim3(kBlock), factz_s_phase, u, v,
                               (const float*)ru, (const float*)rv, (const unsigned char*)sigs,
                               exact, ids, codes, nu.data(), nv.data(), ny, nx, xi, s, phase);
                fzshim::launch(mode, blocks_for(t), dim3(kBlock), factz_s_apply, ru, rv,
                               (const float*)nu.data(), (const float*)nv.data(), ny, nx, s, phase);
            }
        return 0;
    } catch (...) {
        return 1;
    }
}

// Mode S's decoder replay into u, v; slot[k] is vertex k's entry in raw (pairs)
// or in ids/codes, from the exact mask in schedule order (checked by the host).
extern "C" int factz_host_s_decode(const unsigned char* exact, const float* raw,
                                   const unsigned int* ids, const unsigned int* codes,
                                   const long long* slot, long long ny, long long nx, double xi,
                                   float* u, float* v, int os_threads) {
    try {
        fzshim::Mode mode = os_threads ? fzshim::Mode::Threads : fzshim::Mode::Fibers;
        long long n = ny * nx;
        std::vector<float> nu(n > 0 ? n : 1), nv(n > 0 ? n : 1);
        fzshim::launch(mode, dim3(1), dim3(32), factz_s_decode_anchors, exact, raw, ids, codes,
                       slot, u, v, ny, nx, xi);
        for (long long s = 128; s >= 1; s /= 2)
            for (int phase = 0; phase < 3; phase++) {
                long long t = targets(ny, nx, s, phase);
                if (t == 0) continue;
                fzshim::launch(mode, blocks_for(t), dim3(kBlock), factz_s_decode_phase, exact, raw,
                               ids, codes, slot, (const float*)u, (const float*)v, nu.data(),
                               nv.data(), ny, nx, xi, s, phase);
                fzshim::launch(mode, blocks_for(t), dim3(kBlock), factz_s_apply, u, v,
                               (const float*)nu.data(), (const float*)nv.data(), ny, nx, s, phase);
            }
        return 0;
    } catch (...) {
        return 1;
    }
}
