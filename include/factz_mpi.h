/*
 * factz over MPI: particles and vector fields (libfactz built with the cargo
 * feature "mpi"). Hand-written: these functions take MPI types, so they are not
 * in the generated factz.h. Link libfactz and your MPI library (mpicc).
 *
 * Collective: every rank of comm calls factz_particles_compress_mpi on the
 * particles it owns. The union of the ranks' decoded particles keeps every
 * friends-of-friends link of the whole set, links between ranks included:
 * ranks exchange ghost particles within b + 2 sqrt(3) xi of each other's
 * bounding boxes, and store exactly the particles of vulnerable pairs that span
 * two ranks. The bound and the linking length are resolved over all ranks. Each
 * rank's stream decodes alone (factz_particles_decompress). If any rank fails,
 * every rank returns an error; none hangs.
 *
 * cfg->backend is honoured as by the single-process calls (each rank picks its
 * own GPU, device 0 of what it sees; the streams are the same whichever runs):
 * FACTZ_BACKEND_CUDA without a usable GPU on some rank makes every rank return
 * an error (FACTZ_UNSUPPORTED where the GPU is missing); FACTZ_BACKEND_AUTO
 * falls back to the CPU rank by rank.
 * factz_field_compress_mpi_at runs on the CPU only (its border caps have no
 * GPU kernels): FACTZ_BACKEND_CUDA is FACTZ_UNSUPPORTED there.
 */
#ifndef FACTZ_MPI_H
#define FACTZ_MPI_H

#include <mpi.h>

#include "factz.h"

#ifdef __cplusplus
extern "C" {
#endif

/* As factz_particles_compress, collectively over comm (duplicated for the call). */
enum factz_status factz_particles_compress_mpi(MPI_Comm comm, const float *xyz, size_t n,
                                               const struct factz_particles_config *cfg,
                                               uint8_t *out, size_t out_capacity,
                                               size_t *out_len);

/* The same with a Fortran communicator handle (MPI_Fint, e.g. MPI_COMM_WORLD
 * from `use mpi`), for Fortran codes calling through iso_c_binding. */
enum factz_status factz_particles_compress_mpi_f(MPI_Fint comm, const float *xyz, size_t n,
                                                 const struct factz_particles_config *cfg,
                                                 uint8_t *out, size_t out_capacity,
                                                 size_t *out_len);

/* A vector field over ranks: each rank passes its block (u, v: ny * nx floats,
 * row-major) of the global grid; the whole field keeps every critical point,
 * across rank borders too. As factz_field_compress, collectively over comm. */
enum factz_status factz_field_compress_mpi(MPI_Comm comm, const struct factz_field_config *cfg,
                                           const float *u, const float *v, size_t ny, size_t nx,
                                           uint8_t *out, size_t out_capacity, size_t *out_len);

/* The same with a Fortran communicator handle. */
enum factz_status factz_field_compress_mpi_f(MPI_Fint comm, const struct factz_field_config *cfg,
                                             const float *u, const float *v, size_t ny, size_t nx,
                                             uint8_t *out, size_t out_capacity, size_t *out_len);

/* factz_field_compress_mpi for a block whose first vertex is (y0, x0) of the
 * whole grid (blocks must not overlap; overlapping blocks are an error on
 * every rank). Ranks whose blocks touch exchange the one-vertex ring around
 * each other's block, and the border is coded under the bounds of the
 * triangles crossing it instead of being stored exactly: the better ratio
 * (for 8 bands of a 1024^2 turbulence field in mode S the streams grow by
 * 23% with the chunk rule of factz_field_compress_mpi, by 4% with the ring). */
enum factz_status factz_field_compress_mpi_at(MPI_Comm comm, const struct factz_field_config *cfg,
                                              const float *u, const float *v, size_t ny,
                                              size_t nx, size_t y0, size_t x0, uint8_t *out,
                                              size_t out_capacity, size_t *out_len);

/* The same with a Fortran communicator handle. */
enum factz_status factz_field_compress_mpi_at_f(MPI_Fint comm,
                                                const struct factz_field_config *cfg,
                                                const float *u, const float *v, size_t ny,
                                                size_t nx, size_t y0, size_t x0, uint8_t *out,
                                                size_t out_capacity, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* FACTZ_MPI_H */
