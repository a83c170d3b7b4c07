//! Timing of the packed and walked forms of the per-rod kernels on the
//! hair workload (`strands bench`'s, 32 vertices a strand): each kernel
//! alone, and whole frames in each `Form` (`GpuSimulator::set_form`); and
//! (`substep_kernel_times`) every dispatch of a substep alone, each from the
//! same state. Ignored (measurements, not checks); run with
//! `XDG_RUNTIME_DIR=/tmp cargo test --release --test gpu_pack_timing -- --ignored --nocapture`.
//! `STRANDS_TIMING_STRANDS` sets the strand count (default 1000).

mod common;

use std::time::Instant;
use strands::bench::{Workload, bench_params};
use strands::gpu::{Form, GpuSimulator, Kernel};

#[test]
#[ignore = "a measurement; run by hand"]
fn packed_and_walked_kernel_times() {
    let strands: usize = std::env::var("STRANDS_TIMING_STRANDS")
        .ok()
        .map_or(1000, |s| {
            s.parse().expect("STRANDS_TIMING_STRANDS: a number")
        });
    let w = Workload::standard("hair", strands, 32).unwrap();
    let (rods, state) = w.scene.build();
    let params = bench_params(&rods, &w.scene.params, 10);
    let ctx = common::gpu();
    let mut sim = GpuSimulator::new(&ctx, rods, state, params).unwrap();
    let (t, h) = (0.0, params.h());
    let repeats = 20;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for kernel in [
        Kernel::Forces,
        Kernel::ForcesRod,
        Kernel::Frames,
        Kernel::FramesRod,
        Kernel::Twist,
        Kernel::TwistRod,
    ] {
        let times: Vec<f64> = (0..repeats + 2)
            .map(|_| {
                let start = Instant::now();
                sim.run_kernel(kernel, t, h);
                sim.wait();
                start.elapsed().as_secs_f64() * 1e3
            })
            .skip(2)
            .collect();
        eprintln!(
            "{strands} strands, {kernel:?}: {:.3} ms a dispatch (median of {repeats}, with submit and wait)",
            median(times)
        );
    }
    for form in [
        Form::Fused,
        Form::FusedBuffer,
        Form::Packed,
        Form::WalkedFused,
        Form::Walked,
    ] {
        if let Err(e) = sim.set_form(form) {
            eprintln!("{strands} strands, whole substeps, {form:?}: not on this device ({e})");
            continue;
        }
        let times: Vec<f64> = (0..7)
            .map(|_| {
                let start = Instant::now();
                sim.step();
                sim.wait();
                start.elapsed().as_secs_f64() * 1e3 / params.substeps as f64
            })
            .skip(2)
            .collect();
        eprintln!(
            "{strands} strands, whole substeps, {form:?}: {:.2} ms/substep (median of 5 frames)",
            median(times)
        );
    }
}

/// Each dispatch of a substep alone (the schedule `GpuSimulator` encodes,
/// in the staged twin of the form it chose for this adapter, so that each
/// stage is a dispatch of its own), to see where a substep's time goes.
/// Ignored, as above: a measurement, not a check.
#[test]
#[ignore = "a measurement; run by hand"]
fn substep_kernel_times() {
    let strands: usize = std::env::var("STRANDS_TIMING_STRANDS")
        .ok()
        .map_or(1000, |s| {
            s.parse().expect("STRANDS_TIMING_STRANDS: a number")
        });
    let w = Workload::standard("hair", strands, 32).unwrap();
    let (rods, state) = w.scene.build();
    let params = bench_params(&rods, &w.scene.params, 10);
    let ctx = common::gpu();
    let mut sim = GpuSimulator::new(&ctx, rods, state, params).unwrap();
    sim.step();
    sim.wait();
    let start_state = sim.read_state();
    let (t, h) = (0.0, params.h());
    let staged = sim.form().staged();
    eprintln!(
        "{strands} strands: the stages of {staged} (the {} form's)",
        sim.form()
    );
    let schedule = strands::gpu::schedule::substep_schedule(sim.rods(), &params, staged);
    let repeats = 10;
    let mut total = 0.0;
    for d in &schedule {
        let mut times: Vec<f64> = (0..repeats + 1)
            .map(|_| {
                // Each run from the state after the first frame, so that no
                // kernel is timed on what its own repeats made of it.
                sim.write_state(&start_state);
                sim.wait();
                let start = Instant::now();
                match d.jacobi {
                    Some(pass) => sim.run_jacobi_pass(pass, t, h),
                    None => sim.run_kernel_in_phase(d.kernel, d.phase, t, h),
                }
                sim.wait();
                start.elapsed().as_secs_f64() * 1e3
            })
            .skip(1)
            .collect();
        times.sort_by(f64::total_cmp);
        total += times[repeats / 2];
        eprintln!(
            "{strands} strands, {:?} phase {}: {:.3} ms (min {:.3})",
            d.kernel,
            d.phase,
            times[repeats / 2],
            times[0]
        );
    }
    // The other forms of the contact stages, from the same state: the
    // three stage kernels as separate dispatches, and the packed kernel.
    for form in [
        &[
            Kernel::Contact,
            Kernel::ContactEdgesEven,
            Kernel::ContactEdgesOdd,
        ][..],
        &[Kernel::ContactPacked][..],
        &[Kernel::ContactRod][..],
    ] {
        let mut times: Vec<f64> = (0..repeats + 1)
            .map(|_| {
                sim.write_state(&start_state);
                sim.wait();
                let start = Instant::now();
                for &k in form {
                    sim.run_kernel_in_phase(k, 0, t, h);
                }
                sim.wait();
                start.elapsed().as_secs_f64() * 1e3
            })
            .skip(1)
            .collect();
        times.sort_by(f64::total_cmp);
        eprintln!(
            "{strands} strands, contact phase 0 as {form:?}: {:.3} ms (min {:.3})",
            times[repeats / 2],
            times[0]
        );
    }
    let empty: Vec<f64> = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            sim.wait();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    eprintln!(
        "sum of the {} dispatches: {total:.2} ms (each with its own submit and wait; an empty wait {:.3} ms)",
        schedule.len(),
        empty[repeats / 2]
    );
}
