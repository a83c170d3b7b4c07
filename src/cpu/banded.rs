//! Symmetric banded matrices and their Cholesky factorisation: the
//! Newton systems of the implicit step (`cpu::implicit`), one rod's
//! positions and twist angles interleaved, so that each stencil couples
//! unknowns at most `HALF_BANDWIDTH` apart.

/// A symmetric `n × n` matrix with `A[i][j] = 0` for `|i − j| > band`,
/// stored by its lower band: row i holds `A[i][i − band ..= i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Banded {
    n: usize,
    band: usize,
    /// `n · (band + 1)` entries; entry `(i, k)` is `A[i][i + k − band]`.
    lower: Vec<f64>,
}

impl Banded {
    /// The zero matrix.
    pub fn zeros(n: usize, band: usize) -> Self {
        Banded {
            n,
            band,
            lower: vec![0.0; n * (band + 1)],
        }
    }

    /// Its order.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Its half-bandwidth.
    pub fn band(&self) -> usize {
        self.band
    }

    fn at(&self, i: usize, j: usize) -> usize {
        debug_assert!(j <= i && i - j <= self.band && i < self.n);
        i * (self.band + 1) + j + self.band - i
    }

    /// `A[i][j]` (either triangle).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let (i, j) = if i >= j { (i, j) } else { (j, i) };
        if i - j > self.band {
            0.0
        } else {
            self.lower[self.at(i, j)]
        }
    }

    /// `A[i][j] += v` and `A[j][i] += v` (once for i = j). Panics past the band.
    pub fn add(&mut self, i: usize, j: usize, v: f64) {
        let (i, j) = if i >= j { (i, j) } else { (j, i) };
        assert!(
            i - j <= self.band,
            "entry ({i}, {j}) outside the half-bandwidth {}",
            self.band
        );
        let k = self.at(i, j);
        self.lower[k] += v;
    }

    /// `A[first + i][first + j] += block[i][j]` for the lower triangle
    /// `j ≤ i` of the symmetric `block` (and so its mirror). Panics past the
    /// matrix or the band.
    pub fn add_lower_block<const M: usize>(&mut self, first: usize, block: &[[f64; M]; M]) {
        assert!(
            M <= self.band + 1 && first + M <= self.n,
            "a {M}×{M} block at {first} outside the matrix or its half-bandwidth {}",
            self.band
        );
        for (i, row) in block.iter().enumerate() {
            let start = self.at(first + i, first);
            for (j, v) in row.iter().enumerate().take(i + 1) {
                self.lower[start + j] += v;
            }
        }
    }

    /// Row and column `i` zero but the diagonal, which becomes `d`: the
    /// unknown held fixed (with a zero right-hand side there).
    pub fn fix(&mut self, i: usize, d: f64) {
        for j in i.saturating_sub(self.band)..=(i + self.band).min(self.n - 1) {
            let (a, b) = if i >= j { (i, j) } else { (j, i) };
            let k = self.at(a, b);
            self.lower[k] = 0.0;
        }
        let k = self.at(i, i);
        self.lower[k] = d;
    }

    /// `y = A x`.
    pub fn mul(&self, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.n];
        for i in 0..self.n {
            for j in i.saturating_sub(self.band)..=i {
                let a = self.lower[self.at(i, j)];
                y[i] += a * x[j];
                if j != i {
                    y[j] += a * x[i];
                }
            }
        }
        y
    }

    /// The Cholesky factor L (A = L Lᵀ) in place of the lower band, or
    /// `None` where a pivot is not positive (A is not positive definite:
    /// the caller shifts it). O(n · band²).
    pub fn cholesky(mut self) -> Option<Cholesky> {
        let (n, b) = (self.n, self.band);
        for i in 0..n {
            let lo = i.saturating_sub(b);
            for j in lo..=i {
                let mut s = self.lower[self.at(i, j)];
                for k in lo.max(j.saturating_sub(b))..j {
                    s -= self.lower[self.at(i, k)] * self.lower[self.at(j, k)];
                }
                let at = self.at(i, j);
                if j == i {
                    if s.is_nan() || s <= 0.0 {
                        return None;
                    }
                    self.lower[at] = s.sqrt();
                } else {
                    self.lower[at] = s / self.lower[self.at(j, j)];
                }
            }
        }
        Some(Cholesky(self))
    }
}

/// A factorised banded matrix (`Banded::cholesky`).
#[derive(Clone, Debug)]
pub struct Cholesky(Banded);

impl Cholesky {
    /// Solve `A x = rhs` in place.
    pub fn solve(&self, rhs: &mut [f64]) {
        let l = &self.0;
        let (n, b) = (l.n, l.band);
        for i in 0..n {
            let lo = i.saturating_sub(b);
            let s = (lo..i).fold(rhs[i], |s, k| s - l.lower[l.at(i, k)] * rhs[k]);
            rhs[i] = s / l.lower[l.at(i, i)];
        }
        for i in (0..n).rev() {
            let hi = (i + b).min(n - 1);
            let s = (i + 1..=hi).fold(rhs[i], |s, k| s - l.lower[l.at(k, i)] * rhs[k]);
            rhs[i] = s / l.lower[l.at(i, i)];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random symmetric positive definite banded matrix: the solution
    /// of `A x = b` has a residual at rounding level; an indefinite one is
    /// refused.
    #[test]
    fn cholesky_solves_a_banded_system_and_refuses_an_indefinite_one() {
        let (n, band) = (40, 10);
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let mut a = Banded::zeros(n, band);
        for i in 0..n {
            for j in i.saturating_sub(band)..i {
                a.add(i, j, rnd());
            }
            // Diagonal dominance: positive definite.
            a.add(i, i, 2.0 * band as f64);
        }
        let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let mut x = b.clone();
        a.clone()
            .cholesky()
            .expect("positive definite")
            .solve(&mut x);
        let ax = a.mul(&x);
        for i in 0..n {
            assert!(
                (ax[i] - b[i]).abs() < 1e-12,
                "row {i}: {} vs {}",
                ax[i],
                b[i]
            );
        }
        assert_eq!(a.get(3, 12), a.get(12, 3));
        assert_eq!(a.get(0, 11), 0.0);
        // [[1, 2], [2, 1]]: eigenvalues 3 and −1.
        let mut m = Banded::zeros(2, 1);
        m.add(0, 0, 1.0);
        m.add(1, 1, 1.0);
        m.add(1, 0, 2.0);
        assert!(m.cholesky().is_none());
    }

    /// `fix` leaves the unknown's row and column zero but the diagonal.
    #[test]
    fn a_fixed_unknown_decouples() {
        let mut a = Banded::zeros(3, 1);
        for i in 0..3 {
            a.add(i, i, 4.0);
        }
        a.add(1, 0, 1.0);
        a.add(2, 1, 1.0);
        a.fix(1, 2.0);
        assert_eq!((a.get(0, 1), a.get(1, 2), a.get(1, 1)), (0.0, 0.0, 2.0));
        let mut x = vec![4.0, 0.0, 8.0];
        a.cholesky().unwrap().solve(&mut x);
        assert_eq!(x, vec![1.0, 0.0, 2.0]);
    }
}
