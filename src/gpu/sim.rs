//! `GpuSimulator`: a rod set's state on the GPU (`super::buffers`, made from
//! `super::packing`), the kernels (`super::pipelines`, shared per device),
//! and the dispatch sequence of a substep — the same order as `substep` in
//! `src/cpu/substep.rs`: forces, [save_start], integrate, [grid], projection,
//! [contact], velocity update, frames, twist.

use std::sync::Arc;

use glam::{DQuat, DVec3};

use super::buffers::{Buffers, JacobiPass, VertexBuffer, check_limits, grid_region_reset};
use super::layout::{
    Domain, FUSED_STORAGE_BUFFERS, GRID_COUNTERS, GRID_OUTSIDE, GRID_OVERFLOW, GRID_VMAX,
    GRID_WORDS_PER_NODE, GpuCollider, GpuColliderNow, GpuContact, GpuEdgeFrame, GpuGridGroup,
    GpuPose, GpuPosition, GpuScratch, GpuStep, Kernel, PROJECTION_FAST, PROJECTION_JACOBI,
    PROJECTION_NONE, PROJECTION_SHAKE, SPLAT_OWN, SPLAT_SORTED, VEL_CHATTER, WORKGROUP, stat,
};
use super::packing::{Packing, VertexLayout, dvec3, rod_origins, vec4};
use super::pipelines::Pipelines;
use super::schedule::{Dispatch, Form, Splat, frame_in_one_dispatch, substep_schedule};
use super::{GpuContext, GpuError};
use crate::cpu::contact::Contact;
use crate::cpu::grid::GridNodes;
use crate::cpu::{Diagnostics, Unstable, check_state, diagnostics_of};
use crate::model::colliders::MAX_COLLIDERS;
use crate::model::params::{Projection, SimParams};
use crate::model::rods::{RodSet, State};

/// The simulator on the GPU. Rest data and state live in GPU buffers; `step`
/// records a whole frame into one submission and reads nothing back.
///
/// Nothing that the GPU holds a copy of can be changed behind its back: the
/// rods and parameters are read through `rods()` and `params()` and changed
/// through setters that upload what changed (`set_params`, `set_gravity`,
/// `set_wind`, `set_material`, `set_anchor_keyframes`).
pub struct GpuSimulator {
    rods: RodSet,
    params: SimParams,
    /// Simulated time (s), kept in f64 on the host.
    time: f64,
    /// Frames (of `params.dt`) taken so far.
    step_count: u64,
    ctx: GpuContext,
    /// The kernels, shared by every simulator on the device.
    pipelines: Arc<Pipelines>,
    /// The state and rest data on the GPU, and their bind groups.
    buffers: Buffers,
    /// What was uploaded: the maps between the rod set and the buffers.
    packing: Packing,
    /// How the per-rod stages run (`set_form`).
    form: Form,
    /// How the grid is splatted (`set_splat`).
    splat: Splat,
    /// Whether each frame ends with `Kernel::WorldPositions`
    /// (`world_position_buffer` was asked for).
    world_positions: bool,
    /// What the substeps were last resolved for (`stability::Checked`).
    checked: crate::model::stability::Checked,
    /// Whether `grid_region`'s last boxes cover every node that carries a
    /// field: true from creation and after `grid_extent`, false after a pass
    /// of `grid_velocity` over every node (`track_grid_region`).
    grid_region_fresh: bool,
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

/// Collider `c` over the substep from pose `start` to pose `end` in the
/// world frame (`GpuColliderNow`), composed in f64 from the f32 poses the
/// kernels read, so that it is the same motion as theirs, rounded once.
fn collider_now_of(c: &GpuCollider, start: &GpuPose, end: &GpuPose) -> GpuColliderNow {
    let quat = |q: [f32; 4]| DQuat::from_xyzw(q[0] as f64, q[1] as f64, q[2] as f64, q[3] as f64);
    let r_end = quat(end.rotation);
    let motion = (quat(start.rotation) * r_end.inverse()).as_quat();
    let turned = |p: [f32; 4]| {
        vec4(
            r_end * DVec3::new(p[0] as f64, p[1] as f64, p[2] as f64),
            0.0,
        )
    };
    GpuColliderNow {
        motion: [motion.x, motion.y, motion.z, motion.w],
        p0: turned(c.p0),
        p1: turned(c.p1),
    }
}

impl GpuSimulator {
    /// Upload rods and state, take the device's kernels (built on first use:
    /// `GpuContext::pipelines`), and put the material frame in quasistatic
    /// equilibrium (as `CpuSimulator::new`).
    pub fn new(
        ctx: &GpuContext,
        rods: RodSet,
        state: State,
        params: SimParams,
    ) -> Result<Self, GpuError> {
        Self::check_integrator(&params)?;
        if rods.rod_contact.is_active() {
            return Err(GpuError::RodContact);
        }
        let layout = VertexLayout::of(&rods);
        let packing = Packing::new(&rods, &rod_origins(&rods, &state), layout);
        check_limits(&ctx.device.limits(), &rods, &packing)?;
        let pipelines =
            ctx.pipelines_for(super::pipelines::ColliderKinds::of(&rods.colliders), layout);
        let form = Self::default_form(ctx);
        let buffers = Buffers::new(
            &ctx.device,
            &ctx.queue,
            &pipelines,
            &rods,
            &packing,
            params.substeps,
        )?;
        let time = state.time;
        let mut sim = GpuSimulator {
            rods,
            params,
            time,
            step_count: 0,
            checked: Default::default(),
            grid_region_fresh: true,
            ctx: ctx.clone(),
            pipelines,
            buffers,
            packing,
            form,
            splat: Splat::Own,
            world_positions: false,
        };
        // Where the sorted splat cannot be set up (its buffers beyond the
        // device's limits), the own splat: the same results, slower.
        let splat = Self::default_splat(ctx, &sim.rods);
        if splat != Splat::Own && sim.set_splat(splat).is_err() {
            sim.splat = Splat::Own;
        }
        sim.write_state(&state);
        sim.update_material_frame();
        Ok(sim)
    }

    /// The rods simulated: topology, rest shape, materials, anchors,
    /// colliders.
    pub fn rods(&self) -> &RodSet {
        &self.rods
    }

    /// The simulation parameters of the next frame.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// Simulated time (s), kept in f64 on the host.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Frames (of `params().dt`) taken so far.
    pub fn step_count(&self) -> u64 {
        self.step_count
    }

    /// Replace the parameters from the next frame on. They reach the GPU
    /// with every frame's step values (nothing of them is cached in GPU
    /// buffers); a changed `dt` or substep rule is checked against the
    /// stability limit by the next `step_checked`.
    pub fn set_params(&mut self, params: SimParams) -> Result<(), GpuError> {
        Self::check_integrator(&params)?;
        self.params = params;
        Ok(())
    }

    /// Refuse the integrators the kernels do not run.
    fn check_integrator(params: &SimParams) -> Result<(), GpuError> {
        if params.integrator.is_implicit() {
            return Err(GpuError::Integrator {
                integrator: params.integrator.name(),
            });
        }
        Ok(())
    }

    /// Gravitational acceleration (m/s²) from the next frame on.
    pub fn set_gravity(&mut self, gravity: DVec3) {
        self.params.gravity = gravity;
    }

    /// The wind from the next frame on.
    pub fn set_wind(&mut self, wind: crate::model::params::Wind) {
        self.params.wind = wind;
    }

    /// Give rod `rod` a new material from the next frame on: its stiffness,
    /// drag and radius, and (with a new mass per length) its vertex masses,
    /// uploaded to the GPU (`RodSet::set_material`); the material frame is
    /// put in quasistatic equilibrium for it at once. The next
    /// `step_checked` checks the substeps against the new stiffness.
    pub fn set_material(
        &mut self,
        rod: usize,
        material: crate::model::rods::RodMaterial,
    ) -> Result<(), crate::model::rods::MaterialError> {
        self.rods.set_material(rod, material)?;
        self.upload_rest(&self.rod_origins());
        // The quasistatic twist depends on the stiffness (as `new`).
        self.update_material_frame();
        Ok(())
    }

    /// Script anchor `anchor` anew: its keyframes from now on (poses are
    /// evaluated on the host each frame, so nothing else changes on the
    /// GPU). Its pivot is fixed: the clamps are stored relative to it.
    pub fn set_anchor_keyframes(
        &mut self,
        anchor: usize,
        keyframes: Vec<crate::model::anchor::Keyframe>,
    ) -> Result<(), crate::model::anchor::AnchorError> {
        let count = self.rods.anchors.len();
        let a = self.rods.anchors.get_mut(anchor).ok_or(
            crate::model::anchor::AnchorError::NoSuchAnchor {
                index: anchor,
                count,
            },
        )?;
        crate::model::anchor::check_keyframes(&keyframes)?;
        a.keyframes = keyframes;
        Ok(())
    }

    /// Upload the per-rod and per-vertex rest data (materials, masses,
    /// rod origins) and the interaction grid's vertex masses again, with
    /// rod origins `origin` (the present ones: `self.rod_origins()`).
    fn upload_rest(&mut self, origin: &[DVec3]) {
        let packing = Packing::new(&self.rods, origin, self.packing.layout);
        let q = &self.ctx.queue;
        q.write_buffer(&self.buffers.rods, 0, bytemuck::cast_slice(&packing.rods));
        self.write_vertices(&self.buffers.rest, &packing.rest);
        self.write_vertices(&self.buffers.grid_vertex, &packing.grid_vertex);
        self.packing = packing;
    }

    /// Each rod's origin now.
    fn rod_origins(&self) -> Vec<DVec3> {
        (0..self.rods.rod_count())
            .map(|r| self.packing.vertex_origin[self.rods.vertex_offset[r]])
            .collect()
    }

    /// Drive anchor `anchor` from the caller's clock: at time `t_target`
    /// (s, after `time()`) it is translated by `translation` (m) and turned
    /// by the rotation vector `rotation` (rad); the substeps until then
    /// interpolate (`Anchor::set_pose`). Call it once a frame, before
    /// `step`, with the time the frame ends. (CPU twin:
    /// `CpuSimulator::set_anchor_pose`.)
    pub fn set_anchor_pose(
        &mut self,
        anchor: usize,
        t_target: f64,
        translation: DVec3,
        rotation: DVec3,
    ) -> Result<(), crate::model::anchor::AnchorError> {
        let now = self.time;
        self.anchor_mut(anchor)?
            .set_pose(now, t_target, translation, rotation)
    }

    /// `set_anchor_pose` with the rotation as a quaternion
    /// (`Anchor::set_pose_quat`: the rotation vector nearest the present one).
    pub fn set_anchor_pose_quat(
        &mut self,
        anchor: usize,
        t_target: f64,
        translation: DVec3,
        rotation: glam::DQuat,
    ) -> Result<(), crate::model::anchor::AnchorError> {
        let now = self.time;
        self.anchor_mut(anchor)?
            .set_pose_quat(now, t_target, translation, rotation)
    }

    /// Move anchor `anchor` at once to `translation` and rotation vector
    /// `rotation`, with every rod clamped to it, rigidly and without a
    /// bounce (`rods::teleport`, on the state read back from the GPU and
    /// written again). The moved rods' origins move with them, so their
    /// positions keep full precision wherever they land. Waits for the GPU.
    pub fn teleport_anchor(
        &mut self,
        anchor: usize,
        translation: DVec3,
        rotation: DVec3,
    ) -> Result<(), crate::model::anchor::AnchorError> {
        let mut state = self.read_state();
        crate::model::rods::teleport(&mut self.rods, &mut state, anchor, translation, rotation)?;
        let mut origin = self.rod_origins();
        let moved = rod_origins(&self.rods, &state);
        for r in 0..self.rods.rod_count() {
            let clamped_here = [self.rods.start[r], self.rods.end[r]].iter().any(
                |e| matches!(e, crate::model::rods::EndCondition::Clamped(c) if c.anchor == anchor),
            );
            if clamped_here {
                origin[r] = moved[r];
            }
        }
        self.upload_rest(&origin);
        self.write_state(&state);
        Ok(())
    }

    fn anchor_mut(
        &mut self,
        anchor: usize,
    ) -> Result<&mut crate::model::anchor::Anchor, crate::model::anchor::AnchorError> {
        let count = self.rods.anchors.len();
        if anchor == 0 {
            return Err(crate::model::anchor::AnchorError::World);
        }
        self.rods
            .anchors
            .get_mut(anchor)
            .ok_or(crate::model::anchor::AnchorError::NoSuchAnchor {
                index: anchor,
                count,
            })
    }

    /// The device and queue this simulator runs on.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The per-vertex positions (`GpuPosition`, 32 bytes: whole quanta and
    /// a remainder, the point `cell · POSITION_QUANTUM + rem` relative to the
    /// vertex's rod origin: see `vertex_origins`), for drawing straight from
    /// the simulation without a copy through the CPU (shaders/render.wgsl
    /// reads them so). Vertex `v` is element `vertex_layout().slot(v)`: on
    /// every device 8 or more rods of one length are interleaved
    /// (`VertexLayout`); `world_position_buffer` is in rod order on every
    /// device.
    pub fn position_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.pos
    }

    /// World positions for a renderer, on the GPU: per vertex a `vec4<f32>`,
    /// xyz the point in metres (the rod origin plus the stored position,
    /// added in f32), w the rod's radius (m); vertices in `RodSet` order,
    /// rod `r` at `rods().vertices(r)`. The buffer has `VERTEX` and
    /// `STORAGE` usage. From this call on, every frame ends with kernel
    /// `world_positions` filling it (16 B written a vertex a frame); this
    /// call fills it at once for the current state.
    pub fn world_position_buffer(&mut self) -> &wgpu::Buffer {
        if !self.world_positions {
            self.world_positions = true;
            self.write_inputs(self.time, 0.0, 1);
            let mut encoder =
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("world_positions"),
                    });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("world_positions"),
                    timestamp_writes: None,
                });
                self.dispatch(&mut pass, Kernel::WorldPositions, 0);
            }
            self.ctx.queue.submit([encoder.finish()]);
        }
        &self.buffers.world_pos
    }

    /// Start reading the positions back without blocking: the copy is
    /// submitted now, after every frame submitted so far, and the returned
    /// `PositionReadback` yields them (world positions in f64, exact to the
    /// stored precision) once the GPU is done, polled with `try_take` or
    /// waited for with `wait`. Several may be in flight; each has its own
    /// staging buffer (32 B a vertex).
    pub fn read_positions_async(&self) -> PositionReadback {
        let size = (self.rods.vertex_count().max(1) * size_of::<GpuPosition>()) as u64;
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("position read-back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("position read-back"),
            });
        encoder.copy_buffer_to_buffer(&self.buffers.pos, 0, &staging, 0, size);
        self.ctx.queue.submit([encoder.finish()]);
        let mapped = std::sync::Arc::new(std::sync::Mutex::new(None));
        let sent = mapped.clone();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            *sent.lock().unwrap() = Some(r);
        });
        PositionReadback {
            device: self.ctx.device.clone(),
            staging: Some(staging),
            mapped,
            origin: self.packing.vertex_origin.clone(),
            count: self.rods.vertex_count(),
            layout: self.packing.layout,
            time: self.time,
        }
    }

    /// Per vertex, the world point its GPU position is relative to (its rod's
    /// first vertex at the start, an f32 value).
    pub fn vertex_origins(&self) -> &[DVec3] {
        &self.packing.vertex_origin
    }

    /// The per-edge frames (`EdgeFrame`: tangent with θ in w, Bishop vector
    /// u; edge j of a rod at the element of its first vertex,
    /// `vertex_layout().slot(v)`), for drawing the material frame.
    pub fn frame_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.frame
    }

    /// The `Step` of the substep from `t` to `t + h` in `phase`, its anchors
    /// in pose slots `slot_start` and `slot_end` of `poses` (every anchor's
    /// pose, slot by slot, as the `poses` buffer holds them).
    fn step_values(
        &self,
        t: f64,
        h: f64,
        slot_start: u32,
        slot_end: u32,
        phase: u32,
        poses: &[GpuPose],
    ) -> GpuStep {
        let p = &self.params;
        let anchors = self.rods.anchors.len();
        let pose = |slot: u32, anchor: usize| poses[slot as usize * anchors + anchor];
        let mut collider_start = [GpuPose::default(); MAX_COLLIDERS];
        let mut collider_end = [GpuPose::default(); MAX_COLLIDERS];
        let mut collider_now = [GpuColliderNow::default(); MAX_COLLIDERS];
        for (k, c) in self.rods.colliders.iter().enumerate() {
            collider_start[k] = pose(slot_start, c.anchor);
            collider_end[k] = pose(slot_end, c.anchor);
            collider_now[k] = collider_now_of(
                &self.packing.colliders.items[k],
                &collider_start[k],
                &collider_end[k],
            );
        }
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
            node_count: *self.packing.node_offset.last().unwrap() as u32,
            projection: match p.projection {
                Projection::None => PROJECTION_NONE,
                Projection::Fast { .. } => PROJECTION_FAST,
                Projection::Shake { .. } => PROJECTION_SHAKE,
                Projection::Jacobi { .. } => PROJECTION_JACOBI,
            },
            splat: match self.splat {
                Splat::Own => SPLAT_OWN,
                Splat::Sorted { .. } => SPLAT_SORTED,
            },
            sorted_run: self.sorted_run(),
            // `write_inputs_for` sets it: the substeps it writes.
            substeps: 0,
            collider_start,
            collider_end,
            collider_now,
        }
    }

    /// Write `substeps` step entries from time `t0` and the anchor poses at
    /// `t0 + k h`, `k = 0..=substeps`.
    fn write_inputs(&mut self, t0: f64, h: f64, substeps: u32) {
        let table = self.frame_in_one_dispatch();
        self.write_inputs_for(t0, h, substeps, table);
    }

    /// `write_inputs`, and the whole-frame kernels' table of the frame's
    /// steps where `table` (a frame kernel runs these substeps).
    fn write_inputs_for(&mut self, t0: f64, h: f64, substeps: u32, table: bool) {
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
        let mut bytes = vec![0u8; (self.buffers.step_stride * 2 * substeps.max(1) as u64) as usize];
        for k in 0..substeps {
            for phase in 0..2 {
                let mut s = self.step_values(t0 + k as f64 * h, h, k, k + 1, phase, &poses);
                // The substeps written now: the whole-frame kernels' loop.
                s.substeps = substeps;
                let at = (entry(k, phase) as u64 * self.buffers.step_stride) as usize;
                bytes[at..at + size_of::<GpuStep>()].copy_from_slice(bytemuck::bytes_of(&s));
            }
        }
        q.write_buffer(&self.buffers.steps, 0, &bytes);
        // The whole-frame kernel's table: the phase-0 entries one after the
        // other (it reads the substep's changing values there).
        if table {
            let stride = self.buffers.step_stride as usize;
            let table: Vec<u8> = (0..substeps as usize)
                .flat_map(|k| &bytes[2 * k * stride..2 * k * stride + size_of::<GpuStep>()])
                .copied()
                .collect();
            q.write_buffer(&self.buffers.frame_steps, 0, &table);
        }
        // Each substep's grids, where the CPU puts them: at its end, t + h.
        let groups = &self.rods.interaction.groups;
        if !groups.is_empty() {
            let mut entries = Vec::with_capacity(substeps as usize * groups.len());
            for k in 0..substeps {
                let t = t0 + (k + 1) as f64 * h;
                for (g, offset) in groups.iter().zip(&self.packing.node_offset) {
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

    /// Grow the per-frame buffers when `params.substeps` or the anchors
    /// changed since they were made.
    fn ensure_capacity(&mut self, substeps: u32) {
        self.buffers.ensure_capacity(
            &self.ctx.device,
            &self.pipelines,
            substeps,
            self.rods.anchors.len(),
            self.rods.interaction.groups.len(),
        );
    }

    fn dispatch(&self, pass: &mut wgpu::ComputePass, kernel: Kernel, entry: u32) {
        self.dispatch_with(pass, kernel, &self.buffers.state_groups[&kernel], entry);
    }

    fn dispatch_with(
        &self,
        pass: &mut wgpu::ComputePass,
        kernel: Kernel,
        group: &wgpu::BindGroup,
        entry: u32,
    ) {
        let count = |n: usize| (n as u32).div_ceil(WORKGROUP);
        let groups = match kernel.domain() {
            Domain::Rod => count(self.rods.rod_count()),
            Domain::Node => count(*self.packing.node_offset.last().unwrap()),
            Domain::CellRuns => count(
                self.packing
                    .node_count()
                    .div_ceil(super::layout::CELL_RUN as usize),
            ),
            Domain::Vertex => count(self.rods.vertex_count()),
            Domain::SortedRuns => count(
                self.rods
                    .vertex_count()
                    .div_ceil(self.sorted_run() as usize),
            ),
            Domain::Single | Domain::Workgroup => 1,
            // Sized on the device (`dispatch_workgroups_indirect` below).
            Domain::Region => 0,
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
        pass.set_pipeline(self.pipelines.pipeline(kernel));
        pass.set_bind_group(
            0,
            &self.buffers.world,
            &[(entry as u64 * self.buffers.step_stride) as wgpu::DynamicOffset],
        );
        pass.set_bind_group(1, group, &[]);
        if kernel == Kernel::GridVelocityBox {
            // Sized by `grid_extent` on the device.
            pass.dispatch_workgroups_indirect(&self.buffers.grid_dispatch, 0);
        } else {
            pass.dispatch_workgroups(x, y, 1);
        }
    }

    /// How the per-rod stages run (`Form`; `default_form` at first).
    pub fn form(&self) -> Form {
        self.form
    }

    /// The form a simulator on `ctx` starts in, where the device's limits
    /// allow the fused walks (`layout::walked_fused_supported`; else the
    /// walked stages apart, `Form::Walked`):
    /// - on a GPU, the whole frame of substeps in one dispatch where no
    ///   grid couples the rods (`Form::WalkedFrame`; with the grid it runs
    ///   walked-fused's schedule, `Form::running`): on an H200 at 1 M
    ///   vertices, interleaved, grass 0.670 ms a substep against 0.694
    ///   walked-fused, hair-nogrid 0.750 against 0.752 at best
    ///   (docs/measurements/2026-11-27-h200-defaults/bench-candidates.log):
    ///   as fast or a little
    ///   faster. As a frame is one dispatch, a display GPU's watchdog (~2 s
    ///   on some systems) bounds a frame's work: at the H200's 0.75 ms a
    ///   substep for 1 M vertices, ~2,600 substeps of 1 M vertices;
    /// - on a CPU adapter, the walked substep fused into one dispatch
    ///   (`Form::WalkedFused`): llvmpipe stops every loop of an invocation
    ///   once all its loops together have run 65,535 iterations, which a
    ///   frame of a long strand's substeps passes (docs/GPU.md).
    pub fn default_form(ctx: &GpuContext) -> Form {
        super::schedule::default_form(ctx.info.device_type, &ctx.device.limits())
    }

    /// The splat a simulator on `ctx` starts with for `rods`: on a GPU,
    /// for rods coupled by the hair–hair grid, the sorted splat with runs of
    /// `schedule::GPU_SORTED_RUN` slots where the device's limits allow it
    /// (`layout::sorted_splat_supported`): on an H200 the hair at 1 M
    /// vertices ran 1.077 ms a substep with it against 1.165 with the
    /// walked window, interleaved
    /// (docs/measurements/2026-11-27-h200-defaults/bench-candidates-hair.log).
    /// Else the form's own (`Splat::Own`): on lavapipe the sorted
    /// splat was slower (13.5 against 10.4 ms at 1000 strands), and without
    /// the grid there is nothing to splat (and no sort buffers to hold).
    /// `new` falls back to the own splat where the sorted one's buffers
    /// cannot be made: the same results, slower (`splat` says which).
    pub fn default_splat(ctx: &GpuContext, rods: &RodSet) -> Splat {
        super::schedule::default_splat(
            ctx.info.device_type,
            &ctx.device.limits(),
            !rods.interaction.groups.is_empty(),
        )
    }

    /// The form the substeps actually run in: `form`, or its staged twin
    /// with the Jacobi projection, or walked-fused for walked-frame with
    /// hair–hair interaction (`Form::running`).
    pub fn running_form(&self) -> Form {
        self.form.running(&self.rods, &self.params)
    }

    /// Choose the form of the substep. The fused forms need a device opened
    /// with `layout::FUSED_STORAGE_BUFFERS` storage buffers per stage
    /// (`GpuContext::headless` opens the adapter's full limits); on one
    /// without, this says which limit is short and keeps the form.
    pub fn set_form(&mut self, form: Form) -> Result<(), GpuError> {
        // With Jacobi a fused form runs staged, which every device can.
        let kernel = match form.effective(&self.params) {
            Form::WalkedFused => Kernel::SubstepRod,
            Form::WalkedFrame => Kernel::FrameRod,
            Form::Walked => {
                self.form = form;
                return Ok(());
            }
        };
        if !self.pipelines.has(kernel) {
            let storage = self
                .ctx
                .device
                .limits()
                .max_storage_buffers_per_shader_stage;
            return Err(GpuError::Limit {
                limit_name: "max_storage_buffers_per_shader_stage",
                have: storage as u64,
                need: FUSED_STORAGE_BUFFERS as u64,
            });
        }
        self.form = form;
        Ok(())
    }

    /// How the grid is splatted (`set_splat`; `default_splat` at first).
    pub fn splat(&self) -> Splat {
        self.splat
    }

    /// Choose how the substeps splat onto the hair–hair grid: the form's
    /// own splat, or the sorted splat's kernels (`Splat::Sorted`), which
    /// need a device opened with 10 storage buffers per stage
    /// (`layout::sorted_splat_supported`; `GpuContext::headless` opens the
    /// adapter's full limits): on one without, this says so and keeps the
    /// splat, as it does for a run of slots outside 1 to
    /// `schedule::MAX_SORTED_RUN`. The grid, and so the run, is the same
    /// bit for bit either way (tests/gpu_interaction.rs).
    pub fn set_splat(&mut self, splat: Splat) -> Result<(), GpuError> {
        if splat.is_sorted() && !Kernel::SORTED_SPLAT.iter().all(|&k| self.pipelines.has(k)) {
            let need = Kernel::SORTED_SPLAT
                .iter()
                .map(|k| k.storage_buffers())
                .max()
                .unwrap_or(0);
            return Err(GpuError::Limit {
                limit_name: "max_storage_buffers_per_shader_stage (the sorted splat)",
                have: self
                    .ctx
                    .device
                    .limits()
                    .max_storage_buffers_per_shader_stage as u64,
                need: need as u64,
            });
        }
        if let Splat::Sorted { run } = splat {
            let max = super::schedule::MAX_SORTED_RUN;
            if !(1..=max).contains(&run) {
                return Err(GpuError::SortedRun { run, max });
            }
            self.ensure_sorted_splat()?;
        }
        self.splat = splat;
        Ok(())
    }

    /// Slots an invocation of `grid_splat_sorted` walks: the sorted
    /// splat's run, or `layout::SORTED_RUN` where the kernel runs alone
    /// (`run_kernel`) under the form's own splat.
    fn sorted_run(&self) -> u32 {
        match self.splat {
            Splat::Sorted { run } => run,
            Splat::Own => super::layout::SORTED_RUN,
        }
    }

    /// The sorted splat's buffers, made where they were not
    /// (`Buffers::ensure_sorted_splat`).
    fn ensure_sorted_splat(&mut self) -> Result<(), GpuError> {
        self.buffers.ensure_sorted_splat(
            &self.ctx.device,
            &self.pipelines,
            self.rods.vertex_count(),
            self.packing.node_count(),
        )
    }

    /// Compile now the kernels the substeps run in the current form and
    /// settings (`substep_schedule`), where not yet compiled. Otherwise
    /// each kernel is compiled when a step first runs it (`Pipelines`),
    /// which a driver may take seconds over for the big fused kernels: an
    /// application calls this at load, and after `set_form` or
    /// `set_params`, to keep that out of its frames.
    ///
    /// The kernels are compiled side by side, a thread each (a form has at
    /// most 15): a driver that compiles as a pipeline is made (NVIDIA's)
    /// can then take about as long as its biggest kernel rather than the
    /// sum of them. The pipelines are the same either way. wgpu's error
    /// scopes belong to a thread, so a scope the caller pushes around this
    /// call does not see errors in making these pipelines; they go to the
    /// device's uncaptured-error handler.
    pub fn compile_kernels(&self) {
        let mut kernels = Vec::new();
        for d in substep_schedule(&self.rods, &self.params, self.form, self.splat) {
            if !kernels.contains(&d.kernel) && !self.pipelines.is_compiled(d.kernel) {
                kernels.push(d.kernel);
            }
        }
        std::thread::scope(|s| {
            let threads: Vec<_> = kernels
                .iter()
                .map(|&k| {
                    s.spawn(move || {
                        self.pipelines.pipeline(k);
                    })
                })
                .collect();
            // A thread's panic reaches the caller with its own message.
            for t in threads {
                if let Err(panic) = t.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }

    /// Whether one dispatch runs the whole frame (`schedule::frame_in_one_dispatch`).
    fn frame_in_one_dispatch(&self) -> bool {
        frame_in_one_dispatch(&self.rods, &self.params, self.form)
    }

    /// How many times a frame encodes `substep_schedule`: once a substep,
    /// or once where its one dispatch runs the whole frame.
    fn schedules_a_frame(&self) -> u32 {
        if self.frame_in_one_dispatch() {
            1
        } else {
            self.params.substeps
        }
    }

    /// Encode substep `k` (its step values already written): the
    /// dispatches of `schedule::substep_schedule`, in the order of
    /// `cpu::substep::substep`.
    fn encode_substep(&self, pass: &mut wgpu::ComputePass, k: u32) {
        for d in substep_schedule(&self.rods, &self.params, self.form, self.splat) {
            self.dispatch_in_substep(pass, &d, k);
        }
    }

    /// Dispatch `d` of substep `k`'s schedule (its state bind group, or a
    /// Jacobi pass's).
    fn dispatch_in_substep(&self, pass: &mut wgpu::ComputePass, d: &Dispatch, k: u32) {
        let group = match d.jacobi {
            Some(p) => &self.buffers.jacobi_groups[&p],
            None => &self.buffers.state_groups[&d.kernel],
        };
        self.dispatch_with(pass, d.kernel, group, entry(k, d.phase));
    }

    /// Clear the statistics a frame gathers, all but word 5, the rod whose
    /// kernel invocation reached the driver's loop limit
    /// (`loops_cut_short`): it stays until the state is made again, so
    /// that a limit reached in an unchecked frame, or in the material
    /// frame's update at the start, is still reported by the next checked
    /// step.
    fn clear_stats(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.clear_buffer(&self.buffers.stats, 0, Some(20));
        encoder.clear_buffer(&self.buffers.stats, 24, Some(8));
    }

    /// Advance one frame of `params.dt` in `params.substeps` substeps, all
    /// recorded into one submission. Nothing is read back, nothing checked:
    /// `step_checked` checks, and `loops_cut_short` says whether a kernel
    /// reached the loop limit of a software adapter since the state was
    /// last written.
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

    /// `step`, with every dispatch in a compute pass of its own between two
    /// timestamps: the GPU time of each dispatch of the substep schedule
    /// (`schedule::substep_schedule`, in its order), summed over the frame's
    /// substeps (s; the whole-frame kernel's one dispatch runs them all). A profile, not the frame's time: a pass per dispatch may
    /// add work that one pass does not (`step_timed` is the frame's time).
    /// The state advances exactly as by `step`. `None` when the device has
    /// no `TIMESTAMP_QUERY`.
    pub fn step_profiled(&mut self) -> Option<Vec<(Dispatch, f64)>> {
        if !self.has_timestamps() {
            return None;
        }
        let h = self.params.h();
        let n = self.params.substeps;
        let schedule = substep_schedule(&self.rods, &self.params, self.form, self.splat);
        let queries = 2 * schedule.len() as u32;
        self.write_inputs(self.time, h, n);
        self.track_grid_region(&schedule.iter().map(|d| d.kernel).collect::<Vec<_>>());
        let device = &self.ctx.device;
        // One substep per submission, so each reuses the same queries.
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profile timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: queries,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile resolve"),
            size: queries as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let period = self.ctx.queue.get_timestamp_period() as f64 * 1e-9;
        let mut seconds = vec![0.0; schedule.len()];
        for k in 0..self.schedules_a_frame() {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("profiled substep"),
            });
            if k == 0 {
                self.clear_stats(&mut encoder);
                self.clear_grid_counters(&mut encoder);
            }
            for (i, d) in schedule.iter().enumerate() {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(d.kernel.entry_point()),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &set,
                        beginning_of_pass_write_index: Some(2 * i as u32),
                        end_of_pass_write_index: Some(2 * i as u32 + 1),
                    }),
                });
                self.dispatch_in_substep(&mut pass, d, k);
            }
            if k + 1 == self.schedules_a_frame() && self.world_positions {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                self.dispatch(&mut pass, Kernel::WorldPositions, entry(0, 0));
            }
            encoder.resolve_query_set(&set, 0..queries, &resolve, 0);
            self.ctx.queue.submit([encoder.finish()]);
            let t: Vec<u64> = self.read(&resolve, queries as usize);
            for (s, pair) in seconds.iter_mut().zip(t.chunks(2)) {
                *s += pair[1].saturating_sub(pair[0]) as f64 * period;
            }
        }
        self.time += h * n as f64;
        self.step_count += 1;
        Some(schedule.into_iter().zip(seconds).collect())
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
        self.buffers.bytes()
    }

    fn encode_step(&mut self, timed: bool) {
        let h = self.params.h();
        let n = self.params.substeps;
        self.write_inputs(self.time, h, n);
        let kernels: Vec<Kernel> =
            substep_schedule(&self.rods, &self.params, self.form, self.splat)
                .iter()
                .map(|d| d.kernel)
                .collect();
        self.track_grid_region(&kernels);
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("step"),
            });
        self.clear_stats(&mut encoder);
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
            for k in 0..self.schedules_a_frame() {
                self.encode_substep(&mut pass, k);
            }
            if self.world_positions {
                self.dispatch(&mut pass, Kernel::WorldPositions, entry(0, 0));
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
        let stats: Vec<u32> = self.read(&self.buffers.stats, stat::COUNT);
        // Loops the driver cut short explain whatever else is wrong.
        if let Some(e) = self.loop_limit_in(&stats) {
            return Err(e);
        }
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
        if stats[stat::PROJECTION_FAILED] > 0 {
            let rod = (stats[stat::PROJECTION_FAILED] / 2 - 1) as usize;
            let failed = crate::cpu::project::FastProjection {
                iterations: stats[stat::PROJECTION_ITERATIONS],
                max_strain: f32::from_bits(stats[stat::PROJECTION_FAILED_STRAIN]) as f64,
                singular: stats[stat::PROJECTION_FAILED] % 2 == 1,
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
            let rod = self.rods.rod_of_vertex(v);
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
            let group = self.packing.node_offset.partition_point(|&o| o <= node) - 1;
            return Err(Unstable::grid_overflow(
                &self.rods,
                group,
                node - self.packing.node_offset[group],
                self.step_count,
                self.time,
            ));
        }
        if stats[stat::TUNNELLED] > 0 {
            let code = stats[stat::TUNNEL_SITE] - 1;
            let v = (code / MAX_COLLIDERS as u32) as usize;
            let rod = self.rods.rod_of_vertex(v);
            let collider = (code % MAX_COLLIDERS as u32) as usize;
            return Err(Unstable::tunnelled(
                &self.rods,
                rod,
                self.step_count,
                self.time,
                crate::cpu::contact::Tunnel {
                    vertex: v - self.rods.vertex_offset[rod],
                    collider,
                    distance: f32::from_bits(stats[stat::TUNNEL_MOTION]) as f64,
                    limit: self.rods.colliders[collider].shape.thickness(),
                },
            ));
        }
        let mut d = diagnostics_of(&self.rods, &state, &self.params);
        d.grid_outside = counters[GRID_OUTSIDE] as u64;
        let [twist, projection] = [
            stats[stat::TWIST_ITERATIONS],
            stats[stat::PROJECTION_ITERATIONS],
        ];
        d.twist_iterations = twist;
        d.projection_iterations = match self.params.projection {
            Projection::Jacobi { iterations, .. } => {
                crate::cpu::substep::jacobi_iterations_per_substep(&self.rods, iterations)
            }
            _ => projection,
        };
        Ok((state, d))
    }

    /// Run one kernel once from time `t` with substep `h`, anchors posed at
    /// `t` and `t + h` (kernel-by-kernel parity tests). `Kernel::ProjectJacobi`
    /// runs the pass U→P.
    ///
    /// # Panics
    /// If the device cannot run `kernel` (`Kernel::supported`: a fused
    /// kernel on a device with WebGPU's default limits); `set_form` is the
    /// checked way to choose the fused kernels.
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
        assert!(
            self.pipelines.has(kernel),
            "kernel {} was not built: this device's limits do not allow it (Kernel::supported)",
            kernel.entry_point()
        );
        if kernel.is_sorted_splat() {
            self.ensure_sorted_splat()
                .expect("the sorted splat's buffers fit the device");
        }
        self.write_inputs_for(t, h, 1, kernel.is_frame());
        self.track_grid_region(&[kernel]);
        let group = match kernel {
            Kernel::ProjectJacobi => &self.buffers.jacobi_groups[&jacobi],
            k => &self.buffers.state_groups[&k],
        };
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(kernel.entry_point()),
            });
        self.clear_stats(&mut encoder);
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
            self.dispatch(&mut pass, Kernel::FramesRod, 0);
            self.dispatch(&mut pass, Kernel::TwistRod, 0);
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

    /// Before `kernels` are encoded: `grid_extent` takes the last splat's
    /// box in `grid_region` to hold every node with a field, which a pass of
    /// `grid_velocity` over all nodes (the other forms, a test's kernel)
    /// does not keep; so after one, the next walked splat and `grid_extent`
    /// start from the whole grid again (`buffers::grid_region_reset`), with
    /// the fastest velocity zero, which `grid_clear` would have reset.
    fn track_grid_region(&mut self, kernels: &[Kernel]) {
        let walked = kernels.contains(&Kernel::SubstepStartRod);
        if (walked || kernels.contains(&Kernel::GridExtent)) && !self.grid_region_fresh {
            let q = &self.ctx.queue;
            let reset = grid_region_reset(&self.rods.interaction.groups);
            q.write_buffer(&self.buffers.grid_region, 0, bytemuck::cast_slice(&reset));
            let vmax = *self.packing.node_offset.last().unwrap() * GRID_WORDS_PER_NODE + GRID_VMAX;
            q.write_buffer(&self.buffers.grid, (vmax * 4) as u64, &[0; 8]);
        }
        // A pass over all nodes may leave fields anywhere, and a splat that
        // is not the walked one mass anywhere (until the pass that follows
        // it in every schedule).
        let anywhere = [Kernel::GridVelocity, Kernel::GridSplat];
        if kernels.iter().any(|k| anywhere.contains(k)) {
            self.grid_region_fresh = false;
        } else if walked || kernels.contains(&Kernel::GridExtent) {
            self.grid_region_fresh = true;
        }
    }

    /// Zero the grid's per-frame counters (`GRID_OVERFLOW` on; not the
    /// per-substep nodes and `GRID_VMAX`, which `grid_clear` resets before
    /// a splat, and `grid_extent` after the walked one).
    fn clear_grid_counters(&self, encoder: &mut wgpu::CommandEncoder) {
        let at = ((*self.packing.node_offset.last().unwrap() * GRID_WORDS_PER_NODE + GRID_OVERFLOW)
            * 4) as u64;
        encoder.clear_buffer(
            &self.buffers.grid,
            at,
            Some(((GRID_COUNTERS - GRID_OVERFLOW) * 4) as u64),
        );
    }

    /// The grid counters (`GRID_VMAX`, `GRID_OVERFLOW`, `GRID_OUTSIDE`).
    /// After a walked substep `GRID_VMAX` reads 0: `grid_extent` moved it to
    /// `grid_region` (`read_grid_region`, word 0).
    pub fn read_grid_counters(&self) -> [u32; GRID_COUNTERS] {
        // Only the counters after the nodes: `step_checked` reads them every step.
        let at = (*self.packing.node_offset.last().unwrap() * GRID_WORDS_PER_NODE * 4) as u64;
        let bytes = self.read_bytes_at(&self.buffers.grid, at, (GRID_COUNTERS * 4) as u64);
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        std::array::from_fn(|i| words[i])
    }

    /// Group `g`'s node accumulators after the last grid kernel, as the
    /// CPU's 64-bit integers (the masses without `grid_velocity`'s flag of
    /// the nodes whose field it wrote, `NODE_FIELDED` in
    /// shaders/grid.wgsl, bit 62).
    pub fn read_grid(&self, g: usize) -> GridNodes {
        let n = *self.packing.node_offset.last().unwrap() * GRID_WORDS_PER_NODE;
        let words: Vec<u32> = self.read(&self.buffers.grid, n + GRID_COUNTERS);
        let wide = |i: usize| (words[i] as u64 | (words[i + 1] as u64) << 32) as i64;
        let nodes = self.packing.node_offset[g]..self.packing.node_offset[g + 1];
        let mass: Vec<i64> = nodes
            .clone()
            .map(|k| wide(k * GRID_WORDS_PER_NODE) & !(1 << 62))
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
        let f: Vec<[f32; 4]> = self.read(
            &self.buffers.grid_fields,
            *self.packing.node_offset.last().unwrap(),
        );
        f[self.packing.node_offset[g]..self.packing.node_offset[g + 1]]
            .iter()
            .map(|v| v.map(|c| c as f64))
            .collect()
    }

    /// World positions as `grid_splat` computes them: the rod origin plus
    /// the stored position (`position_f32`), added in f32.
    pub fn read_grid_positions(&self) -> Vec<[f32; 3]> {
        let pos: Vec<GpuPosition> = self.read_vertices_of(&self.buffers.pos);
        pos.iter()
            .zip(self.packing.vertex_origin.iter())
            .map(|(p, o)| (o.as_vec3() + p.as_f32()).to_array())
            .collect()
    }

    /// Velocities as stored (f32).
    pub fn read_velocities_f32(&self) -> Vec<[f32; 3]> {
        let v: Vec<[f32; 4]> = self.read_vertices_of(&self.buffers.vel);
        v.iter().map(|v| [v[0], v[1], v[2]]).collect()
    }

    /// The sorted splat's per-cell words (`layout::grid_cells_words`):
    /// counts, first slots within each block, the blocks' first slots, the
    /// slots in all.
    ///
    /// # Panics
    ///
    /// Before the sorted splat was asked for (`set_splat`) or one of its
    /// kernels run: its buffers are not made until then.
    pub fn read_grid_cells(&self) -> Vec<u32> {
        let n = super::layout::grid_cells_words(self.packing.node_count());
        self.assert_sorted_splat_made(&self.buffers.grid_cells, n);
        self.read(&self.buffers.grid_cells, n)
    }

    fn assert_sorted_splat_made(&self, buffer: &wgpu::Buffer, words: usize) {
        assert!(
            buffer.size() >= (words * 4) as u64,
            "the sorted splat's buffers are made when it is first asked for (set_splat) or run"
        );
    }

    /// The sorted splat's per-vertex words (`layout::grid_sort_words`):
    /// each vertex's cell, its rank, the vertex in each slot, each
    /// vertex's place in its cell.
    ///
    /// # Panics
    ///
    /// As `read_grid_cells`.
    pub fn read_grid_sort(&self) -> Vec<u32> {
        let n = super::layout::grid_sort_words(self.rods.vertex_count());
        self.assert_sorted_splat_made(&self.buffers.grid_sort, n);
        self.read(&self.buffers.grid_sort, n)
    }

    /// The `grid_region` buffer's words (`layout::grid_region_words`): the
    /// nodes the last `grid_velocity_box` visited, per group, and the box the
    /// last walked splat reached.
    pub fn read_grid_region(&self) -> Vec<u32> {
        let n = super::layout::grid_region_words(self.rods.interaction.groups.len());
        self.read(&self.buffers.grid_region, n)
    }

    fn read<T: bytemuck::Pod>(&self, buffer: &wgpu::Buffer, count: usize) -> Vec<T> {
        let bytes = self.read_bytes(buffer, (count * size_of::<T>()) as u64);
        bytemuck::pod_collect_to_vec(&bytes)
    }

    /// A per-vertex buffer's elements in rod order (`VertexLayout::unpack`).
    fn read_vertices_of<T: bytemuck::Pod>(&self, buffer: &wgpu::Buffer) -> Vec<T> {
        let count = self.rods.vertex_count();
        self.packing.layout.unpack(self.read(buffer, count))
    }

    /// Per-vertex values in rod order written to a per-vertex buffer, in its
    /// order (`VertexLayout::pack`).
    fn write_vertices<T: bytemuck::Pod>(&self, buffer: &wgpu::Buffer, x: &[T]) {
        let packed = self.packing.layout.pack(x);
        self.ctx
            .queue
            .write_buffer(buffer, 0, bytemuck::cast_slice(&packed));
    }

    /// Where the per-vertex buffers (`position_buffer`, `frame_buffer`, and
    /// the state's others) hold each vertex (`VertexLayout`): element
    /// `vertex_layout().slot(v)` is vertex `v` of the `RodSet`.
    pub fn vertex_layout(&self) -> VertexLayout {
        self.packing.layout
    }

    /// One of the per-vertex position buffers, in f64.
    pub fn read_vertices(&self, which: VertexBuffer) -> Vec<DVec3> {
        let b = self.buffers.vertex_buffer(which);
        let v: Vec<GpuPosition> = self.read_vertices_of(b);
        self.packing.world_positions(&v)
    }

    /// Forces of the last `forces` kernel (N).
    pub fn read_forces(&self) -> Vec<DVec3> {
        let s: Vec<GpuScratch> = self.read_vertices_of(&self.buffers.scratch);
        s.into_iter().map(|s| dvec3(s.force)).collect()
    }

    /// Most twist Newton iterations and fast-projection iterations any rod
    /// used in the last submission.
    pub fn read_stats(&self) -> [u32; 2] {
        let s: Vec<u32> = self.read(&self.buffers.stats, stat::COUNT);
        [s[stat::TWIST_ITERATIONS], s[stat::PROJECTION_ITERATIONS]]
    }

    /// Whether a kernel ran into the driver's limit on the loop iterations
    /// of an invocation (llvmpipe's; shaders/common.wgsl `loops_ran_out`)
    /// since the state was last written (`write_state`; the flag outlives
    /// the frames' other statistics, `clear_stats`): the error naming the
    /// rod, whose state cannot be trusted; `None` where every loop finished.
    pub fn loops_cut_short(&self) -> Option<Unstable> {
        self.loop_limit_in(&self.read(&self.buffers.stats, stat::COUNT))
    }

    /// `loops_cut_short` from statistics already read back.
    fn loop_limit_in(&self, stats: &[u32]) -> Option<Unstable> {
        (stats[stat::LOOPS_CUT_SHORT] > 0).then(|| {
            Unstable::loop_limit(
                &self.rods,
                stats[stat::LOOPS_CUT_SHORT] as usize - 1,
                self.step_count,
                self.time,
                self.running_form().name(),
            )
        })
    }

    /// Vertices the last `contact` kernels found tunnelling (`stat::TUNNELLED`).
    pub fn read_tunnel_count(&self) -> u32 {
        let s: Vec<u32> = self.read(&self.buffers.stats, stat::COUNT);
        s[stat::TUNNELLED]
    }

    /// Per-vertex contacts recorded by the last phase-0 `contact` kernel.
    pub fn read_contacts(&self) -> Vec<Contact> {
        let c: Vec<GpuContact> = self.read_vertices_of(&self.buffers.contacts);
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
        self.write_vertices(&self.buffers.contacts, &c);
    }

    /// The whole state, converted to f64.
    pub fn read_state(&self) -> State {
        self.read_state_and_chatter().0
    }

    /// `read_state`, and the first vertex whose chatter count
    /// (`VEL_CHATTER`, kernel `project_velocity`) reached `stability::CHATTER_SUBSTEPS`.
    pub fn read_state_and_chatter(&self) -> (State, Option<usize>) {
        let pos: Vec<GpuPosition> = self.read_vertices_of(&self.buffers.pos);
        let vel: Vec<[f32; 4]> = self.read_vertices_of(&self.buffers.vel);
        let limit = crate::model::stability::CHATTER_SUBSTEPS as f32;
        let chatter = vel.iter().position(|v| v[VEL_CHATTER] >= limit);
        let frame: Vec<GpuEdgeFrame> = self.read_vertices_of(&self.buffers.frame);
        (self.packing.state(self.time, &pos, &vel, &frame), chatter)
    }

    /// Replace the whole state (rounded to f32; positions to the remainder's
    /// f32, ~6e-14 m: `GpuPosition::new`). Does not re-solve the twist.
    pub fn write_state(&mut self, state: &State) {
        let pos = self.packing.positions(&state.pos);
        let vel: Vec<[f32; 4]> = state.vel.iter().map(|&v| vec4(v, 0.0)).collect();
        let frame = self.packing.frames(state);
        self.write_vertices(&self.buffers.pos, &pos);
        self.write_vertices(&self.buffers.pos_unc, &pos);
        self.write_vertices(&self.buffers.vel, &vel);
        self.write_vertices(&self.buffers.frame, &frame);
        // A new state: no kernel has cut its loops short yet (`clear_stats`).
        self.ctx
            .queue
            .write_buffer(&self.buffers.stats, 20, &[0; 4]);
        self.time = state.time;
    }
}

/// Positions on their way back from the GPU (`GpuSimulator::read_positions_async`).
pub struct PositionReadback {
    device: wgpu::Device,
    /// `None` once taken.
    staging: Option<wgpu::Buffer>,
    /// The map callback's result, when it has run.
    mapped: std::sync::Arc<std::sync::Mutex<Option<Result<(), wgpu::BufferAsyncError>>>>,
    origin: std::sync::Arc<[DVec3]>,
    count: usize,
    /// The position buffer's order (`VertexLayout`).
    layout: VertexLayout,
    time: f64,
}

/// What a `PositionReadback` yields.
#[derive(Clone, Debug, PartialEq)]
pub struct Positions {
    /// Simulated time of the positions (s).
    pub time: f64,
    /// World positions (m), vertices in `RodSet` order.
    pub pos: Vec<DVec3>,
}

impl PositionReadback {
    /// The positions if the GPU has delivered them, else `None` at once:
    /// polls the device without waiting. Device loss or a failed mapping is
    /// an error; after the positions were taken it returns `None`.
    pub fn try_take(&mut self) -> Result<Option<Positions>, GpuError> {
        if self.staging.is_none() {
            return Ok(None);
        }
        self.device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| GpuError::ReadBack(e.to_string()))?;
        let result = self.mapped.lock().unwrap().take();
        match result {
            None => Ok(None),
            Some(Err(e)) => Err(GpuError::ReadBack(e.to_string())),
            Some(Ok(())) => {
                let staging = self.staging.take().unwrap();
                let pos: Vec<GpuPosition> = {
                    let view = staging
                        .slice(..)
                        .get_mapped_range()
                        .map_err(|e| GpuError::ReadBack(e.to_string()))?;
                    self.layout.unpack(bytemuck::pod_collect_to_vec(
                        &view[..self.count * size_of::<GpuPosition>()],
                    ))
                };
                staging.unmap();
                Ok(Some(Positions {
                    time: self.time,
                    pos: super::packing::world_positions(&self.origin, &pos),
                }))
            }
        }
    }

    /// Block until the positions arrive.
    pub fn wait(mut self) -> Result<Positions, GpuError> {
        loop {
            if let Some(p) = self.try_take()? {
                return Ok(p);
            }
            if self.staging.is_none() {
                return Err(GpuError::ReadBack(
                    "the positions were already taken".into(),
                ));
            }
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| GpuError::ReadBack(e.to_string()))?;
        }
    }
}

/// Index of the step entry of substep `k` in `phase` (two per substep).
fn entry(k: u32, phase: u32) -> u32 {
    2 * k + phase
}
