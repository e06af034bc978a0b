//! Whether this vmd holds the virtual machine's resource manager: the
//! services that need it (console, peers) ask here, and are refused the
//! same way on a vmd that joined another's virtual machine.

use isthmus_rm::ResourceManager;
use tonic::Status;

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
