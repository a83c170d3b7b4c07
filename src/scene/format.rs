//! The TOML scene format, as deserialised. Every table rejects unknown keys.
//! Units are SI; angles in scene files are in degrees. See docs/SCENES.md.
//!
//! `[[rods]]` and `[[colliders]]` entries are read by `super::de`: the kind
//! (or shape) first, then the entry as that kind's struct, so that an error
//! inside an entry names its field (`rods[2].segments`).

use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// A 3-vector as written in a scene file, `[x, y, z]`.
pub type V3 = [f64; 3];

/// A whole scene file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// `[sim]`: time stepping and global forces.
    #[serde(default)]
    pub sim: SimSection,
    /// `[materials.NAME]`, by name.
    #[serde(default)]
    pub materials: BTreeMap<String, MaterialSection>,
    /// `[anchors.NAME]`, by name (`world` exists without one).
    #[serde(default)]
    pub anchors: BTreeMap<String, AnchorSection>,
    /// Read by `super::de`, entry by entry.
    #[serde(skip)]
    pub rods: Vec<RodSection>,
    /// Read by `super::de`, entry by entry.
    #[serde(skip)]
    pub colliders: Vec<ColliderSection>,
    /// `[interaction]`, hair–hair interaction; none without the table.
    pub interaction: Option<InteractionSection>,
    /// `[rod_contact]`, rod–rod contact; none without the table.
    pub rod_contact: Option<RodContactSection>,
}

/// `[rod_contact]`: rods of these groups collide with each other and each
/// with itself (defaults in `crate::model::rod_contact`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RodContactSection {
    /// Rod groups whose rods collide.
    pub groups: Vec<String>,
    /// Kinetic friction coefficient μk (default 0.3).
    pub friction: Option<f64>,
    /// Static friction coefficient μs ≥ μk (default: μk).
    pub static_friction: Option<f64>,
    /// Extra distance kept between the two rods' surfaces (m, default 1e-4).
    pub margin: Option<f64>,
}

/// `[interaction]`: hair–hair friction and volume through a grid per group
/// (defaults in `crate::model::interaction`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InteractionSection {
    /// Rod groups that interact, each among its own rods.
    pub groups: Vec<String>,
    /// Cells along the grid's longest side.
    pub resolution: Option<i64>,
    /// Cell size (m), instead of `resolution`.
    pub cell: Option<f64>,
    /// Grown around the group's initial bounds (m).
    pub padding: Option<f64>,
    /// Fraction of the difference to the grid velocity taken per substep at
    /// the roots, in [0, 1] (`crate::model::interaction`).
    pub friction_root: Option<f64>,
    /// The same at the tips, linear in between.
    pub friction_tip: Option<f64>,
    /// kg/m³; default: the densest node of the initial state.
    pub rest_density: Option<f64>,
    /// Fraction of the density-gradient step taken per substep, in [0, 1].
    pub volume_stiffness: Option<f64>,
}

/// `[sim]`: time stepping and global forces; every key has a default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimSection {
    /// Step (frame) length (s).
    pub dt: f64,
    /// `"auto"` (default: from the step limit, `crate::model::stability`) or a count.
    pub substeps: Substeps,
    /// Run a fixed `substeps` above the step limit anyway.
    pub allow_unstable: bool,
    /// Steps `strands run` takes unless `--steps` says otherwise.
    pub steps: u64,
    /// Gravity (m/s², default [0, −9.81, 0]).
    pub gravity: V3,
    /// Linear drag coefficient (N·s/m²) for materials that set none.
    pub drag: f64,
    /// A free vertex faster than this (m/s) stops the run as unstable.
    pub max_speed: f64,
    /// Stopping step of the quasistatic twist solve (rad).
    pub twist_tolerance: f64,
    /// Most Newton iterations of the twist solve per substep.
    pub twist_max_iterations: u32,
    /// `[sim.projection]`: inextensibility.
    pub projection: ProjectionSection,
    /// `[sim.wind]`: wind and gusts.
    pub wind: WindSection,
    /// How a substep advances the rods (`crate::model::params::Integrator`).
    pub integrator: IntegratorName,
    /// `[sim.newton]`: the implicit integrators' stopping rule.
    pub newton: NewtonSection,
}

/// `sim.integrator`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum IntegratorName {
    /// `Integrator::Symplectic` (default).
    #[default]
    Symplectic,
    /// `Integrator::BackwardEuler`.
    BackwardEuler,
    /// `Integrator::ImplicitMidpoint`.
    ImplicitMidpoint,
    /// `Integrator::Static`.
    Static,
}

/// `[sim.newton]` (`crate::model::params::Newton`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NewtonSection {
    /// Net force (torque) at which Newton stops, as a fraction of the
    /// rod's force (torque) scale.
    pub tolerance: f64,
    /// Iteration cap a rod and substep.
    pub max_iterations: u32,
}

impl Default for NewtonSection {
    fn default() -> Self {
        let n = crate::model::params::Newton::default();
        NewtonSection {
            tolerance: n.tolerance,
            max_iterations: n.max_iterations,
        }
    }
}

impl Default for SimSection {
    fn default() -> Self {
        let p = crate::model::params::SimParams::default();
        SimSection {
            dt: p.dt,
            substeps: Substeps::Auto,
            allow_unstable: false,
            steps: 600,
            gravity: p.gravity.to_array(),
            drag: 0.0,
            max_speed: p.max_speed,
            twist_tolerance: p.twist_tolerance,
            twist_max_iterations: p.twist_max_iterations,
            projection: ProjectionSection::default(),
            wind: WindSection::default(),
            integrator: IntegratorName::default(),
            newton: NewtonSection::default(),
        }
    }
}

/// `sim.substeps`: `"auto"` or a number of substeps per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Substeps {
    /// From the step limit (`crate::model::stability`).
    Auto,
    /// This many substeps per step.
    Fixed(u64),
}

impl<'de> Deserialize<'de> for Substeps {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Substeps;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a whole number of substeps or \"auto\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Substeps, E> {
                u64::try_from(v)
                    .map(Substeps::Fixed)
                    .map_err(|_| E::custom(format!("must be at least 1 or \"auto\", got {v}")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Substeps, E> {
                Ok(Substeps::Fixed(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Substeps, E> {
                if v == "auto" {
                    Ok(Substeps::Auto)
                } else {
                    Err(E::custom(format!(
                        "expected a whole number of substeps or \"auto\", got \"{v}\""
                    )))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// `sim.projection.method`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProjectionMethod {
    /// The exact per-strand Newton projection (`Projection::Fast`, default).
    Fast,
    /// Jacobi iterations (`Projection::Jacobi`).
    Jacobi,
    /// SHAKE (`Projection::Shake`): keeps energy and momentum.
    Shake,
    /// No inextensibility constraint.
    None,
}

/// `[sim.projection]`: the inextensibility projection.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProjectionSection {
    /// The method (default `fast`).
    pub method: ProjectionMethod,
    /// Jacobi: iterations per substep.
    pub iterations: u32,
    /// Jacobi: relaxation factor in (0, 1].
    pub relaxation: f64,
    /// Fast, Shake: strain tolerance.
    pub tolerance: f64,
    /// Fast, Shake: iteration cap.
    pub max_iterations: u32,
}

impl Default for ProjectionSection {
    fn default() -> Self {
        ProjectionSection {
            method: ProjectionMethod::Fast,
            iterations: 4,
            relaxation: 0.5,
            tolerance: 1e-10,
            max_iterations: 50,
        }
    }
}

/// `[sim.wind]`: a uniform wind plus travelling gusts (`crate::model::params::Wind`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WindSection {
    /// Uniform wind velocity (m/s).
    pub velocity: V3,
    /// Gust amplitude (m/s).
    pub gust_amplitude: f64,
    /// Gust frequency (Hz).
    pub gust_frequency: f64,
    /// Gust wavelength along the wind (m).
    pub gust_wavelength: f64,
}

impl Default for WindSection {
    fn default() -> Self {
        let w = crate::model::params::Wind::default();
        WindSection {
            velocity: w.velocity.to_array(),
            gust_amplitude: w.gust_amplitude,
            gust_frequency: w.gust_frequency,
            gust_wavelength: w.gust_wavelength,
        }
    }
}

/// Either physical constants (density, section, moduli) or stiffnesses given directly.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MaterialSection {
    /// kg/m³
    pub density: Option<f64>,
    /// Circular section radius (m).
    pub radius: Option<f64>,
    /// Elliptic section semi-axes (m): `[a, b]`, a along m1, b along m2.
    pub semi_axes: Option<[f64; 2]>,
    /// Pa
    pub youngs_modulus: Option<f64>,
    /// Pa; default E / (2 (1 + poisson_ratio)).
    pub shear_modulus: Option<f64>,
    /// Default 0.3; only used when shear_modulus is not given.
    pub poisson_ratio: Option<f64>,
    /// N·m²: one number (isotropic), `[b11, b22]` or `[b11, b12, b22]`.
    pub bending_stiffness: Option<Stiffness>,
    /// N·m²
    pub twist_stiffness: Option<f64>,
    /// N (E·A): with stiffnesses given directly, the stretching energy of
    /// the implicit integrators; default none (statics then refuses the
    /// rod). From physical constants it is E·πab.
    pub stretching_stiffness: Option<f64>,
    /// kg/m
    pub mass_per_length: Option<f64>,
    /// N·s/m² (default: sim.drag)
    pub drag: Option<f64>,
}

/// A bending stiffness as written: one number (isotropic) or a list.
#[derive(Debug, Clone)]
pub enum Stiffness {
    /// One value, b11 = b22, b12 = 0 (N·m²).
    Scalar(f64),
    /// `[b11, b22]` or `[b11, b12, b22]` (N·m²).
    List(Vec<f64>),
}

impl<'de> Deserialize<'de> for Stiffness {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Stiffness;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, [b11, b22] or [b11, b12, b22]")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Stiffness, E> {
                Ok(Stiffness::Scalar(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Stiffness, E> {
                Ok(Stiffness::Scalar(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Stiffness, E> {
                Ok(Stiffness::Scalar(v as f64))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Stiffness, A::Error> {
                let mut l = Vec::new();
                while let Some(x) = seq.next_element::<f64>()? {
                    l.push(x);
                }
                Ok(Stiffness::List(l))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[anchors.NAME]`: a rigid motion that clamped ends and colliders follow.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorSection {
    /// The point rotations turn about (m, world, default the origin).
    #[serde(default)]
    pub pivot: V3,
    /// Poses over time, interpolated between; none: the anchor stays put.
    #[serde(default)]
    pub keyframes: Vec<KeyframeSection>,
}

/// One pose of an anchor.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyframeSection {
    /// s
    pub t: f64,
    /// m
    #[serde(default)]
    pub translation: V3,
    /// Rotation vector in degrees (axis × angle) about the pivot.
    #[serde(default)]
    pub rotation: V3,
}

/// An enum written as one of a few strings; any other value is refused
/// listing them (`invalid type: boolean `true`, expected `free` or `clamped``).
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub enum $name {
            $($(#[$vdoc])* #[doc = concat!("Written `", $text, "`.")] $variant,)*
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        let names: &[&str] = &[$(concat!("`", $text, "`")),*];
                        f.write_str(&names.join(" or "))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        match v {
                            $($text => Ok($name::$variant),)*
                            _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                        }
                    }
                }
                d.deserialize_str(Visitor)
            }
        }
    };
}

named_enum!(
    /// `start`, `end` of a rod: how that end is held.
    EndKind {
        #[default]
        /// Free: nothing holds it.
        Free = "free",
        /// Clamped: its end edge follows an anchor, material frame included.
        Clamped = "clamped",
    }
);

named_enum!(
    /// `rest_shape` of a rod.
    RestShape {
        /// The initial shape is the rest shape.
        #[default]
        Initial = "initial",
        /// Naturally straight, with the initial edge lengths.
        Straight = "straight",
    }
);

/// Fields every rod entry has, whatever its kind.
macro_rules! rod_kind {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Name in messages and output (default `rods[i]`, numbered for generators).
            pub name: Option<String>,
            /// A key of `[materials]`.
            pub material: String,
            /// Default: free (clamped for scalp and grass).
            pub start: Option<EndKind>,
            /// Default: free.
            pub end: Option<EndKind>,
            /// Anchor a clamped start follows (default "world", fixed).
            pub start_anchor: Option<String>,
            /// Anchor a clamped end follows (default "world", fixed).
            pub end_anchor: Option<String>,
            /// The rest shape (default: the initial shape).
            #[serde(default)]
            pub rest_shape: RestShape,
            /// Angle (degrees) of the material frame about the first edge.
            #[serde(default)]
            pub frame_angle: f64,
            /// Interaction group (default "default"); see `[interaction]`.
            pub group: Option<String>,
            /// Initial velocity (m/s) of every vertex; only for rods with
            /// both ends free.
            pub velocity: Option<V3>,
            /// Initial angular velocity (degrees/s) about each rod's centre
            /// of mass; only for rods with both ends free.
            pub angular_velocity: Option<V3>,
            $($(#[$fdoc])* pub $field: $ty,)*
        }
    };
}

rod_kind!(
    /// An explicit polyline.
    PolylineRod {
        /// The vertices (m, world), at least 2.
        points: Vec<V3>,
        /// Optional rest shape (same vertex count and edge lengths).
        rest_points: Option<Vec<V3>>,
    }
);

rod_kind!(
    /// A straight rod between two points.
    StraightRod {
        /// First vertex (m).
        from: V3,
        /// Last vertex (m).
        to: V3,
        /// Edges.
        segments: usize,
    }
);

rod_kind!(
    /// A helix (curly rest shape) around an axis.
    HelixRod {
        /// Point on the axis where the helix starts.
        center: V3,
        /// Axis direction (default +z).
        #[serde(default = "default_axis")]
        axis: V3,
        /// Helix radius (m).
        radius: f64,
        /// Rise per turn along the axis (m).
        pitch: f64,
        /// Number of turns.
        turns: f64,
        /// Edges.
        segments: usize,
    }
);

rod_kind!(
    /// Hair strands rooted on a sphere ("scalp").
    ScalpRods {
        /// Centre of the scalp sphere (m).
        center: V3,
        /// Scalp radius (m): roots lie on it.
        radius: f64,
        /// Number of strands.
        count: usize,
        /// Strand length (m).
        length: f64,
        /// Edges per strand.
        segments: usize,
        /// Direction of the crown.
        #[serde(default = "default_up")]
        up: V3,
        /// Roots cover the cap within this angle (degrees) of `up`.
        #[serde(default = "default_cap")]
        cap_angle: f64,
        /// Curl radius (m); 0 for straight hair.
        #[serde(default)]
        curl_radius: f64,
        /// Arc length per curl turn (m).
        #[serde(default = "default_curl_period")]
        curl_period: f64,
        /// Strand lengths vary uniformly by ± this fraction.
        #[serde(default)]
        length_variation: f64,
        /// Seed of the random placement (default 1).
        #[serde(default = "default_seed")]
        seed: u64,
    }
);

rod_kind!(
    /// Grass blades standing on a horizontal patch.
    GrassRods {
        /// Corner of the patch (m); blades stand on its plane.
        origin: V3,
        /// Extent along x and z (m).
        size: [f64; 2],
        /// Number of blades.
        count: usize,
        /// Blade height (m).
        height: f64,
        /// Edges per blade.
        segments: usize,
        /// Largest random lean from vertical (degrees).
        #[serde(default = "default_lean")]
        lean: f64,
        /// Natural bend of a blade, total turning over its height (degrees).
        #[serde(default = "default_bend")]
        bend: f64,
        /// Heights vary uniformly by ± this fraction.
        #[serde(default)]
        height_variation: f64,
        /// Seed of the random placement (default 1).
        #[serde(default = "default_seed")]
        seed: u64,
    }
);

rod_kind!(
    /// Strands read from a groom file (`.hair`, or USD `BasisCurves`):
    /// roots clamped (to `start_anchor`), tips free.
    GroomRods {
        /// Path, relative to the scene file.
        file: String,
        /// File units to metres (default 1).
        #[serde(default = "default_scale")]
        scale: f64,
        /// Rotation vector (degrees), applied after scaling.
        #[serde(default)]
        rotation: V3,
        /// Translation (m), applied last.
        #[serde(default)]
        translation: V3,
        /// Resample every strand to this many equal segments; default: keep the file's points.
        segments: Option<usize>,
        /// Take every k-th strand of the file (default 1: all).
        #[serde(default = "default_every")]
        every: usize,
        /// Then at most this many strands (default: all).
        max_strands: Option<usize>,
    }
);

fn default_scale() -> f64 {
    1.0
}
fn default_every() -> usize {
    1
}
fn default_axis() -> V3 {
    [0.0, 0.0, 1.0]
}
fn default_up() -> V3 {
    [0.0, 1.0, 0.0]
}
fn default_cap() -> f64 {
    70.0
}
fn default_curl_period() -> f64 {
    0.05
}
fn default_lean() -> f64 {
    10.0
}
fn default_bend() -> f64 {
    20.0
}
fn default_seed() -> u64 {
    1
}

/// A `[[rods]]` entry; `kind` selects the variant.
#[derive(Debug)]
pub enum RodSection {
    /// `kind = "polyline"`.
    Polyline(PolylineRod),
    /// `kind = "straight"`.
    Straight(StraightRod),
    /// `kind = "helix"`.
    Helix(HelixRod),
    /// `kind = "scalp"`.
    Scalp(ScalpRods),
    /// `kind = "grass"`.
    Grass(GrassRods),
    /// `kind = "groom"`.
    Groom(GroomRods),
}

impl RodSection {
    /// The values `kind` may take.
    pub const KINDS: &[&str] = &["polyline", "straight", "helix", "scalp", "grass", "groom"];

    /// The entry (without its `kind` key) as the struct of `kind`, one of `KINDS`.
    pub fn of_kind<'de, D: Deserializer<'de>>(kind: &str, d: D) -> Result<Self, D::Error> {
        Ok(match kind {
            "polyline" => RodSection::Polyline(Deserialize::deserialize(d)?),
            "straight" => RodSection::Straight(Deserialize::deserialize(d)?),
            "helix" => RodSection::Helix(Deserialize::deserialize(d)?),
            "scalp" => RodSection::Scalp(Deserialize::deserialize(d)?),
            "grass" => RodSection::Grass(Deserialize::deserialize(d)?),
            "groom" => RodSection::Groom(Deserialize::deserialize(d)?),
            _ => return Err(serde::de::Error::unknown_variant(kind, Self::KINDS)),
        })
    }
}

/// Fields every collider has, whatever its shape.
macro_rules! collider_shape {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Default `colliders[i]`.
            pub name: Option<String>,
            /// Anchor it rides on (default "world", fixed).
            pub anchor: Option<String>,
            /// Kinetic friction coefficient μk (default 0.3).
            pub friction: Option<f64>,
            /// Static friction coefficient μs ≥ μk (default: μk).
            pub static_friction: Option<f64>,
            /// Extra distance kept beyond the strand radius (m, default 1e-4).
            pub margin: Option<f64>,
            $($(#[$fdoc])* pub $field: $ty,)*
        }
    };
}

collider_shape!(
    /// A ball.
    SphereCollider {
        /// Centre (m).
        center: V3,
        /// Radius (m).
        radius: f64,
    }
);

collider_shape!(
    /// All points within `radius` of the segment `a`–`b`.
    CapsuleCollider {
        /// One end of the core segment (m).
        a: V3,
        /// The other end (m).
        b: V3,
        /// Radius (m).
        radius: f64,
    }
);

collider_shape!(
    /// The half-space under the plane through `point`; `normal` points out
    /// of the solid (up, for a ground).
    PlaneCollider {
        /// A point of the plane (m, default the origin).
        #[serde(default)]
        point: V3,
        /// Outward normal (default +y).
        #[serde(default = "default_up")]
        normal: V3,
    }
);

collider_shape!(
    /// A closed triangle mesh (OBJ, glTF or GLB), baked to a signed distance field.
    MeshCollider {
        /// Path, relative to the scene file.
        file: String,
        /// SDF cell size (m); default: 1/48 of the mesh's largest extent.
        cell: Option<f64>,
    }
);

/// A `[[colliders]]` entry; `shape` selects the variant. Collider
/// positions are world coordinates at t = 0.
#[derive(Debug)]
pub enum ColliderSection {
    /// `shape = "sphere"`.
    Sphere(SphereCollider),
    /// `shape = "capsule"`.
    Capsule(CapsuleCollider),
    /// `shape = "plane"`.
    Plane(PlaneCollider),
    /// `shape = "mesh"`.
    Mesh(MeshCollider),
}

impl ColliderSection {
    /// The values `shape` may take.
    pub const SHAPES: &[&str] = &["sphere", "capsule", "plane", "mesh"];

    /// The entry (without its `shape` key) as the struct of `shape`, one of `SHAPES`.
    pub fn of_shape<'de, D: Deserializer<'de>>(shape: &str, d: D) -> Result<Self, D::Error> {
        Ok(match shape {
            "sphere" => ColliderSection::Sphere(Deserialize::deserialize(d)?),
            "capsule" => ColliderSection::Capsule(Deserialize::deserialize(d)?),
            "plane" => ColliderSection::Plane(Deserialize::deserialize(d)?),
            "mesh" => ColliderSection::Mesh(Deserialize::deserialize(d)?),
            _ => return Err(serde::de::Error::unknown_variant(shape, Self::SHAPES)),
        })
    }
}
