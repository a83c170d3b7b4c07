//! A straight isotropic rod clamped at both ends, one end turned by Φ about
//! the rod axis, twists uniformly (eq. 5): mᵢ/l̄ᵢ = Φ/(2L) with 2L = Σ l̄ᵢ, holds
//! the energy βΦ²/(2L) (eq. 6), and the clamp feels the torque βΦ/L (§8.2).

mod common;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec};
use strands::model::anchor::{Anchor, Keyframe};

#[test]
fn clamped_rod_turned_by_phi_twists_uniformly() {
    let beta = 0.8e-3;
    let phi = 2.5 * std::f64::consts::PI; // more than a turn: tests unwrapping
    // Uneven spacing, so Voronoi weighting matters.
    let xs = [0.0, 0.05, 0.08, 0.16, 0.21, 0.3, 0.33, 0.41, 0.5, 0.55];
    let points: Vec<DVec3> = xs.iter().map(|&x| DVec3::new(x, 0.0, 0.0)).collect();
    let spin = Anchor {
        name: "spin".into(),
        pivot: DVec3::ZERO,
        keyframes: vec![
            Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
            Keyframe::new(0.5, DVec3::ZERO, DVec3::X * phi),
        ],
    };
    let spec = RodSpec {
        name: "twisted".into(),
        points: points.clone(),
        rest: points,
        material: iso_material(1.0e-3, beta, 0.01),
        start: EndSpec::Clamped(0),
        end: EndSpec::Clamped(1),
        frame_angle: 0.0,
    };
    let mut params = elastic_params();
    params.dt = 0.01;
    params.substeps = 10;
    let mut sim = simulator_with_anchors(&[spec], vec![Anchor::world(), spin], params);
    for _ in 0..60 {
        sim.step().unwrap();
    }
    let th = &sim.state.theta;
    let vor = &sim.rods.voronoi;
    let two_l: f64 = vor.iter().sum();
    assert!(
        (th[th.len() - 1] - th[0] - phi).abs() < 1e-9,
        "end-to-end twist {}",
        th[th.len() - 1] - th[0]
    );
    for i in 1..th.len() {
        let expected = phi / two_l;
        let got = (th[i] - th[i - 1]) / vor[i];
        assert!(
            (got - expected).abs() < 1e-9 * expected,
            "vertex {i}: twist density {got} vs {expected}"
        );
    }
    let d = sim.diagnostics();
    let e = beta * phi * phi / two_l;
    assert!(
        (d.twisting - e).abs() < 1e-9 * e,
        "twist energy {} vs βΦ²/(2L) = {e}",
        d.twisting
    );
    assert!(
        d.bending < 1e-20,
        "a straight rod does not bend: {}",
        d.bending
    );
    let [t0, t1] = sim.clamp_torques(0);
    let tau = beta * phi / (two_l / 2.0);
    assert!(
        (t1.unwrap() - tau).abs() < 1e-9 * tau,
        "end torque {t1:?} vs βΦ/L = {tau}"
    );
    assert!(
        (t0.unwrap() + tau).abs() < 1e-9 * tau,
        "start torque {t0:?} vs −βΦ/L"
    );
}
