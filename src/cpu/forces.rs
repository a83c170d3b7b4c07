//! Kernel `forces`: forces on the centerline of one rod (§7.1), elastic
//! (bending with the holonomy terms, twisting through a clamped end) plus
//! gravity and linear air drag in a wind field.
//!
//! With the twist angles at their quasistatic values,
//! `−dE/dxᵢ = −∂E/∂xᵢ|_θ − Σ_{clamped j} (∂E/∂θʲ)(∂θʲ/∂xᵢ)`:
//! * `∂E/∂xᵢ|_θ = Σₖ Σⱼ (1/l̄ₖ)(∇ᵢωₖʲ)ᵀ Bʲ (ωₖʲ − ω̄ₖʲ)` with
//!   `∇ᵢωₖʲ = [m₂ʲᵀ; −m₁ʲᵀ] ∇ᵢ(κb)ₖ − Jωₖʲ (∇ᵢΨʲ)ᵀ` (eq. 11), and
//!   `Ψʲ = Σ_{k=1..j} ψₖ` the holonomy of the Bishop frame (eq. 10);
//! * a clamped last edge keeps its material frame, so `θⁿ` turns back by the
//!   holonomy: `∂θⁿ/∂xᵢ = −∇ᵢΨⁿ`. (The first edge's Bishop frame is carried in
//!   time, `Ψ⁰ = 0`, so a clamped first edge adds nothing.)
//!
//! The holonomy sums are accumulated from the tip: `Σⱼ Cⱼ ∇Ψʲ = Σₖ Sₖ ∇ψₖ`
//! with `Sₖ = Σ_{j≥k} Cⱼ`, so the whole kernel is O(n) per rod.

use glam::DVec3;

use super::curvature::{apply_bending, curvature_binormal_gradient_t};
use super::frames::material_frame;
use super::twist::{RodRest, vertex_curvatures};
use crate::params::Wind;

/// External-force inputs of one rod.
#[derive(Clone, Copy)]
pub struct External<'a> {
    pub gravity: DVec3,
    pub wind: &'a Wind,
    pub time: f64,
}

/// Gradient of the holonomy `ψₖ` at interior vertex `k` with respect to
/// `xₖ₋₁, xₖ, xₖ₊₁` (eq. 9): `∇ₖ₋₁ψₖ = (κb)ₖ/(2|eᵏ⁻¹|)`,
/// `∇ₖ₊₁ψₖ = −(κb)ₖ/(2|eᵏ|)`, `∇ₖψₖ = −(∇ₖ₋₁ + ∇ₖ₊₁)ψₖ`.
#[inline]
pub fn holonomy_gradient(kb: DVec3, len_prev: f64, len_next: f64) -> [DVec3; 3] {
    let a = kb / (2.0 * len_prev);
    let c = -kb / (2.0 * len_next);
    [a, -(a + c), c]
}

/// Elastic forces `−dE/dx` of one rod, added into `force`. `grad_bend` and
/// `grad_twist` are `∂E/∂θ` split as `twist_gradient` returns them.
/// Returns nothing; the torque on a clamped end is `grad_bend + grad_twist` there (§8.2).
#[allow(clippy::too_many_arguments)]
pub fn elastic_forces(
    rest: RodRest,
    pos: &[DVec3],
    kb: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &[f64],
    grad_bend: &[f64],
    grad_twist: &[f64],
    end_clamped: bool,
    force: &mut [DVec3],
) {
    let n = pos.len();
    let ne = n - 1;
    let b = rest.material.bending;
    // Bending through the curvature binormal.
    let mut prev = material_frame(tangent[0], ref_u[0], theta[0]);
    for i in 1..n - 1 {
        let next = material_frame(tangent[i], ref_u[i], theta[i]);
        let w = vertex_curvatures(kb[i], prev, next);
        let l = rest.voronoi[i];
        // k = ∂E/∂(κb)ᵢ = Σⱼ (g₁ m₂ʲ − g₂ m₁ʲ) with g = Bʲ(ω − ω̄)/l̄ᵢ.
        let mut k = DVec3::ZERO;
        for ((wj, wbar), (m1, m2)) in w.iter().zip(&rest.rest_kappa[i]).zip([prev, next]) {
            let g = apply_bending(b, *wj - *wbar) / l;
            k += m2 * g.x - m1 * g.y;
        }
        let g = curvature_binormal_gradient_t(pos[i] - pos[i - 1], pos[i + 1] - pos[i], kb[i], k);
        force[i - 1] -= g[0];
        force[i] -= g[1];
        force[i + 1] -= g[2];
        prev = next;
    }
    // Holonomy: Cⱼ = ∂E_bend/∂θʲ, except at a clamped last edge where the
    // total derivative leaves Cₙ = ∂E_bend/∂θⁿ − ∂E/∂θⁿ = −∂E_twist/∂θⁿ.
    let mut s = if end_clamped {
        -grad_twist[ne - 1]
    } else {
        grad_bend[ne - 1]
    };
    for k in (1..n - 1).rev() {
        // Here s = Σ_{j≥k} Cⱼ.
        let len_prev = (pos[k] - pos[k - 1]).length();
        let len_next = (pos[k + 1] - pos[k]).length();
        let g = holonomy_gradient(kb[k], len_prev, len_next);
        force[k - 1] -= s * g[0];
        force[k] -= s * g[1];
        force[k + 1] -= s * g[2];
        s += grad_bend[k - 1];
    }
}

/// Gravity and linear drag `−c L (v − w(x, t))` on every vertex, with `L`
/// the vertex's Voronoi length (half the adjacent edges' rest lengths).
pub fn external_forces(
    rest: RodRest,
    mass: &[f64],
    pos: &[DVec3],
    vel: &[DVec3],
    ext: External,
    force: &mut [DVec3],
) {
    let c = rest.material.drag;
    let n = pos.len();
    for i in 0..n {
        let len = 0.5
            * (if i > 0 { rest.rest_len[i - 1] } else { 0.0 }
                + if i + 1 < n { rest.rest_len[i] } else { 0.0 });
        force[i] += ext.gravity * mass[i];
        if c > 0.0 {
            force[i] -= (vel[i] - ext.wind.at(pos[i], ext.time)) * (c * len);
        }
    }
}
