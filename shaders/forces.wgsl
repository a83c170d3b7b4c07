#import common
#import real_f32
#import step_uniform
#import twist

// Kernel `forces_rod` (src/cpu/forces.rs, `rod_forces` and
// `elastic_forces`): elastic forces −dE/dx with the holonomy terms (eq. 9–11),
// plus gravity and drag in the wind. One invocation per rod, one sweep from
// the tip (`elastic_forces`).

fn holonomy_gradient(kb: vec3<real>, len_prev: real, len_next: real) -> VertexTriple {
    // One division a length, not one a component: a GPU's f64 division is
    // a software sequence.
    let a = kb * (0.5 / len_prev);
    let c = -kb * (0.5 / len_next);
    return VertexTriple(a, -(a + c), c);
}

// b − a in `real` (`displacement` where real is f32).
fn edge_between(a: Position, b: Position) -> vec3<real> {
    return vec3<real>(quanta_between(a, b)) + (vec3<real>(b.rem.xyz) - vec3<real>(a.rem.xyz));
}

// Interior vertex v's bending stencil (src/cpu/forces.rs `bending_stencil`).
struct Stencil {
    // (∇κb)ᵀ ∂E/∂(κb) on v − 1, v, v + 1.
    grad: VertexTriple,
    kb: vec3<real>,
    // |eᵛ⁻¹|, |eᵛ|.
    lens: vec2<real>,
    // The vertex's parts of C of its two edges, (Jω)ᵀB(ω − ω̄)/l̄.
    c: vec2<f32>,
}

// `material_curvature`, `apply_bending` and `rot_j` in `real`.
fn material_curvature_real(kb: vec3<real>, f: MaterialFrame) -> vec2<real> {
    return vec2<real>(dot(kb, vec3<real>(f.m2)), -dot(kb, vec3<real>(f.m1)));
}

fn apply_bending_real(b: vec3<real>, w: vec2<real>) -> vec2<real> {
    return vec2<real>(b.x * w.x + b.y * w.y, b.y * w.x + b.z * w.y);
}

fn rot_j_real(w: vec2<real>) -> vec2<real> {
    return vec2<real>(-w.y, w.x);
}

// x0, x1, x2: the positions of v − 1, v, v + 1 (the walk carries them).
fn bending_stencil(v: u32, bending: vec3<f32>, prev: MaterialFrame, next: MaterialFrame, x0: Position, x1: Position, x2: Position) -> Stencil {
    let b = vec3<real>(bending);
    let kb = curvature_binormal_at(x0, x1, x2);
    let l = real(rest[vertex_slot(v)].voronoi);
    let w0 = material_curvature_real(kb, prev);
    let w1 = material_curvature_real(kb, next);
    let bd0 = apply_bending_real(b, w0 - vec2<real>(rest[vertex_slot(v)].rest_kappa.xy));
    let bd1 = apply_bending_real(b, w1 - vec2<real>(rest[vertex_slot(v)].rest_kappa.zw));
    // 1/l̄ once (as in `holonomy_gradient`).
    let il = 1.0 / l;
    let c = vec2<f32>(vec2<real>(dot(rot_j_real(w0), bd0), dot(rot_j_real(w1), bd1)) * il);
    // ∂E/∂(κb) = Σⱼ (g₁ m₂ʲ − g₂ m₁ʲ) with g = Bʲ(ω − ω̄)/l̄.
    let g0 = bd0 * il;
    let g1 = bd1 * il;
    let dk = vec3<real>(prev.m2) * g0.x - vec3<real>(prev.m1) * g0.y + vec3<real>(next.m2) * g1.x - vec3<real>(next.m1) * g1.y;
    let e0 = edge_between(x0, x1);
    let e1 = edge_between(x1, x2);
    return Stencil(curvature_binormal_gradient_t(e0, e1, kb, dk), kb, vec2<real>(length_real(e0), length_real(e1)), c);
}

// Elastic forces in one sweep from the tip (src/cpu/forces.rs
// `elastic_forces`): at interior vertex k the bending term through (κb)ₖ and
// the holonomy term Sₖ∇ψₖ (Sₖ = Σ_{j≥k} Cⱼ) both act on k−1, k, k+1, so vertex
// k+1 is complete once k is done: three running sums in registers, and every
// vertex's force is written once, gravity and drag added as it is written.
// The sweep carries the positions of k and k+1 down, so each is read once
// (a software adapter reads storage lane by lane). Cⱼ = ∂E_bend/∂θʲ is the
// sum of the parts of edge j's two vertices, each its stencil's `c`
// (`twist_gradient`'s terms): vertex k's stencil completes Cₖ before Sₖ is
// used and starts Cₖ₋₁, so no gradient is read from memory.
fn elastic_forces(r: u32) {
    let rod = rods[r];
    let sf = step_forces();
    var w = sweep_start(rod);
    for (var k = rod.vertex_count - 2u; k >= 1u; k--) {
        let x = w.x_next;
        write_force(rod, sf, k + 1u, sweep_vertex(rod, k, &w), x);
    }
    write_force(rod, sf, 1u, vec3<f32>(w.f_next), w.x_next);
    write_force(rod, sf, 0u, vec3<f32>(w.f_cur), w.x_cur);
}

// The sweep's state from one vertex to the next (`elastic_forces`): Sₖ (or
// its part so far), the running sums of vertices k+1 and k, edge k's
// material frame, the positions of k+1 and k.
struct Sweep {
    s: f32,
    f_next: vec3<real>,
    f_cur: vec3<real>,
    next: MaterialFrame,
    x_next: Position,
    x_cur: Position,
}

fn sweep_start(rod: Rod) -> Sweep {
    let o = rod.vertex_offset;
    let n = rod.vertex_count;
    let ne = n - 1u;
    // Holonomy: Cⱼ = ∂E_bend/∂θʲ, except at a clamped last edge where
    // Cₙ = −∂E_twist/∂θⁿ = −2β(θⁿ − θⁿ⁻¹)/l̄ₙ (the last interior vertex's
    // twisting term).
    var s = 0.0;
    if (rod.end_clamp != NONE && n >= 3u) {
        let v = o + ne - 1u;
        let m = frame_theta(v) - frame_theta(v - 1u);
        s = -(2.0 * rod.bending.w * m / rest[vertex_slot(v)].voronoi);
    }
    return Sweep(s, vec3<real>(0.0), vec3<real>(0.0), edge_material_frame(o + ne - 1u, false), pos_get(o + n - 1u), pos_get(o + n - 2u));
}

// Interior vertex k's stencil, in the sweep from the tip: returns vertex
// k + 1's elastic force, complete, and moves the sweep down one vertex.
fn sweep_vertex(rod: Rod, k: u32, w: ptr<function, Sweep>) -> vec3<f32> {
    let v = rod.vertex_offset + k;
    let prev = edge_material_frame(v - 1u, false);
    let x_prev = pos_get(v - 1u);
    let st = bending_stencil(v, rod.bending.xyz, prev, (*w).next, x_prev, (*w).x_cur, (*w).x_next);
    // Cₖ complete (but a clamped last edge's): here s = Σ_{j≥k} Cⱼ.
    if (k + 2u < rod.vertex_count || rod.end_clamp == NONE) {
        (*w).s -= st.c.y;
    }
    let g = st.grad;
    let hg = holonomy_gradient(st.kb, st.lens.x, st.lens.y);
    let sr = real((*w).s);
    let done = vec3<f32>((*w).f_next - (g.next + hg.next * sr));
    (*w).f_next = (*w).f_cur - (g.mid + hg.mid * sr);
    (*w).f_cur = -(g.prev + hg.prev * sr);
    // Vertex k's part of Cₖ₋₁.
    (*w).s -= st.c.x;
    (*w).next = prev;
    (*w).x_next = (*w).x_cur;
    (*w).x_cur = x_prev;
    return done;
}

// What the forces read of the step, read before a walk's loop and passed
// on: on a software adapter a uniform read inside a loop is a read lane by
// lane on every pass.
struct StepForces {
    gravity: vec3<f32>,
    wind: vec4<f32>,
    gust: vec4<f32>,
    wind_phase: f32,
}

fn step_forces() -> StepForces {
    return StepForces(params.gravity.xyz, params.wind, params.gust, step_wind_phase());
}

// Air velocity at x: U + g d̂ sin(2π(f t − d̂·x/λ)) (src/model/params.rs `Wind::at`).
fn wind_at(sf: StepForces, x: vec3<f32>) -> vec3<f32> {
    if (sf.wind.w == 0.0) {
        return sf.wind.xyz;
    }
    let phase = sf.wind_phase - sf.gust.w * dot(sf.gust.xyz, x);
    return sf.wind.xyz + sf.gust.xyz * (sf.wind.w * sin(phase));
}

// Gravity and linear drag −c L (v − w(x, t)) on local vertex i of rod
// `rod`, L its Voronoi length (src/cpu/forces.rs `external_forces`); x its
// position, u its velocity (used only where there is drag).
fn external_force(rod: Rod, sf: StepForces, i: u32, x: Position, u: vec3<f32>) -> vec3<f32> {
    let v = rod.vertex_offset + i;
    let c = rod.drag;
    var len = rest[vertex_slot(v)].rest_len;
    if (i > 0u) {
        len += rest[vertex_slot(v - 1u)].rest_len;
    }
    len *= 0.5;
    var f = sf.gravity * rest[vertex_slot(v)].mass;
    if (c > 0.0) {
        f -= (u - wind_at(sf, rod.origin.xyz + position_f32(x))) * (c * len);
    }
    return f;
}

// x: the vertex's position; its velocity is read only where there is drag.
fn write_force(rod: Rod, sf: StepForces, i: u32, elastic: vec3<f32>, x: Position) {
    var u = vec3<f32>(0.0);
    if (rod.drag > 0.0) {
        u = vel_get(rod.vertex_offset + i).xyz;
    }
    store_force(rod, sf, i, elastic, x, u);
}

// Local vertex i's total force, its elastic part given, x its position and
// u its velocity: stored for `integrate` and `project_velocity`, and
// returned.
fn store_force(rod: Rod, sf: StepForces, i: u32, elastic: vec3<f32>, x: Position, u: vec3<f32>) -> vec3<f32> {
    let f = elastic + external_force(rod, sf, i, x, u);
    scratch_set_force(rod.vertex_offset + i, vec4<f32>(f, 0.0));
    return f;
}

fn forces_walk(r: u32) {
    elastic_forces(r);
}

@compute @workgroup_size(64)
fn forces_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    forces_walk(r);
}
