#import common

// What changes from one substep of a frame to the next, read where a kernel
// runs one substep: from `params`, bound at that substep's entry. The
// whole-frame kernel's module has shaders/step_table.wgsl in its place
// (src/gpu/compose.rs), which reads the same values from the frame's table
// of steps: every stage reads them through these functions alone.
fn step_wind_phase() -> f32 {
    return params.wind_phase;
}

fn step_slot_start() -> u32 {
    return params.slot_start;
}

fn step_slot_end() -> u32 {
    return params.slot_end;
}

fn step_collider_start(j: u32) -> Pose {
    return params.collider_start[j];
}

fn step_collider_end(j: u32) -> Pose {
    return params.collider_end[j];
}

fn step_collider_now(j: u32) -> ColliderNow {
    return params.collider_now[j];
}
