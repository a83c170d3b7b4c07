//! The JSON result of `strands run` (schema in README.md, "Result file").

use serde::Serialize;

use crate::backend::Simulator;
use crate::cpu::{Diagnostics, clamp_torques_of};

#[derive(Serialize)]
pub struct RunResult {
    pub scene: String,
    pub backend: crate::backend::BackendKind,
    /// The GPU adapter, when the GPU backend ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// Step length (s) and substeps per step.
    pub dt: f64,
    pub substeps: u32,
    /// Steps taken.
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
    (0..sim.rods().rod_count())
        .map(|r| RodResult {
            name: sim.rods().names[r].clone(),
            positions: rod_positions(sim, r),
            theta: sim.state().theta[sim.rods().edges(r)].to_vec(),
            clamp_torque: clamp_torques_of(sim.rods(), sim.state(), r),
        })
        .collect()
}
