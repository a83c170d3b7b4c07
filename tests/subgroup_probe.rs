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

/// Each invocation writes its subgroup's size, its index in it, and the
/// results of an inclusive add, a shuffle down by one, a shuffle across
/// the lane pair (xor 1) and a broadcast of the first lane, of x = its
/// local index + 1.
const PROBE: &str = r#"
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn probe(@builtin(local_invocation_index) lid: u32,
         @builtin(subgroup_invocation_id) sid: u32,
         @builtin(subgroup_size) size: u32) {
    let x = lid + 1u;
    out[lid * 6u + 0u] = size;
    out[lid * 6u + 1u] = sid;
    out[lid * 6u + 2u] = subgroupInclusiveAdd(x);
    out[lid * 6u + 3u] = subgroupShuffleDown(x, 1u);
    out[lid * 6u + 4u] = subgroupShuffleXor(x, 1u);
    out[lid * 6u + 5u] = subgroupBroadcastFirst(x);
}
"#;

const LANES: usize = 64;
const WORDS: usize = 6;

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
    read.slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let words: Vec<u32> =
        bytemuck::cast_slice(&read.slice(..).get_mapped_range().unwrap()).to_vec();

    let size = words[0] as usize;
    assert!(
        (info.subgroup_min_size as usize..=info.subgroup_max_size as usize).contains(&size)
            && size.is_power_of_two()
            && LANES.is_multiple_of(size),
        "subgroup size {size} outside the adapter's {}..{}",
        info.subgroup_min_size,
        info.subgroup_max_size
    );
    for lid in 0..LANES {
        let w = &words[lid * WORDS..(lid + 1) * WORDS];
        // Subgroups of a one-dimensional workgroup are consecutive runs of
        // `size` invocations.
        let sid = lid % size;
        let first = lid - sid;
        let x = |l: usize| (l + 1) as u32;
        assert_eq!(w[0] as usize, size, "lane {lid}: size");
        assert_eq!(w[1] as usize, sid, "lane {lid}: index in the subgroup");
        let scan: u32 = (first..=lid).map(x).sum();
        assert_eq!(w[2], scan, "lane {lid}: inclusive add");
        // Past the subgroup's last lane a shuffle down is undefined.
        if sid + 1 < size {
            assert_eq!(w[3], x(lid + 1), "lane {lid}: shuffle down");
        }
        assert_eq!(w[4], x(first + (sid ^ 1)), "lane {lid}: shuffle xor 1");
        assert_eq!(w[5], x(first), "lane {lid}: broadcast of the first lane");
    }
    eprintln!(
        "subgroups of {size}: size, index, inclusive add, shuffle down, shuffle xor and broadcast as expected"
    );
}
