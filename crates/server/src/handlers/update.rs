//! PUT of one object, and [`write_update`], the update path PUT and PATCH share (generic store
//! `Update` plus `rest.BeforeUpdate`): mutating admission, carry over system fields, prepare,
//! validate, validating admission, delete when
//! the last finalizer of a deleting object is gone, skip no-op writes, and compare-and-swap.

use crd_core::{ErrorList, FieldError, Path, Status};
use crd_storage::{KeyValue, StorageError};
use serde_json::Value;

use super::managed::{self, Ownership};
use super::{Ctx, Reply, get_stored, invalid, read_object, render_object, storage_bytes};
use crate::admission::Operation;
use crate::error::ApiError;
use crate::registry::{Strategy, Subresource, meta};

/// Replaces one object.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let (mut new, repeats) = super::create::decode_body_noting_duplicates(ctx, strategy)?;
    let how = crate::registry::Admission {
        sub: ctx.sub,
        field_validation: ctx.opts.write.field_validation,
        patch: false,
        patch_value: None,
    };
    let mut warnings = super::create::duplicate_fields(ctx, strategy, &new, how.clone(), repeats)?;
    warnings.extend(strategy.admit(&mut new, &how)?);
    check_name(ctx, strategy, &new)?;
    if info.namespaced() && meta::namespace(&new).is_empty() {
        let url_ns = ctx.namespace().unwrap_or("");
        meta::meta_mut(&mut new).insert("namespace".into(), Value::String(url_ns.into()));
    }
    let current = match get_stored(ctx, strategy).await {
        Err(e) if e.is_not_found() && ctx.sub == Subresource::Main => {
            if strategy.allow_create_on_update() {
                return create_on_update(ctx, strategy, new, warnings).await;
            }
            return Err(e);
        }
        other => other?,
    };
    let rv = meta::resource_version(&new).to_string();
    if rv.is_empty() {
        if !strategy.allow_unconditional_update() {
            // Upstream validates the parsed `uint64` revision, which Go prints as `0x0`.
            let errors = ErrorList(vec![FieldError::invalid_printed(
                &Path::new("metadata").child("resourceVersion"),
                "0x0",
                "must be specified for an update",
            )]);
            return Err(Status::invalid(&info.group_resource(), name, &errors).into());
        }
    } else if rv != current.mod_revision.to_string() {
        return Err(Status::conflict_modified(&info.group_resource(), name).into());
    }
    let (out, mut more) = write_update(ctx, strategy, &current, new, Ownership::Track).await?;
    warnings.append(&mut more);
    Ok(Reply::value(200, render_object(ctx, strategy, out)?).with_warnings(warnings))
}

/// Upstream's `checkName`, after a PUT's decoding and a patch's application: the object must
/// keep the URL's name and (when it names one) namespace (400 otherwise; a patch cannot move an
/// object).
pub(super) fn check_name(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    obj: &Value,
) -> Result<(), ApiError> {
    let name = ctx.name();
    if meta::name(obj) != name {
        return Err(Status::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta::name(obj)
        ))
        .into());
    }
    let body_ns = meta::namespace(obj);
    let url_ns = ctx.namespace().unwrap_or("");
    if strategy.info().namespaced() && !body_ns.is_empty() && body_ns != url_ns {
        return Err(Status::bad_request(format!(
            "the namespace of the object ({body_ns}) does not match the namespace on the request ({url_ns})"
        ))
        .into());
    }
    Ok(())
}

/// A PUT of a missing object of a kind that allows it (upstream's `AllowCreateOnUpdate`):
/// created from the body and answered 201, as upstream's `Store.Update` does. The body's
/// `resourceVersion` is dropped, as storage drops it; a body `uid` is a precondition no missing
/// object meets (409); and the user must be allowed to `create` it, which upstream's update
/// handler asks (`withAuthorization`) before validating admission.
async fn create_on_update(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    mut new: Value,
    warnings: Vec<String>,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let gr = info.group_resource();
    let uid = meta::uid(&new);
    if !uid.is_empty() {
        return Err(Status::conflict(
            &gr,
            name,
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: "),
        )
        .into());
    }
    let create = crate::authz::Attributes::Resource {
        verb: "create".into(),
        group: info.group.clone(),
        version: info.version.clone(),
        resource: info.resource.clone(),
        namespace: ctx.namespace().map(String::from),
        name: Some(name.to_string()),
    };
    let decision = ctx.state.authorizer.authorize(ctx.user, &create).await;
    if !decision.error.is_empty() && !decision.allowed {
        return Err(Status::internal(decision.error).into());
    }
    if !decision.allowed {
        return Err(Status::forbidden(&gr, name, &decision.reason).into());
    }
    meta::meta_mut(&mut new).remove("resourceVersion");
    super::create::create_object(ctx, strategy, new, warnings, Ownership::Track).await
}

/// Writes `new` over the stored `current` (compare-and-swap on its revision). Returns the object
/// to answer with and any warnings.
pub async fn write_update(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    current: &KeyValue,
    mut new: Value,
    ownership: Ownership,
) -> Result<(Value, Vec<String>), ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let old = read_object(strategy, current).await?;
    if ownership == Ownership::Track {
        managed::track_update(ctx, strategy, Some(&old), &mut new);
    }
    let attrs = ctx.admission_attributes(strategy, Operation::Update, &new);
    let admission = &ctx.state.admission;
    let mut readmitted = Vec::new();
    if admission
        .mutate(
            &attrs,
            Some(&mut new),
            Some(&old),
            strategy.apply_schema(),
            &ctx.admission,
        )
        .await?
    {
        readmitted = strategy.admit(&mut new, &super::readmission(ctx))?;
    }
    before_update(&mut new, &old);
    strategy.authorize_write(&ctx.state.authorizer, ctx.user, &new, Some(&old))?;
    strategy.prepare_update(&mut new, &old, ctx.sub);
    let mut errors = strategy.validate_update(&new, &old, ctx.sub);
    errors.extend(managed::validation_errors(&new));
    if !errors.is_empty() {
        return Err(invalid(strategy, name, &errors));
    }
    strategy.guard_update(&new, &old).await?;
    if let Some(p) = strategy.write_permission(ctx.sub, &new, Some(&old)) {
        p.check(&ctx.state.authorizer, ctx.user).await?;
    }
    let attrs = ctx.admission_attributes(strategy, Operation::Update, &new);
    admission
        .validate(&attrs, Some(&new), Some(&old), &ctx.admission)
        .await?;
    let mut warnings = readmitted;
    warnings.extend(crd_core::validation::finalizer_warnings(&new, Some(&old)));
    warnings.extend(strategy.write_warnings(&new, Some(&old)));
    if ctx.dry_run() && ctx.sub == Subresource::Main {
        warnings.extend(strategy.dry_run_warnings(&new, &old).await);
    }
    let gr = info.group_resource();
    if meta::is_deleting(&old) && strategy.ready_to_remove(&new) {
        if ctx.dry_run() {
            return Ok((new, warnings));
        }
        match ctx
            .store()
            .delete(&current.key, Some(current.mod_revision))
            .await
        {
            Ok(_) => return Ok((new, warnings)),
            Err(StorageError::Conflict { .. }) => {
                return Err(Status::conflict_modified(&gr, name).into());
            }
            Err(e) => return Err(ApiError::storage(&gr, name, e)),
        }
    }
    // A write that would store the same bytes is skipped (the resourceVersion stays). Comparing
    // the encoded bytes, as etcd3's GuaranteedUpdate does, means an unchanged object stored at an
    // older version is still rewritten at the current storage version.
    let value = storage_bytes(ctx, strategy, &new).await?;
    // ... unless the stored value is stale (encrypted with a key writes no longer use): then it
    // is rewritten, as upstream's GuaranteedUpdate does, which is how keys are rotated.
    if value == current.value && !ctx.store().stale(&current.key, current.mod_revision) {
        return Ok((old, warnings));
    }
    if ctx.dry_run() {
        let out = super::preview(strategy, &current.key, value, current.mod_revision).await?;
        return Ok((out, warnings));
    }
    let rev = ctx
        .store()
        .update(&current.key, value.clone(), current.mod_revision)
        .await
        .map_err(|e| ApiError::storage(&gr, name, e))?;
    let stored = KeyValue {
        key: current.key.clone(),
        value,
        create_revision: current.create_revision,
        mod_revision: rev,
        decoded: crd_storage::Decoded::default(),
    };
    Ok((read_object(strategy, &stored).await?, warnings))
}

/// `rest.BeforeUpdate`: fields an update can never change are taken from the old object.
fn before_update(new: &mut Value, old: &Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
    let m = meta::meta_mut(new);
    if let Some(g) = old_meta.get("generation") {
        m.insert("generation".into(), g.clone());
    }
    if m.get("uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
        && let Some(uid) = old_meta.get("uid")
    {
        m.insert("uid".into(), uid.clone());
    }
    for field in ["creationTimestamp", "deletionTimestamp"] {
        if let Some(v) = old_meta.get(field) {
            m.insert(field.into(), v.clone());
        }
    }
    if m.get("deletionGracePeriodSeconds").is_none()
        && let Some(v) = old_meta.get("deletionGracePeriodSeconds")
    {
        m.insert("deletionGracePeriodSeconds".into(), v.clone());
    }
}
