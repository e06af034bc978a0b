//! Environment for the processes a program starts through the virtual
//! machine, written as one string: the info key `isthmus_env` of
//! `MPI_Comm_spawn(_multiple)` and the `env` argument of `Isthmus_Spawn`.
//!
//! Syntax: `NAME=VALUE` entries separated by `;` (`PYTHONPATH=/x;FOO=bar`).
//! In a value, `\;` is a `;` and `\\` a `\`; any other `\` stays as it is.
//! Blank entries (and spaces around a name) are ignored. A name is a
//! letter or `_` followed by letters, digits and `_`; the variables with
//! which Isthmus connects a job (`ISTHMUS_VMD`, `ISTHMUS_JOB`,
//! `ISTHMUS_SPAWN_*`, `ISTHMUS_LIBISTHMUS`, the tasker's) are Isthmus's
//! own and refused.

use std::collections::BTreeMap;

use isthmus_types::env;

/// The variables a program may not set for its children (nor pass on to
/// them from its own environment): those that connect one job.
pub const RESERVED: &[&str] = &[
    env::VMD_ADDR,
    env::JOB,
    env::TASKER_SOCKET,
    env::RANK_VAR,
    env::RANK,
    env::LIBISTHMUS,
    env::SPAWN_PORT,
    env::SPAWN_TIMEOUT,
    env::SPAWN_APPS,
    env::SPAWN_APPNUM,
    env::SPAWN_APPNUM_BASE,
];

/// Reads `text` (see the module's syntax); the error says which entry and why.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut vars = BTreeMap::new();
    for entry in split(text) {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = entry.split_once('=') else {
            return Err(format!("entry {entry:?} is not NAME=VALUE"));
        };
        let name = name.trim();
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("{name:?} is not a variable name"));
        }
        if RESERVED.contains(&name) {
            return Err(format!(
                "{name} is set by Isthmus itself to connect the job; it cannot be given"
            ));
        }
        vars.insert(name.to_string(), value.to_string());
    }
    Ok(vars)
}

/// The entries of `text`, split at unescaped `;`, with `\;` and `\\` read.
fn split(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some(next @ (';' | '\\'))) => {
                current.push(next);
                chars.next();
            }
            (';', _) => entries.push(std::mem::take(&mut current)),
            (c, _) => current.push(c),
        }
    }
    entries.push(current);
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_split_at_semicolons_with_escapes() {
        let v = parse(r" PYTHONPATH=/x:/y ; FOO=a\;b\\c ;; EMPTY= ").unwrap();
        assert_eq!(v["PYTHONPATH"], "/x:/y ");
        assert_eq!(v["FOO"], r"a;b\c ");
        assert_eq!(v["EMPTY"], " ");
        assert_eq!(v.len(), 3);
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn bad_entries_are_named() {
        assert!(parse("FOO")
            .unwrap_err()
            .contains("\"FOO\" is not NAME=VALUE"));
        assert!(parse("1X=2").unwrap_err().contains("not a variable name"));
        assert!(parse("ISTHMUS_VMD=x")
            .unwrap_err()
            .contains("ISTHMUS_VMD is set by Isthmus"));
    }
}
