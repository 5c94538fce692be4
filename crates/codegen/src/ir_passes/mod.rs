//! The IR passes: transformations of the SSA IR, run before lowering, in the order the
//! `passes` setting names them.
//!
//! Each pass is one folder (or file) here, opening with a header that explains its
//! algorithm on a small example and cites its paper, and implements
//! [`IrPass`](crate::passes::IrPass); it is listed in the
//! [registry](crate::passes::REGISTRY) to become reachable from pipelines, the CLI, the
//! differential tests and the fuzzers.
//!
//! - [`converge`]: Common Subexpression Convergence (hoist and sink the expressions both
//!   arms of a divergent branch compute);
//! - [`licm`]: loop-invariant code motion (pure, non-faulting instructions whose operands
//!   are defined outside a loop move to its preheader);
//! - [`restructure`]: predicate-based restructuring into tail-controlled loops and
//!   properly nested branches (Reissmann et al.);
//! - [`linearize_ssa`]: guard-variable linearization on the SSA IR (Anantpur and
//!   Govindarajan), the paper's own level, to compare with the machine pass
//!   [`linearize`](crate::machine_passes::linearize).
//!
//! Helpers more than one pass uses live in [`pass_util`](crate::pass_util), never inside
//! another pass.

pub mod converge;
pub mod licm;
pub mod linearize_ssa;
pub mod meld;
pub mod restructure;
