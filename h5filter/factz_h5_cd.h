/*
 * factz HDF5 filter: the filter id and the cd_values layout (the table is in
 * factz_h5.h and h5filter/README.md). Needs no HDF5 header.
 */
#ifndef FACTZ_H5_CD_H
#define FACTZ_H5_CD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The filter id: from HDF5's range for unregistered filters (256..511), until
 * The HDF Group registers one for factz. Not 305 or 307: PyTables and
 * hdf5plugin register LZO and BZIP2 there, and one process holds one filter
 * per id. */
#define FACTZ_H5_FILTER_ID 459
#define FACTZ_H5_CD_VERSION 1
#define FACTZ_H5_USER_NELMTS 15
#define FACTZ_H5_NELMTS 20 /* HDF5's tools print at most 20 */

#define FACTZ_H5_KIND_AUTO 0
#define FACTZ_H5_KIND_FIELD2D 1
#define FACTZ_H5_KIND_PARTICLES 2

#define FACTZ_H5_CHUNK_RULE_DEFAULT 0 /* = on */
#define FACTZ_H5_CHUNK_RULE_ON 1
#define FACTZ_H5_CHUNK_RULE_OFF 2

/* Word indices. */
#define FACTZ_H5_CD_VERSION_WORD 0
#define FACTZ_H5_CD_KIND 1
#define FACTZ_H5_CD_MODE 2
#define FACTZ_H5_CD_BOUND_KIND 3
#define FACTZ_H5_CD_BOUND 4
#define FACTZ_H5_CD_CODER 6
#define FACTZ_H5_CD_ZSTD 7
#define FACTZ_H5_CD_FLAGS 8
#define FACTZ_H5_CD_LINK_KIND 9
#define FACTZ_H5_CD_LINK 10
#define FACTZ_H5_CD_BOX 12
#define FACTZ_H5_CD_CHUNK_RULE 14
#define FACTZ_H5_CD_DTYPE 15
#define FACTZ_H5_CD_LAYOUT 16
#define FACTZ_H5_CD_CHUNK 17

#define FACTZ_H5_FLAG_VERIFY 1u

#define FACTZ_H5_DTYPE_F32LE 1
#define FACTZ_H5_DTYPE_F64LE 2 /* vector fields in mode S; particles, built-in base */
#define FACTZ_H5_LAYOUT_FIELD_SOA 0
#define FACTZ_H5_LAYOUT_FIELD_AOS 1
#define FACTZ_H5_LAYOUT_PARTICLES 2

/* Stores a double in cd[at] and cd[at + 1]: the low 32 bits of its IEEE-754
 * bit pattern first (the one encoding of doubles in cd_values). */
static inline void factz_h5_cd_put_double(unsigned *cd, size_t at, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    cd[at] = (unsigned)(bits & 0xffffffffu);
    cd[at + 1] = (unsigned)(bits >> 32);
}

#endif /* FACTZ_H5_CD_H */
