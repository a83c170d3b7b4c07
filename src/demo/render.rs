//! Drawing for the demo: strands as ribbons straight from the simulation's
//! GPU buffers (no copy through the CPU), the head and the ground as meshes.
//! Shaders in `shaders/render.wgsl`.

use bytemuck::{Pod, Zeroable};
use glam::{DQuat, DVec3, Mat4, Vec3, Vec4};
use wgpu::util::DeviceExt;

use crate::gpu::GpuSimulator;
use crate::model::colliders::{Collider, Shape};
use crate::model::rods::RodSet;

/// MSAA samples (WebGPU guarantees 4 for every renderable colour format).
pub const SAMPLES: u32 = 4;
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// WGSL `Camera`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuCamera {
    pub view_proj: [[f32; 4]; 4],
    pub eye: [f32; 4],
    pub light_dir: [f32; 4],
    pub root_color: [f32; 4],
    pub tip_color: [f32; 4],
    pub strand: [f32; 4],
}
const _: () = assert!(size_of::<GpuCamera>() == 144);

/// WGSL `MeshUniform`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuMeshUniform {
    pub model: [[f32; 4]; 4],
    pub color: [f32; 4],
}
const _: () = assert!(size_of::<GpuMeshUniform>() == 80);

/// WGSL `StrandInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuStrandInfo {
    pub data: [f32; 4],
    pub origin: [f32; 4],
}
const _: () = assert!(size_of::<GpuStrandInfo>() == 32);

/// A mesh vertex (vertex buffer, locations 0 and 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct MeshVertex {
    pub position: [f32; 4],
    pub normal: [f32; 4],
}

/// Layouts of the render structs shared with WGSL, for the layout test.
pub fn shared_structs() -> Vec<crate::gpu::layout::StructLayout> {
    use std::mem::offset_of;
    vec![
        (
            "Camera",
            size_of::<GpuCamera>(),
            vec![
                ("view_proj", offset_of!(GpuCamera, view_proj)),
                ("eye", offset_of!(GpuCamera, eye)),
                ("light_dir", offset_of!(GpuCamera, light_dir)),
                ("root_color", offset_of!(GpuCamera, root_color)),
                ("tip_color", offset_of!(GpuCamera, tip_color)),
                ("strand", offset_of!(GpuCamera, strand)),
            ],
        ),
        (
            "MeshUniform",
            size_of::<GpuMeshUniform>(),
            vec![
                ("model", offset_of!(GpuMeshUniform, model)),
                ("color", offset_of!(GpuMeshUniform, color)),
            ],
        ),
        (
            "StrandInfo",
            size_of::<GpuStrandInfo>(),
            vec![
                ("data", offset_of!(GpuStrandInfo, data)),
                ("origin", offset_of!(GpuStrandInfo, origin)),
            ],
        ),
    ]
}

pub const SHADER_SOURCE: &str = include_str!("../../shaders/render.wgsl");

/// How strands of a scene look.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    /// Linear RGB at the root and the tip.
    pub root: Vec3,
    pub tip: Vec3,
    /// Relative brightness variation between strands.
    pub variation: f32,
    /// Kajiya–Kay specular exponent.
    pub shininess: f32,
    /// Ribbon half-width at the root (m); a drawn strand stands for a wisp.
    pub half_width: f32,
    /// Orient ribbons by the material frame (shows twist) instead of facing the camera.
    pub material_ribbons: bool,
    pub background: [f64; 3],
}

impl Look {
    pub fn hair() -> Look {
        Look {
            root: Vec3::new(0.045, 0.025, 0.012),
            tip: Vec3::new(0.30, 0.17, 0.07),
            variation: 0.5,
            shininess: 60.0,
            half_width: 8e-4,
            material_ribbons: false,
            background: [0.55, 0.62, 0.72],
        }
    }
    pub fn curly() -> Look {
        Look {
            root: Vec3::new(0.12, 0.03, 0.01),
            tip: Vec3::new(0.55, 0.18, 0.05),
            ..Look::hair()
        }
    }
    pub fn grass() -> Look {
        Look {
            root: Vec3::new(0.03, 0.09, 0.015),
            tip: Vec3::new(0.30, 0.48, 0.10),
            variation: 0.4,
            shininess: 20.0,
            half_width: 2.2e-3,
            material_ribbons: true,
            background: [0.62, 0.75, 0.88],
        }
    }
    pub fn cable() -> Look {
        Look {
            root: Vec3::new(0.15, 0.2, 0.35),
            tip: Vec3::new(0.75, 0.45, 0.15),
            variation: 0.2,
            shininess: 30.0,
            half_width: 4e-3,
            material_ribbons: true,
            background: [0.5, 0.5, 0.55],
        }
    }
}

/// The camera's vertical field of view (degrees).
pub const FOV_Y: f32 = 40.0;

/// Orbit camera about a target point.
#[derive(Clone, Copy, Debug)]
pub struct OrbitCamera {
    pub target: Vec3,
    /// Rotation about +y and elevation (rad).
    pub yaw: f32,
    pub pitch: f32,
    pub distance: f32,
}

impl OrbitCamera {
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        self.target + Vec3::new(cp * sy, sp, cp * cy) * self.distance
    }

    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        let proj = perspective(
            FOV_Y.to_radians(),
            aspect.max(1e-3),
            0.01 * self.distance,
            100.0 * self.distance,
        );
        proj * look_at(self.eye(), self.target, Vec3::Y)
    }

    /// Drag by (dx, dy) pixels.
    pub fn orbit(&mut self, dx: f32, dy: f32) {
        self.yaw -= dx * 0.008;
        self.pitch = (self.pitch + dy * 0.008).clamp(-1.5, 1.5);
    }

    /// The world displacement under a cursor moved by (dx, dy) pixels in
    /// a view `height` pixels high, in the plane through the target facing
    /// the camera (so a dragged point there stays under the cursor).
    pub fn drag_delta(&self, dx: f32, dy: f32, height: u32) -> Vec3 {
        let forward = (self.target - self.eye()).normalize();
        let right = forward.cross(Vec3::Y).normalize();
        let up = right.cross(forward);
        let metres_per_pixel =
            2.0 * self.distance * (0.5 * FOV_Y.to_radians()).tan() / height as f32;
        (right * dx - up * dy) * metres_per_pixel
    }

    /// Wheel: positive zooms in.
    pub fn zoom(&mut self, steps: f32) {
        self.distance = (self.distance * 0.9f32.powf(steps)).clamp(0.05, 200.0);
    }
}

/// Right-handed perspective projection to wgpu's clip space (depth 0..1).
pub fn perspective(fov_y: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let f = 1.0 / (0.5 * fov_y).tan();
    let r = far / (near - far);
    Mat4::from_cols(
        Vec4::new(f / aspect, 0.0, 0.0, 0.0),
        Vec4::new(0.0, f, 0.0, 0.0),
        Vec4::new(0.0, 0.0, r, -1.0),
        Vec4::new(0.0, 0.0, r * near, 0.0),
    )
}

/// Right-handed view matrix looking from `eye` at `target`.
pub fn look_at(eye: Vec3, target: Vec3, up: Vec3) -> Mat4 {
    let f = (target - eye).normalize();
    let s = f.cross(up).normalize();
    let u = s.cross(f);
    Mat4::from_cols(
        Vec4::new(s.x, u.x, -f.x, 0.0),
        Vec4::new(s.y, u.y, -f.y, 0.0),
        Vec4::new(s.z, u.z, -f.z, 0.0),
        Vec4::new(-s.dot(eye), -u.dot(eye), f.dot(eye), 1.0),
    )
}

struct Mesh {
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    count: u32,
    uniform: wgpu::Buffer,
    group: wgpu::BindGroup,
}

/// A UV sphere of unit radius.
pub fn sphere(segments: u32, rings: u32) -> (Vec<MeshVertex>, Vec<u32>) {
    let mut v = Vec::new();
    for r in 0..=rings {
        let phi = std::f32::consts::PI * r as f32 / rings as f32;
        for s in 0..=segments {
            let theta = std::f32::consts::TAU * s as f32 / segments as f32;
            let n = [
                phi.sin() * theta.cos(),
                phi.cos(),
                phi.sin() * theta.sin(),
                0.0,
            ];
            v.push(MeshVertex {
                position: [n[0], n[1], n[2], 1.0],
                normal: n,
            });
        }
    }
    let mut idx = Vec::new();
    let w = segments + 1;
    for r in 0..rings {
        for s in 0..segments {
            let (a, b) = (r * w + s, (r + 1) * w + s);
            idx.extend([a, a + 1, b, b, a + 1, b + 1]);
        }
    }
    (v, idx)
}

/// A collider's surface in its anchor's rest frame (relative to the pivot,
/// as the collider stores it), to draw with the anchor's pose as model
/// matrix. A plane is drawn as a square of half-size `half` about the point
/// of the plane nearest `near`; a mesh collider as the mesh its SDF was baked
/// from, with flat normals.
pub fn collider_geometry(c: &Collider, near: DVec3, half: f64) -> (Vec<MeshVertex>, Vec<u32>) {
    let vertex = |p: DVec3, n: DVec3| MeshVertex {
        position: [p.x as f32, p.y as f32, p.z as f32, 1.0],
        normal: [n.x as f32, n.y as f32, n.z as f32, 0.0],
    };
    let normal_of =
        |m: &MeshVertex| DVec3::new(m.normal[0].into(), m.normal[1].into(), m.normal[2].into());
    match &c.shape {
        Shape::Sphere { center, radius } => {
            let (mut v, i) = sphere(48, 24);
            for m in &mut v {
                let n = normal_of(m);
                *m = vertex(*center + n * *radius, n);
            }
            (v, i)
        }
        Shape::Capsule { a, b, radius } => {
            // A sphere whose upper half moves to b and lower half to a: an
            // odd ring count puts no ring on the equator, and the band
            // across it becomes the cylinder.
            let (mut v, i) = sphere(48, 25);
            let axis = (*b - *a).normalize_or(DVec3::Y);
            let turn = DQuat::from_rotation_arc(DVec3::Y, axis);
            for m in &mut v {
                let n = turn * normal_of(m);
                let end = if m.normal[1] > 0.0 { *b } else { *a };
                *m = vertex(end + n * *radius, n);
            }
            (v, i)
        }
        Shape::Plane { point, normal } => {
            let centre = near - *normal * (near - *point).dot(*normal);
            let turn = DQuat::from_rotation_arc(DVec3::Y, *normal);
            let (mut v, i) = quad();
            for m in &mut v {
                let p = DVec3::new(m.position[0] as f64, 0.0, m.position[2] as f64);
                *m = vertex(centre + turn * (p * half), *normal);
            }
            (v, i)
        }
        Shape::Sdf(g) => {
            let mesh = &g.surface;
            let mut v = Vec::with_capacity(3 * mesh.triangles.len());
            for t in &mesh.triangles {
                let [p0, p1, p2] = t.map(|k| mesh.vertices[k as usize]);
                let n = (p1 - p0).cross(p2 - p0).normalize_or(DVec3::Y);
                v.extend([vertex(p0, n), vertex(p1, n), vertex(p2, n)]);
            }
            let i = (0..v.len() as u32).collect();
            (v, i)
        }
    }
}

/// A square in the y = 0 plane from −1 to 1.
pub fn quad() -> (Vec<MeshVertex>, Vec<u32>) {
    let n = [0.0, 1.0, 0.0, 0.0];
    let v = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
        .map(|(x, z)| MeshVertex {
            position: [x, 0.0, z, 1.0],
            normal: n,
        })
        .to_vec();
    (v, vec![0, 2, 1, 0, 3, 2])
}

/// Per-vertex strand data for `StrandInfo`; `origins` as
/// `GpuSimulator::vertex_origins` gives them.
pub fn strand_info(rods: &RodSet, origins: &[glam::DVec3]) -> Vec<GpuStrandInfo> {
    let mut out = Vec::with_capacity(rods.vertex_count());
    for r in 0..rods.rod_count() {
        let e = rods.edges(r);
        let total: f64 = rods.rest_len[e.clone()].iter().sum();
        let seed = (r as f64 * 0.618_033_988_75).fract() as f32;
        let mut s = 0.0;
        let n = rods.vertices(r).len();
        for i in 0..n {
            let o = origins[out.len()].as_vec3();
            out.push(GpuStrandInfo {
                data: [
                    seed,
                    (s / total) as f32,
                    if i + 1 < n { 1.0 } else { 0.0 },
                    1.0,
                ],
                origin: [o.x, o.y, o.z, 0.0],
            });
            if i + 1 < n {
                s += rods.rest_len[e.start + i];
            }
        }
    }
    out
}

/// Pipelines and buffers for drawing one simulation.
pub struct Renderer {
    strand_pipeline: wgpu::RenderPipeline,
    mesh_pipeline: wgpu::RenderPipeline,
    camera: wgpu::Buffer,
    strand_group: wgpu::BindGroup,
    camera_group: wgpu::BindGroup,
    meshes: Vec<Mesh>,
    instances: u32,
    look: Look,
    size: (u32, u32),
    msaa: wgpu::TextureView,
    depth: wgpu::TextureView,
    format: wgpu::TextureFormat,
}

/// Where meshes are drawn this frame: model matrices and colours.
pub struct MeshPose {
    pub model: Mat4,
    pub color: Vec3,
}

impl Renderer {
    /// `meshes`: how many meshes to allocate (the head sphere first, then a ground quad),
    /// given as their geometry.
    pub fn new(
        device: &wgpu::Device,
        format: wgpu::TextureFormat,
        size: (u32, u32),
        sim: &GpuSimulator,
        look: Look,
        meshes: &[(Vec<MeshVertex>, Vec<u32>)],
    ) -> Renderer {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render"),
            source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
        });
        let uniform_entry = |binding: u32, visibility| wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let storage_entry = |binding: u32| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let vf = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let strand_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("strands"),
            entries: &[
                uniform_entry(0, vf),
                storage_entry(1),
                storage_entry(2),
                storage_entry(3),
            ],
        });
        let camera_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("camera"),
            entries: &[uniform_entry(0, vf)],
        });
        let mesh_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("mesh"),
            entries: &[uniform_entry(0, vf)],
        });
        let camera = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("camera"),
            size: size_of::<GpuCamera>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let info = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("strand info"),
            contents: bytemuck::cast_slice(&strand_info(sim.rods(), sim.vertex_origins())),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let strand_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("strands"),
            layout: &strand_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: camera.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: sim.position_buffer().as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: info.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: sim.frame_buffer().as_entire_binding(),
                },
            ],
        });
        let camera_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("camera"),
            layout: &camera_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: camera.as_entire_binding(),
            }],
        });
        let depth_stencil = Some(wgpu::DepthStencilState {
            format: DEPTH_FORMAT,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: Default::default(),
            bias: Default::default(),
        });
        let multisample = wgpu::MultisampleState {
            count: SAMPLES,
            ..Default::default()
        };
        let target = [Some(wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        // The simulation's per-vertex buffers in its order
        // (`GpuSimulator::vertex_layout`, shaders/render.wgsl `vertex_slot`).
        let layout = sim.vertex_layout();
        let slots = [
            ("INTERLEAVE", layout.interleave as f64),
            ("INTERLEAVED_RODS", layout.rods as f64),
        ];
        let strand_pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("strands"),
            layout: Some(
                &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("strands"),
                    bind_group_layouts: &[Some(&strand_layout)],
                    immediate_size: 0,
                }),
            ),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("strand_vertex"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &slots,
                    ..Default::default()
                },
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                cull_mode: None,
                ..Default::default()
            },
            depth_stencil: depth_stencil.clone(),
            multisample,
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("strand_fragment"),
                compilation_options: Default::default(),
                targets: &target,
            }),
            multiview_mask: None,
            cache: None,
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x4, 1 => Float32x4];
        let mesh_pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("mesh"),
            layout: Some(
                &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("mesh"),
                    bind_group_layouts: &[Some(&camera_layout), Some(&mesh_layout)],
                    immediate_size: 0,
                }),
            ),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("mesh_vertex"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<MeshVertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &attributes,
                })],
            },
            primitive: wgpu::PrimitiveState {
                cull_mode: None,
                ..Default::default()
            },
            depth_stencil,
            multisample,
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("mesh_fragment"),
                compilation_options: Default::default(),
                targets: &target,
            }),
            multiview_mask: None,
            cache: None,
        });
        let meshes = meshes
            .iter()
            .map(|(v, i)| {
                let uniform = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("mesh"),
                    size: size_of::<GpuMeshUniform>() as u64,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                Mesh {
                    vertices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("mesh vertices"),
                        contents: bytemuck::cast_slice(v),
                        usage: wgpu::BufferUsages::VERTEX,
                    }),
                    indices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("mesh indices"),
                        contents: bytemuck::cast_slice(i),
                        usage: wgpu::BufferUsages::INDEX,
                    }),
                    count: i.len() as u32,
                    group: device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("mesh"),
                        layout: &mesh_layout,
                        entries: &[wgpu::BindGroupEntry {
                            binding: 0,
                            resource: uniform.as_entire_binding(),
                        }],
                    }),
                    uniform,
                }
            })
            .collect();
        let (msaa, depth) = targets(device, format, size);
        let size = (size.0.max(1), size.1.max(1));
        Renderer {
            strand_pipeline,
            mesh_pipeline,
            camera,
            strand_group,
            camera_group,
            meshes,
            instances: sim.rods().vertex_count() as u32,
            look,
            size,
            msaa,
            depth,
            format,
        }
    }

    /// Recreate the size-dependent targets (never zero-sized).
    pub fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        let size = (size.0.max(1), size.1.max(1));
        if size != self.size {
            self.size = size;
            (self.msaa, self.depth) = targets(device, self.format, size);
        }
    }

    pub fn look(&self) -> &Look {
        &self.look
    }

    /// Write the camera and the meshes' poses for this frame.
    pub fn update(&self, queue: &wgpu::Queue, camera: &OrbitCamera, meshes: &[MeshPose]) {
        let aspect = self.size.0 as f32 / self.size.1 as f32;
        let eye = camera.eye();
        let light = Vec3::new(0.4, 0.8, 0.45).normalize();
        let l = &self.look;
        let u = GpuCamera {
            view_proj: camera.view_proj(aspect).to_cols_array_2d(),
            eye: eye.extend(1.0).to_array(),
            light_dir: light.extend(0.0).to_array(),
            root_color: l.root.extend(l.variation).to_array(),
            tip_color: l.tip.extend(l.shininess).to_array(),
            strand: [
                l.half_width,
                if l.material_ribbons { 1.0 } else { 0.0 },
                0.0,
                0.0,
            ],
        };
        queue.write_buffer(&self.camera, 0, bytemuck::bytes_of(&u));
        for (mesh, pose) in self.meshes.iter().zip(meshes) {
            let m = GpuMeshUniform {
                model: pose.model.to_cols_array_2d(),
                color: pose.color.extend(1.0).to_array(),
            };
            queue.write_buffer(&mesh.uniform, 0, bytemuck::bytes_of(&m));
        }
    }

    /// Draw into `target` (resolving the multisampled image into it).
    pub fn draw(&self, encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView) {
        let [r, g, b] = self.look.background;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("draw"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &self.msaa,
                depth_slice: None,
                resolve_target: Some(target),
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a: 1.0 }),
                    store: wgpu::StoreOp::Discard,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&self.mesh_pipeline);
        pass.set_bind_group(0, &self.camera_group, &[]);
        for m in &self.meshes {
            pass.set_bind_group(1, &m.group, &[]);
            pass.set_vertex_buffer(0, m.vertices.slice(..));
            pass.set_index_buffer(m.indices.slice(..), wgpu::IndexFormat::Uint32);
            pass.draw_indexed(0..m.count, 0, 0..1);
        }
        pass.set_pipeline(&self.strand_pipeline);
        pass.set_bind_group(0, &self.strand_group, &[]);
        pass.draw(0..6, 0..self.instances);
    }
}

fn targets(
    device: &wgpu::Device,
    format: wgpu::TextureFormat,
    (w, h): (u32, u32),
) -> (wgpu::TextureView, wgpu::TextureView) {
    // Never zero-sized (a minimised window reports 0 × 0).
    let (w, h) = (w.max(1), h.max(1));
    let make = |label, format| {
        device
            .create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: SAMPLES,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            })
            .create_view(&Default::default())
    };
    (make("msaa", format), make("depth", DEPTH_FORMAT))
}
