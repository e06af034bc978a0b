//! Dynamic named groups (stub, being written).
