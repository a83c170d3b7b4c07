//! Contact works in the world frame (`ColliderPoses`: the shape at the end
//! pose, one rotation for the collider's motion over the substep), where it
//! used to turn every vertex into the collider's frame and back. Distances
//! and closest points do not change under a rigid motion, so each world-frame
//! quantity must equal the collider-frame one it replaces, computed here
//! the old way: point into the end pose's frame (R_end⁻¹ (x − o_end)),
//! measured against the shape as given, normal turned out by R_end, and a
//! point carried from the end pose to the start pose as
//! P_start(P_end⁻¹ x). The poses turn about different axes, so a rotation
//! composed in the wrong order or a motion applied the wrong way fails.

use glam::{DQuat, DVec3};
use std::sync::Arc;
use strands::model::anchor::Pose;

use strands::cpu::contact::{
    ColliderPoses, collider_distance, distance_now, edge_distance, path_distance, path_distance_now,
};
use strands::model::colliders::mesh::{Mesh, bake_sdf};
use strands::model::colliders::{Collider, Shape};

fn to_local(p: &Pose, x: DVec3) -> DVec3 {
    p.rotation.inverse() * (x - (p.pivot + p.translation))
}

fn to_world(p: &Pose, q: DVec3) -> DVec3 {
    (p.pivot + p.translation) + p.rotation * q
}

fn collider(shape: Shape) -> Collider {
    Collider {
        name: "test".into(),
        shape,
        anchor: 1,
        friction: 0.3,
        static_friction: 0.4,
        margin: 1e-4,
    }
}

/// A pose turned by `angle` (rad) about `axis` about `pivot`, moved by `t`.
fn pose(pivot: DVec3, t: DVec3, axis: DVec3, angle: f64) -> Pose {
    Pose {
        pivot,
        translation: t,
        rotation: DQuat::from_axis_angle(axis.normalize(), angle),
    }
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape::Sphere {
            center: DVec3::new(0.02, -0.01, 0.03),
            radius: 0.1,
        },
        Shape::Capsule {
            a: DVec3::new(-0.2, -0.3, 0.05),
            b: DVec3::new(0.2, -0.25, -0.05),
            radius: 0.06,
        },
        Shape::Plane {
            point: DVec3::new(0.0, -0.5, 0.1),
            normal: DVec3::new(0.1, 1.0, -0.2).normalize(),
        },
        // An SDF stays in the collider's frame: sampled where the vertex
        // is turned to, its normal turned out.
        Shape::Sdf(Arc::new(
            bake_sdf(
                &Mesh::icosphere(DVec3::new(0.03, -0.05, 0.0), 0.08, 2),
                0.01,
                0.03,
                1 << 20,
            )
            .unwrap(),
        )),
    ]
}

/// Points around the shapes, some inside, some outside.
fn points() -> Vec<DVec3> {
    let mut out = Vec::new();
    for i in 0..7 {
        for j in 0..5 {
            let (a, b) = (i as f64 * 0.9 + 0.3, j as f64 * 0.6 - 1.1);
            let r = 0.02 + 0.03 * (i + j) as f64;
            out.push(
                DVec3::new(0.05, 1.55, -0.02)
                    + r * DVec3::new(a.cos() * b.cos(), b.sin(), a.sin() * b.cos()),
            );
        }
    }
    out
}

fn poses() -> (Pose, Pose) {
    let pivot = DVec3::new(0.0, 1.6, 0.0);
    let start = pose(
        pivot,
        DVec3::new(0.01, 0.0, -0.02),
        DVec3::new(0.2, 1.0, 0.1),
        0.7,
    );
    let end = pose(
        pivot,
        DVec3::new(0.015, 0.004, -0.018),
        DVec3::new(1.0, 0.3, -0.4),
        0.75,
    );
    (start, end)
}

fn close(a: DVec3, b: DVec3, what: &str) {
    assert!((a - b).length() < 1e-13, "{what}: {a} against {b}");
}

#[test]
fn back_and_forward_carry_points_with_the_collider() {
    let (start, end) = poses();
    for shape in shapes() {
        let p = ColliderPoses::new(&collider(shape), start, end);
        for x in points() {
            close(p.back(x), to_world(&start, to_local(&end, x)), "back");
            close(p.forward(x), to_world(&end, to_local(&start, x)), "forward");
            close(p.forward(p.back(x)), x, "forward ∘ back");
        }
    }
}

#[test]
fn distances_in_the_world_frame_are_those_in_the_colliders_frame() {
    let (start, end) = poses();
    let mut inside = 0;
    for shape in shapes() {
        let p = ColliderPoses::new(&collider(shape.clone()), start, end);
        let name = match shape {
            Shape::Sphere { .. } => "sphere",
            Shape::Capsule { .. } => "capsule",
            Shape::Plane { .. } => "plane",
            Shape::Sdf(_) => "SDF",
        };
        let pts = points();
        for (i, &x) in pts.iter().enumerate() {
            // A vertex: distance and normal.
            let (phi, n) = distance_now(&p, x);
            let (phi_local, n_local) = collider_distance(&shape, to_local(&end, x));
            assert!(
                (phi - phi_local).abs() < 1e-13,
                "{name}: φ {phi} against {phi_local}"
            );
            close(n, end.rotation * n_local, "normal");
            inside += (phi < 0.0) as usize;
            // A substep's path: from the start point carried to the end
            // pose, against the path between the two poses' frames.
            let x_start = pts[(i + 3) % pts.len()];
            let path = path_distance_now(&p, p.forward(x_start), x);
            let path_local = path_distance(&shape, to_local(&start, x_start), to_local(&end, x));
            assert!(
                (path - path_local).abs() < 1e-13,
                "{name}: path {path} against {path_local}"
            );
            // An edge: its closest point, distance and normal.
            let xb = pts[(i + 1) % pts.len()];
            let world = edge_distance(&p.shape, x, xb);
            let local = edge_distance(&shape, to_local(&end, x), to_local(&end, xb));
            assert_eq!(world.is_some(), local.is_some(), "{name}: edges");
            if let (Some((s, phi, n)), Some((s_l, phi_l, n_l))) = (world, local) {
                assert!(
                    (s - s_l).abs() < 1e-12 && (phi - phi_l).abs() < 1e-13,
                    "{name}: edge"
                );
                close(n, end.rotation * n_l, "edge normal");
            }
        }
    }
    // The points reach into the shapes, so pushes are tested too.
    assert!(inside > 5, "{inside} points inside a shape");
}
