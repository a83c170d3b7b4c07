//! A minimal embedding of the CPU reference: build a few strands in code
//! (no scene file), step, read the positions back. Also the same from TOML
//! text. `cargo run --release --example cpu_embedding`; `cargo test` runs
//! it too and it checks what it prints.

use strands::build::{EndSpec, RodSpec, try_build};
use strands::cpu::CpuSimulator;
use strands::glam::DVec3;
use strands::model::anchor::Anchor;
use strands::model::params::SimParams;
use strands::model::rods::RodMaterial;
use strands::scene::{Scene, generators};

fn main() {
    // Human hair: E = 4 GPa, ν = 0.3, ρ = 1300 kg/m³, radius 50 µm.
    let hair = RodMaterial::from_young(4e9, 0.3, 1300.0, 5e-5, 2e-4).expect("valid constants");
    // Three strands 20 cm long hanging from a fixed bar (anchor 0, the world).
    let specs: Vec<RodSpec> = (0..3)
        .map(|k| {
            let root = DVec3::new(0.05 * k as f64, 1.0, 0.0);
            let points = generators::straight_points(root, root + DVec3::new(0.2, -0.05, 0.0), 16);
            RodSpec {
                name: format!("strand{k}"),
                rest: points.clone(),
                points,
                material: hair,
                start: EndSpec::Clamped(0),
                end: EndSpec::Free,
                frame_angle: 0.0,
            }
        })
        .collect();
    let (rods, state) = try_build(&specs, vec![Anchor::world()]).expect("valid rods");
    let params = SimParams {
        dt: 1.0 / 60.0,
        substeps: 20,
        ..SimParams::default()
    };
    let mut sim = CpuSimulator::new(rods, state, params);
    for _ in 0..60 {
        sim.step().expect("a stable step");
    }
    for (r, spec) in specs.iter().enumerate() {
        let v = sim.rods.vertices(r);
        let (root, tip) = (sim.state.pos[v.start], sim.state.pos[v.end - 1]);
        println!("{}: root {root:.4}, tip {tip:.4}", sim.rods.names[r]);
        // The root stays where it was clamped; the strand falls under gravity.
        assert!((root - spec.points[0]).length() < 1e-12, "root moved");
        assert!(tip.y < spec.points[16].y - 0.05, "the tip did not fall");
    }
    // The edges keep their rest lengths (the default fast projection).
    let d = sim.diagnostics();
    assert!(d.max_strain < 1e-3, "strain {}", d.max_strain);

    // The same kind of scene from TOML text.
    let scene: Scene = r#"
        [sim]
        dt = 0.016666666666666666
        substeps = "auto"
        [materials.hair]
        density = 1300.0
        radius = 5e-5
        youngs_modulus = 4e9
        [[rods]]
        kind = "helix"
        material = "hair"
        center = [0.0, 1.0, 0.0]
        axis = [0.0, -1.0, 0.0]
        radius = 0.01
        pitch = 0.02
        turns = 4.0
        segments = 40
        start = "clamped"
    "#
    .parse()
    .expect("a valid scene");
    let (rods, state) = scene.build();
    let mut sim = CpuSimulator::new(rods, state, scene.params);
    let top = sim.state.pos[0];
    for _ in 0..30 {
        sim.step().expect("a stable step");
    }
    let n = sim.state.pos.len();
    println!(
        "curl: {} substeps per step, tip at {:.4} after {} s",
        sim.params.substeps,
        sim.state.pos[n - 1],
        sim.state.time
    );
    assert_eq!(sim.state.pos[0], top, "the clamped end stays");
}

#[cfg(test)]
#[test]
fn runs() {
    main();
}
