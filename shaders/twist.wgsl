// Kernel `twist` (src/cpu/twist.rs): one invocation per rod. The quasistatic
// material frame, ∂E/∂θʲ = 0 for the angles no clamp prescribes (§5), by
// Newton's method on the tridiagonal Hessian with a backtracking line search,
// warm-started from the previous angles.
//
// f32: a Newton step is resolved only to about ε·|θ|, so the stopping
// tolerance is at least max(TWIST_TOLERANCE_F32, 4ε max|θ|), and the Armijo test allows the
// energy to rise by ENERGY_SLACK_F32·|E| (a few ulps), which the f64 CPU does not need.

const TWIST_TOLERANCE_F32: f32 = 1e-6;
const ENERGY_SLACK_F32: f32 = 1e-6;

fn curvature_binormals(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    scratch[o].kb = vec4<f32>(0.0);
    scratch[o + n - 1u].kb = vec4<f32>(0.0);
    for (var i = 1u; i + 1u < n; i++) {
        let v = o + i;
        scratch[v].kb = vec4<f32>(curvature_binormal_at(pos[v - 1u], pos[v], pos[v + 1u]), 0.0);
    }
}

// θ of edge e: the current angle, or the line search's trial angle.
fn theta_of(e: u32, trial: bool) -> f32 {
    if (trial) {
        return scratch[e].s.z;
    }
    return frame[e].tangent.w;
}

fn edge_material_frame(e: u32, trial: bool) -> MaterialFrame {
    return material_frame(frame[e].tangent.xyz, frame[e].ref_u.xyz, theta_of(e, trial));
}

// Bending (eq. 3) and twisting (§4.2.2) energy of rod r.
fn elastic_energy(r: u32, trial: bool) -> vec2<f32> {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let b = rods[r].bending.xyz;
    let beta = rods[r].bending.w;
    var bend = 0.0;
    var twist = 0.0;
    var prev = edge_material_frame(o, trial);
    for (var i = 1u; i + 1u < n; i++) {
        let v = o + i;
        let next = edge_material_frame(v, trial);
        let kb = scratch[v].kb.xyz;
        let l = rest[v].voronoi;
        let d0 = material_curvature(kb, prev) - rest[v].rest_kappa.xy;
        let d1 = material_curvature(kb, next) - rest[v].rest_kappa.zw;
        bend += (dot(d0, apply_bending(b, d0)) + dot(d1, apply_bending(b, d1))) / (2.0 * l);
        let m = theta_of(v, trial) - theta_of(v - 1u, trial);
        twist += beta * m * m / l;
        prev = next;
    }
    return vec2<f32>(bend, twist);
}

// ∂E/∂θʲ split into bending (g.x) and twisting (g.y) parts (eq. 7), and with
// `hessian` the tridiagonal Hessian (g.z diagonal, g.w coupling to edge j+1).
fn twist_gradient(r: u32, hessian: bool) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let b = rods[r].bending.xyz;
    let beta = rods[r].bending.w;
    for (var j = 0u; j + 1u < n; j++) {
        scratch[o + j].g = vec4<f32>(0.0);
    }
    var prev = edge_material_frame(o, false);
    for (var i = 1u; i + 1u < n; i++) {
        let v = o + i;
        let next = edge_material_frame(v, false);
        let kb = scratch[v].kb.xyz;
        let l = rest[v].voronoi;
        let w = array<vec2<f32>, 2>(material_curvature(kb, prev), material_curvature(kb, next));
        let wbar = array<vec2<f32>, 2>(rest[v].rest_kappa.xy, rest[v].rest_kappa.zw);
        for (var k = 0u; k < 2u; k++) {
            let j = v - 1u + k;
            let bd = apply_bending(b, w[k] - wbar[k]);
            let jw = rot_j(w[k]);
            scratch[j].g.x -= dot(jw, bd) / l;
            if (hessian) {
                scratch[j].g.z += (dot(jw, apply_bending(b, jw)) - dot(w[k], bd)) / l;
            }
        }
        let m = frame[v].tangent.w - frame[v - 1u].tangent.w;
        scratch[v].g.y += 2.0 * beta * m / l;
        scratch[v - 1u].g.y -= 2.0 * beta * m / l;
        if (hessian) {
            scratch[v].g.z += 2.0 * beta / l;
            scratch[v - 1u].g.z += 2.0 * beta / l;
            scratch[v - 1u].g.w -= 2.0 * beta / l;
        }
        prev = next;
    }
}

// Solve (diag g.z + mu, off g.w) x = s.x in place over edges a..b (Thomas
// algorithm), s.y holding the elimination factors. False when a pivot is not
// positive, i.e. the shifted matrix is not positive definite.
fn solve_tridiagonal(a: u32, b: u32, mu: f32) -> bool {
    var pivot = scratch[a].g.z + mu;
    if (!(pivot > 0.0)) {
        return false;
    }
    scratch[a].s.x /= pivot;
    for (var e = a + 1u; e < b; e++) {
        let off = scratch[e - 1u].g.w;
        let c = off / pivot;
        scratch[e - 1u].s.y = c;
        pivot = scratch[e].g.z + mu - off * c;
        if (!(pivot > 0.0)) {
            return false;
        }
        scratch[e].s.x = (scratch[e].s.x - off * scratch[e - 1u].s.x) / pivot;
    }
    for (var e = b - 1u; e > a; e--) {
        scratch[e - 1u].s.x -= scratch[e - 1u].s.y * scratch[e].s.x;
    }
    return true;
}

fn gradient_at(e: u32) -> f32 {
    return scratch[e].g.x + scratch[e].g.y;
}

fn total(e: vec2<f32>) -> f32 {
    return e.x + e.y;
}

@compute @workgroup_size(64)
fn twist(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    curvature_binormals(r);
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    // Free angles: all but clamped end edges (src/cpu/mod.rs `free_twist_range`).
    let a = o + select(0u, 1u, rods[r].start_clamp != NONE);
    let b = max(o + ne - select(0u, 1u, rods[r].end_clamp != NONE), a);
    if (a == b) {
        return;
    }
    var theta_max = 0.0;
    for (var e = o; e < o + ne; e++) {
        scratch[e].s.z = frame[e].tangent.w;
        theta_max = max(theta_max, abs(frame[e].tangent.w));
    }
    let tolerance = max(max(params.twist_tolerance, TWIST_TOLERANCE_F32), 4.0 * F32_EPSILON * theta_max);
    // The energy is needed only for a line search: a Newton step below the
    // tolerance is taken without one (warm starts end that way).
    var e0 = 0.0;
    var have_e0 = false;
    var iterations = 0u;
    for (var it = 0u; it < params.twist_max_iterations; it++) {
        twist_gradient(r, true);
        var residual = 0.0;
        var scale = 0.0;
        for (var e = a; e < b; e++) {
            residual = max(residual, abs(gradient_at(e)));
            scale = max(scale, abs(scratch[e].g.z));
        }
        if (residual == 0.0) {
            break;
        }
        // Newton direction, Levenberg-shifted where H is not positive definite.
        var mu = 0.0;
        var solved = false;
        for (var attempt = 0u; attempt < 64u; attempt++) {
            for (var e = a; e < b; e++) {
                scratch[e].s.x = -gradient_at(e);
            }
            if (solve_tridiagonal(a, b, mu)) {
                solved = true;
                break;
            }
            mu = select(mu * 10.0, 1e-8 * max(scale, 1e-30), mu == 0.0);
        }
        if (!solved) {
            break;
        }
        var slope = 0.0;
        var max_step = 0.0;
        for (var e = a; e < b; e++) {
            slope += scratch[e].s.x * gradient_at(e);
            max_step = max(max_step, abs(scratch[e].s.x));
        }
        if (max_step < tolerance) {
            for (var e = a; e < b; e++) {
                frame[e].tangent.w += scratch[e].s.x;
            }
            iterations = it + 1u;
            break;
        }
        if (!have_e0) {
            e0 = total(elastic_energy(r, false));
            have_e0 = true;
        }
        // Backtracking line search with the Armijo condition.
        var alpha = 1.0;
        var accepted = false;
        loop {
            for (var e = a; e < b; e++) {
                scratch[e].s.z = frame[e].tangent.w + alpha * scratch[e].s.x;
            }
            let e1 = total(elastic_energy(r, true));
            if (e1 <= e0 + 1e-4 * alpha * slope + ENERGY_SLACK_F32 * abs(e0) || alpha * max_step < tolerance) {
                e0 = e1;
                accepted = true;
                break;
            }
            alpha *= 0.5;
            if (alpha < 1e-10) {
                break;
            }
        }
        if (!accepted) {
            break;
        }
        for (var e = a; e < b; e++) {
            frame[e].tangent.w = scratch[e].s.z;
        }
        iterations = it + 1u;
        if (alpha * max_step < tolerance) {
            break;
        }
    }
    atomicMax(&stats[0], iterations);
}
