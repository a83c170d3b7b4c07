//! The dispatch sequence of a substep, as plain data: which kernels run, in
//! which phase and (for Jacobi) between which buffers. `GpuSimulator`
//! encodes it and the traffic model (`super::traffic`) counts its bytes, so
//! the two cannot drift apart. No device: tested without a GPU.

use super::buffers::{JacobiPass, VertexBuffer};
use super::layout::Kernel;
use crate::model::params::{Projection, SimParams};
use crate::model::rods::RodSet;

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

/// How the per-rod stages of a substep run (`GpuSimulator::set_form`):
/// one invocation walks each rod in every form; they differ in how many
/// stages and substeps a dispatch holds. The simulator chooses
/// (`default_form`); the forms compute the same values in the same order
/// (tests/gpu_fused.rs, tests/gpu_frame.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// A dispatch per stage (`*Rod` kernels): the schedule of the Jacobi
    /// projection, whose passes ping-pong between buffers, and of devices
    /// whose limits allow no fused kernel; the stages the tests compare
    /// with the CPU's one by one.
    Walked,
    /// The stages of a substep in one dispatch (`Kernel::SubstepRod`), or
    /// with hair–hair interaction in two halves around the grid
    /// (`Kernel::SubstepStartRod`, `Kernel::SubstepFinishRod`): one
    /// invocation takes its rod through every stage of a half. The
    /// default on a CPU adapter, where llvmpipe ends an invocation's loops
    /// once they have run 65,535 iterations in all, which a frame of a long
    /// strand's substeps in one dispatch passes.
    WalkedFused,
    /// `Form::WalkedFused`'s whole substep in a loop over a frame's
    /// substeps, one dispatch a frame (`Kernel::FrameRod`): each invocation
    /// takes its rod through every substep of the frame, so that a rod's
    /// state can stay in the caches from one substep to the next. Only
    /// where no stage couples the rods: with hair–hair interaction the
    /// substep runs the walked fused halves around the grid, and with
    /// Jacobi the walked schedule (`substep_schedule`,
    /// `frame_in_one_dispatch`). The default on a GPU.
    WalkedFrame,
}

impl Form {
    /// Every form.
    pub const ALL: [Form; 3] = [Form::Walked, Form::WalkedFused, Form::WalkedFrame];

    /// The form's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Form::Walked => "walked",
            Form::WalkedFused => "walked-fused",
            Form::WalkedFrame => "walked-frame",
        }
    }

    /// The form a substep under `params` actually runs in: a fused form
    /// falls back to the staged walk with the Jacobi projection, whose
    /// passes ping-pong between buffers (`substep_schedule`).
    pub fn effective(self, params: &SimParams) -> Form {
        match params.projection {
            Projection::Jacobi { .. } => Form::Walked,
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
            form => form,
        }
    }
}

impl std::fmt::Display for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a substep splats the vertices onto the hair–hair grid
/// (`GpuSimulator::set_splat`). Either way the grid is the CPU's bit for
/// bit (integer sums); what differs is the atomics it takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Splat {
    /// Each form's own: `grid_splat`, an atomic add per vertex and node; in
    /// the walked fused half the walked window, one add per node and run of a rod's
    /// vertices in a cell (with 64-bit atomics).
    #[default]
    Own,
    /// The sorted splat (`Kernel::SORTED_SPLAT`, `cpu::grid_sort::CellSort`):
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
/// and 1.381 with 8 (docs/measurements/2026-11-27-h200-frame/bench-splat.log).
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

/// Whether one dispatch runs every substep of a frame: `Form::WalkedFrame`
/// without hair–hair interaction, whose `substep_schedule` is then that
/// one dispatch (`Kernel::FrameRod`), encoded once a frame rather than once a
/// substep. Its bytes in the traffic model are a substep's, as every other
/// schedule's.
pub fn frame_in_one_dispatch(rods: &RodSet, params: &SimParams, form: Form) -> bool {
    form.running(rods, params) == Form::WalkedFrame
}

/// The dispatches of one substep of `rods` under `params`, in the order of
/// `cpu::substep::substep`: forces, \[save_start\], integrate, \[grid\], projection,
/// [contact (vertices, even edges, odd edges), filtered projection,
/// contact again], project_velocity, frames, twist, one invocation walking
/// each rod (`Form::Walked`); `Form::WalkedFused` runs them in one or two
/// dispatches, `Form::WalkedFrame` a frame of them in one. With
/// `Splat::Sorted` the sorted splat's five kernels take the place of
/// `grid_splat`, or follow a fused first half that then does not splat.
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
        Form::Walked => None,
    };
    if let Some([start, finish, whole]) = fused {
        return if rods.interaction.is_active() {
            // grid_splat ends the first half and grid_blend begins the
            // second, on each rod's own vertices. The walked splat also
            // records the box it reached, and `grid_extent` then sizes
            // `grid_velocity_box` to it (and resets the fastest velocity,
            // `grid_clear`'s work): on a CPU adapter an invocation costs
            // about as much as its node's work, and the bench's hair
            // reaches a box of 42 % of its grid's nodes.
            let sorted: &[Kernel] = match splat {
                Splat::Own => &[],
                Splat::Sorted { .. } => &Kernel::SORTED_SPLAT,
            };
            let mut kernels = vec![start];
            kernels.extend_from_slice(sorted);
            kernels.extend([Kernel::GridExtent, Kernel::GridVelocityBox, finish]);
            kernels.into_iter().map(|k| Dispatch::of(k, 0)).collect()
        } else {
            vec![Dispatch::of(whole, 0)]
        };
    }
    let project = |phase: u32| -> Vec<Dispatch> {
        let one = |kernel| vec![Dispatch::of(kernel, phase)];
        match params.projection {
            Projection::None => vec![],
            Projection::Fast { .. } => one(Kernel::ProjectFastRod),
            Projection::Shake { .. } => one(Kernel::ProjectShakeRod),
            Projection::Jacobi { iterations, .. } => {
                let n = crate::cpu::substep::jacobi_iterations(iterations, phase);
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
    let mut out = vec![Dispatch::of(Kernel::ForcesRod, 0)];
    if matches!(params.projection, Projection::Shake { .. }) {
        out.push(Dispatch::of(Kernel::SaveStart, 0));
    }
    out.push(Dispatch::of(Kernel::Integrate, 0));
    if rods.interaction.is_active() {
        out.extend(grid.into_iter().map(|k| Dispatch::of(k, 0)));
    }
    out.extend(project(0));
    if !rods.colliders.is_empty() {
        // The three stages walked in one dispatch (the stage kernels
        // `Contact`, `ContactEdgesEven`, `ContactEdgesOdd` are the same
        // stages as separate dispatches, for the tests).
        let contact = |phase| vec![Dispatch::of(Kernel::ContactRod, phase)];
        out.extend(contact(0));
        out.extend(project(1));
        out.extend(contact(1));
    }
    // Always: it also counts the chatter (`project::project_velocity`).
    for k in [Kernel::ProjectVelocity, Kernel::FramesRod, Kernel::TwistRod] {
        out.push(Dispatch::of(k, 0));
    }
    out
}

/// The passes of `n` Jacobi iterations starting from the unconstrained
/// positions and ending in `pos`: U→P, P→Q, Q→P… for odd `n`, U→Q, Q→P… for even.
/// The passes of the second (filtered) projection after contact: from `pos`
/// back to `pos`, P→Q, Q→P… (`n` even; see `cpu::substep::jacobi_iterations`).
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

    /// The defaults by device (docs/PERFORMANCE.md: measured on an H200):
    /// a GPU walks a whole frame a
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

    /// The walked fused form is one dispatch a substep, split around the
    /// grid with hair–hair interaction (the halves splat and blend their
    /// own vertices; the walked splat's box sizes `grid_velocity_box`);
    /// the walked frame is one dispatch a frame without the grid and the
    /// fused halves with it; with Jacobi both are the staged walk.
    #[test]
    fn fused_forms_are_one_dispatch_or_two_around_the_grid() {
        // The shipped hair: fast projection, colliders, interaction.
        let scene = crate::scene::Scene::parse(
            include_str!("../../scenes/hair.toml"),
            std::path::Path::new("scenes/hair.toml"),
            &["rods.0.count=2".into(), "rods.0.segments=4".into()],
        )
        .unwrap();
        let (mut rods, _) = scene.build();
        let mut params = scene.params;
        let kernels = |rods: &RodSet, params: &SimParams, form| -> Vec<Kernel> {
            substep_schedule(rods, params, form, Splat::Own)
                .iter()
                .map(|d| d.kernel)
                .collect()
        };
        use Kernel::*;
        assert!(rods.interaction.is_active());
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
        assert_eq!(Form::WalkedFused.running(&rods, &params), Form::WalkedFused);
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
        assert_eq!(kernels(&rods, &params, Form::WalkedFused), [SubstepRod]);
        // One dispatch a frame, only in its own form.
        assert_eq!(kernels(&rods, &params, Form::WalkedFrame), [FrameRod]);
        assert_eq!(Form::WalkedFrame.running(&rods, &params), Form::WalkedFrame);
        for form in Form::ALL {
            assert_eq!(
                frame_in_one_dispatch(&rods, &params, form),
                form == Form::WalkedFrame,
                "{form}"
            );
        }
        params.projection = Projection::Jacobi {
            iterations: 4,
            relaxation: 1.0,
        };
        for form in Form::ALL {
            assert_eq!(
                kernels(&rods, &params, form),
                kernels(&rods, &params, Form::Walked),
                "{form}"
            );
            // What the bench labels such a run with.
            assert_eq!(form.effective(&params), Form::Walked);
            assert_eq!(form.running(&rods, &params), Form::Walked);
        }
        assert!(!frame_in_one_dispatch(&rods, &params, Form::WalkedFrame));
        params.projection = SimParams::default().projection;
        assert!(!matches!(params.projection, Projection::Jacobi { .. }));
        assert_eq!(Form::WalkedFused.effective(&params), Form::WalkedFused);
    }

    /// Contact adds the filtered projection in phase 1 between two contact
    /// passes, in the order of the CPU's substep.
    #[test]
    fn contact_changes_the_schedule_as_the_cpu_substep_does() {
        let mut rods = RodSet::default();
        let params = SimParams::default();
        let kernels = |rods: &RodSet| -> Vec<(Kernel, u32)> {
            substep_schedule(rods, &params, Form::Walked, Splat::Own)
                .iter()
                .map(|d| (d.kernel, d.phase))
                .collect()
        };
        use Kernel::*;
        assert_eq!(
            kernels(&rods),
            [
                (ForcesRod, 0),
                (Integrate, 0),
                (ProjectFastRod, 0),
                (ProjectVelocity, 0),
                (FramesRod, 0),
                (TwistRod, 0)
            ]
        );
        rods.colliders.push(crate::model::colliders::Collider {
            name: "floor".into(),
            shape: crate::model::colliders::Shape::Plane {
                point: glam::DVec3::ZERO,
                normal: glam::DVec3::Y,
            },
            anchor: 0,
            friction: 0.0,
            static_friction: 0.0,
            margin: 0.0,
        });
        let walked = kernels(&rods);
        assert_eq!(
            walked[2..6],
            [
                (ProjectFastRod, 0),
                (ContactRod, 0),
                (ProjectFastRod, 1),
                (ContactRod, 1),
            ]
        );
    }
}
