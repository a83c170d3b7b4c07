//! Input refused early and precisely: the corpus of malformed
//! scenes in tests/bad_scenes, an unwritable --out found before simulating,
//! and runs that stop early (a blow-up, Ctrl-C) writing what they simulated.
//!
//! Each file in tests/bad_scenes has one defect and starts with comments:
//! `# field: F` (the field the error must name, right after the file),
//! optionally `# set: K=V` (a --set override, repeatable), `# args: …`
//! (more command-line arguments) and `# message: M` (a part of the message).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn strands() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strands"))
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strands-bad-input-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Case {
    field: String,
    set: Vec<String>,
    args: Vec<String>,
    message: Option<String>,
}

fn header(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let mut case = Case {
        field: String::new(),
        set: Vec::new(),
        args: Vec::new(),
        message: None,
    };
    for line in text.lines().take_while(|l| l.starts_with("# ")) {
        let (key, value) = line[2..].split_once(": ").unwrap();
        match key {
            "field" => case.field = value.to_string(),
            "set" => case.set.push(value.to_string()),
            "args" => case.args = value.split_whitespace().map(String::from).collect(),
            "message" => case.message = Some(value.to_string()),
            other => panic!("{}: unknown header `{other}`", path.display()),
        }
    }
    assert!(
        !case.field.is_empty(),
        "{}: no `# field:` line",
        path.display()
    );
    case
}

/// Every malformed scene: exit status 1 (not a signal), an `error:` line
/// naming the file and then the field, no panic, no output file (nor a
/// temporary one), in under 10 s.
#[test]
fn every_malformed_scene_is_refused_naming_file_and_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_scenes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 60, "only {} bad scenes", files.len());
    let out_dir = tmp_dir("corpus");
    let out = out_dir.join("result.json");
    let mut failures = Vec::new();
    for file in &files {
        let case = header(file);
        let mut cmd = strands();
        cmd.arg("run")
            .arg(file)
            .args(["--backend", "cpu", "--out"])
            .arg(&out);
        for s in &case.set {
            cmd.args(["--set", s]);
        }
        cmd.args(&case.args);
        let start = Instant::now();
        let o = cmd.output().unwrap();
        let took = start.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        let shown = file.display().to_string();
        let line = err.lines().find(|l| l.starts_with("error:"));
        let mut wrong = Vec::new();
        if o.status.code() != Some(1) {
            wrong.push(format!("exit status {:?}", o.status));
        }
        match line {
            None => wrong.push("no `error:` line".into()),
            Some(l) => {
                let named = format!("error: {shown}: {}", case.field);
                let after = l.strip_prefix(&named).and_then(|r| r.chars().next());
                if !matches!(after, Some(':' | ' ' | ',')) {
                    wrong.push(format!("the line does not start with `{named}`"));
                }
                if let Some(m) = &case.message
                    && !l.contains(m.as_str())
                {
                    wrong.push(format!("the line lacks `{m}`"));
                }
            }
        }
        if err.contains("panicked") {
            wrong.push("panicked".into());
        }
        if std::fs::read_dir(&out_dir).unwrap().next().is_some() {
            wrong.push("left a file in the output directory".into());
            let _ = std::fs::remove_dir_all(&out_dir);
            std::fs::create_dir_all(&out_dir).unwrap();
        }
        if took > Duration::from_secs(10) {
            wrong.push(format!("took {took:?}"));
        }
        if !wrong.is_empty() {
            failures.push(format!("{shown}: {}\n{err}", wrong.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The --set cases of the corpus vary a scene that runs as it is, so their
/// errors come from the settings.
#[test]
fn the_set_cases_vary_a_scene_that_runs() {
    let dir = tmp_dir("base");
    let scene = dir.join("ok.toml");
    // The body of a --set case is the unchanged base scene.
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/bad_scenes/92_set_value_not_a_number.toml"),
    )
    .unwrap();
    std::fs::write(&scene, &base).unwrap();
    let out = dir.join("ok.json");
    let o = strands()
        .arg("run")
        .arg(&scene)
        .args(["--backend", "cpu", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["complete"], true);
    assert!(v.get("stopped").is_none());
    assert_eq!(v["steps"], v["requested_steps"]);
}

/// A run that would take long is refused at once when --out cannot be
/// written, before simulating a step.
#[test]
fn an_unwritable_out_is_found_before_simulating() {
    let dir = tmp_dir("unwritable");
    let scene = format!("{}/scenes/twist.toml", env!("CARGO_MANIFEST_DIR"));
    for (out, says) in [
        (dir.join("no-such-dir/result.json"), "cannot create"),
        (dir.clone(), "is a directory"),
    ] {
        let start = Instant::now();
        let o = strands()
            .args([
                "run",
                &scene,
                "--backend",
                "cpu",
                "--steps",
                "10000000",
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(start.elapsed() < Duration::from_secs(10));
        let line = err.lines().find(|l| l.starts_with("error:")).unwrap();
        assert!(line.contains("twist.toml"), "{line}");
        assert!(line.contains(&format!("--out {}", out.display())), "{line}");
        assert!(line.contains(says), "{line}");
        assert!(!err.contains("backend:"), "it started simulating: {err}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

/// A free rod falling with sim.max_speed = 0.5 m/s stops (as a blow-up
/// would) in the step where its speed g·t passes 0.5 m/s. The result holds
/// the whole steps before it, marked incomplete, and the run exits 1.
#[test]
fn a_run_that_stops_early_writes_what_it_simulated() {
    let dir = tmp_dir("stopped");
    let (g, dt, max_speed): (f64, f64, f64) = (9.81, 0.01, 0.5);
    let scene = dir.join("fall.toml");
    std::fs::write(
        &scene,
        format!(
            "[sim]\ndt = {dt}\nsubsteps = 10\nsteps = 50\ngravity = [0, -{g}, 0]\nmax_speed = {max_speed}\n\n[materials.m]\nbending_stiffness = 1e-3\ntwist_stiffness = 1e-3\nmass_per_length = 0.01\n\n[[rods]]\nkind = \"straight\"\nmaterial = \"m\"\nfrom = [0, 0, 0]\nto = [1, 0, 0]\nsegments = 10\n"
        ),
    )
    .unwrap();
    let out = dir.join("fall.json");
    let o = strands()
        .arg("run")
        .arg(&scene)
        .args(["--backend", "cpu", "--every", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let line = err.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains(&scene.display().to_string()), "{line}");
    assert!(line.contains("sim.max_speed"), "{line}");
    assert!(line.contains("\"complete\": false"), "{line}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert!(v["stopped"].as_str().unwrap().contains("max_speed"));
    assert_eq!(v["requested_steps"], 50);
    // Free fall: the speed after n whole steps is g·n·dt.
    let whole = (max_speed / (g * dt)).floor() as u64;
    assert_eq!(v["steps"], whole);
    assert!((v["time"].as_f64().unwrap() - whole as f64 * dt).abs() < 1e-12);
    let diagnostics = v["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len() as u64, whole + 1);
    let last_speed = diagnostics.last().unwrap()["max_speed"].as_f64().unwrap();
    assert!(
        (last_speed - g * whole as f64 * dt).abs() < 1e-9,
        "{last_speed}"
    );
    assert_eq!(v["frames"].as_array().unwrap().len() as u64, whole + 1);
    // The rods are the state after the last whole step, as its frame.
    assert_eq!(
        v["rods"][0]["positions"],
        v["frames"][whole as usize]["rods"][0]["positions"]
    );
    // Only the result is left in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
}

/// Ctrl-C (SIGINT) stops the run after the step under way; the result is
/// written, marked incomplete, and the exit status is 130.
#[cfg(unix)]
#[test]
fn ctrl_c_writes_what_was_simulated() {
    let dir = tmp_dir("interrupt");
    let out = dir.join("twist.json");
    let scene = format!("{}/scenes/twist.toml", env!("CARGO_MANIFEST_DIR"));
    let requested = 10_000_000u64;
    let mut child = strands()
        .args(["run", &scene, "--backend", "cpu", "--steps"])
        .arg(requested.to_string())
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            let _ = tx.send(line);
        }
    });
    // Wait until it simulates.
    let mut log = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx
            .recv_timeout(deadline - Instant::now())
            .expect("no backend line");
        let started = line.starts_with("backend:");
        log.push(line);
        if started {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still running after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    log.extend(rx.try_iter());
    let log = log.join("\n");
    assert_eq!(status.code(), Some(130), "{log}");
    let line = log.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(
        line.contains("twist.toml") && line.contains("interrupted"),
        "{line}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert!(v["stopped"].as_str().unwrap().contains("Ctrl-C"));
    let taken = v["steps"].as_u64().unwrap();
    assert!(taken < requested);
    assert_eq!(v["requested_steps"], requested);
    assert_eq!(v["diagnostics"].as_array().unwrap().len() as u64, taken + 1);
    let dt = v["dt"].as_f64().unwrap();
    assert!((v["time"].as_f64().unwrap() - taken as f64 * dt).abs() < 1e-9 * (1.0 + taken as f64));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}
