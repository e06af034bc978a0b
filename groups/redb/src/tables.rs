//! The database file: its tables, reading a whole [`StoreImage`] from it at
//! start, and writing one change's records in one transaction. Blocking
//! calls (redb commits with fsync); the store runs them off the runtime.
//!
//! Records are the groups crate's own types in JSON, whole: a field added
//! to a record is kept without a change here, and the file stays readable
//! with `redb`'s tools and a JSON reader.

use isthmus_groups::store::{Counters, GroupSnapshot, StoreImage, TaskLease};
use isthmus_groups::TaskId;
use redb::{Database, ReadableTable, TableDefinition};

use crate::RedbStoreError;

/// `"counters"` → [`Counters`]; `"format"` → [`FORMAT`].
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Group name → [`GroupSnapshot`] (tombstones included).
const GROUPS: TableDefinition<&str, &[u8]> = TableDefinition::new("groups");
/// Task id (hyphenated) → its [`TaskLease`].
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");

const COUNTERS: &str = "counters";
const FORMAT_KEY: &str = "format";
/// The layout above; a file of another format is refused, not guessed at.
const FORMAT: &[u8] = b"isthmus-groups-1";

/// One change to write: the current record of every touched group and task
/// (`None`: it is gone), and the counters after it.
#[derive(Debug, Default)]
pub(crate) struct Change {
    pub groups: Vec<(String, Option<GroupSnapshot>)>,
    pub tasks: Vec<(TaskId, Option<TaskLease>)>,
    pub counters: Counters,
}

/// Creates the tables if the file is new, checks its format, and reads
/// everything in it.
pub(crate) fn load(db: &Database) -> Result<StoreImage, RedbStoreError> {
    let txn = db.begin_write().map_err(redb::Error::from)?;
    {
        let mut meta = txn.open_table(META).map_err(redb::Error::from)?;
        let format = meta
            .get(FORMAT_KEY)
            .map_err(redb::Error::from)?
            .map(|v| v.value().to_vec());
        match format {
            None => {
                meta.insert(FORMAT_KEY, FORMAT).map_err(redb::Error::from)?;
            }
            Some(f) if f == FORMAT => {}
            Some(f) => {
                return Err(RedbStoreError::Format(
                    String::from_utf8_lossy(&f).into_owned(),
                ))
            }
        }
        txn.open_table(GROUPS).map_err(redb::Error::from)?;
        txn.open_table(TASKS).map_err(redb::Error::from)?;
    }
    txn.commit().map_err(redb::Error::from)?;

    let txn = db.begin_read().map_err(redb::Error::from)?;
    let mut image = StoreImage::default();
    let meta = txn.open_table(META).map_err(redb::Error::from)?;
    if let Some(v) = meta.get(COUNTERS).map_err(redb::Error::from)? {
        image.counters = decode(COUNTERS, v.value())?;
    }
    let groups = txn.open_table(GROUPS).map_err(redb::Error::from)?;
    for row in groups.iter().map_err(redb::Error::from)? {
        let (name, value) = row.map_err(redb::Error::from)?;
        let group: GroupSnapshot = decode(name.value(), value.value())?;
        image.groups.push(group);
    }
    let tasks = txn.open_table(TASKS).map_err(redb::Error::from)?;
    for row in tasks.iter().map_err(redb::Error::from)? {
        let (key, value) = row.map_err(redb::Error::from)?;
        let task: TaskId = key.value().parse().map_err(|e| RedbStoreError::Record {
            key: key.value().to_string(),
            reason: format!("{e}"),
        })?;
        image
            .leases
            .push((task, decode(key.value(), value.value())?));
    }
    Ok(image)
}

/// Writes `change` in one transaction, committed with redb's default
/// durability (fsync before the commit returns).
pub(crate) fn write(db: &Database, change: &Change) -> Result<(), RedbStoreError> {
    let txn = db.begin_write().map_err(redb::Error::from)?;
    {
        let mut groups = txn.open_table(GROUPS).map_err(redb::Error::from)?;
        for (name, record) in &change.groups {
            match record {
                Some(g) => {
                    groups
                        .insert(name.as_str(), encode(g)?.as_slice())
                        .map_err(redb::Error::from)?;
                }
                None => {
                    groups.remove(name.as_str()).map_err(redb::Error::from)?;
                }
            }
        }
        let mut tasks = txn.open_table(TASKS).map_err(redb::Error::from)?;
        for (task, record) in &change.tasks {
            let key = task.to_string();
            match record {
                Some(l) => {
                    tasks
                        .insert(key.as_str(), encode(l)?.as_slice())
                        .map_err(redb::Error::from)?;
                }
                None => {
                    tasks.remove(key.as_str()).map_err(redb::Error::from)?;
                }
            }
        }
        let mut meta = txn.open_table(META).map_err(redb::Error::from)?;
        meta.insert(COUNTERS, encode(&change.counters)?.as_slice())
            .map_err(redb::Error::from)?;
    }
    txn.commit().map_err(redb::Error::from)?;
    Ok(())
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, RedbStoreError> {
    serde_json::to_vec(value).map_err(|e| RedbStoreError::Record {
        key: String::new(),
        reason: e.to_string(),
    })
}

fn decode<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, RedbStoreError> {
    serde_json::from_slice(bytes).map_err(|e| RedbStoreError::Record {
        key: key.to_string(),
        reason: e.to_string(),
    })
}
