//! Forces are minus the gradient of the elastic energy (§7.1): every analytic
//! derivative of the DER energy is checked against central finite differences
//! of the energy itself, on random naturally curved, anisotropic, twisted rods.

mod common;

use common::*;
use glam::DVec3;
use strands::build::EndSpec;
use strands::cpu::forces::{elastic_forces, rod_forces};
use strands::cpu::frames::frames;
use strands::cpu::substep::update_material_frame;
use strands::cpu::tridiagonal::RowOrder;
use strands::cpu::twist::{curvature_binormals, elastic_energy, twist_gradient};
use strands::cpu::{CpuSimulator, rod_rest};
use strands::model::rods::RodStateMut;
use strands::model::rods::State;

/// Central-difference step (m) for positions; rods have 0.1 m edges.
const EPS_X: f64 = 1e-6;
/// Central-difference step (rad) for twist angles.
const EPS_T: f64 = 1e-6;
/// Relative agreement required, against the largest force of the rod. Central
/// differences err by O(eps^2 * third derivative) ~ 1e-12 relative plus round-off
/// ~ 1e-16 * E / eps ~ 1e-10 of the force scale; a wrong sign or index in any term
/// is an O(1e-2..1) error (seen when the holonomy sign is flipped: 1.5e-2).
const REL_TOL: f64 = 1e-6;

fn energy_fixed_theta(sim: &CpuSimulator, pos: &[DVec3]) -> f64 {
    // Bishop frames recomputed for the perturbed centerline from the stored
    // first-edge frame (time-parallel transport), twist angles held fixed.
    let mut tangent = sim.state.tangent.clone();
    let mut ref_u = sim.state.ref_u.clone();
    frames(pos, &mut tangent, &mut ref_u);
    let mut kb = vec![DVec3::ZERO; pos.len()];
    curvature_binormals(pos, &mut kb);
    let (b, t) = elastic_energy(
        rod_rest(&sim.rods, 0),
        &kb,
        &tangent,
        &ref_u,
        &sim.state.theta,
    );
    b + t
}

fn assert_close(analytic: &[DVec3], numeric: &[DVec3], what: &str) {
    let scale = numeric.iter().fold(0.0f64, |m, f| m.max(f.length()));
    assert!(scale > 0.0, "{what}: the test rod has no force at all");
    for (i, (a, n)) in analytic.iter().zip(numeric).enumerate() {
        let err = (*a - *n).length();
        assert!(
            err <= REL_TOL * scale,
            "{what}: vertex {i}: analytic {a} vs finite differences {n} (error {err:.3e}, scale {scale:.3e})"
        );
    }
}

/// ∂E/∂x at fixed θ (eq. 11, including the holonomy term of the Bishop frame)
/// equals the finite-difference gradient of E(x, θ) for a free–free rod.
#[test]
fn partial_position_gradient_matches_finite_differences() {
    for seed in 0..5 {
        let mut rng = rng(seed);
        let spec = random_rod(&mut rng, 9, EndSpec::Free, EndSpec::Free);
        let mut sim = simulator(&[spec], elastic_params());
        // Arbitrary twist angles, not at equilibrium.
        for (j, th) in sim.state.theta.iter_mut().enumerate() {
            *th = 0.3 * (j as f64 * 1.7 + seed as f64).sin();
        }
        let s = &sim.state;
        let rest = rod_rest(&sim.rods, 0);
        let n = s.pos.len();
        let mut kb = vec![DVec3::ZERO; n];
        curvature_binormals(&s.pos, &mut kb);
        let numeric = fd_gradient(&s.pos, 0..n, |p| energy_fixed_theta(&sim, p));
        let mut force = vec![DVec3::ZERO; n];
        elastic_forces(
            rest, &s.pos, &kb, &s.tangent, &s.ref_u, &s.theta, false, &mut force,
        );
        assert_close(&force, &numeric, &format!("seed {seed}"));
    }
}

/// −E gradient by central differences over the given vertices (zero elsewhere).
fn fd_gradient(
    pos: &[DVec3],
    which: std::ops::Range<usize>,
    energy: impl Fn(&[DVec3]) -> f64,
) -> Vec<DVec3> {
    let mut out = vec![DVec3::ZERO; pos.len()];
    let mut p = pos.to_vec();
    for i in which {
        for c in 0..3 {
            let x0 = p[i][c];
            p[i][c] = x0 + EPS_X;
            let ep = energy(&p);
            p[i][c] = x0 - EPS_X;
            let em = energy(&p);
            p[i][c] = x0;
            out[i][c] = -(ep - em) / (2.0 * EPS_X);
        }
    }
    out
}

/// The quasistatic energy E*(x) = E(x, θ*(x)), where the free angles minimise E
/// and clamped end frames follow their anchors: for the moving vertices the
/// total force −dE*/dx (§7.1, with the clamped-end holonomy term) matches
/// finite differences of E* with the twist re-solved at every sample.
#[test]
fn total_force_with_quasistatic_twist_matches_finite_differences() {
    let ends = [
        (EndSpec::Clamped(0), EndSpec::Clamped(0)),
        (EndSpec::Clamped(0), EndSpec::Free),
        (EndSpec::Free, EndSpec::Clamped(0)),
        (EndSpec::Free, EndSpec::Free),
    ];
    for (k, (start, end)) in ends.into_iter().enumerate() {
        for seed in 0..3 {
            let mut rng = rng(100 + seed);
            let spec = random_rod(&mut rng, 10, start, end);
            let mut sim = simulator(&[spec], elastic_params());
            let ne = sim.state.theta.len();
            // Twist the clamped ends by turning their material frames: the
            // anchors are fixed, so write the twist into the anchor frames.
            for c in [&mut sim.rods.start[0], &mut sim.rods.end[0]] {
                if let strands::model::rods::EndCondition::Clamped(cl) = c {
                    let axis = (cl.local_pos[1] - cl.local_pos[0]).normalize();
                    cl.local_m1 =
                        glam::DQuat::from_axis_angle(axis, 1.3 + seed as f64) * cl.local_m1;
                }
            }
            let params = sim.params;
            let t = sim.state.time;
            let relax = |sim: &CpuSimulator, state: &mut State| {
                let mut s = RodStateMut {
                    pos: &mut state.pos,
                    vel: &mut state.vel,
                    theta: &mut state.theta,
                    tangent: &mut state.tangent,
                    ref_u: &mut state.ref_u,
                };
                update_material_frame(&sim.rods, &params, 0, t, &mut s);
            };
            let mut state = sim.state.clone();
            relax(&sim, &mut state);
            sim.state = state.clone();
            let n = state.pos.len();
            let mut force = vec![DVec3::ZERO; n];
            rod_forces(
                &sim.rods,
                &params,
                0,
                t,
                &state.pos,
                &state.vel,
                &state.tangent,
                &state.ref_u,
                &state.theta,
                &mut force,
            );
            let lo = if start == EndSpec::Free { 0 } else { 2 };
            let hi = if end == EndSpec::Free { n } else { n - 2 };
            let numeric = fd_gradient(&state.pos, lo..hi, |p| {
                let mut st = state.clone();
                st.pos.copy_from_slice(p);
                relax(&sim, &mut st);
                let mut kb = vec![DVec3::ZERO; n];
                curvature_binormals(&st.pos, &mut kb);
                let (b, tw) = elastic_energy(
                    rod_rest(&sim.rods, 0),
                    &kb,
                    &st.tangent,
                    &st.ref_u,
                    &st.theta,
                );
                b + tw
            });
            for f in force.iter_mut().take(lo) {
                *f = DVec3::ZERO;
            }
            for f in force.iter_mut().skip(hi) {
                *f = DVec3::ZERO;
            }
            assert!(ne > 2);
            assert_close(&force, &numeric, &format!("ends {k}, seed {seed}"));
        }
    }
}

/// ∂E/∂θ (eq. 7) and the tridiagonal Hessian (§5.1) match finite differences
/// of the energy and of the gradient in θ, with the stencils summed from
/// either end (`RowOrder`: the walk's alternate orders), and the two orders
/// agree to round-off.
#[test]
fn twist_gradient_and_hessian_match_finite_differences() {
    for seed in 0..5 {
        let mut rng = rng(200 + seed);
        let spec = random_rod(&mut rng, 8, EndSpec::Free, EndSpec::Free);
        let mut sim = simulator(&[spec], elastic_params());
        for (j, th) in sim.state.theta.iter_mut().enumerate() {
            *th = 0.5 * (j as f64 * 2.3 + seed as f64).cos();
        }
        let s = &sim.state;
        let rest = rod_rest(&sim.rods, 0);
        let n = s.pos.len();
        let ne = n - 1;
        let mut kb = vec![DVec3::ZERO; n];
        curvature_binormals(&s.pos, &mut kb);
        let grad = |order: RowOrder, theta: &[f64]| {
            let mut gb = vec![0.0; ne];
            let mut gt = vec![0.0; ne];
            let mut d = vec![0.0; ne];
            let mut o = vec![0.0; ne];
            twist_gradient(
                order,
                rest,
                &kb,
                &s.tangent,
                &s.ref_u,
                theta,
                &mut gb,
                &mut gt,
                Some((&mut d, &mut o)),
            );
            let g: Vec<f64> = gb.iter().zip(&gt).map(|(a, b)| a + b).collect();
            (g, d, o)
        };
        let energy = |theta: &[f64]| {
            let (b, t) = elastic_energy(rest, &kb, &s.tangent, &s.ref_u, theta);
            b + t
        };
        let root_first = grad(RowOrder::RootFirst, &s.theta);
        for order in [RowOrder::RootFirst, RowOrder::TipFirst] {
            let (g, diag, off) = grad(order, &s.theta);
            let gscale = g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let hscale = diag.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            for (k, (a, b)) in [
                (&g, &root_first.0),
                (&diag, &root_first.1),
                (&off, &root_first.2),
            ]
            .into_iter()
            .enumerate()
            {
                let scale = if k == 0 { gscale } else { hscale };
                for (x, y) in a.iter().zip(b) {
                    assert!(
                        (x - y).abs() <= 1e-14 * scale,
                        "{order:?}: {x} against {y} from the root"
                    );
                }
            }
            let mut th = s.theta.clone();
            for j in 0..ne {
                let t0 = th[j];
                th[j] = t0 + EPS_T;
                let (ep, (gp, _, _)) = (energy(&th), grad(order, &th));
                th[j] = t0 - EPS_T;
                let (em, (gm, _, _)) = (energy(&th), grad(order, &th));
                th[j] = t0;
                let fd = (ep - em) / (2.0 * EPS_T);
                assert!(
                    (fd - g[j]).abs() <= REL_TOL * gscale,
                    "{order:?}, seed {seed} edge {j}: dE/dθ {} vs {fd}",
                    g[j]
                );
                // Column j of the Hessian: only j−1, j, j+1 may be non-zero.
                for (k, (a, b)) in gp.iter().zip(&gm).enumerate() {
                    let h_fd = (a - b) / (2.0 * EPS_T);
                    let h = if k == j {
                        diag[j]
                    } else if k + 1 == j {
                        off[k]
                    } else if k == j + 1 {
                        off[j]
                    } else {
                        0.0
                    };
                    assert!(
                        (h - h_fd).abs() <= REL_TOL * hscale,
                        "{order:?}, seed {seed}: H[{k}][{j}] = {h} vs {h_fd}"
                    );
                }
            }
        }
    }
}
