//! Launch descriptions (to be written).
