//! The kernels' own sine and cosine (shaders/common.wgsl `sin_cos`, which
//! the material frames use in place of the built-ins that GPUs approximate
//! in hardware) against f64 `sin_cos` of the same f32 angles: each value
//! within 1.5 ulps of f32 at the value plus the reduction's error, which
//! grows with the number k of quarter turns taken off. (At f32 a single
//! coefficient can hide below that: leaving out the last cos term moves
//! cos by at most 0.4 ulp. What the test bounds is the accuracy.)

mod common;

use bytemuck::cast_slice;
use wgpu::util::DeviceExt;

/// The probe: each element's x replaced by (x, sin x, cos x), as the kernels
/// compute them.
const PROBE: &str = r#"
@group(0) @binding(0) var<storage, read_write> probe: array<vec4<f32>>;

@compute @workgroup_size(64)
fn probe_sin_cos(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= arrayLength(&probe)) {
        return;
    }
    let x = probe[id.x].x;
    let sc = sin_cos(x);
    probe[id.x] = vec4<f32>(x, sc.x, sc.y, 0.0);
}
"#;

/// (sin x, cos x) of each angle on the test GPU.
fn gpu_sin_cos(angles: &[f32]) -> Vec<(f32, f32)> {
    let ctx = common::gpu();
    let device = &ctx.device;
    let source = format!("{}{PROBE}", strands::gpu::layout::shader_source());
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("sin_cos probe"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("sin_cos probe"),
        layout: None,
        module: &module,
        entry_point: Some("probe_sin_cos"),
        compilation_options: Default::default(),
        cache: None,
    });
    let data: Vec<[f32; 4]> = angles.iter().map(|&x| [x, 0.0, 0.0, 0.0]).collect();
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("sin_cos probe"),
        contents: cast_slice(&data),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("sin_cos probe"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups((angles.len() as u32).div_ceil(64), 1, 1);
    }
    ctx.queue.submit([encoder.finish()]);
    let bytes = common::read_buffer(&ctx, &buffer, (data.len() * 16) as u64);
    let out: &[[f32; 4]] = cast_slice(&bytes);
    out.iter()
        .zip(angles)
        .map(|(v, &x)| {
            assert_eq!(v[0].to_bits(), x.to_bits(), "the probe moved its input");
            (v[1], v[2])
        })
        .collect()
}

/// One ulp of f32 at `x`: 2^(e − 23) for |x| in [2^e, 2^(e+1)).
fn ulp_of(x: f64) -> f64 {
    if x == 0.0 {
        return 0.0;
    }
    2f64.powi(x.abs().log2().floor() as i32 - 23)
}

/// Angles near 0 (down to 1e-30), on and beside every multiple of π/4 up to
/// 100 turns (where the quadrant changes and sin or cos passes zero), a dense
/// sweep of ±20 rad, and a few up to the exact reduction's 6400 rad.
fn angles() -> Vec<f32> {
    let mut out = vec![0.0f32, -0.0];
    for e in -30..0 {
        let x = 10f32.powi(e);
        out.extend([x, -x]);
    }
    for k in -800..=800 {
        let x = k as f64 * std::f64::consts::FRAC_PI_4;
        let x32 = x as f32;
        out.extend([
            x32,
            f32::from_bits(x32.to_bits() + 1),
            f32::from_bits(x32.to_bits().saturating_sub(1)),
        ]);
    }
    for i in 0..40_000 {
        out.push(-20.0 + 40.0 * i as f32 / 40_000.0);
    }
    for x in [100.0f32, 1000.0, 3141.5927, 6000.0, 6399.0] {
        out.extend([x, -x, x + 0.3, -x - 0.7]);
    }
    out
}

/// Law checked: sin and cos of the f32 angle x, as f64 computes them (well
/// below f32's rounding), within 1.5 ulps of f32 at the value plus the
/// error of the reduced angle r = x − kπ/2, which moves sin and cos by at
/// most as much: |k|·1.8e-15 for the three parts of π/2
/// missing the rest of it, 2⁻²⁴|k·PIO2_LO| for rounding that product (the
/// other two are exact), and 2⁻²⁴|r| for rounding the last difference.
#[test]
fn kernels_sin_cos_is_within_ulps_of_f64() {
    let xs = angles();
    let got = gpu_sin_cos(&xs);
    let ulp = f32::EPSILON as f64;
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &(s, c)) in xs.iter().zip(&got) {
        let xd = x as f64;
        let (s64, c64) = xd.sin_cos();
        let k = (xd / std::f64::consts::FRAC_PI_2).round();
        let r = xd - k * std::f64::consts::FRAC_PI_2;
        let pio2_lo = 4.371138828673793e-8;
        let reduction = k.abs() * (1.8e-15 + 0.5 * ulp * pio2_lo) + 0.5 * ulp * r.abs();
        for (name, got, exact) in [("sin", s as f64, s64), ("cos", c as f64, c64)] {
            let err = (got - exact).abs();
            let bound = 1.5 * ulp_of(exact) + reduction + f32::MIN_POSITIVE as f64;
            assert!(
                err <= bound,
                "{name}({x:e}) = {got:e}, f64 {exact:e}: off by {err:.2e} > {bound:.2e}"
            );
            if err / bound > worst.0 {
                worst = (err / bound, x);
            }
        }
    }
    eprintln!(
        "{} angles: the largest error {:.2} of its bound, at x = {:e}",
        xs.len(),
        worst.0,
        worst.1
    );
}
