//! The walk's shortcut past the line search of the quasistatic twist solve
//! (§5): a full Newton step is taken without evaluating the energy when a
//! bound on the energy's third derivatives proves that it passes the Armijo
//! test (src/cpu/twist.rs `cubic_term`, `cubic_bound`, `armijo_certified`).
//! Both facts it rests on are checked against the energy itself.

mod common;

use common::*;
use glam::DVec3;
use rand::RngExt;
use strands::build::EndSpec;
use strands::cpu::rod_rest;
use strands::cpu::tridiagonal::RowOrder;
use strands::cpu::twist::{
    NewtonStep, armijo_certified, cubic_bound, curvature_binormals, elastic_energy,
    free_twist_range, newton_step, twist_gradient,
};

/// Bending plus twisting energy (eq. 3, §4.2.2) of a rod at angles `theta`.
fn energy(sim: &strands::cpu::CpuSimulator, kb: &[DVec3], theta: &[f64]) -> f64 {
    let s = &sim.state;
    let (b, t) = elastic_energy(rod_rest(&sim.rods, 0), kb, &s.tangent, &s.ref_u, theta);
    b + t
}

/// `|∂³E/∂(θʲ)³| ≤ C` for every free edge j at any angles (`cubic_bound`),
/// by finite differences of the energy along one angle at a time: the
/// five-point third difference with step 0.02 rad (error ~ h² f⁽⁵⁾, a few
/// 10⁻⁴ C here) at random angles up to ±π, on random anisotropic rods with
/// rest curvature. The bound is not idle: somewhere the third derivative
/// reaches a tenth of it.
#[test]
fn cubic_bound_holds_the_third_derivative_of_the_energy() {
    let mut rng = rng(71);
    let mut tightest = 0.0f64;
    let mut checked = 0;
    for n in [3, 5, 12, 30] {
        for _ in 0..6 {
            let spec = random_rod(&mut rng, n, EndSpec::Free, EndSpec::Free);
            let mut sim = simulator(&[spec], elastic_params());
            let mut kb = vec![DVec3::ZERO; n];
            curvature_binormals(&sim.state.pos, &mut kb);
            let free = free_twist_range(&sim.rods, 0);
            let c = cubic_bound(rod_rest(&sim.rods, 0), &kb, free.clone());
            assert!(c > 0.0);
            for th in sim.state.theta.iter_mut() {
                *th = rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
            }
            let theta = sim.state.theta.clone();
            let h = 0.02;
            for j in free.clone() {
                let at = |t: f64| {
                    let mut th = theta.clone();
                    th[j] += t;
                    energy(&sim, &kb, &th)
                };
                let third =
                    (at(2.0 * h) - 2.0 * at(h) + 2.0 * at(-h) - at(-2.0 * h)) / (2.0 * h * h * h);
                assert!(
                    third.abs() <= c * (1.0 + 1e-3),
                    "n = {n}, edge {j}: |E'''| = {} > C = {c}",
                    third.abs()
                );
                tightest = tightest.max(third.abs() / c);
                checked += 1;
            }
        }
    }
    assert!(checked > 100);
    assert!(tightest > 0.1, "the bound is never approached: {tightest}");
}

/// Every Newton step that `armijo_certified` accepts lowers the energy by
/// at least a quarter of its slope, more than the Armijo test's 10⁻⁴ asks
/// (Taylor's theorem with the bound on the third derivatives): random
/// anisotropic rods, clamped and free, angles moved off equilibrium by
/// 10⁻⁴ to 5 rad, so that both small certified steps and large uncertified
/// ones occur. Both kinds are counted, and the certificate is close to
/// its limit in some accepted step (it is not trivially satisfied).
#[test]
fn certified_newton_steps_pass_the_armijo_test() {
    let mut rng = rng(72);
    let (mut certified, mut refused) = (0, 0);
    let mut closest = 0.0f64;
    for k in 0..400 {
        let n = rng.random_range(3..=40);
        let start = if k % 2 == 0 {
            EndSpec::Clamped(0)
        } else {
            EndSpec::Free
        };
        let spec = random_rod(&mut rng, n, start, EndSpec::Free);
        let mut sim = simulator(&[spec], elastic_params());
        let mut kb = vec![DVec3::ZERO; n];
        curvature_binormals(&sim.state.pos, &mut kb);
        let rest = rod_rest(&sim.rods, 0);
        let free = free_twist_range(&sim.rods, 0);
        let scale = 10f64.powf(rng.random_range(-4.0..0.7));
        for j in free.clone() {
            sim.state.theta[j] += scale * rng.random_range(-1.0..1.0);
        }
        let s = &sim.state;
        let ne = n - 1;
        let (mut gb, mut gt, mut diag, mut off) =
            (vec![0.0; ne], vec![0.0; ne], vec![0.0; ne], vec![0.0; ne]);
        twist_gradient(
            RowOrder::RootFirst,
            rest,
            &kb,
            &s.tangent,
            &s.ref_u,
            &s.theta,
            &mut gb,
            &mut gt,
            Some((&mut diag[..], &mut off[..])),
        );
        let m = free.len();
        let (mut x, mut factor) = (vec![0.0; m], vec![0.0; m]);
        let Some(NewtonStep::Full { slope, cubes, .. }) = newton_step(
            RowOrder::RootFirst,
            &gb[free.clone()],
            &gt[free.clone()],
            &diag[free.clone()],
            &off[free.start..free.end - 1],
            0.0,
            0.0,
            &mut x,
            &mut factor,
        ) else {
            continue;
        };
        let c = cubic_bound(rest, &kb, free.clone());
        if !armijo_certified(slope, c, cubes) {
            refused += 1;
            continue;
        }
        certified += 1;
        closest = closest.max(c * cubes / (-1.5 * slope));
        let e0 = energy(&sim, &kb, &s.theta);
        let mut theta = s.theta.clone();
        for (xj, j) in x.iter().zip(free.clone()) {
            theta[j] += xj;
        }
        let e1 = energy(&sim, &kb, &theta);
        // f64 rounding of the two energies.
        let rounding = 1e-13 * e0.abs();
        assert!(
            e1 <= e0 + 0.25 * slope + rounding,
            "E {e0} -> {e1}, slope {slope}, C Σ|x|³ = {}",
            c * cubes
        );
        assert!(e1 <= e0 + 1e-4 * slope + rounding);
    }
    eprintln!("certified {certified}, refused {refused}, closest {closest}");
    assert!(certified > 50 && refused > 20, "{certified} / {refused}");
    assert!(closest > 0.1, "no accepted step near the limit: {closest}");
}
