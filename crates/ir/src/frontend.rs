//! SSA construction from variables for embedders (to be written).
