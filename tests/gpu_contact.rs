//! GPU vs CPU for contact: the `contact` kernel (both phases) and the
//! filtered projections against their CPU twins in src/cpu/contact.rs and
//! src/cpu/project.rs from the same f32-rounded state, whole steps with
//! colliders, and determinism (the same run twice is bit-identical).
//! Tolerances: positions are ~0.1 m from their rod's origin, so f32 resolves
//! them to ~1e-8 m; a kernel does O(10) dependent operations per vertex and
//! collider: 1e-6 m.

mod common;

use std::sync::Arc;

use common::*;
use glam::DVec3;
use strands::build::{EndSpec, RodSpec, build};
use strands::cpu::contact::{self, ColliderPoses, Contact};
use strands::cpu::{self, CpuSimulator, project};
use strands::gpu::{Form, GpuContext, GpuSimulator, Kernel};
use strands::model::anchor::{Anchor, Keyframe};
use strands::model::colliders::mesh::{Mesh, bake_sdf};
use strands::model::colliders::{Collider, Shape};
use strands::model::params::{Projection, SimParams};
use strands::model::rods::RodSet;

fn collider(name: &str, shape: Shape, anchor: usize) -> Collider {
    Collider {
        name: name.into(),
        shape,
        anchor,
        friction: 0.3,
        static_friction: 0.5,
        margin: 1e-4,
    }
}

/// Strands hanging through a sphere, a capsule, a plane and an SDF ball, some
/// on a moving, turning anchor. After t = 0.2 s its axis of rotation turns
/// too, so that the rotations at the start and end of a substep do not
/// commute (the collider's motion, `GpuColliderNow.motion`, composed in the
/// wrong order would show).
fn scene() -> (Vec<RodSpec>, Vec<Anchor>, Vec<Collider>) {
    let mut rng = rng(11);
    let body = Anchor {
        name: "body".into(),
        pivot: DVec3::new(0.0, 0.1, 0.0),
        keyframes: vec![
            Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
            Keyframe::new(0.2, DVec3::new(0.01, 0.0, 0.0), DVec3::new(0.0, 0.12, 0.0)),
            Keyframe::new(1.0, DVec3::new(0.05, 0.0, 0.0), DVec3::new(0.5, 0.6, 0.0)),
        ],
    };
    let mut specs = Vec::new();
    for k in 0..24 {
        let start = if k % 3 == 0 {
            EndSpec::Clamped(1)
        } else {
            EndSpec::Free
        };
        let mut spec = random_rod(&mut rng, 6 + k % 9, start, EndSpec::Free);
        // Through the middle of the colliders.
        let shift = DVec3::new(
            -0.15 + 0.3 * (k as f64 / 24.0),
            0.05 + 0.02 * (k % 4) as f64,
            -0.02 + 0.01 * (k % 5) as f64,
        ) - spec.points[0];
        for p in spec.points.iter_mut().chain(spec.rest.iter_mut()) {
            *p += shift;
        }
        spec.material.radius = 2e-3;
        specs.push(spec);
    }
    // Low enough that strands reach only its upper part: a deep point's
    // normal (near the ball's centre) is ill-conditioned in any SDF.
    let ball = Mesh::icosphere(DVec3::new(0.1, -0.02, 0.0), 0.04, 2);
    let grid = bake_sdf(&ball, 0.005, 0.015, 1 << 20).unwrap();
    let colliders = vec![
        collider(
            "sphere",
            Shape::Sphere {
                center: DVec3::new(-0.1, 0.05, 0.0) - body.pivot,
                radius: 0.05,
            },
            1,
        ),
        collider(
            "capsule",
            Shape::Capsule {
                a: DVec3::new(-0.2, 0.08, 0.0),
                b: DVec3::new(0.2, 0.09, 0.01),
                radius: 0.01,
            },
            0,
        ),
        collider(
            "plane",
            Shape::Plane {
                point: DVec3::new(0.0, 0.04, 0.0),
                normal: DVec3::new(0.1, 1.0, 0.0).normalize(),
            },
            0,
        ),
        collider("mesh", Shape::Sdf(Arc::new(grid)), 0),
    ];
    (specs, vec![Anchor::world(), body], colliders)
}

fn rods_and_state() -> (RodSet, strands::model::rods::State) {
    let (specs, anchors, colliders) = scene();
    let (mut rods, state) = build(&specs, anchors);
    rods.colliders = colliders;
    (rods, state)
}

fn params() -> SimParams {
    SimParams {
        substeps: 10,
        twist_tolerance: 1e-12,
        ..SimParams::default()
    }
}

fn max_diff(a: &[DVec3], b: &[DVec3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x - *y).length())
        .fold(0.0, f64::max)
}

fn gpu_ctx() -> GpuContext {
    GpuContext::headless().expect("no GPU adapter: install mesa-vulkan-drivers (lavapipe)")
}

/// Kernels `contact`, `contact_edges_even` and `contact_edges_odd`, phase 0
/// then phase 1, each against its CPU twin in `cpu::contact`.
#[test]
fn contact_kernel_matches_cpu() {
    let (rods, mut state) = rods_and_state();
    let mut rng = rng(3);
    for v in state.vel.iter_mut() {
        *v = unit(&mut rng) * 0.3;
    }
    let p = params();
    let ctx = gpu_ctx();
    let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
    gpu.write_state(&state);
    let s = gpu.read_state();
    let (t, h) = (0.3, p.h());
    let poses: Vec<ColliderPoses> = cpu::substep::collider_poses(&rods, t, h);
    let mut pos = s.pos.clone();
    let mut contacts = vec![Contact::default(); pos.len()];
    let mut pushed = 0;
    let mut edge_pushed = 0;
    for phase in 0..2 {
        // Stage by stage: the vertices, then each parity of edges.
        for stage in [None, Some(0), Some(1)] {
            let kernel = match stage {
                None => Kernel::Contact,
                Some(0) => Kernel::ContactEdgesEven,
                Some(_) => Kernel::ContactEdgesOdd,
            };
            gpu.run_kernel_in_phase(kernel, phase, t, h);
            for r in 0..rods.rod_count() {
                let v = rods.vertices(r);
                let before = pos[v.clone()].to_vec();
                let (radius, inv_mass) = (rods.material[r].radius, &rods.inv_mass[v.clone()]);
                let (x, x_unc, vel) = (&mut pos[v.clone()], &s.pos[v.clone()], &s.vel[v.clone()]);
                let c = &mut contacts[v.clone()];
                match stage {
                    None => {
                        let rep = contact::contact(
                            &rods.colliders,
                            &poses,
                            radius,
                            inv_mass,
                            phase,
                            h,
                            x,
                            x_unc,
                            vel,
                            c,
                        );
                        assert!(rep.tunnel.is_none());
                    }
                    Some(parity) => contact::contact_edges(
                        &rods.colliders,
                        &poses,
                        radius,
                        inv_mass,
                        phase,
                        h,
                        parity,
                        x,
                        x_unc,
                        vel,
                        c,
                    ),
                }
                let moved = max_diff(&before, &pos[v]).gt(&1e-5) as usize;
                match stage {
                    None => pushed += moved,
                    Some(_) => edge_pushed += moved,
                }
            }
            let d = max_diff(&gpu.read_state().pos, &pos);
            assert!(d < 1e-6, "phase {phase}, stage {kernel:?}: {d:e} m");
        }
        let g = gpu.read_state();
        let d = max_diff(&g.pos, &pos);
        eprintln!("contact phase {phase}: positions differ by {d:.2e} m");
        assert!(d < 1e-6, "phase {phase}: {d:e} m");
        if phase == 0 {
            let gc = gpu.read_contacts();
            for (i, (a, b)) in gc.iter().zip(&contacts).enumerate() {
                assert!(
                    (a.depth - b.depth).abs() < 1e-6,
                    "vertex {i}: {a:?} vs {b:?}"
                );
                assert_eq!(a.stuck, b.stuck, "vertex {i}: {a:?} vs {b:?}");
                if b.depth > 1e-5 {
                    assert!((a.normal - b.normal).length() < 1e-4, "vertex {i}");
                    // A difference of two ~1e-8 m f32 positions over h = 1e-3 s.
                    let dv = (a.surface_velocity - b.surface_velocity).length();
                    assert!(dv < 1e-6 / h, "vertex {i}: surface velocity {dv:e} m/s");
                }
            }
        }
    }
    let touching = contacts.iter().filter(|c| c.depth > 0.0).count();
    let moving = contacts
        .iter()
        .filter(|c| c.depth > 0.0 && c.surface_velocity.length() > 0.01)
        .count();
    eprintln!(
        "{pushed} rods pushed at vertices, {edge_pushed} at edges, {touching} vertices in contact, {moving} on a moving surface"
    );
    assert!(moving > 0, "no contact with the moving body");
    assert!(
        edge_pushed > 0,
        "no edge met a sphere or capsule between its ends"
    );
    assert!(
        pushed >= 8 && touching >= 20,
        "the scene barely touches the colliders"
    );
}

/// Kernel `contact_rod` (the three contact stages walked per rod), phase 0
/// then 1, against the CPU twins in the same order: the same positions and
/// contacts.
#[test]
fn contact_rod_kernel_matches_cpu() {
    contact_form_matches_cpu(Kernel::ContactRod);
}

/// The scene's strands, then a long one (300 vertices, edges of 1.7 mm)
/// lying through the capsule and the sphere, then the strands again.
fn scene_with_long_rod() -> (RodSet, strands::model::rods::State) {
    let (mut specs, anchors, colliders) = scene();
    let n = specs.len();
    let points: Vec<DVec3> = (0..300)
        .map(|i| {
            DVec3::new(
                -0.25 + 0.5 * i as f64 / 299.0,
                0.085,
                0.004 * (i as f64 * 0.3).sin(),
            )
        })
        .collect();
    let mut long = specs[1].clone();
    long.name = "long".into();
    long.rest = points.clone();
    long.points = points;
    long.start = EndSpec::Free;
    specs.push(long);
    specs.extend_from_within(..n);
    let (mut rods, state) = build(&specs, anchors);
    rods.colliders = colliders;
    (rods, state)
}

fn contact_form_matches_cpu(kernel: Kernel) {
    let (rods, mut state) = scene_with_long_rod();
    let mut rng = rng(3);
    for v in state.vel.iter_mut() {
        *v = unit(&mut rng) * 0.3;
    }
    let p = params();
    let ctx = gpu_ctx();
    let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
    gpu.write_state(&state);
    let s = gpu.read_state();
    let (t, h) = (0.3, p.h());
    let poses: Vec<ColliderPoses> = cpu::substep::collider_poses(&rods, t, h);
    let mut pos = s.pos.clone();
    let mut contacts = vec![Contact::default(); pos.len()];
    for phase in 0..2 {
        gpu.run_kernel_in_phase(kernel, phase, t, h);
        for r in 0..rods.rod_count() {
            let v = rods.vertices(r);
            let (radius, inv_mass) = (rods.material[r].radius, &rods.inv_mass[v.clone()]);
            let (x, x_unc, vel) = (&mut pos[v.clone()], &s.pos[v.clone()], &s.vel[v.clone()]);
            let c = &mut contacts[v.clone()];
            contact::contact(
                &rods.colliders,
                &poses,
                radius,
                inv_mass,
                phase,
                h,
                x,
                x_unc,
                vel,
                c,
            );
            for parity in [0, 1] {
                contact::contact_edges(
                    &rods.colliders,
                    &poses,
                    radius,
                    inv_mass,
                    phase,
                    h,
                    parity,
                    x,
                    x_unc,
                    vel,
                    c,
                );
            }
        }
        let d = max_diff(&gpu.read_state().pos, &pos);
        assert!(d < 1e-6, "{kernel:?}, phase {phase}: {d:e} m");
        for (i, (a, b)) in gpu.read_contacts().iter().zip(&contacts).enumerate() {
            assert!(
                (a.depth - b.depth).abs() < 1e-6,
                "vertex {i}: {a:?} vs {b:?}"
            );
            assert_eq!(a.stuck, b.stuck, "vertex {i}: {a:?} vs {b:?}");
        }
    }
    assert!(contacts.iter().filter(|c| c.depth > 0.0).count() >= 20);
}

/// `contact_rod` walks each rod through the vertex stage and both edge
/// parities interleaved, keeping a vertex in registers from its stage to
/// its last edge (shaders/contact.wgsl `contact_walk`). The claim is that
/// this is the three stages in turn, computation for computation: the walk
/// must give the staged kernels' positions and contacts bit for bit, in
/// both phases, on rods of odd and even vertex counts. The long rod lies
/// along the capsule, so after the vertex stage nearly every one of its
/// edges sags into it and both edges of a vertex push it: an edge out of
/// order changes bits there. Every vertex starts with a stale contact, as
/// left by the substep before, deeper than any this one finds: phase 0
/// must replace each, also with none (the walk stores only what changed, so a
/// vertex out of contact now is where a forgotten store would show).
#[test]
fn contact_walk_is_the_three_stages_bit_for_bit() {
    let (rods, mut state) = scene_with_long_rod();
    let mut rng = rng(3);
    for v in state.vel.iter_mut() {
        *v = unit(&mut rng) * 0.3;
    }
    let stale: Vec<Contact> = (0..state.pos.len())
        .map(|i| Contact {
            normal: unit(&mut rng),
            depth: 1.0,
            stuck: i % 2 == 0,
            surface_velocity: unit(&mut rng),
        })
        .collect();
    let counts: Vec<usize> = (0..rods.rod_count())
        .map(|r| rods.vertices(r).len())
        .collect();
    assert!(counts.iter().any(|n| n % 2 == 0) && counts.iter().any(|n| n % 2 == 1));
    let p = params();
    let ctx = gpu_ctx();
    let mut walked = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
    let mut staged = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
    walked.write_contacts(&stale);
    staged.write_contacts(&stale);
    let (t, h) = (0.3, p.h());
    for phase in 0..2 {
        walked.run_kernel_in_phase(Kernel::ContactRod, phase, t, h);
        for kernel in [
            Kernel::Contact,
            Kernel::ContactEdgesEven,
            Kernel::ContactEdgesOdd,
        ] {
            staged.run_kernel_in_phase(kernel, phase, t, h);
        }
        let (a, b) = (walked.read_state(), staged.read_state());
        for (i, (x, y)) in a.pos.iter().zip(&b.pos).enumerate() {
            assert_eq!(x, y, "phase {phase}, vertex {i}");
        }
        let (ca, cb) = (walked.read_contacts(), staged.read_contacts());
        assert_eq!(ca, cb, "phase {phase}: contacts");
        let found = ca.iter().filter(|c| c.depth > 0.0 && c.depth < 1.0).count();
        let none = ca.iter().filter(|c| c.depth == 0.0).count();
        assert!(found >= 20, "phase {phase}: {found} contacts found");
        assert!(none >= 5, "phase {phase}: {none} vertices out of contact");
    }
}

/// The filtered projections (fast, SHAKE and Jacobi, phase 1) with
/// contacts written on both sides: the same positions, and every vertex in
/// contact moves in its tangent plane only.
/// The contacts include pairs of stuck neighbours, which the Newton
/// projections move by their shared edge (weights by edge,
/// src/cpu/project.rs `ProjectionSystem::we`): a GPU that held them in
/// place would differ from the CPU by the mm they move. SHAKE projects
/// along the edges of the state before the vertices were moved (saved by
/// `save_start`).
#[test]
fn filtered_projection_kernels_match_cpu() {
    for projection in [
        Projection::Fast {
            tolerance: 1e-10,
            max_iterations: 50,
        },
        Projection::Shake {
            tolerance: 1e-10,
            max_iterations: 50,
        },
        Projection::Jacobi {
            iterations: 1,
            relaxation: 0.5,
        },
    ] {
        let (rods, mut state) = rods_and_state();
        let before = state.clone();
        let mut rng = rng(5);
        for (x, w) in state.pos.iter_mut().zip(&rods.inv_mass) {
            if *w > 0.0 {
                *x += unit(&mut rng) * 0.002;
            }
        }
        let contacts: Vec<Contact> = (0..state.pos.len())
            .map(|i| Contact {
                normal: unit(&mut rng),
                // Stuck pairs (i ≡ 0, 1 mod 6) beside sliding (i ≡ 3)
                // and free vertices.
                depth: if i % 3 == 0 || i % 6 == 1 { 1e-3 } else { 0.0 },
                stuck: i % 6 == 0 || i % 6 == 1,
                surface_velocity: DVec3::ZERO,
            })
            .collect();
        let p = SimParams {
            projection,
            ..params()
        };
        let ctx = gpu_ctx();
        let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
        gpu.write_state(&before);
        gpu.run_kernel(Kernel::SaveStart, 0.0, p.h());
        let start = gpu.read_vertices(strands::gpu::VertexBuffer::Start);
        gpu.write_state(&state);
        let s = gpu.read_state();
        gpu.write_contacts(&contacts);
        let kernel = match projection {
            Projection::Fast { .. } => Kernel::ProjectFastRod,
            Projection::Shake { .. } => Kernel::ProjectShakeRod,
            _ => Kernel::ProjectJacobi,
        };
        // ProjectJacobi runs U→P; U holds the written state too.
        gpu.run_kernel_in_phase(kernel, 1, 0.0, p.h());
        let g = gpu.read_state();
        let mut pos = s.pos.clone();
        for r in 0..rods.rod_count() {
            let v = rods.vertices(r);
            let w = &rods.inv_mass[v.clone()];
            let rest = &rods.rest_len[rods.edges(r)];
            let c = &contacts[v.clone()];
            match projection {
                Projection::Fast { .. } => {
                    project::project_fast(&mut pos[v], w, rest, 1e-10, 50, c, true);
                }
                Projection::Shake { .. } => {
                    let x0 = &start[v.clone()];
                    project::project_shake(&mut pos[v], x0, w, rest, 1e-10, 50, c, true);
                }
                _ => {
                    let src = pos[v.clone()].to_vec();
                    project::project_jacobi(&src, &mut pos[v], w, rest, 0.5, c, true);
                }
            }
        }
        let d = max_diff(&g.pos, &pos);
        eprintln!("{kernel:?} filtered: positions differ by {d:.2e} m");
        // Fast, SHAKE: the GPU stops at its f32 strain floor (1e-6 × 2 cm edges).
        assert!(d < 1e-6 * 10.0, "{kernel:?}: {d:e} m");
        // Every vertex in contact moves in its tangent plane only; with
        // per-edge weights the stuck pairs move (their shared edge), the
        // Jacobi projection (per-vertex weights) holds stuck vertices.
        let mut pair_moved: f64 = 0.0;
        for (i, c) in contacts.iter().enumerate() {
            if c.depth > 0.0 {
                let (dg, dc) = (g.pos[i] - s.pos[i], pos[i] - s.pos[i]);
                assert!(
                    c.normal.dot(dg).abs() < 1e-6,
                    "{kernel:?}: vertex {i} off its tangent plane on the GPU"
                );
                assert!(
                    c.normal.dot(dc).abs() < 1e-12,
                    "{kernel:?}: vertex {i} off its tangent plane on the CPU"
                );
                if c.stuck {
                    pair_moved = pair_moved.max(dc.length());
                }
            }
        }
        eprintln!("{kernel:?}: stuck vertices moved up to {pair_moved:.2e} m");
    }
}

/// Kernel `project_velocity` with contacts (inelastic: outward velocity
/// relative to the surface removed) against its CPU twin, from the same
/// f32 state: velocities agree to the f32 rounding of x − x₀ over h.
#[test]
fn velocity_update_with_contacts_matches_cpu() {
    let (rods, mut state) = rods_and_state();
    let mut rng = rng(7);
    for (x, v) in state.pos.iter_mut().zip(state.vel.iter_mut()) {
        *v = unit(&mut rng) * 0.3;
        *x += unit(&mut rng) * 0.002;
    }
    let contacts: Vec<Contact> = (0..state.pos.len())
        .map(|i| Contact {
            normal: unit(&mut rng),
            depth: if i % 2 == 0 { 1e-3 } else { 0.0 },
            stuck: i % 4 == 0,
            surface_velocity: unit(&mut rng) * 0.2,
        })
        .collect();
    let p = SimParams {
        projection: Projection::Jacobi {
            iterations: 1,
            relaxation: 0.5,
        },
        ..params()
    };
    let h = p.h();
    let ctx = gpu_ctx();
    let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
    gpu.write_state(&state);
    gpu.write_contacts(&contacts);
    // One Jacobi iteration (pos_unc → pos) so that x ≠ x₀.
    gpu.run_kernel(Kernel::ProjectJacobi, 0.0, h);
    let before = gpu.read_state();
    let unc = gpu.read_vertices(strands::gpu::VertexBuffer::Unconstrained);
    gpu.run_kernel(Kernel::ProjectVelocity, 0.0, h);
    let g = gpu.read_state();
    let mut vel = before.vel.clone();
    let n = vel.len();
    // The chatter count is not under test here (tests/stability.rs).
    let chatter = project::Chatter {
        force: &vec![DVec3::ZERO; n],
        inv_mass: &rods.inv_mass,
        rest_len: &vec![1.0; n],
        count: &mut vec![0; n],
    };
    project::project_velocity(&mut vel, &before.pos, &unc, &contacts, h, chatter);
    let d = max_diff(&g.vel, &vel);
    let clamped = (0..vel.len())
        .filter(|&i| {
            let c = contacts[i];
            c.depth > 0.0
                && (before.vel[i] + (before.pos[i] - unc[i]) / h - c.surface_velocity).dot(c.normal)
                    > 0.0
        })
        .count();
    eprintln!(
        "project_velocity with contacts: velocities differ by {d:.2e} m/s, {clamped} clamped"
    );
    assert!(clamped > 10, "too few vertices moving out of their contact");
    assert!(d < 1e-6 / h, "{d:e} m/s");
    for (i, c) in contacts.iter().enumerate() {
        if c.depth > 0.0 {
            let out = (g.vel[i] - c.surface_velocity).dot(c.normal);
            assert!(
                out < 1e-6 / h,
                "vertex {i} leaves its contact at {out:e} m/s"
            );
        }
    }
}

/// Whole steps with colliders (`scenes/hair.toml`, 12 strands on the moving,
/// turning head with neck and shoulders; hair–hair interaction off, its
/// whole steps are tests/gpu_interaction.rs'): GPU and CPU trajectories
/// agree in each walked form (`GpuSimulator::set_form`), each keeps the
/// strands out, and two GPU runs in the adapter's default form
/// (`GpuSimulator::default_form`) are bit-identical.
#[test]
fn whole_steps_with_contact_match_and_are_deterministic() {
    let scene = strands::scene::Scene::load(
        std::path::Path::new("scenes/hair.toml"),
        &["rods.0.count=12".into(), "interaction.groups=[]".into()],
    )
    .unwrap();
    let (rods, state) = scene.build();
    let p = scene.params;
    let ctx = gpu_ctx();
    let mut cpu = CpuSimulator::new(rods.clone(), state.clone(), p);
    let mut runs = Vec::new();
    let steps = 60;
    // Each walked form, then the default one again.
    let default = GpuSimulator::default_form(&ctx);
    for form in Form::ALL.into_iter().chain([default]) {
        let mut g = GpuSimulator::new(&ctx, rods.clone(), state.clone(), p).unwrap();
        g.set_form(form)
            .expect("the test adapter runs the walked forms");
        let mut last = None;
        for _ in 0..steps {
            let (s, d) = g.step_checked().unwrap();
            assert!(
                d.max_penetration <= 0.0,
                "GPU penetration {:e}",
                d.max_penetration
            );
            last = Some(s);
        }
        runs.push(last.unwrap());
    }
    for _ in 0..steps {
        let d = cpu.step().unwrap();
        assert!(
            d.max_penetration <= 0.0,
            "CPU penetration {:e}",
            d.max_penetration
        );
    }
    let again = runs.pop().unwrap();
    let first = Form::ALL.iter().position(|&f| f == default).unwrap();
    assert_eq!(runs[first].pos, again.pos, "two GPU runs differ");
    for (run, form) in runs.iter().zip(Form::ALL) {
        let d = max_diff(&run.pos, &cpu.state.pos);
        eprintln!("{steps} frames of hair with contact, {form}: GPU vs CPU {d:.2e} m");
        // The same bound as the hair trajectories without contact in
        // tests/gpu_whole_steps.rs (1.5e-4 m over 150 moving-head steps).
        assert!(d < 1.5e-4, "{form}: GPU vs CPU {d:e} m");
    }
}
