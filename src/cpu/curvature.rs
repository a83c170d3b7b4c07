//! Discrete curvature binormal (eq. 1) and material curvatures (eq. 2) of
//! Bergou et al. 2008, with the exact gradient of the curvature binormal.

use glam::{DVec2, DVec3};

/// Curvature binormal at the vertex between edges `e0 = eⁱ⁻¹` and `e1 = eⁱ` (eq. 1):
/// `(κb)ᵢ = 2 eⁱ⁻¹ × eⁱ / (|eⁱ⁻¹||eⁱ| + eⁱ⁻¹·eⁱ)`, of length `2 tan(φᵢ/2)`.
/// The GPU's twin `curvature_binormal_at` (shaders/common.wgsl) takes the
/// three positions and splits `e0 × e1` at its position quanta, the same
/// value in exact arithmetic, so that f32 rounds it relative to κb.
#[inline]
pub fn curvature_binormal(e0: DVec3, e1: DVec3) -> DVec3 {
    2.0 * e0.cross(e1) / (e0.length() * e1.length() + e0.dot(e1))
}

/// Material curvature `ω = ((κb)·m2, −(κb)·m1)` of a vertex in the material
/// frame of one of its two edges (eq. 2).
#[inline]
pub fn material_curvature(kb: DVec3, m1: DVec3, m2: DVec3) -> DVec2 {
    DVec2::new(kb.dot(m2), -kb.dot(m1))
}

/// `J ω`: counter-clockwise rotation by π/2 in the plane of material curvatures (§5.1).
#[inline]
pub fn rot_j(w: DVec2) -> DVec2 {
    DVec2::new(-w.y, w.x)
}

/// Symmetric 2×2 bending stiffness `B = [[b11, b12], [b12, b22]]` (N·m²) applied to `w`.
#[inline]
pub fn apply_bending(b: [f64; 3], w: DVec2) -> DVec2 {
    DVec2::new(b[0] * w.x + b[1] * w.y, b[1] * w.x + b[2] * w.y)
}

/// Given `k = ∂E/∂(κb)ᵢ`, the energy gradients with respect to the three
/// vertices `xᵢ₋₁, xᵢ, xᵢ₊₁` that `(κb)ᵢ` depends on: `(∇ⱼ κb)ᵀ k`.
///
/// Exact for edges of any length (the paper's §7.1 form assumes fixed
/// lengths). With `a = eⁱ⁻¹`, `b = eⁱ`, `D = |a||b| + a·b`:
/// `∂κb/∂a = (−2[b] − κb (|b| â + b)ᵀ)/D`, `∂κb/∂b = (2[a] − κb (|a| b̂ + a)ᵀ)/D`,
/// and `xᵢ₋₁, xᵢ, xᵢ₊₁` enter as `a = xᵢ − xᵢ₋₁`, `b = xᵢ₊₁ − xᵢ`.
#[inline]
pub fn curvature_binormal_gradient_t(a: DVec3, b: DVec3, kb: DVec3, k: DVec3) -> [DVec3; 3] {
    let la = a.length();
    let lb = b.length();
    let d = la * lb + a.dot(b);
    let kbk = kb.dot(k);
    // (∂κb/∂a)ᵀ k and (∂κb/∂b)ᵀ k.
    let ga = (2.0 * b.cross(k) - (a * (lb / la) + b) * kbk) / d;
    let gb = (-2.0 * a.cross(k) - (b * (la / lb) + a) * kbk) / d;
    [-ga, ga - gb, gb]
}
