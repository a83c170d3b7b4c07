//! The implicit integrators on the CPU reference (`cpu::implicit`):
//! statics against Euler–Bernoulli and against the rest state of the
//! dynamics, the orders of convergence of backward Euler (1) and the
//! implicit midpoint rule (2) on seed 004's naturally curved rod, backward
//! Euler's dissipation, one substep a frame far above the explicit limit,
//! and a Newton solve that cannot converge stopping the run by name.

mod common;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec};
use strands::cpu::{Cause, CpuSimulator};
use strands::model::params::{Integrator, Newton, Projection, SimParams};
use strands::model::rods::RodMaterial;

/// Seed 004's rod: 20 cm naturally curved with radius 2 cm (here in the
/// xy plane, its first edge clamped), r = 1 mm, ρ = 1000 kg/m³,
/// E = 10 MPa, G = E/3, gravity along −z; `n` vertices.
fn seed_rod(n: usize) -> RodSpec {
    let (length, radius) = (0.2, 0.02);
    let points: Vec<DVec3> = (0..n)
        .map(|i| {
            let a = length * i as f64 / (n - 1) as f64 / radius;
            DVec3::new(radius * a.sin(), radius * (1.0 - a.cos()), 0.0)
        })
        .collect();
    let e = 10e6;
    let material = RodMaterial::from_young_shear(e, e / 3.0, 1000.0, 1e-3, 0.0).unwrap();
    RodSpec {
        name: "seed".into(),
        points: points.clone(),
        rest: points,
        material,
        start: EndSpec::Clamped(0),
        end: EndSpec::Free,
        frame_angle: 0.0,
    }
}

/// Seed 004's time step and gravity, with `integrator` and `substeps` a
/// step (0: "auto").
fn seed_params(integrator: Integrator, substeps: u32) -> SimParams {
    SimParams {
        dt: 1e-2,
        gravity: DVec3::new(0.0, 0.0, -9.81),
        integrator,
        substeps: substeps.max(1),
        auto_substeps: substeps == 0,
        ..SimParams::default()
    }
}

/// The tip's z after each of `steps` steps.
fn tip_heights(sim: &mut CpuSimulator, steps: usize) -> Vec<f64> {
    (0..steps)
        .map(|_| {
            sim.step().unwrap();
            sim.state.pos.last().unwrap().z
        })
        .collect()
}

/// Statics (`Integrator::Static`, one solve) on the small-deflection
/// cantilever of tests/cantilever.rs: the tip deflection is Euler–
/// Bernoulli's qL⁴/(8EI), L the free length plus half the clamped edge
/// (where DER's clamp acts), within 0.5 % at 40 segments (the explicit
/// integrator's settled answer is as close: tests/cantilever.rs), and the
/// step reports its residual, below 1e-5 of a vertex's weight.
#[test]
fn statics_gives_the_euler_bernoulli_cantilever_in_one_solve() {
    const L: f64 = 0.2;
    const MU: f64 = 3.14e-3;
    const G: f64 = 9.81;
    const EI: f64 = MU * G * L * L * L / (8.0 * 0.005);
    let segments = 40;
    let h = L / segments as f64;
    let points: Vec<DVec3> = (0..segments + 2)
        .map(|i| DVec3::new((i as f64 - 1.0) * h, 0.0, 0.0))
        .collect();
    let mut material = iso_material(EI, EI, MU);
    material.stretching = 1e4;
    let spec = RodSpec {
        name: "cantilever".into(),
        points: points.clone(),
        rest: points,
        material,
        start: EndSpec::Clamped(0),
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let params = SimParams {
        dt: 0.01,
        substeps: 1,
        gravity: DVec3::new(0.0, -G, 0.0),
        integrator: Integrator::Static,
        projection: Projection::Fast {
            tolerance: 1e-12,
            max_iterations: 50,
        },
        ..SimParams::default()
    };
    let mut sim = simulator(&[spec], params);
    let d = sim.step().unwrap();
    let tip = -sim.state.pos.last().unwrap().y;
    let expected = MU * G * (L + h / 2.0).powi(4) / (8.0 * EI);
    let error = (tip - expected).abs() / expected;
    assert!(
        error < 5e-3,
        "tip {tip:.6e} m vs {expected:.6e} m: {error:.2e}"
    );
    assert!(d.newton_iterations >= 1 && d.newton_residual > 0.0);
    let weight = MU * h * G;
    assert!(
        d.newton_residual < 1e-5 * weight,
        "residual {:.2e} N against a vertex weight of {weight:.2e} N",
        d.newton_residual
    );
    assert_eq!(d.max_speed, 0.0, "an equilibrium is at rest");
}

/// The equilibrium statics finds in one solve is the rest state the
/// dynamics of the same model reach (stretching by E·A, no projection):
/// backward Euler with drag, one substep a step, settles the seed rod onto
/// the static shape within 1e-6 m at every vertex.
#[test]
fn statics_is_where_backward_euler_comes_to_rest() {
    let mut rod = seed_rod(30);
    rod.material.drag = 0.05;
    let mut statics = simulator(&[rod.clone()], seed_params(Integrator::Static, 1));
    statics.step().unwrap();
    // The model statics solves: stretching by E·A, no projection.
    let dynamic = SimParams {
        projection: Projection::None,
        ..seed_params(Integrator::BackwardEuler, 1)
    };
    let mut dynamics = simulator(&[rod], dynamic);
    tip_heights(&mut dynamics, 600);
    assert!(dynamics.diagnostics().max_speed < 1e-7, "not at rest");
    let diff = max_diff(&statics.state.pos, &dynamics.state.pos);
    assert!(diff < 1e-6, "rest shapes differ by {diff:.2e} m");
    // Not trivially: the rod sagged by centimetres.
    let sag = -statics.state.pos.last().unwrap().z;
    assert!(sag > 0.01, "sag {sag} m");
}

/// Seed 004's rod at seed 004's Δt = 1e-2 s, one substep a step (the
/// symplectic integrator takes ~80 within its step limit), against the
/// symplectic reference at t = 0.5 s: the implicit midpoint rule within
/// 5 % of the tip's travel; errors shrink ≤ 1/2 (backward Euler, first
/// order) and ≤ 0.15 (implicit midpoint, second order) at 4 substeps.
#[test]
fn implicit_integrators_converge_at_their_orders_on_the_seed_rod() {
    let steps = 50;
    let mut reference = simulator(&[seed_rod(50)], seed_params(Integrator::Symplectic, 0));
    let z_ref = *tip_heights(&mut reference, steps).last().unwrap();
    assert!(reference.params.substeps > 50, "the explicit limit");
    let error = |integrator, substeps| {
        let mut sim = simulator(&[seed_rod(50)], seed_params(integrator, substeps));
        let z = *tip_heights(&mut sim, steps).last().unwrap();
        (z - z_ref).abs() / z_ref.abs()
    };
    let (be1, be4) = (
        error(Integrator::BackwardEuler, 1),
        error(Integrator::BackwardEuler, 4),
    );
    let (mid1, mid4) = (
        error(Integrator::ImplicitMidpoint, 1),
        error(Integrator::ImplicitMidpoint, 4),
    );
    assert!(mid1 < 0.05, "implicit midpoint at one substep: {mid1:.3}");
    assert!(be4 < 0.5 * be1, "backward Euler: {be1:.4} → {be4:.4}");
    assert!(
        mid4 < 0.15 * mid1,
        "implicit midpoint: {mid1:.4} → {mid4:.4}"
    );
    assert!(mid1 < be1, "midpoint {mid1:.4} vs backward Euler {be1:.4}");
}

/// Backward Euler dissipates (its amplification factor is below 1 for
/// every mode), the implicit midpoint rule far less: over 2 s without
/// drag the seed rod's total energy falls under both, and by at least
/// twice as much under backward Euler.
#[test]
fn backward_euler_dissipates_and_the_midpoint_rule_far_less() {
    let lost = |integrator| {
        let mut sim = simulator(&[seed_rod(30)], seed_params(integrator, 1));
        let total = |s: &CpuSimulator| {
            let d = s.diagnostics();
            d.bending + d.twisting + d.gravitational + d.kinetic
        };
        let e0 = total(&sim);
        tip_heights(&mut sim, 200);
        e0 - total(&sim)
    };
    let (be, mid) = (
        lost(Integrator::BackwardEuler),
        lost(Integrator::ImplicitMidpoint),
    );
    assert!(be > 0.0 && mid > 0.0, "lost {be:.3e} J, {mid:.3e} J");
    assert!(
        mid < 0.5 * be,
        "midpoint lost {mid:.3e} J, backward Euler {be:.3e} J"
    );
}

/// No step limit bounds the implicit integrators: "auto" takes one
/// substep a step, a count far above the explicit limit is kept without
/// `allow_unstable`, and the chatter detector does not fire.
#[test]
fn implicit_steps_ignore_the_explicit_limit() {
    let mut auto = simulator(&[seed_rod(50)], seed_params(Integrator::BackwardEuler, 0));
    let h_max = strands::cpu::stable_step_estimate(&auto.rods, 0);
    tip_heights(&mut auto, 20);
    assert_eq!(auto.params.substeps, 1);
    assert!(auto.params.h() > 50.0 * h_max);
    let mut fixed = simulator(&[seed_rod(50)], seed_params(Integrator::Static, 2));
    tip_heights(&mut fixed, 3);
    assert_eq!(fixed.params.substeps, 2);
}

/// A Newton solve that cannot converge stops the run at that step,
/// naming the integrator, the residual against its tolerance and what to
/// change, rather than stepping on from a wrong answer.
#[test]
fn an_unconverged_newton_solve_stops_the_run_by_name() {
    let mut params = seed_params(Integrator::BackwardEuler, 1);
    params.newton = Newton {
        max_iterations: 1,
        ..Newton::default()
    };
    let mut sim = simulator(&[seed_rod(30)], params);
    let before = sim.state.pos.clone();
    let e = sim.step().unwrap_err();
    assert_eq!(e.cause, Cause::Newton);
    assert_eq!((e.rod, e.step), (0, 1));
    let text = e.to_string();
    for part in [
        "backward-euler step's Newton solve did not converge",
        "after 1 iterations",
        "N (tolerance",
        "it reached sim.newton.max_iterations (now 1)",
    ] {
        assert!(text.contains(part), "{text}");
    }
    // It needs more than one iteration, and gets there with them.
    let mut sim = simulator(&[seed_rod(30)], seed_params(Integrator::BackwardEuler, 1));
    let d = sim.step().unwrap();
    assert!(d.newton_iterations > 1);
    assert!(max_diff(&before, &sim.state.pos) > 1e-4);
}

/// Newton converges quadratically even where stretching is 10⁵ times
/// stiffer than bending across an edge (a hair: E = 3.5 GPa, r = 35 µm,
/// 32 vertices on 25 cm, EA l²/B ≈ 2·10⁵), clamped to a head that moves
/// at 0.3 m/s and turns at 60°/s, one backward-Euler substep a 1/60 s
/// frame: each solve takes at most 8 iterations (a step that turned an
/// edge would otherwise stretch it by the square of the turn, and the
/// stiff edges make Newton zig-zag: `implicit::solve`'s curved steps).
#[test]
fn newton_converges_in_few_iterations_on_a_hair() {
    use strands::model::anchor::{Anchor, Keyframe};
    let material = RodMaterial::from_young(3.5e9, 0.3, 1300.0, 35e-6, 0.0).unwrap();
    let points: Vec<DVec3> = (0..32)
        .map(|i| DVec3::new(0.0, 1.6 - 0.25 * i as f64 / 31.0, 0.0))
        .collect();
    let spec = RodSpec {
        name: "hair".into(),
        points: points.clone(),
        rest: points,
        material,
        start: EndSpec::Clamped(1),
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let head = Anchor {
        name: "head".into(),
        pivot: DVec3::new(0.0, 1.6, 0.0),
        keyframes: vec![
            Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
            Keyframe::new(
                1.0,
                DVec3::new(0.3, 0.0, 0.0),
                DVec3::Y * 60f64.to_radians(),
            ),
        ],
    };
    let params = SimParams {
        dt: 1.0 / 60.0,
        substeps: 1,
        integrator: Integrator::BackwardEuler,
        ..SimParams::default()
    };
    let mut sim = simulator_with_anchors(&[spec], vec![Anchor::world(), head], params);
    let most = (0..60)
        .map(|_| sim.step().unwrap().newton_iterations)
        .max()
        .unwrap();
    assert!(most <= 8, "{most} iterations");
    assert!(
        sim.state.pos.last().unwrap().x > 0.1,
        "the hair followed the head"
    );
}

/// Statics from far away: a soft straight rod held horizontal
/// (qL³/EI ≈ 300, so it hangs nearly straight down) reaches its
/// equilibrium in one solve, its edges turned by up to a quarter turn on
/// the way, and that is where backward Euler with critical drag brings the
/// same rod (stretching by its E·A, no projection: the model statics
/// solves) to rest, within 1e-6 m; the rod stretches by its tension over
/// E·A, at most its weight over E·A (2e-3 here) and most of that near the
/// root.
#[test]
fn statics_from_far_away_matches_the_dynamics_at_rest() {
    let n = 30;
    let points: Vec<DVec3> = (0..n)
        .map(|i| DVec3::new(0.2 * i as f64 / (n - 1) as f64, 0.0, 0.0))
        .collect();
    let mut material = RodMaterial::from_young(1e6, 0.3, 1000.0, 1e-3, 0.0).unwrap();
    // Critical damping of the first small-deflection mode.
    let w1 = 3.516 * (material.bending[0] / material.mass_per_length).sqrt() / 0.04;
    material.drag = 2.0 * material.mass_per_length * w1;
    let spec = RodSpec {
        name: "soft".into(),
        points: points.clone(),
        rest: points,
        material,
        start: EndSpec::Clamped(0),
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let params = |integrator, dt| SimParams {
        dt,
        substeps: 1,
        gravity: DVec3::new(0.0, -9.81, 0.0),
        integrator,
        projection: Projection::None,
        ..SimParams::default()
    };
    let mut statics = simulator(
        std::slice::from_ref(&spec),
        params(Integrator::Static, 0.01),
    );
    let d = statics.step().unwrap();
    assert!(
        d.newton_iterations > 3,
        "{} iterations",
        d.newton_iterations
    );
    let tip = *statics.state.pos.last().unwrap();
    assert!(tip.y < -0.15 && tip.x < 0.1, "the tip hangs: {tip}");
    let mut dynamics = simulator(&[spec], params(Integrator::BackwardEuler, 0.02));
    for _ in 0..1500 {
        dynamics.step().unwrap();
    }
    assert!(dynamics.diagnostics().max_speed < 1e-7, "not at rest");
    let diff = max_diff(&statics.state.pos, &dynamics.state.pos);
    assert!(diff < 1e-6, "rest shapes differ by {diff:.2e} m");
    // No edge's tension exceeds the rod's weight μgL, and near the root,
    // where the rod turns down, it carries most of it.
    let m = &statics.rods.material[0];
    let bound = m.mass_per_length * 9.81 * 0.2 / m.stretching;
    let strain = statics.diagnostics().max_strain;
    assert!(
        strain <= 1.01 * bound && strain > 0.5 * bound,
        "strain {strain:.3e}, weight over E·A {bound:.3e}"
    );
}

/// A flexible cable (bending length √(EI/μg) = 8 mm, strain under its
/// weight 4e-4) hung between two clamps 0.8 m apart, 1 m long, statics
/// from a V-shaped start: its sag is the catenary's, a(cosh(s/2a) − 1)
/// with 2a sinh(s/2a) = L, within 1 %.
#[test]
fn a_hanging_cable_is_a_catenary() {
    let (n, length, span) = (81, 1.0, 0.8);
    let l = length / (n - 1) as f64;
    // A V: down from each clamp to the middle, the clamped edges horizontal.
    let half = (n - 1) / 2;
    let drop = ((length / 2.0 - l).powi(2) - (span / 2.0 - l).powi(2)).sqrt();
    let points: Vec<DVec3> = (0..n)
        .map(|i| {
            let k = if i <= half { i } else { n - 1 - i };
            let side = if i <= half { -1.0 } else { 1.0 };
            let (x, y) = if k == 0 {
                (span / 2.0, 0.0)
            } else {
                let f = (k - 1) as f64 / (half - 1) as f64;
                (span / 2.0 - l - f * (span / 2.0 - l), -f * drop)
            };
            DVec3::new(side * x, y, 0.0)
        })
        .collect();
    for w in points.windows(2) {
        assert!(((w[1] - w[0]).length() - l).abs() < 1e-9 * l);
    }
    let rest: Vec<DVec3> = (0..n).map(|i| DVec3::new(i as f64 * l, 0.0, 0.0)).collect();
    let material = RodMaterial::from_young(1e7, 0.3, 1000.0, 5e-4, 0.0).unwrap();
    let spec = RodSpec {
        name: "cable".into(),
        points,
        rest,
        material,
        start: EndSpec::Clamped(0),
        end: EndSpec::Clamped(0),
        frame_angle: 0.0,
    };
    let params = SimParams {
        substeps: 1,
        gravity: DVec3::new(0.0, -9.81, 0.0),
        integrator: Integrator::Static,
        ..SimParams::default()
    };
    let mut sim = simulator(&[spec], params);
    sim.step().unwrap();
    let sag = -sim.state.pos[half].y;
    // 2a sinh(s/2a) = L by bisection on a.
    let (mut lo, mut hi) = (0.01, 10.0);
    for _ in 0..200 {
        let a: f64 = 0.5 * (lo + hi);
        if 2.0 * a * (span / (2.0 * a)).sinh() > length {
            lo = a;
        } else {
            hi = a;
        }
    }
    let a = 0.5 * (lo + hi);
    let catenary = a * ((span / (2.0 * a)).cosh() - 1.0);
    let error = (sag - catenary).abs() / catenary;
    assert!(
        error < 0.01,
        "sag {sag:.5} m vs catenary {catenary:.5} m: {error:.2e}"
    );
}

/// The projections after an implicit step: SHAKE projects along the
/// constraint gradients of the substep's start, which the implicit step
/// saves as the symplectic one does; a free rod (no clamp: the twist
/// angles' common turn costs nothing for an isotropic straight rod, a
/// direction the Newton system does not fix) tumbling in zero gravity
/// keeps its edge lengths to SHAKE's tolerance, and its Newton solves
/// converge.
#[test]
fn a_free_rod_under_backward_euler_with_shake_keeps_its_lengths() {
    let n = 20;
    // The arc's chord, so that the bent shape has the rest lengths.
    let chord = 0.4 * 0.025f64.sin();
    let rest: Vec<DVec3> = (0..n)
        .map(|i| DVec3::new(chord * i as f64, 0.0, 0.0))
        .collect();
    // Bent away from its straight rest shape.
    let points: Vec<DVec3> = (0..n)
        .map(|i| {
            let a = 0.05 * i as f64;
            DVec3::new(0.2 * a.sin(), 0.2 * (1.0 - a.cos()), 0.0)
        })
        .collect();
    let material = RodMaterial::from_young(1e7, 0.3, 1000.0, 1e-3, 0.0).unwrap();
    let spec = RodSpec {
        name: "free".into(),
        points,
        rest,
        material,
        start: EndSpec::Free,
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let params = SimParams {
        dt: 1e-2,
        substeps: 1,
        gravity: DVec3::ZERO,
        integrator: Integrator::BackwardEuler,
        projection: Projection::Shake {
            tolerance: 1e-10,
            max_iterations: 50,
        },
        ..SimParams::default()
    };
    let mut sim = simulator(&[spec], params);
    for _ in 0..50 {
        let d = sim.step().unwrap();
        assert!(d.max_strain < 1e-9, "strain {:.2e}", d.max_strain);
    }
    let d = sim.diagnostics();
    assert!(d.bending > 0.0 && d.kinetic > 0.0, "the rod still moves");
}
