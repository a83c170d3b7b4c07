//! Scenes: loading TOML (from a file or a string), overrides of single
//! values (`sim.dt=1e-4`), validation, and the rod generators (scalp, grass,
//! helix, straight; also public in [`generators`] for scenes built in code).

mod de;
pub mod format;
pub mod generators;
pub mod limits;
pub mod ranges;

use glam::DVec3;
use std::f64::consts::PI;
use std::path::{Path, PathBuf};

use crate::build::{
    EndSpec, InitialMotion, RodSpec, build, build_interaction, build_rod_contact, check_rod,
    set_initial_motion, straightened, vertex_masses,
};
use crate::model::anchor::{Anchor, Keyframe};
use crate::model::colliders::mesh::{bake_sdf, load_mesh};
use crate::model::colliders::{Collider, DEFAULT_MARGIN, MAX_COLLIDERS, Shape};
use crate::model::interaction::{Interaction, InteractionSpec, Spacing};
use crate::model::params::{Integrator, Newton, Projection, SimParams, Wind};
use crate::model::rod_contact::{RodContact, RodContactSpec};
use crate::model::rods::{RodMaterial, RodSet, State};
use format::*;

/// A scene error: which file, which field, where it was written, what is wrong.
#[derive(Debug)]
pub struct SceneError {
    /// The scene file (or `<string>` for a scene parsed from a string).
    pub file: PathBuf,
    /// Dotted path of the offending value, e.g. `rods[2].segments`.
    pub field: String,
    /// Where the value came from: `line 12` of the file, or the override
    /// that wrote it (`from override sim.dt=abc`).
    pub origin: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SceneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.field)?;
        if let Some(o) = &self.origin {
            write!(f, " ({o})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SceneError {}

impl SceneError {
    /// The same error in the words of a command line that takes overrides
    /// as `flag` (e.g. `--set`): "from override sim.dt=abc" becomes "from
    /// --set sim.dt=abc".
    pub fn with_override_flag(mut self, flag: &str) -> SceneError {
        if let Some(rest) = self.field.strip_prefix("override ") {
            self.field = format!("{flag} {rest}");
        }
        if let Some(o) = &self.origin
            && let Some(rest) = o.strip_prefix("from override ")
        {
            self.origin = Some(format!("from {flag} {rest}"));
        }
        self.message = self
            .message
            .replace("an override changes", &format!("{flag} changes"));
        self
    }
}

/// A scene ready to simulate.
#[derive(Debug, Clone)]
pub struct Scene {
    /// Simulation parameters (`[sim]`).
    pub params: SimParams,
    /// Steps `strands run` takes by default.
    pub steps: u64,
    /// Anchors, `world` first.
    pub anchors: Vec<Anchor>,
    /// Rods, generators expanded.
    pub rods: Vec<RodSpec>,
    /// Colliders.
    pub colliders: Vec<Collider>,
    /// Per rod, its interaction group (`[[rods]] group`, default "default").
    pub rod_groups: Vec<String>,
    /// Hair–hair interaction, placed over `rods` when the scene was loaded.
    pub interaction: Interaction,
    /// Rod–rod contact (`[rod_contact]`; no member without the table).
    pub rod_contact: RodContact,
    /// Per rod, its initial motion (`[[rods]] velocity`, `angular_velocity`).
    pub motion: Vec<InitialMotion>,
}

impl Scene {
    /// The flat rod set (with the colliders and interaction) and the initial state.
    pub fn build(&self) -> (RodSet, State) {
        let (mut rods, mut state) = build(&self.rods, self.anchors.clone());
        rods.colliders = self.colliders.clone();
        rods.interaction = self.interaction.clone();
        rods.rod_contact = self.rod_contact.clone();
        for (r, m) in self.motion.iter().enumerate() {
            if !m.is_rest() {
                set_initial_motion(&rods, &mut state, r, m);
            }
        }
        (rods, state)
    }
}

/// A scene from TOML text; errors name it `(string)`, and mesh files are
/// read relative to the current folder (use [`Scene::parse_str`] to say
/// otherwise).
impl std::str::FromStr for Scene {
    type Err = SceneError;
    fn from_str(text: &str) -> Result<Scene, SceneError> {
        Scene::parse_str(text, "(string)", Path::new("."))
    }
}

impl Scene {
    /// Read `path`, apply `overrides` (`key.path=value`), check everything.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|e| SceneError {
            file: path.into(),
            field: "(file)".into(),
            origin: None,
            message: format!("cannot read: {e}"),
        })?;
        Scene::parse(&text, path, overrides)
    }

    /// Parse scene text; `path` names it in messages, and files the scene
    /// refers to (mesh colliders) are read relative to its folder.
    pub fn parse(text: &str, path: &Path, overrides: &[String]) -> Result<Scene, SceneError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        Scene::parse_in(text, path, dir, overrides)
    }

    /// Parse scene text held in memory: `name` names it in errors (e.g.
    /// `"head.toml"` or `"(built-in hair)"`), and files it refers to (mesh
    /// colliders) are read relative to `base_dir`.
    pub fn parse_str(text: &str, name: &str, base_dir: &Path) -> Result<Scene, SceneError> {
        Scene::parse_in(text, Path::new(name), base_dir, &[])
    }

    fn parse_in(
        text: &str,
        path: &Path,
        dir: &Path,
        overrides: &[String],
    ) -> Result<Scene, SceneError> {
        let error = |field: String, origin: Option<String>, message: String| SceneError {
            file: path.into(),
            field,
            origin,
            message,
        };
        let original = toml_edit::Document::parse(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| {
                    let line = de::line_of(text, s.start);
                    let start = text[..s.start.min(text.len())]
                        .rfind('\n')
                        .map_or(0, |n| n + 1);
                    (
                        line,
                        text[start..s.start.min(text.len())].chars().count() + 1,
                    )
                })
                .unwrap_or((1, 1));
            error(
                format!("line {line}, column {column}"),
                None,
                format!("syntax error: {}", e.message().trim()),
            )
        })?;
        let mut doc = original.clone().into_mut();
        // Each override and the path it wrote, to name it in errors.
        let mut written: Vec<(String, &String)> = Vec::new();
        for o in overrides {
            let set = apply_override(&mut doc, o).map_err(|(f, m)| {
                // A malformed setting is its own field.
                let origin = (!f.starts_with("override")).then(|| format!("from override {o}"));
                error(f, origin, m)
            })?;
            written.push((set, o));
        }
        // An error names the override that wrote the value, else the line of the file.
        let locate = |(field, message): Field| {
            let origin = match written.iter().rev().find(|(p, _)| de::related(&field, p)) {
                Some((_, o)) => Some(format!("from override {o}")),
                None => de::find(&original, &field)
                    .map(|s| format!("line {}", de::line_of(text, s.start))),
            };
            error(field, origin, message)
        };
        check_finite(doc.as_item(), "")
            .map_err(|f| locate((f, "is not a finite number".into())))?;
        let file = de::scene_file(&doc.to_string()).map_err(locate)?;
        let mut scene = convert(file, dir).map_err(locate)?;
        let (rods, _) = scene.build();
        scene.params.substeps = crate::model::stability::resolve_substeps(&rods, &scene.params)
            .map_err(|e| locate(("sim.substeps".into(), e.to_string())))?;
        Ok(scene)
    }
}

/// Set the value at a dotted path (`sim.dt`, `rods.0.segments`,
/// `anchors.head.pivot`) and return the path as errors write it
/// (`rods[0].segments`). The value is read as TOML (`1e-4`, `[0, 1, 0]`,
/// `true`, `"a b"`); a bare word that is not TOML (`fast`, `hair`) is a string.
///
/// Tables of the format (`sim.wind`, `interaction`) are created when the
/// scene has none, but not entries the user names: an override cannot add
/// a material, an anchor, a rod or a collider (almost surely a typo).
pub fn apply_override(doc: &mut toml_edit::DocumentMut, spec: &str) -> Result<String, Field> {
    let Some((key, value)) = spec.split_once('=') else {
        return Err((
            format!("override {spec}"),
            "expected KEY=VALUE, e.g. sim.dt=1e-4".into(),
        ));
    };
    let (key, text) = (key.trim(), value.trim());
    let value: toml_edit::Value = match text.parse() {
        Ok(v) => v,
        Err(e) => {
            let looks_like_toml = text
                .starts_with(|c: char| c.is_ascii_digit() || "[{\"'+-.".contains(c))
                || text.is_empty();
            if looks_like_toml {
                return Err((
                    key.into(),
                    format!("`{text}` is not a TOML value: {}", e.message().trim()),
                ));
            }
            toml_edit::Value::from(text)
        }
    };
    let parts: Vec<&str> = key.split('.').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err((format!("override {spec}"), format!("bad key path `{key}`")));
    }
    let mut path = String::new();
    set_in_table(doc.as_table_mut(), &parts, value, &mut path)?;
    Ok(path)
}

/// Entries of these tables are named by the user; an override does not create them.
const NAMED: [(&str, &str); 2] = [("materials", "material"), ("anchors", "anchor")];

fn set_in_table(
    t: &mut toml_edit::Table,
    parts: &[&str],
    value: toml_edit::Value,
    path: &mut String,
) -> Result<(), Field> {
    let (part, rest) = (parts[0], &parts[1..]);
    let parent = path.clone();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(part);
    if let Some((_, what)) = NAMED.iter().find(|(n, _)| *n == parent)
        && !t.contains_key(part)
    {
        let known: Vec<&str> = t.iter().map(|(k, _)| k).collect();
        return Err((
            path.clone(),
            format!(
                "unknown {what} `{part}` (defined: {}); an override changes a scene's {parent}, it does not add any",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    if rest.is_empty() {
        t.insert(part, toml_edit::Item::Value(value));
        return Ok(());
    }
    if !t.contains_key(part) {
        if parent.is_empty() && (part == "rods" || part == "colliders") {
            return Err((
                path.clone(),
                format!(
                    "the scene has no [[{part}]] entries; an override changes entries, it does not add any"
                ),
            ));
        }
        t.insert(part, toml_edit::Item::Table(toml_edit::Table::new()));
    }
    match t.get_mut(part).unwrap() {
        toml_edit::Item::Table(inner) => set_in_table(inner, rest, value, path),
        toml_edit::Item::ArrayOfTables(a) => {
            let len = a.len();
            let idx: usize = rest[0].parse().map_err(|_| {
                (
                    path.clone(),
                    format!(
                        "`{}` is not an index into `{part}` (an array of tables: {part}.0, {part}.1, …)",
                        rest[0]
                    ),
                )
            })?;
            path.push_str(&format!("[{idx}]"));
            let inner = a.get_mut(idx).ok_or_else(|| {
                (
                    path.clone(),
                    format!(
                        "`{part}` has {len} entr{}, so no index {idx}",
                        if len == 1 { "y" } else { "ies" }
                    ),
                )
            })?;
            if rest.len() == 1 {
                return Err((path.clone(), "cannot replace a whole table".into()));
            }
            set_in_table(inner, &rest[1..], value, path)
        }
        toml_edit::Item::Value(v) => set_in_value(v, rest, value, path),
        toml_edit::Item::None => Err((path.clone(), format!("`{part}` does not exist"))),
    }
}

fn set_in_value(
    v: &mut toml_edit::Value,
    parts: &[&str],
    value: toml_edit::Value,
    path: &mut String,
) -> Result<(), Field> {
    let part = parts[0];
    let slot: &mut toml_edit::Value = match v {
        toml_edit::Value::Array(a) => {
            let idx: usize = part.parse().map_err(|_| {
                (
                    path.clone(),
                    format!("`{part}` is not an index into an array"),
                )
            })?;
            path.push_str(&format!("[{idx}]"));
            let len = a.len();
            a.get_mut(idx).ok_or_else(|| {
                (
                    path.clone(),
                    format!("index {idx} out of range (the array has {len} entries)"),
                )
            })?
        }
        toml_edit::Value::InlineTable(t) => {
            path.push('.');
            path.push_str(part);
            if parts.len() == 1 {
                t.insert(part, value);
                return Ok(());
            }
            t.get_mut(part)
                .ok_or_else(|| (path.clone(), format!("`{part}` does not exist")))?
        }
        _ => {
            return Err((
                path.clone(),
                format!("is a single value; it has no `{part}` inside"),
            ));
        }
    };
    if parts.len() == 1 {
        *slot = value;
        Ok(())
    } else {
        set_in_value(slot, &parts[1..], value, path)
    }
}

/// Find the first NaN or infinite float; returns its dotted path.
fn check_finite(item: &toml_edit::Item, path: &str) -> Result<(), String> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match item {
        toml_edit::Item::Table(t) => t.iter().try_for_each(|(k, i)| check_finite(i, &join(k))),
        toml_edit::Item::ArrayOfTables(a) => a.iter().enumerate().try_for_each(|(i, t)| {
            t.iter()
                .try_for_each(|(k, it)| check_finite(it, &format!("{path}[{i}].{k}")))
        }),
        toml_edit::Item::Value(v) => check_value(v, path),
        toml_edit::Item::None => Ok(()),
    }
}

fn check_value(v: &toml_edit::Value, path: &str) -> Result<(), String> {
    match v {
        toml_edit::Value::Float(f) if !f.value().is_finite() => Err(path.to_string()),
        toml_edit::Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_value(x, &format!("{path}[{i}]"))),
        toml_edit::Value::InlineTable(t) => t
            .iter()
            .try_for_each(|(k, x)| check_value(x, &format!("{path}.{k}"))),
        _ => Ok(()),
    }
}

/// A field path and what is wrong with it.
type Field = (String, String);

fn positive(field: &str, v: f64) -> Result<f64, Field> {
    if v > 0.0 {
        Ok(v)
    } else {
        Err((field.into(), format!("must be positive, got {v}")))
    }
}

fn non_negative(field: &str, v: f64) -> Result<f64, Field> {
    if v >= 0.0 {
        Ok(v)
    } else {
        Err((field.into(), format!("must not be negative, got {v}")))
    }
}

/// An iteration count: 0 would do nothing, so it is refused, not raised.
fn at_least_one(field: &str, n: u32) -> Result<u32, Field> {
    if n >= 1 {
        Ok(n)
    } else {
        Err((
            field.into(),
            "must be at least 1 (0 iterations would skip the solve)".into(),
        ))
    }
}

fn v3(a: V3) -> DVec3 {
    DVec3::from_array(a)
}

fn convert_sim(s: &SimSection) -> Result<SimParams, Field> {
    positive("sim.dt", s.dt)?;
    let (substeps, auto_substeps) = match s.substeps {
        Substeps::Auto => (1, true),
        Substeps::Fixed(0) => {
            return Err((
                "sim.substeps".into(),
                "must be at least 1 (or \"auto\")".into(),
            ));
        }
        Substeps::Fixed(n) => (
            u32::try_from(n).map_err(|_| {
                (
                    "sim.substeps".into(),
                    format!(
                        "{n} substeps per step is beyond what a run can take (at most {})",
                        u32::MAX
                    ),
                )
            })?,
            false,
        ),
    };
    positive("sim.max_speed", s.max_speed)?;
    positive("sim.twist_tolerance", s.twist_tolerance)?;
    let p = &s.projection;
    let projection = match p.method {
        ProjectionMethod::Fast => Projection::Fast {
            tolerance: positive("sim.projection.tolerance", p.tolerance)?,
            max_iterations: at_least_one("sim.projection.max_iterations", p.max_iterations)?,
        },
        ProjectionMethod::Shake => Projection::Shake {
            tolerance: positive("sim.projection.tolerance", p.tolerance)?,
            max_iterations: at_least_one("sim.projection.max_iterations", p.max_iterations)?,
        },
        ProjectionMethod::Jacobi => {
            if p.iterations == 0 {
                return Err((
                    "sim.projection.iterations".into(),
                    "must be at least 1".into(),
                ));
            }
            if !(p.relaxation > 0.0 && p.relaxation <= 1.0) {
                return Err((
                    "sim.projection.relaxation".into(),
                    format!("must be in (0, 1], got {}", p.relaxation),
                ));
            }
            Projection::Jacobi {
                iterations: p.iterations,
                relaxation: p.relaxation,
            }
        }
        ProjectionMethod::None => Projection::None,
    };
    let w = &s.wind;
    non_negative("sim.wind.gust_amplitude", w.gust_amplitude)?;
    positive("sim.wind.gust_wavelength", w.gust_wavelength)?;
    non_negative("sim.drag", s.drag)?;
    Ok(SimParams {
        dt: s.dt,
        substeps,
        auto_substeps,
        allow_unstable: s.allow_unstable,
        gravity: v3(s.gravity),
        wind: Wind {
            velocity: v3(w.velocity),
            gust_amplitude: w.gust_amplitude,
            gust_frequency: w.gust_frequency,
            gust_wavelength: w.gust_wavelength,
        },
        projection,
        twist_tolerance: s.twist_tolerance,
        twist_max_iterations: at_least_one("sim.twist_max_iterations", s.twist_max_iterations)?,
        max_speed: s.max_speed,
        integrator: match s.integrator {
            IntegratorName::Symplectic => Integrator::Symplectic,
            IntegratorName::BackwardEuler => Integrator::BackwardEuler,
            IntegratorName::ImplicitMidpoint => Integrator::ImplicitMidpoint,
            IntegratorName::Static => Integrator::Static,
        },
        newton: Newton {
            tolerance: positive("sim.newton.tolerance", s.newton.tolerance)?,
            max_iterations: at_least_one("sim.newton.max_iterations", s.newton.max_iterations)?,
        },
    })
}

/// Material constants from either physical or direct parameters.
pub fn convert_material(
    name: &str,
    m: &MaterialSection,
    default_drag: f64,
) -> Result<RodMaterial, Field> {
    let f = |k: &str| format!("materials.{name}.{k}");
    // `radius` alone is a contact radius and may go with either form.
    let physical = m.density.is_some() || m.semi_axes.is_some() || m.youngs_modulus.is_some();
    let direct =
        m.bending_stiffness.is_some() || m.twist_stiffness.is_some() || m.mass_per_length.is_some();
    let drag = non_negative(&f("drag"), m.drag.unwrap_or(default_drag))?;
    let need = |v: Option<f64>, k: &str| -> Result<f64, Field> {
        positive(&f(k), v.ok_or_else(|| (f(k), "is missing".to_string()))?)
    };
    if physical && m.stretching_stiffness.is_some() {
        return Err((
            f("stretching_stiffness"),
            "goes with bending_stiffness/twist_stiffness/mass_per_length; from density/radius/youngs_modulus it is E·πab".into(),
        ));
    }
    if physical && direct {
        return Err((
            f("(kind)"),
            "give either density/radius/youngs_modulus or bending_stiffness/twist_stiffness/mass_per_length, not both".into(),
        ));
    }
    if direct {
        let bending = match m.bending_stiffness.clone() {
            None => return Err((f("bending_stiffness"), "is missing".into())),
            Some(Stiffness::Scalar(b)) => [b, 0.0, b],
            Some(Stiffness::List(l)) if l.len() == 2 => [l[0], 0.0, l[1]],
            Some(Stiffness::List(l)) if l.len() == 3 => [l[0], l[1], l[2]],
            Some(Stiffness::List(l)) => {
                return Err((
                    f("bending_stiffness"),
                    format!(
                        "expected a number, [b11, b22] or [b11, b12, b22]; got {} numbers",
                        l.len()
                    ),
                ));
            }
        };
        if !(bending[0] > 0.0
            && bending[2] > 0.0
            && bending[0] * bending[2] > bending[1] * bending[1])
        {
            return Err((
                f("bending_stiffness"),
                format!("must be positive definite, got {bending:?}"),
            ));
        }
        return Ok(RodMaterial {
            bending,
            twist: need(m.twist_stiffness, "twist_stiffness")?,
            mass_per_length: need(m.mass_per_length, "mass_per_length")?,
            drag,
            radius: match m.radius {
                Some(r) => positive(&f("radius"), r)?,
                None => 0.0,
            },
            stretching: match m.stretching_stiffness {
                Some(k) => positive(&f("stretching_stiffness"), k)?,
                None => 0.0,
            },
        });
    }
    let density = need(m.density, "density")?;
    let e = need(m.youngs_modulus, "youngs_modulus")?;
    let (a, b) = match (m.radius, m.semi_axes) {
        (Some(_), Some(_)) => {
            return Err((f("radius"), "give radius or semi_axes, not both".into()));
        }
        (Some(r), None) => {
            let r = positive(&f("radius"), r)?;
            (r, r)
        }
        (None, Some([a, b])) => (
            positive(&f("semi_axes[0]"), a)?,
            positive(&f("semi_axes[1]"), b)?,
        ),
        (None, None) => return Err((f("radius"), "is missing (or give semi_axes)".into())),
    };
    let g = match m.shear_modulus {
        Some(g) => positive(&f("shear_modulus"), g)?,
        None => {
            let nu = m.poisson_ratio.unwrap_or(0.3);
            if !(nu > -1.0 && nu < 0.5) {
                return Err((
                    f("poisson_ratio"),
                    format!("must be in (−1, 0.5), got {nu}"),
                ));
            }
            e / (2.0 * (1.0 + nu))
        }
    };
    // Ellipse with semi-axis a along m1, b along m2 (`from_young_elliptic`).
    RodMaterial::from_young_elliptic(e, g, density, [a, b], drag)
        .map_err(|err| (f(err.field), err.problem))
}

fn convert_anchor(name: &str, a: &AnchorSection) -> Result<Anchor, Field> {
    for (k, w) in a.keyframes.windows(2).enumerate() {
        if w[1].t <= w[0].t {
            return Err((
                format!("anchors.{name}.keyframes[{}].t", k + 1),
                format!(
                    "keyframe times must increase strictly ({} after {})",
                    w[1].t, w[0].t
                ),
            ));
        }
    }
    Ok(Anchor {
        name: name.into(),
        pivot: v3(a.pivot),
        keyframes: a
            .keyframes
            .iter()
            .map(|k| {
                let degrees = v3(k.rotation);
                Keyframe::new(
                    k.t,
                    v3(k.translation),
                    degrees * std::f64::consts::PI / 180.0,
                )
            })
            .collect(),
    })
}

/// Most SDF samples a mesh collider may bake (160³).
pub const MAX_SDF_SAMPLES: usize = 160 * 160 * 160;

fn convert_collider(
    i: usize,
    c: &ColliderSection,
    anchors: &[Anchor],
    dir: &Path,
) -> Result<Collider, Field> {
    let field = |k: &str| format!("colliders[{i}].{k}");
    macro_rules! common {
        ($c:expr) => {
            (
                &$c.name,
                &$c.anchor,
                $c.friction,
                $c.static_friction,
                $c.margin,
            )
        };
    }
    let (name, anchor, friction, static_friction, margin) = match c {
        ColliderSection::Sphere(c) => common!(c),
        ColliderSection::Capsule(c) => common!(c),
        ColliderSection::Plane(c) => common!(c),
        ColliderSection::Mesh(c) => common!(c),
    };
    let anchor_name = anchor.as_deref().unwrap_or("world");
    let a = anchors
        .iter()
        .position(|x| x.name == anchor_name)
        .ok_or_else(|| {
            let known: Vec<&str> = anchors.iter().map(|a| a.name.as_str()).collect();
            (
                field("anchor"),
                format!(
                    "unknown anchor `{anchor_name}` (defined: {})",
                    known.join(", ")
                ),
            )
        })?;
    let Contact {
        friction,
        static_friction,
        margin,
    } = contact_constants(&field, friction, static_friction, margin)?;
    // Geometry goes to the anchor's rest frame, relative to its pivot.
    let pose = anchors[a].pose(0.0);
    let pivot = anchors[a].pivot;
    let point = |p: V3| pose.inverse_point(v3(p)) - pivot;
    let shape = match c {
        ColliderSection::Sphere(c) => Shape::Sphere {
            center: point(c.center),
            radius: positive(&field("radius"), c.radius)?,
        },
        ColliderSection::Capsule(c) => Shape::Capsule {
            a: point(c.a),
            b: point(c.b),
            radius: positive(&field("radius"), c.radius)?,
        },
        ColliderSection::Plane(c) => {
            let n = v3(c.normal);
            if n.length() == 0.0 {
                return Err((field("normal"), "must not be zero".into()));
            }
            Shape::Plane {
                point: point(c.point),
                normal: pose.inverse_vector(n.normalize()),
            }
        }
        ColliderSection::Mesh(c) => {
            let file = dir.join(&c.file);
            let shown = file.display();
            let mut mesh =
                load_mesh(&file).map_err(|e| (field("file"), format!("{shown}: {e}")))?;
            mesh.check()
                .map_err(|e| (field("file"), format!("{shown}: {e}")))?;
            for x in &mut mesh.vertices {
                *x = point(x.to_array());
            }
            let (lo, hi) = mesh.bounds();
            let cell = match c.cell {
                Some(h) => positive(&field("cell"), h)?,
                None => (hi - lo).max_element() / 48.0,
            };
            let grid = bake_sdf(&mesh, cell, 3.0 * cell, MAX_SDF_SAMPLES)
                .map_err(|e| (field("cell"), format!("{shown}: {e}")))?;
            Shape::Sdf(std::sync::Arc::new(grid))
        }
    };
    Ok(Collider {
        name: name.clone().unwrap_or_else(|| format!("colliders[{i}]")),
        shape,
        anchor: a,
        friction,
        static_friction,
        margin,
    })
}

fn convert(file: SceneFile, dir: &Path) -> Result<Scene, Field> {
    ranges::check(&file)?;
    let params = convert_sim(&file.sim)?;
    let mut anchors = vec![Anchor::world()];
    for (name, a) in &file.anchors {
        if name == "world" {
            return Err((
                "anchors.world".into(),
                "`world` is the built-in fixed anchor; choose another name".into(),
            ));
        }
        anchors.push(convert_anchor(name, a)?);
    }
    let mut materials = std::collections::BTreeMap::new();
    for (name, m) in &file.materials {
        let material = convert_material(name, m, file.sim.drag)?;
        if params.integrator == Integrator::Static && material.stretching == 0.0 {
            return Err((
                format!("materials.{name}.stretching_stiffness"),
                "is missing: sim.integrator = \"static\" balances each edge's tension by its stretching stiffness E·A (N); give it, or the material as density/radius/youngs_modulus".into(),
            ));
        }
        materials.insert(name.clone(), material);
    }
    if file.rods.is_empty() {
        return Err((
            "rods".into(),
            "the scene has no rods ([[rods]] tables)".into(),
        ));
    }
    // Groom files are read first: their strands are counted with the rest.
    let mut grooms = Vec::new();
    for (i, section) in file.rods.iter().enumerate() {
        grooms.push(match section {
            RodSection::Groom(g) => Some(read_groom(i, g, dir)?),
            _ => None,
        });
    }
    let sizes: Vec<Option<(usize, usize)>> = grooms
        .iter()
        .map(|g| {
            g.as_ref()
                .map(|s| (s.len(), s.iter().map(|(_, p)| p.len()).sum()))
        })
        .collect();
    limits::check_memory(&file, &sizes)?;
    let mut rods = Vec::new();
    let mut rod_groups = Vec::new();
    let mut motions = Vec::new();
    for (i, section) in file.rods.iter().enumerate() {
        let field = |k: &str| format!("rods[{i}].{k}");
        let generated =
            generators::generate(section, grooms[i].take()).map_err(|(k, m)| (field(&k), m))?;
        let c = generated.common;
        let group = c.group.clone().unwrap_or_else(|| "default".into());
        if group.is_empty() {
            return Err((field("group"), "must not be empty".into()));
        }
        let material = *materials.get(c.material).ok_or_else(|| {
            let known: Vec<&str> = materials.keys().map(|s| s.as_str()).collect();
            (
                field("material"),
                format!(
                    "unknown material `{}` (defined: {})",
                    c.material,
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?;
        let anchor = |k: &str, name: &Option<String>| -> Result<usize, Field> {
            let n = name.as_deref().unwrap_or("world");
            anchors.iter().position(|a| a.name == n).ok_or_else(|| {
                let known: Vec<&str> = anchors.iter().map(|a| a.name.as_str()).collect();
                (
                    field(k),
                    format!("unknown anchor `{n}` (defined: {})", known.join(", ")),
                )
            })
        };
        let end = |kind: EndKind, which: &str, name: &Option<String>| -> Result<EndSpec, Field> {
            let key = format!("{which}_anchor");
            match kind {
                EndKind::Free if name.is_some() => Err((
                    field(&key),
                    format!("is set, but the rod's {which} is free (set {which} = \"clamped\")"),
                )),
                EndKind::Free => Ok(EndSpec::Free),
                EndKind::Clamped => Ok(EndSpec::Clamped(anchor(&key, name)?)),
            }
        };
        let start = end(c.start, "start", c.start_anchor)?;
        let finish = end(c.end, "end", c.end_anchor)?;
        let motion = InitialMotion {
            velocity: c.velocity.map_or(DVec3::ZERO, v3),
            angular_velocity: c.angular_velocity.map_or(DVec3::ZERO, v3) * (PI / 180.0),
        };
        // The field to name for the initial motion: velocity unless only ω is given.
        let motion_field = if motion.velocity != DVec3::ZERO {
            field("velocity")
        } else {
            field("angular_velocity")
        };
        if !motion.is_rest() && (start != EndSpec::Free || finish != EndSpec::Free) {
            return Err((
                motion_field,
                "a rod with a clamped end follows its anchor, so it cannot be given an initial velocity; make both ends free (start = \"free\"; scalp and grass rods are clamped by default) or move the anchor".into(),
            ));
        }
        for (k, g) in generated.rods.into_iter().enumerate() {
            let rest = match (g.rest, c.rest_shape) {
                (Some(r), RestShape::Initial) => r,
                (Some(_), RestShape::Straight) => {
                    return Err((
                        field("rest_shape"),
                        "rest_points and rest_shape = \"straight\" contradict each other".into(),
                    ));
                }
                (None, RestShape::Initial) => g.points.clone(),
                (None, RestShape::Straight) => {
                    if g.points.len() < 2 {
                        g.points.clone()
                    } else {
                        straightened(&g.points)
                    }
                }
            };
            let name = match (&c.name, generated.many) {
                (Some(n), false) => n.clone(),
                (Some(n), true) => format!("{n}[{k}]"),
                (None, false) => format!("rods[{i}]"),
                (None, true) => format!("rods[{i}][{k}]"),
            };
            let spec = RodSpec {
                name: name.clone(),
                points: g.points,
                rest,
                material,
                start,
                end: finish,
                frame_angle: c.frame_angle.to_radians() + g.frame_angle,
            };
            check_rod(&spec).map_err(|e| {
                let what = if generated.many {
                    format!("rods[{i}] (rod {k}, `{name}`)")
                } else {
                    format!("rods[{i}]")
                };
                (what, e.to_string())
            })?;
            if !motion.is_rest() {
                let mass = vertex_masses(&spec.rest, 1.0);
                let speed = motion
                    .velocities(&spec.points, &mass)
                    .iter()
                    .map(|v| v.length())
                    .fold(0.0, f64::max);
                if speed >= params.max_speed {
                    return Err((
                        motion_field.clone(),
                        format!(
                            "gives rod `{name}` an initial speed of up to {speed:.4e} m/s, at least sim.max_speed = {} m/s (the speed taken as a blow-up)",
                            params.max_speed
                        ),
                    ));
                }
            }
            rods.push(spec);
            rod_groups.push(group.clone());
            motions.push(motion);
        }
    }
    if file.colliders.len() > MAX_COLLIDERS {
        return Err((
            "colliders".into(),
            format!(
                "{} colliders; at most {MAX_COLLIDERS} are supported",
                file.colliders.len()
            ),
        ));
    }
    let colliders = file
        .colliders
        .iter()
        .enumerate()
        .map(|(i, c)| convert_collider(i, c, &anchors, dir))
        .collect::<Result<Vec<_>, _>>()?;
    let interaction = match &file.interaction {
        None => Interaction::default(),
        Some(section) => {
            let spec = convert_interaction(section)?;
            let (built, state) = build(&rods, anchors.clone());
            build_interaction(&built, &state, &spec, &rod_groups)?
        }
    };
    let rod_contact = match &file.rod_contact {
        None => RodContact::default(),
        Some(section) => build_rod_contact(&convert_rod_contact(section)?, &rod_groups)?,
    };
    if rod_contact.is_active() && params.integrator.is_implicit() {
        // Contact acts after each Newton step, not inside it: a whole
        // frame's step presses a tightening knot's strands (or a moving
        // groom's) into each other further than the contact rounds can
        // undo, and the run stops.
        return Err((
            "rod_contact".into(),
            format!(
                "runs with sim.integrator = \"symplectic\" only, not \"{}\": implicit steps ignore rod contact inside the solve, and a pulled knot or a moving groom then stops (Newton unconverged, or rod contact unresolved)",
                params.integrator.name()
            ),
        ));
    }
    Ok(Scene {
        params,
        steps: file.sim.steps,
        anchors,
        rods,
        colliders,
        rod_groups,
        interaction,
        rod_contact,
        motion: motions,
    })
}

/// The strands of groom entry `rods[i]`, read from its file and placed.
fn read_groom(i: usize, g: &GroomRods, dir: &Path) -> Result<Vec<(usize, Vec<DVec3>)>, Field> {
    let field = |k: &str| format!("rods[{i}].{k}");
    if let Some(n) = g.segments
        && n < 2
    {
        return Err((
            field("segments"),
            format!("must be at least 2 (a rod has at least 3 vertices), got {n}"),
        ));
    }
    if g.every == 0 {
        return Err((
            field("every"),
            "must be at least 1 (every k-th strand; 1 takes all)".into(),
        ));
    }
    if g.max_strands == Some(0) {
        return Err((field("max_strands"), "must be at least 1".into()));
    }
    let file = dir.join(&g.file);
    let shown = file.display();
    let strands =
        crate::groom::load(&file).map_err(|e| (field("file"), format!("{shown}: {e}")))?;
    let placement = crate::groom::Placement {
        scale: g.scale,
        rotation: v3(g.rotation) * (PI / 180.0),
        translation: v3(g.translation),
        segments: g.segments,
        every: g.every,
        max_strands: g.max_strands,
    };
    crate::groom::prepare(&strands, &placement)
        .map_err(|e| (field("file"), format!("{shown}: {e}")))
}

/// A contact's constants, as colliders and `[rod_contact]` give them.
struct Contact {
    friction: f64,
    static_friction: f64,
    margin: f64,
}

/// `friction` (μk, default 0.3), `static_friction` (μs ≥ μk, default μk)
/// and `margin` (m, default `DEFAULT_MARGIN`) of a collider or of
/// `[rod_contact]`, checked; `field` names a key of the table.
fn contact_constants(
    field: &dyn Fn(&str) -> String,
    friction: Option<f64>,
    static_friction: Option<f64>,
    margin: Option<f64>,
) -> Result<Contact, Field> {
    let friction = non_negative(&field("friction"), friction.unwrap_or(0.3))?;
    let static_friction = static_friction.unwrap_or(friction);
    if static_friction < friction {
        return Err((
            field("static_friction"),
            format!("must be at least friction = {friction} (μs ≥ μk), got {static_friction}"),
        ));
    }
    let margin = non_negative(&field("margin"), margin.unwrap_or(DEFAULT_MARGIN))?;
    Ok(Contact {
        friction,
        static_friction,
        margin,
    })
}

/// `[rod_contact]`, checked; group names are checked against the rods by
/// `build::build_rod_contact`. An empty `groups` switches it off (as
/// `--set rod_contact.groups=[]` does).
fn convert_rod_contact(s: &RodContactSection) -> Result<RodContactSpec, Field> {
    let field = |k: &str| format!("rod_contact.{k}");
    let c = contact_constants(&field, s.friction, s.static_friction, s.margin)?;
    Ok(RodContactSpec {
        groups: s.groups.clone(),
        friction: c.friction,
        static_friction: c.static_friction,
        margin: c.margin,
    })
}

/// `[interaction]`, checked; group names are checked against the rods by
/// `build::build_interaction`.
fn convert_interaction(s: &InteractionSection) -> Result<InteractionSpec, Field> {
    let d = InteractionSpec::default();
    let spacing = match (s.resolution, s.cell) {
        (Some(_), Some(_)) => {
            return Err((
                "interaction.cell".into(),
                "give either resolution (cells along the grid's longest side) or cell (m), not both".into(),
            ));
        }
        (Some(n), None) => {
            if n < 1 {
                return Err((
                    "interaction.resolution".into(),
                    format!("must be a positive number of cells, got {n}"),
                ));
            }
            Spacing::Resolution(u32::try_from(n).map_err(|_| {
                (
                    "interaction.resolution".into(),
                    format!("{n} cells is beyond any grid this program can hold"),
                )
            })?)
        }
        (None, Some(c)) => Spacing::Cell(positive("interaction.cell", c)?),
        (None, None) => d.spacing,
    };
    let fraction = |k: &str, v: Option<f64>, default: f64| -> Result<f64, Field> {
        let v = v.unwrap_or(default);
        if (0.0..=1.0).contains(&v) {
            Ok(v)
        } else {
            Err((
                format!("interaction.{k}"),
                format!("is a fraction per substep and must lie in [0, 1], got {v}"),
            ))
        }
    };
    Ok(InteractionSpec {
        groups: s.groups.clone(),
        spacing,
        padding: s
            .padding
            .map(|p| non_negative("interaction.padding", p))
            .transpose()?,
        friction_root: fraction("friction_root", s.friction_root, d.friction_root)?,
        friction_tip: fraction("friction_tip", s.friction_tip, d.friction_tip)?,
        rest_density: s
            .rest_density
            .map(|r| positive("interaction.rest_density", r))
            .transpose()?,
        volume_stiffness: fraction("volume_stiffness", s.volume_stiffness, d.volume_stiffness)?,
    })
}
