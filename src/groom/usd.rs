//! USD `BasisCurves`: reading grooms and writing simulated strands with time
//! samples, to play a run in usdview, Houdini or Blender.
//!
//! Reading goes through the `openusd` crate (pure Rust; `.usda`, `.usdc` and
//! `.usdz`, with composition: sublayers, references, payloads). Version
//! 0.6.0 is pinned because 0.7 and later need Rust 1.96.
//!
//! Writing is by hand: a `.usda` file of one `BasisCurves` prim is a short,
//! fixed text, and writing it directly prints every f32 in its shortest
//! round-trip form (`{:?}`), where openusd's writer goes through f64
//! (`0.1f32` as `0.10000000149011612`, about twice the file) and builds the
//! whole layer as generic values first.
//!
//! What the reader takes from a stage: every defined `BasisCurves` prim
//! (depth first), `curveVertexCounts` and `points` (the default value, else
//! the earliest time sample: a groom is its rest pose). `type` must be
//! `linear`: the points of a cubic curve are control points, mostly not on
//! the curve, so cubic curves are refused rather than bent. Transforms
//! (`xformOp`s on the prim or an ancestor) are refused unless they are the
//! identity: bake them into the points, or place the groom with the scene's
//! `scale`, `rotation` and `translation`.

use std::io::Write;
use std::path::Path;

use openusd::{gf, sdf, usd};

/// One `BasisCurves` prim as read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curves {
    /// Prim path, e.g. `/groom/strands`.
    pub path: String,
    /// Vertices per curve.
    pub counts: Vec<usize>,
    /// `points` default value (absent when only time samples are authored).
    pub points: Option<Vec<[f32; 3]>>,
    /// `points.timeSamples`, by increasing time code.
    pub point_samples: Vec<(f64, Vec<[f32; 3]>)>,
    /// `widths` default value.
    pub widths: Option<Vec<f32>>,
    /// `widths.timeSamples`, by increasing time code.
    pub width_samples: Vec<(f64, Vec<f32>)>,
}

impl Curves {
    /// The rest pose: the default `points`, else the earliest time sample.
    pub fn rest_points(&self) -> Option<&[[f32; 3]]> {
        self.points
            .as_deref()
            .or_else(|| self.point_samples.first().map(|(_, p)| p.as_slice()))
    }
}

fn points_of(v: sdf::Value) -> Result<Vec<[f32; 3]>, String> {
    match v {
        sdf::Value::Vec3fVec(p) => Ok(p.into_iter().map(|q| [q.x, q.y, q.z]).collect()),
        sdf::Value::Vec3dVec(p) => Ok(p
            .into_iter()
            .map(|q| [q.x as f32, q.y as f32, q.z as f32])
            .collect()),
        other => Err(format!(
            "points: expected point3f[] values, got {}",
            <&'static str>::from(&other)
        )),
    }
}

fn floats_of(v: sdf::Value) -> Result<Vec<f32>, String> {
    match v {
        sdf::Value::FloatVec(w) => Ok(w),
        sdf::Value::DoubleVec(w) => Ok(w.into_iter().map(|x| x as f32).collect()),
        other => Err(format!(
            "widths: expected float[] values, got {}",
            <&'static str>::from(&other)
        )),
    }
}

/// The numbers of a transform value, flattened.
fn numbers(v: &sdf::Value) -> Option<Vec<f64>> {
    Some(match v {
        sdf::Value::Float(x) => vec![f64::from(*x)],
        sdf::Value::Double(x) => vec![*x],
        sdf::Value::Vec3f(a) => vec![a.x.into(), a.y.into(), a.z.into()],
        sdf::Value::Vec3d(a) => vec![a.x, a.y, a.z],
        sdf::Value::Quatf(q) => vec![q.w.into(), q.x.into(), q.y.into(), q.z.into()],
        sdf::Value::Quatd(q) => vec![q.w, q.x, q.y, q.z],
        sdf::Value::Matrix4d(m) => m.0.to_vec(),
        _ => return None,
    })
}

/// Whether the xformOp `name` with value `v` leaves points where they are.
fn is_identity(name: &str, v: &sdf::Value) -> bool {
    let Some(x) = numbers(v) else { return false };
    let op = name.trim_start_matches("xformOp:");
    let kind = op.split(':').next().unwrap_or(op);
    if kind == "transform" {
        x == gf::Matrix4d::IDENTITY.0
    } else if kind.starts_with("scale") {
        x.iter().all(|&a| a == 1.0)
    } else if kind == "orient" {
        x == [1.0, 0.0, 0.0, 0.0]
    } else if kind.starts_with("translate") || kind.starts_with("rotate") {
        x.iter().all(|&a| a == 0.0)
    } else {
        false
    }
}

/// Refuse a non-identity transform authored on the prim at `path`.
fn check_transform(stage: &usd::Stage, path: &sdf::Path) -> Result<(), String> {
    let attr = |name: &str| -> Result<Option<sdf::Value>, String> {
        let p = path
            .append_property(name)
            .map_err(|e| format!("{path}: {e}"))?;
        stage
            .attribute(p)
            .get::<sdf::Value>()
            .map_err(|e| format!("{path}.{name}: {e:#}"))
    };
    let Some(order) = attr("xformOpOrder")? else {
        return Ok(());
    };
    let ops: Vec<String> = match order {
        sdf::Value::TokenVec(t) => t.iter().map(|t| t.as_str().to_string()).collect(),
        _ => return Err(format!("{path}.xformOpOrder: expected token[]")),
    };
    for op in ops {
        let name = op.trim_start_matches("!invert!");
        let value = attr(name)?;
        if !value.as_ref().is_some_and(|v| is_identity(name, v)) {
            return Err(format!(
                "{path}: transform {name} = {} is not the identity; strands are read in the file's coordinates, so bake the transform into the points or place the groom with the scene's scale, rotation and translation",
                value
                    .as_ref()
                    .and_then(numbers)
                    .map(|x| format!("{x:?}"))
                    .unwrap_or_else(|| "(no value)".into())
            ));
        }
    }
    Ok(())
}

/// Every `BasisCurves` prim of the stage at `path`, checked (see the module docs).
/// Errors say what is wrong; the caller adds the file name.
pub fn read(path: &Path) -> Result<Vec<Curves>, String> {
    let shown = path
        .to_str()
        .ok_or_else(|| "the path is not valid UTF-8".to_string())?;
    if let Err(e) = std::fs::metadata(path) {
        return Err(format!("cannot read: {e}"));
    }
    let stage = usd::Stage::open(shown).map_err(|e| format!("cannot read as USD: {e:#}"))?;
    let mut prims = Vec::new();
    stage
        .traverse(usd::PrimPredicate::DEFAULT, |p| prims.push(p.clone()))
        .map_err(|e| format!("cannot read as USD: {e:#}"))?;
    let mut out = Vec::new();
    for p in prims {
        let prim = stage.prim(p.clone());
        let ty = prim.type_name().map_err(|e| format!("{p}: {e:#}"))?;
        if ty.as_ref().map(|t| t.as_str()) != Some("BasisCurves") {
            continue;
        }
        let mut at = Some(p.clone());
        while let Some(q) = at {
            if q == sdf::Path::abs_root() {
                break;
            }
            check_transform(&stage, &q)?;
            at = q.parent();
        }
        let attr = |name: &str| stage.attribute(p.append_property(name).expect("a property name"));
        let value = |name: &str| {
            attr(name)
                .get::<sdf::Value>()
                .map_err(|e| format!("{p}.{name}: {e:#}"))
        };
        let samples = |name: &str| {
            attr(name)
                .time_samples()
                .map_err(|e| format!("{p}.{name}: {e:#}"))
                .map(Option::unwrap_or_default)
        };
        match value("type")? {
            None => {} // the schema's fallback is cubic, but a file without it is read as written
            Some(sdf::Value::Token(t)) if t.as_str() == "linear" => {}
            Some(sdf::Value::Token(t)) => {
                return Err(format!(
                    "{p}.type: `{}` curves are not read: their points are control points, not points on the strand; convert the groom to linear curves",
                    t.as_str()
                ));
            }
            Some(other) => {
                return Err(format!(
                    "{p}.type: expected a token, got {}",
                    <&'static str>::from(&other)
                ));
            }
        }
        let counts = match value("curveVertexCounts")? {
            Some(sdf::Value::IntVec(c)) => c
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    usize::try_from(n).map_err(|_| {
                        format!("{p}.curveVertexCounts[{i}]: {n} vertices is negative")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => return Err(format!("{p}.curveVertexCounts: is missing")),
            Some(other) => {
                return Err(format!(
                    "{p}.curveVertexCounts: expected int[], got {}",
                    <&'static str>::from(&other)
                ));
            }
        };
        let mut c = Curves {
            path: p.to_string(),
            counts,
            points: value("points")?
                .map(points_of)
                .transpose()
                .map_err(|e| format!("{p}.{e}"))?,
            widths: value("widths")?
                .map(floats_of)
                .transpose()
                .map_err(|e| format!("{p}.{e}"))?,
            ..Default::default()
        };
        for (t, v) in samples("points")? {
            c.point_samples
                .push((t, points_of(v).map_err(|e| format!("{p}.{e} at time {t}"))?));
        }
        for (t, v) in samples("widths")? {
            c.width_samples
                .push((t, floats_of(v).map_err(|e| format!("{p}.{e} at time {t}"))?));
        }
        c.point_samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        c.width_samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: usize = c.counts.iter().sum();
        let Some(rest) = c.rest_points() else {
            return Err(format!("{p}.points: is missing"));
        };
        if rest.len() != total {
            return Err(format!(
                "{p}.points: {} points, but curveVertexCounts adds up to {total}",
                rest.len()
            ));
        }
        for (t, s) in &c.point_samples {
            if s.len() != total {
                return Err(format!(
                    "{p}.points at time {t}: {} points, but curveVertexCounts adds up to {total}",
                    s.len()
                ));
            }
        }
        out.push(c);
    }
    if out.is_empty() {
        return Err("the stage has no BasisCurves prim".into());
    }
    Ok(out)
}

/// Stage settings of a written `.usda` file.
#[derive(Clone, Debug)]
pub struct StageInfo {
    /// Time codes per second: a run writes one time code per step, so 1/dt.
    pub time_codes_per_second: f64,
    /// `upAxis`: "Y" (the scenes' gravity is along −y) or "Z".
    pub up_axis: &'static str,
}

/// Collects frames of simulated strands and writes them as one
/// `BasisCurves` prim (`/strands/curves`) with `points` and `widths` time
/// samples, `type = "linear"`, `metersPerUnit = 1`. Frames are kept as f32.
pub struct UsdWriter {
    info: StageInfo,
    counts: Vec<usize>,
    /// Per vertex: the strand's width (2 × its material radius).
    widths: Vec<f32>,
    frames: Vec<(f64, Vec<[f32; 3]>)>,
}

impl UsdWriter {
    /// A writer for curves of `counts` vertices each, `widths` one per vertex.
    pub fn new(info: StageInfo, counts: Vec<usize>, widths: Vec<f32>) -> UsdWriter {
        UsdWriter {
            info,
            counts,
            widths,
            frames: Vec::new(),
        }
    }

    /// A writer for every rod of `rods`, widths 2 × the material radius.
    pub fn for_rods(rods: &crate::model::rods::RodSet, info: StageInfo) -> UsdWriter {
        let counts = (0..rods.rod_count())
            .map(|r| rods.vertices(r).len())
            .collect::<Vec<_>>();
        let widths = (0..rods.rod_count())
            .flat_map(|r| {
                std::iter::repeat_n(
                    (2.0 * rods.material[r].radius) as f32,
                    rods.vertices(r).len(),
                )
            })
            .collect();
        UsdWriter::new(info, counts, widths)
    }

    /// Add the frame at `time_code` (positions of every vertex, in order).
    pub fn push(&mut self, time_code: f64, positions: &[glam::DVec3]) {
        debug_assert_eq!(positions.len(), self.widths.len());
        self.frames.push((
            time_code,
            positions
                .iter()
                .map(|p| [p.x as f32, p.y as f32, p.z as f32])
                .collect(),
        ));
    }

    /// Frames collected so far.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Write the stage as `.usda` text.
    pub fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let (start, end) = match (self.frames.first(), self.frames.last()) {
            (Some(a), Some(b)) => (a.0, b.0),
            _ => (0.0, 0.0),
        };
        let tcps = self.info.time_codes_per_second;
        writeln!(w, "#usda 1.0")?;
        writeln!(w, "(")?;
        writeln!(w, "    defaultPrim = \"strands\"")?;
        writeln!(w, "    doc = \"strands: simulated Discrete Elastic Rods\"")?;
        writeln!(w, "    endTimeCode = {end:?}")?;
        writeln!(w, "    framesPerSecond = {tcps:?}")?;
        writeln!(w, "    metersPerUnit = 1")?;
        writeln!(w, "    startTimeCode = {start:?}")?;
        writeln!(w, "    timeCodesPerSecond = {tcps:?}")?;
        writeln!(w, "    upAxis = \"{}\"", self.info.up_axis)?;
        writeln!(w, ")")?;
        writeln!(w)?;
        writeln!(w, "def Xform \"strands\"")?;
        writeln!(w, "{{")?;
        writeln!(w, "    def BasisCurves \"curves\"")?;
        writeln!(w, "    {{")?;
        writeln!(w, "        uniform token type = \"linear\"")?;
        writeln!(w, "        uniform token wrap = \"nonperiodic\"")?;
        write!(w, "        int[] curveVertexCounts = [")?;
        for (i, n) in self.counts.iter().enumerate() {
            write!(w, "{}{n}", if i > 0 { ", " } else { "" })?;
        }
        writeln!(w, "]")?;
        writeln!(w, "        point3f[] points.timeSamples = {{")?;
        for (t, p) in &self.frames {
            write!(w, "            {t:?}: [")?;
            for (i, q) in p.iter().enumerate() {
                let sep = if i > 0 { ", " } else { "" };
                write!(w, "{sep}({:?}, {:?}, {:?})", q[0], q[1], q[2])?;
            }
            writeln!(w, "],")?;
        }
        writeln!(w, "        }}")?;
        writeln!(w, "        float[] widths (")?;
        writeln!(w, "            interpolation = \"vertex\"")?;
        writeln!(w, "        )")?;
        writeln!(w, "        float[] widths.timeSamples = {{")?;
        for (t, _) in &self.frames {
            write!(w, "            {t:?}: [")?;
            for (i, x) in self.widths.iter().enumerate() {
                write!(w, "{}{x:?}", if i > 0 { ", " } else { "" })?;
            }
            writeln!(w, "],")?;
        }
        writeln!(w, "        }}")?;
        writeln!(w, "    }}")?;
        writeln!(w, "}}")?;
        Ok(())
    }
}
