//! The C entry points with arbitrary streams, sizes, shapes and configs,
//! through the functions the C symbols are (so through their panic boundary).
//! Every buffer is as large as the call says: a caller that lies about a size
//! breaks C's contract, which no library can check.
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
    },
    FieldInfo {
        struct_size: u32,
    },
    ParticlesDecompress {
        n: u16,
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
    },
    ParticlesCompress {
        n: u8,
        cfg: ParticlesCfg,
        capacity: u16,
    },
    CriticalPoints {
        ny: u8,
        nx: u8,
        capacity: u8,
    },
    FofLabels {
        n: u8,
        b: f64,
        box_side: f64,
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

fuzz_target!(|input: (Op, Vec<u8>)| {
    let (op, data) = input;
    let p = data.as_ptr();
    let len = data.len();
    unsafe {
        match op {
            Op::FieldDecompress { ny, nx } => {
                let n = usize::from(ny) * usize::from(nx);
                let (mut u, mut v) = (vec![0f32; n], vec![0f32; n]);
                factz_field_decompress(
                    p,
                    len,
                    u.as_mut_ptr(),
                    v.as_mut_ptr(),
                    ny.into(),
                    nx.into(),
                );
            }
            Op::FieldInfo { struct_size } => {
                let mut out = MaybeUninit::<factz_field_stream_info>::zeroed();
                let sz = (struct_size as usize).min(size_of::<factz_field_stream_info>());
                (*out.as_mut_ptr()).struct_size = sz as u32;
                factz_field_info(p, len, out.as_mut_ptr());
            }
            Op::ParticlesDecompress { n } => {
                let mut xyz = vec![0f32; 3 * usize::from(n)];
                factz_particles_decompress(p, len, xyz.as_mut_ptr(), n.into());
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
            } => {
                let (ny, nx) = (usize::from(ny % 17), usize::from(nx % 17));
                let mut cfg = MaybeUninit::<factz_field_config>::zeroed();
                factz_field_config_default(cfg.as_mut_ptr());
                let mut cfg = cfg.assume_init();
                cfg.struct_size = c.struct_size.min(size_of::<factz_field_config>() as u32);
                (cfg.mode, cfg.bound_kind, cfg.coder) = (c.mode, c.bound_kind, c.coder);
                (cfg.bound, cfg.zstd_level, cfg.flags) = (c.bound, c.zstd_level.into(), c.flags);
                cfg.layout = c.layout;
                let u = floats(&data, ny * nx);
                let v = floats(data.get(7..).unwrap_or(&[]), ny * nx);
                let mut out = vec![0u8; usize::from(capacity)];
                let mut out_len = 0usize;
                let st = factz_field_compress(
                    &cfg,
                    u.as_ptr(),
                    v.as_ptr(),
                    ny,
                    nx,
                    out.as_mut_ptr(),
                    out.len(),
                    &mut out_len,
                );
                if st == factz_status::FACTZ_OK {
                    assert!(out_len <= out.len());
                    let (mut du, mut dv) = (vec![0f32; ny * nx], vec![0f32; ny * nx]);
                    let st = factz_field_decompress(
                        out.as_ptr(),
                        out_len,
                        du.as_mut_ptr(),
                        dv.as_mut_ptr(),
                        ny,
                        nx,
                    );
                    assert_eq!(st, factz_status::FACTZ_OK, "a stream factz wrote decodes");
                }
            }
            Op::ParticlesCompress {
                n,
                cfg: c,
                capacity,
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
                let xyz = floats(&data, 3 * n);
                let mut out = vec![0u8; usize::from(capacity)];
                let mut out_len = 0usize;
                let st = factz_particles_compress(
                    xyz.as_ptr(),
                    n,
                    &cfg,
                    out.as_mut_ptr(),
                    out.len(),
                    &mut out_len,
                );
                if st == factz_status::FACTZ_OK {
                    assert!(out_len <= out.len());
                    let mut back = vec![0f32; 3 * n];
                    let st =
                        factz_particles_decompress(out.as_ptr(), out_len, back.as_mut_ptr(), n);
                    assert_eq!(st, factz_status::FACTZ_OK, "a stream factz wrote decodes");
                }
            }
            Op::CriticalPoints { ny, nx, capacity } => {
                let (ny, nx) = (usize::from(ny % 33), usize::from(nx % 33));
                let u = floats(&data, ny * nx);
                let v = floats(data.get(5..).unwrap_or(&[]), ny * nx);
                let mut count = 0usize;
                let mut out: Vec<MaybeUninit<factz_critical_point>> =
                    (0..capacity).map(|_| MaybeUninit::zeroed()).collect();
                factz_field_critical_points(
                    u.as_ptr(),
                    v.as_ptr(),
                    ny,
                    nx,
                    &mut count,
                    out.as_mut_ptr().cast(),
                    out.len(),
                );
            }
            Op::FofLabels { n, b, box_side } => {
                let n = usize::from(n);
                let xyz = floats(&data, 3 * n);
                let mut labels = vec![0u32; n];
                factz_fof_labels(xyz.as_ptr(), n, b, box_side, labels.as_mut_ptr());
            }
        }
    }
});
