//! An engine-like loop: the game moves the head every frame on its own
//! clock and the simulation follows, interpolating the head's pose over the
//! substeps; once, the character teleports (a respawn, a cut) and the hair
//! comes along without a bounce. `cargo run --release --example
//! engine_loop`; `cargo test` runs it too and it checks that the strands
//! stay on the head.

use strands::cpu::CpuSimulator;
use strands::glam::{DQuat, DVec3};
use strands::model::rods::EndCondition;
use strands::scene::Scene;

const SCENE: &str = r#"
[sim]
dt = 0.016666666666666666   # the engine's frame
substeps = "auto"

[materials.hair]
density = 1300.0
radius = 6e-5
youngs_modulus = 4e9
drag = 3e-4

[anchors.head]
pivot = [0.0, 1.6, 0.0]     # the engine sets its pose every frame

[[colliders]]
shape = "sphere"
anchor = "head"
center = [0.0, 1.6, 0.0]
radius = 0.09

[[rods]]
kind = "scalp"
material = "hair"
start_anchor = "head"
center = [0.0, 1.6, 0.0]
radius = 0.1
count = 24
length = 0.2
segments = 12
cap_angle = 60.0
"#;

/// The game's head motion relative to where the character stands: a sway
/// and a turn of the head, 0.5 Hz.
fn sway(t: f64) -> (DVec3, f64) {
    let w = std::f64::consts::TAU * 0.5;
    (
        DVec3::new(0.15 * (w * t).sin(), 0.0, 0.0),
        0.5 * (w * t).sin(),
    )
}

fn main() {
    let scene: Scene = SCENE.parse().expect("a valid scene");
    let (rods, state) = scene.build();
    let mut sim = CpuSimulator::new(rods, state, scene.params);
    let head = sim.anchor_index("head").expect("the scene has a head");
    let frame = scene.params.dt;
    // Where the character stands, and which way it faces (yaw, rad).
    let (mut base, mut facing) = (DVec3::ZERO, 0.0);
    let mut clock = 0.0; // the engine's clock (s)
    let mut fastest_before = 0.0f64;
    for f in 1..=240 {
        if f == 150 {
            // Respawn: 4 m away, turned a quarter turn.
            base += DVec3::new(4.0, 0.0, -1.0);
            facing += std::f64::consts::FRAC_PI_2;
            let (offset, turn) = sway(clock);
            sim.teleport_anchor(head, base + offset, DVec3::Y * (facing + turn))
                .expect("the groom moves with the head");
            println!("frame {f}: teleported to {base}");
        }
        // The pose at the end of this frame, on the engine's clock.
        let (offset, turn) = sway(clock + frame);
        sim.set_anchor_pose_quat(
            head,
            clock + frame,
            base + offset,
            DQuat::from_rotation_y(facing + turn),
        )
        .expect("a pose after now");
        let d = sim.step().expect("a stable step");
        clock += frame;
        // The roots sit on the head exactly where its pose puts them.
        let pose = sim.rods.anchors[head].pose(sim.state.time);
        for r in 0..sim.rods.rod_count() {
            let EndCondition::Clamped(c) = sim.rods.start[r] else {
                panic!("scalp strands are clamped at the root")
            };
            let v = sim.rods.vertices(r).start;
            for k in 0..2 {
                let off = (sim.state.pos[v + k] - pose.point(c.local_pos[k])).length();
                assert!(off < 1e-9, "frame {f}: rod {r} is {off} m off the head");
            }
        }
        assert!(d.max_strain < 1e-3, "frame {f}: strain {}", d.max_strain);
        if f < 150 {
            fastest_before = fastest_before.max(d.max_speed);
        } else if f < 160 {
            // No bounce: the turned groom swings at most as fast as the sway
            // made it swing, twice (its velocity turned against the head's).
            assert!(
                d.max_speed < 2.0 * fastest_before,
                "frame {f}: {} m/s after the teleport, {fastest_before} m/s before",
                d.max_speed
            );
        }
        if f % 60 == 0 {
            println!(
                "t = {:.2} s: head at {:.3}, fastest vertex {:.3} m/s",
                sim.state.time,
                pose.offset(),
                d.max_speed
            );
        }
    }
    assert!((sim.state.time - clock).abs() < 1e-9, "the clocks agree");
}

#[cfg(test)]
#[test]
fn runs() {
    main();
}
