// Kernel `frames` (src/cpu/frames.rs `frames`, then src/cpu/mod.rs
// `clamp_twist`): one invocation per rod. Carries the first edge's Bishop
// vector u⁰ in time to the new tangent, transports it along the rod, and sets
// the twist angle of each clamped end edge from its anchor at t + h.

fn frames_rod(r: u32) {
    let o = rods[r].vertex_offset;
    let n_edges = rods[r].vertex_count - 1u;
    // Time-parallel transport of u⁰ to the new first tangent.
    let t0 = normalize(displacement(pos[o], pos[o + 1u]));
    let u0 = parallel_transport(frame[o].ref_u.xyz, frame[o].tangent.xyz, t0);
    // Re-orthonormalise against round-off drift over many steps.
    frame[o].ref_u = vec4<f32>(normalize(u0 - t0 * dot(u0, t0)), 0.0);
    frame[o].tangent = vec4<f32>(t0, frame[o].tangent.w);
    // Space-parallel transport along the rod.
    for (var j = 1u; j < n_edges; j++) {
        let e = o + j;
        let t = normalize(displacement(pos[e], pos[e + 1u]));
        let u = parallel_transport(frame[e - 1u].ref_u.xyz, frame[e - 1u].tangent.xyz, t);
        frame[e].ref_u = vec4<f32>(normalize(u - t * dot(u, t)), 0.0);
        frame[e].tangent = vec4<f32>(t, frame[e].tangent.w);
    }
}

fn clamp_twist_edge(c: u32, e: u32) {
    let m1 = pose_vector(anchor_pose(clamps[c].anchor, params.slot_end), clamps[c].local_m1.xyz);
    let a = signed_angle(frame[e].ref_u.xyz, m1, frame[e].tangent.xyz);
    frame[e].tangent.w = unwrap_angle(a, frame[e].tangent.w);
}

fn clamp_twist(r: u32) {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    if (rods[r].start_clamp != NONE) {
        clamp_twist_edge(rods[r].start_clamp, o);
    }
    if (rods[r].end_clamp != NONE) {
        clamp_twist_edge(rods[r].end_clamp, o + ne - 1u);
    }
}

@compute @workgroup_size(64)
fn frames(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    frames_rod(r);
    clamp_twist(r);
}
