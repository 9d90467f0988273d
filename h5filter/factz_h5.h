/*
 * factz HDF5 filter: parameter helpers and static registration.
 *
 * The filter itself is the plugin libH5Zfactz.so (found through
 * HDF5_PLUGIN_PATH or the CMake variable factz_HDF5_PLUGIN_DIR); programs that
 * link libfactz_h5 can also register it directly with factz_h5_register().
 * Reading needs no parameters: every chunk is a self-describing factz stream.
 *
 * cd_values (version 1). Doubles are two words: low 32 bits of the IEEE-754
 * bit pattern first, then the high 32 bits. 0 in any word means "default".
 * A user passes the first FACTZ_H5_USER_NELMTS words (or fewer: the rest are
 * defaults; none at all is a safe default for vector fields, particles need
 * at least b); set_local
 * appends what it learns from the dataset (FACTZ_H5_NELMTS words in all).
 *
 * | word  | name            | values                                                        |
 * |-------|-----------------|---------------------------------------------------------------|
 * | 0     | version         | 1 (0 = 1)                                                     |
 * | 1     | kind            | 0 from the shape, 1 vector field, 2 particles                 |
 * | 2     | mode / base     | field: 1 B, 2 S (default); particles: 1 built-in (default), 2 SZ3, 3 ZFP |
 * | 3     | bound kind      | 1 absolute, 2 value-range relative (default)                  |
 * | 4, 5  | bound           | double > 0 (default 1e-3 relative)                            |
 * | 6     | coder           | 1 Huffman, 2 rANS (default)                                   |
 * | 7     | zstd level      | 0 none (default), 1..22                                       |
 * | 8     | flags           | bit 0: verify every chunk after compressing it                |
 * | 9     | linking kind    | particles: 1 length b (needed unless the chunk rule is off), 2 eta |
 * | 10,11 | linking         | particles: b, or eta (default 0.2)                            |
 * | 12,13 | periodic box    | particles: side L, 0 = open boundaries (default)              |
 * | 14    | chunk rule      | 0 or 1 on (default), 2 off: only for a dataset stored as one chunk |
 * | 15    | element type    | set_local: 1 = little-endian float32                          |
 * | 16    | layout          | set_local: 0 field (2, ny, nx), 1 field (ny, nx, 2), 2 particles (n, 3) |
 * | 17-19 | chunk dims      | set_local: the chunk's three (field) or two (particles) dims  |
 *
 * Example: h5repack -f UD=459,0,6,1,1,1,1,LO,HI (mode B, absolute bound): see
 * h5filter/README.md.
 */
#ifndef FACTZ_H5_H
#define FACTZ_H5_H

#include <hdf5.h>
#include "factz.h"
#include "factz_h5_cd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills cd_values[0..FACTZ_H5_USER_NELMTS) for a vector field from a factz
 * config (NULL = defaults: mode S, relative 1e-3, rANS). The config's flags
 * may hold FACTZ_VERIFY. The chunk rule (chunk perimeters stored exactly, so
 * the guarantee holds across chunks) is always on: HDF5 shows a filter one
 * chunk, never the dataset, so it cannot know there is only one. Returns
 * 0, or -1 with factz_last_error() unchanged for a NULL cd_values. */
int factz_h5_field2d_cd_values(const factz_field_config *cfg,
                               unsigned cd_values[FACTZ_H5_USER_NELMTS]);
/* The same for particles (NULL = defaults: built-in base, relative 1e-3,
 * open box, which the filter refuses without a linking length b:
 * set cfg->linking_kind = FACTZ_LINK_LENGTH and cfg->linking = b, computed
 * for example with factz_particles_linking_length on the whole snapshot).
 * The chunk rule is always on: particles near each chunk's bounding-box
 * faces are stored exactly, which keeps links across chunks that are
 * spatially disjoint (sort or decompose particles by space before writing). */
int factz_h5_particles_cd_values(const factz_particles_config *cfg,
                                 unsigned cd_values[FACTZ_H5_USER_NELMTS]);

/* Adds the factz filter to a dataset creation property list (chunked layout
 * needed, as for every filter): a vector field dataset, float32, shape
 * (2, ny, nx) or (ny, nx, 2). cfg NULL = defaults. Returns H5Pset_filter's
 * status (negative on failure, with an HDF5 error pushed). */
herr_t factz_h5_set_field2d(hid_t dcpl, const factz_field_config *cfg);
/* The same for a particle dataset: float32, shape (n, 3), chunks (cn, 3).
 * cfg must give the linking length (FACTZ_LINK_LENGTH), so that every chunk
 * keeps the links of the same b. */
herr_t factz_h5_set_particles(hid_t dcpl, const factz_particles_config *cfg);

/* Registers the filter with the HDF5 library this program links, so no
 * plugin path is needed. Idempotent; returns H5Zregister's status. */
herr_t factz_h5_register(void);

#ifdef __cplusplus
}
#endif
#endif /* FACTZ_H5_H */
