//! `tasker`: registers with a vmd for one implementation and launches its
//! jobs. `tasker rank-shim -- program args` is the rank shim the launchers
//! run in front of each rank (internal).

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use isthmus_taskers::launcher;

#[derive(Parser, Debug)]
#[command(
    name = "tasker",
    about = "Isthmus tasker: launches jobs of one implementation for its host's vmd"
)]
struct Args {
    /// Implementation to serve: openmpi, mpich, openmpi5, mpich5, impi, abi
    /// (the MPI 5.0 standard ABI, on MPICH 5's runtime, or Intel MPI's with
    /// ISTHMUS_ABI_RUNTIME=impi) or exec.
    #[arg(long = "impl")]
    implementation: String,
    /// The vmd of this host (default: $ISTHMUS_VMD, else the Unix socket in
    /// the runtime directory). A tasker must run as the vmd's user or root.
    #[arg(long, env = isthmus_types::env::VMD_ADDR)]
    vmd: Option<String>,
    /// The libisthmus.so of this implementation, preloaded into the jobs
    /// that ask for it (MPI_Comm_spawn's children). Default: beside the
    /// tasker, `../lib/isthmus/IMPL/libisthmus.so` (an installed prefix) or
    /// `../../IMPL/release/libisthmus.so` (a build tree).
    #[arg(long, env = "ISTHMUS_TASKER_LIBISTHMUS")]
    libisthmus: Option<std::path::PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == isthmus_taskers::SHIM_ARG) {
        // Kept free of the runtime and of clap: it runs once per rank.
        let rest = argv.get(2..).unwrap_or_default();
        let rest = rest
            .strip_prefix(&[std::ffi::OsString::from("--")][..])
            .unwrap_or(rest);
        let Some((program, args)) = rest.split_first() else {
            eprintln!("usage: tasker rank-shim -- program [args...]");
            std::process::exit(2);
        };
        std::process::exit(isthmus_taskers::shim::run(program, args));
    }
    isthmus_client::init_tracing();
    let args = Args::parse();
    let launcher = match launcher::by_name(&args.implementation) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("tasker: {why}");
            std::process::exit(2);
        }
    };
    if launcher.command() != "exec" && !launcher::installed(launcher.command()) {
        anyhow::bail!(
            "{} is not installed (not found on PATH)",
            launcher.command()
        );
    }
    let launcher: Arc<dyn launcher::Launcher> = Arc::from(launcher);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(isthmus_taskers::tasker::run(
        &args
            .vmd
            .clone()
            .unwrap_or_else(isthmus_types::env::vmd_addr),
        launcher,
        isthmus_taskers::preload::find(&args.implementation, args.libisthmus.clone()),
        |socket| {
            tracing::info!(socket, "tasker ready");
        },
    ))?;
    Ok(())
}
