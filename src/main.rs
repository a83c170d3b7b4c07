//! The `strands` command line: parses the arguments and runs the command
//! (`strands::app`).

use clap::{Parser, Subcommand};

use strands::app::bench::BenchArgs;
use strands::app::demo::DemoArgs;
use strands::app::run::{Interrupted, RunArgs};

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
    Run(RunArgs),
    /// Measure the cost per step of standard workloads and scene files on
    /// both backends; print a table, write JSON and an SVG plot.
    Bench(Box<BenchArgs>),
    /// Show the GPU simulation live in a window (or write one image with
    /// --screenshot). Keys are listed in the window title and README.md.
    Demo(DemoArgs),
}

/// Mesa's Vulkan device-selection layer (loaded with lavapipe and Mesa's
/// GPU drivers) connects to a Wayland display to find the one a window
/// would use, and libwayland prints `error: XDG_RUNTIME_DIR is invalid or
/// not set in the environment.` for each probe where the process has no
/// runtime directory: on a headless machine, two such lines before a run
/// that succeeds. Without a runtime directory and a Wayland display there
/// is no Wayland display for the layer to choose by, so it is switched off
/// (`NODEVICE_SELECT=1`, its own switch) there, unless the user set it or
/// asked the layer for a device (`MESA_VK_DEVICE_SELECT`,
/// `MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE`, `DRI_PRIME`). Its order of
/// the devices is then the loader's; the simulator picks its adapter by
/// type and power preference either way (`GpuContext::headless`). Nothing
/// that the simulator or the driver reports is hidden.
fn quiet_device_select_probe() {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|d| !d.is_empty() && std::path::Path::new(&d).is_dir());
    if !runtime_dir
        && !set("WAYLAND_DISPLAY")
        && !set("NODEVICE_SELECT")
        && !set("MESA_VK_DEVICE_SELECT")
        && !set("MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE")
        && !set("DRI_PRIME")
    {
        // SAFETY: the first statement of `main`, before any thread starts.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

fn main() {
    quiet_device_select_probe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => strands::app::run::run(args),
        Command::Bench(args) => strands::app::bench::bench(*args).map(|_| ()),
        Command::Demo(args) => strands::app::demo::demo(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        // 128 + SIGINT, as a shell reports a run stopped by Ctrl-C.
        let code = if e.is::<Interrupted>() { 130 } else { 1 };
        std::process::exit(code);
    }
}
