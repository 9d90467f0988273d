#!/usr/bin/env python3
"""Writes and reads factz-compressed ADIOS2 variables from Python (the adios2
wheel's bindings); the same command line as adios_tool.cpp, so tests can write
with one and read with the other:

    adios_tool.py write-field OUT.bp VAR NY NX soa|aos BY BX PARAMS RAW0.f32 [RAW1.f32 ...]
    adios_tool.py write-particles OUT.bp VAR N BN PARAMS RAW0.f32 [RAW1.f32 ...]
    adios_tool.py read OUT.bp VAR STEP OUT.f32

One step per RAW file, Put as blocks (edge blocks partial). RAW files ending in
.f64 hold float64 values (a double variable), others float32; read writes the
variable's own type. PARAMS: the operator's key=value list separated by commas,
or "-". The operator plugin is found through ADIOS2_PLUGIN_PATH.
"""
import sys

import numpy as np
from adios2 import bindings as ab


def operator_params(text):
    params = {"PluginName": "factz", "PluginLibrary": "factz_adios2"}
    if text != "-":
        for item in text.split(","):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"PARAMS: key=value,key=value (got {item!r})")
            params[key] = value
    return params


def dtype_of(raws):
    """float64 when the RAW files are .f64, else float32."""
    return np.float64 if raws and raws[0].endswith(".f64") else np.float32


def open_writer(out, name, shape, params, dtype=np.float32):
    adios = ab.ADIOS()
    io = adios.DeclareIO("factz-write")
    io.SetEngine("BP5")
    var = io.DefineVariable(name, np.zeros(1, dtype), shape, [0] * len(shape), shape, False)
    var.AddOperation(adios.DefineOperator("factz", "plugin", operator_params(params)), {})
    # adios must outlive the engine: keep it in the returned tuple.
    return adios, io.Open(out, ab.Mode.Write), var


def read_raw(path, count, dtype=np.float32):
    data = np.fromfile(path, dtype)
    if data.size != count:
        raise ValueError(f"{path}: expected {count} values, found {data.size}")
    return data


def write_field(out, name, ny, nx, layout, by, bx, params, *raws):
    ny, nx, by, bx = int(ny), int(nx), int(by), int(bx)
    if layout not in ("soa", "aos"):
        raise ValueError("layout: soa or aos")
    aos = layout == "aos"
    shape = [ny, nx, 2] if aos else [2, ny, nx]
    dtype = dtype_of(raws)
    adios, engine, var = open_writer(out, name, shape, params, dtype)
    for raw in raws:
        field = read_raw(raw, 2 * ny * nx, dtype).reshape(shape)
        engine.BeginStep()
        for y0 in range(0, ny, by):
            for x0 in range(0, nx, bx):
                h, w = min(by, ny - y0), min(bx, nx - x0)
                if aos:
                    var.SetSelection([[y0, x0, 0], [h, w, 2]])
                    block = field[y0:y0 + h, x0:x0 + w, :]
                else:
                    var.SetSelection([[0, y0, x0], [2, h, w]])
                    block = field[:, y0:y0 + h, x0:x0 + w]
                engine.Put(var, np.ascontiguousarray(block), ab.Mode.Sync)
        engine.EndStep()
    engine.Close()
    del adios


def write_particles(out, name, n, bn, params, *raws):
    n, bn = int(n), int(bn)
    dtype = dtype_of(raws)
    adios, engine, var = open_writer(out, name, [n, 3], params, dtype)
    for raw in raws:
        pos = read_raw(raw, 3 * n, dtype).reshape(n, 3)
        engine.BeginStep()
        for p0 in range(0, n, bn):
            m = min(bn, n - p0)
            var.SetSelection([[p0, 0], [m, 3]])
            engine.Put(var, np.ascontiguousarray(pos[p0:p0 + m]), ab.Mode.Sync)
        engine.EndStep()
    engine.Close()
    del adios


def read(path, name, step, out):
    adios = ab.ADIOS()
    io = adios.DeclareIO("factz-read")
    io.SetEngine("BP5")
    engine = io.Open(path, ab.Mode.ReadRandomAccess)
    var = io.InquireVariable(name)
    if var is None:
        raise ValueError(f"no variable {name!r} in {path}")
    var.SetStepSelection([int(step), 1])
    data = np.zeros(var.Shape(), np.float64 if var.Type() == "double" else np.float32)
    engine.Get(var, data, ab.Mode.Sync)
    engine.Close()
    data.tofile(out)


def main(argv):
    commands = {"write-field": (write_field, 9), "write-particles": (write_particles, 6),
                "read": (read, 4)}
    if len(argv) < 2 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    fn, least = commands[argv[1]]
    args = argv[2:]
    if len(args) < least or (fn is read and len(args) != least):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        fn(*args)
    except Exception as e:  # one line, as a command-line tool should
        print(f"adios_tool.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
