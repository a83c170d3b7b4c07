//! Rod–rod contact: which rods keep out of each other (and each out of
//! itself), with which friction. The stage itself is `src/cpu/rod_contact.rs`;
//! the method is in docs/PHYSICS.md ("Rod–rod contact").
//!
//! Rods belong to named groups (scene `[[rods]] group`, default
//! `"default"`). Every rod of a group listed in the scene's `[rod_contact]
//! groups` collides with every other such rod and with itself. Each edge is
//! a capsule of the rod's contact radius (`RodMaterial::radius`, the larger
//! semi-axis of an elliptic section); two edges touch when their core
//! segments come closer than the sum of their radii plus `margin`.

/// The `[rod_contact]` settings, as checked by the scene loader.
#[derive(Clone, Debug, PartialEq)]
pub struct RodContactSpec {
    /// Groups whose rods collide (with each other and themselves).
    pub groups: Vec<String>,
    /// Kinetic Coulomb friction coefficient μk (default 0.3, as colliders).
    pub friction: f64,
    /// Static Coulomb friction coefficient μs ≥ μk (default μk).
    pub static_friction: f64,
    /// Extra distance kept between the two surfaces (m, default
    /// `colliders::DEFAULT_MARGIN`).
    pub margin: f64,
}

/// Rod–rod contact as a rod set holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RodContact {
    /// Per rod, whether it takes part; empty: no rod does.
    pub member: Vec<bool>,
    /// Kinetic Coulomb friction coefficient μk.
    pub friction: f64,
    /// Static Coulomb friction coefficient μs (≥ μk).
    pub static_friction: f64,
    /// Extra distance kept between the two surfaces (m).
    pub margin: f64,
}

impl RodContact {
    /// Whether any rod takes part.
    pub fn is_active(&self) -> bool {
        self.member.iter().any(|&m| m)
    }
}
