//! The operator's validating admission webhook: [`validate_page`] is the one function, served in
//! production by [`serve`] (crd-webhook over HTTPS) and in tests by the harness's
//! `validating_webhook`, with the configuration the operator ships ([`configuration`]).

use std::net::SocketAddr;
use std::path::Path;

use crd_webhook::{Denial, ServerError, WebhookHandle, WebhookServer};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use serde_json::Value;

/// The deployed `ValidatingWebhookConfiguration` (a `service` reference; the CA is injected).
pub const CONFIGURATION_YAML: &str = include_str!("../webhook.yaml");

/// The path the webhook is served at, as [`CONFIGURATION_YAML`]'s `service.path` says.
pub const PATH: &str = "/validate";

/// Content longer than this is allowed with a warning: a `ConfigMap` holds at most 1 MiB.
pub const WARN_BYTES: usize = 512 * 1024;

/// Judges a Page's CREATE or UPDATE: pages are static, so content with a `<script>` is refused
/// (403) and an empty one too; large content is allowed with a warning.
pub fn validate_page(request: &Value) -> Result<Vec<String>, Denial> {
    let content = request
        .pointer("/object/spec/content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if content.trim().is_empty() {
        return Err(Denial::forbidden("spec.content must not be empty"));
    }
    if content.to_ascii_lowercase().contains("<script") {
        return Err(Denial::forbidden(
            "spec.content must not contain <script>: pages are served as static files",
        ));
    }
    if content.len() > WARN_BYTES {
        return Ok(vec![format!(
            "spec.content is {} bytes; the ConfigMap it goes into holds at most 1 MiB",
            content.len()
        )]);
    }
    Ok(Vec::new())
}

/// The configuration the operator deploys, parsed from [`CONFIGURATION_YAML`].
///
/// # Panics
///
/// Never: the YAML is part of the crate and its parsing is tested.
pub fn configuration() -> ValidatingWebhookConfiguration {
    serde_saphyr::from_str(CONFIGURATION_YAML).expect("webhook.yaml is a configuration")
}

/// Serves [`validate_page`] in production: HTTPS with the serving certificate and key of the
/// webhook's TLS Secret (`tls.crt`, `tls.key`) at `addr`, path [`PATH`], until the handle is
/// shut down or dropped.
pub async fn serve(
    cert_file: &Path,
    key_file: &Path,
    addr: SocketAddr,
) -> Result<WebhookHandle, ServerError> {
    WebhookServer::from_pem_files(cert_file, key_file)?
        .bind(addr)
        .path(PATH)
        .spawn_validating(validate_page)
        .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pages_are_judged_by_their_content() {
        for (content, expected) in [
            (json!("<h1>Hello</h1>"), Ok(Vec::new())),
            (
                json!("<SCRIPT>alert(1)</SCRIPT>"),
                Err("spec.content must not contain <script>: pages are served as static files"),
            ),
            (json!("  "), Err("spec.content must not be empty")),
            (json!(null), Err("spec.content must not be empty")),
        ] {
            let request = json!({"object": {"spec": {"content": content}}});
            let got = validate_page(&request).map_err(|d| {
                assert_eq!(d.code, 403);
                d.message
            });
            assert_eq!(got, expected.map_err(String::from), "{content}");
        }
        let big = "x".repeat(WARN_BYTES + 1);
        let warnings = validate_page(&json!({"object": {"spec": {"content": big}}})).unwrap();
        assert_eq!(
            warnings,
            ["spec.content is 524289 bytes; the ConfigMap it goes into holds at most 1 MiB"]
        );
    }

    #[test]
    fn the_configuration_names_the_service_and_the_path() {
        let config = configuration();
        let hook = &config.webhooks.unwrap()[0];
        assert_eq!(hook.name, "pages.demo.example.com");
        let service = hook.client_config.service.as_ref().unwrap();
        assert_eq!(service.path.as_deref(), Some(PATH));
        assert_eq!(hook.side_effects, "None");
    }
}
