//! Where the resource manager's records live in etcd, under the virtual
//! machine's prefix (beside the group store's `P/g/`, `P/m/`, `P/t/`, …).
//!
//! ```text
//! P/rm/h/<host>             host row (JSON), on the lease of that host's vmd
//! P/rm/j/<job:016x>         job row (JSON), on the lease of the vmd that runs it
//! P/rm/next-job             the last job id given out (a counter, CAS)
//! P/rm/ev                   the last batch of events a vmd published (JSON); watched
//! P/rm/o/<host>/<order>     an order for the vmd of <host>, on the asker's lease
//! P/rm/a/<order>            its answer, on the answerer's lease
//! ```
//!
//! Host names are 1–64 of `[A-Za-z0-9._-]` (`isthmus_rm::valid_name`), so
//! `/` ends one unambiguously.

use isthmus_types::job::JobId;

#[derive(Clone, Debug)]
pub(crate) struct Keys {
    /// `P/rm/`
    root: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            root: format!("{}/rm/", prefix.trim_end_matches('/')),
        }
    }

    pub(crate) fn hosts(&self) -> String {
        format!("{}h/", self.root)
    }

    pub(crate) fn host(&self, name: &str) -> String {
        format!("{}h/{name}", self.root)
    }

    pub(crate) fn host_of(&self, key: &[u8]) -> Option<String> {
        let rest = key.strip_prefix(self.hosts().as_bytes())?;
        String::from_utf8(rest.to_vec()).ok()
    }

    pub(crate) fn jobs(&self) -> String {
        format!("{}j/", self.root)
    }

    pub(crate) fn job(&self, id: JobId) -> String {
        format!("{}j/{id:016x}", self.root)
    }

    pub(crate) fn job_of(&self, key: &[u8]) -> Option<JobId> {
        let rest = key.strip_prefix(self.jobs().as_bytes())?;
        JobId::from_str_radix(std::str::from_utf8(rest).ok()?, 16).ok()
    }

    pub(crate) fn next_job(&self) -> String {
        format!("{}next-job", self.root)
    }

    pub(crate) fn events(&self) -> String {
        format!("{}ev", self.root)
    }

    pub(crate) fn orders_for(&self, host: &str) -> String {
        format!("{}o/{host}/", self.root)
    }

    pub(crate) fn order(&self, host: &str, id: &str) -> String {
        format!("{}o/{host}/{id}", self.root)
    }

    pub(crate) fn answer(&self, id: &str) -> String {
        format!("{}a/{id}", self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_stay_apart() {
        let k = Keys::new("/isthmus/vm/");
        assert_eq!(k.host("b"), "/isthmus/vm/rm/h/b");
        assert_eq!(
            k.host_of(k.host("host-b.x").as_bytes()).as_deref(),
            Some("host-b.x")
        );
        assert_eq!(k.job_of(k.job(0x2a).as_bytes()), Some(0x2a));
        assert_eq!(k.job_of(b"/isthmus/vm/rm/j/zz"), None);
        assert!(!k.order("b", "1").starts_with(&k.orders_for("bb")));
    }
}
