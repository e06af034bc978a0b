//! The semantics suite of `isthmus-groups` (groups/tests/semantics), run
//! over a real etcd: PVM's rules must be identical on either store. Each
//! service gets a prefix of its own on one etcd shared by this test
//! process.

#![cfg(test)]

#[path = "../../tests/semantics/barrier.rs"]
mod barrier;
#[path = "../../tests/semantics/concurrency.rs"]
mod concurrency;
#[path = "../../tests/semantics/events.rs"]
mod events;
#[path = "../../tests/semantics/freeze.rs"]
mod freeze;
#[path = "../../tests/semantics/membership.rs"]
mod membership;
#[path = "../../tests/semantics/ownership.rs"]
mod ownership;
#[path = "../../tests/semantics/support.rs"]
mod support;
#[path = "../../tests/semantics/tombstone.rs"]
mod tombstone;
#[path = "../../tests/semantics/validation.rs"]
mod validation;

pub use support::*;

use isthmus_groups::Groups;
use isthmus_groups_etcd::{EtcdConfig, EtcdStore};

/// Every etcd transaction is a disk write: fewer rounds, same contention.
pub const CHURN_ROUNDS: u32 = 10;
/// Store calls are network round trips: other tasks run meanwhile.
pub const CALLS_DO_NOT_YIELD: bool = false;

/// A fresh, empty group service: a new prefix on the shared etcd.
pub async fn new_groups() -> Groups {
    let mut config = EtcdConfig::new(vec![isthmus_testkit::etcd::shared().to_string()]);
    config.prefix = format!("/isthmus-test/{}", uuid::Uuid::new_v4());
    let store = EtcdStore::connect(config)
        .await
        .expect("open the etcd store");
    Groups::new(Box::new(store))
}
