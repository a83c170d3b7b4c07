//! Kernel `integrate` (shaders/integrate.wgsl): symplectic Euler, velocity
//! first, then position (§7.2), and the vertices of clamped ends placed
//! where their anchors are (`anchored_positions`, the WGSL
//! `integrate_anchored_vertex` and `integrate_clamped_ends`).

use glam::DVec3;

use crate::model::rods::{EndCondition, RodSet};

/// Place the vertices of clamped ends where their anchors are at time `t`.
/// Returns the vertices set (local indices) and their positions.
pub fn anchored_positions(rods: &RodSet, r: usize, t: f64, n: usize) -> Vec<(usize, DVec3)> {
    let mut out = Vec::new();
    for (cond, first) in [(rods.start[r], 0), (rods.end[r], n - 2)] {
        if let EndCondition::Clamped(c) = cond {
            let pose = rods.anchors[c.anchor].pose(t);
            out.push((first, pose.point(c.local_pos[0])));
            out.push((first + 1, pose.point(c.local_pos[1])));
        }
    }
    out
}

/// Kernel `integrate` (shaders/integrate.wgsl): symplectic Euler, velocity
/// first, then position (§7.2). Vertices driven by an anchor go where the
/// anchor is at `t_end`, with the velocity that takes them there in `h`.
pub fn integrate(
    rods: &RodSet,
    r: usize,
    t_end: f64,
    h: f64,
    force: &[DVec3],
    pos: &mut [DVec3],
    vel: &mut [DVec3],
) {
    let n = pos.len();
    let inv_mass = &rods.inv_mass[rods.vertices(r)];
    for i in 0..n {
        vel[i] += force[i] * (h * inv_mass[i]);
        pos[i] += vel[i] * h;
    }
    for (i, x) in anchored_positions(rods, r, t_end, n) {
        let old = pos[i] - vel[i] * h;
        vel[i] = (x - old) / h;
        pos[i] = x;
    }
}
