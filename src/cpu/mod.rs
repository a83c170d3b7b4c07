//! The CPU reference simulator: the DER formulation of Bergou et al. 2008 in
//! f64. A substep is stage-major like the GPU's: each stage runs over all
//! rods (in parallel) in the order the GPU dispatches its kernels.
//!
//! Each kernel module mirrors a WGSL kernel of the same name (`frames`,
//! `twist`, `forces`, `integrate`, `project_jacobi`); the code keeps the GPU's
//! loop shape where that lets a reader compare the two, even where more
//! idiomatic Rust would read differently.

pub mod contact;
pub mod curvature;
pub mod forces;
pub mod frames;
pub mod grid;
pub mod project;
pub mod twist;

use glam::DVec3;
use rayon::prelude::*;

use crate::params::{Projection, SimParams};
use crate::rods::{EndCondition, RodSet, State, split_mut};
use contact::{ColliderPoses, Contact};
use forces::{External, elastic_forces, external_forces};
use frames::{signed_angle, unwrap_angle};
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
}

/// A rod whose state became non-finite, ran away, or passed through a collider.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("rod {rod} ({name}) became unstable at step {step} (t = {time:.6} s): {what}. {hint}")]
pub struct Unstable {
    pub rod: usize,
    pub name: String,
    pub step: u64,
    pub time: f64,
    pub what: String,
    /// The likely cause and what to change.
    pub hint: String,
}

impl Unstable {
    /// A state that left the physical range: the step-size hint.
    pub fn blow_up(rods: &RodSet, r: usize, step: u64, time: f64, what: String, h: f64) -> Self {
        let h_max = stable_step_estimate(rods, r);
        Unstable {
            rod: r,
            name: rods.names[r].clone(),
            step,
            time,
            what,
            hint: format!(
                "Likely cause: the time step h = {h:.3e} s is too large for the rod's stiffness; explicit integration of bending needs about h < {h_max:.3e} s here (h ≈ Δx²·√(μ/B)/2). Lower sim.dt or raise sim.substeps."
            ),
        }
    }

    /// A grid node whose fixed-point momentum could overflow (`grid::could_overflow`).
    pub fn grid_overflow(rods: &RodSet, group: usize, node: usize, step: u64, time: f64) -> Self {
        let g = &rods.interaction.groups[group];
        let [nx, ny, _] = g.dims.map(|d| d as usize);
        let (i, j, k) = (node % nx, node / nx % ny, node / (nx * ny));
        let r = g.rods[0];
        Unstable {
            rod: r,
            name: rods.names[r].clone(),
            step,
            time,
            what: format!(
                "interaction group `{}`: grid node ({i}, {j}, {k}) holds so much mass moving so fast that its 64-bit fixed-point momentum could overflow",
                g.name
            ),
            hint: format!(
                "Either the group moves far faster than it should (a blow-up: see sim.max_speed), or too many vertices share one node: raise interaction.resolution or lower interaction.cell (now {:.3e} m) so that each node holds fewer.",
                g.cell
            ),
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
            rod: r,
            name: rods.names[r].clone(),
            step,
            time,
            what: format!(
                "vertex {} moved {moved} relative to collider `{}` in one substep and crossed it (tunnelling)",
                t.vertex, c.name
            ),
            hint: format!(
                "Contact resolves at most {:.3e} m of relative motion per substep for this collider (its thickness); raise sim.substeps or slow the anchor `{}`.",
                t.limit, rods.anchors[c.anchor].name
            ),
        }
    }
}

/// Largest stable explicit step for one rod, from the highest bending mode
/// of a uniform chain: ω_max² ≈ 16 B / (μ Δx⁴), h < 2/ω_max.
pub fn stable_step_estimate(rods: &RodSet, r: usize) -> f64 {
    let m = &rods.material[r];
    let dx = rods.rest_len[rods.edges(r)]
        .iter()
        .fold(f64::INFINITY, |a, &b| a.min(b));
    let b = m.bending[0].max(m.bending[2]);
    0.5 * dx * dx * (m.mass_per_length / b).sqrt()
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

/// Mutable state of one rod.
pub struct RodStateMut<'a> {
    pub pos: &'a mut [DVec3],
    pub vel: &'a mut [DVec3],
    pub theta: &'a mut [f64],
    pub tangent: &'a mut [DVec3],
    pub ref_u: &'a mut [DVec3],
}

/// Range of twist angles of a rod that the quasistatic solve may change.
pub fn free_twist_range(rods: &RodSet, r: usize) -> std::ops::Range<usize> {
    let ne = rods.edges(r).len();
    let a = matches!(rods.start[r], EndCondition::Clamped(_)) as usize;
    let b = ne - matches!(rods.end[r], EndCondition::Clamped(_)) as usize;
    a..b.max(a)
}

/// Set the twist angle of each clamped end edge from its anchor at time `t`:
/// the angle from the Bishop vector u to the anchor's material vector m1,
/// continued from the previous value so whole turns are kept.
pub fn clamp_twist(rods: &RodSet, r: usize, t: f64, s: &mut RodStateMut) {
    let ne = s.theta.len();
    for (cond, j) in [(rods.start[r], 0), (rods.end[r], ne - 1)] {
        if let EndCondition::Clamped(c) = cond {
            let m1 = rods.anchors[c.anchor].pose(t).vector(c.local_m1);
            let a = signed_angle(s.ref_u[j], m1, s.tangent[j]);
            s.theta[j] = unwrap_angle(a, s.theta[j]);
        }
    }
}

/// Place the vertices of clamped ends where their anchors are at time `t`.
/// Returns the vertices set (local indices) and their positions.
fn anchored_positions(rods: &RodSet, r: usize, t: f64, n: usize) -> Vec<(usize, DVec3)> {
    let mut out = Vec::new();
    for (cond, first) in [(rods.start[r], 0), (rods.end[r], n - 2)] {
        if let EndCondition::Clamped(c) = cond {
            let pose = rods.anchors[c.anchor].pose(t);
            out.push((first, pose.point(c.local_pos[0])));
            out.push((first + 1, pose.point(c.local_pos[1])));
        }
    }
    out
}

/// Quasistatic update of one rod's material frame after its centerline moved:
/// Bishop frames (§4.2.2), clamped angles from anchors, Newton on the rest (§5.1).
pub fn update_material_frame(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    t: f64,
    s: &mut RodStateMut,
) -> u32 {
    frames::frames(s.pos, s.tangent, s.ref_u);
    clamp_twist(rods, r, t, s);
    let mut kb = vec![DVec3::ZERO; s.pos.len()];
    curvature_binormals(s.pos, &mut kb);
    twist::twist(
        rod_rest(rods, r),
        &kb,
        s.tangent,
        s.ref_u,
        s.theta,
        free_twist_range(rods, r),
        params.twist_tolerance,
        params.twist_max_iterations,
    )
    .iterations
}

/// Total force on every vertex of one rod (elastic + gravity + drag) at time `t`.
#[allow(clippy::too_many_arguments)] // one argument per buffer the WGSL kernel binds
pub fn rod_forces(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    t: f64,
    pos: &[DVec3],
    vel: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &[f64],
    force: &mut [DVec3],
) {
    let rest = rod_rest(rods, r);
    let n = pos.len();
    let mut kb = vec![DVec3::ZERO; n];
    curvature_binormals(pos, &mut kb);
    let mut gb = vec![0.0; n - 1];
    let mut gt = vec![0.0; n - 1];
    twist_gradient(rest, &kb, tangent, ref_u, theta, &mut gb, &mut gt, None);
    force.fill(DVec3::ZERO);
    let end_clamped = matches!(rods.end[r], EndCondition::Clamped(_));
    elastic_forces(
        rest,
        pos,
        &kb,
        tangent,
        ref_u,
        theta,
        &gb,
        &gt,
        end_clamped,
        force,
    );
    let ext = External {
        gravity: params.gravity,
        wind: &params.wind,
        time: t,
    };
    external_forces(rest, &rods.mass[rods.vertices(r)], pos, vel, ext, force);
}

/// Kernel `integrate` (shaders/integrate.wgsl): symplectic Euler, velocity
/// first, then position (§7.2). Vertices driven by an anchor go where the
/// anchor is at `t_end`, with the velocity that takes them there in `h`.
pub fn integrate(
    rods: &RodSet,
    r: usize,
    t_end: f64,
    h: f64,
    force: &[DVec3],
    pos: &mut [DVec3],
    vel: &mut [DVec3],
) {
    let n = pos.len();
    let inv_mass = &rods.inv_mass[rods.vertices(r)];
    for i in 0..n {
        vel[i] += force[i] * (h * inv_mass[i]);
        pos[i] += vel[i] * h;
    }
    for (i, x) in anchored_positions(rods, r, t_end, n) {
        let old = pos[i] - vel[i] * h;
        vel[i] = (x - old) / h;
        pos[i] = x;
    }
}

/// Per-rod check for a state that has left the physical range.
fn check_rod(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    pos: &[DVec3],
    vel: &[DVec3],
    theta: &[f64],
) -> Option<String> {
    if let Some(i) = pos.iter().position(|p| !p.is_finite()) {
        return Some(format!("non-finite position at vertex {i}"));
    }
    if let Some(i) = vel.iter().position(|v| !v.is_finite()) {
        return Some(format!("non-finite velocity at vertex {i}"));
    }
    if let Some(j) = theta.iter().position(|v| !v.is_finite()) {
        return Some(format!("non-finite twist angle at edge {j}"));
    }
    if let Some((i, v)) = vel
        .iter()
        .enumerate()
        .find(|(_, v)| v.length() > params.max_speed)
    {
        return Some(format!(
            "vertex {i} moves at {:.3e} m/s, above sim.max_speed = {} m/s",
            v.length(),
            params.max_speed
        ));
    }
    if params.projection != Projection::None {
        let strain = project::max_strain(pos, &rods.rest_len[rods.edges(r)]);
        if strain > 0.5 {
            return Some(format!("an edge is stretched by {:.0}%", strain * 100.0));
        }
    }
    None
}

/// The first rod (and what is wrong) whose state has left the physical range.
pub fn check_state(rods: &RodSet, params: &SimParams, state: &State) -> Option<(usize, String)> {
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
    pub rods: RodSet,
    pub state: State,
    pub params: SimParams,
    /// Frames (of `params.dt`) taken so far.
    pub step_count: u64,
    /// Working arrays of the substep.
    pub work: Workspace,
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
        }
    }

    /// Advance one frame of `params.dt` in `params.substeps` substeps.
    pub fn step(&mut self) -> Result<Diagnostics, Unstable> {
        let [twist_iterations, projection_iterations] = self.advance()?;
        let mut d = self.diagnostics();
        d.twist_iterations = twist_iterations;
        d.projection_iterations = projection_iterations;
        d.grid_outside = self.work.last_grid_outside;
        Ok(d)
    }

    /// `step` without the diagnostics (energies are a serial pass over all
    /// rods): returns the most twist and projection iterations used.
    pub fn advance(&mut self) -> Result<[u32; 2], Unstable> {
        let h = self.params.h();
        let mut twist_iterations = 0;
        let mut projection_iterations = 0;
        let mut grid_outside = 0;
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
            grid_outside += report.grid_outside as u64;
            for (r, rep) in report.rods.into_iter().enumerate() {
                if let Some(what) = rep.bad {
                    return Err(Unstable::blow_up(
                        &self.rods,
                        r,
                        step,
                        self.state.time,
                        what,
                        h,
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
        }
        self.step_count += 1;
        self.work.last_grid_outside = grid_outside;
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
}

/// Per-vertex working arrays of a substep, flat like the state (the CPU
/// twins of the GPU's `scratch`, `pos_unc`, `pos_start` and `contact` buffers).
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    pub force: Vec<DVec3>,
    pub pos_unc: Vec<DVec3>,
    /// Positions at the start of the substep, saved before `integrate` when
    /// the projection is SHAKE (`project::project_shake`).
    pub pos_start: Vec<DVec3>,
    pub contact: Vec<Contact>,
    /// Per interaction group, its grid (the GPU's `grid` and `grid_fields`).
    pub grids: Vec<GridWork>,
    /// Vertex-substeps outside their grid in the last whole step.
    pub last_grid_outside: u64,
}

/// One group's grid of the current substep.
#[derive(Clone, Debug, Default)]
pub struct GridWork {
    pub nodes: grid::GridNodes,
    /// `[vx, vy, vz, p]` per node (`grid::grid_velocity`).
    pub fields: Vec<[f64; 4]>,
}

impl Workspace {
    pub fn new(vertex_count: usize) -> Self {
        Workspace {
            force: vec![DVec3::ZERO; vertex_count],
            pos_unc: vec![DVec3::ZERO; vertex_count],
            pos_start: vec![DVec3::ZERO; vertex_count],
            contact: vec![Contact::default(); vertex_count],
            ..Default::default()
        }
    }
}

/// One rod's slices of the state and the workspace.
pub struct RodWork<'a> {
    pub s: RodStateMut<'a>,
    pub force: &'a mut [DVec3],
    pub pos_unc: &'a mut [DVec3],
    pub pos_start: &'a mut [DVec3],
    pub contact: &'a mut [Contact],
}

/// Outcome of a substep.
#[derive(Clone, Debug, Default)]
pub struct SubstepReport {
    pub rods: Vec<RodReport>,
    /// Vertices outside their interaction group's grid.
    pub grid_outside: usize,
    /// `(group, node)` whose momentum could overflow; the substep's grid
    /// stages stopped there.
    pub grid_overflow: Option<(usize, usize)>,
}

/// Per-rod outcome of a substep.
#[derive(Clone, Debug, Default)]
pub struct RodReport {
    pub twist_iterations: u32,
    pub projection_iterations: u32,
    /// Whether every projection of the substep reached its tolerance
    /// (`Fast`, `Shake`; always true for `Jacobi` and `None`).
    pub projection_converged: bool,
    pub tunnel: Option<contact::Tunnel>,
    /// What left the physical range, if anything.
    pub bad: Option<String>,
}

/// Poses of every collider's anchor at `t` and `t + h`.
pub fn collider_poses(rods: &RodSet, t: f64, h: f64) -> Vec<ColliderPoses> {
    rods.colliders
        .iter()
        .map(|c| ColliderPoses {
            start: rods.anchors[c.anchor].pose(t),
            end: rods.anchors[c.anchor].pose(t + h),
        })
        .collect()
}

/// Iterations a projection of one rod used, and whether it reached its
/// tolerance (always true for Jacobi and None, which have none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectionOutcome {
    pub iterations: u32,
    pub converged: bool,
}

/// Stage `project` (phase 0: plain; phase 1: filtered by the contacts) of
/// one rod.
fn project_rod(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    w: &mut RodWork,
    phase: u32,
) -> ProjectionOutcome {
    let inv_mass = &rods.inv_mass[rods.vertices(r)];
    let rest_len = &rods.rest_len[rods.edges(r)];
    let filtered = phase == 1;
    let newton = |p: project::FastProjection| ProjectionOutcome {
        iterations: p.iterations,
        converged: p.converged,
    };
    let no_tolerance = |iterations| ProjectionOutcome {
        iterations,
        converged: true,
    };
    match params.projection {
        Projection::None => no_tolerance(0),
        Projection::Fast {
            tolerance,
            max_iterations,
        } => newton(project::project_fast(
            w.s.pos,
            inv_mass,
            rest_len,
            tolerance,
            max_iterations,
            w.contact,
            filtered,
        )),
        Projection::Shake {
            tolerance,
            max_iterations,
        } => newton(project::project_shake(
            w.s.pos,
            w.pos_start,
            inv_mass,
            rest_len,
            tolerance,
            max_iterations,
            w.contact,
            filtered,
        )),
        Projection::Jacobi {
            iterations,
            relaxation,
        } => {
            let n = jacobi_iterations(iterations, phase);
            let mut other = w.s.pos.to_vec();
            for _ in 0..n {
                project::project_jacobi(
                    w.s.pos, &mut other, inv_mass, rest_len, relaxation, w.contact, filtered,
                );
                w.s.pos.copy_from_slice(&other);
            }
            no_tolerance(n)
        }
    }
}

/// Jacobi iterations of a projection: the setting for the first; the second
/// (filtered, after contact) starts from `pos` and must end there on the GPU's
/// ping-pong buffers, so it rounds up to an even count.
pub fn jacobi_iterations(iterations: u32, phase: u32) -> u32 {
    if phase == 0 {
        iterations
    } else {
        iterations.div_ceil(2) * 2
    }
}

/// Jacobi iterations of one substep as diagnostics report them: the first
/// projection's, plus the filtered one's when there are colliders.
pub fn jacobi_iterations_per_substep(rods: &RodSet, iterations: u32) -> u32 {
    let second = if rods.colliders.is_empty() {
        0
    } else {
        jacobi_iterations(iterations, 1)
    };
    iterations + second
}

/// Pose of every collider's anchor at time `t`.
fn collider_poses_at(rods: &RodSet, t: f64) -> Vec<crate::anchor::Pose> {
    rods.colliders
        .iter()
        .map(|c| rods.anchors[c.anchor].pose(t))
        .collect()
}

/// Largest penetration of rod `r` into any collider (`contact::max_penetration`).
fn rod_penetration(rods: &RodSet, poses: &[crate::anchor::Pose], r: usize, state: &State) -> f64 {
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

/// One substep of length `h` from time `t`, stage-major: each stage runs
/// over every rod (in parallel) before the next starts, in the order the GPU
/// dispatches its kernels (`GpuSimulator::encode_substep`): forces,
/// [save_start] when the projection is SHAKE, integrate (§7.2),
/// [grid_clear, grid_splat, grid_velocity, grid_blend] when rods interact,
/// project (§8.1), [contact, filtered project, contact] when there are
/// colliders, project_velocity, frames and twist.
pub fn substep(
    rods: &RodSet,
    params: &SimParams,
    t: f64,
    h: f64,
    state: &mut State,
    work: &mut Workspace,
) -> SubstepReport {
    let mut reports = vec![RodReport::default(); rods.rod_count()];
    let poses = collider_poses(rods, t, h);
    // forces
    for_each_rod(rods, state, work, |r, w| {
        rod_forces(
            rods,
            params,
            r,
            t,
            w.s.pos,
            w.s.vel,
            w.s.tangent,
            w.s.ref_u,
            w.s.theta,
            w.force,
        );
    });
    // save_start (SHAKE projects along the constraint gradients of x₀)
    if matches!(params.projection, Projection::Shake { .. }) {
        for_each_rod(rods, state, work, |_, w| {
            w.pos_start.copy_from_slice(w.s.pos)
        });
    }
    // integrate
    for_each_rod(rods, state, work, |r, w| {
        integrate(rods, r, t + h, h, w.force, w.s.pos, w.s.vel);
        w.pos_unc.copy_from_slice(w.s.pos);
    });
    // grid_clear, grid_splat, grid_velocity, grid_blend
    let mut grid_outside = 0;
    if rods.interaction.is_active() {
        match interact(rods, t + h, h, state, work) {
            Ok(outside) => grid_outside = outside,
            Err(overflow) => {
                return SubstepReport {
                    rods: reports,
                    grid_outside,
                    grid_overflow: Some(overflow),
                };
            }
        }
    }
    // project
    let it = for_each_rod(rods, state, work, |r, w| project_rod(rods, params, r, w, 0));
    for (rep, p) in reports.iter_mut().zip(it) {
        rep.projection_iterations = p.iterations;
        rep.projection_converged = p.converged;
    }
    if !rods.colliders.is_empty() {
        for phase in 0..2 {
            // contact
            let found = for_each_rod(rods, state, work, |r, w| {
                contact::contact(
                    &rods.colliders,
                    &poses,
                    rods.material[r].radius,
                    &rods.inv_mass[rods.vertices(r)],
                    phase,
                    h,
                    w.s.pos,
                    w.pos_unc,
                    w.s.vel,
                    w.contact,
                )
            });
            for (rep, f) in reports.iter_mut().zip(found) {
                rep.tunnel = rep.tunnel.or(f.tunnel);
            }
            // project (filtered), between the two contact phases
            if phase == 0 {
                let it = for_each_rod(rods, state, work, |r, w| project_rod(rods, params, r, w, 1));
                for (rep, p) in reports.iter_mut().zip(it) {
                    rep.projection_iterations += p.iterations;
                    rep.projection_converged &= p.converged;
                }
            }
        }
    }
    // project_velocity, frames, twist, and the per-rod check
    let rest = for_each_rod(rods, state, work, |r, w| {
        if params.projection != Projection::None
            || !rods.colliders.is_empty()
            || rods.interaction.is_active()
        {
            project::project_velocity(w.s.vel, w.s.pos, w.pos_unc, w.contact, h);
        }
        let twist = update_material_frame(rods, params, r, t + h, &mut w.s);
        (
            twist,
            check_rod(rods, params, r, w.s.pos, w.s.vel, w.s.theta),
        )
    });
    for (rep, (twist, bad)) in reports.iter_mut().zip(rest) {
        rep.twist_iterations = twist;
        rep.bad = bad;
    }
    SubstepReport {
        rods: reports,
        grid_outside,
        grid_overflow: None,
    }
}

/// The grid stages of hair–hair interaction (`cpu::grid`, shaders/grid.wgsl),
/// group by group, on the integrated state at `t_end`: `grid_clear`,
/// `grid_splat`, `grid_velocity`, then `grid_blend` on every free vertex.
/// Returns the vertices outside their grid, or `(group, node)` that could
/// overflow.
pub fn interact(
    rods: &RodSet,
    t_end: f64,
    h: f64,
    state: &mut State,
    work: &mut Workspace,
) -> Result<usize, (usize, usize)> {
    let inter = &rods.interaction;
    work.grids
        .resize_with(inter.groups.len(), GridWork::default);
    let mut outside = 0;
    for (gi, group) in inter.groups.iter().enumerate() {
        let g = group.geometry_at(&rods.anchors, t_end);
        let w = &mut work.grids[gi];
        // grid_clear (and the fields of the nodes the last splat touched)
        for &k in &w.nodes.touched {
            if let Some(f) = w.fields.get_mut(k as usize) {
                *f = [0.0; 4];
            }
        }
        w.nodes.clear(&g);
        // grid_splat, from the f32 values the GPU holds
        let members: Vec<usize> = group.rods.iter().flat_map(|&r| rods.vertices(r)).collect();
        let pos: Vec<[f32; 3]> = members
            .iter()
            .map(|&v| state.pos[v].as_vec3().to_array())
            .collect();
        let vel: Vec<[f32; 3]> = members
            .iter()
            .map(|&v| state.vel[v].as_vec3().to_array())
            .collect();
        let mass_q: Vec<u32> = members.iter().map(|&v| inter.vertex[v].mass_q).collect();
        let overflow = |grid::GridError::Overflow { node, .. }| (gi, node);
        let s = grid::grid_splat(&g, &mut w.nodes, &pos, &vel, &mass_q).map_err(overflow)?;
        outside += s.outside;
        // grid_velocity
        grid::grid_velocity(&w.nodes, group.pressure_scale(), s.vmax, &mut w.fields)
            .map_err(overflow)?;
        // grid_blend
        let b = grid::Blend {
            h,
            volume_step: group.volume_stiffness * group.cell,
            max_push: group.max_push(),
        };
        let fields = &w.fields;
        let moves: Vec<DVec3> = (0..members.len())
            .into_par_iter()
            .map(|k| {
                let v = members[k];
                if rods.inv_mass[v] == 0.0 {
                    return DVec3::ZERO;
                }
                grid::grid_blend(&g, fields, pos[k], vel[k], inter.vertex[v].friction, b)
            })
            .collect();
        for (&v, d) in members.iter().zip(moves) {
            state.pos[v] += d;
        }
    }
    Ok(outside)
}

/// Run `f` on every rod's slices of the state and workspace, in parallel.
pub fn for_each_rod<T: Send>(
    rods: &RodSet,
    state: &mut State,
    work: &mut Workspace,
    f: impl Fn(usize, &mut RodWork) -> T + Sync,
) -> Vec<T> {
    let vo = &rods.vertex_offset;
    let views = rod_views(rods, state);
    let force = split_mut(&mut work.force, vo);
    let pos_unc = split_mut(&mut work.pos_unc, vo);
    let pos_start = split_mut(&mut work.pos_start, vo);
    let contact = split_mut(&mut work.contact, vo);
    let works: Vec<RodWork> = views
        .into_iter()
        .zip(force)
        .zip(pos_unc)
        .zip(pos_start)
        .zip(contact)
        .map(|((((s, force), pos_unc), pos_start), contact)| RodWork {
            s,
            force,
            pos_unc,
            pos_start,
            contact,
        })
        .collect();
    works
        .into_par_iter()
        .enumerate()
        .map(|(r, mut w)| f(r, &mut w))
        .collect()
}

/// Every rod's slices of the state.
fn rod_views<'a>(rods: &RodSet, state: &'a mut State) -> Vec<RodStateMut<'a>> {
    let vo = &rods.vertex_offset;
    let eo = rods.edge_offsets();
    let pos = split_mut(&mut state.pos, vo);
    let vel = split_mut(&mut state.vel, vo);
    let theta = split_mut(&mut state.theta, &eo);
    let tangent = split_mut(&mut state.tangent, &eo);
    let ref_u = split_mut(&mut state.ref_u, &eo);
    pos.into_iter()
        .zip(vel)
        .zip(theta)
        .zip(tangent)
        .zip(ref_u)
        .map(|((((pos, vel), theta), tangent), ref_u)| RodStateMut {
            pos,
            vel,
            theta,
            tangent,
            ref_u,
        })
        .collect()
}
