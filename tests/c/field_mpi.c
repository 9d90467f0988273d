/*
 * factz_field_compress_mpi(_at) from a C MPI program (mpirun -np N):
 *
 *   field_mpi c|f|bad|at|at-f|at-bad|auto|cuda|at-cuda RAW.f32 NY NX REL OUT.f32
 *
 * RAW is a field (u then v, row-major NY x NX). Each rank takes rows
 * [rank NY / size, (rank + 1) NY / size), compresses them collectively with a
 * relative bound REL (c: MPI_Comm; f: the Fortran handle; bad: the last rank
 * passes a NULL v and every rank must return an error; at*: the same through
 * factz_field_compress_mpi_at, which is told where the rows start and
 * exchanges the ring around each block; auto, cuda, at-cuda: config->backend
 * FACTZ_BACKEND_AUTO or _CUDA), decodes its own stream, and rank 0 gathers
 * the decoded field into OUT (u then v) for the oracle.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "factz_mpi.h"

static int die(const char *what) {
    fprintf(stderr, "field_mpi: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* One collective compression as `how` names it (c, f, bad, at, at-f, at-bad;
 * the backend variants call the C entry points): bad* give the last rank a
 * NULL v. */
static enum factz_status compress(const char *how, const factz_field_config *cfg, const float *u,
                                  const float *v, size_t rows, size_t nx, size_t lo, int last,
                                  uint8_t *stream, size_t cap, size_t *len) {
    int at = !strncmp(how, "at", 2), fortran = !strcmp(how, "f") || !strcmp(how, "at-f");
    if (strstr(how, "bad") && last) v = NULL;
    MPI_Fint fcomm = MPI_Comm_c2f(MPI_COMM_WORLD);
    if (at && fortran)
        return factz_field_compress_mpi_at_f(fcomm, cfg, u, v, rows, nx, lo, 0, stream, cap, len);
    if (at) return factz_field_compress_mpi_at(MPI_COMM_WORLD, cfg, u, v, rows, nx, lo, 0, stream, cap, len);
    if (fortran) return factz_field_compress_mpi_f(fcomm, cfg, u, v, rows, nx, stream, cap, len);
    return factz_field_compress_mpi(MPI_COMM_WORLD, cfg, u, v, rows, nx, stream, cap, len);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 7) return die("usage: c|f|bad|at|at-f|at-bad|auto|cuda|at-cuda RAW.f32 NY NX REL OUT.f32");
    const char *how = argv[1];
    size_t ny = strtoull(argv[3], NULL, 10), nx = strtoull(argv[4], NULL, 10), n = ny * nx;
    float *all = malloc(2 * n * sizeof *all);
    FILE *in = fopen(argv[2], "rb");
    if (!all || !in || fread(all, sizeof *all, 2 * n, in) != 2 * n) return die("reading RAW");
    fclose(in);
    size_t lo = (size_t)rank * ny / (size_t)size, hi = (size_t)(rank + 1) * ny / (size_t)size;
    size_t rows = hi - lo, m = rows * nx;
    const float *u = all + lo * nx, *v = all + n + lo * nx;

    factz_field_config cfg = {.struct_size = sizeof cfg};
    factz_field_config_default(&cfg);
    cfg.bound_kind = FACTZ_BOUND_REL;
    cfg.bound = strtod(argv[5], NULL);
    size_t cap = 0, len = 0;
    if (factz_field_max_compressed_size(rows, nx, &cap) != FACTZ_OK) return die("max size");
    uint8_t *stream = malloc(cap);
    int bad = strstr(how, "bad") != NULL, last = rank == size - 1;
    int backend = !strcmp(how, "auto") || !strcmp(how, "cuda") || !strcmp(how, "at-cuda");
    if (backend) cfg.backend = !strcmp(how, "auto") ? FACTZ_BACKEND_AUTO : FACTZ_BACKEND_CUDA;
    enum factz_status st = compress(how, &cfg, u, v, rows, nx, lo, last, stream, cap, &len);
    if (backend) {
        /* AUTO runs wherever it can (the streams are the CPU's). CUDA fails
         * on every rank or on none, as FACTZ_UNSUPPORTED where the GPU is
         * missing; the ring path (_at) has no GPU kernels, so there CUDA is
         * FACTZ_UNSUPPORTED on every rank even with a GPU. Then the CPU runs. */
        int failed = st != FACTZ_OK, any = 0, all_ = 0;
        MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&failed, &all_, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (any && (!all_ || !strcmp(how, "auto"))) return die("the backend choice failed on some rank");
        if (!strcmp(how, "at-cuda") && (!any || st != FACTZ_UNSUPPORTED))
            return die("the ring path took FACTZ_BACKEND_CUDA");
        if (any) {
            if (st != FACTZ_UNSUPPORTED) fprintf(stderr, "rank %d: %s\n", rank, factz_last_error());
            int unsupported = st == FACTZ_UNSUPPORTED, some = 0;
            MPI_Allreduce(&unsupported, &some, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (!some) return die("FACTZ_BACKEND_CUDA failed, but no rank said FACTZ_UNSUPPORTED");
            if (rank == 0) printf("%s: unsupported (%s); ", how, factz_last_error());
            cfg.backend = FACTZ_BACKEND_CPU;
            st = compress(how, &cfg, u, v, rows, nx, lo, last, stream, cap, &len);
        }
    }

    if (bad) {
        int failed = st != FACTZ_OK, all_failed = 0;
        MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (rank == 0) printf("every rank returned an error: %s (%s)\n", all_failed ? "yes" : "NO",
                              factz_last_error());
        MPI_Finalize();
        return all_failed ? 0 : 1;
    }
    if (st != FACTZ_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, factz_last_error());
        return die("factz_field_compress_mpi failed");
    }
    float *du = malloc(m * sizeof *du), *dv = malloc(m * sizeof *dv);
    if (factz_field_decompress(stream, len, du, dv, rows, nx) != FACTZ_OK) return die("decompress");

    int count = (int)m, *counts = NULL, *displs = NULL;
    float *out = NULL;
    if (rank == 0) {
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        out = malloc(2 * n * sizeof *out);
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0, d = 0; r < size; d += counts[r], r++) displs[r] = d;
    MPI_Gatherv(du, count, MPI_FLOAT, out, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
    MPI_Gatherv(dv, count, MPI_FLOAT, out ? out + n : NULL, counts, displs, MPI_FLOAT, 0,
                MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen(argv[6], "wb");
        if (!f || fwrite(out, sizeof *out, 2 * n, f) != 2 * n || fclose(f)) return die("writing OUT");
        printf("rank 0: rows %zu of %zu, stream %zu bytes\n", rows, ny, len);
    }
    free(all), free(stream), free(du), free(dv), free(counts), free(displs), free(out);
    MPI_Finalize();
    return 0;
}
