//! The tridiagonal systems of a rod's walked solves: the fast projection's
//! (src/cpu/project.rs) and the twist's Newton step (src/cpu/twist.rs),
//! with the order a walk takes their rows in. Their GPU twins eliminate
//! row by row inside the kernels' walks (shaders/project.wgsl,
//! shaders/twist.wgsl, `from_tip`).

/// The order in which a Newton iteration of a walked solve takes its
/// tridiagonal rows (the projection's `eliminate_rows`, the twist's
/// `twist_gradient` and `newton_step`); its back substitution then goes the
/// other way. Either order solves the same system, each with its own
/// rounding. Each solve takes the next iteration's rows in the order the
/// substitution before it walked (from the end it started at, where the
/// elimination before it ended), so that on the GPU that walk also builds
/// them behind its stores (shaders/project.wgsl `substitute_and_move`,
/// shaders/twist.wgsl `newton_back`): one walk an iteration after the
/// first, not two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOrder {
    /// From the tip to the root, then substituted from the root.
    TipFirst,
    /// From the root to the tip, then substituted from the tip.
    RootFirst,
}

impl RowOrder {
    /// The next iteration's: its rows are taken in the order the
    /// substitution before it walks (on the GPU, in that walk).
    pub fn flipped(self) -> RowOrder {
        match self {
            RowOrder::TipFirst => RowOrder::RootFirst,
            RowOrder::RootFirst => RowOrder::TipFirst,
        }
    }
}

/// Solve the tridiagonal system with diagonal `diag`, `upper[i] = A[i][i+1]`
/// and `lower[i] = A[i+1][i]` in place (Thomas algorithm, no pivoting: the
/// projection's matrices are diagonally dominant up to the step's change of
/// the edges; the twist's are symmetric positive definite where it uses
/// them). Returns false when a pivot is not positive, i.e. the elimination
/// met a matrix that is not positive definite.
pub fn solve_tridiagonal(
    diag: &[f64],
    upper: &[f64],
    lower: &[f64],
    rhs: &mut [f64],
    scratch: &mut [f64],
) -> bool {
    let n = diag.len();
    let mut pivot = diag[0];
    if pivot.is_nan() || pivot <= 0.0 {
        return false;
    }
    rhs[0] /= pivot;
    for i in 1..n {
        scratch[i - 1] = upper[i - 1] / pivot;
        pivot = diag[i] - lower[i - 1] * scratch[i - 1];
        if pivot.is_nan() || pivot <= 0.0 {
            return false;
        }
        rhs[i] = (rhs[i] - lower[i - 1] * rhs[i - 1]) / pivot;
    }
    for i in (0..n - 1).rev() {
        rhs[i] -= scratch[i] * rhs[i + 1];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `solve_tridiagonal` solves a non-symmetric system: the residual
    /// `A x − b` of the solution is at rounding level.
    #[test]
    fn lu_solves_a_non_symmetric_tridiagonal_system() {
        let diag = [4.0, 5.0, 3.5, 6.0];
        let upper = [1.0, -2.0, 0.5, 0.0];
        let lower = [-0.5, 1.5, 2.0, 0.0];
        let b = [1.0, -2.0, 3.0, 0.25];
        let mut x = b;
        let mut scratch = [0.0; 4];
        assert!(solve_tridiagonal(
            &diag,
            &upper,
            &lower,
            &mut x,
            &mut scratch
        ));
        for i in 0..4 {
            let mut ax = diag[i] * x[i];
            if i > 0 {
                ax += lower[i - 1] * x[i - 1];
            }
            if i < 3 {
                ax += upper[i] * x[i + 1];
            }
            assert!((ax - b[i]).abs() < 1e-14, "row {i}: {ax} vs {}", b[i]);
        }
    }

    /// A symmetric system that is not positive definite stops the
    /// elimination: [[1, 2], [2, 1]] has eigenvalues 3 and −1.
    #[test]
    fn an_indefinite_system_is_refused() {
        let mut x = [1.0, 1.0];
        let mut scratch = [0.0; 2];
        assert!(!solve_tridiagonal(
            &[1.0, 1.0],
            &[2.0],
            &[2.0],
            &mut x,
            &mut scratch
        ));
    }
}
