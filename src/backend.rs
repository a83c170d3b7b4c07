//! One interface over the CPU reference and the GPU simulator, for callers
//! that run either (`strands run`, the benchmark, the demo).

use crate::cpu::{CpuSimulator, Diagnostics, Unstable, diagnostics_of};
use crate::gpu::{GpuContext, GpuError, GpuSimulator};
use crate::model::params::SimParams;
use crate::model::rods::{RodSet, State};

/// Which simulator to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The CPU reference (f64).
    Cpu,
    /// The GPU simulator (f32 WGSL).
    Gpu,
}

/// The backend to run and why: what [`choose`] decided.
#[derive(Debug)]
pub struct Choice {
    /// The backend.
    pub kind: BackendKind,
    /// The GPU device, when `kind` is `Gpu`.
    pub gpu: Option<GpuContext>,
    /// Why, as a line for the user: "requested", or why the default fell
    /// where it did.
    pub reason: String,
}

/// What the adapter search found, as [`decide`] sees it.
#[derive(Debug)]
pub enum AdapterFound<'a> {
    /// An adapter; `named`: picked by name (`WGPU_ADAPTER_NAME`), so the
    /// user asked for this one.
    Adapter {
        /// Its description.
        info: &'a wgpu::AdapterInfo,
        /// Whether `WGPU_ADAPTER_NAME` picked it.
        named: bool,
    },
    /// None, and why.
    None(&'a GpuError),
}

/// The decision of [`choose`], on a description of the adapter: the backend
/// and the reason, or the error when the GPU was requested and there is
/// none. The default (no request) is the GPU on a hardware adapter and the
/// CPU reference otherwise: with no adapter, or when the only one is a
/// software renderer (wgpu `DeviceType::Cpu`: llvmpipe, lavapipe, WARP),
/// which runs the GPU kernels on the CPU in f32, slower than the f64
/// reference they approximate. An adapter picked by name is used.
pub fn decide(
    requested: Option<BackendKind>,
    adapter: &AdapterFound,
) -> Result<(BackendKind, String), String> {
    match (requested, adapter) {
        (Some(BackendKind::Cpu), _) => Ok((BackendKind::Cpu, "requested".into())),
        (Some(BackendKind::Gpu), AdapterFound::Adapter { .. }) => {
            Ok((BackendKind::Gpu, "requested".into()))
        }
        (Some(BackendKind::Gpu), AdapterFound::None(e)) => Err(e.to_string()),
        (None, AdapterFound::None(e)) => Ok((BackendKind::Cpu, format!("because {e}"))),
        (None, AdapterFound::Adapter { info, named })
            if info.device_type == wgpu::DeviceType::Cpu && !named =>
        {
            Ok((
                BackendKind::Cpu,
                format!(
                    "because the only GPU adapter, {}, is a software renderer (device type Cpu): it runs the GPU kernels on the CPU in f32, slower than the f64 CPU reference; request the GPU backend to use it anyway",
                    info.name
                ),
            ))
        }
        (None, AdapterFound::Adapter { .. }) => {
            Ok((BackendKind::Gpu, "the default on a hardware adapter".into()))
        }
    }
}

/// Choose the backend for a run: `requested` (`None`: the default, see
/// [`decide`]), opening the GPU device when it is chosen. Errors: the GPU
/// was requested and cannot be opened.
pub fn choose(requested: Option<BackendKind>) -> Result<Choice, GpuError> {
    if requested == Some(BackendKind::Cpu) {
        return Ok(Choice {
            kind: BackendKind::Cpu,
            gpu: None,
            reason: "requested".into(),
        });
    }
    let ctx = GpuContext::headless();
    let named = std::env::var_os("WGPU_ADAPTER_NAME").is_some();
    let found = match &ctx {
        Ok(c) => AdapterFound::Adapter {
            info: &c.info,
            named,
        },
        Err(e) => AdapterFound::None(e),
    };
    match decide(requested, &found) {
        Ok((kind, reason)) => Ok(Choice {
            kind,
            gpu: if kind == BackendKind::Gpu {
                ctx.ok()
            } else {
                None
            },
            reason,
        }),
        Err(_) => Err(ctx.expect_err("decide fails only without an adapter")),
    }
}

/// A simulator on either backend. The GPU one keeps a host copy of the
/// state, refreshed by `step` (which reads back every step: `run` writes
/// every step's diagnostics; use `GpuSimulator::step` to avoid reading back).
pub enum Simulator {
    /// The CPU reference.
    Cpu(Box<CpuSimulator>),
    /// The GPU simulator with the host copy of its last step.
    Gpu {
        /// The simulator.
        sim: Box<GpuSimulator>,
        /// The state read back after the last step.
        state: State,
        /// The diagnostics of the last step.
        diagnostics: Box<Diagnostics>,
    },
}

impl Simulator {
    /// The CPU reference over these rods.
    pub fn cpu(rods: RodSet, state: State, params: SimParams) -> Self {
        Simulator::Cpu(Box::new(CpuSimulator::new(rods, state, params)))
    }

    /// The GPU simulator on `ctx` over these rods.
    pub fn gpu(
        ctx: &GpuContext,
        rods: RodSet,
        state: State,
        params: SimParams,
    ) -> Result<Self, GpuError> {
        let sim = GpuSimulator::new(ctx, rods, state, params)?;
        let state = sim.read_state();
        let diagnostics = diagnostics_of(sim.rods(), &state, sim.params());
        Ok(Simulator::Gpu {
            sim: Box::new(sim),
            state,
            diagnostics: Box::new(diagnostics),
        })
    }

    /// Which backend this is.
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

    /// The rods simulated.
    pub fn rods(&self) -> &RodSet {
        match self {
            Simulator::Cpu(sim) => &sim.rods,
            Simulator::Gpu { sim, .. } => sim.rods(),
        }
    }

    /// The simulation parameters.
    pub fn params(&self) -> &SimParams {
        match self {
            Simulator::Cpu(sim) => &sim.params,
            Simulator::Gpu { sim, .. } => sim.params(),
        }
    }

    /// The state after the last step (GPU: as read back then, in f64).
    pub fn state(&self) -> &State {
        match self {
            Simulator::Cpu(sim) => &sim.state,
            Simulator::Gpu { state, .. } => state,
        }
    }

    /// Steps taken.
    pub fn step_count(&self) -> u64 {
        match self {
            Simulator::Cpu(sim) => sim.step_count,
            Simulator::Gpu { sim, .. } => sim.step_count(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(device_type: wgpu::DeviceType, name: &str) -> wgpu::AdapterInfo {
        let mut info = wgpu::AdapterInfo::new(device_type, wgpu::Backend::Vulkan);
        info.name = name.into();
        info
    }

    /// The default backend: the GPU on a hardware adapter; the CPU reference
    /// on a software renderer (saying which and why) or with no adapter; an
    /// explicit request is honoured, and a software adapter picked by name
    /// is used.
    #[test]
    fn default_backend_avoids_a_software_adapter() {
        let lavapipe = adapter(wgpu::DeviceType::Cpu, "llvmpipe (LLVM 19.1.7, 256 bits)");
        let found = AdapterFound::Adapter {
            info: &lavapipe,
            named: false,
        };
        let (kind, why) = decide(None, &found).unwrap();
        assert_eq!(kind, BackendKind::Cpu);
        assert!(
            why.contains("llvmpipe") && why.contains("software"),
            "{why}"
        );
        assert_eq!(
            decide(Some(BackendKind::Gpu), &found).unwrap().0,
            BackendKind::Gpu
        );
        let named = AdapterFound::Adapter {
            info: &lavapipe,
            named: true,
        };
        assert_eq!(decide(None, &named).unwrap().0, BackendKind::Gpu);
        for t in [
            wgpu::DeviceType::DiscreteGpu,
            wgpu::DeviceType::IntegratedGpu,
            wgpu::DeviceType::VirtualGpu,
        ] {
            let hw = adapter(t, "a GPU");
            let found = AdapterFound::Adapter {
                info: &hw,
                named: false,
            };
            assert_eq!(decide(None, &found).unwrap().0, BackendKind::Gpu, "{t:?}");
            assert_eq!(
                decide(Some(BackendKind::Cpu), &found).unwrap().0,
                BackendKind::Cpu
            );
        }
        let e = GpuError::NoAdapter {
            detail: String::new(),
        };
        let none = AdapterFound::None(&e);
        let (kind, why) = decide(None, &none).unwrap();
        assert_eq!(kind, BackendKind::Cpu);
        assert!(why.contains("no GPU adapter"), "{why}");
        assert!(decide(Some(BackendKind::Gpu), &none).is_err());
    }
}
