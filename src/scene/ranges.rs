//! Range checks at load: every number of a scene must lie in a generous but
//! finite range (docs/SCENES.md, "Errors"), so that derived quantities (edge
//! lengths squared, B = E·π·r⁴/4, masses, their inverses) neither underflow
//! to 0 nor overflow, and an absurd value is refused naming its field
//! instead of surfacing later as NaN or a zero limit.

use super::Field;
use super::format::*;

/// Largest coordinate, and largest length of any size (m).
pub const MAX_LENGTH: f64 = 1e6;
/// Smallest positive length of any size (m).
pub const MIN_LENGTH: f64 = 1e-9;
/// Largest section radius or semi-axis (m).
pub const MAX_SECTION: f64 = 10.0;
/// Largest speed of wind, gusts and initial velocities (m/s).
pub const MAX_VELOCITY: f64 = 1e5;
/// Largest angle (degrees), and largest angular velocity (degrees/s).
pub const MAX_ANGLE: f64 = 1e7;
/// Largest iteration count of a solver.
pub const MAX_ITERATIONS: u32 = 10_000;

/// `lo ≤ v ≤ hi`; the message for `v ≤ 0` with `lo > 0` says "positive".
fn within(field: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), Field> {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    let message = if lo > 0.0 && v <= 0.0 {
        format!("must be positive, got {v}")
    } else if lo == 0.0 && v < 0.0 {
        format!("must not be negative, got {v}")
    } else if v < lo {
        format!("must be at least {lo:e}{unit}, got {v:e}")
    } else if v > hi {
        format!("must be at most {hi:e}{unit}, got {v:e}")
    } else {
        return Ok(());
    };
    Err((field.into(), message))
}

/// `|v| ≤ max`.
fn bounded(field: &str, v: f64, max: f64, unit: &str) -> Result<(), Field> {
    if v.abs() <= max {
        Ok(())
    } else {
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        Err((
            field.into(),
            format!("must be within ±{max:e}{unit}, got {v:e}"),
        ))
    }
}

fn point(field: &str, p: &V3) -> Result<(), Field> {
    for (i, x) in p.iter().enumerate() {
        bounded(&format!("{field}[{i}]"), *x, MAX_LENGTH, "m")?;
    }
    Ok(())
}

fn vector(field: &str, p: &V3, max: f64, unit: &str) -> Result<(), Field> {
    for (i, x) in p.iter().enumerate() {
        bounded(&format!("{field}[{i}]"), *x, max, unit)?;
    }
    Ok(())
}

fn length(field: &str, v: f64) -> Result<(), Field> {
    within(field, v, MIN_LENGTH, MAX_LENGTH, "m")
}

fn iterations(field: &str, n: u32) -> Result<(), Field> {
    if n <= MAX_ITERATIONS {
        Ok(())
    } else {
        Err((
            field.into(),
            format!("must be at most {MAX_ITERATIONS}, got {n}"),
        ))
    }
}

/// Check every number of the scene against its range.
pub fn check(file: &SceneFile) -> Result<(), Field> {
    sim(&file.sim)?;
    for (name, m) in &file.materials {
        material(name, m)?;
    }
    for (name, a) in &file.anchors {
        let f = |k: &str| format!("anchors.{name}.{k}");
        point(&f("pivot"), &a.pivot)?;
        for (k, key) in a.keyframes.iter().enumerate() {
            let f = |x: &str| f(&format!("keyframes[{k}].{x}"));
            bounded(&f("t"), key.t, 1e9, "s")?;
            point(&f("translation"), &key.translation)?;
            vector(&f("rotation"), &key.rotation, MAX_ANGLE, "degrees")?;
        }
    }
    for (i, r) in file.rods.iter().enumerate() {
        rod(&format!("rods[{i}]"), r)?;
    }
    for (i, c) in file.colliders.iter().enumerate() {
        collider(&format!("colliders[{i}]"), c)?;
    }
    if let Some(s) = &file.rod_contact {
        let f = |k: &str| format!("rod_contact.{k}");
        if let Some(m) = s.friction {
            within(&f("friction"), m, 0.0, 100.0, "")?;
        }
        if let Some(m) = s.static_friction {
            within(&f("static_friction"), m, 0.0, 100.0, "")?;
        }
        if let Some(m) = s.margin {
            within(&f("margin"), m, 0.0, MAX_LENGTH, "m")?;
        }
    }
    if let Some(s) = &file.interaction {
        if let Some(c) = s.cell {
            length("interaction.cell", c)?;
        }
        if let Some(p) = s.padding {
            within("interaction.padding", p, 0.0, MAX_LENGTH, "m")?;
        }
        if let Some(d) = s.rest_density {
            within("interaction.rest_density", d, 1e-9, 1e6, "kg/m³")?;
        }
    }
    Ok(())
}

fn sim(s: &SimSection) -> Result<(), Field> {
    within("sim.dt", s.dt, 1e-9, 100.0, "s")?;
    vector("sim.gravity", &s.gravity, 1e6, "m/s²")?;
    within("sim.drag", s.drag, 0.0, 1e6, "N·s/m²")?;
    within("sim.max_speed", s.max_speed, 1e-9, 1e8, "m/s")?;
    within("sim.twist_tolerance", s.twist_tolerance, 1e-15, 1.0, "rad")?;
    iterations("sim.twist_max_iterations", s.twist_max_iterations)?;
    let p = &s.projection;
    within("sim.projection.tolerance", p.tolerance, 1e-15, 1.0, "")?;
    iterations("sim.projection.iterations", p.iterations)?;
    iterations("sim.projection.max_iterations", p.max_iterations)?;
    let w = &s.wind;
    vector("sim.wind.velocity", &w.velocity, MAX_VELOCITY, "m/s")?;
    within(
        "sim.wind.gust_amplitude",
        w.gust_amplitude,
        0.0,
        MAX_VELOCITY,
        "m/s",
    )?;
    bounded("sim.wind.gust_frequency", w.gust_frequency, 1e6, "Hz")?;
    length("sim.wind.gust_wavelength", w.gust_wavelength)
}

fn material(name: &str, m: &MaterialSection) -> Result<(), Field> {
    let f = |k: &str| format!("materials.{name}.{k}");
    let opt = |k: &str, v: Option<f64>, lo: f64, hi: f64, unit: &str| match v {
        Some(v) => within(&f(k), v, lo, hi, unit),
        None => Ok(()),
    };
    opt("density", m.density, 1e-3, 1e5, "kg/m³")?;
    opt("radius", m.radius, MIN_LENGTH, MAX_SECTION, "m")?;
    if let Some([a, b]) = m.semi_axes {
        within(&f("semi_axes[0]"), a, MIN_LENGTH, MAX_SECTION, "m")?;
        within(&f("semi_axes[1]"), b, MIN_LENGTH, MAX_SECTION, "m")?;
    }
    opt("youngs_modulus", m.youngs_modulus, 1.0, 1e13, "Pa")?;
    opt("shear_modulus", m.shear_modulus, 1.0, 1e13, "Pa")?;
    match &m.bending_stiffness {
        Some(Stiffness::Scalar(b)) => within(&f("bending_stiffness"), *b, 1e-40, 1e20, "N·m²")?,
        Some(Stiffness::List(l)) => {
            for (i, b) in l.iter().enumerate() {
                let field = f(&format!("bending_stiffness[{i}]"));
                if l.len() == 3 && i == 1 {
                    // b12 may have either sign.
                    bounded(&field, *b, 1e20, "N·m²")?;
                } else {
                    within(&field, *b, 1e-40, 1e20, "N·m²")?;
                }
            }
        }
        None => {}
    }
    opt("twist_stiffness", m.twist_stiffness, 1e-40, 1e20, "N·m²")?;
    opt("mass_per_length", m.mass_per_length, 1e-25, 1e10, "kg/m")?;
    opt("drag", m.drag, 0.0, 1e6, "N·s/m²")
}

/// The fields every rod kind has.
macro_rules! common_ranges {
    ($f:expr, $r:expr) => {
        bounded(&$f("frame_angle"), $r.frame_angle, MAX_ANGLE, "degrees")?;
        if let Some(v) = &$r.velocity {
            vector(&$f("velocity"), v, MAX_VELOCITY, "m/s")?;
        }
        if let Some(w) = &$r.angular_velocity {
            vector(&$f("angular_velocity"), w, MAX_ANGLE, "degrees/s")?;
        }
    };
}

fn rod(base: &str, r: &RodSection) -> Result<(), Field> {
    let f = |k: &str| format!("{base}.{k}");
    match r {
        RodSection::Polyline(r) => {
            common_ranges!(f, r);
            for (k, p) in r.points.iter().enumerate() {
                point(&f(&format!("points[{k}]")), p)?;
            }
            for (k, p) in r.rest_points.iter().flatten().enumerate() {
                point(&f(&format!("rest_points[{k}]")), p)?;
            }
        }
        RodSection::Straight(r) => {
            common_ranges!(f, r);
            point(&f("from"), &r.from)?;
            point(&f("to"), &r.to)?;
        }
        RodSection::Helix(r) => {
            common_ranges!(f, r);
            point(&f("center"), &r.center)?;
            vector(&f("axis"), &r.axis, MAX_LENGTH, "")?;
            length(&f("radius"), r.radius)?;
            bounded(&f("pitch"), r.pitch, MAX_LENGTH, "m")?;
            within(&f("turns"), r.turns, 1e-9, 1e6, "")?;
        }
        RodSection::Scalp(r) => {
            common_ranges!(f, r);
            point(&f("center"), &r.center)?;
            length(&f("radius"), r.radius)?;
            length(&f("length"), r.length)?;
            vector(&f("up"), &r.up, MAX_LENGTH, "")?;
            within(&f("curl_radius"), r.curl_radius, 0.0, MAX_LENGTH, "m")?;
            length(&f("curl_period"), r.curl_period)?;
        }
        RodSection::Grass(r) => {
            common_ranges!(f, r);
            point(&f("origin"), &r.origin)?;
            length(&f("size[0]"), r.size[0])?;
            length(&f("size[1]"), r.size[1])?;
            length(&f("height"), r.height)?;
        }
        RodSection::Groom(r) => {
            common_ranges!(f, r);
            within(&f("scale"), r.scale, 1e-9, 1e9, "")?;
            vector(&f("rotation"), &r.rotation, MAX_ANGLE, "degrees")?;
            point(&f("translation"), &r.translation)?;
        }
    }
    Ok(())
}

fn collider(base: &str, c: &ColliderSection) -> Result<(), Field> {
    let f = |k: &str| format!("{base}.{k}");
    let (friction, static_friction, margin) = match c {
        ColliderSection::Sphere(c) => (c.friction, c.static_friction, c.margin),
        ColliderSection::Capsule(c) => (c.friction, c.static_friction, c.margin),
        ColliderSection::Plane(c) => (c.friction, c.static_friction, c.margin),
        ColliderSection::Mesh(c) => (c.friction, c.static_friction, c.margin),
    };
    if let Some(m) = friction {
        within(&f("friction"), m, 0.0, 100.0, "")?;
    }
    if let Some(m) = static_friction {
        within(&f("static_friction"), m, 0.0, 100.0, "")?;
    }
    if let Some(m) = margin {
        within(&f("margin"), m, 0.0, MAX_LENGTH, "m")?;
    }
    match c {
        ColliderSection::Sphere(c) => {
            point(&f("center"), &c.center)?;
            length(&f("radius"), c.radius)?;
        }
        ColliderSection::Capsule(c) => {
            point(&f("a"), &c.a)?;
            point(&f("b"), &c.b)?;
            length(&f("radius"), c.radius)?;
        }
        ColliderSection::Plane(c) => {
            point(&f("point"), &c.point)?;
            vector(&f("normal"), &c.normal, MAX_LENGTH, "")?;
        }
        ColliderSection::Mesh(c) => {
            if let Some(h) = c.cell {
                length(&f("cell"), h)?;
            }
        }
    }
    Ok(())
}
