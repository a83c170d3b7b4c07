//! `strands run` end to end: the JSON result, `--set`, `--every`, and a
//! blow-up that stops with an error instead of writing a result.

use std::process::Command;

fn strands() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strands"))
}

fn scene(name: &str) -> String {
    format!("{}/scenes/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("strands-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The twist scene turns one end 2.5 turns about the rod axis: the result file
/// holds the final θ with θⁿ − θ⁰ = 5π, one diagnostics entry per step plus the
/// initial state, and a frame every K steps.
#[test]
fn run_writes_the_documented_result() {
    let out = tmp("twist.json");
    let status = strands()
        .args([
            "run",
            &scene("twist.toml"),
            "--steps",
            "120",
            "--every",
            "40",
            "--out",
        ])
        .arg(&out)
        // The f64 reference: θ to 1e-9 (the GPU run is in tests/gpu_cli.rs).
        .args(["--set", "sim.substeps=25", "--backend", "cpu"])
        .status()
        .unwrap();
    assert!(status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    // The format's version and units (docs/SCENES.md, "Result file").
    assert_eq!(v["schema"], 1);
    for (field, unit) in [
        ("positions", "m"),
        ("theta", "rad"),
        ("time", "s"),
        ("clamp_torque", "N·m"),
        ("kinetic", "J"),
        ("max_speed", "m/s"),
    ] {
        assert_eq!(v["units"][field], unit, "{field}");
    }
    assert_eq!(v["substeps"], 25);
    assert_eq!(v["steps"], 120);
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 121);
    let frames: Vec<u64> = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["step"].as_u64().unwrap())
        .collect();
    assert_eq!(frames, vec![0, 40, 80, 120]);
    let rod = &v["rods"][0];
    assert_eq!(rod["positions"].as_array().unwrap().len(), 21);
    let theta: Vec<f64> = rod["theta"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!((theta[19] - theta[0] - 5.0 * std::f64::consts::PI).abs() < 1e-9);
    let last = &v["diagnostics"][120];
    assert!(last["twisting"].as_f64().unwrap() > 0.0);
    assert!(last["max_strain"].as_f64().unwrap() < 1e-9);
}

/// A blow-up stops the run with an error naming the scene, rod and step,
/// and writes what was simulated before it, marked incomplete.
#[test]
fn a_blow_up_names_rod_and_step_and_writes_what_it_simulated() {
    let out = tmp("blow.json");
    let o = strands()
        .args([
            "run",
            &scene("cantilever.toml"),
            "--set",
            "sim.substeps=100",
            "--set",
            "sim.allow_unstable=true",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rod 0") && err.contains("stopped at step"),
        "{err}"
    );
    assert!(
        err.contains("above this rod's explicit stability limit"),
        "{err}"
    );
    assert!(err.contains("cantilever.toml"), "{err}");
    // Details of the incomplete result: tests/bad_input.rs.
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert!(v["stopped"].as_str().unwrap().contains("stopped at step"));
}

#[test]
fn a_bad_scene_exits_non_zero_with_the_field() {
    let o = strands()
        .args([
            "run",
            &scene("twist.toml"),
            "--set",
            "materials.cable.mass_per_length=-1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("twist.toml") && err.contains("materials.cable.mass_per_length"),
        "{err}"
    );
}

/// On a headless machine (no `XDG_RUNTIME_DIR`, no Wayland display) a
/// successful run prints no `error:` line: Mesa's device-selection layer,
/// loaded with lavapipe, probes for a Wayland display, and libwayland
/// reports the missing runtime directory as "error: XDG_RUNTIME_DIR is
/// invalid or not set" once for each probe unless the program switches
/// the probe off (src/main.rs `quiet_device_select_probe`). The run looks
/// for a GPU adapter (the default backend), so the probe happens.
#[test]
fn a_headless_run_prints_no_false_error() {
    let out = tmp("headless.json");
    let run = strands()
        .args(["run", &scene("twist.toml"), "--steps", "2", "--out"])
        .arg(&out)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("NODEVICE_SELECT")
        .env_remove("MESA_VK_DEVICE_SELECT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("error:")),
        "a successful run printed an error line:\n{stderr}"
    );
    assert!(stderr.contains("backend:"), "{stderr}");
}

/// The cable scene is statics: without `--backend` it runs on the CPU
/// reference, saying why; every step reports its Newton solve, whose
/// residual stays far below the weight of a vertex (6 mN), the cable is
/// at rest, and, 1 m long between handles brought to 0.8 m apart, it sags.
#[test]
fn the_cable_scene_runs_statics_on_the_cpu_and_reports_its_residual() {
    let out = tmp("cable.json");
    let run = strands()
        .args(["run", &scene("cable.toml"), "--steps", "60", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("because sim.integrator = \"static\" runs on the CPU reference only"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["units"]["newton_residual"], "N");
    let d = v["diagnostics"].as_array().unwrap();
    for step in &d[1..] {
        assert!(step["newton_iterations"].as_u64().unwrap() >= 1);
        let r = step["newton_residual"].as_f64().unwrap();
        assert!(r > 0.0 && r < 1e-6, "residual {r} N");
        assert_eq!(step["max_speed"].as_f64().unwrap(), 0.0);
    }
    let lowest = v["rods"][0]["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert!(lowest < 0.8, "lowest point {lowest} m");
}
