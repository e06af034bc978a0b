//! [`JobStore`]: the job table of a one-host vmd's resource manager, kept
//! in an embedded redb file so that a vmd restarted after `kill -9` still
//! lists the jobs that had ended (state, exit status, owner), reports the
//! ones that were running as lost, and gives out no job id twice.
//!
//! Rows are the resource manager's [`Job`]s in JSON, whole (the rows a
//! federation publishes in etcd), keyed by job id; the meta table holds the
//! format and the highest job id given out. A writer task follows the
//! manager's job-table version ([`ResourceManager::job_changes`]): at each
//! change it takes the jobs changed since the last
//! ([`ResourceManager::take_job_changes`]), writes their rows and deletes
//! the rows of jobs the manager pruned (it keeps the last 1000 ended jobs),
//! in one transaction committed with fsync; changes made meanwhile go in
//! the next one. A spawn is answered once its row is written
//! ([`ResourceManager::set_durable`]).
//!
//! Why a file of its own (`jobs.redb` beside `groups.redb`) and not a table
//! in the group store's: a redb file is opened once per process, and its
//! `Database` is the group store's private state (its writer batches group
//! changes and checks its own format); sharing it would tie the two
//! crates' formats and writers together. Two files cost a second fsync
//! when a job changes, which is rare beside group traffic.
//!
//! A write that fails (disk full, I/O error) is logged and its rows are
//! written again with the next change; the change itself stands in memory.
//!
//! It sits in `vmd/rm/` because it stores the resource manager's job table
//! for a one-host vmd, as `groups/redb` stores the groups.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use isthmus_rm::{Job, JobId, ResourceManager};
use redb::{Database, ReadableTable, TableDefinition};
use tokio::sync::watch;
use tracing::{error, info};

/// `"format"` → [`FORMAT`]; `"last_id"` → the highest job id given out (JSON).
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Job id → the [`Job`] in JSON.
const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");

const FORMAT_KEY: &str = "format";
const LAST_ID: &str = "last_id";
/// The layout above; a file of another format is refused, not guessed at.
const FORMAT: &[u8] = b"isthmus-jobs-1";

/// Why the job store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum JobStoreError {
    #[error("cannot create the directory of the job store, or make the store private, at {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the job store {0} is open in another process (each vmd needs its own file: its own --runtime-dir or --jobs-file)")]
    InUse(PathBuf),
    #[error("the job store {path}: {source}")]
    Open {
        path: PathBuf,
        source: Box<redb::Error>,
    },
    /// Boxed: redb's error is large, and this one travels by value.
    #[error("job store: {0}")]
    Db(Box<redb::Error>),
    #[error(
        "the job store's file is of format {0:?}, not this vmd's: move it away to start empty"
    )]
    Format(String),
    #[error("record {key} of the job store cannot be read: {reason}")]
    Record { key: String, reason: String },
}

/// redb's errors of each step (transaction, table, storage, commit).
macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for JobStoreError {
            fn from(e: $t) -> Self {
                JobStoreError::Db(Box::new(e.into()))
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// What the file held at open: the previous run's job rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    pub jobs: Vec<Job>,
    /// The highest job id given out (ids go on after it).
    pub last_id: JobId,
}

/// The open job file (see the crate docs).
pub struct JobStore {
    db: Arc<Database>,
    path: PathBuf,
}

impl JobStore {
    /// Opens (or creates) the job file at `path`, creating its directory if
    /// needed, and reads what it holds.
    pub fn open(path: &Path) -> Result<(Self, Restored), JobStoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| JobStoreError::Dir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let db = Database::create(path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => JobStoreError::InUse(path.to_path_buf()),
            e => JobStoreError::Open {
                path: path.to_path_buf(),
                source: Box::new(e.into()),
            },
        })?;
        // Jobs are their owners': only the vmd's user reads the file.
        {
            use std::os::unix::fs::PermissionsExt;
            let owner_only = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(path, owner_only).map_err(|source| JobStoreError::Dir {
                path: path.to_path_buf(),
                source,
            })?;
        }
        let restored = load(&db)?;
        info!(path = %path.display(), jobs = restored.jobs.len(), last_id = restored.last_id, "job store open");
        Ok((
            JobStore {
                db: Arc::new(db),
                path: path.to_path_buf(),
            },
            restored,
        ))
    }

    /// The file this store writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Puts the previous run's rows back into `rm` (before any tasker
    /// registers: the unfinished jobs are lost and announced so) and keeps
    /// its job table written from now on, in a task of its own.
    pub fn keep(self, rm: &ResourceManager, restored: Restored) -> Kept {
        let (tx, written) = watch::channel(0);
        // First: the restored rows' changes (the lost ones) are then kept
        // for the writer.
        rm.set_durable(written.clone());
        let lost = rm.restore_jobs(restored.jobs, restored.last_id);
        tokio::spawn(write_along(self.db, rm.clone(), restored.last_id, tx));
        Kept { lost, written }
    }
}

/// A job table kept in its file.
#[derive(Clone, Debug)]
pub struct Kept {
    /// How many jobs of the previous run were lost (had not ended).
    pub lost: u32,
    /// The last version of the manager's job table written (or given up
    /// on after a failed write).
    pub written: watch::Receiver<u64>,
}

impl Kept {
    /// Returns once the manager's job table as it is now is written.
    pub async fn settled(&mut self, rm: &ResourceManager) {
        let version = *rm.job_changes().borrow();
        let _ = self.written.wait_for(|w| *w >= version).await;
    }
}

/// Writes the manager's job table's changes as they come (see the crate
/// docs); tells `written` which version is on disk (or was given up on).
async fn write_along(
    db: Arc<Database>,
    rm: ResourceManager,
    mut last_id: JobId,
    written: watch::Sender<u64>,
) {
    let mut changes = rm.job_changes();
    // Rows to write (`None`: to delete), kept over a failed write.
    let mut pending: BTreeMap<JobId, Option<Job>> = BTreeMap::new();
    loop {
        changes.borrow_and_update();
        let taken = rm.take_job_changes();
        pending.extend(taken.changed.into_iter().map(|j| (j.id, Some(j))));
        pending.extend(taken.gone.into_iter().map(|id| (id, None)));
        if !pending.is_empty() || taken.last_id != last_id {
            let db = Arc::clone(&db);
            let batch = std::mem::take(&mut pending);
            let top = taken.last_id;
            let outcome = tokio::task::spawn_blocking(move || {
                let r = write(&db, &batch, top);
                (r, batch)
            })
            .await;
            match outcome {
                Ok((Ok(()), _)) => last_id = top,
                // Written again with the next change.
                Ok((Err(e), batch)) => {
                    error!(error = %e, "writing the job table");
                    pending = batch;
                }
                // The batch is gone with the task: the rows it held are
                // written again when those jobs change next.
                Err(e) => error!(error = %e, "the job table's writer failed"),
            }
        }
        written.send_replace(taken.version);
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// Creates the tables if the file is new, checks its format, and reads
/// every row.
fn load(db: &Database) -> Result<Restored, JobStoreError> {
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(META)?;
        let format = meta.get(FORMAT_KEY)?.map(|v| v.value().to_vec());
        match format {
            None => {
                meta.insert(FORMAT_KEY, FORMAT)?;
            }
            Some(f) if f == FORMAT => {}
            Some(f) => {
                return Err(JobStoreError::Format(
                    String::from_utf8_lossy(&f).into_owned(),
                ))
            }
        }
        txn.open_table(JOBS)?;
    }
    txn.commit()?;

    let txn = db.begin_read()?;
    let mut restored = Restored::default();
    let meta = txn.open_table(META)?;
    if let Some(v) = meta.get(LAST_ID)? {
        restored.last_id =
            serde_json::from_slice(v.value()).map_err(|e| JobStoreError::Record {
                key: LAST_ID.into(),
                reason: e.to_string(),
            })?;
    }
    let jobs = txn.open_table(JOBS)?;
    for row in jobs.iter()? {
        let (id, value) = row?;
        let job: Job =
            serde_json::from_slice(value.value()).map_err(|e| JobStoreError::Record {
                key: format!("job {}", id.value()),
                reason: e.to_string(),
            })?;
        if job.id != id.value() {
            return Err(JobStoreError::Record {
                key: format!("job {}", id.value()),
                reason: format!("it holds job {}", job.id),
            });
        }
        restored.jobs.push(job);
    }
    Ok(restored)
}

/// One transaction: the changed rows, the gone rows deleted, the id
/// counter.
fn write(
    db: &Database,
    batch: &BTreeMap<JobId, Option<Job>>,
    last_id: JobId,
) -> Result<(), JobStoreError> {
    let txn = db.begin_write()?;
    {
        let mut jobs = txn.open_table(JOBS)?;
        for (id, job) in batch {
            match job {
                Some(job) => {
                    let row = serde_json::to_vec(job).map_err(|e| JobStoreError::Record {
                        key: format!("job {id}"),
                        reason: e.to_string(),
                    })?;
                    jobs.insert(*id, row.as_slice())?;
                }
                None => {
                    jobs.remove(*id)?;
                }
            }
        }
        let mut meta = txn.open_table(META)?;
        let last = serde_json::to_vec(&last_id).map_err(|e| JobStoreError::Record {
            key: LAST_ID.into(),
            reason: e.to_string(),
        })?;
        meta.insert(LAST_ID, last.as_slice())?;
    }
    txn.commit()?;
    Ok(())
}

/// The rows in the file at `path` (a store not open elsewhere): for tests
/// and tools that look at what a vmd left.
pub fn read(path: &Path) -> Result<Restored, JobStoreError> {
    let db = Database::open(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => JobStoreError::InUse(path.to_path_buf()),
        e => JobStoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(e.into()),
        },
    })?;
    load(&db)
}
