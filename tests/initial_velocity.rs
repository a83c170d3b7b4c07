//! `[[rods]] velocity` and `angular_velocity`: a rod's initial rigid motion
//! about its centre of mass, for rods with both ends free.

use glam::DVec3;
use std::path::Path;
use strands::cpu::CpuSimulator;
use strands::model::rods::{RodSet, State};
use strands::scene::Scene;

const V: [f64; 3] = [0.3, -0.2, 0.5];
/// Degrees per second.
const W: [f64; 3] = [40.0, -25.0, 90.0];

/// A free helix (curved, so its vertex centroid is not its centre of mass
/// and the spin bends it) in zero gravity, without drag.
fn scene(extra: &str) -> String {
    scene_with(extra, 20)
}

fn scene_with(extra: &str, sub: u32) -> String {
    format!(
        r#"
[sim]
gravity = [0, 0, 0]
dt = 0.01
substeps = {sub}

[materials.wire]
bending_stiffness = 2e-4
twist_stiffness = 1.5e-4
mass_per_length = 0.02

[[rods]]
kind = "helix"
material = "wire"
center = [0.1, 0.2, -0.3]
axis = [0, 1, 0.3]
radius = 0.04
pitch = 0.05
turns = 1.3
segments = 24
{extra}
"#
    )
}

fn load(extra: &str) -> (RodSet, State) {
    Scene::parse(&scene(extra), Path::new("v.toml"), &[])
        .unwrap()
        .build()
}

fn centre_and_spin(rods: &RodSet, st: &State) -> (DVec3, DVec3) {
    let c = centre_of_mass(rods, st);
    let l = st
        .pos
        .iter()
        .zip(&st.vel)
        .zip(&rods.mass)
        .fold(DVec3::ZERO, |l, ((x, u), m)| l + (*x - c).cross(*u) * *m);
    (c, l)
}

/// Run the spinning, moving helix for 0.5 s at `substeps`; the centre of
/// mass and angular momentum before and after, and the time.
fn run(substeps: u32) -> [(DVec3, DVec3); 2] {
    let extra = format!("velocity = {V:?}\nangular_velocity = {W:?}");
    let scene = Scene::parse(&scene_with(&extra, substeps), Path::new("v.toml"), &[]).unwrap();
    let (rods, s) = scene.build();
    let before = centre_and_spin(&rods, &s);
    let mut sim = CpuSimulator::new(rods, s, scene.params);
    for _ in 0..50 {
        sim.step().unwrap();
    }
    assert!((sim.state.time - 0.5).abs() < 1e-12);
    [before, centre_and_spin(&sim.rods, &sim.state)]
}

fn centre_of_mass(rods: &RodSet, s: &State) -> DVec3 {
    let m: f64 = rods.mass.iter().sum();
    s.pos
        .iter()
        .zip(&rods.mass)
        .fold(DVec3::ZERO, |c, (x, mi)| c + *x * *mi)
        / m
}

#[test]
fn vertex_velocities_are_v_plus_omega_cross_r() {
    let (rods, s) = load(&format!("velocity = {V:?}\nangular_velocity = {W:?}"));
    let c = centre_of_mass(&rods, &s);
    let w = DVec3::from_array(W) * std::f64::consts::PI / 180.0;
    let mut largest_spin = 0.0f64;
    for (x, u) in s.pos.iter().zip(&s.vel) {
        let want = DVec3::from_array(V) + w.cross(*x - c);
        assert!((*u - want).length() < 1e-12, "{u} != {want}");
        largest_spin = largest_spin.max(w.cross(*x - c).length());
    }
    // The spin part is not negligible: the check above could fail.
    assert!(largest_spin > 0.05, "{largest_spin}");
    // The spin adds no momentum: Σ m u = M v.
    let p = s
        .vel
        .iter()
        .zip(&rods.mass)
        .fold(DVec3::ZERO, |p, (u, m)| p + *u * *m);
    let total: f64 = rods.mass.iter().sum();
    assert!((p / total - DVec3::from_array(V)).length() < 1e-12);
    // Without the keys, the rod starts at rest.
    let (_, rest) = load("");
    assert!(rest.vel.iter().all(|u| *u == DVec3::ZERO));
}

/// In zero gravity the centre of mass moves by v·t whatever the rod does
/// (elastic forces and the projection are internal). The spin's angular
/// momentum about it is kept up to the scheme's O(h) drift (the projection
/// and the time-parallel reference frame are not exactly
/// rotation-invariant): small, and four times smaller at 4× the substeps.
#[test]
fn a_free_rod_moves_its_centre_of_mass_by_v_t() {
    let [(c0, l0), (c, l)] = run(20);
    let want = DVec3::from_array(V) * 0.5;
    assert!(
        (c - c0 - want).length() < 1e-9 * want.length(),
        "moved {}, want {want}",
        c - c0
    );
    let drift = (l - l0).length() / l0.length();
    assert!(drift < 1e-3, "angular momentum {l0} -> {l}");
    let [(_, l0), (_, l)] = run(80);
    let finer = (l - l0).length() / l0.length();
    assert!(
        finer < drift / 3.0,
        "drift {drift} at 20 substeps, {finer} at 80"
    );
}

#[test]
fn clamped_rods_and_runaway_speeds_are_refused() {
    let refuse = |extra: &str, parts: &[&str]| {
        let e = Scene::parse(&scene(extra), Path::new("v.toml"), &[])
            .err()
            .unwrap_or_else(|| panic!("accepted: {extra}"))
            .to_string();
        for p in parts {
            assert!(e.contains(p), "{e} lacks {p}");
        }
    };
    refuse(
        "velocity = [1, 0, 0]\nstart = \"clamped\"",
        &["rods[0].velocity", "clamped end", "both ends free"],
    );
    refuse(
        "angular_velocity = [0, 0, 10]\nend = \"clamped\"",
        &["rods[0].angular_velocity", "clamped end"],
    );
    // 100 m/s is sim.max_speed by default.
    refuse(
        "velocity = [100, 0, 0]",
        &["rods[0].velocity", "sim.max_speed = 100"],
    );
    // A spin fast enough that the far end exceeds max_speed.
    refuse(
        "angular_velocity = [0, 0, 1e6]",
        &["rods[0].angular_velocity", "initial speed"],
    );
    refuse(
        "velocity = [1e300, 0, 0]",
        &["rods[0].velocity[0]", "within"],
    );
    // A zero velocity on a clamped rod is no motion and is accepted.
    Scene::parse(
        &scene("velocity = [0, 0, 0]\nstart = \"clamped\""),
        Path::new("v.toml"),
        &[],
    )
    .unwrap();
}
