//! The instruction builder (to be written).
