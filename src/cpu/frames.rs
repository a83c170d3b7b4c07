//! Kernel `frames`: the Bishop (reference) frame of every edge and the
//! material frame built from it (Bergou et al. 2008, §4.2.2 and §5.1).
//!
//! The first edge's reference vector `u⁰` is carried from the previous step
//! by parallel transport *in time* (from the old tangent to the new one);
//! every later edge's `uʲ` is parallel transport *along the rod* of `uʲ⁻¹`.
//! The WGSL twin in `shaders/frames.wgsl` keeps these names and loop shape.

use glam::{DQuat, DVec3};

use super::substep::RodStateMut;
use crate::rods::{EndCondition, RodSet};

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

/// Parallel transport from unit tangent `t1` to unit tangent `t2` as a unit
/// quaternion: the rotation about `t1 × t2` by the angle between them,
/// `q = normalize(1 + t1·t2, t1 × t2)` (with `c = cos φ`,
/// `|(1 + c, t1 × t2)|² = 2(1 + c)`, so `w = cos φ/2` and the vector part is
/// `sin φ/2` times the unit axis). Rotating `u` by it gives
/// [`parallel_transport`] in exact arithmetic. Near `t1 = −t2` both turn by
/// ~π about `t1 × t2`, known to ε/|t1 × t2|; the quaternion keeps that, where
/// Rodrigues' `b(b·u)/(1 + c)` loses ε/(1 + c), the square. Both are
/// undefined at `t1 = −t2` exactly, a fold whose curvature binormal
/// `2 tan(φ/2)` is infinite (no rod with bending stiffness gets there).
#[inline]
pub fn transport_quaternion(t1: DVec3, t2: DVec3) -> DQuat {
    let b = t1.cross(t2);
    let w = 1.0 + t1.dot(t2);
    let inv = 1.0 / (w * w + b.dot(b)).sqrt();
    DQuat::from_xyzw(b.x * inv, b.y * inv, b.z * inv, w * inv)
}

/// `v` rotated by the unit quaternion `q` (`rotate` in shaders/common.wgsl):
/// `v + 2w (q⃗ × v) + 2 q⃗ × (q⃗ × v)`.
#[inline]
pub fn rotate(q: DQuat, v: DVec3) -> DVec3 {
    let axis = DVec3::new(q.x, q.y, q.z);
    let t = 2.0 * axis.cross(v);
    v + q.w * t + axis.cross(t)
}

/// Inclusive prefix products `qⱼ ← qⱼ qⱼ₋₁ ⋯ q₀` in place (later rotations
/// on the left, since `uʲ = Pⱼ uʲ⁻¹`), by the doubling scan of the packed
/// `frames` kernel (shaders/frames.wgsl `frames_pack`, level for level,
/// Hillis–Steele): at distance s = 1, 2, 4, … every entry j ≥ s takes
/// `qⱼ qⱼ₋ₛ`, both read before either is written. Quaternion products are
/// associative, so this is the sequential product's value to round-off.
pub fn prefix_products(q: &mut [DQuat]) {
    let n = q.len();
    let mut s = 1;
    while s < n {
        // Entry j reads j − s, which this level has not yet written when
        // updated in decreasing j.
        for j in (s..n).rev() {
            q[j] *= q[j - s]; // qⱼ qⱼ₋ₛ: the later rotations on the left
        }
        s *= 2;
    }
}

/// [`frames`] by the stages of the packed GPU kernel (shaders/frames.wgsl
/// `frames_pack`), each parallel over a rod's edges: (a) every tangent, and
/// `u⁰` carried in time as [`frames`] does; (b) the transport of every edge
/// from the one before as a quaternion ([`transport_quaternion`], the
/// identity for edge 0); (c) their prefix products `Qⱼ` by
/// [`prefix_products`]; (d) `uʲ = Qⱼ u⁰`, re-orthonormalised against `tʲ`.
/// The same frames as [`frames`] in exact arithmetic: over n edges the two
/// differ by the round-off of ~10 operations per edge each, ≲ 20 n ε.
pub fn frames_scan(pos: &[DVec3], tangent: &mut [DVec3], ref_u: &mut [DVec3]) {
    let n_edges = pos.len() - 1;
    // (a)
    let t0 = (pos[1] - pos[0]).normalize();
    let u0 = parallel_transport(ref_u[0], tangent[0], t0);
    let u0 = (u0 - t0 * u0.dot(t0)).normalize();
    for j in 0..n_edges {
        tangent[j] = (pos[j + 1] - pos[j]).normalize();
    }
    // (b)
    let mut q: Vec<DQuat> = (0..n_edges)
        .map(|j| {
            if j == 0 {
                DQuat::IDENTITY
            } else {
                transport_quaternion(tangent[j - 1], tangent[j])
            }
        })
        .collect();
    // (c)
    prefix_products(&mut q);
    // (d)
    ref_u[0] = u0;
    for j in 1..n_edges {
        let t = tangent[j];
        let u = rotate(q[j].normalize(), u0);
        ref_u[j] = (u - t * u.dot(t)).normalize();
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

    /// The quaternion of the transport rotates like Rodrigues' formula and
    /// takes t1 to t2 (§4.2.2).
    #[test]
    fn transport_quaternion_is_the_transport() {
        let t1 = DVec3::new(0.3, -0.2, 0.9).normalize();
        let t2 = DVec3::new(-0.5, 0.4, 0.6).normalize();
        let q = transport_quaternion(t1, t2);
        assert!((q.length() - 1.0).abs() < 1e-15);
        assert!((rotate(q, t1) - t2).length() < 1e-15);
        let u = DVec3::new(1.0, 2.0, -0.5);
        assert!((rotate(q, u) - parallel_transport(u, t1, t2)).length() < 1e-14);
        assert!((rotate(q, u) - q * u).length() < 1e-14);
        // Nearly antiparallel tangents, a turn of π − 1e-6 about `axis`: the
        // quaternion is the exact rotation to ε/|t1 × t2| ≈ 1e-10, where
        // Rodrigues' b(b·u)/(1 + c) loses ε/(1 + c) ≈ 4e-4 (measured 1e-3).
        let axis = t1.any_orthonormal_vector();
        let exact = DQuat::from_axis_angle(axis, std::f64::consts::PI - 1e-6);
        let t3 = exact * t1;
        let d = rotate(transport_quaternion(t1, t3), u) - exact * u;
        assert!(d.length() < 1e-9 * u.length(), "quaternion off by {d}");
        let d = parallel_transport(u, t1, t3) - exact * u;
        assert!(d.length() > 1e-6 * u.length(), "Rodrigues off by {d}");
    }

    /// The doubling scan gives the sequential products q_j ⋯ q_0 (later on
    /// the left) for every length, to round-off.
    #[test]
    fn prefix_products_are_the_sequential_products() {
        for n in 1..40 {
            let q: Vec<DQuat> = (0..n)
                .map(|j| {
                    let a = DVec3::new((j as f64).sin(), (2.0 * j as f64).cos(), 0.5).normalize();
                    DQuat::from_axis_angle(a, 0.1 + 0.05 * j as f64)
                })
                .collect();
            let mut scan = q.clone();
            prefix_products(&mut scan);
            let mut acc = DQuat::IDENTITY;
            for j in 0..n {
                acc = q[j] * acc;
                assert!((scan[j] - acc).length() < 1e-14, "n {n}, j {j}");
            }
        }
    }

    /// Points of a helix of `n` vertices, radius 5 cm, ~1 cm edges turning
    /// by 0.2 rad each, 2 cm pitch per turn: a long curly rod.
    fn helix(n: usize) -> Vec<DVec3> {
        (0..n)
            .map(|i| {
                let a = 0.2 * i as f64;
                DVec3::new(
                    0.05 * a.cos(),
                    0.05 * a.sin(),
                    0.02 * a / std::f64::consts::TAU,
                )
            })
            .collect()
    }

    /// The scan form of the frames equals the sequential transport (§4.2.2)
    /// on a 300-edge helix, from a first-edge frame carried in time: each
    /// form rounds ~10 operations per edge, so after j edges they differ by
    /// at most 2 · 10 · j · ε (ε = 2⁻⁵²): ≤ 1.3e-12 at 300 edges.
    #[test]
    fn scan_frames_match_sequential_transport() {
        let pos = helix(301);
        let ne = pos.len() - 1;
        // The previous step's first edge, turned off the new one.
        let t_old = (pos[1] - pos[0] + DVec3::new(0.001, -0.002, 0.0015)).normalize();
        let mut tangent = vec![t_old; ne];
        let mut ref_u = vec![any_perpendicular(t_old); ne];
        let (mut t2, mut u2) = (tangent.clone(), ref_u.clone());
        frames(&pos, &mut tangent, &mut ref_u);
        frames_scan(&pos, &mut t2, &mut u2);
        let mut worst: f64 = 0.0;
        for j in 0..ne {
            assert_eq!(tangent[j], t2[j]);
            let d = (ref_u[j] - u2[j]).length();
            let bound = 20.0 * (j + 1) as f64 * f64::EPSILON;
            assert!(d <= bound, "edge {j}: {d:.2e} > {bound:.2e}");
            assert!(ref_u[j].dot(tangent[j]).abs() < 1e-15);
            worst = worst.max(d);
        }
        eprintln!("scan vs sequential frames, 300-edge helix: {worst:.2e}");
    }
}
