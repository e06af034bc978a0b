//! The virtual machine's host table: which hosts there are, how many slots
//! each has and uses, which implementations each may run (`offers`) and
//! which its registered taskers can run (`taskers`). Insertion order is kept:
//! "any host" placement walks it, the first (local) host first.

use std::collections::{BTreeMap, BTreeSet};

use super::error::{Result, RmError, RmErrorKind};
use super::model::JobId;
use super::valid_name;

/// The most slots one host may declare; guards the arithmetic, not policy.
pub const MAX_SLOTS: u32 = 1 << 20;

/// A host as declared by a hostfile entry, `AddHost` or a joining vmd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostDecl {
    pub name: String,
    pub slots: u32,
    pub offers: Vec<String>,
    pub addr: String,
}

impl HostDecl {
    /// Checks names and numbers; `slots = 0` becomes 1.
    pub fn validated(mut self) -> Result<Self> {
        if !valid_name(&self.name) {
            return Err(RmError::invalid(format!(
                "host name {:?} is not valid (1-64 letters, digits, '.', '_', '-')",
                self.name
            )));
        }
        if self.slots > MAX_SLOTS {
            return Err(RmError::invalid(format!(
                "host {}: {} slots is more than {MAX_SLOTS}",
                self.name, self.slots
            )));
        }
        self.slots = self.slots.max(1);
        for imp in &self.offers {
            if !valid_name(imp) {
                return Err(RmError::invalid(format!(
                    "host {}: implementation name {imp:?} is not valid",
                    self.name
                )));
            }
        }
        self.offers.sort();
        self.offers.dedup();
        Ok(self)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostState {
    /// Its vmd is linked (or it is the resource manager's own host).
    Up,
    /// Declared; its vmd has not joined yet.
    Waiting,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub addr: String,
    pub slots: u32,
    pub slots_used: u32,
    /// Implementations this host may run; empty: any a tasker registers.
    pub offers: BTreeSet<String>,
    /// Registered taskers: implementation → how many.
    pub taskers: BTreeMap<String, u32>,
    pub state: HostState,
    /// The host of the resource manager itself (cannot be deleted).
    pub local: bool,
    /// Jobs holding slots here.
    pub jobs: BTreeSet<JobId>,
}

impl Host {
    pub fn from_decl(d: HostDecl, state: HostState, local: bool) -> Self {
        Host {
            name: d.name,
            addr: d.addr,
            slots: d.slots,
            slots_used: 0,
            offers: d.offers.into_iter().collect(),
            taskers: BTreeMap::new(),
            state,
            local,
            jobs: BTreeSet::new(),
        }
    }

    pub fn free(&self) -> u32 {
        self.slots.saturating_sub(self.slots_used)
    }

    /// Whether the host is allowed to run `implementation` (whether or not a
    /// tasker for it is registered right now).
    pub fn offers(&self, implementation: &str) -> bool {
        self.offers.is_empty() || self.offers.contains(implementation)
    }

    /// Whether a job of `implementation` can be given to this host now.
    pub fn can_run(&self, implementation: &str) -> bool {
        self.state == HostState::Up
            && self.offers(implementation)
            && self.taskers.get(implementation).is_some_and(|n| *n > 0)
    }
}

/// The table itself.
#[derive(Clone, Debug, Default)]
pub struct HostTable {
    hosts: Vec<Host>,
}

impl HostTable {
    pub fn iter(&self) -> impl Iterator<Item = &Host> {
        self.hosts.iter()
    }

    pub fn get(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Host> {
        self.hosts.iter_mut().find(|h| h.name == name)
    }

    /// Adds a host; refuses a name already in the table.
    pub fn insert(&mut self, host: Host) -> Result<&Host> {
        if self.get(&host.name).is_some() {
            return Err(RmError::new(
                RmErrorKind::AlreadyExists,
                format!("host {} is already in the table", host.name),
            ));
        }
        self.hosts.push(host);
        self.hosts
            .last()
            .ok_or_else(|| RmError::invalid("host table is empty after insert"))
    }

    pub fn remove(&mut self, name: &str) -> Option<Host> {
        let at = self.hosts.iter().position(|h| h.name == name)?;
        Some(self.hosts.remove(at))
    }

    /// Every implementation any host offers or has a tasker for.
    pub fn known_implementations(&self) -> BTreeSet<String> {
        let mut all = BTreeSet::new();
        for h in &self.hosts {
            all.extend(h.offers.iter().cloned());
            all.extend(
                h.taskers
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(i, _)| i.clone()),
            );
        }
        all
    }
}
