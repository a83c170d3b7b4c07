//! The `strands` command line.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use strands::backend::{BackendKind, Simulator};
use strands::gpu::GpuContext;
use strands::output::{OutFile, RunResult, StepDiagnostics, frame, rods_of};
use strands::scene::limits::check_run;
use strands::scene::{Scene, SceneError};

#[derive(Parser)]
#[command(
    name = "strands",
    version,
    about = "Discrete Elastic Rods: hair, fur, grass and cables"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scene headless and write the result as JSON.
    Run {
        /// Scene file (TOML; see README.md, "Scene format").
        scene: PathBuf,
        /// Steps of sim.dt to take (default: sim.steps from the scene).
        #[arg(long)]
        steps: Option<u64>,
        /// Write the JSON result here (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also store every K-th step's positions and twist angles.
        #[arg(long, value_name = "K")]
        every: Option<u64>,
        /// Also write the strands as USD BasisCurves with a time sample per
        /// stored frame (every step without --every); without --out, no JSON.
        #[arg(long, value_name = "FILE.usda")]
        usd: Option<PathBuf>,
        /// Override a scene value, e.g. `--set sim.dt=1e-4` or `--set rods.0.segments=40`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Simulator to run (default: gpu on a hardware GPU adapter, else cpu,
        /// with a line saying why).
        #[arg(long, value_enum)]
        backend: Option<BackendKind>,
        /// GPU: the bending stencil's precision (default: f64 where the
        /// device has f64 in shaders, else f32; README "Precision").
        #[arg(long = "gpu-stencil", value_enum, value_name = "PRECISION")]
        gpu_stencil: Option<strands::gpu::Stencil>,
        /// Refuse runs larger than this many vertex-substeps (vertices ×
        /// substeps × steps); a guard against runs that would not end.
        #[arg(long, value_name = "N", default_value_t = strands::scene::limits::DEFAULT_MAX_WORK)]
        max_work: f64,
    },
    /// Measure the cost per step of standard workloads and scene files on
    /// both backends; print a table, write JSON and an SVG plot.
    Bench(Box<BenchArgs>),
    /// Show the GPU simulation live in a window (or write one image with
    /// --screenshot). Keys are listed in the window title and README.md.
    Demo(DemoArgs),
}

#[derive(clap::Args)]
struct DemoArgs {
    /// A scene file to show (default: the built-in hair, curly hair and grass;
    /// Tab switches between them).
    scene: Option<PathBuf>,
    /// Built-in scene to start with: hair (default), curly or grass.
    #[arg(long)]
    start: Option<String>,
    /// Override a value of the scene file (as `strands run --set`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Render offscreen after --frames simulation steps and write this PNG;
    /// no window is opened.
    #[arg(long, value_name = "FILE.png")]
    screenshot: Option<PathBuf>,
    /// Simulation steps before the screenshot (default 60).
    #[arg(long)]
    frames: Option<u32>,
    /// Screenshot size in pixels, WIDTHxHEIGHT (default 960x540).
    #[arg(long)]
    size: Option<String>,
    /// Screenshot: move the head by X,Y,Z metres during the frames.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "X,Y,Z",
        allow_negative_numbers = true
    )]
    head_offset: Option<Vec<f64>>,
    /// Screenshot: turn the head by this many degrees about the vertical.
    #[arg(long, default_value_t = 0.0, value_name = "DEGREES")]
    head_turn: f64,
    /// Window: close after this many frames (for tests).
    #[arg(long, value_name = "N")]
    exit_after_frames: Option<u64>,
    /// Window: resize (down to 1×1), minimise and restore the window while
    /// running, as a user might (for tests).
    #[arg(long)]
    exercise_window: bool,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Standard workloads to run (hair, grass; hair-nogrid: the hair
    /// without hair–hair interaction, issue 12's target workload).
    #[arg(long = "workload", value_delimiter = ',', default_value = "hair,grass")]
    workloads: Vec<String>,
    /// Strand counts of the standard workloads.
    #[arg(long, value_delimiter = ',', default_value = "1000,4000,16000,32000")]
    strands: Vec<usize>,
    /// Vertices per strand of the standard workloads (16–64 is typical).
    #[arg(long, default_value_t = 32)]
    vertices: usize,
    /// Also time these scene files, as they are.
    #[arg(long = "scene")]
    scenes: Vec<PathBuf>,
    /// Backends to time (default: the CPU, and the GPU where `strands run`
    /// would choose it, a hardware adapter; with --gpu-form, any adapter).
    #[arg(long = "backend", value_enum, value_delimiter = ',')]
    backends: Vec<BackendKind>,
    /// GPU forms to time, each a row (walked, walked-fused, walked-frame,
    /// packed, fused, fused-buffer, fused-frame: how the per-rod stages run,
    /// README "On the GPU"); default: walked-frame on a GPU (walked-fused
    /// with the hair–hair grid), walked-fused on a CPU adapter, walked where
    /// the device's limits allow neither (`GpuSimulator::default_form`; the
    /// fastest timed on an H200, docs/BENCHMARKS.md). Asks for the GPU, even
    /// a software adapter; refused with --backend cpu.
    #[arg(long = "gpu-form", value_delimiter = ',', value_name = "FORM")]
    gpu_forms: Vec<strands::gpu::Form>,
    /// GPU bending-stencil precisions to time, each a row with each form
    /// (f64, f32; README "Precision"); default: the device's (f64 where it
    /// has f64 in shaders). Asks for the GPU like --gpu-form.
    #[arg(
        long = "gpu-stencil",
        value_enum,
        value_delimiter = ',',
        value_name = "PRECISION"
    )]
    gpu_stencils: Vec<strands::gpu::Stencil>,
    /// GPU pack shapes to time, each a row with each form, precision and
    /// layout: rows (vertices) a pack of the per-pack kernels holds, 32, 64,
    /// 128 or 256, on min(rows, 64) invocations (README "On the GPU");
    /// default 32 on a GPU, 256 on a CPU adapter. ROWS:state (32 or 64
    /// rows) keeps a pack's whole state in workgroup memory in the fused
    /// kernels, not only its positions (slower on an H200 and lavapipe;
    /// rows `…-row-packs-state`). Changes only the packed,
    /// fused, fused-buffer and fused-frame forms; a rod longer than a pack
    /// is walked by one invocation. Asks for the GPU like --gpu-form.
    #[arg(long = "gpu-pack-rows", value_delimiter = ',', value_name = "ROWS")]
    gpu_pack_rows: Vec<strands::gpu::pack::PackShape>,
    /// GPU splats to time, each a row with each form, precision and pack
    /// shape: own (each form's own splat onto the hair–hair grid),
    /// sorted (the vertices sorted by cell first, then each run of 16
    /// sorted vertices, `layout::SORTED_RUN`, walked by one invocation, so
    /// a cell's sums reach its nodes once a run: docs/INTERACTION.md), or
    /// sorted:RUN (runs of RUN, 1 to 1024); default sorted:32 on a GPU
    /// where the scene has the grid, else own. Rows and the JSON
    /// name the run (`sorted:16`). The same results either way; changes
    /// only scenes with hair–hair interaction. Asks for the GPU like
    /// --gpu-form.
    #[arg(long = "gpu-splat", value_delimiter = ',', value_name = "SPLAT")]
    gpu_splats: Vec<strands::gpu::schedule::Splat>,
    /// Frames run before timing.
    #[arg(long, default_value_t = 2)]
    warmup: u32,
    /// Timed frames, at least; the figures are the median, min and max over them.
    #[arg(long, default_value_t = 5)]
    repeats: u32,
    /// Time frames past --repeats until the timed frames add up to this many
    /// seconds of wall time (0: exactly --repeats), so that a slow spell of
    /// a shared machine moves a few frames, not the median.
    #[arg(long = "min-time", default_value_t = 1.0, value_name = "SECONDS")]
    min_time: f64,
    /// Time each row once: not again without its colliders and without
    /// hair–hair interaction, so the contact and grid columns stay empty
    /// (up to three times fewer frames, for experiments that compare whole
    /// rows).
    #[arg(long = "no-shares")]
    no_shares: bool,
    /// Integrator steps per frame (one GPU submission).
    #[arg(long, default_value_t = 10)]
    substeps: u32,
    /// Write every figure here as JSON.
    #[arg(long, default_value = "bench.json")]
    out: PathBuf,
    /// Write the plot of cost per step against vertex count here (SVG).
    #[arg(long, default_value = "bench.svg")]
    plot: PathBuf,
    /// Print the speed-up against an earlier report.
    #[arg(long, value_name = "OLD.json")]
    compare: Option<PathBuf>,
    /// After the listed sizes, keep doubling the strand count on the GPU
    /// until the device cannot hold it, host memory runs short, or a step
    /// takes over a second.
    #[arg(long)]
    grow: bool,
}

/// Mesa's Vulkan device-selection layer (loaded with lavapipe and Mesa's
/// GPU drivers) connects to a Wayland display to find the one a window
/// would use, and libwayland prints `error: XDG_RUNTIME_DIR is invalid or
/// not set in the environment.` for each probe where the process has no
/// runtime directory: on a headless machine, two such lines before a run
/// that succeeds. Without a runtime directory and a Wayland display there
/// is no display for the layer to choose by, so it is switched off
/// (`NODEVICE_SELECT=1`, its own switch) there, unless the user set it or
/// asked the layer for a device (`MESA_VK_DEVICE_SELECT`). Nothing that
/// the simulator or the driver reports is hidden.
fn quiet_device_select_probe() {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|d| !d.is_empty() && std::path::Path::new(&d).is_dir());
    if !runtime_dir
        && !set("WAYLAND_DISPLAY")
        && !set("NODEVICE_SELECT")
        && !set("MESA_VK_DEVICE_SELECT")
    {
        // SAFETY: the first statement of `main`, before any thread starts.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

fn main() {
    quiet_device_select_probe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            scene,
            steps,
            out,
            every,
            usd,
            set,
            backend,
            gpu_stencil,
            max_work,
        } => run(
            scene,
            steps,
            (out, usd),
            every.unwrap_or(0),
            &set,
            (backend, gpu_stencil),
            max_work,
        ),
        Command::Bench(args) => bench(*args),
        Command::Demo(args) => demo(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        // 128 + SIGINT, as a shell reports a run stopped by Ctrl-C.
        let code = if e.is::<Interrupted>() { 130 } else { 1 };
        std::process::exit(code);
    }
}

/// Set by the first Ctrl-C: `strands run` stops after the step under way
/// and writes what it simulated. A second Ctrl-C exits at once.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The temporary result file being written, removed by a second Ctrl-C.
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A run stopped by Ctrl-C (exit status 130).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Interrupted(String);

/// Each of `gpus` with each of `values` (`with`), in that order; `gpus` as
/// they are where no value was asked for (a bench flag left out).
fn each_with<T: Copy>(
    gpus: Vec<strands::gpu::GpuContext>,
    values: &[T],
    with: impl Fn(&strands::gpu::GpuContext, T) -> strands::gpu::GpuContext,
) -> Vec<strands::gpu::GpuContext> {
    if values.is_empty() {
        return gpus;
    }
    gpus.iter()
        .flat_map(|ctx| values.iter().map(|&v| with(ctx, v)))
        .collect()
}

/// A GPU error in the command line's words: where the library points to
/// the CPU reference, say which flag selects it.
fn gpu_hint(e: strands::gpu::GpuError) -> anyhow::Error {
    let text = e.to_string();
    if text.contains("CPU reference") {
        anyhow::anyhow!("{text} (`--backend cpu`)")
    } else {
        e.into()
    }
}

fn catch_ctrl_c() {
    let installed = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            for p in PARTIAL.lock().map(|p| p.clone()).unwrap_or_default() {
                let _ = std::fs::remove_file(p);
            }
            eprintln!("error: interrupted twice; exiting without writing a result");
            std::process::exit(130);
        }
        eprintln!(
            "interrupted: stopping after the current step and writing what was simulated (Ctrl-C again to exit at once)"
        );
    });
    if let Err(e) = installed {
        eprintln!("warning: cannot catch Ctrl-C ({e}); an interrupted run will write nothing");
    }
}

fn run(
    path: PathBuf,
    steps: Option<u64>,
    (out, usd): (Option<PathBuf>, Option<PathBuf>),
    every: u64,
    set: &[String],
    (backend, gpu_stencil): (Option<BackendKind>, Option<strands::gpu::Stencil>),
    max_work: f64,
) -> Result<()> {
    if max_work.is_nan() || max_work <= 0.0 {
        anyhow::bail!(
            "{}: --max-work {max_work}: must be a positive number of vertex-substeps",
            path.display()
        );
    }
    // A stencil precision is a GPU setting: it asks for the GPU, and
    // contradicts --backend cpu.
    if backend == Some(BackendKind::Cpu) && gpu_stencil.is_some() {
        anyhow::bail!(
            "--gpu-stencil sets the GPU's precision, which --backend cpu does not use: drop one of them"
        );
    }
    let backend = backend.or(gpu_stencil.map(|_| BackendKind::Gpu));
    catch_ctrl_c();
    let scene = Scene::load(&path, set).map_err(|e| e.with_override_flag("--set"))?;
    let steps_field = if steps.is_some() {
        "--steps"
    } else {
        "sim.steps"
    };
    let steps = steps.unwrap_or(scene.steps);
    check_run(&scene, steps, steps_field, every, max_work, usd.is_some()).map_err(
        |(field, message)| SceneError {
            file: path.clone(),
            field,
            origin: None,
            message,
        },
    )?;
    // Found before simulating: an --out or --usd that cannot be written.
    let open = |flag, f: &PathBuf| -> Result<OutFile> {
        let o =
            OutFile::create_for(flag, f).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        PARTIAL.lock().unwrap().extend(o.temp().map(PathBuf::from));
        Ok(o)
    };
    let out_file = out.as_ref().map(|f| open("--out", f)).transpose()?;
    let usd_file = usd.as_ref().map(|f| open("--usd", f)).transpose()?;
    let (rods, state) = scene.build();
    eprintln!("{}", substeps_line(&rods, &scene.params));
    if let Some((n, r, depth)) = strands::cpu::starting_inside(&rods, &state) {
        eprintln!(
            "note: {n} rod(s) start inside a collider (deepest: {}, {:.3} mm inside); contact pushes them out in the first substep",
            rods.names[r],
            depth * 1e3
        );
    }
    for g in &rods.interaction.groups {
        eprintln!(
            "interaction: group `{}` ({} rods): grid {}×{}×{} nodes, cell {:.3e} m, following anchor `{}`; rest density {:.4e} kg/m³{}",
            g.name,
            g.rods.len(),
            g.dims[0],
            g.dims[1],
            g.dims[2],
            g.cell,
            rods.anchors[g.anchor].name,
            g.rest_density,
            if g.rest_density_from_state {
                " (the densest node of the initial state)"
            } else {
                ""
            }
        );
    }
    let params = scene.params;
    let summary = format!(
        "{} rods, {} vertices; {steps} steps of {} s in {} substeps",
        rods.rod_count(),
        rods.vertex_count(),
        params.dt,
        params.substeps
    );
    let cpu_line = || format!("cpu ({} threads, f64)", rayon::current_num_threads());
    let gpu_note = || {
        if let Some(n) = strands::gpu::precision_note(&params) {
            eprintln!("{n}");
        }
    };
    let choice = strands::backend::choose(backend)
        .map_err(gpu_hint)
        .with_context(|| path.display().to_string())?;
    let (mut sim, adapter) = match (choice.kind, choice.gpu) {
        (BackendKind::Gpu, Some(ctx)) => {
            let ctx = match gpu_stencil {
                Some(st) => ctx
                    .with_stencil(st)
                    .map_err(|e| anyhow::anyhow!("--gpu-stencil {}: {e}", st.name()))?,
                None => ctx,
            };
            eprintln!(
                "backend: gpu on {} (f32{}{}); {summary}",
                ctx.describe(),
                if ctx.stencil_f64() {
                    " but the bending stencil"
                } else {
                    ""
                },
                if backend.is_none() {
                    "; --backend cpu for the f64 reference"
                } else {
                    ""
                }
            );
            gpu_note();
            let sim = Simulator::gpu(&ctx, rods, state, params)
                .map_err(gpu_hint)
                .with_context(|| path.display().to_string())?;
            if let Simulator::Gpu { sim: gpu, .. } = &sim {
                // A driver that compiles a pipeline as it is made (NVIDIA's)
                // takes its time here, up to minutes the first time, rather
                // than in a first step that shows no progress.
                let t = Instant::now();
                eprint!("GPU: compiling the {} kernels…", gpu.running_form());
                gpu.compile_kernels();
                eprintln!(
                    " {:.1} s (most drivers cache compiled kernels for later runs{})",
                    t.elapsed().as_secs_f64(),
                    if ctx.info.device_type == wgpu::DeviceType::Cpu {
                        "; a software driver may finish them at their first dispatch"
                    } else {
                        ""
                    }
                );
            }
            (sim, Some(ctx.describe()))
        }
        _ => {
            let why = if backend.is_some() {
                String::new()
            } else {
                format!(
                    " {}",
                    choice
                        .reason
                        .replace("request the GPU backend", "--backend gpu")
                )
            };
            eprintln!("backend: {}{why}; {summary}", cpu_line());
            (Simulator::cpu(rods, state, params), None)
        }
    };
    let mut diagnostics = vec![StepDiagnostics::new(0, sim.diagnostics())];
    let mut frames = Vec::new();
    if every > 0 {
        frames.push(frame(&sim));
    }
    // USD frames: those stored by --every K, or every step.
    let usd_every = every.max(1);
    let mut usd_frames = usd_file.as_ref().map(|_| {
        let tcps = 1.0 / params.dt;
        let info = strands::groom::usd::StageInfo {
            time_codes_per_second: tcps,
            up_axis: "Y",
        };
        let mut w = strands::groom::usd::UsdWriter::for_rods(sim.rods(), info);
        w.push(0.0, &sim.state().pos);
        w
    });
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {elapsed} elapsed, {eta} left")
            .unwrap(),
    );
    let start = Instant::now();
    // Why the run stopped early; the CPU state before the step that failed
    // (the GPU's host copy is only replaced by a good step).
    let mut stopped: Option<anyhow::Error> = None;
    let mut before: Option<strands::rods::State> = None;
    let mut step_failed = false;
    let keep_before = sim.kind() == BackendKind::Cpu;
    for _ in 0..steps {
        if INTERRUPTED.load(Ordering::SeqCst) {
            stopped = Some(
                Interrupted(format!(
                    "interrupted (Ctrl-C) after step {} of {steps}",
                    sim.step_count()
                ))
                .into(),
            );
            break;
        }
        if keep_before {
            before = Some(sim.state().clone());
        }
        match sim.step() {
            Ok(d) => {
                diagnostics.push(StepDiagnostics::new(sim.step_count(), d));
                if every > 0 && sim.step_count().is_multiple_of(every) {
                    frames.push(frame(&sim));
                }
                if let Some(w) = usd_frames.as_mut()
                    && sim.step_count().is_multiple_of(usd_every)
                {
                    w.push(sim.step_count() as f64, &sim.state().pos);
                }
                bar.inc(1);
            }
            Err(e) => {
                stopped = Some(e.into());
                step_failed = true;
                break;
            }
        }
    }
    bar.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    let outside: u64 = diagnostics.iter().map(|d| d.values.grid_outside).sum();
    if outside > 0 {
        let first = diagnostics
            .iter()
            .find(|d| d.values.grid_outside > 0)
            .map_or(0, |d| d.step);
        eprintln!(
            "note: vertices were outside their interaction grid {outside} times (vertex-substeps, first in step {first}) and did not interact there; grow interaction.padding (per-step counts: diagnostics[].grid_outside)"
        );
    }
    let taken = sim.step_count();
    let last = match &before {
        Some(b) if step_failed => b,
        _ => sim.state(),
    };
    let result = RunResult {
        schema: strands::output::SCHEMA,
        units: (),
        scene: path.display().to_string(),
        backend: sim.kind(),
        adapter,
        dt: params.dt,
        substeps: params.substeps,
        complete: stopped.is_none(),
        stopped: stopped.as_ref().map(|e| e.to_string()),
        requested_steps: steps,
        steps: taken,
        every,
        time: last.time,
        rods: rods_of(sim.rods(), last),
        frames,
        diagnostics,
    };
    let time = last.time;
    let vertex_steps = sim.rods().vertex_count() as f64 * taken as f64 * params.substeps as f64;
    let mut wrote = Vec::new();
    if let (Some(o), Some(w), Some(file)) = (usd_file, &usd_frames, &usd) {
        o.write_with(|f| w.write(f))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        wrote.push(format!("{} ({} frames)", file.display(), w.frame_count()));
    }
    let wrote = match (out_file, &out) {
        (Some(o), Some(file)) => {
            o.write(&result)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            wrote.insert(0, format!("{}", file.display()));
            wrote.join(" and ")
        }
        _ if usd.is_some() => wrote.join(" and "),
        _ => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            serde_json::to_writer(&mut w, &result)?;
            writeln!(w)?;
            "standard output".into()
        }
    };
    if let Some(e) = stopped {
        let note = format!(
            "; wrote the {taken} of {steps} steps simulated before it to {wrote} (\"complete\": false)"
        );
        let scene = path.display().to_string();
        return Err(match e.downcast::<Interrupted>() {
            Ok(Interrupted(m)) => Interrupted(format!("{scene}: {m}{note}")).into(),
            Err(e) => anyhow::anyhow!("{scene}: {}{note}", e.to_string().trim_end_matches('.')),
        });
    }
    eprintln!(
        "done: t = {time:.4} s in {wall:.2} s wall ({:.3e} vertex-substeps/s){}",
        vertex_steps / wall.max(1e-9),
        if out.is_some() || usd.is_some() {
            format!("; wrote {wrote}")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// What the substeps are and why: the step limit, and what `"auto"` chose.
fn substeps_line(rods: &strands::rods::RodSet, p: &strands::params::SimParams) -> String {
    use strands::stability::{SAFETY, step_limit};
    let h = p.h();
    let Some(l) = step_limit(rods).filter(|l| l.h_max.is_finite()) else {
        return format!(
            "substeps: {} (h = {h:.3e} s; no rod has an explicit step limit)",
            p.substeps
        );
    };
    let limit = format!(
        "the explicit step limit is {:.3e} s, set by rod {} (`{}`): {}",
        l.h_max,
        l.rod,
        rods.names[l.rod],
        l.explain()
    );
    if p.auto_substeps {
        format!(
            "substeps: \"auto\" chose {} per step (h = {h:.3e} s ≤ {SAFETY} × the limit); {limit}",
            p.substeps
        )
    } else if h > l.h_max {
        format!(
            "warning: substeps: {} (h = {h:.3e} s) is above the limit and runs only because sim.allow_unstable = true; {limit}",
            p.substeps
        )
    } else {
        format!(
            "substeps: {} (h = {h:.3e} s, {:.2} × the limit); {limit}",
            p.substeps,
            h / l.h_max
        )
    }
}

fn bench(args: BenchArgs) -> Result<()> {
    use strands::bench::{self, Environment, Planned, Report, Settings, Workload};
    if args.repeats == 0 || args.substeps == 0 {
        anyhow::bail!("--repeats and --substeps must be at least 1");
    }
    if !(args.min_time.is_finite() && args.min_time >= 0.0) {
        anyhow::bail!(
            "--min-time {}: must be a number of seconds, 0 or more",
            args.min_time
        );
    }
    let old = args
        .compare
        .as_deref()
        .map(bench::load_report)
        .transpose()?;
    let backends = if args.backends.is_empty() {
        vec![BackendKind::Cpu, BackendKind::Gpu]
    } else {
        args.backends.clone()
    };
    // Backends to time: `--backend gpu` alone times no CPU row, so the
    // largest sizes cost only their GPU runs.
    // The default (no --backend) times the CPU, and the GPU where
    // `backend::choose` would run it by default (as `strands run` does).
    // Forms name GPU rows: asking for them asks for the GPU, even a
    // software one, and contradicts `--backend cpu`.
    for (flag, given) in [
        ("--gpu-form", !args.gpu_forms.is_empty()),
        ("--gpu-stencil", !args.gpu_stencils.is_empty()),
        ("--gpu-pack-rows", !args.gpu_pack_rows.is_empty()),
        ("--gpu-splat", !args.gpu_splats.is_empty()),
    ] {
        if given && !backends.contains(&BackendKind::Gpu) {
            anyhow::bail!(
                "{flag} times the GPU, which --backend {} leaves out: add gpu to --backend",
                args.backends
                    .iter()
                    .map(|b| format!("{b:?}").to_lowercase())
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
    let (gpu, gpu_error) = if backends.contains(&BackendKind::Gpu) {
        let requested = (!args.backends.is_empty()
            || !args.gpu_forms.is_empty()
            || !args.gpu_stencils.is_empty()
            || !args.gpu_pack_rows.is_empty()
            || !args.gpu_splats.is_empty())
        .then_some(BackendKind::Gpu);
        let choice = strands::backend::choose(requested).map_err(gpu_hint)?;
        match choice.gpu {
            Some(ctx) => (Some(ctx), None),
            None => {
                let why = choice
                    .reason
                    .replace("request the GPU backend", "--backend cpu,gpu");
                eprintln!("GPU: not timed {why}; timing the CPU only");
                (None, Some(why))
            }
        }
    } else {
        (None, None)
    };
    let env = Environment {
        strands_version: env!("CARGO_PKG_VERSION").into(),
        build_profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
        .into(),
        cpu: bench::cpu_name(),
        cpu_threads: rayon::current_num_threads(),
        gpu: gpu.as_ref().map(|c| c.describe()),
        gpu_driver: gpu
            .as_ref()
            .map(|c| format!("{} {}", c.info.driver, c.info.driver_info)),
        gpu_error,
        gpu_copy_bandwidth: gpu.as_ref().map(strands::gpu::bandwidth::copy_bandwidth),
    };
    if env.build_profile == "debug" {
        eprintln!("warning: a debug build; figures are not representative (use --release)");
    }
    eprintln!(
        "bench: CPU {} ({} threads){}",
        env.cpu,
        env.cpu_threads,
        env.gpu
            .as_ref()
            .map(|g| format!("; GPU {g}"))
            .unwrap_or_default()
    );
    if let Some(c) = &env.gpu_copy_bandwidth {
        eprintln!(
            "bench: GPU copy bandwidth {:.1} GB/s read + write ({} buffer, {})",
            c.gb_per_s,
            bench::bytes(c.buffer_bytes),
            c.timing
        );
    }
    // Workloads, smallest first within each kind; a standard one is built
    // when its turn comes.
    let mut plan: Vec<Planned> = Vec::new();
    let mut sizes = args.strands.clone();
    sizes.sort_unstable();
    for kind in &args.workloads {
        for &n in &sizes {
            plan.push(Planned::standard(kind, n, args.vertices)?);
        }
    }
    for path in &args.scenes {
        plan.push(Planned::File(Box::new(Workload::from_file(path)?)));
    }
    let gpu_forms: Vec<Option<strands::gpu::Form>> = if args.gpu_forms.is_empty() {
        vec![None]
    } else {
        args.gpu_forms.iter().copied().map(Some).collect()
    };
    // The GPU with each bending-stencil precision asked for.
    let stencils: Vec<strands::gpu::GpuContext> = match &gpu {
        None => Vec::new(),
        Some(ctx) if args.gpu_stencils.is_empty() => vec![ctx.clone()],
        Some(ctx) => args
            .gpu_stencils
            .iter()
            .map(|&st| {
                ctx.with_stencil(st)
                    .map_err(|e| anyhow::anyhow!("--gpu-stencil {}: {e}", st.name()))
            })
            .collect::<Result<_>>()?,
    };
    let gpus = each_with(stencils, &args.gpu_pack_rows, |ctx, p| {
        ctx.with_pack_shape(p)
    });
    // The form a GPU row asked for as `form` runs (None: the default), and
    // whether it runs on packs.
    let form_of = |form: Option<strands::gpu::Form>, ctx: &strands::gpu::GpuContext| {
        form.unwrap_or_else(|| strands::gpu::GpuSimulator::default_form(ctx))
    };
    let uses_packs = |form: Option<strands::gpu::Form>, ctx: &strands::gpu::GpuContext| {
        form_of(form, ctx).packed()
    };
    if let Some(ctx) = gpus.first()
        && !args.gpu_pack_rows.is_empty()
        && !gpu_forms.iter().any(|&f| uses_packs(f, ctx))
    {
        anyhow::bail!(
            "--gpu-pack-rows sizes the packs of the packed, fused, fused-buffer and fused-frame forms, and none of the forms timed ({}) runs on packs: add one with --gpu-form",
            gpu_forms
                .iter()
                .map(|&f| form_of(f, ctx).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // How a GPU row on `ctx` in `form` is labelled: its packs' rows, where
    // asked for (`--gpu-pack-rows`; a walked form has no packs).
    let pack_rows_of = |form: Option<strands::gpu::Form>, ctx: &strands::gpu::GpuContext| {
        (!args.gpu_pack_rows.is_empty() && uses_packs(form, ctx)).then(|| ctx.pack_shape())
    };
    let gpu_splats: Vec<Option<strands::gpu::schedule::Splat>> = if args.gpu_splats.is_empty() {
        vec![None]
    } else {
        args.gpu_splats.iter().copied().map(Some).collect()
    };
    // Each workload on each backend, the GPU in each form, stencil
    // precision and pack shape asked for (the index into
    // `gpus`).
    let runs: Vec<(usize, BackendKind, Option<strands::gpu::Form>, usize)> = plan
        .iter()
        .enumerate()
        .flat_map(|(i, _)| {
            backends
                .iter()
                .filter(|b| **b == BackendKind::Cpu || gpu.is_some())
                .flat_map(|&b| match b {
                    BackendKind::Cpu => vec![(i, b, None, 0)],
                    BackendKind::Gpu => gpu_forms
                        .iter()
                        .flat_map(|&f| (0..gpus.len()).map(move |g| (i, b, f, g)))
                        // A walked form uses no packs: one row for it, in
                        // the first shape asked for.
                        .filter(|&(_, _, f, g)| {
                            uses_packs(f, &gpus[g])
                                || args
                                    .gpu_pack_rows
                                    .first()
                                    .is_none_or(|&p| gpus[g].pack_shape() == p)
                        })
                        .collect(),
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Each GPU row in each splat asked for.
    let runs: Vec<_> = runs
        .into_iter()
        .flat_map(|(i, b, f, g)| match b {
            BackendKind::Gpu => gpu_splats.iter().map(|&sp| (i, b, f, sp, g)).collect(),
            BackendKind::Cpu => vec![(i, b, f, None, g)],
        })
        .collect();
    let settings = Settings {
        gpu_form: gpu_forms[0],
        gpu_splat: gpu_splats[0],
        warmup: args.warmup,
        repeats: args.repeats,
        min_time_s: args.min_time,
        substeps: args.substeps,
        shares: !args.no_shares,
    };
    // The report is rewritten after every measurement, so a run that dies
    // (e.g. the GPU runs out of memory) keeps what it measured.
    let save = |results: &Vec<bench::Measurement>| -> Result<()> {
        let report = Report {
            environment: env.clone(),
            warmup: settings.warmup,
            repeats: settings.repeats,
            min_time_s: settings.min_time_s,
            shares: settings.shares,
            results: results.clone(),
        };
        let f = std::fs::File::create(&args.out)
            .with_context(|| format!("cannot create {}", args.out.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &report)
            .with_context(|| format!("cannot write {}", args.out.display()))
    };
    let total: u64 = runs.iter().map(|&(i, ..)| plan[i].frames(settings)).sum();
    let mut done = 0;
    // Frames timed beyond the plan (`--min-time`), added to the bar's length.
    let mut extra_frames = 0;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames, {elapsed} elapsed {msg}")
            .unwrap(),
    );
    let mut results = Vec::new();
    let mut too_big: Vec<(String, BackendKind)> = Vec::new();
    // The workload last built, kept for its other backend.
    let mut built: Option<(usize, Workload)> = None;
    // (workload, backend, form that ran) of every row.
    let mut measured = Vec::new();
    for (i, backend, gpu_form, gpu_splat, g) in runs {
        let settings = Settings {
            gpu_form,
            gpu_splat,
            ..settings
        };
        let p = &plan[i];
        let key = (p.name().to_string(), backend);
        let strands = p.strands();
        done += p.frames(settings);
        if too_big.contains(&key) {
            bar.set_position(done + extra_frames);
            continue;
        }
        let on = match gpu_form {
            Some(f) => format!("{backend:?} ({f})"),
            None => format!("{backend:?}"),
        };
        let on = if backend == BackendKind::Gpu && !args.gpu_stencils.is_empty() {
            format!("{on}, stencil in {}", gpus[g].stencil().name())
        } else {
            on
        };
        let on_gpu = backend == BackendKind::Gpu;
        let pack_shape = on_gpu.then(|| pack_rows_of(gpu_form, &gpus[g])).flatten();
        let resident = on_gpu && form_of(gpu_form, &gpus[g]).resident();
        let on = match pack_shape {
            Some(p) if resident && p.state_resident() => {
                format!("{on}, {}-row packs, state resident", p.rows())
            }
            Some(p) => format!("{on}, {}-row packs", p.rows()),
            None => on,
        };
        let on = match gpu_splat {
            Some(sp) => format!("{on}, {sp} splat"),
            None => on,
        };
        bar.set_message(format!("{} {strands} strands on {on}", p.name()));
        if built.as_ref().is_none_or(|(j, _)| *j != i) {
            // Free the last scene before building the next.
            drop(built.take());
            built = Some((i, p.workload()?));
        }
        let w = &built.as_ref().unwrap().1;
        let mut m = bench::measure(w, backend, gpus.get(g), settings, &mut |extra| {
            // A frame beyond the plan, timed to make up --min-time.
            if extra {
                bar.inc_length(1);
                extra_frames += 1;
            }
            bar.inc(1)
        });
        m.gpu_pack_rows = pack_shape.map(|p| p.rows() as u32);
        m.compare_with_copy(env.gpu_copy_bandwidth.as_ref());
        bar.set_position(done + extra_frames);
        // Two forms asked for can run as one (a fused form with Jacobi
        // runs its staged twin): one row for it.
        let row = (
            i,
            backend,
            m.gpu_form.clone(),
            m.gpu_stencil.clone(),
            m.gpu_pack_rows,
            m.gpu_pack_state,
            m.gpu_splat.clone(),
        );
        if m.error.is_none() && measured.contains(&row) {
            // `suspend`, not `println`, which prints nothing where the bar
            // is hidden (stderr not a terminal).
            bar.suspend(|| {
                eprintln!(
                    "{} on {on}: runs as {}, already measured; one row for it",
                    w.name,
                    m.gpu_form.as_deref().unwrap_or("?")
                )
            });
            continue;
        }
        measured.push(row);
        if let Some(e) = &m.error {
            bar.suspend(|| eprintln!("{} {strands} strands on {backend:?}: {e}", w.name));
            if m.out_of_capacity {
                too_big.push(key);
            }
        }
        results.push(m);
        save(&results)?;
    }
    bar.finish_and_clear();
    if args.grow {
        // With the first stencil precision and pack shape asked for.
        let Some(ctx) = gpus.first() else {
            anyhow::bail!("--grow needs a GPU adapter");
        };
        let largest = sizes.last().copied().unwrap_or(1000);
        let kinds_and_forms = args
            .workloads
            .iter()
            .flat_map(|kind| gpu_forms.iter().map(move |&form| (kind, form)));
        for (kind, gpu_form) in kinds_and_forms {
            let settings = Settings {
                gpu_form,
                ..settings
            };
            let label = match gpu_form {
                Some(form) => format!("{kind} ({form})"),
                None => kind.to_string(),
            };
            let mut n = largest * 2;
            loop {
                // Building the scene on the host takes ~400 B per vertex.
                let need = (n * args.vertices) as u64 * 400;
                if let Some(avail) = bench::available_memory()
                    && need > avail / 2
                {
                    eprintln!(
                        "{label}: stopping before {n} strands: the host would need {} of {} available",
                        bench::bytes(need),
                        bench::bytes(avail)
                    );
                    break;
                }
                eprintln!("{label}: {n} strands on the GPU…");
                let w = Workload::standard(kind, n, args.vertices)?;
                let mut m = bench::measure(&w, BackendKind::Gpu, Some(ctx), settings, &mut |_| {});
                m.gpu_pack_rows = pack_rows_of(gpu_form, ctx).map(|p| p.rows() as u32);
                m.compare_with_copy(env.gpu_copy_bandwidth.as_ref());
                let stop = if m.out_of_capacity {
                    Some(format!(
                        "the device cannot hold it: {}",
                        m.error.clone().unwrap_or_default()
                    ))
                } else if let Some(e) = &m.error {
                    Some(e.clone())
                } else if m.ms_per_step.is_some_and(|s| s.median > 1000.0) {
                    Some("a step takes over a second".into())
                } else {
                    None
                };
                results.push(m);
                save(&results)?;
                if let Some(why) = stop {
                    eprintln!("{label}: stopping at {n} strands: {why}");
                    break;
                }
                n *= 2;
            }
        }
    }
    save(&results)?;
    let report = Report {
        environment: env,
        warmup: settings.warmup,
        repeats: settings.repeats,
        min_time_s: settings.min_time_s,
        shares: settings.shares,
        results,
    };
    print!("{}", bench::table(&report.results));
    if !report.shares {
        println!("contact, grid: not measured (--no-shares)");
    }
    if report
        .results
        .iter()
        .any(|m| m.model_bytes_per_vertex_step.is_some())
    {
        print!("{}", bench::bandwidth_note(&report.environment));
    }
    print!("{}", bench::traffic_by_buffer(&report.results));
    print!("{}", bench::profiles(&report.results));
    print!("{}", bench::compile_times(&report.results));
    if let Some(old) = &old {
        println!();
        print!("{}", bench::compare(old, &report));
    }
    bench::plot(&report.results, &args.plot)
        .with_context(|| format!("cannot draw {}", args.plot.display()))?;
    eprintln!("wrote {} and {}", args.out.display(), args.plot.display());
    Ok(())
}

fn demo(args: DemoArgs) -> Result<()> {
    use strands::demo::{self, screenshot};
    let (scenes, start) = match &args.scene {
        Some(path) => {
            if args.start.is_some() {
                anyhow::bail!(
                    "--start picks a built-in scene; it cannot be used with a scene file"
                );
            }
            (vec![demo::scene_file(path, &args.set)?], 0)
        }
        None => {
            if !args.set.is_empty() {
                anyhow::bail!("--set needs a scene file");
            }
            let scenes = demo::builtin_scenes()?;
            let name = args.start.as_deref().unwrap_or("hair");
            let start = scenes
                .iter()
                .position(|s| s.name == name)
                .with_context(|| {
                    format!("--start {name}: the built-in scenes are hair, curly and grass")
                })?;
            (scenes, start)
        }
    };
    let Some(path) = &args.screenshot else {
        if args.head_offset.is_some()
            || args.head_turn != 0.0
            || args.frames.is_some()
            || args.size.is_some()
        {
            anyhow::bail!(
                "--frames, --size, --head-offset and --head-turn apply to --screenshot; in the window use the keys"
            );
        }
        return demo::window::run(scenes, start, args.exit_after_frames, args.exercise_window);
    };
    if args.exit_after_frames.is_some() || args.exercise_window {
        anyhow::bail!(
            "--exit-after-frames and --exercise-window apply to the window, not to --screenshot"
        );
    }
    let frames = args.frames.unwrap_or(60);
    let size_arg = args.size.as_deref().unwrap_or("960x540");
    let size = size_arg
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .filter(|&(w, h)| (1..=8192).contains(&w) && (1..=8192).contains(&h))
        .with_context(|| format!("--size {size_arg}: expected WIDTHxHEIGHT, e.g. 960x540"))?;
    let offset = match args.head_offset.as_deref() {
        None => glam::DVec3::ZERO,
        Some(&[x, y, z]) => glam::DVec3::new(x, y, z),
        Some(v) => anyhow::bail!("--head-offset needs 3 numbers X,Y,Z (m), got {}", v.len()),
    };
    let ctx = GpuContext::headless()?;
    eprintln!("demo: GPU {}", ctx.describe());
    let shot = screenshot::Shot {
        frames,
        size,
        head_offset: offset,
        head_turn: args.head_turn.to_radians(),
    };
    screenshot::write(&ctx, &scenes[start], &shot, path)?;
    eprintln!(
        "wrote {} ({}x{}) after {} steps",
        path.display(),
        size.0,
        size.1,
        frames
    );
    Ok(())
}
