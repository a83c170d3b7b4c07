//! The application's commands as library code: what `strands run`,
//! `strands bench` and `strands demo` do, each taking its parsed arguments
//! (`src/main.rs` only parses and dispatches), so that tests and other
//! programs run them as the command line does.

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "demo")]
pub mod demo;
pub mod run;
