//! The vmd's runtime directory: where its Unix socket (`vmd.sock`) and its
//! loopback token (`token`) live.
//!
//! The directory is the first gate: it is created 0700 (0711 when other
//! local users are allowed in, so that they can reach the socket by path but
//! not list the directory), and an existing one is used only if it is a real
//! directory (not a symlink) owned by the vmd's uid and writable by nobody
//! else — otherwise another user could have planted a socket or a token
//! there. The socket's peers are still checked one by one (SO_PEERCRED, in
//! [`super::identity`]); the directory's mode only keeps strangers away.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use isthmus_types::env;

/// Why a runtime directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeDirError {
    #[error("runtime directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("runtime directory {path} is a symbolic link; refusing to use it")]
    Symlink { path: PathBuf },
    #[error("runtime directory {path} is not a directory")]
    NotDir { path: PathBuf },
    #[error("runtime directory {path} is owned by uid {owner}, not by this vmd's uid {me}")]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error("runtime directory {path} has mode {mode:o}: writable by other users; chmod go-w it or choose another --runtime-dir")]
    Mode { path: PathBuf, mode: u32 },
}

/// A checked runtime directory.
#[derive(Clone, Debug)]
pub struct RuntimeDir {
    path: PathBuf,
}

impl RuntimeDir {
    /// Creates (or checks) `path` for this process's uid. `shared`: other
    /// local users are allowed in (mode 0711 instead of 0700).
    pub fn prepare(path: &Path, shared: bool) -> Result<Self, RuntimeDirError> {
        let io = |source| RuntimeDirError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mode = if shared { 0o711 } else { 0o700 };
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                std::fs::DirBuilder::new()
                    .mode(mode)
                    .create(path)
                    .map_err(io)?;
            }
            Err(e) => return Err(io(e)),
            Ok(_) => {}
        }
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        let path_buf = path.to_path_buf();
        if meta.file_type().is_symlink() {
            return Err(RuntimeDirError::Symlink { path: path_buf });
        }
        if !meta.is_dir() {
            return Err(RuntimeDirError::NotDir { path: path_buf });
        }
        let me = own_uid();
        if meta.uid() != me {
            return Err(RuntimeDirError::Owner {
                path: path_buf,
                owner: meta.uid(),
                me,
            });
        }
        if meta.mode() & 0o022 != 0 {
            return Err(RuntimeDirError::Mode {
                path: path_buf,
                mode: meta.mode() & 0o7777,
            });
        }
        // Ours and safe: set exactly the mode this run asks for (a directory
        // left 0711 by a run that allowed other users closes again).
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io)?;
        Ok(Self { path: path_buf })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The vmd's Unix socket in here.
    pub fn socket(&self) -> PathBuf {
        self.path.join(env::SOCKET_FILE)
    }

    /// The loopback token file in here.
    pub fn token_file(&self) -> PathBuf {
        self.path.join(env::TOKEN_FILE)
    }

    /// Writes a fresh random token (hex of 32 bytes) to the token file,
    /// mode 0600, replacing any earlier one; returns it.
    pub fn write_token(&self) -> Result<String, RuntimeDirError> {
        let path = self.token_file();
        let io = |source| RuntimeDirError::Io {
            path: path.clone(),
            source,
        };
        let token = random_hex(32);
        // A new file each start (never follow a link someone left there).
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        f.write_all(token.as_bytes()).map_err(io)?;
        Ok(token)
    }
}

/// The default runtime directory of this process's uid:
/// `$XDG_RUNTIME_DIR/isthmus`, else `/tmp/isthmus-<uid>`.
pub fn default_path() -> PathBuf {
    env::default_runtime_dir()
}

/// This process's real uid.
pub fn own_uid() -> u32 {
    // SAFETY: getuid(2) cannot fail and touches no memory of ours.
    unsafe { libc::getuid() }
}

/// `bytes` random bytes as lower-case hex.
pub fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "isthmus-rtdir-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ))
    }

    #[test]
    fn creates_private_directory_and_token() {
        let p = temp("new");
        let dir = RuntimeDir::prepare(&p, false).expect("prepare");
        let mode = std::fs::metadata(&p).expect("meta").mode() & 0o777;
        assert_eq!(mode, 0o700);
        let token = dir.write_token().expect("token");
        assert_eq!(token.len(), 64);
        let tmode = std::fs::metadata(dir.token_file()).expect("meta").mode() & 0o777;
        assert_eq!(tmode, 0o600);
        assert_eq!(
            std::fs::read_to_string(dir.token_file()).expect("read"),
            token
        );
        let _ = std::fs::remove_dir_all(&p);
    }

    #[test]
    fn refuses_world_writable_and_symlinked_directories() {
        let p = temp("ww");
        std::fs::create_dir_all(&p).expect("mkdir");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(matches!(
            RuntimeDir::prepare(&p, false),
            Err(RuntimeDirError::Mode { .. })
        ));
        let link = temp("link");
        std::os::unix::fs::symlink(&p, &link).expect("symlink");
        assert!(matches!(
            RuntimeDir::prepare(&link, false),
            Err(RuntimeDirError::Symlink { .. })
        ));
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_dir_all(&p);
    }
}
