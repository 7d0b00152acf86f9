//! Watch (`?watch=true`): a stream of newline-delimited JSON events. It starts with synthetic
//! ADDED events when no resourceVersion is given, then follows the store's watch, applying
//! selectors with Kubernetes' transition rules (an object that starts matching is ADDED, one that
//! stops matching is DELETED). A resourceVersion that is too old gets an ERROR event with 410.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use crd_core::Status;
use crd_storage::{Event, KeyValue, StorageError, WatchRequest};
use futures::StreamExt;
use rand::Rng;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Ctx, Reply, ReplyBody, read_object, read_objects};
use crate::error::ApiError;
use crate::registry::{Strategy, meta};
use crate::request::negotiate::Output;
use crate::request::options::{ListOptions, ResourceVersionMatch};
use crate::table::{self, IncludeObject};
use crate::watch_lines;
pub use crate::watch_lines::EventType;

/// kube-apiserver's default `--min-request-timeout`; a watch without `timeoutSeconds` lasts
/// between one and two times this.
const MIN_REQUEST_TIMEOUT: u64 = 1800;

/// How often an idle watch with bookmarks gets a BOOKMARK.
const BOOKMARK_INTERVAL: Duration = Duration::from_mins(1);

/// A watch with bookmarks gets one this long before its timeout (upstream's cacheWatcher
/// `nextBookmarkTime`: "right before the watcher timeout"), so that the client resumes from
/// as fresh a revision as the watch reached.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);

/// Objects read per store page while sending a watch's initial events.
const INITIAL_PAGE: usize = 500;

/// Encoded events buffered per watcher before the writer waits for the client. Small: the
/// bounded buffer that decides when a watcher is too slow is the watch cache's (upstream's
/// `cacheWatcher` input); every encoded line waiting here is memory a stuck client holds
/// (256 lines were 0.3 MB per watcher of 1 KiB objects).
const BUFFER: usize = 8;

/// Everything the streaming task needs, detached from the request.
struct WatchTask {
    strategy: Arc<dyn Strategy>,
    /// The server's shared lines, held while this watcher streams.
    lines: watch_lines::Watching,
    opts: ListOptions,
    output: Output,
    include: IncludeObject,
    bookmarks: bool,
    initial_end_bookmark: bool,
    /// `sendInitialEvents` with `resourceVersion=N`: the initial state is at least as fresh as
    /// N. Upstream's cacher waits for it (`waitUntilWatchCacheFreshAndForceAllEvents`), then
    /// ends the watch with an ERROR event, "Too large resource version".
    at_least: Option<i64>,
    /// When the pre-timeout BOOKMARK is due (bookmarks on and a timeout longer than
    /// [`PRE_TIMEOUT_BOOKMARK`]).
    pre_timeout: Option<tokio::time::Instant>,
}

/// Waits until `at`, or forever when it is `None`.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Starts a watch.
pub async fn handle(ctx: &Ctx<'_>, strategy: Arc<dyn Strategy>) -> Result<Reply, ApiError> {
    let mut opts = super::list::list_options(ctx, strategy.as_ref())?;
    if let Some(name) = ctx.req.name.as_deref() {
        match opts.fields.exact_match("metadata.name") {
            Some(n) if n != name => {
                return Err(Status::bad_request(
                    "fieldSelector metadata.name doesn't match requested name",
                )
                .into());
            }
            _ => {
                let mut fields =
                    crd_core::fields::FieldSelector::parse(&format!("metadata.name={name}"))
                        .map_err(Status::bad_request)?;
                fields.requirements.append(&mut opts.fields.requirements);
                opts.fields = fields;
            }
        }
    }
    let timeout = ctx.opts.watch.timeout.unwrap_or_else(|| {
        Duration::from_secs_f64(MIN_REQUEST_TIMEOUT as f64 * rand::rng().random_range(1.0..2.0))
    });
    let rv = opts.resource_version.clone();
    let asked_initial = opts.send_initial_events;
    let send_initial = asked_initial.unwrap_or(rv.is_empty() || rv == "0");
    let include = ctx.opts.table.include_object;
    let bookmarks = ctx.opts.watch.bookmarks;
    let requested = || {
        rv.parse::<i64>().map_err(|_| {
            ApiError::from(Status::bad_request(format!(
                "invalid resource version: {rv}"
            )))
        })
    };

    // Initial state and the revision to follow from.
    // The initial state is streamed page by page from a snapshot (never held whole).
    let (initial, after, at_least) = if send_initial {
        let at_least = match rv.as_str() {
            "" | "0" => None,
            _ => Some(requested()?),
        };
        let list_opts = ListOptions {
            limit: 0,
            continue_token: None,
            resource_version: String::new(),
            resource_version_match: ResourceVersionMatch::Unset,
            ..opts
        };
        let revision = ctx
            .store()
            .current_revision()
            .await
            .map_err(|e| ApiError::storage(&strategy.info().group_resource(), "", e))?;
        opts = list_opts;
        (true, revision, at_least)
    } else {
        (false, requested()?, None)
    };
    let prefix = opts.prefix(ctx, strategy.as_ref());
    let request = WatchRequest {
        prefix,
        after,
        progress_interval: bookmarks.then_some(BOOKMARK_INTERVAL),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER);
    let task = WatchTask {
        strategy,
        lines: ctx.state.watch_lines.watching(),
        opts,
        output: ctx.output,
        include,
        bookmarks,
        initial_end_bookmark: bookmarks && asked_initial.is_some() && send_initial,
        at_least,
        pre_timeout: timeout
            .checked_sub(PRE_TIMEOUT_BOOKMARK)
            .filter(|_| bookmarks)
            .map(|t| tokio::time::Instant::now() + t),
    };
    let store = ctx.state.store.clone();
    let drained = ctx.state.health.drained();
    let retired = task.strategy.definition_retired(&ctx.state.registry);
    tokio::spawn(async move {
        let run = task.run(store, request, initial, tx.clone());
        let retired = async move {
            match retired {
                Some(r) => r.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = run => {}
            () = tokio::time::sleep(timeout) => {}
            () = tx.closed() => {}
            // Shutdown ends watches at once rather than waiting out its grace period.
            () = drained => {}
            // The definition serving the resource went or changed.
            () = retired => {}
        }
    });
    let body = crate::body::stream_body(rx);
    Ok(Reply {
        code: 200,
        body: ReplyBody::Stream(body),
        warnings: Vec::new(),
        content_type: None,
    })
}

impl WatchTask {
    async fn run(
        self,
        store: Arc<dyn crd_storage::Store>,
        request: WatchRequest,
        initial: bool,
        tx: mpsc::Sender<Bytes>,
    ) {
        let mut first = true;
        let mut request = request;
        if initial
            && let Some(wanted) = self.at_least
            && wanted > request.after
        {
            match fresh_revision(store.as_ref(), &request.prefix, wanted).await {
                Ok(revision) => request.after = revision,
                Err(e) => {
                    self.send_error(&tx, &e, request.after).await;
                    return;
                }
            }
        }
        let after = request.after;
        if initial && !self.send_initial(&store, &request, &tx, &mut first).await {
            return;
        }
        if self.initial_end_bookmark {
            let mut b = self.bookmark(after);
            b["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            if !send_line(&tx, &watch_event(EventType::Bookmark, b)).await {
                return;
            }
        }
        let mut stream = match store.watch(request).await {
            Ok(s) => s,
            Err(e) => {
                self.send_error(&tx, &e, after).await;
                return;
            }
        };
        // The revision every event up to which this watcher has seen (its filters decide
        // what it sends): what the pre-timeout BOOKMARK says.
        let mut seen = after;
        let mut pre_timeout = self.pre_timeout;
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = sleep_until_some(pre_timeout) => {
                    pre_timeout = None;
                    let line = watch_event(EventType::Bookmark, self.bookmark(seen));
                    if !send_line(&tx, &line).await {
                        return;
                    }
                    continue;
                }
            };
            let Some(item) = item else { return };
            if let Ok(e) = &item {
                seen = seen.max(e.revision());
            }
            let event = match item {
                Ok(e) => e,
                Err(e) => {
                    self.send_error(&tx, &e, after).await;
                    return;
                }
            };
            let shared = self.shares_lines();
            let ok = match event {
                // Without selectors every watcher of the strategy sends the same line: it is
                // decoded and encoded once per event (`watch_lines`), and the previous object
                // only tells ADDED from MODIFIED.
                Event::Put { kv, prev } if shared => {
                    let kind = if prev.is_some() {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    self.send_shared(&tx, kind, &kv, kv.mod_revision).await
                }
                Event::Delete { prev, revision } if shared => {
                    self.send_shared(&tx, EventType::Deleted, &prev, revision)
                        .await
                }
                Event::Progress { revision } => {
                    if self.bookmarks {
                        send_line(
                            &tx,
                            &watch_event(EventType::Bookmark, self.bookmark(revision)),
                        )
                        .await
                    } else {
                        true
                    }
                }
                Event::Put { kv, prev } => {
                    let new = match read_object(self.strategy.as_ref(), &kv).await {
                        Ok(o) => o,
                        Err(e) => {
                            self.send_api_error(&tx, &e).await;
                            return;
                        }
                    };
                    let new_match = self.opts.matches(self.strategy.as_ref(), &new);
                    let prev_obj = match &prev {
                        Some(p) => match read_object(self.strategy.as_ref(), p).await {
                            Ok(o) => Some(o),
                            Err(e) => {
                                self.send_api_error(&tx, &e).await;
                                return;
                            }
                        },
                        None => None,
                    };
                    let old_match = prev_obj.map(|mut old| {
                        let m = self.opts.matches(self.strategy.as_ref(), &old);
                        meta::set_resource_version(&mut old, kv.mod_revision);
                        (m, old)
                    });
                    match (new_match, old_match) {
                        (true, Some((true, _))) => {
                            self.send(&tx, EventType::Modified, new, &mut first).await
                        }
                        (true, _) => self.send(&tx, EventType::Added, new, &mut first).await,
                        (false, Some((true, old))) => {
                            self.send(&tx, EventType::Deleted, old, &mut first).await
                        }
                        (false, _) => true,
                    }
                }
                Event::Delete { prev, revision } => {
                    let mut old = match read_object(self.strategy.as_ref(), &prev).await {
                        Ok(o) => o,
                        Err(e) => {
                            self.send_api_error(&tx, &e).await;
                            return;
                        }
                    };
                    if self.opts.matches(self.strategy.as_ref(), &old) {
                        meta::set_resource_version(&mut old, revision);
                        self.send(&tx, EventType::Deleted, old, &mut first).await
                    } else {
                        true
                    }
                }
            };
            if !ok {
                return;
            }
        }
    }

    /// Sends the state at the snapshot revision as ADDED events, one store page at a time.
    /// Returns false when the watch ended.
    async fn send_initial(
        &self,
        store: &Arc<dyn crd_storage::Store>,
        request: &WatchRequest,
        tx: &mpsc::Sender<Bytes>,
        first: &mut bool,
    ) -> bool {
        let mut pages = crd_storage::Pages::new(
            store.as_ref(),
            request.prefix.clone(),
            Some(request.after),
            INITIAL_PAGE,
        );
        loop {
            let items = match pages.next_page().await {
                Ok(Some(items)) => items,
                Ok(None) => return true,
                Err(e) => {
                    self.send_error(tx, &e, request.after).await;
                    return false;
                }
            };
            let objs = match read_objects(self.strategy.as_ref(), &items, true).await {
                Ok(o) => o,
                Err(e) => {
                    self.send_api_error(tx, &e).await;
                    return false;
                }
            };
            for obj in objs {
                if self.opts.matches(self.strategy.as_ref(), &obj)
                    && !self.send(tx, EventType::Added, obj, first).await
                {
                    return false;
                }
            }
        }
    }

    /// A BOOKMARK's object, in the watch's output form as upstream's `watchEmbeddedEncoder`
    /// transforms every event (a metadata-only watch gets `PartialObjectMetadata`, which is all
    /// client-go's metadata informers can decode).
    fn bookmark(&self, revision: i64) -> Value {
        let info = self.strategy.info();
        self.shape(json!({"kind": info.kind, "apiVersion": info.api_version(),
               "metadata": {"resourceVersion": revision.to_string()}}))
    }

    /// Whether this watcher's lines are the same as every other unselective watcher's of the
    /// strategy in its output form (no selectors; a Table's first line differs per watcher).
    fn shares_lines(&self) -> bool {
        self.opts.labels.is_empty() && self.opts.fields.is_empty() && self.output != Output::Table
    }

    /// Sends the shared line of `kv`'s object as a `kind` event at `revision` (the object's
    /// resourceVersion). Returns false when the watch ended.
    async fn send_shared(
        &self,
        tx: &mpsc::Sender<Bytes>,
        kind: EventType,
        kv: &KeyValue,
        revision: i64,
    ) -> bool {
        let line = self
            .lines
            .shared_line(
                &self.strategy,
                self.output,
                kind,
                &kv.key,
                revision,
                || async {
                    let mut obj = read_object(self.strategy.as_ref(), kv).await?;
                    meta::set_resource_version(&mut obj, revision);
                    encode_line(&watch_event(kind, self.shape(obj))).ok_or_else(|| {
                        ApiError::from(Status::internal("watch event could not be encoded"))
                    })
                },
            )
            .await;
        match line {
            Ok(line) => {
                let info = self.strategy.info();
                crate::metrics::watch_event(&info.group, &info.version, &info.kind);
                tx.send(line).await.is_ok()
            }
            Err(e) => {
                self.send_api_error(tx, &e).await;
                false
            }
        }
    }

    /// The object as this watch's output form shows it (not for Tables).
    fn shape(&self, obj: Value) -> Value {
        match self.output {
            Output::PartialObjectMetadata => table::partial_object_metadata(&obj),
            _ => obj,
        }
    }

    async fn send(
        &self,
        tx: &mpsc::Sender<Bytes>,
        kind: EventType,
        obj: Value,
        first: &mut bool,
    ) -> bool {
        let object = match self.output {
            Output::Table => {
                let rv = meta::resource_version(&obj).to_string();
                let t = self.strategy.render_table(
                    &[obj],
                    self.include,
                    *first,
                    json!({"resourceVersion": rv}),
                );
                *first = false;
                t
            }
            Output::PartialObjectMetadata => table::partial_object_metadata(&obj),
            _ => obj,
        };
        let info = self.strategy.info();
        crate::metrics::watch_event(&info.group, &info.version, &info.kind);
        send_line(tx, &watch_event(kind, object)).await
    }

    /// Ends the watch with an ERROR event carrying the request's Status (a failed conversion).
    async fn send_api_error(&self, tx: &mpsc::Sender<Bytes>, err: &ApiError) {
        let status = err
            .to_status()
            .unwrap_or_else(|| Status::internal("watch failed"));
        let _ = send_line(tx, &watch_event(EventType::Error, json!(status))).await;
    }

    async fn send_error(&self, tx: &mpsc::Sender<Bytes>, err: &StorageError, after: i64) {
        let status = match err {
            StorageError::Compacted { compacted, .. } => {
                Status::expired(format!("too old resource version: {after} ({compacted})"))
            }
            StorageError::WatchLagged => Status::expired(format!(
                "too old resource version: {after} (watch fell behind)"
            )),
            other => {
                crate::error::storage_status(&self.strategy.info().group_resource(), "", other)
            }
        };
        let _ = send_line(tx, &watch_event(EventType::Error, json!(status))).await;
    }
}

/// A revision of the store at `wanted` or later, waited for as a list at `resourceVersion=N`
/// waits (the watch cache's wait; an engine answers at once).
async fn fresh_revision(
    store: &dyn crd_storage::Store,
    prefix: &str,
    wanted: i64,
) -> Result<i64, StorageError> {
    let probe = crd_storage::ListRequest {
        prefix: prefix.to_string(),
        limit: Some(1),
        freshness: crd_storage::Freshness::NotOlderThan(wanted),
        ..Default::default()
    };
    Ok(store.list(probe).await?.revision)
}

/// A `WatchEvent` value.
fn watch_event(kind: EventType, object: Value) -> Value {
    let mut m = serde_json::Map::with_capacity(2);
    m.insert("type".into(), Value::String(kind.as_str().into()));
    m.insert("object".into(), object);
    Value::Object(m)
}

/// One event as a line of the stream.
fn encode_line(event: &Value) -> Option<Bytes> {
    let mut line = serde_json::to_vec(event).ok()?;
    line.push(b'\n');
    Some(Bytes::from(line))
}

async fn send_line(tx: &mpsc::Sender<Bytes>, event: &Value) -> bool {
    let Some(line) = encode_line(event) else {
        return false;
    };
    tx.send(line).await.is_ok()
}
