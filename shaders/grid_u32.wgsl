#import common
#import grid_fixed

// The grid's node accumulators and counters (`grid`; shaders/common.wgsl
// has the layout) as pairs of 32-bit atomics, added with an explicit carry.
// On a device with 64-bit atomics shaders/grid_i64.wgsl takes this
// module's place (src/gpu/compose.rs), one atomic per value, with the same
// names.
@group(1) @binding(14) var<storage, read_write> grid: array<atomic<u32>>;

// Add the 64-bit d to the accumulator at word i: the low word first, then
// the high word with the carry out of this very addition. A word that would
// gain zero is not touched (the same sum with fewer atomics: a mass or a
// positive momentum below 2³² has no high word, a zero velocity component
// nothing at all).
fn atomic_add_wide(i: u32, d: vec2<u32>) {
    var carry = 0u;
    if (d.x != 0u) {
        let old = atomicAdd(&grid[i], d.x);
        carry = select(0u, 1u, old + d.x < old);
    }
    let high = d.y + carry;
    if (high != 0u) {
        atomicAdd(&grid[i + 1u], high);
    }
}

// The signed 64-bit (low, high) value d as f32.
fn wide_f32(d_in: vec2<u32>) -> f32 {
    var d = d_in;
    var sign = 1.0;
    if ((d.y & 0x80000000u) != 0u) {
        d = negate_wide(d);
        sign = -1.0;
    }
    return sign * (f32(d.y) * 4294967296.0 + f32(d.x));
}

// Counter c (GRID_VMAX, ...: its low word; the high one stays zero).
fn grid_counter(c: u32) -> u32 {
    return atomicLoad(&grid[params.node_count * WORDS_PER_NODE + c]);
}

fn grid_counter_max(c: u32, x: u32) {
    atomicMax(&grid[params.node_count * WORDS_PER_NODE + c], x);
}

fn grid_counter_add(c: u32, x: u32) {
    atomicAdd(&grid[params.node_count * WORDS_PER_NODE + c], x);
}

fn grid_counter_zero(c: u32) {
    atomicStore(&grid[params.node_count * WORDS_PER_NODE + c], 0u);
}

// Add mass wm and momentum wm·v_q to node k.
fn grid_node_add(k: u32, wm: u32, vq: vec3<i32>) {
    let base = k * WORDS_PER_NODE;
    atomic_add_wide(base, vec2<u32>(wm, 0u));
    let speed = vec3<u32>(abs(vq));
    for (var a = 0u; a < 3u; a++) {
        var d = mul_wide(wm, speed[a]);
        if (vq[a] < 0) {
            d = negate_wide(d);
        }
        atomic_add_wide(base + 2u + 2u * a, d);
    }
}

// Node k's mass as f32, ⌊mass/2³²⌋ (`could_overflow`) and its
// `NODE_FIELDED` flag, read once.
fn grid_node_mass(k: u32) -> NodeMass {
    let i = k * WORDS_PER_NODE;
    let high = atomicLoad(&grid[i + 1u]);
    let d = vec2<u32>(atomicLoad(&grid[i]), high & ~NODE_FIELDED_HIGH);
    return NodeMass(wide_f32(d), d.y, (high & NODE_FIELDED_HIGH) != 0u);
}

// Node k's momentum as f32, left zero for the next splat: each momentum
// word read and zeroed in one exchange (the mass word: `grid_node_set_flag`).
fn grid_node_take_momentum(k: u32) -> vec3<f32> {
    let base = k * WORDS_PER_NODE;
    var p = vec3<f32>(0.0);
    for (var a = 0u; a < 3u; a++) {
        let i = base + 2u + 2u * a;
        p[a] = wide_f32(vec2<u32>(atomicExchange(&grid[i], 0u), atomicExchange(&grid[i + 1u], 0u)));
    }
    return p;
}
// Node k's mass word zero, carrying `NODE_FIELDED` if `fielded`.
fn grid_node_set_flag(k: u32, fielded: bool) {
    atomicStore(&grid[k * WORDS_PER_NODE], 0u);
    atomicStore(&grid[k * WORDS_PER_NODE + 1u], select(0u, NODE_FIELDED_HIGH, fielded));
}

// The walked splat's window (`grid_splat_rod`) without 64-bit integers:
// each vertex added to its 8 nodes at once.
struct SplatWindow {
    unused: u32,
}

fn splat_window() -> SplatWindow {
    return SplatWindow(0u);
}

// A vertex at grid position q (quantised mass mass_q, velocity vq) added
// to the 8 nodes of its cell.
fn splat_window_add(w: ptr<function, SplatWindow>, g: GridGroup, q: vec3<i32>, mass_q: u32, vq: vec3<i32>) {
    for (var c = 0u; c < 8u; c++) {
        let kw = corner(g, q, c);
        grid_node_add(kw.x, kw.y * mass_q, vq);
    }
}

fn splat_window_flush(w: ptr<function, SplatWindow>, g: GridGroup) {}
