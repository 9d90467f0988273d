/*
 * The HDF5 plugin entry points. The plugin links no libhdf5: at the first
 * H5PLget_plugin_info call it finds the library that is calling (dladdr on
 * the return address), reopens it without loading anything new
 * (RTLD_NOLOAD) and looks up the functions the filter needs. One plugin
 * thus serves Debian's HDF5 1.10 and h5py's private HDF5 2.x, which is
 * loaded RTLD_LOCAL where a plain global lookup would not see it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "binding.h"
#include "factz_h5_cd.h"

#define EXPORT __attribute__((visibility("default")))

static fz_h5_api api;
static int api_ready;
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;

#define BIND(field, name)                                                                          \
    do {                                                                                           \
        *(void **)(&a.field) = dlsym(lib, name);                                                   \
    } while (0)

/* 1 when every required function was found in `lib`. */
static int bind_from(void *lib) {
    fz_h5_api a;
    memset(&a, 0, sizeof a);
    BIND(Tget_class, "H5Tget_class");
    BIND(Tget_size, "H5Tget_size");
    BIND(Tget_order, "H5Tget_order");
    BIND(Sget_simple_extent_ndims, "H5Sget_simple_extent_ndims");
    BIND(Sget_simple_extent_dims, "H5Sget_simple_extent_dims");
    BIND(Pget_chunk, "H5Pget_chunk");
    BIND(Pget_filter_by_id2, "H5Pget_filter_by_id2");
    BIND(Pmodify_filter, "H5Pmodify_filter");
    BIND(Pfill_value_defined, "H5Pfill_value_defined");
    BIND(Pset_fill_value, "H5Pset_fill_value");
    BIND(allocate_memory, "H5allocate_memory");
    BIND(free_memory, "H5free_memory");
    BIND(Epush2, "H5Epush2");
    BIND(err_cls, "H5E_ERR_CLS_g");
    BIND(maj_pline, "H5E_PLINE_g");
    BIND(min_cantinit, "H5E_CANTINIT_g");
    BIND(min_cantfilter, "H5E_CANTFILTER_g");
    if (!a.Tget_class || !a.Tget_size || !a.Tget_order || !a.Sget_simple_extent_ndims ||
        !a.Sget_simple_extent_dims || !a.Pget_chunk || !a.Pget_filter_by_id2 ||
        !a.Pmodify_filter || !a.Pfill_value_defined || !a.Pset_fill_value)
        return 0;
    /* The buffer HDF5 hands over must be freed by HDF5's allocator: both or neither. */
    if (!a.allocate_memory || !a.free_memory) a.allocate_memory = NULL, a.free_memory = NULL;
    api = a;
    return 1;
}

static void bind_hdf5(void *caller) {
    pthread_mutex_lock(&bind_lock);
    if (!api_ready) {
        Dl_info info;
        void *lib = NULL;
        if (caller && dladdr(caller, &info) && info.dli_fname)
            lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (lib && bind_from(lib))
            api_ready = 1;
        else if (bind_from(RTLD_DEFAULT))
            api_ready = 1;
        else
            fprintf(stderr, "factz HDF5 filter: cannot find the HDF5 library that loaded the "
                            "plugin (%s); the filter stays unavailable. A program linked "
                            "statically with HDF5 (h5cc/h5pcc default) must export its "
                            "symbols: link it with -rdynamic, or with -shlib\n",
                    dlerror() ? "dlsym failed" : "no symbols");
    }
    pthread_mutex_unlock(&bind_lock);
}

static fz_htri can_apply(fz_hid dcpl, fz_hid type, fz_hid space) {
    return fz_can_apply(&api, dcpl, type, space);
}

static fz_herr set_local(fz_hid dcpl, fz_hid type, fz_hid space) {
    return fz_set_local(&api, dcpl, type, space);
}

static size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t *buf_size, void **buf) {
    return fz_filter(&api, flags, cd_nelmts, cd_values, nbytes, buf_size, buf);
}

static const fz_h5z_class2 factz_class = {
    1, FACTZ_H5_FILTER_ID, 1, 1, FZ_FILTER_NAME, can_apply, set_local, filter,
};

/* H5PL_TYPE_FILTER */
EXPORT int H5PLget_plugin_type(void) { return 0; }

EXPORT const void *H5PLget_plugin_info(void) {
    bind_hdf5(__builtin_extract_return_addr(__builtin_return_address(0)));
    return api_ready ? &factz_class : NULL;
}
