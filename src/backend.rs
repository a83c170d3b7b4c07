//! One interface over the CPU reference and the GPU simulator, for callers
//! that run either (`strands run`, the benchmark, the demo).

use crate::cpu::{CpuSimulator, Diagnostics, Unstable, diagnostics_of};
use crate::gpu::{GpuContext, GpuError, GpuSimulator};
use crate::params::SimParams;
use crate::rods::{RodSet, State};

/// Which simulator to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Cpu,
    Gpu,
}

/// A simulator on either backend. The GPU one keeps a host copy of the
/// state, refreshed by `step` (which reads back every step: `run` writes
/// every step's diagnostics; use `GpuSimulator::step` to avoid reading back).
pub enum Simulator {
    Cpu(Box<CpuSimulator>),
    Gpu {
        sim: Box<GpuSimulator>,
        state: State,
        diagnostics: Box<Diagnostics>,
    },
}

impl Simulator {
    pub fn cpu(rods: RodSet, state: State, params: SimParams) -> Self {
        Simulator::Cpu(Box::new(CpuSimulator::new(rods, state, params)))
    }

    pub fn gpu(
        ctx: &GpuContext,
        rods: RodSet,
        state: State,
        params: SimParams,
    ) -> Result<Self, GpuError> {
        let sim = GpuSimulator::new(ctx, rods, state, params)?;
        let state = sim.read_state();
        let diagnostics = diagnostics_of(&sim.rods, &state, &sim.params);
        Ok(Simulator::Gpu {
            sim: Box::new(sim),
            state,
            diagnostics: Box::new(diagnostics),
        })
    }

    pub fn kind(&self) -> BackendKind {
        match self {
            Simulator::Cpu(_) => BackendKind::Cpu,
            Simulator::Gpu { .. } => BackendKind::Gpu,
        }
    }

    /// Advance one frame of `params.dt`; an error when a rod blew up.
    pub fn step(&mut self) -> Result<Diagnostics, Unstable> {
        match self {
            Simulator::Cpu(sim) => sim.step(),
            Simulator::Gpu {
                sim,
                state,
                diagnostics,
            } => {
                let (s, d) = sim.step_checked()?;
                *state = s;
                **diagnostics = d;
                Ok(d)
            }
        }
    }

    pub fn rods(&self) -> &RodSet {
        match self {
            Simulator::Cpu(sim) => &sim.rods,
            Simulator::Gpu { sim, .. } => &sim.rods,
        }
    }

    pub fn params(&self) -> &SimParams {
        match self {
            Simulator::Cpu(sim) => &sim.params,
            Simulator::Gpu { sim, .. } => &sim.params,
        }
    }

    /// The state after the last step (GPU: as read back then, in f64).
    pub fn state(&self) -> &State {
        match self {
            Simulator::Cpu(sim) => &sim.state,
            Simulator::Gpu { state, .. } => state,
        }
    }

    pub fn step_count(&self) -> u64 {
        match self {
            Simulator::Cpu(sim) => sim.step_count,
            Simulator::Gpu { sim, .. } => sim.step_count,
        }
    }

    /// Diagnostics of the current state.
    pub fn diagnostics(&self) -> Diagnostics {
        match self {
            Simulator::Cpu(sim) => sim.diagnostics(),
            Simulator::Gpu { diagnostics, .. } => **diagnostics,
        }
    }
}
