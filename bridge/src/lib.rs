//! bridge (being written).
pub mod datatype;
