// Kernels `project_fast` and `project_shake` (src/cpu/project.rs): the Newton
// projection of `newton_projection` (project.wgsl), one workgroup per pack of
// consecutive rods (src/gpu/pack.rs), every stage parallel over the pack's
// vertices. Row i of a pack is its vertex v0 + i and the edge starting there;
// the pack's system is tridiagonal with rows of δλ = 0 (and no coupling) for
// the vertex that ends each rod, for an edge that cannot move, and for every
// edge of a rod that has converged, so the rods of a pack never couple and
// each rod takes exactly the iterations it would alone. Invocation `lid`
// holds rows lid + PACK_WORKGROUP·q, q < ROWS_PER_INVOCATION (coalesced loads).
//
// Per Newton iteration: (1) which rods still have strain above the allowance
// (per-rod atomics in workgroup memory; the loop ends when no rod of the pack
// has), (2) the iteration's edge directions (fast) or the start edges
// (SHAKE, once), (3) each row's diagonal and constraint value, (4) the
// couplings through shared vertices, (5) parallel cyclic reduction, (6) each
// vertex moved by its two edges' multipliers. A rod longer than a pack
// (PACK_ROWS vertices) is a pack of its own and one invocation runs the
// serial `newton_projection` on it.

// The pack's shape (src/gpu/pack.rs `PackShape`; this block is the
// default, 256 rows on 64 invocations, and `layout::shader_variant` puts
// another shape's in its place).
// BEGIN pack shape
const PACK_ROWS: u32 = 256u;         // vertices of a pack at most
const PACK_WORKGROUP: u32 = 64u;     // invocations of a per-pack workgroup
const ROWS_PER_INVOCATION: u32 = 4u; // PACK_ROWS / PACK_WORKGROUP
const PACK_RODS: u32 = 128u;         // rods of a pack at most (2 vertices each at least)
const RESIDENT_STATE_ROWS: u32 = 1u; // PACK_ROWS where a pack's whole state is resident (shaders/resident.wgsl), else 1
// END pack shape

// Whether a pack's row loops (`for q < row_loop_end(lid, n)`, row
// i = lid + PACK_WORKGROUP·q) run to ROWS_PER_INVOCATION, a constant the
// compiler unrolls (a GPU: each of the invocation's rows in registers of
// its own), or to the rows the invocation holds, which it cannot
// (`GpuContext::with_unrolled_rows`; a CPU adapter: llvmpipe compiles a
// kernel with barriers as a coroutine, in time that grows faster than its
// blocks, and the unrolled loops doubled the packed fused kernels' compile,
// docs/BENCHMARKS.md, fortieth session). The same rows either way: every
// row loop's body is under `if (i < n)`, and the rows it skips are those.
override UNROLL_ROWS: bool = true;

// The end of invocation lid's row loops over a pack of n rows (n ≤
// PACK_ROWS): ROWS_PER_INVOCATION where UNROLL_ROWS, else the rows
// lid + PACK_WORKGROUP·q < n (lid < PACK_WORKGROUP, so the sum does not
// wrap; at most ROWS_PER_INVOCATION, so arrays of that many stay in bounds).
fn row_loop_end(lid: u32, n: u32) -> u32 {
    if (UNROLL_ROWS) {
        return ROWS_PER_INVOCATION;
    }
    return min(ROWS_PER_INVOCATION, (n + PACK_WORKGROUP - 1u - lid) / PACK_WORKGROUP);
}

// A row whose reduced diagonal falls below this fraction of its own is
// singular (src/cpu/project.rs `PCR_SINGULAR`): for the symmetric positive
// definite systems of the projection the reduced diagonal is 1/(A⁻¹)ᵢᵢ,
// ≥ Aᵢᵢ/(2n) for a chain of n edges (2e-3 of it at n = 256 vertices).
const PCR_SINGULAR: f32 = 1e-5;

var<workgroup> pcr_lower: array<f32, PACK_ROWS>; // A[i][i − s]
var<workgroup> pcr_diag: array<f32, PACK_ROWS>;
var<workgroup> pcr_upper: array<f32, PACK_ROWS>; // A[i][i + s]
var<workgroup> pcr_rhs: array<f32, PACK_ROWS>;   // right-hand side, then δλ
var<workgroup> row_diag: array<f32, PACK_ROWS>;  // Aᵢᵢ before the reduction
var<workgroup> row_edge: array<u32, PACK_ROWS>;  // 1: a row of the system, 0: δλ = 0
var<workgroup> rod_active: array<u32, PACK_RODS>;
var<workgroup> rod_polish: array<u32, PACK_RODS>;
var<workgroup> rod_iterations: array<u32, PACK_RODS>;
var<workgroup> rod_singular: array<atomic<u32>, PACK_RODS>;
// Largest strain above an allowance, as f32 bits (non-negative floats order
// as their bits), 0 when none is above it.
var<workgroup> rod_over: array<atomic<u32>, PACK_RODS>;
var<workgroup> rod_over_exact: array<atomic<u32>, PACK_RODS>;
var<workgroup> pack_busy: atomic<u32>;
var<workgroup> pack_busy_plain: u32;

// The pack of workgroup w: its rods [x, y) (`Rod.pack_end`, indexed by pack).
fn pack_rods(w: u32) -> vec2<u32> {
    var first = 0u;
    if (w > 0u) {
        first = rods[w - 1u].pack_end;
    }
    return vec2<u32>(first, rods[w].pack_end);
}

// Per rod of the pack: the largest strain above `tolerance` + 4 ulps into
// `rod_over`, above `exact` into `rod_over_exact`, over the movable edges of
// the rods still iterating (`all`: of every rod).
fn measure_strain(lid: u32, v0: u32, n: u32, first: u32, tolerance: f32, exact: f32, exact_ulps: f32, all: bool) {
    for (var q = 0u; q < row_loop_end(lid, n); q++) {
        let i = lid + q * PACK_WORKGROUP;
        if (i < n) {
            let v = v0 + i;
            let k = rest[vertex_slot(v)].rod - first;
            if (rest[vertex_slot(v)].rest_len > 0.0 && edge_active(v) && (all || rod_active[k] == 1u)) {
                let over = strain_above(v, tolerance, 4.0);
                if (over > 0.0) {
                    atomicMax(&rod_over[k], bitcast<u32>(over));
                }
                let over_exact = strain_above(v, exact, exact_ulps);
                if (over_exact > 0.0) {
                    atomicMax(&rod_over_exact[k], bitcast<u32>(over_exact));
                }
            }
        }
    }
}

// Solve the pack's tridiagonal system (pcr_lower, pcr_diag, pcr_upper) x =
// pcr_rhs in place by parallel cyclic reduction (src/cpu/project.rs
// `solve_tridiagonal_pcr`, level for level): at distance s = 1, 2, 4, … every
// row eliminates its neighbours at ±s with their own equations, so after
// ⌈log₂ n⌉ levels each row holds one unknown; x = rhs / diag.
fn pcr_solve(lid: u32, n: u32) {
    for (var s = 1u; s < n; s *= 2u) {
        var lower: array<f32, ROWS_PER_INVOCATION>;
        var diag: array<f32, ROWS_PER_INVOCATION>;
        var upper: array<f32, ROWS_PER_INVOCATION>;
        var rhs: array<f32, ROWS_PER_INVOCATION>;
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                var b = pcr_diag[i];
                var d = pcr_rhs[i];
                var a = 0.0;
                var c = 0.0;
                if (i >= s && pcr_lower[i] != 0.0) {
                    let k = pcr_lower[i] / pcr_diag[i - s];
                    b -= k * pcr_upper[i - s];
                    d -= k * pcr_rhs[i - s];
                    a = -k * pcr_lower[i - s];
                }
                if (i + s < n && pcr_upper[i] != 0.0) {
                    let k = pcr_upper[i] / pcr_diag[i + s];
                    b -= k * pcr_lower[i + s];
                    d -= k * pcr_rhs[i + s];
                    c = -k * pcr_upper[i + s];
                }
                lower[q] = a;
                diag[q] = b;
                upper[q] = c;
                rhs[q] = d;
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                pcr_lower[i] = lower[q];
                pcr_diag[i] = diag[q];
                pcr_upper[i] = upper[q];
                pcr_rhs[i] = rhs[q];
            }
        }
        workgroupBarrier();
    }
    for (var q = 0u; q < row_loop_end(lid, n); q++) {
        let i = lid + q * PACK_WORKGROUP;
        if (i < n) {
            pcr_rhs[i] = pcr_rhs[i] / pcr_diag[i];
        }
    }
    workgroupBarrier();
}

fn project_pack(w: u32, lid: u32, shake: bool) {
    let rods_of = pack_rods(w);
    let first = rods_of.x;
    let nr = rods_of.y - first;
    let v0 = rods[first].vertex_offset;
    let last = rods_of.y - 1u;
    let n = rods[last].vertex_offset + rods[last].vertex_count - v0;
    if (n > PACK_ROWS) {
        // A rod longer than a pack: serially, on one invocation.
        if (lid == 0u) {
            if (shake) {
                save_start_edges(first);
            }
            newton_projection(first, shake);
        }
        return;
    }
    let tolerance = max(params.fast_tolerance, FAST_TOLERANCE_F32);
    for (var k = lid; k < nr; k += PACK_WORKGROUP) {
        rod_active[k] = 1u;
        // SHAKE's extra Newton step past the f32 allowance (`newton_projection`).
        rod_polish[k] = select(0u, 1u, shake);
        rod_iterations[k] = 0u;
        atomicStore(&rod_singular[k], 0u);
    }
    if (shake) {
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n && rest[vertex_slot(v0 + i)].rest_len > 0.0) {
                let v = v0 + i;
                scratch_set_kb(v, vec4<f32>(displacement(pos_start[vertex_slot(v)], pos_start[vertex_slot(v + 1u)]), 0.0));
            }
        }
    }
    storageBarrier();
    workgroupBarrier();
    for (var it = 0u; it <= params.fast_max_iterations; it++) {
        // (1) Rods with work left.
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            atomicStore(&rod_over[k], 0u);
            atomicStore(&rod_over_exact[k], 0u);
        }
        if (lid == 0u) {
            atomicStore(&pack_busy, 0u);
        }
        workgroupBarrier();
        measure_strain(lid, v0, n, first, tolerance, tolerance, 0.0, false);
        workgroupBarrier();
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u) {
                if (rod_iterations[k] >= params.fast_max_iterations) {
                    rod_active[k] = 0u;
                } else if (atomicLoad(&rod_over[k]) == 0u) {
                    if (rod_polish[k] == 0u || atomicLoad(&rod_over_exact[k]) == 0u) {
                        rod_active[k] = 0u;
                    } else {
                        rod_polish[k] = 0u;
                    }
                }
                if (rod_active[k] == 1u) {
                    atomicStore(&pack_busy, 1u);
                }
            }
        }
        workgroupBarrier();
        if (lid == 0u) {
            pack_busy_plain = atomicLoad(&pack_busy);
        }
        if (workgroupUniformLoad(&pack_busy_plain) == 0u) {
            break;
        }
        // (2) This iteration's edge vectors, saved before any vertex moves.
        if (!shake) {
            for (var q = 0u; q < row_loop_end(lid, n); q++) {
                let i = lid + q * PACK_WORKGROUP;
                if (i < n) {
                    let v = v0 + i;
                    if (rest[vertex_slot(v)].rest_len > 0.0 && rod_active[rest[vertex_slot(v)].rod - first] == 1u) {
                        scratch_set_kb(v, vec4<f32>(edge_vector(v), 0.0));
                    }
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
        // (3) Diagonal and constraint value Cⱼ = |eʲ|² − |ēʲ|² of each row
        // (`newton_projection`).
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                var flag = 0u;
                var diag = 1.0;
                var rhs = 0.0;
                if (rest[vertex_slot(v)].rest_len > 0.0 && rod_active[rest[vertex_slot(v)].rod - first] == 1u && edge_active(v)) {
                    let d = edge_vector(v);
                    let dir = scratch_kb(v).xyz;
                    let dg = 4.0 * dot(d, edge_apply_inv_mass(v, v + 1u, dir) + edge_apply_inv_mass(v + 1u, v, dir));
                    let scale = 4.0 * length(d) * length(dir) * (rest[vertex_slot(v)].inv_mass + rest[vertex_slot(v + 1u)].inv_mass);
                    if (dg > 1e-12 * scale) {
                        flag = 1u;
                        diag = dg;
                        rhs = squared_length_error(pos_get(v), pos_get(v + 1u), rest[vertex_slot(v)].rest_len);
                    }
                }
                row_edge[i] = flag;
                pcr_diag[i] = diag;
                row_diag[i] = diag;
                pcr_rhs[i] = rhs;
            }
        }
        workgroupBarrier();
        // (4) Couplings through the shared vertices: A[i][i+1] =
        // −4 eⁱ·W(i+1) dⁱ⁺¹, A[i][i−1] = −4 eⁱ·W(i) dⁱ⁻¹, each W the shared
        // vertex's as the other edge uses it (`edge_apply_inv_mass`: a stuck
        // vertex's weight depends on the edge, so not symmetric even for the
        // fast projection, d = e).
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                var lower = 0.0;
                var upper = 0.0;
                if (row_edge[i] == 1u) {
                    let d = edge_vector(v);
                    if (i + 1u < n && row_edge[i + 1u] == 1u) {
                        upper = -4.0 * dot(d, edge_apply_inv_mass(v + 1u, v + 2u, scratch_kb(v + 1u).xyz));
                    }
                    if (i > 0u && row_edge[i - 1u] == 1u) {
                        lower = -4.0 * dot(d, edge_apply_inv_mass(v, v - 1u, scratch_kb(v - 1u).xyz));
                    }
                }
                pcr_lower[i] = lower;
                pcr_upper[i] = upper;
            }
        }
        workgroupBarrier();
        // (5)
        pcr_solve(lid, n);
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n && row_edge[i] == 1u && !(pcr_diag[i] > PCR_SINGULAR * row_diag[i])) {
                atomicStore(&rod_singular[rest[vertex_slot(v0 + i)].rod - first], 1u);
            }
        }
        workgroupBarrier();
        // (6) Each vertex moves by its edges' multipliers, unless its rod's
        // system was singular (the serial form stops before moving).
        for (var q = 0u; q < row_loop_end(lid, n); q++) {
            let i = lid + q * PACK_WORKGROUP;
            if (i < n) {
                let v = v0 + i;
                let k = rest[vertex_slot(v)].rod - first;
                if (rod_active[k] == 1u && atomicLoad(&rod_singular[k]) == 0u) {
                    var g = vec3<f32>(0.0);
                    if (row_edge[i] == 1u) {
                        g += 2.0 * scratch_kb(v).xyz * pcr_rhs[i];
                    }
                    if (i > 0u && row_edge[i - 1u] == 1u) {
                        g -= 2.0 * scratch_kb(v - 1u).xyz * pcr_rhs[i - 1u];
                    }
                    var m = apply_inv_mass(v, g);
                    if (filter_contact(v).w < 0.0) {
                        // A stuck vertex: each edge's part with its own weight.
                        m = vec3<f32>(0.0);
                        if (row_edge[i] == 1u) {
                            m += edge_apply_inv_mass(v, v + 1u, 2.0 * scratch_kb(v).xyz * pcr_rhs[i]);
                        }
                        if (i > 0u && row_edge[i - 1u] == 1u) {
                            m -= edge_apply_inv_mass(v, v - 1u, 2.0 * scratch_kb(v - 1u).xyz * pcr_rhs[i - 1u]);
                        }
                    }
                    pos_set(v, moved(pos_get(v), m));
                }
            }
        }
        workgroupBarrier();
        for (var k = lid; k < nr; k += PACK_WORKGROUP) {
            if (rod_active[k] == 1u) {
                if (atomicLoad(&rod_singular[k]) != 0u) {
                    rod_active[k] = 0u;
                } else {
                    rod_iterations[k] += 1u;
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
    // Iterations, and a failed projection (`newton_projection`): only the
    // plain projection (phase 0) can fail the run.
    let fail = max(tolerance, PROJECTION_FAIL_STRAIN);
    for (var k = lid; k < nr; k += PACK_WORKGROUP) {
        atomicStore(&rod_over[k], 0u);
        atomicStore(&rod_over_exact[k], 0u);
    }
    workgroupBarrier();
    measure_strain(lid, v0, n, first, tolerance, fail, 4.0, true);
    workgroupBarrier();
    for (var k = lid; k < nr; k += PACK_WORKGROUP) {
        atomicMax(&stats[1], rod_iterations[k]);
        let over = atomicLoad(&rod_over_exact[k]);
        if (stage_phase == 0u && atomicLoad(&rod_over[k]) != 0u && over != 0u) {
            atomicMax(&stats[6], (first + k + 1u) * 2u + atomicLoad(&rod_singular[k]));
            atomicMax(&stats[7], bitcast<u32>(bitcast<f32>(over) + fail));
        }
    }
}

// The most edges of a rod of pack [x, y): the levels a scan within each
// rod needs (distances s < it). Read by every invocation from the uniform
// rod table, so uniform (a loop bound around barriers).
fn pack_most_edges(rods_of: vec2<u32>) -> u32 {
    var most = 0u;
    for (var r = rods_of.x; r < rods_of.y; r++) {
        most = max(most, rods[r].vertex_count - 1u);
    }
    return most;
}

fn pack_index(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return wid.x + wid.y * groups.x;
}

@compute @workgroup_size(PACK_WORKGROUP)
fn project_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let w = pack_index(wid, groups);
    if (w >= params.rod_count || rods[w].pack_end == 0u) {
        return;
    }
    project_pack(w, lid, false);
    loops_ran_out(pack_rods(w).x);
}

@compute @workgroup_size(PACK_WORKGROUP)
fn project_shake(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    stage_phase = params.phase;
    let w = pack_index(wid, groups);
    if (w >= params.rod_count || rods[w].pack_end == 0u) {
        return;
    }
    project_pack(w, lid, true);
    loops_ran_out(pack_rods(w).x);
}
