//! A bridge send reading memory lent to it (the program's buffer, or a
//! scratch one) where it is: its guard waits for the send before it goes,
//! so that no early return or failed step frees or reuses that memory
//! while the bridge (or, on this host, the receiver) still reads it.

use isthmus_bridge::{BridgeError, SendRequest};

/// A lent send's request; dropping it waits for the send.
pub struct LentSend(Option<SendRequest>);

impl LentSend {
    /// Guards `req`, a send from lent memory.
    pub fn new(req: SendRequest) -> LentSend {
        LentSend(Some(req))
    }

    /// Whether the send completed (the memory is free again).
    pub fn test(&self) -> bool {
        self.0.as_ref().is_none_or(SendRequest::test)
    }

    /// Waits for the send to complete.
    pub fn wait(mut self) -> Result<(), BridgeError> {
        self.0.take().map_or(Ok(()), SendRequest::wait)
    }
}

impl Drop for LentSend {
    fn drop(&mut self) {
        if let Some(req) = self.0.take() {
            // Only the end counts here: the caller reports its own error.
            let _ = req.wait();
        }
    }
}
