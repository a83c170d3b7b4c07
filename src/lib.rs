//! `strands`: many Discrete Elastic Rods (Bergou et al. 2008, "Discrete
//! Elastic Rods", ACM SIGGRAPH) — hair, fur, grass, cables — with a CPU
//! reference simulator in f64 ([`cpu::CpuSimulator`]) and a GPU simulator
//! in f32 WGSL ([`gpu::GpuSimulator`]), driven by TOML scenes or built in code.
//!
//! With `default-features = false` the crate is the library alone: rods,
//! scene loading, the CPU reference and the GPU simulator. The features
//! `cli`, `bench` and `demo` (on by default) add the `strands` command line,
//! its benchmark and its live demo.
//!
//! The crate's rooms: [`model`], what is simulated (rods, anchors,
//! colliders, hair–hair interaction, parameters, the step limit); the
//! backends [`cpu`] and [`gpu`], which simulate it; [`scene`] and
//! [`build`], which make it; [`groom`], which reads and writes strands;
//! and the application: `app`, `backend`, `bench`, `demo`, `output`.
//!
//! An engine embeds it like this: build or load a scene, step on its own
//! clock, move the anchors the strands are clamped to, read positions.
//!
//! ```
//! use strands::glam::DVec3;
//! use strands::scene::Scene;
//! use strands::cpu::CpuSimulator;
//!
//! let scene: Scene = r#"
//!     [sim]
//!     dt = 0.005
//!     [materials.hair]
//!     density = 1300.0
//!     radius = 5e-5
//!     youngs_modulus = 4e9
//!     [anchors.head]
//!     [[rods]]
//!     kind = "straight"
//!     material = "hair"
//!     from = [0.0, 0.0, 0.0]
//!     to = [0.0, -0.1, 0.0]
//!     segments = 8
//!     start = "clamped"
//!     start_anchor = "head"
//! "#
//! .parse()?;
//! let (rods, state) = scene.build();
//! let mut sim = CpuSimulator::new(rods, state, scene.params);
//! let head = sim.anchor_index("head").unwrap();
//! for frame in 1..=10 {
//!     // The engine's clock: the head moves 1 cm along x per frame.
//!     let t = frame as f64 * 0.005;
//!     sim.set_anchor_pose(head, t, DVec3::new(0.01 * frame as f64, 0.0, 0.0), DVec3::ZERO);
//!     sim.step()?;
//! }
//! let root = sim.state.pos[0];
//! assert!((root.x - 0.1).abs() < 1e-9, "the root follows the head");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Every public item is documented; clippy -D warnings keeps it so.
#![warn(missing_docs)]

/// The vector and quaternion types of the API (`DVec3`, `DQuat`).
pub use glam;
/// The GPU API the simulator runs on (`GpuContext::from_device` takes its device).
pub use wgpu;

#[cfg(feature = "cli")]
#[doc(hidden)] // the command line's commands: the application's, not the library's
pub mod app;
pub mod backend;
#[cfg(feature = "bench")]
#[doc(hidden)] // `strands bench`: the application's, not the library's
pub mod bench;
pub mod build;
pub mod cpu;
#[cfg(feature = "demo")]
#[doc(hidden)] // `strands demo`: the application's, not the library's
pub mod demo;
pub mod gpu;
pub mod groom;
pub mod model;
#[doc(hidden)] // the JSON result of `strands run` (docs/SCENES.md, "Result file")
pub mod output;
pub mod scene;
