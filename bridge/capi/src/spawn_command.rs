//! What `MPI_Comm_spawn`'s root asks the resource manager for: the command
//! found and checked here, as the program's user (`path`, `wdir`), its MPI
//! implementation read from the binary (or the info key `isthmus_impl`),
//! where it goes (`host`), and the children's environment (the port they
//! meet their parents on, their deadline, the request for `libisthmus`) and
//! the variables the info key `isthmus_env` gives them ([`env_list`]).
//! Every refusal is a sentence naming the command and the reason.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use isthmus_types::env;
use isthmus_types::job::{Placement, RankCommand, RankCommands, SpawnSpec};
use mpi::ffi;

use crate::errors::Class;
use crate::{env_list, info};

/// Implementations a tasker may serve (as `isthmus_detect` names them),
/// and the standard ABI on a named runtime (`abi-<runtime>`, info key
/// `isthmus_impl` only: the `abi` tasker's job on that runtime).
const KNOWN: &[&str] = &[
    "openmpi",
    "mpich",
    "openmpi5",
    "mpich5",
    "impi",
    "abi",
    "abi-mpich5",
    "abi-impi",
];

/// The job variable with which the `abi` tasker runs a job on a runtime
/// other than its default (taskers/src/launcher/abi.rs).
const ABI_RUNTIME: &str = "ISTHMUS_ABI_RUNTIME";

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
    let implementation = implementation(&program, info::value(cmd.info, "isthmus_impl"), false)
        .map_err(|why| refuse(Class::Spawn, format!("cannot start {what}: {why}")))?;
    let mut env = given_env(cmd)?;
    env.extend(children_env(port, timeout));
    let implementation = abi_runtime(implementation, &mut env);
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
        env,
        cwd: wdir.display().to_string(),
        owner: 0,
    })
}

/// The variables the info key `isthmus_env` gives the command's processes.
fn given_env(cmd: &Command) -> Result<BTreeMap<String, String>, Refusal> {
    match info::value(cmd.info, "isthmus_env") {
        Some(text) => env_list::parse(&text).map_err(|why| {
            refuse(
                Class::InvalidArgument,
                format!(
                    "cannot start {:?}: info key isthmus_env: {why}",
                    cmd.command
                ),
            )
        }),
        None => Ok(BTreeMap::new()),
    }
}

/// The spawn spec for several commands of one implementation
/// (`MPI_Comm_spawn_multiple`, or one part of its children's world,
/// [`specs_of_parts`]): one job of their one implementation, on their one host, whose launcher
/// starts the first command's program on every rank and whose rank shims
/// start each rank's own command instead ([`RankCommands`] in
/// [`env::SPAWN_APPS`]).
pub fn spec_of_all(cmds: &[Command], port: &str, timeout: Duration) -> Result<SpawnSpec, Refusal> {
    let specs = cmds
        .iter()
        .map(|c| spec(c, port, timeout))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = specs.first() else {
        return Err(refuse(
            Class::InvalidArgument,
            "count is 0: there is no command to start".to_string(),
        ));
    };
    if specs.len() == 1 {
        return Ok(first.clone());
    }
    // The reason first: error strings are cut at 250 bytes, and paths are long.
    let named = |i: usize| {
        let c = cmds.get(i).map(|c| c.command.as_str()).unwrap_or_default();
        let s = specs
            .get(i)
            .map(|s| s.implementation.as_str())
            .unwrap_or_default();
        format!("{s} ({c:?})")
    };
    if let Some(i) = specs
        .iter()
        .position(|s| s.implementation != first.implementation)
    {
        return Err(refuse(
            Class::Spawn,
            format!(
                "one job's commands are of one MPI implementation, not {} and {} \
                 (specs_of_parts gives each implementation a job of its own)",
                named(0),
                named(i)
            ),
        ));
    }
    if let Some(i) = specs.iter().position(|s| s.placement != first.placement) {
        return Err(refuse(
            Class::Spawn,
            format!(
                "the commands' info keys host differ ({:?} and {:?}): the children of one call \
                 are one job, on one host",
                first.placement,
                specs
                    .get(i)
                    .map(|s| s.placement.clone())
                    .unwrap_or_default()
            ),
        ));
    }
    let mut commands = Vec::with_capacity(specs.len());
    for (s, c) in specs.iter().zip(cmds) {
        commands.push(RankCommand {
            np: s.np,
            program: s.program.clone(),
            args: s.args.clone(),
            cwd: s.cwd.clone(),
            env: given_env(c)?,
        });
    }
    let commands = RankCommands(commands);
    let mut env = children_env(port, timeout);
    env.insert(env::SPAWN_APPS.into(), commands.encode());
    Ok(SpawnSpec {
        np: commands.np(),
        env,
        ..first.clone()
    })
}

/// The jobs a spawn starts: one job of every command when they are of one
/// implementation ([`spec_of_all`]); when they are of two, two jobs, the
/// two parts of one world (`crate::world`: `ISTHMUS_WORLD=<name>:<i>/2`,
/// part 0 the first implementation in the call's order), whose
/// `MPI_COMM_WORLD` lists the commands' processes in the call's order.
/// That order needs each implementation's commands together: commands
/// that interleave implementations, or of three implementations, are
/// refused with the reason. Also returns how many commands the first job
/// runs.
pub fn specs_of_parts(
    cmds: &[Command],
    port: &str,
    timeout: Duration,
) -> Result<(Vec<SpawnSpec>, usize), Refusal> {
    let specs = cmds
        .iter()
        .map(|c| spec(c, port, timeout))
        .collect::<Result<Vec<_>, _>>()?;
    let implementations: Vec<&str> = specs.iter().map(|s| s.implementation.as_str()).collect();
    // Where each run of one implementation begins.
    let starts: Vec<usize> = (0..implementations.len())
        .filter(|&i| i == 0 || implementations.get(i) != implementations.get(i - 1))
        .collect();
    let mut distinct = implementations.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let named = |i: usize| {
        let c = cmds.get(i).map(|c| c.command.as_str()).unwrap_or_default();
        format!(
            "{} ({c:?})",
            implementations.get(i).copied().unwrap_or_default()
        )
    };
    if distinct.len() > 2 {
        return Err(refuse(
            Class::Spawn,
            format!(
                "the commands are of {} MPI implementations ({}); their children share one \
                 MPI_COMM_WORLD, a world of two parts at most (one per implementation: spawn \
                 the others with a call of their own)",
                distinct.len(),
                distinct.join(", ")
            ),
        ));
    }
    let split = match starts.as_slice() {
        [_] | [] => return spec_of_all(cmds, port, timeout).map(|s| (vec![s], cmds.len())),
        [_, k] => *k,
        [_, k, l, ..] => {
            return Err(refuse(
                Class::Spawn,
                // The reason first: error strings are cut (Open MPI's at 256 bytes).
                format!(
                    "the commands interleave MPI implementations: their children's \
                     MPI_COMM_WORLD is a world of one part per implementation, each part's \
                     ranks together, so it cannot follow the call's order (give each \
                     implementation's commands one after the other): {}, then {}, then {}",
                    named(0),
                    named(*k),
                    named(*l)
                ),
            ));
        }
    };
    let (first, second) = cmds.split_at(split.min(cmds.len()));
    let world = format!(
        "spawn-{}",
        port.trim_start_matches(crate::ports::PORT_PREFIX)
    );
    let mut parts = Vec::with_capacity(2);
    for (index, (part, base)) in [(first, 0), (second, split)].into_iter().enumerate() {
        let mut s = spec_of_all(part, port, timeout)?;
        s.env
            .insert(crate::world::WORLD.into(), format!("{world}:{index}/2"));
        s.env.insert(
            crate::world::WORLD_TIMEOUT.into(),
            format!("{:.3}", timeout.as_secs_f64()),
        );
        if base > 0 {
            s.env
                .insert(env::SPAWN_APPNUM_BASE.into(), base.to_string());
        }
        parts.push(s);
    }
    Ok((parts, split))
}

/// The program `command` names: a path (relative to `wdir`), else the first
/// executable of that name in the info key `path`'s directories, then
/// `$PATH`'s. It must be an executable file.
pub fn resolve(command: &str, wdir: &Path, path: Option<&str>) -> Result<PathBuf, String> {
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

/// The implementation of `program`: `given` (the info key `isthmus_impl`,
/// or `Isthmus_Spawn`'s argument), else read from its ELF dynamic section.
/// A program linked with no MPI is `exec` when `plain` allows it.
pub fn implementation(
    program: &Path,
    given: Option<String>,
    plain: bool,
) -> Result<String, String> {
    if let Some(given) = given {
        let given = given.trim().to_string();
        return match KNOWN.contains(&given.as_str()) || (plain && given == "exec") {
            true => Ok(given),
            false => Err(format!(
                "the implementation {given:?} is not one Isthmus knows ({}{})",
                KNOWN.join(", "),
                if plain { ", exec" } else { "" }
            )),
        };
    }
    match isthmus_detect::implementation_of(program) {
        Ok("exec") if plain => Ok("exec".to_string()),
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

/// The standard ABI's children run on the runtime `implementation` names
/// (`abi-impi`: the info key's choice), else, when this process is itself
/// a standard-ABI program, on its own runtime (a parent on Intel MPI's
/// `libmpi_abi.so.1` has children on it too), else on the `abi` tasker's
/// default: the choice goes in the job's environment ([`ABI_RUNTIME`]).
/// Returns the implementation the resource manager is asked for.
fn abi_runtime(implementation: String, env: &mut BTreeMap<String, String>) -> String {
    if let Some(runtime) = implementation.strip_prefix("abi-") {
        env.insert(ABI_RUNTIME.into(), runtime.into());
        return "abi".into();
    }
    if implementation == "abi" {
        if let Some(runtime) = own_abi_runtime() {
            env.insert(ABI_RUNTIME.into(), runtime.into());
        }
    }
    implementation
}

/// The runtime this standard-ABI program runs on, from the first words of
/// `MPI_Get_library_version` (Intel MPI's or MPICH's); None in a flavour
/// built for one implementation's own ABI, or for a library of neither.
#[cfg(isthmus_mpi_abi)]
fn own_abi_runtime() -> Option<&'static str> {
    let text = crate::mpi_glue::library_version()?;
    if text.starts_with("Intel(R) MPI Library") {
        Some("impi")
    } else if text.starts_with("MPICH") {
        Some("mpich5")
    } else {
        None
    }
}

#[cfg(not(isthmus_mpi_abi))]
fn own_abi_runtime() -> Option<&'static str> {
    None
}

/// The parent's variables that describe its host, not the job: the
/// children may be placed on another host, whose own (its tasker's
/// environment, its vmd's `--data-addr`) they get instead. A program that
/// wants them passed gives them in the info key `isthmus_env`.
const HOST_SPECIFIC: &[&str] = &[
    env::DATA_ADDR,
    env::DATA_ADVERTISE,
    env::RUNTIME_DIR,
    env::TOKEN_FILE_ENV,
    env::VMD_LISTEN,
    env::ETCD,
];

/// What the children find in their environment: where and until when to
/// meet their parents, the request for their implementation's libisthmus,
/// and the parent's own `ISTHMUS_*` settings (log, waiting, limits), less
/// those that belong to one process or job ([`env_list::RESERVED`]) or to
/// the parent's host ([`HOST_SPECIFIC`]).
fn children_env(port: &str, timeout: Duration) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("ISTHMUS_")
                && !env_list::RESERVED.contains(&k.as_str())
                && !HOST_SPECIFIC.contains(&k.as_str())
                // A world is one job's (a parent's own world is not its children's).
                && k != crate::world::WORLD
        })
        .collect();
    vars.insert(env::SPAWN_PORT.into(), port.into());
    vars.insert(
        env::SPAWN_TIMEOUT.into(),
        format!("{:.3}", timeout.as_secs_f64()),
    );
    vars.insert(env::LIBISTHMUS.into(), "preload".into());
    vars
}
