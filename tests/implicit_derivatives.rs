//! The implicit step's energy derivatives (`cpu::implicit`): each
//! stencil's gradient against central finite differences of its energy,
//! its Hessian against central differences of that gradient, the whole
//! rod's assembly the same way, and the elastic gradient with the twist at
//! its quasistatic equilibrium against the explicit integrator's forces
//! (the envelope theorem: d/dx min_θ E = ∂E/∂x at the minimiser). On
//! random naturally curved, anisotropic rods whose step-start frames
//! belong to another shape, so that every reference vector is carried and
//! every reference twist is nonzero.

mod common;

use common::*;
use glam::DVec3;
use strands::build::EndSpec;
use strands::cpu::dual::{Dual, Vec3};
use strands::cpu::forces::elastic_forces;
use strands::cpu::frames::frames;
use strands::cpu::implicit::{
    Frames, Inertia, Problem, StartFrames, dof_count, edge_derivatives, edge_energy, pack,
    theta_dof, vertex_derivatives, vertex_energy, x_dof,
};
use strands::cpu::twist::curvature_binormals;
use strands::cpu::{CpuSimulator, rod_rest};

/// A simulator of one random rod with a stretching stiffness, and the
/// frames of its state moved by `shift` per vertex (so the state's
/// positions differ from those the frames were made for).
fn rod(seed: u64, start: EndSpec, end: EndSpec) -> (CpuSimulator, Vec<DVec3>, Vec<DVec3>) {
    let mut rng = rng(seed);
    let mut spec = random_rod(&mut rng, 7, start, end);
    spec.material.stretching = 3.0;
    let sim = simulator(&[spec], elastic_params());
    // Frames of a nearby shape: the start of a step that moved the rod.
    let moved: Vec<DVec3> = sim
        .state
        .pos
        .iter()
        .map(|x| *x + unit(&mut rng) * 0.01)
        .collect();
    let mut tangent = sim.state.tangent.clone();
    let mut ref_u = sim.state.ref_u.clone();
    frames(&moved, &mut tangent, &mut ref_u);
    (sim, tangent, ref_u)
}

/// Non-elastic terms without drag, predicted where `pos` is: inertia
/// `inertia` (N/m) and weight `weight` (N) at every vertex.
fn undragged(pos: &[DVec3], inertia: f64, weight: DVec3) -> Inertia {
    let n = pos.len();
    Inertia {
        inertia: vec![inertia; n],
        predicted: pos.to_vec(),
        drag: vec![0.0; n],
        drag_target: pos.to_vec(),
        weight: vec![weight; n],
    }
}

/// The whole Hessian, row by row, from its lower triangle (all `Dual` keeps).
fn full<const N: usize>(h: &[[f64; N]; N]) -> Vec<f64> {
    (0..N)
        .flat_map(|i| (0..N).map(move |j| if j <= i { h[i][j] } else { h[j][i] }))
        .collect()
}

/// Largest |a − b| against the largest |b|.
fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(scale > 0.0, "nothing to compare");
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

/// A stencil's Dual gradient against central differences (step `eps`)
/// of its f64 energy, and its Hessian against central differences of the
/// Dual gradient; returns the two relative errors.
fn stencil_errors<const N: usize>(
    value: impl Fn(&[f64; N]) -> f64,
    dual: impl Fn(&[f64; N]) -> Dual<N>,
    u: [f64; N],
    eps: f64,
) -> (f64, f64) {
    let d = dual(&u);
    assert!((d.v - value(&u)).abs() <= 1e-14 * d.v.abs().max(1e-300));
    let shifted = |i: usize, s: f64| {
        let mut a = u;
        a[i] += s;
        a
    };
    let fd: Vec<f64> = (0..N)
        .map(|i| (value(&shifted(i, eps)) - value(&shifted(i, -eps))) / (2.0 * eps))
        .collect();
    let fd_h: Vec<f64> = (0..N)
        .flat_map(|i| {
            let (ga, gb) = (dual(&shifted(i, eps)).g, dual(&shifted(i, -eps)).g);
            (0..N).map(move |j| (ga[j] - gb[j]) / (2.0 * eps))
        })
        .collect();
    (
        relative_error(&d.g, &fd),
        relative_error(&full(&d.h), &fd_h),
    )
}

/// Vertex stencils, in their two edges and two angles: the gradient
/// against central differences (step 1e-6: truncation ~1e-12 of the
/// scale) of the energy, the Hessian against differences of the gradient.
/// A sign or index error shows at 1e-2 and above.
#[test]
fn vertex_stencil_gradient_and_hessian_match_finite_differences() {
    for seed in 0..4 {
        let (sim, tangent, ref_u) = rod(seed, EndSpec::Free, EndSpec::Free);
        let rest = rod_rest(&sim.rods, 0);
        let frames = StartFrames {
            tangent: &tangent,
            ref_u: &ref_u,
            ref_twist: &vec![0.0; sim.state.pos.len()],
        };
        let p = &sim.state.pos;
        for k in 1..6 {
            let (e0, e1) = (p[k] - p[k - 1], p[k + 1] - p[k]);
            let mut u = [0.0; 8];
            for c in 0..3 {
                u[c] = e0[c];
                u[3 + c] = e1[c];
            }
            u[6] = 0.3 * k as f64 - 1.0;
            u[7] = 0.3 * k as f64 - 0.6;
            let es = |u: &[f64; 8]| [0, 3].map(|o| DVec3::new(u[o], u[o + 1], u[o + 2]));
            let value = |u: &[f64; 8]| {
                vertex_energy(rest, frames, k, es(u).map(Vec3::<f64>::of), [u[6], u[7]])
            };
            let dual = |u: &[f64; 8]| {
                let e = es(u);
                vertex_energy(
                    rest,
                    frames,
                    k,
                    [Vec3::input(e[0], 0), Vec3::input(e[1], 3)],
                    [Dual::<8>::input(u[6], 6), Dual::<8>::input(u[7], 7)],
                )
            };
            let (g, h) = stencil_errors(value, dual, u, 1e-6);
            assert!(g < 1e-6, "seed {seed} vertex {k}: gradient off by {g:.2e}");
            assert!(h < 1e-6, "seed {seed} vertex {k}: Hessian off by {h:.2e}");
        }
    }
}

/// Edge stencils (stretching), in their edge, the same way.
#[test]
fn edge_stencil_gradient_and_hessian_match_finite_differences() {
    let (sim, _, _) = rod(5, EndSpec::Free, EndSpec::Free);
    let rest = rod_rest(&sim.rods, 0);
    // Stretched by 3 % and turned, so every term is nonzero.
    let e = (sim.state.pos[3] - sim.state.pos[2]) * 1.03 + DVec3::new(0.0, 0.001, 0.0);
    let value = |u: &[f64; 3]| edge_energy(rest, 2, Vec3::<f64>::of(DVec3::from_array(*u)));
    let dual =
        |u: &[f64; 3]| -> Dual<3> { edge_energy(rest, 2, Vec3::input(DVec3::from_array(*u), 0)) };
    let (g, h) = stencil_errors(value, dual, e.to_array(), 1e-7);
    assert!(g < 1e-6 && h < 1e-6, "gradient {g:.2e}, Hessian {h:.2e}");
}

/// The whole rod's Φ (inertia, drag, weight, bending, twist, stretch), at
/// frames carried to the point as the solve takes them: the assembled
/// gradient against central differences of `Problem::energy` in every
/// unknown, and the banded Hessian against central second differences of
/// it (step 1e-4: truncation ~1e-8, rounding ~1e-10 of the scale), so
/// every stencil lands on its unknowns.
#[test]
fn assembled_gradient_and_hessian_match_finite_differences() {
    let (sim, tangent, ref_u) = rod(9, EndSpec::Free, EndSpec::Free);
    let n = sim.state.pos.len();
    let rest = rod_rest(&sim.rods, 0);
    let mut rng = rng(3);
    let inertia = Inertia {
        inertia: (0..n).map(|i| 50.0 + i as f64).collect(),
        predicted: sim
            .state
            .pos
            .iter()
            .map(|x| *x + unit(&mut rng) * 0.02)
            .collect(),
        drag: (0..n).map(|i| 2.0 + 0.5 * i as f64).collect(),
        drag_target: sim
            .state
            .pos
            .iter()
            .map(|x| *x + unit(&mut rng) * 0.01)
            .collect(),
        weight: (0..n).map(|_| unit(&mut rng) * 0.1).collect(),
    };
    let fixed = vec![false; dof_count(n)];
    let theta: Vec<f64> = (0..n - 1).map(|j| 0.2 * j as f64).collect();
    let q = pack(&sim.state.pos, &theta);
    let start = StartFrames {
        tangent: &tangent,
        ref_u: &ref_u,
        ref_twist: &vec![0.0; sim.state.pos.len()],
    };
    let at = Frames::at(start, &q);
    let problem = Problem {
        rest,
        frames: at.view(),
        inertia: &inertia,
        fixed: &fixed,
    };
    let (g, h) = problem.derivatives(&q, false);
    let eps = 1e-6;
    let fd: Vec<f64> = (0..q.len())
        .map(|i| {
            let (mut a, mut b) = (q.clone(), q.clone());
            a[i] += eps;
            b[i] -= eps;
            (problem.energy(&a) - problem.energy(&b)) / (2.0 * eps)
        })
        .collect();
    let e = relative_error(&g, &fd);
    assert!(e < 1e-6, "gradient off by {e:.2e}");
    let mut worst = 0.0f64;
    let mut scale = 0.0f64;
    let eps = 1e-4;
    let energy_at = |steps: &[(usize, f64)]| {
        let mut a = q.clone();
        for &(i, s) in steps {
            a[i] += s * eps;
        }
        problem.energy(&a)
    };
    for i in 0..q.len() {
        for j in 0..=i {
            let fd = (energy_at(&[(i, 1.0), (j, 1.0)])
                - energy_at(&[(i, 1.0), (j, -1.0)])
                - energy_at(&[(i, -1.0), (j, 1.0)])
                + energy_at(&[(i, -1.0), (j, -1.0)]))
                / (4.0 * eps * eps);
            worst = worst.max((h.get(i, j) - fd).abs());
            scale = scale.max(fd.abs());
        }
    }
    assert!(worst < 1e-6 * scale, "Hessian off by {:.2e}", worst / scale);
    // The layout the band rests on: x and θ interleaved.
    assert_eq!(
        (x_dof(2, 1), theta_dof(2), dof_count(n)),
        (9, 11, 4 * n - 1)
    );
}

/// With the twist at its quasistatic equilibrium (as `CpuSimulator::new`
/// leaves it) and the step-start frames those of the present shape, the
/// implicit energy's gradient in the positions is minus the explicit
/// integrator's elastic force (`forces::elastic_forces`, eq. 11 with the
/// holonomy terms): two formulations of one reduced energy's derivative.
/// For a free rod and for one clamped at both ends (where the clamped
/// angles are held).
#[test]
fn gradient_at_twist_equilibrium_is_minus_the_explicit_force() {
    for (start, end) in [
        (EndSpec::Free, EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Clamped(0)),
    ] {
        let mut rng = rng(21);
        let mut spec = random_rod(&mut rng, 9, start, end);
        spec.material.stretching = 0.0;
        let sim = simulator(&[spec], elastic_params());
        let n = sim.state.pos.len();
        let rest = rod_rest(&sim.rods, 0);
        let inertia = undragged(&sim.state.pos, 0.0, DVec3::ZERO);
        let fixed = vec![false; dof_count(n)];
        let problem = Problem {
            rest,
            frames: StartFrames {
                tangent: &sim.state.tangent,
                ref_u: &sim.state.ref_u,
                ref_twist: &vec![0.0; sim.state.pos.len()],
            },
            inertia: &inertia,
            fixed: &fixed,
        };
        let q = pack(&sim.state.pos, &sim.state.theta);
        let (g, _) = problem.derivatives(&q, false);
        let mut kb = vec![DVec3::ZERO; n];
        curvature_binormals(&sim.state.pos, &mut kb);
        let mut force = vec![DVec3::ZERO; n];
        let end_clamped = matches!(end, EndSpec::Clamped(_));
        elastic_forces(
            rest,
            &sim.state.pos,
            &kb,
            &sim.state.tangent,
            &sim.state.ref_u,
            &sim.state.theta,
            end_clamped,
            &mut force,
        );
        let ours: Vec<f64> = (0..n)
            .flat_map(|i| (0..3).map(move |c| (i, c)))
            .map(|(i, c)| -g[x_dof(i, c)])
            .collect();
        let theirs: Vec<f64> = force.iter().flat_map(|f| f.to_array()).collect();
        // Free vertices only: a clamped end's vertices take the anchor's
        // reaction in either form.
        let free = |i: usize| match (start, end) {
            (EndSpec::Free, EndSpec::Free) => true,
            _ => i >= 6 && i < 3 * (n - 2),
        };
        let pick = |v: &[f64]| -> Vec<f64> {
            v.iter()
                .enumerate()
                .filter(|(i, _)| free(*i))
                .map(|(_, x)| *x)
                .collect()
        };
        let e = relative_error(&pick(&ours), &pick(&theirs));
        assert!(e < 1e-6, "{start:?}–{end:?}: off by {e:.2e}");
        // The free angles are at equilibrium: their gradient is ~0.
        let torque = (0..n - 1)
            .filter(|&j| !(end_clamped && (j == 0 || j == n - 2)))
            .map(|j| g[theta_dof(j)].abs())
            .fold(0.0, f64::max);
        let scale = theirs.iter().fold(0.0f64, |m, x| m.max(x.abs())) * 0.1;
        assert!(torque < 1e-8 * scale, "free-angle torque {torque:.2e}");
    }
}

/// `project_psd` keeps a semidefinite matrix, and turns an indefinite one
/// into its nearest semidefinite one in the Frobenius norm: eigenvalues
/// (3, −1) of [[1, 2], [2, 1]] become (3, 0), i.e. 1.5·[[1, 1], [1, 1]].
#[test]
fn projection_to_semidefinite_clamps_negative_eigenvalues() {
    use strands::cpu::implicit::project_psd;
    let mut h = [[1.0, 0.0], [2.0, 1.0]];
    project_psd(&mut h);
    for (got, want) in [(h[0][0], 1.5), (h[1][0], 1.5), (h[1][1], 1.5)] {
        assert!((got - want).abs() < 1e-14, "{h:?}");
    }
    let mut spd = [[4.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.5, -0.2, 2.0]];
    let before = spd;
    project_psd(&mut spd);
    for i in 0..3 {
        for j in 0..=i {
            assert!((spd[i][j] - before[i][j]).abs() < 1e-13);
        }
    }
}

/// The projected Hessian (the solve's fallback) of a rod far from rest
/// with no inertia and one end held factors where the exact one need
/// not, and the gradient that comes with it is the exact one.
#[test]
fn projected_hessian_is_definite_with_the_same_gradient() {
    let (sim, tangent, ref_u) = rod(13, EndSpec::Clamped(0), EndSpec::Free);
    let n = sim.state.pos.len();
    let inertia = undragged(&sim.state.pos, 0.0, DVec3::new(0.0, -0.1, 0.0));
    let mut fixed = vec![false; dof_count(n)];
    for i in 0..2 {
        for c in 0..3 {
            fixed[x_dof(i, c)] = true;
        }
    }
    fixed[theta_dof(0)] = true;
    // Compressed and bent: stretching's transverse part is negative.
    let pos: Vec<DVec3> = sim.state.pos.iter().map(|x| *x * 0.9).collect();
    let theta: Vec<f64> = (0..n - 1).map(|j| 0.5 * j as f64).collect();
    let q = pack(&pos, &theta);
    let start = StartFrames {
        tangent: &tangent,
        ref_u: &ref_u,
        ref_twist: &vec![0.0; sim.state.pos.len()],
    };
    let at = Frames::at(start, &q);
    let problem = Problem {
        rest: rod_rest(&sim.rods, 0),
        frames: at.view(),
        inertia: &inertia,
        fixed: &fixed,
    };
    let (g, _) = problem.derivatives(&q, false);
    let (gp, mut hp) = problem.derivatives(&q, true);
    assert_eq!(g, gp);
    for (i, &held) in fixed.iter().enumerate() {
        if held {
            hp.fix(i, 1.0);
        }
    }
    // Semidefinite plus the held end: a tiny shift makes it factor.
    let top = (0..q.len()).map(|i| hp.get(i, i)).fold(0.0, f64::max);
    for i in 0..q.len() {
        hp.add(i, i, 1e-12 * top);
    }
    assert!(
        hp.cholesky().is_some(),
        "the projected Hessian is not definite"
    );
}

/// A reference twist past a half turn is kept whole: with the reference
/// vectors of two aligned edges turned by φ = π + 0.1 about them, the
/// twist energy is β φ²/l̄ when the last iterate's reference twist was near
/// +π, and β (2π − φ)²/l̄ (the other way round) when it was near −π; the
/// bending energy is the same in both, so they differ by
/// β ((π + 0.1)² − (π − 0.1)²)/l̄ = 0.4π β/l̄.
#[test]
fn reference_twist_keeps_its_turn_past_a_half_turn() {
    let (sim, _, _) = rod(2, EndSpec::Free, EndSpec::Free);
    let rest = rod_rest(&sim.rods, 0);
    let n = sim.state.pos.len();
    let phi = std::f64::consts::PI + 0.1;
    let tangent = vec![DVec3::X; n - 1];
    let mut ref_u = vec![DVec3::Y; n - 1];
    ref_u[1] = DVec3::new(0.0, phi.cos(), phi.sin());
    let e = [DVec3::X * 0.1, DVec3::X * 0.1].map(Vec3::<f64>::of);
    let energy = |prior: f64| {
        let mut twist = vec![0.0; n];
        twist[1] = prior;
        let frames = StartFrames {
            tangent: &tangent,
            ref_u: &ref_u,
            ref_twist: &twist,
        };
        vertex_energy(rest, frames, 1, e, [0.0, 0.0])
    };
    let diff = energy(std::f64::consts::PI) - energy(-std::f64::consts::PI);
    let expected = 0.4 * std::f64::consts::PI * rest.material.twist / rest.voronoi[1];
    assert!(
        (diff - expected).abs() < 1e-9 * expected,
        "{diff:e} vs {expected:e}"
    );
}

/// The stencils' hand-derived gradient and Hessian (`vertex_derivatives`,
/// `edge_derivatives`: what the solve assembles) equal the exact ones of
/// `Dual` numbers, at frames carried to the point (`Frames::at`, where the
/// solve takes them), on rods whose reference twists are nonzero and
/// whose angles are turned. Agreement to rounding: a dropped term shows
/// at 1e-5 and above.
#[test]
fn hand_derived_stencil_derivatives_equal_the_dual_ones() {
    for seed in 0..6 {
        let (sim, tangent, ref_u) = rod(seed, EndSpec::Free, EndSpec::Free);
        let rest = rod_rest(&sim.rods, 0);
        let n = sim.state.pos.len();
        let theta: Vec<f64> = (0..n - 1).map(|j| 0.7 * j as f64 - 1.3).collect();
        let q = pack(&sim.state.pos, &theta);
        let start = StartFrames {
            tangent: &tangent,
            ref_u: &ref_u,
            ref_twist: &vec![0.0; n],
        };
        let at = Frames::at(start, &q);
        let frames = at.view();
        let p = &sim.state.pos;
        for k in 1..n - 1 {
            let e = [p[k] - p[k - 1], p[k + 1] - p[k]];
            let th = [theta[k - 1], theta[k]];
            let d = vertex_energy(
                rest,
                frames,
                k,
                [Vec3::input(e[0], 0), Vec3::input(e[1], 3)],
                [Dual::<8>::input(th[0], 6), Dual::<8>::input(th[1], 7)],
            );
            let (g, h) = vertex_derivatives(rest, frames, k, e, th);
            let eg = relative_error(&g, &d.g);
            let eh = relative_error(&h.concat(), &full(&d.h));
            assert!(
                eg < 1e-10,
                "seed {seed} vertex {k}: gradient off by {eg:.2e}"
            );
            assert!(
                eh < 1e-10,
                "seed {seed} vertex {k}: Hessian off by {eh:.2e}"
            );
        }
        for j in 0..n - 1 {
            let e = (p[j + 1] - p[j]) * (0.987 + 0.01 * j as f64);
            let d: Dual<3> = edge_energy(rest, j, Vec3::input(e, 0));
            let (g, h) = edge_derivatives(rest, j, e);
            let hh: Vec<f64> = (0..3)
                .flat_map(|a| (0..3).map(move |b| h.col(b)[a]))
                .collect();
            assert!(relative_error(&g.to_array(), &d.g) < 1e-12, "edge {j}");
            assert!(relative_error(&hh, &full(&d.h)) < 1e-12, "edge {j}");
        }
    }
}

/// A free rod with isotropic bending and a straight rest shape keeps its
/// energy when every angle turns by the same amount, so the Hessian has
/// that turn, z = (0, 0, 0, 1, 0, 0, 0, 1, …), as a null vector (|Hz|
/// at rounding level: the invariance), even bent and twisted, and
/// without inertia in the angles; `hold_common_turn` holds edge 0's angle,
/// after which the Hessian (positions given inertia) factors.
#[test]
fn a_free_isotropic_rods_common_turn_is_held() {
    use strands::cpu::implicit::hold_common_turn;
    let n = 9;
    let points: Vec<DVec3> = (0..n)
        .map(|i| {
            let a = 0.3 * i as f64;
            DVec3::new(0.05 * a.sin(), 0.05 * (1.0 - a.cos()), 0.01 * a)
        })
        .collect();
    let step = (points[1] - points[0]).length();
    let rest: Vec<DVec3> = (0..n).map(|i| DVec3::X * step * i as f64).collect();
    let mut material = iso_material(2e-3, 1.5e-3, 1e-2);
    material.stretching = 10.0;
    let spec = strands::build::RodSpec {
        name: "free".into(),
        points,
        rest,
        material,
        start: EndSpec::Free,
        end: EndSpec::Free,
        frame_angle: 0.0,
    };
    let sim = simulator(&[spec], elastic_params());
    let rest = rod_rest(&sim.rods, 0);
    let inertia = undragged(&sim.state.pos, 100.0, DVec3::ZERO);
    let theta: Vec<f64> = (0..n - 1).map(|j| 0.4 * j as f64).collect();
    let q = pack(&sim.state.pos, &theta);
    let zero = vec![0.0; n];
    let start = StartFrames {
        tangent: &sim.state.tangent,
        ref_u: &sim.state.ref_u,
        ref_twist: &zero,
    };
    let at = Frames::at(start, &q);
    let mut fixed = vec![false; dof_count(n)];
    let problem = Problem {
        rest,
        frames: at.view(),
        inertia: &inertia,
        fixed: &fixed,
    };
    let (_, h) = problem.derivatives(&q, false);
    let mut z = vec![0.0; q.len()];
    for j in 0..n - 1 {
        z[theta_dof(j)] = 1.0;
    }
    let hz = h.mul(&z);
    let top = (0..q.len()).map(|i| h.get(i, i).abs()).fold(0.0, f64::max);
    let norm = hz.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(norm < 1e-12 * top, "|Hz| = {norm:.2e} against {top:.2e}");
    assert!(
        (0..n - 1).any(|j| h.get(theta_dof(j), theta_dof(j)) > 1e-6 * top),
        "the angles are coupled (twist), not inert"
    );
    hold_common_turn(rest, &mut fixed);
    assert_eq!(
        (0..n - 1)
            .filter(|&j| fixed[theta_dof(j)])
            .collect::<Vec<_>>(),
        vec![0]
    );
    let mut held = h.clone();
    held.fix(theta_dof(0), 1.0);
    assert!(held.cholesky().is_some(), "still singular");
    // Anisotropic bending depends on the frame itself: nothing is held.
    let mut aniso = *rest.material;
    aniso.bending = [2e-3, 0.0, 3e-3];
    let mut free = vec![false; dof_count(n)];
    hold_common_turn(
        strands::cpu::twist::RodRest {
            material: &aniso,
            ..rest
        },
        &mut free,
    );
    assert!(free.iter().all(|f| !f));
}
