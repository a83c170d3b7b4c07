//! The GPU simulator on the caller's own wgpu device, as a renderer or an
//! engine would run it: the engine makes the device, the simulator shares
//! it; the renderer draws from the simulator's world-position buffer
//! without a copy through the CPU; the game logic reads positions back
//! without blocking, a frame or more late. `cargo run --release --example
//! gpu_embedding`; `cargo test` runs it too and it checks what it prints.
//! Needs a GPU adapter (lavapipe will do).

use strands::glam::DVec3;
use strands::gpu::{GpuContext, GpuSimulator, read_mapped};
use strands::scene::Scene;
use strands::wgpu;

fn main() {
    // The engine's device: the adapter and limits it chose for itself
    // (WebGPU's defaults are enough for the simulator).
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("a GPU adapter (on a machine without a GPU: Mesa's lavapipe)");
    let (device, queue) = pollster::block_on(adapter.request_device(&Default::default()))
        .expect("a device with WebGPU's default limits");
    let ctx = GpuContext::from_device(device, queue, adapter.get_info());
    println!("on {}", ctx.describe());

    // A groom from scene text: 40 hairs on a head the engine moves.
    let scene: Scene = r#"
        [sim]
        dt = 0.016666666666666666
        substeps = "auto"
        [materials.hair]
        density = 1300.0
        radius = 6e-5
        youngs_modulus = 4e9
        [anchors.head]
        pivot = [0.0, 1.6, 0.0]
        [[colliders]]
        name = "skull"
        shape = "sphere"
        anchor = "head"
        center = [0.0, 1.6, 0.0]
        radius = 0.1
        friction = 0.3
        static_friction = 0.4
        [[rods]]
        kind = "scalp"
        name = "hair"
        material = "hair"
        start_anchor = "head"
        center = [0.0, 1.6, 0.0]
        radius = 0.1
        count = 40
        length = 0.2
        segments = 15
    "#
    .parse()
    .expect("a valid scene");
    let (rods, state) = scene.build();
    let head = rods.anchors.iter().position(|a| a.name == "head").unwrap();
    let mut sim = GpuSimulator::new(&ctx, rods, state, scene.params).expect("fits the device");
    let roots: Vec<DVec3> = (0..sim.rods().rod_count())
        .map(|r| sim.read_state().pos[sim.rods().vertices(r).start])
        .collect();

    // What the renderer binds once: per vertex a vec4 (xyz in metres, w
    // the strand's radius), refreshed at the end of every frame on the GPU.
    let world = sim.world_position_buffer().clone();

    let dt = sim.params().dt;
    let mut in_flight = None;
    let mut received = 0;
    for frame in 1..=90u32 {
        // The engine's clock: the head sways and turns; the simulator
        // interpolates the pose over the frame's substeps.
        let t = frame as f64 * dt;
        let sway = DVec3::new(0.1 * (3.0 * t).sin(), 0.0, 0.0);
        let turn = DVec3::Y * 0.5 * (2.0 * t).sin();
        sim.set_anchor_pose(head, sim.time() + dt, sway, turn)
            .expect("a pose for the end of the frame");
        sim.step();
        // Game logic wants positions, but must not stall the frame: take
        // them when they have arrived, then ask again.
        let pending = in_flight.get_or_insert_with(|| sim.read_positions_async());
        if let Some(p) = pending.try_take().expect("read-back") {
            received += 1;
            assert!(p.time <= sim.time() && p.pos.iter().all(|x| x.is_finite()));
            in_flight = None;
        }
    }
    // The last frame, waited for: the roots went with the head.
    let last = sim.read_positions_async().wait().expect("read-back");
    let pose = sim.rods().anchors[head].pose(last.time);
    for (r, root) in roots.iter().enumerate() {
        let now = last.pos[sim.rods().vertices(r).start];
        let expected = pose.point(*root);
        assert!((now - expected).length() < 1e-5, "root {r} left the head");
    }
    // What the renderer would draw: the world buffer holds the same points.
    let n = sim.rods().vertex_count();
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("check"),
        size: 16 * n as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&world, 0, &staging, 0, 16 * n as u64);
    ctx.queue.submit([encoder.finish()]);
    let drawn: Vec<[f32; 4]> =
        bytemuck::pod_collect_to_vec(&read_mapped(&ctx.device, &staging, 16 * n as u64));
    let apart = drawn
        .iter()
        .zip(&last.pos)
        .map(|(w, p)| (DVec3::new(w[0] as f64, w[1] as f64, w[2] as f64) - *p).length())
        .fold(0.0, f64::max);
    println!(
        "{n} vertices, {received} positions read back without blocking in 90 frames; \
         the drawn points are {apart:.1e} m from them"
    );
    assert!(apart < 1e-5, "the render buffer is {apart:e} m off");
    assert!(received > 0, "no read-back arrived in 90 frames");
}

#[cfg(test)]
#[test]
fn runs() {
    main();
}
