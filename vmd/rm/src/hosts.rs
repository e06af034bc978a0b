//! The virtual machine's host table (rows are [`Host`]s: slots, offers,
//! taskers) and the checks a host declaration passes before it gets in.
//! Insertion order is kept: "any host" placement walks it, the first
//! (local) host first.

use std::collections::BTreeSet;

use crate::{valid_name, Host, HostDecl, Refusal, Result};

/// The most slots one host may declare; guards the arithmetic, not policy.
pub const MAX_SLOTS: u32 = 1 << 20;
/// The longest peer address a host may advertise.
pub const MAX_PEER_ADDR: usize = 256;

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
    if !decl.peer_addr.is_empty() && !valid_peer_addr(&decl.peer_addr) {
        let shown: String = decl.peer_addr.chars().take(80).collect();
        return Err(Refusal::invalid(format!(
            "host {}: peer address {shown:?} is not https://HOST:PORT (at most {MAX_PEER_ADDR} bytes)",
            decl.name
        )));
    }
    Ok(decl)
}

/// An address other vmds can dial: `https://`, a host and a port, printable
/// ASCII without spaces, bounded.
fn valid_peer_addr(addr: &str) -> bool {
    let Some(rest) = addr.strip_prefix("https://") else {
        return false;
    };
    addr.len() <= MAX_PEER_ADDR
        && addr.bytes().all(|b| b.is_ascii_graphic())
        && !rest.contains('/')
        && rest
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(peer_addr: &str) -> HostDecl {
        HostDecl {
            name: "beta".into(),
            slots: 1,
            offers: vec![],
            addr: "unix:/run/isthmus/vmd.sock".into(),
            peer_addr: peer_addr.into(),
        }
    }

    #[test]
    fn peer_addresses_are_https_host_port() {
        for ok in [
            "",
            "https://10.0.0.2:7711",
            "https://[fd00::2]:7711",
            "https://beta.lan:1",
        ] {
            assert!(validated(decl(ok)).is_ok(), "{ok}");
        }
        let long = format!("https://{}:1", "a".repeat(MAX_PEER_ADDR));
        for bad in [
            "http://10.0.0.2:7711",
            "unix:/tmp/x.sock",
            "https://10.0.0.2",
            "https://:7711",
            "https://10.0.0.2:7711/path",
            "https://10.0.0.2:99999",
            "https://a b:1",
            "https://a\n:1",
            long.as_str(),
        ] {
            let e = validated(decl(bad)).expect_err(bad);
            assert!(e.message.contains("peer address"), "{}", e.message);
        }
    }
}
