/*
 * Parallel HDF5 through the factz filter: every rank writes its share of one
 * chunked, factz-filtered dataset in a single collective H5Dwrite, the way an
 * MPI simulation writes a snapshot (Debian's libhdf5-openmpi, built with
 * h5pcc). Then rank 0 reads the whole dataset back and writes it raw.
 *
 *   mpirun -np N h5_parallel field     FILE RAW.f32 NY NX CY CX REL      OUT.f32
 *   mpirun -np N h5_parallel particles FILE RAW.f32 N CN REL B BOX       OUT.f32
 *
 * Fields are (2, NY, NX) float32 (u then v) in (2, CY, CX) chunks, rows split
 * evenly over the ranks (not on chunk borders: HDF5 gathers a chunk several
 * ranks share onto one before filtering it). Particles are (N, 3) in (CN, 3)
 * chunks, split evenly. The filter is configured with plain H5Pset_filter and
 * the cd_values layout of factz_h5_cd.h (libfactz_h5 links serial HDF5); the
 * plugin comes from HDF5_PLUGIN_PATH.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "factz.h"
#include "factz_h5_cd.h"

static int fail(int rank, const char *what) {
    fprintf(stderr, "h5_parallel: rank %d: %s\n", rank, what);
    return 1;
}

static float *read_raw(const char *path, size_t count) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *data = malloc(count * sizeof *data + 1);
    size_t got = data ? fread(data, sizeof *data, count, f) : 0;
    fclose(f);
    if (got != count) {
        free(data);
        return NULL;
    }
    return data;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int field = argc == 10 && !strcmp(argv[1], "field");
    int parts = argc == 10 && !strcmp(argv[1], "particles");
    if (!field && !parts) {
        if (rank == 0) fprintf(stderr, "usage: see tests/c/h5_parallel.c\n");
        MPI_Finalize();
        return 2;
    }
    const char *file = argv[2], *raw = argv[3], *out = argv[9];
    unsigned cd[FACTZ_H5_USER_NELMTS] = {0};
    cd[FACTZ_H5_CD_VERSION_WORD] = FACTZ_H5_CD_VERSION;
    cd[FACTZ_H5_CD_BOUND_KIND] = FACTZ_BOUND_REL;
    int ndims = field ? 3 : 2;
    hsize_t dims[3], chunk[3], start[3] = {0, 0, 0}, count[3];
    if (field) {
        hsize_t ny = strtoull(argv[4], NULL, 10), nx = strtoull(argv[5], NULL, 10);
        hsize_t cy = strtoull(argv[6], NULL, 10), cx = strtoull(argv[7], NULL, 10);
        dims[0] = 2, dims[1] = ny, dims[2] = nx;
        chunk[0] = 2, chunk[1] = cy, chunk[2] = cx;
        start[1] = ny * rank / size;
        count[0] = 2, count[1] = ny * (rank + 1) / size - start[1], count[2] = nx;
        cd[FACTZ_H5_CD_KIND] = FACTZ_H5_KIND_FIELD2D;
        factz_h5_cd_put_double(cd, FACTZ_H5_CD_BOUND, atof(argv[8]));
    } else {
        hsize_t n = strtoull(argv[4], NULL, 10), cn = strtoull(argv[5], NULL, 10);
        dims[0] = n, dims[1] = 3;
        chunk[0] = cn, chunk[1] = 3;
        start[0] = n * rank / size;
        count[0] = n * (rank + 1) / size - start[0], count[1] = 3;
        cd[FACTZ_H5_CD_KIND] = FACTZ_H5_KIND_PARTICLES;
        factz_h5_cd_put_double(cd, FACTZ_H5_CD_BOUND, atof(argv[6]));
        cd[FACTZ_H5_CD_LINK_KIND] = FACTZ_LINK_LENGTH;
        factz_h5_cd_put_double(cd, FACTZ_H5_CD_LINK, atof(argv[7]));
        factz_h5_cd_put_double(cd, FACTZ_H5_CD_BOX, atof(argv[8]));
    }
    size_t total = 1;
    for (int k = 0; k < ndims; k++) total *= dims[k];
    float *all = read_raw(raw, total);
    if (!all) {
        fail(rank, "cannot read the raw input");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* This rank's share, contiguous in memory. */
    size_t mine = count[0] * count[1] * (field ? count[2] : 1);
    float *buf = malloc(mine * sizeof *buf + 1);
    if (field) {
        size_t plane = count[1] * count[2];
        for (int c = 0; c < 2; c++)
            memcpy(buf + c * plane, all + c * dims[1] * dims[2] + start[1] * dims[2],
                   plane * sizeof *buf);
    } else {
        memcpy(buf, all + start[0] * 3, mine * sizeof *buf);
    }

    int rc = 0;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t space = H5Screate_simple(ndims, dims, NULL);
    hid_t d = -1;
    if (f < 0 || H5Pset_chunk(dcpl, ndims, chunk) < 0 ||
        H5Pset_filter(dcpl, FACTZ_H5_FILTER_ID, H5Z_FLAG_MANDATORY, FACTZ_H5_USER_NELMTS, cd) < 0 ||
        (d = H5Dcreate2(f, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0) {
        rc = fail(rank, "creating the filtered dataset failed (HDF5 error stack above)");
    } else {
        hid_t mem = H5Screate_simple(ndims, count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
        if (H5Dwrite(d, H5T_NATIVE_FLOAT, mem, space, dxpl, buf) < 0)
            rc = fail(rank, "the collective write failed (HDF5 error stack above)");
        H5Pclose(dxpl);
        H5Sclose(mem);
    }
    if (d >= 0) H5Dclose(d);
    H5Sclose(space);
    H5Pclose(dcpl);
    if (f >= 0) H5Fclose(f);
    H5Pclose(fapl);
    int any = 0;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    if (!any && rank == 0) {
        /* Read back by one process, with the default (serial) driver. */
        float *back = malloc(total * sizeof *back + 1);
        hid_t rf = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t rd = rf < 0 ? -1 : H5Dopen2(rf, "data", H5P_DEFAULT);
        if (rd < 0 || H5Dread(rd, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) < 0) {
            any = fail(rank, "reading the dataset back failed");
        } else {
            FILE *o = fopen(out, "wb");
            if (!o || fwrite(back, sizeof *back, total, o) != total) any = fail(rank, "cannot write OUT");
            if (o) fclose(o);
            hsize_t stored = H5Dget_storage_size(rd);
            printf("%d ranks wrote %zu values collectively; stored %llu bytes (ratio %.2f)\n", size,
                   total, (unsigned long long)stored,
                   stored ? (double)(total * sizeof *back) / (double)stored : 0.0);
        }
        if (rd >= 0) H5Dclose(rd);
        if (rf >= 0) H5Fclose(rf);
        free(back);
    }
    free(buf);
    free(all);
    MPI_Bcast(&any, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
