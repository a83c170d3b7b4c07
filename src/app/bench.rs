//! `strands bench`: the standard workloads and scene files timed on each
//! backend asked for, the GPU with each bending-stencil precision and splat
//! asked for; a table on standard output, every figure as JSON, a plot as
//! SVG (the measurement itself is `crate::bench`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::backend::BackendKind;
use crate::bench::{self, Environment, Measurement, Planned, Report, Settings, Workload};
use crate::gpu::GpuContext;
use crate::gpu::schedule::Splat;
use crate::model::params::Integrator;

/// An integrator by its scene name.
fn parse_integrator(s: &str) -> std::result::Result<Integrator, String> {
    Integrator::ALL
        .iter()
        .find(|(_, name)| *name == s)
        .map(|(i, _)| *i)
        .ok_or_else(|| {
            let names: Vec<&str> = Integrator::ALL.iter().map(|(_, n)| *n).collect();
            format!("unknown integrator {s:?}: use {}", names.join(", "))
        })
}

/// The arguments of `strands bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Standard workloads to run (hair, grass; hair-nogrid: the hair
    /// without hair–hair interaction; hair-rodcontact: the hair with rod–rod
    /// contact among all its strands, CPU and symplectic only).
    #[arg(long = "workload", value_delimiter = ',', default_value = "hair,grass")]
    pub workloads: Vec<String>,
    /// Strand counts of the standard workloads.
    #[arg(long, value_delimiter = ',', default_value = "1000,4000,16000,32000")]
    pub strands: Vec<usize>,
    /// Vertices per strand of the standard workloads (16–64 is typical).
    #[arg(long, default_value_t = 32)]
    pub vertices: usize,
    /// Integrators to time each workload with (symplectic, backward-euler,
    /// implicit-midpoint, static; `sim.integrator`), each a row: the
    /// symplectic within its step limit, --substeps a frame, an implicit
    /// one a step of 1/60 s a frame; the column "ms/(1/60 s)" compares
    /// them. Default: symplectic and backward-euler for the standard
    /// workloads, a scene file's own. The GPU runs the symplectic only and
    /// reports the others refused.
    #[arg(long = "integrator", value_delimiter = ',', value_parser = parse_integrator)]
    pub integrators: Vec<Integrator>,
    /// Also time these scene files, as they are.
    #[arg(long = "scene")]
    pub scenes: Vec<PathBuf>,
    /// Backends to time (default: the CPU, and the GPU where `strands run`
    /// would choose it, a hardware adapter; with a --gpu-* flag, any
    /// adapter).
    #[arg(long = "backend", value_enum, value_delimiter = ',')]
    pub backends: Vec<BackendKind>,
    /// GPU bending-stencil precisions to time, each a row (f64, f32;
    /// docs/GPU.md, "Precision"); default: the device's (f64 where it has
    /// f64 in shaders). Asks for the GPU, even a software adapter.
    #[arg(
        long = "gpu-stencil",
        value_enum,
        value_delimiter = ',',
        value_name = "PRECISION"
    )]
    pub gpu_stencils: Vec<crate::gpu::Stencil>,
    /// GPU splats onto the hair–hair grid to time, each a row with each
    /// precision: own (the schedule's own: in the walked first half with
    /// 64-bit atomics the walked window, one atomic add per node and run of
    /// a rod's vertices in a cell; else an add per vertex and node), sorted
    /// (the vertices sorted by cell first, then each run of 16 sorted
    /// vertices walked by one invocation, so that a cell's sums reach its
    /// nodes once a run; docs/GPU.md), or sorted:RUN (runs of RUN slots, 1
    /// to 1024); default sorted:32 on a GPU where the scene has the grid,
    /// else own. The same results either way; changes only scenes with
    /// hair–hair interaction. Asks for the GPU like --gpu-stencil.
    #[arg(long = "gpu-splat", value_delimiter = ',', value_name = "SPLAT")]
    pub gpu_splats: Vec<Splat>,
    /// Frames run before timing.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Timed frames, at least; the figures are the median, min and max over them.
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// Time frames past --repeats until the timed frames add up to this many
    /// seconds of wall time (0: exactly --repeats), so that a slow spell of
    /// a shared machine moves a few frames, not the median.
    #[arg(long = "min-time", default_value_t = 1.0, value_name = "SECONDS")]
    pub min_time: f64,
    /// Time each row once: not again without its colliders and without
    /// hair–hair interaction, so the contact and grid columns stay empty
    /// (up to three times fewer frames, for experiments that compare whole
    /// rows).
    #[arg(long = "no-shares")]
    pub no_shares: bool,
    /// Integrator steps per frame (one GPU submission).
    #[arg(long, default_value_t = 10)]
    pub substeps: u32,
    /// Write every figure here as JSON.
    #[arg(long, default_value = "bench.json")]
    pub out: PathBuf,
    /// Write the plot of cost per step against vertex count here (SVG).
    #[arg(long, default_value = "bench.svg")]
    pub plot: PathBuf,
    /// Print the speed-up against an earlier report.
    #[arg(long, value_name = "OLD.json")]
    pub compare: Option<PathBuf>,
    /// After the listed sizes, keep doubling the strand count on the GPU
    /// until the device cannot hold it, host memory runs short, or a step
    /// takes over a second.
    #[arg(long)]
    pub grow: bool,
}

/// One row to time: a workload of the plan on a backend, on the GPU with
/// one of the contexts (a stencil precision) and a splat.
#[derive(Clone, Copy)]
struct Row {
    workload: usize,
    backend: BackendKind,
    gpu: usize,
    splat: Option<Splat>,
}

/// `strands bench`: time every row, rewriting the JSON report after each
/// (a run that dies keeps what it measured), then print the table and the
/// notes and draw the plot. Returns the report.
pub fn bench(args: BenchArgs) -> Result<Report> {
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
    // A GPU flag names GPU rows: it asks for the GPU, even a software one,
    // and contradicts `--backend cpu`.
    let gpu_flags = [
        ("--gpu-stencil", !args.gpu_stencils.is_empty()),
        ("--gpu-splat", !args.gpu_splats.is_empty()),
    ];
    for (flag, given) in gpu_flags {
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
    // The default (no --backend) times the CPU, and the GPU where
    // `backend::choose` would run it by default (as `strands run` does).
    let (gpu, gpu_error) = if backends.contains(&BackendKind::Gpu) {
        let requested = (!args.backends.is_empty() || gpu_flags.iter().any(|(_, given)| *given))
            .then_some(BackendKind::Gpu);
        let choice = crate::backend::choose(requested).map_err(super::run::gpu_hint)?;
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
        gpu_copy_bandwidth: gpu.as_ref().map(crate::gpu::bandwidth::copy_bandwidth),
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
    let integrators = if args.integrators.is_empty() {
        vec![Integrator::Symplectic, Integrator::BackwardEuler]
    } else {
        args.integrators.clone()
    };
    // Rod–rod contact runs with the symplectic integrator only (a scene
    // asking for both is refused): such a workload's implicit rows are left
    // out, with a note.
    let mut left_out: Vec<String> = Vec::new();
    let mut add = |p: Planned, plan: &mut Vec<Planned>| {
        if p.rod_contact() && p.integrator().is_implicit() {
            left_out.push(format!("{} × {}", p.name(), p.integrator().name()));
        } else {
            plan.push(p);
        }
    };
    for kind in &args.workloads {
        for &integrator in &integrators {
            for &n in &sizes {
                add(
                    Planned::standard(kind, n, args.vertices, integrator)?,
                    &mut plan,
                );
            }
        }
    }
    for path in &args.scenes {
        let w = Workload::from_file(path)?;
        if args.integrators.is_empty() {
            plan.push(Planned::File(Box::new(w)));
            continue;
        }
        for &integrator in &args.integrators {
            let w = w.clone().with_integrator(integrator);
            add(Planned::File(Box::new(w)), &mut plan);
        }
    }
    left_out.dedup();
    if !left_out.is_empty() {
        eprintln!(
            "not timed: {} (rod–rod contact runs with the symplectic integrator only)",
            left_out.join(", ")
        );
    }
    // The GPU with each bending-stencil precision asked for.
    let gpus: Vec<GpuContext> = match &gpu {
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
    let splats: Vec<Option<Splat>> = if args.gpu_splats.is_empty() {
        vec![None]
    } else {
        args.gpu_splats.iter().copied().map(Some).collect()
    };
    // Each workload on each backend, the GPU with each precision and splat.
    let mut rows = Vec::new();
    for (workload, planned) in plan.iter().enumerate() {
        for &backend in &backends {
            match backend {
                BackendKind::Cpu => rows.push(Row {
                    workload,
                    backend,
                    gpu: 0,
                    splat: None,
                }),
                // The kernels step the symplectic integrator only (the
                // note below says so).
                BackendKind::Gpu if planned.integrator().is_implicit() || planned.rod_contact() => {
                }
                BackendKind::Gpu => {
                    for gpu in 0..gpus.len() {
                        for &splat in &splats {
                            rows.push(Row {
                                workload,
                                backend,
                                gpu,
                                splat,
                            });
                        }
                    }
                }
            }
        }
    }
    let implicit: Vec<&str> = Integrator::ALL
        .iter()
        .filter(|(i, _)| i.is_implicit() && plan.iter().any(|p| p.integrator() == *i))
        .map(|(_, name)| *name)
        .collect();
    if !gpus.is_empty() && !implicit.is_empty() {
        eprintln!(
            "GPU: sim.integrator = {} not timed: the GPU kernels step the symplectic integrator only",
            implicit.join(", ")
        );
    }
    let contact: Vec<&str> = plan
        .iter()
        .filter(|p| p.rod_contact())
        .map(|p| p.name())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !gpus.is_empty() && !contact.is_empty() {
        eprintln!(
            "GPU: {} not timed: the GPU kernels have no rod–rod contact",
            contact.join(", ")
        );
    }
    let settings = Settings {
        gpu_splat: None,
        warmup: args.warmup,
        repeats: args.repeats,
        min_time_s: args.min_time,
        substeps: args.substeps,
        shares: !args.no_shares,
    };
    let report_of = |results: &[Measurement], env: &Environment| Report {
        environment: env.clone(),
        warmup: settings.warmup,
        repeats: settings.repeats,
        min_time_s: settings.min_time_s,
        shares: settings.shares,
        results: results.to_vec(),
    };
    let save = |results: &[Measurement]| -> Result<()> {
        let f = std::fs::File::create(&args.out)
            .with_context(|| format!("cannot create {}", args.out.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &report_of(results, &env))
            .with_context(|| format!("cannot write {}", args.out.display()))
    };
    let total: u64 = rows.iter().map(|r| plan[r.workload].frames(settings)).sum();
    let mut done = 0;
    // Frames timed beyond the plan (`--min-time`), added to the bar's length.
    let mut extra_frames = 0;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames, {elapsed} elapsed {msg}")
            .unwrap(),
    );
    let mut results: Vec<Measurement> = Vec::new();
    let mut too_big: Vec<(String, BackendKind)> = Vec::new();
    // The workload last built, kept for its other rows.
    let mut built: Option<(usize, Workload)> = None;
    for row in rows {
        let settings = Settings {
            gpu_splat: row.splat,
            ..settings
        };
        let p = &plan[row.workload];
        let key = (p.name().to_string(), row.backend);
        let strands = p.strands();
        done += p.frames(settings);
        if too_big.contains(&key) {
            bar.set_position(done + extra_frames);
            continue;
        }
        let mut on = format!("{:?}", row.backend);
        if row.backend == BackendKind::Gpu {
            if !args.gpu_stencils.is_empty() {
                on = format!("{on}, stencil in {}", gpus[row.gpu].stencil().name());
            }
            if let Some(sp) = row.splat {
                on = format!("{on}, {sp} splat");
            }
        }
        bar.set_message(format!(
            "{} {strands} strands ({}) on {on}",
            p.name(),
            p.integrator().name()
        ));
        if built.as_ref().is_none_or(|(j, _)| *j != row.workload) {
            // Free the last scene before building the next.
            drop(built.take());
            built = Some((row.workload, p.workload()?));
        }
        let w = &built.as_ref().unwrap().1;
        let mut m = bench::measure(w, row.backend, gpus.get(row.gpu), settings, &mut |extra| {
            // A frame beyond the plan, timed to make up --min-time.
            if extra {
                bar.inc_length(1);
                extra_frames += 1;
            }
            bar.inc(1)
        });
        m.compare_with_copy(env.gpu_copy_bandwidth.as_ref());
        bar.set_position(done + extra_frames);
        if let Some(e) = &m.error {
            bar.suspend(|| eprintln!("{} {strands} strands on {on}: {e}", w.name));
            if m.out_of_capacity {
                too_big.push(key);
            }
        }
        results.push(m);
        save(&results)?;
    }
    bar.finish_and_clear();
    if args.grow {
        grow(
            &args,
            &sizes,
            gpus.first(),
            settings,
            &env,
            &mut results,
            &save,
        )?;
    }
    save(&results)?;
    let report = report_of(&results, &env);
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
    Ok(report)
}

/// `--grow`: after the listed sizes, each workload kind on the GPU `ctx`
/// (the first precision asked for) at twice the largest strand count,
/// doubling until the device cannot hold it, host memory runs short, a row
/// fails or a step takes over a second.
fn grow(
    args: &BenchArgs,
    sizes: &[usize],
    ctx: Option<&GpuContext>,
    settings: Settings,
    env: &Environment,
    results: &mut Vec<Measurement>,
    save: &dyn Fn(&[Measurement]) -> Result<()>,
) -> Result<()> {
    let Some(ctx) = ctx else {
        anyhow::bail!("--grow needs a GPU adapter");
    };
    let settings = Settings {
        gpu_splat: args.gpu_splats.first().copied(),
        ..settings
    };
    let largest = sizes.last().copied().unwrap_or(1000);
    for kind in &args.workloads {
        let mut n = largest * 2;
        loop {
            // Building the scene on the host takes ~400 B per vertex.
            let need = (n * args.vertices) as u64 * 400;
            if let Some(avail) = bench::available_memory()
                && need > avail / 2
            {
                eprintln!(
                    "{kind}: stopping before {n} strands: the host would need {} of {} available",
                    bench::bytes(need),
                    bench::bytes(avail)
                );
                break;
            }
            eprintln!("{kind}: {n} strands on the GPU…");
            let w = Workload::standard(kind, n, args.vertices)?;
            let mut m = bench::measure(&w, BackendKind::Gpu, Some(ctx), settings, &mut |_| {});
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
            save(results)?;
            if let Some(why) = stop {
                eprintln!("{kind}: stopping at {n} strands: {why}");
                break;
            }
            n *= 2;
        }
    }
    Ok(())
}
