//! Clamped ends follow their anchors at every substep: the roots of hair on a
//! moving head sit exactly where the head's pose puts them, and move with the
//! head's velocity (no jumps between substeps).

mod common;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec};
use strands::model::anchor::{Anchor, Keyframe};
use strands::model::rods::EndCondition;

#[test]
fn roots_follow_a_moving_turning_head() {
    let head = Anchor {
        name: "head".into(),
        pivot: DVec3::new(0.0, 1.0, 0.0),
        keyframes: vec![
            Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
            Keyframe::new(1.0, DVec3::new(0.3, 0.0, 0.0), DVec3::Y * 1.0),
        ],
    };
    let specs: Vec<RodSpec> = (0..3)
        .map(|k| {
            let root = DVec3::new(0.1 * (k as f64 - 1.0), 1.1, 0.0);
            let points: Vec<DVec3> = (0..8)
                .map(|i| root + DVec3::new(0.0, 0.0, 0.03 * i as f64))
                .collect();
            RodSpec {
                name: format!("hair{k}"),
                points: points.clone(),
                rest: points,
                material: iso_material(1e-5, 1e-5, 0.001),
                start: EndSpec::Clamped(1),
                end: EndSpec::Free,
                frame_angle: 0.0,
            }
        })
        .collect();
    let mut params = elastic_params();
    params.gravity = DVec3::new(0.0, -9.81, 0.0);
    params.dt = 0.05;
    params.substeps = 50;
    let mut sim = simulator_with_anchors(&specs, vec![Anchor::world(), head.clone()], params);
    for _ in 0..10 {
        sim.step().unwrap();
        let t = sim.state.time;
        let pose = head.pose(t);
        let h = params.h();
        for r in 0..3 {
            let EndCondition::Clamped(c) = sim.rods.start[r] else {
                panic!()
            };
            let v0 = sim.rods.vertices(r).start;
            for k in 0..2 {
                let x = pose.point(c.local_pos[k]);
                assert!(
                    (sim.state.pos[v0 + k] - x).length() < 1e-12,
                    "root off the head"
                );
                // Velocity over the last substep only: the anchor was sampled there.
                let v = (x - head.pose(t - h).point(c.local_pos[k])) / h;
                assert!(
                    (sim.state.vel[v0 + k] - v).length() < 1e-9,
                    "root velocity {} vs {v}",
                    sim.state.vel[v0 + k]
                );
            }
        }
    }
    // The free ends were dragged along.
    assert!(
        sim.state.pos[7].x > 0.05,
        "tip did not follow the head: {}",
        sim.state.pos[7]
    );
}
