//! POST to a resource that is answered rather than stored (reviews, `serviceaccounts/token`):
//! decode the body as the answer's kind, check its `apiVersion` and `kind`, and reply 201 with
//! the answer, as upstream's create handler does for such `rest.Creater`s.

use crd_core::Status;
use serde_json::Value;

use super::{Ctx, Reply};
use crate::error::ApiError;
use crate::registry::reviews::{Answer, AnswerRequest};
use crate::request::negotiate::decode_object;

/// Answers one create.
pub async fn handle(
    ctx: &Ctx<'_>,
    strategy: &dyn crate::registry::Strategy,
    answer: &dyn Answer,
) -> Result<Reply, ApiError> {
    let (kind, api_version) = answer.kind();
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let body = decode_object(ctx.headers, &ctx.body, kind, version, &|b| {
        crate::protobuf::decode_review(b, api_version, kind)
    })?;
    let got_kind = body.get("kind").and_then(Value::as_str).unwrap_or(kind);
    let got_version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or(api_version);
    if got_kind != kind
        || (got_version != api_version && !answer.also_accepts().contains(&got_version))
    {
        return Err(Status::bad_request(format!(
            "the API version in the data ({got_version}) does not match the expected API version ({api_version})"
        ))
        .into());
    }
    let reply = answer
        .answer(AnswerRequest {
            user: ctx.user,
            namespace: ctx.namespace(),
            name: ctx.name(),
            body,
            authorizer: &ctx.state.authorizer,
            authn: &ctx.state.authn,
            store: ctx.store(),
            strategy,
            dry_run: ctx.dry_run(),
        })
        .await?;
    Ok(Reply::value(201, reply))
}
