//! The pass registry: every optional transformation of the pipeline, by name.
//!
//! A pipeline is a comma-separated list of pass names (`--passes linearize` on the command
//! line, the `passes` setting in the library), run in the order given. Passes come in two
//! kinds, by where in the pipeline they work:
//!
//! - [`IrPass`]es transform the SSA IR before lowering (melding, convergence, restructuring);
//! - [`MachinePass`]es transform *allocated* machine IR after register allocation
//!   (linearization). A machine pass may ask, before allocation, for registers that nothing
//!   else will use ([`MachinePass::reservation`]); it receives them by name when it runs.
//!   What it learnt deciding that (the regions it found, say) can travel to its run in a
//!   [`Plan`], so that it is not worked out twice.
//!
//! Every IR pass of a pipeline runs before every machine pass, so a pipeline that names a
//! machine pass before an IR pass is refused rather than silently reordered. Pass options
//! are ordinary [`Settings`] (`--set name=value`), declared with the other settings.
//!
//! IR passes share the kernel's analyses through an [`AnalysisCache`]: a pass asks the cache
//! for the control-flow graph, dominators, post-dominators, loops or divergence it needs
//! (computed on first request), and after it runs the pipeline drops what the pass did not
//! [preserve](IrPass::preserved).
//!
//! # Adding a pass
//!
//! 1. Make its folder (or file) in [`ir_passes`](crate::ir_passes) or
//!    [`machine_passes`](crate::machine_passes), declared in that folder's `mod.rs`, opening
//!    with the algorithm on a small example and the paper it implements.
//! 2. Declare its options in `declare_settings!` ([`crate::settings`]): a `bool`, a `u32`
//!    with its range, or an enumeration made with `setting_enum!`; read the typed fields.
//! 3. Implement [`IrPass`] (take analyses from the [`AnalysisCache`] before changing the
//!    kernel; override [`IrPass::preserved`] when a run can leave the kernel as it was)
//!    or [`MachinePass`] (ask for registers in [`MachinePass::reservation`]); report
//!    counts in a [`PassReport`]; list the settings worth testing in `variants`.
//! 4. List it in [`REGISTRY`]. The CLI (`warplift passes`, `--passes`), the differential
//!    tests and the fuzzers run it, in every variant, from there.
//! 5. Helpers another pass needs too go to `pass_util`, not inside either pass.

use crate::analysis::{AnalysisCache, Preserved};
use crate::mir::MirFunction;
use crate::regalloc::{ReservationRequest, ReservedRegs};
use crate::settings::Settings;
use thiserror::Error;
use warplift_ir::Function;

/// What a pass reports about one run, for statistics and tables: named counts, e.g.
/// `("guard blocks", 4)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Named counts, in the order the pass chose.
    pub counts: Vec<(&'static str, u64)>,
}

impl PassReport {
    /// The count called `name`, if the pass reported one.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.counts.iter().find(|(n, _)| *n == name).map(|c| c.1)
    }
}

/// A pass failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("pass `{pass}` on kernel %{kernel}: {message}")]
pub struct PassError {
    /// The pass.
    pub pass: &'static str,
    /// The kernel.
    pub kernel: String,
    /// What went wrong.
    pub message: String,
}

/// A transformation of the SSA IR, run before lowering.
pub trait IrPass: Sync {
    /// The pass's name in pipelines.
    fn name(&self) -> &'static str;
    /// One line saying what the pass does.
    fn description(&self) -> &'static str;
    /// Transforms `func`; the result must verify. `analyses` holds the analyses of `func`
    /// as it is when the pass starts: ask for them before changing the function.
    fn run(
        &self,
        func: &mut Function,
        analyses: &mut AnalysisCache,
        settings: &Settings,
    ) -> Result<PassReport, PassError>;
    /// What a run that reported `report` left valid of the analyses; the pipeline drops the
    /// rest. By default nothing, which is always safe; a pass that can tell it changed
    /// nothing (or no block and no edge) says so, and later passes reuse the analyses.
    fn preserved(&self, _report: &PassReport) -> Preserved {
        Preserved::NOTHING
    }
    /// The settings worth testing the pass under: each variant is a list of `name=value`
    /// assignments of the pass's own options. The differential tests and fuzzers run every
    /// registered pass in every variant, so a new pass is checked as soon as it is listed.
    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        &[&[]]
    }
}

/// A transformation of allocated machine IR, run after register allocation.
pub trait MachinePass: Sync {
    /// The pass's name in pipelines.
    fn name(&self) -> &'static str;
    /// One line saying what the pass does.
    fn description(&self) -> &'static str;
    /// The settings worth testing the pass under: each variant is a list of `name=value`
    /// assignments of the pass's own options. The differential tests and fuzzers run every
    /// registered pass in every variant, so a new pass is checked as soon as it is listed.
    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        &[&[]]
    }
    /// The most registers the pass may ask for under `settings`, whatever the kernel (to
    /// size register files in tests).
    fn reservation_bound(&self, _settings: &Settings) -> ReservationRequest {
        ReservationRequest::none()
    }
    /// The registers the pass needs for itself on `func` (the lowered kernel, before
    /// allocation), left out of allocation; by default [`MachinePass::reservation_bound`].
    fn reservation(&self, settings: &Settings, _func: &MirFunction) -> ReservationRequest {
        self.reservation_bound(settings)
    }
    /// Transforms `func`, using only the registers it reserved (`reserved`) besides the
    /// ones the function already uses as they are.
    fn run(
        &self,
        func: &mut MirFunction,
        reserved: &ReservedRegs,
        settings: &Settings,
    ) -> Result<PassReport, PassError>;
    /// [`MachinePass::reservation`] on `func`, the lowered kernel in the shape allocation
    /// gives it ([`crate::regalloc::allocation_cfg`]), with what the pass learnt on the
    /// way for [`MachinePass::run_planned`] to reuse; by default nothing.
    fn plan(&self, settings: &Settings, func: &MirFunction) -> Plan {
        Plan {
            request: self.reservation(settings, func),
            carried: None,
        }
    }
    /// [`MachinePass::run`], given what [`MachinePass::plan`] carried from the function
    /// before allocation. The pass must check that it still applies (allocation, or a
    /// machine pass run before this one, may have changed what it was learnt from) and
    /// give the result `run` would give; by default the carried part is dropped.
    fn run_planned(
        &self,
        func: &mut MirFunction,
        reserved: &ReservedRegs,
        settings: &Settings,
        carried: Option<Carried>,
    ) -> Result<PassReport, PassError> {
        drop(carried);
        self.run(func, reserved, settings)
    }
}

/// What a machine pass learnt before allocation for its run to reuse, opaque to the
/// pipeline.
pub type Carried = Box<dyn std::any::Any + Send>;

/// A machine pass's plan for a kernel, made before allocation ([`MachinePass::plan`]).
pub struct Plan {
    /// The registers allocation must leave to the pass.
    pub request: ReservationRequest,
    /// What the pass's run may reuse.
    pub carried: Option<Carried>,
}

/// A registered pass.
#[derive(Copy, Clone)]
pub enum Pass {
    /// A pass over the SSA IR.
    Ir(&'static dyn IrPass),
    /// A pass over allocated machine IR.
    Machine(&'static dyn MachinePass),
}

impl Pass {
    /// The pass's name.
    pub fn name(&self) -> &'static str {
        match self {
            Pass::Ir(p) => p.name(),
            Pass::Machine(p) => p.name(),
        }
    }

    /// One line saying what the pass does.
    pub fn description(&self) -> &'static str {
        match self {
            Pass::Ir(p) => p.description(),
            Pass::Machine(p) => p.description(),
        }
    }

    /// The option settings worth testing the pass under.
    pub fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        match self {
            Pass::Ir(p) => p.variants(),
            Pass::Machine(p) => p.variants(),
        }
    }
}

impl core::fmt::Debug for Pass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every pass, in the order `warplift passes` lists them.
pub static REGISTRY: &[Pass] = &[
    Pass::Machine(&crate::machine_passes::linearize::Linearize),
    Pass::Ir(&crate::ir_passes::linearize_ssa::LinearizeSsa),
    Pass::Ir(&crate::ir_passes::converge::Converge),
    Pass::Ir(&crate::ir_passes::restructure::Restructure),
    Pass::Ir(&crate::ir_passes::meld::Meld),
    Pass::Ir(&crate::ir_passes::licm::Licm),
];

/// The registered pass called `name`.
pub fn lookup(name: &str) -> Option<Pass> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}

/// A pipeline could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PipelineError {
    /// No pass has this name.
    #[error("unknown pass `{name}` (passes: {known})")]
    Unknown {
        /// The name given.
        name: String,
        /// The registered names.
        known: String,
    },
    /// A machine pass is listed before an IR pass.
    #[error(
        "IR pass `{ir}` cannot run after machine pass `{machine}`: IR passes run before lowering"
    )]
    Order {
        /// The IR pass.
        ir: &'static str,
        /// The machine pass listed before it.
        machine: &'static str,
    },
}

/// The passes of a pipeline, split by kind, each list in the order given.
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    /// IR passes, run before lowering.
    pub ir: Vec<&'static dyn IrPass>,
    /// Machine passes, run after register allocation.
    pub machine: Vec<&'static dyn MachinePass>,
}

impl core::fmt::Debug for dyn IrPass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::fmt::Debug for dyn MachinePass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl Pipeline {
    /// Parses a comma-separated list of pass names (spaces allowed, empty entries ignored)
    /// against [`REGISTRY`].
    pub fn parse(list: &str) -> Result<Pipeline, PipelineError> {
        Self::parse_in(list, REGISTRY)
    }

    /// The pipeline `settings` ask for: their `passes`, with `linearize` run at the stage
    /// `linearize_stage` names (`ssa`: as the IR pass `linearize_ssa`, after the other IR
    /// passes).
    pub fn for_settings(settings: &Settings) -> Result<Pipeline, PipelineError> {
        let mut pipeline = Self::parse(&settings.passes)?;
        if settings.linearize_stage == crate::settings::LinearizeStage::Ssa {
            let before = pipeline.machine.len();
            let linearize = crate::machine_passes::linearize::Linearize;
            pipeline.machine.retain(|p| p.name() != linearize.name());
            if pipeline.machine.len() != before {
                pipeline
                    .ir
                    .push(&crate::ir_passes::linearize_ssa::LinearizeSsa);
            }
        }
        Ok(pipeline)
    }

    /// [`Pipeline::parse`] against another registry (for tests).
    pub fn parse_in(list: &str, registry: &[Pass]) -> Result<Pipeline, PipelineError> {
        let mut pipeline = Pipeline::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let pass = registry
                .iter()
                .copied()
                .find(|p| p.name() == name)
                .ok_or_else(|| PipelineError::Unknown {
                    name: name.to_string(),
                    known: if registry.is_empty() {
                        "none registered".to_string()
                    } else {
                        registry
                            .iter()
                            .map(|p| p.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                })?;
            match pass {
                Pass::Ir(p) => {
                    if let Some(m) = pipeline.machine.first() {
                        return Err(PipelineError::Order {
                            ir: p.name(),
                            machine: m.name(),
                        });
                    }
                    pipeline.ir.push(p);
                }
                Pass::Machine(p) => pipeline.machine.push(p),
            }
        }
        Ok(pipeline)
    }

    /// The union of the machine passes' reservations: what register allocation must leave
    /// free. Passes run one after another, so they share the reserved registers.
    pub fn reservation(&self, settings: &Settings, func: &MirFunction) -> ReservationRequest {
        self.union(|pass| pass.reservation(settings, func))
    }

    /// [`Pipeline::reservation`] with every machine pass's [`Plan`] for `func` (in its
    /// allocation shape, see [`MachinePass::plan`]): the union of their requests, and
    /// what each carries to its run, in the order of `self.machine`.
    pub fn plan(
        &self,
        settings: &Settings,
        func: &MirFunction,
    ) -> (ReservationRequest, Vec<Option<Carried>>) {
        let plans: Vec<Plan> = self
            .machine
            .iter()
            .map(|pass| pass.plan(settings, func))
            .collect();
        let request = union(plans.iter().map(|p| p.request));
        (request, plans.into_iter().map(|p| p.carried).collect())
    }

    /// The most [`Pipeline::reservation`] may be for any kernel.
    pub fn reservation_bound(&self, settings: &Settings) -> ReservationRequest {
        self.union(|pass| pass.reservation_bound(settings))
    }

    fn union(
        &self,
        of: impl Fn(&'static dyn MachinePass) -> ReservationRequest,
    ) -> ReservationRequest {
        union(self.machine.iter().map(|&pass| of(pass)))
    }

    /// Is the pipeline empty?
    pub fn is_empty(&self) -> bool {
        self.ir.is_empty() && self.machine.is_empty()
    }
}

/// The registers that serve every request in turn: per class, the most any asks for.
fn union(requests: impl Iterator<Item = ReservationRequest>) -> ReservationRequest {
    let mut request = ReservationRequest::none();
    for wanted in requests {
        for class in crate::mir::RegClass::ALL {
            let extra = wanted.count(class).saturating_sub(request.count(class));
            if extra > 0 {
                request.reserve(class, extra);
            }
        }
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::RegClass;

    struct Noop;
    impl IrPass for Noop {
        fn name(&self) -> &'static str {
            "noop"
        }
        fn description(&self) -> &'static str {
            "does nothing"
        }
        fn run(
            &self,
            _: &mut Function,
            _: &mut AnalysisCache,
            _: &Settings,
        ) -> Result<PassReport, PassError> {
            Ok(PassReport::default())
        }
    }

    struct Reserver(u32);
    impl MachinePass for Reserver {
        fn name(&self) -> &'static str {
            if self.0 == 1 {
                "one"
            } else {
                "two"
            }
        }
        fn description(&self) -> &'static str {
            "reserves registers"
        }
        fn reservation_bound(&self, _: &Settings) -> ReservationRequest {
            ReservationRequest::none()
                .with(RegClass::Pred, self.0)
                .with(RegClass::B32, 1)
        }
        fn run(
            &self,
            _: &mut MirFunction,
            _: &ReservedRegs,
            _: &Settings,
        ) -> Result<PassReport, PassError> {
            Ok(PassReport::default())
        }
    }

    static TEST_REGISTRY: &[Pass] = &[
        Pass::Ir(&Noop),
        Pass::Machine(&Reserver(1)),
        Pass::Machine(&Reserver(2)),
    ];

    #[test]
    fn pipelines_parse_in_order_and_refuse_unknown_names_and_misorder() {
        let p = Pipeline::parse_in(" noop , one,two,", TEST_REGISTRY).unwrap();
        assert_eq!(p.ir.len(), 1);
        assert_eq!(
            p.machine.iter().map(|m| m.name()).collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert!(Pipeline::parse_in("", TEST_REGISTRY).unwrap().is_empty());
        let e = Pipeline::parse_in("noop,three", TEST_REGISTRY).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown pass `three` (passes: noop, one, two)"
        );
        let e = Pipeline::parse_in("one,noop", TEST_REGISTRY).unwrap_err();
        assert!(matches!(
            e,
            PipelineError::Order {
                ir: "noop",
                machine: "one"
            }
        ));
    }

    #[test]
    fn machine_passes_share_reserved_registers() {
        let p = Pipeline::parse_in("one,two", TEST_REGISTRY).unwrap();
        let r = p.reservation_bound(&Settings::default());
        assert_eq!(r.count(RegClass::Pred), 2);
        assert_eq!(r.count(RegClass::B32), 1);
        assert_eq!(r.count(RegClass::B64), 0);
    }
}
