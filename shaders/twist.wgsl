#import common

// Kernel `twist_rod`, one invocation walking each rod (src/cpu/twist.rs
// `twist`). The quasistatic
// material frame, ∂E/∂θʲ = 0 for the angles no clamp prescribes (§5), by
// Newton's method on the tridiagonal Hessian with a backtracking line search,
// warm-started from the previous angles.
//
// f32: a Newton step is resolved only to about ε·|θ|, so the stopping
// tolerance is at least max(TWIST_TOLERANCE_F32, 4ε max|θ|), and the Armijo test allows the
// energy to rise by ENERGY_SLACK_F32·|E| (a few ulps), which the f64 CPU does not need.

const TWIST_TOLERANCE_F32: f32 = 1e-6;
const ENERGY_SLACK_F32: f32 = 1e-6;

// The walk carries the last two positions, so each is read once (a
// software adapter reads storage lane by lane).
fn curvature_binormals(r: u32) {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    scratch_set_kb(o, vec4<f32>(0.0));
    scratch_set_kb(o + n - 1u, vec4<f32>(0.0));
    if (n < 3u) {
        return;
    }
    var x0 = pos_get(o);
    var x1 = pos_get(o + 1u);
    for (var i = 1u; i + 1u < n; i++) {
        let v = o + i;
        let x2 = pos_get(v + 1u);
        scratch_set_kb(v, vec4<f32>(vec3<f32>(curvature_binormal_at(x0, x1, x2)), 0.0));
        x0 = x1;
        x1 = x2;
    }
}

// θ of edge e: the current angle, or the line search's trial angle.
fn theta_of(e: u32, trial: bool) -> f32 {
    if (trial) {
        return scratch_s_z(e);
    }
    return frame_theta(e);
}

fn edge_material_frame(e: u32, trial: bool) -> MaterialFrame {
    return material_frame(frame_tangent(e).xyz, frame_ref_u(e).xyz, theta_of(e, trial));
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
        let kb = scratch_kb(v).xyz;
        let l = rest[vertex_slot(v)].voronoi;
        let d0 = material_curvature(kb, prev) - rest[vertex_slot(v)].rest_kappa.xy;
        let d1 = material_curvature(kb, next) - rest[vertex_slot(v)].rest_kappa.zw;
        bend += (dot(d0, apply_bending(b, d0)) + dot(d1, apply_bending(b, d1))) / (2.0 * l);
        let m = theta_of(v, trial) - theta_of(v - 1u, trial);
        twist += beta * m * m / l;
        prev = next;
    }
    return vec2<f32>(bend, twist);
}

// ∂E/∂θʲ split into bending (g.x) and twisting (g.y) parts (eq. 7), and the
// tridiagonal Hessian (g.z diagonal, g.w coupling to edge j+1), summed by a
// walk over rod r's interior vertices from the root (`from_tip` false) or
// from the tip (src/cpu/twist.rs `twist_gradient` with `RowOrder`).
//
// The walk keeps the sums of the edges on either side of its vertex in
// registers and takes each edge's on once no vertex adds to it any more:
// the same additions in the same order as adding into `scratch` (so the
// same bits), without reading it back per term (a software adapter reads
// storage lane by lane). As it finishes them it takes the maxima that the
// Newton iteration asks for next: the largest |∂E/∂θᵉ| (x) and |Hₑₑ| (y)
// over the free edges [free.x, free.y), the largest |θ| over all edges
// (z), and the bound on |∂³E/∂(θᵉ)³| over the free edges (w;
// src/cpu/twist.rs `cubic_bound`, from the values this walk reads anyway).
// And as each free edge's row is done, it takes the forward elimination of
// the unshifted Newton step (`newton_step`'s first half at mu = 0,
// `eliminate_row`) on to it, in the order it walks, so the rows need not
// be stored and read back (on a software adapter each is a loop over the
// lanes); `store` stores them too, in `scratch[e].g`, for `newton_step`'s
// shifted retries. `newton_back` makes the same walk behind its stores,
// one vertex at a time (`gradient_vertex`).
struct TwistSweep {
    maxima: vec4<f32>,
    elimination: Elimination,
}

// Edge e's material frame at angle theta.
fn theta_material_frame(e: u32, theta: f32) -> MaterialFrame {
    return material_frame(frame_tangent(e).xyz, frame_ref_u(e).xyz, theta);
}

// An elimination that has taken no row, and a sweep of no rows.
fn elimination_none() -> Elimination {
    return Elimination(false, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0);
}

fn sweep_none() -> TwistSweep {
    return TwistSweep(vec4<f32>(0.0), elimination_none());
}

// One bending term's parts of its edge's row (src/cpu/twist.rs
// `twist_gradient`): ∂/∂θ of (ω − ω̄)ᵀB(ω − ω̄)/(2l̄) (x, to subtract) and
// its second derivative (y), for the vertex's curvature ω in the edge's
// frame and its rest value ω̄.
fn bending_row_terms(b: vec3<f32>, w: vec2<f32>, wbar: vec2<f32>, l: f32) -> vec2<f32> {
    let bd = apply_bending(b, w - wbar);
    let jw = rot_j(w);
    return vec2<f32>(dot(jw, bd) / l, (dot(jw, apply_bending(b, jw)) - dot(w, bd)) / l);
}

// A gradient walk between vertices: what `twist_gradient` carries.
struct GradientWalk {
    maxima: vec4<f32>,
    elimination: Elimination,
    open: vec4<f32>,        // ∂E/∂θ and Hessian row of the edge behind the walk, which its next vertex completes
    open_cubic: f32,        // that edge's part of the third-derivative bound so far
    frame: MaterialFrame,   // that edge's material frame
    theta: f32,             // and its angle
}

// Rod r's walk before its first vertex: behind it the first edge it meets
// (edge 0 from the root, the last edge from the tip), at angle theta.
fn gradient_start(first: u32, theta: f32) -> GradientWalk {
    return GradientWalk(vec4<f32>(0.0, 0.0, abs(theta), 0.0), elimination_none(), vec4<f32>(0.0), 0.0, theta_material_frame(first, theta), theta);
}

// Interior vertex v of a rod (bending stiffness b, twisting β, ‖B‖ b_norm)
// with curvature binormal kb: its stencil completes the row of the edge
// behind the walk (edge v − 1 from the root, v from the tip), which it then
// takes into the maxima and the elimination, and opens the row of the edge
// ahead (v, or v − 1), whose angle, final, is theta and material frame
// there frame_ahead. Each row's terms are added in the order the CPU's
// `twist_gradient` adds them, walking the same way.
fn gradient_vertex(w: ptr<function, GradientWalk>, v: u32, theta: f32, from_tip: bool, free: vec2<u32>, store: bool, b: vec3<f32>, beta: f32, b_norm: f32, kb: vec3<f32>, frame_ahead: MaterialFrame) {
    let behind = select(v - 1u, v, from_tip);
    let l = rest[vertex_slot(v)].voronoi;
    let rk = rest[vertex_slot(v)].rest_kappa;
    // The vertex's curvature in each edge's frame and its rest value
    // (edge v − 1: rest_kappa.xy, edge v: .zw).
    let w_behind = material_curvature(kb, (*w).frame);
    let w_ahead = material_curvature(kb, frame_ahead);
    let wbar_behind = select(rk.xy, rk.zw, from_tip);
    let wbar_ahead = select(rk.zw, rk.xy, from_tip);
    let kb_len = length(kb);
    let terms_behind = bending_row_terms(b, w_behind, wbar_behind, l);
    let terms_ahead = bending_row_terms(b, w_ahead, wbar_ahead, l);
    // The twisting term of θᵛ − θᵛ⁻¹, which edge v gains and edge v − 1
    // loses, and its Hessian entries.
    let dm = select(theta - (*w).theta, (*w).theta - theta, from_tip);
    let t = 2.0 * beta * dm / l;
    let h = 2.0 * beta / l;
    var g = (*w).open;
    g.x -= terms_behind.x;
    g.z += terms_behind.y;
    g.y += select(-t, t, from_tip);
    g.z += h;
    g.w -= select(h, 0.0, from_tip);
    var g_ahead = vec4<f32>(0.0);
    g_ahead.x -= terms_ahead.x;
    g_ahead.z += terms_ahead.y;
    g_ahead.y += select(t, -t, from_tip);
    g_ahead.z += h;
    g_ahead.w -= select(0.0, h, from_tip);
    let c = (*w).open_cubic + cubic_term(b_norm, kb_len, wbar_behind, l);
    if (store) {
        scratch_set_g(behind, g);
    }
    var elimination = (*w).elimination;
    eliminate_row(&elimination, behind, g, free, from_tip);
    (*w).elimination = elimination;
    (*w).maxima = free_maxima((*w).maxima, g, c, behind, free);
    (*w).maxima.z = max((*w).maxima.z, abs(theta));
    (*w).open = g_ahead;
    (*w).open_cubic = cubic_term(b_norm, kb_len, wbar_ahead, l);
    (*w).frame = frame_ahead;
    (*w).theta = theta;
}

// The walk past its last vertex: the row of the last edge it met (edge 0
// from the tip, the last edge from the root) done.
fn gradient_end(w: ptr<function, GradientWalk>, last: u32, from_tip: bool, free: vec2<u32>, store: bool) -> TwistSweep {
    if (store) {
        scratch_set_g(last, (*w).open);
    }
    var elimination = (*w).elimination;
    eliminate_row(&elimination, last, (*w).open, free, from_tip);
    return TwistSweep(free_maxima((*w).maxima, (*w).open, (*w).open_cubic, last, free), elimination);
}

fn twist_gradient(r: u32, free: vec2<u32>, store: bool, from_tip: bool) -> TwistSweep {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    if (n < 2u) {
        return sweep_none();
    }
    let b = rods[r].bending.xyz;
    let beta = rods[r].bending.w;
    let b_norm = bending_norm(b);
    let first = select(o, o + n - 2u, from_tip);
    var walk = gradient_start(first, frame_theta(first));
    for (var i = 1u; i + 1u < n; i++) {
        let v = select(o + i, o + n - 1u - i, from_tip);
        let e = select(v, v - 1u, from_tip);
        let theta = frame_theta(e);
        gradient_vertex(&walk, v, theta, from_tip, free, store, b, beta, b_norm, scratch_kb(v).xyz, theta_material_frame(e, theta));
    }
    return gradient_end(&walk, select(o + n - 2u, o, from_tip), from_tip, free, store);
}

// The forward elimination of `newton_step` at mu = 0 carried along a walk
// over the rows, in either order: whether every pivot so far was positive
// (`solved`), the last row's pivot, eliminated value x, ∂E/∂θ and coupling
// to the next row from the root (`off`; unused from the tip, where the
// next row carries its own coupling to this one),
// and the bound on the step the back substitution would find
// (src/cpu/twist.rs `newton_step`: |stepᵢ| ≤ Σⱼ mⱼ |xⱼ|, by the triangle
// inequality on stepⱼ = xⱼ − cⱼ stepⱼ₊₁, j counted in elimination order).
struct Elimination {
    solved: bool,
    pivot: f32,
    x: f32,
    grad: f32,
    off: f32,
    grow: f32,      // mⱼ = max(1, |cⱼ₋₁| mⱼ₋₁), the largest |∏ cₖ| into row j
    bound: f32,     // Σ mⱼ |xⱼ| ≥ max |step| (src/cpu/twist.rs `newton_step`)
}

// Row e (its `twist_gradient` sums g) taken into the elimination, if it is
// a free edge's, the rows taken from the root or from the tip: the same
// operations as `newton_step`'s forward loop with mu = 0 (so the same
// bits) and as src/cpu/twist.rs `newton_step` in that order, writing the
// row before's eliminated value, factor and ∂E/∂θ to its `scratch.s` (x, y,
// w) for the back substitution.
fn eliminate_row(s: ptr<function, Elimination>, e: u32, g: vec4<f32>, free: vec2<u32>, from_tip: bool) {
    if (e < free.x || e >= free.y) {
        return;
    }
    let mu = 0.0;
    let grad = g.x + g.y;
    if (e == select(free.x, free.y - 1u, from_tip)) {
        let pivot = g.z + mu;
        let x = -grad / pivot;
        *s = Elimination(pivot > 0.0, pivot, x, grad, g.w, 1.0, abs(x));
        return;
    }
    if ((*s).solved) {
        // The coupling of this row to the row before: from the tip, this
        // row's own coupling to the next edge.
        let off = select((*s).off, g.w, from_tip);
        let c = off / (*s).pivot;
        scratch_set_s(select(e - 1u, e + 1u, from_tip), vec4<f32>((*s).x, c, 0.0, (*s).grad));
        let pivot = g.z + mu - off * c;
        let x = (-grad - off * (*s).x) / pivot;
        let grow = max(1.0, abs(c) * (*s).grow);
        *s = Elimination(pivot > 0.0, pivot, x, grad, g.w, grow, (*s).bound + grow * abs(x));
    }
}

// Edge e's part of `twist_gradient`'s maxima: |∂E/∂θᵉ| (x), |Hₑₑ| (y)
// and its third-derivative bound c (w) over the free edges [free.x, free.y).
fn free_maxima(m: vec4<f32>, g: vec4<f32>, c: f32, e: u32, free: vec2<u32>) -> vec4<f32> {
    if (e >= free.x && e < free.y) {
        return vec4<f32>(max(m.x, abs(g.x + g.y)), max(m.y, abs(g.z)), m.z, max(m.w, c));
    }
    return m;
}

// ‖B‖ bounded by Gershgorin (src/cpu/twist.rs `bending_norm`).
fn bending_norm(b: vec3<f32>) -> f32 {
    return max(abs(b.x) + abs(b.y), abs(b.y) + abs(b.z));
}

// One bending term's bound on its third derivative in its angle,
// ‖B‖|κb|(4|κb| + |ω̄|)/l̄ (src/cpu/twist.rs `cubic_term`).
fn cubic_term(b_norm: f32, kb_len: f32, wbar: vec2<f32>, l: f32) -> f32 {
    return b_norm * kb_len * (4.0 * kb_len + length(wbar)) / l;
}

// The Newton step over rod r's free edges [free.x, free.y): solve (diag
// g.z + mu, off g.w) x = −(g.x + g.y) (Thomas algorithm, the rows from the
// root). The elimination reads each row's g once and writes its s once
// (x: the eliminated value, y: the factor eliminating the next row, w:
// the row's ∂E/∂θ); the back substitution (`newton_back`) takes the step.
// Returns (1, slope, max |x|, Σ|x|³), or x = 0 when a pivot is not
// positive, i.e. the shifted matrix is not positive definite.
fn newton_step(r: u32, free: vec2<u32>, mu: f32) -> vec4<f32> {
    let a = free.x;
    let b = free.y;
    var g = scratch_g(a);
    var grad = g.x + g.y;
    var pivot = g.z + mu;
    if (!(pivot > 0.0)) {
        return vec4<f32>(0.0);
    }
    var x = -grad / pivot;
    for (var e = a + 1u; e < b; e++) {
        let off = g.w;
        let c = off / pivot;
        scratch_set_s(e - 1u, vec4<f32>(x, c, 0.0, grad));
        g = scratch_g(e);
        pivot = g.z + mu - off * c;
        if (!(pivot > 0.0)) {
            return vec4<f32>(0.0);
        }
        grad = g.x + g.y;
        x = (-grad - off * x) / pivot;
    }
    let last = Elimination(true, pivot, x, grad, 0.0, 1.0, 0.0);
    return newton_back(r, free, last, false, false).step;
}

// What `newton_back` found: the step (1, slope, max |x|, Σ|x|³) and, where
// it walked the gradient too, the next iteration's sweep.
struct BackWalk {
    step: vec4<f32>,
    sweep: TwistSweep,
}

// The back substitution of rows eliminated from the root (`from_tip`
// false: it walks from the tip) or from the tip, from the last row's
// eliminated value and ∂E/∂θ (`last`: the forward elimination's of
// `newton_step`, or the elimination of `twist_gradient` or of the back
// substitution before, which built the rows ahead). It takes the step as it goes: each free angle θ + x
// written, and x and the angle before in `scratch[e].g` (x, z), from which
// `twist_solve` puts the angles back where it searches along the step
// instead (rare); and it sums the slope Σ xₑ ∂E/∂θᵉ from the last row to
// the first, the largest |xₑ| and Σ|xₑ|³. A full step is what a solve
// takes nearly always (below the tolerance or certified, src/cpu/twist.rs
// `armijo_certified`), so this is the addition the walk taking it would
// make, the same bits, and one walk along the rod fewer a solve.
//
// With `ahead` the walk is also the next iteration's gradient walk
// (`twist_gradient` in the order it goes, `gradient_vertex`): each vertex
// once both its edges' angles are final, so the next iteration needs no
// walk of its own where the step is taken in full, and ends the solve on
// the next elimination's bound (src/cpu/twist.rs `twist` takes the rows
// in the same alternate orders).
fn newton_back(r: u32, free: vec2<u32>, last: Elimination, from_tip: bool, ahead: bool) -> BackWalk {
    let o = rods[r].vertex_offset;
    let n = rods[r].vertex_count;
    let a = free.x;
    let b = free.y;
    // The walk goes up (from the root) after rows taken from the tip.
    let up = from_tip;
    let e_last = select(b - 1u, a, up);
    var x = last.x;
    let theta_last = frame_theta(e_last);
    frame_set_theta(e_last, theta_last + x);
    scratch_set_g(e_last, vec4<f32>(x, 0.0, theta_last, 0.0));
    var slope = x * last.grad;
    var max_step = abs(x);
    var cubes = abs(x * x * x);
    let bend = rods[r].bending.xyz;
    let beta = rods[r].bending.w;
    let b_norm = bending_norm(bend);
    // The gradient walk's state, where it walks too (its first edge's
    // material frame is a sine and cosine not made otherwise).
    var walk: GradientWalk;
    if (ahead) {
        let first = select(o + n - 2u, o, up);
        walk = gradient_start(first, frame_theta(first));
    }
    for (var i = 1u; i + 1u < n; i++) {
        let v = select(o + n - 1u - i, o + i, up);
        // The edge ahead of the vertex, whose angle this step finishes.
        let e = select(v - 1u, v, up);
        var theta = frame_theta(e);
        if (e >= a && e < b && e != e_last) {
            let row = scratch_s(e);
            x = row.x - row.y * x;
            frame_set_theta(e, theta + x);
            scratch_set_g(e, vec4<f32>(x, 0.0, theta, 0.0));
            theta += x;
            slope += x * row.w;
            max_step = max(max_step, abs(x));
            cubes += abs(x * x * x);
        }
        if (ahead) {
            gradient_vertex(&walk, v, theta, !up, free, false, bend, beta, b_norm, scratch_kb(v).xyz, theta_material_frame(e, theta));
        }
    }
    var sweep = sweep_none();
    if (ahead) {
        sweep = gradient_end(&walk, select(o, o + n - 2u, up), !up, free, false);
    }
    return BackWalk(vec4<f32>(1.0, slope, max_step, cubes), sweep);
}

// Whether the full Newton step passes the Armijo test for sure
// (src/cpu/twist.rs `armijo_certified`): C·Σ|x|³/6 ≤ |slope|/4, with C
// (`cubic`) the bound on every free angle's third derivative.
fn armijo_certified(slope: f32, cubic: f32, cubes: f32) -> bool {
    return slope < 0.0 && cubic * cubes <= -1.5 * slope;
}

fn total(e: vec2<f32>) -> f32 {
    return e.x + e.y;
}

// The Newton solve of rod r walked by one invocation (`twist_rod`).
fn twist_walk(r: u32) {
    curvature_binormals(r);
    twist_solve(r);
}

// `twist_walk` once the curvature binormals are in `scratch[v].kb` (the CPU's
// `twist`, src/cpu/twist.rs, likewise takes them from its caller).
fn twist_solve(r: u32) {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    // Free angles: all but clamped end edges (src/cpu/twist.rs `free_twist_range`).
    let free = twist_free(r);
    let a = free.x;
    let b = free.y;
    if (a == b) {
        return;
    }
    // The clamped end edges' angles (before a, from b on), which the line
    // search's trial angles (`theta_of`) keep.
    if (a > o) {
        scratch_set_s_z(o, frame_theta(o));
    }
    if (b < o + ne) {
        scratch_set_s_z(b, frame_theta(b));
    }
    var tolerance = 0.0;
    // The energy is needed only for a line search: a Newton step below the
    // tolerance is taken without one (warm starts end earlier, on the
    // elimination's bound, with no step at all).
    var e0 = 0.0;
    var have_e0 = false;
    var iterations = 0u;
    // The order this iteration takes its rows in: the first from the root,
    // each after it in the order the back substitution before it walked
    // (src/cpu/twist.rs `twist`); and whether that walk summed them
    // already (`newton_back`'s `ahead`), in `sweep`.
    var from_tip = false;
    var handed = false;
    var sweep = sweep_none();
    for (var it = 0u; it < params.twist_max_iterations; it++) {
        // A loop that runs once, where a lane needs the walk: on a software
        // adapter an `if` would run it for every lane.
        for (var walk = !handed; walk; walk = false) {
            sweep = twist_gradient(r, free, false, from_tip);
        }
        handed = false;
        let maxima = sweep.maxima;
        if (it == 0u) {
            tolerance = max(max(params.twist_tolerance, TWIST_TOLERANCE_F32), 4.0 * F32_EPSILON * maxima.z);
        }
        if (maxima.x == 0.0) {
            break;
        }
        // A step the elimination bounds below the tolerance ends the solve
        // without it: the walk that would find and take it is not made
        // (warm starts, and the step after a certified one, end so).
        if (sweep.elimination.solved && sweep.elimination.bound < tolerance) {
            break;
        }
        // Newton direction, Levenberg-shifted where H is not positive
        // definite: the unshifted step's elimination is the sweep's, the
        // shifted ones (attempts 1 on, as the CPU's) need the rows stored,
        // summed and taken from the root.
        // A loop that runs once, where a lane needs them (as above).
        var step = vec4<f32>(0.0);
        var next = sweep;
        let ahead = it + 1u < params.twist_max_iterations;
        if (sweep.elimination.solved) {
            let back = newton_back(r, free, sweep.elimination, from_tip, ahead);
            step = back.step;
            next = back.sweep;
        }
        for (var shifted = !sweep.elimination.solved; shifted; shifted = false) {
            _ = twist_gradient(r, free, true, false);
            from_tip = false;
            var mu = 0.0;
            for (var attempt = 1u; attempt < 64u; attempt++) {
                mu = select(mu * 10.0, 1e-8 * max(maxima.y, 1e-30), mu == 0.0);
                step = newton_step(r, free, mu);
                if (step.x != 0.0) {
                    break;
                }
            }
        }
        if (step.x == 0.0) {
            break;
        }
        // The next rows in the order this step's back substitution walked.
        let shifted = !sweep.elimination.solved;
        from_tip = !from_tip;
        let slope = step.y;
        let max_step = step.z;
        // A full step below the tolerance ends the solve; one that the
        // third-derivative bound proves to pass the Armijo test is the step
        // the line search would accept (src/cpu/twist.rs
        // `armijo_certified`). Both are taken without the energies: the
        // back substitution took the step already.
        let small = max_step < tolerance;
        if (small || armijo_certified(slope, maxima.w, step.w)) {
            iterations = it + 1u;
            if (small) {
                break;
            }
            // The energy at the new angles is not known; the rows there
            // are, where the back substitution summed them.
            have_e0 = false;
            handed = ahead && !shifted;
            sweep = next;
            continue;
        }
        // The angles before the step, for the line search.
        for (var e = a; e < b; e++) {
            frame_set_theta(e, scratch_g_z(e));
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
                scratch_set_s_z(e, frame_theta(e) + alpha * scratch_g_x(e));
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
            frame_set_theta(e, scratch_s_z(e));
        }
        iterations = it + 1u;
        if (alpha * max_step < tolerance) {
            break;
        }
    }
    stat_max(STAT_TWIST_ITERATIONS, iterations);
}

@compute @workgroup_size(64)
fn twist_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r >= params.rod_count) {
        return;
    }
    twist_walk(r);
    loops_ran_out(r);
}

// The free angles of rod r: edges [x, y) (`twist_walk`).
fn twist_free(r: u32) -> vec2<u32> {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    let a = o + select(0u, 1u, rods[r].start_clamp != NONE);
    let b = max(o + ne - select(0u, 1u, rods[r].end_clamp != NONE), a);
    return vec2<u32>(a, b);
}
