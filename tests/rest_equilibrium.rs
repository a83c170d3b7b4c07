//! The rest state is an equilibrium (eq. 3 vanishes with its gradient when
//! ω = ω̄ and θ = θ̄): a naturally curved, anisotropic rod released in its rest
//! shape without gravity does not move, whatever its end conditions.

mod common;

use common::*;
use strands::build::{EndSpec, RodSpec};

#[test]
fn curved_anisotropic_rods_stay_at_rest_without_gravity() {
    let mut rng = rng(7);
    let ends = [
        (EndSpec::Free, EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Clamped(0)),
    ];
    let specs: Vec<RodSpec> = ends
        .iter()
        .map(|&(start, end)| {
            let rest = random_polyline(&mut rng, 12, 0.05, 0.6);
            RodSpec {
                name: "rest".into(),
                points: rest.clone(),
                rest,
                material: aniso_material(),
                start,
                end,
                frame_angle: 0.0,
            }
        })
        .collect();
    let mut sim = simulator(&specs, elastic_params());
    let initial = sim.state.pos.clone();
    let mut bent = 0.0;
    for _ in 0..50 {
        let d = sim.step().unwrap();
        bent = d.bending;
    }
    // The rods are strongly curved: a wrong rest curvature would give O(1e-2 J).
    let max_move = sim
        .state
        .pos
        .iter()
        .zip(&initial)
        .fold(0.0f64, |m, (a, b)| m.max((*a - *b).length()));
    assert!(max_move < 1e-10, "rest rods moved by {max_move:.3e} m");
    assert!(bent < 1e-20, "bending energy at rest {bent:.3e} J");
    assert!(sim.state.theta.iter().all(|t| t.abs() < 1e-10));
}
