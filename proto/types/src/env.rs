//! The `ISTHMUS_*` environment variables, the runtime directory's layout and
//! the default address, defined once.
//!
//! Nothing secret travels in the environment: [`VMD_ADDR`] is an address and
//! [`TOKEN_FILE_ENV`] the *path* of a 0600 file, never a token.

use std::path::PathBuf;

/// Where clients (the bridge, the console, taskers) find their vmd:
/// `unix:/path/to/vmd.sock`, `host:port`, `http://host:port` (loopback, with
/// the token file) or `https://host:port` (mutual TLS, joining vmds).
pub const VMD_ADDR: &str = "ISTHMUS_VMD";

/// The TCP address `vmd` listens on besides its Unix socket (its `--listen`
/// flag); unset: the Unix socket only.
pub const VMD_LISTEN: &str = "ISTHMUS_VMD_LISTEN";

/// The vmd keeps group tables in etcd at these client URLs (comma-separated).
pub const ETCD: &str = "ISTHMUS_ETCD";

/// The IP address a process's data path (the bridge) listens on, port
/// picked by the kernel; `0.0.0.0` or `::` for all (see `isthmus_bridge::address`).
pub const DATA_ADDR: &str = "ISTHMUS_DATA_ADDR";

/// IP addresses the data path publishes instead of its listen address.
pub const DATA_ADVERTISE: &str = "ISTHMUS_DATA_ADVERTISE";

/// The vmd's runtime directory (its `--runtime-dir` flag), also where
/// clients look for the default socket and token file.
pub const RUNTIME_DIR: &str = "ISTHMUS_RUNTIME_DIR";

/// The path of the file holding the token for a vmd's TCP listener.
pub const TOKEN_FILE_ENV: &str = "ISTHMUS_TOKEN_FILE";

/// How long a task's session tries to resume after its vmd went away
/// (seconds; `0`: never), e.g. while the vmd is restarted. Default 60.
pub const RESUME_WINDOW: &str = "ISTHMUS_RESUME_WINDOW";

/// Other users (names or decimal uids, comma-separated) that the groups a
/// job registers let join and reach by their qualified name
/// (`owner/group`). Unset or empty: the owner's own uid only.
pub const ALLOW: &str = "ISTHMUS_ALLOW";

/// The vmd's Unix socket, in its runtime directory.
pub const SOCKET_FILE: &str = "vmd.sock";

/// The token for the vmd's TCP listener (mode 0600), in its runtime directory.
pub const TOKEN_FILE: &str = "token";

/// The job id the resource manager gave a spawned job, set in each rank.
pub const JOB: &str = "ISTHMUS_JOB";

/// The tasker's Unix socket on which rank shims report starts and exits.
pub const TASKER_SOCKET: &str = "ISTHMUS_TASKER_SOCKET";

/// Which environment variable holds a rank's number under this launcher.
pub const RANK_VAR: &str = "ISTHMUS_RANK_VAR";

/// A rank's number under the exec launcher.
pub const RANK: &str = "ISTHMUS_RANK";

/// In a job's environment: asks its tasker to preload the `libisthmus.so`
/// of the job's implementation into every rank (`MPI_Comm_spawn`'s
/// children). The tasker replaces the value with the library's path; the
/// rank shim moves it into the program's `LD_PRELOAD`.
pub const LIBISTHMUS: &str = "ISTHMUS_LIBISTHMUS";

/// In a spawned job's environment (`MPI_Comm_spawn`): the port its parents
/// accept on; each child connects to it in `MPI_Init`.
pub const SPAWN_PORT: &str = "ISTHMUS_SPAWN_PORT";

/// In a spawned job's environment: seconds the children have, from their
/// `MPI_Init`, to meet their parents (what is left of the spawn's deadline).
pub const SPAWN_TIMEOUT: &str = "ISTHMUS_SPAWN_TIMEOUT";

/// In a job's environment (`MPI_Comm_spawn_multiple`'s children): the
/// command each rank runs, for the rank shim ([`crate::job::RankCommands`]).
pub const SPAWN_APPS: &str = "ISTHMUS_SPAWN_APPS";

/// In a rank of a spawned job: the index of the command it runs
/// (`MPI_Comm_spawn_multiple`), its `MPI_APPNUM`; set by the rank shim.
pub const SPAWN_APPNUM: &str = "ISTHMUS_SPAWN_APPNUM";

/// In a spawned job that is the second part of its children's world
/// (`MPI_Comm_spawn_multiple` of commands of two implementations): the
/// index of its first command in the call, added to [`SPAWN_APPNUM`].
pub const SPAWN_APPNUM_BASE: &str = "ISTHMUS_SPAWN_APPNUM_BASE";

/// The runtime directory: [`RUNTIME_DIR`], else `$XDG_RUNTIME_DIR/isthmus`,
/// else `/tmp/isthmus-<uid>`.
pub fn default_runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(xdg) => PathBuf::from(xdg).join("isthmus"),
        None => PathBuf::from(format!("/tmp/isthmus-{}", own_uid())),
    }
}

/// The default vmd address: the Unix socket in [`default_runtime_dir`].
pub fn default_vmd_addr() -> String {
    format!("unix:{}", default_runtime_dir().join(SOCKET_FILE).display())
}

/// The value of [`VMD_ADDR`], or [`default_vmd_addr`] when it is unset.
pub fn vmd_addr() -> String {
    std::env::var(VMD_ADDR)
        .ok()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(default_vmd_addr)
}

/// Where a client finds the token for a TCP vmd: [`TOKEN_FILE_ENV`], else
/// the token file in [`default_runtime_dir`].
pub fn token_file() -> PathBuf {
    std::env::var_os(TOKEN_FILE_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| default_runtime_dir().join(TOKEN_FILE))
}

/// The effective uid of this process (the owner of `/proc/self`), without
/// an FFI call; 0 if /proc cannot be read.
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0)
}
