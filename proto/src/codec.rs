//! The gRPC codec of every Isthmus service: prost's, except that a message
//! that does not decode (invalid UTF-8 in a string, a truncated field) is the
//! sender's mistake and answered `INVALID_ARGUMENT` naming the problem,
//! where tonic-prost says `INTERNAL`, which reads as a fault of the vmd.

use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::{Code, Status};
use tonic_prost::prost::Message;
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// [`ProstCodec`] with precise statuses for malformed messages.
#[derive(Debug, Clone)]
pub struct StrictCodec<T, U>(ProstCodec<T, U>);

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        Self(ProstCodec::default())
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.0.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder(self.0.decoder())
    }
}

/// Decodes like [`ProstDecoder`]; a decoding failure is `INVALID_ARGUMENT`.
#[derive(Debug)]
pub struct StrictDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // ProstDecoder fails only when prost cannot decode the bytes.
        self.0.decode(buf).map_err(|s| match s.code() {
            Code::Internal => {
                Status::invalid_argument(format!("malformed message: {}", s.message()))
            }
            _ => s,
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
