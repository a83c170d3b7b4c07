//! Every number a user may change about a simulation, with defaults and units.

use glam::DVec3;

/// How inextensibility is enforced after each unconstrained step (§8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Projection {
    /// Jacobi iterations on the edge-length constraints, as a GPU runs them:
    /// every vertex reads the old positions and writes new ones.
    Jacobi {
        /// Iterations per substep.
        iterations: u32,
        /// Relaxation factor in (0, 1].
        relaxation: f64,
    },
    /// Fast projection of Goldenthal et al. 2007 (Newton steps on the
    /// constraint manifold, tridiagonal per rod) until every edge strain
    /// `||e|/|ē| − 1|` is below `tolerance`, at most `max_iterations` steps.
    Fast {
        /// Edge strain to reach.
        tolerance: f64,
        /// Most Newton steps.
        max_iterations: u32,
    },
    /// SHAKE: the same Newton iteration as `Fast`, to the same tolerance, but
    /// moving the vertices along the constraint gradients at the start of the
    /// substep, the constraint forces of a variational integrator: keeps
    /// energy (no drift) and the momentum of free rods, where `Fast` and
    /// `Jacobi` dissipate (docs/PROJECTION.md).
    Shake {
        /// Edge strain to reach.
        tolerance: f64,
        /// Most Newton steps.
        max_iterations: u32,
    },
    /// No projection: edges may stretch freely (for studies only).
    None,
}

/// Wind: a velocity field `w(x, t) = U + g d̂ sin(2π (f t − d̂·x / λ))`, a
/// uniform flow `U` plus gusts of amplitude `g` travelling along `d̂ = U/|U|`
/// (or +x when `U = 0`) with frequency `f` and wavelength `λ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wind {
    /// Uniform wind velocity U (m/s). Default 0.
    pub velocity: DVec3,
    /// Gust amplitude g (m/s). Default 0.
    pub gust_amplitude: f64,
    /// Gust frequency f (Hz). Default 0.5.
    pub gust_frequency: f64,
    /// Gust wavelength λ (m). Default 2.
    pub gust_wavelength: f64,
}

impl Default for Wind {
    fn default() -> Self {
        Wind {
            velocity: DVec3::ZERO,
            gust_amplitude: 0.0,
            gust_frequency: 0.5,
            gust_wavelength: 2.0,
        }
    }
}

impl Wind {
    /// Air velocity at point `x` and time `t`.
    pub fn at(&self, x: DVec3, t: f64) -> DVec3 {
        if self.gust_amplitude == 0.0 {
            return self.velocity;
        }
        let d = self.velocity.try_normalize().unwrap_or(DVec3::X);
        let phase =
            std::f64::consts::TAU * (self.gust_frequency * t - d.dot(x) / self.gust_wavelength);
        self.velocity + d * (self.gust_amplitude * phase.sin())
    }
}

/// How a substep advances the rods (`sim.integrator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Integrator {
    /// Symplectic Euler on the forces at the substep's start (§7.2), then
    /// the projection: explicit, so within the step limit
    /// (`crate::model::stability`). Written `symplectic`.
    #[default]
    Symplectic,
    /// Backward Euler: Newton on each rod's positions and twist angles
    /// (`crate::cpu::implicit`), then the projection. Written `backward-euler`.
    BackwardEuler,
    /// Implicit midpoint: backward Euler over half the substep to its
    /// midpoint, extrapolated to its end. Written `implicit-midpoint`.
    ImplicitMidpoint,
    /// Statics: each substep the equilibrium under gravity at its anchors'
    /// poses, from the last one; velocities zero. Written `static`.
    Static,
}

impl Integrator {
    /// Every integrator, by its scene name.
    pub const ALL: [(Integrator, &'static str); 4] = [
        (Integrator::Symplectic, "symplectic"),
        (Integrator::BackwardEuler, "backward-euler"),
        (Integrator::ImplicitMidpoint, "implicit-midpoint"),
        (Integrator::Static, "static"),
    ];

    /// The scene name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(i, _)| *i == self).unwrap().1
    }

    /// True for the integrators solved by Newton (`crate::cpu::implicit`),
    /// which no step limit bounds.
    pub fn is_implicit(self) -> bool {
        self != Integrator::Symplectic
    }
}

/// The stopping rule of the implicit integrators' Newton solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Newton {
    /// Newton stops once every free vertex's net force is below this
    /// fraction of the rod's force scale, and every free twist angle's net
    /// torque below this fraction of its torque scale, or below the
    /// rounding floor of f64 positions where that is larger
    /// (`crate::cpu::implicit::Scales`). Default 1e-8.
    pub tolerance: f64,
    /// At most this many iterations a rod and substep. Default 100.
    pub max_iterations: u32,
}

impl Default for Newton {
    fn default() -> Self {
        Newton {
            tolerance: 1e-8,
            max_iterations: 100,
        }
    }
}

/// Simulation parameters. Units are SI throughout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimParams {
    /// Frame time step (s); each frame is split into `substeps`. Default 1/60.
    pub dt: f64,
    /// Substeps per frame; the integrator step is `h = dt / substeps`. Default 20.
    /// With `auto_substeps` the simulators replace it by the fewest substeps
    /// within the explicit step limit (`crate::model::stability`).
    pub substeps: u32,
    /// Choose `substeps` from the step limit (`stability::resolve_substeps`),
    /// again whenever `dt` or a material changes. Default false here (the
    /// library keeps the count it is given, checked against the limit); scene
    /// files default to `sim.substeps = "auto"`.
    pub auto_substeps: bool,
    /// Run a fixed `substeps` even when `h` is above the step limit (the run
    /// is then likely wrong; the chatter detector still stops it). Default false.
    pub allow_unstable: bool,
    /// Gravitational acceleration (m/s²). Default (0, −9.81, 0).
    pub gravity: DVec3,
    /// Wind.
    pub wind: Wind,
    /// How inextensibility is enforced.
    pub projection: Projection,
    /// Newton on the twist angles stops when the largest update is below this (rad).
    /// Default 1e-10.
    pub twist_tolerance: f64,
    /// At most this many Newton iterations per twist solve. Default 25.
    pub twist_max_iterations: u32,
    /// A vertex faster than this (m/s) is taken as a blow-up. Default 100.
    pub max_speed: f64,
    /// How a substep advances the rods. Default symplectic.
    pub integrator: Integrator,
    /// The implicit integrators' Newton stopping rule.
    pub newton: Newton,
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            dt: 1.0 / 60.0,
            substeps: 20,
            auto_substeps: false,
            allow_unstable: false,
            gravity: DVec3::new(0.0, -9.81, 0.0),
            wind: Wind::default(),
            projection: Projection::Fast {
                tolerance: 1e-10,
                max_iterations: 50,
            },
            twist_tolerance: 1e-10,
            twist_max_iterations: 25,
            max_speed: 100.0,
            integrator: Integrator::Symplectic,
            newton: Newton::default(),
        }
    }
}

impl SimParams {
    /// The integrator step h = dt / substeps (s).
    pub fn h(&self) -> f64 {
        self.dt / self.substeps as f64
    }
}
