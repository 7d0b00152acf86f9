//! One webhook of a stored `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`,
//! compiled once per configuration revision: rules, parsed selectors, compiled match conditions
//! and the HTTPS client (built as conversion webhooks' clients are).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use crd_builtin::admissionregistration::MATCH_CONDITION_VARIABLES;
use crd_cel::Expression;
use crd_core::labels::Selector;
use serde_json::Value;

use super::matching::Rule;
use crate::webhook::{ClientConfig, ServiceRef, WebhookClient};

/// A compiled webhook.
#[derive(Debug)]
pub struct Hook {
    /// The configuration's name.
    pub configuration: String,
    /// `name`.
    pub name: String,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore`.
    pub fail_open: bool,
    /// `matchPolicy: Equivalent`.
    pub equivalent: bool,
    /// `namespaceSelector`, or why it does not parse.
    pub namespace_selector: Result<Selector, String>,
    /// `objectSelector`, or why it does not parse.
    pub object_selector: Result<Selector, String>,
    /// `sideEffects`.
    pub side_effects: String,
    /// The `AdmissionReview` version to send (`v1` first), if any is known.
    pub review_version: Option<&'static str>,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke_if_needed: bool,
    /// `matchConditions`: name, source and the compiled expression (or its compilation error).
    pub match_conditions: Vec<(String, String, Result<Expression, String>)>,
    /// The client, or why none could be built.
    pub client: Result<WebhookClient, String>,
}

fn selector(v: Option<&Value>) -> Result<Selector, String> {
    match v.filter(|v| !v.is_null()) {
        None => Ok(Selector::everything()),
        Some(s) => Selector::from_label_selector_json(s),
    }
}

impl Hook {
    /// Compiles `webhooks[i]` of a configuration.
    pub fn build(
        configuration: &str,
        hook: &Value,
        mutating: bool,
        service_addresses: &HashMap<String, SocketAddr>,
    ) -> Hook {
        let s = |k: &str| hook.get(k).and_then(Value::as_str).unwrap_or("");
        let timeout = hook
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10);
        let cc = hook.get("clientConfig").unwrap_or(&Value::Null);
        let bundle = cc
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .unwrap_or_default();
        let svc = cc.get("service").filter(|v| v.is_object());
        let config = ClientConfig {
            url: cc.get("url").and_then(Value::as_str),
            service: svc.map(|svc| ServiceRef {
                namespace: svc.get("namespace").and_then(Value::as_str).unwrap_or(""),
                name: svc.get("name").and_then(Value::as_str).unwrap_or(""),
                path: svc.get("path").and_then(Value::as_str),
                port: svc
                    .get("port")
                    .and_then(Value::as_i64)
                    .and_then(|p| i32::try_from(p).ok())
                    .unwrap_or(443),
            }),
            ca_bundle: &bundle,
            ..ClientConfig::default()
        };
        let client = WebhookClient::build(
            &config,
            service_addresses,
            Duration::from_secs(timeout),
            &format!("?timeout={timeout}s"),
        );
        let review_version = hook
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter().find_map(|v| match v.as_str() {
                    Some("v1") => Some("v1"),
                    Some("v1beta1") => Some("v1beta1"),
                    _ => None,
                })
            });
        let match_conditions = hook
            .get("matchConditions")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                        let expr = c.get("expression").and_then(Value::as_str).unwrap_or("");
                        (
                            name.to_string(),
                            expr.to_string(),
                            Expression::compile_bool(expr, MATCH_CONDITION_VARIABLES),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Hook {
            configuration: configuration.to_string(),
            name: s("name").to_string(),
            rules: hook
                .get("rules")
                .and_then(Value::as_array)
                .map(|rs| rs.iter().map(Rule::from_json).collect())
                .unwrap_or_default(),
            fail_open: s("failurePolicy") == "Ignore",
            equivalent: s("matchPolicy") != "Exact",
            namespace_selector: selector(hook.get("namespaceSelector")),
            object_selector: selector(hook.get("objectSelector")),
            side_effects: s("sideEffects").to_string(),
            review_version,
            reinvoke_if_needed: mutating && s("reinvocationPolicy") == "IfNeeded",
            match_conditions,
            client,
        }
    }

    /// Compiles every webhook of a stored configuration.
    pub fn all_of(
        config: &Value,
        mutating: bool,
        service_addresses: &HashMap<String, SocketAddr>,
    ) -> Vec<Hook> {
        let name = config
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        config
            .get("webhooks")
            .and_then(Value::as_array)
            .map(|hs| {
                hs.iter()
                    .map(|h| Hook::build(name, h, mutating, service_addresses))
                    .collect()
            })
            .unwrap_or_default()
    }
}
