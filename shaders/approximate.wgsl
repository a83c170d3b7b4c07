
// --- The approximate-math variant (src/gpu/layout.rs `approximate_math`) ---
//
// Appended to the module, whose calls of sin, cos, atan2, length and
// normalize the variant wraps, to run on a correctly rounding adapter
// (lavapipe) with the errors of a GPU's fast hardware approximations: so
// that the GPU tests' tolerances can be checked against them before a GPU
// runs them. Hardware evaluates these functions by interpolating tables
// indexed by the input's leading bits, so its error is a smooth function of
// the input within each table segment, not a fresh draw at every ulp; the
// result is then rounded. The model: per call site, an error constant over
// each segment of the input's sign, exponent and leading
// APPROX_SEGMENT_BITS mantissa bits and unrelated between segments and
// sites, added to the correctly rounded result (and rounded again):
// - sin, cos: an absolute error up to 2^-21.41 (sin) and 2^-21.19 (cos) on
//   [-π, π], CUDA's bounds for its hardware __sinf and __cosf, plus
//   2^-24 |x| (applied at every x), for the range reduction's rounding of
//   1/2π, which grows the error beyond [-π, π].
// - atan2, length, normalize: a relative error up to APPROX_ULPS ulps,
//   near what WGSL allows a square root (about 4.5 ulps, from
//   1/inverseSqrt; CUDA's atan2f is 3 ulps). A conforming normalize may be
//   off by more (x / length(x): division adds 2.5), which this does not
//   cover.
// Division is not perturbed: WGSL allows 2.5 ulps there, an error of the
// same kind and size as length's.

const APPROX_SIN_ABS: f32 = 3.5887879e-7;   // 2^-21.41
const APPROX_COS_ABS: f32 = 4.1799819e-7;   // 2^-21.19
const APPROX_REDUCTION: f32 = 5.9604645e-8; // 2^-24 per radian of |x|
const APPROX_ULPS: f32 = 4.0;
const APPROX_SEGMENT_BITS: u32 = 7u;

// A value in [-1, 1] from the segment of `key`'s bits and the call site: a
// PCG hash, so that neighbouring segments and sites get unrelated errors.
fn approx_noise(key: u32, site: u32) -> f32 {
    let segment = key >> (23u - APPROX_SEGMENT_BITS);
    let state = (segment ^ (site * 0x9e3779b9u)) * 747796405u + 2891336453u;
    var word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    word = (word >> 22u) ^ word;
    return f32(word >> 8u) * (2.0 / 16777215.0) - 1.0;
}

// The absolute error of sin or cos at x.
fn approx_abs(bound: f32, site: u32, x: f32) -> f32 {
    return (bound + APPROX_REDUCTION * abs(x)) * approx_noise(bitcast<u32>(x), site);
}

// 1 + a relative error of up to `ulps` ulps, keyed by `key`.
fn approx_factor(ulps: f32, site: u32, key: f32) -> f32 {
    return 1.0 + ulps * F32_EPSILON * approx_noise(bitcast<u32>(key), site);
}
