//! The bytes of a message on their way to a transport ([`Payload`]):
//! either owned by the bridge (a copy, or a vector the caller gave up), or
//! memory a nonblocking send's caller lends until its request completes
//! ([`Lent`], MPI's rule for `MPI_Isend`: the buffer is the library's to
//! read, and the program's not to change, until `MPI_Wait`/`MPI_Test` says
//! the send completed). Lending is what keeps a sender's memory within its
//! bound when it posts many sends to a receiver that does not receive yet:
//! the request stays incomplete instead of the bridge keeping a copy.

use std::ops::Deref;

/// Memory a caller lends to a send until the send's request completes.
///
/// INVARIANT (soundness of every read through it): whoever constructs a
/// `Lent` (see [`Lent::new`]) promises that `len` bytes at `ptr` stay valid
/// and unchanged until the completion of the send that carries it is set.
/// The bridge sets that completion only after the last read through the
/// pointer: a frame's writer completes it once the frame is written (or
/// dropped unwritten), a single-copy send once the receiver said it read
/// the bytes from our memory (see `p2p::send`), and every path that fails
/// the send first takes the payload out of the tables the writer reads
/// from (see `rendezvous` and `transport::outgoing`).
pub(crate) struct Lent {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a `Lent` is only read (never written through) by the one thread
// that writes its frame; the lender keeps the memory valid and unchanged
// until that thread completed the send (the invariant above).
unsafe impl Send for Lent {}
// SAFETY: as for `Send`: shared references only ever read the bytes.
unsafe impl Sync for Lent {}

impl Lent {
    /// # Safety
    /// `len` bytes at `ptr` must be readable, and stay valid and unchanged,
    /// until the request of the send this is given to has completed (its
    /// `wait` returned or its `test` said true). `ptr` may be dangling only
    /// if `len` is 0.
    pub(crate) unsafe fn new(ptr: *const u8, len: usize) -> Lent {
        Lent { ptr, len }
    }

    fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the lender's promise (see `new` and the type's invariant):
        // the bytes are valid and unchanged while this payload exists.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// The payload of a frame waiting for its writer.
pub(crate) enum Payload {
    Owned(Vec<u8>),
    Lent(Lent),
}

impl Payload {
    /// No payload (control frames, announcements).
    pub(crate) fn none() -> Payload {
        Payload::Owned(Vec::new())
    }
}

impl Deref for Payload {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Payload::Owned(v) => v,
            Payload::Lent(l) => l.as_slice(),
        }
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Payload {
        Payload::Owned(v)
    }
}

/// What a nonblocking send is given: bytes it may only read during the
/// call (copied if they must outlive it), bytes it owns, or lent memory.
pub(crate) enum SendBytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Lent(Lent),
}

impl SendBytes<'_> {
    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            SendBytes::Borrowed(b) => b,
            SendBytes::Owned(v) => v,
            SendBytes::Lent(l) => l.as_slice(),
        }
    }

    /// Whether the bytes are the caller's until the request completes
    /// (nothing of the sender's budget is held for them).
    pub(crate) fn is_lent(&self) -> bool {
        matches!(self, SendBytes::Lent(_))
    }

    /// The bytes in a vector of their own: borrowed and lent ones are copied.
    pub(crate) fn into_owned(self) -> Vec<u8> {
        match self {
            SendBytes::Owned(v) => v,
            other => other.as_slice().to_vec(),
        }
    }

    /// A payload that may outlive the call: borrowed bytes are copied.
    pub(crate) fn into_payload(self) -> Payload {
        match self {
            SendBytes::Borrowed(b) => Payload::Owned(b.to_vec()),
            SendBytes::Owned(v) => Payload::Owned(v),
            SendBytes::Lent(l) => Payload::Lent(l),
        }
    }
}

impl From<Vec<u8>> for SendBytes<'_> {
    fn from(v: Vec<u8>) -> Self {
        SendBytes::Owned(v)
    }
}

impl<'a> From<std::borrow::Cow<'a, [u8]>> for SendBytes<'a> {
    fn from(c: std::borrow::Cow<'a, [u8]>) -> SendBytes<'a> {
        match c {
            std::borrow::Cow::Borrowed(b) => SendBytes::Borrowed(b),
            std::borrow::Cow::Owned(v) => SendBytes::Owned(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_and_owned_payloads_read_the_same_bytes() {
        let mine = vec![7u8; 3000];
        // SAFETY: `mine` outlives the payload and is not changed.
        let lent = Payload::Lent(unsafe { Lent::new(mine.as_ptr(), mine.len()) });
        assert_eq!(&*lent, &mine[..]);
        // SAFETY: an empty loan reads nothing.
        let empty = Payload::Lent(unsafe { Lent::new(std::ptr::null(), 0) });
        assert!(empty.is_empty());
        let copied = SendBytes::Borrowed(&mine).into_payload();
        assert!(matches!(copied, Payload::Owned(ref v) if v == &mine));
        assert!(Payload::none().is_empty());
    }
}
