#import common

// The grid's fixed-point units (src/cpu/grid.rs and
// src/model/interaction.rs have their twins): grid position
// q = ⌊(x − origin)·scale⌋ in f32, integer trilinear weights summing to
// 2^15, quantised velocities, and 64-bit values as (low, high) u32 pairs.
// Shared by the grid (shaders/grid.wgsl) and both forms of its
// accumulators (shaders/grid_u32.wgsl, shaders/grid_i64.wgsl).

const FRAC_BITS: u32 = 5u;
const FRAC_MASK: i32 = 31;
const FULL: u32 = 32u;           // 2^FRAC_BITS
const ONE_F: f32 = 32768.0;      // 2^(3·FRAC_BITS), the weights' sum
const VELOCITY_SCALE: f32 = 65536.0;
const WORDS_PER_NODE: u32 = 8u;  // mass, px, py, pz: (low, high) each

// `grid_position`: the vertex's fixed-point grid position, w = 1 when its
// cell lies inside the grid, 0 when not.
fn grid_position(g: GridGroup, x: vec3<f32>) -> vec4<i32> {
    let u = floor((x - g.origin.xyz) * g.origin.w);
    let top = vec3<f32>((g.dims.xyz - vec3<u32>(1u)) << vec3<u32>(FRAC_BITS));
    if (!(all(u >= vec3<f32>(0.0)) && all(u < top))) {
        return vec4<i32>(0);
    }
    return vec4<i32>(vec3<i32>(u), 1);
}

// Node index (within the whole grid buffer) and integer weight of corner c
// of the cell at q (`corners`): bit a of c takes the upper node along axis a.
fn corner(g: GridGroup, q: vec3<i32>, c: u32) -> vec2<u32> {
    let node = vec3<u32>(q >> vec3<u32>(FRAC_BITS));
    let frac = vec3<u32>(q & vec3<i32>(FRAC_MASK));
    var n = node;
    var w = 1u;
    for (var a = 0u; a < 3u; a++) {
        if (((c >> a) & 1u) == 1u) {
            n[a] += 1u;
            w *= frac[a];
        } else {
            w *= FULL - frac[a];
        }
    }
    return vec2<u32>(node_index(g, vec3<i32>(n)), w);
}

const VELOCITY_LIMIT: f32 = 1073741824.0; // 2^30

// A node's mass (`grid_node_mass`).
struct NodeMass {
    value: f32,             // as f32
    high: u32,              // ⌊mass/2³²⌋
    fielded: bool,          // `NODE_FIELDED`: its field was written non-zero at the last grid_velocity
}

// Bit 62 of a node's 64-bit mass word (bit 30 of its high word): set by
// `grid_velocity` on a node it wrote a field for (a node that held mass),
// cleared once it has written that node's field back to zero. A mass sum
// never reaches it (at most 2¹² · 2¹⁵ per vertex and node). So a node that
// neither holds mass nor carries the flag has a zero field already, and
// `grid_velocity` leaves it alone: the CPU's clear likewise zeroes the
// fields of the nodes the last splat touched, and only those
// (src/cpu/substep.rs `interact`, before `grid_splat`).
const NODE_FIELDED_HIGH: u32 = 0x40000000u;

// `quantise_velocity`: ⌊v·2^16⌋ clamped to ±2^30 before the conversion.
fn quantise_velocity(v: vec3<f32>) -> vec3<i32> {
    return vec3<i32>(clamp(floor(v * VELOCITY_SCALE), vec3<f32>(-VELOCITY_LIMIT), vec3<f32>(VELOCITY_LIMIT)));
}

// a·b as a 64-bit (low, high) pair.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// −d in 64-bit two's complement.
fn negate_wide(d: vec2<u32>) -> vec2<u32> {
    let lo = ~d.x + 1u;
    return vec2<u32>(lo, ~d.y + select(0u, 1u, lo == 0u));
}

// Node index (within the whole grid buffer) of node n of grid g.
fn node_index(g: GridGroup, n: vec3<i32>) -> u32 {
    let u = vec3<u32>(n);
    return g.dims.w + u.x + g.dims.x * (u.y + g.dims.y * u.z);
}

