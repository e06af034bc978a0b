//! Authorization: one rule per RPC family, in one table. Every refusal is
//! PERMISSION_DENIED naming the rule, so that a caller knows what it lacks.
//!
//! | rule | calls | who |
//! |---|---|---|
//! | `session` | Tasks.Session | any local user (operator or allowed uid) |
//! | `read` | ListGroups, GetGroup, Watch, ListHosts, ListJobs, CheckHost | anyone authenticated |
//! | `spawn` | Spawn | any local user; the job is owned by the caller's uid |
//! | `job-control` | KillJob, SignalJob | the job's owner or the operator |
//! | `operator` | Halt, AddHost, DeleteHost | the operator only |
//! | `tasker` | Taskers.Tasker | the operator's uid only (a tasker runs as the vmd's user or root) |
//! | `host-link` | Peers.HostLink | a vmd with a host certificate of the VM (the local operator may too: it holds the CA key) |
//!
//! Within a session, a task acts only as itself (the session stream is the
//! task), and a group belongs to the uid that created it: another uid may
//! not join it, except the operator (see [`GroupOwners`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tonic::Status;

use super::identity::{Identity, Kind};

/// An RPC family's rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Session,
    Read,
    Spawn,
    JobControl,
    Operator,
    Tasker,
    HostLink,
}

/// Who a rule admits.
#[derive(Clone, Copy, Debug)]
enum Who {
    /// The operator or an allowed local uid.
    LocalUser,
    /// Any authenticated caller, peers included.
    Anyone,
    /// The owner of the object (checked with its owner uid), or the operator.
    OwnerOrOperator,
    Operator,
    /// A peer vmd, or the local operator.
    PeerVmd,
}

/// The table: rule, its name in refusals, who it admits.
const RULES: &[(Rule, &str, Who)] = &[
    (Rule::Session, "session", Who::LocalUser),
    (Rule::Read, "read", Who::Anyone),
    (Rule::Spawn, "spawn", Who::LocalUser),
    (Rule::JobControl, "job-control", Who::OwnerOrOperator),
    (Rule::Operator, "operator", Who::Operator),
    (Rule::Tasker, "tasker", Who::Operator),
    (Rule::HostLink, "host-link", Who::PeerVmd),
];

fn entry(rule: Rule) -> (&'static str, Who) {
    RULES
        .iter()
        .find(|(r, _, _)| *r == rule)
        .map(|(_, name, who)| (*name, *who))
        // Every rule is in the table (see the test); a missing one admits
        // only the operator.
        .unwrap_or(("operator", Who::Operator))
}

/// Checks `rule` for `id`; `owner` is the uid owning the object acted on
/// (a job), for owner rules.
pub fn check(rule: Rule, id: &Identity, owner: Option<u32>) -> Result<(), Status> {
    let (name, who) = entry(rule);
    let admitted = match who {
        Who::Anyone => true,
        Who::LocalUser => matches!(id.kind, Kind::Operator | Kind::Local),
        Who::Operator => id.is_operator(),
        Who::PeerVmd => matches!(id.kind, Kind::Peer(_) | Kind::Operator),
        Who::OwnerOrOperator => {
            id.is_operator() || (id.kind == Kind::Local && owner.is_some() && id.uid == owner)
        }
    };
    if admitted {
        return Ok(());
    }
    let why = match who {
        Who::Anyone => "",
        Who::LocalUser => "only local users of this vmd",
        Who::Operator => "only the vmd's operator",
        Who::PeerVmd => "only a vmd with a host certificate of this virtual machine",
        Who::OwnerOrOperator => "only the owner or the vmd's operator",
    };
    let whose = match owner {
        Some(uid) if matches!(who, Who::OwnerOrOperator) => format!(" (owned by uid {uid})"),
        _ => String::new(),
    };
    Err(Status::permission_denied(format!(
        "rule {name}: {why}{whose}; {id} may not"
    )))
}

/// Owners (uids) of the groups of one vmd: the first uid to join a group
/// owns it until the group is gone.
///
/// The table follows the groups' memberships: each admitted join holds its
/// group's entry (from admission, so that two uids racing to create a group
/// cannot both get in) until the join fails, the member leaves or its
/// session ends; the last [`GroupOwners::release`] removes the entry. A
/// group with no members left (destroyed, or a tombstone) has no owner, and
/// the next joiner, whoever it is, creates it anew.
#[derive(Clone, Default)]
pub struct GroupOwners {
    owners: Arc<Mutex<HashMap<String, Owner>>>,
}

#[derive(Debug)]
struct Owner {
    uid: u32,
    /// Admitted joins (pending or done) not yet released.
    holds: usize,
}

impl GroupOwners {
    /// Whether `id` may join `group`; records it as the owner if the group
    /// has none. An `Ok` holds the group's entry until the matching
    /// [`GroupOwners::release`].
    pub fn admit_join(&self, group: &str, id: &Identity) -> Result<(), Status> {
        let Some(uid) = id.uid else {
            return check(Rule::Session, id, None);
        };
        let mut owners = self.lock();
        match owners.get_mut(group) {
            Some(owner) if owner.uid != uid && !id.is_operator() => {
                Err(Status::permission_denied(format!(
                    "rule session: group {group:?} belongs to uid {}; {id} may not join it",
                    owner.uid
                )))
            }
            Some(owner) => {
                owner.holds = owner.holds.saturating_add(1);
                Ok(())
            }
            None => {
                owners.insert(group.to_string(), Owner { uid, holds: 1 });
                Ok(())
            }
        }
    }

    /// Ends one hold of an admitted join (it failed, the member left, or
    /// its session ended); the last one forgets the group's owner.
    pub fn release(&self, group: &str) {
        let mut owners = self.lock();
        if let Some(owner) = owners.get_mut(group) {
            owner.holds = owner.holds.saturating_sub(1);
            if owner.holds == 0 {
                owners.remove(group);
            }
        }
    }

    /// How many groups have an owner recorded.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no group has an owner recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        // Plain data, consistent after any panic of a holder.
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(uid: u32) -> Identity {
        Identity {
            uid: Some(uid),
            pid: None,
            kind: Kind::Local,
        }
    }
    fn operator() -> Identity {
        Identity {
            uid: Some(0),
            pid: None,
            kind: Kind::Operator,
        }
    }
    fn peer() -> Identity {
        Identity {
            uid: None,
            pid: None,
            kind: Kind::Peer("beta".into()),
        }
    }

    #[test]
    fn every_rule_is_in_the_table() {
        for r in [
            Rule::Session,
            Rule::Read,
            Rule::Spawn,
            Rule::JobControl,
            Rule::Operator,
            Rule::Tasker,
            Rule::HostLink,
        ] {
            assert!(RULES.iter().any(|(x, _, _)| *x == r), "{r:?}");
        }
    }

    #[test]
    fn job_control_is_for_owner_and_operator() {
        assert!(check(Rule::JobControl, &local(1001), Some(1001)).is_ok());
        let e = check(Rule::JobControl, &local(1002), Some(1001)).expect_err("other uid");
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(e.message().contains("rule job-control"), "{}", e.message());
        assert!(check(Rule::JobControl, &operator(), Some(1001)).is_ok());
        assert!(check(Rule::JobControl, &peer(), Some(1001)).is_err());
    }

    #[test]
    fn operator_tasker_and_host_rules() {
        assert!(check(Rule::Operator, &local(1001), None).is_err());
        assert!(check(Rule::Tasker, &local(1001), None).is_err());
        assert!(check(Rule::Tasker, &operator(), None).is_ok());
        assert!(check(Rule::HostLink, &local(1001), None).is_err());
        assert!(check(Rule::HostLink, &peer(), None).is_ok());
        assert!(check(Rule::Session, &peer(), None).is_err());
        assert!(check(Rule::Read, &peer(), None).is_ok());
    }

    #[test]
    fn groups_belong_to_their_first_uid() {
        let owners = GroupOwners::default();
        assert!(owners.admit_join("g", &local(1001)).is_ok());
        assert!(owners.admit_join("g", &local(1001)).is_ok());
        let e = owners.admit_join("g", &local(1002)).expect_err("other uid");
        assert!(e.message().contains("belongs to uid 1001"));
        assert!(owners.admit_join("g", &operator()).is_ok());
        // Three holds: the group is 1001's until all three are released.
        owners.release("g");
        owners.release("g");
        assert!(owners.admit_join("g", &local(1002)).is_err());
        owners.release("g");
        // Once the group is gone anyone may make it anew.
        assert!(owners.admit_join("g", &local(1002)).is_ok());
        let e = owners
            .admit_join("g", &local(1001))
            .expect_err("now 1002's");
        assert!(e.message().contains("belongs to uid 1002"));
    }

    #[test]
    fn the_owner_table_empties_when_groups_are_gone() {
        let owners = GroupOwners::default();
        for cycle in 0..10_000u32 {
            let group = format!("g{cycle}");
            let uid = 1000 + cycle % 3;
            // Two members, one refused stranger, one failed join.
            assert!(owners.admit_join(&group, &local(uid)).is_ok());
            assert!(owners.admit_join(&group, &local(uid)).is_ok());
            assert!(owners.admit_join(&group, &local(uid + 7)).is_err());
            assert!(owners.admit_join(&group, &local(uid)).is_ok());
            owners.release(&group); // the failed join
            assert_eq!(owners.len(), 1);
            owners.release(&group); // a leave
            owners.release(&group); // the last member's session ends
            assert!(owners.is_empty(), "cycle {cycle}");
        }
        // A release without a hold changes nothing.
        owners.release("never");
        assert!(owners.is_empty());
    }
}
