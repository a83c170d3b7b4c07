//! The CPU reference simulator: the DER formulation of Bergou et al. 2008 in
//! f64, one rod at a time, rods in parallel.
//!
//! Each kernel module mirrors a WGSL kernel of the same name (`frames`,
//! `twist`, `forces`, `integrate`, `project_jacobi`); the code keeps the GPU's
//! loop shape where that lets a reader compare the two, even where more
//! idiomatic Rust would read differently.

pub mod curvature;
pub mod forces;
pub mod frames;
pub mod project;
pub mod twist;

use glam::DVec3;
use rayon::prelude::*;

use crate::params::{Projection, SimParams};
use crate::rods::{EndCondition, RodSet, State, split_mut};
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
    /// Most iterations a projection used in this step (fixed for Jacobi).
    pub projection_iterations: u32,
}

/// A rod whose state became non-finite or ran away.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "rod {rod} ({name}) became unstable at step {step} (t = {time:.6} s): {what}. Likely cause: the time step h = {h:.3e} s is too large for the rod's stiffness; explicit integration of bending needs about h < {h_max:.3e} s here (h ≈ Δx²·√(μ/B)/2). Lower sim.dt or raise sim.substeps."
)]
pub struct Unstable {
    pub rod: usize,
    pub name: String,
    pub step: u64,
    pub time: f64,
    pub what: String,
    pub h: f64,
    pub h_max: f64,
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

/// Per-rod outcome of a substep.
#[derive(Clone, Copy, Debug, Default)]
struct RodReport {
    twist_iterations: u32,
    projection_iterations: u32,
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

/// One substep of length `h` from time `t` for one rod: forces, symplectic
/// Euler (§7.2), anchors, projection with velocity update (§8.1), frames.
fn substep_rod(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    t: f64,
    h: f64,
    s: &mut RodStateMut,
) -> RodReport {
    let n = s.pos.len();
    let inv_mass = &rods.inv_mass[rods.vertices(r)];
    let mut force = vec![DVec3::ZERO; n];
    rod_forces(
        rods, params, r, t, s.pos, s.vel, s.tangent, s.ref_u, s.theta, &mut force,
    );
    integrate(rods, r, t + h, h, &force, s.pos, s.vel);
    // Inextensibility, then v ← v + (x_projected − x_unconstrained)/h.
    let unconstrained = s.pos.to_vec();
    let rest_len = &rods.rest_len[rods.edges(r)];
    let projection_iterations = match params.projection {
        Projection::None => 0,
        Projection::Fast {
            tolerance,
            max_iterations,
        } => project::project_fast(s.pos, inv_mass, rest_len, tolerance, max_iterations).iterations,
        Projection::Jacobi {
            iterations,
            relaxation,
        } => {
            let mut other = unconstrained.clone();
            for _ in 0..iterations {
                project::project_jacobi(s.pos, &mut other, inv_mass, rest_len, relaxation);
                s.pos.copy_from_slice(&other);
            }
            iterations
        }
    };
    project::project_velocity(s.vel, s.pos, &unconstrained, h);
    let twist_iterations = update_material_frame(rods, params, r, t + h, s);
    RodReport {
        twist_iterations,
        projection_iterations,
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
}

impl CpuSimulator {
    /// Takes the rods in their initial state and puts the material frame in
    /// quasistatic equilibrium (Algorithm 1, line 2).
    pub fn new(rods: RodSet, mut state: State, params: SimParams) -> Self {
        let t = state.time;
        for_each_rod(&rods, &mut state, |r, s| {
            update_material_frame(&rods, &params, r, t, s);
        });
        CpuSimulator {
            rods,
            state,
            params,
            step_count: 0,
        }
    }

    /// Advance one frame of `params.dt` in `params.substeps` substeps.
    pub fn step(&mut self) -> Result<Diagnostics, Unstable> {
        let [twist_iterations, projection_iterations] = self.advance()?;
        let mut d = self.diagnostics();
        d.twist_iterations = twist_iterations;
        d.projection_iterations = projection_iterations;
        Ok(d)
    }

    /// `step` without the diagnostics (energies are a serial pass over all
    /// rods): returns the most twist and projection iterations used.
    pub fn advance(&mut self) -> Result<[u32; 2], Unstable> {
        let h = self.params.h();
        let mut twist_iterations = 0;
        let mut projection_iterations = 0;
        for _ in 0..self.params.substeps {
            let t = self.state.time;
            let (rods, params) = (&self.rods, &self.params);
            let reports = for_each_rod(rods, &mut self.state, |r, s| {
                let rep = substep_rod(rods, params, r, t, h, s);
                (rep, check_rod(rods, params, r, s.pos, s.vel, s.theta))
            });
            self.state.time = t + h;
            for (r, (rep, bad)) in reports.into_iter().enumerate() {
                if let Some(what) = bad {
                    return Err(Unstable {
                        rod: r,
                        name: self.rods.names[r].clone(),
                        step: self.step_count + 1,
                        time: self.state.time,
                        what,
                        h,
                        h_max: stable_step_estimate(&self.rods, r),
                    });
                }
                twist_iterations = twist_iterations.max(rep.twist_iterations);
                projection_iterations = projection_iterations.max(rep.projection_iterations);
            }
        }
        self.step_count += 1;
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

/// Run `f` on every rod's slice of the state, in parallel.
fn for_each_rod<T: Send>(
    rods: &RodSet,
    state: &mut State,
    f: impl Fn(usize, &mut RodStateMut) -> T + Sync,
) -> Vec<T> {
    let vo = &rods.vertex_offset;
    let eo = rods.edge_offsets();
    let pos = split_mut(&mut state.pos, vo);
    let vel = split_mut(&mut state.vel, vo);
    let theta = split_mut(&mut state.theta, &eo);
    let tangent = split_mut(&mut state.tangent, &eo);
    let ref_u = split_mut(&mut state.ref_u, &eo);
    let views: Vec<RodStateMut> = pos
        .into_iter()
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
        .collect();
    views
        .into_par_iter()
        .enumerate()
        .map(|(r, mut s)| f(r, &mut s))
        .collect()
}
