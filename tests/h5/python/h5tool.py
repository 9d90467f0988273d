#!/usr/bin/env python3
"""Writes and reads factz-filtered HDF5 datasets through h5py (same command
line as tests/h5/h5tool.c, so tests/hdf5_filter.rs can cross-run the two).

  h5tool.py write-field FILE DSET RAW.f32 NY NX LAYOUT CY CX MODE KIND BOUND
      LAYOUT soa: dataset (2,NY,NX) chunks (2,CY,CX); RAW holds all u then all v
      LAYOUT aos: dataset (NY,NX,2) chunks (CY,CX,2); RAW holds (u,v) per vertex
      MODE b|s; KIND abs|rel; BOUND a float
  h5tool.py write-particles FILE DSET RAW.f32 N CN KIND BOUND B BOX
      dataset (N,3) chunks (CN,3); RAW is N*3 float32 xyz interleaved;
      B linking length; BOX periodic side, 0 = open
  h5tool.py write-field64 ...          write-field with RAW.f64 (float64 values)
  h5tool.py write-particles64 ...      write-particles with RAW.f64 (float64 values)
  h5tool.py read FILE DSET OUT.f32     whole dataset, its own layout, raw in its
                                       own type (float32; float64 for a float64 one)
  h5tool.py misuse DIR                 misuse must raise Python exceptions, never crash

RAW files are little-endian float32, row-major. write-* open FILE in append
mode. Exit status 0 on success, else one line on stderr (2: usage error).
The plugin is found as factz_h5 finds it ($FACTZ_H5_PLUGIN_DIR, ...).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

import factz_h5  # noqa: E402

PROG = "h5tool.py"


class Usage(Exception):
    pass


def _int(name, s):
    try:
        v = int(s)
    except ValueError:
        raise Usage(f"{name} must be an integer, not {s!r}") from None
    if v <= 0:
        raise Usage(f"{name} must be > 0, not {v}")
    return v


def _float(name, s):
    try:
        return float(s)
    except ValueError:
        raise Usage(f"{name} must be a number, not {s!r}") from None


def _bound(kind, bound):
    if kind not in ("abs", "rel"):
        raise Usage(f"KIND must be abs or rel, not {kind!r}")
    return {kind: _float("BOUND", bound)}


def _load_raw(path, count, dtype="<f4"):
    a = np.fromfile(path, dtype=dtype)
    if a.size != count:
        raise ValueError(f"{path} holds {a.size} floats, expected {count}")
    return a


def _unfiltered(dset):
    """Chunks HDF5 stored without the factz filter. h5py adds filters as
    optional, so a chunk the filter fails to compress is stored raw without
    an error; the C tool (mandatory filter) would fail instead."""
    return [c.chunk_offset for c in
            (dset.id.get_chunk_info(i) for i in range(dset.id.get_num_chunks()))
            if c.filter_mask & 1]


def _create(path, name, data, chunks, compression):
    with h5py.File(path, "a") as f:
        d = f.create_dataset(name, data=data, chunks=chunks, compression=compression)
        f.flush()
        bad = _unfiltered(d)
        if bad:
            raise RuntimeError(f"the factz filter failed on {len(bad)} chunk(s) (first at "
                               f"{bad[0]}); HDF5 stored them uncompressed")


def write_field(args, dtype="<f4"):
    if len(args) != 11:
        raise Usage("write-field FILE DSET RAW.f32 NY NX LAYOUT CY CX MODE KIND BOUND")
    path, name, raw, ny, nx, layout, cy, cx, mode, kind, bound = args
    ny, nx, cy, cx = (_int(n, v) for n, v in (("NY", ny), ("NX", nx), ("CY", cy), ("CX", cx)))
    if layout not in ("soa", "aos"):
        raise Usage(f"LAYOUT must be soa or aos, not {layout!r}")
    if mode.lower() not in ("b", "s"):
        raise Usage(f"MODE must be b or s, not {mode!r}")
    comp = factz_h5.Field2D(mode=mode, **_bound(kind, bound))
    a = _load_raw(raw, 2 * ny * nx, dtype)
    if layout == "soa":
        data, chunks = a.reshape(2, ny, nx), (2, cy, cx)
    else:
        data, chunks = a.reshape(ny, nx, 2), (cy, cx, 2)
    _create(path, name, data, chunks, comp)


def write_particles(args, dtype="<f4"):
    if len(args) != 9:
        raise Usage("write-particles FILE DSET RAW.f32 N CN KIND BOUND B BOX")
    path, name, raw, n, cn, kind, bound, b, box = args
    n, cn = _int("N", n), _int("CN", cn)
    comp = factz_h5.Particles(b=_float("B", b), box=_float("BOX", box), **_bound(kind, bound))
    data = _load_raw(raw, 3 * n, dtype).reshape(n, 3)
    _create(path, name, data, (cn, 3), comp)


def read(args):
    if len(args) != 3:
        raise Usage("read FILE DSET OUT.f32")
    path, name, out = args
    with h5py.File(path, "r") as f:
        a = f[name][...]
    np.ascontiguousarray(a, dtype="<f8" if a.dtype == np.float64 else "<f4").tofile(out)


# ---- misuse ----------------------------------------------------------------
#
# Every case runs in a forked child, so a crash (a signal) in the filter or in
# HDF5 is reported as that case's failure instead of ending the run. A case
# returns (ok, detail); the parent prints one line per case.

CASE_TIMEOUT_S = 120


class CaseFailed(Exception):
    pass


def _one_line(e):
    return f"{type(e).__name__}: {' '.join(str(e).split())}"


def _expect_error(fn, types=(Exception,), need=None):
    """Runs fn, which must raise one of `types` with a message; `need`: a
    word the message must contain. Returns the message line."""
    try:
        fn()
    except types as e:
        line = _one_line(e)
        if not str(e).strip():
            raise CaseFailed(f"{type(e).__name__} with an empty message")
        if need and need.lower() not in str(e).lower():
            raise CaseFailed(f"message does not mention {need!r}: {line}")
        return line
    except Exception as e:
        raise CaseFailed(f"expected {'/'.join(t.__name__ for t in types)}, got {_one_line(e)}")
    raise CaseFailed("no exception: the misuse was accepted")


def _smooth_field(ny, nx, seed=0):
    """A smooth, deterministic 2D vector field (no data files needed)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:ny, 0:nx] * (2 * np.pi / 64)
    u = sum(rng.normal() * np.sin(k * x + rng.uniform(0, 6)) * np.cos(k * y) for k in (1, 2, 3))
    v = sum(rng.normal() * np.cos(k * x) * np.sin(k * y + rng.uniform(0, 6)) for k in (1, 2, 3))
    return np.stack([u, v]).astype("<f4")


def _particles(n, side=10.0, seed=1):
    """Clustered points in an open box, sorted by x so chunks are slabs."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, side, (n // 100, 3))
    p = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.3, (n, 3))
    p = np.clip(p, 0, side).astype("<f4")
    return p[np.argsort(p[:, 0], kind="stable")]


def _create_fails(path, need="factz", **kw):
    def go():
        with h5py.File(path, "a") as f:
            name = f"d{len(f)}"
            try:
                f.create_dataset(name, **kw)
            finally:
                # A failed create must leave no dataset behind.
                if name in f:
                    raise CaseFailed(f"dataset {name} exists after a failed create")
    return _expect_error(go, need=need)


def _raw_opts(*words):
    return dict(compression=factz_h5.FILTER_ID, compression_opts=tuple(words))


def _lo_hi(x):
    return factz_h5._double_words(x)


def _creation_cases(path):
    f32 = np.float32
    field = dict(shape=(2, 64, 64), chunks=(2, 32, 32))
    part = dict(shape=(1000, 3), chunks=(250, 3))
    fld = factz_h5.Field2D(rel=1e-3)
    prt = factz_h5.Particles(b=0.2, abs=1e-3)
    nan_lo, nan_hi = _lo_hi(float("nan"))
    c = {
        "int32 field": lambda: _create_fails(path, dtype=np.int32, compression=fld, **field),
        "float64 particles with the SZ3 base": lambda: _create_fails(
            path, dtype=np.float64, compression=factz_h5.Particles(b=0.2, abs=1e-3, base="sz3"),
            **part),
        "big-endian float32 field": lambda: _create_fails(path, dtype=">f4", compression=fld, **field),
        "rank-1 dataset": lambda: _create_fails(path, shape=(4096,), chunks=(512,), dtype=f32,
                                                compression=fld),
        "rank-4 dataset": lambda: _create_fails(path, shape=(2, 2, 32, 32), chunks=(2, 2, 16, 16),
                                                dtype=f32, compression=fld),
        "field chunk (1,cy,cx) splits components": lambda: _create_fails(
            path, shape=(2, 64, 64), chunks=(1, 32, 32), dtype=f32, compression=fld),
        "aos field chunk (cy,cx,1)": lambda: _create_fails(
            path, shape=(64, 64, 2), chunks=(32, 32, 1), dtype=f32, compression=fld),
        "particles chunk (cn,2) on (n,3)": lambda: _create_fails(
            path, shape=(1000, 3), chunks=(250, 2), dtype=f32, compression=prt),
        "particles (n,4) chunk (cn,4)": lambda: _create_fails(
            path, shape=(1000, 4), chunks=(250, 4), dtype=f32, compression=prt),
        "Particles() on a rank-3 field": lambda: _create_fails(path, dtype=f32, compression=prt,
                                                               **field),
        "Field2D() on an (n,3) dataset": lambda: _create_fails(path, dtype=f32, compression=fld,
                                                               **part),
        "cd version 99": lambda: _create_fails(path, dtype=f32, **field, **_raw_opts(99)),
        "cd bound kind 7": lambda: _create_fails(path, dtype=f32, **field,
                                                 **_raw_opts(1, 1, 1, 7)),
        "cd NaN bound": lambda: _create_fails(path, dtype=f32, **field,
                                              **_raw_opts(1, 1, 1, 1, nan_lo, nan_hi)),
        "cd zstd 99": lambda: _create_fails(path, dtype=f32, **field,
                                            **_raw_opts(1, 1, 1, 1, 0, 0, 2, 99)),
        "cd 24 words": lambda: _create_fails(path, dtype=f32, **field,
                                             **_raw_opts(*([1, 1, 1, 1] + [0] * 20))),
        "cd mode 9": lambda: _create_fails(path, dtype=f32, **field, **_raw_opts(1, 1, 9)),
        "cd particles without b": lambda: _create_fails(path, dtype=f32, **part,
                                                        **_raw_opts(1, 2)),
        "cd b > box/2": lambda: _create_fails(
            path, dtype=f32, **part,
            **_raw_opts(1, 2, 1, 1, *_lo_hi(1e-3), 2, 0, 0, 1, *_lo_hi(6.0), *_lo_hi(10.0))),
    }
    # The helper's own checks: ValueError before HDF5 is involved.
    helper = {
        "Field2D(abs and rel)": lambda: factz_h5.Field2D(abs=1e-3, rel=1e-3),
        "Field2D(mode='x')": lambda: factz_h5.Field2D(mode="x"),
        "Field2D(rel=nan)": lambda: factz_h5.Field2D(rel=float("nan")),
        "Field2D(abs=-1)": lambda: factz_h5.Field2D(abs=-1),
        "Field2D(abs=inf)": lambda: factz_h5.Field2D(abs=float("inf")),
        "Field2D(zstd=23)": lambda: factz_h5.Field2D(zstd=23),
        "Field2D(coder='lz4')": lambda: factz_h5.Field2D(coder="lz4"),
        "Particles() without b": lambda: factz_h5.Particles(),
        "Particles(eta=) without single_chunk": lambda: factz_h5.Particles(eta=0.2),
        "Particles(b=6, box=10)": lambda: factz_h5.Particles(b=6, box=10),
        "Particles(box=-1)": lambda: factz_h5.Particles(b=0.2, box=-1),
        "Particles(base='lz4')": lambda: factz_h5.Particles(b=0.2, base="lz4"),
    }
    for name, fn in helper.items():
        c["helper " + name] = (lambda fn=fn: _expect_error(fn, (ValueError,)))
    return c


def _write(path, name, data, chunks, comp):
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=data, chunks=chunks, compression=comp)


def _read_all(path, name, sel=Ellipsis):
    # A fresh open each time: HDF5's chunk cache must not answer for the file.
    with h5py.File(path, "r") as f:
        return f[name][sel]


def _put_chunk(path, name, offset, data):
    with h5py.File(path, "a") as f:
        f[name].id.write_direct_chunk(offset, data)


def _get_chunk(path, name, offset):
    with h5py.File(path, "r") as f:
        mask, data = f[name].id.read_direct_chunk(offset)
    if mask:
        raise CaseFailed(f"chunk {offset} was stored without the filter (mask {mask})")
    return bytes(data)


class _Target:
    """A filtered dataset of four chunks; chunk `offset` gets corrupted."""

    def __init__(self, d, kind):
        self.path = os.path.join(d, f"py-misuse-{kind}.h5")
        if kind == "field":
            data = _smooth_field(128, 128)
            self.chunks, self.offset = (2, 64, 64), (0, 0, 0)
            self.bad = np.s_[:, :64, :64]
            self.rest = [np.s_[:, 64:, :], np.s_[:, :64, 64:]]
            comp = factz_h5.Field2D(rel=1e-3)
        else:
            data = _particles(4000)
            self.chunks, self.offset = (1000, 3), (0, 0)
            self.bad = np.s_[:1000]
            self.rest = [np.s_[1000:]]
            comp = factz_h5.Particles(b=0.3, abs=1e-3)
        _write(self.path, "x", data, self.chunks, comp)
        self.good = _read_all(self.path, "x")
        if np.array_equal(self.good, data):
            raise CaseFailed("reading back gave the exact input: is the filter lossy at all?")
        self.raw = _get_chunk(self.path, "x", self.offset)

    def check(self, data):
        """Writes `data` as the chunk: reading it must raise OSError, reading
        the other chunks must give what they gave before. Returns the message."""
        try:
            _put_chunk(self.path, "x", self.offset, data)
        except Exception as e:
            return f"HDF5 refused to store it: {_one_line(e)}"
        try:
            msg = _expect_error(lambda: _read_all(self.path, "x", self.bad), (OSError,))
            _expect_error(lambda: _read_all(self.path, "x"), (OSError,))
            for sel in self.rest:
                if not np.array_equal(_read_all(self.path, "x", sel), self.good[sel]):
                    raise CaseFailed("the intact chunks no longer read as before")
        finally:
            _put_chunk(self.path, "x", self.offset, self.raw)  # restore for the next case
        return msg


def _corruption_cases(d):
    out = {}
    for kind in ("field", "particles"):
        def mutate(fn, kind=kind):
            def case():
                t = _Target(d, kind)
                return t.check(fn(t.raw))
            return case

        def flip_at(frac):
            def f(raw):
                b = bytearray(raw)
                b[min(len(b) - 1, int(frac * len(b)))] ^= 0x10
                return bytes(b)
            return f

        out[f"{kind}: garbage chunk"] = mutate(
            lambda raw: np.random.default_rng(5).bytes(len(raw)))
        out[f"{kind}: zeroed chunk"] = mutate(lambda raw: bytes(len(raw)))
        out[f"{kind}: bit flip in header"] = mutate(flip_at(0.002))
        out[f"{kind}: bit flip mid-stream"] = mutate(flip_at(0.5))
        out[f"{kind}: bit flip in last byte"] = mutate(flip_at(1.0))
        out[f"{kind}: truncated to half"] = mutate(lambda raw: raw[: len(raw) // 2])
        out[f"{kind}: truncated by one byte"] = mutate(lambda raw: raw[:-1])
        out[f"{kind}: truncated to its first 64 bytes"] = mutate(lambda raw: raw[:64])
        out[f"{kind}: one byte"] = mutate(lambda raw: b"\x00")
        out[f"{kind}: valid chunk + trailing garbage"] = mutate(lambda raw: raw + b"\x01" * 16)

        def sweep(kind=kind):
            # 64 single-bit flips over the stream, one at a time: each must
            # fail the read or decode to exactly what the intact chunk gave.
            t = _Target(d, kind)
            rng = np.random.default_rng(11)
            silent, raised = [], 0
            for pos in sorted(rng.choice(len(t.raw), size=min(64, len(t.raw)), replace=False)):
                b = bytearray(t.raw)
                b[pos] ^= 1 << int(rng.integers(8))
                _put_chunk(t.path, "x", t.offset, bytes(b))
                try:
                    got = _read_all(t.path, "x", t.bad)
                    if not np.array_equal(got, t.good[t.bad], equal_nan=True):
                        silent.append(int(pos))
                except OSError:
                    raised += 1
            _put_chunk(t.path, "x", t.offset, t.raw)
            if silent:
                raise CaseFailed(f"{len(silent)} bit flips decoded silently to other values "
                                 f"(byte offsets {silent[:8]} of {len(t.raw)})")
            return f"{raised} of 64 flips raised OSError, the rest decoded identically"

        out[f"{kind}: 64 random bit flips"] = sweep

    # Valid factz streams of the wrong kind or shape.
    def foreign(kind, source):
        def case():
            t = _Target(d, kind)
            return t.check(source())
        return case

    def other_field_chunk(shape=(2, 32, 32)):
        p = os.path.join(d, "py-misuse-src.h5")
        _write(p, "x", _smooth_field(64, 64, seed=3), shape, factz_h5.Field2D(rel=1e-3))
        return _get_chunk(p, "x", (0, 0, 0))

    def other_particle_chunk(cn=500):
        p = os.path.join(d, "py-misuse-src.h5")
        _write(p, "x", _particles(2000, seed=4), (cn, 3), factz_h5.Particles(b=0.3, abs=1e-3))
        return _get_chunk(p, "x", (0, 0))

    out["field: a (2,32,32) field chunk in (2,64,64) chunks"] = foreign("field", other_field_chunk)
    out["field: a particle chunk"] = foreign("field", other_particle_chunk)
    out["particles: a field chunk"] = foreign("particles", other_field_chunk)
    out["particles: a 500-particle chunk in 1000-particle chunks"] = foreign(
        "particles", other_particle_chunk)
    return out


def _note_cases(d):
    """Not failures of the filter, but worth seeing: what h5py does when the
    filter cannot compress a chunk (h5py adds filters as optional)."""
    def base(name):
        def case():
            p = os.path.join(d, "py-misuse-base.h5")
            data = _particles(4000)
            try:
                _write(p, "x", data, (1000, 3),
                       factz_h5.Particles(b=0.3, abs=1e-3, base=name))
            except Exception as e:
                return f"refused at create: {_one_line(e)}"
            with h5py.File(p, "r") as f:
                raw = _unfiltered(f["x"])
            if raw:
                return (f"NOTE: accepted, but {len(raw)} of 4 chunks stored UNCOMPRESSED with no "
                        f"error (libfactz without the {name} feature; h5py's optional filter)")
            return "compressed"
        return case
    return {"note: Particles(base='sz3')": base("sz3"), "note: Particles(base='zfp')": base("zfp")}


def _run_forked(fn):
    """(status, detail): status ok / FAIL / CRASH / TIMEOUT."""
    import json
    import select
    import signal
    import time

    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            res = ("ok", fn())
        except CaseFailed as e:
            res = ("FAIL", str(e))
        except BaseException as e:  # an unexpected Python error is a failure too
            res = ("FAIL", "unexpected " + _one_line(e))
        try:
            os.write(w, json.dumps(res).encode())
        finally:
            os._exit(0)
    os.close(w)
    buf, deadline = b"", time.monotonic() + CASE_TIMEOUT_S
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return "TIMEOUT", f"no answer in {CASE_TIMEOUT_S} s"
        ready, _, _ = select.select([r], [], [], left)
        if ready:
            part = os.read(r, 65536)
            if not part:
                break
            buf += part
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "CRASH", f"the interpreter died with signal {os.WTERMSIG(status)}"
    if not buf:
        return "CRASH", f"the case exited ({status}) without a result"
    return tuple(json.loads(buf))


def misuse(d):
    os.makedirs(d, exist_ok=True)
    if not factz_h5.is_available():
        print(f"{PROG}: the factz filter is not available to h5py "
              f"(plugin dir {factz_h5.PLUGIN_PATH})", file=sys.stderr)
        return 1
    create_path = os.path.join(d, "py-misuse-create.h5")
    h5py.File(create_path, "w").close()
    cases = {}
    cases.update(_creation_cases(create_path))
    cases.update(_corruption_cases(d))
    cases.update(_note_cases(d))
    print(f"# h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}, "
          f"plugin {factz_h5.PLUGIN_PATH}")
    bad = 0
    read_msgs = []
    for name, fn in cases.items():
        status, detail = _run_forked(fn)
        bad += status != "ok"
        print(f"{status:4} {name}: {detail}", flush=True)
        if ":" in name and not name.startswith(("helper", "note", "cd ")) and "OSError" in detail:
            read_msgs.append(detail)
    if read_msgs:
        named = sum("factz" in m for m in read_msgs)
        print(f"# read errors naming factz: {named} of {len(read_msgs)}"
              + ("" if named else f" (HDF5 {h5py.version.hdf5_version} does not pass the "
                 "filter's own message up to h5py on read)"))
    print(f"# {len(cases) - bad} of {len(cases)} cases behaved")
    return 1 if bad else 0


def main(argv):
    cmds = {"write-field": write_field, "write-field64": lambda a: write_field(a, "<f8"),
            "write-particles": write_particles,
            "write-particles64": lambda a: write_particles(a, "<f8"), "read": read}
    try:
        if len(argv) < 2:
            raise Usage("a command: write-field, write-particles, read or misuse")
        if argv[1] == "misuse":
            if len(argv) != 3:
                raise Usage("misuse DIR")
            return misuse(argv[2])
        if argv[1] not in cmds:
            raise Usage(f"unknown command {argv[1]!r}")
        cmds[argv[1]](argv[2:])
        return 0
    except Usage as e:
        print(f"{PROG}: usage: {PROG} {e}", file=sys.stderr)
        return 2
    except Exception as e:  # one line, whatever failed (h5py, numpy, the file system)
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"{PROG}: {type(e).__name__}: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
