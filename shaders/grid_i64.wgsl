// BEGIN grid accumulators as i64
// The block of shaders/grid.wgsl that reads and adds the grid's node
// accumulators and counters, for devices with 64-bit atomics
// (`wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS`; `layout::shader_variant`):
// the same memory, each 64-bit value (low word first) one atomic, so a
// node's mass and momentum take 4 atomics rather than 7 to 8 as u32 pairs
// with a carry. Integer sums either way: the same bits in any order.
@group(1) @binding(14) var<storage, read_write> grid: array<atomic<i64>>;

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

// Node k's momentum as f32, its mass and momentum left zero for the next
// splat, the mass word carrying `NODE_FIELDED`: each momentum read and
// zeroed in one exchange.
fn grid_node_take_momentum(k: u32) -> vec3<f32> {
    atomicStore(&grid[k * 4u], NODE_FIELDED);
    var p = vec3<f32>(0.0);
    for (var a = 0u; a < 3u; a++) {
        p[a] = f32(atomicExchange(&grid[k * 4u + 1u + a], 0li));
    }
    return p;
}
// Node k's mass word zero, its `NODE_FIELDED` flag cleared.
fn grid_node_unflag(k: u32) {
    atomicStore(&grid[k * 4u], 0li);
}
// END grid accumulators
