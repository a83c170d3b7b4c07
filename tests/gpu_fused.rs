//! The walked fused substep (shaders/substep.wgsl, `Form::WalkedFused`: the
//! stages of a substep in one dispatch, one invocation per rod) against the
//! same stages as separate dispatches (`Form::Walked`), from the same
//! state: the fused kernels call the stage functions the staged kernels
//! call, in `cpu::substep::substep`'s order, so the two agree to f32 rounding, with
//! hair–hair interaction (the substep split around the grid:
//! `substep_start_rod`, grid, `substep_finish_rod`) and without (one
//! `substep_rod`), for each projection the fused form runs.

mod common;

use std::path::Path;

use common::*;
use rand::RngExt;
use strands::gpu::{Form, GpuSimulator};
use strands::scene::Scene;

/// 40 strands of 10 segments hanging under a sphere (the head) and one
/// strand of 300 vertices, moving: the CPU's state after 4 frames with
/// random extra velocities, so that contact, friction and the projection
/// all act.
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

# A long strand (300 vertices), clamped at its end (the hair at its
# start), so that an end clamp's vertices are integrated too.
[materials.soft]
density = 1300.0
radius = 5e-5
youngs_modulus = 5e4
shear_modulus = 2e4

[[rods]]
kind = "straight"
material = "soft"
from = [0.12, -0.05, 0.0]
to = [0.42, -0.05, 0.0]
segments = 299
end = "clamped"

[interaction]
groups = ["hair"]
resolution = 16
"#;

/// The substeps per frame of the scene with `set` (`sim.substeps`).
fn substeps_of(set: &[&str]) -> u32 {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    Scene::parse(SCENE, Path::new("fused.toml"), &set)
        .unwrap()
        .params
        .substeps
}

/// Largest position (m) and twist-angle (rad) differences between the
/// staged (`Form::Walked`) and the fused (`Form::WalkedFused`) walked
/// forms after `frames` frames of the scene with `set`, and the least of
/// how far the hair and the long strand moved, and (where `ulps` > 0) how
/// far the staged form moves from its own path when each start position
/// coordinate is moved by `ulps` of itself (f32 units in the last place,
/// alternate signs at random): what the scene's dynamics make of a
/// rounding difference.
fn staged_against_fused(set: &[&str], frames: usize, ulps: f64) -> (f64, f64, f64, f64) {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scene = Scene::parse(SCENE, Path::new("fused.toml"), &set).unwrap();
    let (rods, state) = scene.build();
    // The start: 4 frames on the CPU with the fast projection (SHAKE meets
    // a zero pivot on the soft long strand at this step:
    // tests/stability.rs), then the scene's own settings on the GPU.
    let mut warm_up = scene.params;
    warm_up.projection = strands::model::params::Projection::Fast {
        tolerance: 1e-10,
        max_iterations: 50,
    };
    let mut cpu = strands::cpu::CpuSimulator::new(rods.clone(), state, warm_up);
    for _ in 0..4 {
        cpu.step().unwrap();
    }
    let mut state = cpu.state.clone();
    // Random kicks on the hair; the long strand sags as it is (kicked, its
    // three hundred 1-mm segments wriggle chaotically and any rounding grows).
    let mut r = rng(3);
    let hair = rods.vertices(rods.rod_count() - 2).end;
    for v in state.vel[..hair].iter_mut() {
        *v += unit(&mut r) * 0.2;
    }
    let ctx = gpu();
    let run = |form: Form, state: &strands::model::rods::State| {
        let mut g = GpuSimulator::new(&ctx, rods.clone(), state.clone(), scene.params).unwrap();
        g.set_form(form)
            .expect("the test adapter runs the walked forms");
        let start = g.read_state();
        for _ in 0..frames {
            g.step_checked().expect("stable");
        }
        (start, g.read_state())
    };
    let (start, staged_end) = run(Form::Walked, &state);
    let amplified = if ulps > 0.0 {
        let mut moved = state.clone();
        for p in moved.pos.iter_mut() {
            for c in 0..3 {
                // One f32 ulp of the coordinate: the gap to the next float up.
                let x = (p[c] as f32).abs();
                let ulp = (f32::from_bits(x.to_bits() + 1) - x) as f64;
                p[c] += if r.random_bool(0.5) { ulps } else { -ulps } * ulp;
            }
        }
        max_diff(&run(Form::Walked, &moved).1.pos, &staged_end.pos)
    } else {
        0.0
    };
    // The least of how far the hair and the long strand moved.
    let long = hair..staged_end.pos.len();
    let travel = max_diff(&staged_end.pos[..hair], &start.pos[..hair])
        .min(max_diff(&staged_end.pos[long.clone()], &start.pos[long]));
    let (_, end) = run(Form::WalkedFused, &state);
    (
        max_diff(&staged_end.pos, &end.pos),
        max_abs_diff(&staged_end.theta, &end.theta),
        travel,
        amplified,
    )
}

/// Same stages, same order, same f32 arithmetic: the two forms differ only
/// where the shader compiler contracts or orders the inlined code
/// differently, a few ulps of a position (ε|x| ≈ 3e-8 m at 0.35 m from the
/// origin) a substep, grown by the dynamics over 3 frames (24 substeps).
///
/// On a CPU adapter (lavapipe: 3.1e-8 m measured; under the emulation of
/// approximate functions too, which changes every form's calls alike):
/// bound 1e-6 m, the one-frame GPU–CPU parity bound. A GPU's compiler
/// contracts into fused multiply-adds wherever it likes, differently in
/// the two forms' inlined code (an H200 measured 2.95e-6 m over 3
/// frames), and the chaotic hair grows each such difference: a few-ulp
/// move of the start positions grows 20 to 80-fold within 3 frames. There
/// the forms run one frame, under an estimated tolerance, not a proven
/// bound: (substeps) × (how far the staged form's path moves in that frame
/// when its start positions move by 4 ulps, measured in the same run),
/// never below 1e-6 m. It assumes that the forms differ by no more than 4
/// ulps of a position a substep (nothing bounds what a compiler's
/// reordering leaves) and that a difference entering later grows no faster
/// than one present from the start (one that enters the projected
/// positions also changes the velocity by itself over h, which a
/// start-position move does not). On lavapipe with this path forced:
/// 5.1e-5 m for the fast projection (with the grid and without), about
/// half of what a real fault (a stage skipped, a lost store) moves
/// vertices by through contact's or the projection's corrections, ~1e-4 m
/// and more.
/// Twist: 1e-5 rad.
fn assert_agree(set: &[&str]) {
    let on_gpu = gpu().info.device_type != wgpu::DeviceType::Cpu;
    let (frames, ulps) = if on_gpu {
        (1, strands::gpu::layout::APPROX_ULPS)
    } else {
        (3, 0.0)
    };
    let (dx, dtheta, travel, amplified) = staged_against_fused(set, frames, ulps);
    let substeps = frames as u32 * substeps_of(set);
    let bound = (substeps as f64 * amplified).max(1e-6);
    eprintln!(
        "{set:?}: Walked − WalkedFused {dx:.3e} m, {dtheta:.3e} rad; travel {travel:.3e} m; \
         {ulps} ulps at the start move Walked {amplified:.3e} m; bound {bound:.3e} m"
    );
    assert!(travel > 1e-3, "a strand did not move: {travel:.3e} m");
    assert!(
        dx <= bound,
        "{set:?}, WalkedFused: positions differ by {dx:.3e} m (bound {bound:.3e} m)"
    );
    assert!(
        dtheta <= 1e-5,
        "{set:?}, WalkedFused: twist differs by {dtheta:.3e} rad"
    );
}

/// With hair–hair interaction: `substep_start_rod`, the grid,
/// `substep_finish_rod`.
#[test]
fn fused_halves_around_the_grid_match_the_stages() {
    assert_agree(&[]);
}

/// Without interaction, one `substep_rod` dispatch, for the fast projection
/// (the default), SHAKE (with `save_start` in the first half) and none.
#[test]
fn one_dispatch_substep_matches_the_stages_for_each_projection() {
    for method in ["fast", "shake", "none"] {
        let m = format!("sim.projection.method=\"{method}\"");
        // SHAKE meets a zero pivot on the soft long strand at 8 substeps
        // (tests/stability.rs); at 32 it runs.
        let substeps = if method == "shake" { 32 } else { 8 };
        let n = format!("sim.substeps={substeps}");
        assert_agree(&["interaction.groups=[]", &m, &n]);
    }
}

/// The walked forms, staged and fused, one step of `text` with `set` from
/// its state changed by `edit`: that start, and their states and
/// diagnostics.
fn walked_forms(
    text: &str,
    set: &[&str],
    edit: impl Fn(&mut strands::model::rods::State),
) -> (
    strands::model::rods::State,
    [(strands::model::rods::State, strands::cpu::Diagnostics); 2],
) {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scene = Scene::parse(text, Path::new("walked.toml"), &set).unwrap();
    let (rods, mut state) = scene.build();
    edit(&mut state);
    let ctx = gpu();
    let runs = [Form::Walked, Form::WalkedFused].map(|form| {
        let mut g = GpuSimulator::new(&ctx, rods.clone(), state.clone(), scene.params).unwrap();
        g.set_form(form)
            .expect("the test adapter runs the walked forms");
        g.step_checked().expect("stable")
    });
    (state, runs)
}

/// A straight strand beside a sphere, in an interaction group.
const BESIDE: &str = r#"
[sim]
dt = 0.001
substeps = 1
gravity = [0.0, 0.0, 0.0]

[materials.hair]
density = 1300.0
radius = 5e-5
youngs_modulus = 3.9e8
shear_modulus = 1.5e8

[[colliders]]
name = "ball"
shape = "sphere"
center = [0.0, 0.0, 0.0]
radius = 0.05
friction = 0.3
static_friction = 0.4

[[rods]]
kind = "straight"
group = "hair"
material = "hair"
from = [-0.1, 0.048, 0.0]
to = [0.1, 0.048, 0.0]
segments = 20

[interaction]
groups = ["hair"]
resolution = 8
"#;

/// The walked fused form's blend hands the first fast projection its first
/// strain measure (`grid_blend_rod`) and contact's walk hands the second
/// its own (`ContactWalkDone.unresolved`), where the staged walked form
/// measures both again (`unresolved_strain`); each is the same maximum of
/// the same positions (which the hair, curly and grass GPU JSON, identical
/// to the build before the hand-offs, also showed). Checked both ways:
/// - A strand stretched by 1 % through the sphere: the first projection
///   must restore its length, and contact then pushes its middle out by
///   ~2 mm, stretching the edges beside it, so the filtered projection must
///   iterate too. The two forms agree to rounding after one substep, with
///   the grid, without it (no blend: the projection measures) and with
///   SHAKE. A hand-off that said "resolved" would leave the stretch: each
///   broken in turn, the forms differed by 5.8e-4 m (the blend's) and
///   4.1e-4 m (contact's).
/// - The same strand at rest, unstretched and clear of the sphere: nothing
///   for either projection to do, 0 iterations in both forms. A hand-off
///   that said "unresolved" would take a Newton iteration.
#[test]
fn walked_substep_hands_the_projection_the_strain_it_leaves() {
    let stretch = |s: &mut strands::model::rods::State| {
        for x in s.pos.iter_mut() {
            x.x *= 1.01;
        }
    };
    for set in [
        &[][..],
        &["interaction.groups=[]"][..],
        &["sim.projection.method=\"shake\""][..],
    ] {
        let (start, [(staged, _), (fused, _)]) = walked_forms(BESIDE, set, stretch);
        let moved = max_diff(&staged.pos, &start.pos);
        let dx = max_diff(&staged.pos, &fused.pos);
        eprintln!(
            "{set:?}: the substep moved the strand {moved:.3e} m; Walked − WalkedFused {dx:.3e} m"
        );
        assert!(
            moved > 1e-3,
            "{set:?}: the projection and contact did not move the strand: {moved:.3e} m"
        );
        assert!(dx <= 1e-6, "{set:?}: walked forms differ by {dx:.3e} m");
    }
    let clear = ["rods.0.from=[-0.1, 0.2, 0.0]", "rods.0.to=[0.1, 0.2, 0.0]"];
    for grid in [&[][..], &["interaction.groups=[]"][..]] {
        let set: Vec<&str> = clear.iter().chain(grid).copied().collect();
        let (_, [(_, staged), (_, fused)]) = walked_forms(BESIDE, &set, |_| {});
        eprintln!(
            "{grid:?} at rest: projection iterations {} (Walked), {} (WalkedFused)",
            staged.projection_iterations, fused.projection_iterations
        );
        assert_eq!(
            staged.projection_iterations, 0,
            "{grid:?}: the staged walked form projected a strand at rest"
        );
        assert_eq!(
            fused.projection_iterations, 0,
            "{grid:?}: a hand-off made the projection iterate on a strand at rest"
        );
    }
}

/// Without the grid the walked substep's start walk hands the first
/// projection its strain measure (`StartStrain` in shaders/substep.wgsl),
/// taken as the sweep integrates each free vertex, and the edges at a
/// clamp, whose vertices are placed after the sweep, from the stored
/// positions (`clamped_edges_strain`). Checked where only such an edge is
/// strained: a strand clamped at one end, every free vertex shifted 1e-4 m
/// (1 % of an edge) away from the clamp, so that the one edge from the
/// clamp's second vertex to the first free one is stretched and no other.
/// The staged walked form measures it again (`unresolved_strain`); the
/// two must agree to rounding, and the projection must have moved the
/// strand. Left out of the hand-off (each end's loop emptied in turn),
/// the fused form left the stretch (0 projection iterations against 2):
/// the forms differed by 1.0e-4 m.
#[test]
fn start_walk_hands_the_projection_the_strain_at_a_clamp() {
    let shift = 1e-4;
    for (end, sign) in [("start", 1.0), ("end", -1.0)] {
        // `BESIDE`'s strand alone: no sphere, no grid.
        let clamp = format!("rods.0.{end}=\"clamped\"");
        let set = ["colliders=[]", "interaction.groups=[]", clamp.as_str()];
        let (start, [(staged, staged_d), (fused, fused_d)]) =
            walked_forms(BESIDE, &set, |s: &mut strands::model::rods::State| {
                let n = s.pos.len();
                let free = if sign > 0.0 { 2..n } else { 0..n - 2 };
                for x in &mut s.pos[free] {
                    x.x += sign * shift;
                }
            });
        let moved = max_diff(&staged.pos, &start.pos);
        let dx = max_diff(&staged.pos, &fused.pos);
        eprintln!(
            "{end} clamped: the substep moved the strand {moved:.3e} m; Walked − WalkedFused {dx:.3e} m; projection iterations {} and {}",
            staged_d.projection_iterations, fused_d.projection_iterations
        );
        assert!(
            staged_d.projection_iterations > 0 && moved > 0.25 * shift,
            "{end} clamped: the projection did not restore the stretched edge ({moved:.3e} m)"
        );
        assert!(
            dx <= 1e-6,
            "{end} clamped: walked forms differ by {dx:.3e} m (the hand-off missed the clamp's edge)"
        );
    }
}
