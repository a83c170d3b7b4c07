//! `GpuSimulator`: GPU buffers of a `RodSet` and its `State`, the pipelines,
//! and the dispatch sequence of a substep — the same order as `substep`
//! in `src/cpu/mod.rs`: forces, [save_start], integrate, [grid], projection,
//! [contact], velocity update, frames, twist.

use std::collections::HashMap;

use glam::{DVec3, Vec3};
use wgpu::util::DeviceExt;

use super::layout::{
    BindingKind, GRID_COUNTERS, GRID_OUTSIDE, GRID_OVERFLOW, GRID_WORDS_PER_NODE, GpuClamp,
    GpuColliders, GpuContact, GpuEdgeFrame, GpuGridGroup, GpuGridVertex, GpuPose, GpuPosition,
    GpuRod, GpuScratch, GpuStep, GpuVertexRest, Kernel, NONE, SHADER_SOURCE, binding, binding_kind,
};
use super::{GpuContext, GpuError};
use crate::contact::{MAX_COLLIDERS, Shape};
use crate::cpu::contact::Contact;
use crate::cpu::grid::GridNodes;
use crate::cpu::{Diagnostics, Unstable, check_state, diagnostics_of};
use crate::params::{Projection, SimParams};
use crate::rods::{EndCondition, RodSet, State};

/// Invocations per workgroup of every kernel (`WORKGROUP` in shaders/common.wgsl).
pub const WORKGROUP: u32 = 64;
/// Storage buffers one kernel binds at most (`Kernel::storage_buffers`),
/// within WebGPU's default limit so a caller's default device will do.
const STORAGE_BUFFERS_NEEDED: u32 = 8;

/// The buffers holding per-vertex positions, as the Jacobi ping-pong names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexBuffer {
    /// `pos` (P): the positions, after projection.
    Pos,
    /// `pos_unc` (U): unconstrained positions of the last `integrate`.
    Unconstrained,
    /// The second ping-pong buffer (Q) of the Jacobi iterations.
    Tmp,
    /// `pos_start`: positions at the start of the substep (`save_start`).
    Start,
}

/// One Jacobi iteration reads one vertex buffer and writes another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JacobiPass {
    pub src: VertexBuffer,
    pub dst: VertexBuffer,
}

/// The passes of `n` Jacobi iterations starting from the unconstrained
/// positions and ending in `pos`: U→P, P→Q, Q→P… for odd `n`, U→Q, Q→P… for even.
/// The passes of the second (filtered) projection after contact: from `pos`
/// back to `pos`, P→Q, Q→P… (`n` even; see `cpu::jacobi_iterations`).
pub fn jacobi_schedule_from_pos(n: u32) -> Vec<JacobiPass> {
    use VertexBuffer::*;
    (0..n)
        .map(|k| {
            if k % 2 == 0 {
                JacobiPass { src: Pos, dst: Tmp }
            } else {
                JacobiPass { src: Tmp, dst: Pos }
            }
        })
        .collect()
}

pub fn jacobi_schedule(n: u32) -> Vec<JacobiPass> {
    use VertexBuffer::*;
    let mut out = Vec::with_capacity(n as usize);
    let mut src = Unconstrained;
    for k in 0..n {
        let dst = if (n - 1 - k).is_multiple_of(2) {
            Pos
        } else {
            Tmp
        };
        out.push(JacobiPass { src, dst });
        src = dst;
    }
    out
}

struct Buffers {
    steps: wgpu::Buffer,
    rods: wgpu::Buffer,
    rest: wgpu::Buffer,
    clamps: wgpu::Buffer,
    poses: wgpu::Buffer,
    pos: wgpu::Buffer,
    vel: wgpu::Buffer,
    pos_unc: wgpu::Buffer,
    pos_tmp: wgpu::Buffer,
    /// Positions at the start of the substep (`save_start`), for SHAKE.
    pos_start: wgpu::Buffer,
    frame: wgpu::Buffer,
    scratch: wgpu::Buffer,
    stats: wgpu::Buffer,
    contacts: wgpu::Buffer,
    colliders: wgpu::Buffer,
    grid_vertex: wgpu::Buffer,
    /// `group_count` `GridGroup`s per substep of the frame.
    grid_groups: wgpu::Buffer,
    /// Node accumulators then counters (`GRID_WORDS_PER_NODE`, `GRID_COUNTERS`).
    grid: wgpu::Buffer,
    grid_fields: wgpu::Buffer,
    /// Every SDF collider's grid stacked along z (1×1×1 when there is none).
    sdf: wgpu::Texture,
    readback: wgpu::Buffer,
    /// Timestamps at the start and end of a frame's compute pass, where the
    /// device has `TIMESTAMP_QUERY`.
    timestamps: Option<(wgpu::QuerySet, wgpu::Buffer)>,
}

/// The simulator on the GPU. Rest data and state live in GPU buffers; `step`
/// records a whole frame into one submission and reads nothing back.
pub struct GpuSimulator {
    pub rods: RodSet,
    pub params: SimParams,
    /// Simulated time (s), kept in f64 on the host.
    pub time: f64,
    /// Frames (of `params.dt`) taken so far.
    pub step_count: u64,
    ctx: GpuContext,
    buffers: Buffers,
    pipelines: HashMap<Kernel, wgpu::ComputePipeline>,
    world: wgpu::BindGroup,
    state_groups: HashMap<Kernel, wgpu::BindGroup>,
    jacobi_groups: HashMap<JacobiPass, wgpu::BindGroup>,
    step_stride: u64,
    world_layout: wgpu::BindGroupLayout,
    /// Substeps and anchors the `steps` and `poses` buffers hold.
    capacity: (u32, usize),
    /// Per edge of the `RodSet` (flat edge order), its index in GPU edge buffers.
    edge_index: Vec<usize>,
    /// Per vertex, the origin its GPU position is relative to.
    vertex_origin: Vec<DVec3>,
    /// Per interaction group, its first node in the `grid` buffer; last =
    /// all groups' nodes.
    node_offset: Vec<usize>,
    /// Workgroup packs of the per-pack kernels (`super::pack`).
    pack_count: u32,
    /// Which form of the fast and SHAKE projections runs (`set_packed`).
    packed: bool,
    /// Group-1 layouts of the kernels that bind `grid_groups`, whose bind
    /// groups are remade when that buffer grows.
    grid_layouts: HashMap<Kernel, wgpu::BindGroupLayout>,
    /// What the substeps were last resolved for (`stability::Checked`).
    checked: crate::stability::Checked,
}

fn vec4(v: DVec3, w: f32) -> [f32; 4] {
    [v.x as f32, v.y as f32, v.z as f32, w]
}

fn dvec3(v: [f32; 4]) -> DVec3 {
    Vec3::new(v[0], v[1], v[2]).as_dvec3()
}

/// Pose of every anchor at time `t`, as `x ↦ R (x − pivot) + offset`.
fn poses_at(rods: &RodSet, t: f64) -> Vec<GpuPose> {
    rods.anchors
        .iter()
        .map(|a| {
            let p = a.pose(t);
            let offset = p.pivot + p.translation;
            let q = p.rotation.as_quat();
            GpuPose {
                rotation: [q.x, q.y, q.z, q.w],
                offset: vec4(offset, 0.0),
            }
        })
        .collect()
}

impl GpuSimulator {
    /// Upload rods and state, build the pipelines, and put the material frame
    /// in quasistatic equilibrium (as `CpuSimulator::new`).
    pub fn new(
        ctx: &GpuContext,
        rods: RodSet,
        state: State,
        params: SimParams,
    ) -> Result<Self, GpuError> {
        let device = &ctx.device;
        let limits = device.limits();
        let nv = rods.vertex_count().max(1);
        let check = |buffer: &'static str, per_item: usize, items: usize| {
            let bytes = (per_item * items) as u64;
            let (limit_name, limit) =
                if limits.max_storage_buffer_binding_size < limits.max_buffer_size {
                    (
                        "max_storage_buffer_binding_size",
                        limits.max_storage_buffer_binding_size,
                    )
                } else {
                    ("max_buffer_size", limits.max_buffer_size)
                };
            if bytes > limit {
                return Err(GpuError::TooLarge {
                    buffer,
                    per_item,
                    items,
                    bytes,
                    limit_name,
                    limit,
                });
            }
            Ok(())
        };
        // Largest per-vertex buffer first.
        check("scratch", size_of::<GpuScratch>(), nv)?;
        check("rest", size_of::<GpuVertexRest>(), nv)?;
        check("frame", size_of::<GpuEdgeFrame>(), nv)?;
        check("rods", size_of::<GpuRod>(), rods.rod_count())?;
        let mut node_offset = vec![0usize];
        for g in &rods.interaction.groups {
            let n = g.dims.iter().map(|&d| d as usize).product::<usize>();
            node_offset.push(node_offset.last().unwrap() + n);
        }
        let node_count = *node_offset.last().unwrap();
        check_grid_size(node_count, &limits)?;
        let sdf_depth: u32 = rods
            .colliders
            .iter()
            .filter_map(|c| match &c.shape {
                Shape::Sdf(g) => Some(g.dims[2]),
                _ => None,
            })
            .sum();
        if sdf_depth > limits.max_texture_dimension_3d {
            return Err(GpuError::Limit {
                limit_name: "max_texture_dimension_3d (SDF grids stacked along z)",
                have: limits.max_texture_dimension_3d as u64,
                need: sdf_depth as u64,
            });
        }
        if limits.max_storage_buffers_per_shader_stage < STORAGE_BUFFERS_NEEDED {
            return Err(GpuError::Limit {
                limit_name: "max_storage_buffers_per_shader_stage",
                have: limits.max_storage_buffers_per_shader_stage as u64,
                need: STORAGE_BUFFERS_NEEDED as u64,
            });
        }
        // Dispatches spread over two dimensions of workgroups.
        let groups = (nv as u64).div_ceil(WORKGROUP as u64);
        let per_dim = limits.max_compute_workgroups_per_dimension as u64;
        if groups > per_dim * per_dim {
            return Err(GpuError::Limit {
                limit_name: "max_compute_workgroups_per_dimension",
                have: per_dim,
                need: (groups as f64).sqrt().ceil() as u64,
            });
        }
        if limits.max_bind_groups < 2 {
            return Err(GpuError::Limit {
                limit_name: "max_bind_groups",
                have: limits.max_bind_groups as u64,
                need: 2,
            });
        }
        let align = limits.min_uniform_buffer_offset_alignment as u64;
        let step_stride = (size_of::<GpuStep>() as u64).div_ceil(align) * align;
        let step_capacity = params.substeps.max(1);

        // Each rod's positions are stored relative to its first vertex at the
        // start (rounded to f32, so host and GPU agree on it exactly).
        let origin: Vec<DVec3> = (0..rods.rod_count())
            .map(|r| state.pos[rods.vertex_offset[r]].as_vec3().as_dvec3())
            .collect();
        // Rest data.
        let mut clamps = Vec::new();
        let mut gpu_rods = Vec::with_capacity(rods.rod_count());
        let mut rest = vec![
            GpuVertexRest {
                clamp: NONE,
                ..Default::default()
            };
            nv
        ];
        let mut edge_index = Vec::with_capacity(rods.edge_count());
        for (r, &rod_origin) in origin.iter().enumerate() {
            let v = rods.vertices(r);
            let e = rods.edges(r);
            let n = v.len();
            let mut clamp_of = |cond: EndCondition, first: usize| match cond {
                EndCondition::Free => NONE,
                EndCondition::Clamped(c) => {
                    let idx = clamps.len() as u32;
                    let pivot = rods.anchors[c.anchor].pivot;
                    clamps.push(GpuClamp {
                        local_pos0: vec4(c.local_pos[0] - pivot, 0.0),
                        local_pos1: vec4(c.local_pos[1] - pivot, 0.0),
                        local_m1: vec4(c.local_m1, 0.0),
                        anchor: c.anchor as u32,
                        ..Default::default()
                    });
                    for k in 0..2 {
                        let g = &mut rest[v.start + first + k];
                        g.clamp = idx;
                        g.clamp_slot = k as u32;
                    }
                    idx
                }
            };
            let start_clamp = clamp_of(rods.start[r], 0);
            let end_clamp = clamp_of(rods.end[r], n - 2);
            let m = &rods.material[r];
            gpu_rods.push(GpuRod {
                vertex_offset: v.start as u32,
                vertex_count: n as u32,
                start_clamp,
                end_clamp,
                bending: [
                    m.bending[0] as f32,
                    m.bending[1] as f32,
                    m.bending[2] as f32,
                    m.twist as f32,
                ],
                origin: vec4(rod_origin, 0.0),
                drag: m.drag as f32,
                radius: m.radius as f32,
                ..Default::default()
            });
            for (i, vi) in v.clone().enumerate() {
                let k = rods.rest_kappa[vi];
                let g = &mut rest[vi];
                g.rest_kappa = [k[0].x as f32, k[0].y as f32, k[1].x as f32, k[1].y as f32];
                g.voronoi = rods.voronoi[vi] as f32;
                g.mass = rods.mass[vi] as f32;
                g.inv_mass = rods.inv_mass[vi] as f32;
                g.rest_len = if i + 1 < n {
                    rods.rest_len[e.start + i] as f32
                } else {
                    0.0
                };
                g.rod = r as u32;
            }
            edge_index.extend((0..n - 1).map(|j| v.start + j));
        }
        if clamps.is_empty() {
            clamps.push(GpuClamp::default());
        }
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let init = |label: &str, contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: storage,
            })
        };
        let zeroed = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let pack_ends =
            super::pack::pack_ends((0..rods.rod_count()).map(|r| rods.vertices(r).len()));
        for (rod, &end) in gpu_rods.iter_mut().zip(&pack_ends) {
            rod.pack_end = end;
        }
        let pack_count = pack_ends.len() as u32;
        let v16 = 16 * nv as u64;
        let positions = (nv * size_of::<GpuPosition>()) as u64;
        let (gpu_colliders, sdf_atlas) = colliders_of(&rods);
        // Allocation failures are reported as an error, not a panic.
        let oom_scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let pose_anchors = rods.anchors.len().max(1);
        let pose_count = pose_anchors * (step_capacity as usize + 1);
        let buffers = Buffers {
            steps: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("steps"),
                size: step_stride * 2 * step_capacity as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            rods: init("rods", bytemuck::cast_slice(&gpu_rods)),
            rest: init("rest", bytemuck::cast_slice(&rest)),
            clamps: init("clamps", bytemuck::cast_slice(&clamps)),
            poses: zeroed("poses", (pose_count * size_of::<GpuPose>()) as u64),
            pos: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("pos"),
                size: positions,
                // VERTEX too: a renderer may draw straight from it.
                usage: storage | wgpu::BufferUsages::VERTEX,
                mapped_at_creation: false,
            }),
            vel: zeroed("vel", v16),
            pos_unc: zeroed("pos_unc", positions),
            pos_tmp: zeroed("pos_tmp", positions),
            pos_start: zeroed("pos_start", positions),
            frame: zeroed("frame", (nv * size_of::<GpuEdgeFrame>()) as u64),
            scratch: zeroed("scratch", (nv * size_of::<GpuScratch>()) as u64),
            stats: zeroed("stats", 32),
            contacts: zeroed("contacts", 2 * v16),
            grid_vertex: init("grid_vertex", bytemuck::cast_slice(&grid_vertices(&rods))),
            grid_groups: zeroed(
                "grid_groups",
                (step_capacity as usize
                    * rods.interaction.groups.len().max(1)
                    * size_of::<GpuGridGroup>()) as u64,
            ),
            grid: zeroed(
                "grid",
                ((node_count * GRID_WORDS_PER_NODE + GRID_COUNTERS) * 4) as u64,
            ),
            grid_fields: zeroed("grid_fields", (node_count.max(1) * 16) as u64),
            colliders: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("colliders"),
                contents: bytemuck::bytes_of(&gpu_colliders),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            }),
            sdf: sdf_texture(device, &ctx.queue, &sdf_atlas),
            // Sized for the state (`frame` and the positions are the
            // largest, 32 B per vertex); reading the scratch buffer (tests)
            // uses a temporary one.
            readback: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: (nv * size_of::<GpuEdgeFrame>()) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            timestamps: device
                .features()
                .contains(wgpu::Features::TIMESTAMP_QUERY)
                .then(|| {
                    let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("frame timestamps"),
                        ty: wgpu::QueryType::Timestamp,
                        count: 2,
                    });
                    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("timestamp resolve"),
                        size: 16,
                        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    });
                    (set, resolve)
                }),
        };

        if let Some(e) = pollster::block_on(oom_scope.pop()) {
            return Err(GpuError::OutOfMemory {
                bytes: (nv * (4 * size_of::<GpuPosition>() + 16 + 48 + 32 + 64 + 32)) as u64,
                message: e.to_string(),
            });
        }

        // Layouts and pipelines.
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("strands"),
            source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
        });
        let storage_entry = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let world_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("world"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: true,
                        min_binding_size: wgpu::BufferSize::new(size_of::<GpuStep>() as u64),
                    },
                    count: None,
                },
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(4, true),
            ],
        });
        let world = world_group(device, &world_layout, &buffers);
        let sdf_view = buffers
            .sdf
            .create_view(&wgpu::TextureViewDescriptor::default());
        let state_resource = |b: u32| -> wgpu::BindingResource<'_> {
            match b {
                binding::POS => buffers.pos.as_entire_binding(),
                binding::VEL => buffers.vel.as_entire_binding(),
                binding::POS_UNC => buffers.pos_unc.as_entire_binding(),
                binding::POS_START => buffers.pos_start.as_entire_binding(),
                binding::FRAME => buffers.frame.as_entire_binding(),
                binding::CLAMPS => buffers.clamps.as_entire_binding(),
                binding::SCRATCH => buffers.scratch.as_entire_binding(),
                binding::STATS => buffers.stats.as_entire_binding(),
                binding::CONTACTS => buffers.contacts.as_entire_binding(),
                binding::COLLIDERS => buffers.colliders.as_entire_binding(),
                binding::GRID_VERTEX => buffers.grid_vertex.as_entire_binding(),
                binding::GRID_GROUPS => buffers.grid_groups.as_entire_binding(),
                binding::GRID => buffers.grid.as_entire_binding(),
                binding::GRID_FIELDS => buffers.grid_fields.as_entire_binding(),
                binding::SDF => wgpu::BindingResource::TextureView(&sdf_view),
                _ => unreachable!("src/dst are bound per Jacobi pass"),
            }
        };
        let layout_entry = |b: u32| match binding_kind(b) {
            BindingKind::Storage { read_only } => storage_entry(b, read_only),
            BindingKind::Uniform => wgpu::BindGroupLayoutEntry {
                binding: b,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            },
            BindingKind::Texture3d => wgpu::BindGroupLayoutEntry {
                binding: b,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: false },
                    view_dimension: wgpu::TextureViewDimension::D3,
                    multisampled: false,
                },
                count: None,
            },
        };
        let vertex_buffer = |v: VertexBuffer| match v {
            VertexBuffer::Pos => &buffers.pos,
            VertexBuffer::Unconstrained => &buffers.pos_unc,
            VertexBuffer::Tmp => &buffers.pos_tmp,
            VertexBuffer::Start => &buffers.pos_start,
        };
        let mut pipelines = HashMap::new();
        let mut state_groups = HashMap::new();
        let mut jacobi_groups = HashMap::new();
        let mut grid_layouts = HashMap::new();
        for kernel in Kernel::ALL {
            let name = kernel.entry_point();
            let entries: Vec<_> = kernel.bindings().iter().map(|&b| layout_entry(b)).collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(name),
                entries: &entries,
            });
            if kernel.bindings().contains(&binding::GRID_GROUPS) {
                grid_layouts.insert(kernel, layout.clone());
            }
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(name),
                bind_group_layouts: &[Some(&world_layout), Some(&layout)],
                immediate_size: 0,
            });
            pipelines.insert(
                kernel,
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(name),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some(name),
                    compilation_options: Default::default(),
                    cache: None,
                }),
            );
            if kernel == Kernel::ProjectJacobi {
                use VertexBuffer::*;
                for (src, dst) in [
                    (Unconstrained, Pos),
                    (Unconstrained, Tmp),
                    (Pos, Tmp),
                    (Tmp, Pos),
                ] {
                    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some(name),
                        layout: &layout,
                        entries: &[
                            whole(binding::SRC, vertex_buffer(src)),
                            whole(binding::DST, vertex_buffer(dst)),
                            whole(binding::CONTACTS, &buffers.contacts),
                        ],
                    });
                    jacobi_groups.insert(JacobiPass { src, dst }, group);
                }
            } else {
                let entries: Vec<_> = kernel
                    .bindings()
                    .iter()
                    .map(|&b| wgpu::BindGroupEntry {
                        binding: b,
                        resource: state_resource(b),
                    })
                    .collect();
                let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(name),
                    layout: &layout,
                    entries: &entries,
                });
                state_groups.insert(kernel, group);
            }
        }

        let vertex_origin: Vec<DVec3> = (0..rods.rod_count())
            .flat_map(|r| std::iter::repeat_n(origin[r], rods.vertices(r).len()))
            .collect();
        let time = state.time;
        let mut sim = GpuSimulator {
            rods,
            params,
            time,
            step_count: 0,
            checked: Default::default(),
            ctx: ctx.clone(),
            buffers,
            pipelines,
            world,
            state_groups,
            jacobi_groups,
            step_stride,
            world_layout,
            capacity: (step_capacity, pose_anchors),
            edge_index,
            vertex_origin,
            node_offset,
            pack_count,
            packed: ctx.info.device_type != wgpu::DeviceType::Cpu,
            grid_layouts,
        };
        sim.write_state(&state);
        sim.update_material_frame();
        Ok(sim)
    }

    /// The device and queue this simulator runs on.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The per-vertex positions (`GpuPosition`, 32 bytes: whole quanta and
    /// a remainder, the point `cell · POSITION_QUANTUM + rem` relative to the
    /// vertex's rod origin: see `vertex_origins`), for drawing straight from
    /// the simulation without a copy through the CPU (shaders/render.wgsl
    /// reads them so).
    pub fn position_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.pos
    }

    /// Per vertex, the world point its GPU position is relative to (its rod's
    /// first vertex at the start, an f32 value).
    pub fn vertex_origins(&self) -> &[DVec3] {
        &self.vertex_origin
    }

    /// The per-edge frames (`EdgeFrame`: tangent with θ in w, Bishop vector
    /// u; edge j of a rod at the index of its first vertex), for drawing the
    /// material frame.
    pub fn frame_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.frame
    }

    fn step_values(&self, t: f64, h: f64, slot_start: u32, slot_end: u32, phase: u32) -> GpuStep {
        let p = &self.params;
        let w = &p.wind;
        let gust = w.velocity.try_normalize().unwrap_or(DVec3::X);
        let wind_phase = std::f64::consts::TAU * (w.gust_frequency * t).rem_euclid(1.0);
        let (relaxation, fast_tolerance, fast_max_iterations) = match p.projection {
            Projection::Jacobi { relaxation, .. } => (relaxation, 0.0, 0),
            Projection::Fast {
                tolerance,
                max_iterations,
            }
            | Projection::Shake {
                tolerance,
                max_iterations,
            } => (1.0, tolerance, max_iterations),
            Projection::None => (1.0, 0.0, 0),
        };
        GpuStep {
            gravity: vec4(p.gravity, 0.0),
            wind: vec4(w.velocity, w.gust_amplitude as f32),
            gust: vec4(gust, (std::f64::consts::TAU / w.gust_wavelength) as f32),
            h: h as f32,
            time: t as f32,
            wind_phase: wind_phase as f32,
            relaxation: relaxation as f32,
            rod_count: self.rods.rod_count() as u32,
            vertex_count: self.rods.vertex_count() as u32,
            anchor_count: self.rods.anchors.len() as u32,
            slot_start,
            slot_end,
            twist_max_iterations: p.twist_max_iterations,
            twist_tolerance: p.twist_tolerance as f32,
            fast_max_iterations,
            fast_tolerance: fast_tolerance as f32,
            phase,
            group_count: self.rods.interaction.groups.len() as u32,
            node_count: *self.node_offset.last().unwrap() as u32,
        }
    }

    /// Write `substeps` step entries from time `t0` and the anchor poses at
    /// `t0 + k h`, `k = 0..=substeps`.
    fn write_inputs(&mut self, t0: f64, h: f64, substeps: u32) {
        self.ensure_capacity(substeps);
        let q = &self.ctx.queue;
        let mut poses = Vec::new();
        for k in 0..=substeps {
            poses.extend(poses_at(&self.rods, t0 + k as f64 * h));
        }
        if !poses.is_empty() {
            q.write_buffer(&self.buffers.poses, 0, bytemuck::cast_slice(&poses));
        }
        // Two entries per substep, one per phase (`entry`).
        let mut bytes = vec![0u8; (self.step_stride * 2 * substeps.max(1) as u64) as usize];
        for k in 0..substeps {
            for phase in 0..2 {
                let s = self.step_values(t0 + k as f64 * h, h, k, k + 1, phase);
                let at = (entry(k, phase) as u64 * self.step_stride) as usize;
                bytes[at..at + size_of::<GpuStep>()].copy_from_slice(bytemuck::bytes_of(&s));
            }
        }
        q.write_buffer(&self.buffers.steps, 0, &bytes);
        // Each substep's grids, where the CPU puts them: at its end, t + h.
        let groups = &self.rods.interaction.groups;
        if !groups.is_empty() {
            let mut entries = Vec::with_capacity(substeps as usize * groups.len());
            for k in 0..substeps {
                let t = t0 + (k + 1) as f64 * h;
                for (g, offset) in groups.iter().zip(&self.node_offset) {
                    let geo = g.geometry_at(&self.rods.anchors, t);
                    entries.push(GpuGridGroup {
                        origin: [geo.origin[0], geo.origin[1], geo.origin[2], geo.scale()],
                        dims: [geo.dims[0], geo.dims[1], geo.dims[2], *offset as u32],
                        cell: geo.cell,
                        pressure_scale: g.pressure_scale() as f32,
                        volume_step: (g.volume_stiffness * g.cell) as f32,
                        max_push: g.max_push() as f32,
                    });
                }
            }
            q.write_buffer(&self.buffers.grid_groups, 0, bytemuck::cast_slice(&entries));
        }
    }

    /// Grow the `steps` and `poses` buffers when `params.substeps` or the
    /// anchors changed since they were made.
    fn ensure_capacity(&mut self, substeps: u32) {
        let anchors = self.rods.anchors.len().max(1);
        if substeps <= self.capacity.0 && anchors <= self.capacity.1 {
            return;
        }
        let n = substeps.max(self.capacity.0);
        let a = anchors.max(self.capacity.1);
        let device = &self.ctx.device;
        self.buffers.steps = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("steps"),
            size: self.step_stride * 2 * n as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.buffers.poses = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("poses"),
            size: (a * (n as usize + 1) * size_of::<GpuPose>()) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.buffers.grid_groups = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("grid_groups"),
            size: (n as usize
                * self.rods.interaction.groups.len().max(1)
                * size_of::<GpuGridGroup>()) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.world = world_group(device, &self.world_layout, &self.buffers);
        let b = &self.buffers;
        for (kernel, layout) in &self.grid_layouts {
            let entries: Vec<_> = kernel
                .bindings()
                .iter()
                .map(|&k| {
                    let buffer = match k {
                        binding::POS => &b.pos,
                        binding::VEL => &b.vel,
                        binding::GRID_VERTEX => &b.grid_vertex,
                        binding::GRID_GROUPS => &b.grid_groups,
                        binding::GRID => &b.grid,
                        binding::GRID_FIELDS => &b.grid_fields,
                        _ => unreachable!("grid kernels bind only these"),
                    };
                    whole(k, buffer)
                })
                .collect();
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(kernel.entry_point()),
                layout,
                entries: &entries,
            });
            self.state_groups.insert(*kernel, group);
        }
        self.capacity = (n, a);
    }

    fn dispatch(&self, pass: &mut wgpu::ComputePass, kernel: Kernel, entry: u32) {
        self.dispatch_with(pass, kernel, &self.state_groups[&kernel], entry);
    }

    fn dispatch_with(
        &self,
        pass: &mut wgpu::ComputePass,
        kernel: Kernel,
        group: &wgpu::BindGroup,
        entry: u32,
    ) {
        let groups = if kernel.per_pack() {
            self.pack_count
        } else {
            let count = if kernel.per_rod() {
                self.rods.rod_count()
            } else if kernel.per_node() {
                *self.node_offset.last().unwrap()
            } else {
                self.rods.vertex_count()
            } as u32;
            count.div_ceil(WORKGROUP)
        };
        let max = self
            .ctx
            .device
            .limits()
            .max_compute_workgroups_per_dimension;
        let (x, y) = if groups <= max {
            (groups, 1)
        } else {
            (max, groups.div_ceil(max))
        };
        pass.set_pipeline(&self.pipelines[&kernel]);
        pass.set_bind_group(
            0,
            &self.world,
            &[(entry as u64 * self.step_stride) as wgpu::DynamicOffset],
        );
        pass.set_bind_group(1, group, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }

    /// Whether the frames, forces, fast and SHAKE projections run packed
    /// (`Kernel::Frames`, `Kernel::Forces`, parallel scans over each rod)
    /// or walked (`Kernel::FramesRod`, `Kernel::ForcesRod`); for the
    /// projections: one workgroup per
    /// pack of rods, parallel over its vertices, solved by parallel cyclic
    /// reduction (`Kernel::ProjectFast`, depth O(log n) per rod), or one
    /// invocation walking each rod with the Thomas algorithm
    /// (`Kernel::ProjectFastRod`, work O(n)). Packed by default on GPUs;
    /// walked on adapters that are CPUs (lavapipe), where the reduction's
    /// extra work and barriers cost more than the walk: measured with
    /// `strands bench` on lavapipe in docs/BENCHMARKS.md.
    pub fn packed(&self) -> bool {
        self.packed
    }

    /// Choose the form of the frames, forces and projections (`packed`); both give the same
    /// result to f32 rounding (tests/gpu_parity.rs).
    pub fn set_packed(&mut self, packed: bool) {
        self.packed = packed;
    }

    fn projection_kernel(&self, shake: bool) -> Kernel {
        match (shake, self.packed) {
            (false, true) => Kernel::ProjectFast,
            (false, false) => Kernel::ProjectFastRod,
            (true, true) => Kernel::ProjectShake,
            (true, false) => Kernel::ProjectShakeRod,
        }
    }

    fn forces_kernel(&self) -> Kernel {
        if self.packed {
            Kernel::Forces
        } else {
            Kernel::ForcesRod
        }
    }

    fn frames_kernel(&self) -> Kernel {
        if self.packed {
            Kernel::Frames
        } else {
            Kernel::FramesRod
        }
    }

    /// Encode the projection of `phase` (0: from the unconstrained
    /// positions; 1: filtered by the contacts, from `pos`).
    fn encode_project(&self, pass: &mut wgpu::ComputePass, k: u32, phase: u32) {
        let at = entry(k, phase);
        match self.params.projection {
            Projection::None => {}
            Projection::Fast { .. } => self.dispatch(pass, self.projection_kernel(false), at),
            Projection::Shake { .. } => self.dispatch(pass, self.projection_kernel(true), at),
            Projection::Jacobi { iterations, .. } => {
                let n = crate::cpu::jacobi_iterations(iterations, phase);
                let schedule = if phase == 0 {
                    jacobi_schedule(n)
                } else {
                    jacobi_schedule_from_pos(n)
                };
                for p in schedule {
                    self.dispatch_with(pass, Kernel::ProjectJacobi, &self.jacobi_groups[&p], at);
                }
            }
        }
    }

    /// Encode substep `k` (its step values already written), in the order of
    /// `cpu::substep`.
    fn encode_substep(&self, pass: &mut wgpu::ComputePass, k: u32) {
        let at = entry(k, 0);
        self.dispatch(pass, self.forces_kernel(), at);
        if matches!(self.params.projection, Projection::Shake { .. }) {
            self.dispatch(pass, Kernel::SaveStart, at);
        }
        self.dispatch(pass, Kernel::Integrate, at);
        let interaction = self.rods.interaction.is_active();
        if interaction {
            self.dispatch(pass, Kernel::GridClear, at);
            self.dispatch(pass, Kernel::GridSplat, at);
            self.dispatch(pass, Kernel::GridVelocity, at);
            self.dispatch(pass, Kernel::GridBlend, at);
        }
        self.encode_project(pass, k, 0);
        let contact = !self.rods.colliders.is_empty();
        if contact {
            self.dispatch(pass, Kernel::Contact, entry(k, 0));
            self.encode_project(pass, k, 1);
            self.dispatch(pass, Kernel::Contact, entry(k, 1));
        }
        // Always: it also counts the chatter (`project::project_velocity`).
        self.dispatch(pass, Kernel::ProjectVelocity, at);
        self.dispatch(pass, self.frames_kernel(), at);
        self.dispatch(pass, Kernel::Twist, at);
    }

    /// Advance one frame of `params.dt` in `params.substeps` substeps, all
    /// recorded into one submission. Nothing is read back.
    pub fn step(&mut self) {
        self.encode_step(false);
    }

    /// `step`, then wait for it and return the GPU time of its compute pass
    /// (s) from timestamp queries; `None` when the device has no
    /// `TIMESTAMP_QUERY` (time it with a synchronised wall clock instead:
    /// `step` then `wait`).
    pub fn step_timed(&mut self) -> Option<f64> {
        self.encode_step(true);
        let (_, resolve) = self.buffers.timestamps.as_ref()?;
        let t: Vec<u64> = self.read(resolve, 2);
        let period = self.ctx.queue.get_timestamp_period() as f64;
        Some(t[1].saturating_sub(t[0]) as f64 * period * 1e-9)
    }

    /// Whether `step_timed` measures GPU time.
    pub fn has_timestamps(&self) -> bool {
        self.buffers.timestamps.is_some()
    }

    /// Block until the GPU has finished all submitted work.
    pub fn wait(&self) {
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("GPU device lost");
    }

    /// Bytes of GPU memory this simulator allocated (state, rest data,
    /// working memory, staging).
    pub fn gpu_bytes(&self) -> u64 {
        let b = &self.buffers;
        [
            &b.steps,
            &b.rods,
            &b.rest,
            &b.clamps,
            &b.poses,
            &b.pos,
            &b.vel,
            &b.pos_unc,
            &b.pos_tmp,
            &b.pos_start,
            &b.frame,
            &b.scratch,
            &b.stats,
            &b.contacts,
            &b.colliders,
            &b.grid_vertex,
            &b.grid_groups,
            &b.grid,
            &b.grid_fields,
            &b.readback,
        ]
        .iter()
        .map(|x| x.size())
        .sum::<u64>()
            + 4 * b.sdf.width() as u64
                * b.sdf.height() as u64
                * b.sdf.depth_or_array_layers() as u64
    }

    fn encode_step(&mut self, timed: bool) {
        let h = self.params.h();
        let n = self.params.substeps;
        self.write_inputs(self.time, h, n);
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("step"),
            });
        encoder.clear_buffer(&self.buffers.stats, 0, None);
        self.clear_grid_counters(&mut encoder);
        let stamps = self.buffers.timestamps.as_ref().filter(|_| timed);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("step"),
                timestamp_writes: stamps.map(|(set, _)| wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
            for k in 0..n {
                self.encode_substep(&mut pass, k);
            }
        }
        if let Some((set, resolve)) = stamps {
            encoder.resolve_query_set(set, 0..2, resolve, 0);
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.time += h * n as f64;
        self.step_count += 1;
    }

    /// `step`, then read the state back to check it and compute diagnostics
    /// (energies in f64 on the host, iteration counts from the GPU). Before
    /// the step, the substeps are resolved again if `dt`, the substep rule or
    /// a material changed (`stability::Checked`).
    pub fn step_checked(&mut self) -> Result<(State, Diagnostics), Unstable> {
        let (step, time) = (self.step_count + 1, self.time);
        self.params.substeps = self
            .checked
            .recheck(&self.rods, &self.params)
            .map_err(|e| Unstable::step_limit(&self.rods, e, step, time))?;
        self.step();
        let stats: Vec<u32> = self.read(&self.buffers.stats, 8);
        let (state, chatter) = self.read_state_and_chatter();
        let bad = check_state(&self.rods, &self.params, &state);
        let stop = |rod, bad| {
            Unstable::blow_up(
                &self.rods,
                &self.params,
                rod,
                self.step_count,
                self.time,
                bad,
            )
        };
        // An anchor driving its vertices too fast explains whatever else
        // went wrong (as on the CPU).
        if let Some((
            rod,
            b @ crate::cpu::Bad::TooFast {
                anchor: Some(_), ..
            },
        )) = &bad
        {
            return Err(stop(*rod, b.clone()));
        }
        if stats[6] > 0 {
            let rod = (stats[6] / 2 - 1) as usize;
            let failed = crate::cpu::project::FastProjection {
                iterations: stats[1],
                max_strain: f32::from_bits(stats[7]) as f64,
                singular: stats[6] % 2 == 1,
                converged: false,
            };
            let e = Unstable::projection(
                &self.rods,
                &self.params,
                rod,
                failed,
                self.step_count,
                self.time,
            );
            return Err(e);
        }
        if let Some(v) = chatter {
            let rod = self.rods.vertex_offset.partition_point(|&o| o <= v) - 1;
            let vertex = v - self.rods.vertex_offset[rod];
            let e = Unstable::chatter(
                &self.rods,
                &self.params,
                rod,
                vertex,
                self.step_count,
                self.time,
            );
            return Err(e);
        }
        if let Some((rod, b)) = bad {
            return Err(stop(rod, b));
        }
        let counters = self.read_grid_counters();
        if counters[GRID_OVERFLOW] > 0 {
            let node = counters[GRID_OVERFLOW] as usize - 1;
            let group = self.node_offset.partition_point(|&o| o <= node) - 1;
            return Err(Unstable::grid_overflow(
                &self.rods,
                group,
                node - self.node_offset[group],
                self.step_count,
                self.time,
            ));
        }
        if stats[2] > 0 {
            let code = stats[3] - 1;
            let v = (code / MAX_COLLIDERS as u32) as usize;
            let rod = self.rods.vertex_offset.partition_point(|&o| o <= v) - 1;
            let collider = (code % MAX_COLLIDERS as u32) as usize;
            return Err(Unstable::tunnelled(
                &self.rods,
                rod,
                self.step_count,
                self.time,
                crate::cpu::contact::Tunnel {
                    vertex: v - self.rods.vertex_offset[rod],
                    collider,
                    distance: f32::from_bits(stats[4]) as f64,
                    limit: self.rods.colliders[collider].shape.thickness(),
                },
            ));
        }
        let mut d = diagnostics_of(&self.rods, &state, &self.params);
        d.grid_outside = counters[GRID_OUTSIDE] as u64;
        let [twist, projection] = [stats[0], stats[1]];
        d.twist_iterations = twist;
        d.projection_iterations = match self.params.projection {
            Projection::Jacobi { iterations, .. } => {
                crate::cpu::jacobi_iterations_per_substep(&self.rods, iterations)
            }
            _ => projection,
        };
        Ok((state, d))
    }

    /// Run one kernel once from time `t` with substep `h`, anchors posed at
    /// `t` and `t + h` (kernel-by-kernel parity tests). `Kernel::ProjectJacobi`
    /// runs the pass U→P.
    pub fn run_kernel(&mut self, kernel: Kernel, t: f64, h: f64) {
        self.run_kernel_in_phase(kernel, 0, t, h);
    }

    /// `run_kernel` with the step values of `phase` (0 or 1).
    pub fn run_kernel_in_phase(&mut self, kernel: Kernel, phase: u32, t: f64, h: f64) {
        let pass = JacobiPass {
            src: VertexBuffer::Unconstrained,
            dst: VertexBuffer::Pos,
        };
        self.run_one(kernel, pass, phase, t, h);
    }

    /// Run one Jacobi iteration between the given buffers.
    pub fn run_jacobi_pass(&mut self, pass: JacobiPass, t: f64, h: f64) {
        self.run_one(Kernel::ProjectJacobi, pass, 0, t, h);
    }

    /// Run `kernel` once (`jacobi`: its buffers, for `ProjectJacobi` only).
    fn run_one(&mut self, kernel: Kernel, jacobi: JacobiPass, phase: u32, t: f64, h: f64) {
        self.write_inputs(t, h, 1);
        let group = match kernel {
            Kernel::ProjectJacobi => &self.jacobi_groups[&jacobi],
            k => &self.state_groups[&k],
        };
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(kernel.entry_point()),
            });
        encoder.clear_buffer(&self.buffers.stats, 0, None);
        self.clear_grid_counters(&mut encoder);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(kernel.entry_point()),
                timestamp_writes: None,
            });
            self.dispatch_with(&mut pass, kernel, group, entry(0, phase));
        }
        self.ctx.queue.submit([encoder.finish()]);
    }

    /// Quasistatic material frame for the current positions at `self.time`
    /// (Algorithm 1, line 2): `frames` then `twist` with anchors at `time`.
    pub fn update_material_frame(&mut self) {
        // A zero-length substep: slot_end = slot 0 = anchors at `time`.
        let t = self.time;
        self.write_inputs(t, 0.0, 1);
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("update_material_frame"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("update_material_frame"),
                timestamp_writes: None,
            });
            self.dispatch(&mut pass, self.frames_kernel(), 0);
            self.dispatch(&mut pass, Kernel::Twist, 0);
        }
        self.ctx.queue.submit([encoder.finish()]);
    }

    fn read_bytes(&self, buffer: &wgpu::Buffer, size: u64) -> Vec<u8> {
        self.read_bytes_at(buffer, 0, size)
    }

    /// `size` bytes of `buffer` from byte `offset` (a multiple of 4).
    fn read_bytes_at(&self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Vec<u8> {
        let temporary;
        let readback = if size <= self.buffers.readback.size() {
            &self.buffers.readback
        } else {
            temporary = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback (large)"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            &temporary
        };
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("read back"),
            });
        encoder.copy_buffer_to_buffer(buffer, offset, readback, 0, size);
        self.ctx.queue.submit([encoder.finish()]);
        super::read_mapped(&self.ctx.device, readback, size)
    }

    /// Zero the grid's per-frame counters (`GRID_OVERFLOW` on; not the
    /// per-substep nodes and `GRID_VMAX`, which `grid_clear` resets).
    fn clear_grid_counters(&self, encoder: &mut wgpu::CommandEncoder) {
        let at =
            ((*self.node_offset.last().unwrap() * GRID_WORDS_PER_NODE + GRID_OVERFLOW) * 4) as u64;
        encoder.clear_buffer(
            &self.buffers.grid,
            at,
            Some(((GRID_COUNTERS - GRID_OVERFLOW) * 4) as u64),
        );
    }

    /// The grid counters (`GRID_VMAX`, `GRID_OVERFLOW`, `GRID_OUTSIDE`).
    pub fn read_grid_counters(&self) -> [u32; GRID_COUNTERS] {
        // Only the counters after the nodes: `step_checked` reads them every step.
        let at = (*self.node_offset.last().unwrap() * GRID_WORDS_PER_NODE * 4) as u64;
        let bytes = self.read_bytes_at(&self.buffers.grid, at, (GRID_COUNTERS * 4) as u64);
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        std::array::from_fn(|i| words[i])
    }

    /// Group `g`'s node accumulators after the last grid kernel, as the
    /// CPU's 64-bit integers.
    pub fn read_grid(&self, g: usize) -> GridNodes {
        let n = *self.node_offset.last().unwrap() * GRID_WORDS_PER_NODE;
        let words: Vec<u32> = self.read(&self.buffers.grid, n + GRID_COUNTERS);
        let wide = |i: usize| (words[i] as u64 | (words[i + 1] as u64) << 32) as i64;
        let nodes = self.node_offset[g]..self.node_offset[g + 1];
        let mass: Vec<i64> = nodes
            .clone()
            .map(|k| wide(k * GRID_WORDS_PER_NODE))
            .collect();
        GridNodes {
            touched: (0..mass.len() as u32)
                .filter(|&k| mass[k as usize] > 0)
                .collect(),
            mass,
            momentum: nodes
                .map(|k| std::array::from_fn(|a| wide(k * GRID_WORDS_PER_NODE + 2 + 2 * a)))
                .collect(),
        }
    }
    /// Group `g`'s node velocities and pressures after the last `grid_velocity`.
    pub fn read_grid_fields(&self, g: usize) -> Vec<[f64; 4]> {
        let f: Vec<[f32; 4]> =
            self.read(&self.buffers.grid_fields, *self.node_offset.last().unwrap());
        f[self.node_offset[g]..self.node_offset[g + 1]]
            .iter()
            .map(|v| v.map(|c| c as f64))
            .collect()
    }

    /// World positions as `grid_splat` computes them: the rod origin plus
    /// the stored position (`position_f32`), added in f32.
    pub fn read_grid_positions(&self) -> Vec<[f32; 3]> {
        let pos: Vec<GpuPosition> = self.read(&self.buffers.pos, self.rods.vertex_count());
        pos.iter()
            .zip(&self.vertex_origin)
            .map(|(p, o)| (o.as_vec3() + p.as_f32()).to_array())
            .collect()
    }

    /// Velocities as stored (f32).
    pub fn read_velocities_f32(&self) -> Vec<[f32; 3]> {
        let v: Vec<[f32; 4]> = self.read(&self.buffers.vel, self.rods.vertex_count());
        v.iter().map(|v| [v[0], v[1], v[2]]).collect()
    }

    fn read<T: bytemuck::Pod>(&self, buffer: &wgpu::Buffer, count: usize) -> Vec<T> {
        let bytes = self.read_bytes(buffer, (count * size_of::<T>()) as u64);
        bytemuck::pod_collect_to_vec(&bytes)
    }

    /// One of the per-vertex position buffers, in f64.
    pub fn read_vertices(&self, which: VertexBuffer) -> Vec<DVec3> {
        let b = match which {
            VertexBuffer::Pos => &self.buffers.pos,
            VertexBuffer::Unconstrained => &self.buffers.pos_unc,
            VertexBuffer::Tmp => &self.buffers.pos_tmp,
            VertexBuffer::Start => &self.buffers.pos_start,
        };
        let v: Vec<GpuPosition> = self.read(b, self.rods.vertex_count());
        v.into_iter()
            .zip(&self.vertex_origin)
            .map(|(x, o)| *o + x.get())
            .collect()
    }

    /// Forces of the last `forces` kernel (N).
    pub fn read_forces(&self) -> Vec<DVec3> {
        let s: Vec<GpuScratch> = self.read(&self.buffers.scratch, self.rods.vertex_count());
        s.into_iter().map(|s| dvec3(s.force)).collect()
    }

    /// Per-edge `(∂E_bend/∂θ, ∂E_twist/∂θ)` of the last `forces` kernel, in
    /// the `RodSet`'s flat edge order.
    pub fn read_twist_gradient(&self) -> Vec<(f64, f64)> {
        let s: Vec<GpuScratch> = self.read(&self.buffers.scratch, self.rods.vertex_count());
        self.edge_index
            .iter()
            .map(|&i| (s[i].g[0] as f64, s[i].g[1] as f64))
            .collect()
    }

    /// Most twist Newton iterations and fast-projection iterations any rod
    /// used in the last submission.
    pub fn read_stats(&self) -> [u32; 2] {
        let s: Vec<u32> = self.read(&self.buffers.stats, 8);
        [s[0], s[1]]
    }

    /// Vertices the last `contact` kernels found tunnelling (`stats[2]`).
    pub fn read_tunnel_count(&self) -> u32 {
        let s: Vec<u32> = self.read(&self.buffers.stats, 8);
        s[2]
    }

    /// Per-vertex contacts recorded by the last phase-0 `contact` kernel.
    pub fn read_contacts(&self) -> Vec<Contact> {
        let c: Vec<GpuContact> = self.read(&self.buffers.contacts, self.rods.vertex_count());
        c.into_iter()
            .map(|c| Contact {
                normal: dvec3(c.normal_depth),
                depth: c.normal_depth[3].abs() as f64,
                stuck: c.normal_depth[3] < 0.0,
                surface_velocity: dvec3(c.surface_velocity),
            })
            .collect()
    }

    /// Replace the per-vertex contacts (for testing the filtered projection).
    pub fn write_contacts(&mut self, contacts: &[Contact]) {
        let c: Vec<GpuContact> = contacts
            .iter()
            .map(|c| GpuContact {
                normal_depth: vec4(c.normal, (if c.stuck { -c.depth } else { c.depth }) as f32),
                surface_velocity: vec4(c.surface_velocity, 0.0),
            })
            .collect();
        self.ctx
            .queue
            .write_buffer(&self.buffers.contacts, 0, bytemuck::cast_slice(&c));
    }

    /// The whole state, converted to f64.
    pub fn read_state(&self) -> State {
        self.read_state_and_chatter().0
    }

    /// `read_state`, and the first vertex whose chatter count (`vel.w`,
    /// kernel `integrate`) reached `stability::CHATTER_SUBSTEPS`.
    pub fn read_state_and_chatter(&self) -> (State, Option<usize>) {
        let nv = self.rods.vertex_count();
        let pos: Vec<GpuPosition> = self.read(&self.buffers.pos, nv);
        let vel: Vec<[f32; 4]> = self.read(&self.buffers.vel, nv);
        let limit = crate::stability::CHATTER_SUBSTEPS as f32;
        let chatter = vel.iter().position(|v| v[3] >= limit);
        let frame: Vec<GpuEdgeFrame> = self.read(&self.buffers.frame, nv);
        let edges = || self.edge_index.iter().map(|&i| frame[i]);
        let state = State {
            time: self.time,
            pos: pos
                .into_iter()
                .zip(&self.vertex_origin)
                .map(|(x, o)| *o + x.get())
                .collect(),
            vel: vel.into_iter().map(dvec3).collect(),
            theta: edges().map(|f| f.tangent[3] as f64).collect(),
            tangent: edges().map(|f| dvec3(f.tangent)).collect(),
            ref_u: edges().map(|f| dvec3(f.ref_u)).collect(),
        };
        (state, chatter)
    }

    /// Replace the whole state (rounded to f32; positions to the remainder's
    /// f32, ~6e-14 m: `GpuPosition::new`). Does not re-solve the twist.
    pub fn write_state(&mut self, state: &State) {
        let nv = self.rods.vertex_count();
        let q = &self.ctx.queue;
        let pos: Vec<GpuPosition> = state
            .pos
            .iter()
            .zip(&self.vertex_origin)
            .map(|(&p, o)| GpuPosition::new(p - *o))
            .collect();
        let vel: Vec<[f32; 4]> = state.vel.iter().map(|&v| vec4(v, 0.0)).collect();
        let mut frame = vec![GpuEdgeFrame::default(); nv];
        for (j, &i) in self.edge_index.iter().enumerate() {
            frame[i] = GpuEdgeFrame {
                tangent: vec4(state.tangent[j], state.theta[j] as f32),
                ref_u: vec4(state.ref_u[j], 0.0),
            };
        }
        q.write_buffer(&self.buffers.pos, 0, bytemuck::cast_slice(&pos));
        q.write_buffer(&self.buffers.pos_unc, 0, bytemuck::cast_slice(&pos));
        q.write_buffer(&self.buffers.vel, 0, bytemuck::cast_slice(&vel));
        q.write_buffer(&self.buffers.frame, 0, bytemuck::cast_slice(&frame));
        self.time = state.time;
    }
}

/// Refuse interaction grids (all groups' nodes) that the device cannot bind.
pub fn check_grid_size(nodes: usize, limits: &wgpu::Limits) -> Result<(), GpuError> {
    let bytes = ((nodes * GRID_WORDS_PER_NODE + GRID_COUNTERS) * 4) as u64;
    let limit = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    if bytes > limit {
        return Err(GpuError::GridTooLarge {
            nodes,
            bytes,
            limit,
        });
    }
    Ok(())
}

/// Per vertex, its interaction group, quantised mass and friction factor.
fn grid_vertices(rods: &RodSet) -> Vec<GpuGridVertex> {
    let inter = &rods.interaction;
    let mut out = vec![
        GpuGridVertex {
            group: NONE,
            ..Default::default()
        };
        rods.vertex_count().max(1)
    ];
    for (o, v) in out.iter_mut().zip(&inter.vertex) {
        *o = GpuGridVertex {
            group: v.group,
            mass_q: v.mass_q,
            friction: v.friction as f32,
            _pad0: 0,
        };
    }
    out
}

fn whole(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

fn world_group(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    buffers: &Buffers,
) -> wgpu::BindGroup {
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("world"),
        layout,
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &buffers.steps,
                    offset: 0,
                    size: wgpu::BufferSize::new(size_of::<GpuStep>() as u64),
                }),
            },
            whole(1, &buffers.rods),
            whole(2, &buffers.rest),
            whole(4, &buffers.poses),
        ],
    })
}

/// Index of the step entry of substep `k` in `phase` (two per substep).
fn entry(k: u32, phase: u32) -> u32 {
    2 * k + phase
}

/// Every SDF collider's grid stacked along z, with its size.
struct SdfAtlas {
    size: [u32; 3],
    values: Vec<f32>,
}

/// The colliders as the GPU reads them, and the SDF atlas.
fn colliders_of(rods: &RodSet) -> (GpuColliders, SdfAtlas) {
    let mut out = <GpuColliders as bytemuck::Zeroable>::zeroed();
    out.count = rods.colliders.len() as u32;
    let grids: Vec<_> = rods
        .colliders
        .iter()
        .filter_map(|c| match &c.shape {
            Shape::Sdf(g) => Some(g.clone()),
            _ => None,
        })
        .collect();
    let width = grids.iter().map(|g| g.dims[0]).max().unwrap_or(1);
    let height = grids.iter().map(|g| g.dims[1]).max().unwrap_or(1);
    let depth = grids.iter().map(|g| g.dims[2]).sum::<u32>().max(1);
    let mut values = vec![0.0f32; (width * height * depth) as usize];
    let mut z0 = 0;
    for (c, g) in rods.colliders.iter().zip(out.items.iter_mut()) {
        g.kind = c.shape.kind();
        g.anchor = c.anchor as u32;
        g.friction = c.friction as f32;
        g.static_friction = c.static_friction as f32;
        g.margin = c.margin as f32;
        let t = c.shape.thickness();
        g.thickness = if t.is_finite() { t as f32 } else { f32::MAX };
        match &c.shape {
            Shape::Sphere { center, radius } => {
                g.p0 = vec4(*center, 0.0);
                g.radius = *radius as f32;
            }
            Shape::Capsule { a, b, radius } => {
                g.p0 = vec4(*a, 0.0);
                g.p1 = vec4(*b, 0.0);
                g.radius = *radius as f32;
            }
            Shape::Plane { point, normal } => {
                g.p0 = vec4(*point, 0.0);
                g.p1 = vec4(*normal, 0.0);
            }
            Shape::Sdf(grid) => {
                g.p0 = vec4(grid.origin, 0.0);
                g.cell = grid.cell as f32;
                let [nx, ny, nz] = grid.dims;
                g.dims = [nx, ny, nz, z0];
                for z in 0..nz {
                    for y in 0..ny {
                        for x in 0..nx {
                            let from = (x + nx * (y + ny * z)) as usize;
                            let to = (x + width * (y + height * (z0 + z))) as usize;
                            values[to] = grid.values[from];
                        }
                    }
                }
                z0 += nz;
            }
        }
    }
    (
        out,
        SdfAtlas {
            size: [width, height, depth],
            values,
        },
    )
}

fn sdf_texture(device: &wgpu::Device, queue: &wgpu::Queue, atlas: &SdfAtlas) -> wgpu::Texture {
    let [width, height, depth] = atlas.size;
    let size = wgpu::Extent3d {
        width,
        height,
        depth_or_array_layers: depth,
    };
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("sdf"),
        size,
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D3,
        format: wgpu::TextureFormat::R32Float,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats: &[],
    });
    queue.write_texture(
        wgpu::TexelCopyTextureInfo {
            texture: &texture,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        bytemuck::cast_slice(&atlas.values),
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(4 * width),
            rows_per_image: Some(height),
        },
        size,
    );
    texture
}
