//! The response body type shared by handlers (which stream watch events and full lists) and the
//! HTTP layer (which renders whole bodies).

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

/// Why a streamed body stopped before its end. Hyper then aborts the response (HTTP/1.1: the
/// connection closes before the last chunk; HTTP/2: the stream is reset), so that no client
/// takes a half-written body for a whole one.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// The response body type: whole bodies and watch streams alike.
pub type BoxBody = UnsyncBoxBody<Bytes, BodyError>;

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> BoxBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A streaming body fed by a channel (one chunk per watch event); a bounded channel bounds what
/// a slow reader can hold.
pub fn stream_body(rx: mpsc::Receiver<Bytes>) -> BoxBody {
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let stream = futures::StreamExt::map(stream, |b| Ok::<_, BodyError>(Frame::data(b)));
    StreamBody::new(stream).boxed_unsync()
}

/// A streaming body fed by a channel whose sender may end it with an error (a streamed list
/// whose storage read failed midway): the error aborts the response.
pub fn fallible_stream_body(rx: mpsc::Receiver<Result<Bytes, BodyError>>) -> BoxBody {
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let stream = futures::StreamExt::map(stream, |b| b.map(Frame::data));
    StreamBody::new(stream).boxed_unsync()
}
