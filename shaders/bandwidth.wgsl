// Bandwidth probe (src/gpu/bandwidth.rs `copy_bandwidth`): dst = src, one
// vec4<f32> per invocation, 256 invocations per workgroup, dispatched over
// two dimensions of workgroups for large buffers. Bytes read + written per
// second of this copy is the practical peak `strands bench` compares the
// simulation's modelled traffic with.

@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

const COPY_WORKGROUP: u32 = 256u;

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * COPY_WORKGROUP;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i];
    }
}
