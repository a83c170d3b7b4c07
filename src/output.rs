//! The JSON result of `strands run` (schema in docs/SCENES.md, "Result file").

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::backend::Simulator;
use crate::cpu::{Diagnostics, clamp_torques_of};
use crate::model::rods::{RodSet, State};

/// Version of the result format: raised when a field changes meaning or
/// is removed (adding a field does not raise it).
pub const SCHEMA: u32 = 1;

/// The unit of every physical quantity in the result, by field name.
pub const UNITS: &[(&str, &str)] = &[
    ("dt", "s"),
    ("time", "s"),
    ("positions", "m"),
    ("theta", "rad"),
    ("clamp_torque", "N·m"),
    ("bending", "J"),
    ("twisting", "J"),
    ("gravitational", "J"),
    ("kinetic", "J"),
    ("total", "J"),
    ("max_strain", "1"),
    ("max_speed", "m/s"),
    ("max_penetration", "m"),
    ("newton_residual", "N"),
    ("rod_penetration", "m"),
];

fn units<S: serde::Serializer>(_: &(), s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(UNITS.len()))?;
    for (k, v) in UNITS {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

#[derive(Serialize)]
pub struct RunResult {
    /// `SCHEMA`: the version of this format.
    pub schema: u32,
    /// `UNITS`: field name → unit.
    #[serde(serialize_with = "units")]
    pub units: (),
    pub scene: String,
    pub backend: crate::backend::BackendKind,
    /// The GPU adapter, when the GPU backend ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// Step length (s) and substeps per step.
    pub dt: f64,
    pub substeps: u32,
    /// Whether every requested step was taken. A run that stops early (a
    /// blow-up, Ctrl-C) writes what it simulated up to then, `false` here.
    pub complete: bool,
    /// Why the run stopped early (absent when complete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Steps asked for.
    pub requested_steps: u64,
    /// Steps taken: `rods` and `time` are the state after the last of them.
    pub steps: u64,
    /// Frames are stored every `every` steps (0: none).
    pub every: u64,
    /// Final time (s).
    pub time: f64,
    /// Final state of every rod.
    pub rods: Vec<RodResult>,
    /// Stored frames, step 0 (initial state) included.
    pub frames: Vec<Frame>,
    /// One entry per step, step 0 (initial state) included.
    pub diagnostics: Vec<StepDiagnostics>,
}

#[derive(Serialize)]
pub struct RodResult {
    pub name: String,
    /// Vertex positions (m).
    pub positions: Vec<[f64; 3]>,
    /// Twist angle of every edge's material frame against its Bishop frame (rad).
    pub theta: Vec<f64>,
    /// Torque (N·m) about the edge axis at the clamped start / end, null if free.
    pub clamp_torque: [Option<f64>; 2],
}

#[derive(Serialize)]
pub struct FrameRod {
    pub positions: Vec<[f64; 3]>,
    pub theta: Vec<f64>,
}

#[derive(Serialize)]
pub struct Frame {
    pub step: u64,
    pub time: f64,
    pub rods: Vec<FrameRod>,
}

#[derive(Serialize)]
pub struct StepDiagnostics {
    pub step: u64,
    #[serde(flatten)]
    pub values: Diagnostics,
    /// bending + twisting + gravitational + kinetic (J).
    pub total: f64,
}

impl StepDiagnostics {
    pub fn new(step: u64, values: Diagnostics) -> Self {
        let total = values.bending + values.twisting + values.gravitational + values.kinetic;
        StepDiagnostics {
            step,
            values,
            total,
        }
    }
}

fn rod_positions(sim: &Simulator, r: usize) -> Vec<[f64; 3]> {
    sim.state().pos[sim.rods().vertices(r)]
        .iter()
        .map(|p| p.to_array())
        .collect()
}

pub fn frame(sim: &Simulator) -> Frame {
    Frame {
        step: sim.step_count(),
        time: sim.state().time,
        rods: (0..sim.rods().rod_count())
            .map(|r| FrameRod {
                positions: rod_positions(sim, r),
                theta: sim.state().theta[sim.rods().edges(r)].to_vec(),
            })
            .collect(),
    }
}

pub fn final_rods(sim: &Simulator) -> Vec<RodResult> {
    rods_of(sim.rods(), sim.state())
}

/// Every rod of `state`, as the result stores it.
pub fn rods_of(rods: &RodSet, state: &State) -> Vec<RodResult> {
    (0..rods.rod_count())
        .map(|r| RodResult {
            name: rods.names[r].clone(),
            positions: state.pos[rods.vertices(r)]
                .iter()
                .map(|p| p.to_array())
                .collect(),
            theta: state.theta[rods.edges(r)].to_vec(),
            clamp_torque: clamp_torques_of(rods, state, r),
        })
        .collect()
}

/// The `--out` file of `strands run`. Opened before simulating, so that a
/// path that cannot be written is found at once; written to a temporary
/// file beside it and renamed over it at the end, so that a run that fails
/// before its result leaves nothing (and an earlier result stays whole).
/// Existing special files (`/dev/stdout`, a pipe) are written directly.
pub struct OutFile {
    /// The option that named it (`--out`, `--usd`), for messages.
    flag: &'static str,
    target: PathBuf,
    /// The temporary file, renamed to `target` by `write`; `None` when
    /// writing `target` directly.
    temp: Option<PathBuf>,
    file: Option<std::fs::File>,
}

impl OutFile {
    pub fn create(target: &Path) -> Result<OutFile, String> {
        OutFile::create_for("--out", target)
    }

    /// As `create`, for the file of option `flag` (named in messages).
    pub fn create_for(flag: &'static str, target: &Path) -> Result<OutFile, String> {
        let shown = target.display();
        let meta = std::fs::metadata(target).ok();
        if let Some(m) = &meta {
            if m.is_dir() {
                return Err(format!("{flag} {shown}: is a directory"));
            }
            if m.permissions().readonly() {
                return Err(format!("{flag} {shown}: the file is read-only"));
            }
            if !m.is_file() {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(target)
                    .map_err(|e| format!("{flag} {shown}: cannot write: {e}"))?;
                return Ok(OutFile {
                    flag,
                    target: target.into(),
                    temp: None,
                    file: Some(file),
                });
            }
        }
        // An existing link is replaced at the file it points to.
        let real = match meta {
            Some(_) => std::fs::canonicalize(target)
                .map_err(|e| format!("{flag} {shown}: cannot resolve: {e}"))?,
            None => target.to_path_buf(),
        };
        let name = real
            .file_name()
            .ok_or_else(|| format!("{flag} {shown}: not a file name"))?;
        let dir = match real.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = dir.join(format!(
            ".{}.{}.partial",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = std::fs::File::create(&temp).map_err(|e| {
            format!(
                "{flag} {shown}: cannot create a file in {}: {e}",
                dir.display()
            )
        })?;
        Ok(OutFile {
            flag,
            target: real,
            temp: Some(temp),
            file: Some(file),
        })
    }

    /// The temporary file being written, if any (to remove on a forced exit).
    pub fn temp(&self) -> Option<&Path> {
        self.temp.as_deref()
    }

    /// Write the result and put it in place.
    pub fn write(self, result: &RunResult) -> Result<(), String> {
        self.write_with(|w| serde_json::to_writer(w, result).map_err(std::io::Error::other))
    }

    /// Write the file with `body` and put it in place.
    pub fn write_with(
        mut self,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let (flag, shown) = (self.flag, self.target.display().to_string());
        let file = self.file.take().expect("written once");
        let mut w = std::io::BufWriter::new(file);
        body(&mut w).map_err(|e| format!("{flag} {shown}: cannot write: {e}"))?;
        w.flush()
            .map_err(|e| format!("{flag} {shown}: cannot write: {e}"))?;
        drop(w);
        if let Some(temp) = self.temp.take() {
            std::fs::rename(&temp, &self.target).map_err(|e| {
                let _ = std::fs::remove_file(&temp);
                format!("{flag} {shown}: cannot replace it: {e}")
            })?;
        }
        Ok(())
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_file(temp);
        }
    }
}
