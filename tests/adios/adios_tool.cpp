/*
 * Writes and reads factz-compressed ADIOS2 variables from C++, the way a
 * simulation code does (same command line as adios_tool.py, so tests can
 * write with one and read with the other):
 *
 *   adios_tool write-field OUT.bp VAR NY NX soa|aos BY BX PARAMS RAW0.f32 [RAW1.f32 ...]
 *   adios_tool write-particles OUT.bp VAR N BN PARAMS RAW0.f32 [RAW1.f32 ...]
 *   adios_tool read OUT.bp VAR STEP OUT.f32
 *
 * One step per RAW file; each step's global array is Put as blocks of
 * BY x BX vertices (fields, edge blocks partial) or BN particles. PARAMS is
 * the operator's key=value list separated by commas ("-" for none), added to
 * PluginName=factz and PluginLibrary=factz_adios2. Reading needs nothing but
 * ADIOS2_PLUGIN_PATH.
 */
#include <adios2.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

std::vector<float> read_raw(const std::string &path, size_t count)
{
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in || static_cast<size_t>(in.tellg()) != count * sizeof(float))
        throw std::runtime_error(path + ": expected " + std::to_string(count) + " floats");
    std::vector<float> v(count);
    in.seekg(0);
    in.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(count * 4));
    return v;
}

adios2::Params operator_params(const std::string &list)
{
    adios2::Params p{{"PluginName", "factz"}, {"PluginLibrary", "factz_adios2"}};
    if (list == "-")
        return p;
    std::stringstream s(list);
    std::string item;
    while (std::getline(s, item, ','))
    {
        auto eq = item.find('=');
        if (eq == std::string::npos)
            throw std::invalid_argument("PARAMS: key=value,key=value (got " + item + ")");
        p[item.substr(0, eq)] = item.substr(eq + 1);
    }
    return p;
}

/* The block [y0, y0+by) x [x0, x0+bx) of a field held in `layout`. */
std::vector<float> field_block(const std::vector<float> &all, size_t ny, size_t nx, bool aos,
                               size_t y0, size_t x0, size_t by, size_t bx)
{
    std::vector<float> b;
    b.reserve(2 * by * bx);
    if (aos)
    {
        for (size_t j = y0; j < y0 + by; j++)
            for (size_t i = x0; i < x0 + bx; i++)
                for (size_t c = 0; c < 2; c++)
                    b.push_back(all[2 * (j * nx + i) + c]);
    }
    else
    {
        for (size_t c = 0; c < 2; c++)
            for (size_t j = y0; j < y0 + by; j++)
                for (size_t i = x0; i < x0 + bx; i++)
                    b.push_back(all[c * ny * nx + j * nx + i]);
    }
    return b;
}

int write_field(char **a, int nraw)
{
    const std::string out = a[0], name = a[1];
    const size_t ny = std::stoul(a[2]), nx = std::stoul(a[3]);
    const bool aos = std::string(a[4]) == "aos";
    if (!aos && std::string(a[4]) != "soa")
        throw std::invalid_argument("layout: soa or aos");
    const size_t by = std::stoul(a[5]), bx = std::stoul(a[6]);
    adios2::ADIOS adios;
    adios2::IO io = adios.DeclareIO("factz-field");
    io.SetEngine("BP5");
    adios2::Dims shape = aos ? adios2::Dims{ny, nx, 2} : adios2::Dims{2, ny, nx};
    adios2::Variable<float> var = io.DefineVariable<float>(name, shape, {0, 0, 0}, shape);
    adios2::Operator op = adios.DefineOperator("factz", "plugin", operator_params(a[7]));
    var.AddOperation(op);
    adios2::Engine engine = io.Open(out, adios2::Mode::Write);
    for (int s = 0; s < nraw; s++)
    {
        std::vector<float> all = read_raw(a[8 + s], 2 * ny * nx);
        engine.BeginStep();
        for (size_t y0 = 0; y0 < ny; y0 += by)
            for (size_t x0 = 0; x0 < nx; x0 += bx)
            {
                size_t h = std::min(by, ny - y0), w = std::min(bx, nx - x0);
                var.SetSelection(aos ? adios2::Box<adios2::Dims>{{y0, x0, 0}, {h, w, 2}}
                                     : adios2::Box<adios2::Dims>{{0, y0, x0}, {2, h, w}});
                std::vector<float> b = field_block(all, ny, nx, aos, y0, x0, h, w);
                engine.Put(var, b.data(), adios2::Mode::Sync);
            }
        engine.EndStep();
    }
    engine.Close();
    return 0;
}

int write_particles(char **a, int nraw)
{
    const std::string out = a[0], name = a[1];
    const size_t n = std::stoul(a[2]), bn = std::stoul(a[3]);
    adios2::ADIOS adios;
    adios2::IO io = adios.DeclareIO("factz-particles");
    io.SetEngine("BP5");
    adios2::Variable<float> var = io.DefineVariable<float>(name, {n, 3}, {0, 0}, {n, 3});
    adios2::Operator op = adios.DefineOperator("factz", "plugin", operator_params(a[4]));
    var.AddOperation(op);
    adios2::Engine engine = io.Open(out, adios2::Mode::Write);
    for (int s = 0; s < nraw; s++)
    {
        std::vector<float> all = read_raw(a[5 + s], 3 * n);
        engine.BeginStep();
        for (size_t p0 = 0; p0 < n; p0 += bn)
        {
            size_t m = std::min(bn, n - p0);
            var.SetSelection({{p0, 0}, {m, 3}});
            engine.Put(var, all.data() + 3 * p0, adios2::Mode::Sync);
        }
        engine.EndStep();
    }
    engine.Close();
    return 0;
}

int read_var(char **a)
{
    adios2::ADIOS adios;
    adios2::IO io = adios.DeclareIO("factz-read");
    io.SetEngine("BP5");
    adios2::Engine engine = io.Open(a[0], adios2::Mode::ReadRandomAccess);
    adios2::Variable<float> var = io.InquireVariable<float>(a[1]);
    if (!var)
        throw std::runtime_error(std::string("no float variable ") + a[1]);
    var.SetStepSelection({std::stoul(a[2]), 1});
    std::vector<float> data;
    engine.Get(var, data, adios2::Mode::Sync);
    engine.Close();
    std::ofstream out(a[3], std::ios::binary);
    out.write(reinterpret_cast<const char *>(data.data()),
              static_cast<std::streamsize>(data.size() * sizeof(float)));
    if (!out)
        throw std::runtime_error(std::string("writing ") + a[3]);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    try
    {
        std::string cmd = argc > 1 ? argv[1] : "";
        if (cmd == "write-field" && argc >= 11)
            return write_field(argv + 2, argc - 10);
        if (cmd == "write-particles" && argc >= 8)
            return write_particles(argv + 2, argc - 7);
        if (cmd == "read" && argc == 6)
            return read_var(argv + 2);
        std::cerr << "usage: adios_tool write-field OUT VAR NY NX soa|aos BY BX PARAMS RAW... | "
                     "write-particles OUT VAR N BN PARAMS RAW... | read OUT VAR STEP OUT.f32\n";
        return 2;
    }
    catch (const std::exception &e)
    {
        std::cerr << "adios_tool: " << e.what() << "\n";
        return 1;
    }
}
