//! A model of the device-memory traffic of one substep: the fewest bytes
//! each dispatched kernel must move if it read every buffer element it reads
//! once and wrote every element it writes once (perfect caching within a
//! kernel, none between kernels). A floor for today's kernel design, not a
//! counter: `strands bench` divides it by the measured time to say how close
//! the simulation runs to the device's memory bandwidth.
//!
//! What each kernel reads and writes comes from the shaders themselves: the
//! WGSL is parsed with naga and every load, store and atomic of each entry
//! point (through the functions it calls) is traced to its global and, for
//! an array of structs, to the struct members it touches. A kernel that
//! reads one member of `Scratch` is charged that member's 16 bytes per
//! element, not the struct's 64. How many elements each binding holds is
//! the host's knowledge (`elements`, from the buffers `GpuSimulator::new`
//! allocates). Not counted: the SDF texture (sampled sparsely, through the
//! texture cache), the per-frame uploads of step values and poses, and the
//! clearing of the counters.
//!
//! A second floor counts the same accesses in the 32-byte sectors a GPU's
//! memory moves (NVIDIA's L2 cache and DRAM, and most others, transfer no
//! less): each sector that holds a byte the kernel reads (or writes) once
//! per kernel (`Granularity::Sectors`). Where a kernel reads one member of
//! a larger struct (`rest[v].inv_mass`, 4 bytes of 48), the sector holding
//! it is charged, so this floor shows what an array of structs costs over
//! an array per member. The same perfect caching within a kernel, none
//! between kernels.

use std::collections::{BTreeMap, HashMap};

use naga::{Expression, Function, Handle, Module, Statement, TypeInner};

use super::layout::{Domain, GRID_COUNTERS, GRID_WORDS_PER_NODE, Kernel, binding, shader_source};
use super::schedule::{Form, Splat};
use crate::model::params::{Projection, SimParams};
use crate::model::rods::{EndCondition, RodSet};

/// The sizes that decide how many elements each buffer holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub vertices: u64,
    pub rods: u64,
    pub edges: u64,
    /// Clamped rod ends (`clamps` entries).
    pub clamps: u64,
    pub anchors: u64,
    /// Interaction groups (`grid_groups` entries per substep).
    pub groups: u64,
    /// Grid nodes of all interaction groups.
    pub nodes: u64,
}

impl Counts {
    pub fn of(rods: &RodSet) -> Counts {
        let clamped = |e: &EndCondition| matches!(e, EndCondition::Clamped(_)) as u64;
        Counts {
            vertices: rods.vertex_count() as u64,
            rods: rods.rod_count() as u64,
            edges: rods.edge_count() as u64,
            clamps: rods.start.iter().chain(&rods.end).map(clamped).sum(),
            anchors: rods.anchors.len() as u64,
            groups: rods.interaction.groups.len() as u64,
            nodes: rods
                .interaction
                .groups
                .iter()
                .map(|g| g.dims.iter().map(|&d| d as u64).product::<u64>())
                .sum(),
        }
    }
}

/// Elements of the buffer bound at `(group, binding)` that one dispatch may
/// touch (`None`: not counted). Mirrors the allocations of `GpuSimulator::new`.
pub fn elements(group: u32, b: u32, c: &Counts) -> Option<u64> {
    use binding::*;
    Some(match (group, b) {
        // `Step` (uniform), `rods`, `rest`, and the poses of the substep's
        // two slots (start and end).
        (0, 0) => 1,
        (0, 1) => c.rods,
        (0, 2) => c.vertices,
        (0, 4) => 2 * c.anchors,
        (1, POS | VEL | POS_UNC | POS_START | SRC | DST | SCRATCH | CONTACTS | GRID_VERTEX) => {
            c.vertices
        }
        // Per edge, at the index of the edge's first vertex.
        (1, FRAME) => c.edges,
        (1, CLAMPS) => c.clamps,
        (1, STATS) => 8,
        (1, COLLIDERS) => 1,
        (1, SDF) => return None,
        (1, GRID_GROUPS) => c.groups,
        (1, GRID) => c.nodes * GRID_WORDS_PER_NODE as u64 + GRID_COUNTERS as u64,
        (1, GRID_FIELDS) => c.nodes,
        // A few words: the walked splat's boxes and the region (per group),
        // the indirect dispatch.
        (1, GRID_DISPATCH) => super::layout::grid_dispatch_words(c.groups as usize) as u64,
        (1, GRID_REGION) => super::layout::grid_region_words(c.groups as usize) as u64,
        // The sorted splat's words (`sorted_splat_words` counts the parts
        // each of its kernels reaches).
        (1, GRID_CELLS) => super::layout::grid_cells_words(c.nodes as usize) as u64,
        (1, GRID_SORT) => super::layout::grid_sort_words(c.vertices as usize) as u64,
        // The whole-frame kernel reads one entry a substep, and the model
        // counts a substep.
        (1, FRAME_STEPS) => 1,
        _ => panic!("traffic model: no element count for binding ({group}, {b})"),
    })
}

/// What one kernel does to one element of one binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    pub group: u32,
    pub binding: u32,
    /// The WGSL global's name.
    pub name: String,
    /// Bytes of one element the kernel reads (the members it loads).
    pub read: u64,
    /// Bytes of one element the kernel writes.
    pub written: u64,
    /// Bytes from one element's start to the next's (the array's stride;
    /// the type's size for a global that is not an array).
    pub stride: u64,
    /// The byte ranges (offset, length) of one element the kernel reads:
    /// the members it loads, or the whole element.
    pub read_ranges: Vec<(u64, u64)>,
    /// The byte ranges of one element the kernel writes.
    pub written_ranges: Vec<(u64, u64)>,
}

/// What the model counts: the bytes the kernels touch, or the 32-byte
/// sectors that hold them (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Bytes,
    Sectors,
}

/// The bytes a GPU's memory moves at the least: 32-byte sectors.
pub const SECTOR_BYTES: u64 = 32;

/// Bytes of the distinct `SECTOR_BYTES` sectors that `n` consecutive
/// elements of `stride` bytes, from a sector-aligned start, occupy with the
/// byte ranges `ranges` (offset, length, within the element) of each:
/// each sector once. The
/// layout repeats every lcm(stride, 32) bytes, a whole number of sectors,
/// so whole periods are counted once and multiplied.
pub fn sector_bytes(n: u64, stride: u64, ranges: &[(u64, u64)]) -> u64 {
    debug_assert!(
        ranges.iter().all(|&(offset, len)| offset + len <= stride),
        "ranges {ranges:?} reach past an element of {stride} bytes"
    );
    if n == 0 || stride == 0 || ranges.iter().all(|&(_, len)| len == 0) {
        return 0;
    }
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let period = SECTOR_BYTES / gcd(stride, SECTOR_BYTES);
    let sectors_of = |elements: u64| {
        let mut sectors = std::collections::BTreeSet::new();
        for k in 0..elements {
            for &(offset, len) in ranges.iter().filter(|r| r.1 > 0) {
                let first = (k * stride + offset) / SECTOR_BYTES;
                let last = (k * stride + offset + len - 1) / SECTOR_BYTES;
                sectors.extend(first..=last);
            }
        }
        sectors.len() as u64
    };
    SECTOR_BYTES * ((n / period) * sectors_of(period) + sectors_of(n % period))
}

/// Bytes one dispatch of a kernel reads and writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bytes {
    pub read: u64,
    pub written: u64,
}

impl Bytes {
    pub fn total(self) -> u64 {
        self.read + self.written
    }
}

impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.read += o.read;
        self.written += o.written;
    }
}

/// Per kernel, what it reads and writes of each binding, traced in the WGSL.
#[derive(Clone, Debug)]
pub struct TrafficModel {
    uses: HashMap<Kernel, Vec<Use>>,
}

/// Which part of a global's element an access reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Whole,
    Member(u32),
}

/// Per global, the parts read and the parts written.
type Access = BTreeMap<Handle<naga::GlobalVariable>, (Vec<Part>, Vec<Part>)>;

impl TrafficModel {
    /// The model of the simulator's shaders (`layout::shader_source`, and
    /// the whole-frame kernel's own module: `Kernel::source`).
    pub fn from_shaders() -> TrafficModel {
        let parse = |source: &str| {
            naga::front::wgsl::parse_str(source)
                .expect("the simulator's shaders parse (tests/gpu_layout.rs)")
        };
        let module = parse(&shader_source());
        let frame = parse(&Kernel::FrameRod.source());
        Self::of_modules(&module, &frame)
    }

    /// Each kernel's uses traced in `m`, the whole-frame kernel's in `frame`.
    fn of_modules(module: &Module, frame: &Module) -> TrafficModel {
        let uses = Kernel::ALL
            .iter()
            .map(|&k| {
                let m = if k.is_frame() { frame } else { module };
                let ep = m
                    .entry_points
                    .iter()
                    .find(|ep| ep.name == k.entry_point())
                    .unwrap_or_else(|| panic!("no entry point `{}`", k.entry_point()));
                let mut access = Access::new();
                trace(m, &ep.function, &mut access);
                let mut uses: Vec<Use> = access
                    .into_iter()
                    .filter_map(|(g, (read, written))| {
                        let var = &m.global_variables[g];
                        let b = var.binding.as_ref()?;
                        Some(Use {
                            group: b.group,
                            binding: b.binding,
                            name: var.name.clone().unwrap_or_default(),
                            read: part_bytes(m, g, &read),
                            written: part_bytes(m, g, &written),
                            stride: element_stride(m, g),
                            read_ranges: part_ranges(m, g, &read),
                            written_ranges: part_ranges(m, g, &written),
                        })
                    })
                    .collect();
                uses.sort_by_key(|u| (u.group, u.binding));
                (k, uses)
            })
            .collect();
        TrafficModel { uses }
    }

    /// What `kernel` reads and writes per element of each binding it uses.
    pub fn uses(&self, kernel: Kernel) -> &[Use] {
        &self.uses[&kernel]
    }

    /// Bytes one dispatch of `kernel` moves: every element of every buffer
    /// its code touches, whatever the settings.
    pub fn kernel_bytes(&self, kernel: Kernel, c: &Counts) -> Bytes {
        self.kernel_bytes_where(kernel, c, Granularity::Bytes, |_| true)
    }

    /// Bytes one dispatch of `kernel` moves in a substep under `params`:
    /// `kernel_bytes`, less the positions at the start of the substep
    /// (`pos_start`) unless the projection is SHAKE. Only SHAKE touches
    /// them: the kernels that bind them and run for other projections (the
    /// fused substeps) reach them only behind a branch on `params.projection`,
    /// the same in every invocation, and the rest (`save_start`,
    /// `project_shake*`) are dispatched only for SHAKE. So this is the cost
    /// of a dispatch the substep's schedule makes under `params`
    /// (`substep_kernels_in`), not of a kernel run on its own whatever the
    /// settings (`GpuSimulator::run_kernel`): that is `kernel_bytes`.
    /// Likewise under `Splat::Sorted` the fused first halves do not splat
    /// (`Step.splat`), so their grid bindings move nothing.
    pub fn kernel_bytes_under(
        &self,
        kernel: Kernel,
        c: &Counts,
        params: &SimParams,
        splat: Splat,
    ) -> Bytes {
        self.kernel_traffic_under(kernel, c, params, splat, Granularity::Bytes)
    }

    /// `kernel_bytes_under` counted at granularity `g`.
    pub fn kernel_traffic_under(
        &self,
        kernel: Kernel,
        c: &Counts,
        params: &SimParams,
        splat: Splat,
        g: Granularity,
    ) -> Bytes {
        self.kernel_bytes_where(kernel, c, g, |u| counted_under(kernel, u, params, splat))
    }

    fn kernel_bytes_where(
        &self,
        kernel: Kernel,
        c: &Counts,
        g: Granularity,
        counted: impl Fn(&Use) -> bool,
    ) -> Bytes {
        let mut total = Bytes::default();
        for u in self.uses(kernel).iter().filter(|u| counted(u)) {
            total += use_bytes(kernel, u, c, g);
        }
        total
    }

    /// Bytes one substep of `rods` under `params` moves in the walked
    /// frame, a GPU's form: the sum over its dispatches (`substep_kernels`).
    pub fn substep_bytes(&self, rods: &RodSet, params: &SimParams) -> Bytes {
        self.substep_bytes_in(rods, params, Form::WalkedFrame, Splat::Own)
    }

    /// Bytes one substep moves with its per-rod stages in `form`: the sum
    /// over the dispatches that form runs (`substep_kernels_in`). A fused
    /// form's kernel counts each element it touches once, which its state
    /// meets through the caches at best. What `params`
    /// leaves untouched is not counted (`kernel_bytes_under`). `splat`:
    /// the grid's splat (`Splat::Sorted` adds its five dispatches).
    pub fn substep_bytes_in(
        &self,
        rods: &RodSet,
        params: &SimParams,
        form: Form,
        splat: Splat,
    ) -> Bytes {
        self.substep_traffic_in(rods, params, form, splat, Granularity::Bytes)
    }

    /// `substep_bytes_in` counted at granularity `g`.
    pub fn substep_traffic_in(
        &self,
        rods: &RodSet,
        params: &SimParams,
        form: Form,
        splat: Splat,
        g: Granularity,
    ) -> Bytes {
        let c = Counts::of(rods);
        let mut total = Bytes::default();
        for k in substep_kernels_in(rods, params, form, splat) {
            total += self.kernel_traffic_under(k, &c, params, splat, g);
        }
        total
    }

    /// `substep_bytes_in` by buffer (the WGSL global's name), summed over the
    /// substep's dispatches: the buffers that move anything, most first.
    pub fn substep_bytes_by_buffer(
        &self,
        rods: &RodSet,
        params: &SimParams,
        form: Form,
        splat: Splat,
    ) -> Vec<(String, Bytes)> {
        self.substep_traffic_by_buffer(rods, params, form, splat, Granularity::Bytes)
    }

    /// `substep_bytes_by_buffer` counted at granularity `g` (most first
    /// by that count).
    pub fn substep_traffic_by_buffer(
        &self,
        rods: &RodSet,
        params: &SimParams,
        form: Form,
        splat: Splat,
        g: Granularity,
    ) -> Vec<(String, Bytes)> {
        let c = Counts::of(rods);
        let mut by: BTreeMap<&str, Bytes> = BTreeMap::new();
        for k in substep_kernels_in(rods, params, form, splat) {
            for u in self
                .uses(k)
                .iter()
                .filter(|u| counted_under(k, u, params, splat))
            {
                *by.entry(&u.name).or_default() += use_bytes(k, u, &c, g);
            }
        }
        let mut out: Vec<(String, Bytes)> = by
            .into_iter()
            .filter(|(_, b)| b.total() > 0)
            .map(|(name, b)| (name.to_string(), b))
            .collect();
        out.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then_with(|| a.0.cmp(&b.0)));
        out
    }
}

/// Whether a dispatch of `kernel` under `params` and `splat` moves `u`'s
/// bytes (`kernel_bytes_under`).
fn counted_under(kernel: Kernel, u: &Use, params: &SimParams, splat: Splat) -> bool {
    let shake = matches!(params.projection, Projection::Shake { .. })
        || !(u.group == 1 && u.binding == binding::POS_START);
    // The fused first halves reach these only to splat, which they leave
    // to the sorted splat's kernels under it.
    let splat_binding = u.group == 1
        && matches!(
            u.binding,
            binding::GRID | binding::GRID_DISPATCH | binding::GRID_VERTEX | binding::GRID_GROUPS
        );
    let first_half = kernel == Kernel::SubstepStartRod;
    let splatting = !(splat.is_sorted() && first_half && splat_binding);
    shake && splatting
}

/// Bytes one dispatch of `kernel` moves through the binding of `u`,
/// counted at granularity `g`.
fn use_bytes(kernel: Kernel, u: &Use, c: &Counts, g: Granularity) -> Bytes {
    let Some(n) = elements(u.group, u.binding, c) else {
        return Bytes::default();
    };
    // A single invocation (`grid_clear`) reaches one element; the single
    // workgroup of `grid_cell_scan_blocks` the blocks' words and the total;
    // the sorted splat's other kernels the parts of their word arrays they
    // read and write (`sorted_splat_words`).
    let (read_n, written_n) = if kernel.domain() == Domain::Single {
        (n.min(1), n.min(1))
    } else if kernel.domain() == Domain::Workgroup {
        let blocks = n.min(c.nodes.div_ceil(super::layout::CELL_BLOCK as u64) + 1);
        (blocks, blocks)
    } else {
        sorted_splat_words(kernel, u.binding, c).unwrap_or((n, n))
    };
    match g {
        Granularity::Bytes => Bytes {
            read: u.read * read_n,
            written: u.written * written_n,
        },
        Granularity::Sectors => Bytes {
            read: sector_bytes(read_n, u.stride, &u.read_ranges),
            written: sector_bytes(written_n, u.stride, &u.written_ranges),
        },
    }
}

/// The words of `grid`, `grid_cells` and `grid_sort` (shaders/grid_sort.wgsl
/// has their layout) that a kernel of the sorted splat reads and writes,
/// where it reaches a part (N nodes, V vertices, B blocks):
/// `grid_cell_count` adds to the grid's counters and the N counts and
/// writes each vertex's cell, rank and place in its cell (3V);
/// `grid_cell_scan` reads the counts and writes them zero, the first
/// slots and the block totals (2N + B); `grid_cell_scatter` reads the
/// first slots and blocks and each vertex's cell and rank (2V), and
/// writes the slots (V); `grid_splat_sorted` reads the total, the slots
/// and each vertex's cell and place (3V). (read, written) words.
fn sorted_splat_words(kernel: Kernel, b: u32, c: &Counts) -> Option<(u64, u64)> {
    let blocks = c.nodes.div_ceil(super::layout::CELL_BLOCK as u64);
    let (n, v) = (c.nodes, c.vertices);
    Some(match (kernel, b) {
        (Kernel::GridCellCount, binding::GRID) => (GRID_COUNTERS as u64, GRID_COUNTERS as u64),
        (Kernel::GridCellCount, binding::GRID_CELLS) => (n, n),
        (Kernel::GridCellCount, binding::GRID_SORT) => (0, 3 * v),
        (Kernel::GridCellScan, binding::GRID_CELLS) => (n, 2 * n + blocks),
        (Kernel::GridCellScatter, binding::GRID_CELLS) => (n + blocks, 0),
        (Kernel::GridCellScatter, binding::GRID_SORT) => (2 * v, v),
        (Kernel::GridSplatSorted, binding::GRID_CELLS) => (1, 0),
        (Kernel::GridSplatSorted, binding::GRID_SORT) => (3 * v, 0),
        _ => return None,
    })
}

/// The kernels one substep dispatches, in order (`schedule::substep_schedule`,
/// in the walked frame: the bench's figures are for real GPUs). Each Jacobi
/// iteration is one `ProjectJacobi`.
pub fn substep_kernels(rods: &RodSet, params: &SimParams) -> Vec<Kernel> {
    substep_kernels_in(rods, params, Form::WalkedFrame, Splat::Own)
}

/// The kernels one substep dispatches with its per-rod stages in `form`
/// (`schedule::substep_schedule`): for `Form::WalkedFused` the two halves
/// around the grid (or one `substep_rod`), each a kernel that reads and writes
/// what all its stages touch, which this model counts once per dispatch.
pub fn substep_kernels_in(
    rods: &RodSet,
    params: &SimParams,
    form: Form,
    splat: Splat,
) -> Vec<Kernel> {
    super::schedule::substep_schedule(rods, params, form, splat)
        .into_iter()
        .map(|d| d.kernel)
        .collect()
}

/// Bytes of the given parts of one element of global `g`.
fn part_bytes(m: &Module, g: Handle<naga::GlobalVariable>, parts: &[Part]) -> u64 {
    let ctx = m.to_ctx();
    let element = element_type(m, g);
    if parts.is_empty() {
        0
    } else if parts.contains(&Part::Whole) {
        match m.types[m.global_variables[g].ty].inner {
            TypeInner::Array { stride, .. } => stride as u64,
            ref t => t.size(ctx) as u64,
        }
    } else {
        let TypeInner::Struct { ref members, .. } = m.types[element].inner else {
            unreachable!("members of a non-struct element");
        };
        parts
            .iter()
            .map(|p| match p {
                Part::Member(i) => m.types[members[*i as usize].ty].inner.size(ctx) as u64,
                Part::Whole => unreachable!(),
            })
            .sum()
    }
}

/// Bytes from one element of global `g` to the next: the array's stride,
/// or the type's size for a global that is not an array.
fn element_stride(m: &Module, g: Handle<naga::GlobalVariable>) -> u64 {
    match m.types[m.global_variables[g].ty].inner {
        TypeInner::Array { stride, .. } => stride as u64,
        ref t => t.size(m.to_ctx()) as u64,
    }
}

/// The byte ranges (offset, length) of the given parts of one element of
/// global `g`: the whole element, or each member.
fn part_ranges(m: &Module, g: Handle<naga::GlobalVariable>, parts: &[Part]) -> Vec<(u64, u64)> {
    if parts.contains(&Part::Whole) {
        return vec![(0, element_stride(m, g))];
    }
    let ctx = m.to_ctx();
    let TypeInner::Struct { ref members, .. } = m.types[element_type(m, g)].inner else {
        return Vec::new();
    };
    let mut ranges: Vec<(u64, u64)> = parts
        .iter()
        .map(|p| match p {
            Part::Member(i) => {
                let member = &members[*i as usize];
                (
                    member.offset as u64,
                    m.types[member.ty].inner.size(ctx) as u64,
                )
            }
            Part::Whole => unreachable!(),
        })
        .collect();
    ranges.sort();
    ranges
}

/// The type of one element of global `g`: the array's element, or the
/// global's own type when it is not an array.
fn element_type(m: &Module, g: Handle<naga::GlobalVariable>) -> Handle<naga::Type> {
    let ty = m.global_variables[g].ty;
    match m.types[ty].inner {
        TypeInner::Array { base, .. } => base,
        _ => ty,
    }
}

/// Record every load, store and atomic of `f` and of the functions it calls.
fn trace(m: &Module, f: &Function, access: &mut Access) {
    for (_, e) in f.expressions.iter() {
        if let Expression::Load { pointer } = *e {
            record(m, f, pointer, access, true, false);
        }
    }
    trace_block(m, f, &f.body, access);
}

fn trace_block(m: &Module, f: &Function, block: &naga::Block, access: &mut Access) {
    for s in block.iter() {
        match s {
            Statement::Block(b) => trace_block(m, f, b, access),
            Statement::If { accept, reject, .. } => {
                trace_block(m, f, accept, access);
                trace_block(m, f, reject, access);
            }
            Statement::Switch { cases, .. } => {
                for c in cases {
                    trace_block(m, f, &c.body, access);
                }
            }
            Statement::Loop {
                body, continuing, ..
            } => {
                trace_block(m, f, body, access);
                trace_block(m, f, continuing, access);
            }
            Statement::Store { pointer, .. } => record(m, f, *pointer, access, false, true),
            Statement::Atomic { pointer, .. } => record(m, f, *pointer, access, true, true),
            Statement::Call { function, .. } => trace(m, &m.functions[*function], access),
            _ => {}
        }
    }
}

/// Trace `pointer` to its global (if it reaches one) and the part of the
/// element it addresses, and record the access.
fn record(
    m: &Module,
    f: &Function,
    pointer: Handle<Expression>,
    access: &mut Access,
    read: bool,
    write: bool,
) {
    // Member indices from the global outwards (`None`: a dynamic index).
    let mut chain = Vec::new();
    let mut e = pointer;
    let g = loop {
        match f.expressions[e] {
            Expression::Access { base, .. } => {
                chain.push(None);
                e = base;
            }
            Expression::AccessIndex { base, index } => {
                chain.push(Some(index));
                e = base;
            }
            Expression::GlobalVariable(g) => break g,
            _ => return,
        }
    };
    chain.reverse();
    let is_array = matches!(
        m.types[m.global_variables[g].ty].inner,
        TypeInner::Array { .. }
    );
    let inside = if is_array {
        chain.get(1)
    } else {
        chain.first()
    };
    let is_struct = matches!(m.types[element_type(m, g)].inner, TypeInner::Struct { .. });
    let part = match inside {
        Some(Some(i)) if is_struct => Part::Member(*i),
        _ => Part::Whole,
    };
    let entry = access.entry(g).or_default();
    for (on, parts) in [(read, &mut entry.0), (write, &mut entry.1)] {
        if on && !parts.contains(&part) {
            parts.push(part);
        }
    }
}
