//! The `strands` command line.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use strands::backend::{BackendKind, Simulator};
use strands::build::build;
use strands::cpu::stable_step_estimate;
use strands::gpu::GpuContext;
use strands::output::{RunResult, StepDiagnostics, final_rods, frame};
use strands::scene::Scene;

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
        /// Override a scene value, e.g. `--set sim.dt=1e-4` or `--set rods.0.segments=40`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Simulator to run (default: gpu when a GPU adapter exists, else cpu).
        #[arg(long, value_enum)]
        backend: Option<BackendKind>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            scene,
            steps,
            out,
            every,
            set,
            backend,
        } => run(scene, steps, out, every.unwrap_or(0), &set, backend),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(
    path: PathBuf,
    steps: Option<u64>,
    out: Option<PathBuf>,
    every: u64,
    set: &[String],
    backend: Option<BackendKind>,
) -> Result<()> {
    let scene = Scene::load(&path, set)?;
    let steps = steps.unwrap_or(scene.steps);
    let (rods, state) = build(&scene.rods, scene.anchors);
    let h = scene.params.h();
    let risky: Vec<usize> = (0..rods.rod_count())
        .filter(|&r| h > stable_step_estimate(&rods, r))
        .collect();
    if let Some(&r) = risky.first() {
        eprintln!(
            "warning: {} rod(s) have a substep h = {h:.3e} s above the explicit stability estimate (e.g. {}: {:.3e} s); the run may blow up. Lower sim.dt or raise sim.substeps.",
            risky.len(),
            rods.names[r],
            stable_step_estimate(&rods, r)
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
    let (mut sim, adapter) = match backend {
        Some(BackendKind::Cpu) => {
            eprintln!("backend: {}; {summary}", cpu_line());
            (Simulator::cpu(rods, state, params), None)
        }
        Some(BackendKind::Gpu) => {
            let ctx = GpuContext::headless()?;
            eprintln!("backend: gpu on {} (f32); {summary}", ctx.describe());
            let sim = Simulator::gpu(&ctx, rods, state, params)?;
            (sim, Some(ctx.describe()))
        }
        None => match GpuContext::headless() {
            Ok(ctx) => {
                eprintln!(
                    "backend: gpu on {} (f32; --backend cpu for the f64 reference); {summary}",
                    ctx.describe()
                );
                let sim = Simulator::gpu(&ctx, rods, state, params)?;
                (sim, Some(ctx.describe()))
            }
            Err(e) => {
                eprintln!("backend: {} because {e}; {summary}", cpu_line());
                (Simulator::cpu(rods, state, params), None)
            }
        },
    };
    let mut diagnostics = vec![StepDiagnostics::new(0, sim.diagnostics())];
    let mut frames = Vec::new();
    if every > 0 {
        frames.push(frame(&sim));
    }
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {elapsed} elapsed, {eta} left")
            .unwrap(),
    );
    let start = Instant::now();
    for _ in 0..steps {
        let d = sim.step()?;
        diagnostics.push(StepDiagnostics::new(sim.step_count(), d));
        if every > 0 && sim.step_count().is_multiple_of(every) {
            frames.push(frame(&sim));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    let result = RunResult {
        scene: path.display().to_string(),
        backend: sim.kind(),
        adapter,
        dt: params.dt,
        substeps: params.substeps,
        steps,
        every,
        time: sim.state().time,
        rods: final_rods(&sim),
        frames,
        diagnostics,
    };
    let vertex_steps = sim.rods().vertex_count() as f64 * steps as f64 * params.substeps as f64;
    match &out {
        Some(file) => {
            let f = std::fs::File::create(file)
                .with_context(|| format!("cannot create {}", file.display()))?;
            let mut w = std::io::BufWriter::new(f);
            serde_json::to_writer(&mut w, &result)?;
            w.flush()
                .with_context(|| format!("cannot write {}", file.display()))?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            serde_json::to_writer(&mut w, &result)?;
            writeln!(w)?;
        }
    }
    eprintln!(
        "done: t = {:.4} s in {wall:.2} s wall ({:.3e} vertex-substeps/s){}",
        sim.state().time,
        vertex_steps / wall.max(1e-9),
        out.map(|f| format!("; wrote {}", f.display()))
            .unwrap_or_default()
    );
    Ok(())
}
