//! The vmd's gRPC services, one per audience, all served on the same port.
//! Each is a thin layer: it turns wire calls into calls on the group
//! service, the resource manager or a stream's own module, and back.
//!
//! * [`tasks`]   — `Tasks`: a task's session ([`crate::session`]).
//! * [`console`] — `Console`: groups, watch ([`crate::watch`]), halt and the
//!   resource manager's calls.
//! * [`taskers`] — `Taskers`: a tasker's stream ([`crate::tasker_link`]).
//! * [`peers`]   — `Peers`: a joined vmd's host link ([`crate::host_link`]).

use tonic::Status;

use isthmus_rm::ResourceManager;

pub mod console;
pub mod peers;
pub mod taskers;
pub mod tasks;

pub use console::ConsoleService;
pub use peers::PeersService;
pub use taskers::TaskersService;
pub use tasks::TasksService;

/// Whether this vmd holds the virtual machine's resource manager or joined
/// the virtual machine of another vmd as one more host.
#[derive(Clone)]
pub enum Role {
    Manager(ResourceManager),
    Member { master: String },
}

impl Role {
    /// The resource manager, if this vmd holds it.
    pub fn manager(&self) -> Option<&ResourceManager> {
        match self {
            Role::Manager(rm) => Some(rm),
            Role::Member { .. } => None,
        }
    }

    /// The resource manager, or the refusal of a vmd (on `host`) that is
    /// not it.
    pub fn require_manager(&self, host: &str) -> Result<&ResourceManager, Status> {
        match self {
            Role::Manager(rm) => Ok(rm),
            Role::Member { master } => Err(Status::failed_precondition(format!(
                "this vmd is host {host} of a virtual machine whose resource manager is the vmd at {master}; ask that one"
            ))),
        }
    }
}
