/*
 * factz_particles_compress_mpi from a C MPI program (mpirun -np N):
 *
 *   particles_mpi c|f|bad RAW.f32 N B BOX XI OUT.f32
 *
 * Each rank takes slab [rank N / size, (rank + 1) N / size) of RAW (sorted by
 * the caller), compresses it collectively (c: MPI_Comm; f: the Fortran handle;
 * bad: the last rank passes a NULL xyz and every rank must return an error),
 * decodes its own stream, and rank 0 gathers the decoded union into OUT for the
 * test's oracle.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "factz_mpi.h"

static int die(const char *what) {
    fprintf(stderr, "particles_mpi: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 8) return die("usage: c|f|bad|auto|cuda RAW.f32 N B BOX XI OUT.f32");
    const char *how = argv[1];
    size_t n = strtoull(argv[3], NULL, 10);
    float *all = malloc(3 * n * sizeof *all + 1);
    FILE *in = fopen(argv[2], "rb");
    if (!all || !in || fread(all, sizeof *all, 3 * n, in) != 3 * n) return die("reading RAW");
    fclose(in);
    size_t lo = (size_t)rank * n / (size_t)size, hi = (size_t)(rank + 1) * n / (size_t)size;
    size_t mine = hi - lo;

    factz_particles_config cfg = {.struct_size = sizeof cfg};
    factz_particles_config_default(&cfg);
    cfg.bound_kind = FACTZ_BOUND_ABS;
    cfg.bound = strtod(argv[6], NULL);
    cfg.linking_kind = FACTZ_LINK_LENGTH;
    cfg.linking = strtod(argv[4], NULL);
    cfg.box_side = strtod(argv[5], NULL);
    size_t cap = 0, len = 0;
    if (factz_particles_max_compressed_size(mine, &cap) != FACTZ_OK) return die("max size");
    uint8_t *stream = malloc(cap);
    const float *xyz = all + 3 * lo;
    enum factz_status st;
    if (!strcmp(how, "f"))
        st = factz_particles_compress_mpi_f(MPI_Comm_c2f(MPI_COMM_WORLD), xyz, mine, &cfg, stream,
                                            cap, &len);
    else if (!strcmp(how, "bad"))
        st = factz_particles_compress_mpi(MPI_COMM_WORLD, rank == size - 1 ? NULL : xyz,
                                          rank == size - 1 ? 5 : mine, &cfg, stream, cap, &len);
    else if (!strcmp(how, "auto") || !strcmp(how, "cuda")) {
        /* The backend choice: AUTO runs wherever it can (the streams are the
         * CPU's); CUDA without a GPU must fail on every rank, as
         * FACTZ_UNSUPPORTED where the GPU is missing, and then the CPU runs. */
        cfg.backend = !strcmp(how, "auto") ? FACTZ_BACKEND_AUTO : FACTZ_BACKEND_CUDA;
        st = factz_particles_compress_mpi(MPI_COMM_WORLD, xyz, mine, &cfg, stream, cap, &len);
        int failed = st != FACTZ_OK, any = 0, all = 0;
        MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (any && (!all || !strcmp(how, "auto"))) return die("the backend choice failed on some rank");
        if (any) {
            if (st != FACTZ_UNSUPPORTED) fprintf(stderr, "rank %d: %s\n", rank, factz_last_error());
            int unsupported = st == FACTZ_UNSUPPORTED, some = 0;
            MPI_Allreduce(&unsupported, &some, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (!some) return die("FACTZ_BACKEND_CUDA failed, but no rank said FACTZ_UNSUPPORTED");
            if (rank == 0) printf("cuda: unsupported here (%s); ", factz_last_error());
            cfg.backend = FACTZ_BACKEND_CPU;
            st = factz_particles_compress_mpi(MPI_COMM_WORLD, xyz, mine, &cfg, stream, cap, &len);
        }
    } else
        st = factz_particles_compress_mpi(MPI_COMM_WORLD, xyz, mine, &cfg, stream, cap, &len);

    if (!strcmp(how, "bad")) {
        int failed = st != FACTZ_OK, all_failed = 0;
        MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (rank == 0) printf("every rank returned an error: %s (%s)\n", all_failed ? "yes" : "NO",
                              factz_last_error());
        MPI_Finalize();
        return all_failed ? 0 : 1;
    }
    if (st != FACTZ_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, factz_last_error());
        return die("factz_particles_compress_mpi failed");
    }
    float *dec = malloc(3 * mine * sizeof *dec + 1);
    if (factz_particles_decompress(stream, len, dec, mine) != FACTZ_OK) return die("decompress");

    int count = (int)(3 * mine), *counts = NULL, *displs = NULL;
    float *union_ = NULL;
    if (rank == 0) {
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        union_ = malloc(3 * n * sizeof *union_ + 1);
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0, d = 0; r < size; d += counts[r], r++) displs[r] = d;
    MPI_Gatherv(dec, count, MPI_FLOAT, union_, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *out = fopen(argv[7], "wb");
        if (!out || fwrite(union_, sizeof *union_, 3 * n, out) != 3 * n || fclose(out))
            return die("writing OUT");
        printf("rank 0: %zu of %zu particles, stream %zu bytes\n", mine, n, len);
    }
    free(all), free(stream), free(dec), free(counts), free(displs), free(union_);
    MPI_Finalize();
    return 0;
}
