//! Grooms in and out: strands read from hair-model files (Cem Yuksel's
//! `.hair`, USD `BasisCurves`) become rods of a scene (`kind = "groom"`),
//! and a run's frames are written as USD `BasisCurves` with time samples
//! (`strands run --usd`).
//!
//! Crates: `openusd` 0.6.0 reads USD (see `usd`); no crate reads `.hair`,
//! so `hair` is written by hand, as is the `.usda` writer (see `usd` for why).

pub mod hair;
pub mod usd;

use glam::{DQuat, DVec3};
use std::path::Path;

/// The strands of a groom file, root first, in file units.
pub type Strands = Vec<Vec<[f32; 3]>>;

/// Read the strands of a `.hair` or USD (`.usda`, `.usdc`, `.usdz`, `.usd`)
/// file. Errors say what is wrong; the caller adds the file name.
pub fn load(path: &Path) -> Result<Strands, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("hair") => Ok(hair::read(path)?.strands),
        Some("usda" | "usdc" | "usdz" | "usd") => {
            let mut out = Vec::new();
            for c in usd::read(path)? {
                let points = c.rest_points().expect("checked by usd::read");
                let mut at = 0;
                for n in &c.counts {
                    out.push(points[at..at + n].to_vec());
                    at += n;
                }
            }
            Ok(out)
        }
        _ => Err(
            "unknown groom format: the file name must end in .hair, .usda, .usdc, .usdz or .usd"
                .into(),
        ),
    }
}

/// How the strands of a file become rods.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// File units to metres.
    pub scale: f64,
    /// Rotation vector (rad), applied after scaling.
    pub rotation: DVec3,
    /// Translation (m), applied last.
    pub translation: DVec3,
    /// Resample every strand to this many segments of equal length (by arc
    /// length); `None` keeps the file's points.
    pub segments: Option<usize>,
    /// Take every k-th strand of the file (1: all).
    pub every: usize,
    /// Then at most this many strands.
    pub max_strands: Option<usize>,
}

/// Strands picked, placed and resampled, with their index in the file.
/// Errors name the strand (its index in the file) and what is wrong.
pub fn prepare(strands: &Strands, p: &Placement) -> Result<Vec<(usize, Vec<DVec3>)>, String> {
    let q = DQuat::from_scaled_axis(p.rotation);
    let picked = strands
        .iter()
        .enumerate()
        .step_by(p.every.max(1))
        .take(p.max_strands.unwrap_or(usize::MAX));
    let mut out = Vec::new();
    for (i, s) in picked {
        if s.len() < 2 {
            return Err(format!(
                "strand {i} has {} point{}; a strand needs at least 2",
                s.len(),
                if s.len() == 1 { "" } else { "s" }
            ));
        }
        if let Some(k) = s.iter().position(|x| x.iter().any(|c| !c.is_finite())) {
            return Err(format!("strand {i}: point {k} is not a finite number"));
        }
        let placed: Vec<DVec3> = s
            .iter()
            .map(|x| {
                let v = DVec3::new(x[0].into(), x[1].into(), x[2].into());
                q * (v * p.scale) + p.translation
            })
            .collect();
        let points = match p.segments {
            Some(n) => resample(&placed, n)
                .ok_or_else(|| format!("strand {i} has zero length (all its points coincide)"))?,
            None => {
                if let Some(k) = placed.windows(2).position(|w| w[0] == w[1]) {
                    return Err(format!(
                        "strand {i}: points {k} and {} coincide (a zero-length segment); set `segments` to resample the strands by arc length, which passes over repeated points",
                        k + 1
                    ));
                }
                placed
            }
        };
        out.push((i, points));
    }
    if out.is_empty() {
        return Err("the file has no strands".into());
    }
    Ok(out)
}

/// `n + 1` points at equal arc-length steps along the polyline `p` (its
/// ends kept); `None` when `p` has zero length. Repeated points add no
/// length and so drop out.
pub fn resample(p: &[DVec3], n: usize) -> Option<Vec<DVec3>> {
    let mut s = vec![0.0];
    for w in p.windows(2) {
        s.push(s.last().unwrap() + (w[1] - w[0]).length());
    }
    let total = *s.last().unwrap();
    if total.is_nan() || total <= 0.0 || n == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(n + 1);
    let mut j = 0;
    for k in 0..=n {
        let target = total * k as f64 / n as f64;
        while j + 2 < s.len() && s[j + 1] < target {
            j += 1;
        }
        let len = s[j + 1] - s[j];
        let t = if len > 0.0 {
            ((target - s[j]) / len).clamp(0.0, 1.0)
        } else {
            0.0
        };
        out.push(p[j].lerp(p[j + 1], t));
    }
    *out.last_mut().unwrap() = *p.last().unwrap();
    Some(out)
}
