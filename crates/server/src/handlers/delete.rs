//! DELETE of one object (generic store `Delete`): preconditions, admission (webhooks see the
//! stored object as `oldObject`), then the propagation policy's
//! GC finalizers (`orphan`, `foregroundDeletion`) and the strategy's verdict
//! ([`owners::prepare_delete`]), then either a graceful deletion (finalizers pending: set
//! deletionTimestamp and keep the object) or removal.

use crd_core::Status;
use crd_storage::{KeyValue, StorageError};

use super::{Ctx, Reply, ReplyBody, get_stored, read_object, render_object, storage_bytes};
use crate::admission::Operation;
use crate::error::ApiError;
use crate::registry::{DeleteOutcome, Strategy, meta, owners};
use crate::request::options::DeleteOptions;

/// Deletes one object.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let opts = &ctx.opts.delete;
    let current = get_stored(ctx, strategy).await?;
    delete_object(ctx, strategy, &current, opts).await
}

/// Deletes a stored object, honouring preconditions and finalizers.
pub async fn delete_object(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    current: &KeyValue,
    opts: &DeleteOptions,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let gr = info.group_resource();
    let mut obj = read_object(strategy, current).await?;
    let name = meta::name(&obj).to_string();
    opts.check_preconditions(
        &info.group_kind(),
        &name,
        meta::uid(&obj),
        current.mod_revision,
    )?;
    let attrs = ctx.admission_attributes(strategy, Operation::Delete, &obj);
    let admission = &ctx.state.admission;
    admission
        .mutate(
            &attrs,
            None,
            Some(&obj),
            strategy.apply_schema(),
            &ctx.admission,
        )
        .await?;
    admission
        .validate(&attrs, None, Some(&obj), &ctx.admission)
        .await?;
    let outcome = owners::prepare_delete(
        strategy,
        &mut obj,
        opts.propagation_policy,
        opts.grace_period_seconds,
    );
    match outcome {
        DeleteOutcome::Immediate => {
            // What a removal answers: the object for kinds whose store returns it, else a
            // success `Status`.
            let removed = |obj: serde_json::Value| -> Result<Reply, ApiError> {
                if strategy.returns_deleted_object() {
                    return Ok(Reply::value(200, render_object(ctx, strategy, obj)?));
                }
                let status = Status::success_deleted(&gr, &name, meta::uid(&obj));
                Ok(Reply {
                    code: 200,
                    body: ReplyBody::Status(Box::new(status)),
                    warnings: Vec::new(),
                    content_type: None,
                })
            };
            if opts.dry_run {
                return removed(obj);
            }
            match ctx
                .store()
                .delete(&current.key, Some(current.mod_revision))
                .await
            {
                Ok(_) => {}
                Err(StorageError::Conflict { .. }) => {
                    return Err(Status::conflict_modified(&gr, &name).into());
                }
                Err(e) => return Err(ApiError::storage(&gr, &name, e)),
            }
            removed(obj)
        }
        DeleteOutcome::Graceful => {
            // An object left waiting for its dependents after `orphanDependents: false` is
            // 202 Accepted (the handler's legacy rule); every other graceful deletion is 200.
            let code = if opts.orphan_dependents == Some(false) {
                202
            } else {
                200
            };
            meta::mark_deleting(&mut obj);
            let original = read_object(strategy, current).await?;
            if meta::same_ignoring_rv(&obj, &original) {
                return Ok(Reply::value(code, render_object(ctx, strategy, original)?));
            }
            let value = storage_bytes(ctx, strategy, &obj).await?;
            if opts.dry_run {
                let out =
                    super::preview(strategy, &current.key, value, current.mod_revision).await?;
                return Ok(Reply::value(code, render_object(ctx, strategy, out)?));
            }
            let rev = ctx
                .store()
                .update(&current.key, value.clone(), current.mod_revision)
                .await
                .map_err(|e| ApiError::storage(&gr, &name, e))?;
            let stored = KeyValue {
                key: current.key.clone(),
                value,
                create_revision: current.create_revision,
                mod_revision: rev,
                decoded: crd_storage::Decoded::default(),
            };
            let out = read_object(strategy, &stored).await?;
            Ok(Reply::value(code, render_object(ctx, strategy, out)?))
        }
    }
}
