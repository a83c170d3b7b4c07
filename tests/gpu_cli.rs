//! `strands run --backend`: the GPU path end to end, the CPU fallback when
//! there is no adapter, and the error that says how to get one.

use std::process::{Command, Output};

fn strands() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strands"))
}

fn twist(backend: Option<&str>, env: Option<(&str, &str)>) -> (Output, Option<serde_json::Value>) {
    let dir = std::env::temp_dir().join(format!("strands-gpu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!(
        "{}-{}.json",
        backend.unwrap_or("auto"),
        env.is_some()
    ));
    let _ = std::fs::remove_file(&out);
    let mut cmd = strands();
    cmd.args([
        "run",
        concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/twist.toml"),
        "--steps",
        "100",
        "--out",
    ])
    .arg(&out);
    if let Some(b) = backend {
        cmd.args(["--backend", b]);
    }
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let output = cmd.output().unwrap();
    let json = std::fs::read(&out)
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap());
    (output, json)
}

fn theta(v: &serde_json::Value) -> Vec<f64> {
    v["rods"][0]["theta"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect()
}

/// The twist scene on the GPU: the end clamp has turned 2.5 turns, so
/// θⁿ − θ⁰ = 5π (uniform twist, eq. 5), and θ matches the CPU run to the
/// 1e-4 rad of tests/gpu_whole_steps.rs.
#[test]
fn gpu_run_twists_like_the_cpu() {
    let (out, json) = twist(Some("gpu"), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("backend: gpu on "), "{stderr}");
    // The kernels compiled before the first step, and said so with the time
    // it took (on NVIDIA's driver, minutes the first time).
    let compiled = stderr
        .lines()
        .find(|l| l.starts_with("GPU: compiling the ") && l.contains(" kernels… "))
        .unwrap_or_else(|| panic!("no compile line: {stderr}"));
    let secs: f64 = compiled
        .split(" kernels… ")
        .nth(1)
        .unwrap()
        .split(" s (")
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{compiled}: {e}"));
    assert!(secs >= 0.0, "{compiled}");
    let gpu = json.expect("result written");
    assert_eq!(gpu["backend"], "gpu");
    assert!(!gpu["adapter"].as_str().unwrap().is_empty());
    let (_, cpu) = twist(Some("cpu"), None);
    let cpu = cpu.expect("result written");
    assert_eq!(cpu["backend"], "cpu");
    let (g, c) = (theta(&gpu), theta(&cpu));
    let turn = g.last().unwrap() - g[0];
    assert!((turn - 5.0 * std::f64::consts::PI).abs() < 1e-4, "{turn}");
    for (a, b) in g.iter().zip(&c) {
        assert!((a - b).abs() < 1e-4, "GPU θ {a} vs CPU θ {b}");
    }
}

/// With no adapter (`WGPU_BACKEND=metal` leaves none on Linux), asking for
/// the GPU is an error that names the way out, and nothing is written.
#[test]
fn no_adapter_is_a_clear_error() {
    let (out, json) = twist(Some("gpu"), Some(("WGPU_BACKEND", "metal")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no GPU adapter found"), "{stderr}");
    assert!(
        stderr.contains("apt-get install mesa-vulkan-drivers"),
        "{stderr}"
    );
    assert!(json.is_none());
}

/// Without `--backend`, no adapter means the CPU, with a line saying so.
#[test]
fn default_backend_falls_back_to_cpu_and_says_so() {
    let (out, json) = twist(None, Some(("WGPU_BACKEND", "metal")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("backend: cpu") && stderr.contains("no GPU adapter"),
        "{stderr}"
    );
    assert_eq!(json.unwrap()["backend"], "cpu");
}

/// `WGPU_ADAPTER_NAME` that matches nothing is an error listing the adapters.
#[test]
fn unknown_adapter_name_lists_the_available_ones() {
    let (out, _) = twist(Some("gpu"), Some(("WGPU_ADAPTER_NAME", "no-such-gpu-xyz")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no-such-gpu-xyz") && stderr.contains("available:"),
        "{stderr}"
    );
}

/// Without `--backend`, a machine whose only adapter is a software renderer
/// (lavapipe in CI: wgpu device type Cpu) runs the f64 CPU reference and
/// says why; with a hardware adapter the default is the GPU.
#[test]
fn default_backend_is_the_cpu_on_a_software_adapter() {
    let ctx = strands::gpu::GpuContext::headless()
        .expect("no GPU adapter: install mesa-vulkan-drivers (lavapipe)");
    let software = ctx.info.device_type == wgpu::DeviceType::Cpu;
    let (out, json) = twist(None, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json = json.expect("result written");
    if software {
        assert!(
            stderr.contains("backend: cpu")
                && stderr.contains(&ctx.info.name)
                && stderr.contains("software renderer")
                && stderr.contains("--backend gpu"),
            "{stderr}"
        );
        assert_eq!(json["backend"], "cpu");
    } else {
        assert!(stderr.contains("backend: gpu on "), "{stderr}");
        assert_eq!(json["backend"], "gpu");
    }
}

/// `strands bench` of one short frame of 16 hair strands of 8 vertices on
/// the GPU with `args` (a GPU row per form, precision or splat they ask
/// for), its report in a directory of its own named after `name`: the
/// table it printed and the report's rows. The bench must succeed.
fn quick_gpu_rows(name: &str, args: &[&str]) -> (String, Vec<serde_json::Value>) {
    let dir = std::env::temp_dir().join(format!("strands-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join(format!("{name}.json"));
    let out = strands()
        .args([
            "bench",
            "--backend",
            "gpu",
            "--warmup",
            "0",
            "--repeats",
            "1",
            "--min-time",
            "0",
        ])
        .args(["--workload", "hair", "--strands", "16", "--vertices", "8"])
        // Each row once: its shares would run it again without colliders
        // and without the grid, kernels of other constants that llvmpipe
        // compiles anew (tests/bench_cli.rs checks the shares).
        .args(["--substeps", "2", "--no-shares"])
        .args(args)
        .arg("--out")
        .arg(&json)
        .arg("--plot")
        .arg(dir.join(format!("{name}.svg")))
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (stdout, report["results"].as_array().unwrap().clone())
}

/// Bench rows that ran without error and, giving the same bits, ended at
/// the same (non-zero) largest strain after the same iterations.
fn assert_same_steps(rows: &[serde_json::Value]) {
    for r in rows {
        assert!(r["error"].is_null(), "{r}");
        assert!(r["max_strain"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["max_strain"], rows[0]["max_strain"]);
        assert_eq!(r["twist_iterations"], rows[0]["twist_iterations"]);
        assert_eq!(r["projection_iterations"], rows[0]["projection_iterations"]);
    }
}

/// `strands bench --backend cpu` with a flag that names GPU rows: refused,
/// saying which flag and that `--backend cpu` leaves the GPU out.
fn assert_bench_refuses_with_cpu_backend(flag: &str, value: &str) {
    let cpu = strands()
        .args(["bench", "--backend", "cpu", flag, value])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&cpu.stderr);
    assert!(!cpu.status.success());
    assert!(err.contains(flag) && err.contains("--backend cpu"), "{err}");
}

/// `strands bench` on the GPU labels each row with the form that ran, the
/// simulator's own choice (no flag picks one): the hair with its grid in
/// the walked fused halves on a CPU adapter (walked-frame's halves on a
/// GPU, `Form::running`), a scene with the Jacobi projection in the staged
/// walk; each row measured, with its kernels' compile time. A flag that
/// asked for a form is refused as the arguments are read.
#[test]
fn bench_labels_each_gpu_row_with_the_form_that_ran() {
    let dir = std::env::temp_dir().join(format!("strands-gpu-forms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("jacobi.toml");
    std::fs::write(
        &scene,
        std::fs::read_to_string("scenes/cantilever.toml").unwrap()
            + "\n[sim.projection]\nmethod = \"jacobi\"\n",
    )
    .unwrap();
    let (stdout, rows) = quick_gpu_rows("gpu-forms", &["--scene", scene.to_str().unwrap()]);
    let forms: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["workload"].as_str().unwrap(),
                r["gpu_form"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(forms.len(), 2, "{forms:?}");
    assert_eq!(
        forms[0].1, "walked-fused",
        "the hair with its grid: {forms:?}"
    );
    assert_eq!(forms[1].1, "walked", "the Jacobi scene: {forms:?}");
    for r in &rows {
        assert!(r["error"].is_null(), "{r}");
        // Each row says how long its form's kernels took to compile.
        let compile = r["gpu_compile_s"].as_f64();
        assert!(compile.is_some_and(|s| s >= 0.0), "{r}");
    }
    assert!(
        stdout.contains("compile hair gpu:walked-fused 16 strands: "),
        "{stdout}"
    );
    let bad = strands()
        .args(["bench", "--backend", "gpu", "--gpu-form", "walked"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(err.contains("--gpu-form"), "{err}");
}

/// `--gpu-splat`: `strands bench` times one GPU row per splat asked for
/// (runs of 16 and of 4 for the sorted one), the sorted ones labelled with
/// their run, each recorded in the JSON; the sorted splat
/// gives the grid's bits (tests/gpu_interaction.rs), so the rows end at the
/// same largest strain after the same iterations, and its profile times
/// the sorted splat's dispatches where the form's own splat has none.
/// Refused with `--backend cpu`; an unknown splat and a run of 0 refused
/// by name.
#[test]
fn gpu_splat_rows_run_the_same_steps() {
    let (stdout, rows) = quick_gpu_rows("gpu-splat", &["--gpu-splat", "own,sorted,sorted:4"]);
    // Rows name the run, the default's too.
    let run = strands::gpu::layout::SORTED_RUN;
    assert!(
        stdout.contains(&format!(":sorted-{run}-splat ")) && stdout.contains(":sorted-4-splat "),
        "{stdout}"
    );
    let splats: Vec<&str> = rows
        .iter()
        .map(|r| r["gpu_splat"].as_str().unwrap())
        .collect();
    assert_eq!(splats, ["own", &format!("sorted:{run}"), "sorted:4"]);
    let dispatches = |r: &serde_json::Value| -> Vec<String> {
        r["gpu_profile"]
            .as_array()
            .map(|p| {
                p.iter()
                    .map(|k| k["kernel"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    // lavapipe has timestamps: each row's profile names its dispatches.
    let (own, sorted) = (dispatches(&rows[0]), dispatches(&rows[1]));
    assert!(!own.iter().any(|k| k.starts_with("grid_cell")), "{own:?}");
    for k in [
        "grid_cell_count",
        "grid_cell_scan",
        "grid_cell_scatter",
        "grid_splat_sorted",
    ] {
        assert!(sorted.iter().any(|d| d == k), "{k} not in {sorted:?}");
    }
    assert_same_steps(&rows);
    assert_bench_refuses_with_cpu_backend("--gpu-splat", "sorted");
    for name in ["binned", "sorted:0"] {
        let bad = strands()
            .args(["bench", "--backend", "gpu", "--gpu-splat", name])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(
            !bad.status.success() && err.contains(name) && err.contains("sorted:RUN"),
            "{err}"
        );
    }
}

/// `--gpu-stencil`: `strands bench` times one GPU row per precision asked
/// for, each recorded in the JSON and the f32 one labelled so in the table;
/// both rows run the same steps (same twist and projection iterations).
/// `strands run` says which precision it uses, and refuses the flag with
/// `--backend cpu`. (lavapipe has f64 in shaders; on a device without it,
/// f64 is refused by `GpuContext::with_stencil`.)
#[test]
fn gpu_stencil_precision_is_chosen_and_reported() {
    let dir = std::env::temp_dir().join(format!("strands-gpu-stencil-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (stdout, rows) = quick_gpu_rows("gpu-stencil", &["--gpu-stencil", "f64,f32"]);
    assert!(
        stdout.contains("gpu:walked-fused ") && stdout.contains("gpu:walked-fused:f32 "),
        "{stdout}"
    );
    let stencils: Vec<&str> = rows
        .iter()
        .map(|r| r["gpu_stencil"].as_str().unwrap())
        .collect();
    assert_eq!(stencils, ["f64", "f32"]);
    for r in &rows {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["twist_iterations"], rows[0]["twist_iterations"]);
        assert_eq!(r["projection_iterations"], rows[0]["projection_iterations"]);
    }
    let run = |args: &[&str]| {
        strands()
            .args(["run", "scenes/cantilever.toml", "--steps", "1"])
            .args(args)
            .arg("--out")
            .arg(dir.join("run.json"))
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .output()
            .unwrap()
    };
    let f32_run = run(&["--gpu-stencil", "f32"]);
    let err = String::from_utf8_lossy(&f32_run.stderr);
    assert!(f32_run.status.success(), "{err}");
    assert!(
        err.contains("backend: gpu on") && err.contains("bending stencil in f32"),
        "{err}"
    );
    let cpu = run(&["--backend", "cpu", "--gpu-stencil", "f64"]);
    let err = String::from_utf8_lossy(&cpu.stderr);
    assert!(!cpu.status.success());
    assert!(
        err.contains("--gpu-stencil") && err.contains("--backend cpu"),
        "{err}"
    );
}
