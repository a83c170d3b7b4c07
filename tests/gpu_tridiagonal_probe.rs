//! A probe for the strand-parallel design (docs/BENCHMARKS.md,
//! twenty-sixth session): one tridiagonal solve a strand, the core of the
//! projection's and the twist's Newton steps, in the three shapes the GPU
//! forms could give it, on the same systems:
//!
//! - `walk`: one invocation a strand, the Thomas algorithm's two walks (as
//!   the walked forms do), strands one after another in memory or
//!   interleaved by 8 (as `packing::VertexLayout` lays out vertices);
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

/// κ∞ of one strand's matrix, ‖A‖∞ ‖A⁻¹‖∞.
fn condition(rows: &[[f32; 4]]) -> f64 {
    let norm = rows
        .iter()
        .map(|r| (r[0].abs() + r[1].abs() + r[2].abs()) as f64)
        .fold(0.0, f64::max);
    norm * inverse_norm(rows)
}

/// ‖A⁻¹‖∞ of one strand's matrix, A⁻¹'s columns by the Thomas algorithm in
/// f64.
fn inverse_norm(rows: &[[f32; 4]]) -> f64 {
    let n = rows.len();
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
    inverse_rows.into_iter().fold(0.0, f64::max)
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

/// A probe's buffers: its parameters (uniform), the strands' rows laid
/// out by `slot` (strand, row) → element, `work` of `work_row_bytes` a
/// row, the solution `x` and a buffer to read it back through.
struct ProbeBuffers {
    params: wgpu::Buffer,
    rows: wgpu::Buffer,
    work: wgpu::Buffer,
    x: wgpu::Buffer,
    read: wgpu::Buffer,
    x_bytes: u64,
}

impl ProbeBuffers {
    fn new(
        device: &wgpu::Device,
        params: [u32; 4],
        rows: &[[f32; 4]],
        n: usize,
        work_row_bytes: usize,
        slot: impl Fn(usize, usize) -> usize,
    ) -> ProbeBuffers {
        let mut laid = vec![[0.0f32; 4]; rows.len()];
        for (k, row) in rows.iter().enumerate() {
            laid[slot(k / n, k % n)] = *row;
        }
        let usage = wgpu::BufferUsages::STORAGE;
        let x_bytes = (rows.len() * 4) as u64;
        let plain = |label, size, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        ProbeBuffers {
            params: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::cast_slice(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            }),
            rows: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("rows"),
                contents: bytemuck::cast_slice(&laid),
                usage,
            }),
            work: plain("work", (rows.len() * work_row_bytes) as u64, usage),
            x: plain("x", x_bytes, usage | wgpu::BufferUsages::COPY_SRC),
            read: plain(
                "read",
                x_bytes,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            x_bytes,
        }
    }
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
        let params = [strands as u32, n as u32, interleaved as u32, 0];
        let ProbeBuffers {
            params: params_buf,
            rows: rows_buf,
            work,
            x,
            read,
            x_bytes,
        } = ProbeBuffers::new(d, params, rows, n, 8, order);
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

/// The adapter's device, with subgroups where it offers them, and the one
/// subgroup size the subgroup kernels can rely on (none where it offers no
/// subgroups or a range of sizes).
fn probe_device() -> (wgpu::Device, wgpu::Queue, Option<u32>) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("the probe needs a GPU adapter (lavapipe: apt-get install mesa-vulkan-drivers)");
    let info = adapter.get_info();
    let has_subgroups = adapter.features().contains(wgpu::Features::SUBGROUP);
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
                "{} to {} lanes, no one size: the subgroup kernels are not run",
                info.subgroup_min_size, info.subgroup_max_size
            ),
            None => "none offered: the subgroup kernels are not run".into(),
        }
    );
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: adapter.features() & wgpu::Features::SUBGROUP,
        ..Default::default()
    }))
    .unwrap();
    (device, queue, subgroup_size)
}

#[test]
#[ignore = "a study for a design not built: run with --ignored"]
fn tridiagonal_solves_a_strand_walked_by_workgroup_and_by_subgroup() {
    let (device, queue, subgroup_size) = probe_device();
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

// --- The chain probe: what a walk's chain costs against a strand split over
// lanes (docs/BENCHMARKS.md, thirty-second session). ---
//
// On the H200, walked-frame takes as long a substep for 2,000 strands as for
// 4,000 (thirtieth session): its time is one invocation's chain of dependent
// steps along its rod, ~40 walks a substep. One dispatch here runs `solves`
// tridiagonal solves a strand one after another, each reading the solution
// the one before wrote (the right-hand side d + β x, as a walk reads the
// positions the walk before moved), in the shapes a walked form could take:
//
// - `chain_walk`: one invocation a strand, the Thomas algorithm's two walks
//   (the walked forms' shape);
// - `chain_walk_ahead`: the same with each walk's loads issued two rows
//   ahead (the loads-ahead experiment of the thirty-first session);
// - `chain_split`: `LANES` invocations a strand (a pipeline constant), each
//   taking a run of n / LANES rows through the partition method: a forward
//   and a backward elimination along its run, a tridiagonal system of one
//   row a lane for the runs' last unknowns solved by cyclic reduction in
//   subgroup shuffles, and the run's unknowns from its two neighbours'
//   (a rod split among invocations; at LANES = n, cyclic reduction alone).
//
// Every shape reads and writes the same elements in a layout where a warp's
// 32 lanes read 32 adjacent elements at each step (`chain_slot`).

const CHAIN: &str = r#"
override LANES: u32 = 1u;  // invocations a strand (`chain_split`)
const WARP: u32 = 32u;     // elements a step of a block's lanes reads side by side

struct Params {
    strands: u32,
    n: u32,       // rows a strand, a multiple of LANES
    solves: u32,  // solves a dispatch, one after another
    beta: f32,    // right-hand side d + beta x, x the solve before's
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> rows: array<vec4<f32>>;        // (a, b, c, d)
@group(0) @binding(2) var<storage, read_write> work: array<vec4<f32>>;  // what the way back needs
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

// Row i of strand s: blocks of WARP / LANES strands, each strand's rows in
// LANES runs of m = n / LANES; step t of the block's WARP invocations (run
// j of strand s taking its row j m + t) reads WARP adjacent elements.
fn chain_slot(s: u32, i: u32) -> u32 {
    let m = params.n / LANES;
    let per = WARP / LANES;
    return (s / per) * (per * params.n) + (i % m) * WARP + (s % per) * LANES + i / m;
}

@compute @workgroup_size(64)
fn chain_walk(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    if (s >= params.strands) {
        return;
    }
    let n = params.n;
    for (var k = 0u; k < params.solves; k++) {
        var cp = 0.0;
        var dp = 0.0;
        for (var i = 0u; i < n; i++) {
            let r = rows[chain_slot(s, i)];
            let d = r.w + params.beta * x[chain_slot(s, i)];
            let inv = 1.0 / (r.y - r.x * cp);
            cp = r.z * inv;
            dp = (d - r.x * dp) * inv;
            work[chain_slot(s, i)] = vec4<f32>(cp, dp, 0.0, 0.0);
        }
        var xn = 0.0;
        for (var i = n; i > 0u; i--) {
            let w = work[chain_slot(s, i - 1u)];
            xn = w.y - w.x * xn;
            x[chain_slot(s, i - 1u)] = xn;
        }
    }
}

// `chain_walk` with each walk's loads two rows ahead of the row they are for
// (the last two rows' loads repeat the last row's).
@compute @workgroup_size(64)
fn chain_walk_ahead(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    if (s >= params.strands) {
        return;
    }
    let n = params.n;
    let last = n - 1u;
    for (var k = 0u; k < params.solves; k++) {
        var cp = 0.0;
        var dp = 0.0;
        var r0 = rows[chain_slot(s, 0u)];
        var x0 = x[chain_slot(s, 0u)];
        var r1 = rows[chain_slot(s, min(1u, last))];
        var x1 = x[chain_slot(s, min(1u, last))];
        for (var i = 0u; i < n; i++) {
            let r = r0;
            let xi = x0;
            r0 = r1;
            x0 = x1;
            r1 = rows[chain_slot(s, min(i + 2u, last))];
            x1 = x[chain_slot(s, min(i + 2u, last))];
            let d = r.w + params.beta * xi;
            let inv = 1.0 / (r.y - r.x * cp);
            cp = r.z * inv;
            dp = (d - r.x * dp) * inv;
            work[chain_slot(s, i)] = vec4<f32>(cp, dp, 0.0, 0.0);
        }
        var xn = 0.0;
        var w0 = work[chain_slot(s, last)];
        var w1 = work[chain_slot(s, last - min(1u, last))];
        for (var i = n; i > 0u; i--) {
            let w = w0;
            w0 = w1;
            w1 = work[chain_slot(s, i - 1u - min(2u, i - 1u))];
            xn = w.y - w.x * xn;
            x[chain_slot(s, i - 1u)] = xn;
        }
    }
}

const IDENTITY = vec4<f32>(0.0, 1.0, 0.0, 0.0);

// One level of cyclic reduction (the `reduce` of the single-solve probe).
fn chain_reduce(r: vec4<f32>, lo: vec4<f32>, hi: vec4<f32>) -> vec4<f32> {
    let alpha = -r.x / lo.y;
    let gamma = -r.z / hi.y;
    return vec4<f32>(alpha * lo.x, r.y + alpha * lo.z + gamma * hi.x, gamma * hi.z, r.w + alpha * lo.w + gamma * hi.w);
}

// Run j of strand s is rows p = j m … p + m − 1; y₋ = x[p − 1] (the run
// before's last unknown) and y₊ = x[p + m − 1] (its own last).
// Forward: xᵢ + αᵢ y₋ + γᵢ xᵢ₊₁ = δᵢ (α₋₁ = −1, so α₀ = a₀/b₀).
// Backward: xᵢ = Dᵢ − Aᵢ y₋ − Cᵢ y₊ (A = 0, C = −1, D = 0 at the last row;
// Aᵢ = αᵢ − γᵢ Aᵢ₊₁, Cᵢ = −γᵢ Cᵢ₊₁, Dᵢ = δᵢ − γᵢ Dᵢ₊₁).
// The run's last row, with the next run's first unknown x[p + m] = D₀' −
// A₀' y₊ − C₀' y₊' (the next run's values, primed), is row j of a
// tridiagonal system in the runs' last unknowns:
//   α y₋ + (1 − γ A₀') y₊ − γ C₀' y₊' = δ − γ D₀'   (α, γ, δ of row p + m − 1).
// The lanes of a strand are LANES consecutive lanes of a subgroup (the
// kernel counts strands by the subgroup's own numbering).
@compute @workgroup_size(64)
fn chain_split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sub: u32,
               @builtin(num_subgroups) subs: u32,
               @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {
    let s = ((wid.x * subs + sub) * size + lane) / LANES;
    let j = lane % LANES;
    let live = s < params.strands;
    let m = params.n / LANES;
    let p = j * m;
    for (var k = 0u; k < params.solves; k++) {
        var al = -1.0;
        var ga = 0.0;
        var de = 0.0;
        for (var t = 0u; t < m; t++) {
            var r = IDENTITY;
            var xi = 0.0;
            if (live) {
                r = rows[chain_slot(s, p + t)];
                xi = x[chain_slot(s, p + t)];
            }
            let d = r.w + params.beta * xi;
            let inv = 1.0 / (r.y - r.x * ga);
            al = -r.x * al * inv;
            ga = r.z * inv;
            de = (d - r.x * de) * inv;
            if (live) {
                work[chain_slot(s, p + t)] = vec4<f32>(al, ga, de, 0.0);
            }
        }
        // The run's last row, kept for the system of the runs.
        let last = vec3<f32>(al, ga, de);
        var big_a = 0.0;
        var big_c = -1.0;
        var big_d = 0.0;
        if (live) {
            work[chain_slot(s, p + m - 1u)] = vec4<f32>(big_a, big_c, big_d, 0.0);
        }
        for (var t = m - 1u; t > 0u; t--) {
            var f = vec4<f32>(0.0);
            if (live) {
                f = work[chain_slot(s, p + t - 1u)];
            }
            big_a = f.x - f.y * big_a;
            big_c = -f.y * big_c;
            big_d = f.z - f.y * big_d;
            if (live) {
                work[chain_slot(s, p + t - 1u)] = vec4<f32>(big_a, big_c, big_d, 0.0);
            }
        }
        // The next run's first row (none after the strand's last run).
        let has_next = j + 1u < LANES;
        let next_a = select(0.0, subgroupShuffleDown(big_a, 1u), has_next);
        let next_c = select(0.0, subgroupShuffleDown(big_c, 1u), has_next);
        let next_d = select(0.0, subgroupShuffleDown(big_d, 1u), has_next);
        var row = vec4<f32>(last.x, 1.0 - last.y * next_a, -last.y * next_c, last.z - last.y * next_d);
        for (var st = 1u; st < LANES; st *= 2u) {
            let lo = subgroupShuffleUp(row, st);
            let hi = subgroupShuffleDown(row, st);
            row = chain_reduce(row, select(IDENTITY, lo, j >= st), select(IDENTITY, hi, j + st < LANES));
        }
        let own = row.w / row.y;
        let before = select(0.0, subgroupShuffleUp(own, 1u), j > 0u);
        if (live) {
            for (var t = 0u; t < m; t++) {
                let w = work[chain_slot(s, p + t)];
                x[chain_slot(s, p + t)] = w.z - w.x * before - w.y * own;
            }
        }
    }
}
"#;

/// `solves` solves of each strand in f64, the way the kernels chain them:
/// x⁰ = 0, xᵏ = A⁻¹ (d + β xᵏ⁻¹); the last, and the largest |xᵏ|∞ of each
/// strand.
fn chained(rows: &[[f32; 4]], n: usize, solves: usize, beta: f64) -> (Vec<f64>, Vec<f64>) {
    let mut out = Vec::with_capacity(rows.len());
    let mut sizes = Vec::with_capacity(rows.len() / n);
    for strand in rows.chunks(n) {
        let mut x = vec![0.0f64; n];
        let mut size = 0.0f64;
        for _ in 0..solves {
            let (mut cp, mut dp) = (0.0f64, 0.0f64);
            let mut work = vec![(0.0f64, 0.0f64); n];
            for i in 0..n {
                let [a, b, c, d] = strand[i].map(f64::from);
                let m = b - a * cp;
                cp = c / m;
                dp = (d + beta * x[i] - a * dp) / m;
                work[i] = (cp, dp);
            }
            let mut xn = 0.0;
            for i in (0..n).rev() {
                xn = work[i].1 - work[i].0 * xn;
                x[i] = xn;
            }
            size = size.max(x.iter().fold(0.0f64, |m, v| m.max(v.abs())));
        }
        out.extend_from_slice(&x);
        sizes.push(size);
    }
    (out, sizes)
}

/// Element of row i of strand s in `chain_slot`'s order.
fn chain_slot(s: usize, i: usize, n: usize, lanes: usize) -> usize {
    let m = n / lanes;
    let per = 32 / lanes;
    (s / per) * (per * n) + (i % m) * 32 + (s % per) * lanes + i / m
}

/// One dispatch of `entry` (`lanes` invocations a strand) from x = 0, read
/// back in strand order, then the median of 5 submissions' wall time a
/// dispatch (submissions of as many dispatches as take ~20 ms, 4 to 1000).
#[allow(clippy::too_many_arguments)]
fn chain_run(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    module: &wgpu::ShaderModule,
    entry: &str,
    lanes: usize,
    rows: &[[f32; 4]],
    n: usize,
    solves: u32,
    beta: f32,
) -> (Vec<f32>, f64) {
    let strands = rows.len() / n;
    let params: [u32; 4] = [strands as u32, n as u32, solves, beta.to_bits()];
    let ProbeBuffers {
        params: params_buf,
        rows: rows_buf,
        work,
        x,
        read,
        x_bytes,
    } = ProbeBuffers::new(device, params, rows, n, 16, |s, i| {
        chain_slot(s, i, n, lanes)
    });
    let constants = [("LANES", lanes as f64)];
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &constants,
            ..Default::default()
        },
        cache: None,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[(0, &params_buf), (1, &rows_buf), (2, &work), (3, &x)].map(|(binding, buf)| {
            wgpu::BindGroupEntry {
                binding,
                resource: buf.as_entire_binding(),
            }
        }),
    });
    let groups = (strands * lanes).div_ceil(64) as u32;
    let run = |count: u32, copy: bool| {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            for _ in 0..count {
                pass.dispatch_workgroups(groups, 1, 1);
            }
        }
        if copy {
            encoder.copy_buffer_to_buffer(&x, 0, &read, 0, x_bytes);
        }
        let start = Instant::now();
        queue.submit([encoder.finish()]);
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        start.elapsed().as_secs_f64() * 1e3
    };
    run(1, true);
    let got: Vec<f32> =
        bytemuck::cast_slice(&strands::gpu::read_mapped(device, &read, x_bytes)).to_vec();
    let x = (0..strands * n)
        .map(|k| got[chain_slot(k / n, k % n, n, lanes)])
        .collect();
    // Sized from 4 dispatches; each then waits for the one before (the
    // same buffers), as a frame's substeps do.
    let four = run(4, false) / 4.0;
    let repeats = (20.0 / four.max(1e-4)).clamp(4.0, 1000.0) as u32;
    let mut t: Vec<f64> = (0..5)
        .map(|_| run(repeats, false) / repeats as f64)
        .collect();
    t.sort_by(f64::total_cmp);
    (x, t[2])
}

#[test]
#[ignore = "a study for a design not built: run with --ignored"]
fn a_chain_of_solves_walked_by_an_invocation_and_split_over_lanes() {
    let (device, queue, subgroup_size) = probe_device();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("chain probe"),
        source: wgpu::ShaderSource::Wgsl(CHAIN.into()),
    });
    // A substep's ~40 walks: 20 solves of two walks each.
    let (n, solves) = (32usize, 20usize);
    let counts: Vec<usize> = std::env::var("STRANDS_CHAIN_STRANDS")
        .unwrap_or_else(|_| "2048,8000,32000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("STRANDS_CHAIN_STRANDS: numbers, comma separated")
        })
        .collect();
    for &strands in &counts {
        assert!(
            strands > 0 && strands.is_multiple_of(32),
            "STRANDS_CHAIN_STRANDS: {strands} is not a positive multiple of 32"
        );
        let rows = systems(strands, n);
        // β with ‖β A⁻¹‖∞ ≤ 1/4 on every strand: each solve's error carries
        // into the next at most a quarter of it, so the chain's error stays
        // below 4/3 of one solve's bound (`error_bound`'s, at the largest
        // |xᵏ|∞ of the chain).
        let widest = rows.chunks(n).map(inverse_norm).fold(0.0, f64::max);
        let beta = (0.25 / widest) as f32;
        let (reference, sizes) = chained(&rows, n, solves, beta as f64);
        let bounds: Vec<f64> = rows
            .chunks(n)
            .zip(&sizes)
            .map(|(r, &size)| {
                4.0 / 3.0
                    * 4.0
                    * (1.0 + (n as f64).log2())
                    * condition(r)
                    * f32::EPSILON as f64
                    * size
            })
            .collect();
        // The check can fail: one solve without the chain (β = 0) is off
        // the chain's solution by more than the bound on some strand.
        let (unchained, _) = chained(&rows, n, 1, 0.0);
        assert!(
            unchained
                .chunks(n)
                .zip(reference.chunks(n))
                .zip(&bounds)
                .any(|((u, r), &b)| u.iter().zip(r).any(|(u, r)| (u - r).abs() > b)),
            "the chain's solution is within the bound of a single solve's: the check could not see a solve that ignored the one before"
        );
        let mut shapes = vec![
            (
                "chain_walk",
                1usize,
                "walk, an invocation a strand".to_string(),
            ),
            ("chain_walk_ahead", 1, "walk, loads two rows ahead".into()),
        ];
        let mut lanes = 2;
        while lanes <= n && subgroup_size.is_some_and(|s| lanes <= s as usize) {
            shapes.push((
                "chain_split",
                lanes,
                format!("split over {lanes} lanes a strand"),
            ));
            lanes *= 2;
        }
        let mut walk_ms = None;
        for (entry, lanes, what) in shapes {
            let (x, ms) = chain_run(
                &device,
                &queue,
                &module,
                entry,
                lanes,
                &rows,
                n,
                solves as u32,
                beta,
            );
            let mut worst = 0.0f64;
            for ((got, want), &bound) in x.chunks(n).zip(reference.chunks(n)).zip(&bounds) {
                for (&g, &w) in got.iter().zip(want) {
                    let ratio = (g as f64 - w).abs() / bound;
                    assert!(
                        ratio <= 1.0,
                        "{what}, {strands} strands: {g} against {w}, error over the bound {bound:.3e}"
                    );
                    worst = worst.max(ratio);
                }
            }
            let walk = *walk_ms.get_or_insert(ms);
            eprintln!(
                "{strands} strands × {n} rows, {solves} solves a dispatch, {what}: {ms:.4} ms a dispatch ({:.3} of the walk's; {:.2} ns a row-solve), errors at most {worst:.2} of their bounds",
                ms / walk,
                ms * 1e6 / (strands * n * solves) as f64
            );
        }
    }
}
