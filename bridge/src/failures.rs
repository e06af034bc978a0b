//! The failure set: peer processes that are gone, why, and whether they left
//! in order (BYE) or failed. Operations that involve them fail.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use crate::sync::lock;

#[derive(Default)]
pub(crate) struct FailureSet {
    /// Process → (reason, left in order).
    gone: Mutex<HashMap<Uuid, (String, bool)>>,
}

impl FailureSet {
    /// Record `process` as gone; false if it already was (the first reason stays).
    pub(crate) fn record(&self, process: Uuid, reason: &str, orderly: bool) -> bool {
        let mut gone = lock(&self.gone);
        if gone.contains_key(&process) {
            return false;
        }
        gone.insert(process, (reason.to_owned(), orderly));
        true
    }

    /// Why `process` is gone, if it is.
    pub(crate) fn reason(&self, process: Uuid) -> Option<String> {
        lock(&self.gone).get(&process).map(|(r, _)| r.clone())
    }

    /// Every gone process: (process, reason, left in order).
    pub(crate) fn all(&self) -> Vec<(Uuid, String, bool)> {
        lock(&self.gone)
            .iter()
            .map(|(p, (r, o))| (*p, r.clone(), *o))
            .collect()
    }
}
