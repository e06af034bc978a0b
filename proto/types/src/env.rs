//! The `ISTHMUS_*` environment variables and default addresses, defined once.

/// The address a vmd listens on when none is given, and where clients look
/// for it when [`VMD_ADDR`] is unset.
pub const DEFAULT_VMD_ADDR: &str = "127.0.0.1:7711";

/// Where clients (the bridge, the console, taskers) find their vmd, as
/// `host:port` or `http://host:port`.
pub const VMD_ADDR: &str = "ISTHMUS_VMD";

/// The address `vmd` listens on (its `--listen` flag).
pub const VMD_LISTEN: &str = "ISTHMUS_VMD_LISTEN";

/// The job id the resource manager gave a spawned job, set in each rank.
pub const JOB: &str = "ISTHMUS_JOB";

/// The virtual machine's secret, handed to spawned jobs (read by nobody yet).
pub const SECRET: &str = "ISTHMUS_SECRET";

/// The tasker's Unix socket on which rank shims report starts and exits.
pub const TASKER_SOCKET: &str = "ISTHMUS_TASKER_SOCKET";

/// Which environment variable holds a rank's number under this launcher.
pub const RANK_VAR: &str = "ISTHMUS_RANK_VAR";

/// A rank's number under the exec launcher.
pub const RANK: &str = "ISTHMUS_RANK";

/// The value of [`VMD_ADDR`], or [`DEFAULT_VMD_ADDR`] when it is unset.
pub fn vmd_addr() -> String {
    std::env::var(VMD_ADDR).unwrap_or_else(|_| DEFAULT_VMD_ADDR.to_string())
}
