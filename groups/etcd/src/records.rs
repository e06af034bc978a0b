//! The values stored under [`crate::keys`], and their decoding into the
//! store trait's types (from a transaction's answer too: [`gets`]).
//!
//! Two numbers are known only once a transaction commits: a new group's
//! generation and the `seq` of the death that broke a group. Both are the
//! revision of the transaction that wrote them, so the record leaves them
//! out (`None`) and readers take the meta key's mod-revision instead; the
//! next transaction that rewrites the meta writes them down first
//! ([`MetaRec::settle`]).

use etcd_client::{KeyValue, TxnOpResponse, TxnResponse};
use isthmus_groups::store::barrier::Episode;
use isthmus_groups::store::{GroupAccess, GroupMeta, GroupSlots, Lookup, LostMember, Membership};
use isthmus_groups::{GroupError, GroupEvent, GroupEventKind, Member, Result, TaskId};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The key-values of each get of a transaction, in order (taken out of the
/// response once: `op_responses` copies every answer).
pub(crate) fn gets(resp: &TxnResponse) -> Vec<Vec<KeyValue>> {
    resp.op_responses()
        .into_iter()
        .map(|op| match op {
            TxnOpResponse::Get(mut g) => g.take_kvs(),
            _ => Vec::new(),
        })
        .collect()
}

/// The `i`-th of [`gets`] (empty if there is none).
pub(crate) fn nth(sets: &[Vec<KeyValue>], i: usize) -> &[KeyValue] {
    sets.get(i).map(Vec::as_slice).unwrap_or_default()
}

/// Bits of a `seq` below the revision: the event's index in its
/// transaction. A transaction carries at most [`MAX_EVENTS_PER_TXN`].
const INDEX_BITS: u32 = 12;
pub(crate) const MAX_EVENTS_PER_TXN: usize = 1 << INDEX_BITS;

/// The `seq` of the `index`-th event of the transaction at `revision`.
pub(crate) fn seq(revision: u64, index: usize) -> u64 {
    (revision << INDEX_BITS) | (index as u64 & (MAX_EVENTS_PER_TXN as u64 - 1))
}

/// The `seq` before every event of transactions after `revision`.
pub(crate) fn seq_at(revision: u64) -> u64 {
    revision << INDEX_BITS
}

pub(crate) fn rev(r: i64) -> u64 {
    u64::try_from(r).unwrap_or(0)
}

pub(crate) fn corrupt(what: &str, key: &[u8], detail: impl std::fmt::Display) -> GroupError {
    GroupError::Store(format!(
        "etcd record {} is not a valid {what}: {detail}",
        String::from_utf8_lossy(key).escape_debug()
    ))
}

/// The member whose death broke the group.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct BrokenRec {
    pub instance: u32,
    pub task: Uuid,
    /// Index of the `MemberDied` event in its transaction's log.
    pub index: usize,
    /// Revision of that transaction (`None`: the meta's mod-revision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<u64>,
}

/// Value of `P/g/<group>`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct MetaRec {
    /// `None`: the meta's mod-revision (this incarnation was created by
    /// the transaction that last wrote the meta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken: Option<BrokenRec>,
    /// `(instance, task)` of every member, sorted by instance.
    pub slots: Vec<(u32, Uuid)>,
    /// Who the group belongs to (absent in records written before groups
    /// had owners).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<GroupAccess>,
}

impl MetaRec {
    /// A new incarnation holding one member, belonging to `access`.
    pub(crate) fn created(instance: u32, task: TaskId, access: Option<&GroupAccess>) -> Self {
        MetaRec {
            generation: None,
            frozen: None,
            broken: None,
            slots: vec![(instance, task.0)],
            access: access.cloned(),
        }
    }

    /// Writes down the numbers that were implicit in `mod_revision`, before
    /// the record is rewritten by another transaction.
    pub(crate) fn settle(&mut self, mod_revision: u64) {
        self.generation.get_or_insert(mod_revision);
        if let Some(b) = &mut self.broken {
            b.rev.get_or_insert(mod_revision);
        }
    }

    pub(crate) fn meta(&self, mod_revision: u64) -> GroupMeta {
        GroupMeta {
            generation: self.generation.unwrap_or(mod_revision),
            revision: mod_revision,
            frozen_size: self.frozen,
            broken: self.broken.as_ref().map(|b| LostMember {
                instance: b.instance,
                task: TaskId(b.task),
                seq: seq(b.rev.unwrap_or(mod_revision), b.index),
            }),
            access: self.access.clone(),
        }
    }

    pub(crate) fn size(&self) -> u32 {
        u32::try_from(self.slots.len()).unwrap_or(u32::MAX)
    }

    pub(crate) fn is_tombstone(&self) -> bool {
        self.slots.is_empty() && self.broken.is_some()
    }

    pub(crate) fn instance_of(&self, task: TaskId) -> Option<u32> {
        self.slots.iter().find(|(_, t)| *t == task.0).map(|s| s.0)
    }

    /// The group as a join sees it, at `mod_revision`.
    pub(crate) fn group_slots(&self, mod_revision: u64) -> GroupSlots {
        GroupSlots {
            meta: self.meta(mod_revision),
            slots: self.slots.iter().map(|(i, t)| (*i, TaskId(*t))).collect(),
        }
    }

    /// The membership of `task`, at `mod_revision`.
    pub(crate) fn membership(&self, mod_revision: u64, task: TaskId) -> Lookup<Membership> {
        match self.instance_of(task) {
            None => Lookup::NoEntry,
            Some(instance) => Lookup::Found(Membership {
                instance,
                size: self.size(),
                generation: self.meta(mod_revision).generation,
            }),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        // Plain data: serialising cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<Self> {
        serde_json::from_slice(value).map_err(|e| corrupt("group meta", key, e))
    }
}

/// Value of `P/b/<group>`: the open barrier episode.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct BarrierRec {
    pub id: u64,
    pub generation: u64,
    pub count: u32,
    /// Tasks waiting, fewer than `count` (the entry that reaches it ends
    /// the episode instead of being written).
    pub arrived: Vec<Uuid>,
}

impl BarrierRec {
    pub(crate) fn of(ep: &Episode) -> Self {
        BarrierRec {
            id: ep.id,
            generation: ep.generation,
            count: ep.count,
            arrived: ep.arrived.iter().map(|t| t.0).collect(),
        }
    }

    pub(crate) fn episode(self) -> Episode {
        Episode {
            id: self.id,
            generation: self.generation,
            count: self.count,
            arrived: self.arrived.into_iter().map(TaskId).collect(),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<Self> {
        serde_json::from_slice(value).map_err(|e| corrupt("barrier episode", key, e))
    }
}

/// Value of `P/t/<task>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TaskRec {
    pub host: String,
    /// The process behind the task (SO_PEERCRED of its session), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
}

impl TaskRec {
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<Self> {
        serde_json::from_slice(value).map_err(|e| corrupt("task record", key, e))
    }
}

/// Value of `P/m/<group>\0<instance>`: task uuid (16 bytes), host length
/// (u16 LE), host, endpoint. Binary, because endpoints are opaque bytes of
/// up to 64 KiB.
pub(crate) fn encode_member(m: &Member) -> Vec<u8> {
    let host = m.host.as_bytes();
    let len = u16::try_from(host.len()).unwrap_or(u16::MAX);
    let mut out = Vec::with_capacity(18 + host.len() + m.endpoint.len());
    out.extend_from_slice(m.task.0.as_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(host.get(..usize::from(len)).unwrap_or(host));
    out.extend_from_slice(&m.endpoint);
    out
}

pub(crate) fn decode_member(key: &[u8], value: &[u8], instance: u32) -> Result<Member> {
    let bad = |d: &str| corrupt("member record", key, d);
    let task = value
        .get(..16)
        .ok_or_else(|| bad("shorter than a task id"))?;
    let task = uuid::Uuid::from_slice(task).map_err(|e| bad(&e.to_string()))?;
    let len: [u8; 2] = value
        .get(16..18)
        .and_then(|l| l.try_into().ok())
        .ok_or_else(|| bad("no host length"))?;
    let len = usize::from(u16::from_le_bytes(len));
    let host = value
        .get(18..18 + len)
        .ok_or_else(|| bad("host cut short"))?;
    let host = String::from_utf8(host.to_vec()).map_err(|e| bad(&e.to_string()))?;
    let endpoint = value.get(18 + len..).unwrap_or_default().to_vec();
    Ok(Member {
        instance,
        task: TaskId(task),
        host,
        endpoint,
    })
}

/// One change in `P/log`: a group event, or the release of a barrier
/// episode (which is no group event: only the episode's waiters hear it).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct EventRec {
    pub kind: KindRec,
    pub group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<(u32, Uuid)>,
    pub size: u32,
    pub broken: bool,
    /// The released episode (`BarrierReleased` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode: Option<u64>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum KindRec {
    Joined,
    Left,
    Frozen,
    Destroyed,
    MemberDied,
    BarrierReleased,
}

impl EventRec {
    /// The group event this record is (`None` for a barrier release).
    pub(crate) fn event(&self, revision: u64, index: usize) -> Option<GroupEvent> {
        Some(GroupEvent {
            seq: seq(revision, index),
            kind: match self.kind {
                KindRec::Joined => GroupEventKind::Joined,
                KindRec::Left => GroupEventKind::Left,
                KindRec::Frozen => GroupEventKind::Frozen,
                KindRec::Destroyed => GroupEventKind::Destroyed,
                KindRec::MemberDied => GroupEventKind::MemberDied,
                KindRec::BarrierReleased => return None,
            },
            group: self.group.clone(),
            instance: self.member.map(|m| m.0),
            task: self.member.map(|m| TaskId(m.1)),
            size: self.size,
            group_broken: self.broken,
        })
    }
}

pub(crate) fn encode_log(events: &[EventRec]) -> Vec<u8> {
    serde_json::to_vec(events).unwrap_or_default()
}

pub(crate) fn decode_log(key: &[u8], value: &[u8]) -> Result<Vec<EventRec>> {
    serde_json::from_slice(value).map_err(|e| corrupt("change log", key, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_records_round_trip() {
        let m = Member {
            instance: 7,
            task: TaskId::new_v4(),
            host: "node-1".into(),
            endpoint: vec![0, 1, 2, 255],
        };
        let bytes = encode_member(&m);
        assert_eq!(decode_member(b"k", &bytes, 7).unwrap(), m);
        assert!(decode_member(b"k", &bytes[..10], 7).is_err());
    }

    #[test]
    fn meta_records_keep_their_owner_and_older_ones_have_none() {
        let t = TaskId::new_v4();
        let access = GroupAccess::new(1001, [1002]);
        let rec = MetaRec::created(0, t, Some(&access));
        let back = MetaRec::decode(b"k", &rec.encode()).unwrap();
        assert_eq!(back.meta(5).access, Some(access));
        // A record written before groups had owners.
        let old = format!(r#"{{"slots":[[0,"{}"]]}}"#, t.0);
        let back = MetaRec::decode(b"k", old.as_bytes()).unwrap();
        assert_eq!(back.meta(5).access, None);
        assert_eq!(back.slots, vec![(0, t.0)]);
    }

    #[test]
    fn implicit_numbers_come_from_the_mod_revision_until_settled() {
        let t = TaskId::new_v4();
        let mut rec = MetaRec::created(0, t, None);
        rec.broken = Some(BrokenRec {
            instance: 0,
            task: t.0,
            index: 2,
            rev: None,
        });
        assert_eq!(rec.meta(40).generation, 40);
        assert_eq!(rec.meta(40).broken.unwrap().seq, seq(40, 2));
        rec.settle(40);
        assert_eq!(rec.meta(55).generation, 40);
        assert_eq!(rec.meta(55).broken.unwrap().seq, seq(40, 2));
        assert!(seq_at(41) > seq(40, MAX_EVENTS_PER_TXN - 1));
    }
}
