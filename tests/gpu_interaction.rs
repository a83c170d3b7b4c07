//! Hair–hair interaction on the GPU (shaders/grid.wgsl) against the CPU
//! reference (src/cpu/grid.rs, src/cpu/grid_sort.rs), kernel by kernel and
//! over whole steps:
//! * `grid_splat` builds the CPU's grid bit for bit (integer fixed point,
//!   64-bit sums, as 64-bit atomics and as pairs of 32-bit ones with
//!   carries; the same f32 positions in), so the fastest velocity and the
//!   outside count agree exactly too;
//! * `grid_velocity` and `grid_blend` compute in f32 what the CPU computes
//!   in f64: they agree to f32 rounding (bounds at each assertion);
//! * a uniform velocity field is unchanged by the blend on the GPU as well;
//! * an overflowing node is reported, the same node as the CPU's (both
//!   accumulator forms);
//! * whole steps of the bundle scene stay with the CPU.

mod common;

use std::path::Path;

use common::*;
use glam::DVec3;
use strands::backend::Simulator;
use strands::cpu::grid::{self, Blend, GridNodes};
use strands::cpu::grid_sort;
use strands::gpu::layout::{GRID_OUTSIDE, GRID_OVERFLOW, GRID_VMAX};
use strands::gpu::{GpuContext, GpuSimulator, Kernel, VertexBuffer};
use strands::model::interaction::{FRAC_BITS, GridGeometry};
use strands::model::rods::{RodSet, State};
use strands::scene::Scene;

/// 60 strands on the underside of a head, radial at the start so that they
/// fall into a hanging bundle (no strand balanced on the crown, whose fall
/// would be chaotic), in interaction; a grid of 16 cells per side so that
/// nodes hold many vertices.
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

[[colliders]]
name = "head"
shape = "sphere"
center = [0.0, 0.0, 0.0]
radius = 0.1

[[rods]]
kind = "scalp"
group = "hair"
material = "hair"
center = [0.0, 0.0, 0.0]
radius = 0.1
count = 60
length = 0.25
segments = 10
cap_angle = 60.0
up = [0.0, -1.0, 0.0]

[interaction]
groups = ["hair"]
resolution = 16
"#;

fn scene(set: &[&str]) -> (RodSet, State, strands::model::params::SimParams) {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let s = Scene::parse(SCENE, Path::new("interaction.toml"), &set).unwrap();
    let (rods, state) = s.build();
    (rods, state, s.params)
}

/// A GPU simulator whose state has moving, bent hair: the CPU's after a
/// few frames, with every velocity given a random extra part.
fn moving_gpu(ctx: &GpuContext) -> GpuSimulator {
    moving_gpu_with(ctx, &[])
}

/// `moving_gpu` of the scene with `set`.
fn moving_gpu_with(ctx: &GpuContext, set: &[&str]) -> GpuSimulator {
    let (rods, state, params) = scene(set);
    let mut cpu = strands::cpu::CpuSimulator::new(rods.clone(), state, params);
    for _ in 0..6 {
        cpu.step().unwrap();
    }
    let mut state = cpu.state.clone();
    let mut r = rng(7);
    for v in state.vel.iter_mut() {
        *v += unit(&mut r) * 0.3;
    }
    let mut g = GpuSimulator::new(ctx, rods, state.clone(), params).unwrap();
    g.write_state(&state);
    g
}

/// The default context, checked to add the grid with 64-bit atomics (the
/// device has `GRID_I64_FEATURES`, as lavapipe and Vulkan GPUs do), so that
/// the tests below cover both accumulator forms.
fn gpu_i64() -> GpuContext {
    let ctx = gpu();
    assert!(
        ctx.grid_i64(),
        "{} lacks 64-bit atomics ({:?}): this test is of the grid that uses them",
        ctx.describe(),
        strands::gpu::GRID_I64_FEATURES
    );
    ctx
}

/// The CPU's splat of the GPU's own f32 state, at the substep the kernels ran.
fn cpu_grid(g: &GpuSimulator, t_end: f64) -> (GridGeometry, GridNodes, grid::Splat) {
    let inter = &g.rods().interaction;
    let geometry = inter.groups[0].geometry_at(&g.rods().anchors, t_end);
    let pos = g.read_grid_positions();
    let vel = g.read_velocities_f32();
    let mass_q: Vec<u32> = inter.vertex.iter().map(|v| v.mass_q).collect();
    let mut nodes = GridNodes::default();
    nodes.clear(&geometry);
    let s = grid::grid_splat(&geometry, &mut nodes, &pos, &vel, &mass_q).unwrap();
    (geometry, nodes, s)
}

#[test]
fn grid_is_identical_and_each_kernel_matches() {
    grid_matches_the_cpu(&gpu_i64());
}

/// The same with the accumulators as pairs of 32-bit atomics with a carry
/// (devices without 64-bit atomics): the same integers.
#[test]
fn grid_as_u32_pairs_is_identical_and_each_kernel_matches() {
    grid_matches_the_cpu(&gpu_i64().with_u32_grid());
}

fn grid_matches_the_cpu(ctx: &GpuContext) {
    let mut g = moving_gpu(ctx);
    let (t, h) = (g.time(), g.params().h());
    let (geometry, nodes, s) = cpu_grid(&g, t + h);
    g.run_kernel(Kernel::GridClear, t, h);
    g.run_kernel(Kernel::GridSplat, t, h);
    let gpu_nodes = g.read_grid(0);
    let filled = nodes.mass.iter().filter(|&&m| m > 0).count();
    assert!(filled > 50, "only {filled} nodes filled");
    assert_eq!(gpu_nodes, nodes, "the GPU grid differs from the CPU's");
    let counters = g.read_grid_counters();
    assert_eq!(counters[GRID_VMAX], s.vmax);
    assert_eq!(counters[GRID_OUTSIDE] as usize, s.outside);
    // grid_velocity: f32 division of the same integers; it leaves every
    // node zero for the next splat (there is no pass that clears them).
    g.run_kernel(Kernel::GridVelocity, t, h);
    assert_eq!(g.read_grid_counters()[GRID_OVERFLOW], 0);
    assert_sums_taken(&g);
    let group = g.rods().interaction.groups[0].clone();
    let mut fields = Vec::new();
    grid::grid_velocity(&nodes, group.pressure_scale(), s.vmax, &mut fields).unwrap();
    let gpu_fields = g.read_grid_fields(0);
    let pmax = assert_fields_match(&fields, &gpu_fields);
    assert!(pmax > 0.0, "some node is above rest density");
    // grid_blend: the position change of every free vertex.
    let before = g.read_vertices(VertexBuffer::Pos);
    let pos32 = g.read_grid_positions();
    let vel32 = g.read_velocities_f32();
    g.run_kernel(Kernel::GridBlend, t, h);
    let after = g.read_vertices(VertexBuffer::Pos);
    let b = Blend {
        h,
        volume_step: group.volume_stiffness * group.cell,
        max_push: group.max_push(),
    };
    let mut largest = 0.0f64;
    let mut worst = 0.0f64;
    for v in 0..before.len() {
        let expected = if g.rods().inv_mass[v] == 0.0 {
            DVec3::ZERO
        } else {
            let gv = g.rods().interaction.vertex[v];
            grid::grid_blend(&geometry, &fields, pos32[v], vel32[v], gv.friction, b)
        };
        largest = largest.max(expected.length());
        worst = worst.max(((after[v] - before[v]) - expected).length());
    }
    eprintln!("grid_blend: largest move {largest:.3e} m, GPU − CPU {worst:.3e} m");
    assert!(largest > 1e-5, "the blend moves vertices: {largest}");
    // f32 positions of ~0.3 m round to 3e-8 m; the move itself to ~1e-6 of it.
    assert!(worst <= 1e-7 + 1e-5 * largest, "{worst}");
}

/// The walked substep's first half (`substep_start_rod`, one invocation per
/// rod: forces, integration, then the splat of its own vertices) splats
/// the CPU's grid bit for bit. With 64-bit atomics its splat adds a rod's
/// consecutive vertices in registers for the nodes they share
/// (shaders/grid_i64.wgsl `SplatWindow`) and each node once per run of
/// vertices around it: the same integers summed in another order. For this
/// to test every path of the window, the walks must stay in a cell, move to
/// a neighbouring one by −1 and by +1 along each axis, and jump further
/// (counted from the CPU's grid positions, `moves`): the hanging strands on
/// a grid of 16 cells give the first two (downward in y), on a grid of 64
/// the jumps, and strands standing up from the crown the upward steps in y.
/// The 32-bit pairs (no window: each vertex added at once) once as well.
#[test]
fn walked_splat_is_the_cpus_bit_for_bit() {
    let ctx = gpu_i64();
    let u32_grid = ctx.with_u32_grid();
    let hanging = "rods.0.up=[0.0, -1.0, 0.0]";
    let standing = "rods.0.up=[0.0, 1.0, 0.0]";
    let mut windowed = Moves::default();
    for (resolution, up, ctx) in [
        (16, hanging, &ctx),
        (64, hanging, &ctx),
        (16, standing, &ctx),
        (16, hanging, &u32_grid),
    ] {
        let (rods, state, params) = scene(&[&format!("interaction.resolution={resolution}"), up]);
        let mut g = GpuSimulator::new(ctx, rods, state.clone(), params).unwrap();
        // The walked splat, not a GPU's default sorted one.
        g.set_splat(strands::gpu::schedule::Splat::Own).unwrap();
        let mut r = rng(11);
        let mut moving = state;
        for v in moving.vel.iter_mut() {
            *v += unit(&mut r) * 0.3;
        }
        g.write_state(&moving);
        let (t, h) = (g.time(), g.params().h());
        g.run_kernel(Kernel::GridClear, t, h);
        g.run_kernel(Kernel::SubstepStartRod, t, h);
        // The CPU splats the positions and velocities the kernel splatted:
        // its own output (the splat is its last stage).
        let (geometry, nodes, s) = cpu_grid(&g, t + h);
        let m = moves(&g, &geometry);
        eprintln!("resolution {resolution}, {up}, {}: {m:?}", ctx.describe());
        if ctx.grid_i64() {
            windowed.add(&m);
        }
        assert_eq!(
            g.read_grid(0),
            nodes,
            "the walked splat's grid differs from the CPU's"
        );
        let counters = g.read_grid_counters();
        assert_eq!(counters[GRID_VMAX], s.vmax);
        assert_eq!(counters[GRID_OUTSIDE] as usize, s.outside);
    }
    assert!(
        windowed.same > 20 && windowed.jump > 20,
        "the walks do not test the window: {windowed:?}"
    );
    for (axis, [down, up]) in windowed.step.iter().enumerate() {
        assert!(
            *down > 20 && *up > 20,
            "no walk steps both ways along axis {axis}: {windowed:?}"
        );
    }
}

/// Consecutive vertices of a rod, both inside the grid: how many share a
/// cell, move to a neighbouring cell (by at most one along every axis; in
/// `step`, per axis, how many of those moved by −1 and by +1), or jump
/// further.
#[derive(Debug, Default)]
struct Moves {
    same: usize,
    step: [[usize; 2]; 3],
    jump: usize,
}

impl Moves {
    fn add(&mut self, m: &Moves) {
        self.same += m.same;
        self.jump += m.jump;
        for (a, b) in self.step.iter_mut().zip(&m.step) {
            a[0] += b[0];
            a[1] += b[1];
        }
    }
}

fn moves(g: &GpuSimulator, geometry: &GridGeometry) -> Moves {
    let pos = g.read_grid_positions();
    let mut m = Moves::default();
    for r in 0..g.rods().rod_count() {
        let cells: Vec<Option<[i32; 3]>> = g
            .rods()
            .vertices(r)
            .map(|v| grid::grid_position(geometry, pos[v]).map(|q| q.map(|c| c >> FRAC_BITS)))
            .collect();
        for w in cells.windows(2) {
            if let [Some(a), Some(b)] = w {
                let d: [i32; 3] = std::array::from_fn(|i| b[i] - a[i]);
                match d.iter().map(|c| c.abs()).max().unwrap() {
                    0 => m.same += 1,
                    1 => {
                        for (axis, &c) in d.iter().enumerate() {
                            if c != 0 {
                                m.step[axis][usize::from(c > 0)] += 1;
                            }
                        }
                    }
                    _ => m.jump += 1,
                }
            }
        }
    }
    m
}

/// Every node's GPU field against the CPU's: f32 conversion and division,
/// a few ε of the largest values. Returns the largest CPU pressure.
fn assert_fields_match(cpu: &[[f64; 4]], gpu: &[[f64; 4]]) -> f64 {
    let vmax = cpu
        .iter()
        .map(|f| DVec3::new(f[0], f[1], f[2]).length())
        .fold(0.0, f64::max);
    let pmax = cpu.iter().map(|f| f[3]).fold(0.0, f64::max);
    for (k, (a, b)) in cpu.iter().zip(gpu).enumerate() {
        for c in 0..3 {
            assert!(
                (a[c] - b[c]).abs() <= 4e-7 * vmax,
                "node {k} velocity {a:?} vs {b:?}"
            );
        }
        assert!(
            (a[3] - b[3]).abs() <= 4e-7 * (1.0 + pmax),
            "node {k} pressure {a:?} vs {b:?}"
        );
    }
    pmax
}

/// `grid_velocity` leaves every node's sums zero for the next splat (there
/// is no pass that clears them), in every group.
fn assert_sums_taken(g: &GpuSimulator) {
    for gi in 0..g.rods().interaction.groups.len() {
        let after = g.read_grid(gi);
        assert!(
            after.mass.iter().all(|&m| m == 0) && after.momentum.iter().all(|p| *p == [0; 3]),
            "group {gi}: grid_velocity left a node's sums behind"
        );
    }
}

/// The GPU's fields are the CPU's: none where the CPU's splat left no mass,
/// the rest to f32 rounding (`assert_fields_match`).
fn assert_fields_are_the_cpus(what: &str, nodes: &GridNodes, cpu: &[[f64; 4]], gpu: &[[f64; 4]]) {
    for (k, b) in gpu.iter().enumerate() {
        if nodes.mass[k] == 0 {
            assert_eq!(*b, [0.0; 4], "{what}: node {k} holds no mass but a field");
        }
    }
    assert_fields_match(cpu, gpu);
}

/// `grid_velocity` writes the field of a node that holds mass, and of one
/// whose field it wrote at the last substep (shaders/grid.wgsl
/// `NODE_FIELDED`), and leaves every other node alone. After a second
/// splat from positions moved by 1.5 cells, the nodes only the first splat
/// filled must read zero again, as on the CPU (whose clear zeroes the
/// fields of the nodes the last splat touched): every field is the CPU's,
/// none left over. Both accumulator forms.
#[test]
fn fields_left_by_an_earlier_substep_are_cleared() {
    let ctx = gpu_i64();
    fields_follow_the_cpu_across_substeps(&ctx);
    fields_follow_the_cpu_across_substeps(&ctx.with_u32_grid());
}

fn fields_follow_the_cpu_across_substeps(ctx: &GpuContext) {
    let mut g = moving_gpu(ctx);
    let (t, h) = (g.time(), g.params().h());
    for k in [Kernel::GridClear, Kernel::GridSplat, Kernel::GridVelocity] {
        g.run_kernel(k, t, h);
    }
    let first = g.read_grid_fields(0);
    let group = g.rods().interaction.groups[0].clone();
    let mut state = g.read_state();
    for p in state.pos.iter_mut() {
        *p += DVec3::new(1.5 * group.cell, 0.0, 0.0);
    }
    g.write_state(&state);
    for k in [Kernel::GridClear, Kernel::GridSplat, Kernel::GridVelocity] {
        g.run_kernel(k, t, h);
    }
    let (_, nodes, s) = cpu_grid(&g, t + h);
    let mut fields = Vec::new();
    grid::grid_velocity(&nodes, group.pressure_scale(), s.vmax, &mut fields).unwrap();
    let gpu_fields = g.read_grid_fields(0);
    let emptied = (0..fields.len())
        .filter(|&k| first[k] != [0.0; 4] && nodes.mass[k] == 0)
        .count();
    assert!(
        emptied > 20,
        "the move empties nodes the first splat filled: {emptied}"
    );
    assert_fields_are_the_cpus("second splat", &nodes, &fields, &gpu_fields);
    assert_sums_taken(&g);
}

/// The walked substep's grid pass (`substep_start_rod`, whose splat records
/// the box of cells it reached, `grid_extent`, `grid_velocity_box` over the
/// region that chose) gives every node the CPU's field, as the pass over
/// all nodes does, though it visits only a box: the nodes this splat
/// reached and those the last one did, whose fields it must zero. First a
/// walked substep, which takes the whole grid the buffers start with; then a
/// pass over all nodes from positions moved 3 cells along x and y and
/// velocities 300 times theirs, which leaves fields outside that substep's
/// box and a fastest velocity above the next ones' (whose fastest are the
/// roots, taken back to the head); then two walked substeps, moved
/// 4.5 cells back along x and 3 along y, then 1.5 along x, so that each
/// empties nodes the one before filled, outside its own box. The host must
/// start the first of them from the whole grid and a zero fastest velocity
/// (`GpuSimulator::track_grid_region`), the second from its box joined
/// with the first's: the region is checked against the boxes of the CPU's
/// cells, and the fields against the CPU's. Both accumulator forms (the box
/// is counted apart from them).
#[test]
fn box_pass_clears_what_the_last_substep_filled() {
    let ctx = gpu_i64();
    box_pass_follows_the_cpu(&ctx);
    box_pass_follows_the_cpu(&ctx.with_u32_grid());
}

fn box_pass_follows_the_cpu(ctx: &GpuContext) {
    use strands::gpu::layout::{REGION_GROUPS, REGION_LAST_BOX};
    let mut g = moving_gpu(ctx);
    // The walked splat's box, not a GPU's default sorted splat.
    g.set_splat(strands::gpu::schedule::Splat::Own).unwrap();
    let (t, h) = (g.time(), g.params().h());
    let group = g.rods().interaction.groups[0].clone();
    let dims = group.dims;
    // Positions moved by (x, y) cells, velocities scaled by `speed`.
    let shift = |g: &mut GpuSimulator, x: f64, y: f64, speed: f64| {
        let mut state = g.read_state();
        for p in state.pos.iter_mut() {
            *p += DVec3::new(x * group.cell, y * group.cell, 0.0);
        }
        for v in state.vel.iter_mut() {
            *v *= speed;
        }
        g.write_state(&state);
    };
    for k in [
        Kernel::SubstepStartRod,
        Kernel::GridExtent,
        Kernel::GridVelocityBox,
    ] {
        g.run_kernel(k, t, h);
    }
    shift(&mut g, 3.0, 3.0, 300.0);
    for k in [Kernel::GridClear, Kernel::GridSplat, Kernel::GridVelocity] {
        g.run_kernel(k, t, h);
    }
    let mut before = g.read_grid_fields(0);
    let mut last_box = None;
    for (pass, (x, y, speed)) in [(-4.5, -3.0, 1.0 / 300.0), (1.5, 0.0, 1.0)]
        .into_iter()
        .enumerate()
    {
        shift(&mut g, x, y, speed);
        g.run_kernel(Kernel::SubstepStartRod, t, h);
        let (geometry, nodes, s) = cpu_grid(&g, t + h);
        let (low, high) = box_of_group(&g, 0, &geometry);
        g.run_kernel(Kernel::GridExtent, t, h);
        let region = g.read_grid_region();
        let e = REGION_GROUPS;
        assert_eq!(region[0], s.vmax, "the substep's fastest velocity");
        assert_eq!(
            g.read_grid_counters()[GRID_VMAX],
            0,
            "grid_extent resets the fastest velocity for the next splat"
        );
        assert_eq!(
            region[e + REGION_LAST_BOX..e + REGION_LAST_BOX + 6],
            [low, high].concat(),
            "the box the walked splat recorded"
        );
        // The region: the whole grid after the pass over all nodes, then
        // this box and the last joined.
        let (rlow, rhigh) = match last_box {
            None => ([0; 3], dims.map(|d| d - 1)),
            Some((l, h)) => {
                let l: [u32; 3] = l;
                let h: [u32; 3] = h;
                (
                    std::array::from_fn(|a| l[a].min(low[a])),
                    std::array::from_fn(|a| h[a].max(high[a])),
                )
            }
        };
        let first = rlow[0] + dims[0] * (rlow[1] + dims[1] * rlow[2]);
        assert_eq!(
            region[e..e + 6],
            [
                first,
                rhigh[0] + 1 - rlow[0],
                rhigh[1] + 1 - rlow[1],
                dims[0],
                dims[0] * dims[1],
                0
            ],
            "pass {pass}: the region (first node, nodes along x and y, strides, first plane)"
        );
        if pass == 1 {
            let volume: u32 = (0..3).map(|a| rhigh[a] + 1 - rlow[a]).product();
            let all: u32 = dims.iter().product();
            assert!(
                volume < all / 2,
                "the region is not much smaller than the grid: {volume} of {all} nodes"
            );
        }
        g.run_kernel(Kernel::GridVelocityBox, t, h);
        let mut fields = Vec::new();
        grid::grid_velocity(&nodes, group.pressure_scale(), s.vmax, &mut fields).unwrap();
        let gpu_fields = g.read_grid_fields(0);
        let emptied = (0..fields.len())
            .filter(|&k| before[k] != [0.0; 4] && nodes.mass[k] == 0)
            .count();
        assert!(
            emptied > 20,
            "pass {pass}: the move empties nodes the last splat filled: {emptied}"
        );
        assert_fields_are_the_cpus(&format!("pass {pass}"), &nodes, &fields, &gpu_fields);
        assert_sums_taken(&g);
        before = gpu_fields;
        last_box = Some((low, high));
    }
}

/// A uniform velocity field: the blend asks for no change on the GPU either
/// (each node's velocity is P/M of exact integers, rounded in f32; the
/// friction term is then ~ε·|v|·h, far below the positions' own rounding).
/// Every vertex at rest density or below: no push.
#[test]
fn uniform_field_is_unchanged_by_the_gpu_blend() {
    let (rods, mut state, params) = scene(&["interaction.rest_density=1e6"]);
    for v in state.vel.iter_mut() {
        *v = DVec3::new(0.4, -1.1, 0.7);
    }
    let mut g = GpuSimulator::new(&gpu(), rods, state.clone(), params).unwrap();
    g.write_state(&state);
    let (t, h) = (g.time(), g.params().h());
    for k in [Kernel::GridClear, Kernel::GridSplat, Kernel::GridVelocity] {
        g.run_kernel(k, t, h);
    }
    let before = g.read_vertices(VertexBuffer::Pos);
    g.run_kernel(Kernel::GridBlend, t, h);
    let after = g.read_vertices(VertexBuffer::Pos);
    let moved = max_diff(&before, &after);
    // One ulp of a 0.35 m coordinate is 3e-8 m.
    assert!(moved <= 3e-8, "moved {moved}");
    // The blend does move vertices whose velocity differs from the grid's
    // (3e-4 m in `grid_is_identical_and_each_kernel_matches`), so this bound
    // is not idle.
}

/// A node that could overflow is reported, the same (largest) node as the
/// CPU's, and `step_checked` stops naming the group.
#[test]
fn overflow_is_reported_like_the_cpu() {
    let ctx = gpu_i64();
    overflow_matches_the_cpu(&ctx);
    overflow_matches_the_cpu(&ctx.with_u32_grid());
}

fn overflow_matches_the_cpu(ctx: &GpuContext) {
    let (rods, mut state, mut params) = scene(&[]);
    params.max_speed = 1e9;
    // Substeps short enough that the vertices stay inside the grid.
    params.dt = 1e-8;
    for v in state.vel.iter_mut() {
        *v = DVec3::new(5e4, 0.0, 0.0);
    }
    let mut g = GpuSimulator::new(ctx, rods, state.clone(), params).unwrap();
    g.write_state(&state);
    let (t, h) = (g.time(), g.params().h());
    let (_, nodes, s) = cpu_grid(&g, t + h);
    let cpu = grid::grid_velocity(&nodes, 1.0, s.vmax, &mut Vec::new()).unwrap_err();
    for k in [Kernel::GridClear, Kernel::GridSplat, Kernel::GridVelocity] {
        g.run_kernel(k, t, h);
    }
    let node = g.read_grid_counters()[GRID_OVERFLOW] as usize - 1;
    assert_eq!(
        cpu,
        grid::GridError::Overflow {
            node,
            what: "momentum"
        }
    );
    let e = Simulator::Gpu {
        state: state.clone(),
        diagnostics: Default::default(),
        sim: Box::new(g),
    }
    .step()
    .unwrap_err();
    assert!(e.what.contains("interaction group `hair`"), "{e}");
}

/// Whole steps: GPU and CPU start from the same f32 state and stay
/// together over 30 frames of hair falling into a bundle. Without the grid
/// this scene keeps within the 1e-6 m per step of tests/gpu_whole_steps.rs.
/// The grid adds one amplifier: the push is constant within a cell, so a
/// rounding-size difference that puts a vertex on the other side of a cell
/// face on one backend changes its push by up to β·cell·Δp for a substep.
/// Friction then pulls it back toward its neighbours, so the difference stays
/// a small fraction of a cell: bound 1/20 of a cell (measured 1/43).
#[test]
fn whole_steps_agree() {
    let (rods, state, params) = scene(&[]);
    let cell = rods.interaction.groups[0].cell;
    let mut g = Simulator::gpu(&gpu(), rods.clone(), state, params).unwrap();
    let mut c = Simulator::cpu(rods, g.state().clone(), params);
    let start = c.state().pos.clone();
    let mut worst = 0.0f64;
    let steps = 30;
    for _ in 0..steps {
        g.step().unwrap();
        c.step().unwrap();
        worst = worst.max(max_diff(&g.state().pos, &c.state().pos));
    }
    // Integer atomics: a second GPU run is the same bit for bit.
    let mut again = Simulator::gpu(&gpu(), c.rods().clone(), scene(&[]).1, params).unwrap();
    for _ in 0..steps {
        again.step().unwrap();
    }
    assert_eq!(again.state().pos, g.state().pos, "two GPU runs differ");
    let travel = max_diff(&c.state().pos, &start);
    eprintln!(
        "whole steps: GPU − CPU {worst:.3e} m over {steps} steps (cell {cell:.3e} m); travel {travel:.3} m"
    );
    assert!(travel > 0.1, "the hair moved: {travel}");
    assert!(worst <= cell / 20.0, "{worst}");
}

/// A grid the device cannot bind is refused with its size and the limit.
#[test]
fn too_large_grid_is_refused_with_size_and_limit() {
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: 1 << 20,
        ..wgpu::Limits::default()
    };
    assert!(strands::gpu::check_grid_size(32_000, &limits).is_ok());
    let e = strands::gpu::check_grid_size(40_000, &limits)
        .unwrap_err()
        .to_string();
    // 32 bytes a node, then the counters.
    let bytes = format!(
        "{} bytes",
        40_000 * 32 + strands::gpu::layout::GRID_COUNTERS * 4
    );
    for part in ["40000 nodes", &bytes, "1048576 bytes", "interaction.cell"] {
        assert!(e.contains(part), "{e} lacks {part}");
    }
}

/// Two interaction groups: each group's grid on the GPU is the CPU's bit for
/// bit and its velocities agree, so every kernel finds its vertices' and its
/// nodes' group (`grid_group_now`, the node search in `grid_velocity`).
/// The test scene with a second interaction group (a beard under the
/// hair), every velocity given a random extra part.
fn two_groups() -> (RodSet, State, strands::model::params::SimParams) {
    let second = SCENE.replace(
        "[interaction]\ngroups = [\"hair\"]",
        "[[rods]]\nkind = \"scalp\"\ngroup = \"beard\"\nmaterial = \"hair\"\ncenter = [0.0, -0.05, 0.05]\nradius = 0.1\ncount = 30\nlength = 0.15\nsegments = 8\ncap_angle = 40.0\nup = [0.0, -1.0, 1.0]\n\n[interaction]\ngroups = [\"hair\", \"beard\"]",
    );
    assert_ne!(second, SCENE);
    let s = Scene::parse(&second, Path::new("two.toml"), &[]).unwrap();
    let (rods, mut state) = s.build();
    let mut r = rng(3);
    for v in state.vel.iter_mut() {
        *v += unit(&mut r) * 0.3;
    }
    (rods, state, s.params)
}

/// The CPU's splat of group `gi` from the GPU's positions and velocities.
fn cpu_group_grid(
    g: &GpuSimulator,
    gi: usize,
    t_end: f64,
) -> (GridGeometry, GridNodes, grid::Splat) {
    let inter = &g.rods().interaction;
    let group = &inter.groups[gi];
    let geometry = group.geometry_at(&g.rods().anchors, t_end);
    let pos = g.read_grid_positions();
    let vel = g.read_velocities_f32();
    let members: Vec<usize> = group
        .rods
        .iter()
        .flat_map(|&r| g.rods().vertices(r))
        .collect();
    let mut nodes = GridNodes::default();
    nodes.clear(&geometry);
    let p: Vec<[f32; 3]> = members.iter().map(|&v| pos[v]).collect();
    let u: Vec<[f32; 3]> = members.iter().map(|&v| vel[v]).collect();
    let m: Vec<u32> = members.iter().map(|&v| inter.vertex[v].mass_q).collect();
    let s = grid::grid_splat(&geometry, &mut nodes, &p, &u, &m).unwrap();
    (geometry, nodes, s)
}

/// The box pass with two interaction groups: `grid_extent` stacks the
/// groups' regions along z in one dispatch (the second group's planes after
/// the first's) and `grid_velocity_box` finds each plane's group. Every
/// group's fields are the CPU's, none left where a group holds no mass, over
/// two substeps, the second from positions moved 1.5 cells so that each
/// region is two splats' boxes joined, not the whole grid.
#[test]
fn box_pass_serves_each_of_two_groups() {
    use strands::gpu::layout::{REGION_GROUPS, REGION_WORDS};
    let (rods, state, params) = two_groups();
    let mut g = GpuSimulator::new(&gpu_i64(), rods, state.clone(), params).unwrap();
    // The walked splat's box, not a GPU's default sorted splat.
    g.set_splat(strands::gpu::schedule::Splat::Own).unwrap();
    g.write_state(&state);
    let (t, h) = (g.time(), g.params().h());
    let inter = g.rods().interaction.clone();
    assert_eq!(inter.groups.len(), 2);
    let mut last_low_z = [u32::MAX; 2];
    let mut last_high_z = [0u32; 2];
    for pass in 0..2 {
        if pass == 1 {
            let mut moved = g.read_state();
            for p in moved.pos.iter_mut() {
                *p += DVec3::new(1.5 * inter.groups[0].cell, 0.0, 0.0);
            }
            g.write_state(&moved);
        }
        g.run_kernel(Kernel::SubstepStartRod, t, h);
        let cpu: Vec<_> = (0..2).map(|gi| cpu_group_grid(&g, gi, t + h)).collect();
        g.run_kernel(Kernel::GridExtent, t, h);
        g.run_kernel(Kernel::GridVelocityBox, t, h);
        let region = g.read_grid_region();
        // The first group's planes: its whole grid, then two boxes joined
        // (their z extents from the CPU's cells).
        let mut planes = inter.groups[0].dims[2];
        for (gi, (geometry, nodes, s)) in cpu.iter().enumerate() {
            let (low, high) = box_of_group(&g, gi, geometry);
            if pass == 1 {
                planes = high[2].max(last_high_z[gi]) + 1 - low[2].min(last_low_z[gi]);
                if gi == 0 {
                    assert_eq!(
                        region[REGION_GROUPS + REGION_WORDS + 5],
                        planes,
                        "the second group's first plane follows the first group's region"
                    );
                }
            }
            last_low_z[gi] = low[2];
            last_high_z[gi] = high[2];
            let group = &inter.groups[gi];
            let filled = nodes.mass.iter().filter(|&&m| m > 0).count();
            assert!(filled > 20, "group {gi}: only {filled} nodes filled");
            let mut fields = Vec::new();
            grid::grid_velocity(nodes, group.pressure_scale(), s.vmax, &mut fields).unwrap();
            let gpu_fields = g.read_grid_fields(gi);
            let what = format!("pass {pass}, group {gi}");
            assert_fields_are_the_cpus(&what, nodes, &fields, &gpu_fields);
        }
        if pass == 0 {
            assert_eq!(
                region[REGION_GROUPS + REGION_WORDS + 5],
                planes,
                "the second group's first plane follows the first group's whole grid"
            );
        }
    }
    assert_sums_taken(&g);
}

/// The nodes (lowest, highest: inclusive) of the cells group `gi`'s
/// vertices with mass lie in, at the GPU's positions.
fn box_of_group(g: &GpuSimulator, gi: usize, geometry: &GridGeometry) -> ([u32; 3], [u32; 3]) {
    let pos = g.read_grid_positions();
    let inter = &g.rods().interaction;
    let mut low = [u32::MAX; 3];
    let mut high = [0u32; 3];
    for &r in &inter.groups[gi].rods {
        for v in g.rods().vertices(r) {
            if inter.vertex[v].mass_q == 0 {
                continue;
            }
            if let Some(q) = grid::grid_position(geometry, pos[v]) {
                for a in 0..3 {
                    let cell = (q[a] >> FRAC_BITS) as u32;
                    low[a] = low[a].min(cell);
                    high[a] = high[a].max(cell + 1);
                }
            }
        }
    }
    (low, high)
}

#[test]
fn each_of_two_groups_is_the_cpus() {
    let mut splats = vec![Kernel::GridClear];
    splats.extend(Kernel::SORTED_SPLAT);
    two_groups_match(&[Kernel::GridClear, Kernel::GridSplat]);
    // The sorted splat: some run of slots crosses from one group's cells
    // to the other's (the window moves to the other grid).
    two_groups_match(&splats);
}

fn two_groups_match(splat: &[Kernel]) {
    let (rods, state, params) = two_groups();
    let mut g = GpuSimulator::new(&gpu_i64(), rods, state.clone(), params).unwrap();
    g.write_state(&state);
    let (t, h) = (g.time(), g.params().h());
    for &k in splat {
        g.run_kernel(k, t, h);
    }
    if splat.contains(&Kernel::GridSplatSorted) {
        let nv = g.rods().vertex_count();
        let first = g.rods().interaction.groups[0]
            .geometry_at(&g.rods().anchors, t + h)
            .node_count();
        let in_first = g.read_grid_sort()[..nv]
            .iter()
            .filter(|&&c| (c as usize) < first)
            .count();
        let run = strands::gpu::layout::SORTED_RUN as usize;
        assert!(
            in_first % run != 0,
            "no run of slots crosses the groups: {in_first} slots in the first"
        );
    }
    let inter = g.rods().interaction.clone();
    assert_eq!(inter.groups.len(), 2);
    let splatted: Vec<GridNodes> = (0..2).map(|gi| g.read_grid(gi)).collect();
    g.run_kernel(Kernel::GridVelocity, t, h);
    for (gi, group) in inter.groups.iter().enumerate() {
        let (_, nodes, splat) = cpu_group_grid(&g, gi, t + h);
        let filled = nodes.mass.iter().filter(|&&m| m > 0).count();
        assert!(filled > 20, "group {gi}: only {filled} nodes filled");
        assert_eq!(splatted[gi], nodes, "group {gi}'s grid");
        let mut fields = Vec::new();
        grid::grid_velocity(&nodes, group.pressure_scale(), splat.vmax, &mut fields).unwrap();
        let vmax = fields
            .iter()
            .map(|f| DVec3::new(f[0], f[1], f[2]).length())
            .fold(0.0, f64::max);
        let gpu_fields = g.read_grid_fields(gi);
        for (k, (a, b)) in fields.iter().zip(&gpu_fields).enumerate() {
            for c in 0..3 {
                assert!(
                    (a[c] - b[c]).abs() <= 4e-7 * vmax,
                    "group {gi} node {k}: {a:?} vs {b:?}"
                );
            }
        }
    }
}

/// The sorted splat (shaders/grid_sort.wgsl) stage by stage against its CPU
/// twin (`cpu::grid_sort::CellSort`), on the GPU's own f32 state, with both
/// accumulator forms:
/// * `grid_cell_count`: every vertex's cell and every cell's count as the
///   CPU's, the ranks in a cell a permutation of 0..count (counter adds
///   land in any order), each vertex's place in its cell the fraction of
///   the CPU's grid position, the outside count the CPU's;
/// * `grid_cell_scan` and `grid_cell_scan_blocks`: each cell's first slot
///   the CPU's prefix sum exactly, over more than 64 blocks of 256 cells
///   and a part block (a grid of 32 cells a side, so that an invocation of
///   the second sums several blocks, and some fewer; 400 strands, so that
///   cells still hold several vertices), the counts left zero;
/// * `grid_cell_scatter`: each slot holds a vertex of the CPU's cell for
///   that slot, each splatted vertex once;
/// * `grid_splat_sorted`: `grid_splat`'s grid on the CPU bit for bit, and
///   its fastest velocity.
#[test]
fn sorted_splat_stages_are_the_cpus() {
    let ctx = gpu_i64();
    for ctx in [ctx.clone(), ctx.with_u32_grid()] {
        sorted_stages_match(&ctx);
    }
}

fn sorted_stages_match(ctx: &GpuContext) {
    let mut g = moving_gpu_with(ctx, &["interaction.resolution=32", "rods.0.count=400"]);
    // A run of slots out of range is refused, and the splat kept (the
    // device's default, `GpuSimulator::default_splat`).
    use strands::gpu::schedule::{MAX_SORTED_RUN, Splat};
    let kept = g.splat();
    assert_eq!(kept, GpuSimulator::default_splat(ctx, g.rods()));
    for run in [0, MAX_SORTED_RUN + 1] {
        let e = g.set_splat(Splat::Sorted { run }).unwrap_err();
        assert!(
            e.to_string().contains(&format!("run of {run} slots")),
            "{e}"
        );
        assert_eq!(g.splat(), kept);
    }
    let (t, h) = (g.time(), g.params().h());
    let (geometry, nodes, s) = cpu_grid(&g, t + h);
    let pos = g.read_grid_positions();
    let mass_q: Vec<u32> = g
        .rods()
        .interaction
        .vertex
        .iter()
        .map(|v| v.mass_q)
        .collect();
    let mut sort = grid_sort::CellSort::default();
    grid_sort::grid_cell_count(&geometry, &pos, &mass_q, &mut sort);
    let n = geometry.node_count();
    let nv = pos.len();
    let block = strands::gpu::layout::CELL_BLOCK as usize;
    let blocks = n.div_ceil(block);
    assert!(
        blocks > 64 && n % block != 0,
        "the scene's grid: {n} nodes, {blocks} blocks"
    );
    g.run_kernel(Kernel::GridClear, t, h);
    g.run_kernel(Kernel::GridCellCount, t, h);
    let cells = g.read_grid_cells();
    let words = g.read_grid_sort();
    assert_eq!(&cells[..n], &sort.count[..], "counts");
    assert_eq!(&words[..nv], &sort.cell[..], "cells");
    // Where each counted vertex lies in its cell: the fraction bits of the
    // CPU's grid position, which the splat uses rather than computing the
    // position again.
    for v in (0..nv).filter(|&v| sort.cell[v] != u32::MAX) {
        let q = grid::grid_position(&geometry, pos[v]).unwrap();
        let mask = (1 << FRAC_BITS) - 1;
        let f = q.map(|c| (c & mask) as u32);
        let packed = f[0] | f[1] << FRAC_BITS | f[2] << (2 * FRAC_BITS);
        assert_eq!(words[3 * nv + v], packed, "vertex {v}'s place in its cell");
    }
    let mut ranks: Vec<Vec<u32>> = vec![Vec::new(); n];
    for v in 0..nv {
        if sort.cell[v] != u32::MAX {
            ranks[sort.cell[v] as usize].push(words[nv + v]);
        }
    }
    for (c, r) in ranks.iter_mut().enumerate() {
        r.sort();
        assert!(
            r.iter().copied().eq(0..sort.count[c]),
            "cell {c}: ranks {r:?}"
        );
    }
    assert_eq!(g.read_grid_counters()[GRID_OUTSIDE] as usize, sort.outside);
    assert_eq!(sort.outside, s.outside);
    let crowded = sort.count.iter().copied().max().unwrap();
    assert!(
        crowded >= 4,
        "cells hold several vertices: at most {crowded}"
    );
    grid_sort::grid_cell_scan(&mut sort);
    g.run_kernel(Kernel::GridCellScan, t, h);
    g.run_kernel(Kernel::GridCellScanBlocks, t, h);
    let cells = g.read_grid_cells();
    assert!(cells[..n].iter().all(|&c| c == 0), "counts zeroed");
    for k in 0..n {
        assert_eq!(
            cells[n + k] + cells[2 * n + k / block],
            sort.start[k],
            "cell {k}'s first slot"
        );
    }
    let total = sort.start[n] as usize;
    assert_eq!(cells[2 * n + blocks] as usize, total, "slots in all");
    grid_sort::grid_cell_scatter(&mut sort);
    g.run_kernel(Kernel::GridCellScatter, t, h);
    let words = g.read_grid_sort();
    let slots = &words[2 * nv..2 * nv + total];
    for (s, (&gv, &cv)) in slots.iter().zip(&sort.sorted).enumerate() {
        assert_eq!(
            sort.cell[gv as usize], sort.cell[cv as usize],
            "slot {s}: vertex {gv} of another cell than the CPU's {cv}"
        );
    }
    let mut once = slots.to_vec();
    once.sort();
    let mut expected = sort.sorted.clone();
    expected.sort();
    assert_eq!(once, expected, "each splatted vertex in one slot");
    g.run_kernel(Kernel::GridSplatSorted, t, h);
    assert_eq!(g.read_grid(0), nodes, "the sorted splat's grid");
    assert_eq!(g.read_grid_counters()[GRID_VMAX], s.vmax);
}

/// Whole frames with the sorted splat give the same bits as with each
/// form's own (integer sums: the same grid, so the same everything), in
/// the walked fused form and the staged walked one (with the 32-bit pairs,
/// and with 64-bit sums in runs of 5 slots); and the grid matters here:
/// the same frames without interaction end elsewhere.
#[test]
fn sorted_splat_runs_bit_for_bit_as_the_own() {
    use strands::gpu::Form;
    use strands::gpu::schedule::Splat;
    let ctx = gpu_i64();
    let (rods, state, params) = scene(&[]);
    let run = |ctx: &GpuContext, rods: &RodSet, form: Form, splat: Splat| {
        let mut g = GpuSimulator::new(ctx, rods.clone(), state.clone(), params).unwrap();
        g.set_form(form).unwrap();
        g.set_splat(splat).unwrap();
        for _ in 0..3 {
            g.step();
        }
        g.read_state()
    };
    let u32_grid = ctx.with_u32_grid();
    let mut own_walked = None;
    // Runs of the default 16 slots, and of 5 (most runs end inside a cell).
    for (ctx, form, splat) in [
        (&ctx, Form::WalkedFused, Splat::SORTED),
        (&u32_grid, Form::Walked, Splat::SORTED),
        (&ctx, Form::Walked, Splat::Sorted { run: 5 }),
    ] {
        let start = std::time::Instant::now();
        let own = run(ctx, &rods, form, Splat::Own);
        let sorted = run(ctx, &rods, form, splat);
        assert!(max_diff(&own.pos, &state.pos) > 0.01, "the hair moved");
        let what = format!("{form}, {splat}, {}", ctx.describe());
        assert!(
            own.pos == sorted.pos,
            "positions differ ({what}) by {:.3e} m",
            max_diff(&own.pos, &sorted.pos)
        );
        assert!(
            own.vel == sorted.vel,
            "velocities differ ({what}) by {:.3e} m/s",
            max_diff(&own.vel, &sorted.vel)
        );
        assert!(own.theta == sorted.theta, "twist angles differ ({what})");
        eprintln!("{what}: {:.1} s", start.elapsed().as_secs_f64());
        if form == Form::WalkedFused && own_walked.is_none() {
            own_walked = Some(own);
        }
    }
    let mut alone = rods.clone();
    alone.interaction.groups.clear();
    let alone = run(&ctx, &alone, Form::WalkedFused, Splat::SORTED);
    let d = max_diff(&alone.pos, &own_walked.unwrap().pos);
    assert!(d > 1e-6, "the grid changes the run: {d:.3e} m");
}
