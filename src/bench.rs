//! `strands bench`: standard workloads (hair on a head, a grass field) at
//! increasing sizes and any scene file, on both backends; per workload the
//! cost of an integrator step, throughput, the inextensibility error reached,
//! iterations used and memory. See docs/PERFORMANCE.md.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::backend::BackendKind;

use crate::cpu::{CpuSimulator, check_state, diagnostics_of};
use crate::gpu::bandwidth::CopyBandwidth;
use crate::gpu::traffic::{Counts, Granularity, TrafficModel};
use crate::gpu::{GpuContext, GpuError, GpuSimulator};
use crate::model::params::{Integrator, Projection, SimParams};
use crate::model::rods::RodSet;
use crate::scene::Scene;

/// A scene prepared for timing.
#[derive(Clone)]
pub struct Workload {
    /// "hair", "hair-nogrid", "hair-rodcontact", "grass", or a scene
    /// file's stem.
    pub name: String,
    /// "standard" or the scene file's path.
    pub source: String,
    pub scene: Scene,
}

/// Fraction of the explicit stability estimate used as the benchmark substep.
const STABILITY_MARGIN: f64 = 0.8;

impl Workload {
    /// A standard workload: `kind` ("hair": strands clamped to a head that
    /// moves and turns; "hair-nogrid": the same without hair–hair
    /// interaction; "hair-rodcontact": the same with rod–rod contact
    /// among all strands; "grass": bent elliptic blades in gusty wind) with
    /// `strands` strands of `vertices` vertices, at the scene's default
    /// settings: the fast projection (exact per strand, to a strain of 1e-10
    /// on the CPU, f32's allowance on the GPU) and the quasistatic twist
    /// solve at every substep. (Jacobi: time a scene file that sets it.)
    pub fn standard(kind: &str, strands: usize, vertices: usize) -> Result<Workload> {
        let (text, file) = match kind {
            "hair" | "hair-nogrid" | "hair-rodcontact" => {
                (include_str!("../scenes/hair.toml"), "scenes/hair.toml")
            }
            "grass" => (include_str!("../scenes/grass.toml"), "scenes/grass.toml"),
            other => {
                bail!("unknown workload {other:?}: use hair, hair-nogrid, hair-rodcontact or grass")
            }
        };
        if !(3..=1024).contains(&vertices) {
            bail!("--vertices {vertices}: a strand needs 3 to 1024 vertices");
        }
        let mut set = vec![
            format!("rods.0.count={strands}"),
            format!("rods.0.segments={}", vertices - 1),
            // `bench_params` sets the substep from the step limit.
            "sim.substeps=\"auto\"".into(),
        ];
        if kind == "hair-nogrid" {
            // The GPU's target workload: the hair with twist, the
            // projection and head contact, without the hair–hair grid.
            set.push("interaction.groups=[]".into());
        }
        if kind == "hair-rodcontact" {
            // The hair with rod–rod contact between every two strands (and
            // each with itself), beside the grid (CPU reference only).
            set.push("rod_contact.groups=[\"hair\"]".into());
        }
        if kind.starts_with("hair") {
            // The head moves (0.3 m/s) and turns (60°/s) from the first step,
            // so the timed frames see dragged and twisted hair. (With
            // `Settings::min_time_s` a faster backend times more frames and
            // so a longer stretch of the motion: `simulated_time` says how
            // far each row went.)
            set.push(
                "anchors.head.keyframes=[{ t = 0.0 }, { t = 10.0, translation = [3.0, 0.0, 0.0], rotation = [0.0, 600.0, 0.0] }]"
                    .into(),
            );
        }
        let scene = Scene::parse(text, Path::new(file), &set)?;
        Ok(Workload {
            name: kind.into(),
            source: "standard".into(),
            scene,
        })
    }

    /// The workload stepped by `integrator` (`sim.integrator`); the name
    /// stays, the rows say which (`Measurement::integrator`).
    pub fn with_integrator(mut self, integrator: Integrator) -> Workload {
        self.scene.params.integrator = integrator;
        self
    }

    /// Any scene file, its substep kept (or shortened to the stability
    /// margin) and its frame cut to `--substeps` steps.
    pub fn from_file(path: &Path) -> Result<Workload> {
        let scene = Scene::load(path, &[])?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Ok(Workload {
            name,
            source: path.display().to_string(),
            scene,
        })
    }
}

/// A workload in the list `strands bench` runs. A standard one is built when
/// its turn comes, so that a list of large sizes (4 M vertices) holds one
/// scene in host memory at a time and starts at once.
pub enum Planned {
    Standard {
        kind: String,
        strands: usize,
        vertices: usize,
        integrator: Integrator,
        /// The same workload with one strand: checked up front, and what
        /// `frames_of` needs (its colliders and interaction).
        probe: Box<Workload>,
    },
    File(Box<Workload>),
}

impl Planned {
    /// A standard workload (`Workload::standard`) stepped by `integrator`,
    /// its settings checked now.
    pub fn standard(
        kind: &str,
        strands: usize,
        vertices: usize,
        integrator: Integrator,
    ) -> Result<Planned> {
        Ok(Planned::Standard {
            kind: kind.into(),
            strands,
            vertices,
            integrator,
            probe: Box::new(Workload::standard(kind, 1, vertices)?.with_integrator(integrator)),
        })
    }

    /// "hair", "hair-nogrid", "hair-rodcontact", "grass", or the scene
    /// file's stem.
    pub fn name(&self) -> &str {
        match self {
            Planned::Standard { kind, .. } => kind,
            Planned::File(w) => &w.name,
        }
    }

    /// Whether its rods collide with each other (`[rod_contact]`).
    pub fn rod_contact(&self) -> bool {
        match self {
            Planned::Standard { probe, .. } => probe.scene.rod_contact.is_active(),
            Planned::File(w) => w.scene.rod_contact.is_active(),
        }
    }

    /// The integrator it is stepped with.
    pub fn integrator(&self) -> Integrator {
        match self {
            Planned::Standard { integrator, .. } => *integrator,
            Planned::File(w) => w.scene.params.integrator,
        }
    }

    pub fn strands(&self) -> usize {
        match self {
            Planned::Standard { strands, .. } => *strands,
            Planned::File(w) => w.scene.rods.len(),
        }
    }

    /// Frames `measure` will run at least (`frames_of`).
    pub fn frames(&self, settings: Settings) -> u64 {
        match self {
            Planned::Standard { probe, .. } => frames_of(probe, settings),
            Planned::File(w) => frames_of(w, settings),
        }
    }

    /// The workload, built now for a standard one.
    pub fn workload(&self) -> Result<Workload> {
        match self {
            Planned::Standard {
                kind,
                strands,
                vertices,
                integrator,
                ..
            } => Ok(Workload::standard(kind, *strands, *vertices)?.with_integrator(*integrator)),
            Planned::File(w) => Ok((**w).clone()),
        }
    }
}

/// Median, fastest and slowest of the timed frames (ms).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// A median this far above the row's fastest frame marks the row unsteady
/// (`Spread::is_unsteady`). Rows of a quiet machine stay within ~2 %; on a
/// shared VM a slow spell of a second or more (~40 % slower frames) that
/// covers part of a row lifts its median 10–50 %.
pub const UNSTEADY_MEDIAN: f64 = 1.10;

impl Spread {
    /// Whether the median is more than `UNSTEADY_MEDIAN` times the fastest
    /// frame: the machine was slower for part of the row, and its min is the
    /// figure to compare.
    pub fn is_unsteady(&self) -> bool {
        self.median > UNSTEADY_MEDIAN * self.min
    }

    fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            0.5 * (v[n / 2 - 1] + v[n / 2])
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }
}

/// The simulation settings of a workload, so two reports can be matched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingsSummary {
    /// Integrator step h (s) and steps per frame.
    pub h: f64,
    pub substeps: u32,
    pub projection: String,
    pub gravity: [f64; 3],
    pub wind: [f64; 3],
    pub gust_amplitude: f64,
    pub twist_tolerance: f64,
    pub twist_max_iterations: u32,
    /// Material of the first rod: bending [b11, b12, b22], twist (N·m²),
    /// mass per length (kg/m), drag (N·s/m²).
    pub material: [f64; 6],
}

/// Every figure of one workload on one backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    pub workload: String,
    /// "standard" or the scene file's path.
    pub source: String,
    pub backend: String,
    /// The GPU simulator's form that ran (`strands::gpu::Form::name`);
    /// absent on the CPU and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_form: Option<String>,
    /// The GPU's bending stencil precision ("f64" or "f32"); absent on the
    /// CPU and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_stencil: Option<String>,
    /// GPU only: vertices per rod of the interleaved per-vertex buffers the
    /// run used (`strands::gpu::packing::VertexLayout`), 0 where each rod's
    /// vertices lay one after another: the buffers interleave only 8 or
    /// more rods of one length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_interleave: Option<u32>,
    /// GPU only: how the grid was splatted ("own", or "sorted:RUN" with
    /// its run of slots: `strands::gpu::schedule::Splat`); absent on the
    /// CPU and in older reports (which ran "own").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_splat: Option<String>,
    /// Whether `strands bench --gpu-splat` asked for the splat (else it is
    /// the simulator's default, `GpuSimulator::default_splat`, and the
    /// row's label leaves it out as it leaves out other defaults);
    /// true in reports older than this field, which labelled
    /// every splat but the own.
    #[serde(default = "splat_asked_in_old_reports")]
    pub gpu_splat_asked: bool,
    /// The integrator (`sim.integrator`'s name); "symplectic" in reports
    /// older than this field.
    #[serde(default = "symplectic_in_old_reports")]
    pub integrator: String,
    pub strands: usize,
    /// Vertices per strand (the largest, for scene files with mixed rods).
    pub vertices_per_strand: usize,
    pub vertices: usize,
    pub settings: SettingsSummary,
    /// Simulated time at the end of the timed frames (s).
    pub simulated_time: f64,
    /// "gpu timestamps" (device time of each frame's compute pass) or "wall
    /// clock" (CPU: the frame's wall time; GPU without timestamps: submit and wait).
    pub timing: String,
    /// Milliseconds per integrator step, over the timed frames (null: not measured).
    pub ms_per_step: Option<Spread>,
    /// Milliseconds to simulate 1/60 s: the median step's time × the steps
    /// 1/60 s takes (`(1/60)/h`; 1 for an implicit integrator, which the
    /// bench steps once a frame of 1/60 s), the figure that compares
    /// integrators (null: not measured, and in older reports).
    #[serde(default)]
    pub ms_per_60hz_frame: Option<f64>,
    /// Frames timed: `repeats`, or more where they took less than
    /// `min_time_s` (0 in older reports and where not measured).
    #[serde(default)]
    pub frames_timed: u32,
    /// GPU only: wall time per step of submitting a frame and waiting for it.
    pub wall_ms_per_step: Option<Spread>,
    /// Vertices × steps per second at the median.
    pub vertex_steps_per_second: Option<f64>,
    /// Largest edge strain after the timed steps (the inextensibility error reached).
    pub max_strain: Option<f64>,
    /// Projection iterations per step (Jacobi: fixed; fast: most used).
    pub projection_iterations: u32,
    /// Most Newton iterations a twist solve used in the last frame.
    pub twist_iterations: u32,
    /// Implicit integrators: the most Newton iterations a rod's step took
    /// in the last frame (CPU; 0 for the symplectic, and in older reports).
    #[serde(default)]
    pub newton_iterations: u32,
    /// GPU buffers allocated for this simulation (bytes).
    pub gpu_bytes: Option<u64>,
    /// GPU only: seconds spent compiling the kernels of the row's form
    /// before its first frame (`GpuSimulator::compile_kernels`; near 0
    /// where an earlier row on the same device compiled them, or the
    /// driver's shader cache had them). A driver that compiles at a
    /// kernel's first dispatch instead (lavapipe) leaves most of it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_compile_s: Option<f64>,
    /// Host memory of the rods' rest data and state (bytes).
    pub host_bytes: u64,
    /// Peak resident memory of the process during this measurement (bytes;
    /// Linux, reset before each measurement through /proc/self/clear_refs).
    pub peak_rss_bytes: Option<u64>,
    /// With colliders: the same workload timed again with its colliders
    /// removed (ms per step, same warm-up, repeats and least time).
    #[serde(default)]
    pub ms_per_step_without_contact: Option<Spread>,
    /// With colliders: contact's share of the step, 1 − (median without
    /// colliders)/(median with): the contact kernels and the filtered second
    /// projection they need. On a noisy machine it can come out slightly
    /// negative when contact costs little.
    #[serde(default)]
    pub contact_share: Option<f64>,
    /// With hair–hair interaction: the same workload timed again without it
    /// (ms per step), and the grid's share of the step, 1 − without/with
    /// (the four grid kernels and the velocity update they need).
    #[serde(default)]
    pub ms_per_step_without_grid: Option<Spread>,
    #[serde(default)]
    pub grid_share: Option<f64>,
    /// GPU only: the device-memory traffic of one vertex-step (bytes) by
    /// the traffic model (src/gpu/traffic.rs): the fewest bytes the
    /// substep's kernels must read and write, each buffer element they touch
    /// once per kernel. A floor for today's kernels, not a counter.
    #[serde(default)]
    pub model_bytes_per_vertex_step: Option<f64>,
    /// GPU only: `model_bytes_per_vertex_step` by buffer, most first: where
    /// the modelled traffic comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_bytes_by_buffer: Option<Vec<BufferTraffic>>,
    /// GPU only: the traffic model's second floor, the same accesses in
    /// the 32-byte sectors a GPU's memory moves (`traffic::Granularity`):
    /// where a kernel reads one member of a larger struct, the sector
    /// holding it. Bytes per vertex-step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_sector_bytes_per_vertex_step: Option<f64>,
    /// GPU only: the model's bytes per step over the median time per step
    /// (GB/s, 10⁹ B/s).
    #[serde(default)]
    pub achieved_gb_per_s: Option<f64>,
    /// GPU only: `achieved_gb_per_s` over the copy bandwidth measured in
    /// the same run (`environment.gpu_copy_bandwidth`). Above 1 where the
    /// state fits in the GPU's cache and kernels find it there.
    #[serde(default)]
    pub bandwidth_fraction: Option<f64>,
    /// GPU with timestamps only: one more frame after the timed ones, each
    /// dispatch of a substep in a compute pass of its own between two
    /// timestamps (`GpuSimulator::step_profiled`), in schedule order: where
    /// the step's time goes. Their sum exceeds `ms_per_step` by what a pass
    /// per dispatch adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_profile: Option<Vec<KernelTime>>,
    /// Why there are no timings, when the run could not be measured.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// The device cannot hold this size (larger ones are not tried).
    #[serde(skip)]
    pub out_of_capacity: bool,
}

/// One buffer's share of `Measurement::model_bytes_per_vertex_step`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BufferTraffic {
    /// The buffer's WGSL global (shaders/common.wgsl).
    pub buffer: String,
    /// Bytes read from it per vertex-step, summed over the substep's kernels.
    pub read: f64,
    /// Bytes written to it per vertex-step.
    pub written: f64,
    /// `read` counted in 32-byte sectors (`model_sector_bytes_per_vertex_step`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sector_read: Option<f64>,
    /// `written` counted in 32-byte sectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sector_written: Option<f64>,
}

/// One dispatch of a substep in `Measurement::gpu_profile`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelTime {
    /// The kernel's entry point (shaders/*.wgsl).
    pub kernel: String,
    /// Its step values: 0, or 1 for the second contact pass and the
    /// projection filtered by the contacts.
    pub phase: u32,
    /// GPU time per integrator step (ms), summed over the frame's substeps
    /// and divided by them.
    pub ms_per_step: f64,
    /// Bytes per vertex-step this dispatch moves by the traffic model (its
    /// share of `Measurement::model_bytes_per_vertex_step`).
    #[serde(default)]
    pub model_bytes: f64,
    /// `model_bytes` counted in 32-byte sectors
    /// (`Measurement::model_sector_bytes_per_vertex_step`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_sector_bytes: Option<f64>,
}

/// What the machine and the build are.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Environment {
    pub strands_version: String,
    pub build_profile: String,
    pub cpu: String,
    pub cpu_threads: usize,
    /// The GPU adapter, or why there is none.
    pub gpu: Option<String>,
    pub gpu_driver: Option<String>,
    pub gpu_error: Option<String>,
    /// The GPU's practical memory bandwidth: a large buffer copy by a
    /// compute kernel, read + write (src/gpu/bandwidth.rs).
    #[serde(default)]
    pub gpu_copy_bandwidth: Option<CopyBandwidth>,
}

/// The JSON file `strands bench` writes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub environment: Environment,
    pub warmup: u32,
    pub repeats: u32,
    /// The least wall time of timed frames per measurement (s; 0 in
    /// reports older than `--min-time`: exactly `repeats` frames).
    #[serde(default)]
    pub min_time_s: f64,
    /// Whether rows were timed again for contact's and the grid's shares
    /// (`Settings::shares`; true in reports older than `--no-shares`).
    #[serde(default = "yes")]
    pub shares: bool,
    pub results: Vec<Measurement>,
}

fn yes() -> bool {
    true
}

/// How long to measure.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The GPU's splat (`GpuSimulator::set_splat`); `None`: the
    /// simulator's default (`GpuSimulator::default_splat`).
    pub gpu_splat: Option<crate::gpu::schedule::Splat>,
    /// Frames run before timing.
    pub warmup: u32,
    /// Timed frames, at least.
    pub repeats: u32,
    /// Frames are timed past `repeats` until the timed frames' wall time
    /// adds up to this (s): on a shared machine, slow spells of a second or
    /// so then move a few frames, not the median.
    pub min_time_s: f64,
    /// Substeps per frame (one submission on the GPU).
    pub substeps: u32,
    /// Also time each workload without its colliders and without its
    /// hair–hair interaction, for contact's and the grid's shares
    /// (`Measurement::contact_share`, `grid_share`): up to three times a
    /// row's frames (`frames_of`). `strands bench --no-shares` turns it
    /// off for experiments that compare whole rows.
    pub shares: bool,
}

/// The scene's parameters with the substep shortened to the stability margin
/// where the rods need it, and `substeps` substeps per frame; with an
/// implicit integrator, which no step limit bounds, one step of 1/60 s a
/// frame (the frame rate an application runs it at).
pub fn bench_params(rods: &RodSet, params: &SimParams, substeps: u32) -> SimParams {
    if params.integrator.is_implicit() {
        return SimParams {
            dt: 1.0 / 60.0,
            substeps: 1,
            ..*params
        };
    }
    let stable = crate::model::stability::step_limit(rods).map_or(f64::INFINITY, |l| l.h_max);
    let h = params.h().min(STABILITY_MARGIN * stable);
    SimParams {
        dt: h * substeps as f64,
        substeps,
        ..*params
    }
}

fn projection_name(p: &Projection) -> String {
    match p {
        Projection::Jacobi { iterations, .. } => format!("jacobi×{iterations}"),
        Projection::Fast { tolerance, .. } => format!("fast to {tolerance:e}"),
        Projection::Shake { tolerance, .. } => format!("shake to {tolerance:e}"),
        Projection::None => "none".into(),
    }
}

/// Bytes of the host-side rest data and state.
fn host_bytes(rods: &RodSet) -> u64 {
    let v = rods.vertex_count() as u64;
    let e = rods.edge_count() as u64;
    // Per vertex: pos, vel (24 B each), voronoi, mass, inv_mass (8 B), rest curvatures (32 B).
    // Per edge: theta (8 B), tangent, ref_u (24 B), rest_len (8 B).
    v * (24 * 2 + 8 * 3 + 32) + e * (8 + 24 * 2 + 8)
}

/// Reset the peak resident set size to the current one (Linux ≥ 4.0).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The `key:  N kB` entry of a /proc file, in bytes.
fn proc_kb(file: &str, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(file).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident set size of this process (VmHWM), where /proc has it.
pub fn peak_rss() -> Option<u64> {
    proc_kb("/proc/self/status", "VmHWM:")
}

/// Memory available to new allocations (MemAvailable), where /proc has it.
pub fn available_memory() -> Option<u64> {
    proc_kb("/proc/meminfo", "MemAvailable:")
}

/// The CPU's model name, where /proc/cpuinfo has it.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Measure one workload on one backend. `tick` is called after every frame
/// (warm-up and timed), for a progress bar, with `true` for a frame beyond
/// the planned ones (`frames_of`), timed to make up `Settings::min_time_s`.
pub fn measure(
    workload: &Workload,
    backend: BackendKind,
    gpu: Option<&GpuContext>,
    settings: Settings,
    tick: &mut dyn FnMut(bool),
) -> Measurement {
    measure_with(workload, backend, gpu, settings, tick, settings.shares)
}

/// `measure`; `shares`: also time the workload without its colliders and
/// without its interaction (each with everything else kept).
fn measure_with(
    workload: &Workload,
    backend: BackendKind,
    gpu: Option<&GpuContext>,
    settings: Settings,
    tick: &mut dyn FnMut(bool),
    shares: bool,
) -> Measurement {
    let scene = &workload.scene;
    let (rods, state) = scene.build();
    let params = bench_params(&rods, &scene.params, settings.substeps);
    // The steps a frame takes (1 for an implicit integrator), which
    // `timed_frames` divides each frame's time by.
    let settings = Settings {
        substeps: params.substeps,
        ..settings
    };
    let vertices_per_strand = (0..rods.rod_count())
        .map(|r| rods.vertices(r).len())
        .max()
        .unwrap_or(0);
    let mat = rods
        .material
        .first()
        .copied()
        .unwrap_or(crate::model::rods::RodMaterial {
            bending: [0.0; 3],
            twist: 0.0,
            mass_per_length: 0.0,
            drag: 0.0,
            radius: 0.0,
            stretching: 0.0,
        });
    reset_peak_rss();
    let mut m = Measurement {
        workload: workload.name.clone(),
        source: workload.source.clone(),
        backend: format!("{backend:?}").to_lowercase(),
        gpu_form: None,
        gpu_stencil: None,
        gpu_interleave: None,
        gpu_splat: None,
        gpu_splat_asked: false,
        integrator: params.integrator.name().into(),
        strands: rods.rod_count(),
        vertices_per_strand,
        vertices: rods.vertex_count(),
        settings: SettingsSummary {
            h: params.h(),
            substeps: params.substeps,
            projection: projection_name(&params.projection),
            gravity: params.gravity.to_array(),
            wind: params.wind.velocity.to_array(),
            gust_amplitude: params.wind.gust_amplitude,
            twist_tolerance: params.twist_tolerance,
            twist_max_iterations: params.twist_max_iterations,
            material: [
                mat.bending[0],
                mat.bending[1],
                mat.bending[2],
                mat.twist,
                mat.mass_per_length,
                mat.drag,
            ],
        },
        simulated_time: 0.0,
        timing: "wall clock".into(),
        ms_per_step: None,
        ms_per_60hz_frame: None,
        frames_timed: 0,
        wall_ms_per_step: None,
        vertex_steps_per_second: None,
        max_strain: None,
        projection_iterations: 0,
        twist_iterations: 0,
        newton_iterations: 0,
        gpu_bytes: None,
        gpu_compile_s: None,
        host_bytes: host_bytes(&rods),
        peak_rss_bytes: None,
        ms_per_step_without_contact: None,
        contact_share: None,
        ms_per_step_without_grid: None,
        grid_share: None,
        model_bytes_per_vertex_step: None,
        model_bytes_by_buffer: None,
        model_sector_bytes_per_vertex_step: None,
        achieved_gb_per_s: None,
        bandwidth_fraction: None,
        gpu_profile: None,
        error: None,
        out_of_capacity: false,
    };
    let per_frame = params.substeps as f64;
    // ms per step of each timed frame.
    let times: Vec<f64>;
    match backend {
        BackendKind::Cpu => {
            let mut sim = CpuSimulator::new(rods, state, params);
            let frames = timed_frames::<String>(settings, tick, || {
                let start = Instant::now();
                let step = sim.advance();
                let dt = start.elapsed().as_secs_f64();
                let [twist, projection] = step.map_err(|e| e.to_string())?;
                m.projection_iterations = projection;
                m.twist_iterations = twist;
                Ok((dt, dt))
            });
            match frames {
                Ok((t, _)) => times = t,
                Err(e) => {
                    m.error = Some(e);
                    return m;
                }
            }
            let d = sim.diagnostics();
            m.max_strain = Some(d.max_strain);
            m.newton_iterations = sim.last_newton().0;
            m.simulated_time = sim.state.time;
        }
        BackendKind::Gpu => {
            let Some(ctx) = gpu else {
                m.error = Some("no GPU adapter".into());
                return m;
            };
            let mut sim = match GpuSimulator::new(ctx, rods, state, params) {
                Ok(s) => s,
                Err(e) => {
                    m.out_of_capacity = is_capacity_error(&e);
                    m.error = Some(e.to_string());
                    return m;
                }
            };
            m.gpu_splat = settings.gpu_splat.map(|s| s.name());
            m.gpu_splat_asked = settings.gpu_splat.is_some();
            if let Some(splat) = settings.gpu_splat
                && let Err(e) = sim.set_splat(splat)
            {
                m.gpu_form = Some(sim.running_form().name().into());
                m.gpu_splat = Some(splat.name());
                m.error = Some(format!("GPU splat {splat}: {e}"));
                return m;
            }
            // The form that runs: the fused forms run staged with Jacobi.
            m.gpu_form = Some(sim.running_form().name().into());
            m.gpu_splat = Some(sim.splat().name());
            m.gpu_stencil = Some(ctx.stencil().name().into());
            m.gpu_bytes = Some(sim.gpu_bytes());
            m.gpu_interleave = Some(sim.vertex_layout().interleave);
            let compile = Instant::now();
            sim.compile_kernels();
            m.gpu_compile_s = Some(compile.elapsed().as_secs_f64());
            sim.wait();
            let Ok((t, w)) = timed_frames::<std::convert::Infallible>(settings, tick, || {
                let start = Instant::now();
                let gpu_time = sim.step_timed();
                if gpu_time.is_none() {
                    sim.wait();
                }
                let wall = start.elapsed().as_secs_f64();
                Ok((gpu_time.unwrap_or(wall), wall))
            });
            times = t;
            if sim.has_timestamps() {
                m.timing = "gpu timestamps".into();
                m.wall_ms_per_step = Some(Spread::of(w));
                let counts = Counts::of(sim.rods());
                let params = *sim.params();
                let splat = sim.splat();
                m.gpu_profile = sim.step_profiled().map(|p| {
                    p.into_iter()
                        .map(|(d, s)| KernelTime {
                            kernel: d.kernel.entry_point().into(),
                            phase: d.phase,
                            ms_per_step: s * 1e3 / per_frame,
                            model_bytes: traffic_model()
                                .kernel_bytes_under(d.kernel, &counts, &params, splat)
                                .total() as f64
                                / m.vertices as f64,
                            model_sector_bytes: Some(
                                traffic_model()
                                    .kernel_traffic_under(
                                        d.kernel,
                                        &counts,
                                        &params,
                                        splat,
                                        Granularity::Sectors,
                                    )
                                    .total() as f64
                                    / m.vertices as f64,
                            ),
                        })
                        .collect()
                });
            }
            // The last frame's: loops the driver cut short (llvmpipe's limit)
            // leave a wrong state that may still look sound.
            if let Some(e) = sim.loops_cut_short() {
                m.error = Some(e.to_string());
                return m;
            }
            let state = sim.read_state();
            if let Some((r, bad)) = check_state(sim.rods(), sim.params(), &state) {
                let e = crate::cpu::Unstable::blow_up(
                    sim.rods(),
                    sim.params(),
                    r,
                    sim.step_count(),
                    state.time,
                    bad,
                );
                m.error = Some(e.to_string());
                return m;
            }
            let traffic = traffic_model().substep_bytes_in(
                sim.rods(),
                sim.params(),
                sim.running_form(),
                sim.splat(),
            );
            m.model_bytes_per_vertex_step = Some(traffic.total() as f64 / m.vertices as f64);
            let per_vertex = |b: u64| b as f64 / m.vertices as f64;
            let form = sim.running_form();
            m.model_sector_bytes_per_vertex_step = Some(per_vertex(
                traffic_model()
                    .substep_traffic_in(
                        sim.rods(),
                        sim.params(),
                        form,
                        sim.splat(),
                        Granularity::Sectors,
                    )
                    .total(),
            ));
            let sectors = traffic_model().substep_traffic_by_buffer(
                sim.rods(),
                sim.params(),
                form,
                sim.splat(),
                Granularity::Sectors,
            );
            m.model_bytes_by_buffer = Some(
                traffic_model()
                    .substep_bytes_by_buffer(sim.rods(), sim.params(), form, sim.splat())
                    .into_iter()
                    .map(|(buffer, b)| {
                        let s = sectors.iter().find(|(n, _)| *n == buffer).map(|(_, s)| *s);
                        BufferTraffic {
                            buffer,
                            read: per_vertex(b.read),
                            written: per_vertex(b.written),
                            sector_read: s.map(|s| per_vertex(s.read)),
                            sector_written: s.map(|s| per_vertex(s.written)),
                        }
                    })
                    .collect(),
            );
            let d = diagnostics_of(sim.rods(), &state, sim.params());
            m.max_strain = Some(d.max_strain);
            m.simulated_time = state.time;
            let [twist, fast] = sim.read_stats();
            m.twist_iterations = twist;
            m.projection_iterations = match sim.params().projection {
                Projection::Jacobi { iterations, .. } => {
                    crate::cpu::substep::jacobi_iterations_per_substep(sim.rods(), iterations)
                }
                _ => fast,
            };
        }
    }
    m.frames_timed = times.len() as u32;
    let spread = Spread::of(times);
    m.ms_per_60hz_frame = Some(spread.median * (1.0 / 60.0) / params.h());
    m.vertex_steps_per_second = Some(m.vertices as f64 / (spread.median * 1e-3));
    m.achieved_gb_per_s = m
        .model_bytes_per_vertex_step
        .map(|b| b * m.vertices as f64 / (spread.median * 1e-3) / 1e9);
    m.peak_rss_bytes = peak_rss();
    if shares && !scene.colliders.is_empty() {
        let bare = Workload {
            name: workload.name.clone(),
            source: workload.source.clone(),
            scene: Scene {
                colliders: Vec::new(),
                ..scene.clone()
            },
        };
        let b = measure_with(&bare, backend, gpu, settings, tick, false);
        if let Some(without) = b.ms_per_step {
            m.contact_share = Some(1.0 - without.median / spread.median);
            m.ms_per_step_without_contact = Some(without);
        }
    }
    if shares && scene.interaction.is_active() {
        let bare = Workload {
            name: workload.name.clone(),
            source: workload.source.clone(),
            scene: Scene {
                interaction: Default::default(),
                ..scene.clone()
            },
        };
        let b = measure_with(&bare, backend, gpu, settings, tick, false);
        if let Some(without) = b.ms_per_step {
            m.grid_share = Some(1.0 - without.median / spread.median);
            m.ms_per_step_without_grid = Some(without);
        }
    }
    m.ms_per_step = Some(spread);
    m
}

/// Runs the warm-up frames, then the timed ones: `settings.repeats` of them,
/// and more while their wall time adds up to less than
/// `settings.min_time_s`. `frame` runs one frame and returns its time and
/// its wall time (s; the same on the CPU, device time on a GPU with
/// timestamps). Returns both per integrator step (ms) for every timed
/// frame, or the first error a frame returns (that frame not ticked).
fn timed_frames<E>(
    settings: Settings,
    tick: &mut dyn FnMut(bool),
    mut frame: impl FnMut() -> Result<(f64, f64), E>,
) -> Result<(Vec<f64>, Vec<f64>), E> {
    let per_frame = settings.substeps as f64;
    let planned = settings.warmup + settings.repeats;
    let (mut times, mut walls) = (Vec::new(), Vec::new());
    let mut timed_wall = 0.0;
    let mut k = 0;
    while k < planned || timed_wall < settings.min_time_s {
        let (time, wall) = frame()?;
        tick(k >= planned);
        if k >= settings.warmup {
            times.push(time * 1e3 / per_frame);
            walls.push(wall * 1e3 / per_frame);
            timed_wall += wall;
        }
        k += 1;
    }
    Ok((times, walls))
}

/// The traffic model of the simulator's shaders, traced once per process.
pub fn traffic_model() -> &'static TrafficModel {
    static MODEL: std::sync::OnceLock<TrafficModel> = std::sync::OnceLock::new();
    MODEL.get_or_init(TrafficModel::from_shaders)
}

impl Measurement {
    /// Set `bandwidth_fraction` from the copy bandwidth of the same run.
    pub fn compare_with_copy(&mut self, copy: Option<&CopyBandwidth>) {
        self.bandwidth_fraction = self
            .achieved_gb_per_s
            .zip(copy)
            .map(|(a, c)| a / c.gb_per_s);
    }
}

/// The line under the table that says what the bandwidth columns are.
pub fn bandwidth_note(env: &Environment) -> String {
    let model = "B/vert-step: modelled device-memory traffic per vertex-step, the fewest bytes the kernels must read and write (src/gpu/traffic.rs; a floor for today's kernels, not a counter); GB/s: that over the measured time";
    match &env.gpu_copy_bandwidth {
        Some(c) => format!(
            "{model}; of copy: that over the GPU's copy bandwidth, {:.1} GB/s read + write ({} buffer, {})\n",
            c.gb_per_s,
            bytes(c.buffer_bytes),
            c.timing
        ),
        None => format!("{model}\n"),
    }
}

/// Under the table: for each row with a GPU profile, where its step's time
/// goes, each dispatch of a substep in ms per step (phase 1 marked `/1`),
/// with its modelled traffic over that time in GB/s in brackets, and their
/// sum; empty when no row has one.
pub fn profiles(results: &[Measurement]) -> String {
    let mut out = String::new();
    for m in results {
        let Some(p) = &m.gpu_profile else { continue };
        let sum: f64 = p.iter().map(|k| k.ms_per_step).sum();
        let kernels: Vec<String> = p
            .iter()
            .map(|k| {
                let phase = if k.phase == 0 { "" } else { "/1" };
                let gb_per_s = |b: f64| b * m.vertices as f64 / (k.ms_per_step * 1e-3) / 1e9;
                let sectors = k
                    .model_sector_bytes
                    .map_or(String::new(), |b| format!(" | {:.1}", gb_per_s(b)));
                format!(
                    "{}{phase} {:.3} [{:.1}{sectors}]",
                    k.kernel,
                    k.ms_per_step,
                    gb_per_s(k.model_bytes)
                )
            })
            .collect();
        out += &format!(
            "profile {} {} {} strands, ms/step by dispatch (a pass each, sum {sum:.3}) [modelled GB/s | in 32-byte sectors]: {}\n",
            m.workload,
            m.label(),
            m.strands,
            kernels.join(", ")
        );
    }
    out
}

/// Under the table: for each GPU row, how long its kernels took to compile
/// before its first frame; empty when no row has it.
pub fn compile_times(results: &[Measurement]) -> String {
    let mut out = String::new();
    for m in results {
        let Some(s) = m.gpu_compile_s else { continue };
        out += &format!(
            "compile {} {} {} strands: {s:.3} s for the form's kernels before the first frame \
             (~0 where an earlier row or the driver's cache had them)\n",
            m.workload,
            m.label(),
            m.strands,
        );
    }
    out
}

/// Under the table: for each GPU row, its modelled traffic per vertex-step
/// by buffer, read + written; empty when no row has it.
pub fn traffic_by_buffer(results: &[Measurement]) -> String {
    let mut out = String::new();
    for m in results {
        let (Some(total), Some(by)) = (m.model_bytes_per_vertex_step, &m.model_bytes_by_buffer)
        else {
            continue;
        };
        // Buffers that round to no bytes (a rod's or a step's values per
        // vertex) are left out of the line; the JSON has them all.
        let parts: Vec<String> = by
            .iter()
            .filter(|b| b.read + b.written >= 0.5)
            .map(|b| {
                // The sector count where it differs from the bytes.
                let sectors = match (b.sector_read, b.sector_written) {
                    (Some(r), Some(w)) if (r + w - b.read - b.written).abs() >= 0.5 => {
                        format!("; {:.0} in sectors", r + w)
                    }
                    _ => String::new(),
                };
                format!(
                    "{} {:.0} ({:.0} + {:.0}{sectors})",
                    b.buffer,
                    b.read + b.written,
                    b.read,
                    b.written
                )
            })
            .collect();
        let sectors = m
            .model_sector_bytes_per_vertex_step
            .map_or(String::new(), |s| format!("; in 32-byte sectors {s:.0}"));
        out += &format!(
            "traffic {} {} {} strands, modelled B/vert-step by buffer, read + written (total {total:.0}{sectors}): {}\n",
            m.workload,
            m.label(),
            m.strands,
            parts.join(", ")
        );
    }
    out
}

/// Frames `measure` runs at least for a workload: warm-up and repeats (more
/// where `Settings::min_time_s` asks for them), and with
/// `Settings::shares` twice when it has colliders (with and without them,
/// for contact's share) and again when it has interaction (for the grid's
/// share).
pub fn frames_of(workload: &Workload, settings: Settings) -> u64 {
    let once = (settings.warmup + settings.repeats) as u64;
    let scene = &workload.scene;
    let again = if settings.shares {
        !scene.colliders.is_empty() as u64 + scene.interaction.is_active() as u64
    } else {
        0
    };
    once * (1 + again)
}

/// Whether an error means larger sizes will not fit either.
pub fn is_capacity_error(e: &GpuError) -> bool {
    matches!(
        e,
        GpuError::TooLarge { .. } | GpuError::Limit { .. } | GpuError::OutOfMemory { .. }
    )
}

/// Human-readable bytes.
pub fn bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

/// `Measurement::gpu_splat_asked` in reports written before it: those
/// labelled every splat but the own.
fn symplectic_in_old_reports() -> String {
    Integrator::Symplectic.name().into()
}

fn splat_asked_in_old_reports() -> bool {
    true
}

impl Measurement {
    /// The backend as the table and plot name it: `cpu`, `gpu:FORM`,
    /// `gpu:FORM:f32` for a GPU row with the bending stencil in f32, and
    /// `…:sorted-RUN-splat` or `…:own-splat` for one whose splat was.
    pub fn label(&self) -> String {
        let stencil = match self.gpu_stencil.as_deref() {
            Some("f32") => ":f32",
            _ => "",
        };
        // Any splat asked for, the own too: on a GPU with the grid the
        // unlabelled row is the default sorted one.
        let splat = match self.gpu_splat.as_deref() {
            _ if !self.gpu_splat_asked => String::new(),
            None => String::new(),
            Some(s) => format!(":{}-splat", s.replace(':', "-")),
        };
        let integrator = if self.integrator == Integrator::Symplectic.name() {
            String::new()
        } else {
            format!(":{}", self.integrator)
        };
        match &self.gpu_form {
            Some(form) => format!("{}:{form}{stencil}{splat}{integrator}", self.backend),
            None => format!("{}{integrator}", self.backend),
        }
    }
}

/// The table `strands bench` prints.
pub fn table(results: &[Measurement]) -> String {
    let bw = results.iter().map(|m| m.label().len()).fold(4, usize::max);
    // The workload column as wide as its longest name (scene files' stems too).
    let ww = results
        .iter()
        .map(|m| m.workload.chars().count())
        .fold(10, usize::max);
    let mut out = format!(
        "{:<ww$} {:<bw$} {:>8} {:>9} {:>26} {:>11} {:>11} {:>7} {:>5} {:>9} {:>5} {:>5} {:>6} {:>10} {:>10} {:>11} {:>8} {:>7}\n",
        "workload",
        "back",
        "strands",
        "vertices",
        "ms/step median (min–max)",
        "ms/(1/60 s)",
        "vert-step/s",
        "contact",
        "grid",
        "strain",
        "proj",
        "twist",
        "newton",
        "gpu mem",
        "host mem",
        "B/vert-step",
        "GB/s",
        "of copy"
    );
    for m in results {
        let (Some(s), Some(vs), Some(strain), None) = (
            &m.ms_per_step,
            m.vertex_steps_per_second,
            m.max_strain,
            &m.error,
        ) else {
            out += &format!(
                "{:<ww$} {:<bw$} {:>8} {:>9}  not measured: {}\n",
                m.workload,
                m.label(),
                m.strands,
                m.vertices,
                m.error.as_deref().unwrap_or("unknown")
            );
            continue;
        };
        out += &format!(
            "{:<ww$} {:<bw$} {:>8} {:>9} {:>26} {:>11} {:>11.3e} {:>7} {:>5} {:>9.1e} {:>5} {:>5} {:>6} {:>10} {:>10} {:>11} {:>8} {:>7}\n",
            m.workload,
            m.label(),
            m.strands,
            m.vertices,
            format!(
                "{:.3}{} ({:.3}–{:.3})",
                s.median,
                if s.is_unsteady() { "*" } else { "" },
                s.min,
                s.max
            ),
            m.ms_per_60hz_frame
                .map(|f| format!("{f:.3}"))
                .unwrap_or_else(|| "-".into()),
            vs,
            m.contact_share
                .map(|c| format!("{:.0}%", 100.0 * c))
                .unwrap_or_else(|| "-".into()),
            m.grid_share
                .map(|c| format!("{:.0}%", 100.0 * c))
                .unwrap_or_else(|| "-".into()),
            strain,
            m.projection_iterations,
            m.twist_iterations,
            m.newton_iterations,
            m.gpu_bytes.map(bytes).unwrap_or_else(|| "-".into()),
            bytes(m.host_bytes),
            m.model_bytes_per_vertex_step
                .map(|b| format!("{b:.0}"))
                .unwrap_or_else(|| "-".into()),
            m.achieved_gb_per_s
                .map(|g| format!("{g:.2}"))
                .unwrap_or_else(|| "-".into()),
            m.bandwidth_fraction
                .map(|f| format!("{:.0}%", 100.0 * f))
                .unwrap_or_else(|| "-".into()),
        );
    }
    if results
        .iter()
        .any(|m| m.error.is_none() && m.ms_per_step.is_some_and(|s| s.is_unsteady()))
    {
        out += &format!(
            "*: median over {:.0} % above the row's fastest frame: the machine was slower for part of the row; compare the min, or time more frames (--min-time)\n",
            100.0 * (UNSTEADY_MEDIAN - 1.0)
        );
    }
    out
}

/// Ratio of old to new median time per matching workload (> 1: faster now).
/// Workloads match by name, source, backend and size; different simulation
/// settings are flagged rather than compared.
pub fn compare(old: &Report, new: &Report) -> String {
    let bw = new
        .results
        .iter()
        .map(|m| m.label().len())
        .fold(4, usize::max);
    let ww = new
        .results
        .iter()
        .map(|m| m.workload.chars().count())
        .fold(10, usize::max);
    let mut out = format!(
        "{:<ww$} {:<bw$} {:>8} {:>9}   old ms/step  new ms/step  speed-up\n",
        "workload", "back", "strands", "vertices"
    );
    // Whether a speed-up is between medians of which one is unsteady.
    let mut unsteady = false;
    for m in &new.results {
        let head = format!(
            "{:<ww$} {:<bw$} {:>8} {:>9}",
            m.workload,
            m.label(),
            m.strands,
            m.vertices
        );
        // A GPU row matches one of the same form and stencil, or one from
        // a report that did not record them, and of the same vertex order.
        let forms_match = |o: &Measurement| {
            (match (&o.gpu_form, &m.gpu_form) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }) && (match (&o.gpu_stencil, &m.gpu_stencil) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }) && (match (o.gpu_interleave, m.gpu_interleave) {
                // The vertex order that ran, where both recorded it: a
                // GPU's unlabelled rows in older reports may have run each
                // rod's vertices one after another.
                (Some(a), Some(b)) => (a == 0) == (b == 0),
                _ => true,
            }) && {
                let splat = |s: &Option<String>| s.clone().unwrap_or_else(|| "own".into());
                splat(&o.gpu_splat) == splat(&m.gpu_splat)
            }
        };
        let found = old.results.iter().find(|o| {
            o.workload == m.workload
                && o.source == m.source
                && o.backend == m.backend
                && o.integrator == m.integrator
                && forms_match(o)
                && o.strands == m.strands
                && o.vertices == m.vertices
        });
        out += &match found {
            None => format!("{head}  no such workload in the old report\n"),
            Some(o) if o.settings != m.settings => {
                format!(
                    "{head}  different settings (h, substeps, projection, forces or material)\n"
                )
            }
            Some(o) => match (&o.ms_per_step, &m.ms_per_step) {
                (Some(a), Some(b)) => {
                    let shaky = a.is_unsteady() || b.is_unsteady();
                    unsteady |= shaky;
                    format!(
                        "{head} {:>13.4} {:>12.4} {:>8.2}×{}\n",
                        a.median,
                        b.median,
                        a.median / b.median,
                        if shaky { "*" } else { "" }
                    )
                }
                _ => format!("{head}  not measured in one of the reports\n"),
            },
        };
    }
    if unsteady {
        out += &format!(
            "*: in one of the reports the row's median is over {:.0} % above its fastest frame (the machine was slower for part of the row), so the speed-up is uncertain; compare the rows' min, or time more frames (--min-time)\n",
            100.0 * (UNSTEADY_MEDIAN - 1.0)
        );
    }
    out
}

/// Read a report written by an earlier `strands bench`.
pub fn load_report(path: &Path) -> Result<Report> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text)
        .with_context(|| format!("{}: not a strands bench report", path.display()))
}

/// SVG plot of milliseconds per step against vertex count, one line per
/// workload and backend, both axes logarithmic.
pub fn plot(results: &[Measurement], path: &PathBuf) -> Result<()> {
    use plotters::prelude::*;
    let ok: Vec<(&Measurement, Spread)> = results
        .iter()
        .filter_map(|m| m.ms_per_step.map(|s| (m, s)))
        .collect();
    if ok.is_empty() {
        bail!("nothing measured to plot");
    }
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, 0.0f64, f64::MAX, 0.0f64);
    for (m, s) in &ok {
        x0 = x0.min(m.vertices as f64);
        x1 = x1.max(m.vertices as f64);
        y0 = y0.min(s.min);
        y1 = y1.max(s.max);
    }
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("strands bench: cost per step", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0 * 0.7..x1 * 1.4).log_scale(),
            (y0 * 0.7..y1 * 1.4).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("vertices")
        .y_desc("ms per step (median; bars: min–max)")
        .draw()?;
    let mut series: Vec<(String, Vec<(f64, Spread)>)> = Vec::new();
    for (m, s) in &ok {
        let key = format!("{} ({})", m.workload, m.label());
        let p = (m.vertices as f64, *s);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(p),
            None => series.push((key, vec![p])),
        }
    }
    for (i, (key, mut pts)) in series.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|(x, s)| (*x, s.median)),
                color.stroke_width(2),
            ))?
            .label(key)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(
            pts.iter()
                .map(|(x, s)| PathElement::new(vec![(*x, s.min), (*x, s.max)], color)),
        )?;
        chart.draw_series(
            pts.iter()
                .map(|(x, s)| Circle::new((*x, s.median), 4, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_min_max() {
        let s = Spread::of(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 10.0));
        let s = Spread::of(vec![5.0, 1.0, 2.0]);
        assert_eq!(s.median, 2.0);
    }

    /// `timed_frames`: the warm-up untimed, then `repeats` frames, then more
    /// while the timed frames' wall time is under `min_time_s` (frames of
    /// 0.1 s wall here, so 0.35 s takes 4), the extra frames flagged to
    /// `tick`; times per integrator step in ms, from the frame's own time,
    /// not its wall time; the first error returned as it is.
    #[test]
    fn timed_frames_make_up_the_least_time() {
        let settings = Settings {
            gpu_splat: None,
            warmup: 1,
            repeats: 2,
            min_time_s: 0.35,
            substeps: 4,
            shares: true,
        };
        let mut ticks = Vec::new();
        let mut n = 0;
        let (times, walls) = timed_frames::<()>(settings, &mut |extra| ticks.push(extra), || {
            n += 1;
            Ok((0.002 * n as f64, 0.1))
        })
        .unwrap();
        assert_eq!(ticks, [false, false, false, true, true]);
        // Frames 2–5 timed (frame 1 warms up): 2n ms over 4 substeps.
        assert_eq!(times, [1.0, 1.5, 2.0, 2.5]);
        assert_eq!(walls, [25.0; 4]);
        // No least time: exactly the repeats.
        let exact = Settings {
            min_time_s: 0.0,
            ..settings
        };
        let (times, _) = timed_frames::<()>(exact, &mut |_| {}, || Ok((0.1, 0.1))).unwrap();
        assert_eq!(times.len(), 2);
        // An error stops the frames.
        let mut n = 0;
        let failed = timed_frames(settings, &mut |_| {}, || {
            n += 1;
            if n == 3 {
                Err("frame 3")
            } else {
                Ok((0.1, 0.1))
            }
        });
        assert_eq!(failed, Err("frame 3"));
        assert_eq!(n, 3);
    }

    /// One timed frame of one substep, no warm-up, no least time.
    fn one_frame() -> Settings {
        Settings {
            gpu_splat: None,
            warmup: 0,
            repeats: 1,
            min_time_s: 0.0,
            substeps: 1,
            shares: true,
        }
    }

    /// An implicit integrator's row steps once a frame of 1/60 s whatever
    /// `--substeps` says, so its time per step is its frame's time, and
    /// the time per 1/60 s of both kinds of row is the step's times the
    /// steps that 1/60 s takes; the label names the integrator, and a
    /// report from before the field reads as symplectic.
    #[test]
    fn implicit_rows_step_once_a_frame_of_a_sixtieth() {
        let settings = Settings {
            substeps: 10,
            shares: false,
            ..one_frame()
        };
        let w = Workload::standard("hair", 4, 8).unwrap();
        let explicit = measure(&w, BackendKind::Cpu, None, settings, &mut |_| {});
        let w = w.with_integrator(Integrator::BackwardEuler);
        let implicit = measure(&w, BackendKind::Cpu, None, settings, &mut |_| {});
        assert_eq!(implicit.error, None);
        assert_eq!(implicit.integrator, "backward-euler");
        assert_eq!(implicit.label(), "cpu:backward-euler");
        assert_eq!(explicit.label(), "cpu");
        assert_eq!(
            (implicit.settings.substeps, implicit.settings.h),
            (1, 1.0 / 60.0)
        );
        assert_eq!(explicit.settings.substeps, 10);
        for m in [&explicit, &implicit] {
            let per_step = m.ms_per_step.as_ref().unwrap().median;
            let frame = m.ms_per_60hz_frame.unwrap();
            let steps = (1.0 / 60.0) / m.settings.h;
            assert!((frame - per_step * steps).abs() <= 1e-12 * frame, "{m:?}");
        }
        assert!(implicit.newton_iterations > 0);
        let mut json = serde_json::to_value(&implicit).unwrap();
        json.as_object_mut().unwrap().remove("integrator");
        let old: Measurement = serde_json::from_value(json).unwrap();
        assert_eq!(old.integrator, "symplectic");
    }

    /// `Settings::shares` off (`strands bench --no-shares`): the row is
    /// timed once, so it has neither contact's nor the grid's share and
    /// `frames_of` counts its frames once; on, the hair (head collider and
    /// hair–hair grid) is timed three times and has both.
    #[test]
    fn rows_without_shares_are_timed_once() {
        let w = Workload::standard("hair", 4, 8).unwrap();
        assert!(!w.scene.colliders.is_empty() && w.scene.interaction.is_active());
        let with = one_frame();
        let without = Settings {
            shares: false,
            ..with
        };
        assert_eq!(frames_of(&w, with), 3);
        assert_eq!(frames_of(&w, without), 1);
        let mut frames = 0;
        let m = measure(&w, BackendKind::Cpu, None, with, &mut |_| frames += 1);
        assert_eq!(frames, 3);
        assert!(m.contact_share.is_some() && m.grid_share.is_some());
        let mut frames = 0;
        let m = measure(&w, BackendKind::Cpu, None, without, &mut |_| frames += 1);
        assert_eq!(frames, 1);
        assert!(m.contact_share.is_none() && m.grid_share.is_none());
        assert!(m.ms_per_step_without_contact.is_none() && m.ms_per_step_without_grid.is_none());
        assert!(m.ms_per_step.is_some());
        // A report written before the flag has no `shares`: its rows were
        // timed with them, and it reads back so.
        let mut old = report_of(vec![m.clone()], None);
        old.shares = false;
        let mut json = serde_json::to_value(&old).unwrap();
        assert_eq!(json["shares"], false);
        json.as_object_mut().unwrap().remove("shares");
        let back: Report = serde_json::from_value(json).unwrap();
        assert!(back.shares);
    }

    /// `hair-nogrid` is the hair workload without hair–hair interaction
    /// (the GPU's target workload): the same rods and head motion, no grid; an
    /// unknown workload is refused naming the three.
    #[test]
    fn hair_nogrid_is_the_hair_without_its_grid() {
        let hair = Workload::standard("hair", 4, 8).unwrap();
        let nogrid = Workload::standard("hair-nogrid", 4, 8).unwrap();
        let (a, _) = hair.scene.build();
        let (b, _) = nogrid.scene.build();
        assert!(a.interaction.is_active() && !b.interaction.is_active());
        assert_eq!(
            (a.rod_count(), a.vertex_count()),
            (b.rod_count(), b.vertex_count())
        );
        assert_eq!(a.anchors.len(), b.anchors.len());
        let t = 1.0;
        assert_eq!(
            a.anchors[0].pose(t),
            b.anchors[0].pose(t),
            "the head moves alike"
        );
        assert_eq!(nogrid.name, "hair-nogrid");
        let e = Workload::standard("fur", 4, 8).err().unwrap().to_string();
        assert!(e.contains("fur") && e.contains("hair-nogrid"), "{e}");
    }

    /// The table marks a row whose median is more than 10 % above its
    /// fastest frame, and says what the mark means, only where a row has it.
    #[test]
    fn table_marks_unsteady_rows() {
        let w = Workload::standard("hair", 4, 8).unwrap();
        let settings = one_frame();
        let mut m = measure(&w, BackendKind::Cpu, None, settings, &mut |_| {});
        let with = |median: f64| Spread {
            median,
            min: 10.0,
            max: 20.0,
        };
        m.ms_per_step = Some(with(10.9));
        let steady = table(std::slice::from_ref(&m));
        assert!(
            steady.contains("10.900 (10.000") && !steady.contains('*'),
            "{steady}"
        );
        m.ms_per_step = Some(with(11.1));
        let unsteady = table(std::slice::from_ref(&m));
        assert!(unsteady.contains("11.100* (10.000"), "{unsteady}");
        assert!(unsteady.contains("*: median over 10 % above"), "{unsteady}");
    }

    /// A report of `results` from a machine without a GPU (`gpu_error`: why).
    fn report_of(results: Vec<Measurement>, gpu_error: Option<String>) -> Report {
        Report {
            environment: Environment {
                strands_version: "test".into(),
                build_profile: "test".into(),
                cpu: cpu_name(),
                cpu_threads: 1,
                gpu: None,
                gpu_driver: None,
                gpu_error,
                gpu_copy_bandwidth: None,
            },
            warmup: 0,
            repeats: 1,
            min_time_s: 0.0,
            shares: true,
            results,
        }
    }

    /// A GPU row of `form` for the hair at 4 strands, timed at `ms` a step
    /// (the compare tests' rows).
    fn gpu_row(form: &str, ms: f64) -> Measurement {
        let w = Workload::standard("hair", 4, 8).unwrap();
        let mut m = measure(&w, BackendKind::Cpu, None, one_frame(), &mut |_| {});
        m.backend = "gpu".into();
        m.gpu_form = Some(form.into());
        m.ms_per_step = Some(Spread {
            median: ms,
            min: ms,
            max: ms,
        });
        m
    }

    /// A row's label names its splat only where `--gpu-splat` asked for it,
    /// the own too (a GPU's default, `sorted:32` with the grid, goes
    /// unlabelled; the JSON still
    /// names it); a report older than `gpu_splat_asked` labels every splat
    /// it recorded.
    #[test]
    fn label_names_the_splat_asked_for() {
        let w = Workload::standard("hair", 4, 8).unwrap();
        let mut m = measure(&w, BackendKind::Cpu, None, one_frame(), &mut |_| {});
        m.backend = "gpu".into();
        m.gpu_form = Some("walked-fused".into());
        m.gpu_splat = Some("sorted:32".into());
        m.gpu_splat_asked = false;
        assert_eq!(m.label(), "gpu:walked-fused");
        m.gpu_splat_asked = true;
        assert_eq!(m.label(), "gpu:walked-fused:sorted-32-splat");
        m.gpu_splat = Some("own".into());
        assert_eq!(m.label(), "gpu:walked-fused:own-splat");
        m.gpu_splat_asked = false;
        assert_eq!(m.label(), "gpu:walked-fused");
        m.gpu_splat_asked = true;
        let mut json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["gpu_splat_asked"], true);
        json["gpu_splat"] = "sorted:16".into();
        json.as_object_mut().unwrap().remove("gpu_splat_asked");
        let old: Measurement = serde_json::from_value(json).unwrap();
        assert_eq!(old.label(), "gpu:walked-fused:sorted-16-splat");
    }

    /// `--compare` matches a GPU row only with one that ran the same vertex
    /// order where both recorded it (`gpu_interleave`: 0 consecutive, else
    /// the rod length interleaved), and with any row that did not.
    #[test]
    fn compare_matches_rows_of_the_same_vertex_order() {
        let row = |interleave: Option<u32>, ms: f64| Measurement {
            gpu_interleave: interleave,
            ..gpu_row("walked-fused", ms)
        };
        let cmp = |old: Option<u32>, new: Option<u32>| {
            compare(
                &report_of(vec![row(old, 2.0)], None),
                &report_of(vec![row(new, 1.0)], None),
            )
        };
        assert!(cmp(Some(0), Some(32)).contains("no such workload"));
        assert!(cmp(Some(32), Some(0)).contains("no such workload"));
        assert!(cmp(Some(8), Some(32)).contains("2.00×"));
        assert!(cmp(Some(0), Some(0)).contains("2.00×"));
        assert!(cmp(None, Some(32)).contains("2.00×"));
    }

    /// A report with an entry that was not measured (e.g. the device could
    /// not hold it) survives JSON and is compared entry by entry.
    #[test]
    fn reports_with_failed_entries_round_trip_and_compare() {
        let w = Workload::standard("hair", 4, 8).unwrap();
        let settings = one_frame();
        let ok = measure(&w, BackendKind::Cpu, None, settings, &mut |_| {});
        let failed = measure(&w, BackendKind::Gpu, None, settings, &mut |_| {});
        assert!(ok.error.is_none() && ok.ms_per_step.is_some());
        assert!(failed.error.is_some() && failed.ms_per_step.is_none());
        let report = report_of(vec![ok, failed], Some("none".into()));
        let back: Report = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        let text = compare(&back, &report);
        assert_eq!(text.matches('×').count(), 1, "{text}");
        // One timed frame: median and min the same, nothing marked.
        assert!(!text.contains('*'), "{text}");
        // A new row whose median is 2× its fastest frame: its speed-up marked
        // and the mark explained.
        let mut shaky = report.clone();
        shaky.results[0].ms_per_step = Some(Spread {
            median: 2.0,
            min: 1.0,
            max: 3.0,
        });
        let text = compare(&back, &shaky);
        assert!(
            text.contains("×*") && text.contains("\n*: in one of the reports"),
            "{text}"
        );
        assert!(
            text.contains("not measured in one of the reports"),
            "{text}"
        );
        // Different settings are flagged, not compared.
        let mut other = back.clone();
        other.results[0].settings.substeps = 7;
        assert!(compare(&other, &report).contains("different settings"));
    }
}
