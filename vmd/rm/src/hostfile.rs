//! The TOML hostfile a vmd may read at start (`vmd --hostfile FILE`):
//!
//! ```toml
//! [[host]]
//! name = "node1"                    # required
//! slots = 8                         # default 1
//! offers = ["openmpi", "mpich"]     # default: any implementation a tasker registers
//! addr = "127.0.0.1:7712"           # optional, informative until the host joins
//! ```
//!
//! The entry whose name is the vmd's own host name describes that host; the
//! others are declared and wait for their vmd to join.

use serde::Deserialize;

use crate::hosts::validated;
use crate::{HostDecl, Refusal, Result};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hostfile {
    #[serde(default)]
    host: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(default)]
    slots: Option<u32>,
    #[serde(default)]
    offers: Vec<String>,
    #[serde(default)]
    addr: Option<String>,
}

/// Parses a hostfile's text; `origin` names it in messages.
pub fn parse(text: &str, origin: &str) -> Result<Vec<HostDecl>> {
    let file: Hostfile =
        toml::from_str(text).map_err(|e| Refusal::invalid(format!("{origin}: {e}")))?;
    let mut out: Vec<HostDecl> = Vec::new();
    for e in file.host {
        let decl = validated(HostDecl {
            name: e.name,
            slots: e.slots.unwrap_or(1),
            offers: e.offers,
            addr: e.addr.unwrap_or_default(),
            peer_addr: String::new(),
        })
        .map_err(|err| Refusal::invalid(format!("{origin}: {}", err.message)))?;
        if out.iter().any(|d| d.name == decl.name) {
            return Err(Refusal::invalid(format!(
                "{origin}: host {} is listed twice",
                decl.name
            )));
        }
        out.push(decl);
    }
    Ok(out)
}

/// Reads and parses a hostfile.
pub fn load(path: &std::path::Path) -> Result<Vec<HostDecl>> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Refusal::invalid(format!("cannot read hostfile {origin}: {e}")))?;
    parse(&text, &origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_and_defaults() {
        let hosts = parse(
            "[[host]]\nname='a'\nslots=4\noffers=['mpich','openmpi']\n[[host]]\nname='b'\n",
            "t",
        )
        .unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0].slots, 4);
        assert_eq!(hosts[0].offers, vec!["mpich", "openmpi"]);
        assert_eq!(hosts[1].slots, 1);
        assert!(hosts[1].offers.is_empty());
    }

    #[test]
    fn refuses_bad_files_naming_the_problem() {
        assert!(parse("[[host]]\nname='a'\nslot=4\n", "f")
            .unwrap_err()
            .message
            .contains("slot"));
        assert!(parse("[[host]]\nname='a b'\n", "f")
            .unwrap_err()
            .message
            .contains("not valid"));
        assert!(parse("[[host]]\nname='a'\n[[host]]\nname='a'\n", "f")
            .unwrap_err()
            .message
            .contains("twice"));
        assert!(parse("[[host]]\nname='a'\nslots=-1\n", "f").is_err());
    }
}
