//! Where each record lives in etcd, under the virtual machine's prefix.
//!
//! ```text
//! P/g/<group>                    group meta: generation, frozen, broken, slots (JSON);
//!                                its mod-revision is the group's CAS revision
//! P/m/<group>\0<instance:08x>    member record (binary: task, host, endpoint)
//! P/t/<task>                     live task (JSON: host), attached to its vmd's etcd lease
//! P/tm/<task>/<group>            index: the groups a task is in (revocation, expiry)
//! P/b/<group>                    the group's open barrier episode (JSON: id, generation,
//!                                count, waiting tasks); absent when none is open
//! P/log                          the changes of the last transaction (JSON); watched
//! ```
//!
//! Group names cannot contain control characters (`validate::name`), so
//! `\0` ends a name unambiguously inside member keys; instances are
//! zero-padded hex so that keys sort by instance.

use isthmus_groups::TaskId;

/// Key builder for one virtual machine's prefix.
#[derive(Clone, Debug)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        let mut prefix = prefix.trim_end_matches('/').to_string();
        prefix.push('/');
        Keys { prefix }
    }

    pub(crate) fn meta(&self, group: &str) -> String {
        format!("{}g/{group}", self.prefix)
    }

    pub(crate) fn metas(&self) -> String {
        format!("{}g/", self.prefix)
    }

    /// The group name of a meta key.
    pub(crate) fn group_of_meta<'k>(&self, key: &'k [u8]) -> Option<&'k str> {
        let rest = key.strip_prefix(self.metas().as_bytes())?;
        std::str::from_utf8(rest).ok()
    }

    pub(crate) fn member(&self, group: &str, instance: u32) -> String {
        format!("{}m/{group}\0{instance:08x}", self.prefix)
    }

    pub(crate) fn members(&self, group: &str) -> String {
        format!("{}m/{group}\0", self.prefix)
    }

    pub(crate) fn all_members(&self) -> String {
        format!("{}m/", self.prefix)
    }

    /// `(group, instance)` of a member key.
    pub(crate) fn member_of<'k>(&self, key: &'k [u8]) -> Option<(&'k str, u32)> {
        let rest = key.strip_prefix(self.all_members().as_bytes())?;
        let at = rest.iter().rposition(|b| *b == 0)?;
        let (group, hex) = rest.split_at(at);
        let hex = std::str::from_utf8(hex.get(1..)?).ok()?;
        Some((
            std::str::from_utf8(group).ok()?,
            u32::from_str_radix(hex, 16).ok()?,
        ))
    }

    /// The range the change-log watch covers: metas, the log and members,
    /// and no other key (`g/` < `log` < `m/`, nothing else between).
    pub(crate) fn watched(&self) -> (String, Vec<u8>) {
        (self.metas(), prefix_end(&self.all_members()))
    }

    pub(crate) fn task(&self, task: TaskId) -> String {
        format!("{}t/{task}", self.prefix)
    }

    pub(crate) fn tasks(&self) -> String {
        format!("{}t/", self.prefix)
    }

    /// The task of a task key.
    pub(crate) fn task_of(&self, key: &[u8]) -> Option<TaskId> {
        let rest = key.strip_prefix(self.tasks().as_bytes())?;
        std::str::from_utf8(rest).ok()?.parse().ok()
    }

    pub(crate) fn task_group(&self, task: TaskId, group: &str) -> String {
        format!("{}tm/{task}/{group}", self.prefix)
    }

    pub(crate) fn task_groups(&self, task: TaskId) -> String {
        format!("{}tm/{task}/", self.prefix)
    }

    pub(crate) fn all_task_groups(&self) -> String {
        format!("{}tm/", self.prefix)
    }

    /// `(task, group)` of an index key.
    pub(crate) fn task_group_of<'k>(&self, key: &'k [u8]) -> Option<(TaskId, &'k str)> {
        let rest = key.strip_prefix(self.all_task_groups().as_bytes())?;
        let rest = std::str::from_utf8(rest).ok()?;
        let (task, group) = rest.split_once('/')?;
        Some((task.parse().ok()?, group))
    }

    pub(crate) fn barrier(&self, group: &str) -> String {
        format!("{}b/{group}", self.prefix)
    }

    pub(crate) fn log(&self) -> String {
        format!("{}log", self.prefix)
    }
}

/// The first key after every key that starts with `prefix` (etcd's range end
/// for a prefix).
pub(crate) fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_by_instance() {
        let k = Keys::new("/isthmus/vm1/");
        let t = TaskId::new_v4();
        assert_eq!(k.group_of_meta(k.meta("a/b c").as_bytes()), Some("a/b c"));
        assert_eq!(k.task_of(k.task(t).as_bytes()), Some(t));
        assert_eq!(
            k.task_group_of(k.task_group(t, "x/y").as_bytes()),
            Some((t, "x/y"))
        );
        assert!(k.member("g", 2) < k.member("g", 10));
        assert!(k.member("g", 0xffff) < k.member("g", 0x10000));
        // A group whose name extends another's is not inside its range.
        assert!(!k.member("ab", 0).starts_with(&k.members("a")));
        assert_eq!(prefix_end("a/"), b"a0".to_vec());
        assert_eq!(
            k.member_of(k.member("a/b c", 0x1f).as_bytes()),
            Some(("a/b c", 0x1f))
        );
        let (from, to) = k.watched();
        for key in [k.meta("g"), k.log(), k.member("g", 3)] {
            assert!(key.as_bytes() >= from.as_bytes() && key.as_bytes() < to.as_slice());
        }
        for key in [k.task(t), k.task_group(t, "g"), k.barrier("g")] {
            assert!(!(key.as_bytes() >= from.as_bytes() && key.as_bytes() < to.as_slice()));
        }
    }
}
