//! Kernels of shaders/grid_sort.wgsl: the sorted splat, the CPU twin of
//! each of its stages (`grid_cell_count`, `grid_cell_scan`,
//! `grid_cell_scatter`, `grid_splat_sorted`), which build the grid of
//! `cpu::grid::grid_splat` bit for bit.

use super::grid::{
    GridError, GridNodes, Splat, add_share, corners, grid_position, quantise_velocity,
};
use crate::model::interaction::{FRAC_BITS, GridGeometry};

/// A splat that sorts the vertices by cell before adding them (the GPU's
/// sorted splat, which reaches a cell's nodes once a run of its vertices,
/// not once a vertex): its stages, in the order
/// its kernels would run, and what each leaves. `grid_cell_count` gives
/// each vertex its cell and its rank among the cell's vertices (a 32-bit
/// counter add per vertex on a GPU, whose return value is the rank, in
/// whatever order the adds land), `grid_cell_scan` the first slot of each
/// cell, `grid_cell_scatter` each vertex its slot, and `grid_splat_sorted`
/// sums each group of consecutive slots' node values (a workgroup's, in
/// shared memory) before adding them to the grid. The sums are integers,
/// so the grid is `grid_splat`'s bit for bit, in any rank order.
#[derive(Clone, Debug, Default)]
pub struct CellSort {
    /// Per cell (indexed as its lowest node, `GridGeometry::node_index`),
    /// the vertices in it.
    pub count: Vec<u32>,
    /// Per cell, the first slot of its vertices in `sorted`; one entry
    /// more, the vertices sorted.
    pub start: Vec<u32>,
    /// Per vertex, its cell, or `u32::MAX` where it is not splatted (no
    /// mass, or outside the grid).
    pub cell: Vec<u32>,
    /// Per vertex, its rank among its cell's vertices.
    pub rank: Vec<u32>,
    /// The splatted vertices, cell by cell.
    pub sorted: Vec<u32>,
    /// Vertices with mass outside the grid (stage 1).
    pub outside: usize,
}

/// Stage 1 of the sorted splat (`CellSort`): each vertex's cell and rank,
/// the cells' counts, and the vertices outside the grid.
pub fn grid_cell_count(g: &GridGeometry, pos: &[[f32; 3]], mass_q: &[u32], sort: &mut CellSort) {
    sort.count.clear();
    sort.count.resize(g.node_count(), 0);
    sort.cell.clear();
    sort.rank.clear();
    let mut outside = 0;
    for (x, &m) in pos.iter().zip(mass_q) {
        let q = if m == 0 { None } else { grid_position(g, *x) };
        if m != 0 && q.is_none() {
            outside += 1;
        }
        let (cell, rank) = match q {
            Some(q) => {
                let c = g.node_index(q.map(|v| (v >> FRAC_BITS) as u32));
                let rank = sort.count[c];
                sort.count[c] += 1;
                (c as u32, rank)
            }
            None => (u32::MAX, 0),
        };
        sort.cell.push(cell);
        sort.rank.push(rank);
    }
    sort.outside = outside;
}

/// Stage 2: each cell's first slot, the exclusive prefix sum of the counts.
pub fn grid_cell_scan(sort: &mut CellSort) {
    sort.start.clear();
    let mut total = 0u32;
    for &c in &sort.count {
        sort.start.push(total);
        total += c;
    }
    sort.start.push(total);
}

/// Stage 3: each splatted vertex in its slot, `start[cell] + rank`.
pub fn grid_cell_scatter(sort: &mut CellSort) {
    let total = sort.start.last().copied().unwrap_or(0) as usize;
    sort.sorted.clear();
    sort.sorted.resize(total, u32::MAX);
    for (v, (&c, &r)) in sort.cell.iter().zip(&sort.rank).enumerate() {
        if c != u32::MAX {
            sort.sorted[(sort.start[c as usize] + r) as usize] = v as u32;
        }
    }
}

/// Stage 4: the sorted vertices' mass and momentum added to the grid, the
/// node sums of each `group` consecutive slots gathered first and added
/// once per node (a node without mass adds nothing; a zero momentum
/// component is not an add). Returns, on `Ok`, what `grid_splat` returns
/// (with `outside` from stage 1) and the 64-bit words added to the grid,
/// the atomics a GPU would make. Overflow is checked on each group's
/// partial sums, then on the grid: for momenta of both signs that can
/// differ from `grid_splat`'s checks of its running sums, but a node
/// whose partial sums pass ±2⁶³ fails `could_overflow` either way.
pub fn grid_splat_sorted(
    g: &GridGeometry,
    nodes: &mut GridNodes,
    pos: &[[f32; 3]],
    vel: &[[f32; 3]],
    mass_q: &[u32],
    sort: &CellSort,
    group: usize,
) -> Result<(Splat, u64), GridError> {
    let mut out = Splat {
        outside: sort.outside,
        ..Splat::default()
    };
    let mut words = 0u64;
    let checked = |acc: i64, d: i64, node: usize, what| {
        acc.checked_add(d).ok_or(GridError::Overflow { node, what })
    };
    for slots in sort.sorted.chunks(group.max(1)) {
        // The group's node sums (shared memory on a GPU), in node order.
        let mut sums: std::collections::BTreeMap<usize, (i64, [i64; 3])> = Default::default();
        for &v in slots {
            let v = v as usize;
            let q = grid_position(g, pos[v]).expect("a sorted vertex is inside the grid");
            let vq = quantise_velocity(vel[v]);
            for c in vq {
                out.vmax = out.vmax.max(c.unsigned_abs() as u32);
            }
            for (k, w) in corners(g, q) {
                let (mass, momentum) = sums.entry(k).or_default();
                add_share(mass, momentum, k, w * mass_q[v] as i64, &vq)?;
            }
        }
        for (k, (m, p)) in sums {
            if m == 0 {
                continue;
            }
            words += 1 + p.iter().filter(|&&c| c != 0).count() as u64;
            if nodes.mass[k] == 0 {
                nodes.touched.push(k as u32);
            }
            nodes.mass[k] = checked(nodes.mass[k], m, k, "mass")?;
            for (acc, d) in nodes.momentum[k].iter_mut().zip(p) {
                *acc = checked(*acc, d, k, "momentum")?;
            }
        }
    }
    Ok((out, words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::grid::grid_splat;
    use crate::cpu::grid::tests::{grid, rng};
    use crate::model::interaction::quantise_masses;

    /// The sorted splat's stages (`CellSort`): every splatted vertex in one
    /// slot, cells in order, each cell's slots as many as its count; and
    /// the grid, the nodes it touched, the outside count and the fastest
    /// velocity `grid_splat`'s exactly, for groups of 1, 7, 64 and all,
    /// with the ranks in two orders (a GPU's counter adds land in any
    /// order). A vertex without mass, and vertices outside the grid, take
    /// no slot.
    #[test]
    fn sorted_splat_is_grid_splat_bit_for_bit() {
        let g = grid();
        let mut r = rng(7);
        let n = 3000;
        // A cloud around a point (crowded cells), some outside the grid.
        let pos: Vec<[f32; 3]> = (0..n)
            .map(|i| {
                let spread = if i % 50 == 0 { 2.0 } else { 0.1 };
                [
                    spread * (r() - 0.5),
                    1.5 + spread * (r() - 0.5),
                    spread * (r() - 0.5),
                ]
            })
            .collect();
        let vel: Vec<[f32; 3]> = (0..n).map(|_| [r() - 0.5, r() - 0.5, 0.0]).collect();
        let mass: Vec<f64> = (0..n)
            .map(|i| if i % 97 == 0 { 0.0 } else { 1e-7 })
            .collect();
        let (_, mq) = quantise_masses(&mass);
        let mut reference = GridNodes::default();
        reference.clear(&g);
        let expected = grid_splat(&g, &mut reference, &pos, &vel, &mq).unwrap();
        assert!(expected.outside > 0);
        let mut sort = CellSort::default();
        grid_cell_count(&g, &pos, &mq, &mut sort);
        assert_eq!(sort.outside, expected.outside);
        for v in (0..n).filter(|&v| mq[v] == 0) {
            assert_eq!(sort.cell[v], u32::MAX, "massless vertex {v} has a cell");
        }
        let sorted_set = |t: &[u32]| {
            let mut t = t.to_vec();
            t.sort();
            t
        };
        for reversed in [false, true] {
            if reversed {
                // Ranks in the other order within each cell.
                for v in 0..n {
                    if sort.cell[v] != u32::MAX {
                        sort.rank[v] = sort.count[sort.cell[v] as usize] - 1 - sort.rank[v];
                    }
                }
            }
            grid_cell_scan(&mut sort);
            grid_cell_scatter(&mut sort);
            let splatted = sort.cell.iter().filter(|&&c| c != u32::MAX).count();
            assert_eq!(sort.sorted.len(), splatted);
            let mut seen = vec![false; n];
            for w in sort.sorted.windows(2) {
                assert!(sort.cell[w[0] as usize] <= sort.cell[w[1] as usize]);
            }
            for &v in &sort.sorted {
                assert!(!seen[v as usize], "vertex {v} in two slots");
                seen[v as usize] = true;
            }
            for (c, &k) in sort.count.iter().enumerate() {
                assert_eq!(sort.start[c + 1] - sort.start[c], k);
            }
            // Adds: each vertex's nodes apart (groups of 1), each node once
            // (one group of all), and between them for any other size.
            let words_of = |m: i64, p: [i64; 3]| {
                if m == 0 {
                    0
                } else {
                    1 + p.iter().filter(|&&c| c != 0).count() as u64
                }
            };
            let per_vertex: u64 = sort
                .sorted
                .iter()
                .map(|&v| {
                    let v = v as usize;
                    let q = grid_position(&g, pos[v]).unwrap();
                    let vq = quantise_velocity(vel[v]);
                    corners(&g, q)
                        .iter()
                        .map(|&(_, w)| {
                            let wm = w * mq[v] as i64;
                            words_of(wm, vq.map(|u| wm * u))
                        })
                        .sum::<u64>()
                })
                .sum();
            let per_node: u64 = (0..reference.mass.len())
                .map(|k| words_of(reference.mass[k], reference.momentum[k]))
                .sum();
            for group in [1, 7, 64, n] {
                let mut nodes = GridNodes::default();
                nodes.clear(&g);
                let (splat, words) =
                    grid_splat_sorted(&g, &mut nodes, &pos, &vel, &mq, &sort, group).unwrap();
                assert_eq!(nodes, reference, "groups of {group}");
                assert_eq!(
                    sorted_set(&nodes.touched),
                    sorted_set(&reference.touched),
                    "groups of {group}: nodes touched"
                );
                assert_eq!(splat, expected, "groups of {group}");
                match group {
                    1 => assert_eq!(words, per_vertex),
                    all if all == n => assert_eq!(words, per_node),
                    _ => assert!(per_node < words && words < per_vertex, "{words}"),
                }
            }
        }
    }
}
