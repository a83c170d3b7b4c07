//! Kernel `twist`: the quasistatic material frame (§5). For the current
//! centerline the twist angles θʲ not prescribed by a clamp minimise the
//! elastic energy, `∂E/∂θʲ = 0` (eq. 4), found by Newton's method on the
//! tridiagonal Hessian with a backtracking line search, warm-started from the
//! previous step's angles: the twin of kernel `twist_rod`
//! (shaders/twist.wgsl).

use glam::{DVec2, DVec3};

use super::curvature::{apply_bending, curvature_binormal, material_curvature, rot_j};
use super::frames::material_frame;
use super::tridiagonal::RowOrder;
use crate::model::rods::{EndCondition, RodMaterial, RodSet};

/// The rest data of one rod, sliced out of the flat arrays of `RodSet`.
#[derive(Clone, Copy)]
pub struct RodRest<'a> {
    /// The rod's material (stiffnesses).
    pub material: &'a RodMaterial,
    /// Per edge.
    pub rest_len: &'a [f64],
    /// Per vertex `l̄ᵢ = |ēⁱ⁻¹| + |ēⁱ|`.
    pub voronoi: &'a [f64],
    /// Per vertex `[ω̄ᵢ^{i−1}, ω̄ᵢ^{i}]`.
    pub rest_kappa: &'a [[DVec2; 2]],
}

/// Curvature binormals `(κb)ᵢ` of all vertices of a rod (zero at its ends).
pub fn curvature_binormals(pos: &[DVec3], kb: &mut [DVec3]) {
    let n = pos.len();
    kb[0] = DVec3::ZERO;
    kb[n - 1] = DVec3::ZERO;
    for i in 1..n - 1 {
        kb[i] = curvature_binormal(pos[i] - pos[i - 1], pos[i + 1] - pos[i]);
    }
}

/// Material curvatures `[ωᵢ^{i−1}, ωᵢ^{i}]` of interior vertex `i`.
#[inline]
pub fn vertex_curvatures(
    kb: DVec3,
    frame_prev: (DVec3, DVec3),
    frame_next: (DVec3, DVec3),
) -> [DVec2; 2] {
    [
        material_curvature(kb, frame_prev.0, frame_prev.1),
        material_curvature(kb, frame_next.0, frame_next.1),
    ]
}

/// Bending energy (eq. 3) and twisting energy (§4.2.2) of one rod:
/// `E_bend = Σᵢ 1/(2 l̄ᵢ) Σ_{j∈{i−1,i}} (ωᵢʲ − ω̄ᵢʲ)ᵀ Bʲ (ωᵢʲ − ω̄ᵢʲ)`,
/// `E_twist = Σᵢ β (θⁱ − θⁱ⁻¹)² / l̄ᵢ`.
pub fn elastic_energy(
    rest: RodRest,
    kb: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &[f64],
) -> (f64, f64) {
    let b = rest.material.bending;
    let beta = rest.material.twist;
    let mut bend = 0.0;
    let mut twist = 0.0;
    let mut prev = material_frame(tangent[0], ref_u[0], theta[0]);
    for i in 1..kb.len() - 1 {
        let next = material_frame(tangent[i], ref_u[i], theta[i]);
        let w = vertex_curvatures(kb[i], prev, next);
        let l = rest.voronoi[i];
        for (wj, wbar) in w.iter().zip(&rest.rest_kappa[i]) {
            let d = *wj - *wbar;
            bend += d.dot(apply_bending(b, d)) / (2.0 * l);
        }
        let m = theta[i] - theta[i - 1];
        twist += beta * m * m / l;
        prev = next;
    }
    (bend, twist)
}

/// Gradient of the elastic energy with respect to every θʲ, split into its
/// bending part `∂E_bend/∂θʲ = Σᵢ (1/l̄ᵢ) (−Jωᵢʲ)ᵀ Bʲ (ωᵢʲ − ω̄ᵢʲ)` and its
/// twisting part `2β(mⱼ/l̄ⱼ − mⱼ₊₁/l̄ⱼ₊₁)` (eq. 7), plus the tridiagonal Hessian
/// (`diag[j] = Hⱼⱼ`, `off[j] = Hⱼ,ⱼ₊₁`) of §5.1. The vertices' stencils are
/// summed in the order `order` walks them (from the root for
/// [`RowOrder::RootFirst`]), as kernel `twist_rod`'s walk sums them, so
/// each row's terms are added in that walk's order.
#[allow(clippy::too_many_arguments)] // one argument per buffer the WGSL kernel binds
pub fn twist_gradient(
    order: RowOrder,
    rest: RodRest,
    kb: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &[f64],
    grad_bend: &mut [f64],
    grad_twist: &mut [f64],
    mut hessian: Option<(&mut [f64], &mut [f64])>,
) {
    let b = rest.material.bending;
    let beta = rest.material.twist;
    grad_bend.fill(0.0);
    grad_twist.fill(0.0);
    if let Some((diag, off)) = hessian.as_mut() {
        diag.fill(0.0);
        off.fill(0.0);
    }
    let n = kb.len();
    let frame = |j: usize| material_frame(tangent[j], ref_u[j], theta[j]);
    let from_tip = order == RowOrder::TipFirst;
    // The frame of the edge behind the walk, carried to the next vertex.
    let mut behind = frame(if from_tip { n - 2 } else { 0 });
    for step in 0..n.saturating_sub(2) {
        let i = if from_tip { n - 2 - step } else { step + 1 };
        let ahead = frame(if from_tip { i - 1 } else { i });
        let (prev, next) = if from_tip {
            (ahead, behind)
        } else {
            (behind, ahead)
        };
        let w = vertex_curvatures(kb[i], prev, next);
        let l = rest.voronoi[i];
        for (k, (wj, wbar)) in w.iter().zip(&rest.rest_kappa[i]).enumerate() {
            let j = i - 1 + k;
            let bd = apply_bending(b, *wj - *wbar);
            let jw = rot_j(*wj);
            grad_bend[j] -= jw.dot(bd) / l;
            if let Some((diag, _)) = hessian.as_mut() {
                diag[j] += (jw.dot(apply_bending(b, jw)) - wj.dot(bd)) / l;
            }
        }
        let m = theta[i] - theta[i - 1];
        grad_twist[i] += 2.0 * beta * m / l;
        grad_twist[i - 1] -= 2.0 * beta * m / l;
        if let Some((diag, off)) = hessian.as_mut() {
            diag[i] += 2.0 * beta / l;
            diag[i - 1] += 2.0 * beta / l;
            off[i - 1] -= 2.0 * beta / l;
        }
        behind = ahead;
    }
}

/// `‖B‖` of the bending stiffness `[b11, b12, b22]`, bounded by
/// Gershgorin: `max(|b11| + |b12|, |b12| + |b22|)` (`bending_norm` in
/// shaders/twist.wgsl).
pub fn bending_norm(b: [f64; 3]) -> f64 {
    (b[0].abs() + b[1].abs()).max(b[1].abs() + b[2].abs())
}

/// A bound on the third derivative of one bending term of
/// [`elastic_energy`] in its edge's angle θ,
/// `f(θ) = (ω(θ) − ω̄)ᵀ B (ω(θ) − ω̄) / (2 l̄)`:
/// `|f‴| ≤ ‖B‖ |κb| (4|κb| + |ω̄|) / l̄` (`cubic_term` in shaders/twist.wgsl).
///
/// Derivation: the material frame turns with θ, so `ω(θ) = R(−θ) ω(0)`, a
/// rotation of a fixed vector; `ω′ = −Jω`, `ω″ = −ω`, `ω‴ = Jω`, all of
/// length `|ω| ≤ |κb|` (κb is normal to the edge's tangent, so `|ω| = |κb|`
/// exactly). Then `f‴ = (ω‴ᵀ B d + 3 ω″ᵀ B ω′) / l̄` with `d = ω − ω̄`,
/// `|d| ≤ |κb| + |ω̄|`. The twisting energy is quadratic in θ (no third
/// derivative), and each bending term depends on one angle only.
pub fn cubic_term(b_norm: f64, kb_len: f64, wbar: DVec2, l: f64) -> f64 {
    b_norm * kb_len * (4.0 * kb_len + wbar.length()) / l
}

/// The largest over the free edges `free` of the sum of [`cubic_term`]
/// over the (at most two) bending terms of each edge's angle: `C` with
/// `|∂³E/∂(θʲ)³| ≤ C` for every free j, at any angles (the bound does not
/// depend on θ). Kernel `twist_rod` takes the same maximum in its gradient
/// walk (`twist_gradient`'s `w`), which reads these values anyway.
pub fn cubic_bound(rest: RodRest, kb: &[DVec3], free: std::ops::Range<usize>) -> f64 {
    let n = kb.len();
    let b_norm = bending_norm(rest.material.bending);
    let term = |i: usize, k: usize| {
        if i >= 1 && i + 1 < n {
            cubic_term(
                b_norm,
                kb[i].length(),
                rest.rest_kappa[i][k],
                rest.voronoi[i],
            )
        } else {
            0.0
        }
    };
    // Edge j is the next edge of vertex j and the previous one of j + 1.
    free.map(|j| term(j + 1, 0) + term(j, 1))
        .fold(0.0, f64::max)
}

/// Whether the full Newton step `x` (slope `Σ xⱼ ∂E/∂θʲ`, `cubes = Σ|xⱼ|³`)
/// passes the Armijo test `E(θ + x) ≤ E(θ) + 10⁻⁴·slope` for sure, with
/// `cubic` the bound of [`cubic_bound`] (`armijo_certified` in
/// shaders/twist.wgsl). With `(H + μ)x = −g` (μ ≥ 0 the Levenberg shift),
/// Taylor's theorem per angle gives
/// `E(θ + x) ≤ E + g·x + ½xᵀHx + C Σ|xⱼ|³/6 = E + ½ slope − ½μ|x|² + C Σ|xⱼ|³/6`,
/// so `C Σ|xⱼ|³/6 ≤ |slope|/4` leaves `E(θ + x) ≤ E − |slope|/4`, below the
/// Armijo bound with a margin of a quarter of the slope for rounding. The
/// line search would then accept α = 1: the walk takes the step without
/// evaluating the energy at all.
pub fn armijo_certified(slope: f64, cubic: f64, cubes: f64) -> bool {
    slope < 0.0 && cubic * cubes <= -1.5 * slope
}

/// The walk's Newton step (kernel `twist_rod`'s `newton_step`, operation
/// for operation; the kernel's unshifted step, mu = 0, does the same
/// elimination row by row inside its gradient walk, `eliminate_row`, in
/// either order): solve `(diag + mu, off) x = −(grad_bend + grad_twist)` by
/// the Thomas algorithm ([`super::tridiagonal::solve_tridiagonal`]'s arithmetic, the right side
/// formed as each row is eliminated), the rows taken in the order `order`
/// (from the tip for [`RowOrder::TipFirst`]), then in the back substitution,
/// the other way, sum the slope `Σ xⱼ ∂E/∂θʲ` from the row eliminated last
/// to the first and take the largest `|xⱼ|` and `Σ|xⱼ|³`. `None` when a
/// pivot is not positive, i.e. the shifted matrix is not positive definite.
/// The elimination also bounds the step (`NewtonStep::Below`'s bound, at
/// least max |xⱼ|); where that is below `below` there is no back
/// substitution, and `x` holds the eliminated values. `factor` holds the
/// elimination factors (length n − 1 at least, in elimination order); `x`
/// is in the rows' own order.
///
/// The bound: the back substitution is xⱼ = yⱼ − cⱼ xⱼ₊₁ (y the eliminated
/// values, c the factors, j counted in elimination order), so
/// xᵢ = Σ_{j≥i} (∏_{i≤k<j} −cₖ) yⱼ and |xᵢ| ≤ Σⱼ mⱼ |yⱼ| with
/// mⱼ = max_{i≤j} ∏_{i≤k<j} |cₖ| = max(1, |cⱼ₋₁| mⱼ₋₁), which the
/// elimination carries from its first row on.
#[allow(clippy::too_many_arguments)]
pub fn newton_step(
    order: RowOrder,
    grad_bend: &[f64],
    grad_twist: &[f64],
    diag: &[f64],
    off: &[f64],
    mu: f64,
    below: f64,
    x: &mut [f64],
    factor: &mut [f64],
) -> Option<NewtonStep> {
    let n = diag.len();
    let from_tip = order == RowOrder::TipFirst;
    // Row k of the elimination is row `row(k)` of the system; `coupling(k)`
    // couples it to the row eliminated before it.
    let row = |k: usize| if from_tip { n - 1 - k } else { k };
    let coupling = |k: usize| if from_tip { off[n - 1 - k] } else { off[k - 1] };
    let grad = |j: usize| grad_bend[j] + grad_twist[j];
    let mut pivot = diag[row(0)] + mu;
    if pivot.is_nan() || pivot <= 0.0 {
        return None;
    }
    x[row(0)] = -grad(row(0)) / pivot;
    let mut grow = 1.0f64;
    let mut bound = x[row(0)].abs();
    for k in 1..n {
        let (j, c) = (row(k), coupling(k));
        factor[k - 1] = c / pivot;
        pivot = diag[j] + mu - c * factor[k - 1];
        if pivot.is_nan() || pivot <= 0.0 {
            return None;
        }
        x[j] = (-grad(j) - c * x[row(k - 1)]) / pivot;
        grow = (factor[k - 1].abs() * grow).max(1.0);
        bound += grow * x[j].abs();
    }
    if bound < below {
        return Some(NewtonStep::Below { bound });
    }
    let last = row(n - 1);
    let mut slope = x[last] * grad(last);
    let mut max_step = x[last].abs();
    let mut cubes = x[last].abs().powi(3);
    for k in (1..n).rev() {
        let j = row(k - 1);
        x[j] -= factor[k - 1] * x[row(k)];
        slope += x[j] * grad(j);
        max_step = max_step.max(x[j].abs());
        cubes += x[j].abs().powi(3);
    }
    Some(NewtonStep::Full {
        slope,
        max_step,
        cubes,
    })
}

/// What [`newton_step`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NewtonStep {
    /// The step, in `x`.
    Full {
        /// `Σ xⱼ ∂E/∂θʲ`, summed from the last row to the first.
        slope: f64,
        /// max |xⱼ|.
        max_step: f64,
        /// Σ|xⱼ|³.
        cubes: f64,
    },
    /// The step not found (no back substitution): the elimination's bound
    /// on max |xⱼ| was below the `below` asked for.
    Below {
        /// The bound, Σ mⱼ |yⱼ|.
        bound: f64,
    },
}

thread_local! {
    /// Working arrays of `twist`, one set per thread (rods run in parallel).
    static WORK: std::cell::RefCell<[Vec<f64>; 7]> = std::cell::RefCell::new(Default::default());
}

/// Outcome of one quasistatic solve.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TwistSolve {
    /// Newton iterations taken.
    pub iterations: u32,
    /// Largest |∂E/∂θʲ| over the free angles at exit (N·m).
    pub residual: f64,
}

/// Newton's method with backtracking line search on the free twist angles
/// `theta[free]` of one rod; the others are held (prescribed by clamps).
/// The Thomas algorithm's pivots test definiteness, the slope is summed in
/// its back substitution ([`newton_step`]), a full step that
/// [`armijo_certified`] proves acceptable is taken without the energy, and
/// the energy is summed left to right: the twin of kernel `twist_rod`.
#[allow(clippy::too_many_arguments)]
pub fn twist(
    rest: RodRest,
    kb: &[DVec3],
    tangent: &[DVec3],
    ref_u: &[DVec3],
    theta: &mut [f64],
    free: std::ops::Range<usize>,
    tolerance: f64,
    max_iterations: u32,
) -> TwistSolve {
    let ne = theta.len();
    if free.is_empty() {
        return TwistSolve::default();
    }
    WORK.with_borrow_mut(|work| {
        // Working arrays, reused between calls on the same thread.
        let [gb, gt, diag, off, step, scratch, trial] = work;
        for (v, len) in [(&mut *gb, ne), (gt, ne), (diag, ne), (off, ne)] {
            v.clear();
            v.resize(len, 0.0);
        }
        for v in [&mut *step, scratch] {
            v.clear();
            v.resize(free.len(), 0.0);
        }
        trial.clear();
        trial.extend_from_slice(theta);
        let energy = |th: &[f64]| {
            let (b, t) = elastic_energy(rest, kb, tangent, ref_u, th);
            b + t
        };
        // The energy is needed only for a line search: a Newton step below the
        // tolerance is taken without one, and so is a full step
        // the third-derivative bound accepts (warm starts end on the
        // elimination's bound, below, with no step at all).
        let mut e0: Option<f64> = None;
        let cubic = cubic_bound(rest, kb, free.clone());
        let mut out = TwistSolve::default();
        // The order in which this iteration takes its rows: the walk's
        // first from the root, each after it in the order the back
        // substitution before it walked (kernel `twist_rod` builds them in
        // that walk, shaders/twist.wgsl `newton_back`).
        let mut order = RowOrder::RootFirst;
        for it in 0..max_iterations {
            twist_gradient(
                order,
                rest,
                kb,
                tangent,
                ref_u,
                theta,
                gb,
                gt,
                Some((&mut diag[..], &mut off[..])),
            );
            // The kernels take these maxima as the gradient is written
            // (`twist_gradient`'s return value in the walk): the same maxima.
            out.residual = free
                .clone()
                .map(|j| (gb[j] + gt[j]).abs())
                .fold(0.0, f64::max);
            out.iterations = it;
            if out.residual == 0.0 {
                break;
            }
            // Newton direction, with Levenberg damping where H is not positive
            // definite (e.g. the free–free isotropic rod, invariant to a uniform θ shift).
            let scale = free.clone().map(|j| diag[j].abs()).fold(0.0, f64::max);
            let mut mu = 0.0;
            // The unshifted elimination bounds the step; one bounded below
            // the tolerance ends the solve without it (in the kernel the
            // elimination is the gradient walk's, so the walk that would
            // find the step is not made).
            // The order of the step's rows: a shifted step's are taken from
            // the root, from a gradient summed from the root, as kernel
            // `twist_rod` stores them for its retries (`newton_step`).
            let mut step_order = order;
            let found = loop {
                if mu > 0.0 && step_order == RowOrder::TipFirst {
                    step_order = RowOrder::RootFirst;
                    twist_gradient(
                        step_order,
                        rest,
                        kb,
                        tangent,
                        ref_u,
                        theta,
                        gb,
                        gt,
                        Some((&mut diag[..], &mut off[..])),
                    );
                }
                let off = &off[free.start..free.end - 1];
                let below = if mu == 0.0 { tolerance } else { 0.0 };
                let step_found = newton_step(
                    step_order,
                    &gb[free.clone()],
                    &gt[free.clone()],
                    &diag[free.clone()],
                    off,
                    mu,
                    below,
                    step,
                    scratch,
                )
                .map(|found| match found {
                    NewtonStep::Full {
                        slope,
                        max_step,
                        cubes,
                    } => Some((slope, max_step, cubes)),
                    NewtonStep::Below { .. } => None,
                });
                if let Some(found) = step_found {
                    break found;
                }
                mu = if mu == 0.0 {
                    1e-8 * scale.max(1e-300)
                } else {
                    mu * 10.0
                };
                if !mu.is_finite() {
                    return out;
                }
            };
            let Some((slope, max_step, cubes)) = found else {
                break;
            };
            order = step_order.flipped();
            // The full step taken, the angles before it kept in `trial`:
            // the GPU's walk takes it in the back substitution that finds
            // it (shaders/twist.wgsl `newton_back`), one walk fewer, as a
            // full step is what a solve nearly always takes.
            for (s, j) in step.iter().zip(free.clone()) {
                trial[j] = theta[j];
                theta[j] += s;
            }
            // A full step below the tolerance ends the solve; one that the
            // third-derivative bound proves to pass the Armijo test is the
            // step the line search would accept. Both are taken without
            // the energies.
            let small = max_step < tolerance;
            if small || armijo_certified(slope, cubic, cubes) {
                out.iterations = it + 1;
                if small {
                    break;
                }
                // The energy at the new angles is not known.
                e0 = None;
                continue;
            }
            // The angles before the step, for the line search.
            theta[free.clone()].copy_from_slice(&trial[free.clone()]);
            let e_start = *e0.get_or_insert_with(|| energy(theta));
            // Backtracking line search with the Armijo condition.
            let mut alpha = 1.0;
            let accepted = loop {
                for (s, j) in step.iter().zip(free.clone()) {
                    trial[j] = theta[j] + alpha * s;
                }
                let e1 = energy(trial);
                if e1 <= e_start + 1e-4 * alpha * slope || alpha * max_step < tolerance {
                    e0 = Some(e1);
                    break true;
                }
                alpha *= 0.5;
                if alpha < 1e-10 {
                    break false;
                }
            };
            if !accepted {
                break;
            }
            theta[free.clone()].copy_from_slice(&trial[free.clone()]);
            out.iterations = it + 1;
            if alpha * max_step < tolerance {
                break;
            }
        }
        out
    })
}

/// Range of twist angles of a rod that the quasistatic solve may change.
pub fn free_twist_range(rods: &RodSet, r: usize) -> std::ops::Range<usize> {
    let ne = rods.edges(r).len();
    let a = matches!(rods.start[r], EndCondition::Clamped(_)) as usize;
    let b = ne - matches!(rods.end[r], EndCondition::Clamped(_)) as usize;
    a..b.max(a)
}
