//! Second-order forward-mode differentiation: a number that carries its
//! gradient and Hessian with respect to `N` inputs through arithmetic,
//! exactly (to rounding), by the chain rule of each operation.
//!
//! For `c = f(a)`: `∇c = f′ ∇a`, `∇²c = f′ ∇²a + f″ ∇a ∇aᵀ`; for a
//! product `c = ab`: `∇c = b∇a + a∇b`, `∇²c = b∇²a + a∇²b + ∇a∇bᵀ + ∇b∇aᵀ`.
//! The implicit step (`cpu::implicit`) writes each stencil's energy once
//! in these numbers and reads the stencil's exact gradient and Hessian off
//! it; tests check both against finite differences.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// A value with its gradient and (symmetric) Hessian in `N` inputs. Only
/// the lower triangle of `h` (`h[i][j]`, j ≤ i) is computed: the upper
/// stays zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual<const N: usize> {
    /// The value.
    pub v: f64,
    /// ∂v/∂xᵢ.
    pub g: [f64; N],
    /// ∂²v/∂xᵢ∂xⱼ for j ≤ i.
    pub h: [[f64; N]; N],
}

impl<const N: usize> Dual<N> {
    /// A constant.
    #[inline(always)]
    pub fn constant(v: f64) -> Self {
        Dual {
            v,
            g: [0.0; N],
            h: [[0.0; N]; N],
        }
    }

    /// Input `i` at value `v`.
    #[inline(always)]
    pub fn input(v: f64, i: usize) -> Self {
        let mut d = Self::constant(v);
        d.g[i] = 1.0;
        d
    }

    /// `f(self)` with `f′ = d1`, `f″ = d2` at `self.v`.
    #[inline(always)]
    fn chain(self, v: f64, d1: f64, d2: f64) -> Self {
        let mut out = self;
        out.v = v;
        for i in 0..N {
            out.g[i] = d1 * self.g[i];
            for j in 0..=i {
                out.h[i][j] = d1 * self.h[i][j] + d2 * self.g[i] * self.g[j];
            }
        }
        out
    }

    /// √self.
    #[inline(always)]
    pub fn sqrt(self) -> Self {
        let s = self.v.sqrt();
        self.chain(s, 0.5 / s, -0.25 / (s * self.v))
    }

    /// sin self.
    #[inline(always)]
    pub fn sin(self) -> Self {
        let (s, c) = self.v.sin_cos();
        self.chain(s, c, -s)
    }

    /// cos self.
    #[inline(always)]
    pub fn cos(self) -> Self {
        let (s, c) = self.v.sin_cos();
        self.chain(c, -s, -c)
    }

    /// 1/self.
    #[inline(always)]
    pub fn recip(self) -> Self {
        let r = 1.0 / self.v;
        self.chain(r, -r * r, 2.0 * r * r * r)
    }

    /// self².
    #[inline(always)]
    pub fn square(self) -> Self {
        self * self
    }

    /// atan2(self, x): the angle of (x, self). With y = self and
    /// r² = x² + y²: ∂/∂y = x/r², ∂/∂x = −y/r², ∂²/∂y² = −2xy/r⁴,
    /// ∂²/∂x² = 2xy/r⁴, ∂²/∂x∂y = (y² − x²)/r⁴.
    #[inline(always)]
    pub fn atan2(self, x: Self) -> Self {
        let (yv, xv) = (self.v, x.v);
        let r2 = xv * xv + yv * yv;
        let r4 = r2 * r2;
        let (dy, dx) = (xv / r2, -yv / r2);
        let (dyy, dxx, dxy) = (
            -2.0 * xv * yv / r4,
            2.0 * xv * yv / r4,
            (yv * yv - xv * xv) / r4,
        );
        let mut out = Self::constant(yv.atan2(xv));
        for i in 0..N {
            out.g[i] = dy * self.g[i] + dx * x.g[i];
            for j in 0..=i {
                out.h[i][j] = dy * self.h[i][j]
                    + dx * x.h[i][j]
                    + dyy * self.g[i] * self.g[j]
                    + dxx * x.g[i] * x.g[j]
                    + dxy * (x.g[i] * self.g[j] + self.g[i] * x.g[j]);
            }
        }
        out
    }
}

impl<const N: usize> Add for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn add(mut self, b: Self) -> Self {
        self.v += b.v;
        for i in 0..N {
            self.g[i] += b.g[i];
            for j in 0..=i {
                self.h[i][j] += b.h[i][j];
            }
        }
        self
    }
}

impl<const N: usize> Sub for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        self + (-b)
    }
}

impl<const N: usize> Neg for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self * -1.0
    }
}

impl<const N: usize> Mul for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, b: Self) -> Self {
        let mut out = self;
        out.v = self.v * b.v;
        for i in 0..N {
            out.g[i] = self.g[i] * b.v + self.v * b.g[i];
            for j in 0..=i {
                out.h[i][j] = self.h[i][j] * b.v
                    + self.v * b.h[i][j]
                    + self.g[i] * b.g[j]
                    + b.g[i] * self.g[j];
            }
        }
        out
    }
}

impl<const N: usize> Div for Dual<N> {
    type Output = Self;
    // a/b = a · (1/b), with the reciprocal's own chain rule.
    #[allow(clippy::suspicious_arithmetic_impl)]
    #[inline(always)]
    fn div(self, b: Self) -> Self {
        self * b.recip()
    }
}

impl<const N: usize> Add<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn add(mut self, b: f64) -> Self {
        self.v += b;
        self
    }
}

impl<const N: usize> Sub<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn sub(mut self, b: f64) -> Self {
        self.v -= b;
        self
    }
}

impl<const N: usize> Mul<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn mul(mut self, b: f64) -> Self {
        self.v *= b;
        for i in 0..N {
            self.g[i] *= b;
            for j in 0..=i {
                self.h[i][j] *= b;
            }
        }
        self
    }
}

impl<const N: usize> Div<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn div(self, b: f64) -> Self {
        self * (1.0 / b)
    }
}

/// What the stencils' energies are written in: f64 for values alone,
/// `Dual<N>` for values with their gradients and Hessians.
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Add<f64, Output = Self>
    + Sub<f64, Output = Self>
    + Mul<f64, Output = Self>
    + Div<f64, Output = Self>
{
    /// A constant.
    fn of(v: f64) -> Self;
    /// The value.
    fn value(self) -> f64;
    /// √self.
    fn sqrt(self) -> Self;
    /// sin self.
    fn sin(self) -> Self;
    /// cos self.
    fn cos(self) -> Self;
    /// atan2(self, x).
    fn atan2(self, x: Self) -> Self;
}

impl Real for f64 {
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        f64::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        f64::cos(self)
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        f64::atan2(self, x)
    }
}

impl<const N: usize> Real for Dual<N> {
    #[inline(always)]
    fn of(v: f64) -> Self {
        Dual::constant(v)
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self.v
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        Dual::sqrt(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        Dual::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        Dual::cos(self)
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        Dual::atan2(self, x)
    }
}

/// A 3-vector of `Real`s.
#[derive(Clone, Copy, Debug)]
pub struct Vec3<T> {
    /// Components.
    pub c: [T; 3],
}

impl<const N: usize> Vec3<Dual<N>> {
    /// Inputs `first, first + 1, first + 2` at `v`.
    #[inline(always)]
    pub fn input(v: glam::DVec3, first: usize) -> Self {
        Vec3 {
            c: [
                Dual::input(v.x, first),
                Dual::input(v.y, first + 1),
                Dual::input(v.z, first + 2),
            ],
        }
    }
}

impl<T: Real> Vec3<T> {
    /// A constant vector.
    #[inline(always)]
    pub fn of(v: glam::DVec3) -> Self {
        Vec3 {
            c: [T::of(v.x), T::of(v.y), T::of(v.z)],
        }
    }

    /// The values.
    #[inline(always)]
    pub fn value(&self) -> glam::DVec3 {
        glam::DVec3::new(self.c[0].value(), self.c[1].value(), self.c[2].value())
    }

    /// self · b.
    #[inline(always)]
    pub fn dot(&self, b: &Self) -> T {
        self.c[0] * b.c[0] + self.c[1] * b.c[1] + self.c[2] * b.c[2]
    }

    /// self × b.
    #[inline(always)]
    pub fn cross(&self, b: &Self) -> Self {
        let [x, y, z] = self.c;
        let [u, v, w] = b.c;
        Vec3 {
            c: [y * w - z * v, z * u - x * w, x * v - y * u],
        }
    }

    /// |self|.
    #[inline(always)]
    pub fn length(&self) -> T {
        self.dot(self).sqrt()
    }

    /// self · s.
    #[inline(always)]
    pub fn scale(&self, s: T) -> Self {
        Vec3 {
            c: self.c.map(|x| x * s),
        }
    }
}

impl<T: Real> Add for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        Vec3 {
            c: [self.c[0] + b.c[0], self.c[1] + b.c[1], self.c[2] + b.c[2]],
        }
    }
}

impl<T: Real> Sub for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        Vec3 {
            c: [self.c[0] - b.c[0], self.c[1] - b.c[1], self.c[2] - b.c[2]],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function of two inputs mixing every operation, its gradient and
    /// Hessian against central finite differences of its value.
    #[test]
    fn gradient_and_hessian_match_finite_differences() {
        fn f<const N: usize>(a: Dual<N>, b: Dual<N>) -> Dual<N> {
            let r = (a * a + b * b + 1.0).sqrt();
            (a * b.sin() + b.cos() / r) * 3.0 - a.atan2(b + 2.0) + (a - b).square() / (b + 4.0)
                - r.recip()
        }
        let value = |a: f64, b: f64| f::<2>(Dual::constant(a), Dual::constant(b)).v;
        for (a, b) in [(0.3, -0.7), (1.5, 0.2), (-2.0, 1.1)] {
            let d = f(Dual::<2>::input(a, 0), Dual::<2>::input(b, 1));
            assert_eq!(d.v, value(a, b));
            let e = 1e-5;
            let fd_g = [
                (value(a + e, b) - value(a - e, b)) / (2.0 * e),
                (value(a, b + e) - value(a, b - e)) / (2.0 * e),
            ];
            for (i, fd) in fd_g.iter().enumerate() {
                assert!((d.g[i] - fd).abs() < 1e-8, "g{i}: {} vs {fd}", d.g[i]);
            }
            let e = 1e-4;
            let shift = |i: usize, s: f64| if i == 0 { (a + s, b) } else { (a, b + s) };
            for i in 0..2 {
                for j in 0..=i {
                    let at = |si: f64, sj: f64| {
                        let (x, y) = shift(i, si);
                        let (x, y) = if j == 0 { (x + sj, y) } else { (x, y + sj) };
                        value(x, y)
                    };
                    let fd = (at(e, e) - at(e, -e) - at(-e, e) + at(-e, -e)) / (4.0 * e * e);
                    assert!(
                        (d.h[i][j] - fd).abs() < 1e-5,
                        "h{i}{j}: {} vs {fd}",
                        d.h[i][j]
                    );
                }
            }
            assert_eq!(d.h[0][1], 0.0, "the upper triangle is not computed");
        }
    }
}
