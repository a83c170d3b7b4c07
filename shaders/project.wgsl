// Inextensibility (§8, src/cpu/project.rs).
// * `project_jacobi`: one Jacobi iteration, one invocation per vertex, reading
//   `src` and writing `dst` (ping-pong between buffers, as on the CPU).
// * `project_fast`: the fast projection of Goldenthal et al. 2007, in place
//   on `pos`; one workgroup per pack of rods (project_pack.wgsl).
// * `project_shake`: the same Newton iteration along the constraint gradients
//   of the start of the substep (SHAKE; `pos_start`, which `save_start` wrote
//   before `integrate`).
// * `project_fast_rod`, `project_shake_rod`: the same, one invocation walking
//   each rod (`newton_projection` below), for adapters that are CPUs; the
//   packed kernels also run it, on one invocation, for a rod longer than a pack.
// * `project_velocity`: v ← v + (x_projected − x_unconstrained)/h, per vertex,
//   then a vertex in contact loses its outward velocity relative to the surface.
//
// Positions move by their corrections (`moved`) and edges are differences of
// `Position`s (`displacement`), so an edge is resolved to ε|e| and its strain
// to ~ε: `project_fast` asks each movable edge for a strain below
// max(tolerance, FAST_TOLERANCE_F32) + 4ε, and so does `project_shake`.

const FAST_TOLERANCE_F32: f32 = 1e-6;

// Inverse mass of vertex v applied to a vector; in the filtered projection
// (phase 1) a sliding vertex in contact moves in its tangent plane only, a
// stuck one (static friction) not at all
// (src/cpu/project.rs `apply_inv_mass`).
fn apply_inv_mass(v: u32, x: vec3<f32>) -> vec3<f32> {
    return apply_inv_mass_of(v, rest[v].inv_mass, x);
}

// `apply_inv_mass` with vertex v's inverse mass w read already (a walk
// carries it from edge to edge); its contact, in phase 1, read once.
fn apply_inv_mass_of(v: u32, w: f32, x: vec3<f32>) -> vec3<f32> {
    if (stage_phase == 1u) {
        let c = contacts[v].normal_depth;
        if (c.w != 0.0) {
            if (c.w < 0.0) {
                return vec3<f32>(0.0);
            }
            return (x - c.xyz * dot(c.xyz, x)) * w;
        }
    }
    return x * w;
}

struct Correction {
    a: vec3<f32>,
    b: vec3<f32>,
}

// Corrections edge (a, b) asks of its endpoints (src/cpu/project.rs
// `edge_correction`). The stretch |e| − l is (|e|² − l²)/(|e| + l) from
// `squared_length_error`, resolved below the ε|e| of the f32 length.
fn edge_correction(va: u32, vb: u32, xa: Position, xb: Position, rest_len: f32) -> Correction {
    let d = displacement(xa, xb);
    let len = length(d);
    let dir = d / len;
    let ma = apply_inv_mass(va, dir);
    let mb = apply_inv_mass(vb, dir);
    let den = dot(dir, ma + mb);
    if (den <= 0.0) {
        return Correction(vec3<f32>(0.0), vec3<f32>(0.0));
    }
    let lambda = squared_length_error(xa, xb, rest_len) / ((len + rest_len) * den);
    return Correction(ma * lambda, -mb * lambda);
}

fn project_jacobi_vertex(v: u32) -> Position {
    let r = rest[v].rod;
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    var delta = vec3<f32>(0.0);
    if (v > o) {
        delta += edge_correction(v - 1u, v, src[v - 1u], src[v], rest[v - 1u].rest_len).b;
    }
    if (v + 1u < o + n) {
        delta += edge_correction(v, v + 1u, src[v], src[v + 1u], rest[v].rest_len).a;
    }
    return moved(src[v], delta * params.relaxation);
}

@compute @workgroup_size(64)
fn project_jacobi(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let v = invocation(gid, groups);
    if (v >= params.vertex_count) {
        return;
    }
    dst[v] = project_jacobi_vertex(v);
}

fn edge_vector(e: u32) -> vec3<f32> {
    return displacement(pos_get(e), pos_get(e + 1u));
}

fn edge_strain(e: u32) -> f32 {
    return abs(length(edge_vector(e)) / rest[e].rest_len - 1.0);
}

fn edge_active(e: u32) -> bool {
    return rest[e].inv_mass + rest[e + 1u].inv_mass > 0.0;
}

// Largest strain of a movable edge of rod r above what is asked and
// `ulps` × what f32 resolves (ε: the edge is one rounded difference of
// `Position`s); positive while the projection has work to do.
// The walk carries an edge's far end and inverse mass to the next edge, so
// each position is read once (`strain_above`'s value, from the same two
// positions).
fn unresolved_strain(r: u32, tolerance: f32, ulps: f32) -> f32 {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    var m = -1.0;
    var xa = pos_get(o);
    var wa = rest[o].inv_mass;
    for (var e = o; e < o + ne; e++) {
        let xb = pos_get(e + 1u);
        let wb = rest[e + 1u].inv_mass;
        m = max(m, edge_unresolved(e, xa, xb, wa + wb, tolerance, ulps));
        xa = xb;
        wa = wb;
    }
    return m;
}

// Edge e's part of `unresolved_strain` from its two positions and the sum
// of its ends' inverse masses: −1 for an edge that cannot move.
fn edge_unresolved(e: u32, xa: Position, xb: Position, w: f32, tolerance: f32, ulps: f32) -> f32 {
    if (w > 0.0) {
        let strain = abs(length(displacement(xa, xb)) / rest[e].rest_len - 1.0);
        return strain - tolerance - ulps * F32_EPSILON;
    }
    return -1.0;
}

// Strain of edge e above `tolerance` and `ulps` × what f32 resolves.
fn strain_above(e: u32, tolerance: f32, ulps: f32) -> f32 {
    return edge_strain(e) - tolerance - ulps * F32_EPSILON;
}

// The tridiagonal system of the projection, g.z diagonal, g.w coupling to
// edge e + 1 above the diagonal, s.z below it, right-hand side s.x (the
// solution on return), elimination factors in s.y; false at a non-positive
// pivot (src/cpu/project.rs `solve_tridiagonal_lu`).
fn solve_tridiagonal_lu(a: u32, b: u32) -> bool {
    var pivot = scratch[a].g.z;
    if (!(pivot > 0.0)) {
        return false;
    }
    scratch[a].s.x /= pivot;
    for (var e = a + 1u; e < b; e++) {
        let c = scratch[e - 1u].g.w / pivot;
        let lower = scratch[e - 1u].s.z;
        scratch[e - 1u].s.y = c;
        pivot = scratch[e].g.z - lower * c;
        if (!(pivot > 0.0)) {
            return false;
        }
        scratch[e].s.x = (scratch[e].s.x - lower * scratch[e - 1u].s.x) / pivot;
    }
    for (var e = b - 1u; e > a; e--) {
        scratch[e - 1u].s.x -= scratch[e - 1u].s.y * scratch[e].s.x;
    }
    return true;
}

// Newton's method on the edge-length constraints of rod r, moving the
// vertices along the edge vectors in `scratch[e].kb`: `project_fast` sets
// them to the iterate's edges at every iteration, `project_shake` to the
// edges at the start of the substep once (src/cpu/project.rs
// `newton_projection`).
// Returns the Newton iterations it took (0: the rod was within tolerance
// and did not move).
fn newton_projection(r: u32, shake: bool) -> u32 {
    if (rods[r].vertex_count < 2u) {
        return 0u; // no edge
    }
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    let tolerance = max(params.fast_tolerance, FAST_TOLERANCE_F32);
    var iterations = 0u;
    var singular = 0u;
    // SHAKE takes one Newton step more once the f32 allowance is met (unless
    // the strain is within the tolerance itself): from a stretched edge,
    // Newton on |e|² leaves |e|² − |ē|² = (step)² ≥ 0, so what the allowance
    // lets stand is a stretch of one sign every substep, and it drained 2 %
    // of a vibrating rod's energy in 10 s at half the step limit; one more
    // step squares it, leaving rounding of either sign. (The CPU stops at
    // its tolerance, 1e-10 by default, and needs no such step.)
    var polish = shake;
    // What `unresolved_strain` (4 ulps) says of the positions as they are:
    // measured here, then by each iteration's moving walk as it writes them.
    var unresolved = unresolved_strain(r, tolerance, 4.0);
    while (iterations < params.fast_max_iterations) {
        if (unresolved <= 0.0) {
            if (!polish || unresolved_strain(r, tolerance, 0.0) <= 0.0) {
                break;
            }
            polish = false;
        }
        // Constraints Cⱼ = |eʲ|² − |ēʲ|²; (∇C(x) M⁻¹ ∇C(y)ᵀ) δλ = C(x), y the
        // iterate (fast) or the start (SHAKE). An edge whose vertices are
        // both anchored gets the row δλ = 0 and no coupling.
        // In phase 1 vertices in contact move in their tangent plane only
        // (`apply_inv_mass`); an edge that then cannot change its length
        // gets the row δλ = 0 too.
        // One walk along the rod builds row e and the coupling of rows e − 1
        // and e, carrying edge e − 1's vector, direction and whether it is a
        // row, and the far end's position and inverse mass, so that each
        // position and inverse mass is read once (a software adapter reads
        // storage lane by lane); the same values as a loop per part.
        var xa = pos_get(o);
        var wa = rest[o].inv_mass;
        var d_prev = vec3<f32>(0.0);
        var dir_prev = vec3<f32>(0.0);
        var row_prev = false;
        for (var e = o; e < o + ne; e++) {
            let xb = pos_get(e + 1u);
            let wb = rest[e + 1u].inv_mass;
            let d = displacement(xa, xb);
            // This iteration's edge vectors (fast), saved before any vertex
            // moves (in the kb slot, which the next kernel to need it
            // recomputes), or the start's (SHAKE, `save_start_edges`).
            var dir = d;
            if (shake) {
                dir = scratch[e].kb.xyz;
            } else {
                scratch[e].kb = vec4<f32>(d, 0.0);
            }
            let mb_dir = apply_inv_mass_of(e + 1u, wb, dir);
            let diag = 4.0 * dot(d, apply_inv_mass_of(e, wa, dir) + mb_dir);
            let scale = 4.0 * length(d) * length(dir) * (wa + wb);
            // `edge_active`: a row of the system, or a fixed edge.
            let row = wa + wb > 0.0 && diag > 1e-12 * scale;
            if (row) {
                scratch[e].g.z = diag;
                scratch[e].s.x = squared_length_error(xa, xb, rest[e].rest_len);
            } else {
                scratch[e].g.z = 1.0;
                scratch[e].s.x = 0.0;
            }
            if (e > o) {
                var upper = 0.0;
                var lower = 0.0;
                if (row_prev && row) {
                    // W of the shared vertex e: the one read for this edge.
                    upper = -4.0 * dot(d_prev, apply_inv_mass_of(e, wa, dir));
                    // Symmetric for fast projection (W is).
                    lower = select(upper, -4.0 * dot(d, apply_inv_mass_of(e, wa, dir_prev)), shake);
                }
                scratch[e - 1u].g.w = upper;
                scratch[e - 1u].s.z = lower;
            }
            xa = xb;
            wa = wb;
            d_prev = d;
            dir_prev = dir;
            row_prev = row;
        }
        scratch[o + ne - 1u].g.w = 0.0;
        scratch[o + ne - 1u].s.z = 0.0;
        if (!solve_tridiagonal_lu(o, o + ne)) {
            singular = 1u;
            break;
        }
        // Each vertex moved by its two edges in turn, carried between them
        // (read and written once, the same moves in the same order); as
        // vertex e + 1 is done, edge e's strain (`unresolved_strain`'s, of
        // the positions written).
        unresolved = -1.0;
        var x = pos_get(o);
        var w = rest[o].inv_mass;
        var done = Position(vec4<i32>(0), vec4<f32>(0.0));
        var w_done = 0.0;
        for (var e = o; e < o + ne; e++) {
            let g = 2.0 * scratch[e].kb.xyz * scratch[e].s.x;
            let xe = moved(x, apply_inv_mass_of(e, w, g));
            pos_set(e, xe);
            if (e > o) {
                unresolved = max(unresolved, edge_unresolved(e - 1u, done, xe, w_done + w, tolerance, 4.0));
            }
            done = xe;
            w_done = w;
            w = rest[e + 1u].inv_mass;
            x = moved(pos_get(e + 1u), -apply_inv_mass_of(e + 1u, w, g));
        }
        pos_set(o + ne, x);
        unresolved = max(unresolved, edge_unresolved(o + ne - 1u, done, x, w_done + w, tolerance, 4.0));
        iterations++;
    }
    atomicMax(&stats[1], iterations);
    if (stage_phase == 0u && unresolved > 0.0) {
        // Failed (src/cpu/project.rs `FastProjection::failed`); only the
        // plain projection can fail the run (src/cpu/mod.rs `substep`).
        let fail = max(tolerance, PROJECTION_FAIL_STRAIN);
        let over = unresolved_strain(r, fail, 4.0);
        if (over > 0.0) {
            atomicMax(&stats[6], (r + 1u) * 2u + singular);
            atomicMax(&stats[7], bitcast<u32>(over + fail));
        }
    }
    return iterations;
}

// Length vertex v stands for in the chatter test (`chatter_length`): the
// mean of its adjacent rest edges.
fn chatter_length(v: u32) -> f32 {
    if (rest[v].voronoi > 0.0) {
        return 0.5 * rest[v].voronoi;
    }
    if (rest[v].rest_len > 0.0) {
        return rest[v].rest_len;
    }
    return rest[v - 1u].rest_len;
}

// src/stability.rs `reverses`.
fn reverses(v: vec3<f32>, u: vec3<f32>, h: f32, threshold: f32) -> bool {
    let t2 = (threshold / h) * (threshold / h);
    return dot(v, u) < 0.0 && dot(v, v) > t2 && dot(u, u) > t2;
}


// `project_fast` and `project_shake` one invocation per rod, walking it
// serially: for adapters that are CPUs (lavapipe), where the packed kernels'
// parallel cyclic reduction only adds work (`GpuSimulator::packed`).
@compute @workgroup_size(64)
fn project_fast_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    newton_projection(r, false);
}

fn save_start_edges(r: u32) {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    for (var e = o; e < o + ne; e++) {
        scratch[e].kb = vec4<f32>(displacement(pos_start[e], pos_start[e + 1u]), 0.0);
    }
}

@compute @workgroup_size(64)
fn project_shake_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    save_start_edges(r);
    newton_projection(r, true);
}

@compute @workgroup_size(64)
fn save_start(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v >= params.vertex_count) {
        return;
    }
    pos_start[v] = pos_get(v);
}


// Also counts in `vel.w` the consecutive substeps in which the forces
// reversed a free vertex's velocity (v − F h/m before the substep against the
// result and against the unconstrained v: src/cpu/project.rs);
// a count that reaches CHATTER_SUBSTEPS stays, and the host finds it when it
// reads the state back (`GpuSimulator::step_checked`).
@compute @workgroup_size(64)
fn project_velocity(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v < params.vertex_count) {
        project_velocity_vertex(v);
    }
}

fn project_velocity_vertex(v: u32) {
    // Read once: a read-write buffer's loads are not merged by the compiler.
    let u_unc = vel[v];
    let before = u_unc.xyz - scratch[v].force.xyz * (params.h * rest[v].inv_mass);
    // The projection's correction as one small difference (`displacement`),
    // not two f32 positions' difference with its noise of ε|x|/h.
    var u = u_unc.xyz + displacement(pos_unc[v], pos_get(v)) / params.h;
    let c = contacts[v];
    if (contact_depth(c) > 0.0) {
        // Inelastic contact (src/cpu/project.rs `project_velocity`).
        let n = c.normal_depth.xyz;
        let out = dot(u - c.surface_velocity.xyz, n);
        if (out > 0.0) {
            u -= n * out;
        }
    }
    var count = u_unc.w;
    if (count < CHATTER_SUBSTEPS) {
        let free = rest[v].inv_mass > 0.0;
        let forced = dot(before, u_unc.xyz) < 0.0;
        if (free && forced && reverses(before, u, params.h, CHATTER_FRACTION * chatter_length(v))) {
            count += 1.0;
        } else {
            count = max(count - 2.0, 0.0);
        }
    }
    vel[v] = vec4<f32>(u, count);
}
