#import common
#import step_uniform

// Kernel `integrate` (the symplectic Euler loop and anchored vertices of
// `integrate` in src/cpu/integrate.rs, `anchored_positions`): one invocation per
// vertex. Velocity first, then position (§7.2); a vertex driven by an
// anchor goes where the anchor is at t + h with the velocity that takes it
// there. The unconstrained position goes to both `pos` and `pos_unc`, the
// latter kept for the velocity update after projection. Positions move by
// u·h in their remainder (`moved`), so a step far below ε|x| still counts.

@compute @workgroup_size(64)
fn integrate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v < params.vertex_count) {
        integrate_vertex(v);
    }
}

fn integrate_vertex(v: u32) {
    let c = rest[vertex_slot(v)].clamp;
    if (c == NONE) {
        integrate_free_vertex(v);
    } else {
        integrate_anchored_vertex(v, c, rest[vertex_slot(v)].clamp_slot);
    }
}

// The symplectic Euler update of vertex v (the CPU's first loop).
fn integrate_free_vertex(v: u32) {
    _ = integrate_free_vertex_from(v, pos_get(v), vel_get(v), scratch_force(v).xyz, params.h);
}

// `integrate_free_vertex` from vertex v's position, velocity (w: the count
// of `project_velocity`, kept) and force as read; h the substep (`params.h`,
// which a walk reads before its loop).
fn integrate_free_vertex_from(v: u32, old: Position, u_old: vec4<f32>, force: vec3<f32>, h: f32) -> Position {
    let u = u_old.xyz + force * (h * rest[vertex_slot(v)].inv_mass);
    let x = moved(old, u * h);
    vel_set(v, velocity_and_chatter(u, chatter_of(u_old)));
    pos_set(v, x);
    pos_unc_set(v, x);
    return x;
}

// Vertex v, held by clamp c (its first vertex for `slot` 0, its second for
// 1), where the anchor is at the end of the substep, with the velocity that
// takes it there (the CPU's `anchored_positions` loop).
fn integrate_anchored_vertex(v: u32, c: u32, slot: u32) {
    let old = pos_get(v);
    var local = clamps[c].local_pos0.xyz;
    if (slot == 1u) {
        local = clamps[c].local_pos1.xyz;
    }
    let x = position_at(pose_point(anchor_pose(clamps[c].anchor, step_slot_end()), local, rods[rest[vertex_slot(v)].rod].origin.xyz));
    vel_set(v, velocity_and_chatter(displacement(old, x) / params.h, chatter_of(vel_get(v))));
    pos_set(v, x);
    pos_unc_set(v, x);
}

// The vertices of rod r's clamps, after its free ones (src/cpu/integrate.rs
// `integrate`: its free loop, then `anchored_positions`), two per clamp, in
// the walked substep (`substep_start_walk`, whose forces sweep integrates
// the free ones). A software adapter thus reads a clamp and an anchor's
// pose per clamped vertex only, not under a lane mask at every vertex.
// Each clamped vertex is integrated once from its own old position: a rod
// clamped at both ends has at least 4 vertices (src/build.rs), so the two
// clamps' pairs never share a vertex.
fn integrate_clamped_ends(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let ends = vec2<u32>(rods[r].start_clamp, rods[r].end_clamp);
    for (var e = 0u; e < 2u; e++) {
        if (ends[e] != NONE) {
            let first = select(o, o + n - 2u, e == 1u);
            integrate_anchored_vertex(first, ends[e], 0u);
            integrate_anchored_vertex(first + 1u, ends[e], 1u);
        }
    }
}
