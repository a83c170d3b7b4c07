//! The packing of a rod set and its state into the structs the GPU reads
//! (`super::layout`), and back: plain data, no device, so it is tested
//! without a GPU (the tests below). `GpuSimulator` uploads what this makes
//! (`super::buffers`); the kernels it runs are built apart from both
//! (`super::pipelines`).

use std::sync::Arc;

use glam::{DVec3, Vec3};

use super::layout::{
    GpuClamp, GpuColliders, GpuEdgeFrame, GpuGridVertex, GpuPosition, GpuRod, GpuVertexRest, NONE,
};
use crate::model::colliders::Shape;
use crate::model::rods::{EndCondition, RodSet, State};

/// `v` as an f32 `vec4` with `w`.
pub fn vec4(v: DVec3, w: f32) -> [f32; 4] {
    [v.x as f32, v.y as f32, v.z as f32, w]
}

/// The xyz of an f32 `vec4`, in f64.
pub fn dvec3(v: [f32; 4]) -> DVec3 {
    Vec3::new(v[0], v[1], v[2]).as_dvec3()
}

/// Each rod's origin, the point its GPU positions are relative to: its first
/// vertex in `state`, rounded to f32 so host and GPU agree on it exactly.
pub fn rod_origins(rods: &RodSet, state: &State) -> Vec<DVec3> {
    (0..rods.rod_count())
        .map(|r| state.pos[rods.vertex_offset[r]].as_vec3().as_dvec3())
        .collect()
}

/// Where the per-vertex buffers hold each vertex (shaders/common.wgsl
/// `vertex_slot`, which the kernels index them through; WGSL override
/// `INTERLEAVE`). Consecutive: vertex v at element v, each rod's vertices
/// one after another (rods of different lengths, or fewer than
/// `INTERLEAVE_BLOCK`). Interleaved (on every device, for a set of at least
/// `INTERLEAVE_BLOCK` rods of one length n): the rods in blocks of 8, local
/// vertex i of rod r at element 8n⌊r/8⌋ + 8i + (r mod 8) (the last block as
/// wide as the rods it has), so that the rods a CPU adapter's SIMD lanes
/// or a GPU's warp walk at once read neighbouring elements, not streams n
/// elements apart. The same elements in another order: the
/// buffers' sizes are the same, and `pack` and `unpack` move host data
/// between rod order and the buffers'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VertexLayout {
    /// Vertices per rod when interleaved; 0: consecutive.
    pub interleave: u32,
    /// Rods of the set (the last block's width).
    pub rods: u32,
}

/// Rods a SIMD group of a CPU adapter walks at once, the block of the
/// interleaved layout (`VertexLayout`): 8 lanes of 32 bits in lavapipe's
/// 256-bit vectors.
pub const INTERLEAVE_BLOCK: usize = 8;

impl VertexLayout {
    /// Each rod's vertices one after another.
    pub const CONSECUTIVE: VertexLayout = VertexLayout {
        interleave: 0,
        rods: 0,
    };

    /// The layout of `rods`: interleaved where there are at least
    /// `INTERLEAVE_BLOCK` rods, all of one length; else consecutive (rods
    /// of different lengths would need a rod's offset and stride looked up
    /// at every access).
    pub fn of(rods: &RodSet) -> VertexLayout {
        let count = rods.rod_count();
        let n = if count > 0 { rods.vertices(0).len() } else { 0 };
        if count >= INTERLEAVE_BLOCK && (0..count).all(|r| rods.vertices(r).len() == n) {
            VertexLayout {
                interleave: n as u32,
                rods: count as u32,
            }
        } else {
            VertexLayout::CONSECUTIVE
        }
    }

    /// The element of the per-vertex buffers that holds vertex `v`
    /// (`vertex_slot`, the same arithmetic).
    pub fn slot(&self, v: usize) -> usize {
        if self.interleave == 0 {
            return v;
        }
        let n = self.interleave as usize;
        let (r, i) = (v / n, v % n);
        let block = r & !(INTERLEAVE_BLOCK - 1);
        let width = INTERLEAVE_BLOCK.min(self.rods as usize - block);
        block * n + i * width + (r - block)
    }

    /// Per-vertex host data (rod order) in the buffers' order.
    pub fn pack<T: Copy>(&self, x: &[T]) -> Vec<T> {
        if self.interleave == 0 {
            return x.to_vec();
        }
        let mut out = x.to_vec();
        for (v, &e) in x.iter().enumerate() {
            out[self.slot(v)] = e;
        }
        out
    }

    /// A per-vertex buffer's elements back in rod order.
    pub fn unpack<T: Copy>(&self, x: Vec<T>) -> Vec<T> {
        if self.interleave == 0 {
            return x;
        }
        (0..x.len()).map(|v| x[self.slot(v)]).collect()
    }
}

/// A rod set as the GPU reads it: rest data, clamps, colliders, grid data,
/// and the maps between the `RodSet`'s indices and the GPU buffers'.
pub struct Packing {
    /// Per rod: offsets, clamps, stiffness, origin.
    pub rods: Vec<GpuRod>,
    /// Per vertex: rest curvature, Voronoi length, mass, rest length of the
    /// edge starting there, clamp, rod.
    pub rest: Vec<GpuVertexRest>,
    /// The clamped rod ends (one placeholder when there is none: a buffer is
    /// never empty).
    pub clamps: Vec<GpuClamp>,
    /// Per edge of the `RodSet` (flat edge order), the vertex (rod order)
    /// whose element of the GPU's per-vertex buffers holds it (edge j of a
    /// rod at its vertex j; the element is `layout.slot` of that).
    pub edge_index: Vec<usize>,
    /// Per vertex, the world point its GPU position is relative to (shared
    /// with position read-backs in flight).
    pub vertex_origin: Arc<[DVec3]>,
    /// Per interaction group, its first node in the grid buffer; last = all
    /// groups' nodes.
    pub node_offset: Vec<usize>,
    /// Per vertex, its interaction group, quantised mass and friction factor.
    pub grid_vertex: Vec<GpuGridVertex>,
    /// The colliders as the GPU reads them.
    pub colliders: GpuColliders,
    /// Where the per-vertex buffers hold each vertex; `rest`, `grid_vertex`
    /// and every other per-vertex vector here are in rod order
    /// (`VertexLayout::pack` makes the buffers' order).
    pub layout: VertexLayout,
    /// Every SDF collider's grid stacked along z.
    pub sdf: SdfAtlas,
}

/// Every SDF collider's grid stacked along z (1×1×1 when there is none).
pub struct SdfAtlas {
    /// Width, height, depth in texels.
    pub size: [u32; 3],
    /// x fastest, then y, then z.
    pub values: Vec<f32>,
}

impl Packing {
    /// Pack `rods` with rod origins `origin` (`rod_origins`) for buffers in
    /// `layout`.
    pub fn new(rods: &RodSet, origin: &[DVec3], layout: VertexLayout) -> Packing {
        let nv = rods.vertex_count().max(1);
        let mut clamps = Vec::new();
        let mut gpu_rods = Vec::with_capacity(rods.rod_count());
        let mut rest = vec![
            GpuVertexRest {
                clamp: NONE,
                ..Default::default()
            };
            nv
        ];
        let mut edge_index = Vec::with_capacity(rods.edge_count());
        for (r, &rod_origin) in origin.iter().enumerate() {
            let v = rods.vertices(r);
            let e = rods.edges(r);
            let n = v.len();
            let mut clamp_of = |cond: EndCondition, first: usize| match cond {
                EndCondition::Free => NONE,
                EndCondition::Clamped(c) => {
                    let idx = clamps.len() as u32;
                    let pivot = rods.anchors[c.anchor].pivot;
                    clamps.push(GpuClamp {
                        local_pos0: vec4(c.local_pos[0] - pivot, 0.0),
                        local_pos1: vec4(c.local_pos[1] - pivot, 0.0),
                        local_m1: vec4(c.local_m1, 0.0),
                        anchor: c.anchor as u32,
                        ..Default::default()
                    });
                    for k in 0..2 {
                        let g = &mut rest[v.start + first + k];
                        g.clamp = idx;
                        g.clamp_slot = k as u32;
                    }
                    idx
                }
            };
            let start_clamp = clamp_of(rods.start[r], 0);
            let end_clamp = clamp_of(rods.end[r], n - 2);
            let m = &rods.material[r];
            gpu_rods.push(GpuRod {
                vertex_offset: v.start as u32,
                vertex_count: n as u32,
                start_clamp,
                end_clamp,
                bending: [
                    m.bending[0] as f32,
                    m.bending[1] as f32,
                    m.bending[2] as f32,
                    m.twist as f32,
                ],
                origin: vec4(rod_origin, 0.0),
                drag: m.drag as f32,
                radius: m.radius as f32,
                ..Default::default()
            });
            for (i, vi) in v.clone().enumerate() {
                let k = rods.rest_kappa[vi];
                let g = &mut rest[vi];
                g.rest_kappa = [k[0].x as f32, k[0].y as f32, k[1].x as f32, k[1].y as f32];
                g.voronoi = rods.voronoi[vi] as f32;
                g.mass = rods.mass[vi] as f32;
                g.inv_mass = rods.inv_mass[vi] as f32;
                g.rest_len = if i + 1 < n {
                    rods.rest_len[e.start + i] as f32
                } else {
                    0.0
                };
                g.rod = r as u32;
            }
            edge_index.extend((0..n - 1).map(|j| v.start + j));
        }
        if clamps.is_empty() {
            clamps.push(GpuClamp::default());
        }
        let mut node_offset = vec![0usize];
        for g in &rods.interaction.groups {
            let n = g.dims.iter().map(|&d| d as usize).product::<usize>();
            node_offset.push(node_offset.last().unwrap() + n);
        }
        let vertex_origin: Arc<[DVec3]> = (0..rods.rod_count())
            .flat_map(|r| std::iter::repeat_n(origin[r], rods.vertices(r).len()))
            .collect();
        let (colliders, sdf) = colliders_of(rods);
        Packing {
            rods: gpu_rods,
            rest,
            clamps,
            edge_index,
            vertex_origin,
            node_offset,
            grid_vertex: grid_vertices(rods),
            colliders,
            sdf,
            layout,
        }
    }

    /// All interaction groups' grid nodes.
    pub fn node_count(&self) -> usize {
        *self.node_offset.last().unwrap()
    }

    /// Positions of `state` relative to the vertex origins.
    pub fn positions(&self, pos: &[DVec3]) -> Vec<GpuPosition> {
        pos.iter()
            .zip(self.vertex_origin.iter())
            .map(|(&p, o)| GpuPosition::new(p - *o))
            .collect()
    }

    /// World positions of GPU positions (the host twin of kernel
    /// `world_positions`, in f64).
    pub fn world_positions(&self, pos: &[GpuPosition]) -> Vec<DVec3> {
        world_positions(&self.vertex_origin, pos)
    }

    /// The per-vertex frame buffer of `state`'s edges (twist angle in
    /// `tangent.w`; zero at each rod's last vertex, which starts no edge).
    pub fn frames(&self, state: &State) -> Vec<GpuEdgeFrame> {
        let mut frame = vec![GpuEdgeFrame::default(); self.vertex_origin.len().max(1)];
        for (j, &i) in self.edge_index.iter().enumerate() {
            frame[i] = GpuEdgeFrame {
                tangent: vec4(state.tangent[j], state.theta[j] as f32),
                ref_u: vec4(state.ref_u[j], 0.0),
            };
        }
        frame
    }

    /// The state of GPU positions, velocities and frames at `time`.
    pub fn state(
        &self,
        time: f64,
        pos: &[GpuPosition],
        vel: &[[f32; 4]],
        frame: &[GpuEdgeFrame],
    ) -> State {
        let edges = || self.edge_index.iter().map(|&i| frame[i]);
        State {
            time,
            pos: self.world_positions(pos),
            vel: vel.iter().map(|&v| dvec3(v)).collect(),
            theta: edges().map(|f| f.tangent[3] as f64).collect(),
            tangent: edges().map(|f| dvec3(f.tangent)).collect(),
            ref_u: edges().map(|f| dvec3(f.ref_u)).collect(),
        }
    }
}

/// World positions of GPU positions relative to per-vertex origins `origin`.
pub fn world_positions(origin: &[DVec3], pos: &[GpuPosition]) -> Vec<DVec3> {
    pos.iter().zip(origin).map(|(x, o)| *o + x.get()).collect()
}

/// Per vertex, its interaction group, quantised mass, friction factor (−1
/// where the blend leaves it alone: inverse mass 0) and rod.
fn grid_vertices(rods: &RodSet) -> Vec<GpuGridVertex> {
    let inter = &rods.interaction;
    let mut out = vec![
        GpuGridVertex {
            group: NONE,
            ..Default::default()
        };
        rods.vertex_count().max(1)
    ];
    for r in 0..rods.rod_count() {
        for i in rods.vertices(r) {
            let Some(v) = inter.vertex.get(i) else {
                break;
            };
            out[i] = GpuGridVertex {
                group: v.group,
                mass_q: v.mass_q,
                friction: if rods.inv_mass[i] == 0.0 {
                    -1.0
                } else {
                    v.friction as f32
                },
                rod: r as u32,
            };
        }
    }
    out
}

/// The colliders as the GPU reads them, and the SDF atlas.
fn colliders_of(rods: &RodSet) -> (GpuColliders, SdfAtlas) {
    let mut out = <GpuColliders as bytemuck::Zeroable>::zeroed();
    out.count = rods.colliders.len() as u32;
    let grids: Vec<_> = rods
        .colliders
        .iter()
        .filter_map(|c| match &c.shape {
            Shape::Sdf(g) => Some(g.clone()),
            _ => None,
        })
        .collect();
    let width = grids.iter().map(|g| g.dims[0]).max().unwrap_or(1);
    let height = grids.iter().map(|g| g.dims[1]).max().unwrap_or(1);
    let depth = grids.iter().map(|g| g.dims[2]).sum::<u32>().max(1);
    let mut values = vec![0.0f32; (width * height * depth) as usize];
    let mut z0 = 0;
    for (c, g) in rods.colliders.iter().zip(out.items.iter_mut()) {
        g.kind = c.shape.kind();
        g.anchor = c.anchor as u32;
        g.friction = c.friction as f32;
        g.static_friction = c.static_friction as f32;
        g.margin = c.margin as f32;
        let t = c.shape.thickness();
        g.thickness = if t.is_finite() { t as f32 } else { f32::MAX };
        match &c.shape {
            Shape::Sphere { center, radius } => {
                g.p0 = vec4(*center, 0.0);
                g.radius = *radius as f32;
            }
            Shape::Capsule { a, b, radius } => {
                g.p0 = vec4(*a, 0.0);
                g.p1 = vec4(*b, 0.0);
                g.radius = *radius as f32;
            }
            Shape::Plane { point, normal } => {
                g.p0 = vec4(*point, 0.0);
                g.p1 = vec4(*normal, 0.0);
            }
            Shape::Sdf(grid) => {
                g.p0 = vec4(grid.origin, 0.0);
                g.cell = grid.cell as f32;
                let [nx, ny, nz] = grid.dims;
                g.dims = [nx, ny, nz, z0];
                for z in 0..nz {
                    for y in 0..ny {
                        for x in 0..nx {
                            let from = (x + nx * (y + ny * z)) as usize;
                            let to = (x + width * (y + height * (z0 + z))) as usize;
                            values[to] = grid.values[from];
                        }
                    }
                }
                z0 += nz;
            }
        }
    }
    (
        out,
        SdfAtlas {
            size: [width, height, depth],
            values,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{EndSpec, RodSpec, build};
    use crate::model::anchor::Anchor;
    use crate::model::rods::RodMaterial;

    /// Three rods (4, 2 and 5 vertices): clamped at the start, free, and
    /// clamped at both ends, far from the world origin.
    fn rods() -> (RodSet, State) {
        let rod = |n: usize, y: f64, start, end| {
            let points: Vec<DVec3> = (0..n)
                .map(|i| DVec3::new(100.0 + 0.1 * i as f64, y, 0.03 * (i * i) as f64))
                .collect();
            RodSpec {
                name: format!("rod{n}"),
                rest: points.clone(),
                points,
                material: RodMaterial {
                    bending: [2e-3, 1e-4, 1e-3],
                    twist: 5e-4,
                    mass_per_length: 0.01,
                    drag: 0.2,
                    radius: 1e-3,
                    stretching: 0.0,
                },
                start,
                end,
                frame_angle: 0.3,
            }
        };
        build(
            &[
                rod(4, 0.0, EndSpec::Clamped(0), EndSpec::Free),
                rod(2, 1.0, EndSpec::Free, EndSpec::Free),
                rod(5, 2.0, EndSpec::Clamped(0), EndSpec::Clamped(0)),
            ],
            vec![Anchor::world()],
        )
    }

    #[test]
    fn edges_clamps_and_rest_data_land_at_their_vertices() {
        let (rods, state) = rods();
        let p = Packing::new(
            &rods,
            &rod_origins(&rods, &state),
            VertexLayout::CONSECUTIVE,
        );
        // Edge j of a rod sits at its vertex j: rods start at vertices 0, 4, 6.
        assert_eq!(p.edge_index, vec![0, 1, 2, 4, 6, 7, 8, 9]);
        // A rod's last vertex starts no edge: rest length 0 there only.
        for (v, r) in p.rest.iter().enumerate() {
            let last = [3, 5, 10].contains(&v);
            assert_eq!(r.rest_len == 0.0, last, "vertex {v}");
        }
        for (j, &i) in p.edge_index.iter().enumerate() {
            assert_eq!(p.rest[i].rest_len, rods.rest_len[j] as f32);
        }
        // Clamps: rod 0 start (vertices 0, 1), rod 2 start (6, 7) and end (9, 10).
        assert_eq!(p.clamps.len(), 3);
        let clamped: Vec<(usize, u32, u32)> = p
            .rest
            .iter()
            .enumerate()
            .filter(|(_, r)| r.clamp != NONE)
            .map(|(v, r)| (v, r.clamp, r.clamp_slot))
            .collect();
        assert_eq!(
            clamped,
            vec![
                (0, 0, 0),
                (1, 0, 1),
                (6, 1, 0),
                (7, 1, 1),
                (9, 2, 0),
                (10, 2, 1)
            ]
        );
        assert_eq!(
            [
                p.rods[0].start_clamp,
                p.rods[1].start_clamp,
                p.rods[2].end_clamp
            ],
            [0, NONE, 2]
        );
        // The rods of each vertex.
        let rod_of: Vec<u32> = p.rest.iter().map(|r| r.rod).collect();
        assert_eq!(rod_of, vec![0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn a_state_survives_the_round_trip_through_the_gpu_structs() {
        let (rods, mut state) = rods();
        for (i, v) in state.vel.iter_mut().enumerate() {
            *v = DVec3::new(0.5, -0.25, 0.125) * i as f64;
        }
        for (j, t) in state.theta.iter_mut().enumerate() {
            *t = 0.1 * j as f64;
        }
        let origin = rod_origins(&rods, &state);
        let p = Packing::new(&rods, &origin, VertexLayout::CONSECUTIVE);
        // Origins: each rod's first vertex, to f32.
        assert_eq!(origin[2], state.pos[6].as_vec3().as_dvec3());
        let vel: Vec<[f32; 4]> = state.vel.iter().map(|&v| vec4(v, 0.0)).collect();
        let back = p.state(
            state.time,
            &p.positions(&state.pos),
            &vel,
            &p.frames(&state),
        );
        // Positions relative to origins 100 m away keep ~ε × the quantum
        // (1e-13 m: `GpuPosition`), far below f32's ε × 100 m = 1e-5 m.
        for (a, b) in back.pos.iter().zip(&state.pos) {
            assert!((*a - *b).length() < 1e-12, "{a} vs {b}");
        }
        // Velocities, angles and frames: rounded to f32 once.
        let f32_close = |a: f64, b: f64| (a - b).abs() <= f32::EPSILON as f64 * b.abs().max(1.0);
        for (a, b) in back.vel.iter().zip(&state.vel) {
            assert!((0..3).all(|k| f32_close(a[k], b[k])), "{a} vs {b}");
        }
        assert_eq!(back.theta.len(), state.theta.len());
        for (a, b) in back.theta.iter().zip(&state.theta) {
            assert!(f32_close(*a, *b));
        }
        for (a, b) in back.ref_u.iter().zip(&state.ref_u) {
            assert!((0..3).all(|k| f32_close(a[k], b[k])), "{a} vs {b}");
        }
    }

    /// `count` free straight rods of `n` vertices each.
    fn equal_rods(count: usize, n: usize) -> RodSet {
        let specs: Vec<RodSpec> = (0..count)
            .map(|r| {
                let points: Vec<DVec3> = (0..n)
                    .map(|i| DVec3::new(0.1 * i as f64, r as f64, 0.0))
                    .collect();
                RodSpec {
                    name: format!("rod{r}"),
                    rest: points.clone(),
                    points,
                    material: RodMaterial {
                        bending: [1e-3, 0.0, 1e-3],
                        twist: 5e-4,
                        mass_per_length: 0.01,
                        drag: 0.0,
                        radius: 1e-3,
                        stretching: 0.0,
                    },
                    start: EndSpec::Free,
                    end: EndSpec::Free,
                    frame_angle: 0.0,
                }
            })
            .collect();
        build(&specs, vec![Anchor::world()]).0
    }

    /// The interleaved layout as documented (rod r's vertex i at 8n⌊r/8⌋ +
    /// 8i + r mod 8, the last block as wide as its rods): every element of
    /// the buffers holds exactly one vertex, and `unpack` undoes `pack`.
    #[test]
    fn interleaved_slots_are_a_permutation_by_the_rule() {
        let rods = equal_rods(13, 5);
        let layout = VertexLayout::of(&rods);
        assert_eq!(
            layout,
            VertexLayout {
                interleave: 5,
                rods: 13
            }
        );
        // Rod 9 (second block, 5 rods wide), vertex 3: 8·5 + 3·5 + 1.
        assert_eq!(layout.slot(9 * 5 + 3), 56);
        // Rod 2 (first block), vertex 4: 4·8 + 2.
        assert_eq!(layout.slot(2 * 5 + 4), 34);
        let mut seen = [false; 65];
        for v in 0..65 {
            let s = layout.slot(v);
            assert!(!seen[s], "element {s} holds two vertices");
            seen[s] = true;
        }
        let x: Vec<usize> = (0..65).collect();
        let packed = layout.pack(&x);
        assert_eq!(packed[56], 9 * 5 + 3);
        assert_eq!(layout.unpack(packed), x);
        // A rod count that fills its blocks: rod 12 (second block), vertex 2
        // of 3: 8·3 + 2·8 + 4.
        let full = VertexLayout::of(&equal_rods(16, 3));
        assert_eq!(full.slot(12 * 3 + 2), 44);
        let mut seen = [false; 48];
        for v in 0..48 {
            assert!(!std::mem::replace(&mut seen[full.slot(v)], true));
        }
        let x: Vec<usize> = (0..48).collect();
        assert_eq!(full.unpack(full.pack(&x)), x);
    }

    /// Consecutive where fewer rods than a block would share it, and where
    /// the rods differ in length.
    #[test]
    fn rods_are_interleaved_only_when_they_fill_a_block_and_match() {
        assert_eq!(
            VertexLayout::of(&equal_rods(7, 5)),
            VertexLayout::CONSECUTIVE
        );
        assert_eq!(
            VertexLayout::of(&equal_rods(8, 3)),
            VertexLayout {
                interleave: 3,
                rods: 8
            }
        );
        let (mixed, _) = rods();
        assert_eq!(VertexLayout::of(&mixed), VertexLayout::CONSECUTIVE);
        let c = VertexLayout::CONSECUTIVE;
        assert_eq!(
            (0..11).map(|v| c.slot(v)).collect::<Vec<_>>(),
            (0..11).collect::<Vec<_>>()
        );
    }
}
