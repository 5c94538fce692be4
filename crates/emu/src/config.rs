//! The machine configuration: what the emulated GPU looks like.
//!
//! Every knob of the machine model lives in [`MachineConfig`], with its default and the
//! reason for it written next to it. A configuration comes from [`MachineConfig::default`],
//! from the [`MachineConfigBuilder`], or from a TOML file ([`MachineConfig::from_toml_str`])
//! whose keys are the field names (`warp_width = 16`, `[latency] global = 600`); every key
//! is optional and unknown keys are errors. [`MachineConfig::validate`] checks the ranges,
//! and every constructor but `Default` calls it.
//!
//! The defaults describe one streaming multiprocessor (SM) of a recent NVIDIA GPU (Ampere
//! `sm_86` / Ada `sm_89`): 48 resident warps would be exact for those parts, but 64 warp
//! slots and 32 block slots (the `sm_80`/`sm_90` limits) are the more common reference in
//! the literature. Latencies are rounded figures from published microbenchmarks of Volta
//! to Ada (Jia et al., "Dissecting the NVIDIA Volta GPU architecture through
//! microbenchmarking", 2018, and the Turing/Ampere follow-ups): dependent integer and
//! single-precision ALU operations take 4 cycles, the multi-function unit (square root,
//! reciprocal; and the instruction sequences of division and remainder) about 20, a
//! shared-memory load about 30, and a global load that misses in the caches about 400.

use serde::Deserialize;

/// How each SM's warp scheduler picks the warp to issue from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerPolicy {
    /// Loose round-robin: the first ready warp after the one that issued last.
    Lrr,
    /// Greedy-then-oldest: the warp that issued last while it stays ready, else the
    /// oldest ready warp (the one placed on the SM first).
    Gto,
}

/// What happens when a warp reaches a barrier with only some of its live threads active
/// (the others are waiting elsewhere on its reconvergence stack).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartialBarrier {
    /// A barrier-divergence fault: the IR's semantics (every live thread of the block must
    /// reach the same barrier).
    Error,
    /// The warp counts as arrived, as on pre-Volta hardware whose barriers count warps,
    /// not threads. The result may differ from the reference interpreter's.
    CountWarp,
}

/// Issue-to-result latencies in cycles, per class of instruction. An instruction that
/// reads a register whose producer has not finished waits (stall on use).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Latencies {
    /// Integer and float arithmetic, logic, comparisons, selects, moves, conversions,
    /// special-register and parameter reads. Default 4.
    pub alu: u32,
    /// Integer multiplication (`mul`, `mulhi`, `mad`). Default 4 (`IMAD` since Volta).
    pub mul: u32,
    /// The special-function unit and multi-instruction sequences: square root, float and
    /// integer division and remainder. Default 20.
    pub sfu: u32,
    /// Shared-memory loads and atomics. Default 30.
    pub shared: u32,
    /// Global- and local-memory loads and atomics (local memory lives in DRAM, as on
    /// NVIDIA GPUs). Default 400.
    pub global: u32,
    /// Cycles from a taken control transfer (jump, branch, reconvergence) until the warp
    /// can issue from its new block. Default 4.
    pub branch: u32,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            alu: 4,
            mul: 4,
            sfu: 20,
            shared: 30,
            global: 400,
            branch: 4,
        }
    }
}

/// The emulated machine.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MachineConfig {
    /// Threads per warp, 1 to 64. Default 32.
    pub warp_width: u32,
    /// Streaming multiprocessors. Default 4: small enough that test grids of a few blocks
    /// fill the machine, so that occupancy and tail effects show.
    pub sms: u32,
    /// Resident warps per SM. Default 64.
    pub warp_slots: u32,
    /// Resident thread blocks per SM. Default 32.
    pub block_slots: u32,
    /// 32-bit registers per SM. A thread needs one per `b32` register and two per `b64`
    /// register (predicates have their own file and do not count). Default 65536.
    pub registers: u32,
    /// Bytes of shared memory per SM. Default 100 KiB (`sm_86`/`sm_89`).
    pub shared_memory: u32,
    /// Latencies per class of instruction.
    pub latency: Latencies,
    /// The warp scheduler's policy. Default greedy-then-oldest (GPGPU-Sim's default).
    pub scheduler: SchedulerPolicy,
    /// Bytes of the aligned segments that global and local accesses are coalesced into:
    /// one transaction per distinct segment a warp's access touches. A power of two, 8 to
    /// 4096. Default 32 (the L2 sector of NVIDIA GPUs since Maxwell).
    pub segment_bytes: u32,
    /// Shared-memory banks, each 4 bytes wide: a warp's shared access takes as many
    /// transactions as the most distinct words it touches in one bank. Default 32.
    pub shared_banks: u32,
    /// What a barrier reached by part of a warp does. Default [`PartialBarrier::Error`].
    pub partial_barrier: PartialBarrier,
    /// The run faults after this many cycles. Default: no limit (`u64::MAX`); runaway
    /// warps are caught by `max_warp_steps`.
    pub max_cycles: u64,
    /// The run faults after this many warp-instructions in all. Default: no limit
    /// (`u64::MAX`), so that a large launch runs to its end.
    pub max_warp_instructions: u64,
    /// The per-warp budget that stops a warp making no progress (an infinite loop): a
    /// warp faults when it has issued more than this many instructions *and* more than
    /// [`RUNAWAY_FACTOR`] times as many as the longest warp of the launch that has
    /// finished. The budget is per warp, so the size of the grid does not matter, and
    /// relative to the finished warps, so a launch whose every warp runs long is not
    /// stopped for it. Default 2^22 (4.2 million instructions: under a second of
    /// emulation for a lone warp).
    pub max_warp_steps: u64,
}

/// How many times the longest finished warp's instruction count a warp may issue before
/// it counts as a runaway (when it is also past [`MachineConfig::max_warp_steps`]).
pub const RUNAWAY_FACTOR: u64 = 8;

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            warp_width: 32,
            sms: 4,
            warp_slots: 64,
            block_slots: 32,
            registers: 65536,
            shared_memory: 100 * 1024,
            latency: Latencies::default(),
            scheduler: SchedulerPolicy::Gto,
            segment_bytes: 32,
            shared_banks: 32,
            partial_barrier: PartialBarrier::Error,
            max_cycles: u64::MAX,
            max_warp_instructions: u64::MAX,
            max_warp_steps: 1 << 22,
        }
    }
}

/// An invalid machine configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A value is out of range.
    #[error("machine configuration: {key} = {value}: {message}")]
    Range {
        /// The key.
        key: &'static str,
        /// Its value.
        value: u64,
        /// What is allowed.
        message: &'static str,
    },
    /// A configuration file is not valid TOML or does not follow the schema.
    #[error("machine configuration: {0}")]
    Toml(String),
}

impl MachineConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> MachineConfigBuilder {
        MachineConfigBuilder(MachineConfig::default())
    }

    /// Reads a configuration from TOML text (missing keys keep their defaults) and
    /// validates it.
    pub fn from_toml_str(text: &str) -> Result<MachineConfig, ConfigError> {
        let config: MachineConfig =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value is in range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let range = |key, value: u64, ok: bool, message| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::Range {
                    key,
                    value,
                    message,
                })
            }
        };
        let w = self.warp_width;
        range(
            "warp_width",
            w.into(),
            (1..=64).contains(&w),
            "must be 1 to 64",
        )?;
        range("sms", self.sms.into(), self.sms >= 1, "must be at least 1")?;
        range(
            "warp_slots",
            self.warp_slots.into(),
            self.warp_slots >= 1,
            "must be at least 1",
        )?;
        range(
            "block_slots",
            self.block_slots.into(),
            self.block_slots >= 1,
            "must be at least 1",
        )?;
        let s = self.segment_bytes;
        range(
            "segment_bytes",
            s.into(),
            s.is_power_of_two() && (8..=4096).contains(&s),
            "must be a power of two from 8 to 4096",
        )?;
        range(
            "shared_banks",
            self.shared_banks.into(),
            (1..=64).contains(&self.shared_banks),
            "must be 1 to 64",
        )?;
        let l = &self.latency;
        for (key, v) in [
            ("latency.alu", l.alu),
            ("latency.mul", l.mul),
            ("latency.sfu", l.sfu),
            ("latency.shared", l.shared),
            ("latency.global", l.global),
            ("latency.branch", l.branch),
        ] {
            range(key, v.into(), v >= 1, "must be at least 1 cycle")?;
        }
        Ok(())
    }
}

/// Builds a [`MachineConfig`] from the defaults, one setting at a time.
#[derive(Clone, Debug)]
pub struct MachineConfigBuilder(MachineConfig);

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $ty) -> Self {
                self.0.$name = value;
                self
            }
        )*
    };
}

impl MachineConfigBuilder {
    setters! {
        /// Threads per warp (1 to 64).
        warp_width: u32;
        /// Streaming multiprocessors.
        sms: u32;
        /// Resident warps per SM.
        warp_slots: u32;
        /// Resident blocks per SM.
        block_slots: u32;
        /// 32-bit registers per SM.
        registers: u32;
        /// Bytes of shared memory per SM.
        shared_memory: u32;
        /// Latencies per class.
        latency: Latencies;
        /// The scheduler policy.
        scheduler: SchedulerPolicy;
        /// Bytes per coalescing segment.
        segment_bytes: u32;
        /// Shared-memory banks.
        shared_banks: u32;
        /// What a partially reached barrier does.
        partial_barrier: PartialBarrier;
        /// The cycle limit.
        max_cycles: u64;
        /// The warp-instruction limit.
        max_warp_instructions: u64;
        /// The per-warp budget of a warp making no progress.
        max_warp_steps: u64;
    }

    /// The global-memory latency (a shortcut for the most studied latency).
    pub fn global_latency(mut self, cycles: u32) -> Self {
        self.0.latency.global = cycles;
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<MachineConfig, ConfigError> {
        self.0.validate()?;
        Ok(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_overrides_defaults_and_rejects_unknown_keys() {
        let c = MachineConfig::from_toml_str(
            "warp_width = 8\nscheduler = \"lrr\"\n[latency]\nglobal = 600\n",
        )
        .unwrap();
        assert_eq!(c.warp_width, 8);
        assert_eq!(c.scheduler, SchedulerPolicy::Lrr);
        assert_eq!(c.latency.global, 600);
        assert_eq!(c.latency.alu, 4);
        assert_eq!(c.sms, MachineConfig::default().sms);
        assert!(MachineConfig::from_toml_str("warp_size = 8").is_err());
        assert!(MachineConfig::from_toml_str("warp_width = 65").is_err());
        assert!(MachineConfig::from_toml_str("segment_bytes = 48").is_err());
    }

    #[test]
    fn builder_validates() {
        let c = MachineConfig::builder()
            .warp_width(7)
            .global_latency(100)
            .build()
            .unwrap();
        assert_eq!((c.warp_width, c.latency.global), (7, 100));
        assert!(MachineConfig::builder().warp_width(0).build().is_err());
        MachineConfig::default().validate().unwrap();
    }
}
