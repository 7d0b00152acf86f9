//! GET of a collection: label and field selectors, `limit`/`continue` paging over one consistent
//! snapshot, and `resourceVersion` semantics. Also [`ListOptions`], shared with watch and
//! deletecollection.

use base64::Engine;
use crd_core::Status;
use crd_core::fields::FieldSelector;
use crd_core::labels::Selector;
use crd_storage::{ListRequest, Revision};
use serde_json::{Value, json};

use super::{Ctx, Reply, read_objects};
use crate::http::error::ApiError;
use crate::http::negotiate::Output;
use crate::registry::{Strategy, meta};
use crate::table::{self, IncludeObject};

/// How many stored items are read per round while filling a page through selectors.
const SCAN_CHUNK: usize = 500;

/// Selectors and paging options of list, watch and deletecollection.
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: Selector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit` (0 = none).
    pub limit: usize,
    /// `continue`, decoded.
    pub continue_token: Option<ContinueToken>,
    /// `resourceVersion`.
    pub resource_version: String,
    /// `resourceVersionMatch`.
    pub resource_version_match: String,
    /// A watch (`?watch=true` or `/watch/`): other rules apply to `resourceVersionMatch`.
    pub watch: bool,
    /// `sendInitialEvents`, when given.
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Parses the query, with Kubernetes' 400 errors for bad selectors.
    pub fn parse(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Self, ApiError> {
        let q = ctx.query;
        let labels = Selector::parse(q.str("labelSelector")).map_err(Status::bad_request)?;
        let fields = FieldSelector::parse(q.str("fieldSelector")).map_err(Status::bad_request)?;
        for f in fields.fields() {
            if strategy.field_value(&Value::Null, f).is_err() {
                return Err(Status::bad_request(format!("field label not supported: {f}")).into());
            }
        }
        let limit = match q.get("limit") {
            None | Some("") => 0,
            Some(l) => l.parse::<i64>().map_err(|_| {
                Status::bad_request(format!("unable to parse quantity's suffix: limit={l}"))
            })?,
        };
        let continue_token = match q.get("continue") {
            None | Some("") => None,
            Some(t) => Some(ContinueToken::decode(t)?),
        };
        let opts = ListOptions {
            labels,
            fields,
            limit: usize::try_from(limit.max(0)).unwrap_or(0),
            continue_token,
            resource_version: q.str("resourceVersion").to_string(),
            resource_version_match: q.str("resourceVersionMatch").to_string(),
            watch: ctx.req.verb == crate::http::route::Verb::Watch,
            send_initial_events: q
                .get("sendInitialEvents")
                .map(|_| q.bool("sendInitialEvents")),
        };
        opts.validate()?;
        Ok(opts)
    }

    fn validate(&self) -> Result<(), ApiError> {
        let mut errs = crd_core::ErrorList::new();
        let path = crd_core::Path::new("resourceVersionMatch");
        if self.watch {
            // `validateWatchOptions`.
            if self.send_initial_events.is_some() && self.resource_version_match != "NotOlderThan" {
                errs.push(crd_core::FieldError::forbidden(
                    &path,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !self.resource_version_match.is_empty() {
                if self.send_initial_events.is_none() {
                    errs.push(crd_core::FieldError::forbidden(
                        &path,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    ));
                }
                if self.resource_version_match != "NotOlderThan" {
                    errs.push(crd_core::FieldError::not_supported(
                        &path,
                        self.resource_version_match.as_str(),
                        &["NotOlderThan"],
                    ));
                }
            }
        } else if self.send_initial_events.is_some() {
            errs.push(crd_core::FieldError::forbidden(
                &crd_core::Path::new("sendInitialEvents"),
                "sendInitialEvents is forbidden for list",
            ));
        }
        if !self.watch && !self.resource_version_match.is_empty() {
            if self.resource_version.is_empty() {
                errs.push(crd_core::FieldError::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continue_token.is_some() {
                errs.push(crd_core::FieldError::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if !matches!(
                self.resource_version_match.as_str(),
                "Exact" | "NotOlderThan"
            ) {
                errs.push(crd_core::FieldError::not_supported(
                    &path,
                    self.resource_version_match.as_str(),
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if self.resource_version_match == "Exact" && self.resource_version == "0" {
                errs.push(crd_core::FieldError::forbidden(
                    &path,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if !self.resource_version.is_empty() && self.resource_version.parse::<i64>().is_err() {
            return Err(Status::bad_request(format!(
                "invalid resource version: {}",
                self.resource_version
            ))
            .into());
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(Status::invalid(
                &crd_core::GroupResource::new("meta.k8s.io", "ListOptions"),
                "",
                &errs,
            )
            .into())
        }
    }

    /// Whether an object passes both selectors.
    pub fn matches(&self, strategy: &dyn Strategy, obj: &Value) -> bool {
        self.labels.matches_json(meta::labels(obj))
            && self.fields.matches(|f| strategy.field_value(obj, f).ok())
    }

    /// Whether any selector is set.
    pub fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || !self.fields.requirements.is_empty()
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

/// The `continue` token, in kube-apiserver's format: base64url of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":"<key after prefix>\u0000"}`.
pub struct ContinueToken {
    /// The snapshot revision.
    pub rv: Revision,
    /// The key (relative to the prefix) to start at, inclusive.
    pub start: String,
}

impl ContinueToken {
    fn invalid() -> ApiError {
        Status::bad_request("invalid continue token: continue key is not valid").into()
    }

    /// Decodes a token.
    pub fn decode(token: &str) -> Result<Self, ApiError> {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|_| Self::invalid())?;
        let v: Value = serde_json::from_slice(&raw).map_err(|_| Self::invalid())?;
        if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
            return Err(Self::invalid());
        }
        let rv = v
            .get("rv")
            .and_then(Value::as_i64)
            .ok_or_else(Self::invalid)?;
        let start = v
            .get("start")
            .and_then(Value::as_str)
            .ok_or_else(Self::invalid)?;
        if start.contains("..") || start.starts_with('/') {
            return Err(Self::invalid());
        }
        Ok(ContinueToken {
            rv,
            start: start.to_string(),
        })
    }

    /// Encodes a token.
    pub fn encode(rv: Revision, start: &str) -> String {
        let v = json!({ "v": "meta.k8s.io/v1", "rv": rv, "start": start });
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
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
            (Some(t.rv), Some(format!("{prefix}{start}")))
        }
        None => (snapshot_revision(ctx, opts).await?, None),
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
            })
            .await
            .map_err(|e| match e {
                crd_storage::StorageError::Compacted { .. } if opts.continue_token.is_some() => {
                    expired_continue()
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

fn expired_continue() -> ApiError {
    Status::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.").into()
}

/// The revision a first page reads at: latest, or exactly the requested one.
async fn snapshot_revision(
    ctx: &Ctx<'_>,
    opts: &ListOptions,
) -> Result<Option<Revision>, ApiError> {
    let rv = opts.resource_version.as_str();
    if rv.is_empty() || rv == "0" {
        return Ok(None);
    }
    let n: Revision = rv.parse().unwrap_or(0);
    let exact = opts.resource_version_match == "Exact"
        || (opts.resource_version_match.is_empty() && opts.limit > 0);
    if exact {
        return Ok(Some(n));
    }
    let current = ctx
        .store()
        .current_revision()
        .await
        .map_err(|e| ApiError::storage(&crd_core::GroupResource::new("", ""), "", e))?;
    if n > current {
        return Err(ApiError::storage(
            &crd_core::GroupResource::new("", ""),
            "",
            crd_storage::StorageError::FutureRevision {
                requested: n,
                current,
            },
        ));
    }
    Ok(None)
}

/// Lists a collection.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let opts = ListOptions::parse(ctx, strategy)?;
    if ctx.output == Output::Json && !opts.has_selectors() && strategy.verbatim_reads() {
        return verbatim_list(ctx, strategy, &opts).await;
    }
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
        Output::Table => {
            let include = IncludeObject::parse(ctx.query.str("includeObject"))
                .map_err(Status::bad_request)?;
            table::render(
                &strategy.table_columns(),
                &page.items,
                include,
                !ctx.query.bool("noHeaders"),
                list_meta,
            )
        }
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

/// Splices `"resourceVersion":"<rev>"` into stored bytes laid out as
/// `{"apiVersion":"<api_version>","kind":"<kind>","metadata":{...`, which is how the server
/// stores objects (sorted keys). Returns `None` for any other layout.
pub fn splice_resource_version(
    stored: &[u8],
    api_version: &str,
    kind: &str,
    revision: i64,
) -> Option<Vec<u8>> {
    let head = format!(r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"#);
    let rest = stored.strip_prefix(head.as_bytes())?;
    let mut out = Vec::with_capacity(stored.len() + 40);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(format!(r#""resourceVersion":"{revision}""#).as_bytes());
    if rest.first() != Some(&b'}') {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// The list path without decoding: no selectors, JSON output, and reads that add nothing. Objects
/// stored at another version still go through the pipeline (one conversion batch per page).
async fn verbatim_list(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    opts: &ListOptions,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let gr = info.group_resource();
    let prefix = opts.prefix(ctx, strategy);
    // As in `read_page`: the token carries the last key sent (exclusive) and the snapshot.
    let (start_after, revision) = match &opts.continue_token {
        Some(t) => (
            Some(format!("{prefix}{}", t.start.trim_end_matches('\0'))),
            Some(t.rv),
        ),
        None => (None, snapshot_revision(ctx, opts).await?),
    };
    let resp = ctx
        .store()
        .list(ListRequest {
            prefix: prefix.clone(),
            start_after,
            limit: (opts.limit > 0).then_some(opts.limit),
            revision,
        })
        .await
        .map_err(|e| match e {
            crd_storage::StorageError::Compacted { .. } if opts.continue_token.is_some() => {
                expired_continue()
            }
            e => ApiError::storage(&gr, "", e),
        })?;
    let api_version = info.api_version();
    let mut items: Vec<Option<Vec<u8>>> = resp
        .items
        .iter()
        .map(|kv| splice_resource_version(&kv.value, &api_version, &info.kind, kv.mod_revision))
        .collect();
    let slow: Vec<usize> = (0..items.len()).filter(|&i| items[i].is_none()).collect();
    if !slow.is_empty() {
        let kvs: Vec<crd_storage::KeyValue> = slow.iter().map(|&i| resp.items[i].clone()).collect();
        let objs = read_objects(strategy, &kvs, true).await?;
        for (i, obj) in slow.into_iter().zip(objs) {
            items[i] = Some(serde_json::to_vec(&obj).map_err(Status::internal)?);
        }
    }
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
    let total: usize = items.iter().flatten().map(Vec::len).sum();
    let mut body = Vec::with_capacity(total + items.len() + 256);
    body.extend_from_slice(
        format!(
            r#"{{"apiVersion":{},"items":["#,
            serde_json::to_string(&api_version).unwrap_or_default()
        )
        .as_bytes(),
    );
    for (i, item) in items.iter().flatten().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(
        format!(
            r#"],"kind":{},"metadata":{}}}"#,
            serde_json::to_string(&info.list_kind).unwrap_or_default(),
            list_meta
        )
        .as_bytes(),
    );
    Ok(Reply {
        code: 200,
        body: super::ReplyBody::RawJson(bytes::Bytes::from(body)),
        warnings: Vec::new(),
        content_type: None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn resource_versions_are_spliced_only_into_the_stored_layout() {
        let stored = br#"{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{}}"#;
        let out = super::splice_resource_version(stored, "g/v1", "K", 42).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "42");
        assert_eq!(v["metadata"]["name"], "a");
        let empty = br#"{"apiVersion":"g/v1","kind":"K","metadata":{}}"#;
        let out = super::splice_resource_version(empty, "g/v1", "K", 7).unwrap();
        assert_eq!(
            out,
            br#"{"apiVersion":"g/v1","kind":"K","metadata":{"resourceVersion":"7"}}"#
        );
        // Another version, or another key order, goes through the decoding path.
        assert!(super::splice_resource_version(stored, "g/v2", "K", 1).is_none());
        let other = br#"{"apiVersion":"g/v1","data":1,"kind":"K","metadata":{}}"#;
        assert!(super::splice_resource_version(other, "g/v1", "K", 1).is_none());
    }

    use super::*;

    #[test]
    fn continue_tokens_round_trip_in_kubernetes_format() {
        let t = ContinueToken::encode(42, "ns/b\0");
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&t)
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&raw).unwrap(),
            json!({"v": "meta.k8s.io/v1", "rv": 42, "start": "ns/b\u{0}"})
        );
        let d = ContinueToken::decode(&t).unwrap();
        assert_eq!((d.rv, d.start.as_str()), (42, "ns/b\0"));
        assert!(ContinueToken::decode("!!!").is_err());
        assert!(
            ContinueToken::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("{}"))
                .is_err()
        );
    }
}
