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
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
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
    pub _pad0: u32,
    pub _pad1: u32,
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

/// WGSL `EdgeFrame`: tangent with θ in `w`, Bishop vector u.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuEdgeFrame {
    pub tangent: [f32; 4],
    pub ref_u: [f32; 4],
}
const _: () = assert!(size_of::<GpuEdgeFrame>() == 32);

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
                _pad0,
                _pad1,
                _pad2
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
                _pad0,
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
        layout!("EdgeFrame", GpuEdgeFrame, [tangent, ref_u]),
        layout!("Scratch", GpuScratch, [kb, g, s, force]),
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
);

/// A compute kernel: its entry point (also the pipeline label), what one
/// invocation handles, and which state bindings of group 1 it uses
/// (`(binding, read_only)`; see `shaders/common.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    Frames,
    Twist,
    Forces,
    Integrate,
    ProjectJacobi,
    ProjectFast,
    ProjectVelocity,
}

/// Group-1 bindings, as numbered in `shaders/common.wgsl`.
pub mod binding {
    pub const POS: u32 = 0;
    pub const VEL: u32 = 1;
    pub const POS_UNC: u32 = 2;
    pub const FRAME: u32 = 3;
    pub const SCRATCH: u32 = 5;
    pub const STATS: u32 = 6;
    pub const SRC: u32 = 7;
    pub const DST: u32 = 8;
}

impl Kernel {
    pub const ALL: [Kernel; 7] = [
        Kernel::Frames,
        Kernel::Twist,
        Kernel::Forces,
        Kernel::Integrate,
        Kernel::ProjectJacobi,
        Kernel::ProjectFast,
        Kernel::ProjectVelocity,
    ];

    pub fn entry_point(self) -> &'static str {
        match self {
            Kernel::Frames => "frames",
            Kernel::Twist => "twist",
            Kernel::Forces => "forces",
            Kernel::Integrate => "integrate",
            Kernel::ProjectJacobi => "project_jacobi",
            Kernel::ProjectFast => "project_fast",
            Kernel::ProjectVelocity => "project_velocity",
        }
    }

    /// True when one invocation handles a rod, false for a vertex.
    pub fn per_rod(self) -> bool {
        matches!(
            self,
            Kernel::Frames | Kernel::Twist | Kernel::Forces | Kernel::ProjectFast
        )
    }

    /// The state bindings (group 1) the kernel reads or writes. Every one is
    /// declared `read_write` in WGSL except `src`.
    pub fn bindings(self) -> &'static [u32] {
        use binding::*;
        match self {
            Kernel::Frames => &[POS, FRAME],
            Kernel::Twist => &[POS, FRAME, SCRATCH, STATS],
            Kernel::Forces => &[POS, VEL, FRAME, SCRATCH],
            Kernel::Integrate => &[POS, VEL, POS_UNC, SCRATCH],
            Kernel::ProjectJacobi => &[SRC, DST],
            Kernel::ProjectFast => &[POS, SCRATCH, STATS],
            Kernel::ProjectVelocity => &[POS, VEL, POS_UNC],
        }
    }
}
