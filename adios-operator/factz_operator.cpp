/*
 * The factz ADIOS2 operator: a plugin operator (ADIOS2 >= 2.12, interface v2)
 * over include/factz.h, with static libfactz inside.
 *
 * Each block an engine hands to Operate (one Put) is compressed on its own
 * with the chunk rule on (perimeter vertices, or particles near the block's
 * bounding-box faces, stored exactly), so the guarantee holds across blocks.
 * The output is one self-describing factz stream: InverseOperate needs no
 * parameters, and every reader decodes with only ADIOS2_PLUGIN_PATH set.
 *
 * Device (CUDA) buffers are detected and staged through host memory
 * (device_memory.h); a device pointer is never read as host memory.
 *
 * Errors are C++ exceptions with messages that say what would work; ADIOS2
 * passes them to the caller. Operate never returns 0: ADIOS2 2.12's BP5 then
 * still hands the stored bytes to InverseOperate on read (measured: the block
 * became unreadable). A block factz cannot shrink is stored raw inside a
 * valid factz stream instead (the library's own fallback), a few dozen bytes
 * larger than the block.
 */
#include <adios2/plugin/PluginOperatorInterface.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_memory.h"
#include "factz.h"

namespace
{

using adios2::DataType;
using adios2::Dims;
using adios2::Params;

[[noreturn]] void fail(const std::string &what)
{
    throw std::invalid_argument("factz operator: " + what);
}

[[noreturn]] void fail_factz(const std::string &what)
{
    throw std::runtime_error("factz operator: " + what + ": " + factz_last_error());
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

double parse_double(const std::string &key, const std::string &value)
{
    const char *s = value.c_str();
    char *end = nullptr;
    double d = std::strtod(s, &end);
    if (end == s || *end != '\0' || !std::isfinite(d))
        fail("parameter " + key + "=" + value + ": not a finite number");
    return d;
}

long parse_int(const std::string &key, const std::string &value, long lo, long hi)
{
    const char *s = value.c_str();
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi)
        fail("parameter " + key + "=" + value + ": use an integer " + std::to_string(lo) +
             ".." + std::to_string(hi));
    return v;
}

bool parse_bool(const std::string &key, const std::string &value)
{
    std::string v = lower(value);
    if (v == "true" || v == "1" || v == "on" || v == "yes")
        return true;
    if (v == "false" || v == "0" || v == "off" || v == "no")
        return false;
    fail("parameter " + key + "=" + value + ": use true or false");
}

/* The operator's settings, from ADIOS2 parameters (keys case-insensitive). */
struct Settings
{
    uint32_t bound_kind = FACTZ_BOUND_REL;
    double bound = 1e-3;
    uint32_t mode = FACTZ_MODE_SPECULATIVE;
    uint32_t coder = FACTZ_CODER_RANS;
    int32_t zstd = 0;
    bool verify = false;
    double linking_length = 0.0; /* 0: not given */
    double eta = 0.0;
    double count = 0.0;
    double box = 0.0;
    uint32_t base = FACTZ_BASE_BUILTIN;
    uint32_t backend = FACTZ_BACKEND_CPU;

    explicit Settings(const Params &params)
    {
        for (const auto &kv : params)
        {
            const std::string key = lower(kv.first);
            const std::string &value = kv.second;
            if (key == "pluginname" || key == "pluginlibrary")
                continue; /* ADIOS2's own, to find us */
            if (key == "accuracy")
            {
                bound = parse_double(kv.first, value);
                if (!(bound > 0.0))
                    fail("accuracy=" + value + ": the error bound must be > 0");
            }
            else if (key == "mode")
            {
                std::string v = lower(value);
                if (v == "abs")
                    bound_kind = FACTZ_BOUND_ABS;
                else if (v == "rel")
                    bound_kind = FACTZ_BOUND_REL;
                else
                    fail("mode=" + value + ": use ABS (absolute) or REL (relative to each "
                                           "block's value range)");
            }
            else if (key == "cpmode")
            {
                std::string v = lower(value);
                if (v == "b")
                    mode = FACTZ_MODE_BLOCKWISE;
                else if (v == "s")
                    mode = FACTZ_MODE_SPECULATIVE;
                else
                    fail("cpmode=" + value + ": use B (block-wise, fast) or S (speculative, "
                                             "best ratio)");
            }
            else if (key == "coder")
            {
                std::string v = lower(value);
                if (v == "huffman")
                    coder = FACTZ_CODER_HUFFMAN;
                else if (v == "rans")
                    coder = FACTZ_CODER_RANS;
                else
                    fail("coder=" + value + ": use huffman or rans");
            }
            else if (key == "zstd")
                zstd = static_cast<int32_t>(parse_int(kv.first, value, 0, 22));
            else if (key == "verify")
                verify = parse_bool(kv.first, value);
            else if (key == "linking_length" || key == "b")
            {
                linking_length = parse_double(kv.first, value);
                if (!(linking_length > 0.0))
                    fail(kv.first + "=" + value + ": the linking length must be > 0");
            }
            else if (key == "eta")
            {
                eta = parse_double(kv.first, value);
                if (!(eta > 0.0))
                    fail("eta=" + value + ": must be > 0");
            }
            else if (key == "count")
            {
                count = parse_double(kv.first, value);
                if (!(count >= 1.0))
                    fail("count=" + value + ": the variable's particle count, >= 1");
            }
            else if (key == "box")
            {
                box = parse_double(kv.first, value);
                if (!(box >= 0.0))
                    fail("box=" + value + ": the periodic box side (> 0), or 0 for open "
                                          "boundaries");
            }
            else if (key == "base")
            {
                std::string v = lower(value);
                if (v == "builtin")
                    base = FACTZ_BASE_BUILTIN;
                else if (v == "sz3")
                    base = FACTZ_BASE_SZ3;
                else if (v == "zfp")
                    base = FACTZ_BASE_ZFP;
                else
                    fail("base=" + value + ": use builtin, zfp or sz3");
            }
            else if (key == "backend")
            {
                std::string v = lower(value);
                if (v == "cpu")
                    backend = FACTZ_BACKEND_CPU;
                else if (v == "cuda")
                    backend = FACTZ_BACKEND_CUDA;
                else if (v == "auto")
                    backend = FACTZ_BACKEND_AUTO;
                else
                    fail("backend=" + value + ": use cpu, cuda or auto");
            }
            else
                fail("unknown parameter " + kv.first +
                     " (known: accuracy, mode, cpmode, coder, zstd, verify, linking_length, "
                     "eta, count, box, base, backend)");
        }
        if (linking_length > 0.0 && eta > 0.0)
            fail("give linking_length or eta, not both");
        if (eta > 0.0 && (box <= 0.0 || count <= 0.0))
            fail("eta needs box and count (the variable's particle count), so that every "
                 "block links with the same b = eta (box^3 / count)^(1/3); or give "
                 "linking_length");
        if (eta > 0.0)
            linking_length = eta * std::cbrt(box * box * box / count);
        if (box > 0.0 && linking_length > box / 2.0)
            fail("linking length " + std::to_string(linking_length) +
                 " exceeds half the periodic box " + std::to_string(box));
    }
};

enum class Kind
{
    FieldSoa,  /* (2, ny, nx) */
    FieldAos,  /* (ny, nx, 2) */
    Particles, /* (n, 3) */
};

std::string dims_str(const Dims &d)
{
    std::ostringstream s;
    s << "(";
    for (size_t k = 0; k < d.size(); k++)
        s << (k ? ", " : "") << d[k];
    s << ")";
    return s.str();
}

/* What a block of this shape is; the same rules as the HDF5 filter. */
Kind kind_of(const Dims &count)
{
    if (count.size() == 3 && count[0] == 2)
        return Kind::FieldSoa;
    if (count.size() == 3 && count[2] == 2)
        return Kind::FieldAos;
    if (count.size() == 2 && count[1] == 3)
        return Kind::Particles;
    fail("a block " + dims_str(count) +
         " is neither a vector field block (2, ny, nx) or (ny, nx, 2) (the component axis "
         "whole) nor a particle block (n, 3)");
}

class FactzOperator : public adios2::plugin::PluginOperatorInterface
{
public:
    explicit FactzOperator(const Params &parameters)
    : PluginOperatorInterface(parameters), m_Settings(parameters)
    {
    }

    size_t Operate(const char *dataIn, const Dims & /*blockStart*/, const Dims &blockCount,
                   const DataType type, char *bufferOut) override
    {
        if (type != DataType::Float && type != DataType::Double)
            fail("only float32 and float64 variables are supported (vector fields (2, ny, nx) "
                 "or (ny, nx, 2), particles (n, 3)); store this variable without factz");
        const bool f64 = type == DataType::Double;
        Settings s(m_Parameters); /* parameters may have changed since construction */
        const Kind kind = kind_of(blockCount);
        size_t cap = estimated(blockCount, f64), len = 0, raw = f64 ? sizeof(double) : sizeof(float);
        for (size_t d : blockCount)
            raw *= d;
        std::vector<char> staged;
        const auto &cuda = factz_adios::CudaDriver::get();
        if (cuda.is_device(dataIn))
        {
            staged.resize(raw);
            cuda.to_host(staged.data(), dataIn, raw);
            dataIn = staged.data();
        }
        const float *in = reinterpret_cast<const float *>(dataIn);
        const double *in64 = reinterpret_cast<const double *>(dataIn);
        uint8_t *out = reinterpret_cast<uint8_t *>(bufferOut);
        factz_status st;
        if (kind == Kind::Particles)
        {
            if (s.linking_length <= 0.0)
                fail("particles need the linking length: parameter linking_length=b (or eta "
                     "with box and count); each block is compressed alone, and a b derived "
                     "per block would not be the same b");
            factz_particles_config cfg = {};
            cfg.struct_size = sizeof cfg;
            factz_particles_config_default(&cfg);
            cfg.bound_kind = s.bound_kind;
            cfg.bound = s.bound;
            cfg.linking_kind = FACTZ_LINK_LENGTH;
            cfg.linking = s.linking_length;
            cfg.box_side = s.box;
            cfg.base = s.base;
            cfg.coder = s.coder;
            cfg.zstd_level = s.zstd;
            cfg.flags = FACTZ_CHUNK_OF_LARGER | (s.verify ? FACTZ_VERIFY : 0);
            cfg.backend = s.backend;
            st = f64 ? factz_particles_compress_f64(in64, blockCount[0], &cfg, out, cap, &len,
                                                    nullptr)
                     : factz_particles_compress(in, blockCount[0], &cfg, out, cap, &len);
        }
        else
        {
            const bool aos = kind == Kind::FieldAos;
            const size_t ny = aos ? blockCount[0] : blockCount[1];
            const size_t nx = aos ? blockCount[1] : blockCount[2];
            factz_field_config cfg = {};
            cfg.struct_size = sizeof cfg;
            factz_field_config_default(&cfg);
            cfg.mode = s.mode;
            cfg.bound_kind = s.bound_kind;
            cfg.bound = s.bound;
            cfg.coder = s.coder;
            cfg.zstd_level = s.zstd;
            cfg.flags = FACTZ_CHUNK_OF_LARGER | (s.verify ? FACTZ_VERIFY : 0);
            cfg.layout = aos ? FACTZ_LAYOUT_AOS : FACTZ_LAYOUT_SOA;
            cfg.backend = s.backend;
            if (f64)
                st = aos ? factz_field_compress_interleaved_f64(&cfg, in64, ny, nx, out, cap,
                                                                &len, nullptr)
                         : factz_field_compress_f64(&cfg, in64, in64 + ny * nx, ny, nx, out, cap,
                                                    &len, nullptr);
            else
                st = aos ? factz_field_compress_interleaved(&cfg, in, ny, nx, out, cap, &len)
                         : factz_field_compress(&cfg, in, in + ny * nx, ny, nx, out, cap, &len);
        }
        if (st != FACTZ_OK)
            fail_factz("compressing a block " + dims_str(blockCount));
        return len;
    }

    size_t InverseOperate(const char *bufferIn, const size_t sizeIn, char *dataOut) override
    {
        const auto &cuda = factz_adios::CudaDriver::get();
        if (cuda.is_device(dataOut))
        {
            std::vector<char> host(decoded_size(bufferIn, sizeIn));
            size_t n = decode(bufferIn, sizeIn, host.data());
            cuda.to_device(dataOut, host.data(), n);
            return n;
        }
        return decode(bufferIn, sizeIn, dataOut);
    }

    /* Every type is "valid": for an invalid one ADIOS2 only warns and writes the
     * variable uncompressed, where a user who asked for factz should hear why
     * not (Operate throws for anything but float32 and float64). */
    bool IsDataTypeValid(const DataType /*type*/) const override { return true; }

    size_t GetEstimatedSize(const size_t /*ElemCount*/, const size_t ElemSize,
                            const size_t ndims, const size_t *dims) const override
    {
        return estimated(Dims(dims, dims + ndims), ElemSize == sizeof(double));
    }

private:
    Settings m_Settings;

    /* Bytes a stream decodes to, from its header. */
    static size_t decoded_size(const char *bufferIn, size_t sizeIn)
    {
        const uint8_t *in = reinterpret_cast<const uint8_t *>(bufferIn);
        factz_field_stream_info fi = {};
        fi.struct_size = sizeof fi;
        if (factz_field_info(in, sizeIn, &fi) == FACTZ_OK)
            return static_cast<size_t>(2 * fi.ny * fi.nx * value_size(fi.dtype));
        factz_particles_stream_info pi = {};
        pi.struct_size = sizeof pi;
        if (factz_particles_info(in, sizeIn, &pi) == FACTZ_OK)
            return static_cast<size_t>(3 * pi.n * value_size(pi.dtype));
        fail_factz("a block is not a factz stream (corrupted?)");
    }

    /* Bytes per value of a stream's element type (its info's dtype). */
    static size_t value_size(uint32_t dtype) { return dtype == 2 ? sizeof(double) : sizeof(float); }

    /* Decodes a stream into host memory; returns the bytes written. */
    static size_t decode(const char *bufferIn, size_t sizeIn, char *dataOut)
    {
        const uint8_t *in = reinterpret_cast<const uint8_t *>(bufferIn);
        float *out = reinterpret_cast<float *>(dataOut);
        double *out64 = reinterpret_cast<double *>(dataOut);
        factz_field_stream_info fi = {};
        fi.struct_size = sizeof fi;
        if (factz_field_info(in, sizeIn, &fi) == FACTZ_OK)
        {
            const size_t n = fi.ny * fi.nx;
            const bool aos = fi.layout == FACTZ_LAYOUT_AOS;
            factz_status st;
            /* The stream says its element type: ADIOS2 sized dataOut by the
             * variable's, which wrote the stream. */
            if (fi.dtype == 2)
                st = aos ? factz_field_decompress_interleaved_f64(in, sizeIn, out64, fi.ny, fi.nx)
                         : factz_field_decompress_f64(in, sizeIn, out64, out64 + n, fi.ny, fi.nx);
            else
                st = aos ? factz_field_decompress_interleaved(in, sizeIn, out, fi.ny, fi.nx)
                         : factz_field_decompress(in, sizeIn, out, out + n, fi.ny, fi.nx);
            if (st != FACTZ_OK)
                fail_factz("decoding a vector field block (corrupted?)");
            return static_cast<size_t>(2 * n * value_size(fi.dtype));
        }
        factz_particles_stream_info pi = {};
        pi.struct_size = sizeof pi;
        if (factz_particles_info(in, sizeIn, &pi) == FACTZ_OK)
        {
            factz_status st = pi.dtype == 2
                                  ? factz_particles_decompress_f64(in, sizeIn, out64, pi.n)
                                  : factz_particles_decompress(in, sizeIn, out, pi.n);
            if (st != FACTZ_OK)
                fail_factz("decoding a particle block (corrupted?)");
            return static_cast<size_t>(3 * pi.n * value_size(pi.dtype));
        }
        fail_factz("a block is not a factz stream (corrupted?)");
    }

    /* The most Operate can write for a block of this shape and element type. */
    static size_t estimated(const Dims &count, bool f64)
    {
        size_t cap = 0;
        factz_status st = FACTZ_OK;
        switch (kind_of(count))
        {
        case Kind::Particles:
            st = f64 ? factz_particles_max_compressed_size_f64(count[0], &cap)
                     : factz_particles_max_compressed_size(count[0], &cap);
            break;
        case Kind::FieldSoa:
            st = f64 ? factz_field_max_compressed_size_f64(count[1], count[2], &cap)
                     : factz_field_max_compressed_size(count[1], count[2], &cap);
            break;
        case Kind::FieldAos:
            st = f64 ? factz_field_max_compressed_size_f64(count[0], count[1], &cap)
                     : factz_field_max_compressed_size(count[0], count[1], &cap);
            break;
        }
        if (st != FACTZ_OK)
            fail_factz("block " + dims_str(count));
        return cap;
    }
};

} // namespace

extern "C" {

__attribute__((visibility("default"))) adios2::plugin::PluginOperatorInterface *
OperatorCreate(const adios2::Params &parameters)
{
    return new FactzOperator(parameters);
}

__attribute__((visibility("default"))) void
OperatorDestroy(adios2::plugin::PluginOperatorInterface *obj)
{
    delete obj;
}
}
