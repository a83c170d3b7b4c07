//! The compute pipelines of every kernel and their bind-group layouts:
//! stateless, built once per device (`GpuContext::pipelines`) and shared by
//! every simulator on it. The state they run on is `super::buffers`.

use std::collections::HashMap;

use super::layout::{BindingKind, GpuStep, Kernel, SHADER_SOURCE, binding_kind, fused_supported};

/// The shader module's kernels, compiled for one device.
pub struct Pipelines {
    /// Group 0 of every kernel: the step values (dynamic offset), rods, rest
    /// data and anchor poses.
    pub world_layout: wgpu::BindGroupLayout,
    /// Group 1 of each kernel: the state buffers it binds (`Kernel::bindings`).
    pub layouts: HashMap<Kernel, wgpu::BindGroupLayout>,
    /// Each kernel's pipeline.
    pub pipelines: HashMap<Kernel, wgpu::ComputePipeline>,
    /// Whether the fused substep kernels were built (`fused_supported`):
    /// without them `layouts` and `pipelines` lack those kernels.
    pub fused: bool,
}

/// A compute-visible storage buffer entry.
fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// The layout entry of state binding `b` (`binding_kind`).
fn layout_entry(b: u32) -> wgpu::BindGroupLayoutEntry {
    match binding_kind(b) {
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
    }
}

impl Pipelines {
    /// Compile every kernel of shaders/ for `device`.
    pub fn new(device: &wgpu::Device) -> Pipelines {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("strands"),
            source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
        });
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
        let mut layouts = HashMap::new();
        let mut pipelines = HashMap::new();
        let fused = fused_supported(&device.limits());
        for kernel in Kernel::ALL.into_iter().filter(|k| fused || !k.is_fused()) {
            let name = kernel.entry_point();
            let entries: Vec<_> = kernel.bindings().iter().map(|&b| layout_entry(b)).collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(name),
                entries: &entries,
            });
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
            layouts.insert(kernel, layout);
        }
        Pipelines {
            world_layout,
            layouts,
            pipelines,
            fused,
        }
    }
}
