//! Finding the program of a job before anything starts, so that a missing
//! or non-executable program is a clear refusal rather than a failed job.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The executable `program` names: a path (relative to `cwd`) if it holds a
/// `/`, else the first match on `path` (or the tasker's own `PATH`).
pub fn resolve(program: &str, cwd: &Path, path: Option<&OsStr>) -> Result<PathBuf, String> {
    if program.is_empty() {
        return Err("no program given".into());
    }
    if program.contains('/') {
        let p = cwd.join(program);
        return if is_executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(format!("program {program} is not an executable file"))
        } else {
            Err(format!("program {program} not found"))
        };
    }
    let own = std::env::var_os("PATH");
    let search = path
        .or(own.as_deref())
        .unwrap_or(OsStr::new("/usr/bin:/bin"));
    std::env::split_paths(search)
        .map(|dir| cwd.join(dir).join(program))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("program {program} not found on PATH"))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_and_refuses_missing_ones() {
        assert!(resolve("sh", Path::new("/"), None).unwrap().ends_with("sh"));
        assert!(resolve("/bin/sh", Path::new("/tmp"), None).is_ok());
        assert!(resolve("no-such-program-xyz", Path::new("/"), None)
            .unwrap_err()
            .contains("not found"));
        assert!(resolve("./no-such", Path::new("/"), None)
            .unwrap_err()
            .contains("not found"));
        let plain = std::env::temp_dir().join(format!("isthmus-not-exec-{}", std::process::id()));
        std::fs::write(&plain, "data").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = resolve(plain.to_str().unwrap(), Path::new("/"), None).unwrap_err();
        let _ = std::fs::remove_file(&plain);
        assert!(err.contains("not an executable"), "{err}");
    }
}
