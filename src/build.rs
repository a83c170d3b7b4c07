//! Building the flat `RodSet` and initial `State` from per-rod polylines.

use glam::{DVec2, DVec3};

use crate::cpu::frames::{any_perpendicular, parallel_transport};
use crate::cpu::grid::{GridNodes, grid_splat};
use crate::cpu::twist::{curvature_binormals, vertex_curvatures};
use crate::model::anchor::Anchor;
use crate::model::interaction::{
    GridVertex, GroupGrid, Interaction, InteractionSpec, MAX_GRID_NODES, ONE, Spacing,
    quantise_masses,
};
use crate::model::rod_contact::{RodContact, RodContactSpec};
use crate::model::rods::{Clamp, EndCondition, RodMaterial, RodSet, State};

/// How one end of a rod is held, before the clamp is resolved against its anchor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EndSpec {
    /// A free end.
    Free,
    /// Clamped to the anchor with this index in the anchor list (0 = world).
    Clamped(usize),
}

/// One rod as the user describes it.
#[derive(Clone, Debug)]
pub struct RodSpec {
    /// Name used in messages and results.
    pub name: String,
    /// Initial centerline.
    pub points: Vec<DVec3>,
    /// Rest (undeformed) centerline, same vertex count; its shape defines the
    /// natural curvature, its edge lengths the inextensible lengths.
    pub rest: Vec<DVec3>,
    /// Elastic and inertial constants.
    pub material: RodMaterial,
    /// How the first vertex's edge is held.
    pub start: EndSpec,
    /// How the last vertex's edge is held.
    pub end: EndSpec,
    /// Angle (rad) of the material frame about the first edge, relative to a
    /// fixed perpendicular (for rods of elliptic section: which way the flat side faces).
    pub frame_angle: f64,
}

/// A rod's initial rigid motion: vertex i moves with `v + ω × (xᵢ − c)`,
/// `c` the rod's centre of mass (its lumped vertex masses).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InitialMotion {
    /// v (m/s).
    pub velocity: DVec3,
    /// ω (rad/s).
    pub angular_velocity: DVec3,
}

impl InitialMotion {
    /// Whether there is no motion (v = ω = 0).
    pub fn is_rest(&self) -> bool {
        self.velocity == DVec3::ZERO && self.angular_velocity == DVec3::ZERO
    }

    /// The velocities of vertices at `points` with lumped masses `mass`
    /// (only their ratios matter).
    pub fn velocities(&self, points: &[DVec3], mass: &[f64]) -> Vec<DVec3> {
        let total: f64 = mass.iter().sum();
        let c = points
            .iter()
            .zip(mass)
            .fold(DVec3::ZERO, |c, (x, m)| c + *x * *m)
            / total;
        points
            .iter()
            .map(|x| self.velocity + self.angular_velocity.cross(*x - c))
            .collect()
    }
}

/// Lumped vertex masses of a rod of mass per length `mu` with rest shape
/// `rest`: each vertex carries half of each edge it touches.
pub fn vertex_masses(rest: &[DVec3], mu: f64) -> Vec<f64> {
    let n = rest.len();
    let len = |j: usize| (rest[j + 1] - rest[j]).length();
    (0..n)
        .map(|i| {
            let l = if i > 0 { len(i - 1) } else { 0.0 } + if i + 1 < n { len(i) } else { 0.0 };
            0.5 * mu * l
        })
        .collect()
}

/// Give rod `r` its initial motion: its free vertices (inverse mass > 0)
/// get `motion`'s velocities; vertices held by a clamp keep theirs.
pub fn set_initial_motion(rods: &RodSet, state: &mut State, r: usize, motion: &InitialMotion) {
    let v = rods.vertices(r);
    let vel = motion.velocities(&state.pos[v.clone()], &rods.mass[v.clone()]);
    for (i, u) in v.zip(vel) {
        if rods.inv_mass[i] > 0.0 {
            state.vel[i] = u;
        }
    }
}

/// What is wrong with a rod's geometry.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GeometryError {
    #[error("a rod needs at least 3 vertices (2 edges), got {0}")]
    /// Fewer than 3 vertices (the count).
    TooFewVertices(usize),
    #[error("the initial and rest shapes have different vertex counts ({0} and {1})")]
    /// Initial and rest shapes of different vertex counts.
    RestMismatch(usize, usize),
    #[error("vertex {0} is not a finite number")]
    /// A vertex (index) that is NaN or infinite.
    NonFinite(usize),
    #[error("{shape} edge {edge} has zero length (vertices {edge} and {} coincide)", edge + 1)]
    /// An edge of zero length in the `initial` or `rest` shape.
    #[allow(missing_docs)]
    ZeroLength { shape: &'static str, edge: usize },
    #[error("{shape} edges {} and {edge} fold back onto each other at vertex {edge} (a 180° turn has no curvature binormal)", edge - 1)]
    /// Two edges turning back onto each other in the `initial` or `rest` shape.
    #[allow(missing_docs)]
    FoldBack { shape: &'static str, edge: usize },
    #[error(
        "edge {edge} is {initial} m long in the initial shape but {rest} m at rest; an inextensible rod keeps its edge lengths"
    )]
    /// An edge whose initial and rest lengths differ.
    #[allow(missing_docs)]
    LengthMismatch {
        edge: usize,
        initial: f64,
        rest: f64,
    },
    #[error("the rod has {0} edges, but clamping both ends needs at least 3")]
    /// Both ends clamped with fewer than 3 edges (the count).
    ClampedTooShort(usize),
}

fn check_polyline(p: &[DVec3], shape: &'static str) -> Result<(), GeometryError> {
    if let Some(i) = p.iter().position(|x| !x.is_finite()) {
        return Err(GeometryError::NonFinite(i));
    }
    let scale = p
        .iter()
        .fold(0.0f64, |m, x| m.max(x.abs().max_element()))
        .max(1.0);
    for j in 0..p.len() - 1 {
        if (p[j + 1] - p[j]).length() <= 1e-12 * scale {
            return Err(GeometryError::ZeroLength { shape, edge: j });
        }
    }
    for j in 1..p.len() - 1 {
        let a = (p[j] - p[j - 1]).normalize();
        let b = (p[j + 1] - p[j]).normalize();
        if a.dot(b) < -1.0 + 1e-9 {
            return Err(GeometryError::FoldBack { shape, edge: j });
        }
    }
    Ok(())
}

/// Check one rod's geometry.
pub fn check_rod(spec: &RodSpec) -> Result<(), GeometryError> {
    let n = spec.points.len();
    if n < 3 {
        return Err(GeometryError::TooFewVertices(n));
    }
    if spec.rest.len() != n {
        return Err(GeometryError::RestMismatch(n, spec.rest.len()));
    }
    check_polyline(&spec.points, "initial")?;
    check_polyline(&spec.rest, "rest")?;
    for (j, (a, b)) in spec.points.windows(2).zip(spec.rest.windows(2)).enumerate() {
        let (initial, rest) = ((a[1] - a[0]).length(), (b[1] - b[0]).length());
        if (initial - rest).abs() > 1e-6 * rest {
            return Err(GeometryError::LengthMismatch {
                edge: j,
                initial,
                rest,
            });
        }
    }
    if spec.start != EndSpec::Free && spec.end != EndSpec::Free && n < 4 {
        return Err(GeometryError::ClampedTooShort(n - 1));
    }
    Ok(())
}

/// Tangents and Bishop frame vectors u of a polyline; `u⁰` is
/// `any_perpendicular(t⁰)` turned by `angle` about `t⁰`.
pub fn bishop_frame(p: &[DVec3], angle: f64) -> (Vec<DVec3>, Vec<DVec3>) {
    let t: Vec<DVec3> = p.windows(2).map(|w| (w[1] - w[0]).normalize()).collect();
    let u0 = any_perpendicular(t[0]);
    let mut u = vec![u0 * angle.cos() + t[0].cross(u0) * angle.sin()];
    for j in 1..t.len() {
        let v = parallel_transport(u[j - 1], t[j - 1], t[j]);
        u.push((v - t[j] * v.dot(t[j])).normalize());
    }
    (t, u)
}

/// A rod that cannot be built: which one and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// Its geometry (`check_rod`).
    #[error("rod {rod} (`{name}`): {error}")]
    Geometry {
        /// Index of the rod.
        rod: usize,
        /// Its name.
        name: String,
        /// What is wrong.
        error: GeometryError,
    },
    /// Its material constants.
    #[error("rod {rod} (`{name}`): {error}")]
    Material {
        /// Index of the rod.
        rod: usize,
        /// Its name.
        name: String,
        /// What is wrong.
        error: crate::model::rods::MaterialError,
    },
    /// An end clamped to an anchor index the anchor list does not have.
    #[error(
        "rod {rod} (`{name}`): its {end} is clamped to anchor {anchor}, but there are only {count} anchors (0 is the world)"
    )]
    NoSuchAnchor {
        /// Index of the rod.
        rod: usize,
        /// Its name.
        name: String,
        /// `start` or `end`.
        end: &'static str,
        /// The anchor index asked.
        anchor: usize,
        /// How many anchors there are.
        count: usize,
    },
    /// No anchors at all: index 0 must be the world frame.
    #[error("the anchor list is empty; index 0 must be the world frame (`Anchor::world()`)")]
    NoWorld,
}

/// Check every rod (geometry, material, the anchors its ends are clamped
/// to) and build the flat rod set and initial state: for rods made in code.
pub fn try_build(specs: &[RodSpec], anchors: Vec<Anchor>) -> Result<(RodSet, State), BuildError> {
    if anchors.is_empty() {
        return Err(BuildError::NoWorld);
    }
    for (r, spec) in specs.iter().enumerate() {
        let name = || spec.name.clone();
        check_rod(spec).map_err(|error| BuildError::Geometry {
            rod: r,
            name: name(),
            error,
        })?;
        spec.material
            .check()
            .map_err(|error| BuildError::Material {
                rod: r,
                name: name(),
                error,
            })?;
        for (end, e) in [("start", spec.start), ("end", spec.end)] {
            if let EndSpec::Clamped(a) = e
                && a >= anchors.len()
            {
                return Err(BuildError::NoSuchAnchor {
                    rod: r,
                    name: name(),
                    end,
                    anchor: a,
                    count: anchors.len(),
                });
            }
        }
    }
    Ok(build(specs, anchors))
}

/// Build the flat rod set and initial state (θ = 0: material frame = Bishop
/// frame, at rest in the rest shape). Rods must have passed `check_rod` and
/// name only anchors in `anchors`; [`try_build`] checks that and returns an
/// error where this panics.
pub fn build(specs: &[RodSpec], anchors: Vec<Anchor>) -> (RodSet, State) {
    let mut rods = RodSet {
        vertex_offset: vec![0],
        anchors,
        ..Default::default()
    };
    let mut state = State::default();
    for spec in specs {
        let n = spec.points.len();
        // Rest data.
        let rest_len: Vec<f64> = spec
            .rest
            .windows(2)
            .map(|w| (w[1] - w[0]).length())
            .collect();
        let (rt, ru) = bishop_frame(&spec.rest, spec.frame_angle);
        let mut kb = vec![DVec3::ZERO; n];
        curvature_binormals(&spec.rest, &mut kb);
        let frame = |j: usize| (ru[j], rt[j].cross(ru[j]));
        let mut voronoi = vec![0.0; n];
        let mut kappa = vec![[DVec2::ZERO; 2]; n];
        for i in 1..n - 1 {
            voronoi[i] = rest_len[i - 1] + rest_len[i];
            kappa[i] = vertex_curvatures(kb[i], frame(i - 1), frame(i));
        }
        let mass = vertex_masses(&spec.rest, spec.material.mass_per_length);
        let mut inv_mass: Vec<f64> = mass.iter().map(|m| 1.0 / m).collect();
        // Initial state.
        let (t, u) = bishop_frame(&spec.points, spec.frame_angle);
        let mut clamp = |e: EndSpec, j: usize| match e {
            EndSpec::Free => EndCondition::Free,
            EndSpec::Clamped(a) => {
                let Some(anchor) = rods.anchors.get(a) else {
                    panic!(
                        "rod `{}` is clamped to anchor {a}, but there are {} anchors; use try_build to get this as an error",
                        spec.name,
                        rods.anchors.len()
                    )
                };
                let pose = anchor.pose(0.0);
                inv_mass[j] = 0.0;
                inv_mass[j + 1] = 0.0;
                EndCondition::Clamped(Clamp {
                    anchor: a,
                    local_pos: [
                        pose.inverse_point(spec.points[j]),
                        pose.inverse_point(spec.points[j + 1]),
                    ],
                    local_m1: pose.inverse_vector(u[j]),
                })
            }
        };
        let start = clamp(spec.start, 0);
        let end = clamp(spec.end, n - 2);
        rods.names.push(spec.name.clone());
        rods.material.push(spec.material);
        rods.start.push(start);
        rods.end.push(end);
        rods.rest_len.extend(rest_len);
        rods.voronoi.extend(voronoi);
        rods.rest_kappa.extend(kappa);
        rods.mass.extend(mass);
        rods.inv_mass.extend(inv_mass);
        rods.vertex_offset
            .push(rods.vertex_offset.last().unwrap() + n);
        state.pos.extend(&spec.points);
        state.vel.extend(std::iter::repeat_n(DVec3::ZERO, n));
        state.theta.extend(std::iter::repeat_n(0.0, n - 1));
        state.tangent.extend(t);
        state.ref_u.extend(u);
    }
    (rods, state)
}

/// A straight polyline with the same edge lengths as `points`, along its first edge.
pub fn straightened(points: &[DVec3]) -> Vec<DVec3> {
    let t = (points[1] - points[0]).normalize_or(DVec3::X);
    let mut out = vec![points[0]];
    for w in points.windows(2) {
        out.push(*out.last().unwrap() + t * (w[1] - w[0]).length());
    }
    out
}

/// The rods of group `groups[gi]` of table `table` (`rod_group[r]`: rod
/// `r`'s group), refused where the group is listed twice or no rod has it.
fn group_members(
    table: &str,
    groups: &[String],
    gi: usize,
    rod_group: &[String],
) -> Result<Vec<usize>, (String, String)> {
    let name = &groups[gi];
    let field = format!("{table}.groups[{gi}]");
    if groups[..gi].contains(name) {
        return Err((field, format!("group `{name}` is listed twice")));
    }
    let members: Vec<usize> = (0..rod_group.len())
        .filter(|&r| rod_group[r] == *name)
        .collect();
    if members.is_empty() {
        let mut known: Vec<&str> = rod_group.iter().map(String::as_str).collect();
        known.sort();
        known.dedup();
        return Err((
            field,
            format!(
                "unknown group `{name}`: no rod has it (the rods' groups: {})",
                known.join(", ")
            ),
        ));
    }
    Ok(members)
}

/// Rod–rod contact of a scene's `[rod_contact]` settings: the rods of the
/// listed groups (`rod_group[r]` is rod `r`'s group name). Errors are
/// `(field, message)` for the scene loader.
pub fn build_rod_contact(
    spec: &RodContactSpec,
    rod_group: &[String],
) -> Result<RodContact, (String, String)> {
    let mut member = vec![false; rod_group.len()];
    for gi in 0..spec.groups.len() {
        for r in group_members("rod_contact", &spec.groups, gi, rod_group)? {
            member[r] = true;
        }
    }
    Ok(RodContact {
        member,
        friction: spec.friction,
        static_friction: spec.static_friction,
        margin: spec.margin,
    })
}

/// The hair–hair interaction of built rods (`RodSet::interaction`) from
/// a scene's `[interaction]` settings.
///
/// Place each group's grid over its rods' initial state. `rod_group[r]`
/// is rod `r`'s group name. Errors are `(field, message)` for the scene
/// loader.
///
/// A group whose scene gives no rest density gets the densest node of
/// its initial grid, splatted by the CPU reference
/// (`cpu::grid::grid_splat`), for both backends.
pub fn build_interaction(
    rods: &RodSet,
    state: &State,
    spec: &InteractionSpec,
    rod_group: &[String],
) -> Result<Interaction, (String, String)> {
    let mut out = Interaction::default();
    if spec.groups.is_empty() {
        return Ok(out);
    }
    out.vertex = vec![GridVertex::default(); rods.vertex_count()];
    for (gi, name) in spec.groups.iter().enumerate() {
        let members = group_members("interaction", &spec.groups, gi, rod_group)?;
        let group = place_group(rods, state, spec, name, &members)?;
        // Per-vertex data: quantised masses over the whole group, the
        // friction factor by arc-length fraction along each rod.
        let verts: Vec<usize> = members.iter().flat_map(|&r| rods.vertices(r)).collect();
        let masses: Vec<f64> = verts.iter().map(|&v| rods.mass[v]).collect();
        let (_, mass_q) = quantise_masses(&masses);
        for (&v, &m) in verts.iter().zip(&mass_q) {
            out.vertex[v].group = gi as u32;
            out.vertex[v].mass_q = m;
        }
        for &r in &members {
            let e = rods.edges(r);
            let total: f64 = rods.rest_len[e.clone()].iter().sum();
            let mut s = 0.0;
            for (i, v) in rods.vertices(r).enumerate() {
                if i > 0 {
                    s += rods.rest_len[e.start + i - 1];
                }
                let f = s / total;
                out.vertex[v].friction =
                    spec.friction_root + (spec.friction_tip - spec.friction_root) * f;
            }
        }
        out.groups.push(group);
    }
    // Rest densities left to the initial state: the densest node.
    for (gi, g) in out.groups.iter_mut().enumerate() {
        if !g.rest_density_from_state {
            continue;
        }
        let geometry = g.geometry_at(&rods.anchors, state.time);
        let (pos, vel, mass_q) = group_vertices(&out.vertex, gi, state);
        let mut nodes = GridNodes::default();
        nodes.clear(&geometry);
        grid_splat(&geometry, &mut nodes, &pos, &vel, &mass_q).map_err(|e| {
            (
                format!("interaction.groups[{gi}]"),
                format!("initial grid: {e}"),
            )
        })?;
        let densest = nodes.mass.iter().copied().max().unwrap_or(0);
        g.rest_density = densest as f64 * g.mass_unit / (ONE as f64 * g.cell.powi(3));
    }
    Ok(out)
}

/// The grid of one group over where its members can reach.
fn place_group(
    rods: &RodSet,
    state: &State,
    spec: &InteractionSpec,
    name: &str,
    members: &[usize],
) -> Result<GroupGrid, (String, String)> {
    // Where each rod can reach (see `InteractionSpec::padding`).
    let mut lo = DVec3::splat(f64::INFINITY);
    let mut hi = DVec3::splat(f64::NEG_INFINITY);
    let mut anchor_uses = vec![0usize; rods.anchors.len()];
    for &r in members {
        let length: f64 = rods.rest_len[rods.edges(r)].iter().sum();
        let verts = rods.vertices(r);
        let clamped: Vec<DVec3> = verts
            .clone()
            .filter(|&v| rods.inv_mass[v] == 0.0)
            .map(|v| state.pos[v])
            .collect();
        let mut anchor = None;
        for end in [rods.start[r], rods.end[r]] {
            if let EndCondition::Clamped(c) = end {
                anchor_uses[c.anchor] += 1;
                anchor = Some(c.anchor);
            }
        }
        let (a, b) = match anchor {
            None => {
                let (a, b) = bounds(verts.map(|v| state.pos[v]));
                (a - DVec3::splat(length), b + DVec3::splat(length))
            }
            Some(k) if rods.anchors[k].rotates() => {
                let pivot = rods.anchors[k].pose(state.time).offset();
                let reach = clamped
                    .iter()
                    .map(|c| (*c - pivot).length())
                    .fold(0.0, f64::max)
                    + length;
                (pivot - DVec3::splat(reach), pivot + DVec3::splat(reach))
            }
            Some(_) => {
                let (a, b) = bounds(clamped.into_iter());
                (a - DVec3::splat(length), b + DVec3::splat(length))
            }
        };
        lo = lo.min(a);
        hi = hi.max(b);
    }
    let padding = spec.padding.unwrap_or(0.0);
    lo -= DVec3::splat(padding);
    hi += DVec3::splat(padding);
    let extent = hi - lo;
    let cell = match spec.spacing {
        Spacing::Resolution(n) => extent.max_element() / n as f64,
        Spacing::Cell(c) => c,
    };
    // A cell exact in f32, so both backends scale by the same number.
    let cell = cell as f32 as f64;
    let dims = extent
        .to_array()
        .map(|e| (e / cell).ceil().max(1.0) as u64 + 1);
    let nodes: u64 = dims.iter().product();
    if nodes > MAX_GRID_NODES as u64 {
        return Err((
            "interaction".into(),
            format!(
                "group `{name}`: a grid of {}×{}×{} nodes ({nodes}) for cell {cell:.3e} m over {:.3}×{:.3}×{:.3} m is above the limit of {MAX_GRID_NODES} nodes; use a larger cell or a lower resolution",
                dims[0], dims[1], dims[2], extent.x, extent.y, extent.z
            ),
        ));
    }
    let anchor = (0..anchor_uses.len())
        .max_by_key(|&a| (anchor_uses[a], std::cmp::Reverse(a)))
        .filter(|&a| anchor_uses[a] > 0)
        .unwrap_or(0);
    let masses: Vec<f64> = members
        .iter()
        .flat_map(|&r| rods.vertices(r))
        .map(|v| rods.mass[v])
        .collect();
    let (mass_unit, _) = quantise_masses(&masses);
    Ok(GroupGrid {
        name: name.to_string(),
        rods: members.to_vec(),
        anchor,
        origin: lo - rods.anchors[anchor].pose(state.time).translation,
        cell,
        dims: dims.map(|d| d as u32),
        mass_unit,
        rest_density: spec.rest_density.unwrap_or(0.0),
        rest_density_from_state: spec.rest_density.is_none(),
        volume_stiffness: spec.volume_stiffness,
    })
}

/// Lowest and highest corner of points.
fn bounds(points: impl Iterator<Item = DVec3>) -> (DVec3, DVec3) {
    points.fold(
        (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)),
        |(a, b), p| (a.min(p), b.max(p)),
    )
}

/// The f32 positions, zero velocities and quantised masses of group `gi`'s
/// vertices in `state`.
fn group_vertices(
    vertex: &[GridVertex],
    gi: usize,
    state: &State,
) -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<u32>) {
    let mut pos = Vec::new();
    let mut mass_q = Vec::new();
    for (v, g) in vertex.iter().enumerate() {
        if g.group == gi as u32 {
            pos.push(state.pos[v].as_vec3().to_array());
            mass_q.push(g.mass_q);
        }
    }
    let vel = vec![[0.0; 3]; pos.len()];
    (pos, vel, mass_q)
}
