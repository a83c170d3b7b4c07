//! Colliders: the body and the ground that strands cannot pass through.
//!
//! A collider is a shape fixed to an anchor (`world`, or a scripted one such
//! as the head), so scripted motion carries it. Its geometry is stored in the
//! anchor's rest coordinates (the anchor's pose at time 0 undone), relative to
//! the anchor's pivot, like a clamp: at time `t` a local point `q` is at
//! `pivot + translation(t) + R(t) q` in the world.
//!
//! The contact stage itself is `src/cpu/contact.rs` (CPU) and
//! `shaders/contact.wgsl` (GPU); this module only describes the shapes.

pub mod mesh;

use std::sync::Arc;

use glam::DVec3;

pub use mesh::SdfGrid;

/// Most colliders a scene may have (they live in one uniform buffer on the GPU).
pub const MAX_COLLIDERS: usize = 16;

/// Default contact margin (m): extra distance kept between a strand's surface
/// and a collider's, so that f32 rounding on the GPU never leaves a strand
/// touching the surface from inside.
pub const DEFAULT_MARGIN: f64 = 1e-4;

/// A collider's shape in its anchor's rest coordinates, relative to the pivot.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A ball.
    Sphere {
        /// Centre (m).
        center: DVec3,
        /// Radius (m).
        radius: f64,
    },
    /// All points within `radius` of the segment `a`–`b`.
    Capsule {
        /// One end of the core segment (m).
        a: DVec3,
        /// The other end (m).
        b: DVec3,
        /// Radius (m).
        radius: f64,
    },
    /// The half-space below the plane through `point` with unit `normal`
    /// pointing out of the solid (an infinite ground).
    Plane {
        /// A point of the plane (m).
        point: DVec3,
        /// Unit outward normal.
        normal: DVec3,
    },
    /// A signed distance field baked from a closed triangle mesh; the grid's
    /// origin is relative to the pivot like every other point here.
    Sdf(Arc<SdfGrid>),
}

/// Shape kinds as the GPU numbers them (`Collider.kind` in `shaders/common.wgsl`).
pub mod kind {
    /// `Shape::Sphere`.
    pub const SPHERE: u32 = 0;
    /// `Shape::Capsule`.
    pub const CAPSULE: u32 = 1;
    /// `Shape::Plane`.
    pub const PLANE: u32 = 2;
    /// `Shape::Sdf`.
    pub const SDF: u32 = 3;
}

impl Shape {
    /// The shape's number on the GPU (`kind`).
    pub fn kind(&self) -> u32 {
        match self {
            Shape::Sphere { .. } => kind::SPHERE,
            Shape::Capsule { .. } => kind::CAPSULE,
            Shape::Plane { .. } => kind::PLANE,
            Shape::Sdf(_) => kind::SDF,
        }
    }

    /// Largest motion relative to the collider in one substep (m) after which
    /// pushing a point out along the nearest surface normal still returns it
    /// to the side it came from: the inscribed radius of a sphere or capsule,
    /// the deepest interior point of an SDF; unbounded for a plane. A vertex
    /// that moves farther while crossing the collider may have tunnelled.
    pub fn thickness(&self) -> f64 {
        match self {
            Shape::Sphere { radius, .. } | Shape::Capsule { radius, .. } => *radius,
            Shape::Plane { .. } => f64::INFINITY,
            Shape::Sdf(g) => g.deepest.max(g.cell),
        }
    }
}

/// One collider of a scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Collider {
    /// Name in messages.
    pub name: String,
    /// Its shape.
    pub shape: Shape,
    /// Index of the anchor it rides on (0 = world).
    pub anchor: usize,
    /// Kinetic Coulomb friction coefficient μk.
    pub friction: f64,
    /// Static Coulomb friction coefficient μs (≥ μk).
    pub static_friction: f64,
    /// Extra distance (m) kept beyond the strand's radius.
    pub margin: f64,
}
