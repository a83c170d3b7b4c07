//! Hair–hair interaction through a grid (Petrovic, Henne and
//! Anderson 2005; McAdams et al. 2009): strand mass and momentum are splatted
//! to a regular grid, the grid velocity is blended back into the vertices
//! (hair–hair friction) and vertices are pushed out of regions denser than a
//! rest density (volume). This file is the CPU reference of the splat, in
//! the fixed-point arithmetic the GPU kernel will use, so that both build the
//! same grid bit for bit from the same f32 state (see `docs/INTERACTION.md`
//! for the whole design and what is still to come).
//!
//! Fixed point:
//! * a vertex's grid position is `q = ⌊(x − origin)·(2^FRAC_BITS / cell)⌋`
//!   per axis, computed in f32 from f32 inputs with one subtraction and one
//!   multiplication, both correctly rounded in WGSL and in Rust, and no
//!   addition after a product (nothing a GPU compiler may fuse into an FMA):
//!   the same `q` on both sides. Its node is `q >> FRAC_BITS`, its fraction
//!   `q & (2^FRAC_BITS − 1)`;
//! * the 8 corner weights are products of three integer fractions
//!   (`f` or `2^FRAC_BITS − f`): they sum to exactly `ONE = 2^(3·FRAC_BITS)`;
//! * a vertex's mass is `m_q = round(m / mass_unit)` (host side, identical
//!   for both backends), velocity `v_q = ⌊v·VELOCITY_SCALE⌋` (f32, as `q`);
//! * nodes accumulate `Σ w·m_q` and `Σ w·m_q·v_q` in 64-bit integers (two
//!   32-bit atomics with carry on the GPU). Integer addition is associative,
//!   so the order in which vertices arrive (threads on a GPU) cannot change
//!   the result, and mass and momentum are conserved exactly:
//!   `Σ_nodes mass = ONE·Σ m_q`, `Σ_nodes momentum = ONE·Σ m_q v_q`.
//! * overflow of a node's accumulator is an error (`GridError::Overflow`),
//!   never a wrap.
//!
//! The units (`FRAC_BITS`, `ONE`, `GridGeometry`, the mass
//! quantisation) are the model's, `model::interaction`; the kernels are here.

use glam::DVec3;

use crate::model::interaction::{FRAC_BITS, GridGeometry, ONE};

/// Velocity fixed point: units of 2⁻¹⁶ m/s (15 µm/s; |v| < 32768 m/s in i32).
pub const VELOCITY_SCALE: f32 = 65536.0;

/// Why a grid cannot be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GridError {
    #[error("grid node {node}: its {what} accumulator could overflow the 64-bit fixed-point range")]
    /// A node's accumulator could overflow.
    Overflow {
        /// The node.
        node: usize,
        /// Which accumulator (mass or a momentum component).
        what: &'static str,
    },
}

/// What a splat saw besides the grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Splat {
    /// Vertices whose cell is not inside the grid (they do not interact).
    pub outside: usize,
    /// Largest |v_q| component of the splatted vertices (the GPU's
    /// `atomicMax`), for the overflow bound of `grid_velocity`.
    pub vmax: u32,
}

/// Whether a node of mass accumulator `mass` could hold a momentum
/// accumulator beyond ±2^63 when no vertex is faster than `vmax` (units of
/// 1/VELOCITY_SCALE m/s): |Σ w m_q v_q| ≤ mass·vmax, and the test
/// `(⌊mass/2^32⌋ + 1)·vmax > 2^31` bounds that conservatively in 32-bit
/// integers, the same on both backends. A clamped velocity
/// (`VELOCITY_LIMIT`) always fails.
#[inline]
pub fn could_overflow(mass: i64, vmax: u32) -> bool {
    if vmax == 0 {
        return false;
    }
    let hi = (mass as u64 >> 32) as u32;
    vmax >= VELOCITY_LIMIT || hi.saturating_add(1) > (1u32 << 31) / vmax
}

/// Fixed-point grid position of `x` (f32, world), or `None` when the
/// vertex's cell is not inside the grid (it then does not interact; the
/// caller counts it).
#[inline]
pub fn grid_position(g: &GridGeometry, x: [f32; 3]) -> Option<[i32; 3]> {
    let s = g.scale();
    let mut q = [0i32; 3];
    for a in 0..3 {
        let u = ((x[a] - g.origin[a]) * s).floor();
        let top = ((g.dims[a] - 1) << FRAC_BITS) as f32;
        if !(u >= 0.0 && u < top) {
            return None;
        }
        q[a] = u as i32;
    }
    Some(q)
}

/// The 8 nodes around grid position `q` and their integer weights
/// (summing to `ONE`), corner `c` with bit `a` of `c` set taking the upper
/// node along axis `a`.
#[inline]
pub fn corners(g: &GridGeometry, q: [i32; 3]) -> [(usize, i64); 8] {
    let full = 1i64 << FRAC_BITS;
    let mask = (1i32 << FRAC_BITS) - 1;
    let node = q.map(|v| (v >> FRAC_BITS) as u32);
    let frac = q.map(|v| (v & mask) as i64);
    std::array::from_fn(|c| {
        let mut n = node;
        let mut w = 1i64;
        for a in 0..3 {
            if c >> a & 1 == 1 {
                n[a] += 1;
                w *= frac[a];
            } else {
                w *= full - frac[a];
            }
        }
        (g.node_index(n), w)
    })
}

/// Largest |v_q| the quantisation keeps (2^30, 16384 m/s): faster
/// components are clamped to it, in f32 before the conversion, the same on
/// both backends, and fail the overflow check of `grid_velocity`.
pub const VELOCITY_LIMIT: u32 = 1 << 30;

/// Quantised velocity `⌊v·VELOCITY_SCALE⌋` (f32, as the GPU computes it),
/// clamped to ±`VELOCITY_LIMIT`.
#[inline]
pub fn quantise_velocity(v: [f32; 3]) -> [i64; 3] {
    let l = VELOCITY_LIMIT as f32;
    v.map(|c| (c * VELOCITY_SCALE).floor().clamp(-l, l) as i32 as i64)
}

/// Per-node accumulators of one group's grid.
#[derive(Clone, Debug, Default)]
pub struct GridNodes {
    /// Σ w·m_q.
    pub mass: Vec<i64>,
    /// Σ w·m_q·v_q per axis.
    pub momentum: Vec<[i64; 3]>,
    /// Nodes that hold mass since the last clear (CPU bookkeeping, not part
    /// of the grid: a clear then touches only these, and `grid_velocity`
    /// visits only these, instead of every node).
    pub touched: Vec<u32>,
}

/// Grids are equal when their accumulators are (`touched` is bookkeeping).
impl PartialEq for GridNodes {
    fn eq(&self, other: &Self) -> bool {
        self.mass == other.mass && self.momentum == other.momentum
    }
}

impl GridNodes {
    /// Kernel `grid_clear`: every node zero (on the CPU, only the nodes the
    /// last splat touched need it; on the GPU `grid_velocity` zeroes each
    /// node it read, and `grid_clear` resets only the fastest velocity).
    pub fn clear(&mut self, g: &GridGeometry) {
        let n = g.node_count();
        if self.mass.len() == n && self.momentum.len() == n {
            for &k in &self.touched {
                self.mass[k as usize] = 0;
                self.momentum[k as usize] = [0; 3];
            }
        } else {
            self.mass.clear();
            self.mass.resize(n, 0);
            self.momentum.clear();
            self.momentum.resize(n, [0; 3]);
        }
        self.touched.clear();
    }

    /// Velocity of node `k` (m/s), or `None` for an empty node.
    pub fn velocity(&self, k: usize) -> Option<DVec3> {
        let m = self.mass[k];
        (m > 0).then(|| {
            let p = self.momentum[k];
            DVec3::new(p[0] as f64, p[1] as f64, p[2] as f64) / (m as f64 * VELOCITY_SCALE as f64)
        })
    }
}

/// Kernel `grid_splat` for the vertices `pos`/`vel` (f32, world) with
/// quantised masses `mass_q`: adds each vertex's mass and momentum to its 8
/// nodes. Returns how many vertices fell outside the grid.
pub fn grid_splat(
    g: &GridGeometry,
    nodes: &mut GridNodes,
    pos: &[[f32; 3]],
    vel: &[[f32; 3]],
    mass_q: &[u32],
) -> Result<Splat, GridError> {
    let mut out = Splat::default();
    for ((x, v), &m) in pos.iter().zip(vel).zip(mass_q) {
        if m == 0 {
            continue;
        }
        let Some(q) = grid_position(g, *x) else {
            out.outside += 1;
            continue;
        };
        let vq = quantise_velocity(*v);
        for c in vq {
            out.vmax = out.vmax.max(c.unsigned_abs() as u32);
        }
        for (k, w) in corners(g, q) {
            let wm = w * m as i64;
            if wm > 0 && nodes.mass[k] == 0 {
                nodes.touched.push(k as u32);
            }
            add_share(&mut nodes.mass[k], &mut nodes.momentum[k], k, wm, &vq)?;
        }
    }
    Ok(out)
}

/// Node `k`'s share of a vertex, `wm = w·m_q` of mass and `wm·v_q` of
/// momentum, added to the accumulators `mass` and `momentum`; an overflow
/// is an error naming the node.
pub(super) fn add_share(
    mass: &mut i64,
    momentum: &mut [i64; 3],
    k: usize,
    wm: i64,
    vq: &[i64; 3],
) -> Result<(), GridError> {
    let overflow = |what| GridError::Overflow { node: k, what };
    *mass = mass.checked_add(wm).ok_or(overflow("mass"))?;
    for (p, &u) in momentum.iter_mut().zip(vq) {
        let d = wm.checked_mul(u).ok_or(overflow("momentum"))?;
        *p = p.checked_add(d).ok_or(overflow("momentum"))?;
    }
    Ok(())
}

/// Kernel `grid_velocity`: per node, its velocity (m/s; zero when empty)
/// and pressure `p = max(0, ρ/ρ₀ − 1)` (`pressure_scale` = ρ/ρ₀ per unit
/// of the mass accumulator) into `fields[k] = [vx, vy, vz, p]`. A node whose
/// momentum could overflow (`could_overflow`) is an error naming the
/// largest such node.
pub fn grid_velocity(
    nodes: &GridNodes,
    pressure_scale: f64,
    vmax: u32,
    fields: &mut Vec<[f64; 4]>,
) -> Result<(), GridError> {
    // Nodes not touched are empty and keep zero fields (`GridWork::clear`
    // zeroes the ones this substep's splat touched before the next one).
    if fields.len() != nodes.mass.len() {
        fields.clear();
        fields.resize(nodes.mass.len(), [0.0; 4]);
    }
    // The largest node that could overflow, as the GPU's atomicMax reports it.
    if let Some(k) = nodes
        .touched
        .iter()
        .map(|&k| k as usize)
        .filter(|&k| could_overflow(nodes.mass[k], vmax))
        .max()
    {
        return Err(GridError::Overflow {
            node: k,
            what: "momentum",
        });
    }
    for &k in &nodes.touched {
        let k = k as usize;
        let m = nodes.mass[k];
        let v = nodes.velocity(k).unwrap_or_default();
        let p = (m as f64 * pressure_scale - 1.0).max(0.0);
        fields[k] = [v.x, v.y, v.z, p];
    }
    Ok(())
}

/// Constants of `grid_blend` for one group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Blend {
    /// Substep (s).
    pub h: f64,
    /// β·cell (m): the push for a pressure difference of 1 across a cell.
    pub volume_step: f64,
    /// Largest push per substep (m).
    pub max_push: f64,
}

/// Kernel `grid_blend` for one free vertex at `x` with velocity `v` (the
/// f32 values it was splatted with) and friction factor `friction`: the
/// position change (m) of
/// * friction, `α·(V(x) − v_q)·h`, `V(x)` the node velocities interpolated
///   with the splat's integer weights and `v_q` the vertex's own quantised
///   velocity, so a uniform field asks for nothing;
/// * volume, `−β·cell·∇p` in cell units (the trilinear gradient of the
///   node pressures in the vertex's cell), at most `max_push` long.
///
/// The projection's velocity update turns the change into velocity, as any
/// position correction. Zero when the vertex is outside the grid.
pub fn grid_blend(
    g: &GridGeometry,
    fields: &[[f64; 4]],
    x: [f32; 3],
    v: [f32; 3],
    friction: f64,
    b: Blend,
) -> DVec3 {
    let Some(q) = grid_position(g, x) else {
        return DVec3::ZERO;
    };
    let full = 1i64 << FRAC_BITS;
    let frac = q.map(|c| (c & (full as i32 - 1)) as i64);
    let mut grid_v = DVec3::ZERO;
    let mut grad = DVec3::ZERO;
    for (c, (k, w)) in corners(g, q).into_iter().enumerate() {
        let f = fields[k];
        grid_v += DVec3::new(f[0], f[1], f[2]) * w as f64;
        // ∂w/∂(f_a/32) = ±(the other two factors)/32².
        let factor = |a: usize| {
            if c >> a & 1 == 1 {
                frac[a]
            } else {
                full - frac[a]
            }
        };
        let sign = |a: usize| if c >> a & 1 == 1 { 1.0 } else { -1.0 };
        for a in 0..3 {
            let others = factor((a + 1) % 3) * factor((a + 2) % 3);
            grad[a] += sign(a) * others as f64 * f[3];
        }
    }
    grid_v /= ONE as f64;
    grad /= (full * full) as f64;
    let vq = quantise_velocity(v);
    let own = DVec3::new(vq[0] as f64, vq[1] as f64, vq[2] as f64) / VELOCITY_SCALE as f64;
    let mut push = -grad * b.volume_step;
    let len = push.length();
    if len > b.max_push {
        push *= b.max_push / len;
    }
    (grid_v - own) * (friction * b.h) + push
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::interaction::quantise_masses;

    pub(in crate::cpu) fn rng(seed: u64) -> impl FnMut() -> f32 {
        let mut s = seed;
        move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32) / (1u64 << 24) as f32
        }
    }

    pub(in crate::cpu) fn grid() -> GridGeometry {
        GridGeometry {
            origin: [-0.2, 1.3, -0.2],
            cell: 0.01,
            dims: [41, 41, 41],
        }
    }

    /// Conservation (exact, fixed point): the nodes hold ONE·Σ m_q of mass
    /// and ONE·Σ m_q·v_q of momentum, whatever the vertices' order.
    #[test]
    fn splat_conserves_mass_and_momentum_exactly_in_any_order() {
        let g = grid();
        let mut r = rng(1);
        let n = 5000;
        let pos: Vec<[f32; 3]> = (0..n)
            .map(|_| [-0.19 + 0.38 * r(), 1.31 + 0.38 * r(), -0.19 + 0.38 * r()])
            .collect();
        let vel: Vec<[f32; 3]> = (0..n)
            .map(|_| [r() - 0.5, 2.0 * r() - 1.0, 0.1 * r()])
            .collect();
        let mass: Vec<f64> = (0..n).map(|_| 1e-7 * (0.5 + r() as f64)).collect();
        let (_, mq) = quantise_masses(&mass);
        let mut a = GridNodes::default();
        a.clear(&g);
        assert_eq!(grid_splat(&g, &mut a, &pos, &vel, &mq).unwrap().outside, 0);
        let total_m: i64 = a.mass.iter().sum();
        assert_eq!(total_m, ONE * mq.iter().map(|&m| m as i64).sum::<i64>());
        for ax in 0..3 {
            let total_p: i64 = a.momentum.iter().map(|p| p[ax]).sum();
            let expected: i64 = vel
                .iter()
                .zip(&mq)
                .map(|(v, &m)| m as i64 * quantise_velocity(*v)[ax])
                .sum();
            assert_eq!(total_p, ONE * expected, "axis {ax}");
        }
        // Reversed order: the same grid, bit for bit.
        let rev = |v: &[[f32; 3]]| v.iter().rev().copied().collect::<Vec<_>>();
        let mq_rev: Vec<u32> = mq.iter().rev().copied().collect();
        let mut b = GridNodes::default();
        b.clear(&g);
        grid_splat(&g, &mut b, &rev(&pos), &rev(&vel), &mq_rev).unwrap();
        assert_eq!(a, b);
    }

    /// Trilinear weights: on a grid whose origin and cell are exact in
    /// binary, a vertex on a node puts all its weight there, one halfway
    /// along x splits it evenly between the two nodes, and any vertex's
    /// weights sum to ONE.
    #[test]
    fn corner_weights_are_trilinear() {
        let g = GridGeometry {
            origin: [-0.25, 1.25, -0.25],
            cell: 1.0 / 64.0,
            dims: [33, 33, 33],
        };
        let node = |i: f32, j: f32, k: f32| [-0.25 + i / 64.0, 1.25 + j / 64.0, -0.25 + k / 64.0];
        let on = corners(&g, grid_position(&g, node(3.0, 4.0, 5.0)).unwrap());
        assert_eq!(on[0], (g.node_index([3, 4, 5]), ONE));
        let half = corners(&g, grid_position(&g, node(3.5, 4.0, 5.0)).unwrap());
        assert_eq!(half[0], (g.node_index([3, 4, 5]), ONE / 2));
        assert_eq!(half[1], (g.node_index([4, 4, 5]), ONE / 2));
        let mut r = rng(3);
        for _ in 0..1000 {
            let x = node(32.0 * r(), 32.0 * r(), 32.0 * r());
            if let Some(q) = grid_position(&g, x) {
                assert_eq!(corners(&g, q).iter().map(|c| c.1).sum::<i64>(), ONE);
            }
        }
    }

    /// A uniform velocity field: every non-empty node's velocity is the
    /// field's (to f64 rounding of the integer ratio).
    #[test]
    fn uniform_velocity_gives_uniform_node_velocity() {
        let g = grid();
        let mut r = rng(2);
        let pos: Vec<[f32; 3]> = (0..2000)
            .map(|_| [-0.1 + 0.2 * r(), 1.4 + 0.2 * r(), -0.1 + 0.2 * r()])
            .collect();
        let v = [0.3f32, -1.25, 0.05];
        let vel = vec![v; pos.len()];
        let (_, mq) = quantise_masses(&vec![2e-7; pos.len()]);
        let mut a = GridNodes::default();
        a.clear(&g);
        grid_splat(&g, &mut a, &pos, &vel, &mq).unwrap();
        let vq = quantise_velocity(v);
        let exact = DVec3::new(vq[0] as f64, vq[1] as f64, vq[2] as f64) / VELOCITY_SCALE as f64;
        let mut filled = 0;
        for k in 0..g.node_count() {
            if let Some(u) = a.velocity(k) {
                filled += 1;
                assert!(
                    (u - exact).length() <= 1e-12 * exact.length(),
                    "node {k}: {u}"
                );
            }
        }
        assert!(filled > 1000);
    }

    /// Friction blend (`grid_blend`): in a uniform velocity field every node
    /// has the field's velocity and every vertex's own quantised velocity is
    /// the same, so the blend asks for no change (to f64 rounding of the
    /// integer ratio), whatever the friction factor; with no pressure
    /// (density at rest) the volume term adds nothing either.
    #[test]
    fn uniform_velocity_field_is_unchanged_by_the_blend() {
        let g = grid();
        let mut r = rng(4);
        let pos: Vec<[f32; 3]> = (0..3000)
            .map(|_| [-0.1 + 0.2 * r(), 1.4 + 0.2 * r(), -0.1 + 0.2 * r()])
            .collect();
        let v = [-0.7f32, 0.25, 1.5];
        let vel = vec![v; pos.len()];
        let (_, mq) = quantise_masses(&vec![1e-7; pos.len()]);
        let mut nodes = GridNodes::default();
        nodes.clear(&g);
        let s = grid_splat(&g, &mut nodes, &pos, &vel, &mq).unwrap();
        let mut fields = Vec::new();
        // Pressure scale 0: every node at or below rest density.
        grid_velocity(&nodes, 0.0, s.vmax, &mut fields).unwrap();
        let b = Blend {
            h: 1e-3,
            volume_step: 0.3 * g.cell as f64,
            max_push: 0.5 * g.cell as f64,
        };
        for x in &pos {
            let d = grid_blend(&g, &fields, *x, v, 1.0, b);
            assert!(d.length() <= 1e-15, "{d}");
        }
        // A vertex moving against the field is pulled toward it: a test
        // that can fail.
        let d = grid_blend(&g, &fields, pos[0], [0.7, 0.25, 1.5], 0.5, b);
        assert!((d.x / b.h - 0.5 * (-1.4)).abs() < 1e-4, "{d}");
    }

    /// Volume push: a node denser than rest pushes a vertex in its cell
    /// away from it, by β·cell·Δp (Δp across the cell) and at most half a cell.
    #[test]
    fn volume_pushes_away_from_dense_nodes() {
        let g = GridGeometry {
            origin: [0.0, 0.0, 0.0],
            cell: 0.25,
            dims: [4, 4, 4],
        };
        let mut fields = vec![[0.0; 4]; g.node_count()];
        // Pressure 0.4 on the face x = 2 of cell (1, 1, 1), 0 at x = 1.
        for j in 1..3 {
            for k in 1..3 {
                fields[g.node_index([2, j, k])][3] = 0.4;
            }
        }
        let b = Blend {
            h: 1e-3,
            volume_step: 0.5 * 0.25,
            max_push: 0.125,
        };
        let d = grid_blend(&g, &fields, [0.3, 0.3, 0.3], [0.0; 3], 0.0, b);
        assert!((d.x + 0.5 * 0.25 * 0.4).abs() < 1e-12, "{d}");
        assert!(d.y.abs() < 1e-12 && d.z.abs() < 1e-12, "{d}");
        for f in fields.iter_mut() {
            f[3] *= 100.0;
        }
        let d = grid_blend(&g, &fields, [0.3, 0.3, 0.3], [0.0; 3], 0.0, b);
        assert!(
            (d.length() - 0.125).abs() < 1e-12,
            "clamped to half a cell: {d}"
        );
    }

    /// The overflow bound: fires exactly when (⌊mass/2³²⌋ + 1)·vmax > 2³¹,
    /// and for a clamped velocity.
    #[test]
    fn overflow_bound() {
        assert!(!could_overflow(i64::MAX, 0));
        assert!(!could_overflow((1 << 32) - 1, (1 << 30) - 1));
        assert!(could_overflow(2 << 32, (1 << 30) - 1));
        assert!(!could_overflow(3 << 32, 1 << 29));
        assert!(could_overflow(4 << 32, 1 << 29));
        assert!(could_overflow(1, VELOCITY_LIMIT));
        assert!(!could_overflow(1, VELOCITY_LIMIT - 1));
        assert_eq!(
            quantise_velocity([1e9, -1e9, 1.0]),
            [1 << 30, -(1 << 30), 65536]
        );
    }

    /// Overflow is an error naming the node, not a wrap.
    #[test]
    fn overflow_is_reported() {
        let g = grid();
        let pos = vec![[0.0f32, 1.5, 0.0]; 4];
        let vel = vec![[30000.0f32, 0.0, 0.0]; 4];
        let mq = vec![u32::MAX; 4];
        let mut a = GridNodes::default();
        a.clear(&g);
        let e = grid_splat(&g, &mut a, &pos, &vel, &mq).unwrap_err();
        assert!(
            matches!(
                e,
                GridError::Overflow {
                    what: "momentum",
                    ..
                }
            ),
            "{e}"
        );
    }

    /// Vertices outside the grid are counted, not silently dropped.
    #[test]
    fn outside_vertices_are_counted() {
        let g = grid();
        let pos = vec![[0.0f32, 1.5, 0.0], [5.0, 1.5, 0.0], [0.0, -3.0, 0.0]];
        let vel = vec![[0.0f32; 3]; 3];
        let mut a = GridNodes::default();
        a.clear(&g);
        assert_eq!(
            grid_splat(&g, &mut a, &pos, &vel, &[1, 1, 1])
                .unwrap()
                .outside,
            2
        );
    }
}
