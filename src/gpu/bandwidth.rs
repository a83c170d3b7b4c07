//! The device's practical memory bandwidth: a large device-to-device copy by
//! a trivial compute kernel (`shaders/bandwidth.wgsl`, `copy`), timed like
//! the simulation (timestamp queries around the compute pass where the
//! device has them, else the wall time of submitting and waiting). Bytes
//! read plus bytes written per second. `strands bench` compares the modelled
//! traffic of a substep (`traffic`) with it.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{GpuContext, read_mapped};

/// Bytes of each of the two buffers copied, at most (less where the device
/// binds less). Far larger than any cache, so the copy runs from memory.
pub const COPY_BYTES: u64 = 256 << 20;
/// Copies per timed submission, and timed submissions (after one warm-up).
const COPIES_PER_PASS: u32 = 4;
const PASSES: usize = 5;
/// Invocations per workgroup of `copy` (`COPY_WORKGROUP` in the WGSL).
pub const COPY_WORKGROUP: u32 = 256;

pub const SHADER_SOURCE: &str = include_str!("../../shaders/bandwidth.wgsl");

/// What `copy_bandwidth` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyBandwidth {
    /// Bytes of each buffer: one copy reads and writes this many.
    pub buffer_bytes: u64,
    /// Bytes read + written per second, in GB/s (10⁹ B/s): the median over
    /// the timed passes.
    pub gb_per_s: f64,
    /// "gpu timestamps" or "wall clock" (submit and wait).
    pub timing: String,
}

/// Time `COPIES_PER_PASS` copies of a `COPY_BYTES` buffer (or the largest
/// the device binds) per pass, `PASSES` times after a warm-up pass.
pub fn copy_bandwidth(ctx: &GpuContext) -> CopyBandwidth {
    let device = &ctx.device;
    let limits = device.limits();
    let bytes = COPY_BYTES
        .min(limits.max_storage_buffer_binding_size)
        .min(limits.max_buffer_size)
        / 16
        * 16;
    let buffer = |label| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (src, dst) = (buffer("copy src"), buffer("copy dst"));
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("bandwidth"),
        source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("copy"),
        layout: None,
        module: &module,
        entry_point: Some("copy"),
        compilation_options: Default::default(),
        cache: None,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("copy"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: src.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: dst.as_entire_binding(),
            },
        ],
    });
    let groups = (bytes / 16).div_ceil(COPY_WORKGROUP as u64);
    let max = limits.max_compute_workgroups_per_dimension as u64;
    let (x, y) = if groups <= max {
        (groups, 1)
    } else {
        (max, groups.div_ceil(max))
    };
    let stamps = device
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY)
        .then(|| {
            let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("copy timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            });
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("copy timestamp resolve"),
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let read = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("copy timestamp read"),
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (set, resolve, read)
        });
    let pass = || -> f64 {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("copy"),
                timestamp_writes: stamps.as_ref().map(|(set, _, _)| {
                    wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }
                }),
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            for _ in 0..COPIES_PER_PASS {
                pass.dispatch_workgroups(x as u32, y as u32, 1);
            }
        }
        if let Some((set, resolve, read)) = &stamps {
            encoder.resolve_query_set(set, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, read, 0, 16);
        }
        let start = Instant::now();
        ctx.queue.submit([encoder.finish()]);
        match &stamps {
            Some((_, _, read)) => {
                let t: Vec<u64> = bytemuck::pod_collect_to_vec(&read_mapped(device, read, 16));
                let period = ctx.queue.get_timestamp_period() as f64;
                t[1].saturating_sub(t[0]) as f64 * period * 1e-9
            }
            None => {
                device
                    .poll(wgpu::PollType::wait_indefinitely())
                    .expect("GPU device lost");
                start.elapsed().as_secs_f64()
            }
        }
    };
    pass();
    let mut rates: Vec<f64> = (0..PASSES)
        .map(|_| (2 * bytes * COPIES_PER_PASS as u64) as f64 / pass() / 1e9)
        .collect();
    rates.sort_by(f64::total_cmp);
    CopyBandwidth {
        buffer_bytes: bytes,
        gb_per_s: rates[PASSES / 2],
        timing: if stamps.is_some() {
            "gpu timestamps"
        } else {
            "wall clock"
        }
        .into(),
    }
}
