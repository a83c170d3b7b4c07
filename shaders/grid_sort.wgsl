#import common
#import grid
#import grid_fixed
#import grid_u32

// The sorted splat (src/cpu/grid_sort.rs `CellSort`, the CPU twin of each
// kernel here; docs/INTERACTION.md for the design): the grid_splat of
// shaders/grid.wgsl in four stages, so that the vertices that share a cell
// are added to its nodes together rather than one atomic each.
//
// grid_cell_count (per vertex): the vertex's cell and its rank among the
//   cell's vertices, from a counter add; the vertices outside the grid and
//   the box of cells reached, as the walked splat records them.
// grid_cell_scan (per run of CELL_RUN cells) and grid_cell_scan_blocks
//   (one workgroup): the exclusive prefix sum of the counts, in blocks of
//   CELL_BLOCK cells, each cell's count zeroed for the next substep.
// grid_cell_scatter (per vertex): each splatted vertex into its slot,
//   its cell's first slot plus its rank.
// grid_splat_sorted (per run of `params.sorted_run` slots, 16 by default:
//   `layout::SORTED_RUN`): each run's vertices, sorted by cell, walked
//   with the walked splat's window, so that a cell's sums are added to
//   its nodes once a run rather than once a vertex.
//
// Integer sums, as in grid_splat: the grid is the CPU's bit for bit
// whatever order the counter adds gave the ranks.

// `Step.splat`: the fused halves splat (the form's own splat), or leave it
// to the kernels here.
const SPLAT_OWN: u32 = 0u;
const SPLAT_SORTED: u32 = 1u;

// `grid_cells` (`layout::grid_cells_words`): with N = params.node_count
// and a cell named by its lowest node, the counts at [0, N), each cell's
// first slot within its block of CELL_BLOCK cells at [N, 2N), each block's
// first slot at [2N, 2N + blocks), then the slots in all.
@group(1) @binding(20) var<storage, read_write> grid_cells: array<atomic<u32>>;
// `grid_sort` (`layout::grid_sort_words`): with V = params.vertex_count,
// vertex v's cell at [v] (NONE when not splatted: no group, no mass, or
// outside the grid), its rank at [V + v], the vertex in slot s at
// [2V + s], and where vertex v lies in its cell at [3V + v] (its grid
// position's FRAC_BITS low bits along x, y, z, from bit 0, 5, 10).
// Indexed by vertex, not `vertex_slot`: only these kernels read it.
@group(1) @binding(21) var<storage, read_write> grid_sort: array<u32>;

// Consecutive cells an invocation of grid_cell_scan sums, and the cells of
// a block, a workgroup's (`layout::CELL_RUN`, `layout::CELL_BLOCK`).
const CELL_RUN: u32 = 4u;
const CELL_BLOCK: u32 = 256u;   // CELL_RUN × WORKGROUP

// Blocks of CELL_BLOCK cells.
fn cell_blocks() -> u32 {
    return (params.node_count + CELL_BLOCK - 1u) / CELL_BLOCK;
}

// Word of `grid_cells` holding the slots in all.
fn cells_total_word() -> u32 {
    return 2u * params.node_count + cell_blocks();
}

// The box of cells a workgroup of grid_cell_count reached in the group of
// its first vertex, encoded as `grid_box_raise` keeps it (maxima, zero for
// none), and its vertices outside their grid.
var<workgroup> count_group: u32;
var<workgroup> count_box: array<atomic<u32>, 6>;
var<workgroup> count_outside: atomic<u32>;

// Kernel `grid_cell_count` (`grid_cell_count`): one invocation per vertex.
@compute @workgroup_size(64)
fn grid_cell_count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    let inside = v < params.vertex_count;
    if (lid == 0u) {
        count_group = NONE;
        if (inside) {
            count_group = grid_vertex[vertex_slot(v)].group;
        }
        for (var a = 0u; a < 6u; a++) {
            atomicStore(&count_box[a], 0u);
        }
        atomicStore(&count_outside, 0u);
    }
    workgroupBarrier();
    if (inside) {
        grid_cell_count_vertex(v);
    }
    workgroupBarrier();
    if (lid == 0u) {
        let outside = atomicLoad(&count_outside);
        if (outside != 0u) {
            grid_counter_add(GRID_OUTSIDE, outside);
        }
        if (count_group != NONE && atomicLoad(&count_box[3]) != 0u) {
            let b = GRID_BOX + 6u * count_group;
            for (var a = 0u; a < 6u; a++) {
                box_word_raise(b + a, atomicLoad(&count_box[a]));
            }
        }
    }
}

// The workgroup's box word a raised to x (`box_word_raise`).
fn count_box_raise(a: u32, x: u32) {
    if (x > atomicLoad(&count_box[a])) {
        atomicMax(&count_box[a], x);
    }
}

// Vertex v's cell and rank (NONE and 0 when it is not splatted), and
// where in the cell it lies (`sorted_position`).
fn grid_cell_count_vertex(v: u32) {
    let gv = grid_vertex[vertex_slot(v)];
    var cell = NONE;
    var rank = 0u;
    if (gv.group != NONE && gv.mass_q != 0u) {
        let g = grid_group_now(gv.group);
        let q = grid_position(g, rods[gv.rod].origin.xyz + position_f32(pos_get(v)));
        if (q.w == 0) {
            atomicAdd(&count_outside, 1u);
        } else {
            let c = q.xyz >> vec3<u32>(FRAC_BITS);
            cell = node_index(g, c);
            rank = atomicAdd(&grid_cells[cell], 1u);
            let f = vec3<u32>(q.xyz & vec3<i32>(FRAC_MASK));
            grid_sort[3u * params.vertex_count + v] = f.x | (f.y << FRAC_BITS) | (f.z << (2u * FRAC_BITS));
            let u = vec3<u32>(c);
            if (gv.group == count_group) {
                for (var a = 0u; a < 3u; a++) {
                    count_box_raise(a, g.dims[a] - u[a]);
                    count_box_raise(3u + a, u[a] + 2u);
                }
            } else {
                // A workgroup across two groups' vertices: rare, and direct.
                grid_box_raise(gv.group, g, u, u);
            }
        }
    }
    grid_sort[v] = cell;
    grid_sort[params.vertex_count + v] = rank;
}

// A scan's workspace: one word per invocation.
var<workgroup> scan_sums: array<u32, WORKGROUP>;

// The inclusive prefix sum of `scan_sums` over the workgroup, in place
// (doubling: log2(WORKGROUP) rounds). Every invocation calls it.
fn scan_workgroup(lid: u32) {
    workgroupBarrier();
    for (var d = 1u; d < WORKGROUP; d <<= 1u) {
        var x = 0u;
        if (lid >= d) {
            x = scan_sums[lid - d];
        }
        workgroupBarrier();
        scan_sums[lid] += x;
        workgroupBarrier();
    }
}

// Kernel `grid_cell_scan` (the first part of `grid_cell_scan`): one
// invocation per run of CELL_RUN consecutive cells, a workgroup per block
// of CELL_BLOCK cells. Each cell's first slot within its block, each
// block's total (made the block's first slot by grid_cell_scan_blocks),
// and the counts zeroed for the next substep's grid_cell_count. An
// invocation sums its run, the workgroup scans the runs' sums, and the
// invocation writes its cells' firsts: a scan's barriers for every
// CELL_RUN cells rather than every cell.
@compute @workgroup_size(64)
fn grid_cell_scan(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    let run = invocation(gid, groups);
    let first = run * CELL_RUN;
    let n = params.node_count;
    var counts = array<u32, CELL_RUN>();
    var sum = 0u;
    for (var j = 0u; j < CELL_RUN; j++) {
        if (first + j < n) {
            counts[j] = atomicExchange(&grid_cells[first + j], 0u);
            sum += counts[j];
        }
    }
    scan_sums[lid] = sum;
    scan_workgroup(lid);
    var slot = scan_sums[lid] - sum;
    for (var j = 0u; j < CELL_RUN; j++) {
        if (first + j < n) {
            atomicStore(&grid_cells[n + first + j], slot);
            slot += counts[j];
        }
    }
    let block = run / WORKGROUP;
    if (lid == WORKGROUP - 1u && block < cell_blocks()) {
        atomicStore(&grid_cells[2u * n + block], scan_sums[lid]);
    }
}

// Kernel `grid_cell_scan_blocks` (the rest of `grid_cell_scan`): one
// workgroup. Each block's total becomes its first slot, the exclusive
// prefix sum of the totals: invocation i sums a run of consecutive blocks,
// the runs' sums are scanned, and each invocation writes its run's firsts.
// Then the slots in all.
@compute @workgroup_size(64)
fn grid_cell_scan_blocks(@builtin(local_invocation_index) lid: u32) {
    let blocks = cell_blocks();
    let base = 2u * params.node_count;
    let per = (blocks + WORKGROUP - 1u) / WORKGROUP;
    let first = min(lid * per, blocks);
    let end = min(first + per, blocks);
    var sum = 0u;
    for (var b = first; b < end; b++) {
        sum += atomicLoad(&grid_cells[base + b]);
    }
    scan_sums[lid] = sum;
    scan_workgroup(lid);
    var slot = scan_sums[lid] - sum;
    for (var b = first; b < end; b++) {
        let total = atomicLoad(&grid_cells[base + b]);
        atomicStore(&grid_cells[base + b], slot);
        slot += total;
    }
    if (lid == WORKGROUP - 1u) {
        atomicStore(&grid_cells[base + blocks], scan_sums[lid]);
    }
}

// Kernel `grid_cell_scatter` (`grid_cell_scatter`): one invocation per
// vertex; a splatted vertex into slot (its cell's first) + (its rank).
@compute @workgroup_size(64)
fn grid_cell_scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v >= params.vertex_count) {
        return;
    }
    let cell = grid_sort[v];
    if (cell == NONE) {
        return;
    }
    let n = params.node_count;
    let first = atomicLoad(&grid_cells[n + cell]) + atomicLoad(&grid_cells[2u * n + cell / CELL_BLOCK]);
    grid_sort[2u * params.vertex_count + first + grid_sort[params.vertex_count + v]] = v;
}

// Vertex v's grid position as grid_cell_count found it: its cell from
// the cell's node index, and where in the cell from the stored fraction.
// Not computed again from the position: a driver may round the two
// kernels' arithmetic differently (fused multiply-adds), and a vertex on
// a cell's face would then be splatted into a cell it was not counted in
// (nor its box raised for).
fn sorted_position(g: GridGroup, v: u32) -> vec3<i32> {
    let i = grid_sort[v] - g.dims.w;
    let row = i / g.dims.x;
    let cell = vec3<u32>(i - row * g.dims.x, row % g.dims.y, row / g.dims.y);
    let f = grid_sort[3u * params.vertex_count + v];
    let frac = vec3<u32>(f, f >> FRAC_BITS, f >> (2u * FRAC_BITS)) & vec3<u32>(u32(FRAC_MASK));
    return vec3<i32>((cell << vec3<u32>(FRAC_BITS)) | frac);
}

// Kernel `grid_splat_sorted` (`grid_splat_sorted`): one invocation per
// run of `params.sorted_run` consecutive slots (16 by default), which it
// walks with the walked splat's window (`SplatWindow`: with 64-bit
// atomics the sums of consecutive vertices in a cell kept in registers,
// each node added when the walk leaves it). Sorted by cell, a run's vertices mostly share a
// few cells: for the hair at 1 M vertices 2.3 adds a vertex where the
// walk along the rods makes 11.5 and one add per vertex and node 30
// (tests/splat_atomics.rs). No workgroup memory and no barrier: a run's
// vertices are read one after another, and the runs side by side.
@compute @workgroup_size(64)
fn grid_splat_sorted(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let first = invocation(gid, groups) * params.sorted_run;
    let slots = min(atomicLoad(&grid_cells[cells_total_word()]), params.vertex_count);
    if (first >= slots) {
        return;
    }
    let end = min(first + params.sorted_run, slots);
    var window = splat_window();
    var group = NONE;
    var g: GridGroup;
    var vmax = 0u;
    for (var s = first; s < end; s++) {
        let v = grid_sort[2u * params.vertex_count + s];
        let gv = grid_vertex[vertex_slot(v)];
        // Slots of two groups (their cells are apart): the window moves
        // to the other grid.
        if (gv.group != group) {
            if (group != NONE) {
                splat_window_flush(&window, g);
                window = splat_window();
            }
            group = gv.group;
            g = grid_group_now(group);
        }
        let vq = quantise_velocity(vel_get(v).xyz);
        vmax = max(vmax, quantised_speed(vq));
        splat_window_add(&window, g, sorted_position(g, v), gv.mass_q, vq);
    }
    splat_window_flush(&window, g);
    raise_vmax(vmax);
}
