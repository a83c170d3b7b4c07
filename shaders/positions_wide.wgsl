// BEGIN position buffers as 64-bit words
// The block of shaders/common.wgsl that declares `pos`, `vel`, `pos_unc`,
// `contacts` and `grid_fields`, for a CPU adapter with 64-bit integers
// (`wgpu::Features::SHADER_INT64`; `layout::Variant::wide_positions`): the
// same bytes per element (`Position`: cell x, y, z, w as i32, then rem x,
// y, z, w as f32; `Contact`: two vec4<f32>; a velocity or a node's field:
// one vec4<f32>), each pair of 32-bit values one little-endian 64-bit word.
// llvmpipe loads storage buffers element by element in a loop over the
// lanes, so half the elements cost about half (scripts/kernel-instructions.sh:
// docs/BENCHMARKS.md); its 64-bit stores cost more than the 32-bit ones, so
// the kernels that mostly store take the other module
// (`Kernel::wide_positions_pay`). The values are the same bits either way:
// the accessors only move them.
@group(1) @binding(0) var<storage, read_write> pos: array<vec4<u64>>;
@group(1) @binding(1) var<storage, read_write> vel: array<vec2<u64>>;
@group(1) @binding(2) var<storage, read_write> pos_unc: array<vec4<u64>>;
@group(1) @binding(9) var<storage, read_write> contacts: array<vec4<u64>>;
@group(1) @binding(15) var<storage, read_write> grid_fields: array<vec2<u64>>;

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

// Four 32-bit values from two words, and back.
fn halves_of_words(a: u64, b: u64) -> vec4<u32> {
    return vec4<u32>(word_low(a), word_high(a), word_low(b), word_high(b));
}

fn words_of_halves(x: vec4<u32>) -> vec2<u64> {
    return vec2<u64>(word(x.x, x.y), word(x.z, x.w));
}

fn vec4_from_words(a: u64, b: u64) -> vec4<f32> {
    return bitcast<vec4<f32>>(halves_of_words(a, b));
}

fn words_of_vec4(x: vec4<f32>) -> vec2<u64> {
    return words_of_halves(bitcast<vec4<u32>>(x));
}

fn position_from_words(w: vec4<u64>) -> Position {
    return Position(bitcast<vec4<i32>>(halves_of_words(w.x, w.y)), vec4_from_words(w.z, w.w));
}

fn position_words(p: Position) -> vec4<u64> {
    return vec4<u64>(words_of_halves(bitcast<vec4<u32>>(p.cell)), words_of_vec4(p.rem));
}

fn pos_load(v: u32) -> Position {
    return position_from_words(pos[vertex_slot(v)]);
}

fn pos_store(v: u32, p: Position) {
    pos[vertex_slot(v)] = position_words(p);
}

fn pos_unc_load(v: u32) -> Position {
    return position_from_words(pos_unc[vertex_slot(v)]);
}

fn pos_unc_store(v: u32, p: Position) {
    pos_unc[vertex_slot(v)] = position_words(p);
}

fn vel_load(v: u32) -> vec4<f32> {
    let w = vel[vertex_slot(v)];
    return vec4_from_words(w.x, w.y);
}

fn vel_store(v: u32, u: vec4<f32>) {
    vel[vertex_slot(v)] = words_of_vec4(u);
}

fn contact_load(v: u32) -> Contact {
    let w = contacts[vertex_slot(v)];
    return Contact(vec4_from_words(w.x, w.y), vec4_from_words(w.z, w.w));
}

fn contact_store(v: u32, c: Contact) {
    let a = words_of_vec4(c.normal_depth);
    let b = words_of_vec4(c.surface_velocity);
    contacts[vertex_slot(v)] = vec4<u64>(a, b);
}

fn contact_normal_depth_load(v: u32) -> vec4<f32> {
    return vec4_from_words(contacts[vertex_slot(v)].x, contacts[vertex_slot(v)].y);
}

fn field_load(k: u32) -> vec4<f32> {
    let w = grid_fields[k];
    return vec4_from_words(w.x, w.y);
}

fn field_store(k: u32, f: vec4<f32>) {
    grid_fields[k] = words_of_vec4(f);
}
// END position buffers
