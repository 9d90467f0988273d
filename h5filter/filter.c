/*
 * The factz HDF5 filter: can_apply, set_local and the filter function, over a
 * table of HDF5 functions (binding.h) so the same code serves the run-time
 * bound plugin and the directly linked libfactz_h5.
 *
 * Nothing here may abort the host process: every failure pushes an HDF5
 * error with a message saying what would work, and returns HDF5's failure
 * value (negative, or 0 from the filter function, which fails the write or
 * read of that chunk as a whole).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "factz.h"
#include "factz_h5_cd.h"

/* ---- errors ----------------------------------------------------------- */

static void push_error(const fz_h5_api *h5, int filtering, const char *func, const char *fmt,
                       ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (h5 && h5->Epush2 && h5->err_cls && h5->maj_pline && h5->min_cantinit) {
        fz_hid min = filtering && h5->min_cantfilter ? *h5->min_cantfilter : *h5->min_cantinit;
        /* H5E_DEFAULT (0): the current error stack. "%s" keeps a '%' in the
         * message from being read as a format. */
        h5->Epush2(0, __FILE__, func, __LINE__, *h5->err_cls, *h5->maj_pline, min, "%s", msg);
    } else {
        fprintf(stderr, "factz HDF5 filter: %s\n", msg);
    }
}

/* ---- cd_values -------------------------------------------------------- */

typedef struct params {
    unsigned kind, mode, bound_kind, coder, zstd, flags, link_kind, chunk_rule;
    double bound, link, box;
    /* From set_local (dtype, layout, chunk) and derived from the words above. */
    unsigned dtype, layout, chunk_used;
    unsigned chunk[3];
    double linking_length;
} params;

static double get_double(const unsigned *cd, size_t n, size_t at) {
    if (at + 1 >= n) return 0.0;
    uint64_t bits = (uint64_t)cd[at] | ((uint64_t)cd[at + 1] << 32);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static unsigned word(const unsigned *cd, size_t n, size_t at) { return at < n ? cd[at] : 0; }

/* Reads the user's words with their defaults; 0 on success, else writes why. */
static int parse_user(const unsigned *cd, size_t n, params *p, char *why, size_t whylen) {
    memset(p, 0, sizeof *p);
    unsigned version = word(cd, n, FACTZ_H5_CD_VERSION_WORD);
    if (version != 0 && version != FACTZ_H5_CD_VERSION) {
        snprintf(why, whylen,
                 "cd_values version %u is not supported by this plugin (it reads version %d; "
                 "a newer factz wrote these parameters?)",
                 version, FACTZ_H5_CD_VERSION);
        return -1;
    }
    if (n > FACTZ_H5_NELMTS) {
        snprintf(why, whylen, "%zu cd_values given; the factz filter takes at most %d", n,
                 FACTZ_H5_NELMTS);
        return -1;
    }
    p->kind = word(cd, n, FACTZ_H5_CD_KIND);
    p->mode = word(cd, n, FACTZ_H5_CD_MODE);
    p->bound_kind = word(cd, n, FACTZ_H5_CD_BOUND_KIND);
    p->bound = get_double(cd, n, FACTZ_H5_CD_BOUND);
    p->coder = word(cd, n, FACTZ_H5_CD_CODER);
    p->zstd = word(cd, n, FACTZ_H5_CD_ZSTD);
    p->flags = word(cd, n, FACTZ_H5_CD_FLAGS);
    p->link_kind = word(cd, n, FACTZ_H5_CD_LINK_KIND);
    p->link = get_double(cd, n, FACTZ_H5_CD_LINK);
    p->box = get_double(cd, n, FACTZ_H5_CD_BOX);
    p->chunk_rule = word(cd, n, FACTZ_H5_CD_CHUNK_RULE);

    if (p->kind > FACTZ_H5_KIND_PARTICLES) {
        snprintf(why, whylen, "kind %u: use 0 (from the shape), 1 (vector field) or 2 (particles)",
                 p->kind);
        return -1;
    }
    if (p->bound_kind == 0) p->bound_kind = FACTZ_BOUND_REL;
    if (p->bound_kind != FACTZ_BOUND_ABS && p->bound_kind != FACTZ_BOUND_REL) {
        snprintf(why, whylen, "bound kind %u: use 1 (absolute) or 2 (relative)", p->bound_kind);
        return -1;
    }
    if (p->bound == 0.0) p->bound = 1e-3;
    if (!(p->bound > 0.0) || !isfinite(p->bound)) {
        snprintf(why, whylen, "error bound %g: it must be finite and > 0", p->bound);
        return -1;
    }
    if (p->coder == 0) p->coder = FACTZ_CODER_RANS;
    if (p->coder != FACTZ_CODER_HUFFMAN && p->coder != FACTZ_CODER_RANS) {
        snprintf(why, whylen, "coder %u: use 1 (Huffman) or 2 (rANS)", p->coder);
        return -1;
    }
    if (p->zstd > 22) {
        snprintf(why, whylen, "zstd level %u: use 0 (none) to 22", p->zstd);
        return -1;
    }
    if (p->flags & ~FACTZ_H5_FLAG_VERIFY) {
        snprintf(why, whylen, "flags 0x%x: only bit 0 (verify) is defined", p->flags);
        return -1;
    }
    if (p->link_kind == 0) p->link_kind = FACTZ_LINK_ETA;
    if (p->link_kind != FACTZ_LINK_LENGTH && p->link_kind != FACTZ_LINK_ETA) {
        snprintf(why, whylen, "linking kind %u: use 1 (linking length b) or 2 (eta)",
                 p->link_kind);
        return -1;
    }
    if (p->link == 0.0 && p->link_kind == FACTZ_LINK_ETA) p->link = 0.2;
    if (!(p->link > 0.0) || !isfinite(p->link)) {
        snprintf(why, whylen, "linking %s %g: it must be finite and > 0",
                 p->link_kind == FACTZ_LINK_ETA ? "eta" : "length", p->link);
        return -1;
    }
    if (!(p->box >= 0.0) || !isfinite(p->box)) {
        snprintf(why, whylen, "periodic box %g: give its side (> 0), or 0 for open boundaries",
                 p->box);
        return -1;
    }
    if (p->chunk_rule > FACTZ_H5_CHUNK_RULE_OFF) {
        snprintf(why, whylen, "chunk rule %u: use 0 or 1 (on, the default) or 2 (off: the dataset is one chunk)", p->chunk_rule);
        return -1;
    }
    return 0;
}

/* What follows from the user's words: the chunk rule, and the b every chunk
 * of a particle dataset uses (0: eta on the one chunk's own box). */
static void derive(params *p) {
    p->chunk_used = p->chunk_rule != FACTZ_H5_CHUNK_RULE_OFF;
    p->linking_length = p->link_kind == FACTZ_LINK_LENGTH ? p->link : 0.0;
}

/* Reads everything, including what set_local added (the filter function's view). */
static int parse_full(const unsigned *cd, size_t n, params *p, char *why, size_t whylen) {
    if (n != FACTZ_H5_NELMTS) {
        snprintf(why, whylen,
                 "%zu cd_values, expected %d: the parameters did not pass through the factz "
                 "filter's set_local (was the filter added to a dataset of another version?)",
                 n, FACTZ_H5_NELMTS);
        return -1;
    }
    if (parse_user(cd, n, p, why, whylen)) return -1;
    p->dtype = cd[FACTZ_H5_CD_DTYPE];
    p->layout = cd[FACTZ_H5_CD_LAYOUT];
    for (int k = 0; k < 3; k++) p->chunk[k] = cd[FACTZ_H5_CD_CHUNK + k];
    derive(p);
    if ((p->dtype != FACTZ_H5_DTYPE_F32LE && p->dtype != FACTZ_H5_DTYPE_F64LE) ||
        p->layout > FACTZ_H5_LAYOUT_PARTICLES) {
        snprintf(why, whylen, "cd_values written by set_local are out of range (corrupted?)");
        return -1;
    }
    return 0;
}

/* ---- the chunk's shape ------------------------------------------------ */

static const char *dims_str(char *buf, size_t len, const fz_hsize *d, int rank) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, len - at, "(");
    for (int k = 0; k < rank && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%llu", k ? ", " : "", d[k]);
    if (at < len) snprintf(buf + at, len - at, ")");
    return buf;
}

/* Whether libfactz has this particle base: refused at dataset creation, not
 * at the first chunk, where h5py's optional filters would store it raw. */
static int base_compiled_in(unsigned base) {
    float xyz[6] = {0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f};
    uint8_t out[512];
    size_t len = 0;
    factz_particles_config cfg = {.struct_size = sizeof cfg};
    factz_particles_config_default(&cfg);
    cfg.base = base;
    cfg.bound_kind = FACTZ_BOUND_ABS;
    cfg.bound = 1e-3;
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = 1.0;
    return factz_particles_compress(xyz, 2, &cfg, out, sizeof out, &len) != FACTZ_UNSUPPORTED;
}

/* Checks type and chunk shape against the parameters and works out layout,
 * chunk rule and linking length: the single source of truth for what the
 * filter accepts (can_apply and set_local both call it). HDF5 hands both
 * callbacks the dataspace of one chunk, not of the dataset, so nothing here
 * can depend on the dataset's extent: the chunk rule is on unless the user
 * says the dataset is one chunk, and particles need b itself (eta would give
 * each chunk its own b). */
static int resolve(const fz_h5_api *h5, fz_hid dcpl, fz_hid type, fz_hid space, params *p,
                   char *why, size_t whylen) {
    unsigned cd[FACTZ_H5_NELMTS];
    size_t n = FACTZ_H5_NELMTS;
    unsigned flags = 0, config = 0;
    char name[8];
    if (h5->Pget_filter_by_id2(dcpl, FACTZ_H5_FILTER_ID, &flags, &n, cd, sizeof name, name,
                               &config) < 0) {
        snprintf(why, whylen, "cannot read the factz filter's parameters from the property list");
        return -1;
    }
    if (n > FACTZ_H5_NELMTS) {
        snprintf(why, whylen, "%zu cd_values given; the factz filter takes at most %d", n,
                 FACTZ_H5_NELMTS);
        return -1;
    }
    /* Words past the user's part are recomputed here. */
    if (parse_user(cd, n < FACTZ_H5_USER_NELMTS ? n : FACTZ_H5_USER_NELMTS, p, why, whylen))
        return -1;

    int cls = h5->Tget_class(type);
    size_t size = h5->Tget_size(type);
    int order = h5->Tget_order(type);
    if (cls != FZ_H5T_FLOAT || (size != 4 && size != 8) || order != FZ_H5T_ORDER_LE) {
        snprintf(why, whylen,
                 "the dataset's type must be little-endian 32-bit float (H5T_IEEE_F32LE / "
                 "H5T_NATIVE_FLOAT on this machine) or 64-bit float (H5T_IEEE_F64LE / "
                 "H5T_NATIVE_DOUBLE); this one is %s of %zu bytes%s",
                 cls == FZ_H5T_FLOAT ? "a float" : "not a float", size,
                 cls == FZ_H5T_FLOAT && order != FZ_H5T_ORDER_LE ? ", big-endian" : "");
        return -1;
    }
    p->dtype = size == 8 ? FACTZ_H5_DTYPE_F64LE : FACTZ_H5_DTYPE_F32LE;

    fz_hsize chunk[3] = {0, 0, 0};
    char d1[96];
    int rank = h5->Sget_simple_extent_ndims(space);
    if (rank != 2 && rank != 3) {
        snprintf(why, whylen,
                 "factz stores rank-3 vector fields (2, ny, nx) or (ny, nx, 2) and rank-2 "
                 "particle positions (n, 3); this dataset has rank %d",
                 rank);
        return -1;
    }
    if (h5->Pget_chunk(dcpl, rank, chunk) != rank) {
        snprintf(why, whylen, "cannot read the dataset's chunk shape");
        return -1;
    }
    for (int k = 0; k < rank; k++) {
        if (chunk[k] == 0 || chunk[k] > 0xffffffffull) {
            snprintf(why, whylen, "chunk dimension %llu is out of range", chunk[k]);
            return -1;
        }
    }

    if (rank == 3) {
        if (p->kind == FACTZ_H5_KIND_PARTICLES) {
            snprintf(why, whylen, "particles are stored as a rank-2 (n, 3) dataset; this one is "
                                  "rank 3");
            return -1;
        }
        p->kind = FACTZ_H5_KIND_FIELD2D;
        if (chunk[0] == 2) {
            p->layout = FACTZ_H5_LAYOUT_FIELD_SOA;
        } else if (chunk[2] == 2) {
            p->layout = FACTZ_H5_LAYOUT_FIELD_AOS;
        } else {
            snprintf(why, whylen,
                     "a vector field is a dataset (2, ny, nx) chunked (2, cy, cx), or (ny, nx, 2) "
                     "chunked (cy, cx, 2): the chunk must keep the component axis whole; this "
                     "chunk is %s",
                     dims_str(d1, sizeof d1, chunk, 3));
            return -1;
        }
        if (p->mode == 0) p->mode = FACTZ_MODE_SPECULATIVE;
        if (p->mode != FACTZ_MODE_BLOCKWISE && p->mode != FACTZ_MODE_SPECULATIVE) {
            snprintf(why, whylen, "vector field mode %u: use 1 (B, block-wise) or 2 (S, "
                                  "speculative)",
                     p->mode);
            return -1;
        }
    } else {
        if (p->kind == FACTZ_H5_KIND_FIELD2D) {
            snprintf(why, whylen, "vector fields are stored as a rank-3 dataset (2, ny, nx) or "
                                  "(ny, nx, 2); this one is rank 2");
            return -1;
        }
        p->kind = FACTZ_H5_KIND_PARTICLES;
        p->layout = FACTZ_H5_LAYOUT_PARTICLES;
        if (chunk[1] != 3) {
            snprintf(why, whylen,
                     "particle positions are a dataset (n, 3) chunked (cn, 3); this chunk is %s",
                     dims_str(d1, sizeof d1, chunk, 2));
            return -1;
        }
        if (p->mode == 0) p->mode = FACTZ_BASE_BUILTIN;
        if (p->mode != FACTZ_BASE_BUILTIN && p->mode != FACTZ_BASE_SZ3 &&
            p->mode != FACTZ_BASE_ZFP) {
            snprintf(why, whylen, "particle base %u: use 1 (built-in), 2 (SZ3) or 3 (ZFP)",
                     p->mode);
            return -1;
        }
        if (p->dtype == FACTZ_H5_DTYPE_F64LE && p->mode == FACTZ_BASE_SZ3) {
            snprintf(why, whylen, "64-bit float particle positions compress with the built-in "
                                  "(1) or ZFP (3) base; SZ3 (2) takes 32-bit floats");
            return -1;
        }
        if (!base_compiled_in(p->mode)) {
            snprintf(why, whylen,
                     "particle base %s is not compiled into this build of factz (%s); use 1 "
                     "(built-in)",
                     p->mode == FACTZ_BASE_SZ3 ? "2 (SZ3)" : "3 (ZFP)", factz_last_error());
            return -1;
        }
        if (p->link_kind == FACTZ_LINK_ETA && p->chunk_rule != FACTZ_H5_CHUNK_RULE_OFF) {
            snprintf(why, whylen,
                     "particles need the linking length b (linking kind 1, or "
                     "factz_h5_set_particles with FACTZ_LINK_LENGTH, or factz_h5.Particles(b=...) "
                     "in Python): each chunk is compressed alone, and eta would give each chunk "
                     "its own b. eta is accepted only with the chunk rule off (word 14 = 2), "
                     "for a dataset stored as one chunk");
            return -1;
        }
        derive(p);
        if (p->box > 0.0 && p->linking_length > p->box / 2.0) {
            snprintf(why, whylen, "linking length %g exceeds half the periodic box %g",
                     p->linking_length, p->box);
            return -1;
        }
    }
    for (int k = 0; k < 3; k++) p->chunk[k] = k < rank ? (unsigned)chunk[k] : 0;
    return 0;
}

fz_htri fz_can_apply(const fz_h5_api *h5, fz_hid dcpl, fz_hid type, fz_hid space) {
    params p;
    char why[640];
    if (resolve(h5, dcpl, type, space, &p, why, sizeof why)) {
        push_error(h5, 0, "factz can_apply", "factz filter: %s", why);
        return 0;
    }
    return 1;
}

fz_herr fz_set_local(const fz_h5_api *h5, fz_hid dcpl, fz_hid type, fz_hid space) {
    params p;
    char why[640];
    unsigned flags = 0, config = 0;
    unsigned cd[FACTZ_H5_NELMTS];
    size_t n = FACTZ_H5_NELMTS;
    char name[8];
    if (resolve(h5, dcpl, type, space, &p, why, sizeof why)) {
        push_error(h5, 0, "factz set_local", "factz filter: %s", why);
        return -1;
    }
    if (h5->Pget_filter_by_id2(dcpl, FACTZ_H5_FILTER_ID, &flags, &n, cd, sizeof name, name,
                               &config) < 0) {
        push_error(h5, 0, "factz set_local", "factz filter: cannot read its parameters back");
        return -1;
    }
    memset(cd, 0, sizeof cd);
    cd[FACTZ_H5_CD_VERSION_WORD] = FACTZ_H5_CD_VERSION;
    cd[FACTZ_H5_CD_KIND] = p.kind;
    cd[FACTZ_H5_CD_MODE] = p.mode;
    cd[FACTZ_H5_CD_BOUND_KIND] = p.bound_kind;
    factz_h5_cd_put_double(cd, FACTZ_H5_CD_BOUND, p.bound);
    cd[FACTZ_H5_CD_CODER] = p.coder;
    cd[FACTZ_H5_CD_ZSTD] = p.zstd;
    cd[FACTZ_H5_CD_FLAGS] = p.flags;
    cd[FACTZ_H5_CD_LINK_KIND] = p.link_kind;
    factz_h5_cd_put_double(cd, FACTZ_H5_CD_LINK, p.link);
    factz_h5_cd_put_double(cd, FACTZ_H5_CD_BOX, p.box);
    cd[FACTZ_H5_CD_CHUNK_RULE] = p.chunk_rule;
    cd[FACTZ_H5_CD_DTYPE] = p.dtype;
    cd[FACTZ_H5_CD_LAYOUT] = p.layout;
    for (int k = 0; k < 3; k++) cd[FACTZ_H5_CD_CHUNK + k] = p.chunk[k];
    if (h5->Pmodify_filter(dcpl, FACTZ_H5_FILTER_ID, flags, FACTZ_H5_NELMTS, cd) < 0) {
        push_error(h5, 0, "factz set_local", "factz filter: cannot store its parameters");
        return -1;
    }
    /* HDF5 pads partial edge chunks with the fill value, and the filter sees
     * the padding as data. A default fill of 0 would widen a chunk's value
     * range (breaking a relative bound on a field living in [9, 11]) and put
     * particles at the origin, moving the bounding-box faces the chunk rule
     * measures from. NaN is left out of ranges and boxes, stored bit-exact,
     * holds no critical point and links nothing. The value is read as the
     * dataset's type: a double NaN for a 64-bit dataset. */
    int status = 0;
    if (h5->Pfill_value_defined(dcpl, &status) >= 0 && status == FZ_H5D_FILL_VALUE_DEFAULT) {
        float nan = NAN;
        double nan64 = NAN;
        const void *fill = p.dtype == FACTZ_H5_DTYPE_F64LE ? (const void *)&nan64 : &nan;
        if (h5->Pset_fill_value(dcpl, type, fill) < 0) {
            push_error(h5, 0, "factz set_local", "factz filter: cannot set the NaN fill value");
            return -1;
        }
    }
    return 0;
}

/* ---- the filter function ---------------------------------------------- */

static void *alloc_buf(const fz_h5_api *h5, size_t len) {
    return h5->allocate_memory ? h5->allocate_memory(len, false) : malloc(len);
}

static void free_buf(const fz_h5_api *h5, void *p) {
    if (h5->free_memory)
        h5->free_memory(p);
    else
        free(p);
}

/* Replaces HDF5's buffer by `out` (of capacity `cap`) holding `len` bytes. */
static size_t hand_over(const fz_h5_api *h5, void **buf, size_t *buf_size, void *out, size_t cap,
                        size_t len) {
    free_buf(h5, *buf);
    *buf = out;
    *buf_size = cap;
    return len;
}

static size_t decode(const fz_h5_api *h5, size_t cd_nelmts, const unsigned cd[], size_t nbytes,
                     size_t *buf_size, void **buf) {
    const uint8_t *in = (const uint8_t *)*buf;
    factz_field_stream_info fi = {.struct_size = sizeof fi};
    factz_particles_stream_info pi = {.struct_size = sizeof pi};
    size_t expected = 0;
    params p;
    char why[640];
    int have_cd = cd_nelmts == FACTZ_H5_NELMTS && parse_full(cd, cd_nelmts, &p, why, sizeof why) == 0;
    size_t value = have_cd && p.dtype == FACTZ_H5_DTYPE_F64LE ? 8 : 4;
    if (have_cd) expected = (size_t)p.chunk[0] * p.chunk[1] * (p.chunk[2] ? p.chunk[2] : 1) * value;
    /* The dataset's parameters say which kind its chunks hold; without them
     * (never from HDF5) the stream's own header decides. */
    int want_field = !have_cd || p.kind == FACTZ_H5_KIND_FIELD2D;
    int want_particles = !have_cd || p.kind == FACTZ_H5_KIND_PARTICLES;
    if (want_field && factz_field_info(in, nbytes, &fi) == FACTZ_OK) {
        if (fi.ny > SIZE_MAX / 16 / (fi.nx ? fi.nx : 1)) goto corrupt;
        /* The stream says its element type; a dataset's parameters must agree. */
        int f64 = fi.dtype == 2;
        if (have_cd && f64 != (p.dtype == FACTZ_H5_DTYPE_F64LE)) {
            push_error(h5, 1, "factz filter",
                       "factz filter: chunk holds %s values, but the dataset holds %s "
                       "(corrupted chunk?)",
                       f64 ? "64-bit" : "32-bit", f64 ? "32-bit" : "64-bit");
            return 0;
        }
        size_t len = (size_t)(2 * fi.ny * fi.nx * (f64 ? sizeof(double) : sizeof(float)));
        if (have_cd && len != expected) {
            push_error(h5, 1, "factz filter",
                       "factz filter: chunk holds a %llu x %llu vector field, but the dataset's "
                       "chunks hold %zu bytes (corrupted chunk?)",
                       (unsigned long long)fi.ny, (unsigned long long)fi.nx, expected);
            return 0;
        }
        void *out = alloc_buf(h5, len ? len : 1);
        if (!out) goto nomem;
        int aos = have_cd ? p.layout == FACTZ_H5_LAYOUT_FIELD_AOS : fi.layout == FACTZ_LAYOUT_AOS;
        size_t n = (size_t)(fi.ny * fi.nx);
        float *o32 = (float *)out;
        double *o64 = (double *)out;
        factz_status st =
            f64 ? (aos ? factz_field_decompress_interleaved_f64(in, nbytes, o64, fi.ny, fi.nx)
                       : factz_field_decompress_f64(in, nbytes, o64, o64 + n, fi.ny, fi.nx))
                : (aos ? factz_field_decompress_interleaved(in, nbytes, o32, fi.ny, fi.nx)
                       : factz_field_decompress(in, nbytes, o32, o32 + n, fi.ny, fi.nx));
        if (st != FACTZ_OK) {
            free_buf(h5, out);
            goto corrupt;
        }
        return hand_over(h5, buf, buf_size, out, len ? len : 1, len);
    }
    if (want_particles && factz_particles_info(in, nbytes, &pi) == FACTZ_OK) {
        if (pi.n > SIZE_MAX / 32) goto corrupt;
        int f64 = pi.dtype == 2;
        if (have_cd && f64 != (p.dtype == FACTZ_H5_DTYPE_F64LE)) {
            push_error(h5, 1, "factz filter",
                       "factz filter: chunk holds %s positions, but the dataset holds %s "
                       "(corrupted chunk?)",
                       f64 ? "64-bit" : "32-bit", f64 ? "32-bit" : "64-bit");
            return 0;
        }
        size_t len = (size_t)(pi.n * 3 * (f64 ? sizeof(double) : sizeof(float)));
        if (have_cd && len != expected) {
            push_error(h5, 1, "factz filter",
                       "factz filter: chunk holds %llu particles, but the dataset's chunks hold "
                       "%zu bytes (corrupted chunk?)",
                       (unsigned long long)pi.n, expected);
            return 0;
        }
        void *out = alloc_buf(h5, len ? len : 1);
        if (!out) goto nomem;
        factz_status st = f64 ? factz_particles_decompress_f64(in, nbytes, (double *)out, pi.n)
                              : factz_particles_decompress(in, nbytes, (float *)out, pi.n);
        if (st != FACTZ_OK) {
            free_buf(h5, out);
            goto corrupt;
        }
        return hand_over(h5, buf, buf_size, out, len ? len : 1, len);
    }
corrupt:
    push_error(h5, 1, "factz filter", "factz filter: cannot decode the chunk (corrupted?): %s",
               factz_last_error());
    return 0;
nomem:
    push_error(h5, 1, "factz filter", "factz filter: out of memory decoding a chunk");
    return 0;
}

/* FACTZ_BACKEND=cpu|cuda|auto: where chunks compress. A run-time choice, so it
 * is not in the filter's parameters stored in the file (the stream is the same
 * on every backend). Unset or empty: cpu. */
static int backend_from_env(uint32_t *backend, char *why, size_t whylen) {
    const char *v = getenv("FACTZ_BACKEND");
    if (!v || !*v || !strcmp(v, "cpu"))
        *backend = FACTZ_BACKEND_CPU;
    else if (!strcmp(v, "cuda"))
        *backend = FACTZ_BACKEND_CUDA;
    else if (!strcmp(v, "auto"))
        *backend = FACTZ_BACKEND_AUTO;
    else {
        snprintf(why, whylen, "FACTZ_BACKEND=%.64s: use cpu, cuda or auto", v);
        return 1;
    }
    return 0;
}

static size_t encode(const fz_h5_api *h5, size_t cd_nelmts, const unsigned cd[], size_t nbytes,
                     size_t *buf_size, void **buf) {
    params p;
    char why[640];
    uint32_t backend;
    if (parse_full(cd, cd_nelmts, &p, why, sizeof why) ||
        backend_from_env(&backend, why, sizeof why)) {
        push_error(h5, 1, "factz filter", "factz filter: %s", why);
        return 0;
    }
    const float *in = (const float *)*buf;
    factz_status st;
    size_t cap = 0, len = 0;
    uint8_t *out = NULL;
    if (p.layout == FACTZ_H5_LAYOUT_PARTICLES) {
        size_t n = p.chunk[0];
        int f64 = p.dtype == FACTZ_H5_DTYPE_F64LE;
        if (nbytes != n * 3 * (f64 ? sizeof(double) : sizeof(float))) goto shape;
        factz_particles_config cfg = {.struct_size = sizeof cfg};
        factz_particles_config_default(&cfg);
        cfg.bound_kind = p.bound_kind;
        cfg.bound = p.bound;
        cfg.base = p.mode;
        if (p.linking_length > 0.0) {
            cfg.linking_kind = FACTZ_LINK_LENGTH;
            cfg.linking = p.linking_length;
        } else {
            cfg.linking_kind = FACTZ_LINK_ETA;
            cfg.linking = p.link;
        }
        cfg.box_side = p.box;
        cfg.coder = p.coder;
        cfg.zstd_level = (int32_t)p.zstd;
        cfg.flags = (p.chunk_used ? FACTZ_CHUNK_OF_LARGER : 0) |
                    (p.flags & FACTZ_H5_FLAG_VERIFY ? FACTZ_VERIFY : 0);
        cfg.backend = backend;
        st = f64 ? factz_particles_max_compressed_size_f64(n, &cap)
                 : factz_particles_max_compressed_size(n, &cap);
        if (st != FACTZ_OK) goto fail;
        if (!(out = (uint8_t *)alloc_buf(h5, cap))) goto nomem;
        st = f64 ? factz_particles_compress_f64((const double *)*buf, n, &cfg, out, cap, &len, NULL)
                 : factz_particles_compress(in, n, &cfg, out, cap, &len);
    } else {
        size_t ny, nx;
        int aos = p.layout == FACTZ_H5_LAYOUT_FIELD_AOS;
        ny = aos ? p.chunk[0] : p.chunk[1];
        nx = aos ? p.chunk[1] : p.chunk[2];
        int f64 = p.dtype == FACTZ_H5_DTYPE_F64LE;
        if (nbytes != 2 * ny * nx * (f64 ? sizeof(double) : sizeof(float))) goto shape;
        factz_field_config cfg = {.struct_size = sizeof cfg};
        factz_field_config_default(&cfg);
        cfg.mode = p.mode;
        cfg.bound_kind = p.bound_kind;
        cfg.bound = p.bound;
        cfg.coder = p.coder;
        cfg.zstd_level = (int32_t)p.zstd;
        cfg.flags = (p.chunk_used ? FACTZ_CHUNK_OF_LARGER : 0) |
                    (p.flags & FACTZ_H5_FLAG_VERIFY ? FACTZ_VERIFY : 0);
        cfg.layout = aos ? FACTZ_LAYOUT_AOS : FACTZ_LAYOUT_SOA;
        cfg.backend = backend;
        st = f64 ? factz_field_max_compressed_size_f64(ny, nx, &cap)
                 : factz_field_max_compressed_size(ny, nx, &cap);
        if (st != FACTZ_OK) goto fail;
        if (!(out = (uint8_t *)alloc_buf(h5, cap))) goto nomem;
        if (f64) {
            const double *d = (const double *)*buf;
            st = aos ? factz_field_compress_interleaved_f64(&cfg, d, ny, nx, out, cap, &len, NULL)
                     : factz_field_compress_f64(&cfg, d, d + ny * nx, ny, nx, out, cap, &len,
                                                NULL);
        } else {
            st = aos ? factz_field_compress_interleaved(&cfg, in, ny, nx, out, cap, &len)
                     : factz_field_compress(&cfg, in, in + ny * nx, ny, nx, out, cap, &len);
        }
    }
    if (st != FACTZ_OK) goto fail;
    return hand_over(h5, buf, buf_size, out, cap, len);
shape:
    push_error(h5, 1, "factz filter",
               "factz filter: got a chunk of %zu bytes, expected %u x %u x %u %s", nbytes,
               p.chunk[0], p.chunk[1], p.chunk[2] ? p.chunk[2] : 1,
               p.dtype == FACTZ_H5_DTYPE_F64LE ? "doubles" : "floats");
    return 0;
fail:
    push_error(h5, 1, "factz filter", "factz filter: compressing a chunk failed: %s",
               factz_last_error());
    if (out) free_buf(h5, out);
    return 0;
nomem:
    push_error(h5, 1, "factz filter", "factz filter: out of memory compressing a chunk");
    return 0;
}

size_t fz_filter(const fz_h5_api *h5, unsigned flags, size_t cd_nelmts, const unsigned cd_values[],
                 size_t nbytes, size_t *buf_size, void **buf) {
    if (!buf || !*buf || !buf_size) {
        push_error(h5, 1, "factz filter", "factz filter: called without a buffer");
        return 0;
    }
    if (flags & FZ_H5Z_FLAG_REVERSE) return decode(h5, cd_nelmts, cd_values, nbytes, buf_size, buf);
    return encode(h5, cd_nelmts, cd_values, nbytes, buf_size, buf);
}
