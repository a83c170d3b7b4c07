//! Hair–hair interaction: which rods interact through which grid,
//! with which constants. The grid arithmetic itself is `cpu::grid` (CPU
//! reference) and `shaders/grid.wgsl` (GPU); the design is in
//! `docs/INTERACTION.md`.
//!
//! Rods belong to named groups (scene `[[rods]] group`, default
//! `"default"`); each group listed in the scene's `[interaction] groups` gets
//! its own axis-aligned grid, and only rods of the same group interact.
//!
//! The grids are placed over a scene's rods when it is built
//! (`build::build_interaction`); the grid's units (`GridGeometry`, `ONE`,
//! the mass quantisation) are defined here, for both backends.

use glam::DVec3;

use crate::model::anchor::Anchor;

/// Marks a vertex that belongs to no interacting group.
pub const NO_GROUP: u32 = u32::MAX;
/// Largest grid (nodes per group) a scene may ask for: 256³ nodes, 0.5 GiB
/// of accumulators. The GPU may refuse a smaller one (its storage-buffer
/// limit); it says so with the size and the limit.
pub const MAX_GRID_NODES: usize = 1 << 24;

/// The `[interaction]` settings, as checked by the scene loader.
#[derive(Clone, Debug, PartialEq)]
pub struct InteractionSpec {
    /// Groups whose rods interact among themselves.
    pub groups: Vec<String>,
    /// Grid spacing: cells along the grid's longest side (default 48) or a
    /// cell size (m); the scene gives one or neither.
    pub spacing: Spacing,
    /// Grown on every side (m, default 0) of the box the group's rods can
    /// reach: a rod clamped to a fixed or translating anchor within its
    /// length of its clamped vertices; one on a rotating anchor within the
    /// sphere about the anchor's pivot that its clamped vertices sweep, plus
    /// its length; a free rod within its length of its initial bounds.
    pub padding: Option<f64>,
    /// Fraction of the difference to the grid velocity taken per substep,
    /// at the root and the tip (linear in arc length between), in [0, 1].
    pub friction_root: f64,
    /// The same at the tip.
    pub friction_tip: f64,
    /// Rest density (kg/m³) above which vertices are pushed out; `None`:
    /// the densest node of the group's initial state (a groom starts at
    /// rest, nowhere compressed).
    pub rest_density: Option<f64>,
    /// Fraction of the density-gradient step taken per substep, in [0, 1].
    pub volume_stiffness: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
/// How a group's grid cell is chosen.
pub enum Spacing {
    /// Cells along the grid's longest side.
    Resolution(u32),
    /// Cell size (m).
    Cell(f64),
}

/// Default cells along the longest side.
pub const DEFAULT_RESOLUTION: u32 = 48;
/// Default `friction_root`.
pub const DEFAULT_FRICTION_ROOT: f64 = 0.1;
/// Default `friction_tip`.
pub const DEFAULT_FRICTION_TIP: f64 = 0.3;
/// Default `volume_stiffness`.
pub const DEFAULT_VOLUME_STIFFNESS: f64 = 0.3;

impl Default for InteractionSpec {
    fn default() -> Self {
        InteractionSpec {
            groups: Vec::new(),
            spacing: Spacing::Resolution(DEFAULT_RESOLUTION),
            padding: None,
            friction_root: DEFAULT_FRICTION_ROOT,
            friction_tip: DEFAULT_FRICTION_TIP,
            rest_density: None,
            volume_stiffness: DEFAULT_VOLUME_STIFFNESS,
        }
    }
}

// The grid's units, shared by both backends (the kernels that use them:
// `cpu::grid` and shaders/grid.wgsl).

/// Sub-cell resolution of a vertex's grid position: cell / 2^FRAC_BITS.
pub const FRAC_BITS: u32 = 5;
/// Sum of a vertex's 8 corner weights.
pub const ONE: i64 = 1 << (3 * FRAC_BITS);

/// Largest quantised vertex mass: masses are stored to 1 part in 2^12 of
/// the group's heaviest vertex.
pub const MASS_LEVELS: u32 = 1 << 12;

/// A group's grid for one substep: f32 origin (m), cell size (m) and
/// nodes per axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridGeometry {
    /// Lowest corner node (m).
    pub origin: [f32; 3],
    /// Cell size (m).
    pub cell: f32,
    /// Nodes along x, y, z.
    pub dims: [u32; 3],
}

impl GridGeometry {
    /// Nodes of the grid.
    pub fn node_count(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// `2^FRAC_BITS / cell` in f32, the one factor both backends multiply by.
    pub fn scale(&self) -> f32 {
        (1u32 << FRAC_BITS) as f32 / self.cell
    }

    /// Flat index of node `n` (x fastest).
    #[inline]
    pub fn node_index(&self, n: [u32; 3]) -> usize {
        n[0] as usize
            + self.dims[0] as usize * (n[1] as usize + self.dims[1] as usize * n[2] as usize)
    }
}

/// Vertex masses in units of `mass_unit = max mass / (MASS_LEVELS − 1)`:
/// `(unit, quantised masses)`; every positive mass gets at least 1.
pub fn quantise_masses(mass: &[f64]) -> (f64, Vec<u32>) {
    let max = mass.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return (1.0, vec![0; mass.len()]);
    }
    let unit = max / (MASS_LEVELS - 1) as f64;
    let q = mass
        .iter()
        .map(|&m| {
            if m > 0.0 {
                ((m / unit).round() as u32).max(1)
            } else {
                0
            }
        })
        .collect();
    (unit, q)
}

/// One interacting group's grid: placed at t = 0, it translates with
/// `anchor` (the anchor most of the group's clamped ends follow; the world
/// when none is clamped).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupGrid {
    /// The group's name.
    pub name: String,
    /// The group's rods.
    pub rods: Vec<usize>,
    /// The anchor the grid translates with.
    pub anchor: usize,
    /// Grid origin (lowest corner node) less the anchor's translation (m):
    /// at time t the origin is this plus the anchor's translation at t.
    pub origin: DVec3,
    /// Cell size (m), exact in f32.
    pub cell: f64,
    /// Nodes per axis.
    pub dims: [u32; 3],
    /// Mass of one unit of a quantised vertex mass (kg).
    pub mass_unit: f64,
    /// Rest density ρ₀ (kg/m³).
    pub rest_density: f64,
    /// Whether ρ₀ was taken from the initial state (the scene gave none).
    pub rest_density_from_state: bool,
    /// Fraction β of the density-gradient step per substep.
    pub volume_stiffness: f64,
}

impl GroupGrid {
    /// The grid at time `t`: origin moved by the anchor's translation,
    /// rounded to f32 once, here, for both backends.
    pub fn geometry_at(&self, anchors: &[Anchor], t: f64) -> GridGeometry {
        let p = anchors[self.anchor].pose(t);
        let o = self.origin + p.translation;
        GridGeometry {
            origin: [o.x as f32, o.y as f32, o.z as f32],
            cell: self.cell as f32,
            dims: self.dims,
        }
    }

    /// `ρ/ρ₀` per unit of a node's mass accumulator: `mass_unit / (ONE · cell³ · ρ₀)`.
    pub fn pressure_scale(&self) -> f64 {
        self.mass_unit / (ONE as f64 * self.cell.powi(3) * self.rest_density)
    }

    /// Largest distance the volume term moves a vertex in one substep (m).
    pub fn max_push(&self) -> f64 {
        0.5 * self.cell
    }
}

/// Per vertex: its group's index in `Interaction::groups` (`NO_GROUP` for
/// none), its quantised mass and its friction factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridVertex {
    /// Index in `Interaction::groups`, or `NO_GROUP`.
    pub group: u32,
    /// Mass in units of the group's mass unit.
    pub mass_q: u32,
    /// Fraction of the difference to the grid velocity taken per substep.
    pub friction: f64,
}

impl Default for GridVertex {
    fn default() -> Self {
        GridVertex {
            group: NO_GROUP,
            mass_q: 0,
            friction: 0.0,
        }
    }
}

/// Hair–hair interaction of a `RodSet`: empty (`groups` empty) when the
/// scene has none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interaction {
    /// The interacting groups, each with its grid.
    pub groups: Vec<GroupGrid>,
    /// Per vertex (flat, as the state); empty when there are no groups.
    pub vertex: Vec<GridVertex>,
}

impl Interaction {
    /// Whether any group interacts.
    pub fn is_active(&self) -> bool {
        !self.groups.is_empty()
    }

    /// Quantise each group's vertex masses again from `mass` (per vertex of
    /// the rod set), as `build::build_interaction` did, after a material changed them.
    pub fn requantise_masses(&mut self, mass: &[f64]) {
        for gi in 0..self.groups.len() as u32 {
            let verts: Vec<usize> = (0..self.vertex.len())
                .filter(|&v| self.vertex[v].group == gi)
                .collect();
            let masses: Vec<f64> = verts.iter().map(|&v| mass[v]).collect();
            let (_, mass_q) = quantise_masses(&masses);
            for (&v, &m) in verts.iter().zip(&mass_q) {
                self.vertex[v].mass_q = m;
            }
        }
    }
}
