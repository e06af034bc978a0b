//! Examples live in src/bin.
