/*
 * The HDF5 functions the filter calls, as a table of pointers, so that the
 * same filter code runs inside the plugin (bound at run time from whichever
 * libhdf5 loaded it, 1.10 to 2.x) and inside libfactz_h5 (bound directly).
 * Types are spelled out here, not taken from hdf5.h: the plugin builds
 * without HDF5 headers and links no libhdf5. They match HDF5 >= 1.10
 * (hid_t is 64-bit since 1.10).
 */
#ifndef FACTZ_H5_BINDING_H
#define FACTZ_H5_BINDING_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

typedef int64_t fz_hid;
typedef int fz_herr;
typedef int fz_htri;
typedef unsigned long long fz_hsize;

/* H5T_class_t / H5T_order_t values (stable since 1.0). */
#define FZ_H5T_FLOAT 1
#define FZ_H5T_ORDER_LE 0
/* H5D_fill_value_t: H5D_FILL_VALUE_DEFAULT. */
#define FZ_H5D_FILL_VALUE_DEFAULT 1
#define FZ_H5Z_FLAG_REVERSE 0x0100u

typedef struct fz_h5_api {
    int (*Tget_class)(fz_hid);
    size_t (*Tget_size)(fz_hid);
    int (*Tget_order)(fz_hid);
    int (*Sget_simple_extent_ndims)(fz_hid);
    int (*Sget_simple_extent_dims)(fz_hid, fz_hsize *, fz_hsize *);
    int (*Pget_chunk)(fz_hid, int, fz_hsize *);
    fz_herr (*Pget_filter_by_id2)(fz_hid, int, unsigned *, size_t *, unsigned *, size_t,
                                  char *, unsigned *);
    fz_herr (*Pmodify_filter)(fz_hid, int, unsigned, size_t, const unsigned *);
    fz_herr (*Pfill_value_defined)(fz_hid, int *);
    fz_herr (*Pset_fill_value)(fz_hid, fz_hid, const void *);
    void *(*allocate_memory)(size_t, bool); /* hbool_t is C99 bool since 1.10 */
    fz_herr (*free_memory)(void *);
    /* Error reporting; any of these may be missing (then only the return
     * value says the call failed). */
    fz_herr (*Epush2)(fz_hid, const char *, const char *, unsigned, fz_hid, fz_hid, fz_hid,
                      const char *, ...);
    const fz_hid *err_cls;   /* H5E_ERR_CLS_g */
    const fz_hid *maj_pline; /* H5E_PLINE_g */
    const fz_hid *min_cantinit; /* H5E_CANTINIT_g */
    const fz_hid *min_cantfilter; /* H5E_CANTFILTER_g */
    const fz_hid *native_float; /* H5T_NATIVE_FLOAT_g */
} fz_h5_api;

/* The filter callbacks, over a bound table (filter.c). */
fz_htri fz_can_apply(const fz_h5_api *h5, fz_hid dcpl, fz_hid type, fz_hid space);
fz_herr fz_set_local(const fz_h5_api *h5, fz_hid dcpl, fz_hid type, fz_hid space);
size_t fz_filter(const fz_h5_api *h5, unsigned flags, size_t cd_nelmts,
                 const unsigned cd_values[], size_t nbytes, size_t *buf_size, void **buf);

/* HDF5's H5Z_class2_t, spelled out (unchanged from 1.8 to 2.0). */
typedef struct fz_h5z_class2 {
    int version; /* H5Z_CLASS_T_VERS = 1 */
    int id;
    unsigned encoder_present;
    unsigned decoder_present;
    const char *name;
    fz_htri (*can_apply)(fz_hid, fz_hid, fz_hid);
    fz_herr (*set_local)(fz_hid, fz_hid, fz_hid);
    size_t (*filter)(unsigned, size_t, const unsigned[], size_t, size_t *, void **);
} fz_h5z_class2;

#define FZ_FILTER_NAME "factz: lossy compression keeping critical points and FoF links"

#endif
