//! `strands`: many Discrete Elastic Rods (Bergou et al. 2008) — hair, fur,
//! grass, cables — with a CPU reference simulator driven by TOML scenes.

pub mod anchor;
pub mod backend;
pub mod bench;
pub mod build;
pub mod contact;
pub mod cpu;
pub mod demo;
pub mod gpu;
pub mod groom;
pub mod interaction;
pub mod output;
pub mod params;
pub mod rods;
pub mod scene;
pub mod stability;
