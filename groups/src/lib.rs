//! PVM-style dynamic named groups: the semantics of the Isthmus name
//! service, independent of any transport.
//!
//! [`Groups`] implements the rules (instance allocation, freeze, barriers,
//! liveness) on top of a [`GroupStore`]; [`MemoryStore`] is the embedded
//! default, and the trait is shaped so that an etcd store can follow.
//!
//! # Group lifecycle
//!
//! * The first `join` creates a group, with a fresh *generation*; joins
//!   are accepted until the group is frozen (`freeze`).
//! * A member that *dies* (its task is closed with `died`) while the group
//!   is frozen marks the group *broken*, for good: `wait_frozen` and
//!   `freeze` on it fail with `GroupBroken`, naming the first instance
//!   and task that died. A voluntary leave never breaks a group, nor does
//!   a death before the freeze.
//! * When the last member goes (leave or death), the group is destroyed
//!   (PVM semantics) — unless it is broken. A broken group that empties
//!   stays as a *tombstone*: still frozen and broken, no members, same
//!   generation. `list`/`table` show it (size 0), `gsize` is 0,
//!   `gettid`/`getinst` fail as for any absent member, and `wait_frozen`
//!   fails at once with `GroupBroken`. This is what lets a peer job that
//!   arrives after an MPI launcher has killed the rest of a failed job
//!   learn that the job broke, instead of waiting for its deadline.
//!   That early failure is for tasks that lived through the break: for a
//!   task opened after it (`wait_frozen_as`), the broken incarnation
//!   belongs to a run it never knew, a crashed job whose re-run is
//!   starting, so it waits for the fresh generation instead.
//!   Creating a tombstone emits no `Destroyed` event (the `MemberDied`
//!   and `Left` events already tell the story).
//! * A `join` to a tombstone replaces it, as if the name were free: the
//!   old incarnation is destroyed (`Destroyed` event) and a fresh group
//!   with a new generation is created (`Joined` event), in one atomic
//!   change, so a restarted job can register the name again. A broken
//!   group that still has members refuses joins (`Frozen`), like any
//!   frozen group.
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
pub use store::{DynStore, GroupAccess, GroupStore, Holder, MemoryStore, TaskLease, TaskProcess};
pub use task::TaskId;
pub use validate::{
    escape_for_display, MAX_ENDPOINT_LEN, MAX_HOST_LEN, MAX_INSTANCE, MAX_NAME_LEN,
};
