//! Helpers shared by the integration tests: random rods and simulators.
#![allow(dead_code)]

use glam::DVec3;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use strands::build::{EndSpec, RodSpec, build, check_rod};
use strands::cpu::CpuSimulator;
use strands::model::anchor::Anchor;
use strands::model::params::SimParams;
use strands::model::rods::RodMaterial;

pub fn rng(seed: u64) -> Pcg64 {
    Pcg64::seed_from_u64(seed)
}

pub fn unit(rng: &mut Pcg64) -> DVec3 {
    loop {
        let v = DVec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        );
        if v.length() > 0.1 && v.length() < 1.0 {
            return v.normalize();
        }
    }
}

/// A random curved polyline of `n` vertices and segment length about `h`:
/// each edge turns from the last by up to `turn` radians.
pub fn random_polyline(rng: &mut Pcg64, n: usize, h: f64, turn: f64) -> Vec<DVec3> {
    let mut p = vec![DVec3::ZERO];
    let mut t = unit(rng);
    for _ in 1..n {
        let len = h * rng.random_range(0.7..1.3);
        p.push(*p.last().unwrap() + t * len);
        let k = unit(rng);
        t = (t + (k - t * k.dot(t)) * turn.tan() * rng.random_range(0.0..1.0)).normalize();
    }
    p
}

/// An anisotropic material with a non-diagonal bending matrix.
pub fn aniso_material() -> RodMaterial {
    RodMaterial {
        bending: [2.0e-3, 0.4e-3, 0.7e-3],
        twist: 0.9e-3,
        mass_per_length: 0.02,
        drag: 0.0,
        radius: 0.0,
        stretching: 0.0,
    }
}

pub fn iso_material(bending: f64, twist: f64, mass_per_length: f64) -> RodMaterial {
    RodMaterial {
        bending: [bending, 0.0, bending],
        twist,
        mass_per_length,
        drag: 0.0,
        radius: 0.0,
        stretching: 0.0,
    }
}

/// A random naturally curved rod, deformed away from its rest shape.
pub fn random_rod(rng: &mut Pcg64, n: usize, start: EndSpec, end: EndSpec) -> RodSpec {
    let rest = random_polyline(rng, n, 0.1, 0.5);
    // Same edge lengths, directions turned by up to ~0.2 rad.
    let mut points = vec![rest[0]];
    for w in rest.windows(2) {
        let e = w[1] - w[0];
        let d = (e.normalize() + unit(rng) * 0.2).normalize() * e.length();
        points.push(*points.last().unwrap() + d);
    }
    let spec = RodSpec {
        name: "random".into(),
        points,
        rest,
        material: aniso_material(),
        start,
        end,
        frame_angle: 0.0,
    };
    check_rod(&spec).expect("random rod is valid");
    spec
}

/// One free–free rod through `points` (its rest shape too) of `material`,
/// anchored to nothing, with one collider on the world anchor: the
/// contact tests' scenes (an incline, a capsule, a ball).
pub fn free_rod_on(
    name: &str,
    points: Vec<DVec3>,
    material: RodMaterial,
    collider: strands::model::colliders::Collider,
) -> (strands::model::rods::RodSet, strands::model::rods::State) {
    let spec = RodSpec {
        name: name.into(),
        rest: points.clone(),
        points,
        material,
        start: EndSpec::Free,
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let (mut rods, state) = build(&[spec], vec![Anchor::world()]);
    rods.colliders.push(collider);
    (rods, state)
}

pub fn simulator(specs: &[RodSpec], params: SimParams) -> CpuSimulator {
    simulator_with_anchors(specs, vec![Anchor::world()], params)
}

pub fn simulator_with_anchors(
    specs: &[RodSpec],
    anchors: Vec<Anchor>,
    params: SimParams,
) -> CpuSimulator {
    for s in specs {
        check_rod(s).expect("valid rod");
    }
    let (rods, state) = build(specs, anchors);
    CpuSimulator::new(rods, state, params)
}

/// Parameters for tests of the elastic model alone: no gravity, tight twist solves.
pub fn elastic_params() -> SimParams {
    SimParams {
        gravity: DVec3::ZERO,
        twist_tolerance: 1e-13,
        twist_max_iterations: 100,
        ..SimParams::default()
    }
}

/// The GPU for GPU tests: the adapter wgpu's environment picks (lavapipe in
/// CI). Without one the test fails with the message saying how to get one;
/// it never passes silently.
///
/// With `STRANDS_TEST_APPROXIMATE_MATH=1` the context carries the errors of
/// a GPU's fast sin, cos and square roots
/// (`GpuContext::with_approximate_math`): any GPU test binary can then be
/// run to see whether its tolerances hold where those are not correctly
/// rounded.
pub fn gpu() -> strands::gpu::GpuContext {
    match strands::gpu::GpuContext::headless() {
        Ok(ctx) => {
            let ctx = as_asked(ctx);
            eprintln!("GPU test on {}", ctx.describe());
            ctx
        }
        Err(e) => panic!("GPU tests need a GPU adapter: {e}"),
    }
}

/// `ctx`, with a GPU's approximate math emulated where
/// `STRANDS_TEST_APPROXIMATE_MATH=1` asks for it (`gpu`): for tests that
/// make their own device and compare it with `gpu()`'s.
pub fn as_asked(ctx: strands::gpu::GpuContext) -> strands::gpu::GpuContext {
    if std::env::var("STRANDS_TEST_APPROXIMATE_MATH").is_ok_and(|v| v == "1") {
        ctx.with_approximate_math()
    } else {
        ctx
    }
}

/// Ulps of f32 that the kernels' atan2, length and normalize may be off
/// beyond correct rounding on `ctx`, for tolerances: none on a CPU adapter
/// (lavapipe rounds them correctly), `layout::APPROX_ULPS` where the
/// context emulates a GPU's approximations (`with_approximate_math`) and on
/// any other adapter, whose hardware approximates them. (The material
/// frames' sin and cos are the kernels' own, within 1.5 ulps everywhere,
/// tests/gpu_sin_cos.rs; the wind's is the built-in.)
pub fn function_ulps(ctx: &strands::gpu::GpuContext) -> f64 {
    if ctx.approximate_math() || ctx.info.device_type != wgpu::DeviceType::Cpu {
        strands::gpu::layout::APPROX_ULPS
    } else {
        0.0
    }
}

/// Two GPU simulations of one scene, stepped alike, with the same bits:
/// positions, velocities, twist, tangents, reference frames and contacts
/// (`at` names the comparison in a failure). Returns the vertices in
/// contact (depth > 0), so that a caller can check contact was exercised.
pub fn assert_same_gpu_bits(
    a: &strands::gpu::GpuSimulator,
    b: &strands::gpu::GpuSimulator,
    at: &str,
) -> usize {
    let (sa, sb) = (a.read_state(), b.read_state());
    assert_eq!(sa.pos, sb.pos, "{at}: positions");
    assert_eq!(sa.vel, sb.vel, "{at}: velocities");
    assert_eq!(sa.theta, sb.theta, "{at}: twist");
    assert_eq!(sa.tangent, sb.tangent, "{at}: tangents");
    assert_eq!(sa.ref_u, sb.ref_u, "{at}: reference frames");
    // The contacts are the last substep's.
    let contacts = b.read_contacts();
    assert_eq!(a.read_contacts(), contacts, "{at}: contacts");
    contacts.iter().filter(|c| c.depth > 0.0).count()
}

/// Largest distance between corresponding vectors.
pub fn max_diff(a: &[DVec3], b: &[DVec3]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x - *y).length())
        .fold(0.0, f64::max)
}

/// Largest difference between corresponding numbers.
pub fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// A GPU buffer's first `size` bytes, through a staging copy.
pub fn read_buffer(ctx: &strands::gpu::GpuContext, buffer: &wgpu::Buffer, size: u64) -> Vec<u8> {
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test staging"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
    ctx.queue.submit([encoder.finish()]);
    strands::gpu::read_mapped(&ctx.device, &staging, size)
}
