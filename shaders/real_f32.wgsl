// The bending stencil's arithmetic (shaders/forces.wgsl `bending_stencil`
// and the force sums) in f32: the module on a device without f64
// (src/gpu/compose.rs: its alternative is shaders/real_f64.wgsl, which a
// device with `wgpu::Features::SHADER_F64` gets). The stencil's terms are
// ~100× the net force they sum to, and their f32 rounding, anew as the
// vertices move by less than a quantum, keeps a settled rod trembling at
// ~3e-6 m/s where f64 is not there to remove it.
alias real = f32;

// The length of a stencil vector in its precision. Its own function so that
// the approximate-math variant (src/gpu/layout.rs `approximate_math`) can
// leave it exact where `real` is f64, as GPUs' f64 square roots are.
fn length_real(v: vec3<real>) -> real {
    return length(v);
}
