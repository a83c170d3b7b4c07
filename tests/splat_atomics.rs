//! How many atomic adds the grid's splat needs, by how its sums are
//! grouped before they reach the grid: the case for the sorted splat (on
//! an H200 the one-add-per-vertex splat ran at 3 % of the copy rate, bound
//! by its atomics). Every grouping adds the same
//! integers to the same nodes, so each must give `cpu::grid::grid_splat`'s
//! grid exactly; what differs is how many adds reach the grid, counted as
//! the 64-bit words a node's add writes (its mass and each non-zero
//! momentum component, as shaders/grid_i64.wgsl skips zero ones).
//!
//! Run: `cargo test --release --test splat_atomics -- --ignored --nocapture`
//! (`STRANDS_SPLAT_STRANDS`, default 32000 hair strands of 32 vertices, the
//! benchmark's 1 M vertices; `STRANDS_SPLAT_FRAMES`, default 10 frames of
//! the CPU reference first, so that the hair has fallen onto the head).

use std::collections::{BTreeMap, HashMap};

use strands::bench::{Workload, bench_params};
use strands::cpu::CpuSimulator;
use strands::cpu::grid::{GridNodes, corners, grid_position, grid_splat, quantise_velocity};
use strands::cpu::grid_sort::{
    CellSort, grid_cell_count, grid_cell_scan, grid_cell_scatter, grid_splat_sorted,
};
use strands::model::interaction::GridGeometry;

/// One vertex's grid input: its 8 corners' node and weighted mass and
/// momentum.
struct Input {
    adds: [(usize, i64, [i64; 3]); 8],
}

/// `m` and `p` added to the node sums `e`.
fn accumulate(e: &mut (i64, [i64; 3]), m: i64, p: [i64; 3]) {
    e.0 += m;
    for (s, d) in e.1.iter_mut().zip(p) {
        *s += d;
    }
}

/// Sums per node, and the adds that brought them (words written).
#[derive(Default)]
struct Sums {
    nodes: BTreeMap<usize, (i64, [i64; 3])>,
    words: u64,
}

impl Sums {
    /// One add to the grid of a node's partial sums: its mass word, and
    /// each non-zero momentum word. Nothing for a node without mass.
    fn add(&mut self, k: usize, m: i64, p: [i64; 3]) {
        if m == 0 {
            return;
        }
        self.words += 1 + p.iter().filter(|&&c| c != 0).count() as u64;
        accumulate(self.nodes.entry(k).or_default(), m, p);
    }

    /// Partial sums gathered in registers or shared memory first, then
    /// added once per node.
    fn add_grouped(&mut self, adds: impl IntoIterator<Item = (usize, i64, [i64; 3])>) {
        let mut local: HashMap<usize, (i64, [i64; 3])> = HashMap::new();
        for (k, m, p) in adds {
            accumulate(local.entry(k).or_default(), m, p);
        }
        let mut keys: Vec<_> = local.keys().copied().collect();
        keys.sort();
        for k in keys {
            let (m, p) = local[&k];
            self.add(k, m, p);
        }
    }
}

/// The walked splat's window over the vertices of `walk` in order: the
/// sums of consecutive vertices in one cell kept, each node added when the
/// walk leaves it (nodes shared with the next cell kept).
fn window<'a>(sums: &mut Sums, walk: impl Iterator<Item = &'a Input>) {
    let walk: Vec<&Input> = walk.collect();
    let mut pending: HashMap<usize, (i64, [i64; 3])> = HashMap::new();
    for (j, i) in walk.iter().enumerate() {
        for (k, m, p) in i.adds {
            accumulate(pending.entry(k).or_default(), m, p);
        }
        // Nodes the next vertex's cell does not hold leave the window.
        let next: Vec<usize> = walk
            .get(j + 1)
            .map_or(Vec::new(), |n| n.adds.iter().map(|x| x.0).collect());
        let mut leaving: Vec<usize> = pending
            .keys()
            .copied()
            .filter(|k| !next.contains(k))
            .collect();
        leaving.sort();
        for k in leaving {
            let (m, p) = pending.remove(&k).unwrap();
            sums.add(k, m, p);
        }
    }
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{name}={s}: not a count"))
        })
        .unwrap_or(default)
}

#[test]
#[ignore = "a study: builds and runs 1 M vertices on the CPU (about 30 s on 2 cores)"]
fn splat_atomics_by_grouping() {
    let strands = env_or("STRANDS_SPLAT_STRANDS", 32000);
    let frames = env_or("STRANDS_SPLAT_FRAMES", 10);
    let n = 32;
    let w = Workload::standard("hair", strands, n).unwrap();
    let (rods, state) = w.scene.build();
    let params = bench_params(&rods, &w.scene.params, 10);
    let mut sim = CpuSimulator::new(rods, state, params);
    for _ in 0..frames {
        sim.step().expect("the hair runs");
    }
    let rods = &sim.rods;
    let group = &rods.interaction.groups[0];
    let g: GridGeometry = group.geometry_at(&rods.anchors, sim.state.time);
    // The group's vertices rod by rod, as the CPU's splat takes them.
    let members: Vec<Vec<usize>> = group
        .rods
        .iter()
        .map(|&r| rods.vertices(r).collect())
        .collect();
    let input = |v: usize| -> Option<Input> {
        let m = rods.interaction.vertex[v].mass_q;
        let x = sim.state.pos[v].as_vec3().to_array();
        let q = grid_position(&g, x)?;
        if m == 0 {
            return None;
        }
        let vq = quantise_velocity(sim.state.vel[v].as_vec3().to_array());
        let adds = corners(&g, q).map(|(k, wt)| {
            let wm = wt * m as i64;
            (k, wm, vq.map(|u| wm * u))
        });
        Some(Input { adds })
    };
    let inputs: Vec<Vec<Input>> = members
        .iter()
        .map(|rod| rod.iter().filter_map(|&v| input(v)).collect())
        .collect();
    let vertices: usize = inputs.iter().map(Vec::len).sum();

    // The reference grid.
    let flat: Vec<usize> = members.iter().flatten().copied().collect();
    let pos: Vec<[f32; 3]> = flat
        .iter()
        .map(|&v| sim.state.pos[v].as_vec3().to_array())
        .collect();
    let vel: Vec<[f32; 3]> = flat
        .iter()
        .map(|&v| sim.state.vel[v].as_vec3().to_array())
        .collect();
    let mass_q: Vec<u32> = flat
        .iter()
        .map(|&v| rods.interaction.vertex[v].mass_q)
        .collect();
    let mut reference = GridNodes::default();
    reference.clear(&g);
    let reference_splat = grid_splat(&g, &mut reference, &pos, &vel, &mass_q).expect("no overflow");

    let mut results: Vec<(&str, Sums)> = Vec::new();
    // A: each vertex's 8 nodes at once (the staged per-vertex `grid_splat`).
    let mut a = Sums::default();
    for i in inputs.iter().flatten() {
        for (k, m, p) in i.adds {
            a.add(k, m, p);
        }
    }
    results.push(("per vertex (staged grid_splat)", a));
    // B: the walked splat's window: a rod's consecutive vertices in one
    // cell summed, each node added when the walk leaves it (nodes shared
    // with the next cell kept): grouped per run of a node along the rod.
    let mut b = Sums::default();
    for rod in &inputs {
        window(&mut b, rod.iter());
    }
    results.push(("walked window (walked-fused)", b));
    // C: a subgroup of 32 lanes walking 32 consecutive rods, the lanes that
    // add to the same node combined before the atomic, step by step (no
    // window).
    let mut c = Sums::default();
    for warp in inputs.chunks(32) {
        let longest = warp.iter().map(Vec::len).max().unwrap_or(0);
        for step in 0..longest {
            c.add_grouped(
                warp.iter()
                    .filter_map(|rod| rod.get(step))
                    .flat_map(|i| i.adds),
            );
        }
    }
    results.push(("32 consecutive rods, lanes combined per step", c));
    // D: the vertices sorted by cell (`cpu::grid_sort::CellSort`, the stages a
    // GPU would run), then each group of consecutive slots (a workgroup's)
    // summing its nodes before the adds.
    let mut sort = CellSort::default();
    grid_cell_count(&g, &pos, &mass_q, &mut sort);
    grid_cell_scan(&mut sort);
    grid_cell_scatter(&mut sort);
    let mut sorted_words = Vec::new();
    for width in [32, 64, 256] {
        let mut nodes = GridNodes::default();
        nodes.clear(&g);
        let (splat, words) =
            grid_splat_sorted(&g, &mut nodes, &pos, &vel, &mass_q, &sort, width).unwrap();
        assert!(
            nodes == reference,
            "sorted, groups of {width}: not the CPU's grid"
        );
        assert_eq!(splat, reference_splat, "sorted, groups of {width}");
        sorted_words.push((width, words));
    }
    // E: the sorted slots, an invocation walking each run of `k`
    // consecutive slots with the walked splat's window (no shared memory,
    // no barrier: shaders/grid_sort.wgsl's choice).
    let flat_inputs: Vec<Option<Input>> = flat.iter().map(|&v| input(v)).collect();
    let mut walked_sorted = Vec::new();
    for k in [1, 4, 8, 16, 32] {
        let mut e = Sums::default();
        for run in sort.sorted.chunks(k) {
            window(
                &mut e,
                run.iter()
                    .map(|&v| flat_inputs[v as usize].as_ref().expect("sorted vertex")),
            );
        }
        walked_sorted.push((k, e));
    }
    for (k, e) in walked_sorted {
        let name: &'static str =
            Box::leak(format!("sorted by cell, windows of {k} slots").into_boxed_str());
        results.push((name, e));
    }
    println!(
        "hair, {strands} strands × {n} vertices, after {frames} frames: {vertices} vertices in the grid, {} nodes reached",
        reference.touched.len()
    );
    let base = results[0].1.words as f64;
    for (name, s) in &results {
        println!(
            "{name:>45}: {:>10} words added, {:.2} a vertex, {:.1} % of per vertex",
            s.words,
            s.words as f64 / vertices as f64,
            100.0 * s.words as f64 / base
        );
        // The same integers reach the same nodes: the reference grid.
        for (&k, &(m, p)) in &s.nodes {
            assert_eq!(m, reference.mass[k], "{name}: node {k}'s mass");
            assert_eq!(p, reference.momentum[k], "{name}: node {k}'s momentum");
        }
        let with_mass = reference.mass.iter().filter(|&&m| m != 0).count();
        assert_eq!(s.nodes.len(), with_mass, "{name}: nodes reached");
        assert!(
            s.words <= results[0].1.words,
            "{name}: more adds than per vertex"
        );
    }
    for (width, words) in sorted_words {
        println!(
            "{:>45}: {words:>10} words added, {:.2} a vertex, {:.1} % of per vertex",
            format!("sorted by cell, {width} a group"),
            words as f64 / vertices as f64,
            100.0 * words as f64 / base
        );
        assert!(
            words <= results[0].1.words,
            "sorted, {width}: more adds than per vertex"
        );
    }
}
