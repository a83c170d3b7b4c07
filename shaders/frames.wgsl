// Kernels `frames` and `frames_rod` (src/cpu/frames.rs, then src/cpu/mod.rs
// `clamp_twist`): carry the first edge's Bishop vector u⁰ in time to the new
// tangent, transport it along the rod, and set the twist angle of each
// clamped end edge from its anchor at t + h.
// * `frames_rod`: one invocation per rod, the transport edge after edge
//   (`frames`). Chosen on CPU adapters (`GpuSimulator::packed`).
// * `frames`: one workgroup per pack of consecutive rods (src/gpu/pack.rs,
//   as shaders/project_pack.wgsl), row i the edge starting at vertex v0 + i:
//   the stages of `frames_scan`, the transports as unit quaternions
//   (`transport_quaternion`) composed by the doubling scan of
//   `prefix_products`. A rod longer than a pack is walked by one invocation.

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

// Parallel transport from unit t1 to unit t2 as a unit quaternion (xyz, w):
// normalize(t1 × t2, 1 + t1·t2) (src/cpu/frames.rs `transport_quaternion`).
fn transport_quaternion(t1: vec3<f32>, t2: vec3<f32>) -> vec4<f32> {
    return normalize(vec4<f32>(cross(t1, t2), 1.0 + dot(t1, t2)));
}

// The Hamilton product a b (rotation b, then a).
fn quaternion_product(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(a.w * b.xyz + b.w * a.xyz + cross(a.xyz, b.xyz), a.w * b.w - dot(a.xyz, b.xyz));
}

// Per edge row: its unit tangent, in `pack_rows_a` (shaders/common.wgsl) as
// .xyz. Per edge row j, in `pack_rows_b`: the transport from edge j−1 (the
// identity for a rod's first edge), then after the scan Qⱼ, the transport
// from the first edge.
// Per rod of the pack: u⁰ carried in time, in `pack_rods_a` as .xyz.

fn frames_pack(w: u32, lid: u32) {
    let rods_of = pack_rods(w);
    let first = rods_of.x;
    let v0 = rods[first].vertex_offset;
    let last = rods_of.y - 1u;
    let n = rods[last].vertex_offset + rods[last].vertex_count - v0;
    if (n > PACK_ROWS) {
        // A rod longer than a pack: serially, on one invocation.
        if (lid == 0u) {
            transport_rod(first);
            clamp_twist(first);
        }
        return;
    }
    // (a) Tangents; the first edge's u⁰ carried in time to its new tangent.
    for (var q = 0u; q < row_loop_end(lid, n); q++) {
        let i = lid + q * PACK_WORKGROUP;
        if (i < n) {
            let v = v0 + i;
            let r = rest[vertex_slot(v)].rod;
            let j = v - rods[r].vertex_offset;
            if (j + 1u < rods[r].vertex_count) {
                let t = normalize(displacement(pos_get(v), pos_get(v + 1u)));
                pack_rows_a[i] = vec4<f32>(t, 0.0);
                if (j == 0u) {
                    let u0 = parallel_transport(frame_ref_u(v).xyz, frame_tangent(v).xyz, t);
                    // Re-orthonormalise against round-off drift over many steps.
                    pack_rods_a[r - first] = vec4<f32>(normalize(u0 - t * dot(u0, t)), 0.0);
                }
            }
        }
    }
    workgroupBarrier();
    // (b) Each edge's transport from the one before.
    for (var q = 0u; q < row_loop_end(lid, n); q++) {
        let i = lid + q * PACK_WORKGROUP;
        if (i < n) {
            let v = v0 + i;
            let r = rest[vertex_slot(v)].rod;
            let j = v - rods[r].vertex_offset;
            var p = vec4<f32>(0.0, 0.0, 0.0, 1.0);
            if (j > 0u && j + 1u < rods[r].vertex_count) {
                p = transport_quaternion(pack_rows_a[i - 1u].xyz, pack_rows_a[i].xyz);
            }
            pack_rows_b[i] = p;
        }
    }
    workgroupBarrier();
    // (c) Qⱼ = Pⱼ ⋯ P₁ within each rod by the doubling scan
    // (src/cpu/frames.rs `prefix_products`, level for level; the levels of
    // the pack's longest rod).
    let most = pack_most_edges(rods_of);
    for (var s = 1u; s < most; s *= 2u) {
        var products: array<vec4<f32>, ROWS_PER_INVOCATION>;
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                let j = v - rods[rest[vertex_slot(v)].rod].vertex_offset;
                products[q] = pack_rows_b[i];
                if (j >= s) {
                    products[q] = quaternion_product(products[q], pack_rows_b[i - s]);
                }
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                pack_rows_b[i] = products[q];
            }
        }
        workgroupBarrier();
    }
    // (d) uʲ = Qⱼ u⁰, re-orthonormalised against tʲ, each frame written
    // once; the row of a clamped end edge sets its twist from the anchor.
    for (var q = 0u; q < row_loop_end(lid, n); q++) {
        let i = lid + q * PACK_WORKGROUP;
        if (i < n) {
            let v = v0 + i;
            let r = rest[vertex_slot(v)].rod;
            let j = v - rods[r].vertex_offset;
            let ne = rods[r].vertex_count - 1u;
            if (j < ne) {
                let t = pack_rows_a[i].xyz;
                var u = pack_rods_a[r - first].xyz;
                if (j > 0u) {
                    u = rotate(normalize(pack_rows_b[i]), u);
                    u = normalize(u - t * dot(u, t));
                }
                frame_set_ref_u(v, vec4<f32>(u, 0.0));
                frame_set_tangent(v, vec4<f32>(t, frame_theta(v)));
                if (j == 0u && rods[r].start_clamp != NONE) {
                    clamp_twist_edge(rods[r].start_clamp, v);
                }
                if (j + 1u == ne && rods[r].end_clamp != NONE) {
                    clamp_twist_edge(rods[r].end_clamp, v);
                }
            }
        }
    }
}

@compute @workgroup_size(PACK_WORKGROUP)
fn frames(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    let w = pack_index(wid, groups);
    if (w >= params.rod_count || rods[w].pack_end == 0u) {
        return;
    }
    frames_pack(w, lid);
}
