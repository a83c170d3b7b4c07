//! What an engine embedding the GPU simulator relies on: world positions
//! on the GPU for its renderer, positions read back without blocking, and
//! run-time changes (materials, gravity, wind) that reach the GPU.

mod common;

use common::*;
use glam::DVec3;
use strands::anchor::{Anchor, Keyframe};
use strands::build::{EndSpec, RodSpec, build};
use strands::gpu::{GpuContext, GpuSimulator, TWIST_TOLERANCE_F32, read_mapped};
use strands::params::{SimParams, Wind};
use strands::rods::{MaterialError, RodMaterial};

/// Six random rods 120 m from the world origin (so the f32 world point
/// rounds at ε·120 m ≈ 1.4e-5 m), clamped to a head that moves and turns.
fn scene() -> (Vec<RodSpec>, Vec<Anchor>) {
    let mut rng = rng(21);
    let far = DVec3::new(120.0, -3.0, 40.0);
    let specs = (0..6)
        .map(|_| {
            let mut s = random_rod(&mut rng, 14, EndSpec::Clamped(1), EndSpec::Free);
            for p in s.points.iter_mut().chain(s.rest.iter_mut()) {
                *p += far;
            }
            s.material.radius = 2e-4;
            s
        })
        .collect();
    let head = Anchor {
        name: "head".into(),
        pivot: far,
        keyframes: vec![
            Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
            Keyframe::new(0.5, DVec3::new(0.05, 0.02, 0.0), DVec3::Y * 0.4),
        ],
    };
    (specs, vec![Anchor::world(), head])
}

fn simulator(ctx: &GpuContext, material: Option<RodMaterial>) -> GpuSimulator {
    let (mut specs, anchors) = scene();
    if let Some(m) = material {
        for s in &mut specs {
            s.material = m;
        }
    }
    let (rods, state) = build(&specs, anchors);
    GpuSimulator::new(ctx, rods, state, SimParams::default()).expect("GPU simulator")
}

/// A GPU buffer's first `size` bytes, through a staging copy.
fn read_buffer(ctx: &GpuContext, buffer: &wgpu::Buffer, size: u64) -> Vec<u8> {
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test staging"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
    ctx.queue.submit([encoder.finish()]);
    read_mapped(&ctx.device, &staging, size)
}

/// The world-position buffer holds, after every frame, each vertex's world
/// point (the f64 state's to f32 rounding of the origin's magnitude: two
/// roundings of ~|x| = 127 m, 2ε|x| ≈ 3e-5 m) and its rod's radius.
#[test]
fn world_position_buffer_follows_the_state() {
    let ctx = gpu();
    let mut sim = simulator(&ctx, None);
    let nv = sim.rods().vertex_count();
    let bound = 2.0 * f32::EPSILON as f64 * 130.0;
    let mut previous: Option<Vec<[f32; 4]>> = None;
    for frame in 0..4 {
        if frame > 0 {
            sim.step();
        }
        let buffer = sim.world_position_buffer().clone();
        let world: Vec<[f32; 4]> =
            bytemuck::pod_collect_to_vec(&read_buffer(&ctx, &buffer, 16 * nv as u64));
        let state = sim.read_state();
        for (v, (w, p)) in world.iter().zip(&state.pos).enumerate() {
            let d = (DVec3::new(w[0] as f64, w[1] as f64, w[2] as f64) - *p).length();
            assert!(
                d <= bound,
                "frame {frame} vertex {v}: {d:e} m from the state"
            );
            assert_eq!(w[3], 2e-4, "the radius in w");
        }
        // The head moves: the buffer is refilled each frame, not left stale.
        if let Some(prev) = &previous {
            let moved = prev
                .iter()
                .zip(&world)
                .map(|(a, b)| (0..3).map(|k| (a[k] - b[k]).abs()).fold(0.0, f32::max))
                .fold(0.0, f32::max);
            assert!(
                moved > 1e-4,
                "frame {frame}: world positions moved {moved:e} m"
            );
        }
        previous = Some(world);
    }
}

/// Positions read back without blocking are the state's, exactly (the same
/// conversion from the same GPU positions), and arrive once.
#[test]
fn positions_read_back_without_blocking_are_the_state() {
    let ctx = gpu();
    let mut sim = simulator(&ctx, None);
    sim.step();
    sim.step();
    let mut readback = sim.read_positions_async();
    let mut polls = 0;
    let got = loop {
        match readback.try_take().expect("read-back") {
            Some(p) => break p,
            None => {
                polls += 1;
                assert!(polls < 1_000_000, "the positions never arrived");
                std::thread::yield_now();
            }
        }
    };
    assert!(readback.try_take().expect("second poll").is_none());
    let state = sim.read_state();
    assert_eq!(got.time, state.time);
    assert_eq!(got.pos, state.pos);
    // `wait` gives the same.
    assert_eq!(
        sim.read_positions_async().wait().expect("wait").pos,
        state.pos
    );
}

/// A material, gravity and wind set at run time reach the GPU: a simulator
/// made with them and one changed to them before its first step run the
/// same frames, up to the twist solve's stopping point (both solve the
/// quasistatic twist for the stiff material, from different starting
/// angles, to `TWIST_TOLERANCE_F32` = 1e-6 rad; a frame turned by that moves
/// a rod by at most ~1e-6 of its length). The changed one also differs from
/// an unchanged one by far more (the change was not a no-op).
#[test]
fn run_time_changes_reach_the_gpu() {
    let ctx = gpu();
    let stiff = RodMaterial {
        bending: [8e-3, 1e-3, 3e-3],
        twist: 2e-3,
        mass_per_length: 0.05,
        drag: 0.3,
        radius: 2e-4,
    };
    let gravity = DVec3::new(1.0, -4.0, 0.5);
    let wind = Wind {
        velocity: DVec3::new(2.0, 0.0, 1.0),
        gust_amplitude: 0.5,
        ..Wind::default()
    };
    let run = |sim: &mut GpuSimulator| {
        for _ in 0..5 {
            sim.step();
        }
        sim.read_state()
    };
    let mut made = simulator(&ctx, Some(stiff));
    made.set_gravity(gravity);
    made.set_wind(wind);
    let mut changed = simulator(&ctx, None);
    let mut unchanged = simulator(&ctx, None);
    for r in 0..changed.rods().rod_count() {
        changed.set_material(r, stiff).expect("valid material");
    }
    changed.set_gravity(gravity);
    changed.set_wind(wind);
    assert_eq!(changed.rods().mass, made.rods().mass);
    let (a, b, c) = (run(&mut made), run(&mut changed), run(&mut unchanged));
    // Measured on lavapipe: 2e-7 rad and 1e-8 m apart; the change itself
    // moves the rods 7e-2 m.
    let theta = max_abs_diff(&a.theta, &b.theta);
    assert!(
        theta <= TWIST_TOLERANCE_F32,
        "twist angles {theta:e} rad apart"
    );
    let length: f64 = changed.rods().rest_len.iter().sum::<f64>() / 6.0;
    let apart = max_diff(&a.pos, &b.pos);
    assert!(
        apart <= TWIST_TOLERANCE_F32 * length,
        "positions {apart:e} m apart"
    );
    assert!(max_diff(&b.pos, &c.pos) > 1e-3);
}

/// Bad materials are refused with what is wrong, and change nothing.
#[test]
fn bad_materials_are_refused() {
    let ctx = gpu();
    let mut sim = simulator(&ctx, None);
    let good = sim.rods().material[0];
    let e = sim.set_material(6, good).unwrap_err();
    assert_eq!(e, MaterialError::NoSuchRod { rod: 6, count: 6 });
    let skew = RodMaterial {
        bending: [1e-3, 2e-3, 1e-3],
        ..good
    };
    let e = sim.set_material(0, skew).unwrap_err().to_string();
    assert!(e.contains("positive definite"), "{e}");
    let weightless = RodMaterial {
        mass_per_length: 0.0,
        ..good
    };
    let e = sim.set_material(2, weightless).unwrap_err().to_string();
    assert!(
        e.contains("rod 2: mass_per_length") && e.contains("positive"),
        "{e}"
    );
    assert_eq!(sim.rods().material[0], good);
    assert_eq!(sim.rods().material[2], good);
}

/// The kernels are compiled once per device: simulators on one context and
/// its clones share them.
#[test]
fn pipelines_are_built_once_per_device() {
    let ctx = gpu();
    let _a = simulator(&ctx, None);
    let _b = simulator(&ctx.clone(), None);
    assert!(std::sync::Arc::ptr_eq(
        &ctx.pipelines(),
        &ctx.clone().pipelines()
    ));
    let other = gpu();
    assert!(!std::sync::Arc::ptr_eq(
        &ctx.pipelines(),
        &other.pipelines()
    ));
}
