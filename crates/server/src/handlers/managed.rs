//! Field ownership (`metadata.managedFields`) on every write, as kube-apiserver's field manager
//! keeps it: an `Update` entry for create, update and non-apply patches, and server-side apply
//! for `application/apply-patch+yaml` patches. The merge and ownership rules live in
//! `crd_merge::apply`; this step supplies what the request knows: the manager's name, the
//! endpoint, the time, and the strategy's schema and reset fields.

use crd_core::{ErrorList, FieldError, GroupResource, Path, Status, StatusCause, StatusDetails};
use crd_merge::apply::{ApplyError, FieldManager, validate_managed_fields};
use serde_json::Value;

use super::Ctx;
use crate::error::ApiError;
use crate::registry::{Strategy, meta};

/// The longest manager name, as `ValidatePatchOptions` and friends allow.
const MAX_MANAGER_LEN: usize = 128;

/// How a write's managed fields are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Record an `Update` by the request's manager.
    Track,
    /// The object already carries the managed fields of an apply.
    Applied,
}

/// The manager of a request: `fieldManager`, or the user agent up to its first `/`, as
/// upstream's `prefixFromUserAgent`.
pub fn manager_name(ctx: &Ctx<'_>) -> String {
    if let Some(m) = &ctx.opts.write.field_manager {
        return m.clone();
    }
    let ua = ctx
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ua.split('/')
        .next()
        .unwrap_or("")
        .chars()
        .take(MAX_MANAGER_LEN)
        .collect()
}

/// Runs `f` with the field manager of the strategy's kind and version at endpoint `sub`.
fn with_field_manager<R>(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    f: impl FnOnce(FieldManager<'_>) -> R,
) -> R {
    // Entries name the endpoint the request addressed (`scale` too, though a scale write is a
    // write of the object's replicas); reset fields follow the write's semantics.
    let endpoint = ctx.req.endpoint();
    let sub = ctx.sub;
    let info = strategy.info();
    let api_version = info.api_version();
    let mut fm = FieldManager::new(strategy.apply_schema(), &api_version, &info.kind)
        .with_subresource(endpoint.name());
    if let Some(reset) = strategy.reset_fields(sub) {
        fm = fm.with_reset_fields(reset);
    }
    f(fm)
}

/// Records an `Update` of `new` over `old` (`None` on create) by the request's manager.
pub fn track_update(ctx: &Ctx<'_>, strategy: &dyn Strategy, old: Option<&Value>, new: &mut Value) {
    let manager = manager_name(ctx);
    with_field_manager(ctx, strategy, |fm| {
        fm.update(old, new, &manager, &meta::now_rfc3339());
    });
}

/// Applies a configuration to `live` (`None` when the object does not exist yet) and returns
/// the object to write, with its managed fields.
pub fn apply(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    live: Option<&Value>,
    config: &Value,
) -> Result<Value, ApiError> {
    let manager = ctx.opts.write.field_manager.clone().unwrap_or_default();
    with_field_manager(ctx, strategy, |fm| {
        fm.apply(
            live,
            config,
            &manager,
            ctx.opts.write.force,
            &meta::now_rfc3339(),
        )
    })
    .map_err(|e| match e {
        ApplyError::Conflicts(c) => {
            let mut status = Status::failure(409, "Conflict", c.to_string());
            status.details = Some(StatusDetails {
                causes: c
                    .causes()
                    .into_iter()
                    .map(|(field, message)| StatusCause {
                        reason: "FieldManagerConflict".into(),
                        message,
                        field,
                    })
                    .collect(),
                ..StatusDetails::default()
            });
            status.into()
        }
        ApplyError::BadRequest(m) => Status::bad_request(m).into(),
        // The field manager's plain errors (`failed to create typed patch object ...`) reach
        // upstream's `ErrorToAPIStatus` as they are: a 500 with no reason and the text alone.
        ApplyError::Internal(m) => Status::failure(500, "", m).into(),
    })
}

/// `PatchOptions` checks for the patch type: an apply needs a `fieldManager`; only an apply may
/// be forced.
pub fn check_patch_options(ctx: &Ctx<'_>, apply: bool) -> Result<(), ApiError> {
    let mut errs = ErrorList::new();
    if apply
        && ctx
            .opts
            .write
            .field_manager
            .as_deref()
            .unwrap_or("")
            .is_empty()
    {
        errs.push(FieldError::required(
            &Path::new("fieldManager"),
            "is required for apply patch",
        ));
    }
    if !apply && ctx.opts.write.force {
        errs.push(FieldError::forbidden(
            &Path::new("force"),
            "may not be specified for non-apply patch",
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid(
            &GroupResource::new("meta.k8s.io", "PatchOptions"),
            "",
            &errs,
        )
        .into())
    }
}

/// `ValidateManagedFields` on a written object, as field errors under `metadata.managedFields`.
pub fn validation_errors(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    // `get` twice, not `pointer` (which parses and unescapes the pointer on every write).
    let Some(list) = obj.get("metadata").and_then(|m| m.get("managedFields")) else {
        return errs;
    };
    for v in validate_managed_fields(list) {
        let path = Path::new(&v.field);
        errs.push(match v.kind {
            crd_merge::apply::ViolationKind::Invalid(detail) => {
                FieldError::invalid(&path, v.value, detail)
            }
            crd_merge::apply::ViolationKind::TooLong(max) => FieldError::too_long(&path, max),
        });
    }
    errs
}
