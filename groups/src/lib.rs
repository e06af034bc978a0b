//! PVM-style dynamic named groups: the semantics of the Isthmus name
//! service, independent of any transport.
//!
//! [`Groups`] implements the rules (instance allocation, freeze, barriers,
//! liveness) on top of a [`GroupStore`]; [`MemoryStore`] is the embedded
//! default, and the trait is shaped so that an etcd store can follow.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> isthmus_groups::Result<()> {
//! use isthmus_groups::{Groups, TaskId};
//! let groups = Groups::in_memory();
//! let task = TaskId::new_v4();
//! groups.open_task(task, "node1").await?;
//! assert_eq!(groups.join("ring", task, None, b"port".to_vec()).await?, 0);
//! assert_eq!(groups.gsize("ring").await?, 1);
//! # Ok(()) }
//! ```

// Input must never be able to panic the daemon.
#![cfg_attr(
    not(test),
    warn(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod barrier;
mod error;
mod event;
mod freeze;
mod groups;
mod model;
pub mod store;
mod task;
mod validate;

pub use error::{ErrorKind, GroupError, Result};
pub use event::{GroupEvent, GroupEventKind};
pub use groups::Groups;
pub use model::{GroupSummary, GroupTable, Member};
pub use store::{GroupStore, MemoryStore};
pub use task::TaskId;
pub use validate::{MAX_ENDPOINT_LEN, MAX_HOST_LEN, MAX_INSTANCE, MAX_NAME_LEN};
