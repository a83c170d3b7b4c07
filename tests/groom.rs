//! Grooms in and out: `.hair` and USD `BasisCurves` read as rods,
//! runs written as USD with time samples and checked with Pixar's own reader.
//!
//! The shipped grooms `scenes/grooms/small.hair` and `small.usda` are made by
//! `small_groom` below; `shipped_grooms_are_made_by_the_generator` checks
//! them, and `STRANDS_WRITE_GROOMS=1 cargo test --release --test groom`
//! writes them anew.

use std::path::{Path, PathBuf};
use std::process::Command;

use glam::DVec3;
use strands::backend::Simulator;
use strands::groom::{self, Placement, hair, usd};
use strands::scene::Scene;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strands-groom-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small groom in centimetres, y up, head centre at the origin: `count`
/// strands of `points` points rooted on a sphere of radius 10 cm over the
/// crown (Fibonacci spiral), leaving the scalp along its normal and turning
/// down, 1.2 cm per segment.
fn small_groom(count: usize, points: usize) -> Vec<Vec<[f32; 3]>> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..count)
        .map(|k| {
            let z = 1.0 - 0.6 * (k as f64 + 0.5) / count as f64;
            let s = (1.0 - z * z).sqrt();
            let phi = golden * k as f64;
            let n = DVec3::new(s * phi.cos(), z, s * phi.sin());
            let mut p = n * 10.0;
            let mut out = vec![p];
            for j in 1..points {
                let w = 0.9 * (j as f64 - 1.0) / (points as f64 - 1.0);
                let dir = (n * (1.0 - w) + DVec3::NEG_Y * w).normalize();
                p += dir * 1.2;
                out.push(p);
            }
            out.iter()
                .map(|q| [q.x as f32, q.y as f32, q.z as f32])
                .collect()
        })
        .collect()
}

/// The shipped `.usda` groom: the same strands, as a linear BasisCurves prim.
fn small_usda(strands: &[Vec<[f32; 3]>]) -> String {
    let counts: Vec<usize> = strands.iter().map(Vec::len).collect();
    let points: Vec<String> = strands
        .iter()
        .flatten()
        .map(|p| format!("({:?}, {:?}, {:?})", p[0], p[1], p[2]))
        .collect();
    format!(
        "#usda 1.0\n(\n    defaultPrim = \"groom\"\n    metersPerUnit = 0.01\n    upAxis = \"Y\"\n)\n\n\
         def Xform \"groom\"\n{{\n    def BasisCurves \"strands\"\n    {{\n        uniform token type = \"linear\"\n\
         \x20       int[] curveVertexCounts = {counts:?}\n        point3f[] points = [{}]\n    }}\n}}\n",
        points.join(", ")
    )
}

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/grooms")
}

#[test]
fn shipped_grooms_are_made_by_the_generator() {
    let strands = small_groom(36, 12);
    let bytes = hair::to_bytes(&strands, "strands: small test groom, cm, y up").unwrap();
    let text = small_usda(&small_groom(24, 10));
    if std::env::var_os("STRANDS_WRITE_GROOMS").is_some() {
        std::fs::create_dir_all(shipped()).unwrap();
        std::fs::write(shipped().join("small.hair"), &bytes).unwrap();
        std::fs::write(shipped().join("small.usda"), &text).unwrap();
    }
    assert_eq!(
        std::fs::read(shipped().join("small.hair")).unwrap(),
        bytes,
        "scenes/grooms/small.hair differs from its generator; STRANDS_WRITE_GROOMS=1 writes it"
    );
    assert_eq!(
        std::fs::read_to_string(shipped().join("small.usda")).unwrap(),
        text,
        "scenes/grooms/small.usda differs from its generator"
    );
}

#[test]
fn hair_file_round_trip() {
    let strands = small_groom(7, 5);
    let dir = temp_dir("hair");
    let path = dir.join("rt.hair");
    std::fs::write(&path, hair::to_bytes(&strands, "round trip").unwrap()).unwrap();
    let back = hair::read(&path).unwrap();
    assert_eq!(back.strands, strands);
    assert_eq!(back.info, "round trip");
    // Through the format dispatch too.
    assert_eq!(groom::load(&path).unwrap(), strands);
}

#[test]
fn hair_file_optional_arrays_are_read_past() {
    // Segments from the header's default, then thickness after the points:
    // 2 strands of 2 segments (3 points each).
    let mut b = b"HAIR".to_vec();
    for v in [2u32, 6, 2 | 4, 2] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[0; 128 - 20]);
    for k in 0..6 {
        for c in [k as f32, 1.0, 2.0] {
            b.extend_from_slice(&c.to_le_bytes());
        }
    }
    b.extend_from_slice(&[0; 6 * 4]);
    let h = hair::parse(&b).unwrap();
    assert_eq!(h.strands.len(), 2);
    assert_eq!(h.strands[1][0], [3.0, 1.0, 2.0]);
    // One thickness value short: truncated.
    let e = hair::parse(&b[..b.len() - 1]).unwrap_err();
    assert!(e.contains("truncated"), "{e}");
}

#[test]
fn resampling_gives_equal_segments_along_the_strand() {
    // An L of legs 3 and 1 with a repeated point: 4 segments of length 1.
    let p = [
        DVec3::ZERO,
        DVec3::new(3.0, 0.0, 0.0),
        DVec3::new(3.0, 0.0, 0.0),
        DVec3::new(3.0, 1.0, 0.0),
    ];
    let r = groom::resample(&p, 4).unwrap();
    let want = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [2.0, 0.0, 0.0],
        [3.0, 0.0, 0.0],
        [3.0, 1.0, 0.0],
    ];
    for (a, b) in r.iter().zip(want) {
        assert!((*a - DVec3::from_array(b)).length() < 1e-12, "{r:?}");
    }
    // Kept points with a repeat are refused, naming the strand and points.
    let strands = vec![
        vec![[0.0f32; 3], [1.0, 0.0, 0.0]],
        p.map(|x| x.as_vec3().to_array()).to_vec(),
    ];
    let place = Placement {
        scale: 1.0,
        rotation: DVec3::ZERO,
        translation: DVec3::ZERO,
        segments: None,
        every: 1,
        max_strands: None,
    };
    let e = groom::prepare(&strands, &place).unwrap_err();
    assert!(e.contains("strand 1: points 1 and 2 coincide"), "{e}");
    // Thinning: every 2nd strand, so only strand 0.
    let thin = groom::prepare(&strands, &Placement { every: 2, ..place }).unwrap();
    assert_eq!(thin.len(), 1);
    assert_eq!(thin[0].0, 0);
}

fn write_usd(frames: &[(f64, Vec<DVec3>)], counts: Vec<usize>, widths: Vec<f32>) -> String {
    let info = usd::StageInfo {
        time_codes_per_second: 60.0,
        up_axis: "Y",
    };
    let mut w = usd::UsdWriter::new(info, counts, widths);
    for (t, p) in frames {
        w.push(*t, p);
    }
    let mut out = Vec::new();
    w.write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Three frames of two curves (3 and 4 vertices) with awkward values.
fn sample_frames() -> Vec<(f64, Vec<DVec3>)> {
    (0..3)
        .map(|f| {
            let p = (0..7)
                .map(|i| {
                    DVec3::new(
                        0.1 * i as f64 + 1e-7 * f as f64,
                        1.6 - 0.0123456789 * i as f64,
                        -3.3e-5 * (f * i) as f64,
                    )
                })
                .collect();
            (2.0 * f as f64, p)
        })
        .collect()
}

#[test]
fn usd_write_then_read_reproduces_every_time_sample() {
    let frames = sample_frames();
    let text = write_usd(&frames, vec![3, 4], vec![1e-4; 7]);
    let dir = temp_dir("usd");
    let path = dir.join("rt.usda");
    std::fs::write(&path, &text).unwrap();
    let curves = usd::read(&path).unwrap();
    assert_eq!(curves.len(), 1);
    let c = &curves[0];
    assert_eq!(c.path, "/strands/curves");
    assert_eq!(c.counts, vec![3, 4]);
    assert_eq!(c.point_samples.len(), 3);
    for ((t, p), (tb, pb)) in frames.iter().zip(&c.point_samples) {
        assert_eq!(t, tb);
        let want: Vec<[f32; 3]> = p.iter().map(|q| q.as_vec3().to_array()).collect();
        assert_eq!(&want, pb, "time {t}");
    }
    assert_eq!(c.width_samples.len(), 3);
    assert!(c.width_samples.iter().all(|(_, w)| w == &vec![1e-4f32; 7]));
}

#[test]
fn usd_reader_refuses_transforms_and_cubic_curves() {
    let dir = temp_dir("usdbad");
    let base = small_usda(&small_groom(2, 4));
    let moved = base.replace(
        "def Xform \"groom\"\n{",
        "def Xform \"groom\"\n{\n    double3 xformOp:translate = (0, 1, 0)\n    uniform token[] xformOpOrder = [\"xformOp:translate\"]",
    );
    let path = dir.join("moved.usda");
    std::fs::write(&path, moved).unwrap();
    let e = usd::read(&path).unwrap_err();
    assert!(e.contains("/groom: transform xformOp:translate"), "{e}");
    assert!(e.contains("not the identity"), "{e}");
    // The identity is fine.
    let still = base.replace(
        "def Xform \"groom\"\n{",
        "def Xform \"groom\"\n{\n    double3 xformOp:translate = (0, 0, 0)\n    uniform token[] xformOpOrder = [\"xformOp:translate\"]",
    );
    std::fs::write(&path, still).unwrap();
    assert_eq!(usd::read(&path).unwrap()[0].counts, vec![4, 4]);
    let cubic = base.replace("\"linear\"", "\"cubic\"");
    std::fs::write(&path, cubic).unwrap();
    let e = usd::read(&path).unwrap_err();
    assert!(
        e.contains("/groom/strands.type: `cubic` curves are not read"),
        "{e}"
    );
}

#[test]
fn pixar_usd_reads_the_written_file() {
    let frames = sample_frames();
    let text = write_usd(&frames, vec![3, 4], vec![1e-4; 7]);
    let dir = temp_dir("pxr");
    let path = dir.join("run.usda");
    std::fs::write(&path, &text).unwrap();
    let script = r#"
import sys
try:
    from pxr import Usd, UsdGeom
except ImportError:
    print("NO_PXR")
    sys.exit(3)
stage = Usd.Stage.Open(sys.argv[1])
prim = stage.GetPrimAtPath("/strands/curves")
curves = UsdGeom.BasisCurves(prim)
print(prim.GetTypeName())
print(list(curves.GetCurveVertexCountsAttr().Get()))
print(curves.GetPointsAttr().GetNumTimeSamples(), curves.GetWidthsAttr().GetNumTimeSamples())
p = curves.GetPointsAttr().Get(4.0)[5]
print(repr(p[0]), repr(p[1]), repr(p[2]))
print(curves.GetTypeAttr().Get(), curves.GetWidthsInterpolation())
print(stage.GetTimeCodesPerSecond(), stage.GetStartTimeCode(), stage.GetEndTimeCode(), UsdGeom.GetStageMetersPerUnit(stage), UsdGeom.GetStageUpAxis(stage))
# Pixar's validators (UsdValidation: stage metadata, schema types, ...).
from pxr import UsdValidation
registry = UsdValidation.ValidationRegistry()
errors = UsdValidation.ValidationContext(registry.GetOrLoadAllValidators()).Validate(stage)
print(len(registry.GetOrLoadAllValidators()), "validators:", "; ".join(e.GetName() + ": " + e.GetMessage() for e in errors) or "none failed")
# The shipped groom, as Pixar reads it.
groom = Usd.Stage.Open(sys.argv[2])
g = UsdGeom.BasisCurves(groom.GetPrimAtPath("/groom/strands"))
errors = UsdValidation.ValidationContext(registry.GetOrLoadAllValidators()).Validate(groom)
print(len(g.GetCurveVertexCountsAttr().Get()), len(g.GetPointsAttr().Get()), UsdGeom.GetStageMetersPerUnit(groom), len(errors))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .arg(shipped().join("small.usda"))
        .output()
        .expect("python3 runs (Pixar's USD reader is its usd-core package)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("NO_PXR"),
        "Pixar's USD Python module (pxr) is not installed: run `pip install usd-core` (.ci/run does)"
    );
    assert!(
        out.status.success(),
        "pxr failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "BasisCurves");
    assert_eq!(lines[1], "[3, 4]");
    assert_eq!(lines[2], "3 3");
    // Vertex 5 at time code 4 (the third frame), as f32 read by Python
    // (which prints the f32 widened to a double).
    let want = frames[2].1[5].as_vec3();
    let got: Vec<f32> = lines[3]
        .split_whitespace()
        .map(|x| x.parse::<f64>().unwrap() as f32)
        .collect();
    assert_eq!(got, want.to_array().to_vec());
    assert_eq!(lines[4], "linear vertex");
    assert_eq!(lines[5], "60.0 0.0 4.0 1.0 Y");
    assert!(
        lines[6].ends_with("validators: none failed"),
        "{}",
        lines[6]
    );
}

#[test]
fn bad_groom_files_name_the_file_and_the_problem() {
    let dir = temp_dir("bad");
    let scene = |file: &str| {
        format!(
            "[materials.hair]\ndensity = 1300.0\nradius = 5e-5\nyoungs_modulus = 3.9e9\n\n\
             [[rods]]\nkind = \"groom\"\nmaterial = \"hair\"\nfile = \"{file}\"\nscale = 0.01\n"
        )
    };
    let load = |file: &str, bytes: Option<&[u8]>| {
        if let Some(b) = bytes {
            std::fs::write(dir.join(file), b).unwrap();
        }
        let path = dir.join("scene.toml");
        std::fs::write(&path, scene(file)).unwrap();
        Scene::load(&path, &[]).unwrap_err().to_string()
    };
    let good = hair::to_bytes(&small_groom(3, 4), "").unwrap();
    let e = load("missing.hair", None);
    assert!(e.contains("rods[0].file (line 9)"), "{e}");
    assert!(e.contains("missing.hair: cannot read"), "{e}");
    let e = load("short.hair", Some(&good[..good.len() - 5]));
    assert!(e.contains("short.hair: truncated"), "{e}");
    let e = load("header.hair", Some(&good[..100]));
    assert!(e.contains("header.hair: truncated: 100 bytes"), "{e}");
    let mut wrong = good.clone();
    wrong[..4].copy_from_slice(b"HAIX");
    let e = load("magic.hair", Some(&wrong));
    assert!(e.contains("magic.hair: not a .hair file"), "{e}");
    // A strand of one point (0 segments).
    let one = hair::to_bytes(&[small_groom(1, 4)[0].clone(), vec![[1.0, 2.0, 3.0]]], "").unwrap();
    let e = load("one.hair", Some(&one));
    assert!(
        e.contains("one.hair: strand 1 has 1 point; a strand needs at least 2"),
        "{e}"
    );
    let e = load("groom.obj", Some(b"v 0 0 0\n"));
    assert!(e.contains("groom.obj: unknown groom format"), "{e}");
    let e = load(
        "bad.usda",
        Some(b"#usda 1.0\ndef BasisCurves \"c\" {\n  int[] curveVertexCounts = [2\n"),
    );
    assert!(e.contains("bad.usda: cannot read as USD"), "{e}");
}

/// The shipped groom scene loads, and its strands stay finite with their
/// roots on the head anchor (the clamp places them there: the anchor's pose
/// applied to the root's rest position, `src/model/anchor.rs`).
#[test]
fn groom_scene_loads_and_runs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/groom.toml");
    let scene = Scene::load(&path, &[]).unwrap();
    // 36 strands from small.hair (kept, 12 points) and 12 of the 24 of
    // small.usda (every 2nd, resampled to 8 segments).
    assert_eq!(scene.rods.len(), 48);
    assert!(scene.rods[..36].iter().all(|r| r.points.len() == 12));
    assert!(scene.rods[36..].iter().all(|r| r.points.len() == 9));
    // The file's root (cm, head centre at the origin) placed on the head.
    let root = DVec3::from_array(small_groom(36, 12)[0][0].map(f64::from)) * 0.01
        + DVec3::new(0.0, 1.6, 0.0);
    assert!((scene.rods[0].points[0] - root).length() < 1e-7);
    let (rods, state) = scene.build();
    let head = rods.anchors.iter().position(|a| a.name == "head").unwrap();
    let roots: Vec<DVec3> = (0..rods.rod_count())
        .map(|r| state.pos[rods.vertices(r).start])
        .collect();
    let mut sim = Simulator::cpu(rods, state, scene.params);
    for _ in 0..30 {
        sim.step().unwrap();
    }
    let (rods, state) = (sim.rods(), sim.state());
    assert!(state.pos.iter().all(|p| p.is_finite()));
    let pose = rods.anchors[head].pose(state.time);
    let pose0 = rods.anchors[head].pose(0.0);
    for (r, root) in roots.iter().enumerate() {
        let want = pose.point(pose0.inverse_point(*root));
        let got = state.pos[rods.vertices(r).start];
        assert!((got - want).length() < 1e-9, "rod {r}: {got} vs {want}");
    }
    // The head has moved by then, so the roots did too.
    assert!((state.pos[0] - roots[0]).length() > 1e-3);
}

#[test]
fn run_writes_usd_with_a_frame_per_stored_step() {
    let dir = temp_dir("cli");
    let usd_path = dir.join("run.usda");
    let out = Command::new(env!("CARGO_BIN_EXE_strands"))
        .args([
            "run",
            "scenes/groom.toml",
            "--backend",
            "cpu",
            "--steps",
            "6",
            "--every",
            "2",
            "--usd",
        ])
        .arg(&usd_path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // No --out: the USD instead of JSON on standard output.
    assert!(out.stdout.is_empty());
    let c = &usd::read(&usd_path).unwrap()[0];
    assert_eq!(c.counts.len(), 48);
    let times: Vec<f64> = c.point_samples.iter().map(|s| s.0).collect();
    assert_eq!(times, vec![0.0, 2.0, 4.0, 6.0]);
    // Widths are 2 × the material radius (5e-5 m).
    assert!(c.width_samples[0].1.iter().all(|&w| w == 1e-4f32));
    // A directory is refused before the first step.
    let out = Command::new(env!("CARGO_BIN_EXE_strands"))
        .args([
            "run",
            "scenes/groom.toml",
            "--backend",
            "cpu",
            "--steps",
            "1",
            "--usd",
        ])
        .arg(&dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--usd") && err.contains("is a directory"),
        "{err}"
    );
}
