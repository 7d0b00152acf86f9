//! Full lists streamed page by page from storage to the socket, so that a list of 100k objects
//! holds a page or two in memory instead of the whole response (issue 19; upstream streams the
//! encoding of lists it already holds, KEP-5116 `StreamingCollectionEncodingToJSON`).
//!
//! The body is byte for byte the one the unstreamed path builds:
//! `{"apiVersion":..,"items":[..],"kind":"XList","metadata":{"resourceVersion":".."}}`. Every
//! page is read at the first page's revision, so the list is one snapshot. The first page is read
//! before the response starts: an error there is an ordinary Status. An error on a later page
//! cannot become a Status any more (the `200` and part of the body are sent); the body then ends
//! with an error, which aborts the response (HTTP/1.1: the connection closes before the last
//! chunk; HTTP/2: the stream is reset), so that no client takes the partial list for a whole one.
//! Upstream appends the error Status to the partial body, which clients fail to decode; aborting
//! also fails clients that would not decode it.
//!
//! Only what can be streamed without decoding is streamed: JSON output of a full list without
//! selectors. Tables, `PartialObjectMetadata`, YAML and selector lists go through
//! `list::read_page` (the server renders no protobuf).

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use crd_core::Status;
use crd_storage::{Freshness, KeyValue, ListRequest, Revision, Store};
use serde_json::json;
use tokio::sync::mpsc;

use super::{Ctx, Reply, ReplyBody};
use crate::body::BodyError;
use crate::error::ApiError;
use crate::registry::Strategy;

/// Items per storage read of a streamed list (upstream's cacher pages its own lists from etcd
/// by 10,000; a smaller page bounds a list's memory to well under a megabyte of 1 KiB objects).
pub const PAGE: usize = 500;

/// Whether full lists are streamed: `CRD_APISERVER_STREAM_LISTS=false` turns it off, so that a
/// benchmark can measure the server with and without it in one build.
pub fn enabled() -> bool {
    static ON: LazyLock<bool> = LazyLock::new(|| {
        std::env::var("CRD_APISERVER_STREAM_LISTS").map_or(true, |v| v != "false")
    });
    *ON
}

/// Where a streamed list reads.
pub struct Scan {
    /// The storage prefix of the collection.
    pub prefix: String,
    /// The snapshot asked for (`None`: the latest, with `freshness`).
    pub revision: Option<Revision>,
    /// How fresh a read of the latest state must be.
    pub freshness: Freshness,
}

/// Lists the collection under `scan` in pages of `page` items: one whole body when everything
/// fits in the first page, else a streamed one.
pub async fn respond(
    ctx: &Ctx<'_>,
    strategy: Arc<dyn Strategy>,
    scan: Scan,
    page: usize,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let gr = info.group_resource();
    let store = ctx.store().clone();
    let first = store
        .list(ListRequest {
            prefix: scan.prefix.clone(),
            start_after: None,
            limit: Some(page),
            revision: scan.revision,
            freshness: scan.freshness,
            index_terms: Vec::new(),
        })
        .await
        .map_err(|e| ApiError::storage(&gr, "", e))?;
    let revision = first.revision;
    let api_version = info.api_version();
    let mut head = format!(
        r#"{{"apiVersion":{},"items":["#,
        serde_json::to_string(&api_version).map_err(Status::internal)?
    )
    .into_bytes();
    let tail = format!(
        r#"],"kind":{},"metadata":{}}}"#,
        serde_json::to_string(&info.list_kind).map_err(Status::internal)?,
        json!({ "resourceVersion": revision.to_string() })
    );
    encode_page(&strategy, &first.items, &mut head, true).await?;
    if first.remaining == 0 {
        head.extend_from_slice(tail.as_bytes());
        return Ok(Reply {
            code: 200,
            body: ReplyBody::RawJson(Bytes::from(head)),
            warnings: Vec::new(),
            content_type: None,
        });
    }
    let last = first.items.last().map(|kv| kv.key.clone());
    drop(first);
    // One chunk waits in the channel while the next page is read and encoded: two pages at most.
    let (tx, rx) = mpsc::channel::<Result<Bytes, BodyError>>(1);
    let rest = Rest {
        store,
        strategy,
        prefix: scan.prefix,
        revision,
        page,
    };
    tokio::spawn(async move {
        if tx.send(Ok(Bytes::from(head))).await.is_err() {
            return;
        }
        match rest.send_pages(last, &tx).await {
            Ok(()) => {
                let _ = tx.send(Ok(Bytes::from(tail))).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, prefix = rest.prefix, "streamed list aborted midway");
                let _ = tx.send(Err(e)).await;
            }
        }
    });
    Ok(Reply {
        code: 200,
        body: ReplyBody::Stream(crate::body::fallible_stream_body(rx)),
        warnings: Vec::new(),
        content_type: None,
    })
}

/// The pages after the first, read at its revision.
struct Rest {
    store: Arc<dyn Store>,
    strategy: Arc<dyn Strategy>,
    prefix: String,
    revision: Revision,
    page: usize,
}

impl Rest {
    async fn send_pages(
        &self,
        mut start_after: Option<String>,
        tx: &mpsc::Sender<Result<Bytes, BodyError>>,
    ) -> Result<(), BodyError> {
        while let Some(after) = start_after.take() {
            let resp = self
                .store
                .list(ListRequest {
                    prefix: self.prefix.clone(),
                    start_after: Some(after),
                    limit: Some(self.page),
                    revision: Some(self.revision),
                    freshness: Freshness::Consistent,
                    index_terms: Vec::new(),
                })
                .await?;
            let mut chunk = Vec::new();
            encode_page(&self.strategy, &resp.items, &mut chunk, false)
                .await
                .map_err(|e| format!("{e:?}"))?;
            if resp.remaining > 0 {
                start_after = resp.items.last().map(|kv| kv.key.clone());
            }
            drop(resp);
            if chunk.is_empty() {
                continue;
            }
            if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                // The client went away.
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Appends a page's items to `out`, each preceded by a comma unless it opens the list. Items in
/// the stored layout get their `resourceVersion` spliced in straight into `out`; a page with any
/// other item is decoded and converted (one batch per page), as the unstreamed path does.
async fn encode_page(
    strategy: &Arc<dyn Strategy>,
    items: &[KeyValue],
    out: &mut Vec<u8>,
    opens: bool,
) -> Result<(), ApiError> {
    let info = strategy.info();
    let api_version = info.api_version();
    let head = format!(
        r#"{{"apiVersion":"{api_version}","kind":"{}","metadata":{{"#,
        info.kind
    );
    let stored_layout = items.iter().all(|kv| kv.value.starts_with(head.as_bytes()));
    if stored_layout {
        out.reserve(items.iter().map(|kv| kv.value.len() + 40).sum());
        for (i, kv) in items.iter().enumerate() {
            if i > 0 || !opens {
                out.push(b',');
            }
            let rest = &kv.value[head.len()..];
            out.extend_from_slice(head.as_bytes());
            out.extend_from_slice(format!(r#""resourceVersion":"{}""#, kv.mod_revision).as_bytes());
            if rest.first() != Some(&b'}') {
                out.push(b',');
            }
            out.extend_from_slice(rest);
        }
        return Ok(());
    }
    let mut encoded = Vec::with_capacity(items.len());
    let mut slow = Vec::new();
    for kv in items {
        let spliced = super::list::splice_resource_version(
            &kv.value,
            &api_version,
            &info.kind,
            kv.mod_revision,
        );
        if spliced.is_none() {
            slow.push(kv.clone());
        }
        encoded.push(spliced);
    }
    let mut decoded = super::read_objects_encoded(strategy, slow, true)
        .await?
        .into_iter();
    for (i, item) in encoded.into_iter().enumerate() {
        let bytes = if let Some(b) = item {
            b
        } else {
            decoded
                .next()
                .ok_or_else(|| Status::internal("conversion returned too few objects"))?
        };
        if i > 0 || !opens {
            out.push(b',');
        }
        out.extend_from_slice(&bytes);
    }
    Ok(())
}
