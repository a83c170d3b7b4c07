//! Never silently wrong: the explicit step limit,
//! `sim.substeps = "auto"`, the refusal of a fixed step above the limit, the
//! runtime chatter detector on both backends, and blow-up messages that name
//! the actual cause.
//!
//! Expected values come from the stability law of symplectic Euler on the
//! fastest bending mode, `h·ω_max < 2` with `ω_max² = 16 B/(μ Δx⁴)` (so
//! `h_max = ½ Δx² √(μ/B)`), computed here from the material constants.

mod common;

use std::path::Path;

use common::gpu;
use strands::backend::Simulator;
use strands::cpu::{Cause, CpuSimulator, Unstable};
use strands::model::stability::{self, SAFETY};
use strands::scene::Scene;

/// A 20-segment rubber-like cantilever, 0.2 m, clamped at the root,
/// bending under gravity: E = 1e7 Pa, r = 1 mm, ρ = 1100 kg/m³.
fn cantilever(extra: &str) -> String {
    format!(
        r#"
[sim]
dt = 0.001
{extra}

[materials.rubber]
density = 1100.0
radius = 1e-3
youngs_modulus = 1e7

[[rods]]
kind = "straight"
material = "rubber"
from = [0.0, 0.0, 0.0]
to = [0.2, 0.0, 0.0]
segments = 20
start = "clamped"
"#
    )
}

/// The law: h_max = ½ Δx² √(μ/B) for the cantilever above.
fn cantilever_limit() -> f64 {
    let (r, e, rho, dx) = (1e-3_f64, 1e7, 1100.0, 0.01);
    let pi = std::f64::consts::PI;
    let b = e * pi * r.powi(4) / 4.0;
    let mu = rho * pi * r * r;
    0.5 * dx * dx * (mu / b).sqrt()
}

fn parse(text: &str, sets: &[&str]) -> Result<Scene, strands::scene::SceneError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scene::parse(text, Path::new("test.toml"), &sets)
}

/// Run `steps` steps on the CPU; the first error, if any.
fn run_cpu(scene: &Scene, steps: u64) -> Result<(), Unstable> {
    let (rods, state) = scene.build();
    let mut sim = CpuSimulator::new(rods, state, scene.params);
    for _ in 0..steps {
        sim.step()?;
    }
    Ok(())
}

fn run_gpu(scene: &Scene, steps: u64) -> Result<(), Unstable> {
    let (rods, state) = scene.build();
    let mut sim = Simulator::gpu(&gpu(), rods, state, scene.params).expect("GPU simulator");
    for _ in 0..steps {
        sim.step()?;
    }
    Ok(())
}

/// `"auto"` (the default) takes the fewest substeps with h ≤ 0.8 h_max,
/// where h_max is the law above.
#[test]
fn auto_substeps_follow_the_step_limit() {
    let scene = parse(&cantilever(""), &[]).unwrap();
    let h_max = cantilever_limit();
    let n = scene.params.substeps as f64;
    assert!(scene.params.auto_substeps);
    assert!(
        0.001 / n <= SAFETY * h_max,
        "h = {} > 0.8 × {h_max}",
        0.001 / n
    );
    assert!(0.001 / (n - 1.0) > SAFETY * h_max, "{n} is not the fewest");
    let (rods, _) = scene.build();
    let l = stability::step_limit(&rods).unwrap();
    assert!(
        (l.h_max - h_max).abs() < 1e-9 * h_max,
        "{} vs {h_max}",
        l.h_max
    );
}

/// An elliptic section is limited by its stiffer direction: B = E π a³ b / 4
/// for a > b, the larger eigenvalue.
#[test]
fn an_anisotropic_section_is_limited_by_its_stiffer_direction() {
    let text = cantilever("").replace("radius = 1e-3", "semi_axes = [2e-3, 0.5e-3]");
    let scene = parse(&text, &[]).unwrap();
    let (rods, _) = scene.build();
    let pi = std::f64::consts::PI;
    let (a, b) = (2e-3_f64, 0.5e-3_f64);
    let stiff = 1e7 * pi * a.powi(3) * b / 4.0;
    let mu = 1100.0 * pi * a * b;
    let expected = 0.5 * 0.01 * 0.01 * (mu / stiff).sqrt();
    let l = stability::step_limit(&rods).unwrap();
    assert!(
        (l.h_max - expected).abs() < 1e-9 * expected,
        "{} vs {expected}",
        l.h_max
    );
}

/// A fixed count above the limit is refused at load, naming the field, the
/// rod, the limit and both ways out; `sim.allow_unstable` accepts it.
#[test]
fn a_fixed_step_above_the_limit_is_refused() {
    let h_max = cantilever_limit();
    let n = (0.01 / (1.05 * h_max)).floor() as u32; // h ≥ 1.05 h_max
    let text = |extra: &str| cantilever(extra).replace("dt = 0.001", "dt = 0.01");
    let e = parse(&text(&format!("substeps = {n}")), &[]).unwrap_err();
    let msg = e.to_string();
    assert_eq!(e.field, "sim.substeps");
    for part in [
        "rods[0]",
        "allow_unstable",
        "\"auto\"",
        &format!("{h_max:.3e}"),
    ] {
        assert!(msg.contains(part), "`{part}` missing from: {msg}");
    }
    let ok = parse(
        &text(&format!("substeps = {n}\nallow_unstable = true")),
        &[],
    )
    .unwrap();
    assert_eq!(ok.params.substeps, n);
    // Within the limit, a fixed count is kept as given.
    let within = (0.01 / h_max).ceil() as u32;
    let s = parse(&text(&format!("substeps = {within}")), &[]).unwrap();
    assert_eq!(s.params.substeps, within);
}

/// Just above the limit (h = 1.05 h_max, accepted with allow_unstable) the
/// cantilever chatters; the detector stops the run on the CPU naming the
/// rod and the step as the cause. At `"auto"` the same scene runs clean.
#[test]
fn chatter_just_above_the_limit_stops_the_cpu_run() {
    let h_max = cantilever_limit();
    let dt = 40.0 * 1.05 * h_max;
    let text = cantilever("substeps = 40\nallow_unstable = true")
        .replace("dt = 0.001", &format!("dt = {dt}"));
    let e = run_cpu(&parse(&text, &[]).unwrap(), 50).unwrap_err();
    assert_eq!(e.cause, Cause::Chatter, "{e}");
    assert_eq!(e.rod, 0);
    assert!(
        e.hint.contains("above this rod's explicit stability limit"),
        "{e}"
    );
    let auto = text.replace("substeps = 40", "substeps = \"auto\"");
    run_cpu(&parse(&auto, &[]).unwrap(), 50).expect("auto substeps run clean");
}

/// The same on the GPU (lavapipe in CI): the count lives in `vel.w`.
#[test]
fn chatter_just_above_the_limit_stops_the_gpu_run() {
    let h_max = cantilever_limit();
    let dt = 40.0 * 1.05 * h_max;
    let text = cantilever("substeps = 40\nallow_unstable = true")
        .replace("dt = 0.001", &format!("dt = {dt}"));
    let e = run_gpu(&parse(&text, &[]).unwrap(), 50).unwrap_err();
    assert_eq!(e.cause, Cause::Chatter, "{e}");
    assert_eq!(e.rod, 0);
    let auto = text.replace("substeps = 40", "substeps = \"auto\"");
    run_gpu(&parse(&auto, &[]).unwrap(), 50).expect("auto substeps run clean");
}

/// The example grass (curved blades of elliptic section in gusty wind,
/// standing on a ground plane with friction), 12 blades, with `substeps`
/// and `dt` set to run at `factor` × the step limit that
/// `stability::step_limit` gives for it.
fn grass_at(factor: f64) -> Scene {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/grass.toml"))
            .unwrap();
    let small = ["rods.0.count=12"];
    let (rods, _) = parse(&text, &small).unwrap().build();
    let h_max = stability::step_limit(&rods).unwrap().h_max;
    let dt = format!("sim.dt={}", 20.0 * factor * h_max);
    parse(
        &text,
        &[
            small[0],
            "sim.substeps=20",
            dt.as_str(),
            "sim.allow_unstable=true",
        ],
    )
    .unwrap()
}

/// Grass is where the GPU once missed the chatter (its WGSL threshold had
/// drifted to 50× the CPU's): at 1.05 h_max both backends stop it within
/// 20 steps, and at 0.95 h_max (below the limit) both run 40 steps clean.
#[test]
fn grass_chatter_just_above_the_limit_stops_both_backends() {
    let above = grass_at(1.05);
    for (backend, result) in [("cpu", run_cpu(&above, 20)), ("gpu", run_gpu(&above, 20))] {
        let e = result.expect_err(backend);
        assert_eq!(e.cause, Cause::Chatter, "{backend}: {e}");
    }
    let below = grass_at(0.95);
    run_cpu(&below, 40).expect("cpu below the limit");
    run_gpu(&below, 40).expect("gpu below the limit");
}

/// A material changed at run time is re-checked: with B 16× stiffer the
/// limit is a quarter (h_max ∝ 1/√B) and `auto` re-chooses from it; a fixed
/// count that the stiffer rod no longer satisfies stops the next step.
#[test]
fn a_change_at_run_time_is_rechecked() {
    let scene = parse(&cantilever(""), &[]).unwrap();
    let (rods, state) = scene.build();
    let mut sim = CpuSimulator::new(rods, state, scene.params);
    sim.step().unwrap();
    let before = sim.params.substeps;
    for b in &mut sim.rods.material[0].bending {
        *b *= 16.0;
    }
    sim.step().unwrap();
    let expected = (0.001 / (SAFETY * cantilever_limit() / 4.0)).ceil() as u32;
    assert_eq!(sim.params.substeps, expected, "was {before}");
    assert!(expected > before);
    let mut fixed = scene.params;
    fixed.auto_substeps = false;
    fixed.substeps = before;
    let (rods, state) = scene.build();
    let mut sim = CpuSimulator::new(rods, state, fixed);
    sim.step().unwrap();
    for b in &mut sim.rods.material[0].bending {
        *b *= 16.0;
    }
    let e = sim.step().unwrap_err();
    assert_eq!(e.cause, Cause::StepLimit, "{e}");
}

/// A straight rod clamped at both ends whose anchors push it along its axis
/// cannot keep its edge lengths (it has no sideways direction to buckle
/// into): the fast projection's system is singular. The run stops in the
/// first step, naming the projection, on both backends; it used to report 0
/// iterations while the strain grew 1.5 % per step.
#[test]
fn an_unsatisfiable_constraint_stops_the_run() {
    let text = r#"
[sim]
dt = 0.01
gravity = [0.0, 0.0, 0.0]

[materials.m]
density = 1000.0
radius = 1e-3
youngs_modulus = 1e8

[anchors.push]
keyframes = [{ t = 0.0 }, { t = 1.0, translation = [-0.5, 0.0, 0.0] }]

[[rods]]
kind = "straight"
material = "m"
from = [0.0, 0.0, 0.0]
to = [1.0, 0.0, 0.0]
segments = 20
start = "clamped"
end = "clamped"
end_anchor = "push"
"#;
    let scene = parse(text, &[]).unwrap();
    let e = run_cpu(&scene, 3).unwrap_err();
    assert_eq!(e.cause, Cause::Projection, "{e}");
    assert_eq!(e.step, 1, "{e}");
    assert!(e.what.contains("singular"), "{e}");
    let e = run_gpu(&scene, 3).unwrap_err();
    assert_eq!(e.cause, Cause::Projection, "{e}");
    assert_eq!(e.step, 1, "{e}");
}

/// A very soft rod of 300 vertices clamped at one end and falling, under
/// SHAKE at 8 substeps (0.64 × the step limit): its Newton system meets a
/// zero pivot in the first step (cause not found; the fast projection and
/// 32 substeps both run it). The run stops naming the projection, and the
/// message does not blame two clamps the rod does not have: it says to
/// raise the substeps or use the fast projection, which both work.
#[test]
fn a_singular_shake_on_a_rod_held_at_one_end_says_what_helps() {
    let text = r#"
[sim]
dt = 0.016666666666666666
substeps = 8
gravity = [0.0, -9.81, 0.0]

[sim.projection]
method = "shake"

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
start = "clamped"
"#;
    let scene = parse(text, &[]).unwrap();
    let e = run_cpu(&scene, 3).unwrap_err();
    assert_eq!(e.cause, Cause::Projection, "{e}");
    assert!(e.what.contains("singular"), "{e}");
    assert!(!e.what.contains("two clamps"), "{e}");
    assert!(
        e.hint.contains("sim.substeps") && e.hint.contains("\"fast\""),
        "{e}"
    );
    for set in ["sim.substeps=32", "sim.projection.method=\"fast\""] {
        let scene = parse(text, &[set]).unwrap();
        run_cpu(&scene, 3).unwrap_or_else(|e| panic!("{set}: {e}"));
    }
}

/// An anchor that jumps 1 m in 1 ms drives its clamped vertices at 1000 m/s:
/// the message names the anchor and says it is not a time-step problem.
#[test]
fn a_teleporting_anchor_is_named_as_the_cause() {
    let text = r#"
[sim]
dt = 0.01

[materials.m]
density = 1000.0
radius = 1e-3
youngs_modulus = 1e8

[anchors.head]
keyframes = [{ t = 0.0 }, { t = 0.02 }, { t = 0.021, translation = [1.0, 0.0, 0.0] }]

[[rods]]
kind = "straight"
material = "m"
from = [0.0, 0.0, 0.0]
to = [0.0, -0.2, 0.0]
segments = 10
start = "clamped"
start_anchor = "head"
"#;
    let e = run_cpu(&parse(text, &[]).unwrap(), 5).unwrap_err();
    assert_eq!(e.cause, Cause::AnchorSpeed, "{e}");
    assert!(e.what.contains("anchor `head`"), "{e}");
    assert!(!e.hint.contains("substeps = \"auto\""), "{e}");
}

/// A blow-up within the step limit does not blame the step: with
/// sim.max_speed far below what gravity gives, the run stops as a blow-up
/// whose hint says h is within the limit (and prints no NaN, inf or 0).
#[test]
fn a_blow_up_within_the_limit_does_not_blame_the_step() {
    let scene = parse(&cantilever("max_speed = 1e-3"), &[]).unwrap();
    let e = run_cpu(&scene, 50).unwrap_err();
    assert_eq!(e.cause, Cause::BlowUp, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("is within this rod's explicit stability limit"),
        "{msg}"
    );
    assert!(!msg.contains("substeps = \"auto\""), "{msg}");
    for bad in ["NaN", "inf", " 0.000e0 s"] {
        assert!(!msg.contains(bad), "`{bad}` in {msg}");
    }
}
