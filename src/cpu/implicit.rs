//! The implicit integrators (`Integrator::BackwardEuler`,
//! `ImplicitMidpoint`, `Static`): Newton on one rod's positions and twist
//! angles (seed 004, Jawed et al.'s implicit DER), in the substep's place
//! of `forces` and `integrate`; the projection, contact, the grid, the
//! frames and the quasistatic twist then run as after an explicit step.
//!
//! **Unknowns.** `q = [x₀, θ⁰, x₁, θ¹, …, x_{n−1}]`: vertex i's
//! coordinates at `4i..4i+3`, edge j's angle at `4j + 3` (`x_dof`,
//! `theta_dof`). θʲ is measured from edge j's reference vector carried in
//! time from the step's start (the Bishop vector `uʲ` then) to the edge's
//! new tangent, `aʲ = P(tʲ₀ → tʲ) uʲ` (`transport`), so each edge's frame
//! depends on its own two vertices alone. Every energy term then couples
//! unknowns at most `HALF_BANDWIDTH` = 10 apart: the Hessian is banded.
//!
//! **Energy.** The solve minimises, over the free unknowns,
//! `Φ(q) = Σᵢ mᵢ/(2h²)|xᵢ − x̂ᵢ|² + Σᵢ cLᵢ/(2h)|xᵢ − xᵢ₀ − h wᵢ|² − Σᵢ mᵢ g·xᵢ
//!        + E_bend + E_twist + E_stretch`
//! with `x̂ = x₀ + h v₀` the inertial prediction, `c` the drag per length
//! and `wᵢ` the wind at the vertex, over the step `h`: its stationary point
//! is backward Euler, `m(x − x̂)/h² = −∇E + m g − cL(v − w)` with
//! `v = (x − x₀)/h`. Implicit midpoint is backward Euler over h/2 to the
//! midpoint y, then `x = 2y − x₀`. Statics drops inertia and drag.
//! * `E_bend = Σₖ 1/(2l̄ₖ) Σ_{j∈{k−1,k}} (ωₖʲ − ω̄ₖʲ)ᵀ B (ωₖʲ − ω̄ₖʲ)`
//!   (eq. 3), `ωₖʲ = ((κb)ₖ·m₂ʲ, −(κb)ₖ·m₁ʲ)` with the material frame
//!   `m₁ʲ = cos θʲ aʲ + sin θʲ (tʲ × aʲ)`, `m₂ʲ = tʲ × m₁ʲ`.
//! * `E_twist = Σₖ β (θᵏ − θᵏ⁻¹ + m_ref,k)² / l̄ₖ`, with `m_ref,k` the
//!   reference twist: the angle about tᵏ from `P(tᵏ⁻¹ → tᵏ) aᵏ⁻¹` to `aᵏ`.
//!   At the step's start the reference vectors are the Bishop frame, so
//!   `m_ref = 0` and this is the explicit integrator's twist energy.
//! * `E_stretch = ½ EA Σⱼ |ēʲ| (|eʲ|/|ēʲ| − 1)²` (seed 004), where the
//!   material has a stretching stiffness; the projection that follows
//!   makes the lengths exact.
//!
//! The twist angles carry no inertia: they are solved to equilibrium with
//! the positions, the quasistatic material frame of §5 inside the step.
//!
//! **Derivatives.** Each interior vertex's bending and twist is one
//! stencil of 11 unknowns (`x_{k−1}, x_k, x_{k+1}, θᵏ⁻¹, θᵏ`), each edge's
//! stretch one of 6. Their energies depend on the vertices only through
//! the edges, so each is written once in its edges and angles
//! (`vertex_energy`: 8 inputs, `edge_energy`: 3) over `dual::Real`. The
//! solve takes their gradients and Hessians where the frames have been
//! carried to the present edges (`Frames::at`), in closed form
//! (`vertex_derivatives`, `edge_derivatives`), which the assembly carries
//! to the vertices (an edge is its head minus its tail). Tests check the
//! closed forms against the energies in `Dual` numbers, both against
//! finite differences, and the gradient with the twist at equilibrium
//! against the explicit integrator's forces.
//!
//! **Solve.** Newton with the banded Cholesky factorisation
//! (`cpu::banded`); where the Hessian is not positive definite (a
//! compressed or buckling rod), the Hessian with each stencil's made
//! semidefinite (`project_psd`, shifted further only if still singular:
//! `newton_direction`); a backtracking line search on Φ along steps that
//! keep the edges' lengths to first order (`curve_step`); after each
//! step the reference vectors carried to the new tangents (`rebase`).
//! It stops when every free vertex's net force is below
//! `tolerance × force scale` and every free angle's net torque below
//! `tolerance × torque scale`, or below the rounding floor of f64
//! positions where that is larger (`Scales`); after `max_iterations`
//! without that the run stops, naming the rod, the step and the residual.

use glam::{DMat3, DVec3};

use super::banded::Banded;
use super::dual::{Real, Vec3};
use super::frames::{parallel_transport, signed_angle};
use super::twist::RodRest;
use crate::model::params::{Integrator, Newton};
use crate::model::rods::{EndCondition, RodSet};

/// The Hessian's half-bandwidth with positions and angles interleaved: a
/// vertex stencil spans `4(k−1) ..= 4(k+1) + 2`.
pub const HALF_BANDWIDTH: usize = 10;

/// Index of vertex `i`'s coordinate `c` in `q`.
#[inline]
pub fn x_dof(i: usize, c: usize) -> usize {
    4 * i + c
}

/// Index of edge `j`'s twist angle in `q`.
#[inline]
pub fn theta_dof(j: usize) -> usize {
    4 * j + 3
}

/// The number of unknowns of a rod of `n` vertices.
#[inline]
pub fn dof_count(n: usize) -> usize {
    4 * n - 1
}

/// `u` carried by the rotation that takes unit `ta` to unit `tb` about
/// `ta × tb` (`frames::parallel_transport`, in any `Real`).
pub fn transport<T: Real>(u: Vec3<T>, ta: Vec3<T>, tb: Vec3<T>) -> Vec3<T> {
    let b = ta.cross(&tb);
    let c = ta.dot(&tb);
    u.scale(c) + b.cross(&u) + b.scale(b.dot(&u) / (c + 1.0))
}

/// `transport` of the constant `u` from the constant `ta`: the same
/// value, with constants multiplied in as numbers (cheap in `Dual`s).
pub fn transport_from<T: Real>(u: DVec3, ta: DVec3, tb: Vec3<T>) -> Vec3<T> {
    let [x, y, z] = tb.c;
    let b = Vec3 {
        c: [
            z * ta.y - y * ta.z,
            x * ta.z - z * ta.x,
            y * ta.x - x * ta.y,
        ],
    };
    let c = x * ta.x + y * ta.y + z * ta.z;
    let [bx, by, bz] = b.c;
    let b_dot_u = bx * u.x + by * u.y + bz * u.z;
    let b_cross_u = Vec3 {
        c: [
            by * u.z - bz * u.y,
            bz * u.x - bx * u.z,
            bx * u.y - by * u.x,
        ],
    };
    let cu = Vec3 {
        c: [c * u.x, c * u.y, c * u.z],
    };
    cu + b_cross_u + b.scale(b_dot_u / (c + 1.0))
}

/// The start-of-step frames the reference vectors are carried from:
/// each edge's unit tangent and Bishop vector then, and each vertex's
/// reference twist at the last iterate (0 on the Bishop frame), which the
/// next one's is taken nearest to: `atan2` alone would wrap a reference
/// twist past ±π by a whole turn, and the twist energy with it.
#[derive(Clone, Copy)]
pub struct StartFrames<'a> {
    /// Per edge.
    pub tangent: &'a [DVec3],
    /// Per edge.
    pub ref_u: &'a [DVec3],
    /// Per vertex (rad).
    pub ref_twist: &'a [f64],
}

/// Frames carried to a point `q`: each edge's tangent there, its
/// reference vector carried to it, each vertex's reference twist there.
/// The solve takes its derivatives at such frames (`vertex_derivatives`).
#[derive(Clone, Debug)]
pub struct Frames {
    /// Per edge.
    pub tangent: Vec<DVec3>,
    /// Per edge.
    pub ref_u: Vec<DVec3>,
    /// Per vertex (rad).
    pub ref_twist: Vec<f64>,
}

impl Frames {
    /// `frames` carried to `q` (the energy at `q` is unchanged).
    pub fn at(frames: StartFrames, q: &[f64]) -> Frames {
        let ref_twist = reference_twists(frames, q);
        let mut tangent = frames.tangent.to_vec();
        let mut ref_u = frames.ref_u.to_vec();
        rebase(q, &mut tangent, &mut ref_u);
        Frames {
            tangent,
            ref_u,
            ref_twist,
        }
    }

    /// As `StartFrames`.
    pub fn view(&self) -> StartFrames<'_> {
        StartFrames {
            tangent: &self.tangent,
            ref_u: &self.ref_u,
            ref_twist: &self.ref_twist,
        }
    }
}

/// Bending and twist energy of interior vertex `k` (eq. 3 and the twist
/// with its reference twist, above) from its two edges
/// `e = [x_k − x_{k−1}, x_{k+1} − x_k]` (it depends on the vertices only
/// through them) and their angles.
pub fn vertex_energy<T: Real>(
    rest: RodRest,
    frames: StartFrames,
    k: usize,
    e: [Vec3<T>; 2],
    theta: [T; 2],
) -> T {
    let len = [e[0].length(), e[1].length()];
    let t = [
        e[0].scale(T::of(1.0) / len[0]),
        e[1].scale(T::of(1.0) / len[1]),
    ];
    let a: [Vec3<T>; 2] = std::array::from_fn(|j| {
        transport_from(frames.ref_u[k - 1 + j], frames.tangent[k - 1 + j], t[j])
    });
    let kb = e[0]
        .cross(&e[1])
        .scale(T::of(2.0) / (len[0] * len[1] + e[0].dot(&e[1])));
    let b = rest.material.bending;
    let l = rest.voronoi[k];
    let mut energy = T::of(0.0);
    for j in 0..2 {
        let v = t[j].cross(&a[j]);
        let (c, s) = (theta[j].cos(), theta[j].sin());
        let m1 = a[j].scale(c) + v.scale(s);
        let m2 = v.scale(c) - a[j].scale(s);
        let wbar = rest.rest_kappa[k][j];
        let d1 = kb.dot(&m2) - wbar.x;
        let d2 = -kb.dot(&m1) - wbar.y;
        energy = energy + (d1 * d1 * b[0] + d1 * d2 * (2.0 * b[1]) + d2 * d2 * b[2]) / (2.0 * l);
    }
    let p = transport(a[0], t[0], t[1]);
    let raw = p.cross(&a[1]).dot(&t[1]).atan2(p.dot(&a[1]));
    let turns = ((frames.ref_twist[k] - raw.value()) / std::f64::consts::TAU).round();
    let m_ref = raw + turns * std::f64::consts::TAU;
    let m = theta[1] - theta[0] + m_ref;
    energy + m * m * (rest.material.twist / l)
}

/// `a bᵀ`.
#[inline]
fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// `[a]×`, the matrix of `v ↦ a × v`.
#[inline]
fn cross_matrix(a: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, a.z, -a.y),
        DVec3::new(-a.z, 0.0, a.x),
        DVec3::new(a.y, -a.x, 0.0),
    )
}

/// A symmetric matrix of a stencil's inputs, filled by blocks.
struct Sym<const N: usize>([[f64; N]; N]);

impl<const N: usize> Sym<N> {
    /// Adds `m` at rows `r..r+3`, columns `c..c+3`, and `mᵀ` at the mirror
    /// (both on one block where r = c: `m + mᵀ`).
    fn pair(&mut self, r: usize, c: usize, m: DMat3) {
        for a in 0..3 {
            for b in 0..3 {
                let x = m.col(b)[a];
                self.0[r + a][c + b] += x;
                self.0[c + b][r + a] += x;
            }
        }
    }

    /// Adds the symmetric `m` on the diagonal block at `r`.
    fn diagonal(&mut self, r: usize, m: DMat3) {
        for a in 0..3 {
            for b in 0..3 {
                self.0[r + a][r + b] += m.col(b)[a];
            }
        }
    }

    /// Adds `v` at rows `r..r+3` of column `c`, and at the mirror.
    fn column(&mut self, r: usize, c: usize, v: DVec3) {
        for a in 0..3 {
            self.0[r + a][c] += v[a];
            self.0[c][r + a] += v[a];
        }
    }

    /// The 3×3 block at rows `r..`, columns `c..`.
    fn block(&self, r: usize, c: usize) -> DMat3 {
        let col =
            |b: usize| DVec3::new(self.0[r][c + b], self.0[r + 1][c + b], self.0[r + 2][c + b]);
        DMat3::from_cols(col(0), col(1), col(2))
    }
}

/// `vertex_energy`'s gradient and Hessian in its inputs
/// `(e⁰, e¹, θ⁰, θ¹)` (indices 0–2, 3–5, 6, 7), derived by hand, at a
/// point where the frames are those of the present edges (`Frames::at`:
/// `tangent` = each edge's unit tangent, `ref_u` its reference vector),
/// the only place the solve takes derivatives.
///
/// The energy is a function `F(t⁰, t¹, θ⁰, θ¹)` of the unit tangents,
/// carried to the edges by `t = e/|e|` (`∂t/∂e = P/|e|` with
/// `P = I − t tᵀ`, and `Σ_c g_c ∂²t_c/∂e² = −(t (Pg)ᵀ + (Pg) tᵀ + (t·g) P)/|e|²`).
/// In the tangents, at the point (`a = u`, `v = t × a`):
/// * `κb = 2 t⁰ × t¹/(1 + t⁰·t¹)`, `∂κb/∂t⁰ = (−2[t¹]× − κb t¹ᵀ)/D`,
///   `∂κb/∂t¹ = (2[t⁰]× − κb t⁰ᵀ)/D`, and the Hessian of `M·κb` that of a
///   bilinear form over `D = 1 + t⁰·t¹`.
/// * The reference vector `a(t) = P(s → t) u` from its start tangent
///   `s = t`: `∂a/∂t = a tᵀ − t aᵀ`, and
///   `∂²(k·a)/∂t² = ½((k × t)(a × t)ᵀ + (a × t)(k × t)ᵀ)` (the
///   transport's quadratic term `b (b·u)/(1 + c)` with `b = s × t`).
///   Then `∂v/∂t = v tᵀ − [a]×`, and `m₁ = cos θ a + sin θ v`,
///   `m₂ = cos θ v − sin θ a`.
/// * Bending `½ dᵀ B d/l̄` with `d = (κb·m₂, −κb·m₁) − ω̄`: Gauss–Newton
///   part `Jᵀ B J/l̄` plus `∇²(κb·M)` with `M = λ₁ m₂ − λ₂ m₁`,
///   `λ = B d/l̄`.
/// * The reference twist carried in time is its value at the point plus
///   the solid angle `Ω` of the spherical quadrilateral `s⁰ s¹ t¹ t⁰`
///   (the holonomy of transport round it), written as two triangles with
///   `tan(Ω/2) = a·(b × c)/(1 + a·b + b·c + c·a)`. At the point `Ω = 0`,
///   `∂Ω/∂tʲ = κb/2`, and with `w = t⁰ × t¹`, `c = t⁰·t¹`,
///   `d = t⁰ + t¹`: `∂²Ω/∂tʲ² = −(w dᵀ + d wᵀ)/(2(1 + c)²)`,
///   `∂²Ω/∂t⁰∂t¹ = [t⁰]×/(1 + c) − w t⁰ᵀ/(1 + c)²`.
///
/// Tests check both against `vertex_energy` in `Dual` numbers.
#[allow(clippy::needless_range_loop)] // inputs are indexed by block
pub fn vertex_derivatives(
    rest: RodRest,
    frames: StartFrames,
    k: usize,
    e: [DVec3; 2],
    theta: [f64; 2],
) -> ([f64; 8], [[f64; 8]; 8]) {
    let len = [e[0].length(), e[1].length()];
    let t = [e[0] / len[0], e[1] / len[1]];
    let u = [frames.ref_u[k - 1], frames.ref_u[k]];
    debug_assert!(
        (0..2)
            .all(|j| (frames.tangent[k - 1 + j] - t[j]).length() < 1e-9
                && u[j].dot(t[j]).abs() < 1e-9),
        "vertex_derivatives at vertex {k}: the frames are not carried to the edges (Frames::at)"
    );
    let b = rest.material.bending;
    let l = rest.voronoi[k];
    let mut gt = [0.0; 8];
    let mut ht = Sym([[0.0; 8]; 8]);
    let add_grad = |gt: &mut [f64; 8], r: usize, v: DVec3| {
        for c in 0..3 {
            gt[r + c] += v[c];
        }
    };

    // The curvature binormal and its first derivatives in the tangents.
    let den = 1.0 + t[0].dot(t[1]);
    let kb = t[0].cross(t[1]) * (2.0 / den);
    let dkb = [
        (cross_matrix(t[1]) * -2.0 - outer(kb, t[1])) / den,
        (cross_matrix(t[0]) * 2.0 - outer(kb, t[0])) / den,
    ];
    let dden = [t[1], t[0]];

    for j in 0..2 {
        let (s, c) = theta[j].sin_cos();
        let (a, tj) = (u[j], t[j]);
        let v = tj.cross(a);
        let m1 = a * c + v * s;
        let m2 = v * c - a * s;
        let da = outer(a, tj) - outer(tj, a);
        let dv = outer(v, tj) - cross_matrix(a);
        let dm1 = da * c + dv * s;
        let dm2 = dv * c - da * s;
        let wbar = rest.rest_kappa[k][j];
        let d = [kb.dot(m2) - wbar.x, -kb.dot(m1) - wbar.y];
        // ∇d over the inputs.
        let mut jd = [[0.0; 8]; 2];
        for i in 0..2 {
            add_grad(&mut jd[0], 3 * i, dkb[i].transpose() * m2);
            add_grad(&mut jd[1], 3 * i, -(dkb[i].transpose() * m1));
        }
        add_grad(&mut jd[0], 3 * j, dm2.transpose() * kb);
        add_grad(&mut jd[1], 3 * j, -(dm1.transpose() * kb));
        jd[0][6 + j] = -kb.dot(m1);
        jd[1][6 + j] = -kb.dot(m2);
        let lam = [
            (b[0] * d[0] + b[1] * d[1]) / l,
            (b[1] * d[0] + b[2] * d[1]) / l,
        ];
        // Jᵀ (B J/l̄), B J/l̄ a row at a time.
        let bj: [[f64; 8]; 2] = [
            std::array::from_fn(|q| (b[0] * jd[0][q] + b[1] * jd[1][q]) / l),
            std::array::from_fn(|q| (b[1] * jd[0][q] + b[2] * jd[1][q]) / l),
        ];
        for p in 0..8 {
            gt[p] += lam[0] * jd[0][p] + lam[1] * jd[1][p];
            for q in 0..8 {
                ht.0[p][q] += jd[0][p] * bj[0][q] + jd[1][p] * bj[1][q];
            }
        }
        // ∇²(κb·M), M = λ₁ m₂ − λ₂ m₁ = α v − γ a held as numbers where
        // it multiplies κb's second derivatives, and the other way round.
        let alpha = lam[0] * c - lam[1] * s;
        let gamma = lam[0] * s + lam[1] * c;
        let mm = v * alpha - a * gamma;
        // M·κb over (t⁰, t¹): the bilinear 2 M·(t⁰ × t¹) over D.
        let num = 2.0 * mm.dot(t[0].cross(t[1]));
        let dnum = [t[1].cross(mm) * 2.0, mm.cross(t[0]) * 2.0];
        for p in 0..2 {
            for q in 0..=p {
                let mut blk = -(outer(dnum[p], dden[q]) + outer(dden[p], dnum[q])) / (den * den)
                    + outer(dden[p], dden[q]) * (2.0 * num / (den * den * den));
                if p != q {
                    // (t¹, t⁰): ∂²num = 2[M]×, ∂²D = I.
                    blk += cross_matrix(mm) * (2.0 / den) - DMat3::IDENTITY * (num / (den * den));
                    ht.pair(3 * p, 3 * q, blk);
                } else {
                    ht.diagonal(3 * p, blk);
                }
            }
        }
        // κb held: α κb·v − γ κb·a over (tʲ, θʲ).
        let grad_ka = tj * a.dot(kb) - a * tj.dot(kb);
        let grad_kv = a.cross(kb) + tj * v.dot(kb);
        let half_sym = |x: DVec3, y: DVec3| (outer(x, y) + outer(y, x)) * 0.5;
        let at = a.cross(tj);
        let hess_ka = half_sym(kb.cross(tj), at);
        let x = outer(a.cross(kb), tj) - outer(tj.cross(kb), a);
        let hess_kv = x + x.transpose() + half_sym(kb.cross(tj).cross(tj), at);
        ht.diagonal(3 * j, hess_kv * alpha - hess_ka * gamma);
        ht.column(3 * j, 6 + j, -(grad_kv * gamma) - grad_ka * alpha);
        ht.0[6 + j][6 + j] += -alpha * kb.dot(v) + gamma * kb.dot(a);
        // Cross terms ∇κbᵀ ∇M + ∇Mᵀ ∇κb.
        let dm_t = dv * alpha - da * gamma;
        let dm_th = -(v * gamma) - a * alpha;
        for i in 0..2 {
            ht.pair(3 * i, 3 * j, dkb[i].transpose() * dm_t);
            ht.column(3 * i, 6 + j, dkb[i].transpose() * dm_th);
        }
    }

    // Twist β m²/l̄, m = θ¹ − θ⁰ + m_ref.
    let p = parallel_transport(u[0], t[0], t[1]);
    let raw = signed_angle(p, u[1], t[1]);
    let turns = ((frames.ref_twist[k] - raw) / std::f64::consts::TAU).round();
    let m = theta[1] - theta[0] + raw + turns * std::f64::consts::TAU;
    let beta = rest.material.twist / l;
    let mut dm = [0.0; 8];
    add_grad(&mut dm, 0, kb * 0.5);
    add_grad(&mut dm, 3, kb * 0.5);
    dm[6] = -1.0;
    dm[7] = 1.0;
    for p in 0..8 {
        gt[p] += 2.0 * beta * m * dm[p];
        for q in 0..8 {
            ht.0[p][q] += 2.0 * beta * dm[p] * dm[q];
        }
    }
    let w = t[0].cross(t[1]);
    let one_c = 1.0 + t[0].dot(t[1]);
    let dsum = t[0] + t[1];
    let own = (outer(w, dsum) + outer(dsum, w)) * (-0.5 / (one_c * one_c));
    let scale = 2.0 * beta * m;
    ht.diagonal(0, own * scale);
    ht.diagonal(3, own * scale);
    ht.pair(
        0,
        3,
        (cross_matrix(t[0]) / one_c - outer(w, t[0]) / (one_c * one_c)) * scale,
    );

    // To the edges.
    let proj = [0, 1].map(|j| (DMat3::IDENTITY - outer(t[j], t[j])) / len[j]);
    let mut g = [0.0; 8];
    let mut h = [[0.0; 8]; 8];
    let mut he = Sym([[0.0; 8]; 8]);
    for j in 0..2 {
        let gj = DVec3::new(gt[3 * j], gt[3 * j + 1], gt[3 * j + 2]);
        let ge = proj[j] * gj;
        for c in 0..3 {
            g[3 * j + c] = ge[c];
        }
        // The tangent's own curvature: ge = P g/|e|.
        let own = -(outer(t[j], ge) + outer(ge, t[j]) + proj[j] * t[j].dot(gj)) / len[j];
        he.diagonal(3 * j, proj[j] * ht.block(3 * j, 3 * j) * proj[j] + own);
        for th in 6..8 {
            let col = DVec3::new(ht.0[3 * j][th], ht.0[3 * j + 1][th], ht.0[3 * j + 2][th]);
            he.column(3 * j, th, proj[j] * col);
        }
    }
    he.pair(0, 3, proj[0] * ht.block(0, 3) * proj[1]);
    g[6] = gt[6];
    g[7] = gt[7];
    for p in 6..8 {
        for q in 6..8 {
            he.0[p][q] += ht.0[p][q];
        }
    }
    for (row, src) in h.iter_mut().zip(&he.0) {
        *row = *src;
    }
    (g, h)
}

/// `edge_energy`'s gradient and Hessian in its edge `e`:
/// `EA ε t` and `EA/l̄ t tᵀ + EA ε/|e| (I − t tᵀ)`, with `ε = |e|/l̄ − 1`.
pub fn edge_derivatives(rest: RodRest, j: usize, e: DVec3) -> (DVec3, DMat3) {
    let l = rest.rest_len[j];
    let ea = rest.material.stretching;
    let len = e.length();
    let t = e / len;
    let strain = len / l - 1.0;
    let tt = outer(t, t);
    (
        t * (ea * strain),
        tt * (ea / l) + (DMat3::IDENTITY - tt) * (ea * strain / len),
    )
}

/// Stretching energy `½ EA |ē| (|e|/|ē| − 1)²` of edge `j` from the edge
/// `e = x_{j+1} − x_j`.
pub fn edge_energy<T: Real>(rest: RodRest, j: usize, e: Vec3<T>) -> T {
    let l = rest.rest_len[j];
    let strain = e.length() / l - 1.0;
    strain * strain * (0.5 * rest.material.stretching * l)
}

/// What the solve's energy is made of besides the elastic terms, per vertex.
#[derive(Clone, Debug)]
pub struct Inertia {
    /// `mᵢ/h²` (0 for statics), N/m.
    pub inertia: Vec<f64>,
    /// `x̂ᵢ`, the inertial prediction (m).
    pub predicted: Vec<DVec3>,
    /// `cLᵢ/h` (0 for statics or without drag), N/m.
    pub drag: Vec<f64>,
    /// `xᵢ₀ + h wᵢ`, where drag pulls the vertex (m).
    pub drag_target: Vec<DVec3>,
    /// `mᵢ g` (N).
    pub weight: Vec<DVec3>,
}

/// One rod's problem: its rest state, start frames, the non-elastic
/// terms, and which unknowns are held.
pub struct Problem<'a> {
    /// The rod's rest state and material.
    pub rest: RodRest<'a>,
    /// The frames at the step's start.
    pub frames: StartFrames<'a>,
    /// Inertia, drag and weight.
    pub inertia: &'a Inertia,
    /// Per unknown, true where it is held (clamped vertices and angles).
    pub fixed: &'a [bool],
}

impl Problem<'_> {
    fn n(&self) -> usize {
        self.inertia.inertia.len()
    }

    /// Φ(q) (J).
    pub fn energy(&self, q: &[f64]) -> f64 {
        self.energy_and_size(q).0
    }

    /// Φ(q) and the sum of its terms' magnitudes (J), the scale its
    /// rounding is relative to.
    pub fn energy_and_size(&self, q: &[f64]) -> (f64, f64) {
        let n = self.n();
        let x = |i: usize| DVec3::new(q[x_dof(i, 0)], q[x_dof(i, 1)], q[x_dof(i, 2)]);
        let (mut e, mut size) = (0.0, 0.0);
        let mut add = |term: f64| {
            e += term;
            size += term.abs();
        };
        let ine = self.inertia;
        for i in 0..n {
            let xi = x(i);
            add(0.5 * ine.inertia[i] * (xi - ine.predicted[i]).length_squared());
            add(0.5 * ine.drag[i] * (xi - ine.drag_target[i]).length_squared());
            add(-ine.weight[i].dot(xi));
        }
        for k in 1..n - 1 {
            let e = [x(k) - x(k - 1), x(k + 1) - x(k)].map(Vec3::<f64>::of);
            add(vertex_energy(
                self.rest,
                self.frames,
                k,
                e,
                [q[theta_dof(k - 1)], q[theta_dof(k)]],
            ));
        }
        if self.rest.material.stretching > 0.0 {
            for j in 0..n - 1 {
                add(edge_energy(self.rest, j, Vec3::of(x(j + 1) - x(j))));
            }
        }
        (e, size)
    }

    /// Φ's gradient and Hessian at q, every unknown free, with the frames
    /// carried to q (`Frames::at`; `vertex_derivatives`). With
    /// `projected`, each stencil's Hessian is first made positive
    /// semidefinite (`project_psd`), so the sum is too (and, with inertia,
    /// or a held end and stretching stiffness, usually definite): the
    /// solve's fallback where the exact Hessian is not.
    pub fn derivatives(&self, q: &[f64], projected: bool) -> (Vec<f64>, Banded) {
        let n = self.n();
        let mut g = vec![0.0; q.len()];
        let mut h = Banded::zeros(q.len(), HALF_BANDWIDTH);
        let x = |i: usize| DVec3::new(q[x_dof(i, 0)], q[x_dof(i, 1)], q[x_dof(i, 2)]);
        let ine = self.inertia;
        for i in 0..n {
            let gi = (x(i) - ine.predicted[i]) * ine.inertia[i]
                + (x(i) - ine.drag_target[i]) * ine.drag[i]
                - ine.weight[i];
            for c in 0..3 {
                g[x_dof(i, c)] += gi[c];
                h.add(x_dof(i, c), x_dof(i, c), ine.inertia[i] + ine.drag[i]);
            }
        }
        // A stencil's derivatives in its edges (and angles) carried to its
        // unknowns, which are consecutive from `first`: `map[a]` lists the
        // (local unknown, sign) input a is made of (an edge is its head
        // minus its tail), so the gradient is Aᵀ∇ and the Hessian Aᵀ∇²A.
        fn carry<const N: usize, const M: usize>(
            dg: &[f64; N],
            dh: &[[f64; N]; N],
            map: &[&[(usize, f64)]; N],
            first: usize,
            g: &mut [f64],
            h: &mut Banded,
        ) {
            let mut local = [[0.0; M]; M];
            for (a, ma) in map.iter().enumerate() {
                for &(i, s) in ma.iter() {
                    g[first + i] += s * dg[a];
                }
                for (b, mb) in map.iter().enumerate() {
                    for &(i, si) in ma.iter() {
                        for &(j, sj) in mb.iter() {
                            local[i][j] += si * sj * dh[a][b];
                        }
                    }
                }
            }
            h.add_lower_block(first, &local);
        }
        // Local unknowns of vertex k's stencil from 4(k − 1): x_{k−1} at
        // 0–2, θᵏ⁻¹ at 3, x_k at 4–6, θᵏ at 7, x_{k+1} at 8–10.
        let e0: [[(usize, f64); 2]; 3] = std::array::from_fn(|c| [(4 + c, 1.0), (c, -1.0)]);
        let e1: [[(usize, f64); 2]; 3] = std::array::from_fn(|c| [(8 + c, 1.0), (4 + c, -1.0)]);
        let vertex_map: [&[(usize, f64)]; 8] = [
            &e0[0],
            &e0[1],
            &e0[2],
            &e1[0],
            &e1[1],
            &e1[2],
            &[(3, 1.0)],
            &[(7, 1.0)],
        ];
        for k in 1..n - 1 {
            let e = [x(k) - x(k - 1), x(k + 1) - x(k)];
            let th = [q[theta_dof(k - 1)], q[theta_dof(k)]];
            let (dg, mut dh) = vertex_derivatives(self.rest, self.frames, k, e, th);
            if projected {
                project_psd(&mut dh);
                mirror(&mut dh);
            }
            carry::<8, 11>(&dg, &dh, &vertex_map, x_dof(k - 1, 0), &mut g, &mut h);
        }
        if self.rest.material.stretching > 0.0 {
            // Edge j's from 4j: x_j at 0–2, x_{j+1} at 4–6.
            let e: [[(usize, f64); 2]; 3] = std::array::from_fn(|c| [(4 + c, 1.0), (c, -1.0)]);
            let edge_map: [&[(usize, f64)]; 3] = [&e[0], &e[1], &e[2]];
            for j in 0..n - 1 {
                let (dg, dh) = edge_derivatives(self.rest, j, x(j + 1) - x(j));
                let mut dh = [0, 1, 2].map(|a| [0, 1, 2].map(|b| dh.col(b)[a]));
                if projected {
                    project_psd(&mut dh);
                    mirror(&mut dh);
                }
                carry::<3, 7>(&dg.to_array(), &dh, &edge_map, x_dof(j, 0), &mut g, &mut h);
            }
        }
        (g, h)
    }
}

/// The residual scales of a rod: a force (N) and a torque (N·m) that its
/// weight and stiffness make. `force = maxᵢ mᵢ|g| + max(b₁₁, b₂₂, β)/(l̄_min L)`
/// (the weight of the heaviest vertex, plus the force that bends the rod
/// to a curvature 1/L across its shortest Voronoi length), `torque = force ×`
/// the shortest edge. And the floor below which no residual can be
/// resolved: positions are f64 to ε|x|, so a gradient is known to about
/// `ε X K` with X the rod's distance from the origin plus its length and K
/// its stiffest spring (stretching EA/l, bending b/l̄³, inertia m/h² and
/// drag); the floor is 16 times that (torque: times the shortest edge).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scales {
    /// N.
    pub force: f64,
    /// N·m.
    pub torque: f64,
    /// N.
    pub force_floor: f64,
    /// N·m.
    pub torque_floor: f64,
}

impl Scales {
    /// The scales of a rod at positions `pos`.
    pub fn of(rest: RodRest, inertia: &Inertia, pos: &[DVec3]) -> Scales {
        let length: f64 = rest.rest_len.iter().sum();
        let b = rest.material.bending;
        let stiff = b[0].max(b[2]).max(rest.material.twist);
        let l_min = rest.voronoi[1..rest.voronoi.len() - 1]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let l_min = if l_min.is_finite() { l_min } else { length };
        let heaviest = inertia
            .weight
            .iter()
            .map(|w| w.length())
            .fold(0.0, f64::max);
        let force = heaviest + stiff / (l_min * length);
        let edge = rest.rest_len.iter().copied().fold(f64::INFINITY, f64::min);
        let far = pos.iter().map(|x| x.length()).fold(0.0, f64::max) + length;
        let springs = inertia
            .inertia
            .iter()
            .zip(&inertia.drag)
            .map(|(m, c)| m + c)
            .fold(0.0, f64::max)
            .max(rest.material.stretching / edge)
            .max(b[0].max(b[2]) / (l_min * l_min * l_min));
        let force_floor = 16.0 * f64::EPSILON * far * springs;
        Scales {
            force,
            torque: force * edge,
            force_floor,
            torque_floor: force_floor * edge,
        }
    }
}

/// The fraction of Φ's terms' sizes below which a change of Φ is taken as
/// rounding (2⁻⁴⁰ ≈ 9e-13: some 4,000 ulps of f64, for the sums of many terms).
const ROUNDING: f64 = 9.094947017729282e-13;

/// How a rod's Newton solve ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NewtonReport {
    /// Iterations taken.
    pub iterations: u32,
    /// Largest net force on a free vertex at the end (N).
    pub force_residual: f64,
    /// Largest net torque on a free twist angle at the end (N·m).
    pub torque_residual: f64,
    /// The force and torque the residuals had to get below.
    pub force_tolerance: f64,
    /// See `force_tolerance` (N·m).
    pub torque_tolerance: f64,
    /// Whether both got below their tolerances.
    pub converged: bool,
    /// Why an unconverged solve ended.
    pub stop: Stop,
}

/// Why a Newton solve ended without converging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stop {
    /// It converged (or has not ended).
    #[default]
    None,
    /// `max_iterations` taken.
    Iterations,
    /// No shift up to 10⁴ of the diagonal made the Hessian definite.
    NoDirection,
    /// The line search found no lower Φ along the step down to 2⁻²⁹ of it.
    NoDescent,
}

/// The residuals of gradient `g` over the free unknowns: (force, torque).
fn residuals(g: &[f64], fixed: &[bool]) -> (f64, f64) {
    let (mut f, mut t) = (0.0f64, 0.0f64);
    for (i, (&gi, &held)) in g.iter().zip(fixed).enumerate() {
        if held {
            continue;
        }
        if !gi.is_finite() {
            // Not a residual a solve could reach (f64::max would drop a NaN).
            return (f64::INFINITY, f64::INFINITY);
        }
        if i % 4 == 3 {
            t = t.max(gi.abs());
        } else {
            f = f.max(gi.abs());
        }
    }
    (f, t)
}

/// Newton on `start` from `q` (the held unknowns already at their
/// values), in place: returns how it ended. A step that does not lower Φ
/// even shortened to 2⁻²⁹ of itself ends the solve unconverged.
///
/// Each accepted step re-bases the reference vectors on the new tangents
/// (`rebase`), so that no edge's transport spans more than one step's
/// turn: time-parallel transport is singular at a half turn, which a
/// static solve from far away would otherwise reach. The material frames
/// at the iterate, so Φ's value there, do not change.
pub fn solve(start: &Problem, q: &mut [f64], settings: Newton) -> NewtonReport {
    let scales = Scales::of(start.rest, start.inertia, &start.inertia.predicted);
    let mut report = NewtonReport {
        force_tolerance: (settings.tolerance * scales.force).max(scales.force_floor),
        torque_tolerance: (settings.tolerance * scales.torque).max(scales.torque_floor),
        ..Default::default()
    };
    let mut frames = Frames::at(start.frames, q);
    let mut trial = q.to_vec();
    loop {
        let problem = Problem {
            frames: frames.view(),
            ..*start
        };
        let (phi, size) = problem.energy_and_size(q);
        let (mut g, mut h) = problem.derivatives(q, false);
        let hold = |g: &mut [f64], h: &mut Banded| {
            for (i, &held) in problem.fixed.iter().enumerate() {
                if held {
                    g[i] = 0.0;
                    h.fix(i, 1.0);
                }
            }
        };
        hold(&mut g, &mut h);
        (report.force_residual, report.torque_residual) = residuals(&g, problem.fixed);
        report.converged = report.force_residual <= report.force_tolerance
            && report.torque_residual <= report.torque_tolerance;
        if report.converged {
            return report;
        }
        if report.iterations >= settings.max_iterations {
            report.stop = Stop::Iterations;
            return report;
        }
        // Newton's step where the Hessian is positive definite; else the
        // step of the Hessian with each stencil's made semidefinite (a
        // descent direction that keeps the stiff and soft directions
        // apart, where a shift of the whole diagonal would shrink the soft
        // ones' steps to nothing).
        let d = match h.clone().cholesky() {
            Some(c) => {
                let mut d: Vec<f64> = g.iter().map(|x| -x).collect();
                c.solve(&mut d);
                d
            }
            None => {
                let (mut gp, mut hp) = problem.derivatives(q, true);
                hold(&mut gp, &mut hp);
                let Some(d) = newton_direction(&hp, &g, problem.fixed) else {
                    report.stop = Stop::NoDirection;
                    return report;
                };
                d
            }
        };
        // Backtracking (Armijo, 10⁻⁴ of the slope). Where the full step
        // would change Φ by less than its rounding (2⁻⁴⁰ of its terms'
        // sizes: the last iterations of a converging solve), Φ cannot tell
        // better from worse, and the full step is taken.
        let slope: f64 = g.iter().zip(&d).map(|(a, b)| a * b).sum();
        let mut alpha = 1.0;
        let mut accepted = false;
        for _ in 0..30 {
            for i in 0..q.len() {
                trial[i] = q[i] + alpha * d[i];
            }
            curve_step(q, &mut trial, problem.fixed);
            let phi_trial = problem.energy(&trial);
            let below_rounding = alpha == 1.0 && -slope <= size * ROUNDING;
            if phi_trial <= phi + 1e-4 * alpha * slope || below_rounding {
                accepted = true;
                break;
            }
            alpha *= 0.5;
        }
        if !accepted {
            report.stop = Stop::NoDescent;
            return report;
        }
        report.iterations += 1;
        frames = Frames::at(problem.frames, &trial);
        q.copy_from_slice(&trial);
    }
}

/// Each vertex's reference twist at `q` (0 at the ends), each taken the
/// turn nearest `frames.ref_twist` (`vertex_energy`'s).
fn reference_twists(frames: StartFrames, q: &[f64]) -> Vec<f64> {
    let n = frames.ref_twist.len();
    let mut out = vec![0.0; n];
    for (k, m) in out.iter_mut().enumerate().take(n - 1).skip(1) {
        let e = [
            vertex(q, k) - vertex(q, k - 1),
            vertex(q, k + 1) - vertex(q, k),
        ]
        .map(|e| e.normalize());
        let a = [0, 1]
            .map(|j| parallel_transport(frames.ref_u[k - 1 + j], frames.tangent[k - 1 + j], e[j]));
        let p = parallel_transport(a[0], e[0], e[1]);
        let raw = p.cross(a[1]).dot(e[1]).atan2(p.dot(a[1]));
        let turns = ((frames.ref_twist[k] - raw) / std::f64::consts::TAU).round();
        *m = raw + turns * std::f64::consts::TAU;
    }
    out
}

/// The reference vectors carried to the tangents of `q`'s edges, which
/// become the tangents they are carried from.
fn rebase(q: &[f64], tangent: &mut [DVec3], ref_u: &mut [DVec3]) {
    for j in 0..tangent.len() {
        let t = (vertex(q, j + 1) - vertex(q, j)).normalize();
        ref_u[j] = parallel_transport(ref_u[j], tangent[j], t);
        tangent[j] = t;
    }
}

/// The step from `q` to `trial` with each free edge's length as the
/// linearised step changes it: `|e| + ê·Δe` rather than `|e + Δe|`, which
/// is longer by `|Δe⊥|²/(2|e|)` where the step turns the edge. A turn of a
/// soft bending mode by δ would otherwise stretch a stiff edge by δ²/(2l),
/// a force EA δ²/(2l²) that the next iteration must undo: with
/// stretching stiffness 10⁵ times the bending one (hair), Newton zig-zags
/// for tens of iterations. Vertices are walked away from the rod's held end
/// along the trial's edge directions; the correction vanishes with the
/// step, so the solution is unchanged. A rod held at both ends is left as
/// the trial (a walk from one end would move the other held end).
fn curve_step(q: &[f64], trial: &mut [f64], fixed: &[bool]) {
    let n = (q.len() + 1) / 4;
    let held = |i: usize| fixed[x_dof(i, 0)];
    let (first_held, last_held) = (held(0) || held(1), held(n - 1));
    if first_held && last_held {
        return;
    }
    let edges: Vec<(DVec3, f64)> = (0..n - 1)
        .map(|j| {
            let e_old = vertex(q, j + 1) - vertex(q, j);
            let e_new = vertex(trial, j + 1) - vertex(trial, j);
            let len = e_old.length();
            let predicted = len + e_old.dot(e_new - e_old) / len;
            (e_new, predicted)
        })
        .collect();
    let set = |trial: &mut [f64], i: usize, x: DVec3| {
        for c in 0..3 {
            trial[x_dof(i, c)] = x[c];
        }
    };
    if last_held {
        for (j, &(e, l)) in edges.iter().enumerate().rev() {
            if !held(j) {
                let x = vertex(trial, j + 1) - e * (l / e.length());
                set(trial, j, x);
            }
        }
    } else {
        for (j, &(e, l)) in edges.iter().enumerate() {
            if !held(j + 1) {
                let x = vertex(trial, j) + e * (l / e.length());
                set(trial, j + 1, x);
            }
        }
    }
}

/// `h` (a symmetric matrix given by its lower triangle, as `Dual` keeps
/// it) with its negative eigenvalues set to zero: `V max(Λ, 0) Vᵀ`, by
/// Jacobi rotations (to 10⁻¹⁴ of its norm).
#[allow(clippy::needless_range_loop)] // rotations index rows p and q together
pub fn project_psd<const N: usize>(h: &mut [[f64; N]; N]) {
    let mut a = [[0.0; N]; N];
    for i in 0..N {
        for j in 0..=i {
            a[i][j] = h[i][j];
            a[j][i] = h[i][j];
        }
    }
    let norm: f64 = a.iter().flatten().map(|x| x * x).sum::<f64>().sqrt();
    if norm == 0.0 {
        return;
    }
    let mut v = [[0.0; N]; N];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..50 {
        let off: f64 = (0..N)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum::<f64>()
            .sqrt();
        if off <= 1e-14 * norm {
            break;
        }
        for p in 0..N {
            for q in p + 1..N {
                if a[p][q].abs() <= 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..N {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..N {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    for i in 0..N {
        for j in 0..=i {
            h[i][j] = (0..N).map(|k| v[i][k] * a[k][k].max(0.0) * v[j][k]).sum();
        }
    }
}

/// `h`'s lower triangle copied to its upper.
#[allow(clippy::needless_range_loop)] // a matrix and its transpose
fn mirror<const N: usize>(h: &mut [[f64; N]; N]) {
    for i in 0..N {
        for j in 0..i {
            h[j][i] = h[i][j];
        }
    }
}

/// The Newton direction `−(H + μD)⁻¹ g`: μ = 0 where H is positive
/// definite, else the smallest of 10⁻⁸, 10⁻⁷, … times H's diagonal D (at
/// least 10⁻¹² of its largest entry) that makes it so. None if none up
/// to 10⁴ does.
fn newton_direction(h: &Banded, g: &[f64], fixed: &[bool]) -> Option<Vec<f64>> {
    let n = g.len();
    let diag: Vec<f64> = (0..n).map(|i| h.get(i, i)).collect();
    let top = diag.iter().map(|d| d.abs()).fold(0.0, f64::max);
    let mut mu = 0.0;
    for _ in 0..14 {
        let mut shifted = h.clone();
        if mu > 0.0 {
            for i in 0..n {
                if !fixed[i] {
                    shifted.add(i, i, mu * diag[i].abs().max(1e-12 * top));
                }
            }
        }
        if let Some(c) = shifted.cholesky() {
            let mut d: Vec<f64> = g.iter().map(|x| -x).collect();
            c.solve(&mut d);
            return Some(d);
        }
        mu = if mu == 0.0 { 1e-8 } else { mu * 10.0 };
    }
    None
}

/// The non-elastic terms of rod `r` for `integrator` over the step `h`
/// from positions `pos` and velocities `vel` (wind and gravity at `t_end`).
#[allow(clippy::too_many_arguments)]
pub fn inertia_of(
    rods: &RodSet,
    rest: RodRest,
    r: usize,
    integrator: Integrator,
    gravity: DVec3,
    wind: &crate::model::params::Wind,
    t_end: f64,
    h: f64,
    pos: &[DVec3],
    vel: &[DVec3],
) -> Inertia {
    let n = pos.len();
    let mass = &rods.mass[rods.vertices(r)];
    let c = rest.material.drag;
    let moving = integrator != Integrator::Static;
    let mut ine = Inertia {
        inertia: vec![0.0; n],
        predicted: pos.to_vec(),
        drag: vec![0.0; n],
        drag_target: pos.to_vec(),
        weight: (0..n).map(|i| gravity * mass[i]).collect(),
    };
    if moving {
        for i in 0..n {
            let len = super::forces::drag_length(rest.rest_len, i);
            ine.inertia[i] = mass[i] / (h * h);
            ine.predicted[i] = pos[i] + vel[i] * h;
            ine.drag[i] = c * len / h;
            ine.drag_target[i] = pos[i] + wind.at(pos[i], t_end) * h;
        }
    }
    ine
}

/// The held unknowns of rod `r` (clamped ends' vertices and angles) and
/// their values at `t`: positions where the anchors put them, angles from
/// the anchors' material vectors, measured from the reference vectors
/// carried to the clamped edges' tangents (`transport`).
pub fn held_unknowns(
    rods: &RodSet,
    r: usize,
    t: f64,
    frames: StartFrames,
    q: &mut [f64],
    fixed: &mut [bool],
) {
    let n = rods.vertices(r).len();
    let ne = n - 1;
    for (cond, edge) in [(rods.start[r], 0), (rods.end[r], ne - 1)] {
        let EndCondition::Clamped(c) = cond else {
            continue;
        };
        let pose = rods.anchors[c.anchor].pose(t);
        let xa = pose.point(c.local_pos[0]);
        let xb = pose.point(c.local_pos[1]);
        for (i, x) in [(edge, xa), (edge + 1, xb)] {
            for k in 0..3 {
                q[x_dof(i, k)] = x[k];
                fixed[x_dof(i, k)] = true;
            }
        }
        let tangent = (xb - xa).normalize();
        let a = parallel_transport(frames.ref_u[edge], frames.tangent[edge], tangent);
        let m1 = pose.vector(c.local_m1);
        let angle = signed_angle(a, m1, tangent);
        // The turn nearest the angle it had.
        q[theta_dof(edge)] = super::frames::unwrap_angle(angle, q[theta_dof(edge)]);
        fixed[theta_dof(edge)] = true;
    }
}

/// Holds edge 0's angle of a rod whose energy does not change when every
/// angle turns by the same amount: no angle held, isotropic bending and a
/// straight rest shape, so the bending energy is b|κb|²/(2l̄) whatever
/// the material frame and the twist depends on differences of angles.
/// That common turn is a direction in which the Hessian is singular;
/// holding one angle removes it and leaves the minimiser (up to the turn)
/// unchanged.
pub fn hold_common_turn(rest: RodRest, fixed: &mut [bool]) {
    let n = (fixed.len() + 1) / 4;
    let any_held = (0..n - 1).any(|j| fixed[theta_dof(j)]);
    let b = rest.material.bending;
    let isotropic = b[1] == 0.0 && b[0] == b[2];
    let straight = rest
        .rest_kappa
        .iter()
        .all(|k| k.iter().all(|w| *w == glam::DVec2::ZERO));
    if !any_held && isotropic && straight {
        fixed[theta_dof(0)] = true;
    }
}

/// The solve's starting point: the inertial prediction with each edge
/// restored to its rest length, walked away from the rod's held end (each
/// free vertex moved along its edge from the one before it). The
/// prediction alone stretches the edges next to a clamp that moved by its
/// whole step, which the stiff stretching energy then takes Newton many
/// iterations to undo. A rod held at both ends keeps the prediction
/// unchanged; one held at neither is walked from its first vertex.
pub fn initial_guess(rest: RodRest, q: &mut [f64], fixed: &[bool]) {
    let n = (q.len() + 1) / 4;
    let held = |i: usize| fixed[x_dof(i, 0)];
    let walk = |q: &mut [f64], from: usize, to: usize, edge: usize| {
        let (a, b) = (vertex(q, from), vertex(q, to));
        let e = b - a;
        let len = e.length();
        if len > 0.0 {
            let x = a + e * (rest.rest_len[edge] / len);
            for c in 0..3 {
                q[x_dof(to, c)] = x[c];
            }
        }
    };
    if held(n - 1) && !held(0) {
        for i in (0..n - 1).rev() {
            if !held(i) {
                walk(q, i + 1, i, i);
            }
        }
    } else if !held(n - 1) {
        for i in 0..n - 1 {
            if !held(i + 1) {
                walk(q, i, i + 1, i);
            }
        }
    }
}

/// `q` of positions `pos` and angles `theta`.
pub fn pack(pos: &[DVec3], theta: &[f64]) -> Vec<f64> {
    let mut q = vec![0.0; dof_count(pos.len())];
    for (i, x) in pos.iter().enumerate() {
        for c in 0..3 {
            q[x_dof(i, c)] = x[c];
        }
    }
    for (j, &t) in theta.iter().enumerate() {
        q[theta_dof(j)] = t;
    }
    q
}

/// Vertex `i` of `q`.
#[inline]
pub fn vertex(q: &[f64], i: usize) -> DVec3 {
    DVec3::new(q[x_dof(i, 0)], q[x_dof(i, 1)], q[x_dof(i, 2)])
}
