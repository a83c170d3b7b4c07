//! A probe for a design not built yet (docs/BENCHMARKS.md, twenty-sixth
//! session): whether this adapter, through wgpu and naga as this crate
//! builds them, runs subgroup operations (wgpu `Features::SUBGROUP`) and
//! gets them right, for a strand-per-subgroup GPU form whose scans and
//! tridiagonal solves would use shuffles instead of workgroup memory and
//! barriers. No kernel of the crate uses subgroups, so it is a study, run
//! with `--ignored`:
//!
//! ```sh
//! cargo test --release --test subgroup_probe -- --ignored --nocapture
//! ```
//!
//! On lavapipe (Mesa 22.3.6, 2026-11-27) it passes with subgroups of 8:
//! a strand of 32 vertices would take four lanes' worth of vertices per
//! lane there, 32 lanes one each on NVIDIA, so such kernels must work for
//! any subgroup size. naga 30 refuses WGSL's `enable subgroups;` ("not yet
//! implemented") but compiles the built-ins without it once the device has
//! the feature.

use wgpu::util::DeviceExt;

/// Each invocation writes its subgroup's size, the subgroup's index in the
/// workgroup, its own index in the subgroup, and the results of an
/// inclusive add, a shuffle down by one, a shuffle across the lane pair
/// (xor 1) and a broadcast of the first lane, of x = its local index + 1.
/// Vulkan does not say which invocations share a subgroup, so the check
/// groups them by the subgroup index the kernel reports.
const PROBE: &str = r#"
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn probe(@builtin(local_invocation_index) lid: u32,
         @builtin(subgroup_id) sub: u32,
         @builtin(subgroup_invocation_id) lane: u32,
         @builtin(subgroup_size) size: u32) {
    let x = lid + 1u;
    out[lid * 7u + 0u] = size;
    out[lid * 7u + 1u] = sub;
    out[lid * 7u + 2u] = lane;
    out[lid * 7u + 3u] = subgroupInclusiveAdd(x);
    out[lid * 7u + 4u] = subgroupShuffleDown(x, 1u);
    out[lid * 7u + 5u] = subgroupShuffleXor(x, 1u);
    out[lid * 7u + 6u] = subgroupBroadcastFirst(x);
}
"#;

const LANES: usize = 64;
const WORDS: usize = 7;

#[test]
#[ignore = "a study for a design not built: run with --ignored"]
fn subgroup_operations_are_right_at_the_adapters_size() {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("the probe needs a GPU adapter (lavapipe: apt-get install mesa-vulkan-drivers)");
    let info = adapter.get_info();
    eprintln!(
        "adapter {} ({:?}, {}), subgroups of {} to {} lanes",
        info.name,
        info.device_type,
        info.driver_info,
        info.subgroup_min_size,
        info.subgroup_max_size
    );
    assert!(
        adapter.features().contains(wgpu::Features::SUBGROUP),
        "{} does not offer wgpu's SUBGROUP feature",
        info.name
    );
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: wgpu::Features::SUBGROUP,
        ..Default::default()
    }))
    .unwrap();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("subgroup probe"),
        source: wgpu::ShaderSource::Wgsl(PROBE.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("subgroup probe"),
        layout: None,
        module: &module,
        entry_point: Some("probe"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bytes = (LANES * WORDS * 4) as u64;
    let out = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("probe out"),
        contents: bytemuck::cast_slice(&[u32::MAX; LANES * WORDS]),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe read"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: out.as_entire_binding(),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&out, 0, &read, 0, bytes);
    queue.submit([encoder.finish()]);
    let words: Vec<u32> =
        bytemuck::cast_slice(&strands::gpu::read_mapped(&device, &read, bytes)).to_vec();

    let size = words[0] as usize;
    assert!(
        (info.subgroup_min_size as usize..=info.subgroup_max_size as usize).contains(&size)
            && size.is_power_of_two()
            && LANES.is_multiple_of(size),
        "subgroup size {size} outside the adapter's {}..{}",
        info.subgroup_min_size,
        info.subgroup_max_size
    );
    // x of each (subgroup, lane), from what each invocation reported.
    let mut x_at = std::collections::HashMap::new();
    for lid in 0..LANES {
        let w = &words[lid * WORDS..(lid + 1) * WORDS];
        assert_eq!(w[0] as usize, size, "invocation {lid}: size");
        assert!(
            (w[2] as usize) < size,
            "invocation {lid}: lane {} of {size}",
            w[2]
        );
        let earlier = x_at.insert((w[1], w[2]), lid as u32 + 1);
        assert!(
            earlier.is_none(),
            "two invocations in lane {} of subgroup {}",
            w[2],
            w[1]
        );
    }
    assert_eq!(x_at.len(), LANES);
    for lid in 0..LANES {
        let w = &words[lid * WORDS..(lid + 1) * WORDS];
        let (sub, lane) = (w[1], w[2]);
        let x = |l: u32| x_at[&(sub, l)];
        let scan: u32 = (0..=lane).map(x).sum();
        assert_eq!(w[3], scan, "invocation {lid}: inclusive add");
        // Past the subgroup's last lane a shuffle down is undefined.
        if (lane as usize) + 1 < size {
            assert_eq!(w[4], x(lane + 1), "invocation {lid}: shuffle down");
        }
        assert_eq!(w[5], x(lane ^ 1), "invocation {lid}: shuffle xor 1");
        assert_eq!(w[6], x(0), "invocation {lid}: broadcast of the first lane");
    }
    // Where the subgroups are consecutive runs of the workgroup's
    // invocations (lavapipe's and NVIDIA's, not a promise of Vulkan's).
    let consecutive = (0..LANES).all(|lid| {
        let w = &words[lid * WORDS..(lid + 1) * WORDS];
        w[1] as usize == lid / size && w[2] as usize == lid % size
    });
    eprintln!("subgroups are consecutive runs of invocations: {consecutive}");
    eprintln!(
        "subgroups of {size}: size, index, inclusive add, shuffle down, shuffle xor and broadcast as expected"
    );
}
