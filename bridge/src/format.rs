//! [`WireFormat`]: how a payload's bytes are laid out on the wire. Shared by
//! the frame header (one byte) and the datatype layer (which chooses it).

/// How the payload bytes are laid out on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WireFormat {
    /// Native layout of a little-endian host.
    RawLe = 0,
    /// Native layout of a big-endian host.
    RawBe = 1,
    /// MPI "external32" canonical representation (big-endian, fixed sizes).
    External32 = 2,
}

impl WireFormat {
    /// The raw format of the host this code runs on.
    pub const fn native() -> Self {
        if cfg!(target_endian = "little") {
            WireFormat::RawLe
        } else {
            WireFormat::RawBe
        }
    }

    /// Whether the payload is raw bytes of a basic type (not external32).
    pub fn is_raw(self) -> bool {
        !matches!(self, WireFormat::External32)
    }

    /// One-byte wire code: RawLe = 0, RawBe = 1, External32 = 2.
    pub fn to_u8(self) -> u8 {
        self as u8
    }

    /// Inverse of [`WireFormat::to_u8`].
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(WireFormat::RawLe),
            1 => Some(WireFormat::RawBe),
            2 => Some(WireFormat::External32),
            _ => None,
        }
    }
}
