//! Taskers (not yet written; see issue 4).
