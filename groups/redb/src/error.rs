//! Why the redb group store could not be opened or read: one error type
//! for the store and its tables.

use std::path::PathBuf;

use isthmus_groups::store::ImageError;

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RedbStoreError {
    #[error("cannot create the directory of the group store, or make the store private, at {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the group store {0} is open in another process (each vmd needs its own file: its own --runtime-dir or --store-file)")]
    InUse(PathBuf),
    #[error("the group store {path}: {source}")]
    Open {
        path: PathBuf,
        source: Box<redb::Error>,
    },
    /// Boxed: redb's error is large, and this one travels by value.
    #[error("group store: {0}")]
    Db(Box<redb::Error>),
    #[error(
        "the group store's file is of format {0:?}, not this vmd's: move it away to start empty"
    )]
    Format(String),
    #[error("record {key:?} of the group store cannot be read: {reason}")]
    Record { key: String, reason: String },
    #[error("the group store's records are inconsistent ({0}): move the file away to start empty")]
    Image(#[from] ImageError),
}

impl From<redb::Error> for RedbStoreError {
    fn from(e: redb::Error) -> Self {
        RedbStoreError::Db(Box::new(e))
    }
}
