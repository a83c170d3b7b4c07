//! Sizes that cannot fit: the memory a scene needs is estimated from its
//! sections before any rod is generated, and the work of a run (vertices ×
//! substeps × steps) before it starts, so that `count = 1e9` is refused
//! with the figures instead of aborting in an allocation, and
//! `substeps = 1e9` instead of running for ever (docs/SCENES.md, "Errors").

use super::Field;
use super::Scene;
use super::format::{RodSection, SceneFile};

/// Host memory per vertex while `strands run` simulates (bytes). Measured
/// as the slope of peak RSS (`/usr/bin/time -f %M`) against vertex count on
/// the CPU backend, with the rods' share included: about 520 B for grass of
/// 32-vertex blades, 650 B for 17-vertex hair with interaction (scene, rod
/// set, state and the state saved before each step, workspace, grid, result).
pub const BYTES_PER_VERTEX: u64 = 640;
/// Host memory per rod besides its vertices (bytes; measured about 750 B
/// with 3-vertex rods: names, per-rod vectors of the scene, rod set and result).
pub const BYTES_PER_ROD: u64 = 1024;
/// Memory limit where the machine's cannot be read (/proc/meminfo).
pub const FALLBACK_MEMORY: u64 = 16 << 30;
/// Default largest run, in vertex-substeps (`strands run --max-work`).
pub const DEFAULT_MAX_WORK: f64 = 1e12;
/// Bytes per stored frame vertex (positions and θ in the result) and per
/// diagnostics entry.
const BYTES_PER_FRAME_VERTEX: u64 = 32;
const BYTES_PER_STEP: u64 = 160;

/// The memory a scene may use (bytes), and where that figure comes from.
pub fn memory_limit() -> (u64, String) {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    match total {
        Some(kb) => (
            kb * 1024,
            "this machine's physical memory (MemTotal)".into(),
        ),
        None => (
            FALLBACK_MEMORY,
            "the fixed limit used where /proc/meminfo cannot be read".into(),
        ),
    }
}

/// A byte count in words: `1.5 GiB`.
pub fn bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b:.0} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// A count in words: exact below a million, else `1.234e9`.
fn count(x: f64) -> String {
    if x < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.3e}")
    }
}

/// `n` and the noun, plural unless `n` is 1.
fn counted(x: f64, one: &str, many: &str) -> String {
    if x == 1.0 {
        format!("1 {one}")
    } else {
        format!("{} {many}", count(x))
    }
}

/// Rods and vertices a `[[rods]]` entry makes, and the field that sets the
/// larger factor (counted in f64: `count × segments` may overflow usize).
fn entry_size(i: usize, r: &RodSection, read: Option<(usize, usize)>) -> (f64, f64, String) {
    let f = |k: &str| format!("rods[{i}].{k}");
    let many = |count: usize, segments: usize| {
        let (c, n) = (count as f64, segments as f64 + 1.0);
        let field = if c >= n { f("count") } else { f("segments") };
        (c, c * n, field)
    };
    match r {
        RodSection::Polyline(r) => (1.0, r.points.len() as f64, f("points")),
        RodSection::Straight(r) => (1.0, r.segments as f64 + 1.0, f("segments")),
        RodSection::Helix(r) => (1.0, r.segments as f64 + 1.0, f("segments")),
        RodSection::Scalp(r) => many(r.count, r.segments),
        RodSection::Grass(r) => many(r.count, r.segments),
        // Counted from the strands read (the file's size bounds what reading it takes).
        RodSection::Groom(_) => {
            let (rods, vertices) = read.unwrap_or_default();
            (rods as f64, vertices as f64, f("file"))
        }
    }
}

/// Refuse a scene whose rods would not fit in memory, before generating them.
/// `grooms[i]` is the rods and vertices of `rods[i]` when it is a groom,
/// whose strands are read first.
pub fn check_memory(file: &SceneFile, grooms: &[Option<(usize, usize)>]) -> Result<(), Field> {
    check_memory_within(file, grooms, memory_limit())
}

fn check_memory_within(
    file: &SceneFile,
    grooms: &[Option<(usize, usize)>],
    (limit, what): (u64, String),
) -> Result<(), Field> {
    let sizes: Vec<_> = file
        .rods
        .iter()
        .enumerate()
        .map(|(i, r)| entry_size(i, r, grooms.get(i).copied().flatten()))
        .collect();
    let rods: f64 = sizes.iter().map(|s| s.0).sum();
    let vertices: f64 = sizes.iter().map(|s| s.1).sum();
    let need = vertices * BYTES_PER_VERTEX as f64 + rods * BYTES_PER_ROD as f64;
    if need <= limit as f64 {
        return Ok(());
    }
    let (i, largest) = sizes
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.1.total_cmp(&b.1.1))
        .expect("a scene over the limit has rods");
    Err((
        largest.2.clone(),
        format!(
            "the scene needs about {} of memory ({} in {}, of which rods[{i}] makes {} in {}; about {BYTES_PER_VERTEX} B per vertex and {BYTES_PER_ROD} B per rod), more than {} of {what}",
            bytes(need),
            counted(vertices, "vertex", "vertices"),
            counted(rods, "rod", "rods"),
            counted(largest.1, "vertex", "vertices"),
            counted(largest.0, "rod", "rods"),
            bytes(limit as f64),
        ),
    ))
}

/// The command line's guard (`strands run`; its flags name the fields).
/// Refuse a run of `steps` steps (frames stored every `every`, 0: none) that
/// is larger than `max_work` vertex-substeps, or whose stored frames and
/// diagnostics would not fit in memory with the scene. `steps_field` names
/// where the step count came from (`sim.steps` or `--steps`); `usd`: the
/// run also keeps `--usd` frames (every K-th step, or every step).
#[doc(hidden)]
pub fn check_run(
    scene: &Scene,
    steps: u64,
    steps_field: &str,
    every: u64,
    max_work: f64,
    usd: bool,
) -> Result<(), Field> {
    let vertices: usize = scene.rods.iter().map(|r| r.points.len()).sum();
    let substeps = scene.params.substeps;
    let work = vertices as f64 * substeps as f64 * steps as f64;
    if work > max_work {
        return Err((
            format!("{steps_field} × sim.substeps × vertices"),
            format!(
                "the run is {steps} steps × {substeps} substeps × {vertices} vertices = {work:.3e} vertex-substeps, more than the limit of {max_work:.3e}; take fewer steps or substeps, or raise the limit with --max-work if the run is meant to be this long"
            ),
        ));
    }
    let (limit, what) = memory_limit();
    let scene_bytes =
        vertices as f64 * BYTES_PER_VERTEX as f64 + scene.rods.len() as f64 * BYTES_PER_ROD as f64;
    let frames = steps.checked_div(every).map_or(0.0, |n| (n + 1) as f64);
    let frame_bytes = frames * vertices as f64 * BYTES_PER_FRAME_VERTEX as f64;
    let step_bytes = (steps as f64 + 1.0) * BYTES_PER_STEP as f64;
    // `--usd` frames: f32 positions (`crate::groom::usd::UsdWriter`).
    let usd_frames = if usd {
        (steps / every.max(1) + 1) as f64
    } else {
        0.0
    };
    let usd_bytes = usd_frames * vertices as f64 * 12.0;
    let need = scene_bytes + frame_bytes + step_bytes + usd_bytes;
    if need > limit as f64 {
        let field = if usd_bytes > frame_bytes.max(step_bytes) {
            "--usd".to_string()
        } else if frame_bytes > step_bytes {
            "--every".to_string()
        } else {
            steps_field.to_string()
        };
        return Err((
            field,
            format!(
                "the run needs about {} of memory: the scene {}, {frames:.0} stored frames {}, {steps} steps of diagnostics {}, {usd_frames:.0} USD frames {}; more than {} of {what}",
                bytes(need),
                bytes(scene_bytes),
                bytes(frame_bytes),
                bytes(step_bytes),
                bytes(usd_bytes),
                bytes(limit as f64)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SceneFile {
        super::super::de::scene_file(text).unwrap()
    }

    #[test]
    fn memory_is_estimated_from_the_sections() {
        let f = file(
            "[[rods]]\nkind = \"grass\"\nmaterial = \"m\"\norigin = [0,0,0]\nsize = [1,1]\ncount = 1000\nheight = 0.1\nsegments = 9\n",
        );
        // 1000 rods of 10 vertices.
        let need = 10_000 * BYTES_PER_VERTEX + 1000 * BYTES_PER_ROD;
        assert!(check_memory_within(&f, &[], (need, "test".into())).is_ok());
        let (field, message) = check_memory_within(&f, &[], (need - 1, "test".into())).unwrap_err();
        assert_eq!(field, "rods[0].count");
        assert!(message.contains("10000 vertices in 1000 rods"), "{message}");
    }

    #[test]
    fn a_billion_segments_do_not_overflow() {
        let f = file(
            "[[rods]]\nkind = \"scalp\"\nmaterial = \"m\"\ncenter = [0,0,0]\nradius = 0.1\ncount = 4000000000\nlength = 0.1\nsegments = 9000000000000000000\n",
        );
        let (field, message) = check_memory_within(&f, &[], (1 << 40, "test".into())).unwrap_err();
        assert_eq!(field, "rods[0].segments");
        assert!(message.contains("EiB"), "{message}");
    }
}
