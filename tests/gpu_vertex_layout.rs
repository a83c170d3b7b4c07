//! The interleaved vertex layout (src/gpu/packing.rs `VertexLayout`,
//! shaders/common.wgsl `vertex_slot`): a rod set of one length runs with its
//! rods interleaved in blocks of 8 in every per-vertex buffer, or with each
//! rod's vertices one after another, and nothing but where the values sit
//! may differ. Thirteen strands (a full block of 8 and a last block of 5)
//! of 9 vertices, clamped under a head that moves and turns, their tips on
//! the ground below it (contact and friction), in a hair–hair grid, in
//! every form the adapter runs and with each projection (the fast one, SHAKE with its start
//! positions, Jacobi with its second position buffer).

mod common;

use std::path::Path;

use common::*;
use strands::gpu::packing::VertexLayout;
use strands::gpu::{Form, GpuSimulator, read_mapped};
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

/// The raw bytes of a buffer's first `size` bytes.
fn raw(sim: &GpuSimulator, buffer: &wgpu::Buffer, size: u64) -> Vec<u8> {
    let device = &sim.context().device;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test read-back"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
    sim.context().queue.submit([encoder.finish()]);
    read_mapped(device, &staging, size)
}

/// Interleaved and consecutive give the same bits: a kernel that indexed a
/// per-vertex buffer without `vertex_slot`, or a host upload or read-back
/// out of step with it, would hand some vertex another rod's values (the
/// rods of a block lie side by side), moving it by centimetres, and a last
/// block laid out as a full one would put its rods' vertices on one
/// another's. The positions buffer is checked element by element against
/// the documented rule (`VertexLayout::slot`), which the equal results then
/// show the kernels follow too.
#[test]
fn interleaved_rods_give_the_consecutive_layouts_bits() {
    let ctx = gpu();
    let interleaved = ctx.with_interleaved_vertices();
    let consecutive = ctx.with_consecutive_vertices();
    // Every form with the fast projection; SHAKE (its start positions) in
    // the default form on a CPU adapter; Jacobi (its second position
    // buffer; it runs staged in any form) walked.
    for (method, form) in [
        ("fast", Form::WalkedFused),
        ("fast", Form::Walked),
        ("fast", Form::Packed),
        ("fast", Form::Fused),
        ("shake", Form::WalkedFused),
        ("jacobi", Form::Walked),
    ] {
        let t0 = std::time::Instant::now();
        let set = [format!("sim.projection.method=\"{method}\"")];
        let scene = Scene::parse(SCENE, Path::new("layout.toml"), &set).unwrap();
        let (rods, state) = scene.build();
        let nv = rods.vertex_count();
        {
            let start = |ctx: &strands::gpu::GpuContext| {
                let mut g =
                    GpuSimulator::new(ctx, rods.clone(), state.clone(), scene.params).unwrap();
                // None: a fused form the device's limits refuse.
                g.set_form(form).ok().map(|_| g)
            };
            let (Some(mut a), Some(mut b)) = (start(&interleaved), start(&consecutive)) else {
                eprintln!("{method}, {form:?}: not run on this device");
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
            // Frame by frame: the contacts are the last substep's.
            let mut held = 0;
            for frame in 0..3 {
                a.step_checked().expect("stable");
                b.step_checked().expect("stable");
                let (sa, sb) = (a.read_state(), b.read_state());
                let at = format!("{method}, {form:?}, frame {frame}");
                assert_eq!(sa.pos, sb.pos, "{at}: positions");
                assert_eq!(sa.vel, sb.vel, "{at}: velocities");
                assert_eq!(sa.theta, sb.theta, "{at}: twist");
                assert_eq!(sa.ref_u, sb.ref_u, "{at}: reference frames");
                let contacts = b.read_contacts();
                assert_eq!(a.read_contacts(), contacts, "{at}: contacts");
                held += contacts.iter().filter(|c| c.depth > 0.0).count();
            }
            let travel = max_diff(&b.read_state().pos, &state.pos);
            eprintln!(
                "{method}, {form:?}: moved up to {travel:.3e} m, {held} vertex contacts ({:.1} s)",
                t0.elapsed().as_secs_f64()
            );
            assert!(travel > 1e-3, "{method}, {form:?}: nothing moved");
            assert!(held > 0, "{method}, {form:?}: no vertex touched the ground");
            // Element slot(v) of the interleaved buffer is element v of the
            // consecutive one (32 bytes a position).
            let size = (nv * 32) as u64;
            let (ra, rb) = (
                raw(&a, a.position_buffer(), size),
                raw(&b, b.position_buffer(), size),
            );
            for v in 0..nv {
                let s = a.vertex_layout().slot(v);
                assert_eq!(
                    ra[32 * s..32 * s + 32],
                    rb[32 * v..32 * v + 32],
                    "{method}, {form:?}: vertex {v} is not at element {s}"
                );
            }
        }
    }
}
