#import common
#import step_table
#import substep

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

