//! GET of a collection: label and field selectors, `limit`/`continue` paging over one consistent
//! snapshot, and `resourceVersion` semantics. Also [`ListOptions`], shared with watch and
//! deletecollection.

use std::sync::Arc;

use crd_core::Status;
use crd_storage::{Freshness, ListRequest, Revision};
use serde_json::{Value, json};

use super::{Ctx, Reply, read_objects};
use crate::error::ApiError;
use crate::registry::{Strategy, meta};
use crate::request::negotiate::Output;
use crate::request::options::{ContinueToken, ListOptions, ResourceVersionMatch};
use crate::table;

/// How many stored items are read per round while filling a page through selectors.
const SCAN_CHUNK: usize = 500;

/// The strategy-dependent parts of [`ListOptions`].
impl ListOptions {
    /// Rejects field selectors on fields the resource does not support (400, as upstream).
    pub fn check_fields(&self, strategy: &dyn Strategy) -> Result<(), ApiError> {
        for f in self.fields.fields() {
            if strategy.field_value(&Value::Null, f).is_err() {
                return Err(Status::bad_request(format!("field label not supported: {f}")).into());
            }
        }
        Ok(())
    }

    /// Whether an object passes both selectors.
    pub fn matches(&self, strategy: &dyn Strategy, obj: &Value) -> bool {
        self.labels.matches_json(meta::labels(obj))
            && self.fields.matches(|f| strategy.field_value(obj, f).ok())
    }

    /// How fresh a list at the latest revision must be: `""` consistent, `0` any, `N`
    /// (`NotOlderThan`) at least `N`.
    pub fn freshness(&self) -> Freshness {
        match self.resource_version.as_str() {
            "" => Freshness::Consistent,
            rv => Freshness::NotOlderThan(rv.parse().unwrap_or(0)),
        }
    }

    /// The storage prefix to scan: the URL's namespace, or one narrowed by a
    /// `metadata.namespace=` field selector.
    pub fn prefix(&self, ctx: &Ctx<'_>, strategy: &dyn Strategy) -> String {
        let info = strategy.info();
        let ns = ctx.namespace().or_else(|| {
            if info.namespaced() {
                self.fields.exact_match("metadata.namespace")
            } else {
                None
            }
        });
        info.prefix(ns)
    }
}

/// One page of matching objects.
pub struct Page {
    /// The matching objects, in the request version.
    pub items: Vec<Value>,
    /// The snapshot revision.
    pub revision: Revision,
    /// The continue token, when more items may follow.
    pub continue_token: Option<String>,
    /// How many items remain (only without selectors).
    pub remaining: Option<u64>,
}

/// Reads one page (or everything, without a limit) of matching objects.
pub async fn read_page(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    opts: &ListOptions,
) -> Result<Page, ApiError> {
    let info = strategy.info();
    let gr = info.group_resource();
    let prefix = opts.prefix(ctx, strategy);
    let (mut revision, mut start_after) = match &opts.continue_token {
        Some(t) => {
            let start = t.start.trim_end_matches('\0');
            (continue_revision(t), Some(format!("{prefix}{start}")))
        }
        None => (snapshot_revision(opts), None),
    };
    let mut items = Vec::new();
    let mut remaining;
    let mut last_key = None;
    loop {
        let want = if opts.limit > 0 {
            opts.limit - items.len()
        } else {
            0
        };
        let chunk = if opts.limit == 0 {
            None
        } else if opts.has_selectors() {
            Some(want.max(SCAN_CHUNK))
        } else {
            Some(want)
        };
        let resp = ctx
            .store()
            .list(ListRequest {
                prefix: prefix.clone(),
                start_after: start_after.clone(),
                limit: chunk,
                revision,
                freshness: opts.freshness(),
                index_terms: crate::watch_cache::index_terms(&opts.labels, &opts.fields),
            })
            .await
            .map_err(|e| match e {
                crd_storage::StorageError::Compacted { .. } if opts.continue_token.is_some() => {
                    expired_continue(opts.continue_token.as_ref())
                }
                e => ApiError::storage(&gr, "", e),
            })?;
        revision = Some(resp.revision);
        let mut more = resp.remaining;
        let n = resp.items.len();
        let objs = read_objects(strategy, &resp.items, true).await?;
        for (i, (kv, obj)) in resp.items.iter().zip(objs).enumerate() {
            if opts.matches(strategy, &obj) {
                items.push(obj);
                last_key = Some(kv.key.clone());
                if opts.limit > 0 && items.len() == opts.limit {
                    more += (n - i - 1) as u64;
                    break;
                }
            }
            last_key = Some(kv.key.clone());
        }
        remaining = more;
        start_after.clone_from(&last_key);
        if opts.limit == 0 || items.len() >= opts.limit || resp.remaining == 0 || n == 0 {
            break;
        }
    }
    let revision = revision.unwrap_or_default();
    let continue_token = if opts.limit > 0 && remaining > 0 {
        last_key.as_deref().map(|k| {
            ContinueToken::encode(
                revision,
                &format!("{}\0", k.strip_prefix(&prefix).unwrap_or(k)),
            )
        })
    } else {
        None
    };
    let remaining = (continue_token.is_some() && !opts.has_selectors()).then_some(remaining);
    Ok(Page {
        items,
        revision,
        continue_token,
        remaining,
    })
}

/// The 410 of a continue token whose snapshot was compacted, carrying upstream's fresh token
/// (`handleCompactedErrorForPaging`): the same start key at revision -1, which lists the rest at
/// the latest revision.
fn expired_continue(token: Option<&ContinueToken>) -> ApiError {
    let mut status = Status::expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    );
    if let Some(t) = token {
        status.metadata.continue_token = ContinueToken::encode(-1, &t.start);
    }
    status.into()
}

/// The revision a continue token reads at: its snapshot, or the latest for a negative one
/// (the token of an expired list).
fn continue_revision(token: &ContinueToken) -> Option<Revision> {
    (token.rv >= 0).then_some(token.rv)
}

/// The revision a first page reads at: latest (at the options' freshness, which the store
/// checks: a revision it has not reached, after a cache's wait, is "Too large resource
/// version"), or exactly the requested one.
fn snapshot_revision(opts: &ListOptions) -> Option<Revision> {
    let rv = opts.resource_version.as_str();
    if rv.is_empty() || rv == "0" {
        return None;
    }
    let exact = opts.resource_version_match == ResourceVersionMatch::Exact
        || (opts.resource_version_match == ResourceVersionMatch::Unset && opts.limit > 0);
    exact.then(|| rv.parse().unwrap_or(0))
}

/// The request's list options, checked against the strategy's field labels.
pub fn list_options(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<ListOptions, ApiError> {
    let opts = ctx
        .opts
        .list
        .clone()
        .ok_or_else(|| Status::internal("list options were not parsed for this verb"))?;
    opts.check_fields(strategy)?;
    Ok(opts)
}

/// Lists a collection.
pub async fn handle(ctx: &Ctx<'_>, strategy: &Arc<dyn Strategy>) -> Result<Reply, ApiError> {
    let opts = list_options(ctx, strategy.as_ref())?;
    if opts.limit == 0
        && opts.continue_token.is_none()
        && super::list_stream::enabled()
        && let Some(form) = super::list_stream::Form::of(ctx.output, ctx.opts.table)
    {
        let scan = super::list_stream::Scan {
            prefix: opts.prefix(ctx, strategy.as_ref()),
            revision: snapshot_revision(&opts),
            freshness: opts.freshness(),
            selectors: Some(opts),
        };
        return super::list_stream::respond(
            ctx.store().clone(),
            strategy.clone(),
            scan,
            form,
            super::list_stream::PAGE,
        )
        .await;
    }
    if ctx.output == Output::Json && !opts.has_selectors() && strategy.verbatim_reads() {
        return verbatim_list(ctx, strategy, &opts).await;
    }
    let strategy = strategy.as_ref();
    let page = read_page(ctx, strategy, &opts).await?;
    let mut list_meta = json!({ "resourceVersion": page.revision.to_string() });
    if let Some(c) = &page.continue_token {
        list_meta["continue"] = Value::String(c.clone());
    }
    if let Some(r) = page.remaining {
        list_meta["remainingItemCount"] = Value::from(r);
    }
    let info = strategy.info();
    let body = match ctx.output {
        Output::Table => strategy.render_table(
            &page.items,
            ctx.opts.table.include_object,
            ctx.opts.table.with_headers,
            list_meta,
        ),
        Output::PartialObjectMetadata => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list_meta,
            "items": page.items.iter().map(table::partial_object_metadata).collect::<Vec<_>>(),
        }),
        _ => json!({
            "apiVersion": info.api_version(),
            "items": page.items,
            "kind": info.list_kind,
            "metadata": list_meta,
        }),
    };
    Ok(Reply::value(200, body))
}

/// How the server stores an object at one version (sorted keys):
/// `{"apiVersion":"<api_version>","kind":"<kind>","metadata":{...`. Built once per list, so that
/// each item's layout check and `resourceVersion` splice costs no formatting of its own.
pub struct StoredHead(Vec<u8>);

impl StoredHead {
    /// The head of objects of `kind` stored at `api_version`.
    pub fn new(api_version: &str, kind: &str) -> StoredHead {
        StoredHead(
            format!(r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"#).into_bytes(),
        )
    }

    /// Where the metadata object opens (its `{`) in bytes of this layout.
    pub fn metadata_at(&self) -> usize {
        self.0.len() - 1
    }

    /// Whether `stored` has this layout, i.e. needs no decoding to be answered.
    pub fn matches(&self, stored: &[u8]) -> bool {
        stored.starts_with(&self.0)
    }

    /// Appends `stored` with `"resourceVersion":"<revision>"` spliced into its metadata; `false`
    /// (and nothing appended) for any other layout.
    pub fn splice_into(&self, stored: &[u8], revision: i64, out: &mut Vec<u8>) -> bool {
        let Some(rest) = stored.strip_prefix(self.0.as_slice()) else {
            return false;
        };
        out.reserve(stored.len() + 40);
        out.extend_from_slice(&self.0);
        out.extend_from_slice(br#""resourceVersion":""#);
        // Formatted in place: no string per item.
        let _ = std::io::Write::write_fmt(out, format_args!("{revision}"));
        out.push(b'"');
        if rest.first() != Some(&b'}') {
            out.push(b',');
        }
        out.extend_from_slice(rest);
        true
    }
}

/// The list path without decoding: no selectors, JSON output, and reads that add nothing. Objects
/// stored at another version still go through the pipeline (one conversion batch per page).
async fn verbatim_list(
    ctx: &Ctx<'_>,
    strategy: &Arc<dyn Strategy>,
    opts: &ListOptions,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let gr = info.group_resource();
    let prefix = opts.prefix(ctx, strategy.as_ref());
    // As in `read_page`: the token carries the last key sent (exclusive) and the snapshot.
    let (start_after, revision) = match &opts.continue_token {
        Some(t) => (
            Some(format!("{prefix}{}", t.start.trim_end_matches('\0'))),
            continue_revision(t),
        ),
        None => (None, snapshot_revision(opts)),
    };
    let resp = ctx
        .store()
        .list(ListRequest {
            prefix: prefix.clone(),
            start_after,
            limit: (opts.limit > 0).then_some(opts.limit),
            revision,
            freshness: opts.freshness(),
            index_terms: Vec::new(),
        })
        .await
        .map_err(|e| match e {
            crd_storage::StorageError::Compacted { .. } if opts.continue_token.is_some() => {
                expired_continue(opts.continue_token.as_ref())
            }
            e => ApiError::storage(&gr, "", e),
        })?;
    let api_version = info.api_version();
    let mut list_meta = json!({ "resourceVersion": resp.revision.to_string() });
    if opts.limit > 0
        && resp.remaining > 0
        && let Some(last) = resp.items.last()
    {
        let token = ContinueToken::encode(
            resp.revision,
            &format!("{}\0", last.key.strip_prefix(&prefix).unwrap_or(&last.key)),
        );
        list_meta["continue"] = Value::String(token);
        list_meta["remainingItemCount"] = Value::from(resp.remaining);
    }
    let head = format!(
        r#"{{"apiVersion":{},"items":["#,
        serde_json::to_string(&api_version).unwrap_or_default()
    );
    let tail = format!(
        r#"],"kind":{},"metadata":{}}}"#,
        serde_json::to_string(&info.list_kind).unwrap_or_default(),
        list_meta
    );
    let mut items = VerbatimItems {
        strategy: strategy.clone(),
        head: StoredHead::new(&api_version, &info.kind),
        items: resp.items,
        next: 0,
        converted: 0,
    };
    let expected: usize = items.items.iter().map(|kv| kv.value.len() + 48).sum();
    let mut body = BodyPieces::new(head.into_bytes(), expected + tail.len());
    let reply = |body| Reply {
        code: 200,
        body,
        warnings: Vec::new(),
        content_type: None,
    };
    // Without an in-process conversion of more than a chunk, the page is encoded at once (a
    // webhook gets one call per page), in pieces.
    if !items.pipelined() {
        items.encode_next(usize::MAX, &mut body).await?;
        body.buf().extend_from_slice(tail.as_bytes());
        let mut pieces = body.take();
        return Ok(reply(if pieces.len() == 1 {
            super::ReplyBody::RawJson(pieces.remove(0))
        } else {
            super::ReplyBody::Stream(crate::body::pieces(pieces))
        }));
    }
    // The first chunk is converted before the response starts (a failure there is a Status);
    // the next one is converted while the one before is encrypted and written. The channel
    // holds a chunk's pieces, so that handing a chunk over does not wait for its first piece
    // to be written.
    items.encode_next(PIPELINED_CHUNK, &mut body).await?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, crate::body::BodyError>>(
        PIECES_PER_CHUNK,
    );
    let prefix_for_log = prefix.clone();
    tokio::spawn(async move {
        loop {
            if items.done() {
                body.buf().extend_from_slice(tail.as_bytes());
            }
            for piece in body.take() {
                if tx.send(Ok(piece)).await.is_err() {
                    return;
                }
            }
            if items.done() {
                return;
            }
            if let Err(e) = items.encode_next(PIPELINED_CHUNK, &mut body).await {
                tracing::warn!(error = ?e, prefix = prefix_for_log, "paged list aborted midway");
                let _ = tx.send(Err(format!("{e:?}").into())).await;
                return;
            }
        }
    });
    Ok(reply(super::ReplyBody::Stream(
        crate::body::fallible_stream_body(rx),
    )))
}

/// About how many bytes of a page's body go in one piece: far below the allocator's 8 MiB
/// "oversize" threshold (a larger buffer gets fresh pages, a page fault each, returned to the
/// kernel when freed, and one that grows is copied whole), large enough that a piece costs
/// the HTTP layer one write of many TLS records.
pub const BODY_PIECE: usize = 512 * 1024;

/// Pieces a converted chunk fills, at most for objects of up to 3 KiB encoded (a larger
/// chunk waits for room in the channel, i.e. is written before the next is converted).
const PIECES_PER_CHUNK: usize = (PIPELINED_CHUNK * 3 * 1024).div_ceil(BODY_PIECE) + 1;

/// A page's body as it is encoded: pieces of about [`BODY_PIECE`] bytes, items written
/// straight into them (no buffer per item, no copy into one body).
struct BodyPieces {
    full: Vec<bytes::Bytes>,
    open: Vec<u8>,
}

impl BodyPieces {
    /// Pieces that open with `head`, for items of about `expected` bytes in all (a small list
    /// gets a buffer of its size, a large one a piece's).
    fn new(mut head: Vec<u8>, expected: usize) -> BodyPieces {
        head.reserve(expected.min(BODY_PIECE + BODY_PIECE / 8));
        BodyPieces {
            full: Vec::new(),
            open: head,
        }
    }

    /// The buffer the next item goes to: a new one once the open one holds a piece's bytes
    /// (or was taken), sized for a piece so that it does not grow item by item.
    fn buf(&mut self) -> &mut Vec<u8> {
        if self.open.len() >= BODY_PIECE {
            self.full
                .push(bytes::Bytes::from(std::mem::take(&mut self.open)));
        }
        if self.open.capacity() == 0 {
            self.open.reserve(BODY_PIECE + BODY_PIECE / 8);
        }
        &mut self.open
    }

    /// The pieces written so far, the open one included, in order.
    fn take(&mut self) -> Vec<bytes::Bytes> {
        let mut pieces = std::mem::take(&mut self.full);
        if !self.open.is_empty() {
            pieces.push(bytes::Bytes::from(std::mem::take(&mut self.open)));
        }
        pieces
    }
}

/// Where list items are appended: one buffer (a streamed list's chunk), or a page's pieces.
pub trait ItemSink {
    /// The buffer the next item goes to.
    fn buf(&mut self) -> &mut Vec<u8>;
}

impl ItemSink for Vec<u8> {
    fn buf(&mut self) -> &mut Vec<u8> {
        self
    }
}

impl ItemSink for BodyPieces {
    fn buf(&mut self) -> &mut Vec<u8> {
        BodyPieces::buf(self)
    }
}

/// Appends `items` to `out` without decoding what needs none, each after a comma unless `opens`
/// and it is the first: an item in the stored layout (`head`) with its `resourceVersion`
/// spliced in, the others decoded and converted in one batch first (`converted` is how many of
/// the list's items were converted before, so a failure names the item's index). Both list
/// paths, paged and streamed, append their JSON items here. Returns how many were converted.
pub async fn append_items(
    strategy: &Arc<dyn Strategy>,
    head: &StoredHead,
    items: &[crd_storage::KeyValue],
    opens: bool,
    converted: usize,
    out: &mut impl ItemSink,
) -> Result<usize, ApiError> {
    let slow: Vec<crd_storage::KeyValue> = items
        .iter()
        .filter(|kv| !head.matches(&kv.value))
        .cloned()
        .collect();
    let n = slow.len();
    let mut encoded = Vec::new().into_iter();
    if n > 0 {
        encoded = super::read_objects_encoded(strategy, slow, true, converted)
            .await?
            .into_iter();
    }
    for (i, kv) in items.iter().enumerate() {
        let buf = out.buf();
        if i > 0 || !opens {
            buf.push(b',');
        }
        if !head.splice_into(&kv.value, kv.mod_revision, buf) {
            let item = encoded
                .next()
                .ok_or_else(|| Status::internal("conversion returned too few objects"))?;
            buf.extend_from_slice(&item);
        }
    }
    Ok(n)
}

/// Items per chunk of a page converted in process and streamed: large enough to split over
/// the cores (two halves of 256 objects each make a thread hop negligible), small enough that
/// converting the next chunk overlaps with writing this one for most of the page.
pub const PIPELINED_CHUNK: usize = 512;

/// The stored items of one page, encoded chunk by chunk in key order: items in the stored
/// layout at the request version get their resourceVersion spliced in, the others are
/// decoded and converted ([`super::read_objects_encoded`]).
struct VerbatimItems {
    strategy: Arc<dyn Strategy>,
    head: StoredHead,
    items: Vec<crd_storage::KeyValue>,
    /// The first item not encoded yet.
    next: usize,
    /// Items converted so far: a conversion failure names its item by its index among the
    /// page's converted items, whichever chunk it is in.
    converted: usize,
}

impl VerbatimItems {
    fn done(&self) -> bool {
        self.next >= self.items.len()
    }

    /// Whether the page is worth converting chunk by chunk while sending: the conversion runs
    /// in process (a webhook gets one call per page) and more than a chunk needs it.
    fn pipelined(&self) -> bool {
        let in_process = self
            .strategy
            .conversion()
            .is_some_and(|plan| plan.converter.in_process());
        in_process
            && self
                .items
                .iter()
                .filter(|kv| !self.head.matches(&kv.value))
                .nth(PIPELINED_CHUNK)
                .is_some()
    }

    /// Appends the next `chunk` items to `out`, each after a comma unless it opens the list.
    async fn encode_next(&mut self, chunk: usize, out: &mut BodyPieces) -> Result<(), ApiError> {
        let end = self.items.len().min(self.next.saturating_add(chunk));
        let page = &self.items[self.next..end];
        let opens = self.next == 0;
        self.converted +=
            append_items(&self.strategy, &self.head, page, opens, self.converted, out).await?;
        self.next = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// Items go into pieces of about `BODY_PIECE` bytes, in order, none split, and what is taken
    /// is all that was written; a piece taken midway is followed by a fresh one.
    #[test]
    fn a_body_is_written_in_pieces_of_whole_items() {
        let item = vec![b'x'; 1000];
        let mut pieces = super::BodyPieces::new(b"[".to_vec(), 10);
        let mut written = b"[".to_vec();
        let n = 2 * super::BODY_PIECE / item.len() + 3;
        for _ in 0..n {
            pieces.buf().extend_from_slice(&item);
            written.extend_from_slice(&item);
        }
        let first = pieces.take();
        assert_eq!(first.len(), 3);
        assert!(
            first[..2]
                .iter()
                .all(|p| p.len() >= super::BODY_PIECE && p.len() < super::BODY_PIECE + 1000)
        );
        pieces.buf().push(b']');
        written.push(b']');
        let all: Vec<u8> = first
            .iter()
            .chain(&pieces.take())
            .flatten()
            .copied()
            .collect();
        assert_eq!(all, written);
        assert!(pieces.take().is_empty());
    }

    /// `stored` with its `resourceVersion` spliced in; `None` (and nothing appended) for any
    /// other layout.
    fn splice(head: &super::StoredHead, stored: &[u8], revision: i64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let spliced = head.splice_into(stored, revision, &mut out);
        assert_eq!(spliced, !out.is_empty());
        spliced.then_some(out)
    }

    #[test]
    fn resource_versions_are_spliced_only_into_the_stored_layout() {
        let stored = br#"{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{}}"#;
        let head = super::StoredHead::new("g/v1", "K");
        let out = splice(&head, stored, 42).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "42");
        assert_eq!(v["metadata"]["name"], "a");
        let empty = br#"{"apiVersion":"g/v1","kind":"K","metadata":{}}"#;
        let out = splice(&head, empty, 7).unwrap();
        assert_eq!(
            out,
            br#"{"apiVersion":"g/v1","kind":"K","metadata":{"resourceVersion":"7"}}"#
        );
        // Another version, or another key order, goes through the decoding path.
        assert!(splice(&super::StoredHead::new("g/v2", "K"), stored, 1).is_none());
        let other = br#"{"apiVersion":"g/v1","data":1,"kind":"K","metadata":{}}"#;
        assert!(splice(&head, other, 1).is_none());
        assert!(!head.matches(other) && head.matches(stored));
    }
}
