//! The dispatch sequence of a substep, as plain data: which kernels run, in
//! which phase and (for Jacobi) between which buffers. `GpuSimulator`
//! encodes it and the traffic model (`super::traffic`) counts its bytes, so
//! the two cannot drift apart. No device: tested without a GPU.

use super::buffers::{JacobiPass, VertexBuffer};
use super::layout::Kernel;
use crate::params::{Projection, SimParams};
use crate::rods::RodSet;

/// One dispatch of a substep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The kernel.
    pub kernel: Kernel,
    /// Its step values: 0, or 1 for the second contact pass and the
    /// projection filtered by the contacts.
    pub phase: u32,
    /// The buffers of a `Kernel::ProjectJacobi` iteration.
    pub jacobi: Option<JacobiPass>,
}

impl Dispatch {
    fn of(kernel: Kernel, phase: u32) -> Dispatch {
        Dispatch {
            kernel,
            phase,
            jacobi: None,
        }
    }
}

/// How the per-rod stages of a substep run (`GpuSimulator::set_form`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// One invocation walks each rod through each stage, a dispatch per
    /// stage (`*Rod` kernels): the default on adapters that are CPUs.
    Walked,
    /// One workgroup per pack of rods, parallel over its rows, a dispatch
    /// per stage (`Kernel::Forces`, `Kernel::ProjectFast`, ...).
    Packed,
    /// The packed stages one after the other in one dispatch per half
    /// substep (`Kernel::SubstepStart`, `Kernel::SubstepFinish`), or per
    /// substep without hair–hair interaction (`Kernel::Substep`): the
    /// default on GPUs whose limits allow it (`layout::fused_supported`).
    /// With the Jacobi projection, whose passes ping-pong between buffers,
    /// the substep runs the packed schedule.
    Fused,
    /// The walked stages fused the same way (`Kernel::SubstepStartRod`,
    /// `Kernel::SubstepFinishRod`, `Kernel::SubstepRod`): one invocation
    /// takes its rod through every stage of a half. With Jacobi, the walked
    /// schedule.
    WalkedFused,
    /// `Form::Fused` built from the buffer module: the same kernels, their
    /// stages reading and writing positions in the position buffer rather
    /// than in workgroup memory (shaders/resident.wgsl), to measure what
    /// residency gains on a device. Same limits and schedule as `Fused`.
    FusedBuffer,
    /// `Form::WalkedFused`'s whole substep in a loop over a frame's
    /// substeps, one dispatch a frame (`Kernel::FrameRod`): each invocation
    /// takes its rod through every substep of the frame, so that on a GPU
    /// a rod's state can stay in the caches from one substep to the next
    /// rather than be read from memory again. Only where no stage couples
    /// the rods: with hair–hair interaction the substep runs the walked
    /// fused halves around the grid, and with Jacobi the walked schedule
    /// (`substep_schedule`, `frame_in_one_dispatch`).
    WalkedFrame,
    /// `Form::Fused`'s whole substep in the same loop over a frame's
    /// substeps, one workgroup a pack (`Kernel::FramePack`), the pack's
    /// state resident in workgroup memory for the whole frame (on
    /// shapes that ask for it, `32:state`, all of it, else the positions): the
    /// issue's strand-per-workgroup design with a frame a dispatch. With
    /// the grid, the fused halves; with Jacobi, the packed schedule.
    FusedFrame,
}

impl Form {
    /// Every form, in the order `strands bench --gpu-form` lists them.
    pub const ALL: [Form; 7] = [
        Form::Walked,
        Form::WalkedFused,
        Form::WalkedFrame,
        Form::Packed,
        Form::Fused,
        Form::FusedBuffer,
        Form::FusedFrame,
    ];

    /// The form's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Form::Walked => "walked",
            Form::WalkedFused => "walked-fused",
            Form::Packed => "packed",
            Form::Fused => "fused",
            Form::FusedBuffer => "fused-buffer",
            Form::WalkedFrame => "walked-frame",
            Form::FusedFrame => "fused-frame",
        }
    }

    /// The form a substep under `params` actually runs in: a fused form
    /// falls back to its staged twin with the Jacobi projection, whose
    /// passes ping-pong between buffers (`substep_schedule`).
    pub fn effective(self, params: &SimParams) -> Form {
        match params.projection {
            Projection::Jacobi { .. } => self.staged(),
            _ => self,
        }
    }

    /// The form a substep of `rods` under `params` actually runs in:
    /// `effective`, and `Form::WalkedFused` for `Form::WalkedFrame` where
    /// hair–hair interaction couples the rods at every substep (its
    /// schedule is then walked-fused's: `substep_schedule`).
    pub fn running(self, rods: &RodSet, params: &SimParams) -> Form {
        match self.effective(params) {
            Form::WalkedFrame if rods.interaction.is_active() => Form::WalkedFused,
            Form::FusedFrame if rods.interaction.is_active() => Form::Fused,
            form => form,
        }
    }

    /// Whether the per-rod stages run one workgroup per pack of rods
    /// (`Packed` and the fused packed forms) rather than one invocation
    /// walking each rod.
    pub fn packed(self) -> bool {
        matches!(
            self,
            Form::Packed | Form::Fused | Form::FusedBuffer | Form::FusedFrame
        )
    }

    /// Whether the form runs the packed fused kernels built from the
    /// resident module (`Kernel::is_resident`: `Fused` and `FusedFrame`,
    /// with the grid the fused halves), whose pack shape decides what stays
    /// in workgroup memory (`PackShape::state_resident`); `Packed` and
    /// `FusedBuffer` keep their state in the buffers on any shape.
    pub fn resident(self) -> bool {
        matches!(self, Form::Fused | Form::FusedFrame)
    }

    /// The form's stages as separate dispatches: `Form::Packed` for
    /// `Form::Fused`, `Form::Walked` for `Form::WalkedFused`, a staged form
    /// itself.
    pub fn staged(self) -> Form {
        match self {
            Form::Fused | Form::FusedBuffer | Form::FusedFrame | Form::Packed => Form::Packed,
            Form::WalkedFrame | Form::WalkedFused | Form::Walked => Form::Walked,
        }
    }
}

impl std::fmt::Display for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Form {
    type Err = String;

    fn from_str(s: &str) -> Result<Form, String> {
        Form::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Form::ALL.iter().map(|f| f.name()).collect();
                format!("unknown GPU form {s:?}: use one of {}", names.join(", "))
            })
    }
}

/// How a substep splats the vertices onto the hair–hair grid
/// (`GpuSimulator::set_splat`). Either way the grid is the CPU's bit for
/// bit (integer sums); what differs is the atomics it takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Splat {
    /// Each form's own: `grid_splat`, an atomic add per vertex and node;
    /// in the packed fused half the same per vertex; in the walked fused
    /// half the walked window, one add per node and run of a rod's
    /// vertices in a cell (with 64-bit atomics).
    #[default]
    Own,
    /// The sorted splat (`Kernel::SORTED_SPLAT`, `cpu::grid::CellSort`):
    /// the vertices counted and sorted by cell, then each run of `run`
    /// sorted vertices walked by one invocation with the walked splat's
    /// window, so that a cell's sums reach its nodes once a run; five
    /// dispatches in place of the form's own splat (shaders/grid_sort.wgsl).
    /// Longer runs add fewer atomics (tests/splat_atomics.rs) on fewer
    /// invocations, each a longer chain of reads: `Splat::SORTED` takes
    /// `layout::SORTED_RUN`.
    Sorted {
        /// Slots an invocation of `grid_splat_sorted` walks, 1 to
        /// `MAX_SORTED_RUN`.
        run: u32,
    },
}

/// The longest run of slots `Splat::Sorted` takes.
pub const MAX_SORTED_RUN: u32 = 1024;

/// The form a simulator starts in on a device of `device_type` and
/// `limits` (`GpuSimulator::default_form`, which says why): walked-frame
/// on a GPU, walked-fused on a CPU adapter, walked where the limits allow
/// neither fused walk.
pub fn default_form(device_type: wgpu::DeviceType, limits: &wgpu::Limits) -> Form {
    if !super::layout::walked_fused_supported(limits) {
        Form::Walked
    } else if device_type == wgpu::DeviceType::Cpu {
        Form::WalkedFused
    } else {
        Form::WalkedFrame
    }
}

/// The splat a simulator starts with on a device of `device_type` and
/// `limits` for rods the grid couples (`grid`) or not
/// (`GpuSimulator::default_splat`, which says why): the sorted splat with
/// runs of `GPU_SORTED_RUN` on a GPU with the grid where the limits allow
/// it, else the form's own.
pub fn default_splat(device_type: wgpu::DeviceType, limits: &wgpu::Limits, grid: bool) -> Splat {
    if device_type != wgpu::DeviceType::Cpu && grid && super::layout::sorted_splat_supported(limits)
    {
        Splat::Sorted {
            run: GPU_SORTED_RUN,
        }
    } else {
        Splat::Own
    }
}

/// The run of the sorted splat GPUs start with where the grid couples the
/// rods (`GpuSimulator::default_splat`): on an H200 the hair at 1 M
/// vertices ran 1.342 ms a substep with runs of 32 against 1.350 with 16
/// and 1.381 with 8 (docs/BENCHMARKS.md, twenty-seventh session).
pub const GPU_SORTED_RUN: u32 = 32;

impl Splat {
    /// The sorted splat with runs of `layout::SORTED_RUN` slots.
    pub const SORTED: Splat = Splat::Sorted {
        run: super::layout::SORTED_RUN,
    };

    /// Each form's own and the sorted splat with its default runs.
    pub const ALL: [Splat; 2] = [Splat::Own, Splat::SORTED];

    /// The name in reports: `own`, or `sorted:RUN` with its run, the
    /// default's too, so that a report says which run it timed whatever
    /// `layout::SORTED_RUN` is later. (`sorted` on the command line is
    /// `Splat::SORTED`.)
    pub fn name(self) -> String {
        match self {
            Splat::Own => "own".into(),
            Splat::Sorted { run } => format!("sorted:{run}"),
        }
    }

    /// Whether this is the sorted splat (any run).
    pub fn is_sorted(self) -> bool {
        matches!(self, Splat::Sorted { .. })
    }
}

impl std::fmt::Display for Splat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Splat {
    type Err = String;

    fn from_str(s: &str) -> Result<Splat, String> {
        let bad = || {
            format!(
                "unknown splat {s:?}: use own, sorted, or sorted:RUN with RUN slots an invocation, 1 to {MAX_SORTED_RUN}"
            )
        };
        match s {
            "own" => Ok(Splat::Own),
            "sorted" => Ok(Splat::SORTED),
            _ => {
                let run: u32 = s
                    .strip_prefix("sorted:")
                    .ok_or_else(bad)?
                    .parse()
                    .map_err(|_| bad())?;
                if (1..=MAX_SORTED_RUN).contains(&run) {
                    Ok(Splat::Sorted { run })
                } else {
                    Err(bad())
                }
            }
        }
    }
}

/// The forces kernel of a form (`substep_schedule`).
pub fn forces_kernel(packed: bool) -> Kernel {
    if packed {
        Kernel::Forces
    } else {
        Kernel::ForcesRod
    }
}

/// The twist kernel of a form (`substep_schedule`; also the second stage
/// of `GpuSimulator::update_material_frame`).
pub fn twist_kernel(packed: bool) -> Kernel {
    if packed {
        Kernel::Twist
    } else {
        Kernel::TwistRod
    }
}

/// The frames kernel of a form (`substep_schedule`; also the first stage
/// of `GpuSimulator::update_material_frame`).
pub fn frames_kernel(packed: bool) -> Kernel {
    if packed {
        Kernel::Frames
    } else {
        Kernel::FramesRod
    }
}

/// Whether one dispatch runs every substep of a frame: `Form::WalkedFrame`
/// or `Form::FusedFrame` without hair–hair interaction, whose
/// `substep_schedule` is then that one dispatch (`Kernel::FrameRod`,
/// `Kernel::FramePack`), encoded once a frame rather than once a
/// substep. Its bytes in the traffic model are a substep's, as every other
/// schedule's.
pub fn frame_in_one_dispatch(rods: &RodSet, params: &SimParams, form: Form) -> bool {
    matches!(
        form.running(rods, params),
        Form::WalkedFrame | Form::FusedFrame
    )
}

/// The dispatches of one substep of `rods` under `params`, in the order of
/// `cpu::substep`: forces, \[save_start\], integrate, \[grid\], projection,
/// [contact (vertices, even edges, odd edges), filtered projection,
/// contact again], project_velocity, frames, twist. `packed`: the forces,
/// frames, twist, fast and SHAKE projections and the three contact stages
/// run one workgroup per pack (`Form::Packed`), else one invocation walks
/// each rod (`Form::Walked`); `Form::Fused` runs the packed stages in one
/// or two dispatches. With `Splat::Sorted` the sorted splat's five kernels
/// take the place of `grid_splat`, or follow a fused first half that then
/// does not splat.
pub fn substep_schedule(
    rods: &RodSet,
    params: &SimParams,
    form: Form,
    splat: Splat,
) -> Vec<Dispatch> {
    let splat_kernels: &[Kernel] = match splat {
        Splat::Own => &[Kernel::GridSplat],
        Splat::Sorted { .. } => &Kernel::SORTED_SPLAT,
    };
    let mut grid = vec![Kernel::GridClear];
    grid.extend_from_slice(splat_kernels);
    grid.extend([Kernel::GridVelocity, Kernel::GridBlend]);
    let fused = match form.effective(params) {
        Form::Fused | Form::FusedBuffer => {
            Some([Kernel::SubstepStart, Kernel::SubstepFinish, Kernel::Substep])
        }
        Form::FusedFrame => Some([
            Kernel::SubstepStart,
            Kernel::SubstepFinish,
            Kernel::FramePack,
        ]),
        Form::WalkedFused => Some([
            Kernel::SubstepStartRod,
            Kernel::SubstepFinishRod,
            Kernel::SubstepRod,
        ]),
        // The halves as walked-fused's with the grid; without it one
        // dispatch runs the whole frame (`frame_in_one_dispatch`).
        Form::WalkedFrame => Some([
            Kernel::SubstepStartRod,
            Kernel::SubstepFinishRod,
            Kernel::FrameRod,
        ]),
        _ => None,
    };
    if let Some([start, finish, whole]) = fused {
        return if rods.interaction.is_active() {
            // grid_splat ends the first half and grid_blend begins the
            // second, on each rod's own vertices. The walked splat also
            // records the box it reached, and `grid_extent` then sizes
            // `grid_velocity_box` to it (and resets the fastest velocity,
            // `grid_clear`'s work): on a CPU adapter an invocation costs
            // about as much as its node's work, and the bench's hair
            // reaches a box of 42 % of its grid's nodes (docs/BENCHMARKS.md).
            let sorted: &[Kernel] = match splat {
                Splat::Own => &[],
                Splat::Sorted { .. } => &Kernel::SORTED_SPLAT,
            };
            let mut kernels = Vec::new();
            if start == Kernel::SubstepStartRod {
                kernels.push(start);
                kernels.extend_from_slice(sorted);
                kernels.extend([Kernel::GridExtent, Kernel::GridVelocityBox, finish]);
            } else {
                kernels.extend([Kernel::GridClear, start]);
                kernels.extend_from_slice(sorted);
                kernels.extend([Kernel::GridVelocity, finish]);
            }
            kernels.into_iter().map(|k| Dispatch::of(k, 0)).collect()
        } else {
            vec![Dispatch::of(whole, 0)]
        };
    }
    let packed = form.packed();
    let project = |phase: u32| -> Vec<Dispatch> {
        let one = |kernel| vec![Dispatch::of(kernel, phase)];
        match (params.projection, packed) {
            (Projection::None, _) => vec![],
            (Projection::Fast { .. }, true) => one(Kernel::ProjectFast),
            (Projection::Fast { .. }, false) => one(Kernel::ProjectFastRod),
            (Projection::Shake { .. }, true) => one(Kernel::ProjectShake),
            (Projection::Shake { .. }, false) => one(Kernel::ProjectShakeRod),
            (Projection::Jacobi { iterations, .. }, _) => {
                let n = crate::cpu::jacobi_iterations(iterations, phase);
                let passes = if phase == 0 {
                    jacobi_schedule(n)
                } else {
                    jacobi_schedule_from_pos(n)
                };
                passes
                    .into_iter()
                    .map(|p| Dispatch {
                        jacobi: Some(p),
                        ..Dispatch::of(Kernel::ProjectJacobi, phase)
                    })
                    .collect()
            }
        }
    };
    let mut out = vec![Dispatch::of(forces_kernel(packed), 0)];
    if matches!(params.projection, Projection::Shake { .. }) {
        out.push(Dispatch::of(Kernel::SaveStart, 0));
    }
    out.push(Dispatch::of(Kernel::Integrate, 0));
    if rods.interaction.is_active() {
        out.extend(grid.into_iter().map(|k| Dispatch::of(k, 0)));
    }
    out.extend(project(0));
    if !rods.colliders.is_empty() {
        let contact = |phase| -> Vec<Dispatch> {
            // The three stages in one dispatch, a workgroup per pack (the
            // stage kernels `Contact`, `ContactEdgesEven`, `ContactEdgesOdd`
            // are the same stages as separate dispatches, for the tests).
            let kernel = if packed {
                Kernel::ContactPacked
            } else {
                Kernel::ContactRod
            };
            vec![Dispatch::of(kernel, phase)]
        };
        out.extend(contact(0));
        out.extend(project(1));
        out.extend(contact(1));
    }
    // Always: it also counts the chatter (`project::project_velocity`).
    for k in [
        Kernel::ProjectVelocity,
        frames_kernel(packed),
        twist_kernel(packed),
    ] {
        out.push(Dispatch::of(k, 0));
    }
    out
}

/// The passes of `n` Jacobi iterations starting from the unconstrained
/// positions and ending in `pos`: U→P, P→Q, Q→P… for odd `n`, U→Q, Q→P… for even.
/// The passes of the second (filtered) projection after contact: from `pos`
/// back to `pos`, P→Q, Q→P… (`n` even; see `cpu::jacobi_iterations`).
pub fn jacobi_schedule_from_pos(n: u32) -> Vec<JacobiPass> {
    use VertexBuffer::*;
    (0..n)
        .map(|k| {
            if k % 2 == 0 {
                JacobiPass { src: Pos, dst: Tmp }
            } else {
                JacobiPass { src: Tmp, dst: Pos }
            }
        })
        .collect()
}

/// The passes of `n` Jacobi iterations from the unconstrained positions
/// into `pos` (see `jacobi_schedule_from_pos` for the order).
pub fn jacobi_schedule(n: u32) -> Vec<JacobiPass> {
    use VertexBuffer::*;
    let mut out = Vec::with_capacity(n as usize);
    let mut src = Unconstrained;
    for k in 0..n {
        let dst = if (n - 1 - k).is_multiple_of(2) {
            Pos
        } else {
            Tmp
        };
        out.push(JacobiPass { src, dst });
        src = dst;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use VertexBuffer::*;

    /// The defaults by device (docs/BENCHMARKS.md, twenty-eighth session:
    /// measured on an H200, kept off lavapipe): a GPU walks a whole frame a
    /// dispatch and sorts the splat in runs of 32 where the grid couples
    /// the rods; a CPU adapter walks a substep a dispatch with its own
    /// splat; default limits (8 storage buffers a stage, too few for the
    /// fused walk and the sorted splat) give the staged walk and the own
    /// splat on either.
    #[test]
    fn defaults_follow_the_device() {
        use wgpu::DeviceType::*;
        let full = wgpu::Limits {
            max_storage_buffers_per_shader_stage: 16,
            ..wgpu::Limits::default()
        };
        let few = wgpu::Limits::default();
        assert!(
            few.max_storage_buffers_per_shader_stage < super::super::layout::FUSED_STORAGE_BUFFERS
        );
        for gpu in [DiscreteGpu, IntegratedGpu, VirtualGpu, Other] {
            assert_eq!(default_form(gpu, &full), Form::WalkedFrame, "{gpu:?}");
            assert_eq!(default_form(gpu, &few), Form::Walked, "{gpu:?}");
            assert_eq!(default_splat(gpu, &full, true), Splat::Sorted { run: 32 });
            assert_eq!(default_splat(gpu, &full, false), Splat::Own);
            assert_eq!(default_splat(gpu, &few, true), Splat::Own);
        }
        assert_eq!(default_form(Cpu, &full), Form::WalkedFused);
        assert_eq!(default_form(Cpu, &few), Form::Walked);
        assert_eq!(default_splat(Cpu, &full, true), Splat::Own);
    }

    /// Odd and even counts from the unconstrained positions both end in
    /// `pos`, each pass reading what the last wrote; from `pos` they return
    /// to it.
    #[test]
    fn jacobi_passes_chain_and_end_in_pos() {
        for n in 1..6 {
            let s = jacobi_schedule(n);
            assert_eq!(s.len(), n as usize);
            assert_eq!(s[0].src, Unconstrained);
            assert_eq!(s.last().unwrap().dst, Pos);
            for w in s.windows(2) {
                assert_eq!(w[0].dst, w[1].src);
                assert_ne!(w[1].src, w[1].dst);
            }
        }
        let s = jacobi_schedule_from_pos(4);
        assert_eq!((s[0].src, s[3].dst), (Pos, Pos));
        assert!(s.windows(2).all(|w| w[0].dst == w[1].src));
    }

    /// Splats by name: `own`, `sorted` (the default runs), `sorted:RUN`;
    /// a run of 0, past `MAX_SORTED_RUN` or not a number, and any other
    /// name, refused saying what is accepted. Names round-trip, and a
    /// report's name says the run.
    #[test]
    fn splats_parse_and_print_their_names() {
        assert_eq!("own".parse::<Splat>(), Ok(Splat::Own));
        assert_eq!("sorted".parse::<Splat>(), Ok(Splat::SORTED));
        assert_eq!("sorted:32".parse::<Splat>(), Ok(Splat::Sorted { run: 32 }));
        assert_eq!(
            format!("sorted:{}", crate::gpu::layout::SORTED_RUN).parse::<Splat>(),
            Ok(Splat::SORTED)
        );
        for bad in [
            "sorted:0",
            "sorted:1025",
            "sorted:x",
            "sorted:",
            "binned",
            "Sorted",
        ] {
            let e = bad.parse::<Splat>().unwrap_err();
            assert!(e.contains(bad) && e.contains("sorted:RUN"), "{e}");
        }
        for s in [
            Splat::Own,
            Splat::SORTED,
            Splat::Sorted { run: 1 },
            Splat::Sorted { run: 1024 },
        ] {
            assert_eq!(s.name().parse::<Splat>(), Ok(s));
        }
        // Reports name the run, the default's too.
        assert_eq!(
            Splat::SORTED.name(),
            format!("sorted:{}", crate::gpu::layout::SORTED_RUN)
        );
        assert_eq!(Splat::Sorted { run: 8 }.name(), "sorted:8");
    }

    /// The fused form is one dispatch a substep, split around the grid with
    /// hair–hair interaction (the halves splat and blend their own
    /// vertices, so only the clear and `grid_velocity`, which need every
    /// rod's splat, are dispatches of their own); with Jacobi it is the
    /// packed schedule.
    #[test]
    fn fused_form_is_one_dispatch_or_two_around_the_grid() {
        // The bench's hair: fast projection, colliders, interaction.
        let w = crate::bench::Workload::standard("hair", 2, 5).unwrap();
        let (mut rods, _) = w.scene.build();
        let mut params = w.scene.params;
        let kernels = |rods: &RodSet, params: &SimParams, form| -> Vec<Kernel> {
            substep_schedule(rods, params, form, Splat::Own)
                .iter()
                .map(|d| d.kernel)
                .collect()
        };
        use Kernel::*;
        assert!(rods.interaction.is_active());
        assert_eq!(
            kernels(&rods, &params, Form::Fused),
            [GridClear, SubstepStart, GridVelocity, SubstepFinish]
        );
        assert_eq!(
            kernels(&rods, &params, Form::WalkedFused),
            [
                SubstepStartRod,
                GridExtent,
                GridVelocityBox,
                SubstepFinishRod
            ]
        );
        // The whole-frame form runs walked-fused's halves where the grid
        // couples the rods at every substep.
        assert_eq!(
            kernels(&rods, &params, Form::WalkedFrame),
            kernels(&rods, &params, Form::WalkedFused)
        );
        assert!(!frame_in_one_dispatch(&rods, &params, Form::WalkedFrame));
        assert_eq!(Form::WalkedFrame.running(&rods, &params), Form::WalkedFused);
        assert_eq!(
            kernels(&rods, &params, Form::FusedFrame),
            kernels(&rods, &params, Form::Fused)
        );
        assert_eq!(Form::FusedFrame.running(&rods, &params), Form::Fused);
        assert_eq!(Form::Fused.running(&rods, &params), Form::Fused);
        // The buffer-positions build of the fused kernels runs the same.
        assert_eq!(
            kernels(&rods, &params, Form::FusedBuffer),
            kernels(&rods, &params, Form::Fused)
        );
        // The sorted splat's kernels follow the first half (which then does
        // not splat: `Step.splat`), or replace `grid_splat`.
        let sorted = |rods: &RodSet, form| -> Vec<Kernel> {
            substep_schedule(rods, &params, form, Splat::SORTED)
                .iter()
                .map(|d| d.kernel)
                .collect()
        };
        let [count, scan, blocks, scatter, splat] = Kernel::SORTED_SPLAT;
        assert_eq!(
            [count, scan, blocks, scatter, splat],
            [
                GridCellCount,
                GridCellScan,
                GridCellScanBlocks,
                GridCellScatter,
                GridSplatSorted
            ]
        );
        assert_eq!(
            sorted(&rods, Form::WalkedFused),
            [
                SubstepStartRod,
                count,
                scan,
                blocks,
                scatter,
                splat,
                GridExtent,
                GridVelocityBox,
                SubstepFinishRod
            ]
        );
        assert_eq!(
            sorted(&rods, Form::Fused),
            [
                GridClear,
                SubstepStart,
                count,
                scan,
                blocks,
                scatter,
                splat,
                GridVelocity,
                SubstepFinish
            ]
        );
        let own = kernels(&rods, &params, Form::Walked);
        let mut expected = own.clone();
        let at = own.iter().position(|&k| k == GridSplat).unwrap();
        expected.splice(at..=at, Kernel::SORTED_SPLAT);
        assert_eq!(sorted(&rods, Form::Walked), expected);
        rods.interaction.groups.clear();
        // Without interaction nothing splats, so nothing changes.
        for form in Form::ALL {
            assert_eq!(sorted(&rods, form), kernels(&rods, &params, form));
        }
        assert_eq!(kernels(&rods, &params, Form::Fused), [Substep]);
        assert_eq!(kernels(&rods, &params, Form::FusedBuffer), [Substep]);
        assert_eq!(kernels(&rods, &params, Form::WalkedFused), [SubstepRod]);
        // One dispatch a frame, only in its own form.
        assert_eq!(kernels(&rods, &params, Form::WalkedFrame), [FrameRod]);
        assert_eq!(Form::WalkedFrame.running(&rods, &params), Form::WalkedFrame);
        assert_eq!(kernels(&rods, &params, Form::FusedFrame), [FramePack]);
        for form in Form::ALL {
            assert_eq!(
                frame_in_one_dispatch(&rods, &params, form),
                matches!(form, Form::WalkedFrame | Form::FusedFrame),
                "{form}"
            );
        }
        params.projection = Projection::Jacobi {
            iterations: 4,
            relaxation: 1.0,
        };
        assert_eq!(
            kernels(&rods, &params, Form::Fused),
            kernels(&rods, &params, Form::Packed)
        );
        assert_eq!(
            kernels(&rods, &params, Form::WalkedFused),
            kernels(&rods, &params, Form::Walked)
        );
        assert_eq!(
            kernels(&rods, &params, Form::WalkedFrame),
            kernels(&rods, &params, Form::Walked)
        );
        assert!(!frame_in_one_dispatch(&rods, &params, Form::WalkedFrame));
        assert_eq!(Form::WalkedFrame.effective(&params), Form::Walked);
        assert_eq!(Form::WalkedFrame.running(&rods, &params), Form::Walked);
        assert_eq!(
            kernels(&rods, &params, Form::FusedFrame),
            kernels(&rods, &params, Form::Packed)
        );
        assert_eq!(Form::FusedFrame.running(&rods, &params), Form::Packed);
        // What the bench labels such a run with.
        assert_eq!(Form::Fused.effective(&params), Form::Packed);
        assert_eq!(Form::FusedBuffer.effective(&params), Form::Packed);
        assert_eq!(Form::WalkedFused.effective(&params), Form::Walked);
        assert_eq!(Form::Walked.effective(&params), Form::Walked);
        params.projection = SimParams::default().projection;
        assert!(!matches!(params.projection, Projection::Jacobi { .. }));
        assert_eq!(Form::Fused.effective(&params), Form::Fused);
    }

    /// Contact adds the filtered projection in phase 1 between two contact
    /// passes; the walked form replaces the packed kernels one for one.
    #[test]
    fn contact_and_forms_change_the_schedule_as_the_cpu_substep_does() {
        let mut rods = RodSet::default();
        let params = SimParams::default();
        let kernels = |rods: &RodSet, packed| -> Vec<(Kernel, u32)> {
            let form = if packed { Form::Packed } else { Form::Walked };
            substep_schedule(rods, &params, form, Splat::Own)
                .iter()
                .map(|d| (d.kernel, d.phase))
                .collect()
        };
        use Kernel::*;
        let tail = [(ProjectVelocity, 0), (Frames, 0), (Twist, 0)];
        assert_eq!(
            kernels(&rods, false)[3..],
            [(ProjectVelocity, 0), (FramesRod, 0), (TwistRod, 0)]
        );
        let plain = kernels(&rods, true);
        assert_eq!(plain[..3], [(Forces, 0), (Integrate, 0), (ProjectFast, 0)]);
        assert_eq!(plain[3..], tail);
        let walked = kernels(&rods, false);
        assert_eq!(walked[0], (ForcesRod, 0));
        assert_eq!(walked[4], (FramesRod, 0));
        rods.colliders.push(crate::contact::Collider {
            name: "floor".into(),
            shape: crate::contact::Shape::Plane {
                point: glam::DVec3::ZERO,
                normal: glam::DVec3::Y,
            },
            anchor: 0,
            friction: 0.0,
            static_friction: 0.0,
            margin: 0.0,
        });
        let walked = kernels(&rods, false);
        assert_eq!(
            walked[2..6],
            [
                (ProjectFastRod, 0),
                (ContactRod, 0),
                (ProjectFastRod, 1),
                (ContactRod, 1),
            ]
        );
        let plain = kernels(&rods, true);
        assert_eq!(
            plain[2..6],
            [
                (ProjectFast, 0),
                (ContactPacked, 0),
                (ProjectFast, 1),
                (ContactPacked, 1),
            ]
        );
    }
}
