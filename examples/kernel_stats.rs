//! What the Vulkan driver says it compiled each kernel into: registers,
//! workgroup (shared) memory, spills, instructions, as far as the driver
//! reports them (`VK_KHR_pipeline_executable_properties`). wgpu does not
//! expose these, so this builds each kernel's pipeline itself, through
//! `ash`, from the SPIR-V naga writes for it with the options wgpu's
//! Vulkan backend uses (array indices and buffer accesses clamped,
//! workgroup memory zeroed, no loop counters, as `pipelines::kernels_module`
//! asks), from the module the simulator builds the kernel from on that
//! device (`layout::shader_variant`: the f64 stencil and 64-bit grid
//! atomics where the device has them, resident positions for the packed
//! fused kernels, the frame table for the whole-frame ones, each pack
//! shape asked for).
//!
//! Why: a kernel that holds more registers than a multiprocessor can give
//! all its warps runs fewer warps at once, and one that spills reads and
//! writes memory it was not meant to; neither shows in a timing. The
//! packed fused kernels on 32-row packs put 32× more invocations on a rod
//! than the walks yet ran no faster on the H200 (docs/BENCHMARKS.md):
//! these figures say whether occupancy is why.
//!
//! ```text
//! cargo run --release --example kernel_stats [-- [--rows 32,256] [KERNEL...]]
//! ```
//!
//! KERNEL: entry points (`frame_pack`, `substep_rod`, ...; default: all).
//! `--rows`: the pack shapes of the per-pack kernels (default 32,256).
//! `--kinds`: the collider kinds the contact code is built for (default
//! sphere,capsule: the hair workloads'; also plane, sdf). On lavapipe
//! (Mesa 22.3, which reports no statistics but compiles the kernels) the
//! kernels with `sdf` crash its compiler here, though not through wgpu;
//! the cause was not found (the SPIR-V options are wgpu's as far as they
//! could be matched), so figures for `sdf` may differ from what wgpu
//! builds.
//! One line a kernel and shape: `kernel rows executable: name=value ...`.
//! Exits non-zero, saying why, where there is no Vulkan device or it lacks
//! the extension.

use ash::vk;
use std::ffi::CStr;
use strands::gpu::layout::{Domain, Kernel, Variant, shader_variant};
use strands::gpu::pack::PackShape;
use strands::gpu::pipelines::ColliderKinds;

fn main() {
    if let Err(e) = run() {
        eprintln!("kernel_stats: {e}");
        std::process::exit(1);
    }
}

struct Args {
    rows: Vec<PackShape>,
    kernels: Vec<Kernel>,
    kinds: ColliderKinds,
}

/// The collider kinds named in `list` ("sphere,capsule").
fn parse_kinds(list: &str) -> Result<ColliderKinds, String> {
    use strands::contact::kind;
    let mut bits = 0u8;
    for name in list.split(',') {
        bits |= 1
            << match name.trim() {
                "sphere" => kind::SPHERE,
                "capsule" => kind::CAPSULE,
                "plane" => kind::PLANE,
                "sdf" => kind::SDF,
                other => {
                    return Err(format!(
                        "--kinds: no collider kind {other:?} (sphere, capsule, plane, sdf)"
                    ));
                }
            };
    }
    Ok(ColliderKinds {
        kinds: bits,
        table: 0,
    })
}

fn parse_args() -> Result<Args, String> {
    let mut rows = vec![PackShape::new(32)?, PackShape::DEFAULT];
    let mut kernels = Vec::new();
    // The hair workloads' colliders (scenes/hair.toml), as `strands bench`
    // builds the kernels for them (`GpuContext::pipelines_for`).
    let mut kinds = parse_kinds("sphere,capsule")?;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rows" {
            let list = args.next().ok_or("--rows needs a list, e.g. 32,256")?;
            rows = list
                .split(',')
                .map(|s| s.parse::<PackShape>())
                .collect::<Result<_, _>>()?;
        } else if a == "--kinds" {
            kinds = parse_kinds(
                &args
                    .next()
                    .ok_or("--kinds needs a list, e.g. sphere,capsule")?,
            )?;
        } else if let Some(k) = Kernel::ALL.into_iter().find(|k| k.entry_point() == a) {
            kernels.push(k);
        } else {
            let names: Vec<_> = Kernel::ALL.iter().map(|k| k.entry_point()).collect();
            return Err(format!(
                "no kernel {a:?}; the kernels: {}",
                names.join(", ")
            ));
        }
    }
    if kernels.is_empty() {
        kernels = Kernel::ALL.to_vec();
    }
    Ok(Args {
        rows,
        kernels,
        kinds,
    })
}

/// The device and what it can compile.
struct Gpu {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    /// None where the driver has no `VK_KHR_pipeline_executable_properties`
    /// (lavapipe before Mesa 23): the kernels still compile, which checks
    /// the SPIR-V and the layouts, but no statistics come back.
    executables: Option<ash::khr::pipeline_executable_properties::Device>,
    f64: bool,
    i64_atomics: bool,
    zero_init: bool,
    /// robustBufferAccess2 on (`VK_EXT_robustness2`), where wgpu turns it
    /// on and leaves buffer accesses to it.
    robust2: bool,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

fn open() -> Result<Gpu, String> {
    // SAFETY: loads the system's Vulkan loader; every call below follows
    // the specification's valid usage for the handles it is given.
    unsafe {
        let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = entry
            .create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
            .map_err(|e| format!("vkCreateInstance: {e}"))?;
        let physical = instance
            .enumerate_physical_devices()
            .map_err(|e| format!("no Vulkan devices: {e}"))?;
        // A discrete GPU where there is one, as wgpu's high-performance
        // preference picks.
        let kind = |p: &vk::PhysicalDevice| instance.get_physical_device_properties(*p).device_type;
        let pd = physical
            .iter()
            .copied()
            .min_by_key(|p| match kind(p) {
                vk::PhysicalDeviceType::DISCRETE_GPU => 0,
                vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
                _ => 2,
            })
            .ok_or("no Vulkan device")?;
        let props = instance.get_physical_device_properties(pd);
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
        instance.get_physical_device_properties2(pd, &mut props2);
        println!(
            "device: {} ({:?}), driver {} {}, Vulkan {}.{}",
            props
                .device_name_as_c_str()
                .unwrap_or(c"?")
                .to_string_lossy(),
            props.device_type,
            driver
                .driver_name_as_c_str()
                .unwrap_or(c"?")
                .to_string_lossy(),
            driver
                .driver_info_as_c_str()
                .unwrap_or(c"?")
                .to_string_lossy(),
            vk::api_version_major(props.api_version),
            vk::api_version_minor(props.api_version),
        );
        let ext = ash::khr::pipeline_executable_properties::NAME;
        let extensions = instance
            .enumerate_device_extension_properties(pd)
            .map_err(|e| format!("vkEnumerateDeviceExtensionProperties: {e}"))?;
        let has = |name: &CStr| {
            extensions
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(name))
        };
        let has_ext = has(ext);
        let robustness2 = ash::ext::robustness2::NAME;
        let robust2 = has(robustness2) && {
            let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
            let mut f = vk::PhysicalDeviceFeatures2::default().push_next(&mut r2);
            instance.get_physical_device_features2(pd, &mut f);
            r2.robust_buffer_access2 == vk::TRUE
        };
        if !has_ext {
            println!(
                "the device has no {}: the kernels are compiled, but the driver reports no statistics",
                ext.to_string_lossy()
            );
        }
        // What the device has of what the modules may use.
        let mut exec = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut features = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut exec)
            .push_next(&mut v12)
            .push_next(&mut v13);
        instance.get_physical_device_features2(pd, &mut features);
        let base_f64 = features.features.shader_float64 == vk::TRUE;
        let base_i64 = features.features.shader_int64 == vk::TRUE;
        if has_ext && exec.pipeline_executable_info == vk::FALSE {
            return Err(
                "the device lists the extension but not its pipelineExecutableInfo feature".into(),
            );
        }
        let f64 = base_f64;
        let i64_atomics = v12.shader_buffer_int64_atomics == vk::TRUE;
        let zero_init = v13.shader_zero_initialize_workgroup_memory == vk::TRUE;
        let base = vk::PhysicalDeviceFeatures::default()
            .robust_buffer_access(robust2)
            .shader_float64(f64)
            .shader_int64(base_i64);
        let mut exec_on = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(has_ext);
        let mut v12_on = vk::PhysicalDeviceVulkan12Features::default()
            .shader_buffer_int64_atomics(i64_atomics)
            .shader_shared_int64_atomics(v12.shader_shared_int64_atomics == vk::TRUE);
        let mut v13_on = vk::PhysicalDeviceVulkan13Features::default()
            .shader_zero_initialize_workgroup_memory(zero_init);
        let mut r2_on =
            vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(true);
        let mut on = vk::PhysicalDeviceFeatures2::default()
            .features(base)
            .push_next(&mut exec_on)
            .push_next(&mut v12_on)
            .push_next(&mut v13_on);
        if robust2 {
            on = on.push_next(&mut r2_on);
        }
        let family = instance
            .get_physical_device_queue_family_properties(pd)
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("the device has no compute queue")? as u32;
        let queue = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&[1.0])];
        let exts: Vec<_> = [(ext, has_ext), (robustness2, robust2)]
            .into_iter()
            .filter(|e| e.1)
            .map(|e| e.0.as_ptr())
            .collect();
        let device = instance
            .create_device(
                pd,
                &vk::DeviceCreateInfo::default()
                    .queue_create_infos(&queue)
                    .enabled_extension_names(&exts)
                    .push_next(&mut on),
                None,
            )
            .map_err(|e| format!("vkCreateDevice: {e}"))?;
        let executables = has_ext
            .then(|| ash::khr::pipeline_executable_properties::Device::new(&instance, &device));
        Ok(Gpu {
            _entry: entry,
            instance,
            device,
            executables,
            f64,
            i64_atomics,
            zero_init,
            robust2,
        })
    }
}

/// A descriptor binding an entry point uses: group, binding, and whether
/// it is a uniform buffer (else a storage buffer).
type Binding = (u32, u32, bool);

/// SPIR-V of `kernel`'s entry point in `source`, as wgpu's Vulkan backend
/// writes it for the simulator's modules, and the descriptor bindings
/// (group, binding, uniform) it uses.
fn spirv(
    gpu: &Gpu,
    source: &str,
    entry: &str,
    kinds: ColliderKinds,
) -> Result<(Vec<u32>, Vec<Binding>), String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| format!("{e:?}"))?;
    let mut constants = naga::back::PipelineConstants::default();
    for (n, v) in kinds.constants() {
        constants.insert(n.to_string(), v);
    }
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, entry)),
        &constants,
    )
    .map_err(|e| format!("{e:?}"))?;
    let index = module
        .entry_points
        .iter()
        .position(|e| e.name == entry)
        .ok_or_else(|| format!("no entry point {entry}"))?;
    let uses = info.get_entry_point(index);
    let mut bindings = Vec::new();
    for (handle, global) in module.global_variables.iter() {
        if let Some(b) = &global.binding
            && !uses[handle].is_empty()
        {
            let uniform = matches!(global.space, naga::AddressSpace::Uniform);
            bindings.push((b.group, b.binding, uniform));
        }
    }
    // As wgpu: buffer accesses unchecked where robustBufferAccess2 bounds
    // them, array indices always clamped.
    let restrict = naga::proc::BoundsCheckPolicy::Restrict;
    let buffer = if gpu.robust2 {
        naga::proc::BoundsCheckPolicy::Unchecked
    } else {
        restrict
    };
    let options = naga::back::spv::Options {
        lang_version: (1, 6),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: restrict,
            buffer,
            image_load: restrict,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: if gpu.zero_init {
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Native
        } else {
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Polyfill
        },
        force_loop_bounding: false,
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: entry.to_string(),
    };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("{e}"))?;
    Ok((words, bindings))
}

/// The driver's statistics of each executable of `kernel` compiled from
/// `source`: (executable name, [(statistic, value)]).
type Stats = Vec<(String, Vec<(String, String)>)>;

fn statistics(gpu: &Gpu, source: &str, entry: &str, kinds: ColliderKinds) -> Result<Stats, String> {
    let (words, bindings) = spirv(gpu, source, entry, kinds)?;
    let d = &gpu.device;
    // SAFETY: every handle is created here from `d`, used while alive and
    // destroyed before returning.
    unsafe {
        let module = d
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
        let groups = bindings.iter().map(|b| b.0 + 1).max().unwrap_or(0);
        let mut set_layouts = Vec::new();
        for g in 0..groups {
            let entries: Vec<_> = bindings
                .iter()
                .filter(|b| b.0 == g)
                .map(|&(_, binding, uniform)| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(binding)
                        .descriptor_type(match (uniform, g, binding) {
                            (true, 0, 0) => vk::DescriptorType::UNIFORM_BUFFER_DYNAMIC,
                            (true, _, _) => vk::DescriptorType::UNIFORM_BUFFER,
                            (false, _, _) => vk::DescriptorType::STORAGE_BUFFER,
                        })
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            set_layouts.push(
                d.create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&entries),
                    None,
                )
                .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?,
            );
        }
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts),
                None,
            )
            .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
        let name = std::ffi::CString::new(entry).expect("entry point without NUL");
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&name);
        let flags = match gpu.executables {
            Some(_) => vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR,
            None => vk::PipelineCreateFlags::empty(),
        };
        let info = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(layout);
        let pipeline = d
            .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
            .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
        let out = read_statistics(gpu, pipeline);
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
        for l in set_layouts {
            d.destroy_descriptor_set_layout(l, None);
        }
        d.destroy_shader_module(module, None);
        out
    }
}

/// The statistics of each executable of `pipeline` (created with
/// `CAPTURE_STATISTICS_KHR` where the driver has the extension).
///
/// # Safety
/// `pipeline` is a live pipeline of `gpu.device`.
unsafe fn read_statistics(gpu: &Gpu, pipeline: vk::Pipeline) -> Result<Stats, String> {
    unsafe {
        let text = |c: &[std::ffi::c_char]| {
            // SAFETY: the driver writes NUL-terminated strings.
            CStr::from_ptr(c.as_ptr()).to_string_lossy().into_owned()
        };
        let mut out = Vec::new();
        let Some(reader) = &gpu.executables else {
            out.push(("compiled, no statistics".into(), Vec::new()));
            return Ok(out);
        };
        let executables = reader
            .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))
            .map_err(|e| format!("vkGetPipelineExecutablePropertiesKHR: {e}"))?;
        for (i, exe) in executables.iter().enumerate() {
            let stats = reader
                .get_pipeline_executable_statistics(
                    &vk::PipelineExecutableInfoKHR::default()
                        .pipeline(pipeline)
                        .executable_index(i as u32),
                )
                .map_err(|e| format!("vkGetPipelineExecutableStatisticsKHR: {e}"))?;
            let values = stats
                .iter()
                .map(|s| {
                    let v = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                            (s.value.b32 == vk::TRUE).to_string()
                        }
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        _ => format!("{}", s.value.f64),
                    };
                    (text(&s.name), v)
                })
                .collect();
            out.push((
                format!("{} (subgroup {})", text(&exe.name), exe.subgroup_size),
                values,
            ));
        }
        Ok(out)
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let gpu = open()?;
    println!(
        "modules: bending stencil in {}, grid accumulators {}, buffer accesses {}, collider kinds {:#06b}",
        if gpu.f64 { "f64" } else { "f32" },
        if gpu.i64_atomics {
            "64-bit atomics"
        } else {
            "u32 pairs"
        },
        if gpu.robust2 {
            "bounded by robustBufferAccess2"
        } else {
            "clamped"
        },
        args.kinds.kinds,
    );
    let mut failed = 0;
    for kernel in args.kernels {
        let shapes = if kernel.domain() == Domain::Pack {
            args.rows.clone()
        } else {
            vec![PackShape::DEFAULT]
        };
        for pack in shapes {
            let variant = Variant {
                stencil_f64: gpu.f64,
                grid_i64: gpu.i64_atomics,
                resident: kernel.is_resident(),
                frame: kernel.is_frame(),
                pack,
                ..Variant::default()
            };
            let rows = if kernel.domain() == Domain::Pack {
                format!("{pack}-rows")
            } else {
                "-".into()
            };
            let started = std::time::Instant::now();
            match statistics(
                &gpu,
                &shader_variant(variant),
                kernel.entry_point(),
                args.kinds,
            ) {
                Ok(executables) => {
                    for (exe, values) in executables {
                        let values: Vec<_> =
                            values.iter().map(|(n, v)| format!("{n}={v}")).collect();
                        println!(
                            "{} {rows} {exe} [{:.1} s]: {}",
                            kernel.entry_point(),
                            started.elapsed().as_secs_f64(),
                            values.join("; ")
                        );
                    }
                }
                Err(e) => {
                    failed += 1;
                    println!("{} {rows}: FAILED: {e}", kernel.entry_point());
                }
            }
        }
    }
    if failed > 0 {
        return Err(format!("{failed} kernels did not compile (above)"));
    }
    Ok(())
}
