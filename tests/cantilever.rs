//! A horizontal cantilever under its own weight, in the small-deflection
//! regime, settles to the Euler–Bernoulli tip deflection δ = qL⁴/(8EI)
//! (q = μg the weight per length, L the free length), and the discrete
//! answer converges to it as the rod is refined.
//!
//! Where the beam starts: DER clamps a whole edge (x₀x₁). The bending energy
//! of vertex x₁ is integrated over its Voronoi cell, which begins at the
//! midpoint of the clamped edge (§4.2, "Pointwise vs. integrated quantities"),
//! so the discrete rod is a beam clamped there: L = (free length) + h/2.
//! Measured from x₁ instead, the answer still converges, but only at first
//! order (error ≈ 2h/L), which the second test checks.

mod common;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec};
use strands::model::params::{Projection, SimParams};

const L: f64 = 0.2; // free length (m)
const MU: f64 = 3.14e-3; // mass per length (kg/m)
const G: f64 = 9.81;
/// EI (N·m²) chosen for δ/L = 0.5%: geometric nonlinearity is O((δ/L)²) ≈ 3e-5.
const EI: f64 = MU * G * L * L * L / (8.0 * 0.005);

fn settled_tip_deflection(segments: usize) -> f64 {
    let h = L / segments as f64;
    // Vertex 0 and 1 are clamped; the free length runs from vertex 1 (x = 0).
    let points: Vec<DVec3> = (0..segments + 2)
        .map(|i| DVec3::new((i as f64 - 1.0) * h, 0.0, 0.0))
        .collect();
    // Critical damping of the first mode, ω₁ = 3.516 √(EI/μ)/L².
    let w1 = 3.516 * (EI / MU).sqrt() / (L * L);
    let mut material = iso_material(EI, EI, MU);
    material.drag = 2.0 * MU * w1;
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
        gravity: DVec3::new(0.0, -G, 0.0),
        projection: Projection::Fast {
            tolerance: 1e-12,
            max_iterations: 50,
        },
        ..SimParams::default()
    };
    let mut sim = simulator(&[spec], params);
    let h_max = strands::cpu::stable_step_estimate(&sim.rods, 0);
    sim.params.substeps = (params.dt / (0.5 * h_max)).ceil() as u32;
    // Decay e^{−ω₁ t}: 0.4 s leaves e^{−50}.
    let steps = (0.4 / params.dt) as usize;
    for _ in 0..steps {
        sim.step().unwrap();
    }
    assert!(sim.diagnostics().max_speed < 1e-9, "not settled");
    -sim.state.pos.last().unwrap().y
}

fn euler_bernoulli(length: f64) -> f64 {
    MU * G * length.powi(4) / (8.0 * EI)
}

const SEGMENTS: [usize; 4] = [5, 10, 20, 40];

#[test]
fn cantilever_matches_euler_bernoulli_and_converges() {
    let deflections: Vec<f64> = SEGMENTS
        .iter()
        .map(|&n| settled_tip_deflection(n))
        .collect();
    let errors: Vec<f64> = SEGMENTS
        .iter()
        .zip(&deflections)
        .map(|(&n, d)| {
            let exact = euler_bernoulli(L + 0.5 * L / n as f64);
            (d - exact).abs() / exact
        })
        .collect();
    // Second-order convergence: halving h divides the error by about 4.
    for w in errors.windows(2) {
        assert!(w[1] < w[0] / 3.0, "error does not fall as h²: {errors:?}");
    }
    assert!(
        errors[2] < 0.01 && errors[3] < 0.01,
        "relative errors {errors:?}"
    );
    // Against the nominal free length the error is first order, ≈ 2h/L.
    for (&n, d) in SEGMENTS.iter().zip(&deflections) {
        let e = (d - euler_bernoulli(L)) / euler_bernoulli(L);
        let predicted = 2.0 / n as f64;
        assert!(
            (e - predicted).abs() < 0.2 * predicted,
            "{n} segments: {e} vs 2h/L = {predicted}"
        );
    }
}
