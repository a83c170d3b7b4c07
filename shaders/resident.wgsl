// A pack's state resident in workgroup memory: replaces the block of
// shaders/common.wgsl between its BEGIN and END markers in the module the
// packed fused kernels (`substep_start`, `substep_finish`, `substep`,
// `frame_pack`) are built from (src/gpu/layout.rs `shader_variant`). The
// kernel loads its pack's positions once, coalesced, every stage of the
// dispatch reads and writes them here (the projection's Newton iterations,
// contact, frames and twist read each edge many times), and the kernel
// stores them once at the end. Where the pack shape asks for it
// (`RESIDENT_STATE`: src/gpu/pack.rs `PackShape::state_resident`, up to
// 64 rows, `--gpu-pack-rows 32:state`; not the default, slower on an H200
// and lavapipe), the rest of the state the stages read and
// write goes the same way: velocities, unconstrained positions, contacts,
// the scratch members and the edge frames, so that between the load and the
// store the stages touch device memory only for what they only read (the
// rest state, rods, clamps, colliders, the anchors' poses) and SHAKE's
// start positions. The arithmetic is the buffer variant's, operation for
// operation: only where a value is kept changes (a shader compiler may
// still contract or order the inlined code differently, a few ulps:
// tests/gpu_fused.rs).
//
// Positions as six scalar arrays rather than a `Position` per row: 24 bytes
// a row, not 32 (the w components are unused), 6 KiB for the default
// pack's 256 rows, which with the stages' own arrays fits lavapipe's 32 KiB
// (`fused_workgroup_bytes` in src/gpu/layout.rs); row i is one word of
// each, so the rows of a workgroup's invocations fall in different banks.
// The rest of the state as a vec4 a row per member, 176 bytes a row (an
// invocation's 16-byte row of each array, whole vectors as in the buffers,
// their unused w components kept so that the store writes back what was
// loaded).
//
// A rod longer than a pack is a pack of its own: its state stays in the
// buffers (`resident_first` stays NONE), as in the other variant.
var<workgroup> resident_cell_x: array<i32, PACK_ROWS>;
var<workgroup> resident_cell_y: array<i32, PACK_ROWS>;
var<workgroup> resident_cell_z: array<i32, PACK_ROWS>;
var<workgroup> resident_rem_x: array<f32, PACK_ROWS>;
var<workgroup> resident_rem_y: array<f32, PACK_ROWS>;
var<workgroup> resident_rem_z: array<f32, PACK_ROWS>;

const RESIDENT_STATE: bool = RESIDENT_STATE_ROWS == PACK_ROWS;
var<workgroup> resident_vel: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_unc_cell: array<vec4<i32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_unc_rem: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_contact_normal_depth: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_contact_surface_velocity: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_kb: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_g: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_s: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_force: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_tangent: array<vec4<f32>, RESIDENT_STATE_ROWS>;
var<workgroup> resident_ref_u: array<vec4<f32>, RESIDENT_STATE_ROWS>;

// The pack's first vertex while its positions are resident, else NONE. The
// same in every invocation of a workgroup.
var<private> resident_first: u32 = NONE;

// Whether `resident_load` was asked for the rest of the state too (the same
// in every invocation of a workgroup).
var<private> resident_state_on: bool = false;

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

// Whether the pack's state other than its positions is in workgroup
// memory (the same in every invocation of a workgroup).
fn state_resident() -> bool {
    return RESIDENT_STATE && resident_state_on && resident_first != NONE;
}

fn vel_get(v: u32) -> vec4<f32> {
    if (!state_resident()) {
        return vel_load(v);
    }
    return resident_vel[v - resident_first];
}

fn vel_set(v: u32, u: vec4<f32>) {
    if (!state_resident()) {
        vel_store(v, u);
        return;
    }
    resident_vel[v - resident_first] = u;
}

fn pos_unc_get(v: u32) -> Position {
    if (!state_resident()) {
        return pos_unc_load(v);
    }
    let i = v - resident_first;
    return Position(resident_unc_cell[i], resident_unc_rem[i]);
}

fn pos_unc_set(v: u32, p: Position) {
    if (!state_resident()) {
        pos_unc_store(v, p);
        return;
    }
    let i = v - resident_first;
    resident_unc_cell[i] = p.cell;
    resident_unc_rem[i] = p.rem;
}

fn contact_get(v: u32) -> Contact {
    if (!state_resident()) {
        return contact_load(v);
    }
    let i = v - resident_first;
    return Contact(resident_contact_normal_depth[i], resident_contact_surface_velocity[i]);
}

fn contact_set(v: u32, c: Contact) {
    if (!state_resident()) {
        contact_store(v, c);
        return;
    }
    let i = v - resident_first;
    resident_contact_normal_depth[i] = c.normal_depth;
    resident_contact_surface_velocity[i] = c.surface_velocity;
}

fn contact_normal_depth(v: u32) -> vec4<f32> {
    if (!state_resident()) {
        return contact_normal_depth_load(v);
    }
    return resident_contact_normal_depth[v - resident_first];
}

fn scratch_kb(v: u32) -> vec4<f32> {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].kb;
    }
    return resident_kb[v - resident_first];
}

fn scratch_g(v: u32) -> vec4<f32> {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].g;
    }
    return resident_g[v - resident_first];
}

fn scratch_g_x(v: u32) -> f32 {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].g.x;
    }
    return resident_g[v - resident_first].x;
}

fn scratch_g_y(v: u32) -> f32 {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].g.y;
    }
    return resident_g[v - resident_first].y;
}

fn scratch_g_z(v: u32) -> f32 {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].g.z;
    }
    return resident_g[v - resident_first].z;
}

fn scratch_g_w(v: u32) -> f32 {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].g.w;
    }
    return resident_g[v - resident_first].w;
}

fn scratch_s(v: u32) -> vec4<f32> {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].s;
    }
    return resident_s[v - resident_first];
}

fn scratch_s_x(v: u32) -> f32 {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].s.x;
    }
    return resident_s[v - resident_first].x;
}

fn scratch_s_z(v: u32) -> f32 {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].s.z;
    }
    return resident_s[v - resident_first].z;
}

fn scratch_force(v: u32) -> vec4<f32> {
    if (!state_resident()) {
        return scratch[vertex_slot(v)].force;
    }
    return resident_force[v - resident_first];
}

fn scratch_set_kb(v: u32, x: vec4<f32>) {
    if (!state_resident()) {
        scratch[vertex_slot(v)].kb = x;
        return;
    }
    resident_kb[v - resident_first] = x;
}

fn scratch_set_g(v: u32, x: vec4<f32>) {
    if (!state_resident()) {
        scratch[vertex_slot(v)].g = x;
        return;
    }
    resident_g[v - resident_first] = x;
}

fn scratch_set_s(v: u32, x: vec4<f32>) {
    if (!state_resident()) {
        scratch[vertex_slot(v)].s = x;
        return;
    }
    resident_s[v - resident_first] = x;
}

fn scratch_set_s_x(v: u32, x: f32) {
    if (!state_resident()) {
        scratch[vertex_slot(v)].s.x = x;
        return;
    }
    resident_s[v - resident_first].x = x;
}

fn scratch_set_s_z(v: u32, x: f32) {
    if (!state_resident()) {
        scratch[vertex_slot(v)].s.z = x;
        return;
    }
    resident_s[v - resident_first].z = x;
}

fn scratch_set_force(v: u32, x: vec4<f32>) {
    if (!state_resident()) {
        scratch[vertex_slot(v)].force = x;
        return;
    }
    resident_force[v - resident_first] = x;
}

fn frame_get(e: u32) -> EdgeFrame {
    if (!state_resident()) {
        return frame[vertex_slot(e)];
    }
    let i = e - resident_first;
    return EdgeFrame(resident_tangent[i], resident_ref_u[i]);
}

fn frame_tangent(e: u32) -> vec4<f32> {
    if (!state_resident()) {
        return frame[vertex_slot(e)].tangent;
    }
    return resident_tangent[e - resident_first];
}

fn frame_ref_u(e: u32) -> vec4<f32> {
    if (!state_resident()) {
        return frame[vertex_slot(e)].ref_u;
    }
    return resident_ref_u[e - resident_first];
}

fn frame_theta(e: u32) -> f32 {
    if (!state_resident()) {
        return frame[vertex_slot(e)].tangent.w;
    }
    return resident_tangent[e - resident_first].w;
}

fn frame_set(e: u32, f: EdgeFrame) {
    if (!state_resident()) {
        frame[vertex_slot(e)] = f;
        return;
    }
    let i = e - resident_first;
    resident_tangent[i] = f.tangent;
    resident_ref_u[i] = f.ref_u;
}

fn frame_set_tangent(e: u32, t: vec4<f32>) {
    if (!state_resident()) {
        frame[vertex_slot(e)].tangent = t;
        return;
    }
    resident_tangent[e - resident_first] = t;
}

fn frame_set_ref_u(e: u32, u: vec4<f32>) {
    if (!state_resident()) {
        frame[vertex_slot(e)].ref_u = u;
        return;
    }
    resident_ref_u[e - resident_first] = u;
}

fn frame_set_theta(e: u32, theta: f32) {
    if (!state_resident()) {
        frame[vertex_slot(e)].tangent.w = theta;
        return;
    }
    resident_tangent[e - resident_first].w = theta;
}

// Pack w's state into workgroup memory (the caller's barrier follows,
// before any stage reads it): its positions, and where `state` asks and the
// pack shape asks for it (`RESIDENT_STATE`) the rest. `substep_start` asks for
// the positions only: its stages read and write the rest of what they
// touch once each (velocities, frames, the force, the unconstrained
// positions), and contacts and the other scratch members not at all, so a
// load and a store of the whole state would only add to its traffic.
fn resident_load(w: u32, lid: u32, state: bool) {
    let range = pack_vertex_range(w);
    if (range.y > PACK_ROWS) {
        return;
    }
    for (var i = lid; i < range.y; i += PACK_WORKGROUP) {
        let v = range.x + i;
        resident_put(i, pos_load(v));
        if (RESIDENT_STATE && state) {
            resident_vel[i] = vel_load(v);
            let unc = pos_unc_load(v);
            resident_unc_cell[i] = unc.cell;
            resident_unc_rem[i] = unc.rem;
            let c = contact_load(v);
            resident_contact_normal_depth[i] = c.normal_depth;
            resident_contact_surface_velocity[i] = c.surface_velocity;
            let s = scratch[vertex_slot(v)];
            resident_kb[i] = s.kb;
            resident_g[i] = s.g;
            resident_s[i] = s.s;
            resident_force[i] = s.force;
            let f = frame[vertex_slot(v)];
            resident_tangent[i] = f.tangent;
            resident_ref_u[i] = f.ref_u;
        }
    }
    resident_first = range.x;
    resident_state_on = state;
}

// Pack w's state back to the buffers, after the caller's barrier.
fn resident_store(w: u32, lid: u32) {
    if (resident_first == NONE) {
        return;
    }
    let range = pack_vertex_range(w);
    for (var i = lid; i < range.y; i += PACK_WORKGROUP) {
        let v = range.x + i;
        pos_store(v, resident_row(i));
        if (RESIDENT_STATE && resident_state_on) {
            vel_store(v, resident_vel[i]);
            pos_unc_store(v, Position(resident_unc_cell[i], resident_unc_rem[i]));
            contact_store(v, Contact(resident_contact_normal_depth[i], resident_contact_surface_velocity[i]));
            scratch[vertex_slot(v)] = Scratch(resident_kb[i], resident_g[i], resident_s[i], resident_force[i]);
            frame[vertex_slot(v)] = EdgeFrame(resident_tangent[i], resident_ref_u[i]);
        }
    }
    resident_first = NONE;
    resident_state_on = false;
}
