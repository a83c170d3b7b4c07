#import common
#import grid_fixed

// The grid's node accumulators and counters as 64-bit atomics, for devices
// with `wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS`: the alternative of
// shaders/grid_u32.wgsl (src/gpu/compose.rs), the same names and the same
// memory, each 64-bit value (low word first) one atomic, so a
// node's mass and momentum take 4 atomics rather than 7 to 8 as u32 pairs
// with a carry. Integer sums either way: the same bits in any order.
@group(1) @binding(14) var<storage, read_write> grid: array<atomic<i64>>;
// (naga 30 translates `i64(x)` of a u32 x to SPIR-V's SConvert, which
// sign-extends: x ≥ 2³¹ would turn negative. Every u32 converted below is
// under 2³¹: counters, node indices + 1, speeds ≤ 2³⁰, weighted masses
// < 2²⁷; the low word of a 64-bit sum would not be.)

// Counter c (GRID_VMAX, ...: an even word offset, so a 64-bit slot of its own).
fn grid_counter(c: u32) -> u32 {
    return u32(atomicLoad(&grid[(params.node_count * WORDS_PER_NODE + c) / 2u]));
}

fn grid_counter_max(c: u32, x: u32) {
    atomicMax(&grid[(params.node_count * WORDS_PER_NODE + c) / 2u], i64(x));
}

fn grid_counter_add(c: u32, x: u32) {
    atomicAdd(&grid[(params.node_count * WORDS_PER_NODE + c) / 2u], i64(x));
}

fn grid_counter_zero(c: u32) {
    atomicStore(&grid[(params.node_count * WORDS_PER_NODE + c) / 2u], 0li);
}

// Add mass wm and momentum wm·v_q to node k; a zero mass or momentum
// component is not added (the same sum with fewer atomics).
fn grid_node_add(k: u32, wm: u32, vq: vec3<i32>) {
    if (wm == 0u) {
        return;
    }
    let m = i64(wm);
    atomicAdd(&grid[k * 4u], m);
    for (var a = 0u; a < 3u; a++) {
        if (vq[a] != 0) {
            atomicAdd(&grid[k * 4u + 1u + a], m * i64(vq[a]));
        }
    }
}

// Bit 62 of a node's mass word (`NODE_FIELDED_HIGH` in shaders/grid.wgsl).
const NODE_FIELDED: i64 = 0x4000000000000000li;

// Node k's mass as f32, ⌊mass/2³²⌋ (`could_overflow`) and its
// `NODE_FIELDED` flag, read once.
fn grid_node_mass(k: u32) -> NodeMass {
    let word = atomicLoad(&grid[k * 4u]);
    let m = word & ~NODE_FIELDED;
    return NodeMass(f32(m), u32(m >> 32u), (word & NODE_FIELDED) != 0li);
}

// Node k's momentum as f32, left zero for the next splat: each momentum
// read and zeroed in one exchange (the mass word: `grid_node_set_flag`).
fn grid_node_take_momentum(k: u32) -> vec3<f32> {
    var p = vec3<f32>(0.0);
    for (var a = 0u; a < 3u; a++) {
        p[a] = f32(atomicExchange(&grid[k * 4u + 1u + a], 0li));
    }
    return p;
}
// Node k's mass word zero, carrying `NODE_FIELDED` if `fielded`.
fn grid_node_set_flag(k: u32, fielded: bool) {
    atomicStore(&grid[k * 4u], select(0li, NODE_FIELDED, fielded));
}

// The walked splat's window (`grid_splat_rod`): the mass and momentum sums
// of a rod's consecutive vertices for the 8 nodes of the cell the walk is
// in (node `cell` + corner c, bit a of c the upper node along axis a;
// corners 0–3 in `m0`…, 4–7 in `m1`…, component c & 3). When the walk
// enters another cell, the nodes it leaves are added to the grid and the
// nodes it keeps move to their corners in the new cell. Integer sums in
// another order: the CPU twin is still `cpu::grid::grid_splat`, vertex by
// vertex, and the grid is its bit for bit (tests/gpu_interaction.rs
// `walked_splat_is_the_cpus_bit_for_bit`).
struct SplatWindow {
    cell: vec3<i32>,
    m0: vec4<i64>,
    m1: vec4<i64>,
    x0: vec4<i64>,
    x1: vec4<i64>,
    y0: vec4<i64>,
    y1: vec4<i64>,
    z0: vec4<i64>,
    z1: vec4<i64>,
}

// An empty window (no node holds anything, so entering the first cell adds nothing).
fn splat_window() -> SplatWindow {
    let z = vec4<i64>(0li);
    return SplatWindow(vec3<i32>(-4), z, z, z, z, z, z, z, z);
}

// Corner c of the window's cell: its node's sums added to the grid (a
// zero momentum component is not added: the same sum with fewer atomics).
fn splat_window_add_node(g: GridGroup, cell: vec3<i32>, c: u32, m: i64, p: vec3<i64>) {
    let k = node_index(g, cell + vec3<i32>(vec3<u32>(c, c >> 1u, c >> 2u) & vec3<u32>(1u)));
    atomicAdd(&grid[k * 4u], m);
    for (var a = 0u; a < 3u; a++) {
        if (p[a] != 0li) {
            atomicAdd(&grid[k * 4u + 1u + a], p[a]);
        }
    }
}

// The window moved to cell n: nodes of the old cell that are not nodes of
// n added to the grid, the others moved to their corners of n.
fn splat_window_move(w: ptr<function, SplatWindow>, g: GridGroup, n: vec3<i32>) {
    let d = n - (*w).cell;
    if (all(d == vec3<i32>(0))) {
        return;
    }
    // A node stays along axis a when the walk did not move along a, moved
    // up by one and the node is the upper one, or down by one and it is the lower.
    let upper_x = vec4<bool>(false, true, false, true);
    let upper_y = vec4<bool>(false, false, true, true);
    let sx = vec4<bool>(d.x == 0) | (vec4<bool>(d.x == 1) & upper_x) | (vec4<bool>(d.x == -1) & !upper_x);
    let sy = vec4<bool>(d.y == 0) | (vec4<bool>(d.y == 1) & upper_y) | (vec4<bool>(d.y == -1) & !upper_y);
    let stay0 = sx & sy & vec4<bool>(d.z == 0 || d.z == -1);
    let stay1 = sx & sy & vec4<bool>(d.z == 0 || d.z == 1);
    // The nodes that leave holding mass, as bits of their corners, visited
    // in one loop: it runs as often as the most such nodes of any lane
    // (on a CPU adapter each atomic is a loop over the lanes whether or not
    // a lane takes it, so 8 corners' atomics each written out cost more).
    // A node without mass has no momentum either: nothing to add.
    let z = vec4<i64>(0li);
    let leave0 = !stay0 & ((*w).m0 != z);
    let leave1 = !stay1 & ((*w).m1 != z);
    var pending = dot(select(vec4<u32>(0u), vec4<u32>(1u, 2u, 4u, 8u), leave0), vec4<u32>(1u))
        | dot(select(vec4<u32>(0u), vec4<u32>(16u, 32u, 64u, 128u), leave1), vec4<u32>(1u));
    for (; pending != 0u; pending &= pending - 1u) {
        let c = firstTrailingBit(pending);
        let i = c & 3u;
        let hi = c >= 4u;
        let m = select((*w).m0[i], (*w).m1[i], hi);
        let p = vec3<i64>(select((*w).x0[i], (*w).x1[i], hi), select((*w).y0[i], (*w).y1[i], hi), select((*w).z0[i], (*w).z1[i], hi));
        splat_window_add_node(g, (*w).cell, c, m, p);
    }
    var m0 = select(z, (*w).m0, stay0);
    var m1 = select(z, (*w).m1, stay1);
    var x0 = select(z, (*w).x0, stay0);
    var x1 = select(z, (*w).x1, stay1);
    var y0 = select(z, (*w).y0, stay0);
    var y1 = select(z, (*w).y1, stay1);
    var z0 = select(z, (*w).z0, stay0);
    var z1 = select(z, (*w).z1, stay1);
    // The nodes kept are now at the other end along each axis moved; the
    // nodes left are zero and become the new ones.
    if (d.x != 0) {
        m0 = m0.yxwz; m1 = m1.yxwz; x0 = x0.yxwz; x1 = x1.yxwz;
        y0 = y0.yxwz; y1 = y1.yxwz; z0 = z0.yxwz; z1 = z1.yxwz;
    }
    if (d.y != 0) {
        m0 = m0.zwxy; m1 = m1.zwxy; x0 = x0.zwxy; x1 = x1.zwxy;
        y0 = y0.zwxy; y1 = y1.zwxy; z0 = z0.zwxy; z1 = z1.zwxy;
    }
    if (d.z != 0) {
        (*w) = SplatWindow(n, m1, m0, x1, x0, y1, y0, z1, z0);
    } else {
        (*w) = SplatWindow(n, m0, m1, x0, x1, y0, y1, z0, z1);
    }
}

// A vertex at grid position q (quantised mass mass_q, velocity vq) added
// to the window's nodes.
fn splat_window_add(w: ptr<function, SplatWindow>, g: GridGroup, q: vec3<i32>, mass_q: u32, vq: vec3<i32>) {
    splat_window_move(w, g, q >> vec3<u32>(FRAC_BITS));
    let f = q & vec3<i32>(FRAC_MASK);
    let full = i32(FULL);
    let wxy = vec4<i32>(full - f.x, f.x, full - f.x, f.x) * vec4<i32>(full - f.y, full - f.y, f.y, f.y) * i32(mass_q);
    let w0 = vec4<i64>(wxy * (full - f.z));
    let w1 = vec4<i64>(wxy * f.z);
    let v = vec3<i64>(vq);
    (*w).m0 += w0;
    (*w).m1 += w1;
    (*w).x0 += w0 * v.x;
    (*w).x1 += w1 * v.x;
    (*w).y0 += w0 * v.y;
    (*w).y1 += w1 * v.y;
    (*w).z0 += w0 * v.z;
    (*w).z1 += w1 * v.z;
}

// The window's nodes added to the grid (the end of the rod).
fn splat_window_flush(w: ptr<function, SplatWindow>, g: GridGroup) {
    splat_window_move(w, g, (*w).cell + vec3<i32>(4));
}
