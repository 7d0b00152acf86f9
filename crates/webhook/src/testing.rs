//! A webhook that breaks the protocol on purpose (feature `testing`), to test that an API
//! server validates webhook responses the way kube-apiserver does.
//!
//! The server converts normally, then applies the [`Misbehaviour`] to the response:
//!
//! ```no_run
//! # async fn run(cert_pem: String, key_pem: String) -> Result<(), crd_webhook::ServerError> {
//! use crd_webhook::{WebhookServer, testing::Misbehaviour};
//! let handle = WebhookServer::new(cert_pem, key_pem)?
//!     .bind(([127, 0, 0, 1], 0).into())
//!     .misbehave(Misbehaviour::WrongUid)
//!     .spawn(|object: serde_json::Value, _desired: &str| Ok(object))
//!     .await?;
//! // ... point a CRD at handle.url(), read an object, expect an error ...
//! handle.set_misbehaviour(Misbehaviour::None);
//! assert_eq!(handle.requests(), 1);
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use serde_json::{Value, json};

/// How the webhook breaks its (otherwise correct) response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Behave correctly.
    #[default]
    None,
    /// `response.uid` differs from `request.uid` (suffix `-wrong`); kube-apiserver rejects
    /// this for v1 reviews only.
    WrongUid,
    /// One converted object too few (or one too many when there were none).
    WrongCount,
    /// Every converted object's `metadata.name` gets the suffix `-changed`.
    ChangeName,
    /// `result` is `{status: Failed, message: <this>}` and `convertedObjects` is removed.
    Failed(String),
    /// The response is sent after this delay (to test the API server's timeout).
    Slow(Duration),
    /// Every converted object's `apiVersion` gets the suffix `-wrong`, so it no longer
    /// equals `desiredAPIVersion`.
    WrongApiVersion,
}

/// Applies `misbehaviour` to a `ConversionReview` response produced by
/// [`handle_review_value`](crate::handle_review_value) (the server does this for you).
///
/// [`Misbehaviour::Slow`] is a no-op here: the delay is the caller's business.
pub fn apply(misbehaviour: &Misbehaviour, review: &mut Value) {
    let Some(response) = review.get_mut("response").and_then(Value::as_object_mut) else {
        return;
    };
    match misbehaviour {
        Misbehaviour::None | Misbehaviour::Slow(_) => {}
        Misbehaviour::WrongUid => {
            let uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
            let wrong = format!("{uid}-wrong");
            response.insert("uid".to_string(), Value::String(wrong));
        }
        Misbehaviour::WrongCount => {
            if let Some(objects) = response
                .get_mut("convertedObjects")
                .and_then(Value::as_array_mut)
                && objects.pop().is_none()
            {
                objects.push(json!({}));
            }
        }
        Misbehaviour::ChangeName => {
            for object in converted(response) {
                if let Some(name) = object.pointer_mut("/metadata/name")
                    && let Some(s) = name.as_str()
                {
                    *name = Value::String(format!("{s}-changed"));
                }
            }
        }
        Misbehaviour::Failed(message) => {
            response.remove("convertedObjects");
            response.insert(
                "result".to_string(),
                json!({"status": "Failed", "message": message}),
            );
        }
        Misbehaviour::WrongApiVersion => {
            for object in converted(response) {
                if let Some(api_version) = object.get_mut("apiVersion")
                    && let Some(s) = api_version.as_str()
                {
                    *api_version = Value::String(format!("{s}-wrong"));
                }
            }
        }
    }
}

fn converted(response: &mut serde_json::Map<String, Value>) -> impl Iterator<Item = &mut Value> {
    response
        .get_mut("convertedObjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::{Misbehaviour, apply};

    fn good() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {
                "uid": "u", "result": {"status": "Success"},
                "convertedObjects": [
                    {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "a"}},
                    {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "b"}}
                ]
            }
        })
    }

    #[test]
    fn each_misbehaviour() {
        let cases: Vec<(Misbehaviour, Value)> = vec![
            (Misbehaviour::None, good()),
            (Misbehaviour::Slow(Duration::from_millis(1)), good()),
            (
                Misbehaviour::WrongUid,
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {
                        "uid": "u-wrong", "result": {"status": "Success"},
                        "convertedObjects": [
                            {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "a"}},
                            {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "b"}}
                        ]
                    }
                }),
            ),
            (
                Misbehaviour::WrongCount,
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {
                        "uid": "u", "result": {"status": "Success"},
                        "convertedObjects": [
                            {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "a"}}
                        ]
                    }
                }),
            ),
            (
                Misbehaviour::ChangeName,
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {
                        "uid": "u", "result": {"status": "Success"},
                        "convertedObjects": [
                            {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "a-changed"}},
                            {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "b-changed"}}
                        ]
                    }
                }),
            ),
            (
                Misbehaviour::Failed("boom".to_string()),
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed", "message": "boom"}}
                }),
            ),
            (
                Misbehaviour::WrongApiVersion,
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {
                        "uid": "u", "result": {"status": "Success"},
                        "convertedObjects": [
                            {"apiVersion": "example.com/v1-wrong", "kind": "CronTab", "metadata": {"name": "a"}},
                            {"apiVersion": "example.com/v1-wrong", "kind": "CronTab", "metadata": {"name": "b"}}
                        ]
                    }
                }),
            ),
        ];
        for (misbehaviour, expected) in cases {
            let mut review = good();
            apply(&misbehaviour, &mut review);
            assert_eq!(review, expected, "{misbehaviour:?}");
        }
    }

    #[test]
    fn wrong_count_on_an_empty_list_adds_an_object() {
        let mut review = json!({"response": {"uid": "u", "convertedObjects": []}});
        apply(&Misbehaviour::WrongCount, &mut review);
        assert_eq!(review["response"]["convertedObjects"], json!([{}]));
    }
}
