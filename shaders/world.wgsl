#import common

// Kernel `world_positions` (the host's `Packing::world_positions`, in
// src/gpu/packing.rs): one invocation per vertex, run after the last
// substep of a frame when a renderer asked for world positions
// (`GpuSimulator::world_position_buffer`). The stored position is relative
// to the rod's origin (`Position`); a renderer wants the world point, in f32,
// with the strand's radius for its width.

@compute @workgroup_size(64)
fn world_positions(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let v = invocation(gid, groups);
    if (v >= params.vertex_count) {
        return;
    }
    let r = rest[vertex_slot(v)].rod;
    world_pos[v] = vec4<f32>(rods[r].origin.xyz + position_f32(pos_load(v)), rods[r].radius);
}
