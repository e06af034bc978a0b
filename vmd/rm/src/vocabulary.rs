//! The crate's own words beside [`isthmus_types`]' vocabulary: what every
//! call returns, and which names a host or an implementation may have.
//! Re-exported by the crate root; a module of its own so that the rooms
//! using them do not import the root, which imports them.

use crate::Refusal;

/// What the resource manager's calls return: a value or a [`Refusal`].
pub type Result<T, E = Refusal> = std::result::Result<T, E>;

/// Whether `name` may name a host or an implementation: 1–64 characters of
/// letters, digits, `.`, `_`, `-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}
