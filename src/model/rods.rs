//! Flat storage of many rods: every per-vertex and per-edge quantity of all
//! rods lives in one array, and a rod is a range given by offsets. This is the
//! layout the GPU buffers use, so the CPU reference and the kernels index alike.
//!
//! Rod `r` owns vertices `vertex_offset[r] .. vertex_offset[r + 1]` and edges
//! `vertex_offset[r] − r .. vertex_offset[r + 1] − r − 1` (one edge fewer than
//! vertices per rod).

use glam::{DQuat, DVec2, DVec3};
use std::ops::Range;

use crate::model::anchor::{Anchor, AnchorError, Pose};
use crate::model::colliders::Collider;
use crate::model::interaction::Interaction;
use crate::model::rod_contact::RodContact;

/// Elastic and inertial constants of one rod, in SI units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RodMaterial {
    /// Symmetric bending stiffness `B = [[b11, b12], [b12, b22]]` in the material
    /// frame (N·m²): `b11` resists curvature ω₁ (bending about m2), `b22` ω₂ (about m1).
    pub bending: [f64; 3],
    /// Twisting stiffness β = G·J (N·m²).
    pub twist: f64,
    /// Mass per unit length μ (kg/m).
    pub mass_per_length: f64,
    /// Linear air-drag coefficient per unit length (N·s/m²).
    pub drag: f64,
    /// Radius of the section for contact (m): the strand keeps this far (plus
    /// the collider's margin) from a collider's surface. The larger semi-axis
    /// of an elliptic section; 0 (a line) when the material gives none.
    pub radius: f64,
    /// Stretching stiffness E·A (N): the implicit integrators' stretching
    /// energy ½ E·A Σ |ēʲ| (|eʲ|/|ēʲ| − 1)² (seed 004), which the
    /// projection then makes exact. 0 when the material gives none (then
    /// edges keep their lengths by the projection alone, and statics
    /// refuses the rod).
    pub stretching: f64,
}

/// What is wrong with a material's constants.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("material: {field} {problem}")]
pub struct MaterialError {
    /// The constant, e.g. `youngs_modulus`.
    pub field: &'static str,
    /// What is wrong with it, with the value.
    pub problem: String,
}

impl RodMaterial {
    /// A rod of circular section from physical constants: Young's modulus
    /// `youngs_modulus` E (Pa), Poisson's ratio `poisson_ratio` ν (shear
    /// modulus G = E / (2 (1 + ν))), density ρ (kg/m³), section radius r (m)
    /// and linear air drag (N·s/m²). Bending stiffness E·πr⁴/4 about both
    /// axes, twisting stiffness G·πr⁴/2, mass per length ρ·πr² (the same
    /// rule as a scene's `[materials]` with `density`, `radius`,
    /// `youngs_modulus`, `poisson_ratio`).
    pub fn from_young(
        youngs_modulus: f64,
        poisson_ratio: f64,
        density: f64,
        radius: f64,
        drag: f64,
    ) -> Result<RodMaterial, MaterialError> {
        if !(poisson_ratio > -1.0 && poisson_ratio < 0.5) {
            return Err(MaterialError {
                field: "poisson_ratio",
                problem: format!("must be in (−1, 0.5), got {poisson_ratio}"),
            });
        }
        let shear = youngs_modulus / (2.0 * (1.0 + poisson_ratio));
        RodMaterial::from_young_shear(youngs_modulus, shear, density, radius, drag)
    }

    /// As [`RodMaterial::from_young`], with the shear modulus G (Pa) given
    /// instead of Poisson's ratio.
    pub fn from_young_shear(
        youngs_modulus: f64,
        shear_modulus: f64,
        density: f64,
        radius: f64,
        drag: f64,
    ) -> Result<RodMaterial, MaterialError> {
        for (field, v) in [
            ("youngs_modulus", youngs_modulus),
            ("shear_modulus", shear_modulus),
            ("density", density),
            ("radius", radius),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(MaterialError {
                    field,
                    problem: format!("must be a positive number, got {v}"),
                });
            }
        }
        RodMaterial::from_young_elliptic(
            youngs_modulus,
            shear_modulus,
            density,
            [radius, radius],
            drag,
        )
    }

    /// A rod of elliptic section with semi-axes `[a, b]` (m; `a` along the
    /// material vector m1): bending stiffness E·πa³b/4 about m2 and E·πab³/4
    /// about m1, twisting stiffness G·πa³b³/(a² + b²), mass per length ρπab,
    /// contact radius max(a, b). A scene's physical `[materials]` entries
    /// are made by this.
    pub fn from_young_elliptic(
        youngs_modulus: f64,
        shear_modulus: f64,
        density: f64,
        semi_axes: [f64; 2],
        drag: f64,
    ) -> Result<RodMaterial, MaterialError> {
        let [a, b] = semi_axes;
        for (field, v) in [
            ("youngs_modulus", youngs_modulus),
            ("shear_modulus", shear_modulus),
            ("density", density),
            ("semi_axes[0]", a),
            ("semi_axes[1]", b),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(MaterialError {
                    field,
                    problem: format!("must be a positive number, got {v}"),
                });
            }
        }
        let (e, g) = (youngs_modulus, shear_modulus);
        let pi = std::f64::consts::PI;
        let m = RodMaterial {
            bending: [
                e * pi * a.powi(3) * b / 4.0,
                0.0,
                e * pi * a * b.powi(3) / 4.0,
            ],
            twist: g * pi * a.powi(3) * b.powi(3) / (a * a + b * b),
            mass_per_length: density * pi * a * b,
            drag,
            radius: a.max(b),
            stretching: e * pi * a * b,
        };
        m.check()?;
        Ok(m)
    }

    /// Check the constants: bending stiffness positive definite, twisting
    /// stiffness and mass per length positive, drag and radius finite and
    /// not negative.
    pub fn check(&self) -> Result<(), MaterialError> {
        let [b11, b12, b22] = self.bending;
        let finite = b11.is_finite() && b12.is_finite() && b22.is_finite();
        if !(finite && b11 > 0.0 && b22 > 0.0 && b11 * b22 > b12 * b12) {
            return Err(MaterialError {
                field: "bending",
                problem: format!("must be positive definite, got {:?}", self.bending),
            });
        }
        for (field, v) in [
            ("twist", self.twist),
            ("mass_per_length", self.mass_per_length),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(MaterialError {
                    field,
                    problem: format!("must be a positive number, got {v}"),
                });
            }
        }
        for (field, v) in [
            ("drag", self.drag),
            ("radius", self.radius),
            ("stretching", self.stretching),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(MaterialError {
                    field,
                    problem: format!("must be a finite number, not negative, got {v}"),
                });
            }
        }
        Ok(())
    }
}

/// Boundary condition at one end of a rod (§5, "Boundary conditions").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EndCondition {
    /// Stress-free end: no prescribed position or material frame.
    Free,
    /// The end edge's two vertices and its material frame follow an anchor.
    Clamped(Clamp),
}

/// A clamped end: which anchor it follows and where, in the anchor's rest
/// coordinates (the anchor's pose at time 0 undone).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clamp {
    /// Index of the anchor in `RodSet::anchors`.
    pub anchor: usize,
    /// The end edge's two vertices, in order of increasing vertex index.
    pub local_pos: [DVec3; 2],
    /// The end edge's material vector m1 in anchor rest coordinates.
    pub local_m1: DVec3,
}

/// Topology, rest shape and material of all rods. Does not change while simulating.
#[derive(Clone, Debug, Default)]
pub struct RodSet {
    /// Per rod, its name.
    pub names: Vec<String>,
    /// Per rod, its first vertex; one more entry, the vertex count.
    pub vertex_offset: Vec<usize>,
    /// Per rod, its material.
    pub material: Vec<RodMaterial>,
    /// Per rod, how its first edge is held.
    pub start: Vec<EndCondition>,
    /// Per rod, how its last edge is held.
    pub end: Vec<EndCondition>,
    /// Rest length |ēʲ| of every edge (m).
    pub rest_len: Vec<f64>,
    /// Per vertex: `l̄ᵢ = |ēⁱ⁻¹| + |ēⁱ|` (m), twice the Voronoi length; 0 at rod ends.
    pub voronoi: Vec<f64>,
    /// Per vertex: rest material curvatures `ω̄ᵢ^{i−1}` and `ω̄ᵢ^{i}` (zero at rod ends).
    pub rest_kappa: Vec<[DVec2; 2]>,
    /// Per vertex lumped mass (kg): μ times the vertex's Voronoi length.
    pub mass: Vec<f64>,
    /// Per vertex 1/mass, zero for vertices driven by an anchor.
    pub inv_mass: Vec<f64>,
    /// Scripted rigid frames; index 0 is the fixed world frame.
    pub anchors: Vec<Anchor>,
    /// Shapes the strands cannot enter, each riding on an anchor.
    pub colliders: Vec<Collider>,
    /// Hair–hair interaction groups and their grids (empty: none).
    pub interaction: Interaction,
    /// Rod–rod contact (no member: none).
    pub rod_contact: RodContact,
}

impl RodSet {
    /// Give rod `r` a new material: stiffness, drag and radius as given; a
    /// new mass per length gives its vertices new lumped masses (as built:
    /// `build::vertex_masses`), their inverses (vertices held by an anchor
    /// keep 0) and the interaction grid's quantised masses.
    pub fn set_material(&mut self, r: usize, m: RodMaterial) -> Result<(), MaterialError> {
        let count = self.rod_count();
        if r >= count {
            return Err(MaterialError {
                field: "rod",
                problem: format!("there is no rod {r} (the rod set has {count})"),
            });
        }
        m.check()?;
        let mass_changed = m.mass_per_length != self.material[r].mass_per_length;
        self.material[r] = m;
        if mass_changed {
            // As `build::vertex_masses`: half of each rest edge at a vertex.
            let e = self.edges(r);
            let n = self.vertices(r).len();
            for (i, v) in self.vertices(r).enumerate() {
                let before = if i > 0 {
                    self.rest_len[e.start + i - 1]
                } else {
                    0.0
                };
                let after = if i + 1 < n {
                    self.rest_len[e.start + i]
                } else {
                    0.0
                };
                self.mass[v] = 0.5 * m.mass_per_length * (before + after);
                if self.inv_mass[v] > 0.0 {
                    self.inv_mass[v] = 1.0 / self.mass[v];
                }
            }
            let mass = std::mem::take(&mut self.mass);
            self.interaction.requantise_masses(&mass);
            self.mass = mass;
        }
        Ok(())
    }

    /// Number of rods.
    pub fn rod_count(&self) -> usize {
        self.material.len()
    }
    /// Number of vertices of all rods.
    pub fn vertex_count(&self) -> usize {
        *self.vertex_offset.last().unwrap_or(&0)
    }
    /// Number of edges of all rods.
    pub fn edge_count(&self) -> usize {
        self.vertex_count() - self.rod_count()
    }
    /// The rod that vertex `v` (an index into the flat arrays) belongs to.
    pub fn rod_of_vertex(&self, v: usize) -> usize {
        self.vertex_offset.partition_point(|&o| o <= v) - 1
    }
    /// Rod `r`'s vertices in the flat arrays (`State::pos`, `vel`).
    pub fn vertices(&self, r: usize) -> Range<usize> {
        self.vertex_offset[r]..self.vertex_offset[r + 1]
    }
    /// Rod `r`'s edges in the flat arrays (`State::theta`, `tangent`, `ref_u`).
    pub fn edges(&self, r: usize) -> Range<usize> {
        self.vertex_offset[r] - r..self.vertex_offset[r + 1] - r - 1
    }
    /// Edge offsets of all rods (`rod_count + 1` entries).
    pub fn edge_offsets(&self) -> Vec<usize> {
        (0..=self.rod_count())
            .map(|r| self.vertex_offset[r] - r)
            .collect()
    }
}

/// The dynamic state of all rods.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// Simulated time (s).
    pub time: f64,
    /// Per vertex, its position (m).
    pub pos: Vec<DVec3>,
    /// Per vertex, its velocity (m/s).
    pub vel: Vec<DVec3>,
    /// Per edge: twist angle θ of the material frame against the Bishop frame (rad).
    pub theta: Vec<f64>,
    /// Per edge: unit tangent for which `ref_u` was last computed.
    pub tangent: Vec<DVec3>,
    /// Per edge: Bishop frame vector u (v = t × u).
    pub ref_u: Vec<DVec3>,
}

/// Mutable state of one rod.
pub struct RodStateMut<'a> {
    /// Vertex positions (m).
    pub pos: &'a mut [DVec3],
    /// Vertex velocities (m/s).
    pub vel: &'a mut [DVec3],
    /// Edge twist angles (rad).
    pub theta: &'a mut [f64],
    /// Edge unit tangents.
    pub tangent: &'a mut [DVec3],
    /// Edge reference (Bishop) vectors.
    pub ref_u: &'a mut [DVec3],
}

/// Split `data` into consecutive mutable slices at the given offsets
/// (`offsets[0] = 0`, last = length): one slice per rod, so rods can be
/// processed in parallel over the flat arrays.
pub fn split_mut<'a, T>(mut data: &'a mut [T], offsets: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
    for w in offsets.windows(2) {
        let (head, tail) = std::mem::take(&mut data).split_at_mut(w[1] - w[0]);
        out.push(head);
        data = tail;
    }
    out
}

/// Teleport anchor `anchor` to `translation` (m) and rotation vector
/// `rotation` (rad) at the state's time, taking along every rod clamped to
/// it: the rigid motion `M = P₁ ∘ P₀⁻¹` from the anchor's present pose `P₀`
/// to the new `P₁` is applied to those rods' positions, and its rotation
/// to their velocities, edge tangents and reference frames (twist angles,
/// measured against the reference frame, are unchanged). Velocities are
/// rotated, not zeroed: a groom swinging before the cut swings the same way
/// relative to the head after it, and a groom at rest stays at rest, with
/// no speed from the jump. The anchor's history is reset to the new pose
/// ([`Anchor::reset`]), so the next substep sees no motion of the anchor.
/// Colliders riding on the anchor move with it.
///
/// Errors: no such anchor, anchor 0 (the world), a non-finite pose, or a
/// rod clamped to this anchor and to another one.
pub fn teleport(
    rods: &mut RodSet,
    state: &mut State,
    anchor: usize,
    translation: DVec3,
    rotation: DVec3,
) -> Result<(), AnchorError> {
    let count = rods.anchors.len();
    if anchor >= count {
        return Err(AnchorError::NoSuchAnchor {
            index: anchor,
            count,
        });
    }
    if anchor == 0 {
        return Err(AnchorError::World);
    }
    let a = &rods.anchors[anchor];
    if !(translation.is_finite() && rotation.is_finite()) {
        return Err(AnchorError::NotFinite {
            anchor: a.name.clone(),
            what: format!("pose: translation {translation}, rotation {rotation}"),
        });
    }
    let clamped_to = |c: EndCondition| match c {
        EndCondition::Clamped(c) => Some(c.anchor),
        EndCondition::Free => None,
    };
    let mut moved = Vec::new();
    for r in 0..rods.rod_count() {
        let ends = [clamped_to(rods.start[r]), clamped_to(rods.end[r])];
        if !ends.contains(&Some(anchor)) {
            continue;
        }
        if let Some(other) = ends.into_iter().flatten().find(|&o| o != anchor) {
            return Err(AnchorError::SharedRod {
                rod: r,
                name: rods.names[r].clone(),
                anchor: a.name.clone(),
                other: rods.anchors[other].name.clone(),
            });
        }
        moved.push(r);
    }
    let now = state.time;
    let old = a.pose(now);
    let new = Pose {
        pivot: a.pivot,
        translation,
        rotation: DQuat::from_scaled_axis(rotation),
    };
    let turn = new.rotation * old.rotation.inverse();
    for r in moved {
        for i in rods.vertices(r) {
            state.pos[i] = new.point(old.inverse_point(state.pos[i]));
            state.vel[i] = turn * state.vel[i];
        }
        for j in rods.edges(r) {
            state.tangent[j] = turn * state.tangent[j];
            state.ref_u[j] = turn * state.ref_u[j];
        }
    }
    rods.anchors[anchor].reset(now, translation, rotation);
    Ok(())
}
