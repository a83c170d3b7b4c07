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

// Node k's accumulators all zero.
fn grid_node_zero(k: u32) {
    for (var i = 0u; i < 4u; i++) {
        atomicStore(&grid[k * 4u + i], 0li);
    }
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

// Node k's accumulator i (0: mass, 1 + a: momentum along a) as f32.
fn grid_node_value(k: u32, i: u32) -> f32 {
    return f32(atomicLoad(&grid[k * 4u + i]));
}

// ⌊mass/2³²⌋ of node k (`could_overflow`).
fn grid_node_mass_high(k: u32) -> u32 {
    return u32(atomicLoad(&grid[k * 4u]) >> 32u);
}
// END grid accumulators
