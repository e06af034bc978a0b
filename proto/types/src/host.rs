//! Hosts of the virtual machine as the resource manager shows them: how
//! many slots each has and uses, which implementations it may run
//! (`offers`) and which its registered taskers can run (`taskers`).

use std::collections::{BTreeMap, BTreeSet};

use crate::job::JobId;

/// A host as declared by a hostfile entry, `AddHost` or a joining vmd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostDecl {
    pub name: String,
    pub slots: u32,
    pub offers: Vec<String>,
    /// Its vmd's address for clients on that host (its Unix socket): what
    /// jobs there get as `ISTHMUS_VMD`.
    pub addr: String,
    /// Its vmd's address for other vmds (`https://ip:port`, its mutual-TLS
    /// listener); empty if it has none.
    pub peer_addr: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum HostState {
    /// Its vmd is linked (or it is the resource manager's own host).
    Up,
    /// Declared; its vmd has not joined yet.
    Waiting,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Host {
    pub name: String,
    /// See [`HostDecl::addr`].
    pub addr: String,
    /// See [`HostDecl::peer_addr`].
    pub peer_addr: String,
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
            peer_addr: d.peer_addr,
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

/// A host as a vmd shows it to a client (the console's `conf`). Unlike
/// [`Host`], the resource manager's own row, it carries only counts and
/// names, and says whether the vmd that answered runs on this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostView {
    pub name: String,
    /// Its vmd's address for that host's own clients; empty while waiting.
    pub addr: String,
    /// Its vmd's address for other vmds (`https://ip:port`); empty if none.
    pub peer_addr: String,
    pub slots: u32,
    pub slots_used: u32,
    /// Implementations it may run; empty: any its taskers register.
    pub offers: Vec<String>,
    /// Implementations with a registered tasker, sorted.
    pub taskers: Vec<String>,
    pub state: HostState,
    /// The vmd that answered the call runs on this host (not necessarily
    /// the resource manager's host: see [`Host::local`]).
    pub answering: bool,
    /// How many jobs hold slots here.
    pub jobs: u32,
}

/// Whether a host's vmd answers, and how fast.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCheck {
    pub name: String,
    pub responding: bool,
    /// What was found, in words ("this vmd", "vmd at … answered", …).
    pub detail: String,
    /// The round trip of the check; zero when it did not answer.
    pub round_trip: std::time::Duration,
}
