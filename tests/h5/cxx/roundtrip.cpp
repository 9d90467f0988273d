// cxx_roundtrip FILE.h5 IN.f32 NY NX CY CX OUT.f32
//
// A C++ user of the installed factz package: writes the SoA field IN.f32
// (float32, all of u then all of v, each NY x NX, x fastest) to the dataset
// /cxx_field of shape (2, NY, NX), chunks (2, CY, CX), through the factz HDF5
// filter loaded as a plugin (HDF5_PLUGIN_PATH), mode B with the absolute bound
// 1e-3 x the field's value range. Then reopens the file, reads the dataset
// back, checks it, writes it to OUT.f32 (same layout) and prints the ratio.
// Exits non-zero with a message on any failure.
#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "factz_h5.h"

namespace {

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

// Owns an HDF5 identifier and closes it with the matching H5*close.
class Handle {
public:
    Handle(hid_t id, herr_t (*close)(hid_t), const char *what) : id_(id), close_(close) {
        if (id_ < 0) fail(std::string(what) + " failed (HDF5's error stack is printed above)");
    }
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    Handle(Handle &&o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
    ~Handle() {
        if (id_ >= 0) close_(id_);
    }
    hid_t get() const { return id_; }
    // Closes now and reports a failure, which the destructor cannot: the
    // file's close is where HDF5 flushes (and so filters) cached chunks.
    void close(const char *what) {
        hid_t id = std::exchange(id_, H5I_INVALID_HID);
        if (close_(id) < 0) fail(std::string(what) + " failed");
    }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

void check(herr_t status, const char *what) {
    if (status < 0) fail(std::string(what) + " failed (HDF5's error stack is printed above)");
}

hsize_t parse_dim(const char *arg, const char *name) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(arg, &end, 10);
    if (errno || end == arg || *end || v == 0 || arg[0] == '-')
        fail(std::string(name) + " must be a positive integer, got '" + arg + "'");
    return static_cast<hsize_t>(v);
}

std::vector<float> read_raw(const char *path, size_t count) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) fail(std::string("cannot open ") + path);
    auto bytes = static_cast<size_t>(in.tellg());
    if (bytes != count * sizeof(float))
        fail(std::string(path) + " holds " + std::to_string(bytes) + " bytes; 2 x NY x NX floats are " +
             std::to_string(count * sizeof(float)));
    std::vector<float> data(count);
    in.seekg(0);
    if (!in.read(reinterpret_cast<char *>(data.data()), static_cast<std::streamsize>(bytes)))
        fail(std::string("cannot read ") + path);
    return data;
}

void write_raw(const char *path, const std::vector<float> &data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data.data()),
              static_cast<std::streamsize>(data.size() * sizeof(float)));
    out.close();
    if (!out) fail(std::string("cannot write ") + path);
}

// Non-finite values must come back bit-exact; compare their bits.
uint32_t bits(float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

int run(int argc, char **argv) {
    if (argc != 8) fail("usage: cxx_roundtrip FILE.h5 IN.f32 NY NX CY CX OUT.f32");
    const char *file = argv[1], *input = argv[2], *output = argv[7];
    const hsize_t ny = parse_dim(argv[3], "NY"), nx = parse_dim(argv[4], "NX");
    const hsize_t cy = parse_dim(argv[5], "CY"), cx = parse_dim(argv[6], "CX");
    const std::vector<float> field = read_raw(input, static_cast<size_t>(2 * ny * nx));

    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (float x : field)
        if (std::isfinite(x)) lo = std::min(lo, double(x)), hi = std::max(hi, double(x));
    const double bound = 1e-3 * (hi - lo);
    if (!(bound > 0.0)) fail("the field has no finite value range, so no relative bound");

    // The plugin, not factz_h5_register: this program checks the plugin path.
    htri_t avail = H5Zfilter_avail(FACTZ_H5_FILTER_ID);
    if (avail <= 0)
        fail("HDF5 cannot find the factz filter (id " + std::to_string(FACTZ_H5_FILTER_ID) +
             "): set HDF5_PLUGIN_PATH to the directory of libH5Zfactz.so");

    const hsize_t dims[3] = {2, ny, nx}, chunk[3] = {2, cy, cx};
    {
        factz_field_config cfg = {};
        cfg.struct_size = sizeof cfg;
        if (factz_field_config_default(&cfg) != FACTZ_OK) fail(factz_last_error());
        cfg.mode = FACTZ_MODE_BLOCKWISE;
        cfg.bound_kind = FACTZ_BOUND_ABS;
        cfg.bound = bound;
        unsigned cd[FACTZ_H5_USER_NELMTS];
        if (factz_h5_field2d_cd_values(&cfg, cd) != 0) fail("factz_h5_field2d_cd_values failed");

        Handle f(H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose, "H5Fcreate");
        Handle space(H5Screate_simple(3, dims, nullptr), H5Sclose, "H5Screate_simple");
        Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
        check(H5Pset_chunk(dcpl.get(), 3, chunk), "H5Pset_chunk");
        check(H5Pset_filter(dcpl.get(), FACTZ_H5_FILTER_ID, H5Z_FLAG_MANDATORY, FACTZ_H5_USER_NELMTS, cd),
              "H5Pset_filter");
        Handle dset(H5Dcreate2(f.get(), "/cxx_field", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                               dcpl.get(), H5P_DEFAULT),
                    H5Dclose, "H5Dcreate2 /cxx_field");
        check(H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, field.data()),
              "H5Dwrite /cxx_field");
        dset.close("closing /cxx_field");
        f.close("closing the file after writing");
    }

    std::vector<float> decoded(field.size());
    hsize_t stored = 0;
    {
        Handle f(H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "reopening the file");
        Handle dset(H5Dopen2(f.get(), "/cxx_field", H5P_DEFAULT), H5Dclose, "H5Dopen2 /cxx_field");
        Handle space(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space");
        hsize_t got[3] = {0, 0, 0};
        if (H5Sget_simple_extent_ndims(space.get()) != 3 ||
            H5Sget_simple_extent_dims(space.get(), got, nullptr) != 3 || got[0] != 2 ||
            got[1] != ny || got[2] != nx)
            fail("/cxx_field does not have the shape (2, NY, NX) it was written with");
        // The filter must really be in the pipeline, with the words set_local adds.
        Handle dcpl(H5Dget_create_plist(dset.get()), H5Pclose, "H5Dget_create_plist");
        unsigned flags = 0, cd[FACTZ_H5_NELMTS], config = 0;
        size_t ncd = FACTZ_H5_NELMTS;
        char name[80];
        check(H5Pget_filter_by_id2(dcpl.get(), FACTZ_H5_FILTER_ID, &flags, &ncd, cd, sizeof name, name,
                                   &config),
              "finding the factz filter in /cxx_field's pipeline");
        if (ncd != FACTZ_H5_NELMTS)
            fail("the stored filter has " + std::to_string(ncd) + " cd_values, expected " +
                 std::to_string(FACTZ_H5_NELMTS));
        check(H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, decoded.data()),
              "H5Dread /cxx_field");
        stored = H5Dget_storage_size(dset.get());
    }

    double max_err = 0.0;
    for (size_t i = 0; i < field.size(); i++) {
        const float o = field[i], d = decoded[i];
        const char *comp = i < field.size() / 2 ? "u" : "v";
        const size_t k = i % (field.size() / 2);
        if (!std::isfinite(o)) {
            if (bits(o) != bits(d))
                fail(std::string("non-finite ") + comp + " at row " + std::to_string(k / nx) +
                     ", column " + std::to_string(k % nx) + " did not come back bit-exact");
            continue;
        }
        const double err = std::fabs(double(d) - double(o));
        if (!(err <= bound)) {
            char msg[200];
            std::snprintf(msg, sizeof msg, "%s at row %zu, column %zu: %.9g decoded as %.9g, error %.3g > bound %.3g",
                          comp, k / size_t(nx), k % size_t(nx), double(o), double(d), err, bound);
            fail(msg);
        }
        max_err = std::max(max_err, err);
    }
    const double raw_bytes = double(field.size() * sizeof(float));
    // No ratio > 1 demanded: tiny chunks legitimately expand (their
    // perimeters are stored exactly); the pipeline check above shows the filter ran.
    if (stored == 0) fail("H5Dget_storage_size reports no storage for /cxx_field");
    write_raw(output, decoded);

    std::printf("cxx_roundtrip: /cxx_field (2, %llu, %llu) chunks (2, %llu, %llu), mode B, "
                "abs bound %.6g: max error %.6g, %llu bytes stored, ratio %.2f\n",
                (unsigned long long)ny, (unsigned long long)nx, (unsigned long long)cy,
                (unsigned long long)cx, bound, max_err, (unsigned long long)stored,
                raw_bytes / double(stored));
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "cxx_roundtrip: %s\n", e.what());
        return 1;
    }
}
