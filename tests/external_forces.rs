//! Linear air drag `−c·L·(v − w)` (docs/PHYSICS.md): a free rod falling
//! under gravity reaches the terminal velocity μg/c, and without gravity it is
//! carried until it moves with the wind.

mod common;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec};
use strands::model::params::Wind;

fn falling_rod(c: f64) -> RodSpec {
    let points: Vec<DVec3> = (0..6)
        .map(|i| DVec3::new(0.04 * i as f64, 0.0, 0.0))
        .collect();
    let mut material = iso_material(1e-4, 1e-4, 0.02);
    material.drag = c;
    RodSpec {
        name: "falling".into(),
        points: points.clone(),
        rest: points,
        material,
        start: EndSpec::Free,
        end: EndSpec::Free,
        frame_angle: 0.0,
    }
}

#[test]
fn terminal_velocity_is_mu_g_over_c() {
    let c = 0.5; // N·s/m², time constant μ/c = 0.04 s
    let mut params = elastic_params();
    params.gravity = DVec3::new(0.0, -9.81, 0.0);
    params.dt = 0.01;
    params.substeps = 10;
    let mut sim = simulator(&[falling_rod(c)], params);
    for _ in 0..100 {
        sim.step().unwrap(); // 1 s = 25 time constants
    }
    let expected = 0.02 * 9.81 / c;
    for v in &sim.state.vel {
        assert!(
            (v.y + expected).abs() < 1e-6 * expected,
            "vertex speed {v} vs μg/c = {expected}"
        );
        assert!(v.x.abs() < 1e-9 && v.z.abs() < 1e-9);
    }
}

#[test]
fn a_free_rod_is_carried_by_the_wind() {
    let mut params = elastic_params();
    params.wind = Wind {
        velocity: DVec3::new(0.0, 0.0, 1.5),
        ..Wind::default()
    };
    params.dt = 0.01;
    params.substeps = 10;
    let mut sim = simulator(&[falling_rod(0.5)], params);
    for _ in 0..100 {
        sim.step().unwrap();
    }
    for v in &sim.state.vel {
        assert!(
            (*v - DVec3::new(0.0, 0.0, 1.5)).length() < 1e-6,
            "velocity {v}, wind 1.5 m/s along z"
        );
    }
}
