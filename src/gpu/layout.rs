//! Rust twins of the WGSL structs in `shaders/common.wgsl`, byte for byte.
//! Each has a `const` size assertion here; `tests/gpu_layout.rs` checks every
//! member offset against the layout naga computes for the WGSL.
//! Vectors are `[f32; 4]` (WGSL `vec4<f32>`, 16-byte aligned); no `vec3` is shared.

use bytemuck::{Pod, Zeroable};

/// Invocations per workgroup of every kernel (`WORKGROUP` in shaders/common.wgsl).
pub const WORKGROUP: u32 = 64;

/// Marks "no clamp" in `GpuRod::start_clamp`, `GpuVertexRest::clamp`.
pub const NONE: u32 = u32::MAX;

/// WGSL `Step`: the values of one substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuStep {
    /// Gravity (m/s²); w unused.
    pub gravity: [f32; 4],
    /// Uniform wind U (m/s); w = gust amplitude (m/s).
    pub wind: [f32; 4],
    /// Gust direction d̂; w = wavenumber 2π/λ (1/m).
    pub gust: [f32; 4],
    /// Substep length h (s).
    pub h: f32,
    /// Time at the start of the substep (s).
    pub time: f32,
    /// 2π·fract(f·t), the time part of the gust phase (rad).
    pub wind_phase: f32,
    /// Jacobi relaxation factor.
    pub relaxation: f32,
    /// Rods in the buffers.
    pub rod_count: u32,
    /// Vertices in the buffers.
    pub vertex_count: u32,
    /// Anchors per pose slot.
    pub anchor_count: u32,
    /// Pose slot of the anchors at `time`.
    pub slot_start: u32,
    /// Pose slot of the anchors at `time + h`.
    pub slot_end: u32,
    /// Most Newton iterations of the quasistatic twist solve.
    pub twist_max_iterations: u32,
    /// Stopping step of the twist solve (rad).
    pub twist_tolerance: f32,
    /// Most Newton iterations of the fast projection.
    pub fast_max_iterations: u32,
    /// Edge strain the fast projection stops at.
    pub fast_tolerance: f32,
    /// 0: plain projection, contact with friction; 1: filtered projection,
    /// contact without friction.
    pub phase: u32,
    /// Interaction groups (`grid_groups` entries per substep).
    pub group_count: u32,
    /// Grid nodes of all groups.
    pub node_count: u32,
    /// The projection method (`PROJECTION_*`), for the fused substep.
    pub projection: u32,
    /// How the grid is splatted (`SPLAT_*`): by each form's own splat, or
    /// by the sorted splat's kernels (`Kernel::GridCellCount`…), when the
    /// fused halves leave it to them.
    pub splat: u32,
    /// Slots an invocation of `grid_splat_sorted` walks
    /// (`schedule::Splat::Sorted`'s run).
    pub sorted_run: u32,
    /// Substeps of the frame: the loop of the whole-frame kernel
    /// (`Kernel::FrameRod`, shaders/frame.wgsl).
    pub substeps: u32,
    /// Pose of collider k's anchor at `time` (uniform: read by every
    /// vertex, see shaders/common.wgsl).
    pub collider_start: [GpuPose; crate::model::colliders::MAX_COLLIDERS],
    /// Pose of collider k's anchor at `time + h`.
    pub collider_end: [GpuPose; crate::model::colliders::MAX_COLLIDERS],
    /// Collider k's shape and motion in the world frame (`GpuColliderNow`).
    pub collider_now: [GpuColliderNow; crate::model::colliders::MAX_COLLIDERS],
}
const _: () =
    assert!(size_of::<GpuStep>() == 128 + (2 * 32 + 48) * crate::model::colliders::MAX_COLLIDERS);

/// WGSL `ColliderNow`: a collider over one substep in the world frame
/// (`crate::cpu::contact::ColliderPoses`), so that contact measures
/// distances to spheres, capsules and planes without turning each vertex
/// into the collider's frame: the rotation from the end pose to the start
/// pose, and the shape's points rotated to the end pose.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuColliderNow {
    /// R_start·R_end⁻¹, a unit quaternion (x, y, z, w): a point fixed to the
    /// collider at the end of the substep, relative to the end pivot, turned
    /// to where it was at the start, relative to the start pivot.
    pub motion: [f32; 4],
    /// R_end·p0: the sphere's centre, the capsule's end a or the plane's
    /// point, from the pivot at the end pose (m); w unused.
    pub p0: [f32; 4],
    /// R_end·p1: the capsule's end b from the pivot (m), or the plane's unit
    /// normal; w unused.
    pub p1: [f32; 4],
}
const _: () = assert!(size_of::<GpuColliderNow>() == 48);

/// `Step.projection`: no projection (shaders/substep.wgsl).
pub const PROJECTION_NONE: u32 = 0;
/// `Step.projection`: the fast projection.
pub const PROJECTION_FAST: u32 = 1;
/// `Step.projection`: SHAKE.
pub const PROJECTION_SHAKE: u32 = 2;
/// `Step.projection`: Jacobi (the fused substep does not run it).
pub const PROJECTION_JACOBI: u32 = 3;

/// `Step.splat`: each schedule's own splat (`grid_splat` per vertex in the
/// staged one, the walked window in the walked first half).
pub const SPLAT_OWN: u32 = 0;
/// `Step.splat`: the sorted splat (`schedule::Splat::Sorted`): the fused
/// halves do not splat; the `grid_cell_*` kernels and `grid_splat_sorted` do.
pub const SPLAT_SORTED: u32 = 1;

/// Storage buffers a fused substep kernel binds (`Kernel::is_fused`), above
/// WebGPU's default 8: the fused kernels are built only on a device that
/// allows this many (`walked_fused_supported`).
pub const FUSED_STORAGE_BUFFERS: u32 = 15;

/// Whether a device with `limits` can run every kernel of the sorted
/// splat (`Kernel::SORTED_SPLAT`): two bind 10 storage buffers, above
/// WebGPU's default 8 (lavapipe and GPUs allow more).
pub fn sorted_splat_supported(limits: &wgpu::Limits) -> bool {
    Kernel::SORTED_SPLAT.iter().all(|k| k.supported(limits))
}

/// Whether a device with `limits` can run the walked fused substep kernels
/// (`Form::WalkedFused`), which use no workgroup memory: storage buffers
/// only.
pub fn walked_fused_supported(limits: &wgpu::Limits) -> bool {
    limits.max_storage_buffers_per_shader_stage >= FUSED_STORAGE_BUFFERS
}

/// WGSL `Rod`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuRod {
    /// Index of the rod's first vertex.
    pub vertex_offset: u32,
    /// Vertices of the rod.
    pub vertex_count: u32,
    /// Index into the clamps of the start end, or `NONE` for a free end.
    pub start_clamp: u32,
    /// Index into the clamps of the far end, or `NONE` for a free end.
    pub end_clamp: u32,
    /// Bending stiffness b11, b12, b22 (N·m²); w = twisting stiffness β (N·m²).
    pub bending: [f32; 4],
    /// World position the rod's positions are relative to (m); w unused.
    pub origin: [f32; 4],
    /// Drag coefficient (N·s/m²).
    pub drag: f32,
    /// Section radius for contact (m).
    pub radius: f32,
    /// Padding to the WGSL layout.
    pub _pad1: u32,
    /// Padding to the WGSL layout.
    pub _pad2: u32,
}
const _: () = assert!(size_of::<GpuRod>() == 64);

/// WGSL `VertexRest`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuVertexRest {
    /// Rest material curvatures ω̄ᵢ^{i−1} (xy) and ω̄ᵢ^{i} (zw).
    pub rest_kappa: [f32; 4],
    /// Voronoi length l̄ᵢ = |ēⁱ⁻¹| + |ēⁱ| (m).
    pub voronoi: f32,
    /// Lumped mass (kg).
    pub mass: f32,
    /// Inverse mass (1/kg), 0 when an anchor drives the vertex.
    pub inv_mass: f32,
    /// Rest length |ēⁱ| of the edge starting here (m), 0 at a rod's last vertex.
    pub rest_len: f32,
    /// The rod this vertex belongs to.
    pub rod: u32,
    /// Clamp driving this vertex, or `NONE`.
    pub clamp: u32,
    /// Which of the clamp's two vertices this is (0 or 1).
    pub clamp_slot: u32,
    /// Padding to the WGSL layout.
    pub _pad0: u32,
}
const _: () = assert!(size_of::<GpuVertexRest>() == 48);

/// WGSL `Clamp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuClamp {
    /// First vertex of the clamped edge, relative to the anchor's pivot in its rest frame (m); w unused.
    pub local_pos0: [f32; 4],
    /// Second vertex of the clamped edge, likewise (m); w unused.
    pub local_pos1: [f32; 4],
    /// Material vector m1 of the clamped edge in the anchor's rest frame; w unused.
    pub local_m1: [f32; 4],
    /// The anchor that drives the clamp.
    pub anchor: u32,
    /// Padding to the WGSL layout.
    pub _pad0: u32,
    /// Padding to the WGSL layout.
    pub _pad1: u32,
    /// Padding to the WGSL layout.
    pub _pad2: u32,
}
const _: () = assert!(size_of::<GpuClamp>() == 64);

/// WGSL `Pose`: `x ↦ rotation·(x − pivot) + offset`, offset = pivot + translation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuPose {
    /// Unit quaternion (x, y, z, w).
    pub rotation: [f32; 4],
    /// World position of the pivot after the motion, pivot + translation (m); w unused.
    pub offset: [f32; 4],
}
const _: () = assert!(size_of::<GpuPose>() == 32);

/// The position quantum of `GpuPosition` (m), 2⁻²⁰ (`POSITION_QUANTUM` in
/// shaders/common.wgsl).
pub const POSITION_QUANTUM: f64 = 1.0 / (1u32 << 20) as f64;

/// WGSL `Position`: a vertex position relative to its rod's origin, exactly
/// `cell · POSITION_QUANTUM + rem`: whole quanta (integer, so moving and
/// differencing positions is exact) and an f32 remainder, `|rem|` ≤ one
/// quantum. Resolves a position to ε × the quantum (~1e-13 m) within
/// ±2048 m of the origin (shaders/common.wgsl `Position`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuPosition {
    /// Whole quanta along x, y, z; w unused.
    pub cell: [i32; 4],
    /// Remainder (m); w unused.
    pub rem: [f32; 4],
}
const _: () = assert!(size_of::<GpuPosition>() == 32);

impl GpuPosition {
    /// `x` (m, relative to the rod's origin) split into quanta and an f32
    /// remainder (`position_at` in shaders/common.wgsl, from f64): exact to
    /// f32 rounding of the remainder, ~6e-14 m.
    pub fn new(x: glam::DVec3) -> Self {
        let cell = (x / POSITION_QUANTUM).round();
        let rem = x - cell * POSITION_QUANTUM;
        GpuPosition {
            cell: [cell.x as i32, cell.y as i32, cell.z as i32, 0],
            rem: [rem.x as f32, rem.y as f32, rem.z as f32, 0.0],
        }
    }

    /// The position (m, relative to the rod's origin), exactly.
    pub fn get(&self) -> glam::DVec3 {
        let [x, y, z, _] = self.cell;
        let [a, b, c, _] = self.rem;
        glam::DVec3::new(x as f64, y as f64, z as f64) * POSITION_QUANTUM
            + glam::DVec3::new(a as f64, b as f64, c as f64)
    }

    /// The position as the kernels' `position_f32` rounds it.
    pub fn as_f32(&self) -> glam::Vec3 {
        let [x, y, z, _] = self.cell;
        let q = POSITION_QUANTUM as f32;
        glam::Vec3::new(x as f32 * q, y as f32 * q, z as f32 * q)
            + glam::Vec3::from_slice(&self.rem[..3])
    }
}

/// WGSL `EdgeFrame`: tangent with θ in `w`, Bishop vector u.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuEdgeFrame {
    /// Unit tangent; w = twist angle θ (rad).
    pub tangent: [f32; 4],
    /// Bishop (reference) vector u; w unused.
    pub ref_u: [f32; 4],
}
const _: () = assert!(size_of::<GpuEdgeFrame>() == 32);

/// WGSL `Collider` (see `crate::model::colliders::Collider`): points relative to the
/// anchor pivot in the anchor's rest frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuCollider {
    /// Sphere centre, capsule end a, plane point, SDF grid origin (m).
    pub p0: [f32; 4],
    /// Capsule end b, plane unit normal.
    pub p1: [f32; 4],
    /// Shape: `SPHERE`, `CAPSULE`, `PLANE` or `SDF` (the WGSL constants).
    pub kind: u32,
    /// The anchor the collider moves with.
    pub anchor: u32,
    /// Sphere or capsule radius (m).
    pub radius: f32,
    /// SDF cell size (m).
    pub cell: f32,
    /// Kinetic friction coefficient μk.
    pub friction: f32,
    /// Static friction coefficient μs.
    pub static_friction: f32,
    /// Contact margin added to the strand radius (m).
    pub margin: f32,
    /// Relative motion per substep that contact resolves (m); `f32::MAX` for a plane.
    pub thickness: f32,
    /// SDF samples along x, y, z; w = first z slice in the SDF atlas.
    pub dims: [u32; 4],
}
const _: () = assert!(size_of::<GpuCollider>() == 80);

/// WGSL `Colliders`: the uniform block of all colliders.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GpuColliders {
    /// Colliders in use, at most `MAX_COLLIDERS`.
    pub count: u32,
    /// Padding to the WGSL layout.
    pub _pad0: u32,
    /// Padding to the WGSL layout.
    pub _pad1: u32,
    /// Padding to the WGSL layout.
    pub _pad2: u32,
    /// The colliders; entries past `count` are unused.
    pub items: [GpuCollider; crate::model::colliders::MAX_COLLIDERS],
}
const _: () = assert!(size_of::<GpuColliders>() == 16 + 80 * 16);

/// WGSL `Contact` (`crate::cpu::contact::Contact`): a vertex's contact in
/// the current substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuContact {
    /// Unit normal (xyz) and the depth pushed out by (w, m; 0 = no contact,
    /// negated when static friction holds the vertex).
    pub normal_depth: [f32; 4],
    /// Velocity of the collider surface under the vertex (xyz, m/s).
    pub surface_velocity: [f32; 4],
}
const _: () = assert!(size_of::<GpuContact>() == 32);

/// WGSL `Scratch`: per-vertex working memory of the per-rod kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuScratch {
    /// Curvature binormal (κb)ᵢ, or per edge the projection's correction
    /// direction; w unused.
    pub kb: [f32; 4],
    /// Per edge (twist): ∂E_bend/∂θ, ∂E_twist/∂θ, Hessian diagonal, coupling
    /// to the next edge (the walk stores them only for its shifted Newton
    /// steps); or, after the walk's back substitution, its step (x) and the
    /// angle before it (z), for the line search.
    pub g: [f32; 4],
    /// Per edge: solution or (reduced) right-hand side; elimination factor (the
    /// projection's walk: the previous row's); trial θ (twist) or the far
    /// end's inverse mass (the projection's walk); gradient (the twist walk's
    /// Newton step) or the edge's rest length (the projection's walk).
    pub s: [f32; 4],
    /// Total force on the vertex (N), from `forces` to `integrate`; w unused.
    pub force: [f32; 4],
}
const _: () = assert!(size_of::<GpuScratch>() == 64);

/// WGSL `GridVertex` (`crate::model::interaction::GridVertex`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuGridVertex {
    /// Interaction group, or `NONE`.
    pub group: u32,
    /// Mass in units of the group's mass unit (≤ 4095).
    pub mass_q: u32,
    /// Velocity blend towards the grid per substep (0–1); −1 for a vertex
    /// the blend leaves alone (inverse mass 0: held by a clamp), so that
    /// `grid_blend` need not read `rest` to know.
    pub friction: f32,
    /// The vertex's rod (`rest`'s `rod`, here so that the grid kernels read
    /// one struct per vertex).
    pub rod: u32,
}
const _: () = assert!(size_of::<GpuGridVertex>() == 16);

/// WGSL `GridGroup`: one group's grid at one substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuGridGroup {
    /// Lowest node (m); w = 2^FRAC_BITS / cell, the value the CPU multiplies by.
    pub origin: [f32; 4],
    /// Nodes along x, y, z; w = the group's first node in the grid buffer.
    pub dims: [u32; 4],
    /// Grid cell size (m).
    pub cell: f32,
    /// Density ratio ρ/ρ₀ per unit of the mass accumulator.
    pub pressure_scale: f32,
    /// Volume-preservation step β·cell (m).
    pub volume_step: f32,
    /// Largest push of one substep (m).
    pub max_push: f32,
}
const _: () = assert!(size_of::<GpuGridGroup>() == 48);

/// Words per grid node in the `grid` buffer, and the counters after the nodes.
pub const GRID_WORDS_PER_NODE: usize = 8;
/// Counter word after the grid nodes: fastest |v_q| of the substep. Each
/// counter is the low word of a 64-bit slot (the high one stays zero), so
/// that a device with 64-bit atomics reaches it as one (shaders/grid_i64.wgsl).
pub const GRID_VMAX: usize = 0;
/// Counter word: largest node + 1 that could overflow, this frame.
pub const GRID_OVERFLOW: usize = 2;
/// Counter word: vertices outside their grid, this frame.
pub const GRID_OUTSIDE: usize = 4;
/// Counter words after the grid nodes.
pub const GRID_COUNTERS: usize = 6;

/// A struct shared with WGSL: its WGSL name, size, and `(member, offset)`s.
pub type StructLayout = (&'static str, usize, Vec<(&'static str, usize)>);

/// Every struct shared with WGSL, for the layout test.
pub fn shared_structs() -> Vec<StructLayout> {
    macro_rules! layout {
        ($wgsl:literal, $t:ty, [$($f:ident),* $(,)?]) => {
            ($wgsl, size_of::<$t>(), vec![$((stringify!($f), std::mem::offset_of!($t, $f))),*])
        };
    }
    vec![
        layout!(
            "Step",
            GpuStep,
            [
                gravity,
                wind,
                gust,
                h,
                time,
                wind_phase,
                relaxation,
                rod_count,
                vertex_count,
                anchor_count,
                slot_start,
                slot_end,
                twist_max_iterations,
                twist_tolerance,
                fast_max_iterations,
                fast_tolerance,
                phase,
                group_count,
                node_count,
                projection,
                splat,
                sorted_run,
                substeps,
                collider_start,
                collider_end,
                collider_now
            ]
        ),
        layout!("ColliderNow", GpuColliderNow, [motion, p0, p1]),
        layout!(
            "Rod",
            GpuRod,
            [
                vertex_offset,
                vertex_count,
                start_clamp,
                end_clamp,
                bending,
                origin,
                drag,
                radius,
                _pad1,
                _pad2
            ]
        ),
        layout!(
            "VertexRest",
            GpuVertexRest,
            [
                rest_kappa, voronoi, mass, inv_mass, rest_len, rod, clamp, clamp_slot, _pad0
            ]
        ),
        layout!(
            "Clamp",
            GpuClamp,
            [
                local_pos0, local_pos1, local_m1, anchor, _pad0, _pad1, _pad2
            ]
        ),
        layout!("Pose", GpuPose, [rotation, offset]),
        layout!("Position", GpuPosition, [cell, rem]),
        layout!("EdgeFrame", GpuEdgeFrame, [tangent, ref_u]),
        layout!("Scratch", GpuScratch, [kb, g, s, force]),
        layout!("Contact", GpuContact, [normal_depth, surface_velocity]),
        layout!("GridVertex", GpuGridVertex, [group, mass_q, friction, rod]),
        layout!(
            "GridGroup",
            GpuGridGroup,
            [origin, dims, cell, pressure_scale, volume_step, max_push]
        ),
        layout!(
            "Collider",
            GpuCollider,
            [
                p0,
                p1,
                kind,
                anchor,
                radius,
                cell,
                friction,
                static_friction,
                margin,
                thickness,
                dims
            ]
        ),
        layout!(
            "Colliders",
            GpuColliders,
            [count, _pad0, _pad1, _pad2, items]
        ),
    ]
}

/// The files whose kernels the simulator dispatches: the roots of every
/// module it builds (src/gpu/compose.rs writes the rest from their
/// `#import`s). The whole-frame kernel's module also has shaders/frame.wgsl.
pub const KERNEL_FILES: [&str; 10] = [
    "frames",
    "twist",
    "forces",
    "integrate",
    "project",
    "contact",
    "substep",
    "grid",
    "grid_sort",
    "world",
];

/// Which module `shader_variant` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Variant {
    /// The bending stencil in f64 (shaders/real_f64.wgsl for
    /// shaders/real_f32.wgsl; a device with `wgpu::Features::SHADER_F64`).
    pub stencil_f64: bool,
    /// The grid's accumulators as 64-bit atomics (shaders/grid_i64.wgsl for
    /// shaders/grid_u32.wgsl; a device with `wgpu::Features::SHADER_INT64`
    /// and `wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS`).
    pub grid_i64: bool,
    /// sin, cos, atan2, length and normalize with the errors of a GPU's
    /// fast approximations (`approximate_math`), to check on a correctly
    /// rounding adapter what the tests' tolerances allow.
    pub approximate_math: bool,
    /// The whole-frame kernel's module: shaders/frame.wgsl (`frame_rod`)
    /// among the roots, and a substep's changing values from the frame's
    /// table of steps (shaders/step_table.wgsl for
    /// shaders/step_uniform.wgsl) in place of `params` (the module of
    /// `Kernel::FrameRod`).
    pub frame: bool,
}

impl Variant {
    /// The module's roots and swaps (`compose::order`).
    pub fn roots_and_swaps(self) -> (Vec<&'static str>, Vec<(&'static str, &'static str)>) {
        use super::compose::ALTERNATIVES;
        let mut roots = KERNEL_FILES.to_vec();
        if self.frame {
            roots.push("frame");
        }
        let chosen = [self.stencil_f64, self.frame, self.grid_i64];
        let swaps = ALTERNATIVES
            .into_iter()
            .zip(chosen)
            .filter_map(|(pair, on)| on.then_some(pair))
            .collect();
        (roots, swaps)
    }

    /// The files of the module, each after those it imports, as (stem, text).
    pub fn files(self) -> Vec<(&'static str, &'static str)> {
        let (roots, swaps) = self.roots_and_swaps();
        super::compose::files_of(&roots, &swaps)
            .unwrap_or_else(|e| panic!("the shaders under shaders/ compose: {e}"))
    }
}

/// The module of `variant`: its files (`Variant::files`) one after the
/// other, each after those it imports; with `approximate_math`, every call
/// of the built-ins in `APPROXIMATED_CALLS` wrapped in its error (but in
/// shaders/real_f64.wgsl) and shaders/approximate.wgsl appended.
pub fn shader_variant(variant: Variant) -> String {
    use super::compose::part;
    let mut site = 0u32;
    let mut out = String::new();
    for (stem, text) in variant.files() {
        let text = part(stem, text);
        if variant.approximate_math && stem != "real_f64" {
            out.push_str(&approximate_math(&text, &mut site));
        } else {
            out.push_str(&text);
        }
    }
    if variant.approximate_math {
        out.push_str(APPROXIMATE_SOURCE);
    }
    out
}

/// The default module (no optional feature, one substep a dispatch).
pub fn shader_source() -> String {
    shader_variant(Variant::default())
}

/// shaders/approximate.wgsl: the error model of `approximate_math`.
pub const APPROXIMATE_SOURCE: &str = include_str!("../../shaders/approximate.wgsl");

/// The relative error, in ulps of f32, that `approximate_math` gives
/// atan2, length and normalize (shaders/approximate.wgsl `APPROX_ULPS`):
/// near what WGSL allows a square root (4.5 ulps, as 1/inverseSqrt; a
/// conforming normalize may be off by 2.5 more, from its division). Tests
/// derive their GPU tolerances with it.
pub const APPROX_ULPS: f64 = 4.0;

/// The built-in calls `approximate_math` wraps: each name and what its
/// wrapper adds to or multiplies the call `{c}` by (`{a}`: its arguments,
/// `{s}`: the site's number), in shaders/approximate.wgsl's terms.
pub const APPROXIMATED_CALLS: [(&str, &str); 5] = [
    ("sin", "({c} + approx_abs(APPROX_SIN_ABS, {s}, {a}))"),
    ("cos", "({c} + approx_abs(APPROX_COS_ABS, {s}, {a}))"),
    ("atan2", "({c} * approx_factor(APPROX_ULPS, {s}, {c}))"),
    ("length", "({c} * approx_factor(APPROX_ULPS, {s}, {c}))"),
    (
        "normalize",
        "({c} * approx_factor(APPROX_ULPS, {s}, dot({a}, {a})))",
    ),
];

/// `text` with every call of a built-in in `APPROXIMATED_CALLS` (outside
/// comments) wrapped in its error (shaders/approximate.wgsl, which the
/// module appends), the sites numbered from `site` on: the module as a GPU
/// whose sin, cos and square roots are fast approximations would compute
/// it, deterministically, on an adapter that rounds correctly. Each site
/// gets its own number, so its errors are unrelated to the other sites'.
/// Nested calls are wrapped inside out, and a wrapper repeats its call's
/// text, so a nested site's number would appear more than once
/// (tests/gpu_layout.rs, which finds each once, would say so; the shaders
/// have none). Calls are found as `name(` outside `//` comments (the
/// shaders have no `/* */` ones).
pub fn approximate_math(text: &str, site: &mut u32) -> String {
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = String::with_capacity(text.len() * 2);
    let mut i = 0;
    while i < bytes.len() {
        if text[i..].starts_with("//") {
            let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
            out.push_str(&text[i..end]);
            i = end;
            continue;
        }
        if ident(bytes[i]) && (i == 0 || !(ident(bytes[i - 1]) || bytes[i - 1] == b'.')) {
            let end = i + bytes[i..].iter().take_while(|&&b| ident(b)).count();
            let name = &text[i..end];
            let call = APPROXIMATED_CALLS.iter().find(|(n, _)| *n == name);
            if let (Some((_, wrapper)), Some(b'(')) = (call, bytes.get(end)) {
                let close = matching_paren(text, end);
                let args = approximate_math(&text[end + 1..close], site);
                let call = format!("{name}({args})");
                out.push_str(
                    &wrapper
                        .replace("{c}", &call)
                        .replace("{s}", &format!("{}u", *site))
                        .replace("{a}", &args),
                );
                *site += 1;
                i = close + 1;
            } else {
                out.push_str(name);
                i = end;
            }
            continue;
        }
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + len]);
        i += len;
    }
    out
}

/// The index of the `)` closing the `(` at `open`.
fn matching_paren(text: &str, open: usize) -> usize {
    let mut depth = 0;
    for (k, b) in text.bytes().enumerate().skip(open) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    panic!(
        "unbalanced parentheses after {:?}",
        &text[open..open + 40.min(text.len() - open)]
    );
}

/// What a kernel's dispatch covers (`Kernel::domain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// One invocation per vertex.
    Vertex,
    /// One invocation per rod, walking it.
    Rod,
    /// One invocation per node of the hair–hair grid.
    Node,
    /// One invocation per node of the region `Kernel::GridExtent` chose, in
    /// workgroups of `REGION_WORKGROUP` nodes along x and y and one z plane,
    /// dispatched indirectly (the device writes the size).
    Region,
    /// A single invocation (`@workgroup_size(1)`, one workgroup).
    Single,
    /// A single workgroup of `WORKGROUP` invocations.
    Workgroup,
    /// One invocation per run of the sorted splat's slots (at most one
    /// slot a vertex; `Step.sorted_run` slots a run).
    SortedRuns,
    /// One invocation per run of `CELL_RUN` cells of the grid.
    CellRuns,
}

/// A compute kernel: its entry point (also the pipeline label), what one
/// invocation handles, and which state bindings of group 1 it uses
/// (`(binding, read_only)`; see `shaders/common.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Bishop frames, one invocation walking each rod.
    FramesRod,
    /// Quasistatic twist, one invocation walking each rod.
    TwistRod,
    /// Forces, one invocation walking each rod.
    ForcesRod,
    /// Symplectic Euler step, one invocation per vertex.
    Integrate,
    /// One Jacobi iteration of the inextensibility projection, per vertex.
    ProjectJacobi,
    /// Fast projection, one invocation walking each rod.
    ProjectFastRod,
    /// Copy of the positions at the start of the substep (for SHAKE).
    SaveStart,
    /// SHAKE projection, one invocation walking each rod.
    ProjectShakeRod,
    /// Velocity update from the projected positions, inelastic contact and the chatter count.
    ProjectVelocity,
    /// Contact of each vertex with the colliders, one invocation per vertex.
    Contact,
    /// Contact of the edges starting at an even vertex of their rod with
    /// spheres and capsules, one invocation per vertex.
    ContactEdgesEven,
    /// The same for the edges starting at an odd vertex, after the even ones.
    ContactEdgesOdd,
    /// The three contact stages, one invocation walking each rod.
    ContactRod,
    /// Readies the hair–hair interaction grid for a splat: resets the
    /// substep's fastest velocity (`GridVelocity` leaves the nodes' sums zero).
    GridClear,
    /// Splats vertex mass and momentum onto the grid.
    GridSplat,
    /// Grid velocities and pressure fields from the splatted sums.
    GridVelocity,
    /// Blends vertex velocities towards the grid's.
    GridBlend,
    /// In the walked substep (`Form::WalkedFused`), in place of `GridClear`
    /// after the splat: the region of nodes `GridVelocityBox` visits, per
    /// group the box of the nodes this splat and the last reached, and that
    /// kernel's indirect dispatch; resets the substep's fastest velocity.
    GridExtent,
    /// `GridVelocity` over `GridExtent`'s region only, dispatched indirectly.
    GridVelocityBox,
    /// The sorted splat's first stage (`cpu::grid_sort::grid_cell_count`): each
    /// vertex's cell and its rank among the cell's vertices (a counter
    /// add); also the vertices outside the grid and the box of cells
    /// reached, as the walked splat records it.
    GridCellCount,
    /// Stage 2, per block of `CELL_BLOCK` cells, an invocation per
    /// `CELL_RUN`: each cell's first slot within its block, the block's
    /// total, the counts zeroed.
    GridCellScan,
    /// Stage 2, one workgroup: each block's first slot, and the slots in all.
    GridCellScanBlocks,
    /// Stage 3 (`grid_cell_scatter`): each splatted vertex into its slot.
    GridCellScatter,
    /// Stage 4 (`grid_splat_sorted`): the sorted vertices splatted, an
    /// invocation walking each run of `Step.sorted_run` slots with the walked
    /// splat's window, so that a cell's sums reach its nodes once a run.
    GridSplatSorted,
    /// World positions for a renderer, once per frame when asked for.
    WorldPositions,
    /// The first half of a substep: forces, save_start (SHAKE), integrate
    /// (and the walked splat with hair–hair interaction), one invocation
    /// walking each rod through the stages (the `*Rod` kernels' walks;
    /// shaders/substep.wgsl).
    SubstepStartRod,
    /// The second half: the grid's blend, projection, contact, filtered
    /// projection, contact, project_velocity, frames, twist, walked.
    SubstepFinishRod,
    /// A whole substep in one dispatch, walked, where no stage needs other
    /// strands (no hair–hair interaction).
    SubstepRod,
    /// Every substep of a frame in one dispatch, `SubstepRod`'s walk in a
    /// loop over the frame's substeps, each invocation taking its rod
    /// through them all (`Form::WalkedFrame`, without hair–hair
    /// interaction; shaders/frame.wgsl, built from its own module:
    /// `Kernel::is_frame`).
    FrameRod,
}

/// The diagnostic counters of the `stats` buffer, by name (WGSL
/// `STAT_*`, shaders/common.wgsl), each an atomic maximum or count over a
/// submission, zeroed before it.
pub mod stat {
    /// Most twist Newton iterations a rod took in a substep.
    pub const TWIST_ITERATIONS: usize = 0;
    /// Most projection Newton iterations a rod took in a substep.
    pub const PROJECTION_ITERATIONS: usize = 1;
    /// Vertices that tunnelled through a collider.
    pub const TUNNELLED: usize = 2;
    /// Largest (vertex · `MAX_COLLIDERS` + collider + 1) that tunnelled.
    pub const TUNNEL_SITE: usize = 3;
    /// f32 bits of the largest relative motion that tunnelled (m).
    pub const TUNNEL_MOTION: usize = 4;
    /// Largest rod + 1 whose invocation's loops the driver cut short.
    pub const LOOPS_CUT_SHORT: usize = 5;
    /// Largest (rod + 1)·2 + singular whose fast projection did not converge.
    pub const PROJECTION_FAILED: usize = 6;
    /// f32 bits of the largest strain such a projection left.
    pub const PROJECTION_FAILED_STRAIN: usize = 7;
    /// Counters in all.
    pub const COUNT: usize = 8;
}

/// The component of a vertex's element of the velocity buffer that holds
/// its chatter count (WGSL `chatter_of`; x, y, z are the velocity, m/s).
pub const VEL_CHATTER: usize = 3;

/// Group-1 bindings, as numbered in `shaders/common.wgsl`.
pub mod binding {
    /// Positions (`GpuPosition`).
    pub const POS: u32 = 0;
    /// Velocities; w holds the chatter count.
    pub const VEL: u32 = 1;
    /// Unconstrained positions after `integrate`.
    pub const POS_UNC: u32 = 2;
    /// Edge frames (`GpuEdgeFrame`).
    pub const FRAME: u32 = 3;
    /// Clamps (`GpuClamp`).
    pub const CLAMPS: u32 = 4;
    /// Per-vertex working memory (`GpuScratch`).
    pub const SCRATCH: u32 = 5;
    /// Diagnostic counters (atomics).
    pub const STATS: u32 = 6;
    /// Source positions of a Jacobi pass.
    pub const SRC: u32 = 7;
    /// Destination positions of a Jacobi pass.
    pub const DST: u32 = 8;
    /// Per-vertex contacts of the substep (`GpuContact`).
    pub const CONTACTS: u32 = 9;
    /// A uniform buffer, not storage.
    pub const COLLIDERS: u32 = 10;
    /// A 3D texture (`texture_3d<f32>`, R32Float), not a buffer.
    pub const SDF: u32 = 11;
    /// Per-vertex interaction group and mass (`GpuGridVertex`).
    pub const GRID_VERTEX: u32 = 12;
    /// Per-substep grids of the interaction groups (`GpuGridGroup`).
    pub const GRID_GROUPS: u32 = 13;
    /// Grid accumulators (atomics) and counters.
    pub const GRID: u32 = 14;
    /// Grid velocity and pressure fields.
    pub const GRID_FIELDS: u32 = 15;
    /// Positions at the start of the substep (SHAKE).
    pub const POS_START: u32 = 16;
    /// World positions for a renderer (`vec4`: xyz in m, w the radius).
    pub const WORLD_POS: u32 = 17;
    /// The walked splat's box per group and `GridVelocityBox`'s indirect
    /// dispatch (`grid_dispatch_words`).
    pub const GRID_DISPATCH: u32 = 18;
    /// The region `GridVelocityBox` visits (`grid_region_words`).
    pub const GRID_REGION: u32 = 19;
    /// The sorted splat's per-cell words: counts, first slots, block
    /// totals (`grid_cells_words`; atomics).
    pub const GRID_CELLS: u32 = 20;
    /// The sorted splat's per-vertex words: cells, ranks, then the sorted
    /// vertices (`grid_sort_words`).
    pub const GRID_SORT: u32 = 21;
    /// The frame's `Step`s one after the other (`GpuStep`, phase 0), which
    /// the whole-frame kernel reads a substep's changing values from
    /// (shaders/frame.wgsl).
    pub const FRAME_STEPS: u32 = 22;
}

/// Words of the `grid_dispatch` buffer for `groups` interaction groups: the
/// indirect dispatch's 3 (and one unused), then 6 per group from
/// `GRID_BOX` (shaders/common.wgsl has the layout).
pub fn grid_dispatch_words(groups: usize) -> usize {
    GRID_BOX + 6 * groups
}

/// First word of the splat's boxes in `grid_dispatch`.
pub const GRID_BOX: usize = 4;

/// Consecutive cells one invocation of `grid_cell_scan` sums
/// (shaders/grid_sort.wgsl): a workgroup's scan then serves `CELL_BLOCK`.
pub const CELL_RUN: u32 = 4;

/// Cells of a block of `grid_cell_scan`, a workgroup's.
pub const CELL_BLOCK: u32 = CELL_RUN * WORKGROUP;

/// Words of the `grid_cells` buffer for `nodes` grid nodes (all groups):
/// each cell's count (from 0), its first slot within its block of
/// `CELL_BLOCK` cells (from `nodes`), each block's first slot (from
/// `2·nodes`), then the slots in all (shaders/grid_sort.wgsl). A cell is
/// named by its lowest node.
pub fn grid_cells_words(nodes: usize) -> usize {
    2 * nodes + nodes.div_ceil(CELL_BLOCK as usize) + 1
}

/// Consecutive slots one invocation of `grid_splat_sorted` walks by
/// default (`schedule::Splat::SORTED`; `Step.sorted_run`): the hair at 1 M
/// vertices adds 2.3 words a vertex to the grid with runs of 16, 1.3 with
/// 32, 4.3 with 8 (tests/splat_atomics.rs); longer runs are fewer
/// invocations, each a longer chain of reads.
pub const SORTED_RUN: u32 = 16;

/// Words of the `grid_sort` buffer for `vertices` vertices: each vertex's
/// cell (from 0; `NONE` for a vertex not splatted), its rank in the cell
/// (from `vertices`), the vertex in each slot (from `2·vertices`), and
/// where each vertex lies in its cell (from `3·vertices`: the grid
/// position's fraction bits, so that the splat uses the cell it was
/// counted in).
pub fn grid_sort_words(vertices: usize) -> usize {
    4 * vertices
}

/// Words of the `grid_region` buffer for `groups` interaction groups: 4,
/// then `REGION_WORDS` per group from `REGION_GROUPS` (shaders/common.wgsl
/// has the layout).
pub fn grid_region_words(groups: usize) -> usize {
    REGION_GROUPS + REGION_WORDS * groups
}

/// Workgroup size of `Domain::Region` kernels along x and y
/// (`@workgroup_size(8, 8, 1)`).
pub const REGION_WORKGROUP: u32 = 8;

/// First word of the groups' regions in `grid_region`.
pub const REGION_GROUPS: usize = 4;
/// Words per group in `grid_region`.
pub const REGION_WORDS: usize = 16;
/// Word of a group's region (from its first) where the nodes its last
/// splat reached begin: lowest x, y, z, then highest x, y, z.
pub const REGION_LAST_BOX: usize = 8;

/// What a group-1 binding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// A storage buffer.
    Storage {
        /// Declared `read` in the WGSL (else `read_write`).
        read_only: bool,
    },
    /// A uniform buffer.
    Uniform,
    /// A 3D texture.
    Texture3d,
}

/// The kind of each group-1 binding (as declared in `shaders/common.wgsl`).
pub fn binding_kind(b: u32) -> BindingKind {
    use binding::*;
    match b {
        SRC | CLAMPS | GRID_VERTEX | GRID_GROUPS | FRAME_STEPS => {
            BindingKind::Storage { read_only: true }
        }
        COLLIDERS => BindingKind::Uniform,
        SDF => BindingKind::Texture3d,
        _ => BindingKind::Storage { read_only: false },
    }
}

/// Group-0 (`world`) storage bindings, shared by every kernel.
pub const WORLD_STORAGE: [u32; 3] = [1, 2, 4];

impl Kernel {
    /// Every kernel, in the order the pipelines are built.
    pub const ALL: [Kernel; 29] = [
        Kernel::FramesRod,
        Kernel::TwistRod,
        Kernel::ForcesRod,
        Kernel::Integrate,
        Kernel::ProjectJacobi,
        Kernel::ProjectFastRod,
        Kernel::SaveStart,
        Kernel::ProjectShakeRod,
        Kernel::ProjectVelocity,
        Kernel::Contact,
        Kernel::ContactEdgesEven,
        Kernel::ContactEdgesOdd,
        Kernel::ContactRod,
        Kernel::GridClear,
        Kernel::GridSplat,
        Kernel::GridVelocity,
        Kernel::GridBlend,
        Kernel::GridExtent,
        Kernel::GridVelocityBox,
        Kernel::GridCellCount,
        Kernel::GridCellScan,
        Kernel::GridCellScanBlocks,
        Kernel::GridCellScatter,
        Kernel::GridSplatSorted,
        Kernel::WorldPositions,
        Kernel::SubstepStartRod,
        Kernel::SubstepFinishRod,
        Kernel::SubstepRod,
        Kernel::FrameRod,
    ];

    /// The kernel's entry point in the WGSL module.
    pub fn entry_point(self) -> &'static str {
        match self {
            Kernel::FramesRod => "frames_rod",
            Kernel::TwistRod => "twist_rod",
            Kernel::ForcesRod => "forces_rod",
            Kernel::Integrate => "integrate",
            Kernel::ProjectJacobi => "project_jacobi",
            Kernel::ProjectFastRod => "project_fast_rod",
            Kernel::SaveStart => "save_start",
            Kernel::ProjectShakeRod => "project_shake_rod",
            Kernel::ProjectVelocity => "project_velocity",
            Kernel::Contact => "contact",
            Kernel::ContactEdgesEven => "contact_edges_even",
            Kernel::ContactEdgesOdd => "contact_edges_odd",
            Kernel::ContactRod => "contact_rod",
            Kernel::GridClear => "grid_clear",
            Kernel::GridSplat => "grid_splat",
            Kernel::GridVelocity => "grid_velocity",
            Kernel::GridBlend => "grid_blend",
            Kernel::GridExtent => "grid_extent",
            Kernel::GridVelocityBox => "grid_velocity_box",
            Kernel::GridCellCount => "grid_cell_count",
            Kernel::GridCellScan => "grid_cell_scan",
            Kernel::GridCellScanBlocks => "grid_cell_scan_blocks",
            Kernel::GridCellScatter => "grid_cell_scatter",
            Kernel::GridSplatSorted => "grid_splat_sorted",
            Kernel::WorldPositions => "world_positions",
            Kernel::SubstepStartRod => "substep_start_rod",
            Kernel::SubstepFinishRod => "substep_finish_rod",
            Kernel::SubstepRod => "substep_rod",
            Kernel::FrameRod => "frame_rod",
        }
    }

    /// What one invocation of the kernel handles, which sets its dispatch size. An exhaustive match, so
    /// a new or renamed kernel must be classified; tests/gpu_layout.rs checks
    /// each against the bound its entry point tests.
    pub fn domain(self) -> Domain {
        use Kernel::*;
        match self {
            FramesRod | TwistRod | ForcesRod | ProjectFastRod | ProjectShakeRod | ContactRod
            | SubstepStartRod | SubstepFinishRod | SubstepRod | FrameRod => Domain::Rod,
            GridVelocity => Domain::Node,
            GridCellScan => Domain::CellRuns,
            GridVelocityBox => Domain::Region,
            GridClear | GridExtent => Domain::Single,
            GridCellScanBlocks => Domain::Workgroup,
            GridSplatSorted => Domain::SortedRuns,
            Integrate | ProjectJacobi | SaveStart | ProjectVelocity | Contact
            | ContactEdgesEven | ContactEdgesOdd | GridSplat | GridBlend | WorldPositions
            | GridCellCount | GridCellScatter => Domain::Vertex,
        }
    }

    /// Whether a device with `limits` can run the kernel: the fused ones
    /// need more than WebGPU's default limits (`walked_fused_supported`),
    /// and so do two of the sorted splat's (10 storage buffers:
    /// `sorted_splat_supported`); every other kernel fits the defaults
    /// (tests/gpu_layout.rs).
    pub fn supported(self, limits: &wgpu::Limits) -> bool {
        if self.is_fused() {
            walked_fused_supported(limits)
        } else if self.is_sorted_splat() {
            self.storage_buffers() as u32 <= limits.max_storage_buffers_per_shader_stage
        } else {
            true
        }
    }

    /// The sorted splat's kernels, in the order a substep dispatches them
    /// (`schedule::Splat::Sorted`).
    pub const SORTED_SPLAT: [Kernel; 5] = [
        Kernel::GridCellCount,
        Kernel::GridCellScan,
        Kernel::GridCellScanBlocks,
        Kernel::GridCellScatter,
        Kernel::GridSplatSorted,
    ];

    /// True for the sorted splat's kernels (`Kernel::SORTED_SPLAT`).
    pub fn is_sorted_splat(self) -> bool {
        Kernel::SORTED_SPLAT.contains(&self)
    }

    /// True for the fused substep kernels, which need more than WebGPU's
    /// default limits (`Kernel::supported`).
    pub fn is_fused(self) -> bool {
        matches!(
            self,
            Kernel::SubstepStartRod
                | Kernel::SubstepFinishRod
                | Kernel::SubstepRod
                | Kernel::FrameRod
        )
    }

    /// True for the whole-frame kernels, built from the module whose
    /// substep values come from the frame's table rather than `params`
    /// (`shader_variant` with `frame`); their entry points are in that
    /// module only (`Kernel::source`).
    pub fn is_frame(self) -> bool {
        self == Kernel::FrameRod
    }

    /// The WGSL of the module the kernel is built from on a device without
    /// the optional features: `shader_source()`, or for the whole-frame
    /// kernel its variant (`is_frame`).
    pub fn source(self) -> String {
        shader_variant(Variant {
            frame: self.is_frame(),
            ..Variant::default()
        })
    }

    /// The bindings of group 1 the kernel reads or writes (see
    /// `binding_kind`); tests/gpu_layout.rs checks them against what each
    /// entry point uses.
    pub fn bindings(self) -> &'static [u32] {
        use binding::*;
        match self {
            Kernel::FramesRod => &[POS, FRAME, CLAMPS],
            Kernel::TwistRod => &[POS, FRAME, SCRATCH, STATS],
            Kernel::ForcesRod => &[POS, VEL, FRAME, SCRATCH],
            Kernel::Integrate => &[POS, VEL, POS_UNC, SCRATCH, CLAMPS],
            Kernel::ProjectJacobi => &[SRC, DST, CONTACTS],
            Kernel::ProjectFastRod => &[POS, SCRATCH, STATS, CONTACTS],
            Kernel::SaveStart => &[POS, POS_START],
            Kernel::ProjectShakeRod => &[POS, POS_START, SCRATCH, STATS, CONTACTS],
            Kernel::ProjectVelocity => &[POS, VEL, POS_UNC, SCRATCH, CONTACTS],
            Kernel::Contact | Kernel::ContactRod => {
                &[POS, VEL, POS_UNC, STATS, CONTACTS, COLLIDERS, SDF]
            }
            Kernel::ContactEdgesEven | Kernel::ContactEdgesOdd => {
                &[POS, VEL, POS_UNC, CONTACTS, COLLIDERS]
            }
            Kernel::GridClear => &[GRID],
            Kernel::GridSplat => &[POS, VEL, GRID_VERTEX, GRID_GROUPS, GRID],
            Kernel::GridVelocity => &[GRID_GROUPS, GRID, GRID_FIELDS],
            Kernel::GridBlend => &[POS, VEL, GRID_VERTEX, GRID_GROUPS, GRID_FIELDS],
            Kernel::GridExtent => &[GRID_GROUPS, GRID, GRID_DISPATCH, GRID_REGION],
            Kernel::GridVelocityBox => &[GRID, GRID_FIELDS, GRID_REGION],
            Kernel::GridCellCount => &[
                POS,
                GRID_VERTEX,
                GRID_GROUPS,
                GRID,
                GRID_DISPATCH,
                GRID_CELLS,
                GRID_SORT,
            ],
            Kernel::GridCellScan | Kernel::GridCellScanBlocks => &[GRID_CELLS],
            Kernel::GridCellScatter => &[GRID_CELLS, GRID_SORT],
            Kernel::GridSplatSorted => {
                &[VEL, GRID_VERTEX, GRID_GROUPS, GRID, GRID_CELLS, GRID_SORT]
            }
            Kernel::WorldPositions => &[POS, WORLD_POS],
            // The walked splat also raises its box (`grid_box_raise`).
            Kernel::SubstepStartRod => &[
                POS,
                VEL,
                POS_UNC,
                FRAME,
                CLAMPS,
                SCRATCH,
                POS_START,
                GRID_VERTEX,
                GRID_GROUPS,
                GRID,
                GRID_DISPATCH,
            ],
            Kernel::SubstepFinishRod => &[
                POS,
                VEL,
                POS_UNC,
                FRAME,
                CLAMPS,
                SCRATCH,
                STATS,
                CONTACTS,
                COLLIDERS,
                SDF,
                POS_START,
                GRID_VERTEX,
                GRID_GROUPS,
                GRID_FIELDS,
            ],
            Kernel::SubstepRod => &[
                POS, VEL, POS_UNC, FRAME, CLAMPS, SCRATCH, STATS, CONTACTS, COLLIDERS, SDF,
                POS_START,
            ],
            Kernel::FrameRod => &[
                POS,
                VEL,
                POS_UNC,
                FRAME,
                CLAMPS,
                SCRATCH,
                STATS,
                CONTACTS,
                COLLIDERS,
                SDF,
                POS_START,
                FRAME_STEPS,
            ],
        }
    }

    /// Storage buffers the kernel binds in both groups.
    pub fn storage_buffers(self) -> usize {
        WORLD_STORAGE.len()
            + self
                .bindings()
                .iter()
                .filter(|&&b| matches!(binding_kind(b), BindingKind::Storage { .. }))
                .count()
    }
}
