//! Rust twins of the WGSL structs in `shaders/common.wgsl`, byte for byte.
//! Each has a `const` size assertion here; `tests/gpu_layout.rs` checks every
//! member offset against the layout naga computes for the WGSL.
//! Vectors are `[f32; 4]` (WGSL `vec4<f32>`, 16-byte aligned); no `vec3` is shared.

use bytemuck::{Pod, Zeroable};

/// Marks "no clamp" in `GpuRod::start_clamp`, `GpuVertexRest::clamp`.
pub const NONE: u32 = u32::MAX;

/// WGSL `Step`: the values of one substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuStep {
    pub gravity: [f32; 4],
    pub wind: [f32; 4],
    pub gust: [f32; 4],
    pub h: f32,
    pub time: f32,
    pub wind_phase: f32,
    pub relaxation: f32,
    pub rod_count: u32,
    pub vertex_count: u32,
    pub anchor_count: u32,
    pub slot_start: u32,
    pub slot_end: u32,
    pub twist_max_iterations: u32,
    pub twist_tolerance: f32,
    pub fast_max_iterations: u32,
    pub fast_tolerance: f32,
    /// 0: plain projection, contact with friction; 1: filtered projection,
    /// contact without friction.
    pub phase: u32,
    /// Interaction groups (`grid_groups` entries per substep).
    pub group_count: u32,
    /// Grid nodes of all groups.
    pub node_count: u32,
}
const _: () = assert!(size_of::<GpuStep>() == 112);

/// WGSL `Rod`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuRod {
    pub vertex_offset: u32,
    pub vertex_count: u32,
    pub start_clamp: u32,
    pub end_clamp: u32,
    pub bending: [f32; 4],
    pub origin: [f32; 4],
    pub drag: f32,
    /// Section radius for contact (m).
    pub radius: f32,
    /// Indexed by pack, not by rod: one past the last rod of workgroup pack
    /// `r` of the packed kernels (`super::pack`), 0 past the last pack.
    pub pack_end: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<GpuRod>() == 64);

/// WGSL `VertexRest`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuVertexRest {
    pub rest_kappa: [f32; 4],
    pub voronoi: f32,
    pub mass: f32,
    pub inv_mass: f32,
    pub rest_len: f32,
    pub rod: u32,
    pub clamp: u32,
    pub clamp_slot: u32,
    pub _pad0: u32,
}
const _: () = assert!(size_of::<GpuVertexRest>() == 48);

/// WGSL `Clamp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuClamp {
    pub local_pos0: [f32; 4],
    pub local_pos1: [f32; 4],
    pub local_m1: [f32; 4],
    pub anchor: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<GpuClamp>() == 64);

/// WGSL `Pose`: `x ↦ rotation·(x − pivot) + offset`, offset = pivot + translation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuPose {
    pub rotation: [f32; 4],
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
    pub tangent: [f32; 4],
    pub ref_u: [f32; 4],
}
const _: () = assert!(size_of::<GpuEdgeFrame>() == 32);

/// WGSL `Collider` (see `crate::contact::Collider`): points relative to the
/// anchor pivot in the anchor's rest frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuCollider {
    /// Sphere centre, capsule end a, plane point, SDF grid origin (m).
    pub p0: [f32; 4],
    /// Capsule end b, plane unit normal.
    pub p1: [f32; 4],
    pub kind: u32,
    pub anchor: u32,
    pub radius: f32,
    pub cell: f32,
    pub friction: f32,
    pub static_friction: f32,
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
    pub count: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
    pub items: [GpuCollider; crate::contact::MAX_COLLIDERS],
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
    pub kb: [f32; 4],
    pub g: [f32; 4],
    pub s: [f32; 4],
    pub force: [f32; 4],
}
const _: () = assert!(size_of::<GpuScratch>() == 64);

/// WGSL `GridVertex` (`crate::interaction::GridVertex`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuGridVertex {
    /// Interaction group, or `NONE`.
    pub group: u32,
    pub mass_q: u32,
    pub friction: f32,
    pub _pad0: u32,
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
    pub cell: f32,
    pub pressure_scale: f32,
    pub volume_step: f32,
    pub max_push: f32,
}
const _: () = assert!(size_of::<GpuGridGroup>() == 48);

/// Words per grid node in the `grid` buffer, and the counters after the nodes.
pub const GRID_WORDS_PER_NODE: usize = 8;
pub const GRID_VMAX: usize = 0;
pub const GRID_OVERFLOW: usize = 1;
pub const GRID_OUTSIDE: usize = 2;
pub const GRID_COUNTERS: usize = 4;

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
                node_count
            ]
        ),
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
                pack_end,
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
        layout!(
            "GridVertex",
            GpuGridVertex,
            [group, mass_q, friction, _pad0]
        ),
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

/// The WGSL module every kernel is an entry point of: common definitions
/// first, then one file per kernel family (WGSL has no includes).
pub const SHADER_SOURCE: &str = concat!(
    include_str!("../../shaders/common.wgsl"),
    include_str!("../../shaders/frames.wgsl"),
    include_str!("../../shaders/twist.wgsl"),
    include_str!("../../shaders/forces.wgsl"),
    include_str!("../../shaders/integrate.wgsl"),
    include_str!("../../shaders/project.wgsl"),
    include_str!("../../shaders/project_pack.wgsl"),
    include_str!("../../shaders/contact.wgsl"),
    include_str!("../../shaders/grid.wgsl"),
    include_str!("../../shaders/world.wgsl"),
);

/// A compute kernel: its entry point (also the pipeline label), what one
/// invocation handles, and which state bindings of group 1 it uses
/// (`(binding, read_only)`; see `shaders/common.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Bishop frames, one workgroup per pack of rods (parallel scan of the
    /// transports as quaternions).
    Frames,
    /// Bishop frames, one invocation walking each rod (`GpuSimulator::packed`).
    FramesRod,
    /// Quasistatic twist (Newton), one workgroup per pack of rods (scans
    /// for the definiteness test and the sums, parallel cyclic reduction).
    Twist,
    /// Quasistatic twist, one invocation walking each rod (`GpuSimulator::packed`).
    TwistRod,
    /// Forces, one workgroup per pack of rods (parallel scan of the holonomy sums).
    Forces,
    /// Forces, one invocation walking each rod (`GpuSimulator::packed`).
    ForcesRod,
    Integrate,
    ProjectJacobi,
    /// Fast projection, one workgroup per pack of rods (parallel cyclic reduction).
    ProjectFast,
    /// Fast projection, one invocation walking each rod (`GpuSimulator::packed`).
    ProjectFastRod,
    SaveStart,
    ProjectShake,
    ProjectShakeRod,
    ProjectVelocity,
    /// Contact of each vertex with the colliders, one invocation per vertex.
    Contact,
    /// Contact of the edges starting at an even vertex of their rod with
    /// spheres and capsules, one invocation per vertex.
    ContactEdgesEven,
    /// The same for the edges starting at an odd vertex, after the even ones.
    ContactEdgesOdd,
    /// The three contact stages, one invocation walking each rod
    /// (`GpuSimulator::packed`).
    ContactRod,
    GridClear,
    GridSplat,
    GridVelocity,
    GridBlend,
    /// World positions for a renderer, once per frame when asked for.
    WorldPositions,
}

/// Group-1 bindings, as numbered in `shaders/common.wgsl`.
pub mod binding {
    pub const POS: u32 = 0;
    pub const VEL: u32 = 1;
    pub const POS_UNC: u32 = 2;
    pub const FRAME: u32 = 3;
    pub const CLAMPS: u32 = 4;
    pub const SCRATCH: u32 = 5;
    pub const STATS: u32 = 6;
    pub const SRC: u32 = 7;
    pub const DST: u32 = 8;
    pub const CONTACTS: u32 = 9;
    /// A uniform buffer, not storage.
    pub const COLLIDERS: u32 = 10;
    /// A 3D texture (`texture_3d<f32>`, R32Float), not a buffer.
    pub const SDF: u32 = 11;
    pub const GRID_VERTEX: u32 = 12;
    pub const GRID_GROUPS: u32 = 13;
    pub const GRID: u32 = 14;
    pub const GRID_FIELDS: u32 = 15;
    pub const POS_START: u32 = 16;
    pub const WORLD_POS: u32 = 17;
}

/// What a group-1 binding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    Storage { read_only: bool },
    Uniform,
    Texture3d,
}

/// The kind of each group-1 binding (as declared in `shaders/common.wgsl`).
pub fn binding_kind(b: u32) -> BindingKind {
    use binding::*;
    match b {
        SRC | CLAMPS | GRID_VERTEX | GRID_GROUPS => BindingKind::Storage { read_only: true },
        COLLIDERS => BindingKind::Uniform,
        SDF => BindingKind::Texture3d,
        _ => BindingKind::Storage { read_only: false },
    }
}

/// Group-0 (`world`) storage bindings, shared by every kernel.
pub const WORLD_STORAGE: [u32; 3] = [1, 2, 4];

impl Kernel {
    pub const ALL: [Kernel; 23] = [
        Kernel::Frames,
        Kernel::FramesRod,
        Kernel::Twist,
        Kernel::TwistRod,
        Kernel::Forces,
        Kernel::ForcesRod,
        Kernel::Integrate,
        Kernel::ProjectJacobi,
        Kernel::ProjectFast,
        Kernel::ProjectFastRod,
        Kernel::SaveStart,
        Kernel::ProjectShake,
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
        Kernel::WorldPositions,
    ];

    pub fn entry_point(self) -> &'static str {
        match self {
            Kernel::Frames => "frames",
            Kernel::FramesRod => "frames_rod",
            Kernel::Twist => "twist",
            Kernel::TwistRod => "twist_rod",
            Kernel::Forces => "forces",
            Kernel::ForcesRod => "forces_rod",
            Kernel::Integrate => "integrate",
            Kernel::ProjectJacobi => "project_jacobi",
            Kernel::ProjectFast => "project_fast",
            Kernel::ProjectFastRod => "project_fast_rod",
            Kernel::SaveStart => "save_start",
            Kernel::ProjectShake => "project_shake",
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
            Kernel::WorldPositions => "world_positions",
        }
    }

    /// True when one invocation handles a grid node.
    pub fn per_node(self) -> bool {
        matches!(self, Kernel::GridClear | Kernel::GridVelocity)
    }

    /// True when one invocation handles a rod, false for a vertex.
    pub fn per_rod(self) -> bool {
        matches!(self, Kernel::FramesRod | Kernel::Twist | Kernel::ForcesRod)
    }

    /// True when one workgroup handles a pack of rods (`super::pack`).
    pub fn per_pack(self) -> bool {
        matches!(
            self,
            Kernel::Frames
                | Kernel::Twist
                | Kernel::Forces
                | Kernel::ProjectFast
                | Kernel::ProjectShake
        )
    }

    /// The bindings of group 1 the kernel reads or writes (see
    /// `binding_kind`); tests/gpu_layout.rs checks them against what each
    /// entry point uses.
    pub fn bindings(self) -> &'static [u32] {
        use binding::*;
        match self {
            Kernel::Frames | Kernel::FramesRod => &[POS, FRAME, CLAMPS],
            Kernel::Twist | Kernel::TwistRod => &[POS, FRAME, SCRATCH, STATS],
            Kernel::Forces | Kernel::ForcesRod => &[POS, VEL, FRAME, SCRATCH],
            Kernel::Integrate => &[POS, VEL, POS_UNC, SCRATCH, CLAMPS],
            Kernel::ProjectJacobi => &[SRC, DST, CONTACTS],
            // The pack kernels share one function, which reads `pos_start` for SHAKE.
            Kernel::ProjectFast => &[POS, POS_START, SCRATCH, STATS, CONTACTS],
            Kernel::ProjectFastRod => &[POS, SCRATCH, STATS, CONTACTS],
            Kernel::SaveStart => &[POS, POS_START],
            Kernel::ProjectShake | Kernel::ProjectShakeRod => {
                &[POS, POS_START, SCRATCH, STATS, CONTACTS]
            }
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
            Kernel::WorldPositions => &[POS, WORLD_POS],
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
