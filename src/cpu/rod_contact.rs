//! Rod–rod contact (`[rod_contact]`, `model::rod_contact`): the edges of
//! the member rods kept apart by their radii, with Coulomb friction, over
//! all rods at once (the only stage besides the grid that needs other rods;
//! `cpu::substep` runs it between the halves of a substep).
//!
//! Every edge is a capsule about its core segment with the rod's contact
//! radius. Two edges touch when their segments come closer than
//! `reach = r_a + r_b + margin`. Edges of one rod touch only where the rest
//! arc length between them is at least `π/2 · reach` (`excluded`): a rod
//! that turns back on itself at its tightest, a half circle of diameter
//! `reach`, brings its two legs to `reach` after that arc, so nearer edges
//! (neighbours above all, which share a vertex) are the rod's own shape, not
//! a contact.
//!
//! A substep (`rod_contact`):
//! 1. **Broad phase** (`candidate_pairs`): each edge's box over its motion in
//!    the substep (both ends at the start and now), grown by its share of
//!    `reach` and the detection skin, goes into the cells of a uniform grid
//!    it covers; the (cell, edge) list is sorted and every two edges of a
//!    cell whose boxes overlap are a candidate, found only in the cell that
//!    holds the low corner of the boxes' intersection (so once), and the
//!    pairs sorted. Sorting makes it deterministic.
//! 2. **Continuous detection** (`first_contact`): the vertices move on
//!    straight lines from their start to their present positions; the
//!    distance between two segments changes no faster than the sum of the
//!    largest motion of a vertex of each, so conservative advancement steps
//!    the time by (distance − reach)/that bound until the segments are
//!    within the skin of touching. The direction between the closest points
//!    then, before they could have crossed, is the contact's normal: a rod
//!    that moves several diameters in a substep is pushed back to the side
//!    it came from, never through.
//! 3. **Response** (`push`): Gauss–Seidel over the contacts in their sorted
//!    order, `ITERATIONS` sweeps. The closest points `p = (1−s)a₀ + s a₁`,
//!    `q = (1−u)b₀ + u b₁` are pushed apart along the normal to `reach`,
//!    each vertex by its inverse mass times its barycentric weight
//!    (the position-level constraint `n·(p − q) ≥ reach`). In the first
//!    sweep, friction acts on the relative displacement of the two points
//!    over the substep, as the colliders' (`cpu::contact`): its tangential
//!    part is removed when within `μs · depth` (static) and shortened by
//!    `μk · depth` otherwise (kinetic), with `depth` the normal push.
//!
//! The inextensibility projection of each rod then alternates with
//! detection anew over the substep's whole path and a sweep (`ROUNDS`;
//! `cpu::substep`), and the velocities take in every move as the
//! projection's do (`project_velocity`).

use glam::DVec3;
use rayon::prelude::*;

use super::contact::{Contact, segment_segment};
use super::frames::any_perpendicular;
use crate::model::rods::RodSet;

/// Gauss–Seidel sweeps over the contacts after detection.
pub const ITERATIONS: u32 = 4;

/// Most rounds of (each rod's projection, detection anew, one sweep over
/// the contacts) after those, before the substep's second half
/// (`cpu::substep`); they stop once a projection leaves no pair deeper
/// than `TOLERANCE · reach`.
pub const ROUNDS: u32 = 16;

/// See `ROUNDS`.
pub const TOLERANCE: f64 = 1e-3;

/// A pair that the rounds leave deeper than this fraction of its reach
/// stops the run (`Unresolved`): the strands are held into each other
/// (by clamps, by anchors) more than contact and the lengths can both
/// allow, or move too far in a substep for the rounds.
pub const UNRESOLVED: f64 = 0.1;

/// Detection skin: pairs that come within `reach · (1 + SKIN)` are
/// contacts (their push is zero until they are within `reach`).
pub const SKIN: f64 = 0.05;

/// Most steps of conservative advancement per pair and substep; a pair that
/// has not touched by then is a contact with the normal it has then (the
/// side it is on has not changed).
const ADVANCE_STEPS: u32 = 64;

/// An edge that takes part in rod–rod contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactEdge {
    /// Its two vertices (global indices).
    pub v: [usize; 2],
    /// Its rod.
    pub rod: usize,
    /// Its index within the rod.
    pub local: usize,
    /// Rest arc length from the rod's first vertex to the edge's first (m).
    pub arc: f64,
    /// Its rest length (m).
    pub len: f64,
    /// The rod's contact radius (m).
    pub radius: f64,
}

/// Every edge of the rods that take part, rod by rod.
pub fn contact_edges(rods: &RodSet) -> Vec<ContactEdge> {
    let mut out = Vec::new();
    for (r, &member) in rods.rod_contact.member.iter().enumerate() {
        if !member {
            continue;
        }
        let first = rods.vertex_offset[r];
        let mut arc = 0.0;
        for (j, e) in rods.edges(r).enumerate() {
            let len = rods.rest_len[e];
            out.push(ContactEdge {
                v: [first + j, first + j + 1],
                rod: r,
                local: j,
                arc,
                len,
                radius: rods.material[r].radius,
            });
            arc += len;
        }
    }
    out
}

/// The distance at which edges `a` and `b` touch.
#[inline]
pub fn reach(a: &ContactEdge, b: &ContactEdge, margin: f64) -> f64 {
    a.radius + b.radius + margin
}

/// Whether edges `a` and `b` cannot be a contact: the same edge, or edges
/// of one rod nearer than `π/2 · reach` along it (neighbours included).
pub fn excluded(a: &ContactEdge, b: &ContactEdge, reach: f64) -> bool {
    if a.rod != b.rod {
        return false;
    }
    let (first, second) = if a.local < b.local { (a, b) } else { (b, a) };
    if second.local <= first.local + 1 {
        return true;
    }
    let gap = second.arc - (first.arc + first.len);
    gap < std::f64::consts::FRAC_PI_2 * reach
}

/// The candidate pairs (indices into `edges`, first < second), sorted:
/// edges whose boxes over the substep's motion, from `start` to `pos`,
/// grown by `(radius + margin/2)(1 + SKIN)`, overlap, and that
/// `excluded` allows. Sorted cells of side twice the median box's
/// largest extent (at least the largest reach, and at least the scene's
/// extent over 2²¹ − 1, so that a cell's key fits 21 bits an axis).
pub fn candidate_pairs(
    edges: &[ContactEdge],
    start: &[DVec3],
    pos: &[DVec3],
    margin: f64,
) -> Vec<[u32; 2]> {
    if edges.len() < 2 {
        return Vec::new();
    }
    let boxes: Vec<(DVec3, DVec3)> = edges
        .iter()
        .map(|e| {
            let pts = [start[e.v[0]], start[e.v[1]], pos[e.v[0]], pos[e.v[1]]];
            let lo = pts.iter().copied().fold(DVec3::INFINITY, DVec3::min);
            let hi = pts.iter().copied().fold(DVec3::NEG_INFINITY, DVec3::max);
            let grow = DVec3::splat((e.radius + 0.5 * margin) * (1.0 + SKIN));
            (lo - grow, hi + grow)
        })
        .collect();
    let mut extents: Vec<f64> = boxes
        .iter()
        .map(|(lo, hi)| (*hi - *lo).max_element())
        .collect();
    let middle = extents.len() / 2;
    let median = *extents
        .select_nth_unstable_by(middle, |a, b| a.total_cmp(b))
        .1;
    let widest = edges.iter().map(|e| e.radius).fold(0.0, f64::max);
    // Cells are numbered from the lowest box corner, 21 bits an axis, so
    // that a cell is one u64 (the sort's key); a scene too wide for that at
    // this cell size takes larger cells.
    let low = boxes.iter().fold(DVec3::INFINITY, |m, b| m.min(b.0));
    let high = boxes.iter().fold(DVec3::NEG_INFINITY, |m, b| m.max(b.1));
    if !(high - low).is_finite() {
        // A vertex that is not finite: the step's check stops the run with
        // its cause; no cell grid spans it.
        return Vec::new();
    }
    const AXIS_CELLS: f64 = (1u64 << 21) as f64;
    let cell = (2.0 * median)
        .max(2.0 * widest + margin)
        .max((high - low).max_element() / (AXIS_CELLS - 1.0));
    let key = |x: DVec3| {
        let k = ((x - low) / cell).floor().as_u64vec3();
        [k.x, k.y, k.z]
    };
    let pack = |k: [u64; 3]| (k[0] << 42) | (k[1] << 21) | k[2];
    let lows: Vec<[u64; 3]> = boxes.iter().map(|b| key(b.0)).collect();
    let mut entries: Vec<(u64, u32)> = Vec::new();
    for (i, (_, hi)) in boxes.iter().enumerate() {
        let (a, b) = (lows[i], key(*hi));
        for x in a[0]..=b[0] {
            for y in a[1]..=b[1] {
                for z in a[2]..=b[2] {
                    entries.push((pack([x, y, z]), i as u32));
                }
            }
        }
    }
    entries.par_sort_unstable();
    // Each overlapping pair is found in the one cell that holds the low
    // corner of the two boxes' intersection (every cell of the
    // intersection holds both), so no pair is found twice.
    let runs: Vec<&[(u64, u32)]> = entries.chunk_by(|a, b| a.0 == b.0).collect();
    let (boxes, lows) = (&boxes, &lows);
    let mut pairs: Vec<[u32; 2]> = runs
        .par_iter()
        .flat_map_iter(|run| {
            let cell_key = run[0].0;
            let local: Vec<(DVec3, DVec3, u32)> = run
                .iter()
                .map(|&(_, i)| (boxes[i as usize].0, boxes[i as usize].1, i))
                .collect();
            let mut found = Vec::new();
            for (k, &(lo_i, hi_i, i)) in local.iter().enumerate() {
                for &(lo_j, hi_j, j) in &local[k + 1..] {
                    if !(lo_i.cmple(hi_j).all() && lo_j.cmple(hi_i).all()) {
                        continue;
                    }
                    let (i, j) = (i as usize, j as usize);
                    let (li, lj) = (lows[i], lows[j]);
                    let home = pack([li[0].max(lj[0]), li[1].max(lj[1]), li[2].max(lj[2])]);
                    let (ei, ej) = (&edges[i], &edges[j]);
                    if home == cell_key && !excluded(ei, ej, reach(ei, ej, margin)) {
                        found.push([i.min(j) as u32, i.max(j) as u32]);
                    }
                }
            }
            found
        })
        .collect();
    pairs.par_sort_unstable();
    pairs
}

/// Closest points of segments `x[0]`–`x[1]` and `x[2]`–`x[3]`: their
/// parameters and the vector from the second's point to the first's.
#[inline]
fn closest(x: &[DVec3; 4]) -> (f64, f64, DVec3) {
    let (s, u) = segment_segment(x[0], x[1], x[2], x[3]);
    let p = x[0].lerp(x[1], s);
    let q = x[2].lerp(x[3], u);
    (s, u, p - q)
}

/// The normal of a contact between segments `x[0]`–`x[1]` and
/// `x[2]`–`x[3]` whose vertices move on straight lines from `start` to
/// `end` over the substep, if they come within `reach · (1 + SKIN)`: the
/// unit direction from the second's closest point to the first's at the
/// first time they do (conservative advancement), or where they cross
/// exactly, the normal of both segments' directions.
pub fn first_contact(start: [DVec3; 4], end: [DVec3; 4], reach: f64) -> Option<DVec3> {
    let motion: [DVec3; 4] = std::array::from_fn(|i| end[i] - start[i]);
    let len = |i: usize| motion[i].length();
    let speed = len(0).max(len(1)) + len(2).max(len(3));
    let touching = reach * (1.0 + SKIN);
    let mut tau = 0.0f64;
    for _ in 0..ADVANCE_STEPS {
        let x: [DVec3; 4] = std::array::from_fn(|i| start[i] + motion[i] * tau);
        let (_, _, d) = closest(&x);
        let dist = d.length();
        if dist <= touching {
            return Some(if dist > 0.0 {
                d / dist
            } else {
                crossing_normal(&x)
            });
        }
        if tau >= 1.0 || speed == 0.0 {
            return None;
        }
        tau = (tau + (dist - reach) / speed).min(1.0);
    }
    // Still apart after the steps (a long graze): the side they are on.
    let x: [DVec3; 4] = std::array::from_fn(|i| start[i] + motion[i] * tau);
    let (_, _, d) = closest(&x);
    Some(d.normalize_or(crossing_normal(&x)))
}

/// A unit normal of both segments where their closest points coincide.
fn crossing_normal(x: &[DVec3; 4]) -> DVec3 {
    let (a, b) = (x[1] - x[0], x[3] - x[2]);
    a.cross(b)
        .try_normalize()
        .unwrap_or_else(|| any_perpendicular(a.normalize_or(DVec3::X)))
}

/// A contact of the substep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Touch {
    /// The vertices of the two edges: first edge's two, then the second's.
    pub v: [usize; 4],
    /// Unit normal, from the second edge towards the first.
    pub normal: DVec3,
    /// The distance the core segments keep (m).
    pub reach: f64,
    /// Whether a sweep of the substep pushed it (`push`).
    pub pushed: bool,
}

/// Coulomb friction of a sweep: coefficients and where the vertices were
/// at the substep's start.
#[derive(Clone, Copy)]
pub struct Friction<'a> {
    /// Kinetic coefficient μk.
    pub kinetic: f64,
    /// Static coefficient μs.
    pub static_: f64,
    /// Positions at the substep's start.
    pub start: &'a [DVec3],
}

/// Push contact `t`'s two edges apart to its reach along its normal (and
/// with `friction`, its tangential slip over the substep reduced);
/// returns how far within reach the edges were (m, ≤ 0: not touching).
pub fn push(t: &Touch, pos: &mut [DVec3], inv_mass: &[f64], friction: Option<Friction>) -> f64 {
    let x = t.v.map(|v| pos[v]);
    let (s, u, d) = closest(&x);
    let depth = t.reach - t.normal.dot(d);
    if depth <= 0.0 {
        return depth;
    }
    let bary = [1.0 - s, s, 1.0 - u, u];
    let w: [f64; 4] = std::array::from_fn(|i| inv_mass[t.v[i]] * bary[i]);
    let total: f64 = (0..4).map(|i| w[i] * bary[i]).sum();
    if total <= 0.0 {
        return depth;
    }
    let mut change = t.normal * depth;
    if let Some(f) = friction {
        let x0 = t.v.map(|v| f.start[v]);
        let moved = d - (x0[0].lerp(x0[1], s) - x0[2].lerp(x0[3], u));
        let slip = moved - t.normal * t.normal.dot(moved);
        let length = slip.length();
        if length <= f.static_ * depth {
            change -= slip;
        } else if length > 0.0 {
            change -= slip * (f.kinetic * depth / length);
        }
    }
    for i in 0..4 {
        let sign = if i < 2 { 1.0 } else { -1.0 };
        pos[t.v[i]] += change * (sign * w[i] / total);
    }
    depth
}

/// The contacts of the substep: candidates from `start` to `pos`, each
/// with its normal from continuous detection, in the candidates' order.
pub fn detect(rods: &RodSet, start: &[DVec3], pos: &[DVec3]) -> Vec<Touch> {
    let edges = contact_edges(rods);
    let margin = rods.rod_contact.margin;
    let pairs = candidate_pairs(&edges, start, pos, margin);
    pairs
        .par_iter()
        .filter_map(|&[i, j]| {
            let (a, b) = (&edges[i as usize], &edges[j as usize]);
            let v = [a.v[0], a.v[1], b.v[0], b.v[1]];
            let reach = reach(a, b, margin);
            first_contact(v.map(|k| start[k]), v.map(|k| pos[k]), reach).map(|normal| Touch {
                v,
                normal,
                reach,
                pushed: false,
            })
        })
        .collect()
}

/// Records, for every vertex of a touch within `reach · (1 + SKIN)` at
/// `pos` whose push would move it, that touch's normal (the second edge's
/// vertices its opposite) as a contact of the filtered projection
/// (`project::apply_inv_mass`): the projection then moves the vertex only
/// in that plane, so it cannot pull the rods back into each other, and
/// restores the lengths by moving the rest of the rod. Where a vertex has
/// several, the one within reach by the most. Returns the vertices marked,
/// for `unmark`.
pub fn mark(
    touches: &[Touch],
    pos: &[DVec3],
    inv_mass: &[f64],
    contact: &mut [Contact],
) -> Vec<usize> {
    let mut marked = Vec::new();
    for t in touches {
        let x = t.v.map(|v| pos[v]);
        let (s, u, d) = closest(&x);
        let within = t.reach * (1.0 + SKIN) - t.normal.dot(d);
        if within <= 0.0 {
            continue;
        }
        let bary = [1.0 - s, s, 1.0 - u, u];
        for (i, (&v, &weight)) in t.v.iter().zip(&bary).enumerate() {
            if weight <= 0.0 || inv_mass[v] == 0.0 || contact[v].depth >= within {
                continue;
            }
            if contact[v].depth == 0.0 {
                marked.push(v);
            }
            contact[v] = Contact {
                normal: if i < 2 { t.normal } else { -t.normal },
                depth: within,
                ..Contact::default()
            };
        }
    }
    marked
}

/// Clears the contacts `mark` recorded.
pub fn unmark(marked: &[usize], contact: &mut [Contact]) {
    for &v in marked {
        contact[v] = Contact::default();
    }
}

/// One Gauss–Seidel sweep over `touches` in order; returns the deepest
/// overlap found (m, 0 with none).
pub fn sweep(
    touches: &mut [Touch],
    pos: &mut [DVec3],
    inv_mass: &[f64],
    friction: Option<Friction>,
) -> f64 {
    let mut deepest = 0.0f64;
    for t in touches {
        let depth = push(t, pos, inv_mass, friction);
        t.pushed |= depth > 0.0;
        deepest = deepest.max(depth);
    }
    deepest
}

/// A contact that the rounds could not resolve (`UNRESOLVED`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unresolved {
    /// The two rods (the same rod for self-contact).
    pub rods: [usize; 2],
    /// The two edges, within their rods.
    pub edges: [usize; 2],
    /// How far within reach the edges are (m).
    pub depth: f64,
    /// The distance they should keep (m).
    pub reach: f64,
}

/// The deepest of `touches` at `pos`, if deeper than `UNRESOLVED` of its
/// reach.
pub fn unresolved(rods: &RodSet, touches: &[Touch], pos: &[DVec3]) -> Option<Unresolved> {
    let (depth, t) = touches
        .iter()
        .map(|t| {
            let (_, _, d) = closest(&t.v.map(|v| pos[v]));
            (t.reach - t.normal.dot(d), t)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    if depth <= UNRESOLVED * t.reach {
        return None;
    }
    let locate = |v: usize| {
        let r = rods.rod_of_vertex(v);
        (r, v - rods.vertex_offset[r])
    };
    let ((ra, ea), (rb, eb)) = (locate(t.v[0]), locate(t.v[2]));
    Some(Unresolved {
        rods: [ra, rb],
        edges: [ea, eb],
        depth,
        reach: t.reach,
    })
}

/// Contact is inelastic (restitution 0, as with colliders): for each
/// touch a sweep pushed, the part of the two closest points' relative
/// velocity that separates them along the normal is removed, shared as the
/// push is. A push that ends a substep's approach leaves no such part; one
/// that had to undo more than that (the projection's, a neighbour's) would
/// otherwise throw the rods apart.
pub fn inelastic(touches: &[Touch], pos: &[DVec3], vel: &mut [DVec3], inv_mass: &[f64]) {
    for t in touches.iter().filter(|t| t.pushed) {
        let x = t.v.map(|v| pos[v]);
        let (s, u, _) = closest(&x);
        let bary = [1.0 - s, s, 1.0 - u, u];
        let w: [f64; 4] = std::array::from_fn(|i| inv_mass[t.v[i]] * bary[i]);
        let total: f64 = (0..4).map(|i| w[i] * bary[i]).sum();
        if total <= 0.0 {
            continue;
        }
        let rel = (vel[t.v[0]] * bary[0] + vel[t.v[1]] * bary[1])
            - (vel[t.v[2]] * bary[2] + vel[t.v[3]] * bary[3]);
        let out = t.normal.dot(rel);
        if out <= 0.0 {
            continue;
        }
        let change = -t.normal * out;
        for i in 0..4 {
            let sign = if i < 2 { 1.0 } else { -1.0 };
            vel[t.v[i]] += change * (sign * w[i] / total);
        }
    }
}

/// The deepest penetration of two member edges' capsules at `pos` (m, 0
/// with none): the sum of their radii minus the distance of their core
/// segments (the margin is not counted, as `Diagnostics::max_penetration`
/// does not count the colliders').
pub fn max_penetration(rods: &RodSet, pos: &[DVec3]) -> f64 {
    let edges = contact_edges(rods);
    let margin = rods.rod_contact.margin;
    candidate_pairs(&edges, pos, pos, margin)
        .par_iter()
        .map(|&[i, j]| {
            let (a, b) = (&edges[i as usize], &edges[j as usize]);
            let x = [a.v[0], a.v[1], b.v[0], b.v[1]].map(|k| pos[k]);
            (a.radius + b.radius - closest(&x).2.length()).max(0.0)
        })
        .reduce(|| 0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rods as random walks, each vertex moved by a random step over the
    /// substep; edge radii vary so that reaches differ.
    fn walks(rods: usize, edges: usize, seed: u64) -> (Vec<ContactEdge>, Vec<DVec3>, Vec<DVec3>) {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let mut next = move || rng.random_range(-0.5..0.5);
        let (mut list, mut start, mut pos) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rods {
            let first = start.len();
            let mut x = DVec3::new(next(), next(), next()) * 0.05;
            let radius = 1e-3 * (1.0 + next());
            let mut arc = 0.0;
            for j in 0..=edges {
                start.push(x);
                pos.push(x + DVec3::new(next(), next(), next()) * 4e-3);
                if j < edges {
                    let step = DVec3::new(next(), next(), next()).normalize() * 4e-3;
                    list.push(ContactEdge {
                        v: [first + j, first + j + 1],
                        rod: r,
                        local: j,
                        arc,
                        len: step.length(),
                        radius,
                    });
                    arc += step.length();
                    x += step;
                }
            }
        }
        (list, start, pos)
    }

    /// The sorted cells find exactly the pairs that testing every two
    /// edges' grown boxes finds (and `excluded` allows), each once, in
    /// order.
    #[test]
    fn sorted_cells_find_every_overlapping_pair_once() {
        let margin = 2e-4;
        let (edges, start, pos) = walks(12, 40, 7);
        let grown = |e: &ContactEdge| {
            let pts = [start[e.v[0]], start[e.v[1]], pos[e.v[0]], pos[e.v[1]]];
            let lo = pts.iter().copied().fold(DVec3::INFINITY, DVec3::min);
            let hi = pts.iter().copied().fold(DVec3::NEG_INFINITY, DVec3::max);
            let g = DVec3::splat((e.radius + 0.5 * margin) * (1.0 + SKIN));
            (lo - g, hi + g)
        };
        let mut every = Vec::new();
        for i in 0..edges.len() {
            for j in i + 1..edges.len() {
                let ((a0, a1), (b0, b1)) = (grown(&edges[i]), grown(&edges[j]));
                let overlap = a0.cmple(b1).all() && b0.cmple(a1).all();
                let (a, b) = (&edges[i], &edges[j]);
                if overlap && !excluded(a, b, reach(a, b, margin)) {
                    every.push([i as u32, j as u32]);
                }
            }
        }
        assert!(
            every.len() > 100,
            "the fixture should be dense: {}",
            every.len()
        );
        assert_eq!(candidate_pairs(&edges, &start, &pos, margin), every);
    }

    /// Continuous detection: a segment that passes through another within
    /// one substep (10 reaches of motion) is a contact, with the normal of
    /// the side it came from; one that stops short of reach is none.
    #[test]
    fn a_segment_that_passes_through_is_caught_on_its_side() {
        let reach = 2e-3;
        let fixed = [DVec3::new(-0.01, 0.0, 0.0), DVec3::new(0.01, 0.0, 0.0)];
        let above = [DVec3::new(0.0, -0.01, 0.01), DVec3::new(0.0, 0.01, 0.01)];
        let below = above.map(|x| x - DVec3::Z * 0.02);
        let normal = first_contact(
            [above[0], above[1], fixed[0], fixed[1]],
            [below[0], below[1], fixed[0], fixed[1]],
            reach,
        )
        .expect("it passes through");
        assert!((normal - DVec3::Z).length() < 1e-12, "normal {normal}");
        let short = above.map(|x| x - DVec3::Z * (0.01 - 1.1 * reach * (1.0 + SKIN)));
        assert_eq!(
            first_contact(
                [above[0], above[1], fixed[0], fixed[1]],
                [short[0], short[1], fixed[0], fixed[1]],
                reach
            ),
            None
        );
    }
}
