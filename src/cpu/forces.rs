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
//! with `Sₖ = Σ_{j≥k} Cⱼ`, so the whole kernel is one O(n) sweep per rod.

use glam::DVec3;

use super::curvature::{apply_bending, curvature_binormal_gradient_t, rot_j};
use super::frames::material_frame;
use super::rod_rest;
use super::twist::{RodRest, curvature_binormals, vertex_curvatures};
use crate::model::params::{SimParams, Wind};
use crate::model::rods::{EndCondition, RodSet};

/// External-force inputs of one rod.
#[derive(Clone, Copy)]
pub struct External<'a> {
    /// Gravity (m/s²).
    pub gravity: DVec3,
    /// Wind.
    pub wind: &'a Wind,
    /// Time the wind is taken at (s).
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

/// The bending part of interior vertex `k`'s stencil, `∂E/∂x` on
/// `xₖ₋₁, xₖ, xₖ₊₁` through `(κb)ₖ`: `(∇κb)ᵀ k` with
/// `k = ∂E/∂(κb)ₖ = Σⱼ (g₁ m₂ʲ − g₂ m₁ʲ)`, `g = Bʲ(ωʲ − ω̄ʲ)/l̄ₖ`, over the
/// material frames `prev`, `next` of edges k−1 and k; and the vertex's parts
/// `cₖʲ = (Jωₖʲ)ᵀ Bʲ (ωₖʲ − ω̄ₖʲ)/l̄ₖ` of `Cⱼ = ∂E_bend/∂θʲ` for j = k−1, k
/// (`Cⱼ = −cⱼʲ − cⱼ₊₁ʲ`, as `twist_gradient` sums them). The GPU's twin
/// (shaders/forces.wgsl `bending_stencil`) computes it, and the sums of
/// the terms it returns, in f64 where the device has it: the terms are
/// ~100× the net force on a vertex.
pub fn bending_stencil(
    rest: RodRest,
    pos: &[DVec3],
    kb: &[DVec3],
    k: usize,
    prev: (DVec3, DVec3),
    next: (DVec3, DVec3),
) -> ([DVec3; 3], [f64; 2]) {
    let b = rest.material.bending;
    let w = vertex_curvatures(kb[k], prev, next);
    let l = rest.voronoi[k];
    let mut dk = DVec3::ZERO;
    let mut c = [0.0; 2];
    for (j, ((wj, wbar), (m1, m2))) in w
        .iter()
        .zip(&rest.rest_kappa[k])
        .zip([prev, next])
        .enumerate()
    {
        let bd = apply_bending(b, *wj - *wbar);
        c[j] = rot_j(*wj).dot(bd) / l;
        let g = bd / l;
        dk += m2 * g.x - m1 * g.y;
    }
    let e0 = pos[k] - pos[k - 1];
    let e1 = pos[k + 1] - pos[k];
    (curvature_binormal_gradient_t(e0, e1, kb[k], dk), c)
}

/// Elastic forces `−dE/dx` of one rod, added into `force`.
///
/// One sweep from the tip: at interior vertex k the bending term through
/// `(κb)ₖ` and the holonomy term `Sₖ ∇ψₖ` (`Sₖ = Σ_{j≥k} Cⱼ`) both act on
/// `xₖ₋₁, xₖ, xₖ₊₁`, so vertex k+1 is complete once k is done: three running
/// sums, each vertex's force written once (the GPU kernel's memory pattern).
/// `Cⱼ = ∂E_bend/∂θʲ` comes from the stencils themselves ([`bending_stencil`]'s
/// parts): vertex k's completes `Cₖ` before `Sₖ` is used and starts `Cₖ₋₁`.
#[allow(clippy::too_many_arguments)]
pub fn elastic_forces(
    rest: RodRest,
    pos: &[DVec3],
    kb: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &[f64],
    end_clamped: bool,
    force: &mut [DVec3],
) {
    let n = pos.len();
    let ne = n - 1;
    // Holonomy: Cⱼ = ∂E_bend/∂θʲ, except at a clamped last edge where the
    // total derivative leaves Cₙ = ∂E_bend/∂θⁿ − ∂E/∂θⁿ = −∂E_twist/∂θⁿ
    // = −2β(θⁿ − θⁿ⁻¹)/l̄ₙ (the last interior vertex's twisting term).
    let mut s = 0.0;
    if end_clamped && n >= 3 {
        let m = theta[ne - 1] - theta[ne - 2];
        s = -(2.0 * rest.material.twist * m / rest.voronoi[ne - 1]);
    }
    // Running sums for vertices k+1 and k.
    let mut f_next = DVec3::ZERO;
    let mut f_cur = DVec3::ZERO;
    let mut next = material_frame(tangent[ne - 1], ref_u[ne - 1], theta[ne - 1]);
    for k in (1..n - 1).rev() {
        let prev = material_frame(tangent[k - 1], ref_u[k - 1], theta[k - 1]);
        let (g, c) = bending_stencil(rest, pos, kb, k, prev, next);
        // Cₖ complete (but a clamped last edge's): here s = Σ_{j≥k} Cⱼ.
        if k + 2 < n || !end_clamped {
            s -= c[1];
        }
        let hg = holonomy_gradient(
            kb[k],
            (pos[k] - pos[k - 1]).length(),
            (pos[k + 1] - pos[k]).length(),
        );
        f_next -= g[2] + hg[2] * s;
        f_cur -= g[1] + hg[1] * s;
        let f_prev = -(g[0] + hg[0] * s);
        // Vertex k+1 is complete.
        force[k + 1] += f_next;
        f_next = f_cur;
        f_cur = f_prev;
        // Vertex k's part of Cₖ₋₁.
        s -= c[0];
        next = prev;
    }
    force[1] += f_next;
    force[0] += f_cur;
}

/// The length vertex `i` of a rod with edges `rest_len` takes drag over:
/// half its adjacent edges' rest lengths (m).
#[inline]
pub fn drag_length(rest_len: &[f64], i: usize) -> f64 {
    0.5 * (if i > 0 { rest_len[i - 1] } else { 0.0 }
        + if i < rest_len.len() { rest_len[i] } else { 0.0 })
}

/// Gravity and linear drag `−c L (v − w(x, t))` on every vertex, with `L`
/// the vertex's Voronoi length (`drag_length`).
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
        let len = drag_length(rest.rest_len, i);
        force[i] += ext.gravity * mass[i];
        if c > 0.0 {
            force[i] -= (vel[i] - ext.wind.at(pos[i], ext.time)) * (c * len);
        }
    }
}

/// Total force on every vertex of one rod (elastic + gravity + drag) at time `t`.
#[allow(clippy::too_many_arguments)] // one argument per buffer the WGSL kernel binds
pub fn rod_forces(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    t: f64,
    pos: &[DVec3],
    vel: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &[f64],
    force: &mut [DVec3],
) {
    let rest = rod_rest(rods, r);
    let n = pos.len();
    let mut kb = vec![DVec3::ZERO; n];
    curvature_binormals(pos, &mut kb);
    force.fill(DVec3::ZERO);
    let end_clamped = matches!(rods.end[r], EndCondition::Clamped(_));
    elastic_forces(rest, pos, &kb, tangent, ref_u, theta, end_clamped, force);
    let ext = External {
        gravity: params.gravity,
        wind: &params.wind,
        time: t,
    };
    external_forces(rest, &rods.mass[rods.vertices(r)], pos, vel, ext, force);
}
