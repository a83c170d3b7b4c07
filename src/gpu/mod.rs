//! The GPU simulator: the DER formulation of `crate::cpu` in f32 WGSL compute
//! shaders (`shaders/`), run through wgpu with the whole state resident on the GPU.
//!
//! * `GpuContext`: a device and queue, either the caller's (an engine, the
//!   demo) or a headless one made here, honouring wgpu's environment variables
//!   (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`).
//!   The kernels are compiled once per device (`GpuContext::pipelines`).
//! * `GpuSimulator`: one rod set simulated, the host side of a frame: step
//!   values and anchor poses, the dispatches, checks and read-backs. Its
//!   parts, each apart from the others:
//!   * `pipelines`: every kernel's pipeline and bind-group layouts,
//!     stateless, shared by every simulator on a device;
//!   * `buffers`: the state on the GPU and its bind groups;
//!   * `packing`: a rod set and state as the GPU structs, and back (plain
//!     data, tested without a GPU);
//!   * `schedule`: the dispatches of a substep, as data (encoded by the
//!     simulator, counted by `traffic`).
//! * `layout`: the structs shared with WGSL.
//! * `traffic`: a model of the device-memory traffic of a substep, traced
//!   in the WGSL; `bandwidth`: the device's measured copy bandwidth.
//!
//! Precision: the kernels compute in f32 (ε = 2⁻²³ ≈ 1.2e-7) where the CPU
//! reference uses f64. Positions are stored relative to each rod's origin
//! (its first vertex at the start), each as a whole number of
//! `layout::POSITION_QUANTUM` (2⁻²⁰ m, in an i32) plus an f32 remainder
//! (`layout::GpuPosition`): a vertex is resolved to ε × the quantum,
//! ~1e-13 m, within ±2048 m of its origin, so steps far below f32's ε|x|
//! accumulate instead of being rounded away, and an edge or the velocity
//! update's correction is one rounded difference, resolved to ε|e|, not ε|x|.
//! The edge-length constraint and the curvature binormal are split at the
//! quanta, so their rounding does not jump while a vertex moves within one
//! (shaders/common.wgsl). Twist angles are resolved to ~ε|θ|. The quasistatic
//! twist therefore stops at steps of max(tolerance, 1e-6, 4ε max|θ|) rad and
//! the fast projection at a strain of max(tolerance, 1e-6) + 4ε on the GPU,
//! whatever tighter value the scene asks (`strands run` says so). Parity
//! tests (tests/gpu_parity.rs) derive their tolerances from these figures.
//!
//! What that resolves, on lavapipe (`cargo test --release --test
//! gpu_settling -- --nocapture`): a bent rubber cantilever (50 segments,
//! 0.2 m) settles 8e-8 of its length from the CPU at h = 1e-4 s and 6e-5 s
//! (with f32 positions: 1.3e-3 and 1.7e-3), its fastest vertex then moving
//! at ~3e-6 m/s (f32 positions: 7e-4 and 1.3e-3 m/s). That rest is f32's
//! floor for a bent rod, not zero: the bending force on a vertex, a second
//! difference of terms ~100× the net force, is rounded to ~ε of those terms
//! anew each substep, a random force the drag balances at ~1e-6 m/s rms
//! here, falling as √h.

#[doc(hidden)] // the benchmark's measurement
pub mod bandwidth;
pub mod buffers;
pub mod compose;
pub mod layout;
pub mod packing;
pub mod pipelines;
pub mod schedule;
mod sim;
#[cfg(feature = "bench")]
#[doc(hidden)] // the benchmark's traffic model (reads the WGSL with naga)
pub mod traffic;

pub use buffers::{JacobiPass, VertexBuffer, check_grid_size};
pub use layout::{Domain, Kernel, WORKGROUP};
pub use schedule::Form;
pub use sim::{GpuSimulator, PositionReadback, Positions};

/// Smallest twist tolerance (rad) the GPU honours (`TWIST_TOLERANCE_F32`
/// in shaders/twist.wgsl).
pub const TWIST_TOLERANCE_F32: f64 = 1e-6;
/// Smallest fast/SHAKE projection tolerance (strain) the GPU honours
/// (`FAST_TOLERANCE_F32` in shaders/project.wgsl).
pub const FAST_TOLERANCE_F32: f64 = 1e-6;

/// Below this many times f32's resolution of a rod's positions, a
/// substep's penetration under gravity leaves collider friction poorly
/// resolved on the GPU (`precision_note`).
pub const FRICTION_RESOLUTION: f64 = 10.0;

/// What the GPU will not honour of `params` because of f32, as a line for
/// the user; `None` when the scene asks for nothing tighter than f32
/// resolves. Also where collider friction is poorly resolved: it scales
/// with a substep's penetration under gravity, |g| h², and a collider's
/// distance from an f32 position relative to a rod's origin is resolved
/// only to about ε × the rod's length; below `FRICTION_RESOLUTION` times
/// that the GPU's friction may be off. A plane's depth is taken from the
/// exact position in the stencil's precision, so with `stencil_f64`
/// (`GpuContext::stencil_f64`) planes that do not move are exempt
/// (`tests/contact_incline.rs`: a 2 cm rod in 2 mm edges on an incline,
/// 4 times, slides within 0.1 % of the CPU's distance with the f64
/// stencil).
pub fn precision_note(
    rods: &crate::model::rods::RodSet,
    params: &crate::model::params::SimParams,
    stencil_f64: bool,
) -> Option<String> {
    let mut parts = Vec::new();
    if params.twist_tolerance < TWIST_TOLERANCE_F32 {
        parts.push(format!(
            "sim.twist_tolerance {:e} rad → 1e-6 rad (or 4ε|θ| when larger)",
            params.twist_tolerance
        ));
    }
    if let crate::model::params::Projection::Fast { tolerance, .. }
    | crate::model::params::Projection::Shake { tolerance, .. } = params.projection
        && tolerance < FAST_TOLERANCE_F32
    {
        parts.push(format!(
            "projection tolerance {tolerance:e} → 1e-6 (+ 4ε) per edge"
        ));
    }
    let mut notes = Vec::new();
    if !parts.is_empty() {
        notes.push(format!(
            "note: the GPU computes in f32 and loosens {} (the f64 CPU reference honours them)",
            parts.join(", ")
        ));
    }
    let friction = rods.colliders.iter().any(|c| {
        // A plane that stays where it is: a moving one's n·p is rounded
        // anew each substep.
        let plane = matches!(c.shape, crate::model::colliders::Shape::Plane { .. })
            && rods.anchors[c.anchor].keyframes.len() <= 1;
        (c.friction > 0.0 || c.static_friction > 0.0) && !(plane && stencil_f64)
    });
    let longest = (0..rods.rod_count())
        .map(|r| rods.rest_len[rods.edges(r)].iter().sum::<f64>())
        .fold(0.0, f64::max);
    let h = params.h();
    let penetration = params.gravity.length() * h * h;
    let resolution = f32::EPSILON as f64 * longest;
    if friction && penetration > 0.0 && penetration < FRICTION_RESOLUTION * resolution {
        notes.push(format!(
            "note: the GPU's collider friction may be off here: it scales with a substep's penetration under gravity, |g| h² = {penetration:.1e} m, only {:.0} times what f32 resolves of a {longest:.3} m rod's positions ({resolution:.1e} m); the CPU backend (f64) resolves it",
            penetration / resolution
        ));
    }
    (!notes.is_empty()).then(|| notes.join("\n"))
}

/// Why the GPU backend could not start or cannot take a scene.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no GPU adapter found{detail}. Install a GPU driver, or Mesa's software Vulkan driver lavapipe (`apt-get install mesa-vulkan-drivers`), or simulate on the CPU reference (`CpuSimulator`)"
    )]
    /// No adapter at all.
    NoAdapter {
        /// What was looked for, or empty.
        detail: String,
    },
    #[error("WGPU_ADAPTER_NAME={wanted:?} matches no adapter; available: {available}")]
    /// `WGPU_ADAPTER_NAME` names no adapter.
    AdapterNotFound {
        /// The name asked for.
        wanted: String,
        /// The adapters there are.
        available: String,
    },
    #[error(
        "sim.integrator = \"{integrator}\" runs on the CPU reference only (`CpuSimulator`): the GPU kernels step the symplectic integrator"
    )]
    /// The parameters ask for an integrator the kernels do not run.
    Integrator {
        /// Its scene name.
        integrator: &'static str,
    },
    #[error(
        "[rod_contact] runs on the CPU reference only (`CpuSimulator`): the GPU kernels have no rod–rod contact"
    )]
    /// The rods collide with each other, which the kernels do not do.
    RodContact,
    #[error("cannot open a device on {adapter}: {message}")]
    /// The adapter refused a device.
    RequestDevice {
        /// The adapter.
        adapter: String,
        /// wgpu's error.
        message: String,
    },
    #[error(
        "the scene needs {bytes} bytes for GPU buffer `{buffer}` ({per_item} B × {items}), above this device's {limit_name} of {limit} bytes; split the scene into several runs or simulate it on the CPU reference (`CpuSimulator`)"
    )]
    /// A buffer of the scene exceeds a device limit.
    TooLarge {
        /// The buffer.
        buffer: &'static str,
        /// Bytes per element.
        per_item: usize,
        /// Elements.
        items: usize,
        /// Bytes needed.
        bytes: u64,
        /// The wgpu limit exceeded.
        limit_name: &'static str,
        /// The device's value of it (bytes).
        limit: u64,
    },
    #[error(
        "the GPU ran out of memory allocating about {bytes} bytes for the scene ({message}); use fewer strands or the CPU reference (`CpuSimulator`)"
    )]
    /// Allocation failed.
    OutOfMemory {
        /// About how many bytes the scene asked for.
        bytes: u64,
        /// wgpu's error.
        message: String,
    },
    #[error(
        "the interaction grids need {nodes} nodes, {bytes} bytes for GPU buffer `grid` (32 B per node), above this device's storage-buffer limit of {limit} bytes; raise interaction.cell or lower interaction.resolution, or use the CPU reference (`CpuSimulator`)"
    )]
    /// The interaction grids exceed the storage-buffer limit.
    GridTooLarge {
        /// Grid nodes of all groups.
        nodes: usize,
        /// Bytes they need.
        bytes: u64,
        /// The device's limit (bytes).
        limit: u64,
    },
    #[error("reading from the GPU failed: {0}")]
    /// Mapping a buffer for reading failed (wgpu's error).
    ReadBack(String),
    #[error("the device allows {have} for {limit_name}; the simulator needs {need}")]
    /// A device limit below what the kernels need.
    Limit {
        /// The wgpu limit.
        limit_name: &'static str,
        /// The device's value.
        have: u64,
        /// The value needed.
        need: u64,
    },
    #[error("a sorted splat's run of {run} slots: a run is 1 to {max} slots")]
    /// `GpuSimulator::set_splat` with a run of slots out of range.
    SortedRun {
        /// The run asked for.
        run: u32,
        /// The longest run (`schedule::MAX_SORTED_RUN`).
        max: u32,
    },
}

/// The precision of the GPU's bending stencil (`GpuContext::stencil_f64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Stencil {
    /// f64: a settled rod comes to rest (needs `wgpu::Features::SHADER_F64`).
    F64,
    /// f32: faster where f64 is slow; a settled rod trembles at ~3e-6 m/s.
    F32,
}

impl Stencil {
    /// "f64" or "f32".
    pub fn name(self) -> &'static str {
        match self {
            Stencil::F64 => "f64",
            Stencil::F32 => "f32",
        }
    }
}

/// A wgpu device and queue to simulate on, and the simulator's kernels
/// compiled for that device (made on first use, shared by its clones).
#[derive(Clone, Debug)]
pub struct GpuContext {
    /// The device the buffers and kernels live on.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter's name, backend, device type and driver.
    pub info: wgpu::AdapterInfo,
    /// Whether the kernels compute the bending stencil in f64 (see
    /// `with_f32_stencil`).
    stencil_f64: bool,
    /// Whether the grid's accumulators are 64-bit atomics (see
    /// `with_u32_grid`).
    grid_i64: bool,
    /// Whether the kernels carry the errors of a GPU's fast sin, cos and
    /// square roots (see `with_approximate_math`).
    approximate_math: bool,
    pipelines: PipelineCache,
}

/// The features the grid's 64-bit accumulators need (`GpuContext::from_device`).
pub const GRID_I64_FEATURES: wgpu::Features =
    wgpu::Features::SHADER_INT64.union(wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS);

/// `GpuContext`'s kernels, built once per device, set of collider kinds,
/// and interleaved rod length (`packing::VertexLayout::interleave`, 0 for
/// none).
type PipelineMap = std::collections::HashMap<
    (pipelines::ColliderKinds, u32),
    std::sync::Arc<pipelines::Pipelines>,
>;

#[derive(Clone, Default)]
struct PipelineCache(std::sync::Arc<std::sync::Mutex<PipelineMap>>);

impl std::fmt::Debug for PipelineCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let built = self.0.lock().map(|m| m.len()).unwrap_or(0);
        write!(f, "PipelineCache({built} built)")
    }
}

impl GpuContext {
    /// Use a device the caller already has (it must have been created with at
    /// least the limits `GpuSimulator::new` checks).
    ///
    /// The bending stencil runs in f64 where the device has
    /// `wgpu::Features::SHADER_F64`: its terms are ~100× the net force they
    /// sum to, and in f32 their rounding keeps a settled rod trembling at
    /// ~3e-6 m/s (tests/gpu_settling.rs), where f64 lets it come to rest
    /// below 1e-6 m/s. `GpuContext::open` asks for the feature on Vulkan.
    ///
    /// The hair–hair grid adds each node's mass and momentum with 64-bit
    /// atomics where the device has `GRID_I64_FEATURES` (4 atomics a node
    /// and vertex, not 7 to 8 as pairs of 32-bit ones with a carry; the same
    /// integer sums). `GpuContext::open` asks for them where the adapter has
    /// them.
    ///
    /// On every adapter a set of at least 8 rods of one length is
    /// interleaved in the per-vertex buffers (`packing::VertexLayout`): the 8
    /// rods a CPU adapter's SIMD lanes walk together, and the 32 rods a
    /// GPU's warp walks, then read neighbouring elements. At 4000 hair
    /// strands that took 8 % off lavapipe's step; on an H200 at 1 M
    /// vertices 19 to 25 % off the walked substeps (hair-nogrid
    /// walked-frame 0.972 → 0.750 ms, grass 0.876 → 0.694 walked-fused,
    /// the hair 1.434 → 1.165, against each rod's vertices one after
    /// another; docs/measurements/2026-11-27-h200-defaults/bench-candidates*.log).
    /// The same results to the bit.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, info: wgpu::AdapterInfo) -> Self {
        GpuContext {
            stencil_f64: device.features().contains(wgpu::Features::SHADER_F64),
            grid_i64: device.features().contains(GRID_I64_FEATURES),
            approximate_math: false,
            device,
            queue,
            info,
            pipelines: PipelineCache::default(),
        }
    }

    /// This device with the bending stencil in f32 even where it could run
    /// in f64: for GPUs whose f64 is slow (consumer parts run it at 1/32 to
    /// 1/64 of f32), at the price of the tremble `from_device` describes.
    /// Kernels are compiled anew for it.
    pub fn with_f32_stencil(&self) -> Self {
        GpuContext {
            stencil_f64: false,
            pipelines: PipelineCache::default(),
            ..self.clone()
        }
    }

    /// This device with the grid's accumulators as pairs of 32-bit atomics
    /// even where it has 64-bit ones: what devices without
    /// `GRID_I64_FEATURES` run (tests compare the two). Kernels are compiled
    /// anew for it.
    pub fn with_u32_grid(&self) -> Self {
        GpuContext {
            grid_i64: false,
            pipelines: PipelineCache::default(),
            ..self.clone()
        }
    }

    /// This device with the kernels' sin, cos, atan2, length and normalize
    /// carrying the errors of a GPU's fast approximations
    /// (`layout::approximate_math`, shaders/approximate.wgsl): for tests, so
    /// that a correctly rounding adapter (lavapipe) shows whether results
    /// and tolerances hold where these functions are not correctly rounded.
    /// Not for simulating: it only adds error. Kernels are compiled anew for
    /// it.
    pub fn with_approximate_math(&self) -> Self {
        GpuContext {
            approximate_math: true,
            pipelines: PipelineCache::default(),
            ..self.clone()
        }
    }

    /// Whether the kernels carry the approximate-math errors
    /// (`with_approximate_math`).
    pub fn approximate_math(&self) -> bool {
        self.approximate_math
    }

    /// Whether the grid's accumulators are 64-bit atomics (`from_device`).
    pub fn grid_i64(&self) -> bool {
        self.grid_i64
    }

    /// Whether the kernels compute the bending stencil in f64.
    pub fn stencil_f64(&self) -> bool {
        self.stencil_f64
    }

    /// The precision of the bending stencil.
    pub fn stencil(&self) -> Stencil {
        if self.stencil_f64 {
            Stencil::F64
        } else {
            Stencil::F32
        }
    }

    /// This device with the bending stencil in `stencil`. Errors: f64 on a
    /// device without f64 in shaders.
    pub fn with_stencil(&self, stencil: Stencil) -> Result<Self, String> {
        match stencil {
            Stencil::F32 => Ok(self.with_f32_stencil()),
            Stencil::F64 if self.stencil_f64 => Ok(self.clone()),
            Stencil::F64 => Err(format!(
                "the bending stencil in f64 needs f64 in shaders (wgpu::Features::SHADER_F64{}), which {} lacks",
                if self.info.backend == wgpu::Backend::Vulkan {
                    ""
                } else {
                    ", asked for on Vulkan only"
                },
                self.info.name
            )),
        }
    }

    /// The simulator's kernels for this device, for every collider kind and
    /// consecutive per-vertex buffers: made on the first call (each
    /// kernel's pipeline compiled when first run, `Pipelines::pipeline`), then
    /// shared by every simulator on this context and its clones that uses
    /// them (a simulator takes the kernels for its own colliders and vertex
    /// layout: `pipelines_for`).
    pub fn pipelines(&self) -> std::sync::Arc<pipelines::Pipelines> {
        self.pipelines_for(
            pipelines::ColliderKinds::ALL,
            packing::VertexLayout::CONSECUTIVE,
        )
    }

    /// The kernels with contact code for the collider `kinds` only
    /// (`pipelines::ColliderKinds`), per-vertex buffers in `layout`, made on the first call for those kinds and that
    /// interleaved length (each pipeline compiled when first run), then
    /// shared like `pipelines`.
    pub fn pipelines_for(
        &self,
        kinds: pipelines::ColliderKinds,
        layout: packing::VertexLayout,
    ) -> std::sync::Arc<pipelines::Pipelines> {
        let mut map = self
            .pipelines
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        map.entry((kinds, layout.interleave))
            .or_insert_with(|| {
                std::sync::Arc::new(pipelines::Pipelines::new(
                    &self.device,
                    kinds,
                    layout.interleave,
                    layout::Variant {
                        stencil_f64: self.stencil_f64,
                        grid_i64: self.grid_i64,
                        approximate_math: self.approximate_math,
                        frame: false,
                    },
                ))
            })
            .clone()
    }

    /// Make a headless device on the adapter wgpu's environment variables
    /// choose (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`;
    /// default: high performance), with that adapter's full limits.
    pub fn headless() -> Result<Self, GpuError> {
        pollster::block_on(Self::headless_async())
    }

    async fn headless_async() -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        // The simulator's one indirect dispatch (`grid_velocity_box`) is
        // sized by `grid_extent` within the device's limits
        // (`buffers::check_limits`), so wgpu's check of indirect arguments,
        // a dispatch of its own before each (0.08 ms a substep on
        // lavapipe), stays off unless WGPU_VALIDATION_INDIRECT_CALL
        // asks for it.
        if std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
            desc.flags
                .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
        }
        let instance = wgpu::Instance::new(desc);
        let adapter = choose_adapter(&instance, None).await?;
        Self::open(&adapter).await
    }

    /// Open a device with the adapter's full limits on `adapter`.
    pub async fn open(adapter: &wgpu::Adapter) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let mut wanted = wgpu::Features::TIMESTAMP_QUERY;
        if info.backend == wgpu::Backend::Vulkan {
            wanted |= wgpu::Features::SHADER_F64;
        }
        if adapter.features().contains(GRID_I64_FEATURES) {
            wanted |= GRID_I64_FEATURES;
        }
        let features = adapter.features() & wanted;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("strands"),
                required_features: features,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::RequestDevice {
                adapter: info.name.clone(),
                message: e.to_string(),
            })?;
        Ok(GpuContext::from_device(device, queue, info))
    }

    /// "name (backend, type, driver; the stencil's precision, the grid's
    /// atomics and, where the math is approximate, that)" of the adapter in
    /// use.
    pub fn describe(&self) -> String {
        let info = &self.info;
        let driver = [info.driver.as_str(), info.driver_info.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "{} ({:?}, {:?}{}; bending stencil in {}; grid in {}{})",
            info.name,
            info.backend,
            info.device_type,
            if driver.is_empty() {
                String::new()
            } else {
                format!(", {driver}")
            },
            if self.stencil_f64 { "f64" } else { "f32" },
            if self.grid_i64 {
                "64-bit atomics"
            } else {
                "32-bit atomic pairs"
            },
            if self.approximate_math {
                "; approximate sin, cos and square roots emulated"
            } else {
                ""
            },
        )
    }
}

/// Map `buffer` (MAP_READ, its copy already submitted), wait for the GPU and
/// return its first `size` bytes.
pub fn read_mapped(device: &wgpu::Device, buffer: &wgpu::Buffer, size: u64) -> Vec<u8> {
    let slice = buffer.slice(..size);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("GPU device lost while reading back");
    rx.recv()
        .expect("map callback dropped")
        .expect("cannot map the read-back buffer");
    let bytes = slice
        .get_mapped_range()
        .expect("mapped range of the read-back buffer")
        .to_vec();
    buffer.unmap();
    bytes
}

/// The adapter wgpu's environment asks for: `WGPU_ADAPTER_NAME` (a
/// case-insensitive substring of the name) if set, else the default adapter
/// for `WGPU_POWER_PREF` (high performance when unset).
pub async fn choose_adapter(
    instance: &wgpu::Instance,
    surface: Option<&wgpu::Surface<'_>>,
) -> Result<wgpu::Adapter, GpuError> {
    let compatible = |a: &wgpu::Adapter| surface.is_none_or(|s| a.is_surface_supported(s));
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .filter(compatible)
            .find(|a| {
                a.get_info()
                    .name
                    .to_lowercase()
                    .contains(&wanted.to_lowercase())
            })
            .ok_or_else(|| GpuError::AdapterNotFound {
                wanted,
                available: if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                },
            });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::from_env()
                .unwrap_or(wgpu::PowerPreference::HighPerformance),
            compatible_surface: surface,
            ..Default::default()
        })
        .await
        .map_err(|e| GpuError::NoAdapter {
            detail: format!(" ({e})"),
        })
}
