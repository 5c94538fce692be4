//! The machine passes: transformations of *allocated* machine IR, run after register
//! allocation.
//!
//! - [`linearize`]: guard-variable linearization of unstructured divergent regions
//!   (Anantpur and Govindarajan), with registers reserved before allocation; an optional
//!   pass, listed in the [registry](crate::passes::REGISTRY);
//! - [`cleanup`]: removes the edge blocks allocation left empty; a fixed stage of every
//!   pipeline, run last, once nothing relies on every edge having a block of its own.
//!
//! A registered machine pass implements [`MachinePass`](crate::passes::MachinePass); it
//! may not create virtual registers, only use the ones it reserved
//! ([`MachinePass::reservation`](crate::passes::MachinePass::reservation)).

pub mod cleanup;
pub mod linearize;
