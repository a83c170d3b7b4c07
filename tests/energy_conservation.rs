//! Symplectic Euler (§7.2) conserves a modified energy: without gravity,
//! damping or projection, the total energy (kinetic + bending + twisting) of a
//! released rod oscillates in a band of width O(h) and does not drift.

mod common;

use common::*;
use strands::build::{EndSpec, RodSpec};
use strands::params::Projection;

fn energy_band(substeps: u32) -> (f64, f64, f64) {
    let mut rng = rng(3);
    // Straight rest shape, released from a curved shape: it will oscillate.
    let points = random_polyline(&mut rng, 12, 0.05, 0.25);
    let rest = strands::build::straightened(&points);
    let spec = RodSpec {
        name: "free".into(),
        points,
        rest,
        material: aniso_material(),
        start: EndSpec::Free,
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let mut params = elastic_params();
    params.projection = Projection::None;
    params.dt = 0.002;
    params.substeps = substeps;
    let mut sim = simulator(&[spec], params);
    let total = |d: strands::cpu::Diagnostics| d.kinetic + d.bending + d.twisting;
    let e0 = total(sim.diagnostics());
    let (mut lo, mut hi) = (e0, e0);
    let mut early = 0.0;
    let mut late = 0.0;
    let steps = 2000;
    for k in 0..steps {
        let e = total(sim.step().unwrap());
        lo = lo.min(e);
        hi = hi.max(e);
        if k < steps / 4 {
            early += e;
        } else if k >= 3 * steps / 4 {
            late += e;
        }
    }
    let drift = (late - early).abs() / (steps as f64 / 4.0) / e0;
    ((hi - lo) / e0, drift, sim.diagnostics().kinetic / e0)
}

#[test]
fn energy_stays_bounded_without_drift() {
    let (band, drift, kinetic) = energy_band(20);
    assert!(
        kinetic > 0.05,
        "the rod must actually move (kinetic share {kinetic})"
    );
    assert!(band < 0.02, "energy band {band} of the initial energy");
    assert!(drift < 0.005, "drift {drift} of the initial energy");
    // The band is O(h): halving the step roughly halves it.
    let (band2, _, _) = energy_band(40);
    assert!(band2 < 0.7 * band, "band {band} at h, {band2} at h/2");
}
