#import common
#import contact
#import forces
#import frames
#import grid
#import grid_sort
#import integrate
#import project
#import twist

// The walked substep (src/cpu/substep.rs `substep`, same stage names and
// order): one invocation takes its rod through every stage of a half
// substep. `substep_start_rod` runs forces, save_start (SHAKE) and
// integrate; `substep_finish_rod` the projection, contact, the filtered
// projection, contact again, project_velocity, the frames and the twist;
// `substep_rod` both halves in one dispatch. With hair–hair interaction a
// substep is `substep_start_rod`, the grid (which needs every rod's splat),
// then `substep_finish_rod`, whose first stage blends the rod's own
// vertices towards the grid (src/cpu/substep.rs `interact`, between the
// halves). Each stage is the walk its own staged kernel runs
// (`forces_walk`, `newton_projection`, ...), so the fused and staged
// schedules compute the same thing in the same order. The Jacobi
// projection, whose passes ping-pong between buffers, keeps the staged
// schedule (`schedule::substep_schedule`).

// `Step.projection` (src/gpu/layout.rs `PROJECTION_*`).
const PROJECTION_NONE: u32 = 0u;
const PROJECTION_FAST: u32 = 1u;
const PROJECTION_SHAKE: u32 = 2u;
const PROJECTION_JACOBI: u32 = 3u;

// --- The walked form: one invocation takes its rod through the same stages
// (the `*_rod` kernels' walks), for adapters that are CPUs. ---

// Returns the Newton iterations (0: the rod did not move). `unresolved`:
// what the stage before measured of the positions as they are
// (`StrainWalk`), or `STRAIN_UNMEASURED` for the projection to measure it.
fn project_walk(r: u32, shake: bool, unresolved: f32, handed: u32) -> u32 {
    if (shake) {
        save_start_edges(r);
    }
    if (rods[r].vertex_count < 2u) {
        return 0u; // no edge
    }
    // Measured first where the stage before did not, in a loop that runs
    // once where a lane needs it (an `if` would run the walk under a lane
    // mask on a CPU adapter), so that the Newton iterations are one copy of
    // their code in the kernel (every call site of a function is one).
    var u = unresolved;
    for (var measure = u == STRAIN_UNMEASURED; measure; measure = false) {
        u = unresolved_strain(r, projection_tolerance(), 4.0);
    }
    return newton_projection_from(r, shake, u, handed);
}

// forces, save_start (SHAKE) and integrate: the forces sweep
// (`elastic_forces`'s, step for step), each vertex taken on through the
// other two stages as its force is done (`start_vertex`), then the clamps'
// vertices (`integrate_clamped_ends`). The loop is `elastic_forces`'s with
// `start_vertex` for `write_force`, written twice rather than chosen by a
// flag: a flag would make the forces kernels use `pos_start` and `pos_unc`
// too, past the 8 storage buffers a WebGPU device allows a staged kernel.
// Returns what `unresolved_strain` (4 ulps) says of the positions it
// leaves (`StartStrain`) and, where `hand_off` (no grid stage moves the
// vertices before the projection: `substep_rod`, `frame_rod`) and the
// projection is fast, the first Newton iteration's rows built and
// eliminated (`StartHandOff`), for the projection after it.
fn substep_start_walk(r: u32, hand_off: bool) -> StartHandOff {
    let rod = rods[r];
    let sf = step_forces();
    let h = params.h;
    let shake = params.projection == PROJECTION_SHAKE;
    var w = sweep_start(rod);
    var strain = start_strain(hand_off && params.projection == PROJECTION_FAST);
    for (var k = rod.vertex_count - 2u; k >= 1u; k--) {
        let x = w.x_next;
        start_vertex(rod, sf, h, shake, k + 1u, sweep_vertex(rod, k, &w), x, &strain);
    }
    start_vertex(rod, sf, h, shake, 1u, vec3<f32>(w.f_next), w.x_next, &strain);
    start_vertex(rod, sf, h, shake, 0u, vec3<f32>(w.f_cur), w.x_cur, &strain);
    integrate_clamped_ends(r);
    return start_hand_off(r, strain);
}

// Local vertex i of rod r once the sweep has its elastic force and x its
// position: its force stored (`store_force`), its position saved as the
// substep's start (SHAKE), and unless a clamp holds it its symplectic Euler
// update, from the position and velocity in registers
// (`integrate_free_vertex_from`), which `strain` takes in. The sweep reads
// no vertex again once its force is done, and each vertex's update reads
// only its own values, so this is `forces`, `save_start` and `integrate`'s
// free loop in turn.
fn start_vertex(rod: Rod, sf: StepForces, h: f32, shake: bool, i: u32, elastic: vec3<f32>, x: Position, strain: ptr<function, StartStrain>) {
    let v = rod.vertex_offset + i;
    let u = vel_get(v);
    let f = store_force(rod, sf, i, elastic, x, u.xyz);
    if (shake) {
        pos_start[vertex_slot(v)] = x;
    }
    var moved_to = x;
    let free = rest[vertex_slot(v)].clamp == NONE;
    if (free) {
        moved_to = integrate_free_vertex_from(v, x, u, f, h);
    }
    start_strain_next(strain, v, moved_to, free);
}

// `unresolved_strain` (4 ulps, the projection's tolerance) of the
// positions the start walk leaves, taken as it goes, tip to root: edge v's
// part (`edge_unresolved_of`, from vertex v and v + 1 in that order, as
// `unresolved_strain` takes them) once both are final, a free vertex as
// the sweep integrates it; the edges at a clamp, whose vertices
// `integrate_clamped_ends` places after the sweep, then from the stored
// positions (`clamped_edges_strain`). The same edges, positions and
// maximum as `unresolved_strain` after the walk, which the projection then
// need not walk (as `StrainWalk` for the blend and contact).
// With `eliminate` (the fast projection, no grid stage before it), also
// the first Newton iteration's rows (`eliminate_projection_row`, phase 0: no contact
// filters), which the projection's first walk builds from the tip: row v
// once vertices v and v + 1 are final and every row after it is built; the
// rows of a start clamp's edges after it places them (`start_hand_off`).
// A rod whose tip is clamped hands none on (its first rows need the
// clamped vertices). The same rows, in the same order, from the same
// positions as the projection's walk, so the same values.
struct StartStrain {
    x: Position,            // vertex v + 1 after its update
    free: bool,             // whether it is free (final)
    m: f32,                 // the largest part so far, −1 with none
    t: RowElimination,      // rows from the tip up to edge v + 1
    tip: u32,               // the vertex the rows reach (v + 1 where the next is edge v)
    eliminated: u32,        // `ELIMINATED_AHEAD` while the rows go on
}

// `StartStrain.tip` before any vertex: the first visited (the rod's last)
// starts the rows.
const NO_TIP: u32 = 0xffffffffu;

// What the start walk hands the projection (`substep_start_walk`).
struct StartHandOff {
    unresolved: f32,        // `unresolved_strain`'s, 4 ulps
    eliminated: u32,        // `ELIMINATED_NOT`, `_AHEAD` or `_SINGULAR`
}

fn start_strain(eliminate: bool) -> StartStrain {
    let zero = Position(vec4<i32>(0), vec4<f32>(0.0));
    return StartStrain(zero, false, -1.0, row_elimination_start(), NO_TIP, select(ELIMINATED_NOT, ELIMINATED_AHEAD, eliminate));
}

// Vertex v, visited after v + 1, at x (final where `free`).
fn start_strain_next(s: ptr<function, StartStrain>, v: u32, x: Position, free: bool) {
    let w = rest[vertex_slot(v)].inv_mass;
    if (free && (*s).free) {
        let wb = rest[vertex_slot(v + 1u)].inv_mass;
        let len = rest[vertex_slot(v)].rest_len;
        let part = edge_unresolved_of(len, x, (*s).x, w + wb, projection_tolerance(), 4.0);
        (*s).m = max((*s).m, part);
        if ((*s).eliminated == ELIMINATED_AHEAD && (*s).tip == v + 1u) {
            // A copy: naga 30 cannot pass a pointer to a member of a
            // pointee (gfx-rs/wgpu#6875). Phase 0: no contact filters.
            var t = (*s).t;
            if (eliminate_projection_row(&t, v, len, x, w, vec4<f32>(0.0), (*s).x, wb, vec4<f32>(0.0), false, true)) {
                (*s).t = t;
                (*s).tip = v;
            } else {
                (*s).eliminated = ELIMINATED_SINGULAR;
            }
        }
    }
    if ((*s).tip == NO_TIP) {
        // The rod's last vertex: the rows start here if it is free.
        (*s).tip = v;
        if (!free) {
            (*s).eliminated = ELIMINATED_NOT;
        }
    }
    (*s).x = x;
    (*s).free = free;
}

// What the start walk hands on: the strain with the edges at the clamps
// (`clamped_edges_strain`), and the rows from the tip that it could not
// build as it went (a start clamp's edges), from the stored positions.
fn start_hand_off(r: u32, s: StartStrain) -> StartHandOff {
    let o = rods[r].vertex_offset;
    var eliminated = s.eliminated;
    if (eliminated == ELIMINATED_AHEAD) {
        var t = s.t;
        var xb = pos_get(s.tip);
        var wb = rest[vertex_slot(s.tip)].inv_mass;
        for (var v = s.tip; v > o; v--) {
            let xa = pos_get(v - 1u);
            let wa = rest[vertex_slot(v - 1u)].inv_mass;
            if (!eliminate_projection_row(&t, v - 1u, rest[vertex_slot(v - 1u)].rest_len, xa, wa, vec4<f32>(0.0), xb, wb, vec4<f32>(0.0), false, true)) {
                eliminated = ELIMINATED_SINGULAR;
                break;
            }
            xb = xa;
            wb = wa;
        }
    }
    return StartHandOff(clamped_edges_strain(r, s.m), eliminated);
}

// `m` with the parts of the edges that touch rod r's clamped vertices (the
// first two or the last two), from the positions stored.
fn clamped_edges_strain(r: u32, m: f32) -> f32 {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    let tolerance = projection_tolerance();
    var out = m;
    if (rods[r].start_clamp != NONE) {
        for (var e = o; e < min(o + 2u, o + ne); e++) {
            out = max(out, edge_unresolved(e, pos_get(e), pos_get(e + 1u), rest[vertex_slot(e)].inv_mass + rest[vertex_slot(e + 1u)].inv_mass, tolerance, 4.0));
        }
    }
    if (rods[r].end_clamp != NONE) {
        for (var e = o + ne - min(2u, ne); e < o + ne; e++) {
            out = max(out, edge_unresolved(e, pos_get(e), pos_get(e + 1u), rest[vertex_slot(e)].inv_mass + rest[vertex_slot(e + 1u)].inv_mass, tolerance, 4.0));
        }
    }
    return out;
}

// `blended`: what the start walk hands on (`substep_start_walk`), or the
// blend's `StrainWalk` (`grid_blend_rod`, `STRAIN_UNMEASURED` where no
// blend ran) with no rows eliminated.
fn substep_finish_walk(r: u32, blended: StartHandOff) {
    let shake = params.projection == PROJECTION_SHAKE;
    let project = params.projection == PROJECTION_FAST || shake;
    stage_phase = 0u;
    if (project) {
        project_walk(r, shake, blended.unresolved, blended.eliminated);
    }
    var second = false;
    if (colliders.count > 0u) {
        let done = contact_walk(r);
        let held = done.held;
        stage_phase = 1u;
        var moved = false;
        if (project) {
            moved = project_walk(r, shake, done.unresolved, ELIMINATED_NOT) > 0u;
        }
        // The second contact pass only where it can change something, as on
        // the CPU (src/cpu/substep.rs `substep_finish`): a rod that phase 0 left
        // out of contact (`held`, the walk's answer to `rod_in_contact`) and
        // the filtered projection did not move is where phase 0 found
        // nothing, so the pass would find nothing and change nothing (exact).
        second = moved || held;
    }
    // The last walk that moves vertices, where one runs, takes the
    // velocities and frames behind its stores (a walk fewer a substep);
    // elsewhere they have their own.
    if (second) {
        contact_velocity_frames_walk(r);
    } else {
        velocity_frames_walk(r);
    }
    clamp_twist(r);
    twist_solve(r);
}

// `project_velocity` of rod r's vertices, `transport_rod` and
// `curvature_binormals` (the first walk of `twist_walk`) in one walk, each
// position read once for the three (on a CPU adapter every read is a loop
// over the lanes). They are independent: `project_velocity` writes only
// velocities, the transport only frames, the binormals only `scratch[v].kb`,
// and each reads of the others' only positions, which none of them moves
// (`project_velocity` also reads a vertex's velocity, contact, unconstrained
// position and force);
// `clamp_twist`, between the transport and the twist on the CPU, reads and
// writes only the clamped edges' frames. So the same values as the three in
// turn (tests/gpu_fused.rs compares this kernel with the staged ones). The
// walk hands its vertices one at a time, root to tip, to
// `velocity_frames_next`, which contact's second pass also does as it
// stores each vertex for the last time (`contact_velocity_frames_walk`).
fn velocity_frames_walk(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    var s = velocity_frames_start(o);
    for (var v = o; v < o + n; v++) {
        velocity_frames_next(&s, v, pos_get(v));
    }
    velocity_frames_end(o, n);
}

// With hair–hair interaction the walked substep is `substep_start_rod`,
// `grid_extent`, `grid_velocity_box` (over the region of nodes the splats
// reached, shaders/grid.wgsl), `substep_finish_rod`.
@compute @workgroup_size(64)
fn substep_start_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r < params.rod_count) {
        _ = substep_start_walk(r, false);
        // (With the sorted splat, its kernels splat after this dispatch.)
        if (params.splat == SPLAT_OWN) {
            grid_splat_rod(r);
        }
    }
}

@compute @workgroup_size(64)
fn substep_finish_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r < params.rod_count) {
        substep_finish_walk(r, StartHandOff(grid_blend_rod(r), ELIMINATED_NOT));
        loops_ran_out(r);
    }
}

@compute @workgroup_size(64)
fn substep_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r < params.rod_count) {
        substep_finish_walk(r, substep_start_walk(r, true));
        loops_ran_out(r);
    }
}
