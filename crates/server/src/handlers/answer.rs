//! POST to a resource that is answered rather than stored (reviews, `serviceaccounts/token`,
//! `pods/binding`, `pods/eviction`): decode the body as the answer's kind, check its
//! `apiVersion` and `kind`, admit it, and reply 201 with the answer, as upstream's create handler
//! does for such `rest.Creater`s: mutating admission on the body, then validating admission
//! (their `Create` calls `createValidation` before acting), with the request's resource (`pods`,
//! subresource `eviction`) and the body's own kind (`policy/v1` Eviction).

use crd_core::Status;
use serde_json::Value;

use super::{Ctx, Reply};
use crate::admission::{Attributes, Operation};
use crate::error::ApiError;
use crate::registry::meta;
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
    let body = admit(ctx, strategy, api_version, kind, body).await?;
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

/// Runs admission over an answered create's body and returns the body as mutating admission
/// left it.
async fn admit(
    ctx: &Ctx<'_>,
    strategy: &dyn crate::registry::Strategy,
    api_version: &str,
    kind: &str,
    mut body: Value,
) -> Result<Value, ApiError> {
    let admission = &ctx.state.admission;
    if !admission.mutates() && !admission.validates() {
        return Ok(body);
    }
    let attrs = |body: &Value| {
        let name = match ctx.name() {
            "" => meta::name(body),
            name => name,
        };
        Attributes::new(
            strategy.info(),
            Operation::Create,
            ctx.req.subresource.as_deref().unwrap_or(""),
            name,
            ctx.namespace().unwrap_or(""),
            ctx.user,
            ctx.dry_run(),
            ctx.admission_options(Operation::Create),
        )
        .of_kind(api_version, kind)
    };
    if admission.mutates() {
        // The body is not the resource's kind, so apply configurations are typed by deduction.
        let schema = crd_merge::apply::Schema::deduced();
        Box::pin(admission.mutate(
            &attrs(&body),
            Some(&mut body),
            None,
            &schema,
            &ctx.admission,
        ))
        .await?;
    }
    if admission.validates() {
        Box::pin(admission.validate(&attrs(&body), Some(&body), None, &ctx.admission)).await?;
    }
    Ok(body)
}
