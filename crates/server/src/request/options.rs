//! The typed query options of a resource request, parsed once from the query string before a
//! handler runs: [`WriteOptions`] (create, update, patch), [`ListOptions`] (list, watch,
//! deletecollection), [`WatchOptions`], [`TableOptions`], and [`DeleteOptions`] (query and body).
//! Each parse reports errors as kube-apiserver's `Validate*Options` do.

use std::time::Duration;

use base64::Engine;
use crd_core::field::go_quote;
use crd_core::fields::FieldSelector;
use crd_core::labels::Selector;
use crd_core::{ErrorList, FieldError, GroupResource, Path, Status};
use crd_storage::{Freshness, Revision};
use serde_json::{Value, json};

use super::route::{Query, Verb};
use crate::error::ApiError;
use crate::table::IncludeObject;

/// The `fieldValidation` query parameter: what to do with unknown fields in a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the server default).
    Warn,
    /// Reject the request (kubectl's default).
    Strict,
}

/// `propagationPolicy` of a delete: what happens to dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents are left, their owner references removed.
    Orphan,
    /// The owner goes first; dependents are deleted in the background.
    Background,
    /// Dependents with `blockOwnerDeletion` go before the owner.
    Foreground,
}

impl PropagationPolicy {
    fn parse(v: &str) -> Option<Self> {
        match v {
            "Orphan" => Some(PropagationPolicy::Orphan),
            "Background" => Some(PropagationPolicy::Background),
            "Foreground" => Some(PropagationPolicy::Foreground),
            _ => None,
        }
    }
}

/// `resourceVersionMatch` of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Not given: the legacy semantics of `resourceVersion`.
    Unset,
    /// Exactly the given revision.
    Exact,
    /// Any revision at least as new as the given one.
    NotOlderThan,
}

/// The options of the `Verb`'s kind (`CreateOptions`, ...), named in validation errors.
fn options_kind(verb: Verb) -> &'static str {
    match verb {
        Verb::Create => "CreateOptions",
        Verb::Update => "UpdateOptions",
        Verb::Patch => "PatchOptions",
        _ => "DeleteOptions",
    }
}

fn invalid_options(kind: &str, errors: &ErrorList) -> ApiError {
    Status::invalid(&GroupResource::new("meta.k8s.io", kind), "", errors).into()
}

/// Options of a write: `dryRun`, `fieldValidation`, `fieldManager` and (for applies) `force`.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// `dryRun=All`: the whole pipeline runs, nothing is stored.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager`, when given.
    pub field_manager: Option<String>,
    /// `force` (server-side apply only).
    pub force: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Warn,
            field_manager: None,
            force: false,
        }
    }
}

impl WriteOptions {
    /// Parses the options of a write verb.
    pub fn parse(query: &Query, verb: Verb) -> Result<Self, ApiError> {
        let kind = options_kind(verb);
        let dry_run = match query.get("dryRun") {
            None | Some("") => false,
            Some("All") => true,
            Some(v) => {
                return Err(invalid_options(
                    kind,
                    &ErrorList(vec![FieldError::not_supported(
                        &Path::new("dryRun"),
                        Value::from(vec![v.to_string()]),
                        &["All"],
                    )]),
                ));
            }
        };
        let field_validation = match query.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => FieldValidation::Warn,
            "Ignore" => FieldValidation::Ignore,
            "Strict" => FieldValidation::Strict,
            other => {
                return Err(invalid_options(
                    kind,
                    &ErrorList(vec![FieldError::not_supported(
                        &Path::new("fieldValidation"),
                        other,
                        &["", "Ignore", "Strict", "Warn"],
                    )]),
                ));
            }
        };
        let field_manager = query.get("fieldManager").map(String::from);
        if let Some(m) = &field_manager
            && m.chars().count() > 128
        {
            return Err(invalid_options(
                kind,
                &ErrorList(vec![FieldError::too_long(&Path::new("fieldManager"), 128)]),
            ));
        }
        Ok(WriteOptions {
            dry_run,
            field_validation,
            field_manager,
            force: query.bool("force"),
        })
    }
}

/// Selectors, paging and `resourceVersion` options of list, watch and deletecollection.
#[derive(Clone, Debug)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: Selector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit` (0 = none).
    pub limit: usize,
    /// `continue`, decoded.
    pub continue_token: Option<ContinueToken>,
    /// `resourceVersion` ("" when not given).
    pub resource_version: String,
    /// `resourceVersionMatch`.
    pub resource_version_match: ResourceVersionMatch,
    /// A watch (`?watch=true` or `/watch/`): other rules apply to `resourceVersionMatch`.
    pub watch: bool,
    /// `sendInitialEvents`, when given.
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Parses and validates the options, with Kubernetes' 400 and 422 errors.
    pub fn parse(query: &Query, watch: bool) -> Result<Self, ApiError> {
        let labels = Selector::parse(query.str("labelSelector")).map_err(Status::bad_request)?;
        let fields =
            FieldSelector::parse(query.str("fieldSelector")).map_err(Status::bad_request)?;
        let limit = match query.get("limit") {
            None | Some("") => 0,
            Some(l) => l.parse::<i64>().map_err(|_| {
                Status::bad_request(format!("unable to parse quantity's suffix: limit={l}"))
            })?,
        };
        let continue_token = match query.get("continue") {
            None | Some("") => None,
            Some(t) => Some(ContinueToken::decode(t)?),
        };
        let raw_match = query.str("resourceVersionMatch");
        let opts = ListOptions {
            labels,
            fields,
            limit: usize::try_from(limit.max(0)).unwrap_or(0),
            continue_token,
            resource_version: query.str("resourceVersion").to_string(),
            resource_version_match: match raw_match {
                "Exact" => ResourceVersionMatch::Exact,
                "NotOlderThan" => ResourceVersionMatch::NotOlderThan,
                _ => ResourceVersionMatch::Unset,
            },
            watch,
            send_initial_events: query
                .get("sendInitialEvents")
                .map(|_| query.bool("sendInitialEvents")),
        };
        opts.validate(raw_match)?;
        Ok(opts)
    }

    /// `ValidateListOptions` and `validateWatchOptions`.
    fn validate(&self, raw_match: &str) -> Result<(), ApiError> {
        let mut errs = ErrorList::new();
        let path = Path::new("resourceVersionMatch");
        let rvm = self.resource_version_match;
        if self.watch {
            if self.send_initial_events.is_some() && rvm != ResourceVersionMatch::NotOlderThan {
                errs.push(FieldError::forbidden(
                    &path,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !raw_match.is_empty() {
                if self.send_initial_events.is_none() {
                    errs.push(FieldError::forbidden(
                        &path,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    ));
                }
                if rvm != ResourceVersionMatch::NotOlderThan {
                    errs.push(FieldError::not_supported(
                        &path,
                        raw_match,
                        &["NotOlderThan"],
                    ));
                }
            }
        } else if self.send_initial_events.is_some() {
            errs.push(FieldError::forbidden(
                &Path::new("sendInitialEvents"),
                "sendInitialEvents is forbidden for list",
            ));
        }
        if !self.watch && !raw_match.is_empty() {
            if self.resource_version.is_empty() {
                errs.push(FieldError::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continue_token.is_some() {
                errs.push(FieldError::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if rvm == ResourceVersionMatch::Unset {
                errs.push(FieldError::not_supported(
                    &path,
                    raw_match,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if rvm == ResourceVersionMatch::Exact && self.resource_version == "0" {
                errs.push(FieldError::forbidden(
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
        if !errs.is_empty() {
            return Err(invalid_options("ListOptions", &errs));
        }
        // A continued list reads the token's snapshot (storage's `ValidateListOptions`).
        if !self.watch
            && self.continue_token.is_some()
            && !self.resource_version.is_empty()
            && self.resource_version != "0"
        {
            return Err(Status::bad_request(
                "specifying resource version is not allowed when using continue",
            )
            .into());
        }
        Ok(())
    }

    /// Whether any selector is set.
    pub fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || !self.fields.requirements.is_empty()
    }
}

/// Options only a watch has.
#[derive(Clone, Copy, Debug)]
pub struct WatchOptions {
    /// `timeoutSeconds`, when given and positive.
    pub timeout: Option<Duration>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
}

impl WatchOptions {
    /// Parses the watch-only options.
    pub fn parse(query: &Query) -> Self {
        WatchOptions {
            timeout: query
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .filter(|t| *t > 0)
                .map(Duration::from_secs),
            bookmarks: query.bool("allowWatchBookmarks"),
        }
    }
}

/// How a Table is rendered (`includeObject`, `noHeaders`).
#[derive(Clone, Copy, Debug)]
pub struct TableOptions {
    /// What each row carries.
    pub include_object: IncludeObject,
    /// Whether column definitions are sent.
    pub with_headers: bool,
}

impl TableOptions {
    /// Parses the table options, with Kubernetes' 400 for an unknown `includeObject`.
    pub fn parse(query: &Query) -> Result<Self, ApiError> {
        Ok(TableOptions {
            include_object: IncludeObject::parse(query.str("includeObject"))
                .map_err(Status::bad_request)?,
            with_headers: !query.bool("noHeaders"),
        })
    }
}

/// `DeleteOptions`, from the body (as kubectl sends them) or the query.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun: ["All"]` or `?dryRun=All`.
    pub dry_run: bool,
    /// `propagationPolicy` (or the legacy `orphanDependents`).
    pub propagation_policy: Option<PropagationPolicy>,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// The legacy `orphanDependents`, when sent: `false` deletes dependents in the foreground
    /// and answers 202 while the object waits for them.
    pub orphan_dependents: Option<bool>,
}

impl DeleteOptions {
    /// The preconditions (`preconditions.uid`, `preconditions.resourceVersion`) checked
    /// against the stored object's uid and revision: upstream's 409 naming `gr` when one does
    /// not hold.
    pub fn check_preconditions(
        &self,
        gr: &GroupResource,
        name: &str,
        uid: &str,
        revision: Revision,
    ) -> Result<(), ApiError> {
        if let Some(want) = &self.uid
            && want != uid
        {
            return Err(Status::conflict(
                gr,
                name,
                &format!(
                    "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                ),
            )
            .into());
        }
        if let Some(rv) = &self.resource_version
            && *rv != revision.to_string()
        {
            return Err(Status::conflict(
                gr,
                name,
                &format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({revision}). The object might have been modified"
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Reads options from the query, then the body (a `DeleteOptions` object) over them.
    pub fn parse(query: &Query, body: &[u8]) -> Result<Self, ApiError> {
        let mut opts = DeleteOptions {
            dry_run: WriteOptions::parse(query, Verb::Delete)?.dry_run,
            grace_period_seconds: query.get("gracePeriodSeconds").and_then(|g| g.parse().ok()),
            ..DeleteOptions::default()
        };
        let mut policy = query.get("propagationPolicy").map(String::from);
        let mut orphan = query
            .get("orphanDependents")
            .map(|_| query.bool("orphanDependents"));
        if !body.is_empty() {
            let cannot = |e: &dyn std::fmt::Display| {
                Status::bad_request(format!(
                    "DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: {e}"
                ))
            };
            let v: Value = if crate::protobuf::is_protobuf(body) {
                crate::protobuf::decode_delete_options(body).map_err(|e| cannot(&e))?
            } else {
                serde_json::from_slice(body).map_err(|e| cannot(&e))?
            };
            opts.uid = v
                .pointer("/preconditions/uid")
                .and_then(Value::as_str)
                .map(String::from);
            opts.resource_version = v
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
            if let Some(g) = v.get("gracePeriodSeconds").and_then(Value::as_i64) {
                opts.grace_period_seconds = Some(g);
            }
            if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
                policy = Some(p.to_string());
            }
            if let Some(o) = v.get("orphanDependents").and_then(Value::as_bool) {
                orphan = Some(o);
            }
            match v.get("dryRun") {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) if a.is_empty() => {}
                Some(Value::Array(a)) if a.len() == 1 && a[0] == "All" => opts.dry_run = true,
                Some(other) => {
                    return Err(invalid_options(
                        "DeleteOptions",
                        &ErrorList(vec![FieldError::not_supported(
                            &Path::new("dryRun"),
                            other.clone(),
                            &["All"],
                        )]),
                    ));
                }
            }
        }
        let mut errs = ErrorList::new();
        if let Some(p) = &policy {
            match PropagationPolicy::parse(p) {
                Some(pp) => opts.propagation_policy = Some(pp),
                None => errs.push(FieldError::not_supported(
                    &Path::new("propagationPolicy"),
                    p.as_str(),
                    &["Foreground", "Background", "Orphan", "nil"],
                )),
            }
        }
        if let Some(o) = orphan {
            if opts.propagation_policy.is_some() {
                errs.push(FieldError::invalid(
                    &Path::new("propagationPolicy"),
                    policy.as_deref().unwrap_or(""),
                    "orphanDependents and deletionPropagation cannot be both set",
                ));
            } else {
                // `orphanDependents: false` deletes dependents first (`shouldDeleteDependents`
                // returns `!*options.OrphanDependents`).
                opts.orphan_dependents = Some(o);
                opts.propagation_policy = Some(if o {
                    PropagationPolicy::Orphan
                } else {
                    PropagationPolicy::Foreground
                });
            }
        }
        if let Some(g) = opts.grace_period_seconds
            && g < 0
        {
            opts.grace_period_seconds = Some(1);
        }
        if errs.is_empty() {
            Ok(opts)
        } else {
            Err(invalid_options("DeleteOptions", &errs))
        }
    }
}

/// The `continue` token, in kube-apiserver's format: base64url of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":"<key after prefix>\u0000"}`.
#[derive(Clone, Debug)]
pub struct ContinueToken {
    /// The snapshot revision.
    pub rv: Revision,
    /// The key (relative to the prefix) to start at, inclusive.
    pub start: String,
}

impl ContinueToken {
    /// upstream's `invalid continue token: continue key is not valid: <why>` (400).
    fn invalid(why: &str) -> ApiError {
        Status::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
        .into()
    }

    /// Decodes a token, refusing it in `storage.DecodeContinue`'s words.
    pub fn decode(token: &str) -> Result<Self, ApiError> {
        use base64::DecodeError;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|e| {
                // Go's `CorruptInputError`: the offset of the first byte it could not use.
                let at = match e {
                    DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => at,
                    DecodeError::InvalidLength(_) | DecodeError::InvalidPadding => {
                        token.len().saturating_sub(1)
                    }
                };
                Self::invalid(&format!("illegal base64 data at input byte {at}"))
            })?;
        let v: Value = serde_json::from_slice(&raw).map_err(|e| Self::invalid(&e.to_string()))?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        match text("v") {
            "meta.k8s.io/v1" => {}
            other => {
                return Err(Self::invalid(&format!(
                    "server does not recognize this encoded version {}",
                    crd_core::field::go_quote(other)
                )));
            }
        }
        let rv = v.get("rv").and_then(Value::as_i64).unwrap_or(0);
        if rv == 0 {
            return Err(Self::invalid(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        let start = text("start");
        if start.is_empty() {
            return Err(Self::invalid(
                "encoded start key empty (version meta.k8s.io/v1)",
            ));
        }
        // Upstream's path-traversal guard: the key must be what `path.Clean` leaves of it.
        let segments: Vec<&str> = start.split('/').collect();
        if start.starts_with('/')
            || segments
                .iter()
                .enumerate()
                .any(|(i, s)| matches!(*s, "." | "..") || (s.is_empty() && i > 0))
        {
            return Err(Self::invalid(start));
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

/// Every option of one resource request, parsed once for its verb.
pub struct RequestOptions {
    /// Options of create, update and patch (defaults for other verbs).
    pub write: WriteOptions,
    /// Options of list, watch and deletecollection.
    pub list: Option<ListOptions>,
    /// Options only a watch has.
    pub watch: WatchOptions,
    /// Table rendering.
    pub table: TableOptions,
    /// Options of delete and deletecollection (defaults for other verbs).
    pub delete: DeleteOptions,
    /// A get's `resourceVersion` (consistent for other verbs).
    pub get_freshness: Freshness,
}

/// `GetOptions.resourceVersion`: `""` consistent, `"0"` any, `"N"` not older than N. A value
/// that is not an unsigned integer is refused as kube-apiserver's versioner refuses it: its
/// `storage.InvalidError` is not an API status, so `ErrorToAPIStatus` makes it a 500 with no
/// reason and the error's text.
pub fn get_freshness(query: &Query) -> Result<Freshness, ApiError> {
    let rv = query.str("resourceVersion");
    if rv.is_empty() {
        return Ok(Freshness::Consistent);
    }
    match rv.parse::<u64>() {
        Ok(n) => Ok(Freshness::NotOlderThan(
            i64::try_from(n).unwrap_or(i64::MAX),
        )),
        Err(e) => {
            let why = if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) {
                "value out of range"
            } else {
                "invalid syntax"
            };
            Err(Status::failure(
                500,
                "",
                format!(
                    "resourceVersion: Invalid value: {}: strconv.ParseUint: parsing {}: {why}",
                    go_quote(rv),
                    go_quote(rv)
                ),
            )
            .into())
        }
    }
}

impl RequestOptions {
    /// Parses the options the verb reads; a bad value of one of them is the request's error.
    pub fn parse(query: &Query, verb: Verb, body: &[u8]) -> Result<Self, ApiError> {
        let delete = match verb {
            Verb::Delete | Verb::DeleteCollection => DeleteOptions::parse(query, body)?,
            _ => DeleteOptions::default(),
        };
        let write = match verb {
            Verb::Create | Verb::Update | Verb::Patch => WriteOptions::parse(query, verb)?,
            Verb::Delete | Verb::DeleteCollection => WriteOptions {
                dry_run: WriteOptions::parse(query, verb)?.dry_run,
                ..WriteOptions::default()
            },
            Verb::Get | Verb::List | Verb::Watch => WriteOptions::default(),
        };
        let list = match verb {
            Verb::List | Verb::DeleteCollection => Some(ListOptions::parse(query, false)?),
            Verb::Watch => Some(ListOptions::parse(query, true)?),
            _ => None,
        };
        Ok(RequestOptions {
            write,
            list,
            watch: WatchOptions::parse(query),
            table: TableOptions::parse(query)?,
            delete,
            get_freshness: match verb {
                Verb::Get => get_freshness(query)?,
                _ => Freshness::Consistent,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::parse(Some(s))
    }

    fn err_message(e: &ApiError) -> String {
        e.to_status().map(|s| s.message).unwrap_or_default()
    }

    type WriteCase = (
        &'static str,
        Verb,
        Result<(bool, FieldValidation), &'static str>,
    );

    #[test]
    fn write_options_table() {
        let cases: &[WriteCase] = &[
            ("", Verb::Create, Ok((false, FieldValidation::Warn))),
            (
                "dryRun=All&fieldValidation=Strict",
                Verb::Update,
                Ok((true, FieldValidation::Strict)),
            ),
            (
                "fieldValidation=Ignore",
                Verb::Patch,
                Ok((false, FieldValidation::Ignore)),
            ),
            (
                "dryRun=Some",
                Verb::Create,
                Err(
                    "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: supported values: \"All\"",
                ),
            ),
            (
                "fieldValidation=strict",
                Verb::Patch,
                Err(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                ),
            ),
        ];
        for (query, verb, want) in cases {
            let got = WriteOptions::parse(&q(query), *verb);
            match (got, want) {
                (Ok(o), Ok((dry, fv))) => {
                    assert_eq!((o.dry_run, o.field_validation), (*dry, *fv), "{query}");
                }
                (Err(e), Err(msg)) => assert_eq!(err_message(&e), *msg, "{query}"),
                (got, want) => panic!("{query}: got {:?}, want {want:?}", got.map(|o| o.dry_run)),
            }
        }
    }

    #[test]
    fn list_options_validation() {
        let bad: &[(&str, bool, &str)] = &[
            (
                "resourceVersionMatch=Exact",
                false,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
            (
                "resourceVersion=0&resourceVersionMatch=Exact",
                false,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ),
            (
                "sendInitialEvents=true",
                false,
                "sendInitialEvents is forbidden for list",
            ),
            (
                "sendInitialEvents=true",
                true,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ),
            (
                "resourceVersion=abc",
                false,
                "invalid resource version: abc",
            ),
            (
                "limit=x",
                false,
                "unable to parse quantity's suffix: limit=x",
            ),
        ];
        for (query, watch, want) in bad {
            let e = ListOptions::parse(&q(query), *watch).expect_err(query);
            assert!(err_message(&e).contains(want), "{query}");
        }
        // A continued list reads its token's snapshot: another revision is refused (400),
        // `0` and none are not.
        let token = ContinueToken::encode(42, "ns/b\0");
        for (rv, refused) in [("100", true), ("42", true), ("0", false), ("", false)] {
            let query = format!("limit=3&continue={token}&resourceVersion={rv}");
            match ListOptions::parse(&q(&query), false) {
                Err(e) if refused => assert_eq!(
                    (e.to_status().map(|s| s.code), err_message(&e).as_str()),
                    (
                        Some(400),
                        "specifying resource version is not allowed when using continue"
                    ),
                    "{query}"
                ),
                Ok(_) if !refused => {}
                other => panic!("{query}: {:?}", other.map(|o| o.limit)),
            }
        }
        let ok = ListOptions::parse(
            &q("resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=3&labelSelector=a%3Db"),
            false,
        )
        .expect("valid");
        assert_eq!(ok.limit, 3);
        assert_eq!(
            ok.resource_version_match,
            ResourceVersionMatch::NotOlderThan
        );
        assert!(ok.has_selectors());
    }

    #[test]
    fn delete_options_from_query_and_body() {
        let o = DeleteOptions::parse(&q("propagationPolicy=Foreground"), b"").expect("valid");
        assert_eq!(o.propagation_policy, Some(PropagationPolicy::Foreground));
        let o = DeleteOptions::parse(
            &q(""),
            br#"{"kind":"DeleteOptions","propagationPolicy":"Orphan","dryRun":["All"],"preconditions":{"uid":"u1"}}"#,
        )
        .expect("valid");
        assert_eq!(o.propagation_policy, Some(PropagationPolicy::Orphan));
        assert!(o.dry_run);
        assert_eq!(o.uid.as_deref(), Some("u1"));
        let o = DeleteOptions::parse(&q("orphanDependents=true"), b"").expect("valid");
        assert_eq!(o.propagation_policy, Some(PropagationPolicy::Orphan));
        let o = DeleteOptions::parse(&q(""), br#"{"orphanDependents":false}"#).expect("valid");
        assert_eq!(
            (o.propagation_policy, o.orphan_dependents),
            (Some(PropagationPolicy::Foreground), Some(false))
        );
        let e = DeleteOptions::parse(&q("propagationPolicy=Sometimes"), b"").expect_err("bad");
        assert_eq!(
            err_message(&e),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sometimes\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
    }

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
        // Refusals in `storage.DecodeContinue`'s words.
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let cases = [
            ("ab!d".to_string(), "illegal base64 data at input byte 2"),
            ("abcde".to_string(), "illegal base64 data at input byte 4"),
            (
                b64(r#"{"v":"v9","rv":1,"start":"a"}"#),
                "server does not recognize this encoded version \"v9\"",
            ),
            (
                b64("{}"),
                "server does not recognize this encoded version \"\"",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","start":"a"}"#),
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":3}"#),
                "encoded start key empty (version meta.k8s.io/v1)",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"a/../b"}"#),
                "a/../b",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"a//b"}"#),
                "a//b",
            ),
        ];
        for (token, why) in cases {
            let status = ContinueToken::decode(&token)
                .unwrap_err()
                .to_status()
                .unwrap();
            assert_eq!(
                status.message,
                format!("invalid continue token: continue key is not valid: {why}"),
                "{token}"
            );
            assert_eq!(status.code, 400);
        }
    }
}
