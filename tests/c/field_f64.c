/*
 * A C program against include/factz.h: float64 fields through the _f64
 * functions (SoA and AoS, both coders, modes S and B), the bound checked
 * exactly, the stream's dtype, and the refusals (the GPU backend, a float32
 * stream read as float64 and the reverse). Writes the original and each decoded field to
 * DIR (argv[1]) as raw doubles for the Rust side's BigInt oracle. Prints
 * "N passed, M failed" and exits non-zero on any failure.
 */
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

enum { NY = 47, NX = 59, N = NY * NX };

/* A smooth field with critical points, nudged below float32's resolution. */
static void make_field(double *u, double *v) {
    const double pi = 3.14159265358979323846;
    for (int j = 0; j < NY; j++) {
        for (int i = 0; i < NX; i++) {
            double x = 2.0 * pi * 1.5 * i / (NX - 1), y = 2.0 * pi * j / (NY - 1);
            int k = j * NX + i;
            u[k] = sin(x) * cos(y) + 0.25 * sin(0.5 * y + 0.3) + 1e-12 * (k % 7);
            v[k] = -cos(x) * sin(y) + 0.2 * cos(0.7 * x) - 1e-12 * (k % 5);
        }
    }
}

static void save(const char *dir, const char *name, const double *u, const double *v) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    CHECK(fwrite(u, sizeof(double), N, f) == N && fwrite(v, sizeof(double), N, f) == N,
          "write %s", path);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: field_f64 DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    static double u[N], v[N], du[N], dv[N], uv[2 * N], duv[2 * N];
    make_field(u, v);
    save(dir, "orig.f64", u, v);
    for (int k = 0; k < N; k++) {
        uv[2 * k] = u[k];
        uv[2 * k + 1] = v[k];
    }
    size_t cap = 0;
    CHECK(factz_field_max_compressed_size_f64(NY, NX, &cap) == FACTZ_OK, "max size");
    CHECK(cap >= 16 * (size_t)N, "max size %zu covers the raw doubles", cap);
    uint8_t *buf = malloc(cap);

    const enum factz_coder coders[3] = {FACTZ_CODER_HUFFMAN, FACTZ_CODER_RANS, FACTZ_CODER_RANS};
    const enum factz_mode modes[3] = {FACTZ_MODE_SPECULATIVE, FACTZ_MODE_SPECULATIVE,
                                      FACTZ_MODE_BLOCKWISE};
    const char *names[3] = {"soa_huffman.f64", "soa_rans.f64", "soa_rans_b.f64"};
    for (int c = 0; c < 3; c++) {
        factz_field_config cfg = {.struct_size = sizeof cfg};
        factz_field_config_default(&cfg);
        cfg.coder = coders[c];
        cfg.mode = modes[c];
        cfg.bound_kind = FACTZ_BOUND_ABS;
        cfg.bound = 1e-3;
        factz_field_report rep = {.struct_size = sizeof rep};
        size_t len = 0;
        int st = factz_field_compress_f64(&cfg, u, v, NY, NX, buf, cap, &len, &rep);
        CHECK(st == FACTZ_OK, "compress_f64 coder %d: %d", c, st);
        CHECK(rep.abs_bound == 1e-3, "report bound %g", rep.abs_bound);
        factz_field_stream_info info = {.struct_size = sizeof info};
        CHECK(factz_field_info(buf, len, &info) == FACTZ_OK, "info");
        CHECK(info.dtype == 2, "dtype %u", info.dtype);
        CHECK(info.ny == NY && info.nx == NX, "shape");
        CHECK(factz_field_decompress_f64(buf, len, du, dv, NY, NX) == FACTZ_OK, "decompress_f64");
        int bad = 0;
        for (int k = 0; k < N; k++) bad += !within(du[k], u[k], 1e-3) + !within(dv[k], v[k], 1e-3);
        CHECK(bad == 0, "%d values outside the bound", bad);
        CHECK(info.mode == (uint32_t)modes[c], "mode %u", info.mode);
        save(dir, names[c], du, dv);
        /* The float32 functions refuse a float64 stream, with a message. */
        static float fu[N], fv[N];
        st = factz_field_decompress(buf, len, fu, fv, NY, NX);
        CHECK(st == FACTZ_INVALID_ARGUMENT, "f32 decompress of an f64 stream: %d", st);
        CHECK(strstr(factz_last_error(), "f64") != NULL, "message: %s", factz_last_error());

        /* Interleaved in and out. */
        st = factz_field_compress_interleaved_f64(&cfg, uv, NY, NX, buf, cap, &len, NULL);
        CHECK(st == FACTZ_OK, "compress_interleaved_f64: %d", st);
        CHECK(factz_field_info(buf, len, &info) == FACTZ_OK && info.layout == FACTZ_LAYOUT_AOS,
              "aos layout");
        st = factz_field_decompress_interleaved_f64(buf, len, duv, NY, NX);
        CHECK(st == FACTZ_OK, "decompress_interleaved_f64: %d", st);
        bad = 0;
        for (int k = 0; k < 2 * N; k++) bad += !within(duv[k], uv[k], 1e-3);
        CHECK(bad == 0, "%d interleaved values outside the bound", bad);
    }

    /* Critical points of the doubles (two calls), written for the oracle. */
    size_t ncp = 0;
    int st0 = factz_field_critical_points_f64(u, v, NY, NX, &ncp, NULL, 0);
    CHECK(ncp > 0 && st0 == FACTZ_BUFFER_TOO_SMALL, "count: %d, %zu", st0, ncp);
    factz_critical_point *cps = calloc(ncp ? ncp : 1, sizeof *cps);
    size_t got = 0;
    CHECK(factz_field_critical_points_f64(u, v, NY, NX, &got, cps, ncp) == FACTZ_OK && got == ncp,
          "critical points: %zu of %zu", got, ncp);
    char cpath[4096];
    snprintf(cpath, sizeof cpath, "%s/cps.txt", dir);
    FILE *cf = fopen(cpath, "w");
    CHECK(cf != NULL, "open %s", cpath);
    for (size_t k = 0; cf && k < got; k++)
        fprintf(cf, "%llu %u\n", (unsigned long long)cps[k].triangle, (unsigned)cps[k].kind);
    if (cf) fclose(cf);
    free(cps);
    CHECK(factz_field_critical_points_f64(NULL, v, NY, NX, &got, NULL, 0) == FACTZ_NULL_POINTER,
          "NULL u");

    /* The GPU backend takes float32 only. */
    factz_field_config cfg = {.struct_size = sizeof cfg};
    factz_field_config_default(&cfg);
    cfg.backend = FACTZ_BACKEND_CUDA;
    size_t len = 7;
    int st = factz_field_compress_f64(&cfg, u, v, NY, NX, buf, cap, &len, NULL);
    CHECK(st == FACTZ_UNSUPPORTED && len == 0, "cuda backend: %d, len %zu", st, len);

    /* A float32 stream read with the _f64 functions is refused. */
    static float fu[N], fv[N];
    for (int k = 0; k < N; k++) {
        fu[k] = (float)u[k];
        fv[k] = (float)v[k];
    }
    factz_field_config_default(&cfg);
    CHECK(factz_field_compress(&cfg, fu, fv, NY, NX, buf, cap, &len) == FACTZ_OK, "f32 compress");
    factz_field_stream_info info = {.struct_size = sizeof info};
    CHECK(factz_field_info(buf, len, &info) == FACTZ_OK && info.dtype == 1, "f32 dtype");
    st = factz_field_decompress_f64(buf, len, du, dv, NY, NX);
    CHECK(st == FACTZ_INVALID_ARGUMENT, "f64 decompress of an f32 stream: %d", st);
    /* Wrong shapes and NULL. */
    CHECK(factz_field_compress_f64(&cfg, u, v, NY, NX, buf, cap, &len, NULL) == FACTZ_OK, "again");
    CHECK(factz_field_decompress_f64(buf, len, du, dv, NY + 1, NX) == FACTZ_INVALID_ARGUMENT,
          "wrong shape");
    CHECK(factz_field_compress_f64(&cfg, NULL, v, NY, NX, buf, cap, &len, NULL) == FACTZ_NULL_POINTER,
          "NULL u");
    CHECK(len == 0, "len %zu after a failure", len);
    free(buf);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
