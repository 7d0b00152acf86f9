//! Full lists streamed page by page from storage to the socket, so that a list of 100k objects
//! holds a page or two in memory instead of the whole response (issue 19; upstream streams the
//! encoding of lists it already holds, KEP-5116 `StreamingCollectionEncodingToJSON`).
//!
//! Every list without `limit`/`continue` is streamed, in each form the server renders
//! ([`Form`]): the resource's own JSON list, `PartialObjectMetadataList` (metadata-only
//! informers), `Table` (`kubectl get`) and YAML; with or without label and field selectors
//! (read through the watch cache's indexes, page by page, and filtered as they are read).
//! Protobuf is never rendered (such requests get JSON).
//!
//! The body is byte for byte the one the unstreamed path (`list::read_page`, then the renderer)
//! builds, for example
//! `{"apiVersion":..,"items":[..],"kind":"XList","metadata":{"resourceVersion":".."}}`. Every
//! page is read at the first page's revision, so the list is one snapshot. The first page is read
//! before the response starts: an error there is an ordinary Status. An error on a later page
//! cannot become a Status any more (the `200` and part of the body are sent); the body then ends
//! with an error, which aborts the response (HTTP/1.1: the connection closes before the last
//! chunk; HTTP/2: the stream is reset), so that no client takes the partial list for a whole one.
//! Upstream appends the error Status to the partial body, which clients fail to decode; aborting
//! also fails clients that would not decode it.
//!
//! Memory: a list holds one storage page of items (for the cache, references to its values),
//! decodes [`DECODE`] of them at a time when a form or selector needs decoded objects, and
//! encodes them in chunks of [`CHUNK`] items ([`DECODED_CHUNK`] for Table rows and metadata), one waiting in
//! the channel while the next is encoded. Only the first chunk is encoded before the response
//! starts. Chunks handed over and not yet written to the connection are bounded by
//! [`IN_FLIGHT`] bytes per list, whatever hyper would queue for a slow reader.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use crd_core::Status;
use crd_storage::{Freshness, KeyValue, ListRequest, ListResponse, Revision, Store};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::{Reply, ReplyBody, read_objects};
use crate::body::BodyError;
use crate::error::ApiError;
use crate::registry::Strategy;
use crate::request::negotiate::Output;
use crate::request::options::{ListOptions, TableOptions};
use crate::table;

/// Items per storage read of a streamed list (upstream's cacher pages its own lists from etcd
/// by 10,000; a smaller page bounds a list's memory to well under a megabyte of 1 KiB objects).
pub const PAGE: usize = 500;

/// Items per chunk handed to the socket (about 64 KiB of 1 KiB objects).
const CHUNK: usize = 64;

/// Stored items per chunk of the forms that render small rows (Tables, metadata-only lists): a
/// few KiB of rows or items. Full objects (JSON with selectors, YAML) keep [`CHUNK`]: 16 of
/// them were small enough chunks that a single 50%-selector list's peak rose from about 1 to
/// 2–3 pages (memory bench, session 27). When the client reads slower than the list is encoded,
/// hyper queues up to 16 chunks (or 400 KiB) per connection before it stops asking for more,
/// so the chunk's size sets what a slow reader holds: 64 Table rows (19 KB) made that queue
/// alone 0.3 MB, twice a 500-row Table page.
const DECODED_CHUNK: usize = 16;

/// Items decoded at once when a form or selector needs decoded objects: a decoded 1 KiB object
/// is several KiB of `Value`, and a Table renders its batch into a `Value` of rows (with each
/// row's `PartialObjectMetadata`) before encoding it, so the batch and its rendering were a
/// single list's largest buffers in those forms (heaptrack: about 0.2 MB at 16, 0.5 MB at 64).
/// Four keep both small while the per-batch work (a conversion call, the Table's columns) stays
/// amortized. Encoding still fills [`CHUNK`]-item chunks.
const DECODE: usize = 4;

/// A chunk's buffer grows by doubling while it is encoded, so up to half of it is spare; a
/// chunk waits in the channel and in hyper's write queue with whatever capacity it has. Handing
/// it over at its length keeps that spare memory out of every chunk in flight (the copy, when
/// the allocator cannot shrink in place, is one chunk's memcpy).
fn exact(mut chunk: Vec<u8>) -> Vec<u8> {
    if chunk.capacity() - chunk.len() > chunk.len() / 8 {
        chunk.shrink_to_fit();
    }
    chunk
}

/// Bytes of one list's encoded chunks on their way at once: in the channel, in hyper's write
/// queue, or not yet taken by the TLS layer (which buffers 64 KiB of its own). hyper's HTTP/1.1
/// connection asks the body for more while fewer than 16 chunks and 400 KiB (`max_buf_size`,
/// which also caps request headers and is left alone) wait to be written, so a client reading
/// slower than the list is encoded (the memory bench's own reader, on a loaded machine) let it
/// queue most of a 537 KB JSON page per list. A chunk larger than this goes alone.
const IN_FLIGHT: usize = 32 * 1024;

/// One list's budget of [`IN_FLIGHT`] bytes: a chunk is handed over only once its bytes are
/// free, and gives them back when the connection drops it, which hyper does once the chunk is
/// written (HTTP/2: once framed within the stream's 64 KiB send buffer). So what waits for a
/// slow reader is bounded here, before hyper, whatever hyper's own limits. A consumer that kept
/// every chunk (collecting the whole body in memory) would stall the list after the budget:
/// the server's consumers are the connections.
#[derive(Clone)]
struct InFlight(Arc<Semaphore>);

/// A chunk with its share of the budget, handed back when the chunk is dropped.
struct Budgeted {
    bytes: Vec<u8>,
    _permit: OwnedSemaphorePermit,
}

impl AsRef<[u8]> for Budgeted {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl InFlight {
    fn new() -> Self {
        Self(Arc::new(Semaphore::new(IN_FLIGHT)))
    }

    /// `chunk` as body bytes, once the budget has room for it.
    async fn chunk(&self, chunk: Vec<u8>) -> Bytes {
        let chunk = exact(chunk);
        let want = u32::try_from(chunk.len().clamp(1, IN_FLIGHT)).unwrap_or(u32::MAX);
        match self.0.clone().acquire_many_owned(want).await {
            Ok(permit) => Bytes::from_owner(Budgeted {
                bytes: chunk,
                _permit: permit,
            }),
            // Never closed; without a budget the chunk still goes.
            Err(_) => Bytes::from(chunk),
        }
    }
}

/// Whether full lists are streamed: `CRD_APISERVER_STREAM_LISTS=false` turns it off, so that a
/// benchmark can measure the server with and without it in one build.
pub fn enabled() -> bool {
    static ON: LazyLock<bool> = LazyLock::new(|| {
        std::env::var("CRD_APISERVER_STREAM_LISTS").map_or(true, |v| v != "false")
    });
    *ON
}

/// What a streamed list's body is: each of the forms the unstreamed renderer produces for a
/// list.
#[derive(Clone, Copy, Debug)]
pub enum Form {
    /// The resource's own list kind, as JSON.
    Items,
    /// `meta.k8s.io/v1 PartialObjectMetadataList`.
    Metadata,
    /// `meta.k8s.io/v1 Table`, with its `includeObject` and `noHeaders` options.
    Table(TableOptions),
    /// The resource's own list kind, as YAML.
    Yaml,
}

impl Form {
    /// The form of a list rendered in `output`; `None` for outputs a list never has.
    pub fn of(output: Output, table: TableOptions) -> Option<Form> {
        match output {
            Output::Json => Some(Form::Items),
            Output::PartialObjectMetadata => Some(Form::Metadata),
            Output::Table => Some(Form::Table(table)),
            Output::Yaml => Some(Form::Yaml),
            Output::AggregatedDiscovery => None,
        }
    }

    fn content_type(self) -> Option<&'static str> {
        match self {
            Form::Items => None,
            Form::Metadata => Some(table::METADATA_LIST_CONTENT_TYPE),
            Form::Table(_) => Some(table::TABLE_CONTENT_TYPE),
            Form::Yaml => Some("application/yaml"),
        }
    }
}

/// Where a streamed list reads, and which objects it keeps.
pub struct Scan {
    /// The storage prefix of the collection.
    pub prefix: String,
    /// The snapshot asked for (`None`: the latest, with `freshness`).
    pub revision: Option<Revision>,
    /// How fresh a read of the latest state must be.
    pub freshness: Freshness,
    /// The request's selectors; `None` or empty selectors keep every object.
    pub selectors: Option<ListOptions>,
}

/// Lists the collection under `scan` in `form`, reading storage `page` items at a time: one
/// whole body when the first page is everything, else a streamed one.
pub async fn respond(
    store: Arc<dyn Store>,
    strategy: Arc<dyn Strategy>,
    scan: Scan,
    form: Form,
    page: usize,
) -> Result<Reply, ApiError> {
    let gr = strategy.info().group_resource();
    let selectors = scan.selectors.filter(ListOptions::has_selectors);
    let index_terms = selectors.as_ref().map_or_else(Vec::new, |o| {
        crate::watch_cache::index_terms(&o.labels, &o.fields)
    });
    let webhook = strategy
        .conversion()
        .is_some_and(|plan| matches!(plan.converter, crate::conversion::Converter::Webhook(_)));
    let mut lister = Lister {
        store,
        strategy,
        prefix: scan.prefix,
        index_terms,
        selectors,
        form,
        page,
        send_batch: if webhook { page } else { CHUNK },
        decode_batch: if webhook { page } else { DECODE },
        in_flight: InFlight::new(),
    };
    if !webhook && matches!(lister.form, Form::Table(_) | Form::Metadata) {
        lister.send_batch = DECODED_CHUNK;
    }
    let mut first = lister
        .read(None, scan.revision, scan.freshness)
        .await
        .map_err(|e| ApiError::storage(&gr, "", e))?;
    let revision = first.revision;
    let (mut head, tail) = lister.frame(revision)?;
    let mut wrote = false;
    let content_type = form.content_type();
    if first.remaining == 0 {
        lister.encode(&first.items, &mut head, &mut wrote).await?;
        head.extend_from_slice(&lister.close(wrote)?);
        head.extend_from_slice(&tail);
        return Ok(Reply {
            code: 200,
            body: ReplyBody::RawJson(Bytes::from(head)),
            warnings: Vec::new(),
            content_type,
        });
    }
    // Only the first decode batch is encoded before the response starts (an error there is
    // still a Status); the rest of the first page goes out chunk by chunk like every later
    // page, so that the head is a chunk, not a whole encoded page.
    let rest = first
        .items
        .split_off(lister.send_batch.min(first.items.len()));
    lister.encode(&first.items, &mut head, &mut wrote).await?;
    let last = rest.last().or(first.items.last()).map(|kv| kv.key.clone());
    drop(first);
    // One chunk waits in the channel while the next is read and encoded.
    let (tx, rx) = mpsc::channel::<Result<Bytes, BodyError>>(1);
    tokio::spawn(async move {
        if tx
            .send(Ok(lister.in_flight.chunk(head).await))
            .await
            .is_err()
        {
            return;
        }
        let sent = match lister.send_items(&rest, &mut wrote, &tx).await {
            Ok(true) => {
                drop(rest);
                lister.send_pages(last, revision, &mut wrote, &tx).await
            }
            other => other,
        };
        match sent {
            Ok(true) => {
                let end = lister.close(wrote).map(|mut end| {
                    end.extend_from_slice(&tail);
                    Bytes::from(end)
                });
                let _ = tx.send(end.map_err(|e| format!("{e:?}").into())).await;
            }
            // The client went away.
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, prefix = lister.prefix, "streamed list aborted midway");
                let _ = tx.send(Err(e)).await;
            }
        }
    });
    Ok(Reply {
        code: 200,
        body: ReplyBody::Stream(crate::body::fallible_stream_body(rx)),
        warnings: Vec::new(),
        content_type,
    })
}

/// Reads and encodes the pages of one list.
struct Lister {
    store: Arc<dyn Store>,
    strategy: Arc<dyn Strategy>,
    prefix: String,
    index_terms: Vec<(String, String)>,
    selectors: Option<ListOptions>,
    form: Form,
    page: usize,
    /// Stored items sent at once: [`CHUNK`] ([`DECODED_CHUNK`] for decoded forms), or the page
    /// when a conversion webhook may be
    /// called (the architecture's one call per batch of a list).
    send_batch: usize,
    /// Stored items decoded at once: [`DECODE`], or the page with a conversion webhook.
    decode_batch: usize,
    /// The chunks on their way to the client.
    in_flight: InFlight,
}

impl Lister {
    async fn read(
        &self,
        start_after: Option<String>,
        revision: Option<Revision>,
        freshness: Freshness,
    ) -> Result<ListResponse, crd_storage::StorageError> {
        self.store
            .list(ListRequest {
                prefix: self.prefix.clone(),
                start_after,
                limit: Some(self.page),
                revision,
                freshness,
                index_terms: self.index_terms.clone(),
            })
            .await
    }

    /// Sends the pages after the first, read at its revision. Returns `false` when the client
    /// went away.
    async fn send_pages(
        &self,
        mut start_after: Option<String>,
        revision: Revision,
        wrote: &mut bool,
        tx: &mpsc::Sender<Result<Bytes, BodyError>>,
    ) -> Result<bool, BodyError> {
        while let Some(after) = start_after.take() {
            let resp = self
                .read(Some(after), Some(revision), Freshness::Consistent)
                .await?;
            if resp.remaining > 0 {
                start_after = resp.items.last().map(|kv| kv.key.clone());
            }
            if !self.send_items(&resp.items, wrote, tx).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sends `items` in chunks of `send_batch` items (or the page, with a conversion webhook),
    /// each decoded and
    /// encoded only when the one before has left: a list holds its page's items (for the
    /// cache, references to its values) and a few chunks, not a page of decoded objects or
    /// encoded bytes. Returns `false` when the client went away.
    async fn send_items(
        &self,
        items: &[KeyValue],
        wrote: &mut bool,
        tx: &mpsc::Sender<Result<Bytes, BodyError>>,
    ) -> Result<bool, BodyError> {
        for items in items.chunks(self.send_batch) {
            let mut chunk = Vec::new();
            self.encode(items, &mut chunk, wrote)
                .await
                .map_err(|e| format!("{e:?}"))?;
            if chunk.is_empty() {
                continue;
            }
            if tx
                .send(Ok(self.in_flight.chunk(chunk).await))
                .await
                .is_err()
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The bytes before the first item and after the last one, for a list at `revision`.
    fn frame(&self, revision: Revision) -> Result<(Vec<u8>, Vec<u8>), ApiError> {
        let info = self.strategy.info();
        let list_meta = json!({ "resourceVersion": revision.to_string() });
        let json = |v: &Value| -> Result<String, ApiError> {
            serde_json::to_string(v).map_err(|e| Status::internal(e).into())
        };
        let (head, tail) = match self.form {
            Form::Items => (
                format!(
                    r#"{{"apiVersion":{},"items":["#,
                    json(&info.api_version().into())?
                ),
                format!(
                    r#"],"kind":{},"metadata":{}}}"#,
                    json(&info.list_kind.as_str().into())?,
                    list_meta
                ),
            ),
            Form::Metadata => (
                r#"{"apiVersion":"meta.k8s.io/v1","items":["#.to_string(),
                format!(r#"],"kind":"PartialObjectMetadataList","metadata":{list_meta}}}"#),
            ),
            Form::Table(t) => {
                // The Table of no rows ends with its rows (keys are sorted): cut there.
                let empty = json(&self.strategy.render_table(
                    &[],
                    t.include_object,
                    t.with_headers,
                    list_meta,
                ))?;
                let head = empty
                    .strip_suffix(r#""rows":[]}"#)
                    .ok_or_else(|| Status::internal("a Table does not end with its rows"))?;
                (format!(r#"{head}"rows":["#), "]}".to_string())
            }
            Form::Yaml => (
                yaml(&json!({ "apiVersion": info.api_version() }))?,
                yaml(&json!({ "kind": info.list_kind, "metadata": list_meta }))?,
            ),
        };
        Ok((head.into_bytes(), tail.into_bytes()))
    }

    /// What ends the items: YAML writes `items: []` for a list that had none.
    fn close(&self, wrote: bool) -> Result<Vec<u8>, ApiError> {
        match self.form {
            Form::Yaml if !wrote => Ok(yaml(&json!({ "items": [] }))?.into_bytes()),
            _ => Ok(Vec::new()),
        }
    }

    /// Whether items are sent as stored (the resource's JSON list, no selectors, reads that add
    /// nothing): no decoding.
    fn verbatim(&self) -> bool {
        matches!(self.form, Form::Items)
            && self.selectors.is_none()
            && self.strategy.verbatim_reads()
    }

    /// The objects of one storage page that pass the selectors, decoded and converted (one
    /// conversion batch per page).
    async fn decode(&self, items: &[KeyValue]) -> Result<Vec<Value>, ApiError> {
        let strategy = self.strategy.as_ref();
        let mut objs = read_objects(strategy, items, true).await?;
        if let Some(s) = &self.selectors {
            objs.retain(|o| s.matches(strategy, o));
        }
        Ok(objs)
    }

    /// Appends the stored items that pass the selectors to `out`; `wrote` says whether any item
    /// was written before (JSON separates items by commas; YAML opens the `items:` sequence
    /// once). Items are decoded [`DECODE`] at a time, so that no more than that many decoded
    /// objects are alive, except through a conversion webhook: one call per page.
    async fn encode(
        &self,
        items: &[KeyValue],
        out: &mut Vec<u8>,
        wrote: &mut bool,
    ) -> Result<(), ApiError> {
        if self.verbatim() {
            return encode_verbatim(&self.strategy, items, out, wrote).await;
        }
        for batch in items.chunks(self.decode_batch) {
            let objs = self.decode(batch).await?;
            for group in objs.chunks(CHUNK) {
                self.write(group, out, wrote)?;
            }
        }
        Ok(())
    }

    /// Appends decoded objects to `out` in the list's form.
    fn write(&self, objs: &[Value], out: &mut Vec<u8>, wrote: &mut bool) -> Result<(), ApiError> {
        if objs.is_empty() {
            return Ok(());
        }
        let comma = |out: &mut Vec<u8>, wrote: &mut bool| {
            if std::mem::replace(wrote, true) {
                out.push(b',');
            }
        };
        match self.form {
            Form::Items => {
                for o in objs {
                    comma(out, wrote);
                    super::encode::write_value(out, o).map_err(Status::internal)?;
                }
            }
            Form::Metadata => {
                for o in objs {
                    comma(out, wrote);
                    super::encode::write_value(out, &table::partial_object_metadata(o))
                        .map_err(Status::internal)?;
                }
            }
            Form::Table(t) => {
                let mut table =
                    self.strategy
                        .render_table(objs, t.include_object, false, json!({}));
                let Some(Value::Array(rows)) = table.get_mut("rows").map(Value::take) else {
                    return Err(Status::internal("a Table without rows").into());
                };
                for r in &rows {
                    comma(out, wrote);
                    super::encode::write_value(out, r).map_err(Status::internal)?;
                }
            }
            Form::Yaml => {
                let items = yaml(&json!({ "items": objs }))?;
                // Later chunks continue the sequence the first one opened.
                let items = if std::mem::replace(wrote, true) {
                    items
                        .strip_prefix("items:\n")
                        .ok_or_else(|| Status::internal("unexpected YAML layout of items"))?
                } else {
                    &items
                };
                out.extend_from_slice(items.as_bytes());
            }
        }
        Ok(())
    }
}

fn yaml(v: &Value) -> Result<String, ApiError> {
    serde_saphyr::to_string(v).map_err(|e| Status::internal(e).into())
}

/// Appends stored items to `out`, each preceded by a comma unless it opens the list (`wrote`
/// says whether an item was written before, and becomes true when one is), as the paged path
/// appends them ([`super::list::append_items`]): items in the stored layout with their
/// `resourceVersion` spliced in straight into `out`, the others decoded and converted in one
/// batch.
async fn encode_verbatim(
    strategy: &Arc<dyn Strategy>,
    items: &[KeyValue],
    out: &mut Vec<u8>,
    wrote: &mut bool,
) -> Result<(), ApiError> {
    let opens = !*wrote;
    *wrote |= !items.is_empty();
    let info = strategy.info();
    let head = super::list::StoredHead::new(&info.api_version(), &info.kind);
    out.reserve(items.iter().map(|kv| kv.value.len() + 40).sum());
    super::list::append_items(strategy, &head, items, opens, 0, out).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use crd_storage::{Freshness, Store};
    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    use super::{CHUNK, Form, PAGE, Scan, respond};
    use crate::handlers::ReplyBody;
    use crate::registry::Strategy;
    use crate::registry::namespaces::NamespaceStrategy;

    /// A streamed list's first body chunk is one chunk of items, not the whole first page
    /// encoded before the response starts (that page was a list's largest buffer: about
    /// 0.5 MB of 1 KiB objects, on top of the chunks in flight).
    #[tokio::test]
    async fn a_streamed_list_starts_with_one_chunk_not_a_whole_page() {
        let n = PAGE + 10;
        let (frames, _dir) = namespace_frames(n, Form::Items).await;
        let items = |b: &[u8]| {
            String::from_utf8_lossy(b)
                .matches(r#""kind":"Namespace""#)
                .count()
        };
        assert!(
            frames.iter().all(|f| items(f) <= CHUNK),
            "items per frame: {:?}",
            frames.iter().map(|f| items(f)).collect::<Vec<_>>()
        );
        let whole: Vec<u8> = frames.concat();
        let list: Value = serde_json::from_slice(&whole).expect("one JSON list");
        let names: Vec<&str> = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        let want: Vec<String> = (0..n).map(|i| format!("ns-{i:04}")).collect();
        assert_eq!(names, want);
    }

    /// Forms that decode send chunks of a few rows: a client that reads slowly lets hyper queue
    /// 16 chunks per connection, so 64-row Table chunks held 0.3 MB there (two Table pages).
    #[tokio::test]
    async fn a_decoded_form_is_sent_in_small_chunks() {
        let n = PAGE + 10;
        let table = crate::request::options::TableOptions {
            include_object: crate::table::IncludeObject::Metadata,
            with_headers: true,
        };
        let (frames, _dir) = namespace_frames(n, Form::Table(table)).await;
        let rows = |b: &[u8]| String::from_utf8_lossy(b).matches(r#""cells":"#).count();
        assert!(
            frames.iter().all(|f| rows(f) <= super::DECODED_CHUNK),
            "rows per frame: {:?}",
            frames.iter().map(|f| rows(f)).collect::<Vec<_>>()
        );
        let whole: Value = serde_json::from_slice(&frames.concat()).expect("one Table");
        assert_eq!(whole["rows"].as_array().map(Vec::len), Some(n));
    }

    /// A client that does not read keeps at most [`super::IN_FLIGHT`] bytes of a list's
    /// chunks waiting, however many hyper would queue for it (16 chunks or 400 KiB): the next
    /// chunk is handed over only once earlier ones are dropped, as a connection drops what it
    /// has written.
    #[tokio::test]
    async fn chunks_not_yet_written_stay_within_the_lists_budget() {
        let n = 2 * PAGE;
        let (mut body, _dir) = namespace_body(n, Form::Items).await;
        // Frames taken and kept (a socket that takes nothing), until no more come.
        let mut kept = Vec::new();
        while let Ok(Some(frame)) =
            tokio::time::timeout(std::time::Duration::from_millis(200), body.frame()).await
        {
            kept.push(frame.expect("frame").into_data().expect("data"));
        }
        let held: usize = kept.iter().map(Bytes::len).sum();
        assert!(
            held > 0 && held <= super::IN_FLIGHT,
            "{held} bytes handed over to a reader that took none"
        );
        // Once they are written (dropped), the rest comes: the list is whole.
        let mut whole: Vec<u8> = kept.concat();
        drop(kept);
        while let Some(frame) = body.frame().await {
            whole.extend_from_slice(&frame.expect("frame").into_data().expect("data"));
        }
        let list: Value = serde_json::from_slice(&whole).expect("one JSON list");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(n));
    }

    /// The body frames of a list of `n` namespaces in `form` (more than a page: streamed), and
    /// the store's directory to keep.
    async fn namespace_frames(n: usize, form: Form) -> (Vec<Bytes>, tempfile::TempDir) {
        let (mut body, dir) = namespace_body(n, form).await;
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.expect("frame").into_data().expect("data");
            // A copy: the frame itself goes, as a connection drops what it has written.
            frames.push(Bytes::copy_from_slice(&data));
        }
        (frames, dir)
    }

    /// The streamed body of a list of `n` namespaces in `form`, and the store's directory.
    async fn namespace_body(n: usize, form: Form) -> (crate::body::BoxBody, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store: Arc<dyn Store> =
            crd_storage::sqlite::SqliteStore::open(dir.path()).expect("open sqlite");
        for i in 0..n {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": format!("ns-{i:04}")},
                            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
            store
                .create(
                    &format!("/registry/namespaces/ns-{i:04}"),
                    Bytes::from(ns.to_string()),
                )
                .await
                .expect("create");
        }
        let strategy: Arc<dyn Strategy> = Arc::new(NamespaceStrategy::default());
        let scan = Scan {
            prefix: "/registry/namespaces/".into(),
            revision: None,
            freshness: Freshness::Consistent,
            selectors: None,
        };
        let reply = respond(store, strategy, scan, form, PAGE)
            .await
            .expect("list");
        let ReplyBody::Stream(body) = reply.body else {
            panic!("a list of more than a page is streamed");
        };
        (body, dir)
    }

    /// The YAML of a list is the concatenation the streamed path writes: the head, the first
    /// page's `items:` sequence, later pages' items without the key, and the tail.
    #[test]
    fn yaml_pages_concatenate_to_the_whole_document() {
        let item = |n: &str, extra: Value| {
            json!({"apiVersion": "g/v1", "kind": "K",
                   "metadata": {"name": n, "labels": {"a": "1", "b": "yes"}},
                   "spec": {"text": "line one\nline two\n", "empty": {}, "list": [], "n": 1.5,
                            "quoted": "null", "x": extra}})
        };
        let pages = [
            vec![
                item("a", json!([1, {"k": "v"}])),
                item("b", json!("- not a list")),
            ],
            vec![item("c", json!(null))],
            vec![item("d", json!({"nested": [[1, 2], []]}))],
        ];
        let all: Vec<Value> = pages.iter().flatten().cloned().collect();
        let meta = json!({"resourceVersion": "7"});
        let whole = serde_saphyr::to_string(
            &json!({"apiVersion": "g/v1", "items": all, "kind": "KList", "metadata": meta}),
        )
        .unwrap();
        let mut streamed = super::yaml(&json!({"apiVersion": "g/v1"})).unwrap();
        for (i, p) in pages.iter().enumerate() {
            let s = super::yaml(&json!({ "items": p })).unwrap();
            if i == 0 {
                streamed.push_str(&s);
            } else {
                streamed.push_str(s.strip_prefix("items:\n").unwrap());
            }
        }
        streamed.push_str(&super::yaml(&json!({"kind": "KList", "metadata": meta})).unwrap());
        assert_eq!(streamed, whole);

        let empty = serde_saphyr::to_string(
            &json!({"apiVersion": "g/v1", "items": [], "kind": "KList", "metadata": meta}),
        )
        .unwrap();
        let streamed = [
            super::yaml(&json!({"apiVersion": "g/v1"})).unwrap(),
            super::yaml(&json!({ "items": [] })).unwrap(),
            super::yaml(&json!({"kind": "KList", "metadata": meta})).unwrap(),
        ]
        .concat();
        assert_eq!(streamed, empty);
    }
}
