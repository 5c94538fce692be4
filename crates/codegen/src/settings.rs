//! Code-generator settings, in Cranelift's manner: every setting is declared once, in the
//! table of `declare_settings!`, with its type, default, allowed values and documentation;
//! the builder sets them by name from strings (`--set name=value` on the command line),
//! parsing and checking each value once, and the [`Settings`] struct exposes them typed.
//!
//! A setting's type is a `bool`, a `u32` (its range checked where it is declared), a
//! [`MinGain`], a `String` checked where it is declared (`ptx_target`, and `passes` against the pass
//! registry), or an enumeration declared with `setting_enum!` (the option's values and
//! their names in one list: [`OptLevel`], [`RegionMode`], [`LinearizeStage`],
//! [`MergeLoops`], [`LoopMode`], [`Cascade`]). Passes read the typed fields; none parses a string again.
//! A bad value is refused when it is set, with an error naming the setting and the values
//! it accepts:
//!
//! ```text
//! invalid value `some` for setting `linearize_regions`: expected divergent, all or kernel
//! ```

use thiserror::Error;

/// A setting could not be set.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SettingError {
    /// No setting has this name.
    #[error("unknown setting `{name}` (known: {known})")]
    Unknown {
        /// The name given.
        name: String,
        /// The names of all settings.
        known: String,
    },
    /// The value is not valid for the setting.
    #[error("invalid value `{value}` for setting `{name}`: {expected}")]
    BadValue {
        /// The setting.
        name: String,
        /// The value given.
        value: String,
        /// What the setting accepts.
        expected: String,
    },
}

/// Parses a setting value; each setting type implements it.
trait SettingValue: Sized {
    fn parse(s: &str) -> Result<Self, String>;
}

/// `a, b or c`.
fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Declares an enumerated setting type: its variants with the names settings give them,
/// once. The enumeration parses from those names (and [`core::str::FromStr`]), prints as
/// them, and compares equal to them (`mode == "kernel"`).
macro_rules! setting_enum {
    (
        $(#[doc = $doc:literal])+
        $name:ident { $( $(#[doc = $vdoc:literal])+ $variant:ident = $text:literal, )+ }
    ) => {
        $(#[doc = $doc])+
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[doc = $vdoc])+ $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const VALUES: &'static [$name] = &[$($name::$variant),+];
            /// The names settings give the values, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The value's name in settings.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl SettingValue for $name {
            fn parse(s: &str) -> Result<Self, String> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(format!("expected {}", one_of($name::NAMES))),
                }
            }
        }

        impl core::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                SettingValue::parse(s)
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

setting_enum! {
    /// How hard the code generator works (`opt_level`).
    OptLevel {
        /// Compile fast: regalloc2's fast allocator.
        None = "none",
        /// Generate fast code: regalloc2's backtracking allocator (Ion).
        Speed = "speed",
    }
}

setting_enum! {
    /// What the region-based passes work on (`linearize_regions`, `restructure_regions`).
    RegionMode {
        /// Unstructured regions that contain a divergent branch.
        Divergent = "divergent",
        /// Every unstructured region.
        All = "all",
        /// The whole kernel as one region.
        Kernel = "kernel",
    }
}

setting_enum! {
    /// Where `--passes linearize` linearizes (`linearize_stage`).
    LinearizeStage {
        /// On allocated machine IR, with reserved registers (the `linearize` pass).
        Machine = "machine",
        /// On the SSA IR before register allocation (the `linearize_ssa` pass).
        Ssa = "ssa",
    }
}

setting_enum! {
    /// Which loop nests `linearize` merges (`linearize_merge_loops`, Section 5.2).
    MergeLoops {
        /// None: every loop keeps its blocks together and its own back edge.
        Never = "never",
        /// Those where a cost model expects merging to run fewer block executions and
        /// fewer instructions than keeping the loops apart.
        Cost = "cost",
        /// Every loop nest, as the paper's Section 5.2 does.
        Always = "always",
    }
}

setting_enum! {
    /// How `restructure` restructures loops (`restructure_loops`).
    LoopMode {
        /// Not at all (branch restructuring then applies to acyclic regions only).
        None = "none",
        /// With predicates (Section IV-A).
        Predicate = "predicate",
        /// Head-controlled loops by loop inversion (Section IV-C), the rest with predicates.
        Copy = "copy",
    }
}

setting_enum! {
    /// How `restructure` resolves a dispatch among more than two continuations
    /// (`restructure_cascade`).
    Cascade {
        /// A chain of two-way tests `p == 0`, `p == 1`, ... (Figure 5, right; the paper's
        /// choice).
        Depth = "depth",
        /// A balanced tree of tests `p < mid` (Figure 5, center).
        Breadth = "breadth",
        /// One multi-way branch (`br_table`).
        Table = "table",
    }
}

impl SettingValue for bool {
    fn parse(s: &str) -> Result<Self, String> {
        match s {
            "true" | "on" | "yes" | "1" => Ok(true),
            "false" | "off" | "no" | "0" => Ok(false),
            _ => Err("expected true or false".into()),
        }
    }
}

impl SettingValue for u32 {
    fn parse(s: &str) -> Result<Self, String> {
        s.parse()
            .map_err(|_| "expected a non-negative integer".into())
    }
}

/// The least estimated gain a region must reach to be linearized
/// (`linearize_min_gain`): `none` (no minimum) or an integer, in instructions per pass
/// of a warp.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MinGain {
    /// Every region the other rules select is linearized.
    None,
    /// Regions whose estimate is below this are left alone.
    At(i32),
}

impl MinGain {
    /// Whether a region with estimated gain `gain` falls short.
    pub fn declines(self, gain: i64) -> bool {
        match self {
            MinGain::None => false,
            MinGain::At(min) => gain < i64::from(min),
        }
    }
}

impl SettingValue for MinGain {
    fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(MinGain::None),
            _ => s
                .parse()
                .map(MinGain::At)
                .map_err(|_| "expected none or an integer".into()),
        }
    }
}

impl SettingValue for String {
    fn parse(s: &str) -> Result<Self, String> {
        Ok(s.to_string())
    }
}

/// A ratio between 0 and 1, written as a decimal (`0.2`), kept in thousandths so that
/// settings stay comparable for equality.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ratio(u32);

impl Ratio {
    /// The ratio of `thousandths` / 1000 (at most 1000).
    pub const fn from_thousandths(thousandths: u32) -> Ratio {
        Ratio(if thousandths > 1000 {
            1000
        } else {
            thousandths
        })
    }

    /// The ratio as a float.
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 1000.0
    }
}

impl core::fmt::Display for Ratio {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.as_f64())
    }
}

impl SettingValue for Ratio {
    fn parse(s: &str) -> Result<Self, String> {
        let x: f64 = s
            .parse()
            .map_err(|_| "expected a number from 0 to 1".to_string())?;
        if !(0.0..=1.0).contains(&x) {
            return Err("expected a number from 0 to 1".into());
        }
        Ok(Ratio((x * 1000.0).round() as u32))
    }
}

macro_rules! declare_settings {
    ($( $(#[doc = $doc:literal])+ $name:ident: $ty:ty = $default:expr, check $check:expr; )+) => {
        /// The settings of a compilation. Build them with [`Settings::builder`].
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct Settings {
            $( $(#[doc = $doc])+ pub $name: $ty, )+
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $name: $default, )+ }
            }
        }

        impl Settings {
            /// The name and documentation of every setting, in declaration order.
            pub const DESCRIPTIONS: &'static [(&'static str, &'static str)] = &[
                $( (stringify!($name), concat!($($doc, "\n"),+)), )+
            ];

            fn set_by_name(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
                match name {
                    $( stringify!($name) => {
                        let bad = |expected: String| SettingError::BadValue {
                            name: name.to_string(),
                            value: value.to_string(),
                            expected,
                        };
                        let parsed: $ty = SettingValue::parse(value).map_err(bad)?;
                        let check: fn(&$ty) -> Result<(), String> = $check;
                        check(&parsed).map_err(|e| SettingError::BadValue {
                            name: name.to_string(),
                            value: value.to_string(),
                            expected: e,
                        })?;
                        self.$name = parsed;
                        Ok(())
                    } )+
                    _ => Err(SettingError::Unknown {
                        name: name.to_string(),
                        known: Self::DESCRIPTIONS.iter().map(|d| d.0).collect::<Vec<_>>().join(", "),
                    }),
                }
            }
        }
    };
}

fn regs_in_range(n: &u32) -> Result<(), String> {
    if (1..=64).contains(n) {
        Ok(())
    } else {
        Err("expected 1 to 64 registers (regalloc2 allows at most 64 per class)".into())
    }
}

fn anything<T>(_: &T) -> Result<(), String> {
    Ok(())
}

#[allow(clippy::ptr_arg)] // checks have the signature `fn(&T)` for every setting type
fn valid_pipeline(s: &String) -> Result<(), String> {
    crate::passes::Pipeline::parse(s)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// An integer from `LO` to `HI`.
fn in_range<const LO: u32, const HI: u32>(n: &u32) -> Result<(), String> {
    if (LO..=HI).contains(n) {
        Ok(())
    } else {
        Err(format!("expected {LO} to {HI}"))
    }
}

#[allow(clippy::ptr_arg)] // checks have the signature `fn(&T)` for every setting type
fn ptx_target(s: &String) -> Result<(), String> {
    match s.strip_prefix("sm_").map(str::parse::<u32>) {
        Some(Ok(n)) if n >= 70 => Ok(()),
        _ => Err("expected sm_70 or later (sm_70, sm_80, sm_90, ...)".into()),
    }
}

declare_settings! {
    /// Optimisation level: `none` (fast allocator) or `speed` (backtracking allocator).
    opt_level: OptLevel = OptLevel::Speed, check anything;
    /// Allocatable 32-bit registers per thread (1 to 64).
    regs_b32: u32 = 64, check regs_in_range;
    /// Allocatable 64-bit registers per thread (1 to 64).
    regs_b64: u32 = 64, check regs_in_range;
    /// Allocatable predicate registers per thread (1 to 64).
    regs_pred: u32 = 64, check regs_in_range;
    /// PTX target architecture (`.target`), `sm_70` or later.
    ptx_target: String = "sm_70".to_string(), check ptx_target;
    /// Check the compiler's own work: verify the IR after every IR pass and the machine IR
    /// after lowering and after allocation and the machine passes. On by default in debug
    /// builds and tests, off in release builds (the kernel given is always verified).
    verify: bool = cfg!(debug_assertions), check anything;
    /// The optional passes to run, comma-separated, in order (`warplift passes` lists them).
    passes: String = String::new(), check valid_pipeline;
    /// What `linearize` (after register allocation) and `linearize_ssa` (on the SSA IR,
    /// before it) linearize: `divergent` (unstructured regions in which a divergent branch
    /// can make a block run twice per pass of a warp), `all` (every unstructured region in
    /// which any branch that can go both ways could, whatever the divergence analysis
    /// says) or `kernel` (the whole kernel, where that can remove a redundant execution,
    /// merge a loop nest or lower the reconvergence stack; otherwise nothing).
    linearize_regions: RegionMode = RegionMode::Divergent, check anything;
    /// Where `--passes linearize` linearizes: `machine` (on allocated machine IR, with one
    /// reserved `b32` and one predicate register) or `ssa` (on the SSA IR before register
    /// allocation, the paper's own implementation: the `linearize_ssa` pass), so that the
    /// register cost of the two can be compared.
    linearize_stage: LinearizeStage = LinearizeStage::Machine, check anything;
    /// `linearize`'s guard optimisations (Section 4.2 of the paper), cumulative: 0 none;
    /// 1 (O1) a block's exit skips the guards its guard values cannot match; 2 (O2) also
    /// nests the guards of the blocks a block dominates inside its guard; 3 (O3) also merges
    /// a guard into its block when the block is its only predecessor.
    linearize_opt: u32 = 0, check in_range::<0, 3>;
    /// Loop merging (Section 5.2): `linearize` orders the blocks of a loop nest so that a
    /// lane finishing an inner loop runs the rest of the outer iteration and rejoins the
    /// other lanes in the inner loop's next invocation, one back edge serving both loops.
    /// `cost` merges a nest only where a pass of the inner loop outweighs a pass of the
    /// rest of the outer loop with its guards; `always` merges every nest; `never` keeps
    /// each loop's blocks together behind its own back edge.
    linearize_merge_loops: MergeLoops = MergeLoops::Cost, check anything;
    /// `linearize` splits a block between a global or local load and the load's first use,
    /// and orders the region so that blocks from the other arm of a divergent branch run
    /// between them, hiding the load's latency (branch interleaving, Section 5.1).
    linearize_interleave: bool = false, check anything;
    /// At `linearize_opt=3`, a guarded block of at most this many instructions (its
    /// assignment to the guard variable and its jump not counted) is predicated: its
    /// instructions run under the guard's predicate in the guard's place, so the guard's
    /// branch and the block's jump go, and consecutive predicated blocks become one
    /// straight-line block. 0 never predicates.
    linearize_predicate: u32 = 4, check in_range::<0, 64>;
    /// `linearize`'s cost model (`divergent` and `all` regions): `none` (the default) or
    /// the least estimated gain per pass of a warp, in instructions, for which a region is
    /// linearized — the instructions of the blocks an IPDOM stack can run more than once,
    /// times the times they can be re-run, minus what Algorithm 1 adds before the guard
    /// optimisations (per guarded part a test, its branch and an assignment to the guard
    /// variable; two per back-edge guard; one at the entry). The default declines nothing,
    /// so that no block of an acyclic kernel runs redundantly after the default pass: on
    /// the corpus and the synthetic CFG family every estimate is between -36 and +1, and
    /// 0 would decline Figure 1's region (docs/linearization.md).
    linearize_min_gain: MinGain = MinGain::None, check anything;
    /// `converge`'s threshold: the profit, in the emulator's latency cycles (an ALU
    /// operation 4, a global load 400), that a common expression of two divergent arms must
    /// exceed — its matched instructions' latencies minus 4 for every renamed operand —
    /// to be hoisted or sunk. 0 moves every expression that saves more than it costs.
    converge_threshold: u32 = 0, check anything;
    /// `converge` matches instructions whose operands differ between the arms, renaming
    /// them with a `select` before the branch or a parameter of the reconvergence point
    /// (Listings 1.7/1.8 of the paper). Off, only identical operands match.
    converge_rename: bool = true, check anything;
    /// `converge` hoists common expressions of a divergent branch's arms to the branch.
    converge_hoist: bool = true, check anything;
    /// `converge` sinks common expressions of a divergent branch's arms to its
    /// reconvergence point.
    converge_sink: bool = true, check anything;
    /// `converge` splits the arms of a divergent branch around the common expressions that
    /// can neither rise nor sink: a temporary reconvergence point inside the arms
    /// (Listings 1.5/1.6 of the paper), made only when the expressions pay for it.
    converge_split: bool = true, check anything;
    /// What each branch or jump that `converge`'s Split adds costs, in the emulator's
    /// latency cycles (its branch latency, 4, by default); 0 splits wherever the matched
    /// expressions pay for their copies alone.
    converge_split_cost: u32 = 4, check anything;
    /// `converge` flattens a divergent if-then(-else) whose arms are short, side-effect-free
    /// straight-line code into `select`s (Algorithm 1's FlattenBranches, Listing 1.11), so
    /// that the enclosing branch's arms can share what they compute.
    converge_flatten: bool = true, check anything;
    /// `converge` removes a divergent branch whose two sides are the same code up to
    /// renamed operands (a compare's condition code may be swapped), both kinds of lanes
    /// then running one copy with `select`ed operands (Listing 1.12's bitonic step).
    converge_unify: bool = true, check anything;
    /// `converge` chooses how the renaming chains of a multi-way hoist across a
    /// `br_table` are built for all of them at once (which group's operand each falls back
    /// to, and whether it builds on another chain), so that they share the compares of the
    /// index and the `select`s they can; off, each chain takes the cheapest fallback given
    /// the compares made before it.
    converge_joint_renaming: bool = true, check anything;
    /// What `restructure` restructures: `divergent` (unstructured regions holding a
    /// divergent branch; structured code keeps its bytes), `all` (every unstructured
    /// region) or `kernel` (the whole kernel, as the paper does).
    restructure_regions: RegionMode = RegionMode::Divergent, check anything;
    /// `restructure`'s loop restructuring: `none`; `predicate` (every loop becomes
    /// tail-controlled with entry, exit and repetition predicates, Section IV-A); `copy`
    /// (head-controlled loops are inverted by copying their condition instead, Section
    /// IV-C).
    restructure_loops: LoopMode = LoopMode::Copy, check anything;
    /// `restructure` nests branches properly with a predicate where a branch's subgraphs
    /// continue at several points (Section IV-B).
    restructure_branches: bool = true, check anything;
    /// How `restructure` resolves a dispatch among more than two continuations:
    /// `depth` (a chain of equality tests, the paper's choice), `breadth` (a balanced
    /// tree of range tests) or `table` (one `br_table`).
    restructure_cascade: Cascade = Cascade::Depth, check anything;
    /// `restructure` leaves regions of more blocks than this as they are.
    restructure_max_blocks: u32 = 100_000, check anything;
    /// `meld`'s profitability threshold: the least melding profitability `MP_S` (0 to 1,
    /// the fraction of the two subgraphs' cycles melding may save; 0.5 for identical
    /// opcode profiles) of a subgraph pair it melds, as in the paper (default 0.2). At 0
    /// every meldable pair that aligns an instruction is melded, profitable or not.
    meld_threshold: Ratio = Ratio::from_thousandths(200), check anything;
    /// `meld` melds only diamonds whose two arms are single blocks jumping to the join:
    /// branch fusion, the baseline the paper compares with.
    meld_branch_fusion: bool = false, check anything;
    /// `meld` does not align blocks of more instructions than this (alignment takes time
    /// and memory quadratic in the size of the two blocks).
    meld_align_limit: u32 = 2000, check anything;
    /// `meld` leaves a run of unaligned instructions that cannot fault or touch memory in
    /// the melded block, run by every lane (speculated), when by its cost model that
    /// takes fewer issues and cycles than unpredication (the if-conversion of the paper's
    /// Fig. 4e). Off, every unaligned run is unpredicated (Fig. 4d).
    meld_if_convert: bool = true, check anything;
    /// The threads per block in x of every launch of the kernel, when known (what CUDA's
    /// `__launch_bounds__` and PTX's `.reqntid` tell a compiler); 0, the default: unknown.
    /// Only cost models read it: `meld` judges a branch on the thread index at this block
    /// size alone (a branch uniform in every warp at this size is not melded, one that
    /// splits warps is), instead of at every block size it considers. Any launch still
    /// computes the same results; one of another size may run slower.
    block_size_hint: u32 = 0, check in_range::<0, 1024>;
    /// The warp width of the machine the kernel will run on, when known (32 on NVIDIA
    /// GPUs, 64 for AMD's wavefront; the emulator's `warp_width`); 0, the default:
    /// unknown, taken as 32. Only cost models read it: `meld` judges a branch on the
    /// thread index in warps of this many lanes (a branch that splits a warp of 64 may
    /// leave each warp of 32 uniform). Any machine still computes the same results; one
    /// of another width may run slower.
    warp_width_hint: u32 = 0, check in_range::<0, 64>;
}

impl Settings {
    /// A builder starting from the defaults.
    pub fn builder() -> SettingsBuilder {
        SettingsBuilder {
            settings: Settings::default(),
        }
    }
}

/// Sets settings by name; [`SettingsBuilder::finish`] gives the [`Settings`].
#[derive(Clone, Debug)]
pub struct SettingsBuilder {
    settings: Settings,
}

impl SettingsBuilder {
    /// Sets `name` to `value`, parsed as the setting's type.
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self, SettingError> {
        self.settings.set_by_name(name, value)?;
        Ok(self)
    }

    /// Sets a setting from `name=value` (as given to `--set`).
    pub fn set_assignment(&mut self, assignment: &str) -> Result<&mut Self, SettingError> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| SettingError::BadValue {
                name: assignment.to_string(),
                value: String::new(),
                expected: "expected name=value".into(),
            })?;
        self.set(name.trim(), value.trim())
    }

    /// The settings.
    pub fn finish(&self) -> Settings {
        self.settings.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_set_by_name_and_checked() {
        let mut b = Settings::builder();
        b.set("regs_b32", "8").unwrap();
        b.set_assignment("opt_level = none").unwrap();
        b.set("ptx_target", "sm_90").unwrap();
        let s = b.finish();
        assert_eq!(s.regs_b32, 8);
        assert_eq!(s.opt_level, OptLevel::None);
        assert_eq!(s.ptx_target, "sm_90");
        assert_eq!(s.regs_b64, 64);
        let e = Settings::builder().set("regs_b32", "65").unwrap_err();
        assert!(e.to_string().contains("at most 64"), "{e}");
        let e = Settings::builder().set("regz", "1").unwrap_err();
        assert!(e.to_string().contains("unknown setting `regz`"), "{e}");
        assert!(Settings::builder().set("verify", "maybe").is_err());
        assert!(Settings::builder().set("ptx_target", "sm_60").is_err());
        assert!(Settings::builder().set_assignment("verify").is_err());
        assert_eq!(Settings::DESCRIPTIONS.len(), 34);
        assert!(Settings::builder().set("linearize_stage", "ir").is_err());
        assert!(Settings::builder()
            .set("linearize_regions", "some")
            .is_err());
        assert!(Settings::builder().set("linearize_opt", "4").is_err());
        let e = Settings::builder()
            .set("linearize_regions", "some")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value `some` for setting `linearize_regions`: expected divergent, all or kernel"
        );
        let e = Settings::builder().set("linearize_opt", "4").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value `4` for setting `linearize_opt`: expected 0 to 3"
        );
        let e = Settings::builder()
            .set("restructure_cascade", "wide")
            .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("`restructure_cascade`: expected depth, breadth or table"),
            "{e}"
        );
        let mut b = Settings::builder();
        b.set("linearize_stage", "ssa").unwrap();
        b.set("restructure_loops", "predicate").unwrap();
        b.set("restructure_regions", "kernel").unwrap();
        let s = b.finish();
        assert_eq!(s.linearize_stage, LinearizeStage::Ssa);
        assert_eq!(s.restructure_loops, LoopMode::Predicate);
        assert_eq!(s.restructure_regions, "kernel");
        assert_eq!(s.restructure_cascade.to_string(), "depth");
        for (i, name) in RegionMode::NAMES.iter().enumerate() {
            assert_eq!(name.parse::<RegionMode>(), Ok(RegionMode::VALUES[i]));
        }
        assert!(Settings::builder().set("passes", "nonesuch").is_err());
        assert!(Settings::builder().set("passes", " , ").is_ok());
    }
}
