/* float64 particles through the C ABI: factz_particles_compress_f64 (AoS and
 * SoA), the _f64 decompressors, factz_particles_info's dtype (and a v1 caller's
 * struct_size), factz_fof_labels_f64, and the refusals (float32 reads of a
 * float64 stream and the reverse, the SZ3 base, the CUDA backend). Writes
 * the original, both reconstructions and the FoF labels to DIR for the Rust
 * side's independent oracle (tests/c_api.rs). */
#include "factz.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (cond) {                                                               \
            passed++;                                                             \
        } else {                                                                  \
            failed++;                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, " [factz_last_error: %s]\n", factz_last_error());     \
        }                                                                         \
    } while (0)

/* |r - x| <= eb decided exactly: two-sum recovers the rounding of r - x. */
static int within(double r, double x, double eb) {
    double s = r - x;
    double bb = s - r;
    double err = (r - (s - bb)) + (-x - bb);
    double abs_s = fabs(s);
    return abs_s < eb || (abs_s == eb && (err == 0.0 || ((err < 0.0) == (s > 0.0))));
}

enum { N = 3000 };
static const double B = 0.01, XI = 2e-4, OFFSET = 1e6;

static uint64_t state = 0x243F6A8885A308D3ull;
static double uniform(void) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(state >> 11) / 9007199254740992.0;
}

/* Clusters around 1e6 (coordinates of 53 significant bits), and every tenth
 * particle a partner at distance b plus or minus a few ulps along x. */
static void make_particles(double *xyz) {
    for (int k = 0; k < N; k++) {
        double *p = xyz + 3 * k;
        if (k % 10 == 9) {
            const double *q = p - 3;
            int ulps = (int)(uniform() * 7) - 3;
            p[0] = nextafter(q[0] + B, ulps > 0 ? INFINITY : -INFINITY);
            for (int u = 1; u < abs(ulps); u++) p[0] = nextafter(p[0], ulps > 0 ? INFINITY : -INFINITY);
            p[1] = q[1];
            p[2] = q[2];
            continue;
        }
        int c = k / 50;
        for (int a = 0; a < 3; a++)
            p[a] = OFFSET + 0.05 * (c % 7) + 0.07 * a * (c % 5) + 0.012 * uniform();
    }
}

static void save(const char *dir, const char *name, const void *data, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    CHECK(fwrite(data, 1, bytes, f) == bytes, "write %s", path);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: particles_f64 DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    static double xyz[3 * N], back[3 * N], x[N], y[N], z[N], dx[N], dy[N], dz[N];
    make_particles(xyz);
    save(dir, "orig.f64", xyz, sizeof xyz);
    for (int k = 0; k < N; k++) {
        x[k] = xyz[3 * k];
        y[k] = xyz[3 * k + 1];
        z[k] = xyz[3 * k + 2];
    }
    size_t cap = 0;
    CHECK(factz_particles_max_compressed_size_f64(N, &cap) == FACTZ_OK, "max size");
    CHECK(cap >= 24 * (size_t)N, "max size %zu covers the raw doubles", cap);
    uint8_t *buf = malloc(cap);

    factz_particles_config cfg = {.struct_size = sizeof cfg};
    factz_particles_config_default(&cfg);
    cfg.bound_kind = FACTZ_BOUND_ABS;
    cfg.bound = XI;
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = B;
    factz_particles_report rep = {.struct_size = sizeof rep};
    size_t len = 0;
    int st = factz_particles_compress_f64(xyz, N, &cfg, buf, cap, &len, &rep);
    CHECK(st == FACTZ_OK, "compress_f64: %d", st);
    CHECK(rep.abs_bound == XI && rep.linking_length == B, "report %g %g", rep.abs_bound,
          rep.linking_length);
    CHECK(len < 24 * (size_t)N, "%zu bytes for %d doubles", len, 3 * N);
    factz_particles_stream_info info = {.struct_size = sizeof info};
    CHECK(factz_particles_info(buf, len, &info) == FACTZ_OK, "info");
    CHECK(info.dtype == 2 && info.n == N && info.layout == FACTZ_LAYOUT_AOS, "dtype %u n %llu",
          info.dtype, (unsigned long long)info.n);
    /* A caller compiled against the 72-byte v1 struct still gets its fields. */
    factz_particles_stream_info v1;
    memset(&v1, 0xAB, sizeof v1);
    v1.struct_size = 72;
    CHECK(factz_particles_info(buf, len, &v1) == FACTZ_OK && v1.n == N, "v1 info");
    CHECK(v1.dtype == 0xABABABABu, "v1 info wrote past its 72 bytes");
    CHECK(factz_particles_decompress_f64(buf, len, back, N) == FACTZ_OK, "decompress_f64");
    int bad = 0;
    for (int k = 0; k < 3 * N; k++) bad += !within(back[k], xyz[k], XI);
    CHECK(bad == 0, "%d coordinates outside the bound", bad);
    save(dir, "aos.f64", back, sizeof back);
    static float f[3 * N];
    st = factz_particles_decompress(buf, len, f, N);
    CHECK(st == FACTZ_INVALID_ARGUMENT, "f32 decompress of an f64 stream: %d", st);
    CHECK(strstr(factz_last_error(), "f64") != NULL, "message: %s", factz_last_error());

    st = factz_particles_compress_soa_f64(x, y, z, N, &cfg, buf, cap, &len, NULL);
    CHECK(st == FACTZ_OK, "compress_soa_f64: %d", st);
    CHECK(factz_particles_info(buf, len, &info) == FACTZ_OK && info.layout == FACTZ_LAYOUT_SOA,
          "soa layout");
    CHECK(factz_particles_decompress_soa_f64(buf, len, dx, dy, dz, N) == FACTZ_OK,
          "decompress_soa_f64");
    for (int k = 0; k < N; k++) {
        back[3 * k] = dx[k];
        back[3 * k + 1] = dy[k];
        back[3 * k + 2] = dz[k];
    }
    save(dir, "soa.f64", back, sizeof back);

    /* FoF on the doubles. */
    static uint32_t labels[N];
    CHECK(factz_fof_labels_f64(xyz, N, B, 0.0, labels) == FACTZ_OK, "fof_labels_f64");
    save(dir, "labels.u32", labels, sizeof labels);

    /* Refusals: the SZ3 base, the CUDA backend, an f32 stream read as f64. */
    factz_particles_config c2 = cfg;
    c2.base = FACTZ_BASE_SZ3;
    st = factz_particles_compress_f64(xyz, N, &c2, buf, cap, &len, NULL);
    CHECK(st == FACTZ_UNSUPPORTED && len == 0, "sz3 base: %d", st);
    c2 = cfg;
    c2.backend = FACTZ_BACKEND_CUDA;
    st = factz_particles_compress_f64(xyz, N, &c2, buf, cap, &len, NULL);
    CHECK(st == FACTZ_UNSUPPORTED, "cuda backend: %d", st);
    for (int k = 0; k < 3 * N; k++) f[k] = (float)(xyz[k] - OFFSET);
    CHECK(factz_particles_compress(f, N, &cfg, buf, cap, &len) == FACTZ_OK, "f32 compress");
    CHECK(factz_particles_info(buf, len, &info) == FACTZ_OK && info.dtype == 1, "f32 dtype %u",
          info.dtype);
    st = factz_particles_decompress_f64(buf, len, back, N);
    CHECK(st == FACTZ_INVALID_ARGUMENT, "f64 decompress of an f32 stream: %d", st);
    CHECK(factz_particles_compress_f64(NULL, N, &cfg, buf, cap, &len, NULL) == FACTZ_NULL_POINTER,
          "NULL xyz");
    CHECK(len == 0, "len %zu after a failure", len);
    free(buf);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
