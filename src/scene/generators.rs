//! Rod generators: explicit polylines, straight rods, helices, hair on a
//! scalp, grass on a patch. Each returns polylines; `mod.rs` turns them into rods.
//!
//! For scenes built in code: [`generate`] takes a `[[rods]]` entry as its
//! struct (`format::ScalpRods`, `format::GrassRods`, ...; every field
//! public) and returns the polylines, which `build::RodSpec` and
//! `build::try_build` turn into rods; [`straight_points`] and
//! [`helix_points`] are the two simple shapes alone.

use glam::DVec3;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use super::format::*;
use super::{Field, positive, v3};

/// The fields every rod entry shares (as in `format`'s rod structs).
pub struct Common<'a> {
    /// `name`.
    pub name: &'a Option<String>,
    /// `material`.
    pub material: &'a str,
    /// `start`, with the kind's default.
    pub start: EndKind,
    /// `end`, with the kind's default.
    pub end: EndKind,
    /// `start_anchor`.
    pub start_anchor: &'a Option<String>,
    /// `end_anchor`.
    pub end_anchor: &'a Option<String>,
    /// `rest_shape`.
    pub rest_shape: RestShape,
    /// Degrees.
    pub frame_angle: f64,
    /// `group`.
    pub group: &'a Option<String>,
    /// m/s
    pub velocity: Option<V3>,
    /// Degrees/s.
    pub angular_velocity: Option<V3>,
}

/// One generated rod.
pub struct GenRod {
    /// Initial centerline.
    pub points: Vec<DVec3>,
    /// Rest centerline, when it differs from `points`.
    pub rest: Option<Vec<DVec3>>,
    /// Extra material-frame angle (rad), e.g. a random blade orientation.
    pub frame_angle: f64,
}

/// The rods of one `[[rods]]` entry.
pub struct Generated<'a> {
    /// The entry's shared fields.
    pub common: Common<'a>,
    /// Its rods.
    pub rods: Vec<GenRod>,
    /// Whether the entry makes several rods (names get an index).
    pub many: bool,
}

macro_rules! common {
    ($r:expr, $default_start:expr) => {
        Common {
            name: &$r.name,
            material: &$r.material,
            start: $r.start.unwrap_or($default_start),
            end: $r.end.unwrap_or(EndKind::Free),
            start_anchor: &$r.start_anchor,
            end_anchor: &$r.end_anchor,
            rest_shape: $r.rest_shape,
            frame_angle: $r.frame_angle,
            group: &$r.group,
            velocity: $r.velocity,
            angular_velocity: $r.angular_velocity,
        }
    };
}

fn segments(n: usize) -> Result<usize, Field> {
    if n < 2 {
        Err((
            "segments".into(),
            format!("must be at least 2 (a rod has at least 3 vertices), got {n}"),
        ))
    } else {
        Ok(n)
    }
}

fn fraction(field: &str, v: f64) -> Result<f64, Field> {
    if (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err((field.into(), format!("must be in [0, 1), got {v}")))
    }
}

/// Two unit vectors completing unit `a` to a right-handed basis.
fn basis(a: DVec3) -> (DVec3, DVec3) {
    let e1 = crate::cpu::frames::any_perpendicular(a);
    (e1, a.cross(e1))
}

/// `segments + 1` evenly spaced points from `from` to `to`.
pub fn straight_points(from: DVec3, to: DVec3, segments: usize) -> Vec<DVec3> {
    (0..=segments)
        .map(|k| from.lerp(to, k as f64 / segments as f64))
        .collect()
}

/// `segments + 1` points of a helix of `turns` turns about the axis through
/// `center` along `axis` (unit), of radius `radius` and rise `pitch` per
/// turn (m), as a scene's `kind = "helix"` makes it.
pub fn helix_points(
    center: DVec3,
    axis: DVec3,
    radius: f64,
    pitch: f64,
    turns: f64,
    segments: usize,
) -> Vec<DVec3> {
    let (e1, _) = basis(axis);
    helix(
        center + e1 * radius,
        axis,
        radius,
        pitch,
        turns,
        segments,
        0.0,
    )
}

/// Points of a helix about unit `axis`, starting at `start` (on the curve),
/// radius `r`, rise `pitch` per turn, `turns` turns in `n` equal segments.
fn helix(
    start: DVec3,
    axis: DVec3,
    r: f64,
    pitch: f64,
    turns: f64,
    n: usize,
    phase: f64,
) -> Vec<DVec3> {
    let (e1, e2) = basis(axis);
    let radial = |phi: f64| (e1 * phi.cos() + e2 * phi.sin()) * r;
    let center = start - radial(phase);
    (0..=n)
        .map(|k| {
            let phi = std::f64::consts::TAU * turns * k as f64 / n as f64;
            center + radial(phase + phi) + axis * (pitch * phi / std::f64::consts::TAU)
        })
        .collect()
}

/// The polylines of one `[[rods]]` entry, checked (a field and what is
/// wrong with it); `groom` holds the strands of a `groom` entry, already
/// read and placed (`crate::groom::prepare`).
pub fn generate(
    section: &RodSection,
    groom: Option<Vec<(usize, Vec<DVec3>)>>,
) -> Result<Generated<'_>, Field> {
    match section {
        RodSection::Groom(r) => Ok(Generated {
            common: common!(r, EndKind::Clamped),
            rods: groom
                .expect("groom strands are read before generating")
                .into_iter()
                .map(|(_, points)| GenRod {
                    points,
                    rest: None,
                    frame_angle: 0.0,
                })
                .collect(),
            many: true,
        }),
        RodSection::Polyline(r) => Ok(Generated {
            common: common!(r, EndKind::Free),
            rods: vec![GenRod {
                points: r.points.iter().copied().map(v3).collect(),
                rest: r
                    .rest_points
                    .as_ref()
                    .map(|p| p.iter().copied().map(v3).collect()),
                frame_angle: 0.0,
            }],
            many: false,
        }),
        RodSection::Straight(r) => {
            let n = segments(r.segments)?;
            let (a, b) = (v3(r.from), v3(r.to));
            Ok(Generated {
                common: common!(r, EndKind::Free),
                rods: vec![GenRod {
                    points: straight_points(a, b, n),
                    rest: None,
                    frame_angle: 0.0,
                }],
                many: false,
            })
        }
        RodSection::Helix(r) => {
            let n = segments(r.segments)?;
            positive("radius", r.radius)?;
            positive("turns", r.turns)?;
            let axis = v3(r.axis)
                .try_normalize()
                .ok_or_else(|| ("axis".to_string(), "must not be zero".to_string()))?;
            Ok(Generated {
                common: common!(r, EndKind::Free),
                rods: vec![GenRod {
                    points: helix_points(v3(r.center), axis, r.radius, r.pitch, r.turns, n),
                    rest: None,
                    frame_angle: 0.0,
                }],
                many: false,
            })
        }
        RodSection::Scalp(r) => {
            let n = segments(r.segments)?;
            positive("radius", r.radius)?;
            positive("length", r.length)?;
            fraction("length_variation", r.length_variation)?;
            if r.count == 0 {
                return Err(("count".into(), "must be at least 1".into()));
            }
            if !(r.cap_angle > 0.0 && r.cap_angle <= 180.0) {
                return Err((
                    "cap_angle".into(),
                    format!("must be in (0, 180] degrees, got {}", r.cap_angle),
                ));
            }
            if r.curl_radius < 0.0 {
                return Err((
                    "curl_radius".into(),
                    format!("must not be negative, got {}", r.curl_radius),
                ));
            }
            let curl_pitch = if r.curl_radius > 0.0 {
                let circ = std::f64::consts::TAU * r.curl_radius;
                if r.curl_period <= circ {
                    return Err((
                        "curl_period".into(),
                        format!(
                            "must exceed one curl circumference 2π·curl_radius = {circ} m, got {}",
                            r.curl_period
                        ),
                    ));
                }
                (r.curl_period * r.curl_period - circ * circ).sqrt()
            } else {
                0.0
            };
            let up = v3(r.up)
                .try_normalize()
                .ok_or_else(|| ("up".to_string(), "must not be zero".to_string()))?;
            let (e1, e2) = basis(up);
            let center = v3(r.center);
            let mut rng = Pcg64::seed_from_u64(r.seed);
            let cos_cap = r.cap_angle.to_radians().cos();
            let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
            let rods = (0..r.count)
                .map(|k| {
                    // Fibonacci spiral over the cap: even coverage for any count.
                    let z = 1.0 - (1.0 - cos_cap) * (k as f64 + 0.5) / r.count as f64;
                    let s = (1.0 - z * z).max(0.0).sqrt();
                    let phi = golden * k as f64;
                    let normal = up * z + (e1 * phi.cos() + e2 * phi.sin()) * s;
                    let root = center + normal * r.radius;
                    let length =
                        r.length * (1.0 + r.length_variation * rng.random_range(-1.0..1.0));
                    let points = if r.curl_radius > 0.0 {
                        let turns = length / r.curl_period;
                        helix(
                            root,
                            normal,
                            r.curl_radius,
                            curl_pitch,
                            turns,
                            n,
                            rng.random_range(0.0..std::f64::consts::TAU),
                        )
                    } else {
                        (0..=n)
                            .map(|j| root + normal * (length * j as f64 / n as f64))
                            .collect()
                    };
                    GenRod {
                        points,
                        rest: None,
                        frame_angle: 0.0,
                    }
                })
                .collect();
            Ok(Generated {
                common: common!(r, EndKind::Clamped),
                rods,
                many: true,
            })
        }
        RodSection::Grass(r) => {
            let n = segments(r.segments)?;
            positive("height", r.height)?;
            positive("size[0]", r.size[0])?;
            positive("size[1]", r.size[1])?;
            fraction("height_variation", r.height_variation)?;
            if r.count == 0 {
                return Err(("count".into(), "must be at least 1".into()));
            }
            if !(0.0..90.0).contains(&r.lean) {
                return Err((
                    "lean".into(),
                    format!("must be in [0, 90) degrees, got {}", r.lean),
                ));
            }
            if r.bend.abs() >= 170.0 {
                return Err((
                    "bend".into(),
                    format!("must be below 170 degrees in size, got {}", r.bend),
                ));
            }
            let origin = v3(r.origin);
            let mut rng = Pcg64::seed_from_u64(r.seed);
            let rods = (0..r.count)
                .map(|_| {
                    let root = origin
                        + DVec3::new(
                            r.size[0] * rng.random::<f64>(),
                            0.0,
                            r.size[1] * rng.random::<f64>(),
                        );
                    let azimuth = rng.random_range(0.0..std::f64::consts::TAU);
                    let side = DVec3::new(azimuth.cos(), 0.0, azimuth.sin());
                    let lean = r.lean.to_radians() * rng.random::<f64>();
                    let height =
                        r.height * (1.0 + r.height_variation * rng.random_range(-1.0..1.0));
                    let h = height / n as f64;
                    // The blade turns by `bend` in total, evenly, in the lean plane.
                    let turn = r.bend.to_radians() / n as f64;
                    let mut p = vec![root];
                    for j in 0..n {
                        let a = lean + turn * j as f64;
                        let t = DVec3::Y * a.cos() + side * a.sin();
                        p.push(p[j] + t * h);
                    }
                    GenRod {
                        points: p,
                        rest: None,
                        frame_angle: rng.random_range(0.0..std::f64::consts::PI),
                    }
                })
                .collect();
            Ok(Generated {
                common: common!(r, EndKind::Clamped),
                rods,
                many: true,
            })
        }
    }
}
