//! Input validation shared by every public operation.
//!
//! Everything a client can send is checked here before the store is
//! touched, so bad input can neither panic nor change state.

use std::str::FromStr;

use crate::{GroupError, Result, TaskId};

/// Instances (and therefore group sizes) are below this bound.
///
/// 2^20 is far beyond any real job (PVM used 16-bit instance numbers) while
/// keeping absurd values such as `u32::MAX` from being accepted, and a full
/// group small enough to list.
pub const MAX_INSTANCE: u32 = 1 << 20;

/// Longest group name, in bytes.
pub const MAX_NAME_LEN: usize = 255;

/// Longest host name, in bytes.
pub const MAX_HOST_LEN: usize = 255;

/// Largest endpoint record. MPI port names are at most a few hundred
/// bytes; 64 KiB leaves room for richer records without letting one task
/// bloat every table.
pub const MAX_ENDPOINT_LEN: usize = 64 * 1024;

/// How much of a rejected name is echoed back in error messages.
const DISPLAY_CHARS: usize = 64;

/// Escapes control characters and quotes and truncates (to 64 characters
/// and an ellipsis), so that a hostile string cannot mangle logs or error
/// messages.
pub fn escape_for_display(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == DISPLAY_CHARS {
            out.push('…');
            break;
        }
        out.extend(c.escape_debug());
    }
    out
}

pub(crate) fn name(group: &str) -> Result<()> {
    let reason = if group.is_empty() {
        "is empty".to_string()
    } else if group.len() > MAX_NAME_LEN {
        format!(
            "is {} bytes long; at most {MAX_NAME_LEN} are allowed",
            group.len()
        )
    } else if let Some((at, c)) = group.char_indices().find(|(_, c)| c.is_control()) {
        format!("contains control character U+{:04X} at byte {at}", c as u32)
    } else {
        return Ok(());
    };
    Err(GroupError::InvalidName {
        name: escape_for_display(group),
        reason,
    })
}

pub(crate) fn instance(instance: u32) -> Result<()> {
    if instance >= MAX_INSTANCE {
        return Err(GroupError::InvalidInstance {
            instance,
            max: MAX_INSTANCE,
        });
    }
    Ok(())
}

/// Group sizes and barrier counts: 1..=MAX_INSTANCE.
pub(crate) fn size(what: &'static str, n: u32) -> Result<()> {
    if n == 0 {
        return Err(GroupError::InvalidArgument {
            what,
            reason: "must be at least 1".into(),
        });
    }
    if n > MAX_INSTANCE {
        return Err(GroupError::InvalidArgument {
            what,
            reason: format!("{n} exceeds the maximum group size {MAX_INSTANCE}"),
        });
    }
    Ok(())
}

pub(crate) fn host(host: &str) -> Result<()> {
    let reason = if host.len() > MAX_HOST_LEN {
        format!(
            "is {} bytes long; at most {MAX_HOST_LEN} are allowed",
            host.len()
        )
    } else if host.chars().any(char::is_control) {
        "contains a control character".to_string()
    } else {
        return Ok(());
    };
    Err(GroupError::InvalidArgument {
        what: "host",
        reason: format!("\"{}\" {reason}", escape_for_display(host)),
    })
}

pub(crate) fn endpoint(endpoint: &[u8]) -> Result<()> {
    if endpoint.len() > MAX_ENDPOINT_LEN {
        return Err(GroupError::InvalidArgument {
            what: "endpoint",
            reason: format!(
                "{} bytes; at most {MAX_ENDPOINT_LEN} are allowed",
                endpoint.len()
            ),
        });
    }
    Ok(())
}

impl FromStr for TaskId {
    type Err = GroupError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        uuid::Uuid::parse_str(s)
            .map(TaskId)
            .map_err(|e| GroupError::InvalidArgument {
                what: "task id",
                reason: format!("{}: {e}", escape_for_display(s)),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(name("ring").is_ok());
        assert!(name(&"x".repeat(255)).is_ok());
        let e = name("").unwrap_err();
        assert_eq!(e.to_string(), "group name \"\" is empty");
        let e = name(&"x".repeat(256)).unwrap_err();
        assert!(e.to_string().contains("256 bytes"), "{e}");
        assert!(e.to_string().contains('…'), "long names are truncated: {e}");
        let e = name("a\u{7}b").unwrap_err();
        assert_eq!(
            e.to_string(),
            "group name \"a\\u{7}b\" contains control character U+0007 at byte 1"
        );
    }

    #[test]
    fn escaping_is_char_safe() {
        // Multi-byte characters must not be split when truncating.
        let s = "é".repeat(100);
        let shown = escape_for_display(&s);
        assert_eq!(shown.chars().count(), DISPLAY_CHARS + 1);
    }

    #[test]
    fn instances_and_sizes() {
        assert!(instance(MAX_INSTANCE - 1).is_ok());
        assert!(instance(MAX_INSTANCE).is_err());
        assert!(size("size", 0).is_err());
        assert!(size("size", MAX_INSTANCE).is_ok());
        assert!(size("size", MAX_INSTANCE + 1).is_err());
    }
}
