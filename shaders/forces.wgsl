// Kernel `forces` (src/cpu/forces.rs and `rod_forces` in src/cpu/mod.rs):
// one invocation per rod. Elastic forces −dE/dx with the holonomy terms
// (eq. 9–11) in one sweep from the tip, plus gravity and drag in the wind.

fn holonomy_gradient(kb: vec3<f32>, len_prev: f32, len_next: f32) -> VertexTriple {
    let a = kb / (2.0 * len_prev);
    let c = -kb / (2.0 * len_next);
    return VertexTriple(a, -(a + c), c);
}

// Elastic forces in one sweep from the tip (src/cpu/forces.rs
// `elastic_forces`): at interior vertex k the bending term through (κb)ₖ and
// the holonomy term Sₖ∇ψₖ (Sₖ = Σ_{j≥k} Cⱼ) both act on k−1, k, k+1, so vertex
// k+1 is complete once k is done: three running sums in registers, and every
// vertex's force is written once, gravity and drag added as it is written.
fn elastic_forces(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let ne = n - 1u;
    let b = rods[r].bending.xyz;
    // Holonomy: Cⱼ = ∂E_bend/∂θʲ, except at a clamped last edge where
    // Cₙ = −∂E_twist/∂θⁿ.
    var s = scratch[o + ne - 1u].g.x;
    if (rods[r].end_clamp != NONE) {
        s = -scratch[o + ne - 1u].g.y;
    }
    // Running sums for vertices k+1 and k.
    var f_next = vec3<f32>(0.0);
    var f_cur = vec3<f32>(0.0);
    var next = edge_material_frame(o + ne - 1u, false);
    for (var k = n - 2u; k >= 1u; k--) {
        // Here s = Σ_{j≥k} Cⱼ.
        let v = o + k;
        let prev = edge_material_frame(v - 1u, false);
        let kb = scratch[v].kb.xyz;
        let l = rest[v].voronoi;
        // Bending: ∂E/∂(κb)ₖ = Σⱼ (g₁ m₂ʲ − g₂ m₁ʲ) with g = Bʲ(ω − ω̄)/l̄ₖ.
        let g0 = apply_bending(b, material_curvature(kb, prev) - rest[v].rest_kappa.xy) / l;
        let g1 = apply_bending(b, material_curvature(kb, next) - rest[v].rest_kappa.zw) / l;
        let dk = prev.m2 * g0.x - prev.m1 * g0.y + next.m2 * g1.x - next.m1 * g1.y;
        let e0 = displacement(pos[v - 1u], pos[v]);
        let e1 = displacement(pos[v], pos[v + 1u]);
        let g = curvature_binormal_gradient_t(e0, e1, kb, dk);
        let hg = holonomy_gradient(kb, length(e0), length(e1));
        f_next -= g.next + hg.next * s;
        f_cur -= g.mid + hg.mid * s;
        let f_prev = -(g.prev + hg.prev * s);
        // Vertex k+1 is complete.
        write_force(r, k + 1u, f_next);
        f_next = f_cur;
        f_cur = f_prev;
        s += scratch[v - 1u].g.x;
        next = prev;
    }
    write_force(r, 1u, f_next);
    write_force(r, 0u, f_cur);
}

// Air velocity at x: U + g d̂ sin(2π(f t − d̂·x/λ)) (src/params.rs `Wind::at`).
fn wind_at(x: vec3<f32>) -> vec3<f32> {
    if (params.wind.w == 0.0) {
        return params.wind.xyz;
    }
    let phase = params.wind_phase - params.gust.w * dot(params.gust.xyz, x);
    return params.wind.xyz + params.gust.xyz * (params.wind.w * sin(phase));
}

// Gravity and linear drag −c L (v − w(x, t)) on local vertex i of rod r, L its
// Voronoi length (src/cpu/forces.rs `external_forces`).
fn external_force(r: u32, i: u32) -> vec3<f32> {
    let v = rods[r].vertex_offset + i;
    let c = rods[r].drag;
    var len = rest[v].rest_len;
    if (i > 0u) {
        len += rest[v - 1u].rest_len;
    }
    len *= 0.5;
    var f = params.gravity.xyz * rest[v].mass;
    if (c > 0.0) {
        f -= (vel[v].xyz - wind_at(rods[r].origin.xyz + position_f32(pos[v]))) * (c * len);
    }
    return f;
}

fn write_force(r: u32, i: u32, elastic: vec3<f32>) {
    scratch[rods[r].vertex_offset + i].force = vec4<f32>(elastic + external_force(r, i), 0.0);
}

@compute @workgroup_size(64)
fn forces(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    curvature_binormals(r);
    twist_gradient(r, false);
    elastic_forces(r);
}
