//! Inextensibility by manifold projection (§8): after the unconstrained step,
//! move the vertices back to edge lengths `|eʲ| = |ēʲ|`.
//!
//! * `project_jacobi`: one Jacobi iteration as the GPU kernel of the same name
//!   runs it, one invocation per vertex, reading `src` and writing `dst`.
//! * `project_fast`: the fast projection of Goldenthal et al. 2007, the gold
//!   reference, iterated to a stated strain tolerance.
//! * `project_shake`: the same Newton iteration moving along the constraint
//!   gradients of the start of the substep (SHAKE), which keeps energy and
//!   momentum (docs/PROJECTION.md).
//! * `project_velocity`: the velocity update after any of them.

use glam::DVec3;

use super::contact::Contact;
use super::tridiagonal::RowOrder;
use crate::model::stability::{CHATTER_FRACTION, CHATTER_SUBSTEPS, reverses};

/// Largest strain `||eʲ|/|ēʲ| − 1|` over the edges `edges` of one rod.
fn max_strain_of(pos: &[DVec3], rest_len: &[f64], edges: &[usize]) -> f64 {
    edges
        .iter()
        .map(|&j| ((pos[j + 1] - pos[j]).length() / rest_len[j] - 1.0).abs())
        .fold(0.0, f64::max)
}

/// Largest edge strain `||eʲ|/|ēʲ| − 1|` of one rod.
pub fn max_strain(pos: &[DVec3], rest_len: &[f64]) -> f64 {
    rest_len
        .iter()
        .enumerate()
        .map(|(j, l)| ((pos[j + 1] - pos[j]).length() / l - 1.0).abs())
        .fold(0.0, f64::max)
}

/// Inverse mass of vertex `i` applied to `v`. In a filtered projection
/// (after contact has recorded normals) a vertex in contact may move only in
/// its contact's tangent plane: `W = w (I − n nᵀ)` (the filtered mass of
/// Baraff and Witkin 1998), so the projection cannot push it back in; one that
/// static friction holds does not move (`W = 0`), so the projection cannot
/// undo the friction. (The Newton projections weight a stuck vertex by edge
/// instead, `ProjectionSystem::we`; the Jacobi one uses this.)
#[inline]
pub fn apply_inv_mass(w: f64, c: Contact, filtered: bool, v: DVec3) -> DVec3 {
    if filtered && c.depth > 0.0 {
        if c.stuck {
            DVec3::ZERO
        } else {
            (v - c.normal * c.normal.dot(v)) * w
        }
    } else {
        v * w
    }
}

/// Corrections that edge `(a, b)` asks of its endpoints: the length error
/// split between them by (filtered) inverse mass along the edge direction.
/// The GPU takes the length error as (|e|² − l²)/(|e| + l), |e|² − l² split
/// at its position quanta (shaders/common.wgsl `squared_length_error`):
/// the same value in exact arithmetic, without f32's ε|e| jitter.
#[inline]
fn edge_correction(xa: DVec3, xb: DVec3, wa: DVec3Map, wb: DVec3Map, rest: f64) -> (DVec3, DVec3) {
    let d = xb - xa;
    let len = d.length();
    let dir = d / len;
    let (ma, mb) = (wa(dir), wb(dir));
    let den = dir.dot(ma + mb);
    if den <= 0.0 {
        return (DVec3::ZERO, DVec3::ZERO);
    }
    let lambda = (len - rest) / den;
    (ma * lambda, -mb * lambda)
}

/// A vertex's (filtered) inverse mass as a map on vectors.
type DVec3Map<'a> = &'a dyn Fn(DVec3) -> DVec3;

/// One Jacobi iteration for vertex `i` of a rod: the relaxed sum of the
/// corrections its two edges ask for, computed from `src` only.
#[inline]
#[allow(clippy::too_many_arguments)] // the WGSL twin's inputs
pub fn project_jacobi_vertex(
    i: usize,
    src: &[DVec3],
    inv_mass: &[f64],
    rest_len: &[f64],
    relaxation: f64,
    contact: &[Contact],
    filtered: bool,
) -> DVec3 {
    let n = src.len();
    let w = |k: usize| move |v: DVec3| apply_inv_mass(inv_mass[k], contact[k], filtered, v);
    let mut delta = DVec3::ZERO;
    if i > 0 {
        let (_, db) = edge_correction(src[i - 1], src[i], &w(i - 1), &w(i), rest_len[i - 1]);
        delta += db;
    }
    if i + 1 < n {
        let (da, _) = edge_correction(src[i], src[i + 1], &w(i), &w(i + 1), rest_len[i]);
        delta += da;
    }
    src[i] + delta * relaxation
}

/// One Jacobi iteration over a rod: `dst[i]` from `src` for every vertex.
pub fn project_jacobi(
    src: &[DVec3],
    dst: &mut [DVec3],
    inv_mass: &[f64],
    rest_len: &[f64],
    relaxation: f64,
    contact: &[Contact],
    filtered: bool,
) {
    for (i, d) in dst.iter_mut().enumerate() {
        *d = project_jacobi_vertex(i, src, inv_mass, rest_len, relaxation, contact, filtered);
    }
}

/// What `project_velocity` needs for the chatter count of one rod.
pub struct Chatter<'a> {
    /// The substep's forces, to recover the velocity before it.
    pub force: &'a [DVec3],
    /// Inverse masses (1/kg).
    pub inv_mass: &'a [f64],
    /// Rest edge lengths (m).
    pub rest_len: &'a [f64],
    /// Per vertex: consecutive substeps its velocity reversed.
    pub count: &'a mut [u32],
}

/// Length vertex `i` stands for in the chatter test: the mean of its
/// adjacent rest edges (half its `l̄ᵢ` inside a rod, the one edge at an end).
pub fn chatter_length(rest_len: &[f64], i: usize) -> f64 {
    if i == 0 {
        rest_len[0]
    } else if i == rest_len.len() {
        rest_len[i - 1]
    } else {
        0.5 * (rest_len[i - 1] + rest_len[i])
    }
}

/// Kernel `project_velocity`: `v ← v + (x_projected − x_unconstrained)/h`;
/// then, for a vertex in contact, the part of its velocity relative to the
/// collider's surface that points out of the surface is removed (inelastic
/// contact, restitution 0): the push-out and the step's chord across a
/// curved surface would otherwise leave it moving outward, faster than it
/// came in, and contact would add energy.
///
/// It also counts, per free vertex, the consecutive substeps in which the
/// forces reversed its velocity: the velocity before the substep
/// (`v − F h/m`) and the one after point apart (`stability::reverses`), and
/// so do it and the unconstrained `v` (the elastic force did it, not the
/// projection holding the vertex against a steady force, nor a push of
/// contact or interaction). That is the signature of the explicit mode's
/// chatter. A count that reaches `stability::CHATTER_SUBSTEPS`
/// stays (the GPU keeps it in its velocity buffer, `chatter_of`, for the host to find); returns the
/// first such vertex. Without projection, contact or interaction nothing
/// moves here and only the count runs.
pub fn project_velocity(
    vel: &mut [DVec3],
    pos: &[DVec3],
    unconstrained: &[DVec3],
    contact: &[Contact],
    h: f64,
    chatter: Chatter,
) -> Option<usize> {
    let mut found = None;
    for i in 0..vel.len() {
        let vel_unc = vel[i];
        let before = vel[i] - chatter.force[i] * (h * chatter.inv_mass[i]);
        let c = contact[i];
        let mut v = vel[i] + (pos[i] - unconstrained[i]) / h;
        if c.depth > 0.0 {
            let out = (v - c.surface_velocity).dot(c.normal);
            if out > 0.0 {
                v -= c.normal * out;
            }
        }
        vel[i] = v;
        let count = &mut chatter.count[i];
        let threshold = CHATTER_FRACTION * chatter_length(chatter.rest_len, i);
        if *count < CHATTER_SUBSTEPS {
            let free = chatter.inv_mass[i] > 0.0;
            let forced = before.dot(vel_unc) < 0.0;
            *count = if free && forced && reverses(before, v, h, threshold) {
                *count + 1
            } else {
                count.saturating_sub(2)
            };
        }
        if *count >= CHATTER_SUBSTEPS && found.is_none() {
            found = Some(i);
        }
    }
    found
}

/// Outcome of a Newton projection (`project_fast`, `project_shake`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FastProjection {
    /// Newton steps taken.
    pub iterations: u32,
    /// Largest strain of an edge the projection can move (one with a free vertex).
    pub max_strain: f64,
    /// The Newton system was singular (a zero pivot), so the projection
    /// stopped where it was.
    pub singular: bool,
    /// Whether `max_strain` reached the tolerance; false when `max_iterations`
    /// ran out or the linear system had a non-positive pivot first.
    pub converged: bool,
}

/// A fast projection that leaves an edge strained by more than this (or its
/// tolerance, if larger) stops the run: it could not meet the constraints.
/// Below it, a projection that ran out of iterations (as in contact, where
/// vertices held along an edge cannot fix its length) is reported only by
/// the diagnostics' `max_strain` and `projection_iterations`.
pub const PROJECTION_FAIL_STRAIN: f64 = 1e-2;

impl FastProjection {
    /// Whether the projection failed to meet the constraints: an edge is
    /// still strained by more than `max(tolerance, PROJECTION_FAIL_STRAIN)`.
    pub fn failed(&self, tolerance: f64) -> bool {
        self.max_strain > tolerance.max(PROJECTION_FAIL_STRAIN)
    }
}

/// Fast projection (Goldenthal et al. 2007, as used in §8.1) of one rod.
///
/// Constraints `Cⱼ = |eʲ|² − |ēʲ|²`; each iteration solves
/// `(∇C M⁻¹ ∇Cᵀ) δλ = C` (tridiagonal along a rod) and sets
/// `x ← x − M⁻¹ ∇Cᵀ δλ`, until every strain is below `tolerance`, with the
/// gradients `∇C` of the current iterate.
/// Edges whose two vertices are both driven by anchors are rigid already and
/// are left out of the system.
/// In a filtered projection, vertices in contact move in their tangent plane
/// only (`apply_inv_mass`); an edge that then cannot change its length (both
/// ends held along it) gets the row δλ = 0.
///
/// Moving along the iterate's own gradients makes the correction of each
/// step the closest point on the manifold, not a force of the start of the
/// step: the velocity update then dissipates energy in proportion to h and
/// does not conserve angular momentum (docs/PROJECTION.md).
///
/// WGSL twin: `project_fast_rod` (shaders/project.wgsl, this loop, one
/// invocation per rod); `project_shake_rod` likewise.
#[allow(clippy::too_many_arguments)] // the WGSL twin's inputs
pub fn project_fast(
    pos: &mut [DVec3],
    inv_mass: &[f64],
    rest_len: &[f64],
    tolerance: f64,
    max_iterations: u32,
    contact: &[Contact],
    filtered: bool,
) -> FastProjection {
    let c = contact;
    newton_projection(
        pos,
        None,
        inv_mass,
        rest_len,
        tolerance,
        max_iterations,
        c,
        filtered,
    )
}

/// SHAKE projection of one rod: the constraint forces of the discrete
/// Euler–Lagrange equations (Ryckaert, Ciccotti and Berendsen 1977; the
/// "implicit constraint direction" of Goldenthal et al. 2007).
///
/// The symplectic Euler step with constraint forces at the start of the
/// substep, `x₀ = start`, is
///
/// ```text
/// v₁ = v₀ + h M⁻¹ (F(x₀) − ∇C(x₀)ᵀ μ),   x₁ = x₀ + h v₁,   C(x₁) = 0,
/// ```
///
/// i.e. with the unconstrained `x̃ = x₀ + h (v₀ + h M⁻¹ F(x₀))` (the
/// positions `integrate` leaves) and λ = h² μ:
///
/// ```text
/// x₁ = x̃ − M⁻¹ ∇C(x₀)ᵀ λ,   C(x₁) = 0,   v₁ = (x₁ − x₀)/h.
/// ```
///
/// It is the discrete Euler–Lagrange equation of the discrete Lagrangian
/// `L(x₀, x₁) = h (½ |(x₁ − x₀)/h|²_M − E(x₀))` restricted to `C = 0`, so it
/// is symplectic on the constraint manifold (its energy error stays an O(h)
/// oscillation, without drift), and `L` is invariant under translations and
/// rotations (so are `E` and `C`), so `Σ mᵢ vᵢ` and `Σ mᵢ xᵢ × vᵢ` of a free
/// rod are conserved exactly (discrete Noether). Directly: the correction of
/// edge j moves its ends by `∓wᵢ 2 e₀ʲ λⱼ`, so `Σ mᵢ Δxᵢ = 0` and
/// `Σ mᵢ x₀ᵢ × Δxᵢ = −2λⱼ e₀ʲ × e₀ʲ = 0`. Fast projection's
/// correction along the iterate's edges `eʲ` leaves `2λⱼ e₀ʲ × eʲ ≠ 0`.
///
/// Newton on `λ`: with `x(λ)` above, `∂C/∂λ = −∇C(x) M⁻¹ ∇C(x₀)ᵀ`, so each
/// iteration solves `(∇C(x) M⁻¹ ∇C(x₀)ᵀ) δλ = C(x)` and sets
/// `x ← x − M⁻¹ ∇C(x₀)ᵀ δλ`. The matrix is tridiagonal along the rod but not
/// symmetric: with `eʲ` the iterate's edges and `dʲ = e₀ʲ`,
/// `Aⱼⱼ = 4 eʲ·(Wⱼ + Wⱼ₊₁) dʲ`, `Aⱼ,ⱼ₊₁ = −4 eʲ·Wⱼ₊₁ dʲ⁺¹`,
/// `Aⱼ₊₁,ⱼ = −4 eʲ⁺¹·Wⱼ₊₁ dʲ` (`ProjectionSystem::eliminate_rows`). It is Newton's
/// method, so convergence is quadratic near the solution, as fast
/// projection's. Anchored and filtered vertices are treated as in
/// `project_fast` (`W = 0` for an anchored vertex: momentum is then not
/// conserved, the anchor exchanges it with the rod).
///
/// The velocity update stays `project_velocity`: `ṽ + (x₁ − x̃)/h = (x₁ − x₀)/h`.
/// `start` holds the rod's positions before `integrate` (`Workspace::pos_start`).
#[allow(clippy::too_many_arguments)] // the WGSL twin's inputs
pub fn project_shake(
    pos: &mut [DVec3],
    start: &[DVec3],
    inv_mass: &[f64],
    rest_len: &[f64],
    tolerance: f64,
    max_iterations: u32,
    contact: &[Contact],
    filtered: bool,
) -> FastProjection {
    let (s, c) = (Some(start), contact);
    newton_projection(
        pos,
        s,
        inv_mass,
        rest_len,
        tolerance,
        max_iterations,
        c,
        filtered,
    )
}

/// Newton's method on the edge-length constraints of one rod, moving the
/// vertices along the constraint gradients of `start` (SHAKE) or, when
/// `start` is `None`, of the current iterate (fast projection). Each
/// iteration is two walks over the rod (its WGSL twin,
/// shaders/project.wgsl `newton_projection_from`, makes them one after the
/// first iteration, below):
/// `eliminate_rows` builds the tridiagonal system and eliminates it as it
/// goes, then `substitute_and_move` solves it back the other way and moves
/// the vertices. The first iteration takes the rows tip first, and each
/// after it in the order the substitution before it walked (`RowOrder`), so
/// that on the GPU each iteration's moving walk also builds the next one's
/// rows behind its stores: one walk an iteration after the first, not two.
#[allow(clippy::too_many_arguments)]
fn newton_projection(
    pos: &mut [DVec3],
    start: Option<&[DVec3]>,
    inv_mass: &[f64],
    rest_len: &[f64],
    tolerance: f64,
    max_iterations: u32,
    contact: &[Contact],
    filtered: bool,
) -> FastProjection {
    let ne = rest_len.len();
    // Indices of the edges that can move.
    let active: Vec<usize> = (0..ne)
        .filter(|&j| inv_mass[j] + inv_mass[j + 1] > 0.0)
        .collect();
    // The direction of each edge's correction: its start edge (SHAKE).
    let start_edges: Option<Vec<DVec3>> = start.map(|s| (0..ne).map(|j| s[j + 1] - s[j]).collect());
    let mut rows = vec![EliminatedRow::default(); ne];
    let mut out = FastProjection {
        iterations: 0,
        max_strain: max_strain_of(pos, rest_len, &active),
        singular: false,
        converged: false,
    };
    let system = ProjectionSystem {
        inv_mass,
        rest_len,
        contact,
        filtered,
        per_edge: true,
    };
    // The first iteration's rows tip first: the walked GPU form builds them
    // in its start sweep, which goes tip to root.
    let mut order = RowOrder::TipFirst;
    while out.max_strain > tolerance && out.iterations < max_iterations && !active.is_empty() {
        if !system.eliminate_rows(pos, start_edges.as_deref(), &mut rows, order) {
            out.singular = true;
            break;
        }
        system.substitute_and_move(pos, &rows, order);
        order = order.flipped();
        out.iterations += 1;
        out.max_strain = max_strain_of(pos, rest_len, &active);
    }
    out.converged = out.max_strain <= tolerance;
    out
}

/// Row j of a Newton iteration's system once eliminated
/// (`ProjectionSystem::eliminate_rows`): what the way back needs of it.
#[derive(Clone, Copy, Debug, Default)]
struct EliminatedRow {
    /// The direction edge j's correction moves its ends along: the iterate's
    /// edge (fast projection) or the start's (SHAKE).
    dir: DVec3,
    /// The reduced right-hand side.
    rhs: f64,
    /// The elimination factor of the row eliminated before it, k = j + 1
    /// (tip first) or j − 1 (root first): `Aₖ,ⱼ / pivotₖ` (0 for the first
    /// row eliminated), kept with row j as the GPU stores it.
    factor: f64,
}

/// What a projection's system is made of besides the positions.
struct ProjectionSystem<'a> {
    inv_mass: &'a [f64],
    rest_len: &'a [f64],
    contact: &'a [Contact],
    filtered: bool,
    /// Stuck vertices weighted by edge (`we`): always in the projections;
    /// false only in a test that shows what per-vertex weights do.
    per_edge: bool,
}

impl ProjectionSystem<'_> {
    fn w(&self, k: usize, v: DVec3) -> DVec3 {
        apply_inv_mass(self.inv_mass[k], self.contact[k], self.filtered, v)
    }

    fn held(&self, k: usize) -> bool {
        self.inv_mass[k] == 0.0
            || (self.filtered && self.contact[k].depth > 0.0 && self.contact[k].stuck)
    }

    /// Vertex k's weight as edge e uses it. A stuck vertex (static friction
    /// held it in phase 0) moves, in its tangent plane, only by the
    /// corrections of its edges to other held vertices (stuck or anchored),
    /// never by an edge to a free one. Contact moves vertices one by one, so
    /// it strains edges between stuck vertices; held entirely (per-vertex
    /// `W = 0`) they kept that strain, and on the bench's hair on the moving
    /// head every filtered projection ran its 50 iterations from t ≈ 0.9 s
    /// with strains up to 3e-3 (CPU) and 4.6e-3 (H200). Sliding freely, the
    /// hanging part's tension pulled stuck runs through their edges to free
    /// vertices, and a rope over a capsule crept against static friction.
    /// By edge, neither: stuck–stuck edges converge, and tension reaches a
    /// stuck run only through phase 0's friction (tests/contact_friction.rs,
    /// the capstan equation). The Newton system stays tridiagonal; row j's
    /// couplings take the shared vertex's weight as the other edge uses it,
    /// so it is not symmetric even for the fast projection. GPU twins:
    /// `edge_inv_mass_applied`, `edge_apply_inv_mass` (shaders/project.wgsl).
    fn we(&self, e: usize, k: usize, v: DVec3) -> DVec3 {
        let c = self.contact[k];
        if self.per_edge && self.filtered && c.depth > 0.0 && c.stuck {
            let other = if k == e { e + 1 } else { e };
            if self.held(other) {
                return (v - c.normal * c.normal.dot(v)) * self.inv_mass[k];
            }
            return DVec3::ZERO;
        }
        self.w(k, v)
    }

    /// The system `(∇C(x) M⁻¹ ∇C(y)ᵀ) δλ = C(x)` of one Newton iteration,
    /// y the iterate (fast) or the start (SHAKE), built and eliminated in
    /// one walk in `order`: row j is `Aⱼⱼ = 4 eʲ·(Wⱼ + Wⱼ₊₁) dʲ`,
    /// `Cⱼ = |eʲ|² − |ēʲ|²`, coupled to row j + 1 by
    /// `Aⱼ,ⱼ₊₁ = −4 eʲ·Wⱼ₊₁ dʲ⁺¹` and `Aⱼ₊₁,ⱼ = −4 eʲ⁺¹·Wⱼ₊₁ dʲ` (equal for fast
    /// projection with per-vertex weights: W is then symmetric), and
    /// eliminated as soon as it is built: the forward sweep of
    /// `tridiagonal::solve_tridiagonal` on the rows taken in `order`, operation for
    /// operation. Tip first for a projection's first iteration, because the
    /// walked GPU form builds and eliminates them inside its start sweep,
    /// which finishes the vertices tip to root (shaders/substep.wgsl
    /// `substep_start_walk`); then in the order the substitution before
    /// walked, because the GPU builds them inside that walk
    /// (shaders/project.wgsl `newton_projection_from`). An edge with both
    /// ends anchored, or one that filtered vertices hold at its length (a
    /// diagonal ≤ 1e-12 of its scale), gets the row δλ = 0 and no coupling,
    /// which splits the system into independent runs of edges. Returns
    /// false at a non-positive pivot.
    fn eliminate_rows(
        &self,
        pos: &[DVec3],
        start_edges: Option<&[DVec3]>,
        rows: &mut [EliminatedRow],
        order: RowOrder,
    ) -> bool {
        let ne = rows.len();
        let (mut pivot, mut rhs_before) = (0.0, 0.0);
        let (mut e_before, mut dir_before, mut row_before) = (DVec3::ZERO, DVec3::ZERO, false);
        for k in 0..ne {
            // Row j; row b, eliminated before it, shares vertex s with it.
            let (j, b, s) = match order {
                RowOrder::TipFirst => (ne - 1 - k, ne - k, ne - k),
                RowOrder::RootFirst => (k, k.wrapping_sub(1), k),
            };
            let e = pos[j + 1] - pos[j];
            let dir = start_edges.map_or(e, |s| s[j]);
            let w = self.inv_mass[j] + self.inv_mass[j + 1];
            let (wa_dir, wb_dir) = (self.we(j, j, dir), self.we(j, j + 1, dir));
            let diag_j = 4.0 * e.dot(wa_dir + wb_dir);
            let scale = 4.0 * e.length() * dir.length() * w;
            // Not a row only where the diagonal is at most 1e-12 of its
            // scale: a NaN stays a row, so its pivot reports the system
            // singular.
            let row = w > 0.0
                && !matches!(
                    diag_j.partial_cmp(&(1e-12 * scale)),
                    Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
                );
            let (diag, mut rhs) = if row {
                // The GPU splits this at its position quanta
                // (shaders/common.wgsl `squared_length_error`); the same value.
                (
                    diag_j,
                    e.length_squared() - self.rest_len[j] * self.rest_len[j],
                )
            } else {
                (1.0, 0.0)
            };
            let mut factor = 0.0;
            if k > 0 {
                // `lower`: Aᵦ,ⱼ, by which row b (reduced) is eliminated into
                // row j; `upper`: Aⱼ,ᵦ. Each takes the shared vertex's
                // weight as the other row's edge uses it.
                let (lower, upper) = if row_before && row {
                    let u = -4.0 * e.dot(self.we(b, s, dir_before));
                    let ws_dir = if s == j { wa_dir } else { wb_dir };
                    let l = match start_edges {
                        None if !self.per_edge => u,
                        _ => -4.0 * e_before.dot(ws_dir),
                    };
                    (l, u)
                } else {
                    (0.0, 0.0)
                };
                factor = lower / pivot;
                pivot = diag - upper * factor;
                rhs -= upper * rhs_before;
            } else {
                pivot = diag;
            }
            if pivot.is_nan() || pivot <= 0.0 {
                return false;
            }
            rhs_before = rhs / pivot;
            rows[j] = EliminatedRow {
                dir,
                rhs: rhs_before,
                factor,
            };
            (e_before, dir_before, row_before) = (e, dir, row);
        }
        true
    }

    /// The eliminated system solved back from the other end (the back
    /// substitution of `tridiagonal::solve_tridiagonal` on the rows taken in
    /// `order`) and each vertex moved by `∓Wᵢ 2 dʲ δλⱼ` of its two edges as
    /// soon as both are known, in the same order either way: vertex i by
    /// edge i − 1, of which it is the far end, then by edge i.
    fn substitute_and_move(&self, pos: &mut [DVec3], rows: &[EliminatedRow], order: RowOrder) {
        let ne = rows.len();
        let (mut lambda_prev, mut g_prev, mut factor_prev) = (0.0, DVec3::ZERO, 0.0);
        match order {
            RowOrder::TipFirst => {
                for (j, row) in rows.iter().enumerate() {
                    let lambda = row.rhs - factor_prev * lambda_prev;
                    let g = 2.0 * row.dir * lambda;
                    let mut x = pos[j];
                    if j > 0 {
                        x -= self.we(j - 1, j, g_prev);
                    }
                    pos[j] = x + self.we(j, j, g);
                    (lambda_prev, g_prev, factor_prev) = (lambda, g, row.factor);
                }
                pos[ne] -= self.we(ne - 1, ne, g_prev);
            }
            RowOrder::RootFirst => {
                for (j, row) in rows.iter().enumerate().rev() {
                    let lambda = row.rhs - factor_prev * lambda_prev;
                    let g = 2.0 * row.dir * lambda;
                    let mut x = pos[j + 1] - self.we(j, j + 1, g);
                    if j + 1 < ne {
                        x += self.we(j + 1, j + 1, g_prev);
                    }
                    pos[j + 1] = x;
                    (lambda_prev, g_prev, factor_prev) = (lambda, g, row.factor);
                }
                pos[0] += self.we(0, 0, g_prev);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tridiagonal::solve_tridiagonal;

    /// Inelastic contact: a vertex in contact with a surface moving at `u`
    /// leaves with no outward velocity relative to it; its tangential
    /// velocity, an inward one, and a vertex without contact are unchanged.
    #[test]
    fn velocity_update_removes_only_outward_relative_velocity() {
        let n = DVec3::new(0.0, 1.0, 0.0);
        let u = DVec3::new(0.2, 0.5, 0.0);
        let touching = Contact {
            normal: n,
            depth: 1e-4,
            stuck: false,
            surface_velocity: u,
        };
        let h = 1e-3;
        // Velocities after the position update, set through x − x0 = h v.
        let wanted = [
            DVec3::new(0.3, 0.9, -0.1), // outward relative to u: loses 0.4 along n
            DVec3::new(0.3, 0.2, -0.1), // slower than the surface: inward, kept
            DVec3::new(0.3, 0.9, -0.1), // no contact: kept
        ];
        let contact = [touching, touching, Contact::default()];
        let x0 = [DVec3::ZERO; 3];
        let x: Vec<DVec3> = wanted.iter().map(|v| *v * h).collect();
        let mut vel = [DVec3::ZERO; 3];
        let chatter = Chatter {
            force: &[DVec3::ZERO; 3],
            inv_mass: &[1.0; 3],
            rest_len: &[1.0; 2],
            count: &mut [0; 3],
        };
        project_velocity(&mut vel, &x, &x0, &contact, h, chatter);
        assert!((vel[0] - DVec3::new(0.3, 0.5, -0.1)).length() < 1e-12);
        assert!((vel[0] - u).dot(n).abs() < 1e-12);
        assert!((vel[1] - wanted[1]).length() < 1e-12);
        assert!((vel[2] - wanted[2]).length() < 1e-12);
    }

    /// SHAKE's Newton step on a single free edge whose start direction is
    /// not its current one: the error after one step is second order in the
    /// violation, as for fast projection.
    #[test]
    fn one_edge_shake_step_is_quadratic() {
        let mut pos = [DVec3::ZERO, DVec3::new(1.01, 0.0, 0.0)];
        let start = [DVec3::ZERO, DVec3::new(1.0, 0.1, 0.0).normalize()];
        let r = project_shake(
            &mut pos,
            &start,
            &[0.0, 1.0],
            &[1.0],
            0.0,
            1,
            &[Contact::default(); 2],
            false,
        );
        // The step e ← e − s d, s = 2δλ, solves the linearised constraint
        // 2 e·d s = |e|² − 1 exactly, so |e|² − 1 = s² after it; s ≈ 0.01
        // (|e| − 1 = 0.01, e·d ≈ 1): strain ≈ s²/2 ≈ 5e-5.
        assert!(r.max_strain < 6e-5 && r.max_strain > 4e-5, "{r:?}");
        assert!(!r.converged);
    }

    /// Vectors of components uniform in [−0.5, 0.5) from a xorshift64
    /// sequence seeded with `seed`: the same draws on every run.
    fn xorshift_noise(seed: u64) -> impl FnMut() -> DVec3 {
        let mut rng = seed;
        let mut unit = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        move || DVec3::new(unit(), unit(), unit())
    }

    /// One Newton iteration's two walks (`eliminate_rows`,
    /// `substitute_and_move`) are the assembled system, its rows taken tip
    /// first (or root first), solved by `tridiagonal::solve_tridiagonal` and applied
    /// edge by edge from the root, operation for operation: the same
    /// positions to the bit, in either order. The rod has
    /// an anchored edge in the middle (both ends w = 0, a row δλ = 0 that
    /// splits the system), a filtered vertex in contact and one held by
    /// static friction, and moves along its start edges (SHAKE) and along
    /// its iterate's (fast), with per-vertex weights and with the stuck
    /// vertex weighted by edge (`ProjectionSystem::we`).
    #[test]
    fn two_walks_are_the_thomas_solve_of_the_rows_in_either_order() {
        let n = 9;
        let mut noise = xorshift_noise(0x2545_f491_4f6c_dd1d);
        let rest_len: Vec<f64> = (0..n - 1).map(|j| 0.1 + 0.01 * j as f64).collect();
        let mut start = vec![DVec3::ZERO; n];
        for j in 1..n {
            start[j] = start[j - 1] + DVec3::new(rest_len[j - 1], 0.0, 0.0) + noise() * 0.02;
        }
        let pos0: Vec<DVec3> = start.iter().map(|x| *x + noise() * 0.01).collect();
        let inv_mass = [0.0, 2.0, 1.5, 0.0, 0.0, 1.0, 3.0, 2.5, 1.0];
        let mut contact = vec![Contact::default(); n];
        contact[2] = Contact {
            normal: DVec3::new(0.0, 1.0, 0.0),
            depth: 1e-3,
            stuck: false,
            surface_velocity: DVec3::ZERO,
        };
        contact[6] = Contact {
            normal: DVec3::new(0.6, 0.8, 0.0),
            depth: 2e-3,
            stuck: true,
            surface_velocity: DVec3::ZERO,
        };
        let start_edges: Vec<DVec3> = (0..n - 1).map(|j| start[j + 1] - start[j]).collect();
        let mut moved = Vec::new();
        let cases = [(false, false), (true, false), (false, true), (true, true)];
        for (shake, per_edge, order) in cases
            .into_iter()
            .flat_map(|(s, p)| [(s, p, RowOrder::TipFirst), (s, p, RowOrder::RootFirst)])
        {
            let system = ProjectionSystem {
                inv_mass: &inv_mass,
                rest_len: &rest_len,
                contact: &contact,
                filtered: true,
                per_edge,
            };
            let mut walked = pos0.clone();
            let mut rows = vec![EliminatedRow::default(); n - 1];
            let edges = shake.then_some(&start_edges[..]);
            assert!(system.eliminate_rows(&walked, edges, &mut rows, order));
            system.substitute_and_move(&mut walked, &rows, order);
            // The same iteration assembled: rows, couplings, Thomas, moves.
            // Vertex k's weight as edge j uses it: per vertex
            // (`apply_inv_mass`), or by edge for the stuck vertex 6, whose
            // edges both go to free vertices (`ProjectionSystem::we`: it
            // then moves by neither).
            let w = |j: usize, k: usize, v: DVec3| {
                if per_edge {
                    system.we(j, k, v)
                } else {
                    apply_inv_mass(inv_mass[k], contact[k], true, v)
                }
            };
            let e: Vec<DVec3> = (0..n - 1).map(|j| pos0[j + 1] - pos0[j]).collect();
            let d = if shake { &start_edges } else { &e };
            let mut row = vec![false; n - 1];
            let (mut diag, mut rhs) = (vec![1.0; n - 1], vec![0.0; n - 1]);
            for j in 0..n - 1 {
                let dj = 4.0 * e[j].dot(w(j, j, d[j]) + w(j, j + 1, d[j]));
                let scale = 4.0 * e[j].length() * d[j].length() * (inv_mass[j] + inv_mass[j + 1]);
                row[j] = inv_mass[j] + inv_mass[j + 1] > 0.0 && dj > 1e-12 * scale;
                if row[j] {
                    diag[j] = dj;
                    rhs[j] = e[j].length_squared() - rest_len[j] * rest_len[j];
                }
            }
            assert!(!row[3], "the anchored edge is not a row");
            let (mut upper, mut lower) = (vec![0.0; n - 1], vec![0.0; n - 1]);
            for j in 0..n - 2 {
                if row[j] && row[j + 1] {
                    upper[j] = -4.0 * e[j].dot(w(j + 1, j + 1, d[j + 1]));
                    lower[j] = -4.0 * e[j + 1].dot(w(j, j + 1, d[j]));
                    // Fast projection with per-vertex weights is symmetric:
                    // the walk computes the coupling once, as row j's
                    // entry towards the row eliminated before it.
                    if !shake && !per_edge {
                        match order {
                            RowOrder::TipFirst => lower[j] = upper[j],
                            RowOrder::RootFirst => upper[j] = lower[j],
                        }
                    }
                }
            }
            let mut scratch = vec![0.0; n - 1];
            let rhs = if order == RowOrder::RootFirst {
                let mut rhs = rhs;
                assert!(solve_tridiagonal(
                    &diag,
                    &upper,
                    &lower,
                    &mut rhs,
                    &mut scratch
                ));
                rhs
            } else {
                // Row i of the reversed system is row n − 2 − i: its upper
                // coupling is the original's lower one and the other way round.
                let flip = |v: &[f64]| v.iter().rev().copied().collect::<Vec<f64>>();
                let (diag_r, mut rhs_r) = (flip(&diag), flip(&rhs));
                let upper_r: Vec<f64> = (0..n - 2).map(|i| lower[n - 3 - i]).collect();
                let lower_r: Vec<f64> = (0..n - 2).map(|i| upper[n - 3 - i]).collect();
                assert!(solve_tridiagonal(
                    &diag_r,
                    &upper_r,
                    &lower_r,
                    &mut rhs_r,
                    &mut scratch
                ));
                flip(&rhs_r)
            };
            let mut assembled = pos0.clone();
            for j in 0..n - 1 {
                let g = 2.0 * d[j] * rhs[j];
                assembled[j] += w(j, j, g);
                assembled[j + 1] -= w(j, j + 1, g);
            }
            assert_eq!(
                walked, assembled,
                "shake {shake}, per edge {per_edge}, {order:?}"
            );
            assert!(walked != pos0, "the iteration moved the rod");
            moved.push(walked);
        }
        // The two orders solve the same system: the same positions to a few
        // of their ulps (16 ε of the largest coordinate; the moves are
        // ~1e-2 of them and the system is well conditioned), but not the
        // same rounding (else the root-first case above would not check a
        // walk of its own).
        let bound = 16.0
            * f64::EPSILON
            * pos0
                .iter()
                .map(|x| x.abs().max_element())
                .fold(0.0, f64::max);
        for pair in moved.chunks(2) {
            let gap = pair[0]
                .iter()
                .zip(&pair[1])
                .map(|(a, b)| (*a - *b).abs().max_element())
                .fold(0.0, f64::max);
            assert!(
                gap <= bound,
                "the orders disagree by {gap:e} (bound {bound:e})"
            );
        }
        assert!(
            moved.chunks(2).any(|pair| pair[0] != pair[1]),
            "the two orders rounded alike"
        );
    }

    /// The linear system of fast projection: one Newton step on a single
    /// free edge restores its length to second order in the violation.
    #[test]
    fn one_edge_newton_step_is_quadratic() {
        let mut pos = [DVec3::ZERO, DVec3::new(1.01, 0.0, 0.0)];
        let r = project_fast(
            &mut pos,
            &[0.0, 1.0],
            &[1.0],
            0.0,
            1,
            &[Contact::default(); 2],
            false,
        );
        // Newton on |e|² = 1 from |e| = 1.01: error (0.01)²/(2·1.01) ≈ 5e-5.
        assert!(r.max_strain < 6e-5 && r.max_strain > 4e-5, "{r:?}");
    }

    /// With per-edge weights (`ProjectionSystem::we`) the two
    /// walks are still Newton's method on C(x(λ)): from a rod a small
    /// distance ε off its constraints, with stuck runs (two and three
    /// stuck neighbours, a stuck vertex beside a free one, an anchored
    /// end), one iteration leaves a residual of order ε², so shrinking ε
    /// tenfold shrinks it about a hundredfold. A Jacobian that took the
    /// per-vertex weight for the coupling (the symmetric `lower = upper`
    /// of the fast projection) is not the derivative of the move, and the
    /// residual then shrinks only tenfold.
    #[test]
    fn per_edge_weights_keep_newtons_quadratic_convergence() {
        let n = 10;
        let mut noise = xorshift_noise(0x9e37_79b9_7f4a_7c15);
        let rest_len = vec![0.02; n - 1];
        let mut base = vec![DVec3::ZERO; n];
        // A zigzag in the stuck vertices' tangent plane (y = 0), so that
        // free vertices between stuck ones have room to move (a straight
        // rod between held vertices is the singular case).
        for j in 1..n {
            let a = if j % 2 == 0 { 0.5 } else { -0.5 };
            base[j] = base[j - 1] + DVec3::new(0.02 * f64::cos(a), 0.0, 0.02 * f64::sin(a));
        }
        let inv_mass = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let stuck = [
            false, true, true, false, true, true, true, false, false, true,
        ];
        let contact: Vec<Contact> = (0..n)
            .map(|i| Contact {
                normal: DVec3::new(0.0, 1.0, 0.0),
                depth: if stuck[i] { 1e-4 } else { 0.0 },
                stuck: stuck[i],
                surface_velocity: DVec3::ZERO,
            })
            .collect();
        // The same direction of perturbation at every scale, in the
        // tangent plane of each stuck vertex (which the filter keeps them to).
        let dirs: Vec<DVec3> = (0..n)
            .map(|i| {
                let d = noise();
                if stuck[i] {
                    DVec3::new(d.x, 0.0, d.z)
                } else {
                    d
                }
            })
            .collect();
        let residual_after_one = |eps: f64, per_edge: bool| -> (f64, f64) {
            let mut pos: Vec<DVec3> = base.iter().zip(&dirs).map(|(x, d)| *x + *d * eps).collect();
            pos[0] = base[0];
            let system = ProjectionSystem {
                inv_mass: &inv_mass,
                rest_len: &rest_len,
                contact: &contact,
                filtered: true,
                per_edge,
            };
            let c = |p: &[DVec3]| -> f64 {
                (0..n - 1)
                    .map(|j| ((p[j + 1] - p[j]).length_squared() - rest_len[j] * rest_len[j]).abs())
                    .fold(0.0, f64::max)
            };
            let before = c(&pos);
            let mut rows = vec![EliminatedRow::default(); n - 1];
            assert!(system.eliminate_rows(&pos, None, &mut rows, RowOrder::TipFirst));
            system.substitute_and_move(&mut pos, &rows, RowOrder::TipFirst);
            (before, c(&pos))
        };
        let (b1, a1) = residual_after_one(1e-4, true);
        let (b2, a2) = residual_after_one(1e-5, true);
        eprintln!(
            "per-edge: residual {b1:.2e} -> {a1:.2e} at eps 1e-4, {b2:.2e} -> {a2:.2e} at 1e-5"
        );
        assert!(
            b1 / b2 > 8.0 && b1 / b2 < 12.0,
            "the residual before is first order: {b1:e}, {b2:e}"
        );
        assert!(
            a1 / a2 > 60.0,
            "not quadratic: {a1:e} -> {a2:e} (ratio {:.1})",
            a1 / a2
        );
        // Per-vertex weights hold the stuck–stuck edges: no convergence
        // there at all (the residual after stays first order).
        let (_, h1) = residual_after_one(1e-4, false);
        let (_, h2) = residual_after_one(1e-5, false);
        eprintln!("per-vertex (today): {h1:.2e} at eps 1e-4, {h2:.2e} at 1e-5");
        assert!(
            h1 / h2 < 20.0,
            "today's rule should leave the held edges: {h1:e} -> {h2:e}"
        );
    }
}
