//! A probe for the strand-parallel design (docs/BENCHMARKS.md,
//! twenty-sixth session): one tridiagonal solve a strand, the core of the
//! projection's and the twist's Newton steps, in the three shapes the GPU
//! forms could give it, on the same systems:
//!
//! - `walk`: one invocation a strand, the Thomas algorithm's two walks (as
//!   the walked forms do), strands one after another in memory or
//!   interleaved by 8 (as `DataLayout::Interleaved` lays out vertices);
//! - `pcr_workgroup`: an invocation a row, parallel cyclic reduction
//!   through workgroup memory with a barrier a level (as the packed forms);
//! - `pcr_subgroup`: the same by subgroup shuffles, a strand a subgroup, no
//!   workgroup memory and no barrier (the design not built; its rows must
//!   number the subgroup's lanes: 8 on lavapipe, 32 on NVIDIA).
//!
//! Each result is checked against the Thomas algorithm in f64 on the same
//! (f32) systems, then each shape is timed over 32000 strands
//! (`STRANDS_TIMING_STRANDS`). A study, not a check of the crate's
//! kernels, so ignored:
//!
//! ```sh
//! XDG_RUNTIME_DIR=/tmp cargo test --release --test gpu_tridiagonal_probe -- --ignored --nocapture
//! ```

use std::time::Instant;
use wgpu::util::DeviceExt;

const PROBE: &str = r#"
struct Params {
    strands: u32,
    n: u32,          // rows a strand
    interleaved: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> rows: array<vec4<f32>>;        // (a, b, c, d): a x[i-1] + b x[i] + c x[i+1] = d
@group(0) @binding(2) var<storage, read_write> work: array<vec2<f32>>;  // the walk's (c', d')
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

// Row i of strand s: strands one after another, or in blocks of 8 with
// the 8 strands' row i side by side (strands a multiple of 8).
fn slot(s: u32, i: u32) -> u32 {
    if (params.interleaved == 0u) {
        return s * params.n + i;
    }
    let block = s & ~7u;
    return block * params.n + i * 8u + (s - block);
}

@compute @workgroup_size(64)
fn walk(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    if (s >= params.strands) {
        return;
    }
    let n = params.n;
    var cp = 0.0;
    var dp = 0.0;
    for (var i = 0u; i < n; i++) {
        let r = rows[slot(s, i)];
        let m = r.y - r.x * cp;
        cp = r.z / m;
        dp = (r.w - r.x * dp) / m;
        work[slot(s, i)] = vec2<f32>(cp, dp);
    }
    var xn = 0.0;
    for (var k = n; k > 0u; k--) {
        let w = work[slot(s, k - 1u)];
        xn = w.y - w.x * xn;
        x[slot(s, k - 1u)] = xn;
    }
}

const IDENTITY = vec4<f32>(0.0, 1.0, 0.0, 0.0);

// One level of cyclic reduction: row r takes in the rows `stride` before
// (lo) and after (hi) it, or the identity past the strand's ends.
fn reduce(r: vec4<f32>, lo: vec4<f32>, hi: vec4<f32>) -> vec4<f32> {
    let alpha = -r.x / lo.y;
    let gamma = -r.z / hi.y;
    return vec4<f32>(
        alpha * lo.x,
        r.y + alpha * lo.z + gamma * hi.x,
        gamma * hi.z,
        r.w + alpha * lo.w + gamma * hi.w,
    );
}

var<workgroup> shared_rows: array<vec4<f32>, 64>;

// 64 / n strands a workgroup, an invocation a row (n a power of two ≤ 64).
@compute @workgroup_size(64)
fn pcr_workgroup(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = params.n;
    let s = wid.x * (64u / n) + lid / n;
    let i = lid % n;
    let live = s < params.strands;
    var r = IDENTITY;
    if (live) {
        r = rows[slot(s, i)];
    }
    for (var k = 1u; k < n; k = k * 2u) {
        shared_rows[lid] = r;
        workgroupBarrier();
        var lo = IDENTITY;
        var hi = IDENTITY;
        if (i >= k) {
            lo = shared_rows[lid - k];
        }
        if (i + k < n) {
            hi = shared_rows[lid + k];
        }
        r = reduce(r, lo, hi);
        workgroupBarrier();
    }
    if (live) {
        x[slot(s, i)] = r.w / r.y;
    }
}

// A strand a subgroup, a lane a row (n = the subgroup's size; the host
// runs it only where every subgroup has that size).
@compute @workgroup_size(64)
fn pcr_subgroup(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sub: u32,
                @builtin(num_subgroups) subs: u32,
                @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {
    let s = wid.x * subs + sub;
    let live = s < params.strands;
    var r = IDENTITY;
    if (live) {
        r = rows[slot(s, lane)];
    }
    for (var k = 1u; k < size; k = k * 2u) {
        let lo = subgroupShuffleUp(r, k);
        let hi = subgroupShuffleDown(r, k);
        r = reduce(r, select(IDENTITY, lo, lane >= k), select(IDENTITY, hi, lane + k < size));
    }
    if (live) {
        x[slot(s, lane)] = r.w / r.y;
    }
}
"#;

/// Strands' systems, weakly diagonally dominant like the projection's and
/// the twist's (a discrete Laplacian's shape): diagonal in [2, 2.2),
/// off-diagonals in [−1, −0.9] (none past the strand's ends), right-hand
/// side in [−1, 1]; rounded to f32. Their couplings decay slowly, so every
/// level of a cyclic reduction matters (`pcr_f64` below checks that one
/// level fewer is caught).
fn systems(strands: usize, n: usize) -> Vec<[f32; 4]> {
    // A small LCG: the same systems on every run.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut out = Vec::with_capacity(strands * n);
    for _ in 0..strands {
        for i in 0..n {
            let a = if i > 0 { -0.9 - 0.1 * uniform() } else { 0.0 };
            let c = if i + 1 < n {
                -0.9 - 0.1 * uniform()
            } else {
                0.0
            };
            out.push([a, 2.0 + 0.2 * uniform(), c, 2.0 * uniform() - 1.0]);
        }
    }
    out
}

/// The Thomas algorithm in f64 on one strand's rows.
fn thomas(rows: &[[f32; 4]]) -> Vec<f64> {
    let n = rows.len();
    let (mut cp, mut dp) = (vec![0.0f64; n], vec![0.0f64; n]);
    for i in 0..n {
        let [a, b, c, d] = rows[i].map(f64::from);
        let (c0, d0) = if i > 0 {
            (cp[i - 1], dp[i - 1])
        } else {
            (0.0, 0.0)
        };
        let m = b - a * c0;
        cp[i] = c / m;
        dp[i] = (d - a * d0) / m;
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        x[i] = dp[i] - cp[i] * x.get(i + 1).copied().unwrap_or(0.0);
    }
    x
}

/// Parallel cyclic reduction in f64 on one strand's rows, `levels` levels
/// (all: ⌈log₂ n⌉), the same arithmetic as the kernels' `reduce`.
fn pcr_f64(rows: &[[f32; 4]], levels: u32) -> Vec<f64> {
    let n = rows.len();
    let identity = [0.0, 1.0, 0.0, 0.0];
    let mut r: Vec<[f64; 4]> = rows.iter().map(|r| r.map(f64::from)).collect();
    for level in 0..levels {
        let k = 1usize << level;
        r = (0..n)
            .map(|i| {
                let lo = if i >= k { r[i - k] } else { identity };
                let hi = if i + k < n { r[i + k] } else { identity };
                let (alpha, gamma) = (-r[i][0] / lo[1], -r[i][2] / hi[1]);
                [
                    alpha * lo[0],
                    r[i][1] + alpha * lo[2] + gamma * hi[0],
                    gamma * hi[2],
                    r[i][3] + alpha * lo[3] + gamma * hi[3],
                ]
            })
            .collect();
    }
    r.iter().map(|r| r[3] / r[1]).collect()
}

/// κ∞ of one strand's matrix, ‖A‖∞ ‖A⁻¹‖∞, A⁻¹'s columns by the Thomas
/// algorithm in f64.
fn condition(rows: &[[f32; 4]]) -> f64 {
    let n = rows.len();
    let norm = rows
        .iter()
        .map(|r| (r[0].abs() + r[1].abs() + r[2].abs()) as f64)
        .fold(0.0, f64::max);
    let mut inverse_rows = vec![0.0f64; n];
    for j in 0..n {
        let unit: Vec<[f32; 4]> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| [r[0], r[1], r[2], if i == j { 1.0 } else { 0.0 }])
            .collect();
        for (i, v) in thomas(&unit).into_iter().enumerate() {
            inverse_rows[i] += v.abs();
        }
    }
    norm * inverse_rows.into_iter().fold(0.0, f64::max)
}

/// The largest error an f32 solve of strand `rows` (solution `x`) may
/// make: κ∞ ε |x|∞ times the backward error's constant, a few ulps for the
/// Thomas algorithm on a diagonally dominant matrix (Higham, "Accuracy and
/// Stability of Numerical Algorithms", §9.6) and a few a level for cyclic
/// reduction, so 4 (1 + log₂ n).
fn error_bound(rows: &[[f32; 4]], x: &[f64]) -> f64 {
    let n = rows.len() as f64;
    let size = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    4.0 * (1.0 + n.log2()) * condition(rows) * f32::EPSILON as f64 * size
}

/// Element of row i of strand s in the interleaved order (`slot`).
fn interleaved_slot(s: usize, i: usize, n: usize) -> usize {
    let block = s & !7;
    block * n + i * 8 + (s - block)
}

struct Probe {
    device: wgpu::Device,
    queue: wgpu::Queue,
    module: wgpu::ShaderModule,
    subgroup_size: Option<u32>,
}

impl Probe {
    /// Solve `strands` systems of `n` rows with `entry`: once to compile
    /// and for the solution (in strand order), then timed, the median of 5
    /// submissions of as many solves as make one take ~20 ms (16 to 4000),
    /// each submission's wall time over its solves (ms a solve).
    fn solve(
        &self,
        entry: &str,
        rows: &[[f32; 4]],
        strands: usize,
        n: usize,
        interleaved: bool,
    ) -> (Vec<f32>, f64) {
        let d = &self.device;
        let order = |s: usize, i: usize| {
            if interleaved {
                interleaved_slot(s, i, n)
            } else {
                s * n + i
            }
        };
        let mut laid = vec![[0.0f32; 4]; strands * n];
        for s in 0..strands {
            for i in 0..n {
                laid[order(s, i)] = rows[s * n + i];
            }
        }
        let params = [strands as u32, n as u32, interleaved as u32, 0];
        let usage = wgpu::BufferUsages::STORAGE;
        let params_buf = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: bytemuck::cast_slice(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let rows_buf = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("rows"),
            contents: bytemuck::cast_slice(&laid),
            usage,
        });
        let work = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("work"),
            size: (strands * n * 8) as u64,
            usage,
            mapped_at_creation: false,
        });
        let x_bytes = (strands * n * 4) as u64;
        let x = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("x"),
            size: x_bytes,
            usage: usage | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let read = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read"),
            size: x_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &self.module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        let layout = pipeline.get_bind_group_layout(0);
        let all = [(0, &params_buf), (1, &rows_buf), (2, &work), (3, &x)];
        // The layout the compiler derived holds only the bindings the entry
        // point uses (`work` is the walk's alone).
        let entries: Vec<_> = all
            .iter()
            .filter(|(b, _)| entry == "walk" || *b != 2)
            .map(|&(binding, buf)| wgpu::BindGroupEntry {
                binding,
                resource: buf.as_entire_binding(),
            })
            .collect();
        let group = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        let groups = match entry {
            "walk" => strands.div_ceil(64),
            "pcr_workgroup" => strands.div_ceil(64 / n),
            _ => strands.div_ceil(64 / self.subgroup_size.unwrap() as usize),
        } as u32;
        let run = |count: u32| {
            let mut encoder = d.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &group, &[]);
                for _ in 0..count {
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
            encoder.copy_buffer_to_buffer(&x, 0, &read, 0, x_bytes);
            let start = Instant::now();
            self.queue.submit([encoder.finish()]);
            d.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            start.elapsed().as_secs_f64() * 1e3
        };
        run(1);
        // Sized from 16 solves, so that the submission's own latency is
        // not what the count is made of; each solve then waits for the one
        // before (wgpu's barrier between dispatches that write the same
        // buffers), as a substep's stages do.
        let sixteen = run(16) / 16.0;
        let repeats = (20.0 / sixteen.max(1e-4)).clamp(16.0, 4000.0) as u32;
        let mut t: Vec<f64> = (0..5).map(|_| run(repeats) / repeats as f64).collect();
        t.sort_by(f64::total_cmp);
        let ms = t[2];
        let got: Vec<f32> =
            bytemuck::cast_slice(&strands::gpu::read_mapped(d, &read, x_bytes)).to_vec();
        let x = (0..strands * n).map(|k| got[order(k / n, k % n)]).collect();
        (x, ms)
    }
}

#[test]
#[ignore = "a study for a design not built: run with --ignored"]
fn tridiagonal_solves_a_strand_walked_by_workgroup_and_by_subgroup() {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("the probe needs a GPU adapter (lavapipe: apt-get install mesa-vulkan-drivers)");
    let info = adapter.get_info();
    let has_subgroups = adapter.features().contains(wgpu::Features::SUBGROUP);
    // One size the subgroup kernel can rely on.
    let subgroup_size = (has_subgroups && info.subgroup_min_size == info.subgroup_max_size)
        .then_some(info.subgroup_min_size);
    eprintln!(
        "adapter {} ({:?}, {}); subgroups: {}",
        info.name,
        info.device_type,
        info.driver_info,
        match subgroup_size {
            Some(s) => format!("{s} lanes"),
            None if has_subgroups => format!(
                "{} to {} lanes, no one size: the subgroup kernel is not run",
                info.subgroup_min_size, info.subgroup_max_size
            ),
            None => "none offered: the subgroup kernel is not run".into(),
        }
    );
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: adapter.features() & wgpu::Features::SUBGROUP,
        ..Default::default()
    }))
    .unwrap();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("tridiagonal probe"),
        source: wgpu::ShaderSource::Wgsl(PROBE.into()),
    });
    let probe = Probe {
        device,
        queue,
        module,
        subgroup_size,
    };
    let strands: usize = std::env::var("STRANDS_TIMING_STRANDS")
        .ok()
        .map_or(32000, |s| {
            s.parse().expect("STRANDS_TIMING_STRANDS: a number")
        });
    assert!(
        strands.is_multiple_of(8) && strands > 0,
        "strands a multiple of 8"
    );
    let mut sizes = vec![8usize, 32];
    if let Some(s) = subgroup_size.map(|s| s as usize)
        && !sizes.contains(&s)
        && s.is_power_of_two()
        && s <= 64
    {
        sizes.push(s);
    }
    for n in sizes {
        let rows = systems(strands, n);
        let reference: Vec<f64> = rows.chunks(n).flat_map(thomas).collect();
        let bounds: Vec<f64> = rows
            .chunks(n)
            .zip(reference.chunks(n))
            .map(|(r, x)| error_bound(r, x))
            .collect();
        // The check can fail: cyclic reduction in f64 with every level
        // gives the Thomas algorithm's solution, and with one level fewer
        // errs by more than the bound on some strand.
        let levels = n.next_power_of_two().trailing_zeros();
        let mut short_by_one_caught = false;
        for ((r, x), &bound) in rows.chunks(n).zip(reference.chunks(n)).zip(&bounds) {
            let err = |y: &[f64]| {
                // The largest difference, NaN if any is.
                y.iter()
                    .zip(x)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f64, |m, d| if d > m || d.is_nan() { d } else { m })
            };
            let full = err(&pcr_f64(r, levels));
            assert!(
                full <= 1e-6 * bound,
                "f64 reduction against Thomas: {full:e}"
            );
            let short = err(&pcr_f64(r, levels - 1));
            short_by_one_caught |= short > bound || short.is_nan();
        }
        assert!(
            short_by_one_caught,
            "{n} rows: a reduction one level short passes the bound"
        );
        let worst_kappa = rows.chunks(n).map(condition).fold(0.0, f64::max);
        let mut shapes = vec![
            ("walk", false, "walk, strands one after another"),
            ("walk", true, "walk, strands interleaved by 8"),
            ("pcr_workgroup", false, "cyclic reduction, workgroup memory"),
        ];
        if subgroup_size == Some(n as u32) {
            shapes.push(("pcr_subgroup", false, "cyclic reduction, subgroup shuffles"));
        }
        for (entry, interleaved, what) in shapes {
            let (x, ms) = probe.solve(entry, &rows, strands, n, interleaved);
            // The worst strand's error over its bound; NaN fails.
            let mut worst = 0.0f64;
            for ((got, want), &bound) in x.chunks(n).zip(reference.chunks(n)).zip(&bounds) {
                for (&g, &w) in got.iter().zip(want) {
                    let ratio = (g as f64 - w).abs() / bound;
                    assert!(
                        ratio <= 1.0,
                        "{what}, {n} rows: {g} against {w}, error over the bound {bound:.3e}"
                    );
                    worst = worst.max(ratio);
                }
            }
            eprintln!(
                "{strands} strands × {n} rows, {what}: {ms:.3} ms a solve ({:.2} ns a row), errors at most {worst:.2} of their bounds (κ∞ up to {worst_kappa:.0})",
                ms * 1e6 / (strands * n) as f64
            );
        }
    }
}
