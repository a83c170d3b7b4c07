//! The whole frame in one dispatch (`Form::WalkedFrame`, shaders/frame.wgsl:
//! each invocation takes its rod through every substep of the frame)
//! against the walked substep dispatched once a substep
//! (`Form::WalkedFused`), from the same state. Without hair–hair
//! interaction a rod's substep reads and writes only its own vertices,
//! edges and contacts, the anchors' poses and the colliders, so the order
//! "every rod through substep k, then k + 1" (the CPU's and walked-fused's)
//! and "each rod through all substeps" compute the same values, with the
//! same kernel code: on a CPU adapter the same bits.
//!
//! What changes from one substep to the next (the gust's phase, the
//! anchors' pose slots, the colliders' poses) reaches the whole-frame
//! kernel through the frame's table of steps rather than the uniform
//! bound at each substep's entry, so the scene moves all of it: the head
//! (a clamp's anchor and a sphere's) turns and moves from the first
//! substep, and the wind gusts. Made to read its first substep's values
//! all frame long, the whole-frame kernel ended 3.6e-2 m from the substeps
//! dispatched apart after 3 frames (its gust phase alone so: 5.2e-3 m),
//! on lavapipe.

mod common;

use std::path::Path;

use common::*;
use strands::gpu::{Form, GpuSimulator};
use strands::scene::Scene;

/// 24 strands of 12 segments on a head that turns and moves from t = 0, a
/// sphere on the head's anchor and a capsule on the body's, in gusty wind;
/// and a strand clamped at its far end to the head, so that an end clamp
/// follows the moving anchor too. (No long strand: on lavapipe a
/// 300-vertex strand's 8 substeps in one invocation pass llvmpipe's loop
/// limit, docs/GPU.md, "Limits".)
const SCENE: &str = r#"
[sim]
dt = 0.016666666666666666
substeps = 8
gravity = [0.0, -9.81, 0.0]
drag = 2e-4

[sim.wind]
velocity = [1.0, 0.0, 0.5]
gust_amplitude = 2.0
gust_frequency = 3.0
gust_wavelength = 0.5

[materials.hair]
density = 1300.0
radius = 5e-5
youngs_modulus = 3.9e8
shear_modulus = 1.5e8

[anchors.head]
pivot = [0.0, 1.6, 0.0]
keyframes = [
  { t = 0.0 },
  { t = 0.2, translation = [0.1, 0.02, 0.0], rotation = [0.0, 45.0, 10.0] },
]

[anchors.body]
pivot = [0.0, 1.6, 0.0]
keyframes = [
  { t = 0.0 },
  { t = 0.2, translation = [0.1, 0.0, 0.0] },
]

[[colliders]]
name = "head"
shape = "sphere"
anchor = "head"
center = [0.0, 1.6, 0.0]
radius = 0.1
friction = 0.3
static_friction = 0.4

[[colliders]]
name = "shoulders"
shape = "capsule"
anchor = "body"
a = [-0.2, 1.42, 0.0]
b = [0.2, 1.42, 0.0]
radius = 0.06
friction = 0.3
static_friction = 0.4

[[rods]]
kind = "scalp"
material = "hair"
start_anchor = "head"
center = [0.0, 1.6, 0.0]
radius = 0.1
count = 24
length = 0.25
segments = 12
cap_angle = 80.0

[[rods]]
kind = "straight"
material = "hair"
from = [0.3, 1.75, 0.0]
to = [0.0, 1.75, 0.1]
segments = 12
end = "clamped"
end_anchor = "head"
"#;

/// Positions (m) and twist angles (rad) after `frames` frames of the scene
/// with `set`, in `form`, from the scene's start; and how far the roots
/// and the whole moved.
fn run(form: Form, set: &[&str], frames: usize) -> (strands::model::rods::State, f64) {
    let ctx = gpu();
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scene = Scene::parse(SCENE, Path::new("frame.toml"), &set).unwrap();
    let (rods, state) = scene.build();
    let mut g = GpuSimulator::new(&ctx, rods, state, scene.params).unwrap();
    g.set_form(form)
        .expect("the test adapter runs the walked fused forms");
    assert_eq!(g.running_form(), form, "{set:?}");
    let start = g.read_state();
    for _ in 0..frames {
        g.step_checked().expect("stable");
    }
    let end = g.read_state();
    let travel = max_diff(&end.pos, &start.pos);
    (end, travel)
}

/// For the fast projection (the default), SHAKE and none: `whole` gives
/// the same positions, velocities and twist as `apart`, its substeps
/// dispatched one by one, bit for bit on a CPU adapter (lavapipe: the same
/// kernel code, compiled in another module, and LLVM does not contract
/// across it differently). On a GPU the two modules are compiled apart and
/// a compiler may contract their inlined arithmetic differently, a few ulps
/// a substep that the dynamics grow: there the bound is 1e-6 m over one
/// frame, the GPU–CPU parity bound of a frame, and 1e-5 rad.
fn assert_frame_matches(apart: Form, whole: Form) {
    let on_cpu = gpu().info.device_type == wgpu::DeviceType::Cpu;
    let frames = if on_cpu { 3 } else { 1 };
    for method in ["fast", "shake", "none"] {
        let m = format!("sim.projection.method=\"{method}\"");
        let set = [m.as_str()];
        let (a, travel) = run(apart, &set, frames);
        let (w, _) = run(whole, &set, frames);
        let dx = max_diff(&a.pos, &w.pos);
        let dv = max_diff(&a.vel, &w.vel);
        let dtheta = max_abs_diff(&a.theta, &w.theta);
        eprintln!(
            "{method}: {apart} − {whole} {dx:.3e} m, {dv:.3e} m/s, {dtheta:.3e} rad; travel {travel:.3e} m"
        );
        assert!(
            travel > 1e-3,
            "{method}: the scene did not move: {travel:.3e} m"
        );
        if on_cpu {
            assert_eq!(dx, 0.0, "{method}: positions differ by {dx:.3e} m");
            assert_eq!(dv, 0.0, "{method}: velocities differ by {dv:.3e} m/s");
            assert_eq!(dtheta, 0.0, "{method}: twist differs by {dtheta:.3e} rad");
        } else {
            assert!(dx <= 1e-6, "{method}: positions differ by {dx:.3e} m");
            assert!(
                dtheta <= 1e-5,
                "{method}: twist differs by {dtheta:.3e} rad"
            );
        }
    }
}

/// The walked substep, an invocation a rod: `frame_rod`.
#[test]
fn walked_frame_matches_the_substeps_dispatched_apart() {
    assert_frame_matches(Form::WalkedFused, Form::WalkedFrame);
}

/// The frame's table grows with the substeps (`set_params` with more of
/// them: its buffer is made again and rebound), and a profiled frame
/// (`step_profiled`, each dispatch in a pass of its own) and a timed one
/// (`step_timed`) advance the state as `step` does: walked-frame against
/// walked-fused through a frame of 8 substeps, a profiled one, then 12
/// substeps a frame, plain and timed. A table left at 8 entries would
/// give the last 4 substeps of each frame stale or zero poses (the head
/// jumps back), and a profile that ran the frame kernel once a substep
/// would run 8 substeps eight times.
#[test]
fn frame_table_grows_and_profiled_frames_advance_alike() {
    let run = |form: Form| {
        let scene = Scene::parse(SCENE, Path::new("frame.toml"), &[]).unwrap();
        let (rods, state) = scene.build();
        let mut g = GpuSimulator::new(&gpu(), rods, state, scene.params).unwrap();
        g.set_form(form).unwrap();
        g.step();
        let profile = g.step_profiled();
        let mut params = *g.params();
        params.substeps = 12;
        g.set_params(params).unwrap();
        g.step();
        let timed = g.step_timed();
        (g.read_state(), profile, timed)
    };
    let (apart, profile_apart, timed_apart) = run(Form::WalkedFused);
    let (whole, profile_whole, timed_whole) = run(Form::WalkedFrame);
    let dx = max_diff(&apart.pos, &whole.pos);
    let dtheta = max_abs_diff(&apart.theta, &whole.theta);
    eprintln!("walked-fused − walked-frame after 4 frames: {dx:.3e} m, {dtheta:.3e} rad");
    assert!((apart.time - 4.0 / 60.0).abs() < 1e-12 && apart.time == whole.time);
    if gpu().info.device_type == wgpu::DeviceType::Cpu {
        assert_eq!(dx, 0.0);
        assert_eq!(dtheta, 0.0);
    } else {
        assert!(dx <= 1e-6 && dtheta <= 1e-5, "{dx:.3e} m, {dtheta:.3e} rad");
    }
    // Where the device times: one dispatch a substep, or one a frame.
    assert_eq!(profile_apart.is_some(), timed_apart.is_some());
    if let (Some(apart), Some(whole)) = (profile_apart, profile_whole) {
        let kernels = |p: &[(strands::gpu::schedule::Dispatch, f64)]| -> Vec<strands::gpu::Kernel> {
            p.iter().map(|(d, _)| d.kernel).collect()
        };
        assert_eq!(kernels(&apart), [strands::gpu::Kernel::SubstepRod]);
        assert_eq!(kernels(&whole), [strands::gpu::Kernel::FrameRod]);
        assert!(apart.iter().chain(&whole).all(|(_, s)| *s > 0.0));
        assert!(timed_whole.unwrap() > 0.0);
    }
}

/// A cable of `segments` segments (1 m, 1 mm radius, E = 1 MPa) hanging
/// from a clamp, `dt` a frame, the substeps its step limit asks.
fn cable(segments: u32, dt: f64) -> Scene {
    let src = format!(
        r#"
[sim]
dt = {dt}
substeps = "auto"
gravity = [0.0, -9.81, 0.0]

[materials.soft]
density = 1300.0
radius = 1e-3
youngs_modulus = 1e6
shear_modulus = 4e5

[[rods]]
name = "cable"
kind = "straight"
material = "soft"
from = [0.0, 0.0, 0.0]
to = [1.0, 0.0, 0.0]
segments = {segments}
start = "clamped"
"#
    );
    Scene::parse(&src, Path::new("cable.toml"), &[]).unwrap()
}

/// A run on the GPU is right or stops (docs/GPU.md, "Limits"): llvmpipe
/// ends every loop of an invocation once its loops together have run
/// 65,535 iterations, and a frame computed so is refused with
/// `Cause::LoopLimit`, naming the rod, never returned. Two cases pass the
/// limit on llvmpipe: a 500-segment cable's frame of 145 substeps in one
/// invocation (walked-frame; returned, it was 1.4e-3 m off the CPU), and
/// a 25,000-segment cable's substep in one (walked-fused, 2 substeps of
/// a 1e-7 s frame: at rest its substep walks the rod three times, the
/// forces sweep, the frames' walk and one twist walk, 75,000 iterations;
/// a 20,000-segment one passed it until the sweep handed the projection
/// its strain and a fourth walk went); the same cables with each stage a dispatch (walked)
/// stay within it and follow the CPU (the one-frame parity bound, 1e-6
/// m). On another adapter each form either stops so or follows the CPU.
#[test]
fn a_step_whose_loops_the_driver_cut_short_is_refused() {
    let ctx = gpu();
    let llvmpipe = ctx.info.name.contains("llvmpipe");
    for (segments, dt, cut) in [
        (500, 1.0 / 60.0, Form::WalkedFrame),
        (25_000, 1e-7, Form::WalkedFused),
    ] {
        let scene = cable(segments, dt);
        let (rods, state) = scene.build();
        let mut cpu = strands::cpu::CpuSimulator::new(rods.clone(), state.clone(), scene.params);
        cpu.step().expect("the CPU runs the cable");
        let run = |form: Form| {
            let mut g = GpuSimulator::new(&ctx, rods.clone(), state.clone(), scene.params).unwrap();
            g.set_form(form).unwrap();
            g.step_checked().map(|(s, _)| s)
        };
        let within = |s: &strands::model::rods::State| max_diff(&s.pos, &cpu.state.pos) < 1e-6;
        let apart = run(Form::Walked).expect("each stage a dispatch stays within the limit");
        assert!(within(&apart), "{segments} segments, walked");
        match run(cut) {
            Err(e) => {
                eprintln!("{segments} segments, {cut}: {e}");
                assert_eq!(e.cause, strands::cpu::Cause::LoopLimit, "{e}");
                assert_eq!(e.name, "cable");
                assert!(e.to_string().contains("65,535") && e.hint.contains("walked"));
            }
            Ok(s) => {
                assert!(
                    !llvmpipe,
                    "{segments} segments, {cut}: llvmpipe's limit not reported"
                );
                assert!(
                    within(&s),
                    "{segments} segments, {cut}: returned, and off the CPU"
                );
            }
        }
    }
}
