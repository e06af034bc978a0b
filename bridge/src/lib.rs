//! bridge (being written).
