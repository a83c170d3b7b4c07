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

/// The small-deflection cantilever's free length (m), mass per length
/// (kg/m), gravity (m/s²) and EI (N·m²), for a tip sag of 0.5 % of L.
const L: f64 = 0.2;
const MU: f64 = 3.14e-3;
const G: f64 = 9.81;
const EI: f64 = MU * G * L * L * L / (8.0 * 0.005);

/// The small-deflection cantilever of tests/cantilever.rs, `segments`
/// free edges after a clamped first edge ending at x = 0, E·A = 1e4 N.
fn small_cantilever(segments: usize) -> RodSpec {
    let mut material = iso_material(EI, EI, MU);
    material.stretching = 1e4;
    cantilever(segments, material)
}

/// A horizontal cantilever of 0.2 m free length in `segments` edges after
/// a clamped first edge ending at x = 0.
fn cantilever(segments: usize, material: RodMaterial) -> RodSpec {
    let h = L / segments as f64;
    let points: Vec<DVec3> = (0..segments + 2)
        .map(|i| DVec3::new((i as f64 - 1.0) * h, 0.0, 0.0))
        .collect();
    RodSpec {
        name: "cantilever".into(),
        points: points.clone(),
        rest: points,
        material,
        start: EndSpec::Clamped(0),
        end: EndSpec::Free,
        frame_angle: 0.0,
    }
}

/// Statics (`Integrator::Static`, one solve) on the small-deflection
/// cantilever of tests/cantilever.rs: the tip deflection is Euler–
/// Bernoulli's qL⁴/(8EI), L the free length plus half the clamped edge
/// (where DER's clamp acts), within 0.5 % at 40 segments (the explicit
/// integrator's settled answer is as close: tests/cantilever.rs), and the
/// step reports its residual, below 1e-5 of a vertex's weight.
#[test]
fn statics_gives_the_euler_bernoulli_cantilever_in_one_solve() {
    let segments = 40;
    let h = L / segments as f64;
    let spec = small_cantilever(segments);
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

/// The large-deflection cantilever: L = 0.2 m of free length, r = 1 mm,
/// ρ = 1000 kg/m³, E = 10 MPa (EI = 7.85e-6 N·m², weight 0.0308 N/m:
/// qL³/EI ≈ 31, the tip sags by about 89 % of L), `segments` free edges
/// after a clamped horizontal first edge ending at x = 0, with drag
/// `drag` (N·s/m²).
fn large_cantilever(segments: usize, drag: f64) -> RodSpec {
    let material = RodMaterial::from_young_shear(1e7, 1e7 / 3.0, 1000.0, 1e-3, drag).unwrap();
    cantilever(segments, material)
}

/// The inextensible elastica of a horizontal cantilever of length `l`
/// under its own weight `q` per length, EI θ'' = q (l − s) cos θ with
/// θ(0) = 0 and θ'(l) = 0 (θ the tangent's angle above horizontal), by
/// shooting on θ'(0) (bisection) with 4th-order Runge–Kutta in 20,000
/// steps; returns the tip's (x, y) from the clamp.
fn elastica_tip(l: f64, q: f64, ei: f64) -> (f64, f64) {
    let shoot = |c: f64| {
        let n = 20_000;
        let ds = l / n as f64;
        // (θ, θ', x, y)
        let f = |s: f64, y: [f64; 4]| [y[1], q * (l - s) * y[0].cos() / ei, y[0].cos(), y[0].sin()];
        let mut y = [0.0, c, 0.0, 0.0];
        for i in 0..n {
            let s = i as f64 * ds;
            let k1 = f(s, y);
            let k2 = f(
                s + ds / 2.0,
                std::array::from_fn(|j| y[j] + ds / 2.0 * k1[j]),
            );
            let k3 = f(
                s + ds / 2.0,
                std::array::from_fn(|j| y[j] + ds / 2.0 * k2[j]),
            );
            let k4 = f(s + ds, std::array::from_fn(|j| y[j] + ds * k3[j]));
            for j in 0..4 {
                y[j] += ds / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
            }
        }
        y
    };
    // θ'(0) lies between −ql²/(2EI) (the small-deflection root moment,
    // which the shortened lever arm only lessens) and 0; θ'(l) rises with it.
    let (mut lo, mut hi) = (-q * l * l / (2.0 * ei), 0.0);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if shoot(mid)[1] > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let y = shoot(0.5 * (lo + hi));
    (y[2], y[3])
}

/// The elastica's tip for the DER cantilever of `segments` edges: the
/// beam DER clamps starts at the middle of the clamped edge
/// (tests/cantilever.rs), so its length is L + h/2 from x = −h/2.
fn elastica_tip_of(spec: &RodSpec, segments: usize) -> DVec3 {
    let h = 0.2 / segments as f64;
    let ei = spec.material.bending[0];
    let q = spec.material.mass_per_length * 9.81;
    let (x, y) = elastica_tip(0.2 + h / 2.0, q, ei);
    DVec3::new(x - h / 2.0, y, 0.0)
}

/// The large cantilever of `segments` edges after `steps` steps of
/// 1e-2 s of `integrator`: its tip, the elastica's, and their distance
/// over the tip's displacement from the straight rod's.
fn tip_against_the_elastica(
    spec: RodSpec,
    segments: usize,
    integrator: Integrator,
    steps: usize,
) -> (DVec3, DVec3, f64) {
    let expected = elastica_tip_of(&spec, segments);
    let params = SimParams {
        dt: 0.01,
        substeps: 1,
        gravity: DVec3::new(0.0, -9.81, 0.0),
        integrator,
        ..SimParams::default()
    };
    let mut sim = simulator(&[spec], params);
    for _ in 0..steps {
        sim.step().unwrap();
    }
    let tip = *sim.state.pos.last().unwrap();
    let displacement = (expected - DVec3::new(0.2, 0.0, 0.0)).length();
    assert!(
        expected.y < -0.1,
        "a large deflection: elastica tip {expected:?}"
    );
    (tip, expected, (tip - expected).length() / displacement)
}

/// Statics of the large-deflection cantilever in one solve against the
/// inextensible elastica (shooting, above): the tip within 0.1 % of its
/// displacement from the straight rod's tip, at 50 segments.
#[test]
fn statics_gives_the_large_deflection_elastica_in_one_solve() {
    let spec = large_cantilever(50, 0.0);
    let (tip, expected, error) = tip_against_the_elastica(spec, 50, Integrator::Static, 1);
    eprintln!("statics: tip {tip:?}, elastica {expected:?}, error {error:.3e}");
    assert!(error < 1e-3, "tip {tip:?} vs {expected:?}: {error:.2e}");
}

/// Backward Euler at the seed's Δt = 1e-2 s, one step a frame, on the
/// large-deflection cantilever with the first mode critically damped
/// (c = 2μω₁, ω₁ = 3.516 √(EI/μ)/L²): after 5 s the tip rests within
/// 0.5 % of its displacement from the elastica's.
#[test]
fn backward_euler_settles_the_large_cantilever_onto_the_elastica() {
    let probe = large_cantilever(50, 0.0);
    let (ei, mu) = (probe.material.bending[0], probe.material.mass_per_length);
    let w1 = 3.516 * (ei / mu).sqrt() / (0.2 * 0.2);
    let spec = large_cantilever(50, 2.0 * mu * w1);
    let (tip, expected, error) = tip_against_the_elastica(spec, 50, Integrator::BackwardEuler, 500);
    eprintln!("backward Euler, 5 s: tip {tip:?}, elastica {expected:?}, error {error:.3e}");
    assert!(error < 5e-3, "tip {tip:?} vs {expected:?}: {error:.2e}");
}

/// The small-deflection cantilever of tests/cantilever.rs (40 segments,
/// no drag) released straight under gravity swings about its sagged
/// shape in its first mode, period T₁ = 2π L²/(3.516 √(EI/μ)) with
/// L = free length + h/2 (Euler–Bernoulli). The implicit midpoint rule at
/// Δt = T₁/100, one step each, keeps the period within 1 % (from the
/// times of the tip's lowest points, interpolated) and the swing within
/// 10 % over three periods; backward Euler at T₁/20 stays bounded (its
/// swing only decays).
#[test]
fn the_midpoint_rule_keeps_the_cantilevers_period_and_swing() {
    let segments = 40;
    let h = L / segments as f64;
    let spec = small_cantilever(segments);
    let le = L + h / 2.0;
    let period = 2.0 * std::f64::consts::PI * le * le / (3.516 * (EI / MU).sqrt());
    let run = |integrator: Integrator, per_period: usize, periods: f64| {
        let dt = period / per_period as f64;
        let params = SimParams {
            dt,
            substeps: 1,
            gravity: DVec3::new(0.0, -G, 0.0),
            integrator,
            ..SimParams::default()
        };
        let mut sim = simulator(std::slice::from_ref(&spec), params);
        let steps = (periods * per_period as f64).ceil() as usize;
        let ys: Vec<f64> = (0..steps)
            .map(|_| {
                sim.step().unwrap();
                sim.state.pos.last().unwrap().y
            })
            .collect();
        (dt, ys)
    };
    // Lowest points: local minima, placed by the parabola through their
    // neighbours (times of step i's end: (i + 1) dt).
    let minima = |dt: f64, ys: &[f64]| -> Vec<(f64, f64)> {
        (1..ys.len() - 1)
            .filter(|&i| ys[i] < ys[i - 1] && ys[i] <= ys[i + 1])
            .map(|i| {
                let (a, b, c) = (ys[i - 1], ys[i], ys[i + 1]);
                let offset = 0.5 * (a - c) / (a - 2.0 * b + c);
                ((i as f64 + 1.0 + offset) * dt, b - 0.25 * (a - c) * offset)
            })
            .collect()
    };
    let (dt, ys) = run(Integrator::ImplicitMidpoint, 100, 3.3);
    let lows = minima(dt, &ys);
    assert_eq!(lows.len(), 3, "one lowest point a period: {lows:?}");
    let measured = (lows[2].0 - lows[0].0) / 2.0;
    let error = (measured - period).abs() / period;
    // The swing: the depth of each lowest point below the start.
    let (first, last) = (-lows[0].1, -lows[2].1);
    eprintln!(
        "midpoint: period {measured:.5} s vs {period:.5} s ({error:.2e}); swing {first:.4e} → {last:.4e} m"
    );
    assert!(error < 1e-2, "period {measured} s vs {period} s");
    assert!(
        (last - first).abs() < 0.1 * first,
        "swing {first:.4e} → {last:.4e} m"
    );
    let (_, ys) = run(Integrator::BackwardEuler, 20, 3.0);
    let sag = MU * G * le.powi(4) / (8.0 * EI);
    assert!(
        ys.iter().all(|y| y.is_finite() && y.abs() < 2.5 * sag),
        "backward Euler at T₁/20 left its swing: {ys:?}"
    );
}

/// Seed 004's rod (50 vertices) with light drag (0.05 N·s/m²) under
/// backward Euler at Δt = 1e-2 s, one step a frame, rests within 1 mm at
/// every vertex of where the symplectic integrator (about 80 substeps a
/// step within its limit, the same fast projection) brings it to rest,
/// after 3 s.
#[test]
fn backward_euler_at_one_step_a_frame_rests_where_the_explicit_run_does() {
    let mut rod = seed_rod(50);
    rod.material.drag = 0.05;
    let mut explicit = simulator(&[rod.clone()], seed_params(Integrator::Symplectic, 0));
    let mut implicit = simulator(&[rod], seed_params(Integrator::BackwardEuler, 1));
    tip_heights(&mut explicit, 300);
    tip_heights(&mut implicit, 300);
    assert!(explicit.params.substeps > 50, "the explicit limit");
    for sim in [&explicit, &implicit] {
        assert!(sim.diagnostics().max_speed < 1e-4, "not at rest");
    }
    let diff = max_diff(&explicit.state.pos, &implicit.state.pos);
    eprintln!("seed rod at rest: explicit and backward Euler {diff:.2e} m apart");
    assert!(diff < 1e-3, "rest shapes {diff:.2e} m apart");
    let sag = -explicit.state.pos.last().unwrap().z;
    assert!(sag > 0.01, "sag {sag} m");
}

/// `scenes/hair.toml` with 32-vertex strands (60 of them) under backward
/// Euler at the scene's dt = 1/60 s, one step a frame, through the
/// scene's 150 steps of the moving, turning head: every edge within a
/// strain of 1e-3 of its rest length and no vertex deeper than 0.5 mm in
/// a collider at every step (the rounds of contact and projection after
/// the step keep both).
#[test]
fn hair_at_one_step_a_frame_keeps_its_lengths_and_stays_out() {
    let sets: Vec<String> = [
        "rods.0.count=60",
        "rods.0.segments=31",
        "sim.substeps=\"auto\"",
        "sim.integrator=\"backward-euler\"",
    ]
    .map(String::from)
    .to_vec();
    let scene =
        strands::scene::Scene::load(std::path::Path::new("scenes/hair.toml"), &sets).unwrap();
    let (rods, state) = scene.build();
    let mut sim = CpuSimulator::new(rods, state, scene.params);
    assert_eq!(sim.params.substeps, 1);
    let (mut strain, mut deepest) = (0.0f64, 0.0f64);
    for _ in 0..150 {
        let d = sim.step().unwrap();
        strain = strain.max(d.max_strain);
        deepest = deepest.max(d.max_penetration);
    }
    eprintln!("hair, backward Euler at 1/60 s: strain {strain:.2e}, deepest {deepest:.2e} m");
    assert!(strain < 1e-3, "strain {strain:.2e}");
    assert!(deepest < 5e-4, "{deepest:.2e} m inside");
}

/// A run that stops under an implicit integrator never blames the explicit
/// step limit, which does not bind it: the same projection failure on the
/// same rod at a substep 20 times that limit is put down to it under the
/// symplectic integrator and not under backward Euler.
#[test]
fn a_stop_under_an_implicit_integrator_does_not_blame_the_step_limit() {
    use strands::cpu::Unstable;
    use strands::cpu::project::FastProjection;
    let sim = simulator(&[small_cantilever(40)], SimParams::default());
    let limit = strands::model::stability::rod_step_limit(&sim.rods, 0).h_max;
    let failed = FastProjection {
        iterations: 50,
        max_strain: 0.3,
        singular: false,
        converged: false,
    };
    let hint = |integrator| {
        let params = SimParams {
            dt: 20.0 * limit,
            substeps: 1,
            integrator,
            ..SimParams::default()
        };
        Unstable::projection(&sim.rods, &params, 0, failed, 7, 1.0).hint
    };
    let explicit = hint(Integrator::Symplectic);
    let implicit = hint(Integrator::BackwardEuler);
    assert!(explicit.contains("explicit stability limit"), "{explicit}");
    assert!(!implicit.contains("stability limit"), "{implicit}");
}
