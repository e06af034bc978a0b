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
//! task), and a group belongs to the uid that created it, with the uids it
//! allowed in, as the group's store record says ([`GroupAccess`], set by
//! the join that created the group): every vmd over the same store, and a
//! vmd after a restart, applies the same owner. Rule `names` — a plain name reaches only the caller's
//! own groups, `user/name` reaches that user's group if they allowed the
//! caller (the operator needs no allowing); rule `group-change` — only a
//! group's members, its owner or the operator may freeze it.

use isthmus_groups::{GroupAccess, Holder};
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

/// Most uids one group's owner may allow (a bound on what a caller can make
/// every vmd's store hold per group).
pub const MAX_ALLOWED: usize = isthmus_groups::store::MAX_ALLOWED;

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

/// Whether `id` may join `target`, held as the store found it
/// ([`Holder`]): a free name is anyone's to create for themselves (nobody
/// creates a group for another user); a group with an owner follows the
/// rule of names; a group with no owner recorded (made before groups had
/// owners) is anyone's to join.
pub fn admit_join(target: &Target, id: &Identity, found: Holder<'_>) -> Result<(), Status> {
    let Some(uid) = id.uid else {
        return check(Rule::Session, id, None);
    };
    let group = &target.group;
    match found {
        Holder::Owned(access) => reach(group, access, target.owner, id, uid, "join"),
        Holder::Unowned => Ok(()),
        Holder::Free => match target.owner {
            Some(o) if o != uid => Err(Status::not_found(format!(
                "{} has no group {group:?} (only its owner creates it); {id} may not create it for them",
                users::describe(o)
            ))),
            _ => Ok(()),
        },
    }
}

/// Whether `id` may look `target` up (gettid, tables, wait_frozen), given
/// the group's owner as its store records it (`access`): always for a
/// group with no owner (none, or not recorded), else by the rule of names.
pub fn admit_reach(
    target: &Target,
    id: &Identity,
    access: Option<&GroupAccess>,
) -> Result<(), Status> {
    let Some(uid) = id.uid else {
        return check(Rule::Session, id, None);
    };
    match access {
        Some(access) => reach(&target.group, access, target.owner, id, uid, "reach"),
        None => Ok(()),
    }
}

/// Whether `id` may change `group` (freeze it): its members (`member`:
/// the caller's task is one), its owner (`access`, as the store records
/// it) and the vmd's operator; nobody else, and nobody but those for a
/// group with no owner (a stranger's freeze must not wait for someone
/// else's group to fill).
pub fn admit_change(
    group: &str,
    id: &Identity,
    member: bool,
    access: Option<&GroupAccess>,
) -> Result<(), Status> {
    if member || id.is_operator() {
        return Ok(());
    }
    if let (Some(access), Some(uid)) = (access, id.uid) {
        if access.owner == uid {
            return Ok(());
        }
    }
    let whose = match access {
        Some(access) => format!("belongs to {}", users::describe(access.owner)),
        None => "has no owner (no members, or made before groups had owners)".to_string(),
    };
    Err(Status::permission_denied(format!(
        "rule group-change: group {group:?} {whose}; only its members, its owner or the vmd's operator may freeze it; {id} may not"
    )))
}

/// The rule of names for one group that has an owner: an unqualified name
/// reaches only the caller's own group; `user/name` reaches it if `user`
/// owns it and allowed the caller (the operator needs no allowing).
fn reach(
    group: &str,
    owner: &GroupAccess,
    qualified: Option<u32>,
    id: &Identity,
    uid: u32,
    what: &str,
) -> Result<(), Status> {
    let holder = users::describe(owner.owner);
    match qualified {
        None if owner.owner == uid => Ok(()),
        None => {
            let name = users::name_of(owner.owner).unwrap_or_else(|| owner.owner.to_string());
            Err(Status::permission_denied(format!(
                "rule names: group {group:?} belongs to {holder}, not to {id}; a plain name reaches only your own groups ({name}/{group} reaches it if its owner allows you)"
            )))
        }
        Some(q) if q != owner.owner => Err(Status::permission_denied(format!(
            "rule names: group {group:?} belongs to {holder}, not to {}; {id} may not {what} it",
            users::describe(q)
        ))),
        Some(_) if owner.owner == uid || id.is_operator() || owner.allows(uid) => Ok(()),
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
    fn owned(owner: u32, allowed: &[u32]) -> GroupAccess {
        GroupAccess::new(owner, allowed.iter().copied())
    }

    #[test]
    fn groups_belong_to_their_first_uid() {
        // A free name: anyone makes it for themselves.
        assert!(admit_join(&plain("g"), &local(1001), Holder::Free).is_ok());
        let g = owned(1001, &[]);
        assert!(admit_join(&plain("g"), &local(1001), Holder::Owned(&g)).is_ok());
        let e = admit_join(&plain("g"), &local(1002), Holder::Owned(&g)).expect_err("other uid");
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(
            e.message().contains("belongs to uid 1001"),
            "{}",
            e.message()
        );
        // Not even the operator joins someone else's group by its plain name.
        let e = admit_join(&plain("g"), &operator(), Holder::Owned(&g))
            .expect_err("operator, plain name");
        assert!(e.message().contains("rule names"), "{}", e.message());
        // Qualified, it may (without being allowed).
        assert!(admit_join(&of(1001, "g"), &operator(), Holder::Owned(&g)).is_ok());
        // A group recorded with no owner is anyone's.
        assert!(admit_join(&plain("g"), &local(1002), Holder::Unowned).is_ok());
        // Nobody creates a group for another user.
        let e = admit_join(&of(1001, "lake"), &local(1002), Holder::Free)
            .expect_err("create for another");
        assert_eq!(e.code(), tonic::Code::NotFound);
        assert!(admit_join(&of(1002, "lake"), &local(1002), Holder::Free).is_ok());
    }

    #[test]
    fn qualified_names_reach_only_what_the_owner_allowed() {
        let ocean = owned(1001, &[1002]);
        let ocean = Some(&ocean);
        // 1002 was allowed: the qualified name reaches and joins.
        assert!(admit_reach(&of(1001, "ocean"), &local(1002), ocean).is_ok());
        // The plain name does not, and says whose the group is.
        let e = admit_reach(&plain("ocean"), &local(1002), ocean)
            .expect_err("plain name of another's group");
        assert!(
            e.message().contains("belongs to uid 1001"),
            "{}",
            e.message()
        );
        // 1003 was not allowed.
        let e = admit_reach(&of(1001, "ocean"), &local(1003), ocean).expect_err("not allowed");
        assert!(
            e.message().contains("has not allowed uid 1003"),
            "{}",
            e.message()
        );
        // A qualifier naming the wrong owner is refused too.
        let e = admit_reach(&of(1003, "ocean"), &local(1002), ocean).expect_err("wrong owner");
        assert!(e.message().contains("not to uid 1003"), "{}", e.message());
        // A group with no owner is reached by anyone.
        assert!(admit_reach(&plain("ocean"), &local(1003), None).is_ok());
    }

    #[test]
    fn an_owner_allows_more_with_its_joins_up_to_a_bound() {
        let mut g = owned(1001, &[1002]);
        // Another uid's join changes nothing; the owner's adds its allowed.
        assert_eq!(g.after_join(Some(&owned(1002, &[1003]))), None);
        assert_eq!(g.after_join(Some(&owned(1001, &[1002]))), None);
        let next = g.after_join(Some(&owned(1001, &[1003])));
        assert_eq!(next, Some(owned(1001, &[1002, 1003])));
        g.allow(0..=MAX_ALLOWED as u32 * 2);
        assert_eq!(g.allowed.len(), MAX_ALLOWED);
    }

    #[test]
    fn only_members_owner_and_operator_change_a_group() {
        let g = owned(1001, &[]);
        let g = Some(&g);
        assert!(admit_change("g", &local(1001), false, g).is_ok());
        assert!(admit_change("g", &operator(), false, g).is_ok());
        assert!(admit_change("g", &local(1002), true, g).is_ok());
        let e = admit_change("g", &local(1002), false, g).expect_err("stranger");
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(
            e.message().contains("rule group-change") && e.message().contains("uid 1001"),
            "{}",
            e.message()
        );
        // A group with no owner is not a stranger's to freeze either.
        let e = admit_change("empty", &local(1002), false, None).expect_err("no owner");
        assert!(e.message().contains("no owner"), "{}", e.message());
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
}
