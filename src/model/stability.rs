//! The explicit step limit, and the choice of substeps from it.
//!
//! Symplectic Euler (§7.2) is stable only while the substep resolves the
//! fastest bending mode: `h·ω_max < 2`. For a chain of vertices `Δx` apart with
//! mass `μ Δx` and bending stiffness `B`, `ω_max² ≈ 16 B / (μ Δx⁴)`, so
//!
//! `h < h_max = ½ Δx² √(μ / B)`.
//!
//! Measured on a cantilever, hair, grass and a helix, this limit is sharp: at
//! or below it every run was right; from 1.05× up every run chattered (the
//! rods' fastest mode grows by a factor near 2 per substep until the geometry
//! saturates it) and ended 1–30 cm off.
//!
//! Per vertex the limit uses the shorter adjacent rest edge, the larger
//! eigenvalue of the (possibly anisotropic) bending matrix, and the rest
//! curvature: the curvature binormal is `|κb| = 2 tan(φ/2)` for a turning
//! angle φ, so about a curved rest shape its derivative, and with it `ω_max`,
//! grows by `1 + |κ̄|²/4`. Linear drag adds `h < μ / c` (the explicit drag
//! update `v ← v (1 − c h / μ)` must not reverse the velocity).
//!
//! `sim.substeps = "auto"` picks the fewest substeps with
//! `h ≤ SAFETY · h_max` over every rod; a fixed count above the limit is
//! refused unless `sim.allow_unstable = true`.

use crate::model::params::SimParams;
use crate::model::rods::RodSet;

/// `"auto"` substeps keep `h` at most this fraction of the limit. The limit
/// is an estimate (uniform-chain modes); 0.8 leaves room for its error and
/// for f32 on the GPU, at 25 % more substeps than the limit needs.
pub const SAFETY: f64 = 0.8;

/// Most substeps `"auto"` may choose per step; a scene that needs more is
/// refused (its rods are too stiff or too finely divided for explicit steps).
pub const MAX_AUTO_SUBSTEPS: u64 = 1 << 20;

/// Chatter count at which the runtime detector stops a run: per free vertex,
/// +1 for each substep in which the forces reversed its velocity
/// (`reverses`, `project::project_velocity`) and −2 for each in which they
/// did not (never below 0). A linear mode of frequency ω reverses in about a
/// fraction θ/π of substeps, `cos θ = 1 − h²ω²/2`; the count grows only when
/// that exceeds 2/3, `h·ω > 1.73`, so runs at `SAFETY` (h·ω ≤ 1.6) are not
/// stopped, while the unstable mode beyond 2 reverses nearly every substep.
pub const CHATTER_SUBSTEPS: u32 = 16;

/// A reversal counts when the velocity before and after it both move the
/// vertex by more than this fraction of its Voronoi length (`l̄ᵢ/2`) in one
/// substep: f64 or f32 round-off at rest never does.
pub const CHATTER_FRACTION: f64 = 1e-3;

/// What bounds a rod's step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// The fastest bending mode about vertex `vertex`.
    Bending {
        /// The vertex.
        vertex: usize,
        /// Shorter rest edge at the vertex (m).
        dx: f64,
        /// Largest eigenvalue of the bending matrix (N·m²).
        stiffness: f64,
        /// `1 + |κ̄|²/4`, from the rest curvature.
        curvature_factor: f64,
    },
    /// Linear drag `c` (N·s/m²) against the mass per length.
    Drag {
        /// c (N·s/m²).
        coefficient: f64,
    },
}

/// The largest stable substep of one rod and what sets it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepLimit {
    /// The rod.
    pub rod: usize,
    /// Largest stable explicit substep (s); infinite for a rod with no
    /// bending vertex and no drag.
    pub h_max: f64,
    /// What sets it.
    pub bound: Bound,
}

impl StepLimit {
    /// The formula and its figures, for messages.
    pub fn explain(&self) -> String {
        match self.bound {
            Bound::Bending {
                vertex,
                dx,
                stiffness,
                curvature_factor,
            } => format!(
                "h_max = ½ Δx² √(μ/B) / (1 + |κ̄|²/4) at vertex {vertex}: Δx = {dx:.3e} m, B = {stiffness:.3e} N·m², curvature factor {curvature_factor:.3}"
            ),
            Bound::Drag { coefficient } => {
                format!("h_max = μ / c for the drag c = {coefficient:.3e} N·s/m²")
            }
        }
    }
}

/// Largest eigenvalue of the symmetric bending matrix `[[b11, b12], [b12, b22]]`.
pub fn stiffest(bending: [f64; 3]) -> f64 {
    let [b11, b12, b22] = bending;
    let mean = 0.5 * (b11 + b22);
    let half = 0.5 * (b11 - b22);
    mean + (half * half + b12 * b12).sqrt()
}

/// Largest stable explicit substep of rod `r` (see the module documentation).
pub fn rod_step_limit(rods: &RodSet, r: usize) -> StepLimit {
    let m = &rods.material[r];
    let b = stiffest(m.bending);
    let mu = m.mass_per_length;
    let len = &rods.rest_len[rods.edges(r)];
    let kappa = &rods.rest_kappa[rods.vertices(r)];
    let mut out = StepLimit {
        rod: r,
        h_max: f64::INFINITY,
        bound: Bound::Drag { coefficient: 0.0 },
    };
    for i in 1..len.len() {
        let dx = len[i - 1].min(len[i]);
        let k2 = kappa[i][0]
            .length_squared()
            .max(kappa[i][1].length_squared());
        let factor = 1.0 + 0.25 * k2;
        let h = 0.5 * dx * dx * (mu / b).sqrt() / factor;
        if h < out.h_max {
            out.h_max = h;
            out.bound = Bound::Bending {
                vertex: i,
                dx,
                stiffness: b,
                curvature_factor: factor,
            };
        }
    }
    if m.drag > 0.0 && mu / m.drag < out.h_max {
        out.h_max = mu / m.drag;
        out.bound = Bound::Drag {
            coefficient: m.drag,
        };
    }
    out
}

/// The tightest limit over all rods (`None` without rods).
pub fn step_limit(rods: &RodSet) -> Option<StepLimit> {
    (0..rods.rod_count())
        .map(|r| rod_step_limit(rods, r))
        .min_by(|a, b| a.h_max.total_cmp(&b.h_max))
}

/// A substep the rods cannot take.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error(
        "{substeps} substeps per step give h = {h:.3e} s, above the explicit stability limit {h_max:.3e} s of rod {rod} (`{name}`): {explain}. Above it the rod chatters and the result is wrong. Set sim.substeps = \"auto\" (it would choose {auto}) or at least {needed}; or set sim.allow_unstable = true to run anyway"
    )]
    /// A fixed substep count above the limit.
    AboveLimit {
        /// Substeps per step asked for.
        substeps: u32,
        /// The substep they give (s).
        h: f64,
        /// The limit (s).
        h_max: f64,
        /// The rod that sets it.
        rod: usize,
        /// Its name.
        name: String,
        /// The formula and figures.
        explain: String,
        /// What `"auto"` would choose.
        auto: u64,
        /// Fewest substeps within the limit itself.
        needed: u64,
    },
    #[error(
        "\"auto\" needs {needed} substeps per step of {dt} s for rod {rod} (`{name}`, {explain}), more than the {MAX_AUTO_SUBSTEPS} allowed: the rod is too stiff or too finely divided for explicit steps. Use fewer segments, a softer material or a shorter sim.dt"
    )]
    /// `"auto"` would need more than `MAX_AUTO_SUBSTEPS`.
    TooManySubsteps {
        /// Substeps needed.
        needed: u64,
        /// The step (s).
        dt: f64,
        /// The rod that sets the limit.
        rod: usize,
        /// Its name.
        name: String,
        /// The formula and figures.
        explain: String,
    },
}

/// Fewest substeps of `dt` with `h ≤ fraction · h_max`.
fn substeps_for(dt: f64, h_max: f64, fraction: f64) -> u64 {
    let n = (dt / (fraction * h_max)).ceil();
    if n.is_finite() { (n as u64).max(1) } else { 1 }
}

/// The substeps a run takes: with `auto_substeps`, the fewest with
/// `h ≤ SAFETY · h_max`; otherwise `params.substeps`, checked against the
/// limit unless `allow_unstable`.
pub fn resolve_substeps(rods: &RodSet, params: &SimParams) -> Result<u32, StepError> {
    if params.integrator.is_implicit() {
        // No step limit bounds an implicit step: one substep a frame
        // unless the scene asks for more (for accuracy).
        return Ok(if params.auto_substeps {
            1
        } else {
            params.substeps
        });
    }
    let Some(limit) = step_limit(rods) else {
        return Ok(params.substeps);
    };
    let name = || rods.names[limit.rod].clone();
    let auto = substeps_for(params.dt, limit.h_max, SAFETY);
    if params.auto_substeps {
        if auto > MAX_AUTO_SUBSTEPS {
            return Err(StepError::TooManySubsteps {
                needed: auto,
                dt: params.dt,
                rod: limit.rod,
                name: name(),
                explain: limit.explain(),
            });
        }
        return Ok(auto as u32);
    }
    let h = params.h();
    if h > limit.h_max && !params.allow_unstable {
        return Err(StepError::AboveLimit {
            substeps: params.substeps,
            h,
            h_max: limit.h_max,
            rod: limit.rod,
            name: name(),
            explain: limit.explain(),
            auto,
            needed: substeps_for(params.dt, limit.h_max, 1.0),
        });
    }
    Ok(params.substeps)
}

/// What the runtime re-check compares: when the step, the substep rule or a
/// material changes, the substeps are resolved again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked {
    integrator: crate::model::params::Integrator,
    dt: f64,
    substeps: u32,
    auto: bool,
    allow: bool,
    materials: Vec<crate::model::rods::RodMaterial>,
}

impl Checked {
    /// Resolve the substeps again if anything they depend on changed since
    /// the last call; returns the substeps to run.
    pub fn recheck(&mut self, rods: &RodSet, params: &SimParams) -> Result<u32, StepError> {
        let same = self.integrator == params.integrator
            && self.dt == params.dt
            && self.substeps == params.substeps
            && self.auto == params.auto_substeps
            && self.allow == params.allow_unstable
            && self.materials == rods.material;
        if !same {
            let substeps = resolve_substeps(rods, params)?;
            *self = Checked {
                integrator: params.integrator,
                dt: params.dt,
                substeps,
                auto: params.auto_substeps,
                allow: params.allow_unstable,
                materials: rods.material.clone(),
            };
        }
        Ok(self.substeps)
    }
}

/// Whether a vertex's velocity reversed in a substep with both the old
/// velocity `v` and the new one `u` moving it more than `threshold` (m) in
/// `h`: one count of the explicit mode's chatter (`CHATTER_SUBSTEPS`).
#[inline]
pub fn reverses(v: glam::DVec3, u: glam::DVec3, h: f64, threshold: f64) -> bool {
    let t2 = (threshold / h) * (threshold / h);
    v.dot(u) < 0.0 && v.length_squared() > t2 && u.length_squared() > t2
}
