// Kernel `integrate` (the symplectic Euler loop and anchored vertices of
// `substep_rod` in src/cpu/mod.rs): one invocation per vertex. Velocity first,
// then position (§7.2); a vertex driven by an anchor goes where the anchor is
// at t + h with the velocity that takes it there. The unconstrained position
// goes to both `pos` and `pos_unc`, the latter kept for the velocity update
// after projection. Positions move by u·h in their remainder (`moved`), so
// a step far below ε|x| still counts.

@compute @workgroup_size(64)
fn integrate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v < params.vertex_count) {
        integrate_vertex(v);
    }
}

fn integrate_vertex(v: u32) {
    let h = params.h;
    let old = pos_get(v);
    let chatter = vel[v].w; // the count of `project_velocity`, kept
    var u = vel[v].xyz + scratch[v].force.xyz * (h * rest[v].inv_mass);
    var x = moved(old, u * h);
    let c = rest[v].clamp;
    if (c != NONE) {
        var local = clamps[c].local_pos0.xyz;
        if (rest[v].clamp_slot == 1u) {
            local = clamps[c].local_pos1.xyz;
        }
        x = position_at(pose_point(anchor_pose(clamps[c].anchor, params.slot_end), local, rods[rest[v].rod].origin.xyz));
        u = displacement(old, x) / h;
    }
    vel[v] = vec4<f32>(u, chatter);
    pos_set(v, x);
    pos_unc[v] = x;
}
