//! Generic control-flow-graph analyses (to be written).
