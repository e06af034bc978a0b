//! Conversions from the group service's own types to the wire types of
//! `isthmus-proto` (its errors become statuses in [`crate::status`]).

use isthmus_groups::{GroupError, GroupEvent, GroupEventKind, GroupSummary, GroupTable, Member};
use isthmus_proto as pb;

pub fn member(m: &Member) -> pb::Member {
    pb::Member {
        instance: m.instance,
        task: m.task.to_string(),
        host: m.host.clone(),
        endpoint: m.endpoint.clone(),
    }
}

pub fn table(t: &GroupTable) -> pb::GroupTable {
    pb::GroupTable {
        group: t.name.clone(),
        generation: t.generation,
        frozen: t.frozen,
        broken: t.broken,
        members: t.members.iter().map(member).collect(),
    }
}

pub fn summary(s: &GroupSummary) -> pb::GroupSummary {
    pb::GroupSummary {
        group: s.name.clone(),
        size: s.size,
        frozen: s.frozen,
        broken: s.broken,
    }
}

pub fn group_event(e: &GroupEvent) -> pb::Event {
    let kind = match e.kind {
        GroupEventKind::Joined => pb::GroupEventKind::Joined,
        GroupEventKind::Left => pb::GroupEventKind::Left,
        GroupEventKind::Frozen => pb::GroupEventKind::Frozen,
        GroupEventKind::Destroyed => pb::GroupEventKind::Destroyed,
        GroupEventKind::MemberDied => pb::GroupEventKind::MemberDied,
    };
    pb::Event {
        seq: e.seq,
        kind: Some(pb::event::Kind::Group(pb::GroupEvent {
            kind: kind as i32,
            group: e.group.clone(),
            instance: e.instance.unwrap_or(0),
            task: e.task.map(|t| t.to_string()).unwrap_or_default(),
            size: e.size,
            group_broken: e.group_broken,
        })),
    }
}

/// Whether an event concerns one of `groups` (an empty filter matches all).
pub fn event_matches(filter: &[String], e: &GroupEvent) -> bool {
    filter.is_empty() || filter.contains(&e.group)
}

/// Groups listed per page when the client names no page size.
pub const DEFAULT_PAGE: usize = 1000;
/// Largest page: 5000 summaries of at most ~270 bytes stay far below the
/// 4 MiB message limit.
pub const MAX_PAGE: usize = 5000;

/// One page of the group listing, as `ListGroups` asks for it.
pub async fn group_page(
    groups: &isthmus_groups::Groups,
    req: &pb::ListGroupsRequest,
) -> Result<pb::GroupList, GroupError> {
    let size = match usize::try_from(req.page_size).unwrap_or(MAX_PAGE) {
        0 => DEFAULT_PAGE,
        n => n.min(MAX_PAGE),
    };
    let (page, more) = groups.list_page(&req.page_token, size).await?;
    let next_page_token = match page.last() {
        Some(last) if more => last.name.clone(),
        _ => String::new(),
    };
    Ok(pb::GroupList {
        groups: page.iter().map(summary).collect(),
        next_page_token,
    })
}
