//! The coupling file of `isthmus run` (its model and its checks, no I/O
//! beyond what the caller hands in, no gRPC): `[[component]]` tables and a
//! `[run]` table, read with serde and the `toml` crate, whose spans give
//! every error its line and column.
//!
//! ```toml
//! [run]
//! on_failure = "abort"        # or "continue"; default abort
//! timeout = 600               # optional: seconds the whole run may take
//!
//! [[component]]
//! name = "ocean"
//! program = "build/ocean"     # a path with `/` is relative to cwd
//! args = ["3"]
//! np = 2
//! impl = "openmpi"            # openmpi | mpich | openmpi5 | mpich5 | impi | abi | exec; absent: read from the binary
//! host = "node1"              # optional: run there
//! env = { OMP_NUM_THREADS = "1" }
//! cwd = "."                   # optional: relative to the file's directory
//! ```
//!
//! The core (`name`, `program`, `args`, `np`, `impl`, `host`, `env`, `cwd`,
//! `on_failure`) is fixed so that files outlive versions; unknown keys are
//! errors, so a misspelt key is never silently ignored.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// Most components one file may name (a bound on what a file makes us start).
pub const MAX_COMPONENTS: usize = 256;
/// Most ranks one component may ask for.
pub const MAX_NP: u32 = 4096;

/// An MPI implementation (or none: `exec`) a component runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Impl {
    Openmpi,
    Mpich,
    /// The implementations in a prefix of their own (scripts/mpi/, issue 25).
    Openmpi5,
    Mpich5,
    Impi,
    /// The MPI 5.0 standard ABI (`libmpi_abi.so.1`), run by the runtime
    /// its tasker chooses (MPICH 5's unless `ISTHMUS_ABI_RUNTIME=impi`).
    Abi,
    Exec,
}

impl Impl {
    /// The implementation of that name, as [`Impl::as_str`] gives it.
    pub fn from_name(name: &str) -> Option<Impl> {
        [
            Impl::Openmpi,
            Impl::Mpich,
            Impl::Openmpi5,
            Impl::Mpich5,
            Impl::Impi,
            Impl::Abi,
            Impl::Exec,
        ]
        .into_iter()
        .find(|i| i.as_str() == name)
    }

    /// The name the resource manager and the taskers use.
    pub fn as_str(self) -> &'static str {
        match self {
            Impl::Openmpi => "openmpi",
            Impl::Mpich => "mpich",
            Impl::Openmpi5 => "openmpi5",
            Impl::Mpich5 => "mpich5",
            Impl::Impi => "impi",
            Impl::Abi => "abi",
            Impl::Exec => "exec",
        }
    }
}

impl fmt::Display for Impl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do when a component fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Stop every other component (the default: a coupled run rarely
    /// survives one side's death).
    #[default]
    Abort,
    /// Let the others run to their end.
    Continue,
}

/// One component as the file says it (spans kept for the checks' errors).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComponent {
    name: Spanned<String>,
    program: Spanned<String>,
    #[serde(default)]
    args: Vec<String>,
    np: Spanned<u32>,
    #[serde(rename = "impl")]
    implementation: Option<Impl>,
    host: Option<Spanned<String>>,
    env: Option<Spanned<BTreeMap<String, String>>>,
    cwd: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    #[serde(default)]
    on_failure: OnFailure,
    timeout: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    component: Vec<RawComponent>,
    #[serde(default)]
    run: RawRun,
}

/// A component, checked. `cwd` is absolute (the file's directory joined
/// with the file's `cwd`, if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub np: u32,
    /// `None`: not given; read from the binary before starting.
    pub implementation: Option<Impl>,
    pub host: Option<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
}

impl Component {
    /// The program's path as the tasker will resolve it: relative to `cwd`
    /// when it holds a `/`, else looked up on `PATH`.
    pub fn program_path(&self) -> Option<PathBuf> {
        if self.program.contains('/') {
            return Some(self.cwd.join(&self.program));
        }
        let path = self
            .env
            .get("PATH")
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"))?;
        std::env::split_paths(&path)
            .map(|dir| self.cwd.join(dir).join(&self.program))
            .find(|p| p.is_file())
    }
}

/// A coupling file, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coupling {
    pub components: Vec<Component>,
    pub on_failure: OnFailure,
    /// How long the whole run may take, if the file bounds it.
    pub timeout: Option<Duration>,
}

/// A bad coupling file: where, which key, what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {}{message}", file.display(), key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
pub struct SpecError {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// The key the error is about, when one is.
    pub key: Option<String>,
    pub message: String,
}

/// Reads and checks a coupling file.
pub fn load(path: &Path) -> Result<Coupling, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    Ok(parse(&text, path, &dir)?)
}

/// Why a coupling file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// Parses and checks `text`, the contents of `file`; relative `cwd`s are
/// taken from `dir` (the file's directory).
pub fn parse(text: &str, file: &Path, dir: &Path) -> Result<Coupling, SpecError> {
    let at = |span: Range<usize>, key: Option<&str>, message: String| {
        let (line, column) = line_column(text, span.start);
        SpecError {
            file: file.to_path_buf(),
            line,
            column,
            key: key.map(str::to_string),
            message,
        }
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let key = unknown_field(e.message()).or_else(|| key_at(text, span.start));
        at(span, key.as_deref(), e.message().trim_end().to_string())
    })?;
    if raw.component.is_empty() {
        return Err(at(
            0..0,
            Some("component"),
            "no [[component]] table: name at least one component".into(),
        ));
    }
    if raw.component.len() > MAX_COMPONENTS {
        return Err(at(
            0..0,
            Some("component"),
            format!(
                "{} components; at most {MAX_COMPONENTS}",
                raw.component.len()
            ),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut components = Vec::with_capacity(raw.component.len());
    for c in raw.component {
        let name = c.name.get_ref();
        if !valid_name(name) {
            return Err(at(
                c.name.span(),
                Some("name"),
                format!(
                    "{name:?} is not a component name (letters, digits, `-`, `_`, `.`; at most 64)"
                ),
            ));
        }
        if !names.insert(name.clone()) {
            return Err(at(
                c.name.span(),
                Some("name"),
                format!("a second component named {name:?}"),
            ));
        }
        if c.program.get_ref().trim().is_empty() {
            return Err(at(
                c.program.span(),
                Some("program"),
                "empty program".into(),
            ));
        }
        let np = *c.np.get_ref();
        if np == 0 || np > MAX_NP {
            return Err(at(
                c.np.span(),
                Some("np"),
                format!("{np} ranks; give 1 to {MAX_NP}"),
            ));
        }
        if let Some(h) = &c.host {
            if h.get_ref().trim().is_empty() {
                return Err(at(h.span(), Some("host"), "empty host name".into()));
            }
        }
        if let Some(env) = &c.env {
            if let Some(k) = env.get_ref().keys().find(|k| !valid_env_name(k)) {
                return Err(at(
                    env.span(),
                    Some("env"),
                    format!("{k:?} is not an environment variable name"),
                ));
            }
        }
        let cwd = match c.cwd {
            Some(cwd) => dir.join(cwd),
            None => dir.to_path_buf(),
        };
        components.push(Component {
            name: c.name.into_inner(),
            program: c.program.into_inner(),
            args: c.args,
            np,
            implementation: c.implementation,
            host: c.host.map(Spanned::into_inner),
            env: c.env.map(Spanned::into_inner).unwrap_or_default(),
            cwd,
        });
    }
    let timeout = match raw.run.timeout {
        Some(t) if *t.get_ref() == 0 => {
            return Err(at(
                t.span(),
                Some("timeout"),
                "0 seconds; give at least 1 (or leave it out)".into(),
            ))
        }
        Some(t) => Some(Duration::from_secs(*t.get_ref())),
        None => None,
    };
    Ok(Coupling {
        components,
        on_failure: raw.run.on_failure,
        timeout,
    })
}

/// The key serde names in "unknown field `k`, expected …".
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.split('`').next()?.to_string())
}

/// The key of the `key = value` line holding byte `pos`, if it is one.
fn key_at(text: &str, pos: usize) -> Option<String> {
    let start = text.get(..pos)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(start..)?.lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    bare.then(|| key.to_string())
}

/// 1-based line and column (in characters) of byte `pos` in `text`.
fn line_column(text: &str, pos: usize) -> (usize, usize) {
    let before = text.get(..pos.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A component's name tags its output and names it in errors: kept plain.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Coupling, SpecError> {
        parse(text, Path::new("c.toml"), Path::new("/base"))
    }

    const GOOD: &str = r#"
[run]
on_failure = "continue"
timeout = 60

[[component]]
name = "ocean"
program = "build/ocean"
args = ["3"]
np = 2
impl = "openmpi"
env = { A = "1" }

[[component]]
name = "atmosphere"
program = "atmosphere"
np = 1
host = "node2"
cwd = "sub"
"#;

    #[test]
    fn a_good_file_gives_every_field() {
        let c = parse_str(GOOD).unwrap();
        assert_eq!(c.on_failure, OnFailure::Continue);
        assert_eq!(c.timeout, Some(Duration::from_secs(60)));
        assert_eq!(c.components.len(), 2);
        let o = &c.components[0];
        assert_eq!(o.name, "ocean");
        assert_eq!(o.program, "build/ocean");
        assert_eq!(o.args, ["3"]);
        assert_eq!(o.np, 2);
        assert_eq!(o.implementation, Some(Impl::Openmpi));
        assert_eq!(o.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(o.cwd, Path::new("/base"));
        assert_eq!(o.program_path().unwrap(), Path::new("/base/build/ocean"));
        let a = &c.components[1];
        assert_eq!(a.implementation, None);
        assert_eq!(a.host.as_deref(), Some("node2"));
        assert_eq!(a.cwd, Path::new("/base/sub"));
        assert!(a.args.is_empty());
    }

    #[test]
    fn run_defaults_to_abort_without_timeout() {
        let c = parse_str("[[component]]\nname = \"a\"\nprogram = \"true\"\nnp = 1\n").unwrap();
        assert_eq!(c.on_failure, OnFailure::Abort);
        assert_eq!(c.timeout, None);
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let e = parse_str("[[component]]\nname = \"a\"\nprogram = \"true\"\nnp = 1\nnpp = 2\n")
            .unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (5, Some("npp")), "{e}");
        assert!(
            e.to_string()
                .starts_with("c.toml:5:1: key `npp`: unknown field"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_key_in_run_is_an_error() {
        let e = parse_str("[run]\non_falure = \"abort\"\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (2, Some("on_falure")), "{e}");
    }

    #[test]
    fn a_wrong_type_names_its_key_and_line() {
        let e = parse_str("[[component]]\nname = \"a\"\nprogram = \"true\"\nnp = \"two\"\n")
            .unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("np")), "{e}");
    }

    #[test]
    fn a_missing_key_is_named() {
        let e = parse_str("[[component]]\nname = \"a\"\nnp = 1\n").unwrap_err();
        assert!(e.message.contains("program"), "{e}");
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn an_unknown_impl_or_policy_is_refused() {
        let e = parse_str("[[component]]\nname = \"a\"\nprogram = \"x\"\nnp = 1\nimpl = \"lam\"\n")
            .unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (5, Some("impl")), "{e}");
        let e = parse_str("[run]\non_failure = \"retry\"\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (2, Some("on_failure")), "{e}");
    }

    #[test]
    fn checks_name_their_key_and_line() {
        let base = "[[component]]\nname = \"a\"\nprogram = \"x\"\nnp = 1\n";
        let e = parse_str("[[component]]\nname = \"a\"\nprogram = \"x\"\nnp = 0\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("np")), "{e}");
        let e = parse_str(&format!("{base}{base}")).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (6, Some("name")), "{e}");
        assert!(e.message.contains("second"), "{e}");
        let e = parse_str("[[component]]\nname = \"a b\"\nprogram = \"x\"\nnp = 1\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (2, Some("name")), "{e}");
        let e = parse_str("[[component]]\nname = \"a\"\nprogram = \"\"\nnp = 1\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (3, Some("program")), "{e}");
        let e = parse_str(&format!("{base}env = {{ \"A=B\" = \"1\" }}\n")).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (5, Some("env")), "{e}");
        let e = parse_str(&format!("[run]\ntimeout = 0\n{base}")).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (2, Some("timeout")), "{e}");
    }

    #[test]
    fn a_file_without_components_is_refused() {
        let e = parse_str("[run]\non_failure = \"abort\"\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("component"), "{e}");
    }

    #[test]
    fn broken_toml_gets_its_line() {
        let e = parse_str("[[component]]\nname = \"a\nnp = 1\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_column("ab\nçd = 1", 5), (2, 2));
        assert_eq!(line_column("", 0), (1, 1));
    }
}
