//! Timing of the packed and walked forms of the per-rod kernels on the
//! hair workload (`strands bench`'s, 32 vertices a strand): each kernel
//! alone, and whole frames in each `Form` (`GpuSimulator::set_form`); and
//! (`substep_kernel_times`) every dispatch of a substep, profiled by GPU
//! timestamps. Ignored (measurements, not checks); run with
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

/// Where a substep's time goes: frames profiled by `step_profiled` (each
/// dispatch in a pass of its own between GPU timestamps), in the form
/// `GpuSimulator` chose for this adapter and in its staged twin (each stage
/// a dispatch of its own); the median over frames of each dispatch's time.
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
    let form = sim.form();
    for f in [form.staged(), form] {
        sim.set_form(f).unwrap();
        let frames: Vec<Vec<f64>> = (0..9)
            .map(|_| {
                let p = sim
                    .step_profiled()
                    .expect("this measurement needs TIMESTAMP_QUERY");
                p.iter()
                    .map(|(_, s)| s * 1e3 / params.substeps as f64)
                    .collect()
            })
            .skip(2)
            .collect();
        let schedule =
            strands::gpu::schedule::substep_schedule(sim.rods(), &params, f, sim.splat());
        let mut total = 0.0;
        for (i, d) in schedule.iter().enumerate() {
            let mut t: Vec<f64> = frames.iter().map(|p| p[i]).collect();
            t.sort_by(f64::total_cmp);
            total += t[t.len() / 2];
            eprintln!(
                "{strands} strands, {f}: {} phase {}: {:.3} ms/substep (min {:.3}, max {:.3})",
                d.kernel.entry_point(),
                d.phase,
                t[t.len() / 2],
                t[0],
                t[t.len() - 1]
            );
        }
        eprintln!("{strands} strands, {f}: sum of the medians {total:.3} ms/substep");
    }
}
