//! The webhook authorizer (`--authorization-mode=...,Webhook` with
//! `--authorization-webhook-config-file`, or a `Webhook` authorizer of `--authorization-config`):
//! each decision not in its cache is a `SubjectAccessReview` posted to the service a kubeconfig
//! names, as upstream's `plugin/pkg/authorizer/webhook`.
//!
//! - The review is `authorization.k8s.io/v1` or `v1beta1` (whose groups field is `group`).
//! - `status.allowed` allows, `status.denied` denies and stops the union, anything else is no
//!   opinion; the reason travels with the decision.
//! - Answers are cached by the review's spec: allowed for the authorized TTL, others for the
//!   unauthorized TTL (a zero TTL caches nothing), 8,192 entries at most.
//! - Transient failures (a reset connection, 429, 500, 504) are retried with upstream's backoff
//!   (500 ms, ×1.5, five attempts); a failure that remains is the failure policy's decision
//!   (`NoOpinion` or `Deny`) with the error, which answers the request with a 500 when no other
//!   authorizer allows it.
//!
//! Calls run on a runtime of their own, so that a decision can also be awaited from synchronous
//! code (CEL's `authorizer` in admission) without blocking the runtime that serves requests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Attributes, Decision};
use crate::auth::User;
use crate::metrics::{self, WebhookEvaluation};
use crate::webhook::kubeconfig::Target;
use crate::webhook::{Failed, WebhookClient};

/// How many answers the cache holds, as upstream's LRU.
const CACHE_SIZE: usize = 8192;
/// Requests whose requester-controlled attributes are this long are not cached (upstream's
/// `maxControlledAttrCacheSize`).
const MAX_CACHED_ATTRIBUTES: usize = 10_000;
use crate::webhook::FIRST_RETRY_DELAY as FIRST_DELAY;

/// How one webhook authorizer is set up.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    /// The authorizer's name (`webhook` for the flags; the configuration's `name`).
    pub name: String,
    /// Where the service is.
    pub target: Target,
    /// `v1` or `v1beta1`.
    pub version: String,
    /// How long one call may take.
    pub timeout: Duration,
    /// How long an allowed answer is reused (zero: not cached).
    pub authorized_ttl: Duration,
    /// How long any other answer is reused (zero: not cached).
    pub unauthorized_ttl: Duration,
    /// Deny (rather than have no opinion) when the webhook cannot be reached.
    pub deny_on_error: bool,
    /// The first retry's delay (upstream's 500 ms; tests shorten it).
    pub retry_delay: Duration,
    /// `matchConditions`: the webhook is asked only when all are true of the review's spec.
    pub match_conditions: Vec<MatchCondition>,
}

/// One compiled `matchConditions[i].expression` (over `request`, the review's v1 spec).
#[derive(Clone)]
pub struct MatchCondition {
    /// The compiled expression.
    pub program: Arc<crd_cel::Expression>,
    /// Its source, for error messages.
    pub source: String,
}

impl std::fmt::Debug for MatchCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

/// The per-call cost limit of match conditions (upstream's `PerCallLimit`).
const CEL_COST_LIMIT: i64 = 1_000_000;

/// Whether every condition holds of `spec`: false as soon as one is false; evaluation errors
/// (reported once every condition ran, as upstream's `CELMatcher`) are errors.
fn matches(conditions: &[MatchCondition], spec: &Value) -> Result<bool, String> {
    let mut errors = Vec::new();
    for c in conditions {
        match c.program.eval(&[("request", spec)], CEL_COST_LIMIT) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => return Ok(false),
            Err(e) => {
                let e = match e {
                    crd_cel::ExpressionError::CostLimit => {
                        "operation cancelled: actual cost limit exceeded".to_string()
                    }
                    crd_cel::ExpressionError::Runtime(m) => m,
                    crd_cel::ExpressionError::NotBool => "no such overload".to_string(),
                };
                errors.push(format!(
                    "cel evaluation error: expression '{}' resulted in error: {e}",
                    c.source
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(super::rbac::aggregate(&errors))
    }
}

/// The `--authorization-webhook-*` flags, with upstream's defaults.
#[derive(Clone, Debug)]
pub struct WebhookFlags {
    /// `--authorization-webhook-config-file`: the kubeconfig naming the service.
    pub config_file: Option<std::path::PathBuf>,
    /// `--authorization-webhook-version` (`v1beta1` by default, as upstream).
    pub version: String,
    /// `--authorization-webhook-cache-authorized-ttl` (5m).
    pub authorized_ttl: Duration,
    /// `--authorization-webhook-cache-unauthorized-ttl` (30s).
    pub unauthorized_ttl: Duration,
}

impl Default for WebhookFlags {
    fn default() -> Self {
        WebhookFlags {
            config_file: None,
            version: "v1beta1".into(),
            authorized_ttl: Duration::from_mins(5),
            unauthorized_ttl: Duration::from_secs(30),
        }
    }
}

impl WebhookFlags {
    /// The flags' authorizer, when a configuration file is given: upstream's 30 s call timeout
    /// and no opinion on failure.
    pub fn options(&self) -> anyhow::Result<Option<WebhookOptions>> {
        let Some(file) = &self.config_file else {
            return Ok(None);
        };
        check_version(&self.version)?;
        Ok(Some(WebhookOptions {
            name: "webhook".into(),
            target: Target::load(file).map_err(anyhow::Error::msg)?,
            version: self.version.clone(),
            timeout: Duration::from_secs(30),
            authorized_ttl: self.authorized_ttl,
            unauthorized_ttl: self.unauthorized_ttl,
            deny_on_error: false,
            retry_delay: FIRST_DELAY,
            match_conditions: Vec::new(),
        }))
    }
}

/// Refuses a review version upstream does not know, in its words.
pub fn check_version(version: &str) -> anyhow::Result<()> {
    if version == "v1" || version == "v1beta1" {
        Ok(())
    } else {
        anyhow::bail!(
            "unsupported webhook authorizer version {version:?}, supported versions are \"v1\", \"v1beta1\""
        )
    }
}

/// A remote authorizer with its answer cache.
pub struct WebhookAuthorizer {
    options: WebhookOptions,
    client: Arc<WebhookClient>,
    cache: Mutex<HashMap<String, (Instant, Answer)>>,
    runtime: CallRuntime,
}

impl std::fmt::Debug for WebhookAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookAuthorizer")
            .field("name", &self.options.name)
            .field("url", &self.client.url())
            .finish_non_exhaustive()
    }
}

/// A review's answer, as cached.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Answer {
    allowed: bool,
    denied: bool,
    reason: String,
}

/// The runtime the calls run on; shut down without waiting when the authorizer goes.
struct CallRuntime(Option<tokio::runtime::Runtime>);

impl Drop for CallRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl WebhookAuthorizer {
    /// Builds the client of `options` (an unusable kubeconfig is an error).
    pub fn new(options: WebhookOptions) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("authz-webhook")
            .enable_all()
            .build()?;
        // reqwest binds its connection pool to the runtime it is built on.
        let client = {
            let _guard = runtime.enter();
            options
                .target
                .client(options.timeout)
                .map_err(anyhow::Error::msg)?
        };
        Ok(WebhookAuthorizer {
            options,
            client: Arc::new(client),
            cache: Mutex::new(HashMap::new()),
            runtime: CallRuntime(Some(runtime)),
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// The webhook's decision for `user` doing `attrs`.
    pub async fn authorize(&self, user: &User, attrs: &Attributes) -> Decision {
        let spec = spec(user, attrs);
        let name = self.options.name.as_str();
        if !self.options.match_conditions.is_empty() {
            let skipped = |what| metrics::authorization_webhook(name, what, Duration::ZERO, false);
            match matches(&self.options.match_conditions, &spec) {
                Ok(true) => {}
                Ok(false) => {
                    skipped(WebhookEvaluation::Excluded);
                    return Decision::deny("");
                }
                Err(e) => {
                    skipped(WebhookEvaluation::MatchError);
                    return self.on_error(e);
                }
            }
        }
        let key = spec.to_string();
        if let Some(answer) = self.cached(&key) {
            return decide(&answer);
        }
        let body = review(&self.options.version, spec).to_string().into_bytes();
        let client = self.client.clone();
        let delay = self.options.retry_delay;
        let Some(rt) = &self.runtime.0 else {
            return self.on_error("the webhook authorizer is shut down".into());
        };
        let started = Instant::now();
        let outcome = match rt.spawn(call(client, body, delay)).await {
            Ok(outcome) => outcome,
            Err(e) => Err(Failed {
                message: e.to_string(),
                timeout: false,
            }),
        };
        let evaluation = match &outcome {
            Ok(_) => WebhookEvaluation::Success,
            Err(f) if f.timeout => WebhookEvaluation::Timeout,
            Err(_) => WebhookEvaluation::Error,
        };
        metrics::authorization_webhook(
            name,
            evaluation,
            started.elapsed(),
            !self.options.deny_on_error,
        );
        let answer = match outcome {
            Ok(answer) => answer,
            Err(f) => {
                tracing::warn!(authorizer = %name, error = %f.message, "Failed to make webhook authorizer request");
                return self.on_error(f.message);
            }
        };
        if cacheable(attrs) {
            let ttl = if answer.allowed {
                self.options.authorized_ttl
            } else {
                self.options.unauthorized_ttl
            };
            if !ttl.is_zero() {
                self.remember(key, Instant::now() + ttl, answer.clone());
            }
        }
        decide(&answer)
    }

    fn on_error(&self, error: String) -> Decision {
        Decision {
            allowed: false,
            denied: self.options.deny_on_error,
            reason: String::new(),
            error,
        }
    }

    fn cached(&self, key: &str) -> Option<Answer> {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match cache.get(key) {
            Some((until, answer)) if *until > Instant::now() => Some(answer.clone()),
            Some(_) => {
                cache.remove(key);
                None
            }
            None => None,
        }
    }

    fn remember(&self, key: String, until: Instant, answer: Answer) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= CACHE_SIZE {
            let now = Instant::now();
            cache.retain(|_, (t, _)| *t > now);
            if cache.len() >= CACHE_SIZE {
                // Evict the entry closest to expiring.
                if let Some(k) = cache
                    .iter()
                    .min_by_key(|(_, (t, _))| *t)
                    .map(|(k, _)| k.clone())
                {
                    cache.remove(&k);
                }
            }
        }
        cache.insert(key, (until, answer));
    }
}

/// The decision an answer stands for (upstream: both allowed and denied is a denial with an
/// error).
fn decide(answer: &Answer) -> Decision {
    Decision {
        allowed: answer.allowed && !answer.denied,
        denied: answer.denied,
        reason: answer.reason.clone(),
        error: if answer.allowed && answer.denied {
            "webhook subject access review returned both allow and deny response".into()
        } else {
            String::new()
        },
    }
}

/// Whether the requester-controlled attributes are short enough to cache.
fn cacheable(attrs: &Attributes) -> bool {
    let len = match attrs {
        Attributes::Resource {
            verb,
            group,
            version,
            resource,
            namespace,
            name,
        } => {
            verb.len()
                + group.len()
                + version.len()
                + resource.len()
                + namespace.as_ref().map_or(0, String::len)
                + name.as_ref().map_or(0, String::len)
        }
        Attributes::NonResource { verb, path } => verb.len() + path.len(),
    };
    len < MAX_CACHED_ATTRIBUTES
}

/// The review's `spec` (v1 field names), also the cache key.
fn spec(user: &User, attrs: &Attributes) -> Value {
    let mut spec = serde_json::Map::new();
    match attrs {
        Attributes::Resource {
            verb,
            group,
            version,
            resource,
            namespace,
            name,
        } => {
            let (resource, subresource) = resource
                .split_once('/')
                .map_or((resource.as_str(), ""), |(r, s)| (r, s));
            let mut ra = serde_json::Map::new();
            for (k, v) in [
                ("namespace", namespace.as_deref().unwrap_or("")),
                ("verb", verb),
                ("group", group),
                ("version", version),
                ("resource", resource),
                ("subresource", subresource),
                ("name", name.as_deref().unwrap_or("")),
            ] {
                if !v.is_empty() {
                    ra.insert(k.into(), Value::from(v));
                }
            }
            spec.insert("resourceAttributes".into(), Value::Object(ra));
        }
        Attributes::NonResource { verb, path } => {
            spec.insert(
                "nonResourceAttributes".into(),
                json!({"path": path, "verb": verb}),
            );
        }
    }
    if !user.name.is_empty() {
        spec.insert("user".into(), Value::from(user.name.clone()));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), Value::from(user.groups.clone()));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), Value::from(user.uid.clone()));
    }
    Value::Object(spec)
}

/// The review sent: `spec` at `version` (v1beta1 names the groups `group`).
fn review(version: &str, mut spec: Value) -> Value {
    if version == "v1beta1"
        && let Some(groups) = spec.as_object_mut().and_then(|m| m.remove("groups"))
    {
        spec["group"] = groups;
    }
    json!({
        "kind": "SubjectAccessReview",
        "apiVersion": format!("authorization.k8s.io/{version}"),
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": {"allowed": false},
    })
}

/// One review, retried while the failure is transient.
async fn call(
    client: Arc<WebhookClient>,
    body: Vec<u8>,
    first_delay: Duration,
) -> Result<Answer, Failed> {
    let text = client.post_with_retry(body, first_delay).await?;
    parse(&text).map_err(|message| Failed {
        message,
        timeout: false,
    })
}

/// The answer of a review's response body.
fn parse(text: &[u8]) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(text)
        .map_err(|e| format!("decoding the SubjectAccessReview response: {e}"))?;
    let status = review.get("status").cloned().unwrap_or(Value::Null);
    let flag = |k: &str| status.get(k).and_then(Value::as_bool).unwrap_or(false);
    Ok(Answer {
        allowed: flag("allowed"),
        denied: flag("denied"),
        reason: status
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jane() -> User {
        User {
            name: "jane".into(),
            uid: "42".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [("scopes".to_string(), vec!["a".to_string()])].into(),
        }
    }

    #[test]
    fn reviews_carry_the_request_as_upstream_sends_it() {
        // (attributes, version, review spec)
        let cases = [
            (
                Attributes::Resource {
                    verb: "get".into(),
                    group: "apps".into(),
                    version: "v1".into(),
                    resource: "deployments/scale".into(),
                    namespace: Some("prod".into()),
                    name: Some("web".into()),
                },
                "v1",
                json!({
                    "resourceAttributes": {"namespace": "prod", "verb": "get", "group": "apps", "version": "v1", "resource": "deployments", "subresource": "scale", "name": "web"},
                    "user": "jane", "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}, "uid": "42",
                }),
            ),
            (
                Attributes::Resource {
                    verb: "list".into(),
                    group: String::new(),
                    version: "v1".into(),
                    resource: "pods".into(),
                    namespace: None,
                    name: None,
                },
                "v1beta1",
                json!({
                    "resourceAttributes": {"verb": "list", "version": "v1", "resource": "pods"},
                    "user": "jane", "group": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}, "uid": "42",
                }),
            ),
            (
                Attributes::NonResource {
                    verb: "get".into(),
                    path: "/healthz".into(),
                },
                "v1",
                json!({
                    "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
                    "user": "jane", "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}, "uid": "42",
                }),
            ),
        ];
        for (attrs, version, want) in cases {
            let got = review(version, spec(&jane(), &attrs));
            assert_eq!(got["spec"], want, "{attrs:?}");
            assert_eq!(got["apiVersion"], format!("authorization.k8s.io/{version}"));
            assert_eq!(got["kind"], "SubjectAccessReview");
        }
    }

    #[test]
    fn answers_become_decisions() {
        // (response body, decision)
        let cases = [
            (
                r#"{"status":{"allowed":true,"reason":"ok"}}"#,
                Decision::allow("ok"),
            ),
            (
                r#"{"status":{"allowed":false,"denied":true,"reason":"no"}}"#,
                Decision {
                    denied: true,
                    ..Decision::deny("no")
                },
            ),
            (r#"{"status":{"allowed":false}}"#, Decision::deny("")),
            (r#"{"apiVersion":"x"}"#, Decision::deny("")),
            (
                r#"{"status":{"allowed":true,"denied":true}}"#,
                Decision {
                    denied: true,
                    error: "webhook subject access review returned both allow and deny response"
                        .into(),
                    ..Decision::deny("")
                },
            ),
        ];
        for (body, want) in cases {
            assert_eq!(decide(&parse(body.as_bytes()).unwrap()), want, "{body}");
        }
        assert!(
            parse(b"not json")
                .unwrap_err()
                .starts_with("decoding the SubjectAccessReview response: ")
        );
    }

    #[test]
    fn unknown_versions_are_refused_in_upstreams_words() {
        assert!(check_version("v1").is_ok());
        assert!(check_version("v1beta1").is_ok());
        assert_eq!(
            check_version("v2").unwrap_err().to_string(),
            "unsupported webhook authorizer version \"v2\", supported versions are \"v1\", \"v1beta1\""
        );
    }
}
