//! Driving from an engine: anchors moved sample by sample on the caller's
//! clock (`Anchor::set_pose`, `CpuSimulator::set_anchor_pose`), teleports
//! that take the groom along rigidly (`rods::teleport`), and the checks
//! that make bad input an error rather than a panic.

use glam::{DQuat, DVec3};
use strands::build::{BuildError, EndSpec, RodSpec, try_build};
use strands::cpu::CpuSimulator;
use strands::model::anchor::{Anchor, AnchorError, Keyframe, nearest_rotation_vector};
use strands::model::params::SimParams;
use strands::model::rods::{EndCondition, RodMaterial};

fn head(keyframes: Vec<Keyframe>) -> Anchor {
    Anchor {
        name: "head".into(),
        pivot: DVec3::new(0.0, 1.6, 0.0),
        keyframes,
    }
}

/// Five strands of 12 vertices hanging from a head at y = 1.6 m (radius
/// 0.1 m), roots clamped to anchor 1, human hair (E = 4 GPa, ρ = 1300
/// kg/m³, r = 50 µm).
fn groom() -> Vec<RodSpec> {
    let material = RodMaterial::from_young(4e9, 0.3, 1300.0, 5e-5, 2e-4).unwrap();
    (0..5)
        .map(|k| {
            let a = 0.4 * (k as f64 - 2.0);
            let root = DVec3::new(0.1 * a.sin(), 1.6, 0.1 * a.cos());
            let dir = DVec3::new(a.sin(), -0.5, a.cos()).normalize();
            let points: Vec<DVec3> = (0..12).map(|i| root + dir * (0.02 * i as f64)).collect();
            RodSpec {
                name: format!("hair{k}"),
                points: points.clone(),
                rest: points,
                material,
                start: EndSpec::Clamped(1),
                end: EndSpec::Free,
                frame_angle: 0.0,
            }
        })
        .collect()
}

fn params() -> SimParams {
    SimParams {
        dt: 1.0 / 60.0,
        substeps: 20,
        ..SimParams::default()
    }
}

fn sim(anchor: Anchor) -> CpuSimulator {
    let (rods, state) = try_build(&groom(), vec![Anchor::world(), anchor]).unwrap();
    CpuSimulator::new(rods, state, params())
}

/// `set_pose(now, t₁, T₁, r₁)`: between `now` and `t₁` the pose is the
/// keyframe rule (anchor.rs) between the pose at `now` and the new one,
/// T(t) = T₀ + (T₁ − T₀)(t − now)/(t₁ − now) and likewise the rotation
/// vector; after `t₁` it holds. Checked at the substep times of a frame.
#[test]
fn driven_pose_interpolates_between_samples() {
    let mut a = head(vec![
        Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
        Keyframe::new(1.0, DVec3::new(0.2, 0.0, 0.0), DVec3::Y * 0.8),
    ]);
    let now = 0.25;
    let (t0, r0) = a.sample(now);
    assert_eq!(t0, DVec3::new(0.05, 0.0, 0.0));
    let (t1, r1) = (DVec3::new(0.1, -0.02, 0.03), DVec3::new(0.1, 0.5, -0.2));
    let target = now + 0.1;
    a.set_pose(now, target, t1, r1).unwrap();
    for k in 0..=10 {
        let t = now + 0.01 * k as f64;
        let s = (t - now) / (target - now);
        let (tr, rv) = a.sample(t);
        assert!((tr - (t0 + (t1 - t0) * s)).length() < 1e-15, "t = {t}");
        assert!((rv - (r0 + (r1 - r0) * s)).length() < 1e-15, "t = {t}");
        let p = a.pose(t);
        assert_eq!(
            p.rotation,
            DQuat::from_scaled_axis(rv),
            "pose from the sample"
        );
    }
    assert_eq!(
        a.sample(target + 5.0),
        (t1, r1),
        "holds after the last sample"
    );
    assert_eq!(a.keyframes.len(), 2, "a driven anchor keeps two samples");
    // A pose for a time not after now is refused, not a jump.
    assert!(matches!(
        a.set_pose(0.5, 0.5, t1, r1),
        Err(AnchorError::NotAfterNow { .. })
    ));
    assert!(matches!(
        a.set_pose(0.5, 0.6, DVec3::NAN, r1),
        Err(AnchorError::NotFinite { .. })
    ));
}

/// A quaternion sample takes the rotation vector nearest the previous one:
/// a head at 170° about y turned to 190° goes on through 180°, it is not
/// sent back the short way to −170°.
#[test]
fn quaternion_samples_keep_turning_the_same_way() {
    let deg = std::f64::consts::PI / 180.0;
    let q = DQuat::from_rotation_y(190.0 * deg);
    let rv = nearest_rotation_vector(q, DVec3::Y * 170.0 * deg);
    assert!((rv - DVec3::Y * 190.0 * deg).length() < 1e-12, "{rv}");
    // Two whole turns on: the nearest equivalent is 720° + 10°.
    let rv = nearest_rotation_vector(DQuat::from_rotation_y(10.0 * deg), DVec3::Y * 700.0 * deg);
    assert!((rv - DVec3::Y * 730.0 * deg).length() < 1e-12, "{rv}");
    let rv = nearest_rotation_vector(DQuat::IDENTITY, DVec3::Y * 350.0 * deg);
    assert!((rv - DVec3::Y * 360.0 * deg).length() < 1e-12, "{rv}");
}

/// The head's motion given as keyframes at every frame and the same motion
/// driven frame by frame (`set_anchor_pose` with the next keyframe before
/// each step) are the same run: identical poses at every substep, up to the
/// rounding of the interpolation parameter (the driven one measures time
/// from the simulation's accumulated clock), so the positions agree to
/// 1e-12 m after a second of motion.
#[test]
fn driven_anchor_equals_the_same_keyframes() {
    let frames = 60;
    let dt = params().dt;
    let path = |f: usize| {
        let t = f as f64 * dt;
        Keyframe::new(
            t,
            DVec3::new(0.1 * (3.0 * t).sin(), 0.02 * t, 0.05 * t),
            DVec3::new(0.0, 1.5 * t, 0.3 * (2.0 * t).sin()),
        )
    };
    let mut scripted = sim(head((0..=frames).map(path).collect()));
    let mut driven = sim(head(vec![path(0)]));
    let a = driven.anchor_index("head").unwrap();
    assert_eq!(a, 1);
    for f in 0..frames {
        scripted.step().unwrap();
        let k = path(f + 1);
        driven
            .set_anchor_pose(a, k.t, k.translation, k.rotation)
            .unwrap();
        driven.step().unwrap();
    }
    let moved = (scripted.state.pos[11] - groom()[0].points[11]).length();
    assert!(moved > 0.05, "the head moved the strands ({moved} m)");
    let worst = scripted
        .state
        .pos
        .iter()
        .zip(&driven.state.pos)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0, f64::max);
    eprintln!("driven vs keyframed: {worst:.3e} m");
    assert!(
        worst < 1e-12,
        "driven and keyframed runs differ by {worst} m"
    );
}

fn max_speed(sim: &CpuSimulator) -> f64 {
    sim.state.vel.iter().map(|v| v.length()).fold(0.0, f64::max)
}

/// Teleporting the head by 3 m and 100° takes the groom along rigidly:
/// every position is the rigid map of where it was (so every distance
/// between vertices is kept, to 1e-12 m), every velocity is turned (its
/// speed kept), and the steps after the jump see no spurious velocity.
/// Bound: the groom settled before the jump (max speed v₀); the rigid map
/// turns the shape and its elastic and constraint forces with it, which
/// balanced gravity before, so the unbalanced force per unit mass after is
/// at most |g − R g| ≤ 2|g|, and after N steps of dt the speed is at most
/// v₀ + 2|g| N dt. A bare jump of the anchor (history reset, rods left
/// behind) breaks that bound: the roots would have to cover 3 m in one
/// substep.
#[test]
fn teleport_takes_the_groom_along_without_a_bounce() {
    let mut s = sim(head(vec![Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO)]));
    for _ in 0..90 {
        s.step().unwrap();
    }
    let v0 = max_speed(&s);
    let before = s.state.clone();
    let translation = DVec3::new(3.0, 0.5, -2.0);
    let rotation = DVec3::new(0.3, 1.0, -0.9).normalize() * 100f64.to_radians();
    let mut bare = sim(head(vec![]));
    bare.state = before.clone();
    s.teleport_anchor(1, translation, rotation).unwrap();
    // Rigid: x ↦ pivot + T + R (x − pivot) from the rest pose (the head had
    // not moved before).
    let pivot = DVec3::new(0.0, 1.6, 0.0);
    let r = DQuat::from_scaled_axis(rotation);
    for (i, (x, v)) in before.pos.iter().zip(&before.vel).enumerate() {
        let want = pivot + translation + r * (*x - pivot);
        assert!((s.state.pos[i] - want).length() < 1e-12, "vertex {i}");
        assert!((s.state.vel[i] - r * *v).length() < 1e-12, "vertex {i}");
    }
    for i in 0..before.pos.len() {
        for j in 0..before.pos.len() {
            let (d0, d1) = (
                (before.pos[i] - before.pos[j]).length(),
                (s.state.pos[i] - s.state.pos[j]).length(),
            );
            assert!((d0 - d1).abs() < 1e-12, "distance {i}–{j}: {d0} → {d1}");
        }
    }
    for (j, t) in s.state.tangent.iter().enumerate() {
        assert!((*t - r * before.tangent[j]).length() < 1e-12);
        assert!((s.state.ref_u[j] - r * before.ref_u[j]).length() < 1e-12);
    }
    // The clamped roots sit where the new pose puts them.
    let pose = s.rods.anchors[1].pose(s.state.time);
    for rod in 0..5 {
        let EndCondition::Clamped(c) = s.rods.start[rod] else {
            panic!("root clamped")
        };
        let v = s.rods.vertices(rod).start;
        assert!((s.state.pos[v] - pose.point(c.local_pos[0])).length() < 1e-12);
    }
    let g = s.params.gravity.length();
    let n = 30;
    for k in 1..=n {
        s.step().unwrap();
        let bound = v0 + 2.0 * g * k as f64 * s.params.dt;
        let v = max_speed(&s);
        assert!(v <= bound, "step {k} after the jump: {v} m/s > {bound} m/s");
    }
    eprintln!(
        "v0 = {v0:.3e} m/s; after {n} steps {:.3e} m/s",
        max_speed(&s)
    );
    // The bare jump: the anchor alone moved.
    bare.rods.anchors[1].reset(bare.state.time, translation, rotation);
    let bound = v0 + 2.0 * g * bare.params.dt;
    match bare.step() {
        Ok(_) => {
            let v = max_speed(&bare);
            assert!(v > bound, "a bare jump moved the roots at only {v} m/s");
        }
        Err(e) => assert_eq!(e.cause, strands::cpu::Cause::AnchorSpeed, "{e}"),
    }
}

/// A pure translation teleport of a groom at rest leaves the physics
/// unchanged (gravity, drag and the elastic forces do not depend on where
/// the groom is): the run after the jump is the run without it, moved, up
/// to the rounding of coordinates a metre larger (1e-12 m).
#[test]
fn translation_teleport_is_the_same_run_moved() {
    let mut a = sim(head(vec![Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO)]));
    for _ in 0..30 {
        a.step().unwrap();
    }
    let mut b = sim(head(vec![Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO)]));
    for _ in 0..30 {
        b.step().unwrap();
    }
    let offset = DVec3::new(0.5, 0.25, -0.5);
    b.teleport_anchor(1, offset, DVec3::ZERO).unwrap();
    for _ in 0..30 {
        a.step().unwrap();
        b.step().unwrap();
    }
    let worst = a
        .state
        .pos
        .iter()
        .zip(&b.state.pos)
        .map(|(x, y)| (*x + offset - *y).length())
        .fold(0.0, f64::max);
    eprintln!("translated run vs run moved: {worst:.3e} m");
    assert!(worst < 1e-12, "{worst}");
}

/// A rod clamped to an anchor the list does not have is an error naming the
/// rod and the anchor, not an index panic; so is a material out of range.
#[test]
fn bad_rods_built_in_code_are_errors() {
    let mut specs = groom();
    specs[3].start = EndSpec::Clamped(4);
    match try_build(&specs, vec![Anchor::world(), head(vec![])]) {
        Err(
            e @ BuildError::NoSuchAnchor {
                rod: 3, anchor: 4, ..
            },
        ) => {
            let m = e.to_string();
            assert!(m.contains("hair3") && m.contains("anchor 4"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    let mut specs = groom();
    specs[1].material.mass_per_length = -1.0;
    assert!(matches!(
        try_build(&specs, vec![Anchor::world(), head(vec![])]),
        Err(BuildError::Material { rod: 1, .. })
    ));
    assert!(matches!(
        try_build(&groom(), vec![]),
        Err(BuildError::NoWorld)
    ));
    assert!(RodMaterial::from_young(4e9, 0.6, 1300.0, 5e-5, 0.0).is_err());
    assert!(RodMaterial::from_young(-1.0, 0.3, 1300.0, 5e-5, 0.0).is_err());
}

/// Teleport refuses a rod held by the anchor at one end and by another at
/// the other (it would tear), the world frame and an unknown index.
#[test]
fn teleport_refuses_what_it_cannot_move_rigidly() {
    let mut specs = groom();
    specs[2].end = EndSpec::Clamped(0);
    let (rods, state) = try_build(&specs, vec![Anchor::world(), head(vec![])]).unwrap();
    let mut s = CpuSimulator::new(rods, state, params());
    let before = s.state.pos.clone();
    assert!(matches!(
        s.teleport_anchor(1, DVec3::X, DVec3::ZERO),
        Err(AnchorError::SharedRod { rod: 2, .. })
    ));
    assert_eq!(s.state.pos, before, "nothing moved");
    assert!(matches!(
        s.teleport_anchor(0, DVec3::X, DVec3::ZERO),
        Err(AnchorError::World)
    ));
    assert!(matches!(
        s.teleport_anchor(7, DVec3::X, DVec3::ZERO),
        Err(AnchorError::NoSuchAnchor { index: 7, .. })
    ));
}

/// `set_material`: vertex masses follow the new mass per length (a
/// vertex's lumped mass is μ times its Voronoi length), clamped vertices
/// stay immovable; a material out of range is refused.
#[test]
fn set_material_updates_the_masses() {
    let mut s = sim(head(vec![]));
    let m0 = s.rods.mass.clone();
    let mut m = s.rods.material[2];
    let old = m.mass_per_length;
    m.mass_per_length = 3.0 * old;
    s.set_material(2, m).unwrap();
    for i in s.rods.vertices(2) {
        assert!((s.rods.mass[i] - 3.0 * m0[i]).abs() < 1e-15 * m0[i].max(1e-300));
        if i < s.rods.vertices(2).start + 2 {
            assert_eq!(s.rods.inv_mass[i], 0.0);
        } else {
            assert!((s.rods.inv_mass[i] * s.rods.mass[i] - 1.0).abs() < 1e-15);
        }
    }
    assert_eq!(s.rods.mass[s.rods.vertices(1)], m0[s.rods.vertices(1)]);
    m.twist = f64::NAN;
    assert!(s.set_material(2, m).is_err());
    s.step().unwrap();
}
