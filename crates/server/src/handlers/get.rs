//! GET of one object (and of `/status`, which returns the whole object).

use crd_core::Status;

use super::{Ctx, Reply, read_object, render_object, verbatim_read};
use crate::error::ApiError;
use crate::registry::Strategy;

/// Reads one object at the request's `resourceVersion` (`GetOptions`).
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let key = info.key(ctx.namespace(), ctx.name());
    let kv = ctx
        .store()
        .get_with(&key, ctx.opts.get_freshness)
        .await
        .map_err(|e| ApiError::storage(&info.group_resource(), ctx.name(), e))?
        .ok_or_else(|| ApiError::from(Status::not_found(&info.group_resource(), ctx.name())))?;
    if let Some(answer) = verbatim_read(ctx, strategy, &kv) {
        return Ok(Reply::raw_json(200, answer));
    }
    let obj = read_object(strategy, &kv).await?;
    Ok(Reply::value(200, render_object(ctx, strategy, obj)?))
}
