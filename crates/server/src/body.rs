//! The response body type shared by handlers (which stream watch events) and the HTTP layer
//! (which renders whole bodies).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

/// The response body type: whole bodies and watch streams alike.
pub type BoxBody = UnsyncBoxBody<Bytes, Infallible>;

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
    let stream = futures::StreamExt::map(stream, |b| Ok::<_, Infallible>(Frame::data(b)));
    StreamBody::new(stream).boxed_unsync()
}
