//! PATCH of one object (`handlers/patch.go`): JSON patch and merge patch for every resource,
//! strategic merge patch only for built-in kinds (415 for custom resources, as upstream).
//! The patch is applied to the current object; the result goes through the update path.
//! Without a resourceVersion in the patch, a conflicting concurrent write is retried.

use crd_core::Status;
use serde_json::Value;

use super::update::write_update;
use super::{Ctx, Reply, get_stored, read_object, render_object};
use crate::error::ApiError;
use crate::registry::{Strategy, meta};
use crate::request::negotiate::{PatchType, patch_type};

/// How often a patch is re-applied after losing a race with another writer.
const MAX_ATTEMPTS: usize = 5;

/// The most operations a JSON patch may carry.
const MAX_JSON_PATCH_OPS: usize = 10_000;

/// Patches one object.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let kind = patch_kind(ctx, strategy)?;
    let patch: Value = serde_json::from_slice(&ctx.body)
        .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    let field_validation = ctx.opts.write.field_validation;
    let gr = info.group_resource();
    for attempt in 0..MAX_ATTEMPTS {
        let current = get_stored(ctx, strategy).await?;
        let current_obj = read_object(strategy, &current).await?;
        let mut patched = apply(kind, current_obj, &patch)?;
        let how = crate::registry::Admission {
            sub: ctx.sub,
            field_validation,
            patch: true,
        };
        let mut warnings = strategy.admit(&mut patched, &how)?;
        let patched_rv = meta::resource_version(&patched).to_string();
        let precondition = patched_rv != current.mod_revision.to_string();
        if precondition && !patched_rv.is_empty() {
            return Err(Status::conflict_modified(&gr, name).into());
        }
        match write_update(ctx, strategy, &current, patched).await {
            Ok((out, mut more)) => {
                warnings.append(&mut more);
                return Ok(
                    Reply::value(200, render_object(ctx, strategy, out)?).with_warnings(warnings)
                );
            }
            Err(e) if e.is_storage_conflict() && attempt + 1 < MAX_ATTEMPTS => {}
            Err(e) => return Err(e),
        }
    }
    Err(Status::conflict_modified(&gr, name).into())
}

/// The patch type of a request, with Kubernetes' 415 listing the types the kind accepts.
pub(super) fn patch_kind(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<PatchType, ApiError> {
    let accepted = strategy.patch_types();
    // Server-side apply is not served yet: it is refused like a type the kind does not take.
    let served: Vec<&str> = accepted
        .iter()
        .filter(|t| **t != PatchType::Apply)
        .map(|t| t.media_type())
        .collect();
    match patch_type(ctx.headers) {
        Some(t) if t != PatchType::Apply && accepted.contains(&t) => Ok(t),
        Some(PatchType::Apply) => Err(Status::unsupported_media_type(&served).into()),
        _ => Err(Status::unsupported_media_type(
            &accepted.iter().map(|t| t.media_type()).collect::<Vec<_>>(),
        )
        .into()),
    }
}

/// Applies a patch document to an object.
pub(super) fn apply(kind: PatchType, mut obj: Value, patch: &Value) -> Result<Value, ApiError> {
    match kind {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
            if ops.0.len() > MAX_JSON_PATCH_OPS {
                return Err(Status::too_large(MAX_JSON_PATCH_OPS).into());
            }
            json_patch::patch(&mut obj, &ops)
                .map_err(|e| Status::failure(422, "Invalid", e.to_string()))?;
        }
        PatchType::Merge | PatchType::StrategicMerge | PatchType::Apply => {
            if !patch.is_object() {
                return Err(Status::bad_request(
                    "error decoding patch: the patch must be a JSON object",
                )
                .into());
            }
            json_patch::merge(&mut obj, patch);
        }
    }
    Ok(obj)
}
