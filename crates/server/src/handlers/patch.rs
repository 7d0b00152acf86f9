//! PATCH of one object (`handlers/patch.go`): JSON patch and merge patch for every resource,
//! strategic merge patch only for built-in kinds (415 for custom resources, as upstream).
//! The patch is applied to the current object; the result goes through the update path.
//! Without a resourceVersion in the patch, a conflicting concurrent write is retried.

use crd_core::Status;
use serde_json::Value;

use super::managed::{self, Ownership};
use super::update::write_update;
use super::{Ctx, Reply, get_stored, read_object, render_object};
use crate::error::ApiError;
use crate::registry::{Strategy, meta};
use crate::request::negotiate::{BodyFormat, PatchType, decode_document, patch_type};
use crate::request::options::FieldValidation;
use crd_merge as merge;

/// How often a patch is re-applied after losing a race with another writer.
const MAX_ATTEMPTS: usize = 5;

/// Patches one object.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let kind = patch_kind(ctx, strategy)?;
    managed::check_patch_options(ctx, kind == PatchType::Apply)?;
    if kind == PatchType::Apply {
        return apply_patch(ctx, strategy).await;
    }
    let field_validation = ctx.opts.write.field_validation;
    let gr = info.group_resource();
    for attempt in 0..MAX_ATTEMPTS {
        let current = get_stored(ctx, strategy).await?;
        let current_obj = read_object(strategy, &current).await?;
        let (mut patched, mut warnings) = apply(
            kind,
            current_obj,
            &ctx.body,
            field_validation,
            strategy.schema(),
        )?;
        super::update::check_name(ctx, strategy, &patched)?;
        // A strategic merge patch shows itself in errors as Go prints the decoded map.
        let patch_value = (kind == PatchType::StrategicMerge)
            .then(|| serde_json::from_slice::<serde_json::Value>(&ctx.body).ok())
            .flatten()
            .map(|p| crd_schema::validate::gofmt::value_v(&p));
        // A patched object its Go type cannot hold: upstream's 422 on `patch`.
        if let Some(e) = strategy.patched_decode_error(&patched, kind == PatchType::StrategicMerge)
        {
            let value = patch_value.clone().unwrap_or_else(|| patched.to_string());
            let errors = crd_core::ErrorList(vec![crd_core::FieldError::invalid(
                &crd_core::Path::new("patch"),
                value,
                e,
            )]);
            return Err(Status::invalid(&crd_core::GroupResource::new("", ""), "", &errors).into());
        }
        let how = crate::registry::Admission {
            sub: ctx.sub,
            field_validation,
            patch: true,
            patch_value,
        };
        warnings.extend(strategy.admit(&mut patched, &how)?);
        let patched_rv = meta::resource_version(&patched).to_string();
        let precondition = patched_rv != current.mod_revision.to_string();
        if precondition && !patched_rv.is_empty() {
            return Err(Status::conflict_modified(&gr, name).into());
        }
        match write_update(ctx, strategy, &current, patched, Ownership::Track).await {
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

/// Server-side apply (`application/apply-patch+yaml`): the configuration is merged into the
/// live object by the field manager, or creates the object when there is none.
async fn apply_patch(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let config = decode_document(BodyFormat::Yaml, &ctx.body)
        .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    if !config.is_object() {
        return Err(Status::bad_request(
            "error decoding patch: the apply configuration must be an object",
        )
        .into());
    }
    let body_name = meta::name(&config);
    if !body_name.is_empty() && body_name != name {
        return Err(Status::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        ))
        .into());
    }
    let url_ns = ctx.namespace().unwrap_or("");
    let body_ns = meta::namespace(&config);
    if info.namespaced() && !body_ns.is_empty() && body_ns != url_ns {
        return Err(Status::bad_request(format!(
            "the namespace of the object ({body_ns}) does not match the namespace on the request ({url_ns})"
        ))
        .into());
    }
    let how = crate::registry::Admission {
        sub: ctx.sub,
        field_validation: ctx.opts.write.field_validation,
        patch: true,
        patch_value: None,
    };
    let gr = info.group_resource();
    for attempt in 0..MAX_ATTEMPTS {
        let stored = match get_stored(ctx, strategy).await {
            Ok(kv) => Some(kv),
            Err(e) if e.to_status().is_some_and(|s| s.code == 404) => None,
            Err(e) => return Err(e),
        };
        let Some(current) = stored else {
            if ctx.sub != crate::registry::Subresource::Main {
                return Err(Status::not_found(&gr, name).into());
            }
            let mut obj = managed::apply(ctx, strategy, None, &config)?;
            let m = meta::meta_mut(&mut obj);
            m.insert("name".into(), Value::String(name.to_string()));
            if info.namespaced() {
                m.insert("namespace".into(), Value::String(url_ns.to_string()));
            }
            let warnings = strategy.admit(&mut obj, &how)?;
            match super::create::create_object(ctx, strategy, obj, warnings, Ownership::Applied)
                .await
            {
                Err(e) if is_already_exists(&e) && attempt + 1 < MAX_ATTEMPTS => continue,
                other => return other,
            }
        };
        // A resourceVersion in the configuration is a precondition, as upstream's apply
        // carries it into the object its update checks.
        let wanted = meta::resource_version(&config);
        if !wanted.is_empty() && wanted != current.mod_revision.to_string() {
            return Err(Status::conflict_modified(&gr, name).into());
        }
        let live = read_object(strategy, &current).await?;
        let mut applied = managed::apply(ctx, strategy, Some(&live), &config)?;
        let mut warnings = strategy.admit(&mut applied, &how)?;
        match write_update(ctx, strategy, &current, applied, Ownership::Applied).await {
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

fn is_already_exists(e: &ApiError) -> bool {
    e.to_status().is_some_and(|s| s.reason == "AlreadyExists")
}

/// The patch type of a request, with Kubernetes' 415 listing the types the kind accepts.
pub(super) fn patch_kind(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<PatchType, ApiError> {
    let accepted = strategy.patch_types();
    match patch_type(ctx.headers) {
        Some(t) if accepted.contains(&t) => Ok(t),
        _ => Err(Status::unsupported_media_type(
            &accepted.iter().map(|t| t.media_type()).collect::<Vec<_>>(),
        )
        .into()),
    }
}

/// Applies a patch body to an object as kube-apiserver does (`crd_merge`), returning the
/// patched object and the body's strict-decoding problems as warnings (`Warn`); with `Strict`
/// they are the 422 upstream answers.
pub(super) fn apply(
    kind: PatchType,
    mut obj: Value,
    body: &[u8],
    validation: FieldValidation,
    schema: Option<&Value>,
) -> Result<(Value, Vec<String>), ApiError> {
    let v = match validation {
        FieldValidation::Ignore => merge::json_patch::FieldValidation::Ignore,
        FieldValidation::Warn => merge::json_patch::FieldValidation::Warn,
        FieldValidation::Strict => merge::json_patch::FieldValidation::Strict,
    };
    let empty = Value::Object(serde_json::Map::new());
    let problems = match kind {
        PatchType::Json => merge::json_patch::apply_with(&mut obj, body, v),
        PatchType::Merge | PatchType::Apply => merge::merge_patch::apply_with(&mut obj, body, v),
        PatchType::StrategicMerge => {
            merge::strategic::apply_with(&mut obj, body, schema.unwrap_or(&empty), v)
        }
    }
    .map_err(patch_error)?;
    if problems.is_empty() {
        return Ok((obj, Vec::new()));
    }
    match validation {
        FieldValidation::Strict => {
            let shown = match kind {
                PatchType::StrategicMerge => serde_json::from_slice::<Value>(body)
                    .map(|p| merge::strategic::go_v(&p))
                    .unwrap_or_default(),
                _ => merge::json_patch::go_json(&obj),
            };
            Err(patch_error(merge::json_patch::strict_decoding_error(
                &problems, &shown,
            )))
        }
        FieldValidation::Warn => Ok((obj, problems)),
        FieldValidation::Ignore => Ok((obj, Vec::new())),
    }
}

/// A patch engine's error as the Status upstream sends.
fn patch_error(e: merge::json_patch::PatchError) -> ApiError {
    let mut status = Status::failure(e.code, e.reason, e.message);
    if e.empty_details || e.field_cause.is_some() {
        let mut details = crd_core::StatusDetails::default();
        if let Some(c) = e.field_cause {
            details.causes.push(crd_core::StatusCause {
                reason: c.reason.to_string(),
                message: c.message,
                field: c.field.to_string(),
            });
        }
        status.details = Some(details);
    }
    status.into()
}
