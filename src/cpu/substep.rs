//! Kernels `substep_start_rod`, `substep_finish_rod` and `substep_rod`
//! (shaders/substep.wgsl; here `substep_start`, `substep_finish`, `substep`): the stages of a substep in the order the GPU runs
//! them, each rod's `substep_start` in parallel, then `interact` (the
//! hair–hair grid stages of `cpu::grid`, shaders/grid.wgsl, over all rods),
//! then each rod's `substep_finish`; the stages' own pieces (`project_rod`,
//! `update_material_frame`, `rod_in_contact`), and the workspace and reports
//! they use.

use glam::DVec3;
use rayon::prelude::*;

use super::contact::{self, ColliderPoses, Contact};
use super::forces::rod_forces;
use super::frames::{self, clamp_twist};
use super::implicit;
use super::integrate::{anchored_positions, integrate};
use super::twist::{self, curvature_binormals, free_twist_range};
use super::{Bad, check_rod, grid, project, rod_contact, rod_rest};
use crate::model::params::{Integrator, Projection, SimParams};
use crate::model::rods::{RodSet, RodStateMut, State, split_mut};

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

/// Per-vertex working arrays of a substep, flat like the state (the CPU
/// twins of the GPU's `scratch`, `pos_unc`, `pos_start` and `contact` buffers).
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    /// Force on each vertex (N), from `forces` to `integrate`.
    pub force: Vec<DVec3>,
    /// Unconstrained positions after `integrate` (m).
    pub pos_unc: Vec<DVec3>,
    /// Positions at the start of the substep, saved before `integrate` when
    /// the projection is SHAKE (`project::project_shake`).
    pub pos_start: Vec<DVec3>,
    /// Each vertex's contact of the substep.
    pub contact: Vec<Contact>,
    /// Per vertex: consecutive substeps its velocity reversed (`integrate`).
    pub chatter: Vec<u32>,
    /// Per interaction group, its grid (the GPU's `grid` and `grid_fields`).
    pub grids: Vec<GridWork>,
    /// Vertex-substeps outside their grid in the last whole step.
    pub last_grid_outside: u64,
    /// The last whole step's most Newton iterations and largest force
    /// residual (N) of a rod's implicit step.
    pub last_newton: (u32, f64),
    /// Positions at the start of the substep, for rod–rod contact's
    /// continuous detection and friction (empty without rod contact).
    pub rod_contact_start: Vec<DVec3>,
    /// Most rod–rod contacts of a substep in the last whole step.
    pub last_rod_contacts: u64,
}

/// One group's grid of the current substep.
#[derive(Clone, Debug, Default)]
pub struct GridWork {
    /// The nodes' accumulators.
    pub nodes: grid::GridNodes,
    /// `[vx, vy, vz, p]` per node (`grid::grid_velocity`).
    pub fields: Vec<[f64; 4]>,
}

impl Workspace {
    /// Arrays for `vertex_count` vertices, zeroed, and no grids.
    pub fn new(vertex_count: usize) -> Self {
        Workspace {
            force: vec![DVec3::ZERO; vertex_count],
            pos_unc: vec![DVec3::ZERO; vertex_count],
            pos_start: vec![DVec3::ZERO; vertex_count],
            contact: vec![Contact::default(); vertex_count],
            chatter: vec![0; vertex_count],
            ..Default::default()
        }
    }
}

/// One rod's slices of the state and the workspace.
pub struct RodWork<'a> {
    /// The rod's state.
    pub s: RodStateMut<'a>,
    /// Its slice of `Workspace::force`.
    pub force: &'a mut [DVec3],
    /// Its slice of `Workspace::pos_unc`.
    pub pos_unc: &'a mut [DVec3],
    /// Its slice of `Workspace::pos_start`.
    pub pos_start: &'a mut [DVec3],
    /// Its slice of `Workspace::contact`.
    pub contact: &'a mut [Contact],
    /// Its slice of `Workspace::chatter`.
    pub chatter: &'a mut [u32],
}

/// Outcome of a substep.
#[derive(Clone, Debug, Default)]
pub struct SubstepReport {
    /// Per rod.
    pub rods: Vec<RodReport>,
    /// Vertices outside their interaction group's grid.
    pub grid_outside: usize,
    /// `(group, node)` whose momentum could overflow; the substep's grid
    /// stages stopped there.
    pub grid_overflow: Option<(usize, usize)>,
    /// Rod–rod contacts (pairs of edges) of the substep.
    pub rod_contacts: usize,
    /// A rod–rod contact that the rounds left deeper than
    /// `rod_contact::UNRESOLVED` of its reach (the run stops).
    pub rod_contact_unresolved: Option<rod_contact::Unresolved>,
}

/// Per-rod outcome of a substep.
#[derive(Clone, Debug, Default)]
pub struct RodReport {
    /// Newton iterations of the twist solve.
    pub twist_iterations: u32,
    /// Iterations of the projections (both, with colliders).
    pub projection_iterations: u32,
    /// Whether every projection of the substep reached its tolerance
    /// (`Fast`, `Shake`; always true for `Jacobi` and `None`).
    pub projection_converged: bool,
    /// A vertex that tunnelled through a collider.
    pub tunnel: Option<contact::Tunnel>,
    /// What left the physical range, if anything.
    pub bad: Option<Bad>,
    /// First vertex the chatter detector flagged (`integrate`).
    pub chatter: Option<usize>,
    /// A fast projection that did not converge.
    pub unconverged: Option<project::FastProjection>,
    /// How the implicit integrators' Newton solve ended (none for the
    /// symplectic one).
    pub newton: Option<implicit::NewtonReport>,
}

/// Poses of every collider's anchor at `t` and `t + h`.
pub fn collider_poses(rods: &RodSet, t: f64, h: f64) -> Vec<ColliderPoses> {
    rods.colliders
        .iter()
        .map(|c| {
            let anchor = &rods.anchors[c.anchor];
            ColliderPoses::new(c, anchor.pose(t), anchor.pose(t + h))
        })
        .collect()
}

/// Iterations a projection of one rod used, and whether it reached its
/// tolerance (always true for Jacobi and None, which have none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectionOutcome {
    /// Iterations taken.
    pub iterations: u32,
    /// Whether the tolerance was reached.
    pub converged: bool,
    /// A Newton projection that failed to meet the constraints
    /// (`FastProjection::failed`), which stops the run.
    pub failed: Option<project::FastProjection>,
}

/// Whether any vertex of a rod holds a contact (after contact's phase 0:
/// whether it moved any; a vertex or edge it pushes records a nonzero
/// depth). The GPU's twins: in the walked form `contact_walk`'s return
/// value (shaders/contact.wgsl).
fn rod_in_contact(contact: &[Contact]) -> bool {
    contact.iter().any(|c| c.depth != 0.0)
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
    let newton = |p: project::FastProjection, tolerance: f64| ProjectionOutcome {
        iterations: p.iterations,
        converged: p.converged,
        failed: p.failed(tolerance).then_some(p),
    };
    let no_tolerance = |iterations| ProjectionOutcome {
        iterations,
        converged: true,
        failed: None,
    };
    match params.projection {
        Projection::None => no_tolerance(0),
        Projection::Fast {
            tolerance,
            max_iterations,
        } => newton(
            project::project_fast(
                w.s.pos,
                inv_mass,
                rest_len,
                tolerance,
                max_iterations,
                w.contact,
                filtered,
            ),
            tolerance,
        ),
        Projection::Shake {
            tolerance,
            max_iterations,
        } => newton(
            project::project_shake(
                w.s.pos,
                w.pos_start,
                inv_mass,
                rest_len,
                tolerance,
                max_iterations,
                w.contact,
                filtered,
            ),
            tolerance,
        ),
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

/// One substep of length `h` from time `t`, in the order of the GPU's
/// fused kernels (shaders/substep.wgsl): every rod's `substep_start`
/// (forces, \[save_start\] when the projection is SHAKE, integrate, §7.2)
/// in parallel, then \[grid_clear, grid_splat, grid_velocity, grid_blend\]
/// over all rods when they interact (the only stages that need other rods),
/// then every rod's `substep_finish` (project, §8.1; \[contact, filtered
/// project, contact\] when there are colliders; project_velocity, frames
/// and twist). The GPU's staged schedule (`GpuSimulator::encode_substep`)
/// runs the same stages over every rod one after another; rods do not
/// couple within a half, so both orders give the same result. The GPU's
/// fused halves also take in the grid's per-vertex stages, each on its own
/// vertices: `grid_splat` ends `substep_start` and `grid_blend` begins
/// `substep_finish` (integer sums, the same in any order; a blend reads
/// only its own vertex and the fields), with `grid_extent` (in
/// `grid_clear`'s place) and `grid_velocity_box` between the halves.
pub fn substep(
    rods: &RodSet,
    params: &SimParams,
    t: f64,
    h: f64,
    state: &mut State,
    work: &mut Workspace,
) -> SubstepReport {
    let contact_between_rods = rods.rod_contact.is_active();
    if contact_between_rods {
        work.rod_contact_start.clone_from(&state.pos);
    }
    let newton = for_each_rod(rods, state, work, |r, w| {
        substep_start(rods, params, r, t, h, w)
    });
    let mut grid_outside = 0;
    if rods.interaction.is_active() {
        match interact(rods, t + h, h, state, work) {
            Ok(outside) => grid_outside = outside,
            Err(overflow) => {
                return SubstepReport {
                    rods: vec![RodReport::default(); rods.rod_count()],
                    grid_outside,
                    grid_overflow: Some(overflow),
                    rod_contacts: 0,
                    rod_contact_unresolved: None,
                };
            }
        }
    }
    let poses = collider_poses(rods, t, h);
    // Statics returns the equilibrium of the rod as its stretching
    // stiffness makes it (edges stretched by their tension over E·A, as a
    // real rod's): projecting it to exact lengths would move it off the
    // equilibrium its residual reports.
    let finish = if params.integrator == Integrator::Static {
        SimParams {
            projection: Projection::None,
            ..*params
        }
    } else {
        *params
    };
    let (pushed, rod_contacts, rod_contact_unresolved) = if contact_between_rods {
        between_rods(rods, &finish, state, work)
    } else {
        (Vec::new(), 0, None)
    };
    let mut reports = for_each_rod(rods, state, work, |r, w| {
        substep_finish(rods, &finish, &poses, r, t, h, w)
    });
    rod_contact::inelastic(&pushed, &state.pos, &mut state.vel, &rods.inv_mass);
    for (report, newton) in reports.iter_mut().zip(newton) {
        report.newton = newton;
    }
    if params.integrator == Integrator::Static {
        // An equilibrium is at rest (the projection and contact moved it
        // by their corrections, not in time).
        state.vel.fill(DVec3::ZERO);
    }
    SubstepReport {
        rods: reports,
        grid_outside,
        grid_overflow: None,
        rod_contacts,
        rod_contact_unresolved,
    }
}

/// Rod–rod contact between the halves of a substep (`cpu::rod_contact`):
/// the contacts from the substep's start to the integrated positions,
/// `ITERATIONS` sweeps over them (the first with friction), then up to
/// `ROUNDS` of each rod's projection with the contacts' vertices kept in
/// their tangent planes (plain where that cannot meet the lengths: a taut
/// rod pushed sideways), detection anew from the substep's start, and one
/// sweep, until a projection leaves no pair deeper than
/// `TOLERANCE · reach`, so that the lengths and the contacts hold together
/// when the second half begins. Returns the contacts that a sweep pushed
/// (for `rod_contact::inelastic`), the most contacts a detection found,
/// and, where the rounds ran out with a pair still deeper than
/// `rod_contact::UNRESOLVED` of its reach, that pair.
fn between_rods(
    rods: &RodSet,
    params: &SimParams,
    state: &mut State,
    work: &mut Workspace,
) -> (
    Vec<rod_contact::Touch>,
    usize,
    Option<rod_contact::Unresolved>,
) {
    let start = std::mem::take(&mut work.rod_contact_start);
    let mut touches = rod_contact::detect(rods, &start, &state.pos);
    let mut most = touches.len();
    let mut pushed: Vec<rod_contact::Touch> = Vec::new();
    let mut unresolved = None;
    if !touches.is_empty() {
        let c = &rods.rod_contact;
        let friction = rod_contact::Friction {
            kinetic: c.friction,
            static_: c.static_friction,
            start: &start,
        };
        let inv_mass = &rods.inv_mass;
        rod_contact::sweep(&mut touches, &mut state.pos, inv_mass, Some(friction));
        for _ in 1..rod_contact::ITERATIONS {
            rod_contact::sweep(&mut touches, &mut state.pos, inv_mass, None);
        }
        for round in 0..rod_contact::ROUNDS {
            pushed.extend(touches.iter().filter(|t| t.pushed));
            let marked = rod_contact::mark(&touches, &state.pos, inv_mass, &mut work.contact);
            for_each_rod(rods, state, work, |r, w| {
                if !project_rod(rods, params, r, w, 1).converged {
                    project_rod(rods, params, r, w, 0);
                }
            });
            rod_contact::unmark(&marked, &mut work.contact);
            // Detected anew over the whole substep's path, this projection
            // included: a projection that carried an edge through another
            // is caught on the side it came from.
            touches = rod_contact::detect(rods, &start, &state.pos);
            most = most.max(touches.len());
            if round + 1 == rod_contact::ROUNDS {
                // What the last projection left, before its sweep.
                unresolved = rod_contact::unresolved(rods, &touches, &state.pos);
            }
            let deepest = rod_contact::sweep(&mut touches, &mut state.pos, inv_mass, None);
            let reach = touches
                .iter()
                .map(|t| t.reach)
                .fold(f64::INFINITY, f64::min);
            if deepest <= rod_contact::TOLERANCE * reach {
                unresolved = None;
                break;
            }
        }
        pushed.extend(touches.iter().filter(|t| t.pushed));
        pushed.sort_by_key(|t| t.v);
        pushed.dedup_by_key(|t| t.v);
    }
    work.rod_contact_start = start;
    (pushed, most, unresolved)
}

/// The first half of rod `r`'s substep (the GPU's `substep_start`):
/// forces, save_start (SHAKE projects along the constraint gradients of x₀),
/// integrate, and the unconstrained positions kept for project_velocity.
///
/// With an implicit integrator (`params.integrator`) Newton takes the
/// place of forces and integrate (`implicit_step`), and its report comes
/// back.
pub fn substep_start(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    t: f64,
    h: f64,
    w: &mut RodWork,
) -> Option<implicit::NewtonReport> {
    if params.integrator.is_implicit() {
        // save_start, as below: SHAKE projects along x₀'s gradients.
        if matches!(params.projection, Projection::Shake { .. }) {
            w.pos_start.copy_from_slice(w.s.pos);
        }
        let report = implicit_step(rods, params, r, t, h, w);
        w.pos_unc.copy_from_slice(w.s.pos);
        return Some(report);
    }
    // forces
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
    // save_start
    if matches!(params.projection, Projection::Shake { .. }) {
        w.pos_start.copy_from_slice(w.s.pos);
    }
    // integrate
    integrate(rods, r, t + h, h, w.force, w.s.pos, w.s.vel);
    w.pos_unc.copy_from_slice(w.s.pos);
    None
}

/// Rod `r`'s implicit step (`cpu::implicit`) from t to t + h: Newton on its
/// positions and twist angles, then its positions and velocities at t + h
/// (statics: the equilibrium, at rest), clamped vertices where their
/// anchors are then, and in `w.force` the net force on each vertex that the
/// step's velocity change stands for (`m (x − x̂)/h²`; zero for statics).
pub fn implicit_step(
    rods: &RodSet,
    params: &SimParams,
    r: usize,
    t: f64,
    h: f64,
    w: &mut RodWork,
) -> implicit::NewtonReport {
    let integrator = params.integrator;
    let (h_solve, t_solve) = match integrator {
        Integrator::ImplicitMidpoint => (0.5 * h, t + 0.5 * h),
        _ => (h, t + h),
    };
    let rest = rod_rest(rods, r);
    // On the Bishop frame every reference twist is zero.
    let zero_twist = vec![0.0; w.s.pos.len()];
    let frames = implicit::StartFrames {
        tangent: w.s.tangent,
        ref_u: w.s.ref_u,
        ref_twist: &zero_twist,
    };
    let inertia = implicit::inertia_of(
        rods,
        rest,
        r,
        integrator,
        params.gravity,
        &params.wind,
        t_solve,
        h_solve,
        w.s.pos,
        w.s.vel,
    );
    let mut q = implicit::pack(&inertia.predicted, w.s.theta);
    let mut fixed = vec![false; q.len()];
    implicit::held_unknowns(rods, r, t_solve, frames, &mut q, &mut fixed);
    implicit::hold_common_turn(rest, &mut fixed);
    implicit::initial_guess(rest, &mut q, &fixed);
    let problem = implicit::Problem {
        rest,
        frames,
        inertia: &inertia,
        fixed: &fixed,
    };
    let report = implicit::solve(&problem, &mut q, params.newton);
    let start: Vec<DVec3> = w.s.pos.to_vec();
    for (i, &x0) in start.iter().enumerate() {
        let v0 = w.s.vel[i];
        let y = implicit::vertex(&q, i);
        w.force[i] = (y - inertia.predicted[i]) * inertia.inertia[i];
        let (x, v) = match integrator {
            Integrator::ImplicitMidpoint => {
                let x = 2.0 * y - x0;
                (x, 2.0 * (x - x0) / h - v0)
            }
            Integrator::Static => (y, DVec3::ZERO),
            _ => (y, (y - x0) / h),
        };
        w.s.pos[i] = x;
        w.s.vel[i] = v;
    }
    if integrator == Integrator::ImplicitMidpoint {
        // The anchors' poses at t + h, not the midpoint's extrapolated.
        for (i, x) in anchored_positions(rods, r, t + h, w.s.pos.len()) {
            w.s.vel[i] = (x - start[i]) / h;
            w.s.pos[i] = x;
        }
    }
    report
}

/// Most rounds of projection and contact after an implicit step's first
/// (`substep_finish`); with them the hair of `scenes/hair.toml` at one
/// step of 1/60 s a frame keeps its strain near 1e-6 (tests/implicit.rs).
pub const IMPLICIT_CONTACT_ROUNDS: u32 = 8;

/// The second half of rod `r`'s substep (the GPU's `substep_finish`):
/// project; with colliders contact (vertices, even edges, odd edges), the
/// projection filtered by the contacts, contact again where it can change
/// something; project_velocity
/// (with the chatter count), frames, twist, and the per-rod check.
/// `poses`: the colliders' anchors at t and t + h (`collider_poses`).
pub fn substep_finish(
    rods: &RodSet,
    params: &SimParams,
    poses: &[ColliderPoses],
    r: usize,
    t: f64,
    h: f64,
    w: &mut RodWork,
) -> RodReport {
    let mut report = RodReport::default();
    let (radius, inv_mass) = (rods.material[r].radius, &rods.inv_mass[rods.vertices(r)]);
    // The two phases: in each the projection (phase 1 filtered by the
    // contacts), then with colliders contact's pass of that phase; the
    // walked kernel's loop (shaders/substep.wgsl `substep_finish_walk`,
    // which has no rounds past these two: the kernels step the symplectic
    // integrator only).
    // After an implicit step, which moves a vertex by a whole frame's
    // motion, the second contact pass can push neighbouring vertices apart
    // by far more than the strain tolerance, and where contacts hold both
    // ends of an edge the filtered projection cannot pull them together:
    // further rounds alternate the plain projection and phase 1's contact
    // (alternating projections onto the lengths and out of the colliders),
    // up to `IMPLICIT_CONTACT_ROUNDS` after the first, until a projection
    // has nothing left to do (then contact has nothing either). The last
    // round's projection is the one that can fail the run then. The plain
    // projection may move a vertex that static friction held: an edge
    // whose two ends it holds could not be shortened otherwise.
    let phases = if params.integrator.is_implicit() {
        IMPLICIT_CONTACT_ROUNDS + 1
    } else {
        2
    };
    for round in 0..phases {
        let phase = round.min(1);
        // project (the rounds past the second unfiltered: alternating
        // projections onto the lengths and out of the colliders)
        let p = project_rod(rods, params, r, w, if round > 1 { 0 } else { phase });
        report.projection_iterations += p.iterations;
        if round > 1 {
            report.unconverged = p.failed;
            report.projection_converged &= p.converged;
        } else if phase == 0 {
            report.projection_converged = p.converged;
            // A filtered projection may leave strain where contacts hold
            // vertices along an edge (or friction holds both ends of a
            // straight stretch); the next substep's plain one resolves it,
            // so only the plain projection can fail the run.
            report.unconverged = p.failed;
        } else {
            report.projection_converged &= p.converged;
        }
        if rods.colliders.is_empty() {
            break;
        }
        // The second contact pass only where it can change something: a
        // rod that phase 0 left out of contact (so moved nowhere) and the
        // filtered projection did not move is where phase 0 found nothing,
        // so the pass would find nothing and change nothing. Exact; the
        // GPU's substeps do the same (shaders/substep.wgsl).
        if phase == 1 && p.iterations == 0 && !rod_in_contact(w.contact) {
            break;
        }
        if round > 1 && p.iterations == 0 {
            break;
        }
        // contact, contact_edges_even, contact_edges_odd
        let found = contact::contact(
            &rods.colliders,
            poses,
            radius,
            inv_mass,
            phase,
            h,
            w.s.pos,
            w.pos_unc,
            w.s.vel,
            w.contact,
        );
        for parity in [0, 1] {
            contact::contact_edges(
                &rods.colliders,
                poses,
                radius,
                inv_mass,
                phase,
                h,
                parity,
                w.s.pos,
                w.pos_unc,
                w.s.vel,
                w.contact,
            );
        }
        report.tunnel = report.tunnel.or(found.tunnel);
    }
    // project_velocity (with the chatter count)
    report.chatter = project::project_velocity(
        w.s.vel,
        w.s.pos,
        w.pos_unc,
        w.contact,
        h,
        project::Chatter {
            force: w.force,
            inv_mass: &rods.inv_mass[rods.vertices(r)],
            rest_len: &rods.rest_len[rods.edges(r)],
            count: w.chatter,
        },
    );
    // frames, twist
    if params.integrator.is_implicit() {
        // Velocities that reverse from one substep to the next are the
        // explicit integrator's chatter; an implicit step has no such mode.
        report.chatter = None;
    }
    report.twist_iterations = update_material_frame(rods, params, r, t + h, &mut w.s);
    report.bad = check_rod(rods, params, r, w.s.pos, w.s.vel, w.s.theta);
    report
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
    let chatter = split_mut(&mut work.chatter, vo);
    let works: Vec<RodWork> = views
        .into_iter()
        .zip(force)
        .zip(pos_unc)
        .zip(pos_start)
        .zip(contact)
        .zip(chatter)
        .map(
            |(((((s, force), pos_unc), pos_start), contact), chatter)| RodWork {
                s,
                force,
                pos_unc,
                pos_start,
                contact,
                chatter,
            },
        )
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
