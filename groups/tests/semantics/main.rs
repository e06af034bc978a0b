//! Behavioural tests of `Groups` over the in-memory store. The same
//! modules run over etcd from `groups/etcd/tests/semantics.rs`: only
//! [`new_groups`] differs.
//!
//! Every wait is wrapped in `within` so that a bug fails the test instead
//! of hanging it.

#![cfg(test)]

mod barrier;
mod concurrency;
mod events;
mod freeze;
mod membership;
mod ownership;
mod support;
mod tombstone;
mod validation;

pub use support::*;

use isthmus_groups::Groups;

/// Join/leave rounds per task in the churn test.
pub const CHURN_ROUNDS: u32 = 200;
/// Whether a store call completes without yielding to other tasks, so that
/// a single-threaded test controls the interleaving exactly.
pub const CALLS_DO_NOT_YIELD: bool = true;

/// A fresh, empty group service over the store under test.
pub async fn new_groups() -> Groups {
    Groups::in_memory()
}
