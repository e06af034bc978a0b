//! The logging set-up shared by the daemon's and the tasker's binaries:
//! `RUST_LOG` filters (default `info`), lines go to standard error.

/// Installs the global tracing subscriber. Call once, early in `main`.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
}
