// Positions resident in workgroup memory: replaces the block of
// shaders/common.wgsl between its BEGIN and END markers in the module the
// packed fused kernels (`substep_start`, `substep_finish`, `substep`) are
// built from (src/gpu/layout.rs `shader_variant`). The kernel loads its
// pack's positions once, coalesced, every stage of the dispatch reads and
// writes them here (the projection's Newton iterations, contact, frames and
// twist read each edge many times), and the kernel stores them once at the
// end. The arithmetic is the buffer variant's, operation for operation: only
// where a position is kept changes (a shader compiler may still contract or
// order the inlined code differently, a few ulps: tests/gpu_fused.rs).
//
// Six scalar arrays rather than a `Position` per row: 24 bytes a row, not
// 32 (the w components are unused), 6 KiB for the default pack's 256
// rows, which with the stages' own arrays fits lavapipe's 32 KiB
// (`fused_workgroup_bytes` in src/gpu/layout.rs); row i is one word of each, so the rows of a
// workgroup's invocations fall in different banks.
//
// A rod longer than a pack is a pack of its own: its positions stay in the
// buffer (`resident_first` stays NONE), as in the other variant.
var<workgroup> resident_cell_x: array<i32, PACK_ROWS>;
var<workgroup> resident_cell_y: array<i32, PACK_ROWS>;
var<workgroup> resident_cell_z: array<i32, PACK_ROWS>;
var<workgroup> resident_rem_x: array<f32, PACK_ROWS>;
var<workgroup> resident_rem_y: array<f32, PACK_ROWS>;
var<workgroup> resident_rem_z: array<f32, PACK_ROWS>;

// The pack's first vertex while its positions are resident, else NONE. The
// same in every invocation of a workgroup.
var<private> resident_first: u32 = NONE;

// Row i of the resident arrays as a `Position`, and back.
fn resident_row(i: u32) -> Position {
    return Position(
        vec4<i32>(resident_cell_x[i], resident_cell_y[i], resident_cell_z[i], 0),
        vec4<f32>(resident_rem_x[i], resident_rem_y[i], resident_rem_z[i], 0.0),
    );
}

fn resident_put(i: u32, p: Position) {
    resident_cell_x[i] = p.cell.x;
    resident_cell_y[i] = p.cell.y;
    resident_cell_z[i] = p.cell.z;
    resident_rem_x[i] = p.rem.x;
    resident_rem_y[i] = p.rem.y;
    resident_rem_z[i] = p.rem.z;
}

fn pos_get(v: u32) -> Position {
    if (resident_first == NONE) {
        return pos_load(v);
    }
    return resident_row(v - resident_first);
}

fn pos_set(v: u32, p: Position) {
    if (resident_first == NONE) {
        pos_store(v, p);
        return;
    }
    resident_put(v - resident_first, p);
}

// Pack w's positions into workgroup memory (the caller's barrier follows,
// before any stage reads them).
fn resident_load(w: u32, lid: u32) {
    let range = pack_vertex_range(w);
    if (range.y > PACK_ROWS) {
        return;
    }
    for (var i = lid; i < range.y; i += PACK_WORKGROUP) {
        resident_put(i, pos_load(range.x + i));
    }
    resident_first = range.x;
}

// Pack w's positions back to the buffer, after the caller's barrier.
fn resident_store(w: u32, lid: u32) {
    if (resident_first == NONE) {
        return;
    }
    let range = pack_vertex_range(w);
    for (var i = lid; i < range.y; i += PACK_WORKGROUP) {
        pos_store(range.x + i, resident_row(i));
    }
    resident_first = NONE;
}
