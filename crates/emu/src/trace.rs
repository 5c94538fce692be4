//! An optional timeline of the run in Chrome's trace-event JSON format, for
//! `chrome://tracing` or Perfetto.
//!
//! Each SM is a process and each warp slot a thread; every stretch a warp spends in one
//! basic block is a complete (`"ph": "X"`) event named after the block, from the cycle it
//! entered the block to the cycle it left, with the number of active lanes. Timestamps are
//! cycles (shown as microseconds by the viewers). The recorder is only consulted when a
//! warp changes block, and a run without one pays a single test of an `Option` there.

use serde::Serialize;

/// One trace event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceEvent {
    /// The block's name.
    pub name: String,
    /// The phase: `X` (complete event).
    pub ph: &'static str,
    /// Start cycle.
    pub ts: u64,
    /// Duration in cycles.
    pub dur: u64,
    /// The SM.
    pub pid: u32,
    /// The warp slot on the SM.
    pub tid: u32,
    /// Extra data: the active lanes and the thread block's linear index.
    pub args: TraceArgs,
}

/// The `args` of a [`TraceEvent`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceArgs {
    /// Lanes active in the block.
    pub lanes: u32,
    /// The linear index of the thread block.
    pub thread_block: u64,
}

/// Collects the events of a run.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// The events, in the order they ended.
    pub events: Vec<TraceEvent>,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Self {
        Trace::default()
    }

    /// The trace as Chrome trace-event JSON (`{"traceEvents": [...]}`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "traceEvents": self.events,
            "displayTimeUnit": "ns",
            "otherData": { "timeUnit": "cycles" },
        })
    }
}
