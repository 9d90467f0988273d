/*
 * A C program against include/factz.h: round trips of a smooth synthetic
 * vector field (SoA and AoS, modes B and S, Huffman and rANS), checks of the
 * bound, of factz_field_info and of the critical points, then the error paths.
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include "factz.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(factz_field_config) == 40, "factz_field_config v1 is 40 bytes");
_Static_assert(sizeof(factz_field_report) == 24, "factz_field_report v1 is 24 bytes");
_Static_assert(sizeof(factz_field_stream_info) == 56, "factz_field_stream_info v1 is 56 bytes");
_Static_assert(sizeof(factz_critical_point) == 64, "factz_critical_point is 64 bytes");

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

/* |r - x| <= eb decided exactly (two-sum: the double difference of two floats may round). */
static int within(float r, float x, double eb) {
    double a = r, b = x;
    double s = a - b;
    double bb = s - a;
    double err = (a - (s - bb)) + (-b - bb);
    double abs_s = fabs(s);
    return abs_s < eb || (abs_s == eb && (err == 0.0 || ((err < 0.0) == (s > 0.0))));
}

static uint32_t bits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

enum { NY = 61, NX = 83, N = NY * NX };

/* A smooth field with a handful of critical points, NaN in one corner, one Inf. */
static void make_field(float *u, float *v, double phase) {
    const double pi = 3.14159265358979323846;
    for (int j = 0; j < NY; j++) {
        for (int i = 0; i < NX; i++) {
            double x = 2.0 * pi * 1.5 * i / (NX - 1) + phase;
            double y = 2.0 * pi * 1.0 * j / (NY - 1);
            double uu = sin(x) * cos(y) + 0.25 * sin(0.5 * y + 0.3) + 0.05 * cos(3.1 * x + y);
            double vv = -cos(x) * sin(y) + 0.2 * cos(0.7 * x) + 0.04 * sin(2.3 * y - x);
            u[j * NX + i] = (float)uu;
            v[j * NX + i] = (float)vv;
        }
    }
    for (int j = NY - 4; j < NY; j++) {
        for (int i = NX - 5; i < NX; i++) {
            u[j * NX + i] = NAN;
            if ((i + j) % 2 == 0) v[j * NX + i] = NAN;
        }
    }
    v[2 * NX + 3] = INFINITY;
}

static void default_config(factz_field_config *cfg) {
    memset(cfg, 0xAB, sizeof *cfg); /* garbage, except struct_size */
    cfg->struct_size = sizeof *cfg;
    factz_status s = factz_field_config_default(cfg);
    CHECK(s == FACTZ_OK, "factz_field_config_default: %d", (int)s);
}

/* Critical points of a field, malloc'd (two-call pattern). */
static factz_critical_point *critical_points(const float *u, const float *v, size_t *count) {
    size_t n = 0;
    factz_status s = factz_field_critical_points(u, v, NY, NX, &n, NULL, 0);
    CHECK(s == FACTZ_OK || s == FACTZ_BUFFER_TOO_SMALL, "count query: %d", (int)s);
    factz_critical_point *cps = malloc((n ? n : 1) * sizeof *cps);
    size_t n2 = 0;
    s = factz_field_critical_points(u, v, NY, NX, &n2, cps, n);
    CHECK(s == FACTZ_OK && n2 == n, "extraction: %d, %zu vs %zu", (int)s, n2, n);
    *count = n;
    return cps;
}

static const char *mode_name(uint32_t m) { return m == FACTZ_MODE_BLOCKWISE ? "B" : "S"; }
static const char *coder_name(uint32_t c) { return c == FACTZ_CODER_HUFFMAN ? "huffman" : "rans"; }

static void check_field(const char *what, const float *u, const float *v, const float *u2, const float *v2,
                        double eb) {
    size_t bad = 0, first = (size_t)-1;
    for (size_t k = 0; k < N; k++) {
        for (int c = 0; c < 2; c++) {
            float a = c ? v[k] : u[k], r = c ? v2[k] : u2[k];
            int ok = isfinite(a) ? within(r, a, eb) : bits(a) == bits(r);
            if (!ok) {
                if (bad == 0) first = k;
                bad++;
            }
        }
    }
    CHECK(bad == 0, "%s: %zu values outside the bound %g (first at vertex %zu)", what, bad, eb, first);
}

static void check_cps(const char *what, const factz_critical_point *a, size_t na, const factz_critical_point *b,
                      size_t nb) {
    CHECK(na == nb, "%s: %zu critical points before, %zu after", what, na, nb);
    size_t diff = 0;
    for (size_t k = 0; k < na && k < nb; k++) {
        if (a[k].triangle != b[k].triangle || a[k].kind != b[k].kind || a[k].det_sign != b[k].det_sign ||
            a[k].trace_sign != b[k].trace_sign || a[k].disc_sign != b[k].disc_sign)
            diff++;
    }
    CHECK(diff == 0, "%s: %zu critical points changed triangle or type", what, diff);
}

static void roundtrip(const float *u, const float *v, const factz_critical_point *cps, size_t ncps, uint32_t mode,
                      uint32_t coder, int interleaved, uint32_t bound_kind, double bound, int zstd, uint32_t flags) {
    char what[160];
    snprintf(what, sizeof what, "%s mode=%s coder=%s bound=%s %g zstd=%d flags=%u",
             interleaved ? "aos" : "soa", mode_name(mode), coder_name(coder),
             bound_kind == FACTZ_BOUND_ABS ? "abs" : "rel", bound, zstd, flags);
    factz_field_config cfg;
    default_config(&cfg);
    cfg.mode = mode;
    cfg.coder = coder;
    cfg.bound_kind = bound_kind;
    cfg.bound = bound;
    cfg.zstd_level = zstd;
    cfg.flags = flags;

    size_t cap = 0, len = 0;
    factz_status s = factz_field_max_compressed_size(NY, NX, &cap);
    CHECK(s == FACTZ_OK && cap > 0, "%s: max size %d", what, (int)s);
    uint8_t *out = malloc(cap);
    float *uv = malloc(2 * N * sizeof *uv);
    for (size_t k = 0; k < N; k++) {
        uv[2 * k] = u[k];
        uv[2 * k + 1] = v[k];
    }
    factz_field_report rep;
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    if (interleaved)
        s = factz_field_compress_interleaved_ex(&cfg, uv, NY, NX, out, cap, &len, &rep);
    else
        s = factz_field_compress_ex(&cfg, u, v, NY, NX, out, cap, &len, &rep);
    CHECK(s == FACTZ_OK && len > 0 && len <= cap, "%s: compress %d, len %zu", what, (int)s, len);
    if (s != FACTZ_OK) {
        free(out);
        free(uv);
        return;
    }
    CHECK(rep.abs_bound > 0 && (bound_kind == FACTZ_BOUND_REL || rep.abs_bound == bound), "%s: report bound %g",
          what, rep.abs_bound);
    CHECK(rep.exact_vertices <= N, "%s: %llu exact vertices", what, (unsigned long long)rep.exact_vertices);
    CHECK(((rep.flags & FACTZ_VERIFY) != 0) == ((flags & FACTZ_VERIFY) != 0), "%s: report flags %u", what,
          rep.flags);

    factz_field_stream_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    s = factz_field_info(out, len, &info);
    CHECK(s == FACTZ_OK, "%s: info %d", what, (int)s);
    CHECK(info.ny == NY && info.nx == NX, "%s: info shape %llux%llu", what, (unsigned long long)info.ny,
          (unsigned long long)info.nx);
    CHECK(info.layout == (interleaved ? FACTZ_LAYOUT_AOS : FACTZ_LAYOUT_SOA), "%s: info layout %u", what,
          info.layout);
    CHECK(info.mode == mode || info.mode == FACTZ_MODE_LOSSLESS, "%s: info mode %u", what, info.mode);
    CHECK(info.coder == coder, "%s: info coder %u", what, info.coder);
    CHECK(info.zstd_level == zstd, "%s: info zstd %d", what, info.zstd_level);
    CHECK(info.abs_bound == rep.abs_bound, "%s: info bound %g vs report %g", what, info.abs_bound, rep.abs_bound);
    CHECK(info.format_version >= 1, "%s: format version %u", what, info.format_version);
    CHECK((info.flags & FACTZ_CHUNK_OF_LARGER) == (flags & FACTZ_CHUNK_OF_LARGER), "%s: info flags %u", what,
          info.flags);

    float *u2 = malloc(N * sizeof *u2), *v2 = malloc(N * sizeof *v2);
    if (interleaved) {
        float *uv2 = malloc(2 * N * sizeof *uv2);
        s = factz_field_decompress_interleaved(out, len, uv2, NY, NX);
        CHECK(s == FACTZ_OK, "%s: decompress interleaved %d", what, (int)s);
        for (size_t k = 0; k < N; k++) {
            u2[k] = uv2[2 * k];
            v2[k] = uv2[2 * k + 1];
        }
        free(uv2);
        /* The SoA entry point reads the same stream whatever layout it records. */
        float *u3 = malloc(N * sizeof *u3), *v3 = malloc(N * sizeof *v3);
        s = factz_field_decompress(out, len, u3, v3, NY, NX);
        CHECK(s == FACTZ_OK && memcmp(u2, u3, N * sizeof *u3) == 0 && memcmp(v2, v3, N * sizeof *v3) == 0,
              "%s: SoA decode of an AoS stream differs (%d)", what, (int)s);
        free(u3);
        free(v3);
    } else {
        s = factz_field_decompress(out, len, u2, v2, NY, NX);
        CHECK(s == FACTZ_OK, "%s: decompress %d", what, (int)s);
    }
    check_field(what, u, v, u2, v2, rep.abs_bound);
    size_t n2 = 0;
    factz_critical_point *cps2 = critical_points(u2, v2, &n2);
    check_cps(what, cps, ncps, cps2, n2);
    printf("roundtrip %-58s %6zu bytes (ratio %5.2f), bound %.3g, %llu exact, %zu critical points\n", what, len,
           (double)(2 * N * sizeof(float)) / (double)len, rep.abs_bound, (unsigned long long)rep.exact_vertices,
           n2);
    free(cps2);
    free(u2);
    free(v2);
    free(out);
    free(uv);
}

static int msg_contains(const char *needle) { return strstr(factz_last_error(), needle) != NULL; }

static void errors(const float *u, const float *v) {
    factz_field_config cfg;
    default_config(&cfg);
    size_t cap = 0, len = 12345, need = 0;
    factz_field_max_compressed_size(NY, NX, &cap);
    uint8_t *out = malloc(cap);
    float *u2 = malloc(N * sizeof *u2), *v2 = malloc(N * sizeof *v2);
    factz_status s;

    /* NULL pointers with nonzero sizes. */
    s = factz_field_compress(NULL, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("config is NULL") && len == 0, "NULL config: %d", (int)s);
    s = factz_field_compress(&cfg, NULL, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("u is NULL"), "NULL u: %d", (int)s);
    s = factz_field_compress(&cfg, u, NULL, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("v is NULL"), "NULL v: %d", (int)s);
    s = factz_field_compress(&cfg, u, v, NY, NX, out, cap, NULL);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("out_len"), "NULL out_len: %d", (int)s);
    s = factz_field_compress(&cfg, u, v, NY, NX, NULL, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER, "NULL out with capacity: %d", (int)s);
    s = factz_field_compress_interleaved(&cfg, NULL, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("uv is NULL"), "NULL uv: %d", (int)s);
    s = factz_field_max_compressed_size(NY, NX, NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL size out: %d", (int)s);
    s = factz_field_config_default(NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL default config: %d", (int)s);
    s = factz_field_decompress(NULL, 100, u2, v2, NY, NX);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("stream is NULL"), "NULL stream: %d", (int)s);
    s = factz_field_info(out, 10, NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL info: %d", (int)s);
    size_t count = 99;
    s = factz_field_critical_points(NULL, v, NY, NX, &count, NULL, 0);
    CHECK(s == FACTZ_NULL_POINTER && count == 0, "NULL u for critical points: %d", (int)s);
    s = factz_field_critical_points(u, v, NY, NX, NULL, NULL, 0);
    CHECK(s == FACTZ_NULL_POINTER, "NULL count: %d", (int)s);
    s = factz_field_critical_points(u, v, NY, NX, &count, NULL, 4);
    CHECK(s == FACTZ_NULL_POINTER, "NULL cps with capacity: %d", (int)s);

    /* Zero, overflowing and oversized shapes. */
    s = factz_field_compress(&cfg, u, v, 0, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("empty"), "ny = 0: %d", (int)s);
    s = factz_field_compress(&cfg, NULL, NULL, NY, 0, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "nx = 0 with NULL data: %d", (int)s);
    s = factz_field_max_compressed_size(0, 0, &need);
    CHECK(s == FACTZ_INVALID_ARGUMENT && need == 0, "max size of 0x0: %d", (int)s);
    s = factz_field_max_compressed_size(SIZE_MAX / 2, 3, &need);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("too large"), "overflowing shape: %d", (int)s);
    s = factz_field_compress(&cfg, u, v, SIZE_MAX, SIZE_MAX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "overflowing compress shape: %d", (int)s);
    s = factz_field_decompress(out, 0, u2, v2, 0, 0);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "decompress 0x0: %d", (int)s);
    s = factz_field_critical_points(u, v, 0, NX, &count, NULL, 0);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "critical points of 0 x nx: %d", (int)s);

    /* Bad configurations. */
    factz_field_config bad = cfg;
    bad.bound = NAN;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("NaN"), "NaN bound: %d", (int)s);
    bad = cfg;
    bad.bound = -1.0;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "negative bound: %d", (int)s);
    bad = cfg;
    bad.bound = INFINITY;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "infinite bound: %d", (int)s);
    bad = cfg;
    bad.mode = 7;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("mode"), "bad mode: %d", (int)s);
    bad = cfg;
    bad.mode = FACTZ_MODE_LOSSLESS;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "lossless is not a config mode: %d", (int)s);
    bad = cfg;
    bad.coder = 0;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("coder"), "bad coder: %d", (int)s);
    bad = cfg;
    bad.bound_kind = 3;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("bound_kind"), "bad bound kind: %d", (int)s);
    bad = cfg;
    bad.layout = 5;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("layout"), "bad layout: %d", (int)s);
    bad = cfg;
    bad.flags = 0x100;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("flags"), "unknown flag: %d", (int)s);
    bad = cfg;
    bad.zstd_level = 99;
    s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("zstd"), "bad zstd level: %d", (int)s);

    /* struct_size versioning. */
    uint32_t sizes[] = {0, 4, sizeof(factz_field_config) - 8, sizeof(factz_field_config) + 8, 0xFFFFFFFFu};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        bad = cfg;
        bad.struct_size = sizes[k];
        s = factz_field_compress(&bad, u, v, NY, NX, out, cap, &len);
        CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("struct_size"), "config struct_size %u: %d", sizes[k],
              (int)s);
        s = factz_field_config_default(&bad);
        CHECK(s == FACTZ_INVALID_ARGUMENT && bad.mode == cfg.mode, "default config struct_size %u: %d", sizes[k],
              (int)s);
    }

    /* A good stream to break. */
    factz_field_report rep = {0};
    rep.struct_size = sizeof rep;
    s = factz_field_compress_ex(&cfg, u, v, NY, NX, out, cap, &len, &rep);
    CHECK(s == FACTZ_OK, "compress: %d", (int)s);
    size_t good = len;
    rep.struct_size = 3;
    s = factz_field_compress_ex(&cfg, u, v, NY, NX, out, cap, &len, &rep);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("report->struct_size"), "report struct_size: %d", (int)s);
    s = factz_field_compress(&cfg, u, v, NY, NX, out, cap, &len);
    CHECK(s == FACTZ_OK && len == good, "deterministic length: %zu vs %zu", len, good);

    /* Too small buffers: the needed size comes back. */
    s = factz_field_compress(&cfg, u, v, NY, NX, NULL, 0, &need);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && need == good, "size query: %d, %zu vs %zu", (int)s, need, good);
    uint8_t *small = malloc(good);
    need = 0;
    s = factz_field_compress(&cfg, u, v, NY, NX, small, good - 1, &need);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && need == good && msg_contains("needs"), "one byte short: %d", (int)s);
    s = factz_field_compress(&cfg, u, v, NY, NX, small, good, &need);
    CHECK(s == FACTZ_OK && need == good && memcmp(small, out, good) == 0, "exact fit: %d", (int)s);
    free(small);
    s = factz_field_critical_points(u, v, NY, NX, &count, NULL, 0);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && count > 0, "critical point count query: %d", (int)s);
    factz_critical_point one[1];
    size_t count2 = 0;
    s = factz_field_critical_points(u, v, NY, NX, &count2, one, 1);
    CHECK(count > 1 && s == FACTZ_BUFFER_TOO_SMALL && count2 == count, "capacity 1: %d", (int)s);

    /* NULL outputs with a good stream. */
    s = factz_field_decompress(out, len, NULL, v2, NY, NX);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("u is NULL"), "NULL u output: %d", (int)s);
    s = factz_field_decompress_interleaved(out, len, NULL, NY, NX);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("uv is NULL"), "NULL uv output: %d", (int)s);

    /* Wrong shapes on decompress. */
    s = factz_field_decompress(out, len, u2, v2, NX, NY);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("61x83"), "transposed shape: %d", (int)s);
    s = factz_field_decompress(out, len, u2, v2, NY - 1, NX);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "short shape: %d", (int)s);
    s = factz_field_decompress_interleaved(out, len, u2, 1, 1);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("1x1"), "1x1 shape: %d", (int)s);
    s = factz_field_decompress(out, len, u2, u2, NY, NX);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("overlap"), "aliased outputs: %d", (int)s);

    /* Info with a bad struct_size. */
    factz_field_stream_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info + 4;
    s = factz_field_info(out, len, &info);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("struct_size"), "info struct_size: %d", (int)s);
    info.struct_size = sizeof info;

    /* Truncated streams. */
    size_t cuts[] = {0, 1, 7, 8, 20, 60, 120, len / 2, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        s = factz_field_decompress(out, cuts[k], u2, v2, NY, NX);
        CHECK(s == FACTZ_CORRUPT_STREAM, "truncated to %zu bytes: %d", cuts[k], (int)s);
        s = factz_field_info(cuts[k] ? out : NULL, cuts[k], &info);
        CHECK(s == FACTZ_CORRUPT_STREAM, "info of %zu bytes: %d", cuts[k], (int)s);
    }
    /* Trailing garbage. */
    uint8_t *longer = malloc(len + 3);
    memcpy(longer, out, len);
    memset(longer + len, 0, 3);
    s = factz_field_decompress(longer, len + 3, u2, v2, NY, NX);
    CHECK(s == FACTZ_CORRUPT_STREAM, "trailing bytes: %d", (int)s);
    free(longer);

    /* Corrupted streams: flip one byte at a time; never a crash, never success. */
    uint8_t *broken = malloc(len);
    size_t stride = len / 1500 + 1, wrong = 0, tried = 0;
    for (size_t pos = 0; pos < len; pos += (pos < 200 ? 1 : stride)) {
        memcpy(broken, out, len);
        broken[pos] ^= 0x5A;
        s = factz_field_decompress(broken, len, u2, v2, NY, NX);
        tried++;
        if (!(s == FACTZ_CORRUPT_STREAM || s == FACTZ_UNSUPPORTED)) {
            if (wrong++ < 5) fprintf(stderr, "  byte %zu flipped: status %d (%s)\n", pos, (int)s, factz_last_error());
        }
    }
    CHECK(wrong == 0, "%zu of %zu corrupted streams not refused", wrong, tried);
    free(broken);
    /* Not a factz stream at all. */
    s = factz_field_decompress((const uint8_t *)"hello, world", 12, u2, v2, NY, NX);
    CHECK(s == FACTZ_CORRUPT_STREAM && msg_contains("magic"), "not a stream: %d", (int)s);

    /* last_error: cleared by a success, copied with snprintf semantics. */
    s = factz_field_max_compressed_size(0, 1, &need);
    const char *msg = factz_last_error();
    size_t full = strlen(msg);
    char buf[16];
    size_t got = factz_last_error_copy(buf, sizeof buf);
    CHECK(got == full && full >= sizeof buf && strlen(buf) == sizeof buf - 1 && strncmp(buf, msg, 15) == 0,
          "last_error_copy: %zu vs %zu", got, full);
    CHECK(factz_last_error_copy(NULL, 0) == full, "last_error_copy length query");
    s = factz_field_max_compressed_size(2, 2, &need);
    CHECK(s == FACTZ_OK && factz_last_error()[0] == '\0', "success clears the last error");
    CHECK(factz_last_error_copy(buf, sizeof buf) == 0 && buf[0] == '\0', "empty copy");

    free(out);
    free(u2);
    free(v2);
}

static void versions(void) {
    CHECK(factz_abi_version() == FACTZ_ABI_VERSION, "ABI %u vs header %u", factz_abi_version(), FACTZ_ABI_VERSION);
    uint32_t ver = factz_version();
    char expect[32];
    snprintf(expect, sizeof expect, "%u.%u.%u", ver >> 16, (ver >> 8) & 0xFF, ver & 0xFF);
    CHECK(strcmp(expect, factz_version_string()) == 0, "version %s vs %s", expect, factz_version_string());
    CHECK(strncmp(factz_status_string(FACTZ_OK), "FACTZ_OK", 8) == 0, "status string of OK");
    CHECK(strncmp(factz_status_string(FACTZ_PANIC), "FACTZ_PANIC", 11) == 0, "status string of PANIC");
    CHECK(strcmp(factz_status_string(12345), "unknown factz status") == 0, "status string of junk");
    printf("factz %s (ABI %u)\n", factz_version_string(), factz_abi_version());
}

int main(void) {
    float *u = malloc(N * sizeof *u), *v = malloc(N * sizeof *v);
    make_field(u, v, 0.0);
    size_t ncps = 0;
    factz_critical_point *cps = critical_points(u, v, &ncps);
    CHECK(ncps >= 4, "the test field has %zu critical points", ncps);
    int types[7] = {0};
    for (size_t k = 0; k < ncps; k++) {
        CHECK(cps[k].kind >= FACTZ_CP_SADDLE && cps[k].kind <= FACTZ_CP_CENTER, "type %u", cps[k].kind);
        CHECK(cps[k].x >= cps[k].i && cps[k].x <= cps[k].i + 1 && cps[k].y >= cps[k].j && cps[k].y <= cps[k].j + 1,
              "critical point %zu outside its cell", k);
        if (cps[k].kind <= 6) types[cps[k].kind]++;
    }
    printf("field %dx%d: %zu critical points (%d saddles, %d sources, %d sinks, %d rep. foci, %d att. foci, %d centers)\n",
           NY, NX, ncps, types[1], types[2], types[3], types[4], types[5], types[6]);

    versions();
    uint32_t modes[] = {FACTZ_MODE_BLOCKWISE, FACTZ_MODE_SPECULATIVE};
    uint32_t coders[] = {FACTZ_CODER_HUFFMAN, FACTZ_CODER_RANS};
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 2; c++)
            for (int aos = 0; aos < 2; aos++)
                roundtrip(u, v, cps, ncps, modes[m], coders[c], aos, FACTZ_BOUND_REL, 1e-3, 0, 0);
    roundtrip(u, v, cps, ncps, FACTZ_MODE_SPECULATIVE, FACTZ_CODER_RANS, 0, FACTZ_BOUND_ABS, 0.05, 3, FACTZ_VERIFY);
    roundtrip(u, v, cps, ncps, FACTZ_MODE_BLOCKWISE, FACTZ_CODER_HUFFMAN, 1, FACTZ_BOUND_ABS, 1e-4, 0,
              FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY);
    roundtrip(u, v, cps, ncps, FACTZ_MODE_SPECULATIVE, FACTZ_CODER_HUFFMAN, 1, FACTZ_BOUND_REL, 0.2, 1,
              FACTZ_CHUNK_OF_LARGER);
    errors(u, v);
    free(cps);
    free(u);
    free(v);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
