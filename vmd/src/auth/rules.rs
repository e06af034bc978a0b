//! Authorization: one rule per RPC family, in one table. Every refusal is
//! PERMISSION_DENIED naming the rule, so that a caller knows what it lacks.
//!
//! | rule | calls | who |
//! |---|---|---|
//! | `session` | Tasks.Session | any local user (operator or allowed uid) |
//! | `read` | ListGroups, GetGroup, Watch, ListHosts, ListJobs, CheckHost | anyone authenticated; ListJobs and Watch show a caller its own jobs only (every job to the operator; ListJobs `every_user` is the `operator` rule's) |
//! | `spawn` | Spawn | any local user; the job is owned by the caller's uid |
//! | `job-control` | KillJob, SignalJob | the job's owner or the operator |
//! | `operator` | Halt, AddHost, DeleteHost | the operator only |
//! | `tasker` | Taskers.Tasker | the operator's uid only (a tasker runs as the vmd's user or root) |
//! | `host-link` | Peers.HostLink | a vmd with a host certificate of the VM (the local operator may too: it holds the CA key) |
//!
//! Within a session, a task acts only as itself (the session stream is the
//! task), and a group belongs to the uid that created it (see
//! [`GroupOwners`]): rule `names` — a plain name reaches only the caller's
//! own groups, `user/name` reaches that user's group if they allowed the
//! caller (the operator needs no allowing); rule `group-change` — only a
//! group's members, its owner or the operator may freeze it.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use tonic::Status;

use super::identity::{Identity, Kind};
use super::users;

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
/// owns it until the group is gone, with the uids it allowed in.
///
/// The table follows the groups' memberships: each admitted join holds its
/// group's entry (from admission, so that two uids racing to create a group
/// cannot both get in) until the join fails, the member leaves or its
/// session ends; the last [`GroupOwners::release`] removes the entry. A
/// group with no members left (destroyed, or a tombstone) has no owner, and
/// the next joiner, whoever it is, creates it anew.
///
/// Names: an unqualified name reaches only groups of the caller's own uid;
/// `user/name` (a [`Target`] with an owner) reaches `name` of that user, if
/// that user allowed the caller (or the caller is the vmd's operator). A
/// group of another uid is never reached by accident: every refusal names
/// the owner found.
#[derive(Clone, Default)]
pub struct GroupOwners {
    owners: Arc<Mutex<HashMap<String, Owner>>>,
}

#[derive(Debug)]
struct Owner {
    uid: u32,
    /// Admitted joins (pending or done) not yet released.
    holds: usize,
    /// Other uids the owner let join and reach the group.
    allowed: BTreeSet<u32>,
}

/// Most uids one group's owner may allow (a bound on what a caller can make
/// the vmd hold per group).
pub const MAX_ALLOWED: usize = 64;

/// A group name as a caller gave it, resolved: the group it names, and the
/// owner the caller expects (`Some` only for a qualified `user/name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub group: String,
    pub owner: Option<u32>,
}

impl Target {
    /// Reads `name`: `user/rest` where `user` is a user of this host names
    /// `rest` of that user; anything else (no `/`, or a first part that is
    /// no user, as in ports' `isthmus-port:…/accept`) names itself.
    pub fn parse(name: &str) -> Self {
        if let Some((user, rest)) = name.split_once('/') {
            if !rest.is_empty() {
                if let Some(uid) = users::uid_of(user) {
                    return Self {
                        group: rest.to_string(),
                        owner: Some(uid),
                    };
                }
            }
        }
        Self {
            group: name.to_string(),
            owner: None,
        }
    }
}

impl GroupOwners {
    /// Whether `id` may join `target`; records it as the owner, with the
    /// uids it allows, if the group has none. An `Ok` holds the group's
    /// entry until the matching [`GroupOwners::release`] (of
    /// `target.group`).
    pub fn admit_join(
        &self,
        target: &Target,
        id: &Identity,
        allow: &BTreeSet<u32>,
    ) -> Result<(), Status> {
        let Some(uid) = id.uid else {
            return check(Rule::Session, id, None);
        };
        let group = &target.group;
        if allow.len() > MAX_ALLOWED {
            return Err(Status::resource_exhausted(format!(
                "join {group:?}: {} uids allowed, at most {MAX_ALLOWED}",
                allow.len()
            )));
        }
        let mut owners = self.lock();
        match owners.get_mut(group) {
            Some(owner) => {
                reach(group, owner, target.owner, id, uid, "join")?;
                if owner.uid == uid {
                    // The owner may allow more uids with each join.
                    for a in allow {
                        if owner.allowed.len() >= MAX_ALLOWED {
                            break;
                        }
                        owner.allowed.insert(*a);
                    }
                }
                owner.holds = owner.holds.saturating_add(1);
                Ok(())
            }
            None => match target.owner {
                Some(o) if o != uid => Err(Status::not_found(format!(
                    "{} has no group {group:?} on this vmd (only its owner creates it); {id} may not create it for them",
                    users::describe(o)
                ))),
                _ => {
                    owners.insert(
                        group.clone(),
                        Owner {
                            uid,
                            holds: 1,
                            allowed: allow.clone(),
                        },
                    );
                    Ok(())
                }
            },
        }
    }

    /// Whether `id` may look `target` up (gettid, tables, wait_frozen):
    /// always for a group with no owner here (none, or its members are
    /// on other vmds), else by the rule of names above.
    pub fn admit_reach(&self, target: &Target, id: &Identity) -> Result<(), Status> {
        let Some(uid) = id.uid else {
            return check(Rule::Session, id, None);
        };
        let owners = self.lock();
        match owners.get(&target.group) {
            Some(owner) => reach(&target.group, owner, target.owner, id, uid, "reach"),
            None => Ok(()),
        }
    }

    /// Whether `id` may change `group` (freeze it): its members (`member`:
    /// the caller's session holds a membership), its owner and the vmd's
    /// operator; nobody else, and nobody but those for a group with no
    /// owner here (a stranger's freeze must not wait for someone else's
    /// group to fill).
    pub fn admit_change(&self, group: &str, id: &Identity, member: bool) -> Result<(), Status> {
        if member || id.is_operator() {
            return Ok(());
        }
        let owners = self.lock();
        let owner = owners.get(group);
        if let (Some(owner), Some(uid)) = (owner, id.uid) {
            if owner.uid == uid {
                return Ok(());
            }
        }
        let whose = match owner {
            Some(owner) => format!("belongs to {}", users::describe(owner.uid)),
            None => "has no members on this vmd".to_string(),
        };
        Err(Status::permission_denied(format!(
            "rule group-change: group {group:?} {whose}; only its members, its owner or the vmd's operator may freeze it; {id} may not"
        )))
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

    /// The owner of `group` recorded here, if any.
    pub fn owner_of(&self, group: &str) -> Option<u32> {
        self.lock().get(group).map(|o| o.uid)
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

/// The rule of names for one group that has an owner: an unqualified name
/// reaches only the caller's own group; `user/name` reaches it if `user`
/// owns it and allowed the caller (the operator needs no allowing).
fn reach(
    group: &str,
    owner: &Owner,
    qualified: Option<u32>,
    id: &Identity,
    uid: u32,
    what: &str,
) -> Result<(), Status> {
    let holder = users::describe(owner.uid);
    match qualified {
        None if owner.uid == uid => Ok(()),
        None => {
            let name = users::name_of(owner.uid).unwrap_or_else(|| owner.uid.to_string());
            Err(Status::permission_denied(format!(
                "rule names: group {group:?} belongs to {holder}, not to {id}; a plain name reaches only your own groups ({name}/{group} reaches it if its owner allows you)"
            )))
        }
        Some(q) if q != owner.uid => Err(Status::permission_denied(format!(
            "rule names: group {group:?} belongs to {holder}, not to {}; {id} may not {what} it",
            users::describe(q)
        ))),
        Some(_) if owner.uid == uid || id.is_operator() || owner.allowed.contains(&uid) => Ok(()),
        Some(_) => Err(Status::permission_denied(format!(
            "rule names: {holder} has not allowed {id} to {what} its group {group:?}"
        ))),
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

    fn plain(group: &str) -> Target {
        Target {
            group: group.into(),
            owner: None,
        }
    }
    fn of(owner: u32, group: &str) -> Target {
        Target {
            group: group.into(),
            owner: Some(owner),
        }
    }
    fn none() -> BTreeSet<u32> {
        BTreeSet::new()
    }

    #[test]
    fn groups_belong_to_their_first_uid() {
        let owners = GroupOwners::default();
        assert!(owners
            .admit_join(&plain("g"), &local(1001), &none())
            .is_ok());
        assert!(owners
            .admit_join(&plain("g"), &local(1001), &none())
            .is_ok());
        let e = owners
            .admit_join(&plain("g"), &local(1002), &none())
            .expect_err("other uid");
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(
            e.message().contains("belongs to uid 1001"),
            "{}",
            e.message()
        );
        // Not even the operator joins someone else's group by its plain name.
        let e = owners
            .admit_join(&plain("g"), &operator(), &none())
            .expect_err("operator, plain name");
        assert!(e.message().contains("rule names"), "{}", e.message());
        // Qualified, it may (without being allowed).
        assert!(owners
            .admit_join(&of(1001, "g"), &operator(), &none())
            .is_ok());
        // Three holds: the group is 1001's until all three are released.
        owners.release("g");
        owners.release("g");
        assert!(owners
            .admit_join(&plain("g"), &local(1002), &none())
            .is_err());
        owners.release("g");
        // Once the group is gone anyone may make it anew.
        assert!(owners
            .admit_join(&plain("g"), &local(1002), &none())
            .is_ok());
        let e = owners
            .admit_join(&plain("g"), &local(1001), &none())
            .expect_err("now 1002's");
        assert!(e.message().contains("belongs to uid 1002"));
    }

    #[test]
    fn qualified_names_reach_only_what_the_owner_allowed() {
        let owners = GroupOwners::default();
        let allow: BTreeSet<u32> = [1002].into();
        assert!(owners
            .admit_join(&plain("ocean"), &local(1001), &allow)
            .is_ok());
        // 1002 was allowed: the qualified name reaches and joins.
        assert!(owners.admit_reach(&of(1001, "ocean"), &local(1002)).is_ok());
        // The plain name does not, and says whose the group is.
        let e = owners
            .admit_reach(&plain("ocean"), &local(1002))
            .expect_err("plain name of another's group");
        assert!(
            e.message().contains("belongs to uid 1001"),
            "{}",
            e.message()
        );
        // 1003 was not allowed.
        let e = owners
            .admit_reach(&of(1001, "ocean"), &local(1003))
            .expect_err("not allowed");
        assert!(
            e.message().contains("has not allowed uid 1003"),
            "{}",
            e.message()
        );
        // A qualifier naming the wrong owner is refused too.
        let e = owners
            .admit_reach(&of(1003, "ocean"), &local(1002))
            .expect_err("wrong owner");
        assert!(e.message().contains("not to uid 1003"), "{}", e.message());
        // Nobody creates a group for another user.
        let e = owners
            .admit_join(&of(1001, "lake"), &local(1002), &none())
            .expect_err("create for another");
        assert_eq!(e.code(), tonic::Code::NotFound);
        assert!(owners.owner_of("lake").is_none());
        // The owner allows more with a later join; the list is bounded.
        assert!(owners
            .admit_join(&plain("ocean"), &local(1001), &[1003].into())
            .is_ok());
        assert!(owners.admit_reach(&of(1001, "ocean"), &local(1003)).is_ok());
        let many: BTreeSet<u32> = (0..=MAX_ALLOWED as u32).collect();
        let e = owners
            .admit_join(&plain("sea"), &local(1001), &many)
            .expect_err("too many");
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
    }

    #[test]
    fn only_members_owner_and_operator_change_a_group() {
        let owners = GroupOwners::default();
        assert!(owners
            .admit_join(&plain("g"), &local(1001), &none())
            .is_ok());
        assert!(owners.admit_change("g", &local(1001), false).is_ok());
        assert!(owners.admit_change("g", &operator(), false).is_ok());
        assert!(owners.admit_change("g", &local(1002), true).is_ok());
        let e = owners
            .admit_change("g", &local(1002), false)
            .expect_err("stranger");
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(
            e.message().contains("rule group-change") && e.message().contains("uid 1001"),
            "{}",
            e.message()
        );
        // A group with no members here is not a stranger's to freeze either.
        let e = owners
            .admit_change("empty", &local(1002), false)
            .expect_err("no owner");
        assert!(e.message().contains("no members"), "{}", e.message());
    }

    #[test]
    fn qualified_names_need_a_known_user() {
        assert_eq!(Target::parse("root/ocean"), of(0, "ocean"));
        assert_eq!(Target::parse("ocean"), plain("ocean"));
        assert_eq!(Target::parse("root/"), plain("root/"));
        assert_eq!(
            Target::parse("isthmus-port:00ff/accept"),
            plain("isthmus-port:00ff/accept")
        );
    }

    #[test]
    fn the_owner_table_empties_when_groups_are_gone() {
        let owners = GroupOwners::default();
        for cycle in 0..10_000u32 {
            let group = plain(&format!("g{cycle}"));
            let uid = 1000 + cycle % 3;
            // Two members, one refused stranger, one failed join.
            assert!(owners.admit_join(&group, &local(uid), &none()).is_ok());
            assert!(owners.admit_join(&group, &local(uid), &none()).is_ok());
            assert!(owners.admit_join(&group, &local(uid + 7), &none()).is_err());
            assert!(owners.admit_join(&group, &local(uid), &none()).is_ok());
            owners.release(&group.group); // the failed join
            assert_eq!(owners.len(), 1);
            owners.release(&group.group); // a leave
            owners.release(&group.group); // the last member's session ends
            assert!(owners.is_empty(), "cycle {cycle}");
        }
        // A release without a hold changes nothing.
        owners.release("never");
        assert!(owners.is_empty());
    }
}
