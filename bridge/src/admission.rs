//! Who may open a data connection to this engine: the public keys of the
//! members of the remote groups it holds intercommunicators with (learnt
//! when each intercommunicator is formed), and the connections that arrived
//! before the table naming their process — those wait, bounded in number
//! ([`MAX_PENDING`]) and in time, and are refused when nothing names them.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use uuid::Uuid;

use crate::endpoint::{Endpoint, PUBLIC_KEY_LEN};
use crate::error::Result;
use crate::sync::{cv_wait, lock};

/// How many connections may wait at once for their process to be named.
pub(crate) const MAX_PENDING: usize = 64;

#[derive(Default)]
struct State {
    /// Process → public key, from the remote tables of our intercomms.
    /// Never shrinks: a process's key never changes, and the entries are
    /// bounded by the remote members this process formed intercomms with.
    keys: HashMap<Uuid, [u8; PUBLIC_KEY_LEN]>,
    pending: usize,
    closed: bool,
}

#[derive(Default)]
pub(crate) struct Admission {
    state: Mutex<State>,
    named: Condvar,
}

impl Admission {
    /// Accept connections from the processes of `remote` (a remote group's
    /// table). An endpoint whose id is not its key's is refused.
    pub(crate) fn learn(&self, remote: &[Endpoint]) -> Result<()> {
        for ep in remote {
            ep.check_identity()?;
        }
        let mut st = lock(&self.state);
        for ep in remote {
            st.keys.insert(ep.process, ep.public_key);
        }
        drop(st);
        self.named.notify_all();
        Ok(())
    }

    /// The public key of `process` if a table we hold names it (no waiting).
    pub(crate) fn known(&self, process: Uuid) -> Option<[u8; PUBLIC_KEY_LEN]> {
        lock(&self.state).keys.get(&process).copied()
    }

    /// The public key of `process`, waiting until `deadline` for a table that
    /// names it. Err says why the connection is refused.
    pub(crate) fn key_of(
        &self,
        process: Uuid,
        deadline: Instant,
    ) -> std::result::Result<[u8; PUBLIC_KEY_LEN], String> {
        let mut st = lock(&self.state);
        if let Some(k) = st.keys.get(&process) {
            return Ok(*k);
        }
        if st.pending >= MAX_PENDING {
            return Err(format!(
                "unknown process, and {MAX_PENDING} connections already wait to be named"
            ));
        }
        st.pending += 1;
        let outcome = loop {
            if st.closed {
                break Err("engine shutting down".to_owned());
            }
            if let Some(k) = st.keys.get(&process) {
                break Ok(*k);
            }
            let (g, timed_out) = cv_wait(&self.named, st, Some(deadline));
            st = g;
            if timed_out && !st.keys.contains_key(&process) {
                break Err(
                    "no remote group we hold names this process (waited for its table until the deadline)"
                        .to_owned(),
                );
            }
        };
        st.pending -= 1;
        outcome
    }

    /// Engine shutdown: refuse every waiting connection.
    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
        self.named.notify_all();
    }
}
