// BEGIN position buffers as 64-bit words
// The block of shaders/common.wgsl that declares `pos`, `vel` and
// `pos_unc`, for a CPU adapter with 64-bit integers
// (`wgpu::Features::SHADER_INT64`; `layout::Variant::wide_positions`): the
// same bytes per vertex (`Position`: cell x, y, z, w as i32, then rem x, y,
// z, w as f32; a velocity's x, y, z, w as f32), each pair of 32-bit values
// one little-endian 64-bit word. llvmpipe loads and stores storage buffers
// element by element in a loop over the lanes, so half the elements cost
// about half (scripts/kernel-instructions.sh: docs/BENCHMARKS.md). The
// values are the same bits either way: the accessors only move them.
@group(1) @binding(0) var<storage, read_write> pos: array<vec4<u64>>;
@group(1) @binding(1) var<storage, read_write> vel: array<vec2<u64>>;
@group(1) @binding(2) var<storage, read_write> pos_unc: array<vec4<u64>>;

// The low and high 32 bits of a word, and two halves as one.
fn word_low(x: u64) -> u32 {
    return u32(x & 0xfffffffflu);
}

fn word_high(x: u64) -> u32 {
    return u32(x >> 32u);
}

fn word(low: u32, high: u32) -> u64 {
    return u64(low) | (u64(high) << 32u);
}

fn position_from_words(w: vec4<u64>) -> Position {
    let cell = vec4<u32>(word_low(w.x), word_high(w.x), word_low(w.y), word_high(w.y));
    let rem = vec4<u32>(word_low(w.z), word_high(w.z), word_low(w.w), word_high(w.w));
    return Position(bitcast<vec4<i32>>(cell), bitcast<vec4<f32>>(rem));
}

fn position_words(p: Position) -> vec4<u64> {
    let cell = bitcast<vec4<u32>>(p.cell);
    let rem = bitcast<vec4<u32>>(p.rem);
    return vec4<u64>(word(cell.x, cell.y), word(cell.z, cell.w), word(rem.x, rem.y), word(rem.z, rem.w));
}

fn pos_load(v: u32) -> Position {
    return position_from_words(pos[v]);
}

fn pos_store(v: u32, p: Position) {
    pos[v] = position_words(p);
}

fn pos_unc_load(v: u32) -> Position {
    return position_from_words(pos_unc[v]);
}

fn pos_unc_store(v: u32, p: Position) {
    pos_unc[v] = position_words(p);
}
fn vel_load(v: u32) -> vec4<f32> {
    let w = vel[v];
    return bitcast<vec4<f32>>(vec4<u32>(word_low(w.x), word_high(w.x), word_low(w.y), word_high(w.y)));
}

fn vel_store(v: u32, u: vec4<f32>) {
    let b = bitcast<vec4<u32>>(u);
    vel[v] = vec2<u64>(word(b.x, b.y), word(b.z, b.w));
}
// END position buffers
