#import common
#import grid_fixed
#import grid_u32
#import project
#import step_uniform

// Hair–hair interaction through a grid (src/cpu/grid.rs, the CPU reference
// of every function here; docs/INTERACTION.md for the design). Per
// substep, after `integrate`: grid_clear (one invocation), grid_splat (per
// vertex), grid_velocity (per node, leaving the nodes' sums zero), grid_blend
// (per vertex). The walked substep (shaders/substep.wgsl) splats at the end
// of `substep_start_rod`, recording the box of cells it reached, then runs
// grid_extent (one invocation, in grid_clear's place) and grid_velocity_box
// (per node of the region grid_extent chose), and blends at the start of
// `substep_finish_rod`.
//
// Fixed point, as on the CPU: grid position q = ⌊(x − origin)·scale⌋ in
// f32, integer trilinear weights summing to 2^15, quantised masses and
// velocities (shaders/grid_fixed.wgsl), and 64-bit node accumulators added
// with atomics (shaders/grid_u32.wgsl, or shaders/grid_i64.wgsl where the
// device has 64-bit atomics). Integer sums do not depend on the order
// threads arrive in, so the grid is the CPU's bit for bit.

// Index in `grid_groups` of a group's grid at this substep.
fn grid_group_slot(group: u32) -> u32 {
    return step_slot_start() * params.group_count + group;
}

fn grid_group_now(group: u32) -> GridGroup {
    return grid_groups[grid_group_slot(group)];
}

// Kernel `grid_clear` (`GridNodes::clear`): one invocation. The nodes' sums
// are zero already: a new grid's are, and `grid_velocity` zeroes each node
// it read mass from, the only ones a splat touched (as the CPU's clear
// visits only those), and sees to their fields (`NODE_FIELDED`). What is left is the substep's fastest velocity, which every
// `grid_velocity` invocation reads, so it is reset here, before the splat
// that raises it.
@compute @workgroup_size(1)
fn grid_clear() {
    grid_counter_zero(GRID_VMAX);
}

// Kernel `grid_splat` (`grid_splat`): one invocation per vertex. The fused
// halves of a substep run the same function on their own vertices
// (`substep_start_rod`, shaders/substep.wgsl).
@compute @workgroup_size(64)
fn grid_splat(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v < params.vertex_count) {
        grid_splat_vertex(v);
    }
}

// Vertex v's mass and momentum added to the 8 nodes of its cell.
fn grid_splat_vertex(v: u32) {
    let gv = grid_vertex[vertex_slot(v)];
    if (gv.group != NONE && gv.mass_q != 0u) {
        grid_splat_at(grid_group_now(gv.group), rods[gv.rod].origin.xyz, v, gv.mass_q);
    }
}

// `grid_splat_vertex` for each vertex of rod r, its group's grid and the
// rod's origin read once (a rod's vertices share its group). With 64-bit
// atomics (shaders/grid_i64.wgsl) the sums of consecutive vertices for the
// nodes they share are added in registers first (`SplatWindow`), and each
// node reached once per run of vertices around it: integer sums, so the
// grid is the same bit for bit, with fewer atomics (on a CPU adapter each
// is a locked instruction per lane); with the 32-bit pairs each vertex is
// added at once.
fn grid_splat_rod(r: u32) {
    let o = rods[r].vertex_offset;
    let group = grid_vertex[vertex_slot(o)].group;
    if (group == NONE) {
        return;
    }
    let g = grid_group_now(group);
    let origin = rods[r].origin.xyz;
    var window = splat_window();
    // The cells the walk splats into, lowest and highest along each axis.
    var low = vec3<i32>(2147483647);
    var high = vec3<i32>(-1);
    // The rod's vertices outside the grid and its fastest |v_q|, counted
    // here and added to the counters once (each counter access is a loop
    // over the lanes; the sum and the maximum are the same in any order).
    var outside = 0u;
    var vmax = 0u;
    let end = o + rods[r].vertex_count;
    for (var v = o; v < end; v++) {
        let mass_q = grid_vertex[vertex_slot(v)].mass_q;
        if (mass_q != 0u) {
            let q = grid_position(g, origin + position_f32(pos_get(v)));
            if (q.w == 0) {
                outside++;
            } else {
                let cell = q.xyz >> vec3<u32>(FRAC_BITS);
                low = min(low, cell);
                high = max(high, cell);
                let vq = quantise_velocity(vel_get(v).xyz);
                vmax = max(vmax, quantised_speed(vq));
                splat_window_add(&window, g, q.xyz, mass_q, vq);
            }
        }
    }
    splat_window_flush(&window, g);
    if (outside != 0u) {
        grid_counter_add(GRID_OUTSIDE, outside);
    }
    raise_vmax(vmax);
    if (high.x >= 0) {
        grid_box_raise(group, g, vec3<u32>(low), vec3<u32>(high));
    }
}

// The box of cells low..high (inclusive) added to group `group`'s box of
// the substep in `grid_dispatch`, kept as maxima so that zero means none:
// dims − low (at least 2: a cell's upper node is inside the grid) and
// high + 2.
fn grid_box_raise(group: u32, g: GridGroup, low: vec3<u32>, high: vec3<u32>) {
    let b = GRID_BOX + 6u * group;
    for (var a = 0u; a < 3u; a++) {
        box_word_raise(b + a, g.dims[a] - low[a]);
        box_word_raise(b + 3u + a, high[a] + 2u);
    }
}

// Word i of `grid_dispatch` raised to x. Every rod (or workgroup) raises
// the same 6 words of its group, most often to no avail once the box has
// grown: one that cannot raise a word leaves it alone (a load, not an
// atomic that waits its turn at the word; the same maximum).
fn box_word_raise(i: u32, x: u32) {
    if (x > atomicLoad(&grid_dispatch[i])) {
        atomicMax(&grid_dispatch[i], x);
    }
}

// Vertex v (quantised mass mass_q) splatted into grid g; origin: its rod's.
fn grid_splat_at(g: GridGroup, origin: vec3<f32>, v: u32, mass_q: u32) {
    let q = grid_position(g, origin + position_f32(pos_get(v)));
    if (q.w == 0) {
        grid_counter_add(GRID_OUTSIDE, 1u);
        return;
    }
    // A window of one vertex: the same node sums as `grid_splat_rod`'s.
    var window = splat_window();
    splat_window_add(&window, g, q.xyz, mass_q, splat_velocity(v));
    splat_window_flush(&window, g);
}

// Vertex v's quantised velocity, the substep's fastest |v_q| raised to it.
fn splat_velocity(v: u32) -> vec3<i32> {
    let vq = quantise_velocity(vel_get(v).xyz);
    raise_vmax(quantised_speed(vq));
    return vq;
}

// The largest |component| of a quantised velocity.
fn quantised_speed(vq: vec3<i32>) -> u32 {
    let speed = vec3<u32>(abs(vq));
    return max(speed.x, max(speed.y, speed.z));
}

// The substep's fastest |v_q| raised to `speed`. Every vertex would race
// for this one word: one that cannot raise it leaves it alone (the same
// maximum).
fn raise_vmax(speed: u32) {
    if (speed > grid_counter(GRID_VMAX)) {
        grid_counter_max(GRID_VMAX, speed);
    }
}

// `could_overflow`: (⌊mass/2^32⌋ + 1)·vmax > 2^31, or a clamped velocity.
fn could_overflow(mass_hi: u32, vmax: u32) -> bool {
    if (vmax == 0u) {
        return false;
    }
    return vmax >= 0x40000000u || mass_hi == 0xffffffffu || mass_hi + 1u > 0x80000000u / vmax;
}

// Kernel `grid_velocity`: one invocation per node; a node with mass gets
// its velocity (m/s) and pressure max(0, ρ/ρ₀ − 1) in `grid_fields`, its
// accumulators zeroed for the next splat once read (the pass over the nodes
// that `grid_clear` would otherwise make) and `NODE_FIELDED`; a node
// without mass that carries the flag gets a zero field; no other node is
// written (its field is zero already). A node that could overflow records
// itself (largest node + 1) for the host to stop the run.
@compute @workgroup_size(64)
fn grid_velocity(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let k = invocation(gid, groups);
    if (k >= params.node_count) {
        return;
    }
    // The node's group: the last whose first node is at or before k.
    // Only the fields used are read (on a software adapter, lane by lane).
    var g = grid_group_slot(0u);
    for (var i = 1u; i < params.group_count; i++) {
        if (grid_groups[grid_group_slot(i)].dims.w <= k) {
            g = grid_group_slot(i);
        }
    }
    grid_velocity_node(k, grid_groups[g].pressure_scale, grid_counter(GRID_VMAX));
}

// `grid_velocity` of node k, in a group of pressure scale `pressure_scale`,
// the substep's fastest |v_q| being vmax.
fn grid_velocity_node(k: u32, pressure_scale: f32, vmax: u32) {
    // A node with mass gets its field and `NODE_FIELDED`; one without mass
    // that carries the flag gets a zero field and loses the flag; any other
    // node's field is zero already and it is left alone (most nodes: on a
    // software adapter a store no lane makes costs next to nothing).
    let mass = grid_node_mass(k);
    let held = mass.value != 0.0;
    var field = vec4<f32>(0.0);
    if (held) {
        if (could_overflow(mass.high, vmax)) {
            grid_counter_max(GRID_OVERFLOW, k + 1u);
        }
        let p = grid_node_take_momentum(k);
        field = vec4<f32>(p / (mass.value * VELOCITY_SCALE), max(0.0, mass.value * pressure_scale - 1.0));
    }
    // One store of the field and one of the mass word for both kinds of
    // node (on a CPU adapter each store site is a loop over the lanes).
    if (held || mass.fielded) {
        field_store(k, field);
        grid_node_set_flag(k, held);
    }
}

// Kernel `grid_extent` (one invocation), in the walked substep between
// `substep_start_rod` and `grid_velocity_box`, in place of `grid_clear`:
// the GPU's counterpart of the CPU's list of touched nodes
// (`GridNodes::touched`), as one box per group. Per group, the nodes the
// substep's splat reached (the box `grid_splat_rod` raised, taken and
// zeroed) joined with those the last one reached (which may carry
// `NODE_FIELDED`, so need their fields zeroed): `grid_velocity_box` visits
// this region, and no node outside it holds mass or a field. Also moves the
// substep's fastest |v_q| into `grid_region` and resets it for the next
// splat (what `grid_clear` does), and writes the dispatch of
// `grid_velocity_box`.
@compute @workgroup_size(1)
fn grid_extent() {
    grid_region[0] = grid_counter(GRID_VMAX);
    grid_counter_zero(GRID_VMAX);
    var planes = 0u;
    var widest = vec2<u32>(0u);
    for (var group = 0u; group < params.group_count; group++) {
        let g = grid_group_now(group);
        let b = GRID_BOX + 6u * group;
        let e = REGION_GROUPS + REGION_WORDS * group;
        // This splat's nodes: its cells and their upper nodes.
        var low = vec3<u32>(0u);
        var high = vec3<u32>(0u);
        var reached = true;
        for (var a = 0u; a < 3u; a++) {
            let l = atomicExchange(&grid_dispatch[b + a], 0u);
            let h = atomicExchange(&grid_dispatch[b + 3u + a], 0u);
            reached = reached && h != 0u;
            low[a] = g.dims[a] - l;
            high[a] = h - 1u;
        }
        if (!reached) {
            low = vec3<u32>(1u);
            high = vec3<u32>(0u);
        }
        // The last splat's, kept for the next substep as this one's.
        let last_low = vec3<u32>(grid_region[e + 8u], grid_region[e + 9u], grid_region[e + 10u]);
        let last_high = vec3<u32>(grid_region[e + 11u], grid_region[e + 12u], grid_region[e + 13u]);
        for (var a = 0u; a < 3u; a++) {
            grid_region[e + 8u + a] = low[a];
            grid_region[e + 11u + a] = high[a];
        }
        if (all(last_low <= last_high)) {
            if (reached) {
                low = min(low, last_low);
                high = max(high, last_high);
            } else {
                low = last_low;
                high = last_high;
            }
        }
        var size = vec3<u32>(0u);
        if (all(low <= high)) {
            size = high + vec3<u32>(1u) - low;
        }
        grid_region[e] = g.dims.w + low.x + g.dims.x * (low.y + g.dims.y * low.z);
        grid_region[e + 1u] = size.x;
        grid_region[e + 2u] = size.y;
        grid_region[e + 3u] = g.dims.x;
        grid_region[e + 4u] = g.dims.x * g.dims.y;
        grid_region[e + 5u] = planes;
        grid_region[e + 6u] = bitcast<u32>(g.pressure_scale);
        widest = max(widest, size.xy);
        planes += size.z;
    }
    // Workgroups of 8 × 8 nodes (`REGION_WORKGROUP`) over the widest region's x and y, one z
    // plane of a region each along z, the groups' planes one after another.
    atomicStore(&grid_dispatch[0], (widest.x + REGION_WORKGROUP - 1u) / REGION_WORKGROUP);
    atomicStore(&grid_dispatch[1], (widest.y + REGION_WORKGROUP - 1u) / REGION_WORKGROUP);
    atomicStore(&grid_dispatch[2], planes);
    grid_region[1] = planes;
}

// Kernel `grid_velocity_box`: `grid_velocity` over the region `grid_extent`
// chose, dispatched indirectly: invocation (x, y, z) is the node at x, y
// of z plane of its group's region. The same function per node; the nodes
// it skips hold neither mass nor a field, so `grid_velocity` would leave
// them alone. Workgroups of 8 × 8 nodes, so that a CPU adapter's 8 lanes
// take 8 neighbours along x (a region's rows are as long as the hair is
// wide), and no index is divided.
@compute @workgroup_size(REGION_WORKGROUP, REGION_WORKGROUP, 1)
fn grid_velocity_box(@builtin(global_invocation_id) gid: vec3<u32>) {
    // The invocation's group: the last whose first plane is at or before
    // gid.z; the first group's words at fixed offsets (on a CPU adapter
    // read once, not lane by lane), another's only where there are more.
    var region = array<u32, 7>(grid_region[REGION_GROUPS], grid_region[REGION_GROUPS + 1u], grid_region[REGION_GROUPS + 2u], grid_region[REGION_GROUPS + 3u], grid_region[REGION_GROUPS + 4u], grid_region[REGION_GROUPS + 5u], grid_region[REGION_GROUPS + 6u]);
    for (var group = 1u; group < params.group_count; group++) {
        let f = REGION_GROUPS + REGION_WORDS * group;
        if (grid_region[f + 5u] <= gid.z) {
            for (var w = 0u; w < 7u; w++) {
                region[w] = grid_region[f + w];
            }
        }
    }
    // (No plane beyond the regions': the dispatch has exactly their planes,
    // and this keeps a wrong one from writing another group's nodes.)
    if (gid.x >= region[1] || gid.y >= region[2] || gid.z >= grid_region[1]) {
        return;
    }
    let k = region[0] + gid.x + region[3] * gid.y + region[4] * (gid.z - region[5]);
    grid_velocity_node(k, bitcast<f32>(region[6]), grid_region[0]);
}

// Kernel `grid_blend`: one invocation per vertex; friction toward the grid
// velocity and the push down the pressure gradient, as a position change
// that `project_velocity` turns into velocity. The fused halves of a
// substep run the same function on their own vertices (`substep_finish_rod`,
// shaders/substep.wgsl).
@compute @workgroup_size(64)
fn grid_blend(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v < params.vertex_count) {
        grid_blend_vertex(v);
    }
}

// Vertex v moved toward its grid's velocity and down its pressure gradient.
fn grid_blend_vertex(v: u32) {
    let gv = grid_vertex[vertex_slot(v)];
    // A vertex of inverse mass 0 (`GridVertex.friction` −1) is left alone.
    if (gv.group != NONE && gv.friction >= 0.0) {
        grid_blend_at(grid_group_now(gv.group), rods[gv.rod].origin.xyz, v, gv.friction);
    }
}

// `grid_blend_vertex` for each vertex of rod r, its group's grid and the
// rod's origin read once (a rod's vertices share its group), and the 8
// fields of a cell read once for the rod's consecutive vertices in it
// (`BlendFields`): the fields are not written during the blend, so a
// vertex that stays in its predecessor's cell blends with the same values;
// on a CPU adapter each field load is a loop over the lanes, whose cache
// misses a lane that keeps its cell does not take. Returns what
// `unresolved_strain` (4 ulps) says of the rod's positions after the
// blend, taken as the walk finishes each vertex (`StrainWalk`) for the
// projection that follows (`newton_projection_from`), or `STRAIN_UNMEASURED` for a
// rod in no interaction group, which the blend leaves alone (a rod outside
// the grid is measured all the same). A vertex of inverse mass
// 0 is the one with friction −1 (src/gpu/packing.rs), so the edge test
// `w > 0` needs no read of `rest`.
fn grid_blend_rod(r: u32) -> f32 {
    let o = rods[r].vertex_offset;
    let group = grid_vertex[vertex_slot(o)].group;
    if (group == NONE) {
        return STRAIN_UNMEASURED;
    }
    let g = grid_group_now(group);
    let origin = rods[r].origin.xyz;
    var fields = BlendFields(vec3<i32>(-1), array<vec4<f32>, 8>());
    var strain = strain_walk();
    let n = rods[r].vertex_count;
    for (var i = 0u; i < n; i++) {
        let v = o + i;
        let friction = grid_vertex[vertex_slot(v)].friction;
        var p = pos_get(v);
        if (friction >= 0.0) {
            let q = grid_position(g, origin + position_f32(p));
            if (q.w != 0) {
                let cell = q.xyz >> vec3<u32>(FRAC_BITS);
                if (any(cell != fields.cell)) {
                    fields = blend_fields(g, q.xyz);
                }
                p = blend_with(g, q.xyz, fields, v, p, friction);
            }
        }
        strain_walk_next(&strain, v, p, select(0.0, 1.0, friction >= 0.0));
    }
    return strain.m;
}

// The fields of the 8 nodes of a cell (bit a of the index: the upper node
// along axis a), and the cell.
struct BlendFields {
    cell: vec3<i32>,
    f: array<vec4<f32>, 8>,
}

fn blend_fields(g: GridGroup, q: vec3<i32>) -> BlendFields {
    var b = BlendFields(q >> vec3<u32>(FRAC_BITS), array<vec4<f32>, 8>());
    for (var c = 0u; c < 8u; c++) {
        b.f[c] = field_load(corner(g, q, c).x);
    }
    return b;
}

// Vertex v (velocity blend `friction`) blended with grid g; origin: its rod's.
fn grid_blend_at(g: GridGroup, origin: vec3<f32>, v: u32, friction: f32) {
    // Read once: a read-write buffer's loads are not merged by the compiler.
    let p = pos_get(v);
    let q = grid_position(g, origin + position_f32(p));
    if (q.w == 0) {
        return;
    }
    _ = blend_with(g, q.xyz, blend_fields(g, q.xyz), v, p, friction);
}

// Vertex v at p, grid position q (inside grid g), blended with its cell's
// fields.
// Returns the position stored.
fn blend_with(g: GridGroup, q: vec3<i32>, fields: BlendFields, v: u32, p: Position, friction: f32) -> Position {
    let frac = vec3<f32>(q & vec3<i32>(FRAC_MASK));
    var grid_v = vec3<f32>(0.0);
    var grad = vec3<f32>(0.0);
    for (var c = 0u; c < 8u; c++) {
        let f = fields.f[c];
        var factor = vec3<f32>(32.0) - frac;
        var sign = vec3<f32>(-1.0);
        for (var a = 0u; a < 3u; a++) {
            if (((c >> a) & 1u) == 1u) {
                factor[a] = frac[a];
                sign[a] = 1.0;
            }
        }
        grid_v += f.xyz * (factor.x * factor.y * factor.z);
        grad += sign * vec3<f32>(factor.y * factor.z, factor.z * factor.x, factor.x * factor.y) * f.w;
    }
    grid_v /= ONE_F;
    grad /= 1024.0;
    let own = vec3<f32>(quantise_velocity(vel_get(v).xyz)) / VELOCITY_SCALE;
    var push = -grad * g.volume_step;
    let len = length(push);
    if (len > g.max_push) {
        push *= g.max_push / len;
    }
    let blended = moved(p, (grid_v - own) * (friction * params.h) + push);
    pos_set(v, blended);
    return blended;
}
