//! Usage texts (`factz --help`, `factz help CMD`, `factz CMD --help`).

pub const MAIN: &str = "\
factz: error-bounded compression that keeps every critical point of a 2D vector
field and every friends-of-friends link (so every halo) of a particle set

Usage:
  factz compress   --kind field2d --shape NY,NX [--layout soa|aos] [--mode b|s]
                   [--abs X | --rel X] [--coder huffman|rans] [--zstd LEVEL]
                   [--chunk] [--verify] [--backend cpu|cuda|auto] IN.f32 OUT.fz
  factz compress   --kind particles [--count N] [--layout aos|soa]
                   [--abs X | --rel X] [--b B | --eta E] [--box L]
                   [--base builtin|sz3|zfp] [--coder huffman|rans] [--zstd LEVEL]
                   [--chunk] [--verify] [--method auto|correct|safe] [--edit-bits M]
                   [--max-iters K] [--backend cpu|cuda|auto] [--dtype f32|f64]
                   IN.f32 OUT.fz
  factz decompress IN.fz OUT.f32 [--vtk OUT.vti|OUT.vtp]
  factz cps        FIELD.f32|IN.fz [--shape NY,NX] [--json] [--vtk OUT.vtp]
  factz verify     ORIG.f32 IN.fz|RECON.f32 [--kind field2d|particles] [shape flags]
                   [--abs X | --rel X] [--json]
  factz inspect    IN.fz [--json]
  factz bench      [--kind field2d|particles] [IN.f32 ...] [--rel LIST] [--json] ...
  factz correct    ORIG.f32 DECODED.f32 OUT.fz [particle flags]   # bring your own compressor
  factz apply      OUT.fz DECODED.f32 FIXED.f32
  factz fof        IN.f32|IN.fz [--count N] [--b B | --eta E] [--box L]
                   [--min-members M] [--dtype f32|f64] [--labels OUT.u32] [--json]
  factz synth      --kind field2d|particles [--seed S] [...] OUT.f32   # sample data
  factz help CMD   details of one command

Data is raw little-endian float32, or float64 with --dtype f64 (a stream records
its own element type, and decompression gives it back). Fields: SoA (all u, then all v) or AoS ((u, v)
per vertex), row-major NY x NX with x fastest. Particles: AoS (x, y, z per
particle, the default) or SoA (all x, all y, all z). Defaults: --rel 1e-3,
--eta 0.2 (b = 0.2 x the mean separation). `-` reads stdin / writes
stdout. Exit status 0 on success; otherwise a one-line `factz: ...` message on
stderr (status 2: usage error; 1: any other failure).
";

pub const COMPRESS: &str = "\
factz compress: compress a 2D vector field or particle positions

Usage:
  factz compress --kind field2d --shape NY,NX [options] IN.f32 OUT.fz
  factz compress --kind particles [--count N] [options] IN.f32 OUT.fz
  factz compress ... --dtype f64 IN.f64 OUT.fz

Options (both kinds):
  --kind field2d|particles  what the input holds (default field2d)
  --abs X               absolute error bound
  --rel X               error bound relative to the value range (both components /
                        all coordinates; default 1e-3)
  --coder huffman|rans  entropy coder (default rans)
  --zstd LEVEL          zstd stage on top, 1..22; 0 = off (default)
  --chunk               the data is one chunk of a larger set: fields keep their
                        border exact; particles keep exact those within
                        b + 2 sqrt(3) xi of the bounding box's faces
  --verify              decode and re-check before writing (fallback: lossless)
  --backend cpu|cuda|auto  where the work runs (default cpu): cuda runs the
                        kernels on the GPU (fields: both modes; particles: the
                        pair search and the optimiser) and fails when no GPU,
                        driver or NVRTC is usable; auto falls back to the CPU.
                        The stream is the same bytes on either. Needs a factz
                        built with the cargo feature cuda
  -v, --verbose         print a summary line on stderr (with the backend that ran)

Field options:
  --shape NY,NX         grid rows (y) and columns (x); required
  --layout soa|aos      soa: all u then all v (default); aos: (u, v) interleaved
  --mode b|s            b: block-wise analytic bounds (fast); s: speculative (default, best ratio)
  --dtype f32|f64       element type of IN (little-endian; default f32). f64
                        compresses on the CPU in either mode, with the same
                        guarantee (exact f64 critical-point tests; mode B's
                        bounds allow for the rounding of f64 products)

Particle options (every friends-of-friends link keeps its status):
  --count N             number of particles; when omitted it is the file size / 12
                        (which must then be a multiple of 12 bytes; 24 for f64)
  --dtype f32|f64       element type of IN (little-endian; default f32). f64
                        positions keep their links by f64 distances and their
                        bound in f64; they compress with --base builtin or zfp
                        on the CPU (sz3 and --backend cuda take f32 only)
  --layout aos|soa      aos: (x, y, z) per particle (default); soa: all x, all y, all z
  --b B                 linking length: a pair is linked when its distance is <= B
  --eta E               linking length E x (V/N)^(1/3), V the box's or the bounding
                        box's volume (default: eta 0.2)
  --box L               periodic box of side L (minimum-image distances); default open
  --base builtin|sz3|zfp  base compressor before the link correction (default builtin;
                        sz3 and zfp when built with those cargo features; sz3
                        takes f32 only)
  --method auto|correct|safe  how links are kept (default auto): safe moves
                        the particles of pairs the base changed to within their
                        own radius, inside which none of their links can change
                        (a few passes, no optimiser); correct edits them with an
                        optimiser (slower, much slower at loose bounds); auto
                        runs safe, and also correct where the base changed pairs
                        of at most 1% of the particles, and keeps the smaller
                        stream; where the bound exceeds about b / (2 sqrt 3) it
                        secures every particle at once (a few % of ratio, far
                        faster). The stream records the method; any decoder reads it
  --edit-bits M         bits per correction edit, 2..24 (default 16)
  --max-iters K         optimiser iterations before the exact-storage fallback (default 1000)

IN may be `-` (stdin) and OUT may be `-` (stdout). Decompression gives the data
back in the layout it came in. The -v summary of particles gives the ratio,
bits/particle, vulnerable pairs, pairs violated before correction, iterations,
particles stored exactly and edited coordinates.
";

pub const DECOMPRESS: &str = "\
factz decompress: decompress a stream to raw float32 (or float64)

Usage:
  factz decompress IN.fz OUT.f32 [--layout soa|aos] [--vtk OUT.vti|OUT.vtp]

Works for field and particle streams (the header says which). A float64 stream
(field or particles) writes float64 values. Writes the layout
the data came in (recorded in the stream) unless --layout overrides it. IN and
OUT may be `-`. A particle correction stream (from `factz correct`) is not a
complete stream: use `factz apply`.

--vtk also writes the data for ParaView / VisIt / TTK (VTK XML, raw appended
arrays): a field as ImageData (.vti; vertex (i, j) at (i, j, 0), point array
`vector` = (u, v, 0)), particles as PolyData points (.vtp; float32 particle
streams only: a float64 one is refused rather than rounded). `factz cps --vtk`
writes the field's critical points to overlay on it.
";

pub const VERIFY: &str = "\
factz verify: check a reconstruction against its original

Usage:
  factz verify ORIG.f32 IN.fz [--layout soa|aos] [--abs X | --rel X] [--json]
  factz verify ORIG.f32 RECON.f32 --shape NY,NX [--layout soa|aos] [--abs X | --rel X] [--json]
  factz verify ORIG.f64 IN.fz|RECON.f64 --dtype f64 ...
  factz verify ORIG.f32 IN.fz|RECON.f32 ... --plot OUT.png [--against OTHER.f32] [--plot-size PX]
  factz verify ORIG.f32 IN.fz [--b B | --eta E] [--box L] [--min-members M] [...]
  factz verify ORIG.f32 RECON.f32 --kind particles [--count N] [--layout aos|soa]
               [--b B | --eta E] [--box L] [--abs X | --rel X] [--min-members M] [--json]
  factz verify ORIG.f64 IN.fz|RECON.f64 --kind particles --dtype f64 ...

Fields: reports critical points lost (P1), spurious (P2) and with a changed type
(P3), the maximum error against the bound, PSNR and, for a stream, the ratio and
bit rate. With a stream the shape and layout come from it; with a raw
reconstruction --shape is required (both files in the same --layout, default
soa). Raw fields are float32 unless --dtype f64 says float64 (a stream says its
own element type; ORIG, RECON and --against share it). Exits with status 1 if P1 + P2 + P3 > 0 or a value exceeds the bound (or a
non-finite value changed).

--plot OUT.png draws the original and the reconstruction side by side (field
magnitude on one colour scale, shaded by a line-integral-convolution texture;
y up) with their critical points coloured by type, and marks on the
reconstruction every critical point lost (red cross), false (magenta square) or
with a changed type (yellow square). --against OTHER (raw float32 in ORIG's
shape and layout, e.g. SZ3's or ZFP's output at the same bound, or a field
stream) adds a third panel, marked the same way. --plot-size PX sets a panel's
larger side (default 520; small fields are magnified at most 16x).

Particles (a particle stream, or --kind particles): reports friends-of-friends
links broken and false, the Matthews correlation over the vulnerable pairs,
whether the FoF partition is identical, halos of at least M members (default
20) and the mass function's relative error, the maximum error against the
bound, PSNR and, for a stream, the ratio and bits/particle. With a stream the
count, layout, linking length, box and bound default to what it records; with
raw positions --b/--eta (default eta 0.2) and --box describe the links, and
both files share --layout (default aos). Positions are float32 unless --dtype
f64 says float64 (a stream says its own; ORIG, RECON and --against share it,
and a --dtype that contradicts the stream is a usage error); links, halos and
errors are computed on the values in their own type, and the ratio counts 8
bytes a coordinate for f64. Exits with status 1 if a link changed
or a coordinate exceeds the bound (or a non-finite value changed). --plot draws
the x-y projection of the original and of each reconstruction (density, halo
members coloured by FoF group), marks every broken link (red) and false link
(magenta) at the pair's middle (crosses and squares, dots when over 500), and
overlays the cumulative halo mass functions; --against and --plot-size as for
fields.

The bound is --abs/--rel when given, else the one the stream records; without
either no bound is checked. One of the two inputs may be `-`.
";

pub const INSPECT: &str = "\
factz inspect: print a stream's header, sections and parameters

Usage:
  factz inspect IN.fz [--json]

For particle streams: the particle count, element type (f32 or f64) and
layout, what made the base
positions (lossless, a base compressor, or an external one for a correction
stream), the absolute bound, the linking length, the box, the edit width and
the sections.
";

pub const BENCH: &str = "\
factz bench: compression ratio, accuracy, features and speed against baselines

Usage:
  factz bench [IN.f32 ...] [options]
  factz bench --kind particles IN.f32 ... [options]

Fields: without inputs, a deterministic synthetic field (a sum of random Fourier
modes) of --shape is used. Inputs are raw float32 fields of --shape, or files
whose sidecar (IN.json next to IN.f32, as `factz synth` writes) gives the shape.
--dtype f64 reads them as float64 (the synthetic field widened) and runs both
factz modes and every baseline on the float64 values.

Options:
  --kind field2d|particles  what the inputs hold (default field2d)
  --shape NY,NX         shape of the inputs / the synthetic field (default 1024,1024)
  --layout soa|aos      layout of the inputs (default soa; particles aos)
  --dtype f32|f64       element type of the inputs (default f32); f64 runs factz
                        and every baseline that takes it on the doubles
                        (particles: not the sz3 base)
  --rel LIST            relative bounds, comma-separated (default 1e-2,1e-3,1e-4;
                        particles 1e-3,1e-4,1e-5,1e-6)
  --mode LIST           modes to run (default b,s)
  --coder LIST          coders to run (default huffman,rans; particles rans)
  --zstd LEVEL          zstd stage for factz (default 0 = off)
  --repeat N            best of N timings (default 3; particles 1)
  --threads N           worker threads (default: all cores, or RAYON_NUM_THREADS)
  --seed S              seed of the synthetic field (default 1)
  --json                machine-readable output

Particle options:
  --base LIST           base compressors (default: every one built in: builtin,
                        and sz3 / zfp with those cargo features; f64: not sz3)
  --count N             particles per input (default: the sidecar's shape, else
                        the file size / 12, or / 24 for f64)
  --b B | --eta E       linking length (default: the sidecar's fof_b, else eta 0.2)
  --box L               periodic box side (default: the sidecar's box when it says
                        periodic, else open boundaries)
  --method LIST         of auto, correct, safe (default auto)
  --edit-bits M, --max-iters K, --min-members M   as for compress / verify

Baselines: zstd (lossless, level 3) always. Fields: SZ3 in absolute-bound mode and
ZFP in fixed-accuracy mode (tolerance = the bound; ZFP holds it only roughly: see
maxerr/eb) at the same bound, u and v concurrently, when factz was built with
`--features sz3` / `zfp`; a second table gives factz's ratio and speeds as
multiples of theirs. Particles: each base
compressor alone (builtin, and SZ3 and ZFP when built with those features; x, y
and z each as a 1D array) at each bound and at the loosest bound at which it
changes no link (searched), with the FoF links it breaks and makes; factz rows
give their time as a multiple of their base's alone (`x base`).
MB/s counts 1e6 bytes of input (float32, or float64 with --dtype f64) per second. The particle table follows
the cluster-preserving correction paper's Table II: vulnerable pairs, pairs
violated before correction, optimiser iterations, pairs violated after the
optimisation (then stored exactly: fallback particles), setup / optimisation /
check / total seconds, the ratio of the base compressor alone and with the
correction, the correction's overhead, bits/particle, and the links broken and
made as checked from scratch on the decoded positions.
";

pub const CORRECT: &str = "\
factz correct: a link-preserving correction for another compressor's output

Usage:
  factz correct ORIG.f32 DECODED.f32 OUT.fz [--count N] [--layout aos|soa]
                [--abs X | --rel X] [--b B | --eta E] [--box L]
                [--coder huffman|rans] [--zstd LEVEL] [--chunk]
                [--edit-bits M] [--max-iters K] [--dtype f32|f64] [-v]

Bring your own compressor: ORIG are the original positions, DECODED what your
compressor gave back for them (same particle order and layout). OUT holds only
the correction (edits and exactly stored particles); `factz apply OUT.fz
DECODED.f32 FIXED.f32` turns DECODED into positions that keep every
friends-of-friends link of ORIG and stay within the bound. Decoded coordinates
outside the bound (or non-finite) are corrected by exact storage. Defaults as
for compress (rel 1e-3, eta 0.2, aos). ORIG and DECODED are float32, or both
float64 with --dtype f64 (the stream records which). One of the inputs may be
`-`.
";

pub const APPLY: &str = "\
factz apply: apply a correction stream from `factz correct`

Usage:
  factz apply OUT.fz DECODED.f32 FIXED.f32 [--layout aos|soa] [--dtype f32|f64]

DECODED must be the very positions the correction was made for (checked by
checksum); its layout is the one the stream records unless --layout overrides
it. DECODED and FIXED have the element type the correction was made for (f32
or f64, recorded in the stream; --dtype, if given, must agree). FIXED is
written in the same layout. One of the inputs may be `-`, and
FIXED may be `-`.
";

pub const FOF: &str = "\
factz fof: friends-of-friends halo catalogue of particle positions

Usage:
  factz fof IN.f32 [--count N] [--layout aos|soa] [--b B | --eta E] [--box L]
            [--min-members M] [--top K] [--labels OUT.u32] [--json]
  factz fof IN.f64 --dtype f64 [...]
  factz fof IN.fz [...]

Links every pair at distance <= b (--b, or --eta E: b = E x (V/N)^(1/3), default
eta 0.2; --box L for a periodic box) and prints the number of groups, the halos
of at least M members (default 20), the K largest (default 10) with their sizes,
and the halo mass function over 50 logarithmic bins of member count from M to
the largest halo. --labels writes each particle's group label (the smallest
particle index in its group) as little-endian uint32, in particle order.
IN is raw float32 positions, float64 with --dtype f64 (links by f64
distances), or a particle stream, decoded in its own element type, whose
linking length and box are the defaults (--dtype, if given, must agree).
IN may be `-`; so may --labels (the summary then goes to stderr).
";

pub const CPS: &str = "\
factz cps: the critical points of a 2D vector field

Usage:
  factz cps FIELD.f32 --shape NY,NX [--layout soa|aos] [--dtype f32|f64] [--json] [--vtk OUT.vtp]
  factz cps IN.fz [--json] [--vtk OUT.vtp]

Extracts every critical point of the piecewise-linear field (the triangulation
and exact type rule compression preserves; ARCHITECTURE.md) from raw float32,
or float64 with --dtype f64 (shape from --shape or the sidecar FIELD.json), or
from a field stream of either type, and
prints the count of each type. --json lists every point: its cell (triangle
id), position x, y in grid units (x = column) and type. --vtk writes them as
VTK XML PolyData for ParaView / TTK: points (x, y, 0), point arrays `type`
(0 saddle, 1 source, 2 sink, 3 repelling focus, 4 attracting focus, 5 center)
and `cell`, one vertex cell each; they overlay `factz decompress --vtk`'s .vti.
FIELD may be `-`; so may --vtk (the summary then goes to stderr).
";

pub const SYNTH: &str = "\
factz synth: write deterministic sample data (and a JSON sidecar OUT.json)

Usage:
  factz synth --kind field2d [--n N] [--seed S] [--k0 K] [--t-end T] [--nsim M] OUT.f32
  factz synth --kind particles [--nside N] [--seed S] [--box L] [--sigma20 X]
              [--order lattice|shuffle] OUT.f32

The same options give the same bits on every platform and thread count.

field2d: 2D decaying turbulence (u, v) on the periodic square, N x N, SoA (all
u, then all v; rows = y, x fastest): a pseudo-spectral vorticity solver run from
a random band-limited start, so it has the vortices, saddles and foci of real
2D flow. 512^2 takes about 25 s on two cores, 256^2 about 6 s.
  --n N                 grid size (default 512)
  --seed S              seed (default 1)
  --k0 K                initial spectral peak (default nsim / 32; larger: more
                        and smaller vortices, more critical points)
  --t-end T             evolution time in eddy turnovers (default 10)
  --nsim M              grid of the main run (default min(N, 512)); a larger N
                        is refined from it for 0.5 time units

particles: nside^3 cosmology-like clustered particles in a periodic box, AoS
(x, y, z per particle): NFW halos on the density peaks of a Gaussian random
field, the rest displaced by it. The sidecar gives box, periodic and fof_b
(0.2 x the mean separation), which `factz bench` and `verify` read.
  --nside N             particles per side (default 64: 262,144 particles)
  --seed S              seed (default 1)
  --box L               box side (default 100)
  --sigma20 X           clustering strength: rms density contrast on the
                        20-particle scale (default 2.5; larger: denser halos)
  --order lattice|shuffle  particle order (default lattice, x slowest)
";

pub fn for_command(cmd: &str) -> Option<&'static str> {
    Some(match cmd {
        "compress" => COMPRESS,
        "decompress" => DECOMPRESS,
        "verify" => VERIFY,
        "inspect" => INSPECT,
        "bench" => BENCH,
        "correct" => CORRECT,
        "apply" => APPLY,
        "fof" => FOF,
        "cps" => CPS,
        "synth" => SYNTH,
        _ => return None,
    })
}
