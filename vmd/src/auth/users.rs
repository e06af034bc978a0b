//! Local user names and uids, from the user database (getpwnam_r and
//! getpwuid_r, so NSS sources count as well as /etc/passwd). Used to name a
//! group's owner in refusals and to read the owner part of a qualified
//! group name (`bob/ocean`). A cluster keeps names and uids the same on
//! every host (as Slurm and MUNGE assume), so either names the same user
//! everywhere.

use std::ffi::{CStr, CString};

/// The largest passwd entry read; past it a user is taken as unknown.
const BUF: usize = 16 * 1024;

/// The name of `uid`, if it is a user here.
pub fn name_of(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; BUF];
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
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// The uid of the user called `name`, if there is one here.
pub fn uid_of(name: &str) -> Option<u32> {
    if name.is_empty() || name.len() > 256 {
        return None;
    }
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0u8; BUF];
    // SAFETY: a zeroed passwd is a valid out-parameter for getpwnam_r.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: `cname` is NUL-terminated; every other pointer is to memory we
    // own, with its true length.
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return None;
    }
    Some(pwd.pw_uid)
}

/// `uid N (name)`, or `uid N` for a uid with no user entry: how refusals
/// name an owner.
pub fn describe(uid: u32) -> String {
    match name_of(uid) {
        Some(name) => format!("uid {uid} ({name})"),
        None => format!("uid {uid}"),
    }
}

/// A user given by name or by decimal uid (`--allow` lists), as a uid.
pub fn parse_user(text: &str) -> Option<u32> {
    text.parse::<u32>().ok().or_else(|| uid_of(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_zero_both_ways() {
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(name_of(0).as_deref(), Some("root"));
        assert_eq!(describe(0), "uid 0 (root)");
        assert_eq!(parse_user("0"), Some(0));
        assert_eq!(parse_user("root"), Some(0));
    }

    #[test]
    fn unknown_users_are_none() {
        assert_eq!(uid_of("no-such-user-isthmus-x"), None);
        assert_eq!(uid_of(""), None);
        assert_eq!(uid_of("a\0b"), None);
        assert_eq!(describe(3_999_999_999), "uid 3999999999");
    }
}
