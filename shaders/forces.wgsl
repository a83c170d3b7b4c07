// Kernel `forces` (src/cpu/forces.rs and `rod_forces` in src/cpu/mod.rs):
// one invocation per rod. Elastic forces −dE/dx with the holonomy terms
// (eq. 9–11) summed from the tip, then gravity and drag in the wind field.

fn holonomy_gradient(kb: vec3<f32>, len_prev: f32, len_next: f32) -> VertexTriple {
    let a = kb / (2.0 * len_prev);
    let c = -kb / (2.0 * len_next);
    return VertexTriple(a, -(a + c), c);
}

fn add_force(v: u32, f: vec3<f32>) {
    scratch[v].force = vec4<f32>(scratch[v].force.xyz + f, 0.0);
}

fn elastic_forces(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let ne = n - 1u;
    let b = rods[r].bending.xyz;
    // Bending through the curvature binormal.
    var prev = edge_material_frame(o, false);
    for (var i = 1u; i + 1u < n; i++) {
        let v = o + i;
        let next = edge_material_frame(v, false);
        let kb = scratch[v].kb.xyz;
        let l = rest[v].voronoi;
        // k = ∂E/∂(κb)ᵢ = Σⱼ (g₁ m₂ʲ − g₂ m₁ʲ) with g = Bʲ(ω − ω̄)/l̄ᵢ.
        let g0 = apply_bending(b, material_curvature(kb, prev) - rest[v].rest_kappa.xy) / l;
        let g1 = apply_bending(b, material_curvature(kb, next) - rest[v].rest_kappa.zw) / l;
        let k = prev.m2 * g0.x - prev.m1 * g0.y + next.m2 * g1.x - next.m1 * g1.y;
        let g = curvature_binormal_gradient_t(pos[v].xyz - pos[v - 1u].xyz, pos[v + 1u].xyz - pos[v].xyz, kb, k);
        add_force(v - 1u, -g.prev);
        add_force(v, -g.mid);
        add_force(v + 1u, -g.next);
        prev = next;
    }
    // Holonomy: Cⱼ = ∂E_bend/∂θʲ, except at a clamped last edge where
    // Cₙ = −∂E_twist/∂θⁿ.
    var s = scratch[o + ne - 1u].g.x;
    if (rods[r].end_clamp != NONE) {
        s = -scratch[o + ne - 1u].g.y;
    }
    for (var k = n - 2u; k >= 1u; k--) {
        // Here s = Σ_{j≥k} Cⱼ.
        let v = o + k;
        let len_prev = length(pos[v].xyz - pos[v - 1u].xyz);
        let len_next = length(pos[v + 1u].xyz - pos[v].xyz);
        let g = holonomy_gradient(scratch[v].kb.xyz, len_prev, len_next);
        add_force(v - 1u, -s * g.prev);
        add_force(v, -s * g.mid);
        add_force(v + 1u, -s * g.next);
        s += scratch[v - 1u].g.x;
    }
}

// Air velocity at x: U + g d̂ sin(2π(f t − d̂·x/λ)) (src/params.rs `Wind::at`).
fn wind_at(x: vec3<f32>) -> vec3<f32> {
    if (params.wind.w == 0.0) {
        return params.wind.xyz;
    }
    let phase = params.wind_phase - params.gust.w * dot(params.gust.xyz, x);
    return params.wind.xyz + params.gust.xyz * (params.wind.w * sin(phase));
}

fn external_forces(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let c = rods[r].drag;
    for (var i = 0u; i < n; i++) {
        let v = o + i;
        var len = rest[v].rest_len;
        if (i > 0u) {
            len += rest[v - 1u].rest_len;
        }
        len *= 0.5;
        var f = params.gravity.xyz * rest[v].mass;
        if (c > 0.0) {
            f -= (vel[v].xyz - wind_at(pos[v].xyz)) * (c * len);
        }
        add_force(v, f);
    }
}

@compute @workgroup_size(64)
fn forces(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    curvature_binormals(r);
    twist_gradient(r, false);
    for (var i = 0u; i < n; i++) {
        scratch[o + i].force = vec4<f32>(0.0);
    }
    elastic_forces(r);
    external_forces(r);
}
