// The demo's drawing: strands as ribbons shaded with Kajiya–Kay, read
// straight from the simulation's position and frame buffers; the head and
// the ground as lit meshes. Structs mirror src/demo/render.rs (checked in
// tests/gpu_layout.rs).

struct Camera {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,          // camera position, w unused
    light_dir: vec4<f32>,    // unit vector towards the light, w unused
    root_color: vec4<f32>,   // linear RGB at a strand's root, w = colour variation
    tip_color: vec4<f32>,    // linear RGB at its tip, w = specular exponent
    strand: vec4<f32>,       // x = ribbon half-width (m), y = 1: orient by the material frame, 0: face the camera
}

struct MeshUniform {
    model: mat4x4<f32>,
    color: vec4<f32>,
}

// Per simulation vertex: data.x = strand seed in [0, 1), y = arc parameter s
// in [0, 1] from root to tip, z = 1 when an edge starts here, w = width
// scale; origin = the world point the vertex's simulated position is relative to.
struct StrandInfo {
    data: vec4<f32>,
    origin: vec4<f32>,
}

struct EdgeFrame {
    tangent: vec4<f32>,
    ref_u: vec4<f32>,
}

// A simulated position relative to its rod's origin, cell · POSITION_QUANTUM
// + rem (shaders/common.wgsl `Position`, src/gpu/layout.rs `GpuPosition`).
struct Position {
    cell: vec4<i32>,
    rem: vec4<f32>,
}

const POSITION_QUANTUM: f32 = 9.5367431640625e-7; // 2⁻²⁰ m

fn position_f32(p: Position) -> vec3<f32> {
    return vec3<f32>(p.cell.xyz) * POSITION_QUANTUM + p.rem.xyz;
}

// Where the simulation's position and frame buffers hold vertex v
// (shaders/common.wgsl `vertex_slot`, the same rule; the pipeline sets the
// simulator's `VertexLayout`): rods of INTERLEAVE vertices interleaved in
// blocks of 8, or (0) each rod's vertices one after another. `info` is in
// rod order.
override INTERLEAVE: u32 = 0u;
override INTERLEAVED_RODS: u32 = 0u;

fn vertex_slot(v: u32) -> u32 {
    if (INTERLEAVE == 0u) {
        return v;
    }
    // max: the division is compiled (and its constant folded) where
    // INTERLEAVE is 0 too, where it must not divide by zero.
    let n = max(INTERLEAVE, 1u);
    let r = v / n;
    let i = v - r * n;
    let block = r & ~7u;
    let width = min(8u, INTERLEAVED_RODS - block);
    return block * n + i * width + (r - block);
}

@group(0) @binding(0) var<uniform> camera: Camera;
@group(0) @binding(1) var<storage, read> positions: array<Position>;
@group(0) @binding(2) var<storage, read> info: array<StrandInfo>;
@group(0) @binding(3) var<storage, read> frames: array<EdgeFrame>;

struct StrandOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) tangent: vec3<f32>,
    @location(2) color: vec3<f32>,
    @location(3) s: f32,
}

fn hash(x: f32) -> f32 {
    return fract(sin(x * 12.9898 + 78.233) * 43758.5453);
}

// One instance per simulation vertex i: the ribbon quad of edge (i, i + 1),
// six vertices; a rod's last vertex starts no edge and draws nothing.
@vertex
fn strand_vertex(@builtin(vertex_index) corner: u32, @builtin(instance_index) i: u32) -> StrandOut {
    var out: StrandOut;
    let d = info[i].data;
    if (d.z < 0.5) {
        out.clip = vec4<f32>(0.0, 0.0, 2.0, 1.0); // outside the clip volume
        return out;
    }
    let ends = array<f32, 6>(0.0, 0.0, 1.0, 0.0, 1.0, 1.0);
    let sides = array<f32, 6>(-1.0, 1.0, -1.0, 1.0, 1.0, -1.0);
    let end = ends[corner];
    let a = info[i].origin.xyz + position_f32(positions[vertex_slot(i)]);
    let b = info[i + 1u].origin.xyz + position_f32(positions[vertex_slot(i + 1u)]);
    let t = normalize(b - a);
    let p = mix(a, b, end);
    let s = mix(d.y, info[i + 1u].data.y, end);
    var side: vec3<f32>;
    if (camera.strand.y > 0.5) {
        // Material vector m1 = cos θ u + sin θ v of this edge: the ribbon shows the twist.
        let f = frames[vertex_slot(i)];
        let u = f.ref_u.xyz;
        let v = cross(f.tangent.xyz, u);
        side = cos(f.tangent.w) * u + sin(f.tangent.w) * v;
    } else {
        side = normalize(cross(t, camera.eye.xyz - p) + vec3<f32>(1e-9, 0.0, 0.0));
    }
    let width = camera.strand.x * d.w * (1.0 - 0.75 * s);
    let w = p + side * (sides[corner] * width);
    out.clip = camera.view_proj * vec4<f32>(w, 1.0);
    out.world = w;
    out.tangent = t;
    out.s = s;
    let variation = camera.root_color.w * (hash(d.x) - 0.5);
    out.color = mix(camera.root_color.rgb, camera.tip_color.rgb, s) * (1.0 + variation);
    return out;
}

// Kajiya–Kay: diffuse sin(T, L); specular peaks on the reflection cone of
// the fibre, T·V = −T·L (V towards the eye): (−(T·L)(T·V) + sin sin)^p.
@fragment
fn strand_fragment(in: StrandOut) -> @location(0) vec4<f32> {
    let t = normalize(in.tangent);
    let l = camera.light_dir.xyz;
    let v = normalize(camera.eye.xyz - in.world);
    let tl = dot(t, l);
    let tv = dot(t, v);
    let sin_tl = sqrt(max(0.0, 1.0 - tl * tl));
    let sin_tv = sqrt(max(0.0, 1.0 - tv * tv));
    let diffuse = 0.25 + 0.75 * sin_tl;
    let spec = pow(max(0.0, -tl * tv + sin_tl * sin_tv), camera.tip_color.w);
    let c = in.color * diffuse + vec3<f32>(0.35) * spec * (0.3 + 0.7 * in.s);
    return vec4<f32>(c, 1.0);
}

@group(1) @binding(0) var<uniform> mesh: MeshUniform;

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
}

@vertex
fn mesh_vertex(@location(0) position: vec4<f32>, @location(1) normal: vec4<f32>) -> MeshOut {
    var out: MeshOut;
    let w = mesh.model * vec4<f32>(position.xyz, 1.0);
    out.clip = camera.view_proj * w;
    out.world = w.xyz;
    out.normal = normalize((mesh.model * vec4<f32>(normal.xyz, 0.0)).xyz);
    return out;
}

// Lambert plus a little Blinn–Phong and hemispheric ambient.
@fragment
fn mesh_fragment(in: MeshOut) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    let l = camera.light_dir.xyz;
    let v = normalize(camera.eye.xyz - in.world);
    let h = normalize(l + v);
    let ambient = mix(0.15, 0.3, 0.5 + 0.5 * n.y);
    let c = mesh.color.rgb * (ambient + 0.8 * max(dot(n, l), 0.0)) + vec3<f32>(0.15) * pow(max(dot(n, h), 0.0), 40.0);
    return vec4<f32>(c, 1.0);
}
