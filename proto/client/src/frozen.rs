//! The session's cache of frozen group tables, as PVM's tasks kept them:
//! lookups in a frozen group never leave the process. A table is dropped
//! when an event says it changed (a member left or died, the group was
//! destroyed) or when events were lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use isthmus_types::group::{GroupEventKind, GroupTable, Member, SessionEvent};

/// A frozen group's table: members shared, sorted by instance, so a lookup
/// is a binary search and a reference count.
struct FrozenGroup {
    table: Arc<GroupTable>,
    members: Vec<Arc<Member>>,
}

/// Frozen tables by group name.
#[derive(Default)]
pub(crate) struct FrozenTables {
    tables: RwLock<HashMap<String, Arc<FrozenGroup>>>,
    /// Bumped by every event that makes cached tables stale: a table fetched
    /// across a bump may already be out of date and is not cached.
    stale_epoch: AtomicU64,
}

impl FrozenTables {
    /// The epoch to pass to [`FrozenTables::insert`] for a table about to be
    /// fetched.
    pub(crate) fn epoch(&self) -> u64 {
        self.stale_epoch.load(Ordering::SeqCst)
    }

    /// The cached table of `group`, if any.
    pub(crate) fn table(&self, group: &str) -> Option<Arc<GroupTable>> {
        Some(self.tables.read().ok()?.get(group)?.table.clone())
    }

    /// The member at `instance` of a cached group.
    pub(crate) fn member(&self, group: &str, instance: u32) -> Option<Arc<Member>> {
        let tables = self.tables.read().ok()?;
        let g = tables.get(group)?;
        let i = g
            .members
            .binary_search_by_key(&instance, |m| m.instance)
            .ok()?;
        g.members.get(i).cloned()
    }

    /// Caches a table fetched by a call that started at `epoch`, if it is
    /// frozen and intact and no event since then may have made it stale.
    pub(crate) fn insert(&self, table: GroupTable, epoch: u64) -> Arc<GroupTable> {
        let table = Arc::new(table);
        if table.frozen && !table.broken {
            let mut members: Vec<Arc<Member>> =
                table.members.iter().cloned().map(Arc::new).collect();
            members.sort_by_key(|m| m.instance);
            if let Ok(mut tables) = self.tables.write() {
                // Checked under the lock that `on_event` takes to invalidate.
                if self.stale_epoch.load(Ordering::SeqCst) == epoch {
                    tables.insert(
                        table.name.clone(),
                        Arc::new(FrozenGroup {
                            table: table.clone(),
                            members,
                        }),
                    );
                }
            }
        }
        table
    }

    /// Drops the cached table of `group` (this task left it).
    pub(crate) fn forget(&self, group: &str) {
        if let Ok(mut tables) = self.tables.write() {
            self.stale_epoch.fetch_add(1, Ordering::SeqCst);
            tables.remove(group);
        }
    }

    /// Drops every cached table (events may have been missed).
    pub(crate) fn clear(&self) {
        if let Ok(mut tables) = self.tables.write() {
            self.stale_epoch.fetch_add(1, Ordering::SeqCst);
            tables.clear();
        }
    }

    /// Drops what `ev` makes stale.
    pub(crate) fn on_event(&self, ev: &SessionEvent) {
        match ev {
            SessionEvent::Group(e)
                if matches!(
                    e.kind,
                    GroupEventKind::Destroyed | GroupEventKind::MemberDied | GroupEventKind::Left
                ) =>
            {
                self.forget(&e.group)
            }
            SessionEvent::Group(_) => {}
            // Events were lost: every cached table may be stale.
            SessionEvent::Lost => self.clear(),
        }
    }
}
