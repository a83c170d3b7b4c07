//! Bad scene files are refused with an error naming the file, the field and
//! what is wrong; nothing panics on user input.

use std::path::Path;
use strands::scene::Scene;

const MATERIAL: &str = r#"
[materials.m]
bending_stiffness = 1e-3
twist_stiffness = 1e-3
mass_per_length = 0.01
"#;

fn error_of(text: &str, overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match Scene::parse(text, Path::new("scenes/bad.toml"), &o) {
        Ok(_) => panic!("scene was accepted:\n{text}"),
        Err(e) => {
            let s = e.to_string();
            assert!(
                s.starts_with("scenes/bad.toml: "),
                "error does not name the file: {s}"
            );
            s
        }
    }
}

fn polyline(points: &str) -> String {
    format!("{MATERIAL}\n[[rods]]\nkind = \"polyline\"\nmaterial = \"m\"\npoints = {points}\n")
}

fn assert_has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "error {err:?} lacks {p:?}");
    }
}

#[test]
fn a_valid_scene_is_accepted() {
    let s = Scene::parse(
        &polyline("[[0,0,0],[1,0,0],[2,0.5,0]]"),
        Path::new("ok.toml"),
        &[],
    )
    .unwrap();
    assert_eq!(s.rods.len(), 1);
    assert_eq!(s.rods[0].points.len(), 3);
}

#[test]
fn unknown_keys_are_named_with_their_line() {
    let e = error_of(
        &format!(
            "[sim]\ndtt = 0.1\n{}",
            polyline("[[0,0,0],[1,0,0],[2,0,0]]")
        ),
        &[],
    );
    assert_has(&e, &["unknown field `dtt`", "line 2"]);
    let e = error_of(&polyline("[[0,0,0],[1,0,0],[2,0,0]]\ncolour = 3"), &[]);
    assert_has(&e, &["unknown field `colour`"]);
}

#[test]
fn missing_material_is_named() {
    let text =
        polyline("[[0,0,0],[1,0,0],[2,0,0]]").replace("material = \"m\"", "material = \"silk\"");
    assert_has(
        &error_of(&text, &[]),
        &["rods[0].material", "unknown material `silk`", "defined: m"],
    );
}

#[test]
fn too_few_vertices_and_coincident_points_are_refused() {
    assert_has(
        &error_of(&polyline("[[0,0,0],[1,0,0]]"), &[]),
        &["rods[0]", "at least 3 vertices", "got 2"],
    );
    assert_has(
        &error_of(&polyline("[[0,0,0],[1,0,0],[1,0,0],[2,0,0]]"), &[]),
        &["rods[0]", "edge 1 has zero length"],
    );
    assert_has(
        &error_of(&polyline("[[0,0,0],[1,0,0],[0,0,0]]"), &[]),
        &["rods[0]", "fold back"],
    );
}

#[test]
fn non_positive_stiffness_or_density_is_refused() {
    let text = polyline("[[0,0,0],[1,0,0],[2,0,0]]");
    assert_has(
        &error_of(
            &text.replace("twist_stiffness = 1e-3", "twist_stiffness = 0.0"),
            &[],
        ),
        &["materials.m.twist_stiffness", "must be positive"],
    );
    let physical = text.replace(
        MATERIAL,
        "[materials.m]\ndensity = -5.0\nradius = 1e-3\nyoungs_modulus = 1e9\n",
    );
    assert_has(
        &error_of(&physical, &[]),
        &["materials.m.density", "must be positive, got -5"],
    );
}

#[test]
fn nan_is_refused_with_its_path() {
    let text = polyline("[[0,0,0],[1,nan,0],[2,0,0]]");
    assert_has(
        &error_of(&text, &[]),
        &["rods[0].points[1][1]", "not a finite number"],
    );
}

#[test]
fn overrides_are_applied_and_checked() {
    let text = polyline("[[0,0,0],[1,0,0],[2,0,0]]");
    let s = Scene::parse(
        &text,
        Path::new("ok.toml"),
        &["sim.dt=1e-4".into(), "sim.substeps=3".into()],
    )
    .unwrap();
    assert_eq!((s.params.dt, s.params.substeps), (1e-4, 3));
    assert_has(
        &error_of(&text, &["sim.dt=0"]),
        &["sim.dt", "must be positive"],
    );
    assert_has(
        &error_of(&text, &["rods.4.material=m"]),
        &["--set rods.4.material=m", "no index 4"],
    );
    assert_has(
        &error_of(&text, &["rods.0.material=zz"]),
        &["unknown material `zz`"],
    );
}
