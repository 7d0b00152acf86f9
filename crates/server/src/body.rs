//! The response body type shared by handlers (which stream watch events and full lists) and the
//! HTTP layer (which renders whole bodies).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Body, Frame, SizeHint};
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

/// A whole body already assembled in pieces (a long list): sent piece by piece, so that no
/// piece is copied into one large buffer (a buffer over the allocator's 8 MiB "oversize"
/// threshold gets fresh pages, each a page fault, and is returned to the kernel when freed),
/// with its exact length (`Content-Length`), as a whole body has.
pub fn pieces(pieces: Vec<Bytes>) -> BoxBody {
    let left = pieces.iter().map(|p| p.len() as u64).sum();
    Pieces {
        pieces: pieces.into_iter().filter(|p| !p.is_empty()).collect(),
        left,
    }
    .boxed_unsync()
}

/// The body [`pieces`] returns.
struct Pieces {
    pieces: VecDeque<Bytes>,
    /// The bytes not sent yet.
    left: u64,
}

impl Body for Pieces {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        Poll::Ready(this.pieces.pop_front().map(|piece| {
            this.left -= piece.len() as u64;
            Ok(Frame::data(piece))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
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
