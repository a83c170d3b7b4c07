#import common
#import step_uniform

// Kernel `frames_rod` (src/cpu/frames.rs: `frames`, then
// `clamp_twist`): carry the first edge's Bishop vector u⁰ in time to the new
// tangent, transport it along the rod, and set the twist angle of each
// clamped end edge from its anchor at t + h. One invocation per rod, the
// transport edge after edge (`frames`).

fn transport_rod(r: u32) {
    let o = rods[r].vertex_offset;
    let n_edges = rods[r].vertex_count - 1u;
    // The walk carries the far end of the last edge and its new frame, so
    // each position and frame is read once (a software adapter reads
    // storage lane by lane); the same values as reading them back.
    var carried = transport_start(o);
    var xb = pos_get(o);
    for (var e = o; e < o + n_edges; e++) {
        let xa = xb;
        xb = pos_get(e + 1u);
        carried = transport_edge(e, xa, xb, carried);
    }
}

// An edge's new tangent and Bishop vector, carried along the walk.
struct Transported {
    t: vec3<f32>,
    u: vec3<f32>,
}

// What the walk carries into rod o's first edge: that edge's tangent and
// Bishop vector at the start of the step, which `transport_edge` carries in
// time to its new tangent (the time-parallel transport of u⁰) by the same
// rotation as the space-parallel transport carries one edge's to the next.
fn transport_start(o: u32) -> Transported {
    let f0 = frame_get(o);
    return Transported(f0.tangent.xyz, f0.ref_u.xyz);
}

// Edge e (from xa to xb): the Bishop vector carried in (the edge before's,
// or for the first edge its own at the start of the step) carried to its
// new tangent, its frame written.
fn transport_edge(e: u32, xa: Position, xb: Position, prev: Transported) -> Transported {
    let t = normalize(displacement(xa, xb));
    let u = parallel_transport(prev.u, prev.t, t);
    // Re-orthonormalise against round-off drift over many steps.
    let u_new = normalize(u - t * dot(u, t));
    frame_set(e, EdgeFrame(vec4<f32>(t, frame_theta(e)), vec4<f32>(u_new, 0.0)));
    return Transported(t, u_new);
}

fn clamp_twist_edge(c: u32, e: u32) {
    let m1 = pose_vector(anchor_pose(clamps[c].anchor, step_slot_end()), clamps[c].local_m1.xyz);
    let a = signed_angle(frame_ref_u(e).xyz, m1, frame_tangent(e).xyz);
    frame_set_theta(e, unwrap_angle(a, frame_theta(e)));
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
fn frames_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    transport_rod(r);
    clamp_twist(r);
}
