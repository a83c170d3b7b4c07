//! The quasistatic twist solve (§5) as kernel `twist_rod` walks it: its
//! Newton step is the Thomas solve with its slope, the elimination's bound
//! holds the step it stands for, and a solve whose step is bounded below
//! the tolerance ends without it.

mod common;

use common::*;
use glam::DVec3;
use rand::RngExt;
use rand_pcg::Pcg64;
use strands::build::EndSpec;
use strands::cpu::tridiagonal::{RowOrder, solve_tridiagonal};
use strands::cpu::twist::{NewtonStep, curvature_binormals, free_twist_range, newton_step, twist};
use strands::cpu::{CpuSimulator, rod_rest};

/// A random tridiagonal system of n rows as `newton_step` reads it: the
/// diagonal (0.3–3), the off-diagonal and ∂E/∂θ split into its bending and
/// twisting parts (each in ±1).
fn random_system(rng: &mut Pcg64, n: usize) -> [Vec<f64>; 4] {
    let diag: Vec<f64> = (0..n).map(|_| rng.random_range(0.3..3.0)).collect();
    let off: Vec<f64> = (0..n.saturating_sub(1))
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let bend: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let twist: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    [diag, off, bend, twist]
}

/// Rod k of a study: a random curved rod of n vertices with these ends,
/// anisotropic where k is odd, its angles turned up to 0.5 rad off rest.
fn twisted_rod(rng: &mut Pcg64, k: usize, n: usize, start: EndSpec, end: EndSpec) -> CpuSimulator {
    let mut spec = random_rod(rng, n, start, end);
    if k % 2 == 1 {
        spec.material = aniso_material();
    }
    let mut sim = simulator(&[spec], elastic_params());
    for (j, th) in sim.state.theta.iter_mut().enumerate() {
        *th += 0.5 * (j as f64 * 0.9 + k as f64).sin();
    }
    sim
}

/// The walk's Newton step (`newton_step`, kernel `twist_rod`'s, which forms
/// the right side −g as it eliminates and sums the slope in the back
/// substitution) is the Thomas solve of `(diag + μ, off) x = −g` bit for
/// bit, its slope `Σ xⱼgⱼ` summed from the last row (exactly that sum) and
/// its step the largest |xⱼ| and Σ|xⱼ|³ summed the same way; on an indefinite matrix it finds no step,
/// as the Thomas pivots do. Random systems of 1–60 rows, about half of them
/// indefinite, g split into bending and twisting parts as the kernel reads
/// them.
#[test]
fn newton_step_is_the_thomas_solve_with_its_slope() {
    let mut rng = rng(43);
    let (mut solved, mut refused) = (0, 0);
    for _ in 0..2000 {
        let n: usize = rng.random_range(1..=60);
        let [diag, off, bend, twist] = random_system(&mut rng, n);
        let mu = if rng.random_range(0..2) == 0 {
            0.0
        } else {
            0.2
        };
        let g: Vec<f64> = bend.iter().zip(&twist).map(|(b, t)| b + t).collect();
        for order in [RowOrder::RootFirst, RowOrder::TipFirst] {
            // Rows taken from the tip are the Thomas algorithm on the
            // reversed system (rows and couplings), reversed back.
            let from_tip = order == RowOrder::TipFirst;
            let reorder = |v: &[f64]| -> Vec<f64> {
                if from_tip {
                    v.iter().rev().copied().collect()
                } else {
                    v.to_vec()
                }
            };
            let shifted: Vec<f64> = reorder(&diag).iter().map(|d| d + mu).collect();
            let mut thomas: Vec<f64> = reorder(&g).iter().map(|g| -g).collect();
            let mut scratch = vec![0.0; n];
            let couplings = reorder(&off);
            let definite =
                solve_tridiagonal(&shifted, &couplings, &couplings, &mut thomas, &mut scratch);
            let thomas = reorder(&thomas);
            let mut x = vec![f64::NAN; n];
            let mut factor = vec![0.0; n];
            let step = newton_step(
                order,
                &bend,
                &twist,
                &diag,
                &off,
                mu,
                0.0,
                &mut x,
                &mut factor,
            );
            assert_eq!(
                step.is_some(),
                definite,
                "{order:?} {diag:?} {off:?} μ = {mu}"
            );
            let Some(NewtonStep::Full {
                slope,
                max_step,
                cubes,
            }) = step
            else {
                assert!(step.is_none(), "a bound below 0: {step:?}");
                refused += 1;
                continue;
            };
            solved += 1;
            assert_eq!(x, thomas, "{order:?}");
            // Summed from the row eliminated last back to the first.
            let rows: Vec<usize> = if from_tip {
                (0..n).collect()
            } else {
                (0..n).rev().collect()
            };
            let backward = rows.iter().fold(0.0, |s, &j| s + x[j] * g[j]);
            assert_eq!(slope, backward, "{order:?}");
            assert_eq!(max_step, x.iter().fold(0.0f64, |m, v| m.max(v.abs())));
            let cubed = rows.iter().fold(0.0, |s, &j| s + x[j].abs().powi(3));
            assert_eq!(cubes, cubed, "{order:?}");
        }
    }
    assert!(solved > 600 && refused > 600, "{solved} / {refused}");
}

/// The elimination's bound on the Newton step (`NewtonStep::Below`, from
/// the back substitution xⱼ = yⱼ − cⱼ xⱼ₊₁ by the triangle inequality, see
/// `newton_step`) is at least the largest |xⱼ| the back substitution then
/// finds, on random positive definite systems of 1–60 rows whose
/// elimination factors reach |c| > 1; it is below `below` exactly when the
/// step is not found. The growth it carries is needed: the plain sum
/// Σ|yⱼ| falls short of the step on some of them.
#[test]
fn newton_steps_bound_holds_the_step_it_stands_for() {
    let mut rng = rng(47);
    let (mut checked, mut short) = (0, 0);
    let mut tightest = f64::INFINITY;
    for k in 0..4000 {
        let n: usize = rng.random_range(1..=60);
        let [diag, off, bend, twist] = random_system(&mut rng, n);
        // Either order of the rows, in turn.
        let order = [RowOrder::RootFirst, RowOrder::TipFirst][k % 2];
        let (mut y, mut factor) = (vec![0.0; n], vec![0.0; n]);
        let Some(NewtonStep::Below { bound }) = newton_step(
            order,
            &bend,
            &twist,
            &diag,
            &off,
            0.0,
            f64::INFINITY,
            &mut y,
            &mut factor,
        ) else {
            continue; // not positive definite
        };
        let mut x = vec![0.0; n];
        let Some(NewtonStep::Full { max_step, .. }) = newton_step(
            order,
            &bend,
            &twist,
            &diag,
            &off,
            0.0,
            0.0,
            &mut x,
            &mut factor,
        ) else {
            panic!("the same system found no full step");
        };
        assert!(
            bound >= max_step * (1.0 - 1e-12),
            "bound {bound:e} below the step {max_step:e}: {diag:?} {off:?}"
        );
        tightest = tightest.min(bound / max_step);
        // Just above the bound the step is not found; at it, it is.
        let mut z = vec![0.0; n];
        assert!(matches!(
            newton_step(
                order,
                &bend,
                &twist,
                &diag,
                &off,
                0.0,
                bound * 1.000001,
                &mut z,
                &mut factor
            ),
            Some(NewtonStep::Below { .. })
        ));
        assert!(matches!(
            newton_step(
                order,
                &bend,
                &twist,
                &diag,
                &off,
                0.0,
                bound,
                &mut z,
                &mut factor
            ),
            Some(NewtonStep::Full { .. })
        ));
        let plain: f64 = y.iter().map(|v| v.abs()).sum();
        if plain < max_step * (1.0 - 1e-9) {
            short += 1;
        }
        checked += 1;
    }
    eprintln!(
        "{checked} definite systems, bound / step at least {tightest:.3}, plain sum short on {short}"
    );
    assert!(
        checked > 500 && short > 0,
        "{checked} checked, {short} short"
    );
}

/// A solve whose Newton step the elimination bounds below the tolerance
/// (`newton_step`'s `Below`) ends without it, as the kernel does without
/// the walk that would find the step: from angles 1e-9 rad off the
/// minimizer (found to 1e-14), a solve to 1e-6 takes no iteration and
/// leaves the angles as they were, within its tolerance of the minimizer;
/// one to 1e-13 (below the 1e-9 offset, so the bound cannot be) takes its
/// steps and comes back to the minimizer. Rods clamped at one end and at
/// both, isotropic and anisotropic, curved.
#[test]
fn a_twist_solve_ends_untaken_where_its_step_is_bounded_below_the_tolerance() {
    let mut rng = rng(53);
    let ends = [
        (EndSpec::Clamped(0), EndSpec::Free),
        (EndSpec::Clamped(0), EndSpec::Clamped(0)),
    ];
    for (k, &(start, end)) in ends.iter().cycle().take(8).enumerate() {
        let n = [5, 17, 33, 40][k % 4];
        let sim = twisted_rod(&mut rng, k, n, start, end);
        let s = &sim.state;
        let rest = rod_rest(&sim.rods, 0);
        let mut kb = vec![DVec3::ZERO; s.pos.len()];
        curvature_binormals(&s.pos, &mut kb);
        let free = free_twist_range(&sim.rods, 0);
        let solve = |theta: &mut Vec<f64>, tolerance: f64| {
            twist(
                rest,
                &kb,
                &s.tangent,
                &s.ref_u,
                theta,
                free.clone(),
                tolerance,
                50,
            )
        };
        let mut minimizer = s.theta.clone();
        assert!(solve(&mut minimizer, 1e-14).iterations > 0);
        let mut off = minimizer.clone();
        for j in free.clone() {
            off[j] += 1e-9 * (j as f64 * 1.7 + k as f64).sin();
        }
        let distance = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        };
        let mut loose = off.clone();
        let out = solve(&mut loose, 1e-6);
        assert_eq!(out.iterations, 0, "rod {k}: a step taken at tolerance 1e-6");
        assert_eq!(loose, off, "rod {k}: angles moved without an iteration");
        assert!(distance(&loose, &minimizer) <= 1e-6);
        let mut tight = off.clone();
        let out = solve(&mut tight, 1e-13);
        assert!(out.iterations > 0, "rod {k}: no step at tolerance 1e-13");
        let back = distance(&tight, &minimizer);
        assert!(
            back <= 1e-12,
            "rod {k}: {back:.2e} rad from the minimizer after a solve to 1e-13"
        );
    }
}
