//! The compute pipelines of every kernel and their bind-group layouts:
//! stateless, built once per device (`GpuContext::pipelines`) and shared by
//! every simulator on it. The state they run on is `super::buffers`.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::layout::{BindingKind, GpuStep, Kernel, Variant, binding_kind, shader_variant};

/// The colliders a set of pipelines handles: their kinds, a bit per
/// `colliders::kind` value. Contact code for a kind the scene lacks is
/// compiled out (WGSL `override HAS_SPHERE` etc., shaders/contact.wgsl): a
/// software adapter runs every branch of a kernel under a lane mask, and
/// removing the unused shapes cut a substep of the grass workload (a ground
/// plane) on lavapipe by a third.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ColliderKinds {
    /// Bit k set when a collider of kind k (`colliders::kind`) is among them.
    pub kinds: u8,
}

impl ColliderKinds {
    /// Every kind (the pipelines `GpuContext::pipelines` returns, which run
    /// any scene).
    pub const ALL: ColliderKinds = ColliderKinds { kinds: 0b1111 };

    /// The kinds among `colliders`.
    pub fn of(colliders: &[crate::model::colliders::Collider]) -> ColliderKinds {
        ColliderKinds {
            kinds: colliders.iter().fold(0, |m, c| m | 1 << c.shape.kind()),
        }
    }

    /// Whether kind `k` (`colliders::kind`) is among them.
    pub fn has(self, k: u32) -> bool {
        self.kinds & (1 << k) != 0
    }

    /// The WGSL override constants that say so.
    pub fn constants(self) -> [(&'static str, f64); 4] {
        use crate::model::colliders::kind::*;
        let on = |k| if self.has(k) { 1.0 } else { 0.0 };
        [
            ("HAS_SPHERE", on(SPHERE)),
            ("HAS_CAPSULE", on(CAPSULE)),
            ("HAS_PLANE", on(PLANE)),
            ("HAS_SDF", on(SDF)),
        ]
    }
}

/// The shader module's kernels for one device: their layouts made at once,
/// each pipeline compiled on first use (`Pipelines::pipeline`): in a
/// simulator's first step in a form, or a frame that needs a kernel its
/// earlier frames did not (after `set_params` or `set_form`), unless
/// `GpuSimulator::compile_kernels` asked first. Compiling all of them up
/// front, kernels of forms it never runs among them, held a one-strand
/// bench 26.9 s on lavapipe with Mesa's shader cache off (16.2 s
/// compiling as needed). On an H200 (NVIDIA 580.159.04) a one-strand
/// bench that compiled them all took 58 s, 37 s of it CPU time, with a
/// cold driver cache and other processes compiling beside it; most of it
/// presumably the driver's compiler (naga's share on lavapipe is under
/// 1 % by perf), not measured apart.
pub struct Pipelines {
    /// Group 0 of every kernel: the step values (dynamic offset), rods, rest
    /// data and anchor poses.
    pub world_layout: wgpu::BindGroupLayout,
    /// Group 1 of each kernel: the state buffers it binds (`Kernel::bindings`).
    pub layouts: HashMap<Kernel, wgpu::BindGroupLayout>,
    /// Each kernel the device can run (`Kernel::supported`; the fused
    /// substep kernels are missing on a device with WebGPU's default limits,
    /// `Pipelines::has`), with its pipeline once compiled.
    kernels: HashMap<Kernel, LazyKernel>,
    /// The shader modules compiled so far, by whether they are the
    /// whole-frame kernel's (its substep values from the frame's table).
    modules: Mutex<HashMap<bool, wgpu::ShaderModule>>,
    device: wgpu::Device,
    /// The WGSL override constants of every pipeline.
    constants: Vec<(&'static str, f64)>,
    /// Vertices per rod of the interleaved per-vertex buffers they index
    /// (`packing::VertexLayout::interleave`; 0: consecutive).
    pub interleave: u32,
    /// The collider kinds the contact code handles.
    pub kinds: ColliderKinds,
    /// The variant asked for.
    pub variant: Variant,
}

/// A kernel's pipeline layout, and its pipeline once compiled.
struct LazyKernel {
    layout: wgpu::PipelineLayout,
    pipeline: OnceLock<wgpu::ComputePipeline>,
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

/// The kernels' module, without the counter wgpu would add to every loop
/// against loops that never end (`force_loop_bounding`): in the walked
/// kernels, which are loops over a rod's vertices, it cost ~2 % of the step
/// on lavapipe. Every other check
/// stays (array indices clamped, buffer accesses bounded, integer division
/// guarded).
fn kernels_module(device: &wgpu::Device, desc: wgpu::ShaderModuleDescriptor) -> wgpu::ShaderModule {
    let checks = wgpu::ShaderRuntimeChecks {
        force_loop_bounding: false,
        ..wgpu::ShaderRuntimeChecks::checked()
    };
    // SAFETY: wgpu asks, without loop bounding, that no loop of the module
    // runs forever. Every loop in shaders/ ends: each `for` counts over a
    // range fixed when it starts (a rod's vertices or edges, 3 or more
    // vertices by src/build.rs, so that `vertex_count − 2` does not wrap;
    // the colliders; the grid groups; a frame's substeps) or
    // clears one bit of a mask per pass whose lowest bit only rises
    // (contact's colliders, the splat window's corners); the fast
    // projection's `while` stops at `fast_max_iterations`, the twist's
    // Newton loop at `twist_max_iterations` and its line search once the
    // step has halved below 1e-10.
    unsafe { device.create_shader_module_trusted(desc, checks) }
}

impl Pipelines {
    /// The kernels of shaders/ for `device` (compiled as they are first
    /// used), the contact code for
    /// the collider `kinds` only, from the module `variant` (the device must
    /// have the features it needs, `layout::Variant`), for per-vertex
    /// buffers with rods of `interleave` vertices interleaved
    /// (`packing::VertexLayout`; 0: consecutive).
    pub fn new(
        device: &wgpu::Device,
        kinds: ColliderKinds,
        interleave: u32,
        variant: Variant,
    ) -> Pipelines {
        let mut constants = kinds.constants().to_vec();
        constants.push(("INTERLEAVE", interleave as f64));
        let limits = device.limits();
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
        let mut kernels = HashMap::new();
        for kernel in Kernel::ALL.into_iter().filter(|k| k.supported(&limits)) {
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
            kernels.insert(
                kernel,
                LazyKernel {
                    layout: pipeline_layout,
                    pipeline: OnceLock::new(),
                },
            );
            layouts.insert(kernel, layout);
        }
        Pipelines {
            world_layout,
            layouts,
            kernels,
            modules: Mutex::new(HashMap::new()),
            device: device.clone(),
            constants,
            interleave,
            kinds,
            variant,
        }
    }

    /// The module the kernels are compiled from, and for the whole-frame
    /// kernel with its substep values from the frame's table
    /// (`Kernel::is_frame`, shaders/frame.wgsl); each compiled once.
    fn module(&self, kernel: Kernel) -> wgpu::ShaderModule {
        let frame = kernel.is_frame();
        let mut modules = self
            .modules
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        modules
            .entry(frame)
            .or_insert_with(|| {
                let v = Variant {
                    frame,
                    ..self.variant
                };
                kernels_module(
                    &self.device,
                    wgpu::ShaderModuleDescriptor {
                        label: Some(if frame {
                            "strands (whole frame)"
                        } else {
                            "strands"
                        }),
                        source: wgpu::ShaderSource::Wgsl(shader_variant(v).into()),
                    },
                )
            })
            .clone()
    }

    /// The pipeline of `kernel`, compiled now if it was not yet.
    ///
    /// # Panics
    /// Where the device does not run `kernel` (`has`).
    pub fn pipeline(&self, kernel: Kernel) -> &wgpu::ComputePipeline {
        let lazy = self.kernels.get(&kernel).unwrap_or_else(|| {
            panic!(
                "kernel `{}` was not built for this device (Kernel::supported)",
                kernel.entry_point()
            )
        });
        lazy.pipeline.get_or_init(|| {
            let name = kernel.entry_point();
            self.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(name),
                    layout: Some(&lazy.layout),
                    module: &self.module(kernel),
                    entry_point: Some(name),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &self.constants,
                        ..Default::default()
                    },
                    cache: None,
                })
        })
    }

    /// Whether the pipeline of `kernel` (`pipeline`) has been compiled.
    pub fn is_compiled(&self, kernel: Kernel) -> bool {
        self.kernels
            .get(&kernel)
            .is_some_and(|lazy| lazy.pipeline.get().is_some())
    }

    /// Whether `kernel` runs on this device (`Kernel::supported`).
    pub fn has(&self, kernel: Kernel) -> bool {
        self.kernels.contains_key(&kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::colliders::{Collider, Shape};
    use glam::DVec3;

    /// The kinds of a scene's colliders, and the override constants that
    /// switch each kind's contact code on (1) or off (0).
    #[test]
    fn kinds_of_colliders_set_their_constants() {
        let collider = |shape| Collider {
            name: "c".into(),
            shape,
            anchor: 0,
            friction: 0.0,
            static_friction: 0.0,
            margin: 0.0,
        };
        let sphere = collider(Shape::Sphere {
            center: DVec3::ZERO,
            radius: 1.0,
        });
        let plane = collider(Shape::Plane {
            point: DVec3::ZERO,
            normal: DVec3::Y,
        });
        assert_eq!(ColliderKinds::of(&[]), ColliderKinds { kinds: 0 });
        let k = ColliderKinds::of(&[sphere.clone(), plane, sphere]);
        assert_eq!(
            k.constants(),
            [
                ("HAS_SPHERE", 1.0),
                ("HAS_CAPSULE", 0.0),
                ("HAS_PLANE", 1.0),
                ("HAS_SDF", 0.0),
            ]
        );
        assert_eq!(
            ColliderKinds::ALL.constants(),
            [
                ("HAS_SPHERE", 1.0),
                ("HAS_CAPSULE", 1.0),
                ("HAS_PLANE", 1.0),
                ("HAS_SDF", 1.0),
            ]
        );
    }
}
