// BEGIN substep values from the frame's table
// The whole frame in one dispatch (`Form::WalkedFrame`): replaces the block
// of shaders/common.wgsl that reads a substep's changing values from
// `params`, in the module `frame_rod` is built from (src/gpu/layout.rs
// `shader_variant` with `frame`). `params` stays bound at the frame's first
// entry for what no substep changes (h, gravity, the solver's settings);
// what does change (the gust's phase, the anchors' pose slots, the
// colliders' poses) comes from `frame_steps`, the frame's `Step`s one after
// the other, at the substep the loop is in (`frame_substep`, the same in
// every invocation).
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

// Every substep of the frame for one rod, one invocation a rod: the walked
// substep (`substep_rod`, shaders/substep.wgsl) in a loop over the frame's
// substeps. The CPU (src/cpu/mod.rs `step`) takes all rods through a
// substep before the next; without hair–hair interaction a rod's substep
// reads and writes only the rod's own vertices, edges and contacts, the
// anchors' poses and the colliders, so taking each rod through all of its
// substeps in turn computes the same values. With interaction the grid
// couples the rods at every substep, and the schedule runs the walked
// fused halves instead (src/gpu/schedule.rs `substep_schedule`). On a GPU
// a rod's state is read from memory once a frame rather than once a
// substep where the caches hold it between substeps.
@compute @workgroup_size(64)
fn frame_rod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = invocation(gid, groups);
    if (r < params.rod_count) {
        for (var k = 0u; k < params.substeps; k++) {
            frame_substep = k;
            substep_finish_walk(r, substep_start_walk(r, true));
        }
        loops_ran_out(r);
    }
}

// END substep values
