//! The collider table (shaders/contact.wgsl `collider_table_fill`,
//! src/gpu/pipelines.rs `ColliderKinds`): a CPU adapter's kernels read a
//! scene's few colliders into a table before their collider loops and pick
//! collider k's values from it by `select`; a GPU's read them at index k.
//! Nothing but where the values are read from may differ. Thirteen strands
//! hang from a head that moves and turns, across four colliders of three
//! kinds (the head, a capsule and a shoulder sphere under it, the ground),
//! so that every table entry is read, with friction and tunnelling tests.

mod common;

use std::path::Path;

use common::*;
use strands::gpu::pipelines::{ColliderKinds, TABLE_COLLIDERS};
use strands::gpu::{Form, GpuSimulator};
use strands::scene::Scene;

const SCENE: &str = r#"
[sim]
dt = 0.016666666666666666
substeps = 8
gravity = [0.0, -9.81, 0.0]

[materials.hair]
density = 1300.0
radius = 5e-5
youngs_modulus = 3.9e8
shear_modulus = 1.5e8

[anchors.head]
pivot = [0.0, 0.0, 0.0]
keyframes = [
  { t = 0.0 },
  { t = 1.0, translation = [0.3, 0.0, 0.0], rotation = [0.0, 60.0, 0.0] },
]

[[colliders]]
name = "head"
shape = "sphere"
anchor = "head"
center = [0.0, 0.0, 0.0]
radius = 0.1
friction = 0.3
static_friction = 0.4

# Across the strands' way as the head drags them along +x.
[[colliders]]
name = "bar"
shape = "capsule"
a = [0.12, -0.2, -0.2]
b = [0.12, -0.2, 0.2]
radius = 0.02
friction = 0.2
static_friction = 0.3

[[colliders]]
name = "shoulder"
shape = "sphere"
center = [-0.02, -0.24, 0.0]
radius = 0.03
friction = 0.4
static_friction = 0.5
margin = 0.001

# The longest strands grow from the head to just through the ground.
[[colliders]]
name = "ground"
shape = "plane"
point = [0.0, -0.31, 0.0]
normal = [0.0, 1.0, 0.0]
friction = 0.5

[[rods]]
kind = "scalp"
group = "hair"
material = "hair"
start_anchor = "head"
center = [0.0, 0.0, 0.0]
radius = 0.1
count = 13
length = 0.25
segments = 8
cap_angle = 80.0
up = [0.0, -1.0, 0.0]

[interaction]
groups = ["hair"]
resolution = 12
"#;

/// The table and the indexed reads give the same bits, frame by frame:
/// positions, velocities, twist, tangents, frames and contacts, in both
/// forms' contact (the walked contact inside the fused substep's second
/// half, which `Form::WalkedFrame` runs too with the grid, and the contact
/// kernel of the staged walk). A table entry picked
/// for the wrong collider, a loop short of the last collider, or a kernel
/// that reads the table before filling it would push some vertex out of
/// another collider, or out of none.
#[test]
fn collider_table_gives_the_indexed_reads_bits() {
    let ctx = gpu();
    let scene = Scene::parse(SCENE, Path::new("table.toml"), &[]).unwrap();
    let (rods, state) = scene.build();
    assert_eq!(rods.colliders.len(), TABLE_COLLIDERS);
    let kinds = ColliderKinds::of(&rods.colliders);
    assert_eq!(kinds.table as usize, TABLE_COLLIDERS);
    let tables = ctx.with_collider_tables();
    let indexed = ctx.with_indexed_colliders();
    assert!(tables.collider_tables() && !indexed.collider_tables());
    // CPU adapters read the table by default, GPUs index.
    assert_eq!(
        ctx.collider_tables(),
        ctx.info.device_type == wgpu::DeviceType::Cpu
    );
    let mut touched = 0;
    for form in [Form::WalkedFused, Form::Walked] {
        let start = |ctx: &strands::gpu::GpuContext| {
            let mut g = GpuSimulator::new(ctx, rods.clone(), state.clone(), scene.params).unwrap();
            g.set_form(form).ok().map(|_| g)
        };
        let (Some(mut a), Some(mut b)) = (start(&tables), start(&indexed)) else {
            // lavapipe's limits allow every form.
            assert!(
                ctx.info.device_type != wgpu::DeviceType::Cpu,
                "{form:?}: refused on a CPU adapter"
            );
            eprintln!("{form:?}: not run on this device");
            continue;
        };
        // Which kernels each runs: its pipelines' collider table.
        let layout = a.vertex_layout();
        assert_eq!(tables.pipelines_for(kinds, layout).kinds.table, 4);
        assert_eq!(indexed.pipelines_for(kinds, layout).kinds.table, 0);
        let mut held = 0;
        for frame in 0..4 {
            a.step_checked().expect("stable");
            b.step_checked().expect("stable");
            held += assert_same_gpu_bits(&a, &b, &format!("{form:?}, frame {frame}"));
        }
        eprintln!("{form:?}: {held} vertex contacts at the frames' ends");
        touched += held;
    }
    assert!(touched > 0, "no vertex touched a collider");
}
