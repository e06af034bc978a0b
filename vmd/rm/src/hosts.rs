//! The virtual machine's host table (rows are [`Host`]s: slots, offers,
//! taskers) and the checks a host declaration passes before it gets in.
//! Insertion order is kept: "any host" placement walks it, the first
//! (local) host first.

use std::collections::BTreeSet;

use crate::{valid_name, Host, HostDecl, Refusal, Result};

/// The most slots one host may declare; guards the arithmetic, not policy.
pub const MAX_SLOTS: u32 = 1 << 20;

/// Checks a declaration's names and numbers; `slots = 0` becomes 1 and
/// `offers` are sorted without duplicates.
pub fn validated(mut decl: HostDecl) -> Result<HostDecl> {
    if !valid_name(&decl.name) {
        return Err(Refusal::invalid(format!(
            "host name {:?} is not valid (1-64 letters, digits, '.', '_', '-')",
            decl.name
        )));
    }
    if decl.slots > MAX_SLOTS {
        return Err(Refusal::invalid(format!(
            "host {}: {} slots is more than {MAX_SLOTS}",
            decl.name, decl.slots
        )));
    }
    decl.slots = decl.slots.max(1);
    for imp in &decl.offers {
        if !valid_name(imp) {
            return Err(Refusal::invalid(format!(
                "host {}: implementation name {imp:?} is not valid",
                decl.name
            )));
        }
    }
    decl.offers.sort();
    decl.offers.dedup();
    Ok(decl)
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
            return Err(Refusal::already_exists(format!(
                "host {} is already in the table",
                host.name
            )));
        }
        self.hosts.push(host);
        self.hosts
            .last()
            .ok_or_else(|| Refusal::invalid("host table is empty after insert"))
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
