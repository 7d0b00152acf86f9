//! The token webhook (`--authentication-token-webhook-config-file`): a bearer token that no other
//! authenticator accepts is sent in a `TokenReview` to the service a kubeconfig names, as
//! upstream's `plugin/pkg/authenticator/token/webhook`, and the answer is cached for
//! `--authentication-token-webhook-cache-ttl` (errors are not cached).
//!
//! The review asks for the API audiences; an answer naming audiences must share one with them,
//! and one naming none is taken as for the API audiences (upstream's implicit audiences).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::Digest as _;

use super::User;
use crate::webhook::WebhookClient;
use crate::webhook::kubeconfig::Target;

/// How many answers the cache holds.
const CACHE_SIZE: usize = 4096;

/// The `--authentication-token-webhook-*` flags, with upstream's defaults.
#[derive(Clone, Debug)]
pub struct TokenWebhookFlags {
    /// `--authentication-token-webhook-config-file`: the kubeconfig naming the service.
    pub config_file: Option<std::path::PathBuf>,
    /// `--authentication-token-webhook-version` (`v1beta1` by default, as upstream).
    pub version: String,
    /// `--authentication-token-webhook-cache-ttl` (2m).
    pub cache_ttl: Duration,
}

impl Default for TokenWebhookFlags {
    fn default() -> Self {
        TokenWebhookFlags {
            config_file: None,
            version: "v1beta1".into(),
            cache_ttl: Duration::from_mins(2),
        }
    }
}

/// A webhook's answer about one token: its user and the audiences it was accepted for, or
/// `None` when it does not authenticate.
#[derive(Clone)]
struct Verdict(Option<(User, Vec<String>)>);

/// A remote token authenticator with its answer cache.
pub struct TokenWebhook {
    client: WebhookClient,
    version: String,
    ttl: Duration,
    retry_delay: Duration,
    cache: Mutex<HashMap<Vec<u8>, (Instant, Verdict)>>,
}

impl TokenWebhook {
    /// The webhook of the flags, when a configuration file is given; an unusable file or an
    /// unknown version is an error (the server does not start).
    pub fn from_flags(flags: &TokenWebhookFlags) -> anyhow::Result<Option<Self>> {
        let Some(file) = &flags.config_file else {
            return Ok(None);
        };
        if flags.version != "v1" && flags.version != "v1beta1" {
            anyhow::bail!(
                "unsupported authentication webhook version {:?}, supported versions are \"v1\", \"v1beta1\"",
                flags.version
            );
        }
        let target = Target::load(file).map_err(anyhow::Error::msg)?;
        let client = target
            .client(Duration::from_secs(30))
            .map_err(anyhow::Error::msg)?;
        Ok(Some(TokenWebhook {
            client,
            version: flags.version.clone(),
            ttl: flags.cache_ttl,
            retry_delay: crate::webhook::FIRST_RETRY_DELAY,
            cache: Mutex::new(HashMap::new()),
        }))
    }

    /// The user a token belongs to and the audiences it was accepted for (among
    /// `audiences`), `Ok(None)` when the webhook does not authenticate it, `Err` when the
    /// webhook could not be asked or answered with an error.
    pub async fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<(User, Vec<String>)>, String> {
        let mut key = sha2::Sha256::digest(token.as_bytes()).to_vec();
        for a in audiences {
            key.push(0);
            key.extend_from_slice(a.as_bytes());
        }
        if let Some(Verdict(hit)) = self.cached(&key) {
            return Ok(hit);
        }
        let mut spec = json!({"token": token});
        if !audiences.is_empty() {
            spec["audiences"] = json!(audiences);
        }
        let body = json!({
            "kind": "TokenReview",
            "apiVersion": format!("authentication.k8s.io/{}", self.version),
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": {"user": {}},
        });
        let text = self
            .client
            .post_with_retry(body.to_string().into_bytes(), self.retry_delay)
            .await
            .map_err(|f| f.message)
            .inspect_err(
                |e| tracing::warn!(error = %e, "Failed to make webhook authenticator request"),
            )?;
        let answer = judge(&text, audiences)?;
        if !self.ttl.is_zero() {
            self.remember(key, Verdict(answer.clone()));
        }
        Ok(answer)
    }

    fn cached(&self, key: &[u8]) -> Option<Verdict> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(key)
            .filter(|(until, _)| *until > Instant::now())
            .map(|(_, a)| a.clone())
    }

    fn remember(&self, key: Vec<u8>, answer: Verdict) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if cache.len() >= CACHE_SIZE {
            cache.retain(|_, (t, _)| *t > now);
            if cache.len() >= CACHE_SIZE {
                cache.clear();
            }
        }
        cache.insert(key, (now + self.ttl, answer));
    }
}

/// A `TokenReview` answer: the user and audiences when authenticated for one of `audiences`,
/// `None` when not, `Err` with the review's `status.error`.
fn judge(text: &[u8], audiences: &[String]) -> Result<Option<(User, Vec<String>)>, String> {
    let review: Value = serde_json::from_slice(text)
        .map_err(|e| format!("decoding the TokenReview response: {e}"))?;
    let status = review.get("status").cloned().unwrap_or(Value::Null);
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let accepted = if audiences.is_empty() {
        Vec::new()
    } else {
        let got = strings(status.get("audiences"));
        let got = if got.is_empty() {
            audiences.to_vec()
        } else {
            got
        };
        let both: Vec<String> = audiences
            .iter()
            .filter(|a| got.contains(a))
            .cloned()
            .collect();
        if both.is_empty() {
            return Ok(None);
        }
        both
    };
    if status.get("authenticated").and_then(Value::as_bool) != Some(true) {
        return match status.get("error").and_then(Value::as_str) {
            Some(e) if !e.is_empty() => Err(e.to_string()),
            _ => Ok(None),
        };
    }
    let user = status.get("user").cloned().unwrap_or(Value::Null);
    let text = |k: &str| {
        user.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let extra = user
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    Ok(Some((
        User {
            name: text("username"),
            uid: text("uid"),
            groups: strings(user.get("groups")),
            extra,
        },
        accepted,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    type Outcome = Result<Option<(User, Vec<String>)>, String>;

    #[test]
    fn answers_become_users() {
        let api = vec!["https://kubernetes.default.svc".to_string()];
        let jane = User {
            name: "jane".into(),
            uid: "7".into(),
            groups: vec!["dev".into()],
            extra: [("scopes".to_string(), vec!["x".to_string()])].into(),
        };
        // (response, audiences asked, outcome)
        let cases: Vec<(&str, Vec<String>, Outcome)> = vec![
            (
                r#"{"status":{"authenticated":true,"user":{"username":"jane","uid":"7","groups":["dev"],"extra":{"scopes":["x"]}}}}"#,
                api.clone(),
                Ok(Some((jane.clone(), api.clone()))),
            ),
            (
                r#"{"status":{"authenticated":true,"user":{"username":"jane","uid":"7","groups":["dev"],"extra":{"scopes":["x"]}},"audiences":["other"]}}"#,
                api.clone(),
                Ok(None),
            ),
            (
                r#"{"status":{"authenticated":true,"user":{"username":"jane"},"audiences":["other","https://kubernetes.default.svc"]}}"#,
                api.clone(),
                Ok(Some((
                    User {
                        name: "jane".into(),
                        ..User::default()
                    },
                    api.clone(),
                ))),
            ),
            (
                r#"{"status":{"authenticated":false}}"#,
                api.clone(),
                Ok(None),
            ),
            (
                r#"{"status":{"authenticated":false,"error":"token expired"}}"#,
                api.clone(),
                Err("token expired".into()),
            ),
            (
                r#"{"status":{"authenticated":true,"user":{"username":"jane"}}}"#,
                Vec::new(),
                Ok(Some((
                    User {
                        name: "jane".into(),
                        ..User::default()
                    },
                    Vec::new(),
                ))),
            ),
        ];
        for (body, auds, want) in cases {
            assert_eq!(judge(body.as_bytes(), &auds), want, "{body}");
        }
        assert!(judge(b"<html>", &api).is_err());
    }
}
