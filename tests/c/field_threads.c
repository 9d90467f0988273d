/*
 * Four threads compress and decompress different fields at once with different
 * configurations, and each checks that factz_last_error() is its own.
 */
#define _POSIX_C_SOURCE 200809L
#include "factz.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 3 };

static pthread_barrier_t barrier;

typedef struct {
    int id;
    int passed, failed;
} job;

#define CHECK(j, cond, ...)                                                       \
    do {                                                                          \
        if (cond) {                                                               \
            (j)->passed++;                                                        \
        } else {                                                                  \
            (j)->failed++;                                                        \
            fprintf(stderr, "FAIL thread %d %s:%d: %s: ", (j)->id, __FILE__,      \
                    __LINE__, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, " [factz_last_error: %s]\n", factz_last_error());     \
        }                                                                         \
    } while (0)

static void *work(void *arg) {
    job *j = arg;
    const size_t ny = 40 + 7 * (size_t)j->id, nx = 50 + 3 * (size_t)j->id, n = ny * nx;
    float *u = malloc(n * sizeof *u), *v = malloc(n * sizeof *v);
    float *u2 = malloc(n * sizeof *u2), *v2 = malloc(n * sizeof *v2);
    for (size_t y = 0; y < ny; y++)
        for (size_t x = 0; x < nx; x++) {
            double a = 0.15 * (double)x + 0.4 * j->id, b = 0.11 * (double)y - 0.2 * j->id;
            u[y * nx + x] = (float)(sin(a) * cos(b) + 0.1 * j->id);
            v[y * nx + x] = (float)(cos(1.3 * a) * sin(0.8 * b) - 0.05);
        }
    factz_field_config cfg;
    cfg.struct_size = sizeof cfg;
    factz_status s = factz_field_config_default(&cfg);
    CHECK(j, s == FACTZ_OK, "default %d", (int)s);
    cfg.mode = (j->id % 2) ? FACTZ_MODE_BLOCKWISE : FACTZ_MODE_SPECULATIVE;
    cfg.coder = (j->id / 2) ? FACTZ_CODER_HUFFMAN : FACTZ_CODER_RANS;
    cfg.bound_kind = FACTZ_BOUND_ABS;
    cfg.bound = 1e-3 * (j->id + 1);
    size_t cap = 0, len = 0;
    factz_field_max_compressed_size(ny, nx, &cap);
    uint8_t *out = malloc(cap);

    for (int r = 0; r < ROUNDS; r++) {
        s = factz_field_compress(&cfg, u, v, ny, nx, out, cap, &len);
        CHECK(j, s == FACTZ_OK && factz_last_error()[0] == '\0', "compress %d", (int)s);
        s = factz_field_decompress(out, len, u2, v2, ny, nx);
        CHECK(j, s == FACTZ_OK, "decompress %d", (int)s);
        size_t bad = 0;
        for (size_t k = 0; k < n; k++)
            bad += !(fabs((double)u2[k] - u[k]) <= cfg.bound && fabs((double)v2[k] - v[k]) <= cfg.bound);
        CHECK(j, bad == 0, "%zu values outside the bound", bad);

        /* Each thread fails with its own message; once all have failed, each
         * reads its message back: a shared slot would show another thread's. */
        char expect[64];
        snprintf(expect, sizeof expect, "are %zux%zu", ny + 1, nx);
        s = factz_field_decompress(out, len, u2, v2, ny + 1, nx);
        CHECK(j, s == FACTZ_INVALID_ARGUMENT, "shape mismatch %d", (int)s);
        pthread_barrier_wait(&barrier);
        CHECK(j, strstr(factz_last_error(), expect) != NULL, "expected \"%s\" in this thread's message", expect);
        pthread_barrier_wait(&barrier);
    }
    free(out);
    free(u);
    free(v);
    free(u2);
    free(v2);
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    job jobs[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int k = 0; k < THREADS; k++) {
        jobs[k] = (job){.id = k};
        if (pthread_create(&t[k], NULL, work, &jobs[k]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
    }
    int passed = 0, failed = 0;
    for (int k = 0; k < THREADS; k++) {
        pthread_join(t[k], NULL);
        passed += jobs[k].passed;
        failed += jobs[k].failed;
    }
    pthread_barrier_destroy(&barrier);
    printf("threads: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
