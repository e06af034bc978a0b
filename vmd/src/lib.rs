//! vmd (being written).
