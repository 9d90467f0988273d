/*
 * A C code compressing with factz through ADIOS2 without naming factz: the
 * XML configuration (factz.xml) attaches the operator to the variable.
 *
 *   c_xml_writer CONFIG.xml OUT.bp field RAW.f32 NY NX      -> io "fields", variable uv (2, NY, NX)
 *   c_xml_writer CONFIG.xml OUT.bp particles RAW.f32 N      -> io "particles", variable pos (N, 3)
 *
 * Writes one step in two blocks (two halves, as two ranks would).
 */
#include <adios2_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "c_xml_writer: %s\n", what);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 6) return fail("usage: CONFIG.xml OUT.bp field RAW NY NX | particles RAW N");
    int field = !strcmp(argv[3], "field");
    if (field ? argc != 7 : argc != 6) return fail("wrong number of arguments");
    size_t ny = strtoull(argv[5], NULL, 10), nx = field ? strtoull(argv[6], NULL, 10) : 3;
    size_t count = field ? 2 * ny * nx : 3 * ny;
    float *data = malloc(count * sizeof *data);
    FILE *in = fopen(argv[4], "rb");
    if (!data || !in || fread(data, sizeof *data, count, in) != count) return fail("reading RAW");
    fclose(in);

    adios2_adios *adios = adios2_init_config_serial(argv[1]);
    if (!adios) return fail("adios2_init_config_serial failed");
    adios2_io *io = adios2_declare_io(adios, field ? "fields" : "particles");
    size_t shape[3], start[3] = {0, 0, 0}, part[3];
    size_t ndims = field ? 3 : 2;
    if (field) {
        shape[0] = 2, shape[1] = ny, shape[2] = nx;
    } else {
        shape[0] = ny, shape[1] = 3;
    }
    memcpy(part, shape, sizeof part);
    adios2_variable *var = adios2_define_variable(io, field ? "uv" : "pos", adios2_type_float,
                                                  ndims, shape, start, part,
                                                  adios2_constant_dims_false);
    adios2_engine *engine = var ? adios2_open(io, argv[2], adios2_mode_write) : NULL;
    if (!engine) return fail("defining the variable or opening the output failed");
    adios2_step_status status;
    int rc = adios2_begin_step(engine, adios2_step_mode_append, -1.0f, &status) != adios2_error_none;
    /* Two blocks: rows [0, h) and [h, ny) of the field, or the two halves of the particles. */
    size_t h = ny / 2;
    for (int b = 0; b < 2 && !rc; b++) {
        size_t lo = b ? h : 0, len = b ? ny - h : h;
        float *block = malloc((field ? 2 * len * nx : 3 * len) * sizeof *block);
        if (!block) return fail("out of memory");
        if (field) {
            for (size_t c = 0; c < 2; c++)
                memcpy(block + c * len * nx, data + c * ny * nx + lo * nx, len * nx * sizeof(float));
            start[0] = 0, start[1] = lo, start[2] = 0;
            part[0] = 2, part[1] = len, part[2] = nx;
        } else {
            memcpy(block, data + 3 * lo, 3 * len * sizeof(float));
            start[0] = lo, start[1] = 0;
            part[0] = len, part[1] = 3;
        }
        rc = adios2_set_selection(var, ndims, start, part) != adios2_error_none ||
             adios2_put(engine, var, block, adios2_mode_sync) != adios2_error_none;
        free(block);
    }
    rc = rc || adios2_end_step(engine) != adios2_error_none;
    rc = adios2_close(engine) != adios2_error_none || rc;
    adios2_finalize(adios);
    free(data);
    return rc ? fail("writing failed (see ADIOS2's message above)") : 0;
}
