// Kernels `twist` (one workgroup per pack of rods, every stage parallel over
// the pack's rows; below) and `twist_rod` (one invocation walking each rod)
// (src/cpu/twist.rs `twist_in`, `TwistForm::Walk` and `TwistForm::Scan`). The quasistatic
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
// software adapter reads storage lane by lane: docs/BENCHMARKS.md).
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
// the next elimination's bound (src/cpu/twist.rs `twist_in` takes the rows
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

// The Newton solve of rod r walked by one invocation (`twist_rod`, and
// `twist` for a rod longer than a pack).
fn twist_walk(r: u32) {
    curvature_binormals(r);
    twist_solve(r);
}

// `twist_walk` once the curvature binormals are in `scratch[v].kb` (the CPU's
// `twist`, src/cpu/twist.rs, likewise takes them from its caller).
fn twist_solve(r: u32) {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    // Free angles: all but clamped end edges (src/cpu/mod.rs `free_twist_range`).
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
    // (src/cpu/twist.rs `twist_in`); and whether that walk summed them
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
    stat_max(0u, iterations);
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

// --- The packed form (src/cpu/twist.rs `twist_in` with `TwistForm::Scan`, stage for stage) ---
//
// Row i of a pack is its vertex v0 + i and the edge starting there (as in
// project_pack.wgsl, whose workgroup arrays and `pcr_solve` it shares: one
// module, and an entry point holds only the workgroup memory it uses). Every
// rod of the pack runs its own Newton iteration with its own line search;
// the loops run until no rod of the pack has work left, so each rod takes
// the steps it would alone. Per Newton iteration:
// (1) per edge row, ∂E/∂θ and the tridiagonal Hessian from the stencils of
//     its two vertices, summed in the walk's order;
// (2) per rod the largest |∂E/∂θ| and |Hᵢᵢ| (atomic maxima);
// (3) the Levenberg loop: the shifted Hessian is positive definite iff all
//     its leading principal minors are (Sylvester), and the minors obey
//     Dᵢ = aᵢDᵢ₋₁ − cᵢ₋₁²Dᵢ₋₂, i.e. (Dᵢ, Dᵢ₋₁) is the prefix product of the
//     2×2 matrices [[aᵢ, −cᵢ₋₁²], [1, 0]] applied to (1, 0), by a doubling
//     scan (each partial product scaled by a positive number to stay in
//     range, which keeps the signs); the rods that pass solve by parallel
//     cyclic reduction, the others try a larger shift;
// (4) per rod the slope Σ sⱼgⱼ (doubling suffix sums within each rod, as
//     `forces`) and the largest step;
// (5) the backtracking line search, the energies summed the same way.
// A rod longer than a pack is a pack of its own, walked by one invocation.

// Per rod of the pack, in `pack_rods_a` (shaders/common.wgsl): the
// Levenberg shift μ, the step fraction α, the energy at the current angles
// and the stopping tolerance (rad).
// Per rod: the slope Σ sⱼgⱼ, the largest step, the largest |Hⱼⱼ|.
var<workgroup> twist_g: array<vec4<f32>, PACK_RODS>;
// Per rod: TWIST_* flags.
var<workgroup> twist_state: array<u32, PACK_RODS>;
// Per row: a value to sum over its rod; the rod's sum lands on its first row.
var<workgroup> twist_sum: array<f32, PACK_ROWS>;

const TWIST_HAVE_E0: u32 = 1u;   // pack_rods_a.z holds the energy at the current angles
const TWIST_SOLVED: u32 = 2u;    // this iteration's Newton step is in scratch.s.x
const TWIST_SEARCH: u32 = 4u;    // in the line search

// The free angles of rod r: edges [x, y) (`twist_walk`).
fn twist_free(r: u32) -> vec2<u32> {
    let o = rods[r].vertex_offset;
    let ne = rods[r].vertex_count - 1u;
    let a = o + select(0u, 1u, rods[r].start_clamp != NONE);
    let b = max(o + ne - select(0u, 1u, rods[r].end_clamp != NONE), a);
    return vec2<u32>(a, b);
}

// ∂E/∂θʲ (x bending, y twisting), the Hessian's diagonal (z) and its
// coupling to edge j+1 (w) of edge v (local index j < vertex_count − 1):
// vertex j's stencil (edge j its next) then vertex j+1's (edge j its
// previous), in `twist_gradient`'s order.
fn twist_gradient_row(r: u32, v: u32, j: u32) -> vec4<f32> {
    let n = rods[r].vertex_count;
    let b = rods[r].bending.xyz;
    let beta = rods[r].bending.w;
    var g = vec4<f32>(0.0);
    if (j >= 1u) {
        let l = rest[vertex_slot(v)].voronoi;
        let w = material_curvature(scratch_kb(v).xyz, edge_material_frame(v, false));
        let terms = bending_row_terms(b, w, rest[vertex_slot(v)].rest_kappa.zw, l);
        g.x -= terms.x;
        g.z += terms.y;
        let m = frame_theta(v) - frame_theta(v - 1u);
        g.y += 2.0 * beta * m / l;
        g.z += 2.0 * beta / l;
    }
    if (j + 2u < n) {
        let u = v + 1u;
        let l = rest[vertex_slot(u)].voronoi;
        let w = material_curvature(scratch_kb(u).xyz, edge_material_frame(v, false));
        let terms = bending_row_terms(b, w, rest[vertex_slot(u)].rest_kappa.xy, l);
        g.x -= terms.x;
        g.z += terms.y;
        let m = frame_theta(u) - frame_theta(v);
        g.y -= 2.0 * beta * m / l;
        g.z += 2.0 * beta / l;
        g.w -= 2.0 * beta / l;
    }
    return g;
}

// Bending and twisting energy of interior vertex v (local index k), at the
// current angles or the trial ones (`elastic_energy`'s terms).
fn twist_vertex_energy(r: u32, v: u32, k: u32, trial: bool) -> f32 {
    if (k == 0u || k + 1u >= rods[r].vertex_count) {
        return 0.0;
    }
    let b = rods[r].bending.xyz;
    let kb = scratch_kb(v).xyz;
    let l = rest[vertex_slot(v)].voronoi;
    let d0 = material_curvature(kb, edge_material_frame(v - 1u, trial)) - rest[vertex_slot(v)].rest_kappa.xy;
    let d1 = material_curvature(kb, edge_material_frame(v, trial)) - rest[vertex_slot(v)].rest_kappa.zw;
    let m = theta_of(v, trial) - theta_of(v - 1u, trial);
    return (dot(d0, apply_bending(b, d0)) + dot(d1, apply_bending(b, d1))) / (2.0 * l)
        + rods[r].bending.w * m * m / l;
}

// twist_sum[i] ← Σ of twist_sum over rows i.. of its rod (doubling suffix
// sums, `suffix_sums`), for rods of at most `most` vertices.
fn twist_rod_sums(lid: u32, v0: u32, n: u32, most: u32) {
    for (var s = 1u; s < most; s *= 2u) {
        var sums: array<f32, ROWS_PER_INVOCATION>;
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                let r = rest[vertex_slot(v)].rod;
                sums[q] = twist_sum[i];
                if (v - rods[r].vertex_offset + s < rods[r].vertex_count) {
                    sums[q] += twist_sum[i + s];
                }
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                twist_sum[i] = sums[q];
            }
        }
        workgroupBarrier();
    }
}

// 2×2 matrices as (m00, m01, m10, m11): a · b, scaled by a positive number
// so that its largest entry is 1 (the signs of the minors are kept).
fn minors_product(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    let p = vec4<f32>(
        a.x * b.x + a.y * b.z,
        a.x * b.y + a.y * b.w,
        a.z * b.x + a.w * b.z,
        a.z * b.y + a.w * b.w,
    );
    let m = max(max(abs(p.x), abs(p.y)), max(abs(p.z), abs(p.w)));
    if (m > 0.0) {
        return p / m;
    }
    return p;
}

// Whether row v is a free edge of a rod in state `flags` (all bits set).
fn twist_row_in(v: u32, first: u32, flags: u32) -> bool {
    let r = rest[vertex_slot(v)].rod;
    let f = twist_free(r);
    return v >= f.x && v < f.y && rod_active[r - first] == 1u && (twist_state[r - first] & flags) == flags;
}

// Every invocation reads whether any rod set `pack_busy` (then cleared).
fn twist_any_busy(lid: u32) -> bool {
    workgroupBarrier();
    if (lid == 0u) {
        pack_busy_plain = atomicLoad(&pack_busy);
        atomicStore(&pack_busy, 0u);
    }
    return workgroupUniformLoad(&pack_busy_plain) != 0u;
}

fn twist_pack(w: u32, lid: u32) {
    let rods_of = pack_rods(w);
    let first = rods_of.x;
    let nr = rods_of.y - first;
    let v0 = rods[first].vertex_offset;
    let last = rods_of.y - 1u;
    let n = rods[last].vertex_offset + rods[last].vertex_count - v0;
    if (n > PACK_ROWS) {
        // A rod longer than a pack: serially, on one invocation.
        if (lid == 0u) {
            twist_walk(first);
        }
        return;
    }
    let most = pack_most_edges(rods_of) + 1u;
    // (0) κb of every vertex, the trial angles, |θ| maxima for the tolerance.
    for (var k = lid; k < nr; k += PACK_WORKGROUP) {
        let f = twist_free(first + k);
        rod_active[k] = select(0u, 1u, f.x < f.y);
        rod_iterations[k] = 0u;
        twist_state[k] = 0u;
        atomicStore(&rod_over[k], 0u);
        atomicStore(&rod_over_exact[k], 0u);
    }
    if (lid == 0u) {
        atomicStore(&pack_busy, 0u);
    }
    workgroupBarrier();
    for (var q = 0u; q < row_loop_end(lid, n); q++) {
        let i = lid + q * PACK_WORKGROUP;
        if (i < n) {
            let v = v0 + i;
            let r = rest[vertex_slot(v)].rod;
            let k = v - rods[r].vertex_offset;
            let nv = rods[r].vertex_count;
            var kb = vec3<f32>(0.0);
            if (k > 0u && k + 1u < nv) {
                kb = vec3<f32>(curvature_binormal_at(pos_get(v - 1u), pos_get(v), pos_get(v + 1u)));
            }
            scratch_set_kb(v, vec4<f32>(kb, 0.0));
            if (k + 1u < nv) {
                scratch_set_s_z(v, frame_theta(v));
                atomicMax(&rod_over_exact[r - first], bitcast<u32>(abs(frame_theta(v))));
            }
        }
    }
    workgroupBarrier();
    for (var k = lid; k < nr; k += PACK_WORKGROUP) {
        let theta_max = bitcast<f32>(atomicLoad(&rod_over_exact[k]));
        pack_rods_a[k].w = max(max(params.twist_tolerance, TWIST_TOLERANCE_F32), 4.0 * F32_EPSILON * theta_max);
    }
    storageBarrier();
    workgroupBarrier();
    for (var it = 0u; it < params.twist_max_iterations; it++) {
        // (1) Gradient and Hessian of the edges of rods still iterating.
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            atomicStore(&rod_over[k], 0u);
            atomicStore(&rod_over_exact[k], 0u);
            twist_state[k] &= TWIST_HAVE_E0;
        }
        workgroupBarrier();
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                let r = rest[vertex_slot(v)].rod;
                let j = v - rods[r].vertex_offset;
                if (j + 1u < rods[r].vertex_count && rod_active[r - first] == 1u) {
                    let g = twist_gradient_row(r, v, j);
                    scratch_set_g(v, g);
                    let f = twist_free(r);
                    if (v >= f.x && v < f.y) {
                        // (2) Residual and scale.
                        atomicMax(&rod_over[r - first], bitcast<u32>(abs(g.x + g.y)));
                        atomicMax(&rod_over_exact[r - first], bitcast<u32>(abs(g.z)));
                    }
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u) {
                if (atomicLoad(&rod_over[k]) == 0u) {
                    rod_active[k] = 0u;
                } else {
                    twist_g[k].z = bitcast<f32>(atomicLoad(&rod_over_exact[k]));
                    pack_rods_a[k].x = 0.0;
                    atomicStore(&pack_busy, 1u);
                }
            }
        }
        if (!twist_any_busy(lid)) {
            break;
        }
        // (3) Newton directions, Levenberg-shifted where H is not positive definite.
        for (var attempt = 0u; attempt < 64u; attempt++) {
            for (var k = lid; k < nr; k += PACK_WORKGROUP) {
                atomicStore(&rod_singular[k], 0u);
            }
            // The minors' matrices of the free rows of rods not yet solved,
            // the identity elsewhere.
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    var m = vec4<f32>(1.0, 0.0, 0.0, 1.0);
                    if (twist_row_in(v, first, 0u) && (twist_state[rest[vertex_slot(v)].rod - first] & TWIST_SOLVED) == 0u) {
                        let r = rest[vertex_slot(v)].rod;
                        var c = 0.0;
                        if (v > twist_free(r).x) {
                            c = scratch_g_w(v - 1u);
                        }
                        m = vec4<f32>(scratch_g_z(v) + pack_rods_a[r - first].x, -c * c, 1.0, 0.0);
                    }
                    pcr_lower[i] = m.x;
                    pcr_diag[i] = m.y;
                    pcr_upper[i] = m.z;
                    pcr_rhs[i] = m.w;
                }
            }
            workgroupBarrier();
            // Prefix products within each rod's free rows, later factors on the left.
            for (var s = 1u; s < most; s *= 2u) {
                var prod: array<vec4<f32>, ROWS_PER_INVOCATION>;
                for (var q = 0u; q < row_loop_end(lid, n); q++) {
                    let i = lid + q * PACK_WORKGROUP;
                    if (i < n) {
                        let v = v0 + i;
                        var p = vec4<f32>(pcr_lower[i], pcr_diag[i], pcr_upper[i], pcr_rhs[i]);
                        if (v >= s && v - s >= twist_free(rest[vertex_slot(v)].rod).x && i >= s) {
                            let e = i - s;
                            p = minors_product(p, vec4<f32>(pcr_lower[e], pcr_diag[e], pcr_upper[e], pcr_rhs[e]));
                        }
                        prod[q] = p;
                    }
                }
                workgroupBarrier();
                for (var q = 0u; q < row_loop_end(lid, n); q++) {
                    let i = lid + q * PACK_WORKGROUP;
                    if (i < n) {
                        pcr_lower[i] = prod[q].x;
                        pcr_diag[i] = prod[q].y;
                        pcr_upper[i] = prod[q].z;
                        pcr_rhs[i] = prod[q].w;
                    }
                }
                workgroupBarrier();
            }
            // Dᵢ (up to a positive factor) = the product's m00.
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    if (twist_row_in(v, first, 0u) && (twist_state[rest[vertex_slot(v)].rod - first] & TWIST_SOLVED) == 0u && !(pcr_lower[i] > 0.0)) {
                        atomicStore(&rod_singular[rest[vertex_slot(v)].rod - first], 1u);
                    }
                }
            }
            workgroupBarrier();
            // The system of the rods that passed now; the identity elsewhere.
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    let r = rest[vertex_slot(v)].rod;
                    let k = r - first;
                    var lower = 0.0;
                    var diag = 1.0;
                    var upper = 0.0;
                    var rhs = 0.0;
                    if (twist_row_in(v, first, 0u) && (twist_state[k] & TWIST_SOLVED) == 0u && atomicLoad(&rod_singular[k]) == 0u) {
                        let f = twist_free(r);
                        diag = scratch_g_z(v) + pack_rods_a[k].x;
                        rhs = -(scratch_g_x(v) + scratch_g_y(v));
                        if (v > f.x) {
                            lower = scratch_g_w(v - 1u);
                        }
                        if (v + 1u < f.y) {
                            upper = scratch_g_w(v);
                        }
                    }
                    pcr_lower[i] = lower;
                    pcr_diag[i] = diag;
                    pcr_upper[i] = upper;
                    pcr_rhs[i] = rhs;
                }
            }
            workgroupBarrier();
            pcr_solve(lid, n);
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    let k = rest[vertex_slot(v)].rod - first;
                    if (twist_row_in(v, first, 0u) && (twist_state[k] & TWIST_SOLVED) == 0u && atomicLoad(&rod_singular[k]) == 0u) {
                        scratch_set_s_x(v, pcr_rhs[i]);
                    }
                }
            }
            workgroupBarrier();
            for (var k = lid; k < nr; k += PACK_WORKGROUP) {
                if (rod_active[k] == 1u && (twist_state[k] & TWIST_SOLVED) == 0u) {
                    if (atomicLoad(&rod_singular[k]) == 0u) {
                        twist_state[k] |= TWIST_SOLVED;
                    } else {
                        let mu = pack_rods_a[k].x;
                        pack_rods_a[k].x = select(mu * 10.0, 1e-8 * max(twist_g[k].z, 1e-30), mu == 0.0);
                        atomicStore(&pack_busy, 1u);
                    }
                }
            }
            if (!twist_any_busy(lid)) {
                break;
            }
        }
        storageBarrier();
        workgroupBarrier();
        // (4) Slope and largest step of each solved rod; the rods without a
        // direction stop (`twist_walk`'s break).
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            atomicStore(&rod_over[k], 0u);
            if (rod_active[k] == 1u && (twist_state[k] & TWIST_SOLVED) == 0u) {
                rod_active[k] = 0u;
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                var slope = 0.0;
                if (twist_row_in(v, first, 0u)) {
                    let step = scratch_s_x(v);
                    slope = step * (scratch_g_x(v) + scratch_g_y(v));
                    atomicMax(&rod_over[rest[vertex_slot(v)].rod - first], bitcast<u32>(abs(step)));
                }
                twist_sum[i] = slope;
            }
        }
        workgroupBarrier();
        twist_rod_sums(lid, v0, n, most);
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u) {
                twist_g[k].x = twist_sum[rods[first + k].vertex_offset - v0];
                twist_g[k].y = bitcast<f32>(atomicLoad(&rod_over[k]));
            }
        }
        workgroupBarrier();
        // A step below the tolerance is taken without a line search.
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                let k = rest[vertex_slot(v)].rod - first;
                if (twist_row_in(v, first, 0u) && twist_g[k].y < pack_rods_a[k].w) {
                    frame_set_theta(v, frame_theta(v) + scratch_s_x(v));
                }
            }
        }
        workgroupBarrier();
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u) {
                if (twist_g[k].y < pack_rods_a[k].w) {
                    rod_iterations[k] = it + 1u;
                    rod_active[k] = 0u;
                } else {
                    twist_state[k] |= TWIST_SEARCH;
                    pack_rods_a[k].y = 1.0;
                    atomicStore(&pack_busy, 1u);
                }
            }
        }
        storageBarrier();
        if (!twist_any_busy(lid)) {
            break;
        }
        // (5) The energy at the current angles where not known yet.
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                let r = rest[vertex_slot(v)].rod;
                let k = r - first;
                var e = 0.0;
                if (rod_active[k] == 1u && (twist_state[k] & TWIST_HAVE_E0) == 0u) {
                    e = twist_vertex_energy(r, v, v - rods[r].vertex_offset, false);
                }
                twist_sum[i] = e;
            }
        }
        workgroupBarrier();
        twist_rod_sums(lid, v0, n, most);
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u && (twist_state[k] & TWIST_HAVE_E0) == 0u) {
                pack_rods_a[k].z = twist_sum[rods[first + k].vertex_offset - v0];
                twist_state[k] |= TWIST_HAVE_E0;
            }
        }
        workgroupBarrier();
        // Backtracking line search with the Armijo condition, every rod
        // halving its own α until it accepts or gives up.
        for (var ls = 0u; ls < 64u; ls++) {
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    if (twist_row_in(v, first, TWIST_SEARCH)) {
                        let k = rest[vertex_slot(v)].rod - first;
                        scratch_set_s_z(v, frame_theta(v) + pack_rods_a[k].y * scratch_s_x(v));
                    }
                }
            }
            storageBarrier();
            workgroupBarrier();
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    let r = rest[vertex_slot(v)].rod;
                    var e = 0.0;
                    if (rod_active[r - first] == 1u && (twist_state[r - first] & TWIST_SEARCH) != 0u) {
                        e = twist_vertex_energy(r, v, v - rods[r].vertex_offset, true);
                    }
                    twist_sum[i] = e;
                }
            }
            workgroupBarrier();
            twist_rod_sums(lid, v0, n, most);
            for (var k = lid; k < nr; k += PACK_WORKGROUP) {
                if (rod_active[k] == 1u && (twist_state[k] & TWIST_SEARCH) != 0u) {
                    let e1 = twist_sum[rods[first + k].vertex_offset - v0];
                    let e0 = pack_rods_a[k].z;
                    let alpha = pack_rods_a[k].y;
                    let tolerance = pack_rods_a[k].w;
                    let max_step = twist_g[k].y;
                    if (e1 <= e0 + 1e-4 * alpha * twist_g[k].x + ENERGY_SLACK_F32 * abs(e0) || alpha * max_step < tolerance) {
                        // Accepted: the angles move below; stop after if the step was small.
                        pack_rods_a[k].z = e1;
                        twist_state[k] &= ~TWIST_SEARCH;
                        rod_iterations[k] = it + 1u;
                    } else {
                        pack_rods_a[k].y = alpha * 0.5;
                        if (alpha * 0.5 < 1e-10) {
                            twist_state[k] &= ~(TWIST_SEARCH | TWIST_SOLVED);
                            rod_active[k] = 0u;
                        } else {
                            atomicStore(&pack_busy, 1u);
                        }
                    }
                }
            }
            if (!twist_any_busy(lid)) {
                break;
            }
        }
        // The accepted angles; a step below the tolerance ends the rod's solve.
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                if (twist_row_in(v, first, TWIST_SOLVED)) {
                    frame_set_theta(v, scratch_s_z(v));
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u) {
                if (pack_rods_a[k].y * twist_g[k].y < pack_rods_a[k].w) {
                    rod_active[k] = 0u;
                } else {
                    atomicStore(&pack_busy, 1u);
                }
            }
        }
        if (!twist_any_busy(lid)) {
            break;
        }
    }
    workgroupBarrier();
    for (var k = lid; k < nr; k += PACK_WORKGROUP) {
        atomicMax(&stats[0], rod_iterations[k]);
    }
}

@compute @workgroup_size(PACK_WORKGROUP)
fn twist(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    let w = pack_index(wid, groups);
    if (w >= params.rod_count || rods[w].pack_end == 0u) {
        return;
    }
    twist_pack(w, lid);
    loops_ran_out(pack_rods(w).x);
}
