//! Hair–hair interaction: which rods interact through which grid,
//! with which constants. The grid arithmetic itself is `cpu::grid` (CPU
//! reference) and `shaders/grid.wgsl` (GPU); the design is in
//! `docs/INTERACTION.md`.
//!
//! Rods belong to named groups (scene `[[rods]] group`, default
//! `"default"`); each group listed in the scene's `[interaction] groups` gets
//! its own axis-aligned grid, and only rods of the same group interact.

use glam::DVec3;

use crate::anchor::Anchor;
use crate::cpu::grid::{GridGeometry, GridNodes, ONE, grid_splat, quantise_masses};
use crate::rods::{EndCondition, RodSet, State};

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
    /// the rod set), as `new` did, after a material changed them.
    pub fn requantise_masses(&mut self, mass: &[f64]) {
        for gi in 0..self.groups.len() as u32 {
            let verts: Vec<usize> = (0..self.vertex.len())
                .filter(|&v| self.vertex[v].group == gi)
                .collect();
            let masses: Vec<f64> = verts.iter().map(|&v| mass[v]).collect();
            let (_, mass_q) = crate::cpu::grid::quantise_masses(&masses);
            for (&v, &m) in verts.iter().zip(&mass_q) {
                self.vertex[v].mass_q = m;
            }
        }
    }

    /// Place each group's grid over its rods' initial state. `rod_group[r]`
    /// is rod `r`'s group name. Errors are `(field, message)` for the scene
    /// loader.
    pub fn new(
        rods: &RodSet,
        state: &State,
        spec: &InteractionSpec,
        rod_group: &[String],
    ) -> Result<Interaction, (String, String)> {
        let mut out = Interaction::default();
        if spec.groups.is_empty() {
            return Ok(out);
        }
        out.vertex = vec![GridVertex::default(); rods.vertex_count()];
        for (gi, name) in spec.groups.iter().enumerate() {
            let field = format!("interaction.groups[{gi}]");
            if spec.groups[..gi].contains(name) {
                return Err((field, format!("group `{name}` is listed twice")));
            }
            let members: Vec<usize> = (0..rods.rod_count())
                .filter(|&r| rod_group[r] == *name)
                .collect();
            if members.is_empty() {
                let mut known: Vec<&str> = rod_group.iter().map(String::as_str).collect();
                known.sort();
                known.dedup();
                return Err((
                    field,
                    format!(
                        "unknown group `{name}`: no rod has it (the rods' groups: {})",
                        known.join(", ")
                    ),
                ));
            }
            let group = place_group(rods, state, spec, name, &members)?;
            // Per-vertex data: quantised masses over the whole group, the
            // friction factor by arc-length fraction along each rod.
            let verts: Vec<usize> = members.iter().flat_map(|&r| rods.vertices(r)).collect();
            let masses: Vec<f64> = verts.iter().map(|&v| rods.mass[v]).collect();
            let (_, mass_q) = quantise_masses(&masses);
            for (&v, &m) in verts.iter().zip(&mass_q) {
                out.vertex[v].group = gi as u32;
                out.vertex[v].mass_q = m;
            }
            for &r in &members {
                let e = rods.edges(r);
                let total: f64 = rods.rest_len[e.clone()].iter().sum();
                let mut s = 0.0;
                for (i, v) in rods.vertices(r).enumerate() {
                    if i > 0 {
                        s += rods.rest_len[e.start + i - 1];
                    }
                    let f = s / total;
                    out.vertex[v].friction =
                        spec.friction_root + (spec.friction_tip - spec.friction_root) * f;
                }
            }
            out.groups.push(group);
        }
        // Rest densities left to the initial state: the densest node.
        for (gi, g) in out.groups.iter_mut().enumerate() {
            if !g.rest_density_from_state {
                continue;
            }
            let geometry = g.geometry_at(&rods.anchors, state.time);
            let (pos, vel, mass_q) = group_vertices(&out.vertex, gi, state);
            let mut nodes = GridNodes::default();
            nodes.clear(&geometry);
            grid_splat(&geometry, &mut nodes, &pos, &vel, &mass_q).map_err(|e| {
                (
                    format!("interaction.groups[{gi}]"),
                    format!("initial grid: {e}"),
                )
            })?;
            let densest = nodes.mass.iter().copied().max().unwrap_or(0);
            g.rest_density = densest as f64 * g.mass_unit / (ONE as f64 * g.cell.powi(3));
        }
        Ok(out)
    }
}

/// The f32 positions, zero velocities and quantised masses of group `gi`'s
/// vertices in `state`.
fn group_vertices(
    vertex: &[GridVertex],
    gi: usize,
    state: &State,
) -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<u32>) {
    let mut pos = Vec::new();
    let mut mass_q = Vec::new();
    for (v, g) in vertex.iter().enumerate() {
        if g.group == gi as u32 {
            pos.push(state.pos[v].as_vec3().to_array());
            mass_q.push(g.mass_q);
        }
    }
    let vel = vec![[0.0; 3]; pos.len()];
    (pos, vel, mass_q)
}

/// Lowest and highest corner of points.
fn bounds(points: impl Iterator<Item = DVec3>) -> (DVec3, DVec3) {
    points.fold(
        (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)),
        |(a, b), p| (a.min(p), b.max(p)),
    )
}

/// The grid of one group over where its members can reach.
fn place_group(
    rods: &RodSet,
    state: &State,
    spec: &InteractionSpec,
    name: &str,
    members: &[usize],
) -> Result<GroupGrid, (String, String)> {
    // Where each rod can reach (see `InteractionSpec::padding`).
    let mut lo = DVec3::splat(f64::INFINITY);
    let mut hi = DVec3::splat(f64::NEG_INFINITY);
    let mut anchor_uses = vec![0usize; rods.anchors.len()];
    for &r in members {
        let length: f64 = rods.rest_len[rods.edges(r)].iter().sum();
        let verts = rods.vertices(r);
        let clamped: Vec<DVec3> = verts
            .clone()
            .filter(|&v| rods.inv_mass[v] == 0.0)
            .map(|v| state.pos[v])
            .collect();
        let mut anchor = None;
        for end in [rods.start[r], rods.end[r]] {
            if let EndCondition::Clamped(c) = end {
                anchor_uses[c.anchor] += 1;
                anchor = Some(c.anchor);
            }
        }
        let (a, b) = match anchor {
            None => {
                let (a, b) = bounds(verts.map(|v| state.pos[v]));
                (a - DVec3::splat(length), b + DVec3::splat(length))
            }
            Some(k) if rods.anchors[k].rotates() => {
                let pivot = rods.anchors[k].pose(state.time).offset();
                let reach = clamped
                    .iter()
                    .map(|c| (*c - pivot).length())
                    .fold(0.0, f64::max)
                    + length;
                (pivot - DVec3::splat(reach), pivot + DVec3::splat(reach))
            }
            Some(_) => {
                let (a, b) = bounds(clamped.into_iter());
                (a - DVec3::splat(length), b + DVec3::splat(length))
            }
        };
        lo = lo.min(a);
        hi = hi.max(b);
    }
    let padding = spec.padding.unwrap_or(0.0);
    lo -= DVec3::splat(padding);
    hi += DVec3::splat(padding);
    let extent = hi - lo;
    let cell = match spec.spacing {
        Spacing::Resolution(n) => extent.max_element() / n as f64,
        Spacing::Cell(c) => c,
    };
    // A cell exact in f32, so both backends scale by the same number.
    let cell = cell as f32 as f64;
    let dims = extent
        .to_array()
        .map(|e| (e / cell).ceil().max(1.0) as u64 + 1);
    let nodes: u64 = dims.iter().product();
    if nodes > MAX_GRID_NODES as u64 {
        return Err((
            "interaction".into(),
            format!(
                "group `{name}`: a grid of {}×{}×{} nodes ({nodes}) for cell {cell:.3e} m over {:.3}×{:.3}×{:.3} m is above the limit of {MAX_GRID_NODES} nodes; use a larger cell or a lower resolution",
                dims[0], dims[1], dims[2], extent.x, extent.y, extent.z
            ),
        ));
    }
    let anchor = (0..anchor_uses.len())
        .max_by_key(|&a| (anchor_uses[a], std::cmp::Reverse(a)))
        .filter(|&a| anchor_uses[a] > 0)
        .unwrap_or(0);
    let masses: Vec<f64> = members
        .iter()
        .flat_map(|&r| rods.vertices(r))
        .map(|v| rods.mass[v])
        .collect();
    let (mass_unit, _) = quantise_masses(&masses);
    Ok(GroupGrid {
        name: name.to_string(),
        rods: members.to_vec(),
        anchor,
        origin: lo - rods.anchors[anchor].pose(state.time).translation,
        cell,
        dims: dims.map(|d| d as u32),
        mass_unit,
        rest_density: spec.rest_density.unwrap_or(0.0),
        rest_density_from_state: spec.rest_density.is_none(),
        volume_stiffness: spec.volume_stiffness,
    })
}
