//! Kernel-by-kernel parity: from the same state (rounded to f32 once, so
//! both sides start from identical numbers), each GPU kernel's output matches
//! the f64 CPU reference kernel of the same name.
//!
//! Tolerances come from f32 precision, ε = 2⁻²³ ≈ 1.2e-7 (see src/gpu/mod.rs):
//! a quantity computed by a chain of k roundings of relative size ε is good
//! to about k·ε of its magnitude. Each test states its chain.

mod common;

use common::*;
use glam::DVec3;
use rand::RngExt;
use strands::build::{EndSpec, RodSpec, build};
use strands::cpu::contact::Contact;
use strands::cpu::{self, CpuSimulator, frames, project, twist};
use strands::gpu::{Form, GpuSimulator, JacobiPass, Kernel, VertexBuffer};
use strands::model::anchor::{Anchor, Keyframe};
use strands::model::params::{Projection, SimParams, Wind};
use strands::model::rods::State;

/// Random curved anisotropic rods with every end condition, roots on a
/// moving, turning anchor, drag and gusty wind.
fn scene() -> (Vec<RodSpec>, Vec<Anchor>, SimParams) {
    let mut rng = rng(7);
    let head = Anchor {
        name: "head".into(),
        pivot: DVec3::ZERO,
        keyframes: vec![
            Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
            Keyframe::new(1.0, DVec3::new(0.1, 0.0, 0.0), DVec3::new(0.0, 0.8, 0.0)),
        ],
    };
    let ends = [
        (EndSpec::Clamped(1), EndSpec::Free),
        (EndSpec::Free, EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Clamped(1)),
        (EndSpec::Free, EndSpec::Clamped(1)),
    ];
    let mut specs = Vec::new();
    for (k, n) in [5, 12, 9, 17, 3, 8].iter().enumerate() {
        let (s, e) = ends[k % ends.len()];
        let mut spec = random_rod(&mut rng, *n, s, e);
        spec.material.drag = 1e-3;
        specs.push(spec);
    }
    let params = SimParams {
        substeps: 10,
        wind: Wind {
            velocity: DVec3::new(0.5, 0.0, 0.2),
            gust_amplitude: 0.3,
            ..Wind::default()
        },
        twist_tolerance: 1e-12,
        twist_max_iterations: 50,
        ..SimParams::default()
    };
    (specs, vec![Anchor::world(), head], params)
}

/// The same rods on both sides with the state rounded to f32 on both.
fn pair() -> (CpuSimulator, GpuSimulator) {
    let (specs, anchors, params) = scene();
    let (rods, state) = build(&specs, anchors);
    let mut cpu = CpuSimulator::new(rods.clone(), state, params);
    // Move the state off equilibrium so every force term is exercised.
    cpu.step().expect("stable");
    let ctx = gpu();
    let mut gpu = GpuSimulator::new(&ctx, rods, cpu.state.clone(), params).expect("gpu sim");
    gpu.write_state(&cpu.state);
    cpu.state = gpu.read_state();
    (cpu, gpu)
}

type Ranges = (usize, std::ops::Range<usize>, std::ops::Range<usize>);

/// Every rod with its vertex and edge ranges.
fn rods_of(cpu: &CpuSimulator) -> Vec<Ranges> {
    (0..cpu.rods.rod_count())
        .map(|r| (r, cpu.rods.vertices(r), cpu.rods.edges(r)))
        .collect()
}

/// Kernel `frames_rod`: Bishop frames by parallel transport, walked, clamped
/// twist from the anchors. Transport along n ≤ 17 edges compounds ~10
/// roundings per edge: |Δu| ≤ 17·10·ε ≈ 2e-5; a clamped θ inherits that
/// (atan2 of unit vectors).
#[test]
fn frames_kernel_matches_cpu() {
    let kernel = Kernel::FramesRod;
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    // Displace the vertices so the frames have something to follow.
    let mut rng = rng(3);
    for p in cpu.state.pos.iter_mut() {
        *p += unit(&mut rng) * 0.01;
    }
    gpu.write_state(&cpu.state);
    cpu.state = gpu.read_state();
    gpu.run_kernel(kernel, t, h);
    let g = gpu.read_state();
    for r in 0..cpu.rods.rod_count() {
        cpu_frames(&cpu.rods, &mut cpu.state, r, t + h);
    }
    let tol = 2e-5;
    let dt = max_diff(&g.tangent, &cpu.state.tangent);
    eprintln!(
        "{kernel:?}: tangent {dt:.2e}, ref_u {:.2e}",
        max_diff(&g.ref_u, &cpu.state.ref_u)
    );
    assert!(dt < tol, "tangents differ by {dt:.2e}");
    let du = max_diff(&g.ref_u, &cpu.state.ref_u);
    assert!(du < tol, "ref_u differs by {du:.2e}");
    let dtheta = max_abs_diff(&g.theta, &cpu.state.theta);
    assert!(dtheta < tol, "clamped θ differs by {dtheta:.2e}");
}

/// The CPU's quasistatic twist solve of one rod (`Ranges`) in place, its
/// curvature binormals from the current positions.
fn cpu_twist(
    cpu: &mut CpuSimulator,
    (r, v, e): Ranges,
    tolerance: f64,
    iterations: u32,
) -> twist::TwistSolve {
    let s = &mut cpu.state;
    let mut kb = vec![DVec3::ZERO; v.len()];
    twist::curvature_binormals(&s.pos[v], &mut kb);
    twist::twist(
        cpu::rod_rest(&cpu.rods, r),
        &kb,
        &s.tangent[e.clone()],
        &s.ref_u[e.clone()],
        &mut s.theta[e],
        twist::free_twist_range(&cpu.rods, r),
        tolerance,
        iterations,
    )
}

/// Kernel `twist`: the quasistatic angles, ∂E/∂θ = 0 (eq. 4). The GPU solve
/// stops at a 1e-6 rad step; its f32 gradient has an error of ~ε·Σ|terms|,
/// which moves the root by that over the Hessian: with terms of the size of
/// the Hessian summed over a few neighbours, ~10·ε ≈ 1e-6, plus the 1e-6
/// stopping step. Allowed: 1e-5 rad. The walked solve (`twist_rod`).
#[test]
fn twist_kernel_matches_cpu() {
    let kernel = Kernel::TwistRod;
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    // Start from angles off equilibrium (clamped ends keep theirs).
    for (r, _, e) in rods_of(&cpu) {
        let free = twist::free_twist_range(&cpu.rods, r);
        for j in free {
            cpu.state.theta[e.start + j] += 0.3 * (j as f64).sin();
        }
    }
    gpu.write_state(&cpu.state);
    cpu.state = gpu.read_state();
    gpu.run_kernel(kernel, t, h);
    let g = gpu.read_state();
    let mut worst: f64 = 0.0;
    for (r, v, e) in rods_of(&cpu) {
        cpu_twist(&mut cpu, (r, v, e.clone()), 1e-12, 50);
        for j in e {
            worst = worst.max((g.theta[j] - cpu.state.theta[j]).abs());
        }
    }
    eprintln!("{kernel:?}: θ differs by {worst:.2e} rad");
    assert!(worst < 1e-5, "{kernel:?}: θ differs by {worst:.2e} rad");
    let [iterations, _] = gpu.read_stats();
    assert!(iterations > 0, "the GPU twist solve did not iterate");
}

/// The walked twist when its iterations run out right after a full step
/// that needs no line search (one iteration, the angles 1e-3 rad off
/// equilibrium: a step the third-derivative bound certifies): the step is
/// taken all the same, by the back substitution that finds it
/// (`newton_back`), and the CPU takes it likewise. Without it the angles
/// would stay where they started, 1e-3 rad off. Allowed: 1e-5 rad, as
/// `twist_kernel_matches_cpu`.
#[test]
fn walked_twist_takes_a_step_left_when_iterations_run_out() {
    let one = walked_twist_one_iteration(|j| 1e-3 * (j as f64).sin());
    eprintln!(
        "one iteration: θ moved {:.2e} rad, GPU − CPU {:.2e} rad",
        one.moved, one.worst
    );
    assert!(one.cpu_iterations <= 1);
    assert!(
        one.moved > 1e-4,
        "the step was not taken: θ moved {:.2e} rad",
        one.moved
    );
    assert!(one.worst < 1e-5, "θ differs by {:.2e} rad", one.worst);
    assert_eq!(one.gpu_iterations, 1);
}

/// The walked twist where its first step needs the line search (the
/// angles moved at random by up to 2.5 rad: a step the third-derivative
/// bound cannot certify; up to 1.5 rad every step was certified): the back
/// substitution has taken the full step already (`newton_back`), so the
/// search must start from the angles before it, which it puts back; the
/// CPU searches from them too. Starting from the full step instead leaves
/// the GPU 0.28 rad off the CPU (lavapipe). One iteration, so the
/// search's own step is what is compared. Allowed: 1e-5 rad, as
/// `twist_kernel_matches_cpu` (6.5e-6 on lavapipe, before and after the
/// back substitution took the step).
#[test]
fn walked_twist_searches_from_the_angles_before_the_step() {
    let mut rng = rng(11);
    let one = walked_twist_one_iteration(|_| rng.random_range(-2.5..2.5));
    eprintln!(
        "one searched iteration: θ moved {:.2e} rad, GPU − CPU {:.2e} rad",
        one.moved, one.worst
    );
    assert!(
        one.moved > 1e-2,
        "the step was not taken: θ moved {:.2e} rad",
        one.moved
    );
    assert!(one.worst < 1e-5, "θ differs by {:.2e} rad", one.worst);
}

/// What one iteration of the walked twist (`twist_rod`) and of the CPU's
/// did from the same angles.
struct OneIteration {
    /// The largest |θ| the GPU moved an angle.
    moved: f64,
    /// The largest |θ_GPU − θ_CPU| after it.
    worst: f64,
    /// The CPU's iterations, the most of any rod, and the GPU's.
    cpu_iterations: u32,
    gpu_iterations: u32,
}

/// One iteration of the twist solve on both sides, every rod's free angle j
/// first moved by `offset(j)`.
fn walked_twist_one_iteration(mut offset: impl FnMut(usize) -> f64) -> OneIteration {
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    let mut params = *gpu.params();
    params.twist_max_iterations = 1;
    gpu.set_params(params).unwrap();
    for (r, _, e) in rods_of(&cpu) {
        for j in twist::free_twist_range(&cpu.rods, r) {
            cpu.state.theta[e.start + j] += offset(j);
        }
    }
    gpu.write_state(&cpu.state);
    cpu.state = gpu.read_state();
    let start = cpu.state.theta.clone();
    gpu.run_kernel(Kernel::TwistRod, t, h);
    let g = gpu.read_state();
    let mut one = OneIteration {
        moved: 0.0,
        worst: 0.0,
        cpu_iterations: 0,
        gpu_iterations: gpu.read_stats()[0],
    };
    for (r, v, e) in rods_of(&cpu) {
        let solve = cpu_twist(&mut cpu, (r, v, e.clone()), params.twist_tolerance, 1);
        one.cpu_iterations = one.cpu_iterations.max(solve.iterations);
        for j in e {
            one.worst = one.worst.max((g.theta[j] - cpu.state.theta[j]).abs());
            one.moved = one.moved.max((g.theta[j] - start[j]).abs());
        }
    }
    one
}

/// Kernel `forces`: elastic (bending, holonomy, clamped-end twist) plus
/// gravity, drag and wind. Each elastic force is a sum of ~30 terms that
/// nearly cancel; f32 leaves an error of ~30·3·ε ≈ 1e-5 of the largest term,
/// which is at most the largest force per rod. Allowed: 1e-5 × max |f| of the rod.
/// The walked kernel (`forces_rod`, which takes the holonomy coefficients
/// from its own bending stencils).
#[test]
fn forces_kernel_matches_cpu() {
    let kernel = Kernel::ForcesRod;
    let (cpu, mut gpu) = pair();
    let t = cpu.state.time;
    gpu.run_kernel(kernel, t, cpu.params.h());
    let g = gpu.read_forces();
    for (r, v, e) in rods_of(&cpu) {
        let s = &cpu.state;
        let mut f = vec![DVec3::ZERO; v.len()];
        cpu::forces::rod_forces(
            &cpu.rods,
            &cpu.params,
            r,
            t,
            &s.pos[v.clone()],
            &s.vel[v.clone()],
            &s.tangent[e.clone()],
            &s.ref_u[e.clone()],
            &s.theta[e.clone()],
            &mut f,
        );
        let scale = f.iter().map(|x| x.length()).fold(0.0, f64::max);
        let d = max_diff(&g[v.clone()], &f);
        eprintln!("{kernel:?} rod {r}: differ by {:.2e} of max |f|", d / scale);
        assert!(
            d < 1e-5 * scale,
            "{kernel:?} rod {r}: force differs by {d:.2e} of {scale:.2e}"
        );
    }
}

/// Kernel `integrate` from identical forces: two roundings per update, so
/// positions agree to a few ε of |x| (< 1 m here): 1e-6 m; velocities to a
/// few ε of |x|/h for anchored vertices: 1e-6/h.
#[test]
fn integrate_kernel_matches_cpu() {
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    gpu.run_kernel(Kernel::ForcesRod, t, h);
    let force = gpu.read_forces();
    gpu.run_kernel(Kernel::Integrate, t, h);
    let g = gpu.read_state();
    for (r, v, _) in rods_of(&cpu) {
        let s = &mut cpu.state;
        cpu::integrate::integrate(
            &cpu.rods,
            r,
            t + h,
            h,
            &force[v.clone()],
            &mut s.pos[v.clone()],
            &mut s.vel[v],
        );
    }
    let (dx, dv) = (
        max_diff(&g.pos, &cpu.state.pos),
        max_diff(&g.vel, &cpu.state.vel),
    );
    eprintln!("integrate: positions {dx:.2e} m, velocities {dv:.2e} m/s");
    assert!(dx < 1e-6 && dv < 1e-6 / h, "{dx:.2e} m, {dv:.2e} m/s");
    assert!(
        max_diff(
            &gpu.read_vertices(VertexBuffer::Unconstrained),
            &cpu.state.pos
        ) < 1e-6
    );
}

/// Each Jacobi iteration (`project_jacobi`, src → dst) on stretched rods:
/// one correction is a few roundings of |x|, so every iterate agrees to 1e-6 m.
#[test]
fn each_jacobi_iteration_matches_cpu() {
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    let relaxation = 0.8;
    gpu.set_params(SimParams {
        projection: Projection::Jacobi {
            iterations: 3,
            relaxation,
        },
        ..*gpu.params()
    })
    .unwrap();
    // Stretch every edge by a few percent, then take it as unconstrained.
    let mut rng = rng(11);
    for p in cpu.state.pos.iter_mut() {
        *p += unit(&mut rng) * 0.004;
    }
    gpu.write_state(&cpu.state);
    let mut x = gpu.read_vertices(VertexBuffer::Unconstrained);
    use VertexBuffer::*;
    let passes = [
        JacobiPass {
            src: Unconstrained,
            dst: Tmp,
        },
        JacobiPass { src: Tmp, dst: Pos },
        JacobiPass { src: Pos, dst: Tmp },
    ];
    for (k, pass) in passes.into_iter().enumerate() {
        gpu.run_jacobi_pass(pass, t, h);
        let g = gpu.read_vertices(pass.dst);
        let mut next = x.clone();
        for (_, v, e) in rods_of(&cpu) {
            project::project_jacobi(
                &x[v.clone()],
                &mut next[v.clone()],
                &cpu.rods.inv_mass[v.clone()],
                &cpu.rods.rest_len[e],
                relaxation,
                &vec![Contact::default(); v.len()],
                false,
            );
        }
        let d = max_diff(&g, &next);
        eprintln!("Jacobi iteration {k}: differs by {d:.2e} m");
        assert!(d < 1e-6, "Jacobi iteration {k}: differs by {d:.2e} m");
        assert!(max_diff(&next, &x) > 1e-4, "iteration {k} moved nothing");
        x = next;
    }
}

/// Kernel `project_fast_rod` on stretched rods: both sides stop below their
/// strain tolerance (CPU: 1e-10; GPU: 1e-6 plus what f32 resolves at that
/// distance from the origin, ~1e-5 here), and Newton's quadratic convergence
/// usually overshoots that by far, so the projected positions agree to the
/// GPU's stopping error of ≤ 1e-5 × 0.1 m edges: 1e-6 m.
#[test]
fn fast_projection_kernel_matches_cpu() {
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    // Stretch the edges; anchored vertices stay on their anchors.
    let mut rng = rng(5);
    for (p, w) in cpu.state.pos.iter_mut().zip(&cpu.rods.inv_mass) {
        if *w > 0.0 {
            *p += unit(&mut rng) * 0.002;
        }
    }
    gpu.write_state(&cpu.state);
    cpu.state = gpu.read_state();
    gpu.run_kernel(Kernel::ProjectFastRod, t, h);
    let g = gpu.read_state();
    for (_, v, e) in rods_of(&cpu) {
        let r = project::project_fast(
            &mut cpu.state.pos[v.clone()],
            &cpu.rods.inv_mass[v.clone()],
            &cpu.rods.rest_len[e.clone()],
            1e-10,
            50,
            &vec![Contact::default(); v.len()],
            false,
        );
        assert!(r.max_strain < 1e-10, "{r:?}");
        // The GPU's stopping rule (shaders/project.wgsl) on every movable edge:
        // strain ≤ 1e-6 + 4ε of its f32 edge vector, itself within ~3ε of
        // the exact strain (a rounded length and quotient): 1e-6 + 8ε.
        for (j, l) in cpu.rods.rest_len[e].iter().enumerate() {
            let (a, b) = (g.pos[v.start + j], g.pos[v.start + j + 1]);
            let w = cpu.rods.inv_mass[v.start + j] + cpu.rods.inv_mass[v.start + j + 1];
            let strain = ((b - a).length() / l - 1.0).abs();
            let bound = 1e-6 + 8.0 * f32::EPSILON as f64;
            assert!(
                w == 0.0 || strain <= bound,
                "edge {j}: strain {strain:.2e} > {bound:.2e}"
            );
        }
    }
    let d = max_diff(&g.pos, &cpu.state.pos);
    eprintln!("project_fast_rod: positions differ by {d:.2e} m");
    assert!(d < 1e-6, "projected positions differ by {d:.2e} m");
    assert!(gpu.read_stats()[1] > 0);
}

/// Kernels `save_start` and `project_shake_rod`: `save_start` copies the
/// positions exactly; then from rods moved off their start (each vertex by
/// up to 2 mm, edges turned by ~0.03 rad and stretched) SHAKE projects along
/// the start edges. Both sides stop below their strain tolerance as in
/// `fast_projection_kernel_matches_cpu`, so the positions agree to the same
/// 1e-6 m; the CPU's SHAKE and fast projections differ by far more here
/// (corrections of ~2 mm along directions 0.03 rad apart), so the GPU cannot
/// pass by projecting along the iterate's edges.
#[test]
fn shake_projection_kernel_matches_cpu() {
    let (mut cpu, mut gpu) = pair();
    let (t, h) = (cpu.state.time, cpu.params.h());
    let start = cpu.state.pos.clone();
    gpu.run_kernel(Kernel::SaveStart, t, h);
    assert_eq!(gpu.read_vertices(VertexBuffer::Start), start);
    let mut rng = rng(5);
    for (p, w) in cpu.state.pos.iter_mut().zip(&cpu.rods.inv_mass) {
        if *w > 0.0 {
            *p += unit(&mut rng) * 0.002;
        }
    }
    gpu.write_state(&cpu.state);
    cpu.state = gpu.read_state();
    let moved = cpu.state.pos.clone();
    gpu.run_kernel(Kernel::ProjectShakeRod, t, h);
    let g = gpu.read_state();
    let mut fast = moved.clone();
    for (_, v, e) in rods_of(&cpu) {
        let none = vec![Contact::default(); v.len()];
        let (w, rest) = (&cpu.rods.inv_mass[v.clone()], &cpu.rods.rest_len[e.clone()]);
        let r = project::project_shake(
            &mut cpu.state.pos[v.clone()],
            &start[v.clone()],
            w,
            rest,
            1e-10,
            50,
            &none,
            false,
        );
        assert!(r.converged && r.max_strain < 1e-10, "{r:?}");
        project::project_fast(&mut fast[v.clone()], w, rest, 1e-10, 50, &none, false);
        for (j, l) in rest.iter().enumerate() {
            let (a, b) = (g.pos[v.start + j], g.pos[v.start + j + 1]);
            let w = w[j] + w[j + 1];
            let strain = ((b - a).length() / l - 1.0).abs();
            let bound = 1e-6 + 4.0 * f32::EPSILON as f64 * (a.length() + b.length()) / l;
            assert!(
                w == 0.0 || strain <= bound,
                "edge {j}: strain {strain:.2e} > {bound:.2e}"
            );
        }
    }
    let d = max_diff(&g.pos, &cpu.state.pos);
    let apart = max_diff(&fast, &cpu.state.pos);
    eprintln!(
        "project_shake_rod: positions differ by {d:.2e} m; SHAKE and fast differ by {apart:.2e} m"
    );
    assert!(d < 1e-6, "projected positions differ by {d:.2e} m");
    assert!(
        apart > 1e-5,
        "SHAKE and fast projection differ by only {apart:.2e} m"
    );
    assert!(gpu.read_stats()[1] > 0);
}

/// A whole step (all kernels in sequence, one submission) from identical
/// states, in each walked form (`GpuSimulator::set_form`: the stages
/// apart, a substep a dispatch, a frame a dispatch): the end states agree
/// to the accumulated kernel tolerances.
#[test]
fn one_whole_step_matches_cpu() {
    for form in Form::ALL {
        let (mut cpu, mut gpu) = pair();
        gpu.set_form(form)
            .expect("the test adapter runs the walked forms");
        let before: State = cpu.state.clone();
        cpu.step().expect("stable");
        gpu.step();
        let g = gpu.read_state();
        let moved = max_diff(&cpu.state.pos, &before.pos);
        let d = max_diff(&g.pos, &cpu.state.pos);
        assert!(moved > 1e-4, "the step moved nothing ({moved:.2e} m)");
        eprintln!("one step, {form}: positions differ by {d:.2e} m, moved {moved:.2e} m");
        assert!(
            d < 1e-5,
            "{form}: positions after one step differ by {d:.2e} m (moved {moved:.2e})"
        );
    }
}

/// Kernels `project_fast_rod` and `project_shake_rod`, which walk every rod
/// serially, on rods of 3 to 300 vertices (91 of 3, others of 5 to 40,
/// and of 256, 257 and 300). From the same stretched
/// state both projections match the CPU rod by rod: every movable edge meets
/// the GPU's stopping rule (strain ≤ 1e-6 + 4ε, plus the k ulps by which
/// a GPU's approximate length may misjudge it, `common::function_ulps`),
/// and the positions agree to the sum of those allowances along the rod (each edge's
/// length may be off by its allowance, and a vertex sits at the end of the
/// chain of edges from the root), plus 8 ulps of the positions.
#[test]
fn walked_projections_match_cpu_across_lengths() {
    let mut rng = rng(11);
    let mut lengths = vec![300, 40, 40, 40, 40, 40, 40, 40, 3, 256];
    lengths.extend(std::iter::repeat_n(3, 90));
    lengths.extend([257, 9, 17, 32, 32, 32, 32, 32, 32, 32, 32, 5]);
    let ends = [
        (EndSpec::Clamped(0), EndSpec::Free),
        (EndSpec::Free, EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Clamped(0)),
    ];
    let specs: Vec<RodSpec> = lengths
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            // (Both ends clamped needs 4 vertices at least.)
            let (s, e) = ends[k % if n < 4 { 2 } else { ends.len() }];
            // 1 cm edges: the longest rod is 3 m.
            let mut spec = random_rod(&mut rng, n, s, e);
            for p in spec.points.iter_mut().chain(spec.rest.iter_mut()) {
                *p *= 0.1;
            }
            spec
        })
        .collect();
    for kernel in [Kernel::ProjectFastRod, Kernel::ProjectShakeRod] {
        let shake = kernel == Kernel::ProjectShakeRod;
        let params = SimParams {
            projection: if shake {
                Projection::Shake {
                    tolerance: 1e-10,
                    max_iterations: 50,
                }
            } else {
                Projection::Fast {
                    tolerance: 1e-10,
                    max_iterations: 50,
                }
            },
            ..SimParams::default()
        };
        let (rods, state) = build(&specs, vec![Anchor::world()]);
        let ctx = gpu();
        let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), params).unwrap();
        let (t, h) = (0.0, params.h());
        gpu.run_kernel(Kernel::SaveStart, t, h);
        let start = gpu.read_state().pos;
        let mut moved = gpu.read_state();
        for (p, w) in moved.pos.iter_mut().zip(&rods.inv_mass) {
            if *w > 0.0 {
                *p += unit(&mut rng) * 2e-4;
            }
        }
        gpu.write_state(&moved);
        let mut cpu_pos = gpu.read_state().pos;
        gpu.run_kernel(kernel, t, h);
        let g = gpu.read_state();
        let mut worst = 0.0f64;
        for r in 0..rods.rod_count() {
            let (v, e) = (rods.vertices(r), rods.edges(r));
            let none = vec![Contact::default(); v.len()];
            let (w, rest) = (&rods.inv_mass[v.clone()], &rods.rest_len[e.clone()]);
            let out = if shake {
                project::project_shake(
                    &mut cpu_pos[v.clone()],
                    &start[v.clone()],
                    w,
                    rest,
                    1e-10,
                    50,
                    &none,
                    false,
                )
            } else {
                project::project_fast(&mut cpu_pos[v.clone()], w, rest, 1e-10, 50, &none, false)
            };
            assert!(out.converged, "rod {r} ({} vertices): {out:?}", v.len());
            let mut allowance = 0.0;
            for (j, l) in rest.iter().enumerate() {
                let (a, b) = (g.pos[v.start + j], g.pos[v.start + j + 1]);
                let strain = ((b - a).length() / l - 1.0).abs();
                // The projection stops at 4 ulps above its tolerance by its
                // own measure, whose length a GPU may approximate.
                let bound = 1e-6 + (4.0 + function_ulps(&ctx)) * f32::EPSILON as f64;
                let movable = w[j] + w[j + 1] > 0.0;
                assert!(
                    !movable || strain <= bound,
                    "shake {shake}, rod {r} ({} vertices), edge {j}: strain {strain:.2e} > {bound:.2e}",
                    v.len()
                );
                allowance += bound * l;
            }
            let extent = g.pos[v.clone()]
                .iter()
                .fold(0.0f64, |m, p| m.max(p.length()));
            let d = max_diff(&g.pos[v.clone()], &cpu_pos[v.clone()]);
            let limit = allowance + 8.0 * f32::EPSILON as f64 * extent;
            worst = worst.max(d / limit);
            assert!(
                d <= limit,
                "shake {shake}, rod {r} ({} vertices): positions differ by {d:.2e} m > {limit:.2e} m",
                v.len()
            );
        }
        eprintln!("{kernel:?}: worst difference {worst:.2} of its allowance");
    }
}

/// Rods of 3 to 300 vertices, every end condition, ~1 cm edges; the first
/// a 256-vertex helix (5 cm radius, 0.2 rad a turn per edge), then rods of
/// 257 and 300 vertices among shorter ones. Twist off equilibrium so every
/// holonomy coefficient Cⱼ is non-zero.
fn varied_scene() -> (Vec<RodSpec>, State, strands::model::rods::RodSet, SimParams) {
    let mut rng = rng(17);
    let mut lengths = vec![256, 40, 40, 40, 40, 40, 40, 3, 300];
    lengths.extend(std::iter::repeat_n(3, 60));
    lengths.extend([257, 9, 17, 32, 32, 32, 32, 32, 32, 32, 32, 5, 4]);
    let ends = [
        (EndSpec::Clamped(0), EndSpec::Free),
        (EndSpec::Free, EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Clamped(0)),
        (EndSpec::Free, EndSpec::Clamped(0)),
    ];
    let specs: Vec<RodSpec> = lengths
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let (s, e) = ends[k % if n < 4 { 2 } else { ends.len() }];
            if k == 0 {
                let rest: Vec<DVec3> = (0..n)
                    .map(|i| {
                        let a = 0.2 * i as f64;
                        DVec3::new(
                            0.05 * a.cos(),
                            0.05 * a.sin(),
                            0.02 * a / std::f64::consts::TAU,
                        )
                    })
                    .collect();
                let points = rest.iter().map(|p| *p + unit(&mut rng) * 1e-3).collect();
                return RodSpec {
                    name: "helix".into(),
                    points,
                    rest,
                    material: aniso_material(),
                    start: s,
                    end: e,
                    frame_angle: 0.0,
                };
            }
            let mut spec = random_rod(&mut rng, n, s, e);
            for p in spec.points.iter_mut().chain(spec.rest.iter_mut()) {
                *p *= 0.1;
            }
            spec
        })
        .collect();
    let params = SimParams {
        wind: Wind {
            velocity: DVec3::new(0.5, 0.0, 0.2),
            gust_amplitude: 0.3,
            ..Wind::default()
        },
        ..SimParams::default()
    };
    let (rods, mut state) = build(&specs, vec![Anchor::world()]);
    for (j, th) in state.theta.iter_mut().enumerate() {
        *th += 0.3 * (0.7 * j as f64).sin();
    }
    (specs, state, rods, params)
}

/// Kernel `frames_rod` (walked) on rods of 3 to 300 vertices: from the
/// displaced centerlines it matches the f64 CPU `frames` and
/// `clamp_twist`. A tangent is a quanta difference, a length and a division:
/// 4 roundings, |Δt| ≤ 4ε, plus the k ulps a GPU's approximate normalize
/// may scale it by (`common::function_ulps`; the scale leaves its
/// direction, so the transport below does not compound it). Transport
/// compounds ~10 roundings per edge (one transport and a normalisation per
/// edge), so |Δuʲ| ≤ 10 (j + 1) ε; a clamped θ inherits its edge's
/// |Δu| (atan2 of unit vectors) plus the 4ε of its anchor's m₁.
#[test]
fn walked_frames_match_cpu_across_lengths() {
    let (_, state, rods, params) = varied_scene();
    let eps = f32::EPSILON as f64;
    let mut rng = rng(5);
    let mut moved = state.clone();
    for p in moved.pos.iter_mut() {
        *p += unit(&mut rng) * 2e-3;
    }
    let kernel = Kernel::FramesRod;
    let ctx = gpu();
    let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), params).unwrap();
    let (t, h) = (0.0, params.h());
    gpu.write_state(&moved);
    let mut cpu = gpu.read_state();
    gpu.run_kernel(kernel, t, h);
    let g = gpu.read_state();
    let mut worst = 0.0f64;
    let mut helix = 0.0f64;
    for r in 0..rods.rod_count() {
        let e = rods.edges(r);
        let s = &mut cpu;
        cpu_frames(&rods, s, r, t + h);
        for (j, k) in e.clone().enumerate() {
            let dt = (g.tangent[k] - s.tangent[k]).length();
            let tangent_bound = (4.0 + function_ulps(&ctx)) * eps;
            assert!(
                dt <= tangent_bound,
                "{kernel:?} rod {r} edge {j}: tangent off by {dt:.2e} > {tangent_bound:.2e}"
            );
            let du = (g.ref_u[k] - s.ref_u[k]).length();
            let bound = 10.0 * (j + 1) as f64 * eps;
            assert!(
                du <= bound,
                "{kernel:?} rod {r} ({} edges), edge {j}: u off by {du:.2e} > {bound:.2e}",
                e.len()
            );
            let dtheta = (g.theta[k] - s.theta[k]).abs();
            assert!(
                dtheta <= bound + 4.0 * eps,
                "{kernel:?} rod {r} edge {j}: θ off by {dtheta:.2e}"
            );
            worst = worst.max(du / bound);
            if r == 0 {
                helix = helix.max(du);
            }
        }
    }
    eprintln!(
        "{kernel:?}: worst |Δu| {worst:.3} of its bound; 255-edge helix: max |Δu| {helix:.2e} ({:.1} ε)",
        helix / eps
    );
}

/// Kernel `forces_rod` (walked: holonomy sums Sₖ = Σ_{j≥k} Cⱼ along each
/// rod) on rods of 3 to 300 vertices, against the f64 CPU `rod_forces`
/// from the same state. The stencil terms carry the error of
/// `forces_kernel_matches_cpu`, 90 ε of max |f|; an f32 Sₖ sums up to n
/// coefficients that carry ~10 roundings each: |ΔSₖ| ≤ (n + 10) ε Σ|Cⱼ|, and
/// it reaches a vertex through ≤ 3 holonomy gradients of size ≤ |κb|/|e|.
#[test]
fn walked_forces_match_cpu_across_lengths() {
    let (_, state, rods, params) = varied_scene();
    let eps = f32::EPSILON as f64;
    let kernel = Kernel::ForcesRod;
    let ctx = gpu();
    let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), params).unwrap();
    let (t, h) = (0.0, params.h());
    gpu.write_state(&state);
    let s = gpu.read_state();
    gpu.run_kernel(kernel, t, h);
    let g = gpu.read_forces();
    let mut worst = 0.0f64;
    for r in 0..rods.rod_count() {
        let (v, e) = (rods.vertices(r), rods.edges(r));
        let n = v.len();
        let mut f = vec![DVec3::ZERO; n];
        cpu::forces::rod_forces(
            &rods,
            &params,
            r,
            t,
            &s.pos[v.clone()],
            &s.vel[v.clone()],
            &s.tangent[e.clone()],
            &s.ref_u[e.clone()],
            &s.theta[e.clone()],
            &mut f,
        );
        let pos = &s.pos[v.clone()];
        let mut kb = vec![DVec3::ZERO; n];
        twist::curvature_binormals(pos, &mut kb);
        let mut gb = vec![0.0; n - 1];
        let mut gt = vec![0.0; n - 1];
        twist::twist_gradient(
            strands::cpu::tridiagonal::RowOrder::RootFirst,
            cpu::rod_rest(&rods, r),
            &kb,
            &s.tangent[e.clone()],
            &s.ref_u[e.clone()],
            &s.theta[e.clone()],
            &mut gb,
            &mut gt,
            None,
        );
        // Cⱼ = ∂E_bend/∂θʲ; −∂E_twist/∂θⁿ at a clamped last edge.
        let clamped = matches!(rods.end[r], strands::model::rods::EndCondition::Clamped(_));
        let last = if clamped { gt[n - 2] } else { gb[n - 2] };
        let sum_c: f64 = gb[..n - 2].iter().map(|c| c.abs()).sum::<f64>() + last.abs();
        let grad_psi = (1..n - 1)
            .map(|i| {
                let l = (pos[i] - pos[i - 1])
                    .length()
                    .min((pos[i + 1] - pos[i]).length());
                kb[i].length() / l
            })
            .fold(0.0f64, f64::max);
        let scale = f.iter().fold(0.0f64, |m, x| m.max(x.length()));
        let bound = 90.0 * eps * scale + 3.0 * grad_psi * (n + 10) as f64 * eps * sum_c;
        let d = max_diff(&g[v.clone()], &f);
        assert!(
            d <= bound,
            "{kernel:?} rod {r} ({n} vertices): forces differ by {d:.2e} > {bound:.2e} (max |f| {scale:.2e})"
        );
        worst = worst.max(d / bound);
    }
    eprintln!("{kernel:?}: worst difference {worst:.3} of its bound");
}

/// Kernel `twist_rod` (walked: the Newton solve of each rod) on rods of 3
/// to 300 vertices, every end condition, the anisotropic helix included: the angles match the f64
/// CPU `twist` (∂E/∂θ = 0, eq. 4). As `twist_kernel_matches_cpu`: the f32
/// gradient's ~10ε moves the root by ~1e-6 rad, plus the 1e-6 rad stopping
/// step. A free–free isotropic rod's energy does not change under a uniform
/// shift of its angles (the Levenberg-shifted case), so its angles are
/// compared as differences θʲ − θʲ⁻¹, the twist.
#[test]
fn walked_twist_matches_cpu_across_lengths() {
    let (_, state, rods, params) = varied_scene();
    let kernel = Kernel::TwistRod;
    let ctx = gpu();
    let mut gpu = GpuSimulator::new(&ctx, rods.clone(), state.clone(), params).unwrap();
    let (t, h) = (0.0, params.h());
    gpu.write_state(&state);
    let mut s = gpu.read_state();
    let start = s.theta.clone();
    gpu.run_kernel(kernel, t, h);
    let g = gpu.read_state();
    let (mut worst, mut moved, mut shifted) = (0.0f64, 0.0f64, 0usize);
    for r in 0..rods.rod_count() {
        let (v, e) = (rods.vertices(r), rods.edges(r));
        let mut kb = vec![DVec3::ZERO; v.len()];
        twist::curvature_binormals(&s.pos[v], &mut kb);
        twist::twist(
            cpu::rod_rest(&rods, r),
            &kb,
            &s.tangent[e.clone()],
            &s.ref_u[e.clone()],
            &mut s.theta[e.clone()],
            cpu::twist::free_twist_range(&rods, r),
            1e-12,
            50,
        );
        let free_free = cpu::twist::free_twist_range(&rods, r).len() == e.len();
        for j in e.clone() {
            moved = moved.max((s.theta[j] - start[j]).abs());
            let d = if free_free {
                if j == e.start {
                    continue;
                }
                (g.theta[j] - g.theta[j - 1]) - (s.theta[j] - s.theta[j - 1])
            } else {
                g.theta[j] - s.theta[j]
            };
            worst = worst.max(d.abs());
        }
        shifted += free_free as usize;
    }
    eprintln!(
        "{kernel:?}: θ differs by {worst:.2e} rad ({shifted} free–free rods by their twist); the solve moved θ by up to {moved:.2e}"
    );
    assert!(moved > 0.1, "the angles hardly moved ({moved:.2e} rad)");
    assert!(worst < 1e-5, "{kernel:?}: θ differs by {worst:.2e} rad");
}

/// The CPU twin of kernel `frames_rod` on rod `r` of `s` at time `t`: the
/// Bishop frames transported along the rod, then the clamped ends' twist.
fn cpu_frames(
    rods: &strands::model::rods::RodSet,
    s: &mut strands::model::rods::State,
    r: usize,
    t: f64,
) {
    let (v, e) = (rods.vertices(r), rods.edges(r));
    frames::frames(
        &s.pos[v.clone()],
        &mut s.tangent[e.clone()],
        &mut s.ref_u[e.clone()],
    );
    let mut view = strands::model::rods::RodStateMut {
        pos: &mut s.pos[v],
        vel: &mut s.vel[rods.vertices(r)],
        theta: &mut s.theta[e.clone()],
        tangent: &mut s.tangent[e.clone()],
        ref_u: &mut s.ref_u[e],
    };
    frames::clamp_twist(rods, r, t, &mut view);
}
