#import common
#import frames

// Inextensibility (§8, src/cpu/project.rs).
// * `project_jacobi`: one Jacobi iteration, one invocation per vertex, reading
//   `src` and writing `dst` (ping-pong between buffers, as on the CPU).
// * `project_fast_rod`: the fast projection of Goldenthal et al. 2007, in
//   place on `pos`, one invocation walking each rod (`newton_projection`
//   below).
// * `project_shake_rod`: the same Newton iteration along the constraint
//   gradients of the start of the substep (SHAKE; `pos_start`, which
//   `save_start` wrote before `integrate`).
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
    return inv_mass_applied(filter_contact(v), rest[vertex_slot(v)].inv_mass, x);
}

// What `apply_inv_mass` needs of vertex v's contact: its normal and depth
// in the filtered projection (phase 1), none in phase 0.
fn filter_contact(v: u32) -> vec4<f32> {
    if (stage_phase == 1u) {
        return contact_normal_depth(v);
    }
    return vec4<f32>(0.0);
}

// Weights by edge in the filtered projection: a stuck vertex moves (in its
// tangent plane) only by the corrections of its edges to other held
// vertices, never by an edge to a free one (src/cpu/project.rs
// `ProjectionSystem::we`, which says why): `held_of`,
// `edge_inv_mass_applied`, `edge_apply_inv_mass`.

// Whether a vertex (its `filter_contact` c, inverse mass w) is held in the
// filtered projection: anchored, or stuck (static friction).
fn held_of(c: vec4<f32>, w: f32) -> bool {
    return w == 0.0 || c.w < 0.0;
}

// `inv_mass_applied` as an edge whose other end is held (`other_held`) or
// not uses the vertex.
fn edge_inv_mass_applied(c: vec4<f32>, w: f32, other_held: bool, x: vec3<f32>) -> vec3<f32> {
    if (c.w < 0.0) {
        if (other_held) {
            return (x - c.xyz * dot(c.xyz, x)) * w;
        }
        return vec3<f32>(0.0);
    }
    return inv_mass_applied(c, w, x);
}

// `apply_inv_mass` of vertex v as its edge to vertex `other` uses it
// (`edge_inv_mass_applied`).
fn edge_apply_inv_mass(v: u32, other: u32, x: vec3<f32>) -> vec3<f32> {
    let held = held_of(filter_contact(other), rest[vertex_slot(other)].inv_mass);
    return edge_inv_mass_applied(filter_contact(v), rest[vertex_slot(v)].inv_mass, held, x);
}

// `apply_inv_mass` from the vertex's inverse mass w and its `filter_contact`
// c, both read already (a walk carries them from edge to edge).
fn inv_mass_applied(c: vec4<f32>, w: f32, x: vec3<f32>) -> vec3<f32> {
    if (c.w != 0.0) {
        if (c.w < 0.0) {
            return vec3<f32>(0.0);
        }
        return (x - c.xyz * dot(c.xyz, x)) * w;
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
    let r = rest[vertex_slot(v)].rod;
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    var delta = vec3<f32>(0.0);
    if (v > o) {
        delta += edge_correction(v - 1u, v, src[vertex_slot(v - 1u)], src[vertex_slot(v)], rest[vertex_slot(v - 1u)].rest_len).b;
    }
    if (v + 1u < o + n) {
        delta += edge_correction(v, v + 1u, src[vertex_slot(v)], src[vertex_slot(v + 1u)], rest[vertex_slot(v)].rest_len).a;
    }
    return moved(src[vertex_slot(v)], delta * params.relaxation);
}

@compute @workgroup_size(64)
fn project_jacobi(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let v = invocation(gid, groups);
    if (v >= params.vertex_count) {
        return;
    }
    dst[vertex_slot(v)] = project_jacobi_vertex(v);
}

fn edge_vector(e: u32) -> vec3<f32> {
    return displacement(pos_get(e), pos_get(e + 1u));
}

fn edge_strain(e: u32) -> f32 {
    return abs(length(edge_vector(e)) / rest[vertex_slot(e)].rest_len - 1.0);
}

fn edge_active(e: u32) -> bool {
    return rest[vertex_slot(e)].inv_mass + rest[vertex_slot(e + 1u)].inv_mass > 0.0;
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
    var wa = rest[vertex_slot(o)].inv_mass;
    for (var e = o; e < o + ne; e++) {
        let xb = pos_get(e + 1u);
        let wb = rest[vertex_slot(e + 1u)].inv_mass;
        m = max(m, edge_unresolved(e, xa, xb, wa + wb, tolerance, ulps));
        xa = xb;
        wa = wb;
    }
    return m;
}

// `unresolved_strain` (4 ulps, the projection's tolerance) taken along a
// walk that finishes a rod's vertices in order, root to tip, each edge's
// part (`edge_unresolved_of`) added once its far end is final: the same
// edges, positions and maximum as the walk over the stored positions, so a
// stage that passes every vertex in order and leaves it final (the blend,
// contact) hands the projection after it what its first walk would read
// back (`newton_projection_from`). A software adapter reads storage lane
// by lane: the two walks this saves were 3.4 % of the walked finish
// kernel's instructions on lavapipe.
struct StrainWalk {
    x: Position,            // the last vertex finished
    w: f32,                 // its inverse mass (only whether it is 0 matters)
    v: u32,                 // its index, NONE before the first
    m: f32,                 // the largest part so far, −1 with none
}

fn strain_walk() -> StrainWalk {
    return StrainWalk(Position(vec4<i32>(0), vec4<f32>(0.0)), 0.0, NONE, -1.0);
}

// Vertex v, the one after the last finished, final at x (inverse mass w).
fn strain_walk_next(s: ptr<function, StrainWalk>, v: u32, x: Position, w: f32) {
    if ((*s).v != NONE) {
        let part = edge_unresolved_of(rest[vertex_slot((*s).v)].rest_len, (*s).x, x, (*s).w + w, projection_tolerance(), 4.0);
        (*s).m = max((*s).m, part);
    }
    (*s).x = x;
    (*s).w = w;
    (*s).v = v;
}

// What a stage hands on where it did not take a `StrainWalk` (below any
// maximum a `StrainWalk` returns: it starts at −1).
const STRAIN_UNMEASURED: f32 = -3.0e38;

// The strain the fast projection and SHAKE stop at (`newton_projection`).
fn projection_tolerance() -> f32 {
    return max(params.fast_tolerance, FAST_TOLERANCE_F32);
}

// Edge e's part of `unresolved_strain` from its two positions and the sum
// of its ends' inverse masses: −1 for an edge that cannot move.
fn edge_unresolved(e: u32, xa: Position, xb: Position, w: f32, tolerance: f32, ulps: f32) -> f32 {
    return edge_unresolved_of(rest[vertex_slot(e)].rest_len, xa, xb, w, tolerance, ulps);
}

// `edge_unresolved` of an edge of rest length l, read already.
fn edge_unresolved_of(l: f32, xa: Position, xb: Position, w: f32, tolerance: f32, ulps: f32) -> f32 {
    if (w > 0.0) {
        let strain = abs(length(displacement(xa, xb)) / l - 1.0);
        return strain - tolerance - ulps * F32_EPSILON;
    }
    return -1.0;
}

// Strain of edge e above `tolerance` and `ulps` × what f32 resolves.
fn strain_above(e: u32, tolerance: f32, ulps: f32) -> f32 {
    return edge_strain(e) - tolerance - ulps * F32_EPSILON;
}

// Newton's method on the edge-length constraints of rod r, moving the
// vertices along the edge vectors in `scratch[e].kb`: `project_fast` sets
// them to the iterate's edges at every iteration, `project_shake` to the
// edges at the start of the substep once (src/cpu/project.rs
// `newton_projection`, whose two walks per iteration these are; here the
// moving walk also builds the next iteration's rows).
// Returns the Newton iterations it took (0: the rod was within tolerance
// and did not move).
fn newton_projection(r: u32, shake: bool) -> u32 {
    if (rods[r].vertex_count < 2u) {
        return 0u; // no edge
    }
    return newton_projection_from(r, shake, unresolved_strain(r, projection_tolerance(), 4.0), ELIMINATED_NOT);
}

// `newton_projection` given what `unresolved_strain` (4 ulps) says of the
// positions as they are (a `StrainWalk` of the stage before; a rod of two
// or more vertices).
fn newton_projection_from(r: u32, shake: bool, unresolved_now: f32, handed: u32) -> u32 {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    let tolerance = projection_tolerance();
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
    // measured by the caller, then by each iteration's moving walk as it
    // writes them.
    var unresolved = unresolved_now;
    // The coming iteration's rows: built and eliminated already
    // (`ELIMINATED_AHEAD`; in the first iteration of phase 0 by the start
    // walk, `handed`; after it by the moving walk before), found singular
    // there (`ELIMINATED_SINGULAR`, a pivot that was not positive), or not
    // built (`ELIMINATED_NOT`); taken from the tip (`from_tip`) or the root.
    var rows = handed;
    var from_tip = true;
    while (iterations < params.fast_max_iterations) {
        if (unresolved <= 0.0) {
            if (!polish || unresolved_strain(r, tolerance, 0.0) <= 0.0) {
                break;
            }
            polish = false;
        }
        // Constraints Cⱼ = |eʲ|² − |ēʲ|²; (∇C(x) M⁻¹ ∇C(y)ᵀ) δλ = C(x), y the
        // iterate (fast) or the start (SHAKE), a tridiagonal system
        // (`eliminate_projection_row`), as src/cpu/project.rs `eliminate_rows` and
        // `substitute_and_move`: a walk builds and eliminates the rows, and
        // one back from the other end solves them and moves the vertices.
        // The first iteration's rows go tip to root; each moving walk builds
        // the next iteration's behind its stores, in the order it walks, so
        // that the iterations after the first are a walk each.
        if (rows == ELIMINATED_NOT) {
            // Only a first iteration builds its own rows, from the tip.
            rows = eliminate_projection_rows(o, ne, shake);
        }
        if (rows == ELIMINATED_SINGULAR) {
            singular = 1u;
            break;
        }
        let ahead = iterations + 1u < params.fast_max_iterations;
        let moved = substitute_and_move(o, ne, shake, ahead, tolerance, from_tip);
        unresolved = moved.unresolved;
        rows = moved.rows;
        from_tip = !from_tip;
        iterations++;
    }
    stat_max(STAT_PROJECTION_ITERATIONS, iterations);
    if (stage_phase == 0u && unresolved > 0.0) {
        // Failed (src/cpu/project.rs `FastProjection::failed`); only the
        // plain projection can fail the run (src/cpu/substep.rs `substep_finish`).
        let fail = max(tolerance, PROJECTION_FAIL_STRAIN);
        let over = unresolved_strain(r, fail, 4.0);
        if (over > 0.0) {
            atomicMax(&stats[STAT_PROJECTION_FAILED], (r + 1u) * 2u + singular);
            atomicMax(&stats[STAT_PROJECTION_FAILED_STRAIN], bitcast<u32>(over + fail));
        }
    }
    return iterations;
}

// The state of a Newton iteration's rows (`newton_projection_from`'s
// `handed` and `rows`): built and eliminated before the projection's walk
// needs them, by the start walk (`substep_start_walk`, fast projection in
// phase 0: `StartStrain`, shaders/substep.wgsl) or the moving walk before
// (`substitute_and_move`), which may also have found a pivot that was not
// positive; or not.
const ELIMINATED_NOT: u32 = 0u;
const ELIMINATED_AHEAD: u32 = 1u;
const ELIMINATED_SINGULAR: u32 = 2u;

// A first Newton iteration's rows, which no walk before built, built and
// eliminated in a walk of their own from the tip
// (`eliminate_projection_row`): `ELIMINATED_AHEAD`, or
// `ELIMINATED_SINGULAR` at a pivot that was not positive.
fn eliminate_projection_rows(o: u32, ne: u32, shake: bool) -> u32 {
    var t = row_elimination_start();
    // The vertex the walk starts at, the tip, carried: each step reads the
    // next one's position, inverse mass and contact once.
    var x1 = pos_get(o + ne);
    var w1 = rest[vertex_slot(o + ne)].inv_mass;
    var c1 = filter_contact(o + ne);
    for (var k = 0u; k < ne; k++) {
        // Row e's other vertex is e.
        let e = o + ne - 1u - k;
        let x0 = pos_get(e);
        let w0 = rest[vertex_slot(e)].inv_mass;
        let c0 = filter_contact(e);
        if (!projection_row_behind(&t, e, rest[vertex_slot(e)].rest_len, x1, w1, c1, x0, w0, c0, shake, false)) {
            return ELIMINATED_SINGULAR;
        }
        x1 = x0;
        w1 = w0;
        c1 = c0;
    }
    return ELIMINATED_AHEAD;
}

// What a Newton iteration's moving walk leaves: `unresolved_strain`'s
// measure (4 ulps) of the positions it wrote, and the next iteration's
// rows (`ELIMINATED_NOT` where it was not to build them).
struct Substituted {
    unresolved: f32,
    rows: u32,
}

// The moving walk: the rows solved back from the other end than they were
// taken from (src/cpu/project.rs `substitute_and_move`), each vertex moved
// by its two edges in turn (the edge before it, of which it is the far
// end, then its own) and written once. Rows taken from the tip are solved
// from the root: at row e, its δλ by back substitution, then vertex e is
// finished (edge e − 1 carried, edge e now). Rows taken from the root are
// solved from the tip: at row e, vertex e + 1 is finished (edge e now, edge
// e + 1 carried). As a vertex is finished, the strain of the edge from the
// vertex finished before (`unresolved_strain`'s, of the positions written)
// and, where `ahead_rows`, the next iteration's row of that edge, taken in
// the order this walk goes (`eliminate_projection_row`). One loop for both
// directions: the walk's state is carried once (a loop a direction took
// RADV's walked kernels past their registers; the CPU twin writes the two
// directions as two loops, the same steps in the same order). Carried: the edge before's
// δλ, correction, elimination factor and rest length, and the vertex
// finished before (position, inverse mass, whether it is held; its
// contact, which only a row built behind needs, is read again there).
fn substitute_and_move(o: u32, ne: u32, shake: bool, ahead_rows: bool, tolerance: f32, from_tip: bool) -> Substituted {
    var unresolved = -1.0;
    var t = row_elimination_start();
    var rows = select(ELIMINATED_NOT, ELIMINATED_AHEAD, ahead_rows);
    var lambda_prev = 0.0;
    var g_prev = vec3<f32>(0.0);
    var factor_prev = 0.0;
    var len_prev = 0.0;
    var x_prev = Position(vec4<i32>(0), vec4<f32>(0.0));
    var w_prev = 0.0;
    var held_prev = false;
    // ne rows, then a step for the last vertex, which only the last row's
    // edge moves (the tip, by its edge before it; the root, by its own):
    // there e is one past the last row (o + ne, or o − 1 wrapping), and the
    // vertex it names is that last one.
    for (var k = 0u; k <= ne; k++) {
        let e = select(o + ne - 1u - k, o + k, from_tip);
        // The vertex finished at this step.
        let v = select(e + 1u, e, from_tip);
        var row = vec4<f32>(0.0);
        var lambda = 0.0;
        var g = vec3<f32>(0.0);
        var held_other = false;
        var wv: f32;
        if (k < ne) {
            row = scratch_s(e);
            lambda = row.x - factor_prev * lambda_prev;
            g = 2.0 * scratch_kb(e).xyz * lambda;
            // Edge e's weight of vertex v takes whether its other end is held.
            let other = select(e, e + 1u, from_tip);
            held_other = held_of(filter_contact(other), rest[vertex_slot(other)].inv_mass);
            wv = row.z;
        } else {
            wv = rest[vertex_slot(v)].inv_mass;
        }
        let cv = filter_contact(v);
        // Edge e's move of v and the edge before's (zero where there is
        // none: g = 0 moves no bit), the edge before vertex v first.
        let now = edge_inv_mass_applied(cv, wv, held_other, g);
        let carried = edge_inv_mass_applied(cv, wv, held_prev, g_prev);
        var x = moved(pos_get(v), select(-now, -carried, from_tip));
        x = moved(x, select(carried, now, from_tip));
        pos_set(v, x);
        if (k > 0u) {
            unresolved = max(unresolved, edge_unresolved_of(len_prev, x_prev, x, w_prev + wv, tolerance, 4.0));
            if (rows == ELIMINATED_AHEAD) {
                // The next rows go the other way: row e − 1 from the root
                // after rows from the tip, row e + 1 from the tip after rows
                // from the root (its store and edge direction were read a
                // step ago).
                if (!projection_row_behind(&t, select(e + 1u, e - 1u, from_tip), len_prev, x_prev, w_prev, filter_contact(select(v + 1u, v - 1u, from_tip)), x, wv, cv, shake, from_tip)) {
                    rows = ELIMINATED_SINGULAR;
                }
            }
        }
        lambda_prev = lambda;
        g_prev = g;
        factor_prev = row.y;
        len_prev = row.w;
        x_prev = x;
        w_prev = wv;
        held_prev = held_of(cv, wv);
    }
    return Substituted(unresolved, rows);
}

// `eliminate_projection_row` of edge e between the vertex a walk visited
// before (`xp`, `wp`, `cp`) and the one it visits now (`x`, `w`, `c`), in
// the order the walk goes: from the root (`from_root`: the vertex before is
// vertex e, the rows are taken root first) or from the tip (the vertex
// before is e + 1, the rows are taken tip first). A moving walk that solves
// rows taken from the tip walks from the root, and the other way round.
fn projection_row_behind(t: ptr<function, RowElimination>, e: u32, rest_len: f32, xp: Position, wp: f32, cp: vec4<f32>, x: Position, w: f32, c: vec4<f32>, shake: bool, from_root: bool) -> bool {
    let f = from_root;
    let xa = Position(select(x.cell, xp.cell, f), select(x.rem, xp.rem, f));
    let xb = Position(select(xp.cell, x.cell, f), select(xp.rem, x.rem, f));
    return eliminate_projection_row(t, e, rest_len, xa, select(w, wp, f), select(c, cp, f), xb, select(wp, w, f), select(cp, c, f), shake, !f);
}

// A Newton iteration's system (src/cpu/project.rs `eliminate_rows`) built
// and eliminated a row at a time, from the tip or from the root. Row e:
// Aₑₑ = 4 eᵉ·(Wₑ + Wₑ₊₁) dᵉ, Cₑ = |eᵉ|² − |ēᵉ|², coupled to row e + 1 by
// Aₑ,ₑ₊₁ = −4 eᵉ·Wₑ₊₁ dᵉ⁺¹ and Aₑ₊₁,ₑ = −4 eᵉ⁺¹·Wₑ₊₁ dᵉ. An edge whose
// vertices are both anchored gets the row δλ = 0 and no coupling. In phase
// 1 vertices in contact move in their tangent plane only
// (`edge_inv_mass_applied`); an edge that then cannot change its length
// gets the row δλ = 0 too. Each row is eliminated as it is built (the
// Thomas algorithm's forward sweep on the rows in the walk's order, pivot
// and reduced right-hand side carried), storing per row only what the way
// back needs (`scratch[e].s`): the reduced right-hand side, the factor of
// the row eliminated before it and, in the same store, the inverse mass of
// the vertex the way back finishes with this row (e from the tip, e + 1
// from the root) and the edge's rest length, which the way back then need
// not read; and the edge direction (`kb`, fast projection). What it
// carries from the row before (row b: e + 1 from the tip, e − 1 from the
// root; the caller carries the vertices' positions, inverse masses and
// contacts, so each is read once):
struct RowElimination {
    d_before: vec3<f32>,    // edge b's vector (fast projection: its direction of correction)
    row_before: bool,       // whether edge b is a row
    held_far: bool,         // whether edge b's vertex apart from e's is held
    pivot: f32,             // row b's pivot; 0 before the first row
    rhs_before: f32,        // row b's reduced right-hand side
}

// Before the first row.
fn row_elimination_start() -> RowElimination {
    return RowElimination(vec3<f32>(0.0), false, false, 0.0, 0.0);
}

// Row e (edge e of rest length `rest_len`: vertex e at xa with inverse mass
// wa and `filter_contact` ca, vertex e + 1 at xb with wb and cb) built and
// eliminated, the row before it e + 1 (`from_tip`) or e − 1; false where
// its pivot is not positive (the system is singular: nothing stored).
fn eliminate_projection_row(s: ptr<function, RowElimination>, e: u32, rest_len: f32, xa: Position, wa: f32, ca: vec4<f32>, xb: Position, wb: f32, cb: vec4<f32>, shake: bool, from_tip: bool) -> bool {
    let held_a = held_of(ca, wa);
    let held_b = held_of(cb, wb);
    let d = displacement(xa, xb);
    // This iteration's edge vectors (fast), saved before any vertex
    // moves (in the kb slot, which the next kernel to need it
    // recomputes), or the start's (SHAKE, `save_start_edges`).
    var dir = d;
    if (shake) {
        dir = scratch_kb(e).xyz;
    } else {
        scratch_set_kb(e, vec4<f32>(d, 0.0));
    }
    let ma_dir = edge_inv_mass_applied(ca, wa, held_b, dir);
    let mb_dir = edge_inv_mass_applied(cb, wb, held_a, dir);
    let diag_e = 4.0 * dot(d, ma_dir + mb_dir);
    let scale = 4.0 * length(d) * length(dir) * (wa + wb);
    // `edge_active`: a row of the system, or a fixed edge.
    let row = wa + wb > 0.0 && diag_e > 1e-12 * scale;
    var diag = 1.0;
    var rhs = 0.0;
    if (row) {
        diag = diag_e;
        rhs = squared_length_error(xa, xb, rest_len);
    }
    // Elimination factor of row b: Aᵦ,ₑ over its pivot.
    var factor = 0.0;
    var pivot = diag;
    if ((*s).pivot != 0.0) {
        var upper = 0.0;
        var lower = 0.0;
        if ((*s).row_before && row) {
            // Aₑ,ᵦ: the shared vertex's W (e + 1 from the tip, e from the
            // root) as edge b uses it.
            let shared_c = select(ca, cb, from_tip);
            let shared_w = select(wa, wb, from_tip);
            // Edge b's direction of correction: its vector (fast), or the
            // start's edge, read again (SHAKE).
            var dir_before = (*s).d_before;
            if (shake) {
                dir_before = scratch_kb(select(e - 1u, e + 1u, from_tip)).xyz;
            }
            upper = -4.0 * dot(d, edge_inv_mass_applied(shared_c, shared_w, (*s).held_far, dir_before));
            // Aᵦ,ₑ: its W as edge e uses it: not symmetric to `upper`
            // where the vertex is stuck (weights by edge), nor for SHAKE
            // (dir is the start's edge).
            lower = -4.0 * dot((*s).d_before, select(ma_dir, mb_dir, from_tip));
        }
        factor = lower / (*s).pivot;
        pivot = diag - upper * factor;
        rhs = rhs - upper * (*s).rhs_before;
    }
    if (!(pivot > 0.0)) {
        return false;
    }
    let rhs_e = rhs / pivot;
    scratch_set_s(e, vec4<f32>(rhs_e, factor, select(wb, wa, from_tip), rest_len));
    *s = RowElimination(d, row, select(held_a, held_b, from_tip), pivot, rhs_e);
    return true;
}

// Length vertex v stands for in the chatter test (`chatter_length`): the
// mean of its adjacent rest edges.
fn chatter_length(v: u32) -> f32 {
    if (rest[vertex_slot(v)].voronoi > 0.0) {
        return 0.5 * rest[vertex_slot(v)].voronoi;
    }
    if (rest[vertex_slot(v)].rest_len > 0.0) {
        return rest[vertex_slot(v)].rest_len;
    }
    return rest[vertex_slot(v - 1u)].rest_len;
}

// src/model/stability.rs `reverses`.
fn reverses(v: vec3<f32>, u: vec3<f32>, h: f32, threshold: f32) -> bool {
    let t2 = (threshold / h) * (threshold / h);
    return dot(v, u) < 0.0 && dot(v, v) > t2 && dot(u, u) > t2;
}


// The fast projection, one invocation per rod walking it serially.
@compute @workgroup_size(64)
fn project_fast_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    newton_projection(r, false);
    loops_ran_out(r);
}

fn save_start_edges(r: u32) {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    for (var e = o; e < o + ne; e++) {
        scratch_set_kb(e, vec4<f32>(displacement(pos_start[vertex_slot(e)], pos_start[vertex_slot(e + 1u)]), 0.0));
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
    loops_ran_out(r);
}

@compute @workgroup_size(64)
fn save_start(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v >= params.vertex_count) {
        return;
    }
    pos_start[vertex_slot(v)] = pos_get(v);
}


// Also counts, in the velocity's chatter count (`chatter_of`), the
// consecutive substeps in which the forces reversed a free vertex's velocity (v − F h/m before the substep against the
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
    project_velocity_at(v, pos_get(v));
}

// `project_velocity_vertex` with vertex v's position p as read.
fn project_velocity_at(v: u32, p: Position) {
    // Read once: a read-write buffer's loads are not merged by the compiler.
    let u_unc = vel_get(v);
    let before = u_unc.xyz - scratch_force(v).xyz * (params.h * rest[vertex_slot(v)].inv_mass);
    // The projection's correction as one small difference (`displacement`),
    // not two f32 positions' difference with its noise of ε|x|/h.
    var u = u_unc.xyz + displacement(pos_unc_get(v), p) / params.h;
    let c = contact_get(v);
    if (contact_depth(c) > 0.0) {
        // Inelastic contact (src/cpu/project.rs `project_velocity`).
        let n = c.normal_depth.xyz;
        let out = dot(u - c.surface_velocity.xyz, n);
        if (out > 0.0) {
            u -= n * out;
        }
    }
    var count = chatter_of(u_unc);
    if (count < CHATTER_SUBSTEPS) {
        let free = rest[vertex_slot(v)].inv_mass > 0.0;
        let forced = dot(before, u_unc.xyz) < 0.0;
        if (free && forced && reverses(before, u, params.h, CHATTER_FRACTION * chatter_length(v))) {
            count += 1.0;
        } else {
            count = max(count - 2.0, 0.0);
        }
    }
    vel_set(v, velocity_and_chatter(u, count));
}

// What `velocity_frames_next` keeps from one vertex to the next.
struct VelocityFrames {
    before: Position,       // vertex v − 2
    x: Position,            // vertex v − 1
    carried: Transported,   // what the transport carries into edge v − 1
    first: u32,             // the rod's first vertex
}

fn velocity_frames_start(o: u32) -> VelocityFrames {
    let zero = Position(vec4<i32>(0), vec4<f32>(0.0));
    return VelocityFrames(zero, zero, transport_start(o), o);
}

// Vertex v of the rod, the one after the last handed on, final at x: its
// velocity, and once it has one before it, the edge (v − 1, v)'s transport
// and vertex v − 1's curvature binormal (zero at the rod's first vertex:
// there `before` is no vertex, and `select` discards what the formula
// gives).
fn velocity_frames_next(s: ptr<function, VelocityFrames>, v: u32, x: Position) {
    project_velocity_at(v, x);
    if (v > (*s).first) {
        let e = v - 1u;
        let kb = select(vec3<f32>(curvature_binormal_at((*s).before, (*s).x, x)), vec3<f32>(0.0), e == (*s).first);
        scratch_set_kb(e, vec4<f32>(kb, 0.0));
        (*s).carried = transport_edge(e, (*s).x, x, (*s).carried);
    }
    (*s).before = (*s).x;
    (*s).x = x;
}

// The rod's last vertex's binormal (zero: an end has no turn).
fn velocity_frames_end(o: u32, n: u32) {
    scratch_set_kb(o + n - 1u, vec4<f32>(0.0));
}
