//! `strands bench` end to end on a tiny workload: the documented JSON (every
//! figure, device, build profile), the SVG plot, `--compare`, and bad input.

use std::process::Command;

fn strands() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strands"))
}

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("strands-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bench_writes_report_plot_and_compares() {
    let d = dir();
    let (json, svg) = (d.join("b.json"), d.join("b.svg"));
    let args = [
        "bench",
        // Both backends, the software GPU (lavapipe) included.
        "--backend",
        "cpu,gpu",
        "--workload",
        "hair,grass",
        "--strands",
        "12,24",
        "--vertices",
        "16",
        "--warmup",
        "1",
        "--repeats",
        "3",
        // Exactly the repeats: the same stretch of the scenes on both
        // backends (`bench_times_frames_until_the_least_time` times more).
        "--min-time",
        "0",
        "--substeps",
        "2",
    ];
    let o = strands()
        .args(args)
        .arg("--out")
        .arg(&json)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["environment"]["build_profile"], "release");
    assert!(
        !r["environment"]["gpu"].as_str().unwrap().is_empty(),
        "GPU adapter named"
    );
    let copy = r["environment"]["gpu_copy_bandwidth"]["gb_per_s"]
        .as_f64()
        .unwrap();
    assert!(copy > 0.0, "{}", r["environment"]);
    let results = r["results"].as_array().unwrap();
    // 2 workloads × 2 sizes × (the CPU with the symplectic and backward
    // Euler integrators, the default; the GPU, which steps the symplectic
    // only and says so).
    assert_eq!(results.len(), 12);
    let rows = |backend: &str, integrator: &str| {
        results
            .iter()
            .filter(|m| m["backend"] == backend && m["integrator"] == integrator)
            .count()
    };
    assert_eq!(
        [
            rows("cpu", "symplectic"),
            rows("cpu", "backward-euler"),
            rows("gpu", "symplectic")
        ],
        [4, 4, 4]
    );
    assert!(
        stderr.contains("sim.integrator = backward-euler not timed"),
        "{stderr}"
    );
    assert_eq!(r["min_time_s"], 0.0);
    assert_eq!(r["shares"], true);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("not measured (--no-shares)"));
    for m in results {
        assert_eq!(m["frames_timed"], 3, "{m}");
        assert!(m.get("error").is_none(), "{m}");
        let s = &m["ms_per_step"];
        let (lo, med, hi) = (
            s["min"].as_f64().unwrap(),
            s["median"].as_f64().unwrap(),
            s["max"].as_f64().unwrap(),
        );
        assert!(0.0 < lo && lo <= med && med <= hi, "{s}");
        let v = m["vertices"].as_f64().unwrap();
        // An implicit row steps once a frame of 1/60 s.
        let implicit = m["integrator"] != "symplectic";
        assert_eq!(m["settings"]["substeps"], if implicit { 1 } else { 2 });
        let h = m["settings"]["h"].as_f64().unwrap();
        let frame = m["ms_per_60hz_frame"].as_f64().unwrap();
        assert!((frame - med * (1.0 / 60.0) / h).abs() < 1e-9 * frame, "{m}");
        assert_eq!(
            m["newton_iterations"].as_u64().unwrap() > 0,
            implicit,
            "{m}"
        );
        assert!(m["simulated_time"].as_f64().unwrap() > 0.0);
        let vs = m["vertex_steps_per_second"].as_f64().unwrap();
        assert!((vs - v / (med * 1e-3)).abs() < 1e-6 * vs);
        assert_eq!(m["vertices_per_strand"], 16);
        // The default fast projection leaves no visible stretch (strain
        // below 1e-3), and reports the Newton iterations it took (at least
        // one per step: the head moves and gravity pulls from the start).
        let strain = m["max_strain"].as_f64().unwrap();
        assert!((0.0..1e-3).contains(&strain), "{strain}");
        let iterations = m["projection_iterations"].as_u64().unwrap();
        assert!((1..=100).contains(&iterations), "{iterations}");
        // Both workloads have colliders: timed again without them, and
        // contact's share is what the difference says.
        let without = m["ms_per_step_without_contact"]["median"].as_f64().unwrap();
        let share = m["contact_share"].as_f64().unwrap();
        assert!(without > 0.0, "{m}");
        assert!((share - (1.0 - without / med)).abs() < 1e-9, "{m}");
        assert!(m["host_bytes"].as_u64().unwrap() > 0);
        if m["backend"] == "gpu" {
            assert!(m["gpu_bytes"].as_u64().unwrap() > 0);
            // Modelled traffic over the median time, and over the copy
            // bandwidth of the same run.
            let b = m["model_bytes_per_vertex_step"].as_f64().unwrap();
            assert!(b > 100.0, "{m}");
            // The same bytes by buffer.
            // Per buffer, what `read` and `written` (or their sector
            // counts) add up to.
            let by_buffer_sum = |read: &str, written: &str| -> f64 {
                m["model_bytes_by_buffer"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x[read].as_f64().unwrap() + x[written].as_f64().unwrap())
                    .sum()
            };
            let by_buffer = by_buffer_sum("read", "written");
            assert!((by_buffer - b).abs() < 1e-9 * b, "{m}");
            // The floor in 32-byte sectors: at least the bytes, and the
            // same sectors by buffer.
            let sb = m["model_sector_bytes_per_vertex_step"].as_f64().unwrap();
            assert!(sb >= b, "{sb} sector bytes under {b} bytes: {m}");
            let sectors_by_buffer = by_buffer_sum("sector_read", "sector_written");
            assert!((sectors_by_buffer - sb).abs() < 1e-9 * sb, "{m}");
            // With timestamps, a profile of the same dispatches: their
            // modelled bytes add up to the row's, in bytes and in sectors.
            if m["timing"] == "gpu timestamps" {
                let p = m["gpu_profile"].as_array().unwrap();
                assert!(
                    p.iter().all(|k| k["ms_per_step"].as_f64().unwrap() > 0.0),
                    "{m}"
                );
                let bytes: f64 = p.iter().map(|k| k["model_bytes"].as_f64().unwrap()).sum();
                assert!((bytes - b).abs() < 1e-9 * b, "{bytes} against {b}: {m}");
                let sectors: f64 = p
                    .iter()
                    .map(|k| k["model_sector_bytes"].as_f64().unwrap())
                    .sum();
                assert!(
                    (sectors - sb).abs() < 1e-9 * sb,
                    "{sectors} against {sb}: {m}"
                );
            }
            let gbs = m["achieved_gb_per_s"].as_f64().unwrap();
            assert!((gbs - b * v / (med * 1e-3) / 1e9).abs() < 1e-9 * gbs, "{m}");
            let f = m["bandwidth_fraction"].as_f64().unwrap();
            assert!((f - gbs / copy).abs() < 1e-9 * f, "{m}");
        } else {
            assert!(m["model_bytes_per_vertex_step"].is_null(), "{m}");
            assert!(m["model_bytes_by_buffer"].is_null(), "{m}");
            assert!(m["model_sector_bytes_per_vertex_step"].is_null(), "{m}");
            assert!(m["bandwidth_fraction"].is_null(), "{m}");
        }
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("ms/step median")
            && stdout.contains("contact")
            && stdout.contains("B/vert-step")
            && stdout.contains("not a counter")
            && stdout.contains("B/vert-step by buffer, read + written")
            && stdout.contains("in 32-byte sectors"),
        "{stdout}"
    );
    // A profile line where a GPU row has one (an adapter with timestamps).
    let profiled = results.iter().any(|m| m["timing"] == "gpu timestamps");
    assert_eq!(
        stdout.contains("[modelled GB/s | in 32-byte sectors]"),
        profiled,
        "{stdout}"
    );
    let plot = std::fs::read_to_string(&svg).unwrap();
    // GPU series are named with the form they ran in.
    assert!(plot.contains("<svg") && plot.contains("hair (cpu)") && plot.contains("grass (gpu:"));

    // Comparing with itself: every workload found, speed-ups printed.
    let o = strands()
        .args(args)
        .arg("--out")
        .arg(d.join("c.json"))
        .arg("--plot")
        .arg(d.join("c.svg"))
        .arg("--compare")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(stdout.matches('×').count(), 12, "{stdout}");
    assert!(!stdout.contains("no comparable figure"), "{stdout}");
}

/// `--min-time`: tiny frames are timed past the 3 repeats until their wall
/// time reaches 0.1 s, and not one more, on both backends.
#[test]
fn bench_times_frames_until_the_least_time() {
    let d = dir();
    let json = d.join("least.json");
    let o = strands()
        .args(["bench", "--backend", "cpu,gpu", "--workload", "grass"])
        .args(["--integrator", "symplectic"])
        .args(["--strands", "12", "--vertices", "16", "--substeps", "2"])
        .args(["--warmup", "1", "--repeats", "3", "--min-time", "0.1"])
        .arg("--out")
        .arg(&json)
        .arg("--plot")
        .arg(d.join("least.svg"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["min_time_s"], 0.1);
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for m in results {
        // The wall time per step, 2 steps a frame: the CPU's own times; on
        // a GPU with timestamps the submit-and-wait ones, else its own.
        let frames = m["frames_timed"].as_u64().unwrap() as f64;
        let wall = match &m["wall_ms_per_step"] {
            serde_json::Value::Null => &m["ms_per_step"],
            w => w,
        };
        let (fastest, slowest) = (wall["min"].as_f64().unwrap(), wall["max"].as_f64().unwrap());
        assert!(frames > 3.0, "{m}");
        // The timed frames reach 0.1 s; all but the last did not.
        assert!(frames * slowest * 2.0 >= 100.0, "{m}");
        assert!((frames - 1.0) * fastest * 2.0 < 100.0, "{m}");
    }
}

/// `--no-shares`: each row timed once, so no contact or grid share (the
/// hair has both a head and hair–hair interaction), and the report says
/// so; the table's share columns print `-`.
#[test]
fn bench_no_shares_times_each_row_once() {
    let d = dir();
    let json = d.join("noshares.json");
    let o = strands()
        .args([
            "bench",
            "--backend",
            "cpu",
            "--workload",
            "hair",
            "--no-shares",
            "--integrator",
            "symplectic",
        ])
        .args(["--strands", "12", "--vertices", "16", "--substeps", "2"])
        .args(["--warmup", "0", "--repeats", "2", "--min-time", "0"])
        .arg("--out")
        .arg(&json)
        .arg("--plot")
        .arg(d.join("noshares.svg"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["shares"], false);
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let m = &results[0];
    assert_eq!(m["frames_timed"], 2, "{m}");
    assert!(m["ms_per_step"]["median"].as_f64().unwrap() > 0.0, "{m}");
    for absent in [
        "contact_share",
        "grid_share",
        "ms_per_step_without_contact",
        "ms_per_step_without_grid",
    ] {
        assert!(m[absent].is_null(), "{absent}: {m}");
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    let row = stdout.lines().find(|l| l.starts_with("hair")).unwrap();
    assert!(!row.contains('%'), "no share printed: {row}");
    assert!(
        stdout.contains("contact, grid: not measured (--no-shares)"),
        "{stdout}"
    );
}

#[test]
fn bench_rejects_bad_input_clearly() {
    let d = dir();
    let o = strands()
        .args(["bench", "--vertices", "2", "--backend", "cpu", "--out"])
        .arg(d.join("x.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--vertices 2"));
    let o = strands()
        .args(["bench", "--backend", "cpu", "--compare"])
        .arg(d.join("missing.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.json"));
    for bad in ["-1", "inf", "NaN"] {
        let o = strands()
            .args(["bench", "--backend", "cpu", &format!("--min-time={bad}")])
            .arg("--out")
            .arg(d.join("x.json"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("--min-time") && err.contains("seconds"),
            "{err}"
        );
    }
}

/// The hair with rod contact is timed with the symplectic integrator
/// beside the plain hair, and its implicit row is left out with a note
/// naming it (a scene with rod contact and an implicit integrator is
/// refused).
#[test]
fn bench_times_rod_contact_symplectic_only_and_says_so() {
    let d = dir();
    let json = d.join("rodcontact.json");
    let o = strands()
        .args(["bench", "--backend", "cpu", "--no-shares"])
        .args(["--workload", "hair,hair-rodcontact"])
        .args(["--integrator", "symplectic,backward-euler"])
        .args(["--strands", "12", "--vertices", "16", "--substeps", "2"])
        .args(["--warmup", "0", "--repeats", "1", "--min-time", "0"])
        .arg("--out")
        .arg(&json)
        .arg("--plot")
        .arg(d.join("rodcontact.svg"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("not timed: hair-rodcontact × backward-euler"),
        "{stderr}"
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows: Vec<(String, String)> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["workload"].as_str().unwrap_or("?").to_string(),
                m["integrator"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    assert!(
        rows.contains(&("hair-rodcontact".into(), "symplectic".into())),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("hair".into(), "backward-euler".into())),
        "{rows:?}"
    );
    assert!(
        !rows
            .iter()
            .any(|(w, i)| w == "hair-rodcontact" && i != "symplectic"),
        "{rows:?}"
    );
}
