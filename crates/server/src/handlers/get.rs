//! GET of one object (and of `/status`, which returns the whole object).

use super::{Ctx, Reply, get_stored_at, read_object, render_object, verbatim_read};
use crate::error::ApiError;
use crate::registry::Strategy;

/// Reads one object at the request's `resourceVersion` (`GetOptions`).
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let kv = get_stored_at(ctx, strategy, ctx.opts.get_freshness).await?;
    if let Some(answer) = verbatim_read(ctx, strategy, &kv) {
        return Ok(Reply::raw_json(200, answer));
    }
    let obj = read_object(strategy, &kv).await?;
    Ok(Reply::value(200, render_object(ctx, strategy, obj)?))
}
