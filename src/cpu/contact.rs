//! Kernels `contact`, `contact_edges_even` and `contact_edges_odd`
//! (shaders/contact.wgsl): strands kept out of colliders, with Coulomb
//! friction. Vertices first, each on its own (one GPU invocation per
//! vertex), then the edges starting at even vertices and those starting at
//! odd ones (red–black Gauss–Seidel along the rod: no two edges of one
//! parity share a vertex, so each parity is one parallel GPU dispatch).
//!
//! Each free vertex `x` closer than `ρ = strand radius + margin` to a
//! collider's surface (signed distance `φ < ρ`) is moved out along the
//! surface normal by the depth `d = ρ − φ`. An edge whose interior point is
//! closest to a sphere or a capsule (a shape smaller than the edge, which
//! both endpoints may miss) is pushed out as a whole: its two vertices move
//! along the normal in proportion to their barycentric weight and inverse
//! mass, so that the closest point moves by exactly `d`.
//!
//! Friction (phase 0 only) acts on the displacement over the substep relative
//! to the collider's surface, `Δ = P_start(P_end⁻¹ x) − x_start` (the vertex
//! mapped back to where the surface point under it was at the start, minus
//! where the vertex was): its tangential part `Δₜ` is removed entirely when
//! `|Δₜ| ≤ μs d` (static: the strand moves with the surface) and shortened by
//! `μk d` otherwise (kinetic). `d` is the normal correction, so `d/h²` is the
//! normal force per mass and this is Coulomb's law over the substep. It only
//! ever shortens the relative tangential displacement: it takes energy out,
//! never puts it in.
//!
//! Phases of a substep with colliders (see `substep` in `src/cpu/substep.rs`):
//! 0. after the inextensibility projection: push out, friction, record each
//!    vertex's contact normal and depth (the projection that follows keeps
//!    recorded vertices on the surface's tangent plane) and check tunnelling;
//! 1. after that second, filtered projection: push out whatever it moved in,
//!    no friction.

use glam::{DQuat, DVec3};

use crate::model::anchor::Pose;
use crate::model::colliders::{Collider, SdfGrid, Shape};

/// A vertex's contact in the current substep: unit normal (world), the
/// depth it was pushed out by (m; 0 means no contact), whether static
/// friction holds it (the filtered projection then does not move it at all;
/// on the GPU a stuck contact stores its depth negated), and the velocity of
/// the collider's surface under it (m/s, world; `project_velocity` removes
/// the vertex's outward velocity relative to it: contact is inelastic).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Contact {
    /// Unit normal (world).
    pub normal: DVec3,
    /// Depth pushed out by (m); 0: no contact.
    pub depth: f64,
    /// Held by static friction.
    pub stuck: bool,
    /// Velocity of the collider's surface under the vertex (m/s).
    pub surface_velocity: DVec3,
}

/// A vertex that moved farther through a collider in one substep than
/// pushing it out along the nearest normal can resolve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tunnel {
    /// Vertex index within its rod.
    pub vertex: usize,
    /// The collider, by index.
    pub collider: usize,
    /// Its motion relative to the collider over the substep (m).
    pub distance: f64,
    /// What the collider resolves per substep (`Shape::thickness`, m).
    pub limit: f64,
}

/// A collider over one substep: its anchor's poses at the start and end,
/// and what contact needs of them in the world frame, worked out once per
/// substep so that a vertex's distance to a sphere, capsule or plane needs
/// no rotation, and its motion relative to the collider one (the GPU's
/// `ColliderNow`).
#[derive(Clone, Debug)]
pub struct ColliderPoses {
    /// At the start of the substep.
    pub start: Pose,
    /// At its end.
    pub end: Pose,
    /// R_start·R_end⁻¹: the rotation that `back` applies.
    pub motion: DQuat,
    /// The collider's shape at the end pose, in the world frame; an SDF's
    /// grid stays in the collider's frame (`distance_now`).
    pub shape: Shape,
}

impl ColliderPoses {
    /// Collider `c` moving from pose `start` to pose `end`.
    pub fn new(c: &Collider, start: Pose, end: Pose) -> ColliderPoses {
        let shape = match &c.shape {
            Shape::Sphere { center, radius } => Shape::Sphere {
                center: to_world(&end, *center),
                radius: *radius,
            },
            Shape::Capsule { a, b, radius } => Shape::Capsule {
                a: to_world(&end, *a),
                b: to_world(&end, *b),
                radius: *radius,
            },
            Shape::Plane { point, normal } => Shape::Plane {
                point: to_world(&end, *point),
                normal: end.rotation * *normal,
            },
            Shape::Sdf(g) => Shape::Sdf(g.clone()),
        };
        ColliderPoses {
            start,
            end,
            motion: start.rotation * end.rotation.inverse(),
            shape,
        }
    }

    /// Where the point fixed to the collider that is at world point `x` at
    /// the end of the substep was at its start: `P_start(P_end⁻¹ x)`, one
    /// rotation.
    #[inline]
    pub fn back(&self, x: DVec3) -> DVec3 {
        (self.start.pivot + self.start.translation)
            + self.motion * (x - (self.end.pivot + self.end.translation))
    }

    /// Where the point fixed to the collider that is at world point `x` at
    /// the start of the substep is at its end: `P_end(P_start⁻¹ x)`.
    #[inline]
    pub fn forward(&self, x: DVec3) -> DVec3 {
        (self.end.pivot + self.end.translation)
            + self.motion.inverse() * (x - (self.start.pivot + self.start.translation))
    }
}

/// Local point (relative to the pivot, anchor rest frame) of world point `x`.
#[inline]
fn to_local(p: &Pose, x: DVec3) -> DVec3 {
    p.rotation.inverse() * (x - (p.pivot + p.translation))
}

#[inline]
fn to_world(p: &Pose, q: DVec3) -> DVec3 {
    (p.pivot + p.translation) + p.rotation * q
}

/// Unit vector along `d`, or +y for a zero vector (a point exactly at a
/// sphere's centre is pushed up).
#[inline]
fn direction(d: DVec3) -> DVec3 {
    let l = d.length();
    if l > 0.0 { d / l } else { DVec3::Y }
}

/// Trilinear interpolation of an SDF grid and its gradient at local point `q`:
/// cell coordinates clamped to the grid, the gradient of the interpolant
/// within the cell. Outside the grid the distance to the grid box is added.
pub fn sdf_sample(g: &SdfGrid, q: DVec3) -> (f64, DVec3) {
    let dims = [g.dims[0] as usize, g.dims[1] as usize, g.dims[2] as usize];
    let u = (q - g.origin) / g.cell;
    let hi = DVec3::new(
        (dims[0] - 1) as f64,
        (dims[1] - 1) as f64,
        (dims[2] - 1) as f64,
    );
    let uc = u.clamp(DVec3::ZERO, hi);
    let outside = (u - uc).length() * g.cell;
    let i0 = [
        (uc.x.floor() as usize).min(dims[0] - 2),
        (uc.y.floor() as usize).min(dims[1] - 2),
        (uc.z.floor() as usize).min(dims[2] - 2),
    ];
    let t = uc - DVec3::new(i0[0] as f64, i0[1] as f64, i0[2] as f64);
    let at = |dx: usize, dy: usize, dz: usize| {
        g.values[(i0[0] + dx) + dims[0] * ((i0[1] + dy) + dims[1] * (i0[2] + dz))] as f64
    };
    let (c000, c100, c010, c110) = (at(0, 0, 0), at(1, 0, 0), at(0, 1, 0), at(1, 1, 0));
    let (c001, c101, c011, c111) = (at(0, 0, 1), at(1, 0, 1), at(0, 1, 1), at(1, 1, 1));
    // Along x first, then y, then z.
    let c00 = c000 + (c100 - c000) * t.x;
    let c10 = c010 + (c110 - c010) * t.x;
    let c01 = c001 + (c101 - c001) * t.x;
    let c11 = c011 + (c111 - c011) * t.x;
    let c0 = c00 + (c10 - c00) * t.y;
    let c1 = c01 + (c11 - c01) * t.y;
    let value = c0 + (c1 - c0) * t.z;
    let dx0 = (c100 - c000) + ((c110 - c010) - (c100 - c000)) * t.y;
    let dx1 = (c101 - c001) + ((c111 - c011) - (c101 - c001)) * t.y;
    let gx = dx0 + (dx1 - dx0) * t.z;
    let gy = (c10 - c00) + ((c11 - c01) - (c10 - c00)) * t.z;
    let gz = c1 - c0;
    (value + outside, direction(DVec3::new(gx, gy, gz)))
}

/// Closest point parameter on segment `a`–`b` to point `p`, in [0, 1].
#[inline]
fn segment_parameter(p: DVec3, a: DVec3, b: DVec3) -> f64 {
    let ab = b - a;
    let l2 = ab.dot(ab);
    if l2 > 0.0 {
        ((p - a).dot(ab) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Signed distance from point `q` to the surface of `shape` and the
/// outward unit normal there, both in the frame the shape is given in.
pub fn collider_distance(shape: &Shape, q: DVec3) -> (f64, DVec3) {
    match shape {
        Shape::Sphere { center, radius } => {
            let d = q - *center;
            // The GPU computes this gap as (|d|² − r²)/(|d| + r)
            // (shaders/contact.wgsl `gap_beyond`), the same in exact arithmetic.
            (d.length() - radius, direction(d))
        }
        Shape::Capsule { a, b, radius } => {
            let p = *a + (*b - *a) * segment_parameter(q, *a, *b);
            let d = q - p;
            (d.length() - radius, direction(d))
        }
        Shape::Plane { point, normal } => ((q - *point).dot(*normal), *normal),
        Shape::Sdf(g) => sdf_sample(g, q),
    }
}

/// Closest points of segments `p0`–`p1` (parameter s) and `q0`–`q1`
/// (parameter t), both in [0, 1]. Nearly parallel segments (sin² of their
/// angle below 1e-6) get s = 0: their endpoints are the closest points.
pub fn segment_segment(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> (f64, f64) {
    let d1 = p1 - p0;
    let d2 = q1 - q0;
    let r = p0 - q0;
    let a = d1.dot(d1);
    let e = d2.dot(d2);
    let f = d2.dot(r);
    if e <= 0.0 {
        return (segment_parameter(q0, p0, p1), 0.0);
    }
    let c = d1.dot(r);
    let b = d1.dot(d2);
    let denom = a * e - b * b;
    let mut s = if denom > 1e-6 * a * e {
        ((b * f - c * e) / denom).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

/// For an edge `qa`–`qb` and a sphere or capsule (in the same frame): the
/// edge parameter s of the point closest to the shape's core, that point's
/// signed distance to the surface and the outward normal. `None` for other
/// shapes (a vertex test suffices for a half-space, and an SDF is sampled at
/// vertices only).
pub fn edge_distance(shape: &Shape, qa: DVec3, qb: DVec3) -> Option<(f64, f64, DVec3)> {
    let (s, core, radius) = match shape {
        Shape::Sphere { center, radius } => (segment_parameter(*center, qa, qb), *center, *radius),
        Shape::Capsule { a, b, radius } => {
            let (s, t) = segment_segment(qa, qb, *a, *b);
            (s, *a + (*b - *a) * t, *radius)
        }
        _ => return None,
    };
    let d = qa + (qb - qa) * s - core;
    Some((s, d.length() - radius, direction(d)))
}

/// Smallest signed distance to `shape` along the path `q0`–`q1` (the
/// tunnelling test): exact for spheres, capsules and planes, sampled at
/// nine points for an SDF.
pub fn path_distance(shape: &Shape, q0: DVec3, q1: DVec3) -> f64 {
    match shape {
        Shape::Sphere { .. } | Shape::Capsule { .. } => {
            edge_distance(shape, q0, q1).map_or(f64::INFINITY, |(_, phi, _)| phi)
        }
        Shape::Plane { .. } => collider_distance(shape, q0)
            .0
            .min(collider_distance(shape, q1).0),
        Shape::Sdf(_) => (0..=8)
            .map(|k| collider_distance(shape, q0 + (q1 - q0) * (k as f64 / 8.0)).0)
            .fold(f64::INFINITY, f64::min),
    }
}

/// Signed distance and outward unit normal (world) of collider `p` at world
/// point `x`, at the end of the substep: a sphere, capsule or plane where
/// the end pose puts it, an SDF sampled in its own frame.
pub fn distance_now(p: &ColliderPoses, x: DVec3) -> (f64, DVec3) {
    match &p.shape {
        Shape::Sdf(g) => {
            let (phi, n) = sdf_sample(g, to_local(&p.end, x));
            (phi, p.end.rotation * n)
        }
        shape => collider_distance(shape, x),
    }
}

/// `path_distance` along the world path `x0`–`x1` to collider `p` at the
/// end of the substep.
pub fn path_distance_now(p: &ColliderPoses, x0: DVec3, x1: DVec3) -> f64 {
    match &p.shape {
        Shape::Sdf(_) => path_distance(&p.shape, to_local(&p.end, x0), to_local(&p.end, x1)),
        shape => path_distance(shape, x0, x1),
    }
}

/// A sphere holding a sphere's or a capsule's shape (centre, radius), for
/// `segment_may_reach`; `None` for a plane or an SDF, which any point may
/// reach.
pub fn bounding_sphere(shape: &Shape) -> Option<(DVec3, f64)> {
    match shape {
        Shape::Sphere { center, radius } => Some((*center, *radius)),
        Shape::Capsule { a, b, radius } => {
            Some(((*a + *b) * 0.5, 0.5 * (*b - *a).length() + radius))
        }
        _ => None,
    }
}

/// Relative slack of `segment_may_reach` over the rounding of the distances
/// it stands in for (f32 on the GPU: ~1e-7 per operation of values up to
/// the magnitudes summed).
pub const REACH_SLACK: f64 = 1e-5;

/// Whether some point of segment `q0`–`q1` (a point when they are equal)
/// may come within `reach` of a shape inside the sphere `bound`: false
/// only when the segment's midpoint is farther from the sphere's centre
/// than half the segment, the sphere's radius, `reach` and a slack for
/// rounding together. Every distance contact takes to a sphere or capsule
/// (a vertex's φ, a path's or an edge's closest approach, for any pair of
/// segment parameters) is at least that far minus the radius, by the
/// triangle inequality, so a collider this rejects can neither push, nor
/// hold, nor see a tunnel (tested against them in
/// `may_reach_never_rejects_a_contact`).
pub fn segment_may_reach(bound: (DVec3, f64), q0: DVec3, q1: DVec3, reach: f64) -> bool {
    let (centre, radius) = bound;
    let mid = (q0 + q1) * 0.5;
    let half = 0.5 * (q1 - q0).length();
    let gap = (mid - centre).length() - half - radius - reach;
    gap <= REACH_SLACK * (mid.length() + centre.length() + half + radius + reach)
}

/// The colliders (bit k: collider k) that may act on a vertex at `x`
/// (phase 0: also on its path `x_start`–`x_unc`, the tunnelling test's):
/// every plane and SDF, and each sphere or capsule `segment_may_reach`
/// does not reject. `contact_vertex` visits only these, in order, so the
/// GPU's loop runs once per collider that may act rather than once per
/// collider (on a CPU adapter the loop's body costs the same whether or not
/// a lane's contact acts).
pub fn colliders_near_vertex(
    colliders: &[Collider],
    poses: &[ColliderPoses],
    rho: f64,
    phase: u32,
    x: DVec3,
    x_start: DVec3,
    x_unc: DVec3,
) -> u32 {
    let mut near = 0;
    for (k, c) in colliders.iter().enumerate() {
        let p = &poses[k];
        let reach = rho + c.margin;
        let may = match bounding_sphere(&p.shape) {
            None => true,
            Some(b) => {
                segment_may_reach(b, x, x, reach)
                    || (phase == 0 && segment_may_reach(b, p.forward(x_start), x_unc, reach))
            }
        };
        if may {
            near |= 1 << k;
        }
    }
    near
}

/// The colliders after collider `k` (bits above k of `count`).
pub fn colliders_after(k: u32, count: usize) -> u32 {
    let all = if count >= 32 {
        u32::MAX
    } else {
        (1 << count) - 1
    };
    all & !((2u64 << k) - 1) as u32
}

/// Velocity (m/s, world) over the substep of the collider surface point that
/// is at world point `x` at the end of it.
#[inline]
fn surface_velocity(p: &ColliderPoses, x: DVec3, h: f64) -> DVec3 {
    (x - p.back(x)) / h
}

/// Contact of one vertex with every collider in turn: push out, friction
/// (phase 0), and the deepest contact. Returns the new position, the contact
/// and a possible tunnel.
#[allow(clippy::too_many_arguments)] // the WGSL twin's arguments
pub fn contact_vertex(
    colliders: &[Collider],
    poses: &[ColliderPoses],
    rho: f64,
    phase: u32,
    h: f64,
    mut x: DVec3,
    x_start: DVec3,
    x_unc: DVec3,
) -> (DVec3, Contact, Option<(usize, f64, f64)>) {
    let mut best = Contact::default();
    let mut tunnel = None;
    // The colliders that may act, in order; once one moves the vertex,
    // every later one again (the test was of the unmoved position).
    let mut todo = colliders_near_vertex(colliders, poses, rho, phase, x, x_start, x_unc);
    while todo != 0 {
        let k = todo.trailing_zeros() as usize;
        todo &= todo - 1;
        let (c, p) = (&colliders[k], &poses[k]);
        let reach = rho + c.margin;
        if phase == 0 {
            // The path relative to the collider, in its end pose: from the
            // start point carried along with it to the unconstrained end.
            let x0 = p.forward(x_start);
            let moved = (x_unc - x0).length();
            let limit = c.shape.thickness();
            if moved > limit && path_distance_now(p, x0, x_unc) < reach {
                tunnel = Some((k, moved, limit));
            }
        }
        // The WGSL twin sums the move apart from the f32 position and takes
        // a plane's depth from the exact one (the same in exact arithmetic).
        let (phi, n) = distance_now(p, x);
        let d = reach - phi;
        if d > 0.0 {
            todo |= colliders_after(k as u32, colliders.len());
            x += n * d;
            let mut stuck = false;
            if phase == 0 {
                let slip = p.back(x) - x_start;
                let slip_t = slip - n * n.dot(slip);
                let len = slip_t.length();
                if len <= c.static_friction * d {
                    x -= slip_t;
                    stuck = true;
                } else {
                    x -= slip_t * (c.friction * d / len);
                }
            }
            if d > best.depth {
                best = Contact {
                    normal: n,
                    depth: d,
                    stuck,
                    surface_velocity: surface_velocity(p, x, h),
                };
            }
        }
    }
    (x, best, tunnel)
}

/// What the contact stage found in one rod.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactReport {
    /// The first vertex that tunnelled, if any.
    pub tunnel: Option<Tunnel>,
}

/// Kernel `contact` for one rod, the vertex stage: each free vertex pushed
/// out, with friction in phase 0, and its deepest contact recorded. Each
/// vertex is on its own (one GPU invocation per vertex, the loop's body).
/// `pos` is updated in place; phase 0 writes `contact` for every vertex,
/// phase 1 adds the contacts it makes. Then `contact_edges` of parity 0
/// and 1.
#[allow(clippy::too_many_arguments)] // one argument per buffer the WGSL kernel binds
pub fn contact(
    colliders: &[Collider],
    poses: &[ColliderPoses],
    radius: f64,
    inv_mass: &[f64],
    phase: u32,
    h: f64,
    pos: &mut [DVec3],
    pos_unc: &[DVec3],
    vel: &[DVec3],
    contact: &mut [Contact],
) -> ContactReport {
    let n = pos.len();
    let mut report = ContactReport::default();
    for i in 0..n {
        if inv_mass[i] == 0.0 {
            if phase == 0 {
                contact[i] = Contact::default();
            }
            continue;
        }
        let x_start = pos_unc[i] - vel[i] * h;
        let (x, c, tunnel) = contact_vertex(
            colliders, poses, radius, phase, h, pos[i], x_start, pos_unc[i],
        );
        pos[i] = x;
        // Phase 0: the vertex's contact anew.
        if phase == 0 || c.depth > contact[i].depth {
            contact[i] = c;
        }
        if let (Some((k, distance, limit)), None) = (tunnel, report.tunnel) {
            report.tunnel = Some(Tunnel {
                vertex: i,
                collider: k,
                distance,
                limit,
            });
        }
    }
    report
}

/// Kernels `contact_edges_even` (`parity` 0) and `contact_edges_odd` (1)
/// for one rod: the edges `j` with `j mod 2 = parity`, which share no
/// vertex, so each is on its own (one GPU invocation per edge); the two
/// parities in turn are red–black Gauss–Seidel along the rod.
#[allow(clippy::too_many_arguments)] // one argument per buffer the WGSL kernel binds
pub fn contact_edges(
    colliders: &[Collider],
    poses: &[ColliderPoses],
    radius: f64,
    inv_mass: &[f64],
    phase: u32,
    h: f64,
    parity: usize,
    pos: &mut [DVec3],
    pos_unc: &[DVec3],
    vel: &[DVec3],
    contact: &mut [Contact],
) {
    let n = pos.len();
    for j in (parity..n.saturating_sub(1)).step_by(2) {
        contact_edge(
            colliders, poses, radius, inv_mass, phase, h, j, pos, pos_unc, vel, contact,
        );
    }
}

/// Edge `j` (vertices `j`, `j + 1`) against the shapes that may be smaller
/// than an edge, spheres and capsules: the closest point
/// p = (1 − s) xa + s xb moves by exactly d along the normal, and in phase
/// 0 friction acts on p's slip as on a vertex's.
#[allow(clippy::too_many_arguments)] // the WGSL twin's arguments
fn contact_edge(
    colliders: &[Collider],
    poses: &[ColliderPoses],
    radius: f64,
    inv_mass: &[f64],
    phase: u32,
    h: f64,
    j: usize,
    pos: &mut [DVec3],
    pos_unc: &[DVec3],
    vel: &[DVec3],
    contact: &mut [Contact],
) {
    let (wa, wb) = (inv_mass[j], inv_mass[j + 1]);
    for (k, c) in colliders.iter().enumerate() {
        let Some((s, phi, n)) = edge_distance(&poses[k].shape, pos[j], pos[j + 1]) else {
            continue;
        };
        let d = radius + c.margin - phi;
        let den = (1.0 - s) * (1.0 - s) * wa + s * s * wb;
        if d > 0.0 && s > 0.0 && s < 1.0 && den > 0.0 {
            let (ka, kb) = ((1.0 - s) * wa / den, s * wb / den);
            pos[j] += n * (ka * d);
            pos[j + 1] += n * (kb * d);
            let mut stuck = false;
            if phase == 0 {
                let p = pos[j] * (1.0 - s) + pos[j + 1] * s;
                let p_start =
                    (pos_unc[j] - vel[j] * h) * (1.0 - s) + (pos_unc[j + 1] - vel[j + 1] * h) * s;
                let slip = poses[k].back(p) - p_start;
                let slip_t = slip - n * n.dot(slip);
                let len = slip_t.length();
                let undo = if len <= c.static_friction * d {
                    stuck = true;
                    slip_t
                } else {
                    slip_t * (c.friction * d / len)
                };
                pos[j] -= undo * ka;
                pos[j + 1] -= undo * kb;
            }
            // Recorded like a vertex contact, so the filtered projection
            // keeps both ends on the tangent plane (or in place).
            for (i, depth) in [(j, ka * d), (j + 1, kb * d)] {
                if depth > contact[i].depth {
                    contact[i] = Contact {
                        normal: n,
                        depth,
                        stuck,
                        surface_velocity: surface_velocity(&poses[k], pos[i], h),
                    };
                }
            }
        }
    }
}

/// Largest penetration (m) of a free vertex of one rod into a collider at
/// time-`t` poses: `radius − φ`, how far the strand's surface is inside the
/// collider's surface; 0 when none is. Diagnostics, on the host for both
/// backends.
pub fn max_penetration(
    colliders: &[Collider],
    poses: &[Pose],
    radius: f64,
    inv_mass: &[f64],
    pos: &[DVec3],
) -> f64 {
    let mut worst = 0.0f64;
    for (i, x) in pos.iter().enumerate() {
        if inv_mass[i] == 0.0 {
            continue;
        }
        for (c, p) in colliders.iter().zip(poses) {
            let (phi, _) = collider_distance(&c.shape, to_local(p, *x));
            worst = worst.max(radius - phi);
        }
    }
    for j in 0..pos.len().saturating_sub(1) {
        if inv_mass[j] == 0.0 && inv_mass[j + 1] == 0.0 {
            continue;
        }
        for (c, p) in colliders.iter().zip(poses) {
            // Interior points only, as the kernel: a root edge touches the
            // scalp at its anchored end by construction.
            let e = edge_distance(&c.shape, to_local(p, pos[j]), to_local(p, pos[j + 1]));
            if let Some((_, phi, _)) = e.filter(|&(s, _, _)| s > 0.0 && s < 1.0) {
                worst = worst.max(radius - phi);
            }
        }
    }
    worst
}
