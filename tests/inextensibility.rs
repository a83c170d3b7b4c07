//! Inextensibility by manifold projection (§8.1): fast projection (Goldenthal
//! et al. 2007) brings every edge to its rest length within the stated
//! tolerance; the GPU-style Jacobi projection reduces the length error with
//! every added iteration; and the projection's velocity update keeps edge
//! lengths fixed while the rod moves.

mod common;

use common::*;
use glam::DVec3;
use strands::build::EndSpec;
use strands::cpu::contact::Contact;
use strands::cpu::project::{max_strain, project_fast, project_jacobi, project_shake};
use strands::model::params::Projection;

/// A rod with clamped root whose free vertices were kicked off the constraint manifold.
fn stretched(seed: u64) -> (Vec<DVec3>, Vec<f64>, Vec<f64>) {
    let (_, pos, w, rest) = kicked(seed);
    (pos, w, rest)
}

/// `stretched`, with the positions before the kick first.
fn kicked(seed: u64) -> (Vec<DVec3>, Vec<DVec3>, Vec<f64>, Vec<f64>) {
    let mut rng = rng(seed);
    let spec = random_rod(&mut rng, 24, EndSpec::Clamped(0), EndSpec::Free);
    let sim = simulator(&[spec], elastic_params());
    let mut pos = sim.state.pos.clone();
    for p in pos.iter_mut().skip(2) {
        *p += unit(&mut rng) * 0.01; // 10% of an edge
    }
    let w = sim.rods.inv_mass.clone();
    (sim.state.pos, pos, w, sim.rods.rest_len.clone())
}

#[test]
fn fast_projection_reaches_tolerance() {
    for seed in 0..5 {
        let (mut pos, w, rest) = stretched(seed);
        let before = max_strain(&pos, &rest);
        let clamped = [pos[0], pos[1]];
        for tol in [1e-6, 1e-12] {
            let none = vec![Contact::default(); pos.len()];
            let r = project_fast(&mut pos, &w, &rest, tol, 50, &none, false);
            assert!(before > 0.05, "test rod not stretched");
            assert!(
                r.max_strain <= tol,
                "seed {seed}: strain {:.3e} > {tol:e} after {} iterations",
                r.max_strain,
                r.iterations
            );
            assert_eq!(r.max_strain, max_strain(&pos, &rest));
        }
        assert_eq!([pos[0], pos[1]], clamped, "clamped vertices moved");
    }
}

/// SHAKE (Newton along the start-of-substep gradients) reaches the same
/// tolerances from the same stretched rods, says it converged, and leaves
/// the anchored root where it is (inverse mass 0). Its start is the rod
/// before the kick, as `integrate` would leave it.
#[test]
fn shake_projection_reaches_tolerance() {
    for seed in 0..5 {
        let (start, mut pos, w, rest) = kicked(seed);
        let clamped = [pos[0], pos[1]];
        for tol in [1e-6, 1e-12] {
            let none = vec![Contact::default(); pos.len()];
            let r = project_shake(&mut pos, &start, &w, &rest, tol, 50, &none, false);
            assert!(
                r.converged && r.max_strain <= tol,
                "seed {seed}: strain {:.3e} > {tol:e} after {} iterations",
                r.max_strain,
                r.iterations
            );
            assert_eq!(r.max_strain, max_strain(&pos, &rest));
        }
        assert_eq!([pos[0], pos[1]], clamped, "clamped vertices moved");
        // An iteration cap too low to reach the tolerance is reported.
        let (mut pos, _, _) = stretched(seed);
        let none = vec![Contact::default(); pos.len()];
        let r = project_shake(&mut pos, &start, &w, &rest, 1e-12, 1, &none, false);
        assert!(!r.converged && r.iterations == 1, "{r:?}");
    }
}

/// The momentum law behind SHAKE (src/cpu/project.rs `project_shake`): the
/// displacement Δx of a free rod's projection along the start edges e₀ʲ has
/// Σ mᵢ Δxᵢ = 0 and Σ mᵢ x₀ᵢ × Δxᵢ = 0 (each edge moves its ends by
/// opposite impulses along its own start direction), so the velocity update
/// Δx/h changes neither momentum. Fast projection's Δx along the iterate's
/// edges has the same zero sum but a torque about x₀. Rounding: 1e-16 of
/// m |x| |Δx|.
#[test]
fn shake_projection_keeps_momentum_fast_does_not() {
    let mut rng = rng(3);
    let spec = random_rod(&mut rng, 20, EndSpec::Free, EndSpec::Free);
    let sim = simulator(&[spec], elastic_params());
    let (start, w, rest) = (&sim.state.pos, &sim.rods.inv_mass, &sim.rods.rest_len);
    let m = &sim.rods.mass;
    // An unconstrained step: each vertex moved by up to 1 cm (10 % of an edge).
    let moved: Vec<DVec3> = start.iter().map(|x| *x + unit(&mut rng) * 0.01).collect();
    let none = vec![Contact::default(); start.len()];
    let sums = |projected: &[DVec3]| {
        let (mut p, mut l, mut scale) = (DVec3::ZERO, DVec3::ZERO, 0.0f64);
        for i in 0..start.len() {
            let d = projected[i] - moved[i];
            p += d * m[i];
            l += start[i].cross(d) * m[i];
            scale = scale.max(m[i] * start[i].length() * d.length());
        }
        (p.length() / scale, l.length() / scale)
    };
    let mut shake = moved.clone();
    let r = project_shake(&mut shake, start, w, rest, 1e-12, 50, &none, false);
    assert!(r.converged, "{r:?}");
    let (p, l) = sums(&shake);
    assert!(
        p < 1e-13 && l < 1e-13,
        "SHAKE: Σ m Δx {p:.2e}, Σ m x₀ × Δx {l:.2e}"
    );
    let mut fast = moved.clone();
    assert!(project_fast(&mut fast, w, rest, 1e-12, 50, &none, false).converged);
    let (p, l) = sums(&fast);
    assert!(p < 1e-13, "fast: Σ m Δx {p:.2e}");
    assert!(l > 1e-3, "fast: Σ m x₀ × Δx only {l:.2e} of its scale");
}

#[test]
fn jacobi_error_decreases_with_iterations() {
    for seed in 0..5 {
        let (pos, w, rest) = stretched(seed);
        let mut errors = Vec::new();
        for iterations in [0, 1, 2, 4, 8, 16, 32, 64] {
            let mut src = pos.clone();
            let mut dst = pos.clone();
            for _ in 0..iterations {
                project_jacobi(
                    &src,
                    &mut dst,
                    &w,
                    &rest,
                    0.5,
                    &vec![Contact::default(); src.len()],
                    false,
                );
                std::mem::swap(&mut src, &mut dst);
            }
            errors.push(max_strain(&src, &rest));
        }
        for k in 1..errors.len() {
            assert!(
                errors[k] < errors[k - 1],
                "seed {seed}: strain by iterations {errors:?}"
            );
        }
        assert!(
            errors[7] < 0.2 * errors[0],
            "seed {seed}: 64 iterations barely help: {errors:?}"
        );
    }
}

/// After projection v ← v + (x_projected − x)/h, so a hanging rod swinging
/// under gravity keeps its edge lengths to the projection tolerance.
#[test]
fn swinging_rod_keeps_its_length() {
    let mut rng = rng(11);
    let spec = random_rod(&mut rng, 16, EndSpec::Clamped(0), EndSpec::Free);
    let mut params = elastic_params();
    params.gravity = DVec3::new(0.0, -9.81, 0.0);
    params.projection = Projection::Fast {
        tolerance: 1e-10,
        max_iterations: 50,
    };
    let mut sim = simulator(&[spec], params);
    for _ in 0..30 {
        let d = sim.step().unwrap();
        assert!(d.max_strain <= 1e-10, "strain {}", d.max_strain);
    }
    assert!(
        sim.diagnostics().kinetic > 1e-6,
        "the rod should be swinging"
    );
}

/// Max edge strain over `frames` frames of the benchmark's hair workload
/// (`strands bench`: strands of 32 vertices clamped to a head moving at
/// 0.3 m/s and turning at 60°/s, head and shoulder contact, hair–hair
/// interaction, 10 substeps a frame), with `projection` or the default.
/// `gpu_backend`: `Some(form)` runs the GPU in that form
/// (`GpuSimulator::set_form`), `None` the CPU.
fn bench_hair_strain(
    gpu_backend: Option<strands::gpu::Form>,
    projection: Option<Projection>,
    frames: usize,
) -> f64 {
    let w = strands::bench::Workload::standard("hair", 24, 32).unwrap();
    let (rods, state) = w.scene.build();
    let mut params = strands::bench::bench_params(&rods, &w.scene.params, 10);
    if let Some(p) = projection {
        params.projection = p;
    }
    let mut worst = 0.0f64;
    if let Some(form) = gpu_backend {
        let ctx = gpu();
        let mut sim = strands::gpu::GpuSimulator::new(&ctx, rods, state, params).unwrap();
        sim.set_form(form).unwrap();
        for _ in 0..frames {
            worst = worst.max(sim.step_checked().unwrap().1.max_strain);
        }
    } else {
        let mut sim = strands::cpu::CpuSimulator::new(rods, state, params);
        for _ in 0..frames {
            worst = worst.max(sim.step().unwrap().max_strain);
        }
    }
    worst
}

/// No visible stretch at the default settings: on the
/// benchmark's hair workload the maximum edge strain stays below 1e-3 on
/// both backends at the default settings (the fast projection: exact per
/// strand). The test can fail: the workload's former setting, 4 Jacobi
/// iterations, leaves it stretched several times that (2.3 % measured),
/// which is checked too.
#[test]
fn bench_hair_is_not_stretched_at_default_settings() {
    use strands::gpu::Form;
    for gpu_backend in [None, Some(Form::Walked), Some(Form::WalkedFused)] {
        let s = bench_hair_strain(gpu_backend, None, 30);
        eprintln!("gpu form {gpu_backend:?}: max strain {s:.2e} (default: fast)");
        assert!(s < 1e-3, "gpu form {gpu_backend:?}: strain {s:.2e}");
    }
    let jacobi = Projection::Jacobi {
        iterations: 4,
        relaxation: 0.5,
    };
    let s = bench_hair_strain(None, Some(jacobi), 30);
    eprintln!("cpu: max strain {s:.2e} (jacobi×4)");
    assert!(s > 1e-3, "jacobi×4 strain {s:.2e}");
}

/// Hair resting on the moving head: the benchmark's hair without the grid
/// (24 strands of 32, the head moving 0.3 m/s and turning 60°/s, 10
/// substeps a frame) for 240 frames, 1.67 s simulated, on the CPU and on the
/// GPU in its default form. From t ≈ 0.9 s strands lie on the head with
/// runs of vertices that static friction holds; the filtered projection
/// weights them by edge (src/cpu/project.rs `ProjectionSystem::we`: moved
/// by their edges to other held vertices), so every frame's projections
/// converge as Newton's method does, in a few iterations (the cap is 50 a
/// projection, two a substep with colliders), and the strain stays below
/// the product's bound of 1e-3. Holding stuck vertices in place instead
/// leaves an edge between two of them at the length
/// contact gave it, which no iteration could change: 53 iterations a frame
/// on the CPU (the filtered projection's cap and the plain one's 3), 50 on
/// the GPU, failing the iterations' bound, and strains of 4.5e-4 on both
/// (1e-3 to 4.6e-3 with more strands and longer runs).
#[test]
fn hair_resting_on_the_moving_head_stays_unstretched() {
    let w = strands::bench::Workload::standard("hair-nogrid", 24, 32).unwrap();
    let (rods, state) = w.scene.build();
    let params = strands::bench::bench_params(&rods, &w.scene.params, 10);
    let frames = 240;
    let mut cpu = strands::cpu::CpuSimulator::new(rods.clone(), state.clone(), params);
    let ctx = gpu();
    let mut gpu = strands::gpu::GpuSimulator::new(&ctx, rods, state, params).unwrap();
    let (mut strain, mut iterations) = ([0.0f64; 2], [0u32; 2]);
    let mut late = 0.0;
    for _ in 0..frames {
        let c = cpu.step().unwrap();
        let (_, g) = gpu.step_checked().unwrap();
        for (k, d) in [c, g].iter().enumerate() {
            strain[k] = strain[k].max(d.max_strain);
            iterations[k] = iterations[k].max(d.projection_iterations);
        }
        late = cpu.state.time;
    }
    eprintln!(
        "to t = {late:.2} s: max strain CPU {:.2e}, GPU {:.2e}; most projection iterations a frame CPU {}, GPU {}",
        strain[0], strain[1], iterations[0], iterations[1]
    );
    assert!(late > 1.5, "simulated only to {late} s");
    for (k, name) in ["CPU", "GPU"].iter().enumerate() {
        assert!(strain[k] < 1e-3, "{name}: strain {:.2e}", strain[k]);
        assert!(
            iterations[k] <= 20,
            "{name}: a projection took {} iterations: it did not converge",
            iterations[k]
        );
    }
}
