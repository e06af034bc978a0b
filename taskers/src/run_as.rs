//! Running a job as its owner. The vmd puts the job's owner uid (the
//! authenticated caller of Spawn) in the launch order; a tasker running as
//! root drops to that uid, its primary gid and its supplementary groups
//! before exec of the launcher; a tasker running as anyone else runs only
//! its own uid's jobs and refuses the others.

use std::ffi::CStr;

use tokio::process::Command;

/// The credentials a job's launcher takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<libc::gid_t>,
}

/// What to run `owner`'s job as: `None` when that is this tasker's own uid
/// (nothing to change); an error when this tasker cannot become `owner`.
pub fn for_owner(owner: u32) -> Result<Option<RunAs>, String> {
    // SAFETY: geteuid(2) cannot fail and touches no memory of ours.
    let me = unsafe { libc::geteuid() };
    if owner == me {
        return Ok(None);
    }
    if me != 0 {
        return Err(format!(
            "this tasker runs as uid {me} and cannot run a job for uid {owner} (run the tasker as root to serve other users)"
        ));
    }
    lookup(owner).map(Some)
}

/// The user's primary gid and groups from the user database.
fn lookup(uid: u32) -> Result<RunAs, String> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid out-parameter for getpwuid_r.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to memory we own, with its true length; the
    // strings written into `buf` live as long as `buf`.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return Err(format!("uid {uid} is not a user on this host"));
    }
    let gid = pwd.pw_gid;
    // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) }.to_owned();
    let mut groups: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut n = groups.len() as libc::c_int;
        // SAFETY: `groups` has room for `n` entries; getgrouplist writes at
        // most that many and sets `n` to the number needed.
        let rc = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            groups.truncate(n.max(0) as usize);
            break;
        }
        if groups.len() >= 65536 {
            return Err(format!("uid {uid} is in too many groups"));
        }
        let want = (n.max(0) as usize).max(groups.len() * 2);
        groups.resize(want, 0);
    }
    Ok(RunAs { uid, gid, groups })
}

/// Makes `cmd` drop to `r` in the child before exec. Register it before any
/// other `pre_exec` that must run as the new user (PR_SET_PDEATHSIG is
/// cleared by a change of credentials).
pub fn apply(cmd: &mut Command, r: &RunAs) {
    let r = r.clone();
    // SAFETY: setgroups, setgid and setuid are async-signal-safe and touch
    // only `r`, moved into the closure before fork; order matters: groups
    // and gid while still root, uid last.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setgroups(r.groups.len(), r.groups.as_ptr()) != 0
                || libc::setgid(r.gid) != 0
                || libc::setuid(r.uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_uid_needs_no_change() {
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        assert_eq!(for_owner(me), Ok(None));
    }

    #[test]
    fn root_finds_a_users_groups() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        // uid 65534 (nobody) exists on Debian.
        let r = for_owner(65534).expect("nobody").expect("a change");
        assert_eq!(r.uid, 65534);
        assert!(for_owner(4_000_000_000).is_err());
    }
}
