/*
 * libfactz_h5: the parameter helpers and static registration of the filter
 * for programs that link HDF5 (and libfactz) themselves.
 */
#include <math.h>
#include <string.h>

#include "binding.h"
#include "factz_h5.h"

int factz_h5_field2d_cd_values(const factz_field_config *cfg,
                               unsigned cd_values[FACTZ_H5_USER_NELMTS]) {
    if (!cd_values) return -1;
    factz_field_config d = {.struct_size = sizeof d};
    factz_field_config_default(&d);
    if (!cfg) cfg = &d;
    memset(cd_values, 0, FACTZ_H5_USER_NELMTS * sizeof *cd_values);
    cd_values[FACTZ_H5_CD_VERSION_WORD] = FACTZ_H5_CD_VERSION;
    cd_values[FACTZ_H5_CD_KIND] = FACTZ_H5_KIND_FIELD2D;
    cd_values[FACTZ_H5_CD_MODE] = cfg->mode;
    cd_values[FACTZ_H5_CD_BOUND_KIND] = cfg->bound_kind;
    factz_h5_cd_put_double(cd_values, FACTZ_H5_CD_BOUND, cfg->bound);
    cd_values[FACTZ_H5_CD_CODER] = cfg->coder;
    cd_values[FACTZ_H5_CD_ZSTD] = (unsigned)cfg->zstd_level;
    cd_values[FACTZ_H5_CD_FLAGS] = cfg->flags & FACTZ_VERIFY ? FACTZ_H5_FLAG_VERIFY : 0;
    cd_values[FACTZ_H5_CD_CHUNK_RULE] = FACTZ_H5_CHUNK_RULE_ON;
    return 0;
}

int factz_h5_particles_cd_values(const factz_particles_config *cfg,
                                 unsigned cd_values[FACTZ_H5_USER_NELMTS]) {
    if (!cd_values) return -1;
    factz_particles_config d = {.struct_size = sizeof d};
    factz_particles_config_default(&d);
    if (!cfg) cfg = &d;
    memset(cd_values, 0, FACTZ_H5_USER_NELMTS * sizeof *cd_values);
    cd_values[FACTZ_H5_CD_VERSION_WORD] = FACTZ_H5_CD_VERSION;
    cd_values[FACTZ_H5_CD_KIND] = FACTZ_H5_KIND_PARTICLES;
    cd_values[FACTZ_H5_CD_MODE] = cfg->base;
    cd_values[FACTZ_H5_CD_BOUND_KIND] = cfg->bound_kind;
    factz_h5_cd_put_double(cd_values, FACTZ_H5_CD_BOUND, cfg->bound);
    cd_values[FACTZ_H5_CD_CODER] = cfg->coder;
    cd_values[FACTZ_H5_CD_ZSTD] = (unsigned)cfg->zstd_level;
    cd_values[FACTZ_H5_CD_FLAGS] = cfg->flags & FACTZ_VERIFY ? FACTZ_H5_FLAG_VERIFY : 0;
    cd_values[FACTZ_H5_CD_LINK_KIND] = cfg->linking_kind;
    factz_h5_cd_put_double(cd_values, FACTZ_H5_CD_LINK, cfg->linking);
    factz_h5_cd_put_double(cd_values, FACTZ_H5_CD_BOX, cfg->box_side);
    cd_values[FACTZ_H5_CD_CHUNK_RULE] = FACTZ_H5_CHUNK_RULE_ON;
    return 0;
}

static const char *const BAD_BOUND = "factz_h5: the error bound must be finite and > 0";

herr_t factz_h5_set_field2d(hid_t dcpl, const factz_field_config *cfg) {
    unsigned cd[FACTZ_H5_USER_NELMTS];
    if (cfg && !(cfg->bound > 0.0 && isfinite(cfg->bound))) {
        H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_PLINE, H5E_BADVALUE,
                 "%s", BAD_BOUND);
        return -1;
    }
    factz_h5_field2d_cd_values(cfg, cd);
    return H5Pset_filter(dcpl, FACTZ_H5_FILTER_ID, H5Z_FLAG_MANDATORY, FACTZ_H5_USER_NELMTS, cd);
}

herr_t factz_h5_set_particles(hid_t dcpl, const factz_particles_config *cfg) {
    unsigned cd[FACTZ_H5_USER_NELMTS];
    if (cfg && !(cfg->bound > 0.0 && isfinite(cfg->bound))) {
        H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_PLINE, H5E_BADVALUE,
                 "%s (lossless particles: use gzip or zstd)", BAD_BOUND);
        return -1;
    }
    factz_h5_particles_cd_values(cfg, cd);
    return H5Pset_filter(dcpl, FACTZ_H5_FILTER_ID, H5Z_FLAG_MANDATORY, FACTZ_H5_USER_NELMTS, cd);
}

/* ---- static registration ---------------------------------------------- */

static fz_h5_api direct;

static void bind_direct(void) {
    direct.Tget_class = (int (*)(fz_hid))H5Tget_class;
    direct.Tget_size = H5Tget_size;
    direct.Tget_order = (int (*)(fz_hid))H5Tget_order;
    direct.Sget_simple_extent_ndims = H5Sget_simple_extent_ndims;
    direct.Sget_simple_extent_dims = (int (*)(fz_hid, fz_hsize *, fz_hsize *))H5Sget_simple_extent_dims;
    direct.Pget_chunk = (int (*)(fz_hid, int, fz_hsize *))H5Pget_chunk;
    direct.Pget_filter_by_id2 = (fz_herr(*)(fz_hid, int, unsigned *, size_t *, unsigned *, size_t,
                                            char *, unsigned *))H5Pget_filter_by_id2;
    direct.Pmodify_filter = (fz_herr(*)(fz_hid, int, unsigned, size_t, const unsigned *))H5Pmodify_filter;
    direct.Pfill_value_defined = (fz_herr(*)(fz_hid, int *))H5Pfill_value_defined;
    direct.Pset_fill_value = H5Pset_fill_value;
    direct.allocate_memory = H5allocate_memory;
    direct.free_memory = H5free_memory;
    direct.Epush2 = (fz_herr(*)(fz_hid, const char *, const char *, unsigned, fz_hid, fz_hid, fz_hid,
                                const char *, ...))H5Epush2;
    direct.err_cls = &H5E_ERR_CLS_g;
    direct.maj_pline = &H5E_PLINE_g;
    direct.min_cantinit = &H5E_CANTINIT_g;
    direct.min_cantfilter = &H5E_CANTFILTER_g;
}

static htri_t can_apply(hid_t dcpl, hid_t type, hid_t space) {
    return fz_can_apply(&direct, dcpl, type, space);
}

static herr_t set_local(hid_t dcpl, hid_t type, hid_t space) {
    return fz_set_local(&direct, dcpl, type, space);
}

static size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t *buf_size, void **buf) {
    return fz_filter(&direct, flags, cd_nelmts, cd_values, nbytes, buf_size, buf);
}

herr_t factz_h5_register(void) {
    static const H5Z_class2_t cls = {
        H5Z_CLASS_T_VERS, FACTZ_H5_FILTER_ID, 1, 1, FZ_FILTER_NAME, can_apply, set_local, filter,
    };
    if (H5open() < 0) return -1;
    bind_direct();
    return H5Zregister(&cls);
}
