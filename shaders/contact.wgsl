#import common
#import project
#import step_uniform

// Kernels `contact`, `contact_edges_even` and `contact_edges_odd`
// (src/cpu/contact.rs, same names): one invocation per vertex, then per
// edge of one parity and of the other (red–black); `contact_rod` walks the three
// stages per rod. Free vertices
// closer than strand radius + margin to a collider are pushed out along the
// normal; in phase 0 Coulomb friction acts on the displacement relative to
// the collider's surface and each vertex's deepest contact is recorded in
// `contacts` for the filtered projection; edges are pushed out of spheres and
// capsules that their endpoints miss. Positions are relative to the rod's
// origin, and so are the colliders: a sphere, capsule or plane where its
// pose at the end of the substep puts it (`collider_now`), so no vertex is
// turned into a collider's frame but an SDF's (`to_local`:
// R⁻¹((origin − offset) + x)), and the collider's motion over the substep
// is one rotation (`back`, `forward`).

// Whether the scene has colliders of each kind, set per pipeline
// (src/gpu/pipelines.rs `ColliderKinds`): the code of a kind the scene lacks
// compiles out, which a CPU adapter, running every branch under a lane mask,
// would otherwise pay for. True by default (every kind).
override HAS_SPHERE: bool = true;
override HAS_CAPSULE: bool = true;
override HAS_PLANE: bool = true;
override HAS_SDF: bool = true;

// Collider j's values as contact reads them, at its index.
struct ColliderAt {
    c: Collider,
    start: Pose,
    end: Pose,
    now: ColliderNow,
}

fn collider_at(j: u32) -> ColliderAt {
    return ColliderAt(colliders.items[j], step_collider_start(j), step_collider_end(j), step_collider_now(j));
}

fn rotate_inverse(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    return rotate(vec4<f32>(-q.xyz, q.w), v);
}

fn to_local(p: Pose, x: vec3<f32>, origin: vec3<f32>) -> vec3<f32> {
    return rotate_inverse(p.rotation, (origin - p.offset.xyz) + x);
}

// Collider k's motion over the substep, in the world frame relative to the
// rod's origin (src/cpu/contact.rs `ColliderPoses::back`, `forward`): `back`
// takes a point fixed to the collider from where it is at the end of the
// substep to where it was at the start, `forward` the other way, each one
// rotation (`ColliderNow.motion`) rather than one into the collider's frame
// and one out of it.
// For a plane each is x plus the motion, x + (s − e) + (R r − r) with r
// the point from the pivot, rather than (s − origin) + R r: a plane's
// pivot can be metres from the rod's origin, where the latter rounds the
// point by ε|r| anew as it moves, against a friction that scales with one
// substep's penetration (~g h², 5e-6 m), and the plane's distance
// (`collider_distance`) does not round it so. A sphere's or capsule's
// distance is taken from its core placed relative to the origin, and the
// point rounded with it keeps hair resting on a head where the CPU's rests
// (tests/gpu_whole_steps.rs). src/cpu/contact.rs: the same in exact
// arithmetic.
fn back(k: u32, x: vec3<f32>, origin: vec3<f32>) -> vec3<f32> {
    let m = collider_at(k);
    let s = m.start.offset.xyz;
    let e = m.end.offset.xyz;
    if (HAS_PLANE && m.c.kind == PLANE) {
        let r = (origin - e) + x;
        return x + (s - e) + (rotate(m.now.motion, r) - r);
    }
    return (s - origin) + rotate(m.now.motion, (origin - e) + x);
}

fn forward(k: u32, x: vec3<f32>, origin: vec3<f32>) -> vec3<f32> {
    let m = collider_at(k);
    let s = m.start.offset.xyz;
    let e = m.end.offset.xyz;
    if (HAS_PLANE && m.c.kind == PLANE) {
        let r = (origin - s) + x;
        return x + (e - s) + (rotate_inverse(m.now.motion, r) - r);
    }
    return (e - origin) + rotate_inverse(m.now.motion, (origin - s) + x);
}

// Velocity over the substep of collider k's surface point at x at its end
// (src/cpu/contact.rs `surface_velocity`).
fn surface_velocity(k: u32, x: vec3<f32>, origin: vec3<f32>) -> vec3<f32> {
    return -back_motion(k, x, origin) / params.h;
}

// `back(k, x, origin) − x`, the surface's motion under x over the substep
// undone; for a plane without x itself, which would round it by ε|x|.
fn back_motion(k: u32, x: vec3<f32>, origin: vec3<f32>) -> vec3<f32> {
    let m = collider_at(k);
    if (HAS_PLANE && m.c.kind == PLANE) {
        let r = (origin - m.end.offset.xyz) + x;
        return (m.start.offset.xyz - m.end.offset.xyz) + (rotate(m.now.motion, r) - r);
    }
    return back(k, x, origin) - x;
}

// Collider c (number k) at the end of the substep in the world frame,
// relative to the rod's origin: a sphere's, capsule's or plane's points
// where the end pose puts them (`ColliderNow`), so the distances of a
// vertex or an edge to it need no rotation (src/cpu/contact.rs
// `ColliderPoses::shape`). An SDF stays in its own frame
// (`distance_now`, `path_distance_now`).
fn collider_now(c: Collider, k: u32, origin: vec3<f32>) -> Collider {
    if (HAS_SDF && c.kind == SDF) {
        return c;
    }
    var w = c;
    let m = collider_at(k);
    let pivot = m.end.offset.xyz - origin;
    let s = m.now;
    w.p0 = vec4<f32>(pivot + s.p0.xyz, 0.0);
    if (c.kind == PLANE) {
        w.p1 = vec4<f32>(s.p1.xyz, 0.0);
        // The plane's height above the rod's origin along its normal, for
        // `collider_distance`.
        w.p0.w = dot(w.p0.xyz, w.p1.xyz);
    } else {
        w.p1 = vec4<f32>(pivot + s.p1.xyz, 0.0);
    }
    return w;
}

// |d| − r, as (|d|² − r²)/(|d| + r): the square root's error scales the
// gap by a few ulps of itself, not of |d| (src/cpu/contact.rs computes
// |d| − r, the same in exact arithmetic). A GPU's square root is off by a
// few ulps (WGSL allows ~4.5), and a few ulps of a 0.1 m head's radius,
// ~5e-8 m, moved the surface under hair resting on it enough to flip its
// friction between sticking and sliding: with such errors emulated
// (`GpuContext::with_approximate_math`) the Jacobi hair of
// tests/gpu_whole_steps.rs left the CPU's path by 3.3e-4 m, against
// 1.1e-6 m with correctly rounded ones. 0 where d and r are both 0 (a
// collider of radius 0 made through the library, a point on its core).
fn gap_beyond(d: vec3<f32>, r: f32) -> f32 {
    let sum = length(d) + r;
    if (sum == 0.0) {
        return 0.0;
    }
    return (dot(d, d) - r * r) / sum;
}

fn direction(d: vec3<f32>) -> vec3<f32> {
    let l = length(d);
    if (l > 0.0) {
        return d / l;
    }
    return vec3<f32>(0.0, 1.0, 0.0);
}

struct Distance {
    phi: f32,               // signed distance to the surface (m)
    normal: vec3<f32>,      // outward unit normal, in the frame the shape is given in
}

fn sdf_at(c: Collider, x: u32, y: u32, z: u32) -> f32 {
    return textureLoad(sdf, vec3<i32>(i32(x), i32(y), i32(z + c.dims.w)), 0).x;
}

// Trilinear interpolation and its gradient (src/cpu/contact.rs `sdf_sample`).
fn sdf_sample(c: Collider, q: vec3<f32>) -> Distance {
    let dims = c.dims.xyz;
    let u = (q - c.p0.xyz) / c.cell;
    let hi = vec3<f32>(dims - vec3<u32>(1u));
    let uc = clamp(u, vec3<f32>(0.0), hi);
    let outside = length(u - uc) * c.cell;
    let i0 = min(vec3<u32>(floor(uc)), dims - vec3<u32>(2u));
    let t = uc - vec3<f32>(i0);
    let c000 = sdf_at(c, i0.x, i0.y, i0.z);
    let c100 = sdf_at(c, i0.x + 1u, i0.y, i0.z);
    let c010 = sdf_at(c, i0.x, i0.y + 1u, i0.z);
    let c110 = sdf_at(c, i0.x + 1u, i0.y + 1u, i0.z);
    let c001 = sdf_at(c, i0.x, i0.y, i0.z + 1u);
    let c101 = sdf_at(c, i0.x + 1u, i0.y, i0.z + 1u);
    let c011 = sdf_at(c, i0.x, i0.y + 1u, i0.z + 1u);
    let c111 = sdf_at(c, i0.x + 1u, i0.y + 1u, i0.z + 1u);
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
    return Distance(value + outside, direction(vec3<f32>(gx, gy, gz)));
}

fn segment_parameter(p: vec3<f32>, a: vec3<f32>, b: vec3<f32>) -> f32 {
    let ab = b - a;
    let l2 = dot(ab, ab);
    if (l2 > 0.0) {
        return clamp(dot(p - a, ab) / l2, 0.0, 1.0);
    }
    return 0.0;
}

fn collider_distance(c: Collider, q: vec3<f32>) -> Distance {
    if (HAS_PLANE && c.kind == PLANE) {
        // n·q − n·p rather than n·(q − p): the point p of a plane can be
        // metres from the rod's origin, where q − p rounds by ε|p| anew
        // as q moves, against a friction that scales with the substep's
        // penetration, ~g h² (5e-6 m); n·p is rounded once, so the surface
        // the rod slides on stays where it is (src/cpu/contact.rs computes
        // n·(q − p), the same in exact arithmetic).
        return Distance(dot(q, c.p1.xyz) - c.p0.w, c.p1.xyz);
    }
    if (HAS_SDF && c.kind == SDF) {
        return sdf_sample(c, q);
    }
    if (HAS_SPHERE || HAS_CAPSULE) {
        var core = c.p0.xyz;
        if (HAS_CAPSULE && c.kind == CAPSULE) {
            core += (c.p1.xyz - c.p0.xyz) * segment_parameter(q, c.p0.xyz, c.p1.xyz);
        }
        let d = q - core;
        return Distance(gap_beyond(d, c.radius), direction(d));
    }
    // No collider of another kind reaches here (the pipeline's kinds are
    // the scene's).
    return Distance(3.0e38, vec3<f32>(0.0, 1.0, 0.0));
}

// Closest points of segments p0–p1 (s) and q0–q1 (t) (src/cpu/contact.rs `segment_segment`).
fn segment_segment(p0: vec3<f32>, p1: vec3<f32>, q0: vec3<f32>, q1: vec3<f32>) -> vec2<f32> {
    let d1 = p1 - p0;
    let d2 = q1 - q0;
    let r = p0 - q0;
    let a = dot(d1, d1);
    let e = dot(d2, d2);
    let f = dot(d2, r);
    if (e <= 0.0) {
        return vec2<f32>(segment_parameter(q0, p0, p1), 0.0);
    }
    let c = dot(d1, r);
    let b = dot(d1, d2);
    let denom = a * e - b * b;
    var s = 0.0;
    if (denom > 1e-6 * a * e) {
        s = clamp((b * f - c * e) / denom, 0.0, 1.0);
    }
    var t = (b * s + f) / e;
    if (t < 0.0) {
        t = 0.0;
        s = clamp(-c / a, 0.0, 1.0);
    } else if (t > 1.0) {
        t = 1.0;
        s = clamp((b - c) / a, 0.0, 1.0);
    }
    return vec2<f32>(s, t);
}

struct EdgeDistance {
    found: bool,            // sphere or capsule
    s: f32,                 // edge parameter of the closest point
    phi: f32,
    normal: vec3<f32>,
}

fn edge_distance(c: Collider, qa: vec3<f32>, qb: vec3<f32>) -> EdgeDistance {
    var s = 0.0;
    var core = vec3<f32>(0.0);
    if (HAS_SPHERE && c.kind == SPHERE) {
        s = segment_parameter(c.p0.xyz, qa, qb);
        core = c.p0.xyz;
    } else if (HAS_CAPSULE && c.kind == CAPSULE) {
        let st = segment_segment(qa, qb, c.p0.xyz, c.p1.xyz);
        s = st.x;
        core = c.p0.xyz + (c.p1.xyz - c.p0.xyz) * st.y;
    } else {
        return EdgeDistance(false, 0.0, 0.0, vec3<f32>(0.0));
    }
    let d = qa + (qb - qa) * s - core;
    return EdgeDistance(true, s, gap_beyond(d, c.radius), direction(d));
}

fn path_distance(c: Collider, q0: vec3<f32>, q1: vec3<f32>) -> f32 {
    if ((HAS_SPHERE && c.kind == SPHERE) || (HAS_CAPSULE && c.kind == CAPSULE)) {
        return edge_distance(c, q0, q1).phi;
    }
    if (HAS_PLANE && c.kind == PLANE) {
        return min(collider_distance(c, q0).phi, collider_distance(c, q1).phi);
    }
    var m = collider_distance(c, q0).phi;
    if (HAS_SDF) {
        for (var k = 1u; k <= 8u; k++) {
            m = min(m, collider_distance(c, q0 + (q1 - q0) * (f32(k) / 8.0)).phi);
        }
    }
    return m;
}

// Signed distance and world normal of collider c (number k, `cw` its
// `collider_now`) at x, relative to the rod's origin, at the end of the
// substep (src/cpu/contact.rs `distance_now`): an SDF sampled in its frame,
// every other shape where it is.
fn distance_now(c: Collider, cw: Collider, k: u32, x: vec3<f32>, origin: vec3<f32>) -> Distance {
    if (HAS_SDF && c.kind == SDF) {
        let p = collider_at(k).end;
        let d = sdf_sample(c, to_local(p, x, origin));
        return Distance(d.phi, rotate(p.rotation, d.normal));
    }
    return collider_distance(cw, x);
}

// `path_distance` along the path x0–x1 relative to collider k at the end of
// the substep (src/cpu/contact.rs `path_distance_now`). For an SDF the path
// is turned back into its frame: x0, carried there by `forward`, rounds
// by ~ε|x0 − pivot| more than the old single turn from the start pose, far
// below a grid cell.
fn path_distance_now(c: Collider, cw: Collider, k: u32, x0: vec3<f32>, x1: vec3<f32>, origin: vec3<f32>) -> f32 {
    if (HAS_SDF && c.kind == SDF) {
        let p = collider_at(k).end;
        return path_distance(c, to_local(p, x0, origin), to_local(p, x1, origin));
    }
    return path_distance(cw, x0, x1);
}

// How far the exact position `p` moved by `delta` is within `reach` of a
// plane, in the stencil's precision (`real`).
fn plane_depth_exact(cw: Collider, p: Position, delta: vec3<f32>, reach: f32) -> f32 {
    let x = vec3<real>(p.cell.xyz) * real(POSITION_QUANTUM) + vec3<real>(p.rem.xyz) + vec3<real>(delta);
    return f32(real(reach) - (dot(x, vec3<real>(cw.p1.xyz)) - real(cw.p0.w)));
}

// What contact did to one vertex (`contact_vertex`): how far it moved it
// (added to the exact position with `moved`), its deepest contact, and its
// tunnelling (count, largest code, largest motion's bits;
// `record_tunnels`).
struct VertexContact {
    delta: vec3<f32>,
    best: Contact,
    tunnels: vec3<u32>,
}

// A sphere holding collider k's shape at the end of the substep (centre
// relative to `origin`, radius), w < 0 for a plane or an SDF
// (src/cpu/contact.rs `bounding_sphere`).
fn bounding_sphere(c: Collider, k: u32, origin: vec3<f32>) -> vec4<f32> {
    if (c.kind != SPHERE && c.kind != CAPSULE) {
        return vec4<f32>(0.0, 0.0, 0.0, -1.0);
    }
    let m = collider_at(k);
    let pivot = m.end.offset.xyz - origin;
    let s = m.now;
    let a = pivot + s.p0.xyz;
    if (c.kind == SPHERE) {
        return vec4<f32>(a, c.radius);
    }
    let b = pivot + s.p1.xyz;
    return vec4<f32>(0.5 * (a + b), 0.5 * length(b - a) + c.radius);
}

// Relative slack of `segment_may_reach` over rounding.
const REACH_SLACK: f32 = 1e-5;

// Whether some point of segment q0–q1 may come within `reach` of a shape
// inside the sphere `bound` (src/cpu/contact.rs `segment_may_reach`, which
// says why a rejected collider can do nothing).
fn segment_may_reach(bound: vec4<f32>, q0: vec3<f32>, q1: vec3<f32>, reach: f32) -> bool {
    let mid = 0.5 * (q0 + q1);
    let half = 0.5 * length(q1 - q0);
    let gap = length(mid - bound.xyz) - half - bound.w - reach;
    return gap <= REACH_SLACK * (length(mid) + length(bound.xyz) + half + bound.w + reach);
}

// The colliders (bit k) that may act on a vertex at x, phase 0 also on its
// path (src/cpu/contact.rs `colliders_near_vertex`). The collider loop
// below runs once per collider in it: on a CPU adapter, where every lane
// runs a loop's body until the last lane is done with it, whether or not
// its contact acts, a rod's vertices far from every collider (most of a
// head of hair) then cost a few distances, not every collider's contact.
fn colliders_near_vertex(rho: f32, origin: vec3<f32>, x: vec3<f32>, x_start: vec3<f32>, x_unc: vec3<f32>) -> u32 {
    var near = 0u;
    for (var k = 0u; k < colliders.count; k++) {
        let c = collider_at(k).c;
        let reach = rho + c.margin;
        let b = bounding_sphere(c, k, origin);
        if (b.w < 0.0 || segment_may_reach(b, x, x, reach)
            || (stage_phase == 0u && segment_may_reach(b, forward(k, x_start, origin), x_unc, reach))) {
            near |= 1u << k;
        }
    }
    return near;
}

// The colliders after collider k (src/cpu/contact.rs `colliders_after`).
fn colliders_after(k: u32) -> u32 {
    return ((1u << colliders.count) - 1u) & ~((2u << k) - 1u);
}

// Contact of one vertex with every collider that may act in turn
// (src/cpu/contact.rs `contact_vertex`): the move, the deepest contact
// (phase 0: the vertex's contact anew) and any tunnelling, in registers;
// the callers store them. `exact` is the vertex's position, `x_in` the
// same in f32, `since` its motion since the substep's start (x − x_start,
// from exact differences; phase 0 only).
fn contact_vertex(v: u32, rho: f32, origin: vec3<f32>, exact: Position, x_in: vec3<f32>, x_start: vec3<f32>, since: vec3<f32>, x_unc: vec3<f32>) -> VertexContact {
    // The move is kept as its own sum, `delta`, not as the difference of
    // two f32 positions: a rod's positions round to ε|x| (2e-9 m for a
    // vertex 2 cm from its origin), and a resting vertex's push and
    // friction are of the order of g h² (1e-8 m at h = 3e-5 s), which
    // such a difference would quantise; `x` is for the distances.
    var x = x_in;
    var delta = vec3<f32>(0.0);
    var best = Contact(vec4<f32>(0.0), vec4<f32>(0.0));
    var tunnels = vec3<u32>(0u);
    // Once a collider moves the vertex, every later one again (the test
    // was of the unmoved position).
    var todo = colliders_near_vertex(rho, origin, x_in, x_start, x_unc);
    for (; todo != 0u; todo &= todo - 1u) {
        let k = firstTrailingBit(todo);
        let c = collider_at(k).c;
        let cw = collider_now(c, k, origin);
        let reach = rho + c.margin;
        if (stage_phase == 0u) {
            // The path relative to the collider, in its end pose: from the
            // start point carried along with it to the unconstrained end.
            let x0 = forward(k, x_start, origin);
            let moved = length(x_unc - x0);
            if (moved > c.thickness && path_distance_now(c, cw, k, x0, x_unc, origin) < reach) {
                // moved > 0: its bits order as its values.
                tunnels = vec3<u32>(tunnels.x + 1u, max(tunnels.y, v * MAX_COLLIDERS + k + 1u), max(tunnels.z, bitcast<u32>(moved)));
            }
        }
        let dist = distance_now(c, cw, k, x, origin);
        var d = reach - dist.phi;
        if (HAS_PLANE && c.kind == PLANE) {
            d = plane_depth_exact(cw, exact, delta, reach);
        }
        if (d > 0.0) {
            todo |= colliders_after(k);
            let n = dist.normal;
            delta += n * d;
            x = x_in + delta;
            var stuck = false;
            if (stage_phase == 0u) {
                let slip = back_motion(k, x, origin) + since + delta;
                let slip_t = slip - n * dot(n, slip);
                let len = length(slip_t);
                if (len <= c.static_friction * d) {
                    delta -= slip_t;
                    stuck = true;
                } else {
                    delta -= slip_t * (c.friction * d / len);
                }
                x = x_in + delta;
            }
            if (d > contact_depth(best)) {
                best = make_contact(n, d, stuck, surface_velocity(k, x, origin));
            }
        }
    }
    return VertexContact(delta, best, tunnels);
}

// Add tunnelling found (`VertexContact.tunnels`, or a rod's sum of them) to
// the step's statistics: one set of atomics for all of it.
fn record_tunnels(t: vec3<u32>) {
    if (t.x > 0u) {
        atomicAdd(&stats[STAT_TUNNELLED], t.x);
        atomicMax(&stats[STAT_TUNNEL_SITE], t.y);
        atomicMax(&stats[STAT_TUNNEL_MOTION], t.z);
    }
}

// Stage 1, vertices: each vertex's contacts are its own (the rod loop of
// the CPU twin run in parallel, one invocation per vertex).
fn contact_at(v: u32, origin: vec3<f32>, rho: f32) {
    if (rest[vertex_slot(v)].inv_mass == 0.0) {
        if (stage_phase == 0u) {
            contact_set(v, Contact(vec4<f32>(0.0), vec4<f32>(0.0)));
        }
        return;
    }
    let p = pos_get(v);
    let x = position_f32(p);
    // The path of the substep, for phase 0's friction and tunnelling test
    // only (phase 1 does not read it).
    var x_unc = x;
    var x_start = x;
    var since = vec3<f32>(0.0);
    if (stage_phase == 0u) {
        let unc = pos_unc_get(v);
        let vh = vel_get(v).xyz * params.h;
        x_unc = position_f32(unc);
        x_start = x_unc - vh;
        since = displacement(unc, p) + vh;
    }
    let r = contact_vertex(v, rho, origin, p, x, x_start, since, x_unc);
    record_tunnels(r.tunnels);
    // The contact kept: phase 0 records this pass's anew; phase 1 keeps the
    // deeper of the two passes' (the old one read in phase 1 only).
    if (stage_phase == 0u || contact_depth(r.best) > abs(contact_normal_depth(v).w)) {
        contact_set(v, r.best);
    }
    // Moved by what contact changed: nothing at all without contact.
    if (any(r.delta != vec3<f32>(0.0))) {
        pos_set(v, moved(p, r.delta));
    }
}

@compute @workgroup_size(64)
fn contact(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let v = invocation(gid, groups);
    if (v < params.vertex_count) {
        let r = rest[vertex_slot(v)].rod;
        contact_at(v, rods[r].origin.xyz, rods[r].radius);
    }
}

// Stage 2, edges against shapes that may be smaller than an edge (friction
// on the closest point in phase 0, as src/cpu/contact.rs
// `contact_edge`): edge j of a rod starting at o is the invocation of
// vertex j, and its parity (j − o) mod 2 says in which of two dispatches it
// runs, so that no two edges of one dispatch share a vertex (red–black
// Gauss–Seidel along the rod).
fn contact_edge_of(j: u32, parity: u32) {
    if (j >= params.vertex_count) {
        return;
    }
    let r = rest[vertex_slot(j)].rod;
    let o = rods[r].vertex_offset;
    if ((j - o) % 2u != parity || j + 1u >= o + rods[r].vertex_count) {
        return;
    }
    contact_edge(j, rods[r].origin.xyz, rods[r].radius);
}

// How collider c (`cw`: its `collider_now`) pushes the edge from x_a to x_b (inverse masses
// wa, wb) out (the test and values at the top of src/cpu/contact.rs
// `contact_edge`'s collider loop): `hit` when it reaches the edge's interior
// and can move it; then the closest point's parameter s, the depth d, the
// mass-weighted denominator (1 − s)² wa + s² wb and the world normal.
struct EdgePush {
    hit: bool,
    s: f32,
    d: f32,
    den: f32,
    normal: vec3<f32>,
}

fn edge_push(c: Collider, cw: Collider, x_a: vec3<f32>, x_b: vec3<f32>, wa: f32, wb: f32, rho: f32) -> EdgePush {
    let e = edge_distance(cw, x_a, x_b);
    let d = rho + c.margin - e.phi;
    let s = e.s;
    let den = (1.0 - s) * (1.0 - s) * wa + s * s * wb;
    let hit = e.found && d > 0.0 && s > 0.0 && s < 1.0 && den > 0.0;
    return EdgePush(hit, s, d, den, e.normal);
}

// An edge's two ends while contact works on them: positions and contacts.
struct EdgeEnds {
    pa: Position,
    pb: Position,
    ca: Contact,
    cb: Contact,
}

// The colliders from `first` on pushing the edge with ends `e` (inverse
// masses wa, wb; start points of the substep start_a, start_b, read in
// phase 0 only) out, each seeing the last one's result (src/cpu/contact.rs
// `contact_edge`, its collider loop), in registers: returns the ends.
fn contact_edge_ends(e: EdgeEnds, first: u32, wa: f32, wb: f32, start_a: vec3<f32>, start_b: vec3<f32>, origin: vec3<f32>, rho: f32) -> EdgeEnds {
    var pa = e.pa;
    var pb = e.pb;
    var contact_a = e.ca;
    var contact_b = e.cb;
    for (var k = first; k < colliders.count; k++) {
        let c = collider_at(k).c;
        let x_a = position_f32(pa);
        let x_b = position_f32(pb);
        let push = edge_push(c, collider_now(c, k, origin), x_a, x_b, wa, wb, rho);
        if (push.hit) {
            let s = push.s;
            let d = push.d;
            let nrm = push.normal;
            let ka = (1.0 - s) * wa / push.den;
            let kb = s * wb / push.den;
            var xa = x_a + nrm * (ka * d);
            var xb = x_b + nrm * (kb * d);
            var stuck = false;
            if (stage_phase == 0u) {
                let pt = xa * (1.0 - s) + xb * s;
                let p_start = start_a * (1.0 - s) + start_b * s;
                let slip = back(k, pt, origin) - p_start;
                let slip_t = slip - nrm * dot(nrm, slip);
                let len = length(slip_t);
                var undo = slip_t;
                if (len <= c.static_friction * d) {
                    stuck = true;
                } else {
                    undo = slip_t * (c.friction * d / len);
                }
                xa -= undo * ka;
                xb -= undo * kb;
            }
            pa = moved(pa, xa - x_a);
            pb = moved(pb, xb - x_b);
            // Recorded like a vertex contact (src/cpu/contact.rs).
            if (ka * d > contact_depth(contact_a)) {
                contact_a = make_contact(nrm, ka * d, stuck, surface_velocity(k, xa, origin));
            }
            if (kb * d > contact_depth(contact_b)) {
                contact_b = make_contact(nrm, kb * d, stuck, surface_velocity(k, xb, origin));
            }
        }
    }
    return EdgeEnds(pa, pb, contact_a, contact_b);
}

// Edge j (vertices j, j + 1) of a rod at `origin` with section radius `rho`,
// in memory. First the first collider that reaches the edge as it is: those
// before it do not, and if none does, none moves it, and the edge is done
// having read only its two positions (a GPU-only shortcut, exact: the CPU
// twin's loop finds the same colliders without it, where reads cost
// nothing). Else its start points and contacts are read once, the colliders
// from that one on act in registers (`contact_edge_ends`), and the ends are
// written once.
fn contact_edge(j: u32, origin: vec3<f32>, rho: f32) {
    let wa = rest[vertex_slot(j)].inv_mass;
    let wb = rest[vertex_slot(j + 1u)].inv_mass;
    let pa = pos_get(j);
    let pb = pos_get(j + 1u);
    let first = first_edge_push(pa, pb, wa, wb, origin, rho);
    if (first == colliders.count) {
        return;
    }
    // The edge's end points at the start of the substep (phase 0's friction).
    var start_a = vec3<f32>(0.0);
    var start_b = vec3<f32>(0.0);
    if (stage_phase == 0u) {
        start_a = start_point(j);
        start_b = start_point(j + 1u);
    }
    let e = contact_edge_ends(EdgeEnds(pa, pb, contact_get(j), contact_get(j + 1u)), first, wa, wb, start_a, start_b, origin, rho);
    pos_set(j, e.pa);
    pos_set(j + 1u, e.pb);
    contact_set(j, e.ca);
    contact_set(j + 1u, e.cb);
}

// The first collider that reaches the edge from pa to pb as it is
// (`EdgePush.hit`), or `colliders.count` if none does. Those before it
// leave the edge alone, so `contact_edge_ends` may start from it with the
// same result; and on a software adapter, which runs a loop until no lane
// is left in it, the colliders' pushes then cost nothing where no lane's
// edge is reached. (Trying only the colliders that may reach the edge, as
// `colliders_near_vertex` does for vertices, saved nothing here: an edge's
// distances are cheap next to a vertex's contact.)
fn first_edge_push(pa: Position, pb: Position, wa: f32, wb: f32, origin: vec3<f32>, rho: f32) -> u32 {
    var first = 0u;
    for (; first < colliders.count; first++) {
        let c = collider_at(first).c;
        if (edge_push(c, collider_now(c, first, origin), position_f32(pa), position_f32(pb), wa, wb, rho).hit) {
            break;
        }
    }
    return first;
}

// Vertex v's position at the start of the substep, x_unc − v·h (phase 0).
fn start_point(v: u32) -> vec3<f32> {
    return position_f32(pos_unc_get(v)) - vel_get(v).xyz * params.h;
}

@compute @workgroup_size(64)
fn contact_edges_even(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    contact_edge_of(invocation(gid, groups), 0u);
}

@compute @workgroup_size(64)
fn contact_edges_odd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    contact_edge_of(invocation(gid, groups), 1u);
}

// The three stages walked by one invocation per rod: the substep's contact
// in the staged schedule (the stage kernels above are the same stages as
// separate dispatches, which the tests compare stage by stage).
@compute @workgroup_size(64)
fn contact_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let r = invocation(gid, groups);
    if (r < params.rod_count) {
        _ = contact_walk(r);
        loops_ran_out(r);
    }
}

// A vertex of the walk (`contact_walk`), in registers from its vertex stage
// until its last edge is done: position, inverse mass, start point of the
// substep (phase 0), contact, and which of the position and the contact
// differ from the buffers' (`moved`, `found`), the only ones stored. Until
// a stage finds a contact for it, `c` holds only the buffer's depth (all a
// stage compares with; a phase-1 vertex keeps the buffer's contact).
struct WalkVertex {
    p: Position,
    w: f32,
    start: vec3<f32>,
    c: Contact,
    moved: bool,
    found: bool,
}

// Vertex v's stage (`contact_at`, the same computation) on its way into the
// walk: read once, its tunnelling added to `tunnels`. Of the vertex's old
// contact only the depth is read: phase 0 stores its contact anew unless
// both are none (a contact of zero depth is all zero, `make_contact` only
// ever makes deeper ones); phase 1 keeps the old one unless a stage goes
// deeper.
fn contact_walk_vertex(v: u32, origin: vec3<f32>, rho: f32, tunnels: ptr<function, vec3<u32>>) -> WalkVertex {
    let w = rest[vertex_slot(v)].inv_mass;
    var p = pos_get(v);
    let x = position_f32(p);
    var x_unc = x;
    var start = vec3<f32>(0.0);
    let old_depth = contact_normal_depth(v).w;
    var c = Contact(vec4<f32>(0.0, 0.0, 0.0, old_depth), vec4<f32>(0.0));
    var found = false;
    var since = vec3<f32>(0.0);
    if (stage_phase == 0u) {
        let unc = pos_unc_get(v);
        let vh = vel_get(v).xyz * params.h;
        x_unc = position_f32(unc);
        start = x_unc - vh;
        since = displacement(unc, p) + vh;
        // Phase 0: the contact anew (zero for a clamped vertex).
        c = Contact(vec4<f32>(0.0), vec4<f32>(0.0));
        found = old_depth != 0.0;
    }
    var shifted = false;
    if (w != 0.0) {
        let r = contact_vertex(v, rho, origin, p, x, start, since, x_unc);
        *tunnels = vec3<u32>((*tunnels).x + r.tunnels.x, max((*tunnels).yz, r.tunnels.yz));
        if (stage_phase == 0u || contact_depth(r.best) > contact_depth(c)) {
            found = found || contact_depth(r.best) != 0.0;
            c = r.best;
        }
        if (any(r.delta != vec3<f32>(0.0))) {
            p = moved(p, r.delta);
            shifted = true;
        }
    }
    return WalkVertex(p, w, start, c, shifted, found);
}

// Edge (a, b) of the walk, in registers (`contact_edge`'s computation).
fn contact_walk_edge(a: ptr<function, WalkVertex>, b: ptr<function, WalkVertex>, origin: vec3<f32>, rho: f32) {
    let first = first_edge_push((*a).p, (*b).p, (*a).w, (*b).w, origin, rho);
    let e = contact_edge_ends(EdgeEnds((*a).p, (*b).p, (*a).c, (*b).c), first, (*a).w, (*b).w, (*a).start, (*b).start, origin, rho);
    (*a).moved = (*a).moved || !same_position(e.pa, (*a).p);
    (*a).found = (*a).found || e.ca.normal_depth.w != (*a).c.normal_depth.w;
    (*b).moved = (*b).moved || !same_position(e.pb, (*b).p);
    (*b).found = (*b).found || e.cb.normal_depth.w != (*b).c.normal_depth.w;
    (*a).p = e.pa;
    (*a).c = e.ca;
    (*b).p = e.pb;
    (*b).c = e.cb;
}

fn same_position(p: Position, q: Position) -> bool {
    return all(p.cell == q.cell) && all(p.rem == q.rem);
}

// Store what the walk changed of vertex v (on a software adapter a store
// no lane makes costs next to nothing, one made costs a loop over the
// lanes); returns whether the vertex holds a contact.
fn contact_walk_store(v: u32, s: WalkVertex) -> bool {
    if (s.moved) {
        pos_set(v, s.p);
    }
    if (s.found) {
        contact_set(v, s.c);
    }
    return s.c.normal_depth.w != 0.0;
}

// The vertex stage, the even edges and the odd edges of rod r, interleaved
// so that each vertex is read once and written once: vertices 2m and 2m + 1,
// then the even edge between them, then the odd edge (2m − 1, 2m), after
// which vertex 2m − 1 and 2m are done. The same computations as the three
// stages in turn (`contact_at`, then `contact_edge` of each parity), with
// the same result: each stage of a vertex or an edge reads only its own
// vertices, and each comes after the stages it reads from (a vertex's
// stage before its edges, the odd edge (2m − 1, 2m) after the even edges
// (2m − 2, 2m − 1) and (2m, 2m + 1)); tunnelling is sums and maxima. On a
// software adapter every memory access costs a loop over the lanes, so the
// walk reads each vertex once, not three times, and writes its position and
// contact only where they changed (`contact_walk_store`). Returns whether
// any vertex of the rod holds a contact afterwards (src/cpu/substep.rs
// `rod_in_contact`), which the walked substep asks after phase 0, and
// what `unresolved_strain` says of the positions it leaves, taken as each
// vertex is stored (vertices i − 1 and i after step i, in order), for the
// filtered projection that follows (`StrainWalk`).
struct ContactWalkDone {
    held: bool,
    unresolved: f32,
}

fn contact_walk(r: u32) -> ContactWalkDone {
    var w = contact_walk_start(r);
    var held = false;
    var strain = strain_walk();
    for (var i = 0u; i < w.n; i += 2u) {
        let done = contact_walk_step(&w, i);
        if (i > 0u) {
            held = contact_walk_store(w.o + i - 1u, done.before) || held;
            strain_walk_next(&strain, w.o + i - 1u, done.before.p, done.before.w);
        }
        held = contact_walk_store(w.o + i, done.a) || held;
        strain_walk_next(&strain, w.o + i, done.a.p, done.a.w);
    }
    if (w.n % 2u == 0u) {
        held = contact_walk_store(w.o + w.n - 1u, w.carried) || held;
        strain_walk_next(&strain, w.o + w.n - 1u, w.carried.p, w.carried.w);
    }
    record_tunnels(w.tunnels);
    return ContactWalkDone(held, strain.m);
}

// `contact_walk` (phase 1's, the last stage of a substep that moves the
// vertices) with `velocity_frames_walk` behind it: each vertex handed to
// `velocity_frames_next` as it is stored for the last time, root to tip,
// which is the order that walk takes them in and after every vertex and
// edge stage that moves it. That walk reads a vertex's position, contact,
// velocity and force and writes its velocity, edges' frames and the
// binormals, none of which the contact walk reads of a vertex it has yet
// to reach (phase 1 reads no velocity or scratch), so the same values as
// the two walks in turn. Not in `contact_walk` under a flag: `contact_rod` would
// then name the frames and scratch, past the 8 storage buffers a staged
// kernel may use.
fn contact_velocity_frames_walk(r: u32) {
    var w = contact_walk_start(r);
    var vf = velocity_frames_start(w.o);
    for (var i = 0u; i < w.n; i += 2u) {
        let done = contact_walk_step(&w, i);
        if (i > 0u) {
            _ = contact_walk_store(w.o + i - 1u, done.before);
            velocity_frames_next(&vf, w.o + i - 1u, done.before.p);
        }
        _ = contact_walk_store(w.o + i, done.a);
        velocity_frames_next(&vf, w.o + i, done.a.p);
    }
    if (w.n % 2u == 0u) {
        _ = contact_walk_store(w.o + w.n - 1u, w.carried);
        velocity_frames_next(&vf, w.o + w.n - 1u, w.carried.p);
    }
    record_tunnels(w.tunnels);
    velocity_frames_end(w.o, w.n);
}

// What the walk keeps from one step to the next: its rod, the tunnelling
// so far and vertex i − 1, waiting for its odd edge.
struct ContactWalk {
    o: u32,
    n: u32,
    origin: vec3<f32>,
    rho: f32,
    tunnels: vec3<u32>,
    carried: WalkVertex,
}

fn contact_walk_start(r: u32) -> ContactWalk {
    let none = WalkVertex(Position(vec4<i32>(0), vec4<f32>(0.0)), 0.0, vec3<f32>(0.0), Contact(vec4<f32>(0.0), vec4<f32>(0.0)), false, false);
    return ContactWalk(rods[r].vertex_offset, rods[r].vertex_count, rods[r].origin.xyz, rods[r].radius, vec3<u32>(0u), none);
}

// The two vertices step i (even) finishes: i − 1 (where i > 0) and i.
struct ContactWalkStep {
    before: WalkVertex,
    a: WalkVertex,
}

// Step i of the walk: vertices i and i + 1's stages, the even edge between
// them, then the odd edge (i − 1, i); vertex i + 1, where there is one, is
// left waiting in `carried` for its odd edge (on the last step of a rod of
// odd length `carried` keeps a copy no one reads).
fn contact_walk_step(w: ptr<function, ContactWalk>, i: u32) -> ContactWalkStep {
    let o = (*w).o;
    let origin = (*w).origin;
    let rho = (*w).rho;
    var tunnels = (*w).tunnels;
    var a = contact_walk_vertex(o + i, origin, rho, &tunnels);
    var b = (*w).carried;
    if (i + 1u < (*w).n) {
        b = contact_walk_vertex(o + i + 1u, origin, rho, &tunnels);
        contact_walk_edge(&a, &b, origin, rho);
    }
    var before = (*w).carried;
    if (i > 0u) {
        contact_walk_edge(&before, &a, origin, rho);
    }
    (*w).tunnels = tunnels;
    (*w).carried = b;
    return ContactWalkStep(before, a);
}
