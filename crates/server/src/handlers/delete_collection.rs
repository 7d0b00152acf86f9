//! DELETE of a collection: every matching object is deleted as a single DELETE would delete it;
//! the answer is the list of the items as they were before deletion. Not atomic, as upstream.

use serde_json::json;

use super::delete::delete_object;
use super::list::{list_options, read_page};
use super::{Ctx, Reply};
use crate::error::ApiError;
use crate::registry::{Strategy, meta};

/// Deletes all matching objects.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let opts = list_options(ctx, strategy)?;
    let delete_opts = &ctx.opts.delete;
    let page = read_page(ctx, strategy, &opts).await?;
    let info = strategy.info();
    for obj in &page.items {
        let key = info.key(Some(meta::namespace(obj)), meta::name(obj));
        let Some(kv) = ctx
            .store()
            .get(&key)
            .await
            .map_err(|e| ApiError::storage(&info.group_resource(), meta::name(obj), e))?
        else {
            continue;
        };
        match delete_object(ctx, strategy, &kv, delete_opts).await {
            Ok(_) => {}
            Err(e) if e.to_status().is_some_and(|s| s.code == 404) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Reply::value(
        200,
        json!({
            "apiVersion": info.api_version(),
            "items": page.items,
            "kind": info.list_kind,
            "metadata": { "resourceVersion": page.revision.to_string() },
        }),
    ))
}
