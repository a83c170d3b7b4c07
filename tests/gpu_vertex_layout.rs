//! The interleaved vertex layout (src/gpu/packing.rs `VertexLayout`,
//! shaders/common.wgsl `vertex_slot`): a rod set of one length runs with its
//! rods interleaved in blocks of 8 in every per-vertex buffer, or with each
//! rod's vertices one after another, and nothing but where the values sit
//! may differ. Thirteen strands (a full block of 8 and a last block of 5)
//! of 9 vertices, clamped under a head that moves and turns, their tips on
//! the ground below it (contact and friction), in a hair–hair grid, in
//! the staged walk and the walked fused substep, and with each projection
//! (the fast one, SHAKE with its start positions, Jacobi with its second
//! position buffer).

mod common;

use std::path::Path;

use common::*;
use strands::gpu::packing::VertexLayout;
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

# The longest strands grow down from the head to just through the ground:
# contact pushes their tips out, and gravity keeps them on it as the head
# drags them across.
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

/// Interleaved and consecutive give the same bits: a kernel that indexed a
/// per-vertex buffer without `vertex_slot`, or a host upload or read-back
/// out of step with it, would hand some vertex another rod's values (the
/// rods of a block lie side by side), moving it by centimetres, and a last
/// block laid out as a full one would put its rods' vertices on one
/// another's (both checked: the run blows up). Compared frame by frame: the
/// state (positions, velocities, twist, tangents, reference frames), the
/// contacts, the positions `read_positions_async` and
/// `world_position_buffer` deliver (rod order on every device), and the
/// position buffer element by element against the documented rule
/// (`VertexLayout::slot`), which the equal results then show the kernels
/// follow too. The staged walk and the walked fused substep (which
/// `Form::WalkedFrame` runs too with the grid), each projection the kernels
/// distinguish, with the grid and without (the one-dispatch walked fused
/// substep), with the state as 64-bit words and as structs (two modules of
/// every kernel).
#[test]
fn interleaved_rods_give_the_consecutive_layouts_bits() {
    let ctx = gpu();
    let cpu_adapter = ctx.info.device_type == wgpu::DeviceType::Cpu;
    // The walked fused and staged forms with the fast projection, with the
    // grid, and walked-fused without it; SHAKE (its start positions) in the
    // default form, walked-fused; Jacobi (its second position buffer; it
    // runs staged in any form) walked.
    let fast = "sim.projection.method=\"fast\"";
    let shake = "sim.projection.method=\"shake\"";
    let jacobi = "sim.projection.method=\"jacobi\"";
    let alone = "interaction.groups=[]";
    let (with_grid, without) = ([fast], [fast, alone]);
    let mut cases = vec![
        (&with_grid[..], Form::WalkedFused),
        (&with_grid, Form::Walked),
        (&without, Form::WalkedFused),
    ];
    let (shake, jacobi) = ([shake], [jacobi]);
    cases.extend([(&shake[..], Form::WalkedFused), (&jacobi, Form::Walked)]);
    let mut contexts = vec![("", ctx.clone())];
    if ctx.wide_positions() {
        contexts.push((", structs", ctx.with_struct_positions()));
    }
    for (module, ctx) in contexts {
        let interleaved = ctx.with_interleaved_vertices();
        let consecutive = ctx.with_consecutive_vertices();
        // Vertex contacts seen at the ends of frames, over every case (where
        // the tips fly off the ground as a frame ends, a case sees none).
        let mut touched = 0;
        for &(set, form) in cases
            .iter()
            // The struct module in the default form only: llvmpipe compiles
            // every kernel anew for each module, and every case in both
            // modules once took 20 minutes on lavapipe.
            .take(if module.is_empty() { usize::MAX } else { 1 })
        {
            let t0 = std::time::Instant::now();
            let at = format!("{set:?}, {form:?}{module}");
            let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
            let scene = Scene::parse(SCENE, Path::new("layout.toml"), &set).unwrap();
            let (rods, state) = scene.build();
            let nv = rods.vertex_count();
            let start = |ctx: &strands::gpu::GpuContext| {
                let mut g =
                    GpuSimulator::new(ctx, rods.clone(), state.clone(), scene.params).unwrap();
                // None: a fused form the device's limits refuse.
                g.set_form(form).ok().map(|_| g)
            };
            let (Some(mut a), Some(mut b)) = (start(&interleaved), start(&consecutive)) else {
                // lavapipe's limits allow every form.
                assert!(!cpu_adapter, "{at}: refused on a CPU adapter");
                eprintln!("{at}: not run on this device");
                continue;
            };
            assert_eq!(
                a.vertex_layout(),
                VertexLayout {
                    interleave: 9,
                    rods: 13
                }
            );
            assert_eq!(b.vertex_layout(), VertexLayout::CONSECUTIVE);
            let mut held = 0;
            for frame in 0..3 {
                a.step_checked().expect("stable");
                b.step_checked().expect("stable");
                let at = format!("{at}, frame {frame}");
                held += assert_same_gpu_bits(&a, &b, &at);
                let sa = a.read_state();
                let pa = a.read_positions_async().wait().unwrap();
                assert_eq!(
                    pa,
                    b.read_positions_async().wait().unwrap(),
                    "{at}: read-back"
                );
                assert_eq!(pa.pos, sa.pos, "{at}: read-back against the state");
                let size = (nv * 16) as u64;
                let (ba, bb) = (
                    a.world_position_buffer().clone(),
                    b.world_position_buffer().clone(),
                );
                let (wa, wb) = (
                    read_buffer(a.context(), &ba, size),
                    read_buffer(b.context(), &bb, size),
                );
                assert_eq!(wa, wb, "{at}: world positions");
            }
            let travel = max_diff(&b.read_state().pos, &state.pos);
            eprintln!(
                "{at}: moved up to {travel:.3e} m, {held} vertex contacts ({:.1} s)",
                t0.elapsed().as_secs_f64()
            );
            assert!(travel > 1e-3, "{at}: nothing moved");
            touched += held;
            // Element slot(v) of the interleaved buffer is element v of the
            // consecutive one (32 bytes a position).
            let size = (nv * 32) as u64;
            let (ra, rb) = (
                read_buffer(a.context(), a.position_buffer(), size),
                read_buffer(b.context(), b.position_buffer(), size),
            );
            for v in 0..nv {
                let s = a.vertex_layout().slot(v);
                assert_eq!(
                    ra[32 * s..32 * s + 32],
                    rb[32 * v..32 * v + 32],
                    "{at}: vertex {v} is not at element {s}"
                );
            }
        }
        assert!(touched > 0, "{module}: no vertex touched the ground");
    }
}
