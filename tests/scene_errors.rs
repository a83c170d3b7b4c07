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

/// `scene` with each override of `cases` is refused with an error that
/// has all of its parts.
fn refused_with(scene: &str, cases: &[(&str, &[&str])]) {
    for (set, parts) in cases {
        let e = error_of(scene, &[set]);
        assert_has(&e, parts);
    }
}

/// `scene` with the override `set`, which it accepts.
fn parsed_with(scene: &str, set: &str) -> Scene {
    Scene::parse(scene, Path::new("ok.toml"), &[set.into()]).unwrap()
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
        &["override rods.4.material=m", "no index 4"],
    );
    assert_has(
        &error_of(&text, &["rods.0.material=zz"]),
        &["unknown material `zz`"],
    );
}

/// A wrong type inside a `[[rods]]` entry names the entry and the field
/// (and its line), not the `[[rods]]` header.
#[test]
fn wrong_types_inside_rods_name_the_field() {
    let straight = |extra: &str| {
        format!(
            "{}\n[[rods]]\nkind = \"straight\"\nmaterial = \"m\"\nfrom = [0,0,0]\nto = [1,0,0]\nsegments = 4\n{extra}\n",
            polyline("[[0,0,0],[1,0,0],[2,0.5,0]]")
        )
    };
    for (text, parts) in [
        (
            straight("").replace("segments = 4", "segments = 10.5"),
            vec!["rods[1].segments", "floating point `10.5`", "line 17"],
        ),
        (
            straight("").replace("material = \"m\"\nfrom", "material = 3\nfrom"),
            vec!["rods[1].material", "integer `3`", "expected a string"],
        ),
        (
            straight("start = true"),
            vec!["rods[1].start", "boolean `true`", "`free` or `clamped`"],
        ),
        (
            polyline("[0,0,0,1,0,0,2,0,0]"),
            vec!["rods[0].points[0]", "expected an array of length 3"],
        ),
        (
            straight("").replace("kind = \"straight\"", "kind = \"stright\""),
            vec!["rods[1].kind", "unknown kind `stright`", "`straight`"],
        ),
        (
            straight("").replace("kind = \"straight\"\n", ""),
            vec!["rods[1].kind", "is missing"],
        ),
        (
            straight("").replace("to = [1,0,0]\n", ""),
            vec!["rods[1].to", "is missing"],
        ),
    ] {
        let e = error_of(&text, &[]);
        assert_has(&e, &parts);
        assert!(!e.contains("[[rods]]\n"), "quotes the document: {e}");
    }
}

/// `--set` errors name the setting and never quote the rewritten document;
/// an override cannot invent a material.
#[test]
fn override_errors_name_the_setting() {
    let text = polyline("[[0,0,0],[1,0,0],[2,0,0]]");
    for (set, parts) in [
        (
            "sim.dt=abc",
            vec![
                "sim.dt (from override sim.dt=abc)",
                "string \"abc\", expected a number",
            ],
        ),
        (
            "materials.mm.radius=1e-3",
            vec![
                "materials.mm",
                "override materials.mm.radius=1e-3",
                "unknown material `mm`",
                "defined: m",
            ],
        ),
        (
            "sim.gravity=[0,0",
            vec![
                "sim.gravity (from override sim.gravity=[0,0)",
                "not a TOML value",
            ],
        ),
        (
            "sim.gravity=[0,-9.8]",
            vec!["sim.gravity (from override", "invalid length 2"],
        ),
        (
            "rods.0.segmnts=4",
            vec![
                "rods[0].segmnts (from override rods.0.segmnts=4)",
                "unknown field `segmnts`",
            ],
        ),
        (
            "colliders.0.radius=1",
            vec![
                "colliders (from override colliders.0.radius=1)",
                "no [[colliders]]",
            ],
        ),
    ] {
        let e = error_of(&text, &[set]);
        assert_has(&e, &parts);
        assert!(
            !e.contains('\n'),
            "a multi-line error quoting the document: {e}"
        );
    }
    // Tables of the format may still be created by an override.
    let s = Scene::parse(
        &text,
        Path::new("ok.toml"),
        &["sim.wind.velocity=[1,0,0]".into()],
    )
    .unwrap();
    assert_eq!(s.params.wind.velocity.x, 1.0);
}

/// A scene with one collider table appended.
fn with_collider(collider: &str) -> String {
    format!(
        "{}\n[[colliders]]\n{collider}\n",
        polyline("[[0,0,0],[1,0,0],[2,0.5,0]]")
    )
}

#[test]
fn bad_colliders_are_refused_naming_the_field() {
    for (collider, parts) in [
        (
            "shape = \"sphere\"\ncenter = [0,0,0]\nradius = 0.1\nanchor = \"hed\"",
            vec!["colliders[0].anchor", "unknown anchor `hed`"],
        ),
        (
            "shape = \"sphere\"\ncenter = [0,0,0]\nradius = 0.0",
            vec!["colliders[0].radius", "must be positive"],
        ),
        (
            "shape = \"capsule\"\na = [0,0,0]\nb = [1,0,0]\nradius = -1.0",
            vec!["colliders[0].radius", "must be positive"],
        ),
        (
            "shape = \"plane\"\nnormal = [0,0,0]",
            vec!["colliders[0].normal", "must not be zero"],
        ),
        (
            "shape = \"plane\"\nfriction = 0.5\nstatic_friction = 0.2",
            vec!["colliders[0].static_friction", "μs ≥ μk"],
        ),
        (
            "shape = \"plane\"\nmargin = -0.1",
            vec!["colliders[0].margin", "must not be negative"],
        ),
        (
            "shape = \"cube\"",
            vec!["colliders[0].shape", "unknown shape `cube`", "`sphere`"],
        ),
        (
            "shape = \"mesh\"\nfile = \"no-such-mesh.obj\"",
            vec!["colliders[0].file", "no-such-mesh.obj"],
        ),
    ] {
        let e = error_of(&with_collider(collider), &[]);
        assert_has(&e, &parts);
    }
}

/// Mesh files that cannot be used: unreadable or unparsable, not closed,
/// without volume. Written to a temporary directory beside a scene file.
#[test]
fn bad_mesh_files_are_refused_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("strands-bad-mesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("garbage.obj", "v 0 0 x\nf 1 2\n", "garbage.obj"),
        // A tetrahedron missing one face: not closed.
        (
            "open.obj",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 2 3 4\n",
            "open.obj",
        ),
        // Two triangles back to back: closed, no volume.
        (
            "flat.obj",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 3 2\n",
            "flat.obj",
        ),
        ("mesh.stl", "solid x\nendsolid x\n", "mesh.stl"),
    ];
    for (name, text, shown) in cases {
        std::fs::write(dir.join(name), text).unwrap();
        let scene = with_collider(&format!("shape = \"mesh\"\nfile = \"{name}\""));
        let path = dir.join("scene.toml");
        let e = Scene::parse(&scene, &path, &[])
            .expect_err(name)
            .to_string();
        eprintln!("{e}");
        assert!(e.contains("colliders[0].file") && e.contains(shown), "{e}");
        assert!(e.starts_with(&path.display().to_string()), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `[interaction]`: each bad value is refused naming its field.
#[test]
fn bad_interaction_settings_are_refused() {
    let scene = format!(
        "{}group = \"hair\"\n\n[interaction]\ngroups = [\"hair\"]\n",
        polyline("[[0,0,0],[0.1,0,0],[0.2,0,0]]")
    );
    // The scene itself is fine.
    let ok = Scene::parse(&scene, Path::new("ok.toml"), &[]).unwrap();
    assert_eq!(ok.interaction.groups.len(), 1);
    assert_eq!(ok.interaction.groups[0].name, "hair");
    let cases: &[(&str, &[&str])] = &[
        (
            "interaction.resolution=0",
            &["interaction.resolution", "positive number of cells, got 0"],
        ),
        (
            "interaction.resolution=-3",
            &["interaction.resolution", "got -3"],
        ),
        (
            "interaction.cell=0",
            &["interaction.cell", "must be positive"],
        ),
        (
            "interaction.cell=-0.01",
            &["interaction.cell", "must be positive"],
        ),
        (
            "interaction.groups=[\"hare\"]",
            &["interaction.groups[0]", "unknown group `hare`", "hair"],
        ),
        (
            "interaction.groups=[\"hair\",\"hair\"]",
            &["interaction.groups[1]", "listed twice"],
        ),
        (
            "interaction.friction_tip=1.5",
            &["interaction.friction_tip", "[0, 1]", "1.5"],
        ),
        (
            "interaction.volume_stiffness=-0.1",
            &["interaction.volume_stiffness", "[0, 1]"],
        ),
        (
            "interaction.rest_density=0",
            &["interaction.rest_density", "must be positive"],
        ),
        (
            "interaction.padding=-1",
            &["interaction.padding", "must not be negative"],
        ),
        (
            "interaction.cell=1e-5",
            &[
                "interaction",
                "group `hair`",
                "nodes",
                "above the limit of 16777216",
            ],
        ),
        ("rods.0.group=\"\"", &["rods[0].group", "must not be empty"]),
    ];
    refused_with(&scene, cases);
    // An empty list switches interaction off (`--set interaction.groups=[]`).
    assert!(
        !parsed_with(&scene, "interaction.groups=[]")
            .interaction
            .is_active()
    );
    // resolution and cell together contradict each other.
    let e = error_of(
        &scene,
        &["interaction.resolution=8", "interaction.cell=0.01"],
    );
    assert_has(&e, &["interaction.cell", "not both"]);
}

#[test]
fn bad_rod_contact_settings_are_refused() {
    let scene = format!(
        "{}group = \"rope\"\n\n[rod_contact]\ngroups = [\"rope\"]\n",
        polyline("[[0,0,0],[0.1,0,0],[0.2,0,0]]")
    );
    let ok = Scene::parse(&scene, Path::new("ok.toml"), &[]).unwrap();
    assert_eq!(ok.rod_contact.member, vec![true]);
    // The colliders' defaults: μk 0.3, μs = μk, margin 1e-4 m.
    assert_eq!(ok.rod_contact.friction, 0.3);
    assert_eq!(ok.rod_contact.static_friction, 0.3);
    assert_eq!(ok.rod_contact.margin, 1e-4);
    let cases: &[(&str, &[&str])] = &[
        (
            "rod_contact.groups=[\"hair\"]",
            &["rod_contact.groups[0]", "unknown group `hair`", "rope"],
        ),
        (
            "rod_contact.groups=[\"rope\",\"rope\"]",
            &["rod_contact.groups[1]", "listed twice"],
        ),
        (
            "rod_contact.friction=-0.1",
            &["rod_contact.friction", "-0.1"],
        ),
        (
            "rod_contact.static_friction=0.1",
            &["rod_contact.static_friction", "at least friction = 0.3"],
        ),
        (
            "rod_contact.margin=-1e-3",
            &["rod_contact.margin", "-0.001"],
        ),
        ("rod_contact.margin=1e9", &["rod_contact.margin", "m"]),
        (
            "sim.integrator=\"backward-euler\"",
            &["rod_contact", "symplectic\" only", "backward-euler"],
        ),
    ];
    refused_with(&scene, cases);
    // An empty list switches rod contact off, as for `[interaction]`.
    assert!(
        !parsed_with(&scene, "rod_contact.groups=[]")
            .rod_contact
            .is_active()
    );
}

/// Iteration counts of 0 are refused, not silently raised to 1.
#[test]
fn zero_iterations_are_refused() {
    let text = polyline("[[0,0,0],[1,0,0],[2,0,0]]");
    assert_has(
        &error_of(&text, &["sim.twist_max_iterations=0"]),
        &["sim.twist_max_iterations", "must be at least 1"],
    );
    assert_has(
        &error_of(&text, &["sim.projection.max_iterations=0"]),
        &["sim.projection.max_iterations", "must be at least 1"],
    );
    let s = Scene::parse(
        &text,
        Path::new("ok.toml"),
        &["sim.twist_max_iterations=1".into()],
    )
    .unwrap();
    assert_eq!(s.params.twist_max_iterations, 1);
}

/// Finite but absurd values are refused at load naming the field, instead of
/// turning into NaN or a zero limit later.
#[test]
fn absurd_values_are_refused_naming_the_field() {
    let text = polyline("[[0,0,0],[1,0,0],[2,0,0]]");
    let physical = text.replace(
        MATERIAL,
        "[materials.m]\ndensity = 1000.0\nradius = 1e-3\nyoungs_modulus = 1e9\n",
    );
    for (scene, set, parts) in [
        (
            &physical,
            "materials.m.radius=1e-300",
            vec!["materials.m.radius", "at least 1e-9 m", "1e-300"],
        ),
        (
            &physical,
            "materials.m.radius=1e100",
            vec!["materials.m.radius", "at most 1e1 m"],
        ),
        (
            &physical,
            "materials.m.youngs_modulus=1e300",
            vec!["materials.m.youngs_modulus", "at most"],
        ),
        (
            &physical,
            "materials.m.density=1e-30",
            vec!["materials.m.density", "at least"],
        ),
        (
            &text,
            "rods.0.points=[[0,0,0],[1e200,0,0],[2e200,0,0]]",
            vec!["rods[0].points[1][0]", "±1e6 m"],
        ),
        (
            &text,
            "materials.m.twist_stiffness=1e300",
            vec!["materials.m.twist_stiffness", "at most"],
        ),
        (&text, "sim.dt=1e-300", vec!["sim.dt", "at least 1e-9 s"]),
        (
            &text,
            "sim.gravity=[0,-1e300,0]",
            vec!["sim.gravity[1]", "within"],
        ),
        (
            &text,
            "sim.max_speed=1e300",
            vec!["sim.max_speed", "at most"],
        ),
        (
            &text,
            "sim.projection.max_iterations=4000000000",
            vec!["sim.projection.max_iterations", "at most 10000"],
        ),
        (
            &text,
            "sim.wind.velocity=[1e10,0,0]",
            vec!["sim.wind.velocity[0]", "within"],
        ),
        (&text, "anchors.a.pivot=[0,0,0]", vec!["unknown anchor `a`"]),
    ] {
        let e = error_of(scene, &[set]);
        assert_has(&e, &parts);
    }
    // The bounds themselves are accepted.
    Scene::parse(
        &physical,
        Path::new("ok.toml"),
        &["materials.m.radius=1e-9".into()],
    )
    .unwrap();
    Scene::parse(
        &physical,
        Path::new("ok.toml"),
        &["materials.m.radius=10".into()],
    )
    .unwrap();
}

/// `method = "shake"` takes fast projection's tolerance and iteration cap,
/// and refuses a tolerance that is not positive as fast projection does.
#[test]
fn shake_projection_is_read_and_checked() {
    let text = polyline("[[0,0,0],[1,0,0],[2,0.5,0]]");
    let o = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let s = Scene::parse(
        &text,
        Path::new("ok.toml"),
        &o(&[
            "sim.projection.method=\"shake\"",
            "sim.projection.tolerance=1e-8",
            "sim.projection.max_iterations=7",
        ]),
    )
    .unwrap();
    assert_eq!(
        s.params.projection,
        strands::model::params::Projection::Shake {
            tolerance: 1e-8,
            max_iterations: 7
        }
    );
    let e = error_of(
        &text,
        &[
            "sim.projection.method=\"shake\"",
            "sim.projection.tolerance=0",
        ],
    );
    assert_has(&e, &["sim.projection.tolerance"]);
}

/// A scene built from text in memory (`str::parse`, `Scene::parse_str`):
/// errors name the text as the caller called it, mesh files are found under
/// the folder given, and a physical `[materials]` entry is the material
/// `RodMaterial::from_young` makes from the same constants (E πr⁴/4,
/// G πr⁴/2 with G = E/(2(1+ν)), ρπr²).
#[test]
fn a_scene_from_a_string() {
    let text = r#"
        [materials.hair]
        density = 1300.0
        radius = 5e-5
        youngs_modulus = 4e9
        poisson_ratio = 0.35
        drag = 2e-4
        [[rods]]
        kind = "helix"
        material = "hair"
        center = [0.0, 0.0, 0.0]
        radius = 0.01
        pitch = 0.02
        turns = 2.0
        segments = 20
    "#;
    let scene: Scene = text.parse().unwrap();
    let want =
        strands::model::rods::RodMaterial::from_young(4e9, 0.35, 1300.0, 5e-5, 2e-4).unwrap();
    assert_eq!(scene.rods[0].material, want);
    let pts = strands::scene::generators::helix_points(
        glam::DVec3::ZERO,
        glam::DVec3::Z,
        0.01,
        0.02,
        2.0,
        20,
    );
    assert_eq!(scene.rods[0].points, pts);
    let e = "[sim]\ndt = -1.0\n"
        .parse::<Scene>()
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("(string): sim.dt"), "{e}");
    let e = Scene::parse_str("[sim]\ndt = -1.0\n", "engine head", Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("engine head: sim.dt"), "{e}");
    // A mesh collider is read relative to the base folder.
    let mesh = format!(
        "{}\n[[colliders]]\nshape = \"mesh\"\nfile = \"bust.obj\"\n",
        polyline("[[0,2,0],[0.1,2,0],[0.2,2,0]]")
    );
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let s = Scene::parse_str(&mesh, "in memory", &base).unwrap();
    assert_eq!(s.colliders.len(), 1);
    let e = Scene::parse_str(&mesh, "in memory", Path::new("/nonexistent"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("colliders[0].file") && e.contains("/nonexistent/bust.obj"),
        "{e}"
    );
}
