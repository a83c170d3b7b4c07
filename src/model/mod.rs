//! The model: what is simulated, apart from how (the backends `cpu` and
//! `gpu`) and from the application that drives it. Scenes (`scene`) and
//! the builder (`build`) make a model; nothing here uses them, a backend
//! or the application.
//!
//! * [`rods`]: materials, end conditions, the flat `RodSet` that holds
//!   everything below, the dynamic `State`, and the operations on both
//!   (`teleport`);
//! * [`anchor`]: the scripted or driven rigid frames that clamped ends
//!   and colliders follow;
//! * [`colliders`]: the shapes the strands cannot enter (spheres,
//!   capsules, planes, meshes by their signed distance field);
//! * [`interaction`]: hair–hair interaction groups, their grids and the
//!   grid's units;
//! * [`rod_contact`]: which rods keep out of each other, with which
//!   friction;
//! * [`params`]: the simulation's parameters;
//! * [`stability`]: the explicit step limit and the chatter detector.
//!
//! The modules name each other in one direction only: `params`, `anchor`,
//! `colliders` and `rod_contact` name none of the others, `interaction`
//! names `anchor`, `rods` names those, `stability` names `rods` and
//! `params`.

pub mod anchor;
pub mod colliders;
pub mod interaction;
pub mod params;
pub mod rod_contact;
pub mod rods;
pub mod stability;
