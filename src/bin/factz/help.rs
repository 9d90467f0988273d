//! Usage texts (`factz --help`, `factz help CMD`, `factz CMD --help`).

pub const MAIN: &str = "\
factz: error-bounded compression that keeps every critical point of a 2D vector field

Usage:
  factz compress   --kind field2d --shape NY,NX [--layout soa|aos] [--mode b|s]
                   (--abs X | --rel X) [--coder huffman|rans] [--zstd LEVEL]
                   [--chunk] [--verify] IN.f32 OUT.fz
  factz decompress IN.fz OUT.f32
  factz verify     ORIG.f32 IN.fz|RECON.f32 [--shape NY,NX] [--layout soa|aos]
                   [--abs X | --rel X] [--json]
  factz inspect    IN.fz [--json]
  factz bench      [--shape NY,NX] [IN.f32 ...] [--rel 1e-2,1e-3,1e-4] [--repeat N] [--json]
  factz help CMD   details of one command

Data is raw little-endian float32: SoA (all u, then all v) or AoS ((u, v) per
vertex), row-major NY x NX with x fastest. `-` reads stdin / writes stdout.
Exit status 0 on success; otherwise a one-line `factz: ...` message on stderr
(status 2: usage error; 1: any other failure).
";

pub const COMPRESS: &str = "\
factz compress: compress a 2D vector field

Usage:
  factz compress --kind field2d --shape NY,NX [options] IN.f32 OUT.fz

Options:
  --kind field2d        what the input holds (particles: not supported yet)
  --shape NY,NX         grid rows (y) and columns (x); required
  --layout soa|aos      soa: all u then all v (default); aos: (u, v) interleaved
  --mode b|s            b: block-wise analytic bounds (fast); s: speculative (default, best ratio)
  --abs X               absolute error bound
  --rel X               error bound relative to the value range of both components (default 1e-3)
  --coder huffman|rans  entropy coder (default rans)
  --zstd LEVEL          zstd stage on top, 1..22; 0 = off (default)
  --chunk               the field is one chunk of a larger one: keep its border exact
  --verify              decode and re-check every triangle before writing
  -v, --verbose         print a summary line on stderr

IN may be `-` (stdin) and OUT may be `-` (stdout). The decompressed field comes
back in the layout it came in.
";

pub const DECOMPRESS: &str = "\
factz decompress: decompress a stream to raw float32

Usage:
  factz decompress IN.fz OUT.f32 [--layout soa|aos]

Writes the layout the data came in (recorded in the stream) unless --layout
overrides it. IN and OUT may be `-`.
";

pub const VERIFY: &str = "\
factz verify: check a reconstruction against its original

Usage:
  factz verify ORIG.f32 IN.fz [--layout soa|aos] [--abs X | --rel X] [--json]
  factz verify ORIG.f32 RECON.f32 --shape NY,NX [--layout soa|aos] [--abs X | --rel X] [--json]

Reports critical points lost (P1), spurious (P2) and with a changed type (P3),
the maximum error against the bound, PSNR and, for a stream, the ratio and bit
rate. With a stream the shape and layout come from it; with a raw
reconstruction --shape is required (both files in the same --layout, default
soa). The bound is --abs/--rel when given, else the one the stream records.
Exits with status 1 if P1 + P2 + P3 > 0 or a value exceeds the bound (or a
non-finite value changed). One of the two inputs may be `-`.
";

pub const INSPECT: &str = "\
factz inspect: print a stream's header, sections and parameters

Usage:
  factz inspect IN.fz [--json]
";

pub const BENCH: &str = "\
factz bench: compression ratio, accuracy, topology and speed against baselines

Usage:
  factz bench [IN.f32 ...] [options]

Without inputs, a deterministic synthetic field (a sum of random Fourier modes)
of --shape is used. Inputs are raw float32 fields of --shape, or datagen files
whose sidecar (IN.json next to IN.f32) gives the shape.

Options:
  --shape NY,NX         shape of the inputs / the synthetic field (default 1024,1024)
  --layout soa|aos      layout of the inputs (default soa)
  --rel LIST            relative bounds, comma-separated (default 1e-2,1e-3,1e-4)
  --mode LIST           modes to run (default b,s)
  --coder LIST          coders to run (default huffman,rans)
  --zstd LEVEL          zstd stage for factz (default 0 = off)
  --repeat N            best of N timings (default 3)
  --threads N           worker threads (default: all cores, or RAYON_NUM_THREADS)
  --seed S              seed of the synthetic field (default 1)
  --json                machine-readable output

Baselines at the same absolute bound: zstd (lossless, level 3) always; SZ3 in
absolute-bound mode when factz was built with `--features sz3`.
MB/s counts 1e6 bytes of float32 input per second.
";

pub fn for_command(cmd: &str) -> Option<&'static str> {
    Some(match cmd {
        "compress" => COMPRESS,
        "decompress" => DECOMPRESS,
        "verify" => VERIFY,
        "inspect" => INSPECT,
        "bench" => BENCH,
        _ => return None,
    })
}
