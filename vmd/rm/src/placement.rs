//! Choosing the host for a job — any host, a named host, or the host with
//! the most free slots — or saying precisely why none fits.

use crate::hosts::HostTable;
use crate::{Host, HostState, Placement, Refusal, RefusalKind, Result};

/// The host a job of `np` ranks of `implementation` goes to.
pub fn choose<'a>(
    hosts: &'a HostTable,
    implementation: &str,
    np: u32,
    placement: &Placement,
) -> Result<&'a Host> {
    choose_except(hosts, implementation, np, placement, &[])
}

/// [`choose`], passing over the hosts in `except` unless the placement
/// names one (hosts that refused the job: their rows here were stale).
pub fn choose_except<'a>(
    hosts: &'a HostTable,
    implementation: &str,
    np: u32,
    placement: &Placement,
    except: &[String],
) -> Result<&'a Host> {
    let known = hosts.known_implementations();
    if !known.contains(implementation) {
        let list = if known.is_empty() {
            "none".to_string()
        } else {
            known.into_iter().collect::<Vec<_>>().join(", ")
        };
        return Err(Refusal::not_found(format!(
            "unknown implementation {implementation:?}: no host offers it and no tasker registered it (known: {list})"
        )));
    }
    match placement {
        Placement::Host(name) => {
            let host = hosts
                .get(name)
                .ok_or_else(|| Refusal::not_found(format!("no host named {name:?}")))?;
            if host.state != HostState::Up {
                return Err(Refusal::precondition(format!(
                    "host {name} is declared but its vmd has not joined"
                )));
            }
            if !host.can_run(implementation) {
                return Err(Refusal::precondition(format!(
                    "host {name} does not offer {implementation} (no registered tasker for it there)"
                )));
            }
            if host.free() < np {
                return Err(not_enough(np, implementation, Some(host)));
            }
            Ok(host)
        }
        Placement::Any | Placement::MostFree => {
            let mut capable = hosts
                .iter()
                .filter(|h| h.can_run(implementation) && !except.contains(&h.name))
                .peekable();
            if capable.peek().is_none() {
                return Err(Refusal::precondition(format!(
                    "no host offers {implementation} now: no host that is up has a tasker registered for it"
                )));
            }
            let capable: Vec<&Host> = capable.collect();
            let best = capable
                .iter()
                .copied()
                .max_by_key(|h| (h.free(), std::cmp::Reverse(position(hosts, h))));
            let chosen = match placement {
                Placement::MostFree => best.filter(|h| h.free() >= np),
                _ => capable.iter().copied().find(|h| h.free() >= np),
            };
            chosen.ok_or_else(|| not_enough(np, implementation, best))
        }
    }
}

fn position(hosts: &HostTable, h: &Host) -> usize {
    hosts
        .iter()
        .position(|x| x.name == h.name)
        .unwrap_or(usize::MAX)
}

fn not_enough(np: u32, implementation: &str, best: Option<&Host>) -> Refusal {
    let detail = match best {
        Some(h) => format!("host {} has {} free of {} slots", h.name, h.free(), h.slots),
        None => "no host has free slots".to_string(),
    };
    Refusal::new(
        RefusalKind::ResourceExhausted,
        format!(
            "not enough slots: the job needs {np} on one host offering {implementation}; {detail}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HostDecl;

    fn table() -> HostTable {
        let mut t = HostTable::default();
        for (name, slots, used, imp) in [
            ("a", 4, 3, "openmpi"),
            ("b", 8, 2, "openmpi"),
            ("c", 16, 0, "mpich"),
        ] {
            let mut h = Host::from_decl(
                HostDecl {
                    name: name.into(),
                    slots,
                    offers: vec![],
                    addr: String::new(),
                    peer_addr: String::new(),
                },
                HostState::Up,
                false,
            );
            h.slots_used = used;
            h.taskers.insert(imp.into(), 1);
            t.insert(h).unwrap();
        }
        t
    }

    #[test]
    fn any_takes_the_first_that_fits_most_free_the_emptiest() {
        let t = table();
        assert_eq!(choose(&t, "openmpi", 1, &Placement::Any).unwrap().name, "a");
        assert_eq!(choose(&t, "openmpi", 2, &Placement::Any).unwrap().name, "b");
        assert_eq!(
            choose(&t, "openmpi", 1, &Placement::MostFree).unwrap().name,
            "b"
        );
        assert_eq!(
            choose(&t, "mpich", 1, &Placement::Host("c".into()))
                .unwrap()
                .name,
            "c"
        );
    }

    #[test]
    fn refusals_name_the_problem() {
        let t = table();
        let e = choose(&t, "lam", 1, &Placement::Any).unwrap_err();
        assert_eq!(e.kind, RefusalKind::NotFound);
        assert!(e.message.contains("lam"));
        let e = choose(&t, "openmpi", 7, &Placement::Any).unwrap_err();
        assert_eq!(e.kind, RefusalKind::ResourceExhausted);
        assert!(e.message.contains("b has 6 free"), "{}", e.message);
        assert_eq!(
            choose(&t, "openmpi", 1, &Placement::Host("z".into()))
                .unwrap_err()
                .kind,
            RefusalKind::NotFound
        );
        assert_eq!(
            choose(&t, "openmpi", 1, &Placement::Host("c".into()))
                .unwrap_err()
                .kind,
            RefusalKind::FailedPrecondition
        );
    }
}
