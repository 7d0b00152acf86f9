//! `ConversionReview` handling: pure, no IO, so it can be embedded in any HTTP stack.
//!
//! The request/response format is the one kube-apiserver sends (`apiextensions.k8s.io/v1`
//! and `v1beta1`). The rules the API server checks on a webhook's response are enforced here
//! on the user's behalf, so a [`Converter`] only has to move fields around:
//!
//! - objects already at `desiredAPIVersion` are passed through without calling the converter;
//! - the converted `apiVersion` is set to `desiredAPIVersion`, and a missing `kind` is restored;
//! - in `metadata`, only `labels` and `annotations` set by the converter are kept (when the
//!   converter returns a `metadata` object; without one, the input metadata is kept whole);
//!   every other metadata field is restored from the input object, like kube-apiserver does;
//! - a converter that changes `kind`, `metadata.name`, `metadata.namespace` or `metadata.uid`
//!   has a bug the API server would reject anyway: the whole review fails with a message that
//!   names the object;
//! - a converter error (or panic) fails the whole review with `result.status: Failed` and the
//!   error as `result.message`, and no `convertedObjects`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value, json};

/// `apiVersion` of the v1 `ConversionReview`, the one current API servers send first.
pub const REVIEW_V1: &str = "apiextensions.k8s.io/v1";
/// `apiVersion` of the deprecated v1beta1 `ConversionReview`, still accepted by API servers.
pub const REVIEW_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// The one function a webhook author writes: convert `object` to `desired_api_version`.
///
/// `object` is the full custom resource (including `apiVersion`, `kind` and `metadata`).
/// Returning `Err(message)` fails the conversion; the message reaches the API server's client.
/// Implemented for every `Fn(Value, &str) -> Result<Value, String> + Send + Sync`, so a plain
/// `fn` works (closures may need their argument types written out: `|o: Value, v: &str|`).
pub trait Converter: Send + Sync {
    /// Converts one object; see the trait documentation.
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, String>;
}

impl<F> Converter for F
where
    F: Fn(Value, &str) -> Result<Value, String> + Send + Sync,
{
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, String> {
        self(object, desired_api_version)
    }
}

/// Why a request body is not a `ConversionReview` this crate can answer.
///
/// Every variant except [`ReviewError::Encode`] is the client's fault (HTTP 400); a failed
/// *conversion* is not an error here but a `Failed` review response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// The body does not parse as JSON.
    #[error("request body is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The body is JSON but not an object.
    #[error("ConversionReview must be a JSON object")]
    NotAnObject,
    /// `apiVersion` is not one of the two review versions.
    #[error(
        "unsupported ConversionReview apiVersion {0:?}: expected \"apiextensions.k8s.io/v1\" or \"apiextensions.k8s.io/v1beta1\""
    )]
    UnsupportedApiVersion(String),
    /// `kind` is not `ConversionReview`.
    #[error("expected kind \"ConversionReview\", got {0:?}")]
    WrongKind(String),
    /// The review has no `request` object.
    #[error("ConversionReview has no request")]
    MissingRequest,
    /// A required request field is missing or has the wrong type.
    #[error("invalid ConversionReview request: {0}")]
    InvalidRequest(String),
    /// The response could not be serialized (not expected to happen).
    #[error("encoding the ConversionReview response: {0}")]
    Encode(#[source] serde_json::Error),
}

impl ReviewError {
    /// Whether the request was at fault (HTTP 400) rather than this server (HTTP 500).
    pub fn is_client_error(&self) -> bool {
        !matches!(self, Self::Encode(_))
    }
}

/// Answers a serialized `ConversionReview` with a serialized `ConversionReview`.
///
/// This is the whole webhook minus HTTP: `body` is the request's JSON, the result is the JSON to
/// send back with status 200. See the [module documentation](self) for the rules applied.
pub fn handle_review(body: &[u8], converter: &dyn Converter) -> Result<Vec<u8>, ReviewError> {
    let review: Value = serde_json::from_slice(body).map_err(ReviewError::NotJson)?;
    let response = handle_review_value(review, converter)?;
    serde_json::to_vec(&response).map_err(ReviewError::Encode)
}

/// Like [`handle_review`], on parsed JSON; useful to inspect or alter the response.
pub fn handle_review_value(review: Value, converter: &dyn Converter) -> Result<Value, ReviewError> {
    let request = parse(review)?;
    let result = convert_all(request.objects, &request.desired, converter);
    let response = match result {
        Ok(objects) => json!({
            "uid": request.uid,
            "result": {"status": "Success"},
            "convertedObjects": objects,
        }),
        Err(message) => json!({
            "uid": request.uid,
            "result": {"status": "Failed", "message": message},
        }),
    };
    Ok(json!({
        "apiVersion": request.review_api_version,
        "kind": "ConversionReview",
        "response": response,
    }))
}

/// The fields of a review request this crate uses.
struct Request {
    review_api_version: &'static str,
    uid: String,
    desired: String,
    objects: Vec<Value>,
}

fn parse(review: Value) -> Result<Request, ReviewError> {
    let Value::Object(mut review) = review else {
        return Err(ReviewError::NotAnObject);
    };
    let review_api_version = match review.get("apiVersion").and_then(Value::as_str) {
        Some(REVIEW_V1) => REVIEW_V1,
        Some(REVIEW_V1BETA1) => REVIEW_V1BETA1,
        Some(other) => return Err(ReviewError::UnsupportedApiVersion(other.to_string())),
        None => return Err(ReviewError::UnsupportedApiVersion(String::new())),
    };
    match review.get("kind").and_then(Value::as_str) {
        Some("ConversionReview") => {}
        other => {
            return Err(ReviewError::WrongKind(
                other.unwrap_or_default().to_string(),
            ));
        }
    }
    let Some(Value::Object(mut request)) = review.remove("request") else {
        return Err(ReviewError::MissingRequest);
    };
    let Some(Value::String(uid)) = request.remove("uid") else {
        return Err(ReviewError::InvalidRequest(
            "request.uid must be a string".to_string(),
        ));
    };
    let desired = match request.remove("desiredAPIVersion") {
        Some(Value::String(v)) if !v.is_empty() => v,
        _ => {
            return Err(ReviewError::InvalidRequest(
                "request.desiredAPIVersion must be a non-empty string".to_string(),
            ));
        }
    };
    let objects = match request.remove("objects") {
        Some(Value::Array(objects)) => objects,
        // Go serializes an empty slice as null.
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return Err(ReviewError::InvalidRequest(
                "request.objects must be an array".to_string(),
            ));
        }
    };
    Ok(Request {
        review_api_version,
        uid,
        desired,
        objects,
    })
}

/// Converts every object in order; the first failure fails the whole batch.
fn convert_all(
    objects: Vec<Value>,
    desired: &str,
    converter: &dyn Converter,
) -> Result<Vec<Value>, String> {
    objects
        .into_iter()
        .enumerate()
        .map(|(index, object)| convert_one(index, object, desired, converter))
        .collect()
}

fn convert_one(
    index: usize,
    object: Value,
    desired: &str,
    converter: &dyn Converter,
) -> Result<Value, String> {
    let Value::Object(original) = object else {
        return Err(format!(
            "object at index {index} is {}, not a JSON object",
            type_name(&object)
        ));
    };
    if original.get("apiVersion").and_then(Value::as_str) == Some(desired) {
        return Ok(Value::Object(original));
    }
    let id = describe(index, &original);
    let input = Value::Object(original.clone());
    let output = match catch_unwind(AssertUnwindSafe(|| converter.convert(input, desired))) {
        Ok(result) => result?,
        Err(panic) => {
            let reason = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_string());
            return Err(format!("converter panicked on {id}: {reason}"));
        }
    };
    let Value::Object(mut output) = output else {
        return Err(format!(
            "converter returned {} for {id}, not a JSON object",
            type_name(&output)
        ));
    };

    match (original.get("kind"), output.get("kind")) {
        (_, None | Some(Value::Null)) => {
            if let Some(kind) = original.get("kind") {
                output.insert("kind".to_string(), kind.clone());
            }
        }
        (before, Some(after)) if Some(after) == before => {}
        (before, Some(after)) => {
            return Err(format!(
                "converter changed kind of {id} from {} to {}; kind must not change",
                before.unwrap_or(&Value::Null),
                after
            ));
        }
    }
    output.insert("apiVersion".to_string(), Value::String(desired.to_string()));

    let original_meta = match original.get("metadata") {
        Some(Value::Object(meta)) => Some(meta),
        _ => None,
    };
    let metadata = match output.remove("metadata") {
        None | Some(Value::Null) => original_meta.cloned(),
        Some(Value::Object(meta)) => Some(restore_metadata(&id, original_meta, meta)?),
        Some(other) => {
            return Err(format!(
                "converter returned metadata for {id} that is {}, not a JSON object",
                type_name(&other)
            ));
        }
    };
    if let Some(metadata) = metadata {
        output.insert("metadata".to_string(), Value::Object(metadata));
    }
    Ok(Value::Object(output))
}

/// The input metadata, with the converter's labels and annotations (absent means removed,
/// as in kube-apiserver); fails when an identifying field was changed.
fn restore_metadata(
    id: &str,
    original: Option<&Map<String, Value>>,
    mut converted: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let empty = Map::new();
    let original = original.unwrap_or(&empty);
    for field in ["name", "namespace", "uid"] {
        let Some(after) = converted.get(field) else {
            continue;
        };
        let before = original.get(field).unwrap_or(&Value::Null);
        if as_identity(after) != as_identity(before) {
            return Err(format!(
                "converter changed metadata.{field} of {id} from {before} to {after}; \
                 metadata.{field} must not change"
            ));
        }
    }
    let mut metadata = original.clone();
    for field in ["labels", "annotations"] {
        metadata.remove(field);
        match converted.remove(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "converter returned metadata.{field}[{key:?}] for {id} that is {}, \
                         but it must be a string",
                        type_name(value)
                    ));
                }
                metadata.insert(field.to_string(), Value::Object(map));
            }
            Some(other) => {
                return Err(format!(
                    "converter returned metadata.{field} for {id} that is {}, \
                     but it must be an object of strings",
                    type_name(&other)
                ));
            }
        }
    }
    Ok(metadata)
}

/// An identifying metadata field as Kubernetes reads it: missing, null and "" are the same.
fn as_identity(value: &Value) -> Option<&Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        other => Some(other),
    }
}

/// Names an object in error messages: `object at index 1 (CronTab default/local-crontab)`.
fn describe(index: usize, object: &Map<String, Value>) -> String {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let meta = object.get("metadata");
    let field = |name: &str| {
        meta.and_then(|m| m.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let name = match (field("namespace"), field("name")) {
        ("", name) => name.to_string(),
        (namespace, name) => format!("{namespace}/{name}"),
    };
    let label = [kind, name.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if label.is_empty() {
        format!("object at index {index}")
    } else {
        format!("object at index {index} ({label})")
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
