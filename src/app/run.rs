//! `strands run`: a scene simulated headless to a JSON result (and USD
//! curves), as the command line runs it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::backend::{BackendKind, Simulator};
use crate::output::{OutFile, RunResult, StepDiagnostics, frame, rods_of};
use crate::scene::limits::check_run;
use crate::scene::{Scene, SceneError};

/// The arguments of `strands run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Scene file (TOML; see docs/SCENES.md).
    pub scene: PathBuf,
    /// Steps of sim.dt to take (default: sim.steps from the scene).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Write the JSON result here (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also store every K-th step's positions and twist angles.
    #[arg(long, value_name = "K")]
    pub every: Option<u64>,
    /// Also write the strands as USD BasisCurves with a time sample per
    /// stored frame (every step without --every); without --out, no JSON.
    #[arg(long, value_name = "FILE.usda")]
    pub usd: Option<PathBuf>,
    /// Override a scene value, e.g. `--set sim.dt=1e-4` or `--set rods.0.segments=40`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Simulator to run (default: gpu on a hardware GPU adapter, else cpu,
    /// with a line saying why).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// GPU: the bending stencil's precision (default: f64 where the
    /// device has f64 in shaders, else f32; docs/GPU.md, "Precision").
    #[arg(long = "gpu-stencil", value_enum, value_name = "PRECISION")]
    pub gpu_stencil: Option<crate::gpu::Stencil>,
    /// Refuse runs larger than this many vertex-substeps (vertices ×
    /// substeps × steps); a guard against runs that would not end.
    #[arg(long, value_name = "N", default_value_t = crate::scene::limits::DEFAULT_MAX_WORK)]
    pub max_work: f64,
}

/// Set by the first Ctrl-C: `strands run` stops after the step under way
/// and writes what it simulated. A second Ctrl-C exits at once.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The temporary result file being written, removed by a second Ctrl-C.
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A run stopped by Ctrl-C (exit status 130).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);

/// A GPU error in the command line's words: where the library points to
/// the CPU reference, say which flag selects it.
pub(crate) fn gpu_hint(e: crate::gpu::GpuError) -> anyhow::Error {
    let text = e.to_string();
    if text.contains("CPU reference") {
        anyhow::anyhow!("{text} (`--backend cpu`)")
    } else {
        e.into()
    }
}

/// Ready this run for Ctrl-C: no interruption yet, no partial file; the
/// handler is installed once a process (a second `run` in the same process
/// reuses it).
fn catch_ctrl_c() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INTERRUPTED.store(false, Ordering::SeqCst);
    if let Ok(mut p) = PARTIAL.lock() {
        p.clear();
    }
    INSTALL.call_once(install_ctrl_c);
}

fn install_ctrl_c() {
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

/// `strands run`: load the scene, check the run's size, simulate it on the
/// backend chosen (saying which and why), and write the JSON result and
/// the USD curves asked for; Ctrl-C stops after the step under way and
/// writes what was simulated (`Interrupted`).
pub fn run(args: RunArgs) -> Result<()> {
    let RunArgs {
        scene: path,
        steps,
        out,
        every,
        usd,
        set,
        backend,
        gpu_stencil,
        max_work,
    } = args;
    let every = every.unwrap_or(0);
    let set = &set[..];
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
    if let Some((n, r, depth)) = crate::cpu::starting_inside(&rods, &state) {
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
    let gpu_note = |stencil_f64: bool| {
        if let Some(n) = crate::gpu::precision_note(&rods, &params, stencil_f64) {
            eprintln!("{n}");
        }
    };
    let cpu_only = if params.integrator.is_implicit() {
        Some(format!("sim.integrator = \"{}\"", params.integrator.name()))
    } else if rods.rod_contact.is_active() {
        Some("[rod_contact]".to_string())
    } else {
        None
    };
    let choice = if let (None, Some(what)) = (backend, &cpu_only) {
        crate::backend::Choice {
            kind: BackendKind::Cpu,
            gpu: None,
            reason: format!("because {what} runs on the CPU reference only"),
        }
    } else {
        crate::backend::choose(backend)
            .map_err(gpu_hint)
            .with_context(|| path.display().to_string())?
    };
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
                    " but the bending stencil and planes' depth"
                } else {
                    ""
                },
                if backend.is_none() {
                    "; --backend cpu for the f64 reference"
                } else {
                    ""
                }
            );
            gpu_note(ctx.stencil_f64());
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
        let info = crate::groom::usd::StageInfo {
            time_codes_per_second: tcps,
            up_axis: "Y",
        };
        let mut w = crate::groom::usd::UsdWriter::for_rods(sim.rods(), info);
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
    let mut before: Option<crate::model::rods::State> = None;
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
        schema: crate::output::SCHEMA,
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
fn substeps_line(rods: &crate::model::rods::RodSet, p: &crate::model::params::SimParams) -> String {
    use crate::model::stability::{SAFETY, step_limit};
    let h = p.h();
    if p.integrator.is_implicit() {
        let chosen = if p.auto_substeps {
            "\"auto\" chose "
        } else {
            ""
        };
        return format!(
            "substeps: {chosen}{} per step (h = {h:.3e} s); sim.integrator = \"{}\" has no step limit",
            p.substeps,
            p.integrator.name()
        );
    }
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
