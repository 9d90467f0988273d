/*
 * A C program against include/factz.h for particles: round trips of a
 * deterministic clustered particle set (AoS and SoA, relative bounds 1e-3 and
 * 1e-5, open and periodic boxes), judged by a brute-force O(N^2) link check
 * written here from the documented rule; the bring-your-own-compressor path
 * (lattice snapping, correct, apply); FoF labels and halos against a
 * brute-force union-find; then the error paths.
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include "factz.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(factz_particles_config) == 80, "factz_particles_config v1 is 80 bytes");
_Static_assert(sizeof(factz_particles_report) == 104, "factz_particles_report v1 is 104 bytes");
_Static_assert(sizeof(factz_particles_stream_info) == 80, "factz_particles_stream_info v2 is 80 bytes");

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

static int msg_contains(const char *needle) { return strstr(factz_last_error(), needle) != NULL; }

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

/* ---------------------------------------------------------------- test data */

enum { CLUSTERS = 24, PER_CLUSTER = 100, BACKGROUND = 600, N = CLUSTERS * PER_CLUSTER + BACKGROUND };
static const double L = 100.0;

static uint64_t lcg_state;
static double lcg(void) { /* uniform in [0, 1) */
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) * (1.0 / 9007199254740992.0);
}
/* Roughly normal (Irwin-Hall of 4 uniforms), mean 0, std 1. */
static double gauss(void) { return (lcg() + lcg() + lcg() + lcg() - 2.0) * 1.7320508075688772; }

static float wrap(double x) {
    double w = fmod(x, L);
    if (w < 0) w += L;
    float f = (float)w;
    return f >= (float)L ? 0.0f : f;
}

/* Clusters of varied widths (one straddles the box corner, so periodic links
 * cross faces), plus a uniform background. Deterministic. AoS. */
static void make_particles(float *xyz) {
    lcg_state = 0x5eed1234abcdULL;
    size_t k = 0;
    for (int c = 0; c < CLUSTERS; c++) {
        double cx = c == 0 ? 0.3 : lcg() * L, cy = c == 0 ? 99.8 : lcg() * L, cz = c == 0 ? 0.1 : lcg() * L;
        double sigma = 0.4 + 1.2 * lcg();
        for (int p = 0; p < PER_CLUSTER; p++, k++) {
            xyz[3 * k] = wrap(cx + sigma * gauss());
            xyz[3 * k + 1] = wrap(cy + sigma * gauss());
            xyz[3 * k + 2] = wrap(cz + sigma * gauss());
        }
    }
    for (int p = 0; p < BACKGROUND; p++, k++) {
        for (int a = 0; a < 3; a++) xyz[3 * k + a] = wrap(lcg() * L);
    }
}

/* ------------------------------------------------------- brute-force oracle */

/* The documented link rule: squared distance in double summed x, y, z, each
 * difference wrapped to the minimum image d - L round(d / L) when periodic. */
static double dist2(const float *a, const float *b, double box) {
    double s = 0.0;
    for (int k = 0; k < 3; k++) {
        double d = (double)a[k] - (double)b[k];
        if (box > 0) d = d - box * round(d / box);
        s = s + d * d;
    }
    return s;
}

/* Pairs whose link status differs between two position sets. */
static size_t link_changes(const float *a, const float *b, size_t n, double lb, double box, size_t *links) {
    double b2 = lb * lb;
    size_t changed = 0, linked = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            int la = dist2(a + 3 * i, a + 3 * j, box) <= b2;
            int lr = dist2(b + 3 * i, b + 3 * j, box) <= b2;
            linked += la;
            changed += la != lr;
        }
    }
    if (links) *links = linked;
    return changed;
}

static size_t bound_violations(const float *orig, const float *recon, size_t count, double eb) {
    size_t bad = 0;
    for (size_t k = 0; k < count; k++) {
        float a = orig[k], r = recon[k];
        if (!(isfinite(a) ? within(r, a, eb) : bits(a) == bits(r))) bad++;
    }
    return bad;
}

static size_t uf_find(size_t *parent, size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}

/* FoF labels by all pairs and union-find: the smallest index of each group. */
static void brute_labels(const float *xyz, size_t n, double lb, double box, uint32_t *labels) {
    size_t *parent = malloc(n * sizeof *parent);
    for (size_t k = 0; k < n; k++) parent[k] = k;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (dist2(xyz + 3 * i, xyz + 3 * j, box) <= lb * lb) {
                size_t a = uf_find(parent, i), b = uf_find(parent, j);
                if (a != b) parent[a > b ? a : b] = a < b ? a : b;
            }
        }
    }
    for (size_t k = 0; k < n; k++) labels[k] = (uint32_t)uf_find(parent, k);
    free(parent);
}

/* ------------------------------------------------------------- round trips */

static void default_config(factz_particles_config *cfg) {
    memset(cfg, 0xAB, sizeof *cfg); /* garbage, except struct_size */
    cfg->struct_size = sizeof *cfg;
    factz_status s = factz_particles_config_default(cfg);
    CHECK(s == FACTZ_OK, "factz_particles_config_default: %d", (int)s);
}

/* b = 0.2 of the mean separation in the box. */
static double linking_b(void) { return 0.2 * cbrt(L * L * L / N); }

static size_t total_violated_before;

static void roundtrip(const float *xyz, int soa, double rel, double box, uint32_t coder, int zstd, uint32_t flags) {
    char what[160];
    snprintf(what, sizeof what, "%s rel=%g box=%g coder=%s zstd=%d flags=%u", soa ? "soa" : "aos", rel, box,
             coder == FACTZ_CODER_HUFFMAN ? "huffman" : "rans", zstd, flags);
    double lb = linking_b();
    factz_particles_config cfg;
    default_config(&cfg);
    cfg.bound_kind = FACTZ_BOUND_REL;
    cfg.bound = rel;
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = lb;
    cfg.box_side = box;
    cfg.coder = coder;
    cfg.zstd_level = zstd;
    cfg.flags = flags;

    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    for (size_t k = 0; k < N; k++) {
        x[k] = xyz[3 * k];
        y[k] = xyz[3 * k + 1];
        z[k] = xyz[3 * k + 2];
    }
    size_t cap = 0, len = 0;
    factz_status s = factz_particles_max_compressed_size(N, &cap);
    CHECK(s == FACTZ_OK && cap >= 12 * (size_t)N, "%s: max size %d", what, (int)s);
    uint8_t *out = malloc(cap);
    factz_particles_report rep;
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    if (soa)
        s = factz_particles_compress_soa_ex(x, y, z, N, &cfg, out, cap, &len, &rep);
    else
        s = factz_particles_compress_ex(xyz, N, &cfg, out, cap, &len, &rep);
    CHECK(s == FACTZ_OK && len > 0 && len <= cap, "%s: compress %d, len %zu", what, (int)s, len);
    if (s != FACTZ_OK) {
        free(out), free(x), free(y), free(z);
        return;
    }
    CHECK(rep.abs_bound > 0 && fabs(rep.abs_bound - rel * L) < 0.01 * rel * L, "%s: report bound %g", what,
          rep.abs_bound);
    CHECK(rep.linking_length == lb, "%s: report b %.17g vs %.17g", what, rep.linking_length, lb);
    CHECK(rep.source == FACTZ_BASE_BUILTIN || rep.source == FACTZ_SOURCE_LOSSLESS, "%s: source %u", what,
          rep.source);
    CHECK(rep.exact_particles <= N && rep.violated_before <= rep.vulnerable_pairs, "%s: report counts", what);
    CHECK(((rep.flags & FACTZ_VERIFY) != 0) == ((flags & FACTZ_VERIFY) != 0) &&
              (rep.flags & FACTZ_LOSSLESS_FALLBACK) == 0,
          "%s: report flags %u", what, rep.flags);
    total_violated_before += rep.violated_before;

    factz_particles_stream_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    s = factz_particles_info(out, len, &info);
    CHECK(s == FACTZ_OK, "%s: info %d", what, (int)s);
    CHECK(info.n == N, "%s: info n %llu", what, (unsigned long long)info.n);
    CHECK(info.layout == (soa ? FACTZ_LAYOUT_SOA : FACTZ_LAYOUT_AOS), "%s: info layout %u", what, info.layout);
    CHECK(info.source == rep.source, "%s: info source %u vs %u", what, info.source, rep.source);
    CHECK(info.coder == coder && info.zstd_level == zstd, "%s: info coder %u zstd %d", what, info.coder,
          info.zstd_level);
    CHECK(info.abs_bound == rep.abs_bound && info.linking_length == lb && info.box_side == box,
          "%s: info bound %g b %g box %g", what, info.abs_bound, info.linking_length, info.box_side);
    CHECK(info.edit_bits == 16 && info.format_version >= 1 && info.external_checksum == 0, "%s: info misc", what);
    /* the default (automatic) method records the one it kept */
    CHECK(info.source == FACTZ_SOURCE_LOSSLESS ? info.method == 0
          : (info.method == FACTZ_METHOD_CORRECT || info.method == FACTZ_METHOD_SAFE),
          "%s: info method %u", what, info.method);
    CHECK((info.flags & (FACTZ_CHUNK_OF_LARGER | FACTZ_VERIFY)) == flags, "%s: info flags %u", what, info.flags);

    /* Decode both ways: the same bits whatever the stream's layout. */
    float *aos = malloc(3 * N * sizeof *aos);
    float *x2 = malloc(N * sizeof *x2), *y2 = malloc(N * sizeof *y2), *z2 = malloc(N * sizeof *z2);
    s = factz_particles_decompress(out, len, aos, N);
    CHECK(s == FACTZ_OK, "%s: decompress %d", what, (int)s);
    s = factz_particles_decompress_soa(out, len, x2, y2, z2, N);
    CHECK(s == FACTZ_OK, "%s: decompress soa %d", what, (int)s);
    size_t same = 0;
    for (size_t k = 0; k < N; k++)
        same += bits(aos[3 * k]) == bits(x2[k]) && bits(aos[3 * k + 1]) == bits(y2[k]) &&
                bits(aos[3 * k + 2]) == bits(z2[k]);
    CHECK(same == N, "%s: AoS and SoA decodes differ at %zu particles", what, (size_t)N - same);

    size_t links = 0;
    size_t changed = link_changes(xyz, aos, N, lb, box, &links);
    CHECK(changed == 0, "%s: %zu of the pairs changed link status", what, changed);
    size_t bad = bound_violations(xyz, aos, 3 * N, rep.abs_bound);
    CHECK(bad == 0, "%s: %zu coordinates outside the bound %g", what, bad, rep.abs_bound);
    printf("roundtrip %-50s %7zu bytes (ratio %5.2f), bound %.3g, %zu links, %llu vulnerable, %llu violated, "
           "%llu exact, %llu edits, %u iterations\n",
           what, len, (double)(12 * N) / (double)len, rep.abs_bound, links,
           (unsigned long long)rep.vulnerable_pairs, (unsigned long long)rep.violated_before,
           (unsigned long long)rep.exact_particles, (unsigned long long)rep.edited_coords, rep.iterations);
    free(aos), free(x2), free(y2), free(z2);
    free(out), free(x), free(y), free(z);
}

/* ---------------------------------------------------- bring your own codec */

/* A crude external "compressor": every coordinate snapped to a lattice of
 * spacing 1.5 xi (error <= 0.75 xi: within the bound, but links change). */
static void snap(const float *xyz, float *dec, size_t count, double step) {
    for (size_t k = 0; k < count; k++) dec[k] = (float)(step * round((double)xyz[k] / step));
}

static void bring_your_own(const float *xyz, double rel, double box, int spoil) {
    char what[120];
    snprintf(what, sizeof what, "external rel=%g box=%g%s", rel, box, spoil ? " spoiled" : "");
    double lb = linking_b();
    factz_particles_config cfg;
    default_config(&cfg);
    cfg.bound_kind = FACTZ_BOUND_ABS;
    cfg.bound = rel * L;
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = lb;
    cfg.box_side = box;
    double xi = cfg.bound;

    float *dec = malloc(3 * N * sizeof *dec);
    snap(xyz, dec, 3 * N, 1.5 * xi);
    if (spoil) { /* some coordinates out of bound, one non-finite: corrected by exact storage */
        dec[3 * 7] += (float)(10 * xi);
        dec[3 * 500 + 1] = NAN;
        dec[3 * 2999 + 2] -= (float)(3 * xi);
    }
    size_t before = link_changes(xyz, dec, N, lb, box, NULL);
    CHECK(before > 0, "%s: the snapped positions should change some links (the test needs them)", what);

    size_t cap = 0, len = 0, need = 0;
    factz_status s = factz_particles_max_correction_size(N, &cap);
    CHECK(s == FACTZ_OK && cap > 12 * (size_t)N, "%s: max correction size %d", what, (int)s);
    uint8_t *out = malloc(cap);
    s = factz_particles_correct(xyz, dec, N, &cfg, NULL, 0, &need);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && need > 0, "%s: size query %d", what, (int)s);
    factz_particles_report rep;
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    s = factz_particles_correct_ex(xyz, dec, N, &cfg, out, cap, &len, &rep);
    CHECK(s == FACTZ_OK && len == need && len <= cap, "%s: correct %d, len %zu vs %zu", what, (int)s, len, need);
    CHECK(rep.source == FACTZ_SOURCE_EXTERNAL && rep.base_bytes == 0 && rep.abs_bound == xi, "%s: report", what);
    CHECK(rep.violated_before > 0, "%s: report says no pair was violated", what);
    CHECK(!spoil || rep.exact_particles >= 3, "%s: %llu exact particles", what,
          (unsigned long long)rep.exact_particles);

    factz_particles_stream_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    s = factz_particles_info(out, len, &info);
    CHECK(s == FACTZ_OK && info.source == FACTZ_SOURCE_EXTERNAL && info.n == N && info.external_checksum != 0,
          "%s: info %d source %u", what, (int)s, info.source);

    /* A correction stream is not a complete one. */
    float *tmp = malloc(3 * N * sizeof *tmp);
    s = factz_particles_decompress(out, len, tmp, N);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("apply"), "%s: decompress of a correction: %d", what, (int)s);
    /* Other decoded positions: refused, untouched. */
    memcpy(tmp, dec, 3 * N * sizeof *tmp);
    tmp[42] = nextafterf(tmp[42], INFINITY);
    s = factz_particles_apply(out, len, tmp, N);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("checksum") && tmp[42] == nextafterf(dec[42], INFINITY),
          "%s: apply to other positions: %d", what, (int)s);
    s = factz_particles_apply(out, len, dec, N - 1);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "%s: apply with the wrong n: %d", what, (int)s);
    free(tmp);

    s = factz_particles_apply(out, len, dec, N);
    CHECK(s == FACTZ_OK, "%s: apply %d", what, (int)s);
    size_t changed = link_changes(xyz, dec, N, lb, box, NULL);
    CHECK(changed == 0, "%s: %zu pairs changed link status after the correction", what, changed);
    size_t bad = bound_violations(xyz, dec, 3 * N, xi);
    CHECK(bad == 0, "%s: %zu coordinates outside the bound", what, bad);
    printf("%-40s %zu links changed before, 0 after; correction %zu bytes (bound %zu), %llu exact, %llu edits\n",
           what, before, len, cap, (unsigned long long)rep.exact_particles, (unsigned long long)rep.edited_coords);
    free(out);
    free(dec);
}

/* The correction bound also holds in the worst case: bound 0 stores every
 * particle exactly (full-entropy bits), with each coder. */
static void correction_worst_case(const float *xyz) {
    for (int c = 0; c < 2; c++) {
        factz_particles_config cfg;
        default_config(&cfg);
        cfg.bound_kind = FACTZ_BOUND_ABS;
        cfg.bound = 0.0;
        cfg.linking_kind = FACTZ_LINK_LENGTH;
        cfg.linking = linking_b();
        cfg.coder = c ? FACTZ_CODER_HUFFMAN : FACTZ_CODER_RANS;
        float *dec = malloc(3 * N * sizeof *dec);
        for (size_t k = 0; k < 3 * N; k++) dec[k] = xyz[k] + 1.0f;
        size_t cap = 0, len = 0;
        factz_particles_max_correction_size(N, &cap);
        uint8_t *out = malloc(cap);
        factz_particles_report rep = {0};
        rep.struct_size = sizeof rep;
        factz_status s = factz_particles_correct_ex(xyz, dec, N, &cfg, out, cap, &len, &rep);
        CHECK(s == FACTZ_OK && len <= cap && rep.exact_particles == N, "worst-case correction (%s): %d, %zu > %zu",
              c ? "huffman" : "rans", (int)s, len, cap);
        s = factz_particles_apply(out, len, dec, N);
        CHECK(s == FACTZ_OK && memcmp(dec, xyz, 3 * N * sizeof *dec) == 0, "worst case apply: %d", (int)s);
        free(out);
        free(dec);
    }
}

/* -------------------------------------------------------------------- FoF */

static void fof(const float *xyz) {
    double lb = linking_b() * 1.5;
    uint32_t *mine = malloc(N * sizeof *mine), *want = malloc(N * sizeof *want);
    for (int periodic = 0; periodic < 2; periodic++) {
        double box = periodic ? L : 0.0;
        factz_status s = factz_fof_labels(xyz, N, lb, box, mine);
        CHECK(s == FACTZ_OK, "fof labels box=%g: %d", box, (int)s);
        brute_labels(xyz, N, lb, box, want);
        size_t diff = 0, groups = 0;
        for (size_t k = 0; k < N; k++) {
            diff += mine[k] != want[k];
            groups += want[k] == k;
        }
        CHECK(diff == 0, "fof labels box=%g: %zu particles labelled differently", box, diff);

        /* Halo catalogue: count query, then the sizes; checked against the labels. */
        size_t count = 99, min_members = 5;
        s = factz_fof_halos(mine, N, min_members, NULL, NULL, 0, &count);
        CHECK(s == FACTZ_BUFFER_TOO_SMALL && count > 3, "halo count query: %d, %zu", (int)s, count);
        uint32_t *hl = malloc(count * sizeof *hl);
        size_t *hs = malloc(count * sizeof *hs);
        size_t count2 = 0;
        s = factz_fof_halos(mine, N, min_members, hl, hs, count, &count2);
        CHECK(s == FACTZ_OK && count2 == count, "halos: %d, %zu vs %zu", (int)s, count2, count);
        size_t *size = calloc(N, sizeof *size);
        for (size_t k = 0; k < N; k++) size[want[k]]++;
        size_t expect = 0, wrong = 0;
        for (size_t k = 0; k < N; k++) expect += size[k] >= min_members;
        for (size_t h = 0; h < count2; h++) {
            if (hs[h] != size[hl[h]] || hs[h] < min_members || want[hl[h]] != hl[h]) wrong++;
            if (h > 0 && (hs[h] > hs[h - 1] || (hs[h] == hs[h - 1] && hl[h] < hl[h - 1]))) wrong++;
        }
        CHECK(expect == count2 && wrong == 0, "halos box=%g: %zu expected, %zu listed, %zu wrong", box, expect,
              count2, wrong);
        uint32_t one_l = 0;
        size_t one_s = 0;
        s = factz_fof_halos(mine, N, min_members, &one_l, &one_s, 1, &count2);
        CHECK(s == FACTZ_BUFFER_TOO_SMALL && count2 == count && one_s == 0, "halos capacity 1: %d", (int)s);
        s = factz_fof_halos(mine, N, 0, NULL, NULL, 0, &count2);
        CHECK(s == FACTZ_BUFFER_TOO_SMALL && count2 == groups, "every group: %zu vs %zu", count2, groups);
        printf("fof box=%g b=%.4g: %zu groups, %zu halos of >= %zu members, largest %zu\n", box, lb, groups, count,
               min_members, count ? hs[0] : 0);
        free(size);
        free(hl);
        free(hs);
    }

    /* Labels must be particle indices. */
    size_t count = 0;
    mine[10] = N;
    factz_status s = factz_fof_halos(mine, N, 1, NULL, NULL, 0, &count);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("labels[10]"), "label out of range: %d", (int)s);

    /* Linking length from eta: the box's volume, or the bounding box. */
    double b = -1;
    s = factz_particles_linking_length(xyz, N, FACTZ_LINK_ETA, 0.2, L, &b);
    CHECK(s == FACTZ_OK && fabs(b - linking_b()) <= 1e-12 * b, "eta in the box: %.17g vs %.17g", b, linking_b());
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t k = 0; k < N; k++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], xyz[3 * k + a]);
            hi[a] = fmax(hi[a], xyz[3 * k + a]);
        }
    double vol = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
    s = factz_particles_linking_length(xyz, N, FACTZ_LINK_ETA, 0.2, 0.0, &b);
    CHECK(s == FACTZ_OK && fabs(b - 0.2 * cbrt(vol / N)) <= 1e-12 * b, "eta in the bounding box: %g", b);
    s = factz_particles_linking_length(xyz, N, FACTZ_LINK_LENGTH, 0.75, 0.0, &b);
    CHECK(s == FACTZ_OK && b == 0.75, "b given: %g", b);
    s = factz_particles_linking_length(xyz, N, 3, 0.75, 0.0, &b);
    CHECK(s == FACTZ_INVALID_ARGUMENT && b == 0.0, "bad linking kind: %d", (int)s);
    s = factz_particles_linking_length(xyz, N, FACTZ_LINK_ETA, -0.2, 0.0, &b);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "negative eta: %d", (int)s);
    s = factz_particles_linking_length(NULL, N, FACTZ_LINK_ETA, 0.2, 0.0, &b);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("xyz is NULL"), "NULL xyz: %d", (int)s);
    s = factz_particles_linking_length(xyz, N, FACTZ_LINK_ETA, 0.2, 0.0, NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL b: %d", (int)s);
    float flat[9] = {0, 0, 0, 1, 0, 0, 2, 0, 0};
    s = factz_particles_linking_length(flat, 3, FACTZ_LINK_ETA, 0.2, 0.0, &b);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("dimensions"), "flat set with eta: %d", (int)s);

    free(mine);
    free(want);
}

/* ------------------------------------------------------------------ misuse */

static void errors(const float *xyz) {
    factz_particles_config cfg;
    default_config(&cfg);
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = linking_b();
    size_t cap = 0, len = 12345, need = 0;
    factz_particles_max_compressed_size(N, &cap);
    uint8_t *out = malloc(cap);
    float *dec = malloc(3 * N * sizeof *dec);
    float *x = malloc(N * sizeof *x);
    factz_status s;

    /* Defaults. */
    CHECK(cfg.bound_kind == FACTZ_BOUND_REL && cfg.bound == 1e-3 && cfg.base == FACTZ_BASE_BUILTIN &&
              cfg.coder == FACTZ_CODER_RANS && cfg.zstd_level == 0 && cfg.flags == 0 && cfg.edit_bits == 16 &&
              cfg.max_iters == 1000 && cfg.learning_rate == 0.1 && cfg.tolerance == 0.0 && cfg.box_side == 0.0 &&
              cfg.backend == FACTZ_BACKEND_CPU,
          "defaults");
    factz_particles_config d;
    default_config(&d);
    CHECK(d.linking_kind == FACTZ_LINK_ETA && d.linking == 0.2, "default linking %u %g", d.linking_kind,
          d.linking);

    /* NULL pointers with nonzero sizes. */
    s = factz_particles_compress(xyz, N, NULL, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("config is NULL") && len == 0, "NULL config: %d", (int)s);
    s = factz_particles_compress(NULL, N, &cfg, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("xyz is NULL"), "NULL xyz: %d", (int)s);
    s = factz_particles_compress(xyz, N, &cfg, out, cap, NULL);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("out_len"), "NULL out_len: %d", (int)s);
    s = factz_particles_compress(xyz, N, &cfg, NULL, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("out is NULL"), "NULL out with capacity: %d", (int)s);
    s = factz_particles_compress_soa(x, NULL, x, N, &cfg, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("y is NULL"), "NULL y: %d", (int)s);
    s = factz_particles_max_compressed_size(N, NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL size out: %d", (int)s);
    s = factz_particles_max_correction_size(N, NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL correction size out: %d", (int)s);
    s = factz_particles_config_default(NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL default config: %d", (int)s);
    s = factz_particles_decompress(NULL, 100, dec, N);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("stream is NULL"), "NULL stream: %d", (int)s);
    s = factz_particles_info(out, 10, NULL);
    CHECK(s == FACTZ_NULL_POINTER, "NULL info: %d", (int)s);
    s = factz_particles_correct(xyz, NULL, N, &cfg, out, cap, &len);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("decoded is NULL"), "NULL decoded: %d", (int)s);
    s = factz_particles_apply(NULL, 10, dec, N);
    CHECK(s == FACTZ_NULL_POINTER, "NULL correction stream: %d", (int)s);
    s = factz_fof_labels(NULL, N, 1.0, 0.0, (uint32_t *)x);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("xyz is NULL"), "NULL fof xyz: %d", (int)s);
    s = factz_fof_labels(xyz, N, 1.0, 0.0, NULL);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("labels is NULL"), "NULL fof labels: %d", (int)s);
    size_t count = 7;
    s = factz_fof_halos(NULL, N, 1, NULL, NULL, 0, &count);
    CHECK(s == FACTZ_NULL_POINTER && count == 0, "NULL halo labels input: %d", (int)s);
    s = factz_fof_halos((const uint32_t *)x, N, 1, NULL, NULL, 0, NULL);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("count"), "NULL halo count: %d", (int)s);

    /* n = 0: NULL data is fine, and the empty stream round-trips. */
    size_t empty_len = 0;
    s = factz_particles_compress(NULL, 0, &cfg, out, cap, &empty_len);
    CHECK(s == FACTZ_OK && empty_len > 0, "empty compress: %d", (int)s);
    s = factz_particles_decompress(out, empty_len, NULL, 0);
    CHECK(s == FACTZ_OK, "empty decompress: %d", (int)s);
    s = factz_particles_decompress_soa(out, empty_len, NULL, NULL, NULL, 0);
    CHECK(s == FACTZ_OK, "empty SoA decompress: %d", (int)s);
    s = factz_particles_decompress(out, empty_len, dec, 1);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "empty stream into 1 particle: %d", (int)s);
    s = factz_fof_labels(NULL, 0, 1.0, 0.0, NULL);
    CHECK(s == FACTZ_OK, "empty fof: %d", (int)s);
    s = factz_fof_halos(NULL, 0, 1, NULL, NULL, 0, &count);
    CHECK(s == FACTZ_OK && count == 0, "empty halos: %d", (int)s);

    /* Sizes beyond one stream or size_t. */
    s = factz_particles_max_compressed_size(SIZE_MAX, &need);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("too large") && need == 0, "max size of SIZE_MAX: %d", (int)s);
    s = factz_particles_max_correction_size(SIZE_MAX / 3 + 1, &need);
    CHECK(s == FACTZ_INVALID_ARGUMENT && need == 0, "correction size of SIZE_MAX/3+1: %d", (int)s);
    s = factz_particles_compress(xyz, SIZE_MAX / 3 + 1, &cfg, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("too large"), "overflowing n: %d", (int)s);
    s = factz_particles_decompress(out, empty_len, dec, SIZE_MAX);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "decompress SIZE_MAX: %d", (int)s);
    s = factz_fof_labels(xyz, SIZE_MAX, 1.0, 0.0, (uint32_t *)x);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "fof of SIZE_MAX: %d", (int)s);

    /* Bad configurations. */
    factz_particles_config bad;
#define BAD(field, value, needle)                                                                    \
    do {                                                                                             \
        bad = cfg;                                                                                   \
        bad.field = value;                                                                           \
        s = factz_particles_compress(xyz, N, &bad, out, cap, &len);                                  \
        CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains(needle), #field " = " #value ": %d", (int)s); \
    } while (0)
    BAD(bound, NAN, "bound");
    BAD(bound, -1.0, "bound");
    BAD(bound, INFINITY, "bound");
    BAD(bound_kind, 3, "bound_kind");
    BAD(linking_kind, 0, "linking_kind");
    BAD(linking, 0.0, "linking length");
    BAD(linking, NAN, "linking length");
    BAD(box_side, -5.0, "box_side");
    BAD(box_side, NAN, "box_side");
    BAD(box_side, 2.0, "half the periodic box");
    BAD(base, 0, "base");
    BAD(base, 9, "base");
    BAD(coder, 0, "coder");
    BAD(zstd_level, 23, "zstd");
    BAD(flags, 0x100, "flags");
    BAD(backend, 7, "backend");
    BAD(edit_bits, 1, "edit bits");
    BAD(edit_bits, 25, "edit bits");
    BAD(learning_rate, 0.0, "learning rate");
    BAD(tolerance, -1.0, "tolerance");
#undef BAD
    bad = cfg;
    bad.linking_kind = FACTZ_LINK_ETA;
    bad.linking = 0.2;
    float flat[9] = {0, 0, 0, 1, 0, 0, 2, 0, 0};
    s = factz_particles_compress(flat, 3, &bad, out, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("dimensions"), "eta on a flat set: %d", (int)s);

    /* Bases this build may lack: FACTZ_UNSUPPORTED with a message, never a crash. */
    uint32_t bases[] = {FACTZ_BASE_SZ3, FACTZ_BASE_ZFP};
    for (int k = 0; k < 2; k++) {
        bad = cfg;
        bad.base = bases[k];
        s = factz_particles_compress(xyz, N, &bad, out, cap, &len);
        CHECK(s == FACTZ_OK || (s == FACTZ_UNSUPPORTED && msg_contains("not compiled in") && len == 0),
              "base %u: %d", bases[k], (int)s);
        printf("base %u: %s\n", bases[k], s == FACTZ_OK ? "compiled in" : factz_last_error());
        /* The correction ignores the base. */
        snap(xyz, dec, 3 * N, 0.15);
        size_t ccap = 0;
        factz_particles_max_correction_size(N, &ccap);
        uint8_t *cout = malloc(ccap);
        s = factz_particles_correct(xyz, dec, N, &bad, cout, ccap, &len);
        CHECK(s == FACTZ_OK, "correct with base %u: %d", bases[k], (int)s);
        free(cout);
    }

    /* struct_size versioning. */
    uint32_t sizes[] = {0, 4, (uint32_t)sizeof(factz_particles_config) - 8, (uint32_t)sizeof(factz_particles_config) + 8,
                       0xFFFFFFFFu};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        bad = cfg;
        bad.struct_size = sizes[k];
        s = factz_particles_compress(xyz, N, &bad, out, cap, &len);
        CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("struct_size"), "config struct_size %u: %d", sizes[k],
              (int)s);
        s = factz_particles_config_default(&bad);
        CHECK(s == FACTZ_INVALID_ARGUMENT && bad.bound == cfg.bound, "default config struct_size %u: %d", sizes[k],
              (int)s);
    }

    /* A good stream to break. */
    factz_particles_report rep = {0};
    rep.struct_size = sizeof rep;
    s = factz_particles_compress_ex(xyz, N, &cfg, out, cap, &len, &rep);
    CHECK(s == FACTZ_OK, "compress: %d", (int)s);
    size_t good = len;
    rep.struct_size = 3;
    s = factz_particles_compress_ex(xyz, N, &cfg, out, cap, &len, &rep);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("report->struct_size"), "report struct_size: %d", (int)s);
    s = factz_particles_compress(xyz, N, &cfg, out, cap, &len);
    CHECK(s == FACTZ_OK && len == good, "deterministic length: %zu vs %zu", len, good);

    /* Too small buffers: the needed size comes back, with the report. */
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    s = factz_particles_compress_ex(xyz, N, &cfg, NULL, 0, &need, &rep);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && need == good && rep.abs_bound > 0, "size query: %d, %zu vs %zu", (int)s,
          need, good);
    uint8_t *small = malloc(good);
    need = 0;
    s = factz_particles_compress(xyz, N, &cfg, small, good - 1, &need);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && need == good && msg_contains("needs"), "one byte short: %d", (int)s);
    s = factz_particles_compress(xyz, N, &cfg, small, good, &need);
    CHECK(s == FACTZ_OK && need == good && memcmp(small, out, good) == 0, "exact fit: %d", (int)s);
    free(small);

    /* NULL outputs, wrong counts and aliasing on decompress. */
    s = factz_particles_decompress(out, len, NULL, N);
    CHECK(s == FACTZ_NULL_POINTER && msg_contains("xyz is NULL"), "NULL xyz output: %d", (int)s);
    s = factz_particles_decompress_soa(out, len, x, x + 1, NULL, N);
    CHECK(s == FACTZ_NULL_POINTER || s == FACTZ_INVALID_ARGUMENT, "NULL z output: %d", (int)s);
    s = factz_particles_decompress(out, len, dec, N - 1);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("3000"), "n - 1: %d", (int)s);
    s = factz_particles_decompress(out, len, dec, N + 1);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "n + 1: %d", (int)s);
    s = factz_particles_decompress_soa(out, len, dec, dec + N, dec + N, N);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("overlap"), "aliased outputs: %d", (int)s);
    s = factz_particles_decompress(out, len, (float *)out, N);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("overlap"), "output over the stream: %d", (int)s);
    s = factz_particles_compress(xyz, N, &cfg, (uint8_t *)xyz, cap, &len);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("overlap") && len == 0, "out over the input: %d", (int)s);
    len = good;
    /* A complete stream is not a correction. */
    memcpy(dec, xyz, 3 * N * sizeof *dec);
    s = factz_particles_apply(out, len, dec, N);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("decompress"), "apply a complete stream: %d", (int)s);

    /* Info with a bad struct_size. */
    factz_particles_stream_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info + 4;
    s = factz_particles_info(out, len, &info);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("struct_size"), "info struct_size: %d", (int)s);
    info.struct_size = sizeof info;

    /* Truncated streams. */
    size_t cuts[] = {0, 1, 7, 8, 20, 60, 120, len / 2, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        s = factz_particles_decompress(cuts[k] ? out : NULL, cuts[k], dec, N);
        CHECK(s == FACTZ_CORRUPT_STREAM, "truncated to %zu bytes: %d", cuts[k], (int)s);
        s = factz_particles_info(cuts[k] ? out : NULL, cuts[k], &info);
        CHECK(s == FACTZ_CORRUPT_STREAM, "info of %zu bytes: %d", cuts[k], (int)s);
    }
    /* Trailing garbage. */
    uint8_t *longer = malloc(len + 3);
    memcpy(longer, out, len);
    memset(longer + len, 0, 3);
    s = factz_particles_decompress(longer, len + 3, dec, N);
    CHECK(s == FACTZ_CORRUPT_STREAM, "trailing bytes: %d", (int)s);
    free(longer);

    /* Corrupted streams: flip one byte at a time; never a crash, never success. */
    uint8_t *broken = malloc(len);
    size_t stride = len / 1500 + 1, wrong = 0, tried = 0;
    for (size_t pos = 0; pos < len; pos += (pos < 200 ? 1 : stride)) {
        memcpy(broken, out, len);
        broken[pos] ^= 0x5A;
        s = factz_particles_decompress(broken, len, dec, N);
        tried++;
        if (!(s == FACTZ_CORRUPT_STREAM || s == FACTZ_UNSUPPORTED)) {
            if (wrong++ < 5) fprintf(stderr, "  byte %zu flipped: status %d (%s)\n", pos, (int)s, factz_last_error());
        }
    }
    CHECK(wrong == 0, "%zu of %zu corrupted streams not refused", wrong, tried);
    free(broken);
    s = factz_particles_decompress((const uint8_t *)"hello, world", 12, dec, N);
    CHECK(s == FACTZ_CORRUPT_STREAM && msg_contains("magic"), "not a stream: %d", (int)s);

    /* A vector-field stream is not a particle stream. */
    enum { FNY = 8, FNX = 9 };
    float u[FNY * FNX], v[FNY * FNX];
    for (int k = 0; k < FNY * FNX; k++) {
        u[k] = (float)sin(0.3 * k);
        v[k] = (float)cos(0.2 * k);
    }
    factz_field_config fcfg = {.struct_size = sizeof fcfg};
    factz_field_config_default(&fcfg);
    size_t fcap = 0, flen = 0;
    factz_field_max_compressed_size(FNY, FNX, &fcap);
    uint8_t *fout = malloc(fcap);
    s = factz_field_compress(&fcfg, u, v, FNY, FNX, fout, fcap, &flen);
    CHECK(s == FACTZ_OK, "field compress: %d", (int)s);
    s = factz_particles_info(fout, flen, &info);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("not particles"), "info of a field stream: %d", (int)s);
    s = factz_particles_decompress(fout, flen, dec, FNY * FNX);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "decompress a field stream: %d", (int)s);
    free(fout);

    /* Correction: too small buffer reports the size; corrupted correction refused. */
    snap(xyz, dec, 3 * N, 0.15);
    size_t ccap = 0, clen = 0;
    factz_particles_max_correction_size(N, &ccap);
    uint8_t *cout = malloc(ccap);
    s = factz_particles_correct(xyz, dec, N, &cfg, cout, ccap, &clen);
    CHECK(s == FACTZ_OK, "correct: %d", (int)s);
    need = 0;
    s = factz_particles_correct(xyz, dec, N, &cfg, cout, clen - 1, &need);
    CHECK(s == FACTZ_BUFFER_TOO_SMALL && need == clen && msg_contains("max_correction_size"),
          "correction one byte short: %d, %zu vs %zu", (int)s, need, clen);
    s = factz_particles_correct(xyz, dec, N - 1, &cfg, (uint8_t *)(dec + 3), ccap, &need);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("overlap"), "correction over the input: %d", (int)s);
    float *dec2 = malloc(3 * N * sizeof *dec2);
    wrong = tried = 0;
    stride = clen / 400 + 1;
    for (size_t pos = 0; pos < clen; pos += (pos < 200 ? 1 : stride)) {
        memcpy(broken = malloc(clen), cout, clen);
        broken[pos] ^= 0x21;
        memcpy(dec2, dec, 3 * N * sizeof *dec2);
        s = factz_particles_apply(broken, clen, dec2, N);
        tried++;
        if (!(s == FACTZ_CORRUPT_STREAM || s == FACTZ_UNSUPPORTED) || memcmp(dec2, dec, 3 * N * sizeof *dec2) != 0) {
            if (wrong++ < 5) fprintf(stderr, "  correction byte %zu flipped: status %d (%s)\n", pos, (int)s,
                                     factz_last_error());
        }
        free(broken);
    }
    CHECK(wrong == 0, "%zu of %zu corrupted corrections not refused (or the positions changed)", wrong, tried);
    s = factz_particles_apply(cout, clen / 2, dec, N);
    CHECK(s == FACTZ_CORRUPT_STREAM, "truncated correction: %d", (int)s);
    free(dec2);
    free(cout);

    /* FoF argument checks. */
    s = factz_fof_labels(xyz, N, 0.0, 0.0, (uint32_t *)x);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("linking length"), "b = 0: %d", (int)s);
    s = factz_fof_labels(xyz, N, NAN, 0.0, (uint32_t *)x);
    CHECK(s == FACTZ_INVALID_ARGUMENT, "b = NaN: %d", (int)s);
    s = factz_fof_labels(xyz, N, 1.0, -1.0, (uint32_t *)x);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("box_side"), "negative box: %d", (int)s);
    s = factz_fof_labels(xyz, N, 60.0, L, (uint32_t *)x);
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("half"), "b > L/2: %d", (int)s);
    s = factz_fof_labels(xyz, N / 2, 1.0, 0.0, (uint32_t *)(xyz + 6));
    CHECK(s == FACTZ_INVALID_ARGUMENT && msg_contains("overlap"), "labels over xyz: %d", (int)s);

    /* last_error: cleared by a success. */
    s = factz_particles_max_compressed_size(SIZE_MAX, &need);
    CHECK(factz_last_error()[0] != '\0', "a failure sets the last error");
    s = factz_particles_max_compressed_size(4, &need);
    CHECK(s == FACTZ_OK && factz_last_error()[0] == '\0', "success clears the last error");

    free(out);
    free(dec);
    free(x);
}

int main(void) {
    float *xyz = malloc(3 * N * sizeof *xyz);
    make_particles(xyz);
    printf("factz %s: %d clustered particles in a box of %g, b = %.4g\n", factz_version_string(), N, L, linking_b());

    for (int soa = 0; soa < 2; soa++)
        for (int r = 0; r < 2; r++)
            for (int periodic = 0; periodic < 2; periodic++)
                roundtrip(xyz, soa, r ? 1e-5 : 1e-3, periodic ? L : 0.0, FACTZ_CODER_RANS, 0, 0);
    roundtrip(xyz, 0, 1e-3, L, FACTZ_CODER_HUFFMAN, 3, FACTZ_VERIFY);
    roundtrip(xyz, 1, 1e-3, 0.0, FACTZ_CODER_RANS, 1, FACTZ_VERIFY | FACTZ_CHUNK_OF_LARGER);
    CHECK(total_violated_before > 0, "no round trip exercised the correction (%zu violated pairs in all)",
          total_violated_before);

    bring_your_own(xyz, 1e-3, 0.0, 0);
    bring_your_own(xyz, 1e-3, L, 0);
    bring_your_own(xyz, 1e-4, L, 1);
    correction_worst_case(xyz);
    fof(xyz);
    errors(xyz);
    free(xyz);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
