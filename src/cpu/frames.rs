//! Kernel `frames`: the Bishop (reference) frame of every edge and the
//! material frame built from it (Bergou et al. 2008, §4.2.2 and §5.1).
//!
//! The first edge's reference vector `u⁰` is carried from the previous step
//! by parallel transport *in time* (from the old tangent to the new one);
//! every later edge's `uʲ` is parallel transport *along the rod* of `uʲ⁻¹`.
//! The WGSL twin in `shaders/frames.wgsl` keeps these names and loop shape.

use glam::DVec3;

use crate::model::rods::RodStateMut;
use crate::model::rods::{EndCondition, RodSet};

/// Parallel transport of `u` from unit tangent `t1` to unit tangent `t2`:
/// the rotation about `t1 × t2` that takes `t1` to `t2` (§4.2.2).
///
/// Rodrigues' formula written without dividing by `|t1 × t2|`, so it is smooth
/// at `t1 = t2` (identity) and only undefined at `t1 = −t2`.
#[inline]
pub fn parallel_transport(u: DVec3, t1: DVec3, t2: DVec3) -> DVec3 {
    let b = t1.cross(t2);
    let c = t1.dot(t2);
    u * c + b.cross(u) + b * (b.dot(u) / (1.0 + c))
}

/// A unit vector perpendicular to unit `t`, chosen deterministically.
/// Used once, to seed `u⁰` of a new rod (rest and initial state use the same one).
pub fn any_perpendicular(t: DVec3) -> DVec3 {
    let a = if t.x.abs() < 0.9 { DVec3::X } else { DVec3::Y };
    (a - t * a.dot(t)).normalize()
}

/// Signed angle that rotates unit `a` into `b` about unit axis `t`
/// (both taken perpendicular to `t`).
#[inline]
pub fn signed_angle(a: DVec3, b: DVec3, t: DVec3) -> f64 {
    let s = t.dot(a.cross(b));
    let c = a.dot(b);
    s.atan2(c)
}

/// Among the angles `angle + 2πk`, the one nearest `previous`: keeps a
/// clamped end's twist continuous over many turns.
#[inline]
pub fn unwrap_angle(angle: f64, previous: f64) -> f64 {
    let two_pi = std::f64::consts::TAU;
    angle + two_pi * ((previous - angle) / two_pi).round()
}

/// Material frame vectors of one edge from its Bishop frame and twist angle θ:
/// `m1 = cos θ u + sin θ v`, `m2 = −sin θ u + cos θ v` with `v = t × u` (§4.2.2).
#[inline]
pub fn material_frame(t: DVec3, u: DVec3, theta: f64) -> (DVec3, DVec3) {
    let v = t.cross(u);
    let (s, c) = theta.sin_cos();
    (u * c + v * s, -u * s + v * c)
}

/// Recompute the unit tangents `tangent` and Bishop vectors `ref_u` of one rod
/// from its vertex positions `pos`.
///
/// On entry `ref_u[0]` / `tangent[0]` hold the previous step's first-edge frame;
/// on exit they hold the frame adapted to the current centerline.
pub fn frames(pos: &[DVec3], tangent: &mut [DVec3], ref_u: &mut [DVec3]) {
    let n_edges = pos.len() - 1;
    // Time-parallel transport of u⁰ to the new first tangent.
    let t0 = (pos[1] - pos[0]).normalize();
    let u0 = parallel_transport(ref_u[0], tangent[0], t0);
    // Re-orthonormalise against round-off drift over many steps.
    ref_u[0] = (u0 - t0 * u0.dot(t0)).normalize();
    tangent[0] = t0;
    // Space-parallel transport along the rod.
    for j in 1..n_edges {
        let t = (pos[j + 1] - pos[j]).normalize();
        let u = parallel_transport(ref_u[j - 1], tangent[j - 1], t);
        ref_u[j] = (u - t * u.dot(t)).normalize();
        tangent[j] = t;
    }
}

/// Set the twist angle of each clamped end edge from its anchor at time `t`:
/// the angle from the Bishop vector u to the anchor's material vector m1,
/// continued from the previous value so whole turns are kept.
pub fn clamp_twist(rods: &RodSet, r: usize, t: f64, s: &mut RodStateMut) {
    let ne = s.theta.len();
    for (cond, j) in [(rods.start[r], 0), (rods.end[r], ne - 1)] {
        if let EndCondition::Clamped(c) = cond {
            let m1 = rods.anchors[c.anchor].pose(t).vector(c.local_m1);
            let a = signed_angle(s.ref_u[j], m1, s.tangent[j]);
            s.theta[j] = unwrap_angle(a, s.theta[j]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parallel transport is a rotation taking t1 to t2 that leaves t1 × t2 fixed
    /// (its definition in §4.2.2).
    #[test]
    fn transport_maps_tangent_and_fixes_binormal() {
        let t1 = DVec3::new(0.3, -0.2, 0.9).normalize();
        let t2 = DVec3::new(-0.5, 0.4, 0.6).normalize();
        assert!((parallel_transport(t1, t1, t2) - t2).length() < 1e-14);
        let b = t1.cross(t2);
        assert!((parallel_transport(b, t1, t2) - b).length() < 1e-14);
        let u = DVec3::new(1.0, 2.0, -0.5);
        assert!((parallel_transport(u, t1, t2).length() - u.length()).abs() < 1e-13);
    }

    #[test]
    fn unwrap_keeps_turns() {
        let prev = 4.0 * std::f64::consts::PI + 0.1;
        let a = unwrap_angle(0.2, prev);
        assert!((a - (4.0 * std::f64::consts::PI + 0.2)).abs() < 1e-12);
    }
}
