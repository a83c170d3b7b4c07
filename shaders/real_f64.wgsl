// The bending stencil's arithmetic (shaders/forces.wgsl `bending_stencil`
// and the force sums) in f64, on a device with `wgpu::Features::SHADER_F64`
// (src/gpu/compose.rs: the alternative of shaders/real_f32.wgsl, the same
// names).
alias real = f64;

// The length of a stencil vector in its precision. The approximate-math
// variant (src/gpu/layout.rs `approximate_math`) leaves this module exact,
// as GPUs' f64 square roots are.
fn length_real(v: vec3<real>) -> real {
    return length(v);
}
