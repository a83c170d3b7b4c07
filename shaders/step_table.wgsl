#import common

// What changes from one substep of a frame to the next, for the whole frame
// in one dispatch (`Form::WalkedFrame`, shaders/frame.wgsl): the
// alternative of shaders/step_uniform.wgsl in the module `frame_rod` is
// built from (src/gpu/compose.rs). `params` stays bound at the frame's
// first entry for what no substep changes (h, gravity, the solver's
// settings); what does change (the gust's phase, the anchors' pose slots,
// the colliders' poses) comes from `frame_steps`, the frame's `Step`s one
// after the other, at the substep the loop is in (`frame_substep`, the same
// in every invocation).
@group(1) @binding(22) var<storage, read> frame_steps: array<Step>;

var<private> frame_substep: u32;

fn step_wind_phase() -> f32 {
    return frame_steps[frame_substep].wind_phase;
}

fn step_slot_start() -> u32 {
    return frame_steps[frame_substep].slot_start;
}

fn step_slot_end() -> u32 {
    return frame_steps[frame_substep].slot_end;
}

fn step_collider_start(j: u32) -> Pose {
    return frame_steps[frame_substep].collider_start[j];
}

fn step_collider_end(j: u32) -> Pose {
    return frame_steps[frame_substep].collider_end[j];
}

fn step_collider_now(j: u32) -> ColliderNow {
    return frame_steps[frame_substep].collider_now[j];
}

