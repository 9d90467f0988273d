#!/usr/bin/env python3
"""What a user of the installed factz package does, checked end to end
(tests/python_package.rs runs it in a fresh virtual environment after
`pip install ./python`, with a clean environment and its cwd outside the
repository):

* h5py writes a vector field and a particle set through the bundled filter
  and reads them back after reopening, with nothing set;
* h5dump reads the file with HDF5_PLUGIN_PATH=factz.PLUGIN_PATH;
* the numpy API (float32 and float64): compress_field, compress_particles,
  decompress, info, critical_points, fof, halos, linking_length, verify;
* misuse (dtype, shape, corrupt streams, arguments libfactz refuses) raises
  TypeError / ValueError / factz.Error, never a crash.

Values are checked against the bound, and features by independent
brute-force code here (critical points: exact orientation signs of every
triangle and exact Jacobian signs with fractions; links: all pairs, the
compressor's rule), not only by the package's own functions.

Usage: package_check.py SCRATCH_DIR. Exit status 0 when every check passes.
"""

import os
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np

CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise AssertionError(what)


def raises(exc, fn, what, needle=None):
    global CHECKS
    CHECKS += 1
    try:
        fn()
    except exc as e:
        if needle is not None and needle not in str(e):
            raise AssertionError(f"{what}: message {str(e)!r} does not say {needle!r}")
        return e
    except Exception as e:  # the wrong kind of error
        raise AssertionError(f"{what}: expected {_names(exc)}, got {type(e).__name__}: {e}")
    raise AssertionError(f"{what}: expected {_names(exc)}, nothing was raised")


def _names(exc):
    return " or ".join(t.__name__ for t in exc) if isinstance(exc, tuple) else exc.__name__


# ---- independent oracles ----------------------------------------------------------

TYPE_NAMES = ["saddle", "source", "sink", "repelling_focus", "attracting_focus", "center"]


def _m_sign(a, b, c, d):
    """The exact sign of a b - c d (floats)."""
    m = Fraction(float(a)) * Fraction(float(b)) - Fraction(float(c)) * Fraction(float(d))
    return float((m > 0) - (m < 0))


_m_signs = np.vectorize(_m_sign)


def brute_critical_points(u, v):
    """{triangle id: type name} of the piecewise-linear field, by the rule
    README.md states: a triangle holds a critical point when
    m = m0 + m1 + m2 != 0 and every m_k (m0 = u1 v2 - u2 v1, ...) is 0 or has
    the sign of m, i.e. the nonzero m_k share one sign. Each m_k's sign is
    exact in float64 (products of two float32 are exact, and a rounded
    difference keeps its sign; float64 values take fractions); the type
    comes from the exact signs of the Jacobian, computed with fractions."""
    ny, nx = u.shape
    U = u.astype(np.float64)
    V = v.astype(np.float64)
    j, i = np.mgrid[0:ny - 1, 0:nx - 1]
    out = {}
    for half in (0, 1):
        if half == 0:
            verts = [(j, i), (j, i + 1), (j + 1, i + 1)]
        else:
            verts = [(j, i), (j + 1, i + 1), (j + 1, i)]
        pu = [U[a, b] for a, b in verts]
        pv = [V[a, b] for a, b in verts]
        if u.dtype == np.float64:
            # products of two float64 are not exact: the signs with fractions
            s = [_m_signs(pu[k], pv[(k + 1) % 3], pv[k], pu[(k + 1) % 3]) for k in range(3)]
        else:
            s = [np.sign(pu[k] * pv[(k + 1) % 3] - pv[k] * pu[(k + 1) % 3]) for k in range(3)]
        pos = (s[0] >= 0) & (s[1] >= 0) & (s[2] >= 0) & ((s[0] > 0) | (s[1] > 0) | (s[2] > 0))
        neg = (s[0] <= 0) & (s[1] <= 0) & (s[2] <= 0) & ((s[0] < 0) | (s[1] < 0) | (s[2] < 0))
        inside = pos | neg
        for jj, ii in zip(*np.nonzero(inside)):
            tri = 2 * (jj * (nx - 1) + ii) + half
            # exact Jacobian of the linear interpolant (grid units, x = column)
            f = lambda a, r, c: Fraction(float(a[r, c]))  # noqa: E731
            if half == 0:
                ux, uy = f(u, jj, ii + 1) - f(u, jj, ii), f(u, jj + 1, ii + 1) - f(u, jj, ii + 1)
                vx, vy = f(v, jj, ii + 1) - f(v, jj, ii), f(v, jj + 1, ii + 1) - f(v, jj, ii + 1)
            else:
                ux, uy = f(u, jj + 1, ii + 1) - f(u, jj + 1, ii), f(u, jj + 1, ii) - f(u, jj, ii)
                vx, vy = f(v, jj + 1, ii + 1) - f(v, jj + 1, ii), f(v, jj + 1, ii) - f(v, jj, ii)
            det = ux * vy - uy * vx
            tr = ux + vy
            disc = tr * tr - 4 * det
            if det < 0:
                t = "saddle"
            elif det > 0 and disc >= 0:
                t = "source" if tr > 0 else "sink"
            elif det > 0:
                t = "repelling_focus" if tr > 0 else ("attracting_focus" if tr < 0 else "center")
            else:
                raise AssertionError(f"test data has det J = 0 in triangle {tri}")
            out[int(tri)] = t
    return out


def brute_links(xyz, b, box):
    """Every linked pair (i < j) by all pairs: d the double difference of the
    two floats, wrapped to the minimum image in a periodic box, linked iff
    dx*dx + dy*dy + dz*dz <= b*b (the rule of factz_particles_config)."""
    p = xyz.astype(np.float64)
    n = len(p)
    i, j = np.triu_indices(n, k=1)
    d = p[i] - p[j]
    if box:
        d = d - box * np.copysign(np.floor(np.abs(d / box) + 0.5), d / box)
    linked = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2] <= b * b
    return set(zip(i[linked].tolist(), j[linked].tolist()))


def _round_half_away_exact(x):
    """f64::round, half away from zero: |x| - floor(|x|) is exact in double."""
    a = np.abs(x)
    f = np.floor(a)
    return np.copysign(f + (a - f >= 0.5), x)


def brute_links_f64(xyz, b, box):
    """brute_links for float64 positions, every step in float64 on the
    doubles themselves (no float32 anywhere): all pairs, d = x_i - x_j per
    axis (rounded once), in a periodic box d - box * round_half_away(d / box),
    linked iff dx*dx + dy*dy + dz*dz (summed x, y, z) <= b*b."""
    assert xyz.dtype == np.float64, xyz.dtype
    n = len(xyz)
    i, j = np.triu_indices(n, k=1)
    d = xyz[i] - xyz[j]
    if box:
        d = d - box * _round_half_away_exact(d / box)
    d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
    linked = d2 <= b * b
    return set(zip(i[linked].tolist(), j[linked].tolist()))


def brute_groups(n, links):
    """FoF labels from the links: each particle's smallest group member."""
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(a) for a in range(n)], dtype=np.int64)


# ---- test data ------------------------------------------------------------------------


def sample_field(ny, nx, seed):
    """A smooth field (a few random Fourier modes) with tens of critical points."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:ny, 0:nx].astype(np.float64)
    u = np.zeros((ny, nx))
    v = np.zeros((ny, nx))
    for _ in range(6):
        kx, ky = rng.uniform(-0.35, 0.35, 2)
        a, b, pa, pb = rng.standard_normal(4)
        u += a * np.sin(kx * x + ky * y + pa)
        v += b * np.cos(kx * x - ky * y + pb)
    return u.astype(np.float32), v.astype(np.float32)


def sample_particles(seed, box):
    """Clustered particles in a periodic box: blobs plus a background."""
    rng = np.random.default_rng(seed)
    parts = [rng.uniform(0, box, (400, 3))]
    for c in rng.uniform(0, box, (25, 3)):
        parts.append(c + rng.normal(0, 0.12, (40, 3)))
    p = np.mod(np.concatenate(parts), box)
    return p.astype(np.float32)


# ---- the checks -----------------------------------------------------------------------


def check_environment(factz):
    check("HDF5_PLUGIN_PATH" not in os.environ, "HDF5_PLUGIN_PATH must not be set")
    check("LD_LIBRARY_PATH" not in os.environ, "LD_LIBRARY_PATH must not be set")
    site = os.path.realpath(sys.prefix)
    check(os.path.realpath(factz.__file__).startswith(site),
          f"factz must come from the virtual environment {site}, not {factz.__file__}")
    check(os.path.isfile(os.path.join(factz.PLUGIN_PATH, "libH5Zfactz.so"))
          and os.path.realpath(factz.PLUGIN_PATH).startswith(site),
          f"factz.PLUGIN_PATH ({factz.PLUGIN_PATH}) must be the package's plugin directory")
    check(factz.library_version() == factz.__version__,
          f"libfactz {factz.library_version()} != package {factz.__version__}")
    import factz_h5
    check(factz_h5.Field2D is factz.Field2D and factz_h5.PLUGIN_PATH == factz.PLUGIN_PATH,
          "factz_h5 must be the same helpers")


def check_h5py(factz, scratch):
    import h5py
    check(factz.is_available(), "the factz filter must be available after import factz")
    path = os.path.join(scratch, "data.h5")
    u, v = sample_field(48, 64, seed=3)
    uv = np.stack([u, v])
    aos = np.ascontiguousarray(np.stack([u, v], axis=-1))
    pos = sample_particles(seed=5, box=10.0)
    pos = pos[np.argsort(pos[:, 0], kind="stable")]  # chunks spatially disjoint
    eb_field, eb_pos, b, box = 2e-3, 1e-3, 0.2, 10.0
    with h5py.File(path, "w") as f:
        f.create_dataset("uv", data=uv, chunks=(2, 24, 32),
                         compression=factz.Field2D(abs=eb_field, mode="S"))
        f.create_dataset("uv_aos", data=aos, chunks=(16, 32, 2),
                         compression=factz.Field2D(abs=eb_field, mode="b", coder="huffman"))
        f.create_dataset("pos", data=pos, chunks=(500, 3),
                         compression=factz.Particles(b=b, abs=eb_pos, box=box))
    with h5py.File(path, "r") as f:
        for name in ("uv", "uv_aos", "pos"):
            d = f[name]
            check(str(factz.FILTER_ID) in d._filters, f"{name}: filter {factz.FILTER_ID} "
                  f"missing from {d._filters}")
            for k in range(d.id.get_num_chunks()):
                check(d.id.get_chunk_info(k).filter_mask == 0,
                      f"{name}: chunk {k} was stored without the filter")
            stored = sum(d.id.get_chunk_info(k).size for k in range(d.id.get_num_chunks()))
            check(stored < d.size * 4, f"{name}: {stored} bytes stored for {d.size * 4}: "
                  f"nothing was compressed")
        uv2, aos2, pos2 = f["uv"][...], f["uv_aos"][...], f["pos"][...]
    check(uv2.dtype == np.float32 and uv2.shape == uv.shape, "uv shape/dtype")
    check(not np.array_equal(uv2, uv), "uv came back bit-exact: was it compressed?")
    check(float(np.max(np.abs(uv2.astype(np.float64) - uv))) <= eb_field, "uv outside bound")
    check(float(np.max(np.abs(aos2.astype(np.float64) - aos))) <= eb_field,
          "uv_aos outside bound")
    check(float(np.max(np.abs(pos2.astype(np.float64) - pos))) <= eb_pos, "pos outside bound")
    want = brute_critical_points(u, v)
    check(len(want) >= 10, f"the sample field has only {len(want)} critical points")
    for name, (ru, rv) in (("uv", (uv2[0], uv2[1])), ("uv_aos", (aos2[..., 0], aos2[..., 1]))):
        got = brute_critical_points(np.ascontiguousarray(ru), np.ascontiguousarray(rv))
        check(got == want, f"{name}: critical points changed (independent check): "
              f"lost {sorted(set(want) - set(got))}, false {sorted(set(got) - set(want))}")
        cps = factz.critical_points(np.ascontiguousarray(ru), np.ascontiguousarray(rv))
        check(dict(zip(cps["cell"].tolist(), cps["type"].tolist())) == want,
              f"{name}: factz.critical_points disagrees with the independent check")
    links = brute_links(pos, b, box)
    check(len(links) > 500, f"only {len(links)} links in the sample particles")
    check(brute_links(pos2, b, box) == links, "pos: FoF links changed (independent check)")
    labels = factz.fof(pos2, b=b, box=box)
    check(np.array_equal(labels, brute_groups(len(pos), links)),
          "pos: factz.fof of the decoded particles differs from the brute-force groups")
    # C tools find the plugin through factz.PLUGIN_PATH
    h5dump = shutil.which("h5dump")
    check(h5dump is not None, "h5dump not found (scripts/setup installs hdf5-tools)")
    env = dict(os.environ, HDF5_PLUGIN_PATH=factz.PLUGIN_PATH)
    out = subprocess.run([h5dump, "-d", "/pos", "-s", "0,0", "-c", "1,3", path], env=env,
                         capture_output=True, text=True)
    check(out.returncode == 0, f"h5dump with HDF5_PLUGIN_PATH=factz.PLUGIN_PATH failed: "
          f"{out.stdout}{out.stderr}")
    nums = out.stdout.split("DATA {")[1].split("}")[0].split(":", 1)[1]
    vals = [float(t) for t in nums.replace(",", " ").split()]
    # h5dump prints 6 significant digits
    check(np.allclose(vals, pos2[0], rtol=1e-5, atol=1e-6), f"h5dump read {vals}, h5py {pos2[0]}")
    return path


def check_corrupt_chunk(scratch):
    """A dataset whose chunk bytes are damaged fails the read with an
    exception, not a crash."""
    import h5py
    import factz
    path = os.path.join(scratch, "corrupt.h5")
    u, v = sample_field(32, 32, seed=4)
    with h5py.File(path, "w") as f:
        f.create_dataset("uv", data=np.stack([u, v]), chunks=(2, 32, 32),
                         compression=factz.Field2D(abs=1e-3))
    with h5py.File(path, "r") as f:
        ci = f["uv"].id.get_chunk_info(0)
    with open(path, "r+b") as fh:
        fh.seek(ci.byte_offset + ci.size // 2)
        fh.write(bytes(64))
    with h5py.File(path, "r") as f:
        raises(OSError, lambda: f["uv"][...], "reading a damaged chunk")


def check_field_api(factz):
    u, v = sample_field(40, 56, seed=7)
    ny, nx = u.shape
    want = brute_critical_points(u, v)
    cps = factz.critical_points(u, v)
    check(cps.dtype.names == ("cell", "i", "j", "x", "y", "type"), f"fields {cps.dtype.names}")
    check(dict(zip(cps["cell"].tolist(), cps["type"].tolist())) == want,
          "factz.critical_points differs from the independent check")
    half = cps["cell"] % 2
    check(np.array_equal(cps["cell"], 2 * (cps["j"] * (nx - 1) + cps["i"]) + half),
          "critical point cell ids do not match i, j")
    check(bool(np.all((cps["x"] >= cps["i"]) & (cps["x"] <= cps["i"] + 1)
                      & (cps["y"] >= cps["j"]) & (cps["y"] <= cps["j"] + 1))),
          "critical point positions outside their cells")

    lo = min(float(u.min()), float(v.min()))
    hi = max(float(u.max()), float(v.max()))
    cases = [
        (dict(rel=1e-2, mode="b", coder="huffman", zstd=3), 1e-2 * (hi - lo), "b", "huffman", 3),
        (dict(abs=0.0123, mode="S"), 0.0123, "s", "rans", 0),
        (dict(), 1e-3 * (hi - lo), "s", "rans", 0),  # the CLI's defaults
    ]
    for kw, eb, mode, coder, zstd in cases:
        s = factz.compress_field(u, v, **kw)
        check(isinstance(s, bytes) and s[:4] == b"FACT", f"{kw}: not a factz stream")
        inf = factz.info(s)
        # the config struct's fields come back through the info struct
        check(inf["kind"] == "field2d" and inf["shape"] == (ny, nx), f"{kw}: info {inf}")
        check(abs(inf["abs_bound"] - eb) <= 1e-9 * eb, f"{kw}: bound {inf['abs_bound']} != {eb}")
        check((inf["mode"], inf["coder"], inf["zstd"]) == (mode, coder, zstd),
              f"{kw}: info says {inf}")
        u2, v2 = factz.decompress(s)
        check(u2.dtype == np.float32 and u2.shape == (ny, nx) and v2.shape == (ny, nx),
              f"{kw}: decompressed shape")
        err = max(float(np.max(np.abs(u2.astype(np.float64) - u))),
                  float(np.max(np.abs(v2.astype(np.float64) - v))))
        check(err <= inf["abs_bound"], f"{kw}: error {err} > bound {inf['abs_bound']}")
        check(brute_critical_points(u2, v2) == want, f"{kw}: critical points changed")
        r = factz.verify((u, v), s)
        check(r["lost"] == r["false"] == r["changed"] == 0 and r["ok"], f"{kw}: verify {r}")
        check(r["critical_points"] == len(want), f"{kw}: verify counts {r['critical_points']}")
        check(r["max_abs_error"] == err and r["within_bound"], f"{kw}: verify {r}")
        check(abs(r["ratio"] - 8.0 * ny * nx / len(s)) < 1e-12, f"{kw}: ratio {r['ratio']}")
        check(r["psnr"] > 20, f"{kw}: psnr {r['psnr']}")
    # chunk / verify flags come back too, and the report struct agrees
    s, rep = factz.compress_field(u, v, abs=0.02, chunk=True, verify=True, report=True)
    inf = factz.info(s)
    check(inf["chunk"] and inf["verified"], f"flags: {inf}")
    check(rep["abs_bound"] == inf["abs_bound"] == 0.02 and rep["verified"]
          and not rep["lossless_fallback"] and not rep["ran_on_gpu"], f"report {rep}")
    # chunk: the perimeter (2 (ny + nx) - 4 vertices) is stored exactly
    check(2 * (ny + nx) - 4 <= rep["exact_vertices"] < ny * nx, f"report {rep}")
    # non-finite values come back bit-exact
    un = u.copy()
    un[3, 4], un[10, 11] = np.nan, np.inf
    un2, _ = factz.decompress(factz.compress_field(un, v, abs=1e-2))
    check(np.isnan(un2[3, 4]) and un2[10, 11] == np.inf, "non-finite values not kept")
    # layouts: Fortran-ordered and non-contiguous inputs are copied, same stream
    s = factz.compress_field(u, v, abs=1e-2)
    check(factz.compress_field(np.asfortranarray(u), np.asfortranarray(v), abs=1e-2) == s,
          "a Fortran-ordered copy gives another stream")
    big = np.zeros((ny, 2 * nx), np.float32)
    big[:, ::2] = u
    check(factz.compress_field(big[:, ::2], v, abs=1e-2) == s, "a strided view differs")
    check(factz.compress_field(u.astype(">f4"), v, abs=1e-2) == s, "big-endian input differs")

    # verify can fail: a reconstruction with a moved critical point and an error
    u2, v2 = factz.decompress(s)
    cell = int(cps["cell"][0])
    jj, ii = divmod(cell // 2, nx - 1)
    bad_u = u2.copy()
    bad_u[jj:jj + 2, ii:ii + 2] += 10.0  # u > 0 on the whole cell: its point is lost
    bad_v = v2.copy()
    r = factz.verify((u, v), (bad_u, bad_v), abs=1e-2)
    got = brute_critical_points(bad_u, bad_v)
    lost = len(set(want) - set(got))
    false = len(set(got) - set(want))
    changed = sum(1 for c in want if c in got and got[c] != want[c])
    check(lost + false + changed > 0, "the damage did not change any critical point")
    check((r["lost"], r["false"], r["changed"]) == (lost, false, changed),
          f"verify says {r['lost']}/{r['false']}/{r['changed']}, brute force "
          f"{lost}/{false}/{changed}")
    check(r["within_bound"] is False and not r["ok"] and r["max_abs_error"] >= 9.9,
          f"verify missed the error: {r}")

    # misuse
    raises(TypeError, lambda: factz.compress_field(u.astype(np.float64), v), "float64 u",
           "float32")
    raises(TypeError, lambda: factz.compress_field(u.tolist(), v), "a list", "numpy")
    raises(TypeError, lambda: factz.critical_points(u.astype(np.int32), v), "int32", "float32")
    raises(ValueError, lambda: factz.compress_field(u, v[:, :-1]), "shapes differ", "shape")
    raises(ValueError, lambda: factz.compress_field(u[None], v[None]), "3-D", "2-D")
    raises(ValueError, lambda: factz.compress_field(u, v, abs=-1.0), "negative bound", "abs")
    raises(ValueError, lambda: factz.compress_field(u, v, abs=1, rel=1), "two bounds", "one")
    raises(ValueError, lambda: factz.compress_field(u, v, mode="x"), "mode", "mode")
    raises(ValueError, lambda: factz.compress_field(u, v, zstd=99), "zstd", "zstd")
    e = raises(factz.Error, lambda: factz.compress_field(u[:0], v[:0]), "empty field", "empty")
    check(e.status == 4001, f"empty field: status {e.status}")
    return s


def check_field_f64(factz):
    """float64 fields through compress_field and decompress: float64 back,
    every value within the bound (fractions), every critical point kept
    (exact brute force), in modes S and B."""
    ny, nx = 23, 31
    u32, v32 = sample_field(ny, nx, 5)
    rng = np.random.default_rng(9)
    u = u32.astype(np.float64) * (1 + 1e-10 * rng.standard_normal((ny, nx)))
    v = v32.astype(np.float64) * (1 + 1e-10 * rng.standard_normal((ny, nx)))
    want = brute_critical_points(u, v)
    check(len(want) > 0, "the float64 sample field has critical points")
    for coder, mode in (("rans", "s"), ("huffman", "s"), ("rans", "b")):
        what = f"f64 {coder} mode {mode}"
        stream, rep = factz.compress_field(u, v, abs=1e-3, coder=coder, mode=mode, report=True)
        check(factz.info(stream)["dtype"] == "float64", f"{what}: info dtype")
        u2, v2 = factz.decompress(stream)
        check(u2.dtype == np.float64 and u2.shape == (ny, nx) and v2.shape == (ny, nx),
              f"{what}: decompressed dtype/shape")
        eb = Fraction(1e-3)
        bad = sum(abs(Fraction(float(a)) - Fraction(float(b))) > eb
                  for x, y in ((u, u2), (v, v2)) for a, b in zip(x.ravel(), y.ravel()))
        check(bad == 0, f"{what}: {bad} values outside the bound")
        got = brute_critical_points(u2, v2)
        check(got == want, f"{what}: critical points differ ({len(got)} vs {len(want)})")
    cps = factz.critical_points(u, v)
    check(dict(zip(cps["cell"].tolist(), cps["type"].tolist())) == want,
          "f64 critical_points differ from brute force")
    stream = factz.compress_field(u, v, rel=1e-2)
    m = factz.verify((u, v), stream)
    check(m["ok"] and m["critical_points"] == len(want), f"f64 verify of a stream: {m}")
    check(abs(m["ratio"] - 16 * ny * nx / len(stream)) < 1e-9, f"f64 verify ratio {m['ratio']}")
    # -u flips every Jacobian's determinant: every critical point changes type
    m = factz.verify(np.stack([u, v]), np.stack([-u, v]))
    check(not m["ok"] and m["changed"] == len(want), f"f64 verify of -u: {m}")
    raises(TypeError, lambda: factz.verify((u, v), (u32, v32)), "f64 against f32", "float64")
    f32_stream = factz.compress_field(u32, v32)
    check(factz.info(f32_stream)["dtype"] == "float32", "f32 info dtype")


def _nudge(x, ulps):
    """x moved by `ulps` units in the last place (of float64)."""
    for _ in range(abs(ulps)):
        x = np.nextafter(x, np.inf if ulps > 0 else -np.inf)
    return x


def sample_particles_f64(seed, b, box):
    """Clusters of float64 particles whose coordinates use all 53 bits, and
    every fifth particle a partner of the previous one at distance b plus or
    minus a few ulps (along x, or across the periodic boundary in a box), so
    that links are decided by the last bits. Open boundaries: around 1e6
    (where float32 spacing is 1/16); in a box: in [0, box)."""
    rng = np.random.default_rng(seed)
    n = 1500
    xyz = np.empty((n, 3), dtype=np.float64)
    offset = 0.0 if box else 1e6
    for k in range(n):
        if k % 5 == 4:
            q = xyz[k - 1]
            p = q.copy()
            ulps = int(rng.integers(-3, 4))
            if box and k % 10 == 9:
                # across the boundary at x = 0: q at x in [0, b), p near box
                q[0] = 0.5 * b * rng.uniform()
                p[0] = _nudge(q[0] - b + box, ulps)
            else:
                p[0] = _nudge(q[0] + b, ulps)
            xyz[k] = p
            continue
        c = k // 50
        centre = offset + np.array([0.05 * (c % 7) + 0.3, 0.07 * (c % 5) + 0.3,
                                    0.03 * (c % 11) + 0.3])
        xyz[k] = centre + 1.2 * b * rng.uniform(size=3)
    return xyz


def check_particles_f64(factz):
    """float64 particles: compress_particles, decompress (float64 back),
    info's dtype, fof, linking_length, verify, on sets where float32 would
    change the links; every coordinate within the bound (fractions), the
    link set and FoF groups equal to the float64 brute force; the refusals."""
    b = 0.01
    for box in (None, 2.0):
        name = f"f64 box={box}"
        xyz = sample_particles_f64(31 if box else 17, b, box)
        n = len(xyz)
        check(not np.array_equal(xyz.astype(np.float32).astype(np.float64), xyz),
              f"{name}: the coordinates are float32 values")
        links = brute_links_f64(xyz, b, box or 0.0)
        check(len(links) > 1000, f"{name}: only {len(links)} links")
        check(brute_links(xyz.astype(np.float32), b, box or 0.0) != links,
              f"{name}: float32 rounding keeps the links: float64 does not matter here")
        partners = [(k - 1, k) for k in range(4, n, 5)]
        near = sum((a, c) in links for a, c in partners)
        check(0 < near < len(partners), f"{name}: the pairs at b +- ulps are all linked or all "
              f"not ({near} of {len(partners)})")
        groups = brute_groups(n, links)
        labels = factz.fof(xyz, b=b, box=box)
        check(labels.dtype == np.uint32 and np.array_equal(labels, groups),
              f"{name}: factz.fof differs from the brute-force groups")
        check(np.array_equal(factz.fof(np.asfortranarray(xyz), b=b, box=box), groups),
              f"{name}: fof of a Fortran-ordered copy")
        # eta: the library's formula on the doubles (V the box's or the
        # bounding box's volume), the same b the compressor records
        if box:
            vol = box * box * box
        else:
            ext = xyz.max(axis=0) - xyz.min(axis=0)
            vol = float(ext[0]) * float(ext[1]) * float(ext[2])
        eta_b = factz.linking_length(xyz, eta=0.2, box=box)
        check(abs(eta_b - 0.2 * (vol / n) ** (1 / 3)) <= 1e-12 * eta_b,
              f"{name}: eta linking length {eta_b}")
        check(factz.linking_length(xyz, b=b) == b, f"{name}: linking_length with b")
        s = factz.compress_particles(xyz, eta=0.2, abs=1e-4, box=box)
        check(factz.info(s)["linking_length"] == eta_b,
              f"{name}: eta: stream's b {factz.info(s)['linking_length']} != {eta_b}")
        lo, hi = float(xyz.min()), float(xyz.max())
        for kw in (dict(abs=2e-4), dict(abs=3e-6, coder="huffman", zstd=3),
                   dict(rel=1e-5)):
            what = f"{name} {kw}"
            s, rep = factz.compress_particles(xyz, b=b, box=box, report=True, **kw)
            inf = factz.info(s)
            eb = kw["abs"] if "abs" in kw else kw["rel"] * (hi - lo)
            check(inf["kind"] == "particles" and inf["dtype"] == "float64" and inf["n"] == n,
                  f"{what}: info {inf}")
            check(abs(inf["abs_bound"] - eb) <= 1e-9 * eb and inf["linking_length"] == b
                  and inf["box"] == box, f"{what}: info {inf}")
            check(rep["abs_bound"] == inf["abs_bound"] and not rep["ran_on_gpu"]
                  and rep["source"] == inf["source"], f"{what}: report {rep}")
            x2 = factz.decompress(s)
            check(x2.dtype == np.float64 and x2.shape == (n, 3), f"{what}: decompressed "
                  f"{x2.dtype} {x2.shape}")
            check(not np.array_equal(x2, xyz), f"{what}: came back bit-exact: was it compressed?")
            bound = Fraction(inf["abs_bound"])
            bad = sum(abs(Fraction(float(r)) - Fraction(float(o))) > bound
                      for r, o in zip(x2.ravel(), xyz.ravel()))
            check(bad == 0, f"{what}: {bad} coordinates outside the bound")
            got = brute_links_f64(x2, b, box or 0.0)
            check(got == links, f"{what}: links changed (independent check): "
                  f"{len(links - got)} broken, {len(got - links)} false")
            check(np.array_equal(factz.fof(x2, b=b, box=box), groups),
                  f"{what}: FoF groups of the reconstruction")
            r = factz.verify(xyz, s)
            check(r["ok"] and r["broken_links"] == 0 and r["false_links"] == 0
                  and r["halos_identical"] and r["within_bound"] and r["links"] == len(links)
                  and r["nonfinite_changed"] == 0, f"{what}: verify {r}")
            check(r["linking_length"] == b and r["box"] == box, f"{what}: verify {r}")
            check(abs(r["ratio"] - 24.0 * n / len(s)) < 1e-12, f"{what}: ratio {r['ratio']}")
            check(r["ratio"] > 1.0, f"{what}: ratio {r['ratio']}")

        # verify sees a broken link (and a coordinate out of the bound)
        bad_x = x2.copy()
        a, c = sorted(links)[len(links) // 2]
        bad_x[a, 1] += 0.25
        got = brute_links_f64(bad_x, b, box or 0.0)
        r = factz.verify(xyz, bad_x, b=b, box=box)
        check(len(links - got) > 0, f"{name}: the damage broke no link")
        check((r["broken_links"], r["false_links"]) == (len(links - got), len(got - links)),
              f"{name}: verify says {r['broken_links']}/{r['false_links']}, brute force "
              f"{len(links - got)}/{len(got - links)}")
        check(not r["ok"] and not r["halos_identical"] and r["links"] == len(links),
              f"{name}: verify missed the damage: {r}")
        r = factz.verify(xyz, x2, b=b, box=box, abs=float(np.max(np.abs(x2 - xyz))))
        check(r["ok"] and r["within_bound"], f"{name}: verify at the reached error: {r}")

    # within_bound is exact where the double difference rounds to the bound:
    # x = -+1e-22 and its reconstruction eb are eb +- 1e-22 apart
    eb = 1e-4
    for x, want in ((-1e-22, False), (1e-22, True)):
        xyz = sample_particles_f64(17, b, None)
        xyz[0, 0] = x
        near = xyz.copy()
        near[0, 0] = eb
        check(near[0, 0] - xyz[0, 0] == eb
              and (abs(Fraction(eb) - Fraction(x)) <= Fraction(eb)) == want,
              "the test's near-bound value")
        r = factz.verify(xyz, near, b=b, abs=eb)
        check(r["within_bound"] is want and r["ok"] is want,
              f"exact bound, x = {x}: within {r['within_bound']}, fractions say {want}")

    # non-finite coordinates: kept bit for bit, compared as 64-bit patterns
    xyz = sample_particles_f64(17, b, None)
    xyz[3, 1] = np.inf
    nan = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]
    xyz[7, 2] = nan
    s = factz.compress_particles(xyz, b=b, abs=1e-4)
    x2 = factz.decompress(s)
    check(x2[3, 1] == np.inf and x2.view(np.uint64)[7, 2] == 0x7FF8000000000001,
          "f64 non-finite coordinates not kept bit for bit")
    r = factz.verify(xyz, s)
    check(r["ok"] and r["nonfinite_changed"] == 0, f"f64 non-finite: verify {r}")
    other = x2.copy()
    other.view(np.uint64)[7, 2] = 0x7FF8000000000002  # another NaN, low bits only
    r = factz.verify(xyz, other, b=b, abs=1e-4)
    check(r["nonfinite_changed"] == 1 and not r["ok"], f"f64 NaN payload change: verify {r}")

    # refusals
    xyz = sample_particles_f64(17, b, None)
    e = raises(ValueError, lambda: factz.compress_particles(xyz, b=b, abs=1e-4, base="sz3"),
               "f64 base sz3", "built-in or ZFP")
    check("float64" in str(e), f"f64 base sz3: message {e}")
    # ZFP takes float64 where libfactz has it, and keeps every link
    try:
        s = factz.compress_particles(xyz, b=b, abs=1e-4, base="zfp")
    except factz.Error as e:
        check("zfp" in str(e), f"f64 base zfp: message {e}")
    else:
        x2 = factz.decompress(s)
        check(x2.dtype == np.float64 and factz.info(s)["source"] in ("zfp", "lossless"),
              f"f64 base zfp: {x2.dtype} {factz.info(s)}")
        check(brute_links_f64(x2, b, 0.0) == brute_links_f64(xyz, b, 0.0),
              "f64 base zfp: links changed (independent check)")
        check(float(np.max(np.abs(x2 - xyz))) <= 1e-4, "f64 base zfp: out of the bound")
    raises(factz.Error, lambda: factz.compress_particles(xyz, b=b, backend="cuda"),
           "f64 backend cuda")
    s = factz.compress_particles(xyz, b=b, abs=1e-4)
    raises(TypeError, lambda: factz.verify(xyz, factz.decompress(s).astype(np.float32), b=b),
           "f32 reconstruction of an f64 original", "float64")
    raises(TypeError, lambda: factz.verify(xyz.astype(np.float32), s),
           "f64 stream against an f32 original", "float32")
    for fn, what in ((lambda a: factz.compress_particles(a, b=b), "compress_particles"),
                     (lambda a: factz.fof(a, b=b), "fof"),
                     (lambda a: factz.linking_length(a, eta=0.2), "linking_length")):
        raises(TypeError, lambda: fn(xyz.astype(np.int64)), f"{what} of int64", "float32")
        raises(TypeError, lambda: fn((xyz - 1e6).astype(np.float16)), f"{what} of float16",
               "float64")
    f32 = factz.compress_particles(xyz.astype(np.float32) - np.float32(1e6), b=b)
    check(factz.info(f32)["dtype"] == "float32"
          and factz.decompress(f32).dtype == np.float32, "f32 particle stream dtype")
    empty = factz.compress_particles(np.zeros((0, 3)), b=b)
    check(factz.info(empty)["dtype"] == "float64"
          and factz.decompress(empty).shape == (0, 3)
          and factz.decompress(empty).dtype == np.float64, "no float64 particles")


def check_corrupt_streams(factz, field_stream, particle_stream):
    for name, s in (("field", field_stream), ("particles", particle_stream)):
        bad = bytearray(s)
        mid = len(bad) // 2
        bad[mid:mid + 8] = bytes(b ^ 0x5A for b in bad[mid:mid + 8])
        e = raises(factz.Error, lambda: factz.decompress(bytes(bad)), f"{name}: flipped bytes")
        check(e.status == 4003 and str(e), f"{name}: flipped bytes gave status {e.status}")
        for cut in (len(s) - 1, len(s) // 3, 10, 0):
            e = raises(factz.Error, lambda: factz.decompress(s[:cut]), f"{name}: cut at {cut}")
            check(e.status == 4003, f"{name}: cut at {cut}: status {e.status}")
    e = raises(factz.Error, lambda: factz.decompress(b"not a factz stream at all, really"),
               "garbage", "factz")
    check(e.status == 4003, f"garbage: status {e.status}")
    raises(TypeError, lambda: factz.decompress("FACT..."), "str stream", "bytes")
    raises(TypeError, lambda: factz.decompress(12345), "int stream", "bytes")


def check_particle_api(factz):
    box, b = 10.0, 0.2
    xyz = sample_particles(seed=11, box=box)
    n = len(xyz)
    links = brute_links(xyz, b, box)
    groups = brute_groups(n, links)
    labels = factz.fof(xyz, b=b, box=box)
    check(labels.dtype == np.uint32 and np.array_equal(labels, groups),
          "factz.fof differs from the brute-force groups")
    hl, hs = factz.halos(labels, min_members=10)
    want = sorted(((int(c), int(g)) for g, c in zip(*np.unique(groups, return_counts=True))
                   if c >= 10), key=lambda t: (-t[0], t[1]))
    check(list(zip(hs.tolist(), hl.tolist())) == want, "factz.halos differs from brute force")
    check(len(want) >= 10, f"only {len(want)} halos in the sample")
    eta_b = factz.linking_length(xyz, eta=0.2, box=box)
    check(abs(eta_b - 0.2 * (box ** 3 / n) ** (1 / 3)) < 1e-9, f"eta linking length {eta_b}")

    cases = [
        (dict(b=b, abs=1e-3, box=box, coder="huffman", zstd=4, edit_bits=12),
         1e-3, b, box, "huffman", 4, 12),
        (dict(b=b, rel=1e-4, box=box), 1e-4 * (float(xyz.max()) - float(xyz.min())), b, box,
         "rans", 0, 16),
        (dict(eta=0.2, abs=2e-3), 2e-3, None, None, "rans", 0, 16),  # open boundaries
    ]
    stream = None
    for kw, eb, bb, bx, coder, zstd, bits in cases:
        s = factz.compress_particles(xyz, **kw)
        inf = factz.info(s)
        blen = bb if bb is not None else factz.linking_length(xyz, eta=0.2)
        check(inf["kind"] == "particles" and inf["n"] == n, f"{kw}: info {inf}")
        check(abs(inf["abs_bound"] - eb) <= 1e-9 * eb, f"{kw}: bound {inf['abs_bound']} != {eb}")
        check(abs(inf["linking_length"] - blen) <= 1e-12 * blen and inf["box"] == bx,
              f"{kw}: linking length / box {inf}")
        check((inf["coder"], inf["zstd"], inf["edit_bits"]) == (coder, zstd, bits),
              f"{kw}: info {inf}")
        s2, rep = factz.compress_particles(xyz, **kw, report=True)
        check(s2 == s, f"{kw}: the report changed the stream")
        check(rep["abs_bound"] == inf["abs_bound"] and rep["linking_length"] == inf[
            "linking_length"] and rep["source"] == inf["source"], f"{kw}: report {rep}, info {inf}")
        check(0 < rep["base_bytes"] + rep["correction_bytes"] < len(s)
              and rep["violated_after"] <= rep["vulnerable_pairs"]
              and rep["exact_particles"] <= n and not rep["ran_on_gpu"], f"{kw}: report {rep}")
        x2 = factz.decompress(s)
        check(x2.dtype == np.float32 and x2.shape == (n, 3), f"{kw}: decompressed shape")
        err = float(np.max(np.abs(x2.astype(np.float64) - xyz)))
        check(err <= inf["abs_bound"], f"{kw}: error {err} > {inf['abs_bound']}")
        check(brute_links(x2, blen, bx or 0.0) == brute_links(xyz, blen, bx or 0.0),
              f"{kw}: links changed (independent check)")
        r = factz.verify(xyz, s)
        check(r["ok"] and r["broken_links"] == 0 and r["false_links"] == 0
              and r["halos_identical"], f"{kw}: verify {r}")
        check(r["links"] == len(brute_links(xyz, blen, bx or 0.0)), f"{kw}: links {r['links']}")
        check(abs(r["ratio"] - 12.0 * n / len(s)) < 1e-12, f"{kw}: ratio")
        if stream is None:
            stream = s

    # verify can fail: move a linked particle far away and another next to a stranger
    x2 = factz.decompress(stream)
    bad = x2.copy()
    a, c = next(iter(sorted(links)))
    bad[a] = np.mod(bad[a] + np.float32(box / 2), box)
    far = int(np.argmax(np.linalg.norm(xyz - xyz[0], axis=1)))
    bad[far] = bad[0] + np.float32(b / 4)
    got = brute_links(bad, b, box)
    r = factz.verify(xyz, bad, b=b, box=box, abs=1e-3)
    check((r["broken_links"], r["false_links"]) == (len(links - got), len(got - links)),
          f"verify says {r['broken_links']}/{r['false_links']} links, brute force "
          f"{len(links - got)}/{len(got - links)}")
    check(r["broken_links"] > 0 and r["false_links"] > 0 and not r["halos_identical"]
          and not r["ok"] and r["within_bound"] is False, f"verify missed the damage: {r}")

    # misuse
    raises(TypeError, lambda: factz.compress_particles(xyz.astype(np.int32), b=b), "int32",
           "float32")
    raises(ValueError, lambda: factz.compress_particles(xyz[:, :2], b=b), "(n, 2)", "(n, 3)")
    raises(ValueError, lambda: factz.compress_particles(xyz.ravel(), b=b), "1-D", "(n, 3)")
    raises(ValueError, lambda: factz.fof(xyz, b=0.0), "b = 0", "b")
    raises(ValueError, lambda: factz.compress_particles(xyz, b=b, eta=0.2), "b and eta", "not both")
    e = raises(factz.Error, lambda: factz.compress_particles(xyz, b=6.0, box=box),
               "b > box / 2", "half the periodic box")
    check(e.status == 4001, f"b > box/2: status {e.status}")
    e = raises(factz.Error, lambda: factz.fof(xyz, b=6.0, box=box), "fof b > box / 2")
    check(e.status == 4001, f"fof b > box/2: status {e.status}")
    raises(TypeError, lambda: factz.halos(labels.astype(np.float32)), "float labels", "integer")
    raises(ValueError, lambda: factz.halos(labels + np.uint32(n)), "labels >= n", "0..n-1")
    empty = factz.compress_particles(np.zeros((0, 3), np.float32), b=b)
    check(factz.decompress(empty).shape == (0, 3), "no particles")
    return stream


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: package_check.py SCRATCH_DIR")
    scratch = sys.argv[1]
    import factz  # noqa: the package under test, from the virtual environment
    check_environment(factz)
    check_h5py(factz, scratch)
    check_corrupt_chunk(scratch)
    fs = check_field_api(factz)
    check_field_f64(factz)
    ps = check_particle_api(factz)
    check_particles_f64(factz)
    check_corrupt_streams(factz, fs, ps)
    print(f"package_check: {CHECKS} checks passed (factz {factz.__version__} from "
          f"{os.path.dirname(factz.__file__)})")


if __name__ == "__main__":
    main()
