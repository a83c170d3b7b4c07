//! The CPU reference simulator: the DER formulation of Bergou et al. 2008 in
//! f64. A substep has the shape of the GPU's fused one (`substep::substep`):
//! each rod (in parallel) runs the stages of `substep_start`, then the
//! hair–hair grid runs over all rods, then each rod runs those of
//! `substep_finish`, every stage in the order the GPU runs its kernels.
//!
//! Each kernel module is the CPU twin of the WGSL file of the same stem,
//! src/cpu/X.rs of shaders/X.wgsl (`contact`, `forces`, `frames`, `grid`,
//! `grid_sort`, `integrate`, `project`, `substep`, `twist`), with its
//! kernels' stage (function) names; the code keeps the GPU's loop shape
//! where that lets a reader compare the two, even where more idiomatic Rust
//! would read differently. This module is the simulator over them:
//! `CpuSimulator` and its step loop, the diagnostics, the checks and
//! `Unstable`.

pub mod banded;
pub mod contact;
pub mod curvature;
pub mod dual;
pub mod forces;
pub mod frames;
pub mod grid;
pub mod grid_sort;
pub mod implicit;
pub mod integrate;
pub mod project;
pub mod rod_contact;
pub mod substep;
pub mod tridiagonal;
pub mod twist;

use glam::DVec3;

use crate::model::anchor::AnchorError;
use crate::model::params::{Integrator, Projection, SimParams};
use crate::model::rods::{EndCondition, RodMaterial, RodSet, State};
use crate::model::stability;
use substep::{Workspace, for_each_rod, substep, update_material_frame};
use tridiagonal::RowOrder;
use twist::{RodRest, curvature_binormals, twist_gradient};

/// Per-step figures of the whole scene.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Diagnostics {
    /// Time at the end of the step (s).
    pub time: f64,
    /// Bending energy, eq. 3 (J).
    pub bending: f64,
    /// Twisting energy, §4.2.2 (J).
    pub twisting: f64,
    /// Gravitational potential energy −Σ mᵢ g·xᵢ (J), zero at the origin.
    pub gravitational: f64,
    /// Kinetic energy ½ Σ mᵢ |vᵢ|² (J).
    pub kinetic: f64,
    /// Largest edge strain ||e|/|ē| − 1| over all rods.
    pub max_strain: f64,
    /// Largest vertex speed (m/s).
    pub max_speed: f64,
    /// Most Newton iterations a twist solve used in this step.
    pub twist_iterations: u32,
    /// Most iterations a projection used in this step (fixed for Jacobi;
    /// with colliders, both projections of a substep added).
    pub projection_iterations: u32,
    /// Deepest penetration of a free vertex (or an edge's interior point,
    /// for spheres and capsules) into a collider: strand radius − signed
    /// distance to the surface, 0 when none (m).
    pub max_penetration: f64,
    /// Vertices of interacting groups that were outside their group's grid
    /// (so did not interact), summed over the step's substeps; 0 when every
    /// vertex interacted or the scene has no interaction.
    pub grid_outside: u64,
    /// Most Newton iterations a rod's implicit step used in this step (0
    /// for the symplectic integrator).
    pub newton_iterations: u32,
    /// Largest net force a rod's Newton solve left on a free vertex in this
    /// step (N; 0 for the symplectic integrator): statics' residual.
    pub newton_residual: f64,
    /// Most rod–rod contacts (pairs of edges within reach) of a substep in
    /// this step; 0 without `[rod_contact]`.
    pub rod_contacts: u64,
    /// Deepest penetration of two rods' (or one rod's) edges into each
    /// other at the end of the step: the sum of their radii minus the
    /// distance of their centrelines, 0 when none or without
    /// `[rod_contact]` (m).
    pub rod_penetration: f64,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The substep is above the explicit step limit (`stability`).
    StepLimit,
    /// The runtime detector saw the explicit mode's chatter.
    Chatter,
    /// An anchor moved a vertex faster than `sim.max_speed`.
    AnchorSpeed,
    /// Two adjacent edges folded back onto each other.
    Folded,
    /// The projection could not meet the edge-length constraints.
    Projection,
    /// A free vertex ran faster than `sim.max_speed`, or the state became
    /// non-finite, with no more specific cause found.
    BlowUp,
    /// A vertex passed through a collider.
    Tunnelling,
    /// A grid node of hair–hair interaction could overflow.
    GridOverflow,
    /// The GPU driver cut the kernel's loops short (llvmpipe's limit on
    /// the loop iterations of an invocation): the step was computed
    /// wrongly.
    LoopLimit,
    /// An implicit integrator's Newton solve did not converge.
    Newton,
    /// Rod–rod contact could not keep two strands apart.
    RodContact,
}

/// A simulated time for a message: 6 decimals (1 µs), or 4 significant
/// digits below 1 ms, where 6 decimals would say 0.000000 of a run of
/// shorter steps.
fn time_text(t: f64) -> String {
    if t != 0.0 && t.abs() < 1e-3 {
        format!("{t:.3e}")
    } else {
        format!("{t:.6}")
    }
}

/// A run that stopped: which rod, when, what happened and what to change.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("rod {rod} ({name}) stopped at step {step} (t = {} s): {what}. {hint}", time_text(*.time))]
pub struct Unstable {
    /// The rod.
    pub rod: usize,
    /// Its name.
    pub name: String,
    /// The step that failed (1 for the first).
    pub step: u64,
    /// Simulated time when it was found (s).
    pub time: f64,
    /// The kind of failure.
    pub cause: Cause,
    /// What was found.
    pub what: String,
    /// The likely cause and what to change.
    pub hint: String,
}

/// What `check_rod` found wrong with one rod's state.
#[derive(Clone, Debug, PartialEq)]
pub enum Bad {
    /// A non-finite value; the string says which.
    NonFinite(String),
    /// Vertex faster than `max_speed`; `anchor` when an anchor drives it.
    TooFast {
        /// The vertex, within its rod.
        vertex: usize,
        /// Its speed (m/s).
        speed: f64,
        /// The anchor driving it, if any.
        anchor: Option<usize>,
    },
    /// Edges `edge` and `edge + 1` turn by `angle` (rad), nearly back.
    Folded {
        /// The first edge, within its rod.
        edge: usize,
        /// Turning angle (rad).
        angle: f64,
    },
    /// Edge `edge` stretched by `strain`.
    Stretched {
        /// The edge, within its rod.
        edge: usize,
        /// Its strain |e|/|ē| − 1.
        strain: f64,
    },
}

/// Adjacent edges turning by more than this (rad) count as folded: the
/// curvature binormal `2 tan(φ/2)` is then above 45 and bending forces are
/// meaningless.
pub const FOLD_ANGLE: f64 = 175.0 * std::f64::consts::PI / 180.0;

/// Strain at which `check_rod` stops a run with projection.
pub const MAX_STRAIN: f64 = 0.5;

impl Unstable {
    fn new(rods: &RodSet, r: usize, step: u64, time: f64, cause: Cause) -> Self {
        Unstable {
            rod: r,
            name: rods.names[r].clone(),
            step,
            time,
            cause,
            what: String::new(),
            hint: String::new(),
        }
    }

    /// A statement about the step limit of rod `r` at substep `h`: whether
    /// `h` is above it (the step is the likely cause) or within it (it is not).
    fn step_statement(rods: &RodSet, params: &SimParams, r: usize) -> (bool, String) {
        let h = params.h();
        if params.integrator.is_implicit() {
            return (
                false,
                format!(
                    "sim.integrator = \"{}\" has no step limit (h = {h:.3e} s is not an explicit instability)",
                    params.integrator.name()
                ),
            );
        }
        let l = stability::rod_step_limit(rods, r);
        if !(l.h_max.is_finite() && l.h_max > 0.0) {
            return (
                false,
                format!("this rod has no explicit step limit (h = {h:.3e} s is not the cause)"),
            );
        }
        if h > l.h_max {
            (
                true,
                format!(
                    "the substep h = {h:.3e} s is above this rod's explicit stability limit {:.3e} s ({}); set sim.substeps = \"auto\" or at least {}",
                    l.h_max,
                    l.explain(),
                    (params.dt / l.h_max).ceil() as u64
                ),
            )
        } else {
            (
                false,
                format!(
                    "the substep h = {h:.3e} s is within this rod's explicit stability limit {:.3e} s, so the step size is not the likely cause",
                    l.h_max
                ),
            )
        }
    }

    /// A state that left the physical range (`check_rod`), with its cause.
    pub fn blow_up(
        rods: &RodSet,
        params: &SimParams,
        r: usize,
        step: u64,
        time: f64,
        bad: Bad,
    ) -> Self {
        let (above, step_note) = Self::step_statement(rods, params, r);
        let others = "Look at what drives the rod: an anchor's keyframes, sim.wind, a collider or contact pushing it, or sim.max_speed set too low for the scene";
        let (cause, what, hint) = match bad {
            Bad::TooFast {
                vertex,
                speed,
                anchor: Some(a),
            } => (
                Cause::AnchorSpeed,
                format!(
                    "anchor `{}` moves clamped vertex {vertex} at {speed:.3e} m/s, above sim.max_speed = {} m/s",
                    rods.anchors[a].name, params.max_speed
                ),
                "A scripted anchor motion (a jump between keyframes is a teleport) is not a time-step problem: smooth the anchor's keyframes, or raise sim.max_speed if the motion is intended".to_string(),
            ),
            Bad::Folded { edge, angle } => (
                Cause::Folded,
                format!(
                    "edges {edge} and {} folded back onto each other (they turn by {:.1}°; DER's curvature 2 tan(φ/2) diverges at 180°)",
                    edge + 1,
                    angle.to_degrees()
                ),
                if above {
                    format!("Likely cause: {step_note}")
                } else {
                    format!("Something forced a kink: {step_note}. {others}")
                },
            ),
            Bad::Stretched { edge, strain } => (
                Cause::Projection,
                format!(
                    "edge {edge} is stretched by {:.0}%: the projection did not hold its length",
                    strain * 100.0
                ),
                match params.projection {
                    Projection::Jacobi { iterations, .. } => format!(
                        "Jacobi projection with {iterations} iterations per substep left this strain; raise sim.projection.iterations or use sim.projection.method = \"fast\". Also: {step_note}"
                    ),
                    _ => format!("{step_note}. {others}"),
                },
            ),
            Bad::TooFast {
                vertex,
                speed,
                anchor: None,
            } => (
                Cause::BlowUp,
                format!(
                    "vertex {vertex} moves at {speed:.3e} m/s, above sim.max_speed = {} m/s",
                    params.max_speed
                ),
                if above {
                    format!("Likely cause: {step_note}")
                } else {
                    format!("{step_note}. {others}")
                },
            ),
            Bad::NonFinite(what) => (
                Cause::BlowUp,
                what,
                if above {
                    format!("Likely cause: {step_note}")
                } else {
                    format!("{step_note}. {others}")
                },
            ),
        };
        Unstable {
            what,
            hint,
            ..Self::new(rods, r, step, time, cause)
        }
    }

    /// The substep is above the step limit (`stability::resolve_substeps`).
    pub fn step_limit(rods: &RodSet, e: stability::StepError, step: u64, time: f64) -> Self {
        let r = match &e {
            stability::StepError::AboveLimit { rod, .. }
            | stability::StepError::TooManySubsteps { rod, .. } => *rod,
        };
        Unstable {
            what: e.to_string(),
            ..Self::new(rods, r, step, time, Cause::StepLimit)
        }
    }

    /// The runtime chatter detector fired at `vertex` of rod `r`.
    pub fn chatter(
        rods: &RodSet,
        params: &SimParams,
        r: usize,
        vertex: usize,
        step: u64,
        time: f64,
    ) -> Self {
        let (above, note) = Self::step_statement(rods, params, r);
        Unstable {
            what: format!(
                "the forces kept reversing vertex {vertex}'s velocity from one substep to the next (chatter count {}: +1 per reversal, −2 otherwise), the chatter of explicit integration beyond its stability limit; the result would be wrong",
                stability::CHATTER_SUBSTEPS
            ),
            hint: if above {
                format!("Cause: {note}")
            } else {
                format!(
                    "{note}, but the limit is an estimate and this rod is faster than it: raise sim.substeps (or lower sim.dt) until it stops, and tell us about the scene"
                )
            },
            ..Self::new(rods, r, step, time, Cause::Chatter)
        }
    }

    /// The implicit step of rod `r` did not converge.
    pub fn newton(
        rods: &RodSet,
        params: &SimParams,
        r: usize,
        n: implicit::NewtonReport,
        step: u64,
        time: f64,
    ) -> Self {
        Unstable {
            what: format!(
                "the {} step's Newton solve did not converge: after {} iterations the largest net force on a free vertex is {:.3e} N (tolerance {:.3e} N) and on a free twist angle {:.3e} N·m (tolerance {:.3e} N·m)",
                params.integrator.name(),
                n.iterations,
                n.force_residual,
                n.force_tolerance,
                n.torque_residual,
                n.torque_tolerance
            ),
            hint: if params.integrator == Integrator::Static && rods.material[r].stretching == 0.0 {
                "Cause: the rod's material has no stretching stiffness (`RodMaterial::stretching`), so nothing balances its edges' tension at rest: give it one".to_string()
            } else {
                let why = match n.stop {
                    implicit::Stop::Iterations => format!(
                        "it reached sim.newton.max_iterations (now {}): raise it, or",
                        params.newton.max_iterations
                    ),
                    implicit::Stop::NoDescent => {
                        "its line search found no step that lowers the energy (a state near a snap-through, or a residual at what f64 resolves: then raise sim.newton.tolerance):".to_string()
                    }
                    implicit::Stop::NoDirection => {
                        "no shift made its Hessian definite:".to_string()
                    }
                    implicit::Stop::None => String::new(),
                };
                format!(
                    "The solve stopped because {why} raise sim.substeps (now {}) so that each solve starts nearer its answer; a rod that buckles or snaps through within a step needs the smaller step",
                    params.substeps
                )
            },
            ..Self::new(rods, r, step, time, Cause::Newton)
        }
    }

    /// The projection of rod `r` did not converge.
    pub fn projection(
        rods: &RodSet,
        params: &SimParams,
        r: usize,
        f: project::FastProjection,
        step: u64,
        time: f64,
    ) -> Self {
        let (tolerance, method) = match params.projection {
            Projection::Fast { tolerance, .. } => (tolerance, "fast"),
            Projection::Shake { tolerance, .. } => (tolerance, "SHAKE"),
            _ => (0.0, "Newton"),
        };
        let both_held = matches!(rods.start[r], EndCondition::Clamped(_))
            && matches!(rods.end[r], EndCondition::Clamped(_));
        let straight = "the rod's free part lies on a straight line between anchored vertices, so its edges can change length only along that line and cannot all reach their rest lengths (a straight rod pushed or pulled along its axis between two clamps has no direction to buckle into)";
        let why = if !f.singular {
            "it reached sim.projection.max_iterations".to_string()
        } else if both_held {
            format!("its linear system is singular: {straight}")
        } else {
            // Seen with SHAKE on a very soft 300-segment rod clamped at one
            // end at 0.64 × the step limit (cause not found; fine with more
            // substeps or the fast projection: tests/stability.rs).
            "its linear system is singular (a zero pivot in the Newton step)".to_string()
        };
        let limit = tolerance.max(project::PROJECTION_FAIL_STRAIN);
        Unstable {
            what: format!(
                "the {method} projection did not meet the edge lengths: after {} iterations an edge is still strained by {:.3e}, above {limit:.1e}; {why}",
                f.iterations, f.max_strain
            ),
            hint: if let (true, note) = Self::step_statement(rods, params, r) {
                format!(
                    "Likely cause: {note} (an unstable step stretches edges beyond what the projection can restore)"
                )
            } else if f.singular && both_held {
                "Check the anchors that clamp this rod's two ends: their distance must stay reachable by the rod, and a perfectly straight rod between them needs a sideways perturbation (a slightly bent initial shape) to buckle".to_string()
            } else if f.singular {
                format!(
                    "Raise sim.substeps (a smaller step leaves each projection less to correct){}",
                    if method == "SHAKE" {
                        ", or use sim.projection.method = \"fast\""
                    } else {
                        ""
                    }
                )
            } else {
                "Raise sim.projection.max_iterations, or look for what stretches the rod so far in one substep (an anchor moving fast, a large step)".to_string()
            },
            ..Self::new(rods, r, step, time, Cause::Projection)
        }
    }

    /// A grid node whose fixed-point momentum could overflow (`grid::could_overflow`).
    pub fn grid_overflow(rods: &RodSet, group: usize, node: usize, step: u64, time: f64) -> Self {
        let g = &rods.interaction.groups[group];
        let [nx, ny, _] = g.dims.map(|d| d as usize);
        let (i, j, k) = (node % nx, node / nx % ny, node / (nx * ny));
        Unstable {
            what: format!(
                "interaction group `{}`: grid node ({i}, {j}, {k}) holds so much mass moving so fast that its 64-bit fixed-point momentum could overflow",
                g.name
            ),
            hint: format!(
                "Either the group moves far faster than it should (a blow-up: see sim.max_speed), or too many vertices share one node: raise interaction.resolution or lower interaction.cell (now {:.3e} m) so that each node holds fewer.",
                g.cell
            ),
            ..Self::new(rods, g.rods[0], step, time, Cause::GridOverflow)
        }
    }

    /// A rod–rod contact the rounds left unresolved (`rod_contact::UNRESOLVED`).
    pub fn rod_contact(
        rods: &RodSet,
        params: &SimParams,
        step: u64,
        time: f64,
        u: rod_contact::Unresolved,
    ) -> Self {
        let [a, b] = u.rods;
        let other = if a == b {
            "its own edge".to_string()
        } else {
            format!("rod {b} ({}) edge", rods.names[b])
        };
        Unstable {
            what: format!(
                "rod–rod contact could not keep its edge {} and {other} {} apart: after {} rounds of contact and projection their core segments are {:.3e} m closer than the {:.3e} m they keep ({:.0} % of it)",
                u.edges[0],
                u.edges[1],
                rod_contact::ROUNDS,
                u.depth,
                u.reach,
                100.0 * u.depth / u.reach
            ),
            hint: format!(
                "The strands are held into each other more than their lengths allow them to give way (rods clamped taut, anchors pressing them together: check the anchors' distances against the rods' lengths), or they move too far in a substep for the rounds: raise sim.substeps (now {})",
                params.substeps
            ),
            ..Self::new(rods, a, step, time, Cause::RodContact)
        }
    }

    /// Rod `r`'s kernel invocation ran into the GPU driver's limit on
    /// loop iterations (llvmpipe ends every loop of an invocation once
    /// its loops together have run 65,535 iterations), in `form`.
    pub fn loop_limit(rods: &RodSet, r: usize, step: u64, time: f64, form: &str) -> Self {
        Unstable {
            what: format!(
                "the kernel that runs this rod reached the GPU driver's limit of 65,535 loop iterations in one invocation (llvmpipe's, all its loops together; GPU form {form}), past which the driver cuts every loop short, so the step cannot be trusted"
            ),
            hint: if form == "walked" {
                "Use fewer vertices per strand, or the CPU backend (--backend cpu, which `strands run` takes on a software adapter unless told otherwise)".into()
            } else if form.ends_with("-frame") {
                "Run a form that dispatches each substep (walked-fused, the default on a software adapter; `GpuSimulator::set_form`): a frame in one dispatch runs all of its substeps' loops in one invocation. Or use fewer vertices per strand, or the CPU backend (--backend cpu)".into()
            } else {
                "Use fewer vertices per strand, or the CPU backend (--backend cpu, which `strands run` takes on a software adapter unless told otherwise); a program embedding the library can also run the walked stages each as a dispatch of its own (`GpuSimulator::set_form(Form::Walked)`)".into()
            },
            ..Self::new(rods, r, step, time, Cause::LoopLimit)
        }
    }

    /// A vertex that passed through a collider within one substep.
    pub fn tunnelled(rods: &RodSet, r: usize, step: u64, time: f64, t: contact::Tunnel) -> Self {
        let c = &rods.colliders[t.collider];
        let moved = if t.distance.is_finite() {
            format!("{:.3e} m", t.distance)
        } else {
            "more".into()
        };
        Unstable {
            what: format!(
                "vertex {} moved {moved} relative to collider `{}` in one substep and crossed it (tunnelling)",
                t.vertex, c.name
            ),
            hint: format!(
                "Contact resolves at most {:.3e} m of relative motion per substep for this collider (its thickness); raise sim.substeps or slow the anchor `{}`.",
                t.limit, rods.anchors[c.anchor].name
            ),
            ..Self::new(rods, r, step, time, Cause::Tunnelling)
        }
    }
}

/// Largest stable explicit step for one rod (`stability::rod_step_limit`).
pub fn stable_step_estimate(rods: &RodSet, r: usize) -> f64 {
    stability::rod_step_limit(rods, r).h_max
}

/// Rest data of rod `r`.
pub fn rod_rest(rods: &RodSet, r: usize) -> RodRest<'_> {
    let v = rods.vertices(r);
    RodRest {
        material: &rods.material[r],
        rest_len: &rods.rest_len[rods.edges(r)],
        voronoi: &rods.voronoi[v.clone()],
        rest_kappa: &rods.rest_kappa[v],
    }
}

/// Per-rod check for a state that has left the physical range: non-finite
/// values, a vertex faster than `sim.max_speed` (naming the anchor that
/// drives it, if one does), two edges folded onto each other, an edge
/// stretched by more than `MAX_STRAIN`.
fn check_rod(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    pos: &[DVec3],
    vel: &[DVec3],
    theta: &[f64],
) -> Option<Bad> {
    if let Some(i) = pos.iter().position(|p| !p.is_finite()) {
        return Some(Bad::NonFinite(format!("non-finite position at vertex {i}")));
    }
    if let Some(i) = vel.iter().position(|v| !v.is_finite()) {
        return Some(Bad::NonFinite(format!("non-finite velocity at vertex {i}")));
    }
    if let Some(j) = theta.iter().position(|v| !v.is_finite()) {
        return Some(Bad::NonFinite(format!(
            "non-finite twist angle at edge {j}"
        )));
    }
    let n = pos.len();
    let inv_mass = &rods.inv_mass[rods.vertices(r)];
    // Anchored vertices first: an anchor that moves too fast is the cause
    // even when the free vertices it drags are faster still.
    let fast = |i: &usize| vel[*i].length() > params.max_speed;
    let anchored = (0..n).filter(|&i| inv_mass[i] == 0.0).find(fast);
    if let Some(i) = anchored.or_else(|| (0..n).find(fast)) {
        let anchor = (inv_mass[i] == 0.0)
            .then(|| anchor_of(rods, r, i, n))
            .flatten();
        return Some(Bad::TooFast {
            vertex: i,
            speed: vel[i].length(),
            anchor,
        });
    }
    for j in 0..n.saturating_sub(2) {
        let (a, b) = (pos[j + 1] - pos[j], pos[j + 2] - pos[j + 1]);
        if a.dot(b) < FOLD_ANGLE.cos() * (a.length() * b.length()) {
            let angle = a.angle_between(b);
            return Some(Bad::Folded { edge: j, angle });
        }
    }
    if params.projection != Projection::None {
        let rest = &rods.rest_len[rods.edges(r)];
        let (edge, strain) = (0..rest.len())
            .map(|j| (j, ((pos[j + 1] - pos[j]).length() / rest[j] - 1.0).abs()))
            .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        if strain > MAX_STRAIN {
            return Some(Bad::Stretched { edge, strain });
        }
    }
    None
}

/// The anchor that drives vertex `i` of rod `r` (of `n` vertices), if any.
fn anchor_of(rods: &RodSet, r: usize, i: usize, n: usize) -> Option<usize> {
    match (rods.start[r], rods.end[r]) {
        (EndCondition::Clamped(c), _) if i < 2 => Some(c.anchor),
        (_, EndCondition::Clamped(c)) if i + 2 >= n => Some(c.anchor),
        _ => None,
    }
}

/// The first rod (and what is wrong) whose state has left the physical range.
pub fn check_state(rods: &RodSet, params: &SimParams, state: &State) -> Option<(usize, Bad)> {
    (0..rods.rod_count()).find_map(|r| {
        let v = rods.vertices(r);
        let e = rods.edges(r);
        check_rod(
            rods,
            params,
            r,
            &state.pos[v.clone()],
            &state.vel[v],
            &state.theta[e],
        )
        .map(|what| (r, what))
    })
}

/// Energies and extremes of a state.
pub fn diagnostics_of(rods: &RodSet, state: &State, params: &SimParams) -> Diagnostics {
    let mut d = Diagnostics {
        time: state.time,
        ..Default::default()
    };
    let poses = collider_poses_at(rods, state.time);
    for r in 0..rods.rod_count() {
        let v = rods.vertices(r);
        let e = rods.edges(r);
        let pos = &state.pos[v.clone()];
        let mut kb = vec![DVec3::ZERO; pos.len()];
        curvature_binormals(pos, &mut kb);
        let (b, t) = twist::elastic_energy(
            rod_rest(rods, r),
            &kb,
            &state.tangent[e.clone()],
            &state.ref_u[e.clone()],
            &state.theta[e.clone()],
        );
        d.bending += b;
        d.twisting += t;
        d.max_strain = d
            .max_strain
            .max(project::max_strain(pos, &rods.rest_len[e]));
        if !rods.colliders.is_empty() {
            d.max_penetration = d
                .max_penetration
                .max(rod_penetration(rods, &poses, r, state));
        }
    }
    if rods.rod_contact.is_active() {
        d.rod_penetration = rod_contact::max_penetration(rods, &state.pos);
    }
    for (i, (x, v)) in state.pos.iter().zip(&state.vel).enumerate() {
        let m = rods.mass[i];
        d.gravitational -= m * params.gravity.dot(*x);
        d.kinetic += 0.5 * m * v.length_squared();
        d.max_speed = d.max_speed.max(v.length());
    }
    d
}

/// Torque (N·m) about the edge tangent that each clamped end of rod `r`
/// exerts on the rod, `∂E/∂θ` at that edge (§8.2); `None` for a free end.
pub fn clamp_torques_of(rods: &RodSet, state: &State, r: usize) -> [Option<f64>; 2] {
    let v = rods.vertices(r);
    let e = rods.edges(r);
    let pos = &state.pos[v];
    let mut kb = vec![DVec3::ZERO; pos.len()];
    curvature_binormals(pos, &mut kb);
    let ne = e.len();
    let mut gb = vec![0.0; ne];
    let mut gt = vec![0.0; ne];
    twist_gradient(
        RowOrder::RootFirst,
        rod_rest(rods, r),
        &kb,
        &state.tangent[e.clone()],
        &state.ref_u[e.clone()],
        &state.theta[e],
        &mut gb,
        &mut gt,
        None,
    );
    let at = |cond: EndCondition, j: usize| {
        matches!(cond, EndCondition::Clamped(_)).then(|| gb[j] + gt[j])
    };
    [at(rods.start[r], 0), at(rods.end[r], ne - 1)]
}

/// The CPU reference simulator over a `RodSet`.
pub struct CpuSimulator {
    /// The rods, their anchors (moved through `set_anchor_pose` and
    /// `teleport_anchor`), colliders and interaction.
    pub rods: RodSet,
    /// The state: positions, velocities, frames, time.
    pub state: State,
    /// The simulation parameters (`dt`, substeps, gravity, wind, ...).
    pub params: SimParams,
    /// Frames (of `params.dt`) taken so far.
    pub step_count: u64,
    /// Working arrays of the substep.
    pub work: Workspace,
    /// What the substeps were last resolved for (`stability::Checked`).
    checked: stability::Checked,
}

impl CpuSimulator {
    /// Takes the rods in their initial state and puts the material frame in
    /// quasistatic equilibrium (Algorithm 1, line 2).
    pub fn new(rods: RodSet, mut state: State, params: SimParams) -> Self {
        let t = state.time;
        let mut work = Workspace::new(rods.vertex_count());
        for_each_rod(&rods, &mut state, &mut work, |r, w| {
            update_material_frame(&rods, &params, r, t, &mut w.s);
        });
        CpuSimulator {
            rods,
            state,
            params,
            step_count: 0,
            work,
            checked: stability::Checked::default(),
        }
    }

    /// Advance one frame of `params.dt` in `params.substeps` substeps.
    pub fn step(&mut self) -> Result<Diagnostics, Unstable> {
        let [twist_iterations, projection_iterations] = self.advance()?;
        let mut d = self.diagnostics();
        d.twist_iterations = twist_iterations;
        d.projection_iterations = projection_iterations;
        d.grid_outside = self.work.last_grid_outside;
        (d.newton_iterations, d.newton_residual) = self.last_newton();
        d.rod_contacts = self.work.last_rod_contacts;
        Ok(d)
    }

    /// The most Newton iterations a rod's solve took in the last frame and
    /// the largest residual it left (N); (0, 0) with the symplectic
    /// integrator.
    pub fn last_newton(&self) -> (u32, f64) {
        self.work.last_newton
    }

    /// `step` without the diagnostics (energies are a serial pass over all
    /// rods): returns the most twist and projection iterations used.
    pub fn advance(&mut self) -> Result<[u32; 2], Unstable> {
        self.params.substeps = self
            .checked
            .recheck(&self.rods, &self.params)
            .map_err(|e| {
                Unstable::step_limit(&self.rods, e, self.step_count + 1, self.state.time)
            })?;
        let h = self.params.h();
        let mut twist_iterations = 0;
        let mut projection_iterations = 0;
        let mut grid_outside = 0;
        let mut rod_contacts = 0;
        let (mut newton_iterations, mut newton_residual) = (0, 0.0f64);
        for _ in 0..self.params.substeps {
            let t = self.state.time;
            let report = substep(
                &self.rods,
                &self.params,
                t,
                h,
                &mut self.state,
                &mut self.work,
            );
            self.state.time = t + h;
            let step = self.step_count + 1;
            if let Some((group, node)) = report.grid_overflow {
                return Err(Unstable::grid_overflow(
                    &self.rods,
                    group,
                    node,
                    step,
                    self.state.time,
                ));
            }
            // Checked after the rods' own causes (an anchor driving a rod
            // too fast explains contact it cannot resolve).
            let unresolved = report.rod_contact_unresolved;
            grid_outside += report.grid_outside as u64;
            rod_contacts = rod_contacts.max(report.rod_contacts as u64);
            let time = self.state.time;
            for (r, rep) in report.rods.into_iter().enumerate() {
                // An anchor driving its vertices too fast explains whatever
                // else went wrong in the substep.
                let (anchored, bad) = match rep.bad {
                    Some(
                        b @ Bad::TooFast {
                            anchor: Some(_), ..
                        },
                    ) => (Some(b), None),
                    b => (None, b),
                };
                if let Some(b) = anchored {
                    let e = Unstable::blow_up(&self.rods, &self.params, r, step, time, b);
                    return Err(e);
                }
                if let Some(n) = rep.newton {
                    if !n.converged {
                        let e = Unstable::newton(&self.rods, &self.params, r, n, step, time);
                        return Err(e);
                    }
                    newton_iterations = newton_iterations.max(n.iterations);
                    newton_residual = newton_residual.max(n.force_residual);
                }
                if let Some(p) = rep.unconverged {
                    let e = Unstable::projection(&self.rods, &self.params, r, p, step, time);
                    return Err(e);
                }
                if let Some(vertex) = rep.chatter {
                    let e = Unstable::chatter(&self.rods, &self.params, r, vertex, step, time);
                    return Err(e);
                }
                if let Some(bad) = bad {
                    return Err(Unstable::blow_up(
                        &self.rods,
                        &self.params,
                        r,
                        step,
                        time,
                        bad,
                    ));
                }
                if let Some(tunnel) = rep.tunnel {
                    return Err(Unstable::tunnelled(
                        &self.rods,
                        r,
                        step,
                        self.state.time,
                        tunnel,
                    ));
                }
                twist_iterations = twist_iterations.max(rep.twist_iterations);
                projection_iterations = projection_iterations.max(rep.projection_iterations);
            }
            if let Some(u) = unresolved {
                return Err(Unstable::rod_contact(
                    &self.rods,
                    &self.params,
                    step,
                    self.state.time,
                    u,
                ));
            }
        }
        self.step_count += 1;
        self.work.last_grid_outside = grid_outside;
        self.work.last_rod_contacts = rod_contacts;
        self.work.last_newton = (newton_iterations, newton_residual);
        Ok([twist_iterations, projection_iterations])
    }

    /// Energies and extremes of the current state.
    pub fn diagnostics(&self) -> Diagnostics {
        diagnostics_of(&self.rods, &self.state, &self.params)
    }

    /// Clamp torques of rod `r` (see `clamp_torques_of`).
    pub fn clamp_torques(&self, r: usize) -> [Option<f64>; 2] {
        clamp_torques_of(&self.rods, &self.state, r)
    }

    /// The index of the anchor named `name` (`world` is 0).
    pub fn anchor_index(&self, name: &str) -> Option<usize> {
        self.rods.anchors.iter().position(|a| a.name == name)
    }

    /// Drive anchor `anchor`: at time `t_target` (s, after the present
    /// `state.time`) it is translated by `translation` (m) and turned by the
    /// rotation vector `rotation` (rad); the substeps until then interpolate
    /// (`Anchor::set_pose`). Call it once a frame, before `step`, with the
    /// time the frame ends.
    pub fn set_anchor_pose(
        &mut self,
        anchor: usize,
        t_target: f64,
        translation: DVec3,
        rotation: DVec3,
    ) -> Result<(), AnchorError> {
        let now = self.state.time;
        self.anchor_mut(anchor)?
            .set_pose(now, t_target, translation, rotation)
    }

    /// `set_anchor_pose` with the rotation as a quaternion
    /// (`Anchor::set_pose_quat`: the rotation vector nearest the present one).
    pub fn set_anchor_pose_quat(
        &mut self,
        anchor: usize,
        t_target: f64,
        translation: DVec3,
        rotation: glam::DQuat,
    ) -> Result<(), AnchorError> {
        let now = self.state.time;
        self.anchor_mut(anchor)?
            .set_pose_quat(now, t_target, translation, rotation)
    }

    /// Move anchor `anchor` at once to `translation` and rotation vector
    /// `rotation`, with every rod clamped to it, rigidly and without a bounce
    /// (`rods::teleport`).
    pub fn teleport_anchor(
        &mut self,
        anchor: usize,
        translation: DVec3,
        rotation: DVec3,
    ) -> Result<(), AnchorError> {
        crate::model::rods::teleport(
            &mut self.rods,
            &mut self.state,
            anchor,
            translation,
            rotation,
        )
    }

    fn anchor_mut(
        &mut self,
        anchor: usize,
    ) -> Result<&mut crate::model::anchor::Anchor, AnchorError> {
        let count = self.rods.anchors.len();
        if anchor == 0 {
            return Err(AnchorError::World);
        }
        self.rods
            .anchors
            .get_mut(anchor)
            .ok_or(AnchorError::NoSuchAnchor {
                index: anchor,
                count,
            })
    }

    /// Set the gravitational acceleration (m/s²) from the next step on.
    pub fn set_gravity(&mut self, gravity: DVec3) {
        self.params.gravity = gravity;
    }

    /// Set the wind from the next step on.
    pub fn set_wind(&mut self, wind: crate::model::params::Wind) {
        self.params.wind = wind;
    }

    /// Give rod `rod` another material from the next step on
    /// (`RodSet::set_material`: the vertex masses follow the new mass per
    /// length as built, vertices held by a clamp keep an inverse mass of 0,
    /// the interaction grid's masses are quantised again), and put its
    /// material frame in quasistatic equilibrium for the new stiffness at
    /// once, as `new` does (the GPU's `set_material` twin). The substeps are
    /// resolved again for the new stiffness by the next `step` (an error if
    /// they no longer suffice). Errors: no such rod, constants out of range
    /// (`RodMaterial::check`).
    pub fn set_material(
        &mut self,
        rod: usize,
        material: RodMaterial,
    ) -> Result<(), crate::model::rods::MaterialError> {
        self.rods.set_material(rod, material)?;
        let t = self.state.time;
        let (rods, params) = (&self.rods, &self.params);
        for_each_rod(rods, &mut self.state, &mut self.work, |r, w| {
            if r == rod {
                update_material_frame(rods, params, r, t, &mut w.s);
            }
        });
        Ok(())
    }
}

/// Pose of every collider's anchor at time `t`.
fn collider_poses_at(rods: &RodSet, t: f64) -> Vec<crate::model::anchor::Pose> {
    rods.colliders
        .iter()
        .map(|c| rods.anchors[c.anchor].pose(t))
        .collect()
}

/// Largest penetration of rod `r` into any collider (`contact::max_penetration`).
fn rod_penetration(
    rods: &RodSet,
    poses: &[crate::model::anchor::Pose],
    r: usize,
    state: &State,
) -> f64 {
    let v = rods.vertices(r);
    contact::max_penetration(
        &rods.colliders,
        poses,
        rods.material[r].radius,
        &rods.inv_mass[v.clone()],
        &state.pos[v],
    )
}

/// Rods whose strand surface starts inside a collider, as `(rods, deepest
/// rod, its penetration in m)`; `None` when none does. Contact pushes such
/// vertices out in the first substep; `strands run` says so before it starts.
pub fn starting_inside(rods: &RodSet, state: &State) -> Option<(usize, usize, f64)> {
    if rods.colliders.is_empty() {
        return None;
    }
    let poses = collider_poses_at(rods, state.time);
    let depth: Vec<f64> = (0..rods.rod_count())
        .map(|r| rod_penetration(rods, &poses, r, state))
        .collect();
    let inside = depth.iter().filter(|&&d| d > 0.0).count();
    let worst = (0..depth.len()).max_by(|&a, &b| depth[a].total_cmp(&depth[b]))?;
    (inside > 0).then_some((inside, worst, depth[worst]))
}

#[cfg(test)]
mod tests {
    use super::time_text;

    /// A stopped run's time: 1 µs resolution, or 4 significant digits for
    /// a run of sub-millisecond frames, where the decimals would read 0.
    #[test]
    fn stop_times_never_read_zero_for_short_steps() {
        assert_eq!(time_text(1.0 / 60.0), "0.016667");
        assert_eq!(time_text(2.5), "2.500000");
        assert_eq!(time_text(0.0), "0.000000");
        assert_eq!(time_text(2e-7), "2.000e-7");
        assert_eq!(time_text(1.2345e-4), "1.234e-4");
    }
}
