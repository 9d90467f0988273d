/*
 * Writes and reads factz-filtered HDF5 datasets from C, the way a simulation
 * code does (same command line as python/h5tool.py, so tests can write with
 * one and read with the other):
 *
 *   h5tool [--register] write-field FILE DSET RAW.f32 NY NX soa|aos CY CX b|s abs|rel BOUND
 *   h5tool [--register] write-particles FILE DSET RAW.f32 N CN abs|rel BOUND B BOX
 *   h5tool [--register] read FILE DSET OUT.f32
 *   h5tool [--register] create FILE DSET DIMS CHUNK TYPE CD
 *       DIMS, CHUNK like 2x64x64; TYPE f32, f32be, f64 or i32; CD the cd_values
 *       as w0,w1,... ("-" for none). Creates the dataset with the factz filter
 *       (mandatory) and writes smooth data: the way to try what the filter
 *       refuses, with HDF5's error stack on stderr.
 *
 * --register links the filter in with factz_h5_register() instead of loading
 * the plugin from HDF5_PLUGIN_PATH.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "factz_h5.h"

static int fail(const char *what) {
    fprintf(stderr, "h5tool: %s\n", what);
    return 1;
}

static float *read_raw(const char *path, size_t count) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *data = malloc(count * sizeof *data + 1);
    size_t got = data ? fread(data, sizeof *data, count, f) : 0;
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != count || extra) {
        free(data);
        return NULL;
    }
    return data;
}

static hid_t open_or_create(const char *path) {
    hid_t f = -1;
    /* A missing file is not an error here; leave the block normally so HDF5's
     * error printing comes back on. */
    H5E_BEGIN_TRY { f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT); }
    H5E_END_TRY;
    return f >= 0 ? f : H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
}

/* Creates DSET with the dcpl and writes `data` (float32) in one call. */
static int write_dataset(const char *file, const char *dset, int rank, const hsize_t *dims,
                         hid_t dcpl, const float *data) {
    hid_t f = open_or_create(file);
    if (f < 0) return fail("cannot open or create the file");
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, dset, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc = 0;
    if (d < 0)
        rc = fail("creating the dataset failed (see the HDF5 error stack above)");
    else if (H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        rc = fail("writing the dataset failed (see the HDF5 error stack above)");
    if (d >= 0 && H5Dclose(d) < 0) rc = fail("closing the dataset failed");
    H5Sclose(space);
    if (H5Fclose(f) < 0) rc = fail("closing the file failed");
    return rc;
}

static int parse_bound_kind(const char *s, uint32_t *kind) {
    if (!strcmp(s, "abs")) *kind = FACTZ_BOUND_ABS;
    else if (!strcmp(s, "rel")) *kind = FACTZ_BOUND_REL;
    else return -1;
    return 0;
}

static int write_field(char **a) {
    size_t ny = strtoull(a[3], NULL, 10), nx = strtoull(a[4], NULL, 10);
    hsize_t cy = strtoull(a[6], NULL, 10), cx = strtoull(a[7], NULL, 10);
    int aos = !strcmp(a[5], "aos");
    if (!aos && strcmp(a[5], "soa")) return fail("layout must be soa or aos");
    factz_field_config cfg = {.struct_size = sizeof cfg};
    factz_field_config_default(&cfg);
    if (!strcmp(a[8], "b")) cfg.mode = FACTZ_MODE_BLOCKWISE;
    else if (!strcmp(a[8], "s")) cfg.mode = FACTZ_MODE_SPECULATIVE;
    else return fail("mode must be b or s");
    if (parse_bound_kind(a[9], &cfg.bound_kind)) return fail("bound kind must be abs or rel");
    cfg.bound = strtod(a[10], NULL);

    float *data = read_raw(a[2], 2 * ny * nx);
    if (!data) return fail("cannot read NY*NX*2 floats from the raw file");
    hsize_t dims[3], chunk[3];
    if (aos) {
        dims[0] = ny, dims[1] = nx, dims[2] = 2;
        chunk[0] = cy, chunk[1] = cx, chunk[2] = 2;
    } else {
        dims[0] = 2, dims[1] = ny, dims[2] = nx;
        chunk[0] = 2, chunk[1] = cy, chunk[2] = cx;
    }
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rc;
    if (H5Pset_chunk(dcpl, 3, chunk) < 0 || factz_h5_set_field2d(dcpl, &cfg) < 0)
        rc = fail("setting up the filter failed (see the HDF5 error stack above)");
    else
        rc = write_dataset(a[0], a[1], 3, dims, dcpl, data);
    H5Pclose(dcpl);
    free(data);
    return rc;
}

static int write_particles(char **a) {
    size_t n = strtoull(a[3], NULL, 10);
    hsize_t cn = strtoull(a[4], NULL, 10);
    factz_particles_config cfg = {.struct_size = sizeof cfg};
    factz_particles_config_default(&cfg);
    if (parse_bound_kind(a[5], &cfg.bound_kind)) return fail("bound kind must be abs or rel");
    cfg.bound = strtod(a[6], NULL);
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = strtod(a[7], NULL);
    cfg.box_side = strtod(a[8], NULL);

    float *data = read_raw(a[2], 3 * n);
    if (!data) return fail("cannot read N*3 floats from the raw file");
    hsize_t dims[2] = {n, 3}, chunk[2] = {cn, 3};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rc;
    if (H5Pset_chunk(dcpl, 2, chunk) < 0 || factz_h5_set_particles(dcpl, &cfg) < 0)
        rc = fail("setting up the filter failed (see the HDF5 error stack above)");
    else
        rc = write_dataset(a[0], a[1], 2, dims, dcpl, data);
    H5Pclose(dcpl);
    free(data);
    return rc;
}

static int read_dataset(char **a) {
    hid_t f = H5Fopen(a[0], H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return fail("cannot open the file");
    hid_t d = H5Dopen2(f, a[1], H5P_DEFAULT);
    int rc = 0;
    if (d < 0) {
        H5Fclose(f);
        return fail("cannot open the dataset");
    }
    hid_t space = H5Dget_space(d);
    hssize_t count = H5Sget_simple_extent_npoints(space);
    float *data = count > 0 ? malloc((size_t)count * sizeof *data) : NULL;
    if (!data)
        rc = fail("empty dataset or out of memory");
    else if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        rc = fail("reading the dataset failed (see the HDF5 error stack above)");
    else {
        FILE *out = fopen(a[2], "wb");
        if (!out || fwrite(data, sizeof *data, (size_t)count, out) != (size_t)count)
            rc = fail(strerror(errno));
        if (out && fclose(out)) rc = fail("closing the output failed");
    }
    free(data);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    return rc;
}

/* "2x64x64" -> dims; returns the rank, or -1. */
static int parse_dims(const char *s, hsize_t *dims) {
    int rank = 0;
    while (*s && rank < 8) {
        char *end;
        dims[rank++] = strtoull(s, &end, 10);
        if (end == s) return -1;
        s = *end == 'x' ? end + 1 : end;
    }
    return *s ? -1 : rank;
}

static int create(char **a) {
    hsize_t dims[8], chunk[8];
    int rank = parse_dims(a[2], dims);
    if (rank < 1 || parse_dims(a[3], chunk) != rank) return fail("DIMS and CHUNK: like 2x64x64");
    hid_t type = !strcmp(a[4], "f32")     ? H5T_IEEE_F32LE
                 : !strcmp(a[4], "f32be") ? H5T_IEEE_F32BE
                 : !strcmp(a[4], "f64")   ? H5T_IEEE_F64LE
                 : !strcmp(a[4], "i32")   ? H5T_STD_I32LE
                                          : -1;
    if (type < 0) return fail("TYPE: f32, f32be, f64 or i32");
    unsigned cd[64];
    size_t ncd = 0;
    for (const char *p = a[5]; strcmp(a[5], "-") && *p && ncd < 64;) {
        char *end;
        cd[ncd++] = (unsigned)strtoul(p, &end, 10);
        if (end == p) return fail("CD: comma-separated unsigned words, or -");
        p = *end == ',' ? end + 1 : end;
    }
    size_t count = 1;
    for (int k = 0; k < rank; k++) count *= dims[k];
    float *data = malloc(count * sizeof *data);
    if (!data) return fail("out of memory");
    for (size_t k = 0; k < count; k++) data[k] = (float)(k % 97) * 0.01f;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rc = 1;
    if (H5Pset_chunk(dcpl, rank, chunk) < 0 ||
        H5Pset_filter(dcpl, FACTZ_H5_FILTER_ID, H5Z_FLAG_MANDATORY, ncd, cd) < 0) {
        fail("setting up the filter failed (see the HDF5 error stack above)");
    } else {
        hid_t f = open_or_create(a[0]);
        hid_t space = H5Screate_simple(rank, dims, NULL);
        hid_t d = f < 0 ? -1 : H5Dcreate2(f, a[1], type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (d < 0)
            fail("creating the dataset failed (see the HDF5 error stack above)");
        else if (H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
            fail("writing the dataset failed (see the HDF5 error stack above)");
        else
            rc = 0;
        if (d >= 0) H5Dclose(d);
        H5Sclose(space);
        if (f >= 0) H5Fclose(f);
    }
    H5Pclose(dcpl);
    free(data);
    return rc;
}

int main(int argc, char **argv) {
    int at = 1;
    if (at < argc && !strcmp(argv[at], "--register")) {
        if (factz_h5_register() < 0) return fail("factz_h5_register failed");
        at++;
    }
    if (at >= argc) return fail("usage: h5tool [--register] write-field|write-particles|read ...");
    const char *cmd = argv[at++];
    int rest = argc - at;
    if (!strcmp(cmd, "write-field") && rest == 11) return write_field(argv + at);
    if (!strcmp(cmd, "write-particles") && rest == 9) return write_particles(argv + at);
    if (!strcmp(cmd, "read") && rest == 3) return read_dataset(argv + at);
    if (!strcmp(cmd, "create") && rest == 6) return create(argv + at);
    return fail("usage: h5tool [--register] write-field FILE DSET RAW NY NX soa|aos CY CX b|s "
                "abs|rel BOUND | write-particles FILE DSET RAW N CN abs|rel BOUND B BOX | "
                "read FILE DSET OUT | create FILE DSET DIMS CHUNK TYPE CD");
}
