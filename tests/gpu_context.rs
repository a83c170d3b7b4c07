//! The library runs on a device the caller made (an engine, the demo) with
//! WebGPU's default limits, and refuses a scene bigger than a storage-buffer
//! binding with an error naming the limit.

mod common;

use common::*;
use strands::build::{EndSpec, build};
use strands::gpu::layout::FUSED_STORAGE_BUFFERS;
use strands::gpu::{Form, GpuContext, GpuError, GpuSimulator, choose_adapter};
use strands::model::params::SimParams;

fn caller_device(limits: wgpu::Limits) -> GpuContext {
    caller_device_with(limits, wgpu::Features::empty())
}

/// A device the caller made with `limits` and those of `features` the
/// adapter has.
fn caller_device_with(limits: wgpu::Limits, features: wgpu::Features) -> GpuContext {
    pollster::block_on(async {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = choose_adapter(&instance, None)
            .await
            .unwrap_or_else(|e| panic!("GPU tests need a GPU adapter: {e}"));
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("caller's device"),
                required_features: adapter.features() & features,
                required_limits: limits,
                ..Default::default()
            })
            .await
            .expect("device with the requested limits");
        as_asked(GpuContext::from_device(device, queue, adapter.get_info()))
    })
}

fn rods(count: usize, n: usize) -> Vec<strands::build::RodSpec> {
    let mut rng = rng(9);
    (0..count)
        .map(|_| random_rod(&mut rng, n, EndSpec::Clamped(0), EndSpec::Free))
        .collect()
}

/// Same scene on the caller's default-limits device and on the library's
/// own device with the same kernels (the bending stencil in f32: the
/// caller asked for no f64): bit-identical states after 10 steps. A caller
/// that asks for `SHADER_F64` gets the f64 stencil where the adapter has it.
#[test]
fn runs_on_a_callers_default_device() {
    let specs = rods(8, 12);
    let params = SimParams::default();
    let theirs_ctx = caller_device(wgpu::Limits::default());
    assert!(!theirs_ctx.stencil_f64());
    let with_f64 = caller_device_with(wgpu::Limits::default(), wgpu::Features::SHADER_F64);
    assert_eq!(
        with_f64.stencil_f64(),
        with_f64
            .device
            .features()
            .contains(wgpu::Features::SHADER_F64)
    );
    // The same kernels on both: the caller's default limits rule out the
    // fused forms, which the library's own device runs by default.
    let form = GpuSimulator::default_form(&theirs_ctx);
    assert_eq!(form, Form::Walked);
    let run = |ctx: &GpuContext| {
        let (r, s) = build(&specs, vec![strands::model::anchor::Anchor::world()]);
        let mut sim = GpuSimulator::new(ctx, r, s, params).expect("simulator on this device");
        sim.set_form(form).unwrap();
        for _ in 0..10 {
            sim.step();
        }
        sim.read_state()
    };
    let theirs = run(&theirs_ctx);
    let ours = run(&gpu().with_f32_stencil());
    assert!(max_diff(&theirs.pos, &ours.pos) == 0.0);
    assert_eq!(theirs.theta, ours.theta);
    assert!(theirs.pos.iter().all(|p| p.is_finite()));
}

/// The fused forms' kernels need 15 storage buffers each: on a device with
/// WebGPU's defaults (8) asking for either fused form is refused, naming
/// the limit, and the simulator keeps its form and runs; on the library's
/// own device (the adapter's full limits, 32 storage buffers on lavapipe)
/// it is granted.
#[test]
fn fused_form_needs_the_limits_it_names() {
    let specs = rods(4, 8);
    let make = |ctx: &GpuContext| {
        let (r, s) = build(&specs, vec![strands::model::anchor::Anchor::world()]);
        GpuSimulator::new(ctx, r, s, SimParams::default()).unwrap()
    };
    let small_ctx = caller_device(wgpu::Limits::default());
    let full_ctx = gpu();
    for form in [Form::WalkedFused, Form::WalkedFrame] {
        let mut small = make(&small_ctx);
        let before = small.form();
        match small.set_form(form) {
            Err(GpuError::Limit {
                limit_name,
                have,
                need,
            }) => {
                assert_eq!(limit_name, "max_storage_buffers_per_shader_stage");
                assert_eq!((have, need), (8, FUSED_STORAGE_BUFFERS as u64));
            }
            other => panic!("{form}: expected a limit error, got {other:?}"),
        }
        assert_eq!(small.form(), before);
        small.step();
        assert!(small.read_state().pos.iter().all(|p| p.is_finite()));
        let mut full = make(&full_ctx);
        full.set_form(form)
            .unwrap_or_else(|e| panic!("the full limits allow {form}: {e}"));
        assert_eq!(full.form(), form);
    }
}

/// A device whose storage bindings hold 64 KiB cannot take 2000 vertices of
/// 64-byte scratch: the error names the buffer, the sizes and the limit.
#[test]
fn too_large_for_a_binding_is_refused_by_name() {
    let ctx = caller_device(wgpu::Limits {
        max_storage_buffer_binding_size: 1 << 16,
        ..wgpu::Limits::default()
    });
    let (r, s) = build(
        &rods(100, 20),
        vec![strands::model::anchor::Anchor::world()],
    );
    let err = match GpuSimulator::new(&ctx, r, s, SimParams::default()) {
        Ok(_) => panic!("a 128 KB buffer was accepted under a 64 KiB binding limit"),
        Err(e) => e,
    };
    assert!(matches!(err, GpuError::TooLarge { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("max_storage_buffer_binding_size of 65536 bytes"),
        "{msg}"
    );
    assert!(msg.contains("CPU reference (`CpuSimulator`)"), "{msg}");
}

/// More workgroups than one dispatch dimension allows are spread over a
/// second dimension: on a device limited to 4 workgroups per dimension, 300
/// rods of 3 vertices (5 workgroups of rods, 15 of vertices) give
/// bit-identical results (both with the f32 stencil, as the small device
/// asked for no f64, and both in the small device's form: another form's
/// kernels may round differently on a GPU, whose compiler contracts each
/// kernel's arithmetic its own way); a scene needing more than 4 × 4 is
/// refused.
#[test]
fn dispatches_beyond_one_dimension_cover_every_rod() {
    let small = caller_device(wgpu::Limits {
        max_compute_workgroups_per_dimension: 4,
        ..wgpu::Limits::default()
    });
    let specs = rods(300, 3);
    let form = GpuSimulator::default_form(&small);
    let run = |ctx: &GpuContext| {
        let (r, s) = build(&specs, vec![strands::model::anchor::Anchor::world()]);
        let mut sim = GpuSimulator::new(ctx, r, s, SimParams::default()).expect("simulator");
        sim.set_form(form)
            .expect("every device runs the small one's form");
        for _ in 0..3 {
            sim.step();
        }
        sim.read_state()
    };
    let split = run(&small);
    let whole = run(&gpu().with_f32_stencil());
    assert_eq!(split.pos, whole.pos);
    assert_eq!(split.theta, whole.theta);
    // Every rod moved (a rod no invocation reached would stay put).
    let (r, s0) = build(&specs, vec![strands::model::anchor::Anchor::world()]);
    for k in 0..r.rod_count() {
        let v = r.vertices(k);
        assert!(
            max_diff(&split.pos[v.clone()], &s0.pos[v]) > 1e-5,
            "rod {k} did not move"
        );
    }
    let (r, s) = build(&rods(400, 3), vec![strands::model::anchor::Anchor::world()]);
    match GpuSimulator::new(&small, r, s, SimParams::default()) {
        Err(e) => assert!(
            e.to_string()
                .contains("max_compute_workgroups_per_dimension"),
            "{e}"
        ),
        Ok(_) => panic!("1200 vertices accepted with at most 4 × 4 workgroups of 64"),
    }
}

/// An interaction grid whose walked pass (`grid_velocity_box`, one
/// workgroup a z plane of every group's region) could need more workgroups
/// along a dimension than the device allows is refused when the simulator
/// is made, naming the limit and what has fewer (`buffers::check_limits`),
/// not dispatched past it: hair.toml at 48 cells is 50 planes, refused at
/// 40 workgroups a dimension and taken at 60.
#[test]
fn interaction_grid_beyond_the_dispatch_limit_is_refused() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/hair.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let set = ["interaction.resolution=48".to_string()];
    let scene = strands::scene::Scene::parse(&text, &path, &set).unwrap();
    let (rods, state) = scene.build();
    assert_eq!(rods.interaction.groups[0].dims, [50, 50, 50]);
    let make = |per_dim: u32| {
        let ctx = caller_device(wgpu::Limits {
            max_compute_workgroups_per_dimension: per_dim,
            ..wgpu::Limits::default()
        });
        GpuSimulator::new(&ctx, rods.clone(), state.clone(), scene.params).map(|_| ())
    };
    let err = make(40).expect_err("50 planes with at most 40 workgroups a dimension");
    let msg = err.to_string();
    assert!(
        msg.contains("allows 40 for max_compute_workgroups_per_dimension")
            && msg.contains("nodes along z")
            && msg.contains("interaction.cell")
            && msg.ends_with("needs 50"),
        "{msg}"
    );
    make(60).expect("50 planes within 60 workgroups a dimension");
}

/// Kernels are compiled as a simulator first runs them, not all at once:
/// compiling every kernel up front held a one-strand bench's start 26.9 s
/// on lavapipe with a cold cache and, on an H200 with a cold cache, 58 s
/// (`pipelines::Pipelines`), so a simulator in the walked fused form compiles
/// none of the staged walk's kernels, and switching to the staged walk
/// (`Form::Walked`) and asking for its kernels (`compile_kernels`) compiles
/// them, and still not the whole frame's (`Form::WalkedFrame`). On a device
/// of its own, so that no other test's simulator compiled them first.
#[test]
fn kernels_are_compiled_as_a_form_first_runs_them() {
    use strands::gpu::layout::Kernel;
    use strands::gpu::packing::VertexLayout;
    use strands::gpu::pipelines::ColliderKinds;
    let ctx = as_asked(GpuContext::headless().expect("a GPU adapter"));
    let (r, s) = build(&rods(4, 8), vec![strands::model::anchor::Anchor::world()]);
    let pipelines = ctx.pipelines_for(ColliderKinds::of(&r.colliders), VertexLayout::of(&r));
    let mut sim = GpuSimulator::new(&ctx, r, s, SimParams::default()).expect("simulator");
    sim.set_form(Form::WalkedFused)
        .expect("the full limits allow the walked fused form");
    sim.step();
    assert!(pipelines.is_compiled(Kernel::SubstepRod));
    // (The material frame's `frames_rod` and `twist_rod` ran as the
    // simulator was made.)
    for kernel in [Kernel::ForcesRod, Kernel::Integrate, Kernel::FrameRod] {
        assert!(
            !pipelines.is_compiled(kernel),
            "{kernel:?} compiled before it ran"
        );
    }
    // `compile_kernels` compiles a form's kernels before its first step.
    sim.set_form(Form::Walked).unwrap();
    sim.compile_kernels();
    assert!(pipelines.is_compiled(Kernel::ForcesRod));
    assert!(pipelines.is_compiled(Kernel::Integrate));
    assert!(!pipelines.is_compiled(Kernel::FrameRod));
    sim.step();
    assert!(!pipelines.is_compiled(Kernel::FrameRod));
}
