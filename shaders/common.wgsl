#import real_f32

// Shared by every kernel: the buffer layout (mirrored field by field by the
// #[repr(C)] structs of src/gpu/layout.rs and checked against them in
// tests/gpu_layout.rs) and the DER helpers of src/cpu/, in f32.
//
// Every file under shaders/ names the files it uses in `#import` lines, and
// src/gpu/compose.rs writes the module the kernels are entry points of from
// them. Per-edge data sits at the index of the edge's first vertex: edge j
// of a rod starting at vertex o is element o + j, and the rod's last vertex
// slot holds no edge.
//
// Positions are stored relative to their rod's origin (`Rod.origin`, its
// first vertex at the start), absolute x = origin + pos, and each as a
// `Position`: a whole number of POSITION_QUANTUM (i32) plus an f32
// remainder, so a vertex is resolved to ε × the quantum (1e-13 m) wherever
// it is within ±2048 m of its origin, and increments far below f32's
// ε|x| accumulate instead of being rounded away (see `Position`).

const NONE: u32 = 0xffffffffu;
const WORKGROUP: u32 = 64u;
const F32_EPSILON: f32 = 1.1920929e-7; // 2⁻²³

// Where a vertex's data sits in the per-vertex buffers (`rest`, `pos`,
// `vel`, `pos_unc`, `pos_start`, `src`, `dst`, `contacts`, `frame`,
// `scratch`, `grid_vertex`; not `world_pos`, which is in rod order for
// renderers). With INTERLEAVE = 0 (rod sets whose rods differ in length,
// or with fewer than 8 rods of one length) vertex v is element
// v: each rod's vertices one after another. With INTERLEAVE = n (the
// default on every device for rods of n vertices each, src/gpu/packing.rs
// `VertexLayout`) the rods are interleaved in blocks of 8: local vertex i
// of rod r is element 8n⌊r/8⌋ + 8i + (r mod 8), so the rods a CPU
// adapter's SIMD lanes or a GPU's warp walk together read neighbouring
// elements rather than streams n elements apart (the last block, of
// fewer than 8 rods, interleaves those it has). Every kernel indexes these
// buffers through `vertex_slot` alone, so nothing else in them knows the
// layout; the host packs and unpacks by the same rule
// (`VertexLayout::slot`).
override INTERLEAVE: u32 = 0u;

// v < the vertex count: past it an index would land on some other
// vertex's element rather than past the buffer's end.
fn vertex_slot(v: u32) -> u32 {
    if (INTERLEAVE == 0u) {
        return v;
    }
    // max: the division is compiled (and its constant folded) where
    // INTERLEAVE is 0 too, where it must not divide by zero.
    let n = max(INTERLEAVE, 1u);
    let r = v / n;
    let i = v - r * n;
    let block = r & ~7u;
    let width = min(8u, params.rod_count - block);
    return block * n + i * width + (r - block);
}

// Values of one substep, at a dynamic offset of a uniform buffer.
struct Step {
    gravity: vec4<f32>,     // m/s², w unused
    wind: vec4<f32>,        // uniform wind U (m/s), w = gust amplitude (m/s)
    gust: vec4<f32>,        // gust direction d̂, w = wavenumber 2π/λ (1/m)
    h: f32,                 // substep length (s)
    time: f32,              // time at the start of the substep (s)
    wind_phase: f32,        // 2π·fract(f·t), the time part of the gust phase
    relaxation: f32,        // Jacobi relaxation factor
    rod_count: u32,
    vertex_count: u32,
    anchor_count: u32,
    slot_start: u32,        // pose slot of the anchors at `time`
    slot_end: u32,          // pose slot of the anchors at `time + h`
    twist_max_iterations: u32,
    twist_tolerance: f32,   // rad
    fast_max_iterations: u32,
    fast_tolerance: f32,    // edge strain
    phase: u32,             // 0: plain projection, contact with friction; 1: filtered projection, contact without
    group_count: u32,       // interaction groups (grid_groups entries per substep)
    node_count: u32,        // grid nodes of all groups
    projection: u32,        // PROJECTION_* (shaders/substep.wgsl)
    splat: u32,             // SPLAT_*: the form's own splat, or the sorted splat's kernels (shaders/grid_sort.wgsl)
    sorted_run: u32,        // slots an invocation of grid_splat_sorted walks
    substeps: u32,          // substeps of the frame (`frame_rod`'s loop, shaders/frame.wgsl)
    // Pose of collider k's anchor at `time` and at `time + h` (the pose
    // slots above, per collider rather than per anchor): every vertex reads
    // them, so they are uniform, where a software adapter reads a value
    // once for all lanes rather than lane by lane as from `poses`.
    collider_start: array<Pose, MAX_COLLIDERS>,
    collider_end: array<Pose, MAX_COLLIDERS>,
    collider_now: array<ColliderNow, MAX_COLLIDERS>,
}

// A collider over one substep in the world frame (src/gpu/layout.rs
// `GpuColliderNow`; shaders/contact.wgsl `collider_now`, `back`, `forward`).
struct ColliderNow {
    motion: vec4<f32>,      // R_start·R_end⁻¹, unit quaternion
    p0: vec4<f32>,          // R_end·p0 (m): sphere centre, capsule end a, plane point (unused for an SDF)
    p1: vec4<f32>,          // R_end·p1: capsule end b (m), plane unit normal
}

struct Rod {
    vertex_offset: u32,
    vertex_count: u32,
    start_clamp: u32,       // index into `clamps`, or NONE for a free end
    end_clamp: u32,
    bending: vec4<f32>,     // b11, b12, b22 (N·m²), w = twisting stiffness β (N·m²)
    origin: vec4<f32>,      // world position the rod's positions are relative to (m), w unused
    drag: f32,              // N·s/m²
    radius: f32,            // section radius for contact (m)
    _pad1: u32,
    _pad2: u32,
}

struct VertexRest {
    rest_kappa: vec4<f32>,  // ω̄ᵢ^{i−1} (xy) and ω̄ᵢ^{i} (zw)
    voronoi: f32,           // l̄ᵢ = |ēⁱ⁻¹| + |ēⁱ| (m)
    mass: f32,              // kg
    inv_mass: f32,          // 1/kg, 0 when an anchor drives the vertex
    rest_len: f32,          // |ēⁱ| of the edge starting here (m), 0 at a rod's last vertex
    rod: u32,
    clamp: u32,             // clamp driving this vertex, or NONE
    clamp_slot: u32,        // which of the clamp's two vertices this is
    _pad0: u32,
}

// The clamped end edge's two vertices relative to the anchor's pivot, in the
// anchor's rest frame, and its material vector m1.
struct Clamp {
    local_pos0: vec4<f32>,
    local_pos1: vec4<f32>,
    local_m1: vec4<f32>,
    anchor: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Rigid pose x ↦ rotation·(x − pivot) + offset, offset = pivot + translation.
struct Pose {
    rotation: vec4<f32>,    // unit quaternion (x, y, z, w)
    offset: vec4<f32>,      // world position of the pivot (m)
}

// A position relative to its rod's origin, exactly
// `cell · POSITION_QUANTUM + rem` (src/gpu/layout.rs `GpuPosition`). The
// cell is integer, so moving, differencing and re-splitting positions is
// exact arithmetic that no compiler rewriting of float expressions can
// undo (a two-float sum's error term is algebraically zero, and Mesa's NIR,
// for one, folds (a + b) − a to b); what is rounded is the remainder, to
// ε·|rem| ≤ ε·POSITION_QUANTUM. `moved` carries whole quanta into the cell
// only once |rem| passes one quantum, so a vertex at rest never changes cell.
struct Position {
    cell: vec4<i32>,        // whole quanta along x, y, z; w unused
    rem: vec4<f32>,         // remainder (m), |rem| ≤ POSITION_QUANTUM per component; w unused
}

// 2⁻²⁰ m: cells are exact in f32 up to 2²⁴ quanta (16 m) from the origin,
// in i32 up to 2³¹ (2048 m).
const POSITION_QUANTUM: f32 = 9.5367431640625e-7;

// The position as one f32 vector (rounded to ε|x|), for what needs no more.
fn position_f32(p: Position) -> vec3<f32> {
    return vec3<f32>(p.cell.xyz) * POSITION_QUANTUM + p.rem.xyz;
}

// The position `x` (f32) as a `Position`, exactly.
fn position_at(x: vec3<f32>) -> Position {
    let cell = round(x / POSITION_QUANTUM);
    return Position(vec4<i32>(vec3<i32>(cell), 0), vec4<f32>(x - cell * POSITION_QUANTUM, 0.0));
}

// `p` moved by `d`: the remainder takes `d` (rounded to ε|rem + d|), then
// whole quanta move to the cell where |rem| passed one quantum (exact:
// rem and the carry are multiples of rem's ulp, the result smaller than rem).
fn moved(p: Position, d: vec3<f32>) -> Position {
    let rem = p.rem.xyz + d;
    let carry = select(vec3<f32>(0.0), round(rem / POSITION_QUANTUM), abs(rem) > vec3<f32>(POSITION_QUANTUM));
    return Position(p.cell + vec4<i32>(vec3<i32>(carry), 0), vec4<f32>(rem - carry * POSITION_QUANTUM, 0.0));
}

// Whole quanta from `a` to `b` (exact below 2²⁴ quanta, 16 m).
fn quanta_between(a: Position, b: Position) -> vec3<f32> {
    return vec3<f32>(b.cell.xyz - a.cell.xyz) * POSITION_QUANTUM;
}

// b − a, rounded once, to ε|b − a|: an edge, or a small increment of one
// vertex (the velocity update), without the ε|x| of two f32 positions.
fn displacement(a: Position, b: Position) -> vec3<f32> {
    return quanta_between(a, b) + (b.rem.xyz - a.rem.xyz);
}

// |b − a|² − l² for an edge of rest length l, split at the quanta:
// (|q|² − l²) + (2 q·ρ + |ρ|²), q = `quanta_between(a, b)`, ρ the
// remainders' difference. The f32 length of an edge is resolved only to
// ε|e|, so a constraint |e| = l computed from it lands each projection
// anywhere within ε|e| of the rest length, and the velocity update
// (x_projected − x_unconstrained)/h turns that into noise of ε|e|/h per
// edge (5e-6 m/s for 4 mm edges at h = 1e-4 s, along the rod). Here
// |q|² − l² is rounded the same way while no vertex changes cell (`moved`)
// and the part in ρ varies smoothly, so the projection lands on the same
// manifold every substep. |e|² − l² in exact arithmetic, as on the CPU.
fn squared_length_error(a: Position, b: Position, l: f32) -> f32 {
    let q = quanta_between(a, b);
    let r = b.rem.xyz - a.rem.xyz;
    return (dot(q, q) - l * l) + (2.0 * dot(q, r) + dot(r, r));
}

struct EdgeFrame {
    tangent: vec4<f32>,     // unit tangent, w = twist angle θ (rad)
    ref_u: vec4<f32>,       // Bishop vector u, w unused
}

// A collider (src/model/colliders/mod.rs `Collider`), its points relative to its
// anchor's pivot in the anchor's rest frame.
struct Collider {
    p0: vec4<f32>,          // sphere centre, capsule end a, plane point, SDF grid origin (m); w unused
    p1: vec4<f32>,          // capsule end b, plane unit normal; w unused
    kind: u32,              // SPHERE, CAPSULE, PLANE, SDF
    anchor: u32,
    radius: f32,            // sphere/capsule radius (m)
    cell: f32,              // SDF cell size (m)
    friction: f32,          // kinetic μk
    static_friction: f32,   // static μs
    margin: f32,            // m
    thickness: f32,         // relative motion per substep contact resolves (m), the tunnelling limit
    dims: vec4<u32>,        // SDF grid samples along x, y, z; w = its first z slice in the `sdf` atlas
}

const SPHERE: u32 = 0u;
const CAPSULE: u32 = 1u;
const PLANE: u32 = 2u;
const SDF: u32 = 3u;
const MAX_COLLIDERS: u32 = 16u;
// src/model/stability.rs: the runtime chatter detector.
const CHATTER_SUBSTEPS: f32 = 16.0;
const CHATTER_FRACTION: f32 = 1e-3;
// src/cpu/project.rs: strain a fast projection must get below.
const PROJECTION_FAIL_STRAIN: f32 = 1e-2;

struct Colliders {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    items: array<Collider, 16>,
}

// Per-vertex working memory of the per-rod kernels.
struct Scratch {
    kb: vec4<f32>,          // curvature binormal (κb)ᵢ, or per edge the projection's correction direction
    g: vec4<f32>,           // per edge (twist): ∂E_bend/∂θ, ∂E_twist/∂θ, Hessian diagonal, off-diagonal (the walk stores them only for its shifted Newton steps); or, after the walk's back substitution (`newton_back`), its step (x) and the angle before it (z), for the line search
    s: vec4<f32>,           // per edge: solution / (reduced) right-hand side, elimination factor (the projection walk's: the previous row's), trial θ (twist) or far end's inverse mass (projection walk), gradient (the twist walk's Newton step) or rest length (projection walk)
    force: vec4<f32>,       // total force on the vertex (N), from `forces` to `integrate`
}

@group(0) @binding(0) var<uniform> params: Step;
@group(0) @binding(1) var<storage, read> rods: array<Rod>;
@group(0) @binding(2) var<storage, read> rest: array<VertexRest>;
@group(0) @binding(4) var<storage, read> poses: array<Pose>;


// State. Each kernel's pipeline layout holds only the bindings it uses, so
// no staged kernel binds more than 8 storage buffers (WebGPU's default limit);
// the fused substep kernels bind up to 15 and are built only on devices that allow
// it (`Kernel::supported`). tests/gpu_layout.rs checks each entry point's uses
// against `Kernel::bindings`.
// `pos`, `vel`, `pos_unc`, `contacts` and `grid_fields` and their element
// accessors.
@group(1) @binding(0) var<storage, read_write> pos: array<Position>;
@group(1) @binding(1) var<storage, read_write> vel: array<vec4<f32>>;
@group(1) @binding(2) var<storage, read_write> pos_unc: array<Position>;
@group(1) @binding(9) var<storage, read_write> contacts: array<Contact>;
@group(1) @binding(15) var<storage, read_write> grid_fields: array<vec4<f32>>;

fn pos_load(v: u32) -> Position {
    return pos[vertex_slot(v)];
}

fn pos_store(v: u32, p: Position) {
    pos[vertex_slot(v)] = p;
}

fn pos_unc_load(v: u32) -> Position {
    return pos_unc[vertex_slot(v)];
}

fn pos_unc_store(v: u32, p: Position) {
    pos_unc[vertex_slot(v)] = p;
}

fn vel_load(v: u32) -> vec4<f32> {
    return vel[vertex_slot(v)];
}

fn vel_store(v: u32, u: vec4<f32>) {
    vel[vertex_slot(v)] = u;
}

fn contact_load(v: u32) -> Contact {
    return contacts[vertex_slot(v)];
}

fn contact_store(v: u32, c: Contact) {
    contacts[vertex_slot(v)] = c;
}

fn contact_normal_depth_load(v: u32) -> vec4<f32> {
    return contacts[vertex_slot(v)].normal_depth;
}

fn field_load(k: u32) -> vec4<f32> {
    return grid_fields[k];
}

fn field_store(k: u32, f: vec4<f32>) {
    grid_fields[k] = f;
}
@group(1) @binding(3) var<storage, read_write> frame: array<EdgeFrame>;
@group(1) @binding(4) var<storage, read> clamps: array<Clamp>;
@group(1) @binding(5) var<storage, read_write> scratch: array<Scratch>;
// The diagnostic counters of a submission, by name (src/gpu/layout.rs
// `stat`, which the host reads them by).
// Most twist Newton iterations a rod took in a substep.
const STAT_TWIST_ITERATIONS: u32 = 0u;
// Most projection Newton iterations a rod took in a substep.
const STAT_PROJECTION_ITERATIONS: u32 = 1u;
// Vertices that tunnelled through a collider.
const STAT_TUNNELLED: u32 = 2u;
// Largest (vertex · MAX_COLLIDERS + collider + 1) that tunnelled.
const STAT_TUNNEL_SITE: u32 = 3u;
// f32 bits of the largest relative motion that tunnelled (m).
const STAT_TUNNEL_MOTION: u32 = 4u;
// Largest rod + 1 whose invocation's loops the driver cut short
// (`loops_ran_out`).
const STAT_LOOPS_CUT_SHORT: u32 = 5u;
// Largest (rod + 1)·2 + singular whose fast projection did not converge.
const STAT_PROJECTION_FAILED: u32 = 6u;
// f32 bits of the largest strain such a projection left.
const STAT_PROJECTION_FAILED_STRAIN: u32 = 7u;
const STAT_COUNT: u32 = 8u;
@group(1) @binding(6) var<storage, read_write> stats: array<atomic<u32>, STAT_COUNT>;

// Raise statistic i to x. Every rod would race for the one word: one that
// cannot raise it leaves it alone (the same maximum, with a load where
// most rods would take a contended read-modify-write).
fn stat_max(i: u32, x: u32) {
    if (x > atomicLoad(&stats[i])) {
        atomicMax(&stats[i], x);
    }
}

// llvmpipe, the software adapter, counts every loop iteration of an
// invocation against one limit (65,535: gallivm's
// LP_MAX_TGSI_LOOP_ITERATIONS, shared by every loop of a shader) and, once
// it is reached, ends every loop after its current iteration: an
// invocation whose loops passed it computed its walks and solves cut
// short, and the rods of its SIMD lanes with it (or, when its last
// loop ended within `substeps` iterations of the limit, nothing was cut:
// reported all the same). Called last by every
// kernel that loops over a rod's vertices many times and records
// statistics (a frame of substeps in one, a long rod's substep, its
// projection, twist or contact): a loop of a length the compiler cannot
// know completes only if
// the limit was not reached; where it did not, rod r (its first, for a
// workgroup) goes to stats[STAT_LOOPS_CUT_SHORT] and `GpuSimulator::step_checked` stops the
// run. On other adapters the loop completes.
fn loops_ran_out(r: u32) {
    let expected = max(params.substeps, 2u);
    var done = 0u;
    for (var i = 0u; i < expected; i++) {
        // 1, through a load no compiler can predict (the statistic holds a rod
        // index + 1, never 2³² − 1), so that no pass can work out `done`
        // without running the loop.
        done += min(1u, atomicLoad(&stats[STAT_LOOPS_CUT_SHORT]) + 1u);
    }
    if (done < expected) {
        stat_max(STAT_LOOPS_CUT_SHORT, r + 1u);
    }
}

@group(1) @binding(7) var<storage, read> src: array<Position>;
@group(1) @binding(8) var<storage, read_write> dst: array<Position>;
// A vertex's contact in the current substep (src/cpu/contact.rs `Contact`),
// written by `contact`, read through `contact_depth` and `contact_stuck`.
struct Contact {
    normal_depth: vec4<f32>,     // unit normal; w: depth pushed out by (m; 0 = none, negated = stuck)
    surface_velocity: vec4<f32>, // velocity of the collider surface under the vertex (m/s)
}

// Hair–hair interaction (shaders/grid.wgsl; src/model/interaction.rs).
struct GridVertex {
    group: u32,             // interaction group, or NONE
    mass_q: u32,            // mass in units of the group's mass unit (≤ 4095)
    friction: f32,          // velocity blend per substep (0–1); −1: the blend leaves it alone (inverse mass 0)
    rod: u32,               // the vertex's rod (so the grid kernels need not read `rest`)
}

// One group's grid at one substep.
struct GridGroup {
    origin: vec4<f32>,      // lowest node (m); w = 2^FRAC_BITS / cell (1/m)
    dims: vec4<u32>,        // nodes along x, y, z; w = the group's first node in `grid`
    cell: f32,              // m
    pressure_scale: f32,    // ρ/ρ₀ per unit of the mass accumulator
    volume_step: f32,       // β·cell (m)
    max_push: f32,          // m
}
@group(1) @binding(12) var<storage, read> grid_vertex: array<GridVertex>;
// `group_count` entries per substep of the frame.
@group(1) @binding(13) var<storage, read> grid_groups: array<GridGroup>;
// `grid` (binding 14, declared in shaders/grid.wgsl's accumulator block):
// 8 words per node (mass, momentum x, y, z as signed 64-bit integers, low
// word first), then the counters, each the low word of a 64-bit slot:
// GRID_VMAX (fastest |v_q| of the substep), GRID_OVERFLOW (largest node + 1
// that could overflow, this frame) and GRID_OUTSIDE (vertices outside their
// grid, this frame); the word offsets after the nodes are these constants.
const GRID_VMAX: u32 = 0u;
const GRID_OVERFLOW: u32 = 2u;
const GRID_OUTSIDE: u32 = 4u;
// `grid_dispatch` (binding 18): the walked splat's box and the indirect
// dispatch of `grid_velocity_box` (`layout::grid_dispatch_words`). Words 0–2:
// the dispatch's workgroups (x, y, z), written by `grid_extent`; word 3
// unused; then 6 words per interaction group g from `GRID_BOX`: the cells
// the substep's splat reached, as maxima so that zero is none (`grid_box_raise`):
// dims − lowest cell along x, y, z, then highest cell + 2 along x, y, z.
// Raised by `grid_splat_rod`, read and zeroed by `grid_extent`.
@group(1) @binding(18) var<storage, read_write> grid_dispatch: array<atomic<u32>>;
const GRID_BOX: u32 = 4u;
// `grid_region` (binding 19): the nodes `grid_velocity_box` visits, written by
// `grid_extent` (`layout::grid_region_words`). Word 0: the substep's fastest
// |v_q| (GRID_VMAX, which `grid_extent` resets for the next splat); word
// 1: the z planes of all groups' regions (the dispatch's z); words 2–3
// unused; then `REGION_WORDS` per group g from `REGION_GROUPS`: its
// region (first node, nodes along x and y, the node strides along y and z,
// its first z plane in the dispatch, its pressure scale's bits, unused),
// then the nodes its last splat reached (lowest x, y, z, highest x, y, z;
// none when lowest > highest; the whole grid until a walked substep has
// run: `GpuSimulator::track_grid_region`) and 2 words unused.
@group(1) @binding(19) var<storage, read_write> grid_region: array<u32>;
const REGION_GROUPS: u32 = 4u;
const REGION_WORDS: u32 = 16u;
// Workgroups of `grid_velocity_box`: nodes along x and along y.
const REGION_WORKGROUP: u32 = 8u;
// `grid_fields` (binding 15, declared with the position buffers above):
// each node's velocity (m/s) and pressure, written by `grid_velocity`.
// Positions at the start of the substep (`save_start`, read by `project_shake`).
@group(1) @binding(16) var<storage, read_write> pos_start: array<Position>;
// World positions for a renderer (`world_positions`): xyz in m, w the rod's radius.
@group(1) @binding(17) var<storage, read_write> world_pos: array<vec4<f32>>;

fn contact_depth(c: Contact) -> f32 {
    return abs(c.normal_depth.w);
}

fn contact_stuck(c: Contact) -> bool {
    return c.normal_depth.w < 0.0;
}

fn make_contact(n: vec3<f32>, depth: f32, stuck: bool, surface_velocity: vec3<f32>) -> Contact {
    return Contact(vec4<f32>(n, select(depth, -depth, stuck)), vec4<f32>(surface_velocity, 0.0));
}
@group(1) @binding(10) var<uniform> colliders: Colliders;
// Every SDF collider's grid, stacked along z (`Collider.dims.w`).
@group(1) @binding(11) var sdf: texture_3d<f32>;

// The state every stage reads and writes: positions (`pos_get`,
// `pos_set`), velocities, unconstrained positions, contacts, scratch
// members and edge frames, through the accessors below (world.wgsl reads
// `pos` through `pos_load`; the sorted splat's and the renderer's kernels
// read the buffers). A component accessor (`frame_theta`, `scratch_s_x`,
// ...) reads or writes only that word.
fn pos_get(v: u32) -> Position {
    return pos_load(v);
}

fn pos_set(v: u32, p: Position) {
    pos_store(v, p);
}

// A vertex's element of `vel`: its velocity (m/s) and, in w, its chatter
// count (`project_velocity`, src/model/stability.rs), which every kernel that
// writes the velocity carries through.
fn velocity_and_chatter(u: vec3<f32>, chatter: f32) -> vec4<f32> {
    return vec4<f32>(u, chatter);
}

// The chatter count of a vertex's element of `vel`.
fn chatter_of(u: vec4<f32>) -> f32 {
    return u.w;
}

fn vel_get(v: u32) -> vec4<f32> {
    return vel_load(v);
}

fn vel_set(v: u32, u: vec4<f32>) {
    vel_store(v, u);
}

fn pos_unc_get(v: u32) -> Position {
    return pos_unc_load(v);
}

fn pos_unc_set(v: u32, p: Position) {
    pos_unc_store(v, p);
}

fn contact_get(v: u32) -> Contact {
    return contact_load(v);
}

fn contact_set(v: u32, c: Contact) {
    contact_store(v, c);
}

fn contact_normal_depth(v: u32) -> vec4<f32> {
    return contact_normal_depth_load(v);
}

fn scratch_kb(v: u32) -> vec4<f32> {
    return scratch[vertex_slot(v)].kb;
}

fn scratch_g(v: u32) -> vec4<f32> {
    return scratch[vertex_slot(v)].g;
}

fn scratch_g_x(v: u32) -> f32 {
    return scratch[vertex_slot(v)].g.x;
}

fn scratch_g_y(v: u32) -> f32 {
    return scratch[vertex_slot(v)].g.y;
}

fn scratch_g_z(v: u32) -> f32 {
    return scratch[vertex_slot(v)].g.z;
}

fn scratch_g_w(v: u32) -> f32 {
    return scratch[vertex_slot(v)].g.w;
}

fn scratch_s(v: u32) -> vec4<f32> {
    return scratch[vertex_slot(v)].s;
}

fn scratch_s_x(v: u32) -> f32 {
    return scratch[vertex_slot(v)].s.x;
}

fn scratch_s_z(v: u32) -> f32 {
    return scratch[vertex_slot(v)].s.z;
}

fn scratch_force(v: u32) -> vec4<f32> {
    return scratch[vertex_slot(v)].force;
}

fn scratch_set_kb(v: u32, x: vec4<f32>) {
    scratch[vertex_slot(v)].kb = x;
}

fn scratch_set_g(v: u32, x: vec4<f32>) {
    scratch[vertex_slot(v)].g = x;
}

fn scratch_set_s(v: u32, x: vec4<f32>) {
    scratch[vertex_slot(v)].s = x;
}

fn scratch_set_s_x(v: u32, x: f32) {
    scratch[vertex_slot(v)].s.x = x;
}

fn scratch_set_s_z(v: u32, x: f32) {
    scratch[vertex_slot(v)].s.z = x;
}

fn scratch_set_force(v: u32, x: vec4<f32>) {
    scratch[vertex_slot(v)].force = x;
}

// Edge e's frame (`frame` is indexed by an edge's first vertex).
fn frame_get(e: u32) -> EdgeFrame {
    return frame[vertex_slot(e)];
}

fn frame_tangent(e: u32) -> vec4<f32> {
    return frame[vertex_slot(e)].tangent;
}

fn frame_ref_u(e: u32) -> vec4<f32> {
    return frame[vertex_slot(e)].ref_u;
}

// θ, the twist angle (`tangent.w`).
fn frame_theta(e: u32) -> f32 {
    return frame[vertex_slot(e)].tangent.w;
}

fn frame_set(e: u32, f: EdgeFrame) {
    frame[vertex_slot(e)] = f;
}

fn frame_set_tangent(e: u32, t: vec4<f32>) {
    frame[vertex_slot(e)].tangent = t;
}

fn frame_set_ref_u(e: u32, u: vec4<f32>) {
    frame[vertex_slot(e)].ref_u = u;
}

fn frame_set_theta(e: u32, theta: f32) {
    frame[vertex_slot(e)].tangent.w = theta;
}


// The contact or projection pass running (0: plain projection, contact
// with friction; 1: filtered projection, contact without). Each entry point
// that runs these stages sets it first: from `params.phase` for one stage
// alone, per stage in the fused substep (shaders/substep.wgsl).
var<private> stage_phase: u32;

// Index of this invocation in a dispatch that may be two-dimensional.
fn invocation(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * WORKGROUP;
}

fn rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

// Where a point at `x` from the pivot goes, relative to `origin`: the two
// large world positions are subtracted first, so the result keeps the
// precision of a rod-sized vector.
fn pose_point(p: Pose, x: vec3<f32>, origin: vec3<f32>) -> vec3<f32> {
    return (p.offset.xyz - origin) + rotate(p.rotation, x);
}

fn pose_vector(p: Pose, v: vec3<f32>) -> vec3<f32> {
    return rotate(p.rotation, v);
}

fn anchor_pose(anchor: u32, slot: u32) -> Pose {
    return poses[slot * params.anchor_count + anchor];
}

// --- src/cpu/frames.rs ---

fn parallel_transport(u: vec3<f32>, t1: vec3<f32>, t2: vec3<f32>) -> vec3<f32> {
    let b = cross(t1, t2);
    let c = dot(t1, t2);
    return u * c + cross(b, u) + b * (dot(b, u) / (1.0 + c));
}

fn signed_angle(a: vec3<f32>, b: vec3<f32>, t: vec3<f32>) -> f32 {
    return atan2(dot(t, cross(a, b)), dot(a, b));
}

const TAU: f32 = 6.283185307179586;

fn unwrap_angle(angle: f32, previous: f32) -> f32 {
    return angle + TAU * round((previous - angle) / TAU);
}

struct MaterialFrame {
    m1: vec3<f32>,
    m2: vec3<f32>,
}

fn material_frame(t: vec3<f32>, u: vec3<f32>, theta: f32) -> MaterialFrame {
    let v = cross(t, u);
    let sc = sin_cos(theta);
    return MaterialFrame(u * sc.y + v * sc.x, -u * sc.x + v * sc.y);
}

// π/2 in three parts for `sin_cos`'s reduction: 8 and 12 significant bits,
// so that k·PIO2_HI and k·PIO2_MID are exact for |k| < 4096 (|θ| < 6400),
// and the rest rounded.
const PIO2_HI: f32 = 1.5703125;
const PIO2_MID: f32 = 4.838705062866211e-4;
const PIO2_LO: f32 = -4.371138828673793e-8;

// (sin θ, cos θ) from additions and multiplications alone, which WGSL
// requires to be correctly rounded, not from the built-ins, which GPUs
// evaluate in hardware to an absolute error of ~4e-7 (CUDA's bound for its
// __sinf and __cosf). A settled rod's θ moves by ulps from substep to substep, and an
// error that changes with it turns the material frames and the bending
// forces with them: with such errors emulated
// (`GpuContext::with_approximate_math`) the settled rod of
// tests/gpu_settling.rs kept moving at 2.6e-6 m/s, against 3e-7 with
// correctly rounded ones. θ − kπ/2 (Cody–Waite, exact steps for |θ| < 6400),
// Taylor polynomials of sin and cos on |r| ≤ π/4 (truncated below 3e-9 of
// the value), then the quadrant k mod 4. Within 1.5 ulps of the f64 values
// plus the reduction's error (tests/gpu_sin_cos.rs). A compiler that
// reassociated the three reduction steps into θ − k(PIO2_HI + PIO2_MID +
// PIO2_LO) would lose ~ε|k| of r; Metal's fast math, which wgpu leaves on,
// may (not measured: no Metal device here).
fn sin_cos(theta: f32) -> vec2<f32> {
    let k = round(theta * 0.63661977);
    let r = ((theta - k * PIO2_HI) - k * PIO2_MID) - k * PIO2_LO;
    let r2 = r * r;
    let s = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362880.0))));
    let c = 1.0 - 0.5 * r2 + r2 * r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0 + r2 * (-1.0 / 3628800.0))));
    switch (i32(k) & 3) {
        case 0: {
            return vec2<f32>(s, c);
        }
        case 1: {
            return vec2<f32>(c, -s);
        }
        case 2: {
            return vec2<f32>(-s, -c);
        }
        default: {
            return vec2<f32>(-c, s);
        }
    }
}

// --- src/cpu/curvature.rs ---

// Curvature binormal 2 e0 × e1 / (|e0||e1| + e0·e1) of the edges a→b and
// b→c (src/cpu/curvature.rs `curvature_binormal`), with e0 × e1 split at the
// position quanta as `squared_length_error` splits |e|²: e = q + ρ, and
// e0 × e1 = q0 × q1 + (q0 × ρ1 + ρ0 × q1 + ρ0 × ρ1). Two nearly parallel
// edges' cross product is small beside |e|², and f32 rounds it from an f32
// edge to ~ε|e|², a jump of ~ε in κb with every ulp of e as a vertex moves
// by less than a quantum, and of B ε/Δx² in the bending force. q0 × q1
// depends on the cells only, so its rounding stays put while no vertex
// changes cell (`moved`); the terms in ρ vary smoothly. What is left is
// rounding relative to κb itself: the settled rod of tests/gpu_settling.rs
// trembles at half the speed (measured on lavapipe; a compiler that
// factored q0 × q1 + q0 × ρ1 into q0 × e1 would undo it). The same value as
// the CPU's e0 × e1 in exact arithmetic.
fn curvature_binormal_at(a: Position, b: Position, c: Position) -> vec3<real> {
    let q0 = vec3<real>(quanta_between(a, b));
    let q1 = vec3<real>(quanta_between(b, c));
    let r0 = vec3<real>(b.rem.xyz) - vec3<real>(a.rem.xyz);
    let r1 = vec3<real>(c.rem.xyz) - vec3<real>(b.rem.xyz);
    let e0 = q0 + r0;
    let e1 = q1 + r1;
    let turn = cross(q0, q1) + (cross(q0, r1) + cross(r0, q1) + cross(r0, r1));
    // One division, not one a component: in the f64 stencil a GPU's
    // division is a software sequence.
    return turn * (2.0 / (length_real(e0) * length_real(e1) + dot(e0, e1)));
}

fn material_curvature(kb: vec3<f32>, f: MaterialFrame) -> vec2<f32> {
    return vec2<f32>(dot(kb, f.m2), -dot(kb, f.m1));
}

fn rot_j(w: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(-w.y, w.x);
}

fn apply_bending(b: vec3<f32>, w: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(b.x * w.x + b.y * w.y, b.y * w.x + b.z * w.y);
}

struct VertexTriple {
    prev: vec3<real>,
    mid: vec3<real>,
    next: vec3<real>,
}

fn curvature_binormal_gradient_t(a: vec3<real>, b: vec3<real>, kb: vec3<real>, k: vec3<real>) -> VertexTriple {
    let la = length_real(a);
    let lb = length_real(b);
    let d = la * lb + dot(a, b);
    let kbk = dot(kb, k);
    // Two divisions, not eight (as in `curvature_binormal_at`):
    // lb/la = lb²/(la lb), la/lb = la²/(la lb).
    let id = 1.0 / d;
    let iab = 1.0 / (la * lb);
    let ga = (2.0 * cross(b, k) - (a * (lb * lb * iab) + b) * kbk) * id;
    let gb = (-2.0 * cross(a, k) - (b * (la * la * iab) + a) * kbk) * id;
    return VertexTriple(-ga, ga - gb, gb);
}
