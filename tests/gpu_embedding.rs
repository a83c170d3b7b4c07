//! What an engine embedding the GPU simulator relies on: world positions
//! on the GPU for its renderer, positions read back without blocking, and
//! run-time changes (materials, gravity, wind) that reach the GPU.

mod common;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec, build};
use strands::gpu::{GpuContext, GpuSimulator, TWIST_TOLERANCE_F32};
use strands::model::anchor::{Anchor, Keyframe};
use strands::model::params::{SimParams, Wind};
use strands::model::rods::RodMaterial;

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
        stretching: 0.0,
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
    assert_eq!(e.field, "rod");
    assert!(e.problem.contains("no rod 6"), "{e}");
    let skew = RodMaterial {
        bending: [1e-3, 2e-3, 1e-3],
        ..good
    };
    let e = sim.set_material(0, skew).unwrap_err();
    assert_eq!(e.field, "bending");
    assert!(e.problem.contains("positive definite"), "{e}");
    let weightless = RodMaterial {
        mass_per_length: 0.0,
        ..good
    };
    let e = sim.set_material(2, weightless).unwrap_err();
    assert_eq!(e.field, "mass_per_length");
    assert!(e.problem.contains("positive"), "{e}");
    assert_eq!(sim.rods().material[0], good);
    assert_eq!(sim.rods().material[2], good);
}

/// The kernels are compiled once per device, set of collider kinds and
/// vertex layout: simulators on one context and its clones share them;
/// another set of kinds has its own.
#[test]
fn pipelines_are_built_once_per_device() {
    use strands::gpu::pipelines::ColliderKinds;
    let ctx = gpu();
    let a = simulator(&ctx, None);
    let _b = simulator(&ctx.clone(), None);
    let kinds = ColliderKinds::of(&a.rods().colliders);
    let theirs = ctx.clone().pipelines_for(kinds, a.vertex_layout());
    assert!(std::sync::Arc::ptr_eq(
        &ctx.pipelines_for(kinds, a.vertex_layout()),
        &theirs
    ));
    // The kinds asked for.
    assert_eq!(theirs.kinds, kinds);
    assert!(!std::sync::Arc::ptr_eq(&ctx.pipelines(), &theirs) || kinds == ColliderKinds::ALL);
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

/// The scene of `simulator` with the head not scripted (the caller drives
/// it), no wind.
fn undriven(ctx: &GpuContext) -> GpuSimulator {
    let (specs, mut anchors) = scene();
    anchors[1].keyframes.clear();
    let (rods, state) = build(&specs, anchors);
    GpuSimulator::new(ctx, rods, state, SimParams::default()).expect("GPU simulator")
}

/// The head's motion, sampled at the end of frame `k` (s = k·dt).
fn head_at(k: u32) -> (DVec3, DVec3) {
    let s = k as f64;
    (
        DVec3::new(0.01 * s, 0.004 * s * s, -0.003 * s),
        DVec3::new(0.02 * s, 0.1 * s, 0.0),
    )
}

/// An anchor driven frame by frame from the caller's clock runs exactly as
/// the same motion scripted by keyframes (the anchor interpolates over the
/// substeps by the keyframe rule: src/model/anchor.rs), on the GPU as on the CPU
/// (tests/driving.rs): bit for bit.
#[test]
fn a_driven_anchor_runs_as_its_keyframes() {
    let ctx = gpu();
    let frames = 6;
    let mut driven = undriven(&ctx);
    let dt = driven.params().dt;
    for k in 1..=frames {
        let (tr, rv) = head_at(k);
        driven
            .set_anchor_pose(1, k as f64 * dt, tr, rv)
            .expect("pose after now");
        driven.step();
    }
    let mut scripted = undriven(&ctx);
    let keyframes = (0..=frames)
        .map(|k| {
            let (tr, rv) = head_at(k);
            Keyframe::new(k as f64 * dt, tr, rv)
        })
        .collect();
    scripted
        .set_anchor_keyframes(1, keyframes)
        .expect("valid keyframes");
    for _ in 0..frames {
        scripted.step();
    }
    let (a, b) = (driven.read_state(), scripted.read_state());
    assert_eq!(a.pos, b.pos);
    assert_eq!(a.theta, b.theta);
    // The head did move the hair.
    assert!(max_diff(&a.pos, &undriven(&ctx).read_state().pos) > 1e-3);
    // A pose for a time already past is refused, naming the anchor.
    let e = driven
        .set_anchor_pose(1, driven.time(), DVec3::ZERO, DVec3::ZERO)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`head`") && e.contains("not after"), "{e}");
}

/// Teleporting the head 60 m and turning it 1.2 rad about the vertical,
/// with its hair, changes nothing else: gravity is vertical and there is
/// no wind, so the laws are the same in the moved frame, and the teleported
/// run mapped back by the inverse motion follows the run left in place, to
/// the GPU's rounding of the anchor poses: a pose's offset is an f32 (the
/// head's pivot ~190 m from the world origin after the jump, rounded to
/// ε·190 m ≈ 2e-5 m; bound 4ε·|offset|, measured 1e-5 m on lavapipe), far
/// below the 1e-1 m the hair swings in these frames. A bounce (speed from
/// the jump) would show at once: the hair would fly 60 m / h away.
#[test]
fn teleport_moves_the_hair_without_a_bounce() {
    let ctx = gpu();
    let mut kept = simulator(&ctx, None);
    let mut moved = simulator(&ctx, None);
    for _ in 0..3 {
        kept.step();
        moved.step();
    }
    let t = moved.time();
    let (tr0, rv0) = moved.rods().anchors[1].sample(t);
    let jump = DVec3::new(60.0, 0.0, -20.0);
    let turn = DVec3::Y * 1.2;
    moved
        .teleport_anchor(1, tr0 + jump, rv0 + turn)
        .expect("teleport");
    // The head's script goes on from the new pose, in the moved frame: the
    // teleport's motion M = P₁(t) P₀(t)⁻¹ composed with the old script,
    // whose translation from t on turns with the head (rotations about one
    // axis add).
    let turned = glam::DQuat::from_scaled_axis(turn);
    moved
        .set_anchor_keyframes(
            1,
            kept.rods().anchors[1]
                .keyframes
                .iter()
                .map(|k| {
                    let tr = tr0 + jump + turned * (k.translation - tr0);
                    Keyframe::new(k.t, tr, k.rotation + turn)
                })
                .collect(),
        )
        .expect("keyframes");
    let before = kept.read_state();
    for _ in 0..4 {
        kept.step();
        moved.step();
    }
    let (a, b) = (kept.read_state(), moved.read_state());
    // The motion teleport applied: x ↦ P₁(P₀⁻¹(x)) with P the head's poses.
    let p0 = kept.rods().anchors[1].pose(a.time);
    let p1 = moved.rods().anchors[1].pose(b.time);
    let back: Vec<DVec3> = b
        .pos
        .iter()
        .map(|&x| p0.point(p1.inverse_point(x)))
        .collect();
    let apart = max_diff(&back, &a.pos);
    let swing = max_diff(&a.pos, &before.pos);
    eprintln!("teleported run {apart:e} m from the kept one; hair swung {swing:e} m");
    assert!(swing > 1e-2, "the hair moved {swing:e} m");
    let offset = (p1.pivot + p1.translation).length();
    let bound = 4.0 * f32::EPSILON as f64 * offset;
    assert!(
        apart < bound,
        "teleported hair {apart:e} m from the kept run (bound {bound:e})"
    );
    let speed =
        |s: &strands::model::rods::State| s.vel.iter().map(|v| v.length()).fold(0.0, f64::max);
    assert!((speed(&b) - speed(&a)).abs() < 1e-3 * speed(&a).max(1.0));
    // The world frame cannot be teleported.
    assert!(moved.teleport_anchor(0, jump, turn).is_err());
}

/// The kernels have no rod–rod contact: a rod set with `[rod_contact]`
/// members is refused by name.
#[test]
fn rod_contact_is_refused_by_name() {
    let ctx = gpu();
    let (specs, anchors) = scene();
    let (mut rods, state) = build(&specs, anchors);
    rods.rod_contact.member = vec![true; rods.rod_count()];
    let Err(e) = GpuSimulator::new(&ctx, rods, state, SimParams::default()) else {
        panic!("a GPU simulator with rod–rod contact");
    };
    assert_eq!(
        e.to_string(),
        "[rod_contact] runs on the CPU reference only (`CpuSimulator`): the GPU kernels have no rod–rod contact"
    );
}

/// The kernels step the symplectic integrator only: a simulator asked for
/// an implicit one, at creation or later, is refused by name with the way
/// to run it, and keeps its parameters.
#[test]
fn implicit_integrators_are_refused_by_name() {
    use strands::model::params::Integrator;
    let ctx = gpu();
    let (specs, anchors) = scene();
    let (rods, state) = build(&specs, anchors);
    let implicit = SimParams {
        integrator: Integrator::Static,
        ..SimParams::default()
    };
    let Err(e) = GpuSimulator::new(&ctx, rods, state, implicit) else {
        panic!("a GPU simulator with the static integrator");
    };
    assert_eq!(
        e.to_string(),
        "sim.integrator = \"static\" runs on the CPU reference only (`CpuSimulator`): the GPU kernels step the symplectic integrator"
    );
    let mut sim = simulator(&ctx, None);
    let e = sim
        .set_params(SimParams {
            integrator: Integrator::BackwardEuler,
            ..SimParams::default()
        })
        .unwrap_err();
    assert!(e.to_string().contains("\"backward-euler\""), "{e}");
    assert_eq!(sim.params().integrator, Integrator::Symplectic);
}
