//! `isthmus run`'s command-line form, `mpirun`'s MPMD syntax:
//! `isthmus run -n 2 --impl openmpi ./app_ompi : -n 2 --impl mpich ./app_mpich`.
//! Each part is a component (`part0`, `part1`, …) started through the
//! resource manager as a coupling file's would be; with two parts they are
//! one `MPI_COMM_WORLD` (libisthmus's `ISTHMUS_WORLD=NAME:INDEX/2`, part 0's
//! ranks first), and their output is tagged with world ranks. One part is a
//! plain job. A part's options come before its program: `-n`/`-np`,
//! `--impl` (else read from the binary), `--host`, `-x`/`--env NAME=VALUE`,
//! `--wdir DIR`; everything after the program is its arguments.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::spec::{Component, Coupling, Impl, OnFailure};
use super::supervise::Planned;

/// How many parts one world holds today (libisthmus's `ISTHMUS_WORLD`).
const WORLD_PARTS: usize = 2;

/// A bad command line: what is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MpmdError(String);

fn bad<T>(msg: String) -> Result<T, MpmdError> {
    Err(MpmdError(msg))
}

/// The parts of `words` (split at `:`) as a coupling of one world.
pub fn parse(words: &[String]) -> Result<Coupling, MpmdError> {
    let parts: Vec<&[String]> = words.split(|w| w == ":").collect();
    if parts.len() > WORLD_PARTS {
        return bad(format!(
            "{} parts given: one MPI_COMM_WORLD holds {WORLD_PARTS} parts for now",
            parts.len()
        ));
    }
    let cwd =
        std::env::current_dir().map_err(|e| MpmdError(format!("the current directory: {e}")))?;
    let world = format!(
        "run-{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let count = parts.len();
    let components = parts
        .iter()
        .enumerate()
        .map(|(i, words)| {
            let mut c = part(i, words, &cwd)?;
            if count == WORLD_PARTS {
                c.env
                    .insert("ISTHMUS_WORLD".into(), format!("{world}:{i}/{count}"));
            }
            Ok(c)
        })
        .collect::<Result<Vec<_>, MpmdError>>()?;
    Ok(Coupling {
        components,
        on_failure: OnFailure::Abort,
        timeout: None,
    })
}

/// One part's options and program.
fn part(index: usize, words: &[String], cwd: &std::path::Path) -> Result<Component, MpmdError> {
    let at = format!("part {index}");
    let mut np = None;
    let mut implementation = None;
    let mut host = None;
    let mut env = BTreeMap::new();
    let mut dir: Option<PathBuf> = None;
    let mut it = words.iter();
    let program = loop {
        let Some(w) = it.next() else {
            return bad(format!("{at}: no program"));
        };
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| MpmdError(format!("{at}: {name} needs a value")))
        };
        match w.as_str() {
            "-n" | "-np" => {
                let v = value(w)?;
                np = Some(v.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    MpmdError(format!("{at}: {w} {v}: a number of ranks (1 or more)"))
                })?);
            }
            "--impl" => {
                let v = value(w)?;
                implementation = Some(Impl::from_name(&v).ok_or_else(|| {
                    MpmdError(format!("{at}: --impl {v}: not an implementation Isthmus knows"))
                })?);
            }
            "--host" => host = Some(value(w)?),
            "-x" | "--env" => {
                let v = value(w)?;
                let Some((k, val)) = v.split_once('=') else {
                    return bad(format!("{at}: {w} {v}: NAME=VALUE"));
                };
                env.insert(k.to_string(), val.to_string());
            }
            "--wdir" => dir = Some(PathBuf::from(value(w)?)),
            flag if flag.starts_with('-') => {
                return bad(format!(
                    "{at}: unknown option {flag} (-n, --impl, --host, -x/--env, --wdir, then the program)"
                ))
            }
            program => break program.to_string(),
        }
    };
    let Some(np) = np else {
        return bad(format!("{at}: -n RANKS is missing"));
    };
    Ok(Component {
        name: format!("part{index}"),
        program,
        args: it.cloned().collect(),
        np,
        implementation,
        host,
        env,
        cwd: dir.map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d)),
    })
}

/// Tags each part's output with world ranks: part i's ranks follow the
/// ranks of the parts before it.
pub fn number_world_ranks(plan: &mut [Planned]) {
    if plan.len() != WORLD_PARTS {
        return;
    }
    let mut offset = 0u32;
    for p in plan {
        p.world_offset = Some(offset);
        offset = offset.saturating_add(p.component.np);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn two_parts_make_one_world() {
        let c = parse(&words(
            "-n 2 --impl openmpi ./a x y : -np 3 -x A=1 ./b -n 9",
        ))
        .unwrap();
        let [a, b] = &c.components[..] else {
            panic!("two parts")
        };
        assert_eq!(
            (a.name.as_str(), a.np, a.program.as_str()),
            ("part0", 2, "./a")
        );
        assert_eq!(a.args, ["x", "y"]);
        assert_eq!(a.implementation, Some(Impl::Openmpi));
        assert_eq!(
            (b.np, b.args.clone()),
            (3, vec!["-n".to_string(), "9".into()])
        );
        assert_eq!(b.env.get("A").map(String::as_str), Some("1"));
        let (wa, wb) = (&a.env["ISTHMUS_WORLD"], &b.env["ISTHMUS_WORLD"]);
        assert!(wa.ends_with(":0/2") && wb.ends_with(":1/2"), "{wa} {wb}");
        assert_eq!(wa.split(':').next(), wb.split(':').next());
    }

    #[test]
    fn one_part_is_a_plain_job() {
        let c = parse(&words("-n 1 ./a")).unwrap();
        assert!(!c.components[0].env.contains_key("ISTHMUS_WORLD"));
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        for (line, says) in [
            ("./a", "-n RANKS is missing"),
            ("-n 0 ./a", "1 or more"),
            ("-n 2", "no program"),
            ("-n 2 --impl lam ./a", "--impl lam"),
            ("-n 2 --frob ./a", "unknown option --frob"),
            ("-n 1 ./a : -n 1 ./b : -n 1 ./c", "3 parts"),
            ("-n 1 -x NOEQUALS ./a", "NAME=VALUE"),
        ] {
            let e = parse(&words(line)).unwrap_err().to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
    }
}
