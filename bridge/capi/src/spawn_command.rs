//! What `MPI_Comm_spawn`'s root asks the resource manager for: the command
//! found and checked here, as the program's user (`path`, `wdir`), its MPI
//! implementation read from the binary (or the info key `isthmus_impl`),
//! where it goes (`host`), and the children's environment (the port they
//! meet their parents on, their deadline, the request for `libisthmus`).
//! Every refusal is a sentence naming the command and the reason.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use isthmus_types::env;
use isthmus_types::job::{Placement, SpawnSpec};
use mpi::ffi;

use crate::errors::Class;
use crate::info;

/// Implementations a tasker may serve (as `isthmus_detect` names them).
const KNOWN: &[&str] = &["openmpi", "mpich", "openmpi5", "mpich5", "impi"];

/// Why the root cannot spawn: the error class and the sentence.
pub struct Refusal {
    pub class: Class,
    pub message: String,
}

fn refuse(class: Class, message: String) -> Refusal {
    Refusal { class, message }
}

/// One command of a spawn, as the program gave it (at the root).
pub struct Command {
    pub command: String,
    pub args: Vec<String>,
    pub np: i32,
    pub info: ffi::MPI_Info,
}

/// The spawn spec for `cmd`: its children meet their parents on `port`
/// within `timeout`.
pub fn spec(cmd: &Command, port: &str, timeout: Duration) -> Result<SpawnSpec, Refusal> {
    let what = format!("{:?}", cmd.command);
    let np = u32::try_from(cmd.np)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            refuse(
                Class::InvalidArgument,
                format!(
                    "cannot start {what}: maxprocs is {}; it must be at least 1",
                    cmd.np
                ),
            )
        })?;
    if cmd.command.is_empty() {
        return Err(refuse(
            Class::InvalidArgument,
            "the command is empty".to_string(),
        ));
    }
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let wdir = match info::value(cmd.info, "wdir") {
        Some(w) => {
            let w = here.join(w.trim());
            if !w.is_dir() {
                return Err(refuse(
                    Class::Spawn,
                    format!(
                        "cannot start {what}: its working directory (info key wdir) {} is not a \
                         directory",
                        w.display()
                    ),
                ));
            }
            w
        }
        None => here,
    };
    let program = resolve(
        &cmd.command,
        &wdir,
        info::value(cmd.info, "path").as_deref(),
    )
    .map_err(|why| refuse(Class::Spawn, format!("cannot start {what}: {why}")))?;
    let implementation = implementation(&program, cmd.info)
        .map_err(|why| refuse(Class::Spawn, format!("cannot start {what}: {why}")))?;
    let placement = match info::value(cmd.info, "host") {
        Some(h) if !h.trim().is_empty() => Placement::Host(h.trim().to_string()),
        _ => Placement::Any,
    };
    Ok(SpawnSpec {
        program: program.display().to_string(),
        args: cmd.args.clone(),
        np,
        implementation,
        placement,
        env: children_env(port, timeout),
        cwd: wdir.display().to_string(),
        owner: 0,
    })
}

/// The program `command` names: a path (relative to `wdir`), else the first
/// executable of that name in the info key `path`'s directories, then
/// `$PATH`'s. It must be an executable file.
fn resolve(command: &str, wdir: &Path, path: Option<&str>) -> Result<PathBuf, String> {
    let candidate = if command.contains('/') {
        wdir.join(command)
    } else {
        let dirs: Vec<PathBuf> = path
            .unwrap_or_default()
            .split(':')
            .map(str::to_string)
            .chain(
                std::env::var("PATH")
                    .unwrap_or_default()
                    .split(':')
                    .map(str::to_string),
            )
            .filter(|d| !d.is_empty())
            .map(|d| wdir.join(d))
            .collect();
        dirs.iter()
            .map(|d| d.join(command))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                format!(
                    "not found in the info key path's directories nor in PATH (looked in {})",
                    dirs.iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(":")
                )
            })?
    };
    let meta =
        std::fs::metadata(&candidate).map_err(|e| format!("{}: {e}", candidate.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", candidate.display()));
    }
    let c = CString::new(candidate.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{} has a NUL byte", candidate.display()))?;
    // SAFETY: `c` is a valid C string; access(2) only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::X_OK) } != 0 {
        return Err(format!("{} is not executable", candidate.display()));
    }
    Ok(candidate)
}

/// The implementation of `program`: the info key `isthmus_impl`, else
/// read from its ELF dynamic section.
fn implementation(program: &Path, info: ffi::MPI_Info) -> Result<String, String> {
    if let Some(given) = info::value(info, "isthmus_impl") {
        let given = given.trim().to_string();
        return match KNOWN.contains(&given.as_str()) {
            true => Ok(given),
            false => Err(format!(
                "info key isthmus_impl is {given:?}; known: {}",
                KNOWN.join(", ")
            )),
        };
    }
    match isthmus_detect::implementation_of(program) {
        Ok("exec") => Err(format!(
            "cannot tell its MPI implementation: {} is linked with no known MPI library \
             (give the info key isthmus_impl)",
            program.display()
        )),
        Ok(i) => Ok(i.to_string()),
        Err(e) => Err(format!(
            "cannot tell its MPI implementation: {e} (give the info key isthmus_impl)"
        )),
    }
}

/// What the children find in their environment: where and until when to
/// meet their parents, the request for their implementation's libisthmus,
/// and the parent's own `ISTHMUS_*` settings (log, waiting, limits), less
/// those that belong to one process or job.
fn children_env(port: &str, timeout: Duration) -> BTreeMap<String, String> {
    const OWN: &[&str] = &[
        env::VMD_ADDR,
        env::JOB,
        env::TASKER_SOCKET,
        env::RANK_VAR,
        env::RANK,
        env::LIBISTHMUS,
        env::SPAWN_PORT,
        env::SPAWN_TIMEOUT,
    ];
    let mut vars: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("ISTHMUS_") && !OWN.contains(&k.as_str()))
        .collect();
    vars.insert(env::SPAWN_PORT.into(), port.into());
    vars.insert(
        env::SPAWN_TIMEOUT.into(),
        format!("{:.3}", timeout.as_secs_f64()),
    );
    vars.insert(env::LIBISTHMUS.into(), "preload".into());
    vars
}
