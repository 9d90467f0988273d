//! The C entry points with arbitrary streams, sizes, shapes and configs,
//! through the functions the C symbols are (so through their panic boundary).
//! Every buffer is as large as the call says: a caller that lies about a size
//! breaks C's contract, which no library can check. `wide` picks the `_f64`
//! twin of a typed entry point.
#![no_main]
use arbitrary::Arbitrary;
use factz::capi::field::*;
use factz::capi::particles::*;
use factz::capi::status::factz_status;
use libfuzzer_sys::fuzz_target;
use std::mem::{size_of, MaybeUninit};

#[derive(Arbitrary, Debug)]
enum Op {
    FieldDecompress {
        ny: u8,
        nx: u8,
        wide: bool,
        interleaved: bool,
    },
    FieldInfo {
        struct_size: u32,
    },
    ParticlesDecompress {
        n: u16,
        wide: bool,
        soa: bool,
    },
    ParticlesInfo {
        struct_size: u32,
    },
    ParticlesApply {
        n: u16,
    },
    FieldCompress {
        ny: u8,
        nx: u8,
        cfg: FieldCfg,
        capacity: u16,
        wide: bool,
    },
    ParticlesCompress {
        n: u8,
        cfg: ParticlesCfg,
        capacity: u16,
        wide: bool,
    },
    CriticalPoints {
        ny: u8,
        nx: u8,
        capacity: u8,
        wide: bool,
    },
    FofLabels {
        n: u8,
        b: f64,
        box_side: f64,
        wide: bool,
    },
}

#[derive(Arbitrary, Debug)]
struct FieldCfg {
    struct_size: u32,
    mode: u32,
    bound_kind: u32,
    coder: u32,
    bound: f64,
    zstd_level: i8,
    flags: u32,
    layout: u32,
}

#[derive(Arbitrary, Debug)]
struct ParticlesCfg {
    struct_size: u32,
    bound_kind: u32,
    bound: f64,
    linking_kind: u32,
    base: u32,
    linking: f64,
    box_side: f64,
    coder: u32,
    zstd_level: i8,
    flags: u32,
    edit_bits: u32,
    learning_rate: f64,
    max_iters: u16,
}

/// Values for the float inputs: the fuzz bytes as f32, as many as needed.
fn floats(data: &[u8], n: usize) -> Vec<f32> {
    (0..n)
        .map(|k| {
            let at = 4 * k % data.len().max(1);
            let b: [u8; 4] = std::array::from_fn(|i| *data.get(at + i).unwrap_or(&0));
            f32::from_le_bytes(b)
        })
        .collect()
}

/// The same as f64 values (8 bytes each).
fn doubles(data: &[u8], n: usize) -> Vec<f64> {
    (0..n)
        .map(|k| {
            let at = 8 * k % data.len().max(1);
            let b: [u8; 8] = std::array::from_fn(|i| *data.get(at + i).unwrap_or(&0));
            f64::from_le_bytes(b)
        })
        .collect()
}

fuzz_target!(|input: (Op, Vec<u8>)| {
    let (op, data) = input;
    let p = data.as_ptr();
    let len = data.len();
    unsafe {
        match op {
            Op::FieldDecompress {
                ny,
                nx,
                wide,
                interleaved,
            } => {
                let n = usize::from(ny) * usize::from(nx);
                let (ny, nx) = (ny.into(), nx.into());
                match (wide, interleaved) {
                    (false, false) => {
                        let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
                        factz_field_decompress(p, len, u.as_mut_ptr(), v.as_mut_ptr(), ny, nx);
                    }
                    (false, true) => {
                        let mut uv = vec![0f32; 2 * n];
                        factz_field_decompress_interleaved(p, len, uv.as_mut_ptr(), ny, nx);
                    }
                    (true, false) => {
                        let (mut u, mut v) = (vec![0f64; n], vec![0f64; n]);
                        factz_field_decompress_f64(p, len, u.as_mut_ptr(), v.as_mut_ptr(), ny, nx);
                    }
                    (true, true) => {
                        let mut uv = vec![0f64; 2 * n];
                        factz_field_decompress_interleaved_f64(p, len, uv.as_mut_ptr(), ny, nx);
                    }
                }
            }
            Op::FieldInfo { struct_size } => {
                let mut out = MaybeUninit::<factz_field_stream_info>::zeroed();
                let sz = (struct_size as usize).min(size_of::<factz_field_stream_info>());
                (*out.as_mut_ptr()).struct_size = sz as u32;
                factz_field_info(p, len, out.as_mut_ptr());
            }
            Op::ParticlesDecompress { n, wide, soa } => {
                let n = usize::from(n);
                match (wide, soa) {
                    (false, false) => {
                        let mut xyz = vec![0f32; 3 * n];
                        factz_particles_decompress(p, len, xyz.as_mut_ptr(), n);
                    }
                    (false, true) => {
                        let mut c = [vec![0f32; n], vec![0f32; n], vec![0f32; n]];
                        let [x, y, z] = &mut c;
                        let (x, y, z) = (x.as_mut_ptr(), y.as_mut_ptr(), z.as_mut_ptr());
                        factz_particles_decompress_soa(p, len, x, y, z, n);
                    }
                    (true, false) => {
                        let mut xyz = vec![0f64; 3 * n];
                        factz_particles_decompress_f64(p, len, xyz.as_mut_ptr(), n);
                    }
                    (true, true) => {
                        let mut c = [vec![0f64; n], vec![0f64; n], vec![0f64; n]];
                        let [x, y, z] = &mut c;
                        let (x, y, z) = (x.as_mut_ptr(), y.as_mut_ptr(), z.as_mut_ptr());
                        factz_particles_decompress_soa_f64(p, len, x, y, z, n);
                    }
                }
            }
            Op::ParticlesInfo { struct_size } => {
                let mut out = MaybeUninit::<factz_particles_stream_info>::zeroed();
                let sz = (struct_size as usize).min(size_of::<factz_particles_stream_info>());
                (*out.as_mut_ptr()).struct_size = sz as u32;
                factz_particles_info(p, len, out.as_mut_ptr());
            }
            Op::ParticlesApply { n } => {
                let mut xyz = floats(&data, 3 * usize::from(n));
                factz_particles_apply(p, len, xyz.as_mut_ptr(), n.into());
            }
            Op::FieldCompress {
                ny,
                nx,
                cfg: c,
                capacity,
                wide,
            } => {
                let (ny, nx) = (usize::from(ny % 17), usize::from(nx % 17));
                let mut cfg = MaybeUninit::<factz_field_config>::zeroed();
                factz_field_config_default(cfg.as_mut_ptr());
                let mut cfg = cfg.assume_init();
                cfg.struct_size = c.struct_size.min(size_of::<factz_field_config>() as u32);
                (cfg.mode, cfg.bound_kind, cfg.coder) = (c.mode, c.bound_kind, c.coder);
                (cfg.bound, cfg.zstd_level, cfg.flags) = (c.bound, c.zstd_level.into(), c.flags);
                cfg.layout = c.layout;
                let mut out = vec![0u8; usize::from(capacity)];
                let mut out_len = 0usize;
                // Compress with `$compress`, then decode what it wrote with `$decompress`.
                macro_rules! round_trip {
                    ($values:ident, $compress:ident, $decompress:ident, $zero:expr) => {{
                        let u = $values(&data, ny * nx);
                        let v = $values(data.get(7..).unwrap_or(&[]), ny * nx);
                        let (o, cap) = (out.as_mut_ptr(), out.len());
                        let st = $compress(
                            &cfg,
                            u.as_ptr(),
                            v.as_ptr(),
                            ny,
                            nx,
                            o,
                            cap,
                            &mut out_len,
                            std::ptr::null_mut(),
                        );
                        if st == factz_status::FACTZ_OK {
                            assert!(out_len <= out.len());
                            let (mut du, mut dv) = (vec![$zero; ny * nx], vec![$zero; ny * nx]);
                            let (du, dv) = (du.as_mut_ptr(), dv.as_mut_ptr());
                            let st = $decompress(out.as_ptr(), out_len, du, dv, ny, nx);
                            assert_eq!(st, factz_status::FACTZ_OK, "a stream factz wrote decodes");
                        }
                    }};
                }
                if wide {
                    round_trip!(
                        doubles,
                        factz_field_compress_f64,
                        factz_field_decompress_f64,
                        0f64
                    );
                } else {
                    round_trip!(
                        floats,
                        factz_field_compress_ex,
                        factz_field_decompress,
                        0f32
                    );
                }
            }
            Op::ParticlesCompress {
                n,
                cfg: c,
                capacity,
                wide,
            } => {
                let n = usize::from(n % 65);
                let mut cfg = MaybeUninit::<factz_particles_config>::zeroed();
                factz_particles_config_default(cfg.as_mut_ptr());
                let mut cfg = cfg.assume_init();
                cfg.struct_size = c
                    .struct_size
                    .min(size_of::<factz_particles_config>() as u32);
                (cfg.bound_kind, cfg.bound, cfg.linking_kind) =
                    (c.bound_kind, c.bound, c.linking_kind);
                (cfg.base, cfg.linking, cfg.box_side) = (c.base, c.linking, c.box_side);
                (cfg.coder, cfg.zstd_level, cfg.flags) = (c.coder, c.zstd_level.into(), c.flags);
                (cfg.edit_bits, cfg.learning_rate) = (c.edit_bits, c.learning_rate);
                cfg.max_iters = c.max_iters.into();
                let mut out = vec![0u8; usize::from(capacity)];
                let mut out_len = 0usize;
                macro_rules! round_trip {
                    ($values:ident, $compress:ident, $decompress:ident, $zero:expr) => {{
                        let xyz = $values(&data, 3 * n);
                        let (o, cap) = (out.as_mut_ptr(), out.len());
                        let st = $compress(
                            xyz.as_ptr(),
                            n,
                            &cfg,
                            o,
                            cap,
                            &mut out_len,
                            std::ptr::null_mut(),
                        );
                        if st == factz_status::FACTZ_OK {
                            assert!(out_len <= out.len());
                            let mut back = vec![$zero; 3 * n];
                            let st = $decompress(out.as_ptr(), out_len, back.as_mut_ptr(), n);
                            assert_eq!(st, factz_status::FACTZ_OK, "a stream factz wrote decodes");
                        }
                    }};
                }
                if wide {
                    round_trip!(
                        doubles,
                        factz_particles_compress_f64,
                        factz_particles_decompress_f64,
                        0f64
                    );
                } else {
                    round_trip!(
                        floats,
                        factz_particles_compress_ex,
                        factz_particles_decompress,
                        0f32
                    );
                }
            }
            Op::CriticalPoints {
                ny,
                nx,
                capacity,
                wide,
            } => {
                let (ny, nx) = (usize::from(ny % 33), usize::from(nx % 33));
                let mut count = 0usize;
                let mut out: Vec<MaybeUninit<factz_critical_point>> =
                    (0..capacity).map(|_| MaybeUninit::zeroed()).collect();
                let (o, cap) = (out.as_mut_ptr().cast(), out.len());
                if wide {
                    let u = doubles(&data, ny * nx);
                    let v = doubles(data.get(5..).unwrap_or(&[]), ny * nx);
                    factz_field_critical_points_f64(
                        u.as_ptr(),
                        v.as_ptr(),
                        ny,
                        nx,
                        &mut count,
                        o,
                        cap,
                    );
                } else {
                    let u = floats(&data, ny * nx);
                    let v = floats(data.get(5..).unwrap_or(&[]), ny * nx);
                    factz_field_critical_points(u.as_ptr(), v.as_ptr(), ny, nx, &mut count, o, cap);
                }
            }
            Op::FofLabels {
                n,
                b,
                box_side,
                wide,
            } => {
                let n = usize::from(n);
                let mut labels = vec![0u32; n];
                if wide {
                    let xyz = doubles(&data, 3 * n);
                    factz_fof_labels_f64(xyz.as_ptr(), n, b, box_side, labels.as_mut_ptr());
                } else {
                    let xyz = floats(&data, 3 * n);
                    factz_fof_labels(xyz.as_ptr(), n, b, box_side, labels.as_mut_ptr());
                }
            }
        }
    }
});
