//! The end-to-end GPU field compressor (issue 6) without a GPU: the pipeline
//! of `factz::field::pipeline` (`compress_on` / `decompress_on`: bound, Parts,
//! the CPU's stream writer, the lossless fallback, verify, and back) with the
//! library's `OnExec` kernels over the host build of the `.cu` files
//! (`kernels/shim`): the CUDA path runs the same Rust code on a device.
//!
//! - Streams equal `field::compress`'s byte for byte (and the reports), for
//!   modes B and S, on synth turbulence, smooth fields of awkward shapes,
//!   the adversarial suite and noise, under relative and absolute bounds,
//!   chunk flag, both coders, zstd, verify, and the lossless fallback.
//! - Decoding through the kernels equals `field::decompress`, bit for bit.
//! - Errors: the CPU's checks (the C entry points: tests/gpu_capi.rs).
//! - On a GPU (`#[ignore]`d, scripts/gpu-check): the CUDA path and the C
//!   entry points on device pointers against the CPU.
#![cfg(feature = "cuda")]

mod common;
#[path = "common/kernels_host.rs"]
mod kernels_host;
#[path = "common/shim_exec.rs"]
mod shim_exec;

use common::fields::{self, Field, Rng};
use factz::backend::Backend;
use factz::codec::zero_runs;
use factz::error::{ErrorKind, Result};
use factz::field::pipeline::{self as gf, Stages};
use factz::field::stream::{Coded, SEC_CODES};
use factz::field::{Bound, Coder, FieldConfig, Mode};
use factz::format::Parsed;
use factz::gpu::field::OnExec;
use factz::gpu::profile::Timed;
use kernels_host::Threads;
use std::borrow::Cow;
use std::cell::Cell;

/// The kernels through the shim, counting the host copies the pipeline asks for.
struct Shim {
    threads: Threads,
    host_copies: Cell<usize>,
    encodes: Cell<usize>,
    decodes: Cell<usize>,
}

fn shim() -> Shim {
    Shim {
        threads: Threads::Fibers,
        host_copies: Cell::new(0),
        encodes: Cell::new(0),
        decodes: Cell::new(0),
    }
}

impl Shim {
    fn exec(&self) -> shim_exec::Shim {
        shim_exec::Shim {
            threads: self.threads,
        }
    }
}

/// The library's `OnExec` over the shim, on host slices (the shim's memory),
/// counting what the pipeline asks for.
impl Stages for Shim {
    type Field<'a> = [&'a [f32]; 2];
    type Out<'a> = [&'a mut [f32]; 2];

    fn field_len(&self, [u, v]: Self::Field<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn out_len(&self, [u, v]: &Self::Out<'_>) -> [usize; 2] {
        [u.len(), v.len()]
    }

    fn to_host<'a>(&self, [u, v]: Self::Field<'a>, n: usize) -> Result<[Cow<'a, [f32]>; 2]> {
        self.host_copies.set(self.host_copies.get() + 1);
        // SAFETY: the views are read during this call only.
        let f = unsafe { [shim_exec::view(u), shim_exec::view(v)] };
        let [u, v] = OnExec { exec: &self.exec() }.to_host(f, n)?;
        Ok([Cow::Owned(u.into_owned()), Cow::Owned(v.into_owned())])
    }

    fn finite_range(&self, [u, v]: Self::Field<'_>, n: usize) -> Result<(f32, f32)> {
        // SAFETY: as above.
        let f = unsafe { [shim_exec::view(u), shim_exec::view(v)] };
        OnExec { exec: &self.exec() }.finite_range(f, n)
    }

    fn encode(
        &self,
        mode: Mode,
        [u, v]: Self::Field<'_>,
        ny: usize,
        nx: usize,
        xi: f64,
        chunk: bool,
        coder: Coder,
    ) -> Result<(Coded, usize)> {
        self.encodes.set(self.encodes.get() + 1);
        // SAFETY: as above.
        let f = unsafe { [shim_exec::view(u), shim_exec::view(v)] };
        OnExec { exec: &self.exec() }.encode(mode, f, ny, nx, xi, chunk, coder)
    }

    fn decode(
        &self,
        mode: Mode,
        p: &Parsed,
        coder: Coder,
        ny: usize,
        nx: usize,
        xi: f64,
        [u, v]: &mut Self::Out<'_>,
    ) -> Result<()> {
        self.decodes.set(self.decodes.get() + 1);
        // Poison the output: a vertex the kernels skip shows.
        u.fill(f32::from_bits(0x7fc0_dead));
        v.fill(f32::from_bits(0x7fc0_dead));
        // SAFETY: the views are used during this call only, while u and v are
        // not otherwise borrowed.
        let mut out = unsafe { [shim_exec::view_mut(u), shim_exec::view_mut(v)] };
        OnExec { exec: &self.exec() }.decode(mode, p, coder, ny, nx, xi, &mut out)
    }

    fn put(&self, hu: &[f32], hv: &[f32], [u, v]: &mut Self::Out<'_>) -> Result<()> {
        // SAFETY: as in decode.
        let mut out = unsafe { [shim_exec::view_mut(u), shim_exec::view_mut(v)] };
        OnExec { exec: &self.exec() }.put(hu, hv, &mut out)
    }
}

fn bits(a: &[f32]) -> Vec<u32> {
    a.iter().map(|x| x.to_bits()).collect()
}

/// Compress `f` both ways under `cfg`: the same bytes and report; decode the
/// stream through the kernels: `field::decompress`'s bits. Returns whether the
/// stream was stored losslessly.
fn check(k: &Shim, f: &Field, cfg: &FieldConfig) -> bool {
    let what = format!("{} {}x{} {cfg:?}", f.name, f.ny, f.nx);
    let cpu = factz::field::compress(&f.u, &f.v, f.ny, f.nx, cfg).unwrap();
    let copies = k.host_copies.get();
    let gpu = gf::compress_on(k, [&f.u, &f.v], f.ny, f.nx, cfg).unwrap();
    assert!(gpu.bytes == cpu.bytes, "stream differs: {what}");
    assert_eq!(gpu.report, cpu.report, "{what}");
    // At most one host copy of the field, and none unless the verify pass or
    // the lossless fallback needs it (a relative bound's range and mode S's
    // exact values come from the device).
    let info = factz::field::info(&cpu.bytes).unwrap();
    let copied = k.host_copies.get() - copies;
    let needs = cfg.verify || info.mode.is_none();
    assert!(
        copied <= 1 && (needs || copied == 0),
        "{copied} host copies: {what}"
    );
    let d = factz::field::decompress(&cpu.bytes).unwrap();
    let n = f.ny * f.nx;
    let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
    let got = gf::decompress_on(k, &gpu.bytes, &mut [&mut u, &mut v]).unwrap();
    assert_eq!(got, info, "{what}");
    assert!(
        bits(&u) == bits(&d.u) && bits(&v) == bits(&d.v),
        "decode differs: {what}"
    );
    info.mode.is_none()
}

fn configs(f: &Field, mode: Mode) -> Vec<FieldConfig> {
    let base = FieldConfig {
        mode,
        ..FieldConfig::default()
    };
    let (lo, hi) = factz::field::finite_range(&[&f.u, &f.v]);
    let range = if lo > hi { 1.0 } else { hi as f64 - lo as f64 };
    let mut out = vec![];
    for (i, bound) in [
        Bound::Rel(1e-2),
        Bound::Rel(1e-5),
        Bound::Abs(0.05 * range.max(1e-300)),
        Bound::Abs(1e-30),
        Bound::Abs(1e30),
    ]
    .into_iter()
    .enumerate()
    {
        out.push(FieldConfig {
            bound,
            coder: if i % 2 == 0 {
                Coder::Rans
            } else {
                Coder::Huffman
            },
            chunk_of_larger: i % 3 == 1,
            ..base
        });
    }
    out.push(FieldConfig {
        verify: true,
        zstd_level: 3,
        chunk_of_larger: true,
        ..base
    });
    out
}

fn sweep(suite: &[Field]) -> usize {
    let k = shim();
    let mut lossless = 0;
    for f in suite {
        for mode in [Mode::Blockwise, Mode::Speculative] {
            for cfg in configs(f, mode) {
                lossless += check(&k, f, &cfg) as usize;
            }
        }
    }
    assert!(k.encodes.get() > 0 && k.decodes.get() > 0);
    lossless
}

#[test]
fn turbulence_streams_are_the_cpus() {
    let turb = fields::turbulence(128, 3);
    sweep(&[
        fields::window(&turb, 5, 70, 77, 45),
        fields::window(&turb, 100, 9, 1, 128),
        fields::window(&turb, 9, 100, 128, 1),
        turb,
    ]);
}

#[test]
fn smooth_fields_of_awkward_shapes_are_the_cpus() {
    let suite: Vec<Field> = fields::ODD_SHAPES
        .iter()
        .chain(&[(33, 65), (1, 1), (2, 2)])
        .enumerate()
        .map(|(n, &(ny, nx))| fields::smooth(ny, nx, 90 + n as u64))
        .collect();
    sweep(&suite);
}

#[test]
fn adversarial_streams_are_the_cpus() {
    let mut suite = fields::adversarial_suite(&fields::smooth(40, 37, 7));
    suite.push(fields::nan_mask(&fields::smooth(45, 70, 5), 6));
    suite.push(fields::zeros(33, 31));
    // Zeros of both signs: a relative bound's range is +0 whichever zero the
    // device's reduction keeps as min and max.
    let mut signed = fields::zeros(33, 31);
    for (k, x) in signed.u.iter_mut().chain(signed.v.iter_mut()).enumerate() {
        if k % 3 == 1 {
            *x = -0.0;
        }
    }
    signed.name = "signed zeros".into();
    suite.push(signed);
    sweep(&suite);
}

#[test]
fn the_lossless_fallback_is_the_cpus() {
    // Random bit patterns under a tiny bound: every vertex exact, and the
    // coded stream larger than the plain one, so both pipelines store it
    // losslessly (decoded on the host and put back through the backend).
    let mut rng = Rng::new(11);
    let n = 37 * 41;
    let word = |r: &mut Rng| f32::from_bits((r.next_u64() as u32) & 0xBF7F_FFFF);
    let u: Vec<f32> = (0..n).map(|_| word(&mut rng)).collect();
    let v: Vec<f32> = (0..n).map(|_| word(&mut rng)).collect();
    let f = Field::new("random words", 37, 41, u, v);
    assert!(sweep(&[f]) > 0, "no case fell back to the lossless stream");
}

#[test]
fn os_threads_agree() {
    let k = Shim {
        threads: Threads::Os,
        ..shim()
    };
    let f = fields::window(&fields::turbulence(128, 3), 3, 4, 40, 35);
    for mode in [Mode::Blockwise, Mode::Speculative] {
        check(&k, &f, &configs(&f, mode)[0]);
    }
}

#[test]
fn errors_are_the_cpus() {
    let k = shim();
    let f = fields::smooth(20, 30, 1);
    let cfg = FieldConfig::default();
    let kind = |r: Result<factz::field::Compressed>| r.map(|_| ()).unwrap_err().kind;
    // Wrong lengths, empty shapes, bad bounds: the CPU's errors, before any kernel.
    for (ny, nx, cfg) in [
        (20, 31, cfg),
        (0, 30, cfg),
        (
            20,
            30,
            FieldConfig {
                bound: Bound::Rel(f64::NAN),
                ..cfg
            },
        ),
        (
            20,
            30,
            FieldConfig {
                zstd_level: 23,
                ..cfg
            },
        ),
    ] {
        let cpu = kind(factz::field::compress(&f.u, &f.v, ny, nx, &cfg));
        let gpu = kind(gf::compress_on(&k, [&f.u, &f.v], ny, nx, &cfg));
        assert_eq!(gpu, cpu, "{ny}x{nx} {cfg:?}");
    }
    assert_eq!(k.encodes.get(), 0);
    // Decoding: wrong buffer sizes, and corrupt streams refused as the CPU does.
    for mode in [Mode::Blockwise, Mode::Speculative] {
        let c = factz::field::compress(&f.u, &f.v, 20, 30, &FieldConfig { mode, ..cfg }).unwrap();
        let (mut u, mut v) = (vec![0f32; 600], vec![0f32; 599]);
        let e = gf::decompress_on(&k, &c.bytes, &mut [&mut u, &mut v]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        let mut v = vec![0f32; 600];
        for cut in [0, 10, c.bytes.len() / 2, c.bytes.len() - 1] {
            let bad = &c.bytes[..cut];
            let (mut cu, mut cv) = (vec![0f32; 600], vec![0f32; 600]);
            let cpu = factz::field::decompress_into(bad, &mut cu, &mut cv).unwrap_err();
            let gpu = gf::decompress_on(&k, bad, &mut [&mut u, &mut v]).unwrap_err();
            assert_eq!(gpu.kind, cpu.kind, "{mode:?} cut at {cut}");
        }
    }
}

/// Streams with valid checksums whose sections disagree with each other (a
/// bound id out of range, too few raw words, too many codes, a flipped mask
/// bit, the wrong number of ids): the device decoders refuse them as the CPU
/// does, under both coders (both decoded on the device).
#[test]
fn crafted_streams_are_refused_as_the_cpu_does() {
    let k = shim();
    // NaNs: exact vertices, so raw words to take away.
    let f = fields::nan_mask(&fields::smooth(50, 40, 13), 6);
    let n = f.ny * f.nx;
    let mut refused = 0;
    for mode in [Mode::Blockwise, Mode::Speculative] {
        for coder in [Coder::Huffman, Coder::Rans] {
            let cfg = FieldConfig {
                mode,
                coder,
                ..FieldConfig::default()
            };
            let c = factz::field::compress(&f.u, &f.v, f.ny, f.nx, &cfg).unwrap();
            let header = factz::format::parse(&c.bytes).unwrap().header;
            let good = factz::field::stream::read(
                &factz::format::parse(&c.bytes).unwrap(),
                n,
                coder,
                |coded| factz::field::ids_len(mode, f.ny, f.nx, coded),
            )
            .unwrap();
            let mut bad_id = good.clone();
            bad_id.ids[1] = 24;
            let mut short_raw = good.clone();
            short_raw.raw.truncate(short_raw.raw.len() - 2);
            let mut long_codes = good.clone();
            long_codes.codes.extend([0, 0]);
            let mut flipped = good.clone();
            let at = flipped.exact.iter().position(|&e| !e).unwrap();
            flipped.exact[at] = true;
            let mut extra_id = good.clone();
            extra_id.ids.push(0);
            for (name, parts) in [
                ("id 24", bad_id),
                ("short raw", short_raw),
                ("long codes", long_codes),
                ("a flipped mask bit", flipped),
                ("an extra id", extra_id),
            ] {
                let what = format!("{mode:?} {coder:?}: {name}");
                let bytes = factz::field::stream::write(&header, &parts, coder, 0).unwrap();
                let (mut cu, mut cv) = (vec![0f32; n], vec![0f32; n]);
                let cpu = factz::field::decompress_into(&bytes, &mut cu, &mut cv);
                let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
                let gpu = gf::decompress_on(&k, &bytes, &mut [&mut u, &mut v]);
                match (cpu, gpu) {
                    (Err(c), Err(g)) => {
                        assert_eq!(c.kind, ErrorKind::CorruptStream, "{what}: CPU: {c}");
                        assert_eq!(g.kind, c.kind, "{what}: GPU: {g}");
                        refused += 1;
                    }
                    // A symbol more can hide in a coded section's padding
                    // (the codec's count check is not exhaustive): then
                    // both decode it to the same values.
                    (Ok(_), Ok(_)) => assert!(
                        bits(&u) == bits(&cu) && bits(&v) == bits(&cv),
                        "{what}: decoded differently"
                    ),
                    (c, g) => panic!("{what}: CPU {c:?}, GPU {g:?}"),
                }
            }
        }
    }
    assert!(
        refused >= 16,
        "only {refused} of 20 crafted streams refused"
    );
    // A byte section (the mask) whose Huffman table holds a symbol past 255:
    // the byte decoder refuses it, and so must the device (which decodes
    // bytes as u32 symbols).
    for mode in [Mode::Blockwise, Mode::Speculative] {
        let cfg = FieldConfig {
            mode,
            coder: Coder::Huffman,
            ..FieldConfig::default()
        };
        let c = factz::field::compress(&f.u, &f.v, f.ny, f.nx, &cfg).unwrap();
        let p = factz::format::parse(&c.bytes).unwrap();
        let section = |id| {
            factz::field::stream::section(&p, id, 8 * n)
                .unwrap()
                .to_vec()
        };
        // The true bitmap with 256 added to one byte: a device that narrowed
        // symbols without the check would decode the field.
        let ids_len = |coded| factz::field::ids_len(mode, f.ny, f.nx, coded);
        let parts = factz::field::stream::read(&p, n, Coder::Huffman, ids_len).unwrap();
        let mut wide: Vec<u32> = factz::codec::planes::pack_bits(&parts.exact)
            .into_iter()
            .map(u32::from)
            .collect();
        wide[3] += 256;
        let coded = Coded {
            mask: factz::codec::encode_u32(Coder::Huffman, &wide),
            raw: section(factz::field::stream::SEC_RAW),
            ids: section(factz::field::stream::SEC_IDS),
            codes: section(factz::field::stream::SEC_CODES),
        };
        let bytes = factz::field::stream::write_coded(&p.header, coded, 0).unwrap();
        let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
        let cpu = factz::field::decompress_into(&bytes, &mut u, &mut v).unwrap_err();
        let gpu = gf::decompress_on(&k, &bytes, &mut [&mut u, &mut v]).unwrap_err();
        assert_eq!(cpu.kind, ErrorKind::CorruptStream, "{mode:?}: CPU: {cpu}");
        assert_eq!(gpu.kind, cpu.kind, "{mode:?}: GPU: {gpu}");
    }
}

/// The pipeline codes every section where the kernels left it, with either
/// coder: what comes back from the executor while compressing is the coded
/// bytes and small tables (code counts or histograms, block sizes), far less
/// than the field; and decoding sends nothing back but statuses and counts.
#[test]
fn sections_stay_on_the_executor() {
    let k = shim();
    let f = fields::turbulence(256, 5);
    let n = f.ny * f.nx;
    for mode in [Mode::Blockwise, Mode::Speculative] {
        for coder in [Coder::Huffman, Coder::Rans] {
            let cfg = FieldConfig {
                mode,
                coder,
                ..FieldConfig::default()
            };
            let before = shim_exec::bytes_read();
            let c = gf::compress_on(&k, [&f.u, &f.v], f.ny, f.nx, &cfg).unwrap();
            let read = shim_exec::bytes_read() - before;
            // Beyond the coded bytes: code tables and counts; rANS also reads
            // four planes' histograms (8 KiB) per section, and per coding of
            // a segment of mode S's codes (three where the zero-runs form is
            // tried: plain, runs, values), whose form not kept comes back too.
            let p = factz::format::parse(&c.bytes).unwrap();
            let (mut codings, mut tried, mut kept, mut not_kept) = (0usize, 0, 0, 0);
            if factz::field::stream::segmented(&p.header) {
                let codes = factz::field::stream::section(&p, SEC_CODES, 2 * n).unwrap();
                let parts = factz::field::stream::read(&p, n, coder, |k| k).unwrap();
                let mut at = 0;
                for (len, payload) in
                    factz::field::stream::split_segments(&codes, parts.codes.len()).unwrap()
                {
                    let seg = &parts.codes[at..at + len];
                    at += len;
                    let m = seg.iter().filter(|&&x| x != 0).count();
                    let plain = 1 + factz::codec::encode_u32(coder, seg).len();
                    codings += 1;
                    if zero_runs::worth_trying(len, m) {
                        codings += 2;
                        tried += 1;
                        let body = zero_runs::encode_zero_runs(coder, seg).len();
                        not_kept += plain + body - payload.len();
                        kept += usize::from(payload[0] == zero_runs::ZERO_RUNS);
                    }
                }
            }
            assert!(
                mode == Mode::Blockwise || codings > 1,
                "a test that segments"
            );
            assert!(
                mode == Mode::Blockwise || (tried > 0 && kept > 0),
                "a test that keeps zero runs: {tried} tried, {kept} kept"
            );
            let slack = match coder {
                Coder::Huffman => 32 << 10,
                Coder::Rans => (48 << 10) + codings.saturating_sub(1) * (8 << 10),
            };
            let allowed = c.bytes.len() + not_kept + slack;
            assert!(
                read <= allowed,
                "{mode:?} {coder:?}: {read} bytes read back for a {}-byte stream",
                c.bytes.len()
            );
            let before = shim_exec::bytes_read();
            let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
            gf::decompress_on(&k, &c.bytes, &mut [&mut u, &mut v]).unwrap();
            let read = shim_exec::bytes_read() - before;
            assert!(
                read <= 32 << 10,
                "{mode:?} {coder:?}: {read} bytes read back decoding"
            );
        }
    }
}

/// `gpu::profile::Timed` around the executor: the pipeline's result does not
/// change, and the profile names the stages that ran (each coder's kernels,
/// mode S's, the copies back) with their call counts.
#[test]
fn a_timed_executor_profiles_the_pipeline() {
    let shim = shim_exec::Shim {
        threads: Threads::Fibers,
    };
    let timed = Timed::new(&shim);
    let k = OnExec { exec: &timed };
    let f = fields::turbulence(64, 3);
    let n = f.ny * f.nx;
    for (coder, encode, decode) in [
        (Coder::Huffman, "factz_h_pack", "factz_h_decode"),
        (Coder::Rans, "factz_r_encode", "factz_r_decode"),
    ] {
        let cfg = FieldConfig {
            coder,
            ..FieldConfig::default()
        };
        let cpu = factz::field::compress(&f.u, &f.v, f.ny, f.nx, &cfg).unwrap();
        // SAFETY: the shim's memory is host memory; f outlives the views.
        let views = unsafe { [shim_exec::view(&f.u), shim_exec::view(&f.v)] };
        let c = gf::compress_on(&k, views, f.ny, f.nx, &cfg).unwrap();
        assert!(c.bytes == cpu.bytes, "{coder:?}: timing changed the stream");
        let stages = timed.take();
        let calls = |name: &str| {
            stages
                .iter()
                .find(|s| s.name == name)
                .map_or(0, |s| s.calls)
        };
        for name in [encode, "factz_s_assemble", "copy to host", "alloc"] {
            assert!(
                calls(name) > 0,
                "{coder:?} compress: no {name} in {stages:?}"
            );
        }
        assert_eq!(calls(decode), 0, "{coder:?}: a decode while compressing");
        assert!(stages.windows(2).all(|w| w[0].seconds >= w[1].seconds));
        let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
        // SAFETY: as above; u and v outlive the views and are not otherwise used.
        let mut out = unsafe { [shim_exec::view_mut(&mut u), shim_exec::view_mut(&mut v)] };
        gf::decompress_on(&k, &c.bytes, &mut out).unwrap();
        let want = factz::field::decompress(&cpu.bytes).unwrap();
        let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(bits(&u) == bits(&want.u) && bits(&v) == bits(&want.v));
        let stages = timed.take();
        assert!(stages.iter().any(|s| s.name == decode && s.calls > 0));
        assert!(!stages.iter().any(|s| s.name == encode));
    }
}

#[test]
fn backend_choice_says_which_ran() {
    let f = fields::smooth(30, 40, 2);
    let cfg = FieldConfig::default();
    let cpu = factz::field::compress(&f.u, &f.v, 30, 40, &cfg).unwrap();
    let (c, ran) = factz::backend::compress_field(Backend::Cpu, &f.u, &f.v, 30, 40, &cfg).unwrap();
    assert!(c.bytes == cpu.bytes && ran.backend == Backend::Cpu && ran.fallback_reason.is_none());
    let (c, ran) = factz::backend::compress_field(Backend::Auto, &f.u, &f.v, 30, 40, &cfg).unwrap();
    assert!(c.bytes == cpu.bytes);
    match factz::gpu::exec::shared() {
        Ok(_) => assert_eq!(ran.backend, Backend::Cuda),
        Err(e) => {
            // No GPU here: Auto ran the CPU and says why; Cuda refuses.
            assert_eq!(ran.backend, Backend::Cpu);
            assert_eq!(ran.fallback_reason.as_deref(), Some(e.message.as_str()));
            assert!(!e.message.is_empty());
            let err = factz::backend::compress_field(Backend::Cuda, &f.u, &f.v, 30, 40, &cfg)
                .unwrap_err();
            assert_eq!(err.kind, ErrorKind::Unsupported);
        }
    }
}

/// On a GPU machine (scripts/gpu-check): the CUDA path end to end.
mod device {
    use super::*;
    use factz::capi::gpu::{factz_field_compress_device, factz_field_decompress_device};
    use factz::capi::status::factz_status::FACTZ_OK;
    use std::ptr::null_mut;

    #[test]
    #[ignore = "needs an NVIDIA GPU (scripts/gpu-check)"]
    fn device_streams_are_the_cpus() {
        let d = factz::gpu::exec::shared().expect("a GPU");
        let s = d.stream.clone();
        let ctx = s.context().clone();
        let turb = fields::turbulence(128, 3);
        let suite = [
            fields::window(&turb, 5, 70, 77, 45),
            turb,
            fields::nan_mask(&fields::smooth(45, 70, 5), 6),
        ];
        for f in &suite {
            let n = f.ny * f.nx;
            let du = s.clone_htod(&f.u).unwrap();
            let dv = s.clone_htod(&f.v).unwrap();
            for mode in [Mode::Blockwise, Mode::Speculative] {
                for cfg in configs(f, mode) {
                    let what = format!("{} {cfg:?}", f.name);
                    let cpu = factz::field::compress(&f.u, &f.v, f.ny, f.nx, &cfg).unwrap();
                    let gpu =
                        factz::gpu::field::compress(&ctx, &du, &dv, f.ny, f.nx, &cfg, &s).unwrap();
                    assert!(gpu.bytes == cpu.bytes, "{what}");
                    let d = factz::field::decompress(&cpu.bytes).unwrap();
                    let mut ou = s.alloc_zeros::<f32>(n).unwrap();
                    let mut ov = s.alloc_zeros::<f32>(n).unwrap();
                    factz::gpu::field::decompress(&ctx, &cpu.bytes, &mut ou, &mut ov, &s).unwrap();
                    assert_eq!(bits(&s.clone_dtoh(&ou).unwrap()), bits(&d.u), "{what}");
                    assert_eq!(bits(&s.clone_dtoh(&ov).unwrap()), bits(&d.v), "{what}");
                    // The C entry points, on raw device pointers.
                    let mut out = vec![0u8; factz::field::max_compressed_size(f.ny, f.nx).unwrap()];
                    let mut len = 0usize;
                    let c = factz::capi::field::factz_field_config {
                        struct_size: std::mem::size_of::<factz::capi::field::factz_field_config>()
                            as u32,
                        mode: mode as u32,
                        bound_kind: match cfg.bound {
                            Bound::Abs(_) => 1,
                            Bound::Rel(_) => 2,
                        },
                        coder: cfg.coder as u32,
                        bound: match cfg.bound {
                            Bound::Abs(x) | Bound::Rel(x) => x,
                        },
                        zstd_level: cfg.zstd_level,
                        flags: cfg.chunk_of_larger as u32 | (cfg.verify as u32) << 1,
                        layout: 0,
                        backend: 0,
                    };
                    use cudarc::driver::DevicePtr;
                    let (pu, _g1) = du.device_ptr(&s);
                    let (pv, _g2) = dv.device_ptr(&s);
                    // SAFETY: device pointers of n floats on device 0.
                    let st = unsafe {
                        factz_field_compress_device(
                            &c,
                            pu as *const f32,
                            pv as *const f32,
                            f.ny,
                            f.nx,
                            out.as_mut_ptr(),
                            out.len(),
                            &mut len,
                            null_mut(),
                            s.cu_stream().cast(),
                        )
                    };
                    assert_eq!(st, FACTZ_OK, "{what}");
                    assert!(out[..len] == cpu.bytes[..], "C ABI: {what}");
                    let mut ou = s.alloc_zeros::<f32>(n).unwrap();
                    let (po, _g3) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut ou, &s);
                    let mut ov = s.alloc_zeros::<f32>(n).unwrap();
                    let (pw, _g4) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut ov, &s);
                    // SAFETY: as above.
                    let st = unsafe {
                        factz_field_decompress_device(
                            cpu.bytes.as_ptr(),
                            cpu.bytes.len(),
                            po as *mut f32,
                            pw as *mut f32,
                            f.ny,
                            f.nx,
                            s.cu_stream().cast(),
                        )
                    };
                    assert_eq!(st, FACTZ_OK, "{what}");
                    drop((_g3, _g4));
                    assert_eq!(
                        bits(&s.clone_dtoh(&ou).unwrap()),
                        bits(&d.u),
                        "C ABI {what}"
                    );
                    assert_eq!(
                        bits(&s.clone_dtoh(&ov).unwrap()),
                        bits(&d.v),
                        "C ABI {what}"
                    );
                }
            }
        }
    }
}
