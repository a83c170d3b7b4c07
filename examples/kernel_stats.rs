//! What the Vulkan driver says it compiled each kernel into: registers,
//! workgroup (shared) memory, spills, instructions, as far as the driver
//! reports them (`VK_KHR_pipeline_executable_properties`). wgpu does not
//! expose these, so this builds each kernel's pipeline itself, through
//! `ash`, from the SPIR-V naga writes for it with the options wgpu's
//! Vulkan backend uses (array indices and buffer accesses clamped,
//! workgroup memory zeroed, no loop counters, as `pipelines::kernels_module`
//! asks), from the module the simulator builds the kernel from on that
//! device (`layout::shader_variant`: the f64 stencil and 64-bit grid
//! atomics where the device has them, resident state for the packed
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
//! cargo run --release --example kernel_stats -- [--rows 32,256] [--kinds sphere,capsule] [--interleave 32] [KERNEL...]
//! ```
//!
//! KERNEL: entry points (`frame_pack`, `substep_rod`, ...; default: all).
//! `--rows`: the pack shapes of the per-pack kernels (default 32,256;
//! `32:state` with the whole state resident in the fused kernels).
//! `--interleave`: the vertices a rod of the interleaved layout (WGSL
//! `INTERLEAVE`, default 32: a GPU's default layout for the 32-vertex
//! hair; 0 for each rod's vertices in order, what the twenty-eighth
//! session's first figures were built for).
//! `--kinds`: the collider kinds the contact code is built for (default
//! sphere,capsule: the hair workloads'; also plane, sdf). On lavapipe
//! (Mesa 22.3, which reports no statistics but compiles the kernels) the
//! kernels with `sdf` crash its compiler here, though not through wgpu;
//! the cause was not found (the SPIR-V options are wgpu's as far as they
//! could be matched), so figures for `sdf` may differ from what wgpu
//! builds.
//! Without a GPU: Mesa's RADV driver can compile for an AMD GPU it does not
//! have (a "null" device), and it reports these statistics, among them
//! registers, spills, instructions and its compiler's static latency
//! estimate (RDNA2, wave64; another compiler than NVIDIA's, so its
//! figures compare versions of a kernel, not GPUs):
//!
//! ```text
//! XDG_RUNTIME_DIR=/tmp RADV_FORCE_FAMILY=navi21 \
//!   VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json \
//!   cargo run --release --example kernel_stats -- --rows 32 frame_pack
//! ```
//!
//! One line a kernel and shape: `kernel rows executable: name=value ...`.
//! Exits non-zero, saying why, where there is no Vulkan device or a kernel
//! does not compile; a device without the statistics extension compiles
//! the kernels and says it has no statistics.

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
    interleave: u32,
}

const USAGE: &str = "usage: kernel_stats [--rows 32,256] [--kinds sphere,capsule] [--interleave 32] [KERNEL...]
  KERNEL        entry points (frame_pack, substep_rod, ...; default: all)
  --rows        pack shapes of the per-pack kernels (32, 64, 128, 256, or 32:state, 64:state
                with the whole state resident; default 32,256)
  --kinds       collider kinds of the contact code (sphere, capsule, plane, sdf; default sphere,capsule)
  --interleave  vertices a rod of the interleaved layout (WGSL INTERLEAVE; 0: each rod's
                vertices in order; default 32, a GPU's default layout for 32-vertex hair)
";

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
    Ok(ColliderKinds { kinds: bits })
}

/// The arguments, or None for `--help`.
fn parse_args() -> Result<Option<Args>, String> {
    let mut rows = vec![PackShape::new(32)?, PackShape::DEFAULT];
    let mut interleave = 32;
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
        } else if a == "--interleave" {
            let n = args.next().ok_or("--interleave needs a count, e.g. 32")?;
            interleave = n
                .parse()
                .map_err(|_| format!("--interleave: a count of vertices, not {n:?}"))?;
        } else if a == "--help" || a == "-h" {
            return Ok(None);
        } else if a.starts_with('-') {
            return Err(format!("unknown option {a:?}\n{USAGE}"));
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
    Ok(Some(Args {
        rows,
        kernels,
        kinds,
        interleave,
    }))
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
    /// What the device has.
    has: Found,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: every object made from the device is destroyed by the
        // time the last statistics are read (`Objects`).
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

fn open() -> Result<Gpu, String> {
    // SAFETY: loads the system's Vulkan loader; the instance is destroyed
    // on every error after it is made (or by `Gpu`'s drop).
    let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader: {e}"))?;
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance = unsafe {
        entry.create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        )
    }
    .map_err(|e| format!("vkCreateInstance: {e}"))?;
    match unsafe { open_device(&instance) } {
        Ok((device, executables, has)) => Ok(Gpu {
            _entry: entry,
            instance,
            device,
            executables,
            has,
        }),
        Err(e) => {
            // SAFETY: nothing made from the instance is alive.
            unsafe { instance.destroy_instance(None) };
            Err(e)
        }
    }
}

/// What `open_device` found the device to have.
struct Found {
    /// f64 in shaders (the bending stencil's `real`).
    f64: bool,
    /// 64-bit atomics on storage buffers (the grid's accumulators).
    i64_atomics: bool,
    /// Workgroup memory zeroed by the driver, not by the module.
    zero_init: bool,
    /// robustBufferAccess2 on (`VK_EXT_robustness2`), where wgpu turns it
    /// on and leaves buffer accesses to it.
    robust2: bool,
    /// The SPIR-V version wgpu writes for the device's Vulkan version.
    spirv: (u8, u8),
    /// The limits `Kernel::supported` checks, from the device's.
    limits: wgpu::Limits,
}

/// The device wgpu's high-performance preference would pick, opened with
/// the features the modules may use and the statistics extension where the
/// driver has it.
///
/// # Safety
/// `instance` is live.
unsafe fn open_device(
    instance: &ash::Instance,
) -> Result<
    (
        ash::Device,
        Option<ash::khr::pipeline_executable_properties::Device>,
        Found,
    ),
    String,
> {
    unsafe {
        let physical = instance
            .enumerate_physical_devices()
            .map_err(|e| format!("no Vulkan devices: {e}"))?;
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
        let version = props.api_version;
        let at_least = |minor| version >= vk::make_api_version(0, 1, minor, 0);
        let extensions = instance
            .enumerate_device_extension_properties(pd)
            .map_err(|e| format!("vkEnumerateDeviceExtensionProperties: {e}"))?;
        let has = |name: &CStr| {
            extensions
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(name))
        };
        let mut driver_name = String::from("?");
        if at_least(2) {
            let mut driver = vk::PhysicalDeviceDriverProperties::default();
            let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
            instance.get_physical_device_properties2(pd, &mut props2);
            driver_name = format!(
                "{} {}",
                driver
                    .driver_name_as_c_str()
                    .unwrap_or(c"?")
                    .to_string_lossy(),
                driver
                    .driver_info_as_c_str()
                    .unwrap_or(c"?")
                    .to_string_lossy()
            );
        }
        println!(
            "device: {} ({:?}), driver {driver_name}, Vulkan {}.{}",
            props
                .device_name_as_c_str()
                .unwrap_or(c"?")
                .to_string_lossy(),
            props.device_type,
            vk::api_version_major(version),
            vk::api_version_minor(version),
        );
        let ext = ash::khr::pipeline_executable_properties::NAME;
        let has_ext = has(ext);
        if !has_ext {
            println!(
                "the device has no {}: the kernels are compiled, but the driver reports no statistics",
                ext.to_string_lossy()
            );
        }
        // What the device has of what the modules may use, each structure
        // asked for only where its extension or version is there.
        let base = instance.get_physical_device_features(pd);
        if has_ext {
            let mut exec = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
            let mut f = vk::PhysicalDeviceFeatures2::default().push_next(&mut exec);
            instance.get_physical_device_features2(pd, &mut f);
            if exec.pipeline_executable_info == vk::FALSE {
                return Err("the device lists the statistics extension but not its pipelineExecutableInfo feature".into());
            }
        }
        let (mut i64_atomics, mut shared_i64) = (false, false);
        if at_least(2) {
            let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
            let mut f = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12);
            instance.get_physical_device_features2(pd, &mut f);
            i64_atomics = v12.shader_buffer_int64_atomics == vk::TRUE;
            shared_i64 = v12.shader_shared_int64_atomics == vk::TRUE;
        }
        let mut zero_init = false;
        if at_least(3) {
            let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut f = vk::PhysicalDeviceFeatures2::default().push_next(&mut v13);
            instance.get_physical_device_features2(pd, &mut f);
            zero_init = v13.shader_zero_initialize_workgroup_memory == vk::TRUE;
        }
        let robustness2 = ash::ext::robustness2::NAME;
        let robust2 = has(robustness2)
            && {
                let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
                let mut f = vk::PhysicalDeviceFeatures2::default().push_next(&mut r2);
                instance.get_physical_device_features2(pd, &mut f);
                r2.robust_buffer_access2 == vk::TRUE
            }
            && base.robust_buffer_access == vk::TRUE;
        let f64 = base.shader_float64 == vk::TRUE;
        // As wgpu: robustBufferAccess wherever the device has it.
        let on_base = vk::PhysicalDeviceFeatures::default()
            .robust_buffer_access(base.robust_buffer_access == vk::TRUE)
            .shader_float64(f64)
            .shader_int64(base.shader_int64 == vk::TRUE);
        let mut exec_on = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(true);
        let mut v12_on = vk::PhysicalDeviceVulkan12Features::default()
            .shader_buffer_int64_atomics(i64_atomics)
            .shader_shared_int64_atomics(shared_i64);
        let mut v13_on = vk::PhysicalDeviceVulkan13Features::default()
            .shader_zero_initialize_workgroup_memory(zero_init);
        let mut r2_on =
            vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(true);
        let mut on = vk::PhysicalDeviceFeatures2::default().features(on_base);
        if has_ext {
            on = on.push_next(&mut exec_on);
        }
        if at_least(2) {
            on = on.push_next(&mut v12_on);
        }
        if at_least(3) {
            on = on.push_next(&mut v13_on);
        }
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
            .then(|| ash::khr::pipeline_executable_properties::Device::new(instance, &device));
        // wgpu-hal's choice of SPIR-V version by the device's Vulkan version.
        let spirv = if at_least(3) {
            (1, 6)
        } else if at_least(2) {
            (1, 5)
        } else if at_least(1) {
            (1, 3)
        } else {
            (1, 0)
        };
        let l = props.limits;
        let limits = wgpu::Limits {
            max_storage_buffers_per_shader_stage: l.max_per_stage_descriptor_storage_buffers,
            max_compute_workgroup_storage_size: l.max_compute_shared_memory_size,
            ..wgpu::Limits::default()
        };
        Ok((
            device,
            executables,
            Found {
                f64,
                i64_atomics,
                zero_init,
                robust2,
                spirv,
                limits,
            },
        ))
    }
}

/// A descriptor binding an entry point uses: group, binding, and whether
/// it is a uniform buffer (else a storage buffer).
type Binding = (u32, u32, bool);

/// SPIR-V of `kernel`'s entry point in `source` with the pipeline's
/// `overrides` (`Pipelines::new`'s: the collider kinds and `INTERLEAVE`;
/// `UNROLL_ROWS` at its default, a GPU's),
/// as wgpu's Vulkan backend writes it for the simulator's modules, and the
/// descriptor bindings (group, binding, uniform) it uses.
fn spirv(
    gpu: &Gpu,
    source: &str,
    entry: &str,
    overrides: &[(&str, f64)],
) -> Result<(Vec<u32>, Vec<Binding>), String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| format!("{e:?}"))?;
    let mut constants = naga::back::PipelineConstants::default();
    for &(n, v) in overrides {
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
    let buffer = if gpu.has.robust2 {
        naga::proc::BoundsCheckPolicy::Unchecked
    } else {
        restrict
    };
    let options = naga::back::spv::Options {
        lang_version: gpu.has.spirv,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: restrict,
            buffer,
            image_load: restrict,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: if gpu.has.zero_init {
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

/// The Vulkan objects of one kernel's pipeline, destroyed when dropped
/// (also when building it fails part way).
struct Objects<'a> {
    device: &'a ash::Device,
    module: vk::ShaderModule,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
}

impl Drop for Objects<'_> {
    fn drop(&mut self) {
        // SAFETY: each handle was made from `device` (or is null, which the
        // destroy calls accept) and no command uses it.
        unsafe {
            self.device.destroy_pipeline(self.pipeline, None);
            self.device.destroy_pipeline_layout(self.layout, None);
            for &l in &self.set_layouts {
                self.device.destroy_descriptor_set_layout(l, None);
            }
            self.device.destroy_shader_module(self.module, None);
        }
    }
}

fn statistics(
    gpu: &Gpu,
    source: &str,
    entry: &str,
    constants: &[(&str, f64)],
) -> Result<Stats, String> {
    let (words, bindings) = spirv(gpu, source, entry, constants)?;
    let d = &gpu.device;
    let mut o = Objects {
        device: d,
        module: vk::ShaderModule::null(),
        set_layouts: Vec::new(),
        layout: vk::PipelineLayout::null(),
        pipeline: vk::Pipeline::null(),
    };
    // SAFETY: every handle is created here from `d` and destroyed by `o`.
    unsafe {
        o.module = d
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
        let groups = bindings.iter().map(|b| b.0 + 1).max().unwrap_or(0);
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
            let l = d
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&entries),
                    None,
                )
                .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?;
            o.set_layouts.push(l);
        }
        o.layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&o.set_layouts),
                None,
            )
            .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
        let name = std::ffi::CString::new(entry).expect("entry point without NUL");
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(o.module)
            .name(&name);
        let flags = match gpu.executables {
            Some(_) => vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR,
            None => vk::PipelineCreateFlags::empty(),
        };
        let info = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(o.layout);
        o.pipeline = d
            .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
            .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
        read_statistics(gpu, o.pipeline)
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
    let Some(args) = parse_args()? else {
        print!("{USAGE}");
        return Ok(());
    };
    let gpu = open()?;
    println!(
        "modules: bending stencil in {}, grid accumulators {}, buffer accesses {}, collider kinds {:#06b}, INTERLEAVE {}",
        if gpu.has.f64 { "f64" } else { "f32" },
        if gpu.has.i64_atomics {
            "64-bit atomics"
        } else {
            "u32 pairs"
        },
        if gpu.has.robust2 {
            "bounded by robustBufferAccess2"
        } else {
            "clamped"
        },
        args.kinds.kinds,
        args.interleave,
    );
    // `Pipelines::new`'s override constants.
    let mut constants = args.kinds.constants().to_vec();
    constants.push(("INTERLEAVE", args.interleave as f64));
    let (mut failed, mut skipped) = (0, 0);
    for kernel in args.kernels {
        let shapes = if kernel.domain() == Domain::Pack {
            args.rows.clone()
        } else {
            vec![PackShape::DEFAULT]
        };
        for pack in shapes {
            let rows = if kernel.domain() == Domain::Pack {
                let state = if pack.state_resident() { "-state" } else { "" };
                format!("{}-rows{state}", pack.rows())
            } else {
                "-".into()
            };
            // As `Pipelines::new`: a kernel the device's limits rule out is
            // not built.
            if !kernel.supported(&gpu.has.limits, pack) {
                skipped += 1;
                println!(
                    "{} {rows}: not built: beyond the device's storage buffers a stage ({}) or workgroup memory ({} B)",
                    kernel.entry_point(),
                    gpu.has.limits.max_storage_buffers_per_shader_stage,
                    gpu.has.limits.max_compute_workgroup_storage_size
                );
                continue;
            }
            let variant = Variant {
                stencil_f64: gpu.has.f64,
                grid_i64: gpu.has.i64_atomics,
                resident: kernel.is_resident(),
                frame: kernel.is_frame(),
                pack,
                ..Variant::default()
            };
            let started = std::time::Instant::now();
            match statistics(
                &gpu,
                &shader_variant(variant),
                kernel.entry_point(),
                &constants,
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
    if skipped > 0 {
        println!("{skipped} kernels not built for the device's limits (above)");
    }
    if failed > 0 {
        return Err(format!("{failed} kernels did not compile (above)"));
    }
    Ok(())
}
