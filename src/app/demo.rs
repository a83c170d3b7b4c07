//! `strands demo`: the live window, or a screenshot of a scene.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::gpu::GpuContext;

#[derive(clap::Args, Debug)]
/// The arguments of `strands demo`.
pub struct DemoArgs {
    /// A scene file to show (default: the built-in hair, curly hair and grass;
    /// Tab switches between them).
    pub scene: Option<PathBuf>,
    /// Built-in scene to start with: hair (default), curly or grass.
    #[arg(long)]
    pub start: Option<String>,
    /// Override a value of the scene file (as `strands run --set`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Render offscreen after --frames simulation steps and write this PNG;
    /// no window is opened.
    #[arg(long, value_name = "FILE.png")]
    pub screenshot: Option<PathBuf>,
    /// Simulation steps before the screenshot (default 60).
    #[arg(long)]
    pub frames: Option<u32>,
    /// Screenshot size in pixels, WIDTHxHEIGHT (default 960x540).
    #[arg(long)]
    pub size: Option<String>,
    /// Screenshot: move the head by X,Y,Z metres during the frames.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "X,Y,Z",
        allow_negative_numbers = true
    )]
    pub head_offset: Option<Vec<f64>>,
    /// Screenshot: turn the head by this many degrees about the vertical.
    #[arg(long, default_value_t = 0.0, value_name = "DEGREES")]
    pub head_turn: f64,
    /// Window: close after this many frames (for tests).
    #[arg(long, value_name = "N")]
    pub exit_after_frames: Option<u64>,
    /// Window: resize (down to 1×1), minimise and restore the window while
    /// running, as a user might (for tests).
    #[arg(long)]
    pub exercise_window: bool,
}

/// `strands demo`: the window, or one screenshot.
pub fn demo(args: DemoArgs) -> Result<()> {
    use crate::demo::{self, screenshot};
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
