//! The vertex contact visits only the colliders that may act on the vertex
//! (`colliders_near_vertex`, built on `segment_may_reach`): a sphere or a
//! capsule is skipped when a sphere holding it is farther from the vertex,
//! and in phase 0 from its path, than the vertex's reach. Skipping must
//! change nothing, so the bound must never reject a collider that would
//! act. The law: for any segment q0–q1 and any shape inside the sphere
//! (c, R), every distance contact computes — a point's φ, a path's
//! closest approach, an edge's distance at any pair of segment parameters
//! — is at least |mid − c| − |q1 − q0|/2 − R (triangle inequality). Checked
//! here against the exact distances of `collider_distance`,
//! `path_distance` and `edge_distance` on random spheres, capsules and
//! segments placed around the bound's edge, where a wrong term in the bound
//! (a missing half length, the capsule's half axis, the reach) shows.

mod common;

use common::{rng, unit};
use glam::DVec3;
use rand::RngExt;
use strands::cpu::contact::{
    bounding_sphere, collider_distance, colliders_after, edge_distance, path_distance,
    segment_may_reach,
};
use strands::model::colliders::Shape;

fn shapes(r: &mut rand_pcg::Pcg64) -> Shape {
    let centre = unit(r) * r.random_range(0.0..1.0);
    let radius = r.random_range(0.01..0.2);
    if r.random_bool(0.5) {
        Shape::Sphere {
            center: centre,
            radius,
        }
    } else {
        let axis = unit(r) * r.random_range(0.0..0.3);
        Shape::Capsule {
            a: centre - axis,
            b: centre + axis,
            radius,
        }
    }
}

/// Smallest distance contact can compute from segment q0–q1 to the shape:
/// the point's (q0 = q1), the path's and the edge's.
fn nearest(shape: &Shape, q0: DVec3, q1: DVec3) -> f64 {
    let edge = edge_distance(shape, q0, q1).map_or(f64::INFINITY, |(_, phi, _)| phi);
    collider_distance(shape, q0)
        .0
        .min(collider_distance(shape, q1).0)
        .min(path_distance(shape, q0, q1))
        .min(edge)
}

#[test]
fn may_reach_never_rejects_a_contact() {
    let mut r = rng(11);
    let (mut rejected, mut close) = (0, 0);
    for _ in 0..200_000 {
        let shape = shapes(&mut r);
        let (c, big) = bounding_sphere(&shape).unwrap();
        let reach = r.random_range(0.0..0.01);
        // A segment whose midpoint lies just inside or outside the bound's
        // edge (within 2 cm), as a point (a vertex) or up to 10 cm long.
        let half = if r.random_bool(0.3) {
            0.0
        } else {
            r.random_range(0.0..0.05)
        };
        let mid = c + unit(&mut r) * (big + reach + half + r.random_range(-0.02..0.02));
        let along = unit(&mut r) * half;
        let (q0, q1) = (mid - along, mid + along);
        let near = nearest(&shape, q0, q1);
        if !segment_may_reach((c, big), q0, q1, reach) {
            rejected += 1;
            assert!(
                near >= reach,
                "{shape:?}: segment {q0} – {q1} rejected at distance {near} < reach {reach}"
            );
            if near < reach + 0.002 {
                close += 1;
            }
        }
    }
    // The bound is tight enough to reject many segments, some within 2 mm
    // of acting: so the assertions above were put to the test.
    assert!(
        rejected > 50_000 && close > 1_000,
        "{rejected} rejected, {close} close"
    );
}

/// Points on a sphere's own surface shifted outward by reach plus a little
/// less than the slack are kept, by a little more are rejected: the slack
/// is what the bound adds, no more (1e-5 of the magnitudes).
#[test]
fn may_reach_rejects_just_past_the_slack() {
    let shape = Shape::Sphere {
        center: DVec3::new(0.3, -0.2, 0.1),
        radius: 0.1,
    };
    let (c, big) = bounding_sphere(&shape).unwrap();
    let reach = 0.001;
    let dir = DVec3::new(1.0, 2.0, -2.0) / 3.0;
    let x_at = |gap: f64| c + dir * (big + reach + gap);
    // 1e-5 · (|x| + |c| + R + reach) ≈ 1e-5 · 0.93.
    assert!(segment_may_reach((c, big), x_at(5e-6), x_at(5e-6), reach));
    assert!(!segment_may_reach((c, big), x_at(2e-5), x_at(2e-5), reach));
    assert!(collider_distance(&shape, x_at(2e-5)).0 > reach);
}

/// After collider k acts, every later collider is visited again, and no
/// earlier one.
#[test]
fn colliders_after_are_the_later_ones() {
    assert_eq!(colliders_after(0, 3), 0b110);
    assert_eq!(colliders_after(1, 3), 0b100);
    assert_eq!(colliders_after(2, 3), 0);
    assert_eq!(colliders_after(15, 16), 0);
    assert_eq!(colliders_after(3, 16), 0xfff0);
}
