//! The state of one simulator on the GPU: its buffers, made from a
//! `super::packing::Packing`, and the bind groups that tie them to the
//! kernels of `super::pipelines`. Also the device-limit checks that decide
//! whether a rod set fits.

use std::collections::HashMap;

use wgpu::util::DeviceExt;

use super::layout::{
    GRID_COUNTERS, GRID_WORDS_PER_NODE, GpuEdgeFrame, GpuGridGroup, GpuPose, GpuPosition, GpuRod,
    GpuScratch, GpuStep, GpuVertexRest, Kernel, REGION_GROUPS, REGION_LAST_BOX, REGION_WORDS,
    REGION_WORKGROUP, binding, grid_cells_words, grid_dispatch_words, grid_region_words,
    grid_sort_words,
};
use super::packing::{Packing, SdfAtlas};
use super::pipelines::Pipelines;
use super::{GpuError, WORKGROUP};
use crate::model::colliders::Shape;
use crate::model::interaction::GroupGrid;
use crate::model::rods::RodSet;

/// Storage buffers one kernel binds at most (`Kernel::storage_buffers`),
/// within WebGPU's default limit so a caller's default device will do.
pub const STORAGE_BUFFERS_NEEDED: u32 = 8;

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
    /// The positions it reads.
    pub src: VertexBuffer,
    /// The positions it writes.
    pub dst: VertexBuffer,
}

/// The GPU buffers of a simulator.
pub struct Buffers {
    /// Two `GpuStep`s per substep (one per phase), at `step_stride`.
    pub steps: wgpu::Buffer,
    /// `GpuRod` per rod.
    pub rods: wgpu::Buffer,
    /// `GpuVertexRest` per vertex.
    pub rest: wgpu::Buffer,
    /// `GpuClamp` per clamped end.
    pub clamps: wgpu::Buffer,
    /// Every anchor's pose at each substep boundary of a frame.
    pub poses: wgpu::Buffer,
    /// The frame's phase-0 `GpuStep`s one after the other, for the
    /// whole-frame kernel (`binding::FRAME_STEPS`).
    pub frame_steps: wgpu::Buffer,
    /// Positions (`GpuPosition`), relative to each rod's origin.
    pub pos: wgpu::Buffer,
    /// Velocities (m/s); w the chatter count.
    pub vel: wgpu::Buffer,
    /// Unconstrained positions after `integrate`.
    pub pos_unc: wgpu::Buffer,
    /// The other buffer of the Jacobi ping-pong.
    pub pos_tmp: wgpu::Buffer,
    /// Positions at the start of the substep (`save_start`), for SHAKE.
    pub pos_start: wgpu::Buffer,
    /// `GpuEdgeFrame` per edge (tangent, twist angle, reference vector).
    pub frame: wgpu::Buffer,
    /// `GpuScratch` per vertex, the kernels' working memory.
    pub scratch: wgpu::Buffer,
    /// The kernels' diagnostic counters (8 words).
    pub stats: wgpu::Buffer,
    /// `GpuContact` per vertex.
    pub contacts: wgpu::Buffer,
    /// `GpuColliders` (uniform).
    pub colliders: wgpu::Buffer,
    /// `GpuGridVertex` per vertex.
    pub grid_vertex: wgpu::Buffer,
    /// `group_count` `GridGroup`s per substep of the frame.
    pub grid_groups: wgpu::Buffer,
    /// Node accumulators then counters (`GRID_WORDS_PER_NODE`, `GRID_COUNTERS`).
    pub grid: wgpu::Buffer,
    /// Grid velocity and pressure fields, per node.
    pub grid_fields: wgpu::Buffer,
    /// The walked splat's box per group and `grid_velocity_box`'s indirect
    /// dispatch (`layout::grid_dispatch_words`).
    pub grid_dispatch: wgpu::Buffer,
    /// The region `grid_velocity_box` visits (`layout::grid_region_words`;
    /// `grid_region_reset` is its contents before a walked substep).
    pub grid_region: wgpu::Buffer,
    /// The sorted splat's per-cell words (`layout::grid_cells_words`), or
    /// 16 bytes until the sorted splat is asked for (`ensure_sorted_splat`).
    pub grid_cells: wgpu::Buffer,
    /// The sorted splat's per-vertex words (`layout::grid_sort_words`), or
    /// 16 bytes until then.
    pub grid_sort: wgpu::Buffer,
    /// World positions for a renderer (`Kernel::WorldPositions`), 16 B a vertex.
    pub world_pos: wgpu::Buffer,
    /// Every SDF collider's grid stacked along z (1×1×1 when there is none).
    pub sdf: wgpu::Texture,
    /// Staging buffer for reading results back.
    pub readback: wgpu::Buffer,
    /// Timestamps at the start and end of a frame's compute pass, where the
    /// device has `TIMESTAMP_QUERY`.
    pub timestamps: Option<(wgpu::QuerySet, wgpu::Buffer)>,
    /// Bytes between step entries (the uniform offset alignment).
    pub step_stride: u64,
    /// Substeps and anchors the `steps` and `poses` buffers hold.
    pub capacity: (u32, usize),
    /// Group 0 of every kernel.
    pub world: wgpu::BindGroup,
    /// Group 1 of each kernel but `ProjectJacobi`.
    pub state_groups: HashMap<Kernel, wgpu::BindGroup>,
    /// Group 1 of `ProjectJacobi`, per pass.
    pub jacobi_groups: HashMap<JacobiPass, wgpu::BindGroup>,
}

/// The `grid_region` buffer's words before a walked substep
/// (`layout::grid_region_words`): every group's last splat taken to have
/// reached its whole grid, so that the first `grid_extent` visits every
/// node (a node may carry a field from a pass over all nodes, or none yet).
pub fn grid_region_reset(groups: &[GroupGrid]) -> Vec<u32> {
    let mut words = vec![0u32; grid_region_words(groups.len())];
    for (g, group) in groups.iter().enumerate() {
        let last = REGION_GROUPS + REGION_WORDS * g + REGION_LAST_BOX;
        for a in 0..3 {
            words[last + a] = 0;
            words[last + 3 + a] = group.dims[a] - 1;
        }
    }
    words
}

/// Refuse rod sets and scenes the device cannot hold or dispatch.
pub fn check_limits(
    limits: &wgpu::Limits,
    rods: &RodSet,
    packing: &Packing,
) -> Result<(), GpuError> {
    let nv = rods.vertex_count().max(1);
    let check = |buffer: &'static str, per_item: usize, items: usize| {
        let bytes = (per_item * items) as u64;
        let (limit_name, limit) = if limits.max_storage_buffer_binding_size < limits.max_buffer_size
        {
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
    check_grid_size(packing.node_count(), limits)?;
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
    // `grid_velocity_box`'s indirect dispatch (`grid_extent`): workgroups of
    // `REGION_WORKGROUP`² nodes over a group's x and y, one a z plane of
    // every group's region, at most the whole grids.
    let groups = &rods.interaction.groups;
    let planes: u64 = groups.iter().map(|g| g.dims[2] as u64).sum();
    let across = groups
        .iter()
        .flat_map(|g| [g.dims[0], g.dims[1]])
        .map(|d| d.div_ceil(REGION_WORKGROUP) as u64)
        .max()
        .unwrap_or(0);
    if planes > per_dim {
        return Err(GpuError::Limit {
            limit_name: "max_compute_workgroups_per_dimension (the interaction grids' nodes along z, summed over the groups; a larger interaction.cell or a lower resolution has fewer)",
            have: per_dim,
            need: planes,
        });
    }
    if across > per_dim {
        return Err(GpuError::Limit {
            limit_name: "max_compute_workgroups_per_dimension (an interaction grid's nodes along x or y ÷ 8, rounded up; a larger interaction.cell or a lower resolution has fewer)",
            have: per_dim,
            need: across,
        });
    }
    if limits.max_bind_groups < 2 {
        return Err(GpuError::Limit {
            limit_name: "max_bind_groups",
            have: limits.max_bind_groups as u64,
            need: 2,
        });
    }
    Ok(())
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

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

fn zeroed(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: STORAGE,
        mapped_at_creation: false,
    })
}

fn uniform_steps(device: &wgpu::Device, step_stride: u64, substeps: u32) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("steps"),
        size: step_stride * 2 * substeps as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

fn poses(device: &wgpu::Device, anchors: usize, substeps: u32) -> wgpu::Buffer {
    zeroed(
        device,
        "poses",
        (anchors * (substeps as usize + 1) * size_of::<GpuPose>()) as u64,
    )
}

fn frame_steps(device: &wgpu::Device, substeps: u32) -> wgpu::Buffer {
    zeroed(
        device,
        "frame_steps",
        (substeps as usize * size_of::<GpuStep>()) as u64,
    )
}

fn grid_groups(device: &wgpu::Device, groups: usize, substeps: u32) -> wgpu::Buffer {
    zeroed(
        device,
        "grid_groups",
        (substeps as usize * groups.max(1) * size_of::<GpuGridGroup>()) as u64,
    )
}

impl Buffers {
    /// Allocate the buffers of `packing` with room for `substeps` substeps
    /// a frame (positions, velocities and frames are written apart:
    /// `GpuSimulator::write_state`), and bind them to `pipelines`. An
    /// allocation the device refuses is an error, not a panic.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        rods: &RodSet,
        packing: &Packing,
        substeps: u32,
    ) -> Result<Buffers, GpuError> {
        let nv = rods.vertex_count().max(1);
        let align = device.limits().min_uniform_buffer_offset_alignment as u64;
        let step_stride = (size_of::<GpuStep>() as u64).div_ceil(align) * align;
        let substeps = substeps.max(1);
        let init = |label: &str, contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: STORAGE,
            })
        };
        let v16 = 16 * nv as u64;
        let positions = (nv * size_of::<GpuPosition>()) as u64;
        let node_count = packing.node_count();
        let anchors = rods.anchors.len().max(1);
        let oom_scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let steps = uniform_steps(device, step_stride, substeps);
        let rods_buffer = init("rods", bytemuck::cast_slice(&packing.rods));
        let rest = init(
            "rest",
            bytemuck::cast_slice(&packing.layout.pack(&packing.rest)),
        );
        let clamps = init("clamps", bytemuck::cast_slice(&packing.clamps));
        let poses = poses(device, anchors, substeps);
        let frame_steps = frame_steps(device, substeps);
        let pos = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("pos"),
            size: positions,
            // VERTEX too: a renderer may draw straight from it.
            usage: STORAGE | wgpu::BufferUsages::VERTEX,
            mapped_at_creation: false,
        });
        let grid_groups = grid_groups(device, rods.interaction.groups.len(), substeps);
        let groups = rods.interaction.groups.len();
        let mut buffers = Buffers {
            vel: zeroed(device, "vel", v16),
            pos_unc: zeroed(device, "pos_unc", positions),
            pos_tmp: zeroed(device, "pos_tmp", positions),
            pos_start: zeroed(device, "pos_start", positions),
            frame: zeroed(device, "frame", (nv * size_of::<GpuEdgeFrame>()) as u64),
            scratch: zeroed(device, "scratch", (nv * size_of::<GpuScratch>()) as u64),
            stats: zeroed(device, "stats", 4 * super::layout::stat::COUNT as u64),
            contacts: zeroed(device, "contacts", 2 * v16),
            grid_vertex: init(
                "grid_vertex",
                bytemuck::cast_slice(&packing.layout.pack(&packing.grid_vertex)),
            ),
            grid: zeroed(
                device,
                "grid",
                ((node_count * GRID_WORDS_PER_NODE + GRID_COUNTERS) * 4) as u64,
            ),
            grid_fields: zeroed(device, "grid_fields", (node_count.max(1) * 16) as u64),
            grid_dispatch: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("grid_dispatch"),
                size: (grid_dispatch_words(groups) * 4) as u64,
                usage: STORAGE | wgpu::BufferUsages::INDIRECT,
                mapped_at_creation: false,
            }),
            grid_region: init(
                "grid_region",
                bytemuck::cast_slice(&grid_region_reset(&rods.interaction.groups)),
            ),
            // Made when the sorted splat is first asked for
            // (`ensure_sorted_splat`).
            grid_cells: zeroed(device, "grid_cells", 16),
            grid_sort: zeroed(device, "grid_sort", 16),
            world_pos: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("world_pos"),
                size: v16,
                // VERTEX too: a renderer draws straight from it.
                usage: STORAGE | wgpu::BufferUsages::VERTEX,
                mapped_at_creation: false,
            }),
            colliders: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("colliders"),
                contents: bytemuck::bytes_of(&packing.colliders),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            }),
            sdf: sdf_texture(device, queue, &packing.sdf),
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
            world: placeholder_group(device),
            state_groups: HashMap::new(),
            jacobi_groups: HashMap::new(),
            step_stride,
            capacity: (substeps, anchors),
            steps,
            rods: rods_buffer,
            rest,
            clamps,
            poses,
            frame_steps,
            pos,
            grid_groups,
        };
        if let Some(e) = pollster::block_on(oom_scope.pop()) {
            return Err(GpuError::OutOfMemory {
                bytes: buffers.bytes(),
                message: e.to_string(),
            });
        }
        buffers.bind(device, pipelines);
        Ok(buffers)
    }

    /// The buffer of `which` positions.
    pub fn vertex_buffer(&self, which: VertexBuffer) -> &wgpu::Buffer {
        match which {
            VertexBuffer::Pos => &self.pos,
            VertexBuffer::Unconstrained => &self.pos_unc,
            VertexBuffer::Tmp => &self.pos_tmp,
            VertexBuffer::Start => &self.pos_start,
        }
    }

    /// (Re)make every bind group (after a buffer was replaced).
    fn bind(&mut self, device: &wgpu::Device, pipelines: &Pipelines) {
        self.world = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("world"),
            layout: &pipelines.world_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &self.steps,
                        offset: 0,
                        size: wgpu::BufferSize::new(size_of::<GpuStep>() as u64),
                    }),
                },
                whole(1, &self.rods),
                whole(2, &self.rest),
                whole(4, &self.poses),
            ],
        });
        let sdf_view = self
            .sdf
            .create_view(&wgpu::TextureViewDescriptor::default());
        let mut state_groups = HashMap::new();
        let mut jacobi_groups = HashMap::new();
        for kernel in Kernel::ALL {
            let name = kernel.entry_point();
            // The fused kernels exist only where the device allows them.
            let Some(layout) = pipelines.layouts.get(&kernel) else {
                continue;
            };
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
                        layout,
                        entries: &[
                            whole(binding::SRC, self.vertex_buffer(src)),
                            whole(binding::DST, self.vertex_buffer(dst)),
                            whole(binding::CONTACTS, &self.contacts),
                        ],
                    });
                    jacobi_groups.insert(JacobiPass { src, dst }, group);
                }
                continue;
            }
            let entries: Vec<_> = kernel
                .bindings()
                .iter()
                .map(|&b| wgpu::BindGroupEntry {
                    binding: b,
                    resource: match b {
                        binding::SDF => wgpu::BindingResource::TextureView(&sdf_view),
                        b => self.state_buffer(b).as_entire_binding(),
                    },
                })
                .collect();
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout,
                entries: &entries,
            });
            state_groups.insert(kernel, group);
        }
        self.state_groups = state_groups;
        self.jacobi_groups = jacobi_groups;
    }

    /// The buffer at state binding `b` (not the texture `SDF`, nor the
    /// Jacobi pass's `SRC`/`DST`).
    fn state_buffer(&self, b: u32) -> &wgpu::Buffer {
        match b {
            binding::POS => &self.pos,
            binding::VEL => &self.vel,
            binding::POS_UNC => &self.pos_unc,
            binding::POS_START => &self.pos_start,
            binding::FRAME => &self.frame,
            binding::CLAMPS => &self.clamps,
            binding::SCRATCH => &self.scratch,
            binding::STATS => &self.stats,
            binding::CONTACTS => &self.contacts,
            binding::COLLIDERS => &self.colliders,
            binding::GRID_VERTEX => &self.grid_vertex,
            binding::GRID_GROUPS => &self.grid_groups,
            binding::GRID => &self.grid,
            binding::GRID_FIELDS => &self.grid_fields,
            binding::GRID_DISPATCH => &self.grid_dispatch,
            binding::GRID_REGION => &self.grid_region,
            binding::GRID_CELLS => &self.grid_cells,
            binding::GRID_SORT => &self.grid_sort,
            binding::WORLD_POS => &self.world_pos,
            binding::FRAME_STEPS => &self.frame_steps,
            _ => unreachable!("binding {b} is not a state buffer"),
        }
    }

    /// Grow the `steps`, `poses`, `frame_steps` and `grid_groups` buffers to hold
    /// `substeps` substeps of `anchors` anchors and `groups` interaction
    /// groups, rebinding what they are bound in; nothing when they do.
    pub fn ensure_capacity(
        &mut self,
        device: &wgpu::Device,
        pipelines: &Pipelines,
        substeps: u32,
        anchors: usize,
        groups: usize,
    ) {
        let anchors = anchors.max(1);
        if substeps <= self.capacity.0 && anchors <= self.capacity.1 {
            return;
        }
        let n = substeps.max(self.capacity.0);
        let a = anchors.max(self.capacity.1);
        self.steps = uniform_steps(device, self.step_stride, n);
        self.poses = poses(device, a, n);
        self.frame_steps = frame_steps(device, n);
        self.grid_groups = grid_groups(device, groups, n);
        self.bind(device, pipelines);
        self.capacity = (n, a);
    }

    /// Make the sorted splat's buffers for `vertices` vertices and `nodes`
    /// grid nodes, zeroed, rebinding what they are bound in; nothing when
    /// they are made already. Not before: a simulator that splats its own
    /// way does not hold them (16 B a vertex and about 8 a node). An
    /// allocation the device refuses is an error, not a panic.
    pub fn ensure_sorted_splat(
        &mut self,
        device: &wgpu::Device,
        pipelines: &Pipelines,
        vertices: usize,
        nodes: usize,
    ) -> Result<(), GpuError> {
        let cells = (grid_cells_words(nodes) * 4) as u64;
        let sort = (grid_sort_words(vertices.max(1)) * 4) as u64;
        if self.grid_cells.size() >= cells && self.grid_sort.size() >= sort {
            return Ok(());
        }
        let oom_scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let grid_cells = zeroed(device, "grid_cells", cells);
        let grid_sort = zeroed(device, "grid_sort", sort);
        if let Some(e) = pollster::block_on(oom_scope.pop()) {
            return Err(GpuError::OutOfMemory {
                bytes: self.bytes() + cells + sort,
                message: e.to_string(),
            });
        }
        self.grid_cells = grid_cells;
        self.grid_sort = grid_sort;
        self.bind(device, pipelines);
        Ok(())
    }

    /// Bytes of GPU memory these buffers take (state, rest data, working
    /// memory, staging).
    pub fn bytes(&self) -> u64 {
        [
            &self.steps,
            &self.rods,
            &self.rest,
            &self.clamps,
            &self.poses,
            &self.frame_steps,
            &self.pos,
            &self.vel,
            &self.pos_unc,
            &self.pos_tmp,
            &self.pos_start,
            &self.frame,
            &self.scratch,
            &self.stats,
            &self.contacts,
            &self.colliders,
            &self.grid_vertex,
            &self.grid_groups,
            &self.grid,
            &self.grid_fields,
            &self.grid_dispatch,
            &self.grid_region,
            &self.grid_cells,
            &self.grid_sort,
            &self.world_pos,
            &self.readback,
        ]
        .iter()
        .map(|x| x.size())
        .sum::<u64>()
            + 4 * self.sdf.width() as u64
                * self.sdf.height() as u64
                * self.sdf.depth_or_array_layers() as u64
    }
}

/// A bind group with no entries, in place until `Buffers::bind` runs.
fn placeholder_group(device: &wgpu::Device) -> wgpu::BindGroup {
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("placeholder"),
        entries: &[],
    });
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("placeholder"),
        layout: &layout,
        entries: &[],
    })
}

fn whole(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
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
