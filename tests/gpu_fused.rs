//! The fused substep (shaders/substep.wgsl: the stages of a substep in one
//! dispatch, `Form::Fused` one workgroup per pack, `Form::WalkedFused` one
//! invocation per rod) against the same stages as separate dispatches
//! (`Form::Packed`, `Form::Walked`), from the same state: the fused kernels
//! call the stage functions the staged kernels call, in `cpu::substep`'s
//! order, so the two agree to f32 rounding, with hair–hair interaction (the
//! substep split around the grid: `substep_start`, grid, `substep_finish`)
//! and without (one `substep`), for each projection the fused forms run.

mod common;

use std::path::Path;

use common::*;
use strands::gpu::{Form, GpuSimulator};
use strands::scene::Scene;

/// 40 strands of 10 segments hanging under a sphere (the head), moving:
/// the CPU's state after 4 frames with random extra velocities, so that
/// contact, friction and the projection all act.
const SCENE: &str = r#"
[sim]
dt = 0.016666666666666666
substeps = 8
gravity = [0.0, -9.81, 0.0]

[materials.hair]
density = 1300.0
radius = 5e-5
youngs_modulus = 3.9e8
shear_modulus = 1.5e8

[[colliders]]
name = "head"
shape = "sphere"
center = [0.0, 0.0, 0.0]
radius = 0.1
friction = 0.3
static_friction = 0.4

[[rods]]
kind = "scalp"
group = "hair"
material = "hair"
center = [0.0, 0.0, 0.0]
radius = 0.1
count = 40
length = 0.25
segments = 10
cap_angle = 80.0
up = [0.0, -1.0, 0.0]

[interaction]
groups = ["hair"]
resolution = 16
"#;

/// Largest position (m) and twist-angle (rad) differences between the
/// `staged` and `fused` forms after `frames` frames of the scene with
/// `set`, and how far the hair moved.
fn staged_against_fused(staged: Form, fused: Form, set: &[&str], frames: usize) -> (f64, f64, f64) {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scene = Scene::parse(SCENE, Path::new("fused.toml"), &set).unwrap();
    let (rods, state) = scene.build();
    let mut cpu = strands::cpu::CpuSimulator::new(rods.clone(), state, scene.params);
    for _ in 0..4 {
        cpu.step().unwrap();
    }
    let mut state = cpu.state.clone();
    let mut r = rng(3);
    for v in state.vel.iter_mut() {
        *v += unit(&mut r) * 0.2;
    }
    let ctx = gpu();
    let run = |form: Form| {
        let mut g = GpuSimulator::new(&ctx, rods.clone(), state.clone(), scene.params).unwrap();
        g.set_form(form)
            .expect("the test adapter runs the fused form");
        let start = g.read_state();
        for _ in 0..frames {
            g.step_checked().expect("stable");
        }
        (start, g.read_state())
    };
    let (start, staged) = run(staged);
    let (_, fused) = run(fused);
    let travel = max_diff(&staged.pos, &start.pos);
    (
        max_diff(&staged.pos, &fused.pos),
        max_abs_diff(&staged.theta, &fused.theta),
        travel,
    )
}

/// Same stages, same order, same f32 arithmetic: the two forms differ only
/// where the shader compiler contracts or orders the inlined code
/// differently, a few ulps of a position (ε|x| ≈ 3e-8 m at 0.35 m from the
/// origin) a substep, grown by the dynamics over 3 frames (24 substeps):
/// bound 1e-6 m, the one-frame GPU–CPU parity bound, and 1e-5 rad.
fn assert_agree(set: &[&str]) {
    for (staged, fused) in [
        (Form::Packed, Form::Fused),
        (Form::Walked, Form::WalkedFused),
    ] {
        let (dx, dtheta, travel) = staged_against_fused(staged, fused, set, 3);
        eprintln!(
            "{set:?}: {staged:?} − {fused:?} {dx:.3e} m, {dtheta:.3e} rad; travel {travel:.3e} m"
        );
        assert!(travel > 1e-3, "the hair did not move: {travel:.3e} m");
        assert!(
            dx <= 1e-6,
            "{set:?}, {fused:?}: positions differ by {dx:.3e} m"
        );
        assert!(
            dtheta <= 1e-5,
            "{set:?}, {fused:?}: twist differs by {dtheta:.3e} rad"
        );
    }
}

/// With hair–hair interaction: `substep_start`, the grid, `substep_finish`.
#[test]
fn fused_halves_around_the_grid_match_the_stages() {
    assert_agree(&[]);
}

/// Without interaction, one `substep` dispatch, for the fast projection
/// (the default), SHAKE (with `save_start` in the first half) and none.
#[test]
fn one_dispatch_substep_matches_the_stages_for_each_projection() {
    for method in ["fast", "shake", "none"] {
        let m = format!("sim.projection.method=\"{method}\"");
        assert_agree(&["interaction.groups=[]", &m]);
    }
}
