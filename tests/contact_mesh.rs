//! A mesh collider agrees with the analytic shape it approximates: an
//! icosphere of radius R baked to an SDF and sampled by the contact stage's
//! trilinear interpolation (`sdf_sample`, the CPU twin of the WGSL) differs
//! from |x − c| − R by at most the mesh's sagitta (its facets lie up to
//! R(1 − cos α) inside the sphere, α the angular circumradius of a facet)
//! plus the interpolation bound: the exact distance is 1-Lipschitz, so the
//! trilinear interpolant is off by at most Σ wᵢ|cᵢ − x| ≤ (√3/2)·cell.

use glam::DVec3;
use rand::{RngExt, SeedableRng};
use strands::cpu::contact::sdf_sample;
use strands::model::colliders::mesh::{Mesh, bake_sdf};

#[test]
fn mesh_sdf_matches_the_sphere_it_approximates() {
    let (c, r) = (DVec3::new(0.02, 1.6, -0.01), 0.1);
    let mesh = Mesh::icosphere(c, r, 3);
    // Largest facet circumradius angle, measured on the mesh.
    let alpha = mesh
        .triangles
        .iter()
        .map(|t| {
            let p = t.map(|i| mesh.vertices[i as usize] - c);
            let (a, b, e) = (
                (p[1] - p[0]).length(),
                (p[2] - p[1]).length(),
                (p[0] - p[2]).length(),
            );
            let area = 0.5 * (p[1] - p[0]).cross(p[2] - p[0]).length();
            let circum = a * b * e / (4.0 * area);
            (circum / r).asin()
        })
        .fold(0.0, f64::max);
    let sagitta = r * (1.0 - alpha.cos());
    for cell in [0.01, 0.005] {
        let grid = bake_sdf(&mesh, cell, 0.02, 1 << 22).unwrap();
        let bound = sagitta + 3f64.sqrt() / 2.0 * cell;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
        let mut worst = 0.0f64;
        for _ in 0..2000 {
            // Points within 1.5 cm of the surface: where contact happens.
            let d = DVec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            if d.length() < 0.1 {
                continue;
            }
            let x = c + d.normalize() * (r + rng.random_range(-0.015..0.015));
            let (phi, _) = sdf_sample(&grid, x);
            worst = worst.max((phi - ((x - c).length() - r)).abs());
        }
        eprintln!(
            "cell {cell} m: worst |φ_sdf − φ_sphere| = {worst:.2e} m, bound {bound:.2e} m (sagitta {sagitta:.2e})"
        );
        assert!(worst <= bound, "cell {cell}: {worst} > {bound}");
    }
}
